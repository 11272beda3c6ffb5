/*
 * Statistics against independently computed values.
 *
 * Every expected number below was printed by harness/tests/vectors/stats_vectors.py
 * (python3 standard library only: statistics module, numerical integration of
 * the t density, brute-force enumeration of Mann-Whitney splits; rerun it to
 * regenerate).  Groups are the published reference CSVs in
 * /work/shared/reference-data (androbench-sdhci-sprd.csv, fs-copy-benchmark.csv).
 */
#include "stats.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const double sprd_rw_fua[] = {12.9, 12.3, 12.6, 12.8, 12.8};
static const double sprd_rw_nofua[] = {68.6, 71.8, 77.1, 64.8, 69.3};
static const double sprd_sw_fua[] = {153.7, 146.2, 151.2, 148.8, 147.5};
static const double sprd_sw_nofua[] = {199.94, 199.1, 205.5, 206.5, 191.5};
static const double sprd_rr_fua[] = {98.9, 101, 101, 99, 101.1};
static const double sprd_rr_nofua[] = {98.75, 98.7, 98.5, 99.4, 98.7};
static const double sprd_sr_fua[] = {259.3, 258.8, 258.2, 259.5, 253.5};
static const double sprd_sr_nofua[] = {266.8, 265.1, 262.9, 268.7, 265.2};
static const double dut1_fua[] = {810.32, 816.26, 790.86, 812.52, 828.59};
static const double dut1_nofua[] = {784.49, 793.82, 810.59, 808.13, 800.64};
static const double dut2_fua[] = {491.24, 467.73, 468.00, 468.18, 467.38};
static const double dut2_nofua[] = {490.30, 468.97, 468.47, 467.93, 464.18};
static const double dut3_fua[] = {425.43, 423.44, 424.82, 423.26, 424.74};
static const double dut3_nofua[] = {422.82, 418.94, 423.20, 420.27, 420.88};
static const double dut4_fua[] = {443.92, 440.15, 440.52, 439.10, 440.71};
static const double dut4_nofua[] = {440.23, 440.48, 439.94, 438.90, 439.88};
static const double dut5_fua[] = {435.10, 418.99, 418.94, 419.17, 420.00};
static const double dut5_nofua[] = {439.36, 422.11, 421.53, 421.35, 420.37};
static const double dut5_fuacqe[] = {431.03, 418.04, 416.89, 416.43, 416.28};
static const double dut5_nofuacqe[] = {437.55, 420.73, 419.25, 418.44, 418.60};

struct grp {
	const char *name;
	const double *x;
	int dir;
	double mean, sd, median, ci;
	int warm;
	double dev;
};

/* describe and warm-up rows from stats_vectors.py */
static const struct grp groups[] = {
	{"DUT1 cache-nofua", dut1_nofua, -1, 799.534, 10.6808393865, 800.64, 13.2620137368, 0, -0.0247331812503},
	{"DUT1 fua", dut1_fua, -1, 811.71, 13.6285325696, 812.52, 16.92205824, 0, -0.00499760556981},
	{"DUT2 cache-nofua", dut2_nofua, -1, 471.97, 10.4192682085, 468.47, 12.9372302221, 1, 0.0472020504058},
	{"DUT2 fua", dut2_fua, -1, 472.506, 10.476964255, 468, 13.0088693259, 1, 0.0499609930215},
	{"DUT3 cache-nofua", dut3_nofua, -1, 421.222, 1.7816340814, 420.88, 2.21219089685, 0, 0.00533793021459},
	{"DUT3 fua", dut3_fua, -1, 424.338, 0.942719470468, 424.74, 1.17054082689, 0, 0.00315970666604},
	{"DUT4 cache-nofua", dut4_nofua, -1, 439.886, 0.601315225152, 439.94, 0.746631466643, 0, 0.000727421518038},
	{"DUT4 fua", dut4_fua, -1, 440.88, 1.80979280582, 440.52, 2.2471545712, 0, 0.0081415286089},
	{"DUT5 cache-nofua", dut5_nofua, -1, 424.944, 8.08310460157, 421.53, 10.0364999775, 1, 0.0425208807897},
	{"DUT5 cache-nofua-cqe", dut5_nofuacqe, -1, 422.914, 8.23156303505, 419.25, 10.2208354696, 1, 0.0444590320463},
	{"DUT5 fua", dut5_fua, -1, 422.44, 7.09003878692, 419.17, 8.80344590758, 1, 0.0382265915816},
	{"DUT5 fua-cqe", dut5_fuacqe, -1, 419.734, 6.35224605947, 416.89, 7.88735523977, 1, 0.0344885518168},
	{"sprd rand_read cache-nofua", sprd_rr_nofua, 1, 98.81, 0.343511280746, 98.7, 0.42652559028, 0, 0.000506585612969},
	{"sprd rand_read fua", sprd_rr_fua, 1, 100.2, 1.14236596588, 101, 1.41843469261, 1, -0.0207920792079},
	{"sprd rand_write cache-nofua", sprd_rw_nofua, 1, 70.32, 4.54499724972, 69.3, 5.64335945692, 0, -0.0276399716513},
	{"sprd rand_write fua", sprd_rw_fua, 1, 12.68, 0.238746727726, 12.8, 0.296443216507, 0, 0.0157480314961},
	{"sprd seq_read cache-nofua", sprd_sr_nofua, 1, 265.74, 2.15939806428, 265.2, 2.6812468342, 0, 0.00622289270224},
	{"sprd seq_read fua", sprd_sr_fua, 1, 257.86, 2.4885738888, 258.8, 3.08997260459, 0, 0.00309477756286},
	{"sprd seq_write cache-nofua", sprd_sw_nofua, 1, 200.508, 6.00569063472, 199.94, 7.45704984549, 0, -0.0116658428077},
	{"sprd seq_write fua", sprd_sw_fua, 1, 149.48, 2.99616421446, 148.8, 3.7202292378, 0, 0.0374620317246},
};

struct pair {
	const char *name;
	const double *a, *b;
	int dir;
	double change, lo, hi, t, df, pw, u, pm;
	enum stats_verdict verdict; /* at alpha 0.05, min effect 1% */
};

static const struct pair pairs[] = {
	{"DUT1 fua->cache-nofua", dut1_fua, dut1_nofua, -1, -0.0150004311885, -0.036988604431, 0.00698774205403, -1.57239389114, 7.56772115887, 0.156649104421, 20, 0.150793650794, VERDICT_NO_DIFF},
	{"DUT2 fua->cache-nofua", dut2_fua, dut2_nofua, -1, -0.0011343771296, -0.0333655543162, 0.031096800057, -0.0811138738997, 7.99975605819, 0.937344034258, 11, 0.84126984127, VERDICT_NO_DIFF},
	{"DUT3 fua->cache-nofua", dut3_fua, dut3_nofua, -1, -0.00734320282416, -0.0125223634374, -0.00216404221096, -3.4567044341, 6.07702830183, 0.0132496552201, 25, 0.00793650793651, VERDICT_NO_DIFF},
	{"DUT4 fua->cache-nofua", dut4_fua, dut4_nofua, -1, -0.0022545817456, -0.00725528200835, 0.00274611851715, -1.16547755828, 4.87252114113, 0.29768941766, 19, 0.222222222222, VERDICT_NO_DIFF},
	{"DUT5 fua->cache-nofua", dut5_fua, dut5_nofua, -1, 0.00592746898968, -0.0204596521263, 0.0323145901056, 0.520751567242, 7.86636315445, 0.616875814093, 4, 0.0952380952381, VERDICT_NO_DIFF},
	{"DUT5 fua->fua-cqe", dut5_fua, dut5_fuacqe, -1, -0.00640564340498, -0.0296052975815, 0.0167940107715, -0.63562582259, 7.90531330323, 0.54297791003, 21, 0.0952380952381, VERDICT_NO_DIFF},
	{"DUT5 fua-cqe->cache-nofua-cqe", dut5_fuacqe, dut5_nofuacqe, -1, 0.00757622684843, -0.0183161608489, 0.0334686145458, 0.683879950199, 7.51688458622, 0.514574979417, 4, 0.0952380952381, VERDICT_NO_DIFF},
	{"sprd rand_read", sprd_rr_fua, sprd_rr_nofua, 1, -0.013872255489, -0.0276127230846, -0.00013178789347, -2.60553764568, 4.71750529573, 0.0507069430408, 23, 0.031746031746, VERDICT_NO_DIFF},
	{"sprd rand_write", sprd_rw_fua, sprd_rw_nofua, 1, 4.54574132492, 4.10739229578, 4.98409035406, 28.3189396749, 4.02207467338, 8.80129467909e-06, 0, 0.00793650793651, VERDICT_BETTER},
	{"sprd seq_read", sprd_sr_fua, sprd_sr_nofua, 1, 0.0305592181804, 0.0170827324164, 0.0440357039445, 5.34781410451, 7.84419141792, 0.000734004270922, 0, 0.00793650793651, VERDICT_BETTER},
	{"sprd seq_write", sprd_sw_fua, sprd_sw_nofua, 1, 0.341370082954, 0.290223756117, 0.392516409791, 17.0007746532, 5.87496436903, 3.21073942723e-06, 0, 0.00793650793651, VERDICT_BETTER},
};

/* Relative closeness: both implementations are good to ~1e-9; the reference prints 12 digits. */
#define is_rel(a, b, name) is_near((a), (b), 1e-8 * (fabs(b) > 1 ? fabs(b) : 1), name)

static void test_special(void)
{
	static const struct { double p, df, q; } tq[] = {
		{0.975, 1, 12.7062047362}, {0.975, 2, 4.30265272975}, {0.975, 4, 2.7764451052},
		{0.975, 7.5, 2.33303962686}, {0.95, 10, 1.81246112281}, {0.995, 30, 2.74999565357},
		{0.025, 4, -2.7764451052},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(tq); i++) {
		char name[64];
		snprintf(name, sizeof name, "t quantile p=%g df=%g", tq[i].p, tq[i].df);
		is_rel(stats_t_quantile(tq[i].p, tq[i].df), tq[i].q, name);
	}
	static const struct { double t, df, c; } tc[] = {
		{1, 3, 0.804498890522}, {-2.5, 6, 0.0232641161421}, {4.2, 2.7, 0.984886748536},
		{12, 4.1, 0.999880067237},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(tc); i++) {
		char name[64];
		snprintf(name, sizeof name, "t cdf t=%g df=%g", tc[i].t, tc[i].df);
		is_near(stats_t_cdf(tc[i].t, tc[i].df), tc[i].c, 1e-10, name);
	}
	static const struct { double a, b, x, v; } tb[] = {
		{2, 3, 0.4, 0.5248}, {5, 1, 0.9, 0.59049}, {3, 7, 0.05, 0.008361039546875}, {10, 10, 0.5, 0.5},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(tb); i++) {
		char name[64];
		snprintf(name, sizeof name, "I_%g(%g,%g)", tb[i].x, tb[i].a, tb[i].b);
		is_near(stats_betainc(tb[i].a, tb[i].b, tb[i].x), tb[i].v, 1e-13, name);
	}
	ok(isnan(stats_betainc(-1, 2, 0.5)), "betainc outside its domain is NaN");
	ok(isnan(stats_t_quantile(1.0, 3)), "t quantile of p=1 is NaN");
	is_near(stats_norm_cdf(1.959963984540054), 0.975, 1e-12, "normal cdf");
}

static void test_describe(void)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(groups); i++) {
		const struct grp *g = &groups[i];
		struct stats_desc d;
		char name[96];
		stats_describe(g->x, 5, 0.95, &d);
		snprintf(name, sizeof name, "%s mean", g->name);
		is_rel(d.mean, g->mean, name);
		snprintf(name, sizeof name, "%s sd", g->name);
		is_rel(d.sd, g->sd, name);
		snprintf(name, sizeof name, "%s median", g->name);
		is_rel(d.median, g->median, name);
		snprintf(name, sizeof name, "%s 95%% CI half-width", g->name);
		is_rel(d.ci_half, g->ci, name);
		double dev;
		bool w = stats_warmup(g->x, 5, g->dir, &dev);
		snprintf(name, sizeof name, "%s warm-up flag", g->name);
		is_int(w, g->warm, name);
		snprintf(name, sizeof name, "%s warm-up deviation", g->name);
		is_rel(dev, g->dev, name);
	}
}

static void test_compare(void)
{
	struct stats_cmp_opts o;
	stats_cmp_opts_init(&o);
	for (size_t i = 0; i < LAB_ARRAY_SIZE(pairs); i++) {
		const struct pair *p = &pairs[i];
		struct stats_cmp c;
		char name[96];
		o.direction = p->dir;
		stats_compare(p->a, 5, p->b, 5, &o, &c);
		snprintf(name, sizeof name, "%s change", p->name);
		is_rel(c.change, p->change, name);
		snprintf(name, sizeof name, "%s change CI low", p->name);
		is_rel(c.change_lo, p->lo, name);
		snprintf(name, sizeof name, "%s change CI high", p->name);
		is_rel(c.change_hi, p->hi, name);
		snprintf(name, sizeof name, "%s Welch t", p->name);
		is_rel(c.welch.t, p->t, name);
		snprintf(name, sizeof name, "%s Welch df", p->name);
		is_rel(c.welch.df, p->df, name);
		snprintf(name, sizeof name, "%s Welch p", p->name);
		is_near(c.welch.p, p->pw, 1e-10, name);
		snprintf(name, sizeof name, "%s MWU U", p->name);
		is_near(c.mwu.u, p->u, 1e-12, name);
		snprintf(name, sizeof name, "%s MWU exact p", p->name);
		is_near(c.mwu.p, p->pm, 1e-12, name);
		ok(c.mwu.exact, "%s MWU is exact", p->name);
		snprintf(name, sizeof name, "%s verdict", p->name);
		is_str(stats_verdict_name(c.verdict), stats_verdict_name(p->verdict), name);
	}
	/* The published percentages. */
	struct stats_cmp c;
	o.direction = 1;
	stats_compare(sprd_rw_fua, 5, sprd_rw_nofua, 5, &o, &c);
	is_near(c.change * 100, 454.57, 0.01, "rand_write 12.68 -> 70.32 MiB/s is +454.6%");
	stats_compare(sprd_sw_fua, 5, sprd_sw_nofua, 5, &o, &c);
	is_near(c.change * 100, 34.14, 0.01, "seq_write 149.48 -> 200.51 MiB/s is +34.1%");
	/* DUT3 is significant at 5% but below the 1% minimum effect; at 0.5% it counts. */
	o.direction = -1;
	stats_compare(dut3_fua, 5, dut3_nofua, 5, &o, &c);
	ok(strstr(c.note, "below minimum effect") != NULL, "DUT3: note says below minimum effect (%s)", c.note);
	o.min_effect = 0.005;
	stats_compare(dut3_fua, 5, dut3_nofua, 5, &o, &c);
	is_str(stats_verdict_name(c.verdict), "better", "DUT3 at 0.5% min effect: cache-nofua better (less time)");
	o.min_effect = 0.01;
	/* Swapping a and b flips the verdict for a lower-is-better metric. */
	o.min_effect = 0.005;
	stats_compare(dut3_nofua, 5, dut3_fua, 5, &o, &c);
	is_str(stats_verdict_name(c.verdict), "worse", "DUT3 reversed: worse");
	o.min_effect = 0.01;
	o.direction = 0;
	stats_compare(sprd_rw_fua, 5, sprd_rw_nofua, 5, &o, &c);
	is_str(stats_verdict_name(c.verdict), "changed", "unknown direction: changed");
}

static void test_mwu(void)
{
	/* Ties, exact (brute-force enumeration in the vector script). */
	static const double a[] = {1, 2, 2, 3, 5}, b[] = {2, 3, 3, 4, 6, 7};
	struct stats_mwu m;
	stats_mwu(a, 5, b, 6, &m);
	is_near(m.u, 7, 1e-12, "tied U");
	is_near(m.p, 0.17316017316, 1e-10, "tied exact p");
	ok(m.exact, "tied small samples use the exact distribution");
	/* Large samples: normal approximation with tie and continuity correction. */
	double a2[25], b2[23];
	for (int i = 0; i < 25; i++)
		a2[i] = (double)(i % 7) + 0.5 * (i % 3);
	for (int i = 0; i < 23; i++)
		b2[i] = (double)(i % 5) + 1.0 + 0.25 * (i % 4);
	stats_mwu(a2, 25, b2, 23, &m);
	is_near(m.u, 284.5, 1e-12, "normal-approx U");
	is_near(m.p, 0.958789628681, 1e-10, "normal-approx p");
	ok(!m.exact, "n > 20 uses the normal approximation");
	/* Exact at the boundary n1 = n2 = 20: completely separated groups. */
	double x[20], y[20];
	for (int i = 0; i < 20; i++) {
		x[i] = i;
		y[i] = 100 + i;
	}
	stats_mwu(x, 20, y, 20, &m);
	/* 2 / C(40,20) */
	is_near(m.p, 2.0 / 137846528820.0, 1e-22, "20 vs 20 separated: p = 2/C(40,20)");
	ok(m.exact, "20 vs 20 exact");
}

/* Exact p of untied samples by enumerating every na-subset of the ranks 1..n:
 * the definition stats_mwu's table (built once per shape, then cached) must
 * agree with, for data seen first and for data of a shape already cached. */
static double mwu_enum_p(size_t na, size_t nb, long w)
{
	size_t n = na + nb;
	double le = 0, ge = 0, total = 0;
	for (unsigned long mask = 0; mask < 1ul << n; mask++) {
		if ((size_t)__builtin_popcountl(mask) != na)
			continue;
		long sum = 0;
		for (size_t i = 0; i < n; i++)
			if (mask >> i & 1)
				sum += (long)i + 1;
		total++;
		le += sum <= w;
		ge += sum >= w;
	}
	double p = 2.0 * (le < ge ? le : ge) / total;
	return p > 1.0 ? 1.0 : p;
}

static void test_mwu_cached(void)
{
	uint64_t seed = 42;
	size_t bad = 0, checked = 0;
	/* 20 shapes (more than the cache keeps), three data sets each */
	for (size_t na = 2; na <= 6; na++)
		for (size_t nb = 3; nb <= 6; nb++)
			for (int rep = 0; rep < 3; rep++) {
				double v[12], a[6], b[6];
				size_t n = na + nb;
				for (size_t i = 0; i < n; i++)
					v[i] = (double)i * 1.5 + 0.25; /* distinct: no ties */
				for (size_t i = n - 1; i > 0; i--) { /* shuffle */
					seed = seed * 6364136223846793005ull + 1442695040888963407ull;
					size_t j = (size_t)(seed >> 33) % (i + 1);
					double t = v[i];
					v[i] = v[j];
					v[j] = t;
				}
				memcpy(a, v, na * sizeof *a);
				memcpy(b, v + na, nb * sizeof *b);
				long w = 0; /* rank sum of a */
				for (size_t i = 0; i < na; i++)
					for (size_t k = 0; k < n; k++)
						w += v[k] <= a[i];
				struct stats_mwu m;
				stats_mwu(a, na, b, nb, &m);
				double want = mwu_enum_p(na, nb, w);
				checked++;
				if (!m.exact || fabs(m.p - want) > 1e-12 * want) {
					bad++;
					printf("# na %zu nb %zu w %ld: p %.17g, enumeration %.17g\n", na, nb, w, m.p, want);
				}
			}
	ok(bad == 0 && checked == 60, "exact MWU p of %zu untied samples (20 shapes, 3 each) = subset "
	   "enumeration (%zu differ)", checked, bad);
}

static void test_bad_input(void)
{
	struct stats_cmp_opts o;
	struct stats_cmp c;
	struct stats_desc d;
	stats_cmp_opts_init(&o);
	static const double one[] = {5.0}, three[] = {4, 5, 6}, zero3[] = {5, 5, 5}, six3[] = {6, 6, 6};
	stats_compare(one, 1, three, 3, &o, &c);
	is_str(stats_verdict_name(c.verdict), "no-test", "n=1: no test");
	ok(strstr(c.note, "n=1: no test") != NULL, "note says n=1 (%s)", c.note);
	ok(isnan(c.welch.p), "n=1: no Welch p");
	stats_compare(zero3, 3, six3, 3, &o, &c);
	is_str(stats_verdict_name(c.verdict), "no-test", "zero variance, different means: no test");
	ok(strstr(c.note, "zero variance") != NULL, "note says zero variance (%s)", c.note);
	is_near(c.change, 0.2, 1e-12, "zero variance still reports the change");
	stats_compare(zero3, 3, zero3, 3, &o, &c);
	is_str(stats_verdict_name(c.verdict), "no-significant-difference", "identical constants: no difference");
	double nanv[] = {1, NAN, 3};
	stats_compare(nanv, 3, three, 3, &o, &c);
	is_str(stats_verdict_name(c.verdict), "no-test", "NaN: no test");
	ok(isnan(c.change), "NaN: no change number");
	stats_describe(nanv, 3, 0.95, &d);
	ok(d.bad && isnan(d.mean), "describe flags NaN and gives no mean");
	static const double neg[] = {-1, -2, -3};
	stats_compare(neg, 3, three, 3, &o, &c);
	ok(isnan(c.change), "negative mean of a: no relative change");
	ok(strstr(c.note, "negative values") != NULL, "note says negative (%s)", c.note);
	stats_compare(three, 3, NULL, 0, &o, &c);
	is_str(stats_verdict_name(c.verdict), "no-test", "missing group b: no test");
	stats_describe(NULL, 0, 0.95, &d);
	ok(d.n == 0 && isnan(d.mean), "describe of nothing");
	stats_describe(one, 1, 0.95, &d);
	ok(d.mean == 5.0 && isnan(d.sd) && isnan(d.ci_half), "n=1: mean but no sd/CI");
	ok(!stats_warmup(three, 2, 1, NULL), "warm-up needs n >= 3");
}

static void test_direction(void)
{
	is_int(stats_direction("seq_write", "MiB/s"), 1, "MiB/s higher is better");
	is_int(stats_direction("rand_read", "IOPS"), 1, "IOPS higher is better");
	is_int(stats_direction("wall_time", "s"), -1, "wall_time lower is better");
	is_int(stats_direction("p99_latency", "us"), -1, "latency lower is better");
	is_int(stats_direction("something", "us"), -1, "unknown metric in us: by unit");
	is_int(stats_direction("something", "widgets"), 0, "unknown metric and unit");
}

int main(void)
{
	test_special();
	test_describe();
	test_compare();
	test_mwu();
	test_mwu_cached();
	test_bad_input();
	test_direction();
	return tap_done();
}
