#!/bin/bash
# mkseries.sh - produce the final patches of a series, signed off by the
# builder: the stored patches (patches/<series>/) carry no identity, only the
# marker EMMCLAB-AUTHOR in "From:" and "Signed-off-by:".  This replaces it
# with `git config user.name` <`git config user.email`> of this checkout
# (the person who sends the series certifies the DCO, so the identity is
# never made up: no identity, no patches).
#
#   mkseries.sh [--series NAME] [--out DIR] [--checkpatch]
#
# NAME: 6.1, 6.12 or upstream-6.12 (default $KSERIES_VERSION, else 6.1).
# DIR defaults to $EMMCLAB_CACHE/mkseries/NAME; it is emptied of *.patch
# first.  Prints DIR.  --checkpatch then runs the kernel's own
# scripts/checkpatch.pl --strict on every produced patch, from the shared
# tree of the series' kernel (see check-series.sh) and fails on any error,
# warning or check.  Exit codes: 0 ok, 1 checkpatch findings or a malformed
# stored patch, 2 usage or no git identity, 3 checkpatch cannot run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { echo "usage: ${0##*/} [--series NAME] [--out DIR] [--checkpatch]" >&2; exit 2; }
out= check=0
while [ $# -gt 0 ]; do
	case $1 in
	--series) [ $# -ge 2 ] || usage; kseries_select "$2"; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--checkpatch) check=1; shift ;;
	*) usage ;;
	esac
done

name=$(git -C "$KDIR_SELF" config user.name || true)
email=$(git -C "$KDIR_SELF" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	echo "${0##*/}: no git identity: set it with git config user.name 'Your Name' and git config user.email you@example.org (the Signed-off-by is yours)" >&2
	exit 2
fi
case $email in
*@*.*) ;;
*) echo "${0##*/}: git user.email '$email' is not a mail address" >&2; exit 2 ;;
esac
case "$name$email" in
*'<'* | *'>'* | *EMMCLAB-AUTHOR*) echo "${0##*/}: git identity '$name <$email>' is malformed" >&2; exit 2 ;;
esac
ident="$name <$email>"

out=${out:-$EMMCLAB_CACHE/mkseries/$KSERIES_VERSION}
mkdir -p "$out"
rm -f "$out"/*.patch
for p in $(kseries_patches); do
	f=${p##*/}
	[ "$(grep -c '^From: EMMCLAB-AUTHOR$' "$p")" = 1 ] ||
		{ klog "$f: no single 'From: EMMCLAB-AUTHOR' header"; exit 1; }
	[ "$(grep -c '^Signed-off-by: EMMCLAB-AUTHOR$' "$p")" = 1 ] ||
		{ klog "$f: no single 'Signed-off-by: EMMCLAB-AUTHOR' trailer"; exit 1; }
	# only the header and the trailer, never the diff (a "+From: " line)
	awk -v id="$ident" '
		/^---$/ { body = 1 }
		!body && $0 == "From: EMMCLAB-AUTHOR" { print "From: " id; next }
		!body && $0 == "Signed-off-by: EMMCLAB-AUTHOR" { print "Signed-off-by: " id; next }
		{ print }' "$p" > "$out/$f"
done
klog "series $KSERIES_VERSION signed off by $ident in $out"

if [ $check = 1 ]; then
	command -v perl > /dev/null || { klog "perl missing: cannot run checkpatch.pl"; exit 3; }
	[ -r "$KSOURCE_TARBALL" ] || { klog "$KSOURCE_TARBALL missing: cannot run its checkpatch.pl"; exit 3; }
	ktree_lock
	tree=$(ktree_prepare)
	bad=0
	for p in "$out"/*.patch; do
		# from the tree root, so checkpatch also checks against the tree
		if ! r=$(cd "$tree" && perl scripts/checkpatch.pl --strict --quiet --no-summary "$p" 2>&1) || [ -n "$r" ]; then
			echo "checkpatch: ${p##*/}:"
			echo "$r"
			bad=1
		fi
	done
	[ $bad = 0 ] || { klog "checkpatch --strict found problems in series $KSERIES_VERSION"; exit 1; }
	klog "checkpatch --strict: no errors, warnings or checks in $(ls "$out"/*.patch | wc -l) patches of $KSERIES_VERSION"
fi
echo "$out"
