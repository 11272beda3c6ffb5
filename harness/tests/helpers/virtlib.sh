# virtlib.sh - shared prelude of the virtual-board scenarios
# (harness/tests/scenario/virt_*.sh).  Source it after `set -euo pipefail`.
#
# Sets SRC, BIN, EMMCLAB, AGENT; exits 77 (ctest: skipped) with "SKIP: not installed: ..." when a
# Debian package the virtual board needs is missing (all are listed in
# .ci/packages.txt, so CI has them), and fails when the agent is not built.
# virt_prepare DIR [SERIES]: builds the initramfs (cached) for the newest
# /boot kernel of SERIES (default $VIRT_SERIES, else 6.1: the 6.1 lab series
# against 6.1.0-*-amd64; 6.12 against 6.12.*) into DIR/initramfs.cpio.gz and
# sets $kernel to its vmlinuz and $kver to its version.
# virt_kernels: the series this machine can boot (a kernel in /boot, the
# linux-source tarball and boards/kernel/patches/SERIES), one a line.
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

virt_kver() { # SERIES: the newest /boot kernel of that series
	ls /boot/vmlinuz-"$1".* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1
}

virt_kernels() {
	local s
	for s in 6.1 6.12; do
		[ -n "$(virt_kver $s)" ] && [ -r "/usr/src/linux-source-$s.tar.xz" ] &&
			[ -f "$SRC/boards/kernel/patches/$s/series" ] && echo "$s"
	done
	return 0
}

virt_prepare() {
	local series=${2:-${VIRT_SERIES:-6.1}}
	kver=$(virt_kver "$series")
	if [ -z "$kver" ] || [ ! -r "/usr/src/linux-source-$series.tar.xz" ]; then
		echo "SKIP: not installed: linux-image-$series-amd64 linux-headers-$series-amd64 linux-source-$series"
		exit 77
	fi
	KSERIES_VERSION=$series "$SRC/boards/virt/build.sh" --agent "$AGENT" --kver "$kver" \
		--out "$1/initramfs.cpio.gz" > /dev/null
	kernel=/boot/vmlinuz-$kver
}
