# lib.sh - shared helpers of the boards/kernel scripts (sourced, not run).
#
# A series is a directory boards/kernel/patches/<name> with a `series` file:
#   6.1           the lab series for Linux 6.1 (Debian linux-source-6.1)
#   6.12          the lab series for Linux 6.12 LTS (linux-source-6.12)
#   upstream-6.12 the upstream-form series, against 6.12
# The kernel a series is for is the name's last "-" field.  Select one with
# KSERIES_VERSION=<name> in the environment or the scripts' --series <name>
# (kseries_select); the default is 6.1.  KSERIES_DIR and KSOURCE_TARBALL in
# the environment override the directory and the tarball.
#
# Cache layout (EMMCLAB_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/emmclab):
#   kernel/linux-<kernel>/linux          one unpacked tree per kernel version,
#                                        with the selected series applied
#   kernel/linux-<kernel>/pristine/      original copies of the files a series
#                                        touched (to switch series)
#   kernel/linux-<kernel>/build-<arch>/  O= build directories
#   kernel/mmcsrc-<series>-<hash>/       drivers/mmc/core + include/linux/mmc
#                                        for build-modules.sh
# Trees are used only once their stamp exists, so an interrupted unpack or
# patch run is redone rather than trusted.

KDIR_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EMMCLAB_CACHE=${EMMCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/emmclab}
KSERIES_DIR_ENV=${KSERIES_DIR:-}
KSOURCE_TARBALL_ENV=${KSOURCE_TARBALL:-}

kdie() { echo "${0##*/}: $*" >&2; exit 1; }
klog() { echo "${0##*/}: $*" >&2; }

# Select series $1: sets KSERIES_VERSION, KSERIES_KERNEL (6.1, 6.12),
# KSERIES_DIR and KSOURCE_TARBALL.
kseries_select() {
	case $1 in
	'' | */* | .*) kdie "bad series name '$1' (one of: $(kseries_names))" ;;
	esac
	KSERIES_VERSION=$1
	KSERIES_KERNEL=${KSERIES_VERSION##*-}
	KSERIES_DIR=${KSERIES_DIR_ENV:-$KDIR_SELF/patches/$KSERIES_VERSION}
	KSOURCE_TARBALL=${KSOURCE_TARBALL_ENV:-/usr/src/linux-source-$KSERIES_KERNEL.tar.xz}
	[ -f "$KSERIES_DIR/series" ] || kdie "no series '$1' ($KSERIES_DIR/series missing; one of: $(kseries_names))"
}

# The series this checkout has, space separated.
kseries_names() {
	local d names=
	for d in "$KDIR_SELF"/patches/*/series; do
		[ -f "$d" ] || continue
		d=${d%/series}
		names="$names${names:+ }${d##*/}"
	done
	echo "$names"
}

kseries_select "${KSERIES_VERSION:-6.1}"

# The patches in series order, as absolute paths.
kseries_patches() {
	local f
	[ -f "$KSERIES_DIR/series" ] || kdie "no series file in $KSERIES_DIR"
	while read -r f; do
		case "$f" in '' | '#'*) continue ;; esac
		[ -f "$KSERIES_DIR/$f" ] || kdie "series lists $f, which is missing"
		echo "$KSERIES_DIR/$f"
	done < "$KSERIES_DIR/series"
}

# Short hash naming the series (content of every patch, in order).
kseries_hash() {
	kseries_patches | xargs cat | sha256sum | cut -c1-16
}

# The files the series changes or creates, relative to the tree, sorted.
kseries_files() {
	kseries_patches | xargs grep -h '^+++ b/' | sed 's|^+++ b/||; s|\t.*||' | sort -u
}

# The distribution kernel the series is for: the newest /boot/vmlinuz-K.*
# (K = KSERIES_KERNEL, so 6.1 never picks a 6.12 kernel), else the newest
# headers for K.  The virtual board boots exactly this kernel.
kseries_default_kver() {
	local k
	k=$(ls /boot/vmlinuz-"$KSERIES_KERNEL".* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
	[ -n "$k" ] || k=$(ls -d /lib/modules/"$KSERIES_KERNEL".*/build 2> /dev/null |
		sed 's|^/lib/modules/||; s|/build$||' | sort -V | tail -1)
	[ -n "$k" ] || kdie "no $KSERIES_KERNEL.* kernel in /boot and no headers in /lib/modules (apt-get install linux-image-$KSERIES_KERNEL-amd64 linux-headers-$KSERIES_KERNEL-amd64, or pass --kver)"
	echo "$k"
}

# Apply the series to tree $1 (idempotent: patches already applied are
# skipped; a patch that neither applies nor is applied is an error).
kseries_apply() {
	local tree=$1 p
	for p in $(kseries_patches); do
		if patch -d "$tree" -p1 -R -s -f -F0 --dry-run < "$p" > /dev/null 2>&1; then
			klog "already applied: ${p##*/}"
			continue
		fi
		if ! patch -d "$tree" -p1 -N -s -F0 --dry-run < "$p" > /dev/null; then
			kdie "does not apply to $tree: ${p##*/}"
		fi
		patch -d "$tree" -p1 -N -s -F0 < "$p" > /dev/null || kdie "failed to apply ${p##*/}"
		klog "applied: ${p##*/}"
	done
}

# Lock the shared tree of KSERIES_KERNEL for this process (fd 8): the series
# applied to it may only change under the lock.
ktree_lock() {
	mkdir -p "$EMMCLAB_CACHE/kernel"
	exec 8> "$EMMCLAB_CACHE/kernel/linux-$KSERIES_KERNEL.lock"
	flock 8
}

# The shared tree of KSERIES_KERNEL with the selected series applied (and no
# other); prints its path.  Unpacks the tarball once per kernel version (again
# when the tarball changes); switching series restores the files the previous
# one touched from pristine/ and applies the new one, so make recompiles only
# what changed.  Call with ktree_lock held.
ktree_prepare() {
	local base tree want src f
	[ -r "$KSOURCE_TARBALL" ] || kdie "$KSOURCE_TARBALL not found (apt-get install linux-source-$KSERIES_KERNEL)"
	base=$EMMCLAB_CACHE/kernel/linux-$KSERIES_KERNEL
	tree=$base/linux
	src=$(stat -L -c '%n %s %Y' "$KSOURCE_TARBALL")
	if [ "$(cat "$base/.emmclab-ready" 2> /dev/null)" != "$src" ]; then
		# trees of the old layout (one per series hash) and of an older tarball
		rm -rf "$EMMCLAB_CACHE"/kernel/check-* "$base"
		mkdir -p "$base/pristine"
		klog "unpacking $KSOURCE_TARBALL into $base"
		tar -C "$base" -xf "$KSOURCE_TARBALL" || kdie "cannot unpack $KSOURCE_TARBALL"
		mv "$base"/linux-source-* "$tree" || kdie "unexpected tarball layout"
		: > "$base/created"
		echo "$src" > "$base/.emmclab-ready"
	fi
	want="$KSERIES_VERSION $(kseries_hash)"
	[ "$(cat "$base/applied" 2> /dev/null)" = "$want" ] && { echo "$tree"; return; }
	rm -f "$base/applied"
	# back to pristine: restore what any earlier series changed, drop what it created
	(cd "$base/pristine" && find . -type f ! -name '*.tmp') | while read -r f; do
		cp "$base/pristine/$f" "$tree/$f"
	done
	while read -r f; do rm -f "$tree/$f"; done < "$base/created"
	for f in $(kseries_files); do
		[ -e "$base/pristine/$f" ] && continue
		grep -qxF "$f" "$base/created" && continue
		if [ -e "$tree/$f" ]; then
			mkdir -p "$base/pristine/$(dirname "$f")"
			cp -p "$tree/$f" "$base/pristine/$f.tmp" && mv "$base/pristine/$f.tmp" "$base/pristine/$f"
		else
			echo "$f" >> "$base/created"
		fi
	done
	klog "applying series $KSERIES_VERSION to $tree"
	kseries_apply "$tree"
	echo "$want" > "$base/applied"
	echo "$tree"
}
