#!/bin/sh
# Quick start: install dependencies, build, and run the default nightly plan on
# the built-in simulated lab.  Prints the FUA vs cache-no-FUA (±CQE) table per
# DUT, writes results/lab.db and results/report.html.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" = 0 ]; then
	.ci/deps
else
	echo "quickstart: not root, skipping package installation (run .ci/deps as root if the build fails)" >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p results
exec build/harness/emmclab run --with-sim suites/plans/nightly-sim.yaml
