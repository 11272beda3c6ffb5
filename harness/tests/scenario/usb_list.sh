#!/bin/bash
# usb_list: the real binary under umockdev-run with emulated USB devices
# (sysfs + descriptors, no ioctl emulation): `board list-usb` finds YKUSH and
# fastboot devices with their serials and lab-file lines, and a power
# request to a YKUSH that is not there fails with a clear message.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
command -v umockdev-run >/dev/null || { echo "umockdev-run not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp/devs.umockdev" <<'PY'
import sys
def dev(vid, pid, cls, ifaces, nif):
    d = bytes([18, 1, 0, 2, cls, 0, 0, 64, vid & 255, vid >> 8, pid & 255, pid >> 8, 0, 1, 1, 2, 3, 1])
    tot = 9 + len(ifaces)
    return (d + bytes([9, 2, tot & 255, tot >> 8, nif, 1, 0, 0x80, 50]) + ifaces).hex()
hub = bytes([9, 4, 0, 0, 1, 9, 0, 0, 0, 7, 5, 0x81, 3, 2, 0, 12])
yk = bytes([9, 4, 0, 0, 2, 3, 0, 0, 0, 9, 0x21, 0x11, 1, 0, 1, 0x22, 22, 0,
            7, 5, 0x81, 3, 64, 0, 1, 7, 5, 0x01, 3, 64, 0, 1])
fb = bytes([9, 4, 0, 0, 2, 0xff, 0x42, 3, 0, 7, 5, 0x81, 2, 0, 2, 0, 7, 5, 0x01, 2, 0, 2, 0])
def block(path, bus, addr, desc, attrs):
    s = (f"P: {path}\nN: bus/usb/{bus:03d}/{addr:03d}\nE: SUBSYSTEM=usb\nE: DEVTYPE=usb_device\n"
         f"E: BUSNUM={bus:03d}\nE: DEVNUM={addr:03d}\nE: DEVNAME=/dev/bus/usb/{bus:03d}/{addr:03d}\n"
         f"A: busnum={bus}\\n\nA: devnum={addr}\\n\nA: speed=480\\n\nA: bConfigurationValue=1\\n\n")
    for k, v in attrs:
        s += f"A: {k}={v}\\n\n"
    return s + f"H: descriptors={desc}\n"
out = [block("/devices/usb1", 1, 1, dev(0x1d6b, 2, 9, hub, 1), [("product", "xHCI Host Controller")]),
       block("/devices/usb1/1-3", 1, 2, dev(0x04d8, 0xf2f7, 0, yk, 1),
             [("manufacturer", "Yepkit Lda."), ("product", "YKUSH"), ("serial", "YK21001")]),
       block("/devices/usb1/1-4", 1, 3, dev(0x18d1, 0x4ee0, 0, fb, 1),
             [("manufacturer", "U-Boot"), ("product", "USB download gadget"), ("serial", "FBSER01")])]
open(sys.argv[1], "w").write("\n".join(out))
PY

out=$(timeout 30 umockdev-run -d "$tmp/devs.umockdev" -- "$EMMCLAB" board list-usb)
echo "$out"
grep -q '^1-3 .*04d8:f2f7 Yepkit YKUSH, serial YK21001 .*power: {driver: ykush, serial: YK21001, port: N}' <<<"$out" \
	|| { echo "FAIL: YKUSH not listed" >&2; exit 1; }
grep -q '^1-4 .*18d1:4ee0 fastboot .*serial FBSER01 .*deploy: {driver: fastboot, serial: "FBSER01"}' <<<"$out" \
	|| { echo "FAIL: fastboot device not listed" >&2; exit 1; }

# A board powered by a YKUSH that is not plugged in: exit 3, the message says why.
cat >"$tmp/lab.yaml" <<EOF2
include: [$EMMCLAB_SRC/boards/types/exynos-dwmmc.yaml]
lab: {name: usb-scenario, results: $tmp/lab.db}
boards:
  - name: xu4
    type: exynos-dwmmc
    console: {driver: tcp, host: 127.0.0.1, port: 9}
    power: {driver: ykush, serial: YK99999, port: 1}
EOF2
set +e
msg=$(timeout 30 umockdev-run -d "$tmp/devs.umockdev" -- "$EMMCLAB" board --lab "$tmp/lab.yaml" xu4 power on 2>&1)
rc=$?
set -e
echo "$msg (rc=$rc)"
[ "$rc" = 3 ] || { echo "FAIL: exit $rc, want 3" >&2; exit 1; }
grep -q 'serial="YK99999"' <<<"$msg" || { echo "FAIL: message does not name the serial" >&2; exit 1; }
echo "usb_list: ok"
