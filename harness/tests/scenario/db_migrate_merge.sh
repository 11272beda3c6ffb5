#!/usr/bin/env bash
# db migrate (step by step), old-schema refusal for readers, db merge with new
# ids and uuid de-duplication.
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$EMMCLAB_SRC/results/reference
fail() { echo "FAIL: $*" >&2; exit 1; }

"$EMMCLAB" db migrate --db "$tmp/a.db" --to 1 | grep -q 'schema version 0 -> 1' || fail "migrate to 1"
[ "$(sqlite3 "$tmp/a.db" 'PRAGMA user_version')" = 1 ] || fail "user_version 1"
sqlite3 "$tmp/a.db" "INSERT INTO part (label) VALUES ('old part'); INSERT INTO run (uuid, started_at) VALUES ('u-old', '2026-01-01T00:00:00Z'); INSERT INTO job (run_id, part_id, suite, mode) VALUES (1, 1, 's', 'fua'); INSERT INTO iteration (job_id, workload, n) VALUES (1, 'w', 1); INSERT INTO sample (iteration_id, metric, value, unit) VALUES (1, 'seq_write', 42.5, 'MiB/s');"
set +e
"$EMMCLAB" db export --db "$tmp/a.db" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ "$rc" = 3 ] && grep -q 'older than this emmclab' "$tmp/err" || fail "reader on old schema: $rc $(cat "$tmp/err")"
"$EMMCLAB" db info --db "$tmp/a.db" | grep -q 'schema version:  1' || fail "info on old schema"
latest=$("$EMMCLAB" db migrate --db "$tmp/a.db" | sed -n 's/.*-> //p')
[ -n "$latest" ] && [ "$latest" -ge 2 ] || fail "migrate to latest"
"$EMMCLAB" db migrate --db "$tmp/a.db" | grep -q 'nothing to do' || fail "second migrate is a no-op"
"$EMMCLAB" db export --db "$tmp/a.db" | grep -q ',u-old,lab,old part,,,s,fua,,w,1,seq_write,42.5,MiB/s,0$' || fail "v1 data survives"
set +e
"$EMMCLAB" db migrate --db "$tmp/a.db" --to 1 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "downgrade exit $rc, want 2"

# merge: b has both reference imports; a gets them with new ids
"$EMMCLAB" import --db "$tmp/b.db" "$ref/androbench-sdhci-sprd.csv" "$ref/fs-copy-benchmark.csv" >/dev/null
"$EMMCLAB" db merge --db "$tmp/a.db" "$tmp/b.db" | grep -q 'merged 2 runs' || fail "merge"
"$EMMCLAB" db merge --db "$tmp/a.db" "$tmp/b.db" | grep -q 'merged 0 runs .* (2 already present)' || fail "merge again"
[ "$(sqlite3 "$tmp/a.db" 'SELECT count(*) FROM sample')" = 101 ] || fail "samples after merge"
"$EMMCLAB" db export --db "$tmp/a.db" --layout original --run 3 | cmp - "$ref/fs-copy-benchmark.csv" || fail "merged import exports the original"
"$EMMCLAB" db check --db "$tmp/a.db" >/dev/null || fail "check after merge"
set +e
"$EMMCLAB" db merge --db "$tmp/a.db" "$tmp/a.db" 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "self-merge exit $rc"
echo "db_migrate_merge: ok"
