#!/usr/bin/env bash
# fault_campaign.sh - the fault campaign on the simulated lab (docs/reliability.md).
#
#   fault_campaign.sh [--short] [--seeds N] [--cases REGEX] [--kills N] [--log FILE]
#
# Every fault the simulator injects (docs/simulator.md, "Faults"), alone on one
# board while the other board stays healthy, then in combinations, each under
# several seeds; then controller SIGKILL at random points, a full results
# volume, a read-only database, a database locked by another writer, and a
# wall-clock jump (LD_PRELOAD shim, clockjump.so).  After every run it asserts:
# the exit code and classification (event kinds) the case expects, retries and
# quarantine; no sample without a verified mode equal to the requested one; no
# duplicate (sample, counter); no half-written iteration; the upload outbox
# consistent with the runs; no process of the run left behind; every board
# powered off at the end.  Prints one line per case and a summary; exits 1 when
# any assertion failed.
#
# --short (CI, scenario fault_campaign): one seed, the single faults and a few
# combinations, one SIGKILL; the full campaign is the default.
# Needs EMMCLAB (the CLI) and EMMCLAB_SRC; EMMCLAB_BIN for clockjump.so.
set -uo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
BIN=${EMMCLAB_BIN:-$(dirname "$(dirname "$EMMCLAB")")}
short=0 seeds=3 only= kills=8 log=/dev/null
while [ $# -gt 0 ]; do
	case $1 in
	--short) short=1; seeds=1; kills=1 ;;
	--seeds) seeds=$2; shift ;;
	--cases) only=$2; shift ;;
	--kills) kills=$2; shift ;;
	--log) log=$2; shift ;;
	*) echo "usage: fault_campaign.sh [--short] [--seeds N] [--cases REGEX] [--kills N] [--log FILE]" >&2; exit 2 ;;
	esac
	shift
done

T=$(mktemp -d /tmp/emmclab-campaign.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
MNT=
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	[ -z "$MNT" ] || umount "$MNT" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
q() { sqlite3 -cmd ".timeout 5000" "$1" "$2"; }

# one line per case ("ok NAME" / "FAIL NAME") and per controller run, counted at the end
: >"$T/cases"
: >"$T/runs"
bad() { # one failed assertion of the current case
	echo "  FAIL [$case]: $*"
	case_ok=0
}

# lab SEED FAULTS_B5 FAULTS_SPRD: b5 takes the fault, bsprd stays healthy unless told
lab() {
	cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: campaign
  transcripts: ${TRANSCRIPTS:-$T/transcripts}
  sim: {time_scale: 1000, seed: $1, autoboot_floor: 1s}
types:
  - name: camp
    host: sim
    has_cqe: true
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 3s, first_output: 2s, bootloader: 3s, boot: 5s, login: 4s, command: 30s, job: 5m}
    retries: 1
    quarantine_after: 2
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: b5
    type: camp
    part: {label: "DUT5", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true, faults: [$2]}
  - name: bsprd
    type: camp
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/bsprd.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/bsprd", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true, faults: [$3]}
uploads:
  - name: hook
    kind: webhook
    url: "http://127.0.0.1:$DEADPORT/hook"
YAML
	cat > "$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: ${ITER:-1}
    order: interleave
    workloads: [{name: androbench}, {name: fscopy}]
plan:
  name: campaign
  lab: lab.yaml
  suites: [s]
  budget: 5m
YAML
}
DEADPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

sim_start() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
}

# Invariants every run must keep, whatever the fault.
# androbench: 8 samples and its request latency percentiles (4 per operation traced)
HALF="select count(*) from (select i.id, i.workload, count(case when s.metric not glob 'rq_*' then 1 end) n, count(case when s.metric glob 'rq_*' then 1 end) l from iteration i left join sample s on s.iteration_id=i.id group by i.id) where (workload='androbench' and (n!=8 or l not in (0,4,8))) or (workload='fscopy' and n!=7)"
invariants() { # DB
	local db=$1
	[ -f "$db" ] || return 0
	[ "$(q "$db" "pragma integrity_check")" = ok ] || bad "database integrity"
	[ "$(q "$db" "select count(*) from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id where j.verified_mode is null or j.verified_mode != j.mode or j.status = 'mode-mismatch'")" = 0 ] ||
		bad "a sample without a verified mode equal to the requested one"
	[ "$(q "$db" "select count(*) from (select iteration_id, metric from sample group by iteration_id, metric having count(*) > 1)")" = 0 ] ||
		bad "a duplicate sample"
	[ "$(q "$db" "select count(*) from (select job_id, workload, n from iteration group by job_id, workload, n having count(*) > 1)")" = 0 ] ||
		bad "a duplicate iteration"
	[ "$(q "$db" "$HALF")" = 0 ] || bad "a half-written iteration"
	[ "$(q "$db" "select count(*) from job j join run r on r.id=j.run_id where r.status != 'running' and j.status in ('pending','running')")" = 0 ] ||
		bad "a finished run with jobs left pending/running"
	# outbox: a row per target for every finished run, none for a running one, valid states
	[ "$(q "$db" "select count(*) from upload where state not in ('pending','sent','failed') or attempts < 0")" = 0 ] ||
		bad "an outbox row in an unknown state"
	[ "$(q "$db" "select count(*) from upload u join run r on r.id=u.run_id where r.status='running'")" = 0 ] ||
		bad "an outbox row for a run still running"
	[ "$(q "$db" "select count(*) from run r where r.status in ('complete','failed') and not exists (select 1 from upload u where u.run_id=r.id and u.target='hook')")" = 0 ] ||
		bad "a finished run without its outbox row"
	[ "$(q "$db" "select count(*) from (select target, idem_key from upload group by target, idem_key having count(*) > 1)")" = 0 ] ||
		bad "a duplicate outbox row"
}
# After the run, before the simulator stops: no process of the run, boards off.
leftovers() {
	local p
	p=$(pgrep -af "$T" | grep -v -e emmclab-sim -e "pgrep" -e fault_campaign || true)
	[ -z "$p" ] || bad "processes left behind: $p"
	local on
	on=$(curl -sS --max-time 5 "http://127.0.0.1:$PORT/sim/state" | python3 -c '
import json, sys
print(" ".join(b["name"] for b in json.load(sys.stdin)["boards"] if b.get("power") not in ("off", 0, False)))' 2>/dev/null) ||
		on="(state unreadable)"
	[ -z "$on" ] || bad "boards left powered on: $on"
}

# check RC WANT_RC KINDS QUARANTINE: WANT_RC is a code or alternatives "0/3";
# KINDS: space-separated event kinds that must appear for b5; "-" for none required.
check() {
	local rc=$1 want_rc=$2 kinds=$3 quar=$4 db=$T/lab.db
	[[ "$rc" =~ ^(${want_rc//\//|})$ ]] || bad "exit $rc, expected $want_rc ($(tail -2 "$T/err" | tr '\n' ' '))"
	invariants "$db"
	[ -f "$db" ] || return 0
	local k
	for k in $kinds; do
		[ "$k" = - ] && continue
		[ "$(q "$db" "select count(*) from event e join board b on b.id=e.board_id where b.name='b5' and e.kind='$k' and e.run_id=(select max(id) from run)")" -gt 0 ] ||
			bad "no '$k' event for b5 (saw: $(q "$db" "select group_concat(distinct kind) from event where run_id=(select max(id) from run)"))"
	done
	local nq
	nq=$(q "$db" "select count(*) from event where kind='quarantine' and run_id=(select max(id) from run)")
	case $quar in
	yes) [ "$nq" -gt 0 ] || bad "not quarantined" ;;
	no) [ "$nq" = 0 ] || bad "quarantined" ;;
	esac
	# the healthy board always completes its jobs
	if [ "${HEALTHY_SPRD:-1}" = 1 ]; then
		[ "$(q "$db" "select count(*) from job j join board b on b.id=j.board_id where b.name='bsprd' and j.status='ok' and j.run_id=(select max(id) from run)")" = 2 ] ||
			bad "the healthy board's jobs did not complete"
	fi
}

# one_run NAME SEED FAULT_B5 FAULT_SPRD RC KINDS QUARANTINE
one_run() {
	case=$1
	[ -z "$only" ] || [[ "$case" =~ $only ]] || return 0
	case_ok=1
	echo run >>"$T/runs"
	lab "$2" "$3" "$4"
	rm -f "$T/lab.db"*
	sim_start
	local start rc
	start=$(date +%s)
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	leftovers
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	check "$rc" "$5" "$6" "$7"
	finish_case "exit $rc, $(($(date +%s) - start)) s, events: $(q "$T/lab.db" "select group_concat(kind || '=' || n, ' ') from (select kind, count(*) n from event group by kind)" 2>/dev/null)"
}

finish_case() {
	if [ "$case_ok" = 1 ]; then
		echo "ok   $case: $1"
		echo "ok $case" >>"$T/cases"
	else
		echo "FAIL $case: $1"
		echo "FAIL $case" >>"$T/cases"
		sed 's/^/    err: /' "$T/err" | tail -5
	fi
	{ echo "== $case ($case_ok): $1"; cat "$T/err"; } >>"$log" 2>/dev/null
}

# ---- 1. every fault alone (on b5), under each seed ---------------------------
# fault | expected exit | event kinds b5 must show | quarantine
FAULTS=(
	"no-output|3|no-output retry|yes"
	"uboot-hang|3|bootloader-hang retry|yes"
	"panic|3|kernel-panic retry|yes"
	"panic:1|0|kernel-panic retry|no"
	"no-login|3|retry|yes"
	"garbage=0.0005|0|-|no"
	"drop-chars=0.005|0/3|-|any"
	"drop-chars|3|bootloader-hang retry|yes"
	"bad-crc|0|-|no"
	"pdu-500|3|power|any"
	"pdu-500:1|0|-|no"
	"no-power-off|3|no-output|any"
	"lose-writes=16|0|-|no"
	"slow-part=3|0|-|no"
	"mode-stuck|3|mode-mismatch|any"
)
[ "$short" = 1 ] || FAULTS+=("pdu-timeout|3|power|any")
for seed in $(seq 1 "$seeds"); do
	for f in "${FAULTS[@]}"; do
		IFS='|' read -r fault rc kinds quar <<<"$f"
		one_run "alone:$fault:seed$seed" "$seed" "$fault" "" "$rc" "$kinds" "$quar"
	done
done

# ---- 2. combinations ---------------------------------------------------------
COMBOS=(
	"garbage=0.0005, bad-crc|0|-|no"
	"panic:1, bad-crc|0|kernel-panic retry|no"
	"pdu-500:1, panic:1|0|retry|no"
	"mode-stuck, bad-crc|3|mode-mismatch|any"
	"no-output:1, garbage=0.0005|0|no-output retry|no"
)
# Lost input characters on the Linux console are not re-typed as on U-Boot: a
# mangled marker costs a command timeout, a mangled agent command an
# agent-protocol failure, so these may end in quarantine (exit 3) or pass.
[ "$short" = 1 ] || COMBOS+=(
	"drop-chars=0.005, bad-crc, slow-part=2|0/3|-|any"
	"uboot-hang:1, drop-chars=0.005, bad-crc|0/3|bootloader-hang retry|any"
	"no-login:1, slow-part=2, bad-crc|0|retry|no"
	"no-power-off, lose-writes=8, garbage=0.0005|3|no-output|any"
)
for seed in $(seq 1 "$seeds"); do
	for f in "${COMBOS[@]}"; do
		IFS='|' read -r fault rc kinds quar <<<"$f"
		one_run "combo:$fault:seed$seed" "$seed" "$fault" "" "$rc" "$kinds" "$quar"
	done
	# both boards faulty at once: no healthy board to check
	HEALTHY_SPRD=0 one_run "both:bad-crc+garbage:seed$seed" "$seed" "bad-crc" "garbage=0.0005" "0" "-" "no"
	[ "$short" = 1 ] ||
		HEALTHY_SPRD=0 one_run "both:bad-crc+drop-chars:seed$seed" "$seed" "bad-crc" "drop-chars=0.005" "0/3" "-" "any"
done

# ---- 3. controller SIGKILL at random points ----------------------------------
for k in $(seq 1 "$kills"); do
	case="sigkill:$k"
	[ -z "$only" ] || [[ "$case" =~ $only ]] || continue
	case_ok=1
	echo run >>"$T/runs"
	echo run >>"$T/runs"
	ITER=2 lab "$k" "" ""
	rm -f "$T/lab.db"*
	sim_start
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
	pid=$!
	# a random point: 0.2 .. 2.5 s into a run of 2.5-4 s (power-on, boot, workloads, storing)
	delay=$(python3 -c "import random; random.seed($k); print(round(random.uniform(0.2, 2.5), 2))")
	sleep "$delay"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	invariants "$T/lab.db"
	kept=$(q "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)
	# Iterations the killed controller had journalled but not yet committed
	# (the journal is flushed to the database on a 50 ms tick): whole "iter"
	# lines after the run's committed mark; the next run's replay adds them.
	mark=$(q "$T/lab.db" "select journal_seq from run where id=1" 2>/dev/null)
	pend=$(python3 - "$T/lab.db.pending" "${mark:-0}" <<'PY'
import os, sys
d, mark, n = sys.argv[1], int(sys.argv[2] or 0), 0
for f in (os.listdir(d) if os.path.isdir(d) else []):
    if not f.endswith(".jnl"):
        continue
    for line in open(os.path.join(d, f), "rb").read().split(b"\n")[:-1]:
        t = line.split(b" ")
        if len(t) > 2 and t[1] == b"iter" and t[0].isdigit() and int(t[0]) > mark:
            n += 1
print(n)
PY
)
	# the next run reaps the dead one and leaves everything off
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	sim_start
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	leftovers
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	check "$rc" 0 "-" no
	first=
	if [ -f "$T/lab.db" ] && [ "$(q "$T/lab.db" "select count(*) from run")" = 2 ]; then
		first=$(q "$T/lab.db" "select status from run where id=1")
		# killed after its end (complete), or in the middle (then reaped: aborted)
		[ "$first" = aborted ] || [ "$first" = complete ] || bad "the killed run is '$first', not aborted"
		# every iteration stored at the kill, plus exactly the journalled ones
		got=$(q "$T/lab.db" "select count(*) from iteration i join job j on j.id=i.job_id where j.run_id=1")
		[ "$got" = $((kept + pend)) ] ||
			bad "iterations of the killed run: $got after the replay, $kept stored at the kill + $pend journalled"
	fi
	finish_case "killed after ${delay}s with $kept iterations stored + $pend journalled (run ${first:-?}); next run exit $rc"
done

# ---- 4. the results volume fills up ------------------------------------------
case=disk-full
if [ -z "$only" ] || [[ "$case" =~ $only ]]; then
	case_ok=1
	echo run >>"$T/runs"
	MNT=$T/vol
	mkdir -p "$MNT"
	how="tmpfs 3 MiB"
	if ! mount -t tmpfs -o size=3m emmclab-campaign "$MNT" 2>/dev/null; then
		MNT=
		how="ulimit -f (no mount permission)"
	fi
	TRANSCRIPTS=$T/vol/transcripts ITER=3 lab 1 "" ""
	rm -f "$T/vol/lab.db"*
	sim_start
	# the database exists, then the volume is nearly full before the night starts
	"$EMMCLAB" db migrate --db "$T/vol/lab.db" >/dev/null 2>&1 || true
	if [ -n "$MNT" ]; then
		avail=$(df -k --output=avail "$MNT" | tail -1)
		fallocate -l $(((avail - 200) * 1024)) "$MNT/filler" 2>/dev/null ||
			dd if=/dev/zero of="$MNT/filler" bs=1k count=$((avail - 200)) 2>/dev/null
		"$EMMCLAB" run --db "$T/vol/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
		rc=$?
	else
		(ulimit -f 400; "$EMMCLAB" run --db "$T/vol/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err")
		rc=$?
	fi
	leftovers
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	[ "$rc" = 3 ] || bad "exit $rc on a full results volume, expected 3 (infrastructure)"
	grep -qiE "no space|full|disk|write" "$T/err" || bad "the error does not say the volume is full: $(tail -1 "$T/err")"
	rm -f "$T/vol/filler"
	invariants "$T/vol/lab.db"
	finish_case "$how: exit $rc: $(grep -iE 'space|full' "$T/err" | head -1)"
	[ -z "$MNT" ] || umount "$MNT"
	MNT=
fi

# ---- 5. a read-only database -------------------------------------------------
case=read-only-db
if [ -z "$only" ] || [[ "$case" =~ $only ]]; then
	case_ok=1
	echo run >>"$T/runs"
	lab 1 "" ""
	rm -rf "$T/ro"; mkdir -p "$T/ro"
	sim_start
	"$EMMCLAB" run --db "$T/ro/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	chmod 0444 "$T/ro/lab.db"; chmod 0555 "$T/ro"
	before=$(ls -A "$T/ro")
	ro() { # as an unprivileged user: root ignores file modes
		if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; else "$@"; fi
	}
	chmod o+rx "$T"
	for cmd in "status" "report" "compare" "db export"; do
		# shellcheck disable=SC2086
		ro "$EMMCLAB" $cmd --db "$T/ro/lab.db" >"$T/out" 2>"$T/err" ||
			bad "'emmclab $cmd' on a read-only database: exit $? ($(head -1 "$T/err"))"
	done
	[ "$(ls -A "$T/ro")" = "$before" ] || bad "files left next to a read-only database: $(ls -A "$T/ro")"
	sim_start
	ro "$EMMCLAB" run --db "$T/ro/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	leftovers
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	[ "$rc" = 3 ] || bad "run on a read-only database: exit $rc, expected 3"
	chmod 0755 "$T/ro"; chmod 0644 "$T/ro/lab.db"
	finish_case "report/compare/status/db export read it; run refused with exit $rc"
fi

# ---- 6. the database locked by another writer for a while --------------------
case=db-locked
if [ -z "$only" ] || [[ "$case" =~ $only ]]; then
	case_ok=1
	echo run >>"$T/runs"
	hold=$([ "$short" = 1 ] && echo 8 || echo 60)
	lab 1 "" ""
	rm -f "$T/lab.db"*
	"$EMMCLAB" db migrate --db "$T/lab.db" >/dev/null 2>&1 || true
	sim_start
	# another writer (a backup script, `sqlite3` by hand) holds the write lock
	python3 - "$T/lab.db" "$hold" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
time.sleep(float(sys.argv[2]))
c.execute("COMMIT")
PY
	holder=$!
	sleep 0.5
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	wait "$holder"
	leftovers
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
	# the night is not lost: the controller waits for the lock and completes
	check "$rc" 0 "-" no
	finish_case "lock held ${hold}s: exit $rc"
fi

# ---- 7. the wall clock jumps during the run ----------------------------------
case=clock-jump
if [ -z "$only" ] || [[ "$case" =~ $only ]]; then
	case_ok=1
	echo run >>"$T/runs"
	echo run >>"$T/runs"
	shim=$BIN/harness/tests/helpers/libclockjump.so
	if [ ! -f "$shim" ]; then
		bad "no $shim (built with the tests)"
	else
		for jump in -3600 86400; do
			lab 1 "" ""
			rm -f "$T/lab.db"*
			sim_start
			pre=${LD_PRELOAD:+$LD_PRELOAD:}
			ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 LD_PRELOAD=$pre$shim \
				EMMCLAB_CLOCKJUMP_AFTER=2 EMMCLAB_CLOCKJUMP_BY=$jump \
				"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err"
			rc=$?
			leftovers
			"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
			check "$rc" 0 "-" no
			# the jump happened (timestamps moved) and timeouts did not fire on it
			[ "$(q "$T/lab.db" "select count(*) from event where kind in ('no-output','bootloader-hang','boot-timeout','login-timeout','command-timeout')")" = 0 ] ||
				bad "a timeout fired on a wall-clock jump of ${jump}s"
		done
		finish_case "wall clock jumped -1 h and +1 day 2 s into the run: exit $rc"
	fi
fi

cases=$(wc -l <"$T/cases")
failed=$(grep -c '^FAIL' "$T/cases")
echo "fault_campaign: $cases cases, $(wc -l <"$T/runs") controller runs, $failed failed"
grep '^FAIL' "$T/cases" | sed 's/^FAIL /  failed: /'
[ "$failed" = 0 ]
