# virtlib.sh - shared prelude of the virtual-board scenarios
# (harness/tests/scenario/virt_*.sh).  Source it after `set -euo pipefail`.
#
# Sets SRC, BIN, EMMCLAB, AGENT; exits 77 (ctest: skipped) with "SKIP: not installed: ..." when a
# Debian package the virtual board needs is missing (all are listed in
# .ci/packages.txt, so CI has them), and fails when the agent is not built.
# virt_prepare DIR: builds the initramfs (cached) into DIR/initramfs.cpio.gz
# and sets $kernel to the series kernel (boards/kernel/kver.sh: 6.1 unless
# KSERIES_VERSION says 6.12).
SRC=${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
BIN=${EMMCLAB_BIN:-$SRC/build}
EMMCLAB=${EMMCLAB:-$BIN/harness/emmclab}
AGENT=$BIN/suites/agent/emmclab-agent
# a sanitizer build: the guest gets the unsanitized static agent (no ASan runtime there)
[ ! -x "$AGENT-dut" ] || AGENT=$AGENT-dut

missing=
command -v qemu-system-x86_64 > /dev/null || missing="$missing qemu-system-x86"
ls /boot/vmlinuz-* > /dev/null 2>&1 || missing="$missing linux-image-amd64"
ls -d /usr/src/linux-headers-*-amd64 > /dev/null 2>&1 || missing="$missing linux-headers-amd64"
[ -r /usr/src/linux-source-6.1.tar.xz ] || missing="$missing linux-source-6.1"
file -L /bin/busybox 2> /dev/null | grep -q 'statically linked' || missing="$missing busybox-static"
command -v sqlite3 > /dev/null || missing="$missing sqlite3"
command -v e2fsck > /dev/null || missing="$missing e2fsprogs"
if [ -n "$missing" ]; then
	echo "SKIP: not installed:$missing"
	exit 77
fi
[ -x "$AGENT" ] || { echo "FAIL: no agent at $AGENT"; exit 1; }

fail() { echo "FAIL: $*"; exit 1; }

virt_prepare() {
	"$SRC/boards/virt/build.sh" --agent "$AGENT" --out "$1/initramfs.cpio.gz" > /dev/null
	kernel=$("$SRC/boards/kernel/kver.sh" --vmlinuz)
}
