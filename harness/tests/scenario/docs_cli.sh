#!/usr/bin/env bash
# docs/cli.md carries the command reference generated from the subcommand
# table: it must match what the binary says (docs move with the code).
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
man=$("$EMMCLAB" help --man)
case "$man" in ".TH EMMCLAB 1"*) ;; *) echo "FAIL: man page" >&2; exit 1 ;; esac
echo "1 passed, 0 failed"
