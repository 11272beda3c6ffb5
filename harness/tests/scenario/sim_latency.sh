#!/usr/bin/env bash
# sim_latency.sh - request latency on the simulated lab (docs/simulator.md):
# the default nightly stores per-iteration write and flush percentiles and
# histograms for androbench, `compare` compares rq_write_lat_p99_us between
# modes like any metric (lower is better), the HTML report draws one CDF chart
# per part with a curve per mode and operation, marked simulated and assumed,
# and the text, markdown and JSON reports carry the percentiles.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-simlat.XXXXXX)
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$T/labs" "$T/plans"
sed -e "s|/tmp/emmclab-sim|$T/sim|g" -e "s|16421|$PORT|g" \
	-e "s|\.\./types/|$EMMCLAB_SRC/boards/types/|" "$EMMCLAB_SRC/boards/labs/sim-lab.yaml" >"$T/labs/sim-lab.yaml"
sed -e "s|\.\./\.\./boards/labs/sim-lab.yaml|$T/labs/sim-lab.yaml|" -e "s|\.\./fua-vs-cache.yaml|$EMMCLAB_SRC/suites/fua-vs-cache.yaml|" \
	"$EMMCLAB_SRC/suites/plans/nightly-sim.yaml" >"$T/plans/nightly-sim.yaml"
export EMMCLAB_SIM_DIR="$T/sim"
db=$T/lab.db
"$EMMCLAB" run --with-sim --db "$db" --report "$T/report.html" --transcripts "$T/tr" \
	"$T/plans/nightly-sim.yaml" >"$T/run.out" 2>"$T/run.err" || { cat "$T/run.err" >&2; fail "nightly failed"; }
q() { sqlite3 "$db" "$1"; }

# 1. every androbench iteration of a verified job has 4 ordered percentiles per
# operation, and its histogram holds as many requests as the line said
bad=$(q "select count(*) from iteration i join job j on j.id=i.job_id where i.workload='androbench'
	 and j.status='ok' and (select count(*) from sample s where s.iteration_id=i.id
	 and s.metric glob 'rq_write_lat_p*_us') != 4")
[ "$bad" = 0 ] || fail "$bad androbench iterations without 4 write percentiles"
nit=$(q "select count(*) from iteration i join job j on j.id=i.job_id where i.workload='androbench' and j.status='ok'")
[ "$nit" -gt 0 ] || fail "no androbench iteration"
unordered=$(q "select count(*) from iteration i where
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p50_us') >
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p90_us') or
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p90_us') >
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p99_us') or
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p99_us') >
	(select value from sample where iteration_id=i.id and metric='rq_write_lat_p999_us')")
[ "$unordered" = 0 ] || fail "$unordered iterations with unordered percentiles"
zero=$(q "select count(*) from sample where metric glob 'rq_*_lat_p*_us' and not value > 0")
[ "$zero" = 0 ] || fail "$zero percentiles not > 0"
# rand_ios of the nightly's androbench: each random write is one request
ios=$(q "select sum(value) from counter c join iteration i on i.id=c.iteration_id
	 where c.name glob 'rq_write_lat_b*'")
[ "$ios" -ge $((nit * 100)) ] || fail "histograms hold $ios write requests for $nit iterations"
# the model's split: without FUA the write goes to the cache and is faster than a reliable write
fua=$(q "select avg(s.value) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id
	 join part p on p.id=j.part_id where p.label like 'DUT1%' and j.mode='fua' and s.metric='rq_write_lat_p50_us'")
nofua=$(q "select avg(s.value) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id
	 join part p on p.id=j.part_id where p.label like 'DUT1%' and j.mode='cache-nofua' and s.metric='rq_write_lat_p50_us'")
awk -v a="$fua" -v b="$nofua" 'BEGIN { exit !(a > b && b > 0) }' || fail "DUT1 write p50: fua $fua, cache-nofua $nofua"
echo "ok 1 - percentiles and histograms stored per iteration ($nit iterations, $ios write requests)"

# 2. compare: rq_write_lat_p99_us between modes, lower is better, marked assumed
"$EMMCLAB" compare --db "$db" --format json > "$T/cmp.json" || fail "compare"
python3 - "$T/cmp.json" <<'PY' || fail "compare p99"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["comparisons"] if isinstance(d, dict) else d
p99 = [r for r in rows if r.get("metric") == "rq_write_lat_p99_us"]
assert p99, "no rq_write_lat_p99_us comparison"
assert all(r.get("direction") in (-1, "lower is better", "lower") for r in p99), p99[0].get("direction")
print("compare: %d rq_write_lat_p99_us comparisons" % len(p99))
PY
echo "ok 2 - compare compares the p99 between modes"

# 3. the HTML report: a CDF chart per part, curves per mode and operation, simulated, no script
python3 - "$T/report.html" <<'PY' || fail "HTML CDFs"
import re, sys
h = open(sys.argv[1]).read()
assert "<script" not in h.lower()
sec = h[h.index("<h2>Request latency</h2>"):h.index("<h2>Trends over nights</h2>")]
charts = re.findall(r"<svg class='plot cdf' data-part='([^']*)' data-workload='([^']*)' data-source='([^']*)'(.*?)</svg>", sec, re.S)
assert len(charts) >= 3, len(charts)
assert all(w == "androbench" and s == "simulated" for _, w, s, _ in charts)
assert sec.count("assumed (no published data)") == len(charts)
for part, _, _, body in charts:
    modes = set(re.findall(r"data-mode='([^']*)' data-op='write'", body))
    assert len(modes) >= 2, (part, modes)
    for n, p50, p99 in re.findall(r"data-n='(\d+)' data-p50-us='([^']*)' data-p99-us='([^']*)'", body):
        assert int(n) > 0 and 0 < float(p50) <= float(p99), (part, n, p50, p99)
print("html: %d CDF charts" % len(charts))
PY
echo "ok 3 - the HTML report draws CDFs per mode, marked simulated"

# 3b. --dut-detail 1: one part's charts, the note counts every part with
# histograms (the model keeps only the drawn part's: report_opts.lat_parts)
"$EMMCLAB" report --db "$db" --format html --dut-detail 1 -o "$T/one.html" >/dev/null || fail "report --dut-detail 1"
python3 - "$T/report.html" "$T/one.html" <<'PY' || fail "HTML --dut-detail 1"
import re, sys
def sec(path):
    h = open(path).read()
    return h[h.index("<h2>Request latency</h2>"):h.index("<h2>Trends over nights</h2>")]
full, one = sec(sys.argv[1]), sec(sys.argv[2])
parts = sorted(set(re.findall(r"<svg class='plot cdf' data-part='([^']*)'", full)))
drawn = set(re.findall(r"<svg class='plot cdf' data-part='([^']*)'", one))
assert len(parts) >= 3 and drawn == {parts[0]}, (parts, drawn)
note = "Charts for the first 1 of %d parts" % len(parts)
assert note in one, note
print("html --dut-detail 1: %s of %d parts" % (parts[0], len(parts)))
PY
echo "ok 3b - --dut-detail 1 draws the first part's latency charts and counts them all"

# 4. text, markdown and json reports carry the percentiles
for f in text markdown json; do
	"$EMMCLAB" report --db "$db" --format $f -o "$T/rep.$f" >/dev/null
	# markdown escapes the underscores
	tr -d '\\' < "$T/rep.$f" > "$T/rep.$f.plain"
	grep -q "rq_write_lat_p99_us" "$T/rep.$f.plain" || fail "report $f: no rq_write_lat_p99_us"
	grep -q "rq_flush_lat_p999_us" "$T/rep.$f.plain" || fail "report $f: no rq_flush_lat_p999_us"
done
python3 - "$T/rep.json" <<'PY' || fail "json latency_histograms"
import json, sys
d = json.load(open(sys.argv[1]))
h = d["latency_histograms"]
assert h and all(x["source"] == "simulated" and x["unit"] == "us" for x in h)
for x in h:
    assert x["n"] == sum(b["count"] for b in x["buckets"]) > 0
    assert all(0 < b["lo"] < b["hi"] for b in x["buckets"])
assert {x["op"] for x in h} == {"write", "flush"}
PY
echo "ok 4 - text, markdown and json reports carry the percentiles, json the histograms"
# 5. --filter narrows the histograms like the samples: one board's, one kernel's
"$EMMCLAB" report --db "$db" --format json --filter board=dut1 -o "$T/dut1.json" >/dev/null ||
	fail "report --filter board=dut1"
want=$(q "select sum(c.value) from counter c join iteration i on i.id=c.iteration_id
	 join job j on j.id=i.job_id join board b on b.id=j.board_id
	 where b.name='dut1' and j.status='ok' and c.name glob 'rq_write_lat_b[0-9]*'")
python3 - "$T/dut1.json" "$want" <<'PY' || fail "json latency_histograms under --filter board=dut1"
import json, sys
d = json.load(open(sys.argv[1]))
h = d["latency_histograms"]
parts = {x["part"] for x in h}
assert len(parts) == 1 and next(iter(parts)).startswith("DUT1"), parts
n = sum(x["n"] for x in h if x["op"] == "write")
assert n == int(sys.argv[2]) > 0, (n, sys.argv[2])
PY
"$EMMCLAB" report --db "$db" --format json --filter kernel=0.0-none -o "$T/nok.json" >/dev/null ||
	fail "report --filter kernel=0.0-none"
python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["latency_histograms"]; assert h == [], len(h)' \
	"$T/nok.json" || fail "histograms of a kernel that ran nothing"
echo "ok 5 - --filter board= and kernel= narrow the latency histograms"
echo "PASS: sim latency"
