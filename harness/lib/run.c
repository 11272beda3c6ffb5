/* run.c - see run.h. */
#include "run.h"
#include "board.h"
#include "loop.h"
#include "plan.h"
#include "power.h"
#include "proto.h"
#include "upload.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum job_status { JOB_PENDING, JOB_RUNNING, JOB_OK, JOB_INFRA, JOB_MISMATCH, JOB_SKIPPED };

/* What one agent invocation produced (samples are only stored after `done`). */
struct collect {
	struct store_sample *samples;
	size_t nsamples;
	struct store_counter *counters;
	size_t ncounters;
	bool have_mode, have_identity;
	int fua, write_cache, cqe;
	char vmode[32];
	struct store_part part;
	char *strs[64]; /* strings owned for part fields */
	size_t nstrs;
	char kernel[128];
	char error[256];
	double wall_time;
};

struct runner;

struct rboard {
	struct runner *r;
	struct board *b;
	struct plan_board *pb;
	const struct board_cfg *cfg;
	size_t cur;            /* current slot */
	int booted_job;        /* job index the board is booted for, -1 none */
	int64_t board_id;
	int64_t part_id;
	int64_t kernel_id;
	size_t wl;             /* workload index within the slot */
	uint64_t wl_start_ns;
	size_t sysfs_i;        /* next sysfs write of the recipe */
	struct collect col;
	/* power-fail workload (the controller cuts power while the agent writes) */
	int pf_phase;          /* 0 idle, 1 writing, 2 cutting, 3 booting, 4 checking */
	int64_t pf_acked;      /* highest acknowledged record so far */
	struct loop_timer pf_timer;
	bool done;
};

struct runner {
	struct loop *loop;
	struct lab_cfg *lab;
	struct store *store;
	struct plan *plan;
	const struct run_opts *o;
	struct run_result *res;
	struct rboard *rb;
	size_t nrb;
	size_t nstarted;       /* boards started so far (plan.parallel) */
	size_t active;
	bool stopping;
	struct loop_timer budget;
	char *transcript_dir;
	struct lab_err err; /* first store error: fatal for the run */
};

static void powerfail_start(struct rboard *rb);
static void start_board(void *arg);
static void sysfs_step(struct rboard *rb);

static void next_slot(struct rboard *rb);
static void run_workload(struct rboard *rb);

static void logf_(struct runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct runner *r, const char *fmt, ...)
{
	if (!r->o->log)
		return;
	va_list ap;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%H:%M:%S", &tm);
	fprintf(r->o->log, "[%s] ", ts);
	va_start(ap, fmt);
	vfprintf(r->o->log, fmt, ap);
	va_end(ap);
	fputc('\n', r->o->log);
	fflush(r->o->log);
}

int run_mode_from_verified(int fua, int write_cache, int cqe)
{
	if (fua < 0 || write_cache < 0 || cqe < 0)
		return -1;
	if (fua && !write_cache)
		return -1; /* FUA without a write cache is not one of our modes */
	if (!fua && !write_cache)
		return -1; /* write-through: unsafe, not a mode we test */
	if (fua)
		return cqe ? MODE_FUA_CQE : MODE_FUA;
	return cqe ? MODE_CACHE_NOFUA_CQE : MODE_CACHE_NOFUA;
}

/* ---- bookkeeping ---- */

static struct plan_job *cur_job(struct rboard *rb)
{
	return &rb->r->plan->jobs[rb->pb->slots[rb->cur].job];
}

static const struct plan_slot *cur_slot(struct rboard *rb)
{
	return &rb->pb->slots[rb->cur];
}

static void collect_reset(struct collect *c)
{
	for (size_t i = 0; i < c->nsamples; i++) {
		free((char *)c->samples[i].metric);
		free((char *)c->samples[i].unit);
	}
	for (size_t i = 0; i < c->ncounters; i++)
		free((char *)c->counters[i].name);
	free(c->samples);
	free(c->counters);
	for (size_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	memset(c, 0, sizeof *c);
	c->fua = c->write_cache = c->cqe = -1;
	c->wall_time = -1;
}

static void store_fail(struct runner *r, struct lab_err *e)
{
	/* A store failure is fatal: stop scheduling, keep what is committed. */
	if (!r->err.msg[0])
		lab_err_set(&r->err, LAB_EINFRA, "results store: %s", e->msg);
	r->stopping = true;
}

static void record_event(struct rboard *rb, const char *kind, const char *stage, const char *msg)
{
	struct runner *r = rb->r;
	struct lab_err e = {0};
	int64_t job_id = 0;
	if (rb->cur < rb->pb->nslots)
		job_id = cur_job(rb)->db_id;
	if (store_event(r->store, r->res->run_id, job_id, rb->board_id, kind, stage, msg, &e))
		store_fail(r, &e);
	r->res->events++;
	logf_(r, "%s: %s%s%s: %s", rb->cfg->name, kind, stage ? " in " : "", stage ? stage : "",
	      msg ? msg : "");
}

static void finish_job(struct rboard *rb, struct plan_job *j, int status, const char *why)
{
	struct runner *r = rb->r;
	static const char *const names[] = {"pending", "running", "ok", "infra", "mode-mismatch", "skipped"};
	if (j->status >= JOB_OK)
		return;
	j->status = status;
	switch (status) {
	case JOB_OK: r->res->jobs_ok++; break;
	case JOB_INFRA: r->res->jobs_infra++; break;
	case JOB_MISMATCH: r->res->jobs_mismatch++; break;
	default: r->res->jobs_skipped++; break;
	}
	if (j->db_id) {
		struct lab_err e = {0};
		if (store_job_finish(r->store, j->db_id, names[status], &e))
			store_fail(r, &e);
	}
	logf_(r, "%s: job %s/%s %s%s%s", rb->cfg->name, j->suite->name, lab_mode_names[j->mode],
	      names[status], why ? ": " : "", why ? why : "");
}

/* ---- board events ---- */

static void on_board_event(struct board *b, const char *kind, const char *stage, const char *msg,
			   void *arg)
{
	LAB_UNUSED(b);
	record_event(arg, kind, stage, msg);
}

static void on_transcript(struct board *b, const char *path, const char *sha, uint64_t bytes,
			  int boot_n, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct lab_err e = {0};
	int64_t job_id = rb->cur < rb->pb->nslots ? cur_job(rb)->db_id : 0;
	if (store_transcript(rb->r->store, rb->r->res->run_id, job_id, rb->board_id, path, sha,
			     (int64_t)bytes, boot_n, &e))
		store_fail(rb->r, &e);
}

/* ---- finishing ---- */

static void board_finished(struct rboard *rb)
{
	if (rb->done)
		return;
	rb->done = true;
	struct runner *r = rb->r;
	if (board_quarantined(rb->b))
		r->res->boards_quarantined++;
	if (--r->active == 0) {
		loop_stop(r->loop);
		return;
	}
	/* plan.parallel: the next waiting board takes the freed place */
	if (r->nstarted < r->nrb)
		loop_defer(r->loop, start_board, &r->rb[r->nstarted++]);
}

static void on_powered_off(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(fail);
	struct rboard *rb = arg;
	if (rc)
		record_event(rb, "power", "powering-off", msg ? msg : "power off failed");
	board_finished(rb);
}

static void skip_rest(struct rboard *rb, const char *why)
{
	for (size_t k = rb->cur; k < rb->pb->nslots; k++) {
		struct plan_job *j = &rb->r->plan->jobs[rb->pb->slots[k].job];
		if (j->status < JOB_OK)
			finish_job(rb, j, JOB_SKIPPED, why);
	}
	rb->cur = rb->pb->nslots;
}

static void end_board(struct rboard *rb)
{
	if (rb->r->stopping && rb->cur < rb->pb->nslots)
		skip_rest(rb, rb->r->res->budget_exhausted ? "time budget exhausted" : "run stopped");
	if (board_power_off(rb->b, on_powered_off, rb) != LAB_OK)
		board_finished(rb);
}

/* A slot failed for an infrastructure reason: retry once after a power
 * cycle, then give up the job; a quarantined board gives up everything. */
static void slot_failed(struct rboard *rb, const char *kind, const char *msg)
{
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	rb->booted_job = -1;
	collect_reset(&rb->col);
	board_health_fail(rb->b, msg);
	j->failures++;
	if (board_quarantined(rb->b)) {
		record_event(rb, "quarantine", NULL, "board quarantined: remaining jobs skipped");
		finish_job(rb, j, JOB_INFRA, msg);
		skip_rest(rb, "board quarantined");
		end_board(rb);
		return;
	}
	if (j->failures > (r->o->slot_retries >= 0 ? r->o->slot_retries : 1)) {
		finish_job(rb, j, strcmp(kind, "mode-mismatch") == 0 ? JOB_MISMATCH : JOB_INFRA, msg);
		rb->cur++;
	} else {
		record_event(rb, "retry", NULL, "retrying the iteration after a power cycle");
	}
	next_slot(rb);
}

/* ---- agent message collection ---- */

static char *own(struct collect *c, const char *s)
{
	if (!s || c->nstrs >= LAB_ARRAY_SIZE(c->strs))
		return NULL;
	return c->strs[c->nstrs++] = xstrdup(s);
}

static int geti(const struct proto_msg *m, const char *k)
{
	int64_t v;
	return proto_get_i64(m, k, &v) == 0 ? (int)v : -1;
}

static int64_t geti64(const struct proto_msg *m, const char *k)
{
	int64_t v;
	return proto_get_i64(m, k, &v) == 0 ? v : -1;
}

static void on_agent_msg(struct board *b, const struct proto_msg *m, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct collect *c = &rb->col;
	if (strcmp(m->kind, "sample") == 0) {
		double v;
		const char *metric = proto_get(m, "metric");
		const char *unit = proto_get(m, "unit");
		if (!metric || !unit || proto_get_double(m, "value", &v) != 0 || !isfinite(v)) {
			snprintf(c->error, sizeof c->error, "malformed sample line (seq %llu)",
				 (unsigned long long)m->seq);
			return;
		}
		c->samples = xreallocarray(c->samples, c->nsamples + 1, sizeof *c->samples);
		c->samples[c->nsamples++] = (struct store_sample){xstrdup(metric), v, xstrdup(unit)};
		if (strcmp(metric, "wall_time") == 0)
			c->wall_time = v;
	} else if (strcmp(m->kind, "counter") == 0) {
		const char *name = proto_get(m, "name");
		int64_t v = geti64(m, "value");
		if (!name || v < 0)
			return;
		if (rb->pf_phase == 1 && strcmp(name, "acked") == 0) {
			/* Acknowledgements stream while the writer runs: keep only the latest. */
			if (v > rb->pf_acked)
				rb->pf_acked = v;
			return;
		}
		/* One value per name and iteration (the store's key): a repeated line replaces. */
		for (size_t i = 0; i < c->ncounters; i++) {
			if (strcmp(c->counters[i].name, name) == 0) {
				c->counters[i].value = v;
				return;
			}
		}
		c->counters = xreallocarray(c->counters, c->ncounters + 1, sizeof *c->counters);
		c->counters[c->ncounters++] = (struct store_counter){xstrdup(name), v};
	} else if (strcmp(m->kind, "mode") == 0) {
		c->have_mode = true;
		c->fua = geti(m, "fua");
		c->write_cache = geti(m, "write_cache");
		c->cqe = geti(m, "cqe");
		const char *vm = proto_get(m, "mode");
		lab_strlcpy(c->vmode, vm ? vm : "unknown", sizeof c->vmode);
	} else if (strcmp(m->kind, "identity") == 0) {
		struct store_part *p = &c->part;
		c->have_identity = true;
		store_part_init(p);
		p->cid = own(c, proto_get(m, "cid"));
		p->manfid = own(c, proto_get(m, "manfid"));
		p->oemid = own(c, proto_get(m, "oemid"));
		p->name = own(c, proto_get(m, "name"));
		p->prv = own(c, proto_get(m, "prv"));
		p->serial = own(c, proto_get(m, "serial"));
		p->date = own(c, proto_get(m, "date"));
		p->fwrev = own(c, proto_get(m, "fwrev"));
		p->ext_csd_rev = geti(m, "ext_csd_rev");
		p->capacity_bytes = geti64(m, "capacity_bytes");
		p->cache_kib = geti64(m, "cache_kib");
		p->rel_wr_param = geti(m, "rel_wr_param");
		p->rel_sectors = geti(m, "rel_sectors");
		p->cmdq_support = geti(m, "cmdq_support");
		p->cmdq_depth = geti(m, "cmdq_depth");
		p->ext_csd_hex = own(c, proto_get(m, "ext_csd"));
		const char *k = proto_get(m, "kernel");
		lab_strlcpy(c->kernel, k ? k : "", sizeof c->kernel);
	} else if (strcmp(m->kind, "error") == 0) {
		const char *code = proto_get(m, "code");
		const char *msg = proto_get(m, "msg");
		/* Missing tracefs is worth an event but does not fail the workload. */
		if (code && strcmp(code, "no-tracefs") == 0) {
			record_event(rb, "info", "running", "agent: no tracefs, command counts not available");
			return;
		}
		/* powerfail-check reports lost records as an error line too: that is
		 * the result being measured, taken from its counters, not a failure. */
		if (code && strcmp(code, "integrity") == 0 && rb->pf_phase == 4)
			return;
		snprintf(c->error, sizeof c->error, "agent error %s: %s", code ? code : "?",
			 msg ? msg : "");
	}
}

/* ---- the per-slot pipeline ---- */

/* One workload iteration is one agent command (timeouts.command); the
 * precondition is bounded by the whole job's budget (timeouts.job). */
static uint64_t agent_timeout(struct rboard *rb)
{
	const struct board_type *t = rb->cfg->type;
	return t && t->timeouts.command_ms ? t->timeouts.command_ms : 3600000;
}

static uint64_t job_timeout(struct rboard *rb)
{
	const struct board_type *t = rb->cfg->type;
	return t && t->timeouts.job_ms ? t->timeouts.job_ms : 8 * 3600000ull;
}

static void append_arg(struct lab_buf *b, const char *k, const char *v)
{
	/* Values are passed to a POSIX shell: single-quote anything unusual. */
	bool plain = *v != '\0';
	for (const char *p = v; *p; p++)
		if (!(strchr("._/:,+-", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			plain = false;
	lab_buf_printf(b, " %s=", k);
	if (plain) {
		lab_buf_printf(b, "%s", v);
		return;
	}
	lab_buf_append(b, "'", 1);
	for (const char *p = v; *p; p++) {
		if (*p == '\'')
			lab_buf_append(b, "'\\''", 4);
		else
			lab_buf_append(b, p, 1);
	}
	lab_buf_append(b, "'", 1);
}

static void on_workload_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	struct collect *c = &rb->col;
	if (rc != LAB_OK || c->error[0]) {
		const char *why = c->error[0] ? c->error : msg ? msg : lab_strerror(rc);
		char *m = xasprintf("%s iteration %d: %s", w->name, s->iteration, why);
		record_event(rb, rc ? board_fail_name(fail) : "agent-protocol", "running", m);
		slot_failed(rb, rc ? board_fail_name(fail) : "agent-protocol", m);
		free(m);
		return;
	}
	if (c->nsamples == 0) {
		char *m = xasprintf("%s iteration %d: the agent reported no samples", w->name, s->iteration);
		record_event(rb, "agent-protocol", "running", m);
		slot_failed(rb, "agent-protocol", m);
		free(m);
		return;
	}
	/* The reliable-write count is part of mode verification (docs/running.md). */
	for (size_t i = 0; i < c->ncounters; i++) {
		if (strcmp(c->counters[i].name, "reliable_writes") != 0)
			continue;
		bool fua = lab_mode_fua(j->mode);
		if ((!fua && c->counters[i].value > 0) || (fua && c->counters[i].value == 0 &&
							    strcmp(w->name, "androbench") != 0)) {
			char *m = xasprintf("%s iteration %d: %lld reliable writes in mode %s: the running "
					    "kernel does not do what the mode requires; samples discarded",
					    w->name, s->iteration, (long long)c->counters[i].value,
					    lab_mode_names[j->mode]);
			record_event(rb, "mode-mismatch", "running", m);
			finish_job(rb, j, JOB_MISMATCH, m);
			free(m);
			collect_reset(c);
			rb->booted_job = -1;
			rb->cur++;
			next_slot(rb);
			return;
		}
	}
	double dur = c->wall_time >= 0 ? c->wall_time : (double)(lab_now_ns() - rb->wl_start_ns) / 1e9;
	struct lab_err e = {0};
	if (store_iteration_write(r->store, j->db_id, w->name, s->iteration, dur, 0, c->samples,
				  c->nsamples, c->counters, c->ncounters, NULL, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	r->res->iterations++;
	r->res->samples += (int)c->nsamples;
	if (r->o->verbose)
		logf_(r, "%s: %s %s iteration %d: %zu samples", rb->cfg->name, lab_mode_names[j->mode],
		      w->name, s->iteration, c->nsamples);
	collect_reset(c);
	rb->wl++;
	run_workload(rb);
}

/* ---- the power-fail workload ----
 * One iteration: the agent writes fsync'd records and acknowledges each; at a
 * random moment (seeded: suite seed, board, iteration) the controller cuts the
 * power, boots the same mode again, verifies it, and has the agent check that
 * every acknowledged record survived.  Lost or corrupt acknowledged records
 * are a result (the part is not safe in this mode), not an infrastructure error. */

static const char *wl_arg(const struct workload_cfg *w, const char *key)
{
	if (!w->args || w->args->kind != CFG_MAP)
		return NULL;
	const struct cfg_node *v = cfg_map_get(w->args, key);
	return v && v->kind == CFG_SCALAR ? v->value : NULL;
}

static uint64_t wl_ms(const struct workload_cfg *w, const char *key, uint64_t def)
{
	const char *v = wl_arg(w, key);
	uint64_t ms;
	if (v && opt_parse_duration(v, &ms) == 0)
		return ms;
	return def;
}

static void pf_args(struct lab_buf *b, const struct workload_cfg *w, const char *skip1, const char *skip2)
{
	if (!w->args || w->args->kind != CFG_MAP)
		return;
	for (size_t i = 0; i < w->args->n; i++) {
		const char *k = w->args->keys[i]->value;
		if (w->args->items[i]->kind != CFG_SCALAR || strcmp(k, "cut_min") == 0 ||
		    strcmp(k, "cut_max") == 0 || (skip1 && strcmp(k, skip1) == 0) ||
		    (skip2 && strcmp(k, skip2) == 0))
			continue;
		append_arg(b, k, w->args->items[i]->value);
	}
}

static void pf_fail(struct rboard *rb, int rc, enum board_fail fail, const char *what, const char *msg)
{
	loop_timer_stop(rb->r->loop, &rb->pf_timer);
	rb->pf_phase = 0;
	const char *kind = rc ? board_fail_name(fail) : "agent-protocol";
	char *m = xasprintf("powerfail %s: %s", what, rb->col.error[0] ? rb->col.error : msg ? msg : "failed");
	record_event(rb, kind, "running", m);
	slot_failed(rb, kind, m);
	free(m);
}

static int64_t counter_value(const struct collect *c, const char *name)
{
	for (size_t i = 0; i < c->ncounters; i++)
		if (strcmp(c->counters[i].name, name) == 0)
			return c->counters[i].value;
	return -1;
}

static void pf_check_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct runner *r = rb->r;
	struct collect *c = &rb->col;
	if (rc != LAB_OK || c->error[0]) {
		pf_fail(rb, rc, fail, "check", msg);
		return;
	}
	rb->pf_phase = 0;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	int64_t acked = counter_value(c, "acked"), lost = counter_value(c, "lost");
	int64_t corrupt = counter_value(c, "corrupt");
	if (acked < 0 || lost < 0 || corrupt < 0) {
		pf_fail(rb, LAB_OK, FAIL_AGENT_PROTOCOL, "check", "the check reported no acked/lost/corrupt counts");
		return;
	}
	struct store_sample smp[3] = {
		{"acked_records", (double)acked, "records"},
		{"lost_records", (double)lost, "records"},
		{"corrupt_records", (double)corrupt, "records"},
	};
	struct lab_err e = {0};
	if (store_iteration_write(r->store, j->db_id, "powerfail", s->iteration,
				  (double)(lab_now_ns() - rb->wl_start_ns) / 1e9, 0, smp, 3, c->counters,
				  c->ncounters, NULL, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	r->res->iterations++;
	r->res->samples += 3;
	if (lost > 0 || corrupt > 0) {
		r->res->integrity_failures++;
		logf_(r, "%s: DATA LOSS in %s iteration %d: %lld of %lld acknowledged records lost, %lld corrupt",
		      rb->cfg->name, lab_mode_names[j->mode], s->iteration, (long long)lost,
		      (long long)acked, (long long)corrupt);
	} else if (r->o->verbose) {
		logf_(r, "%s: %s powerfail iteration %d: %lld acknowledged records intact", rb->cfg->name,
		      lab_mode_names[j->mode], s->iteration, (long long)acked);
	}
	collect_reset(c);
	rb->wl++;
	run_workload(rb);
}

static void pf_mode_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct collect *c = &rb->col;
	struct plan_job *j = cur_job(rb);
	if (rc != LAB_OK || !c->have_mode) {
		pf_fail(rb, rc, fail, "mode verification after the cut", msg);
		return;
	}
	int vm = run_mode_from_verified(c->fua, c->write_cache, c->cqe);
	if (vm != j->mode) {
		char *m = xasprintf("after the power cut the DUT runs %s, not %s; no samples stored",
				    vm >= 0 ? lab_mode_names[vm] : c->vmode, lab_mode_names[j->mode]);
		rb->pf_phase = 0;
		record_event(rb, "mode-mismatch", "running", m);
		finish_job(rb, j, JOB_MISMATCH, m);
		free(m);
		collect_reset(c);
		rb->booted_job = -1;
		rb->cur++;
		next_slot(rb);
		return;
	}
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	struct lab_buf args;
	lab_buf_init(&args, 4096);
	lab_buf_printf(&args, "powerfail-check");
	char num[32];
	snprintf(num, sizeof num, "%d", cur_slot(rb)->iteration);
	append_arg(&args, "iter", num);
	snprintf(num, sizeof num, "%lld", (long long)rb->pf_acked);
	append_arg(&args, "acked", num);
	pf_args(&args, w, "records", NULL);
	collect_reset(c);
	rb->pf_phase = 4;
	if (board_agent(rb->b, lab_buf_cstr(&args), agent_timeout(rb), on_agent_msg, pf_check_done, rb))
		pf_fail(rb, LAB_OK, FAIL_AGENT_PROTOCOL, "check", "could not start the agent");
	lab_buf_free(&args);
}

static void pf_booted(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	if (rc != LAB_OK) {
		pf_fail(rb, rc, fail, "boot after the cut", msg);
		return;
	}
	rb->booted_job = (int)cur_slot(rb)->job;
	char *a = xasprintf("mode expect=%s", lab_mode_names[cur_job(rb)->mode]);
	collect_reset(&rb->col);
	if (board_agent(rb->b, a, 120000, on_agent_msg, pf_mode_done, rb))
		pf_fail(rb, LAB_OK, FAIL_AGENT_PROTOCOL, "mode verification", "could not start the agent");
	free(a);
}

static void pf_off(struct board *b, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(state);
	struct rboard *rb = arg;
	if (rc != LAB_OK) {
		pf_fail(rb, LAB_EINFRA, FAIL_POWER, "power cut", msg);
		return;
	}
	struct plan_job *j = cur_job(rb);
	rb->pf_phase = 3;
	rb->booted_job = -1;
	const char *extra = rb->cfg->type ? rb->cfg->type->modes[j->mode].cmdline : NULL;
	if (board_boot(rb->b, j->kernel, extra ? extra : "", rb->r->transcript_dir, pf_booted, rb))
		pf_fail(rb, LAB_EINFRA, FAIL_POWER, "boot after the cut", "board busy");
}

static void pf_cut(struct rboard *rb)
{
	loop_timer_stop(rb->r->loop, &rb->pf_timer);
	rb->pf_phase = 2;
	/* Abandon the writer mid-record: that is the point. */
	board_abort(rb->b);
	if (board_power(rb->b, POWER_OFF, pf_off, rb))
		pf_fail(rb, LAB_EINFRA, FAIL_POWER, "power cut", "the power driver refused");
}

static void on_pf_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct rboard *rb = arg;
	if (rb->pf_phase == 1)
		pf_cut(rb);
}

static void pf_write_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	if (rb->pf_phase != 1)
		return;
	if (rc != LAB_OK || rb->col.error[0]) {
		pf_fail(rb, rc, fail, "write", msg);
		return;
	}
	/* Every record was written before the cut came: cut now. */
	pf_cut(rb);
}

static void powerfail_start(struct rboard *rb)
{
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	uint64_t lo = wl_ms(w, "cut_min", 500), hi = wl_ms(w, "cut_max", 3000);
	if (hi < lo)
		hi = lo;
	uint64_t seed = (uint64_t)j->suite->seed * 0x9E3779B97F4A7C15ull ^
			((uint64_t)rb->pb->board << 32) ^ ((uint64_t)s->iteration << 8) ^ (uint64_t)j->failures;
	seed ^= seed >> 31;
	seed *= 0xBF58476D1CE4E5B9ull;
	seed ^= seed >> 27;
	uint64_t delay = lo + seed % (hi - lo + 1);
	struct lab_buf args;
	lab_buf_init(&args, 4096);
	lab_buf_printf(&args, "powerfail-write");
	char it[16];
	snprintf(it, sizeof it, "%d", s->iteration);
	append_arg(&args, "iter", it);
	pf_args(&args, w, NULL, NULL);
	collect_reset(&rb->col);
	rb->pf_phase = 1;
	rb->pf_acked = 0;
	rb->wl_start_ns = lab_now_ns();
	loop_timer_init(&rb->pf_timer, on_pf_timer, rb);
	loop_timer_start(r->loop, &rb->pf_timer, delay);
	if (r->o->verbose)
		logf_(r, "%s: %s powerfail iteration %d: cutting power after %llu ms", rb->cfg->name,
		      lab_mode_names[j->mode], s->iteration, (unsigned long long)delay);
	if (board_agent(rb->b, lab_buf_cstr(&args), agent_timeout(rb), on_agent_msg, pf_write_done, rb))
		pf_fail(rb, LAB_OK, FAIL_AGENT_PROTOCOL, "write", "could not start the agent");
	lab_buf_free(&args);
}

static void run_workload(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	if (rb->wl >= j->suite->nworkloads) {
		j->done_iterations++;
		if (j->done_iterations >= j->iterations)
			finish_job(rb, j, JOB_OK, NULL);
		board_health_ok(rb->b);
		rb->cur++;
		next_slot(rb);
		return;
	}
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	if (strcmp(w->name, "powerfail") == 0) {
		powerfail_start(rb);
		return;
	}
	struct lab_buf args;
	lab_buf_init(&args, 4096);
	lab_buf_printf(&args, "%s", w->name);
	char it[16];
	snprintf(it, sizeof it, "%d", s->iteration);
	append_arg(&args, "iter", it);
	append_arg(&args, "count", "1");
	if (w->args && w->args->kind == CFG_MAP)
		for (size_t i = 0; i < w->args->n; i++)
			if (w->args->items[i]->kind == CFG_SCALAR)
				append_arg(&args, w->args->keys[i]->value, w->args->items[i]->value);
	collect_reset(&rb->col);
	rb->wl_start_ns = lab_now_ns();
	if (board_agent(rb->b, lab_buf_cstr(&args), agent_timeout(rb), on_agent_msg, on_workload_done,
			rb) != LAB_OK) {
		lab_buf_free(&args);
		slot_failed(rb, "agent-protocol", "could not start the agent");
		return;
	}
	lab_buf_free(&args);
}

static void on_precondition_done(struct board *b, int rc, enum board_fail fail, const char *msg,
				 void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	if (rc != LAB_OK || rb->col.error[0]) {
		char *m = xasprintf("precondition: %s", rb->col.error[0] ? rb->col.error : msg ? msg : "failed");
		record_event(rb, rc ? board_fail_name(fail) : "agent-protocol", "running", m);
		slot_failed(rb, rc ? board_fail_name(fail) : "agent-protocol", m);
		free(m);
		return;
	}
	collect_reset(&rb->col);
	rb->wl = 0;
	run_workload(rb);
}

static void start_workloads(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	rb->wl = 0;
	if (s->precondition && j->failures == 0) {
		char *args = xasprintf("precondition passes=%lld", (long long)j->suite->precondition_passes);
		collect_reset(&rb->col);
		logf_(rb->r, "%s: preconditioning (%lld passes)", rb->cfg->name,
		      (long long)j->suite->precondition_passes);
		int rc = board_agent(rb->b, args, job_timeout(rb), on_agent_msg, on_precondition_done, rb);
		free(args);
		if (rc != LAB_OK)
			slot_failed(rb, "agent-protocol", "could not start the agent");
		return;
	}
	run_workload(rb);
}

static void on_mode_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	struct collect *c = &rb->col;
	if (rc != LAB_OK || !c->have_mode) {
		char *m = xasprintf("mode verification: %s",
				    rc ? (msg ? msg : lab_strerror(rc)) : "the agent sent no mode line");
		record_event(rb, rc ? board_fail_name(fail) : "agent-protocol", "running", m);
		slot_failed(rb, rc ? board_fail_name(fail) : "agent-protocol", m);
		free(m);
		return;
	}
	int vm = run_mode_from_verified(c->fua, c->write_cache, c->cqe);
	struct lab_err e = {0};
	if (store_job_verified(r->store, j->db_id, c->fua, c->write_cache, c->cqe,
			       vm >= 0 ? lab_mode_names[vm] : c->vmode, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	if (vm != j->mode) {
		char *m = xasprintf("requested %s but the DUT runs %s (queue/fua=%d write_cache=%d cqe=%d); "
				    "no samples stored for this job",
				    lab_mode_names[j->mode], vm >= 0 ? lab_mode_names[vm] : c->vmode, c->fua,
				    c->write_cache, c->cqe);
		record_event(rb, "mode-mismatch", "running", m);
		finish_job(rb, j, JOB_MISMATCH, m);
		free(m);
		collect_reset(c);
		rb->booted_job = -1;
		rb->cur++;
		next_slot(rb);
		return;
	}
	collect_reset(c);
	start_workloads(rb);
}

static void verify_mode(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	char *args = xasprintf("mode expect=%s", lab_mode_names[j->mode]);
	collect_reset(&rb->col);
	int rc = board_agent(rb->b, args, 120000, on_agent_msg, on_mode_done, rb);
	free(args);
	if (rc != LAB_OK)
		slot_failed(rb, "agent-protocol", "could not start the agent");
}

static void on_identify_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	struct collect *c = &rb->col;
	if (rc != LAB_OK || !c->have_identity) {
		char *m = xasprintf("identify: %s", rc ? (msg ? msg : lab_strerror(rc)) : "no identity line");
		record_event(rb, rc ? board_fail_name(fail) : "agent-protocol", "running", m);
		slot_failed(rb, rc ? board_fail_name(fail) : "agent-protocol", m);
		free(m);
		return;
	}
	const struct part_cfg *pc = &rb->cfg->part;
	/* The lab says which part is fitted; the DUT says which part it is.  A
	 * different CID means the wrong module is on the board: never a result. */
	if (pc->cid && pc->cid[0] && c->part.cid && strcasecmp(pc->cid, c->part.cid) != 0) {
		char *m = xasprintf("the lab says part %s (CID %s) is fitted but the DUT reports CID %s",
				    pc->label ? pc->label : "?", pc->cid, c->part.cid);
		record_event(rb, "part-mismatch", "running", m);
		finish_job(rb, j, JOB_INFRA, m);
		skip_rest(rb, "wrong part fitted");
		free(m);
		end_board(rb);
		return;
	}
	/* The lab says which kernel this job boots; a DUT running another one (a
	 * stale image in flash, a wrong TFTP file) must not produce results. */
	if (j->kernel && j->kernel->version && j->kernel->version[0] && c->kernel[0] &&
	    strcmp(j->kernel->version, c->kernel) != 0) {
		char *m = xasprintf("kernel %s should run %s but the DUT runs %s", j->kernel->name,
				    j->kernel->version, c->kernel);
		record_event(rb, "wrong-kernel", "running", m);
		slot_failed(rb, "wrong-kernel", m);
		free(m);
		return;
	}
	c->part.label = pc->label && pc->label[0] ? pc->label : rb->cfg->name;
	struct lab_err e = {0};
	if (store_part_upsert(r->store, &c->part, &rb->part_id, &e) ||
	    (c->kernel[0] && store_kernel_upsert(r->store, c->kernel, NULL, NULL, NULL, &rb->kernel_id, &e))) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	if (!j->db_id) {
		struct store_job_info ji = {
			.run_id = r->res->run_id, .board_id = rb->board_id, .part_id = rb->part_id,
			.kernel_id = rb->kernel_id, .suite = j->suite->name, .mode = lab_mode_names[j->mode],
			.seq = (int)(j - r->plan->jobs),
			.kernel_cmdline = rb->cfg->type ? rb->cfg->type->modes[j->mode].cmdline : NULL};
		if (store_job_begin(r->store, &ji, &j->db_id, &e)) {
			store_fail(r, &e);
			end_board(rb);
			return;
		}
		j->status = JOB_RUNNING;
	}
	collect_reset(c);
	verify_mode(rb);
}

static void identify(struct rboard *rb)
{
	collect_reset(&rb->col);
	if (board_agent(rb->b, "identify", 120000, on_agent_msg, on_identify_done, rb) != LAB_OK)
		slot_failed(rb, "agent-protocol", "could not start the agent");
}

/* Recipe sysfs writes ("path=value"), one shell command each, before verification. */
static void sysfs_step(struct rboard *rb);

static void on_sysfs_done(struct board *b, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(len);
	struct rboard *rb = arg;
	if (rc != LAB_OK || status != 0) {
		char *m = xasprintf("mode recipe sysfs write failed (exit %d): %.200s", status, out ? out : "");
		record_event(rb, "mode-mismatch", "running", m);
		slot_failed(rb, "mode-mismatch", m);
		free(m);
		return;
	}
	rb->sysfs_i++;
	sysfs_step(rb);
}

static void sysfs_step(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	const struct opt_strlist *l = rb->cfg->type ? &rb->cfg->type->modes[j->mode].sysfs : NULL;
	if (!l || rb->sysfs_i >= l->n) {
		identify(rb);
		return;
	}
	const char *kv = l->v[rb->sysfs_i];
	const char *eq = strchr(kv, '=');
	if (!eq) {
		rb->sysfs_i++;
		sysfs_step(rb);
		return;
	}
	char *cmd = xasprintf("echo '%s' > '%.*s'", eq + 1, (int)(eq - kv), kv);
	if (board_shell(rb->b, cmd, 30000, on_sysfs_done, rb) != LAB_OK)
		slot_failed(rb, "command-timeout", "could not run a shell command");
	free(cmd);
}

static void on_booted(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	if (rc != LAB_OK) {
		char *m = xasprintf("boot for %s failed: %s", lab_mode_names[cur_job(rb)->mode],
				    msg ? msg : board_fail_name(fail));
		slot_failed(rb, board_fail_name(fail), m);
		free(m);
		return;
	}
	rb->booted_job = (int)cur_slot(rb)->job;
	rb->sysfs_i = 0;
	sysfs_step(rb);
}

/* Can the board go from the job it is booted for to j without a reboot?  Only
 * when the suite allows it and both recipes are sysfs writes on the same
 * kernel: a command-line recipe needs a boot by nature. */
static bool switch_in_place(struct rboard *rb, const struct plan_job *j)
{
	const struct plan_job *cur = &rb->r->plan->jobs[rb->booted_job];
	const struct board_type *t = rb->cfg->type;
	if (!t || j->suite->reboot_between_modes || cur->kernel != j->kernel)
		return false;
	const struct mode_recipe *a = &t->modes[cur->mode], *b = &t->modes[j->mode];
	return (!a->cmdline || !a->cmdline[0]) && (!b->cmdline || !b->cmdline[0]) && b->sysfs.n > 0 &&
	       (!a->kernel || !a->kernel[0]) && (!b->kernel || !b->kernel[0]);
}

static void next_slot(struct rboard *rb)
{
	struct runner *r = rb->r;
	if (board_quarantined(rb->b) && rb->cur < rb->pb->nslots) {
		skip_rest(rb, "board quarantined");
		end_board(rb);
		return;
	}
	while (rb->cur < rb->pb->nslots && cur_job(rb)->status >= JOB_OK)
		rb->cur++;
	if (r->stopping || rb->cur >= rb->pb->nslots) {
		end_board(rb);
		return;
	}
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	if (!j->started_ns)
		j->started_ns = lab_now_ns();
	else if ((lab_now_ns() - j->started_ns) / 1000000ull > job_timeout(rb)) {
		char *m = xasprintf("job ran past its time limit (timeouts.job %llu ms)",
				    (unsigned long long)job_timeout(rb));
		record_event(rb, "job-timeout", NULL, m);
		finish_job(rb, j, JOB_INFRA, m);
		free(m);
		next_slot(rb);
		return;
	}
	if (rb->booted_job >= 0 && rb->booted_job != (int)s->job && switch_in_place(rb, j)) {
		/* sysfs-only recipes, same kernel: change the mode without a reboot */
		logf_(r, "%s: switching to %s in place (sysfs recipe, reboot_between_modes: false)",
		      rb->cfg->name, lab_mode_names[j->mode]);
		rb->booted_job = (int)s->job;
		rb->sysfs_i = 0;
		sysfs_step(rb);
		return;
	}
	if (s->reboot || rb->booted_job != (int)s->job) {
		const char *extra = rb->cfg->type ? rb->cfg->type->modes[j->mode].cmdline : NULL;
		logf_(r, "%s: booting for %s (%s iteration %d of %d)", rb->cfg->name,
		      lab_mode_names[j->mode], j->suite->name, s->iteration, j->iterations);
		if (board_boot(rb->b, j->kernel, extra ? extra : "", r->transcript_dir, on_booted, rb) != LAB_OK)
			slot_failed(rb, "power", "board busy or not startable");
		return;
	}
	/* Same boot, same job: the mode was verified at boot; run the next iteration. */
	start_workloads(rb);
}

/* Runs left 'running' by a controller that was killed (SIGKILL, power loss of
 * the controller): everything they committed is whole (iterations are atomic);
 * mark them aborted and their unfinished jobs infra, so reports do not wait
 * for them.  Only runs of this host whose process is gone are touched. */
static void reap_dead_runs(struct runner *r, const char *host)
{
	sqlite3 *db = store_db(r->store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, json_extract(config_json, '$.pid') FROM run WHERE status = 'running'"
			       " AND source = 'lab' AND json_valid(config_json)"
			       " AND json_extract(config_json, '$.host') = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
	int64_t dead[64];
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW && n < LAB_ARRAY_SIZE(dead)) {
		pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
		if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
			dead[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < n; i++) {
		struct lab_err e = {0};
		char *sql = xasprintf("UPDATE job SET status = 'infra' WHERE run_id = %lld AND status IN "
				      "('pending', 'running')",
				      (long long)dead[i]);
		int rc = store_begin(r->store, &e);
		if (!rc && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			rc = LAB_EINFRA;
		if (!rc)
			rc = store_event(r->store, dead[i], 0, 0, "controller-died", NULL,
					 "the controller of this run died; marked aborted by a later run", &e);
		if (!rc)
			rc = store_commit(r->store, &e);
		else
			store_rollback(r->store);
		free(sql);
		if (!rc && store_run_finish(r->store, dead[i], "aborted", &e) == LAB_OK)
			logf_(r, "run %lld: its controller died; marked aborted", (long long)dead[i]);
	}
}

/* A quarantine event with no later unquarantine (emmclab board NAME release). */
static bool board_still_quarantined(struct store *s, int64_t board_id)
{
	sqlite3_stmt *st;
	bool q = false;
	if (sqlite3_prepare_v2(store_db(s),
			       "SELECT 1 FROM event e WHERE e.board_id = ?1 AND e.kind = 'quarantine'"
			       " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.board_id = e.board_id"
			       " AND u.kind = 'unquarantine' AND u.id > e.id) LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, board_id);
	q = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return q;
}

static void start_board(void *arg)
{
	next_slot(arg);
}

/* ---- signals and budget ---- */

static void on_signal(struct loop *l, int signo, void *arg)
{
	LAB_UNUSED(l);
	struct runner *r = arg;
	if (r->stopping) {
		/* Second signal: abort boards at once (stored data is consistent anyway). */
		for (size_t i = 0; i < r->nrb; i++) {
			if (!r->rb[i].done) {
				board_abort(r->rb[i].b);
				r->rb[i].done = true;
			}
		}
		loop_stop(r->loop);
		return;
	}
	r->stopping = true;
	r->res->aborted = true;
	logf_(r, "signal %d: finishing the iterations in flight, then stopping (again to abort now)", signo);
}

static void on_budget(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct runner *r = arg;
	r->stopping = true;
	r->res->budget_exhausted = true;
	logf_(r, "time budget exhausted: no new iterations are started");
}

static char *json_escape(const char *s)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			lab_buf_printf(&b, "\\%c", *p);
		else if (*p < 0x20)
			lab_buf_printf(&b, "\\u%04x", *p);
		else
			lab_buf_append(&b, p, 1);
	}
	lab_buf_append(&b, "", 0);
	return b.data;
}

int run_plan(struct lab_cfg *lab, struct store *s, const struct run_opts *o, struct run_result *res,
	     struct lab_err *e)
{
	memset(res, 0, sizeof *res);
	struct runner r = {.lab = lab, .store = s, .o = o, .res = res};
	int rc = plan_expand(lab, &r.plan, e);
	if (rc)
		return rc;
	/* A bad upload target is found now, before any board is powered. */
	if (upload_config_targets(lab) && (rc = upload_check_targets(upload_config_targets(lab), e))) {
		plan_free(r.plan);
		return rc;
	}
	r.loop = loop_new();
	if (!r.loop) {
		plan_free(r.plan);
		return lab_err_set(e, LAB_EINFRA, "cannot create the event loop: %s", strerror(errno));
	}
	if (o->transcript_dir)
		r.transcript_dir = xstrdup(o->transcript_dir);
	else if (lab->transcripts)
		r.transcript_dir = xstrdup(lab->transcripts);
	else
		r.transcript_dir = xstrdup("results/transcripts");
	if (lab_mkdir_p(r.transcript_dir, 0755)) {
		rc = lab_err_set(e, LAB_EINFRA, "cannot create transcript directory %s: %s",
				 r.transcript_dir, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < r.plan->nnotes; i++)
		logf_(&r, "%s", r.plan->notes[i]);

	r.rb = xcalloc(r.plan->nboards, sizeof *r.rb);
	static const struct board_events bev = {.event = on_board_event, .transcript = on_transcript};
	for (size_t i = 0; i < r.plan->nboards; i++) {
		struct rboard *rb = &r.rb[i];
		rb->r = &r;
		rb->pb = &r.plan->boards[i];
		rb->cfg = &lab->boards[rb->pb->board];
		rb->booted_job = -1;
		loop_timer_init(&rb->pf_timer, on_pf_timer, rb);
		collect_reset(&rb->col);
		rc = store_board_upsert(s, rb->cfg->name, rb->cfg->type_name, rb->cfg->type ? rb->cfg->type->host : NULL,
					lab->name, &rb->board_id, e);
		if (rc)
			goto out_boards;
		rc = board_new(r.loop, lab, rb->cfg, &bev, rb, &rb->b, e);
		if (rc)
			goto out_boards;
		r.nrb++;
		if (board_still_quarantined(s, rb->board_id)) {
			/* Not retried forever: a quarantined board waits for an operator. */
			board_health_restore(rb->b, 0, true);
			logf_(&r, "%s: quarantined by an earlier run: skipped (emmclab board %s release)",
			      rb->cfg->name, rb->cfg->name);
		}
	}
	char *name = json_escape(lab->plan->name), *labname = json_escape(lab->name);
	char host[128] = "";
	gethostname(host, sizeof host - 1);
	char *hostj = json_escape(host);
	char *cfg = xasprintf("{\"plan\":\"%s\",\"lab\":\"%s\",\"boards\":%zu,\"jobs\":%zu,"
			      "\"host\":\"%s\",\"pid\":%ld}",
			      name, labname, r.plan->nboards, r.plan->njobs, hostj, (long)getpid());
	free(hostj);
	free(name);
	free(labname);
	reap_dead_runs(&r, host);
	struct store_run_info ri = {.plan = lab->plan->name, .lab = lab->name, .source = "lab",
				    .config_json = cfg};
	rc = store_run_begin(s, &ri, &res->run_id, e);
	free(cfg);
	if (rc)
		goto out_boards;
	res->jobs = (int)r.plan->njobs;

	r.active = r.nrb;
	logf_(&r, "run %lld: plan %s on lab %s: %zu boards, %zu jobs", (long long)res->run_id,
	      lab->plan->name, lab->name, r.plan->nboards, r.plan->njobs);
	loop_signal(r.loop, SIGINT, on_signal, &r);
	loop_signal(r.loop, SIGTERM, on_signal, &r);
	loop_timer_init(&r.budget, on_budget, &r);
	if (lab->plan->budget_ms)
		loop_timer_start(r.loop, &r.budget, lab->plan->budget_ms);
	r.nstarted = lab->plan->parallel > 0 && (size_t)lab->plan->parallel < r.nrb
			     ? (size_t)lab->plan->parallel
			     : r.nrb;
	for (size_t i = 0; i < r.nstarted; i++)
		loop_defer(r.loop, start_board, &r.rb[i]);
	uint64_t t0 = lab_now_ms();
	while (r.active > 0 && !loop_stopped(r.loop))
		if (loop_run_once(r.loop, -1) < 0)
			break;
	res->wall_ms = lab_now_ms() - t0;
	loop_timer_stop(r.loop, &r.budget);
	loop_signal(r.loop, SIGINT, NULL, NULL);
	loop_signal(r.loop, SIGTERM, NULL, NULL);
	for (size_t i = 0; i < r.plan->njobs; i++) {
		struct plan_job *j = &r.plan->jobs[i];
		if (j->status < JOB_OK) {
			j->status = JOB_SKIPPED;
			res->jobs_skipped++;
			if (j->db_id)
				store_job_finish(s, j->db_id, "skipped", NULL);
		}
	}
	{
		const char *status = res->aborted ? "aborted" : r.err.msg[0] ? "failed" : "complete";
		struct lab_err fe = {0};
		/* Finishing the run and queueing its uploads is one transaction: a
		 * completed run is never without its outbox entries (upload.c). */
		if (upload_finish_run(s, res->run_id, status, upload_config_targets(lab), &fe) &&
		    !r.err.msg[0])
			r.err = fe;
	}
	if (r.err.msg[0]) {
		*e = r.err;
		rc = r.err.rc ? r.err.rc : LAB_EINFRA;
	}
out_boards:
	for (size_t i = 0; i < r.nrb; i++) {
		loop_timer_stop(r.loop, &r.rb[i].pf_timer);
		collect_reset(&r.rb[i].col);
		board_free(r.rb[i].b);
	}
	free(r.rb);
	/* Let the children the boards' drivers killed (exec consoles, QEMU,
	 * flashers) be reaped and deferred frees run, bounded, before the loop goes. */
	uint64_t drain_end = loop_now_ms(r.loop) + 5000;
	while (!loop_idle(r.loop) && loop_now_ms(r.loop) < drain_end)
		loop_run_once(r.loop, 50);
out:
	loop_free(r.loop);
	free(r.transcript_dir);
	plan_free(r.plan);
	return rc;
}
