#!/bin/bash
# kver.sh - the distribution kernel a lab series is for (the one the virtual
# board boots and build-modules.sh builds against):
#
#   kver.sh [--series NAME] [--vmlinuz]
#
# NAME: 6.1 (default, or $KSERIES_VERSION) or 6.12.  Prints the kernel
# version (6.1 -> the newest /boot/vmlinuz-6.1.*, never a 6.12 one), or with
# --vmlinuz the path of its /boot image.  Exit 1 when there is none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
img=0
while [ $# -gt 0 ]; do
	case $1 in
	--series) [ $# -ge 2 ] || exit 2; kseries_select "$2"; shift 2 ;;
	--vmlinuz) img=1; shift ;;
	*) echo "usage: ${0##*/} [--series NAME] [--vmlinuz]" >&2; exit 2 ;;
	esac
done
k=$(kseries_default_kver)
if [ $img = 1 ]; then
	[ -r "/boot/vmlinuz-$k" ] || kdie "no /boot/vmlinuz-$k (apt-get install linux-image-$k)"
	echo "/boot/vmlinuz-$k"
else
	echo "$k"
fi
