#!/bin/sh
# The whole test suite (docs/reliability.md): install dependencies, build with
# warnings as errors and run every test (unit, scenario, virt, the short fault
# campaign, the kernel series, a real LAVA farm) with ctest; then the same
# suite built with AddressSanitizer + UndefinedBehaviorSanitizer (less the
# tests that run no emmclab code or only repeat it on the 6.12 kernel); then
# the tests of the journal's, the report's and the comparison's threads
# built with ThreadSanitizer (ctest label threads); then a clang build of the
# libFuzzer targets, each run for a bounded time over its seed corpus, plus the
# replay of the crash regressions.  Exits non-zero on any failure, and on any
# skipped or disabled test (a test that cannot run exits 77) unless
# EMMCLAB_ALLOW_SKIP=1.
#
# Developer knobs: EMMCLAB_SKIP_ASAN=1, EMMCLAB_SKIP_TSAN=1, EMMCLAB_SKIP_FUZZ=1 leave a stage out;
# EMMCLAB_FUZZ_SECONDS (default 15) is each fuzz target's run time.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" = 0 ]; then
	.ci/deps
fi
jobs=$(nproc)
skips=0

# run_ctest DIR ARGS...: ctest with a JUnit report; fails on a failed test,
# counts skipped (77) and disabled tests into $skips and names them.
run_ctest() {
	dir=$(cd "$1" && pwd) # absolute: ctest takes --output-junit relative to the test dir
	shift
	rm -f "$dir/junit.xml"
	ctest --test-dir "$dir" --output-on-failure -j"$jobs" --output-junit "$dir/junit.xml" "$@"
	n=$(python3 - "$dir/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
bad = [c.get("name") for c in ET.parse(sys.argv[1]).iter("testcase")
       if c.get("status") in ("disabled", "notrun") or c.find("skipped") is not None]
for name in bad:
    print("SKIPPED: " + name, file=sys.stderr)
print(len(bad))
PY
)
	skips=$((skips + n))
}

# ThreadSanitizer's report files (its stage's log_path): printed however the
# script ends, as a failed test stops it and ctest's output does not hold
# them.  Those of an earlier run go first.
rm -f build-tsan/tsan.*
tsan_reports() {
	for f in "$top"/build-tsan/tsan.*; do
		[ -e "$f" ] || continue
		echo "== ThreadSanitizer report $f" >&2
		cat "$f" >&2
	done
}

# The LAVA farm (harness/tests/servers/lava_farm.sh): started once for both
# suites (scenario.lava_farm reuses it), stopped by the PIDs it recorded.
if ! harness/tests/servers/lava_farm.sh start > /dev/null; then
	echo "test.sh: the LAVA farm did not start (scenario.lava_farm will fail and say why)" >&2
fi
trap 'tsan_reports; harness/tests/servers/lava_farm.sh stop' EXIT

start=$(date +%s)
cmake -S . -B build-test -DEMMCLAB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-test -j"$jobs"
run_ctest build-test --timeout 900
echo "test.sh: plain suite $(($(date +%s) - start)) s"

if [ "${EMMCLAB_SKIP_ASAN:-0}" != 1 ]; then
	# Everything built sanitized (controller, simulator, host agent); the virtual
	# board's initramfs gets the unsanitized static emmclab-agent-dut instead,
	# since the ASan runtime is not in the guest.
	start=$(date +%s)
	cmake -S . -B build-asan -DEMMCLAB_WERROR=ON -DEMMCLAB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build-asan -j"$jobs"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# Not repeated here, having run in the plain suite: the kernel-series
	# tests (label kernel) and virt_suspend run no emmclab code; the *_6.12
	# virtual-board entries run the same controller code as their 6.1 twins.
	run_ctest build-asan --timeout 1800 -LE '^kernel$' -E '(_6[.]12|virt_suspend)$'
	unset ASAN_OPTIONS UBSAN_OPTIONS
	echo "test.sh: sanitized suite $(($(date +%s) - start)) s"
fi

if [ "${EMMCLAB_SKIP_TSAN:-0}" != 1 ]; then
	# The tests with label threads (the journal's, the report's and the
	# comparison's threads)
	# built with ThreadSanitizer.  A race ends the process (exit 66), and
	# every report also goes to build-tsan/tsan.PID, checked after ctest, so
	# a race in a command a test expects to fail fails the stage too.
	start=$(date +%s)
	cmake -S . -B build-tsan -DEMMCLAB_WERROR=ON -DEMMCLAB_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-tsan -j"$jobs"
	export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$top/build-tsan/tsan"
	run_ctest build-tsan --timeout 900 -L threads
	unset TSAN_OPTIONS
	if ls build-tsan/tsan.* > /dev/null 2>&1; then
		echo "test.sh: FAIL: ThreadSanitizer reported races (below)" >&2
		exit 1 # the EXIT trap prints them
	fi
	echo "test.sh: thread-sanitized tests $(($(date +%s) - start)) s"
fi

if [ "${EMMCLAB_SKIP_FUZZ:-0}" != 1 ]; then
	start=$(date +%s)
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DEMMCLAB_FUZZ=ON -DEMMCLAB_WERROR=ON \
		-DEMMCLAB_FUZZ_SECONDS="${EMMCLAB_FUZZ_SECONDS:-15}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-fuzz -j"$jobs" --target fuzz_all
	run_ctest build-fuzz -L fuzz
	echo "test.sh: fuzz smoke $(($(date +%s) - start)) s"
fi

if [ "$skips" -gt 0 ]; then
	if [ "${EMMCLAB_ALLOW_SKIP:-0}" = 1 ]; then
		echo "test.sh: $skips test(s) skipped (allowed by EMMCLAB_ALLOW_SKIP=1)"
	else
		echo "test.sh: FAIL: $skips test(s) skipped or disabled; CI installs everything" \
			"(.ci/packages.txt). EMMCLAB_ALLOW_SKIP=1 accepts this on a developer machine." >&2
		exit 1
	fi
fi
echo "test.sh: all passed"
