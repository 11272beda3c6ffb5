/*
 * driver.h - what every kind of driver shares (console, power, deploy): the
 * kind's explicit list of ops tables, creating a driver from its config
 * block (the kind's generic keys, then the driver's own), "did you mean" for
 * an unknown driver name, and the checks of an ops table's common head.
 *
 * Every ops table of these kinds starts with the members of struct
 * driver_head, in that order (each kind asserts it at compile time).
 */
#ifndef EMMCLAB_DRIVER_H
#define EMMCLAB_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include "cfgnode.h"
#include "opt.h"
#include "util.h"

/* The first members of every console, power and deploy ops table. */
struct driver_head {
	const char *name;
	int version; /* the kind's <KIND>_OPS_VERSION */
	const char *help;
	const struct opt *options; /* driver's own keys; NULL: none */
	size_t cfg_size;           /* size of the struct the options fill */
};

/* Compile-time proof that ops type T starts like struct driver_head. */
#define DRIVER_HEAD_ASSERT(T)                                                                      \
	_Static_assert(offsetof(T, name) == offsetof(struct driver_head, name) &&                  \
			   offsetof(T, version) == offsetof(struct driver_head, version) &&        \
			   offsetof(T, help) == offsetof(struct driver_head, help) &&              \
			   offsetof(T, options) == offsetof(struct driver_head, options) &&        \
			   offsetof(T, cfg_size) == offsetof(struct driver_head, cfg_size),        \
		       #T " must start like struct driver_head")

struct driver_kind {
	const char *kind;              /* "power", "console", "deploy": for messages */
	const void *const *list;       /* the kind's NULL-terminated const array */
	const struct opt *common_opts; /* the kind's generic keys; first member char *driver */
};

const void *driver_find(const struct driver_kind *k, const char *name);
/* Create from a driver block: parse the kind's generic keys into `common` (a
 * struct whose first member is `char *driver`, filled by k->common_opts), find
 * the ops table it names (*ops; else "unknown power driver 'x' (did you mean
 * 'y'?)" at the `driver:` node) and parse the driver's own keys into a new
 * struct (*own, freed with driver_free_own).  On error nothing is left
 * allocated; on success the caller frees `common` with opt_free(k->common_opts).
 * With own == NULL the block is only checked: everything parsed is freed. */
int driver_from_cfg(const struct driver_kind *k, const struct cfg_node *cfg, void *common,
		    const void **ops, void **own, struct lab_err *e);
void driver_free_own(const struct opt *options, void *cfg);

/* Registry checks, fio's check_engine_ops(): the head of ops (a name, the
 * expected version, a help line), then one call per required hook. */
int driver_check_head(const char *kind, const void *ops, int version, struct lab_err *e);
/* Every entry of k->list through the kind's check, and no name twice (first
 * failure wins). */
int driver_check_list(const struct driver_kind *k, int (*check)(const void *ops, struct lab_err *e),
		      struct lab_err *e);
/* "power driver 'x': no start hook" unless present (the hook is not NULL). */
int driver_check_hook(const char *kind, const char *name, bool present, const char *hook_name,
		      struct lab_err *e);

#endif
