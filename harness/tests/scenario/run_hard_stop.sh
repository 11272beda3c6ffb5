#!/usr/bin/env bash
# Stopping a run by signal (docs/running.md, "Stopping a run"):
#  1. one SIGINT: the iterations in flight finish, every board is powered off,
#     the run is marked interrupted (resumable), nothing half-written;
#  2. two SIGINTs: the run aborts at once but still powers every board off
#     (the simulator's power state says so) and is marked aborted.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
source "$EMMCLAB_SRC/harness/tests/helpers/runlib.sh"

# wait_powered N: until some board is on and N iterations are stored
wait_busy() {
	for _ in $(seq 1 200); do
		n=$(q "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)
		if [ "${n:-0}" -ge "$1" ] && { [ "$(rl_power b1)" = on ] || [ "$(rl_power b2)" = on ]; }; then
			return 0
		fi
		sleep 0.05
	done
	fail "the run did not get going"
}

# androbench: 8 samples and its request latency percentiles (4 per operation traced)
HALF="select count(*) from (select i.id, i.workload, count(case when s.metric not glob 'rq_*' then 1 end) n, count(case when s.metric glob 'rq_*' then 1 end) l from iteration i left join sample s on s.iteration_id=i.id group by i.id) where (workload='androbench' and (n!=8 or l not in (0,4,8))) or (workload='fscopy' and n!=7)"

RL_SIM_EXTRA="faults: [slow-part=20]"
rl_lab 2
rl_plan 3
for case in 1 2; do
	rl_sim_start
	rm -rf "$T/lab.db"*
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_busy 1
	kill -INT $pid
	[ "$case" = 2 ] && { sleep 0.1; kill -INT $pid; }
	set +e
	wait $pid
	rc=$?
	set -e
	[ "$rc" = 3 ] || { cat "$T/err" >&2; fail "case $case: exit $rc, expected 3"; }
	for b in b1 b2; do
		[ "$(rl_power $b)" = off ] || { cat "$T/err" >&2; fail "case $case: $b left powered on"; }
	done
	[ "$(q "$T/lab.db" "$HALF")" = 0 ] || fail "case $case: half-written iteration"
	st=$(q "$T/lab.db" "select status from run")
	if [ "$case" = 1 ]; then
		[ "$st" = interrupted ] || fail "one signal: run marked '$st', not interrupted"
		grep -q "finishing the iterations in flight" "$T/err" || fail "no stop message"
		echo "ok 1 - one SIGINT: iterations finished, every board off, run interrupted"
	else
		[ "$st" = aborted ] || fail "two signals: run marked '$st', not aborted"
		grep -q "second signal: aborting now; powering every board off" "$T/err" ||
			fail "no abort message"
		[ "$(q "$T/lab.db" "select count(*) from job where status in ('pending','running')")" = 0 ] ||
			fail "jobs left running in the database"
		echo "ok 2 - second SIGINT: aborted at once, every board still powered off, run aborted"
	fi
	rl_sim_stop
done
