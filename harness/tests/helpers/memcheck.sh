#!/bin/sh
# memcheck.sh BUILD_DIR [ctest args...] - the ctest suite under valgrind memcheck
# (docs/reliability.md): every test command and every program of ours it starts
# (--trace-children; system programs under /usr, /bin, /sbin are not traced),
# leak check full.  Prints the error and definite-leak counts of our programs and
# of system programs apart, and exits non-zero when a test failed or one of our
# programs had an error or a definite leak.
# Use a plain (not sanitized) build with a dynamic agent (valgrind cannot follow
# malloc in a static binary: glibc-static start-up shows as false errors):
#   cmake -B /tmp/vg -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMMCLAB_AGENT_STATIC=OFF
set -eu
dir=${1:?usage: memcheck.sh BUILD_DIR [ctest args...]}
shift
opts="--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite"
opts="$opts --track-fds=no --num-callers=30 --trace-children=yes"
opts="$opts --trace-children-skip=/usr/*,/bin/*,/sbin/*,/lib/*"
# one log per process (ctest's single log file would be truncated by every child)
rm -rf "$dir/valgrind"
mkdir -p "$dir/valgrind"
opts="$opts --log-file=$dir/valgrind/%p.log"
rc=0
ctest --test-dir "$dir" -T memcheck --overwrite MemoryCheckCommand=/usr/bin/valgrind \
	--overwrite "MemoryCheckCommandOptions=$opts" "$@" > "$dir/memcheck.out" 2>&1 || rc=$?
grep -E 'tests passed|tests failed' "$dir/memcheck.out" || true
# Per process, from valgrind's logs: the top-level /usr/bin/bash of a scenario is always under
# valgrind (it is the test command) and its own leaks are bash's, so programs under /usr and
# /bin are counted apart; any error or definite leak in one of ours fails.
python3 - "$dir"/valgrind/*.log <<'PY' || rc=1
import re, sys
ours = {"processes": 0, "errors": 0, "leaked": 0}
system = {"processes": 0, "errors": 0, "leaked": 0}
bad = []
for path in sys.argv[1:]:
    text = open(path, errors="replace").read()
    cmd = dict(re.findall(r"==(\d+)== Command: (\S+)", text))
    for kind, pat in (("errors", r"==(\d+)== ERROR SUMMARY: (\d+) errors"),
                      ("leaked", r"==(\d+)==\s+definitely lost: ([\d,]+) bytes")):
        for pid, n in re.findall(pat, text):
            n = int(n.replace(",", ""))
            exe = cmd.get(pid, "?")
            acc = system if exe.startswith(("/usr/", "/bin/")) else ours
            acc[kind] += n
            acc["processes"] += kind == "errors"
            if n and acc is ours:
                bad.append("%s: %d %s (%s)" % (path, n, "errors" if kind == "errors" else
                                              "bytes definitely lost", exe))
print("our programs: %(processes)d processes, %(errors)d errors, %(leaked)d bytes definitely lost" % ours)
print("system programs (the scenario's bash): %(processes)d processes, %(errors)d errors, "
      "%(leaked)d bytes definitely lost" % system)
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
exit "$rc"
