/*
 * stats_sort and the *_sorted variants against the plain functions: same
 * order as a stable sort (0.0 and -0.0 keep their order), and bit-identical
 * descriptions, Mann-Whitney U and comparisons, exact and approximate, with
 * and without ties.
 */
#include "stats.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg = 42;

static double rnd(void)
{
	lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(lcg >> 11) / 9007199254740992.0;
}

/* Reference: a plain stable insertion sort. */
static void ref_sort(double *x, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		double t = x[i];
		size_t j = i;
		for (; j > 0 && x[j - 1] > t; j--)
			x[j] = x[j - 1];
		x[j] = t;
	}
}

/* Values with many ties (rounded) or none; some zeros of both signs. */
static void fill(double *x, size_t n, bool ties, double shift)
{
	for (size_t i = 0; i < n; i++) {
		double v = shift + 10 * rnd();
		x[i] = ties ? round(v * 2) / 2 : v;
	}
	if (n > 3) {
		x[n / 3] = -0.0;
		x[n / 2] = 0.0;
	}
}

static bool same_bits(const double *a, const double *b, size_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

static bool same_d(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static bool same_desc(const struct stats_desc *a, const struct stats_desc *b)
{
	return a->n == b->n && same_d(a->mean, b->mean) && same_d(a->sd, b->sd) &&
	       same_d(a->median, b->median) && same_d(a->min, b->min) && same_d(a->max, b->max) &&
	       same_d(a->cv, b->cv) && same_d(a->ci_lo, b->ci_lo) && same_d(a->ci_hi, b->ci_hi) &&
	       a->bad == b->bad && a->negative == b->negative;
}

static bool same_cmp(const struct stats_cmp *a, const struct stats_cmp *b)
{
	return same_d(a->change, b->change) && same_d(a->change_lo, b->change_lo) &&
	       same_d(a->change_hi, b->change_hi) && same_d(a->welch.t, b->welch.t) &&
	       same_d(a->welch.p, b->welch.p) && same_d(a->mwu.u, b->mwu.u) && same_d(a->mwu.p, b->mwu.p) &&
	       a->mwu.exact == b->mwu.exact && a->verdict == b->verdict && a->disagree == b->disagree &&
	       strcmp(a->note, b->note) == 0;
}

int main(void)
{
	static const size_t sizes[] = {0, 1, 2, 5, 15, 16, 17, 20, 33, 64, 65, 100, 1000, 1825};
	struct stats_memo memo = {0};
	size_t bad_sort = 0, bad_desc = 0, bad_mwu = 0, bad_cmp = 0, nexact = 0, napprox = 0;
	for (size_t si = 0; si < LAB_ARRAY_SIZE(sizes); si++)
		for (int ties = 0; ties < 2; ties++) {
			size_t n = sizes[si], m = sizes[(si + 3) % LAB_ARRAY_SIZE(sizes)];
			double *a = xcalloc(n + 1, sizeof *a), *b = xcalloc(m + 1, sizeof *b);
			double *as = xcalloc(n + 1, sizeof *as), *bs = xcalloc(m + 1, sizeof *bs);
			double *ra = xcalloc(n + 1, sizeof *ra);
			fill(a, n, ties, 100);
			fill(b, m, ties, 101);
			memcpy(as, a, n * sizeof *a);
			memcpy(ra, a, n * sizeof *a);
			memcpy(bs, b, m * sizeof *b);
			stats_sort(as, n);
			stats_sort(bs, m);
			ref_sort(ra, n);
			bad_sort += !same_bits(as, ra, n);

			struct stats_desc d1, d2, d3;
			stats_describe(a, n, 0.95, &d1);
			stats_describe_sorted(a, as, n, 0.95, NULL, &d2);
			bad_desc += !same_desc(&d1, &d2);
			/* memo: filled by the previous size, must be refreshed for this one */
			stats_describe_sorted(a, as, n, 0.95, &memo, &d3);
			bad_desc += !same_desc(&d1, &d3);
			stats_describe_sorted(a, as, n, 0.95, &memo, &d3);
			bad_desc += !same_desc(&d1, &d3);
			if (n)
				bad_desc += !same_d(stats_median(a, n), d2.median);

			struct stats_mwu m1, m2;
			int r1 = stats_mwu(a, n, b, m, &m1), r2 = stats_mwu_sorted(as, n, bs, m, &m2);
			bad_mwu += r1 != r2 || !same_d(m1.u, m2.u) || !same_d(m1.p, m2.p) || m1.exact != m2.exact;
			nexact += m2.exact;
			napprox += r2 == 0 && !m2.exact;

			struct stats_cmp_opts o;
			stats_cmp_opts_init(&o);
			o.direction = 1;
			struct stats_cmp c1, c2, c3;
			stats_compare(a, n, b, m, &o, &c1);
			stats_compare_sorted(a, n, b, m, as, bs, &o, &c2);
			stats_compare_sorted(a, n, b, m, NULL, NULL, &o, &c3);
			bad_cmp += !same_cmp(&c1, &c2) + !same_cmp(&c1, &c3);
			free(a);
			free(b);
			free(as);
			free(bs);
			free(ra);
		}
	is_int(bad_sort, 0, "stats_sort: same order as a stable insertion sort, signed zeros too");
	is_int(bad_desc, 0, "stats_describe_sorted == stats_describe, bit for bit (with and without memo)");
	is_int(bad_mwu, 0, "stats_mwu_sorted == stats_mwu, bit for bit");
	ok(nexact >= 4 && napprox >= 4, "both MWU paths exercised (%zu exact, %zu approximate)", nexact, napprox);
	is_int(bad_cmp, 0, "stats_compare_sorted == stats_compare, bit for bit");

	/* Hand-checked ties: a = {1, 2, 2}, b = {2, 3}: pooled ranks 1, 3, 3, 3, 5. */
	const double ta[] = {1, 2, 2}, tb[] = {2, 3};
	struct stats_mwu t;
	stats_mwu_sorted(ta, 3, tb, 2, &t);
	is_near(t.u, 1 + 3 + 3 - 6, 1e-12, "U with a three-way tie across groups");

	double sz[] = {0.0, -0.0, 0.0, -0.0};
	stats_sort(sz, 4);
	ok(!signbit(sz[0]) && signbit(sz[1]) && !signbit(sz[2]) && signbit(sz[3]),
	   "equal values keep their order (stable)");
	return tap_done();
}
