#!/usr/bin/env bash
# soak.sh - bounded resources (docs/reliability.md), measured on the real binary.
#
#   EMMCLAB=build/harness/emmclab EMMCLAB_SRC=. bench/soak.sh [--iterations N] [--flood-seconds S]
#                                                             [--flood-only]
#
# 1. flood: a board whose console prints without end, in 256 KiB lines with no
#    newline for most of them, while the controller waits for U-Boot.  The
#    controller's RSS must stay flat and the transcript within its cap
#    (lab.transcript_max, here 1 MiB: the file plus one rotated copy).
# 2. soak: a simulated night of N (default 1000) stored iterations on two
#    boards; every 2 s the controller's open fds (/proc/PID/fd), live children
#    and RSS are sampled.  Fds and children must be flat (the same at the end as
#    after the first 10% of the iterations, give or take 2), RSS may grow by at
#    most 25% from that point.
# Prints the figures as Markdown; exits 1 when a bound is broken.
set -uo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
target=1000 flood_s=20 flood_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--flood-only) flood_only=1 ;;
	--iterations) target=$2; shift ;;
	--flood-seconds) flood_s=$2; shift ;;
	*) echo "usage: soak.sh [--iterations N] [--flood-seconds S]" >&2; exit 2 ;;
	esac
	shift
done
T=$(mktemp -d /tmp/emmclab-soak.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
status=0
bad() { echo "FAIL: $*" >&2; status=1; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
nfds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
nkids() { ps --no-headers --ppid "$1" 2>/dev/null | wc -l; }

# ---- 1. flood ---------------------------------------------------------------
cat > "$T/flood.sh" <<'EOF'
#!/bin/sh
# 256 KiB lines of 'x' without end; every 8th one ends in a newline
python3 -c '
import sys
line = b"x" * 262144
n = 0
while True:
    sys.stdout.buffer.write(line + (b"\r\n" if n % 8 == 7 else b""))
    n += 1
'
EOF
cat > "$T/flood.yaml" <<EOF
types:
  - name: flood
    timeouts: {power: 5s, first_output: 3s, bootloader: ${flood_s}s, boot: 5s, login: 5s, command: 10s}
    modes:
      fua: {cmdline: "mmc_block.fua=on"}
    retries: 0
lab:
  name: flood
  transcripts: $T/transcripts
  transcript_max: 1MiB
boards:
  - name: f1
    type: flood
    console: {driver: exec, command: [sh, $T/flood.sh]}
    power: {driver: exec, off_time: 10ms, on: ["true"], off: ["true"]}
EOF
# a small ASan quarantine in a sanitizer build: freed memory held there is not growth
ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=4 \
	"$EMMCLAB" board f1 boot --lab "$T/flood.yaml" --mode fua >"$T/flood.out" 2>"$T/flood.err" &
pid=$!
# The baseline is the RSS once the flood is under way: 2 s after the
# transcripts first hold 1 MiB (four lines through every buffer), not 2 s
# after the start; on a loaded machine (an ASan suite at -j2) the
# controller may not have read a byte by then.
peak=0 first= flowing=
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
	r=$(rss_kib "$pid")
	[ -n "$r" ] || break
	if [ -z "$flowing" ]; then
		b=$(du -cb "$T"/transcripts/* 2>/dev/null | tail -1 | cut -f1)
		[ "${b:-0}" -lt 1048576 ] || flowing=$(date +%s)
	elif [ -z "$first" ] && [ $(($(date +%s) - flowing)) -ge 2 ]; then
		first=$r
	fi
	[ -z "$first" ] || [ "$r" -le "$peak" ] || peak=$r
	sleep 0.5
done
wait "$pid"
rc=$?
secs=$(($(date +%s) - start))
tbytes=$(du -cb "$T"/transcripts/* 2>/dev/null | tail -1 | cut -f1)
tfiles=$(ls "$T"/transcripts | wc -l)
echo "## flood: a console printing 256 KiB lines without end for ${secs} s"
echo
echo "| exit | controller RSS 2 s into the flood | peak RSS after it | transcript files | transcript bytes (cap 1 MiB + 1 rotated) |"
echo "|---|---|---|---|---|"
echo "| $rc | ${first:-?} KiB | $peak KiB | $tfiles | $tbytes |"
echo
[ "$rc" = 3 ] || bad "flood: exit $rc, expected 3 (bootloader never answered)"
if [ -z "$first" ]; then
	bad "flood: no baseline: the transcripts never held 1 MiB or the run ended within 2 s of that"
else
	[ "$peak" -le $((first + 16384)) ] || bad "flood: RSS grew from $first to $peak KiB"
fi
[ "${tbytes:-0}" -le $((2 * 1048576 + 65536)) ] || bad "flood: transcripts hold $tbytes bytes, over the cap"

[ "$flood_only" = 0 ] || exit $status

# ---- 2. soak ------------------------------------------------------------------
# two boards x 2 modes x 2 workloads x ITER iterations >= target
iter=$(((target + 7) / 8))
cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: soak
  transcripts: $T/transcripts-soak
  sim: {time_scale: 1000, seed: 11, autoboot_floor: 150ms}
types:
  - name: soak
    host: sim
    has_cqe: true
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 2h}
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
boards:
  - name: s1
    type: soak
    part: {label: "DUT5", model: industrial-8g}
    console: {driver: pty, path: $T/sim/s1.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 1, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
  - name: s2
    type: soak
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/s2.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/s2", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true}
YAML
cat > "$T/plan.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: $iter
    order: interleave
    workloads: [{name: androbench}, {name: fscopy}]
plan:
  name: soak
  lab: lab.yaml
  suites: [s]
  budget: 12h
YAML
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
start=$(date +%s)
"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/plan.yaml" >"$T/out" 2>"$T/err" &
pid=$!
: >"$T/samples"
while kill -0 "$pid" 2>/dev/null; do
	n=$(sqlite3 "$T/lab.db" "select count(*) from iteration" 2>/dev/null || echo 0)
	r=$(rss_kib "$pid")
	[ -n "$r" ] || break
	echo "$(($(date +%s) - start)) ${n:-0} $(nfds "$pid") $(nkids "$pid") $r" >>"$T/samples"
	sleep 2
done
wait "$pid"
rc=$?
secs=$(($(date +%s) - start))
stored=$(sqlite3 "$T/lab.db" "select count(*) from iteration")
"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1
echo "## soak: $stored iterations on two simulated boards in $secs s (exit $rc)"
echo
echo "| elapsed s | iterations stored | open fds | children | RSS KiB |"
echo "|---|---|---|---|---|"
python3 - "$T/samples" "$stored" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
total = int(sys.argv[2])
if not rows:
    sys.exit(0)
marks, shown = [0.1, 0.25, 0.5, 0.75, 1.0], []
for m in marks:
    r = next((r for r in rows if r[1] >= m * total), rows[-1])
    if r not in shown:
        shown.append(r)
for r in [rows[0]] + shown:
    print("| %d | %d | %d | %d | %d |" % tuple(r))
fds, kids, rss = [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows]
print()
print("fds %d..%d, children %d..%d, RSS %d..%d KiB over %d samples" %
      (min(fds), max(fds), min(kids), max(kids), min(rss), max(rss), len(rows)))
PY
echo
[ "$rc" = 0 ] || bad "soak: run exit $rc"
[ "$stored" -ge "$target" ] || bad "soak: $stored iterations stored, wanted $target"
python3 - "$T/samples" "$stored" <<'PY' || status=1
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
total = int(sys.argv[2])
after = [r for r in rows if r[1] >= 0.1 * total]
if len(after) < 3:
    sys.exit("soak: too few samples after the first 10% of the iterations")
ref, late = after[0], after[1:]
errs = []
if max(r[2] for r in late) > ref[2] + 2 or max(r[2] for r in after[-3:]) > ref[2] + 2:
    errs.append("open fds grew: %d -> %d" % (ref[2], max(r[2] for r in late)))
if max(r[3] for r in late) > max(ref[3], 2) + 2:
    errs.append("children grew: %d -> %d" % (ref[3], max(r[3] for r in late)))
if max(r[4] for r in late) > ref[4] * 1.25:
    errs.append("RSS grew: %d -> %d KiB" % (ref[4], max(r[4] for r in late)))
if errs:
    sys.exit("FAIL: " + "; ".join(errs))
PY
exit $status
