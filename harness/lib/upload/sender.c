/*
 * sender.c - draining the outbox on the loop: every due row of every target
 * at once (libcurl multi through http.h), each attempt charged in the store
 * before its request starts, judged by its kind and recorded after.  See
 * upload.h for the states and the retry policy.
 */
#include "upload_internal.h"
#include "rand.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Uniform in [0, 1) from the shared generator, seeded from the clock and pid once. */
static double jitter01(void)
{
	static struct rand_gen g;
	static bool seeded;
	if (!seeded) {
		rand_seed(&g, lab_now_ns() ^ ((uint64_t)getpid() << 32));
		seeded = true;
	}
	return rand_uniform(&g);
}

/* Wait before attempt number `attempts + 1`: backoff * 2^(attempts-1),
 * capped, then "equal jitter" (half fixed, half random) so that a lab of
 * controllers does not hammer a recovering server in lockstep. */
static uint64_t backoff_ms(const struct upload_target *t, int64_t attempts)
{
	double d = (double)t->backoff_ms;
	for (int64_t i = 1; i < attempts && d < (double)t->max_backoff_ms; i++)
		d *= 2;
	if (t->max_backoff_ms && d > (double)t->max_backoff_ms)
		d = (double)t->max_backoff_ms;
	return (uint64_t)(d / 2 + d / 2 * jitter01());
}

enum upload_verdict upload_judge_default(const struct upload_job *j, const struct http_result *res)
{
	LAB_UNUSED(j);
	long st = res->status;
	if (res->rc == LAB_OK && st >= 200 && st <= 299)
		return UPLOAD_SENT;
	if (st == 0 || st == 408 || st == 425 || st == 429 || st >= 500)
		return UPLOAD_RETRY;
	if (res->rc == LAB_EPROTO && st >= 300 && st < 400)
		return UPLOAD_REJECTED; /* refused redirect */
	if (st >= 300 && st < 400)
		return UPLOAD_REJECTED;
	return st >= 400 ? UPLOAD_REJECTED : UPLOAD_RETRY;
}

struct sender;

struct flight {
	struct sender *sd;
	int64_t id;
	int64_t attempts;          /* after charging this one */
	struct upload_target own;  /* parsed from the row's spec */
	const struct upload_target *t;
	struct upload_run run;
	char *idem_key, *item, *target, *kind, *state;
	char *spool, *secret;
	struct upload_job job;
	struct http_req *req;
	struct flight *next;
};

struct sender {
	struct store *s;
	struct loop *l;
	struct http *h;
	const struct upload_send_opts *o;
	struct upload_stats *st;
	struct upload_targets over;
	char *spool_root;
	uint64_t deadline_ms;  /* monotonic; 0 = one pass */
	int parallel, inflight;
	int64_t *started;
	size_t nstarted;
	struct flight *flights;
	struct loop_timer kick, wake;
	bool done;
	int fatal;
	struct lab_err err;
};

static bool was_started(const struct sender *sd, int64_t id)
{
	for (size_t i = 0; i < sd->nstarted; i++)
		if (sd->started[i] == id)
			return true;
	return false;
}

static bool in_flight(const struct sender *sd, int64_t id)
{
	for (const struct flight *f = sd->flights; f; f = f->next)
		if (f->id == id)
			return true;
	return false;
}

static void progress(struct sender *sd, struct flight *f, const char *state, enum upload_verdict v,
		     long status, const char *msg)
{
	if (!sd->o->progress)
		return;
	struct upload_row r = {
		.id = f->id, .run_id = f->run.id, .run_uuid = f->run.uuid, .target = f->target,
		.kind = f->kind, .idem_key = f->idem_key, .item = f->item, .state = state,
		.attempts = f->attempts,
	};
	sd->o->progress(sd->o->progress_arg, &r, v, status, msg);
}

static void flight_free(struct sender *sd, struct flight *f)
{
	for (struct flight **pp = &sd->flights; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->own.name)
		upload_target_free(&f->own);
	free(f->idem_key);
	free(f->item);
	free(f->target);
	free(f->kind);
	free(f->state);
	free(f->spool);
	if (f->secret) {
		memset(f->secret, 0, strlen(f->secret));
		free(f->secret);
	}
	free(f);
}

/* Record the outcome of an attempt.  The attempt was charged before it started. */
static void conclude(struct sender *sd, struct flight *f, enum upload_verdict v, long status,
		     const char *why)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s", why ? why : "");
	upload_redact(msg, sizeof msg, f->secret);
	const char *state = "pending";
	if (v == UPLOAD_SENT) {
		state = "sent";
		sd->st->sent++;
	} else if (v == UPLOAD_REJECTED) {
		state = "failed";
		sd->st->rejected++;
	} else if (f->t && f->t->max_attempts && f->attempts >= f->t->max_attempts) {
		char m2[512];
		snprintf(m2, sizeof m2, "gave up after %lld attempts: %.440s", (long long)f->attempts, msg);
		lab_strlcpy(msg, m2, sizeof msg);
		state = "failed";
		v = UPLOAD_REJECTED;
		sd->st->rejected++;
	} else {
		sd->st->retry++;
	}
	char now[80];
	lab_utc_iso(now, sizeof now, upload_wall_ms() / 1000);
	struct lab_err re = {0};
	int rc = store_outbox_record(sd->s, f->id, state, now, msg, &re);
	if (rc && !sd->fatal) {
		/* The row stays pending with its attempt charged: a later re-send is
		 * idempotent, so the worst case is one more request, never a loss. */
		sd->fatal = rc;
		sd->err = re;
	}
	progress(sd, f, state, v, status, msg);
}

/* The first non-empty line of an answer, control characters blanked. */
static void first_line(const char *body, size_t len, char *out, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; body && i < len && o + 1 < n; i++) {
		unsigned char ch = (unsigned char)body[i];
		if (ch == '\n' || ch == '\r') {
			if (o)
				break;
			continue;
		}
		out[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	out[o] = '\0';
}

static void pump(struct sender *sd);

static void kick_cb(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	pump(arg);
}

static void on_done(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct flight *f = arg;
	struct sender *sd = f->sd;
	f->req = NULL;
	enum upload_verdict v = f->t->kind->judge ? f->t->kind->judge(&f->job, res)
						  : upload_judge_default(&f->job, res);
	char why[512], line[200];
	first_line(res->body, res->body_len, line, sizeof line);
	if (res->err && *res->err)
		snprintf(why, sizeof why, "%s", res->err);
	else
		snprintf(why, sizeof why, "HTTP %ld%s%s", res->status, line[0] ? ": " : "", line);
	conclude(sd, f, v, res->status, why);
	sd->inflight--;
	flight_free(sd, f);
	/* Start the next ones from a timer, not from inside curl's completion. */
	loop_timer_start(sd->l, &sd->kick, 0);
}

/* Charge the attempt and set the next time, before anything goes out. */
static int charge(struct sender *sd, struct flight *f)
{
	int64_t ms = upload_wall_ms();
	uint64_t wait = f->t ? backoff_ms(f->t, f->attempts) : 60000;
	char next[80];
	upload_iso_ms(next, sizeof next, ms + (int64_t)wait);
	return store_outbox_charge(sd->s, f->id, f->attempts, next, &sd->err);
}

static const struct upload_target *override_target(const struct sender *sd, const char *name)
{
	for (size_t i = 0; i < sd->over.n; i++)
		if (strcmp(sd->over.v[i].name, name) == 0)
			return &sd->over.v[i];
	return NULL;
}

/* Start one row.  Returns false when the sender must stop (store error). */
static bool start_row(struct sender *sd, const struct store_outbox_row *r)
{
	const struct store_outbox_row row = *r;
	const char *spec = row.spec;
	struct flight *f = xcalloc(1, sizeof *f);
	f->sd = sd;
	f->id = row.id;
	f->attempts = row.attempts + 1;
	f->idem_key = xstrdup(row.idem_key);
	f->item = xstrdup(row.item);
	f->target = xstrdup(row.target);
	f->kind = xstrdup(row.kind);
	f->next = sd->flights;
	sd->flights = f;
	sd->started = xreallocarray(sd->started, sd->nstarted + 1, sizeof *sd->started);
	sd->started[sd->nstarted++] = row.id;

	struct lab_err e = {0};
	enum upload_verdict fail = UPLOAD_RETRY;
	int rc = LAB_OK;
	f->t = override_target(sd, row.target);
	if (!f->t && spec && *spec) {
		struct cfg_node *n = NULL;
		char name[160];
		snprintf(name, sizeof name, "outbox row %lld", (long long)row.id);
		rc = cfg_parse_buffer(name, spec, strlen(spec), &n, &e);
		if (!rc)
			rc = upload_target_parse(n, &f->own, &e);
		cfg_free(n);
		if (rc) {
			if (f->own.name)
				upload_target_free(&f->own);
			memset(&f->own, 0, sizeof f->own);
		} else {
			f->t = &f->own;
		}
		if (rc)
			fail = UPLOAD_REJECTED;
	} else if (!f->t) {
		rc = lab_err_set(&e, LAB_EUSAGE, "no configuration for target '%s' (give --config FILE)",
				 row.target);
		fail = UPLOAD_REJECTED;
	}
	if (!rc && strcmp(f->t->kind->name, row.kind) != 0) {
		rc = lab_err_set(&e, LAB_EUSAGE, "target '%s' is now of kind %s, the row was queued as %s",
				 row.target, f->t->kind->name, row.kind);
		fail = UPLOAD_REJECTED;
	}
	if (!rc)
		rc = upload_run_load(sd->s, row.run_id, &f->run, &e);
	else
		f->run.id = row.run_id;

	/* From here the attempt counts, whatever happens to it. */
	if (charge(sd, f) != LAB_OK) {
		sd->fatal = LAB_EINFRA;
		flight_free(sd, f);
		return false;
	}
	sd->st->attempted++;
	if (!rc) {
		if (f->t->token_env)
			rc = upload_secret_env(f->t->token_env, &f->secret, &e);
		else if (f->t->token_file)
			rc = upload_secret_file(f->t->token_file, &f->secret, &e);
	}
	if (!rc) {
		f->spool = xasprintf("%s/%s", sd->spool_root, f->run.uuid);
		if (lab_mkdir_p(f->spool, 0750) != LAB_OK)
			rc = lab_err_set(&e, LAB_EINFRA, "cannot create spool %s: %s", f->spool,
					 strerror(errno));
	}
	if (!rc) {
		f->job = (struct upload_job){.s = sd->s, .t = f->t, .run = &f->run,
					     .idem_key = f->idem_key, .item = f->item,
					     .spool = f->spool, .secret = f->secret};
		rc = f->t->kind->request(sd->h, &f->job, &f->req, &e);
	}
	if (!rc) {
		http_req_timeout(f->req, f->t->timeout_ms, f->t->connect_timeout_ms);
		if (f->t->ca_file)
			http_req_ca_file(f->req, f->t->ca_file);
		http_req_follow(f->req, 3);
		http_req_flags(f->req, HTTP_ANY_STATUS);
		http_req_max_body(f->req, 256 * 1024);
		rc = http_req_start(f->req, on_done, f);
		if (rc) {
			f->req = NULL;
			lab_err_set(&e, rc, "cannot start the request");
		}
	}
	if (rc) {
		if (f->req) {
			http_req_cancel(f->req);
			f->req = NULL;
		}
		conclude(sd, f, fail, 0, e.msg[0] ? e.msg : lab_strerror(rc));
		flight_free(sd, f);
		return !sd->fatal;
	}
	sd->inflight++;
	return true;
}

static void wake_cb(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	pump(arg);
}

/* One pass over the outbox: start every eligible row (as many as may be
 * in flight), note when the first one that is not due yet will be. */
struct pass {
	struct sender *sd;
	int64_t now;
	int64_t earliest; /* next_at of the first row that is not due yet */
};

static bool pass_row(const struct store_outbox_row *r, void *arg)
{
	struct pass *p = arg;
	struct sender *sd = p->sd;
	const struct upload_send_opts *o = sd->o;
	if (sd->fatal)
		return false;
	int64_t next = upload_parse_iso_ms(r->next_at);
	bool started = was_started(sd, r->id);
	if (in_flight(sd, r->id))
		return true;
	bool eligible;
	if (strcmp(r->state, "failed") == 0)
		eligible = !started; /* once per invocation */
	else if (!sd->deadline_ms)
		eligible = !started && (o->now || next <= p->now);
	else
		eligible = (!started && o->now) || next <= p->now;
	if (!eligible) {
		if (sd->deadline_ms && strcmp(r->state, "pending") == 0 &&
		    (p->earliest < 0 || next < p->earliest))
			p->earliest = next;
		return true;
	}
	if (sd->inflight >= sd->parallel) {
		p->earliest = p->now; /* a completion will pump again */
		return true;
	}
	return start_row(sd, r);
}

static void pump(struct sender *sd)
{
	if (sd->done)
		return;
	struct pass p = {.sd = sd, .now = upload_wall_ms(), .earliest = -1};
	if (!sd->fatal) {
		struct lab_err re = {0};
		int rc = store_outbox_pending(sd->s, sd->o->run_id, sd->o->failed_too, pass_row, &p, &re);
		if (rc && !sd->fatal) {
			sd->fatal = rc;
			sd->err = re;
		}
	}
	int64_t earliest = p.earliest;
	if (sd->inflight > 0)
		return;
	if (!sd->fatal && sd->deadline_ms && earliest >= 0) {
		uint64_t mono = lab_now_ms();
		int64_t wait = earliest - upload_wall_ms();
		if (wait < 0)
			wait = 0;
		if (mono + (uint64_t)wait <= sd->deadline_ms) {
			loop_timer_start(sd->l, &sd->wake, (uint64_t)wait);
			return;
		}
	}
	sd->done = true;
}

int upload_send(struct store *s, struct loop *l, const struct upload_send_opts *o,
		struct upload_stats *st, struct lab_err *e)
{
	struct upload_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	struct sender sd = {.s = s, .l = l, .o = o, .st = st};
	int rc = upload_targets_parse(o->targets, &sd.over, e);
	if (rc)
		return rc;
	if (o->spool_dir) {
		sd.spool_root = xstrdup(o->spool_dir);
	} else {
		const char *p = store_path(s);
		const char *slash = strrchr(p, '/');
		if (strcmp(p, ":memory:") == 0 || !*p) {
			upload_targets_free(&sd.over);
			return lab_err_set(e, LAB_EUSAGE, "an in-memory store needs a spool directory");
		}
		sd.spool_root = slash ? xasprintf("%.*s/uploads", (int)(slash - p), p)
				      : xstrdup("uploads");
	}
	sd.h = http_new(l, e);
	if (!sd.h) {
		free(sd.spool_root);
		upload_targets_free(&sd.over);
		return LAB_EINFRA;
	}
	sd.parallel = o->parallel > 0 ? o->parallel : UPLOAD_DEFAULT_PARALLEL;
	sd.deadline_ms = o->max_time_ms ? lab_now_ms() + o->max_time_ms : 0;
	loop_timer_init(&sd.kick, kick_cb, &sd);
	loop_timer_init(&sd.wake, wake_cb, &sd);
	pump(&sd);
	while (!sd.done) {
		if (loop_run_once(l, -1) < 0 || loop_stopped(l))
			break;
		if (sd.inflight == 0 && !loop_timer_pending(&sd.kick) && !loop_timer_pending(&sd.wake))
			pump(&sd);
	}
	loop_timer_stop(l, &sd.kick);
	loop_timer_stop(l, &sd.wake);
	/* Interrupted (loop stopped): abandon what is in flight; those rows stay
	 * pending with the attempt charged and go again later. */
	while (sd.flights) {
		struct flight *f = sd.flights;
		if (f->req)
			http_req_cancel(f->req);
		flight_free(&sd, f);
	}
	http_free(sd.h);
	for (size_t i = 0; i < sd.nstarted; i++) {
		struct lab_err qe = {0};
		bool sent = false;
		if (store_outbox_is_sent(s, sd.started[i], &sent, &qe) != LAB_OK || !sent)
			st->unsent++;
	}
	free(sd.started);
	free(sd.spool_root);
	upload_targets_free(&sd.over);
	if (sd.fatal) {
		*e = sd.err;
		return sd.fatal;
	}
	return LAB_OK;
}
