#!/usr/bin/env bash
# docs/cli.md carries the command reference generated from the subcommand
# table, docs/configuration.md the key tables generated from the option
# tables: both must match what the binary says (docs move with the code).
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
doc="$EMMCLAB_SRC/docs/cli.md"
want=$("$EMMCLAB" help --markdown)
have=$(sed -n '/^<!-- generated: emmclab help --markdown -->$/,/^<!-- end generated -->$/p' "$doc" | sed '1d;$d')
if [ "$want" != "$have" ]; then
	diff <(echo "$have") <(echo "$want") >&2 || true
	echo "FAIL: docs/cli.md is out of date: regenerate the block with 'emmclab help --markdown'" >&2
	exit 1
fi
# docs/configuration.md's key tables come from the option tables
cdoc="$EMMCLAB_SRC/docs/configuration.md"
want=$("$EMMCLAB" check --schema)
have=$(sed -n '/^<!-- generated: emmclab check --schema -->$/,/^<!-- end generated -->$/p' "$cdoc" | sed '1d;$d')
if [ "$want" != "$have" ]; then
	diff <(echo "$have") <(echo "$want") >&2 || true
	echo "FAIL: docs/configuration.md key tables are out of date: regenerate with 'emmclab check --schema'" >&2
	exit 1
fi
man=$("$EMMCLAB" help --man)
case "$man" in ".TH EMMCLAB 1"*) ;; *) echo "FAIL: man page" >&2; exit 1 ;; esac
echo "1 passed, 0 failed"
