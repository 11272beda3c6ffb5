#!/bin/bash
# report_bench.sh - a year of nightly runs (876,000 samples), then time the
# comparison and the reports.
#
#   bench/report_bench.sh BUILD_DIR [RUNS] [BASE_BUILD_DIR]
#
# Prints the median of RUNS (default 5) runs of each step, wall and CPU
# (user + sys, from /usr/bin/time), and the load average before and after.
# With BASE_BUILD_DIR (an older build of the same tree), every step runs the
# base and the new binaries alternately, so both see the same machine load;
# both read the database written by BUILD_DIR's report_gen.
# With CALLGRIND=1 it also prints callgrind instruction counts (load
# independent; about 40x slower: a few minutes in all).
set -euo pipefail
build=${1:?usage: report_bench.sh BUILD_DIR [RUNS] [BASE_BUILD_DIR]}
runs=${2:-5}
base=${3:-}
tmp=$(mktemp -d /tmp/emmclab-report-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# time one command: "wall cpu" in seconds
t() { /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null; awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$tmp/t"; }
line() { printf "%-42s wall %6.3f s  cpu %6.3f s  (median of %d)\n" "$1" "$(median < "$2.w")" "$(median < "$2.c")" "$runs"; }

# step NAME ARGS...: ARGS run with "@E" replaced by each build's emmclab.
step() {
	local name=$1; shift
	local tags=(new) dirs=("$build")
	if [ -n "$base" ]; then tags=(base new); dirs=("$base" "$build"); fi
	for tg in "${tags[@]}"; do : > "$tmp/$tg.w"; : > "$tmp/$tg.c"; done
	for _ in $(seq "$runs"); do
		for i in "${!tags[@]}"; do
			local args=("${@//@E/${dirs[$i]}/harness/emmclab}")
			read -r w c < <(t "${args[@]}")
			echo "$w" >> "$tmp/${tags[$i]}.w"; echo "$c" >> "$tmp/${tags[$i]}.c"
		done
	done
	for tg in "${tags[@]}"; do
		if [ -n "$base" ]; then line "$name [$tg]" "$tmp/$tg"; else line "$name" "$tmp/$tg"; fi
	done
}

ir() { # instruction count of one command under callgrind
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		awk '/Collected/ { print $NF }'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
gens=("$build/bench/report_gen"); gtags=(new)
if [ -n "$base" ]; then gens=("$base/bench/report_gen" "$build/bench/report_gen"); gtags=(base new); fi
for tg in "${gtags[@]}"; do : > "$tmp/i$tg.w"; : > "$tmp/i$tg.c"; done
for _ in $(seq "$runs"); do
	for i in "${!gens[@]}"; do
		rm -f "$tmp/year.db"*
		read -r w c < <(t "${gens[$i]}" "$tmp/year.db" 365)
		echo "$w" >> "$tmp/i${gtags[$i]}.w"; echo "$c" >> "$tmp/i${gtags[$i]}.c"
	done
done
for tg in "${gtags[@]}"; do
	name="ingest 365 nights (876000 samples)"
	[ -n "$base" ] && name="$name [$tg]"
	line "$name" "$tmp/i$tg"
done
# The last ingest was the new build's: the database every step reads.
bytes=$(stat -c %s "$tmp/year.db")
samples=$(sqlite3 "$tmp/year.db" 'SELECT count(*) FROM sample')
echo "database: $bytes bytes, $samples samples, $((bytes / samples)) bytes/sample (all tables and indexes)"
step "compare (by mode, all 876k samples)" @E compare --db "$tmp/year.db"
step "report text --all (whole year)" @E report --db "$tmp/year.db" --all --format text
step "report text, last night" @E report --db "$tmp/year.db" --format text
step "report json, last night" @E report --db "$tmp/year.db" --format json
step "report html, last night + 90 nights" @E report --db "$tmp/year.db" --format html -o "$tmp/n.html"
step "report html --all (whole year)" @E report --db "$tmp/year.db" --all --format html -o "$tmp/a.html"
echo "html sizes: last night $(stat -c %s "$tmp/n.html") bytes, whole year $(stat -c %s "$tmp/a.html") bytes"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${CALLGRIND:-0}" = 1 ]; then
	dirs=("$build"); tags=(new)
	if [ -n "$base" ]; then dirs=("$base" "$build"); tags=(base new); fi
	for i in "${!dirs[@]}"; do
		E="${dirs[$i]}/harness/emmclab"
		rm -f "$tmp/ir.db"*
		echo "instructions [${tags[$i]}]: ingest 30 nights $(ir "${dirs[$i]}/bench/report_gen" "$tmp/ir.db" 30)," \
		     "compare $(ir "$E" compare --db "$tmp/year.db")," \
		     "report html --all $(ir "$E" report --db "$tmp/year.db" --all --format html -o "$tmp/x.html")"
	done
fi
