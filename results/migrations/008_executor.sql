-- emmclab results store, schema version 8: where each iteration ran
-- (docs/lava.md).  executor: 'local' (the controller drove the board) or
-- 'lava' (a LAVA job ran it); job_url: the LAVA job's page, NULL locally;
-- worker: the LAVA worker that drove the device, NULL locally.
ALTER TABLE iteration ADD COLUMN executor TEXT NOT NULL DEFAULT 'local'
  CHECK (executor IN ('local', 'lava'));
ALTER TABLE iteration ADD COLUMN job_url TEXT;
ALTER TABLE iteration ADD COLUMN worker TEXT;
