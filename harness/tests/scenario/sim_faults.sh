#!/usr/bin/env bash
# Each simulated fault is visible where a controller would see it:
# no-output, uboot-hang, panic:1 (second boot fine), no-login, garbage,
# drop-chars, bad-crc (+ resend returns the right line), mode-stuck,
# slow-part, lose-writes (acknowledged records lost only without FUA).
set -euo pipefail
. "$EMMCLAB_SRC/harness/tests/helpers/simlib.sh"
sim_setup "" "" ", faults: [no-output:1]"
U="http://127.0.0.1:$PORT"
pon() { echo "run:curl -sf '$U/power/control/on?hostname=pdu&port=5' >/dev/null"; }
poff() { echo "run:curl -sf '$U/power/control/off?hostname=pdu&port=5' >/dev/null"; }
fault() { api "/sim/fault?board=$1&fault=$2${3:+&value=$3}${4:+&count=$4}" >/dev/null; }
counter() { # board key
	api /sim/state | python3 -c "import json,sys; d=json.load(sys.stdin); print([b for b in d['boards'] if b['name']=='$1'][0]['counters']['$2'])"
}
boot_b5() { # bootargs -> steps in the array B (interrupt autoboot, set bootargs, boot to the shell)
	B=('expect:autoboot' 'send: ' 'expect:=> $' "slow:setenv bootargs console=ttyS2 $1\\r" 'expect:=> $' 'slow:boot\r' 'expect:\n# $')
}

# no-output:1 from the lab file (bnoagent): silent first boot, normal second boot
con bnoagent "run:curl -sf '$U/power/control/on?alias=noagent-plug' >/dev/null" 'absent:.:0.8' \
	"run:curl -sf '$U/power/control/off?alias=noagent-plug' >/dev/null" \
	"run:curl -sf '$U/power/control/on?alias=noagent-plug' >/dev/null" 'expect:U-Boot SPL' >/dev/null

# uboot-hang: banner and countdown start, then nothing; a key changes nothing
fault b5 uboot-hang "" 1
con b5 "$(pon)" 'expect:Hit any key to stop autoboot:  3 ' 'send: ' 'absent:=>|Starting kernel|\x08:1.0' "$(poff)" >/dev/null

# panic:1: first boot panics, the next one reaches the shell
fault b5 panic "" 1
boot_b5 "mmc_block.fua=on"; B1=("${B[@]}")
con b5 "$(pon)" 'expect:Kernel panic - not syncing: VFS' 'expect:end Kernel panic' 'absent:# :0.5' "$(poff)" \
	"$(pon)" "${B1[@]}" "$(poff)" >/dev/null

# no-login: the boot log ends without a prompt
fault b5 no-login "" 1
con b5 "$(pon)" 'expect:Run /sbin/init as init process' 'absent:# |login:|=>:1.0' "$(poff)" >/dev/null

# mode-stuck: the kernel ignores mmc_block.fua=off; the agent's mode line shows it
fault b5 mode-stuck "" 1
boot_b5 "mmc_block.fua=off mmc_core.disable_cqe=1"; B1=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" \
	'send:emmclab-agent mode expect=cache-nofua\r' 'expect:fua=1 write_cache=1 .* mode=fua expect=cache-nofua match=0' \
	'expect:done status=ok' "$(poff)" >/dev/null

# bad-crc: corrupted lines on the wire; resend returns them intact
fault b5 bad-crc 0.5
boot_b5 "mmc_block.fua=on"; B1=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" 'send:emmclab-agent fscopy iter=1 count=1\r' 'expect:done status=ok lines=14' \
	badcrc 'send:emmclab-agent resend 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\r' 'expect:@@emmclab 1 15 done[^\n]*\n' \
	'crctail:15' "$(poff)" >/dev/null
[ "$(counter b5 lines_corrupted)" -gt 0 ] || fail "no corrupted lines counted"
api '/sim/clear?board=b5' >/dev/null

# slow-part=2: fscopy takes twice as long (DUT5 ~420 s -> ~840 s)
fault b5 slow-part 2
boot_b5 "mmc_block.fua=on"; B1=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" 'send:emmclab-agent fscopy iter=2\r' \
	'expect:iter=2 metric=wall_time value=8[0-9][0-9]\.' 'expect:done status=ok' "$(poff)" >/dev/null
api '/sim/clear?board=b5' >/dev/null

# lose-writes: without FUA, records acknowledged before the power cut are lost ...
fault b5 lose-writes 20
boot_b5 "mmc_block.fua=off"; B1=("${B[@]}")
boot_b5 "mmc_block.fua=off"; B2=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" 'send:emmclab-agent powerfail-write records=300\r' \
	'expect:name=acked value=300 ' 'expect:done status=ok' "$(poff)" "$(pon)" "${B2[@]}" \
	'send:emmclab-agent powerfail-check acked=300\r' 'expect:name=intact value=280 .*name=lost value=20 ' \
	'expect:error code=integrity' 'expect:done' "$(poff)" >/dev/null
# ... and with FUA (reliable writes) nothing is lost
boot_b5 "mmc_block.fua=on"; B1=("${B[@]}")
boot_b5 "mmc_block.fua=on"; B2=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" 'send:emmclab-agent powerfail-write records=300\r' \
	'expect:name=acked value=300 ' 'expect:done status=ok' "$(poff)" "$(pon)" "${B2[@]}" \
	'send:emmclab-agent powerfail-check acked=300\r' 'expect:name=intact value=300 .*name=lost value=0 ' \
	'expect:done status=ok' "$(poff)" >/dev/null
api '/sim/clear?board=b5' >/dev/null

# garbage: random bytes and bit flips in the output
fault b5 garbage 0.02
con b5 "$(pon)" 'sleep:1.5' "$(poff)" >/dev/null
[ "$(counter b5 garbage_bytes)" -gt 0 ] || fail "garbage: nothing injected"
api '/sim/clear?board=b5' >/dev/null

# drop-chars: typed characters vanish
boot_b5 "mmc_block.fua=on"; B1=("${B[@]}")
con b5 "$(pon)" "${B1[@]}" >/dev/null
fault b5 drop-chars 0.5
con b5 'send:echo the-quick-brown-fox-jumps-over-the-lazy-dog\r' 'sleep:0.3' >"$T/drop.log"
grep -q "the-quick-brown-fox-jumps-over-the-lazy-dog" "$T/drop.log" && fail "drop-chars: line arrived intact"
# the simulator may read the typed line after the client left (a loaded machine)
for _ in $(seq 100); do [ "$(counter b5 chars_dropped)" -gt 0 ] && break; sleep 0.1; done
[ "$(counter b5 chars_dropped)" -gt 0 ] || fail "drop-chars: nothing dropped"
echo ok
