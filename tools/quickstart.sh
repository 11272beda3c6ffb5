#!/bin/sh
# Quick start: install what the main job needs (.ci/packages-main.txt: the
# compiler, CMake and the libraries, not the test suite's browsers, kernel
# sources, QEMU or servers), build the controller, the simulator and the agent
# (no test programs), and run the default nightly plan on the built-in
# simulated lab.  Prints the FUA vs cache-no-FUA (±CQE) table per DUT, writes
# results/lab.db and results/report.html.  tools/test.sh installs the rest.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" = 0 ]; then
	.ci/deps main
else
	echo "quickstart: not root, skipping package installation (run '.ci/deps main' as root if the build fails)" >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMMCLAB_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p results
exec build/harness/emmclab run --with-sim suites/plans/nightly-sim.yaml
