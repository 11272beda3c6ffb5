# lib.sh - shared helpers of the boards/kernel scripts (sourced, not run).
#
# Cache layout (EMMCLAB_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/emmclab):
#   kernel/<name>-<key>/linux   unpacked, patched tree; <key> = series hash
# A tree is only used once its ".emmclab-ready" stamp exists, so an
# interrupted unpack or patch run is redone rather than trusted.

KDIR_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KSERIES_VERSION=${KSERIES_VERSION:-6.1}
KSERIES_DIR=${KSERIES_DIR:-$KDIR_SELF/patches/$KSERIES_VERSION}
KSOURCE_TARBALL=${KSOURCE_TARBALL:-/usr/src/linux-source-$KSERIES_VERSION.tar.xz}
EMMCLAB_CACHE=${EMMCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/emmclab}

kdie() { echo "${0##*/}: $*" >&2; exit 1; }
klog() { echo "${0##*/}: $*" >&2; }

# The patches in series order, as absolute paths.
kseries_patches() {
	local f
	[ -f "$KSERIES_DIR/series" ] || kdie "no series file in $KSERIES_DIR"
	while read -r f; do
		case "$f" in ''|'#'*) continue ;; esac
		[ -f "$KSERIES_DIR/$f" ] || kdie "series lists $f, which is missing"
		echo "$KSERIES_DIR/$f"
	done < "$KSERIES_DIR/series"
}

# Short hash naming the series (content of every patch, in order).
kseries_hash() {
	kseries_patches | xargs cat | sha256sum | cut -c1-16
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

# Unpack the Debian source tarball into a fresh cached tree named $1 with the
# series applied; prints the tree's path.  Reuses a complete earlier tree.
ktree_prepare() {
	local name=$1 key base tree
	[ -r "$KSOURCE_TARBALL" ] || kdie "$KSOURCE_TARBALL not found (apt-get install linux-source-$KSERIES_VERSION)"
	key=$(kseries_hash)
	base=$EMMCLAB_CACHE/kernel/$name-$key
	tree=$base/linux
	if [ ! -e "$base/.emmclab-ready" ]; then
		# trees of older series under this name are stale: drop them (they are big)
		rm -rf "$EMMCLAB_CACHE/kernel/$name"-*
		mkdir -p "$base"
		klog "unpacking $KSOURCE_TARBALL into $base"
		tar -C "$base" -xf "$KSOURCE_TARBALL" \
			|| kdie "cannot unpack $KSOURCE_TARBALL"
		mv "$base"/linux-source-* "$tree" || kdie "unexpected tarball layout"
		kseries_apply "$tree"
		touch "$base/.emmclab-ready"
	fi
	echo "$tree"
}
