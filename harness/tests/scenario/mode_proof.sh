#!/usr/bin/env bash
# The mode proof (docs/running.md): sysfs, the mode line and the mmc request
# tracepoints' counters must agree, in every workload that issues FUA writes.
#  1. a kernel whose request path ignores the FUA knob (sim fault fua-ignored:
#     sysfs and the mode line follow the knob, the card does not): refused in
#     every workload, on a part that does FUA by default (cache-nofua gets
#     reliable writes) and on one that does not (fua gets none);
#  2. a board type with `trace: false`: its samples are stored as sysfs-only
#     and every report format and `compare` mark them; a tracing board's are
#     tracepoints and unmarked;
#  3. `trace: false` without a reason is a configuration error (file:line).
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing" >&2; exit 77; }
T=$(mktemp -d /tmp/emmclab-proof.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$T/lab.db" "$1"; }

# lab FAULT TRACE-KEYS (for the sprd board's type)
lab() {
	cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: proof
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 5, autoboot_floor: 1s}
types:
  - name: arasan
    host: sim
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
  - name: sprd
    host: sim
$2
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: b5
    type: arasan
    part: {label: "DUT5 industrial", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false, faults: [$1]}
  - name: bsprd
    type: sprd
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/bsprd.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/bsprd", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true, faults: [$1]}
YAML
	cat > "$T/plan.yaml" <<YAML
suites:
  - name: ab
    modes: [fua, cache-nofua]
    iterations: 2
    precondition_passes: 0
    workloads: [{name: androbench}]
  - name: fs
    modes: [fua, cache-nofua]
    iterations: 2
    precondition_passes: 0
    workloads: [{name: fscopy}]
plan:
  name: proof
  lab: lab.yaml
  suites: [ab, fs]
  budget: 5m
YAML
}

run() { # expected-exit
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim" "$T/lab.db"*
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
	set +e
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
	if [ "$rc" != "$1" ]; then
		cat "$T/err" >&2
		fail "run exited $rc, expected $1"
	fi
}

# 1. the request path ignores the knob, sysfs does not
lab "fua-ignored" ""
run 3
job() { q "select j.status || ' ' || coalesce(j.verified_mode, '-') from job j join board b on b.id = j.board_id where b.name = '$1' and j.suite = '$2' and j.mode = '$3'"; }
for s in ab fs; do
	[ "$(job b5 $s fua)" = "ok fua" ] || fail "b5 $s fua: $(job b5 $s fua)"
	[ "$(job b5 $s cache-nofua)" = "mode-mismatch cache-nofua" ] ||
		fail "b5 $s cache-nofua not refused (or sysfs disagreed, so the counters were not what caught it): $(job b5 $s cache-nofua)"
	[ "$(job bsprd $s fua)" = "mode-mismatch fua" ] || fail "bsprd $s fua not refused: $(job bsprd $s fua)"
	[ "$(job bsprd $s cache-nofua)" = "ok cache-nofua" ] || fail "bsprd $s cache-nofua: $(job bsprd $s cache-nofua)"
done
for w in androbench fscopy; do
	grep -q "$w iteration 1: [0-9]* reliable writes in mode cache-nofua, which must issue none: the running kernel does not do what the mode requires; samples discarded" "$T/err" ||
		fail "no clear cause for b5 $w in cache-nofua"
	grep -q "$w iteration 1: no reliable write in mode fua although $w issues FUA writes" "$T/err" ||
		fail "no clear cause for bsprd $w in fua"
done
[ "$(q "select count(*) from sample s join iteration i on i.id = s.iteration_id join job j on j.id = i.job_id where j.status = 'mode-mismatch'")" = 0 ] ||
	fail "samples stored for a refused job"
echo "ok 1 - fua-ignored: sysfs agrees with the knob, the counters do not: refused in androbench and fscopy, both directions"

# 2. a board type that cannot trace: stored and marked sysfs-only
lab "" "    trace: false
    trace_reason: \"vendor kernel built without CONFIG_TRACING\""
run 0
[ "$(q "select group_concat(distinct j.verified_by) from job j join board b on b.id = j.board_id where b.name = 'bsprd'")" = sysfs-only ] ||
	fail "bsprd jobs not stored as sysfs-only"
[ "$(q "select group_concat(distinct j.verified_by) from job j join board b on b.id = j.board_id where b.name = 'b5'")" = tracepoints ] ||
	fail "b5 jobs not stored as tracepoints"
for fmt in text markdown html json csv; do
	"$EMMCLAB" report --db "$T/lab.db" --format $fmt -o "$T/r.$fmt"
	grep -q "SYSFS-ONLY" "$T/r.$fmt" || fail "report --format $fmt does not mark the sysfs-only figures"
done
"$EMMCLAB" report --db "$T/lab.db" --format csv --filter board=b5 -o "$T/b5.csv"
! grep -q "SYSFS-ONLY" "$T/b5.csv" || fail "tracepoint-proved figures marked sysfs-only"
"$EMMCLAB" compare --db "$T/lab.db" --filter board=bsprd >"$T/cmp" || true
grep -q "SYSFS-ONLY" "$T/cmp" || fail "compare does not note the sysfs-only figures"
echo "ok 2 - trace: false: samples stored as sysfs-only, marked in text, markdown, html, json, csv and compare"

# 3. trace: false needs its reason
lab "" "    trace: false"
set +e
"$EMMCLAB" check "$T/lab.yaml" >"$T/out" 2>"$T/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "check exited $rc, expected 2"
grep -q "lab.yaml:[0-9]*:[0-9]*: .*trace: false. needs trace_reason" "$T/err" || { cat "$T/err" >&2; fail "no positioned error"; }
echo "ok 3 - trace: false without trace_reason is refused at its line"
