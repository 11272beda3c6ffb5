#!/usr/bin/env bash
# db_readonly.sh - report, compare, status and db export/info/check work on a database
# the user can only read (file 0444 in a 0555 directory, as user nobody), give the same
# output as on a writable copy, and leave no file behind (no -wal, -shm or -journal) and
# the database unchanged.  Also as the owner in a writable directory: no file left.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null || { echo "setpriv missing (util-linux)" >&2; exit 77; }
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
else
	as_user() { "$@"; }
fi
tmp=$(mktemp -d /tmp/emmclab-ro-XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
as_user test -x "$EMMCLAB" || { echo "the test user cannot run $EMMCLAB" >&2; exit 77; }

mkdir "$tmp/w" "$tmp/ro"
for f in "$EMMCLAB_SRC"/results/reference/*.csv; do
	"$EMMCLAB" import --db "$tmp/w/lab.db" "$f" >/dev/null
done
"$EMMCLAB" baseline set ref --db "$tmp/w/lab.db" --run 1 >/dev/null 2>&1 || true
cp "$tmp/w/lab.db" "$tmp/ro/lab.db"
[ "$(ls "$tmp/w")" = lab.db ] || fail "import left files: $(ls "$tmp/w")"
chmod 0444 "$tmp/ro/lab.db"
chmod 0555 "$tmp/ro"
sum=$(sha256sum <"$tmp/ro/lab.db")

cmds=(
	"status"
	"compare"
	"compare --by run --a 1 --b 2"
	"compare --format json"
	"report --format text"
	"report --format markdown"
	"report --format html"
	"report --format json"
	"report --format csv"
	"report --format junit"
	"report --all --format text"
	"db export"
	"db export --format json"
	"db export --layout original --run 1"
	"db info"
	"db check"
)
n=0
for c in "${cmds[@]}"; do
	# shellcheck disable=SC2086
	as_user "$EMMCLAB" $c --db "$tmp/ro/lab.db" >"$tmp/out.ro" 2>"$tmp/err" ||
		fail "'$c' on a read-only database: exit $?: $(cat "$tmp/err")"
	# shellcheck disable=SC2086
	"$EMMCLAB" $c --db "$tmp/w/lab.db" >"$tmp/out.w" 2>/dev/null || fail "'$c' on the writable copy"
	# the path and the generation time differ; everything else is the same
	sed -e "s|$tmp/ro/|DIR/|g" -e 's/20[0-9-]*T[0-9:]*Z/TIME/g' -e '/^file size\|^pages/d' "$tmp/out.ro" >"$tmp/a"
	sed -e "s|$tmp/w/|DIR/|g" -e 's/20[0-9-]*T[0-9:]*Z/TIME/g' -e '/^file size\|^pages/d' "$tmp/out.w" >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" || { diff "$tmp/a" "$tmp/b" | head >&2; fail "'$c': output differs"; }
	[ -s "$tmp/out.ro" ] || fail "'$c' printed nothing"
	[ "$(ls -A "$tmp/ro")" = lab.db ] || fail "'$c' left files: $(ls -A "$tmp/ro")"
	[ "$(ls -A "$tmp/w")" = lab.db ] || fail "'$c' left files in a writable directory: $(ls -A "$tmp/w")"
	n=$((n + 1))
done
[ "$(sha256sum <"$tmp/ro/lab.db")" = "$sum" ] || fail "the read-only database changed"
echo "ok: $n read-only commands on a 0444 database in a 0555 directory, no file left"

# writing is still refused with one clear message
set +e
as_user "$EMMCLAB" import --db "$tmp/ro/lab.db" --force "$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv" >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 3 ] || fail "import into a read-only database: exit $rc, want 3"
grep -q "read-only\|no write permission" "$tmp/err" || fail "import message: $(cat "$tmp/err")"
[ "$(ls -A "$tmp/ro")" = lab.db ] || fail "refused import left files: $(ls -A "$tmp/ro")"
echo "ok: writes refused, nothing created"

# A writer is live (its -wal holds a commit not yet checkpointed): a reader that cannot
# write the directory reads through the existing -wal/-shm and sees that commit.
command -v sqlite3 >/dev/null || { echo "sqlite3 missing" >&2; exit 77; }
mkdir "$tmp/live"
"$EMMCLAB" import --db "$tmp/live/lab.db" "$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv" >/dev/null
{
	printf "PRAGMA wal_autocheckpoint = 0;\nUPDATE run SET source = 'import:live-commit';\n"
	sleep 4 # hold the connection (and its -wal) open while the reader runs
} | sqlite3 "$tmp/live/lab.db" >/dev/null &
writer=$!
for _ in $(seq 50); do
	[ -s "$tmp/live/lab.db-wal" ] && break
	sleep 0.1
done
[ -s "$tmp/live/lab.db-wal" ] || fail "the writer's -wal never appeared"
chmod 0555 "$tmp/live"
chmod 0644 "$tmp/live"/lab.db*
as_user "$EMMCLAB" status --db "$tmp/live/lab.db" >"$tmp/out" 2>"$tmp/err" || fail "status beside a live writer: $(cat "$tmp/err")"
grep -qF 'import:live-commit' "$tmp/out" || fail "the committed change in the -wal was not read: $(cat "$tmp/out")"
chmod 0755 "$tmp/live"
wait "$writer"
echo "ok: a reader beside a live writer sees its commit"
