/* driver.c - see driver.h. */
#include "driver.h"

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
