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
#include "upload.h"
#include "report.h"
#include "json.h"

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

struct str_ctx {
	FILE *f;
	int n;
};

static void str_item(const char *v, void *arg)
{
	struct str_ctx *x = arg;
	fputs(x->n++ ? "," : "", x->f);
	json_put_str(x->f, v);
}

static int str_array(struct store *s, FILE *f, const char *key, enum store_run_names which,
		     int64_t run_id, struct lab_err *e)
{
	struct str_ctx x = {f, 0};
	fprintf(f, ",\"%s\":[", key);
	int rc = store_run_names(s, run_id, which, str_item, &x, e);
	fputc(']', f);
	return rc;
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
	static const char *const keys[] = {"ok", "infra", "mode_mismatch", "skipped"};
	struct store *s = j->s;
	int64_t id = j->run->id;
	struct store_run_counts c;
	int rc = store_run_counts(s, id, &c, e);
	if (rc)
		return rc;
	int64_t total = c.jobs, samples = c.samples, infra = c.infra_events;
	const int64_t by[4] = {c.ok, c.infra, c.mismatch, c.skipped};

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
	rc = str_array(s, f, "boards", STORE_NAMES_BOARDS, id, e);
	if (!rc)
		rc = str_array(s, f, "parts", STORE_NAMES_PARTS, id, e);
	if (!rc)
		rc = str_array(s, f, "kernels", STORE_NAMES_KERNELS, id, e);
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
	.version = UPLOAD_OPS_VERSION,
	.options = hook_opts,
	.cfg_size = 0,
	.help = "A JSON summary of the run (schema emmclab-webhook/1) POSTed to `url`, with an "
		"`Idempotency-Key` header that is the run's uuid.",
	.check = NULL,
	.items = hook_items,
	.request = hook_request,
	.judge = NULL,
};
