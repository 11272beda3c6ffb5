/*
 * outbox.c - queueing a run's uploads into the store's outbox (table
 * `upload`, written through store_outbox_*), re-queueing and listing them.
 * Rows are what each target's kind says it sends (its items hook), with
 * the target's resolved configuration.  See upload.h.
 */
#include "upload_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* UTC wall clock in ms, and as "YYYY-MM-DDTHH:MM:SS.mmmZ" (sortable as text). */
int64_t upload_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void upload_iso_ms(char *buf, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Parse our own next_at (with or without milliseconds); -1 when unreadable. */
int64_t upload_parse_iso_ms(const char *s)
{
	struct tm tm = {0};
	int ms = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	if (strlen(s) > 20 && s[19] == '.')
		sscanf(s + 20, "%3d", &ms);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

void upload_items_add(struct upload_items *l, const char *idem_key, const char *item)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	l->v[l->n].idem_key = xstrdup(idem_key);
	l->v[l->n].item = xstrdup(item ? item : "");
	l->n++;
}

static void items_free(struct upload_items *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].idem_key);
		free(l->v[i].item);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* ---- runs ---- */

int upload_run_load(struct store *s, int64_t run_id, struct upload_run *r, struct lab_err *e)
{
	memset(r, 0, sizeof *r);
	struct store_run_row row;
	int rc = store_run_get(s, run_id, &row, e);
	if (rc)
		return rc;
	r->id = row.id;
	lab_strlcpy(r->uuid, row.uuid, sizeof r->uuid);
	lab_strlcpy(r->started_at, row.started_at, sizeof r->started_at);
	lab_strlcpy(r->finished_at, row.finished_at, sizeof r->finished_at);
	lab_strlcpy(r->status, row.status, sizeof r->status);
	lab_strlcpy(r->plan, row.plan, sizeof r->plan);
	lab_strlcpy(r->lab, row.lab, sizeof r->lab);
	snprintf(r->date, sizeof r->date, "%.10s", r->started_at);
	return LAB_OK;
}

/* ---- queueing ---- */

static int enqueue_targets(struct store *s, const struct upload_run *run,
			   const struct upload_targets *tl, struct lab_err *e)
{
	char now[80], created[32];
	int64_t ms = upload_wall_ms();
	upload_iso_ms(now, sizeof now, ms);
	lab_utc_iso(created, sizeof created, ms / 1000);
	int rc = LAB_OK;
	for (size_t i = 0; i < tl->n && !rc; i++) {
		const struct upload_target *t = &tl->v[i];
		struct upload_items items = {0};
		rc = t->kind->items(s, t, run, &items, e);
		for (size_t j = 0; j < items.n && !rc; j++)
			rc = store_outbox_add(s, run->id, t->name, t->kind->name, items.v[j].idem_key, now,
					      created, t->spec, items.v[j].item, e);
		items_free(&items);
	}
	return rc;
}

/* The rows of run_id for targets already parsed, in the open transaction. */
static int enqueue_parsed(struct store *s, int64_t run_id, const struct upload_targets *tl,
			  struct lab_err *e)
{
	struct upload_run run;
	int rc = LAB_OK;
	if (tl->n && !(rc = upload_run_load(s, run_id, &run, e)))
		rc = enqueue_targets(s, &run, tl, e);
	return rc;
}

int upload_enqueue_run_tx(struct store *s, int64_t run_id, const struct cfg_node *targets,
			  struct lab_err *e)
{
	if (!store_in_transaction(s))
		return lab_err_set(e, LAB_EUSAGE,
				   "upload_enqueue_run_tx needs an open transaction (use upload_enqueue_run)");
	struct upload_targets tl;
	int rc = upload_targets_parse(targets, &tl, e);
	if (rc)
		return rc;
	rc = enqueue_parsed(s, run_id, &tl, e);
	upload_targets_free(&tl);
	return rc;
}

int upload_enqueue_run(struct store *s, int64_t run_id, const struct cfg_node *targets,
		       struct lab_err *e)
{
	struct store_unit u;
	int rc = store_unit_begin(s, &u, e);
	if (rc)
		return rc;
	rc = upload_enqueue_run_tx(s, run_id, targets, e);
	return store_unit_end(s, &u, rc, e);
}

int upload_finish_run(struct store *s, int64_t run_id, const char *status,
		      const struct cfg_node *targets, struct lab_err *e)
{
	struct lab_err cfg_e = {0};
	struct upload_targets tl; /* parsed once: checked here, queued below */
	int cfg_rc = upload_targets_parse(targets, &tl, &cfg_e);
	int rc = store_begin(s, e);
	if (!rc) {
		rc = store_run_finish(s, run_id, status, e);
		if (!rc && !cfg_rc)
			rc = enqueue_parsed(s, run_id, &tl, e);
		if (!rc)
			rc = store_commit(s, e);
		else
			store_rollback(s);
	}
	upload_targets_free(&tl);
	if (rc)
		return rc;
	if (cfg_rc) {
		/* The run is finished and its results safe; only the uploads are missing. */
		*e = cfg_e;
		return cfg_rc;
	}
	return LAB_OK;
}

int upload_requeue_run(struct store *s, int64_t run_id, const struct cfg_node *targets, int *n,
		       struct lab_err *e)
{
	struct upload_targets tl = {0};
	struct upload_run run;
	*n = 0;
	int rc = upload_run_load(s, run_id, &run, e);
	if (!rc)
		rc = upload_targets_parse(targets, &tl, e);
	if (rc)
		return rc;
	if (targets && tl.n == 0) {
		upload_targets_free(&tl);
		return lab_err_set(e, LAB_EUSAGE, "the configuration has no upload targets");
	}
	if ((rc = store_begin(s, e))) {
		upload_targets_free(&tl);
		return rc;
	}
	if (tl.n)
		rc = enqueue_targets(s, &run, &tl, e);
	char now[80];
	upload_iso_ms(now, sizeof now, upload_wall_ms());
	if (!rc && tl.n) {
		for (size_t i = 0; i < tl.n && !rc; i++)
			rc = store_outbox_requeue(s, run_id, tl.v[i].name, now, n, e);
	} else if (!rc) {
		rc = store_outbox_requeue(s, run_id, NULL, now, n, e);
	}
	if (!rc)
		rc = store_commit(s, e);
	else
		store_rollback(s);
	upload_targets_free(&tl);
	if (!rc && *n == 0 && !targets)
		return lab_err_set(e, LAB_EUSAGE,
				   "run %lld has no uploads queued: give the targets with --config FILE",
				   (long long)run_id);
	return rc;
}

/* ---- listing ---- */

struct list_ctx {
	upload_row_cb cb;
	void *arg;
};

static void list_row(const struct store_outbox_row *o, void *arg)
{
	struct list_ctx *c = arg;
	struct upload_row r = {
		.id = o->id, .run_id = o->run_id, .run_uuid = o->run_uuid, .target = o->target,
		.kind = o->kind, .idem_key = o->idem_key, .item = o->item, .state = o->state,
		.attempts = o->attempts, .next_at = o->next_at, .last_error = o->last_error,
		.created_at = o->created_at, .sent_at = o->sent_at,
	};
	c->cb(&r, c->arg);
}

int upload_list(struct store *s, int64_t run_id, bool all, upload_row_cb cb, void *arg,
		struct lab_err *e)
{
	struct list_ctx c = {cb, arg};
	return store_outbox_list(s, run_id, all, list_row, &c, e);
}
