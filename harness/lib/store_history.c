/*
 * store_history.c - the reads behind `run --dry-run`'s estimates (sched.c):
 * how long iterations and whole board schedules took in past runs.  Only
 * finished runs of the lab (not imports, not runs still going) count.
 */
#include "store_internal.h"

static int step_all(struct store *s, sqlite3_stmt *q, const char *what, struct lab_err *e,
                    void (*row)(sqlite3_stmt *q, void *ctx), void *ctx)
{
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		row(q, ctx);
	int rc = LAB_OK;
	if (r != SQLITE_DONE)
		rc = store_fail(s, e, sqlite3_extended_errcode(store_sqlite(s)), what);
	sqlite3_finalize(q);
	return rc;
}

struct dur_ctx {
	void (*cb)(double secs, void *arg);
	void *arg;
};

static void dur_row(sqlite3_stmt *q, void *ctx)
{
	struct dur_ctx *c = ctx;
	c->cb(sqlite3_column_double(q, 0), c->arg);
}

int store_history_durations(struct store *s, const char *type, const char *suite, const char *mode,
                            const char *workload, void (*cb)(double secs, void *arg), void *arg,
                            struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
	    s,
	    "SELECT i.duration_s FROM iteration i JOIN job j ON j.id = i.job_id"
	    " JOIN board b ON b.id = j.board_id JOIN run r ON r.id = j.run_id"
	    " WHERE b.type = ?1 AND j.suite = ?2 AND j.mode = ?3 AND i.workload = ?4"
	    " AND i.duration_s IS NOT NULL AND r.source NOT LIKE 'import%' AND r.status != 'running'"
	    " ORDER BY i.id DESC LIMIT 1000",
	    e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, type);
	store_bind_text(q, 2, suite);
	store_bind_text(q, 3, mode);
	store_bind_text(q, 4, workload);
	struct dur_ctx c = {cb, arg};
	return step_all(s, q, "iteration history", e, dur_row, &c);
}

#define SPANS_MAX 200 /* (run, board) schedules an estimate looks at */

int store_history_spans(struct store *s, const char *type, const char *suite,
                        void (*cb)(double span_s, double dur_s, int64_t slots, void *arg),
                        void *arg, struct lab_err *e)
{
	/* Run by run, newest first, until SPANS_MAX schedules: each run's jobs
	 * through the job_run index.  One query grouping every job of the
	 * history cost 63 ms after four 1,024-board nights, and grew by that
	 * every night, at the start of every run. */
	sqlite3_stmt *runs = store_prepare(
	    s,
	    "SELECT id FROM run WHERE source NOT LIKE 'import%' AND status != 'running'"
	    " ORDER BY id DESC",
	    e);
	if (!runs)
		return LAB_EINFRA;
	/* A slot is one iteration number of one job: all its workloads. */
	sqlite3_stmt *q = store_prepare(
	    s,
	    "SELECT (julianday(max(j.finished_at)) - julianday(min(j.started_at))) * 86400.0,"
	    " (SELECT coalesce(sum(i.duration_s), 0) FROM iteration i JOIN job j2 ON j2.id = "
	    "i.job_id"
	    "   WHERE j2.run_id = j.run_id AND j2.board_id = j.board_id AND j2.suite = ?2),"
	    " (SELECT count(DISTINCT i.job_id || ':' || i.n) FROM iteration i JOIN job j3 ON j3.id "
	    "= i.job_id"
	    "   WHERE j3.run_id = j.run_id AND j3.board_id = j.board_id AND j3.suite = ?2)"
	    " FROM job j JOIN board b ON b.id = j.board_id"
	    " WHERE j.run_id = ?3 AND b.type = ?1 AND j.suite = ?2"
	    " AND j.started_at IS NOT NULL AND j.finished_at IS NOT NULL"
	    " GROUP BY j.board_id ORDER BY j.board_id LIMIT ?4",
	    e);
	if (!q) {
		sqlite3_finalize(runs);
		return LAB_EINFRA;
	}
	store_bind_text(q, 1, type);
	store_bind_text(q, 2, suite);
	int64_t left = SPANS_MAX;
	int r = SQLITE_DONE, rr = SQLITE_DONE;
	while (left > 0 && (rr = sqlite3_step(runs)) == SQLITE_ROW) {
		sqlite3_bind_int64(q, 3, sqlite3_column_int64(runs, 0));
		sqlite3_bind_int64(q, 4, left);
		while ((r = sqlite3_step(q)) == SQLITE_ROW) {
			cb(sqlite3_column_double(q, 0), sqlite3_column_double(q, 1),
			   sqlite3_column_int64(q, 2), arg);
			left--;
		}
		sqlite3_reset(q);
		if (r != SQLITE_DONE)
			break;
	}
	if (left > 0 && r == SQLITE_DONE && rr != SQLITE_DONE)
		r = rr;
	int rc = LAB_OK;
	if (r != SQLITE_DONE)
		rc = store_fail(s, e, sqlite3_extended_errcode(store_sqlite(s)), "board schedule history");
	sqlite3_finalize(q);
	sqlite3_finalize(runs);
	return rc;
}
