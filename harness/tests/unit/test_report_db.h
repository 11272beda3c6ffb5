/*
 * test_report_db.h - helpers that fill a results store for the report/compare
 * tests through the store API.  The reference rows are the two published CSVs
 * in /work/shared/reference-data (generated from them once; values as written).
 */
#ifndef EMMCLAB_TEST_REPORT_DB_H
#define EMMCLAB_TEST_REPORT_DB_H

#include "store.h"
#include <string.h>

struct testdb_ref { char file; const char *part, *board, *mode, *workload, *metric; int run; double value; const char *unit; };
static const struct testdb_ref testdb_rows[] = {
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_read", 1, 266.8, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_read", 2, 265.1, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_read", 3, 262.9, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_read", 4, 268.7, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_read", 5, 265.2, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_read", 1, 98.75, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_read", 2, 98.7, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_read", 3, 98.5, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_read", 4, 99.4, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_read", 5, 98.7, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_write", 1, 199.94, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_write", 2, 199.1, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_write", 3, 205.5, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_write", 4, 206.5, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "seq_write", 5, 191.5, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_write", 1, 68.6, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_write", 2, 71.8, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_write", 3, 77.1, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_write", 4, 64.8, "MiB/s"},
	{'A', "sprd", "sprd", "cache-nofua", "androbench", "rand_write", 5, 69.3, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_read", 1, 259.3, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_read", 2, 258.8, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_read", 3, 258.2, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_read", 4, 259.5, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_read", 5, 253.5, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_read", 1, 98.9, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_read", 2, 101, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_read", 3, 101, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_read", 4, 99, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_read", 5, 101.1, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_write", 1, 153.7, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_write", 2, 146.2, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_write", 3, 151.2, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_write", 4, 148.8, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "seq_write", 5, 147.5, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_write", 1, 12.9, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_write", 2, 12.3, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_write", 3, 12.6, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_write", 4, 12.8, "MiB/s"},
	{'A', "sprd", "sprd", "fua", "androbench", "rand_write", 5, 12.8, "MiB/s"},
	{'F', "DUT1", "", "cache-nofua", "fscopy", "wall_time", 1, 784.49, "s"},
	{'F', "DUT1", "", "cache-nofua", "fscopy", "wall_time", 2, 793.82, "s"},
	{'F', "DUT1", "", "cache-nofua", "fscopy", "wall_time", 3, 810.59, "s"},
	{'F', "DUT1", "", "cache-nofua", "fscopy", "wall_time", 4, 808.13, "s"},
	{'F', "DUT1", "", "cache-nofua", "fscopy", "wall_time", 5, 800.64, "s"},
	{'F', "DUT1", "", "fua", "fscopy", "wall_time", 1, 810.32, "s"},
	{'F', "DUT1", "", "fua", "fscopy", "wall_time", 2, 816.26, "s"},
	{'F', "DUT1", "", "fua", "fscopy", "wall_time", 3, 790.86, "s"},
	{'F', "DUT1", "", "fua", "fscopy", "wall_time", 4, 812.52, "s"},
	{'F', "DUT1", "", "fua", "fscopy", "wall_time", 5, 828.59, "s"},
	{'F', "DUT2", "", "fua", "fscopy", "wall_time", 1, 491.24, "s"},
	{'F', "DUT2", "", "fua", "fscopy", "wall_time", 2, 467.73, "s"},
	{'F', "DUT2", "", "fua", "fscopy", "wall_time", 3, 468.00, "s"},
	{'F', "DUT2", "", "fua", "fscopy", "wall_time", 4, 468.18, "s"},
	{'F', "DUT2", "", "fua", "fscopy", "wall_time", 5, 467.38, "s"},
	{'F', "DUT2", "", "cache-nofua", "fscopy", "wall_time", 1, 490.30, "s"},
	{'F', "DUT2", "", "cache-nofua", "fscopy", "wall_time", 2, 468.97, "s"},
	{'F', "DUT2", "", "cache-nofua", "fscopy", "wall_time", 3, 468.47, "s"},
	{'F', "DUT2", "", "cache-nofua", "fscopy", "wall_time", 4, 467.93, "s"},
	{'F', "DUT2", "", "cache-nofua", "fscopy", "wall_time", 5, 464.18, "s"},
	{'F', "DUT3", "", "cache-nofua", "fscopy", "wall_time", 1, 422.82, "s"},
	{'F', "DUT3", "", "cache-nofua", "fscopy", "wall_time", 2, 418.94, "s"},
	{'F', "DUT3", "", "cache-nofua", "fscopy", "wall_time", 3, 423.20, "s"},
	{'F', "DUT3", "", "cache-nofua", "fscopy", "wall_time", 4, 420.27, "s"},
	{'F', "DUT3", "", "cache-nofua", "fscopy", "wall_time", 5, 420.88, "s"},
	{'F', "DUT3", "", "fua", "fscopy", "wall_time", 1, 425.43, "s"},
	{'F', "DUT3", "", "fua", "fscopy", "wall_time", 2, 423.44, "s"},
	{'F', "DUT3", "", "fua", "fscopy", "wall_time", 3, 424.82, "s"},
	{'F', "DUT3", "", "fua", "fscopy", "wall_time", 4, 423.26, "s"},
	{'F', "DUT3", "", "fua", "fscopy", "wall_time", 5, 424.74, "s"},
	{'F', "DUT4", "", "fua", "fscopy", "wall_time", 1, 443.92, "s"},
	{'F', "DUT4", "", "fua", "fscopy", "wall_time", 2, 440.15, "s"},
	{'F', "DUT4", "", "fua", "fscopy", "wall_time", 3, 440.52, "s"},
	{'F', "DUT4", "", "fua", "fscopy", "wall_time", 4, 439.10, "s"},
	{'F', "DUT4", "", "fua", "fscopy", "wall_time", 5, 440.71, "s"},
	{'F', "DUT4", "", "cache-nofua", "fscopy", "wall_time", 1, 440.23, "s"},
	{'F', "DUT4", "", "cache-nofua", "fscopy", "wall_time", 2, 440.48, "s"},
	{'F', "DUT4", "", "cache-nofua", "fscopy", "wall_time", 3, 439.94, "s"},
	{'F', "DUT4", "", "cache-nofua", "fscopy", "wall_time", 4, 438.90, "s"},
	{'F', "DUT4", "", "cache-nofua", "fscopy", "wall_time", 5, 439.88, "s"},
	{'F', "DUT5", "", "cache-nofua", "fscopy", "wall_time", 1, 439.36, "s"},
	{'F', "DUT5", "", "cache-nofua", "fscopy", "wall_time", 2, 422.11, "s"},
	{'F', "DUT5", "", "cache-nofua", "fscopy", "wall_time", 3, 421.53, "s"},
	{'F', "DUT5", "", "cache-nofua", "fscopy", "wall_time", 4, 421.35, "s"},
	{'F', "DUT5", "", "cache-nofua", "fscopy", "wall_time", 5, 420.37, "s"},
	{'F', "DUT5", "", "cache-nofua-cqe", "fscopy", "wall_time", 1, 437.55, "s"},
	{'F', "DUT5", "", "cache-nofua-cqe", "fscopy", "wall_time", 2, 420.73, "s"},
	{'F', "DUT5", "", "cache-nofua-cqe", "fscopy", "wall_time", 3, 419.25, "s"},
	{'F', "DUT5", "", "cache-nofua-cqe", "fscopy", "wall_time", 4, 418.44, "s"},
	{'F', "DUT5", "", "cache-nofua-cqe", "fscopy", "wall_time", 5, 418.60, "s"},
	{'F', "DUT5", "", "fua", "fscopy", "wall_time", 1, 435.10, "s"},
	{'F', "DUT5", "", "fua", "fscopy", "wall_time", 2, 418.99, "s"},
	{'F', "DUT5", "", "fua", "fscopy", "wall_time", 3, 418.94, "s"},
	{'F', "DUT5", "", "fua", "fscopy", "wall_time", 4, 419.17, "s"},
	{'F', "DUT5", "", "fua", "fscopy", "wall_time", 5, 420.00, "s"},
	{'F', "DUT5", "", "fua-cqe", "fscopy", "wall_time", 1, 431.03, "s"},
	{'F', "DUT5", "", "fua-cqe", "fscopy", "wall_time", 2, 418.04, "s"},
	{'F', "DUT5", "", "fua-cqe", "fscopy", "wall_time", 3, 416.89, "s"},
	{'F', "DUT5", "", "fua-cqe", "fscopy", "wall_time", 4, 416.43, "s"},
	{'F', "DUT5", "", "fua-cqe", "fscopy", "wall_time", 5, 416.28, "s"},
};

static inline int testdb_run(struct store *s, const char *source, int64_t *id)
{
	struct lab_err e = {0};
	struct store_run_info ri = {.plan = "test", .lab = "test", .source = source};
	return store_run_begin(s, &ri, id, &e);
}

static inline int testdb_part(struct store *s, const char *label, int64_t *id)
{
	struct lab_err e = {0};
	struct store_part p;
	store_part_init(&p);
	p.label = label;
	return store_part_upsert(s, &p, id, &e);
}

/* A finished job; verified: NULL (not verified, as imports) or the verified mode. */
static inline int testdb_job(struct store *s, int64_t run, int64_t part, const char *mode,
			     const char *status, const char *verified, int64_t *id)
{
	struct lab_err e = {0};
	struct store_job_info ji = {.run_id = run, .part_id = part, .suite = "test", .mode = mode};
	int rc = store_job_begin(s, &ji, id, &e);
	if (!rc && verified)
		rc = store_job_verified(s, *id, -1, -1, -1, verified, &e);
	if (!rc && strcmp(status, "mode-mismatch") != 0)
		rc = store_job_finish(s, *id, status, &e);
	return rc;
}

/* One sample in its own iteration (workload, n) of the job. */
static inline int testdb_iter(struct store *s, int64_t job, const char *workload, int n,
			      const char *metric, double v, const char *unit)
{
	struct lab_err e = {0};
	struct store_sample smp = {metric, v, unit};
	char wl[128];
	/* iteration (job, workload, n) is unique: one workload name per metric */
	snprintf(wl, sizeof wl, "%s", workload);
	int64_t it;
	return store_iteration_write(s, job, wl, n, 1.0, 0, &smp, 1, NULL, 0, &it, &e);
}

/* Both reference files: one run each, one job per (part, mode), one iteration
 * per run number holding that row's samples. */
static inline int testdb_reference(struct store *s)
{
	struct lab_err e = {0};
	int64_t runs[2];
	if (testdb_run(s, "import:androbench-sdhci-sprd.csv", &runs[0]) ||
	    testdb_run(s, "import:fs-copy-benchmark.csv", &runs[1]))
		return -1;
	size_t n = sizeof testdb_rows / sizeof testdb_rows[0];
	for (size_t i = 0; i < n; i++) {
		const struct testdb_ref *r = &testdb_rows[i];
		/* first row of its (file, part, mode) group creates the job */
		size_t j;
		for (j = 0; j < i; j++)
			if (testdb_rows[j].file == r->file && !strcmp(testdb_rows[j].part, r->part) &&
			    !strcmp(testdb_rows[j].mode, r->mode))
				break;
		if (j < i)
			continue;
		int64_t part, job, board = 0;
		if (testdb_part(s, r->part, &part))
			return -1;
		if (r->board[0] && store_board_upsert(s, r->board, "sprd", "sdhci-sprd", "ref", &board, &e))
			return -1;
		struct store_job_info ji = {.run_id = runs[r->file == 'F'], .part_id = part,
					    .board_id = board, .suite = r->workload, .mode = r->mode};
		if (store_job_begin(s, &ji, &job, &e))
			return -1;
		for (int it = 1; it <= 5; it++) {
			struct store_sample smp[4];
			size_t ns = 0;
			for (size_t k = i; k < n; k++) {
				const struct testdb_ref *q = &testdb_rows[k];
				if (q->file == r->file && !strcmp(q->part, r->part) &&
				    !strcmp(q->mode, r->mode) && q->run == it && ns < 4)
					smp[ns++] = (struct store_sample){q->metric, q->value, q->unit};
			}
			int64_t iid;
			if (ns && store_iteration_write(s, job, r->workload, it, 1.0, 0, smp, ns, NULL, 0,
							&iid, &e))
				return -1;
		}
		if (store_job_finish(s, job, "ok", &e))
			return -1;
	}
	return store_run_finish(s, runs[0], "complete", &e) || store_run_finish(s, runs[1], "complete", &e);
}

#endif
