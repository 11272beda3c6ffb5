#!/usr/bin/env bash
# A simulated console published by a real ser2net (raw TCP on 127.0.0.1), as
# shared rack consoles are: boot output arrives over TCP, typing reaches U-Boot.
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"
command -v ser2net >/dev/null || { echo "ser2net not installed (Debian package ser2net)" >&2; exit 1; }
P2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sim_setup "" ", ser2net_port: $P2"
grep -q "tcp,127.0.0.1,$P2" "$T/ser2net.yaml" || fail "ser2net config: $(cat "$T/ser2net.yaml")"
# ser2net needs a moment to listen
for i in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1',$P2),timeout=1)" 2>/dev/null && break
	sleep 0.1
done
s2n=$(pgrep -f "ser2net -n -d -u -c $T/ser2net.yaml" || true)
[ -n "$s2n" ] || fail "ser2net not running"
python3 "$SIMCON" --tcp "127.0.0.1:$P2" --timeout 10 \
	"run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On' >/dev/null" \
	'expect:U-Boot SPL' 'expect:MMC:   sdio@201a0000' 'expect:autoboot' 'send: ' 'expect:=> $' \
	'slow:mmc info\r' 'expect:Name: BJTD4R' 'expect:=> $' >/dev/null
"$EMMCLAB" sim stop --state-dir "$T" >/dev/null
for i in $(seq 30); do kill -0 $s2n 2>/dev/null || break; sleep 0.1; done
kill -0 $s2n 2>/dev/null && fail "ser2net left running after sim stop"

# Without ser2net installed (the quick start does not install it) the same lab
# still starts: the simulator says the TCP console is not published, the pty
# console works, and nothing listens on the port.
mkdir "$T/nobin"
PATH="$T/nobin" "$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T" >"$T/start2.out" ||
	fail "sim start without ser2net: $(cat "$T/start2.out" "$T/sim.log")"
grep -q "ser2net (Debian package ser2net) is not installed: the 1 console with sim.ser2net_port is not published" \
	"$T/sim.log" || fail "no ser2net warning: $(cat "$T/sim.log")"
python3 -c "import socket; socket.create_connection(('127.0.0.1',$P2),timeout=1)" 2>/dev/null &&
	fail "port $P2 listens without ser2net"
con bsprd "run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On' >/dev/null" \
	'expect:U-Boot SPL' 'expect:autoboot' 'send: ' 'expect:=> $' >/dev/null ||
	fail "pty console without ser2net"
"$EMMCLAB" sim stop --state-dir "$T" >/dev/null
echo ok
