/* store_latency.c - the latency histogram read (store_latency.h). */
#include "store_latency.h"
#include "mode.h"
#include "store_internal.h"

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

int store_lathist_load(struct store *s, int64_t run_id, const struct results_filter *f,
                       bool exclude_warmup, struct store_lathist **out, size_t *n,
                       struct lab_err *e)
{
	*out = NULL;
	*n = 0;
	/* name is rq_<op>_lat_b<k>: op between "rq_" and "_lat_b", k after it */
	sqlite3_stmt *q = store_prepare(
	    s,
	    "SELECT r.source, p.label, i.workload, coalesce(j.verified_mode, j.mode), c.name,"
	    " sum(c.value) FROM counter c JOIN iteration i ON i.id = c.iteration_id"
	    " JOIN job j ON j.id = i.job_id JOIN run r ON r.id = j.run_id"
	    " JOIN part p ON p.id = j.part_id"
	    " WHERE c.name GLOB 'rq_*_lat_b[0-9]*' AND j.status = 'ok'"
	    " AND (?1 = 0 OR r.id = ?1) AND (?2 IS NULL OR p.label = ?2)"
	    " AND (?3 IS NULL OR j.mode = ?3) AND (?4 IS NULL OR i.workload = ?4)"
	    " AND (?5 = 0 OR i.warmup = 0)"
	    " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5",
	    e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	if (f && f->part)
		sqlite3_bind_text(q, 2, f->part, -1, SQLITE_STATIC);
	if (f && f->mode)
		sqlite3_bind_text(q, 3, f->mode, -1, SQLITE_STATIC);
	if (f && f->workload)
		sqlite3_bind_text(q, 4, f->workload, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 5, exclude_warmup);
	struct store_lathist *h = NULL;
	size_t nh = 0;
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		const char *src = results_source_kind((const char *)sqlite3_column_text(q, 0));
		const char *part = (const char *)sqlite3_column_text(q, 1);
		const char *wl = (const char *)sqlite3_column_text(q, 2);
		const char *mode = (const char *)sqlite3_column_text(q, 3);
		const char *name = (const char *)sqlite3_column_text(q, 4);
		const char *raw = (const char *)sqlite3_column_text(q, 0);
		if (f && f->source && strcmp(f->source, src) != 0 &&
		    (!raw || strcmp(f->source, raw) != 0))
			continue;
		const char *b = name ? strstr(name, "_lat_b") : NULL;
		char op[16];
		size_t ol = b ? (size_t)(b - name) - 3 : 0;
		if (!part || !wl || !mode || !b || ol == 0 || ol >= sizeof op)
			continue;
		memcpy(op, name + 3, ol);
		op[ol] = '\0';
		int64_t k;
		if (lab_parse_i64(b + 6, &k) != 0 || k < 0 || k >= LATHIST_BUCKETS)
			continue;
		struct store_lathist *g = nh ? &h[nh - 1] : NULL;
		if (!g || strcmp(g->source, src) || strcmp(g->part, part) ||
		    strcmp(g->workload, wl) || strcmp(g->mode, mode) || strcmp(g->op, op)) {
			h = xreallocarray(h, nh + 1, sizeof *h);
			g = &h[nh++];
			memset(g, 0, sizeof *g);
			g->source = xstrdup(src);
			g->part = xstrdup(part);
			g->workload = xstrdup(wl);
			g->mode = xstrdup(mode);
			g->op = xstrdup(op);
		}
		int64_t v = sqlite3_column_int64(q, 5);
		if (v > 0) {
			g->counts[k] += (uint64_t)v;
			g->n += (uint64_t)v;
		}
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE) {
		store_lathist_free(h, nh);
		return store_fail_infra(s, e, "reading latency histograms");
	}
	/* ORDER BY name is textual (b10 before b2): harmless, the buckets are indexed */
	if (nh > 1)
		qsort(h, nh, sizeof *h, cmp_hist);
	*out = h;
	*n = nh;
	return LAB_OK;
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
