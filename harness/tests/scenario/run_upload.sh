#!/usr/bin/env bash
# A nightly on the simulated lab uploads to all three targets (SQUAD, WebDAV
# PUT, webhook).  The server is down during the run: the run still completes
# (exit 0) with its uploads queued in the outbox; once the server is up,
# `emmclab upload --retry` delivers everything exactly once, and a second
# retry sends nothing more.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-runupload.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && { kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null || true; }
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SIMPORT=$(free_port)
UPPORT=$(free_port)
cd "$T"
umask 077
echo "tok-$RANDOM$RANDOM" > squad.tok
HOOK_TOKEN=$(cat squad.tok)
export HOOK_TOKEN   # the test receiver checks every token against server.tok

cat > lab.yaml <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: uplab
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 9, autoboot_floor: 1s}
boards:
  - name: b5
    type: sim-board
    part: {label: "DUT5 industrial", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$SIMPORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
YAML
cat > plan.yaml <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 2
    workloads: [{name: androbench}, {name: fscopy}]
plan:
  name: nightly-up
  lab: lab.yaml
  suites: [s]
  uploads:
    - name: squad
      kind: squad
      url: http://127.0.0.1:$UPPORT/
      token_file: $T/squad.tok
      group: lab
      project: emmc
      build: nightly-{date}
      environment: "{part}"
      timeout: 2s
      connect_timeout: 1s
      retry_backoff: 100ms
    - name: dav
      kind: http-put
      url: http://127.0.0.1:$UPPORT/put/
      files: [html, json, csv]
      timeout: 2s
      connect_timeout: 1s
      retry_backoff: 100ms
    - name: hook
      kind: webhook
      url: http://127.0.0.1:$UPPORT/hook
      token_env: HOOK_TOKEN
      timeout: 2s
      connect_timeout: 1s
      retry_backoff: 100ms
YAML
"$EMMCLAB" check -q plan.yaml || fail "plan does not check"
"$EMMCLAB" sim start lab.yaml --state-dir "$T/sim" >/dev/null
set +e
"$EMMCLAB" run --db lab.db --report report.html plan.yaml >out 2>err
rc=$?
set -e
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
[ $rc = 0 ] || { cat err >&2; fail "run exited $rc with the upload server down"; }
grep -q "left in the outbox" err || fail "no outbox note: $(tail -3 err)"
pending=$(sqlite3 lab.db "select count(*) from upload where state='pending'")
[ "$pending" -ge 3 ] || fail "uploads not queued ($pending)"
[ "$(sqlite3 lab.db "select count(distinct target) from upload")" = 3 ] || fail "not all three targets queued"

# the server comes back
echo "$(cat squad.tok)" > server.tok
python3 "$EMMCLAB_SRC/harness/tests/servers/squad_receiver.py" --port-file port --log log.jsonl \
	--store store.jsonl --put-dir put --token-file server.tok --group lab --project emmc \
	--port "$UPPORT" --script "" &
srv_pid=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
[ -s port ] || fail "receiver did not start"
"$EMMCLAB" upload --db lab.db --retry --now --max-time 30s >up.out 2>&1 || { cat up.out; fail "retry failed"; }
[ "$(sqlite3 lab.db "select count(*) from upload where state != 'sent'")" = 0 ] || fail "rows left unsent"
"$EMMCLAB" upload --db lab.db --retry --now >up2.out 2>&1 || true
python3 - store.jsonl <<'PY' || fail "receiver contents"
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1])]
squad = [r for r in recs if r["kind"] == "squad"]
ids = collections.Counter(r["job_id"] for r in squad)
assert squad and set(ids.values()) == {1}, "every SQUAD test run exactly once: %r" % ids
assert all(r["environment"].startswith("DUT5") for r in squad), [r["environment"] for r in squad]
assert any("androbench." in k for r in squad for k in r["metrics"]), "no androbench metrics"
assert any("fscopy.wall_time" in k for r in squad for k in r["metrics"]), "no fscopy metrics"
hooks = [r for r in recs if r["kind"] == "hook"]
assert len(hooks) == 1, "one webhook: %d" % len(hooks)
puts = [r for r in recs if r["kind"] == "put"]
assert len({p["path"] for p in puts}) == 3 and len(puts) == 3, [p["path"] for p in puts]
PY
echo "ok 1 - nightly with the server down: run ok, 3 targets queued; retry delivers each once"
echo "1 passed, 0 failed"
