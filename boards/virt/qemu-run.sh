#!/bin/bash
# qemu-run.sh - boot the virtual board by hand (the lab's `qemu` power driver
# starts the same QEMU command itself).  TCG, no KVM needed.
#
#   qemu-run.sh --initrd FILE [--kernel FILE] [--append "ARGS"]
#               [--serial stdio|tcp:PORT] [--mem MiB] [--smp N]
#               [--media FILE [--media-size MiB]]
#
# Defaults: the series kernel (../kernel/kver.sh: 6.1 unless KSERIES_VERSION),
# serial on stdio (Ctrl-A X quits),
# 512 MiB, one CPU.  Mode knobs go into --append, e.g.
#   --append "mmc_block.fua=off mmc_core.disable_cqe=0 vemmc.profile=slowrel"
# --media backs the card's durable contents by FILE (an ivshmem-plain device
# on a file-backed memory backend; created sparse, --media-size MiB, default
# 64, a power of two >= the vemmc capacity): it survives QEMU being killed.
set -euo pipefail
kernel= initrd= append= serial=stdio mem=512 smp=1 media= msize=64
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--initrd) initrd=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--serial) serial=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--media) media=$2; shift 2 ;;
	--media-size) msize=$2; shift 2 ;;
	*) sed -n '2,15p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$kernel" ] || kernel=$("$(dirname "$0")/../kernel/kver.sh" --vmlinuz)
[ -r "$kernel" ] || { echo "no kernel (apt-get install linux-image-amd64)" >&2; exit 1; }
[ -r "$initrd" ] || { echo "no initrd: build it with boards/virt/mkinitramfs.sh" >&2; exit 1; }
case $serial in
stdio) ser=(-serial mon:stdio) ;;
tcp:*) ser=(-chardev "socket,id=con,host=127.0.0.1,port=${serial#tcp:},server=on,wait=on"
	    -serial chardev:con) ;;
*) echo "--serial stdio or tcp:PORT" >&2; exit 2 ;;
esac
shm=()
if [ -n "$media" ]; then
	[ -e "$media" ] || truncate -s "${msize}M" "$media"
	# QEMU's option syntax: a comma in a value is written twice
	shm=(-object "memory-backend-file,id=vemmc,share=on,mem-path=${media//,/,,},size=${msize}M"
	     -device ivshmem-plain,memdev=vemmc)
fi
exec qemu-system-x86_64 -machine pc -accel tcg -m "$mem" -smp "$smp" -nodefaults \
	-display none -no-reboot "${ser[@]}" "${shm[@]}" -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0,115200 panic=-1 $append"
