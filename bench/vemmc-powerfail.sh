#!/bin/bash
# vemmc-powerfail.sh - the power-fail suite on vemmc, many cuts per mode, in
# one boot per mode: for each cut the agent's powerfail-write appends fsync'd
# 4 KiB records on the ext4 of the card, vemmc cuts the power during a
# random write or flush request (the N-th from arming, N uniform in
# [--min-req, --max-req]) at a random point of it (permille uniform), the
# card stays dead, the writer fails, /data is unmounted, vemmc/power_on
# powers the card up and the core detects and initialises it anew (new
# mmc_card, new mmcblk0, nothing of the old page cache), the file system is
# mounted again (journal replay; e2fsck -y if it does not mount) and
# powerfail-check counts the acknowledged records intact, lost, torn and
# corrupt.  Prints one line per cut and the per-mode table.
#
#   bench/vemmc-powerfail.sh [--cuts N] [--modes "fua cache-nofua ..."]
#       [--series 6.1|6.12] [--profile P] [--append "vemmc.X=Y ..."] [--seed S]
#       [--min-req N] [--max-req N]
#
# Defaults: 100 cuts, the four modes, series 6.1, profile default with a
# 256 KiB cache, seed 1, requests 5..400.  EMMCLAB_BIN: the build directory
# (emmclab-agent); EMMCLAB_CACHE: where the modules are built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$here/.." && pwd)
cuts=100 modes="fua cache-nofua fua-cqe cache-nofua-cqe" series=6.1 profile=default
append="vemmc.cache_kib=256" seed=1 minreq=5 maxreq=400
while [ $# -gt 0 ]; do
	case $1 in
	--cuts) cuts=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--series) series=$2; shift 2 ;;
	--profile) profile=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--min-req) minreq=$2; shift 2 ;;
	--max-req) maxreq=$2; shift 2 ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
done
BIN=${EMMCLAB_BIN:-$SRC/build}
AGENT=$BIN/suites/agent/emmclab-agent
[ ! -x "$AGENT-dut" ] || AGENT=$AGENT-dut
[ -x "$AGENT" ] || { echo "no agent at $AGENT (build emmclab-agent)" >&2; exit 2; }
kver=$(ls /boot/vmlinuz-"$series".* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
[ -n "$kver" ] || { echo "no /boot/vmlinuz-$series.*" >&2; exit 3; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KSERIES_VERSION=$series "$SRC/boards/virt/build.sh" --agent "$AGENT" --kver "$kver" \
	--out "$tmp/initramfs.cpio.gz" > /dev/null

exec /usr/bin/python3 - "$SRC" "/boot/vmlinuz-$kver" "$tmp/initramfs.cpio.gz" "$cuts" "$modes" \
	"vemmc.profile=$profile $append" "$seed" "$minreq" "$maxreq" "$kver" <<'PY'
import random, re, sys, time
src, kernel, initrd, cuts, modes, append, seed, minreq, maxreq, kver = sys.argv[1:11]
sys.path.insert(0, src + "/harness/tests/helpers")
from virtguest import Guest
cuts, seed, minreq, maxreq = int(cuts), int(seed), int(minreq), int(maxreq)
recipe = {
    "fua": "mmc_block.fua=on mmc_core.disable_cqe=1",
    "cache-nofua": "mmc_block.fua=off mmc_core.disable_cqe=1",
    "fua-cqe": "mmc_block.fua=on mmc_core.disable_cqe=0",
    "cache-nofua-cqe": "mmc_block.fua=off mmc_core.disable_cqe=0",
}
D = "/sys/kernel/debug/vemmc"
table = []
t_all = time.time()
for mode in modes.split():
    rng = random.Random("%d/%s" % (seed, mode))
    g = Guest(src + "/boards/virt/qemu-run.sh", kernel, initrd,
              "quiet loglevel=4 %s %s" % (recipe[mode], append))
    tot = {"acked": 0, "intact": 0, "lost": 0, "torn": 0, "corrupt": 0, "cuts": 0,
           "with_loss": 0, "torn_sectors": 0, "reformat": 0}
    t0 = time.time()
    try:
        if "/data (new file system)" not in g.login():
            sys.exit("%s: no new file system on the blank card" % mode)
        for i in range(1, cuts + 1):
            nreq, permille = rng.randint(minreq, maxreq), rng.randint(0, 999)
            g.sh("rm -f /data/pf.dat; sync")
            g.sh("echo %d %d > %s/cut" % (nreq, permille, D))
            # the writer runs until the card dies under it (EIO on a write or fsync)
            g.sh("emmclab-agent powerfail-write file=/data/pf.dat records=1000000 "
                 "record_size=4096 iter=%d > /tmp/w.out 2>&1" % i, 900)
            out, _ = g.sh("grep -c '^dead 1' %s/stats" % D)
            if out.strip() != "1":
                sys.exit("%s cut %d: the writer stopped but the card was not cut" % (mode, i))
            out, _ = g.sh("grep -o 'name=acked value=[0-9]*' /tmp/w.out | tail -1")
            m = re.search(r"value=(\d+)", out)
            acked = int(m.group(1)) if m else 0
            g.sh("umount /data || umount -l /data")
            g.sh("echo 1 > %s/power_on" % D)
            out, rc = g.sh("n=0; while [ ! -b /dev/mmcblk0 ] && [ $n -lt 100 ]; do sleep 0.1; "
                           "n=$((n+1)); done; mount -t ext4 /dev/mmcblk0 /data")
            if rc:
                g.sh("/sbin/e2fsck -y /dev/mmcblk0 > /dev/null 2>&1")
                out, rc = g.sh("mount -t ext4 /dev/mmcblk0 /data")
                if rc:
                    # the file system did not survive: a fresh one, the records count as lost
                    tot["reformat"] += 1
                    g.sh("/sbin/mke2fs -q -t ext4 -E lazy_itable_init=0,lazy_journal_init=0 "
                         "-F /dev/mmcblk0 && mount -t ext4 /dev/mmcblk0 /data")
            if acked and g.sh("[ -e /data/pf.dat ]")[1] == 0:
                out, _ = g.sh("emmclab-agent powerfail-check file=/data/pf.dat acked=%d "
                              "record_size=4096 iter=%d" % (acked, i), 600)
                c = dict((k, int(v)) for k, v in
                         re.findall(r"name=(\w+) value=(-?\d+)", out))
            else:
                c = {"acked": acked, "intact": 0, "lost": acked, "corrupt": 0, "torn": 0}
            torn_sec, _ = g.sh("cat %s/torn_sectors" % D)
            for k in ("acked", "intact", "lost", "torn", "corrupt"):
                tot[k] += c.get(k, 0)
            tot["cuts"] += 1
            bad = c.get("lost", 0) + c.get("corrupt", 0)
            tot["with_loss"] += bad > 0
            print("%s cut %d (request %d at %d/1000): acked %d intact %d lost %d torn %d "
                  "corrupt %d" % (mode, i, nreq, permille, acked, c.get("intact", 0),
                                  c.get("lost", 0), c.get("torn", 0), c.get("corrupt", 0)),
                  flush=True)
        out, _ = g.sh("grep -E '^(cuts|cut_writes|cut_flushes|torn_sectors|lost_sectors|"
                      "max_inflight|halts|illegal_cmds|bad_tags) ' %s/stats | tr '\\n' ' '" % D)
        tot["card"] = out.strip()
    finally:
        g.kill()
    tot["secs"] = time.time() - t0
    table.append((mode, tot))
print()
print("vemmc power-fail, kernel %s, %s, seed %d, cut during request %d..%d"
      % (kver, append, seed, minreq, maxreq))
print("%-16s %5s %8s %8s %6s %6s %8s %9s %6s" % ("mode", "cuts", "acked", "intact", "lost",
                                                  "torn", "corrupt", "cuts_loss", "s/cut"))
for mode, t in table:
    print("%-16s %5d %8d %8d %6d %6d %8d %9d %6.1f" % (
        mode, t["cuts"], t["acked"], t["intact"], t["lost"], t["torn"],
        t["corrupt"] - t["torn"], t["with_loss"], t["secs"] / max(t["cuts"], 1)))
for mode, t in table:
    print("%s card: %s%s" % (mode, t.get("card", ""),
                             (" reformatted %d" % t["reformat"]) if t["reformat"] else ""))
print("total %.0f s" % (time.time() - t_all))
PY
