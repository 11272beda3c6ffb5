#!/usr/bin/env bash
# A controller killed (SIGKILL) at random moments of a simulated nightly,
# then `run --resume` (docs/running.md, "Resuming a run"): the run must end
# with exactly the samples an uninterrupted run stores - every (board, mode,
# workload, iteration, metric) once, none missing, none twice - whatever
# moment it died at (before its run row committed, mid-iteration, while
# powering off ...), also when the resumed controller is killed in turn.
#
#   SEEDS=N   number of kill schedules (default 6, about a minute here); the
#             long version: SEEDS=100 ctest -R run_resume (about 15 minutes)
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
source "$EMMCLAB_SRC/harness/tests/helpers/runlib.sh"
SEEDS=${SEEDS:-6}

rl_lab 2
rl_plan 2
rl_sim_start

# The reference: one uninterrupted run.
"$EMMCLAB" run --db "$T/ref.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "uninterrupted run failed"; }
rl_tuples "$T/ref.db" 1 >"$T/ref.tuples"
nref=$(grep -vc '|rq_' "$T/ref.tuples") # besides the request latency percentiles
[ "$nref" = 120 ] || fail "reference run: $nref sample tuples, expected 120"
total=$(q "$T/ref.db" "select count(*) from sample")
grep -qv '|1$' "$T/ref.tuples" && fail "reference run stored a sample twice"

# kill_after SECONDS CMD...: start CMD, SIGKILL it after SECONDS (if still running)
kill_after() {
	local t=$1
	shift
	"$@" >"$T/out" 2>>"$T/err" &
	local p=$!
	sleep "$t"
	if kill -9 "$p" 2>/dev/null; then
		wait "$p" 2>/dev/null || true
		return 0
	fi
	wait "$p" 2>/dev/null || true
	return 1
}

resumes=0
for seed in $(seq 1 "$SEEDS"); do
	rm -rf "$T/lab.db"*
	: >"$T/err"
	# two kill moments per schedule: the first run, then its first resume
	read -r k1 k2 < <(python3 -c "import random; r=random.Random($seed); print('%.2f %.2f' % (r.uniform(0.05, 3.5), r.uniform(0.05, 3.0)))")
	kill_after "$k1" "$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" || true
	if kill_after "$k2" "$EMMCLAB" run --resume --db "$T/lab.db" --no-report "$T/plan.yaml"; then
		resumes=$((resumes + 1))
	fi
	set +e
	"$EMMCLAB" run --resume --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>>"$T/err"
	rc=$?
	set -e
	nruns=$(q "$T/lab.db" "select count(*) from run" 2>/dev/null || echo 0)
	if [ "$rc" = 2 ] && grep -q "no unfinished run" "$T/err" && [ "$nruns" = 0 ]; then
		# killed before its run row or journal entry existed: nothing to resume
		"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>>"$T/err" ||
			{ cat "$T/err" >&2; fail "seed $seed: fresh run failed"; }
	elif [ "$rc" = 2 ] && grep -q "no unfinished run" "$T/err"; then
		# the run (or its first resume) ended before its kill moment
		[ "$(q "$T/lab.db" "select status from run")" = complete ] ||
			{ cat "$T/err" >&2; fail "seed $seed: 'no unfinished run' but the run is not complete"; }
	elif [ "$rc" != 0 ]; then
		cat "$T/err" >&2
		fail "seed $seed (kills at $k1 s, $k2 s): resume exited $rc"
	fi
	[ "$(q "$T/lab.db" "select count(*) from run")" = 1 ] || fail "seed $seed: more than one run"
	run=$(q "$T/lab.db" "select id from run")
	[ "$(q "$T/lab.db" "select status from run")" = complete ] || fail "seed $seed: run not complete"
	rl_tuples "$T/lab.db" "$run" >"$T/got.tuples"
	if ! cmp -s "$T/ref.tuples" "$T/got.tuples"; then
		diff "$T/ref.tuples" "$T/got.tuples" | head -20 >&2 || true
		cat "$T/err" >&2
		fail "seed $seed (kills at $k1 s, $k2 s): samples differ from an uninterrupted run"
	fi
	[ "$(q "$T/lab.db" "select count(*) from sample")" = "$total" ] || fail "seed $seed: sample count"
	[ "$(q "$T/lab.db" "select count(*) from job where status='ok'")" = 4 ] ||
		fail "seed $seed: not every job ok"
	ls "$T/lab.db.pending/"*.jnl >/dev/null 2>&1 && fail "seed $seed: journal left"
	echo "ok $seed - killed at $k1 s and $k2 s: after --resume exactly the uninterrupted run's $total samples"
done
[ "$resumes" -ge 1 ] || fail "no schedule killed a resumed controller"

# A run that is alive is not resumed by a second controller.
"$EMMCLAB" run --db "$T/live.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err.live" &
pid=$!
for _ in $(seq 1 100); do
	[ "$(q "$T/live.db" "select count(*) from run" 2>/dev/null || echo 0)" = 1 ] && break
	sleep 0.05
done
set +e
"$EMMCLAB" run --resume --db "$T/live.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err2"
rc=$?
set -e
wait $pid || fail "the live run failed"
[ "$rc" = 2 ] && grep -q "is still running (pid $pid)" "$T/err2" ||
	{ cat "$T/err2" >&2; fail "a live run was resumed (exit $rc)"; }
echo "ok $((SEEDS + 1)) - a live run is not resumed: its pid is named"
rl_sim_stop

# --with-sim: the simulator a killed run leaves behind is reused by --resume,
# and stopped when the resumed run ends.
export EMMCLAB_SIM_DIR="$T/sim"
rm -rf "$T/lab.db"*
"$EMMCLAB" run --with-sim --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 200); do
	[ "$(q "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)" -ge 2 ] && break
	sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
simpid=$(cat "$T/sim/sim.pid")
kill -0 "$simpid" || fail "the simulator did not outlive the killed run"
"$EMMCLAB" run --resume --with-sim --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "resume --with-sim failed"; }
grep -q "simulator already running for .* (pid $simpid): reused" "$T/err" ||
	{ cat "$T/err" >&2; fail "the left-over simulator was not reused"; }
kill -0 "$simpid" 2>/dev/null && fail "the simulator was not stopped after the resumed run"
rl_tuples "$T/lab.db" 1 | cmp -s "$T/ref.tuples" - || fail "--with-sim resume: samples differ"
echo "ok $((SEEDS + 2)) - resume --with-sim reuses the simulator the killed run left, then stops it"
