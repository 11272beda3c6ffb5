/*
 * results.h - the results model: samples loaded from the store into groups.
 *
 * A group is one (run, part, board, kernel, mode, workload, metric, unit)
 * series, values in iteration order.  Imported data has no board or kernel:
 * those fields are "" (never NULL).  Strings are interned and owned by the
 * struct results; everything is freed by results_free().  Samples of jobs
 * whose verified mode differs from the requested one are never loaded (they
 * are infrastructure errors, counted in the run's job counts).
 *
 * Where each value was measured (schema 8): every value's iteration has an
 * origin, origins[0] being a local one; a group whose values all ran locally
 * has no origin array (the common case costs nothing).
 *
 * Warm-up: per group, the first value (lowest iteration) is flagged when
 * stats_warmup() says so, or when the store marked its iteration as warm-up.
 * Flags are always computed; excluding them is the consumer's choice.
 *
 * Read-only on the store; no printing.  Not thread-safe (one loop thread).
 */
#ifndef EMMCLAB_RESULTS_H
#define EMMCLAB_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "util.h"

struct results_run {
	int64_t id;
	const char *uuid, *plan, *lab, *source, *started_at, *finished_at, *status;
	const char *kind;  /* results_source_kind(source): static */
	int jobs_total, jobs_ok, jobs_infra, jobs_mismatch, jobs_skipped, jobs_other;
	int events_infra;  /* events whose kind is not "info" */
	int events_mismatch; /* events of kind mode-mismatch */
	size_t nsamples;   /* loaded samples (after filters) */
};

struct results_part {
	int64_t id;
	const char *label, *cid; /* cid "" when unknown (imported) */
	struct store_health_sum health; /* its wear readings (health.n == 0: none) */
};

struct results_event {
	int64_t run_id, job_id;
	const char *at, *kind, *stage, *board, *message;
};

/* Where one iteration ran (iteration.executor, job_url, worker; docs/lava.md). */
struct results_origin {
	const char *executor;         /* "local" or "lava" */
	const char *job_url, *worker; /* the LAVA job's page and worker; NULL locally */
};

struct results_group {
	size_t run;      /* index into runs[] */
	size_t part;     /* index into parts[] */
	const char *board, *kernel, *mode, *suite, *workload, *metric, *unit;
	double *v;
	int *iter;                /* iteration number of each value */
	unsigned char *warm;      /* 1 when that value is a flagged warm-up */
	uint32_t *origin;         /* index into origins[] of each value; NULL: all local */
	size_t n, cap;
	double warmup_dev;        /* relative deviation of the first value (NaN if not computed) */
	int direction;            /* stats_direction(metric, unit) */
	bool sysfs_only;          /* a job's mode was proved by sysfs alone (job.verified_by) */
	bool worn;                /* a job's part was past its health thresholds (job.health_flag) */
};

struct results {
	struct results_run *runs;       /* ordered by started_at, then id */
	size_t nruns;
	struct results_part *parts;     /* ordered by label */
	size_t nparts;
	struct results_group *groups;   /* ordered: part, board, kernel, workload, metric, mode, run */
	size_t ngroups;
	struct results_event *events;   /* of the loaded runs, by time; capped at RESULTS_MAX_EVENTS */
	size_t nevents;
	size_t nevents_dropped;
	size_t nsamples;
	struct results_origin *origins; /* [0]: local; then one per non-local iteration loaded */
	size_t norigins;
	void *priv;                     /* string pool and indexes */
};

#define RESULTS_MAX_EVENTS 10000

struct results_filter {
	int64_t run_id;        /* 0: any run */
	const int64_t *run_ids; /* optional explicit set (used when nrun_ids > 0) */
	size_t nrun_ids;
	int64_t upto_run;      /* with last_runs: the last_runs runs started at or before this one */
	size_t last_runs;      /* 0: no limit */
	bool complete_only;    /* only runs with status complete (and imports) */
	const char *part, *board, *kernel, *mode, *suite, *workload, *metric, *source; /* source: as stored or its kind */
	const int64_t *part_ids; /* optional: only jobs on these parts (used when npart_ids > 0) */
	size_t npart_ids;
	bool values_only;      /* no part health readings, no worn or sysfs-only flags (trends) */
};

/* Parse "FIELD=VALUE" (field: run, part, board, kernel, mode, suite, workload,
 * metric, source) into f; the strings point into `arg`, which must outlive f. */
int results_filter_add(struct results_filter *f, char *arg, struct lab_err *e);

int results_load(struct store *s, const struct results_filter *f, struct results **out,
		 struct lab_err *e);
void results_free(struct results *r);

/* Provenance (docs/reports.md): what a run's figures are, from its source:
 * "lab", "virtual", "simulated", "mixed" or "imported" (static strings, so
 * equal kinds are equal pointers). */
const char *results_source_kind(const char *source);
/* One line naming the kinds of the loaded runs when any is not "lab", e.g.
 * "source: simulated - figures from the simulator's model, not measurements";
 * "" when every run is a lab run.  Returns buf. */
const char *results_source_banner(const struct results *r, char *buf, size_t n);
/* The marker of one simulated figure (part, workload, mode, metric): "fitted to
 * published data" or "assumed (no published data)"; "" for any other kind. */
const char *results_provenance(const struct results *r, const char *kind, size_t part,
			       const char *workload, const char *mode, const char *metric);

/* Where value k of group g was measured (never NULL). */
const struct results_origin *results_value_origin(const struct results *r,
						  const struct results_group *g, size_t k);

/*
 * Trends over nights: per part, workload, metric, unit and mode, the sum and
 * count of each night's values (boards, kernels and suites of the part
 * pooled), for the first max_parts parts by label of the night under report.
 * Accumulated one loaded night at a time, so a report over 90 nights of a
 * large lab holds one night's samples at most (not all 90 at once).
 */
struct results_trend_run {
	int64_t id;
	const char *started_at;
};
struct results_trend_part {
	int64_t id;
	const char *label;
};
struct results_trend_point {
	size_t part;          /* index into parts (label order) */
	size_t run;           /* index into runs (date order) */
	const char *workload, *metric, *unit, *mode;
	double sum, sum_kept; /* every value; the values not flagged as warm-ups */
	size_t n, n_kept;
};
struct results_trend {
	struct results_trend_run *runs;
	size_t nruns;
	struct results_trend_part *parts;
	size_t nparts;
	size_t nparts_seen;   /* parts of the night under report (parts holds the first max_parts) */
	struct results_trend_point *pts; /* unordered */
	size_t npts;
	void *priv;
};
/* The nights f selects (f->upto_run, f->last_runs, f->source; the
 * sample filters apply to every night), loaded one at a time; cur is the
 * night under report already loaded (its parts are the ones trended; reused
 * instead of loaded again). */
int results_trend_load(struct store *s, const struct results_filter *f, const struct results *cur,
		       size_t max_parts, struct results_trend **out, struct lab_err *e);
/* The same from data already loaded (every run of r). */
struct results_trend *results_trend_of(const struct results *r, size_t max_parts);
void results_trend_free(struct results_trend *t);

/* The mode's row in the mode table (mode.h); other modes sort after them. */
int results_mode_rank(const char *mode);
/* Modes in that order, other modes by name after them. */
int results_mode_cmp(const char *a, const char *b);
const struct results_run *results_run_by_id(const struct results *r, int64_t id);
/* Id of the newest run in the store (by started_at), 0 when none. */
int results_latest_run(struct store *s, int64_t *run_id, struct lab_err *e);

#endif
