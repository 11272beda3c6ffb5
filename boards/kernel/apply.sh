#!/bin/bash
# apply.sh - apply the FUA-disable series to a Linux 6.1 source tree.
#
#   apply.sh [--check] TREE
#
# --check only verifies that every patch applies (patch --dry-run), in order,
# without changing TREE.  Without it the series is applied; patches already
# applied are skipped, so running it twice is harmless.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	shift
fi
[ $# -eq 1 ] || { echo "usage: ${0##*/} [--check] LINUX-6.1-TREE" >&2; exit 2; }
tree=$1
[ -f "$tree/Makefile" ] && [ -d "$tree/drivers/mmc/core" ] || kdie "$tree is not a kernel tree"

if [ $check = 1 ]; then
	# Dry runs cannot see earlier patches of the series, so check on a copy of
	# the files the series touches.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for f in $(kseries_patches | xargs grep -h '^+++ b/' | sed 's|^+++ b/||' | sort -u); do
		mkdir -p "$tmp/$(dirname "$f")"
		[ -f "$tree/$f" ] && cp "$tree/$f" "$tmp/$f"
	done
	kseries_apply "$tmp"
	klog "the series applies to $tree"
	exit 0
fi
kseries_apply "$tree"
