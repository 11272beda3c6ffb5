#!/bin/sh
# smoke.sh FUZZER ARTIFACT_DIR ARGS...: ctest's bounded run of one libFuzzer
# target (CMakeLists.txt).  libFuzzer prints a crash's cause in the middle of a
# long log and writes the input to a file on the machine that ran it; a CI log
# shown cut in the middle and a machine thrown away afterwards lose both.  So on
# a failure this repeats, at the very end: the crash's own message and the
# input as an escaped string, which is all it takes to make the regression file
# (docs/reliability.md).  The input also stays in ARTIFACT_DIR.
set -u
fuzzer=$1
art=$2
shift 2
rm -rf "$art"
mkdir -p "$art"
log="$art/log"
"$fuzzer" -artifact_prefix="$art/" "$@" > "$log" 2>&1
rc=$?
cat "$log"
[ "$rc" = 0 ] && exit 0

echo "=== smoke.sh: $(basename "$fuzzer") failed (exit $rc); its message:"
# the target's own report (fuzz_*.c print before they abort), a sanitizer's, libFuzzer's
grep -a -m 3 -A 12 -e "round trip failed" -e "^fuzz_[a-z]*: " -e "ERROR: " -e "runtime error" "$log" |
	head -n 60
for f in "$art"/*; do
	case $(basename "$f") in
	log) continue ;;
	esac
	[ -f "$f" ] || continue
	echo "=== smoke.sh: input $(basename "$f") ($(wc -c < "$f") bytes), as a Python bytes literal:"
	python3 -c 'import sys; print(repr(open(sys.argv[1], "rb").read(4096)))' "$f"
done
exit "$rc"
