/*
 * fuzz_csv.c - libFuzzer target for the CSV importer (csv.c reads, store_import.c stores).
 *
 * Every input is parsed; a parse must never crash, leak or read out of
 * bounds.  When the parser says a file is reproducible (f->exact), the input
 * is imported into an in-memory store and exported in its original layout,
 * and the bytes must be identical: the round-trip promise of
 * `emmclab db export --layout original`, checked on arbitrary files; the
 * results model (results_load) then reads every imported row back.
 */
#include "store.h"
#include "store_internal.h" /* fault injection and row inspection */
#include "store_csv.h"
#include "results.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *mem_store(void)
{
	static struct store *s;
	if (!s) {
		struct lab_err e = {0};
		if (store_open(":memory:", 0, &s, &e)) {
			fprintf(stderr, "fuzz_csv: %s\n", e.msg);
			abort();
		}
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lab_err e = {0};
	struct csv_file *f = NULL;
	if (size > (1u << 20))
		return 0;
	if (csv_parse((const char *)data, size, "fuzz.csv", &f, &e) != LAB_OK)
		return 0;
	/* Invariants of a parse. */
	if (f->nbad > f->nbad_total || f->nbad > CSV_MAX_BAD)
		abort();
	for (size_t i = 0; i < f->nrows; i++)
		if (f->rows[i].run < 1 || !(f->rows[i].value >= 0) || !f->rows[i].key)
			abort();
	if (f->exact && f->nrows > 0) {
		struct store *s = mem_store();
		struct store_import_opts o = {.force = 1};
		int64_t run;
		if (store_import(s, &f, 1, &o, &run, &e) != LAB_OK) {
			fprintf(stderr, "fuzz_csv: import of a clean file failed: %s\n", e.msg);
			abort();
		}
		char *out = NULL;
		size_t outlen = 0;
		FILE *m = open_memstream(&out, &outlen);
		int exact = 0;
		if (!m || store_export_original(s, run, m, &exact, &e) != LAB_OK)
			abort();
		fclose(m);
		if (!exact || outlen != size || memcmp(out, data, size) != 0) {
			fprintf(stderr, "fuzz_csv: round trip differs (%zu vs %zu bytes)\n", outlen, size);
			abort();
		}
		free(out);
		/* the results model (results.c) reads what was imported: every row, once */
		struct results_filter rf = {.run_id = run};
		struct results *r = NULL;
		if (results_load(s, &rf, &r, &e) != LAB_OK || r->nsamples != f->nrows) {
			fprintf(stderr, "fuzz_csv: results_load of an import: %s\n", e.msg);
			abort();
		}
		results_free(r);
		sqlite3_exec(store_sqlite(s), "DELETE FROM run; DELETE FROM part; DELETE FROM board", NULL,
			     NULL, NULL);
	}
	csv_free(f);
	return 0;
}
