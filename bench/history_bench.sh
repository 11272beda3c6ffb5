#!/bin/bash
# history_bench.sh - the default nightly's suite on one generated simulated lab
# of N boards, K nights in a row into one database and one transcript
# directory, as a lab accumulates them: does a night get slower as the
# history grows?
#
#   bench/history_bench.sh BUILD_DIR [N [K]]        (default N 1024, K 6)
#
# bench/scale_gen.sh writes the lab and plan once; emmclab-sim serves it for
# all K nights; each night is `emmclab run` (with its comparison table and
# HTML report, as a nightly ends).  Printed per night: the wall time and, from
# the controller's stderr (lines stamped as they arrive), the start (to the
# plan's first line: config, locks, transcript directory, schedule estimate
# from past runs), the driving part (the summary line's "finished in") and the
# end (from the summary line to the exit: the comparison table and the HTML
# report, whose trends read past nights); then the database's size and the
# transcript directory's files.  Environment: CONSOLE=pty|socket (default
# socket), TMPDIR=DIR for the work directory (docs/benchmarks.md uses
# /dev/shm), KEEP=1 keeps it.  Figures and command: docs/benchmarks.md.
set -euo pipefail
build=${1:?usage: history_bench.sh BUILD_DIR [N [K]]}
n=${2:-1024}
k=${3:-6}
case "$n$k" in *[!0-9]*) echo "history_bench: N and K are whole numbers" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
E=$build/harness/emmclab
SIM=$build/boards/sim/emmclab-sim
[ -x "$E" ] && [ -x "$SIM" ] || { echo "history_bench: no emmclab or emmclab-sim in $build" >&2; exit 2; }
d=$(mktemp -d "${TMPDIR:-/tmp}/emmclab-history-bench-XXXXXX")
simpid=
cleanup() {
	local rc=$?
	# the simulator is stopped and waited for; whatever its status (143 when
	# a signal ended it) must not end this trap early under set -e, before the
	# work directory is removed
	if [ -n "$simpid" ]; then kill "$simpid" 2>/dev/null && wait "$simpid" 2>/dev/null || true; fi
	[ "${KEEP:-0}" = 1 ] && echo "work dir kept: $d" || rm -rf "$d"
	exit "$rc"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
CONSOLE=${CONSOLE:-socket} "$here/scale_gen.sh" "$n" "$d" "$port"
mkfifo "$d/ready"
"$SIM" --lab "$d/lab.yaml" --state-dir "$d/sim" --ready-fd 3 3>"$d/ready" 2>"$d/sim.log" &
simpid=$!
read -r _ < "$d/ready"
# stamp: each stderr line with the time it arrived (seconds since the epoch)
stamp='import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))'
printf '%5s %8s %7s %8s %6s %5s %9s %11s\n' night wall start driving end rc db_MiB transcripts
for i in $(seq 1 "$k"); do
	t0=$(date +%s.%N)
	set +e
	"$E" run --no-upload --transcripts "$d/transcripts" "$d/plan.yaml" > "$d/run.out" \
		2> >(python3 -u -c "$stamp" > "$d/run.err")
	rc=$?
	set -e
	t1=$(date +%s.%N)
	sleep 0.2 # the stamping process's last lines
	awk -v t0="$t0" -v t1="$t1" -v i="$i" -v rc="$rc" '
		NR == 1 { s = $1 }
		/finished in/ { f = $1; for (j = 1; j <= NF; j++) if ($j == "in") drv = $(j + 1) }
		END { printf "%5d %7.2fs %6.2fs %7.1fs %5.2fs %5d", i, t1 - t0, s - t0, drv, t1 - f, rc }' "$d/run.err"
	printf ' %9.1f %11d\n' "$(awk -v b="$(stat -c %s "$d/lab.db")" 'BEGIN { print b / 1048576 }')" \
		"$(find "$d/transcripts" -type f | wc -l)"
done
