#!/bin/bash
# lava_bench.sh - what following LAVA jobs costs the controller (docs/benchmarks.md):
#  1. one real job on the test farm (QEMU TCG, the virtual board): controller
#     CPU, requests, bytes of log fetched and parsed, and the delay between
#     LAVA finishing the job and its samples journalled;
#  2. N (default 200) jobs that stay queued (tag "parked": its only device is
#     on a worker that never runs): the controller's CPU per second of wall
#     time while it follows all of them.
#
#   bench/lava_bench.sh BUILD_DIR [N] [SECONDS]
# Needs the farm (harness/tests/servers/lava_farm.sh start) and the virtual
# board's artefacts (it builds them like scenario lava_farm).
set -euo pipefail
BUILD=$(cd "${1:?usage: lava_bench.sh BUILD_DIR [N] [SECONDS]}" && pwd)
N=${2:-200}
SECS=${3:-120}
SRC=$(cd "$(dirname "$0")/.." && pwd)
EMMCLAB=$BUILD/harness/emmclab
FARM=$SRC/harness/tests/servers/lava_farm.sh
"$FARM" status > /dev/null 2>&1 || { echo "start the farm first: $FARM start" >&2; exit 2; }
eval "$("$FARM" env)"
TOKEN=$(cat "$LAVA_TOKEN_FILE")
api() { curl -fsS --max-time 30 -H "Authorization: Token $TOKEN" "${LAVA_URL}api/v0.2/$1"; }
KVER=$(ls /boot/vmlinuz-6.1.* | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
tmp=$(mktemp -d /tmp/emmclab-lava-bench.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
AGENT=$BUILD/suites/agent/emmclab-agent
[ ! -x "$AGENT-dut" ] || AGENT=$AGENT-dut
mods=$("$SRC/boards/kernel/build-modules.sh" --kver "$KVER" | tail -1)
"$SRC/boards/virt/mkinitramfs.sh" --agent "$AGENT" --modules "$mods" --kver "$KVER" \
	--out "$tmp/initramfs.cpio.gz" > /dev/null

lab() { # NBOARDS TAG
	{
		cat <<EOF
include:
  - $SRC/boards/types/qemu-vemmc.yaml
lab:
  name: lava-bench
  transcripts: $tmp/transcripts
  lava: {url: "$LAVA_URL", user: $LAVA_USER, token_file: $LAVA_TOKEN_FILE}
kernels:
  - name: debian-6.1-vemmc
    image: /boot/vmlinuz-$KVER
    initrd: $tmp/initramfs.cpio.gz
    cmdline: "console=ttyS0,115200"
defaults:
  enabled: true
boards:
EOF
		for i in $(seq 1 "$1"); do
			printf '  - name: l%d\n    type: qemu-vemmc\n    part: {label: "vemmc", model: slowrel}\n' "$i"
			printf '    lava: {device_type: qemu, tags: [%s], boot_timeout: 3m, test_timeout: 10m}\n' "$2"
		done
	} > "$tmp/lab.yaml"
	cat > "$tmp/plan.yaml" <<EOF
suite:
  name: lava-bench
  modes: [fua]
  iterations: 1
  precondition_passes: 0
  workloads:
    - name: androbench
      args: {seq_mib: 4, req_mib: 1, rand_mib: 4, rand_ios: 64, count: 1}
plan:
  name: lava-bench
  lab: lab.yaml
  suites: [lava-bench]
EOF
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

# 1. one real job
lab 1 emmclab
/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$EMMCLAB" run --db "$tmp/one.db" --no-report --no-upload \
	"$tmp/plan.yaml" > "$tmp/one.log" 2>&1
read -r u s e < "$tmp/time"
lid=$(sqlite3 "$tmp/one.db" "select job_url from iteration" | sed 's|.*/||')
echo "one LAVA job ($lid): controller CPU ${u}s user + ${s}s sys over ${e}s"
grep -E "lava: [0-9]+ requests|samples journalled" "$tmp/one.log" | sed 's/^\[[0-9:]*\] /  /'
end=$(api "jobs/$lid/" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["end_time"])')
echo "  LAVA end_time $end; run log: $(grep -o '^\[[0-9:]*\].*samples journalled.*' "$tmp/one.log" | cut -c2-9)"

# 2. N jobs that stay queued
lab "$N" parked
before=$(api "jobs/?ordering=-id&limit=1" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; print(r[0]["id"] if r else 0)')
"$EMMCLAB" run --db "$tmp/many.db" --no-report --no-upload "$tmp/plan.yaml" > "$tmp/many.log" 2>&1 &
pid=$!
# wait until all are submitted, then measure
for _ in $(seq 1 600); do
	[ "$(grep -c 'submitted (iteration' "$tmp/many.log" || true)" -ge "$N" ] && break
	sleep 1
done
sub=$(grep -c 'submitted (iteration' "$tmp/many.log" || true)
c0=$(cpu_ticks $pid)
sleep "$SECS"
c1=$(cpu_ticks $pid)
kill -TERM $pid
sleep 1
kill -TERM $pid 2> /dev/null || true
wait $pid 2> /dev/null || true
pct=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v t="$SECS" 'BEGIN { printf "%.2f", (b - a) / hz / t * 100 }')
echo "$sub queued LAVA jobs followed for ${SECS}s: controller CPU ${pct}% of a core"
grep -E "lava: [0-9]+ requests" "$tmp/many.log" | sed 's/^\[[0-9:]*\] /  /'
# the queued jobs are the benchmark's: cancel them
for id in $(api "jobs/?ordering=-id&limit=$((N + 10))" | /usr/bin/python3 -c '
import json, sys
for j in json.load(sys.stdin)["results"]:
    if j["id"] > int(sys.argv[1]) and j["state"] == "Submitted": print(j["id"])' "$before"); do
	api "jobs/$id/cancel/" > /dev/null || true
done
