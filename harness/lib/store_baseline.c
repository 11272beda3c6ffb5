/*
 * store_baseline.c - the `baseline` table and the run lookups a baseline
 * resolves through (see store.h; the policy is baseline.c's).
 */
#include "store_internal.h"

#include <stdlib.h>

int store_run_exists(struct store *s, int64_t run_id, bool *exists, struct lab_err *e)
{
	sqlite3_stmt *st;
	*exists = false;
	if (!(st = store_prepare(s, "SELECT 1 FROM run WHERE id = ?", e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(st, 1, run_id);
	int r = sqlite3_step(st);
	*exists = r == SQLITE_ROW;
	int rc = r == SQLITE_ROW || r == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "finding a run");
	sqlite3_finalize(st);
	return rc;
}

int store_baseline_put(struct store *s, const struct store_baseline *b, struct lab_err *e)
{
	sqlite3_stmt *st;
	if (!(st = store_prepare(s,
				 "INSERT INTO baseline (name, kind, run_id, last_n, set_at) VALUES (?, ?, ?, ?, ?) "
				 "ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, run_id = excluded.run_id, "
				 "last_n = excluded.last_n, set_at = excluded.set_at",
				 e)))
		return LAB_EINFRA;
	sqlite3_bind_text(st, 1, b->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b->kind, -1, SQLITE_STATIC);
	if (b->run_id > 0)
		sqlite3_bind_int64(st, 3, b->run_id);
	else
		sqlite3_bind_null(st, 3);
	if (b->last_n > 0)
		sqlite3_bind_int(st, 4, b->last_n);
	else
		sqlite3_bind_null(st, 4);
	sqlite3_bind_text(st, 5, b->set_at, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st) == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "setting a baseline");
	sqlite3_finalize(st);
	return rc;
}

static void row(sqlite3_stmt *st, struct store_baseline *b)
{
	const char *t;
	b->id = sqlite3_column_int64(st, 0);
	t = (const char *)sqlite3_column_text(st, 1);
	b->name = t ? t : "";
	t = (const char *)sqlite3_column_text(st, 2);
	b->kind = t ? t : "";
	b->run_id = sqlite3_column_int64(st, 3);
	b->last_n = sqlite3_column_int(st, 4);
	t = (const char *)sqlite3_column_text(st, 5);
	b->set_at = t ? t : "";
}

/* Every row of `sql` (bound to name when given) to cb; *n = rows. */
static int each(struct store *s, const char *sql, const char *name, const char *what,
		void (*cb)(const struct store_baseline *b, void *arg), void *arg, size_t *n,
		struct lab_err *e)
{
	sqlite3_stmt *st;
	*n = 0;
	if (!(st = store_prepare(s, sql, e)))
		return LAB_EINFRA;
	if (name)
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_baseline b;
		row(st, &b);
		cb(&b, arg);
		(*n)++;
	}
	rc = rc == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, what);
	sqlite3_finalize(st);
	return rc;
}

int store_baseline_get(struct store *s, const char *name,
		       void (*cb)(const struct store_baseline *b, void *arg), void *arg,
		       bool *found, struct lab_err *e)
{
	size_t n;
	int rc = each(s, "SELECT id, name, kind, run_id, last_n, set_at FROM baseline WHERE name = ?",
		      name, "reading a baseline", cb, arg, &n, e);
	*found = !rc && n > 0;
	return rc;
}

int store_baseline_list(struct store *s, void (*cb)(const struct store_baseline *b, void *arg),
			void *arg, struct lab_err *e)
{
	size_t n;
	return each(s, "SELECT id, name, kind, run_id, last_n, set_at FROM baseline ORDER BY name",
		    NULL, "listing baselines", cb, arg, &n, e);
}

int store_runs_before(struct store *s, int64_t test_run, int limit, int64_t **ids, size_t *n,
		      struct lab_err *e)
{
	sqlite3_stmt *st;
	*ids = NULL;
	*n = 0;
	if (!(st = store_prepare(s,
				 "SELECT id FROM run WHERE status = 'complete' AND id != ?1 AND source = "
				 "(SELECT source FROM run WHERE id = ?1) AND (started_at < (SELECT started_at "
				 "FROM run WHERE id = ?1) OR (started_at = (SELECT started_at FROM run WHERE "
				 "id = ?1) AND id < ?1)) ORDER BY started_at DESC, id DESC LIMIT ?2",
				 e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(st, 1, test_run);
	sqlite3_bind_int(st, 2, limit);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		rc = store_fail_infra(s, e, "resolving a last-n baseline");
	} else {
		rc = LAB_OK;
	}
	sqlite3_finalize(st);
	return rc;
}
