/*
 * opt.h - option tables (fio's options.c): one table per struct drives YAML
 * parsing, validation, defaults, `emmclab help`, printing the resolved config
 * and docs.  Unknown keys are errors that suggest the nearest valid key.
 */
#ifndef EMMCLAB_OPT_H
#define EMMCLAB_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cfgnode.h"
#include "util.h"

enum opt_type {
	OPT_STR,      /* char *  (malloc'd) */
	OPT_INT,      /* int64_t, range min..max */
	OPT_DOUBLE,   /* double, range min..max */
	OPT_BOOL,     /* bool */
	OPT_DURATION, /* uint64_t milliseconds; "250ms", "30s", "5m", "8h", bare number = seconds */
	OPT_SIZE,     /* uint64_t bytes; "64MiB", "4k", "32G" (binary units) */
	OPT_ENUM,     /* int index into .choices (NULL-terminated) */
	OPT_STRLIST,  /* struct opt_strlist */
	OPT_NODE,     /* struct cfg_node * (cloned, kept raw: driver-specific sub-blocks) */
	OPT_SECTION,  /* nested struct at offset, parsed with .sub */
	OPT_ARGV,     /* struct opt_strlist: a command template (argv, no shell); a {placeholder}
		       * inside the script of `sh -c SCRIPT` is an error */
	OPT_NAME,     /* char * (malloc'd), a safe name: lab_name_check() (util.h); "" = unset unless required */
};

enum opt_flags {
	OPT_REQUIRED = 1,
	OPT_HIDDEN = 2, /* not in help output */
};

struct opt_strlist {
	char **v;
	size_t n;
};

struct opt {
	const char *key;
	enum opt_type type;
	size_t offset;              /* offsetof(struct X, field) */
	const char *def;            /* default, as it would be written in YAML; NULL = none */
	double min, max;            /* for INT/DOUBLE/DURATION/SIZE when min < max */
	const char *const *choices; /* OPT_ENUM */
	const char *help;
	const struct opt *sub;      /* OPT_SECTION: table of the nested struct */
	unsigned flags;
};
/* Tables end with an entry whose key is NULL. */

/* Fill defaults for every entry of the table into obj. */
int opt_defaults(const struct opt *table, void *obj, struct lab_err *e);
/* Parse map node into obj (defaults must have been applied). Unknown keys,
 * wrong types, out-of-range values: error naming file:line:col and the key,
 * with "did you mean 'x'?" for near misses. */
int opt_parse(const struct opt *table, const struct cfg_node *map, void *obj, struct lab_err *e);
/* Parse one scalar for one option (also used for --set key=value on the command line). */
int opt_parse_value(const struct opt *o, const struct cfg_node *val, void *obj, struct lab_err *e);
/* Nearest key in table to `key` (edit distance <= 3), or NULL. */
const char *opt_suggest(const struct opt *table, const char *key);
/* Print the resolved values as YAML at indent. */
void opt_print(FILE *f, const struct opt *table, const void *obj, int indent);
/* Print help: key, type, default, range, help text. */
void opt_help(FILE *f, const struct opt *table, int indent);
/* Free the malloc'd members (strings, lists, nodes, sections). */
void opt_free(const struct opt *table, void *obj);

/* Print one option as "key: value" YAML line(s). */
void opt_print_value(FILE *f, const struct opt *o, const void *obj, int indent);
/* Markdown table of a table's keys (docs/configuration.md is generated from it). */
void opt_schema_md(FILE *f, const struct opt *table, const char *prefix);
/* Shortest exact spellings ("1h30m", "64MiB") that opt_parse_* read back. */
void opt_format_duration(char *buf, size_t n, uint64_t ms);
void opt_format_size(char *buf, size_t n, uint64_t bytes);

/* Index of the SCRIPT of a `sh -c SCRIPT ...` argv (also -ec, -xc; any of sh,
 * bash, dash, ash, ksh, mksh, zsh by basename), or 0 when argv is not one. */
size_t opt_argv_script(const struct opt_strlist *argv);

/* The error for a value that is not a safe name (OPT_NAME, and map keys
 * checked by hand): "file:line:col: 'key': 'v' is not a valid name: why (grammar)". */
int opt_name_error(struct lab_err *e, const struct cfg_node *at, const char *key,
		   const char *value, const char *why);

int opt_parse_duration(const char *s, uint64_t *ms);
int opt_parse_size(const char *s, uint64_t *bytes);

#endif
