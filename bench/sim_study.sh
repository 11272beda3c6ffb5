#!/bin/bash
# sim_study.sh - the simulated lab against the published data, over seeds
# (docs/simulator.md, "Simulated lab vs the published data").
#
#   bench/sim_study.sh [-b BUILD] [-n SEEDS] [-o OUTDIR] [-i ITERATIONS]
#
# For seed 1..SEEDS (default 20): starts the simulated lab of
# boards/labs/sim-lab.yaml with `sim.seed` = the seed (private state dir,
# consoles and power port, so it runs beside another simulator), runs the
# published procedures (bench/sim_study.yaml: the ext4 copy on DUT1-5, each
# mode series on a freshly preconditioned part, AndroBench on the sprd board,
# ITERATIONS per mode, default the published 5) through `emmclab run`, and
# `emmclab compare --format json` on the result.  The published CSVs are
# imported and compared the same way; bench/sim_study.py prints, per published
# comparison, the published change and p-value, the simulated 2.5/50/97.5
# percentiles, whether the published values lie inside, and how often the
# simulated verdict differs from the published one.  Exit 0 when every
# published value lies inside, 1 otherwise, 2 usage, 3 infrastructure.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${EMMCLAB_BUILD:-$SRC/build}
SEEDS=20
OUT=
ITER=5
while getopts b:n:o:i:h opt; do
	case $opt in
	b) BUILD=$OPTARG ;;
	n) SEEDS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	i) ITER=$OPTARG ;;
	*) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; [ "$opt" = h ] && exit 0; exit 2 ;;
	esac
done
E=${EMMCLAB:-$BUILD/harness/emmclab}
[ -x "$E" ] || { echo "sim_study: no emmclab at $E (give -b BUILD)" >&2; exit 2; }
[[ $SEEDS =~ ^[1-9][0-9]*$ && $ITER =~ ^[2-9][0-9]*$ ]] || { echo "sim_study: -n wants >= 1, -i >= 2" >&2; exit 2; }
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/emmclab-simstudy.XXXXXX)
else
	mkdir -p "$OUT"
fi
OUT=$(cd "$OUT" && pwd)
# Board locks of its own: the lab's board names are the default lab's, which a
# nightly on this host may be using at the same time.
export EMMCLAB_LOCKS=$OUT/locks
mkdir -p "$EMMCLAB_LOCKS"
cur=
cleanup() { [ -n "$cur" ] && "$E" sim stop --state-dir "$cur" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 3' INT TERM

ref=$SRC/results/reference
rm -f "$OUT/published.db"
"$E" import --db "$OUT/published.db" "$ref/androbench-sdhci-sprd.csv" "$ref/fs-copy-benchmark.csv" >/dev/null
"$E" compare --db "$OUT/published.db" --format json >"$OUT/published.json"

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start=$(date +%s)
for seed in $(seq 1 "$SEEDS"); do
	d=$OUT/seed$seed
	rm -rf "$d"
	mkdir -p "$d"
	cur=$d
	port=$(free_port)
	# The default lab, with this seed, its own ptys and power port, no ser2net.
	sed -e "s|\.\./types/sim-board.yaml|$SRC/boards/types/sim-board.yaml|" \
		-e "s|/tmp/emmclab-sim|$d|g" -e "s|127\.0\.0\.1:16421|127.0.0.1:$port|g" \
		-e "s|^    seed: 1$|    seed: $seed|" -e "/ser2net_port/d" -e "s|soc: ums512,$|soc: ums512}|" \
		"$SRC/boards/labs/sim-lab.yaml" >"$d/lab.yaml"
	grep -q "^    seed: $seed\$" "$d/lab.yaml" || { echo "sim_study: could not set the seed in $d/lab.yaml" >&2; exit 3; }
	sed -e "s|iterations: 5|iterations: $ITER|" "$SRC/bench/sim_study.yaml" >"$d/suites.yaml"
	cat >"$d/plan-fs.yaml" <<YAML
include: [suites.yaml]
plan:
  name: sim-study-fscopy
  lab: lab.yaml
  boards: [dut1, dut2, dut3, dut4, dut5]
  suites: [study-fscopy-fua, study-fscopy-cache-nofua, study-fscopy-fua-cqe, study-fscopy-cache-nofua-cqe]
YAML
	cat >"$d/plan-ab.yaml" <<YAML
include: [suites.yaml]
plan:
  name: sim-study-androbench
  lab: lab.yaml
  boards: [sprd1]
  suites: [study-androbench]
YAML
	if ! "$E" sim start "$d/lab.yaml" --state-dir "$d" >"$d/sim.out" 2>&1; then
		echo "sim_study: seed $seed: the simulator did not start (see $d/sim.out)" >&2
		exit 3
	fi
	for p in fs ab; do
		if ! "$E" run --db "$d/lab.db" --no-report --no-upload --transcripts "$d/tr" \
			"$d/plan-$p.yaml" >"$d/run-$p.out" 2>"$d/run-$p.err"; then
			echo "sim_study: seed $seed: emmclab run $p failed (see $d/run-$p.err)" >&2
			exit 3
		fi
	done
	"$E" sim stop --state-dir "$d" >/dev/null 2>&1 || true
	cur=
	"$E" compare --db "$d/lab.db" --format json >"$d/compare.json"
	echo "seed $seed done ($(($(date +%s) - start)) s)" >&2
done
set +e
$PY "$SRC/bench/sim_study.py" "$OUT/published.json" "$OUT"/seed*/compare.json | tee "$OUT/study.txt"
rc=${PIPESTATUS[0]}
echo "sim_study: $SEEDS seeds, $ITER iterations per mode, $(($(date +%s) - start)) s; results in $OUT" >&2
exit "$rc"
