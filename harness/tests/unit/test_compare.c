/*
 * Results model and comparisons on a real store holding the published
 * reference data (written through the store API, as an import would), plus
 * the bad-input cases: n=1, missing modes, mixed units, mode mismatches.
 * Expected numbers: harness/tests/vectors/stats_vectors.py (see test_stats.c).
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

static const struct compare_row *find_row(const struct compare_result *c, const char *part,
					  const char *metric, const char *a, const char *b)
{
	for (size_t i = 0; i < c->nrows; i++) {
		const struct compare_row *w = &c->rows[i];
		if (strcmp(w->part_label, part) == 0 && strcmp(w->metric, metric) == 0 &&
		    strcmp(w->a->label, a) == 0 && strcmp(w->b->label, b) == 0)
			return w;
	}
	return NULL;
}

static void test_reference(struct store *s)
{
	struct lab_err e = {0};
	struct results *r = NULL;
	int rc = results_load(s, NULL, &r, &e);
	is_int(rc, 0, "load everything");
	if (rc)
		return;
	is_int(r->nsamples, 100, "40 androbench + 60 fscopy samples");
	is_int(r->nruns, 2, "two imported runs");
	struct compare_opts o;
	compare_opts_init(&o);
	struct compare_result *c = NULL;
	rc = compare_build(r, &o, &c, &e);
	is_int(rc, 0, "compare by mode");
	is_int(c->nrows, 12, "4 androbench metrics + DUT1-4 + the 4 DUT5 pairs of the 2x2");
	const struct compare_row *w = find_row(c, "sprd", "rand_write", "fua", "cache-nofua");
	ok(w != NULL, "sprd rand_write row");
	if (w) {
		is_near(w->a->d.mean, 12.68, 1e-9, "rand_write fua mean");
		is_near(w->b->d.mean, 70.32, 1e-9, "rand_write cache-nofua mean");
		is_near(w->cmp.change * 100, 454.574132492, 1e-6, "+454.6%");
		is_str(stats_verdict_name(w->cmp.verdict), "better", "rand_write better");
	}
	w = find_row(c, "sprd", "seq_write", "fua", "cache-nofua");
	ok(w && fabs(w->cmp.change * 100 - 34.1370082954) < 1e-6, "seq_write +34.1%%");
	w = find_row(c, "DUT3", "wall_time", "fua", "cache-nofua");
	ok(w && w->cmp.verdict == VERDICT_NO_DIFF, "DUT3: below the 1%% minimum effect");
	ok(w && fabs(w->cmp.welch.p - 0.0132496552201) < 1e-9, "DUT3 Welch p");
	w = find_row(c, "DUT5", "wall_time", "fua-cqe", "cache-nofua-cqe");
	ok(w && fabs(w->cmp.change - 0.00757622684843) < 1e-9, "DUT5 CQE pair change");
	ok(w && w->a->nwarmup == 1 && w->b->nwarmup == 1, "DUT5 CQE: warm-up flagged on both sides");
	ok(w && w->a->n == 5, "warm-up kept unless excluded");
	ok(find_row(c, "DUT5", "wall_time", "fua", "fua-cqe") != NULL, "DUT5 fua vs fua-cqe");
	ok(find_row(c, "DUT1", "wall_time", "fua", "fua-cqe") == NULL, "no CQE row without CQE data");
	w = find_row(c, "DUT5", "wall_time", "cache-nofua", "cache-nofua-cqe");
	ok(w && fabs(w->cmp.change - (2114.57 / 2124.72 - 1)) < 1e-12, "DUT5 CQE effect without FUA");
	ok(find_row(c, "DUT1", "wall_time", "cache-nofua", "cache-nofua-cqe") == NULL,
	   "no CQE-without-FUA row without CQE data");
	/* The interaction: only DUT5 has all four cells. */
	is_int(c->ninter, 1, "one interaction (DUT5)");
	if (c->ninter == 1) {
		const struct compare_interaction *x = &c->inter[0];
		const struct compare_row *w0 = &c->rows[x->row_off], *w1 = &c->rows[x->row_on];
		ok(strstr(w0->part_label, "DUT5") && !strcmp(w0->a->label, "fua") &&
			   !strcmp(w1->a->label, "fua-cqe") && !strcmp(w1->b->label, "cache-nofua-cqe"),
		   "interaction rows: fua/cache-nofua and fua-cqe/cache-nofua-cqe");
		is_near(x->ratio, (1 + w1->cmp.change) / (1 + w0->cmp.change), 1e-12,
			"ratio of the two FUA ratios");
		is_near(x->diff, w1->cmp.change - w0->cmp.change, 1e-12, "difference of the changes");
		ok(x->lo < x->ratio && x->ratio < x->hi && x->lo > 0.9 && x->hi < 1.1, "CI around R");
		ok(x->p > 0.5 && x->p <= 1, "no interaction in the published data (p %g)", x->p);
	}
	compare_free(c);

	o.exclude_warmup = true;
	rc = compare_build(r, &o, &c, &e);
	w = find_row(c, "DUT5", "wall_time", "fua", "cache-nofua");
	ok(w && w->a->n == 4 && w->b->n == 4 && w->a->warmup_excluded, "exclude warm-up: 4 per side");
	compare_free(c);
	results_free(r);

	/* Filters */
	struct results_filter f = {0};
	char arg1[] = "part=DUT5", arg2[] = "metrc=x", arg3[] = "bogus";
	is_int(results_filter_add(&f, arg1, &e), 0, "filter part=DUT5");
	lab_err_clear(&e);
	is_int(results_filter_add(&f, arg2, &e), LAB_EUSAGE, "unknown filter field");
	ok(strstr(e.msg, "did you mean 'metric'") != NULL, "suggests metric (%s)", e.msg);
	lab_err_clear(&e);
	is_int(results_filter_add(&f, arg3, &e), LAB_EUSAGE, "filter without =");
	lab_err_clear(&e);
	rc = results_load(s, &f, &r, &e);
	compare_opts_init(&o);
	compare_build(r, &o, &c, &e);
	is_int(c->nrows, 4, "DUT5 only: the four pairs of the 2x2");
	compare_free(c);
	results_free(r);

	/* --a/--b */
	compare_opts_init(&o);
	o.a = "cache-nofua";
	o.b = "cache-nofua-cqe";
	results_load(s, NULL, &r, &e);
	compare_build(r, &o, &c, &e);
	w = find_row(c, "DUT5", "wall_time", "cache-nofua", "cache-nofua-cqe");
	ok(w && w->cmp.verdict == VERDICT_NO_DIFF, "explicit pair on DUT5");
	w = find_row(c, "DUT1", "wall_time", "cache-nofua", "cache-nofua-cqe");
	ok(w && w->cmp.verdict == VERDICT_NO_TEST && strstr(w->cmp.note, "no cache-nofua-cqe data"),
	   "explicit pair where b is missing says so");
	compare_free(c);
	/* by part needs a and b */
	compare_opts_init(&o);
	o.by = COMPARE_BY_PART;
	lab_err_clear(&e);
	is_int(compare_build(r, &o, &c, &e), LAB_EUSAGE, "by part without --a/--b");
	o.a = "DUT3";
	o.b = "DUT4";
	is_int(compare_build(r, &o, &c, &e), 0, "by part DUT3 vs DUT4");
	w = find_row(c, "", "wall_time", "DUT3", "DUT4");
	ok(c->nrows == 2 && w && w->cmp.verdict == VERDICT_WORSE, "DUT4 slower than DUT3 under fua (%zu rows)",
	   c->nrows);
	compare_free(c);
	results_free(r);
}

static void test_bad_input(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/bad.db", dir);
	struct lab_err e = {0};
	struct store *s;
	if (store_open(path, 0, &s, &e)) {
		ok(0, "open %s: %s", path, e.msg);
		return;
	}
	int64_t run, part, job;
	testdb_run(s, "lab", &run);
	testdb_part(s, "lonely", &part);
	/* n=1 in fua; cache-nofua missing entirely for metric x; mixed units on y. */
	testdb_job(s, run, part, "fua", "ok", NULL, &job);
	testdb_iter(s, job, "wx", 1, "x", 5.0, "MiB/s");
	testdb_iter(s, job, "wy", 1, "y", 5.0, "s");
	testdb_iter(s, job, "wy", 2, "y", 5.5, "s");
	testdb_job(s, run, part, "cache-nofua", "ok", NULL, &job);
	testdb_iter(s, job, "wy", 1, "y", 4000.0, "ms");
	testdb_iter(s, job, "wy", 2, "y", 4100.0, "ms");
	testdb_iter(s, job, "wz", 1, "z", 7.0, "MiB/s");
	/* A job whose verified mode disagrees never contributes samples. */
	testdb_job(s, run, part, "fua", "ok", "cache-nofua", &job);
	testdb_iter(s, job, "wx", 1, "x", 999.0, "MiB/s");
	store_run_finish(s, run, "complete", &e);

	struct results *r;
	is_int(results_load(s, NULL, &r, &e), 0, "load bad db");
	is_int(r->nsamples, 6, "mode-mismatched sample not loaded");
	struct compare_opts o;
	struct compare_result *c;
	compare_opts_init(&o);
	compare_build(r, &o, &c, &e);
	const struct compare_row *w = find_row(c, "lonely", "x", "fua", "cache-nofua");
	ok(w && w->cmp.verdict == VERDICT_NO_TEST && strstr(w->cmp.note, "no cache-nofua data"),
	   "missing mode: no test (%s)", w ? w->cmp.note : "?");
	w = find_row(c, "lonely", "y", "fua", "cache-nofua");
	ok(w && w->cmp.verdict == VERDICT_NO_TEST && strstr(w->cmp.note, "mixed units") && isnan(w->cmp.change),
	   "mixed units: no test and no number (%s)", w ? w->cmp.note : "?");
	w = find_row(c, "lonely", "z", "fua", "cache-nofua");
	ok(w && strstr(w->cmp.note, "no fua data"), "z: fua missing (%s)", w ? w->cmp.note : "?");
	compare_free(c);
	results_free(r);
	store_close(s);
}

/* Two row builders give the result of one, row for row (compare.c
 * rows_build): a store of 40 parts in the four modes, some parts without a
 * mode (blank sides), ties and constant cells among the values. */
static bool same_side(const struct compare_side *a, const struct compare_side *b)
{
	return strcmp(a->label, b->label) == 0 && a->n == b->n && a->v == b->v &&
	       a->nwarmup == b->nwarmup && strcmp(a->unit ? a->unit : "", b->unit ? b->unit : "") == 0 &&
	       memcmp(&a->d, &b->d, sizeof a->d) == 0;
}

static bool same_cmp(const struct stats_cmp *a, const struct stats_cmp *b)
{
	/* NaN == NaN here: the bits */
	return memcmp(&a->change, &b->change, sizeof a->change) == 0 &&
	       memcmp(&a->change_lo, &b->change_lo, sizeof a->change_lo) == 0 &&
	       memcmp(&a->change_hi, &b->change_hi, sizeof a->change_hi) == 0 &&
	       memcmp(&a->welch, &b->welch, sizeof a->welch) == 0 &&
	       memcmp(&a->mwu.p, &b->mwu.p, sizeof a->mwu.p) == 0 && a->verdict == b->verdict &&
	       strcmp(a->note, b->note) == 0;
}

static void test_threads(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/threads.db", dir);
	struct store *s;
	struct lab_err e = {0};
	if (store_open(path, 0, &s, &e)) {
		ok(0, "store_open: %s", e.msg);
		return;
	}
	static const char *const modes[] = {"fua", "cache-nofua", "fua-cqe", "cache-nofua-cqe"};
	int64_t run;
	int bad = testdb_run(s, "sim", &run);
	for (int pi = 0; pi < 40 && !bad; pi++) {
		char label[32];
		snprintf(label, sizeof label, "part-%02d", pi);
		int64_t part;
		bad |= testdb_part(s, label, &part);
		for (int m = 0; m < 4 && !bad; m++) {
			if ((pi % 7 == 3 && m == 1) || (pi % 11 == 5 && m >= 2))
				continue; /* a mode without data: a blank side, no interaction */
			int64_t job;
			bad |= testdb_job(s, run, part, modes[m], "ok", modes[m], &job);
			for (int it = 1; it <= 5 && !bad; it++) {
				struct store_sample sm[3] = {
					{"seq_write", 50 + pi + 3 * m + (it % 3) * 0.5, "MiB/s"},
					{"rand_write", pi % 5 == 0 ? 7.0 : 7 + m * (it - 3) * 0.25, "MiB/s"},
					{"wall_time", 400 - 2 * m + ((it * 7 + pi) % 5), "s"}};
				int64_t iid;
				bad |= store_iteration_write(s, job, "androbench", it, 1.0, 0, sm, 3, NULL, 0,
							     &iid, &e);
			}
		}
	}
	ok(!bad, "40 parts written");
	struct results *r = NULL;
	int rc = results_load(s, NULL, &r, &e);
	is_int(rc, 0, "load them");
	if (rc) {
		store_close(s);
		return;
	}
	struct compare_opts o;
	compare_opts_init(&o);
	struct compare_result *one = NULL, *two = NULL;
	o.threads = 1;
	is_int(compare_build(r, &o, &one, &e), 0, "one builder");
	o.threads = 2;
	is_int(compare_build(r, &o, &two, &e), 0, "two builders");
	if (one && two) {
		is_int(one->builders, 1, "one thread built the rows");
		is_int(two->builders, 2, "two threads built them");
		ok(one->nrows > 300, "rows: %zu", one->nrows);
		is_int(two->nrows, one->nrows, "as many rows");
		is_int(two->ninter, one->ninter, "as many interactions");
		ok(one->ninter > 20, "interactions built");
		size_t diff = 0;
		for (size_t i = 0; i < one->nrows && i < two->nrows; i++) {
			const struct compare_row *a = &one->rows[i], *b = &two->rows[i];
			diff += !(a->part == b->part && strcmp(a->metric, b->metric) == 0 &&
				  same_side(a->a, b->a) && same_side(a->b, b->b) &&
				  same_cmp(&a->cmp, &b->cmp) && strcmp(a->provenance, b->provenance) == 0);
		}
		is_int(diff, 0, "every row the same");
		diff = 0;
		for (size_t i = 0; i < one->ninter && i < two->ninter; i++) {
			const struct compare_interaction *a = &one->inter[i], *b = &two->inter[i];
			diff += !(a->row_off == b->row_off && a->row_on == b->row_on &&
				  memcmp(&a->ratio, &b->ratio, sizeof a->ratio) == 0 &&
				  memcmp(&a->p, &b->p, sizeof a->p) == 0);
		}
		is_int(diff, 0, "every interaction the same, on the same rows");
		ok(one->nbetter == two->nbetter && one->nworse == two->nworse &&
		   one->nnodiff == two->nnodiff && one->nnotest == two->nnotest &&
		   one->nchanged == two->nchanged, "the same verdict counts");
		ok(one->nnotest > 0, "blank sides among them (%zu without a test)", one->nnotest);
	}
	compare_free(one);
	compare_free(two);
	results_free(r);
	store_close(s);
}

int main(void)
{
	char dir[] = "/tmp/emmclab-test-compare-XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return tap_done();
	}
	char path[512];
	snprintf(path, sizeof path, "%s/ref.db", dir);
	struct store *s;
	struct lab_err e = {0};
	int rc = store_open(path, 0, &s, &e);
	is_int(rc, 0, "store_open");
	if (rc) {
		ok(0, "%s", e.msg);
		return tap_done();
	}
	ok(testdb_reference(s) == 0, "reference data written");
	test_reference(s);
	store_close(s);
	test_bad_input(dir);
	test_threads(dir);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return tap_done();
}
