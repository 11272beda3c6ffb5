/*
 * plan.h - expanding a plan into per-board schedules of slots.
 *
 * A job is (board, kernel, suite, mode); a slot is one iteration of a job:
 * every workload of the suite runs once in it.  Each board gets its own
 * ordered list of slots; consecutive slots of the same job share a boot,
 * and a mode change always means a reboot (the mode is on the kernel
 * command line).  Orders (suite `order`):
 *   interleave  A1 B1 C1 D1 A2 B2 ...  (cancels drift; a boot per slot)
 *   random      each round shuffled with the suite's seed (xorshift, deterministic)
 *   sequential  A1..An B1..Bn ...      (one boot per mode)
 * The plan's `order` and `seed`, when set, replace every suite's.  The
 * plan's `priorities` (suite -> integer, default 0) order the (kernel, suite)
 * groups of each board, highest first (stable: ties keep the plan's order),
 * so what a spent budget drops is the lowest priority.
 * Modes the board type does not support are left out and reported.
 * Pure functions: no I/O, unit-tested.
 */
#ifndef EMMCLAB_PLAN_H
#define EMMCLAB_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"

struct plan_job {
	size_t board;                  /* index into lab->boards */
	const struct kernel_cfg *kernel; /* NULL: the board boots what it has */
	const struct suite_cfg *suite;
	int mode;                      /* enum lab_mode */
	int iterations;
	int priority;                  /* the plan's priorities: for the suite */
	int64_t db_id;                 /* filled by the runner */
	int status;                    /* runner bookkeeping */
	int done_iterations;
	int failures;
	uint64_t started_ns;           /* runner: first slot started (timeouts.job) */
	int health_before;             /* runner: 1 once the part's wear before the job is stored */
};

struct plan_slot {
	size_t job;      /* index into plan->jobs */
	int iteration;   /* 1-based */
	int reboot;      /* 1: needs a (re)boot before it */
	int precondition; /* 1: run the suite's precondition before it (first slot of a suite on a board) */
};

struct plan_board {
	size_t board;            /* index into lab->boards */
	struct plan_slot *slots;
	size_t nslots;
};

struct plan {
	struct plan_job *jobs;
	size_t njobs;
	struct plan_board *boards;
	size_t nboards;
	char **notes;            /* "dut1: mode fua-cqe not supported by type sdhci-sprd (skipped)" */
	size_t nnotes;
};

/* The order and seed a suite's slots get under this plan (plan overrides). */
int plan_suite_order(const struct plan_cfg *pl, const struct suite_cfg *s);
int64_t plan_suite_seed(const struct plan_cfg *pl, const struct suite_cfg *s);
extern const char *const plan_order_label[]; /* "interleave", "random", "sequential" */

/* Expand lab->plan (which must be set).  Errors: unknown board/tag, no suites,
 * a priorities entry that is not a plan suite or not an integer (file:line:col). */
int plan_expand(const struct lab_cfg *lab, struct plan **out, struct lab_err *e);
void plan_free(struct plan *p);

#endif
