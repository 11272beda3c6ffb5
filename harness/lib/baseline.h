/*
 * baseline.h - named regression baselines and the nightly regression check.
 *
 * A baseline is either a pinned run (kind "run") or "the last N complete
 * runs before the run under test" (kind "last-n").  The check compares the
 * run against the baseline runs pooled, per part, mode, workload and metric
 * (boards and kernels pooled: a new kernel is what a regression check is
 * for), and counts significant changes for the worse beyond the threshold.
 * Library code: writes only to the FILE * the caller passes; never prints.
 */
#ifndef EMMCLAB_BASELINE_H
#define EMMCLAB_BASELINE_H

#include <stdint.h>
#include <stdio.h>
#include "compare.h"
#include "results.h"
#include "store.h"
#include "util.h"

#define BASELINE_DEFAULT "default"
#define REGRESS_DEFAULT_THRESHOLD 0.02 /* 2%: nightly noise between boots exceeds 1% */

struct baseline_info {
	int64_t id;
	char name[64];
	char kind[16];   /* "run" | "last-n" */
	int64_t run_id;  /* kind run */
	int last_n;      /* kind last-n */
	char set_at[32];
};

/* Exactly one of run_id (> 0) and last_n (> 0).  Replaces a baseline of that name. */
int baseline_set(struct store *s, const char *name, int64_t run_id, int last_n, struct lab_err *e);
/* LAB_EUSAGE with a hint when there is no such baseline. */
int baseline_get(struct store *s, const char *name, struct baseline_info *bi, struct lab_err *e);
/* Every baseline, by name; caller frees *out. */
int baseline_list(struct store *s, struct baseline_info **out, size_t *n, struct lab_err *e);

struct regress_opts {
	double alpha;          /* default 0.05 */
	double threshold;      /* minimum relative change counted, default REGRESS_DEFAULT_THRESHOLD */
	bool exclude_warmup;
};
void regress_opts_init(struct regress_opts *o);

/* Load baseline + run and compare them.  *res and *cmp are the caller's
 * (compare_free first, then results_free).  *base_runs (may be NULL) gets the
 * resolved baseline run ids, caller frees. */
int regress_build(struct store *s, int64_t run_id, const char *baseline,
		  const struct regress_opts *o, struct results **res, struct compare_result **cmp,
		  int64_t **base_runs, size_t *nbase, struct lab_err *e);

/* The call `run` makes after a night: *nregress = significant regressions;
 * one line per regression and a closing count go to `summary` (may be NULL). */
int regress_check(struct store *s, int64_t run_id, const char *baseline, int *nregress,
		  FILE *summary, struct lab_err *e);

#endif
