#!/bin/bash
# peer_boot.sh - the controller's cost of one boot cycle on a plain QEMU board,
# side by side with other tools: boot -> shell -> `uname -r` and
# `cat /sys/block/mmcblk0/queue/fua` -> off, REPS interleaved repetitions of
#   expect   a bare Tcl expect script (bench/peer_expect.exp): the baseline
#   emmclab  emmclab board NAME boot --run ... --run ... (powered off at the end)
#   labgrid  labgrid 0.4.1 under pytest: QEMUDriver + ShellDriver
#   lava     LAVA 2023.01 lava-run, qemu device type, an interactive test
# on the same board: Debian's kernel (/boot/vmlinuz-KVER), a busybox initramfs
# with a `vboard# ` shell and no login (bench/peer_initramfs.sh), sdhci-pci +
# sd-card, QEMU TCG, 512 MiB, one CPU.
#
# Each run gets two cgroups: the controller's (the tool and every process it
# starts) and QEMU's - every side starts QEMU through a one-line wrapper that
# moves itself into the QEMU group before it execs qemu-system-x86_64, so the
# controller's CPU is its process tree without QEMU.  The wrapper's own
# fork+exec (about 1 ms of sh) is counted on the controller's side, the same
# for every tool.  Wall time is the tool's whole run; "outside QEMU" is that
# minus QEMU's lifetime (noted by the wrapper): the tool's own start-up,
# set-up and tear-down, free of the guest's boot time, which a loaded host
# makes vary by seconds.  What a tool adds while QEMU runs (prompt detection,
# command round trips) shows only in the wall time against bare expect.
#
#   bench/peer_boot.sh [--reps N] [--sides expect,emmclab,labgrid,lava] [--out DIR]
#
# Needs root for the cgroups (v2, or v1 cpuacct), qemu-system-x86, expect,
# python3-labgrid + python3-pytest, lava-dispatcher, busybox-static and
# linux-image-amd64.  EMMCLAB names the binary (default build/harness/emmclab).
# Prints a Markdown table (medians) and leaves runs.tsv and each run's output
# in --out (default a temporary directory, kept).  Exit 77 when it cannot run here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
EMMCLAB=${EMMCLAB:-$src/build/harness/emmclab}
reps=5 sides=expect,emmclab,labgrid,lava out=
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--sides) sides=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) sed -n '2,28p' "$0" >&2; exit 2 ;;
	esac
done
skip() { echo "peer_boot: cannot run here: $*" >&2; exit 77; }
kver=$(ls /boot/vmlinuz-* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
[ -n "$kver" ] || skip "no /boot/vmlinuz-* (linux-image-amd64)"
kernel=/boot/vmlinuz-$kver
command -v qemu-system-x86_64 > /dev/null || skip "qemu-system-x86_64 missing"
[ -x "$EMMCLAB" ] || skip "emmclab binary $EMMCLAB missing (set EMMCLAB)"
IFS=, read -r -a side_list <<< "$sides"
for s in "${side_list[@]}"; do
	case $s in
	expect) command -v expect > /dev/null || skip "expect missing" ;;
	labgrid) /usr/bin/python3 -c 'import labgrid, pytest' 2> /dev/null || skip "python3-labgrid/pytest missing" ;;
	lava) command -v lava-run > /dev/null || skip "lava-run missing (lava-dispatcher)" ;;
	emmclab) ;;
	*) echo "peer_boot: unknown side $s" >&2; exit 2 ;;
	esac
done

# cgroups: v2 (cpu.stat usage_usec) or v1 cpuacct (cpuacct.usage, ns)
if [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir -p /sys/fs/cgroup/emmclab-peer 2> /dev/null; then
	cgroot=/sys/fs/cgroup/emmclab-peer cgv=2
elif [ -d /sys/fs/cgroup/cpuacct ] && mkdir -p /sys/fs/cgroup/cpuacct/emmclab-peer 2> /dev/null; then
	cgroot=/sys/fs/cgroup/cpuacct/emmclab-peer cgv=1
else
	skip "no writable cgroup (v2 or v1 cpuacct): run as root"
fi
cg_usage() { # seconds of CPU of group $1
	if [ $cgv = 2 ]; then
		awk '$1 == "usage_usec" { printf "%.4f", $2 / 1e6 }' "$1/cpu.stat"
	else
		awk '{ printf "%.4f", $1 / 1e9 }' "$1/cpuacct.usage"
	fi
}
cg_rm() { # the group, once empty (bounded)
	local i
	for i in $(seq 100); do
		[ -s "$1/cgroup.procs" ] || break
		sleep 0.05
	done
	rmdir "$1" 2> /dev/null || true
}

work=${out:-$(mktemp -d /tmp/emmclab-peer-XXXXXX)}
mkdir -p "$work"
"$here/peer_initramfs.sh" "$work/initrd.gz" "$kver" > /dev/null
truncate -s 64M "$work/sd.img"
# The wrapper moves itself into QEMU's group, then runs QEMU as its child to
# note when QEMU started and ended (the tool's time outside QEMU's life);
# the signals a tool stops QEMU with are passed on.
cat > "$work/qemu-wrap" << 'EOF'
#!/bin/sh
echo $$ > "$PEER_QEMU_CG/cgroup.procs"
t0=$(date +%s.%N)
exec 3<&0 # an asynchronous command's stdin would be /dev/null (QMP and -serial stdio need it)
qemu-system-x86_64 "$@" <&3 3<&- &
q=$!
trap 'kill -TERM $q 2> /dev/null' TERM INT HUP
rc=0
while kill -0 $q 2> /dev/null; do wait $q; rc=$?; done
echo "$t0 $(date +%s.%N)" >> "$PEER_QEMU_TIMES"
exit $rc
EOF
chmod +x "$work/qemu-wrap"
append="console=ttyS0,115200 panic=-1"
board_args=(-device sdhci-pci -device sd-card,drive=sd -drive "id=sd,if=none,format=raw,file=$work/sd.img")

# emmclab: the qemu-sdhci type, the qemu power driver with the same machine,
# the serial console on a Unix socket (as labgrid's QEMUDriver does)
mkdir -p "$work/emmclab"
cat > "$work/emmclab/lab.yaml" << EOF
include: [$src/boards/types/qemu-sdhci.yaml]
lab: {name: peer, results: $work/emmclab/lab.db, transcripts: $work/emmclab/tr}
boards:
  - name: vb1
    type: qemu-sdhci
    console: {driver: tcp, path: $work/emmclab/state/con.sock, reconnect_delay: 50ms}
    power:
      driver: qemu
      qemu: $work/qemu-wrap
      socket: con.sock
      dir: $work/emmclab/state
      kernel: $kernel
      initrd: $work/initrd.gz
      kernel_console: "$append"
      extra: [-device, sdhci-pci, -device, "sd-card,drive=sd", -drive, "id=sd,if=none,format=raw,file=$work/sd.img"]
EOF
"$EMMCLAB" check -q "$work/emmclab/lab.yaml"

# labgrid: QEMUDriver (QMP, serial on a unix socket) + ShellDriver
mkdir -p "$work/labgrid"
cat > "$work/labgrid/env.yaml" << EOF
targets:
  main:
    drivers:
      QEMUDriver:
        qemu_bin: qemu
        machine: pc
        cpu: qemu64
        memory: 512M
        kernel: kernel
        boot_args: "$append"
        extra_args: "-accel tcg -smp 1 -nodefaults -no-reboot -initrd $work/initrd.gz ${board_args[*]}"
      ShellDriver:
        prompt: 'vboard# '
        login_prompt: ' login: '
        username: root
tools:
  qemu: $work/qemu-wrap
images:
  kernel: $kernel
EOF
cat > "$work/labgrid/test_peer.py" << 'EOF'
def test_boot(target):
    q = target.get_driver("QEMUDriver")
    target.activate(q)
    q.on()
    sh = target.get_driver("ShellDriver")
    target.activate(sh)
    rel = sh.run_check("uname -r")
    fua = sh.run_check("cat /sys/block/mmcblk0/queue/fua")
    print("\n".join(rel + fua))
    q.off()
EOF

# LAVA: a rendered qemu device dictionary (lava-server's templates are not
# needed by lava-run) and a job with an interactive test
mkdir -p "$work/lava"
{
	cat << EOF
device_type: qemu
available_architectures: [amd64, x86_64]
constants:
  shutdown-message: "The system is going down for reboot NOW"
  kernel-start-message: "Linux version [0-9]"
  default-shell-prompt: "lava-test: # "
  spawn_maxread: '4092'
  failure_retry: 1
  boot_retry: 1
  posix: {lava_test_sh_cmd: /bin/sh, lava_test_results_dir: /lava-%s, lava_test_shell_file: ~/.bashrc}
actions:
  deploy:
    connections: {serial: }
    methods:
      image:
        parameters:
          guest: {size: 512, interface: ide, driveid: lavatest}
  boot:
    connections: {serial: }
    methods:
      qemu:
        parameters:
          command: $work/qemu-wrap
          boot_options: {}
          options: [-machine pc, -accel tcg, -m 512, -smp 1, -nodefaults, -display none, -no-reboot,
                    -serial stdio, -device sdhci-pci, "-device sd-card,drive=sd",
                    "-drive id=sd,if=none,format=raw,file=$work/sd.img"]
timeouts:
  connections: {lava-test-shell: {seconds: 30}}
EOF
} > "$work/lava/device.yaml"
cat > "$work/lava/job.yaml" << EOF
device_type: qemu
job_name: peer-boot
timeouts: {job: {minutes: 10}, action: {minutes: 5}, connection: {minutes: 2}}
priority: medium
visibility: public
context: {arch: amd64}
actions:
- deploy:
    to: tmpfs
    timeout: {minutes: 3}
    images:
      kernel: {image_arg: '-kernel {kernel} -append "$append"', url: "file://$kernel"}
      initrd: {image_arg: '-initrd {initrd}', url: "file://$work/initrd.gz"}
- boot:
    method: qemu
    media: tmpfs
    timeout: {minutes: 3}
    prompts: ['vboard# ']
- test:
    timeout: {minutes: 2}
    interactive:
    - name: cmds
      prompts: ['vboard# ']
      script:
      - {command: uname -r, name: uname, successes: [{message: "$kver"}]}
      - {command: cat /sys/block/mmcblk0/queue/fua, name: fua, successes: [{message: "0"}]}
EOF

# one run of side $1 (repetition $2): prints "wall ctl_cpu qemu_cpu ok"
run_side() {
	local side=$1 rep=$2 log=$work/$1-$2.log
	local cg=$cgroot/$side-$rep qcg=$cgroot/$side-$rep-qemu
	mkdir -p "$cg" "$qcg"
	export PEER_QEMU_CG=$qcg PEER_QEMU_TIMES=$work/$side-$rep.qemu-times
	rm -f "$PEER_QEMU_TIMES"
	local cmd=() dir=$work
	case $side in
	expect) cmd=(expect -f "$here/peer_expect.exp" "$work/qemu-wrap" -machine pc -accel tcg -m 512 -smp 1
		-nodefaults -display none -no-reboot -serial stdio -kernel "$kernel" -initrd "$work/initrd.gz"
		-append "$append" "${board_args[@]}") ;;
	emmclab) cmd=("$EMMCLAB" -q board vb1 boot --lab "$work/emmclab/lab.yaml" --run 'uname -r'
		--run 'cat /sys/block/mmcblk0/queue/fua') ;;
	labgrid) dir=$work/labgrid
		cmd=(/usr/bin/python3 -m pytest --lg-env env.yaml test_peer.py -q -s -p no:cacheprovider) ;;
	lava) rm -rf "$work/lava/out"
		cmd=(lava-run --job-id "$rep" --output-dir "$work/lava/out" --device "$work/lava/device.yaml"
			"$work/lava/job.yaml") ;;
	esac
	local t0=$EPOCHREALTIME rc=0
	(cd "$dir" && sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "${cmd[@]}") > "$log" 2>&1 || rc=$?
	local t1=$EPOCHREALTIME
	local ok=0
	case $side in
	lava) grep -q '"case": "uname", "definition": "0_cmds", "duration": "[0-9.]*", "result": "pass"' "$log" &&
		grep -q '"case": "job", "definition": "lava", "result": "pass"' "$log" && ok=1 ;;
	*) [ $rc = 0 ] && grep -qx "$kver" "$log" && grep -qx "0" <(tr -d '\r' < "$log") && ok=1 ;;
	esac
	local ctl qcpu
	for _ in $(seq 100); do [ -s "$qcg/cgroup.procs" ] || break; sleep 0.05; done
	ctl=$(cg_usage "$cg") qcpu=$(cg_usage "$qcg")
	cg_rm "$cg"
	cg_rm "$qcg"
	local life=0
	[ -s "$PEER_QEMU_TIMES" ] && life=$(awk '{ s += $2 - $1 } END { printf "%.3f", s }' "$PEER_QEMU_TIMES")
	awk -v a="$t0" -v b="$t1" -v c="$ctl" -v q="$qcpu" -v ok="$ok" -v life="$life" \
		'BEGIN { printf "%.3f %s %s %d %.3f\n", b - a, c, q, ok, b - a - life }'
}

echo -e "side\trep\twall_s\tcontroller_cpu_s\tqemu_cpu_s\tok\toutside_qemu_s" > "$work/runs.tsv"
n=${#side_list[@]}
for rep in $(seq "$reps"); do
	for i in $(seq 0 $((n - 1))); do
		side=${side_list[$(((i + rep - 1) % n))]} # rotate the order: no side always first
		read -r wall ctl qcpu ok outside < <(run_side "$side" "$rep")
		echo -e "$side\t$rep\t$wall\t$ctl\t$qcpu\t$ok\t$outside" >> "$work/runs.tsv"
		echo "peer_boot: $side #$rep: wall ${wall}s (${outside}s outside QEMU), controller ${ctl}s CPU, QEMU ${qcpu}s CPU$([ "$ok" = 1 ] || echo ', FAILED')" >&2
	done
done
rmdir "$cgroot" 2> /dev/null || true

/usr/bin/python3 - "$work/runs.tsv" "$sides" << 'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
sides = sys.argv[2].split(",")
med = {}
for s in sides:
    r = [x for x in rows if x[0] == s and x[5] == "1"]
    if r:
        m = lambda i: statistics.median(float(x[i]) for x in r)
        med[s] = dict(ok=len(r), n=sum(1 for x in rows if x[0] == s), cpu=m(3), wall=m(2), q=m(4),
                      out=m(6), cmin=min(float(x[3]) for x in r), cmax=max(float(x[3]) for x in r))
print("| controller | runs ok | controller CPU per cycle, median (min-max) | x emmclab | outside QEMU, median | minus bare expect | wall, median | QEMU CPU, median |")
print("|---|---|---|---|---|---|---|---|")
base = med["emmclab"]["cpu"] if "emmclab" in med else None
exp = med["expect"]["out"] if "expect" in med else None
for s in sides:
    if s not in med:
        n = sum(1 for x in rows if x[0] == s)
        print(f"| {s} | 0/{n} | - | - | - | - | - | - |")
        continue
    d = med[s]
    ratio = f"{d['cpu'] / base:.1f}" if base else "-"
    diff = f"{d['out'] - exp:+.3f} s" if exp is not None else "-"
    print(f"| {s} | {d['ok']}/{d['n']} | {d['cpu']:.3f} s ({d['cmin']:.3f}-{d['cmax']:.3f}) | {ratio} | "
          f"{d['out']:.3f} s | {diff} | {d['wall']:.2f} s | {d['q']:.2f} s |")
PY
echo "peer_boot: runs in $work/runs.tsv" >&2
