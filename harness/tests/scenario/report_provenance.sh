#!/usr/bin/env bash
# Provenance (docs/reports.md): the default nightly on the simulated lab is
# marked simulated in the end-of-run table and in every output (compare,
# status, text, markdown, html, json, csv, junit), with fitted and assumed
# figures told apart; a simulated and an imported group of the same part are
# not pooled by `compare` unless --pool-sources.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-prov.XXXXXX)
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The default nightly and lab, moved to this test's own state dir and power port.
mkdir -p "$T/labs" "$T/plans"
sed -e "s|/tmp/emmclab-sim|$T/sim|g" -e "s|16421|$PORT|g" \
	-e "s|\.\./types/|$EMMCLAB_SRC/boards/types/|" "$EMMCLAB_SRC/boards/labs/sim-lab.yaml" >"$T/labs/sim-lab.yaml"
sed -e "s|\.\./\.\./boards/labs/sim-lab.yaml|$T/labs/sim-lab.yaml|" -e "s|\.\./fua-vs-cache.yaml|$EMMCLAB_SRC/suites/fua-vs-cache.yaml|" \
	"$EMMCLAB_SRC/suites/plans/nightly-sim.yaml" >"$T/plans/nightly-sim.yaml"
export EMMCLAB_SIM_DIR="$T/sim"
db=$T/lab.db
"$EMMCLAB" run --with-sim --db "$db" --report "$T/report.html" --transcripts "$T/tr" \
	"$T/plans/nightly-sim.yaml" >"$T/run.out" 2>"$T/run.err" || { cat "$T/run.err" >&2; fail "nightly failed"; }
[ "$(sqlite3 "$db" 'SELECT source FROM run')" = simulated ] || fail "run.source is not simulated"
banner="source: simulated - figures from the simulator's model, not measurements"

# The end-of-run table: the banner, every part marked, assumed cells starred.
grep -qF "$banner" "$T/run.out" || fail "end-of-run table: no banner"
grep -qF 'DUT1 Foresee 32GB module (Pine64, blue PCB) [simulated]' "$T/run.out" || fail "table: part not marked"
# DUT1's AndroBench is assumed, its ext4 copy without CQE fitted, with CQE assumed.
grep -A14 '^DUT1' "$T/run.out" | grep -E '^  androbench/seq_write .* \*$' >/dev/null || fail "table: DUT1 androbench not assumed"
[ "$(grep -A14 '^DUT1' "$T/run.out" | grep -c '^  fscopy/wall_time .* \*$')" = 1 ] ||
	fail "table: DUT1 fscopy wall_time: want the CQE row assumed and the other fitted"
grep -qF '* assumed (no published data)' "$T/run.out" || fail "table: no footnote"
echo "ok 1 - the end-of-run table names the source and marks assumed figures"

for f in text markdown html json csv junit; do
	"$EMMCLAB" report --db "$db" --format $f -o "$T/rep.$f" >/dev/null
	grep -qF "simulated" "$T/rep.$f" || fail "report $f: not marked simulated"
	grep -qF "assumed (no published data)" "$T/rep.$f" || fail "report $f: no assumed marker"
	grep -qF "fitted to published data" "$T/rep.$f" || fail "report $f: no fitted marker"
done
for f in text markdown; do
	grep -qF "$banner" "$T/rep.$f" || fail "report $f: no banner"
done
for f in html junit; do
	grep -qF "source: simulated - figures from the simulator&#39;s model" "$T/rep.$f" || fail "$f: no banner"
done
grep -qF "source: simulated - figures from the simulator&#39;s model" "$T/report.html" || fail "run's html: no banner"
python3 - "$T/rep.json" <<'PY' || fail "json provenance"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["provenance"].startswith("source: simulated"), d["provenance"]
assert all(r["source_kind"] == "simulated" for r in d["runs"])
assert all(g["source"] == "simulated" for g in d["groups"])
# the controller drove every simulated board itself: every value local (docs/lava.md)
assert all(g["executor"] == ["local"] * len(g["iterations"]) and
           g["job_url"] == g["worker"] == [None] * len(g["iterations"]) for g in d["groups"])
cmp = d["comparisons"]
assert all(c["source"] == "simulated" and c["provenance"] for c in cmp)
def prov(part, wl, metric, a, b):
    for c in cmp:
        if c["part"].startswith(part) and c["workload"] == wl and c["metric"] == metric \
           and c["a"]["label"] == a and c["b"]["label"] == b:
            return c["provenance"]
    raise SystemExit("no row %s %s %s %s vs %s" % (part, wl, metric, b, a))
assert prov("DUT1", "fscopy", "wall_time", "fua", "cache-nofua") == "fitted to published data"
assert prov("DUT1", "fscopy", "wall_time", "fua-cqe", "cache-nofua-cqe") == "assumed (no published data)"
assert prov("DUT1", "androbench", "seq_write", "fua", "cache-nofua") == "assumed (no published data)"
assert prov("DUT5", "fscopy", "wall_time", "fua-cqe", "cache-nofua-cqe") == "fitted to published data"
assert prov("Unisoc", "androbench", "rand_write", "fua", "cache-nofua") == "fitted to published data"
assert prov("Unisoc", "androbench", "write_lat_p99", "fua", "cache-nofua") == "assumed (no published data)"
PY
head -1 "$T/rep.csv" | grep -q ',source,provenance' || fail "csv: no source columns"
"$EMMCLAB" status --db "$db" >"$T/status" 2>&1
grep -qE '^ +1 .* simulated / nightly-sim ' "$T/status" || fail "status: run not simulated"
grep -qF "simulated: figures from the simulator's model" "$T/status" || fail "status: no note"
"$EMMCLAB" compare --db "$db" >"$T/cmp" 2>&1
grep -qF "$banner" "$T/cmp" || fail "compare: no banner"
grep -qF '[simulated]' "$T/cmp" || fail "compare: groups not marked"
grep -qF '{fitted to published data}' "$T/cmp" && grep -qF '{assumed (no published data)}' "$T/cmp" ||
	fail "compare: no fitted/assumed markers"
echo "ok 2 - every output format names the source; fitted and assumed figures are told apart"

# The published data of the same parts, imported: DUT1 against DUT5 by part.
"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv" >/dev/null
by_part=(--by part --a "DUT1 Foresee 32GB module (Pine64, blue PCB)" --b "DUT5 Industrial eMMC (CQE-capable host)"
	--filter metric=wall_time --filter mode=fua --format json)
"$EMMCLAB" compare --db "$db" "${by_part[@]}" >"$T/sep.json"
"$EMMCLAB" compare --db "$db" "${by_part[@]}" --pool-sources >"$T/pool.json"
python3 - "$T/sep.json" "$T/pool.json" <<'PY' || fail "pooling"
import json, sys
sep = json.load(open(sys.argv[1]))
pool = json.load(open(sys.argv[2]))
assert sep["pool_sources"] is False and pool["pool_sources"] is True
rows = sep["comparisons"]
assert sorted(r["source"] for r in rows) == ["imported", "simulated"], [r["source"] for r in rows]
assert all(r["a"]["stats"]["n"] == 5 and r["b"]["stats"]["n"] == 5 for r in rows), [(r["a"]["stats"]["n"], r["b"]["stats"]["n"]) for r in rows]
(p,) = pool["comparisons"]
assert p["source"] == "pooled" and p["a"]["stats"]["n"] == 10 and p["b"]["stats"]["n"] == 10, p
PY
"$EMMCLAB" compare --db "$db" "${by_part[@]:0:8}" >"$T/sep.txt"
grep -qF 'grouped by source: sources are not pooled (--pool-sources pools them)' "$T/sep.txt" ||
	fail "compare does not say it groups by source"
grep -qF '== [imported]' "$T/sep.txt" && grep -qF '== [simulated]' "$T/sep.txt" || fail "compare text: groups"
echo "ok 3 - a simulated and an imported group of one part are pooled only with --pool-sources"
