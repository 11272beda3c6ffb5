#!/bin/bash
# import_durations.sh - the ext4 copy results in their published m:ss.cc form
# (and h:mm:ss.cc) import to the same samples as in seconds, export back byte
# for byte, and a malformed wall time names file:line, the value and the
# expected forms; nothing is imported unless --skip-bad.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"

tmp=$(mktemp -d /tmp/emmclab-import-dur-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ref="$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv"

# The reference file with every wall time written as m:ss.cc (DUT1's as
# h:mm:ss.cc), the rest of each line untouched.
awk -F, 'BEGIN { OFS = "," }
	/^#/ || NR == 5 || $NF !~ /^[0-9]+\.[0-9][0-9]$/ { print; next }
	{
		split($NF, p, "."); s = p[1] + 0; c = p[2]
		if ($1 == "DUT1") $NF = sprintf("%d:%02d:%02d.%s", int(s / 3600), int(s % 3600 / 60), s % 60, c)
		else $NF = sprintf("%d:%02d.%s", int(s / 60), s % 60, c)
		print
	}' "$ref" >"$tmp/fs-copy-benchmark.csv"
n=$(grep -c ',[0-9:]*:[0-9][0-9]\.[0-9][0-9]$' "$tmp/fs-copy-benchmark.csv")
[ "$n" = 60 ] || fail "converted $n of 60 wall times"
grep -q '^DUT1,.*,0:1[0-9]:[0-5][0-9]\.[0-9][0-9]$' "$tmp/fs-copy-benchmark.csv" || fail "no h:mm:ss.cc values"

"$EMMCLAB" import --db "$tmp/mss.db" "$tmp/fs-copy-benchmark.csv" >"$tmp/imp.out" 2>&1 ||
	{ cat "$tmp/imp.out"; fail "m:ss.cc import refused"; }
grep -q '60 samples' "$tmp/imp.out" || fail "not 60 samples: $(cat "$tmp/imp.out")"
grep -q 'byte-exact' "$tmp/imp.out" && fail "durations import not reproducible"
"$EMMCLAB" db export --db "$tmp/mss.db" --layout original --run 1 -o "$tmp/back.csv"
cmp "$tmp/back.csv" "$tmp/fs-copy-benchmark.csv" || fail "export --layout original differs"

# Same samples as the seconds file: the comparison is identical.
"$EMMCLAB" import --db "$tmp/sec.db" "$ref" >/dev/null
"$EMMCLAB" compare --db "$tmp/mss.db" >"$tmp/c.mss"
"$EMMCLAB" compare --db "$tmp/sec.db" >"$tmp/c.sec"
diff "$tmp/c.sec" "$tmp/c.mss" || fail "m:ss.cc and seconds compare differently"
grep -q 'DUT5 .*fscopy/wall_time: cache-nofua vs fua +0.59%' "$tmp/c.mss" || fail "DUT5 verdict missing"

# Malformed wall times: named, nothing imported; --skip-bad imports the rest.
sed -e '10s/,[^,]*$/,13:75.10/' -e '11s/,[^,]*$/,7.02.44/' "$tmp/fs-copy-benchmark.csv" >"$tmp/bad.csv"
set +e
"$EMMCLAB" import --db "$tmp/bad.db" "$tmp/bad.csv" >/dev/null 2>"$tmp/err"; rc=$?
set -e
cat "$tmp/err"
[ $rc = 2 ] || fail "bad wall times exit $rc"
grep -qF "$tmp/bad.csv:10: wall time '13:75.10': the seconds field must be below 60" "$tmp/err" ||
	fail "line 10 not named"
grep -qF "$tmp/bad.csv:11: wall time '7.02.44' is not a duration: expected seconds (422.44), m:ss.cc (7:02.44) or h:mm:ss.cc (1:07:02.44)" "$tmp/err" ||
	fail "line 11 not named with the expected forms"
grep -q 'nothing imported' "$tmp/err" || fail "no 'nothing imported'"
if [ -e "$tmp/bad.db" ]; then
	runs=$(sqlite3 "$tmp/bad.db" 'SELECT count(*) FROM run' 2>/dev/null || echo 0)
	[ "$runs" = 0 ] || fail "$runs runs imported despite bad lines"
fi
"$EMMCLAB" import --db "$tmp/bad.db" --skip-bad "$tmp/bad.csv" 2>/dev/null | grep -q '58 samples' ||
	fail "--skip-bad did not import the 58 good lines"
echo "PASS"
