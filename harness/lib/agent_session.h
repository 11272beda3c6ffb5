/*
 * agent_session.h - one invocation of emmclab-agent over a board's shell:
 * the command line, the protocol lines it prints, re-requests of lines whose
 * CRC failed (`emmclab-agent resend SEQ...`), and the end of the invocation.
 *
 * Every valid protocol message is handed to the caller in seq order, once:
 * duplicates (a resend of a line already held) are dropped, a line ahead of
 * a missing one is held until the gap is filled.  After the shell command
 * ends, missing seqs are re-requested up to AGENT_SESSION_RESEND_TRIES times
 * within the timeout; the session then ends with LAB_OK when a `done` line
 * with status=ok arrived and nothing is missing.
 *
 * Ownership and loop rules: the board (board.c) owns one session next to its
 * shell session and drives it only while no other shell operation runs; the
 * session borrows the shell for its lifetime.  agent_session_start returns at
 * once; the callbacks run later from the shell's loop callbacks, never from
 * inside agent_session_start.  A message passed to msg() is valid only during
 * the call.  shell_cancel() on the borrowed shell silences the session: no
 * callback follows, and the next start begins afresh.
 */
#ifndef EMMCLAB_AGENT_SESSION_H
#define EMMCLAB_AGENT_SESSION_H

#include <stdint.h>
#include "proto.h"

#define AGENT_SESSION_RESEND_TRIES 3

struct agent_session;
struct shell;

/* Why a session failed; the board maps these to its failure classes. */
enum agent_session_fail {
	AGENT_SESSION_OK,
	AGENT_SESSION_PANIC,    /* the kernel panicked while the agent ran */
	AGENT_SESSION_TIMEOUT,  /* the agent command did not finish in time */
	AGENT_SESSION_PROTOCOL, /* lines missing/corrupt beyond resend, no `done`, error status */
};

struct agent_session_cbs {
	/* every valid protocol message, in seq order */
	void (*msg)(const struct proto_msg *m, void *arg);
	/* progress worth an info event (a re-request) */
	void (*info)(const char *msg, void *arg);
	/* the end: rc LAB_OK or LAB_EINFRA with fail and msg; event, when not
	 * NULL, is an infrastructure event (of class fail) to record first */
	void (*done)(int rc, enum agent_session_fail fail, const char *msg, const char *event,
		     void *arg);
};

struct agent_session *agent_session_new(struct shell *sh);
void agent_session_free(struct agent_session *s);

/* Run `agent_path [--device block_device] args` on the shell within
 * timeout_ms (resends included).  LAB_EUSAGE when the shell is busy (no
 * callback follows then). */
int agent_session_start(struct agent_session *s, const char *agent_path, const char *block_device,
			const char *args, uint64_t timeout_ms, const struct agent_session_cbs *cbs,
			void *arg);

#endif
