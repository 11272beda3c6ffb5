/*
 * board.h - one board as a state machine on the loop:
 *   off -> powering -> bootloader -> (deploy) -> booting -> shell -> running -> powering-off
 * with a time budget per stage, classification of every failure, retries
 * with a power cycle, and health (quarantine after N consecutive failures).
 *
 * The runner (run.c) drives boards only through this API; nothing here
 * knows whether a board is real, simulated or virtual.  All calls return at
 * once; completion callbacks run later on the loop, never re-entrantly.
 * One operation at a time per board (LAB_EUSAGE if busy).
 */
#ifndef EMMCLAB_BOARD_H
#define EMMCLAB_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "loop.h"
#include "proto.h"
#include "util.h"

struct board;

enum board_state {
	BOARD_OFF, BOARD_POWERING, BOARD_BOOTLOADER, BOARD_DEPLOY, BOARD_BOOTING, BOARD_SHELL,
	BOARD_RUNNING, BOARD_POWERING_OFF, BOARD_QUARANTINED, BOARD_STATE_COUNT
};
const char *board_state_name(enum board_state s);

/* Failure classes (stored as event.kind). */
enum board_fail {
	FAIL_NONE,
	FAIL_POWER,            /* power driver failed */
	FAIL_NO_CONSOLE,       /* console could not be opened / lost past its reconnect window while on */
	FAIL_NO_OUTPUT,        /* no console output after power-on */
	FAIL_BOOTLOADER_HANG,  /* no prompt / autoboot interrupt failed / U-Boot stopped answering */
	FAIL_DEPLOY,           /* deploy/flash method failed */
	FAIL_KERNEL_PANIC,     /* "Kernel panic" / oops during boot or run */
	FAIL_BOOT_TIMEOUT,     /* kernel started but no login/shell within the budget */
	FAIL_LOGIN_TIMEOUT,    /* login prompt seen but no shell after logging in */
	FAIL_COMMAND_TIMEOUT,  /* a shell command did not finish in time */
	FAIL_AGENT_PROTOCOL,   /* agent lines missing/corrupt beyond resend, or no `done` */
	FAIL_MODE_MISMATCH,    /* verified mode differs from the requested one */
	FAIL_QUARANTINED,      /* board is quarantined: not tried */
	FAIL_AUTOBOOT,         /* U-Boot booted by itself (bootdelay 0/-2) where a deploy needed its prompt */
	FAIL_COUNT
};
const char *board_fail_name(enum board_fail f); /* "power", "no-output", "bootloader-hang", ... */

struct board_events {
	/* state changes (for status displays/logging); may be NULL */
	void (*state)(struct board *b, enum board_state s, void *arg);
	/* infrastructure events to record: kind = board_fail_name() or "retry"/"quarantine"/"info" */
	void (*event)(struct board *b, const char *kind, const char *stage, const char *msg, void *arg);
	/* a transcript was closed (one per boot): path, sha256, bytes, boot number */
	void (*transcript)(struct board *b, const char *path, const char *sha256, uint64_t bytes,
			   int boot_n, void *arg);
};

int board_new(struct loop *l, const struct lab_cfg *lab, const struct board_cfg *cfg,
	      const struct board_events *ev, void *arg, struct board **out, struct lab_err *e);
void board_free(struct board *b);
const char *board_name(const struct board *b);
const struct board_cfg *board_cfg(const struct board *b);
enum board_state board_get_state(const struct board *b);
bool board_quarantined(const struct board *b);
int board_failures(const struct board *b); /* consecutive health failures */

typedef void (*board_done_cb)(struct board *b, int rc, enum board_fail fail, const char *msg,
			      void *arg);

/* Power on (or cycle), stop in U-Boot when the deploy needs it, deploy, boot
 * `kernel` with its cmdline + extra_cmdline, log in and reach a shell with a
 * unique prompt, push the agent if missing.  Retries with a power cycle up
 * to the type's `retries`; each failed attempt is an event.  transcript_dir:
 * where per-boot transcripts go.  Success: rc LAB_OK, state BOARD_SHELL. */
int board_boot(struct board *b, const struct kernel_cfg *kernel, const char *extra_cmdline,
	       const char *transcript_dir, board_done_cb cb, void *arg);

/* Run a shell command; output is what it printed (between markers). */
typedef void (*board_cmd_cb)(struct board *b, int rc, int exit_status, const char *out,
			     size_t len, void *arg);
int board_shell(struct board *b, const char *cmd, uint64_t timeout_ms, board_cmd_cb cb, void *arg);

/* Run `emmclab-agent <args>` (the session: agent_session.h): every valid
 * protocol message goes to msg_cb in seq order (corrupted lines re-requested
 * with `resend`, duplicates dropped); done_cb after the `done` line (rc LAB_OK
 * when status=ok and no line missing). */
typedef void (*board_msg_cb)(struct board *b, const struct proto_msg *m, void *arg);
int board_agent(struct board *b, const char *args, uint64_t timeout_ms, board_msg_cb msg_cb,
		board_done_cb done_cb, void *arg);

/* Write a small file on the DUT (chunked base64 + sha256 check). */
int board_put_file(struct board *b, const char *local_path, const char *remote_path,
		   board_done_cb cb, void *arg);

/* Power off (clean `poweroff -f` is not attempted: the lab cuts power). */
int board_power_off(struct board *b, board_done_cb cb, void *arg);
/* Abort whatever is in flight (shutdown, a power cut too); no callback follows. */
void board_abort(struct board *b);

/* Health bookkeeping used by the runner: a job's infra failure counts. */
void board_health_fail(struct board *b, const char *why);
void board_health_ok(struct board *b);

/* ---- additions for `emmclab board` and the runner (H6b) ---- */
struct console;
/* The board's console (created by board_new, opened on first use). */
struct console *board_console(struct board *b);
/* Open the console without booting (interactive use) and start a transcript in
 * transcript_dir (NULL: the lab's); closed by board_power_off/board_free. */
int board_console_open(struct board *b, const char *transcript_dir, struct lab_err *e);
/* Every byte received from the console, after the transcript (interactive console). */
typedef void (*board_tap_cb)(struct board *b, const char *buf, size_t n, void *arg);
void board_set_tap(struct board *b, board_tap_cb tap, void *arg);
/* Power without booting (`emmclab board NAME power on|off|cycle|state`): power_op is
 * an enum power_op (power.h); cb gets rc, the power state (enum power_state) and a message. */
typedef void (*board_power_cb)(struct board *b, int rc, int state, const char *msg, void *arg);
int board_power(struct board *b, int power_op, board_power_cb cb, void *arg);
/* Cut the power under a running agent command (the power-fail test): the
 * command's messages keep reaching its msg_cb while the power driver works
 * and, once the power is off, until the console has been quiet for
 * BOARD_CUT_QUIET_MS (at most BOARD_CUT_DRAIN_MAX_MS): what the DUT printed
 * before it lost power still arrives.  The command is then abandoned (its
 * done_cb is not called after cb) and cb runs as for board_power.  With no
 * command running it is a power-off without the drain.  Either way the
 * boot's transcript is marked and closed. */
#define BOARD_CUT_QUIET_MS 250
#define BOARD_CUT_DRAIN_MAX_MS 5000
int board_power_cut(struct board *b, board_power_cb cb, void *arg);
/* Each step of a boot as it happens (`emmclab board NAME boot --explain`): what is
 * "step" (a stage starts), "waits for" (pattern and budget), "types" (a U-Boot line),
 * "matched" (what came) or "failed"; the U-Boot session's own steps are included
 * ("U-Boot: ..."). NULL turns it off. */
typedef void (*board_trace_cb)(struct board *b, const char *what, const char *detail, void *arg);
void board_set_trace(struct board *b, board_trace_cb cb, void *arg);
/* Restore persisted health (failures so far, quarantined) when a run starts. */
void board_health_restore(struct board *b, int failures, bool quarantined);
/* Boots started (= transcripts written) so far. */
int board_boot_count(const struct board *b);

#endif
