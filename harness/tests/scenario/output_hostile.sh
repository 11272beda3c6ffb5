#!/usr/bin/env bash
# output_hostile.sh - an imported file full of terminal escapes and spreadsheet formulas:
# status, compare, report (text, markdown), db info/check/export and error messages print
# no control byte (they show \xNN), and the CSV export writes formula-like fields as text
# while numbers stay numbers.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}"
tmp=$(mktemp -d /tmp/emmclab-out-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"

# ESC (OSC title, clear screen), BEL, a C1 CSI (U+009B) and formula prefixes
{
	printf '# evil \033]0;pwned\007 comment\n'
	printf 'board,controller,queue_fua,workload,run,mib_per_s\n'
	for fua in 0 1; do
		for run in 1 2 3; do
			printf '\033[2Jsprd\302\233,=cmd|x,%s,@seq_read,%s,%s\n' $fua $run $((200 + fua * 50 + run))
		done
	done
} > evil.csv
"$EMMCLAB" import --db t.db evil.csv >out 2>err || fail "import: $(cat err)"

# no_ctl NAME FILE: FILE holds no C0 control but TAB/LF, no DEL, no C1 (UTF-8 or raw byte)
no_ctl() {
	if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$2"; then
		fail "$1 printed a control character: $(cat -A "$2" | head -5)"
	fi
}
check_out() { # check_out NAME CMD...: exit 0, stdout and stderr clean, escapes visible
	local name=$1
	shift
	"$@" >out 2>err || fail "$name: exit $?: $(cat -A err)"
	no_ctl "$name (stdout)" out
	no_ctl "$name (stderr)" err
}
check_out status "$EMMCLAB" status --db t.db
grep -qF 'import:evil.csv' out || fail "status lists the import"
check_out compare "$EMMCLAB" compare --db t.db
grep -qF '\x1b[2Jsprd\xc2\x9b' out || fail "compare shows the label escaped: $(head -5 out)"
for fmt in text markdown; do
	check_out "report $fmt" "$EMMCLAB" report --db t.db --format "$fmt"
	"$EMMCLAB" report --db t.db --format "$fmt" --output "r.$fmt" || fail "report --output"
	no_ctl "report $fmt (file)" "r.$fmt"
done
grep -qF '\x1b' r.text || fail "text report shows the escape"
check_out "db info" "$EMMCLAB" db info --db t.db
check_out "db check" "$EMMCLAB" db check --db t.db
# an error message quoting hostile text: a file name with an escape
printf 'x\n' > "$(printf 'bad\033[2J.csv')"
set +e
"$EMMCLAB" import --db t.db "$(printf 'bad\033[2J.csv')" >out 2>err
set -e
no_ctl "import error" err
grep -qF 'bad\x1b[2J.csv' err || fail "the error names the file, escaped: $(cat -A err)"
echo "ok: no control character reached any text output"

# CSV export: formula-like text neutralised, numbers numeric
"$EMMCLAB" db export --db t.db > export.csv
grep -qF ",\"'@seq_read\"," export.csv || fail "formula field not neutralised: $(sed -n 2p export.csv)"
grep -qE ',"'"'"'@seq_read",2[0-9][0-9],MiB/s,' export.csv || fail "value not numeric: $(sed -n 2p export.csv)"
echo "ok: CSV export neutralises formula prefixes, keeps numbers"
