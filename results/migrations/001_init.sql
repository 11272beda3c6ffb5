-- emmclab results store, schema version 1.
-- Conventions: times are UTC ISO-8601 text ('2026-11-30T06:14:07Z'); durations
-- and measured values are REAL in the unit named beside them; every row that
-- came from a DUT links to the verified mode and the part identity.

CREATE TABLE part (
  id            INTEGER PRIMARY KEY,
  label         TEXT NOT NULL,            -- human name, e.g. "DUT1 Foresee 32GB"
  cid           TEXT,                     -- 32 hex chars from sysfs cid, NULL for imported data
  manfid        TEXT, oemid TEXT, name TEXT, prv TEXT, serial TEXT, date TEXT,
  fwrev         TEXT,
  ext_csd_rev   INTEGER,
  capacity_bytes INTEGER,
  cache_kib     INTEGER,
  rel_wr_param  INTEGER,                  -- EXT_CSD[166] WR_REL_PARAM
  rel_sectors   INTEGER,                  -- EXT_CSD[222] REL_WR_SEC_C
  cmdq_support  INTEGER,                  -- 0/1
  cmdq_depth    INTEGER,
  ext_csd_hex   TEXT,                     -- full 512-byte EXT_CSD as hex, when read
  UNIQUE (label, cid)
);

CREATE TABLE board (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL UNIQUE,
  type      TEXT,                         -- board type name (boards/types)
  host      TEXT,                         -- controller driver, e.g. sdhci-sprd
  lab       TEXT
);

CREATE TABLE kernel (
  id            INTEGER PRIMARY KEY,
  version       TEXT NOT NULL,            -- uname -r
  series_hash   TEXT,                     -- sha256 of the patch series applied
  config_hash   TEXT,
  image_sha256  TEXT,
  UNIQUE (version, series_hash, image_sha256)
);

CREATE TABLE run (
  id          INTEGER PRIMARY KEY,
  uuid        TEXT NOT NULL UNIQUE,
  plan        TEXT,                       -- plan name
  lab         TEXT,
  source      TEXT NOT NULL DEFAULT 'lab', -- 'lab' or 'import:<file>'
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  status      TEXT NOT NULL DEFAULT 'running', -- running|complete|aborted|failed
  config_json TEXT,                       -- resolved plan+lab, for provenance
  note        TEXT
);

CREATE TABLE job (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  board_id      INTEGER REFERENCES board(id),
  part_id       INTEGER NOT NULL REFERENCES part(id),
  kernel_id     INTEGER REFERENCES kernel(id),
  suite         TEXT NOT NULL,
  mode          TEXT NOT NULL,            -- requested: fua|cache-nofua|fua-cqe|cache-nofua-cqe
  verified_fua          INTEGER,          -- queue/fua read on the DUT
  verified_write_cache  INTEGER,          -- queue/write_cache == write back
  verified_cqe          INTEGER,          -- CQE in use
  verified_mode TEXT,                     -- mode derived from the verified values
  status        TEXT NOT NULL DEFAULT 'pending', -- pending|running|ok|infra|mode-mismatch|skipped
  seq           INTEGER NOT NULL DEFAULT 0, -- order within the run
  started_at    TEXT,
  finished_at   TEXT,
  kernel_cmdline TEXT
);
CREATE INDEX job_run ON job(run_id);
CREATE INDEX job_part_mode ON job(part_id, mode);

CREATE TABLE iteration (
  id          INTEGER PRIMARY KEY,
  job_id      INTEGER NOT NULL REFERENCES job(id) ON DELETE CASCADE,
  workload    TEXT NOT NULL,              -- androbench|fscopy|...
  n           INTEGER NOT NULL,           -- 1-based iteration number within the job
  started_at  TEXT,
  duration_s  REAL,
  warmup      INTEGER NOT NULL DEFAULT 0, -- 1 when flagged as warm-up outlier
  UNIQUE (job_id, workload, n)
);

CREATE TABLE sample (
  id           INTEGER PRIMARY KEY,
  iteration_id INTEGER NOT NULL REFERENCES iteration(id) ON DELETE CASCADE,
  metric       TEXT NOT NULL,             -- seq_read, rand_write, wall_time, p99_latency ...
  value        REAL NOT NULL,
  unit         TEXT NOT NULL              -- MiB/s, IOPS, s, us
);
CREATE INDEX sample_iter ON sample(iteration_id);

CREATE TABLE counter (
  id           INTEGER PRIMARY KEY,
  iteration_id INTEGER NOT NULL REFERENCES iteration(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,             -- reliable_writes, flushes, stat_flushes, ...
  value        INTEGER NOT NULL,
  UNIQUE (iteration_id, name)
);

CREATE TABLE event (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER REFERENCES run(id) ON DELETE CASCADE,
  job_id    INTEGER REFERENCES job(id) ON DELETE CASCADE,
  board_id  INTEGER REFERENCES board(id),
  at        TEXT NOT NULL,
  kind      TEXT NOT NULL,                -- infra class: no-console, bootloader-hang, deploy, panic, login-timeout, agent-protocol, mode-mismatch, power, retry, quarantine, info
  stage     TEXT,                         -- board state when it happened
  message   TEXT NOT NULL
);
CREATE INDEX event_run ON event(run_id);

CREATE TABLE transcript (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER REFERENCES run(id) ON DELETE CASCADE,
  job_id    INTEGER REFERENCES job(id) ON DELETE CASCADE,
  board_id  INTEGER REFERENCES board(id),
  path      TEXT NOT NULL,
  sha256    TEXT NOT NULL,
  bytes     INTEGER NOT NULL,
  boot_n    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE artifact (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER REFERENCES run(id) ON DELETE CASCADE,
  job_id    INTEGER REFERENCES job(id) ON DELETE CASCADE,
  kind      TEXT NOT NULL,                -- kernel, initrd, dtb, image
  path      TEXT NOT NULL,
  sha256    TEXT NOT NULL
);

CREATE TABLE baseline (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL UNIQUE,         -- 'default' or a named baseline
  kind      TEXT NOT NULL,                -- 'run' (pinned) or 'last-n'
  run_id    INTEGER REFERENCES run(id),
  last_n    INTEGER,
  set_at    TEXT NOT NULL
);

CREATE TABLE upload (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  target      TEXT NOT NULL,              -- target name from config
  kind        TEXT NOT NULL,              -- squad|http-put|webhook
  idem_key    TEXT NOT NULL,              -- job_id / path: re-sends never duplicate
  state       TEXT NOT NULL DEFAULT 'pending', -- pending|sent|failed
  attempts    INTEGER NOT NULL DEFAULT 0,
  next_at     TEXT,
  last_error  TEXT,
  created_at  TEXT NOT NULL,
  sent_at     TEXT,
  UNIQUE (target, idem_key)
);
