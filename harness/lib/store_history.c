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

struct span_ctx {
	void (*cb)(double span_s, double dur_s, int64_t slots, void *arg);
	void *arg;
};

static void span_row(sqlite3_stmt *q, void *ctx)
{
	struct span_ctx *c = ctx;
	c->cb(sqlite3_column_double(q, 0), sqlite3_column_double(q, 1), sqlite3_column_int64(q, 2),
	      c->arg);
}

int store_history_spans(struct store *s, const char *type, const char *suite,
                        void (*cb)(double span_s, double dur_s, int64_t slots, void *arg),
                        void *arg, struct lab_err *e)
{
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
	    " FROM job j JOIN board b ON b.id = j.board_id JOIN run r ON r.id = j.run_id"
	    " WHERE b.type = ?1 AND j.suite = ?2 AND r.source NOT LIKE 'import%' AND r.status != 'running'"
	    " AND j.started_at IS NOT NULL AND j.finished_at IS NOT NULL"
	    " GROUP BY j.run_id, j.board_id ORDER BY j.run_id DESC LIMIT 200",
	    e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, type);
	store_bind_text(q, 2, suite);
	struct span_ctx c = {cb, arg};
	return step_all(s, q, "board schedule history", e, span_row, &c);
}
