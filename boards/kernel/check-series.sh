#!/bin/bash
# check-series.sh - prove the series applies to Debian's linux-source-6.1 and
# that the files it changes compile for arm64 (the objects only, not a kernel).
#
#   check-series.sh [--keep-going]
#
# Unpacks /usr/src/linux-source-6.1.tar.xz into $EMMCLAB_CACHE/kernel (keyed
# by the series hash, so a rerun only recompiles), applies the series,
# configures arm64 defconfig + arm64-emmclab.config (sdhci-sprd on) and
# builds drivers/mmc/core/{block,mmc,host}.o and drivers/mmc/host/sdhci-sprd.o
# with -Werror.  Then checks that the new parameters and the DT property are
# in the objects.  Exit 0 = good; 77 = cannot run here (no linux-source-6.1
# or no aarch64 cross compiler); anything else = the series is broken.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CROSS=${CROSS_COMPILE:-aarch64-linux-gnu-}
JOBS=${JOBS:-2}
if [ ! -r "$KSOURCE_TARBALL" ]; then
	echo "SKIP: $KSOURCE_TARBALL missing (apt-get install linux-source-$KSERIES_VERSION)"
	exit 77
fi
if ! command -v "${CROSS}gcc" > /dev/null; then
	echo "SKIP: ${CROSS}gcc missing (apt-get install gcc-aarch64-linux-gnu)"
	exit 77
fi
for tool in make bc flex bison patch; do
	command -v $tool > /dev/null || kdie "$tool missing (needed to configure a kernel)"
done

t0=$(date +%s)
tree=$(ktree_prepare check)
out=$(dirname "$tree")/build-arm64
kmake() { make -s -C "$tree" O="$out" ARCH=arm64 CROSS_COMPILE="$CROSS" "$@"; }

if [ ! -e "$out/.emmclab-config" ]; then
	mkdir -p "$out"
	kmake defconfig
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
		"$KDIR_SELF/arm64-emmclab.config" > "$out/merge.log"
	kmake olddefconfig
	touch "$out/.emmclab-config"
fi
for sym in CONFIG_MMC=y CONFIG_MMC_BLOCK=y CONFIG_MMC_SDHCI_SPRD=y; do
	grep -qx "$sym" "$out/.config" || kdie "arm64 config lacks $sym (see $out/merge.log)"
done

objs="drivers/mmc/core/block.o drivers/mmc/core/mmc.o drivers/mmc/core/host.o
      drivers/mmc/host/sdhci-sprd.o"
klog "compiling for arm64: $(echo $objs)"
kmake -j"$JOBS" KCFLAGS=-Werror $objs

# The objects must carry what the series adds (built-in parameters are
# named after the module: mmc_block.fua, mmc_core.disable_cqe).
# (nm output is captured first: grep -q closing the pipe early would fail
# the pipeline under pipefail)
syms=$("${CROSS}nm" "$out/drivers/mmc/core/block.o" "$out/drivers/mmc/core/mmc.o")
grep -q '__param_fua$' <<< "$syms" || kdie "block.o has no fua parameter"
grep -q '__param_disable_cqe$' <<< "$syms" || kdie "mmc.o has no disable_cqe parameter"
grep -aq 'no-fua' "$out/drivers/mmc/core/host.o" || kdie "host.o does not parse no-fua"
grep -aq 'mmc_block.fua=off' "$out/drivers/mmc/core/block.o" || kdie "block.o lacks the FUA log line"
echo "OK: series $(kseries_hash) applies to $(basename "$KSOURCE_TARBALL") and compiles for arm64 ($(( $(date +%s) - t0 )) s)"
