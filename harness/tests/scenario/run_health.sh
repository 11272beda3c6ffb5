#!/usr/bin/env bash
# Part health (docs/running.md, "Part health") on the simulated lab: the
# agent's wear readings (EXT_CSD life time A/B, PRE_EOL_INFO) are stored
# before and after every job, per part, and shown by status and the text,
# HTML and JSON reports; a part past the board type's `health:` thresholds
# (here life_time_max: 0x01, and the hardkernel-8g part reads life_a 0x02)
# is flagged: an event before its job, its job marked, its comparisons noted
# WORN; with on_exceed: skip its board's jobs are skipped instead.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-health.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$T/lab.db" "$1"; }

lab() { # ON_EXCEED
	cat >"$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: health
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 5, autoboot_floor: 1s}
types:
  - name: t
    host: sim
    source: simulated
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    health: {life_time_max: 0x01, pre_eol_max: 1, on_exceed: $1}
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: fresh
    type: t
    part: {label: "fresh part", model: industrial-8g}
    console: {driver: pty, path: $T/sim/fresh.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 1, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false}
  - name: worn
    type: t
    part: {label: "worn part", model: hardkernel-8g}
    console: {driver: pty, path: $T/sim/worn.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/worn", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false}
YAML
	cat >"$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 3
    order: interleave
    workloads: [{name: androbench, args: {seq_mib: 16, rand_mib: 8, rand_ios: 256}}]
plan:
  name: health-plan
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
}

# 1. flag: both parts run; readings before and after each job; worn flagged
lab flag
"$EMMCLAB" run --db "$T/lab.db" --report "$T/run.html" "$T/plan.yaml" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "run (on_exceed: flag)"; }
[ "$(q "SELECT count(*) FROM job WHERE status = 'ok'")" = 4 ] || fail "4 jobs ok: $(q 'SELECT status, cause FROM job')"
for part in "fresh part" "worn part"; do
	for ph in before after; do
		n=$(q "SELECT count(*) FROM part_health h JOIN part p ON p.id = h.part_id WHERE p.label = '$part' AND phase = '$ph'")
		[ "$n" = 2 ] || fail "$part: $n '$ph' readings, want one per job (2)"
	done
done
# one reading per job and phase, each tied to its job and its job's part
[ "$(q "SELECT count(*) FROM part_health h JOIN job j ON j.id = h.job_id WHERE j.part_id = h.part_id")" = 8 ] ||
	fail "readings not tied to their jobs"
[ "$(q "SELECT group_concat(DISTINCT life_a || '/' || life_b || '/' || pre_eol) FROM part_health h JOIN part p ON p.id = h.part_id WHERE p.label = 'worn part'")" = "2/1/1" ] ||
	fail "worn part readings: $(q 'SELECT * FROM part_health')"
[ "$(q "SELECT count(*) FROM job j JOIN part p ON p.id = j.part_id WHERE p.label = 'worn part' AND j.health_flag LIKE '%life_a 0x02%> life_time_max 0x01%'")" = 2 ] ||
	fail "worn part's jobs not flagged: $(q 'SELECT id, health_flag FROM job')"
[ "$(q "SELECT count(*) FROM job j JOIN part p ON p.id = j.part_id WHERE p.label = 'fresh part' AND j.health_flag IS NOT NULL")" = 0 ] ||
	fail "fresh part flagged"
# the warning comes before the worn part's job starts its workloads
[ "$(q "SELECT count(*) FROM event WHERE kind = 'health' AND stage = 'before' AND message LIKE 'part \"worn part\", read before the job: life_a 0x02%the job runs%'")" = 2 ] ||
	fail "no health warning before each worn job: $(q "SELECT kind, stage, message FROM event")"
grep -q "health" "$T/err" || fail "the run did not warn on its console"
grep -A3 '^worn part' "$T/out" | grep -q '^  WORN: a part past its health thresholds' ||
	fail "end-of-run table: worn part not marked"
grep -A3 '^fresh part' "$T/out" | grep -q 'WORN' && fail "end-of-run table: fresh part marked"
echo "ok 1 - readings before/after each job stored per part; the worn part's jobs flagged, with a warning first"

"$EMMCLAB" status --db "$T/lab.db" >"$T/status"
sed -n '/^part health/,/^$/p' "$T/status" >"$T/st.health"
grep -q '^  fresh part' "$T/st.health" || fail "status: no fresh part"
grep -q 'A 0x01 (0-10%) B 0x01 (0-10%) pre-EOL 1 (normal)' "$T/st.health" || fail "status: fresh part's reading"
grep -q 'A 0x02 (10-20%) B 0x01 (0-10%) pre-EOL 1 (normal)' "$T/st.health" || fail "status: worn part's reading"
grep -q 'trend: A +0 B +0 in 4 readings since' "$T/st.health" || fail "status: trend"
grep -q 'WORN: 2 jobs flagged' "$T/st.health" || fail "status: worn part not flagged"
[ "$(grep -c WORN "$T/st.health")" = 1 ] || fail "status: more than the worn part flagged"
echo "ok 2 - status shows each part's latest health, its trend and the flag"

"$EMMCLAB" report --db "$T/lab.db" --format text -o "$T/rep.txt" >/dev/null
grep -q '^Part health' "$T/rep.txt" || fail "text report: no part health"
grep -q '^  worn part: WORN' "$T/rep.txt" || fail "text report: worn part not marked"
grep -q '^  fresh part$' "$T/rep.txt" || fail "text report: fresh part"
"$EMMCLAB" report --db "$T/lab.db" --format html -o "$T/rep.html" >/dev/null
for h in "$T/rep.html" "$T/run.html"; do
	grep -q '<h2>Part health</h2>' "$h" || fail "$h: no part health"
	grep -q "<b>WORN</b>: part &quot;worn part&quot;, read before the job: life_a 0x02" "$h" || fail "$h: worn part not marked"
done
"$EMMCLAB" report --db "$T/lab.db" --format json -o "$T/rep.json" >/dev/null
python3 - "$T/rep.json" <<'PY' || fail "json part_health"
import json, sys
d = json.load(open(sys.argv[1]))
h = {p["part"]: p for p in d["part_health"]}
assert set(h) == {"fresh part", "worn part"}, h
assert h["worn part"]["life_a"] == 2 and h["worn part"]["worn"] and h["worn part"]["flagged_jobs"] == 2, h
assert h["fresh part"]["life_a"] == 1 and not h["fresh part"]["worn"] and h["fresh part"]["readings"] == 4, h
worn = [c for c in d["comparisons"] if c["part"] == "worn part"]
fresh = [c for c in d["comparisons"] if c["part"] == "fresh part"]
assert worn and all("WORN" in c["note"] for c in worn), worn[:1]
assert fresh and not any("WORN" in c["note"] for c in fresh), fresh[:1]
PY
"$EMMCLAB" compare --db "$T/lab.db" >"$T/cmp" 2>&1 || true
grep -q "WORN" "$T/cmp" || fail "compare: no WORN note"
echo "ok 3 - text, HTML, JSON reports and compare mark the worn part's figures"

# 4. skip: the worn part's board runs no job; the other board is unaffected
rm -f "$T/lab.db"
lab skip
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" || true
[ "$(q "SELECT count(*) FROM job j JOIN board b ON b.id = j.board_id WHERE b.name = 'fresh' AND status = 'ok'")" = 2 ] ||
	fail "skip: fresh board's jobs: $(q 'SELECT board_id, status, cause FROM job')"
[ "$(q "SELECT count(*) FROM job j JOIN board b ON b.id = j.board_id WHERE b.name = 'worn' AND status = 'skipped'")" = 2 ] ||
	fail "skip: worn board's jobs not skipped: $(q 'SELECT board_id, status, cause FROM job')"
[ "$(q "SELECT count(*) FROM sample s JOIN iteration i ON i.id = s.iteration_id JOIN job j ON j.id = i.job_id JOIN board b ON b.id = j.board_id WHERE b.name = 'worn'")" = 0 ] ||
	fail "skip: samples stored for the worn part"
[ "$(q "SELECT count(*) FROM job j JOIN board b ON b.id = j.board_id WHERE b.name = 'worn' AND j.health_flag IS NOT NULL")" -ge 1 ] ||
	fail "skip: the skipped job does not say why"
echo "ok 4 - on_exceed: skip skips the worn part's jobs before they run"
echo "PASS run_health"
