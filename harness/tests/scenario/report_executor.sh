#!/usr/bin/env bash
# Where each figure was measured (docs/lava.md, "What the reports show"): two
# small nights on the simulated lab, then the fua jobs' iterations marked as
# run by LAVA (executor, job_url, worker of schema 8, as the LAVA executor
# stores them; lava_farm.sh does it for real against a LAVA server).  The JSON
# report carries, per group and parallel to its "iterations", each value's
# executor, LAVA job URL and worker (null locally), through both loaders (one
# run: the join; --all: the scan), with the keys before them unchanged; the
# HTML report names the workers.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-executor.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
export EMMCLAB_LOCKS="${EMMCLAB_LOCKS:-$T/locks}" # board locks of this test only (ctest sets one per test)
fail() { echo "FAIL: $*" >&2; exit 1; }
db=$T/lab.db
q() { sqlite3 "$db" "$1"; }

cat >"$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: executor
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
boards:
  - name: farm1
    type: sim-board
    part: {label: "foresee-32g on farm1", model: foresee-32g}
    console: {driver: pty, path: $T/sim/farm1.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
YAML
cat >"$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 2
    order: interleave
    precondition_passes: 0
    workloads: [{name: androbench}]
plan:
  name: nightly-executor
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
for night in 1 2; do
	"$EMMCLAB" run --db "$db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" ||
		{ cat "$T/err" >&2; fail "night $night"; }
done
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
[ "$(q "select count(*) from iteration where executor = 'local'")" = 8 ] ||
	fail "expected 8 local iterations after two nights"
# what the LAVA executor stores (store_journal_origin): the fua jobs ran on worker-a
q "update iteration set executor = 'lava',
	job_url = 'http://lava.example.org/scheduler/job/' || (100 + id), worker = 'worker-a'
	where job_id in (select id from job where mode = 'fua')"
echo "ok 1 - two nights; their fua iterations marked as run by LAVA on worker-a"

"$EMMCLAB" report --db "$db" --format json -o "$T/one.json" >/dev/null
"$EMMCLAB" report --db "$db" --all --format json -o "$T/all.json" >/dev/null
q "select r.id, j.mode, i.workload, i.n, i.executor, coalesce(i.job_url, ''), coalesce(i.worker, '')
	from iteration i join job j on j.id = i.job_id join run r on r.id = j.run_id" >"$T/where.txt"
python3 - "$T/one.json" "$T/all.json" "$T/where.txt" <<'PY' || fail "json: where each value was measured"
import json, sys
want = {}
for line in open(sys.argv[3]):
    run, mode, wl, n, ex, url, worker = line.rstrip("\n").split("|")
    want[(int(run), mode, wl, int(n))] = (ex, url or None, worker or None)
# the keys of a group as before schema 8's report fields, in their order
old = ["run_id", "part", "part_cid", "board", "kernel", "mode", "suite", "workload", "metric",
       "unit", "source", "provenance", "stats", "values", "iterations", "warmup",
       "warmup_deviation"]
for path, nruns in ((sys.argv[1], 1), (sys.argv[2], 2)):
    d = json.load(open(path))
    groups = d["groups"]
    assert groups and len({g["run_id"] for g in groups}) == nruns, (path, len(groups))
    seen = set()
    for g in groups:
        assert list(g)[:len(old)] == old, list(g)
        assert list(g)[len(old):] == ["executor", "job_url", "worker"], list(g)
        n = len(g["iterations"])
        assert len(g["executor"]) == len(g["job_url"]) == len(g["worker"]) == n == len(g["values"]), g
        for k, it in enumerate(g["iterations"]):
            got = (g["executor"][k], g["job_url"][k], g["worker"][k])
            assert got == want[(g["run_id"], g["mode"], g["workload"], it)], (path, g["mode"], it, got)
            seen.add(got[0])
        if g["mode"] == "fua":
            assert set(g["executor"]) == {"lava"} and set(g["worker"]) == {"worker-a"}, g
            assert all(u.startswith("http://lava.example.org/scheduler/job/") for u in g["job_url"]), g
        else:
            assert set(g["executor"]) == {"local"} and g["job_url"] == g["worker"] == [None] * n, g
    assert seen == {"local", "lava"}, (path, seen)
PY
echo "ok 2 - json: each group's values say executor, LAVA job URL and worker (one run and --all)"

"$EMMCLAB" report --db "$db" --all --format html -o "$T/all.html" >/dev/null
grep -q "worker-a" "$T/all.html" || fail "html: the LAVA worker is not named"
grep -qF "http://lava.example.org/scheduler/job/" "$T/all.html" || fail "html: no LAVA job link"
echo "ok 3 - html: the LAVA worker and job are named"
echo "report_executor: ok"
