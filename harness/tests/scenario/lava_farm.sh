#!/bin/bash
# lava_farm.sh - emmclab's LAVA executor against a real LAVA (Debian's
# lava-server + lava-dispatcher 2023.01, harness/tests/servers/lava_farm.sh):
#  1. a two-board, two-mode plan on two LAVA QEMU (TCG) devices booting the
#     virtual board (Debian's 6.1 kernel + the initramfs with the agent):
#     every sample stored with its verified mode, executor lava, job URL and
#     worker; the same measurements in LAVA's /api/v0.2/jobs/ID/tests/;
#  2. a job canceled through LAVA's API: infrastructure (lava-canceled),
#     retried, then given up;
#  3. a kernel that cannot boot: infrastructure, never a result;
#  4. one plan mixing a local simulated board and a LAVA board; the JSON
#     report gives each value's executor, LAVA job URL and worker.
# Uses the farm CI started (LAVA_FARM_DIR) when it answers, else starts one
# and stops it at the end.
set -euo pipefail
. "${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}/harness/tests/helpers/virtlib.sh"
FARM=$SRC/harness/tests/servers/lava_farm.sh
KVER=6.1.0-57-amd64
ls /boot/vmlinuz-6.1.* > /dev/null 2>&1 || { echo "SKIP: no Debian 6.1 kernel in /boot"; exit 77; }
KVER=$(ls /boot/vmlinuz-6.1.* | sed 's|.*/vmlinuz-||' | sort -V | tail -1)

tmp=$(mktemp -d /tmp/emmclab-lava.XXXXXX)
chmod 755 "$tmp"
started=
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$tmp/sim" > /dev/null 2>&1 || true
	[ -z "$started" ] || "$FARM" stop || true
	rm -rf "$tmp"
}
trap cleanup EXIT
t0=$SECONDS
if ! "$FARM" status 2> /dev/null; then
	rc=0
	"$FARM" start > "$tmp/farm.env" || rc=$?
	[ $rc = 77 ] && exit 77
	[ $rc = 0 ] || fail "the LAVA farm did not start"
	started=1
	echo "farm bring-up: $((SECONDS - t0)) s"
fi
eval "$("$FARM" env)"
TOKEN=$(cat "$LAVA_TOKEN_FILE")
api() { curl -fsS --max-time 20 -H "Authorization: Token $TOKEN" "${LAVA_URL}api/v0.2/$1"; }

# the virtual board's artefacts, pinned to Debian's 6.1 kernel (the patch series' base)
mods=$("$SRC/boards/kernel/build-modules.sh" --kver "$KVER" | tail -1)
"$SRC/boards/virt/mkinitramfs.sh" --agent "$AGENT" --modules "$mods" --kver "$KVER" \
	--out "$tmp/initramfs.cpio.gz" > /dev/null

# lab BOARDS-YAML [KERNEL-IMAGE]
lab() {
	cat > "$tmp/lab.yaml" <<EOF
include:
  - $SRC/boards/types/qemu-vemmc.yaml
  - $SRC/boards/types/sim-board.yaml
lab:
  name: lava-test
  transcripts: $tmp/transcripts
  sim: {time_scale: 1000, seed: 3}
  lava: {url: "$LAVA_URL", user: $LAVA_USER, token_file: $LAVA_TOKEN_FILE, poll: 1s, poll_max: 5s}
kernels:
  - name: debian-6.1-vemmc
    image: ${2:-/boot/vmlinuz-$KVER}
    initrd: $tmp/initramfs.cpio.gz
    cmdline: "console=ttyS0,115200"
defaults:
  enabled: true
boards:
$1
EOF
}
LAVA_BOARDS="  - name: lslow
    type: qemu-vemmc
    part: {label: \"vemmc slowrel\", model: slowrel}
    lava: {device_type: qemu, tags: [emmclab], cmdline: \"vemmc.profile=slowrel\", boot_timeout: 3m, test_timeout: 10m}
  - name: lfast
    type: qemu-vemmc
    part: {label: \"vemmc fastrel\", model: fastrel}
    lava: {device_type: qemu, tags: [emmclab], cmdline: \"vemmc.profile=fastrel\", boot_timeout: 3m, test_timeout: 10m}"
ONE_BOARD=$(sed -n 1,4p <<< "$LAVA_BOARDS")
plan() { # MODES
	cat > "$tmp/plan.yaml" <<EOF
suite:
  name: lava-smoke
  modes: [$1]
  iterations: 1
  reboot_between_modes: true
  order: sequential
  seed: 1
  precondition_passes: 0
  exclude_warmup: false
  workloads:
    - name: androbench
      args: {seq_mib: 4, req_mib: 1, rand_mib: 4, rand_ios: 64, count: 1}
plan:
  name: lava-test
  lab: lab.yaml
  suites: [lava-smoke]
  budget: 15m
EOF
}
q() { sqlite3 "$tmp/lab.db" "$1"; }
run() { # expected-exit
	rm -f "$tmp/lab.db"*
	set +e
	timeout 900 "$EMMCLAB" run --db "$tmp/lab.db" --no-report --no-upload "$tmp/plan.yaml" > "$tmp/run.log" 2>&1
	rc=$?
	set -e
	[ "$rc" = "$1" ] || { tail -30 "$tmp/run.log"; fail "emmclab run exited $rc, expected $1"; }
	! grep -qF "$TOKEN" "$tmp/run.log" "$tmp/lab.db" || fail "the LAVA token leaked into the log or the database"
}

# 1. two boards x two modes on LAVA
lab "$LAVA_BOARDS"
plan "fua, cache-nofua"
"$EMMCLAB" check "$tmp/plan.yaml" > /dev/null
t1=$SECONDS
run 0
echo "two boards x two modes on LAVA: $((SECONDS - t1)) s"
[ "$(q "select count(*) from job where status='ok' and verified_mode=mode")" = 4 ] ||
	{ q "select mode, verified_mode, status from job"; fail "not 4 verified ok jobs"; }
[ "$(q "select count(*) from iteration where executor='lava' and job_url like '${LAVA_URL}scheduler/job/%' and worker='emmclab-worker'")" = 4 ] ||
	{ q "select executor, job_url, worker from iteration"; fail "iterations without executor/job URL/worker"; }
for b in lslow lfast; do
	rw() { q "select c.value from job j join board b on b.id=j.board_id join iteration i on i.job_id=j.id
		 join counter c on c.iteration_id=i.id where b.name='$b' and j.mode='$1' and c.name='reliable_writes'"; }
	[ "$(rw fua)" -gt 0 ] || fail "$b fua: reliable_writes=$(rw fua)"
	[ "$(rw cache-nofua)" = 0 ] || fail "$b cache-nofua: reliable_writes=$(rw cache-nofua)"
done
# every stored sample is a measurement in LAVA's results (values are strings there)
q "select b.name || '-' || j.mode || '-it' || i.n || '-' || i.workload || '-' || s.metric, s.value, i.job_url
   from sample s join iteration i on i.id=s.iteration_id join job j on j.id=i.job_id
   join board b on b.id=j.board_id" > "$tmp/samples"
[ "$(wc -l < "$tmp/samples")" -ge 16 ] || fail "too few samples: $(wc -l < "$tmp/samples")"
for id in $(sed 's|.*/||' "$tmp/samples" | sort -u); do
	api "jobs/$id/tests/?limit=500"
done > "$tmp/tests.json" 2> /dev/null || fail "cannot read LAVA's results"
/usr/bin/python3 - "$tmp/samples" "$tmp/tests.json" <<'PY' || fail "LAVA's results differ from the stored samples"
import json, sys
lava = {}
for line in open(sys.argv[2]).read().replace("}{", "}\n{").splitlines():
    for t in json.loads(line)["results"]:
        lava[t["name"]] = t
n = 0
for line in open(sys.argv[1]):
    name, value, url = line.rstrip("\n").split("|")
    t = lava.get(name)
    assert t is not None, "no LAVA test case %s" % name
    assert isinstance(t["measurement"], str), t
    assert abs(float(t["measurement"]) - float(value)) <= 1e-6 * max(1, abs(float(value))), (t, value)
    assert t["unit"], t
    n += 1
print("LAVA has all %d measurements" % n)
PY

# lava_last: the newest LAVA job id (0: none)
lava_last() {
	api "jobs/?ordering=-id&limit=1" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; print(r[0]["id"] if r else 0)'
}
lava_state() { api "jobs/$1/" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

# 1b. the controller SIGKILLed while LAVA runs its job: --resume re-attaches
# to that job (no second submission) and stores its samples once
lab "$ONE_BOARD"
plan "fua"
rm -f "$tmp/lab.db"*
before=$(lava_last)
"$EMMCLAB" run --db "$tmp/lab.db" --no-report --no-upload "$tmp/plan.yaml" > "$tmp/run.log" 2>&1 &
rpid=$!
for _ in $(seq 1 300); do
	[ "$(lava_last)" -gt "$before" ] && [ "$(lava_state "$(lava_last)")" = Running ] && break
	sleep 1
done
lid=$(lava_last)
[ "$lid" -gt "$before" ] || fail "no LAVA job submitted"
kill -KILL $rpid
wait $rpid 2> /dev/null || true
[ "$(lava_state "$lid")" != Finished ] || echo "note: LAVA job $lid finished before the kill"
timeout 900 "$EMMCLAB" run --resume --db "$tmp/lab.db" --no-report --no-upload "$tmp/plan.yaml" > "$tmp/resume.log" 2>&1 ||
	{ tail -20 "$tmp/resume.log"; fail "run --resume failed"; }
grep -q "re-attaching to LAVA job $lid" "$tmp/resume.log" || { tail -20 "$tmp/resume.log"; fail "resume did not re-attach to LAVA job $lid"; }
[ "$(lava_last)" = "$lid" ] || fail "resume submitted a new LAVA job ($(lava_last)) instead of following $lid"
[ "$(q "select count(*) from job where status='ok' and verified_mode=mode")" = 1 ] || fail "resumed job not ok"
[ "$(q "select count(*) from iteration")" = 1 ] || fail "iterations stored: $(q "select count(*) from iteration")"
[ "$(q "select count(*) from (select metric from sample group by iteration_id, metric having count(*) > 1)")" = 0 ] ||
	fail "duplicate samples after the resume"
[ "$(q "select job_url from iteration")" = "${LAVA_URL}scheduler/job/$lid" ] || fail "stored job URL: $(q "select job_url from iteration")"

# 2. a job canceled in LAVA (each attempt, through the API): infrastructure
lab "$ONE_BOARD"
plan "fua"
rm -f "$tmp/lab.db"*
last=$(lava_last)
timeout 600 "$EMMCLAB" run --db "$tmp/lab.db" --no-report --no-upload "$tmp/plan.yaml" > "$tmp/run.log" 2>&1 &
rpid=$!
canceled=0
for _ in $(seq 1 600); do
	kill -0 $rpid 2> /dev/null || break
	for id in $(api "jobs/?ordering=-id&limit=5" 2> /dev/null | /usr/bin/python3 -c '
import json, sys
for j in json.load(sys.stdin)["results"]:
    if j["id"] > int(sys.argv[1]) and j["state"] not in ("Finished", "Canceling"): print(j["id"])' "$last" || true); do
		api "jobs/$id/cancel/" > /dev/null && canceled=$((canceled + 1))
		[ "$id" -le "$last" ] || last=$id
	done
	sleep 1
done
rc=0
wait $rpid || rc=$?
[ $rc = 3 ] || { tail -20 "$tmp/run.log"; fail "a canceled LAVA job: run exited $rc, expected 3"; }
[ "$canceled" -ge 2 ] || fail "canceled $canceled LAVA jobs, expected the job and its retry"
[ "$(q "select status from job")" = infra ] || fail "canceled job stored as $(q "select status from job")"
[ "$(q "select count(*) from event where kind='lava-canceled'")" -ge 2 ] ||
	{ q "select kind, message from event"; fail "no lava-canceled events"; }
[ "$(q "select count(*) from sample")" = 0 ] || fail "samples stored from a canceled job"

# 3. a kernel that does not boot: infrastructure, no samples
head -c 4096 /dev/urandom > "$tmp/bad-vmlinuz"
chmod 644 "$tmp/bad-vmlinuz"
lab "$ONE_BOARD" "$tmp/bad-vmlinuz"
run 3
[ "$(q "select status from job")" = infra ] || fail "bad kernel: job $(q "select status from job")"
kinds=$(q "select group_concat(distinct kind) from event where stage='lava'")
case $kinds in
*boot-timeout* | *lava-infra*) ;;
*) fail "bad kernel classified as: $kinds" ;;
esac
[ "$(q "select count(*) from sample")" = 0 ] || fail "samples stored from a job that did not boot"

# 4. one plan, a local simulated board and a LAVA board
SIMPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
lab "$ONE_BOARD
  - name: simb
    type: sim-board
    part: {label: \"sim industrial\", model: industrial-8g}
    console: {driver: pty, path: $tmp/sim/simb.tty}
    power: {driver: pdudaemon, url: \"http://127.0.0.1:$SIMPORT\", hostname: pdu, port: 1, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false}"
plan "fua"
"$EMMCLAB" sim start "$tmp/lab.yaml" --state-dir "$tmp/sim" > /dev/null
run 0
"$EMMCLAB" sim stop --state-dir "$tmp/sim" > /dev/null
[ "$(q "select count(*) from job where status='ok' and verified_mode=mode")" = 2 ] ||
	{ q "select mode, verified_mode, status from job"; fail "mixed plan: not 2 verified ok jobs"; }
[ "$(q "select group_concat(x, ' ') from (select b.name || ':' || i.executor as x from iteration i
       join job j on j.id=i.job_id join board b on b.id=j.board_id order by b.name)")" = "lslow:lava simb:local" ] ||
	fail "mixed plan executors: $(q "select executor from iteration")"
# the JSON report tells the LAVA figures apart: per value, executor, job URL and worker
"$EMMCLAB" report --db "$tmp/lab.db" --format json -o "$tmp/report.json" > /dev/null
lava_url=$(q "select i.job_url from iteration i join job j on j.id=i.job_id join board b on b.id=j.board_id where b.name='lslow'")
/usr/bin/python3 - "$tmp/report.json" "$lava_url" <<'PY' || fail "the JSON report does not say where the figures were measured"
import json, sys
groups = json.load(open(sys.argv[1]))["groups"]
where = {}
for g in groups:
    where.setdefault(g["board"], set()).update(zip(g["executor"], g["job_url"], g["worker"]))
assert where.get("lslow") == {("lava", sys.argv[2], "emmclab-worker")}, where
assert where.get("simb") == {("local", None, None)}, where
PY
echo "lava_farm: $((SECONDS - t0)) s"
