#!/bin/sh
# run_long.sh BUILD_DIR SECONDS [TARGET...] - the documented long fuzz run
# (docs/reliability.md): each target (default all) for SECONDS on a copy of its
# seed corpus plus its regressions, two at a time; prints one Markdown table row
# per target: executions, cov, ft, corpus size, crashes (files written by
# libFuzzer).  Logs and crash files stay in BUILD_DIR/fuzz-long/.
# BUILD_DIR is a clang build with -DEMMCLAB_FUZZ=ON.
set -eu
build=${1:?usage: run_long.sh BUILD_DIR SECONDS [TARGET...]}
secs=${2:?seconds per target}
shift 2
src=$(cd "$(dirname "$0")" && pwd)
targets=${*:-$(cd "$src" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | grep -v board)}
out=$build/fuzz-long
mkdir -p "$out"
one() {
	t=$1
	mkdir -p "$out/corpus_$t" "$out/crash_$t"
	regress=
	[ ! -d "$src/regress_$t" ] || regress=$src/regress_$t
	"$build/harness/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=4096 -timeout=20 \
		-print_final_stats=1 -artifact_prefix="$out/crash_$t/" "$out/corpus_$t" "$src/corpus_$t" \
		$regress >"$out/$t.log" 2>&1 || true
}
set -- $targets
while [ $# -gt 0 ]; do
	one "$1" &
	a=$!
	if [ $# -gt 1 ]; then
		one "$2" &
		b=$!
		wait $b
		shift
	fi
	wait $a
	shift
done
echo "| target | seconds | executions | exec/s | cov | ft | corpus | crashes |"
echo "|---|---|---|---|---|---|---|---|"
for t in $targets; do
	log=$out/$t.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p')
	crashes=$(ls "$out/crash_$t" | wc -l)
	echo "| fuzz_$t | $secs | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $crashes |"
done
