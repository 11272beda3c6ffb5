-- emmclab results store, schema version 2: the flat sample view reports query,
-- indexes for report and status queries, and the provenance import and
-- `db export --layout original` need to give back a published file byte for byte.

-- Original text of an imported value ("98.70" stays "98.70"); NULL for lab samples.
ALTER TABLE sample ADD COLUMN value_text TEXT;

-- Imported jobs: the leading group columns of the published row exactly as
-- written, quotes included (e.g. 'DUT1,"Foresee 32GB module (Pine64, blue PCB)",fua').
ALTER TABLE job ADD COLUMN source_key TEXT;

-- One row per imported file (run.source = 'import:<name>').
CREATE TABLE import_file (
  run_id     INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,             -- basename of the imported file
  sha256     TEXT NOT NULL,             -- of the whole file: importing it again is refused
  bytes      INTEGER NOT NULL,
  layout     TEXT NOT NULL,             -- androbench|fscopy
  header     TEXT NOT NULL,             -- header line as written, without line end
  eol        TEXT NOT NULL,             -- line end used by the file: LF or CRLF
  final_eol  INTEGER NOT NULL,          -- 1 when the last line ended with eol
  exact      INTEGER NOT NULL,          -- 1 when --layout original reproduces the file byte for byte
  imported_at TEXT NOT NULL
);
CREATE INDEX import_file_sha ON import_file(sha256);

CREATE INDEX run_started ON run(started_at);
CREATE INDEX job_board ON job(board_id);
CREATE INDEX job_kernel ON job(kernel_id);
CREATE INDEX event_kind ON event(kind, board_id);
CREATE INDEX upload_state ON upload(state, next_at);

-- Every sample with the context a report groups by.  Imported data has no
-- board or kernel for some layouts: LEFT JOINs keep those samples.
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
