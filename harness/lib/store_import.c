/*
 * store_import.c - storing parsed CSV files (csv.h) as runs of source
 * 'import:<name>', all files in one transaction, each file recorded in
 * `import_file` so that a second import of the same bytes is refused and
 * `db export --layout original` can give the file back.  See store_csv.h.
 */
#include "store_csv.h"
#include "store_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int step_reset(struct store *s, sqlite3_stmt *q, const char *what, struct lab_err *e)
{
	int r = sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (r != SQLITE_DONE && r != SQLITE_ROW)
		return store_fail_infra(s, e, what);
	return LAB_OK;
}

/* Run id of a previous import of a file with this sha256, 0 when none. */
static int store_import_find(struct store *s, const char sha256[65], int64_t *run_id,
			     struct lab_err *e)
{
	sqlite3_stmt *q;
	*run_id = 0;
	int rc = store_prepare_rc(s, "SELECT run_id FROM import_file WHERE sha256 = ?1 ORDER BY run_id LIMIT 1",
		      &q, e);
	if (rc)
		return rc;
	sqlite3_bind_text(q, 1, sha256, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*run_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return store_fail_infra(s, e, "looking up earlier imports");
	return LAB_OK;
}

enum { Q_BOARD_INS, Q_BOARD_ID, Q_JOB_IMPORTED, Q_ITER, Q_SAMPLE, Q_FILE, Q_N };

static const char *const import_sql[Q_N] = {
	/* An import never rewrites a lab board's description. */
	[Q_BOARD_INS] = "INSERT OR IGNORE INTO board (name, host) VALUES (?1, ?2)",
	[Q_BOARD_ID] = "SELECT id FROM board WHERE name = ?1",
	[Q_JOB_IMPORTED] = "UPDATE job SET status = 'ok', finished_at = started_at,"
			   " source_key = ?2 WHERE id = ?1",
	[Q_ITER] = "INSERT INTO iteration (job_id, workload, n, warmup) VALUES (?1, ?2, ?3, 0)",
	[Q_SAMPLE] = "INSERT INTO sample (iteration_id, metric, value, unit, value_text)"
		     " VALUES (?1, ?2, ?3, ?4, ?5)",
	[Q_FILE] = "INSERT INTO import_file (run_id, name, sha256, bytes, layout, header, eol,"
		   " final_eol, exact, imported_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
};

static int import_one(struct store *s, struct csv_file *f, sqlite3_stmt **q, int64_t *out_run,
		      struct lab_err *e)
{
	char now[32];
	int rc;
	char *source = xasprintf("import:%s", f->name);
	struct store_run_info ri = {.source = source, .note = f->comments};
	int64_t run_id, seq = 0;
	rc = store_run_begin(s, &ri, &run_id, e);
	free(source);
	if (rc)
		return rc;
	lab_utc_iso(now, sizeof now, (int64_t)time(NULL));
	sqlite3_bind_int64(q[Q_FILE], 1, run_id);
	sqlite3_bind_text(q[Q_FILE], 2, f->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 3, f->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q[Q_FILE], 4, (int64_t)f->bytes);
	sqlite3_bind_text(q[Q_FILE], 5, csv_layout_name(f->layout), -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 6, f->header, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 7, f->crlf ? "CRLF" : "LF", -1, SQLITE_STATIC);
	sqlite3_bind_int(q[Q_FILE], 8, f->final_eol);
	sqlite3_bind_int(q[Q_FILE], 9, f->exact);
	sqlite3_bind_text(q[Q_FILE], 10, now, -1, SQLITE_STATIC);
	if ((rc = step_reset(s, q[Q_FILE], "recording the imported file", e)))
		return rc;

	const char *unit = f->layout == CSV_ANDROBENCH ? "MiB/s" : "s";
	const char *workload = csv_layout_name(f->layout);
	struct csv_map jobs = {0}, iters = {0};
	for (size_t i = 0; i < f->nrows && rc == LAB_OK; i++) {
		const struct csv_row *r = &f->rows[i];
		int found;
		int64_t *job = csv_map_slot(&jobs, r->group, &found);
		if (!found) {
			struct store_part p;
			int64_t part_id, board_id = 0;
			store_part_init(&p);
			p.label = r->label;
			if ((rc = store_part_upsert(s, &p, &part_id, e)))
				break;
			if (r->board) {
				sqlite3_bind_text(q[Q_BOARD_INS], 1, r->board, -1, SQLITE_STATIC);
				sqlite3_bind_text(q[Q_BOARD_INS], 2, r->host, -1, SQLITE_STATIC);
				if ((rc = step_reset(s, q[Q_BOARD_INS], "adding a board", e)))
					break;
				sqlite3_bind_text(q[Q_BOARD_ID], 1, r->board, -1, SQLITE_STATIC);
				if (sqlite3_step(q[Q_BOARD_ID]) == SQLITE_ROW)
					board_id = sqlite3_column_int64(q[Q_BOARD_ID], 0);
				if ((rc = step_reset(s, q[Q_BOARD_ID], "finding a board", e)))
					break;
			}
			struct store_job_info ji = {.run_id = run_id, .board_id = board_id,
						    .part_id = part_id, .suite = workload,
						    .mode = r->mode, .seq = (int)seq++};
			if ((rc = store_job_begin(s, &ji, job, e)))
				break;
			sqlite3_bind_int64(q[Q_JOB_IMPORTED], 1, *job);
			sqlite3_bind_text(q[Q_JOB_IMPORTED], 2, r->key, -1, SQLITE_STATIC);
			if ((rc = step_reset(s, q[Q_JOB_IMPORTED], "marking a job imported", e)))
				break;
		}
		char ikey[48];
		snprintf(ikey, sizeof ikey, "%" PRId64 "/%d", *job, r->run);
		int64_t *it = csv_map_slot(&iters, ikey, &found);
		if (!found) {
			sqlite3_bind_int64(q[Q_ITER], 1, *job);
			sqlite3_bind_text(q[Q_ITER], 2, workload, -1, SQLITE_STATIC);
			sqlite3_bind_int(q[Q_ITER], 3, r->run);
			if ((rc = step_reset(s, q[Q_ITER], "adding an iteration", e)))
				break;
			*it = sqlite3_last_insert_rowid(store_sqlite(s));
		}
		sqlite3_bind_int64(q[Q_SAMPLE], 1, *it);
		sqlite3_bind_text(q[Q_SAMPLE], 2, r->metric, -1, SQLITE_STATIC);
		sqlite3_bind_double(q[Q_SAMPLE], 3, r->value);
		sqlite3_bind_text(q[Q_SAMPLE], 4, unit, -1, SQLITE_STATIC);
		sqlite3_bind_text(q[Q_SAMPLE], 5, r->value_text, -1, SQLITE_STATIC);
		rc = step_reset(s, q[Q_SAMPLE], "adding a sample", e);
	}
	csv_map_free(&jobs);
	csv_map_free(&iters);
	if (rc == LAB_OK)
		rc = store_run_finish(s, run_id, "complete", e);
	if (rc == LAB_OK)
		*out_run = run_id;
	return rc;
}

int store_import(struct store *s, struct csv_file *const *files, size_t n,
		 const struct store_import_opts *o, int64_t *run_ids, struct lab_err *e)
{
	int rc = LAB_OK;
	for (size_t i = 0; i < n && !(o && o->force); i++) {
		int64_t prev;
		if ((rc = store_import_find(s, files[i]->sha256, &prev, e)))
			return rc;
		if (prev)
			return lab_err_set(e, LAB_EUSAGE,
					   "%s: already imported as run %" PRId64
					   " (same sha256); use --force to import it again",
					   files[i]->name, prev);
		for (size_t k = 0; k < i; k++)
			if (strcmp(files[k]->sha256, files[i]->sha256) == 0)
				return lab_err_set(e, LAB_EUSAGE, "%s and %s are the same file",
						   files[k]->name, files[i]->name);
	}
	sqlite3_stmt *q[Q_N] = {0};
	for (int i = 0; i < Q_N && rc == LAB_OK; i++)
		rc = store_prepare_rc(s, import_sql[i], &q[i], e);
	if (rc == LAB_OK)
		rc = store_begin(s, e);
	if (rc == LAB_OK) {
		for (size_t i = 0; i < n && rc == LAB_OK; i++) {
			int64_t id = 0;
			rc = import_one(s, files[i], q, &id, e);
			if (run_ids)
				run_ids[i] = id;
		}
		if (rc == LAB_OK)
			rc = store_commit(s, e);
		else
			store_rollback(s);
	}
	for (int i = 0; i < Q_N; i++)
		sqlite3_finalize(q[i]);
	return rc;
}
