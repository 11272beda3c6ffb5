/*
 * store_export.c - stored samples written out: every sample with its
 * context columns as CSV or JSON, or an imported run in its published
 * layout (byte for byte when the import said it can be).  See store_csv.h.
 */
#include "store_csv.h"
#include "store_internal.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void json_str(struct lab_buf *b, const char *v)
{
	if (!v) {
		lab_buf_append(b, "null", 4);
		return;
	}
	json_buf_str(b, v);
}

static const char *const export_cols[] = {"run_id", "run_uuid", "source", "part", "board",
					  "kernel", "suite", "mode", "verified_mode", "workload",
					  "iteration", "metric", "value", "unit", "warmup", NULL};

static int flush_buf(struct lab_buf *b, FILE *f, struct lab_err *e)
{
	if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
		return lab_err_set(e, LAB_EINFRA, "export: write failed: %s", strerror(errno));
	lab_buf_consume(b, b->len);
	return LAB_OK;
}

int store_export(struct store *s, int64_t run_id, enum store_export_format fmt, FILE *f,
		 size_t *nrows, struct lab_err *e)
{
	sqlite3_stmt *q;
	*nrows = 0;
	int rc = store_prepare_rc(s,
		      "SELECT f.run_id, f.run_uuid, f.source, f.part_label, f.board, f.kernel, f.suite,"
		      " f.mode, f.verified_mode, f.workload, f.iteration, f.metric, f.value, f.unit,"
		      " f.warmup, f.value_text, it.executor, it.job_url, it.worker"
		      " FROM sample_flat f LEFT JOIN iteration it ON it.id = f.iteration_id"
		      " WHERE (?1 = 0 OR f.run_id = ?1) ORDER BY f.run_id, f.sample_id",
		      &q, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(q, 1, run_id);
	struct lab_buf b;
	lab_buf_init(&b, 0);
	if (fmt == EXPORT_CSV) {
		for (size_t i = 0; export_cols[i]; i++)
			lab_buf_printf(&b, "%s%s", i ? "," : "", export_cols[i]);
		lab_buf_append(&b, "\n", 1);
	} else {
		lab_buf_printf(&b, "{\"schema\": \"emmclab-export/1\", \"samples\": [");
	}
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		char num[40];
		const char *vt = (const char *)sqlite3_column_text(q, 15);
		if (!vt || fmt == EXPORT_JSON) {
			lab_fmt_double(num, sizeof num, sqlite3_column_double(q, 12));
			vt = num;
		}
		if (fmt == EXPORT_CSV) {
			for (int c = 0; export_cols[c]; c++) {
				if (c)
					lab_buf_append(&b, ",", 1);
				if (c == 12)
					lab_buf_append(&b, vt, strlen(vt));
				else
					csv_put_field(&b, (const char *)sqlite3_column_text(q, c));
			}
			lab_buf_append(&b, "\n", 1);
		} else {
			lab_buf_append(&b, *nrows ? ",\n  {" : "\n  {", *nrows ? 5 : 4);
			for (int c = 0; export_cols[c]; c++) {
				lab_buf_printf(&b, "%s\"%s\": ", c ? ", " : "", export_cols[c]);
				int t = sqlite3_column_type(q, c);
				if (c == 12)
					lab_buf_append(&b, vt, strlen(vt));
				else if (t == SQLITE_INTEGER)
					lab_buf_printf(&b, "%lld", (long long)sqlite3_column_int64(q, c));
				else
					json_str(&b, t == SQLITE_NULL ? NULL
								      : (const char *)sqlite3_column_text(q, c));
			}
			/* where it ran (schema 8, docs/lava.md): JSON only, the CSV columns stay */
			static const char *const where[] = {"executor", "job_url", "worker"};
			for (int c = 0; c < 3; c++) {
				const char *v = (const char *)sqlite3_column_text(q, 16 + c);
				lab_buf_printf(&b, ", \"%s\": ", where[c]);
				json_str(&b, c == 0 && !v ? "local" : v);
			}
			lab_buf_append(&b, "}", 1);
		}
		(*nrows)++;
		if (b.len > 65536 && (rc = flush_buf(&b, f, e)))
			break;
	}
	if (rc == LAB_OK && r != SQLITE_DONE)
		rc = store_fail_infra(s, e, "reading samples");
	sqlite3_finalize(q);
	if (rc == LAB_OK && fmt == EXPORT_JSON)
		lab_buf_printf(&b, "%s]}\n", *nrows ? "\n" : "");
	if (rc == LAB_OK)
		rc = flush_buf(&b, f, e);
	lab_buf_free(&b);
	if (rc == LAB_OK && (fflush(f) != 0 || ferror(f)))
		rc = lab_err_set(e, LAB_EINFRA, "export: write failed: %s", strerror(errno));
	return rc;
}

int store_export_original(struct store *s, int64_t run_id, FILE *f, int *exact,
			  struct lab_err *e)
{
	sqlite3_stmt *q;
	int rc = store_prepare_rc(s,
		      "SELECT i.layout, i.header, i.eol, i.final_eol, i.exact, r.note"
		      " FROM import_file i JOIN run r ON r.id = i.run_id WHERE i.run_id = ?1",
		      &q, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(q, 1, run_id);
	int r = sqlite3_step(q);
	if (r != SQLITE_ROW) {
		sqlite3_finalize(q);
		if (r != SQLITE_DONE)
			return store_fail_infra(s, e, "reading the import record");
		return lab_err_set(e, LAB_EUSAGE,
				   "run %" PRId64 " was not imported from a file: no original layout",
				   run_id);
	}
	const char *layout = (const char *)sqlite3_column_text(q, 0);
	enum csv_layout l = layout && strcmp(layout, "fscopy") == 0 ? CSV_FSCOPY : CSV_ANDROBENCH;
	struct lab_buf b;
	lab_buf_init(&b, 0);
	const char *eoltag = (const char *)sqlite3_column_text(q, 2);
	struct csv_out rd = {.b = &b, .eol = eoltag && strcmp(eoltag, "CRLF") == 0 ? "\r\n" : "\n"};
	int final_eol = sqlite3_column_int(q, 3);
	*exact = sqlite3_column_int(q, 4);
	csv_render_head(&rd, (const char *)sqlite3_column_text(q, 5),
		    (const char *)sqlite3_column_text(q, 1));
	sqlite3_finalize(q);

	/* Sample ids follow the file's row order (import inserts row by row). */
	rc = store_prepare_rc(s,
		  "SELECT j.source_key, s.metric, i.n, s.value_text, s.value FROM sample s"
		  " JOIN iteration i ON i.id = s.iteration_id JOIN job j ON j.id = i.job_id"
		  " WHERE j.run_id = ?1 ORDER BY s.id", &q, e);
	if (rc) {
		lab_buf_free(&b);
		return rc;
	}
	sqlite3_bind_int64(q, 1, run_id);
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		char num[40];
		const char *key = (const char *)sqlite3_column_text(q, 0);
		const char *vt = (const char *)sqlite3_column_text(q, 3);
		if (!vt) {
			lab_fmt_double(num, sizeof num, sqlite3_column_double(q, 4));
			vt = num;
		}
		csv_render_row(&rd, l, key ? key : "", (const char *)sqlite3_column_text(q, 1),
			   sqlite3_column_int(q, 2), vt);
		if (b.len > 65536 && (rc = flush_buf(&b, f, e)))
			break;
	}
	if (rc == LAB_OK && r != SQLITE_DONE)
		rc = store_fail_infra(s, e, "reading samples");
	sqlite3_finalize(q);
	if (rc == LAB_OK && final_eol)
		lab_buf_append(&b, rd.eol, strlen(rd.eol));
	if (rc == LAB_OK)
		rc = flush_buf(&b, f, e);
	lab_buf_free(&b);
	if (rc == LAB_OK && (fflush(f) != 0 || ferror(f)))
		rc = lab_err_set(e, LAB_EINFRA, "export: write failed: %s", strerror(errno));
	return rc;
}
