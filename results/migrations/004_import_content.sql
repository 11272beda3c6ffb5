-- emmclab results store, schema version 4: imports are recognised by their
-- content, not their bytes.

-- SHA-256 of the imported rows, normalised (csv.h, csv_content_*): the same
-- data re-saved with CRLF, another comment, other quoting or spacing, or its
-- rows in another order, is refused as a duplicate.  NULL for files imported
-- before version 4 and for imports copied by `db merge`: the importer fills
-- it in from the stored samples before it compares.
ALTER TABLE import_file ADD COLUMN content_sha256 TEXT;
CREATE INDEX import_file_content ON import_file(content_sha256);
