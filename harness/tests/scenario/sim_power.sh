#!/usr/bin/env bash
# Simulated power over both HTTP APIs (pdudaemon and Tasmota), the control API,
# garbage requests, and the power faults (pdu-500, pdu-timeout, no-power-off).
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"
sim_setup

state() { # board key
	api /sim/state | python3 -c "import json,sys; d=json.load(sys.stdin); print([b for b in d['boards'] if b['name']=='$1'][0]['$2'])"
}

# pdudaemon: hostname+port, and alias
[ "$(api '/power/control/on?hostname=pdu&port=5')" = "OK - accepted request" ] || fail "pdudaemon on"
[ "$(state b5 power)" = on ] || fail "b5 not on"
[ "$(state b5 running)" = True ] || fail "b5 not running"
api '/power/control/off?hostname=pdu&port=5' >/dev/null
[ "$(state b5 power)" = off ] || fail "b5 not off"
[ "$(state b5 stage)" = off ] || fail "b5 stage after off"
api '/power/control/reboot?hostname=pdu&port=5' >/dev/null
# reboot is off, a short pause, on: wait for the event (a fixed sleep was a bet on the load)
for _ in $(seq 100); do [ "$(state b5 power)" = on ] && break; sleep 0.1; done
[ "$(state b5 power)" = on ] || fail "reboot did not end on"
[ "$(state b5 boots)" = 2 ] || fail "reboot: boots $(state b5 boots)"
api '/power/control/on?alias=noagent-plug' | grep -q "OK" || fail "alias"
[ "$(state bnoagent power)" = on ] || fail "alias did not switch bnoagent"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/power/control/on?hostname=pdu&port=9")
[ "$code" = 404 ] || fail "unknown port answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/power/control/explode?hostname=pdu&port=5")
[ "$code" = 400 ] || fail "unknown action answered $code"

# Tasmota: Power On / Off / Toggle / query, JSON answers
[ "$(api '/plug/bsprd/cm?cmnd=Power%20On')" = '{"POWER":"ON"}' ] || fail "tasmota on"
[ "$(state bsprd power)" = on ] || fail "bsprd not on"
[ "$(api '/plug/bsprd/cm?cmnd=Power')" = '{"POWER":"ON"}' ] || fail "tasmota query"
[ "$(api '/plug/bsprd/cm?cmnd=Power%20Toggle')" = '{"POWER":"OFF"}' ] || fail "tasmota toggle"
[ "$(api '/plug/bsprd/cm?cmnd=Power1%20on')" = '{"POWER1":"ON"}' ] || fail "tasmota Power1"
[ "$(api '/plug/bsprd/cm?cmnd=Power%20Off')" = '{"POWER":"OFF"}' ] || fail "tasmota off"
[ "$(api '/plug/bsprd/cm?cmnd=Status')" = '{"Command":"Unknown"}' ] || fail "tasmota unknown command"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/plug/nosuch/cm?cmnd=Power%20On")
[ "$code" = 404 ] || fail "unknown plug answered $code"

# garbage gets 400, oversize gets 413, the server survives both
resp=$(printf 'HELLO\r\n\r\n' | timeout 5 python3 -c '
import socket,sys; s=socket.create_connection(("127.0.0.1",'$PORT')); s.sendall(sys.stdin.buffer.read()); print(s.recv(100).decode().split("\r\n")[0])')
[ "$resp" = "HTTP/1.1 400 Bad Request" ] || fail "garbage answered '$resp'"
resp=$(timeout 5 python3 -c '
import socket; s=socket.create_connection(("127.0.0.1",'$PORT')); s.sendall(b"GET /"+b"a"*20000+b" HTTP/1.1\r\n\r\n"); print(s.recv(100).decode().split("\r\n")[0])')
[ "$resp" = "HTTP/1.1 413 Payload Too Large" ] || fail "oversize answered '$resp'"
# a request line split across two sends is answered; a garbage line at once
resp=$(timeout 5 python3 -c '
import socket,time; s=socket.create_connection(("127.0.0.1",'$PORT'))
s.sendall(b"GET /sim/state HTTP/1.1\r\nHost: x\r\n"); time.sleep(0.2); s.sendall(b"\r\n")
print(s.recv(100).decode().split("\r\n")[0])')
[ "$resp" = "HTTP/1.1 200 OK" ] || fail "split request answered '$resp'"
resp=$(timeout 2 python3 -c '
import socket; s=socket.create_connection(("127.0.0.1",'$PORT')); s.sendall(b"HELLO\n"); print(s.recv(100).decode().split("\r\n")[0])')
[ "$resp" = "HTTP/1.1 400 Bad Request" ] || fail "garbage line answered '$resp'"
api /sim/state >/dev/null || fail "server died"
# persistent connections, as pdudaemon's aiohttp server: HTTP/1.1 keeps the
# connection for the next request (two sent back to back are both answered,
# in order), "Connection: close" and HTTP/1.0 close it after the answer
resp=$(timeout 5 python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", '$PORT'))
left = {}
def rd(s):
    d = left.pop(s, b"")
    while b"\r\n\r\n" not in d:
        d += s.recv(4096)
    h, _, body = d.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n: body += s.recv(4096)
    left[s] = body[n:]
    return h
s.sendall(b"GET /power/control/off?hostname=pdu&port=5 HTTP/1.1\r\nHost: x\r\n\r\n"
          b"GET /power/control/on?hostname=pdu&port=5 HTTP/1.1\r\nHost: x\r\n\r\n")
a = rd(s); b = rd(s)
s.sendall(b"GET /power/control/off?hostname=pdu&port=5 HTTP/1.1\r\nConnection: close\r\n\r\n")
c = rd(s); eof = s.recv(10) == b""
t = socket.create_connection(("127.0.0.1", '$PORT'))
t.sendall(b"GET /power/control/on?hostname=pdu&port=5 HTTP/1.0\r\n\r\n")
d = rd(t); eof10 = t.recv(10) == b""
ka = lambda h: b"connection: keep-alive" in h.lower()
print(a.split(b"\r\n")[0].decode(), ka(a), b.split(b"\r\n")[0].decode(), ka(b), ka(c), eof, ka(d), eof10)
')
[ "$resp" = "HTTP/1.1 200 OK True HTTP/1.1 200 OK True False True False True" ] ||
	fail "keep-alive: '$resp'"
[ "$(state b5 power)" = on ] || fail "keep-alive: the last request not applied"

# pdu-500 (once), then normal
api '/sim/fault?board=b5&fault=pdu-500&count=1' >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/power/control/off?hostname=pdu&port=5")
[ "$code" = 500 ] || fail "pdu-500 answered $code"
[ "$(state b5 power)" = on ] || fail "pdu-500 still switched"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/power/control/off?hostname=pdu&port=5")
[ "$code" = 200 ] || fail "after pdu-500:1 answered $code"

# pdu-timeout: no answer, the client times out; the board is not switched
api '/sim/fault?board=bsprd&fault=pdu-timeout' >/dev/null
set +e
curl -s --max-time 1 "http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On" >/dev/null; rc=$?
set -e
[ $rc = 28 ] || fail "pdu-timeout: curl exit $rc (want 28, timeout)"
[ "$(state bsprd power)" = off ] || fail "pdu-timeout still switched"
api '/sim/clear?board=bsprd' >/dev/null

# A whole lab powering on at once: 400 connections open before any request is
# sent (more than the server's 256 at a time); every request is answered 200,
# none is dropped (the ones over the limit wait in the listen backlog), as the
# real pdudaemon answers them (scenario.power_drivers, the same burst).
resp=$(timeout 30 python3 "$EMMCLAB_SRC/harness/tests/helpers/http_burst.py" "$PORT" 400 \
	'/power/control/on?hostname=pdu&port=5')
[ "$resp" = 400 ] || fail "400 connections at once: $resp answered 200 (want 400)"
api /sim/state >/dev/null || fail "server died after 400 connections"

# no-power-off: the relay reports off but the board keeps running
api '/power/control/on?hostname=pdu&port=5' >/dev/null
api '/sim/fault?board=b5&fault=no-power-off&count=1' >/dev/null
api '/power/control/off?hostname=pdu&port=5' >/dev/null
[ "$(state b5 power)" = off ] || fail "no-power-off: relay"
[ "$(state b5 running)" = True ] || fail "no-power-off: board stopped"
echo ok
