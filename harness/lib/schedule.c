/* schedule.c - see schedule.h. */
#include "schedule.h"
#include "loop.h"
#include "progress.h"

#include <stdlib.h>
#include <string.h>

struct vals {
	double *v;
	size_t n;
};

static void push_val(double x, void *arg)
{
	struct vals *a = arg;
	a->v = xreallocarray(a->v, a->n + 1, sizeof *a->v);
	a->v[a->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(struct vals *a)
{
	if (a->n == 0)
		return -1;
	qsort(a->v, a->n, sizeof *a->v, cmp_double);
	return a->n % 2 ? a->v[a->n / 2] : (a->v[a->n / 2 - 1] + a->v[a->n / 2]) / 2;
}

struct spans {
	struct vals overhead, per_slot;
	size_t virt; /* schedules whose iterations took longer than the board's wall time */
};

static void push_span(double span_s, double dur_s, int64_t slots, void *arg)
{
	struct spans *sp = arg;
	if (slots <= 0 || span_s < 0)
		return;
	push_val(span_s / (double)slots, &sp->per_slot);
	if (dur_s > span_s)
		sp->virt++;
	else
		push_val((span_s - dur_s) / (double)slots, &sp->overhead);
}

/* The board schedules of a type and suite, the same for each of its modes:
 * read once per pair. */
struct span_cache {
	const char *type;
	const void *suite;
	struct spans sp;
};

static int spans_of(struct store *s, const char *type, const struct plan_job *j,
                    struct span_cache **cache, size_t *n, struct spans **out, struct lab_err *e)
{
	for (size_t k = 0; k < *n; k++)
		if ((*cache)[k].suite == (const void *)j->suite && strcmp((*cache)[k].type, type) == 0) {
			*out = &(*cache)[k].sp;
			return LAB_OK;
		}
	*cache = xreallocarray(*cache, *n + 1, sizeof **cache);
	struct span_cache *c = &(*cache)[(*n)++];
	memset(c, 0, sizeof *c);
	c->type = type;
	c->suite = j->suite;
	*out = &c->sp;
	return store_history_spans(s, type, j->suite->name, push_span, &c->sp, e);
}

static void spans_free(struct span_cache *c, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		free(c[k].sp.overhead.v);
		free(c[k].sp.per_slot.v);
	}
	free(c);
}

static int estimate_job(struct store *s, const char *type, const struct plan_job *j,
                        struct span_cache **cache, size_t *ncache, struct schedule_job_est *out,
                        struct lab_err *e)
{
	out->slot_s = -1;
	out->samples = 0;
	out->wall = false;
	if (!s || !type)
		return LAB_OK;
	const char *mode = lab_mode_names[j->mode];
	struct spans *sp; /* the cache's: median() sorts its values in place, harmless */
	int rc = spans_of(s, type, j, cache, ncache, &sp, e);
	double sum = 0;
	int64_t n = 0;
	bool all = true;
	for (size_t w = 0; !rc && w < j->suite->nworkloads; w++) {
		struct vals d = {0};
		rc = store_history_durations(s, type, j->suite->name, mode,
		                             j->suite->workloads[w].name, push_val, &d, e);
		if (d.n == 0)
			all = false;
		else
			sum += median(&d);
		n += (int64_t)d.n;
		free(d.v);
	}
	if (!rc) {
		if (sp->per_slot.n > 0 && sp->virt * 2 >= sp->per_slot.n) {
			out->slot_s = median(&sp->per_slot);
			out->samples = (int64_t)sp->per_slot.n;
			out->wall = true;
		} else if (all && n > 0) {
			double oh = median(&sp->overhead);
			out->slot_s = sum + (oh > 0 ? oh : 0);
			out->samples = n;
		}
	}
	return rc;
}

int schedule_estimate(const struct lab_cfg *lab, const struct plan *p, struct store *s,
                      struct schedule_est *out, struct lab_err *e)
{
	memset(out, 0, sizeof *out);
	out->jobs = xcalloc(p->njobs + 1, sizeof *out->jobs);
	out->board_s = xcalloc(p->nboards + 1, sizeof *out->board_s);
	out->dropped = xcalloc(p->nboards + 1, sizeof *out->dropped);
	/* An estimate depends on the board type, suite and mode only: each
	 * distinct one is looked up once (a 1,024-board lab has 4 of them,
	 * where every job's queries cost 1.3 s of CPU). */
	size_t *firsts = xcalloc(p->njobs + 1, sizeof *firsts), nfirst = 0;
	struct span_cache *cache = NULL;
	size_t ncache = 0;
	for (size_t i = 0; i < p->njobs; i++) {
		const struct plan_job *j = &p->jobs[i];
		const char *type = lab->boards[j->board].type_name;
		size_t k = 0;
		for (; k < nfirst; k++) {
			const struct plan_job *f = &p->jobs[firsts[k]];
			const char *ft = lab->boards[f->board].type_name;
			if (f->suite == j->suite && f->mode == j->mode &&
			    (ft == type || (ft && type && strcmp(ft, type) == 0)))
				break;
		}
		if (k < nfirst) {
			out->jobs[i] = out->jobs[firsts[k]];
			continue;
		}
		int rc = estimate_job(s, type, j, &cache, &ncache, &out->jobs[i], e);
		if (rc) {
			spans_free(cache, ncache);
			free(firsts);
			return rc;
		}
		firsts[nfirst++] = i;
	}
	spans_free(cache, ncache);
	free(firsts);
	uint64_t budget_ms = lab->plan->budget_ms;
	size_t par = lab->plan->parallel > 0 && (size_t)lab->plan->parallel < p->nboards
	                 ? (size_t)lab->plan->parallel
	                 : p->nboards;
	double *place = xcalloc(par + 1, sizeof *place); /* when each place frees up */
	bool all = true;
	out->total_s = 0;
	for (size_t b = 0; b < p->nboards; b++) {
		const struct plan_board *pb = &p->boards[b];
		size_t first = 0;
		for (size_t k = 1; k < par; k++)
			if (place[k] < place[first])
				first = k;
		double t = place[first], start = t;
		bool known = true;
		for (size_t k = 0; k < pb->nslots; k++) {
			double slot = out->jobs[pb->slots[k].job].slot_s;
			if (slot < 0) {
				known = false;
				continue;
			}
			if (budget_ms && t >= (double)budget_ms / 1000.0)
				out->dropped[b]++;
			else
				t += slot;
		}
		out->board_s[b] = known ? t - start : -1;
		all &= known;
		place[first] = t;
		if (t > out->total_s)
			out->total_s = t;
	}
	free(place);
	if (!all)
		out->total_s = -1;
	return LAB_OK;
}

void schedule_est_free(struct schedule_est *est)
{
	free(est->jobs);
	free(est->board_s);
	free(est->dropped);
	memset(est, 0, sizeof *est);
}

static void fmt_est(char *buf, size_t n, const struct schedule_job_est *j)
{
	if (j->slot_s < 0) {
		snprintf(buf, n, "no history");
		return;
	}
	char d[16];
	progress_fmt_duration(d, sizeof d, j->slot_s);
	snprintf(buf, n, "%s (%lld %s)", d, (long long)j->samples,
	         j->wall ? "past board schedules" : "past iterations");
}

void schedule_print(FILE *f, const struct lab_cfg *lab, const struct plan *p,
                    const struct schedule_est *est)
{
	const struct plan_cfg *pl = lab->plan;
	size_t slots = 0;
	for (size_t b = 0; b < p->nboards; b++)
		slots += p->boards[b].nslots;
	char d[16];
	fprintf(f,
	        "plan %s on lab %s: %zu boards, %zu jobs, %zu slots (a slot: one iteration of a "
	        "job, every workload once)\n",
	        pl->name, lab->name, p->nboards, p->njobs, slots);
	progress_fmt_duration(d, sizeof d, (double)pl->budget_ms / 1000.0);
	fprintf(f, "  budget: %s", pl->budget_ms ? d : "none");
	progress_fmt_duration(d, sizeof d, (double)pl->job_budget_ms / 1000.0);
	fprintf(f, "; job budget: %s", pl->job_budget_ms ? d : "the board type's timeouts.job");
	if (pl->parallel > 0)
		fprintf(f, "; parallel: %lld boards at a time\n", (long long)pl->parallel);
	else
		fprintf(f, "; parallel: every board at once\n");
	for (size_t i = 0; i < pl->suites.n; i++) {
		const struct suite_cfg *s = config_suite(lab, pl->suites.v[i]);
		if (!s)
			continue;
		int order = plan_suite_order(pl, s);
		fprintf(f, "  suite %s: %s order", s->name, plan_order_label[order]);
		if (order == 1)
			fprintf(f, ", seed %lld", (long long)plan_suite_seed(pl, s));
		fprintf(f, "%s\n", pl->order ? " (the plan's)" : "");
	}
	schedule_res_print(f, lab);
	for (size_t i = 0; i < p->nnotes; i++)
		fprintf(f, "  note: %s\n", p->notes[i]);
	for (size_t b = 0; b < p->nboards; b++) {
		const struct plan_board *pb = &p->boards[b];
		const struct board_cfg *bc = &lab->boards[pb->board];
		progress_fmt_duration(d, sizeof d, est->board_s[b]);
		fprintf(f, "\nboard %s (type %s): %zu slots, estimated %s\n", bc->name,
		        bc->type_name ? bc->type_name : "-", pb->nslots,
		        est->board_s[b] >= 0 ? d : "? (no history for some jobs)");
		fprintf(f, "  %-4s %-20s %-16s %-12s %4s %5s  %s\n", "job", "suite", "mode",
		        "kernel", "prio", "iters", "per iteration");
		/* jobs of this board in the order they first run */
		bool *shown = xcalloc(p->njobs + 1, sizeof *shown);
		int nj = 0;
		for (size_t k = 0; k < pb->nslots; k++) {
			size_t ji = pb->slots[k].job;
			if (shown[ji])
				continue;
			shown[ji] = true;
			const struct plan_job *j = &p->jobs[ji];
			char e[64];
			fmt_est(e, sizeof e, &est->jobs[ji]);
			fprintf(f, "  %-4d %-20s %-16s %-12s %4d %5d  %s\n", ++nj, j->suite->name,
			        lab_mode_names[j->mode],
			        j->kernel && j->kernel->name ? j->kernel->name : "-", j->priority,
			        j->iterations, e);
		}
		free(shown);
		fprintf(f, "  order:");
		int col = 8;
		for (size_t k = 0; k < pb->nslots; k++) {
			const struct plan_slot *s = &pb->slots[k];
			char one[48];
			snprintf(one, sizeof one, " %s%s#%d", s->reboot ? "^" : "",
			         lab_mode_names[p->jobs[s->job].mode], s->iteration);
			if (col + (int)strlen(one) > 96) {
				fprintf(f, "\n        ");
				col = 8;
			}
			fputs(one, f);
			col += (int)strlen(one);
		}
		fprintf(f, "\n");
		if (est->dropped[b])
			fprintf(f, "  over the budget: the last %zu slot(s) would not start\n",
			        est->dropped[b]);
	}
	fprintf(f, "\n(^ = boot before the slot)\n");
	if (est->total_s < 0) {
		fprintf(
		    f,
		    "estimated duration: unknown (no history for some jobs: run the plan once)\n");
		return;
	}
	progress_fmt_duration(d, sizeof d, est->total_s);
	fprintf(f, "estimated duration: %s (boards in parallel", d);
	if (pl->parallel > 0)
		fprintf(f, ", %lld at a time", (long long)pl->parallel);
	fprintf(f, ")");
	if (pl->budget_ms) {
		char bd[16];
		progress_fmt_duration(bd, sizeof bd, (double)pl->budget_ms / 1000.0);
		size_t dropped = 0;
		for (size_t b = 0; b < p->nboards; b++)
			dropped += est->dropped[b];
		if (dropped)
			fprintf(f, ": over the budget of %s, %zu slot(s) would be skipped\n", bd,
			        dropped);
		else
			fprintf(f, ", within the budget of %s\n", bd);
	} else {
		fprintf(f, "\n");
	}
}

/* ---- shared limited resources ---- */

const char *const schedule_stage_names[] = {"boot", "test", NULL};
#define SCHEDULE_NSTAGES 2

struct res {
	const char *name; /* owned by the lab's config */
	int cap, used;
};

struct res_user {
	size_t *need[SCHEDULE_NSTAGES]; /* resource indices per stage */
	size_t nneed[SCHEDULE_NSTAGES];
	bool held[SCHEDULE_NSTAGES];
};

struct res_wait {
	size_t board;
	int stage;
	void (*grant)(void *arg);
	void *arg;
};

struct schedule_res {
	struct res *res;
	size_t nres;
	struct res_user *users; /* per lab board */
	size_t nusers;
	struct res_wait *wait;
	size_t nwait;
};

static int stage_index(const char *stage)
{
	for (int i = 0; schedule_stage_names[i]; i++)
		if (strcmp(schedule_stage_names[i], stage) == 0)
			return i;
	return -1;
}

static const char *node_file(const struct cfg_node *n)
{
	return n->file ? n->file : "lab";
}

static int add_need(struct schedule_res *r, struct res_user *u, int st, const struct cfg_node *v,
                    const char *board, struct lab_err *e)
{
	if (v->kind != CFG_SCALAR)
		return lab_err_set(e, LAB_EUSAGE, "%s:%d:%d: board %s: uses: want resource names",
		                   node_file(v), v->line, v->col, board);
	size_t i = 0;
	while (i < r->nres && strcmp(r->res[i].name, v->value) != 0)
		i++;
	if (i == r->nres)
		return lab_err_set(
		    e, LAB_EUSAGE,
		    "%s:%d:%d: board %s: uses '%s', which the lab's resources: do not declare",
		    node_file(v), v->line, v->col, board, v->value);
	for (size_t k = 0; k < u->nneed[st]; k++)
		if (u->need[st][k] == i)
			return LAB_OK;
	u->need[st] = xreallocarray(u->need[st], u->nneed[st] + 1, sizeof *u->need[st]);
	u->need[st][u->nneed[st]++] = i;
	return LAB_OK;
}

int schedule_res_new(const struct lab_cfg *lab, struct schedule_res **out, struct lab_err *e)
{
	*out = NULL;
	const struct cfg_node *m = lab->resources;
	if (m && m->kind != CFG_MAP)
		return lab_err_set(e, LAB_EUSAGE,
		                   "%s:%d:%d: resources: want a map of name to count", node_file(m),
		                   m->line, m->col);
	struct schedule_res *r = xcalloc(1, sizeof *r);
	r->nres = m ? m->n : 0;
	r->res = xcalloc(r->nres + 1, sizeof *r->res);
	int rc = LAB_OK;
	for (size_t i = 0; i < r->nres && !rc; i++) {
		const struct cfg_node *v = m->items[i];
		int64_t n;
		r->res[i].name = m->keys[i]->value;
		if (v->kind != CFG_SCALAR || lab_parse_i64(v->value, &n) != LAB_OK || n < 1 ||
		    n > 1000)
			rc = lab_err_set(e, LAB_EUSAGE,
			                 "%s:%d:%d: resources: %s wants a count (1..1000)",
			                 node_file(v), v->line, v->col, m->keys[i]->value);
		else
			r->res[i].cap = (int)n;
	}
	r->nusers = lab->nboards;
	r->users = xcalloc(r->nusers + 1, sizeof *r->users);
	bool any = false;
	for (size_t b = 0; b < lab->nboards && !rc; b++) {
		const struct board_cfg *bc = &lab->boards[b];
		const struct cfg_node *u = bc->uses;
		if (!u)
			continue;
		if (u->kind != CFG_MAP) {
			rc = lab_err_set(e, LAB_EUSAGE,
			                 "%s:%d:%d: board %s: uses: want {stage: [resource, ...]}",
			                 node_file(u), u->line, u->col, bc->name);
			break;
		}
		for (size_t i = 0; i < u->n && !rc; i++) {
			const struct cfg_node *k = u->keys[i], *v = u->items[i];
			int st = stage_index(k->value);
			if (st < 0) {
				rc = lab_err_set(
				    e, LAB_EUSAGE,
				    "%s:%d:%d: board %s: uses: unknown stage '%s' (boot or test)",
				    node_file(k), k->line, k->col, bc->name, k->value);
				break;
			}
			if (v->kind == CFG_SEQ)
				for (size_t j = 0; j < v->n && !rc; j++)
					rc =
					    add_need(r, &r->users[b], st, v->items[j], bc->name, e);
			else
				rc = add_need(r, &r->users[b], st, v, bc->name, e);
			any = true;
		}
	}
	if (rc || (!any && r->nres == 0)) {
		schedule_res_free(r);
		return rc;
	}
	*out = r;
	return LAB_OK;
}

void schedule_res_free(struct schedule_res *r)
{
	if (!r)
		return;
	for (size_t b = 0; b < r->nusers; b++)
		for (int s = 0; s < SCHEDULE_NSTAGES; s++)
			free(r->users[b].need[s]);
	free(r->users);
	free(r->res);
	free(r->wait);
	free(r);
}

static bool fits(const struct schedule_res *r, size_t board, int st, const char **missing)
{
	const struct res_user *u = &r->users[board];
	for (size_t k = 0; k < u->nneed[st]; k++) {
		const struct res *x = &r->res[u->need[st][k]];
		if (x->used >= x->cap) {
			if (missing)
				*missing = x->name;
			return false;
		}
	}
	return true;
}

static void take(struct schedule_res *r, size_t board, int st)
{
	struct res_user *u = &r->users[board];
	for (size_t k = 0; k < u->nneed[st]; k++)
		r->res[u->need[st][k]].used++;
	u->held[st] = true;
}

bool schedule_res_acquire(struct schedule_res *r, struct loop *l, size_t board, const char *stage,
                          void (*grant)(void *arg), void *arg, char *waiting, size_t n)
{
	LAB_UNUSED(l);
	int st = stage_index(stage);
	if (!r || st < 0 || board >= r->nusers || r->users[board].nneed[st] == 0 ||
	    r->users[board].held[st])
		return true;
	const char *missing = NULL;
	if (fits(r, board, st, &missing)) {
		take(r, board, st);
		return true;
	}
	lab_strlcpy(waiting, missing ? missing : "?", n);
	for (size_t i = 0; i < r->nwait; i++)
		if (r->wait[i].board == board && r->wait[i].stage == st)
			return false;
	r->wait = xreallocarray(r->wait, r->nwait + 1, sizeof *r->wait);
	r->wait[r->nwait++] = (struct res_wait){board, st, grant, arg};
	return false;
}

void schedule_res_release(struct schedule_res *r, struct loop *l, size_t board, const char *stage)
{
	if (!r || board >= r->nusers)
		return;
	struct res_user *u = &r->users[board];
	int only = stage ? stage_index(stage) : -1;
	bool freed = false;
	for (int st = 0; st < SCHEDULE_NSTAGES; st++) {
		if ((only >= 0 && st != only) || !u->held[st])
			continue;
		for (size_t k = 0; k < u->nneed[st]; k++)
			r->res[u->need[st][k]].used--;
		u->held[st] = false;
		freed = true;
	}
	if (!stage) { /* the board is done: it waits for nothing any more */
		for (size_t i = 0; i < r->nwait;) {
			if (r->wait[i].board == board)
				memmove(&r->wait[i], &r->wait[i + 1],
				        (--r->nwait - i) * sizeof *r->wait);
			else
				i++;
		}
	}
	if (!freed)
		return;
	/* Hand what is free to the waiters, oldest first. */
	for (size_t i = 0; i < r->nwait;) {
		struct res_wait w = r->wait[i];
		if (!fits(r, w.board, w.stage, NULL)) {
			i++;
			continue;
		}
		take(r, w.board, w.stage);
		memmove(&r->wait[i], &r->wait[i + 1], (--r->nwait - i) * sizeof *r->wait);
		loop_defer(l, w.grant, w.arg);
	}
}

int schedule_res_used(const struct schedule_res *r, const char *name)
{
	for (size_t i = 0; r && i < r->nres; i++)
		if (strcmp(r->res[i].name, name) == 0)
			return r->res[i].used;
	return -1;
}

void schedule_res_print(FILE *f, const struct lab_cfg *lab)
{
	const struct cfg_node *m = lab->resources;
	if (!m || m->kind != CFG_MAP || m->n == 0)
		return;
	fprintf(
	    f,
	    "  shared resources (boards queue for them; the estimate leaves the waiting out):\n");
	for (size_t i = 0; i < m->n; i++) {
		const char *name = m->keys[i]->value;
		fprintf(f, "    %s x%s:", name,
		        m->items[i]->kind == CFG_SCALAR ? m->items[i]->value : "?");
		int nusers = 0;
		for (size_t b = 0; b < lab->nboards; b++) {
			const struct cfg_node *u = lab->boards[b].uses;
			if (!u || u->kind != CFG_MAP || !lab->boards[b].enabled)
				continue;
			for (size_t k = 0; k < u->n; k++) {
				const struct cfg_node *v = u->items[k];
				bool hit = v->kind == CFG_SCALAR && strcmp(v->value, name) == 0;
				for (size_t j = 0; v->kind == CFG_SEQ && j < v->n; j++)
					hit |= v->items[j]->kind == CFG_SCALAR &&
					       strcmp(v->items[j]->value, name) == 0;
				if (hit) {
					fprintf(f, " %s (%s)", lab->boards[b].name,
					        u->keys[k]->value);
					nusers++;
				}
			}
		}
		fprintf(f, "%s\n", nusers ? "" : " (no board uses it)");
	}
}
