#!/bin/bash
# virt_fua_ignored.sh - a kernel that ignores the FUA knob is refused in every
# workload (issue 15; mode_proof.sh does the same with the sim fault
# fua-ignored).  QEMU (TCG) boots Debian's 6.1 kernel with the STOCK mmc_core /
# mmc_block of linux-source-6.1 (build-modules.sh --unpatched, an empty
# series): they have no fua / disable_cqe parameters, so the modes' command
# lines are unknown parameters, ignored, and mmc_block keeps FUA on a card
# with reliable write.  The card is vemmc's "nocqe" profile, so the missing
# disable_cqe knob does not matter and the fua jobs happen to run their mode.
# Asserted: for androbench and fscopy (one suite each) the cache-nofua job is
# refused (mode-mismatch, verified mode fua, no samples, the event and the
# controller's log give the sysfs the DUT showed) and the fua job is ok with
# samples; the run exits 3 (infrastructure: jobs were not run as asked).
set -euo pipefail
. "${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}/harness/tests/helpers/virtlib.sh"

kver=$(ls /boot/vmlinuz-6.1.* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
[ -n "$kver" ] || { echo "SKIP: not installed: linux-image-6.1 (/boot/vmlinuz-6.1.*)"; exit 77; }
kernel=/boot/vmlinuz-$kver

tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

# the stock modules: a series that lists no patch (built and cached apart
# from the patched ones, under modules-KVER-unpatched)
mkdir "$tmp/series" && : > "$tmp/series/series"
mods=$(KSERIES_VERSION=unpatched-6.1 KSERIES_DIR="$tmp/series" \
	"$SRC/boards/kernel/build-modules.sh" --unpatched --kver "$kver" | tail -1)
"$SRC/boards/virt/mkinitramfs.sh" --agent "$AGENT" --modules "$mods" --kver "$kver" \
	--out "$tmp/initramfs.cpio.gz" > /dev/null

# more time for the first console byte ("quiet": it comes late under TCG)
sed 's/first_output: 30s/first_output: 3m/' "$SRC/boards/types/qemu-vemmc.yaml" > "$tmp/qemu-vemmc.yaml"
grep -q 'first_output: 3m' "$tmp/qemu-vemmc.yaml" || fail "no first_output in the qemu-vemmc type"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$tmp/lab.yaml" <<EOT
include:
  - $tmp/qemu-vemmc.yaml
lab:
  name: virt-fua-ignored
  results: $tmp/lab.db
  transcripts: $tmp/transcripts
kernels:
  - name: debian-$kver-stock-mmc
    image: $kernel
    initrd: $tmp/initramfs.cpio.gz
    cmdline: "quiet loglevel=4"
defaults:
  enabled: true
boards:
  - name: stock
    type: qemu-vemmc
    part: {label: "vemmc nocqe", model: nocqe}
    console: {driver: tcp, host: 127.0.0.1, port: $port, reconnect_delay: 200ms}
    power: {driver: qemu, port: $port, dir: "$tmp/qemu", append: "vemmc.profile=nocqe", off_time: 100ms}
    deploy: {driver: qemu, dir: "$tmp/qemu"}
EOT
cat > "$tmp/plan.yaml" <<EOT
suites:
  - name: ab
    modes: [fua, cache-nofua]
    iterations: 1
    reboot_between_modes: true
    order: sequential
    seed: 1
    precondition_passes: 0
    exclude_warmup: false
    workloads:
      - name: androbench
        args: {seq_mib: 1, req_mib: 1, rand_mib: 1, rand_ios: 16, count: 1}
  - name: fs
    modes: [fua, cache-nofua]
    iterations: 1
    reboot_between_modes: true
    order: sequential
    seed: 1
    precondition_passes: 0
    exclude_warmup: false
    workloads:
      - name: fscopy
        args: {dir: /data, scale: 0.0005, count: 1}
plan:
  name: virt-fua-ignored
  lab: lab.yaml
  suites: [ab, fs]
  budget: 20m
  results: lab.db
EOT
"$EMMCLAB" check "$tmp/plan.yaml" > /dev/null

t0=$(date +%s)
set +e
timeout 840 "$EMMCLAB" run --db "$tmp/lab.db" --no-upload --no-report \
	--transcripts "$tmp/transcripts" "$tmp/plan.yaml" > "$tmp/run.log" 2>&1
rc=$?
set -e
echo "virt fua-ignored run: $(( $(date +%s) - t0 )) s, exit $rc"
! pgrep -f "port=$port,server=on" > /dev/null || fail "QEMU still running after the run"

q() { sqlite3 "$tmp/lab.db" "$1"; }
show() {
	q "select suite, mode, status, coalesce(verified_mode, '-') from job" >&2 || true
	q "select kind, message from event" >&2 || true
	tail -30 "$tmp/run.log" >&2
}
[ "$rc" = 3 ] || { show; fail "emmclab run exited $rc, expected 3 (refused jobs)"; }

job() { q "select status || ' ' || coalesce(verified_mode, '-') from job where suite = '$1' and mode = '$2'"; }
samples() { q "select count(*) from sample s join iteration i on i.id = s.iteration_id
	join job j on j.id = i.job_id where j.suite = '$1' and j.mode = '$2'"; }
why="requested cache-nofua but the DUT runs fua (queue/fua=1 write_cache=1 cqe=0); no samples stored for this job"
for s in ab fs; do
	w=androbench
	[ $s = ab ] || w=fscopy
	[ "$(job $s fua)" = "ok fua" ] || { show; fail "$w in fua: $(job $s fua), want ok fua"; }
	[ "$(samples $s fua)" -gt 0 ] || fail "$w in fua: no samples stored"
	[ "$(job $s cache-nofua)" = "mode-mismatch fua" ] ||
		{ show; fail "$w in cache-nofua not refused: $(job $s cache-nofua), want mode-mismatch fua"; }
	[ "$(samples $s cache-nofua)" = 0 ] || fail "$w in cache-nofua: $(samples $s cache-nofua) samples stored for a refused job"
	ev=$(q "select e.message from event e join job j on j.id = e.job_id
		where j.suite = '$s' and j.mode = 'cache-nofua' and e.kind = 'mode-mismatch'")
	[ "$ev" = "$why" ] || fail "$w in cache-nofua: mode-mismatch event '$ev', want '$why'"
done
[ "$(grep -cF "$why" "$tmp/run.log")" -ge 2 ] || { tail -30 "$tmp/run.log"; fail "the controller's log does not say why each cache-nofua job was refused"; }
echo "PASS: virt fua-ignored (stock mmc modules: cache-nofua refused in androbench and fscopy, fua ok)"
