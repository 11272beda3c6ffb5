#!/usr/bin/env python3
"""Fake HTTP power devices and faults for emmclab's HTTP/power tests.

Listens on 127.0.0.1 (port 0 = any free port) and prints "PORT <n>" on stdout
once listening.  Speaks, under any path prefix:
  Tasmota   GET  <p>/cm?cmnd=Power[N][ On|Off|Toggle]   -> {"POWER[N]":"ON"}
  Shelly 1  GET  <p>/relay/<ch>[?turn=on|off]            -> {"ison":true,...}
  Shelly 2  GET  <p>/rpc/Switch.Set?id=<ch>&on=true|false -> {"was_on":false}
            GET  <p>/rpc/Switch.GetStatus?id=<ch>         -> {"id":0,"output":true,...}
  ESPHome   POST <p>/switch/<id>/turn_on|turn_off         -> 200, empty
            GET  <p>/switch/<id>                         -> {"id":"switch-<id>","state":"ON",...}
State is kept per prefix+relay.  Every state change is appended to the
action log (GET /log returns it, one "<prefix> <relay> on|off" per line).
Faults, as the first path segments: /f/500/..., /f/hang/..., /f/close/...,
/f/badjson/..., /f/wrongstate/..., /f/flaky<N>/... (first N requests answer
503), /f/slow<ms>/...  Also: /echo (method, headers, body back as text),
/big?n=<bytes>, /sleep?ms=<ms>, /redirect?to=<url>, /auth (basic auth
user:pw required, else 401).
"""
import base64
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

lock = threading.Lock()
state = {}
log = []
flaky = {}


def set_state(key, on):
    with lock:
        state[key] = on
        log.append("%s %s" % (key, "on" if on else "off"))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        n = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(n) if n else b""
        segs = [s for s in u.path.split("/") if s]
        fault = None
        if len(segs) >= 2 and segs[0] == "f":
            fault = segs[1]
            if fault.startswith("flaky"):
                key = "/".join(segs[:2])
                with lock:
                    flaky[key] = flaky.get(key, 0) + 1
                    count = flaky[key]
                if count <= int(fault[5:] or "1"):
                    return self.send(503, "busy, try later\n", "text/plain")
                fault = None
            elif fault.startswith("slow"):
                time.sleep(int(fault[4:]) / 1000.0)
                fault = None
            segs = segs[2:]
        if fault == "500":
            return self.send(500, "Internal error: relay driver crashed\n", "text/plain")
        if fault == "hang":
            time.sleep(30)
            return
        if fault == "close":
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        if segs[:1] == ["log"]:
            with lock:
                return self.send(200, "".join(line + "\n" for line in log), "text/plain")
        if segs[:1] == ["echo"]:
            hdrs = "".join("%s: %s\n" % (k, v) for k, v in self.headers.items())
            return self.send(200, ("%s %s\n%s\n" % (method, self.path, hdrs)).encode() + body,
                             "text/plain")
        if segs[:1] == ["big"]:
            return self.send(200, b"x" * int(q.get("n", "100000")), "text/plain")
        if segs[:1] == ["sleep"]:
            time.sleep(int(q.get("ms", "100")) / 1000.0)
            return self.send(200, "slept %s\n" % q.get("ms", "100"), "text/plain")
        if segs[:1] == ["redirect"]:
            self.send_response(int(q.get("code", "302")))
            self.send_header("Location", q["to"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if segs[:1] == ["auth"]:
            want = "Basic " + base64.b64encode(b"user:pw").decode()
            if self.headers.get("Authorization") != want:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="fake"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self.send(200, "authorised\n", "text/plain")
        return self.device(method, u.path, segs, q, fault)

    def answer(self, obj, fault):
        if fault == "badjson":
            return self.send(200, '{"POWER": "ON", "ison": tru')
        return self.send(200, json.dumps(obj))

    def device(self, method, path, segs, q, fault):
        wrong = fault == "wrongstate"
        # Tasmota
        if segs and segs[-1] == "cm":
            prefix = "/".join(segs[:-1])
            cmnd = q.get("cmnd", "")
            parts = cmnd.split(" ", 1)
            word = parts[0]
            if not word.lower().startswith("power"):
                return self.answer({"Command": "Unknown"}, fault)
            relay = word[5:]
            key = prefix + " " + (relay or "0")
            if len(parts) == 2:
                arg = parts[1].strip().lower()
                cur = state.get(key, False)
                on = {"on": True, "1": True, "off": False, "0": False, "toggle": not cur}.get(arg)
                if on is None:
                    return self.answer({"Command": "Error"}, fault)
                set_state(key, on)
            on = state.get(key, False)
            if wrong:
                on = not on
            return self.answer({"POWER" + relay: "ON" if on else "OFF"}, fault)
        # Shelly Gen1
        if "relay" in segs and segs.index("relay") == len(segs) - 2:
            i = segs.index("relay")
            key = "/".join(segs[:i]) + " " + segs[i + 1]
            if "turn" in q:
                set_state(key, q["turn"] == "on")
            on = state.get(key, False) != wrong
            return self.answer({"ison": on, "has_timer": False, "timer_duration": 0,
                                "overpower": False, "source": "http"}, fault)
        # Shelly Gen2
        if "rpc" in segs:
            i = segs.index("rpc")
            key = "/".join(segs[:i]) + " " + q.get("id", "0")
            if segs[i + 1] == "Switch.Set":
                was = state.get(key, False)
                set_state(key, q.get("on") == "true")
                return self.answer({"was_on": was}, fault)
            if segs[i + 1] == "Switch.GetStatus":
                on = state.get(key, False) != wrong
                return self.answer({"id": int(q.get("id", "0")), "source": "http", "output": on,
                                    "apower": 0.0, "voltage": 230.1,
                                    "temperature": {"tC": 41.2, "tF": 106.2}}, fault)
        # ESPHome
        if "switch" in segs:
            i = segs.index("switch")
            key = "/".join(segs[:i]) + " " + segs[i + 1]
            if method == "POST" and len(segs) == i + 3:
                if segs[i + 2] not in ("turn_on", "turn_off", "toggle"):
                    return self.send(404, "", "text/plain")
                cur = state.get(key, False)
                set_state(key, {"turn_on": True, "turn_off": False}.get(segs[i + 2], not cur))
                return self.send(200, "", "text/plain")
            if method == "GET" and len(segs) == i + 2:
                on = state.get(key, False) != wrong
                return self.answer({"id": "switch-" + segs[i + 1], "value": on,
                                    "state": "ON" if on else "OFF"}, fault)
        return self.send(404, "no such device path: %s\n" % path, "text/plain")


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    http.server.ThreadingHTTPServer.request_queue_size = 128
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.handle_error = lambda request, address: None  # clients hang up on purpose in tests
    srv.daemon_threads = True
    print("PORT %d" % srv.server_address[1], flush=True)
    parent = os.getppid()

    def orphan_watch():
        # A crashed test must not leave the server behind.
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=orphan_watch, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
