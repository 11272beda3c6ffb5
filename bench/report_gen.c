/*
 * report_gen - fill a results store with a year of synthetic nightly runs
 * through the store's bulk write path (store_begin + store_iteration_write,
 * one transaction per night) and print how long the ingest took.
 *
 *   report_gen DB [NIGHTS]   (default 365 nights)
 *
 * Per night: 20 parts x 4 modes x 2 workloads x 5 iterations, 3 metrics per
 * workload = 2400 samples (876,000 for a year).  Values come from a fixed
 * per-part model with mode effects and noise (deterministic LCG).
 */
#include "mode.h"
#include "store.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARTS 20
#define ITERS 5

static uint64_t lcg = 0x2545F4914F6CDD1DULL;

static double unif(void)
{
	lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(lcg >> 11) / 9007199254740992.0;
}

static double noise(void)
{
	/* Box-Muller */
	double u = unif() + 1e-12, v = unif();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static int die(const char *what, const struct lab_err *e)
{
	fprintf(stderr, "report_gen: %s: %s\n", what, e->msg);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: report_gen DB [NIGHTS]\n");
		return 2;
	}
	int64_t nights = 365;
	if (argc > 2 && (lab_parse_i64(argv[2], &nights) || nights < 1 || nights > 10000)) {
		fprintf(stderr, "report_gen: NIGHTS must be 1..10000\n");
		return 2;
	}
	static const char *const workloads[] = {"androbench", "fio"};
	static const char *const metrics[2][3] = {{"seq_write", "rand_write", "rand_read"},
						  {"write_iops", "p99_latency", "wall_time"}};
	static const char *const units[2][3] = {{"MiB/s", "MiB/s", "MiB/s"}, {"IOPS", "us", "s"}};
	static const double base[2][3] = {{150, 13, 100}, {3000, 900, 420}};

	struct lab_err e = {0};
	struct store *s;
	if (store_open(argv[1], 0, &s, &e))
		return die("open", &e);
	uint64_t t0 = lab_now_ns();
	int64_t part[PARTS], board[PARTS], kernel;
	if (store_begin(s, &e))
		return die("begin", &e);
	for (int p = 0; p < PARTS; p++) {
		char label[64], bname[64];
		snprintf(label, sizeof label, "part-%02d", p);
		snprintf(bname, sizeof bname, "board-%02d", p);
		struct store_part sp;
		store_part_init(&sp);
		sp.label = label;
		if (store_part_upsert(s, &sp, &part[p], &e) ||
		    store_board_upsert(s, bname, "sim", "sdhci-sim", "bench", &board[p], &e))
			return die("part/board", &e);
	}
	if (store_kernel_upsert(s, "6.1.0-fua", "series", "config", "image", &kernel, &e) || store_commit(s, &e))
		return die("kernel", &e);
	size_t samples = 0;
	for (int64_t n = 0; n < nights; n++) {
		if (store_begin(s, &e))
			return die("begin", &e);
		struct store_run_info ri = {.plan = "nightly", .lab = "bench", .source = "lab"};
		int64_t run;
		if (store_run_begin(s, &ri, &run, &e))
			return die("run", &e);
		char st[32], fin[32];
		lab_utc_iso(st, sizeof st, 1767229200 + n * 86400);        /* 2026-01-01T01:00Z + n days */
		lab_utc_iso(fin, sizeof fin, 1767229200 + n * 86400 + 14400);
		if (store_run_set_times(s, run, st, fin, &e))
			return die("run times", &e);
		int seq = 0;
		for (int p = 0; p < PARTS; p++)
			for (int m = 0; m < MODE_COUNT; m++) {
				struct store_job_info ji = {.run_id = run, .board_id = board[p], .part_id = part[p],
							    .kernel_id = kernel, .suite = "nightly",
							    .mode = lab_mode_names[m], .seq = seq++};
				int64_t job;
				if (store_job_begin(s, &ji, &job, &e) ||
				    store_job_verified(s, job, lab_modes[m].fua, lab_modes[m].write_cache,
						       lab_modes[m].cqe, lab_mode_names[m], &e))
					return die("job", &e);
				for (int w = 0; w < 2; w++)
					for (int it = 1; it <= ITERS; it++) {
						struct store_sample smp[3];
						for (int k = 0; k < 3; k++) {
							double effect = 1.0 + 0.01 * p + ((m & 1) ? 0.05 : 0) +
									(m >= 2 ? 0.02 : 0);
							double v = base[w][k] * effect * (1 + 0.01 * noise());
							if (it == 1)
								v *= 0.96; /* warm-up */
							smp[k] = (struct store_sample){metrics[w][k], v, units[w][k]};
						}
						int64_t iid;
						if (store_iteration_write(s, job, workloads[w], it, 60.0, 0, smp, 3,
									  NULL, 0, &iid, &e))
							return die("iteration", &e);
						samples += 3;
					}
				if (store_job_finish(s, job, "ok", &e))
					return die("job finish", &e);
			}
		if (store_run_finish(s, run, "complete", &e) || store_commit(s, &e))
			return die("commit", &e);
	}
	double secs = (double)(lab_now_ns() - t0) / 1e9;
	store_close(s);
	printf("nights %lld samples %zu ingest %.3f s (%.0f samples/s)\n", (long long)nights, samples, secs,
	       (double)samples / secs);
	return 0;
}
