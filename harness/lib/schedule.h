/*
 * schedule.h - the schedule of an expanded plan as a person reads it (`run
 * --dry-run`), with how long it should take from past runs.
 *
 * Estimates (per job, i.e. board type x suite x mode):
 *   a slot = the sum over the suite's workloads of the median iteration
 *   duration of (board type, suite, mode, workload), plus the median per-slot
 *   overhead of that type and suite (boots, identification, mode checks: a
 *   board's wall time in a past run minus its iterations, per slot).  When
 *   past iterations took longer than the boards' wall time (the simulator
 *   reports durations in its virtual time), the median wall time per slot of
 *   the type and suite is used instead.  No past run of the type and suite:
 *   "no history".
 *   A board = the sum of its slots; the run = boards in parallel (at most
 *   plan.parallel at a time, each next board taking the first free place).
 * Under plan.budget, the slots that would start after the budget are listed
 * as dropped (the lowest priority come last in each board's order, so they
 * are the ones dropped).
 *
 * The store may be NULL (no database yet): every estimate is then "no history".
 */
#ifndef EMMCLAB_SCHED_H
#define EMMCLAB_SCHED_H

#include <stdio.h>
#include "config.h"
#include "plan.h"
#include "store.h"

struct schedule_job_est {
	double slot_s;   /* estimated seconds per slot (iteration); < 0: no history */
	int64_t samples; /* past iterations or board schedules it rests on */
	bool wall;       /* from board wall time per slot (virtual iteration durations) */
};

struct schedule_est {
	struct schedule_job_est *jobs; /* per plan job */
	double *board_s;               /* per plan board; < 0 when a job of it has no history */
	double total_s;                /* < 0: not every board has an estimate */
	size_t *dropped;               /* per plan board: slots that would start after the budget */
};

int schedule_estimate(const struct lab_cfg *lab, const struct plan *p, struct store *s,
                      struct schedule_est *out, struct lab_err *e);
void schedule_est_free(struct schedule_est *est);

/* The schedule: per board its jobs (mode, priority, iterations, estimate) and
 * its slot order; then the run's estimate against the budget. */
void schedule_print(FILE *f, const struct lab_cfg *lab, const struct plan *p,
                    const struct schedule_est *est);

/* ---- shared limited resources (lab `resources:`, board `uses:`) ----
 * A counting semaphore per resource, in the run loop.  A board takes every
 * resource its `uses:` names for a stage at once, or none (then it queues, in
 * order of arrival; a later request that fits may pass an earlier one that
 * does not).  Stages: `boot` (power on, deploy -- TFTP, flashing --, boot to a
 * shell; released once booted) and `test` (the workloads of one slot).  A
 * board never holds one stage's resources while it waits for the other's, so
 * the queue cannot deadlock.  Loop thread only; grants are deferred calls. */
struct loop;
struct schedule_res;

extern const char *const schedule_stage_names[]; /* "boot", "test" */

/* Check lab->resources and every board's uses (errors name file:line:col);
 * *out is NULL when the lab declares no resources. */
int schedule_res_new(const struct lab_cfg *lab, struct schedule_res **out, struct lab_err *e);
void schedule_res_free(struct schedule_res *r);
/* Board (index into lab->boards) wants stage's resources: true when it holds
 * them (now or already); false: queued, grant(arg) is called from the loop
 * once they are its, and waiting (n bytes) names one it waits for. */
bool schedule_res_acquire(struct schedule_res *r, struct loop *l, size_t board, const char *stage,
                          void (*grant)(void *arg), void *arg, char *waiting, size_t n);
/* Give back what board holds for stage (NULL: every stage, and leave the queue). */
void schedule_res_release(struct schedule_res *r, struct loop *l, size_t board, const char *stage);
/* For the dry run and tests: how many hold resource name now (-1: no such resource). */
int schedule_res_used(const struct schedule_res *r, const char *name);
/* Print the resources and their users (dry run). */
void schedule_res_print(FILE *f, const struct lab_cfg *lab);

#endif
