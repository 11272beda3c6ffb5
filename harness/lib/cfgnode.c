/*
 * cfgnode.c - YAML (libyaml event stream) to a positioned tree.
 *
 * Every node, map keys included, carries file:line:col (1-based).  Anchors
 * and aliases are resolved by deep copy (with a node budget against alias
 * bombs); "<<" merge keys are honoured; duplicate keys and multi-document
 * files are errors.  File names are interned for the life of the process so
 * clones (kept by drivers) never dangle when the parsed document is freed.
 */
#include "cfgnode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <yaml.h>

#define CFG_MAX_FILE (16u << 20)  /* configuration files are small; cap reads */
#define CFG_MAX_DEPTH 64
#define CFG_MAX_NODES 200000      /* including alias expansions */

/* Interned file names: tiny, few, and referenced by clones that outlive documents. */
static char **cfg_names;
static size_t cfg_nnames;

static const char *intern_name(const char *name)
{
	for (size_t i = 0; i < cfg_nnames; i++)
		if (strcmp(cfg_names[i], name) == 0)
			return cfg_names[i];
	cfg_names = xreallocarray(cfg_names, cfg_nnames + 1, sizeof *cfg_names);
	cfg_names[cfg_nnames] = xstrdup(name);
	return cfg_names[cfg_nnames++];
}

struct cfg_node *cfg_new_scalar(const char *file, int line, int col, const char *value)
{
	struct cfg_node *n = xcalloc(1, sizeof *n);
	n->kind = CFG_SCALAR;
	n->file = intern_name(file ? file : "<command line>");
	n->line = line;
	n->col = col;
	n->value = xstrdup(value ? value : "");
	return n;
}

int cfg_error(struct lab_err *e, const struct cfg_node *at, const char *fmt, ...)
{
	char msg[sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (at && at->file)
		return lab_err_set(e, LAB_EUSAGE, "%s:%d:%d: %s", at->file, at->line, at->col, msg);
	return lab_err_set(e, LAB_EUSAGE, "%s", msg);
}

void cfg_free(struct cfg_node *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++) {
		if (n->keys)
			cfg_free(n->keys[i]);
		if (n->items)
			cfg_free(n->items[i]);
	}
	free(n->keys);
	free(n->items);
	free(n->value);
	free(n);
}

struct cfg_node *cfg_clone(const struct cfg_node *n)
{
	if (n == NULL)
		return NULL;
	struct cfg_node *c = xcalloc(1, sizeof *c);
	c->kind = n->kind;
	c->file = n->file;
	c->line = n->line;
	c->col = n->col;
	c->quoted = n->quoted;
	c->value = n->value ? xstrdup(n->value) : NULL;
	c->n = n->n;
	if (n->kind == CFG_MAP || n->kind == CFG_SEQ) {
		c->items = xcalloc(n->n + 1, sizeof *c->items);
		if (n->kind == CFG_MAP)
			c->keys = xcalloc(n->n + 1, sizeof *c->keys);
		for (size_t i = 0; i < n->n; i++) {
			c->items[i] = cfg_clone(n->items[i]);
			if (n->kind == CFG_MAP)
				c->keys[i] = cfg_clone(n->keys[i]);
		}
	}
	return c;
}

static ssize_t map_index(const struct cfg_node *map, const char *key)
{
	if (map == NULL || map->kind != CFG_MAP || key == NULL)
		return -1;
	for (size_t i = 0; i < map->n; i++)
		if (map->keys[i] && map->keys[i]->value && strcmp(map->keys[i]->value, key) == 0)
			return (ssize_t)i;
	return -1;
}

struct cfg_node *cfg_map_get(const struct cfg_node *map, const char *key)
{
	ssize_t i = map_index(map, key);
	return i < 0 ? NULL : map->items[i];
}

static void map_append(struct cfg_node *map, struct cfg_node *key, struct cfg_node *val)
{
	map->keys = xreallocarray(map->keys, map->n + 2, sizeof *map->keys);
	map->items = xreallocarray(map->items, map->n + 2, sizeof *map->items);
	map->keys[map->n] = key;
	map->items[map->n] = val;
	map->n++;
	map->keys[map->n] = NULL;
	map->items[map->n] = NULL;
}

struct cfg_node *cfg_merge(const struct cfg_node *base, const struct cfg_node *over)
{
	if (over == NULL)
		return cfg_clone(base);
	if (base == NULL || base->kind != CFG_MAP || over->kind != CFG_MAP)
		return cfg_clone(over);
	/* A driver block that names another driver replaces the block: the keys
	 * of one driver mean nothing to another (a board's fastboot deploy does not
	 * inherit the lab default's TFTP server). */
	const struct cfg_node *bd = cfg_map_get(base, "driver"), *od = cfg_map_get(over, "driver");
	if (bd && od && bd->kind == CFG_SCALAR && od->kind == CFG_SCALAR &&
	    strcmp(bd->value, od->value) != 0)
		return cfg_clone(over);
	struct cfg_node *m = cfg_clone(base);
	/* The merged map is reported at the overriding map's position. */
	m->file = over->file;
	m->line = over->line;
	m->col = over->col;
	for (size_t i = 0; i < over->n; i++) {
		ssize_t j = map_index(m, over->keys[i]->value);
		if (j < 0) {
			map_append(m, cfg_clone(over->keys[i]), cfg_clone(over->items[i]));
		} else {
			struct cfg_node *v = cfg_merge(m->items[j], over->items[i]);
			cfg_free(m->items[j]);
			m->items[j] = v;
			cfg_free(m->keys[j]);
			m->keys[j] = cfg_clone(over->keys[i]);
		}
	}
	return m;
}

/* ---- parser ---- */

struct anchor {
	char *name;
	struct cfg_node *node; /* in the tree or in parser.retired: valid until parse ends */
};

struct parser {
	yaml_parser_t yp;
	const char *file;
	struct anchor *anchors;
	size_t nanchors;
	/* nodes dropped from the tree while parsing ("<<" keys and their values, after
	 * the merge): an anchor may point into them and a later alias copy them, so
	 * they are freed when the parse ends, not when they are dropped */
	struct cfg_node **retired;
	size_t nretired;
	size_t nodes;
	struct lab_err *e;
};

static struct cfg_node *new_node(struct parser *p, enum cfg_kind kind, const yaml_mark_t *m)
{
	struct cfg_node *n = xcalloc(1, sizeof *n);
	n->kind = kind;
	n->file = p->file;
	n->line = (int)m->line + 1;
	n->col = (int)m->column + 1;
	p->nodes++;
	return n;
}

static int perr(struct parser *p, const yaml_mark_t *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct parser *p, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return lab_err_set(p->e, LAB_EUSAGE, "%s:%d:%d: %s", p->file, (int)m->line + 1,
			   (int)m->column + 1, msg);
}

/* The first control character of s (C0 but tab and newline, DEL, C1), or -1. */
static int control_byte(const char *s)
{
	for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
		if ((*q < 0x20 && *q != '\t' && *q != '\n') || *q == 0x7f)
			return *q;
		if (q[0] == 0xc2 && q[1] >= 0x80 && q[1] <= 0x9f)
			return q[1];
	}
	return -1;
}

static int syntax_error(struct parser *p)
{
	yaml_parser_t *y = &p->yp;
	const char *problem = y->problem ? y->problem : "invalid YAML";
	yaml_mark_t m = y->problem_mark;
	if (y->error == YAML_READER_ERROR) {
		/* the reader reports a byte offset, not a line */
		return lab_err_set(p->e, LAB_EUSAGE, "%s: %s (byte %zu)", p->file, problem,
				   y->problem_offset);
	}
	if (y->context)
		return perr(p, &m, "%s %s", problem, y->context);
	return perr(p, &m, "%s", problem);
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->yp, ev))
		return syntax_error(p);
	return LAB_OK;
}

static void add_anchor(struct parser *p, const yaml_char_t *name, struct cfg_node *n)
{
	if (name == NULL)
		return;
	for (size_t i = 0; i < p->nanchors; i++) {
		if (strcmp(p->anchors[i].name, (const char *)name) == 0) {
			p->anchors[i].node = n; /* YAML: a redefined anchor shadows the old one */
			return;
		}
	}
	p->anchors = xreallocarray(p->anchors, p->nanchors + 1, sizeof *p->anchors);
	p->anchors[p->nanchors].name = xstrdup((const char *)name);
	p->anchors[p->nanchors].node = n;
	p->nanchors++;
}

static void retire(struct parser *p, struct cfg_node *n)
{
	p->retired = xreallocarray(p->retired, p->nretired + 1, sizeof *p->retired);
	p->retired[p->nretired++] = n;
}

static size_t count_nodes(const struct cfg_node *n)
{
	size_t c = 1;
	if (n->kind != CFG_MAP && n->kind != CFG_SEQ)
		return c;
	for (size_t i = 0; i < n->n; i++)
		c += count_nodes(n->items[i]) + (n->kind == CFG_MAP ? 1 : 0);
	return c;
}

static bool is_null_word(const char *s)
{
	return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static int parse_node(struct parser *p, yaml_event_t *ev, int depth, struct cfg_node **out);

/* Apply "<<: *anchor" (or a list of them): keys not set explicitly are copied in. */
static int apply_merge(struct parser *p, struct cfg_node *map, struct cfg_node *src)
{
	if (src->kind == CFG_SEQ) {
		for (size_t i = 0; i < src->n; i++) {
			int rc = apply_merge(p, map, src->items[i]);
			if (rc)
				return rc;
		}
		return LAB_OK;
	}
	if (src->kind != CFG_MAP)
		return cfg_error(p->e, src, "'<<' merge needs a map or a list of maps");
	for (size_t i = 0; i < src->n; i++) {
		if (map_index(map, src->keys[i]->value) >= 0)
			continue;
		map_append(map, cfg_clone(src->keys[i]), cfg_clone(src->items[i]));
	}
	return LAB_OK;
}

static int parse_map(struct parser *p, struct cfg_node *map, int depth)
{
	struct cfg_node **merges = NULL;
	size_t nmerges = 0;
	int rc = LAB_OK;
	for (;;) {
		yaml_event_t ev;
		if ((rc = next_event(p, &ev)))
			break;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		struct cfg_node *key = NULL, *val = NULL;
		yaml_mark_t km = ev.start_mark;
		rc = parse_node(p, &ev, depth + 1, &key);
		yaml_event_delete(&ev);
		if (rc)
			break;
		if (key->kind != CFG_SCALAR && key->kind != CFG_NULL) {
			rc = perr(p, &km, "map keys must be plain scalars");
			cfg_free(key);
			break;
		}
		if (key->kind == CFG_NULL) {
			/* "~: x" or ": x": keep the literal text so messages can name it */
			key->kind = CFG_SCALAR;
			if (key->value == NULL)
				key->value = xstrdup("");
		}
		if ((rc = next_event(p, &ev))) {
			cfg_free(key);
			break;
		}
		rc = parse_node(p, &ev, depth + 1, &val);
		yaml_event_delete(&ev);
		if (rc) {
			cfg_free(key);
			break;
		}
		if (!key->quoted && strcmp(key->value, "<<") == 0) {
			merges = xreallocarray(merges, nmerges + 1, sizeof *merges);
			merges[nmerges++] = val;
			retire(p, key);
			continue;
		}
		ssize_t dup = map_index(map, key->value);
		if (dup >= 0) {
			rc = cfg_error(p->e, key, "duplicate key '%s' (first at line %d:%d)", key->value,
				       map->keys[dup]->line, map->keys[dup]->col);
			cfg_free(key);
			cfg_free(val);
			break;
		}
		map_append(map, key, val);
	}
	for (size_t i = 0; i < nmerges; i++) {
		if (!rc)
			rc = apply_merge(p, map, merges[i]);
		retire(p, merges[i]);
	}
	free(merges);
	return rc;
}

static int parse_seq(struct parser *p, struct cfg_node *seq, int depth)
{
	for (;;) {
		yaml_event_t ev;
		int rc = next_event(p, &ev);
		if (rc)
			return rc;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return LAB_OK;
		}
		struct cfg_node *item = NULL;
		rc = parse_node(p, &ev, depth + 1, &item);
		yaml_event_delete(&ev);
		if (rc)
			return rc;
		seq->items = xreallocarray(seq->items, seq->n + 2, sizeof *seq->items);
		seq->items[seq->n++] = item;
		seq->items[seq->n] = NULL;
	}
}

/* Build the node that starts with event ev (ev is owned by the caller). */
static int parse_node(struct parser *p, yaml_event_t *ev, int depth, struct cfg_node **out)
{
	*out = NULL;
	if (depth > CFG_MAX_DEPTH)
		return perr(p, &ev->start_mark, "nesting deeper than %d levels", CFG_MAX_DEPTH);
	if (p->nodes > CFG_MAX_NODES)
		return perr(p, &ev->start_mark, "document too large (more than %d nodes)", CFG_MAX_NODES);
	struct cfg_node *n = NULL;
	int rc = LAB_OK;
	switch (ev->type) {
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)ev->data.alias.anchor;
		for (size_t i = p->nanchors; i-- > 0;) {
			if (strcmp(p->anchors[i].name, name) == 0 && p->anchors[i].node) {
				size_t cost = count_nodes(p->anchors[i].node);
				if (p->nodes + cost > CFG_MAX_NODES)
					return perr(p, &ev->start_mark,
						    "alias '*%s' expands beyond %d nodes", name,
						    CFG_MAX_NODES);
				p->nodes += cost;
				n = cfg_clone(p->anchors[i].node);
				/* the copy is reported where the alias is used */
				n->line = (int)ev->start_mark.line + 1;
				n->col = (int)ev->start_mark.column + 1;
				break;
			}
		}
		if (n == NULL)
			return perr(p, &ev->start_mark, "unknown anchor '*%s'", name);
		break;
	}
	case YAML_SCALAR_EVENT: {
		const char *v = (const char *)ev->data.scalar.value;
		const char *tag = (const char *)ev->data.scalar.tag;
		bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
			     ev->data.scalar.style == YAML_ANY_SCALAR_STYLE;
		bool str_tag = tag && strcmp(tag, YAML_STR_TAG) == 0;
		if (plain && !str_tag && is_null_word(v)) {
			n = new_node(p, CFG_NULL, &ev->start_mark);
			n->value = xstrdup(v);
		} else {
			n = new_node(p, CFG_SCALAR, &ev->start_mark);
			n->value = xstrndup(v, ev->data.scalar.length);
			n->quoted = !plain || str_tag;
			if (strlen(n->value) != ev->data.scalar.length) {
				cfg_free(n);
				return perr(p, &ev->start_mark, "NUL byte in scalar");
			}
			/* libyaml refuses raw control bytes but lets escapes ("\e", "\x01",
			 * "\u009b") make them: check the unescaped value */
			int bad = control_byte(n->value);
			if (bad >= 0) {
				cfg_free(n);
				return perr(p, &ev->start_mark,
					    "control character U+%04X in scalar (only tab and newline "
					    "are allowed)",
					    (unsigned)bad);
			}
		}
		add_anchor(p, ev->data.scalar.anchor, n);
		break;
	}
	case YAML_SEQUENCE_START_EVENT:
		n = new_node(p, CFG_SEQ, &ev->start_mark);
		n->items = xcalloc(1, sizeof *n->items);
		rc = parse_seq(p, n, depth);
		if (!rc)
			add_anchor(p, ev->data.sequence_start.anchor, n);
		break;
	case YAML_MAPPING_START_EVENT:
		n = new_node(p, CFG_MAP, &ev->start_mark);
		n->keys = xcalloc(1, sizeof *n->keys);
		n->items = xcalloc(1, sizeof *n->items);
		rc = parse_map(p, n, depth);
		if (!rc)
			add_anchor(p, ev->data.mapping_start.anchor, n);
		break;
	default:
		return perr(p, &ev->start_mark, "unexpected YAML event %d", (int)ev->type);
	}
	if (rc) {
		cfg_free(n);
		return rc;
	}
	*out = n;
	return LAB_OK;
}

/* Expect an event of `type`; the event is consumed. */
static int expect_event(struct parser *p, yaml_event_type_t type, yaml_event_t *ev)
{
	int rc = next_event(p, ev);
	if (rc)
		return rc;
	if (ev->type != type) {
		rc = perr(p, &ev->start_mark, "unexpected YAML event %d", (int)ev->type);
		yaml_event_delete(ev);
	}
	return rc;
}

int cfg_parse_buffer(const char *name, const char *buf, size_t len, struct cfg_node **out,
		     struct lab_err *e)
{
	struct parser p = {.file = intern_name(name ? name : "<buffer>"), .e = e};
	yaml_event_t ev;
	struct cfg_node *root = NULL;
	int rc;

	*out = NULL;
	if (!yaml_parser_initialize(&p.yp))
		return lab_err_set(e, LAB_EINFRA, "%s: cannot initialise the YAML parser", p.file);
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)buf, len);

	if ((rc = expect_event(&p, YAML_STREAM_START_EVENT, &ev)))
		goto out;
	yaml_event_delete(&ev);
	if ((rc = next_event(&p, &ev)))
		goto out;
	if (ev.type == YAML_STREAM_END_EVENT) {
		/* an empty file is an empty (null) document */
		root = new_node(&p, CFG_NULL, &ev.start_mark);
		root->line = root->col = 1;
		yaml_event_delete(&ev);
		goto out;
	}
	if (ev.type != YAML_DOCUMENT_START_EVENT) {
		rc = perr(&p, &ev.start_mark, "expected a YAML document");
		yaml_event_delete(&ev);
		goto out;
	}
	yaml_event_delete(&ev);
	if ((rc = next_event(&p, &ev)))
		goto out;
	rc = parse_node(&p, &ev, 0, &root);
	yaml_event_delete(&ev);
	if (rc)
		goto out;
	if ((rc = expect_event(&p, YAML_DOCUMENT_END_EVENT, &ev)))
		goto out;
	yaml_event_delete(&ev);
	if ((rc = next_event(&p, &ev)))
		goto out;
	if (ev.type == YAML_DOCUMENT_START_EVENT)
		rc = perr(&p, &ev.start_mark,
			  "more than one YAML document in one file is not supported");
	else if (ev.type != YAML_STREAM_END_EVENT)
		rc = perr(&p, &ev.start_mark, "unexpected YAML event %d", (int)ev.type);
	yaml_event_delete(&ev);
out:
	for (size_t i = 0; i < p.nanchors; i++)
		free(p.anchors[i].name);
	free(p.anchors);
	for (size_t i = 0; i < p.nretired; i++)
		cfg_free(p.retired[i]);
	free(p.retired);
	yaml_parser_delete(&p.yp);
	if (rc) {
		cfg_free(root);
		return rc;
	}
	*out = root;
	return LAB_OK;
}

int cfg_parse_file(const char *path, struct cfg_node **out, struct lab_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	*out = NULL;
	int rc = lab_read_file(path, CFG_MAX_FILE, &buf, &len, e);
	if (rc)
		return rc;
	rc = cfg_parse_buffer(path, buf, len, out, e);
	free(buf);
	return rc;
}

/* ---- emitter ---- */

static bool is_special_word(const char *s)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "y", "n",
					    "null", "~", NULL};
	for (size_t i = 0; words[i]; i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

static bool looks_numeric(const char *s)
{
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	if (*p == '.')
		p++;
	return (*p >= '0' && *p <= '9');
}

/* The UTF-8 length of a character libyaml will not read back from a printed
 * file as it was, or 0: U+2028 and U+2029 are line breaks to it (a plain
 * scalar ends there, a quoted one folds), U+FEFF at the start of a line is
 * skipped as a byte order mark, and U+FFFE/U+FFFF are refused by its reader.
 * Escapes ("\u2028") make all of them; printed, they must be escaped back
 * (found by fuzz_config). */
static size_t unreadable_char(const unsigned char *p)
{
	if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
		return 3;
	if (p[0] == 0xef && ((p[1] == 0xbb && p[2] == 0xbf) || (p[1] == 0xbf && p[2] >= 0xbe)))
		return 3;
	return 0;
}

/* True when s can be written as a plain (unquoted) scalar without changing the syntax. */
static bool cfg_plain_safe(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return false;
	/* printed plain as a key, "<<" would become a merge (found by fuzz_config) */
	if (strcmp(s, "<<") == 0)
		return false;
	if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) && !(s[0] == '-' && s[1] != ' ' && s[1] != '\0'))
		return false;
	if (s[0] == ' ' || s[strlen(s) - 1] == ' ')
		return false;
	/* "---" / "..." at the start of a line are document markers (found by fuzz_config) */
	if ((strncmp(s, "---", 3) == 0 || strncmp(s, "...", 3) == 0) &&
	    (s[3] == '\0' || s[3] == ' ' || s[3] == '\t'))
		return false;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20 || c == 0x7f || unreadable_char((const unsigned char *)p))
			return false;
		if (c == ':' && (p[1] == ' ' || p[1] == '\0'))
			return false;
		if (c == '#' && p > s && p[-1] == ' ')
			return false;
		if (strchr(",[]{}", c))
			return false; /* safe in block context, but not inside flow lists */
	}
	return true;
}

static void print_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(f, "\\x%02x", *p);
			} else if (unreadable_char(p) == 3) {
				/* all of them are 3-byte sequences: U+XXXX */
				fprintf(f, "\\u%04X",
					(unsigned)((p[0] & 0x0f) << 12 | (p[1] & 0x3f) << 6 | (p[2] & 0x3f)));
				p += 2;
			} else {
				fputc(*p, f);
			}
		}
	}
	fputc('"', f);
}

void cfg_print_string(FILE *f, const char *s)
{
	if (cfg_plain_safe(s) && !is_special_word(s) && !looks_numeric(s))
		fputs(s, f);
	else
		print_quoted(f, s);
}

static void print_scalar(FILE *f, const struct cfg_node *n)
{
	if (n->kind == CFG_NULL) {
		fputs("~", f);
	} else if (!n->quoted && cfg_plain_safe(n->value)) {
		fputs(n->value, f); /* keeps its YAML meaning (a plain "yes" stays a bool) */
	} else {
		print_quoted(f, n->value); /* it was a string in the source: keep it one */
	}
}

/* A map key and its ':'.  libyaml takes an implicit key ("k: v") only up to
 * 1024 characters; a longer one (from "? k" in the source) is written in that
 * explicit form, its ':' on the next line (found by fuzz_config). */
static void print_key(FILE *f, const char *key, int indent)
{
	/* quoted, a byte takes at most 4 ("\x01"): a short key always fits */
	if (strlen(key) < 249) {
		cfg_print_string(f, key);
		fputc(':', f);
		return;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (m == NULL)
		abort();
	cfg_print_string(m, key);
	fclose(m);
	if (len <= 1000)
		fprintf(f, "%s:", buf);
	else
		fprintf(f, "? %s\n%*s:", buf, indent, "");
	free(buf);
}

static bool is_compound(const struct cfg_node *n)
{
	return (n->kind == CFG_MAP || n->kind == CFG_SEQ) && n->n > 0;
}

static void print_inline_empty(FILE *f, const struct cfg_node *n)
{
	if (n->kind == CFG_MAP)
		fputs("{}", f);
	else if (n->kind == CFG_SEQ)
		fputs("[]", f);
	else
		print_scalar(f, n);
}

/* Print a compound node in block style.  When `first_done`, the first line's
 * indentation was already written (after "- "). */
static void print_block(FILE *f, const struct cfg_node *n, int indent, bool first_done)
{
	for (size_t i = 0; i < n->n; i++) {
		if (!(i == 0 && first_done))
			fprintf(f, "%*s", indent, "");
		const struct cfg_node *v = n->items[i];
		if (n->kind == CFG_MAP) {
			/* after "- " the key's column is indent, as on the lines below */
			print_key(f, n->keys[i]->value, indent);
			if (is_compound(v)) {
				fputc('\n', f);
				print_block(f, v, indent + 2, false);
			} else {
				fputc(' ', f);
				print_inline_empty(f, v);
				fputc('\n', f);
			}
		} else {
			fputs("- ", f);
			if (is_compound(v)) {
				print_block(f, v, indent + 2, true);
			} else {
				print_inline_empty(f, v);
				fputc('\n', f);
			}
		}
	}
}

void cfg_print(FILE *f, const struct cfg_node *n, int indent)
{
	if (n == NULL)
		return;
	if (is_compound(n)) {
		print_block(f, n, indent, false);
	} else {
		fprintf(f, "%*s", indent, "");
		print_inline_empty(f, n);
		fputc('\n', f);
	}
}

void cfg_print_value(FILE *f, const char *key, const struct cfg_node *n, int indent)
{
	fprintf(f, "%*s", indent, "");
	print_key(f, key, indent);
	if (n && is_compound(n)) {
		fputc('\n', f);
		print_block(f, n, indent + 2, false);
	} else if (n) {
		fputc(' ', f);
		print_inline_empty(f, n);
		fputc('\n', f);
	} else {
		fputs(" ~\n", f);
	}
}
