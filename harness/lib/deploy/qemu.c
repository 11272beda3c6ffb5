/*
 * deploy/qemu.c - deploy to a virtual board (boards/virt): nothing is
 * flashed; the job's kernel, initrd and full command line (kernel cmdline
 * plus the mode's knobs) are written to the board's state directory, where
 * the `qemu` power driver picks them up at the next power-on.  Runs before
 * power (the board is off while it runs) and boots by itself (no U-Boot).
 * The state directory must be the power driver's: both default to
 * $TMPDIR/emmclab-qemu-BOARD, or set the same `dir:` in both blocks.
 * It hashes nothing (DEPLOY_NO_HASH): QEMU reads the files where they are,
 * so a hash is only worth its cost when the caller stores it.
 */
#include "config.h"
#include "deploy.h"
#include "qemu_boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dqemu_cfg {
	char *dir;
};

static const struct opt dqemu_opts[] = {
	{.key = "dir", .type = OPT_STR, .offset = offsetof(struct dqemu_cfg, dir),
	 .help = "state directory shared with the qemu power driver (default $TMPDIR/emmclab-qemu-BOARD)"},
	{0},
};

struct dqemu {
	struct deploy *d;
	char *dir;
	struct loop_timer later;
	int rc;
	char msg[700]; /* holds an lab_err message (512) and the board name */
};

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct dqemu *q = arg;
	deploy_complete(q->d, q->rc, "%s", q->msg);
}

static int dqemu_init(struct deploy *d, struct lab_err *e)
{
	LAB_UNUSED(e);
	struct dqemu_cfg *c = d->cfg;
	struct dqemu *q = xcalloc(1, sizeof *q);
	q->d = d;
	q->dir = qemu_boot_dir(c->dir, d->board);
	d->state_dir = xstrdup(q->dir);
	loop_timer_init(&q->later, on_later, q);
	d->priv = q;
	return LAB_OK;
}

static void dqemu_fini(struct deploy *d)
{
	struct dqemu *q = d->priv;
	if (!q)
		return;
	loop_timer_stop(d->loop, &q->later);
	free(q->dir);
	free(q);
	d->priv = NULL;
}

static int dqemu_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	struct dqemu *q = d->priv;
	struct lab_err e = {0};
	q->rc = LAB_OK;
	q->msg[0] = '\0';
	const struct kernel_cfg *k = ctx->kernel;
	if (!k || !k->image || !k->image[0] || !k->initrd || !k->initrd[0]) {
		q->rc = LAB_EUSAGE;
		snprintf(q->msg, sizeof q->msg,
			 "qemu deploy on %s: the kernel needs image: and initrd: (boards/virt)", d->board);
	} else if (access(k->image, R_OK) != 0 || access(k->initrd, R_OK) != 0) {
		q->rc = LAB_EINFRA;
		snprintf(q->msg, sizeof q->msg, "qemu deploy on %s: cannot read %s or %s", d->board,
			 k->image, k->initrd);
	} else {
		struct qemu_boot b = {
			.kernel = k->image,
			.initrd = k->initrd,
			.append = (char *)(ctx->bootargs ? ctx->bootargs : ""),
		};
		q->rc = qemu_boot_write(q->dir, &b, &e);
		if (q->rc != LAB_OK)
			snprintf(q->msg, sizeof q->msg, "qemu deploy on %s: %s", d->board, e.msg);
	}
	loop_timer_start(d->loop, &q->later, 0); /* complete from the loop */
	return LAB_OK;
}

static void dqemu_cancel(struct deploy *d)
{
	struct dqemu *q = d->priv;
	loop_timer_stop(d->loop, &q->later);
}

const struct deploy_driver deploy_qemu = {
	.name = "qemu",
	.version = DEPLOY_OPS_VERSION,
	.help = "virtual board: hand kernel, initrd and command line to the qemu power driver",
	.options = dqemu_opts,
	.cfg_size = sizeof(struct dqemu_cfg),
	.flags = DEPLOY_BEFORE_POWER | DEPLOY_BOOTS | DEPLOY_NO_HASH,
	.init = dqemu_init,
	.fini = dqemu_fini,
	.run = dqemu_run,
	.cancel = dqemu_cancel,
};
