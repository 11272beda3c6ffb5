#!/usr/bin/env bash
# emmclab sim start/status/stop: readiness, pty links, pidfile, double start, clean stop, bad labs.
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"

sim_setup
grep -q "simulator running: pid=" "$T/start.out" || fail "start did not report readiness: $(cat "$T/start.out")"
for b in b5 bsprd bnoagent; do
	[ -L "$T/$b.tty" ] || fail "$b console link missing"
	case "$(readlink "$T/$b.tty")" in /dev/pts/*) ;; *) fail "$b link does not point at a pty" ;; esac
done
pid=$(cat "$T/sim.pid")
kill -0 "$pid" || fail "simulator pid $pid not alive"
# detached: another session than ours, and adopted (not our child)
[ "$(ps -o sid= -p "$pid" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')" ] || fail "simulator not detached (same session)"
[ "$(ps -o ppid= -p "$pid" | tr -d ' ')" != "$$" ] || fail "simulator is still our child"

out=$("$EMMCLAB" sim status --state-dir "$T")
echo "$out" | grep -q "^b5 .*off" || fail "status: $out"
echo "$out" | grep -q "^bnoagent" || fail "status lacks bnoagent: $out"
"$EMMCLAB" sim status --state-dir "$T" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["boards"])==3'

# a second simulator on the same state dir is refused
if "$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T" 2>"$T/err"; then fail "second start succeeded"; fi
grep -q "already runs" "$T/err" || fail "second start message: $(cat "$T/err")"

# faults through the CLI, including an unknown one (exit 2, suggestion)
"$EMMCLAB" sim fault b5 panic:1 --state-dir "$T" >/dev/null
api /sim/state | grep -q '"fault":"panic"' || fail "fault not set"
set +e
"$EMMCLAB" sim fault b5 panik --state-dir "$T" 2>"$T/err"; rc=$?
set -e
[ $rc = 2 ] || fail "unknown fault exit $rc"
grep -q "did you mean 'panic'" "$T/err" || fail "no suggestion: $(cat "$T/err")"
"$EMMCLAB" sim clear b5 --state-dir "$T" >/dev/null
api /sim/state | grep -q '"fault":"panic"' && fail "clear did not clear"

"$EMMCLAB" sim stop --state-dir "$T" | grep -q "stopped" || fail "stop"
kill -0 "$pid" 2>/dev/null && fail "simulator still running after stop"
[ ! -e "$T/b5.tty" ] || fail "console link left behind"
[ ! -e "$T/sim.pid" ] || fail "pidfile left behind"
"$EMMCLAB" sim stop --state-dir "$T" | grep -q "no simulator" || fail "second stop"

# a lab with an unknown part: exit 2 naming the file and the known models
sed 's/model: sprd-32g/model: sprd-64g/' "$T/lab.yaml" > "$T/bad.yaml"
set +e
"$EMMCLAB" sim start "$T/bad.yaml" --state-dir "$T" 2>"$T/err"; rc=$?
set -e
[ $rc = 2 ] || fail "bad lab exit $rc: $(cat "$T/err")"
grep -q "unknown part model 'sprd-64g'" "$T/err" || fail "bad lab message: $(cat "$T/err")"
grep -q "bad.yaml" "$T/err" || fail "bad lab message lacks the file: $(cat "$T/err")"
[ ! -e "$T/sim.pid" ] || fail "pidfile after failed start"
echo "ok"
