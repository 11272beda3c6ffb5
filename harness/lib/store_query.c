/*
 * store_query.c - the reads (and the dead-run repair) that the CLI, the
 * runner and the upload kinds need, each a named function with its SQL here,
 * so no module outside the store touches SQLite (see store.h).
 */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *text_or_null(sqlite3_stmt *q, int i)
{
	return (const char *)sqlite3_column_text(q, i);
}

static const char *text_or_empty(sqlite3_stmt *q, int i)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	return t ? t : "";
}

/* Step q to its end; the error (if any) is set from the connection. */
static int finish(struct store *s, sqlite3_stmt *q, int r, const char *what, struct lab_err *e)
{
	int rc = LAB_OK;
	if (r != SQLITE_DONE)
		rc = store_fail(s, e, sqlite3_extended_errcode(store_sqlite(s)), what);
	sqlite3_finalize(q);
	return rc;
}

int store_runs_recent(struct store *s, int64_t limit,
		      void (*cb)(const struct store_run_summary *r, int i, void *arg), void *arg,
		      int *n, struct lab_err *e)
{
	*n = 0;
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT r.id, r.started_at, r.status, r.source, r.plan,"
		" (SELECT count(*) FROM job j WHERE j.run_id = r.id),"
		" (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'ok'),"
		" (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'infra'),"
		" (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'mode-mismatch'),"
		" (SELECT count(*) FROM sample s JOIN iteration i ON i.id = s.iteration_id"
		"  JOIN job j ON j.id = i.job_id WHERE j.run_id = r.id)"
		" FROM run r ORDER BY r.id DESC LIMIT ?1",
		e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, limit);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_run_summary row = {
			.id = sqlite3_column_int64(q, 0),
			.started_at = text_or_null(q, 1),
			.status = text_or_null(q, 2),
			.source = text_or_null(q, 3),
			.plan = text_or_null(q, 4),
			.jobs = sqlite3_column_int64(q, 5),
			.ok = sqlite3_column_int64(q, 6),
			.infra = sqlite3_column_int64(q, 7),
			.mismatch = sqlite3_column_int64(q, 8),
			.samples = sqlite3_column_int64(q, 9),
		};
		cb(&row, (*n)++, arg);
	}
	return finish(s, q, r, "listing runs", e);
}

int store_run_last(struct store *s, int64_t *run_id, struct lab_err *e)
{
	*run_id = 0;
	sqlite3_stmt *q = store_prepare(s, "SELECT max(id) FROM run", e);
	if (!q)
		return LAB_EINFRA;
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		*run_id = sqlite3_column_int64(q, 0);
		r = SQLITE_DONE;
	}
	return finish(s, q, r, "finding the last run", e);
}

int store_run_find(struct store *s, const char *arg, int64_t *run_id, struct lab_err *e)
{
	int64_t v;
	bool by_id = lab_parse_i64(arg, &v) == LAB_OK && v > 0;
	sqlite3_stmt *q = store_prepare(s, by_id ? "SELECT id FROM run WHERE id = ?1"
						 : "SELECT id FROM run WHERE uuid = ?1",
					e);
	if (!q)
		return LAB_EINFRA;
	if (by_id)
		sqlite3_bind_int64(q, 1, v);
	else
		store_bind_text(q, 1, arg);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*run_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return lab_err_set(e, LAB_EINFRA, "%s: finding run '%s': %s", store_path(s), arg,
				   sqlite3_errmsg(store_sqlite(s)));
	if (r != SQLITE_ROW)
		return lab_err_set(e, LAB_EUSAGE, "no run '%s' in %s", arg, store_path(s));
	return LAB_OK;
}

int store_event_kinds(struct store *s, int64_t run_id,
		      void (*cb)(const struct store_event_kind *k, void *arg), void *arg, int *n,
		      struct lab_err *e)
{
	*n = 0;
	/* Bare columns come from the max(e.id) row: the latest event. */
	sqlite3_stmt *q = store_prepare(s,
					"SELECT e.kind, count(*), e.message, b.name, max(e.id) FROM event e"
					" LEFT JOIN board b ON b.id = e.board_id WHERE e.run_id = ?1"
					" GROUP BY e.kind ORDER BY count(*) DESC, e.kind",
					e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_event_kind k = {
			.kind = text_or_null(q, 0),
			.count = sqlite3_column_int64(q, 1),
			.message = text_or_null(q, 2),
			.board = text_or_null(q, 3),
		};
		cb(&k, arg);
		(*n)++;
	}
	return finish(s, q, r, "counting events", e);
}

int store_quarantined(struct store *s, int64_t board_id,
		      void (*cb)(const struct store_quarantine *q, void *arg), void *arg, int *n,
		      struct lab_err *e)
{
	*n = 0;
	sqlite3_stmt *q = store_prepare(s,
					"SELECT b.name, e.at, e.run_id, e.message, max(e.id) FROM event e"
					" JOIN board b ON b.id = e.board_id WHERE e.kind = 'quarantine'"
					" AND (?1 = 0 OR e.board_id = ?1)"
					" AND NOT EXISTS (SELECT 1 FROM event u WHERE u.board_id = e.board_id"
					"  AND u.kind = 'unquarantine' AND u.id > e.id)"
					" GROUP BY b.id ORDER BY b.name",
					e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, board_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_quarantine row = {
			.board = text_or_null(q, 0),
			.at = text_or_null(q, 1),
			.run_id = sqlite3_column_int64(q, 2),
			.message = text_or_null(q, 3),
		};
		if (cb)
			cb(&row, arg);
		(*n)++;
	}
	return finish(s, q, r, "reading quarantines", e);
}

int store_board_quarantined(struct store *s, int64_t board_id, bool *quarantined,
			    struct lab_err *e)
{
	int n = 0;
	*quarantined = false;
	if (board_id <= 0)
		return LAB_OK;
	int rc = store_quarantined(s, board_id, NULL, NULL, &n, e);
	*quarantined = !rc && n > 0;
	return rc;
}

const char *const store_info_tables[] = {"run",   "job",        "iteration", "sample",
					 "counter", "part",    "board",     "kernel",
					 "event", "transcript", "artifact", "baseline",
					 "upload", "import_file", NULL};

int store_table_rows(struct store *s, const char *table, int64_t *n, struct lab_err *e)
{
	*n = -1;
	char *sql = xasprintf("SELECT count(*) FROM \"%s\"", table);
	sqlite3_stmt *q = NULL;
	int r = sqlite3_prepare_v2(store_sqlite(s), sql, -1, &q, NULL);
	free(sql);
	if (r != SQLITE_OK)
		return lab_err_set(e, LAB_EUSAGE, "%s: no table %s: %s", store_path(s), table,
				   sqlite3_errmsg(store_sqlite(s)));
	r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		*n = sqlite3_column_int64(q, 0);
		r = SQLITE_DONE;
	}
	return finish(s, q, r, "counting rows", e);
}

int store_iter_rowids(struct store *s, const char *table, int64_t first, int64_t last, int64_t *lo,
		      int64_t *hi, struct lab_err *e)
{
	*lo = 1; /* an empty range until found */
	*hi = 0;
	const char *sql = strcmp(table, "sample") == 0
				  ? "SELECT min(id), max(id) FROM sample WHERE iteration_id BETWEEN ?1 AND ?2"
			  : strcmp(table, "counter") == 0
				  ? "SELECT min(id), max(id) FROM counter WHERE iteration_id BETWEEN ?1 AND ?2"
				  : NULL;
	if (!sql)
		return lab_err_set(e, LAB_EUSAGE, "no iteration rows in table %s", table);
	sqlite3_stmt *q = store_prepare(s, sql, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, first);
	sqlite3_bind_int64(q, 2, last);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		if (sqlite3_column_type(q, 0) != SQLITE_NULL) {
			*lo = sqlite3_column_int64(q, 0);
			*hi = sqlite3_column_int64(q, 1);
		}
		r = SQLITE_DONE;
	}
	return finish(s, q, r, "bounding rows by iteration", e);
}

static int pragma_i64(struct store *s, const char *sql, int64_t *v, struct lab_err *e)
{
	*v = -1;
	sqlite3_stmt *q = store_prepare(s, sql, e);
	if (!q)
		return LAB_EINFRA;
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		*v = sqlite3_column_int64(q, 0);
		r = SQLITE_DONE;
	}
	return finish(s, q, r, sql, e);
}

int store_pages(struct store *s, int64_t *count, int64_t *size, int64_t *free_pages,
		struct lab_err *e)
{
	int rc = pragma_i64(s, "PRAGMA page_count", count, e);
	int rc2 = pragma_i64(s, "PRAGMA page_size", size, e);
	int rc3 = pragma_i64(s, "PRAGMA freelist_count", free_pages, e);
	return rc ? rc : rc2 ? rc2 : rc3;
}

int store_runs_running(struct store *s, const char *host,
		       void (*cb)(int64_t run_id, int64_t pid, void *arg), void *arg,
		       struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT id, json_extract(config_json, '$.pid') FROM run WHERE status = 'running'"
		" AND source NOT LIKE 'import%' AND json_valid(config_json)"
		" AND json_extract(config_json, '$.host') = ?1",
		e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, host);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		cb(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), arg);
	return finish(s, q, r, "finding running runs", e);
}

int store_run_abort_dead(struct store *s, int64_t run_id, struct lab_err *e)
{
	int rc = store_begin(s, e);
	if (rc)
		return rc;
	sqlite3_stmt *q = store_prepare(s,
					"UPDATE job SET status = 'infra' WHERE run_id = ?1 AND status IN"
					" ('pending', 'running')",
					e);
	if (!q)
		rc = LAB_EINFRA;
	else {
		sqlite3_bind_int64(q, 1, run_id);
		rc = finish(s, q, sqlite3_step(q), "marking jobs infra", e);
	}
	if (!rc)
		rc = store_event(s, run_id, 0, 0, "controller-died", NULL,
				 "the controller of this run died; marked aborted by a later run", e);
	/* In the same transaction: a run left 'running' with its event written
	 * would be reaped again, and get a second event, by the next run. */
	if (!rc)
		rc = store_run_finish(s, run_id, "aborted", e);
	if (!rc)
		rc = store_commit(s, e);
	else
		store_rollback(s);
	return rc;
}

int store_run_set_times(struct store *s, int64_t run_id, const char *started_at,
			const char *finished_at, struct lab_err *e)
{
	sqlite3_stmt *q =
		store_prepare(s, "UPDATE run SET started_at = ?1, finished_at = ?2 WHERE id = ?3", e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, started_at);
	store_bind_text(q, 2, finished_at);
	sqlite3_bind_int64(q, 3, run_id);
	return finish(s, q, sqlite3_step(q), "setting run times", e);
}

int store_run_get(struct store *s, int64_t run_id, struct store_run_row *r, struct lab_err *e)
{
	memset(r, 0, sizeof *r);
	sqlite3_stmt *q = store_prepare(s,
					"SELECT id, uuid, started_at, COALESCE(finished_at, ''), status,"
					" COALESCE(plan, ''), COALESCE(lab, '') FROM run WHERE id = ?",
					e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int st = sqlite3_step(q);
	if (st != SQLITE_ROW) {
		if (st == SQLITE_DONE) {
			sqlite3_finalize(q);
			return lab_err_set(e, LAB_EUSAGE, "%s: no run %lld", store_path(s),
					   (long long)run_id);
		}
		return finish(s, q, st, "reading the run", e);
	}
	r->id = sqlite3_column_int64(q, 0);
	lab_strlcpy(r->uuid, text_or_empty(q, 1), sizeof r->uuid);
	lab_strlcpy(r->started_at, text_or_empty(q, 2), sizeof r->started_at);
	lab_strlcpy(r->finished_at, text_or_empty(q, 3), sizeof r->finished_at);
	lab_strlcpy(r->status, text_or_empty(q, 4), sizeof r->status);
	lab_strlcpy(r->plan, text_or_empty(q, 5), sizeof r->plan);
	lab_strlcpy(r->lab, text_or_empty(q, 6), sizeof r->lab);
	sqlite3_finalize(q);
	return LAB_OK;
}

int store_run_jobs(struct store *s, int64_t run_id,
		   int (*cb)(const struct store_job_row *j, void *arg), void *arg, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT j.id, COALESCE(j.board_id, 0), j.suite, j.mode, j.status,"
		" COALESCE(j.verified_mode, ''), COALESCE(k.version, ''), COALESCE(b.name, ''),"
		" COALESCE(b.type, ''), p.label, COALESCE(p.cid, '')"
		" FROM job j LEFT JOIN kernel k ON k.id = j.kernel_id"
		" LEFT JOIN board b ON b.id = j.board_id LEFT JOIN part p ON p.id = j.part_id"
		" WHERE j.run_id = ? ORDER BY j.seq, j.id",
		e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int r, rc = LAB_OK;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_job_row j = {
			.id = sqlite3_column_int64(q, 0),
			.board_id = sqlite3_column_int64(q, 1),
			.suite = text_or_empty(q, 2),
			.mode = text_or_empty(q, 3),
			.status = text_or_empty(q, 4),
			.verified_mode = text_or_empty(q, 5),
			.kernel = text_or_empty(q, 6),
			.board = text_or_empty(q, 7),
			.board_type = text_or_empty(q, 8),
			.part = text_or_empty(q, 9),
			.cid = text_or_empty(q, 10),
		};
		if ((rc = cb(&j, arg))) {
			sqlite3_finalize(q);
			return rc;
		}
	}
	return finish(s, q, r, "reading the jobs", e);
}

int store_job_samples(struct store *s, int64_t job_id, bool exclude_warmup,
		      void (*cb)(const char *workload, const char *metric, const char *unit,
				 double value, void *arg),
		      void *arg, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
					"SELECT i.workload, sm.metric, sm.unit, sm.value FROM sample sm"
					" JOIN iteration i ON i.id = sm.iteration_id"
					" WHERE i.job_id = ? AND (?2 = 0 OR i.warmup = 0)"
					" ORDER BY i.workload, sm.metric, i.n, sm.id",
					e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, job_id);
	sqlite3_bind_int(q, 2, exclude_warmup);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		cb(text_or_null(q, 0), text_or_null(q, 1), text_or_null(q, 2),
		   sqlite3_column_double(q, 3), arg);
	return finish(s, q, r, "reading samples", e);
}

int store_job_transcripts(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
			  bool (*cb)(const char *path, void *arg), void *arg, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
					"SELECT DISTINCT path FROM transcript WHERE run_id = ?1"
					" AND (job_id = ?2 OR (job_id IS NULL AND board_id = ?3)) ORDER BY id",
					e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int64(q, 2, job_id);
	sqlite3_bind_int64(q, 3, board_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		if (!cb(text_or_empty(q, 0), arg)) {
			r = SQLITE_DONE;
			break;
		}
	return finish(s, q, r, "reading transcripts", e);
}

int store_run_counts(struct store *s, int64_t run_id, struct store_run_counts *c,
		     struct lab_err *e)
{
	memset(c, 0, sizeof *c);
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT count(*), COALESCE(sum(status = 'ok'), 0), COALESCE(sum(status = 'infra'), 0),"
		" COALESCE(sum(status = 'mode-mismatch'), 0), COALESCE(sum(status = 'skipped'), 0),"
		" (SELECT count(*) FROM sample sm JOIN iteration i ON i.id = sm.iteration_id"
		"  JOIN job jb ON jb.id = i.job_id WHERE jb.run_id = ?1),"
		" (SELECT count(*) FROM event WHERE run_id = ?1 AND kind <> 'info')"
		" FROM job WHERE run_id = ?1",
		e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		c->jobs = sqlite3_column_int64(q, 0);
		c->ok = sqlite3_column_int64(q, 1);
		c->infra = sqlite3_column_int64(q, 2);
		c->mismatch = sqlite3_column_int64(q, 3);
		c->skipped = sqlite3_column_int64(q, 4);
		c->samples = sqlite3_column_int64(q, 5);
		c->infra_events = sqlite3_column_int64(q, 6);
		r = SQLITE_DONE;
	}
	return finish(s, q, r, "counting", e);
}

int store_run_names(struct store *s, int64_t run_id, enum store_run_names which,
		    void (*cb)(const char *name, void *arg), void *arg, struct lab_err *e)
{
	static const char *const sql[] = {
		[STORE_NAMES_BOARDS] = "SELECT DISTINCT b.name FROM job jb JOIN board b ON b.id = jb.board_id"
				       " WHERE jb.run_id = ? ORDER BY b.name",
		[STORE_NAMES_PARTS] = "SELECT DISTINCT p.label FROM job jb JOIN part p ON p.id = jb.part_id"
				      " WHERE jb.run_id = ? ORDER BY p.label",
		[STORE_NAMES_KERNELS] = "SELECT DISTINCT k.version FROM job jb JOIN kernel k ON k.id = jb.kernel_id"
					" WHERE jb.run_id = ? ORDER BY k.version",
	};
	sqlite3_stmt *q = store_prepare(s, sql[which], e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		cb(text_or_null(q, 0), arg);
	return finish(s, q, r, "reading names", e);
}

int store_event_last(struct store *s, int64_t run_id, int seq, const char *kind, const char *stage,
		     const char *like, char *out, size_t n)
{
	sqlite3_stmt *q = NULL;
	int rc = LAB_EFOUND;
	out[0] = '\0';
	if (sqlite3_prepare_v2(store_sqlite(s),
			       "SELECT e.message FROM event e JOIN job j ON j.id = e.job_id"
			       " WHERE j.run_id = ?1 AND j.seq = ?2 AND e.kind = ?3 AND e.stage = ?4"
			       " AND e.message LIKE ?5 ORDER BY e.id DESC LIMIT 1",
			       -1, &q, NULL) != SQLITE_OK)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int(q, 2, seq);
	store_bind_text(q, 3, kind);
	store_bind_text(q, 4, stage);
	store_bind_text(q, 5, like);
	if (sqlite3_step(q) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(q, 0);
		lab_strlcpy(out, m ? m : "", n);
		rc = LAB_OK;
	}
	sqlite3_finalize(q);
	return rc;
}
