/*
 * compare.h - two-group comparisons over the results model.
 *
 * A comparison varies one dimension (mode, part, kernel, run, or baseline
 * runs vs one run) and holds the others fixed; the fixed ones form the row's
 * context.  Dimensions that are neither compared nor in the context are
 * pooled (documented per `by` in docs/reports.md):
 *   by mode:     context part, board, kernel, workload, metric; runs pooled.
 *   by part:     context mode, workload, metric; boards, kernels, runs pooled.
 *   by kernel:   context part, mode, workload, metric; boards, runs pooled.
 *   by run:      context part, board, kernel, mode, workload, metric.
 *   by baseline: context part, mode, workload, metric; a = the baseline runs
 *                pooled, b = the run under test (boards and kernels pooled).
 * Runs of different sources (lab, virtual, simulated, imported: results.h)
 * are never pooled unless pool_sources: the source is part of every context.
 * Rows keep pointers into the struct results they were built from: free the
 * comparison before the results.
 */
#ifndef EMMCLAB_COMPARE_H
#define EMMCLAB_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "results.h"
#include "stats.h"
#include "util.h"

enum compare_by { COMPARE_BY_MODE, COMPARE_BY_PART, COMPARE_BY_KERNEL, COMPARE_BY_RUN,
		  COMPARE_BY_BASELINE };
const char *compare_by_name(enum compare_by by);
int compare_by_parse(const char *s, enum compare_by *by); /* LAB_EUSAGE when unknown */

struct compare_opts {
	enum compare_by by;
	double alpha;        /* default 0.05 */
	double min_effect;   /* fraction, default 0.01 */
	const char *a, *b;   /* the compared values (mode name, part label, kernel, run id); NULL: defaults */
	bool exclude_warmup; /* drop flagged warm-up values before testing */
	bool pool_sources;   /* pool runs of different sources (default: a context each) */
	const int64_t *base_runs; /* COMPARE_BY_BASELINE: the baseline runs */
	size_t nbase_runs;
	int64_t test_run;         /* COMPARE_BY_BASELINE: the run under test */
	int threads; /* the rows' builders: 0 automatic (two from 512 contexts on), 1, 2 */
};
void compare_opts_init(struct compare_opts *o);

struct compare_side {
	const char *label;  /* e.g. "fua", a part label, a kernel, "run 12", "baseline" */
	double *v;          /* values tested (warm-ups removed when excluded) */
	size_t n;
	size_t nwarmup;     /* flagged warm-up values seen (excluded or not) */
	const char *unit;
	struct stats_desc d;
	bool warmup_excluded;
	bool mixed_units;   /* groups with different units fell into this side */
};

struct compare_row {
	size_t part;        /* index into results.parts, (size_t)-1 when pooled (by part) */
	const char *part_label;
	const char *board, *kernel, *mode; /* "" when pooled or compared */
	const char *workload, *metric, *unit;
	int direction;      /* stats_direction */
	const char *source; /* the runs' kind (results_source_kind), "pooled" when several */
	const char *provenance; /* simulated: "fitted to published data" or "assumed (no published data)"; else "" */
	/* a and b: never NULL; shared by every row that compares the same data
	 * (compare_free frees them) */
	const struct compare_side *a, *b;
	struct stats_cmp cmp;
};

/* The 2x2 of by-mode comparisons, from the mode table: the FUA effect
 * (a = a FUA mode, b = the same without FUA) under each CQE setting, then
 * the CQE effect (a = CQE off, b = the same with CQE) under each FUA
 * setting.  Returns the number of pairs (at most 2 * MODE_COUNT). */
struct compare_mode_pair {
	int a, b;
	bool cqe; /* a CQE-effect pair */
};
size_t compare_mode_pairs(struct compare_mode_pair *out, size_t max);

/* Does the CQE change the FUA effect?  For a context with all four cells:
 * R = (mean b / mean a with CQE) / (mean b / mean a without CQE), a = the
 * FUA mode, b = without FUA.  ln R has the delta-method variance
 * sum(s_i^2 / (n_i m_i^2)); its CI and the two-sided p of ln R = 0 use a
 * t with Welch-Satterthwaite df (docs/reports.md). */
struct compare_interaction {
	size_t row_off, row_on; /* the FUA-effect rows without / with CQE */
	double ratio, lo, hi;   /* R and its CI at 1 - alpha; NaN when untestable */
	double diff;            /* change with CQE minus change without (fractions) */
	double df, p;
};

struct compare_result {
	struct compare_opts opts;
	struct compare_row *rows;
	size_t nrows;
	struct compare_interaction *inter; /* by mode without --a/--b only */
	size_t ninter;
	size_t nbetter, nworse, nnodiff, nnotest, nchanged;
	unsigned builders; /* the threads that built the rows (compare_opts.threads) */
	void *priv; /* the value arrays the rows point into */
};

int compare_build(const struct results *r, const struct compare_opts *o,
		  struct compare_result **out, struct lab_err *e);
void compare_free(struct compare_result *c);

#endif
