/*
 * deploy/none.c - nothing to deploy: the board boots what is already on its
 * storage (with a U-Boot prompt configured, board.c boots it with the mode's
 * bootargs through uboot_boot_local).  Completes on the next loop pass.
 */
#include "deploy.h"

#include <stdlib.h>

struct dnone {
	struct deploy *d;
	struct loop_timer t;
};

static void on_next(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct dnone *n = arg;
	deploy_complete(n->d, LAB_OK, NULL);
}

static int none_init(struct deploy *d, struct lab_err *e)
{
	LAB_UNUSED(e);
	struct dnone *n = xcalloc(1, sizeof *n);
	n->d = d;
	loop_timer_init(&n->t, on_next, n);
	d->priv = n;
	return LAB_OK;
}

static void none_cancel(struct deploy *d)
{
	struct dnone *n = d->priv;
	loop_timer_stop(d->loop, &n->t);
}

static void none_fini(struct deploy *d)
{
	if (d->priv)
		none_cancel(d);
	free(d->priv);
	d->priv = NULL;
}

static int none_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	LAB_UNUSED(ctx);
	struct dnone *n = d->priv;
	loop_timer_start(d->loop, &n->t, 0);
	return LAB_OK;
}

const struct deploy_driver deploy_none = {
	.name = "none",
	.version = DEPLOY_OPS_VERSION,
	.help = "nothing to deploy: boot what the board has",
	.options = NULL,
	.cfg_size = 0,
	.flags = 0,
	.init = none_init,
	.fini = none_fini,
	.run = none_run,
	.cancel = none_cancel,
};
