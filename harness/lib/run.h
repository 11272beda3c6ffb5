/*
 * run.h - the runner: executes an expanded plan on the lab's boards, all at
 * once on one loop, and stores every verified sample.
 *
 * Per board it walks the board's slots (plan.h): boot into the slot's mode
 * (the mode recipe on the kernel command line plus sysfs writes), identify
 * the part, verify the mode on the DUT, optionally precondition, then run
 * every workload of the suite through the agent and store each iteration
 * atomically.  A sample is stored only after the mode was verified; a
 * reliable-write count that contradicts the mode discards the iteration
 * and marks the job mode-mismatch.  Infrastructure failures are events;
 * a slot is retried once after a power cycle, then its job is given up.
 * SIGINT/SIGTERM stop cleanly: finished iterations stay, nothing is half-written.
 */
#ifndef EMMCLAB_RUN_H
#define EMMCLAB_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "config.h"
#include "store.h"

struct progress;

struct run_opts {
	FILE *log;                  /* progress lines (NULL: silent) */
	bool verbose;
	const char *transcript_dir; /* default: lab transcripts or results/transcripts */
	int slot_retries;           /* retries of a failed slot (default 1) */
	struct progress *progress;  /* stages, live view, JSON log, progress file (NULL: log only) */
	const char *resume;         /* run --resume: NULL a new run, "" the latest unfinished one, else id/uuid */
};

struct run_result {
	int64_t run_id;
	int jobs, jobs_ok, jobs_infra, jobs_mismatch, jobs_skipped;
	int iterations, samples, events;
	int boards_quarantined;
	int integrity_failures; /* power-fail iterations that lost acknowledged records */
	bool aborted;
	bool budget_exhausted;
	uint64_t wall_ms;
	uint64_t store_busy_ms;     /* time writes waited for another process's database lock */
	int store_busy_waits;
};

int run_plan(struct lab_cfg *lab, struct store *s, const struct run_opts *o, struct run_result *res,
	     struct lab_err *e);

#endif
