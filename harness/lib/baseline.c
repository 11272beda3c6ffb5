/* baseline.c - regression baselines (table `baseline`) and the regression check. */
#include "baseline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int db_err(struct lab_err *e, sqlite3 *db, const char *what)
{
	return LAB_ERR(e, LAB_EINFRA, "baseline: %s: %s", what, sqlite3_errmsg(db));
}

static bool run_exists(sqlite3 *db, int64_t id, char *status, size_t n)
{
	sqlite3_stmt *st;
	bool found = false;
	if (sqlite3_prepare_v2(db, "SELECT status FROM run WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		found = true;
		if (status)
			lab_strlcpy(status, (const char *)sqlite3_column_text(st, 0), n);
	}
	sqlite3_finalize(st);
	return found;
}

int baseline_set(struct store *s, const char *name, int64_t run_id, int last_n, struct lab_err *e)
{
	sqlite3 *db = store_db(s);
	if (!name || !name[0] || strlen(name) >= sizeof ((struct baseline_info *)0)->name)
		return LAB_ERR(e, LAB_EUSAGE, "baseline name must be 1..63 characters");
	if ((run_id > 0) == (last_n > 0))
		return LAB_ERR(e, LAB_EUSAGE, "baseline: give either a run id or --last N (N >= 1)");
	if (run_id > 0 && !run_exists(db, run_id, NULL, 0))
		return LAB_ERR(e, LAB_EUSAGE, "baseline: no run with id %lld", (long long)run_id);
	char now[32];
	lab_utc_iso(now, sizeof now, (int64_t)time(NULL));
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO baseline (name, kind, run_id, last_n, set_at) VALUES (?, ?, ?, ?, ?) "
			       "ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, run_id = excluded.run_id, "
			       "last_n = excluded.last_n, set_at = excluded.set_at",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "set");
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, run_id > 0 ? "run" : "last-n", -1, SQLITE_STATIC);
	if (run_id > 0) {
		sqlite3_bind_int64(st, 3, run_id);
		sqlite3_bind_null(st, 4);
	} else {
		sqlite3_bind_null(st, 3);
		sqlite3_bind_int(st, 4, last_n);
	}
	sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_err(e, db, "set");
	return LAB_OK;
}

static void fill(sqlite3_stmt *st, struct baseline_info *bi)
{
	memset(bi, 0, sizeof *bi);
	bi->id = sqlite3_column_int64(st, 0);
	lab_strlcpy(bi->name, (const char *)sqlite3_column_text(st, 1), sizeof bi->name);
	lab_strlcpy(bi->kind, (const char *)sqlite3_column_text(st, 2), sizeof bi->kind);
	bi->run_id = sqlite3_column_int64(st, 3);
	bi->last_n = sqlite3_column_int(st, 4);
	const unsigned char *t = sqlite3_column_text(st, 5);
	lab_strlcpy(bi->set_at, t ? (const char *)t : "", sizeof bi->set_at);
}

int baseline_get(struct store *s, const char *name, struct baseline_info *bi, struct lab_err *e)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT id, name, kind, run_id, last_n, set_at FROM baseline WHERE name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "get");
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		fill(st, bi);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_err(e, db, "get");
	if (rc != SQLITE_ROW)
		return LAB_ERR(e, LAB_EUSAGE,
			       "no baseline named '%s' (set one with: emmclab baseline set --run ID | --last N --name %s)",
			       name, name);
	return LAB_OK;
}

int baseline_list(struct store *s, struct baseline_info **out, size_t *n, struct lab_err *e)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT id, name, kind, run_id, last_n, set_at FROM baseline ORDER BY name",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "list");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		fill(st, &(*out)[(*n)++]);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return db_err(e, db, "list");
	}
	return LAB_OK;
}

/* The runs the baseline stands for when judging run `test_run` (never
 * test_run itself); caller frees *ids.  LAB_EUSAGE when it resolves to none. */
static int baseline_runs(struct store *s, const struct baseline_info *bi, int64_t test_run,
			 int64_t **ids, size_t *n, struct lab_err *e)
{
	sqlite3 *db = store_db(s);
	*ids = NULL;
	*n = 0;
	if (strcmp(bi->kind, "run") == 0) {
		if (bi->run_id == test_run)
			return LAB_ERR(e, LAB_EUSAGE, "run %lld is its own baseline '%s'",
				       (long long)test_run, bi->name);
		if (!run_exists(db, bi->run_id, NULL, 0))
			return LAB_ERR(e, LAB_EUSAGE, "baseline '%s' names run %lld, which no longer exists",
				       bi->name, (long long)bi->run_id);
		*ids = xmalloc(sizeof **ids);
		(*ids)[0] = bi->run_id;
		*n = 1;
		return LAB_OK;
	}
	sqlite3_stmt *st;
	/* The last N complete lab runs started before the run under test. */
	if (sqlite3_prepare_v2(db,
			       "SELECT id FROM run WHERE status = 'complete' AND id != ?1 AND source = "
			       "(SELECT source FROM run WHERE id = ?1) AND (started_at < (SELECT started_at "
			       "FROM run WHERE id = ?1) OR (started_at = (SELECT started_at FROM run WHERE "
			       "id = ?1) AND id < ?1)) ORDER BY started_at DESC, id DESC LIMIT ?2",
			       -1, &st, NULL) != SQLITE_OK)
		return db_err(e, db, "resolving last-n");
	sqlite3_bind_int64(st, 1, test_run);
	sqlite3_bind_int(st, 2, bi->last_n);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return db_err(e, db, "resolving last-n");
	}
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
	if (!run_exists(store_db(s), run_id, NULL, 0))
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
