/*
 * results_load has two ways to read samples: a scan of job, iteration and
 * sample joined in C (every run selected, or whole runs within their rowid
 * ranges) and one SQL join driven by the selected runs (any other filter).
 * Both must give the same groups, values, flags and counts, with every
 * filter, and both must drop mode-mismatched jobs.
 */
#include "compare.h"
#include "results.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_report_db.h"

#define NRUNS 4

static const char *const modes[] = {"fua", "cache-nofua", "fua-cqe", "cache-nofua-cqe"};

/* Four runs x 3 parts x 4 modes, two workloads with two metrics each, 4
 * iterations (the first one slow: a warm-up), plus jobs that must not load. */
static int fill(struct store *s, int64_t *runs)
{
	struct lab_err e = {0};
	int64_t parts[3], boards[2], kernel;
	const char *plabel[] = {"p-b", "p-a", "p-c"}; /* ids not in label order */
	for (int p = 0; p < 3; p++)
		if (testdb_part(s, plabel[p], &parts[p]))
			return -1;
	if (store_board_upsert(s, "board-1", "sim", "sdhci", "lab", &boards[0], &e) ||
	    store_board_upsert(s, "board-2", "sim", "sdhci", "lab", &boards[1], &e) ||
	    store_kernel_upsert(s, "6.1-fua", "s", "c", "i", &kernel, &e))
		return -1;
	uint64_t lcg = 12345;
	for (int r = 0; r < NRUNS; r++) {
		if (testdb_run(s, "lab", &runs[r]))
			return -1;
		for (int p = 0; p < 3; p++)
			for (int m = 0; m < 4; m++) {
				struct store_job_info ji = {.run_id = runs[r], .part_id = parts[p],
							    .board_id = boards[p & 1], .kernel_id = p == 2 ? 0 : kernel,
							    .suite = "nightly", .mode = modes[m]};
				int64_t job;
				if (store_job_begin(s, &ji, &job, &e) ||
				    store_job_verified(s, job, -1, -1, -1, modes[m], &e))
					return -1;
				for (int w = 0; w < 2; w++)
					for (int it = 1; it <= 4; it++) {
						struct store_sample smp[2];
						for (int k = 0; k < 2; k++) {
							lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
							double v = (100.0 + 10 * m + k) *
								   (1 + (double)(lcg >> 40) / 1e9) * (it == 1 ? 0.8 : 1);
							smp[k] = (struct store_sample){k ? "lat" : "bw", v,
										       k ? "us" : "MiB/s"};
						}
						int64_t iid;
						if (store_iteration_write(s, job, w ? "fio" : "ab", it, 1.0, it == 4, smp,
									  2, NULL, 0, &iid, &e))
							return -1;
					}
				if (store_job_finish(s, job, "ok", &e))
					return -1;
			}
		/* Never loaded: verified mode differs, and a mode-mismatch job. */
		int64_t job;
		if (testdb_job(s, runs[r], parts[0], "fua", "ok", "cache-nofua", &job) ||
		    testdb_iter(s, job, "ab", 9, "bw", 1e6, "MiB/s") ||
		    testdb_job(s, runs[r], parts[1], "fua", "mode-mismatch", "fua-cqe", &job) ||
		    testdb_iter(s, job, "ab", 9, "bw", 2e6, "MiB/s"))
			return -1;
		if (store_run_finish(s, runs[r], "complete", &e))
			return -1;
	}
	return 0;
}

static bool same_group(const struct results *ra, const struct results_group *a, const struct results *rb,
		       const struct results_group *b)
{
	if (ra->runs[a->run].id != rb->runs[b->run].id || strcmp(ra->parts[a->part].label, rb->parts[b->part].label) ||
	    strcmp(a->board, b->board) || strcmp(a->kernel, b->kernel) || strcmp(a->mode, b->mode) ||
	    strcmp(a->suite, b->suite) || strcmp(a->workload, b->workload) || strcmp(a->metric, b->metric) ||
	    strcmp(a->unit, b->unit) || a->n != b->n || a->direction != b->direction)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i] != b->v[i] || a->iter[i] != b->iter[i] || a->warm[i] != b->warm[i])
			return false;
	return isnan(a->warmup_dev) ? isnan(b->warmup_dev) : a->warmup_dev == b->warmup_dev;
}

/*
 * Load once with every run (scan) and once with all runs but the last
 * (join); the join's groups must be exactly the scan's groups of those runs.
 */
static void check_paths(struct store *s, const int64_t *runs, const char *filter, size_t want_samples)
{
	struct lab_err e = {0};
	char fa_arg[64], fb_arg[64];
	struct results_filter fa = {0}, fb = {0};
	if (filter) {
		/* results_filter_add splits its argument in place: one copy each */
		snprintf(fa_arg, sizeof fa_arg, "%s", filter);
		snprintf(fb_arg, sizeof fb_arg, "%s", filter);
		ok(results_filter_add(&fa, fa_arg, &e) == 0 && results_filter_add(&fb, fb_arg, &e) == 0,
		   "filter %s", filter);
	}
	const char *name = filter ? filter : "no filter";
	fb.run_ids = runs;
	fb.nrun_ids = NRUNS - 1;
	struct results *all = NULL, *some = NULL;
	int rc1 = results_load(s, &fa, &all, &e);
	int rc2 = results_load(s, &fb, &some, &e);
	ok(rc1 == 0 && rc2 == 0, "%s: both loads (%s)", name, e.msg);
	if (rc1 || rc2) {
		results_free(all);
		results_free(some);
		return;
	}
	size_t j = 0, bad = 0;
	for (size_t i = 0; i < all->ngroups; i++) {
		if (all->runs[all->groups[i].run].id == runs[NRUNS - 1])
			continue;
		if (j >= some->ngroups || !same_group(all, &all->groups[i], some, &some->groups[j]))
			bad++;
		j++;
	}
	ok(bad == 0, "%s: same groups, values and warm-up flags in the same order (%zu differ)", name, bad);
	ok(j == some->ngroups, "%s: no extra groups in the join (%zu vs %zu)", name, j, some->ngroups);
	ok(all->nsamples == want_samples, "%s: %zu samples by the scan (want %zu)", name, all->nsamples,
	   want_samples);
	ok(some->nsamples == want_samples / NRUNS * (NRUNS - 1), "%s: %zu samples by the join", name,
	   some->nsamples);
	if (!filter) {
		/* bw (higher is better): the slow first value is a warm-up; lat
		 * (lower is better): it is not.  Iteration 4 is marked by the store. */
		size_t bad_warm = 0;
		for (size_t i = 0; i < all->ngroups; i++) {
			const struct results_group *g = &all->groups[i];
			bool bw = strcmp(g->metric, "bw") == 0;
			if (g->n != 4 || g->warm[0] != bw || !g->warm[3] || g->iter[0] != 1 || g->iter[3] != 4)
				bad_warm++;
		}
		is_int(bad_warm, 0, "warm-up flags: computed on bw, store-marked on iteration 4");
		is_str(all->parts[all->groups[0].part].label, "p-a", "groups ordered by part label");
		is_str(all->groups[0].mode, "fua", "then mode order within a metric");
		struct compare_opts o;
		compare_opts_init(&o);
		struct compare_result *c = NULL;
		ok(compare_build(all, &o, &c, &e) == 0, "compare by mode");
		is_int(c ? c->nrows : 0, 3 * 2 * 2 * 4, "3 parts x 4 metrics x the 4 pairs of the 2x2");
		compare_free(c);
	}
	results_free(all);
	results_free(some);
}

/* Trends: nights loaded one at a time (the night under report reused) give
 * the same sums per part, workload, metric, unit, mode and night as one load
 * of all those nights; parts are the first max_parts by label. */
static const struct results_trend_point *find_pt(const struct results_trend *t, int64_t part_id,
						 int64_t run_id, const struct results_group *g)
{
	for (size_t i = 0; i < t->npts; i++) {
		const struct results_trend_point *p = &t->pts[i];
		if (t->parts[p->part].id == part_id && t->runs[p->run].id == run_id &&
		    !strcmp(p->workload, g->workload) && !strcmp(p->metric, g->metric) &&
		    !strcmp(p->unit, g->unit) && !strcmp(p->mode, g->mode))
			return p;
	}
	return NULL;
}

static void check_trend_sums(const struct results_trend *t, const struct results *all, size_t max_parts,
			     const char *what)
{
	size_t expect_pts = 0, bad = 0, seen = 0;
	for (size_t i = 0; i < all->ngroups; i++) {
		const struct results_group *g = &all->groups[i];
		/* parts[] is in label order: p-a, p-b, p-c */
		if (g->part >= max_parts)
			continue;
		expect_pts++;
		const struct results_trend_point *p =
			find_pt(t, all->parts[g->part].id, all->runs[g->run].id, g);
		if (!p) {
			bad++;
			continue;
		}
		double sum = 0, kept = 0;
		size_t nk = 0;
		for (size_t k = 0; k < g->n; k++) {
			sum += g->v[k];
			if (!g->warm[k]) {
				kept += g->v[k];
				nk++;
			}
		}
		seen += nk < g->n;
		if (p->n != g->n || p->n_kept != nk || fabs(p->sum - sum) > 1e-9 * fabs(sum) ||
		    fabs(p->sum_kept - kept) > 1e-9 * fabs(kept))
			bad++;
	}
	ok(bad == 0 && t->npts == expect_pts && expect_pts > 0,
	   "trend %s: %zu points match one joint load (%zu wrong, %zu points)", what, expect_pts, bad,
	   t->npts);
	ok(seen > 0, "trend %s: warm-ups are left out of the kept sums", what);
}

/* The parts filter the night-by-night trend load uses: with f plus one
 * part's id, exactly the values a load with f alone (all) has for that part. */
static void check_part_ids(struct store *s, const struct results_filter *f, const struct results *all,
			   const char *what)
{
	struct lab_err e = {0};
	struct results *one = NULL;
	int64_t pid = all->parts[1].id;
	struct results_filter pf = *f;
	pf.part_ids = &pid;
	pf.npart_ids = 1;
	if (results_load(s, &pf, &one, &e) != LAB_OK) {
		ok(0, "part_ids filter, %s: %s", what, e.msg);
		return;
	}
	size_t want = 0, got = 0, other = 0;
	for (size_t i = 0; i < all->ngroups; i++)
		want += all->groups[i].part == 1 ? all->groups[i].n : 0;
	for (size_t i = 0; i < one->ngroups; i++) {
		got += one->groups[i].n;
		other += one->parts[one->groups[i].part].id != pid;
	}
	ok(want > 0 && got == want && other == 0,
	   "part_ids filter, %s: %zu of %zu values, %zu groups of another part", what, got, want, other);
	results_free(one);
}

static void check_trend(struct store *s, const int64_t *runs)
{
	struct lab_err e = {0};
	struct results_filter hf = {.upto_run = runs[NRUNS - 1], .last_runs = 3};
	struct results_filter cf = {.run_id = runs[NRUNS - 1]};
	struct results *all = NULL, *cur = NULL;
	struct results_trend *t = NULL;
	if (results_load(s, &hf, &all, &e) || results_load(s, &cf, &cur, &e) ||
	    results_trend_load(s, &hf, cur, 2, &t, &e)) {
		ok(0, "trend load: %s", e.msg);
		results_free(all);
		results_free(cur);
		return;
	}
	ok(t->nruns == 3 && t->runs[0].id == runs[1] && t->runs[2].id == runs[NRUNS - 1],
	   "trend: the last 3 nights up to the one under report, in date order");
	ok(t->nparts == 2 && t->nparts_seen == 3 && !strcmp(t->parts[0].label, "p-a") &&
	   !strcmp(t->parts[1].label, "p-b"),
	   "trend: the first 2 of 3 parts by label");
	check_trend_sums(t, all, 2, "night by night");
	results_trend_free(t);
	t = results_trend_of(all, SIZE_MAX);
	ok(t->nruns == 3 && t->nparts == 3, "trend of loaded data: every night and part");
	check_trend_sums(t, all, 3, "of loaded data");
	results_trend_free(t);
	t = NULL;
	check_part_ids(s, &hf, all, "some nights (the join)");
	struct results_filter none = {0};
	struct results *every = NULL;
	if (results_load(s, &none, &every, &e) == LAB_OK)
		check_part_ids(s, &none, every, "every night (the scan)");
	else
		ok(0, "load everything: %s", e.msg);
	results_free(every);
	if (results_trend_load(s, &hf, cur, 0, &t, &e) == LAB_OK)
		ok(t->npts == 0 && t->nparts == 0 && t->nparts_seen == 3, "trend of 0 parts: none drawn");
	else
		ok(0, "trend of 0 parts: %s", e.msg);
	results_trend_free(t);
	results_free(all);
	results_free(cur);
}

/* The groups of `some` are exactly those of `all` (every run) whose run is
 * one of ids, in the same order, values and flags included. */
static bool same_as_all(const struct results *all, const struct results *some, const int64_t *ids, size_t nids)
{
	size_t j = 0;
	for (size_t i = 0; i < all->ngroups; i++) {
		bool in = false;
		for (size_t k = 0; k < nids; k++)
			in |= all->runs[all->groups[i].run].id == ids[k];
		if (!in)
			continue;
		if (j >= some->ngroups || !same_group(all, &all->groups[i], some, &some->groups[j]))
			return false;
		j++;
	}
	return j == some->ngroups && j > 0;
}

/*
 * Whole nights out of many are scanned within their rowid ranges; a night
 * whose rows are interleaved with another's (two controllers at once) reads
 * the other's rows in its range and must drop them.  Each night alone, and
 * the same night through the join (a filter naming every part), give the
 * groups of one load of everything.
 */
static void check_ranges(struct store *s, const int64_t *runs)
{
	struct lab_err e = {0};
	int64_t part, board, kernel, ab[2], job[2];
	int rc = testdb_part(s, "p-a", &part) | testdb_run(s, "lab", &ab[0]) | testdb_run(s, "lab", &ab[1]);
	rc |= store_board_upsert(s, "board-1", "sim", "sdhci", "lab", &board, &e);
	rc |= store_kernel_upsert(s, "6.1-fua", "s", "c", "i", &kernel, &e);
	for (int k = 0; k < 2 && !rc; k++) {
		struct store_job_info ji = {.run_id = ab[k], .part_id = part, .board_id = board,
					    .kernel_id = kernel, .suite = "nightly", .mode = modes[k]};
		rc |= store_job_begin(s, &ji, &job[k], &e);
		rc |= store_job_verified(s, job[k], -1, -1, -1, modes[k], &e);
	}
	for (int it = 1; it <= 6 && !rc; it++)
		for (int k = 0; k < 2; k++) { /* the two nights' rows alternate */
			struct store_sample smp[2] = {{"bw", 50.0 + it + 10 * k, "MiB/s"}, {"lat", 9.0 * it, "us"}};
			rc |= store_iteration_write(s, job[k], "ab", it, 1.0, 0, smp, 2, NULL, 0, NULL, &e);
		}
	for (int k = 0; k < 2 && !rc; k++)
		rc |= store_job_finish(s, job[k], "ok", &e) | store_run_finish(s, ab[k], "complete", &e);
	ok(rc == 0, "two interleaved nights stored (%s)", e.msg);
	struct results *all = NULL;
	struct results_filter none = {0};
	if (rc || results_load(s, &none, &all, &e)) {
		ok(0, "load everything: %s", e.msg);
		return;
	}
	int64_t *pids = xcalloc(all->nparts + 1, sizeof *pids);
	for (size_t k = 0; k < all->nparts; k++)
		pids[k] = all->parts[k].id;
	int64_t nights[NRUNS + 2];
	memcpy(nights, runs, NRUNS * sizeof *runs);
	nights[NRUNS] = ab[0];
	nights[NRUNS + 1] = ab[1];
	size_t bad = 0, badj = 0;
	for (size_t k = 0; k < NRUNS + 2; k++) {
		struct results_filter f = {.run_id = nights[k]};
		struct results *one = NULL, *joined = NULL;
		if (results_load(s, &f, &one, &e) || !same_as_all(all, one, &nights[k], 1))
			bad++;
		f.part_ids = pids;
		f.npart_ids = all->nparts;
		if (results_load(s, &f, &joined, &e) || !same_as_all(all, joined, &nights[k], 1))
			badj++;
		results_free(one);
		results_free(joined);
	}
	ok(bad == 0, "each night alone: the groups of a load of everything (%zu differ)", bad);
	ok(badj == 0, "each night through the join: the same (%zu differ)", badj);
	free(pids);
	results_free(all);
}

int main(void)
{
	char dir[] = "/tmp/emmclab-test-paths-XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return tap_done();
	}
	char path[512];
	snprintf(path, sizeof path, "%s/p.db", dir);
	struct store *s;
	struct lab_err e = {0};
	int64_t runs[NRUNS];
	if (store_open(path, 0, &s, &e) || fill(s, runs)) {
		ok(0, "store: %s", e.msg);
		return tap_done();
	}
	/* per run: 3 parts x 4 modes x 2 workloads x 4 iterations x 2 metrics */
	const size_t per_run = 3 * 4 * 2 * 4 * 2;
	check_paths(s, runs, NULL, per_run * NRUNS);
	check_paths(s, runs, "part=p-c", per_run / 3 * NRUNS);
	check_paths(s, runs, "board=board-2", per_run / 3 * NRUNS);
	check_paths(s, runs, "kernel=6.1-fua", per_run / 3 * 2 * NRUNS);
	check_paths(s, runs, "mode=fua-cqe", per_run / 4 * NRUNS);
	check_paths(s, runs, "suite=nightly", per_run * NRUNS);
	check_paths(s, runs, "workload=fio", per_run / 2 * NRUNS);
	check_paths(s, runs, "metric=lat", per_run / 2 * NRUNS);
	check_paths(s, runs, "suite=none", 0);
	check_trend(s, runs);
	check_ranges(s, runs);
	store_close(s);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return tap_done();
}
