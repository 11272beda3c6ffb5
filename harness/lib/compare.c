/*
 * compare.c - build comparison rows from the results model.
 *
 * Groups are folded into cells (context + compared value) through a hash on
 * interned pointers, cells are sorted by context, then each context yields
 * one row per requested pair.
 */
#include "compare.h"
#include "mode.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

/* Pooled context fields all point here, so cells compare by pointer. */
static const char empty[] = "";

/* A cell's context and compared value: what the cells are found, sorted
 * and grouped into rows by. */
struct ckey {
	size_t part;
	const char *board, *kernel, *mode, *workload, *metric;
	const char *source; /* results_source_kind, or empty with pool_sources */
	const char *dim;    /* the compared value */
};

struct pair {
	const char *a, *b;
	bool need_both; /* emit only when both sides have data */
};

/* The values of one context and compared value.  Its key is not stored:
 * key_of derives it from the cell's first group (72 bytes a cell instead of
 * 136: 6 MB less at 1,024 boards, at the comparison's peak). */
struct cell {
	const struct results_group *g; /* the first group put into it */
	const char *dim;
	double *v;
	double *sorted; /* v sorted, made once when a row first needs it */
	const char *unit;
	const char *seen; /* the kind of the runs it holds, "pooled" when several */
	uint32_t n, cap, nwarm; /* a cell of 2^32 values would be 32 GiB of doubles */
	bool mixed, excluded;
	bool sysfs_only; /* a group's mode was proved by sysfs alone */
	bool worn;       /* a group's part was past its wear thresholds */
	bool borrowed;   /* v is the values of the cell's one group, not a copy */
};

struct cpriv {
	const struct results *r;
	enum compare_by by;
	bool pool_sources;
	struct cell *cells;
	size_t ncells, cap;
	size_t *slot;
	size_t nslot;
	char **labels; /* owned strings ("run 12") */
	size_t nlabels;
	double **vals; /* after the build: the cells' value arrays the rows point into */
	size_t nvals;
	/* The rows' sides: one per cell (the same cell is a side of up to three
	 * rows; 12.8 MB less at 1,024 boards than a copy in every row), and, per
	 * share of the rows (rows_share), one per label for a side without data. */
	struct compare_side *sides;
	struct cshare *shares; /* rows_build's one or two */
};

/* A run of whole contexts whose rows one thread builds: the rows and
 * interactions go into sub (its own arrays and counts, appended to the
 * result in order afterwards); its memo and blank sides are its own. */
struct cshare {
	struct compare_result sub;
	const struct results *r;
	const struct pair *pairs;
	size_t npairs;
	size_t from, to; /* cells [from, to) */
	size_t cap, icap;
	struct stats_memo memo; /* most sides have the same n: one t quantile */
	struct compare_side blanks[4 * MODE_COUNT];
	size_t nblanks;
};

static const char *const by_names[] = {"mode", "part", "kernel", "run", "baseline"};

const char *compare_by_name(enum compare_by by)
{
	return (size_t)by < LAB_ARRAY_SIZE(by_names) ? by_names[by] : "?";
}

int compare_by_parse(const char *s, enum compare_by *by)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(by_names) - 1; i++) /* baseline: only via --baseline */
		if (strcmp(s, by_names[i]) == 0) {
			*by = (enum compare_by)i;
			return LAB_OK;
		}
	return LAB_EUSAGE;
}

void compare_opts_init(struct compare_opts *o)
{
	memset(o, 0, sizeof *o);
	o->by = COMPARE_BY_MODE;
	o->alpha = 0.05;
	o->min_effect = 0.01;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

/* The key of cell c: its first group's context, pooled as the comparison
 * asks (the fields compared are "" there), and its compared value. */
static void key_of(const struct cpriv *p, const struct cell *c, struct ckey *k)
{
	const struct results_group *g = c->g;
	k->part = g->part;
	k->board = g->board;
	k->kernel = g->kernel;
	k->mode = g->mode;
	k->workload = g->workload;
	k->metric = g->metric;
	k->source = p->pool_sources ? empty : p->r->runs[g->run].kind;
	k->dim = c->dim;
	switch (p->by) {
	case COMPARE_BY_MODE:
		k->mode = empty;
		break;
	case COMPARE_BY_PART:
		k->part = NONE;
		k->board = k->kernel = empty;
		break;
	case COMPARE_BY_KERNEL:
	case COMPARE_BY_BASELINE:
		k->kernel = k->board = empty;
		break;
	case COMPARE_BY_RUN:
		break;
	}
}

static uint64_t key_hash(const struct ckey *c)
{
	uint64_t h = 1469598103934665603ULL;
	h = mix(h, c->part);
	h = mix(h, (uintptr_t)c->board);
	h = mix(h, (uintptr_t)c->kernel);
	h = mix(h, (uintptr_t)c->mode);
	h = mix(h, (uintptr_t)c->workload);
	h = mix(h, (uintptr_t)c->metric);
	h = mix(h, (uintptr_t)c->dim);
	h = mix(h, (uintptr_t)c->source);
	return h;
}

/* Same context (everything but the compared value). */
static bool same_context(const struct ckey *a, const struct ckey *b)
{
	return a->part == b->part && a->board == b->board && a->kernel == b->kernel &&
	       a->mode == b->mode && a->workload == b->workload && a->metric == b->metric &&
	       a->source == b->source;
}

static void slots_grow(struct cpriv *p)
{
	size_t n = p->nslot ? p->nslot * 2 : 1024;
	size_t *ns = xcalloc_written(n, sizeof *ns);
	for (size_t i = 0; i < p->ncells; i++) {
		struct ckey k;
		key_of(p, &p->cells[i], &k);
		size_t j = key_hash(&k) & (n - 1);
		while (ns[j])
			j = (j + 1) & (n - 1);
		ns[j] = i + 1;
	}
	free(p->slot);
	p->slot = ns;
	p->nslot = n;
}

/* The cell of key k, made with g as its first group when new. */
static struct cell *cell_get(struct cpriv *p, const struct ckey *k, const struct results_group *g)
{
	if (p->ncells * 2 >= p->nslot)
		slots_grow(p);
	size_t j = key_hash(k) & (p->nslot - 1);
	while (p->slot[j]) {
		struct cell *c = &p->cells[p->slot[j] - 1];
		struct ckey ck;
		key_of(p, c, &ck);
		if (ck.dim == k->dim && same_context(&ck, k))
			return c;
		j = (j + 1) & (p->nslot - 1);
	}
	if (p->ncells == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->cells = xreallocarray(p->cells, p->cap, sizeof *p->cells);
	}
	struct cell *c = &p->cells[p->ncells];
	c->g = g;
	c->dim = k->dim;
	c->v = c->sorted = NULL;
	c->n = c->cap = c->nwarm = 0;
	c->unit = NULL;
	c->seen = NULL;
	c->mixed = c->excluded = c->sysfs_only = c->worn = c->borrowed = false;
	p->slot[j] = ++p->ncells;
	return c;
}

static void cell_add(struct cell *c, const struct results_group *g, const char *kind, bool exclude)
{
	c->seen = !c->seen || c->seen == kind ? kind : "pooled";
	if (!c->unit)
		c->unit = g->unit;
	else if (strcmp(c->unit, g->unit) != 0)
		c->mixed = true;
	c->sysfs_only |= g->sysfs_only;
	c->worn |= g->worn;
	size_t nwarm = 0;
	for (size_t i = 0; i < g->n; i++)
		nwarm += g->warm[i] != 0;
	/* A cell's first group, nothing of it left out: its values are used
	 * where they are (the results outlive the comparison), not copied; most
	 * cells of one night have one group (9.8 MB at 1,024 boards). */
	if (!c->v && g->n && (!exclude || !nwarm)) {
		c->v = g->v;
		c->n = (uint32_t)g->n;
		c->nwarm = (uint32_t)nwarm;
		c->borrowed = true;
		return;
	}
	if (c->borrowed) { /* a second group: the cell needs values of its own */
		size_t cap = (size_t)c->n + g->n + 8;
		double *own = xreallocarray(NULL, cap, sizeof *own);
		memcpy(own, c->v, c->n * sizeof *own);
		c->v = own;
		c->cap = (uint32_t)cap;
		c->borrowed = false;
	}
	if ((size_t)c->n + g->n > c->cap) {
		size_t need = (size_t)c->n + g->n, cap = (size_t)c->cap * 2;
		cap = cap > need ? cap : need + 8;
		c->v = xreallocarray(c->v, cap, sizeof *c->v);
		c->cap = (uint32_t)cap;
	}
	for (size_t i = 0; i < g->n; i++) {
		if (g->warm[i]) {
			c->nwarm++;
			if (exclude) {
				c->excluded = true;
				continue;
			}
		}
		c->v[c->n++] = g->v[i];
	}
}

static int cmp_cell(const void *x, const void *y, void *ctx)
{
	const struct cpriv *p = ctx;
	const struct results *r = p->r;
	struct ckey a, b;
	key_of(p, x, &a);
	key_of(p, y, &b);
	int c;
	if (a.part != b.part) {
		if (a.part == NONE || b.part == NONE)
			return a.part == NONE ? -1 : 1;
		if ((c = strcmp(r->parts[a.part].label, r->parts[b.part].label)))
			return c;
		return a.part < b.part ? -1 : 1;
	}
	if ((c = strcmp(a.board, b.board)) || (c = strcmp(a.kernel, b.kernel)))
		return c;
	if ((c = results_mode_cmp(a.mode, b.mode)) || (c = strcmp(a.workload, b.workload)) ||
	    (c = strcmp(a.metric, b.metric)))
		return c;
	if (a.source != b.source && (c = strcmp(a.source, b.source)))
		return c;
	return strcmp(a.dim, b.dim);
}

/* The end of the context that starts at cell i (the cells are sorted), and
 * that context's key in *ctx. */
static size_t context_end(const struct cpriv *p, size_t i, struct ckey *ctx)
{
	key_of(p, &p->cells[i], ctx);
	size_t j = i + 1;
	for (struct ckey k; j < p->ncells; j++) {
		key_of(p, &p->cells[j], &k);
		if (!same_context(ctx, &k))
			break;
	}
	return j;
}

/* One sorted copy per cell: a cell is described and tested in up to three rows. */
static const double *cell_sorted(struct cell *c)
{
	if (!c)
		return NULL;
	if (!c->sorted && c->n) {
		c->sorted = xmalloc(c->n * sizeof *c->sorted);
		memcpy(c->sorted, c->v, c->n * sizeof *c->sorted);
		stats_sort(c->sorted, c->n);
	}
	return c->sorted;
}

static void side_fill(struct compare_side *s, struct cell *c, const char *label,
		      struct stats_memo *memo)
{
	memset(s, 0, sizeof *s);
	s->label = label;
	if (c) {
		s->v = c->v;
		s->n = c->n;
		s->nwarmup = c->nwarm;
		s->warmup_excluded = c->excluded;
		s->unit = c->unit;
		s->mixed_units = c->mixed;
	}
	stats_describe_sorted(s->v, cell_sorted(c), s->n, 0.95, memo, &s->d);
}

/* The side of cell c (NULL: no data for label), described once. */
static const struct compare_side *side_of(struct cpriv *p, struct cshare *sh, struct cell *c,
					  const char *label)
{
	struct compare_side *s;
	if (c) {
		s = &p->sides[c - p->cells];
		if (s->label)
			return s;
	} else {
		for (size_t i = 0; i < sh->nblanks; i++)
			if (strcmp(sh->blanks[i].label, label) == 0)
				return &sh->blanks[i];
		/* at most two labels per pair, 2 * MODE_COUNT pairs */
		if (sh->nblanks == LAB_ARRAY_SIZE(sh->blanks))
			abort();
		s = &sh->blanks[sh->nblanks++];
	}
	side_fill(s, c, label, &sh->memo);
	return s;
}

/* By part, a side is named by its label: the part of that label with a CID
 * (a simulated part has one), NONE when there is none. */
static size_t part_named(const struct results *r, const char *label)
{
	for (size_t i = 0; i < r->nparts; i++)
		if (strcmp(r->parts[i].label, label) == 0 && r->parts[i].cid[0])
			return i;
	return NONE;
}

static void row_emit(struct cshare *sh, const struct ckey *ctx, struct cell *ca, struct cell *cb,
		     const char *la, const char *lb)
{
	struct compare_result *res = &sh->sub;
	const struct results *r = sh->r;
	if (res->nrows == sh->cap)
		abort(); /* more than one row for a context and pair: cannot be */
	struct compare_row *w = &res->rows[res->nrows++];
	memset(w, 0, sizeof *w);
	w->part = ctx->part;
	w->part_label = ctx->part == NONE ? "" : r->parts[ctx->part].label;
	w->board = ctx->board;
	w->kernel = ctx->kernel;
	w->mode = ctx->mode;
	w->workload = ctx->workload;
	w->metric = ctx->metric;
	/* Provenance: the kind of both sides; a simulated figure says whether it
	 * is fitted (both sides' cells fitted) or assumed. */
	const char *sa = ca ? ca->seen : cb->seen, *sb = cb ? cb->seen : sa;
	w->source = sa == sb ? sa : "pooled";
	w->provenance = "";
	if (strcmp(w->source, "simulated") == 0) {
		bool by_mode = res->opts.by == COMPARE_BY_MODE, by_part = res->opts.by == COMPARE_BY_PART;
		const char *fit = "fitted to published data";
		const char *pa = results_provenance(r, w->source, by_part ? part_named(r, la) : ctx->part,
						    ctx->workload, by_mode ? la : ctx->mode, ctx->metric);
		const char *pb = results_provenance(r, w->source, by_part ? part_named(r, lb) : ctx->part,
						    ctx->workload, by_mode ? lb : ctx->mode, ctx->metric);
		w->provenance = strcmp(pa, fit) == 0 && strcmp(pb, fit) == 0 ? fit : "assumed (no published data)";
	}
	struct cpriv *p = res->priv;
	w->a = side_of(p, sh, ca, la);
	w->b = side_of(p, sh, cb, lb);
	w->unit = w->a->unit ? w->a->unit : w->b->unit ? w->b->unit : "";
	w->direction = stats_direction(w->metric, w->unit);
	struct stats_cmp_opts so;
	stats_cmp_opts_init(&so);
	so.alpha = res->opts.alpha;
	so.min_effect = res->opts.min_effect;
	so.direction = w->direction;
	stats_compare_sorted(w->a->v, w->a->n, w->b->v, w->b->n, cell_sorted(ca), cell_sorted(cb), &so,
			     &w->cmp);
	char note[STATS_NOTE_MAX] = "";
	if (!ca || !cb)
		snprintf(note, sizeof note, "no %s data: no test", !ca ? la : lb);
	else if (w->a->mixed_units || w->b->mixed_units)
		snprintf(note, sizeof note, "mixed units: no test");
	else if (strcmp(w->a->unit, w->b->unit) != 0)
		snprintf(note, sizeof note, "mixed units (%s vs %s): no test", w->a->unit, w->b->unit);
	if (note[0]) {
		/* Nothing computed from mismatched data may be shown as a result. */
		struct stats_cmp blank;
		memset(&blank, 0, sizeof blank);
		blank.change = blank.change_lo = blank.change_hi = NAN;
		blank.welch.t = blank.welch.df = blank.welch.p = NAN;
		blank.mwu.u = blank.mwu.p = NAN;
		blank.verdict = VERDICT_NO_TEST;
		blank.note = stats_note(note);
		w->cmp = blank;
	}
	/* The marker every report and `compare` show (docs/running.md, mode proof). */
	if ((ca && ca->sysfs_only) || (cb && cb->sysfs_only))
		w->cmp.note = stats_note_join(w->cmp.note, "SYSFS-ONLY: mode not proved by tracepoints");
	/* A worn part measures differently (docs/running.md, "Part health"). */
	if ((ca && ca->worn) || (cb && cb->worn))
		w->cmp.note = stats_note_join(w->cmp.note, "WORN: a part past its health thresholds");
	switch (w->cmp.verdict) {
	case VERDICT_BETTER:
		res->nbetter++;
		break;
	case VERDICT_WORSE:
		res->nworse++;
		break;
	case VERDICT_NO_DIFF:
		res->nnodiff++;
		break;
	case VERDICT_CHANGED:
		res->nchanged++;
		break;
	case VERDICT_NO_TEST:
		res->nnotest++;
		break;
	}
}

static struct cell *find_dim(struct cell *c, size_t n, const char *dim)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].dim, dim) == 0)
			return &c[i];
	return NULL;
}

size_t compare_mode_pairs(struct compare_mode_pair *out, size_t max)
{
	size_t n = 0;
	for (int m = 0; m < MODE_COUNT && n < max; m++) {
		int q = lab_mode_without_fua(m);
		if (q >= 0)
			out[n++] = (struct compare_mode_pair){m, q, false};
	}
	/* FUA modes first, so the CQE effect with FUA precedes the one without. */
	for (int pass = 0; pass < 2; pass++)
		for (int m = 0; m < MODE_COUNT && n < max; m++) {
			int q = lab_mode_with_cqe(m);
			if (q >= 0 && lab_mode_fua(m) == (pass == 0))
				out[n++] = (struct compare_mode_pair){m, q, true};
		}
	return n;
}

static size_t find_row(const struct compare_result *res, size_t from, int a, int b)
{
	for (size_t i = from; i < res->nrows; i++)
		if (!strcmp(res->rows[i].a->label, lab_mode_names[a]) &&
		    !strcmp(res->rows[i].b->label, lab_mode_names[b]))
			return i;
	return NONE;
}

/* Relative variance of a cell's mean, var(ln mean) ~ s^2 / (n m^2), and its
 * share of the Welch-Satterthwaite denominator. */
static bool cell_lnvar(const struct stats_desc *d, double *v, double *ws)
{
	if (d->n < 2 || d->bad || !(d->mean > 0) || !isfinite(d->sd))
		return false;
	*v = d->sd * d->sd / ((double)d->n * d->mean * d->mean);
	*ws = *v * *v / (double)(d->n - 1);
	return true;
}

/* One interaction per FUA pair without CQE whose CQE counterpart also has
 * both cells in this context (rows first..nrows). */
static void interactions(struct compare_result *res, size_t *cap, size_t first)
{
	for (int m = 0; m < MODE_COUNT; m++) {
		int q = lab_mode_without_fua(m);
		int mc = lab_mode_with_cqe(m), qc = lab_mode_with_cqe(q);
		if (q < 0 || mc < 0 || qc < 0 || lab_mode_without_fua(mc) != qc)
			continue;
		size_t r0 = find_row(res, first, m, q), r1 = find_row(res, first, mc, qc);
		if (r0 == NONE || r1 == NONE)
			continue;
		const struct compare_row *w0 = &res->rows[r0], *w1 = &res->rows[r1];
		if (!w0->a->n || !w0->b->n || !w1->a->n || !w1->b->n)
			continue;
		if (*cap == res->ninter) {
			*cap = *cap ? *cap * 2 : 16;
			res->inter = xreallocarray(res->inter, *cap, sizeof *res->inter);
		}
		struct compare_interaction *x = &res->inter[res->ninter++];
		x->row_off = r0;
		x->row_on = r1;
		x->ratio = x->lo = x->hi = x->diff = x->df = x->p = NAN;
		const struct stats_desc *d[4] = {&w0->a->d, &w0->b->d, &w1->a->d, &w1->b->d};
		double v = 0, ws = 0;
		bool ok = !w0->cmp.note[0] && !w1->cmp.note[0] && !strcmp(w0->unit, w1->unit);
		for (int k = 0; k < 4 && ok; k++) {
			double vk, wk;
			ok = cell_lnvar(d[k], &vk, &wk);
			v += vk;
			ws += wk;
		}
		if (!ok)
			continue;
		double ln = log(d[3]->mean) - log(d[2]->mean) - log(d[1]->mean) + log(d[0]->mean);
		x->ratio = exp(ln);
		x->diff = d[3]->mean / d[2]->mean - d[1]->mean / d[0]->mean;
		if (!(v > 0) || !(ws > 0))
			continue; /* no spread: no interval */
		double se = sqrt(v);
		x->df = v * v / ws;
		double t = stats_t_quantile(1 - res->opts.alpha / 2, x->df);
		x->lo = exp(ln - t * se);
		x->hi = exp(ln + t * se);
		x->p = 2 * (1 - stats_t_cdf(fabs(ln) / se, x->df));
	}
}

/* The rows of the contexts in cells [from, to) of one share, in order. */
static void *rows_share(void *arg)
{
	struct cshare *sh = arg;
	struct compare_result *res = &sh->sub;
	struct cpriv *p = res->priv;
	for (size_t i = sh->from; i < sh->to;) {
		size_t first = res->nrows;
		struct ckey ctx;
		size_t j = context_end(p, i, &ctx);
		for (size_t q = 0; q < sh->npairs; q++) {
			const struct pair *pq = &sh->pairs[q];
			struct cell *ca = find_dim(&p->cells[i], j - i, pq->a);
			struct cell *cb = find_dim(&p->cells[i], j - i, pq->b);
			if (!ca && !cb)
				continue;
			if (pq->need_both && (!ca || !cb))
				continue;
			row_emit(sh, &ctx, ca, cb, pq->a, pq->b);
		}
		if (p->by == COMPARE_BY_MODE && !res->opts.a)
			interactions(res, &sh->icap, first);
		for (size_t k = i; k < j; k++) { /* the context's rows are made */
			free(p->cells[k].sorted);
			p->cells[k].sorted = NULL;
		}
		i = j;
	}
	return NULL;
}

/* From this many contexts on, two threads build the rows (their tests were
 * 40 % of a 1,024-board night's report, 0.36-0.42 s of one core). */
#define COMPARE_THREADS_FROM 512

/*
 * Every context's rows: with two threads, each takes a run of whole contexts
 * (about half the cells), builds its rows into its own arrays, and the second
 * share's rows and interactions are appended to the first's, so the result
 * is the same, row for row, as one thread's.  What the shares touch in common
 * is read only (the results, the options) or per cell (a cell is a side of
 * its own context's rows only); the statistics' caches lock (stats.c).
 */
static void rows_build(struct compare_result *res, const struct results *r,
		       const struct pair *pairs, size_t npairs)
{
	struct cpriv *p = res->priv;
	/* the contexts, and the first context boundary at or after half the
	 * cells with the contexts before it */
	size_t ncontexts = 0, mid = p->ncells, nfirst = 0;
	for (size_t i = 0; i < p->ncells; ncontexts++) {
		struct ckey ctx;
		i = context_end(p, i, &ctx);
		if (mid == p->ncells && i >= p->ncells / 2) {
			mid = i;
			nfirst = ncontexts + 1;
		}
	}
	int threads = res->opts.threads ? res->opts.threads : ncontexts >= COMPARE_THREADS_FROM ? 2 : 1;
	size_t nsh = threads >= 2 && ncontexts > 1 ? 2 : 1;
	p->shares = xcalloc(nsh, sizeof *p->shares);
	if (nsh == 1) {
		mid = p->ncells;
		nfirst = ncontexts;
	}
	/* At most one row per context and pair: the rows are allocated once at
	 * that size (grown by doubling they took up to twice their room, 72 MB at
	 * 1,024 boards when they were 552 bytes), the second share's from its
	 * first context's place on. */
	size_t cap = ncontexts * npairs;
	res->rows = cap ? xreallocarray(NULL, cap, sizeof *res->rows) : NULL;
	for (size_t k = 0; k < nsh; k++) {
		struct cshare *sh = &p->shares[k];
		sh->sub.opts = res->opts;
		sh->sub.priv = p;
		sh->r = r;
		sh->pairs = pairs;
		sh->npairs = npairs;
		sh->from = k ? mid : 0;
		sh->to = k || nsh == 1 ? p->ncells : mid;
		sh->cap = (k ? ncontexts - nfirst : nfirst) * npairs;
		sh->sub.rows = res->rows ? res->rows + (k ? nfirst * npairs : 0) : NULL;
	}
	pthread_t th;
	bool joined = nsh == 2 && lab_thread_start(&th, rows_share, &p->shares[1]) == 0;
	res->builders = joined ? 2 : 1;
	rows_share(&p->shares[0]);
	if (joined)
		pthread_join(th, NULL);
	else if (nsh == 2)
		rows_share(&p->shares[1]); /* no thread: this one builds both */
	/* the second share's rows move up behind the first's; its interactions
	 * follow the first's, their row numbers moved with them */
	for (size_t k = 0; k < nsh; k++) {
		struct compare_result *b = &p->shares[k].sub;
		if (b->nrows && b->rows != res->rows + res->nrows)
			memmove(res->rows + res->nrows, b->rows, b->nrows * sizeof *b->rows);
		if (b->ninter) {
			res->inter = xreallocarray(res->inter, res->ninter + b->ninter, sizeof *res->inter);
			for (size_t i = 0; i < b->ninter; i++) {
				struct compare_interaction x = b->inter[i];
				x.row_off += res->nrows;
				x.row_on += res->nrows;
				res->inter[res->ninter + i] = x;
			}
		}
		res->nrows += b->nrows;
		res->ninter += b->ninter;
		res->nbetter += b->nbetter;
		res->nworse += b->nworse;
		res->nnodiff += b->nnodiff;
		res->nchanged += b->nchanged;
		res->nnotest += b->nnotest;
		free(b->inter);
		b->rows = NULL;
		b->inter = NULL;
	}
}

static const char *own(struct cpriv *p, char *s)
{
	p->labels = xreallocarray(p->labels, p->nlabels + 1, sizeof *p->labels);
	p->labels[p->nlabels++] = s;
	return s;
}

int compare_build(const struct results *r, const struct compare_opts *o,
		  struct compare_result **out, struct lab_err *e)
{
	enum compare_by by = o->by;
	if ((by == COMPARE_BY_PART || by == COMPARE_BY_KERNEL) && (!o->a || !o->b))
		return LAB_ERR(e, LAB_EUSAGE, "compare --by %s needs --a and --b (the two %ss)",
			       compare_by_name(by), compare_by_name(by));
	if ((o->a == NULL) != (o->b == NULL))
		return LAB_ERR(e, LAB_EUSAGE, "compare: give both --a and --b, or neither");
	if (by == COMPARE_BY_BASELINE && (!o->nbase_runs || !o->test_run))
		return LAB_ERR(e, LAB_EUSAGE, "baseline comparison without baseline runs");

	struct cpriv *p = xcalloc(1, sizeof *p);
	struct compare_result *res = xcalloc(1, sizeof *res);
	res->opts = *o;
	res->priv = p;
	p->r = r;
	p->by = by;
	p->pool_sources = o->pool_sources;

	/* Run labels ("run 12") are the compared value for by run. */
	const char **run_label = xcalloc(r->nruns + 1, sizeof *run_label);
	for (size_t i = 0; i < r->nruns; i++)
		run_label[i] = own(p, xasprintf("run %lld", (long long)r->runs[i].id));

	for (size_t gi = 0; gi < r->ngroups; gi++) {
		const struct results_group *g = &r->groups[gi];
		const char *kind = r->runs[g->run].kind;
		struct cell t = {.g = g}; /* the compared value here, the context from key_of */
		switch (by) {
		case COMPARE_BY_MODE:
			t.dim = g->mode;
			break;
		case COMPARE_BY_PART:
			t.dim = r->parts[g->part].label;
			break;
		case COMPARE_BY_KERNEL:
			t.dim = g->kernel;
			break;
		case COMPARE_BY_RUN:
			t.dim = run_label[g->run];
			break;
		case COMPARE_BY_BASELINE: {
			int64_t id = r->runs[g->run].id;
			bool in_base = false;
			for (size_t i = 0; i < o->nbase_runs; i++)
				in_base |= o->base_runs[i] == id;
			if (id == o->test_run)
				t.dim = "run";
			else if (in_base)
				t.dim = "baseline";
			else
				continue;
			break;
		}
		}
		struct ckey k;
		key_of(p, &t, &k);
		struct cell *c = cell_get(p, &k, g);
		cell_add(c, g, kind, o->exclude_warmup);
	}
	/* Every cell is made: their index goes before the rows come (2 MB at
	 * 1,024 boards, at the comparison's peak). */
	free(p->slot);
	p->slot = NULL;
	p->nslot = 0;
	if (p->ncells > 1) /* cells is NULL when empty: qsort_r's pointer must not be */
		qsort_r(p->cells, p->ncells, sizeof *p->cells, cmp_cell, p);
	p->sides = xcalloc_written(p->ncells ? p->ncells : 1, sizeof *p->sides);

	/* The pairs to emit per context. */
	struct pair pairs[2 * MODE_COUNT];
	size_t npairs = 0;
	char *ra = NULL, *rb = NULL;
	if (o->a) {
		if (by == COMPARE_BY_RUN) {
			int64_t ia, ib;
			if (lab_parse_i64(o->a, &ia) || lab_parse_i64(o->b, &ib)) {
				free(run_label);
				compare_free(res);
				return LAB_ERR(e, LAB_EUSAGE, "compare --by run: --a and --b are run ids");
			}
			ra = xasprintf("run %lld", (long long)ia);
			rb = xasprintf("run %lld", (long long)ib);
			own(p, ra);
			own(p, rb);
			pairs[npairs++] = (struct pair){ra, rb, false};
		} else {
			pairs[npairs++] = (struct pair){o->a, o->b, false};
		}
	} else if (by == COMPARE_BY_MODE) {
		/* The FUA pairs always; a CQE pair only where both sides have data. */
		struct compare_mode_pair mp[2 * MODE_COUNT];
		size_t nmp = compare_mode_pairs(mp, LAB_ARRAY_SIZE(mp));
		for (size_t i = 0; i < nmp; i++)
			pairs[npairs++] = (struct pair){lab_mode_names[mp[i].a], lab_mode_names[mp[i].b],
							mp[i].cqe};
	} else if (by == COMPARE_BY_RUN) {
		/* The two newest runs that have samples. */
		size_t have[2], nh = 0;
		for (size_t i = r->nruns; i-- > 0 && nh < 2;)
			if (r->runs[i].nsamples)
				have[nh++] = i;
		if (nh < 2) {
			free(run_label);
			compare_free(res);
			return LAB_ERR(e, LAB_EUSAGE, "compare --by run: fewer than two runs with samples");
		}
		pairs[npairs++] = (struct pair){run_label[have[1]], run_label[have[0]], false};
	} else if (by == COMPARE_BY_BASELINE) {
		pairs[npairs++] = (struct pair){"baseline", "run", false};
	}

	rows_build(res, r, pairs, npairs);
	free(run_label);
	/* The rows are built: of the cells only their own values stay (the rows'
	 * sides point into them); the cells go (17 MB at 1,024 boards, which the
	 * latency histograms loaded next can reuse). */
	p->vals = xreallocarray(NULL, p->ncells + 1, sizeof *p->vals);
	for (size_t i = 0; i < p->ncells; i++)
		if (p->cells[i].v && !p->cells[i].borrowed)
			p->vals[p->nvals++] = p->cells[i].v;
	free(p->cells);
	p->cells = NULL;
	p->ncells = p->cap = 0;
	*out = res;
	return LAB_OK;
}

void compare_free(struct compare_result *c)
{
	if (!c)
		return;
	struct cpriv *p = c->priv;
	if (p) {
		for (size_t i = 0; i < p->ncells; i++) { /* a build that failed half-way */
			if (!p->cells[i].borrowed)
				free(p->cells[i].v);
			free(p->cells[i].sorted);
		}
		free(p->cells);
		for (size_t i = 0; i < p->nvals; i++)
			free(p->vals[i]);
		free(p->vals);
		free(p->slot);
		for (size_t i = 0; i < p->nlabels; i++)
			free(p->labels[i]);
		free(p->labels);
		free(p->sides);
		free(p->shares);
		free(p);
	}
	free(c->rows);
	free(c->inter);
	free(c);
}
