#!/usr/bin/env bash
# Power drivers through the real binary (`emmclab board NAME power ...`) against a real
# pdudaemon (localcmdline PDU), the fake Tasmota/Shelly/ESPHome server, exec commands,
# and faults (HTTP 500, a hanging device, no terminal for manual power).
set -euo pipefail

E=${EMMCLAB:?EMMCLAB must point at the emmclab binary}
SRC=${EMMCLAB_SRC:?}
T=$(mktemp -d /tmp/emmclab-power-scn.XXXXXX)
FAKE_PID=""
PDU_PID=""
cleanup() {
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null || true
	[ -n "$PDU_PID" ] && kill "$PDU_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The fake devices.
python3 "$SRC/harness/tests/helpers/power_fakedev.py" > "$T/fake.out" 2>/dev/null &
FAKE_PID=$!
for _ in $(seq 50); do grep -q PORT "$T/fake.out" 2>/dev/null && break; sleep 0.1; done
FP=$(awk '/PORT/ {print $2}' "$T/fake.out")
[ -n "$FP" ] || fail "fake device server did not start"

# A real pdudaemon.
command -v /usr/sbin/pdudaemon >/dev/null || fail "pdudaemon not installed (Debian package pdudaemon)"
PP=$(free_port)
cat > "$T/pdu.conf" <<EOF
{"daemon": {"hostname": "127.0.0.1", "port": $PP, "logging_level": "INFO", "listener": "http"},
 "pdus": {"rack": {"driver": "localcmdline", "retries": 1,
   "cmd_on": "echo on %s >> $T/pdu.log", "cmd_off": "echo off %s >> $T/pdu.log"}}}
EOF
/usr/sbin/pdudaemon --conf "$T/pdu.conf" --logfile "$T/pdud.log" &
PDU_PID=$!
for _ in $(seq 100); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $PP), 0.2)" 2>/dev/null && break
	sleep 0.1
done

cat > "$T/lab.yaml" <<EOF
include:
  - $SRC/boards/types/sim-board.yaml
lab:
  name: power-scenario
defaults:
  console: {driver: pty, path: $T/unused.tty}
  deploy: {driver: none}
boards:
  - name: pdu4
    type: sim-board
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PP", hostname: rack, port: 4, off_time: 1s}
  - name: plug
    type: sim-board
    power: {driver: tasmota, url: "http://127.0.0.1:$FP/plug/plug", relay: 2, off_time: 200ms}
  - name: shelly1
    type: sim-board
    power: {driver: shelly, url: "http://127.0.0.1:$FP/sh1", gen: 1}
  - name: shelly2
    type: sim-board
    power: {driver: shelly, url: "http://127.0.0.1:$FP/sh2", gen: 2, channel: 1}
  - name: esp
    type: sim-board
    power: {driver: esphome, url: "http://127.0.0.1:$FP/esp", switch: dut_relay}
  - name: ex
    type: sim-board
    power: {driver: exec, off_time: 100ms, on: [sh, -c, 'echo on \$0 >> $T/exec.log', '{board}'],
            off: [sh, -c, 'echo off \$0 >> $T/exec.log', '{board}']}
  - name: broken
    type: sim-board
    power: {driver: tasmota, url: "http://127.0.0.1:$FP/f/500/plug/broken", retries: 1}
  - name: hung
    type: sim-board
    power: {driver: shelly, url: "http://127.0.0.1:$FP/f/hang/sh", timeout: 1s}
  - name: operator
    type: sim-board
    power: {driver: manual}
EOF

pw() { "$E" board "$1" power "$2" --lab "$T/lab.yaml"; }

# Real pdudaemon: on, off, cycle (reboot with delay=1); no state query.
pw pdu4 on >/dev/null || fail "pdudaemon on"
pw pdu4 off >/dev/null || fail "pdudaemon off"
start=$(date +%s%N)
pw pdu4 cycle >/dev/null || fail "pdudaemon cycle"
el=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$el" -ge 900 ] || fail "pdudaemon reboot did not wait off_time ($el ms)"
[ "$(cat "$T/pdu.log")" = "$(printf 'on 4\noff 4\noff 4\non 4')" ] || fail "PDU actions: $(cat "$T/pdu.log")"
if pw pdu4 state >/dev/null 2>&1; then fail "pdudaemon has no state query"; fi
# A whole lab powering on at once, 400 connections opened before any request
# is sent: the real pdudaemon answers every one (the simulator's pdudaemon
# copies this; scenario.sim_power sends it the same burst).
n=$(timeout 60 python3 "$SRC/harness/tests/helpers/http_burst.py" "$PP" 400 \
	'/power/control/on?hostname=rack&port=6')
[ "$n" = 400 ] || fail "pdudaemon answered $n of 400 connections opened at once"

# HTTP plugs: on, state, off, state; cycle on the Tasmota.
for b in plug shelly1 shelly2 esp; do
	pw $b on >/dev/null || fail "$b on"
	out=$(pw $b state) || fail "$b state"
	echo "$out" | grep -qi 'on' || fail "$b state after on: $out"
	pw $b off >/dev/null || fail "$b off"
	out=$(pw $b state) || fail "$b state"
	echo "$out" | grep -qi 'off' || fail "$b state after off: $out"
done
pw plug cycle >/dev/null || fail "tasmota cycle"
log=$(curl -s "http://127.0.0.1:$FP/log")
echo "$log" | grep -q '^plug/plug 2 on$' || fail "tasmota relay 2 not switched: $log"
echo "$log" | grep -q '^sh2 1 off$' || fail "shelly gen2 channel 1 not switched: $log"
echo "$log" | grep -q '^esp dut_relay on$' || fail "esphome not switched: $log"

# exec.
pw ex cycle >/dev/null || fail "exec cycle"
[ "$(cat "$T/exec.log")" = "$(printf 'off ex\non ex')" ] || fail "exec: $(cat "$T/exec.log")"

# Faults: clear messages, exit code 3, no hang.
set +e
msg=$(pw broken on 2>&1); rc=$?
set -e
[ $rc -eq 3 ] || fail "HTTP 500 exit code $rc"
echo "$msg" | grep -q "tasmota power of broken (http://127.0.0.1:$FP/f/500/plug/broken): Power On: HTTP 500" \
	|| fail "HTTP 500 message: $msg"
start=$(date +%s)
set +e
msg=$(pw hung on 2>&1); rc=$?
set -e
[ $rc -eq 3 ] || fail "hang exit code $rc"
[ $(( $(date +%s) - start )) -le 5 ] || fail "hanging device held the command"
echo "$msg" | grep -q "shelly power of hung (http://127.0.0.1:$FP/f/hang/sh).*no answer within" \
	|| fail "hang message: $msg"
set +e
msg=$(setsid -w "$E" board operator power on --lab "$T/lab.yaml" </dev/null 2>&1); rc=$?
set -e
[ $rc -eq 3 ] || fail "manual without a terminal: exit $rc"
echo "$msg" | grep -q "no controlling terminal" || fail "manual message: $msg"

# qemu: the power state outlives the command and is shared by every process
# (qemu.pid with the start time): a by-hand `power on` leaves QEMU running, a
# second process sees it and switches it off; a QEMU that exits by itself
# (a guest power-off) reads as off at once.  A fake QEMU (a script that
# records its arguments and waits) stands in for qemu-system-x86_64.
printf '#!/bin/sh\necho "$@" > "%s/qemu.args"\nexec sleep 60\n' "$T" > "$T/fakeqemu"
printf '#!/bin/sh\nexec sleep 1\n' > "$T/shortqemu"
chmod +x "$T/fakeqemu" "$T/shortqemu"
QP=$(free_port)
cat > "$T/qlab.yaml" <<QLAB
types:
  - name: plainq
boards:
  - name: q1
    type: plainq
    console: {driver: tcp, port: $QP}
    power: {driver: qemu, qemu: $T/fakeqemu, port: $QP, dir: $T/q1, bios: /nonexistent-is-fine-for-a-fake.rom}
  - name: q2
    type: plainq
    console: {driver: tcp, port: $QP}
    power: {driver: qemu, qemu: $T/shortqemu, port: $QP, dir: $T/q2}
QLAB
qp() { "$E" board "$1" power "$2" --lab "$T/qlab.yaml"; }
[ "$(qp q1 state)" = off ] || fail "qemu: state before power-on"
qp q1 on >/dev/null || fail "qemu: power on"
qpid=$(cut -d' ' -f1 "$T/q1/qemu.pid")
kill -0 "$qpid" 2>/dev/null || fail "qemu: QEMU did not outlive 'power on'"
grep -q -- "-bios /nonexistent-is-fine-for-a-fake.rom" "$T/qemu.args" || fail "qemu: -bios not passed: $(cat "$T/qemu.args")"
! grep -q -- "-kernel" "$T/qemu.args" || fail "qemu: a kernel-less board got -kernel"
[ "$(qp q1 state)" = on ] || fail "qemu: another process does not see the board on"
qp q1 on >/dev/null || fail "qemu: power on when on"
[ "$(cut -d' ' -f1 "$T/q1/qemu.pid")" = "$qpid" ] || fail "qemu: power on when on started a second QEMU"
qp q1 off >/dev/null || fail "qemu: power off from another process"
# gone, or a zombie its new parent has not reaped yet (a container's init may never)
st=$(awk '{print $3}' "/proc/$qpid/stat" 2>/dev/null || true)
[ -z "$st" ] || [ "$st" = Z ] || fail "qemu: QEMU still runs after power off (state $st)"
[ "$(qp q1 state)" = off ] || fail "qemu: state after power off"
[ ! -e "$T/q1/qemu.pid" ] || fail "qemu: qemu.pid left behind"
qp q2 on >/dev/null || fail "qemu: short-lived on"
sleep 1.5
[ "$(qp q2 state)" = off ] || fail "qemu: a QEMU that exited by itself reads as on"

echo "power_drivers: all checks passed"
