/*
 * powerfail.h - one iteration of the power-fail workload as a named state
 * machine.  The controller drives it, because the controller owns the power:
 *
 *   idle -start-> writing -written | cut timer-> power cut -powered_off->
 *   boot after the cut -booted-> mode verification after the cut -verified->
 *   check -checked-> idle
 *
 * writing: `powerfail-write` appends fsync'd records and acknowledges each
 * (powerfail_ack); at a seeded random moment (powerfail_cut_ms), or when the
 * writer finished first, the power is cut under the writer; acknowledgements
 * that arrive until the power is off and the console drained still count
 * (the DUT printed them before it lost power).  The
 * board boots the same mode again, the runner verifies the mode, and
 * `powerfail-check acked=N` counts what survived.  Lost or corrupt
 * acknowledged records are the result, not an infrastructure error.  Any
 * failure (powerfail_fail, or a hook that refuses) ends the iteration in the
 * phase it happened in: the failed hook gets "powerfail <phase>: <why>".
 *
 * Ownership and loop rules: the runner (run.c) owns one struct powerfail per
 * board and does the I/O through the hooks; each hook that starts something
 * returns at once and its end is fed back as the named transition on a later
 * loop pass.  The machine owns its cut timer and its copies of the agent
 * arguments.  A transition called in a phase it does not belong to is ignored
 * (a writer that ends after the cut, for example).
 */
#ifndef EMMCLAB_POWERFAIL_H
#define EMMCLAB_POWERFAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "board.h"
#include "loop.h"

enum powerfail_phase {
	POWERFAIL_IDLE,
	POWERFAIL_WRITING,   /* powerfail-write runs, acknowledgements stream */
	POWERFAIL_CUTTING,   /* the writer abandoned, the power going off */
	POWERFAIL_BOOTING,   /* booting the same mode again */
	POWERFAIL_VERIFYING, /* the agent reports the mode the DUT runs */
	POWERFAIL_CHECKING,  /* powerfail-check counts the surviving records */
	POWERFAIL_PHASE_COUNT
};
/* "idle", "write", "power cut", "boot after the cut", ... (used in messages) */
const char *powerfail_phase_name(enum powerfail_phase p);

struct powerfail_hooks {
	/* Start `emmclab-agent args`; its end is powerfail_written, the runner's
	 * mode check (then powerfail_verified or powerfail_fail) or powerfail_checked. */
	int (*agent)(void *arg, const char *args, uint64_t timeout_ms);
	/* Abandon the writer and switch the power off; ends in powerfail_powered_off. */
	int (*power_off)(void *arg);
	/* Boot the job's mode again; ends in powerfail_booted. */
	int (*boot)(void *arg);
	/* The error line of the agent invocation in flight ("" when none): it is
	 * the better reason for a failure, and a writer or check that sent one failed. */
	const char *(*agent_error)(void *arg);
	/* The iteration failed: kind is an event kind (board_fail_name or "agent-protocol"). */
	void (*failed)(void *arg, const char *kind, const char *msg);
	/* The iteration's result, counted by powerfail-check. */
	void (*checked)(void *arg, int64_t acked, int64_t lost, int64_t corrupt);
};

/* What one iteration runs with. */
struct powerfail_iteration {
	int iteration;
	uint64_t cut_ms;           /* after how long the power is cut (powerfail_cut_ms) */
	uint64_t agent_timeout_ms; /* for powerfail-write and powerfail-check */
	const char *write_args;    /* the workload's own arguments (" k=v..."), shell-quoted */
	const char *check_args;    /* the same for powerfail-check */
	const char *verify_args;   /* the mode verification command ("mode expect=MODE") */
};

struct powerfail {
	struct loop *loop;
	const struct powerfail_hooks *hooks;
	void *arg;
	enum powerfail_phase phase;
	int iteration;
	int64_t acked; /* highest acknowledged record so far */
	uint64_t agent_timeout_ms;
	char *check_args, *verify_args;
	struct loop_timer timer;
};

void powerfail_init(struct powerfail *pf, struct loop *l, const struct powerfail_hooks *hooks,
		    void *arg);
/* Stop (no hook is called) and free what the machine holds. */
void powerfail_fini(struct powerfail *pf);
enum powerfail_phase powerfail_phase(const struct powerfail *pf);

/* When to cut: reproducible from the suite's seed, the board, the iteration
 * and the attempt, uniform in [lo_ms, hi_ms] (hi below lo counts as lo). */
uint64_t powerfail_cut_ms(int64_t suite_seed, size_t board, int iteration, int attempt,
			  uint64_t lo_ms, uint64_t hi_ms);

/* ---- transitions ---- */
/* idle -> writing: starts powerfail-write and the cut timer. */
void powerfail_start(struct powerfail *pf, const struct powerfail_iteration *it);
/* An `acked` counter while writing or cutting: true when the machine took it. */
bool powerfail_ack(struct powerfail *pf, int64_t seq);
/* writing -> power cut: the writer finished before the timer (or failed). */
void powerfail_written(struct powerfail *pf, int rc, enum board_fail fail, const char *msg);
/* power cut -> boot after the cut */
void powerfail_powered_off(struct powerfail *pf, int rc, const char *msg);
/* boot after the cut -> mode verification after the cut */
void powerfail_booted(struct powerfail *pf, int rc, enum board_fail fail, const char *msg);
/* mode verification after the cut -> check: the runner found the job's mode. */
void powerfail_verified(struct powerfail *pf);
/* check -> idle: the check's counters (-1 when missing). */
void powerfail_checked(struct powerfail *pf, int rc, enum board_fail fail, const char *msg,
		       int64_t acked, int64_t lost, int64_t corrupt);
/* any phase -> idle, reported through the failed hook. */
void powerfail_fail(struct powerfail *pf, int rc, enum board_fail fail, const char *msg);
/* any phase -> idle, nothing reported (the runner ended the job itself). */
void powerfail_stop(struct powerfail *pf);

#endif
