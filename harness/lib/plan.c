/* plan.c - see plan.h. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

static void add_note(struct plan *p, char *note)
{
	p->notes = xreallocarray(p->notes, p->nnotes + 1, sizeof *p->notes);
	p->notes[p->nnotes++] = note;
}

static bool board_selected(const struct lab_cfg *lab, const struct board_cfg *b)
{
	const struct plan_cfg *pl = lab->plan;
	if (!b->enabled)
		return false;
	if (pl->boards.n == 0)
		return true;
	for (size_t i = 0; i < pl->boards.n; i++) {
		const char *sel = pl->boards.v[i];
		if (strcmp(sel, "all") == 0 || strcmp(sel, b->name) == 0)
			return true;
		for (size_t t = 0; t < b->tags.n; t++)
			if (strcmp(sel, b->tags.v[t]) == 0)
				return true;
	}
	return false;
}

const char *const plan_order_label[] = {"interleave", "random", "sequential", NULL};

int plan_suite_order(const struct plan_cfg *pl, const struct suite_cfg *s)
{
	return pl->order > 0 ? pl->order - 1 : s->order;
}

int64_t plan_suite_seed(const struct plan_cfg *pl, const struct suite_cfg *s)
{
	return pl->seed != 0 ? pl->seed : s->seed;
}

/* plan.priorities: {suite: N}; every key a suite of the plan, every value an integer. */
static int check_priorities(const struct plan_cfg *pl, const struct suite_cfg *const *suites,
			    size_t nsuites, int *prio, struct lab_err *e)
{
	const struct cfg_node *m = pl->priorities;
	if (!m)
		return LAB_OK;
	if (m->kind != CFG_MAP)
		return lab_err_set(e, LAB_EUSAGE, "%s:%d:%d: priorities: want a map of suite name to integer",
				   m->file ? m->file : "plan", m->line, m->col);
	for (size_t i = 0; i < m->n; i++) {
		const struct cfg_node *k = m->keys[i], *v = m->items[i];
		size_t si = 0;
		while (si < nsuites && strcmp(suites[si]->name, k->value) != 0)
			si++;
		if (si == nsuites)
			return lab_err_set(e, LAB_EUSAGE, "%s:%d:%d: priorities: '%s' is not a suite of the plan",
					   k->file ? k->file : "plan", k->line, k->col, k->value);
		int64_t n;
		if (v->kind != CFG_SCALAR || lab_parse_i64(v->value, &n) != LAB_OK || n < -1000000 ||
		    n > 1000000)
			return lab_err_set(e, LAB_EUSAGE,
					   "%s:%d:%d: priorities: '%s' wants an integer (-1000000..1000000)",
					   v->file ? v->file : "plan", v->line, v->col, k->value);
		prio[si] = (int)n;
	}
	return LAB_OK;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static void push_slot(struct plan_board *pb, size_t job, int it)
{
	pb->slots = xreallocarray(pb->slots, pb->nslots + 1, sizeof *pb->slots);
	pb->slots[pb->nslots++] = (struct plan_slot){.job = job, .iteration = it};
}

/* Append the slots of one (board, kernel, suite) group of jobs [first, first+n). */
static void order_slots(struct plan_board *pb, const struct plan *p, size_t first, size_t n,
			const struct suite_cfg *s, int order, int64_t suite_seed)
{
	int maxit = 0;
	for (size_t j = first; j < first + n; j++)
		if (p->jobs[j].iterations > maxit)
			maxit = p->jobs[j].iterations;
	size_t start = pb->nslots;
	if (order == 2) { /* sequential */
		for (size_t j = first; j < first + n; j++)
			for (int it = 1; it <= p->jobs[j].iterations; it++)
				push_slot(pb, j, it);
	} else {
		uint64_t seed = (uint64_t)suite_seed * 2654435761u + 0x9E3779B97F4A7C15ull + pb->board;
		if (seed == 0)
			seed = 1;
		size_t *idx = xcalloc(n, sizeof *idx);
		for (int it = 1; it <= maxit; it++) {
			size_t m = 0;
			for (size_t j = first; j < first + n; j++)
				if (it <= p->jobs[j].iterations)
					idx[m++] = j;
			if (order == 1) /* random: Fisher-Yates with the suite's seed */
				for (size_t k = m; k > 1; k--) {
					size_t r = (size_t)(xorshift(&seed) % k);
					size_t t = idx[k - 1];
					idx[k - 1] = idx[r];
					idx[r] = t;
				}
			for (size_t k = 0; k < m; k++)
				push_slot(pb, idx[k], it);
		}
		free(idx);
	}
	/* Reboot flags: at a mode/job change, and for every slot when the suite asks
	 * for a reboot between modes and the order interleaves them. */
	for (size_t k = start; k < pb->nslots; k++) {
		bool first_slot = k == start;
		bool change = first_slot || pb->slots[k - 1].job != pb->slots[k].job;
		pb->slots[k].reboot = change;
		pb->slots[k].precondition = first_slot && s->precondition_passes > 0;
	}
}

int plan_expand(const struct lab_cfg *lab, struct plan **out, struct lab_err *e)
{
	const struct plan_cfg *pl = lab->plan;
	if (pl == NULL)
		return lab_err_set(e, LAB_EUSAGE, "no plan: give a plan file (a file with a 'plan:' section)");
	/* Every named board or tag must exist. */
	for (size_t i = 0; i < pl->boards.n; i++) {
		const char *sel = pl->boards.v[i];
		bool found = strcmp(sel, "all") == 0;
		for (size_t b = 0; b < lab->nboards && !found; b++) {
			if (strcmp(lab->boards[b].name, sel) == 0)
				found = true;
			for (size_t t = 0; t < lab->boards[b].tags.n && !found; t++)
				if (strcmp(lab->boards[b].tags.v[t], sel) == 0)
					found = true;
		}
		if (!found)
			return lab_err_set(e, LAB_EUSAGE, "%s: plan names board or tag '%s' that the lab does not have",
					   pl->file ? pl->file : "plan", sel);
	}
	const struct suite_cfg **suites = xcalloc(pl->suites.n + 1, sizeof *suites);
	size_t nsuites = 0;
	for (size_t i = 0; i < pl->suites.n; i++) {
		const struct suite_cfg *s = config_suite(lab, pl->suites.v[i]);
		if (!s) {
			free(suites);
			return lab_err_set(e, LAB_EUSAGE, "%s: plan names suite '%s' that is not loaded (include its file)",
					   pl->file ? pl->file : "plan", pl->suites.v[i]);
		}
		suites[nsuites++] = s;
	}
	if (nsuites == 0) {
		free(suites);
		return lab_err_set(e, LAB_EUSAGE, "%s: plan has no suites", pl->file ? pl->file : "plan");
	}
	const struct kernel_cfg **kernels = xcalloc(pl->kernels.n + 1, sizeof *kernels);
	size_t nkernels = 0;
	for (size_t i = 0; i < pl->kernels.n; i++) {
		const struct kernel_cfg *k = config_kernel(lab, pl->kernels.v[i]);
		if (!k) {
			free(suites);
			free(kernels);
			return lab_err_set(e, LAB_EUSAGE, "%s: plan names kernel '%s' that the lab does not define",
					   pl->file ? pl->file : "plan", pl->kernels.v[i]);
		}
		kernels[nkernels++] = k;
	}
	if (nkernels == 0)
		kernels[nkernels++] = lab->nkernels ? &lab->kernels[0] : NULL;
	int *prio = xcalloc(nsuites + 1, sizeof *prio);
	int rc = check_priorities(pl, suites, nsuites, prio, e);
	if (rc) {
		free(suites);
		free(kernels);
		free(prio);
		return rc;
	}
	/* (kernel, suite) groups, highest priority first, ties in plan order. */
	size_t ngroups = nkernels * nsuites, *groups = xcalloc(ngroups, sizeof *groups);
	for (size_t g = 0; g < ngroups; g++) {
		size_t at = g;
		while (at > 0 && prio[groups[at - 1] % nsuites] < prio[g % nsuites]) {
			groups[at] = groups[at - 1];
			at--;
		}
		groups[at] = g;
	}

	struct plan *p = xcalloc(1, sizeof *p);
	for (size_t b = 0; b < lab->nboards; b++) {
		const struct board_cfg *bc = &lab->boards[b];
		if (!board_selected(lab, bc))
			continue;
		p->boards = xreallocarray(p->boards, p->nboards + 1, sizeof *p->boards);
		struct plan_board *pb = &p->boards[p->nboards++];
		memset(pb, 0, sizeof *pb);
		pb->board = b;
		for (size_t g = 0; g < ngroups; g++) {
			size_t k = groups[g] / nsuites, si = groups[g] % nsuites;
			{
				const struct suite_cfg *s = suites[si];
				size_t first = p->njobs;
				for (size_t m = 0; m < s->modes.n; m++) {
					int mode = lab_mode_parse(s->modes.v[m]);
					if (mode < 0)
						continue; /* config.c rejects unknown modes */
					if (bc->type && !bc->type->modes[mode].supported) {
						add_note(p, xasprintf("%s: mode %s not supported by type %s (skipped)",
								      bc->name, lab_mode_names[mode],
								      bc->type->name));
						continue;
					}
					p->jobs = xreallocarray(p->jobs, p->njobs + 1, sizeof *p->jobs);
					p->jobs[p->njobs++] = (struct plan_job){
						.board = b, .kernel = kernels[k], .suite = s, .mode = mode,
						.iterations = (int)(s->iterations > 0 ? s->iterations : 1),
						.priority = prio[si]};
				}
				if (p->njobs > first)
					order_slots(pb, p, first, p->njobs - first, s, plan_suite_order(pl, s),
						    plan_suite_seed(pl, s));
			}
		}
	}
	free(suites);
	free(kernels);
	free(prio);
	free(groups);
	if (p->nboards == 0) {
		plan_free(p);
		return lab_err_set(e, LAB_EUSAGE, "%s: the plan selects no enabled board",
				   pl->file ? pl->file : "plan");
	}
	*out = p;
	return LAB_OK;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nboards; i++)
		free(p->boards[i].slots);
	for (size_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	free(p->notes);
	free(p->boards);
	free(p->jobs);
	free(p);
}
