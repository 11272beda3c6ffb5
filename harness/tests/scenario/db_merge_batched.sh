#!/usr/bin/env bash
# db_merge_batched.sh - `emmclab db merge` of a run too big for one short
# transaction (docs/operations.md, "Many hosts without LAVA"):
#  1. a 1.78-million-sample run is copied in transactions of at most about
#     200 ms with the lock left free between them: another writer gets the
#     lock within 3 s while the merge runs (one transaction for the run held
#     it for the whole copy, 4 s and more);
#  2. until its last transaction the run is there with status 'merging', and
#     reports leave it out; a second merge meanwhile leaves it to the live one
#     (a conflict, exit 1);
#  3. a merge killed half-way leaves the run 'merging' (merged on from there,
#     it is a conflict, not copied); the next merge removes
#     it and copies it again: exactly the source's jobs, iterations, samples
#     and values, every status as in the source; a third merge copies nothing.
set -euo pipefail
: "${EMMCLAB:?}"
T=$(mktemp -d /tmp/emmclab-mergebatch.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$1" "$2"; }
wait_ms=3000
if ldd "$EMMCLAB" 2>/dev/null | grep -q libasan; then wait_ms=15000; fi

# the source: one big imported run and one small one
awk 'BEGIN { print "board,controller,queue_fua,workload,run,mib_per_s";
	for (b = 0; b < 100; b++) for (qf = 0; qf < 2; qf++) for (w = 0; w < 4; w++)
		for (r = 1; r <= 2230; r++)
			printf "brd%03d,sdhci-sprd,%d,wl%d,%d,%d.%02d\n", b, qf, w, r, 200 + r % 50, r % 100 }' \
	>"$T/big.csv"
printf 'board,controller,queue_fua,workload,run,mib_per_s\nsm1,sdhci-sprd,1,seq,1,101.5\nsm1,sdhci-sprd,0,seq,1,140.25\n' \
	>"$T/small.csv"
"$EMMCLAB" import --db "$T/src.db" "$T/big.csv" >/dev/null || fail "import big"
"$EMMCLAB" import --db "$T/src.db" "$T/small.csv" >/dev/null || fail "import small"
src_sum() {
	q "$1" "SELECT r.uuid, r.status, (SELECT count(*) FROM job j WHERE j.run_id = r.id),
	  (SELECT count(*) FROM iteration i JOIN job j ON j.id = i.job_id WHERE j.run_id = r.id),
	  (SELECT count(*) FROM sample s JOIN iteration i ON i.id = s.iteration_id
	   JOIN job j ON j.id = i.job_id WHERE j.run_id = r.id),
	  (SELECT printf('%.4f', total(s.value)) FROM sample s JOIN iteration i ON i.id = s.iteration_id
	   JOIN job j ON j.id = i.job_id WHERE j.run_id = r.id), COALESCE(r.note, '')
	  FROM run r ORDER BY r.uuid"
}
want=$(src_sum "$T/src.db")
[ "$(echo "$want" | wc -l)" = 2 ] || fail "source runs: $want"

# 1 + 2: a merge running, a writer, a second merge
"$EMMCLAB" db merge --db "$T/m.db" "$T/src.db" >"$T/m1.out" 2>&1 &
pid=$!
n=0
for _ in $(seq 1200); do
	kill -0 "$pid" 2>/dev/null || break
	if [ -s "$T/m.db" ]; then
		n=$(sqlite3 -readonly "$T/m.db" 'SELECT count(*) FROM sample' 2>/dev/null || echo 0)
		[ "${n:-0}" -gt 100000 ] && break
	fi
	sleep 0.1
done
[ "${n:-0}" -gt 100000 ] || fail "the merge copied fewer than 100,000 samples before it ended ($n): $(cat "$T/m1.out")"
st=$(sqlite3 -readonly "$T/m.db" "SELECT group_concat(status) FROM run")
[ "$st" = merging ] || fail "the run being merged is '$st', not 'merging'"
# readers leave the half run out: no newest run, no samples in --all
"$EMMCLAB" report --db "$T/m.db" --all --format json -o "$T/half.json" >/dev/null || fail "report --all during the merge"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["runs"] == [] and d["summary"]["samples"] == 0, d["summary"]' \
	"$T/half.json" || fail "a report during the merge shows the half run"
start=$(date +%s%N)
sqlite3 -cmd ".timeout $wait_ms" "$T/m.db" 'BEGIN IMMEDIATE; SELECT 1; ROLLBACK;' >/dev/null ||
	fail "a writer waited more than $((wait_ms / 1000)) s for the merge's lock"
echo "ok 1 - a writer got the lock after $((($(date +%s%N) - start) / 1000000)) ms while the merge ran"
rc=0
"$EMMCLAB" db merge --db "$T/m.db" "$T/src.db" >"$T/m2.out" 2>&1 || rc=$?
kill -0 "$pid" 2>/dev/null || fail "the first merge ended before the second was checked"
[ "$rc" = 1 ] || fail "a second merge during the first exited $rc: $(cat "$T/m2.out")"
grep -q "another \`emmclab db merge\` is copying it now" "$T/m2.out" || fail "second merge: $(cat "$T/m2.out")"
echo "ok 2 - a second merge leaves the run to the live one (exit 1, conflict)"

# 3: killed half-way, merged again
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
left=$(q "$T/m.db" "SELECT count(*) FROM run WHERE status = 'merging'")
[ "$left" = 1 ] || fail "the killed merge left $left runs 'merging'"
# merged on from here, the half run is not copied (it would stay half)
rc=0
"$EMMCLAB" db merge --db "$T/x.db" "$T/m.db" >"$T/x.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "still being merged into" "$T/x.out" || fail "merging a half run on: exit $rc, $(cat "$T/x.out")"
[ "$(q "$T/x.db" "SELECT count(*) FROM run WHERE status = 'merging'")" = 0 ] || fail "a half run merged on"
"$EMMCLAB" db merge --db "$T/m.db" "$T/src.db" >"$T/m3.out" 2>&1 || fail "merge after the kill: $(cat "$T/m3.out")"
got=$(src_sum "$T/m.db")
[ "$got" = "$want" ] || fail "after the re-merge: $got, want $want"
[ "$(q "$T/m.db" "SELECT count(*) FROM run WHERE status = 'merging'")" = 0 ] || fail "a run left merging"
[ "$(q "$T/m.db" "PRAGMA foreign_key_check" | wc -l)" = 0 ] || fail "foreign keys"
[ "$(q "$T/m.db" "SELECT count(*) FROM sample")" = 1784002 ] || fail "sample count"
"$EMMCLAB" db merge --db "$T/m.db" "$T/src.db" >"$T/m4.out" || fail "third merge: $(cat "$T/m4.out")"
grep -q "merged 0 runs .*(2 already present)" "$T/m4.out" || fail "third merge: $(cat "$T/m4.out")"
echo "ok 3 - a killed merge's half run is removed and copied again: the source's runs exactly"
echo "PASS: db merge batched"
