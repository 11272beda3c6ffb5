/*
 * results.c - load samples from the store into the results model.
 *
 * One pass over sample x iteration x job with the filters in SQL; strings
 * are interned so a group is found by hashing pointers, which keeps a year
 * of nightly samples (~900k rows) well under a second.
 */
#include "results.h"
#include "store_internal.h"
#include "mode.h"
#include "sim_calib.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A small direct-mapped cache in front of the pool: metric, unit and
 * workload names repeat on every row, so nearly every lookup is one short
 * memcmp instead of a full hash and probe.
 */
struct mru {
	const char *s[64];
	size_t len[64];
};

static const char *mru_intern(struct mru *m, struct lab_strpool *sp, const char *s)
{
	size_t len = strlen(s);
	size_t h = len ? (len * 131 + (unsigned char)s[0] * 31 + (unsigned char)s[len - 1]) & 63 : 0;
	if (m->s[h] && m->len[h] == len && memcmp(m->s[h], s, len) == 0)
		return m->s[h];
	m->s[h] = lab_strpool_intern(sp, s);
	m->len[h] = len;
	return m->s[h];
}

/* ---- group index -------------------------------------------------------- */

struct gkey {
	size_t run, part;
	const char *board, *kernel, *mode, *suite, *workload, *metric, *unit;
};

struct priv {
	struct lab_strpool pool;
	size_t *gslot; /* group index + 1; 0 = empty */
	size_t gcap;
	size_t galloc; /* allocated entries of results.groups */
	size_t ocap;   /* allocated entries of results.origins */
	bool has_origin; /* schema 8: iterations say where they ran */
};

/* Word-wise mixing of keys whose fields are size_t or interned pointers. */
static uint64_t hash_words(const uint64_t *w, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return h;
}

static uint64_t gkey_hash(const struct gkey *k)
{
	uint64_t w[9] = {k->run, k->part, (uintptr_t)k->board, (uintptr_t)k->kernel,
			 (uintptr_t)k->mode, (uintptr_t)k->suite, (uintptr_t)k->workload,
			 (uintptr_t)k->metric, (uintptr_t)k->unit};
	return hash_words(w, 9);
}

static bool gkey_eq(const struct results_group *g, const struct gkey *k)
{
	return g->run == k->run && g->part == k->part && g->board == k->board &&
	       g->kernel == k->kernel && g->mode == k->mode && g->suite == k->suite &&
	       g->workload == k->workload && g->metric == k->metric && g->unit == k->unit;
}

static void gindex_grow(struct results *r, struct priv *pv)
{
	size_t ncap = pv->gcap ? pv->gcap * 2 : 1024;
	size_t *ns = xcalloc_written(ncap, sizeof *ns);
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct results_group *g = &r->groups[i];
		struct gkey k = {g->run, g->part, g->board, g->kernel, g->mode,
				 g->suite, g->workload, g->metric, g->unit};
		size_t j = gkey_hash(&k) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = i + 1;
	}
	free(pv->gslot);
	pv->gslot = ns;
	pv->gcap = ncap;
}

static struct results_group *group_get(struct results *r, struct priv *pv, const struct gkey *k)
{
	if (r->ngroups * 2 >= pv->gcap)
		gindex_grow(r, pv);
	size_t j = gkey_hash(k) & (pv->gcap - 1);
	while (pv->gslot[j]) {
		struct results_group *g = &r->groups[pv->gslot[j] - 1];
		if (gkey_eq(g, k))
			return g;
		j = (j + 1) & (pv->gcap - 1);
	}
	if (r->ngroups == pv->galloc) {
		pv->galloc = pv->galloc ? pv->galloc * 2 : 256;
		r->groups = xreallocarray(r->groups, pv->galloc, sizeof *r->groups);
	}
	struct results_group *g = &r->groups[r->ngroups];
	memset(g, 0, sizeof *g);
	g->run = k->run;
	g->part = k->part;
	g->board = k->board;
	g->kernel = k->kernel;
	g->mode = k->mode;
	g->suite = k->suite;
	g->workload = k->workload;
	g->metric = k->metric;
	g->unit = k->unit;
	g->warmup_dev = NAN;
	pv->gslot[j] = ++r->ngroups;
	return g;
}

/* v, iter and warm share one allocation (g->v owns it): a year holds ~10^5
 * groups of a few values, and three small mallocs each were a tenth of the
 * load time.  origin is allocated apart, only once a value ran elsewhere
 * than locally (origin != 0). */
static void group_push(struct results_group *g, double v, int iter, int warm, uint32_t origin)
{
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 8;
		size_t each = sizeof *g->v + sizeof *g->iter + sizeof *g->warm;
		char *blk = xreallocarray(NULL, ncap, each);
		double *nv = (double *)(void *)blk;
		int *ni = (int *)(void *)(blk + ncap * sizeof *g->v);
		unsigned char *nw = (unsigned char *)(blk + ncap * (sizeof *g->v + sizeof *g->iter));
		if (g->n) {
			memcpy(nv, g->v, g->n * sizeof *nv);
			memcpy(ni, g->iter, g->n * sizeof *ni);
			memcpy(nw, g->warm, g->n * sizeof *nw);
		}
		free(g->v);
		g->v = nv;
		g->iter = ni;
		g->warm = nw;
		if (g->origin) {
			g->origin = xreallocarray(g->origin, ncap, sizeof *g->origin);
			memset(g->origin + g->cap, 0, (ncap - g->cap) * sizeof *g->origin);
		}
		g->cap = ncap;
	}
	if (origin && !g->origin)
		g->origin = xcalloc(g->cap, sizeof *g->origin);
	g->v[g->n] = v;
	g->iter[g->n] = iter;
	g->warm[g->n] = (unsigned char)(warm != 0);
	if (g->origin)
		g->origin[g->n] = origin;
	g->n++;
}

/* The origin of an iteration: 0 when it ran locally (or the store is older
 * than schema 8), else a new entry of r->origins. */
static uint32_t origin_add(struct results *r, struct priv *pv, const char *executor,
			   const char *job_url, const char *worker)
{
	if ((!executor || strcmp(executor, "local") == 0) && !job_url && !worker)
		return 0;
	if (r->norigins == pv->ocap) {
		pv->ocap *= 2;
		r->origins = xreallocarray(r->origins, pv->ocap, sizeof *r->origins);
	}
	struct results_origin *o = &r->origins[r->norigins];
	o->executor = lab_strpool_intern(&pv->pool, executor ? executor : "local");
	o->job_url = job_url ? lab_strpool_intern(&pv->pool, job_url) : NULL;
	o->worker = worker ? lab_strpool_intern(&pv->pool, worker) : NULL;
	return (uint32_t)r->norigins++;
}

const struct results_origin *results_value_origin(const struct results *r,
						  const struct results_group *g, size_t k)
{
	static const struct results_origin local = {"local", NULL, NULL};
	if (!g->origin || k >= g->n || g->origin[k] >= r->norigins)
		return r->norigins ? &r->origins[0] : &local;
	return &r->origins[g->origin[k]];
}

/* ---- helpers ------------------------------------------------------------ */

int results_mode_rank(const char *mode)
{
	int m = lab_mode_parse(mode);
	return m >= 0 ? m : MODE_COUNT;
}

int results_mode_cmp(const char *a, const char *b)
{
	if (a == b)
		return 0;
	int ra = results_mode_rank(a), rb = results_mode_rank(b);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return strcmp(a, b);
}

static int db_err(struct lab_err *e, sqlite3 *db, const char *what)
{
	return LAB_ERR(e, LAB_EINFRA, "results: %s: %s", what, sqlite3_errmsg(db));
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? (const char *)t : "";
}

/* NULL for SQL NULL (an optional column). */
static const char *col_opt(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Where an iteration ran (schema 8), or that it ran locally before it. */
#define ORIGIN_COLS "i.executor, i.job_url, i.worker"
#define NO_ORIGIN "'local', NULL, NULL"

int results_filter_add(struct results_filter *f, char *arg, struct lab_err *e)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return LAB_ERR(e, LAB_EUSAGE, "filter '%s': expected FIELD=VALUE", arg);
	*eq = '\0';
	const char *v = eq + 1;
	static const char *const fields[] = {"run", "part", "board", "kernel", "mode", "suite",
					     "workload", "metric", "source", NULL};
	if (strcmp(arg, "run") == 0) {
		int64_t id;
		if (lab_parse_i64(v, &id) || id <= 0)
			return LAB_ERR(e, LAB_EUSAGE, "filter run=%s: not a run id", v);
		f->run_id = id;
	} else if (strcmp(arg, "part") == 0) {
		f->part = v;
	} else if (strcmp(arg, "board") == 0) {
		f->board = v;
	} else if (strcmp(arg, "kernel") == 0) {
		f->kernel = v;
	} else if (strcmp(arg, "mode") == 0) {
		f->mode = v;
	} else if (strcmp(arg, "suite") == 0) {
		f->suite = v;
	} else if (strcmp(arg, "workload") == 0) {
		f->workload = v;
	} else if (strcmp(arg, "metric") == 0) {
		f->metric = v;
	} else if (strcmp(arg, "source") == 0) {
		f->source = v;
	} else {
		const char *best = NULL;
		int bd = 3;
		for (size_t i = 0; fields[i]; i++) {
			int d = lab_edit_distance(arg, fields[i]);
			if (d < bd) {
				bd = d;
				best = fields[i];
			}
		}
		int rc = LAB_ERR(e, LAB_EUSAGE, "filter: unknown field '%s'%s%s%s", arg,
				 best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
		*eq = '=';
		return rc;
	}
	return LAB_OK;
}

int results_latest_run(struct store *s, int64_t *run_id, struct lab_err *e)
{
	sqlite3 *db = store_sqlite(s);
	sqlite3_stmt *st;
	*run_id = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT id FROM run WHERE status != 'merging'"
			       " ORDER BY started_at DESC, id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "latest run");
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_err(e, db, "latest run");
	return LAB_OK;
}

const struct results_run *results_run_by_id(const struct results *r, int64_t id)
{
	for (size_t i = 0; i < r->nruns; i++)
		if (r->runs[i].id == id)
			return &r->runs[i];
	return NULL;
}

struct idx {
	int64_t id;
	size_t i;
};

static int cmp_idx(const void *a, const void *b)
{
	int64_t x = ((const struct idx *)a)->id, y = ((const struct idx *)b)->id;
	return x < y ? -1 : x > y;
}

static bool idx_find(const struct idx *ix, size_t n, int64_t id, size_t *out)
{
	struct idx key = {id, 0};
	const struct idx *f = bsearch(&key, ix, n, sizeof *ix, cmp_idx);
	if (!f)
		return false;
	*out = f->i;
	return true;
}

/* ---- loading ------------------------------------------------------------ */

static int load_runs(struct results *r, struct priv *pv, sqlite3 *db, const struct results_filter *f,
		     struct lab_err *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, uuid, plan, lab, source, started_at, finished_at, status "
			       "FROM run ORDER BY started_at, id",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "loading runs");
	size_t cap = 0;
	struct results_run *all = NULL;
	size_t nall = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (nall == cap) {
			cap = cap ? cap * 2 : 64;
			all = xreallocarray(all, cap, sizeof *all);
		}
		struct results_run *u = &all[nall++];
		memset(u, 0, sizeof *u);
		u->id = sqlite3_column_int64(st, 0);
		u->uuid = lab_strpool_intern(&pv->pool, col_text(st, 1));
		u->plan = lab_strpool_intern(&pv->pool, col_text(st, 2));
		u->lab = lab_strpool_intern(&pv->pool, col_text(st, 3));
		u->source = lab_strpool_intern(&pv->pool, col_text(st, 4));
		u->kind = results_source_kind(u->source);
		u->started_at = lab_strpool_intern(&pv->pool, col_text(st, 5));
		u->finished_at = lab_strpool_intern(&pv->pool, col_text(st, 6));
		u->status = lab_strpool_intern(&pv->pool, col_text(st, 7));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(all);
		return db_err(e, db, "loading runs");
	}

	/* Position of upto_run: only runs started at or before it, the last N of them. */
	size_t end = nall;
	if (f->upto_run) {
		size_t k;
		for (k = 0; k < nall && all[k].id != f->upto_run; k++)
			;
		if (k == nall) {
			free(all);
			return LAB_ERR(e, LAB_EUSAGE, "no run with id %lld", (long long)f->upto_run);
		}
		end = k + 1;
	}
	r->runs = xcalloc(nall ? nall : 1, sizeof *r->runs);
	for (size_t i = end; i-- > 0;) {
		const struct results_run *u = &all[i];
		if (f->run_id && u->id != f->run_id)
			continue;
		if (f->nrun_ids) {
			bool in = false;
			for (size_t j = 0; j < f->nrun_ids; j++)
				in |= f->run_ids[j] == u->id;
			if (!in)
				continue;
		}
		if (f->source && strcmp(f->source, u->source) != 0 && strcmp(f->source, u->kind) != 0)
			continue;
		/* half copied by `db merge` (store_merge.c): only when asked for by id */
		if (!f->run_id && strcmp(u->status, "merging") == 0)
			continue;
		if (f->complete_only && strcmp(u->status, "complete") != 0 &&
		    strncmp(u->source, "import", 6) != 0)
			continue;
		if (f->last_runs && r->nruns >= f->last_runs)
			break;
		r->runs[r->nruns++] = *u;
	}
	free(all);
	/* Collected newest first: put them back in date order. */
	for (size_t i = 0; i < r->nruns / 2; i++) {
		struct results_run t = r->runs[i];
		r->runs[i] = r->runs[r->nruns - 1 - i];
		r->runs[r->nruns - 1 - i] = t;
	}
	if (f->run_id && r->nruns == 0)
		return LAB_ERR(e, LAB_EUSAGE, "no run with id %lld", (long long)f->run_id);
	return LAB_OK;
}

/* " AND j.run_id IN (1,2,3)" when the selection is not every run. */
static int run_clause(const struct results *r, sqlite3 *db, struct lab_buf *b, struct lab_err *e)
{
	sqlite3_stmt *st;
	int64_t total = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM run", -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "counting runs");
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		total = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return db_err(e, db, "counting runs");
	if ((int64_t)r->nruns == total)
		return LAB_OK;
	lab_buf_printf(b, " AND j.run_id IN (");
	for (size_t i = 0; i < r->nruns; i++)
		lab_buf_printf(b, "%s%lld", i ? "," : "", (long long)r->runs[i].id);
	lab_buf_printf(b, "%s)", r->nruns ? "" : "NULL");
	return LAB_OK;
}

static int load_parts(struct results *r, struct priv *pv, sqlite3 *db, struct lab_err *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT id, label, cid FROM part ORDER BY label, cid, id", -1, &st,
			       NULL) != SQLITE_OK)
		return db_err(e, db, "loading parts");
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (r->nparts == cap) {
			cap = cap ? cap * 2 : 32;
			r->parts = xreallocarray(r->parts, cap, sizeof *r->parts);
		}
		struct results_part *p = &r->parts[r->nparts++];
		p->id = sqlite3_column_int64(st, 0);
		p->label = lab_strpool_intern(&pv->pool, col_text(st, 1));
		p->cid = lab_strpool_intern(&pv->pool, col_text(st, 2));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_err(e, db, "loading parts");
	return LAB_OK;
}

static int load_counts(struct results *r, struct priv *pv, sqlite3 *db, const struct idx *rix,
		       const char *runs_sql, struct lab_err *e)
{
	sqlite3_stmt *st;
	char *sql = xasprintf("SELECT j.run_id, j.status, count(*) FROM job j WHERE 1%s "
			      "GROUP BY j.run_id, j.status", runs_sql);
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return db_err(e, db, "counting jobs");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t i;
		if (!idx_find(rix, r->nruns, sqlite3_column_int64(st, 0), &i))
			continue;
		struct results_run *u = &r->runs[i];
		const char *status = col_text(st, 1);
		int n = sqlite3_column_int(st, 2);
		u->jobs_total += n;
		if (strcmp(status, "ok") == 0)
			u->jobs_ok += n;
		else if (strcmp(status, "infra") == 0)
			u->jobs_infra += n;
		else if (strcmp(status, "mode-mismatch") == 0)
			u->jobs_mismatch += n;
		else if (strcmp(status, "skipped") == 0)
			u->jobs_skipped += n;
		else
			u->jobs_other += n;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_err(e, db, "counting jobs");

	sql = xasprintf("SELECT j.run_id, j.job_id, j.at, j.kind, j.stage, COALESCE(b.name, ''), "
			"j.message FROM event j LEFT JOIN board b ON b.id = j.board_id WHERE 1%s "
			"ORDER BY j.at, j.id", runs_sql);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return db_err(e, db, "loading events");
	size_t cap = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t i;
		if (!idx_find(rix, r->nruns, sqlite3_column_int64(st, 0), &i))
			continue;
		const char *kind = col_text(st, 3);
		if (strcmp(kind, "info") != 0)
			r->runs[i].events_infra++;
		if (strcmp(kind, "mode-mismatch") == 0)
			r->runs[i].events_mismatch++;
		if (r->nevents >= RESULTS_MAX_EVENTS) {
			r->nevents_dropped++;
			continue;
		}
		if (r->nevents == cap) {
			cap = cap ? cap * 2 : 64;
			r->events = xreallocarray(r->events, cap, sizeof *r->events);
		}
		struct results_event *ev = &r->events[r->nevents++];
		ev->run_id = sqlite3_column_int64(st, 0);
		ev->job_id = sqlite3_column_int64(st, 1);
		ev->at = lab_strpool_intern(&pv->pool, col_text(st, 2));
		ev->kind = lab_strpool_intern(&pv->pool, kind);
		ev->stage = lab_strpool_intern(&pv->pool, col_text(st, 4));
		ev->board = lab_strpool_intern(&pv->pool, col_text(st, 5));
		ev->message = lab_strpool_intern(&pv->pool, col_text(st, 6));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_err(e, db, "loading events");
	return LAB_OK;
}

/* Interned strings: the same pointer is the same string (the common case
 * when sorting ~10^5 groups that differ only in their run). */
static int cmp_str(const char *a, const char *b)
{
	return a == b ? 0 : strcmp(a, b);
}

static int cmp_group(const void *x, const void *y, void *ctx)
{
	const struct results_group *a = x, *b = y;
	(void)ctx;
	int c;
	/* parts[] is ordered by label (load_parts: ORDER BY label, BINARY
	 * collation, which orders like strcmp): the index is the label order. */
	if (a->part != b->part)
		return a->part < b->part ? -1 : 1;
	if ((c = cmp_str(a->board, b->board)) || (c = cmp_str(a->kernel, b->kernel)) ||
	    (c = cmp_str(a->workload, b->workload)) || (c = cmp_str(a->metric, b->metric)))
		return c;
	if ((c = results_mode_cmp(a->mode, b->mode)))
		return c;
	if ((c = cmp_str(a->unit, b->unit)) || (c = cmp_str(a->suite, b->suite)))
		return c;
	return a->run < b->run ? -1 : a->run > b->run;
}

/* Values in iteration order, then the warm-up flag on the first. */
static void group_finish(struct results_group *g)
{
	for (size_t i = 1; i < g->n; i++) {
		double v = g->v[i];
		int it = g->iter[i];
		unsigned char w = g->warm[i];
		uint32_t o = g->origin ? g->origin[i] : 0;
		size_t j = i;
		while (j > 0 && g->iter[j - 1] > it) {
			g->v[j] = g->v[j - 1];
			g->iter[j] = g->iter[j - 1];
			g->warm[j] = g->warm[j - 1];
			if (g->origin)
				g->origin[j] = g->origin[j - 1];
			j--;
		}
		g->v[j] = v;
		g->iter[j] = it;
		g->warm[j] = w;
		if (g->origin)
			g->origin[j] = o;
	}
	g->direction = stats_direction(g->metric, g->unit);
	if (stats_warmup(g->v, g->n, g->direction, &g->warmup_dev))
		g->warm[0] = 1;
}

/* Where loaded samples go: the group key being built and two small caches. */
struct sink {
	struct gkey k;
	struct mru mru;
	size_t recent[8], nrecent;
};

static void sink_init(struct sink *sk)
{
	memset(sk, 0, sizeof *sk); /* hashed as words: every key field starts zero */
	for (size_t q = 0; q < LAB_ARRAY_SIZE(sk->recent); q++)
		sk->recent[q] = (size_t)-1;
}

/* One value into the group of sk->k (metric and unit already set). */
static void sink_add(struct results *r, struct priv *pv, struct sink *sk, double v, int iter, int warm,
		     uint32_t origin)
{
	/* The groups of the current job repeat row after row. */
	struct results_group *g = NULL;
	for (size_t q = 0; q < LAB_ARRAY_SIZE(sk->recent) && !g; q++)
		if (sk->recent[q] < r->ngroups && gkey_eq(&r->groups[sk->recent[q]], &sk->k))
			g = &r->groups[sk->recent[q]];
	if (!g) {
		g = group_get(r, pv, &sk->k);
		sk->recent[sk->nrecent++ % LAB_ARRAY_SIZE(sk->recent)] = (size_t)(g - r->groups);
	}
	group_push(g, v, iter, warm, origin);
	r->runs[sk->k.run].nsamples++;
	r->nsamples++;
}

static void bind_filters(sqlite3_stmt *st, const struct results_filter *f)
{
	/* ?1..?7 everywhere; a statement without some of them ignores those binds. */
	const char *binds[] = {f->part, f->board, f->kernel, f->mode, f->suite, f->workload, f->metric};
	int n = sqlite3_bind_parameter_count(st);
	for (int i = 0; i < 7 && i < n; i++)
		if (binds[i])
			sqlite3_bind_text(st, i + 1, binds[i], -1, SQLITE_STATIC);
}

#define JOB_WHERE \
	"WHERE j.status != 'mode-mismatch' AND (j.verified_mode IS NULL OR j.verified_mode = j.mode)"

/* The job filters after JOB_WHERE (aliases j, b, k). */
static char *job_filters(const struct results_filter *f, const char *runs_sql)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_printf(&b, "%s%s%s%s%s%s", runs_sql,
		       f->part ? " AND j.part_id IN (SELECT id FROM part WHERE label = ?1)" : "",
		       f->board ? " AND b.name = ?2" : "", f->kernel ? " AND k.version = ?3" : "",
		       f->mode ? " AND j.mode = ?4" : "", f->suite ? " AND j.suite = ?5" : "");
	/* ids from the database itself, written as integers */
	for (size_t i = 0; i < f->npart_ids; i++)
		lab_buf_printf(&b, "%s%lld", i ? "," : " AND j.part_id IN (", (long long)f->part_ids[i]);
	if (f->npart_ids)
		lab_buf_printf(&b, ")");
	char *out = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return out;
}

/*
 * Some runs with a filter besides the runs, or runs whose rows are spread
 * thin over their rowid ranges: one join driven by the selected jobs
 * (job_run, the iteration unique index, sample_iter), so the part of a
 * night out of a year reads only its rows.
 */
static int load_samples_join(struct results *r, struct priv *pv, sqlite3 *db,
			     const struct results_filter *f, const struct idx *rix,
			     const struct idx *pix, const char *runs_sql, struct lab_err *e)
{
	char *jf = job_filters(f, runs_sql);
	char *sql = xasprintf(
		"SELECT j.run_id, j.part_id, COALESCE(b.name, ''), COALESCE(k.version, ''), j.mode, "
		"j.suite, i.workload, i.n, i.warmup, s.metric, s.unit, s.value, j.id, i.id, %s "
		"FROM sample s JOIN iteration i ON i.id = s.iteration_id "
		"JOIN job j ON j.id = i.job_id "
		"LEFT JOIN board b ON b.id = j.board_id LEFT JOIN kernel k ON k.id = j.kernel_id "
		JOB_WHERE "%s%s%s",
		pv->has_origin ? ORIGIN_COLS : NO_ORIGIN, jf, f->workload ? " AND i.workload = ?6" : "",
		f->metric ? " AND s.metric = ?7" : "");
	free(jf);
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return db_err(e, db, "loading samples");
	bind_filters(st, f);
	/* Rows come grouped by iteration and job: reuse the previous row's
	 * interned job and iteration fields instead of hashing them again. */
	struct sink sk;
	sink_init(&sk);
	struct gkey *k = &sk.k;
	int64_t last_job = -1, last_iter = -1;
	uint32_t origin = 0;
	bool job_ok = false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t job = sqlite3_column_int64(st, 12), iter = sqlite3_column_int64(st, 13);
		if (job != last_job) {
			last_job = job;
			last_iter = -1;
			job_ok = idx_find(rix, r->nruns, sqlite3_column_int64(st, 0), &k->run) &&
				 idx_find(pix, r->nparts, sqlite3_column_int64(st, 1), &k->part);
			if (job_ok) {
				k->board = lab_strpool_intern(&pv->pool, col_text(st, 2));
				k->kernel = lab_strpool_intern(&pv->pool, col_text(st, 3));
				k->mode = lab_strpool_intern(&pv->pool, col_text(st, 4));
				k->suite = lab_strpool_intern(&pv->pool, col_text(st, 5));
			}
		}
		if (!job_ok)
			continue;
		if (iter != last_iter) {
			last_iter = iter;
			k->workload = mru_intern(&sk.mru, &pv->pool, col_text(st, 6));
			origin = origin_add(r, pv, col_opt(st, 14), col_opt(st, 15), col_opt(st, 16));
		}
		k->metric = mru_intern(&sk.mru, &pv->pool, col_text(st, 9));
		k->unit = mru_intern(&sk.mru, &pv->pool, col_text(st, 10));
		sink_add(r, pv, &sk, sqlite3_column_double(st, 11), sqlite3_column_int(st, 7),
			 sqlite3_column_int(st, 8), origin);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_err(e, db, "reading samples");
	return LAB_OK;
}

/* ---- ids in ascending order ---------------------------------------------- */

/*
 * Every run, or whole runs within their rowid ranges (night_ranges): three
 * plain scans (jobs, iterations, samples) joined in C through sorted id
 * lists.  For a whole year this is ~3x cheaper in SQLite than the join's
 * four rowid lookups per sample, and samples arrive in rowid order as the
 * join's full scan gave them.
 */
struct sjob {
	size_t run, part;
	const char *board, *kernel, *mode, *suite;
};

struct siter {
	size_t job;
	const char *workload;
	int n, warm;
	uint32_t origin;
};

/* The rowid ranges of some runs' iterations and samples (load_samples_scan
 * reads only those), and whether the runs' rows fill their ranges closely
 * enough for that to beat the join. */
struct id_ranges {
	int64_t ilo, ihi, slo, shi;
	bool dense;
};

static int night_ranges(struct store *s, sqlite3 *db, const char *runs_sql, struct id_ranges *rg,
			struct lab_err *e)
{
	memset(rg, 0, sizeof *rg);
	rg->ilo = rg->slo = 1; /* empty until found */
	sqlite3_stmt *st;
	char *sql = xasprintf("SELECT min(i.id), max(i.id), count(*) FROM iteration i "
			      "JOIN job j ON j.id = i.job_id WHERE 1%s", runs_sql);
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return db_err(e, db, "bounding iterations");
	int64_t n = 0;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		rg->ilo = sqlite3_column_int64(st, 0);
		rg->ihi = sqlite3_column_int64(st, 1);
		n = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return db_err(e, db, "bounding iterations");
	/* rows of other runs in the range are read and dropped: at most as
	 * many as the runs' own */
	rg->dense = n == 0 || rg->ihi - rg->ilo + 1 <= 2 * n;
	if (!rg->dense || n == 0)
		return LAB_OK;
	return store_iter_rowids(s, "sample", rg->ilo, rg->ihi, &rg->slo, &rg->shi, e);
}

/* rg NULL: every run (runs_sql ""); else the runs of runs_sql, whose rows
 * lie in rg's rowid ranges. */
static int load_samples_scan(struct results *r, struct priv *pv, sqlite3 *db,
			     const struct results_filter *f, const struct idx *rix,
			     const struct idx *pix, const char *runs_sql, const struct id_ranges *rg,
			     struct lab_err *e)
{
	char irange[64] = "", srange[64] = "";
	if (rg) {
		snprintf(irange, sizeof irange, "i.id BETWEEN %lld AND %lld", (long long)rg->ilo,
			 (long long)rg->ihi);
		snprintf(srange, sizeof srange, "id BETWEEN %lld AND %lld", (long long)rg->slo,
			 (long long)rg->shi);
	}
	struct sjob *jobs = NULL;
	struct siter *its = NULL;
	size_t njobs = 0, jcap = 0, nits = 0, icap = 0;
	struct lab_idseq jids = {0}, iids = {0};
	sqlite3_stmt *st = NULL;
	int rc;

	char *jf = job_filters(f, runs_sql);
	char *sql = xasprintf("SELECT j.id, j.run_id, j.part_id, COALESCE(b.name, ''), "
			      "COALESCE(k.version, ''), j.mode, j.suite FROM job j "
			      "LEFT JOIN board b ON b.id = j.board_id "
			      "LEFT JOIN kernel k ON k.id = j.kernel_id " JOB_WHERE "%s ORDER BY j.id",
			      jf);
	free(jf);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		rc = db_err(e, db, "loading jobs");
		goto out;
	}
	bind_filters(st, f);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct sjob j;
		if (!idx_find(rix, r->nruns, sqlite3_column_int64(st, 1), &j.run) ||
		    !idx_find(pix, r->nparts, sqlite3_column_int64(st, 2), &j.part))
			continue;
		j.board = lab_strpool_intern(&pv->pool, col_text(st, 3));
		j.kernel = lab_strpool_intern(&pv->pool, col_text(st, 4));
		j.mode = lab_strpool_intern(&pv->pool, col_text(st, 5));
		j.suite = lab_strpool_intern(&pv->pool, col_text(st, 6));
		if (njobs == jcap) {
			jcap = jcap ? jcap * 2 : 256;
			jobs = xreallocarray(jobs, jcap, sizeof *jobs);
		}
		lab_idseq_push(&jids, sqlite3_column_int64(st, 0));
		jobs[njobs++] = j;
	}
	if (rc != SQLITE_DONE) {
		rc = db_err(e, db, "reading jobs");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;

	struct mru mru = {0};
	sql = xasprintf("SELECT i.id, i.job_id, i.workload, i.n, i.warmup, %s FROM iteration i%s%s%s%s"
			" ORDER BY i.id", pv->has_origin ? ORIGIN_COLS : NO_ORIGIN,
			f->workload || rg ? " WHERE " : "", irange, f->workload && rg ? " AND " : "",
			f->workload ? "i.workload = ?6" : "");
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		rc = db_err(e, db, "loading iterations");
		goto out;
	}
	bind_filters(st, f);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct siter it;
		if (!lab_idseq_find(&jids, sqlite3_column_int64(st, 1), &it.job))
			continue;
		it.workload = mru_intern(&mru, &pv->pool, col_text(st, 2));
		it.n = sqlite3_column_int(st, 3);
		it.warm = sqlite3_column_int(st, 4);
		it.origin = origin_add(r, pv, col_opt(st, 5), col_opt(st, 6), col_opt(st, 7));
		if (nits == icap) {
			icap = icap ? icap * 2 : 1024;
			its = xreallocarray(its, icap, sizeof *its);
		}
		lab_idseq_push(&iids, sqlite3_column_int64(st, 0));
		its[nits++] = it;
	}
	if (rc != SQLITE_DONE) {
		rc = db_err(e, db, "reading iterations");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;

	sql = xasprintf("SELECT iteration_id, metric, unit, value FROM sample%s%s%s%s",
			f->metric || rg ? " WHERE " : "", srange, f->metric && rg ? " AND " : "",
			f->metric ? "metric = ?7" : "");
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		rc = db_err(e, db, "loading samples");
		goto out;
	}
	bind_filters(st, f);
	struct sink sk;
	sink_init(&sk);
	int64_t last = 0;
	const struct siter *it = NULL;
	bool first = true;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t iid = sqlite3_column_int64(st, 0);
		if (first || iid != last) {
			/* Samples of one iteration are consecutive: one lookup per iteration. */
			size_t x;
			first = false;
			last = iid;
			it = lab_idseq_find(&iids, iid, &x) ? &its[x] : NULL;
			if (it) {
				const struct sjob *j = &jobs[it->job];
				sk.k.run = j->run;
				sk.k.part = j->part;
				sk.k.board = j->board;
				sk.k.kernel = j->kernel;
				sk.k.mode = j->mode;
				sk.k.suite = j->suite;
				sk.k.workload = it->workload;
			}
		}
		if (!it)
			continue;
		sk.k.metric = mru_intern(&sk.mru, &pv->pool, col_text(st, 1));
		sk.k.unit = mru_intern(&sk.mru, &pv->pool, col_text(st, 2));
		sink_add(r, pv, &sk, sqlite3_column_double(st, 3), it->n, it->warm, it->origin);
	}
	if (rc != SQLITE_DONE) {
		rc = db_err(e, db, "reading samples");
		goto out;
	}
	rc = LAB_OK;
out:
	sqlite3_finalize(st);
	free(jids.id);
	free(iids.id);
	free(jobs);
	free(its);
	return rc;
}

/* Groups whose jobs proved their mode by sysfs alone (board type with
 * `trace: false`): every report marks their figures.  Such jobs are rare,
 * so the few rows are matched against the groups after loading. */
static int mark_sysfs_only(struct results *r, sqlite3 *db, struct lab_err *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT j.run_id, COALESCE(b.name, ''), j.mode FROM job j"
				   " LEFT JOIN board b ON b.id = j.board_id"
				   " WHERE j.verified_by = 'sysfs-only'", -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "loading how modes were proved");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t run = sqlite3_column_int64(st, 0);
		const char *board = col_text(st, 1), *mode = col_text(st, 2);
		for (size_t i = 0; i < r->ngroups; i++) {
			struct results_group *g = &r->groups[i];
			if (r->runs[g->run].id == run && strcmp(g->board, board) == 0 &&
			    strcmp(g->mode, mode) == 0)
				g->sysfs_only = true;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? LAB_OK : db_err(e, db, "reading how modes were proved");
}

/* Groups of jobs whose part was past its wear thresholds, and every part's
 * readings (docs/running.md, "Part health"), the same way. */
static int mark_worn(struct results *r, struct store *s, sqlite3 *db, struct lab_err *e)
{
	sqlite3_stmt *st;
	int rc;
	if (store_schema_version(s) < 7) /* a read-only look at an older database */
		return LAB_OK;
	for (size_t i = 0; i < r->nparts; i++)
		if ((rc = store_health_summary(s, r->parts[i].id, &r->parts[i].health, e)))
			return rc;
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT j.run_id, COALESCE(b.name, ''), j.mode FROM job j"
				   " LEFT JOIN board b ON b.id = j.board_id"
				   " WHERE j.health_flag IS NOT NULL", -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "loading flagged jobs");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t run = sqlite3_column_int64(st, 0);
		const char *board = col_text(st, 1), *mode = col_text(st, 2);
		for (size_t i = 0; i < r->ngroups; i++) {
			struct results_group *g = &r->groups[i];
			if (r->runs[g->run].id == run && strcmp(g->board, board) == 0 &&
			    strcmp(g->mode, mode) == 0)
				g->worn = true;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? LAB_OK : db_err(e, db, "reading flagged jobs");
}

int results_load(struct store *s, const struct results_filter *f, struct results **out,
		 struct lab_err *e)
{
	static const struct results_filter none;
	if (!f)
		f = &none;
	sqlite3 *db = store_sqlite(s);
	struct results *r = xcalloc(1, sizeof *r);
	struct priv *pv = xcalloc(1, sizeof *pv);
	r->priv = pv;
	pv->ocap = 16;
	r->origins = xcalloc(pv->ocap, sizeof *r->origins);
	r->origins[0] = (struct results_origin){"local", NULL, NULL};
	r->norigins = 1;
	pv->has_origin = store_schema_version(s) >= 8; /* a read-only look at an older database */
	int rc;
	struct lab_buf runs_sql;
	lab_buf_init(&runs_sql, 0);
	struct idx *rix = NULL, *pix = NULL;

	if ((rc = load_runs(r, pv, db, f, e)) || (rc = load_parts(r, pv, db, e)) ||
	    (rc = run_clause(r, db, &runs_sql, e)))
		goto fail;
	rix = xcalloc(r->nruns + 1, sizeof *rix);
	for (size_t i = 0; i < r->nruns; i++)
		rix[i] = (struct idx){r->runs[i].id, i};
	qsort(rix, r->nruns, sizeof *rix, cmp_idx);
	pix = xcalloc(r->nparts + 1, sizeof *pix);
	for (size_t i = 0; i < r->nparts; i++)
		pix[i] = (struct idx){r->parts[i].id, i};
	qsort(pix, r->nparts, sizeof *pix, cmp_idx);
	if ((rc = load_counts(r, pv, db, rix, lab_buf_cstr(&runs_sql), e)))
		goto fail;
	/* An empty run clause means every run is selected: scan everything.
	 * Whole nights out of many (no filter but the runs) are scanned too,
	 * within their rowid ranges: the join's four lookups a sample cost a
	 * 1,024-board night 0.76 s where its scan takes 0.3 s.  A sparser
	 * selection goes through the join. */
	const char *rs = lab_buf_cstr(&runs_sql);
	struct id_ranges rg;
	bool whole = !f->part && !f->board && !f->kernel && !f->mode && !f->suite && !f->workload &&
		     !f->metric && !f->npart_ids;
	if (!rs[0])
		rc = load_samples_scan(r, pv, db, f, rix, pix, "", NULL, e);
	else if (whole && (rc = night_ranges(s, db, rs, &rg, e)) == LAB_OK && rg.dense)
		rc = load_samples_scan(r, pv, db, f, rix, pix, rs, &rg, e);
	else if (!rc)
		rc = load_samples_join(r, pv, db, f, rix, pix, rs, e);
	if (!rc && !f->values_only)
		rc = mark_sysfs_only(r, db, e);
	if (!rc && !f->values_only)
		rc = mark_worn(r, s, db, e);
	if (rc)
		goto fail;
	for (size_t i = 0; i < r->ngroups; i++)
		group_finish(&r->groups[i]);
	if (r->ngroups > 1) /* groups is NULL when empty: qsort_r's pointer must not be */
		qsort_r(r->groups, r->ngroups, sizeof *r->groups, cmp_group, r);
	free(pv->gslot); /* the index is invalid after sorting */
	pv->gslot = NULL;
	pv->gcap = 0;
	free(rix);
	free(pix);
	lab_buf_free(&runs_sql);
	*out = r;
	return LAB_OK;
fail:
	free(rix);
	free(pix);
	lab_buf_free(&runs_sql);
	results_free(r);
	return rc;
}

void results_free(struct results *r)
{
	if (!r)
		return;
	struct priv *pv = r->priv;
	for (size_t i = 0; i < r->ngroups; i++) {
		free(r->groups[i].v); /* v owns iter and warm too */
		free(r->groups[i].origin);
	}
	free(r->groups);
	free(r->runs);
	free(r->parts);
	free(r->events);
	free(r->origins);
	if (pv) {
		lab_strpool_free(&pv->pool);
		free(pv->gslot);
		free(pv);
	}
	free(r);
}

const char *results_source_kind(const char *source)
{
	static const char *const kinds[] = {"lab", "virtual", "simulated", "mixed"};
	if (!source || strncmp(source, "import", 6) == 0)
		return "imported";
	for (size_t i = 0; i < LAB_ARRAY_SIZE(kinds); i++)
		if (strcmp(source, kinds[i]) == 0)
			return kinds[i];
	return kinds[0]; /* stores before sources had kinds: controller runs were "lab" */
}

const char *results_source_banner(const struct results *r, char *buf, size_t n)
{
	static const struct {
		const char *kind, *what;
	} what[] = {
		{"simulated", "figures from the simulator's model, not measurements"},
		{"virtual", "figures from an emulated board, not a real part"},
		{"mixed", "runs on boards of several sources"},
		{"imported", "figures imported from files"},
		{"lab", "measured on lab boards"},
	};
	buf[0] = '\0';
	bool any = false;
	for (size_t i = 0; i < r->nruns; i++)
		any |= strcmp(r->runs[i].kind, "lab") != 0;
	if (!any)
		return buf;
	for (size_t k = 0; k < LAB_ARRAY_SIZE(what); k++) {
		bool has = false;
		for (size_t i = 0; i < r->nruns && !has; i++)
			has = strcmp(r->runs[i].kind, what[k].kind) == 0;
		if (!has)
			continue;
		size_t len = strlen(buf);
		snprintf(buf + len, n - len, "%s%s - %s", len ? "; " : "source: ", what[k].kind,
			 what[k].what);
	}
	return buf;
}

const char *results_provenance(const struct results *r, const char *kind, size_t part,
			       const char *workload, const char *mode, const char *metric)
{
	if (!kind || strcmp(kind, "simulated") != 0)
		return "";
	int m = lab_mode_parse(mode);
	const char *cid = part < r->nparts ? r->parts[part].cid : NULL;
	if (m >= 0 && sim_calib_fitted_cid(cid, workload, lab_mode_cqe(m), metric))
		return "fitted to published data";
	return "assumed (no published data)";
}

/* ---- trends over nights ------------------------------------------------- */

struct tpriv {
	struct lab_strpool pool;
	struct mru mru; /* the names repeat on every group, as on every loaded row */
	size_t *slot;   /* point index + 1; 0 = empty */
	size_t cap;
	size_t alloc;   /* allocated entries of pts */
};

static uint64_t tp_hash(const struct results_trend_point *p)
{
	uint64_t w[6] = {p->part, p->run, (uintptr_t)p->workload, (uintptr_t)p->metric,
			 (uintptr_t)p->unit, (uintptr_t)p->mode};
	return hash_words(w, 6);
}

static bool tp_eq(const struct results_trend_point *a, const struct results_trend_point *b)
{
	return a->part == b->part && a->run == b->run && a->workload == b->workload &&
	       a->metric == b->metric && a->unit == b->unit && a->mode == b->mode;
}

static struct results_trend_point *tp_get(struct results_trend *t, struct tpriv *tp,
					  const struct results_trend_point *k)
{
	if (t->npts * 2 >= tp->cap) {
		size_t ncap = tp->cap ? tp->cap * 2 : 256;
		size_t *ns = xcalloc_written(ncap, sizeof *ns);
		for (size_t i = 0; i < t->npts; i++) {
			size_t j = tp_hash(&t->pts[i]) & (ncap - 1);
			while (ns[j])
				j = (j + 1) & (ncap - 1);
			ns[j] = i + 1;
		}
		free(tp->slot);
		tp->slot = ns;
		tp->cap = ncap;
	}
	size_t j = tp_hash(k) & (tp->cap - 1);
	while (tp->slot[j]) {
		struct results_trend_point *p = &t->pts[tp->slot[j] - 1];
		if (tp_eq(p, k))
			return p;
		j = (j + 1) & (tp->cap - 1);
	}
	if (t->npts == tp->alloc) {
		tp->alloc = tp->alloc ? tp->alloc * 2 : 256;
		t->pts = xreallocarray(t->pts, tp->alloc, sizeof *t->pts);
	}
	struct results_trend_point *p = &t->pts[t->npts];
	*p = *k;
	tp->slot[j] = ++t->npts;
	return p;
}

static struct results_trend *trend_new(void)
{
	struct results_trend *t = xcalloc(1, sizeof *t);
	t->priv = xcalloc(1, sizeof(struct tpriv));
	return t;
}

/* The parts of r that hold values, in label order (parts[] is): the first
 * max_parts become t's parts. */
static void trend_parts(struct results_trend *t, const struct results *r, size_t max_parts)
{
	struct tpriv *tp = t->priv;
	bool *has = xcalloc(r->nparts + 1, sizeof *has);
	for (size_t i = 0; i < r->ngroups; i++)
		has[r->groups[i].part] = true;
	t->parts = xcalloc(r->nparts + 1, sizeof *t->parts);
	for (size_t i = 0; i < r->nparts; i++) {
		if (!has[i])
			continue;
		if (t->nparts_seen++ < max_parts)
			t->parts[t->nparts++] = (struct results_trend_part){
				r->parts[i].id, lab_strpool_intern(&tp->pool, r->parts[i].label)};
	}
	free(has);
}

/* Every group of r whose part is one of t's into the points; run_of[k]: t's
 * run index of r's run k. */
static void trend_add(struct results_trend *t, const struct results *r, const size_t *run_of)
{
	struct tpriv *tp = t->priv;
	size_t *part_of = xmalloc((r->nparts + 1) * sizeof *part_of);
	for (size_t i = 0; i < r->nparts; i++) {
		part_of[i] = (size_t)-1;
		for (size_t k = 0; k < t->nparts; k++)
			if (t->parts[k].id == r->parts[i].id) {
				part_of[i] = k;
				break;
			}
	}
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct results_group *g = &r->groups[i];
		if (part_of[g->part] == (size_t)-1 || g->n == 0)
			continue;
		struct results_trend_point k = {.part = part_of[g->part], .run = run_of[g->run],
						.workload = mru_intern(&tp->mru, &tp->pool, g->workload),
						.metric = mru_intern(&tp->mru, &tp->pool, g->metric),
						.unit = mru_intern(&tp->mru, &tp->pool, g->unit), .mode = mru_intern(&tp->mru, &tp->pool, g->mode)};
		struct results_trend_point *p = tp_get(t, tp, &k);
		for (size_t v = 0; v < g->n; v++) {
			p->sum += g->v[v];
			p->n++;
			if (!g->warm[v]) {
				p->sum_kept += g->v[v];
				p->n_kept++;
			}
		}
	}
	free(part_of);
}

static void trend_run(struct results_trend *t, const struct results_run *u)
{
	struct tpriv *tp = t->priv;
	t->runs[t->nruns++] = (struct results_trend_run){u->id, lab_strpool_intern(&tp->pool, u->started_at)};
}

struct results_trend *results_trend_of(const struct results *r, size_t max_parts)
{
	struct results_trend *t = trend_new();
	trend_parts(t, r, max_parts);
	t->runs = xcalloc(r->nruns + 1, sizeof *t->runs);
	size_t *run_of = xcalloc(r->nruns + 1, sizeof *run_of);
	for (size_t i = 0; i < r->nruns; i++) {
		run_of[i] = i;
		trend_run(t, &r->runs[i]);
	}
	trend_add(t, r, run_of);
	free(run_of);
	return t;
}

int results_trend_load(struct store *s, const struct results_filter *f, const struct results *cur,
		       size_t max_parts, struct results_trend **out, struct lab_err *e)
{
	/* the nights: load_runs alone (no samples) */
	struct results *nights = xcalloc(1, sizeof *nights);
	struct priv *npv = xcalloc(1, sizeof *npv);
	nights->priv = npv;
	int rc = load_runs(nights, npv, store_sqlite(s), f, e);
	if (rc) {
		results_free(nights);
		return rc;
	}
	struct results_trend *t = trend_new();
	trend_parts(t, cur, max_parts);
	t->runs = xcalloc(nights->nruns + 1, sizeof *t->runs);
	int64_t *part_ids = xmalloc((t->nparts + 1) * sizeof *part_ids);
	for (size_t k = 0; k < t->nparts; k++)
		part_ids[k] = t->parts[k].id;
	for (size_t i = 0; i < nights->nruns && !rc; i++) {
		const struct results_run *u = &nights->runs[i];
		size_t at = t->nruns;
		trend_run(t, u);
		if (t->nparts == 0)
			continue;
		if (cur->nruns == 1 && cur->runs[0].id == u->id) {
			trend_add(t, cur, &at);
			continue;
		}
		struct results_filter one = *f;
		one.run_id = u->id;
		one.run_ids = NULL;
		one.nrun_ids = 0;
		one.upto_run = 0;
		one.last_runs = 0;
		one.values_only = true; /* a part's health readings 90 times over: not drawn here */
		/* Only the trended parts' jobs: the HTML draws the first dut_detail
		 * parts, and a 1,024-board night loaded whole for them made the
		 * nightly report grow by about 0.6 s with every night of history. */
		one.part_ids = part_ids;
		one.npart_ids = t->nparts;
		struct results *r;
		if ((rc = results_load(s, &one, &r, e)))
			break;
		size_t *run_of = xcalloc(r->nruns + 1, sizeof *run_of);
		for (size_t k = 0; k < r->nruns; k++)
			run_of[k] = at;
		trend_add(t, r, run_of);
		free(run_of);
		results_free(r);
	}
	free(part_ids);
	results_free(nights);
	if (rc) {
		results_trend_free(t);
		return rc;
	}
	*out = t;
	return LAB_OK;
}

void results_trend_free(struct results_trend *t)
{
	if (!t)
		return;
	struct tpriv *tp = t->priv;
	lab_strpool_free(&tp->pool);
	free(tp->slot);
	free(tp);
	free(t->runs);
	free(t->parts);
	free(t->pts);
	free(t);
}
