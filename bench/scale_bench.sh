#!/bin/bash
# scale_bench.sh - the default nightly's suite on generated simulated labs of
# N boards: wall time against one board, controller and simulator CPU, RSS.
#
#   bench/scale_bench.sh BUILD_DIR [N...]        (default N: 1 64 256 1024)
#
# For each N: bench/scale_gen.sh writes the lab (N four-mode sim boards) and
# the plan; emmclab-sim serves it (started directly, so its CPU and RSS are
# its own), `emmclab run` runs the plan under /usr/bin/time; then the
# simulator is stopped.  Printed per N: wall time and its ratio to the N=1
# run, controller CPU-seconds (user + sys) and per stored iteration (whole
# run, and while driving the boards: CPU at the run's summary line),
# simulator CPU-seconds, controller peak RSS (whole run, including the
# comparison table and HTML report at its end, which load every sample), its
# RSS while driving the boards (sampled every 0.25 s until the run's summary
# line) and that per board, the simulator's peak RSS, the run's exit code,
# the whole machine's busy CPU-seconds from the start to the summary line
# (every process and kernel thread, both cores) and of that what neither the
# controller nor the simulator was charged (kernel threads: a pty write's
# flip-buffer work runs in a kworker; this script's own sampling, a few
# processes every 0.25 s), the controller's CPU while driving over the
# driving part's wall (ctl_cores: 1.00 is one core busy all the time; the
# wall cannot be shorter than one controller's CPU), and the load average
# before and after.
# Controller and simulator share the machine.
# Environment: CONSOLE=pty (default) or socket: the boards' consoles
# (bench/scale_gen.sh); SHARDS=K runs the night as K controller processes at
# once, each on its shard of the boards (the N=1 run stays one controller);
# RUNS=R repeats each N R times and reports the median run (by
# wall time), then every run's wall time and its ratio to the N=1 median
# (in the order they ran); KEEP=1 keeps the work directory; CALLGRIND=1 also
# runs the controller of a 64-board night under callgrind, then the simulator of an
# 8-board night, and prints their instructions per iteration (independent of
# the machine's load and speed; slow); TMPDIR=DIR puts the
# work directory (database, journal, transcripts, simulator state) under DIR
# instead of /tmp (docs/benchmarks.md: /dev/shm, as journal-less ext4 makes
# creating files expensive).
set -euo pipefail
build=${1:?usage: scale_bench.sh BUILD_DIR [N...]}
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 64 256 1024)
runs=${RUNS:-1}
shards=${SHARDS:-1}
case $shards in ''|*[!0-9]*|0) echo "scale_bench: SHARDS must be a whole number >= 1" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
E=$build/harness/emmclab
SIM=$build/boards/sim/emmclab-sim
[ -x "$E" ] && [ -x "$SIM" ] || { echo "scale_bench: no emmclab or emmclab-sim in $build" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/emmclab-scale-bench-XXXXXX")
simpid=
cleanup() {
	local rc=$? # the script's own status, not that of the simulator it stops
	# the simulator is stopped and waited for; whatever its status (143 when
	# a signal ended it) must not end this trap early under set -e, before the
	# work directory is removed
	if [ -n "$simpid" ]; then kill "$simpid" 2>/dev/null && wait "$simpid" 2>/dev/null || true; fi
	[ "${KEEP:-0}" = 1 ] && echo "work dir kept: $tmp" || rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tck=$(getconf CLK_TCK)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# sim_start DIR [WRAPPER...]: start emmclab-sim on DIR/lab.yaml (under
# WRAPPER, e.g. valgrind), wait for its ready line
sim_start() {
	local d=$1
	shift
	rm -f "$d/ready"; mkfifo "$d/ready"
	"$@" "$SIM" --lab "$d/lab.yaml" --state-dir "$d/sim" --ready-fd 3 3>"$d/ready" 2>"$d/sim.log" &
	simpid=$!
	local line
	read -r line < "$d/ready" || true
	case $line in ready*) ;; *) echo "scale_bench: simulator did not start: $line" >&2; cat "$d/sim.log" >&2; exit 3 ;; esac
}
# sim_stop: the simulator's CPU seconds and peak RSS (KiB) into SIMF, then
# stop it and wait for it to exit (in this shell, not a $(...) subshell: a
# subshell cannot wait for this shell's child, so a 1,024-board simulator
# still tearing down overlapped the next run, and simpid stayed set)
sim_stop() {
	local st hwm
	st=$(awk '{ print $14 + $15 }' "/proc/$simpid/stat")
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$simpid/status")
	kill "$simpid"; wait "$simpid" 2>/dev/null || true
	simpid=
	SIMF=$(awk -v t="$st" -v k="$tck" -v h="$hwm" 'BEGIN { printf "%.2f %d\n", t / k, h }')
}

# one N: prints "wall ccpu iters scpu crss srss rc" (and the driving and
# machine columns).  SHARDS=K: K controllers at once, one a shard's plan
# (scale_gen.sh), each under /usr/bin/time; the wall is from the start of the
# first to the exit of the last, the CPU and RSS columns are their sums, the
# driving part lasts until the last one's summary line (so other_cpu_s also
# holds the table and report of a controller that got there first).
one() {
	local n=$1 d=$tmp/n$1 k sh=$shards
	[ "$n" -ge "$sh" ] || sh=1 # a shard of no board is no plan
	rm -rf "$d"; mkdir -p "$d"
	SHARDS=$sh "$here/scale_gen.sh" "$n" "$d" "$(free_port)"
	sim_start "$d"
	local rc=0 plans=()
	if [ "$sh" = 1 ]; then plans=("$d/plan.yaml"); else for k in $(seq 1 "$sh"); do plans+=("$d/plan-$k.yaml"); done; fi
	local tps=() t0=$EPOCHREALTIME
	for k in "${!plans[@]}"; do
		/usr/bin/time -f "%e %U %S %M" -o "$d/time.$k" "$E" run --no-upload --transcripts "$d/transcripts" \
			"${plans[$k]}" > "$d/run.$k.out" 2> "$d/run.$k.err" &
		tps+=($!)
	done
	local cps=() drss=0 r i alive driving dcpus=() sum
	# the whole machine's busy CPU (all processes and kernel threads) and the
	# simulator's, from the start to the run's summary line
	local m0 m1='' s0 s1='' td=$t0
	busy_ticks; m0=$BUSY
	proc_cpu "$simpid"; s0=$PCPU
	# RSS while the boards are driven: sampled until the runs' summary lines
	# (the comparison table and HTML report that follow load every sample);
	# with shell builtins, so that the sampling costs the machine little
	while :; do
		alive=0 driving=0 sum=0
		for i in "${!tps[@]}"; do
			kill -0 "${tps[$i]}" 2>/dev/null && alive=1 || continue
			[ -n "${cps[$i]:-}" ] || cps[$i]=$(pgrep -P "${tps[$i]}" || true)
			[ -n "${cps[$i]}" ] || { driving=1; continue; }
			grep -q "finished in" "$d/run.$i.err" && continue
			driving=1
			r=
			while read -r k v _; do [ "$k" = VmRSS: ] && r=$v; done < "/proc/${cps[$i]}/status" 2>/dev/null || true
			sum=$((sum + ${r:-0}))
			proc_cpu "${cps[$i]}" && dcpus[$i]=$PCPU
		done
		[ "$alive" = 1 ] || break
		if [ "$driving" = 1 ]; then
			[ "$sum" -gt "$drss" ] && drss=$sum
			busy_ticks; m1=$BUSY
			td=$EPOCHREALTIME
			proc_cpu "$simpid"; s1=$PCPU
		fi
		sleep 0.25
	done
	for i in "${!tps[@]}"; do wait "${tps[$i]}" || rc=$?; done
	local t1=$EPOCHREALTIME
	sim_stop
	local simf=$SIMF
	local iters; iters=$(sqlite3 "$d/lab.db" 'SELECT count(*) FROM iteration')
	# sums over the controllers (the last line of each time file: a failed run's
	# has a status line before it); one controller's wall is its /usr/bin/time's
	local w c m dcpu=0
	for i in "${!tps[@]}"; do dcpu=$((dcpu + ${dcpus[$i]:-0})); done
	read -r w c m < <(for i in "${!tps[@]}"; do tail -n 1 "$d/time.$i"; done |
		awk '{ w = $1; c += $2 + $3; m += $4 } END { print w, c, m }')
	[ "$sh" = 1 ] || w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	# kernel threads and everything else: busy minus controllers and simulator
	local other; other=$(awk -v m0="$m0" -v m1="${m1:-$m0}" -v s0="$s0" -v s1="${s1:-$s0}" -v c="$dcpu" -v k="$tck" \
		'BEGIN { printf "%.2f %.2f", (m1 - m0) / k, (m1 - m0 - (s1 - s0) - c) / k }')
	# the controllers' CPU while driving over the driving part's wall (to
	# the last sample before the summary line): 1.00 is one core all the time
	local cores; cores=$(awk -v t="$dcpu" -v k="$tck" -v a="$t0" -v b="$td" 'BEGIN { printf "%.2f", (b > a ? t / k / (b - a) : 0) }')
	echo "$w $c $iters $simf $m $drss $(awk -v t="$dcpu" -v k="$tck" 'BEGIN { print t / k }') $rc $other $cores"
}
# busy_ticks: BUSY = the machine's CPU ticks not idle or iowait, all CPUs
busy_ticks() {
	local _c u n sy _id _io irq sirq st _
	read -r _c u n sy _id _io irq sirq st _ < /proc/stat
	BUSY=$((u + n + sy + irq + sirq + st))
}
# proc_cpu PID: PCPU = its user + system ticks (comm has no space: ours)
proc_cpu() {
	local f
	read -ra f < "/proc/$1/stat" 2>/dev/null || return 1
	PCPU=$((f[13] + f[14]))
}

[ "$shards" = 1 ] || echo "controllers: $shards at once, each on its shard of the boards (CPU and RSS: their sums)"
printf 'load average before: %s (%s CPUs)\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
printf '%6s %8s %6s %9s %7s %11s %11s %9s %11s %11s %9s %9s %3s %10s %11s %9s\n' boards wall ratio ctl_cpu_s iters ctl_ms/iter drive_ms/it sim_cpu_s ctl_peak_MB ctl_drive_MB KB/board sim_rss_MB rc busy_cpu_s other_cpu_s ctl_cores
base=
for n in "${sizes[@]}"; do
	: > "$tmp/res"
	for _ in $(seq "$runs"); do one "$n" >> "$tmp/res"; done
	# the median run by wall time
	read -r w c it sc srss m drss dc rc mb mo cores < <(sort -n "$tmp/res" | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }')
	[ "$n" = 1 ] && base=$w
	ratio=$( [ -n "$base" ] && awk -v w="$w" -v b="$base" 'BEGIN { printf "%.2fx", w / b }' || echo "-")
	awk -v n="$n" -v w="$w" -v r="$ratio" -v c="$c" -v it="$it" -v sc="$sc" -v m="$m" -v dr="$drss" -v dc="$dc" -v sr="$srss" -v rc="$rc" -v mb="$mb" -v mo="$mo" -v cr="$cores" 'BEGIN {
		printf "%6d %7.2fs %6s %9.2f %7d %11.3f %11.3f %9.2f %11.1f %11.1f %9.1f %9.1f %3d %10.2f %11.2f %9.2f\n",
			n, w, r, c, it, it ? 1000 * c / it : 0, it ? 1000 * dc / it : 0, sc, m / 1024, dr / 1024, dr / n, sr / 1024, rc, mb, mo, cr }'
	# every run's wall time and ratio, in the order they ran (the spread the
	# median hides)
	[ "$runs" = 1 ] || awk -v b="$base" '{ w = w sprintf(" %.2f", $1); r = r sprintf(" %.2fx", b ? $1 / b : 0) }
		END { printf "%6s  walls:%s\n%6s  ratios:%s\n", "", w, "", r }' "$tmp/res"
done
printf 'load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

# cg_night WHO N: an N-board night with WHO (controller or simulator) under
# callgrind and the other program as it is; prints WHO's instructions per
# stored iteration.  The simulator stops on SIGTERM as always, and callgrind
# then writes its count to the simulator's log.
cg_night() {
	local who=$1 n=$2 d=$tmp/cg-$1 rc=0 ir it log label='' tail=''
	local cg=(valgrind --tool=callgrind --callgrind-out-file="$d/callgrind.out")
	rm -rf "$d"; mkdir -p "$d"
	"$here/scale_gen.sh" "$n" "$d" "$(free_port)"
	if [ "$who" = simulator ]; then
		sim_start "$d" "${cg[@]}"
		cg=() log=$d/sim.log label='simulator, '
	else
		sim_start "$d"
		log=$d/run.err
	fi
	"${cg[@]}" "$E" run --no-upload --transcripts "$d/transcripts" "$d/plan.yaml" > /dev/null 2> "$d/run.err" || rc=$?
	sim_stop
	ir=$(awk '/Collected/ { print $NF }' "$log")
	it=$(sqlite3 "$d/lab.db" 'SELECT count(*) FROM iteration')
	[ "$who" = simulator ] && tail=" (run exit $rc)"
	awk -v ir="$ir" -v it="$it" -v n="$n" -v l="$label" -v t="$tail" 'BEGIN { printf "callgrind, %s%d boards: %d instructions, %d iterations, %.0f instructions per iteration%s\n", l, n, ir, it, it ? ir / it : 0, t }'
	[ "${KEEP:-0}" = 1 ] && echo "${label}callgrind profile: $d/callgrind.out"
	return 0
}

# the controller of a 64-board night, then the simulator of an 8-board one
# (valgrind runs it some 50 times slower)
if [ "${CALLGRIND:-0}" = 1 ]; then
	cg_night controller 64
	cg_night simulator 8
fi
