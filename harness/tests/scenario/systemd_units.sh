#!/usr/bin/env bash
# The systemd units (tools/systemd/) install with `cmake --install` into a
# DESTDIR, at EMMCLAB_SYSTEMD_UNITDIR under the prefix, and pass
# `systemd-analyze verify` (which needs no running systemd): unit syntax, the
# timers' units, the ExecStart binaries (relocated into the DESTDIR, where the
# same install put emmclab) and the man page they name.  A unit that fails to
# verify, or one missing from the install, fails the test.
set -euo pipefail
: "${EMMCLAB_BIN:?}" "${EMMCLAB_SRC:?}"
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (package systemd)" >&2; exit 77; }
T=$(mktemp -d /tmp/emmclab-units.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR="$T/root" cmake --install "$EMMCLAB_BIN" >"$T/install.log" || { cat "$T/install.log" >&2; fail "cmake --install"; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$EMMCLAB_BIN/CMakeCache.txt")
unitdir=$(sed -n 's/^EMMCLAB_SYSTEMD_UNITDIR:STRING=//p' "$EMMCLAB_BIN/CMakeCache.txt")
case "$unitdir" in /*) ;; *) unitdir="$prefix/$unitdir" ;; esac
units="emmclab-nightly.service emmclab-nightly.timer emmclab-upload.service emmclab-upload.timer"
for u in $units; do
	[ -f "$T/root$unitdir/$u" ] || fail "$u not installed in $unitdir"
done
bin="$prefix/bin/emmclab"
[ -x "$T/root$bin" ] || fail "emmclab not installed at $bin"
grep -q "^ExecStart=$bin run " "$T/root$unitdir/emmclab-nightly.service" || fail "nightly ExecStart is not $bin run"
grep -q "^ExecStart=$bin upload --retry" "$T/root$unitdir/emmclab-upload.service" || fail "upload ExecStart is not upload --retry"
"$T/root$bin" help upload | grep -q -- "--retry" || fail "emmclab upload takes no --retry"
"$T/root$bin" help run | grep -q -- "--log-format" || fail "emmclab run takes no --log-format"

# Verify copies whose binary path points into the DESTDIR (verify checks that
# ExecStart= is executable) and the man page there (Documentation=man:).
mkdir -p "$T/verify"
for u in $units; do
	sed "s#$bin#$T/root$bin#g" "$T/root$unitdir/$u" >"$T/verify/$u"
done
export MANPATH="$T/root$prefix/share/man"
( cd "$T/verify" && systemd-analyze verify $units ) >"$T/verify.log" 2>&1 || {
	cat "$T/verify.log" >&2
	fail "systemd-analyze verify"
}
# systemd-analyze exits 0 on some findings it only prints: none may be ours
if grep -i "emmclab-" "$T/verify.log"; then
	fail "systemd-analyze verify reported problems in our units"
fi

# The check can fail: a unit with a broken key and a missing binary is refused.
printf '[Service]\nExecStart=%s/nonexistent run\nType=bogus\n' "$T" >"$T/verify/emmclab-bad.service"
if ( cd "$T/verify" && systemd-analyze verify emmclab-bad.service ) >/dev/null 2>&1; then
	fail "systemd-analyze verify accepted a broken unit: the check proves nothing"
fi
echo "systemd_units: ok"
