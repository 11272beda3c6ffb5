/*
 * power/exec.c - power through external commands (relay CLIs, vendor tools,
 * sd-mux-ctrl, a lab script).  Each of on/off/cycle/state is an argv list
 * run without a shell, `{board}` replaced by the board name.  Exit status 0
 * means done.  The state command prints "on"/"off" (also 1/0, true/false) as
 * its first word, or prints nothing and exits 0 (on) / 1 (off).  Without a
 * cycle command the driver runs off, waits off_time, runs on.  The power
 * timeout kills the command's whole process group.
 */
#include "cmdrun.h"
#include "power.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

struct exec_cfg {
	struct opt_strlist on, off, cycle, state;
};

static const struct opt exec_opts[] = {
	{.key = "on", .type = OPT_ARGV, .offset = offsetof(struct exec_cfg, on),
	 .flags = OPT_REQUIRED, .help = "argv of the power-on command ({board})"},
	{.key = "off", .type = OPT_ARGV, .offset = offsetof(struct exec_cfg, off),
	 .flags = OPT_REQUIRED, .help = "argv of the power-off command"},
	{.key = "cycle", .type = OPT_ARGV, .offset = offsetof(struct exec_cfg, cycle),
	 .help = "argv of a power-cycle command (default: off, off_time, on)"},
	{.key = "state", .type = OPT_ARGV, .offset = offsetof(struct exec_cfg, state),
	 .help = "argv printing on/off, or exiting 0 (on) / 1 (off)"},
	{0},
};

struct pexec {
	struct power *p;
	struct cmdrun *run;
	enum power_op op;    /* the operation asked of the driver */
	enum power_op step;  /* the command running now */
	char what[160];      /* the command, for messages */
	struct loop_timer timer; /* off_time of an emulated cycle; deferred failures */
	int fail_rc;
	char fail_msg[300];
};

static const char *const exec_keys[] = {"board"};

static void on_fail_later(struct loop *l, struct loop_timer *t, void *arg);

static int exec_init(struct power *p, struct lab_err *e)
{
	struct exec_cfg *c = p->cfg;
	const struct opt_strlist *all[] = {&c->on, &c->off, &c->cycle, &c->state};
	const char *names[] = {"on", "off", "cycle", "state"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(all); i++) {
		if (i < 2 && all[i]->n == 0)
			return lab_err_set(e, LAB_EUSAGE, "board %s: exec power: '%s' command is empty",
					   p->board, names[i]);
		char **argv;
		const char *vals[] = {p->board};
		if (all[i]->n && cmdrun_expand(all[i], exec_keys, vals, 1, &argv, e) != LAB_OK) {
			char msg[sizeof e->msg];
			lab_strlcpy(msg, e->msg, sizeof msg);
			lab_err_clear(e);
			return lab_err_set(e, LAB_EUSAGE, "board %s: exec power '%s': %s", p->board,
					   names[i], msg);
		}
		if (all[i]->n)
			cmdrun_argv_free(argv);
	}
	struct pexec *d = xcalloc(1, sizeof *d);
	d->p = p;
	loop_timer_init(&d->timer, on_fail_later, d); /* fini may stop it before any start */
	p->priv = d;
	p->device = xasprintf("exec power of %s", p->board);
	return LAB_OK;
}

static void exec_cancel(struct power *p)
{
	struct pexec *d = p->priv;
	loop_timer_stop(p->loop, &d->timer);
	if (d->run) {
		cmdrun_kill(d->run);
		d->run = NULL;
	}
}

static void exec_fini(struct power *p)
{
	struct pexec *d = p->priv;
	if (!d)
		return;
	exec_cancel(p);
	free(d);
}

static int run_step(struct pexec *d, enum power_op step);

static void on_fail_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct pexec *d = arg;
	power_complete(d->p, d->fail_rc, POWER_UNKNOWN, "%s: %s", d->p->device, d->fail_msg);
}

static void on_offtime(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct pexec *d = arg;
	if (run_step(d, POWER_ON) != LAB_OK) {
		loop_timer_init(&d->timer, on_fail_later, d);
		loop_timer_start(d->p->loop, &d->timer, 0);
	}
}

/* First word of the state command's output, or -1. */
static int parse_state(const char *out)
{
	char w[16];
	size_t n = 0;
	while (*out == ' ' || *out == '\t' || *out == '\n' || *out == '\r')
		out++;
	while (*out && !strchr(" \t\r\n", *out) && n + 1 < sizeof w)
		w[n++] = *out++;
	w[n] = '\0';
	if (!strcasecmp(w, "on") || !strcmp(w, "1") || !strcasecmp(w, "true"))
		return POWER_IS_ON;
	if (!strcasecmp(w, "off") || !strcmp(w, "0") || !strcasecmp(w, "false"))
		return POWER_IS_OFF;
	return n ? -2 : -1;
}

static void on_done(struct cmdrun *c, int ws, const char *out, const char *err, void *arg)
{
	LAB_UNUSED(c);
	struct pexec *d = arg;
	struct power *p = d->p;
	char st[300];
	d->run = NULL;
	if (d->step == POWER_STATE) {
		int s = parse_state(out);
		if (s == -1 && WIFEXITED(ws) && WEXITSTATUS(ws) <= 1)
			s = WEXITSTATUS(ws) == 0 ? POWER_IS_ON : POWER_IS_OFF;
		if (s >= 0) {
			power_complete(p, LAB_OK, s, NULL);
			return;
		}
		if (s == -2) {
			power_complete(p, LAB_EPROTO, POWER_UNKNOWN,
				       "%s: '%s' printed '%.40s', not on or off", p->device, d->what, out);
			return;
		}
		cmdrun_status_text(ws, err, st, sizeof st);
		power_complete(p, LAB_EINFRA, POWER_UNKNOWN, "%s: '%s' %s", p->device, d->what, st);
		return;
	}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		cmdrun_status_text(ws, err, st, sizeof st);
		power_complete(p, LAB_EINFRA, POWER_UNKNOWN, "%s: '%s' %s", p->device, d->what, st);
		return;
	}
	if (d->op == POWER_CYCLE && d->step == POWER_OFF) {
		/* Emulated cycle: stay off for off_time, then on. */
		loop_timer_init(&d->timer, on_offtime, d);
		loop_timer_start(p->loop, &d->timer, p->off_time_ms);
		return;
	}
	power_complete(p, LAB_OK, d->step == POWER_OFF ? POWER_IS_OFF : POWER_IS_ON, NULL);
}

static int run_step(struct pexec *d, enum power_op step)
{
	struct exec_cfg *c = d->p->cfg;
	const struct opt_strlist *t = step == POWER_ON ? &c->on : step == POWER_OFF ? &c->off :
				      step == POWER_CYCLE ? &c->cycle : &c->state;
	const char *vals[] = {d->p->board};
	char **argv;
	struct lab_err e = {0};
	d->step = step;
	if (cmdrun_expand(t, exec_keys, vals, 1, &argv, &e) != LAB_OK) {
		d->fail_rc = LAB_EUSAGE;
		lab_strlcpy(d->fail_msg, e.msg, sizeof d->fail_msg);
		return LAB_EUSAGE;
	}
	cmdrun_describe(argv, d->what, sizeof d->what);
	int rc = cmdrun_start(d->p->loop, argv, 4096, on_done, d, &d->run, &e);
	cmdrun_argv_free(argv);
	if (rc) {
		d->run = NULL;
		d->fail_rc = rc;
		lab_strlcpy(d->fail_msg, e.msg, sizeof d->fail_msg);
	}
	return rc;
}

static int exec_start(struct power *p, enum power_op op)
{
	struct pexec *d = p->priv;
	struct exec_cfg *c = p->cfg;
	d->op = op;
	enum power_op first = op;
	int rc;
	if (op == POWER_CYCLE && c->cycle.n == 0)
		first = POWER_OFF;
	if (op == POWER_STATE && c->state.n == 0) {
		d->fail_rc = LAB_EUSAGE;
		lab_strlcpy(d->fail_msg, "no 'state' command configured", sizeof d->fail_msg);
		rc = LAB_EUSAGE;
	} else {
		rc = run_step(d, first);
	}
	if (rc) {
		/* Report the specific reason on the next pass (never from inside start). */
		loop_timer_init(&d->timer, on_fail_later, d);
		loop_timer_start(p->loop, &d->timer, 0);
	}
	return LAB_OK;
}

const struct power_driver power_exec = {
	.name = "exec",
	.version = POWER_OPS_VERSION,
	.help = "external commands (argv, no shell) for on/off[/cycle/state]",
	.options = exec_opts,
	.cfg_size = sizeof(struct exec_cfg),
	.init = exec_init,
	.fini = exec_fini,
	.start = exec_start,
	.cancel = exec_cancel,
	.native_cycle = true, /* the driver emulates it when no cycle command is given */
	.can_read_state = true,
};
