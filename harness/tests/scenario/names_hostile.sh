#!/usr/bin/env bash
# names_hostile.sh - names that could escape (shell syntax, "../", spaces, control bytes)
# are refused by `emmclab check` at their file:line:col, in every table that holds a name;
# YAML escapes that make control characters are refused too; a placeholder inside a
# `sh -c` script is refused; and a hostile *value* reaches an exec command as one argv
# element, running nothing.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}"
tmp=$(mktemp -d /tmp/emmclab-names-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"

# lab.yaml with NAME (as a YAML scalar) at line 9, column 11.
lab() {
	cat > lab.yaml <<YAML
lab:
  name: hostile
types:
  - name: t1
    modes:
      fua: {}
boards:
  - type: t1
    name: $1
    console: {driver: pty, path: /dev/null}
    power: ${2:-"{driver: manual}"}
YAML
}
# want_err NEEDLE FILE...: check exits 2, stderr has NEEDLE, nothing was run
want_err() {
	local needle=$1
	shift
	set +e
	"$EMMCLAB" check --quiet "$@" >out 2>err
	local rc=$?
	set -e
	[ "$rc" = 2 ] || fail "check $* exit $rc, want 2: $(cat err)"
	grep -qF -- "$needle" err || fail "want '$needle' in: $(cat err)"
	[ ! -e pwned ] || fail "something ran"
}

n=0
for name in '"a;touch pwned"' "'\$(touch pwned)'" '"`touch pwned`"' '"../../etc/x"' \
	'"a b"' '"x/y"' '"a|b"' '"-rf"' '"a..b"' "'{board}'"; do
	lab "$name"
	want_err "lab.yaml:9:11: 'name': " lab.yaml
	grep -qF "is not a valid name" err || fail "$name: $(cat err)"
	n=$((n + 1))
done
echo "ok: $n hostile board names refused at lab.yaml:9:11"

# Control characters made by YAML escapes, and raw ones (libyaml's own check).
for name in '"a\e[2Jb"' '"a\x01b"' '"\u009b31m"' '"a\rb"'; do
	lab "$name"
	want_err "lab.yaml:9:11: control character U+" lab.yaml
done
printf 'lab:\n  name: "a\033[2J"\n' > raw.yaml
want_err "raw.yaml" raw.yaml
# a control character is refused in free text too (a description)
printf 'types:\n  - name: t\n    description: "x\\e]0;pwned\\a"\n' > desc.yaml
want_err "desc.yaml:3:18: control character U+001B" desc.yaml
echo "ok: control characters refused after unescaping"

# Every other table with a name.
lab ok1
cat > suite.yaml <<'YAML'
kernels:
  - name: "k;1"
YAML
want_err "suite.yaml:2:11: 'name': 'k;1' is not a valid name" lab.yaml suite.yaml
cat > suite.yaml <<'YAML'
suite:
  name: "s 1"
  workloads: [{name: fio}]
YAML
want_err "suite.yaml:2:9: 'name': 's 1' is not a valid name" lab.yaml suite.yaml
cat > suite.yaml <<'YAML'
suite:
  name: s1
  workloads:
    - name: fio
      args: {"rw;touch pwned": 1}
YAML
want_err "suite.yaml:5:14: 'args': 'rw;touch pwned' is not a valid name" lab.yaml suite.yaml
cat > suite.yaml <<'YAML'
suite:
  name: s1
  workloads:
    - name: fio
      args: {rw: "randwrite; touch pwned"}
plan:
  name: "../p"
  suites: [s1]
YAML
want_err "suite.yaml:7:9: 'name': '../p' is not a valid name" lab.yaml suite.yaml
sed -i 's|"../p"|p1|' suite.yaml
"$EMMCLAB" check --quiet lab.yaml suite.yaml || fail "a quoted shell-ish *value* is fine"
sed -i 's|    name: ok1|    name: ok1\n    part: {model: "m/../x"}|' lab.yaml
want_err "lab.yaml:10:19: 'model': 'm/../x' is not a valid name" lab.yaml
lab '"t1"'
sed -i 's|  - type: t1|  - type: "t 1"|' lab.yaml
want_err "lab.yaml:8:11: " lab.yaml # an unknown type (types are names)
echo "ok: kernel, suite, workload arg key, plan, part model and type names checked"

# A placeholder inside a shell script is refused at load time, at its position ...
lab ok1 "{driver: exec, on: [sh, -c, 'relay on {board}'], off: [relay, off, '{board}']}"
want_err "lab.yaml:11:40: 'on': placeholder {board} inside the script of 'sh -c'" lab.yaml
# ... and as an argument after the script it is one argv element.
lab ok1 "{driver: exec, on: [sh, -c, 'printf \"%s|\" \"\$@\" > argv', sh, '{board}', 'x;{board} \$(touch pwned)'], off: [true]}"
"$EMMCLAB" check --quiet lab.yaml 2>err || fail "argument template refused: $(cat err)"
"$EMMCLAB" board --lab lab.yaml ok1 power on >out 2>err || fail "power on: $(cat err)"
[ "$(cat argv)" = 'ok1|x;ok1 $(touch pwned)|' ] || fail "argv: $(cat argv)"
[ ! -e pwned ] || fail "the value was run by a shell"
echo "ok: placeholders inside sh -c refused; a value is one argv element"
