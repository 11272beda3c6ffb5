#!/bin/bash
# upload_squad.sh - uploads through the outbox against the SQUAD contract
# receiver (plus its webhook and PUT endpoints): server down, a wrong token,
# 500, connection closed, reset mid-body, a hang past the timeout, a kill -9
# of the sender mid-request.  Nothing is lost, nothing is stored twice, and
# the token never shows up in the store or the output.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"

tmp=$(mktemp -d /tmp/emmclab-upload-squad-XXXXXX)
srv_pid=
cleanup() {
	local rc=$?
	if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null || true; fi
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/log.jsonl" ] && tail -5 "$tmp/log.jsonl" >&2; exit 1; }
cd "$tmp"
db="$tmp/lab.db"
recv="$EMMCLAB_SRC/harness/tests/servers/squad_receiver.py"

start_server() { # script...
	[ -n "$srv_pid" ] && { kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; }
	rm -f port
	python3 "$recv" --port-file port --log log.jsonl --store store.jsonl --put-dir put \
		--token-file server.tok --group lab --project emmc --port "$port" --script "${1:-}" &
	srv_pid=$!
	for _ in $(seq 100); do [ -s port ] && return 0; sleep 0.05; done
	fail "receiver did not start"
}
rows() { sqlite3 "$db" "SELECT count(*) FROM upload WHERE $1"; }

"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
umask 077
echo "tok-$RANDOM-$RANDOM-correct" > server.tok
echo "tok-wrong-$RANDOM" > client.tok
cat > lab.yaml <<EOF
uploads:
  - name: squad
    kind: squad
    url: http://127.0.0.1:$port/
    token_file: client.tok
    group: lab
    project: emmc
    build: nightly-{date}
    environment: "{part}"
    timeout: 1s
    connect_timeout: 1s
    retry_backoff: 100ms
    retry_max_backoff: 400ms
  - name: hook
    kind: webhook
    url: http://127.0.0.1:$port/hook
    token_env: HOOK_TOKEN
    timeout: 1s
    retry_backoff: 100ms
    retry_max_backoff: 400ms
  - name: store
    kind: http-put
    url: http://127.0.0.1:$port/put/
    files: [html, json, csv, sqlite]
    timeout: 2s
    retry_backoff: 100ms
    retry_max_backoff: 400ms
EOF
export HOOK_TOKEN
HOOK_TOKEN=$(cat server.tok)

# 1. Server down: queued, attempted, nothing lost.
set +e
"$EMMCLAB" upload --db "$db" --run 1 --config lab.yaml > out1.txt 2>&1; rc=$?
set -e
[ $rc = 3 ] || fail "server down: exit $rc, want 3"
[ "$(rows "1")" = 10 ] || fail "5 squad + 1 hook + 4 files queued, got $(rows 1)"
[ "$(rows "state = 'pending' AND attempts = 1 AND last_error LIKE 'connect failed%'")" = 10 ] ||
	fail "every row charged one attempt with the connect error"
"$EMMCLAB" upload --db "$db" --pending | grep -q "last error: connect failed" || fail "--pending shows the error"
"$EMMCLAB" status --db "$db" | grep -q "squad" || fail "status lists waiting uploads"

# 2. Wrong token: 401 is permanent (state failed), the token is never echoed.
start_server ""
sleep 0.5
"$EMMCLAB" upload --db "$db" --retry --now > out2.txt 2>&1 || true
[ "$(rows "target = 'squad' AND state = 'failed' AND last_error LIKE 'HTTP 401%'")" = 5 ] ||
	fail "squad rows failed with 401: $(sqlite3 "$db" 'SELECT state, last_error FROM upload')"
[ "$(rows "target <> 'squad' AND state = 'sent'")" = 5 ] || fail "hook and files sent"
grep -q "$(cat client.tok)" out1.txt out2.txt && fail "client token in the output"
sqlite3 "$db" .dump | grep -q "$(cat client.tok)" && fail "client token in the store"
sqlite3 "$db" .dump | grep -q "$(cat server.tok)" && fail "server token in the store"

# 3. Fixed token; faults in a known order (one request at a time):
#    500, connection closed, reset mid-body, a hang past the 1 s timeout.
cp server.tok client.tok
start_server "500,close,reset,hang:2.5"
"$EMMCLAB" upload --db "$db" --retry --failed --now --parallel 1 --max-time 30s > out3.txt 2>&1 ||
	{ cat out3.txt; fail "retry loop did not deliver everything"; }
[ "$(rows "state <> 'sent'")" = 0 ] || fail "rows left: $(sqlite3 "$db" "SELECT target, state, last_error FROM upload WHERE state <> 'sent'")"
grep -q '"action": "reset"' log.jsonl || fail "no reset happened"
grep -q '"action": "hang:2.5"' log.jsonl || fail "no hang happened"
grep -q 'There is already a test run with job_id' log.jsonl || fail "the hung submission was not re-sent"
grep -q "no answer within 1000 ms" out3.txt || fail "timeout not reported: $(cat out3.txt)"

# The webhook's counts are the run's (store_run_counts).
counts=$(sqlite3 "$db" "SELECT (SELECT count(*) FROM job WHERE run_id = 1 AND status = 'ok'),
	(SELECT count(*) FROM job WHERE run_id = 1 AND status = 'infra'),
	(SELECT count(*) FROM sample sm JOIN iteration i ON i.id = sm.iteration_id
	 JOIN job j ON j.id = i.job_id WHERE j.run_id = 1),
	(SELECT count(*) FROM event WHERE run_id = 1 AND kind <> 'info')")
python3 - store.jsonl "$(cat server.tok)" "$counts" <<'PY' || fail "receiver contents"
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1])]
want = [int(v) for v in sys.argv[3].split("|")]
squad = [r for r in recs if r["kind"] == "squad"]
ids = collections.Counter(r["job_id"] for r in squad)
assert len(ids) == 5 and set(ids.values()) == {1}, "each of 5 test runs exactly once: %r" % ids
for r in squad:
    assert r["build"].startswith("nightly-20") and r["environment"].startswith("DUT"), r["build"]
    assert r["metadata"]["job_id"] == r["job_id"]
    assert "report.html" in r["attachments"], r["attachments"]
    assert r["tests"] and all(v in ("pass", "fail", "skip") for v in r["tests"].values())
    for k, m in r["metrics"].items():
        assert k.startswith("fscopy/") and m["unit"] == "s" and len(m["value"]) == 5, (k, m)
hooks = [r for r in recs if r["kind"] == "hook"]
assert len({h["key"] for h in hooks}) == 1 and hooks[0]["doc"]["jobs"]["total"] == 12, hooks
doc = hooks[0]["doc"]
got = [doc["jobs"]["ok"], doc["jobs"]["infra"], doc["samples"], doc["infra_events"]]
assert got == want and doc["samples"] > 0, (got, want)
puts = {r["path"] for r in recs if r["kind"] == "put"}
assert len(puts) == 4 and all(p.count("/") == 2 for p in puts), puts
PY
# The bundle arrived byte for byte as rendered in the spool.
uuid=$(sqlite3 "$db" "SELECT uuid FROM run WHERE id = 1")
for f in report.html report.json report.csv results.db; do
	cmp -s "put/"*"/$uuid/$f" "$tmp/uploads/$uuid/$f" || fail "$f differs from the spool copy"
done
[ "$(sqlite3 "put/"*"/$uuid/results.db" 'SELECT count(*) FROM sample')" = 60 ] || fail "snapshot content"
"$EMMCLAB" upload --db "$db" --pending | grep -q "no uploads waiting" || fail "--pending after delivery"

# 4. Re-send the whole run from the stored configuration: idempotent.
n_before=$(grep -c '"kind": "squad"' store.jsonl)
# A transient failure of one request (seen rarely under heavy parallel load:
# "Received HTTP/0.9" from the test receiver on a reused connection) stays in
# the outbox like any other; the retry pass that follows must finish the job,
# and nothing may arrive twice either way.
if ! "$EMMCLAB" upload --db "$db" --run 1 > out4.txt 2>&1; then
	grep -q "retry later" out4.txt || { cat out4.txt; fail "re-send"; }
	"$EMMCLAB" upload --db "$db" --retry --now --max-time 20s >> out4.txt 2>&1 ||
		{ cat out4.txt; fail "re-send (after a retry pass)"; }
fi
[ "$(grep -c '"kind": "squad"' store.jsonl)" = "$n_before" ] || fail "re-send duplicated a SQUAD test run"
grep -q '"replaced": true' store.jsonl || fail "PUT re-send did not replace by path"

# 5. kill -9 the sender while the server holds a request: the row stays
#    pending with the attempt charged, and the next retry completes it once.
"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/androbench-sdhci-sprd.csv" >/dev/null
# One job of that run failed to boot: its transcript goes along, its test fails.
printf 'U-Boot 2023.01\nmmc0: timeout\nresetting ...\n' > boot-1.log
sqlite3 "$db" "UPDATE job SET status = 'infra' WHERE id = (SELECT min(id) FROM job WHERE run_id = 2);
	INSERT INTO transcript (run_id, job_id, board_id, path, sha256, bytes, boot_n)
	SELECT 2, min(id), board_id, '$tmp/boot-1.log', 'x', 40, 1 FROM job WHERE run_id = 2;"
"$EMMCLAB" upload --db "$db" --run 2 --config lab.yaml --no-send >/dev/null
start_server "hang:4"
"$EMMCLAB" upload --db "$db" --retry --parallel 1 > out5.txt 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q hang log.jsonl 2>/dev/null && [ "$(grep -c '"action": "hang:4"' log.jsonl)" = 1 ] && break; sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null || true
[ "$(rows "run_id = 2 AND state = 'pending' AND attempts = 1")" -ge 1 ] || fail "killed attempt not charged"
"$EMMCLAB" upload --db "$db" --retry --now --max-time 20s > out6.txt 2>&1 || { cat out6.txt; fail "after kill"; }
[ "$(rows "state <> 'sent'")" = 0 ] || fail "rows left after the kill"
python3 - store.jsonl <<'PY' || fail "duplicates after kill -9, or the failed boot not attached"
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1])]
c = collections.Counter(r["job_id"] for r in recs if r["kind"] == "squad")
assert len(c) == 6 and set(c.values()) == {1}, c
r2 = [r for r in recs if r["kind"] == "squad" and r["metadata"]["emmclab_run_id"] == "2"][0]
import hashlib; assert r2["attachments"].get("boot-1.log", {}).get("sha256") == hashlib.sha256(open("boot-1.log", "rb").read()).hexdigest(), r2["attachments"]
assert "fail" in r2["tests"].values() and "pass" in r2["tests"].values(), r2["tests"]
PY
echo "upload_squad: ok"
