#!/usr/bin/env bash
# emmclab status: recent runs with job counts, events of the newest run by
# kind, quarantined boards (until an unquarantine event), uploads not sent.
set -euo pipefail
: "${EMMCLAB:?path to the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/lab.db
fail() { echo "FAIL: $*" >&2; exit 1; }

"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/androbench-sdhci-sprd.csv" >/dev/null
# a lab run with an infra job, events and uploads, written as the runner would
sqlite3 "$db" <<'SQL'
INSERT INTO board (name, type) VALUES ('rk1', 'rk3399'), ('meson1', 'meson-gx');
INSERT INTO run (uuid, plan, lab, source, started_at, status) VALUES ('u-night', 'nightly', 'lab1', 'lab', '2026-11-30T01:00:00Z', 'complete');
INSERT INTO job (run_id, board_id, part_id, suite, mode, status) VALUES (2, 2, 1, 'fscopy', 'fua', 'ok'), (2, 3, 1, 'fscopy', 'fua', 'infra'), (2, 3, 1, 'fscopy', 'cache-nofua', 'mode-mismatch');
INSERT INTO event (run_id, job_id, board_id, at, kind, stage, message) VALUES
 (2, 4, 3, '2026-11-30T01:10:00Z', 'retry', 'boot', 'no U-Boot prompt, power-cycling'),
 (2, 4, 3, '2026-11-30T01:12:00Z', 'retry', 'boot', 'no U-Boot prompt again'),
 (2, 4, 3, '2026-11-30T01:14:00Z', 'quarantine', 'boot', 'quarantined after 3 consecutive failures'),
 (1, NULL, 2, '2026-11-29T01:00:00Z', 'quarantine', 'boot', 'old trouble'),
 (2, NULL, 2, '2026-11-30T00:59:00Z', 'unquarantine', NULL, 'released by hand');
INSERT INTO upload (run_id, target, kind, idem_key, state, attempts, next_at, last_error, created_at) VALUES
 (2, 'squad', 'squad', 'job-3', 'pending', 2, '2026-11-30T02:00:00Z', 'HTTP 503', '2026-11-30T01:30:00Z'),
 (2, 'dav', 'http-put', 'report.html', 'sent', 1, NULL, NULL, '2026-11-30T01:30:00Z');
SQL
"$EMMCLAB" status --db "$db" >"$tmp/out"
grep -Eq '^ +2 +2026-11-30T01:00:00Z +complete +lab / nightly +3 +1 +1 +1 +0$' "$tmp/out" || fail "run 2 line"
grep -Eq '^ +1 .*import:androbench-sdhci-sprd +2 +2 +0 +0 +40$' "$tmp/out" || fail "run 1 line"
grep -Eq '^ +retry +2 +last: no U-Boot prompt again on meson1$' "$tmp/out" || fail "retry events"
grep -Eq '^ +meson1 +since 2026-11-30T01:14:00Z \(run 2\): quarantined after 3' "$tmp/out" || fail "quarantine"
! grep -q '^ *rk1 ' "$tmp/out" || fail "released board still listed"
grep -Eq 'squad +squad +pending +2 +2026-11-30T02:00:00Z +HTTP 503' "$tmp/out" || fail "pending upload"
! grep -q 'report.html\|http-put' "$tmp/out" || fail "sent upload listed"
"$EMMCLAB" status --db "$db" --last 1 >"$tmp/out1"
! grep -q 'import:' "$tmp/out1" || fail "--last 1 shows only the newest run"
echo "db_status: ok"
