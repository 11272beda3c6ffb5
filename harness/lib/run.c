/* run.c - see run.h. */
#include "run.h"
#include "board.h"
#include "collect.h"
#include "console.h"
#include "health.h"
#include "json.h"
#include "lava.h"
#include "lock.h"
#include "loop.h"
#include "plan.h"
#include "power.h"
#include "progress.h"
#include "powerfail.h"
#include "proto.h"
#include "schedule.h"
#include "upload.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum job_status { JOB_PENDING, JOB_RUNNING, JOB_OK, JOB_INFRA, JOB_MISMATCH, JOB_SKIPPED };

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
	struct powerfail pf;   /* the power-fail workload (the controller cuts the power) */
	bool done;
	struct lab_lock *lock; /* the board's lock (lock.h); NULL: another process has it */
	char *locked_by;       /* why not: "board locked by pid N" */
	bool *slot_done;       /* resume: slots whose iteration is already stored */
	/* a LAVA device (lava.h): no struct board; LAVA boots and runs each slot */
	bool is_lava;
	struct lava_device_cfg ldev;
	struct lava_job *lj;              /* the slot's LAVA job */
	const struct lava_outcome *lo;    /* its outcome, valid while lj lives */
	size_t lstep;                     /* next recorded agent command to replay */
	struct loop_timer lt;             /* replays on the next loop pass */
	char *largs;
	board_msg_cb lmsg;
	board_done_cb ldone;
	int lfailures;
	bool lquarantined;
};

/* The transcript directory's pruning, on a thread of its own while the
 * boards start: it stats every file of the directory, which after a few
 * 1,024-board nights (20,000 transcripts a night) took longer than the
 * night's start itself. */
struct prune_job {
	const char *dir;
	uint64_t keep;
	size_t removed;
	uint64_t freed;
	struct lab_err err;
	int rc;
	pthread_t th;
	bool started;
};

static void *prune_main(void *arg)
{
	struct prune_job *pj = arg;
	pj->rc = transcript_prune(pj->dir, pj->keep, &pj->removed, &pj->freed, &pj->err);
	return NULL;
}

struct runner {
	struct loop *loop;
	struct prune_job prune;
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
	struct schedule_res *shared; /* the lab's shared resources (NULL: none) */
	char *transcript_dir;
	struct lab_err err; /* first store error: fatal for the run */
	/* the store: every write is a journal entry, flushed from a timer */
	struct store_jnl *jnl;
	struct loop_timer flush_t;
	uint64_t backoff_ms;     /* 0: not waiting for the database */
	uint64_t busy_since_ms;  /* when the current wait began */
	uint64_t busy_total_ms;  /* all waits of the run */
	int busy_waits;
	/* stops */
	int signals;             /* SIGINT/SIGTERM received */
	bool hard_stop;          /* the second one: abort now, power off, mark aborted */
	struct loop_timer hard_t;
	char *lockdir;
	struct lava *lava;       /* the lab's LAVA server, NULL: no LAVA board */
};

static void start_board(void *arg);
static bool rb_quarantined(struct rboard *rb);
static void rb_health_fail(struct rboard *rb, const char *msg);
static int rb_agent(struct rboard *rb, const char *args, uint64_t timeout_ms, board_msg_cb msg_cb,
		    board_done_cb done_cb);
static int rb_boot(struct rboard *rb);
static void rb_stop(struct rboard *rb);
static void sysfs_step(struct rboard *rb);

static void next_slot(struct rboard *rb);
static void run_workload(struct rboard *rb);
static void jnl_dirty(struct runner *r);
static int job_seq(struct runner *r, const struct plan_job *j);
static void job_started(struct rboard *rb, struct plan_job *j);

static void logf_(struct runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct runner *r, const char *fmt, ...)
{
	va_list ap;
	if (r->o->progress) {
		va_start(ap, fmt);
		progress_vlog(r->o->progress, fmt, ap);
		va_end(ap);
		return;
	}
	if (!r->o->log)
		return;
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

/* ---- bookkeeping ---- */

static struct plan_job *cur_job(struct rboard *rb)
{
	return &rb->r->plan->jobs[rb->pb->slots[rb->cur].job];
}

static const struct plan_slot *cur_slot(struct rboard *rb)
{
	return &rb->pb->slots[rb->cur];
}

/* progress.h: where the board is now (stage, job, iteration). */
static void prog_stage(struct rboard *rb, const char *stage)
{
	struct progress *p = rb->r->o->progress;
	if (!p)
		return;
	if (rb->cur >= rb->pb->nslots) { /* between jobs: powering off at the end */
		progress_stage(p, (size_t)(rb - rb->r->rb), stage, NULL, NULL, 0, 0, rb->pb->nslots);
		return;
	}
	const struct plan_job *j = cur_job(rb);
	progress_stage(p, (size_t)(rb - rb->r->rb), stage, j->suite->name, lab_mode_names[j->mode],
		       cur_slot(rb)->iteration, j->iterations, rb->cur);
}

/* schedule.h: take the lab's shared resources the board uses in stage; false:
 * it is queued (shown as stage wait:NAME) and resume(rb) runs once granted. */
static bool res_take(struct rboard *rb, const char *stage, void (*resume)(void *arg))
{
	char waiting[48], st[64];
	if (schedule_res_acquire(rb->r->shared, rb->r->loop, rb->pb->board, stage, resume, rb, waiting,
			      sizeof waiting))
		return true;
	snprintf(st, sizeof st, "wait:%s", waiting);
	prog_stage(rb, st);
	return false;
}

static void res_drop(struct rboard *rb, const char *stage)
{
	schedule_res_release(rb->r->shared, rb->r->loop, rb->pb->board, stage);
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
	int seq = rb->cur < rb->pb->nslots ? job_seq(r, cur_job(rb)) : -1;
	if (store_jnl_event(r->jnl, seq, rb->cfg->name, kind, stage, msg, &e))
		store_fail(r, &e);
	jnl_dirty(r);
	r->res->events++;
	if (r->o->progress && progress_event(r->o->progress, (size_t)(rb - r->rb), kind, stage, msg))
		return;
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
	{
		struct lab_err e = {0};
		if (store_jnl_job_finish(r->jnl, job_seq(r, j), names[status],
					 status == JOB_OK ? NULL : why, &e))
			store_fail(r, &e);
		jnl_dirty(r);
	}
	if (r->o->progress && progress_job(r->o->progress, (size_t)(rb - r->rb), j->suite->name,
					   lab_mode_names[j->mode], names[status], why))
		return;
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
	int seq = rb->cur < rb->pb->nslots ? job_seq(rb->r, cur_job(rb)) : -1;
	if (store_jnl_transcript(rb->r->jnl, seq, rb->cfg->name, path, sha, (int64_t)bytes, boot_n,
				 &e))
		store_fail(rb->r, &e);
	jnl_dirty(rb->r);
}

/* ---- finishing ---- */

static void board_finished(struct rboard *rb)
{
	if (rb->done)
		return;
	rb->done = true;
	struct runner *r = rb->r;
	if (r->o->progress)
		progress_board_done(r->o->progress, (size_t)(rb - r->rb));
	if (rb_quarantined(rb))
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
	res_drop(rb, NULL);
	prog_stage(rb, "powering-off");
	if (rb->is_lava) { /* LAVA powers its devices off */
		rb_stop(rb);
		board_finished(rb);
		return;
	}
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
	rb_health_fail(rb, msg);
	j->failures++;
	if (rb_quarantined(rb)) {
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

/* ---- agent messages (decoded by collect.c) ---- */

static void on_agent_msg(struct board *b, const struct proto_msg *m, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	int64_t acked;
	/* The power-fail writer's acknowledgements belong to its state machine. */
	if (collect_is_counter(m, "acked", &acked) && powerfail_ack(&rb->pf, acked))
		return;
	/* powerfail-check's integrity error line is its result, not a failure */
	bool integrity_is_result = powerfail_phase(&rb->pf) == POWERFAIL_CHECKING;
	if (collect_msg(&rb->col, m, integrity_is_result) == COLLECT_NO_TRACEFS)
		record_event(rb, "info", "running", "agent: no tracefs, command counts not available");
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
	uint64_t ms = t && t->timeouts.job_ms ? t->timeouts.job_ms : 8 * 3600000ull;
	uint64_t plan_ms = rb->r->lab->plan->job_budget_ms; /* plan.job_budget */
	return plan_ms && plan_ms < ms ? plan_ms : ms;
}

static void append_quoted(struct lab_buf *b, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			lab_buf_append(b, "'\\''", 4);
		else
			lab_buf_append(b, p, 1);
	}
}

static void append_arg(struct lab_buf *b, const char *k, const char *v)
{
	/* Values are passed to a POSIX shell: single-quote anything unusual.
	 * Keys are safe names (checked at load); one that is not is quoted with
	 * its value, so the shell still sees one key=value word. */
	bool plain = *v != '\0';
	for (const char *p = v; *p; p++)
		if (!(strchr("._/:,+-", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			plain = false;
	if (lab_name_check(k) != NULL) {
		lab_buf_append(b, " '", 2);
		append_quoted(b, k);
		lab_buf_append(b, "=", 1);
		append_quoted(b, v);
		lab_buf_append(b, "'", 1);
		return;
	}
	lab_buf_printf(b, " %s=", k);
	if (plain) {
		lab_buf_printf(b, "%s", v);
		return;
	}
	lab_buf_append(b, "'", 1);
	append_quoted(b, v);
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
	/* The tracepoint counts prove the mode (docs/running.md): required for
	 * every counted workload unless the board type says it cannot trace. */
	const struct agent_workload *aw = agent_workload_find(w->name);
	int64_t rel = collect_counter(c, "reliable_writes");
	char why[256] = "";
	if (rel >= 0 && !lab_mode_proof_ok(j->mode, w->name, rel, collect_counter(c, "flushes"),
					   why, sizeof why - 64))
		lab_strlcat(why, ": the running kernel does not do what the mode requires",
			    sizeof why);
	else if (rel < 0 && aw && aw->counted && board_type_traces(rb->cfg->type))
		snprintf(why, sizeof why, "%s: the mode is not proved (the board type does not say "
			 "`trace: false`)", c->no_tracefs ? "the agent could not trace the mmc "
			 "requests (no tracefs)" : "no reliable_writes counter");
	if (why[0]) {
		char *m = xasprintf("%s iteration %d: %s; samples discarded", w->name,
				    s->iteration, why);
		record_event(rb, "mode-mismatch", "running", m);
		finish_job(rb, j, JOB_MISMATCH, m);
		free(m);
		collect_reset(c);
		rb->booted_job = -1;
		rb->cur++;
		next_slot(rb);
		return;
	}
	double dur = c->wall_time >= 0 ? c->wall_time : (double)(lab_now_ns() - rb->wl_start_ns) / 1e9;
	struct lab_err e = {0};
	if (store_jnl_iteration(r->jnl, job_seq(r, j), w->name, s->iteration, dur, 0, c->samples,
				c->nsamples, c->counters, c->ncounters, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	if (rb->is_lava && rb->lo &&
	    store_jnl_iteration_origin(r->jnl, job_seq(r, j), w->name, s->iteration, "lava",
				       rb->lo->url, rb->lo->worker[0] ? rb->lo->worker : NULL, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	jnl_dirty(r);
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
 * The iteration's phases are the state machine in powerfail.c; here are its
 * hooks (the board, the collected agent messages, the store) and the mode
 * check after the cut. */

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

static void pf_failed(void *arg, const char *kind, const char *m)
{
	struct rboard *rb = arg;
	record_event(rb, kind, "running", m);
	slot_failed(rb, kind, m);
}

static const char *pf_agent_error(void *arg)
{
	struct rboard *rb = arg;
	return rb->col.error;
}

static void pf_checked(void *arg, int64_t acked, int64_t lost, int64_t corrupt)
{
	struct rboard *rb = arg;
	struct runner *r = rb->r;
	struct collect *c = &rb->col;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	struct store_sample smp[3] = {
		{"acked_records", (double)acked, "records"},
		{"lost_records", (double)lost, "records"},
		{"corrupt_records", (double)corrupt, "records"},
	};
	struct lab_err e = {0};
	if (store_jnl_iteration(r->jnl, job_seq(r, j), "powerfail", s->iteration,
				(double)(lab_now_ns() - rb->wl_start_ns) / 1e9, 0, smp, 3, c->counters,
				c->ncounters, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	jnl_dirty(r);
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
		powerfail_fail(&rb->pf, rc, fail, msg);
		return;
	}
	int vm = lab_mode_from_verified(c->fua, c->write_cache, c->cqe);
	if (vm != j->mode) {
		char *m = xasprintf("after the power cut the DUT runs %s, not %s; no samples stored",
				    vm >= 0 ? lab_mode_names[vm] : c->vmode, lab_mode_names[j->mode]);
		powerfail_stop(&rb->pf);
		record_event(rb, "mode-mismatch", "running", m);
		finish_job(rb, j, JOB_MISMATCH, m);
		free(m);
		collect_reset(c);
		rb->booted_job = -1;
		rb->cur++;
		next_slot(rb);
		return;
	}
	powerfail_verified(&rb->pf);
}

/* Every agent invocation of the iteration ends here: the phase says which. */
static void pf_agent_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	struct rboard *rb = arg;
	const struct collect *c = &rb->col;
	switch (powerfail_phase(&rb->pf)) {
	case POWERFAIL_WRITING:
		powerfail_written(&rb->pf, rc, fail, msg);
		break;
	case POWERFAIL_VERIFYING:
		pf_mode_done(b, rc, fail, msg, arg);
		break;
	case POWERFAIL_CHECKING:
		powerfail_checked(&rb->pf, rc, fail, msg, collect_counter(c, "acked"),
				  collect_counter(c, "lost"), collect_counter(c, "corrupt"));
		break;
	default:
		break;
	}
}

static int pf_agent(void *arg, const char *args, uint64_t timeout_ms)
{
	struct rboard *rb = arg;
	collect_reset(&rb->col);
	return board_agent(rb->b, args, timeout_ms, on_agent_msg, pf_agent_done, rb);
}

static void pf_off(struct board *b, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(state);
	struct rboard *rb = arg;
	powerfail_powered_off(&rb->pf, rc, msg);
}

/* The writer is still running: its acknowledgements keep counting until the
 * power is off and the console drained (board_power_cut). */
static int pf_power_off(void *arg)
{
	struct rboard *rb = arg;
	int rc = board_power_cut(rb->b, pf_off, rb);
	if (rc != LAB_OK)
		board_abort(rb->b); /* the writer is abandoned either way; the board is free */
	return rc;
}

static void pf_booted(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	if (rc == LAB_OK)
		rb->booted_job = (int)cur_slot(rb)->job;
	powerfail_booted(&rb->pf, rc, fail, msg);
}

static int pf_boot(void *arg)
{
	struct rboard *rb = arg;
	struct plan_job *j = cur_job(rb);
	rb->booted_job = -1;
	const char *extra = rb->cfg->type ? rb->cfg->type->modes[j->mode].cmdline : NULL;
	return board_boot(rb->b, j->kernel, extra ? extra : "", rb->r->transcript_dir, pf_booted, rb);
}

static const struct powerfail_hooks pf_hooks = {
	.agent = pf_agent,
	.power_off = pf_power_off,
	.boot = pf_boot,
	.agent_error = pf_agent_error,
	.failed = pf_failed,
	.checked = pf_checked,
};

static void start_powerfail(struct rboard *rb)
{
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	uint64_t delay = powerfail_cut_ms(j->suite->seed, rb->pb->board, s->iteration, j->failures,
					  wl_ms(w, "cut_min", 500), wl_ms(w, "cut_max", 3000));
	struct lab_buf wargs, cargs;
	lab_buf_init(&wargs, 4096);
	lab_buf_init(&cargs, 4096);
	pf_args(&wargs, w, NULL, NULL);
	pf_args(&cargs, w, "records", NULL);
	char *vargs = xasprintf("mode expect=%s", lab_mode_names[j->mode]);
	struct powerfail_iteration it = {
		.iteration = s->iteration,
		.cut_ms = delay,
		.agent_timeout_ms = agent_timeout(rb),
		.write_args = lab_buf_cstr(&wargs),
		.check_args = lab_buf_cstr(&cargs),
		.verify_args = vargs,
	};
	rb->wl_start_ns = lab_now_ns();
	if (r->o->verbose)
		logf_(r, "%s: %s powerfail iteration %d: cutting power after %llu ms", rb->cfg->name,
		      lab_mode_names[j->mode], s->iteration, (unsigned long long)delay);
	powerfail_start(&rb->pf, &it);
	free(vargs);
	lab_buf_free(&wargs);
	lab_buf_free(&cargs);
}

/* ---- part health (docs/running.md, "Part health") ---- */

/* Store a wear reading of the job's part.  Past the board type's `health:`
 * thresholds the job is flagged (its figures are marked WORN everywhere);
 * with `on_exceed: skip` a reading before the job skips the board's jobs
 * instead.  Returns false when the board's jobs end here. */
static bool health_record(struct rboard *rb, struct plan_job *j, const char *phase,
			  const struct health_reading *h)
{
	static const struct health_cfg def = {.life_time_max = 0x09, .pre_eol_max = 1};
	struct runner *r = rb->r;
	const struct health_cfg *hc = rb->cfg->type ? &rb->cfg->type->health : &def;
	const char *label = rb->cfg->part.label && rb->cfg->part.label[0] ? rb->cfg->part.label
									  : rb->cfg->name;
	char why[160];
	bool worn = health_exceeds(hc, h, why, sizeof why);
	bool skip = worn && hc->on_exceed == HEALTH_SKIP && strcmp(phase, "before") == 0;
	char *flag = worn ? xasprintf("part \"%s\", read %s the job: %s", label, phase, why) : NULL;
	struct lab_err e = {0};
	if (store_jnl_health(r->jnl, job_seq(r, j), phase, h, flag, &e))
		store_fail(r, &e);
	jnl_dirty(r);
	if (!worn)
		return true;
	char *m = xasprintf("%s; %s", flag,
			    skip ? "on_exceed: skip, the board's remaining jobs are skipped"
			    : strcmp(phase, "before") == 0 ? "the job runs, its figures are marked WORN"
			    : "its figures are marked WORN, and the part's next jobs will be checked again");
	record_event(rb, "health", phase, m);
	free(m);
	if (skip) {
		finish_job(rb, j, JOB_SKIPPED, flag);
		skip_rest(rb, "part worn past the board type's health thresholds");
		free(flag);
		end_board(rb);
		return false;
	}
	free(flag);
	return true;
}

static void slot_complete(struct rboard *rb)
{
	if (rb->is_lava) {
		rb->lfailures = 0;
		if (rb->lo)
			logf_(rb->r, "%s: LAVA job %lld: samples journalled %llu ms after it was seen finished",
			      rb->cfg->name, (long long)rb->lo->id,
			      (unsigned long long)(loop_now_ms(rb->r->loop) - rb->lo->finished_ms));
	} else {
		board_health_ok(rb->b);
	}
	if (rb->r->o->progress)
		progress_slot_done(rb->r->o->progress, (size_t)(rb - rb->r->rb), rb->cur + 1);
	rb->cur++;
	next_slot(rb);
}

static void on_health_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	struct plan_job *j = cur_job(rb);
	struct collect *c = &rb->col;
	/* The job's iterations are stored: a part that cannot say its wear
	 * does not undo them.  A board that failed is rebooted for the next slot. */
	if (rc != LAB_OK || !c->have_health) {
		char *m = xasprintf("no wear reading after the job: %s",
				    rc ? (msg ? msg : board_fail_name(fail))
				    : c->error[0] ? c->error : "the agent sent no health line");
		record_event(rb, "info", "health", m);
		free(m);
		if (rc != LAB_OK)
			rb->booted_job = -1;
	} else {
		health_record(rb, j, "after", &c->health);
	}
	collect_reset(c);
	finish_job(rb, j, JOB_OK, NULL);
	slot_complete(rb);
}

/* The agent command of one workload iteration (caller frees args). */
static void workload_args(struct lab_buf *args, const struct workload_cfg *w, int iteration)
{
	lab_buf_init(args, 4096);
	lab_buf_printf(args, "%s", w->name);
	char it[16];
	snprintf(it, sizeof it, "%d", iteration);
	append_arg(args, "iter", it);
	append_arg(args, "count", "1");
	if (w->args && w->args->kind == CFG_MAP)
		for (size_t i = 0; i < w->args->n; i++)
			if (w->args->items[i]->kind == CFG_SCALAR)
				append_arg(args, w->args->keys[i]->value, w->args->items[i]->value);
}

static void run_workload(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	if (rb->wl >= j->suite->nworkloads) {
		j->done_iterations++;
		if (j->done_iterations < j->iterations) {
			slot_complete(rb);
			return;
		}
		if (rb->is_lava) {
			/* a LAVA job's log is replayed after LAVA ran it: there is no
			 * agent left to ask for the wear after the job (docs/lava.md) */
			finish_job(rb, j, JOB_OK, NULL);
			slot_complete(rb);
			return;
		}
		/* the job's last iteration: the part's wear after it */
		collect_reset(&rb->col);
		prog_stage(rb, "health");
		if (board_agent(rb->b, "health", 120000, on_agent_msg, on_health_done, rb) != LAB_OK) {
			record_event(rb, "info", "health", "no wear reading after the job: could not start the agent");
			finish_job(rb, j, JOB_OK, NULL);
			slot_complete(rb);
		}
		return;
	}
	const struct workload_cfg *w = &j->suite->workloads[rb->wl];
	prog_stage(rb, w->name);
	if (strcmp(w->name, "powerfail") == 0) {
		start_powerfail(rb);
		return;
	}
	struct lab_buf args;
	workload_args(&args, w, s->iteration);
	collect_reset(&rb->col);
	rb->wl_start_ns = lab_now_ns();
	if (rb_agent(rb, lab_buf_cstr(&args), agent_timeout(rb), on_agent_msg, on_workload_done) !=
	    LAB_OK) {
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

static void start_workloads_cb(void *arg);

static void start_workloads(struct rboard *rb)
{
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	res_drop(rb, "boot");
	if (!res_take(rb, "test", start_workloads_cb))
		return;
	rb->wl = 0;
	if (s->precondition && j->failures == 0) {
		char *args = xasprintf("precondition passes=%lld", (long long)j->suite->precondition_passes);
		collect_reset(&rb->col);
		prog_stage(rb, "precondition");
		logf_(rb->r, "%s: preconditioning (%lld passes)", rb->cfg->name,
		      (long long)j->suite->precondition_passes);
		int rc = rb_agent(rb, args, job_timeout(rb), on_agent_msg, on_precondition_done);
		free(args);
		if (rc != LAB_OK)
			slot_failed(rb, "agent-protocol", "could not start the agent");
		return;
	}
	run_workload(rb);
}

static void start_workloads_cb(void *arg)
{
	struct rboard *rb = arg;
	if (rb->r->stopping) { /* granted after a stop: the slot does not start */
		res_drop(rb, NULL);
		next_slot(rb);
		return;
	}
	start_workloads(rb);
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
	int vm = lab_mode_from_verified(c->fua, c->write_cache, c->cqe);
	struct lab_err e = {0};
	if (store_jnl_job_verified(r->jnl, job_seq(r, j), c->fua, c->write_cache, c->cqe,
				   vm >= 0 ? lab_mode_names[vm] : c->vmode,
				   board_type_traces(rb->cfg->type) ? "tracepoints" : "sysfs-only", &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	jnl_dirty(r);
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
	prog_stage(rb, "verify-mode");
	int rc = rb_agent(rb, args, 120000, on_agent_msg, on_mode_done);
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
	/* The job's row exists since the run began; now it learns its part. */
	if (store_jnl_job_part(r->jnl, job_seq(r, j), &c->part, c->kernel[0] ? c->kernel : NULL, &e)) {
		store_fail(r, &e);
		end_board(rb);
		return;
	}
	jnl_dirty(r);
	if (c->have_health && !j->health_before) {
		j->health_before = 1;
		if (!health_record(rb, j, "before", &c->health)) {
			collect_reset(c);
			return;
		}
	}
	collect_reset(c);
	verify_mode(rb);
}

static void identify(struct rboard *rb)
{
	collect_reset(&rb->col);
	prog_stage(rb, "identify");
	if (rb_agent(rb, "identify", 120000, on_agent_msg, on_identify_done) != LAB_OK)
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
	prog_stage(rb, "mode-recipe");
	char *cmd = xasprintf("echo '%s' > '%.*s'", eq + 1, (int)(eq - kv), kv);
	if (board_shell(rb->b, cmd, 30000, on_sysfs_done, rb) != LAB_OK)
		slot_failed(rb, "command-timeout", "could not run a shell command");
	free(cmd);
}

static void on_booted(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rboard *rb = arg;
	res_drop(rb, "boot");
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

/* ---- LAVA devices (lava.h) ----
 * A LAVA board has no struct board: each slot is one LAVA job that boots the
 * mode and runs, in one go, the agent commands this runner would type on a
 * local board (identify, mode, precondition, the workloads).  When LAVA has
 * finished it, the pipeline above runs as for a local board, each agent
 * call answered from the job's log by the same protocol parser, so mode
 * proof, checks and storage are the same code. */

static void next_slot_cb(void *arg)
{
	next_slot(arg);
}

static int lava_board_init(struct runner *r, struct rboard *rb, struct lab_err *e)
{
	if (!r->lab->lava)
		return LAB_ERR(e, LAB_EUSAGE, "%s:%d: board %s is a LAVA device but the lab has no `lava:` server",
			       rb->cfg->file ? rb->cfg->file : "lab", rb->cfg->line, rb->cfg->name);
	int rc = lava_device_parse(rb->cfg->lava, &rb->ldev, e);
	if (rc)
		return rc;
	if (!r->lava && (rc = lava_new(r->loop, r->lab->lava, &r->lava, e)))
		return rc;
	rb->is_lava = true;
	return LAB_OK;
}

static bool rb_quarantined(struct rboard *rb)
{
	return rb->is_lava ? rb->lquarantined : board_quarantined(rb->b);
}

static void rb_health_fail(struct rboard *rb, const char *msg)
{
	if (!rb->is_lava) {
		board_health_fail(rb->b, msg);
		return;
	}
	const struct board_type *t = rb->cfg->type;
	rb->lfailures++;
	if (t && t->quarantine_after > 0 && rb->lfailures >= t->quarantine_after)
		rb->lquarantined = true;
}

/* Stop following the slot's LAVA job (the job itself is LAVA's). */
static void rb_stop(struct rboard *rb)
{
	loop_timer_stop(rb->r->loop, &rb->lt);
	lava_job_free(rb->lj);
	rb->lj = NULL;
	rb->lo = NULL;
	free(rb->largs);
	rb->largs = NULL;
}

static void on_lava_submitted(struct lava_job *lj, int64_t id, const char *url, void *arg)
{
	LAB_UNUSED(lj);
	struct rboard *rb = arg;
	/* journalled at once: run --resume re-attaches by this id (lava_resume_id) */
	char *m = xasprintf("LAVA job %lld submitted (iteration %d): %s", (long long)id,
			    cur_slot(rb)->iteration, url);
	record_event(rb, "info", "lava", m);
	free(m);
}

static void on_lava_done(struct lava_job *lj, const struct lava_outcome *o, void *arg)
{
	LAB_UNUSED(lj);
	struct rboard *rb = arg;
	res_drop(rb, "boot");
	if (o->rc != LAB_OK) {
		char *m = xasprintf("%s (%s)", o->msg, o->url[0] ? o->url : "not submitted");
		record_event(rb, o->kind ? o->kind : "lava-infra", "lava", m);
		slot_failed(rb, o->kind ? o->kind : "lava-infra", m);
		free(m);
		return;
	}
	if (rb->r->o->verbose)
		logf_(rb->r, "%s: LAVA job %lld complete on %s (%s)", rb->cfg->name, (long long)o->id,
		      o->device, o->worker);
	rb->lo = o;
	rb->lstep = 0;
	on_booted(NULL, LAB_OK, FAIL_NONE, NULL, rb);
}

/* run --resume: the LAVA job the interrupted controller submitted for this
 * slot and did not store, 0 when none.  The iteration it would have stored
 * is not marked done (resume_iter), so following it stores it once. */
static int64_t lava_resume_id(struct rboard *rb)
{
	struct runner *r = rb->r;
	int64_t run_id = r->jnl ? store_jnl_run_id(r->jnl) : 0;
	if (!r->o->resume || !run_id)
		return 0;
	int64_t id = 0;
	char msg[512] = "";
	char *like = xasprintf("LAVA job %% submitted (iteration %d): %%", cur_slot(rb)->iteration);
	long long v = 0;
	if (store_event_last(r->store, run_id, job_seq(r, cur_job(rb)), "info", "lava", like, msg,
			     sizeof msg) == LAB_OK &&
	    sscanf(msg, "LAVA job %lld", &v) == 1)
		id = v;
	free(like);
	return id;
}

static int rb_boot(struct rboard *rb)
{
	struct runner *r = rb->r;
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	const struct board_type *t = rb->cfg->type;
	rb_stop(rb);
	char *why = NULL;
	if (t && t->modes[j->mode].sysfs.n)
		why = xasprintf("the %s recipe writes sysfs: a LAVA device takes command-line recipes only",
				lab_mode_names[j->mode]);
	for (size_t i = 0; !why && i < j->suite->nworkloads; i++)
		if (strcmp(j->suite->workloads[i].name, "powerfail") == 0)
			why = xstrdup("powerfail cuts the power from the controller: not on a LAVA device");
	if (why) {
		record_event(rb, "lava-unsupported", NULL, why);
		finish_job(rb, j, JOB_INFRA, why);
		free(why);
		rb->cur++;
		loop_defer(r->loop, next_slot_cb, rb);
		return LAB_OK;
	}
	/* The commands the pipeline will ask for, in its order. */
	char *steps[64];
	size_t n = 0;
	steps[n++] = xstrdup("identify");
	steps[n++] = xasprintf("mode expect=%s", lab_mode_names[j->mode]);
	if (s->precondition && j->failures == 0)
		steps[n++] = xasprintf("precondition passes=%lld", (long long)j->suite->precondition_passes);
	for (size_t i = 0; i < j->suite->nworkloads && n < LAB_ARRAY_SIZE(steps); i++) {
		struct lab_buf a;
		workload_args(&a, &j->suite->workloads[i], s->iteration);
		steps[n++] = xstrdup(lab_buf_cstr(&a));
		lab_buf_free(&a);
	}
	char *name = xasprintf("emmclab %s %s %s %s iteration %d", r->lab->name, rb->cfg->name,
			       j->suite->name, lab_mode_names[j->mode], s->iteration);
	char *prefix = xasprintf("%s-%s-it%d", rb->cfg->name, lab_mode_names[j->mode], s->iteration);
	struct lava_job_spec sp = {
		.dev = &rb->ldev,
		.kernel = j->kernel,
		.name = name,
		.cmdline = t ? t->modes[j->mode].cmdline : NULL,
		.case_prefix = prefix,
		.steps = (const char *const *)steps,
		.nsteps = n,
	};
	char *def = lava_job_definition(&sp);
	struct lab_err e = {0};
	int64_t again = j->failures == 0 ? lava_resume_id(rb) : 0;
	int rc;
	if (again) {
		char *m = xasprintf("re-attaching to LAVA job %lld (submitted before the restart)",
				    (long long)again);
		record_event(rb, "info", "lava-resume", m);
		free(m);
		rc = lava_job_attach(r->lava, again, (const char *const *)steps, n,
				     rb->ldev.queue_timeout_ms, on_lava_done, rb, &rb->lj);
	} else {
		rc = lava_job_submit(r->lava, def, (const char *const *)steps, n,
				     rb->ldev.queue_timeout_ms, on_lava_submitted, on_lava_done, rb,
				     &rb->lj, &e);
	}
	if (rc)
		record_event(rb, "lava-infra", "lava", e.msg);
	free(def);
	free(name);
	free(prefix);
	for (size_t i = 0; i < n; i++)
		free(steps[i]);
	return rc;
}

/* Answer one agent call from the LAVA job's log: the step's protocol lines,
 * CRC-checked by proto_parse as on a console, in seq order, once each. */
static void on_lava_step(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct rboard *rb = arg;
	board_done_cb done = rb->ldone;
	const struct lava_outcome *o = rb->lo;
	const struct lava_step *st = o && rb->lstep < o->nsteps ? &o->steps[rb->lstep] : NULL;
	if (!st || strcmp(st->args, rb->largs) != 0) {
		char *m = xasprintf("the LAVA job has no output for `%s`", rb->largs);
		done(NULL, LAB_EINFRA, FAIL_AGENT_PROTOCOL, m, rb);
		free(m);
		return;
	}
	rb->lstep++;
	struct proto_msg *msgs = xcalloc(st->nlines ? st->nlines : 1, sizeof *msgs);
	size_t nm = 0;
	int bad = 0;
	for (size_t i = 0; i < st->nlines; i++) {
		int prc = proto_parse(st->lines[i], strlen(st->lines[i]), &msgs[nm]);
		if (prc == PROTO_OK) {
			bool dup = false;
			for (size_t k = 0; k < nm && !dup; k++)
				dup = msgs[k].seq == msgs[nm].seq;
			if (!dup)
				nm++;
		} else if (prc != PROTO_NOT_PROTO) {
			bad++;
		}
	}
	/* seq order (insertion sort: a step has few lines) */
	for (size_t i = 1; i < nm; i++)
		for (size_t k = i; k > 0 && msgs[k - 1].seq > msgs[k].seq; k--) {
			struct proto_msg tmp = msgs[k];
			msgs[k] = msgs[k - 1];
			msgs[k - 1] = tmp;
		}
	const struct proto_msg *dn = NULL;
	for (size_t i = 0; i < nm; i++)
		if (strcmp(msgs[i].kind, "done") == 0)
			dn = &msgs[i];
	int64_t lines = 0;
	bool complete = dn && proto_get_i64(dn, "lines", &lines) == 0 ? (int64_t)nm >= lines : dn != NULL;
	/* status points into msgs: decide before they are freed */
	const char *status = dn ? proto_get(dn, "status") : NULL;
	bool status_ok = status && strcmp(status, "ok") == 0;
	bool have_status = status != NULL, have_done = dn != NULL;
	for (size_t i = 0; i < nm; i++)
		rb->lmsg(NULL, &msgs[i], rb);
	free(msgs);
	if (st->exit_status < 0) {
		done(NULL, LAB_EINFRA, FAIL_COMMAND_TIMEOUT,
		     "the agent command did not finish within the LAVA job", rb);
	} else if (!complete || !status_ok) {
		char *m = xasprintf("agent output in the LAVA log: %s%s%d corrupt line(s), exit %d",
				    !have_done ? "no `done` line; " : !complete ? "lines missing; " : "",
				    have_status && !status_ok ? "error status; " : "", bad,
				    st->exit_status);
		done(NULL, LAB_EINFRA, FAIL_AGENT_PROTOCOL, m, rb);
		free(m);
	} else {
		done(NULL, LAB_OK, FAIL_NONE, NULL, rb);
	}
}

static int rb_agent(struct rboard *rb, const char *args, uint64_t timeout_ms, board_msg_cb msg_cb,
		    board_done_cb done_cb)
{
	if (!rb->is_lava)
		return board_agent(rb->b, args, timeout_ms, msg_cb, done_cb, rb);
	free(rb->largs);
	rb->largs = xstrdup(args);
	rb->lmsg = msg_cb;
	rb->ldone = done_cb;
	loop_timer_start(rb->r->loop, &rb->lt, 0);
	return LAB_OK;
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
	res_drop(rb, "test"); /* the slot before this one is over */
	if (rb->is_lava) /* one LAVA job per slot: every slot boots */
		rb->booted_job = -1;
	if (rb_quarantined(rb) && rb->cur < rb->pb->nslots) {
		skip_rest(rb, "board quarantined");
		end_board(rb);
		return;
	}
	while (rb->cur < rb->pb->nslots &&
	       (cur_job(rb)->status >= JOB_OK || (rb->slot_done && rb->slot_done[rb->cur])))
		rb->cur++;
	if (r->stopping || rb->cur >= rb->pb->nslots) {
		end_board(rb);
		return;
	}
	struct plan_job *j = cur_job(rb);
	const struct plan_slot *s = cur_slot(rb);
	if (!j->started_ns) {
		j->started_ns = lab_now_ns();
		job_started(rb, j);
	} else if ((lab_now_ns() - j->started_ns) / 1000000ull > job_timeout(rb)) {
		char *m = xasprintf("job ran past its time limit (%llu ms: the plan's job_budget or the type's timeouts.job); timed out",
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
		if (!res_take(rb, "boot", start_board))
			return;
		prog_stage(rb, "booting");
		logf_(r, "%s: booting for %s (%s iteration %d of %d)", rb->cfg->name,
		      lab_mode_names[j->mode], j->suite->name, s->iteration, j->iterations);
		if (rb->is_lava ? rb_boot(rb) != LAB_OK
				: board_boot(rb->b, j->kernel, extra ? extra : "", r->transcript_dir,
					     on_booted, rb) != LAB_OK)
			slot_failed(rb, "power", "board busy or not startable");
		return;
	}
	/* Same boot, same job: the mode was verified at boot; run the next iteration. */
	start_workloads(rb);
}

/* ---- the store: journal entries, flushed from a timer, retried while busy ----
 * Every write of the run is a journal entry (store.h); a flush commits what
 * is pending in one transaction on the next loop pass.  When another process
 * holds the database lock the flush gives up at once and is retried with
 * backoff for the lab's store_wait; the entries wait in memory and in the
 * journal file meanwhile, so neither the loop nor the night is lost. */

#define RUN_BUSY_TIMEOUT_MS 20
/* Entries are safe in the journal file when written; the database gets them
 * at most this much later, many boards' iterations in one transaction (a
 * commit per loop pass was most of the store's WAL writes and locks at
 * hundreds of boards).  A controller killed meanwhile loses nothing: the
 * next run, or `run --resume`, replays the journal. */
#define FLUSH_TICK_MS 50
#define FLUSH_BACKOFF_MIN_MS 50
#define FLUSH_BACKOFF_MAX_MS 2000

static int job_seq(struct runner *r, const struct plan_job *j)
{
	return (int)(j - r->plan->jobs);
}

static void job_started(struct rboard *rb, struct plan_job *j)
{
	struct lab_err e = {0};
	j->status = JOB_RUNNING;
	if (store_jnl_job_start(rb->r->jnl, job_seq(rb->r, j), &e))
		store_fail(rb->r, &e);
	jnl_dirty(rb->r);
}

static void jnl_dirty(struct runner *r)
{
	if (r->jnl && !r->backoff_ms && !loop_timer_pending(&r->flush_t))
		loop_timer_start(r->loop, &r->flush_t, FLUSH_TICK_MS);
}

static bool store_gave_up(const struct runner *r)
{
	return r->err.msg[0] != '\0';
}

/* The outcome of a flush of n entries: the backoff while the database is
 * busy, giving up after store_wait, the note once it waited. */
static void flush_result(struct runner *r, int rc, bool busy, size_t n, struct lab_err *e)
{
	if (rc) {
		store_fail(r, e); /* the entries stay in the journal for a replay */
		return;
	}
	uint64_t now = loop_now_ms(r->loop);
	if (busy) {
		if (!r->backoff_ms) {
			r->busy_since_ms = now;
			r->backoff_ms = FLUSH_BACKOFF_MIN_MS;
			r->busy_waits++;
			logf_(r, "results store busy (another process holds the database lock), "
				 "retrying; %zu entries wait in the journal", n);
		} else if (r->backoff_ms < FLUSH_BACKOFF_MAX_MS) {
			r->backoff_ms = r->backoff_ms * 2 > FLUSH_BACKOFF_MAX_MS ? FLUSH_BACKOFF_MAX_MS
										 : r->backoff_ms * 2;
		}
		if (now - r->busy_since_ms > r->lab->store_wait_ms) {
			lab_err_set(e, LAB_EINFRA,
				    "%s: database busy for %.0f s (lab store_wait); %zu entries kept in "
				    "the journal for the next run", store_path(r->store),
				    (double)(now - r->busy_since_ms) / 1000.0, n);
			store_fail(r, e);
			return;
		}
		loop_timer_stop(r->loop, &r->flush_t);
		loop_timer_start(r->loop, &r->flush_t, r->backoff_ms);
		return;
	}
	if (!r->res->run_id)
		r->res->run_id = store_jnl_run_id(r->jnl);
	if (r->backoff_ms) {
		uint64_t waited = now - r->busy_since_ms;
		r->busy_total_ms += waited;
		r->backoff_ms = 0;
		char *m = xasprintf("results store busy for %.1f s (another process held the database "
				    "lock); %zu entries waited in the journal, nothing lost",
				    (double)waited / 1000.0, n);
		logf_(r, "%s", m);
		if (store_jnl_event(r->jnl, -1, NULL, "store-busy", NULL, m, e))
			store_fail(r, e);
		free(m);
	}
	if (store_jnl_pending(r->jnl))
		jnl_dirty(r);
}

static void flush_now(struct runner *r)
{
	if (!r->jnl || store_jnl_pending(r->jnl) == 0 || store_gave_up(r))
		return;
	if (store_jnl_async_fd(r->jnl) >= 0) {
		/* on the journal's thread; on_jnl_done takes the outcome */
		store_jnl_flush_start(r->jnl);
		return;
	}
	size_t n = store_jnl_pending(r->jnl);
	bool busy = false;
	struct lab_err e = {0};
	int rc = store_jnl_flush(r->jnl, &busy, &e);
	flush_result(r, rc, busy, n, &e);
}

static void on_jnl_done(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(fd);
	LAB_UNUSED(ev);
	struct runner *r = arg;
	if (!store_jnl_inflight(r->jnl))
		return;
	size_t n = 0;
	bool busy = false;
	struct lab_err e = {0};
	int rc = store_jnl_flush_done(r->jnl, &n, &busy, &e);
	if (store_jnl_inflight(r->jnl))
		return; /* woken early */
	flush_result(r, rc, busy, busy || rc ? store_jnl_pending(r->jnl) : n, &e);
}

/* Entries not yet committed: pending, or with the journal's thread. */
static size_t jnl_outstanding(const struct runner *r)
{
	return r->jnl ? store_jnl_pending(r->jnl) + (store_jnl_inflight(r->jnl) ? 1 : 0) : 0;
}

static void on_flush(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	flush_now(arg);
}

static void on_wake(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	*(bool *)arg = true;
}

/* A wait on the loop (signals and children still handled). */
static void runner_wait(struct runner *r, uint64_t ms)
{
	bool woke = false;
	struct loop_timer t;
	loop_timer_init(&t, on_wake, &woke);
	loop_timer_start(r->loop, &t, ms);
	while (!woke)
		if (loop_run_once(r->loop, -1) < 0)
			break;
	loop_timer_stop(r->loop, &t);
}

/* After the boards: commit what is pending, however long the lock is held
 * (up to store_wait). */
static void drain_store(struct runner *r)
{
	while (jnl_outstanding(r) > 0 && !store_gave_up(r)) {
		if (!store_jnl_inflight(r->jnl) && !loop_timer_pending(&r->flush_t))
			loop_timer_start(r->loop, &r->flush_t, 0);
		if (loop_run_once(r->loop, -1) < 0)
			break;
	}
}

/* The run row's status and its uploads, in one transaction; retried while busy. */
static int finish_run_row(struct runner *r, const char *status, struct lab_err *fe)
{
	uint64_t t0 = loop_now_ms(r->loop), backoff = FLUSH_BACKOFF_MIN_MS;
	for (;;) {
		*fe = (struct lab_err){0};
		int rc = upload_finish_run(r->store, r->res->run_id, status,
					   upload_config_targets(r->lab), fe);
		if (!rc || !store_busy(r->store) ||
		    loop_now_ms(r->loop) - t0 > r->lab->store_wait_ms)
			return rc;
		runner_wait(r, backoff);
		backoff = backoff * 2 > FLUSH_BACKOFF_MAX_MS ? FLUSH_BACKOFF_MAX_MS : backoff * 2;
	}
}

/* ---- runs of dead controllers ----
 * Runs left 'running' by a controller that was killed (SIGKILL, power loss of
 * the controller): everything they committed is whole (iterations are atomic);
 * mark them aborted and their unfinished jobs infra (finished_at stays NULL:
 * --resume re-runs those), so reports do not wait for them.  Dead is judged
 * by pid, process start time and boot id (lock.h), not by pid alone. */
struct dead_runs {
	int64_t id[64];
	size_t n;
};

static void proc_from_cfg(const char *cfg, struct lock_proc *p)
{
	char v[64];
	memset(p, 0, sizeof *p);
	size_t len = cfg ? strlen(cfg) : 0;
	if (!len)
		return;
	if (json_get(cfg, len, "pid", v, sizeof v, NULL) == LAB_OK)
		lab_parse_i64(v, &p->pid);
	if (json_get(cfg, len, "pid_start", v, sizeof v, NULL) == LAB_OK)
		p->start = strtoull(v, NULL, 10);
	if (json_get(cfg, len, "boot_id", v, sizeof v, NULL) == LAB_OK)
		lab_strlcpy(p->boot_id, v, sizeof p->boot_id);
}

static void note_dead(int64_t run_id, const char *cfg, void *arg)
{
	struct dead_runs *d = arg;
	struct lock_proc p;
	proc_from_cfg(cfg, &p);
	if (d->n < LAB_ARRAY_SIZE(d->id) && p.pid > 0 && !lock_proc_alive(&p))
		d->id[d->n++] = run_id;
}

static void reap_dead_runs(struct runner *r, const char *host)
{
	struct dead_runs d = {.n = 0};
	struct lab_err e = {0};
	if (store_runs_running_cfg(r->store, host, note_dead, &d, &e) != LAB_OK)
		return;
	for (size_t i = 0; i < d.n; i++) {
		e = (struct lab_err){0};
		if (store_run_abort_dead(r->store, d.id[i], &e) == LAB_OK)
			logf_(r, "run %lld: its controller died; marked aborted", (long long)d.id[i]);
	}
}

/* A quarantine event with no later unquarantine (emmclab board NAME release). */
static bool board_still_quarantined(struct store *s, const char *name)
{
	struct lab_err e = {0};
	int64_t id = 0;
	bool q = false;
	return store_board_find(s, name, &id, &e) == LAB_OK && id > 0 &&
	       store_board_quarantined(s, id, &q, &e) == LAB_OK && q;
}

/* ---- board locks ---- */

static int lock_boards(struct runner *r, struct lab_err *e)
{
	r->lockdir = lock_dir(r->lab->locks, e);
	if (!r->lockdir)
		return e->rc ? e->rc : LAB_EINFRA;
	for (size_t i = 0; i < r->nrb; i++) {
		struct rboard *rb = &r->rb[i];
		struct lock_holder h;
		struct lab_err le = {0};
		if (lock_take(r->lockdir, rb->cfg->name, &rb->lock, &h, &le) == LAB_OK)
			continue;
		rb->locked_by = h.proc.pid > 0 ? xasprintf("board locked by pid %lld (%s) since %s",
							   (long long)h.proc.pid, h.cmd, h.since)
					       : xstrdup(le.msg);
		logf_(r, "%s: %s: its jobs are skipped", rb->cfg->name, rb->locked_by);
	}
	return LAB_OK;
}

static void start_board(void *arg)
{
	struct rboard *rb = arg;
	if (rb->locked_by) {
		/* Another process drives this board: touch nothing, record why. */
		record_event(rb, "board-locked", NULL, rb->locked_by);
		skip_rest(rb, rb->locked_by);
		board_finished(rb);
		return;
	}
	next_slot(rb);
}

/* ---- resume ----
 * The run's stored iterations say what is done: an iteration (slot) whose
 * every workload is stored is never run again; one stored in part was
 * interrupted: discarded (a journal entry) and run again.  A job that ended
 * for its own reasons (ok, mode mismatch, an infra failure it finished with,
 * a quarantine) stays as it is; one that ended because the run did is
 * resumed. */
struct resume_ctx {
	struct runner *r;
	uint64_t **mask; /* per job: bit w of mask[n] = workload w of iteration n stored */
	char bad[256];
};

static int wl_index(const struct suite_cfg *s, const char *name)
{
	for (size_t i = 0; i < s->nworkloads && i < 64; i++)
		if (strcmp(s->workloads[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool job_resumable(const struct store_resume_job *j)
{
	const char *st = j->status;
	if (!strcmp(st, "pending") || !strcmp(st, "running"))
		return true;
	if (!strcmp(st, "infra"))
		return j->finished_at == NULL; /* marked by reap_dead_runs */
	if (!strcmp(st, "skipped"))
		return !j->cause || (strcmp(j->cause, "board quarantined") != 0 &&
				     strcmp(j->cause, "wrong part fitted") != 0);
	return false;
}

static void resume_job(const struct store_resume_job *sj, void *arg)
{
	struct resume_ctx *c = arg;
	struct runner *r = c->r;
	if (sj->seq < 0 || (size_t)sj->seq >= r->plan->njobs) {
		snprintf(c->bad, sizeof c->bad, "job %d is not in this plan", sj->seq);
		return;
	}
	struct plan_job *j = &r->plan->jobs[sj->seq];
	const char *board = r->lab->boards[j->board].name;
	if (strcmp(sj->board, board) || strcmp(sj->suite, j->suite->name) ||
	    strcmp(sj->mode, lab_mode_names[j->mode])) {
		snprintf(c->bad, sizeof c->bad, "job %d was %s/%s/%s, the plan now says %s/%s/%s",
			 sj->seq, sj->board, sj->suite, sj->mode, board, j->suite->name,
			 lab_mode_names[j->mode]);
		return;
	}
	if (job_resumable(sj))
		return;
	static const char *const names[] = {"pending", "running", "ok", "infra", "mode-mismatch",
					    "skipped"};
	for (int s = JOB_OK; s <= JOB_SKIPPED; s++)
		if (!strcmp(sj->status, names[s]))
			j->status = s;
	if (j->status < JOB_OK)
		j->status = JOB_INFRA;
	switch (j->status) {
	case JOB_OK: r->res->jobs_ok++; break;
	case JOB_INFRA: r->res->jobs_infra++; break;
	case JOB_MISMATCH: r->res->jobs_mismatch++; break;
	default: r->res->jobs_skipped++; break;
	}
}

static void resume_iter(int seq, const char *workload, int n, void *arg)
{
	struct resume_ctx *c = arg;
	struct runner *r = c->r;
	if (seq < 0 || (size_t)seq >= r->plan->njobs)
		return;
	struct plan_job *j = &r->plan->jobs[seq];
	int w = wl_index(j->suite, workload);
	if (w < 0 || n < 1 || n > j->iterations)
		return;
	c->mask[seq][n] |= 1ull << w;
}

static int resume_prepare(struct runner *r, const char *arg, char uuid[40], char *cfg_json,
			  struct lab_err *e)
{
	struct lab_cfg *lab = r->lab;
	int64_t id = 0;
	int rc = arg && *arg ? store_run_find(r->store, arg, &id, e)
			     : store_run_latest_unfinished(r->store, lab->plan->name, lab->name, &id, e);
	if (rc)
		return rc;
	struct store_run_row row;
	if ((rc = store_run_get(r->store, id, &row, e)))
		return rc;
	if (!strcmp(row.status, "complete"))
		return lab_err_set(e, LAB_EUSAGE, "run %lld is complete: nothing to resume",
				   (long long)id);
	if (!strcmp(row.status, "merging"))
		return lab_err_set(e, LAB_EUSAGE,
				   "run %lld is being copied by `emmclab db merge` (or a merge that died "
				   "left it: merge again): not resumable", (long long)id);
	if (strcmp(row.plan, lab->plan->name) || strcmp(row.lab, lab->name))
		return lab_err_set(e, LAB_EUSAGE, "run %lld is plan %s on lab %s, not %s on %s",
				   (long long)id, row.plan, row.lab, lab->plan->name, lab->name);
	struct resume_ctx c = {.r = r};
	c.mask = xcalloc(r->plan->njobs, sizeof *c.mask);
	for (size_t i = 0; i < r->plan->njobs; i++)
		c.mask[i] = xcalloc((size_t)r->plan->jobs[i].iterations + 1, sizeof **c.mask);
	char *old_cfg = NULL;
	rc = store_run_resume_info(r->store, id, &old_cfg, resume_job, resume_iter, &c, e);
	struct lock_proc p;
	proc_from_cfg(old_cfg, &p);
	free(old_cfg);
	if (!rc && !strcmp(row.status, "running") && p.pid > 0 && p.pid != (int64_t)getpid() &&
	    lock_proc_alive(&p))
		rc = lab_err_set(e, LAB_EUSAGE, "run %lld is still running (pid %lld)", (long long)id,
				 (long long)p.pid);
	if (!rc && c.bad[0])
		rc = lab_err_set(e, LAB_EUSAGE, "run %lld was made from another plan: %s",
				 (long long)id, c.bad);
	if (!rc) {
		lab_strlcpy(uuid, row.uuid, 40);
		rc = store_jnl_open(r->store, uuid, &r->jnl, e);
	}
	if (!rc)
		rc = store_jnl_resume(r->jnl, cfg_json, e);
	int done_iters = 0, dropped = 0;
	for (size_t i = 0; i < r->plan->njobs && !rc; i++) {
		struct plan_job *j = &r->plan->jobs[i];
		if (j->status >= JOB_OK)
			continue;
		uint64_t full = j->suite->nworkloads >= 64 ? ~0ull : (1ull << j->suite->nworkloads) - 1;
		for (int n = 1; n <= j->iterations && !rc; n++) {
			if (c.mask[i][n] == full && full) {
				j->done_iterations++;
				done_iters++;
				continue;
			}
			for (size_t w = 0; w < j->suite->nworkloads && w < 64 && !rc; w++)
				if (c.mask[i][n] & (1ull << w)) {
					rc = store_jnl_iteration_drop(r->jnl, (int)i,
								      j->suite->workloads[w].name, n, e);
					dropped++;
				}
			c.mask[i][n] = 0;
		}
	}
	for (size_t b = 0; b < r->nrb && !rc; b++) {
		struct rboard *rb = &r->rb[b];
		rb->slot_done = xcalloc(rb->pb->nslots + 1, sizeof *rb->slot_done);
		for (size_t k = 0; k < rb->pb->nslots; k++) {
			const struct plan_slot *s = &rb->pb->slots[k];
			struct plan_job *j = &r->plan->jobs[s->job];
			rb->slot_done[k] = j->status < JOB_OK && c.mask[s->job][s->iteration] != 0;
		}
	}
	/* A job whose every iteration is stored only missed its ending. */
	for (size_t i = 0; i < r->plan->njobs && !rc; i++) {
		struct plan_job *j = &r->plan->jobs[i];
		if (j->status < JOB_OK && j->done_iterations >= j->iterations) {
			j->status = JOB_OK;
			r->res->jobs_ok++;
			rc = store_jnl_job_finish(r->jnl, (int)i, "ok", NULL, e);
		}
	}
	for (size_t i = 0; i < r->plan->njobs; i++)
		free(c.mask[i]);
	free(c.mask);
	if (!rc) {
		r->res->run_id = id;
		logf_(r, "run %lld: resuming: %d iterations already stored, %d interrupted ones "
			 "discarded", (long long)id, done_iters, dropped);
	}
	return rc;
}

/* ---- signals and budget ---- */

static void on_hard_deadline(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(t);
	struct runner *r = arg;
	logf_(r, "boards still powering off after the abort: giving up on them");
	loop_stop(l);
}

/* The second signal: abort what is in flight, but still power every board
 * off (bounded), and mark the run aborted. */
static void hard_stop(struct runner *r)
{
	r->hard_stop = true;
	r->stopping = true;
	r->res->aborted = true;
	logf_(r, "second signal: aborting now; powering every board off");
	for (size_t i = 0; i < r->nrb; i++) {
		struct rboard *rb = &r->rb[i];
		if (rb->done || rb->locked_by)
			continue;
		powerfail_stop(&rb->pf);
		if (rb->is_lava) {
			rb_stop(rb);
			board_finished(rb);
			continue;
		}
		board_abort(rb->b);
		if (board_power_off(rb->b, on_powered_off, rb) != LAB_OK)
			board_finished(rb);
	}
	loop_timer_start(r->loop, &r->hard_t, 15000);
}

static void on_signal(struct loop *l, int signo, void *arg)
{
	LAB_UNUSED(l);
	struct runner *r = arg;
	if (++r->signals >= 2) {
		if (!r->hard_stop) {
			hard_stop(r);
		} else if (r->signals >= 3 && jnl_outstanding(r)) {
			/* Waiting for a busy database after the boards stopped: give up
			 * the wait, not the results (they stay in the journal). */
			struct lab_err e = {0};
			lab_err_set(&e, LAB_EINFRA, "stopped while the database was busy; %zu entries "
						    "kept in the journal for the next run",
				    store_jnl_pending(r->jnl));
			store_fail(r, &e);
		}
		return;
	}
	r->stopping = true;
	r->res->aborted = true;
	logf_(r, "signal %d: finishing the iterations in flight, then powering the boards off "
		 "(again to abort now)", signo);
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

/* progress.h: the run and its boards, with each board's slot estimate. */
static void run_progress_begin(struct runner *r)
{
	struct progress *p = r->o->progress;
	if (!p)
		return;
	progress_run_begin(p, r->loop, r->res->run_id, r->lab->plan->name, r->lab->name, r->plan->njobs);
	/* ETAs from the start: past runs' slot times (schedule.h), before the loop runs */
	struct schedule_est est;
	struct lab_err e = {0};
	bool have = schedule_estimate(r->lab, r->plan, r->store, &est, &e) == LAB_OK;
	for (size_t i = 0; i < r->nrb; i++) {
		const struct plan_board *pb = r->rb[i].pb;
		double sum = 0;
		for (size_t k = 0; have && k < pb->nslots; k++)
			sum += est.jobs[pb->slots[k].job].slot_s >= 0 ? est.jobs[pb->slots[k].job].slot_s : 0;
		progress_board(p, i, r->rb[i].cfg->name, pb->nslots, pb->nslots ? sum / (double)pb->nslots : 0);
	}
	schedule_est_free(&est);
}

/* The controller's identity in the run row: host, pid, its start time and
 * the boot id, so a later run tells a dead controller from a live one. */
static char *controller_json(struct runner *r, const char *host)
{
	struct lock_proc me;
	lock_proc_self(&me);
	struct lab_buf cfg;
	lab_buf_init(&cfg, 0);
	lab_buf_printf(&cfg, "{\"plan\":");
	json_buf_str(&cfg, r->lab->plan->name);
	lab_buf_printf(&cfg, ",\"lab\":");
	json_buf_str(&cfg, r->lab->name);
	lab_buf_printf(&cfg, ",\"boards\":%zu,\"jobs\":%zu,\"host\":", r->plan->nboards,
		       r->plan->njobs);
	json_buf_str(&cfg, host);
	lab_buf_printf(&cfg, ",\"pid\":%ld,\"pid_start\":%llu,\"boot_id\":", (long)me.pid,
		       (unsigned long long)me.start);
	json_buf_str(&cfg, me.boot_id);
	lab_buf_printf(&cfg, "}");
	char *s = xstrdup(lab_buf_cstr(&cfg));
	lab_buf_free(&cfg);
	return s;
}

static int journal_boards(struct runner *r, struct lab_err *e)
{
	int rc = LAB_OK;
	for (size_t i = 0; i < r->nrb && !rc; i++) {
		const struct board_cfg *bc = r->rb[i].cfg;
		rc = store_jnl_board(r->jnl, bc->name, bc->type_name, bc->type ? bc->type->host : NULL,
				     r->lab->name, e);
	}
	return rc;
}

/* The run's source (docs/reports.md, Provenance): the `source:` of the types of
 * the boards its jobs run on, "mixed" when they differ; no type is a lab board. */
static const char *run_source(const struct runner *r)
{
	int src = -1;
	for (size_t i = 0; i < r->plan->njobs; i++) {
		const struct board_cfg *bc = &r->lab->boards[r->plan->jobs[i].board];
		int b = bc->type ? bc->type->source : CONFIG_SOURCE_LAB;
		if (src >= 0 && b != src)
			return "mixed";
		src = b;
	}
	return config_source_names[src < 0 ? CONFIG_SOURCE_LAB : src];
}

/* A new run: its row, its boards and every job of the plan (pending, no
 * part yet), so a job that fails before identify is still counted. */
static int begin_new_run(struct runner *r, const char *cfg_json, struct lab_err *e)
{
	char uuid[37];
	int rc = store_new_uuid(uuid, e);
	if (!rc)
		rc = store_jnl_open(r->store, uuid, &r->jnl, e);
	if (rc)
		return rc;
	struct store_run_info ri = {.plan = r->lab->plan->name, .lab = r->lab->name, .source = run_source(r),
				    .config_json = cfg_json};
	if ((rc = store_jnl_run(r->jnl, &ri, e)) || (rc = journal_boards(r, e)))
		return rc;
	for (size_t i = 0; i < r->plan->njobs && !rc; i++) {
		const struct plan_job *j = &r->plan->jobs[i];
		const struct board_cfg *bc = &r->lab->boards[j->board];
		rc = store_jnl_job(r->jnl, (int)i, bc->name, j->suite->name, lab_mode_names[j->mode],
				   bc->type ? bc->type->modes[j->mode].cmdline : NULL, e);
	}
	return rc;
}

/* Wait for the transcript pruning, if it still runs; say: and tell what it did. */
static void prune_finish(struct runner *r, bool say)
{
	struct prune_job *pj = &r->prune;
	if (pj->started) {
		pthread_join(pj->th, NULL);
		pj->started = false;
	}
	if (say && pj->rc)
		logf_(r, "%s", pj->err.msg);
	else if (say && pj->removed)
		logf_(r, "transcripts: removed the %zu oldest (%.1f MiB) to stay under transcripts_keep",
		      pj->removed, (double)pj->freed / 1048576.0);
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
	if ((rc = schedule_res_new(lab, &r.shared, e))) /* bad resources or uses, before any board is powered */
		goto out;
	loop_timer_init(&r.flush_t, on_flush, &r);
	loop_timer_init(&r.hard_t, on_hard_deadline, &r);
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
	/* The directory's total stays under the lab's cap: the oldest
	 * transcripts go first (never this run's: only files a minute old),
	 * on a thread; its result is logged when the boards are done. */
	r.prune = (struct prune_job){.dir = r.transcript_dir, .keep = lab->transcripts_keep};
	if (lab->transcripts_keep) {
		r.prune.started = lab_thread_start(&r.prune.th, prune_main, &r.prune) == 0;
		if (!r.prune.started)
			prune_main(&r.prune);
	}
	for (size_t i = 0; i < r.plan->nnotes; i++)
		logf_(&r, "%s", r.plan->notes[i]);

	/* Journals of controllers that died are committed before anything else. */
	{
		struct lab_buf jl;
		lab_buf_init(&jl, 0);
		int nrep = 0;
		struct lab_err je = {0};
		if (store_jnl_replay_dir(s, &nrep, &jl, &je))
			logf_(&r, "%s", je.msg);
		if (jl.len)
			logf_(&r, "%.*s", (int)(jl.len - 1), jl.data);
		lab_buf_free(&jl);
	}
	store_set_busy_timeout(s, RUN_BUSY_TIMEOUT_MS);

	r.rb = xcalloc(r.plan->nboards, sizeof *r.rb);
	static const struct board_events bev = {.event = on_board_event, .transcript = on_transcript};
	for (size_t i = 0; i < r.plan->nboards; i++) {
		struct rboard *rb = &r.rb[i];
		rb->r = &r;
		rb->pb = &r.plan->boards[i];
		rb->cfg = &lab->boards[rb->pb->board];
		rb->booted_job = -1;
		powerfail_init(&rb->pf, r.loop, &pf_hooks, rb);
		collect_reset(&rb->col);
		loop_timer_init(&rb->lt, on_lava_step, rb);
		if (rb->cfg->lava) {
			rc = lava_board_init(&r, rb, e);
		} else {
			rc = board_new(r.loop, lab, rb->cfg, &bev, rb, &rb->b, e);
		}
		if (rc)
			goto out_boards;
		r.nrb++;
		if (board_still_quarantined(s, rb->cfg->name)) {
			/* Not retried forever: a quarantined board waits for an operator. */
			if (rb->is_lava)
				rb->lquarantined = true;
			else
				board_health_restore(rb->b, 0, true);
			logf_(&r, "%s: quarantined by an earlier run: skipped (emmclab board %s release)",
			      rb->cfg->name, rb->cfg->name);
		}
	}
	if ((rc = lock_boards(&r, e)))
		goto out_boards;
	char host[128] = "";
	gethostname(host, sizeof host - 1);
	char *cfg_json = controller_json(&r, host);
	reap_dead_runs(&r, host);
	rc = o->resume ? resume_prepare(&r, o->resume, (char[40]){0}, cfg_json, e)
		       : begin_new_run(&r, cfg_json, e);
	if (!rc && o->resume)
		rc = journal_boards(&r, e);
	free(cfg_json);
	if (rc)
		goto out_boards;
	/* The run row first: its id is known from here on (or after the
	 * database lock is released). */
	flush_now(&r);
	/* From here on the journal's SQLite work runs on its own thread; without
	 * one (no second connection, no thread) it stays on this one. */
	if (r.jnl) {
		struct lab_err ae = {0};
		if (store_jnl_async(r.jnl, RUN_BUSY_TIMEOUT_MS, &ae) != LAB_OK)
			logf_(&r, "results store: commits stay on the event loop's thread: %s", ae.msg);
		else if (store_jnl_async_fd(r.jnl) >= 0 &&
			 loop_fd_add(r.loop, store_jnl_async_fd(r.jnl), LOOP_READ, on_jnl_done, &r) != 0) {
			store_jnl_async_end(r.jnl);
			logf_(&r, "results store: commits stay on the event loop's thread: "
				  "cannot watch the journal thread's eventfd");
		}
	}
	res->jobs = (int)r.plan->njobs;

	r.active = r.nrb;
	run_progress_begin(&r);
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
	loop_timer_stop(r.loop, &r.hard_t);
	for (size_t i = 0; i < r.plan->njobs; i++) {
		struct plan_job *j = &r.plan->jobs[i];
		if (j->status < JOB_OK) {
			j->status = JOB_SKIPPED;
			res->jobs_skipped++;
			struct lab_err je = {0};
			if (store_jnl_job_finish(r.jnl, (int)i, "skipped",
						 res->aborted ? "run stopped" : "not started", &je))
				store_fail(&r, &je);
		}
	}
	if (r.lava) {
		struct lava_stats ls;
		lava_get_stats(r.lava, &ls);
		logf_(&r, "lava: %llu requests (%llu polls), %llu bytes of job logs fetched and parsed",
		      (unsigned long long)ls.requests, (unsigned long long)ls.polls,
		      (unsigned long long)ls.log_bytes);
	}
	prune_finish(&r, true);
	/* Everything of the run commits before its row says it ended. */
	drain_store(&r);
	loop_signal(r.loop, SIGINT, NULL, NULL);
	loop_signal(r.loop, SIGTERM, NULL, NULL);
	res->store_busy_ms = r.busy_total_ms;
	res->store_busy_waits = r.busy_waits;
	if (!res->run_id && r.jnl)
		res->run_id = store_jnl_run_id(r.jnl);
	if (res->run_id && !store_gave_up(&r)) {
		const char *status = r.hard_stop ? "aborted" : res->aborted ? "interrupted" : "complete";
		struct lab_err fe = {0};
		/* Finishing the run and queueing its uploads is one transaction: a
		 * completed run is never without its outbox entries (upload.c). */
		if (finish_run_row(&r, status, &fe) && !r.err.msg[0])
			r.err = fe;
		if (o->progress)
			progress_run_end(o->progress, status);
	} else if (res->run_id) {
		/* the run row stays 'running': the next run finds it dead (or resumes it) */
		if (o->progress)
			progress_run_end(o->progress, "stopped (results wait in the journal)");
	}
	if (r.err.msg[0]) {
		*e = r.err;
		rc = r.err.rc ? r.err.rc : LAB_EINFRA;
	}
out_boards:
	for (size_t i = 0; i < r.nrb; i++) {
		powerfail_fini(&r.rb[i].pf);
		collect_free(&r.rb[i].col);
		rb_stop(&r.rb[i]);
		lava_device_free(&r.rb[i].ldev);
		board_free(r.rb[i].b);
		lock_release(r.rb[i].lock);
		free(r.rb[i].locked_by);
		free(r.rb[i].slot_done);
	}
	free(r.rb);
	if (store_jnl_async_fd(r.jnl) >= 0)
		loop_fd_del(r.loop, store_jnl_async_fd(r.jnl));
	store_jnl_close(r.jnl);
	loop_timer_stop(r.loop, &r.flush_t);
	/* Let the children the boards' drivers killed (exec consoles, QEMU,
	 * flashers) be reaped and deferred frees run, bounded, before the loop goes. */
	uint64_t drain_end = loop_now_ms(r.loop) + 5000;
	while (!loop_idle(r.loop) && loop_now_ms(r.loop) < drain_end)
		loop_run_once(r.loop, 50);
out:
	prune_finish(&r, false);
	lava_free(r.lava);
	schedule_res_free(r.shared);
	loop_free(r.loop);
	free(r.transcript_dir);
	free(r.lockdir);
	plan_free(r.plan);
	return rc;
}
