#!/usr/bin/env bash
# End to end: the real controller runs plans on the simulated lab (real ptys,
# HTTP power through the pdudaemon and Tasmota drivers, the agent protocol).
#  1. a 4-mode suite on a CQE board and a non-CQE board: every job ok, every
#     stored job verified, reliable writes only in fua modes, HTML + table;
#  2. a kernel that ignores the FUA knob (sim fault mode-stuck): the mismatch is
#     caught, the job stores nothing, exit 3;
#  3. power-fail suite on a part that loses acknowledged writes without FUA:
#     data loss found in cache-nofua only, exit 1;
#  4. a board with no console output: retried, quarantined, the other board's
#     jobs complete, exit 3;
#  5. SIGTERM in the middle of a run: run aborted, no half-written iteration.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-runsim.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$1" "$2"; }

# lab FAULTS_B5 FAULTS_SPRD
lab() {
	cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: runsim
  transcripts: $T/transcripts
  transcripts_keep: ${TKEEP:-4GiB}
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
types:
  - name: nocqe
    host: sim
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    quarantine_after: 2
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
  - name: cqe
    host: sim
    has_cqe: true
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    quarantine_after: 2
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
      fua-cqe: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=0"}
      cache-nofua-cqe: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=0"}
boards:
  - name: b5
    type: cqe
    part: {label: "DUT5 industrial", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true, faults: [$1]}
  - name: bsprd
    type: nocqe
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/bsprd.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/bsprd", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true, faults: [$2]}
YAML
}

plan() { # SUITE-YAML
	cat > "$T/plan.yaml" <<YAML
suites:
$1
plan:
  name: runsim
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
}

run() { # expected-exit [keep-db]
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	[ -n "${2:-}" ] || rm -f "$T/lab.db"*
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
	set +e
	"$EMMCLAB" run --db "$T/lab.db" --report "$T/report.html" "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
	if [ "$rc" != "$1" ]; then
		cat "$T/err" >&2
		fail "run exited $rc, expected $1"
	fi
}

FUA_SUITE='  - name: s
    modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]
    iterations: 3
    order: interleave
    precondition_passes: 1
    workloads: [{name: androbench}, {name: fscopy}]'

# bg_run N: a slow run in the background (pid in $pid) once N iterations are stored
bg_run() {
	lab "slow-part=20" "slow-part=20"
	plan "$FUA_SUITE"
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim" "$T/lab.db"*
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
	pid=$!
	for _ in $(seq 1 100); do
		n=$(q "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)
		[ "${n:-0}" -ge "$1" ] && break
		sleep 0.1
	done
}

# iterations that are not whole (androbench has 8 samples, fscopy 7)
# androbench: 8 samples and its request latency percentiles (4 per operation traced)
HALF="select count(*) from (select i.id, i.workload, count(case when s.metric not glob 'rq_*' then 1 end) n, count(case when s.metric glob 'rq_*' then 1 end) l from iteration i left join sample s on s.iteration_id=i.id group by i.id) where (workload='androbench' and (n!=8 or l not in (0,4,8))) or (workload='fscopy' and n!=7)"

# 1. happy path; two days old transcripts beyond a 512 KiB cap go, on their
#    thread, while the boards run (this run's own stay)
mkdir -p "$T/transcripts"
for k in 1 2 3; do
	head -c 1048576 /dev/zero > "$T/transcripts/old-$k.log"
	touch -d '2 days ago' "$T/transcripts/old-$k.log"
done
TKEEP=512KiB lab "" ""
plan "$FUA_SUITE"
run 0
grep -q "transcripts: removed the 3 oldest (3.0 MiB) to stay under transcripts_keep" "$T/err" ||
	fail "old transcripts not pruned"
ls "$T/transcripts"/old-*.log >/dev/null 2>&1 && fail "an old transcript is left"
[ "$(ls "$T/transcripts" | wc -l)" -ge 12 ] || fail "this run's transcripts were removed"
grep -q "FUA vs cache-no-FUA" "$T/out" || fail "no mode table"
grep -q "^  on b5, kernel" "$T/out" && grep -q "^DUT5 industrial$" "$T/out" || fail "no table block for b5"
grep -q "^  on bsprd, kernel" "$T/out" || fail "no table block for bsprd"
grep -q "fua-cqe" "$T/out" || fail "no CQE rows for the CQE board"
[ -s "$T/report.html" ] || fail "no HTML report"
grep -q "mode fua-cqe not supported" "$T/err" || fail "unsupported modes not reported"
[ "$(q "$T/lab.db" "select count(*) from job where status='ok'")" = 6 ] || fail "expected 6 ok jobs"
[ "$(q "$T/lab.db" "select count(*) from job where verified_mode is null or verified_mode != mode")" = 0 ] ||
	fail "a stored job is not verified as its requested mode"
[ "$(q "$T/lab.db" "select count(*) from iteration")" = 36 ] || fail "expected 36 iterations (6 jobs x 3 x 2 workloads)"
[ "$(q "$T/lab.db" "select count(*) from counter c join iteration i on i.id=c.iteration_id join job j on j.id=i.job_id where c.name='reliable_writes' and j.mode like 'cache-nofua%' and c.value != 0")" = 0 ] ||
	fail "cache-nofua iterations issued reliable writes"
[ "$(q "$T/lab.db" "select min(c.value) from counter c join iteration i on i.id=c.iteration_id join job j on j.id=i.job_id where c.name='reliable_writes' and j.mode like 'fua%' and i.workload='fscopy'")" -gt 0 ] ||
	fail "fua fscopy iterations issued no reliable writes"
[ "$(q "$T/lab.db" "select min(c.value) from counter c join iteration i on i.id=c.iteration_id where c.name='flushes'")" -gt 0 ] ||
	fail "an iteration issued no flush"
[ "$(q "$T/lab.db" "select status from run")" = complete ] || fail "run not complete"
[ "$(q "$T/lab.db" "select count(*) from transcript")" -ge 12 ] || fail "transcripts not recorded"
echo "ok 1 - 4-mode suite on two boards: 6 jobs verified, counters as the modes require"

# 2. the kernel ignores the FUA knob on b5: cache-nofua runs with FUA
lab "mode-stuck" ""
plan "$FUA_SUITE"
run 3
grep -q "mode-mismatch" "$T/err" || fail "mismatch not reported"
[ "$(q "$T/lab.db" "select count(*) from job where status='mode-mismatch' and board_id=(select id from board where name='b5')")" -ge 1 ] ||
	fail "no mode-mismatch job"
[ "$(q "$T/lab.db" "select count(*) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where j.status='mode-mismatch'")" = 0 ] ||
	fail "samples stored for a mismatched job"
[ "$(q "$T/lab.db" "select count(*) from job where status='ok' and board_id=(select id from board where name='bsprd')")" = 2 ] ||
	fail "the other board's jobs did not complete"
echo "ok 2 - a kernel that ignores the FUA knob is caught, its samples discarded"

# 3. power-fail integrity on a part that loses acknowledged writes without FUA
lab "" "lose-writes=8"
plan '  - name: s
    modes: [fua, cache-nofua]
    iterations: 2
    order: interleave
    workloads: [{name: powerfail, args: {records: 3000, record_size: 4096, cut_min: 200ms, cut_max: 600ms}}]'
sed -i 's/^  name: runsim$/  name: runsim\n  boards: [bsprd]/' "$T/plan.yaml"
run 1
grep -q "DATA LOSS" "$T/err" || fail "data loss not reported"
lost_nofua=$(q "$T/lab.db" "select sum(s.value) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where s.metric='lost_records' and j.mode='cache-nofua'")
lost_fua=$(q "$T/lab.db" "select sum(s.value) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where s.metric='lost_records' and j.mode='fua'")
acked=$(q "$T/lab.db" "select min(s.value) from sample s where s.metric='acked_records'")
[ "${lost_nofua%.*}" -gt 0 ] || fail "no loss recorded in cache-nofua ($lost_nofua)"
[ "${lost_fua%.*}" = 0 ] || fail "loss recorded with FUA ($lost_fua)"
[ "${acked%.*}" -gt 0 ] || fail "no acknowledged records ($acked)"
echo "ok 3 - power cut: acknowledged data lost only without FUA ($lost_nofua records), exit 1"

# 4. b5 gives no console output at all: retried, quarantined; bsprd completes
lab "no-output" ""
plan "$FUA_SUITE"
run 3
grep -q "quarantine" "$T/err" || fail "no quarantine"
[ "$(q "$T/lab.db" "select count(*) from event where kind='no-output'")" -ge 2 ] || fail "no-output not classified"
[ "$(q "$T/lab.db" "select count(*) from job where status='ok' and board_id=(select id from board where name='bsprd')")" = 2 ] ||
	fail "the healthy board's jobs did not complete"
echo "ok 4 - a silent board is classified, retried and quarantined; the other board completes"

# 4b. the quarantine holds in the next run, until an operator releases the board
lab "" ""
run 0 keep
grep -q "b5: quarantined by an earlier run" "$T/err" || fail "quarantine not carried over"
[ "$(q "$T/lab.db" "select count(*) from job j join run r on r.id=j.run_id where r.id=2 and j.status='ok' and j.board_id=(select id from board where name='b5')")" = 0 ] ||
	fail "a quarantined board ran jobs"
"$EMMCLAB" board b5 release --db "$T/lab.db" | grep -q released || fail "release"
run 0 keep
grep -q "quarantined by an earlier run" "$T/err" && fail "released board still quarantined"
[ "$(q "$T/lab.db" "select count(*) from job where run_id=3 and status='ok' and board_id=(select id from board where name='b5')")" = 4 ] ||
	fail "released board did not run"
echo "ok 4b - quarantine persists across runs until 'emmclab board NAME release'"

# 5. SIGTERM in the middle: finished iterations stay whole, the run is aborted
bg_run 2
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
[ "$rc" = 3 ] || { cat "$T/err" >&2; fail "interrupted run exited $rc, expected 3"; }
[ "$(q "$T/lab.db" "select status from run")" = interrupted ] || fail "run not marked interrupted"
[ "$(q "$T/lab.db" "$HALF")" = 0 ] ||
	fail "a half-written iteration"
[ "$(q "$T/lab.db" "select count(*) from job where status in ('pending','running')")" = 0 ] || fail "jobs left running"
echo "ok 5 - SIGTERM: run aborted cleanly, every stored iteration whole"

# 6. SIGKILL of the controller: what was committed is whole; the next run
#    marks the dead run aborted
bg_run 3
kill -KILL $pid
wait $pid 2>/dev/null || true
[ "$(q "$T/lab.db" "pragma integrity_check")" = ok ] || fail "database damaged by SIGKILL"
[ "$(q "$T/lab.db" "$HALF")" = 0 ] ||
	fail "a half-written iteration after SIGKILL"
kept=$(q "$T/lab.db" "select count(*) from iteration")
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
lab "" ""
plan "$FUA_SUITE"
run 0 keep
grep -q "run 1: its controller died; marked aborted" "$T/err" || fail "dead run not reaped"
[ "$(q "$T/lab.db" "select status from run where id=1")" = aborted ] || fail "dead run not aborted"
[ "$(q "$T/lab.db" "select count(*) from iteration i join job j on j.id=i.job_id where j.run_id=1")" = "$kept" ] ||
	fail "samples of the killed run lost"
echo "ok 6 - SIGKILL: committed iterations whole ($kept kept), the dead run is marked aborted later"

# 7. plan.parallel: 1 drives one board at a time; a kernel whose `version`
#    differs from what the DUT runs gives no results
lab "" ""
plan "$FUA_SUITE"
sed -i 's/^  name: runsim$/  name: runsim\n  parallel: 1/' "$T/plan.yaml"
run 0
first_b=$(q "$T/lab.db" "select b.name from job j join board b on b.id=j.board_id order by j.started_at, j.id limit 1")
last_first=$(q "$T/lab.db" "select max(j.finished_at) from job j join board b on b.id=j.board_id where b.name='$first_b'")
other_start=$(q "$T/lab.db" "select min(j.started_at) from job j join board b on b.id=j.board_id where b.name!='$first_b'")
[[ "$other_start" > "$last_first" || "$other_start" == "$last_first" ]] ||
	fail "parallel: 1 overlapped the boards ($first_b done $last_first, next started $other_start)"
cat >> "$T/lab.yaml" <<YAML
kernels:
  - {name: k, version: 9.9.9-not-this-one}
YAML
run 3
grep -q "wrong-kernel" "$T/err" || fail "kernel version mismatch not reported"
[ "$(q "$T/lab.db" "select count(*) from sample")" = 0 ] || fail "samples stored from a wrong kernel"
echo "ok 7 - parallel: 1 runs boards one after another; a wrong kernel stores nothing"
echo "8 passed, 0 failed"
