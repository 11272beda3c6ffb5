#!/bin/bash
# uboot_real.sh - emmclab against Debian's real U-Boot 2023.01 (u-boot-qemu's
# qemu-x86 ROM as QEMU's BIOS, TCG): the board type boards/types/qemu-x86-uboot.yaml
# (docs/porting.md's worked example), power through the exec driver
# (helpers/uboot_qemu.sh), the tcp console on QEMU's serial server, and the
# uboot-tftp deploy staging the virtual board's kernel + initramfs (with the
# agent) into the TFTP root QEMU's user-mode network serves.  U-Boot's
# autoboot is interrupted, dhcp + tftpboot + zboot start Linux, and a short
# suite runs in two modes, each verified on the running kernel.  Then the
# faults, each with its class and time to report:
#   wrong TFTP file      deploy, U-Boot's "TFTP error: 'File not found'", < 15 s;
#                        and typed on U-Boot's echo (uboot.echo_window 16 with a
#                        fallback pace of 1 character a second) in < 25 s
#   wrong boot address   deploy, U-Boot's "Invalid Boot Flag" / "## Kernel loading failed"
#   autoboot not interruptible (bootdelay=-2 in a ROM copy's default environment:
#                        this ROM keeps no environment, helpers/uboot_rom_env.py)
#                        autoboot with uboot-tftp (< 30 s); with deploy none the
#                        board carries on to its shell
#   QEMU dying mid-boot  no-console ("console lost"), within seconds of the kill
set -euo pipefail
. "${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}/harness/tests/helpers/virtlib.sh"
ROM=/usr/lib/u-boot/qemu-x86/u-boot.rom
[ -r "$ROM" ] || { echo "SKIP: not installed: u-boot-qemu"; exit 77; }
H=$SRC/harness/tests/helpers/uboot_qemu.sh

tmp=$(mktemp -d)
bpid=
cleanup() {
	[ -n "$bpid" ] && kill "$bpid" 2> /dev/null || true
	"$H" off "$tmp/q" > /dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
now_ms() { date +%s%3N; }

virt_prepare "$tmp"
mkdir -p "$tmp/tftp" "$tmp/empty"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# the fault cases: one attempt each, so the first failure is the report
sed -e 's/^  name: qemu-x86-uboot$/  name: qemu-x86-uboot-once/' -e 's/^  retries: 1$/  retries: 0/' \
	"$SRC/boards/types/qemu-x86-uboot.yaml" > "$tmp/type-once.yaml"
grep -q 'retries: 0' "$tmp/type-once.yaml" || fail "type-once: retries not set"
# echo pacing against the real U-Boot's echo: the pace alone would take a
# second a character
sed -e 's/^  name: qemu-x86-uboot-once$/  name: qemu-x86-uboot-echo/' -e 's/^    char_delay: 0ms$/    char_delay: 1000ms/' \
	-e 's/^    chunk: 64$/    chunk: 1\n    echo_window: 16/' "$tmp/type-once.yaml" > "$tmp/type-echo.yaml"
grep -q 'echo_window: 16' "$tmp/type-echo.yaml" && grep -q 'char_delay: 1000ms' "$tmp/type-echo.yaml" \
	|| fail "type-echo: pacing not set"

# mklab FILE TYPE ROM QEMU_TFTP_ROOT DEPLOY
mklab() {
	cat > "$1" <<YAML
include:
  - $SRC/boards/types/qemu-x86-uboot.yaml
  - $tmp/type-once.yaml
  - $tmp/type-echo.yaml
lab:
  name: uboot-real
  results: $tmp/lab.db
  transcripts: $tmp/transcripts
kernels:
  - name: debian-6.1-vemmc
    image: $kernel
    initrd: $tmp/initramfs.cpio.gz
    cmdline: "quiet loglevel=4"
boards:
  - name: ub1
    type: $2
    part: {label: "vemmc slowrel", model: slowrel}
    console: {driver: tcp, host: 127.0.0.1, port: $port, reconnect_delay: 200ms, reconnect_window: 2s}
    power: {driver: exec, off_time: 100ms,
            on: ["$H", "on", "$tmp/q", "$port", "$3", "$4"],
            off: ["$H", "off", "$tmp/q"], state: ["$H", "state", "$tmp/q"]}
    deploy: $5
YAML
}
TFTP="{driver: uboot-tftp, tftp_root: '$tmp/tftp'}"

# 1. two modes through real U-Boot: interrupt, dhcp, tftpboot, zboot, verified
mklab "$tmp/lab.yaml" qemu-x86-uboot "$ROM" "$tmp/tftp" "$TFTP"
cat > "$tmp/plan.yaml" <<YAML
suite:
  name: uboot-smoke
  modes: [fua, cache-nofua]
  iterations: 1
  reboot_between_modes: true
  order: sequential
  seed: 1
  precondition_passes: 0
  exclude_warmup: false
  workloads:
    - name: androbench
      args: {seq_mib: 2, req_mib: 1, rand_mib: 1, rand_ios: 32, count: 1}
plan:
  name: uboot-real
  lab: lab.yaml
  suites: [uboot-smoke]
  budget: 6m
  results: lab.db
YAML
"$EMMCLAB" check "$tmp/plan.yaml" > /dev/null || fail "check of the plan"
t0=$(now_ms)
timeout 400 "$EMMCLAB" run --db "$tmp/lab.db" --no-report --no-upload \
	--transcripts "$tmp/transcripts" "$tmp/plan.yaml" > "$tmp/run.log" 2>&1 \
	|| { tail -30 "$tmp/run.log"; fail "emmclab run through real U-Boot failed"; }
echo "two modes through real U-Boot: $(( ($(now_ms) - t0) / 1000 )) s"
"$H" off "$tmp/q"
q() { sqlite3 "$tmp/lab.db" "$1"; }
# show_tail FILE...: the last lines of transcripts, control characters visible,
# then the end of QEMU's log (guest resets, triple faults: helpers/uboot_qemu.sh)
show_tail() {
	tail -n 30 "$@" | cat -A | cut -c1-200
	echo "-- QEMU's log ($tmp/q/qemu.log), resets, faults and errors (register dumps left out):"
	grep -Ei 'reset|triple|fault|error|invalid|unassigned' "$tmp/q/qemu.log" 2> /dev/null | tail -n 8 || true
}
[ "$(q "select count(*) from job where status='ok' and verified_mode=mode")" = 2 ] \
	|| { q "select mode, verified_mode, status from job"; fail "not 2 verified ok jobs"; }
[ "$(q "select count(*) from sample")" -gt 0 ] || fail "no samples stored"
# The first boot (in boot order) that reached U-Boot's prompt is the one
# checked.  A boot before it that never printed the autoboot prompt is real
# U-Boot stalling under a loaded CI machine (seen once in the ASan stage): the
# run must have classified it as bootloader-hang and retried, and it is shown.
tr= stalled=0
for f in $(ls "$tmp"/transcripts/ub1-*.log | sort -t- -k2,2n); do
	if grep -q 'Hit any key to stop autoboot' "$f"; then tr=$f; break; fi
	stalled=$((stalled + 1))
	echo "boot transcript without the autoboot prompt (U-Boot stalled), last lines:"
	show_tail "$f"
done
[ -n "$tr" ] || fail "no autoboot prompt in any transcript: $(ls "$tmp"/transcripts)"
if [ "$stalled" -gt 0 ]; then
	hangs=$(q "select count(*) from event where kind='bootloader-hang'")
	[ "$hangs" -ge "$stalled" ] || { q "select kind, message from event"
		fail "$stalled boots without the autoboot prompt, $hangs bootloader-hang events"; }
	echo "$stalled boot(s) stalled before the autoboot prompt, classified bootloader-hang and retried"
fi
grep -q '=> dhcp; echo @@UB-[0-9]*-\$?@@' "$tr" \
	|| fail "U-Boot commands not followed by a status marker"
# the real hush expanded $? in the marker: dhcp's status 0
grep -q '^\[[ 0-9.]*\] @@UB-[0-9]*-0@@' "$tr" || fail "no status marker @@UB-n-0@@ printed by U-Boot"
grep -q 'zboot ${kernel_addr_r} 0 ${ramdisk_addr_r} ${initrd_size}' "$tr" || fail "no zboot"
# U-Boot's zboot prints the command line it hands over: the type's, the kernel's, the mode's
grep -q 'Kernel command line: "console=ttyS0,115200 panic=-1 quiet loglevel=4 mmc_block.fua=on mmc_core.disable_cqe=1"' \
	"$tmp"/transcripts/ub1-*.log || fail "bootargs not merged type + kernel + mode"
grep -q 'Starting kernel' "$tr" || fail "no kernel start"

# case_fail NAME MESSAGE: a boot case failed: emmclab's report, the transcript
# and QEMU's log, then the failure
case_fail() {
	cat "$tmp/$1.err"
	show_tail "$tmp/transcripts-$1"/*.log
	fail "$2"
}

# boot_case NAME MAX_S WANT_EXIT LAB [board boot args...]: runs `board boot`,
# leaves its stderr in $tmp/NAME.err and the elapsed ms in $took.  Two
# failures are not the fault under test: their transcript and QEMU's log are
# shown and the case runs once more (a second failure fails the test):
#  - U-Boot never printed its autoboot prompt (emmclab: bootloader-hang; seen
#    once in CI under load, U-Boot's output stopping after 568 bytes); not for
#    a ROM without the prompt (unstarted=no);
#  - QEMU went away by itself (emmclab: no-console, the console lost; seen once
#    in CI: QEMU closed the TCP console about 800 bytes into the boot, near
#    U-Boot's autoboot prompt).  No case here tests a console loss: qemu-dies
#    below does.
boot_case() {
	local name=$1 max=$2 want=$3 labf=$4
	shift 4
	local try rc t
	for try in 1 2; do
		"$H" off "$tmp/q"
		rm -rf "$tmp/transcripts-$name"
		t=$(now_ms) rc=0
		timeout 300 "$EMMCLAB" board --lab "$labf" --transcripts "$tmp/transcripts-$name" ub1 boot "$@" \
			> "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
		took=$(( $(now_ms) - t ))
		echo "$name: exit $rc after $took ms: $(grep -v transcript "$tmp/$name.err" | tail -1)"
		# told apart from the fault under test by their class, not the exit
		# status: both exit 3, as the deploy faults do
		[ "$try" = 1 ] || break
		if grep -q '(no-console' "$tmp/$name.err"; then
			echo "$name: QEMU went away (console lost), not the fault under test; its report, transcript and log, then once more:"
			cat "$tmp/$name.err"
		elif [ "${unstarted:-retry}" = retry ] && grep -q '(bootloader-hang' "$tmp/$name.err" \
			&& ! grep -q 'Hit any key to stop autoboot' "$tmp/transcripts-$name"/*.log; then
			echo "$name: U-Boot never reached its autoboot prompt, not the fault under test; its transcript, then once more:"
		else
			break
		fi
		show_tail "$tmp/transcripts-$name"/*.log
	done
	[ "$rc" = "$want" ] || case_fail "$name" "$name: exit $rc, want $want"
	[ "$took" -lt $((max * 1000)) ] || case_fail "$name" "$name: $took ms, want < $max s"
}

# 2. wrong TFTP file: QEMU serves another directory than the one staged into
mklab "$tmp/lab-wrongfile.yaml" qemu-x86-uboot-once "$ROM" "$tmp/empty" "$TFTP"
boot_case wrong-tftp 15 3 "$tmp/lab-wrongfile.yaml"
grep -q "deploy in deploy: .*tftp kernel failed: TFTP error: 'File not found'" "$tmp/wrong-tftp.err" \
	|| case_fail wrong-tftp "wrong TFTP file: not reported as deploy with U-Boot's text"

# the same through the echo-paced type: each window of 16 characters goes on
# the echo of the previous one; at the fallback pace (1 s a character) the
# lines typed would take minutes
mklab "$tmp/lab-echo.yaml" qemu-x86-uboot-echo "$ROM" "$tmp/empty" "$TFTP"
boot_case wrong-tftp-echo 25 3 "$tmp/lab-echo.yaml"
grep -q "deploy in deploy: .*tftp kernel failed: TFTP error: 'File not found'" "$tmp/wrong-tftp-echo.err" \
	|| case_fail wrong-tftp-echo "echo-paced typing: not the TFTP error"
# the pace waits a full window would have cost: 16 s each.  Counted on the
# lines typed at U-Boot's prompt as the transcript holds them: time prefixes
# and the harness's own "== ... ==" marks taken out, and a line the echo left
# open (no CR yet) joined with its continuation
waits=$(python3 - "$tmp"/transcripts-wrong-tftp-echo/*.log <<'PY'
import re, sys
lines, cur = [], None
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        data = f.read().decode('latin-1')
    for raw in data.split('\n'):
        m = re.match(r'\[ *[0-9]+\.[0-9]{6}\] (.*)$', raw)
        if not m:
            continue
        text = m.group(1)
        if re.fullmatch(r'== .* ==', text):
            continue
        cur = text if cur is None else cur + text
        if cur.endswith('\r'):
            lines.append(cur)
            cur = None
w = 0
for line in lines:
    for typed in re.findall(r'=> ([^\r]*)', line):
        w += len(typed) // 16
        print(repr(typed), file=sys.stderr)
print(w)
PY
)
echo "echo-paced: $waits full windows typed on the echo in $took ms (at the pace: $((waits * 16)) s)"
[ "$waits" -ge 4 ] || { cat -A "$tmp"/transcripts-wrong-tftp-echo/*.log | cut -c1-200
	fail "echo-paced: $waits full windows (4 at least: setenv autoload, dhcp, tftpboot; fewer and the 25 s bound proves little)"; }

# 3. wrong boot address: zboot of an address nothing was loaded to
mklab "$tmp/lab-wrongaddr.yaml" qemu-x86-uboot-once "$ROM" "$tmp/tftp" \
	"{driver: uboot-tftp, tftp_root: '$tmp/tftp', boot_cmd: 'zboot 0x2000000'}"
boot_case wrong-addr 25 3 "$tmp/lab-wrongaddr.yaml"
grep -q "deploy in deploy: .*boot failed: Error: Invalid Boot Flag" "$tmp/wrong-addr.err" \
	&& grep -q "Kernel loading failed" "$tmp/wrong-addr.err" \
	|| case_fail wrong-addr "wrong boot address: not reported with U-Boot's text"

# 4. autoboot not interruptible: bootdelay=-2 and a bootcmd that netboots the
# staged kernel by itself (the environment of a copy of the ROM)
kb=$(basename "$kernel")
python3 "$SRC/harness/tests/helpers/uboot_rom_env.py" "$ROM" "$tmp/selfboot.rom" 'bootdelay=-2' \
	"bootcmd=setenv autoload no; dhcp; tftpboot \${kernel_addr_r} ub1/$kb; tftpboot \${ramdisk_addr_r} ub1/initramfs.cpio.gz; setenv bootargs console=ttyS0,115200 panic=-1 quiet selfboot; zboot \${kernel_addr_r} 0 \${ramdisk_addr_r} \${filesize}"
mklab "$tmp/lab-selfboot.yaml" qemu-x86-uboot-once "$tmp/selfboot.rom" "$tmp/tftp" "$TFTP"
unstarted=no boot_case autoboot 30 3 "$tmp/lab-selfboot.yaml"
grep -q "ub1: autoboot in bootloader: attempt 1: ub1: U-Boot booted by itself: the kernel started .* with no autoboot prompt" \
	"$tmp/autoboot.err" || { cat "$tmp/autoboot.err"; fail "self-booting U-Boot not classified autoboot"; }
! grep -q "bootloader-hang" "$tmp/autoboot.err" || fail "self-booting U-Boot called a bootloader hang"
# without a deploy at the prompt the board carries on to its shell
mklab "$tmp/lab-selfboot-none.yaml" qemu-x86-uboot-once "$tmp/selfboot.rom" "$tmp/tftp" "{driver: none}"
unstarted=no boot_case carry-on 120 0 "$tmp/lab-selfboot-none.yaml" --run 'cat /proc/cmdline'
grep -q "booted by itself.*carrying on" "$tmp/carry-on.err" || fail "carry-on not explained"
grep -q "selfboot" "$tmp/carry-on.out" || { cat "$tmp/carry-on.out"; fail "not the self-booted kernel"; }

# 5. QEMU dies mid-boot (kernel started): the console is lost, reported at once.
# The kill waits for U-Boot's "Starting kernel" (up to 180 s: TCG under a
# loaded -j2 ASan suite is slow); if the boot itself fails before that, the
# case says why and starts once more (the tested behaviour is what follows
# the kill, and a second failure fails the test)
mklab "$tmp/lab-die.yaml" qemu-x86-uboot-once "$ROM" "$tmp/tftp" "$TFTP"
started=
for try in 1 2; do
	"$H" off "$tmp/q"
	rm -rf "$tmp/transcripts-die"
	mkdir -p "$tmp/transcripts-die"
	"$EMMCLAB" board --lab "$tmp/lab-die.yaml" --transcripts "$tmp/transcripts-die" ub1 boot \
		> /dev/null 2> "$tmp/die.err" &
	bpid=$!
	t=$(now_ms)
	for _ in $(seq 1800); do
		grep -qs 'Starting kernel' "$tmp"/transcripts-die/ub1-*.log && { started=1; break; }
		kill -0 "$bpid" 2> /dev/null || break
		sleep 0.1
	done
	[ -n "$started" ] && break
	if kill "$bpid" 2> /dev/null; then
		how="still booting, killed"
		wait "$bpid" || true
	else
		rc=0
		wait "$bpid" || rc=$?
		how="board boot exited $rc"
	fi
	bpid=
	echo "qemu-dies: attempt $try: no kernel start after $(( $(now_ms) - t )) ms ($how)"
	cat "$tmp/die.err"
	tail -c 2000 "$tmp"/transcripts-die/ub1-*.log 2> /dev/null | tr -d '\r' | tail -15 || true
done
[ -n "$started" ] || fail "qemu-dies: no kernel start in two attempts"
kill -9 "$(cat "$tmp/q/qemu.pid")"
t=$(now_ms)
rc=0
wait "$bpid" || rc=$?
bpid=
took=$(( $(now_ms) - t ))
echo "qemu-dies: exit $rc, $took ms after the kill: $(grep -v transcript "$tmp/die.err" | tail -1)"
[ "$rc" = 3 ] || { cat "$tmp/die.err"; fail "qemu-dies: exit $rc, want 3"; }
[ "$took" -lt 6000 ] || fail "qemu-dies: reported $took ms after QEMU died (reconnect window 2 s)"
grep -q "no-console in booting: attempt 1: console lost: .*reconnect window" "$tmp/die.err" \
	|| { cat "$tmp/die.err"; fail "qemu-dies: not reported as console lost"; }
echo "uboot_real: ok"
