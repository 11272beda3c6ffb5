#!/usr/bin/env bash
# Everything generated from tables must match what the binary says (docs move
# with the code), and `emmclab help CMD` must match what CMD's parser takes:
#   docs/cli.md            <- emmclab help --markdown (subcommand + option tables)
#   docs/configuration.md  <- emmclab check --schema  (config option tables)
#   docs/uploads.md        <- emmclab upload --schema (upload target tables)
#   emmclab.1 (CMake)      <- emmclab help --man
# Then, for every command: each option `help CMD` lists (and each --option its
# text mentions) is taken by the parser, an option it does not list is refused,
# and the man page lists the same options.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# docs/FILE's block between the markers for COMMAND must be COMMAND's output.
check_block() {
	local doc="$EMMCLAB_SRC/docs/$1" marker="$2" want have
	shift 2
	want=$("$EMMCLAB" "$@")
	have=$(sed -n "/^<!-- generated: $marker -->\$/,/^<!-- end generated -->\$/p" "$doc" | sed '1d;$d')
	if [ -z "$have" ]; then
		fail "docs/$(basename "$doc"): no '<!-- generated: $marker -->' block"
	elif [ "$want" != "$have" ]; then
		diff <(echo "$have") <(echo "$want") >&2 || true
		fail "docs/$(basename "$doc") is out of date: regenerate the block with '$marker'"
	fi
}
check_block cli.md "emmclab help --markdown" help --markdown
check_block configuration.md "emmclab check --schema" check --schema
check_block uploads.md "emmclab upload --schema" upload --schema

# No other generated block may exist without a check above.
for doc in "$EMMCLAB_SRC"/docs/*.md; do
	{ grep -o '^<!-- generated: [^>]* -->$' "$doc" || true; } | while read -r line; do
		case "$line" in
		*"emmclab help --markdown"* | *"emmclab check --schema"* | *"emmclab upload --schema"*) ;;
		*) echo "FAIL: $(basename "$doc"): block '$line' is not checked by docs_cli.sh" >&2; exit 1 ;;
		esac
	done || fails=$((fails + 1))
done

man=$("$EMMCLAB" help --man)
case "$man" in ".TH EMMCLAB 1"*) ;; *) fail "man page header" ;; esac
man_file=${EMMCLAB_BIN:+$EMMCLAB_BIN/harness/emmclab.1}
if [ -n "$man_file" ]; then
	[ -f "$man_file" ] || fail "$man_file not built"
	[ ! -f "$man_file" ] || [ "$(cat "$man_file")" = "$man" ] ||
		fail "$man_file (built by CMake) differs from 'emmclab help --man'"
fi

# The words a command needs before its options are parsed.
prefix() {
	case "$1" in
	db) echo info ;;
	baseline) echo show ;;
	sim) echo status ;;
	kernel) echo quirks ;;
	*) echo "" ;;
	esac
}

# A harmless value for an option argument, from its name in help.
value_for() {
	case "$1" in
	ID | N | PCT) echo 1 ;;
	A) echo 0.05 ;;
	DUR) echo 1s ;;
	FIELD=VALUE) echo mode=fua ;;
	*'|'*) echo "${1%%|*}" ;;
	*) echo x ;;
	esac
}

bogus=--zz-not-an-option
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Nothing may touch a real database or simulator while options are probed.
export EMMCLAB_DB="$tmp/none.db" EMMCLAB_SIM_DIR="$tmp/sim" EMMCLAB_LAB="$tmp/none.yaml"

# Does CMD's parser take ARGS...?  Taken means: it parsed on to $bogus (and
# refused that one), or it acted at once and exited 0 (--help, --schema, --man).
takes() {
	local cmd="$1" rc=0
	shift
	# shellcheck disable=SC2046
	"$EMMCLAB" "$cmd" $(prefix "$cmd") "$@" "$bogus" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	[ "$rc" = 0 ] && return 0
	[ "$rc" = 2 ] && grep -qF "unknown option '$bogus'" "$tmp/err"
}

cmds=$("$EMMCLAB" help | sed -n '/^commands:$/,/^$/p' | awk 'NF > 1 { print $1 }')
[ -n "$cmds" ] || fail "no commands in 'emmclab help'"
all_longs=""
for cmd in $cmds; do
	"$EMMCLAB" help "$cmd" >"$tmp/help" || fail "help $cmd: exit $?"
	"$EMMCLAB" "$cmd" --help >"$tmp/help2" 2>&1 || fail "$cmd --help: exit $?"
	cmp -s "$tmp/help" "$tmp/help2" || fail "'$cmd --help' differs from 'help $cmd'"
	sed -n '/^options:$/,$p' "$tmp/help" | sed '1d' | grep -E '^  +-' >"$tmp/opts" ||
		fail "help $cmd: no options list"
	n=0
	while read -r spec; do
		n=$((n + 1))
		# "-o, --output FILE" / "--db PATH" / "--baseline[=NAME]" / "--all"
		spec=${spec%%  *}
		full=$spec
		short=""
		case "$spec" in -?,\ *) short=${spec:1:1}; spec=${spec#-?, } ;; esac
		name=${spec%% *}
		name=${name%%\[*}
		arg=""
		case "$spec" in
		*"[="*) arg="=$(value_for "$(echo "$spec" | sed 's/.*\[=\(.*\)\]/\1/')")" ;;
		*" "*) arg=" $(value_for "${spec#* }")" ;;
		esac
		all_longs="$all_longs $name"
		# shellcheck disable=SC2086
		if [ "$arg" = "" ]; then
			takes "$cmd" "$name" || fail "$cmd: help lists $name, the parser refuses it: $(cat "$tmp/err")"
			[ -z "$short" ] || takes "$cmd" "-$short" || fail "$cmd: -$short refused"
		elif [ "${arg:0:1}" = "=" ]; then
			takes "$cmd" "$name$arg" || fail "$cmd: $name$arg refused: $(cat "$tmp/err")"
			takes "$cmd" "$name" || fail "$cmd: $name without its optional argument refused"
		else
			takes "$cmd" "$name" ${arg} || fail "$cmd: help lists '$spec', the parser refuses it: $(cat "$tmp/err")"
			takes "$cmd" "$name=${arg# }" || fail "$cmd: $name=VALUE refused"
			[ -z "$short" ] || takes "$cmd" "-$short" ${arg} || fail "$cmd: -$short refused"
			# an option that needs an argument refuses to go without
			"$EMMCLAB" "$cmd" $(prefix "$cmd") "$name" >/dev/null 2>"$tmp/err" </dev/null && true
			grep -qF "option '$name' needs an argument" "$tmp/err" ||
				fail "$cmd: $name without its argument: $(cat "$tmp/err")"
		fi
		grep -qF -- "$(echo "$name" | sed 's/-/\\-/g')" <<<"$man" || fail "man page lacks $cmd $name"
		grep -qF -- "\`$full\`" "$EMMCLAB_SRC/docs/cli.md" || fail "docs/cli.md lacks $cmd '$full'"
	done <"$tmp/opts"
	[ "$n" -gt 0 ] || fail "help $cmd lists no options"
	# every --option the usage and help text mention is one the parser takes
	for word in $(sed '/^options:$/,$d' "$tmp/help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		grep -qE -- "^ +(-., )?$word([[:space:]]|\[|=|$)" "$tmp/opts" ||
			fail "$cmd: help text mentions $word, its options list does not"
	done
	takes "$cmd" && true
	grep -qF "unknown option '$bogus'" "$tmp/err" || fail "$cmd: $bogus not refused: $(cat "$tmp/err")"
	echo "$cmd" >>"$tmp/done"
	cp "$tmp/opts" "$tmp/opts.$cmd"
done

# Options help does not list are refused, including other commands' options
# and abbreviations of its own.
for cmd in $cmds; do
	for name in $(echo "$all_longs" | tr ' ' '\n' | sort -u); do
		grep -qE -- "^ +(-., )?$name([[:space:]]|\[|=|$)" "$tmp/opts.$cmd" && continue
		# shellcheck disable=SC2046
		"$EMMCLAB" "$cmd" $(prefix "$cmd") "$name=1" >/dev/null 2>"$tmp/err" </dev/null && true
		grep -qF "unknown option '$name'" "$tmp/err" ||
			fail "$cmd: takes $name, which its help does not list: $(cat "$tmp/err")"
	done
	first=$(grep -oE -- '--[a-z][a-z0-9-]{3,}' "$tmp/opts.$cmd" | grep -v -- '--help' | head -1 || true)
	if [ -n "$first" ]; then
		# shellcheck disable=SC2046
		"$EMMCLAB" "$cmd" $(prefix "$cmd") "${first%?}" >/dev/null 2>"$tmp/err" </dev/null && true
		grep -qF "unknown option '${first%?}'" "$tmp/err" ||
			fail "$cmd: takes the abbreviation ${first%?}: $(cat "$tmp/err")"
	fi
done

# The formats help names for report --format are the renderers registered.
"$EMMCLAB" report --format zz-none >/dev/null 2>"$tmp/err" && true
have=$(sed -n "s/.*unknown format 'zz-none' (\(.*\))\$/\1/p" "$tmp/err")
want=$(grep -oE -- '--format [a-z|]+' "$tmp/opts.report" | cut -d' ' -f2)
[ -n "$have" ] && [ "$have" = "$want" ] ||
	fail "report --format: help says '$want', the renderers are '$have'"

ncmd=$(wc -l <"$tmp/done")
if [ "$fails" -gt 0 ]; then
	echo "$fails failed" >&2
	exit 1
fi
echo "1..1"
echo "ok 1 - generated docs current; help matches the parser of $ncmd commands"
echo "1 passed, 0 failed"
