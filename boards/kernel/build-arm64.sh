#!/bin/bash
# build-arm64.sh - a board kernel for arm64 with a lab series: Debian's
# linux-source-<version> + patches + a defconfig + arm64-emmclab.config,
# built with gcc-aarch64-linux-gnu.  Produces Image, the DTBs and the modules.
#
#   build-arm64.sh [--series NAME] [--defconfig NAME] [--fragment FILE]... [--out DIR] [--dtbs]
#
# --series     6.1 (default, or $KSERIES_VERSION) or 6.12 (see lib.sh)
# --defconfig  base configuration (default: defconfig; a board's own, e.g.
#              a vendor defconfig copied into arch/arm64/configs, works too)
# --fragment   extra config fragments merged after arm64-emmclab.config
# --out        where Image, dtbs/ and modules/ are copied
#              (default $EMMCLAB_CACHE/arm64-out)
# This is a full kernel build: on 2 cores expect an hour or more.  CI only
# runs check-series.sh (the changed objects).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

defconfig=defconfig out= dtbs=0
frags=("$KDIR_SELF/arm64-emmclab.config")
while [ $# -gt 0 ]; do
	case $1 in
	--series) kseries_select "$2"; shift 2 ;;
	--defconfig) defconfig=$2; shift 2 ;;
	--fragment) frags+=("$(realpath "$2")"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	--dtbs) dtbs=1; shift ;;
	*) sed -n '2,17p' "$0" >&2; exit 2 ;;
	esac
done
CROSS=${CROSS_COMPILE:-aarch64-linux-gnu-}
command -v "${CROSS}gcc" > /dev/null || kdie "${CROSS}gcc missing (apt-get install gcc-aarch64-linux-gnu)"
out=${out:-$EMMCLAB_CACHE/arm64-out-$KSERIES_VERSION}
# the shared tree keeps this series for the whole build (check-series.sh
# of the same kernel version waits)
ktree_lock
tree=$(ktree_prepare)
obj=$(dirname "$tree")/build-arm64-full
kmake() { make -C "$tree" O="$obj" ARCH=arm64 CROSS_COMPILE="$CROSS" "$@"; }

mkdir -p "$obj"
kmake -s "$defconfig"
"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}"
kmake -s olddefconfig
for sym in CONFIG_MMC=y CONFIG_MMC_BLOCK=y; do
	grep -qx "$sym" "$obj/.config" || kdie "the merged config lacks $sym"
done
targets="Image modules"
[ $dtbs = 1 ] && targets="$targets dtbs"
kmake -j"${JOBS:-$(nproc)}" $targets
mkdir -p "$out"
cp "$obj/arch/arm64/boot/Image" "$out/"
cp "$obj/.config" "$out/config"
kmake -s INSTALL_MOD_PATH="$out/modules" modules_install
[ $dtbs = 1 ] && kmake -s INSTALL_DTBS_PATH="$out/dtbs" dtbs_install
echo "kernel $(kmake -s kernelrelease) with series $(kseries_hash) in $out"
