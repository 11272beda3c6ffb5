#!/usr/bin/env bash
# history_bench_quick.sh - a short run of bench/history_bench.sh (2 boards, 3
# nights into one database): every night completes (exit 0), its start,
# driving and end are read off the controller's stamped stderr, and the
# database and transcript directory grow night by night.  The 1,024-board
# figures are in docs/benchmarks.md.
set -euo pipefail
: "${EMMCLAB_SRC:?}" "${EMMCLAB_BIN:?}"
out=$(mktemp /tmp/emmclab-hbq-XXXXXX)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$out" >&2; exit 1; }
bash "$EMMCLAB_SRC/bench/history_bench.sh" "$EMMCLAB_BIN" 2 3 > "$out" 2>&1 || fail "history_bench.sh exited $?"
cat "$out"
# night wall start driving end rc db_MiB transcripts
awk '$1 ~ /^[0-9]+$/' "$out" > "$out.n"
[ "$(wc -l < "$out.n")" = 3 ] || fail "not three nights"
awk '{ if ($6 != 0) bad = "a night exited " $6
       if ($4 + 0 <= 5 || $3 + 0 <= 0 || $5 + 0 <= 0) bad = "night " $1 ": no start, driving or end"
       if (NR > 1 && ($7 + 0 <= db || $8 <= tr)) bad = "night " $1 ": database or transcripts did not grow"
       db = $7 + 0; tr = $8 }
     END { if (bad) { print bad; exit 1 } }' "$out.n" || { rm -f "$out.n"; fail "bad figures"; }
rm -f "$out.n"
echo "history_bench_quick: all passed"
