#!/bin/bash
# build.sh - everything the virtual board boots besides Debian's kernel:
# the patched mmc modules + vemmc (../kernel/build-modules.sh) and the
# initramfs with the agent (mkinitramfs.sh).
#
#   build.sh [--agent PATH] [--kver KVER] [--out FILE]
#
# --agent defaults to the emmclab-agent of the build directory in
# $EMMCLAB_BIN (or build/); --out to /var/tmp/emmclab-virt/initramfs.cpio.gz
# (the path boards/labs/virt-lab.yaml boots); --kver to build-modules.sh's
# default (the kernel of its series).  Prints the initramfs path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
agent= kver= out=/var/tmp/emmclab-virt/initramfs.cpio.gz
while [ $# -gt 0 ]; do
	case $1 in
	--agent) agent=$2; shift 2 ;;
	--kver) kver=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) sed -n '2,12p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$agent" ] || agent=${EMMCLAB_BIN:-$here/../../build}/suites/agent/emmclab-agent
mods=$("$here/../kernel/build-modules.sh" ${kver:+--kver "$kver"} | tail -1)
# the kernel the modules were built for (modules-KVER)
"$here/mkinitramfs.sh" --agent "$agent" --modules "$mods" --kver "${mods##*/modules-}" --out "$out"
