/*
 * store_csv.h - import of published measurements (CSV, store_import.c) and
 * export of stored samples (CSV, JSON, or an imported file in its original
 * layout, store_export.c).
 *
 * Import is two steps so the CLI can report every bad line before anything
 * is written: csv_parse() (csv.h) reads and validates a whole file into a
 * struct csv_file (owned by the caller, csv_free()); store_import() writes
 * one or more parsed files in a single transaction.  Nothing here prints.
 * Exporters write to a FILE * the caller owns.  Layouts and columns:
 * docs/results-schema.md.
 */
#ifndef EMMCLAB_STORE_CSV_H
#define EMMCLAB_STORE_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "csv.h"
#include "store.h"

struct store_import_opts {
	int force; /* import a file whose sha256 is already stored */
};

/* Store the good rows of each file as one run (source 'import:<name>'), all
 * files in one transaction.  run_ids (n entries, may be NULL) get the new ids. */
int store_import(struct store *s, struct csv_file *const *files, size_t n,
		 const struct store_import_opts *o, int64_t *run_ids, struct lab_err *e);

enum store_export_format { EXPORT_CSV, EXPORT_JSON };
/* Every sample with its context columns; run_id 0 = every run.  *nrows = count. */
int store_export(struct store *s, int64_t run_id, enum store_export_format fmt, FILE *f,
		 size_t *nrows, struct lab_err *e);
/* An imported run written back in its published layout.  *exact = 1 when the
 * import recorded that this reproduces the file byte for byte. */
int store_export_original(struct store *s, int64_t run_id, FILE *f, int *exact,
			  struct lab_err *e);

#endif
