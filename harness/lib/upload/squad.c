/*
 * upload/squad.c - SQUAD (Linaro's Software Quality Dashboard) submissions.
 *
 * One test run per (build, environment) of a run: build and environment
 * come from templates (default: kernel version and board name) mapped onto
 * SQUAD's identifier set [A-Za-z0-9][A-Za-z0-9_.-]*.  Each is
 *   POST <url>/api/submit/<group>/<project>/<build>/<environment>
 * as multipart/form-data with
 *   tests     {"<suite>/<mode>/job": "pass"|"fail", "<suite>/<mode>/mode-verified": ...}
 *   metrics   {"<suite>/<mode>/<workload>.<metric>": {"value": [samples], "unit": "MiB/s"}}
 *   metadata  {"job_id": "<run uuid>.<build>.<environment>", "datetime": ..., ...}
 *   attachment  the HTML report, and the console transcripts of jobs that failed
 * and "Authorization: Token <tok>" (plus the older "Auth-Token: <tok>").
 * SQUAD refuses a second test run with a known job_id with 400 "There is
 * already a test run with job_id ...": that answer means delivered.
 */
#include "json.h"
#include "upload.h"
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct squad_cfg {
	char *group, *project;
	char *build, *environment;
	bool attach_report, attach_transcripts;
	int64_t max_attachments;
	bool exclude_warmup;
};

#define S(f) offsetof(struct squad_cfg, f)
static const struct opt squad_opts[] = {
	{.key = "group", .type = OPT_STR, .offset = S(group), .flags = OPT_REQUIRED,
	 .help = "SQUAD group slug (must exist on the server)"},
	{.key = "project", .type = OPT_STR, .offset = S(project), .flags = OPT_REQUIRED,
	 .help = "SQUAD project slug (must exist on the server)"},
	{.key = "build", .type = OPT_STR, .offset = S(build), .def = "{kernel}",
	 .help = "build name template ({kernel} {board} {board_type} {part} {plan} {lab} {date} {run})"},
	{.key = "environment", .type = OPT_STR, .offset = S(environment), .def = "{board}",
	 .help = "environment name template (same placeholders)"},
	{.key = "attach_report", .type = OPT_BOOL, .offset = S(attach_report), .def = "true",
	 .help = "attach the run's HTML report"},
	{.key = "attach_transcripts", .type = OPT_BOOL, .offset = S(attach_transcripts), .def = "true",
	 .help = "attach the console transcripts of jobs that did not end ok"},
	{.key = "max_attachments", .type = OPT_INT, .offset = S(max_attachments), .def = "16",
	 .min = 0, .max = 1000, .help = "cap on attached files per submission"},
	{.key = "exclude_warmup", .type = OPT_BOOL, .offset = S(exclude_warmup), .def = "true",
	 .help = "leave iterations flagged as warm-up outliers out of the metrics"},
	{0},
};
#undef S

#define SQUAD_JOB_ID_MAX 128 /* TestRun.job_id is a 128-character field */

struct sqjob {
	int64_t id, board_id;
	char *suite, *mode, *status, *verified, *kernel, *board, *type, *part, *cid;
	char build[128], env[128];
};

struct sqjobs {
	struct sqjob *v;
	size_t n;
};

static void jobs_free(struct sqjobs *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct sqjob *j = &l->v[i];
		free(j->suite);
		free(j->mode);
		free(j->status);
		free(j->verified);
		free(j->kernel);
		free(j->board);
		free(j->type);
		free(j->part);
		free(j->cid);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

struct load_ctx {
	const struct squad_cfg *c;
	const struct upload_run *run;
	struct sqjobs *out;
	struct lab_err *e;
};

static int load_job(const struct store_job_row *r, void *arg)
{
	struct load_ctx *x = arg;
	struct sqjobs *out = x->out;
	const struct upload_run *run = x->run;
	out->v = xreallocarray(out->v, out->n + 1, sizeof *out->v);
	struct sqjob *j = &out->v[out->n++];
	memset(j, 0, sizeof *j);
	j->id = r->id;
	j->board_id = r->board_id;
	j->suite = xstrdup(r->suite);
	j->mode = xstrdup(r->mode);
	j->status = xstrdup(r->status);
	j->verified = xstrdup(r->verified_mode);
	j->kernel = xstrdup(r->kernel);
	j->board = xstrdup(r->board);
	j->type = xstrdup(r->board_type);
	j->part = xstrdup(r->part);
	j->cid = xstrdup(r->cid);
	const char *vars[] = {"kernel", j->kernel, "board", j->board, "board_type", j->type,
			      "part", j->part, "plan", run->plan, "lab", run->lab,
			      "date", run->date, "run", run->uuid, NULL};
	char *b = NULL, *en = NULL;
	int rc = upload_expand(x->c->build, vars, &b, x->e);
	if (!rc)
		rc = upload_expand(x->c->environment, vars, &en, x->e);
	if (!rc) {
		upload_squad_slug(b, j->build, sizeof j->build);
		upload_squad_slug(en, j->env, sizeof j->env);
	}
	free(b);
	free(en);
	return rc;
}

/* Every job of the run with its build and environment names. */
static int load_jobs(struct store *s, const struct upload_target *t, const struct upload_run *run,
		     struct sqjobs *out, struct lab_err *e)
{
	memset(out, 0, sizeof *out);
	struct load_ctx x = {t->cfg, run, out, e};
	int rc = store_run_jobs(s, run->id, load_job, &x, e);
	if (rc)
		jobs_free(out);
	return rc;
}

static void job_id(const struct upload_run *run, const char *build, const char *env, char *out,
		   size_t n)
{
	char id[512];
	snprintf(id, sizeof id, "%s.%s.%s", run->uuid, build, env);
	if (strlen(id) >= SQUAD_JOB_ID_MAX || strlen(id) >= n) {
		/* Long names: keep it unique and stable with a hash of both. */
		char hex[65], both[300];
		snprintf(both, sizeof both, "%s\t%s", build, env);
		lab_sha256(both, strlen(both), hex);
		snprintf(id, sizeof id, "%s.%.16s", run->uuid, hex);
	}
	lab_strlcpy(out, id, n);
}

static int squad_items(struct store *s, const struct upload_target *t, const struct upload_run *run,
		       struct upload_items *out, struct lab_err *e)
{
	struct sqjobs jl;
	int rc = load_jobs(s, t, run, &jl, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < jl.n; i++) {
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(jl.v[k].build, jl.v[i].build) == 0 &&
			       strcmp(jl.v[k].env, jl.v[i].env) == 0;
		if (seen)
			continue;
		char id[SQUAD_JOB_ID_MAX], item[300];
		job_id(run, jl.v[i].build, jl.v[i].env, id, sizeof id);
		snprintf(item, sizeof item, "%s\t%s", jl.v[i].build, jl.v[i].env);
		upload_items_add(out, id, item);
	}
	jobs_free(&jl);
	return LAB_OK;
}

/* ---- payload ---- */

/* A SQUAD name component: '/' separates suites, so it may not appear inside. */
static void comp(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == '/' ? '_' : *s, f);
}

struct test_res {
	char *key;
	int result; /* 1 pass, 0 fail, -1 skip */
};

struct metric_acc {
	char *key, *unit;
	double *v;
	size_t n;
};

static void test_set(struct test_res **v, size_t *n, const char *key, int result)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].key, key) == 0) {
			/* Several jobs under one name: any failure fails it. */
			if (result == 0 || (*v)[i].result == -1)
				(*v)[i].result = result;
			return;
		}
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[*n].key = xstrdup(key);
	(*v)[*n].result = result;
	(*n)++;
}

static char *mkkey(const char *a, const char *b, const char *c, const char *sep, const char *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	comp(f, a);
	fputc('/', f);
	comp(f, b);
	fputc('/', f);
	comp(f, c);
	if (d) {
		fputs(sep, f);
		comp(f, d);
	}
	fclose(f);
	return buf;
}

struct metrics_ctx {
	const struct sqjob *j;
	struct metric_acc **m;
	size_t *nm;
};

static void add_metric(const char *workload, const char *metric, const char *unit, double v,
		       void *arg)
{
	struct metrics_ctx *x = arg;
	struct metric_acc **m = x->m;
	size_t *nm = x->nm;
	if (!isfinite(v))
		return; /* SQUAD averages the list: one NaN would poison it */
	char *key = mkkey(x->j->suite, x->j->mode, workload, ".", metric);
	struct metric_acc *a = NULL;
	for (size_t i = 0; i < *nm && !a; i++)
		if (strcmp((*m)[i].key, key) == 0)
			a = &(*m)[i];
	if (!a) {
		*m = xreallocarray(*m, *nm + 1, sizeof **m);
		a = &(*m)[(*nm)++];
		memset(a, 0, sizeof *a);
		a->key = key;
		a->unit = xstrdup(unit ? unit : "");
	} else {
		free(key);
	}
	a->v = xreallocarray(a->v, a->n + 1, sizeof *a->v);
	a->v[a->n++] = v;
}

static int add_metrics(struct store *s, const struct squad_cfg *c, const struct sqjob *j,
		       struct metric_acc **m, size_t *nm, struct lab_err *e)
{
	struct metrics_ctx x = {j, m, nm};
	return store_job_samples(s, j->id, c->exclude_warmup, add_metric, &x, e);
}

static void kv(FILE *f, bool *first, const char *k, const char *v)
{
	if (!v || !*v)
		return;
	fputs(*first ? "" : ",", f);
	*first = false;
	json_put_str(f, k);
	fputc(':', f);
	json_put_str(f, v);
}

struct attach_ctx {
	struct http_req *r;
	int64_t *left;
	char **done;
	size_t ndone;
	int rc;
	struct lab_err *e;
};

static bool attach_one(const char *p, void *arg)
{
	struct attach_ctx *x = arg;
	if (*x->left <= 0)
		return false;
	for (size_t k = 0; k < x->ndone; k++)
		if (strcmp(x->done[k], p) == 0)
			return true;
	if (access(p, R_OK) != 0)
		return true; /* rotated away or never written: the rest still goes */
	if ((x->rc = http_req_form_file(x->r, "attachment", p, "text/plain", x->e)))
		return false;
	x->done = xreallocarray(x->done, x->ndone + 1, sizeof *x->done);
	x->done[x->ndone++] = xstrdup(p);
	(*x->left)--;
	return true;
}

/* Transcripts of the jobs in `jl` that did not end ok (and of their boards'
 * boots outside any job in this run), readable ones only, capped. */
static int attach_transcripts(struct store *s, const struct upload_job *uj, const struct sqjobs *jl,
			      struct http_req *r, int64_t *left, struct lab_err *e)
{
	struct attach_ctx x = {.r = r, .left = left, .e = e};
	int rc = LAB_OK;
	for (size_t i = 0; i < jl->n && *left > 0 && !rc; i++) {
		const struct sqjob *j = &jl->v[i];
		if (strcmp(j->status, "ok") == 0)
			continue;
		rc = store_job_transcripts(s, uj->run->id, j->id, j->board_id, attach_one, &x, e);
		if (!rc)
			rc = x.rc;
	}
	for (size_t k = 0; k < x.ndone; k++)
		free(x.done[k]);
	free(x.done);
	return rc;
}

static int squad_request(struct http *h, const struct upload_job *uj, struct http_req **out,
			 struct lab_err *e)
{
	const struct squad_cfg *c = uj->t->cfg;
	*out = NULL;
	char build[128], env[128];
	const char *tab = strchr(uj->item, '\t');
	if (!tab)
		return lab_err_set(e, LAB_EUSAGE, "outbox item '%s' is not build<TAB>environment", uj->item);
	snprintf(build, sizeof build, "%.*s", (int)(tab - uj->item), uj->item);
	snprintf(env, sizeof env, "%s", tab + 1);
	if (!upload_squad_ident_ok(build) || !upload_squad_ident_ok(env))
		return lab_err_set(e, LAB_EUSAGE, "build '%s' or environment '%s' is not a SQUAD identifier",
				   build, env);

	struct sqjobs all, mine = {0};
	int rc = load_jobs(uj->s, uj->t, uj->run, &all, e);
	if (rc)
		return rc;
	/* Keep the jobs of this (build, environment); move them over to `mine`. */
	mine.v = xcalloc(all.n ? all.n : 1, sizeof *mine.v);
	size_t keep = 0;
	for (size_t i = 0; i < all.n; i++) {
		if (strcmp(all.v[i].build, build) == 0 && strcmp(all.v[i].env, env) == 0)
			mine.v[mine.n++] = all.v[i];
		else
			all.v[keep++] = all.v[i];
	}
	all.n = keep;
	jobs_free(&all);
	if (mine.n == 0) {
		jobs_free(&mine);
		return lab_err_set(e, LAB_EUSAGE, "run %s has no jobs for build %s, environment %s",
				   uj->run->uuid, build, env);
	}

	struct test_res *tests = NULL;
	size_t ntests = 0;
	struct metric_acc *mets = NULL;
	size_t nmets = 0;
	for (size_t i = 0; i < mine.n && !rc; i++) {
		const struct sqjob *j = &mine.v[i];
		char *k = mkkey(j->suite, j->mode, "job", NULL, NULL);
		test_set(&tests, &ntests, k, strcmp(j->status, "ok") == 0 ? 1
					    : strcmp(j->status, "skipped") == 0 ? -1 : 0);
		free(k);
		k = mkkey(j->suite, j->mode, "mode-verified", NULL, NULL);
		test_set(&tests, &ntests, k, !*j->verified ? -1 : strcmp(j->verified, j->mode) == 0);
		free(k);
		rc = add_metrics(uj->s, c, j, &mets, &nmets, e);
	}

	char *tj = NULL, *mj = NULL, *dj = NULL;
	size_t tl = 0, ml = 0, dl = 0;
	FILE *tf = open_memstream(&tj, &tl), *mf = open_memstream(&mj, &ml), *df = open_memstream(&dj, &dl);
	if (!tf || !mf || !df)
		abort();
	fputc('{', tf);
	for (size_t i = 0; i < ntests; i++) {
		fputs(i ? "," : "", tf);
		json_put_str(tf, tests[i].key);
		fputs(tests[i].result == 1 ? ":\"pass\"" : tests[i].result == 0 ? ":\"fail\"" : ":\"skip\"", tf);
		free(tests[i].key);
	}
	fputc('}', tf);
	free(tests);
	fputc('{', mf);
	for (size_t i = 0; i < nmets; i++) {
		fputs(i ? "," : "", mf);
		json_put_str(mf, mets[i].key);
		fputs(":{\"value\":[", mf);
		for (size_t k = 0; k < mets[i].n; k++) {
			fputs(k ? "," : "", mf);
			fprintf(mf, "%.17g", mets[i].v[k]);
		}
		fputs("],\"unit\":", mf);
		json_put_str(mf, mets[i].unit);
		fputc('}', mf);
		free(mets[i].key);
		free(mets[i].unit);
		free(mets[i].v);
	}
	fputc('}', mf);
	free(mets);

	const struct sqjob *j0 = &mine.v[0];
	char nruns[32];
	snprintf(nruns, sizeof nruns, "%lld", (long long)uj->run->id);
	bool first = true;
	fputc('{', df);
	kv(df, &first, "job_id", uj->idem_key);
	kv(df, &first, "datetime", uj->run->started_at);
	kv(df, &first, "job_status", uj->run->status);
	kv(df, &first, "emmclab_run_uuid", uj->run->uuid);
	kv(df, &first, "emmclab_run_id", nruns);
	kv(df, &first, "emmclab_version", EMMCLAB_VERSION);
	kv(df, &first, "plan", uj->run->plan);
	kv(df, &first, "lab", uj->run->lab);
	kv(df, &first, "finished_at", uj->run->finished_at);
	kv(df, &first, "kernel", j0->kernel);
	kv(df, &first, "board", j0->board);
	kv(df, &first, "board_type", j0->type);
	kv(df, &first, "part", j0->part);
	kv(df, &first, "cid", j0->cid);
	fputc('}', df);
	fclose(tf);
	fclose(mf);
	fclose(df);

	struct http_req *r = NULL;
	if (!rc) {
		size_t ul = strlen(uj->t->url);
		while (ul && uj->t->url[ul - 1] == '/')
			ul--;
		char *url = xasprintf("%.*s/api/submit/%s/%s/%s/%s", (int)ul, uj->t->url, c->group,
				      c->project, build, env);
		r = http_req_new(h, "POST", url);
		free(url);
		http_req_form_field(r, "tests", tj);
		http_req_form_field(r, "metrics", mj);
		http_req_form_field(r, "metadata", dj);
		int64_t left = c->max_attachments;
		if (c->attach_report && left > 0) {
			char path[4096];
			const char *mime;
			rc = upload_bundle_file(uj, "html", path, sizeof path, NULL, &mime, e);
			if (!rc)
				rc = http_req_form_file(r, "attachment", path, mime, e);
			left--;
		}
		if (!rc && c->attach_transcripts)
			rc = attach_transcripts(uj->s, uj, &mine, r, &left, e);
		if (!rc && uj->secret) {
			char *line = xasprintf("Authorization: Token %s", uj->secret);
			http_req_header(r, line, true);
			free(line);
			line = xasprintf("Auth-Token: %s", uj->secret);
			http_req_header(r, line, true);
			free(line);
		}
	}
	free(tj);
	free(mj);
	free(dj);
	jobs_free(&mine);
	if (rc) {
		if (r)
			http_req_cancel(r);
		return rc;
	}
	*out = r;
	return LAB_OK;
}

static enum upload_verdict squad_judge(const struct upload_job *j, const struct http_result *res)
{
	/* A re-send of something SQUAD already stored: delivered, not an error. */
	if (res->status == 400 && res->body && strstr(res->body, "already a test run with job_id"))
		return UPLOAD_SENT;
	return upload_judge_default(j, res);
}

static int squad_check(struct upload_target *t, struct lab_err *e)
{
	const struct squad_cfg *c = t->cfg;
	if (!upload_squad_ident_ok(c->group) || !upload_squad_ident_ok(c->project))
		return lab_err_set(e, LAB_EUSAGE,
				   "%s:%d: target '%s': group '%s' and project '%s' must match "
				   "[A-Za-z0-9][A-Za-z0-9_.-]*", t->file ? t->file : "?", t->line, t->name,
				   c->group, c->project);
	char *x = NULL;
	int rc = upload_expand(c->build, upload_template_vars, &x, e);
	free(x);
	x = NULL;
	if (!rc)
		rc = upload_expand(c->environment, upload_template_vars, &x, e);
	free(x);
	return rc;
}

const struct upload_kind upload_squad = {
	.name = "squad",
	.version = UPLOAD_OPS_VERSION,
	.options = squad_opts,
	.cfg_size = sizeof(struct squad_cfg),
	.help = "One SQUAD test run per build and environment of a run, through "
		"`POST <url>/api/submit/<group>/<project>/<build>/<environment>`.",
	.check = squad_check,
	.items = squad_items,
	.request = squad_request,
	.judge = squad_judge,
};
