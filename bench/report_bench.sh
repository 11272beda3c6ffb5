#!/bin/bash
# report_bench.sh - a year of nightly runs (876,000 samples), then time the
# comparison and the reports.  Usage: bench/report_bench.sh BUILD_DIR [RUNS]
# Prints the median of RUNS (default 3) runs of each step, wall and CPU.
set -euo pipefail
build=${1:?usage: report_bench.sh BUILD_DIR [RUNS]}
runs=${2:-3}
E="$build/harness/emmclab"
G="$build/bench/report_gen"
tmp=$(mktemp -d /tmp/emmclab-report-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# time one command: "wall cpu" in seconds
t() { /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null; awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$tmp/t"; }

step() {
	local name=$1; shift
	: > "$tmp/w"; : > "$tmp/c"
	for _ in $(seq "$runs"); do
		read -r w c < <(t "$@")
		echo "$w" >> "$tmp/w"; echo "$c" >> "$tmp/c"
	done
	printf "%-34s wall %6.3f s  cpu %6.3f s  (median of %d)\n" "$name" "$(median < "$tmp/w")" "$(median < "$tmp/c")" "$runs"
}

: > "$tmp/iw"; : > "$tmp/ic"
for i in $(seq "$runs"); do
	rm -f "$tmp/year.db"*
	read -r w c < <(t "$G" "$tmp/year.db" 365)
	echo "$w" >> "$tmp/iw"; echo "$c" >> "$tmp/ic"
done
printf "%-34s wall %6.3f s  cpu %6.3f s  (median of %d)\n" "ingest 365 nights (876000 samples)" "$(median < "$tmp/iw")" "$(median < "$tmp/ic")" "$runs"
bytes=$(stat -c %s "$tmp/year.db")
samples=$(sqlite3 "$tmp/year.db" 'SELECT count(*) FROM sample')
echo "database: $bytes bytes, $samples samples, $((bytes / samples)) bytes/sample (all tables and indexes)"
step "compare (by mode, all 876k samples)" "$E" compare --db "$tmp/year.db"
step "report text, last night" "$E" report --db "$tmp/year.db" --format text
step "report json, last night" "$E" report --db "$tmp/year.db" --format json
step "report html, last night + 90 nights" "$E" report --db "$tmp/year.db" --format html -o "$tmp/n.html"
step "report html --all (whole year)" "$E" report --db "$tmp/year.db" --all --format html -o "$tmp/a.html"
echo "html sizes: last night $(stat -c %s "$tmp/n.html") bytes, whole year $(stat -c %s "$tmp/a.html") bytes"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
