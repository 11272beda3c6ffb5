#!/usr/bin/env bash
# The published ext4 copy, faithfully, on the host agent against a loop
# device: three `dd if=/dev/urandom`-style precondition passes, then fscopy
# with a real kernel source tree given as a .tar.xz (the first ~4 MiB of
# files of Debian's /usr/src/linux-source-6.1.tar.xz, re-packed), unpacked
# outside the timing; strace and the agent's own step log must show the
# seed's sequence inside the timing: mkfs.ext4, mount, 3 copies, 3 removals,
# 3 copies, umount.  Exit 77 (skip) without root, losetup, mke2fs, strace or
# the linux-source tarball.  About 20 s here.
set -euo pipefail
: "${EMMCLAB_BIN:?}"
AGENT=$EMMCLAB_BIN/suites/agent/emmclab-agent
SRC_TAR=${EMMCLAB_LINUX_TAR:-/usr/src/linux-source-6.1.tar.xz}
PY=/usr/bin/python3
[ -x "$AGENT" ] || { echo "FAIL: $AGENT not built"; exit 1; }

tmp=$(mktemp -d /tmp/emmclab-fscopy-kernel.XXXXXX)
loop=
cleanup() {
	mountpoint -q "$tmp/mnt" 2>/dev/null && umount "$tmp/mnt"
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }

for t in losetup mke2fs strace tar xz; do
	command -v "$t" >/dev/null || { echo "SKIP: needs $t"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (loop device, mount)"; exit 77; }
[ -r "$SRC_TAR" ] && [ -x "$PY" ] || { echo "SKIP: needs $SRC_TAR (linux-source-6.1) and $PY"; exit 77; }

# A small real tree: the archive's first regular files up to 4 MiB, in
# archive order (streamed: the 1.3 GiB tree is never unpacked whole).
"$PY" - "$SRC_TAR" "$tmp/linux-subset.tar.xz" <<'EOF'
import sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
total = 0
with tarfile.open(src, "r|xz") as tin, tarfile.open(dst, "w:xz") as tout:
    for m in tin:
        if m.isdir() or m.issym():
            tout.addfile(m)
        elif m.isreg():
            tout.addfile(m, tin.extractfile(m))
            total += m.size
            if total > 4 << 20:
                break
EOF
mkdir -p "$tmp/ref" && tar -xf "$tmp/linux-subset.tar.xz" -C "$tmp/ref"
ref="$tmp/ref/$(ls "$tmp/ref")"
[ -d "$ref" ] || fail "subset has no single top-level directory"
nfiles=$(find "$ref" ! -type d | wc -l) # files and symlinks, as the agent counts them
[ "$nfiles" -gt 50 ] || fail "subset of $SRC_TAR has only $nfiles files"

truncate -s 64M "$tmp/disk.img"
if ! loop=$(losetup -f --show "$tmp/disk.img" 2>"$tmp/losetup.err"); then
	loop=
	echo "SKIP: losetup not permitted here: $(cat "$tmp/losetup.err")"; exit 77
fi
size=$(blockdev --getsize64 "$loop")

# 1. preconditioning: three full passes of /dev/urandom data, as dd did
# LeakSanitizer cannot run under ptrace: a sanitized agent checks leaks elsewhere
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
strace -f -o "$tmp/pre.strace" -e trace=openat,pwrite64 \
	"$AGENT" --log "$tmp/agent.log" precondition passes=3 target="$loop" >"$tmp/out" ||
	fail "precondition"
grep -q ' done status=ok ' "$tmp/out" || fail "precondition status"
grep -q 'openat(.*"/dev/urandom", O_RDONLY' "$tmp/pre.strace" || fail "precondition did not read /dev/urandom"
written=$(sed -n 's/.*pwrite64(.*) = \([0-9]*\)$/\1/p' "$tmp/pre.strace" | awk '{s += $1} END {print s + 0}')
[ "$written" = $((3 * size)) ] || fail "precondition wrote $written bytes, want 3 x $size"
[ "$(grep -c 'pass%20[123]/3%20done' "$tmp/out")" = 3 ] || fail "three passes done"

# 2. fscopy of the real tree from its tarball
strace -f -o "$tmp/fs.strace" -e trace=execve,mount,umount2 \
	"$AGENT" --log "$tmp/agent.log" fscopy target="$loop" tree="$tmp/linux-subset.tar.xz" \
	iterations=1 >"$tmp/out" || fail "fscopy with tree=$tmp/linux-subset.tar.xz"
grep -q ' done status=ok ' "$tmp/out" || fail "fscopy status"
grep -q "what=fscopy%20tree%20.*:%20${nfiles}%20files" "$tmp/out" || fail "tree size line ($nfiles files)"

# the agent's step log: the exact sequence, in order
steps=$(sed -n 's/.* what=fscopy%20iter%201%20step%20\([a-z.0-9]*\)%20.*/\1/p' "$tmp/out" | tr '\n' ' ')
want="mkfs.ext4 mount cp cp cp rm rm rm cp cp cp umount "
[ "$steps" = "$want" ] || fail "step log '$steps', want '$want'"
# strace: tar before mke2fs (unpack outside the timing), then mount, then umount
seq=$(grep -oE 'execve\("[^"]*/(tar|mke2fs|mkfs.ext4)"|mount\("'"$loop"'"|umount2\(' "$tmp/fs.strace" |
	sed -E 's/execve\("[^"]*\/([a-z.0-9]+)"/\1/; s/mount\(.*/mount/; s/umount2\(/umount/' | tr '\n' ' ')
[ "$seq" = "tar mke2fs mount umount " ] || fail "strace sequence '$seq'"
for m in wall_time mkfs_time mount_time copy1_time rm_time copy2_time umount_time; do
	[ "$(grep -c " metric=$m " "$tmp/out")" = 1 ] || fail "metric $m"
done
grep -q ' metric=sync_time ' "$tmp/out" && fail "sync_time on the device path (the seed ends with umount)"
grep -q "$loop" /proc/self/mounts && fail "fscopy left $loop mounted"
unpacked=$(sed -n 's/.*%20into%20\(\/tmp\/emmclab-tree\.[A-Za-z0-9]*\)%20.*/\1/p' "$tmp/out")
[ -n "$unpacked" ] || fail "no unpack line"
[ ! -e "$unpacked" ] || fail "unpacked tree $unpacked left behind"

# what is on the device is the tree, three times
mkdir -p "$tmp/mnt"
mount -o ro "$loop" "$tmp/mnt" || fail "mount the result"
for c in 1 2 3; do
	diff -r --no-dereference "$ref" "$tmp/mnt/copy$c" >/dev/null || fail "copy$c differs from the tree"
done
umount "$tmp/mnt"
echo "PASS agent_fscopy_kernel ($nfiles files, $(du -sm "$ref" | cut -f1) MiB)"
