#!/usr/bin/env bash
# Bad CSV lines are reported as FILE:LINE: reason and nothing is imported;
# --skip-bad imports the good lines, still reports the bad ones, exits 0.
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/lab.db
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/bad.csv" <<'CSV'
# a published table with problems
dut,module,mode,run,seconds
DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua,1,810.32
DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua,2
DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua,3,eight hundred
DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua,4,-812.52
DUT1,"Foresee 32GB module (Pine64, blue PCB)",turbo,1,800.00
DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua,1,811.00
DUT1,"Foresee 32GB module (Pine64, blue PCB)",cache-nofua,1,784.49
CSV
set +e
"$EMMCLAB" import --db "$db" "$tmp/bad.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "exit $rc, want 2"
for want in \
	"$tmp/bad.csv:4: expected 5 columns, found 4" \
	"$tmp/bad.csv:5: wall time 'eight hundred' is not a duration: expected seconds (422.44), m:ss.cc (7:02.44) or h:mm:ss.cc (1:07:02.44)" \
	"$tmp/bad.csv:6: negative value -812.52" \
	"$tmp/bad.csv:7: unknown mode 'turbo'" \
	"$tmp/bad.csv:8: duplicate run 1 for" ; do
	grep -qF "$want" "$tmp/err" || fail "missing '$want' in: $(cat "$tmp/err")"
done
[ "$(grep -c "^$tmp/bad.csv:" "$tmp/err")" = 5 ] || fail "exactly five bad lines reported"
grep -q 'nothing imported' "$tmp/err" || fail "says nothing imported"
if [ -e "$db" ]; then
	n=$(sqlite3 "$db" 'SELECT count(*) FROM run')
	[ "$n" = 0 ] || fail "$n runs stored after a rejected import"
fi

# a good file next to a bad one: still nothing imported
cp "$EMMCLAB_SRC/results/reference/androbench-sdhci-sprd.csv" "$tmp/good.csv"
set +e
"$EMMCLAB" import --db "$db" "$tmp/good.csv" "$tmp/bad.csv" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "mixed files exit $rc, want 2"
if [ -e "$db" ]; then
	[ "$(sqlite3 "$db" 'SELECT count(*) FROM run')" = 0 ] || fail "mixed files imported something"
fi

# --skip-bad: good lines in, bad ones reported, exit 0 with a warning count
"$EMMCLAB" import --db "$db" --skip-bad "$tmp/bad.csv" >"$tmp/out" 2>"$tmp/err" || fail "--skip-bad exit $?"
grep -qF "$tmp/bad.csv:7: unknown mode 'turbo'" "$tmp/err" || fail "--skip-bad still reports"
grep -q 'warning: 5 bad lines skipped' "$tmp/err" || fail "warning count: $(cat "$tmp/err")"
[ "$(sqlite3 "$db" 'SELECT count(*) FROM sample')" = 2 ] || fail "two good samples stored"
[ "$(sqlite3 "$db" "SELECT group_concat(value_text) FROM sample ORDER BY id")" = "810.32,784.49" ] || fail "good values"
# export --layout original of a partial import warns it is not the original file
"$EMMCLAB" db export --db "$db" --layout original --run 1 >"$tmp/x.csv" 2>"$tmp/err"
grep -q 'not byte-identical' "$tmp/err" || fail "partial export warns"

# unknown layout and unreadable input
printf 'a,b,c\n1,2,3\n' >"$tmp/other.csv"
set +e
"$EMMCLAB" import --db "$db" "$tmp/other.csv" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown layout exit $rc"
grep -q "other.csv:1: unknown layout" "$tmp/err" || fail "unknown layout message"
set +e
"$EMMCLAB" import --db "$db" "$tmp/missing.csv" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "missing file exit $rc"
set +e
"$EMMCLAB" import --db "$db" 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "no file exit $rc"
echo "db_bad_input: ok"
