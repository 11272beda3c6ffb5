#!/usr/bin/env bash
# Plans that schedule, on the simulated lab:
#  1. run --dry-run before any run: the schedule per board (jobs, modes,
#     priorities, order) with "no history"; nothing is touched (no database
#     is created, no board powered: the simulator is not even running);
#  2. after one run, the dry run estimates from it, within a factor of the
#     real wall time, and says when the budget would cut slots;
#  3. priorities put the high suite first; a plan-wide random order with a
#     seed is printed and reproducible;
#  4. shared resources: two boards that need the lab's one PDU to boot queue
#     for it (stage wait:pdu-main) and never boot at once; unknown resources
#     are refused with file:line:col;
#  5. job_budget: a job past it is given up as timed out at its next slot.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-dryrun.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$T/lab.db" "$1"; }
# Slow parts make the run last seconds: the database's timestamps are whole
# seconds, so a sub-second schedule cannot be estimated from them.
SLOW=

lab() { # EXTRA-LAB-KEYS USES
	cat >"$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: dry
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
$1
types:
  - name: t
    host: sim
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: b1
    type: t
    part: {label: "part one", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b1.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 1, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, faults: [$SLOW]}
$2
  - name: b2
    type: t
    part: {label: "part two", model: sprd-32g}
    console: {driver: pty, path: $T/sim/b2.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 2, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, faults: [$SLOW]}
$2
YAML
}

plan() { # EXTRA-PLAN-KEYS
	cat >"$T/plan.yaml" <<YAML
suites:
  - name: low
    modes: [fua, cache-nofua]
    iterations: 2
    workloads: [{name: androbench}]
  - name: high
    modes: [fua, cache-nofua]
    iterations: 2
    workloads: [{name: androbench}]
plan:
  name: dry-plan
  lab: lab.yaml
  suites: [low, high]
  budget: ${BUDGET:-5m}
$1
YAML
}

run() { # expected-exit EXTRA-ARGS...
	local want=$1
	shift
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
	set +e
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$@" "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
	[ "$rc" = "$want" ] || { tail -20 "$T/err" >&2; fail "run exited $rc, expected $want"; }
}

# 1. no history, nothing touched
lab "" ""
plan "  priorities: {high: 10}"
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry" 2>"$T/dry.err" || { cat "$T/dry.err" >&2; fail "dry run failed"; }
[ ! -e "$T/lab.db" ] || fail "the dry run created the database"
grep -q "^plan dry-plan on lab dry: 2 boards, 8 jobs, 16 slots" "$T/dry" || { cat "$T/dry" >&2; fail "no plan line"; }
grep -q "^board b1 (type t): 8 slots, estimated ? (no history" "$T/dry" || fail "no board line with no history"
grep -Eq '^  1 +high +fua .* 10 +2  no history$' "$T/dry" || { cat "$T/dry" >&2; fail "high-priority job not first"; }
grep -Eq '^  3 +low +fua .* 0 +2  no history$' "$T/dry" || fail "low-priority job not after the high ones"
grep -q "^  order: ^fua#1 ^cache-nofua#1 ^fua#2 ^cache-nofua#2 ^fua#1" "$T/dry" || { cat "$T/dry" >&2; fail "interleaved order not printed"; }
grep -q "^estimated duration: unknown" "$T/dry" || fail "no 'unknown' total without history"

# 2. one run, then an estimate near its wall time
SLOW=slow-part=100
lab "" ""
run 0
SLOW=
wall=$(sed -n 's/.*finished in \([0-9.]*\) s.*/\1/p' "$T/err")
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry"
grep -Eq '^  1 +high +fua .*  [0-9.]+s \([0-9]+ past (iterations|board schedules)\)$' "$T/dry" || { cat "$T/dry" >&2; fail "no per-iteration estimate"; }
est=$(sed -n 's/^estimated duration: \([0-9.]*\)s .*/\1/p' "$T/dry")
[ -n "$est" ] || { cat "$T/dry" >&2; fail "no estimated duration in seconds"; }
echo "run_dry_run: estimate ${est}s for a run of ${wall}s"
python3 -c "import sys; w,e=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if e >= w/3 and e <= w*3 + 2 else 1)" "$wall" "$est" ||
	fail "estimate ${est}s too far from the run's ${wall}s"
grep -q "within the budget of 5m00s" "$T/dry" || fail "budget not compared"
BUDGET=300ms plan "  priorities: {high: 10}"
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry"
grep -Eq "over the budget of 0.3s, [0-9]+ slot\(s\) would be skipped" "$T/dry" || { cat "$T/dry" >&2; fail "budget overrun not predicted"; }
grep -Eq "^  over the budget: the last [0-9]+ slot" "$T/dry" || fail "no per-board budget cut"

# 3. plan-wide seeded random order: printed, reproducible, not interleaved
plan "  order: random
  seed: 4242"
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry1"
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry2"
grep -q "^  suite low: random order, seed 4242 (the plan's)" "$T/dry1" || { cat "$T/dry1" >&2; fail "seed not printed"; }
cmp -s "$T/dry1" "$T/dry2" || fail "the seeded order is not reproducible"
plan "  order: random
  seed: 4243"
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry3"
[ "$(grep -c '^  order:' "$T/dry1")" = 2 ] || fail "one order line per board"
cmp -s <(grep -A2 '^  order:' "$T/dry1") <(grep -A2 '^  order:' "$T/dry3") && fail "another seed gives the same order"

# 4. shared resources: one PDU for both boards' boots
lab "  resources: {pdu-main: 1, tftp: 2}" "    uses: {boot: [pdu-main]}"
plan ""
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry"
grep -q "^    pdu-main x1: b1 (boot) b2 (boot)" "$T/dry" || { cat "$T/dry" >&2; fail "resources not printed"; }
grep -q "^    tftp x2: (no board uses it)" "$T/dry" || fail "unused resource not printed"
rm -f "$T/lab.db"*
run 0 --log-format json
python3 - "$T/err" <<'PY' || fail "boots overlapped or nobody waited"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
stages = [e for e in ev if e["event"] == "stage"]
waits = [e for e in stages if e["stage"] == "wait:pdu-main"]
assert waits, "no board ever waited for pdu-main"
# a boot lasts from stage booting to the board's next stage
booting, overlaps, boots = {}, 0, 0
for e in stages:
    b = e["board"]
    if e["stage"] == "booting":
        if any(v for k, v in booting.items() if k != b):
            overlaps += 1
        booting[b] = True
        boots += 1
    else:
        booting[b] = False
assert boots >= 16, boots
assert overlaps == 0, f"{overlaps} boots started while another board was booting"
PY
[ "$(q "select count(*) from job where status='ok'")" = 8 ] || fail "not every job completed under the shared PDU"
lab "  resources: {pdu-main: 1}" "    uses: {boot: [pdu-mian]}"
set +e
"$EMMCLAB" run --dry-run --db "$T/lab.db" "$T/plan.yaml" >"$T/dry" 2>"$T/dry.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown resource: exit $rc, expected 2"
grep -Eq "lab.yaml:[0-9]+:[0-9]+: board b1: uses 'pdu-mian', which the lab's resources: do not declare" "$T/dry.err" ||
	{ cat "$T/dry.err" >&2; fail "unknown resource error without file:line:col"; }

# 5. job_budget: every job stops after its first slot
lab "" ""
plan "  job_budget: 1ms"
rm -f "$T/lab.db"*
run 3
[ "$(q "select count(*) from job where status='infra'")" = 8 ] || fail "jobs past job_budget not given up"
[ "$(q "select count(*) from event where kind='job-timeout'")" = 8 ] || fail "no job-timeout events"
[ "$(q "select count(*) from iteration")" = 8 ] || fail "a job past its budget started another iteration"
grep -q "timed out" "$T/err" || fail "the log does not say timed out"
echo "run_dry_run: ok"
