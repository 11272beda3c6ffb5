#!/bin/bash
# kernel_lts612.sh - the two series against Linux 6.12 LTS (Debian
# linux-source-6.12): the lab series (patches/6.12) and the upstream-form
# series (patches/upstream-6.12).  Each applies (apply.sh --check), its
# touched objects compile for arm64 and x86_64 with -Werror, mkseries.sh signs
# it with the builder's git identity (and refuses without one) and
# checkpatch.pl --strict finds nothing; the quirk-table patch made from
# MMC_FIXUP lines (mkseries.sh --quirks) passes checkpatch and compiles, a
# bad entry is refused by file:line.  Both series share one cached tree.
set -euo pipefail
SRC=${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
K=$SRC/boards/kernel
TARBALL=/usr/src/linux-source-6.12.tar.xz
if [ ! -r $TARBALL ]; then
	# .ci/packages.txt lists linux-source-6.12, so CI always runs this
	echo "SKIP: $TARBALL not installed (apt-get install linux-source-6.12)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. both series apply to the pristine files they touch (one small extract)
files=$(grep -h '^+++ b/' "$K"/patches/6.12/*.patch "$K"/patches/upstream-6.12/*.patch |
	sed 's|^+++ b/|linux-source-6.12/|' | sort -u)
tar -C "$tmp" -xf $TARBALL linux-source-6.12/Makefile $files
for s in 6.12 upstream-6.12; do
	"$K/apply.sh" --series $s --check "$tmp/linux-source-6.12"
done
if "$K/apply.sh" --series 6.1 --check "$tmp/linux-source-6.12" 2> "$tmp/err"; then
	fail "the 6.1 series was accepted for a 6.12 tree"
fi

# 2. what each series is: the lab one on 6.12's queue_limits API, the
# upstream one a card quirk with dev_dbg, credits and no DT property
L=$K/patches/6.12 U=$K/patches/upstream-6.12
grep -q '^+.*features &= ~BLK_FEAT_FUA;' "$L"/0002-*.patch || fail "6.12 0002 does not clear BLK_FEAT_FUA"
if grep -q '^+.*blk_queue_write_cache' "$L"/*.patch "$U"/*.patch; then fail "blk_queue_write_cache on 6.12"; fi
grep -q '^+module_param(disable_cqe, bool, 0444);$' "$L"/0005-*.patch || fail "6.12 disable_cqe is not 0444"
grep -q '^+#define MMC_QUIRK_AVOID_REL_WRITE' "$U"/0001-*.patch || fail "no quirk bit"
if grep -q '^+.*pr_info\|^+.*no-fua\|^+++ b/Documentation/devicetree\|MMC_CAP2_NO_FUA' "$U"/*.patch; then
	fail "upstream series has pr_info, a DT property or the host capability"
fi
for t in 'Suggested-by: Wenchao Chen <' 'Suggested-by: Ulf Hansson <' \
	'Link: https://lore.kernel.org/r/20221021073025.18831-1-wenchao.chen666@gmail.com' \
	'Link: https://lore.kernel.org/r/20230302144330.274947-1-ulf.hansson@linaro.org'; do
	grep -qF "$t" "$U"/0001-*.patch || fail "upstream 0001 lacks '$t'"
done

# 3. compiled (arm64 with sdhci-sprd where touched, x86_64), signed, checkpatch clean
id="$(git -C "$K" config user.name) <$(git -C "$K" config user.email)>"
for s in 6.12 upstream-6.12; do
	out=$("$K/check-series.sh" --series $s 2>&1)
	echo "$out"
	grep -q "^OK: series $s .* compiles for arm64 and x86_64" <<< "$out" || fail "check-series.sh --series $s"
	# sdhci-sprd.o is compiled for arm64 where the series touches it
	if grep -q '^+++ b/drivers/mmc/host/sdhci-sprd.c' "$K/patches/$s"/*.patch; then
		grep -q '^check-series.sh: compiling for arm64: .*drivers/mmc/host/sdhci-sprd.o' <<< "$out" ||
			fail "$s: sdhci-sprd.o not compiled for arm64"
	fi
	"$K/mkseries.sh" --series $s --out "$tmp/signed-$s" --checkpatch
	n=$(grep -c '^Subject:' "$tmp"/signed-$s/*.patch | wc -l)
	[ "$(grep -lxF "Signed-off-by: $id" "$tmp"/signed-$s/*.patch | wc -l)" = "$n" ] || fail "$s not signed off by $id"
	[ "$(grep -lxF "From: $id" "$tmp"/signed-$s/*.patch | wc -l)" = "$n" ] || fail "$s not from $id"
	if grep -q 'EMMCLAB-AUTHOR' "$tmp"/signed-$s/*.patch; then fail "$s: marker left"; fi
done

# 4. no git identity: no patches (a copy of the scripts outside any repository)
cp -r "$K" "$tmp/k"
if HOME=$tmp GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CEILING_DIRECTORIES=$tmp \
	"$tmp/k/mkseries.sh" --series upstream-6.12 --out "$tmp/anon" 2> "$tmp/err"; then
	fail "mkseries.sh signed without an identity"
else
	[ $? = 2 ] || fail "mkseries.sh without identity: exit code is not 2"
fi
grep -q 'no git identity' "$tmp/err" || fail "refusal does not say why: $(cat "$tmp/err")"
if ls "$tmp"/anon/*.patch > /dev/null 2>&1; then fail "patches written without an identity"; fi

# 5. the quirk table from lab output (format: docs/kernel.md)
cat > "$tmp/quirks" <<'Q'
# Part XYZ123 (manfid 0x15): random 4 KiB O_DSYNC writes 3.1x faster
# without FUA; 0 of 812 acknowledged records lost over 120 power cuts.
MMC_FIXUP("XYZ123", CID_MANFID_SAMSUNG, CID_OEMID_ANY, add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE),
MMC_FIXUP("AB4567", 0x45, 0x0100, add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE),
Q
"$K/mkseries.sh" --series upstream-6.12 --out "$tmp/q" --quirks "$tmp/quirks" --checkpatch
q=$(ls "$tmp"/q/0003-*.patch) || fail "no quirk-table patch"
grep -q '^+	MMC_FIXUP("XYZ123", CID_MANFID_SAMSUNG, CID_OEMID_ANY, add_quirk_mmc,$' "$q" || fail "entry not in the patch"
grep -q '^0 of 812 acknowledged\|^without FUA; 0 of 812' "$q" || fail "evidence not in the commit message"
# the table compiles: the stored series plus the generated patch
mkdir -p "$tmp/qs"
cp "$U"/0*.patch "$q" "$tmp/qs/"
(cd "$tmp/qs" && ls 0*.patch) > "$tmp/qs/series"
KSERIES_DIR=$tmp/qs "$K/check-series.sh" --series upstream-6.12 --arch x86_64
echo 'MMC_FIXUP("XYZ123", CID_MANFID_NOSUCH, CID_OEMID_ANY, add_quirk_mmc, MMC_QUIRK_AVOID_REL_WRITE),' > "$tmp/bad"
if "$K/mkseries.sh" --series upstream-6.12 --out "$tmp/qb" --quirks "$tmp/bad" 2> "$tmp/err"; then
	fail "an unknown CID_MANFID was accepted"
fi
grep -q "$tmp/bad:1: CID_MANFID_NOSUCH is not defined" "$tmp/err" || fail "bad entry: $(cat "$tmp/err")"
echo 'MMC_FIXUP(XYZ123, 0x15)' > "$tmp/bad"
if "$K/mkseries.sh" --series upstream-6.12 --out "$tmp/qb" --quirks "$tmp/bad" 2> "$tmp/err"; then
	fail "a malformed entry was accepted"
fi
grep -q "$tmp/bad:1: not an entry" "$tmp/err" || fail "malformed entry: $(cat "$tmp/err")"
# 6. the virtual board boots a lab series on its own kernel version
if ls /boot/vmlinuz-6.12.* > /dev/null 2>&1; then
	case $("$K/kver.sh" --series 6.12) in 6.12.*) ;; *) fail "kver.sh --series 6.12" ;; esac
fi
if "$K/build-modules.sh" --series upstream-6.12 2> "$tmp/err"; then fail "build-modules.sh took the upstream series"; fi
grep -q 'boots a lab series' "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
echo "PASS: kernel series 6.12 and upstream-6.12"
