#!/bin/bash
# peer_initramfs.sh - the plain QEMU board of the peer benchmark
# (peer_boot.sh): a busybox initramfs for Debian's 6.1 kernel that loads the
# SD/MMC stack (mmc_core, sdhci, sdhci-pci, mmc_block from /lib/modules),
# waits for mmcblk0 and starts a shell on ttyS0 with the prompt `vboard# `,
# no login.  Only Debian packages: busybox-static, linux-image-amd64, cpio.
#
#   peer_initramfs.sh OUT.cpio.gz [KVER]
set -euo pipefail
out=${1:?usage: peer_initramfs.sh OUT.cpio.gz [KVER]}
kver=${2:-$(ls /boot/vmlinuz-* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)}
die() { echo "${0##*/}: $*" >&2; exit 1; }
[ -n "$kver" ] && [ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver (apt-get install linux-image-amd64)"
file -L /bin/busybox | grep -q 'statically linked' || die "/bin/busybox is not static (busybox-static)"
command -v cpio > /dev/null || die "cpio missing"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"
mkdir -p "$root"/{bin,sbin,etc,dev,proc,sys,tmp,lib/modules,usr/bin,usr/sbin}
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list-full); do
	[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done
moddir=$root/lib/modules
: > "$moddir/load.order"
add_mod() { # name: its dependencies first
	local m=$1 f d
	grep -qx "$m" "$moddir/load.order" && return 0
	f=$(modinfo -k "$kver" -F filename "$m") || die "module $m not found for $kver"
	case $f in (builtin) return 0 ;; esac
	for d in $(modinfo -k "$kver" -F depends "$m" | tr ',' ' '); do add_mod "$d"; done
	case $f in
	*.ko.xz) xz -dc "$f" > "$moddir/$m.ko" ;;
	*.ko.zst) zstd -qdc "$f" > "$moddir/$m.ko" ;;
	*) cp "$f" "$moddir/$m.ko" ;;
	esac
	echo "$m" >> "$moddir/load.order"
}
for m in mmc_core sdhci sdhci-pci mmc_block; do add_mod "$m"; done
cat > "$root/init" <<'INIT'
#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /lib/modules/load.order); do insmod /lib/modules/$m.ko; done
i=0
while [ ! -e /sys/block/mmcblk0 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
export PS1='vboard# '
exec setsid cttyhack /bin/sh
INIT
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
echo "$out"
