#!/bin/bash
# virt_suspend.sh - suspend and resume keep I/O working in all four modes
# (issue 16, 0005): on each kernel series that can boot here (virtlib's
# virt_kernels), one boot; per mode the mmc modules are loaded again with
# the mode's parameters, a pattern is written and read back (O_DIRECT), the
# knob is flipped at run time the way the review reproduced the bug
# (disable_cqe 0 -> 1 or 1 -> 0; a fixed series refuses the write: the
# parameter is read-only), the board suspends and resumes
# (pm_test=devices, mem or else freeze), and the pattern must be written,
# read back and verified again with no I/O error in the kernel log.
# The unfixed 0005 fails here: CQE stays on with the card out of command
# queue mode (vemmc refuses the queued tasks), or a queue of 64 tags
# reaches the CQE (vemmc refuses tags at or above the depth).
# VIRT_SERIES restricts the series (e.g. VIRT_SERIES=6.1).
set -euo pipefail
. "${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}/harness/tests/helpers/virtlib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
series=$(echo ${VIRT_SERIES:-$(virt_kernels)})
[ -n "$series" ] || fail "no kernel series to boot"
for s in $series; do
	t0=$(date +%s)
	virt_prepare "$tmp" "$s"
	/usr/bin/python3 - "$SRC" "$kernel" "$tmp/initramfs.cpio.gz" "$kver" <<'PY' || fail "suspend/resume on $kver"
import sys
src, kernel, initrd, kver = sys.argv[1:5]
sys.path.insert(0, src + "/harness/tests/helpers")
from virtguest import Guest
modes = [("fua", "fua=on", 1), ("cache-nofua", "fua=off", 1),
         ("fua-cqe", "fua=on", 0), ("cache-nofua-cqe", "fua=off", 0)]
g = Guest(src + "/boards/virt/qemu-run.sh", kernel, initrd, "quiet loglevel=4")
bad = []
def sh(cmd, tmo=120):
    out, rc = g.sh(cmd, tmo)
    return out, rc
def rw(tag):
    """write 1 MiB at a fresh offset, read it back, compare; True when it worked"""
    off = {"before": 100, "after": 300}[tag]
    _, rc = sh("dd if=/tmp/pat of=$DEV bs=4096 seek=%d oflag=direct conv=fsync 2>/dev/null && "
               "dd if=$DEV bs=4096 skip=%d count=256 iflag=direct 2>/dev/null | cmp -s - /tmp/pat"
               % (off, off), 180)
    return rc == 0
try:
    g.login()
    sh("umount /data; dd if=/dev/urandom of=/tmp/pat bs=4096 count=256 2>/dev/null")
    state, _ = sh("cat /sys/power/state")
    how = "mem" if "mem" in state.split() else "freeze"
    sh("echo devices > /sys/power/pm_test; "
       "[ ! -w /sys/module/suspend/parameters/pm_test_delay ] || "
       "echo 0 > /sys/module/suspend/parameters/pm_test_delay")
    for mode, fua, dis in modes:
        sh("rmmod vemmc mmc_block mmc_core")
        out, rc = sh("insmod /lib/modules/mmc_core.ko disable_cqe=%d && "
                     "insmod /lib/modules/mmc_block.ko %s && insmod /lib/modules/vemmc.ko && "
                     "n=0; while [ ! -b /dev/mmcblk0 ] && [ $n -lt 100 ]; do sleep 0.1; "
                     "n=$((n+1)); done; DEV=/dev/mmcblk0; [ -b $DEV ]" % (dis, fua))
        if rc:
            sys.exit("%s %s: the card did not come up: %s" % (kver, mode, out))
        cqe, _ = sh("cat /sys/block/mmcblk0/device/cmdq_en 2>/dev/null || echo 0")
        want = "0" if dis else "1"
        if cqe.strip() != want:
            sys.exit("%s %s: cmdq_en=%s, expected %s" % (kver, mode, cqe.strip(), want))
        if not rw("before"):
            sys.exit("%s %s: I/O does not work before the suspend" % (kver, mode))
        sh("dmesg -c > /dev/null")
        _, flip = sh("echo %d > /sys/module/mmc_core/parameters/disable_cqe 2>/dev/null" % (1 - dis))
        out, rc = sh("echo %s > /sys/power/state" % how, 180)
        ok = rw("after")
        log, _ = sh("dmesg | grep -E 'I/O error|refused|queue depth|recovery' | head -5")
        stats, _ = sh("grep -E '^(illegal_cmds|bad_tags) ' /sys/kernel/debug/vemmc/stats | tr '\\n' ' '")
        print("%s %s: knob flip %s, %s suspend %s, I/O after resume %s; vemmc %s" % (
            kver, mode, "accepted" if flip == 0 else "refused", how,
            "ok" if rc == 0 else "failed (rc %d)" % rc, "ok" if ok and not log.strip() else "FAILED",
            stats.strip()), flush=True)
        if rc or not ok or log.strip():
            bad.append("%s: %s" % (mode, log.strip().replace("\n", " | ") or "I/O failed"))
        # the knob back to the mode's value for the next reload (a fixed series: read-only)
        sh("echo %d > /sys/module/mmc_core/parameters/disable_cqe 2>/dev/null" % dis)
finally:
    g.kill()
if bad:
    sys.exit("%s: I/O broken after resume in %s" % (kver, "; ".join(bad)))
PY
	echo "virt suspend $s ($kver): $(( $(date +%s) - t0 )) s"
done
echo "PASS: virt suspend/resume (four modes, I/O verified after resume) on: $series"
