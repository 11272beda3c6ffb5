/*
 * store_scratch.h - a private temporary SQLite file for one CSV file's good
 * rows while it is read and imported (csv.c, store_import.c), so neither
 * holds the rows in memory: duplicate run numbers are found by a unique
 * index, the first key of each group is kept for the exactness check, and
 * a key -> id map holds the importer's job and iteration ids.  Only the page
 * cache (2 MiB) is in memory; the file is SQLite's own temporary file
 * ("" as the name), removed when the scratch is freed.  No printing.
 */
#ifndef EMMCLAB_STORE_SCRATCH_H
#define EMMCLAB_STORE_SCRATCH_H

#include <stdbool.h>
#include <stdint.h>
#include "csv.h"
#include "util.h"

struct store_scratch;

int store_scratch_new(struct store_scratch **out, struct lab_err *e);
void store_scratch_free(struct store_scratch *sc);
/* Add a row; *first_line = 0 when it is new, else the line of the row with the
 * same group, metric and run (the row is then not added). */
int store_scratch_add_row(struct store_scratch *sc, const struct csv_row *row, int *first_line,
			  struct lab_err *e);
/* Remember key as the group's first key if it has none; *same: key equals the first. */
int store_scratch_first_key(struct store_scratch *sc, const char *group, const char *key,
			    bool *same, struct lab_err *e);
/* Every row in line order (strings valid during the call); stops at cb's first non-zero. */
int store_scratch_each_row(struct store_scratch *sc,
			   int (*cb)(const struct csv_row *r, void *arg), void *arg,
			   struct lab_err *e);
/* key -> id: get returns 1 found, 0 not, -1 error. */
int store_scratch_id_get(struct store_scratch *sc, const char *key, int64_t *id,
			 struct lab_err *e);
int store_scratch_id_put(struct store_scratch *sc, const char *key, int64_t id,
			 struct lab_err *e);

#endif
