#!/usr/bin/env bash
# console_rfc2217.sh - `emmclab board NAME console` over a real ser2net in
# telnet(rfc2217) mode, publishing a pty held by a small Python "board":
#  - what is typed reaches the board byte for byte, 0xff included (IAC doubled on
#    the wire, undoubled by ser2net);
#  - the board's output (0xff, CR LF) arrives once and undoubled;
#  - the serial settings of the console block (baud, stop bits) were applied by
#    ser2net to the device through RFC 2217 (read back with tcgetattr by the board);
#  - the transcript of the session is written with timestamped lines.
set -euo pipefail
: "${EMMCLAB:?}"
command -v ser2net >/dev/null || { echo "FAIL: ser2net not installed (Debian package ser2net)"; exit 1; }
T=$(mktemp -d /tmp/emmclab-console-rfc-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in out err board.log; do [ -f "$T/$f" ] && { echo "--- $f"; tail -20 "$T/$f"; }; done
	exit 1
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The board: holds the pty master, answers every input line with what it got (hex)
# and the line settings of the device as ser2net left them.
cat > "$T/board.py" <<'PY'
import os, pty, sys, termios, select, time, tty
m, s = pty.openpty()
tty.setraw(s)  # no echo of our own output back to us before ser2net configures the line
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(os.ttyname(s))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
speeds = {getattr(termios, n): n[1:] for n in dir(termios) if n.startswith("B") and n[1:].isdigit()}
buf = b""
end = time.time() + 50
while time.time() < end:
    r, _, _ = select.select([m], [], [], 0.2)
    if not r:
        continue
    buf += os.read(m, 4096)
    while b"\r" in buf:
        line, buf = buf.split(b"\r", 1)
        a = termios.tcgetattr(s)
        stop2 = "2" if a[2] & termios.CSTOPB else "1"
        msg = "got=%s speed=%s stop=%s\r\n" % (line.hex(), speeds.get(a[5], "?"), stop2)
        sys.stderr.write(msg)
        os.write(m, msg.encode() + b"\xff\xfe\r\n")
PY
python3 "$T/board.py" "$T/tty" 2> "$T/board.log" &
PIDS+=($!)
for i in $(seq 50); do [ -f "$T/tty" ] && break; sleep 0.1; done
[ -f "$T/tty" ] || fail "board did not publish its pty"
TTY=$(cat "$T/tty")

P=$(port)
ser2net -n -u -P "$T/ser2net.pid" -Y "connection: &b1" \
	-Y "  accepter: telnet(rfc2217),tcp,127.0.0.1,$P" \
	-Y "  connector: serialdev,$TTY,115200n81,local" > "$T/ser2net.log" 2>&1 &
PIDS+=($!)
for i in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1',$P),timeout=1)" 2>/dev/null && break
	sleep 0.1
done
sleep 0.2

cat > "$T/lab.yaml" <<YAML
type:
  name: rfc-board
  uboot: {char_delay: 1ms, chunk: 4}
  timeouts: {power: 5s, first_output: 2s, bootloader: 5s, boot: 4s, login: 4s, command: 5s}
  modes:
    fua: {cmdline: "mmc_block.fua=on"}
lab:
  name: rfc
  transcripts: $T/transcripts
kernels:
  - name: k1
    cmdline: "quiet"
boards:
  - name: r1
    type: rfc-board
    console: {driver: tcp, host: 127.0.0.1, port: $P, protocol: rfc2217, baud: 57600, stop_bits: 2}
    power: {driver: manual}
YAML
"$EMMCLAB" check "$T/lab.yaml" > "$T/out" 2> "$T/err" || fail "lab does not check: $(cat "$T/err")"

# Type two lines (the second with a 0xff byte), keep stdin open while the board
# answers.  Paced by events, not by the clock (a loaded machine starts the binary
# late): the console is open (then 0.5 s for the RFC 2217 settings), the board got
# the first line, the second answer is in the output (EOF ends the console).
waitfor() { # file pattern: wait up to 20 s
	for _ in $(seq 200); do grep -aq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
{ waitfor "$T/err" "console open"; sleep 0.5; printf 'hello\r'
  waitfor "$T/board.log" "got=68656c6c6f "; printf 'x\xffy\r'
  waitfor "$T/out" "got=78ff79 " || true; sleep 0.2; } |
	timeout 60 "$EMMCLAB" board r1 console --lab "$T/lab.yaml" > "$T/out" 2> "$T/err" ||
	fail "board console exited with $?"

grep -q "got=68656c6c6f speed=57600 stop=2" "$T/board.log" ||
	fail "first line or RFC 2217 settings did not reach the device"
grep -q "got=78ff79 " "$T/board.log" || fail "0xff typed on the console did not arrive once"
python3 - "$T/out" <<'PY' || fail "console output wrong"
import sys
d = open(sys.argv[1], "rb").read()
assert d.count(b"\xff\xfe\r\n") == 2, d
assert b"\xff\xff" not in d, "IAC doubled in the output"
assert b"got=68656c6c6f speed=57600 stop=2" in d, d
PY
tr=$(ls "$T"/transcripts/*.log 2>/dev/null | head -1)
[ -n "$tr" ] || fail "no transcript written"
grep -aqE '^\[ *[0-9]+\.[0-9]{6}\] got=78ff79 ' "$tr" || fail "transcript lacks timestamped board output"
grep -aqE '^\[ *[0-9]+\.[0-9]{6}\] == interactive console ==' "$tr" || fail "transcript lacks the mark"
echo "console_rfc2217: all passed"
