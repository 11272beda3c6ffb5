/*
 * store_outbox.c - the durable upload outbox, table `upload` (see store.h
 * for the calls, upload.h for what the rows mean and when they change).
 */
#include "store_internal.h"

#include <string.h>

static const char *col_str(sqlite3_stmt *q, int i)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	return t ? t : "";
}

int store_outbox_add(struct store *s, int64_t run_id, const char *target, const char *kind,
		     const char *idem_key, const char *next_at, const char *created_at,
		     const char *spec, const char *item, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
			       "INSERT INTO upload (run_id, target, kind, idem_key, state, attempts,"
			       " next_at, created_at, spec, item) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)"
			       " ON CONFLICT (target, idem_key) DO NOTHING",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	store_bind_text(q, 2, target);
	store_bind_text(q, 3, kind);
	store_bind_text(q, 4, idem_key);
	store_bind_text(q, 5, next_at);
	store_bind_text(q, 6, created_at);
	store_bind_text(q, 7, spec);
	store_bind_text(q, 8, item);
	int rc = sqlite3_step(q) == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "queueing an upload");
	sqlite3_finalize(q);
	return rc;
}

int store_outbox_requeue(struct store *s, int64_t run_id, const char *target, const char *next_at,
			 int *changed, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
			       "UPDATE upload SET state = 'pending', attempts = 0, next_at = ?1,"
			       " last_error = NULL WHERE run_id = ?2 AND (?3 IS NULL OR target = ?3)",
			       e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, next_at);
	sqlite3_bind_int64(q, 2, run_id);
	store_bind_text(q, 3, target);
	int rc = LAB_OK;
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = store_fail_infra(s, e, "re-queueing");
	else
		*changed += sqlite3_changes(store_sqlite(s));
	sqlite3_finalize(q);
	return rc;
}

#define ROW_COLS                                                                              \
	"u.id, u.run_id, r.uuid, u.target, u.kind, u.idem_key, COALESCE(u.item, ''), u.state," \
	" u.attempts, u.next_at, u.last_error, u.created_at, u.sent_at, u.spec"

static void row_from(sqlite3_stmt *q, struct store_outbox_row *r)
{
	r->id = sqlite3_column_int64(q, 0);
	r->run_id = sqlite3_column_int64(q, 1);
	r->run_uuid = col_str(q, 2);
	r->target = col_str(q, 3);
	r->kind = col_str(q, 4);
	r->idem_key = col_str(q, 5);
	r->item = col_str(q, 6);
	r->state = col_str(q, 7);
	r->attempts = sqlite3_column_int64(q, 8);
	r->next_at = (const char *)sqlite3_column_text(q, 9);
	r->last_error = (const char *)sqlite3_column_text(q, 10);
	r->created_at = col_str(q, 11);
	r->sent_at = (const char *)sqlite3_column_text(q, 12);
	r->spec = (const char *)sqlite3_column_text(q, 13);
}

int store_outbox_list(struct store *s, int64_t run_id, bool all,
		      void (*cb)(const struct store_outbox_row *r, void *arg), void *arg,
		      struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
			       "SELECT " ROW_COLS " FROM upload u JOIN run r ON r.id = u.run_id"
			       " WHERE (?1 = 0 OR u.run_id = ?1) AND (?2 OR u.state <> 'sent') ORDER BY u.id",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int(q, 2, all);
	int st;
	while ((st = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_outbox_row r;
		row_from(q, &r);
		cb(&r, arg);
	}
	int rc = st == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "listing uploads");
	sqlite3_finalize(q);
	return rc;
}

int store_outbox_pending(struct store *s, int64_t run_id, bool failed_too,
			 bool (*cb)(const struct store_outbox_row *r, void *arg), void *arg,
			 struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
			       "SELECT " ROW_COLS " FROM upload u JOIN run r ON r.id = u.run_id"
			       " WHERE (u.state = 'pending' OR (?2 AND u.state = 'failed'))"
			       " AND (?1 = 0 OR u.run_id = ?1) ORDER BY u.id",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int(q, 2, failed_too);
	int st;
	while ((st = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_outbox_row r;
		row_from(q, &r);
		if (!cb(&r, arg)) {
			st = SQLITE_DONE;
			break;
		}
	}
	int rc = st == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "reading the outbox");
	sqlite3_finalize(q);
	return rc;
}

int store_outbox_charge(struct store *s, int64_t id, int64_t attempts, const char *next_at,
			struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s,
			       "UPDATE upload SET attempts = ?2, next_at = ?3,"
			       " state = CASE state WHEN 'failed' THEN 'pending' ELSE state END WHERE id = ?1",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, attempts);
	store_bind_text(q, 3, next_at);
	int rc = sqlite3_step(q) == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "charging an upload attempt");
	sqlite3_finalize(q);
	return rc;
}

int store_outbox_record(struct store *s, int64_t id, const char *state, const char *sent_at,
			const char *last_error, struct lab_err *e)
{
	bool sent = strcmp(state, "sent") == 0;
	sqlite3_stmt *q = store_prepare(s,
			       sent ? "UPDATE upload SET state = 'sent', sent_at = ?2, next_at = NULL,"
				      " last_error = NULL WHERE id = ?1"
				    : "UPDATE upload SET state = ?3, last_error = ?4, next_at = CASE ?3"
				      " WHEN 'failed' THEN NULL ELSE next_at END WHERE id = ?1",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, id);
	if (sent) {
		store_bind_text(q, 2, sent_at);
	} else {
		store_bind_text(q, 3, state);
		store_bind_text(q, 4, last_error);
	}
	int rc = sqlite3_step(q) == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "recording an upload");
	sqlite3_finalize(q);
	return rc;
}

int store_outbox_is_sent(struct store *s, int64_t id, bool *sent, struct lab_err *e)
{
	*sent = false;
	sqlite3_stmt *q = store_prepare(s, "SELECT state FROM upload WHERE id = ?", e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, id);
	int st = sqlite3_step(q);
	if (st == SQLITE_ROW)
		*sent = strcmp(col_str(q, 0), "sent") == 0;
	int rc = st == SQLITE_ROW || st == SQLITE_DONE ? LAB_OK
						      : store_fail_infra(s, e, "reading the outbox");
	sqlite3_finalize(q);
	return rc;
}
