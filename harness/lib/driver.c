/* driver.c - see driver.h. */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

static const char *name_of(const void *ops)
{
	return *(const char *const *)ops; /* every ops table starts with its name */
}

const void *const *driver_list(struct driver_registry *r)
{
	if (!r->list[0]) {
		size_t n = 0;
		for (size_t i = 0; i < r->nall; i++)
			if (r->all[i])
				r->list[n++] = r->all[i];
		r->list[n] = NULL;
	}
	return r->list;
}

const void *driver_find(struct driver_registry *r, const char *name)
{
	const void *const *l = driver_list(r);
	for (size_t i = 0; l[i]; i++)
		if (strcmp(name_of(l[i]), name) == 0)
			return l[i];
	return NULL;
}

int driver_unknown(struct driver_registry *r, const char *name, const struct cfg_node *at,
		   struct lab_err *e)
{
	const void *const *l = driver_list(r);
	const char *best = NULL;
	int bd = 4;
	for (size_t i = 0; l[i]; i++) {
		int d = lab_edit_distance(name, name_of(l[i]));
		if (d < bd) {
			bd = d;
			best = name_of(l[i]);
		}
	}
	return cfg_error(e, at, "unknown %s driver '%s'%s%s%s", r->kind, name,
			 best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
}

struct cfg_node *driver_cfg_subset(const struct cfg_node *map, const struct opt *table, bool in_table)
{
	struct cfg_node *n = xcalloc(1, sizeof *n);
	n->kind = CFG_MAP;
	n->file = map->file;
	n->line = map->line;
	n->col = map->col;
	n->keys = xcalloc(map->n + 1, sizeof *n->keys);
	n->items = xcalloc(map->n + 1, sizeof *n->items);
	for (size_t i = 0; i < map->n; i++) {
		bool in = false;
		for (const struct opt *o = table; o->key; o++)
			if (strcmp(o->key, map->keys[i]->value) == 0)
				in = true;
		if (in == in_table) {
			n->keys[n->n] = cfg_clone(map->keys[i]);
			n->items[n->n] = cfg_clone(map->items[i]);
			n->n++;
		}
	}
	return n;
}

int driver_parse_common(struct driver_registry *r, const struct opt *common_opts,
			const struct cfg_node *cfg, void *common, const void **ops, struct lab_err *e)
{
	if (cfg == NULL || cfg->kind != CFG_MAP)
		return cfg_error(e, cfg, "%s: expected a map with 'driver:'", r->kind);
	struct cfg_node *sub = driver_cfg_subset(cfg, common_opts, true);
	int rc = opt_defaults(common_opts, common, e);
	if (!rc)
		rc = opt_parse(common_opts, sub, common, e);
	cfg_free(sub);
	if (rc) {
		opt_free(common_opts, common);
		return rc;
	}
	const char *name = *(char **)common; /* first member: char *driver */
	*ops = driver_find(r, name);
	if (!*ops) {
		rc = driver_unknown(r, name, cfg_map_get(cfg, "driver"), e);
		opt_free(common_opts, common);
		return rc;
	}
	return LAB_OK;
}

int driver_parse_own(const struct opt *options, size_t cfg_size, const struct opt *common_opts,
		     const struct cfg_node *cfg, void **out, struct lab_err *e)
{
	void *obj = xcalloc(1, cfg_size ? cfg_size : 1);
	if (options) {
		struct cfg_node *own = driver_cfg_subset(cfg, common_opts, false);
		int rc = opt_defaults(options, obj, e);
		if (!rc)
			rc = opt_parse(options, own, obj, e);
		cfg_free(own);
		if (rc) {
			driver_free_own(options, obj);
			return rc;
		}
	}
	*out = obj;
	return LAB_OK;
}

void driver_free_own(const struct opt *options, void *cfg)
{
	if (cfg && options)
		opt_free(options, cfg);
	free(cfg);
}
