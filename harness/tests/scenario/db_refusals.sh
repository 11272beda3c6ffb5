#!/usr/bin/env bash
# Databases that must not be touched or cannot be written: exit 3, one clear
# message, the file unchanged.
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv
fail() { echo "FAIL: $*" >&2; exit 1; }
expect3() { # expect3 NEEDLE CMD...: exit 3 with NEEDLE on stderr
	local needle=$1; shift
	set +e
	"$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	set -e
	[ "$rc" = 3 ] || fail "'$*' exit $rc, want 3 ($(cat "$tmp/err"))"
	grep -qF -- "$needle" "$tmp/err" || fail "'$*': want '$needle', got: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -le 2 ] || fail "'$*': more than a short message: $(cat "$tmp/err")"
}

# newer schema
"$EMMCLAB" import --db "$tmp/new.db" "$ref" >/dev/null
latest=$(sqlite3 "$tmp/new.db" 'PRAGMA user_version')
sqlite3 "$tmp/new.db" "PRAGMA user_version = $((latest + 1))"
sum=$(sha256sum <"$tmp/new.db")
expect3 "database schema version $((latest + 1)) is newer than this emmclab ($latest); upgrade emmclab" \
	"$EMMCLAB" import --db "$tmp/new.db" --force "$ref"
expect3 "is newer than this emmclab" "$EMMCLAB" status --db "$tmp/new.db"
expect3 "is newer than this emmclab" "$EMMCLAB" db export --db "$tmp/new.db"
expect3 "is newer than this emmclab" "$EMMCLAB" db migrate --db "$tmp/new.db"
[ "$(sha256sum <"$tmp/new.db")" = "$sum" ] || fail "newer database was modified"
[ ! -e "$tmp/new.db-wal" ] || fail "WAL created next to a refused database"

# not a database
echo "hello, not sqlite" >"$tmp/text.db"
expect3 "not an SQLite database" "$EMMCLAB" import --db "$tmp/text.db" "$ref"
[ "$(cat "$tmp/text.db")" = "hello, not sqlite" ] || fail "text file modified"
sqlite3 "$tmp/foreign.db" 'CREATE TABLE t(x)'
expect3 "not an emmclab database" "$EMMCLAB" db info --db "$tmp/foreign.db"

# unwritable locations
touch "$tmp/plainfile"
expect3 "cannot create" "$EMMCLAB" import --db "$tmp/plainfile/lab.db" "$ref"
expect3 "no such database" "$EMMCLAB" status --db "$tmp/none.db"
[ ! -e "$tmp/none.db" ] || fail "status created a database"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	# root ignores permissions: drop to nobody for the permission cases
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	if as_nobody test -x "$EMMCLAB" 2>/dev/null; then
		mkdir -m 0777 "$tmp/u"; chmod 0755 "$tmp"
		mkdir -m 0555 "$tmp/u/ro"
		expect3 "cannot create the database: no write permission in $tmp/u/ro" as_nobody "$EMMCLAB" import --db "$tmp/u/ro/lab.db" "$ref"
		"$EMMCLAB" import --db "$tmp/u/rofile.db" "$ref" >/dev/null
		chmod 0444 "$tmp/u/rofile.db"; chmod 0777 "$tmp/u"
		expect3 "read-only" as_nobody "$EMMCLAB" import --db "$tmp/u/rofile.db" --force "$ref"
		# a WAL database in a directory we cannot write: reading works (immutable
		# open, see db_readonly.sh), writing is refused, nothing is created
		mkdir -m 0777 "$tmp/u/walro"
		"$EMMCLAB" import --db "$tmp/u/walro/lab.db" "$ref" >/dev/null
		chmod 0666 "$tmp/u/walro/lab.db"; chmod 0555 "$tmp/u/walro"
		as_nobody "$EMMCLAB" status --db "$tmp/u/walro/lab.db" >/dev/null ||
			fail "status of a WAL database in a read-only directory"
		expect3 "no write permission in $tmp/u/walro" as_nobody "$EMMCLAB" import --db "$tmp/u/walro/lab.db" --force "$ref"
		[ "$(ls "$tmp/u/walro")" = lab.db ] || fail "files left in walro: $(ls "$tmp/u/walro")"
		chmod 0755 "$tmp/u/walro"
	else
		echo "note: nobody cannot run $EMMCLAB; permission cases skipped" >&2
		partial_skip=1
	fi
elif [ "$(id -u)" != 0 ]; then
	mkdir -m 0555 "$tmp/ro"
	expect3 "no write permission in $tmp/ro" "$EMMCLAB" import --db "$tmp/ro/lab.db" "$ref"
	chmod 0755 "$tmp/ro"
else
	echo "note: root without setpriv; permission cases skipped" >&2
	partial_skip=1
fi
# a part that could not run makes the whole test a skip (77), never a pass
[ -z "${partial_skip:-}" ] || { echo "SKIP: permission cases not run"; exit 77; }
echo "db_refusals: ok"
