/*
 * Simulator model: PRNG determinism, and the calibration of the timing model
 * against the published reference data (results/reference/, the data the model
 * was fitted to).  If a constant of the model drifts, the published 5-run
 * means leave the central 95 % of the simulated ones and this test fails.
 */
#include "mode.h"
#include "sim.h"
#include "sim_calib.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSEEDS 60

/* The state a mode of the mode table puts the card in. */
static struct sim_effmode mode_of(const char *name)
{
	int i = lab_mode_parse(name);
	if (i < 0) {
		printf("Bail out! unknown mode %s\n", name);
		exit(1);
	}
	return (struct sim_effmode){.fua = lab_modes[i].fua, .cache = lab_modes[i].write_cache,
				    .cqe = lab_modes[i].cqe};
}

static void test_prng(void)
{
	struct rand_gen a, b, c;
	sim_rng_seed(&a, 42, "dut1");
	sim_rng_seed(&b, 42, "dut1");
	sim_rng_seed(&c, 42, "dut2");
	int same = 1, diff = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = rand_next(&a), y = rand_next(&b), z = rand_next(&c);
		same &= x == y;
		diff += x != z;
	}
	ok(same, "same seed and stream give the same sequence");
	ok(diff > 990, "another stream gives another sequence (%d/1000 differ)", diff);
	double sum = 0, sq = 0, mn = 1, mx = 0;
	int n = 200000;
	for (int i = 0; i < n; i++) {
		double u = rand_uniform(&a);
		mn = u < mn ? u : mn;
		mx = u > mx ? u : mx;
		double g = sim_rng_normal(&a);
		sum += g;
		sq += g * g;
	}
	ok(mn >= 0 && mx < 1, "uniform stays in [0,1) (%g..%g)", mn, mx);
	is_near(sum / n, 0.0, 0.01, "normal mean ~ 0");
	is_near(sqrt(sq / n), 1.0, 0.01, "normal sd ~ 1");
}

struct pub {
	char dut[16], mode[24];
	double v[16];
	int n;
};

static const char *dut_model(const char *dut)
{
	static const char *const map[][2] = {{"DUT1", "foresee-32g"}, {"DUT2", "silicongo-16g"},
					     {"DUT3", "hardkernel-8g"}, {"DUT4", "hardkernel-16g"},
					     {"DUT5", "industrial-8g"}};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(map); i++)
		if (strcmp(map[i][0], dut) == 0)
			return map[i][1];
	return NULL;
}

static void stats(const double *v, int n, double *mean, double *sd, double *mn, double *mx)
{
	double s = 0, q = 0;
	*mn = v[0];
	*mx = v[0];
	for (int i = 0; i < n; i++) {
		s += v[i];
		*mn = v[i] < *mn ? v[i] : *mn;
		*mx = v[i] > *mx ? v[i] : *mx;
	}
	*mean = s / n;
	for (int i = 0; i < n; i++)
		q += (v[i] - *mean) * (v[i] - *mean);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) (linear interpolation; sorts v). */
static double central(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	double k = (n - 1) * q;
	int f = (int)k, c = f + 1 < n ? f + 1 : f;
	return v[f] + (v[c] - v[f]) * (k - f);
}

static char *read_csv(const char *name)
{
	const char *src = getenv("EMMCLAB_SRC");
	char *path = xasprintf("%s/results/reference/%s", src ? src : EMMCLAB_SOURCE_DIR, name);
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	int rc = lab_read_file(path, 1 << 20, &data, &len, &e);
	ok(rc == 0, "read %s", path);
	free(path);
	return rc == 0 ? data : NULL;
}

static void test_fscopy_calibration(void)
{
	char *csv = read_csv("fs-copy-benchmark.csv");
	if (!csv)
		return;
	struct pub pubs[32];
	int np = 0;
	/* dut,module,mode,run,seconds  (module is quoted and contains commas) */
	for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#' || strncmp(line, "dut,", 4) == 0)
			continue;
		char dut[16], mode[24];
		char *q2 = strchr(strchr(line, '"') + 1, '"');
		double sec;
		int run;
		if (sscanf(line, "%15[^,]", dut) != 1 || sscanf(q2 + 2, "%23[^,],%d,%lf", mode, &run, &sec) != 3)
			continue;
		int k = 0;
		for (; k < np; k++)
			if (!strcmp(pubs[k].dut, dut) && !strcmp(pubs[k].mode, mode))
				break;
		if (k == np) {
			memset(&pubs[np], 0, sizeof pubs[np]);
			snprintf(pubs[np].dut, sizeof pubs[np].dut, "%s", dut);
			snprintf(pubs[np].mode, sizeof pubs[np].mode, "%s", mode);
			np++;
		}
		pubs[k].v[pubs[k].n++] = sec;
	}
	is_int(np, 12, "12 published DUT x mode series");
	for (int k = 0; k < np; k++) {
		const struct sim_part *p = sim_part_find(dut_model(pubs[k].dut));
		ok(p != NULL, "%s has a part profile", pubs[k].dut);
		if (!p)
			continue;
		double pm, psd, pmin, pmax;
		stats(pubs[k].v, pubs[k].n, &pm, &psd, &pmin, &pmax);
		struct sim_effmode m = mode_of(pubs[k].mode);
		double means[NSEEDS];
		double sd_sum = 0, grand = 0, first = 0, rest = 0;
		for (int seed = 1; seed <= NSEEDS; seed++) {
			struct rand_gen r;
			char stream[64];
			snprintf(stream, sizeof stream, "cal/%s/%s", pubs[k].dut, pubs[k].mode);
			sim_rng_seed(&r, (uint64_t)seed, stream);
			double v[5];
			for (int i = 0; i < 5; i++) {
				struct sim_fs_result res;
				sim_model_fscopy(p, m, i == 0, 1.0, 1.0, &r, &res);
				v[i] = res.wall;
			}
			double sm, ssd, smin, smax;
			stats(v, 5, &sm, &ssd, &smin, &smax);
			means[seed - 1] = sm;
			sd_sum += ssd;
			grand += sm;
			first += v[0];
			rest += (v[1] + v[2] + v[3] + v[4]) / 4;
		}
		double msd = sd_sum / NSEEDS;
		grand /= NSEEDS;
		double lo = central(means, NSEEDS, 0.025), hi = central(means, NSEEDS, 0.975);
		ok(pm >= lo && pm <= hi,
		   "%s %s: published 5-run mean %.2f inside the central 95%% of simulated ones %.2f..%.2f",
		   pubs[k].dut, pubs[k].mode, pm, lo, hi);
		ok(fabs(grand - pm) <= psd, "%s %s: long-run mean %.2f within one published SD (%.2f) of %.2f",
		   pubs[k].dut, pubs[k].mode, grand, psd, pm);
		ok(msd > psd / 3 && msd < psd * 3, "%s %s: simulated SD %.2f of the order of the published %.2f",
		   pubs[k].dut, pubs[k].mode, msd, psd);
		double pub_first = pubs[k].v[0] - (pubs[k].v[1] + pubs[k].v[2] + pubs[k].v[3] + pubs[k].v[4]) / 4;
		double sim_first = (first - rest) / NSEEDS;
		if (pub_first > 10)
			ok(sim_first > 10, "%s %s: first iteration slower (published +%.1f s, simulated +%.1f s)",
			   pubs[k].dut, pubs[k].mode, pub_first, sim_first);
	}
	free(csv);
}

static void test_fscopy_counters(void)
{
	const struct sim_part *p = sim_part_find("industrial-8g");
	struct rand_gen r;
	sim_rng_seed(&r, 1, "counters");
	struct sim_fs_result res;
	sim_model_fscopy(p, mode_of("fua"), false, 1.0, 1.0, &r, &res);
	ok(res.rel_writes >= 450 && res.rel_writes <= 472, "DUT5 fua: ~461 reliable writes per iteration (%ld)",
	   res.rel_writes);
	ok(res.flushes > 0, "fua: flushes too (%ld)", res.flushes);
	sim_model_fscopy(p, mode_of("cache-nofua"), false, 1.0, 1.0, &r, &res);
	is_int(res.rel_writes, 0, "cache-nofua: no reliable writes");
	ok(res.flushes > 900, "cache-nofua: write + flush per commit (%ld flushes)", res.flushes);
	/* slow-part multiplies the time */
	struct rand_gen r1, r2;
	sim_rng_seed(&r1, 3, "slow");
	sim_rng_seed(&r2, 3, "slow");
	struct sim_fs_result a, b;
	sim_model_fscopy(p, mode_of("fua"), false, 1.0, 1.0, &r1, &a);
	sim_model_fscopy(p, mode_of("fua"), false, 2.0, 1.0, &r2, &b);
	is_near(b.wall / a.wall, 2.0, 1e-9, "slow-part=2 doubles the wall time");
	/* determinism */
	sim_rng_seed(&r1, 9, "det");
	sim_rng_seed(&r2, 9, "det");
	sim_model_fscopy(p, mode_of("fua-cqe"), true, 1.0, 1.0, &r1, &a);
	sim_model_fscopy(p, mode_of("fua-cqe"), true, 1.0, 1.0, &r2, &b);
	is_near(a.wall, b.wall, 0, "same seed, same sample");
	double phases = a.mkfs + a.mount + a.copy1 + a.rm + a.copy2 + a.sync;
	is_near(phases, a.wall, 1e-6, "phase times add up to the wall time");
}

static void test_androbench_calibration(void)
{
	char *csv = read_csv("androbench-sdhci-sprd.csv");
	if (!csv)
		return;
	const struct sim_part *p = sim_part_find("sprd-32g");
	ok(p != NULL, "sprd part profile");
	static const char *const metrics[] = {"seq_read", "rand_read", "seq_write", "rand_write"};
	double pub[2][4][8];
	int pn[2][4] = {{0}};
	for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
		char board[16], ctl[32], wl[32];
		int fua, run;
		double v;
		if (line[0] == '#' ||
		    sscanf(line, "%15[^,],%31[^,],%d,%31[^,],%d,%lf", board, ctl, &fua, wl, &run, &v) != 6)
			continue;
		for (int k = 0; k < 4; k++)
			if (strcmp(wl, metrics[k]) == 0 && pn[fua][k] < 8)
				pub[fua][k][pn[fua][k]++] = v;
	}
	for (int fua = 0; fua < 2; fua++) {
		struct sim_effmode m = mode_of(fua ? "fua" : "cache-nofua");
		for (int k = 0; k < 4; k++) {
			double pm, psd, pmin, pmax;
			stats(pub[fua][k], pn[fua][k], &pm, &psd, &pmin, &pmax);
			double means[NSEEDS];
			double sd_sum = 0, grand = 0;
			for (int seed = 1; seed <= NSEEDS; seed++) {
				struct rand_gen r;
				sim_rng_seed(&r, (uint64_t)seed, metrics[k]);
				double v[5];
				for (int i = 0; i < 5; i++) {
					struct sim_ab_args a = {.seq_mib = 64, .req_mib = 32, .rand_mib = 64, .rand_ios = 4096};
					struct sim_ab_result res;
					sim_model_androbench(p, m, 1.0, &a, &r, &res);
					v[i] = k == 0 ? res.seq_read : k == 1 ? res.rand_read : k == 2 ? res.seq_write : res.rand_write;
				}
				double sm, ssd, smin, smax;
				stats(v, 5, &sm, &ssd, &smin, &smax);
				means[seed - 1] = sm;
				sd_sum += ssd;
				grand += sm;
			}
			double msd = sd_sum / NSEEDS;
			grand /= NSEEDS;
			double lo = central(means, NSEEDS, 0.025), hi = central(means, NSEEDS, 0.975);
			ok(pm >= lo && pm <= hi,
			   "sprd queue_fua=%d %s: published mean %.2f inside the central 95%% %.2f..%.2f",
			   fua, metrics[k], pm, lo, hi);
			ok(fabs(grand - pm) <= psd, "sprd queue_fua=%d %s: long-run mean %.2f within one SD (%.2f) of %.2f",
			   fua, metrics[k], grand, psd, pm);
			ok(msd > psd / 3 && msd < psd * 3, "sprd queue_fua=%d %s: SD %.2f of the order of %.2f", fua,
			   metrics[k], msd, psd);
		}
	}
	free(csv);
}

static void test_profiles(void)
{
	int n = 0;
	for (size_t i = 0; sim_part_at(i); i++) {
		const struct sim_part *p = sim_part_at(i);
		n++;
		ok(p->capacity_bytes > (1ULL << 30) && p->name[0] && p->ext_csd_rev >= 6,
		   "%s: plausible identity", p->model);
		ok(!p->cmdq_support || p->ext_csd_rev >= 8, "%s: CMDQ only on eMMC 5.1", p->model);
	}
	is_int(n, 6, "six part profiles (five ext4 DUTs and the sprd board)");
	char s[32];
	sim_human_size(s, sizeof s, 61071360ULL * 512);
	is_str(s, "29.1 GiB", "kernel-style size");
	sim_human_size(s, sizeof s, 4ULL << 20);
	is_str(s, "4.00 MiB", "kernel-style size (MiB)");
	struct sim_effmode m = {.fua = false, .cache = true, .cqe = true};
	is_str(sim_mode_name(m), "cache-nofua-cqe", "mode name");
	m.cache = false;
	is_str(sim_mode_name(m), "unknown", "write through is none of the modes");
}

/* The fitted/assumed table the controller marks outputs with names the model's
 * parts, and says what the reference CSVs hold (docs/reports.md, Provenance). */
static void test_fitted(void)
{
	for (const struct sim_calib *c = sim_calib_table; c->pnm; c++) {
		bool found = false;
		for (size_t i = 0; sim_part_at(i); i++)
			found |= sim_part_at(i)->manfid == c->manfid && strcmp(sim_part_at(i)->name, c->pnm) == 0;
		ok(found, "fitted table: %s (0x%x) is a simulated part", c->pnm, c->manfid);
	}
	/* A noise row is fitted exactly where its cell is (the markers stay true). */
	int nrows = 0;
	for (const struct sim_calib_noise *n = sim_calib_noise_table; n->pnm; n++) {
		int m = lab_mode_parse(n->mode);
		ok(m >= 0 && n->sd > 0 && n->warmup_s >= 0 && n->warmup_sd >= 0 && n->source[0],
		   "noise row %s %s %s %s: a mode, a spread, a source", n->pnm, n->workload, n->metric,
		   n->mode);
		bool cell = m >= 0 && sim_calib_fitted(n->manfid, n->pnm, n->workload, lab_mode_cqe(m),
						       n->metric);
		ok(cell == n->fitted, "noise row %s %s %s: %s, like its cell", n->pnm, n->metric, n->mode,
		   n->fitted ? "fitted" : "assumed");
		ok(sim_calib_noise(n->manfid, n->pnm, n->workload, n->metric, n->mode) == n,
		   "noise row %s %s %s: found by its cell", n->pnm, n->metric, n->mode);
		nrows += n->fitted;
	}
	is_int(nrows, 20, "20 fitted noise rows: 12 ext4 copy series, 8 AndroBench cells");
	const struct sim_part *d1 = sim_part_find("foresee-32g"), *d5 = sim_part_find("industrial-8g"),
			      *sp = sim_part_find("sprd-32g");
	if (!d1 || !d5 || !sp) {
		printf("Bail out! part profiles missing\n");
		exit(1);
	}
	ok(sim_model_fitted(d1, "fscopy", false, "wall_time"), "DUT1 ext4 copy without CQE: fitted");
	ok(!sim_model_fitted(d1, "fscopy", true, "wall_time"), "DUT1 ext4 copy with CQE: assumed");
	ok(!sim_model_fitted(d1, "fscopy", false, "copy1_time"), "phase times: assumed");
	ok(!sim_model_fitted(d1, "androbench", false, "seq_write"), "DUT1 AndroBench: assumed");
	ok(sim_model_fitted(d5, "fscopy", true, "wall_time"), "DUT5 ext4 copy with CQE: fitted");
	ok(!sim_model_fitted(d5, "androbench", false, "rand_write"), "DUT5 AndroBench: assumed");
	ok(sim_model_fitted(sp, "androbench", false, "rand_write") &&
		   sim_model_fitted(sp, "androbench", false, "rand_write_iops"),
	   "sprd AndroBench without CQE: fitted");
	ok(!sim_model_fitted(sp, "androbench", true, "rand_write"), "sprd AndroBench with CQE: assumed");
	ok(!sim_model_fitted(sp, "androbench", false, "write_lat_p99"), "latency percentiles: assumed");
	ok(!sim_model_fitted(sp, "androbench", false, "rand"), "a metric name's prefix is no match");
	/* What sysfs shows for the simulated DUT1 (manfid 0x88, PNM "NCard "). */
	ok(sim_calib_fitted_cid("8801034e4361726420015a0c11e337cf", "fscopy", false, "wall_time"),
	   "by CID: DUT1 fitted");
	ok(!sim_calib_fitted_cid("8801034e4361726420015a0c11e337c", "fscopy", false, "wall_time") &&
		   !sim_calib_fitted_cid("zz01034e4361726420015a0c11e337cf", "fscopy", false, "wall_time") &&
		   !sim_calib_fitted_cid(NULL, "fscopy", false, "wall_time") &&
		   !sim_calib_fitted_cid("", "fscopy", false, "wall_time"),
	   "a short, non-hex or missing CID is not fitted");
}

static void test_faults(void)
{
	int id;
	double v;
	bool hv;
	long c;
	struct lab_err e = {0};
	ok(sim_fault_parse("panic:1", &id, &v, &hv, &c, &e) == 0 && id == FAULT_PANIC && c == 1 && !hv,
	   "panic:1");
	ok(sim_fault_parse("garbage=0.01", &id, &v, &hv, &c, &e) == 0 && id == FAULT_GARBAGE && hv &&
	       fabs(v - 0.01) < 1e-12 && c == -1, "garbage=0.01");
	ok(sim_fault_parse("slow-part=3:2", &id, &v, &hv, &c, &e) == 0 && v == 3 && c == 2, "slow-part=3:2");
	ok(sim_fault_parse("panik", &id, &v, &hv, &c, &e) == LAB_EUSAGE && strstr(e.msg, "did you mean 'panic'"),
	   "unknown fault suggests the nearest (%s)", e.msg);
	lab_err_clear(&e);
	ok(sim_fault_parse("panic:x", &id, &v, &hv, &c, &e) == LAB_EUSAGE, "bad count rejected");
}

int main(void)
{
	test_prng();
	test_profiles();
	test_faults();
	test_fitted();
	test_fscopy_calibration();
	test_fscopy_counters();
	test_androbench_calibration();
	return tap_done();
}
