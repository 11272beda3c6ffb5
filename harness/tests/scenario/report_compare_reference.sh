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
grep -q '^  DUT5 .*cache-nofua-cqe vs fua-cqe' <<<"$out" || fail "DUT5 CQE pair missing"

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
assert len(x.getElementsByTagName("testcase")) == 11
rows = list(csv.DictReader(open(t + "/r.csv", newline="")))
assert len(rows) == 11 and rows[0]["verdict"], rows[:1]
PY
echo "PASS"
