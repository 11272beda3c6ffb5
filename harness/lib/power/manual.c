/*
 * power/manual.c - the operator is the power switch: the prompt is written to
 * the controlling terminal (/dev/tty, not stdout, so it reaches a person
 * even when output is redirected) and the operation completes when Enter is
 * pressed ("fail" reports that it could not be done).  Typeahead is flushed
 * first so a stray Enter does not confirm.  The wait is a loop fd watch,
 * bounded by the power timeout (set a generous `timeout:`).  Without a
 * controlling terminal (cron, CI, systemd) every operation fails at once.
 */
#include "power.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

struct manual_cfg {
	char *prompt;
	char *tty;
};

static const struct opt manual_opts[] = {
	{.key = "prompt", .type = OPT_STR, .offset = offsetof(struct manual_cfg, prompt),
	 .def = "Please switch {action} the power of board {board}, then press Enter (or type 'fail'): ",
	 .help = "text shown to the operator; {board} and {action} (on/off) are replaced"},
	{.key = "tty", .type = OPT_STR, .offset = offsetof(struct manual_cfg, tty), .def = "/dev/tty",
	 .flags = OPT_HIDDEN, .help = "terminal to ask on"},
	{0},
};

static void on_later(struct loop *l, struct loop_timer *t, void *arg);

struct manual {
	struct power *p;
	int fd;
	enum power_op op;
	struct lab_buf out;  /* prompt bytes not yet written */
	struct lab_buf line; /* answer so far */
	struct loop_timer later;
	char fail[256];
};

static int manual_init(struct power *p, struct lab_err *e)
{
	LAB_UNUSED(e);
	struct manual *m = xcalloc(1, sizeof *m);
	m->p = p;
	m->fd = -1;
	loop_timer_init(&m->later, on_later, m); /* fini may stop it before any start */
	p->priv = m;
	p->device = xasprintf("manual power of %s", p->board);
	return LAB_OK;
}

static void manual_close(struct manual *m)
{
	if (m->fd >= 0) {
		loop_fd_del(m->p->loop, m->fd);
		close(m->fd);
		m->fd = -1;
	}
	lab_buf_free(&m->out);
	lab_buf_free(&m->line);
	loop_timer_stop(m->p->loop, &m->later);
}

static void manual_cancel(struct power *p)
{
	struct manual *m = p->priv;
	if (m->fd >= 0) {
		static const char note[] = "\n(emmclab: no longer waiting for this answer)\n";
		ssize_t w = write(m->fd, note, sizeof note - 1); /* best effort, non-blocking */
		LAB_UNUSED(w);
	}
	manual_close(m);
}

static void manual_fini(struct power *p)
{
	struct manual *m = p->priv;
	if (!m)
		return;
	manual_close(m);
	free(m);
}

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct manual *m = arg;
	power_complete(m->p, LAB_EINFRA, POWER_UNKNOWN, "%s: %s", m->p->device, m->fail);
}

static void queue(struct manual *m, const char *s)
{
	lab_buf_append(&m->out, s, strlen(s));
	loop_fd_mod(m->p->loop, m->fd, LOOP_READ | LOOP_WRITE);
}

static void finish(struct manual *m, int rc, const char *why)
{
	struct power *p = m->p;
	int state = m->op == POWER_OFF ? POWER_IS_OFF : POWER_IS_ON;
	manual_close(m);
	if (rc == LAB_OK)
		power_complete(p, LAB_OK, state, NULL);
	else
		power_complete(p, rc, POWER_UNKNOWN, "%s: %s", p->device, why);
}

static void on_tty(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	struct manual *m = arg;
	if ((ev & LOOP_WRITE) && m->out.len) {
		ssize_t w = write(fd, m->out.data, m->out.len);
		if (w > 0)
			lab_buf_consume(&m->out, (size_t)w);
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			return finish(m, LAB_EINFRA, "cannot write to the terminal");
		if (!m->out.len)
			loop_fd_mod(m->p->loop, fd, LOOP_READ);
	}
	if (!(ev & (LOOP_READ | LOOP_ERROR)))
		return;
	char buf[256];
	ssize_t r = read(fd, buf, sizeof buf);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0)
		return finish(m, LAB_EINFRA, "terminal closed before the operator answered");
	for (ssize_t i = 0; i < r; i++) {
		if (buf[i] != '\n' && buf[i] != '\r') {
			if (lab_buf_append(&m->line, &buf[i], 1) != LAB_OK)
				lab_buf_consume(&m->line, m->line.len); /* runaway input: start over */
			continue;
		}
		char *s = (char *)lab_buf_cstr(&m->line);
		while (*s == ' ' || *s == '\t')
			s++;
		size_t n = strlen(s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			s[--n] = '\0';
		if (n == 0 || !strcasecmp(s, "y") || !strcasecmp(s, "yes") || !strcasecmp(s, "ok") ||
		    !strcasecmp(s, "done"))
			return finish(m, LAB_OK, NULL);
		if (!strcasecmp(s, "fail") || !strcasecmp(s, "n") || !strcasecmp(s, "no") ||
		    !strcasecmp(s, "q"))
			return finish(m, LAB_EINFRA, "the operator reported that it could not be done");
		lab_buf_consume(&m->line, m->line.len);
		queue(m, "Press Enter when done, or type 'fail': ");
	}
}

static void expand_prompt(struct manual *m, const char *tmpl, const char *action)
{
	for (const char *s = tmpl; *s; s++) {
		if (!strncmp(s, "{board}", 7)) {
			lab_buf_append(&m->out, m->p->board, strlen(m->p->board));
			s += 6;
		} else if (!strncmp(s, "{action}", 8)) {
			lab_buf_append(&m->out, action, strlen(action));
			s += 7;
		} else {
			lab_buf_append(&m->out, s, 1);
		}
	}
}

static int manual_start(struct power *p, enum power_op op)
{
	struct manual *m = p->priv;
	struct manual_cfg *c = p->cfg;
	m->op = op;
	loop_timer_init(&m->later, on_later, m);
	if (op != POWER_ON && op != POWER_OFF)
		return LAB_EUSAGE; /* power.c builds cycles from off and on; no state */
	lab_buf_init(&m->out, 4096);
	lab_buf_init(&m->line, 256);
	m->fd = open(c->tty, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (m->fd < 0 || !isatty(m->fd)) {
		snprintf(m->fail, sizeof m->fail,
			 "nobody to ask: no controlling terminal (%s: %s); manual power needs an interactive run",
			 c->tty, m->fd < 0 ? strerror(errno) : "not a terminal");
		manual_close(m);
		loop_timer_init(&m->later, on_later, m);
		loop_timer_start(p->loop, &m->later, 0);
		return LAB_OK;
	}
	tcflush(m->fd, TCIFLUSH);
	lab_buf_append(&m->out, "\n", 1);
	expand_prompt(m, c->prompt, op == POWER_ON ? "on" : "off");
	if (loop_fd_add(p->loop, m->fd, LOOP_READ | LOOP_WRITE, on_tty, m) != LAB_OK) {
		manual_close(m);
		return LAB_EINFRA;
	}
	return LAB_OK;
}

const struct power_driver power_manual = {
	.name = "manual",
	.version = POWER_OPS_VERSION,
	.help = "ask the operator on the terminal to switch the power and press Enter",
	.options = manual_opts,
	.cfg_size = sizeof(struct manual_cfg),
	.init = manual_init,
	.fini = manual_fini,
	.start = manual_start,
	.cancel = manual_cancel,
	.native_cycle = false,
	.can_read_state = false,
};
