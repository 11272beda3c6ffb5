#!/usr/bin/env bash
# Progress people and programs can follow, on the simulated lab:
#  1. --log-format json: every stderr line of the run is one JSON object; the
#     events (run-start, stage, slot-done, job, board-done, run-end, summary)
#     agree with what the database stored;
#  2. `emmclab status` in another shell shows the running run live (pid, slots,
#     a line per board with stage and ETA) from the progress file, which the run
#     rewrites atomically and removes at the end;
#  3. a controller killed with SIGKILL leaves its progress file behind: status
#     says the run is NOT RUNNING (its pid is gone) instead of showing it live;
#  4. on a terminal (a real pty, through script(1)) the live block is drawn:
#     per-board lines and the progress bar, with cursor-up redraws.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-progress.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$T/lab.db" "$1"; }

lab() { # FAULT
	cat >"$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: progress
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
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
    sim: {host: sdhci-sprd, cqe: false, faults: [$1]}
  - name: b2
    type: t
    part: {label: "part two", model: sprd-32g}
    console: {driver: pty, path: $T/sim/b2.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/b2", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, faults: [$1]}
YAML
	cat >"$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 3
    order: interleave
    workloads: [{name: androbench}]
plan:
  name: progress-plan
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
}

sim_restart() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
}

# 1 + 2: a slow JSON-logged run, watched from "another shell"
lab "slow-part=20"
sim_restart
"$EMMCLAB" run --db "$T/lab.db" --no-report --log-format json "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
seen=
for _ in $(seq 1 200); do
	"$EMMCLAB" status --db "$T/lab.db" >"$T/status" 2>&1 || true
	if grep -q "pid $pid): running for" "$T/status" && grep -Eq '^    b[12] .* ETA ' "$T/status"; then
		seen=1
		break
	fi
	sleep 0.1
done
[ -n "$seen" ] || { cat "$T/status" >&2; fail "status never showed the running run live"; }
grep -Eq "^  run [0-9]+ \(plan progress-plan, lab progress, pid $pid\): running for .*, [0-9]+/12 slots" "$T/status" ||
	{ cat "$T/status" >&2; fail "status: no run line with the slot count"; }
[ -f "$T/.lab.db.live/run-1.json" ] || fail "no progress file in .lab.db.live"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"]==1 and d["pid"]==int(sys.argv[2]) and len(d["boards"])==2, d' \
	"$T/.lab.db.live/run-1.json" "$pid" || fail "progress file content"
set +e
wait "$pid"
rc=$?
set -e
pid=
[ "$rc" = 0 ] || { tail -20 "$T/err" >&2; fail "run exited $rc"; }
[ ! -e "$T/.lab.db.live/run-1.json" ] || fail "progress file left behind by a finished run"
[ ! -e "$T/.lab.db.live" ] || fail "empty state directory left behind"
"$EMMCLAB" status --db "$T/lab.db" >"$T/status"
sed -n '/^in progress/,/^$/p' "$T/status" | grep -q '(none)' || { cat "$T/status" >&2; fail "status shows a finished run in progress"; }

python3 - "$T/err" "$(q "select count(*) from iteration")" "$(q "select count(*) from job where status='ok'")" <<'PY' || fail "JSON log"
import json, re, sys
events = {}
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no log lines"
for n, line in enumerate(lines, 1):
    try:
        o = json.loads(line)
    except ValueError:
        sys.exit(f"line {n} is not one JSON object: {line!r}")
    assert isinstance(o, dict) and "event" in o, line
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o.get("ts", "")), line
    events.setdefault(o["event"], []).append(o)
for k in ("run-start", "stage", "slot-done", "job", "board-done", "run-end", "summary"):
    assert k in events, f"no {k} event"
iters, ok = int(sys.argv[2]), int(sys.argv[3])
assert len(events["slot-done"]) == iters == 12, (len(events["slot-done"]), iters)
assert sum(1 for j in events["job"] if j["status"] == "ok") == ok == 4
assert events["run-end"][0]["status"] == "complete"
assert events["summary"][0]["samples"] > 0 and events["summary"][0]["jobs_ok"] == 4
assert {e["board"] for e in events["board-done"]} == {"b1", "b2"}
stages = {e["stage"] for e in events["stage"]}
for s in ("booting", "identify", "verify-mode", "androbench", "powering-off"):
    assert s in stages, f"stage {s} never reported: {stages}"
last = [e for e in events["slot-done"] if e["board"] == "b1"][-1]
assert last["slot"] == last["slots"] == 6 and last["eta_s"] == 0, last
PY

# 3: SIGKILL: the file stays, status knows the writer is dead
rm -f "$T/lab.db"*
sim_restart
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 200); do
	[ -f "$T/.lab.db.live/run-1.json" ] && break
	sleep 0.05
done
[ -f "$T/.lab.db.live/run-1.json" ] || fail "no progress file while running"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
dead=$pid
pid=
"$EMMCLAB" status --db "$T/lab.db" >"$T/status"
grep -q "^  run 1 (plan progress-plan, lab progress): NOT RUNNING: controller pid $dead is gone" "$T/status" ||
	{ cat "$T/status" >&2; fail "status does not say the killed run is dead"; }
grep -q "emmclab run --resume 1" "$T/status" || fail "status does not say how to continue"

# 4: a terminal gets the live block (script(1) gives the run a real pty)
command -v script >/dev/null || { echo "script(1) missing (util-linux)" >&2; exit 77; }
rm -rf "$T/lab.db"* "$T/.lab.db.live"
sim_restart
COLUMNS=100 LINES=30 script -qefc "$EMMCLAB run --db $T/lab.db --no-report $T/plan.yaml" "$T/typescript" >/dev/null </dev/null ||
	fail "run under a pty failed"
grep -aq 'slots  ETA' "$T/typescript" || fail "no progress bar on the terminal"
grep -aEq '\[#+\.*\] +[0-9]+%' "$T/typescript" || fail "no filled progress bar"
grep -aEq '  b1 +(booting|identify|verify-mode|androbench)' "$T/typescript" || fail "no live board line"
grep -aq $'\033\[[0-9]*A' "$T/typescript" || fail "the live block is never redrawn in place"
grep -aq 'booting for fua' "$T/typescript" || fail "the log lines are gone under the live block"
echo "run_progress: ok"
