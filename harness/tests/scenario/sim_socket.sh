#!/usr/bin/env bash
# A simulated board whose console is a Unix stream socket the simulator serves,
# one client at a time (QEMU's -chardev socket,path=,server=on; a console
# server), read by the controller's tcp driver with `path:`.
#  1. typing reaches U-Boot and its output comes back over the socket;
#  2. one client at a time: a second connection hears nothing while the first
#     is connected, and is served once it has gone;
#  3. output while nobody is connected is lost (counted in tx_dropped), not
#     queued for the next client, as on a UART nobody listens to;
#  4. a nightly through the controller on two socket-console boards: every job
#     ok, every iteration whole;
#  5. a stale socket file (simulator killed) is replaced; one another simulator
#     serves, and a path that is not a socket, are refused, naming the path;
#  6. sim stop removes the socket files;
#  7. checks 2 and 3 hold for real QEMU's socket chardev (Debian's U-Boot ROM),
#     whose behaviour the simulator copies.
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	"$EMMCLAB" sim stop --state-dir "$T/sim2" >/dev/null 2>&1 || true
	[ -z "${qpid:-}" ] || kill "$qpid" 2>/dev/null || true
	sim_cleanup
}
trap cleanup EXIT
con() { # BOARD STEP...
	local b=$1
	shift
	python3 "$SIMCON" --unix "$T/con/$b.sock" --timeout 10 "$@"
}
dropped() { # BOARD: the board's tx_dropped counter
	api /sim/state |
		python3 -c "import json,sys; print([b for b in json.load(sys.stdin)['boards'] if b['name']=='$1'][0]['counters']['tx_dropped'])"
}

cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: simsock
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 7, autoboot_floor: 250ms}
boards:
  - name: s1
    type: sim-board
    part: {label: "DUT1 Foresee", model: foresee-32g}
    console: {driver: tcp, path: $T/con/s1.sock}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 1, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
  - name: s2
    type: sim-board
    part: {label: "DUT5 industrial", model: industrial-8g}
    console: {driver: tcp, path: $T/con/s2.sock}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 2, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
YAML
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >"$T/start.out" || fail "sim start: $(cat "$T/start.out")"
for b in s1 s2; do
	[ -S "$T/con/$b.sock" ] || fail "$b: no socket at $T/con/$b.sock"
	[ "$(stat -c %a "$T/con/$b.sock")" = 600 ] || fail "$b: socket mode $(stat -c %a "$T/con/$b.sock"), want 600"
done

# 1. U-Boot over the socket
con s1 "run:curl -sf 'http://127.0.0.1:$PORT/power/control/on?hostname=pdu&port=1'" \
	'expect:U-Boot' 'expect:autoboot' 'send: ' 'expect:=> $' 'slow:mmc info\r' 'expect:Name:' \
	'expect:=> $' >/dev/null || fail "U-Boot over the socket"

# 2. one client at a time: the second hears nothing until the first has gone.
# one_client SOCKET: run against the simulator here and against real QEMU
# (Debian's, serving Debian's U-Boot on -chardev socket,server=on) below.
one_client() {
	python3 - "$1" <<'PY'
import socket, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); s.settimeout(0.1); return s
def read_for(s, sec):
    out, end = b'', time.monotonic() + sec
    while time.monotonic() < end:
        try:
            d = s.recv(4096)
            if not d: break
            out += d
        except socket.timeout:
            pass
    return out
def prompt_within(s, sec):
    # Enter once a second until U-Boot's prompt comes: real U-Boot under
    # QEMU on a loaded machine can still be in its bootcmd (once, in CI's
    # ASan stage, 13.5 s after QEMU started), which reads no key
    got, end = b'', time.monotonic() + sec
    while b'=> ' not in got and time.monotonic() < end:
        s.sendall(b'\r'); got += read_for(s, 1.0)
    return got
a = conn()
b = conn()  # waits in the backlog
got = prompt_within(a, 30)
assert b'=> ' in got, ('first client, no prompt', got)
b.sendall(b'\r')  # not read by the board while a is connected
assert read_for(b, 1.0) == b'', 'second client heard the board while the first was connected'
a.close()
got = read_for(b, 2.0)  # accepted now: its Enter reaches U-Boot
got += prompt_within(b, 30)
assert b'=> ' in got, ('second client not served after the first left', got)
b.close()
PY
}
one_client "$T/con/s1.sock" || fail "one client at a time"

# 3. output with nobody connected is dropped: a power cycle's boot output
d0=$(dropped s1)
curl -sf "http://127.0.0.1:$PORT/power/control/reboot?hostname=pdu&port=1" >/dev/null
sleep 1
d1=$(dropped s1)
[ "$d1" -gt "$d0" ] || fail "tx_dropped did not grow with nobody connected ($d0 -> $d1)"
con s1 'send:\r' 'absent:U-Boot SPL:1' >/dev/null || fail "output from before the connection was kept for the next client"
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null

# 4. a nightly through the controller's tcp driver (path:)
cat > "$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]
    iterations: 2
    order: interleave
    precondition_passes: 1
    workloads: [{name: androbench}, {name: fscopy}]
plan:
  name: simsock
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
set +e
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
rc=$?
set -e
[ $rc = 0 ] || { cat "$T/err" >&2; fail "run exited $rc"; }
q() { sqlite3 "$T/lab.db" "$1"; }
[ "$(q "select count(*) from job where status='ok'")" = 8 ] || fail "jobs ok: $(q "select board_id, mode, status from job")"
[ "$(q "select count(*) from iteration")" = 32 ] || fail "iterations: $(q "select count(*) from iteration")"
half=$(q "select count(*) from (select i.id, i.workload, count(case when s.metric not glob 'rq_*' then 1 end) n from iteration i left join sample s on s.iteration_id=i.id group by i.id) where (workload='androbench' and n!=8) or (workload='fscopy' and n!=7)")
[ "$half" = 0 ] || fail "$half iterations not whole"

# 5. a stale socket file is replaced; a live one and a non-socket are refused
pid=$(cat "$T/sim/sim.pid")
kill -9 "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
[ -S "$T/con/s1.sock" ] || fail "the killed simulator's socket file is gone (nothing left to replace)"
rm -f "$T/sim/sim.pid"
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >"$T/start.out" 2>&1 || fail "restart over stale sockets: $(cat "$T/start.out")"
con s2 "run:curl -sf 'http://127.0.0.1:$PORT/power/control/on?hostname=pdu&port=2'" 'expect:autoboot' 'send: ' \
	'expect:=> $' >/dev/null || fail "console after replacing a stale socket"
sed "s/name: simsock/name: simsock2/; s/$PORT/$((PORT + 1))/" "$T/lab.yaml" > "$T/lab2.yaml"
if "$EMMCLAB" sim start "$T/lab2.yaml" --state-dir "$T/sim2" >"$T/start2.out" 2>&1; then
	fail "a second simulator took over live console sockets"
fi
grep -q "console socket $T/con/s1.sock is served by another process" "$T/start2.out" "$T/sim2/sim.log" 2>/dev/null ||
	fail "second simulator's refusal: $(cat "$T/start2.out" "$T/sim2/sim.log" 2>/dev/null)"
con s2 'send:\r' 'expect:=> $' >/dev/null || fail "the first simulator's console after the refused start"
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null

# 6. sim stop removed the socket files
for b in s1 s2; do [ ! -e "$T/con/$b.sock" ] || fail "$b socket left after sim stop"; done
: > "$T/con/s1.sock"
if "$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >"$T/start3.out" 2>&1; then fail "started over a regular file"; fi
grep -q "console path $T/con/s1.sock exists and is not a socket" "$T/start3.out" "$T/sim/sim.log" 2>/dev/null ||
	fail "refusal of a regular file: $(cat "$T/start3.out" "$T/sim/sim.log" 2>/dev/null)"
[ -f "$T/con/s1.sock" ] && [ ! -S "$T/con/s1.sock" ] || fail "the regular file was touched"

# 7. the behaviour copied, on the real program: QEMU's socket chardev with
# Debian's U-Boot, booted with nobody connected (its bootcmd's output is lost:
# a later client does not get it), then the same one-client check.
ROM=/usr/lib/u-boot/qemu-x86/u-boot.rom
command -v qemu-system-x86_64 >/dev/null && [ -f "$ROM" ] ||
	fail "QEMU or Debian's U-Boot ROM missing (packages qemu-system-x86, u-boot-qemu)"
qemu-system-x86_64 -M pc -m 256 -display none -monitor none -nic none -bios "$ROM" \
	-chardev socket,id=c,path="$T/qemu.sock",server=on,wait=off -serial chardev:c 2>"$T/qemu.err" &
qpid=$!
for _ in $(seq 50); do [ -S "$T/qemu.sock" ] && break; sleep 0.1; done
[ -S "$T/qemu.sock" ] || fail "QEMU did not make its socket: $(cat "$T/qemu.err")"
python3 - "$T/qemu.sock" <<'PY' || fail "QEMU: output from before the connection"
import socket, sys, time
time.sleep(12)  # U-Boot's bootcmd says "starting USB..." within seconds, with nobody connected
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); s.settimeout(0.2)
got, end = b'', time.monotonic() + 1.5
while time.monotonic() < end:
    try: got += s.recv(4096)
    except socket.timeout: pass
s.close()
assert b'starting USB' not in got, ('QEMU kept output for a later client', got)
PY
one_client "$T/qemu.sock" || fail "QEMU: one client at a time (the simulator's check on the real program)"
kill "$qpid"; wait "$qpid" 2>/dev/null || true; qpid=
echo ok
