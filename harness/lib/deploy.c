/* deploy.c - generic deploy layer: driver lookup, options, artifact hashes, timeouts. */
#include "deploy.h"
#include "driver.h"
#include "config.h"
#include "hashcache.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

DRIVER_HEAD_ASSERT(struct deploy_driver);

/* The deploy methods (deploy/<name>.c, each exporting deploy_<name>): one row
 * each.  A new one is its file, one row here and its line in harness/CMakeLists.txt. */
#define DEPLOY_DRIVERS(X)                                                                          \
	X(deploy_none)                                                                             \
	X(deploy_uboot_tftp)                                                                       \
	X(deploy_fastboot)                                                                         \
	X(deploy_ums)                                                                              \
	X(deploy_exec)                                                                             \
	X(deploy_qemu)
#define X(d) extern const struct deploy_driver d;
DEPLOY_DRIVERS(X)
#undef X

const struct deploy_driver *const deploy_drivers[] = {
#define X(d) &d,
	DEPLOY_DRIVERS(X)
#undef X
	NULL,
};

struct deploy_common {
	char *driver;
	uint64_t timeout_ms;
};

static const struct opt deploy_common_opts[] = {
	{.key = "driver", .type = OPT_STR, .offset = offsetof(struct deploy_common, driver),
	 .flags = OPT_REQUIRED, .help = "deploy method"},
	{.key = "timeout", .type = OPT_DURATION, .offset = offsetof(struct deploy_common, timeout_ms),
	 .def = "10m", .min = 1000, .max = 86400000, .help = "timeout of one deploy"},
	{0},
};

static const struct driver_kind deploy_kind = {"deploy", (const void *const *)deploy_drivers,
					       deploy_common_opts};

const struct deploy_driver *deploy_driver_find(const char *name)
{
	return driver_find(&deploy_kind, name);
}

int deploy_ops_check(const struct deploy_driver *d, struct lab_err *e)
{
	int rc = driver_check_head("deploy", d, DEPLOY_OPS_VERSION, e);
	if (!rc)
		rc = driver_check_hook("deploy", d->name, d->run != NULL, "run", e);
	return rc;
}

static int deploy_check_one(const void *ops, struct lab_err *e)
{
	return deploy_ops_check(ops, e);
}

int deploy_registry_check(struct lab_err *e)
{
	return driver_check_list(&deploy_kind, deploy_check_one, e);
}

int deploy_new(struct loop *l, const char *board, const struct cfg_node *cfg, struct deploy **out,
	       struct lab_err *e)
{
	struct deploy_common dc;
	const void *ops;
	void *dcfg;
	int rc = driver_from_cfg(&deploy_kind, cfg, &dc, &ops, &dcfg, e);
	if (rc)
		return rc;
	const struct deploy_driver *d = ops;
	struct deploy *dp = xcalloc(1, sizeof *dp);
	dp->drv = d;
	dp->loop = l;
	loop_timer_init(&dp->timer, NULL, dp); /* deploy_free may stop it before any run */
	dp->board = xstrdup(board);
	dp->timeout_ms = dc.timeout_ms;
	dp->cfg = dcfg;
	opt_free(deploy_common_opts, &dc);
	if (d->init && (rc = d->init(dp, e)) != LAB_OK) {
		driver_free_own(d->options, dp->cfg);
		free(dp->state_dir);
		free(dp->board);
		free(dp);
		return rc;
	}
	if (!dp->state_dir) {
		const char *tmp = getenv("TMPDIR");
		dp->state_dir = xasprintf("%s/emmclab-%s", tmp && tmp[0] ? tmp : "/tmp", board);
	}
	*out = dp;
	return LAB_OK;
}

int deploy_check_cfg(const char *board, const struct cfg_node *cfg, struct lab_err *e)
{
	LAB_UNUSED(board);
	struct deploy_common dc;
	const void *ops;
	return driver_from_cfg(&deploy_kind, cfg, &dc, &ops, NULL, e);
}

void deploy_free(struct deploy *d)
{
	if (!d)
		return;
	loop_timer_stop(d->loop, &d->timer);
	if (d->hash) {
		hashcache_cancel(d->hash);
		d->hash = NULL;
	} else if (d->busy && d->drv->cancel) {
		d->drv->cancel(d);
	}
	if (d->drv->fini)
		d->drv->fini(d);
	driver_free_own(d->drv->options, d->cfg);
	free(d->state_dir);
	free(d->ctx_bootargs);
	free(d->ctx_workdir);
	free(d->board);
	free(d);
}

static void finish(struct deploy *d, int rc, const char *msg)
{
	loop_timer_stop(d->loop, &d->timer);
	d->busy = false;
	deploy_done_cb cb = d->cb;
	d->cb = NULL;
	if (cb)
		cb(d, rc, msg, d->cb_arg);
}

static void on_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct deploy *d = arg;
	if (d->hash) {
		hashcache_cancel(d->hash);
		d->hash = NULL;
	} else if (d->drv->cancel) {
		d->drv->cancel(d);
	}
	char msg[256];
	snprintf(msg, sizeof msg, "%s deploy on %s: not done within %llu ms", d->drv->name, d->board,
		 (unsigned long long)d->timeout_ms);
	finish(d, LAB_ETIMEOUT, msg);
}

/* deploy_run could not start: reported from the loop on d's own timer (so
 * deploy_free cancels it), never inside the caller's deploy_run(). */
static void on_fail(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct deploy *d = arg;
	finish(d, d->fail_rc, d->fail_msg);
}

/* Hand over to the method (after the hashes, when any). */
static void start_method(struct deploy *d)
{
	int rc = d->drv->run(d, &d->ctx);
	if (rc) {
		snprintf(d->fail_msg, sizeof d->fail_msg, "%s deploy on %s failed to start",
			 d->drv->name, d->board);
		d->fail_rc = rc;
		loop_timer_stop(d->loop, &d->timer);
		loop_timer_init(&d->timer, on_fail, d);
		loop_timer_start(d->loop, &d->timer, 0);
	}
}

static void on_hashed(int rc, const char *msg, void *arg)
{
	struct deploy *d = arg;
	d->hash = NULL; /* the request frees itself */
	if (rc) {
		char m[sizeof d->fail_msg];
		snprintf(m, sizeof m, "artifact check: %s", msg ? msg : "hashing failed");
		finish(d, rc, m);
		return;
	}
	memcpy(d->kernel_sha256, d->hash_tmp[0], 65);
	memcpy(d->initrd_sha256, d->hash_tmp[1], 65);
	memcpy(d->dtb_sha256, d->hash_tmp[2], 65);
	start_method(d);
}

int deploy_run(struct deploy *d, const struct deploy_ctx *ctx, deploy_done_cb cb, void *arg)
{
	if (d->busy)
		return LAB_EUSAGE;
	d->busy = true;
	d->cb = cb;
	d->cb_arg = arg;
	/* the method may run after this returns (hashing): keep our own copy */
	free(d->ctx_bootargs);
	free(d->ctx_workdir);
	d->ctx = *ctx;
	d->ctx_bootargs = ctx->bootargs ? xstrdup(ctx->bootargs) : NULL;
	d->ctx_workdir = ctx->workdir ? xstrdup(ctx->workdir) : NULL;
	d->ctx.bootargs = d->ctx_bootargs;
	d->ctx.workdir = d->ctx_workdir;
	d->kernel_sha256[0] = d->initrd_sha256[0] = d->dtb_sha256[0] = '\0';
	loop_timer_init(&d->timer, on_timeout, d);
	loop_timer_start(d->loop, &d->timer, d->timeout_ms);
	bool want = ctx->record_hashes || !(d->drv->flags & DEPLOY_NO_HASH);
	if (!ctx->kernel || !want) {
		start_method(d);
		return LAB_OK;
	}
	const char *paths[3] = {ctx->kernel->image, ctx->kernel->initrd, ctx->kernel->dtb};
	char *cache = xasprintf("%s/artefact-hashes", d->state_dir);
	/* the hashes land in a scratch array, copied once all are known */
	d->hash = hashcache_start(d->loop, cache, paths, 3, d->hash_tmp, on_hashed, d);
	free(cache);
	return LAB_OK;
}

void deploy_complete(struct deploy *d, int rc, const char *fmt, ...)
{
	char msg[512] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	}
	finish(d, rc, msg[0] ? msg : NULL);
}
