#!/usr/bin/env bash
# Two controllers on one lab and one database (docs/running.md, "Board
# locks"): lab A has boards b1, b2; lab B has b2, b3 (b2 is the same
# simulated board).  Controller 1 runs A; controller 2 starts on B while 1
# holds b2.  Each board must be driven by exactly one controller: b2 only by
# run 1 (its jobs in run 2 skipped "board locked by pid <1>"), b3 only by
# run 2; the simulator counts b2's boots of run 1 only; 2 names the holder.
# Then `board b1 power on` while run 1 drives b1 is refused the same way.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
source "$EMMCLAB_SRC/harness/tests/helpers/runlib.sh"

RL_SIM_EXTRA="faults: [slow-part=10]"
rl_lab 3 nightly "$T/lab.yaml"
# lab A: b1, b2; lab B: b2, b3 (same consoles and plugs as the simulator's lab)
python3 - "$T" <<'PY'
import sys, re
T = sys.argv[1]
lab = open(T + "/lab.yaml").read()
head, boards = lab.split("boards:\n")
items = re.split(r"(?m)^(?=  - name: )", boards)
items = [i for i in items if i.strip()]
open(T + "/labA.yaml", "w").write(head + "boards:\n" + "".join(items[0:2]))
open(T + "/labB.yaml", "w").write(head + "boards:\n" + "".join(items[1:3]))
PY
rl_plan 2 "$T/planA.yaml" labA.yaml
rl_plan 2 "$T/planB.yaml" labB.yaml
rl_sim_start

"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/planA.yaml" >"$T/outA" 2>"$T/errA" &
pidA=$!
# controller 1 holds its boards once its run row exists
for _ in $(seq 1 100); do
	[ -s "$EMMCLAB_LOCKS/b2.lock" ] && grep -q "^pid=$pidA" "$EMMCLAB_LOCKS/b2.lock" && break
	sleep 0.05
done
grep -q "^pid=$pidA" "$EMMCLAB_LOCKS/b2.lock" || fail "controller 1 did not lock b2"

# a person at the console meanwhile: refused, told who has it
set +e
"$EMMCLAB" board b1 power on --lab "$T/labA.yaml" >"$T/outP" 2>"$T/errP"
prc=$?
set -e
[ "$prc" = 3 ] || fail "board power on a locked board exited $prc, expected 3"
grep -q "board b1 is in use by pid $pidA (.*emmclab run.*) since 20" "$T/errP" ||
	{ cat "$T/errP" >&2; fail "board command did not name the holder"; }

set +e
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/planB.yaml" >"$T/outB" 2>"$T/errB"
rcB=$?
wait $pidA
rcA=$?
set -e
[ "$rcA" = 0 ] || { cat "$T/errA" >&2; fail "controller 1 exited $rcA"; }
# run 2 carried on with the board it could lock (skipped jobs exit 0, as for
# a quarantined board; they are in the summary and the database)
[ "$rcB" = 0 ] || { cat "$T/errB" >&2; fail "controller 2 exited $rcB, expected 0"; }
grep -q "2 skipped" "$T/errB" || fail "skipped jobs not in the summary"
grep -q "b2: board locked by pid $pidA (.*) since 20.*: its jobs are skipped" "$T/errB" ||
	{ cat "$T/errB" >&2; fail "controller 2 did not name b2's holder"; }

runA=1 runB=2
[ "$(q "$T/lab.db" "select json_extract(config_json,'$.pid') from run where id=$runA")" = "$pidA" ] ||
	fail "run 1 is not controller 1's"
ok_jobs() { q "$T/lab.db" "select count(*) from job j join board b on b.id=j.board_id where j.run_id=$1 and b.name='$2' and j.status='ok'"; }
[ "$(ok_jobs $runA b1)" = 2 ] && [ "$(ok_jobs $runA b2)" = 2 ] || fail "run 1 did not drive b1 and b2"
[ "$(ok_jobs $runB b3)" = 2 ] || fail "run 2 did not drive b3"
[ "$(ok_jobs $runB b2)" = 0 ] || fail "b2 driven by both controllers"
[ "$(q "$T/lab.db" "select count(*) from job j join board b on b.id=j.board_id where j.run_id=$runB and b.name='b2' and j.status='skipped' and j.cause like 'board locked by pid $pidA%' and j.part_id is null")" = 2 ] ||
	fail "run 2's b2 jobs not written as skipped with the lock holder as cause"
# transcripts: every boot of b2 belongs to run 1
[ "$(q "$T/lab.db" "select count(*) from transcript t join board b on b.id=t.board_id where b.name='b2' and t.run_id=$runB")" = 0 ] ||
	fail "run 2 has transcripts of b2"
[ "$(q "$T/lab.db" "select count(*) from transcript t join board b on b.id=t.board_id where b.name='b2' and t.run_id=$runA")" -ge 2 ] ||
	fail "run 1 has no transcripts of b2"
# the simulator's boot count of b2: run 1's boots only (2 modes x 2 iterations)
boots=$(curl -sS "http://127.0.0.1:$PORT/sim/state" | python3 -c 'import json,sys; print([b["boots"] for b in json.load(sys.stdin)["boards"] if b["name"]=="b2"][0])')
[ "$boots" = "$(q "$T/lab.db" "select count(*) from transcript t join board b on b.id=t.board_id where b.name='b2'")" ] ||
	fail "b2 booted $boots times, not once per transcript of run 1"
# the jobs that never reached identify are counted by status: 4 jobs, 2 ok
"$EMMCLAB" status --db "$T/lab.db" >"$T/status" 2>&1
# 60 samples besides the request latency percentiles
[ "$(q "$T/lab.db" "select count(*) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id
	 where j.run_id=$runB and s.metric not glob 'rq_*'")" = 60 ] || fail "run 2: not 60 samples"
nB=$(q "$T/lab.db" "select count(*) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where j.run_id=$runB")
grep -Eq "^ +$runB +[0-9T:Z-]+ +complete +lab / nightly +4 +2 +0 +0 +$nB$" "$T/status" ||
	{ cat "$T/status" >&2; fail "status does not count run 2's skipped jobs"; }
echo "ok 1 - two controllers on one lab: each board driven by one of them, the other names the holder"
echo "ok 2 - board power on a board a run holds: refused, holder named"
rl_sim_stop
