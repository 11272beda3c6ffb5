#!/usr/bin/env python3
"""http_burst.py PORT N PATH: open N connections to 127.0.0.1:PORT before
sending anything on any of them (a whole lab powering on at once), then send
GET PATH on each and print how many were answered "HTTP/1.x 200"."""
import socket
import sys

port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
req = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode()
for s in socks:
    s.sendall(req)
ok = 0
for s in socks:
    s.settimeout(20)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(200)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    ok += data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.0 200")
    s.close()
print(ok)
