#!/bin/bash
# console_transport.sh [N] [ROUNDS] [REPEATS] - the machine's CPU per console
# round trip (16 bytes each way) with N consoles busy at once, for a pty, a
# Unix stream socket and TCP on 127.0.0.1 (bench/console_transport.c).  The
# CPU is the whole machine's busy time from /proc/stat around the run, so the
# kernel threads a transport needs (a pty's flip-buffer work runs in a
# kworker) count; median of REPEATS (default 3), transports alternating.
# Needs a build in $EMMCLAB_BIN (default build/).  Figures: docs/benchmarks.md.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${EMMCLAB_BIN:-$SRC/build}/bench/console_transport
N=${1:-256}
R=${2:-400}
REP=${3:-3}
[ -x "$BIN" ] || { echo "console_transport.sh: no $BIN (build first)" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
tck=$(getconf CLK_TCK)
declare -A res
for _ in $(seq "$REP"); do
	for k in pty unix tcp; do
		b0=$(busy)
		"$BIN" "$k" "$N" "$R" > /dev/null
		b1=$(busy)
		res[$k]+="$(awk -v d=$((b1 - b0)) -v k="$tck" -v n="$N" -v r="$R" 'BEGIN { printf "%.2f", 1e6 * d / k / (n * r) }') "
	done
done
printf 'load average: %s; %d consoles, %d round trips each, median of %d\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$N" "$R" "$REP"
for k in pty unix tcp; do
	printf '%-5s %6s us of machine CPU a round trip (runs: %s)\n' "$k" \
		"$(echo "${res[$k]}" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" "${res[$k]% }"
done
