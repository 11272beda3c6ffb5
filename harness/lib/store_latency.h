/*
 * store_latency.h - the per-request latency histograms of the store, summed
 * per (source kind, part, workload, mode, operation) for the reports' CDFs.
 *
 * The agent's `latency` lines are stored as counters of their iteration,
 * rq_<op>_lat_b<k> = requests in lathist bucket k (harness/common/lathist.h;
 * docs/schema.md): they ride the journal, merge and export like every counter.
 * Their percentiles are ordinary samples (rq_write_lat_p99_us, ...).
 * Ownership: store_lathist_free() frees what store_lathist_load() returned.
 */
#ifndef EMMCLAB_STORE_LATENCY_H
#define EMMCLAB_STORE_LATENCY_H

#include <stddef.h>
#include <stdint.h>
#include "lathist.h"
#include "results.h"
#include "store.h"
#include "util.h"

struct store_lathist {
	char *source; /* results_source_kind(): lab, virtual, simulated, imported */
	char *part;   /* part label */
	char *workload;
	char *mode; /* the job's (verified) mode */
	char *op;   /* write | flush */
	uint64_t n; /* requests */
	uint64_t counts[LATHIST_BUCKETS];
};

/* The histograms of ok jobs of run_id (0: every run), narrowed by f's part,
 * board, kernel, mode, suite, workload and source (NULL: no filter; f's
 * metric does not apply: every histogram is of the rq_* latencies), without
 * warm-up iterations
 * when exclude_warmup.  Sorted by part, workload, source, mode (lab_modes
 * order), op. */
int store_lathist_load(struct store *s, int64_t run_id, const struct results_filter *f,
                       bool exclude_warmup, struct store_lathist **out, size_t *n,
                       struct lab_err *e);
void store_lathist_free(struct store_lathist *h, size_t n);
/* Keep the first keep of the *n histograms, free the others. */
void store_lathist_truncate(struct store_lathist **h, size_t *n, size_t keep);

#endif
