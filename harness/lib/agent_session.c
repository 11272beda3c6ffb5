/*
 * agent_session.c - one emmclab-agent invocation over the shell (see
 * agent_session.h).
 *
 * Lines are kept by seq until their turn: a line whose CRC failed only counts
 * as seen (its seq is asked for again), a duplicate is dropped, and delivery
 * stops at the first gap.  When
 * the shell command ends, the seqs still missing up to `done` (or past the
 * highest seen when `done` itself is missing) are asked for again with
 * `resend`, in batches of AGENT_RESEND_BATCH.
 */
#include "agent_session.h"
#include "shell.h"
#include "util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENT_RESEND_BATCH 64
#define AGENT_MAX_SEQ 200000

struct agent_session {
	struct shell *sh;
	struct agent_session_cbs cbs;
	void *arg;
	char *agent_path;    /* for `resend` */

	char **lines;        /* by seq: raw protocol line, until delivered */
	uint64_t nlines_cap;
	uint64_t next_seq;   /* next seq to deliver */
	uint64_t max_seen;
	uint64_t done_seq;   /* 0 until the done line arrived (parsed OK) */
	bool done_ok;
	int resend_tries;
	uint64_t deadline_ms;
	char err[256];       /* the first `error` line */
	char cmd[32];        /* the agent command asked for (hello's cmd= must match) */
	bool seen;           /* a protocol line (even a corrupted one) came back */
	bool stale;          /* the hello line belongs to another invocation */
	struct proto_msg pm;
};

static void reset(struct agent_session *s)
{
	if (s->lines)
		for (uint64_t i = 0; i < s->nlines_cap; i++)
			free(s->lines[i]);
	free(s->lines);
	s->lines = NULL;
	s->nlines_cap = 0;
	s->next_seq = 1;
	s->max_seen = 0;
	s->done_seq = 0;
	s->done_ok = false;
	s->resend_tries = 0;
	s->err[0] = '\0';
	s->seen = false;
	s->stale = false;
}

struct agent_session *agent_session_new(struct shell *sh)
{
	struct agent_session *s = xcalloc(1, sizeof *s);
	s->sh = sh;
	s->next_seq = 1;
	return s;
}

void agent_session_free(struct agent_session *s)
{
	if (!s)
		return;
	reset(s);
	free(s->agent_path);
	free(s);
}

static bool seq_room(struct agent_session *s, uint64_t seq)
{
	if (seq == 0 || seq > AGENT_MAX_SEQ)
		return false;
	if (seq >= s->nlines_cap) {
		uint64_t n = s->nlines_cap ? s->nlines_cap : 64;
		while (n <= seq)
			n *= 2;
		s->lines = xreallocarray(s->lines, n, sizeof *s->lines);
		memset(s->lines + s->nlines_cap, 0, (n - s->nlines_cap) * sizeof *s->lines);
		s->nlines_cap = n;
	}
	return true;
}

/* Deliver the message parsed into s->pm (the one at next_seq - 1). */
static void deliver_pm(struct agent_session *s)
{
	if (s->pm.seq == 1) {
		const char *cmd = proto_get(&s->pm, "cmd");
		if (strcmp(s->pm.kind, "hello") != 0 || (s->cmd[0] && cmd && strcmp(cmd, s->cmd) != 0))
			s->stale = true;
	}
	if (strcmp(s->pm.kind, "error") == 0 && !s->err[0]) {
		const char *em = proto_get(&s->pm, "msg");
		const char *ec = proto_get(&s->pm, "code");
		snprintf(s->err, sizeof s->err, "%s: %s", ec ? ec : "error", em ? em : "");
	}
	if (s->cbs.msg)
		s->cbs.msg(&s->pm, s->arg);
}

static void deliver_ready(struct agent_session *s)
{
	while (s->next_seq < s->nlines_cap && s->lines[s->next_seq]) {
		char *raw = s->lines[s->next_seq];
		s->lines[s->next_seq] = NULL;
		s->next_seq++;
		if (proto_parse(raw, strlen(raw), &s->pm) == PROTO_OK)
			deliver_pm(s);
		free(raw);
	}
}

static void on_line(struct shell *sh, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(sh);
	struct agent_session *s = arg;
	const char *m = memmem(line, len, PROTO_MAGIC, strlen(PROTO_MAGIC));
	if (!m)
		return;
	s->seen = true;
	int st = proto_parse(line, len, &s->pm);
	/* a bad CRC still says how far the agent got: missing() asks for it again */
	if (st == PROTO_BAD_CRC && s->pm.seq > 0 && s->pm.seq <= AGENT_MAX_SEQ &&
	    s->pm.seq > s->max_seen)
		s->max_seen = s->pm.seq;
	if (st != PROTO_OK)
		return;
	uint64_t seq = s->pm.seq;
	if (!seq_room(s, seq) || seq < s->next_seq || s->lines[seq])
		return; /* duplicate (a resend of a line we have) or absurd */
	if (seq > s->max_seen)
		s->max_seen = seq;
	if (strcmp(s->pm.kind, "done") == 0) {
		const char *status = proto_get(&s->pm, "status");
		s->done_seq = seq;
		s->done_ok = status && strcmp(status, "ok") == 0;
	}
	if (seq == s->next_seq) {
		/* its turn already (the usual case): deliver what was just parsed
		 * instead of keeping a copy and parsing it again */
		s->next_seq++;
		deliver_pm(s);
		deliver_ready(s);
		return;
	}
	/* keep the line (without anything before the magic) until its turn */
	s->lines[seq] = xstrndup(m, len - (size_t)(m - line));
	deliver_ready(s);
}

/* Seqs still missing; returns how many were written to out (max cap). */
static size_t missing(struct agent_session *s, uint64_t *out, size_t cap)
{
	size_t n = 0;
	uint64_t last = s->done_seq ? s->done_seq : s->max_seen + 1;
	for (uint64_t q = s->next_seq; q <= last && n < cap; q++)
		if (q >= s->nlines_cap || !s->lines[q])
			out[n++] = q;
	return n;
}

static void finish(struct agent_session *s, int rc, enum agent_session_fail fail, const char *event,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void finish(struct agent_session *s, int rc, enum agent_session_fail fail, const char *event,
		   const char *fmt, ...)
{
	char m[600] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m, sizeof m, fmt, ap);
		va_end(ap);
	}
	if (s->cbs.done)
		s->cbs.done(rc, fail, fmt ? m : NULL, event, s->arg);
}

static int run(struct agent_session *s, const char *cmd);

static void on_cmd(struct shell *sh, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(sh);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct agent_session *s = arg;
	/* LAB_EPROTO: a shell marker was mangled, but the agent ran: its lines decide */
	if (rc != LAB_OK && rc != LAB_EPROTO) {
		enum agent_session_fail f = shell_failure(s->sh) == SHELL_FAIL_PANIC ? AGENT_SESSION_PANIC :
			rc == LAB_ETIMEOUT ? AGENT_SESSION_TIMEOUT : AGENT_SESSION_PROTOCOL;
		char *m = xasprintf("agent: %s", shell_errmsg(s->sh));
		finish(s, LAB_EINFRA, f, m, "%s", m);
		free(m);
		return;
	}
	if (s->stale) {
		finish(s, LAB_EINFRA, AGENT_SESSION_PROTOCOL, NULL,
		       "agent: the first line is not this invocation's hello (cmd=%s expected): stale "
		       "log or mangled command", s->cmd);
		return;
	}
	if (!s->seen) {
		/* nothing to re-request: `resend` would replay an older invocation's log */
		finish(s, LAB_EINFRA, AGENT_SESSION_PROTOCOL, NULL,
		       "agent printed no protocol line (exit %d%s)", status,
		       status == 127 ? ": not found" : "");
		return;
	}
	uint64_t miss[AGENT_RESEND_BATCH];
	size_t n = missing(s, miss, LAB_ARRAY_SIZE(miss));
	if (n == 0 && s->done_seq) {
		if (s->done_ok)
			finish(s, LAB_OK, AGENT_SESSION_OK, NULL, NULL);
		else
			finish(s, LAB_EINFRA, AGENT_SESSION_PROTOCOL, NULL,
			       "agent finished with status=error%s%s", s->err[0] ? ": " : "", s->err);
		return;
	}
	if (s->resend_tries >= AGENT_SESSION_RESEND_TRIES || lab_now_ms() >= s->deadline_ms) {
		char list[256] = "";
		for (size_t i = 0; i < n && i < 16; i++) {
			char one[24];
			snprintf(one, sizeof one, "%s%llu", i ? " " : "", (unsigned long long)miss[i]);
			lab_strlcat(list, one, sizeof list);
		}
		const char *what = s->done_seq ? "lines still missing" : "no valid `done` line";
		char *ev = xasprintf("%s after %d resend requests: seq %s", what, s->resend_tries, list);
		finish(s, LAB_EINFRA, AGENT_SESSION_PROTOCOL, ev,
		       "agent: %s after %d resend requests (seq %s)", what, s->resend_tries, list);
		free(ev);
		return;
	}
	s->resend_tries++;
	struct lab_buf c;
	lab_buf_init(&c, 0);
	lab_buf_printf(&c, "%s resend", s->agent_path);
	for (size_t i = 0; i < n; i++)
		lab_buf_printf(&c, " %llu", (unsigned long long)miss[i]);
	if (s->cbs.info) {
		char *m = xasprintf("agent: re-requesting %zu line%s (try %d)", n, n == 1 ? "" : "s",
				    s->resend_tries);
		s->cbs.info(m, s->arg);
		free(m);
	}
	if (run(s, lab_buf_cstr(&c)) != LAB_OK)
		finish(s, LAB_EINFRA, AGENT_SESSION_PROTOCOL, NULL, "agent: shell session busy");
	lab_buf_free(&c);
}

static int run(struct agent_session *s, const char *cmd)
{
	uint64_t now = lab_now_ms();
	uint64_t left = s->deadline_ms > now ? s->deadline_ms - now : 1;
	return shell_run_lines(s->sh, cmd, left, on_line, on_cmd, s);
}

int agent_session_start(struct agent_session *s, const char *agent_path, const char *block_device,
			const char *args, uint64_t timeout_ms, const struct agent_session_cbs *cbs,
			void *arg)
{
	if (shell_busy(s->sh))
		return LAB_EUSAGE; /* before anything is reset: a session may be in flight */
	reset(s);
	s->cbs = *cbs;
	s->arg = arg;
	free(s->agent_path);
	s->agent_path = xstrdup(agent_path);
	/* the command word: hello's cmd= is compared with it */
	size_t k = 0;
	const char *a = args ? args : "";
	while (*a == ' ')
		a++;
	while (a[k] && a[k] != ' ' && k + 1 < sizeof s->cmd)
		k++;
	memcpy(s->cmd, a, k);
	s->cmd[k] = '\0';
	s->deadline_ms = lab_now_ms() + timeout_ms;
	char *cmd;
	if (block_device && block_device[0])
		cmd = xasprintf("%s --device %s %s", agent_path, block_device, args ? args : "");
	else
		cmd = xasprintf("%s %s", agent_path, args ? args : "");
	int rc = run(s, cmd);
	free(cmd);
	return rc == LAB_OK ? LAB_OK : LAB_EUSAGE;
}
