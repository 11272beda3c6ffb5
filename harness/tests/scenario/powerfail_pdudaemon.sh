#!/usr/bin/env bash
# The power-fail suite with the power cut through Debian's real pdudaemon.
# The controller's lab points the board's power at a real pdudaemon, whose
# localcmdline PDU runs curl against the simulator's power API: the cut goes
# controller -> pdudaemon (HTTP, its request queue, a shell command per
# action) -> the simulated board.  pdudaemon runs the action before it
# answers, so while the controller waits for it the DUT goes on writing and
# acknowledging records; those acknowledgements must still count
# (board_power_cut), or a part that loses acknowledged writes looks clean.
# Checked: the cache-nofua part that loses its last 8 acknowledged writes is
# caught in every iteration, FUA loses nothing, every cut went through
# pdudaemon's log, and the run exits 1 (data loss).
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-pf-pdud.XXXXXX)
PDU_PID=""
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	[ -n "$PDU_PID" ] && kill "$PDU_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$T/lab.db" "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
command -v /usr/sbin/pdudaemon >/dev/null || fail "pdudaemon not installed (Debian package pdudaemon)"
command -v curl >/dev/null || fail "curl not installed"

SIMPORT=$(free_port)
PP=$(free_port)

# A real pdudaemon: PDU "rack" switches the simulator's outlet "pdu" port N
# (localcmdline formats its command with the port once: `p=%s`).
cat > "$T/pdu.conf" <<EOF
{"daemon": {"hostname": "127.0.0.1", "port": $PP, "logging_level": "INFO", "listener": "http"},
 "pdus": {"rack": {"driver": "localcmdline", "retries": 1,
   "cmd_on": "p=%s; echo on \$p >> $T/pdu.log; curl -sf \"http://127.0.0.1:$SIMPORT/power/control/on?hostname=pdu&port=\$p\" > /dev/null",
   "cmd_off": "p=%s; echo off \$p >> $T/pdu.log; curl -sf \"http://127.0.0.1:$SIMPORT/power/control/off?hostname=pdu&port=\$p\" > /dev/null"}}}
EOF
/usr/sbin/pdudaemon --conf "$T/pdu.conf" --logfile "$T/pdud.log" &
PDU_PID=$!
for _ in $(seq 100); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $PP), 0.2)" 2>/dev/null && break
	sleep 0.1
done

# lab FILE POWER-URL HOSTNAME: the same board, its power at URL/HOSTNAME
lab() {
	cat > "$1" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: pfpdud
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 5, autoboot_floor: 1s}
types:
  - name: nocqe
    host: sim
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 10s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    quarantine_after: 2
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: bsprd
    type: nocqe
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/bsprd.tty}
    power: {driver: pdudaemon, url: "$2", hostname: $3, port: 7, off_time: 1s}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, faults: [lose-writes=8]}
YAML
}
# the simulator serves the outlet; the controller switches it through pdudaemon
lab "$T/sim-lab.yaml" "http://127.0.0.1:$SIMPORT" pdu
lab "$T/lab.yaml" "http://127.0.0.1:$PP" rack
cat > "$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 3
    order: interleave
    workloads: [{name: powerfail, args: {records: 1000000, record_size: 4096, cut_min: 200ms, cut_max: 600ms}}]
plan:
  name: pfpdud
  lab: lab.yaml
  suites: [s]
  budget: 10m
YAML

"$EMMCLAB" sim start "$T/sim-lab.yaml" --state-dir "$T/sim" >/dev/null
set +e
"$EMMCLAB" run --db "$T/lab.db" --no-report --no-upload "$T/plan.yaml" >"$T/out" 2>"$T/err"
rc=$?
set -e
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
[ "$rc" = 1 ] || { cat "$T/err" >&2; fail "run exited $rc, expected 1 (data loss)"; }
grep -q "DATA LOSS" "$T/err" || fail "data loss not reported"

# every job ran and stored its iterations
[ "$(q "select count(*) from job where status='ok'")" = 2 ] || { cat "$T/err" >&2; fail "jobs not ok"; }
per_iter() { # MODE METRIC -> one value per iteration, space-separated
	q "select group_concat(cast(s.value as int), ' ') from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where s.metric='$2' and j.mode='$1' and i.warmup=0 order by i.n"
}
lost_nofua=$(per_iter cache-nofua lost_records)
lost_fua=$(per_iter fua lost_records)
acked=$(per_iter cache-nofua acked_records)
[ "$(wc -w <<< "$lost_nofua")" = 3 ] || fail "cache-nofua: $(wc -w <<< "$lost_nofua") iterations stored, expected 3"
for n in $lost_nofua; do
	[ "$n" -gt 0 ] || fail "a cache-nofua iteration lost nothing (lost per iteration: $lost_nofua; acked: $acked)"
done
for n in $lost_fua; do
	[ "$n" = 0 ] || fail "loss recorded with FUA ($lost_fua)"
done
for n in $acked; do
	[ "$n" -gt 0 ] || fail "no acknowledged records ($acked)"
done

# the cuts really went through pdudaemon: one off per power-fail iteration at
# least (and the power cycles of the boots)
offs=$(grep -c '^off 7$' "$T/pdu.log" || true)
[ "$offs" -ge 6 ] || fail "pdudaemon switched port 7 off $offs times, expected >= 6"
grep -q "power cut" "$T/transcripts"/bsprd-* || fail "no power cut in the transcripts"
echo "ok 1 - power cut through Debian's pdudaemon: cache-nofua lost records in every iteration ($lost_nofua; acked $acked), fua none, $offs offs through pdudaemon"
