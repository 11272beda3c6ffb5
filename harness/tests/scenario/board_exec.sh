#!/usr/bin/env bash
# board_exec.sh - `emmclab board boot` with an `exec` console: the board is a
# bash script on the console's stdio imitating U-Boot (autoboot, echo, Ctrl-C,
# hush's `if CMD; then ...; else ...; fi` as emmclab types it, setenv, boot) and a shell (stty -echo, PS1, the marker
# wrapping), powered by the `exec` power driver through a state file.
set -euo pipefail
: "${EMMCLAB:?}"

T=$(mktemp -d /tmp/emmclab-board-exec-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*"
	cat "$T/out" "$T/err" 2>/dev/null | tail -30
	local tr
	tr=$(ls -t "$T"/transcripts/*.log 2>/dev/null | head -1)
	[ -n "$tr" ] && tail -30 "$tr"
	exit 1
}

cat > "$T/board.sh" <<'BOARD'
#!/usr/bin/env bash
# A fake board on stdin/stdout.  $1: power state file ("on-<n>" / "off").
PW=$1
state= mode=off line= echo=1 bootargs="console=ttyS0" cmdline=
cat() { if [ "${1:-}" = /proc/cmdline ]; then echo "$cmdline"; else command cat "$@"; fi; }
ucmd() { # one U-Boot command; returns its status
	local c=$1
	case $c in
	"echo "*) printf '%s\r\n' "${c#echo }" ;;
	"setenv bootargs '"*"'") bootargs=${c#setenv bootargs \'}; bootargs=${bootargs%\'} ;;
	"setenv "*) ;;
	boot) printf 'Starting kernel ...\r\n\r\n'; cmdline=$bootargs
	      printf '[    0.000000] Linux version 6.1.0-fake\r\n[    0.000000] Kernel command line: %s\r\n' "$cmdline"
	      printf '[    1.000000] Run /sbin/init as init process\r\n# '
	      mode=shell echo=1 PS1='# ' ;;
	*) printf "Unknown command '%s' - try 'help'\r\n" "$c"; return 1 ;;
	esac
}
uline() {
	local re_st='^(.*); echo (@@UB-[0-9]+-)[$][?]@@$'
	local re_boot='^(.*); echo (@@UB-[0-9]+-FAIL@@)$'
	if [[ $1 =~ $re_st ]]; then
		# hush's $?: the command's status inside the marker
		local m=${BASH_REMATCH[2]} st=0
		ucmd "${BASH_REMATCH[1]}" || st=1
		printf '%s%d@@\r\n' "$m" "$st"
	elif [[ $1 =~ $re_boot ]]; then
		local ko=${BASH_REMATCH[2]}
		ucmd "${BASH_REMATCH[1]}" || true
		[ "$mode" = shell ] || printf '%s\r\n' "$ko"
	elif [ -n "$1" ]; then
		ucmd "$1" || true
	fi
}
while :; do
	# the power state, read with the builtin: a fork of cat for every
	# character made this fake echo too slowly for the controller's typing
	# on a loaded machine (CI, 2026-12-05: the U-Boot line retyped 5 times)
	cur=
	IFS= read -r cur 2>/dev/null < "$PW" || true
	if [ "$cur" != "$state" ]; then
		state=$cur line=
		case $cur in
		on*) mode=autoboot ab_t=$SECONDS ab_left=2
		     printf '\r\nU-Boot 2023.04 (exec fake)\r\nDRAM:  1 GiB\r\nHit any key to stop autoboot:  2' ;;
		*) mode=off ;;
		esac
	fi
	rc=0
	IFS= read -r -s -n1 -d '' -t 0.05 c || rc=$?
	if [ $rc -ne 0 ]; then
		# the countdown as real U-Boot prints it, a tick a second (then, unlike
		# U-Boot, it waits on at 0: this fake has nothing to boot by itself)
		if [ $rc -gt 128 ] && [ "$mode" = autoboot ] && [ $((2 - (SECONDS - ab_t))) -lt $ab_left ] &&
			[ $ab_left -gt 0 ]; then
			ab_left=$((ab_left - 1))
			printf '\b\b\b%2d ' $ab_left
		fi
		[ $rc -gt 128 ] && continue
		exit 0 # EOF: the console was closed
	fi
	case $mode in
	autoboot) mode=uboot; printf '\r\n=> ' ;;
	uboot)
		if [ "$c" = $'\x03' ]; then line=; printf '<INTERRUPT>\r\n=> '
		elif [ "$c" = $'\r' ] || [ "$c" = $'\n' ]; then
			printf '\r\n'; l=$line; line=; uline "$l"
			[ "$mode" = uboot ] && printf '=> '
		else line+=$c; printf '%s' "$c"; fi ;;
	shell)
		if [ "$c" = $'\x03' ]; then line=; printf '^C\r\n%s' "$PS1"
		elif [ "$c" = $'\n' ] || [ "$c" = $'\r' ]; then
			[ $echo = 1 ] && printf '\r\n'
			l=$line; line=
			case $l in *"stty -echo"*) echo=0 ;; esac
			eval "$l" 2>&1 || true
			printf '%s' "$PS1"
		else line+=$c; [ $echo = 1 ] && printf '%s' "$c"; fi ;;
	esac
done
BOARD

cat > "$T/lab.yaml" <<EOF
types:
  - name: exec-fake
    uboot: {bootargs: "console=ttyS0 root=/dev/mmcblk0p2", char_delay: 2ms, chunk: 16}
    shell: {agent_path: ""}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 5s, login: 5s, command: 10s}
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
    retries: 0
lab:
  name: exec-lab
  transcripts: $T/transcripts
kernels:
  - name: k
    cmdline: "quiet"
boards:
  - name: e1
    type: exec-fake
    console: {driver: exec, command: [bash, $T/board.sh, $T/power]}
    power:
      driver: exec
      off_time: 50ms
      on: [sh, -c, "echo on-\$(date +%s%N) > $T/power"]
      off: [sh, -c, "echo off > $T/power"]
EOF

"$EMMCLAB" check "$T/lab.yaml" > "$T/out" 2> "$T/err" || fail "lab does not check"
"$EMMCLAB" board e1 boot --lab "$T/lab.yaml" --mode cache-nofua \
	--run "cat /proc/cmdline" --run "echo exit-test; false" > "$T/out" 2> "$T/err" && rc=0 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1 (a --run command failed), got $rc"
grep -qx "console=ttyS0 root=/dev/mmcblk0p2 quiet mmc_block.fua=off mmc_core.disable_cqe=1" "$T/out" ||
	fail "bootargs did not reach the fake kernel"
grep -q "exited with 1" "$T/err" || fail "non-zero exit not reported"
ls "$T"/transcripts/e1-1-*.log > /dev/null || fail "no transcript"
grep -q "@@UB-2-0@@" "$T"/transcripts/e1-1-*.log || fail "transcript lacks the U-Boot dialogue"

# A power driver that reports the power on late (a slow PDU; the exec driver under
# ASan load did in CI): the banner and the autoboot line arrive while the controller
# still waits for "on", and are matched on the countdown's next tick.
sed -i '/^ *on: /s|"\]$|; sleep 0.5"]|' "$T/lab.yaml"
grep -q 'sleep 0.5' "$T/lab.yaml" || fail "could not make the power on late"
rm -rf "$T/transcripts"
"$EMMCLAB" board e1 boot --lab "$T/lab.yaml" --mode fua --run "cat /proc/cmdline" \
	> "$T/out" 2> "$T/err" && rc=0 || rc=$?
[ $rc -eq 0 ] || fail "late power-on report: exit $rc"
grep -qx "console=ttyS0 root=/dev/mmcblk0p2 quiet mmc_block.fua=on mmc_core.disable_cqe=1" "$T/out" ||
	fail "late power-on report: bootargs did not reach the fake kernel"
echo "board_exec: all passed"
