#!/bin/sh
# The whole test suite: install dependencies, build with warnings as errors,
# run every test (unit, scenario, virt) with ctest; then unit tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer.  Exits non-zero on any failure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" = 0 ]; then
	.ci/deps
fi
jobs=$(nproc)
cmake -S . -B build-test -DEMMCLAB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs" --timeout 900
if [ "${EMMCLAB_SKIP_ASAN:-0}" != 1 ]; then
	cmake -S . -B build-asan -DEMMCLAB_WERROR=ON -DEMMCLAB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build-asan -j"$jobs"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit --timeout 300
fi
