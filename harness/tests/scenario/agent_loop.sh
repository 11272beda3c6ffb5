#!/usr/bin/env bash
# emmclab-agent on a real block device: a loop device stands in for the eMMC.
# precondition and fscopy (mke2fs + mount) on it, the refusal to write a
# mounted device, and androbench count=1 reading block-layer flush counters.
# Skips (exit 77, ctest's skip code, with a message) where loop devices or mounting are not allowed.
set -euo pipefail
: "${EMMCLAB_BIN:?}"
AGENT=$EMMCLAB_BIN/suites/agent/emmclab-agent
[ -x "$AGENT" ] || { echo "FAIL: $AGENT not built"; exit 1; }

tmp=$(mktemp -d /tmp/emmclab-agent-loop.XXXXXX)
loop=
cleanup() {
	mountpoint -q "$tmp/mnt" 2>/dev/null && umount "$tmp/mnt"
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null || ! command -v mke2fs >/dev/null; then
	echo "SKIP agent_loop: needs root, losetup and mke2fs"; exit 77
fi
truncate -s 96M "$tmp/disk.img"
if ! loop=$(losetup -f --show "$tmp/disk.img" 2>"$tmp/losetup.err"); then
	loop=
	echo "SKIP agent_loop: losetup not permitted here: $(cat "$tmp/losetup.err")"; exit 77
fi
run() { "$AGENT" --log "$tmp/agent.log" "$@"; }
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }

# precondition: whole device rewritten with random data
run precondition passes=2 target="$loop" >"$tmp/out" || fail "precondition"
grep -q ' done status=ok ' "$tmp/out" || fail "precondition status"
[ "$(grep -c 'pct=100 ' "$tmp/out")" -ge 2 ] || fail "precondition: two passes to 100%"
zeros=$(head -c 1048576 "$loop" | tr -d '\000' | wc -c)
[ "$zeros" -gt 1000000 ] || fail "precondition left zeros ($zeros non-zero bytes of 1 MiB)"

# fscopy on the device: mkfs + mount + copies, samples incl. mkfs_time
if run fscopy target="$loop" iterations=2 scale=0.01 >"$tmp/out"; then
	for m in wall_time mkfs_time mount_time copy1_time rm_time copy2_time umount_time; do
		[ "$(grep -c " metric=$m " "$tmp/out")" = 2 ] || fail "fscopy: metric $m twice"
	done
	grep -q "$loop" /proc/self/mounts && fail "fscopy left $loop mounted"
elif grep -q 'code=mount' "$tmp/out"; then
	echo "# mount not permitted: fscopy device path not checked"
else
	fail "fscopy on $loop"
fi

# a mounted device is refused, and nothing is written
mke2fs -q -F -t ext4 "$loop"
mkdir -p "$tmp/mnt"
if mount "$loop" "$tmp/mnt" 2>/dev/null; then
	before=$(dd if="$loop" bs=1M count=4 status=none | md5sum)
	if run precondition passes=1 target="$loop" >"$tmp/out"; then fail "precondition on a mounted device"; fi
	grep -q ' error code=in-use ' "$tmp/out" || fail "in-use error"
	after=$(dd if="$loop" bs=1M count=4 status=none | md5sum)
	[ "$before" = "$after" ] || fail "mounted device was written"
	if run fscopy target="$loop" scale=0.001 >"$tmp/out"; then fail "fscopy on a mounted device"; fi
	grep -q ' error code=in-use ' "$tmp/out" || fail "fscopy in-use"

	# androbench in the mounted fs, counters from the loop device's stat
	run androbench dir="$tmp/mnt" seq_mib=4 req_mib=2 rand_mib=4 rand_ios=64 count=1 >"$tmp/out" || fail "androbench on ext4"
	flushes=$(sed -n 's/.* name=stat_flushes value=\([0-9]*\) .*/\1/p' "$tmp/out")
	[ -n "$flushes" ] && [ "$flushes" -ge 64 ] || fail "stat_flushes ($flushes) < 64 O_DSYNC writes"
	umount "$tmp/mnt"
else
	echo "# mount not permitted: in-use refusal not checked"
fi
echo "PASS agent_loop"
