# simlib.sh - shared set-up for the simulator scenario tests
# (harness/tests/scenario/sim_*.sh).  Source it after `set -euo pipefail`.
#
# sim_setup [SIM_EXTRA_B5] [SIM_EXTRA_SPRD] [SIM_EXTRA_NOAGENT]
#   writes $T/lab.yaml (three boards on a free port, consoles under $T) and
#   starts the simulator with `emmclab sim start`; the trap stops it and
#   removes $T.  Extra arguments are appended inside each board's sim: {...}.
# con BOARD STEP...   drive BOARD's console with simcon.py
# api PATH            curl the simulator (GET), print the body
: "${EMMCLAB:?EMMCLAB (the emmclab binary) must be set}"
: "${EMMCLAB_SRC:?EMMCLAB_SRC must be set}"
SIMCON="$EMMCLAB_SRC/harness/tests/helpers/simcon.py"
T=$(mktemp -d /tmp/emmclab-simtest.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

sim_cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap sim_cleanup EXIT

sim_setup() {
	local x5="${1:-}" xs="${2:-}" xn="${3:-}"
	cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: simtest
  sim: {time_scale: 1000, seed: 5, autoboot_floor: 250ms}
boards:
  - name: b5
    type: sim-board
    part: {label: "DUT5", model: industrial-8g}
    console: {driver: pty, path: $T/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true $x5}
  - name: bsprd
    type: sim-board
    part: {label: "sprd", model: sprd-32g}
    console: {driver: pty, path: $T/bsprd.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/bsprd", relay: 0}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true $xs}
  - name: bnoagent
    type: sim-board
    part: {label: "DUT1", model: foresee-32g}
    console: {driver: pty, path: $T/bnoagent.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", alias: noagent-plug}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false, agent_installed: false, tftp_files: [Image, board.dtb], prompt: "U-Boot> " $xn}
YAML
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T" >"$T/start.out"
}

con() {
	local b=$1
	shift
	python3 "$SIMCON" --tty "$T/$b.tty" --timeout 10 "$@"
}

api() {
	curl -sS --max-time 5 "http://127.0.0.1:$PORT$1"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
