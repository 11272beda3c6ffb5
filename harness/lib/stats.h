/*
 * stats.h - descriptive statistics and two-group comparisons for lab samples.
 *
 * Pure functions: no I/O, no allocation visible to the caller, no globals.
 * Every result that cannot be computed is NaN and comes with a short note
 * ("n=1: no test", "zero variance") so renderers never print a silent wrong
 * number.  Methods (see docs/reports.md):
 *  - CI of a mean: Student t, quantile from the regularized incomplete beta.
 *  - relative change b vs a: (mean_b - mean_a) / mean_a, 95% CI by the delta
 *    method on mean_b/mean_a with Welch-Satterthwaite degrees of freedom.
 *  - Welch's t-test (two-sided).
 *  - Mann-Whitney U (two-sided): exact permutation distribution of the rank
 *    sum (mid-ranks, so ties are exact too) when n1, n2 <= 20; otherwise the
 *    normal approximation with tie and continuity correction.
 *  - verdict: significant when p(Welch) < alpha and |change| >= min_effect.
 */
#ifndef EMMCLAB_STATS_H
#define EMMCLAB_STATS_H

#include <stdbool.h>
#include <stddef.h>

#define STATS_MWU_EXACT_MAX 20 /* exact MWU up to this many samples per group */

/* Special functions, exposed for tests. */
double stats_betainc(double a, double b, double x); /* regularized I_x(a, b); NaN if out of domain */
double stats_t_cdf(double t, double df);
double stats_t_quantile(double p, double df);       /* inverse of stats_t_cdf, 0 < p < 1 */
double stats_norm_cdf(double z);

struct stats_desc {
	size_t n;
	double mean, sd, median, min, max;
	double cv;               /* sd / mean; NaN when mean == 0 or n < 2 */
	double ci_lo, ci_hi;     /* CI of the mean at the requested level; NaN when n < 2 */
	double ci_half;
	bool bad;                /* a value was NaN/inf: nothing else is meaningful */
	bool negative;           /* a value was < 0 */
};
/* conf: e.g. 0.95.  Works for n == 0 (everything NaN). */
void stats_describe(const double *x, size_t n, double conf, struct stats_desc *d);
double stats_median(const double *x, size_t n); /* NaN when n == 0 */
/* Ascending, stable, in place (allocates internally only beyond 64 values).
 * Callers that test or describe one group several times sort a copy once
 * and pass it to the *_sorted variants below. */
void stats_sort(double *x, size_t n);
/* Caller-owned memo of the last t quantile: describing many groups of one
 * size needs the same quantile each time (~200 incomplete-beta evaluations).
 * Zero-initialise; one per thread of use. */
struct stats_memo {
	bool set;
	double p, df, q;
};
/* stats_describe with `sorted` = the same n values sorted by stats_sort
 * (NULL: sort internally) and an optional memo (NULL: none).  Identical
 * results. */
void stats_describe_sorted(const double *x, const double *sorted, size_t n, double conf,
			   struct stats_memo *memo, struct stats_desc *d);

/* Which way is good.  1: higher is better, -1: lower is better, 0: unknown. */
int stats_direction(const char *metric, const char *unit);

struct stats_welch {
	double t, df, p; /* NaN when undefined */
};

struct stats_mwu {
	double u;   /* U of sample a: R_a - na(na+1)/2 */
	double p;   /* two-sided */
	bool exact;
};
int stats_mwu(const double *a, size_t na, const double *b, size_t nb, struct stats_mwu *m);
/* The same on samples already sorted ascending (stats_sort): O(na + nb). */
int stats_mwu_sorted(const double *as, size_t na, const double *bs, size_t nb, struct stats_mwu *m);

enum stats_verdict {
	VERDICT_NO_TEST,  /* could not test: see note */
	VERDICT_NO_DIFF,  /* no significant difference (or below the minimum effect) */
	VERDICT_BETTER,
	VERDICT_WORSE,
	VERDICT_CHANGED,  /* significant, but the metric has no known direction */
};
const char *stats_verdict_name(enum stats_verdict v); /* "better", "worse", "no-significant-difference", "no-test", "changed" */

struct stats_cmp_opts {
	double alpha;      /* default 0.05 */
	double min_effect; /* fraction, default 0.01 */
	double conf;       /* CI level, default 0.95 */
	int direction;     /* stats_direction() */
};
void stats_cmp_opts_init(struct stats_cmp_opts *o);

struct stats_cmp {
	double change, change_lo, change_hi; /* fractions: 0.25 = +25% */
	struct stats_welch welch;
	struct stats_mwu mwu;
	enum stats_verdict verdict;
	bool disagree; /* Welch and MWU disagree at alpha */
	/* Why there is no test, or other caveats; "" when none, never NULL.  One
	 * interned copy per distinct text (stats_note): a 1,024-board night has
	 * 94,208 comparisons and a handful of different notes. */
	const char *note;
};
/* Notes are cut to STATS_NOTE_MAX - 1 bytes. */
#define STATS_NOTE_MAX 96
/* The one copy of note text s (cut to STATS_NOTE_MAX - 1 bytes): valid until
 * the process ends; "" for "" or NULL. */
const char *stats_note(const char *s);
/* "a; b" of two notes ("" parts left out), cut and interned as stats_note. */
const char *stats_note_join(const char *a, const char *b);
/* Compare b against a (a is the reference). */
void stats_compare(const double *a, size_t na, const double *b, size_t nb,
		   const struct stats_cmp_opts *o, struct stats_cmp *c);
/* The same, given sorted copies as/bs of a/b (stats_sort; NULL: sort
 * internally).  a and b are still needed: means and variances are summed in
 * the given order, so results are identical to stats_compare. */
void stats_compare_sorted(const double *a, size_t na, const double *b, size_t nb, const double *as,
			  const double *bs, const struct stats_cmp_opts *o, struct stats_cmp *c);

/*
 * Warm-up detection on a series in iteration order: the first value is
 * flagged when it is worse (in `direction`; either way when 0) than the
 * median of the rest by more than both 2% of that median and 3 scaled MADs
 * (1.4826 * MAD) of the rest.  Needs n >= 3.  *dev gets the relative
 * deviation of the first value from the median of the rest (signed, NaN
 * when not computed).
 */
#define STATS_WARMUP_REL 0.02
#define STATS_WARMUP_MADS 3.0
bool stats_warmup(const double *x, size_t n, int direction, double *dev);

#endif
