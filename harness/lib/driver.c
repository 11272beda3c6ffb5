/* driver.c - see driver.h. */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

static const struct driver_head *head_of(const void *ops)
{
	return ops;
}

const void *driver_find(const struct driver_kind *k, const char *name)
{
	for (size_t i = 0; k->list[i]; i++)
		if (strcmp(head_of(k->list[i])->name, name) == 0)
			return k->list[i];
	return NULL;
}

/* "unknown power driver 'x' (did you mean 'y'?)" at the `driver:` node. */
static int driver_unknown(const struct driver_kind *k, const char *name, const struct cfg_node *at,
			  struct lab_err *e)
{
	const char *best = NULL;
	int bd = 4;
	for (size_t i = 0; k->list[i]; i++) {
		const char *cand = head_of(k->list[i])->name;
		int d = lab_edit_distance(name, cand);
		if (d < bd) {
			bd = d;
			best = cand;
		}
	}
	return cfg_error(e, at, "unknown %s driver '%s'%s%s%s", k->kind, name,
			 best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
}

/* The entries of map whose key is (in_table) or is not (!in_table) in table. */
static struct cfg_node *driver_cfg_subset(const struct cfg_node *map, const struct opt *table,
					  bool in_table)
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

static int parse_common(const struct driver_kind *k, const struct cfg_node *cfg, void *common,
			const void **ops, struct lab_err *e)
{
	if (cfg == NULL || cfg->kind != CFG_MAP)
		return cfg_error(e, cfg, "%s: expected a map with 'driver:'", k->kind);
	struct cfg_node *sub = driver_cfg_subset(cfg, k->common_opts, true);
	int rc = opt_defaults(k->common_opts, common, e);
	if (!rc)
		rc = opt_parse(k->common_opts, sub, common, e);
	cfg_free(sub);
	if (rc) {
		opt_free(k->common_opts, common);
		return rc;
	}
	const char *name = *(char **)common; /* first member: char *driver */
	*ops = driver_find(k, name);
	if (!*ops) {
		rc = driver_unknown(k, name, cfg_map_get(cfg, "driver"), e);
		opt_free(k->common_opts, common);
		return rc;
	}
	return LAB_OK;
}

static int parse_own(const struct driver_kind *k, const struct driver_head *h,
		     const struct cfg_node *cfg, void **out, struct lab_err *e)
{
	void *obj = xcalloc(1, h->cfg_size ? h->cfg_size : 1);
	if (h->options) {
		struct cfg_node *own = driver_cfg_subset(cfg, k->common_opts, false);
		int rc = opt_defaults(h->options, obj, e);
		if (!rc)
			rc = opt_parse(h->options, own, obj, e);
		cfg_free(own);
		if (rc) {
			driver_free_own(h->options, obj);
			return rc;
		}
	}
	*out = obj;
	return LAB_OK;
}

int driver_from_cfg(const struct driver_kind *k, const struct cfg_node *cfg, void *common,
		    const void **ops, void **own, struct lab_err *e)
{
	int rc = parse_common(k, cfg, common, ops, e);
	if (rc)
		return rc;
	void *parsed = NULL;
	rc = parse_own(k, head_of(*ops), cfg, &parsed, e);
	if (rc || !own) {
		if (!rc)
			driver_free_own(head_of(*ops)->options, parsed);
		opt_free(k->common_opts, common);
		return rc;
	}
	*own = parsed;
	return LAB_OK;
}

void driver_free_own(const struct opt *options, void *cfg)
{
	if (cfg && options)
		opt_free(options, cfg);
	free(cfg);
}

int driver_check_head(const char *kind, const void *ops, int version, struct lab_err *e)
{
	const struct driver_head *h = head_of(ops);
	if (!h->name || !h->name[0])
		return LAB_ERR(e, LAB_EINFRA, "%s driver without a name", kind);
	if (h->version != version)
		return LAB_ERR(e, LAB_EINFRA, "%s driver '%s': ops version %d, expected %d", kind,
			       h->name, h->version, version);
	if (!h->help || !h->help[0])
		return LAB_ERR(e, LAB_EINFRA, "%s driver '%s': no help line", kind, h->name);
	return LAB_OK;
}

int driver_check_list(const struct driver_kind *k, int (*check)(const void *ops, struct lab_err *e),
		      struct lab_err *e)
{
	for (size_t i = 0; k->list[i]; i++) {
		int rc = check(k->list[i], e);
		if (rc)
			return rc;
		/* driver_find stops at the first: a second row of a name is unreachable */
		const char *name = head_of(k->list[i])->name;
		for (size_t j = 0; j < i; j++)
			if (strcmp(head_of(k->list[j])->name, name) == 0)
				return LAB_ERR(e, LAB_EINFRA, "%s driver '%s': listed twice", k->kind,
					       name);
	}
	return LAB_OK;
}

int driver_check_hook(const char *kind, const char *name, bool present, const char *hook_name,
		      struct lab_err *e)
{
	if (!present)
		return LAB_ERR(e, LAB_EINFRA, "%s driver '%s': no %s hook", kind, name, hook_name);
	return LAB_OK;
}
