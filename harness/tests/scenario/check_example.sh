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

# 1. the example lab and plan are valid and resolve to 20 boards (--offline: its
# artefacts live on the lab's controller, not here)
set +e
"$EMMCLAB" check --offline boards/labs/example-lab.yaml suites/plans/example-plan.yaml >"$tmp/out.yaml" 2>"$tmp/err"
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
"$EMMCLAB" check --offline "$tmp/out.yaml" >"$tmp/out2.yaml" 2>"$tmp/err2" || { cat "$tmp/err2" >&2; fail "printed config does not re-check"; }
diff <(tail -n +2 "$tmp/out.yaml") <(tail -n +2 "$tmp/out2.yaml") >&2 || fail "print is not stable"

# 3. --quiet prints nothing on success
out=$("$EMMCLAB" check --offline --quiet boards/labs/example-lab.yaml 2>&1)
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

# 7. without --offline, the example's artefacts missing on this host are errors at their key
set +e
"$EMMCLAB" check -q boards/labs/example-lab.yaml 2>"$tmp/err6"
rc=$?
set -e
[ "$rc" = 2 ] || fail "missing artefacts exited $rc, want 2"
line=$(grep -n 'image: /srv/artifacts/linux-6.1-fua/arm64/Image' boards/labs/example-lab.yaml | cut -d: -f1)
grep -qx "emmclab: boards/labs/example-lab.yaml:$line:12: kernel linux-6.1-fua: image /srv/artifacts/linux-6.1-fua/arm64/Image: cannot read it" "$tmp/err6" \
	|| { cat "$tmp/err6" >&2; fail "missing artefact message"; }
# the agent of the example's types: a warning once per type, not with -q
"$EMMCLAB" check --offline boards/labs/example-lab.yaml suites/plans/example-plan.yaml >/dev/null 2>"$tmp/err7"
[ "$(grep -c 'warning: board .* (and any other of type meson-gx)' "$tmp/err7")" = 1 ] \
	|| { cat "$tmp/err7" >&2; fail "agent warning once per type"; }

# 8. combinations that load but cannot boot: exit 2, each at its file:line:col
mkdir -p "$tmp/k"
: >"$tmp/k/bzImage"
: >"$tmp/k/initrd"
cat >"$tmp/bad.yaml" <<YAML
types:
  - name: plain
    shell: {agent_path: ""}
  - name: withub
    uboot: {prompt: "=> "}
kernels:
  - {name: k, image: $tmp/k/bzImage, initrd: $tmp/k/initrd}
boards:
  - name: tftp-no-uboot
    type: plain
    console: {driver: tcp, host: 127.0.0.1, port: 4001}
    deploy: {driver: uboot-tftp, tftp_root: $tmp/tftp}
  - name: qemu-kernel-but-uboot
    type: withub
    console: {driver: tcp, host: 127.0.0.1, port: 4002}
    power: {driver: qemu, port: 4002, kernel: $tmp/k/bzImage}
  - name: qemu-missing-kernel
    type: plain
    console: {driver: tcp, host: 127.0.0.1, port: 4003}
    power: {driver: qemu, port: 4003, kernel: $tmp/k/nope, initrd: $tmp/k/initrd}
  - name: no-console
    type: withub
    deploy: {driver: uboot-tftp, tftp_root: $tmp/tftp}
  - name: tcp-no-port
    type: plain
    console: {driver: tcp, host: 127.0.0.1}
YAML
set +e
"$EMMCLAB" check -q "$tmp/bad.yaml" 2>"$tmp/err8"
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$tmp/err8" >&2; fail "cannot-boot lab exited $rc, want 2"; }
want() { grep -qF -- "$1" "$tmp/err8" || { cat "$tmp/err8" >&2; fail "missing: $1"; }; }
want "emmclab: $tmp/bad.yaml:12:22: board tftp-no-uboot: deploy uboot-tftp works at the U-Boot prompt, but type plain has no U-Boot"
want "emmclab: $tmp/bad.yaml:16:47: board qemu-kernel-but-uboot: QEMU boots the kernel itself (-kernel), so the U-Boot prompt of type withub never comes"
want "emmclab: $tmp/bad.yaml:20:47: board qemu-missing-kernel: power kernel $tmp/k/nope: cannot read it"
want "emmclab: $tmp/bad.yaml:21:5: board no-console has no console: block: the deploy method types at the U-Boot prompt"
want "emmclab: $tmp/bad.yaml:26:23: board tcp-no-port: console tcp needs port: (or path: for a Unix socket)"
[ "$(wc -l <"$tmp/err8")" = 5 ] || { cat "$tmp/err8" >&2; fail "exactly the five findings"; }

# 9. a plan on a board whose type has no agent path: exit 2 at the type's shell.agent_path;
# a QEMU board with U-Boot as its firmware and no kernel: is fine (U-Boot loads the kernel)
cat >"$tmp/plan.yaml" <<YAML
include: [fua-vs-cache.yaml]
types:
  - name: plain
    shell: {agent_path: ""}
    modes: {fua: {cmdline: "mmc_block.fua=on"}}
  - name: ubq
    uboot: {prompt: "=> ", boot_cmd: "zboot \${kernel_addr_r}"}
    shell: {agent_path: /bin/emmclab-agent}
    modes: {fua: {cmdline: "mmc_block.fua=on"}}
kernels:
  - {name: k, image: $tmp/k/bzImage, initrd: $tmp/k/initrd}
boards:
  - name: q1
    type: plain
    console: {driver: tcp, host: 127.0.0.1, port: 4005}
    power: {driver: qemu, port: 4005}
    deploy: {driver: qemu}
  - name: ub1
    type: ubq
    console: {driver: tcp, host: 127.0.0.1, port: 4006}
    power: {driver: qemu, port: 4006, bios: $tmp/k/initrd, extra: [-nic, user]}
    deploy: {driver: uboot-tftp, tftp_root: $tmp/tftp}
plan: {name: p, suites: [fua-vs-cache]}
YAML
cp suites/fua-vs-cache.yaml "$tmp/"
set +e
"$EMMCLAB" check -q "$tmp/plan.yaml" 2>"$tmp/err9"
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$tmp/err9" >&2; fail "plan without agent exited $rc, want 2"; }
grep -qxF "emmclab: $tmp/plan.yaml:4:25: board q1: the plan runs the agent, but type plain has no shell.agent_path" "$tmp/err9" \
	|| { cat "$tmp/err9" >&2; fail "agent path error"; }
[ "$(wc -l <"$tmp/err9")" = 1 ] || { cat "$tmp/err9" >&2; fail "the U-Boot QEMU board is fine"; }

echo "check_example: ok"
