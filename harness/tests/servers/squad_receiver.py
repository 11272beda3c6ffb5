#!/usr/bin/env python3
"""A test receiver for emmclab uploads that checks the contracts strictly.

SQUAD:    POST /api/submit/<group>/<project>/<build>/<environment>
          multipart/form-data: tests, metrics, metadata (JSON), attachment files;
          "Authorization: Token <tok>"; identifiers [A-Za-z0-9][A-Za-z0-9_.-]*;
          a known job_id in the same build is refused with SQUAD's 400 text.
Webhook:  POST /hook  JSON object with schema emmclab-webhook/1, Idempotency-Key.
PUT:      PUT /put/<path>  stored under --put-dir only once the whole body arrived
          (like an object store); a repeated PUT replaces the file.

Faults come from --script, one action per request in arrival order (then ok):
  ok | 500 | 401 | 400 | 503 | close (no answer) | reset (RST half-way through
  the body) | hang:SECS (accept and store, then answer SECS later)
Every request is logged as one JSON line to --log; every accepted submission to
--store.  Binds 127.0.0.1 on a free port written to --port-file.
"""
import argparse
import email.parser
import email.policy
import hashlib
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IDENT = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
LOCK = threading.Lock()
STATE = {"n": 0, "jobs": {}}  # (group, project, build) -> set of job_ids


def next_action(args):
    with LOCK:
        i = STATE["n"]
        STATE["n"] += 1
    return args.script[i] if i < len(args.script) else "ok"


def log(args, rec):
    with LOCK:
        with open(args.log, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")


def store(args, rec):
    with LOCK:
        with open(args.store, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")


class Bad(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status
        self.msg = msg


def check_tests(tests):
    if not isinstance(tests, dict):
        raise Bad(400, "tests is not a JSON object")
    for k, v in tests.items():
        if isinstance(v, dict):
            v = v.get("result")
        if not isinstance(v, str) or v.lower() not in ("pass", "fail", "skip", "xfail"):
            raise Bad(400, "test %r: result %r is not pass/fail/skip" % (k, v))
        if "/" in k.split("[")[0].rsplit("/", 1)[-1]:
            raise Bad(400, "test name %r" % k)


def check_metrics(metrics):
    if not isinstance(metrics, dict):
        raise Bad(400, "metrics is not a JSON object")
    for k, v in metrics.items():
        unit = None
        if isinstance(v, dict):
            unit = v.get("unit")
            if set(v) - {"value", "unit"}:
                raise Bad(400, "metric %r: unknown keys %r" % (k, sorted(set(v) - {"value", "unit"})))
            v = v.get("value")
            if unit is not None and not isinstance(unit, str):
                raise Bad(400, "metric %r: unit is not a string" % k)
        vals = v if isinstance(v, list) else [v]
        if not vals:
            raise Bad(400, "metric %r: empty list" % k)
        for x in vals:
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise Bad(400, "metric value %r is not valid. only numbers or lists of numbers are accepted" % x)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet
        pass

    def answer(self, status, body=b""):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self, action):
        n = int(self.headers.get("Content-Length", "0"))
        if action == "reset":
            self.rfile.read(max(1, n // 2))
            # SO_LINGER 0: close with RST, as a crashing proxy or a flaky link would.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return None
        return self.rfile.read(n)

    def handle_one(self, method):
        args = self.server.args
        action = next_action(args)
        rec = {"method": method, "path": self.path, "action": action,
               "auth": self.headers.get("Authorization", ""), "t": time.time()}
        body = self.read_body(action)
        if body is None:
            log(args, rec)
            return
        rec["bytes"] = len(body)
        if action == "close":
            log(args, rec)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if action in ("500", "503", "401", "400"):
            rec["status"] = int(action)
            log(args, rec)
            self.answer(int(action), "scripted %s\n" % action)
            return
        try:
            status, msg = self.process(method, body, rec)
        except Bad as b:
            status, msg = b.status, b.msg
        rec["status"] = status
        rec["msg"] = msg
        log(args, rec)
        if action.startswith("hang:"):
            time.sleep(float(action.split(":", 1)[1]))
        try:
            self.answer(status, msg + "\n")
        except OSError:
            pass

    def process(self, method, body, rec):
        args = self.server.args
        if method == "PUT":
            if not self.path.startswith("/put/"):
                raise Bad(404, "not found")
            rel = self.path[len("/put/"):]
            if ".." in rel.split("/"):
                raise Bad(400, "bad path")
            dst = os.path.join(args.put_dir, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            existed = os.path.exists(dst)
            with open(dst + ".part", "wb") as f:
                f.write(body)
            os.replace(dst + ".part", dst)
            store(args, {"kind": "put", "path": rel, "sha256": hashlib.sha256(body).hexdigest(),
                         "bytes": len(body), "replaced": existed})
            return (204 if existed else 201), ""
        if self.path == "/hook":
            if args.token and self.headers.get("Authorization") != "Bearer " + args.token:
                raise Bad(401, "bad token")
            key = self.headers.get("Idempotency-Key")
            if not key:
                raise Bad(400, "no Idempotency-Key")
            if self.headers.get_content_type() != "application/json":
                raise Bad(415, "not JSON")
            doc = json.loads(body)
            if doc.get("schema") != "emmclab-webhook/1" or doc.get("run", {}).get("uuid") != key:
                raise Bad(400, "bad summary")
            store(args, {"kind": "hook", "key": key, "doc": doc})
            return 200, "ok"
        m = re.match(r"^/api/submit/([^/]+)/([^/]+)/([^/]+)/([^/]+)$", self.path)
        if not m:
            raise Bad(404, "not found")
        group, project, build, env = m.groups()
        for what, v in (("group", group), ("project", project), ("build", build), ("environment", env)):
            if not IDENT.match(v):
                raise Bad(400, "%s %r does not match [a-zA-Z0-9][a-zA-Z0-9_.-]*" % (what, v))
        if group != args.group or project != args.project:
            raise Bad(404, "no such group/project")
        parts = self.headers.get("Authorization", "").split(" ", 1)
        if not args.token or len(parts) != 2 or parts[0].lower() != "token" or parts[1] != args.token:
            raise Bad(401, "Authentication needed")
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("multipart/form-data"):
            raise Bad(400, "not multipart/form-data")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
        fields, attachments = {}, {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            data = part.get_payload(decode=True) or b""
            if name == "attachment":
                fn = part.get_filename()
                if not fn:
                    raise Bad(400, "attachment without a file name")
                attachments[fn] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            elif name in ("tests", "metrics", "metadata", "log"):
                fields[name] = data.decode("utf-8")
            else:
                raise Bad(400, "unexpected field %r" % name)
        try:
            tests = json.loads(fields.get("tests", "{}"))
            metrics = json.loads(fields.get("metrics", "{}"))
            metadata = json.loads(fields.get("metadata", "{}"))
        except ValueError as ex:
            raise Bad(400, "invalid JSON: %s" % ex)
        check_tests(tests)
        check_metrics(metrics)
        if not isinstance(metadata, dict) or not isinstance(metadata.get("job_id"), str):
            raise Bad(400, "metadata has no job_id")
        job_id = metadata["job_id"]
        with LOCK:
            seen = STATE["jobs"].setdefault((group, project, build), set())
            if job_id in seen:
                raise Bad(400, "There is already a test run with job_id %s" % job_id)
            seen.add(job_id)
        store(args, {"kind": "squad", "group": group, "project": project, "build": build,
                     "environment": env, "job_id": job_id, "tests": tests, "metrics": metrics,
                     "metadata": metadata, "attachments": attachments})
        return 201, ""

    def do_POST(self):
        self.handle_one("POST")

    def do_PUT(self):
        self.handle_one("PUT")


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients that reset or time out are part of the tests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--put-dir", default=".")
    ap.add_argument("--group", default="lab")
    ap.add_argument("--project", default="emmc")
    ap.add_argument("--token", default="")
    ap.add_argument("--token-file", default="")
    ap.add_argument("--script", default="")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    if args.token_file:
        args.token = open(args.token_file).read().strip()
    args.script = [a for a in args.script.split(",") if a]
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.args = args
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
