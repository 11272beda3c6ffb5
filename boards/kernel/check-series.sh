#!/bin/bash
# check-series.sh - prove a series applies to Debian's linux-source-<version>
# and that the files it changes compile for arm64 and x86_64 (the objects
# only, not a kernel).
#
#   check-series.sh [--series NAME] [--arch arm64|x86_64|all]
#
# NAME: 6.1, 6.12 or upstream-6.12 (default $KSERIES_VERSION, else 6.1; see
# lib.sh).  Applies the series to the shared tree of its kernel version in
# $EMMCLAB_CACHE/kernel (unpacked once per version; series of one version
# share it), configures it once per architecture (arm64: defconfig +
# arm64-emmclab.config, sdhci-sprd on; x86_64: x86_64_defconfig +
# x86_64-check.config) and compiles with -Werror the objects of the C files
# the series touches (drivers/mmc/host/* on arm64 only); a touched
# drivers/mmc header that none of them includes, through its includers.  Then checks what the series' `checks`
# file says the objects must hold.  Exit 0 = good; 77 = cannot run here (no
# linux-source-<version> or no aarch64 cross compiler); anything else = the
# series is broken.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { echo "usage: ${0##*/} [--series NAME] [--arch arm64|x86_64|all]" >&2; exit 2; }
archs="arm64 x86_64"
while [ $# -gt 0 ]; do
	case $1 in
	--series) [ $# -ge 2 ] || usage; kseries_select "$2"; shift 2 ;;
	--arch)
		[ $# -ge 2 ] || usage
		case $2 in arm64 | x86_64) archs=$2 ;; all) ;; *) usage ;; esac
		shift 2 ;;
	*) usage ;;
	esac
done

CROSS=${CROSS_COMPILE:-aarch64-linux-gnu-}
JOBS=${JOBS:-2}
if [ ! -r "$KSOURCE_TARBALL" ]; then
	echo "SKIP: $KSOURCE_TARBALL missing (apt-get install linux-source-$KSERIES_KERNEL)"
	exit 77
fi
if ! command -v "${CROSS}gcc" > /dev/null; then
	echo "SKIP: ${CROSS}gcc missing (apt-get install gcc-aarch64-linux-gnu)"
	exit 77
fi
for tool in make bc flex bison patch gcc; do
	command -v $tool > /dev/null || kdie "$tool missing (needed to configure a kernel)"
done

t0=$(date +%s)
ktree_lock
tree=$(ktree_prepare)
base=$(dirname "$tree")

# The objects to compile for arch $1 (paths relative to the tree).
series_objects() {
	local arch=$1 f c
	for f in $(kseries_files); do
		case $f in
		drivers/mmc/host/*) [ "$arch" = arm64 ] || continue ;;
		esac
		case $f in
		drivers/*.c) echo "${f%.c}.o" ;;
		drivers/mmc/*.h)
			# a header is compiled through the touched C files that
			# include it; only when none does, through all its includers
			inc=$(grep -l "^#include \"${f##*/}\"" "$tree/$(dirname "$f")"/*.c)
			mine=$(for c in $inc; do c=${c#"$tree"/}; kseries_files | grep -qxF "$c" && echo "$c"; done)
			for c in ${mine:-$inc}; do
				c=${c#"$tree"/}
				echo "${c%.c}.o"
			done ;;
		esac
	done | sort -u
}

for arch in $archs; do
	out=$base/build-$arch
	case $arch in
	arm64) cross=$CROSS defcfg=defconfig frag=$KDIR_SELF/arm64-emmclab.config
		need="CONFIG_MMC=y CONFIG_MMC_BLOCK=y CONFIG_MMC_SDHCI_SPRD=y" ;;
	x86_64) cross= defcfg=x86_64_defconfig frag=$KDIR_SELF/x86_64-check.config
		need="CONFIG_MMC=y CONFIG_MMC_BLOCK=y" ;;
	esac
	kmake() { make -s -C "$tree" O="$out" ARCH=$arch CROSS_COMPILE="$cross" "$@"; }
	cfgkey=$(cat "$frag" | sha256sum | cut -c1-16)
	if [ "$(cat "$out/.emmclab-config" 2> /dev/null)" != "$cfgkey" ]; then
		rm -rf "$out"
		mkdir -p "$out"
		klog "configuring $arch ($defcfg + ${frag##*/})"
		kmake $defcfg
		"$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$frag" > "$out/merge.log"
		kmake olddefconfig
		echo "$cfgkey" > "$out/.emmclab-config"
	fi
	for sym in $need; do
		grep -qx "$sym" "$out/.config" || kdie "$arch config lacks $sym (see $out/merge.log)"
	done
	objs=$(series_objects $arch)
	[ -n "$objs" ] || kdie "series $KSERIES_VERSION touches no C file to compile"
	klog "compiling for $arch: $(echo $objs)"
	kmake -j"$JOBS" KCFLAGS=-Werror $objs

	# what the objects must hold: lines "sym OBJECT REGEX" (a symbol of
	# OBJECT matches) and "str OBJECT TEXT" (OBJECT contains TEXT); checked
	# where OBJECT was compiled for this architecture.  (nm output is
	# captured first: grep -q closing a pipe early fails under pipefail.)
	if [ -f "$KSERIES_DIR/checks" ]; then
		while read -r kind obj what; do
			case $kind in '' | '#'*) continue ;; esac
			grep -qxF "$obj" <<< "$objs" || continue
			case $kind in
			sym)
				syms=$("${cross}nm" "$out/$obj")
				grep -q -- "$what" <<< "$syms" || kdie "$arch: $obj has no symbol matching $what" ;;
			str) grep -aqF -- "$what" "$out/$obj" || kdie "$arch: $obj does not contain '$what'" ;;
			*) kdie "$KSERIES_DIR/checks: unknown check '$kind'" ;;
			esac
		done < "$KSERIES_DIR/checks"
	fi
done
echo "OK: series $KSERIES_VERSION ($(kseries_hash)) applies to $(basename "$KSOURCE_TARBALL") and compiles for $(echo $archs | sed 's/ / and /') ($(( $(date +%s) - t0 )) s)"
