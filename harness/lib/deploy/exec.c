/*
 * deploy/exec.c - deploy with an external command before power-on (an SD
 * mux, a USB flasher script, a netboot server update, ...).  `command` is an
 * argv template, run without a shell; placeholders: {kernel} and {image}
 * (the kernel image), {initrd}, {dtb} (empty when the kernel has none),
 * {board}, {bootargs} (full command line incl. the mode's), {workdir}.
 * Exit status 0 is success; otherwise the last stderr line is reported.  The
 * deploy timeout kills the command's whole process group.
 */
#include "cmdrun.h"
#include "config.h"
#include "deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

struct dexec_cfg {
	struct opt_strlist command;
};

static const struct opt dexec_opts[] = {
	{.key = "command", .type = OPT_ARGV, .offset = offsetof(struct dexec_cfg, command),
	 .flags = OPT_REQUIRED,
	 .help = "argv: {kernel} {image} {initrd} {dtb} {board} {bootargs} {workdir}"},
	{0},
};

static const char *const dexec_keys[] = {"kernel", "image", "initrd", "dtb", "board", "bootargs",
					 "workdir"};

struct dexec {
	struct deploy *d;
	struct cmdrun *run;
	char what[200];
	struct loop_timer later;
	int fail_rc;
	char fail_msg[400];
};

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct dexec *x = arg;
	deploy_complete(x->d, x->fail_rc, "exec deploy on %s: %s", x->d->board, x->fail_msg);
}

static int dexec_init(struct deploy *d, struct lab_err *e)
{
	struct dexec_cfg *c = d->cfg;
	const char *vals[LAB_ARRAY_SIZE(dexec_keys)] = {0};
	char **argv;
	if (c->command.n == 0)
		return lab_err_set(e, LAB_EUSAGE, "board %s: exec deploy: 'command' is empty", d->board);
	/* Catch placeholder typos when the lab is loaded, not at 3 a.m. */
	int rc = cmdrun_expand(&c->command, dexec_keys, vals, LAB_ARRAY_SIZE(dexec_keys), &argv, e);
	if (rc)
		return rc;
	cmdrun_argv_free(argv);
	struct dexec *x = xcalloc(1, sizeof *x);
	x->d = d;
	loop_timer_init(&x->later, on_later, x);
	d->priv = x;
	return LAB_OK;
}

static void dexec_cancel(struct deploy *d)
{
	struct dexec *x = d->priv;
	loop_timer_stop(d->loop, &x->later);
	if (x->run) {
		cmdrun_kill(x->run);
		x->run = NULL;
	}
}

static void dexec_fini(struct deploy *d)
{
	if (!d->priv)
		return;
	dexec_cancel(d);
	free(d->priv);
	d->priv = NULL;
}

static void on_done(struct cmdrun *c, int ws, const char *out, const char *err, void *arg)
{
	LAB_UNUSED(c);
	LAB_UNUSED(out);
	struct dexec *x = arg;
	x->run = NULL;
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
		deploy_complete(x->d, LAB_OK, NULL);
		return;
	}
	char st[300];
	cmdrun_status_text(ws, err, st, sizeof st);
	deploy_complete(x->d, LAB_EINFRA, "exec deploy on %s: '%s' %s", x->d->board, x->what, st);
}

static int dexec_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	struct dexec *x = d->priv;
	struct dexec_cfg *c = d->cfg;
	const struct kernel_cfg *k = ctx->kernel;
	const char *vals[] = {k ? k->image : NULL, k ? k->image : NULL, k ? k->initrd : NULL,
			      k ? k->dtb : NULL, d->board, ctx->bootargs, ctx->workdir};
	char **argv;
	struct lab_err e = {0};
	int rc = cmdrun_expand(&c->command, dexec_keys, vals, LAB_ARRAY_SIZE(dexec_keys), &argv, &e);
	if (!rc) {
		cmdrun_describe(argv, x->what, sizeof x->what);
		rc = cmdrun_start(d->loop, argv, 16384, on_done, x, &x->run, &e);
		cmdrun_argv_free(argv);
	}
	if (rc) {
		x->run = NULL;
		x->fail_rc = rc;
		lab_strlcpy(x->fail_msg, e.msg, sizeof x->fail_msg);
		loop_timer_start(d->loop, &x->later, 0); /* never complete inside run() */
	}
	return LAB_OK;
}

const struct deploy_driver deploy_exec = {
	.name = "exec",
	.version = DEPLOY_OPS_VERSION,
	.help = "run a command (argv template) before power-on",
	.options = dexec_opts,
	.cfg_size = sizeof(struct dexec_cfg),
	.flags = DEPLOY_BEFORE_POWER,
	.init = dexec_init,
	.fini = dexec_fini,
	.run = dexec_run,
	.cancel = dexec_cancel,
};
