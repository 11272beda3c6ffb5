#!/usr/bin/env bash
# import_dedup.sh - imports are recognised by their rows, not their bytes: the published
# file re-saved with CRLF, an extra comment, other quoting and spacing, its rows in another
# order or "98.70" written "98.7" is refused as already imported; a real change is not.
# Imports made before schema 4 get their content hash from the stored samples. An import
# killed half-way leaves nothing behind once the next import runs, and memory stays
# bounded on a 63 MiB file (peak RSS measured against a small file's).
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv
db=$tmp/lab.db
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() { # refused FILE: exit 2, "already imported as run 1", nothing added
	local before after rc
	before=$(sqlite3 "$db" 'SELECT count(*) FROM sample')
	set +e
	"$EMMCLAB" import --db "$db" "$1" >/dev/null 2>"$tmp/err"
	rc=$?
	set -e
	[ "$rc" = 2 ] || fail "$(basename "$1"): exit $rc, want 2 ($(cat "$tmp/err"))"
	grep -qF 'already imported as run 1 (the same rows, re-saved' "$tmp/err" ||
		fail "$(basename "$1"): message: $(cat "$tmp/err")"
	after=$(sqlite3 "$db" 'SELECT count(*) FROM sample')
	[ "$before" = "$after" ] || fail "$(basename "$1"): samples added"
}

"$EMMCLAB" import --db "$db" "$ref" >/dev/null
sed 's/$/\r/' "$ref" >"$tmp/crlf.csv"
refused "$tmp/crlf.csv"
{ echo "# re-saved by someone"; cat "$ref"; } >"$tmp/comment.csv"
refused "$tmp/comment.csv"
{ grep '^#' "$ref"; grep -v '^#' "$ref" | head -1; grep -v '^#' "$ref" | tail -n +2 | tac; } >"$tmp/order.csv"
refused "$tmp/order.csv"
# quotes around a plain field, blanks around fields, 784.49 -> 784.490
sed -e 's/^DUT1,/"DUT1",/' -e 's/^DUT2,/ DUT2 ,/' -e 's/,784\.49$/,784.490/' "$ref" >"$tmp/spacing.csv"
cmp -s "$tmp/spacing.csv" "$ref" && fail "the spacing copy is the same file"
refused "$tmp/spacing.csv"
# the same two in one command
set +e
"$EMMCLAB" import --db "$tmp/other.db" "$tmp/crlf.csv" "$tmp/order.csv" >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -qF 'crlf.csv and order.csv hold the same rows' "$tmp/err" ||
	fail "two copies in one import: exit $rc: $(cat "$tmp/err")"
echo "ok: re-saved copies refused (CRLF, comment, order, quoting/spacing/number spelling)"

# a real change is new data; --force imports a copy anyway
sed 's/,784\.49$/,784.50/' "$ref" >"$tmp/changed.csv"
"$EMMCLAB" import --db "$db" "$tmp/changed.csv" >/dev/null || fail "a changed value was refused"
"$EMMCLAB" import --db "$db" --force "$tmp/crlf.csv" >/dev/null || fail "--force"
[ "$(sqlite3 "$db" 'SELECT count(*) FROM run')" = 3 ] || fail "want 3 runs"
echo "ok: a changed value imports; --force imports a copy"

# imports from before schema 4 (or merged) have no content hash: filled from their samples
sqlite3 "$db" 'UPDATE import_file SET content_sha256 = NULL'
refused "$tmp/comment.csv"
[ "$(sqlite3 "$db" 'SELECT count(*) FROM import_file WHERE content_sha256 IS NULL')" = 0 ] ||
	fail "content hashes not filled in"
h1=$(sqlite3 "$db" 'SELECT content_sha256 FROM import_file WHERE run_id = 1')
h3=$(sqlite3 "$db" 'SELECT content_sha256 FROM import_file WHERE run_id = 3')
[ "$h1" = "$h3" ] || fail "hash from stored samples ($h1) differs from the file's ($h3)"
echo "ok: content hash rebuilt from stored samples matches the file's"

# a big generated file: streamed, bounded memory, committed in batches
command -v /usr/bin/time >/dev/null || { echo "/usr/bin/time missing (package time)" >&2; exit 77; }
awk 'BEGIN { print "board,controller,queue_fua,workload,run,mib_per_s";
	for (b = 0; b < 100; b++) for (q = 0; q < 2; q++) for (w = 0; w < 4; w++)
		for (r = 1; r <= 2230; r++)
			printf "brd%03d,sdhci-sprd,%d,wl%d,%d,%d.%02d\n", b, q, w, r, 200 + r % 50, r % 100 }' \
	>"$tmp/big.csv"
size=$(stat -c %s "$tmp/big.csv")
/usr/bin/time -f '%M' -o "$tmp/rss.small" "$EMMCLAB" import --db "$tmp/small.db" "$ref" >/dev/null
# kill one import half-way: its run must not survive the next import, and removing it
# must not cost memory in proportion (300,000 samples or more: held in memory they are
# over 20 MiB, past the bound below; a statement journal never spilled did that)
"$EMMCLAB" import --db "$tmp/big.db" "$tmp/big.csv" >/dev/null 2>&1 &
pid=$!
# (the whole file is read and checked before the first sample is written)
n=0
for _ in $(seq 3000); do
	kill -0 "$pid" 2>/dev/null || break
	if [ -s "$tmp/big.db" ]; then # never let sqlite3 create the file first
		n=$(sqlite3 -readonly "$tmp/big.db" 'SELECT count(*) FROM sample' 2>/dev/null || echo 0)
		[ "${n:-0}" -gt 300000 ] && break
	fi
	sleep 0.1
done
[ "${n:-0}" -gt 300000 ] || fail "the import wrote fewer than 300,000 samples within 300 s ($n)"
# another writer gets the lock while the import runs (transactions of at most 200 ms,
# then the lock left free for 50 ms): within 3 s.  Committing and beginning again at
# once failed this about one run in four (sqlite3's busy handler polls every 100 ms and
# seldom hit the microseconds between).  A sanitized build gets 15 s.
wait_ms=3000
if ldd "$EMMCLAB" 2>/dev/null | grep -q libasan; then wait_ms=15000; fi
start=$(date +%s%N)
sqlite3 -cmd ".timeout $wait_ms" "$tmp/big.db" 'BEGIN IMMEDIATE; SELECT 1; ROLLBACK;' >/dev/null ||
	fail "a writer waited more than $((wait_ms / 1000)) s for the import's lock"
echo "a concurrent writer got the lock after $((($(date +%s%N) - start) / 1000000)) ms"
kill -9 "$pid" 2>/dev/null || fail "the import finished before it could be killed"
wait "$pid" 2>/dev/null || true
[ "$(sqlite3 "$tmp/big.db" "SELECT status FROM run")" = running ] || fail "no half-written run to clean"
/usr/bin/time -f '%M' -o "$tmp/rss.big" "$EMMCLAB" import --db "$tmp/big.db" "$tmp/big.csv" >"$tmp/out" ||
	fail "big import: $(cat "$tmp/out")"
grep -qF '1784000 samples' "$tmp/out" || fail "big import: $(cat "$tmp/out")"
[ "$(sqlite3 "$tmp/big.db" "SELECT count(*) || ' ' || group_concat(status) FROM run")" = "1 complete" ] ||
	fail "the killed import's run is still there: $(sqlite3 "$tmp/big.db" 'SELECT id, status FROM run')"
[ "$(sqlite3 "$tmp/big.db" 'SELECT count(*) FROM sample')" = 1784000 ] || fail "sample count"
small=$(cat "$tmp/rss.small") big=$(cat "$tmp/rss.big")
echo "peak RSS: $small KiB for a 4 KiB file, $big KiB for a $((size >> 20)) MiB file"
# the libraries alone are ~10 MiB; the file may add at most 16 MiB, whatever its size.
# A sanitized build cannot show it: ASan's quarantine keeps 256 MiB of freed memory by
# design (673 MiB peak seen). The bound is asserted by the plain build's run of this test,
# which tools/test.sh always runs first; here the rest is checked.
if ldd "$EMMCLAB" 2>/dev/null | grep -q libasan; then
	echo "note: sanitized build: the memory bound is the plain build's assertion"
	echo "ok: a killed import is removed"
else
	[ "$big" -lt $((small + 16384)) ] || fail "memory grows with the file: $big KiB vs $small KiB"
	echo "ok: a killed import is removed; bounded memory"
fi
