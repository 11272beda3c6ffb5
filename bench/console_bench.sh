#!/bin/bash
# Console engine benchmarks (docs/benchmarks.md, "Console engine"):
#  1. expect-engine throughput on a generated boot-log stream (4 KiB chunks, 10 boot
#     patterns) against Tcl expect (spawn cat FILE; expect ... exp_continue) on the same file,
#     medians of RUNS runs each, and the ratio;
#  2. idle cost of IDLE_N attached pty consoles over IDLE_S seconds (getrusage).
# Usage: bench/console_bench.sh            (MB=100 RUNS=5 IDLE_N=64 IDLE_S=10 by default)
#        MB=5 RUNS=3 IDLE_S=2 bench/console_bench.sh   (quick)
# Prints "key value" result lines; exits 1 if a requirement is not met
# (ratio >= 20, emmclab >= 0.4 MB/s, idle < 1 % of a core, pattern counts as generated).
set -euo pipefail
SRC=${EMMCLAB_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
MB=${MB:-100}
RUNS=${RUNS:-5}
IDLE_N=${IDLE_N:-64}
IDLE_S=${IDLE_S:-10}
command -v expect >/dev/null || { echo "Tcl expect not installed (Debian package expect)" >&2; exit 2; }
work=$(mktemp -d /tmp/emmclab-cbench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Built from the sources with the project's release flags, independent of any build dir.
L=$SRC/harness/lib
gcc -std=c11 -D_GNU_SOURCE -O2 -g -DNDEBUG -I"$L" -I"$SRC/harness/common" "$SRC/bench/console_bench.c" \
	"$L/util.c" "$SRC/harness/common/hex.c" "$L/loop.c" "$L/expect.c" "$L/transcript.c" "$L/console.c" \
	"$L/console/pty.c" "$L/console/tcp.c" "$L/console/serial.c" "$L/console/exec.c" \
	"$L/opt.c" "$L/cfgnode.c" "$L/driver.c" $(pkg-config --cflags --libs libserialport yaml-0.1 libcrypto) -lm \
	-o "$work/console_bench"
B=$work/console_bench

"$B" gen "$work/boot.log" "$MB" >"$work/gen.txt"
bytes=$(awk '$1=="bytes"{print $2}' "$work/gen.txt")
echo "stream_bytes $bytes"

# Tcl expect baseline with the same patterns, default match_max.
{
	echo 'log_user 0'
	echo 'set timeout -1'
	echo 'spawn -noecho cat [lindex $argv 0]'
	echo 'set n 0'
	echo 'expect {'
	while IFS=$'\t' read -r kind pat; do
		echo "  -$kind {$pat} {incr n; exp_continue}"
	done < <("$B" patterns)
	echo '  eof {}'
	echo '}'
	echo 'puts "matches $n"'
} >"$work/baseline.exp"

median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f\n", m}'; }

: >"$work/ours.txt"
: >"$work/tcl.txt"
for ((i = 0; i < RUNS; i++)); do
	"$B" expect "$work/boot.log" >"$work/run.txt"
	awk '$1=="bytes"{print $6}' "$work/run.txt" >>"$work/ours.txt"
	t0=$(date +%s%N)
	expect "$work/baseline.exp" "$work/boot.log" >"$work/tclrun.txt"
	t1=$(date +%s%N)
	awk -v b="$bytes" -v ns=$((t1 - t0)) 'BEGIN{printf "%.3f\n", b/1e6/(ns/1e9)}' >>"$work/tcl.txt"
done
ours=$(median <"$work/ours.txt")
tcl=$(median <"$work/tcl.txt")
ratio=$(awk -v a="$ours" -v b="$tcl" 'BEGIN{printf "%.1f", a/b}')
echo "emmclab_expect_MBps_runs $(tr '\n' ' ' <"$work/ours.txt")"
echo "tcl_expect_MBps_runs $(tr '\n' ' ' <"$work/tcl.txt")"
echo "emmclab_expect_MBps_median $ours"
echo "tcl_expect_MBps_median $tcl"
echo "ratio $ratio"
echo "tcl_matches $(awk '{print $2}' "$work/tclrun.txt")"
echo "emmclab_matches $(awk '$1=="count"{s+=$3} END{print s}' "$work/run.txt")"

fail=0
# Every unanchored pattern must be found exactly as often as the generator wrote it.
while read -r _ idx want; do
	got=$(awk -v i="$idx" '$1=="count" && $2==i {print $3}' "$work/run.txt")
	if [ "$got" != "$want" ]; then
		echo "FAIL: pattern $idx matched $got times, generated $want" >&2
		fail=1
	fi
done < <(grep '^expected' "$work/gen.txt")
awk -v r="$ratio" 'BEGIN{exit !(r >= 20)}' || { echo "FAIL: ratio $ratio < 20" >&2; fail=1; }
awk -v o="$ours" 'BEGIN{exit !(o > 0.4)}' || { echo "FAIL: $ours MB/s <= 4 Mbaud" >&2; fail=1; }

"$B" idle "$IDLE_N" "$IDLE_S" >"$work/idle.txt"
read -r _ n _ wall _ cpu _ pct <"$work/idle.txt"
echo "idle_consoles $n"
echo "idle_wall_s $wall"
echo "idle_cpu_s $cpu"
echo "idle_cpu_percent $pct"
awk -v p="$pct" 'BEGIN{exit !(p < 1)}' || { echo "FAIL: idle CPU $pct% >= 1%" >&2; fail=1; }
exit $fail
