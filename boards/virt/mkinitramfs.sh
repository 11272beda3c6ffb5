#!/bin/bash
# mkinitramfs.sh - the virtual board's root filesystem, an initramfs built
# only from Debian packages and this repository:
#   busybox-static  /bin/busybox (shell, getty, login, insmod, mount, dd ...)
#   e2fsprogs       mke2fs (mkfs.ext4) and e2fsck with the shared libraries they need
#   linux-image-*   ext4 and its module dependencies, from /lib/modules/KVER
#   build-modules   the patched mmc_core.ko, mmc_block.ko and vemmc.ko
#   emmclab-agent   the static agent (this CMake build)
# /init loads the mmc modules with the parameters of the kernel command line
# (mmc_core.*, mmc_block.*, vemmc.*), mounts the ext4 file system of the
# virtual eMMC on /data - making one when the card has none (a card in guest
# RAM is blank at each power-on; one backed by an ivshmem host file keeps its
# file system across power cuts, journal replay included) - and starts a
# login on ttyS0 (root, no password).
#
#   mkinitramfs.sh --agent PATH --modules DIR [--kver KVER] --out FILE
set -euo pipefail

agent= mods= kver= out=
while [ $# -gt 0 ]; do
	case $1 in
	--agent) agent=$2; shift 2 ;;
	--modules) mods=$2; shift 2 ;;
	--kver) kver=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: ${0##*/} --agent PATH --modules DIR [--kver KVER] --out FILE" >&2; exit 2 ;;
	esac
done
die() { echo "${0##*/}: $*" >&2; exit 1; }
[ -n "$agent" ] && [ -n "$mods" ] && [ -n "$out" ] || die "--agent, --modules and --out are required"
if [ -z "$kver" ]; then
	kver=$("$(dirname "$0")/../kernel/kver.sh")
fi
[ -n "$kver" ] && [ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver (apt-get install linux-image-amd64)"
[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' \
	|| die "/bin/busybox is not the static one (apt-get install busybox-static)"
command -v mke2fs > /dev/null || die "mke2fs missing (apt-get install e2fsprogs)"
command -v cpio > /dev/null || die "cpio missing (apt-get install cpio)"
command -v e2fsck > /dev/null || die "e2fsck missing (apt-get install e2fsprogs)"
[ -x "$agent" ] || die "agent $agent missing (build emmclab-agent)"
for m in mmc_core mmc_block vemmc; do
	[ -f "$mods/$m.ko" ] || die "$mods/$m.ko missing (run boards/kernel/build-modules.sh)"
done

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"
mkdir -p "$root"/{bin,sbin,etc,dev,proc,sys,tmp,data,root,lib/modules,lib64,usr/bin,usr/sbin}
# Never copy onto a path of $root that may be a symlink: the applet links
# point to /bin/busybox, which outside the chroot is the host's.
cp "$agent" "$root/bin/emmclab-agent"
# mke2fs, e2fsck and their libraries (Debian has no static e2fsprogs)
mke2fs=$(command -v mke2fs) e2fsck=$(command -v e2fsck)
cp "$mke2fs" "$root/sbin/mke2fs"
cp "$e2fsck" "$root/sbin/e2fsck"
ln -s mke2fs "$root/sbin/mkfs.ext4"
for lib in $(ldd "$mke2fs" "$e2fsck" | awk '/=>/ { print $3 } $1 ~ /^\/lib/ { print $1 }' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L --remove-destination "$lib" "$root$lib"
done
# busybox last: its applets only fill the names still free
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list-full); do
	[ -e "$root/$a" ] || [ -L "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done

# kernel modules: ext4 with its dependencies (in load order), then ours
moddir=$root/lib/modules
: > "$moddir/load.order"
add_mod() { # name: dependencies first
	local m=$1 f d
	grep -qx "$m" "$moddir/load.order" && return 0
	f=$(modinfo -k "$kver" -F filename "$m") || die "module $m not found for $kver"
	for d in $(modinfo -k "$kver" -F depends "$m" | tr ',' ' '); do add_mod "$d"; done
	rm -f "$moddir/$m.ko"
	case $f in
	*.ko.xz) xz -dc "$f" > "$moddir/$m.ko" ;;
	*.ko.zst) zstd -qdc "$f" > "$moddir/$m.ko" ;;
	*) cp "$f" "$moddir/$m.ko" ;;
	esac
	echo "$m" >> "$moddir/load.order"
}
for m in crc32c_generic ext4; do add_mod $m; done
cp "$mods"/mmc_core.ko "$mods"/mmc_block.ko "$mods"/vemmc.ko "$moddir/"

cat > "$root/etc/passwd" <<'P'
root::0:0:root:/root:/bin/sh
P
echo "root:x:0:" > "$root/etc/group"
echo "emmclab-virt" > "$root/etc/hostname"
cat > "$root/etc/profile" <<'P'
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root
P

cat > "$root/init" <<'INIT'
#!/bin/sh
# emmclab virtual board init (boards/virt/mkinitramfs.sh)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2> /dev/null
hostname -F /etc/hostname

# module parameters from the kernel command line, as modprobe would pass them
core= blk= vem=
for w in $(cat /proc/cmdline); do
	case $w in
	mmc_core.*=*) core="$core ${w#mmc_core.}" ;;
	mmc_block.*=*) blk="$blk ${w#mmc_block.}" ;;
	vemmc.*=*) vem="$vem ${w#vemmc.}" ;;
	esac
done
for m in $(cat /lib/modules/load.order); do
	insmod /lib/modules/$m.ko || echo "emmclab-virt: insmod $m failed"
done
insmod /lib/modules/mmc_core.ko $core || echo "emmclab-virt: insmod mmc_core failed"
insmod /lib/modules/mmc_block.ko $blk || echo "emmclab-virt: insmod mmc_block failed"
insmod /lib/modules/vemmc.ko $vem || echo "emmclab-virt: insmod vemmc failed"

n=0
while [ ! -b /dev/mmcblk0 ] && [ $n -lt 200 ]; do
	sleep 0.1
	n=$((n + 1))
done
# ext4 superblock magic 0xef53 at byte 1080
has_ext4() {
	[ "$(dd if=/dev/mmcblk0 bs=2 skip=540 count=1 2> /dev/null | od -An -tx1 | tr -d ' ')" = 53ef ]
}
mkfs_data() {
	# full path: busybox sh would run its own (ext2-only) mke2fs applet
	# no lazy inode-table init: its background thread flushes the card cache
	# at moments no test chooses (virt_powerfail's by-hand check saw it)
	/sbin/mke2fs -q -t ext4 -E lazy_itable_init=0,lazy_journal_init=0 -F /dev/mmcblk0 &&
		mount -t ext4 /dev/mmcblk0 /data
}
if [ -b /dev/mmcblk0 ]; then
	# A persistent card (vemmc on an ivshmem host file) keeps its file
	# system: mounting replays the journal after a power cut.
	if has_ext4 && mount -t ext4 /dev/mmcblk0 /data; then
		echo "emmclab-virt: /dev/mmcblk0 on /data (existing file system)"
	elif has_ext4; then
		echo "emmclab-virt: ext4 on /dev/mmcblk0 does not mount: e2fsck -y"
		/sbin/e2fsck -y /dev/mmcblk0
		if mount -t ext4 /dev/mmcblk0 /data; then
			echo "emmclab-virt: /dev/mmcblk0 on /data (repaired file system)"
		elif mkfs_data; then
			echo "emmclab-virt: ext4 on /dev/mmcblk0 unusable: REFORMATTED, its contents are lost"
		else
			echo "emmclab-virt: cannot make or mount ext4 on /dev/mmcblk0"
		fi
	elif mkfs_data; then
		echo "emmclab-virt: /dev/mmcblk0 on /data (new file system)"
	else
		echo "emmclab-virt: cannot make or mount ext4 on /dev/mmcblk0"
	fi
else
	echo "emmclab-virt: no /dev/mmcblk0"
fi
echo "emmclab-virt: ready"
exec /bin/busybox init
INIT
chmod +x "$root/init"
cat > "$root/etc/inittab" <<'P'
ttyS0::respawn:/sbin/getty -L 115200 ttyS0 dumb
::ctrlaltdel:/sbin/reboot -f
P

mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -9n) > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
