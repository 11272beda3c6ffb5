#!/bin/bash
# apply.sh - apply a FUA-disable series to a Linux source tree.
#
#   apply.sh [--series NAME] [--check] TREE
#
# NAME: 6.1 (default, or $KSERIES_VERSION), 6.12 or upstream-6.12 (see
# lib.sh); TREE must be of the series' kernel version (its Makefile says).
# --check only verifies that every patch applies (patch --dry-run), in order,
# without changing TREE.  Without it the series is applied; patches already
# applied are skipped, so running it twice is harmless.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { echo "usage: ${0##*/} [--series NAME] [--check] LINUX-TREE" >&2; exit 2; }
check=0
while [ $# -gt 1 ]; do
	case $1 in
	--check) check=1; shift ;;
	--series) kseries_select "$2"; shift 2 ;;
	*) usage ;;
	esac
done
[ $# -eq 1 ] || usage
tree=$1
[ -f "$tree/Makefile" ] && [ -d "$tree/drivers/mmc/core" ] || kdie "$tree is not a kernel tree"
# a 6.1 series on a 6.12 tree could half-apply: refuse on the version
tv=$(awk '$1 == "VERSION" { v = $3 } $1 == "PATCHLEVEL" { p = $3 } END { print v "." p }' "$tree/Makefile")
[ "$tv" = "$KSERIES_KERNEL" ] || kdie "$tree is Linux $tv, series $KSERIES_VERSION is for $KSERIES_KERNEL"

if [ $check = 1 ]; then
	# Dry runs cannot see earlier patches of the series, so check on a copy of
	# the files the series touches.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for f in $(kseries_files); do
		mkdir -p "$tmp/$(dirname "$f")"
		[ -f "$tree/$f" ] && cp "$tree/$f" "$tmp/$f"
	done
	kseries_apply "$tmp"
	klog "the series applies to $tree"
	exit 0
fi
kseries_apply "$tree"
