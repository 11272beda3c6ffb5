-- emmclab results store, schema version 7: the wear of each part over time
-- (docs/running.md, "Part health").  One row per reading: the EXT_CSD
-- life-time estimates (DEVICE_LIFE_TIME_EST_TYP_A [268] and _TYP_B [269]:
-- 0x01 = 0-10 % of the rated life used ... 0x0A = 90-100 %, 0x0B = past it)
-- and PRE_EOL_INFO [267] (1 normal, 2 warning: 80 % of the reserved blocks
-- used, 3 urgent), read by the agent before a job's first iteration
-- ('before') and after its last ('after').  NULL: the part did not say.
-- src: where the agent read it (ioctl, debugfs, sysfs: sysfs holds the values
-- the kernel read when the card was initialised).
CREATE TABLE part_health (
  id        INTEGER PRIMARY KEY,
  part_id   INTEGER NOT NULL REFERENCES part(id),
  job_id    INTEGER REFERENCES job(id) ON DELETE SET NULL,
  at        TEXT NOT NULL,
  phase     TEXT NOT NULL CHECK (phase IN ('before', 'after')),
  life_a    INTEGER CHECK (life_a IS NULL OR life_a BETWEEN 0 AND 255),
  life_b    INTEGER CHECK (life_b IS NULL OR life_b BETWEEN 0 AND 255),
  pre_eol   INTEGER CHECK (pre_eol IS NULL OR pre_eol BETWEEN 0 AND 255),
  src       TEXT
);
CREATE INDEX part_health_part ON part_health(part_id, at);
-- Why a job's figures are not to be trusted for wear (NULL: the part was
-- within the lab's health thresholds): "life_a 0x0a > life_time_max 0x09".
ALTER TABLE job ADD COLUMN health_flag TEXT;
