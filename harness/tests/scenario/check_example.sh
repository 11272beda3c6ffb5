#!/bin/bash
# check_example.sh - `emmclab check` on the shipped example lab and plan: exit 0 with
# the 20 boards printed; a broken copy exits 2 naming file:line:col.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"

tmp=$(mktemp -d /tmp/emmclab-check-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Work on a copy of the tree so a missing suite file can be stood in for
# without touching the source tree.
mkdir -p "$tmp/src/boards" "$tmp/src/suites/plans"
cp -r "$EMMCLAB_SRC/boards/types" "$EMMCLAB_SRC/boards/labs" "$tmp/src/boards/"
cp "$EMMCLAB_SRC/suites/plans/example-plan.yaml" "$tmp/src/suites/plans/"
if [ -f "$EMMCLAB_SRC/suites/fua-vs-cache.yaml" ]; then
	cp "$EMMCLAB_SRC/suites/fua-vs-cache.yaml" "$tmp/src/suites/"
else
	echo "# suites/fua-vs-cache.yaml missing: using a local stand-in" >&2
	cat > "$tmp/src/suites/fua-vs-cache.yaml" <<'YAML'
suite:
  name: fua-vs-cache
  modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]
  iterations: 5
  precondition_passes: 3
  workloads:
    - name: androbench
    - name: fscopy
YAML
fi
cd "$tmp/src"

# 1. the example lab and plan are valid and resolve to 20 boards
set +e
"$EMMCLAB" check boards/labs/example-lab.yaml suites/plans/example-plan.yaml >"$tmp/out.yaml" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 0 ] || { cat "$tmp/err" >&2; fail "check exited $rc"; }
grep -q '^emmclab: ok: 5 board types, 20 boards (19 enabled), 2 kernels, 1 suite, plan nightly-arm64$' "$tmp/err" \
	|| { cat "$tmp/err" >&2; fail "summary line"; }
n=$(grep -c '^  - name: ' <(sed -n '/^boards:/,/^[a-z]/p' "$tmp/out.yaml"))
[ "$n" = 20 ] || fail "expected 20 boards printed, got $n"
for b in rock1 rock6 sprd4 potato1 odroidc2-2 xu4-3 imx8qm-3; do
	grep -q "^  - name: $b\$" "$tmp/out.yaml" || fail "board $b not printed"
done
# defaults and type defaults were merged into a board's blocks
grep -q 'baud: 1500000' "$tmp/out.yaml" || fail "type board defaults not merged"
grep -q 'tftp_root: /srv/tftp/emmclab' "$tmp/out.yaml" || fail "lab defaults not merged"

# 2. the printed configuration is itself a valid configuration
"$EMMCLAB" check "$tmp/out.yaml" >"$tmp/out2.yaml" 2>"$tmp/err2" || { cat "$tmp/err2" >&2; fail "printed config does not re-check"; }
diff <(tail -n +2 "$tmp/out.yaml") <(tail -n +2 "$tmp/out2.yaml") >&2 || fail "print is not stable"

# 3. --quiet prints nothing on success
out=$("$EMMCLAB" check --quiet boards/labs/example-lab.yaml 2>&1)
[ -z "$out" ] || fail "--quiet printed: $out"

# 4. a broken copy: typo in a key -> exit 2 with file:line:col and a suggestion
sed 's/^    part: {label: "Micron MTFC32GAPALBH 32GB", model: micron-32g}$/    prat: {label: x}/' \
	boards/labs/example-lab.yaml >"$tmp/broken.yaml"
line=$(grep -n '^    prat:' "$tmp/broken.yaml" | head -1 | cut -d: -f1)
[ -n "$line" ] || fail "could not break the copy"
sed -i 's#\.\./types/#'"$tmp"'/src/boards/types/#' "$tmp/broken.yaml"
set +e
"$EMMCLAB" check "$tmp/broken.yaml" >"$tmp/out3" 2>"$tmp/err3"
rc=$?
set -e
[ "$rc" = 2 ] || fail "broken copy exited $rc, want 2"
grep -qx "emmclab: $tmp/broken.yaml:$line:5: unknown key 'prat' (did you mean 'part'?)" "$tmp/err3" \
	|| { cat "$tmp/err3" >&2; fail "error message"; }
[ ! -s "$tmp/out3" ] || fail "nothing must be printed on stdout on error"

# 5. a syntax error in an included type file names that file
cp -r boards/types "$tmp/types2"
printf 'type:\n  name: broken\n  modes: [fua\n' >"$tmp/types2/meson-gx.yaml"
sed 's#\.\./types/#'"$tmp"'/types2/#' boards/labs/example-lab.yaml >"$tmp/lab2.yaml"
set +e
"$EMMCLAB" check -q "$tmp/lab2.yaml" 2>"$tmp/err4"
rc=$?
set -e
[ "$rc" = 2 ] || fail "syntax error exited $rc"
grep -q "^emmclab: $tmp/types2/meson-gx.yaml:4:1: " "$tmp/err4" || { cat "$tmp/err4" >&2; fail "syntax error position"; }

# 6. a missing file: exit 2 with the path and strerror
set +e
"$EMMCLAB" check "$tmp/nope.yaml" 2>"$tmp/err5"
rc=$?
set -e
[ "$rc" = 2 ] || fail "missing file exited $rc"
grep -qx "emmclab: $tmp/nope.yaml: No such file or directory" "$tmp/err5" || fail "missing file message"

echo "check_example: ok"
