/*
 * stats.c - descriptive statistics, Student t, Welch, Mann-Whitney U, verdicts.
 *
 * No external maths library beyond libm: the t distribution comes from the
 * regularized incomplete beta function (continued fraction, modified Lentz),
 * the t quantile from Newton's method on the tail (~1e-14 relative).
 */
#include "stats.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Continued fraction for I_x(a, b) (Numerical Recipes betacf, Lentz's method). */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-16;
	double qab = a + b, qap = a + 1.0, qam = a - 1.0;
	double c = 1.0, d = 1.0 - qab * x / qap;
	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	double h = d;
	for (int m = 1; m <= 10000; m++) {
		int m2 = 2 * m;
		double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1.0) < eps)
			break;
	}
	return h;
}

/* ln |Gamma(x)| without lgamma's global signgam, which two threads building
 * a comparison's rows (compare.c) would both write; the same value. */
static double lgam(double x)
{
	int sign;
	return lgamma_r(x, &sign);
}

double stats_betainc(double a, double b, double x)
{
	if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1))
		return NAN;
	if (x == 0 || x == 1)
		return x;
	double lbt = lgam(a + b) - lgam(a) - lgam(b) + a * log(x) + b * log1p(-x);
	double bt = exp(lbt);
	/* The continued fraction converges fast for x < (a+1)/(a+b+2); use symmetry otherwise. */
	if (x < (a + 1.0) / (a + b + 2.0))
		return bt * betacf(a, b, x) / a;
	return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

/* Two-sided tail P(|T| >= |t|). */
static double t_two_tail(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return 0.0;
	return stats_betainc(df / 2.0, 0.5, df / (df + t * t));
}

double stats_t_cdf(double t, double df)
{
	double tail = t_two_tail(t, df);
	if (isnan(tail))
		return NAN;
	return t > 0 ? 1.0 - tail / 2.0 : tail / 2.0;
}

/*
 * Upper-tail normal quantile, Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4):
 * only the starting point of the Newton iteration below.
 */
static double norm_upper_quantile_approx(double u)
{
	double t = sqrt(-2.0 * log(u));
	return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
			   (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
}

/*
 * The t quantile: solve G(t) = u for t > 0, G the upper tail P(T > t) and
 * u = min(p, 1 - p).  Newton's method with G' = -pdf: G is convex and
 * decreasing on t > 0, so from any point the first step lands at or below
 * the root and the iteration then climbs to it monotonically (a step that
 * would leave t > 0 is halved instead).  Started from the normal quantile
 * with the first two Cornish-Fisher terms, it takes 3-6 evaluations of the
 * incomplete beta function where bisection on the CDF took 60 or more (the
 * end-of-run comparison computes one per compared pair).  Same accuracy as
 * before: the last step is below 1e-14 of t.
 */
double stats_t_quantile(double p, double df)
{
	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	if (p == 0.5)
		return 0.0;
	double u = p > 0.5 ? 1.0 - p : p;
	double lc = lgam((df + 1.0) / 2.0) - lgam(df / 2.0) - 0.5 * log(df * 3.14159265358979323846);
	double z = u < 0.5 ? norm_upper_quantile_approx(u) : 0.0;
	double z2 = z * z;
	double t = z + z * (z2 + 1.0) / (4.0 * df) +
		   z * ((5.0 * z2 + 16.0) * z2 + 3.0) / (96.0 * df * df);
	if (!(t > 0) || !isfinite(t))
		t = 1.0;
	for (int i = 0; i < 200; i++) {
		double g = t_two_tail(t, df) / 2.0;
		if (isnan(g))
			return NAN;
		double f = exp(lc - (df + 1.0) / 2.0 * log1p(t * t / df));
		if (!(f > 0))
			break;
		double step = (g - u) / f, nt = t + step;
		if (!(nt > 0))
			nt = t / 2.0;
		if (!isfinite(nt))
			break;
		bool done = fabs(nt - t) <= 1e-14 * nt;
		t = nt;
		if (done)
			break;
	}
	return p > 0.5 ? t : -t;
}

double stats_norm_cdf(double z)
{
	return 0.5 * erfc(-z / sqrt(2.0));
}

/* Stable merge of a[0..na) and b[0..nb) into out: equal values keep a first. */
static void merge_doubles(const double *a, size_t na, const double *b, size_t nb, double *out)
{
	size_t i = 0, j = 0, k = 0;
	while (i < na && j < nb)
		out[k++] = b[j] < a[i] ? b[j++] : a[i++];
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
}

/*
 * Stable ascending sort without a comparison callback: insertion-sorted runs
 * of 16, then bottom-up merges through tmp (n values).  Stable like glibc's
 * qsort (a merge sort), so equal values such as 0.0 and -0.0 keep their order
 * and medians come out bit for bit as before.
 */
static void sort_doubles(double *x, size_t n, double *tmp)
{
	const size_t run = 16;
	for (size_t lo = 0; lo < n; lo += run) {
		size_t hi = lo + run < n ? lo + run : n;
		for (size_t i = lo + 1; i < hi; i++) {
			double t = x[i];
			size_t j = i;
			for (; j > lo && x[j - 1] > t; j--)
				x[j] = x[j - 1];
			x[j] = t;
		}
	}
	double *src = x, *dst = tmp;
	for (size_t w = run; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			merge_doubles(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
		}
		double *t = src;
		src = dst;
		dst = t;
	}
	if (src != x)
		memcpy(x, src, n * sizeof *x);
}

void stats_sort(double *x, size_t n)
{
	if (n < 2)
		return;
	double small[64];
	double *tmp = n <= LAB_ARRAY_SIZE(small) ? small : xmalloc(n * sizeof *tmp);
	sort_doubles(x, n, tmp);
	if (tmp != small)
		free(tmp);
}

static double median_sorted(const double *v, size_t n)
{
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double stats_median(const double *x, size_t n)
{
	if (n == 0)
		return NAN;
	/* Most groups are a handful of iterations: sort a copy on the stack. */
	double small[32];
	double *v = n <= LAB_ARRAY_SIZE(small) ? small : xmalloc(n * sizeof *v);
	memcpy(v, x, n * sizeof *v);
	stats_sort(v, n);
	double m = median_sorted(v, n);
	if (v != small)
		free(v);
	return m;
}

static bool all_finite(const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return false;
	return true;
}

/* Mean and sample variance, two-pass (values are close together: avoid cancellation). */
static void mean_var(const double *x, size_t n, double *mean, double *var)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	double m = n ? s / (double)n : NAN;
	double ss = 0, c = 0;
	for (size_t i = 0; i < n; i++) {
		ss += (x[i] - m) * (x[i] - m);
		c += x[i] - m;
	}
	*mean = m;
	*var = n > 1 ? (ss - c * c / (double)n) / (double)(n - 1) : NAN;
	if (n > 1 && *var < 0)
		*var = 0;
}

static double t_quantile_memo(struct stats_memo *m, double p, double df)
{
	if (!m)
		return stats_t_quantile(p, df);
	if (!m->set || m->p != p || m->df != df) {
		m->q = stats_t_quantile(p, df);
		m->p = p;
		m->df = df;
		m->set = true;
	}
	return m->q;
}

void stats_describe_sorted(const double *x, const double *sorted, size_t n, double conf,
			   struct stats_memo *memo, struct stats_desc *d)
{
	memset(d, 0, sizeof *d);
	d->n = n;
	d->mean = d->sd = d->median = d->min = d->max = d->cv = NAN;
	d->ci_lo = d->ci_hi = d->ci_half = NAN;
	if (n == 0)
		return;
	if (!all_finite(x, n)) {
		d->bad = true;
		return;
	}
	double var;
	mean_var(x, n, &d->mean, &var);
	d->min = d->max = x[0];
	for (size_t i = 0; i < n; i++) {
		if (x[i] < d->min)
			d->min = x[i];
		if (x[i] > d->max)
			d->max = x[i];
		if (x[i] < 0)
			d->negative = true;
	}
	d->median = sorted ? median_sorted(sorted, n) : stats_median(x, n);
	if (n < 2)
		return;
	d->sd = sqrt(var);
	if (d->mean != 0)
		d->cv = d->sd / fabs(d->mean);
	double q = t_quantile_memo(memo, 1.0 - (1.0 - conf) / 2.0, (double)(n - 1));
	d->ci_half = q * d->sd / sqrt((double)n);
	d->ci_lo = d->mean - d->ci_half;
	d->ci_hi = d->mean + d->ci_half;
}

void stats_describe(const double *x, size_t n, double conf, struct stats_desc *d)
{
	stats_describe_sorted(x, NULL, n, conf, NULL, d);
}

struct dir_entry {
	const char *name;
	int dir;
};

/* Metric names whose direction does not depend on the unit. */
static const struct dir_entry metric_dirs[] = {
	{"wall_time", -1}, {"duration", -1}, {"latency", -1}, {"iops", 1},
	{"errors", -1},    {"lost_records", -1}, {NULL, 0},
};
static const struct dir_entry unit_dirs[] = {
	{"MiB/s", 1}, {"MB/s", 1}, {"KiB/s", 1}, {"kB/s", 1}, {"B/s", 1}, {"GiB/s", 1},
	{"IOPS", 1},  {"ops/s", 1}, {"s", -1},   {"ms", -1},  {"us", -1}, {"\xc2\xb5s", -1},
	{"ns", -1},   {NULL, 0},
};

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

int stats_direction(const char *metric, const char *unit)
{
	if (metric) {
		for (const struct dir_entry *d = metric_dirs; d->name; d++)
			if (strcmp(d->name, metric) == 0)
				return d->dir;
		if (has_suffix(metric, "_latency") || has_suffix(metric, "_time"))
			return -1;
		if (has_suffix(metric, "_iops"))
			return 1;
	}
	if (unit)
		for (const struct dir_entry *d = unit_dirs; d->name; d++)
			if (strcmp(d->name, unit) == 0)
				return d->dir;
	return 0;
}

/* Returns 0, or -1 when undefined (n < 2 or both variances zero). */
static int stats_welch(const double *a, size_t na, const double *b, size_t nb,
		       struct stats_welch *w)
{
	w->t = w->df = w->p = NAN;
	if (na < 2 || nb < 2 || !all_finite(a, na) || !all_finite(b, nb))
		return -1;
	double ma, va, mb, vb;
	mean_var(a, na, &ma, &va);
	mean_var(b, nb, &mb, &vb);
	double sa = va / (double)na, sb = vb / (double)nb;
	if (sa + sb <= 0)
		return -1;
	w->t = (mb - ma) / sqrt(sa + sb);
	w->df = (sa + sb) * (sa + sb) / (sa * sa / (double)(na - 1) + sb * sb / (double)(nb - 1));
	w->p = t_two_tail(w->t, w->df);
	return 0;
}

/* Permutation distribution of the doubled rank sum of na items out of n:
 * cnt[k][s] = number of k-subsets of the items seen so far with sum s;
 * returns the (na + 1) x (maxs + 1) table (row na is the distribution). */
static double *mwu_counts(const long *rank2, size_t n, size_t na, long maxs)
{
	size_t width = (size_t)maxs + 1;
	double *cnt = xcalloc((na + 1) * width, sizeof *cnt);
	cnt[0] = 1;
	for (size_t q = 0; q < n; q++) {
		size_t kmax = q + 1 < na ? q + 1 : na;
		for (size_t k = kmax; k >= 1; k--) {
			double *dst = cnt + k * width, *src = cnt + (k - 1) * width;
			for (long s = maxs; s >= rank2[q]; s--)
				dst[s] += src[s - rank2[q]];
		}
	}
	return cnt;
}

/* Without ties the doubled ranks are 2, 4, ..., 2n, so the distribution
 * depends on (na, nb) alone: a night compares thousands of 5-against-5 cells,
 * and building the same table for each was the largest part of `compare`
 * (perf, 1,024 boards).  Rows are kept for the first MWU_CACHE shapes seen
 * (at most 41 x 40 + 1 doubles each), for the process's life; the p-values
 * are the same, bit for bit (the same table). */
#define MWU_CACHE 16
static struct {
	size_t na, nb;
	double *row;
} mwu_cache[MWU_CACHE];
static size_t mwu_ncache;
/* compare's two row builders share the cache (compare.c rows_build); a row
 * once in it is never changed or freed, so it is read after the unlock */
static pthread_mutex_t mwu_mu = PTHREAD_MUTEX_INITIALIZER;

static const double *mwu_cached_row(size_t na, size_t nb)
{
	const double *row = NULL;
	pthread_mutex_lock(&mwu_mu);
	for (size_t i = 0; i < mwu_ncache && !row; i++)
		if (mwu_cache[i].na == na && mwu_cache[i].nb == nb)
			row = mwu_cache[i].row;
	pthread_mutex_unlock(&mwu_mu);
	return row;
}

static void mwu_cache_row(size_t na, size_t nb, const double *row, size_t width)
{
	pthread_mutex_lock(&mwu_mu);
	bool have = false;
	for (size_t i = 0; i < mwu_ncache && !have; i++) /* the other builder's, meanwhile */
		have = mwu_cache[i].na == na && mwu_cache[i].nb == nb;
	if (!have && mwu_ncache < MWU_CACHE) {
		double *copy = xmalloc(width * sizeof *copy);
		memcpy(copy, row, width * sizeof *copy);
		mwu_cache[mwu_ncache].na = na;
		mwu_cache[mwu_ncache].nb = nb;
		mwu_cache[mwu_ncache].row = copy;
		mwu_ncache++;
	}
	pthread_mutex_unlock(&mwu_mu);
}

int stats_mwu_sorted(const double *as, size_t na, const double *bs, size_t nb, struct stats_mwu *m)
{
	m->u = m->p = NAN;
	m->exact = false;
	if (na == 0 || nb == 0 || !all_finite(as, na) || !all_finite(bs, nb))
		return -1;
	size_t n = na + nb;
	bool exact = na <= STATS_MWU_EXACT_MAX && nb <= STATS_MWU_EXACT_MAX;
	/* Doubled mid-ranks are integers: 2*rank = first + last + 2 (1-based).
	 * Walk both sorted samples as one pooled, sorted list, a tie at a time. */
	long *rank2 = exact ? xmalloc(n * sizeof *rank2) : NULL;
	double tie_sum = 0;
	long w2 = 0; /* doubled rank sum of a */
	size_t i = 0, j = 0, pos = 0;
	while (i < na || j < nb) {
		double v = j >= nb || (i < na && !(bs[j] < as[i])) ? as[i] : bs[j];
		size_t ca = 0, cb = 0;
		while (i + ca < na && as[i + ca] == v)
			ca++;
		while (j + cb < nb && bs[j + cb] == v)
			cb++;
		size_t t = ca + cb;
		long r2 = (long)(pos + (pos + t - 1) + 2);
		w2 += (long)ca * r2;
		double td = (double)t;
		tie_sum += td * td * td - td;
		if (rank2)
			for (size_t k = 0; k < t; k++)
				rank2[pos + k] = r2;
		i += ca;
		j += cb;
		pos += t;
	}
	m->u = (double)w2 / 2.0 - (double)na * (double)(na + 1) / 2.0;

	if (exact) {
		long maxs = 0;
		for (size_t q = 0; q < n; q++)
			maxs += rank2[q];
		double *cnt = NULL;
		const double *row = tie_sum == 0 ? mwu_cached_row(na, nb) : NULL;
		if (row == NULL) {
			cnt = mwu_counts(rank2, n, na, maxs);
			row = cnt + na * ((size_t)maxs + 1);
			if (tie_sum == 0)
				mwu_cache_row(na, nb, row, (size_t)maxs + 1);
		}
		double total = 0, le = 0, ge = 0;
		for (long s = 0; s <= maxs; s++) {
			total += row[s];
			if (s <= w2)
				le += row[s];
			if (s >= w2)
				ge += row[s];
		}
		double p = 2.0 * (le < ge ? le : ge) / total;
		m->p = p > 1.0 ? 1.0 : p;
		m->exact = true;
		free(cnt);
	} else {
		double nn = (double)n, mu = (double)na * (double)nb / 2.0;
		double var = (double)na * (double)nb / 12.0 * ((nn + 1.0) - tie_sum / (nn * (nn - 1.0)));
		if (var <= 0) {
			m->p = 1.0;
		} else {
			double dev = fabs(m->u - mu) - 0.5; /* continuity correction */
			if (dev < 0)
				dev = 0;
			double p = 2.0 * (1.0 - stats_norm_cdf(dev / sqrt(var)));
			m->p = p > 1.0 ? 1.0 : p;
		}
	}
	free(rank2);
	return 0;
}

int stats_mwu(const double *a, size_t na, const double *b, size_t nb, struct stats_mwu *m)
{
	m->u = m->p = NAN;
	m->exact = false;
	if (na == 0 || nb == 0 || !all_finite(a, na) || !all_finite(b, nb))
		return -1;
	double *as = xmalloc((na + nb) * sizeof *as), *bs = as + na;
	memcpy(as, a, na * sizeof *as);
	memcpy(bs, b, nb * sizeof *bs);
	stats_sort(as, na);
	stats_sort(bs, nb);
	int rc = stats_mwu_sorted(as, na, bs, nb, m);
	free(as);
	return rc;
}

const char *stats_verdict_name(enum stats_verdict v)
{
	switch (v) {
	case VERDICT_BETTER:
		return "better";
	case VERDICT_WORSE:
		return "worse";
	case VERDICT_NO_DIFF:
		return "no-significant-difference";
	case VERDICT_CHANGED:
		return "changed";
	case VERDICT_NO_TEST:
		break;
	}
	return "no-test";
}

void stats_cmp_opts_init(struct stats_cmp_opts *o)
{
	o->alpha = 0.05;
	o->min_effect = 0.01;
	o->conf = 0.95;
	o->direction = 0;
}

/* The interned notes, never freed: the few texts stats_compare and the
 * comparison write. */
static struct lab_strpool notes;
static pthread_mutex_t notes_mu = PTHREAD_MUTEX_INITIALIZER; /* compare's two row builders */

const char *stats_note(const char *s)
{
	if (!s || !*s)
		return "";
	char cut[STATS_NOTE_MAX];
	lab_strlcpy(cut, s, sizeof cut);
	pthread_mutex_lock(&notes_mu);
	const char *in = lab_strpool_intern(&notes, cut);
	pthread_mutex_unlock(&notes_mu);
	return in;
}

const char *stats_note_join(const char *a, const char *b)
{
	a = a ? a : "";
	b = b ? b : "";
	if (!*a || !*b)
		return stats_note(*a ? a : b);
	char both[STATS_NOTE_MAX];
	lab_strlcpy(both, a, sizeof both);
	lab_strlcat(both, "; ", sizeof both);
	lab_strlcat(both, b, sizeof both);
	return stats_note(both);
}

static void note(struct stats_cmp *c, const char *s)
{
	c->note = stats_note_join(c->note, s);
}

void stats_compare(const double *a, size_t na, const double *b, size_t nb,
		   const struct stats_cmp_opts *o, struct stats_cmp *c)
{
	stats_compare_sorted(a, na, b, nb, NULL, NULL, o, c);
}

void stats_compare_sorted(const double *a, size_t na, const double *b, size_t nb, const double *as,
			  const double *bs, const struct stats_cmp_opts *o, struct stats_cmp *c)
{
	memset(c, 0, sizeof *c);
	c->note = "";
	c->change = c->change_lo = c->change_hi = NAN;
	c->welch.t = c->welch.df = c->welch.p = NAN;
	c->mwu.u = c->mwu.p = NAN;
	c->verdict = VERDICT_NO_TEST;
	if (na == 0 || nb == 0) {
		note(c, na == 0 ? "no samples in a: no test" : "no samples in b: no test");
		return;
	}
	if (!all_finite(a, na) || !all_finite(b, nb)) {
		note(c, "non-finite value: no test");
		return;
	}
	double ma, va, mb, vb;
	mean_var(a, na, &ma, &va);
	mean_var(b, nb, &mb, &vb);
	bool neg = false;
	for (size_t i = 0; i < na; i++)
		neg |= a[i] < 0;
	for (size_t i = 0; i < nb; i++)
		neg |= b[i] < 0;
	if (neg)
		note(c, "negative values");
	if (ma > 0 && mb >= 0)
		c->change = mb / ma - 1.0;
	else
		note(c, "mean of a not positive: no relative change");

	if (as && bs)
		stats_mwu_sorted(as, na, bs, nb, &c->mwu);
	else
		stats_mwu(a, na, b, nb, &c->mwu);
	if (na < 2 || nb < 2) {
		char buf[48];
		snprintf(buf, sizeof buf, "n=%zu: no test", na < 2 ? na : nb);
		note(c, buf);
		return;
	}
	if (va <= 0 && vb <= 0) {
		if (ma == mb) {
			c->verdict = VERDICT_NO_DIFF;
			c->change_lo = c->change_hi = c->change;
			c->welch.p = 1.0;
			note(c, "identical constant values");
		} else {
			note(c, "zero variance: no t-test");
		}
		return;
	}
	stats_welch(a, na, b, nb, &c->welch);

	if (!isnan(c->change)) {
		/* Delta method on R = mb/ma: Var(R)/R^2 ~ va/(na ma^2) + vb/(nb mb^2). */
		double ra = va / ((double)na * ma * ma);
		double rb = mb != 0 ? vb / ((double)nb * mb * mb) : 0;
		double R = mb / ma, se = R * sqrt(ra + rb);
		double df = (ra + rb) * (ra + rb) /
			    (ra * ra / (double)(na - 1) + rb * rb / (double)(nb - 1));
		double q = stats_t_quantile(1.0 - (1.0 - o->conf) / 2.0, df);
		if (mb == 0 || !isfinite(q)) {
			note(c, "no CI for the change");
		} else {
			c->change_lo = R - q * se - 1.0;
			c->change_hi = R + q * se - 1.0;
		}
	}
	bool sig_w = c->welch.p < o->alpha, sig_m = c->mwu.p < o->alpha;
	c->disagree = sig_w != sig_m;
	if (c->disagree)
		note(c, sig_w ? "MWU not significant" : "only MWU significant");
	double eff = isnan(c->change) ? fabs(mb - ma) / (fabs(ma) > 0 ? fabs(ma) : 1) : fabs(c->change);
	if (!sig_w || eff < o->min_effect) {
		c->verdict = VERDICT_NO_DIFF;
		if (sig_w)
			note(c, "below minimum effect");
		return;
	}
	int up = mb > ma ? 1 : -1;
	if (o->direction == 0)
		c->verdict = VERDICT_CHANGED;
	else
		c->verdict = up == o->direction ? VERDICT_BETTER : VERDICT_WORSE;
}

bool stats_warmup(const double *x, size_t n, int direction, double *dev)
{
	if (dev)
		*dev = NAN;
	if (n < 3 || !all_finite(x, n))
		return false;
	size_t m = n - 1;
	double med = stats_median(x + 1, m);
	double small[32];
	double *ad = m <= LAB_ARRAY_SIZE(small) ? small : xmalloc(m * sizeof *ad);
	for (size_t i = 0; i < m; i++)
		ad[i] = fabs(x[i + 1] - med);
	double mad = 1.4826 * stats_median(ad, m);
	if (ad != small)
		free(ad);
	if (med == 0)
		return false;
	double d = (x[0] - med) / fabs(med);
	if (dev)
		*dev = d;
	double worse; /* how much worse than the median, as a positive number when worse */
	if (direction > 0)
		worse = med - x[0];
	else if (direction < 0)
		worse = x[0] - med;
	else
		worse = fabs(x[0] - med);
	return worse > STATS_WARMUP_REL * fabs(med) && worse > STATS_WARMUP_MADS * mad;
}
