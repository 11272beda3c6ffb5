#!/bin/bash
# report_baseline.sh - baselines end to end: nightly runs written with
# sqlite3 into a store the binary created, `baseline set/show`, `compare
# --baseline` and `report --baseline` exit 1 on a real regression, 0 on a
# normal night; infrastructure events become JUnit errors.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}"

tmp=$(mktemp -d /tmp/emmclab-report-base-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db="$tmp/lab.db"

"$EMMCLAB" db migrate --db "$db" >/dev/null
# Five nights; night 5 has seq_write in cache-nofua 8% lower.
python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO part (id, label) VALUES (1, 'emmc-A')")
db.execute("INSERT INTO board (id, name, host) VALUES (1, 'rk3399-1', 'sdhci-of-arasan')")
db.execute("INSERT INTO kernel (id, version) VALUES (1, '6.1.0-fua')")
sid = 0
for night in range(1, 6):
    db.execute("INSERT INTO run (id, uuid, plan, started_at, finished_at, status) VALUES (?, ?, 'nightly', ?, ?, 'complete')",
               (night, "u%d" % night, "2026-11-%02dT01:00:00Z" % night, "2026-11-%02dT05:00:00Z" % night))
    for m, mode in enumerate(["fua", "cache-nofua"]):
        job = night * 10 + m
        db.execute("INSERT INTO job (id, run_id, board_id, part_id, kernel_id, suite, mode, verified_mode, status) VALUES (?, ?, 1, 1, 1, 'nightly', ?, ?, 'ok')",
                   (job, night, mode, mode))
        for it in range(1, 6):
            iid = job * 10 + it
            db.execute("INSERT INTO iteration (id, job_id, workload, n) VALUES (?, ?, 'androbench', ?)", (iid, job, it))
            jit = ((it * 37 + night * 11) % 7 - 3) * 0.4
            sw = (200.0 if m else 150.0) + jit
            if night == 5 and m == 1:
                sw *= 0.92
            for metric, v in (("seq_write", sw), ("rand_write", (70.0 if m else 12.7) + jit * 0.1)):
                db.execute("INSERT INTO sample (iteration_id, metric, value, unit) VALUES (?, ?, ?, 'MiB/s')", (iid, metric, v))
db.execute("INSERT INTO event (run_id, board_id, at, kind, stage, message) VALUES (5, 1, '2026-11-05T02:00:00Z', 'login-timeout', 'shell', 'no login prompt <after> 60 s')")
db.commit()
PY

"$EMMCLAB" baseline show --db "$db" | grep -q 'no baseline set' || fail "show on empty"
set +e
"$EMMCLAB" compare --db "$db" --baseline 2>"$tmp/err"; rc=$?
set -e
[ $rc = 2 ] || fail "compare --baseline without a baseline: exit $rc"
grep -q 'baseline set' "$tmp/err" || fail "no hint to set a baseline"

"$EMMCLAB" baseline set --db "$db" --last 3 | grep -q "last 3" || fail "baseline set --last"
"$EMMCLAB" baseline show --db "$db" | grep -q '^default *last 3 complete runs' || fail "baseline show"

set +e
"$EMMCLAB" compare --db "$db" --baseline >"$tmp/cmp" 2>"$tmp/err"; rc=$?
set -e
cat "$tmp/cmp"
[ $rc = 1 ] || fail "regression not flagged (exit $rc)"
grep -q 'emmc-A.*cache-nofua androbench/seq_write.*significantly worse' "$tmp/cmp" || fail "regression line missing"
grep -q '1 regression' "$tmp/err" || fail "regression count on stderr"

# Night 4 against the 3 nights before it: fine.
"$EMMCLAB" compare --db "$db" --baseline --run 4 >/dev/null || fail "night 4 flagged"

set +e
"$EMMCLAB" report --db "$db" --baseline --format junit -o "$tmp/r.xml"; rc=$?
set -e
[ $rc = 1 ] || fail "report --baseline exit $rc"
python3 - "$tmp/r.xml" <<'PY'
import sys, xml.dom.minidom
x = xml.dom.minidom.parse(sys.argv[1])
f = x.getElementsByTagName("failure")
e = x.getElementsByTagName("error")
assert len(f) == 1 and "worse" in f[0].getAttribute("message"), [n.toxml() for n in f]
assert len(e) == 1 and e[0].getAttribute("type") == "login-timeout", [n.toxml() for n in e]
assert e[0].getAttribute("message") == "no login prompt <after> 60 s"
PY
"$EMMCLAB" report --db "$db" --run 5 --baseline --format text -o "$tmp/r.txt" 2>/dev/null || true
grep -q 'REGRESSION: emmc-A cache-nofua androbench/seq_write' "$tmp/r.txt" || fail "text report lacks the regression"
# Pinned baseline, and a bad run id.
"$EMMCLAB" baseline set --db "$db" --run 2 --name pinned >/dev/null
set +e
"$EMMCLAB" compare --db "$db" --baseline=pinned >/dev/null 2>&1; rc=$?
"$EMMCLAB" baseline set --db "$db" --run 99 2>/dev/null; rc2=$?
"$EMMCLAB" report --db "$db" --run 99 2>/dev/null; rc3=$?
set -e
[ $rc = 1 ] || fail "pinned baseline: exit $rc"
[ $rc2 = 2 ] || fail "pinning a missing run: exit $rc2"
[ $rc3 = 2 ] || fail "report of a missing run: exit $rc3"
# Trends: the HTML report of night 5 draws the five nights.
"$EMMCLAB" report --db "$db" --format html -o "$tmp/r.html"
grep -q '<polyline' "$tmp/r.html" || fail "no trend lines"
# ... for the first --dut-detail parts only, loaded night by night; a note says so
"$EMMCLAB" report --db "$db" --format html --dut-detail 0 -o "$tmp/r0.html"
grep -q "Trends of the first 0 of [1-9][0-9]* parts" "$tmp/r0.html" || fail "no trend cap note"
sed -n '/Trends over nights/,$p' "$tmp/r0.html" | grep -q '<polyline' && fail "trends drawn past the cap"
echo "PASS"
