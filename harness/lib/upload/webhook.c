/*
 * upload/webhook.c - a JSON summary of a finished run POSTed to a URL
 * (chat bots, dashboards, CI triggers).  Schema "emmclab-webhook/1":
 *   {"schema", "event": "run.finished", "run": {id, uuid, plan, lab, status,
 *    started_at, finished_at}, "jobs": {total, ok, infra, mode_mismatch,
 *    skipped, other}, "samples", "infra_events", "boards", "parts", "kernels"}
 * The request carries "Idempotency-Key: <run uuid>" (the same on every
 * re-send) so a receiver can drop duplicates, and "Authorization: Bearer
 * <token>" when a token is configured.
 */
#include "json.h"
#include "upload.h"
#include "report.h"

#include <stdlib.h>
#include <string.h>

static const struct opt hook_opts[] = {{0}};

static int hook_items(struct store *s, const struct upload_target *t, const struct upload_run *run,
		      struct upload_items *out, struct lab_err *e)
{
	LAB_UNUSED(s);
	LAB_UNUSED(t);
	LAB_UNUSED(e);
	upload_items_add(out, run->uuid, "summary");
	return LAB_OK;
}

static int scalar(struct store *s, const char *sql, int64_t run_id, int64_t *v, struct lab_err *e)
{
	sqlite3_stmt *q = NULL;
	*v = 0;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
		return lab_err_set(e, LAB_EINFRA, "webhook: %s", sqlite3_errmsg(store_db(s)));
	sqlite3_bind_int64(q, 1, run_id);
	int st = sqlite3_step(q);
	if (st == SQLITE_ROW)
		*v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (st != SQLITE_ROW && st != SQLITE_DONE)
		return lab_err_set(e, LAB_EINFRA, "webhook: %s", sqlite3_errmsg(store_db(s)));
	return LAB_OK;
}

static int str_array(struct store *s, FILE *f, const char *key, const char *sql, int64_t run_id,
		     struct lab_err *e)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
		return lab_err_set(e, LAB_EINFRA, "webhook: %s", sqlite3_errmsg(store_db(s)));
	sqlite3_bind_int64(q, 1, run_id);
	fprintf(f, ",\"%s\":[", key);
	int st, n = 0;
	while ((st = sqlite3_step(q)) == SQLITE_ROW) {
		fputs(n++ ? "," : "", f);
		json_put_str(f, (const char *)sqlite3_column_text(q, 0));
	}
	fputc(']', f);
	sqlite3_finalize(q);
	if (st != SQLITE_DONE)
		return lab_err_set(e, LAB_EINFRA, "webhook: %s", sqlite3_errmsg(store_db(s)));
	return LAB_OK;
}

static void jstr(FILE *f, const char *key, const char *v, bool comma)
{
	fprintf(f, "%s\"%s\":", comma ? "," : "", key);
	if (v && *v)
		json_put_str(f, v);
	else
		fputs("null", f);
}

static int hook_request(struct http *h, const struct upload_job *j, struct http_req **out,
			struct lab_err *e)
{
	static const char *const states[] = {"ok", "infra", "mode-mismatch", "skipped"};
	static const char *const keys[] = {"ok", "infra", "mode_mismatch", "skipped"};
	struct store *s = j->s;
	int64_t id = j->run->id, total = 0, by[4] = {0}, samples = 0, infra = 0;
	int rc = scalar(s, "SELECT count(*) FROM job WHERE run_id = ?", id, &total, e);
	for (int i = 0; i < 4 && !rc; i++) {
		char *sql = xasprintf("SELECT count(*) FROM job WHERE run_id = ? AND status = '%s'", states[i]);
		rc = scalar(s, sql, id, &by[i], e);
		free(sql);
	}
	if (!rc)
		rc = scalar(s,
			    "SELECT count(*) FROM sample sm JOIN iteration i ON i.id = sm.iteration_id"
			    " JOIN job jb ON jb.id = i.job_id WHERE jb.run_id = ?",
			    id, &samples, e);
	if (!rc)
		rc = scalar(s, "SELECT count(*) FROM event WHERE run_id = ? AND kind <> 'info'", id, &infra, e);
	if (rc)
		return rc;

	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	if (!f)
		abort();
	fprintf(f, "{\"schema\":\"emmclab-webhook/1\",\"event\":\"run.finished\",\"run\":{\"id\":%lld",
		(long long)id);
	jstr(f, "uuid", j->run->uuid, true);
	jstr(f, "plan", j->run->plan, true);
	jstr(f, "lab", j->run->lab, true);
	jstr(f, "status", j->run->status, true);
	jstr(f, "started_at", j->run->started_at, true);
	jstr(f, "finished_at", j->run->finished_at, true);
	fprintf(f, "},\"jobs\":{\"total\":%lld", (long long)total);
	int64_t other = total;
	for (int i = 0; i < 4; i++) {
		fprintf(f, ",\"%s\":%lld", keys[i], (long long)by[i]);
		other -= by[i];
	}
	fprintf(f, ",\"other\":%lld},\"samples\":%lld,\"infra_events\":%lld", (long long)other,
		(long long)samples, (long long)infra);
	rc = str_array(s, f, "boards",
		       "SELECT DISTINCT b.name FROM job jb JOIN board b ON b.id = jb.board_id"
		       " WHERE jb.run_id = ? ORDER BY b.name", id, e);
	if (!rc)
		rc = str_array(s, f, "parts",
			       "SELECT DISTINCT p.label FROM job jb JOIN part p ON p.id = jb.part_id"
			       " WHERE jb.run_id = ? ORDER BY p.label", id, e);
	if (!rc)
		rc = str_array(s, f, "kernels",
			       "SELECT DISTINCT k.version FROM job jb JOIN kernel k ON k.id = jb.kernel_id"
			       " WHERE jb.run_id = ? ORDER BY k.version", id, e);
	fputs("}\n", f);
	fclose(f);
	if (rc) {
		free(body);
		return rc;
	}
	struct http_req *r = http_req_new(h, "POST", j->t->url);
	http_req_body(r, body, len, "application/json");
	free(body);
	char *line = xasprintf("Idempotency-Key: %s", j->idem_key);
	http_req_header(r, line, false);
	free(line);
	if (j->secret) {
		line = xasprintf("Authorization: Bearer %s", j->secret);
		http_req_header(r, line, true);
		memset(line, 0, strlen(line));
		free(line);
	}
	*out = r;
	return LAB_OK;
}

const struct upload_kind upload_webhook = {
	.name = "webhook",
	.options = hook_opts,
	.cfg_size = 0,
	.help = "A JSON summary of the run (schema emmclab-webhook/1) POSTed to `url`, with an "
		"`Idempotency-Key` header that is the run's uuid.",
	.check = NULL,
	.items = hook_items,
	.request = hook_request,
	.judge = NULL,
};
