/*
 * deploy.h - deploy/flash methods: one file per method (deploy/<name>.c),
 * each exporting `const struct deploy_driver deploy_<name>`, one row in
 * deploy_drivers[] (deploy.c).
 * Asynchronous like power drivers: run() returns at once, completion through
 * deploy_complete() from a loop callback.
 *
 * Artefact hashes: before run(), deploy.c hashes the kernel, initrd and DTB
 * (SHA-256, cached by device/inode/size/mtime in STATE_DIR/artefact-hashes,
 * computed in a child process on a miss: hashcache.h) into kernel_sha256 ...
 * - unless the method sets DEPLOY_NO_HASH (it uses no hash itself) and the
 * caller does not ask for them (ctx->record_hashes: it will store them).
 */
#ifndef EMMCLAB_DEPLOY_H
#define EMMCLAB_DEPLOY_H

#include <stdbool.h>
#include <stdint.h>
#include "cfgnode.h"
#include "loop.h"
#include "opt.h"
#include "util.h"

struct uboot;       /* uboot.h: a U-Boot session on the board console */
struct hashcache_req; /* hashcache.h */
struct kernel_cfg;  /* config.h */

enum deploy_flags {
	DEPLOY_AT_UBOOT = 1,   /* board state machine stops at the U-Boot prompt and hands over the session */
	DEPLOY_BOOTS = 2,      /* the method also boots the kernel (netboot); else the board boots by itself */
	DEPLOY_BEFORE_POWER = 4, /* runs before power-on (e.g. writing an SD/eMMC image offline) */
	DEPLOY_NO_HASH = 8,    /* the method needs no artefact hash (hashed only for ctx->record_hashes) */
};

struct deploy_ctx {
	const struct kernel_cfg *kernel; /* artifacts */
	const char *bootargs;            /* full kernel command line incl. the mode's */
	struct uboot *uboot;             /* when DEPLOY_AT_UBOOT */
	const char *workdir;             /* scratch directory for this job */
	bool record_hashes;              /* the caller stores the artefact hashes: compute them */
};

/* Bumped when struct deploy_driver changes; every ops table sets .version to it. */
#define DEPLOY_OPS_VERSION 1

struct deploy;
typedef void (*deploy_done_cb)(struct deploy *d, int rc, const char *msg, void *arg);

struct deploy_driver {
	const char *name;          /* first: the registry finds drivers by it */
	int version;               /* DEPLOY_OPS_VERSION */
	const char *help;
	const struct opt *options;
	size_t cfg_size;
	unsigned flags;
	/* Required: run.  Optional: init, fini, cancel. */
	int (*init)(struct deploy *d, struct lab_err *e);
	void (*fini)(struct deploy *d);
	int (*run)(struct deploy *d, const struct deploy_ctx *ctx);
	void (*cancel)(struct deploy *d);
};

struct deploy {
	const struct deploy_driver *drv;
	struct loop *loop;
	char *board;
	void *cfg;
	void *priv;
	uint64_t timeout_ms;
	deploy_done_cb cb;
	void *cb_arg;
	bool busy;
	struct loop_timer timer;
	int fail_rc;        /* deploy_run could not start: reported by the timer */
	char fail_msg[600];
	/* the board's state directory ($TMPDIR/emmclab-BOARD unless the method's
	 * init sets its own): holds the artefact hash cache */
	char *state_dir;
	struct hashcache_req *hash; /* hashing in flight, into hash_tmp */
	char hash_tmp[3][65];
	struct deploy_ctx ctx;      /* the run's context (strings owned below) */
	char *ctx_bootargs, *ctx_workdir;
	/* artifacts verified for the last run: kind -> sha256 */
	char kernel_sha256[65], initrd_sha256[65], dtb_sha256[65], image_sha256[65];
};

/* Every deploy method, one row each, NULL-terminated. */
extern const struct deploy_driver *const deploy_drivers[];
const struct deploy_driver *deploy_driver_find(const char *name);
/* Check one ops table (version, name, help, required hooks). */
int deploy_ops_check(const struct deploy_driver *d, struct lab_err *e);
/* deploy_ops_check on every row of deploy_drivers. */
int deploy_registry_check(struct lab_err *e);
int deploy_new(struct loop *l, const char *board, const struct cfg_node *cfg, struct deploy **out,
	       struct lab_err *e);
/* Validate a `deploy:` block (method name and every key) without creating it. */
int deploy_check_cfg(const char *board, const struct cfg_node *cfg, struct lab_err *e);
void deploy_free(struct deploy *d);
int deploy_run(struct deploy *d, const struct deploy_ctx *ctx, deploy_done_cb cb, void *arg);
void deploy_complete(struct deploy *d, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
