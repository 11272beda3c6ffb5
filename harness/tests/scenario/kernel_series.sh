#!/bin/bash
# kernel_series.sh - the FUA-disable series (boards/kernel) applies to
# Debian's linux-source-6.1 and compiles for arm64; a damaged patch is
# refused by apply.sh.  The unpacked tree is cached (EMMCLAB_CACHE), so only
# the first run pays for unpacking and configuring.
set -euo pipefail
SRC=${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
K=$SRC/boards/kernel
TARBALL=/usr/src/linux-source-6.1.tar.xz
if [ ! -r $TARBALL ]; then
	# .ci/packages.txt lists linux-source-6.1, so CI always runs this
	echo "SKIP: $TARBALL not installed (apt-get install linux-source-6.1)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. every file the series touches, pristine, in a small tree
files=$(grep -h '^+++ b/' "$K"/patches/6.1/*.patch | sed 's|^+++ b/|linux-source-6.1/|' | sort -u)
tar -C "$tmp" -xf $TARBALL linux-source-6.1/Makefile $files
mkdir -p "$tmp/linux-source-6.1/drivers/mmc/core"
sums() { (cd "$tmp" && find linux-source-6.1 -type f -exec sha256sum {} + | sort); }
before=$(sums)
"$K/apply.sh" --check "$tmp/linux-source-6.1"
[ "$before" = "$(sums)" ] || { echo "FAIL: apply.sh --check changed the tree"; exit 1; }

# 2. a patch whose context no longer matches is refused, by name
mkdir -p "$tmp/bad"
cp "$K"/patches/6.1/* "$tmp/bad/"
p=$(ls "$tmp"/bad/0004-*.patch)
sed -i 's/^ 	if (mmc_cache_enabled(card->host))$/ 	if (mmc_cache_on(card->host))/' "$p"
grep -q 'mmc_cache_on' "$p" || { echo "FAIL: could not damage the test patch"; exit 1; }
if KSERIES_DIR="$tmp/bad" "$K/apply.sh" --check "$tmp/linux-source-6.1" 2> "$tmp/err"; then
	echo "FAIL: a damaged patch was accepted"; exit 1
fi
grep -q 'does not apply.*0004-' "$tmp/err" || { echo "FAIL: error does not name the patch:"; cat "$tmp/err"; exit 1; }

# 3. applied to the whole tree, the changed files compile for arm64
"$K/check-series.sh"
echo "PASS: kernel series"
