-- emmclab results store, schema version 4: every job is written, also one
-- that failed before its part was identified (job.part_id nullable), and a
-- run remembers the last journal entry it committed (run.journal_seq), so a
-- journal replayed after a crash never applies an entry twice.
--
-- SQLite cannot drop a NOT NULL constraint in place: the job table is
-- rebuilt (store_migrate turns foreign keys off around every migration and
-- runs PRAGMA foreign_key_check before committing, as SQLite's documented
-- procedure for table changes asks).

-- The view names job: dropped for the rebuild and created again, unchanged.
DROP VIEW sample_flat;

CREATE TABLE job_v4 (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  board_id      INTEGER REFERENCES board(id),
  part_id       INTEGER REFERENCES part(id), -- NULL: the job ended before the part was identified
  kernel_id     INTEGER REFERENCES kernel(id),
  suite         TEXT NOT NULL,
  mode          TEXT NOT NULL,
  verified_fua          INTEGER,
  verified_write_cache  INTEGER,
  verified_cqe          INTEGER,
  verified_mode TEXT,
  status        TEXT NOT NULL DEFAULT 'pending', -- pending|running|ok|infra|mode-mismatch|skipped
  seq           INTEGER NOT NULL DEFAULT 0,
  started_at    TEXT,
  finished_at   TEXT,
  kernel_cmdline TEXT,
  source_key    TEXT,
  cause         TEXT                      -- why a job that is not ok ended (first error)
);
INSERT INTO job_v4 (id, run_id, board_id, part_id, kernel_id, suite, mode, verified_fua,
                    verified_write_cache, verified_cqe, verified_mode, status, seq, started_at,
                    finished_at, kernel_cmdline, source_key)
  SELECT id, run_id, board_id, part_id, kernel_id, suite, mode, verified_fua,
         verified_write_cache, verified_cqe, verified_mode, status, seq, started_at,
         finished_at, kernel_cmdline, source_key FROM job;
DROP TABLE job;
ALTER TABLE job_v4 RENAME TO job;
CREATE INDEX job_run ON job(run_id, seq);
CREATE INDEX job_part_mode ON job(part_id, mode);
CREATE INDEX job_board ON job(board_id);
CREATE INDEX job_kernel ON job(kernel_id);

CREATE VIEW sample_flat AS
SELECT
  s.id            AS sample_id,
  s.metric        AS metric,
  s.value         AS value,
  s.unit          AS unit,
  s.value_text    AS value_text,
  i.id            AS iteration_id,
  i.workload      AS workload,
  i.n             AS iteration,
  i.warmup        AS warmup,
  i.duration_s    AS duration_s,
  i.started_at    AS iteration_started_at,
  j.id            AS job_id,
  j.suite         AS suite,
  j.mode          AS mode,
  j.verified_mode AS verified_mode,
  j.verified_fua  AS verified_fua,
  j.verified_write_cache AS verified_write_cache,
  j.verified_cqe  AS verified_cqe,
  j.status        AS job_status,
  j.seq           AS job_seq,
  r.id            AS run_id,
  r.uuid          AS run_uuid,
  r.source        AS source,
  r.plan          AS plan,
  r.lab           AS lab,
  r.started_at    AS run_started_at,
  r.status        AS run_status,
  p.id            AS part_id,
  p.label         AS part_label,
  p.cid           AS part_cid,
  b.id            AS board_id,
  b.name          AS board,
  b.host          AS board_host,
  k.id            AS kernel_id,
  k.version       AS kernel,
  k.series_hash   AS series_hash
FROM sample s
JOIN iteration i ON i.id = s.iteration_id
JOIN job j ON j.id = i.job_id
JOIN run r ON r.id = j.run_id
JOIN part p ON p.id = j.part_id
LEFT JOIN board b ON b.id = j.board_id
LEFT JOIN kernel k ON k.id = j.kernel_id;

ALTER TABLE run ADD COLUMN journal_seq INTEGER NOT NULL DEFAULT 0;
