/*
 * csv.h - published CSV measurements (androbench, fscopy layouts): read,
 * validate and render back.  No store, no printing: bad lines are returned
 * as (line, reason) pairs; the caller owns every struct csv_file
 * (csv_free).  Storing them is store_csv.h's.  Layouts: docs/results-schema.md.
 */
#ifndef EMMCLAB_CSV_H
#define EMMCLAB_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"

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

struct store_scratch;

struct csv_file {
	enum csv_layout layout;
	char *name;       /* basename of the file */
	char sha256[65];  /* of the file's bytes */
	char content_sha256[65]; /* of the good rows, normalised (csv_content_*) */
	size_t bytes;
	char *comments;   /* '#' lines joined with '\n', or NULL */
	char *header;     /* header line as written */
	int crlf;         /* the file's lines end in CRLF */
	int final_eol;    /* the last line ends with a line end */
	int exact;        /* re-rendering the parsed rows gives back the file byte for byte */
	struct csv_row *rows; /* csv_parse only: the good rows in file order (else NULL) */
	size_t nrows;         /* good rows */
	struct csv_bad *bad;
	size_t nbad;      /* bad lines kept (<= CSV_MAX_BAD) */
	size_t nbad_total;
	struct store_scratch *scratch; /* the good rows, in a temporary SQLite file */
};

const char *csv_layout_name(enum csv_layout l);

/*
 * Read and validate a file as a stream: memory stays bounded whatever its
 * size (a 1 MiB window, at most 1 MiB of comments, CSV_MAX_BAD bad lines);
 * the good rows go to a temporary SQLite file (the scratch, deleted by
 * csv_free), which also finds duplicate runs.  Bad lines land in f->bad
 * (sorted by line); a file that is not one of the known layouts is an
 * error (LAB_EUSAGE, "name:line: ...").  A record longer than 512 KiB is a
 * bad line.
 */
int csv_read_file(const char *path, struct csv_file **out, struct lab_err *e);
/* The same on a buffer (`name` for messages); also fills f->rows. */
int csv_parse(const char *buf, size_t len, const char *name, struct csv_file **out,
	      struct lab_err *e);
void csv_free(struct csv_file *f);

/* Every good row in file order (strings valid during the call); stops at the
 * first non-zero return of cb and returns it. */
int csv_each_row(struct csv_file *f, int (*cb)(const struct csv_row *r, void *arg), void *arg,
		 struct lab_err *e);
/* A key -> id map kept in the scratch (for the importer's jobs and
 * iterations): get returns 1 found, 0 not, -1 error. */
int csv_id_get(struct csv_file *f, const char *key, int64_t *id, struct lab_err *e);
int csv_id_put(struct csv_file *f, const char *key, int64_t id, struct lab_err *e);

/*
 * Content hash of a set of rows (docs/results-schema.md, "Duplicate
 * imports"): each row normalised (fields trimmed, blank runs made one space,
 * the value as the shortest decimal of its double) and hashed with SHA-256;
 * the digests are summed mod 2^256, so the order of the rows does not
 * matter; the hex result is SHA-256 of layout, row count and that sum.  The
 * same rows re-saved (CRLF, comments, quoting, spacing, order, "98.70" vs
 * "98.7") give the same hash; the importer rebuilds it from stored samples.
 */
struct csv_content {
	unsigned char sum[32];
	uint64_t n;
};
void csv_content_add(struct csv_content *c, const char *label, const char *board,
		     const char *host, const char *mode, const char *metric, int run, double value);
void csv_content_hex(const struct csv_content *c, const char *layout, char hex[65]);

/* Write a field, quoting it (RFC 4180) when it holds , " CR or LF.  A field a
 * spreadsheet would run as a formula (csv_formula_like) is written as
 * "'<field>" (quoted, a leading apostrophe: shown as text). */
void csv_put_field(struct lab_buf *b, const char *v);
/* True when v starts with = + - @ TAB or CR and is not a number ("-1.5",
 * "+3", "-inf" stay numbers): docs/results-schema.md, "CSV export". */
bool csv_formula_like(const char *v);

/* Rendering rows in a file's published layout: lines are joined by eol,
 * the final line end is the caller's (a file may end without one). */
struct csv_out {
	struct lab_buf *b;
	const char *eol;
	int any; /* a line was written */
};
/* The '#' comment lines (joined by '\n', may be NULL) and the header line. */
void csv_render_head(struct csv_out *r, const char *comments, const char *header);
/* One data row: the job's key columns as written, metric (androbench only), run, value. */
void csv_render_row(struct csv_out *r, enum csv_layout l, const char *key, const char *metric,
		    int run, const char *value_text);

/* String -> id map (open addressing) for the jobs and iterations of one file. */
struct csv_map {
	char **k;
	int64_t *v;
	size_t cap, n;
};
/* The slot of key (*found = 1), or a new zeroed one (*found = 0). */
int64_t *csv_map_slot(struct csv_map *m, const char *key, int *found);
void csv_map_free(struct csv_map *m);

#endif
