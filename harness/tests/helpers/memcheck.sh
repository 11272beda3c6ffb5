#!/bin/sh
# memcheck.sh BUILD_DIR [ctest args...] - the ctest suite under valgrind memcheck
# (docs/reliability.md): every test command and every program of ours it starts
# (--trace-children; system programs under /usr, /bin, /sbin are not traced),
# leak check full.  Prints ctest's defect summary and exits non-zero when any
# test failed or valgrind found an error or a definite leak.
# Use a plain (not sanitized) build with a dynamic agent (valgrind cannot follow
# malloc in a static binary: glibc-static start-up shows as false errors):
#   cmake -B /tmp/vg -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMMCLAB_AGENT_STATIC=OFF
set -eu
dir=${1:?usage: memcheck.sh BUILD_DIR [ctest args...]}
shift
opts="--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite"
opts="$opts --track-fds=no --num-callers=30 --trace-children=yes"
opts="$opts --trace-children-skip=/usr/*,/bin/*,/sbin/*,/lib/*"
rc=0
ctest --test-dir "$dir" -T memcheck --overwrite MemoryCheckCommand=/usr/bin/valgrind \
	--overwrite "MemoryCheckCommandOptions=$opts" "$@" > "$dir/memcheck.out" 2>&1 || rc=$?
sed -n '/Memory checking results/,$p' "$dir/memcheck.out"
grep -E 'tests passed|tests failed' "$dir/memcheck.out" || true
# ctest lists defect kinds (Memory Leak, Invalid read, ...) with counts: any is a failure
if grep -qE '^(Memory Leak|Invalid|Uninitialized|Mismatched|Syscall|Fishy|Overlap|Free)' "$dir/memcheck.out"; then
	rc=1
fi
exit "$rc"
