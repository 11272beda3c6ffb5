-- emmclab results store, schema version 6: how a job's mode was proved
-- (docs/running.md, "Mode proof").  'tracepoints': sysfs, the mode line and
-- the mmc request tracepoints' reliable-write and flush counts agreed;
-- 'sysfs-only': the board type says it cannot trace (`trace: false`), so only
-- sysfs and the mode line were checked, and every report marks its figures.
-- NULL: not a lab-verified job (imported, or written before this version).
ALTER TABLE job ADD COLUMN verified_by TEXT
  CHECK (verified_by IS NULL OR verified_by IN ('tracepoints', 'sysfs-only'));
