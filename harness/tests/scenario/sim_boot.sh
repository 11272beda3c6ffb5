#!/usr/bin/env bash
# A simulated board from power-on: ROM, U-Boot banner, autoboot interrupt, the
# U-Boot CLI (env, saveenv across power cycles, tftp, mmc, unknown command,
# lost characters on a fast paste), boot to Linux with the mode knobs, the
# shell conventions of the controller, the agent with valid CRCs, pushing the
# agent to a board without one, login, poweroff.
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"
mkdir -p "$T/tftp/bsprd"
head -c 123457 /dev/zero > "$T/tftp/bsprd/Image"
sim_setup "" ", tftp_root: $T/tftp"
on5="run:curl -sf 'http://127.0.0.1:$PORT/power/control/on?hostname=pdu&port=5'"
off5="run:curl -sf 'http://127.0.0.1:$PORT/power/control/off?hostname=pdu&port=5'"

LONG=$(printf 'pasted%.0s' $(seq 20)) # 120 characters in one write: more than the FIFO takes
# U-Boot: banner with the MMC controller, countdown, interrupt, CLI
con b5 "$on5" 'expect:U-Boot SPL' 'expect:MMC:   mmc@fe330000' 'expect:Loading Environment from MMC\.\.\. OK' \
	'expect:Hit any key to stop autoboot:  3 ' 'send: ' 'expect:\n=> $' \
	'slow:mmc info\r' 'expect:Name: Q2J55L.*Capacity: 7\.28 GiB.*=> $' \
	'slow:foo\r' "expect:Unknown command 'foo' - try 'help'\r\n=> $" \
	'slow:setenv myvar hello\r' 'expect:=> $' 'slow:echo ${myvar}\r' 'expect:hello\r\n=> $' \
	'slow:\r' 'expect:hello\r\n=> $' \
	'slow:setenv bootdelay 1\r' 'expect:=> $' 'slow:saveenv\r' 'expect:Writing to MMC\(0\)\.\.\. OK' \
	'slow:abc\x08\x08x\r' "expect:Unknown command 'ax'" \
	'slow:true && echo OK-1 || echo FAIL-1\r' 'expect:OK-1\r\n=> $' \
	'slow:false && echo OK-2 || echo FAIL-2; echo rc=$?\r' 'expect:echo rc=\$\?\r\nrc=1\r\n=> $' \
	'slow:true || echo OK-3 && echo AND-3; echo end-3\r' 'expect:echo end-3\r\nend-3\r\n=> $' \
	'slow:if false; then echo T-4; elif true; then echo EL-4; else echo E-4; fi\r' 'expect:fi\r\nEL-4\r\n=> $' \
	'slow:if frob; then echo T-5; else echo E-5; fi\r' "expect:fi\r\nUnknown command 'frob' - try 'help'\r\nE-5\r\n=> $" \
	"send:echo $LONG\\r" 'sleep:0.2' \
	'slow:\x03' 'expect:<INTERRUPT>' >"$T/u1.log"
grep -q "$LONG" "$T/u1.log" && fail "a 120-char paste was not truncated by the FIFO"

# the saved bootdelay survives a power cycle; tftp needs an IP; booti needs an image
con b5 "$off5" "$on5" 'expect:Hit any key to stop autoboot:  1 ' 'send: ' 'expect:=> $' \
	'slow:tftp ${kernel_addr_r} Image\r' "expect:ERROR: .ipaddr' not set" \
	'slow:dhcp\r' 'expect:DHCP client bound to address 192\.168\.0\.[0-9]+' 'expect:=> $' \
	'slow:setenv autoload no\r' 'expect:=> $' \
	'slow:tftp ${kernel_addr_r} Image\r' 'expect:Loading: #+' 'expect:Bytes transferred = 21498368 \(1480a00 hex\)' 'expect:=> $' \
	'slow:booti 0x3000000\r' 'expect:Bad Linux ARM64 Image magic!' 'expect:=> $' \
	'slow:zboot 0x3000000\r' 'expect:Error: Invalid Boot Flag \(found 0x0000, expected 0xaa55\)\r\n## Kernel loading failed \.\.\.\r\n=> $' \
	'slow:setenv bootargs console=ttyS2 mmc_block.fua=off mmc_core.disable_cqe=0\r' 'expect:=> $' \
	'slow:booti ${kernel_addr_r} - ${fdt_addr_r}\r' 'expect:Could not find a valid device tree' \
	'slow:run bootcmd\r' 'expect:Starting kernel' \
	'expect:Kernel command line: console=ttyS2 mmc_block\.fua=off mmc_core\.disable_cqe=0' \
	'expect:mmc0: Command Queue Engine enabled' 'expect:mmcblk0: mmc0:0001 Q2J55L 7\.28 GiB' \
	'expect:FUA off \(mmc_block\.fua=off\): REQ_FUA becomes write \+ flush' \
	'expect:\n# $' \
	"send:export PS1='EMMCLAB-abc123\$ '\r" 'expect:EMMCLAB-abc123\$ $' \
	'send:stty -echo 2>/dev/null\r' 'expect:EMMCLAB-abc123\$ $' \
	'send:echo @@BEGIN-1@@; cat /proc/cmdline; echo @@END-1@@ $?\r' \
	'expect:@@BEGIN-1@@\r\nconsole=ttyS2 mmc_block.fua=off mmc_core.disable_cqe=0\r\n@@END-1@@ 0\r\n' \
	'send:echo @@BEGIN-2@@; cat /sys/block/mmcblk0/queue/fua /sys/block/mmcblk0/queue/write_cache /sys/block/mmcblk0/device/cmdq_en; echo @@END-2@@ $?\r' \
	'expect:@@BEGIN-2@@\r\n0\r\nwrite back\r\n1\r\n@@END-2@@ 0' \
	'send:echo @@BEGIN-3@@; nosuchcmd; echo @@END-3@@ $?\r' 'expect:sh: nosuchcmd: not found\r\n@@END-3@@ 127' \
	'send:echo @@BEGIN-C@@; command echo hi; command -v emmclab-agent; echo @@END-C@@ $?\r' 'expect:@@BEGIN-C@@\r\nhi\r\n/usr/local/bin/emmclab-agent\r\n@@END-C@@ 0' \
	'send:echo @@BEGIN-4@@; dmesg | grep -i "queue engine"; echo @@END-4@@ $?\r' 'expect:Command Queue Engine enabled\r\n@@END-4@@ 0' \
	'send:uname -r\r' 'expect:6\.1\.0-emmclab' \
	'send:emmclab-agent identify\r' 'expect:identity cid=13014e.* name=Q2J55L .*ext_csd=0' 'expect:done status=ok lines=2' \
	'send:emmclab-agent mode expect=cache-nofua-cqe\r' 'expect:mode fua=0 write_cache=1 cqe=1 cmdq_en=1 nr_tags=32 knob_fua=off knob_disable_cqe=0 mode=cache-nofua-cqe expect=cache-nofua-cqe match=1' \
	'expect:done status=ok' \
	'send:emmclab-agent androbench iter=2 count=1\r' 'expect:iter=2 metric=write_lat_p99.*done status=ok lines=' \
	'send:emmclab-agent androbench iter=3 iterations=2 seed=7\r' 'expect:iter=4 metric=write_lat_p99.*done status=ok lines=' \
	'send:emmclab-agent bogus\r' 'expect:error code=bad-command.*done status=error' \
	'send:echo $?\r' 'expect:abc123\$ 1\r\n' \
	'send:emmclab-agent resend 1 2\r' 'expect:@@emmclab 1 1 hello .*cmd=bogus.*@@emmclab 1 2 error' \
	crc 'send:poweroff -f\r' 'expect:reboot: Power down' >"$T/u2.log"

# the sprd board: no CQE (Host Software Queue), login prompt, FUA off by the host in auto
cd "$T"
con bsprd "run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On' >/dev/null" \
	'expect:autoboot' 'expect:Host Software Queue enabled' 'expect:bsprd login: $' \
	'send:root\r' 'expect:\n# $' 'send:emmclab-agent mode\r' 'expect:fua=0 write_cache=1 cqe=0 .*knob_fua=auto.*mode=cache-nofua' \
	'send:exit\r' 'expect:bsprd login: $' >/dev/null

# tftp_root: the sizes of the real files; a missing one is not found; bootdelay -1 stops at the prompt
con bsprd "run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20Off' >/dev/null" \
	"run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On' >/dev/null" \
	'expect:autoboot' 'send: ' 'expect:=> $' 'slow:setenv ipaddr 10.0.0.2\r' 'expect:=> $' \
	'slow:setenv serverip 10.0.0.1\r' 'expect:=> $' \
	'slow:tftp 0x1000 bsprd/Image\r' 'expect:Bytes transferred = 123457 \(1e241 hex\)' 'expect:=> $' \
	'slow:printenv filesize\r' 'expect:filesize=1e241' 'expect:=> $' \
	'slow:tftp 0x1000 bsprd/dtb\r' "expect:File not found" 'expect:=> $' \
	'slow:if tftp 0x1000 bsprd/nothing; then echo T-6; else echo E-6; fi\r' \
	"expect:Loading: \\*\r\nTFTP error: 'File not found' \\(1\\)\r\nNot retrying\\.\\.\\.\r\nE-6\r\n=> $" \
	'slow:setenv bootdelay -1\r' 'expect:=> $' 'slow:saveenv\r' 'expect:OK' 'expect:=> $' \
	"run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20Off' >/dev/null" \
	"run:curl -sf 'http://127.0.0.1:$PORT/plug/bsprd/cm?cmnd=Power%20On' >/dev/null" \
	'expect:Net:   eth0: ethernet@fe300000\r\n=> $' >/dev/null

# a board without the agent: test -x fails, push it in base64 chunks, check sha256, chmod, run
b64=$(head -c 3000 /dev/urandom | tee "$T/agent.bin" | base64 -w 0)
printf '\x7fELF' > "$T/agent.elf"; cat "$T/agent.bin" >> "$T/agent.elf"
b64=$(base64 -w 0 "$T/agent.elf")
sum=$(sha256sum "$T/agent.elf" | cut -d' ' -f1)
c1=${b64:0:2000}; c2=${b64:2000}
con bnoagent "run:curl -sf 'http://127.0.0.1:$PORT/power/control/on?alias=noagent-plug'" \
	'expect:autoboot' 'send: ' 'expect:U-Boot> $' \
	'slow:tftp 0x1000 Image\r' 'expect:ipaddr' 'slow:setenv ipaddr 10.0.0.2\r' 'slow:setenv serverip 10.0.0.1\r' \
	'slow:tftp 0x1000 nosuch.img\r' "expect:TFTP error: 'File not found' \(1\)" 'expect:U-Boot> $' \
	'slow:boot\r' 'expect:\n# $' \
	'send:echo @@BEGIN-5@@; test -x /usr/bin/emmclab-agent && echo yes; echo @@END-5@@ $?\r' 'expect:@@BEGIN-5@@\r\n@@END-5@@ 1\r\n# $' \
	'send:emmclab-agent identify\r' 'expect:sh: emmclab-agent: not found\r\n# $' \
	"send:echo $c1 | base64 -d >> /usr/bin/emmclab-agent\r" 'expect:# $' \
	"send:echo $c2 | base64 -d >> /usr/bin/emmclab-agent\r" 'expect:# $' \
	'send:sha256sum /usr/bin/emmclab-agent\r' "expect:$sum  /usr/bin/emmclab-agent\r\n# $" \
	'send:/usr/bin/emmclab-agent identify\r' 'expect:Permission denied\r\n# $' \
	'send:chmod 755 /usr/bin/emmclab-agent\r' 'expect:# $' \
	'send:test -x /usr/bin/emmclab-agent && echo yes\r' 'expect:\nyes\r\n# $' \
	'send:emmclab-agent identify\r' 'expect:identity .*name=NCard' 'expect:done status=ok[^\n]*\n# $' crc \
	'send:reboot -f\r' 'expect:reboot: Restarting system' 'expect:DDR Version' 'expect:# $' \
	'send:test -x /usr/bin/emmclab-agent && echo yes\r' 'expect:\nyes\r\n# $' >/dev/null
echo ok
