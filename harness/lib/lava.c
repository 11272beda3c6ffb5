/*
 * lava.c - the LAVA executor (lava.h): job definitions, the REST client on
 * the loop (http.c), following a job with backoff, and cutting its log into
 * the agent commands' output.
 */
#include "lava.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "http.h"
#include "json.h"
#include "opt.h"

#define LAVA_MARK "EMMCLAB-LAVA"

/* ---- configuration ---- */

struct lava_server_cfg {
	char *url, *user, *token_file, *token_env;
	uint64_t poll_ms, poll_max_ms, poll_running_ms, log_max;
	int64_t submit_parallel;
};

static const struct opt server_opts[] = {
    {.key = "url",
     .type = OPT_STR,
     .offset = offsetof(struct lava_server_cfg, url),
     .flags = OPT_REQUIRED,
     .help = "the LAVA server, e.g. https://lava.example.org/"},
    {.key = "user",
     .type = OPT_STR,
     .offset = offsetof(struct lava_server_cfg, user),
     .def = "",
     .help = "the user the token belongs to (jobs are submitted as this user)"},
    {.key = "token_file",
     .type = OPT_STR,
     .offset = offsetof(struct lava_server_cfg, token_file),
     .def = "",
     .help = "file holding the API token (first line)"},
    {.key = "token_env",
     .type = OPT_STR,
     .offset = offsetof(struct lava_server_cfg, token_env),
     .def = "",
     .help = "environment variable holding the API token (when no token_file)"},
    {.key = "poll",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_server_cfg, poll_ms),
     .def = "2s",
     .min = 100,
     .max = 600000,
     .help = "first interval between two looks at a job"},
    {.key = "poll_max",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_server_cfg, poll_max_ms),
     .def = "30s",
     .min = 100,
     .max = 3600000,
     .help = "the interval grows to this while a queued job's state does not change"},
    {.key = "poll_running",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_server_cfg, poll_running_ms),
     .def = "5s",
     .min = 100,
     .max = 3600000,
     .help = "the longest interval while the job runs: bounds the delay between LAVA finishing "
             "it and its samples stored (running jobs are at most the farm's devices)"},
    {.key = "submit_parallel",
     .type = OPT_INT,
     .offset = offsetof(struct lava_server_cfg, submit_parallel),
     .def = "4",
     .min = 1,
     .max = 64,
     .help = "submissions in flight at once (the rest wait their turn: a LAVA server answers "
             "HTTP 500 when a burst exhausts its database connections)"},
    {.key = "log_max",
     .type = OPT_SIZE,
     .offset = offsetof(struct lava_server_cfg, log_max),
     .def = "64MiB",
     .min = 65536,
     .max = 4294967296.0,
     .help = "largest job log fetched (a longer one fails the job)"},
    {0},
};

static const struct opt device_opts[] = {
    {.key = "device_type",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, device_type),
     .flags = OPT_REQUIRED,
     .help = "LAVA device type the job asks for, e.g. qemu"},
    {.key = "tags",
     .type = OPT_STRLIST,
     .offset = offsetof(struct lava_device_cfg, tags),
     .help = "LAVA device tags the job asks for (all must match one device)"},
    {.key = "arch",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, arch),
     .def = "x86_64",
     .help = "the job's `context: arch` (QEMU device types)"},
    {.key = "cmdline",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, cmdline),
     .def = "",
     .help = "appended to the kernel's and the mode's command line (no `quiet`: LAVA needs the "
             "kernel banner)"},
    {.key = "kernel_url",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, kernel_url),
     .def = "",
     .help = "where the worker downloads the kernel (default: file:// of the kernel's image, for a "
             "worker on this host)"},
    {.key = "initrd_url",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, initrd_url),
     .def = "",
     .help = "where the worker downloads the ramdisk with the agent (default: file:// of the "
             "kernel's initrd)"},
    {.key = "compression",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, compression),
     .def = "gz",
     .help = "compression of the ramdisk (gz, xz, or none)"},
    {.key = "login",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, login),
     .def = "root",
     .help = "user LAVA logs in as on the DUT"},
    {.key = "prompts",
     .type = OPT_STRLIST,
     .offset = offsetof(struct lava_device_cfg, prompts),
     .help = "shell prompts LAVA waits for after login (default: \"# \")"},
    {.key = "agent_path",
     .type = OPT_STR,
     .offset = offsetof(struct lava_device_cfg, agent_path),
     .def = "/bin/emmclab-agent",
     .help = "emmclab-agent on the DUT (in the ramdisk)"},
    {.key = "boot_timeout",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_device_cfg, boot_timeout_ms),
     .def = "10m",
     .min = 1000,
     .max = 86400000,
     .help = "LAVA's deploy and boot action timeouts"},
    {.key = "test_timeout",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_device_cfg, test_timeout_ms),
     .def = "1h",
     .min = 1000,
     .max = 86400000,
     .help = "LAVA's test action timeout"},
    {.key = "queue_timeout",
     .type = OPT_DURATION,
     .offset = offsetof(struct lava_device_cfg, queue_timeout_ms),
     .def = "2h",
     .min = 1000,
     .max = 604800000.0,
     .help = "a job no device took within this is canceled: device-offline (infrastructure)"},
    {0},
};

const struct opt *const lava_server_table = server_opts;
const struct opt *const lava_device_table = device_opts;

int lava_device_parse(const struct cfg_node *n, struct lava_device_cfg *d, struct lab_err *e)
{
	memset(d, 0, sizeof *d);
	int rc = opt_defaults(device_opts, d, e);
	if (!rc)
		rc = opt_parse(device_opts, n, d, e);
	if (rc)
		lava_device_free(d);
	return rc;
}

void lava_device_free(struct lava_device_cfg *d)
{
	opt_free(device_opts, d);
	memset(d, 0, sizeof *d);
}

/* ---- the server ---- */

struct lava {
	struct loop *loop;
	struct http *http;
	char *url;  /* ends in '/' */
	char *auth; /* "Authorization: Token ..." (secret) */
	struct lava_server_cfg cfg;
	struct lava_stats st;
	int submitting;            /* submissions in flight */
	struct lava_job **waiting; /* submissions waiting for a free place, in order */
	size_t nwaiting;
};

int lava_new(struct loop *l, const struct cfg_node *n, struct lava **out, struct lab_err *e)
{
	struct lava *lv = xcalloc(1, sizeof *lv);
	int rc = opt_defaults(server_opts, &lv->cfg, e);
	if (!rc)
		rc = opt_parse(server_opts, n, &lv->cfg, e);
	char *tok = NULL;
	if (!rc && lv->cfg.token_file[0]) {
		size_t len = 0;
		rc = lab_read_file(lv->cfg.token_file, 4096, &tok, &len, e);
		if (rc)
			rc = LAB_ERR(e, LAB_EUSAGE, "lava: token_file %s cannot be read",
			             lv->cfg.token_file);
	} else if (!rc && lv->cfg.token_env[0]) {
		const char *v = getenv(lv->cfg.token_env);
		if (!v || !*v)
			rc = LAB_ERR(e, LAB_EUSAGE,
			             "lava: environment variable %s (token_env) is not set",
			             lv->cfg.token_env);
		else
			tok = xstrdup(v);
	} else if (!rc) {
		rc = LAB_ERR(e, LAB_EUSAGE, "lava: the server needs token_file or token_env");
	}
	if (!rc) {
		tok[strcspn(tok, "\r\n")] = '\0';
		if (!tok[0])
			rc = LAB_ERR(e, LAB_EUSAGE, "lava: the token is empty");
	}
	if (!rc && strncmp(lv->cfg.url, "http://", 7) != 0 &&
	    strncmp(lv->cfg.url, "https://", 8) != 0)
		rc = LAB_ERR(e, LAB_EUSAGE, "lava: url must be http:// or https://");
	if (!rc && !(lv->http = http_ref(l, e)))
		rc = LAB_EINFRA;
	if (rc) {
		free(tok);
		opt_free(server_opts, &lv->cfg);
		free(lv);
		return rc;
	}
	lv->loop = l;
	size_t ul = strlen(lv->cfg.url);
	lv->url = xasprintf("%s%s", lv->cfg.url, ul && lv->cfg.url[ul - 1] == '/' ? "" : "/");
	lv->auth = xasprintf("Authorization: Token %s", tok);
	/* the token leaves memory as soon as it is not needed */
	memset(tok, 0, strlen(tok));
	free(tok);
	*out = lv;
	return LAB_OK;
}

void lava_free(struct lava *lv)
{
	if (!lv)
		return;
	if (lv->auth)
		memset(lv->auth, 0, strlen(lv->auth));
	free(lv->auth);
	free(lv->url);
	free(lv->waiting);
	http_unref(lv->http);
	opt_free(server_opts, &lv->cfg);
	free(lv);
}

const char *lava_url(const struct lava *lv)
{
	return lv->url;
}

void lava_get_stats(const struct lava *lv, struct lava_stats *st)
{
	*st = lv->st;
}

/* ---- the job definition ---- */

static void yq(struct lab_buf *b, const char *s)
{
	/* a JSON string is a YAML double-quoted scalar */
	json_buf_str(b, s);
}

static char *file_url(const char *path)
{
	if (!path || !*path)
		return xstrdup("");
	if (strstr(path, "://"))
		return xstrdup(path);
	char *rp = realpath(path, NULL);
	char *u = xasprintf("file://%s", rp ? rp : path);
	free(rp);
	return u;
}

/* The helper the steps call: markers around one agent command, its output
 * printed after it ended (one block, so LAVA's line splitting is all it
 * sees), then every sample line as a lava-test-case measurement. */
static const char step_fn[] =
    "emmclab_step() { n=$1; shift; echo \"" LAVA_MARK " begin $n\"; "
    "\"$@\" > /tmp/emmclab-lava.out 2>&1; rc=$?; cat /tmp/emmclab-lava.out; "
    "echo \"" LAVA_MARK " end $n $rc\"; "
    "awk -v P=\"$EMMCLAB_PREFIX\" '/@@emmclab 1 [0-9]+ sample / { w=\"\"; m=\"\"; v=\"\"; u=\"\"; "
    "for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, \"\", k); x = substr($i, length(k) + 2); "
    "if (k == \"workload\") w = x; else if (k == \"metric\") m = x; else if (k == \"value\") v = "
    "x; "
    "else if (k == \"unit\") u = x } "
    "n = P \"-\" w \"-\" m; gsub(/[^A-Za-z0-9._-]/, \"_\", n); "
    "gsub(/%2F/, \"/\", u); gsub(/%25/, \"%\", u); gsub(/%[0-9A-F][0-9A-F]/, \"_\", u); "
    "if (u == \"\") u = \"none\"; print n, v, u }' /tmp/emmclab-lava.out | "
    "while read -r cn cv cu; do lava-test-case \"$cn\" --result pass --measurement \"$cv\" --units "
    "\"$cu\"; done; }";

static void minutes(struct lab_buf *b, const char *key, uint64_t ms)
{
	lab_buf_printf(b, "%s: {minutes: %llu}", key, (unsigned long long)((ms + 59999) / 60000));
}

char *lava_job_definition(const struct lava_job_spec *sp)
{
	const struct lava_device_cfg *d = sp->dev;
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_printf(&b, "# written by emmclab (docs/lava.md)\ndevice_type: ");
	yq(&b, d->device_type);
	lab_buf_printf(&b, "\njob_name: ");
	yq(&b, sp->name);
	lab_buf_printf(&b, "\npriority: medium\nvisibility: public\n");
	if (d->tags.n) {
		lab_buf_printf(&b, "tags:\n");
		for (size_t i = 0; i < d->tags.n; i++) {
			lab_buf_printf(&b, "- ");
			yq(&b, d->tags.v[i]);
			lab_buf_printf(&b, "\n");
		}
	}
	lab_buf_printf(&b, "timeouts:\n  ");
	minutes(&b, "job",
	        sp->job_timeout_ms ? sp->job_timeout_ms
	                           : d->boot_timeout_ms * 2 + d->test_timeout_ms);
	lab_buf_printf(&b, "\n  ");
	minutes(&b, "action", d->test_timeout_ms);
	lab_buf_printf(&b, "\n  connection: {minutes: 2}\ncontext:\n  arch: ");
	yq(&b, d->arch);
	/* The kernel command line: the kernel's, the mode's, the board's. */
	struct lab_buf cl;
	lab_buf_init(&cl, 0);
	const char *parts[] = {sp->kernel && sp->kernel->cmdline ? sp->kernel->cmdline : "",
	                       sp->cmdline ? sp->cmdline : "", d->cmdline};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(parts); i++)
		if (parts[i] && *parts[i])
			lab_buf_printf(&cl, "%s%s", cl.len ? " " : "", parts[i]);
	char *kurl = d->kernel_url[0] ? xstrdup(d->kernel_url)
	                              : file_url(sp->kernel ? sp->kernel->image : NULL);
	char *iurl = d->initrd_url[0] ? xstrdup(d->initrd_url)
	                              : file_url(sp->kernel ? sp->kernel->initrd : NULL);
	char *karg = xasprintf("-kernel {kernel} -append \"%s\"", lab_buf_cstr(&cl));
	lab_buf_printf(&b, "\nactions:\n- deploy:\n    ");
	minutes(&b, "timeout", d->boot_timeout_ms);
	lab_buf_printf(&b, "\n    to: tmpfs\n    images:\n      kernel:\n        image_arg: ");
	yq(&b, karg);
	lab_buf_printf(&b, "\n        url: ");
	yq(&b, kurl);
	lab_buf_printf(&b,
	               "\n      ramdisk:\n        image_arg: \"-initrd {ramdisk}\"\n        url: ");
	yq(&b, iurl);
	if (strcmp(d->compression, "none") != 0 && d->compression[0]) {
		lab_buf_printf(&b, "\n        compression: ");
		yq(&b, d->compression);
	}
	/* LAVA adds its test overlay to the cpio itself: no libguestfs */
	lab_buf_printf(&b,
	               "\n        format: cpio.newc\n        overlays:\n          lava: true\n");
	lab_buf_printf(&b, "- boot:\n    ");
	minutes(&b, "timeout", d->boot_timeout_ms);
	lab_buf_printf(&b, "\n    method: qemu\n    media: tmpfs\n    prompts:\n");
	if (d->prompts.n == 0)
		lab_buf_printf(&b, "    - \"# \"\n");
	for (size_t i = 0; i < d->prompts.n; i++) {
		lab_buf_printf(&b, "    - ");
		yq(&b, d->prompts.v[i]);
		lab_buf_printf(&b, "\n");
	}
	lab_buf_printf(&b, "    auto_login:\n      login_prompt: \"login:\"\n      username: ");
	yq(&b, d->login);
	lab_buf_printf(&b, "\n- test:\n    ");
	minutes(&b, "timeout", d->test_timeout_ms);
	lab_buf_printf(&b,
	               "\n    definitions:\n    - from: inline\n      name: emmclab\n"
	               "      path: inline/emmclab.yaml\n      repository:\n        metadata:\n"
	               "          format: Lava-Test Test Definition 1.0\n          name: emmclab\n"
	               "          description: \"emmclab-agent workloads\"\n        run:\n"
	               "          steps:\n          - ");
	char *pfx =
	    xasprintf("export EMMCLAB_PREFIX=%s", sp->case_prefix ? sp->case_prefix : "emmclab");
	yq(&b, pfx);
	lab_buf_printf(&b, "\n          - ");
	yq(&b, step_fn);
	for (size_t i = 0; i < sp->nsteps; i++) {
		char *st = xasprintf("emmclab_step %zu %s %s", i, d->agent_path, sp->steps[i]);
		lab_buf_printf(&b, "\n          - ");
		yq(&b, st);
		free(st);
	}
	lab_buf_printf(&b, "\n");
	free(pfx);
	free(karg);
	free(kurl);
	free(iurl);
	lab_buf_free(&cl);
	char *out = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return out;
}

/* ---- the log ---- */

static void step_add_line(struct lava_step *s, const char *line)
{
	s->lines = xreallocarray(s->lines, s->nlines + 1, sizeof *s->lines);
	s->lines[s->nlines++] = xstrdup(line);
}

void lava_outcome_free(struct lava_outcome *o)
{
	for (size_t i = 0; i < o->nsteps; i++) {
		free(o->steps[i].args);
		for (size_t k = 0; k < o->steps[i].nlines; k++)
			free(o->steps[i].lines[k]);
		free(o->steps[i].lines);
	}
	free(o->steps);
	o->steps = NULL;
	o->nsteps = 0;
}

/* LAVA's verdict on an incomplete job: its `lava`/`job` result line. */
static void note_result(json_t *msg, struct lava_outcome *o)
{
	const char *def = json_string_value(json_object_get(msg, "definition"));
	const char *cas = json_string_value(json_object_get(msg, "case"));
	const char *res = json_string_value(json_object_get(msg, "result"));
	if (!def || !cas || !res || strcmp(def, "lava") != 0 || strcmp(res, "fail") != 0)
		return;
	json_t *extra = json_object_get(msg, "extra");
	/* 2023.01 puts them in the result itself; older servers under extra */
	const char *et = json_string_value(json_object_get(msg, "error_type"));
	const char *em = json_string_value(json_object_get(msg, "error_msg"));
	if (!et)
		et = json_string_value(json_object_get(extra, "error_type"));
	if (!em)
		em = json_string_value(json_object_get(extra, "error_msg"));
	if (strcmp(cas, "job") == 0 && et) {
		if (strcmp(et, "Infrastructure") == 0)
			o->kind = "lava-infra";
		else if (strcmp(et, "Canceled") == 0)
			o->kind = "lava-canceled";
		else if (strcmp(et, "LAVATimeout") == 0 &&
		         (!o->kind || strcmp(o->kind, "boot-timeout")))
			o->kind = "job-timeout";
		else if (!o->kind)
			o->kind = "lava-infra";
		snprintf(o->msg, sizeof o->msg, "LAVA %s error: %s", et, em ? em : "");
	} else if (!o->kind && (strstr(cas, "login") || strstr(cas, "boot") ||
	                        strstr(cas, "kernel-messages"))) {
		/* the boot did not reach a shell: the first failing boot case says so */
		o->kind = "boot-timeout";
	}
}

int lava_log_parse(const char *log, size_t len, const char *const *steps, size_t nsteps,
                   struct lava_outcome *o)
{
	lava_outcome_free(o);
	o->steps = xcalloc(nsteps ? nsteps : 1, sizeof *o->steps);
	o->nsteps = nsteps;
	for (size_t i = 0; i < nsteps; i++) {
		o->steps[i].args = xstrdup(steps[i]);
		o->steps[i].exit_status = -1;
	}
	long cur = -1;
	const char *p = log, *end = log + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		/* "- {json}" */
		if (le - p > 3 && p[0] == '-' && p[1] == ' ') {
			json_error_t je;
			json_t *ent = json_loadb(p + 2, (size_t)(le - p - 2), 0, &je);
			if (!ent && memmem(p, (size_t)(le - p), "\"lvl\": \"results\"", 17)) {
				/* result lines carry YAML tags (`! "601"`): drop them */
				char *cp = xstrndup(p + 2, (size_t)(le - p - 2));
				char *w = cp;
				for (const char *q = cp; *q; q++) {
					if (q[0] == '!' && q[1] == ' ' && q[2] == '"') {
						q++;
						continue;
					}
					*w++ = *q;
				}
				*w = '\0';
				ent = json_loadb(cp, strlen(cp), 0, &je);
				free(cp);
			}
			const char *lvl =
			    ent ? json_string_value(json_object_get(ent, "lvl")) : NULL;
			json_t *msg = ent ? json_object_get(ent, "msg") : NULL;
			if (lvl && strcmp(lvl, "target") == 0 && json_is_string(msg)) {
				const char *m = json_string_value(msg);
				unsigned long n = 0;
				int st = 0;
				char word[8];
				if (strncmp(m, LAVA_MARK " ", sizeof LAVA_MARK) == 0 &&
				    sscanf(m + sizeof LAVA_MARK, "%7s %lu %d", word, &n, &st) >=
				        2 &&
				    n < nsteps) {
					if (strcmp(word, "begin") == 0)
						cur = (long)n;
					else if (strcmp(word, "end") == 0 && cur == (long)n) {
						o->steps[n].exit_status = st;
						cur = -1;
					}
				} else if (cur >= 0) {
					step_add_line(&o->steps[cur], m);
				}
			} else if (lvl && strcmp(lvl, "results") == 0 && json_is_object(msg)) {
				note_result(msg, o);
			}
			json_decref(ent);
		}
		p = le + 1;
	}
	return LAB_OK;
}

/* ---- following a job ---- */

enum job_phase { PH_SUBMIT, PH_POLL, PH_WORKER, PH_LOG, PH_DONE };

struct lava_job {
	struct lava *lv;
	enum job_phase phase;
	struct http_req *req;
	struct loop_timer t;
	uint64_t delay_ms;
	uint64_t started_ms, queue_timeout_ms;
	char state[32];
	char health[32];
	char **steps;
	size_t nsteps;
	lava_submitted_cb sub;
	lava_done_cb done;
	void *arg;
	struct lava_outcome o;
	bool canceled_by_us;
	char *body;     /* the submission, until it is sent */
	bool in_flight; /* counted in lv->submitting */
};
static void submit_now(struct lava_job *j);
static void submit_next(struct lava *lv);

static void job_get(struct lava_job *j, const char *path, size_t max, http_done_cb cb);
static void on_poll(struct http_req *r, const struct http_result *res, void *arg);

static void finish(struct lava_job *j)
{
	j->phase = PH_DONE;
	j->done(j, &j->o, j->arg);
}

static void fail(struct lava_job *j, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct lava_job *j, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->o.msg, sizeof j->o.msg, fmt, ap);
	va_end(ap);
	j->o.rc = LAB_EINFRA;
	j->o.kind = kind;
	finish(j);
}

static void schedule_poll(struct lava_job *j)
{
	loop_timer_start(j->lv->loop, &j->t, j->delay_ms);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct lava_job *j = arg;
	if (j->phase == PH_SUBMIT) {
		submit_next(j->lv);
		return;
	}
	char *path = xasprintf("api/v0.2/jobs/%lld/", (long long)j->o.id);
	j->lv->st.polls++;
	job_get(j, path, 0, on_poll);
	free(path);
}

static void job_get(struct lava_job *j, const char *path, size_t max, http_done_cb cb)
{
	char *url = xasprintf("%s%s", j->lv->url, path);
	j->req = http_req_new(j->lv->http, "GET", url);
	http_req_header(j->req, j->lv->auth, true);
	http_req_header(j->req, "Accept: application/json", false);
	if (max)
		http_req_max_body(j->req, max);
	http_req_timeout(j->req, max ? 300000 : 30000, 10000);
	http_req_retry(j->req, 3, 1000, HTTP_RETRY_TRANSIENT);
	j->lv->st.requests++;
	free(url);
	if (http_req_start(j->req, cb, j) != LAB_OK) {
		j->req = NULL;
		fail(j, "lava-infra", "LAVA: cannot start a request to %s", j->lv->url);
	}
}

static void on_log(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct lava_job *j = arg;
	j->req = NULL;
	bool complete = strcmp(j->health, "Complete") == 0;
	if (res->rc != LAB_OK && complete) {
		fail(j, "lava-infra", "LAVA job %lld: fetching its log: %s", (long long)j->o.id,
		     res->err);
		return;
	}
	/* a job canceled before it started has no log: its health says enough */
	const char *kind_before = j->o.kind;
	if (res->rc == LAB_OK) {
		j->lv->st.log_bytes += res->body_len;
		lava_log_parse(res->body, res->body_len, (const char *const *)j->steps, j->nsteps,
		               &j->o);
	}
	if (complete) {
		j->o.kind = kind_before;
		j->o.rc = LAB_OK;
		finish(j);
		return;
	}
	if (strcmp(j->health, "Canceled") == 0)
		j->o.kind = j->canceled_by_us ? "device-offline" : "lava-canceled";
	if (!j->o.kind)
		j->o.kind = "lava-infra";
	if (!j->o.msg[0] || strcmp(j->health, "Canceled") == 0)
		snprintf(j->o.msg, sizeof j->o.msg, "LAVA job %lld ended %s%s", (long long)j->o.id,
		         j->health,
		         j->canceled_by_us ? ": no device took it within queue_timeout" : "");
	j->o.rc = LAB_EINFRA;
	finish(j);
}

static void fetch_log(struct lava_job *j)
{
	j->phase = PH_LOG;
	char *path = xasprintf("api/v0.2/jobs/%lld/logs/", (long long)j->o.id);
	job_get(j, path, j->lv->cfg.log_max, on_log);
	free(path);
}

static void on_worker(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct lava_job *j = arg;
	j->req = NULL;
	if (res->rc == LAB_OK)
		json_get(res->body, res->body_len, "worker_host", j->o.worker, sizeof j->o.worker,
		         NULL);
	fetch_log(j);
}

static void on_poll(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct lava_job *j = arg;
	j->req = NULL;
	if (res->rc != LAB_OK) {
		if (res->status == 404) {
			fail(j, "lava-infra", "LAVA job %lld is gone (HTTP 404)",
			     (long long)j->o.id);
			return;
		}
		/* the server is away for a moment: keep following */
		j->delay_ms = j->lv->cfg.poll_max_ms;
		schedule_poll(j);
		return;
	}
	char state[32] = "", health[32] = "";
	json_get(res->body, res->body_len, "state", state, sizeof state, NULL);
	json_get(res->body, res->body_len, "health", health, sizeof health, NULL);
	json_get(res->body, res->body_len, "actual_device", j->o.device, sizeof j->o.device, NULL);
	if (strcmp(j->o.device, "null") == 0)
		j->o.device[0] = '\0';
	if (strcmp(state, j->state) != 0) {
		lab_strlcpy(j->state, state, sizeof j->state);
		j->delay_ms = j->lv->cfg.poll_ms;
	} else {
		j->delay_ms = j->delay_ms * 3 / 2;
		uint64_t cap = strcmp(state, "Running") == 0 &&
		                       j->lv->cfg.poll_running_ms < j->lv->cfg.poll_max_ms
		                   ? j->lv->cfg.poll_running_ms
		                   : j->lv->cfg.poll_max_ms;
		if (j->delay_ms > cap)
			j->delay_ms = cap;
	}
	lab_strlcpy(j->health, health, sizeof j->health);
	if (strcmp(state, "Finished") == 0) {
		j->o.finished_ms = loop_now_ms(j->lv->loop);
		if (j->o.device[0]) {
			j->phase = PH_WORKER;
			char *path = xasprintf("api/v0.2/devices/%s/", j->o.device);
			job_get(j, path, 0, on_worker);
			free(path);
		} else {
			fetch_log(j);
		}
		return;
	}
	if ((strcmp(state, "Submitted") == 0) && j->queue_timeout_ms &&
	    loop_now_ms(j->lv->loop) - j->started_ms > j->queue_timeout_ms && !j->canceled_by_us) {
		j->canceled_by_us = true;
		lava_job_cancel(j);
	}
	schedule_poll(j);
}

static void on_submitted(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct lava_job *j = arg;
	j->req = NULL;
	j->in_flight = false;
	j->lv->submitting--;
	submit_next(j->lv);
	char id[32] = "";
	if (res->rc != LAB_OK ||
	    json_get(res->body, res->body_len, "job_ids.0", id, sizeof id, NULL) != LAB_OK) {
		/* LAVA's answer says why (invalid definition, no such device type ...) */
		bool html = res->body_len && res->body[0] == '<';
		fail(j, res->status >= 400 && res->status < 500 ? "lava-rejected" : "lava-infra",
		     "LAVA refused the job: %s%s%s%.300s", res->err[0] ? res->err : "HTTP",
		     res->status ? "" : " no answer", res->body_len && !html ? ": " : "",
		     res->body_len && !html ? res->body : "");
		if (res->status)
			snprintf(j->o.msg + strlen(j->o.msg), sizeof j->o.msg - strlen(j->o.msg),
			         " (status %ld)", res->status);
		return;
	}
	j->o.id = strtoll(id, NULL, 10);
	snprintf(j->o.url, sizeof j->o.url, "%sscheduler/job/%lld", j->lv->url, (long long)j->o.id);
	j->phase = PH_POLL;
	if (j->sub)
		j->sub(j, j->o.id, j->o.url, j->arg);
	j->delay_ms = j->lv->cfg.poll_ms;
	schedule_poll(j);
}

static struct lava_job *job_new(struct lava *lv, const char *const *steps, size_t nsteps,
                                uint64_t queue_timeout_ms, lava_done_cb done, void *arg)
{
	struct lava_job *j = xcalloc(1, sizeof *j);
	j->lv = lv;
	j->done = done;
	j->arg = arg;
	j->queue_timeout_ms = queue_timeout_ms;
	j->started_ms = loop_now_ms(lv->loop);
	j->steps = xcalloc(nsteps ? nsteps : 1, sizeof *j->steps);
	for (size_t i = 0; i < nsteps; i++)
		j->steps[i] = xstrdup(steps[i]);
	j->nsteps = nsteps;
	loop_timer_init(&j->t, on_timer, j);
	return j;
}

static void submit_now(struct lava_job *j)
{
	struct lava *lv = j->lv;
	char *url = xasprintf("%sapi/v0.2/jobs/", lv->url);
	j->req = http_req_new(lv->http, "POST", url);
	free(url);
	http_req_header(j->req, lv->auth, true);
	http_req_header(j->req, "Accept: application/json", false);
	http_req_body(j->req, j->body, strlen(j->body), "application/json");
	free(j->body);
	j->body = NULL;
	http_req_flags(j->req, HTTP_ANY_STATUS);
	/* not retried: a POST that reached LAVA made a job */
	http_req_timeout(j->req, 60000, 10000);
	lv->st.requests++;
	j->in_flight = true;
	lv->submitting++;
	if (http_req_start(j->req, on_submitted, j) != LAB_OK) {
		j->req = NULL;
		j->in_flight = false;
		lv->submitting--;
		/* from a loop callback, like every other outcome */
		j->delay_ms = 0;
		j->phase = PH_SUBMIT;
		fail(j, "lava-infra", "LAVA: cannot start the submission");
	}
}

static void submit_next(struct lava *lv)
{
	while (lv->nwaiting && lv->submitting < lv->cfg.submit_parallel) {
		struct lava_job *j = lv->waiting[0];
		memmove(lv->waiting, lv->waiting + 1, --lv->nwaiting * sizeof *lv->waiting);
		submit_now(j);
	}
}

int lava_job_submit(struct lava *lv, const char *definition, const char *const *steps,
                    size_t nsteps, uint64_t queue_timeout_ms, lava_submitted_cb sub,
                    lava_done_cb done, void *arg, struct lava_job **out, struct lab_err *e)
{
	LAB_UNUSED(e);
	struct lava_job *j = job_new(lv, steps, nsteps, queue_timeout_ms, done, arg);
	j->sub = sub;
	struct lab_buf body;
	lab_buf_init(&body, 0);
	lab_buf_printf(&body, "{\"definition\": ");
	json_buf_str(&body, definition);
	lab_buf_printf(&body, "}");
	j->body = xstrdup(lab_buf_cstr(&body));
	lab_buf_free(&body);
	lv->waiting = xreallocarray(lv->waiting, lv->nwaiting + 1, sizeof *lv->waiting);
	lv->waiting[lv->nwaiting++] = j;
	/* started from the loop, so no callback runs inside this call */
	loop_timer_start(lv->loop, &j->t, 0);
	*out = j;
	return LAB_OK;
}

int lava_job_attach(struct lava *lv, int64_t id, const char *const *steps, size_t nsteps,
                    uint64_t queue_timeout_ms, lava_done_cb done, void *arg, struct lava_job **out)
{
	struct lava_job *j = job_new(lv, steps, nsteps, queue_timeout_ms, done, arg);
	j->o.id = id;
	snprintf(j->o.url, sizeof j->o.url, "%sscheduler/job/%lld", lv->url, (long long)id);
	j->phase = PH_POLL;
	j->delay_ms = 0;
	schedule_poll(j);
	*out = j;
	return LAB_OK;
}

static void on_cancel(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	LAB_UNUSED(res);
	LAB_UNUSED(arg);
}

void lava_job_cancel(struct lava_job *j)
{
	if (!j->o.id)
		return;
	/* LAVA 2023.01 cancels with a GET on the job's cancel/ */
	char *url = xasprintf("%sapi/v0.2/jobs/%lld/cancel/", j->lv->url, (long long)j->o.id);
	struct http_req *r = http_req_new(j->lv->http, "GET", url);
	free(url);
	http_req_header(r, j->lv->auth, true);
	j->lv->st.requests++;
	if (http_req_start(r, on_cancel, NULL) != LAB_OK)
		http_req_cancel(r);
}

void lava_job_free(struct lava_job *j)
{
	if (!j)
		return;
	if (j->req)
		http_req_cancel(j->req);
	if (j->in_flight)
		j->lv->submitting--;
	for (size_t i = 0; i < j->lv->nwaiting; i++)
		if (j->lv->waiting[i] == j) {
			memmove(j->lv->waiting + i, j->lv->waiting + i + 1,
			        (--j->lv->nwaiting - i) * sizeof *j->lv->waiting);
			break;
		}
	free(j->body);
	loop_timer_stop(j->lv->loop, &j->t);
	for (size_t i = 0; i < j->nsteps; i++)
		free(j->steps[i]);
	free(j->steps);
	lava_outcome_free(&j->o);
	free(j);
}
