/*
 * target.c - upload targets: the `uploads:` list of a lab or plan parsed
 * with one option table for the common keys and one per kind, the name
 * rules they share with SQUAD, and the {placeholder} templates of paths,
 * builds and environments.  See upload.h.
 */
#include "upload_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kind choices, from the registry (upload.c) so that there is one list. */
static const char *kind_names[UPLOAD_KINDS_MAX + 1];

static void kind_names_fill(void)
{
	if (kind_names[0])
		return;
	for (size_t i = 0; upload_kinds[i] && i < UPLOAD_KINDS_MAX; i++)
		kind_names[i] = upload_kinds[i]->name;
}

#define T(f) offsetof(struct upload_target, f)
static const struct opt target_opts[] = {
	{.key = "name", .type = OPT_STR, .offset = T(name), .flags = OPT_REQUIRED,
	 .help = "target name: letters, digits, '_', '.', '-' (outbox rows refer to it)"},
	{.key = "kind", .type = OPT_ENUM, .offset = T(kind_idx), .choices = kind_names,
	 .flags = OPT_REQUIRED, .help = "squad, http-put (WebDAV/object store) or webhook"},
	{.key = "url", .type = OPT_STR, .offset = T(url), .flags = OPT_REQUIRED,
	 .help = "squad: server base URL; http-put: base URL of the collection; webhook: URL to POST to"},
	{.key = "token_env", .type = OPT_STR, .offset = T(token_env),
	 .help = "environment variable holding the API token"},
	{.key = "token_file", .type = OPT_STR, .offset = T(token_file),
	 .help = "file holding the API token (refused when group or world readable)"},
	{.key = "ca_file", .type = OPT_STR, .offset = T(ca_file),
	 .help = "PEM CA bundle to verify the server with (TLS verification is always on)"},
	{.key = "timeout", .type = OPT_DURATION, .offset = T(timeout_ms), .def = "2m",
	 .help = "whole request, per attempt"},
	{.key = "connect_timeout", .type = OPT_DURATION, .offset = T(connect_timeout_ms), .def = "15s",
	 .help = "connection set-up, per attempt"},
	{.key = "retry_backoff", .type = OPT_DURATION, .offset = T(backoff_ms), .def = "1m",
	 .help = "wait after the first failed attempt; doubles per attempt, with jitter"},
	{.key = "retry_max_backoff", .type = OPT_DURATION, .offset = T(max_backoff_ms), .def = "6h",
	 .help = "longest wait between attempts"},
	{.key = "max_attempts", .type = OPT_INT, .offset = T(max_attempts), .def = "0", .min = 0,
	 .max = 1000000, .help = "give up (state failed) after this many attempts; 0 = never"},
	{0},
};
#undef T

const char *const upload_template_vars[] = {
	"kernel", "6.1.0", "board", "board1", "board_type", "sprd", "part", "part1", "plan", "nightly",
	"lab", "lab", "date", "2026-01-01", "run", "00000000-0000-4000-8000-000000000000", NULL,
};

/* ---- names ---- */

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

bool upload_squad_ident_ok(const char *s)
{
	if (!s || !*s || !ident_char(*s) || *s == '_' || *s == '.' || *s == '-')
		return false;
	for (; *s; s++)
		if (!ident_char(*s))
			return false;
	return true;
}

void upload_squad_slug(const char *in, char *out, size_t n)
{
	size_t o = 0;
	if (n == 0)
		return;
	for (const char *p = in ? in : ""; *p && o + 1 < n; p++) {
		char c = ident_char(*p) ? *p : '_';
		/* "Foresee 32GB (blue)" -> "Foresee_32GB_blue": one '_' per run of others. */
		if (c == '_' && (o == 0 || out[o - 1] == '_'))
			continue;
		out[o++] = c;
	}
	while (o && (out[o - 1] == '_' || out[o - 1] == '.' || out[o - 1] == '-'))
		o--;
	out[o] = '\0';
	/* The first character must be a letter or a digit. */
	size_t skip = 0;
	while (out[skip] == '_' || out[skip] == '.' || out[skip] == '-')
		skip++;
	memmove(out, out + skip, o - skip + 1);
	if (!out[0])
		lab_strlcpy(out, "none", n);
}

/* ---- templates ---- */

int upload_expand(const char *tmpl, const char *const *vars, char **out, struct lab_err *e)
{
	struct lab_buf b;
	lab_buf_init(&b, 4096);
	*out = NULL;
	for (const char *p = tmpl; *p;) {
		if (*p != '{') {
			size_t n = strcspn(p, "{");
			if (lab_buf_append(&b, p, n))
				goto toolong;
			p += n;
			continue;
		}
		const char *end = strchr(p, '}');
		if (!end) {
			lab_buf_free(&b);
			return lab_err_set(e, LAB_EUSAGE, "'%s': unclosed '{'", tmpl);
		}
		size_t n = (size_t)(end - p - 1);
		const char *val = NULL;
		for (const char *const *v = vars; *v; v += 2)
			if (strlen(*v) == n && strncmp(*v, p + 1, n) == 0) {
				val = v[1] ? v[1] : "";
				break;
			}
		if (!val) {
			int rc = lab_err_set(e, LAB_EUSAGE,
					     "'%s': unknown placeholder {%.*s} (kernel, board, board_type, part, "
					     "plan, lab, date, run)", tmpl, (int)n, p + 1);
			lab_buf_free(&b);
			return rc;
		}
		if (lab_buf_append(&b, val, strlen(val)))
			goto toolong;
		p = end + 1;
	}
	*out = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return LAB_OK;
toolong:
	lab_buf_free(&b);
	return lab_err_set(e, LAB_EUSAGE, "'%s': expansion longer than 4 KiB", tmpl);
}

/* ---- targets ---- */

static const struct opt *find_key(const struct opt *t, const char *k)
{
	for (; t && t->key; t++)
		if (strcmp(t->key, k) == 0)
			return t;
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

void upload_target_free(struct upload_target *t)
{
	if (t->kind && t->cfg)
		opt_free(t->kind->options, t->cfg);
	free(t->cfg);
	opt_free(target_opts, t);
	free(t->spec);
	memset(t, 0, sizeof *t);
}

/* A map with the subset of `map`'s entries whose key is (or is not) in table. */
static struct cfg_node *submap(const struct cfg_node *map, const struct opt *table, bool in)
{
	struct cfg_node *m = xcalloc(1, sizeof *m);
	*m = *map;
	m->keys = xcalloc(map->n ? map->n : 1, sizeof *m->keys);
	m->items = xcalloc(map->n ? map->n : 1, sizeof *m->items);
	m->n = 0;
	for (size_t i = 0; i < map->n; i++)
		if ((find_key(table, map->keys[i]->value) != NULL) == in) {
			m->keys[m->n] = map->keys[i];
			m->items[m->n] = map->items[i];
			m->n++;
		}
	return m;
}

static void submap_free(struct cfg_node *m)
{
	if (!m)
		return;
	free(m->keys);
	free(m->items);
	free(m);
}

/* Make every *_file value absolute (relative to the file that named it), in n. */
static void absolutize_files(struct cfg_node *n)
{
	for (size_t i = 0; i < n->n; i++) {
		struct cfg_node *v = n->items[i];
		if (v->kind != CFG_SCALAR || !v->value || !*v->value || v->value[0] == '/' ||
		    !ends_with(n->keys[i]->value, "_file"))
			continue;
		char *abs = config_path(v->file ? v->file : ".", v->value);
		if (abs[0] != '/') {
			char cwd[4096];
			if (getcwd(cwd, sizeof cwd)) {
				char *x = xasprintf("%s/%s", cwd, abs);
				free(abs);
				abs = x;
			}
		}
		free(v->value);
		v->value = abs;
	}
}

static int check_url(const struct upload_target *t, const struct cfg_node *at, struct lab_err *e)
{
	const char *u = t->url;
	if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
		return cfg_error(e, at, "target '%s': url must start with http:// or https://", t->name);
	const char *host = strstr(u, "://") + 3;
	size_t auth = strcspn(host, "/?#");
	if (memchr(host, '@', auth))
		/* Credentials in a URL end up in logs, ps and the outbox: refuse them. */
		return cfg_error(e, at,
				 "target '%s': no credentials in the url (use token_env/token_file, or "
				 "user with password_env/password_file)", t->name);
	if (auth == 0)
		return cfg_error(e, at, "target '%s': url has no host", t->name);
	return LAB_OK;
}

/* Parse one target map.  The resolved spec (paths absolute) is kept in t->spec. */
int upload_target_parse(const struct cfg_node *map, struct upload_target *t, struct lab_err *e)
{
	kind_names_fill();
	memset(t, 0, sizeof *t);
	if (!map || map->kind != CFG_MAP)
		return cfg_error(e, map, "an upload target must be a map {name, kind, url, ...}");
	t->file = map->file;
	t->line = map->line;
	t->col = map->col;
	int rc = opt_defaults(target_opts, t, e);
	if (rc)
		return rc;
	const struct cfg_node *kn = cfg_map_get(map, "kind");
	const struct upload_kind *k =
		kn && kn->kind == CFG_SCALAR ? upload_kind_find(kn->value) : NULL;
	/* Keys of neither table: suggest from both. */
	for (size_t i = 0; i < map->n; i++) {
		const char *key = map->keys[i]->value;
		if (find_key(target_opts, key) || (k && find_key(k->options, key)))
			continue;
		const char *s = opt_suggest(target_opts, key);
		if (!s && k)
			s = opt_suggest(k->options, key);
		if (s)
			return cfg_error(e, map->keys[i], "unknown key '%s' (did you mean '%s'?)", key, s);
		return cfg_error(e, map->keys[i], "unknown key '%s'%s%s", key, k ? " for kind " : "",
				 k ? k->name : "");
	}
	struct cfg_node *common = submap(map, target_opts, true);
	rc = opt_parse(target_opts, common, t, e);
	submap_free(common);
	if (rc)
		return rc;
	t->kind = upload_kinds[t->kind_idx];
	t->cfg = xcalloc(1, t->kind->cfg_size ? t->kind->cfg_size : 1);
	rc = opt_defaults(t->kind->options, t->cfg, e);
	if (rc)
		return rc;
	struct cfg_node *own = submap(map, target_opts, false);
	rc = opt_parse(t->kind->options, own, t->cfg, e);
	submap_free(own);
	if (rc)
		return rc;
	if (!upload_squad_ident_ok(t->name))
		return cfg_error(e, cfg_map_get(map, "name"),
				 "target name '%s': use letters, digits, '_', '.', '-' (starting with a "
				 "letter or digit)", t->name);
	if ((rc = check_url(t, cfg_map_get(map, "url"), e)))
		return rc;
	if (t->token_env && t->token_file)
		return cfg_error(e, map, "target '%s': token_env and token_file exclude each other",
				 t->name);
	if (t->max_backoff_ms < t->backoff_ms)
		return cfg_error(e, map, "target '%s': retry_max_backoff is shorter than retry_backoff",
				 t->name);
	if (t->kind->check && (rc = t->kind->check(t, e)))
		return rc;

	/* Resolve relative file paths now: a later --retry may run elsewhere. */
	struct cfg_node *spec = cfg_clone(map);
	absolutize_files(spec);
	for (size_t i = 0; i < spec->n; i++) {
		const char *key = spec->keys[i]->value;
		const char *v = spec->items[i]->value;
		if (!v || !ends_with(key, "_file"))
			continue;
		if (strcmp(key, "token_file") == 0) {
			free(t->token_file);
			t->token_file = xstrdup(v);
		} else if (strcmp(key, "ca_file") == 0) {
			free(t->ca_file);
			t->ca_file = xstrdup(v);
		} else {
			/* A kind's own *_file option: re-parse that one value. */
			const struct opt *o = find_key(t->kind->options, key);
			if (o && (rc = opt_parse_value(o, spec->items[i], t->cfg, e))) {
				cfg_free(spec);
				return rc;
			}
		}
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		cfg_free(spec);
		return lab_err_set(e, LAB_EINFRA, "open_memstream: %s", strerror(errno));
	}
	cfg_print(f, spec, 0);
	fclose(f);
	cfg_free(spec);
	t->spec = buf;
	return LAB_OK;
}

int upload_targets_parse(const struct cfg_node *seq, struct upload_targets *out, struct lab_err *e)
{
	memset(out, 0, sizeof *out);
	if (!seq || seq->kind == CFG_NULL)
		return LAB_OK;
	if (seq->kind != CFG_SEQ)
		return cfg_error(e, seq, "uploads: expected a list of targets");
	out->v = xcalloc(seq->n ? seq->n : 1, sizeof *out->v);
	for (size_t i = 0; i < seq->n; i++) {
		int rc = upload_target_parse(seq->items[i], &out->v[i], e);
		out->n = i + 1;
		if (!rc)
			for (size_t j = 0; j < i; j++)
				if (strcmp(out->v[j].name, out->v[i].name) == 0) {
					rc = cfg_error(e, seq->items[i],
						       "second upload target named '%s' (the first is at %s:%d)",
						       out->v[i].name, out->v[j].file ? out->v[j].file : "?",
						       out->v[j].line);
					break;
				}
		if (rc) {
			upload_targets_free(out);
			return rc;
		}
	}
	return LAB_OK;
}

void upload_targets_free(struct upload_targets *t)
{
	for (size_t i = 0; i < t->n; i++)
		upload_target_free(&t->v[i]);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

int upload_check_targets(const struct cfg_node *seq, struct lab_err *e)
{
	struct upload_targets t;
	int rc = upload_targets_parse(seq, &t, e);
	upload_targets_free(&t);
	return rc;
}

const struct cfg_node *upload_config_targets(const struct lab_cfg *c)
{
	if (!c)
		return NULL;
	if (c->plan && c->plan->uploads)
		return c->plan->uploads;
	return c->uploads;
}

void upload_schema_md(FILE *f)
{
	kind_names_fill();
	fprintf(f, "### Every target\n\n");
	opt_schema_md(f, target_opts, "");
	for (size_t i = 0; upload_kinds[i]; i++) {
		const struct upload_kind *k = upload_kinds[i];
		fprintf(f, "\n### kind: %s\n\n%s\n\n", k->name, k->help);
		if (k->options[0].key)
			opt_schema_md(f, k->options, "");
	}
}
