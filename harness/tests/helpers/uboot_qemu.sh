#!/bin/bash
# uboot_qemu.sh - power for a QEMU x86 board that starts in U-Boot (Debian's
# u-boot-qemu ROM as its BIOS), for the exec power driver: the qemu power
# driver always boots -kernel/-initrd itself, so it cannot start a ROM.
#
#   uboot_qemu.sh on DIR PORT ROM TFTP_ROOT   start QEMU (daemonized, pid in DIR/qemu.pid)
#   uboot_qemu.sh off DIR                     stop it (SIGTERM, then SIGKILL after 5 s)
#   uboot_qemu.sh state DIR                   print on or off
#
# The serial console is a TCP server on 127.0.0.1:PORT (wait=off: the guest
# runs without a client, as a board does without anyone on its UART);
# QEMU's user-mode network gives U-Boot DHCP (10.0.2.15) and a TFTP server
# at 10.0.2.2 serving TFTP_ROOT.  QEMU's log of guest resets and triple
# faults (-d cpu_reset,guest_errors) goes to DIR/qemu.log, so a QEMU that
# exits by itself (-no-reboot: a guest reset ends it) says why.
set -euo pipefail
op=${1:-} dir=${2:-}
[ -n "$dir" ] || { sed -n '2,16p' "$0" >&2; exit 2; }
pidf=$dir/qemu.pid
running() { [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2> /dev/null; }
case $op in
on)
	[ $# -eq 5 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
	running && exit 0
	mkdir -p "$dir"
	rm -f "$pidf"
	exec qemu-system-x86_64 -machine pc -accel tcg -m 512 -bios "$4" -display none -no-reboot \
		-monitor none -chardev "socket,id=con,host=127.0.0.1,port=$3,server=on,wait=off" \
		-serial chardev:con -netdev "user,id=n0,tftp=$5" -device e1000,netdev=n0 \
		-d cpu_reset,guest_errors -D "$dir/qemu.log" -daemonize -pidfile "$pidf"
	;;
off)
	running || { rm -f "$pidf"; exit 0; }
	pid=$(cat "$pidf")
	kill "$pid" 2> /dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2> /dev/null || { rm -f "$pidf"; exit 0; }
		sleep 0.1
	done
	kill -9 "$pid" 2> /dev/null || true
	rm -f "$pidf"
	;;
state)
	if running; then echo on; else echo off; fi
	;;
*)
	sed -n '2,16p' "$0" >&2
	exit 2
	;;
esac
