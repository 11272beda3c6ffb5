#!/usr/bin/env bash
# Another program holds the database lock during a run (a sqlite3 shell's
# BEGIN EXCLUSIVE, longer than SQLite's old 5 s busy timeout): the run keeps
# going, its writes wait in the journal, and it completes with every sample,
# reporting the wait (docs/running.md, "A store that waits").
#  1. lock held 12 s in the middle of a run: every sample stored, the wait
#     reported on stderr and as a store-busy event, exit 0;
#  2. a lock held longer than the lab's store_wait: the run stops with exit 3
#     and a clear message, and its journal, replayed by the next run, loses
#     nothing.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
source "$EMMCLAB_SRC/harness/tests/helpers/runlib.sh"
command -v sqlite3 >/dev/null || exit 77

# hold SECONDS: BEGIN EXCLUSIVE in a real sqlite3 for that long (background, $holder)
hold() {
	mkfifo "$T/hold.fifo"
	sqlite3 "$T/lab.db" < "$T/hold.fifo" > "$T/hold.out" 2>&1 &
	holder=$!
	exec 7>"$T/hold.fifo"
	echo "BEGIN EXCLUSIVE; INSERT INTO baseline (name, kind, last_n, set_at) VALUES ('x', 'last-n', 1, 'now'); SELECT 'locked';" >&7
	for _ in $(seq 1 100); do grep -q locked "$T/hold.out" && break; sleep 0.05; done
	grep -q locked "$T/hold.out" || fail "sqlite3 did not take the lock"
	( sleep "$1"; echo "ROLLBACK;" >&7; exec 7>&-; ) &
	release=$!
	exec 7>&- # the releaser holds the only writer: sqlite3 ends after its ROLLBACK
}

wait_iters() {
	for _ in $(seq 1 200); do
		n=$(q "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)
		[ "${n:-0}" -ge "$1" ] && return 0
		sleep 0.05
	done
	fail "the run did not get going"
}

# 1. 12 s lock in the middle of the run
RL_SIM_EXTRA="faults: [slow-part=10]"
rl_lab 2
rl_plan 3
rl_sim_start
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
wait_iters 2
t0=$(date +%s)
hold 12
set +e
wait $pid
rc=$?
set -e
wait $release $holder 2>/dev/null || true
rm -f "$T/hold.fifo"
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "run with the database locked exited $rc"; }
[ $(( $(date +%s) - t0 )) -ge 11 ] || fail "the run ended before the lock was released"
grep -q "results store busy (another process holds the database lock), retrying" "$T/err" ||
	fail "the wait was not reported"
waited=$(sed -n 's/.*results store busy for \([0-9]*\)\.[0-9] s.*/\1/p' "$T/err" | head -1)
[ -n "$waited" ] && [ "$waited" -ge 6 ] || { grep busy "$T/err" >&2; fail "wait not reported, or shorter than the old 5 s timeout"; }
[ "$(q "$T/lab.db" "select count(*) from event where kind='store-busy'")" -ge 1 ] ||
	fail "no store-busy event"
# 4 jobs x 3 iterations x (8 androbench + 7 fscopy samples), besides the request latency ones
[ "$(q "$T/lab.db" "select count(*) from sample where metric not glob 'rq_*'")" = 180 ] ||
	fail "samples lost: $(q "$T/lab.db" "select count(*) from sample where metric not glob 'rq_*'") of 180"
[ "$(q "$T/lab.db" "select count(*) from job where status='ok'")" = 4 ] || fail "jobs not ok"
[ "$(q "$T/lab.db" "select status from run")" = complete ] || fail "run not complete"
ls "$T/lab.db.pending" >/dev/null 2>&1 && fail "journal left behind after a clean run"
echo "ok 1 - database locked 12 s by sqlite3 during a run: every sample stored, the wait reported"

# 2. locked past store_wait: exit 3, journal kept; the next run replays it
rm -rf "$T/lab.db"*
sed -i 's/^  name: nightly$/  name: nightly\n  store_wait: 2s/' "$T/lab.yaml"
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
wait_iters 2
hold 8
set +e
wait $pid
rc=$?
set -e
wait $release $holder 2>/dev/null || true
rm -f "$T/hold.fifo"
[ "$rc" = 3 ] || { cat "$T/err" >&2; fail "run past store_wait exited $rc, expected 3"; }
grep -q "database busy for [0-9]* s (lab store_wait)" "$T/err" || { cat "$T/err" >&2; fail "no store_wait message"; }
ls "$T/lab.db.pending/"*.jnl >/dev/null 2>&1 || fail "journal not kept"
stored=$(q "$T/lab.db" "select count(*) from sample")
sed -i '/store_wait/d' "$T/lab.yaml"
rl_plan 1 "$T/plan1.yaml"
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan1.yaml" >"$T/out" 2>"$T/err2" ||
	{ cat "$T/err2" >&2; fail "next run failed"; }
grep -q "entries of run .* replayed" "$T/err2" || fail "journal not replayed"
after=$(q "$T/lab.db" "select count(*) from sample where iteration_id in (select i.id from iteration i join job j on j.id=i.job_id where j.run_id=1)")
[ "$after" -gt "$stored" ] || fail "replay added nothing ($stored before, $after after)"
ls "$T/lab.db.pending/"*.jnl >/dev/null 2>&1 && fail "journal not removed after its replay"
echo "ok 2 - locked past store_wait: exit 3, journal kept, replayed by the next run ($stored -> $after samples)"
rl_sim_stop
