/* store_latency.c - the latency histogram read (store_latency.h). */
#include "store_latency.h"
#include "mode.h"
#include "store_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int mode_rank(const char *m)
{
	for (size_t i = 0; i < MODE_COUNT; i++)
		if (strcmp(lab_modes[i].name, m) == 0)
			return (int)i;
	return (int)MODE_COUNT;
}

static int cmp_hist(const void *x, const void *y)
{
	const struct store_lathist *a = x, *b = y;
	int c;
	if ((c = strcmp(a->part, b->part)) || (c = strcmp(a->workload, b->workload)) ||
	    (c = strcmp(a->source, b->source)))
		return c;
	if ((c = mode_rank(a->mode) - mode_rank(b->mode)) || (c = strcmp(a->mode, b->mode)))
		return c;
	return strcmp(a->op, b->op);
}

/*
 * The groups (source kind, part, workload, mode, op) found so far, by hash:
 * the counter rows arrive in storage order, every group's rows spread over
 * the whole run, and summing them here instead of a GROUP BY spares SQLite
 * sorting every histogram counter of the run (38% of the HTML report's CPU
 * on a 1024-board night, 470,000 samples).
 */
struct group_index {
	size_t *slot; /* group index + 1; 0 empty */
	size_t size;  /* a power of two, more than twice the groups */
};

static uint64_t group_hash(const char *const key[5])
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 5; i++) {
		for (const unsigned char *p = (const unsigned char *)key[i]; *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull; /* field separator */
	}
	return h;
}

static bool group_is(const struct store_lathist *g, const char *const key[5])
{
	return !strcmp(g->source, key[0]) && !strcmp(g->part, key[1]) &&
	       !strcmp(g->workload, key[2]) && !strcmp(g->mode, key[3]) && !strcmp(g->op, key[4]);
}

static size_t group_find(const struct group_index *x, const struct store_lathist *h,
			 const char *const key[5])
{
	if (!x->size)
		return SIZE_MAX;
	for (size_t i = group_hash(key) & (x->size - 1);; i = (i + 1) & (x->size - 1)) {
		if (!x->slot[i])
			return SIZE_MAX;
		if (group_is(&h[x->slot[i] - 1], key))
			return x->slot[i] - 1;
	}
}

static void group_put(struct group_index *x, const struct store_lathist *h, size_t gi)
{
	const char *key[5] = {h[gi].source, h[gi].part, h[gi].workload, h[gi].mode, h[gi].op};
	size_t i = group_hash(key) & (x->size - 1);
	while (x->slot[i])
		i = (i + 1) & (x->size - 1);
	x->slot[i] = gi + 1;
}

/* Index group gi (of nh); grows the table to keep it under half full. */
static void group_add(struct group_index *x, const struct store_lathist *h, size_t nh, size_t gi)
{
	if (2 * nh >= x->size) {
		free(x->slot);
		x->size = x->size ? 2 * x->size : 64;
		x->slot = xcalloc_written(x->size, sizeof *x->slot);
		for (size_t i = 0; i < nh; i++)
			group_put(x, h, i);
		return;
	}
	group_put(x, h, gi);
}

/* u as the signed value whose two's complement it is (no implementation-
 * defined conversion) */
static int64_t wrap_i64(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t)u : -(int64_t)~u - 1;
}

/* An iteration whose histograms count: its group but the op. */
struct lat_iter {
	const char *src, *part, *wl, *mode; /* src static, the others in a pool */
};

/* A counter named rq_<op>_lat_b<k>: op (not NUL-terminated, *ol bytes,
 * between "rq_" and the first "_lat_b") and k, a lathist bucket; false for
 * any other name. */
static bool lat_name(const char *name, const char **op, size_t *ol, int64_t *k)
{
	const char *b = name ? strstr(name, "_lat_b") : NULL;
	if (!b || b - name <= 3 || (size_t)(b - name) - 3 >= 16)
		return false;
	*op = name + 3;
	*ol = (size_t)(b - name) - 3;
	return lab_parse_i64(b + 6, k) == 0 && *k >= 0 && *k < LATHIST_BUCKETS;
}

/* The rowids of the counters of iterations first..last, [*lo, *hi]; left
 * as they are (everything) when first..last is every iteration there is. */
static int counter_bounds(struct store *s, int64_t first, int64_t last, int64_t *lo, int64_t *hi,
			  struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(s, "SELECT min(id), max(id) FROM iteration", e);
	if (!q)
		return LAB_EINFRA;
	int r = sqlite3_step(q);
	bool all = r == SQLITE_ROW && first <= sqlite3_column_int64(q, 0) &&
		   last >= sqlite3_column_int64(q, 1);
	sqlite3_finalize(q);
	if (r != SQLITE_ROW)
		return store_fail_infra(s, e, "reading latency histograms");
	return all ? LAB_OK : store_iter_rowids(s, "counter", first, last, lo, hi, e);
}

/*
 * Two plain reads joined here, as results_load joins a night's samples: the
 * iterations that count (ok jobs of the run, the filters), then every
 * histogram counter in storage order, each found among those iterations by
 * its id.  SQLite joining the six tables for each counter row instead (38
 * rows an AndroBench iteration) was most of the HTML report's CPU on a
 * 1,024-board night; a plain scan of the counters costs a third of that.
 */
int store_lathist_load(struct store *s, int64_t run_id, const struct results_filter *f,
                       bool exclude_warmup, struct store_lathist **out, size_t *n,
                       struct lab_err *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = store_prepare(
	    s,
	    "SELECT i.id, r.source, p.label, i.workload, coalesce(j.verified_mode, j.mode)"
	    " FROM iteration i JOIN job j ON j.id = i.job_id JOIN run r ON r.id = j.run_id"
	    " JOIN part p ON p.id = j.part_id"
	    " LEFT JOIN board b ON b.id = j.board_id LEFT JOIN kernel k ON k.id = j.kernel_id"
	    " WHERE j.status = 'ok'"
	    " AND (?1 = 0 OR r.id = ?1) AND (?1 != 0 OR r.status != 'merging')"
	    " AND (?2 IS NULL OR p.label = ?2)"
	    " AND (?3 IS NULL OR j.mode = ?3) AND (?4 IS NULL OR i.workload = ?4)"
	    " AND (?5 = 0 OR i.warmup = 0) AND (?6 IS NULL OR b.name = ?6)"
	    " AND (?7 IS NULL OR k.version = ?7) AND (?8 IS NULL OR j.suite = ?8)"
	    " ORDER BY i.id",
	    e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int(q, 5, exclude_warmup);
	/* the text filters, ?2-?4 and ?6-?8; an unbound one is NULL: no filter */
	if (f) {
		const char *text[] = {NULL, NULL, f->part, f->mode, f->workload, NULL,
				      f->board, f->kernel, f->suite};
		for (int i = 2; i < (int)LAB_ARRAY_SIZE(text); i++)
			if (text[i])
				sqlite3_bind_text(q, i, text[i], -1, SQLITE_STATIC);
	}
	struct lab_strpool pool = {0};
	struct lab_idseq ids = {0};
	struct lat_iter *its = NULL;
	size_t icap = 0;
	struct store_lathist *h = NULL;
	struct group_index gx = {0};
	size_t nh = 0, cap = 0;
	int r, rc = LAB_OK;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		const char *raw = (const char *)sqlite3_column_text(q, 1);
		const char *src = results_source_kind(raw);
		const char *part = (const char *)sqlite3_column_text(q, 2);
		const char *wl = (const char *)sqlite3_column_text(q, 3);
		const char *mode = (const char *)sqlite3_column_text(q, 4);
		if (f && f->source && strcmp(f->source, src) != 0 &&
		    (!raw || strcmp(f->source, raw) != 0))
			continue;
		if (!part || !wl || !mode)
			continue;
		if (ids.n == icap) {
			icap = icap ? 2 * icap : 1024;
			its = xreallocarray(its, icap, sizeof *its);
		}
		its[ids.n] = (struct lat_iter){src, lab_strpool_intern(&pool, part),
					       lab_strpool_intern(&pool, wl),
					       lab_strpool_intern(&pool, mode)};
		lab_idseq_push(&ids, sqlite3_column_int64(q, 0));
	}
	sqlite3_finalize(q);
	q = NULL;
	if (r != SQLITE_DONE) {
		rc = store_fail_infra(s, e, "reading latency histograms");
		goto out;
	}
	if (!ids.n)
		goto out;
	/* The counters of the selected iterations, in rowid order: the rowids
	 * between the least and the greatest of theirs (the unique index on
	 * iteration_id, name holds them) when the selection is not every
	 * iteration.  A night out of many reads its own rows, not the whole
	 * table: a nightly report scanned every night's histograms before, 4.7
	 * million rows after five 1,024-board nights. */
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	if ((rc = counter_bounds(s, ids.id[0], ids.id[ids.n - 1], &lo, &hi, e)))
		goto out;
	if (!(q = store_prepare(s,
				"SELECT iteration_id, name, value FROM counter"
				" WHERE id BETWEEN ?1 AND ?2 AND name GLOB 'rq_*_lat_b[0-9]*'",
				e))) {
		rc = LAB_EINFRA;
		goto out;
	}
	sqlite3_bind_int64(q, 1, lo);
	sqlite3_bind_int64(q, 2, hi);
	/* An iteration's rows come together and name one or two groups (one an
	 * op): a row of the same iteration and op as the last is the last's group,
	 * with no lookup. */
	int64_t last_it = 0;
	size_t last_gi = SIZE_MAX;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t iid = sqlite3_column_int64(q, 0), k;
		const char *op;
		size_t ol, x;
		if (!lat_name((const char *)sqlite3_column_text(q, 1), &op, &ol, &k))
			continue;
		size_t gi = last_gi;
		if (gi == SIZE_MAX || iid != last_it || strncmp(op, h[gi].op, ol) != 0 || h[gi].op[ol]) {
			if (!lab_idseq_find(&ids, iid, &x))
				continue;
			const struct lat_iter *it = &its[x];
			char opz[16];
			memcpy(opz, op, ol);
			opz[ol] = '\0';
			const char *key[5] = {it->src, it->part, it->wl, it->mode, opz};
			gi = group_find(&gx, h, key);
			if (gi == SIZE_MAX) {
				if (nh == cap) {
					cap = cap ? 2 * cap : 16;
					h = xreallocarray(h, cap, sizeof *h);
				}
				gi = nh++;
				struct store_lathist *g = &h[gi];
				memset(g, 0, sizeof *g);
				g->source = xstrdup(it->src);
				g->part = xstrdup(it->part);
				g->workload = xstrdup(it->wl);
				g->mode = xstrdup(it->mode);
				g->op = xstrdup(opz);
				group_add(&gx, h, nh, gi);
			}
			last_it = iid;
			last_gi = gi;
		}
		/* summed in the counts themselves, modulo 2^64: the two's
		 * complement of the signed sum (no array of sums beside them:
		 * 8 MB at 1,024 boards) */
		h[gi].counts[k] += (uint64_t)sqlite3_column_int64(q, 2);
	}
	if (r != SQLITE_DONE)
		rc = store_fail_infra(s, e, "reading latency histograms");
out:
	sqlite3_finalize(q);
	free(gx.slot);
	free(ids.id);
	free(its);
	lab_strpool_free(&pool);
	if (rc != LAB_OK) {
		store_lathist_free(h, nh);
		return rc;
	}
	/* a bucket's sum over the group's iterations counts when positive */
	for (size_t i = 0; i < nh; i++)
		for (unsigned k = 0; k < LATHIST_BUCKETS; k++) {
			int64_t sum = wrap_i64(h[i].counts[k]);
			h[i].counts[k] = sum > 0 ? (uint64_t)sum : 0;
			h[i].n += h[i].counts[k];
		}
	if (nh > 1)
		qsort(h, nh, sizeof *h, cmp_hist);
	*out = h;
	*n = nh;
	return LAB_OK;
}

void store_lathist_truncate(struct store_lathist **h, size_t *n, size_t keep)
{
	if (keep >= *n)
		return;
	for (size_t i = keep; i < *n; i++) {
		free((*h)[i].source);
		free((*h)[i].part);
		free((*h)[i].workload);
		free((*h)[i].mode);
		free((*h)[i].op);
	}
	*n = keep;
	if (!keep) {
		free(*h);
		*h = NULL;
	} else {
		*h = xreallocarray(*h, keep, sizeof **h);
	}
}

void store_lathist_free(struct store_lathist *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(h[i].source);
		free(h[i].part);
		free(h[i].workload);
		free(h[i].mode);
		free(h[i].op);
	}
	free(h);
}
