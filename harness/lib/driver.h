/*
 * driver.h - what every kind of driver shares (console, power, deploy):
 * a registry over the kind's ops tables, the split of a driver block into
 * the kind's generic keys and the driver's own, and "did you mean" for an
 * unknown driver name.  Every ops table starts with `const char *name`.
 */
#ifndef EMMCLAB_DRIVER_H
#define EMMCLAB_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include "cfgnode.h"
#include "opt.h"
#include "util.h"

struct driver_registry {
	const char *kind;         /* "power", "console", "deploy": for messages */
	const void *const *all;   /* the ops tables; weakly linked ones may be NULL */
	size_t nall;
	const void **list;        /* nall + 1 slots: the present ones, NULL-terminated */
};

/* The ops tables present, NULL-terminated (built on first use). */
const void *const *driver_list(struct driver_registry *r);
const void *driver_find(struct driver_registry *r, const char *name);
/* "unknown power driver 'x' (did you mean 'y'?)" at the `driver:` node. */
int driver_unknown(struct driver_registry *r, const char *name, const struct cfg_node *at,
		   struct lab_err *e);
/* Parse the kind's generic keys of a driver block into `common` (a struct
 * whose first member is `char *driver`, filled by the `common_opts` table) and
 * find the ops table it names.  On error nothing is left allocated. */
int driver_parse_common(struct driver_registry *r, const struct opt *common_opts,
			const struct cfg_node *cfg, void *common, const void **ops, struct lab_err *e);
/* Parse the driver's own keys (those not in common_opts) into a new struct of
 * cfg_size bytes through `options` (may be NULL: an empty struct).  *out is
 * freed with driver_free_own. */
int driver_parse_own(const struct opt *options, size_t cfg_size, const struct opt *common_opts,
		     const struct cfg_node *cfg, void **out, struct lab_err *e);
void driver_free_own(const struct opt *options, void *cfg);
/* The entries of map whose key is (in_table) or is not (!in_table) in table. */
struct cfg_node *driver_cfg_subset(const struct cfg_node *map, const struct opt *table, bool in_table);

#endif
