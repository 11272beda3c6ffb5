/* baseline.c - regression baselines (table `baseline`) and the regression check. */
#include "baseline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A run that cannot be looked up counts as missing (the lookup's error is
 * the store's, and the message that follows names the run). */
static bool run_exists(struct store *s, int64_t id)
{
	struct lab_err e = {0};
	bool found = false;
	return store_run_exists(s, id, &found, &e) == LAB_OK && found;
}

int baseline_set(struct store *s, const char *name, int64_t run_id, int last_n, struct lab_err *e)
{
	if (!name || !name[0] || strlen(name) >= sizeof ((struct baseline_info *)0)->name)
		return LAB_ERR(e, LAB_EUSAGE, "baseline name must be 1..63 characters");
	if ((run_id > 0) == (last_n > 0))
		return LAB_ERR(e, LAB_EUSAGE, "baseline: give either a run id or --last N (N >= 1)");
	if (run_id > 0 && !run_exists(s, run_id))
		return LAB_ERR(e, LAB_EUSAGE, "baseline: no run with id %lld", (long long)run_id);
	char now[32];
	lab_utc_iso(now, sizeof now, (int64_t)time(NULL));
	struct store_baseline b = {
		.name = name,
		.kind = run_id > 0 ? "run" : "last-n",
		.run_id = run_id > 0 ? run_id : 0,
		.last_n = run_id > 0 ? 0 : last_n,
		.set_at = now,
	};
	return store_baseline_put(s, &b, e);
}

static void fill(const struct store_baseline *b, struct baseline_info *bi)
{
	memset(bi, 0, sizeof *bi);
	bi->id = b->id;
	lab_strlcpy(bi->name, b->name, sizeof bi->name);
	lab_strlcpy(bi->kind, b->kind, sizeof bi->kind);
	bi->run_id = b->run_id;
	bi->last_n = b->last_n;
	lab_strlcpy(bi->set_at, b->set_at, sizeof bi->set_at);
}

static void get_cb(const struct store_baseline *b, void *arg)
{
	fill(b, arg);
}

int baseline_get(struct store *s, const char *name, struct baseline_info *bi, struct lab_err *e)
{
	bool found;
	int rc = store_baseline_get(s, name, get_cb, bi, &found, e);
	if (rc)
		return rc;
	if (!found)
		return LAB_ERR(e, LAB_EUSAGE,
			       "no baseline named '%s' (set one with: emmclab baseline set --run ID | --last N --name %s)",
			       name, name);
	return LAB_OK;
}

struct list_acc {
	struct baseline_info *v;
	size_t n;
};

static void list_cb(const struct store_baseline *b, void *arg)
{
	struct list_acc *a = arg;
	a->v = xreallocarray(a->v, a->n + 1, sizeof *a->v);
	fill(b, &a->v[a->n++]);
}

int baseline_list(struct store *s, struct baseline_info **out, size_t *n, struct lab_err *e)
{
	struct list_acc a = {0};
	*out = NULL;
	*n = 0;
	int rc = store_baseline_list(s, list_cb, &a, e);
	if (rc) {
		free(a.v);
		return rc;
	}
	*out = a.v;
	*n = a.n;
	return LAB_OK;
}

/* The runs the baseline stands for when judging run `test_run` (never
 * test_run itself); caller frees *ids.  LAB_EUSAGE when it resolves to none. */
static int baseline_runs(struct store *s, const struct baseline_info *bi, int64_t test_run,
			 int64_t **ids, size_t *n, struct lab_err *e)
{
	*ids = NULL;
	*n = 0;
	if (strcmp(bi->kind, "run") == 0) {
		if (bi->run_id == test_run)
			return LAB_ERR(e, LAB_EUSAGE, "run %lld is its own baseline '%s'",
				       (long long)test_run, bi->name);
		if (!run_exists(s, bi->run_id))
			return LAB_ERR(e, LAB_EUSAGE, "baseline '%s' names run %lld, which no longer exists",
				       bi->name, (long long)bi->run_id);
		*ids = xmalloc(sizeof **ids);
		(*ids)[0] = bi->run_id;
		*n = 1;
		return LAB_OK;
	}
	/* The last N complete lab runs started before the run under test. */
	int rc = store_runs_before(s, test_run, bi->last_n, ids, n, e);
	if (rc)
		return rc;
	if (*n == 0)
		return LAB_ERR(e, LAB_EUSAGE, "baseline '%s': no complete run before run %lld",
			       bi->name, (long long)test_run);
	return LAB_OK;
}

void regress_opts_init(struct regress_opts *o)
{
	o->alpha = 0.05;
	o->threshold = REGRESS_DEFAULT_THRESHOLD;
	o->exclude_warmup = false;
}

int regress_build(struct store *s, int64_t run_id, const char *baseline,
		  const struct regress_opts *o, struct results **res, struct compare_result **cmp,
		  int64_t **base_runs, size_t *nbase, struct lab_err *e)
{
	struct regress_opts def;
	if (!o) {
		regress_opts_init(&def);
		o = &def;
	}
	*res = NULL;
	*cmp = NULL;
	if (!run_exists(s, run_id))
		return LAB_ERR(e, LAB_EUSAGE, "no run with id %lld", (long long)run_id);
	struct baseline_info bi;
	int64_t *ids = NULL;
	size_t n = 0;
	int rc;
	if ((rc = baseline_get(s, baseline ? baseline : BASELINE_DEFAULT, &bi, e)) ||
	    (rc = baseline_runs(s, &bi, run_id, &ids, &n, e)))
		return rc;
	int64_t *all = xcalloc(n + 1, sizeof *all);
	memcpy(all, ids, n * sizeof *ids);
	all[n] = run_id;
	struct results_filter f = {.run_ids = all, .nrun_ids = n + 1};
	rc = results_load(s, &f, res, e);
	free(all);
	if (rc) {
		free(ids);
		return rc;
	}
	struct compare_opts co;
	compare_opts_init(&co);
	co.by = COMPARE_BY_BASELINE;
	co.alpha = o->alpha;
	co.min_effect = o->threshold;
	co.exclude_warmup = o->exclude_warmup;
	co.base_runs = ids;
	co.nbase_runs = n;
	co.test_run = run_id;
	rc = compare_build(*res, &co, cmp, e);
	/* The comparison keeps a pointer to the ids: hand them to the caller. */
	if (rc) {
		results_free(*res);
		*res = NULL;
		free(ids);
		return rc;
	}
	(*cmp)->opts.base_runs = NULL; /* not owned by the comparison */
	if (base_runs) {
		*base_runs = ids;
		*nbase = n;
	} else {
		free(ids);
	}
	return LAB_OK;
}

int regress_check(struct store *s, int64_t run_id, const char *baseline, int *nregress,
		  FILE *summary, struct lab_err *e)
{
	struct results *res;
	struct compare_result *cmp;
	int64_t *ids;
	size_t n;
	*nregress = 0;
	int rc = regress_build(s, run_id, baseline, NULL, &res, &cmp, &ids, &n, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < cmp->nrows; i++) {
		const struct compare_row *w = &cmp->rows[i];
		if (w->cmp.verdict != VERDICT_WORSE)
			continue;
		(*nregress)++;
		if (summary)
			fprintf(summary, "regression: %s %s %s/%s: %+.2f%% [%+.2f%%, %+.2f%%] p=%.3g (%s)\n",
				w->part_label, w->mode, w->workload, w->metric, 100 * w->cmp.change,
				100 * w->cmp.change_lo, 100 * w->cmp.change_hi, w->cmp.welch.p, w->unit);
	}
	if (summary) {
		fprintf(summary, "%d regression%s in run %lld against baseline '%s' (runs",
			*nregress, *nregress == 1 ? "" : "s", (long long)run_id,
			baseline ? baseline : BASELINE_DEFAULT);
		for (size_t i = 0; i < n; i++)
			fprintf(summary, "%s%lld", i ? "," : " ", (long long)ids[i]);
		fprintf(summary, "; %zu comparisons, %zu without a test)\n", cmp->nrows, cmp->nnotest);
	}
	free(ids);
	compare_free(cmp);
	results_free(res);
	return LAB_OK;
}
