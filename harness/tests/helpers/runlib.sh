# runlib.sh - shared set-up of the run_* scenarios of unattended nightlies
# (run_resume, run_two_controllers, run_db_locked, run_hard_stop).  Source
# it after `set -euo pipefail`.
#
# rl_lab NBOARDS [LABNAME] [FILE]  a lab of NBOARDS simulated boards b1..bN on $PORT
# rl_plan ITERATIONS [FILE] [LAB]  a plan: modes fua + cache-nofua, androbench + fscopy
# rl_sim_start / rl_sim_stop       the simulator of $T/lab.yaml (state in $T/sim)
# rl_tuples DB RUN                 the run's samples normalised: one line per
#                                  (board, mode, workload, iteration, metric) with its count
# rl_power BOARD                   the simulator's power state of BOARD (on/off)
: "${EMMCLAB:?EMMCLAB (the emmclab binary) must be set}"
: "${EMMCLAB_SRC:?EMMCLAB_SRC must be set}"
T=$(mktemp -d /tmp/emmclab-run.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export EMMCLAB_LOCKS="$T/locks"
rl_cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null || true; done
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap rl_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$1" "$2"; }

rl_lab() {
	local n=$1 name=${2:-nightly} f=${3:-$T/lab.yaml} i
	{
		cat <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: $name
  transcripts: $T/transcripts
  # a countdown second is >= 1 s real: the controller interrupts at once, and
  # a loaded test host that stalls it must not let U-Boot boot by itself
  sim: {time_scale: 1000, seed: 7, autoboot_floor: 1s}
types:
  - name: t
    host: sim
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 2ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    retries: 1
    quarantine_after: 3
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
YAML
		for i in $(seq 1 "$n"); do
			cat <<YAML
  - name: b$i
    type: t
    part: {label: "DUT$i", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b$i.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: $i, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false${RL_SIM_EXTRA:+, $RL_SIM_EXTRA}}
YAML
		done
	} > "$f"
}

rl_plan() {
	local iters=$1 f=${2:-$T/plan.yaml} lab=${3:-lab.yaml}
	cat > "$f" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: $iters
    order: interleave
    workloads: [{name: androbench}, {name: fscopy}]
plan:
  name: nightly
  lab: $lab
  suites: [s]
YAML
}

rl_sim_start() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
}

rl_sim_stop() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
}

rl_tuples() {
	q "$1" "select b.name, j.mode, i.workload, i.n, s.metric, count(*) from sample s
		join iteration i on i.id = s.iteration_id join job j on j.id = i.job_id
		join board b on b.id = j.board_id where j.run_id = $2
		group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5"
}

rl_power() {
	curl -sS --max-time 5 "http://127.0.0.1:$PORT/sim/state" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); b=[x for x in d["boards"] if x["name"]==sys.argv[1]][0]; print("on" if b.get("power") in (True,"on",1) else "off")' "$1"
}
