#!/bin/bash
# kernel_series.sh - the lab series for Linux 6.1 (boards/kernel/patches/6.1)
# applies to Debian's linux-source-6.1 and its touched objects compile for
# arm64 (sdhci-sprd included) and x86_64 with -Werror; a damaged patch is
# refused by apply.sh; mkseries.sh signs it with the git identity and
# checkpatch.pl --strict finds nothing, but finds a planted fault.  The
# unpacked tree is cached (EMMCLAB_CACHE): only the first run pays for
# unpacking and configuring.  The 6.12 series: kernel_lts612.sh.
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
export KSERIES_VERSION=6.1

# 1. every file the series touches, pristine, in a small tree
files=$(grep -h '^+++ b/' "$K"/patches/6.1/*.patch | sed 's|^+++ b/|linux-source-6.1/|' | sort -u)
tar -C "$tmp" -xf $TARBALL linux-source-6.1/Makefile $files
sums() { (cd "$tmp" && find linux-source-6.1 -type f -exec sha256sum {} + | sort); }
before=$(sums)
"$K/apply.sh" --check "$tmp/linux-source-6.1"
[ "$before" = "$(sums)" ] || { echo "FAIL: apply.sh --check changed the tree"; exit 1; }
# a 6.12 series is refused on the 6.1 tree, by version
if "$K/apply.sh" --series 6.12 --check "$tmp/linux-source-6.1" 2> "$tmp/err"; then
	echo "FAIL: the 6.12 series was accepted for a 6.1 tree"; exit 1
fi
grep -q 'is Linux 6.1, series 6.12 is for 6.12' "$tmp/err" || { echo "FAIL: wrong refusal:"; cat "$tmp/err"; exit 1; }

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

# 3. applied to the whole tree, the changed files compile (arm64, x86_64)
out=$("$K/check-series.sh")
echo "$out"
grep -q '^OK: series 6.1 .* compiles for arm64 and x86_64' <<< "$out" || { echo "FAIL: check-series.sh"; exit 1; }
# 0005: disable_cqe is read-only after load
grep -q '^+module_param(disable_cqe, bool, 0444);$' "$K"/patches/6.1/0005-*.patch ||
	{ echo "FAIL: disable_cqe is not 0444"; exit 1; }

# 4. signed with the git identity; checkpatch --strict clean, and it does see a fault
"$K/mkseries.sh" --out "$tmp/signed" --checkpatch
id="$(git -C "$K" config user.name) <$(git -C "$K" config user.email)>"
[ "$(grep -lxF "Signed-off-by: $id" "$tmp"/signed/*.patch | wc -l)" = 5 ] || { echo "FAIL: not signed off by $id"; exit 1; }
if grep -q 'EMMCLAB-AUTHOR\|example\.invalid' "$tmp"/signed/*.patch; then echo "FAIL: placeholder left"; exit 1; fi
mkdir -p "$tmp/faulty"
cp "$K"/patches/6.1/* "$tmp/faulty/"
sed -i '0,/^+\t\tcard->ext_csd.cmdq_depth = 0;$/s//+\t\tcard->ext_csd.cmdq_depth = 0; /' "$tmp"/faulty/0005-*.patch
if KSERIES_DIR="$tmp/faulty" "$K/mkseries.sh" --out "$tmp/signed2" --checkpatch > "$tmp/cp" 2>&1; then
	echo "FAIL: checkpatch missed trailing whitespace"; cat "$tmp/cp"; exit 1
fi
grep -q 'trailing whitespace' "$tmp/cp" || { echo "FAIL: checkpatch output:"; cat "$tmp/cp"; exit 1; }
# 5. the virtual board's kernel for this series is a 6.1 one, also when /boot
# has a newer 6.12 (the modules are built from linux-source-6.1)
if ls /boot/vmlinuz-6.1.* > /dev/null 2>&1; then
	k=$("$K/kver.sh")
	case $k in 6.1.*) ;; *) echo "FAIL: kver.sh picked $k for series 6.1"; exit 1 ;; esac
	[ "$("$K/kver.sh" --vmlinuz)" = "/boot/vmlinuz-$k" ] || { echo "FAIL: kver.sh --vmlinuz"; exit 1; }
fi
if "$K/build-modules.sh" --kver 6.12.0-1-amd64 2> "$tmp/err"; then
	echo "FAIL: build-modules.sh built 6.1 sources for a 6.12 kernel"; exit 1
fi
grep -q 'is not 6.1.\*, the version of series 6.1' "$tmp/err" || { echo "FAIL: refusal:"; cat "$tmp/err"; exit 1; }
echo "PASS: kernel series 6.1"
