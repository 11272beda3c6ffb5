/*
 * cfgnode.h - a YAML document as a tree that remembers where every node came
 * from (file:line:column, 1-based), so every configuration error can name it.
 * Parsed with libyaml.  `include:` handling and defaults merging live in config.c.
 */
#ifndef EMMCLAB_CFGNODE_H
#define EMMCLAB_CFGNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "util.h"

enum cfg_kind { CFG_SCALAR, CFG_MAP, CFG_SEQ, CFG_NULL };

struct cfg_node {
	enum cfg_kind kind;
	const char *file; /* shared, owned by the document */
	int line, col;
	char *value;      /* CFG_SCALAR */
	int quoted;       /* scalar was quoted in the source (so "yes" stays a string) */
	size_t n;         /* entries of a map or items of a seq */
	struct cfg_node **keys;  /* CFG_MAP: key scalars (with their positions) */
	struct cfg_node **items; /* CFG_MAP: values; CFG_SEQ: items */
};

/* Parse a file (or a buffer, with `name` for messages).  Errors: "file:line:col: msg". */
int cfg_parse_file(const char *path, struct cfg_node **out, struct lab_err *e);
int cfg_parse_buffer(const char *name, const char *buf, size_t len, struct cfg_node **out,
		     struct lab_err *e);
void cfg_free(struct cfg_node *n);
struct cfg_node *cfg_clone(const struct cfg_node *n);

struct cfg_node *cfg_map_get(const struct cfg_node *map, const char *key);
/* Deep-merge `over` onto a copy of `base` (maps merge key by key, others replace). */
struct cfg_node *cfg_merge(const struct cfg_node *base, const struct cfg_node *over);

/* Error at a node: "file:line:col: message". */
int cfg_error(struct lab_err *e, const struct cfg_node *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A new scalar node (e.g. from --set key=value); `file` is interned, not owned. */
struct cfg_node *cfg_new_scalar(const char *file, int line, int col, const char *value);

/* Emit YAML that cfg_parse_* reads back to the same tree (block style, at indent). */
void cfg_print(FILE *f, const struct cfg_node *n, int indent);
/* Emit "key: value" (value inline or as a nested block); NULL value prints "~". */
void cfg_print_value(FILE *f, const char *key, const struct cfg_node *n, int indent);
/* Emit a string as a YAML scalar that re-reads as that string (quoted when needed). */
void cfg_print_string(FILE *f, const char *s);

#endif
