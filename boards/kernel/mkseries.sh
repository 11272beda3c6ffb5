#!/bin/bash
# mkseries.sh - produce the final patches of a series, signed off by the
# builder: the stored patches (patches/<series>/) carry no identity, only the
# marker EMMCLAB-AUTHOR in "From:" and "Signed-off-by:".  This replaces it
# with `git config user.name` <`git config user.email`> of this checkout
# (the person who sends the series certifies the DCO, so the identity is
# never made up: no identity, no patches).
#
#   mkseries.sh [--series NAME] [--out DIR] [--quirks FILE] [--checkpatch]
#
# NAME: 6.1, 6.12 or upstream-6.12 (default $KSERIES_VERSION, else 6.1).
# DIR defaults to $EMMCLAB_CACHE/mkseries/NAME; it is emptied of *.patch
# first.  Prints DIR.  --checkpatch then runs the kernel's own
# scripts/checkpatch.pl --strict on every produced patch, from the shared
# tree of the series' kernel (see check-series.sh) and fails on any error,
# warning or check.  --quirks FILE (upstream series only) adds one more
# patch, "mmc: core: avoid reliable writes on measured eMMC parts", that puts
# the MMC_FIXUP lines of FILE into the MMC_QUIRK_AVOID_REL_WRITE table of
# drivers/mmc/core/quirks.h; the "# " lines of FILE (the evidence) go into
# its commit message.  FILE format: docs/kernel.md, "Quirk table entries".
# Exit codes: 0 ok, 1 checkpatch findings or a malformed
# stored patch, 2 usage or no git identity, 3 checkpatch cannot run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { echo "usage: ${0##*/} [--series NAME] [--out DIR] [--quirks FILE] [--checkpatch]" >&2; exit 2; }
out= check=0 quirks=
while [ $# -gt 0 ]; do
	case $1 in
	--series) [ $# -ge 2 ] || usage; kseries_select "$2"; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--checkpatch) check=1; shift ;;
	--quirks) [ $# -ge 2 ] || usage; quirks=$2; shift 2 ;;
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

# The quirk-table patch from FILE: needs the series' quirks.h, so the tree.
if [ -n "$quirks" ]; then
	[ -r "$quirks" ] || { klog "--quirks $quirks: cannot read it"; exit 2; }
	kseries_files | grep -qx drivers/mmc/core/quirks.h ||
		{ klog "--quirks: series $KSERIES_VERSION has no quirk table (use upstream-6.12)"; exit 2; }
	ktree_lock
	tree=$(ktree_prepare)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	entries= evidence= n=0 ln=0
	while IFS= read -r line || [ -n "$line" ]; do
		ln=$((ln + 1))
		case $line in
		'' | '#') continue ;;
		'# '*) evidence="$evidence${line#\# }"$'\n'; continue ;;
		esac
		# MMC_FIXUP("NAME", MANFID, OEMID, add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE),
		re='^MMC_FIXUP\("([^"\\]{1,6})", (CID_MANFID_[A-Z0-9_]+|0x[0-9a-fA-F]{1,2}), (CID_OEMID_ANY|0x[0-9a-fA-F]{1,4}), add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE\),$'
		[[ $line =~ $re ]] || { klog "$quirks:$ln: not an entry: $line (expected: MMC_FIXUP(\"NAME\", CID_MANFID_X, CID_OEMID_ANY, add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE),)"; exit 2; }
		m=${BASH_REMATCH[2]}
		case $m in
		CID_MANFID_*) grep -q "^#define $m[[:space:]]" "$tree/drivers/mmc/core/card.h" ||
			{ klog "$quirks:$ln: $m is not defined in drivers/mmc/core/card.h (use the hex manfid)"; exit 2; } ;;
		esac
		entries="$entries	MMC_FIXUP(\"${BASH_REMATCH[1]}\", $m, ${BASH_REMATCH[3]}, add_quirk_mmc,"$'\n'"		  MMC_QUIRK_AVOID_REL_WRITE),"$'\n'
		n=$((n + 1))
	done < "$quirks"
	[ $n -gt 0 ] || { klog "$quirks: no MMC_FIXUP entry"; exit 2; }
	mkdir -p "$tmp/a/drivers/mmc/core" "$tmp/b/drivers/mmc/core"
	cp "$tree/drivers/mmc/core/quirks.h" "$tmp/a/drivers/mmc/core/quirks.h"
	# after the comment that opens the table (its last line names the rule)
	ENTRIES=$entries awk '
		{ print }
		/One entry per part, from measurements of both modes on the part\./ { want = 1; next }
		want && /^\t \*\/$/ { printf "%s", ENVIRON["ENTRIES"]; want = 0; done = 1 }
		END { if (!done) exit 1 }' "$tmp/a/drivers/mmc/core/quirks.h" > "$tmp/b/drivers/mmc/core/quirks.h" ||
		{ klog "the MMC_QUIRK_AVOID_REL_WRITE table is not in the series' quirks.h"; exit 1; }
	last=$(ls "$out"/*.patch | tail -1)
	num=$(printf '%04d' $(( 10#$(basename "$last" | cut -c1-4) + 1 )))
	qp=$out/$num-mmc-core-avoid-reliable-writes-on-measured-eMMC-parts.patch
	{
		echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
		echo "From: $ident"
		echo "Date: $(LC_ALL=C date -R)"
		echo "Subject: [PATCH] mmc: core: avoid reliable writes on measured eMMC parts"
		echo
		echo "Set MMC_QUIRK_AVOID_REL_WRITE on eMMC parts whose reliable writes were"
		echo "measured much slower than a write followed by a cache flush, and whose"
		echo "acknowledged data survived power cuts without FUA."
		if [ -n "$evidence" ]; then
			echo
			printf '%s' "$evidence"
		fi
		echo
		echo "Signed-off-by: $ident"
		echo "---"
		(cd "$tmp" && diff -u --label a/drivers/mmc/core/quirks.h --label b/drivers/mmc/core/quirks.h \
			a/drivers/mmc/core/quirks.h b/drivers/mmc/core/quirks.h || true)
	} > "$qp"
	patch -d "$tmp/a" -p1 -s -F0 --dry-run < "$qp" > /dev/null || { klog "generated $qp does not apply"; exit 1; }
	rm -rf "$tmp"
	trap - EXIT
	klog "quirk table: $n entries from $quirks in ${qp##*/}"
fi
klog "series $KSERIES_VERSION signed off by $ident in $out"

if [ $check = 1 ]; then
	command -v perl > /dev/null || { klog "perl missing: cannot run checkpatch.pl"; exit 3; }
	[ -r "$KSOURCE_TARBALL" ] || { klog "$KSOURCE_TARBALL missing: cannot run its checkpatch.pl"; exit 3; }
	[ -n "${tree:-}" ] || { ktree_lock; tree=$(ktree_prepare); }
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
