/*
 * store_health.c - the part_health table (schema 7): wear readings per part
 * over time and the jobs flagged by them (see store.h; the thresholds are
 * health.c's, applied by the runner).
 */
#include "health.h"
#include "store_internal.h"

#include <string.h>

static void bind_opt(sqlite3_stmt *q, int i, int v)
{
	if (v >= 0)
		sqlite3_bind_int(q, i, v);
	else
		sqlite3_bind_null(q, i);
}

int store_health_write(struct store *s, int64_t job_id, const char *at, const char *phase,
		       const struct health_reading *h, const char *flag, struct lab_err *e)
{
	sqlite3_stmt *q;
	/* the part is the job's: the reading follows the identity, never guesses */
	if (!(q = store_prepare_cached(s, "INSERT INTO part_health (part_id, job_id, at, phase,"
					  " life_a, life_b, pre_eol, src) SELECT part_id, id,"
					  " COALESCE(?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?3, ?4,"
					  " ?5, ?6, ?7 FROM job WHERE id = ?1 AND part_id IS NOT NULL",
				       e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, job_id);
	store_bind_text(q, 2, at && *at ? at : NULL);
	store_bind_text(q, 3, phase);
	bind_opt(q, 4, h->life_a);
	bind_opt(q, 5, h->life_b);
	bind_opt(q, 6, h->pre_eol);
	store_bind_text(q, 7, h->src[0] ? h->src : NULL);
	int r = sqlite3_step(q);
	sqlite3_reset(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, r, "recording a part's health");
	if (!flag)
		return LAB_OK;
	if (!(q = store_prepare_cached(s, "UPDATE job SET health_flag = COALESCE(health_flag, ?2)"
				       " WHERE id = ?1", e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, job_id);
	store_bind_text(q, 2, flag);
	r = sqlite3_step(q);
	sqlite3_reset(q);
	return r == SQLITE_DONE ? LAB_OK : store_fail(s, e, r, "flagging a job of a worn part");
}

static int col_int(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int(q, i);
}

static void col_copy(sqlite3_stmt *q, int i, char *dst, size_t size)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	lab_strlcpy(dst, t ? t : "", size);
}

int store_health_summary(struct store *s, int64_t part_id, struct store_health_sum *out,
			 struct lab_err *e)
{
	sqlite3_stmt *q;
	memset(out, 0, sizeof *out);
	out->first_a = out->first_b = out->first_eol = -1;
	out->last_a = out->last_b = out->last_eol = -1;
	if (!(q = store_prepare(s, "SELECT at, phase, life_a, life_b, pre_eol, src FROM part_health"
				   " WHERE part_id = ?1 ORDER BY at, id",
				e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, part_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		if (out->n++ == 0) {
			col_copy(q, 0, out->first_at, sizeof out->first_at);
			out->first_a = col_int(q, 2);
			out->first_b = col_int(q, 3);
			out->first_eol = col_int(q, 4);
		}
		col_copy(q, 0, out->last_at, sizeof out->last_at);
		col_copy(q, 1, out->last_phase, sizeof out->last_phase);
		out->last_a = col_int(q, 2);
		out->last_b = col_int(q, 3);
		out->last_eol = col_int(q, 4);
		col_copy(q, 5, out->last_src, sizeof out->last_src);
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail_infra(s, e, "reading a part's health");
	if (!(q = store_prepare(s, "SELECT count(*), (SELECT health_flag FROM job WHERE part_id = ?1"
				   " AND health_flag IS NOT NULL ORDER BY id DESC LIMIT 1)"
				   " FROM job WHERE part_id = ?1 AND health_flag IS NOT NULL",
				e)))
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, part_id);
	if ((r = sqlite3_step(q)) == SQLITE_ROW) {
		out->flagged_jobs = sqlite3_column_int(q, 0);
		col_copy(q, 1, out->flag, sizeof out->flag);
	}
	sqlite3_finalize(q);
	return r == SQLITE_ROW ? LAB_OK : store_fail_infra(s, e, "reading a part's flagged jobs");
}

int store_health_parts(struct store *s,
		       void (*cb)(int64_t part_id, const char *label, const char *cid,
				  const struct store_health_sum *h, void *arg),
		       void *arg, struct lab_err *e)
{
	sqlite3_stmt *q;
	if (!(q = store_prepare(s, "SELECT id, COALESCE(label, ''), COALESCE(cid, '') FROM part p"
				   " WHERE EXISTS (SELECT 1 FROM part_health h WHERE h.part_id = p.id)"
				   " ORDER BY label, cid, id",
				e)))
		return LAB_EINFRA;
	int r, rc = LAB_OK;
	while (rc == LAB_OK && (r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_health_sum h;
		char label[256], cid[64];
		col_copy(q, 1, label, sizeof label);
		col_copy(q, 2, cid, sizeof cid);
		if ((rc = store_health_summary(s, sqlite3_column_int64(q, 0), &h, e)) == LAB_OK)
			cb(sqlite3_column_int64(q, 0), label, cid, &h, arg);
	}
	if (rc == LAB_OK && r != SQLITE_DONE)
		rc = store_fail_infra(s, e, "listing parts with health readings");
	sqlite3_finalize(q);
	return rc;
}
