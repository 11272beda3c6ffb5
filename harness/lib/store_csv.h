/*
 * store_csv.h - import of published measurements (CSV) and export of stored
 * samples (CSV, JSON, or an imported file in its original layout).
 *
 * Import is two steps so the CLI can report every bad line before anything
 * is written: csv_parse() reads and validates a whole file into a struct
 * csv_file (owned by the caller, csv_free()); store_import() writes one or
 * more parsed files in a single transaction.  Nothing here prints: bad
 * lines are returned as (line, reason) pairs.  Exporters write to a FILE *
 * the caller owns.  Layouts and columns: docs/results-schema.md.
 */
#ifndef EMMCLAB_STORE_CSV_H
#define EMMCLAB_STORE_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "store.h"

#define CSV_MAX_FILE (64u << 20) /* bytes read from one file */
#define CSV_MAX_FIELD 4096       /* bytes in one field */
#define CSV_MAX_BAD 1000         /* bad lines kept (the count keeps going) */

enum csv_layout {
	CSV_ANDROBENCH = 1, /* board,controller,queue_fua,workload,run,mib_per_s */
	CSV_FSCOPY = 2,     /* dut,module,mode,run,seconds */
};

struct csv_row {
	int line;         /* 1-based line the record starts on */
	char *key;        /* the first three columns exactly as written (quotes kept) */
	char *group;      /* the first three columns decoded, length-prefixed: one job each */
	char *label;      /* part label */
	char *board;      /* board name, or NULL */
	char *host;       /* host controller, or NULL */
	char *mode;       /* one of the four modes */
	char *metric;     /* androbench workload column, or "wall_time" */
	int run;          /* iteration number, >= 1 */
	double value;
	char *value_text; /* the value exactly as written */
};

struct csv_bad {
	int line;
	char *reason;
};

struct csv_file {
	enum csv_layout layout;
	char *name;       /* basename of the file */
	char sha256[65];
	size_t bytes;
	char *comments;   /* '#' lines joined with '\n', or NULL */
	char *header;     /* header line as written */
	int crlf;         /* the file's lines end in CRLF */
	int final_eol;    /* the last line ends with a line end */
	int exact;        /* re-rendering the parsed rows gives back the file byte for byte */
	struct csv_row *rows;
	size_t nrows;
	struct csv_bad *bad;
	size_t nbad;      /* bad lines kept (<= CSV_MAX_BAD) */
	size_t nbad_total;
};

const char *csv_layout_name(enum csv_layout l);

/* Parse and validate a whole buffer.  Bad lines land in f->bad (sorted by
 * line); a file that is not one of the known layouts is an error
 * (LAB_EUSAGE, e->where = "name:line").  `name` is used for messages. */
int csv_parse(const char *buf, size_t len, const char *name, struct csv_file **out,
	      struct lab_err *e);
/* Read (capped at CSV_MAX_FILE) and csv_parse() a file. */
int csv_read_file(const char *path, struct csv_file **out, struct lab_err *e);
void csv_free(struct csv_file *f);

/* Write a field, quoting it (RFC 4180) when it holds , " CR or LF. */
void csv_put_field(struct lab_buf *b, const char *v);

struct store_import_opts {
	int force; /* import a file whose sha256 is already stored */
};

/* Run id of a previous import of a file with this sha256, 0 when none. */
int store_import_find(struct store *s, const char sha256[65], int64_t *run_id,
		      struct lab_err *e);
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
