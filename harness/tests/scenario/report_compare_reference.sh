#!/bin/bash
# report_compare_reference.sh - import the published reference CSVs, then
# `emmclab compare` must reproduce the published AndroBench percentages and
# give a verdict per ext4 DUT; every report format renders and parses.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"

tmp=$(mktemp -d /tmp/emmclab-report-ref-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db="$tmp/lab.db"

ref="$EMMCLAB_SRC/results/reference"
"$EMMCLAB" import --db "$db" "$ref/androbench-sdhci-sprd.csv" "$ref/fs-copy-benchmark.csv" >/dev/null

out=$("$EMMCLAB" compare --db "$db")
echo "$out"
grep -q 'androbench/rand_write.*12\.680.*70\.320.*+454\.57%.*better' <<<"$out" || fail "rand_write 12.68 -> 70.32 (+454.6%) not reported"
grep -q 'androbench/seq_write.*149\.48.*200\.51.*+34\.14%.*better' <<<"$out" || fail "seq_write 149.48 -> 200.51 (+34.1%) not reported"
for d in DUT1 DUT2 DUT4; do
	grep -q "^  $d .*cache-nofua vs fua .*no significant difference" <<<"$out" || fail "$d verdict missing"
done
grep -q '^  DUT3 .*significant but below the minimum effect' <<<"$out" || fail "DUT3 verdict missing"
# The full 2x2 on DUT5: FUA effect without and with CQE, CQE effect with and without FUA.
for pair in 'cache-nofua vs fua ' 'cache-nofua-cqe vs fua-cqe' 'fua-cqe vs fua ' 'cache-nofua-cqe vs cache-nofua '; do
	grep -q "^  fscopy/wall_time *$pair" <<<"$(sed -n '/^== DUT5/,/^$/p' <<<"$out")" || fail "DUT5 cell '$pair' missing"
done
grep -q '^  DUT5 .*FUA effect +0.59% without CQE, +0.76% with' <<<"$out" || fail "DUT5 interaction missing"

# An independent computation from the CSV itself (standard library only):
# Welch t-test p-values and percent changes for the four DUT5 cells, and the
# interaction (ratio of the two FUA ratios, delta-method CI, Welch-Satterthwaite
# df), against `compare --format json`.
"$EMMCLAB" compare --db "$db" --filter part="DUT5 Industrial eMMC (CQE-capable host)" --format json >"$tmp/dut5.json"
python3 - "$ref/fs-copy-benchmark.csv" "$tmp/dut5.json" <<'PY'
import csv, json, math, sys

def betacf(a, b, x):
    # Numerical Recipes' continued fraction (modified Lentz)
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-300 else 1e-300
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-300 else 1e-300
        de = d * c
        h *= de
        if abs(de - 1) < 1e-15:
            break
    return h

def ibeta(a, b, x):
    if x <= 0: return 0.0
    if x >= 1: return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1 - math.exp(lbt) * betacf(b, a, 1 - x) / b

def p_two(t, df):  # two-sided p of Student's t
    return ibeta(df / 2, 0.5, df / (df + t * t))

def t_quant(q, df):  # bisection on the CDF
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - p_two(mid, df) / 2 < q: lo = mid
        else: hi = mid
    return (lo + hi) / 2

cells = {}
for row in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#")):
    if row[0] == "DUT5":
        cells.setdefault(row[2], []).append(float(row[4]))
def mv(x):
    m = sum(x) / len(x)
    return m, sum((v - m) ** 2 for v in x) / (len(x) - 1), len(x)
st = {k: mv(v) for k, v in cells.items()}
d = json.load(open(sys.argv[2]))
got = {(c["a"]["label"], c["b"]["label"]): c for c in d["comparisons"]}
pairs = [("fua", "cache-nofua"), ("fua-cqe", "cache-nofua-cqe"), ("fua", "fua-cqe"),
         ("cache-nofua", "cache-nofua-cqe")]
assert set(got) == set(pairs), sorted(got)
for a, b in pairs:
    (ma, va, na), (mb, vb, nb) = st[a], st[b]
    se2 = va / na + vb / nb
    t = (mb - ma) / math.sqrt(se2)
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    p = p_two(t, df)
    ch = 100 * (mb / ma - 1)
    c = got[(a, b)]
    assert abs(100 * c["change"] - ch) < 1e-6, (a, b, c["change"], ch)
    assert abs(c["p_welch"] - p) < 1e-6, (a, b, c["p_welch"], p)
    print(f"{b} vs {a}: {ch:+.4f}% p={p:.6f} (emmclab {100*c['change']:+.4f}% p={c['p_welch']:.6f})")
(x,) = d["interactions"]
f, n, fc, nc = st["fua"], st["cache-nofua"], st["fua-cqe"], st["cache-nofua-cqe"]
lnr = math.log(nc[0] / fc[0]) - math.log(n[0] / f[0])
vs = [s[1] / (s[2] * s[0] ** 2) for s in (f, n, fc, nc)]
v = sum(vs)
df = v * v / sum(vi * vi / (s[2] - 1) for vi, s in zip(vs, (f, n, fc, nc)))
tq = t_quant(0.975, df)
want = {"ratio": math.exp(lnr), "ratio_ci_lo": math.exp(lnr - tq * math.sqrt(v)),
        "ratio_ci_hi": math.exp(lnr + tq * math.sqrt(v)), "df": df,
        "p": p_two(lnr / math.sqrt(v), df), "diff": nc[0] / fc[0] - n[0] / f[0]}
for k, w in want.items():
    assert abs(x[k] - w) < 1e-6, (k, x[k], w)
print("interaction:", {k: round(w, 6) for k, w in want.items()})
PY

# With a 0.5% minimum effect DUT3's 0.73% shorter wall time becomes a finding.
"$EMMCLAB" compare --db "$db" --filter part="DUT3 Hardkernel 8GB module (orange PCB)" --min-effect 0.5 |
	grep -q 'fscopy/wall_time.*better' || fail "DUT3 at 0.5% should be better"
# Filters and errors
n=$("$EMMCLAB" compare --db "$db" --filter metric=rand_write --format json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["schema"]=="emmclab-compare/1"; print(len(d["comparisons"]))')
[ "$n" = 1 ] || fail "metric filter gave $n comparisons"
set +e
"$EMMCLAB" compare --db "$db" --filter metrc=x 2>"$tmp/err"; rc=$?
set -e
[ $rc = 2 ] || fail "bad filter exit $rc"
grep -q "did you mean 'metric'" "$tmp/err" || fail "no suggestion for a bad filter field"
set +e
"$EMMCLAB" compare --db "$db" --by part 2>/dev/null; rc=$?
set -e
[ $rc = 2 ] || fail "--by part without --a/--b exit $rc"
"$EMMCLAB" compare --db "$db" --by part --a "DUT3 Hardkernel 8GB module (orange PCB)" \
	--b "DUT4 Hardkernel 16GB eMMC 5.0 module (orange PCB, white dot)" | grep -q 'worse' ||
	fail "DUT4 vs DUT3 should be worse (slower)"

# Every format.
for fmt in text markdown html json csv junit; do
	"$EMMCLAB" report --db "$db" --all --format "$fmt" -o "$tmp/r.$fmt"
	[ -s "$tmp/r.$fmt" ] || fail "empty $fmt report"
done
awk 'length($0) > 72 { print "long line: " $0; bad=1 } END { exit bad }' "$tmp/r.text" || fail "text report has lines > 72 columns"
python3 - "$tmp" <<'PY'
import csv, json, sys, xml.dom.minidom
t = sys.argv[1]
d = json.load(open(t + "/r.json"))
assert d["schema"] == "emmclab-report/1", d["schema"]
assert d["summary"]["samples"] == 100, d["summary"]
rw = [c for c in d["comparisons"] if c["metric"] == "rand_write"][0]
assert abs(rw["change"] - 4.5457413249) < 1e-6, rw["change"]
assert rw["verdict"] == "better"
x = xml.dom.minidom.parse(t + "/r.junit")
assert x.documentElement.tagName == "testsuites"
assert len(x.getElementsByTagName("testcase")) == 12
rows = list(csv.DictReader(open(t + "/r.csv", newline="")))
assert len(rows) == 12 and rows[0]["verdict"], rows[:1]
assert len(d["interactions"]) == 1 and d["interactions"][0]["part"].startswith("DUT5")
PY
echo "PASS"
