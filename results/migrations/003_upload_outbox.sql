-- emmclab results store, schema version 3: what each upload outbox row sends
-- and how, so `emmclab upload --retry` works from the store alone.

-- The target's resolved configuration (YAML, file paths absolute) as it was
-- when the row was queued.  Never a secret: tokens and passwords are only
-- referenced (token_env/token_file, password_env/password_file).
ALTER TABLE upload ADD COLUMN spec TEXT;

-- What the row carries within the run: squad "build<TAB>environment",
-- http-put the bundle format (html, json, csv, ..., sqlite), webhook "summary".
ALTER TABLE upload ADD COLUMN item TEXT;

CREATE INDEX upload_run ON upload(run_id);
