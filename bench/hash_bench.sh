#!/bin/bash
# hash_bench.sh [MIB] [PASSES] - CPU-seconds to hash a deploy artefact of MIB MiB
# (default 256) with emmclab's lab_sha256_file (libcrypto) and with coreutils'
# sha256sum in the same run; medians of PASSES (default 5).  Needs a build in
# $EMMCLAB_BIN (default build/).  Figures: docs/benchmarks.md.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${EMMCLAB_BIN:-$SRC/build}
MIB=${1:-256}
N=${2:-5}
work=$(mktemp -d /tmp/emmclab-hbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
head -c $((MIB * 1024 * 1024)) /dev/urandom > "$work/img"
cat "$work/img" > /dev/null # page cache: both read from memory
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ours=$("$BIN/bench/hash_bench" "$work/img" "$N")
want=$(sha256sum "$work/img" | cut -d' ' -f1)
[ "$(echo "$ours" | head -1 | cut -d' ' -f1)" = "$want" ] || { echo "hash differs from sha256sum" >&2; exit 1; }
e=$(echo "$ours" | awk '{print $3}' | median)
c=$(for i in $(seq "$N"); do /usr/bin/time -f '%U %S' sha256sum "$work/img" 2>&1 >/dev/null | awk '{print $1 + $2}'; done | median)
echo "file_mib $MIB passes $N"
echo "emmclab_cpu_s $e"
echo "sha256sum_cpu_s $c"
awk -v e="$e" -v c="$c" 'BEGIN { if (c > 0) printf "ratio_emmclab_over_sha256sum %.2f\n", e / c }'
