#!/usr/bin/env bash
# Import both published reference CSVs, export each run in its original layout:
# the files must come back byte for byte.  Re-import is refused; --force works.
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$EMMCLAB_SRC/results/reference
db=$tmp/lab.db
fail() { echo "FAIL: $*" >&2; exit 1; }

"$EMMCLAB" import --db "$db" "$ref/androbench-sdhci-sprd.csv" "$ref/fs-copy-benchmark.csv" >"$tmp/out"
grep -q 'androbench-sdhci-sprd.csv: run 1 (androbench layout, 40 samples)' "$tmp/out" || fail "import output: $(cat "$tmp/out")"
grep -q 'fs-copy-benchmark.csv: run 2 (fscopy layout, 60 samples)' "$tmp/out" || fail "import output"

"$EMMCLAB" db export --db "$db" --layout original --run 1 -o "$tmp/a.csv"
cmp "$tmp/a.csv" "$ref/androbench-sdhci-sprd.csv" || fail "androbench not byte-identical"
"$EMMCLAB" db export --db "$db" --layout original --run 2 >"$tmp/b.csv"
cmp "$tmp/b.csv" "$ref/fs-copy-benchmark.csv" || fail "fscopy not byte-identical"
# by uuid as well as by id
uuid=$("$EMMCLAB" db export --db "$db" --run 2 --format csv | sed -n 2p | cut -d, -f2)
"$EMMCLAB" db export --db "$db" --layout original --run "$uuid" | cmp - "$ref/fs-copy-benchmark.csv" || fail "by uuid"

# same file again: refused with exit 2, nothing added
set +e
"$EMMCLAB" import --db "$db" "$ref/fs-copy-benchmark.csv" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "re-import exit $rc, want 2"
grep -q 'already imported as run 2' "$tmp/err" || fail "re-import message: $(cat "$tmp/err")"
"$EMMCLAB" import --db "$db" --force "$ref/fs-copy-benchmark.csv" >/dev/null
"$EMMCLAB" db export --db "$db" --layout original --run 3 | cmp - "$ref/fs-copy-benchmark.csv" || fail "forced copy"

# flat exports: every sample with its context
n=$("$EMMCLAB" db export --db "$db" --format csv | wc -l)
[ "$n" = 161 ] || fail "csv export has $n lines, want 161 (header + 160 samples)"
"$EMMCLAB" db export --db "$db" --format csv --run 1 | grep -qx '1,[0-9a-f-]*,import:androbench-sdhci-sprd.csv,sprd,sprd,,androbench,fua,,androbench,4,rand_write,12.8,MiB/s,0' \
	|| fail "csv export row"
"$EMMCLAB" db export --db "$db" --format json --run 2 -o "$tmp/x.json"
grep -q '"schema": "emmclab-export/1"' "$tmp/x.json" || fail "json schema tag"
[ "$(grep -c '"metric": "wall_time"' "$tmp/x.json")" = 60 ] || fail "json sample count"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["samples"])==60' "$tmp/x.json" \
	|| fail "json does not parse"

# status and info read the same database
"$EMMCLAB" status --db "$db" | grep -q 'import:fs-copy-benchmark.csv' || fail "status lists the import"
"$EMMCLAB" db info --db "$db" | grep -q 'sample *160' || fail "info counts samples"
"$EMMCLAB" db check --db "$db" >/dev/null || fail "db check"
# EMMCLAB_DB and the default path
EMMCLAB_DB=$db "$EMMCLAB" db info | grep -q "database: *$db" || fail "EMMCLAB_DB"
(cd "$tmp" && "$EMMCLAB" import "$ref/androbench-sdhci-sprd.csv" >/dev/null && test -s results/lab.db) || fail "default path results/lab.db"
echo "db_import_roundtrip: ok"
