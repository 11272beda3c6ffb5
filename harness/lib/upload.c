/*
 * upload.c - upload targets, the durable outbox (store table `upload`) and
 * the sender that drains it on the loop.  See upload.h for the contract;
 * the three kinds live in upload/squad.c, upload/http_put.c and
 * upload/webhook.c.
 */
#include "upload.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define UPLOAD_SECRET_MAX 4096
#define UPLOAD_DEFAULT_PARALLEL 8

static const char *const kind_names[] = {"squad", "http-put", "webhook", NULL};
static const struct upload_kind *const kinds[] = {&upload_squad, &upload_http_put, &upload_webhook};

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

/* ---- small helpers ---- */

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

/* UTC wall clock in ms, and as "YYYY-MM-DDTHH:MM:SS.mmmZ" (sortable as text). */
static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void iso_ms(char *buf, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Parse our own next_at (with or without milliseconds); -1 when unreadable. */
static int64_t parse_iso_ms(const char *s)
{
	struct tm tm = {0};
	int ms = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	if (strlen(s) > 20 && s[19] == '.')
		sscanf(s + 20, "%3d", &ms);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

static uint64_t jitter_state;

/* Uniform in [0, 1): xorshift64*, seeded from the clock and pid once. */
static double jitter01(void)
{
	if (!jitter_state)
		jitter_state = lab_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	jitter_state ^= jitter_state >> 12;
	jitter_state ^= jitter_state << 25;
	jitter_state ^= jitter_state >> 27;
	return (double)((jitter_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* Wait before attempt number `attempts + 1`: backoff * 2^(attempts-1),
 * capped, then "equal jitter" (half fixed, half random) so that a lab of
 * controllers does not hammer a recovering server in lockstep. */
static uint64_t backoff_ms(const struct upload_target *t, int64_t attempts)
{
	double d = (double)t->backoff_ms;
	for (int64_t i = 1; i < attempts && d < (double)t->max_backoff_ms; i++)
		d *= 2;
	if (t->max_backoff_ms && d > (double)t->max_backoff_ms)
		d = (double)t->max_backoff_ms;
	return (uint64_t)(d / 2 + d / 2 * jitter01());
}

static int db_err(struct store *s, struct lab_err *e, const char *what)
{
	sqlite3 *db = store_db(s);
	int code = sqlite3_errcode(db);
	return lab_err_set(e, LAB_EINFRA, "%s: %s: %s%s", store_path(s), what, sqlite3_errmsg(db),
			   code == SQLITE_FULL ? " (disk or database full)" : "");
}

static sqlite3_stmt *prep(struct store *s, const char *sql, struct lab_err *e)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
		db_err(s, e, "prepare");
		return NULL;
	}
	return q;
}

static void bind_str(sqlite3_stmt *q, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(q, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

static const char *col_str(sqlite3_stmt *q, int i)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	return t ? t : "";
}

void upload_items_add(struct upload_items *l, const char *idem_key, const char *item)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	l->v[l->n].idem_key = xstrdup(idem_key);
	l->v[l->n].item = xstrdup(item ? item : "");
	l->n++;
}

static void items_free(struct upload_items *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].idem_key);
		free(l->v[i].item);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
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

/* ---- secrets ---- */

static int secret_ok(char *v, size_t *len, const char *what, struct lab_err *e)
{
	size_t n = *len;
	while (n && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		v[--n] = '\0';
	*len = n;
	if (n == 0)
		return lab_err_set(e, LAB_EUSAGE, "%s is empty", what);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			/* A newline inside would let the value inject HTTP headers. */
			return lab_err_set(e, LAB_EUSAGE, "%s holds control characters (one line expected)",
					   what);
	return LAB_OK;
}

int upload_secret_env(const char *name, char **out, struct lab_err *e)
{
	*out = NULL;
	const char *v = getenv(name);
	if (!v || !*v)
		return lab_err_set(e, LAB_EUSAGE, "environment variable %s is not set", name);
	char *copy = xstrdup(v);
	size_t n = strlen(copy);
	char what[160];
	snprintf(what, sizeof what, "environment variable %s", name);
	int rc = secret_ok(copy, &n, what, e);
	if (rc) {
		free(copy);
		return rc;
	}
	*out = copy;
	return LAB_OK;
}

int upload_secret_file(const char *path, char **out, struct lab_err *e)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return lab_err_set(e, LAB_EUSAGE, "secret file %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return lab_err_set(e, LAB_EUSAGE, "secret file %s: not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return lab_err_set(e, LAB_EUSAGE,
				   "secret file %s is readable by group or others (mode %04o): chmod 600 it",
				   path, (unsigned)(st.st_mode & 07777));
	}
	char *buf = xmalloc(UPLOAD_SECRET_MAX + 1);
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, UPLOAD_SECRET_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;
			close(fd);
			free(buf);
			return lab_err_set(e, LAB_EINFRA, "secret file %s: %s", path, strerror(err));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == UPLOAD_SECRET_MAX) {
			close(fd);
			free(buf);
			return lab_err_set(e, LAB_EUSAGE, "secret file %s is larger than %d bytes", path,
					   UPLOAD_SECRET_MAX);
		}
	}
	close(fd);
	buf[len] = '\0';
	/* Only the first line: a trailing newline from `echo tok > file` is not part of it. */
	char *nl = memchr(buf, '\n', len);
	if (nl) {
		*nl = '\0';
		len = (size_t)(nl - buf);
	}
	char what[300];
	snprintf(what, sizeof what, "secret file %s", path);
	int rc = secret_ok(buf, &len, what, e);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return LAB_OK;
}

void upload_redact(char *msg, size_t n, const char *secret)
{
	if (!msg || !secret || strlen(secret) < 1)
		return;
	size_t sl = strlen(secret);
	char *p;
	while ((p = strstr(msg, secret)) != NULL) {
		size_t tail = strlen(p + sl);
		if (sl >= 3) {
			memcpy(p, "***", 3);
			memmove(p + 3, p + sl, tail + 1);
		} else {
			memmove(p, p + sl, tail + 1);
		}
	}
	msg[n - 1] = '\0';
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

static void target_free(struct upload_target *t)
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
static int target_parse(const struct cfg_node *map, struct upload_target *t, struct lab_err *e)
{
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
	int kind_idx = -1;
	if (kn && kn->kind == CFG_SCALAR)
		for (int i = 0; kind_names[i]; i++)
			if (strcmp(kind_names[i], kn->value) == 0)
				kind_idx = i;
	const struct upload_kind *k = kind_idx >= 0 ? kinds[kind_idx] : NULL;
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
	t->kind = kinds[t->kind_idx];
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
		int rc = target_parse(seq->items[i], &out->v[i], e);
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
		target_free(&t->v[i]);
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
	fprintf(f, "### Every target\n\n");
	opt_schema_md(f, target_opts, "");
	for (size_t i = 0; i < LAB_ARRAY_SIZE(kinds); i++) {
		fprintf(f, "\n### kind: %s\n\n%s\n\n", kinds[i]->name, kinds[i]->help);
		if (kinds[i]->options[0].key)
			opt_schema_md(f, kinds[i]->options, "");
	}
}

/* ---- runs ---- */

static int run_load(struct store *s, int64_t run_id, struct upload_run *r, struct lab_err *e)
{
	memset(r, 0, sizeof *r);
	sqlite3_stmt *q = prep(s,
			       "SELECT id, uuid, started_at, COALESCE(finished_at, ''), status,"
			       " COALESCE(plan, ''), COALESCE(lab, '') FROM run WHERE id = ?",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int st = sqlite3_step(q);
	if (st != SQLITE_ROW) {
		sqlite3_finalize(q);
		if (st == SQLITE_DONE)
			return lab_err_set(e, LAB_EUSAGE, "%s: no run %lld", store_path(s),
					   (long long)run_id);
		return db_err(s, e, "reading the run");
	}
	r->id = sqlite3_column_int64(q, 0);
	lab_strlcpy(r->uuid, col_str(q, 1), sizeof r->uuid);
	lab_strlcpy(r->started_at, col_str(q, 2), sizeof r->started_at);
	lab_strlcpy(r->finished_at, col_str(q, 3), sizeof r->finished_at);
	lab_strlcpy(r->status, col_str(q, 4), sizeof r->status);
	lab_strlcpy(r->plan, col_str(q, 5), sizeof r->plan);
	lab_strlcpy(r->lab, col_str(q, 6), sizeof r->lab);
	sqlite3_finalize(q);
	snprintf(r->date, sizeof r->date, "%.10s", r->started_at);
	return LAB_OK;
}

/* ---- queueing ---- */

static int enqueue_targets(struct store *s, const struct upload_run *run,
			   const struct upload_targets *tl, struct lab_err *e)
{
	char now[80], created[32];
	int64_t ms = wall_ms();
	iso_ms(now, sizeof now, ms);
	lab_utc_iso(created, sizeof created, ms / 1000);
	sqlite3_stmt *q = prep(s,
			       "INSERT INTO upload (run_id, target, kind, idem_key, state, attempts,"
			       " next_at, created_at, spec, item) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)"
			       " ON CONFLICT (target, idem_key) DO NOTHING",
			       e);
	if (!q)
		return LAB_EINFRA;
	int rc = LAB_OK;
	for (size_t i = 0; i < tl->n && !rc; i++) {
		const struct upload_target *t = &tl->v[i];
		struct upload_items items = {0};
		rc = t->kind->items(s, t, run, &items, e);
		for (size_t j = 0; j < items.n && !rc; j++) {
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, run->id);
			bind_str(q, 2, t->name);
			bind_str(q, 3, t->kind->name);
			bind_str(q, 4, items.v[j].idem_key);
			bind_str(q, 5, now);
			bind_str(q, 6, created);
			bind_str(q, 7, t->spec);
			bind_str(q, 8, items.v[j].item);
			if (sqlite3_step(q) != SQLITE_DONE)
				rc = db_err(s, e, "queueing an upload");
		}
		items_free(&items);
	}
	sqlite3_finalize(q);
	return rc;
}

int upload_enqueue_run_tx(struct store *s, int64_t run_id, const struct cfg_node *targets,
			  struct lab_err *e)
{
	if (sqlite3_get_autocommit(store_db(s)))
		return lab_err_set(e, LAB_EUSAGE,
				   "upload_enqueue_run_tx needs an open transaction (use upload_enqueue_run)");
	struct upload_targets tl;
	int rc = upload_targets_parse(targets, &tl, e);
	if (rc)
		return rc;
	struct upload_run run;
	if (tl.n && !(rc = run_load(s, run_id, &run, e)))
		rc = enqueue_targets(s, &run, &tl, e);
	upload_targets_free(&tl);
	return rc;
}

int upload_enqueue_run(struct store *s, int64_t run_id, const struct cfg_node *targets,
		       struct lab_err *e)
{
	sqlite3 *db = store_db(s);
	bool nested = !sqlite3_get_autocommit(db);
	if (sqlite3_exec(db, nested ? "SAVEPOINT upload_enqueue" : "BEGIN IMMEDIATE", NULL, NULL,
			 NULL) != SQLITE_OK)
		return db_err(s, e, "begin");
	int rc = upload_enqueue_run_tx(s, run_id, targets, e);
	if (!rc) {
		if (sqlite3_exec(db, nested ? "RELEASE upload_enqueue" : "COMMIT", NULL, NULL, NULL) ==
		    SQLITE_OK)
			return LAB_OK;
		rc = db_err(s, e, "commit");
	}
	if (nested) {
		sqlite3_exec(db, "ROLLBACK TO upload_enqueue", NULL, NULL, NULL);
		sqlite3_exec(db, "RELEASE upload_enqueue", NULL, NULL, NULL);
	} else {
		store_rollback(s);
	}
	return rc;
}

int upload_finish_run(struct store *s, int64_t run_id, const char *status,
		      const struct cfg_node *targets, struct lab_err *e)
{
	struct lab_err cfg_e = {0};
	int cfg_rc = upload_check_targets(targets, &cfg_e);
	int rc = store_begin(s, e);
	if (rc)
		return rc;
	rc = store_run_finish(s, run_id, status, e);
	if (!rc && !cfg_rc)
		rc = upload_enqueue_run_tx(s, run_id, targets, e);
	if (!rc)
		rc = store_commit(s, e);
	else
		store_rollback(s);
	if (!rc && cfg_rc) {
		/* The run is finished and its results safe; only the uploads are missing. */
		*e = cfg_e;
		return cfg_rc;
	}
	return rc;
}

int upload_requeue_run(struct store *s, int64_t run_id, const struct cfg_node *targets, int *n,
		       struct lab_err *e)
{
	struct upload_targets tl = {0};
	struct upload_run run;
	*n = 0;
	int rc = run_load(s, run_id, &run, e);
	if (!rc)
		rc = upload_targets_parse(targets, &tl, e);
	if (rc)
		return rc;
	if (targets && tl.n == 0) {
		upload_targets_free(&tl);
		return lab_err_set(e, LAB_EUSAGE, "the configuration has no upload targets");
	}
	if ((rc = store_begin(s, e))) {
		upload_targets_free(&tl);
		return rc;
	}
	if (tl.n)
		rc = enqueue_targets(s, &run, &tl, e);
	char now[80];
	iso_ms(now, sizeof now, wall_ms());
	sqlite3_stmt *q = rc ? NULL : prep(s,
					   "UPDATE upload SET state = 'pending', attempts = 0, next_at = ?,"
					   " last_error = NULL WHERE run_id = ? AND (?3 IS NULL OR target = ?3)"
					   " AND (?3 IS NOT NULL OR ?4 = 0)",
					   e);
	if (!rc && !q)
		rc = LAB_EINFRA;
	if (!rc && tl.n) {
		for (size_t i = 0; i < tl.n && !rc; i++) {
			sqlite3_reset(q);
			bind_str(q, 1, now);
			sqlite3_bind_int64(q, 2, run_id);
			bind_str(q, 3, tl.v[i].name);
			sqlite3_bind_int(q, 4, 1);
			if (sqlite3_step(q) != SQLITE_DONE)
				rc = db_err(s, e, "re-queueing");
			else
				*n += sqlite3_changes(store_db(s));
		}
	} else if (!rc) {
		bind_str(q, 1, now);
		sqlite3_bind_int64(q, 2, run_id);
		bind_str(q, 3, NULL);
		sqlite3_bind_int(q, 4, 0);
		if (sqlite3_step(q) != SQLITE_DONE)
			rc = db_err(s, e, "re-queueing");
		else
			*n = sqlite3_changes(store_db(s));
	}
	sqlite3_finalize(q);
	if (!rc)
		rc = store_commit(s, e);
	else
		store_rollback(s);
	upload_targets_free(&tl);
	if (!rc && *n == 0 && !targets)
		return lab_err_set(e, LAB_EUSAGE,
				   "run %lld has no uploads queued: give the targets with --config FILE",
				   (long long)run_id);
	return rc;
}

/* ---- listing ---- */

#define ROW_COLS                                                                              \
	"u.id, u.run_id, r.uuid, u.target, u.kind, u.idem_key, COALESCE(u.item, ''), u.state," \
	" u.attempts, u.next_at, u.last_error, u.created_at, u.sent_at, u.spec"

static void row_from(sqlite3_stmt *q, struct upload_row *r)
{
	r->id = sqlite3_column_int64(q, 0);
	r->run_id = sqlite3_column_int64(q, 1);
	r->run_uuid = col_str(q, 2);
	r->target = col_str(q, 3);
	r->kind = col_str(q, 4);
	r->idem_key = col_str(q, 5);
	r->item = col_str(q, 6);
	r->state = col_str(q, 7);
	r->attempts = sqlite3_column_int64(q, 8);
	r->next_at = (const char *)sqlite3_column_text(q, 9);
	r->last_error = (const char *)sqlite3_column_text(q, 10);
	r->created_at = col_str(q, 11);
	r->sent_at = (const char *)sqlite3_column_text(q, 12);
}

int upload_list(struct store *s, int64_t run_id, bool all, upload_row_cb cb, void *arg,
		struct lab_err *e)
{
	sqlite3_stmt *q = prep(s,
			       "SELECT " ROW_COLS " FROM upload u JOIN run r ON r.id = u.run_id"
			       " WHERE (?1 = 0 OR u.run_id = ?1) AND (?2 OR u.state <> 'sent') ORDER BY u.id",
			       e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_int(q, 2, all);
	int st;
	while ((st = sqlite3_step(q)) == SQLITE_ROW) {
		struct upload_row r;
		row_from(q, &r);
		cb(&r, arg);
	}
	sqlite3_finalize(q);
	if (st != SQLITE_DONE)
		return db_err(s, e, "listing uploads");
	return LAB_OK;
}

/* ---- bundle files ---- */

const char *upload_bundle_name(const char *format)
{
	static const struct {
		const char *fmt, *name;
	} names[] = {
		{"html", "report.html"}, {"json", "report.json"}, {"csv", "report.csv"},
		{"junit", "report.xml"}, {"markdown", "report.md"}, {"text", "report.txt"},
		{"sqlite", "results.db"},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(names); i++)
		if (strcmp(format, names[i].fmt) == 0)
			return names[i].name;
	return NULL;
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = fsync(fd);
	close(fd);
	return r;
}

/* Online backup of the whole store into path (tmp + rename). */
static int snapshot(struct store *s, const char *path, struct lab_err *e)
{
	char *tmp = xasprintf("%s.tmp", path);
	unlink(tmp);
	sqlite3 *dst = NULL;
	int rc = LAB_OK;
	if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp,
				 dst ? sqlite3_errmsg(dst) : "cannot open");
		goto out;
	}
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", store_db(s), "main");
	if (!b) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errmsg(dst));
		goto out;
	}
	int st = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	if (st != SQLITE_DONE) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errstr(st));
		goto out;
	}
	/* A self-contained file: no -wal beside it. */
	sqlite3_exec(dst, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
	sqlite3_close(dst);
	dst = NULL;
	if (fsync_path(tmp) < 0 || rename(tmp, path) < 0)
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", path, strerror(errno));
out:
	if (dst)
		sqlite3_close(dst);
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

int upload_bundle_file(const struct upload_job *j, const char *format, char *path, size_t n,
		       const char **name, const char **mime, struct lab_err *e)
{
	const char *nm = upload_bundle_name(format);
	if (!nm)
		return lab_err_set(e, LAB_EUSAGE, "unknown bundle format '%s'", format);
	const char *mt = "application/vnd.sqlite3";
	if (strcmp(format, "sqlite") != 0) {
		const struct report_renderer *r = report_renderer_find(format);
		if (!r)
			return lab_err_set(e, LAB_EUSAGE, "no report renderer '%s'", format);
		mt = r->mime;
	}
	if ((size_t)snprintf(path, n, "%s/%s", j->spool, nm) >= n)
		return lab_err_set(e, LAB_EINFRA, "spool path too long");
	if (name)
		*name = nm;
	if (mime)
		*mime = mt;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		return LAB_OK; /* rendered by an earlier attempt: the same bytes again */
	if (strcmp(format, "sqlite") == 0)
		return snapshot(j->s, path, e);
	return report_write_file(j->s, j->run->id, format, path, NULL, e);
}

/* ---- judging ---- */

enum upload_verdict upload_judge_default(const struct upload_job *j, const struct http_result *res)
{
	LAB_UNUSED(j);
	long st = res->status;
	if (res->rc == LAB_OK && st >= 200 && st <= 299)
		return UPLOAD_SENT;
	if (st == 0 || st == 408 || st == 425 || st == 429 || st >= 500)
		return UPLOAD_RETRY;
	if (res->rc == LAB_EPROTO && st >= 300 && st < 400)
		return UPLOAD_REJECTED; /* refused redirect */
	if (st >= 300 && st < 400)
		return UPLOAD_REJECTED;
	return st >= 400 ? UPLOAD_REJECTED : UPLOAD_RETRY;
}

/* ---- sending ---- */

struct sender;

struct flight {
	struct sender *sd;
	int64_t id;
	int64_t attempts;          /* after charging this one */
	struct upload_target own;  /* parsed from the row's spec */
	const struct upload_target *t;
	struct upload_run run;
	char *idem_key, *item, *target, *kind, *state;
	char *spool, *secret;
	struct upload_job job;
	struct http_req *req;
	struct flight *next;
};

struct sender {
	struct store *s;
	struct loop *l;
	struct http *h;
	const struct upload_send_opts *o;
	struct upload_stats *st;
	struct upload_targets over;
	char *spool_root;
	uint64_t deadline_ms;  /* monotonic; 0 = one pass */
	int parallel, inflight;
	int64_t *started;
	size_t nstarted;
	struct flight *flights;
	struct loop_timer kick, wake;
	bool done;
	int fatal;
	struct lab_err err;
};

static bool was_started(const struct sender *sd, int64_t id)
{
	for (size_t i = 0; i < sd->nstarted; i++)
		if (sd->started[i] == id)
			return true;
	return false;
}

static bool in_flight(const struct sender *sd, int64_t id)
{
	for (const struct flight *f = sd->flights; f; f = f->next)
		if (f->id == id)
			return true;
	return false;
}

static void progress(struct sender *sd, struct flight *f, const char *state, enum upload_verdict v,
		     long status, const char *msg)
{
	if (!sd->o->progress)
		return;
	struct upload_row r = {
		.id = f->id, .run_id = f->run.id, .run_uuid = f->run.uuid, .target = f->target,
		.kind = f->kind, .idem_key = f->idem_key, .item = f->item, .state = state,
		.attempts = f->attempts,
	};
	sd->o->progress(sd->o->progress_arg, &r, v, status, msg);
}

static void flight_free(struct sender *sd, struct flight *f)
{
	for (struct flight **pp = &sd->flights; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->own.name)
		target_free(&f->own);
	free(f->idem_key);
	free(f->item);
	free(f->target);
	free(f->kind);
	free(f->state);
	free(f->spool);
	if (f->secret) {
		memset(f->secret, 0, strlen(f->secret));
		free(f->secret);
	}
	free(f);
}

/* Record the outcome of an attempt.  The attempt was charged before it started. */
static void conclude(struct sender *sd, struct flight *f, enum upload_verdict v, long status,
		     const char *why)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s", why ? why : "");
	upload_redact(msg, sizeof msg, f->secret);
	const char *state = "pending";
	if (v == UPLOAD_SENT) {
		state = "sent";
		sd->st->sent++;
	} else if (v == UPLOAD_REJECTED) {
		state = "failed";
		sd->st->rejected++;
	} else if (f->t && f->t->max_attempts && f->attempts >= f->t->max_attempts) {
		char m2[512];
		snprintf(m2, sizeof m2, "gave up after %lld attempts: %.440s", (long long)f->attempts, msg);
		lab_strlcpy(msg, m2, sizeof msg);
		state = "failed";
		v = UPLOAD_REJECTED;
		sd->st->rejected++;
	} else {
		sd->st->retry++;
	}
	char now[80];
	lab_utc_iso(now, sizeof now, wall_ms() / 1000);
	sqlite3_stmt *q = prep(sd->s,
			       v == UPLOAD_SENT
				       ? "UPDATE upload SET state = 'sent', sent_at = ?2, next_at = NULL,"
					 " last_error = NULL WHERE id = ?1"
				       : "UPDATE upload SET state = ?3, last_error = ?4, next_at = CASE ?3"
					 " WHEN 'failed' THEN NULL ELSE next_at END WHERE id = ?1",
			       &sd->err);
	if (q) {
		sqlite3_bind_int64(q, 1, f->id);
		if (v == UPLOAD_SENT) {
			bind_str(q, 2, now);
		} else {
			bind_str(q, 3, state);
			bind_str(q, 4, msg);
		}
		if (sqlite3_step(q) != SQLITE_DONE && !sd->fatal)
			/* The row stays pending with its attempt charged: a later re-send is
			 * idempotent, so the worst case is one more request, never a loss. */
			sd->fatal = db_err(sd->s, &sd->err, "recording an upload");
		sqlite3_finalize(q);
	} else if (!sd->fatal) {
		sd->fatal = LAB_EINFRA;
	}
	progress(sd, f, state, v, status, msg);
}

/* The first non-empty line of an answer, control characters blanked. */
static void first_line(const char *body, size_t len, char *out, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; body && i < len && o + 1 < n; i++) {
		unsigned char ch = (unsigned char)body[i];
		if (ch == '\n' || ch == '\r') {
			if (o)
				break;
			continue;
		}
		out[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	out[o] = '\0';
}

static void pump(struct sender *sd);

static void kick_cb(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	pump(arg);
}

static void on_done(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct flight *f = arg;
	struct sender *sd = f->sd;
	f->req = NULL;
	enum upload_verdict v = f->t->kind->judge ? f->t->kind->judge(&f->job, res)
						  : upload_judge_default(&f->job, res);
	char why[512], line[200];
	first_line(res->body, res->body_len, line, sizeof line);
	if (res->err && *res->err)
		snprintf(why, sizeof why, "%s", res->err);
	else
		snprintf(why, sizeof why, "HTTP %ld%s%s", res->status, line[0] ? ": " : "", line);
	conclude(sd, f, v, res->status, why);
	sd->inflight--;
	flight_free(sd, f);
	/* Start the next ones from a timer, not from inside curl's completion. */
	loop_timer_start(sd->l, &sd->kick, 0);
}

/* Charge the attempt and set the next time, before anything goes out. */
static int charge(struct sender *sd, struct flight *f)
{
	int64_t ms = wall_ms();
	uint64_t wait = f->t ? backoff_ms(f->t, f->attempts) : 60000;
	char next[80];
	iso_ms(next, sizeof next, ms + (int64_t)wait);
	sqlite3_stmt *q = prep(sd->s,
			       "UPDATE upload SET attempts = ?2, next_at = ?3,"
			       " state = CASE state WHEN 'failed' THEN 'pending' ELSE state END WHERE id = ?1",
			       &sd->err);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, f->id);
	sqlite3_bind_int64(q, 2, f->attempts);
	bind_str(q, 3, next);
	int rc = sqlite3_step(q) == SQLITE_DONE ? LAB_OK : db_err(sd->s, &sd->err, "charging an upload attempt");
	sqlite3_finalize(q);
	return rc;
}

static const struct upload_target *override_target(const struct sender *sd, const char *name)
{
	for (size_t i = 0; i < sd->over.n; i++)
		if (strcmp(sd->over.v[i].name, name) == 0)
			return &sd->over.v[i];
	return NULL;
}

/* Start one row.  Returns false when the sender must stop (store error). */
static bool start_row(struct sender *sd, sqlite3_stmt *q)
{
	struct upload_row row;
	row_from(q, &row);
	const char *spec = (const char *)sqlite3_column_text(q, 13);
	struct flight *f = xcalloc(1, sizeof *f);
	f->sd = sd;
	f->id = row.id;
	f->attempts = row.attempts + 1;
	f->idem_key = xstrdup(row.idem_key);
	f->item = xstrdup(row.item);
	f->target = xstrdup(row.target);
	f->kind = xstrdup(row.kind);
	f->next = sd->flights;
	sd->flights = f;
	sd->started = xreallocarray(sd->started, sd->nstarted + 1, sizeof *sd->started);
	sd->started[sd->nstarted++] = row.id;

	struct lab_err e = {0};
	enum upload_verdict fail = UPLOAD_RETRY;
	int rc = LAB_OK;
	f->t = override_target(sd, row.target);
	if (!f->t && spec && *spec) {
		struct cfg_node *n = NULL;
		char name[160];
		snprintf(name, sizeof name, "outbox row %lld", (long long)row.id);
		rc = cfg_parse_buffer(name, spec, strlen(spec), &n, &e);
		if (!rc)
			rc = target_parse(n, &f->own, &e);
		cfg_free(n);
		if (rc) {
			if (f->own.name)
				target_free(&f->own);
			memset(&f->own, 0, sizeof f->own);
		} else {
			f->t = &f->own;
		}
		if (rc)
			fail = UPLOAD_REJECTED;
	} else if (!f->t) {
		rc = lab_err_set(&e, LAB_EUSAGE, "no configuration for target '%s' (give --config FILE)",
				 row.target);
		fail = UPLOAD_REJECTED;
	}
	if (!rc && strcmp(f->t->kind->name, row.kind) != 0) {
		rc = lab_err_set(&e, LAB_EUSAGE, "target '%s' is now of kind %s, the row was queued as %s",
				 row.target, f->t->kind->name, row.kind);
		fail = UPLOAD_REJECTED;
	}
	if (!rc)
		rc = run_load(sd->s, row.run_id, &f->run, &e);
	else
		f->run.id = row.run_id;

	/* From here the attempt counts, whatever happens to it. */
	if (charge(sd, f) != LAB_OK) {
		sd->fatal = LAB_EINFRA;
		flight_free(sd, f);
		return false;
	}
	sd->st->attempted++;
	if (!rc) {
		if (f->t->token_env)
			rc = upload_secret_env(f->t->token_env, &f->secret, &e);
		else if (f->t->token_file)
			rc = upload_secret_file(f->t->token_file, &f->secret, &e);
	}
	if (!rc) {
		f->spool = xasprintf("%s/%s", sd->spool_root, f->run.uuid);
		if (lab_mkdir_p(f->spool, 0750) != LAB_OK)
			rc = lab_err_set(&e, LAB_EINFRA, "cannot create spool %s: %s", f->spool,
					 strerror(errno));
	}
	if (!rc) {
		f->job = (struct upload_job){.s = sd->s, .t = f->t, .run = &f->run,
					     .idem_key = f->idem_key, .item = f->item,
					     .spool = f->spool, .secret = f->secret};
		rc = f->t->kind->request(sd->h, &f->job, &f->req, &e);
	}
	if (!rc) {
		http_req_timeout(f->req, f->t->timeout_ms, f->t->connect_timeout_ms);
		if (f->t->ca_file)
			http_req_ca_file(f->req, f->t->ca_file);
		http_req_follow(f->req, 3);
		http_req_flags(f->req, HTTP_ANY_STATUS);
		http_req_max_body(f->req, 256 * 1024);
		rc = http_req_start(f->req, on_done, f);
		if (rc) {
			f->req = NULL;
			lab_err_set(&e, rc, "cannot start the request");
		}
	}
	if (rc) {
		if (f->req) {
			http_req_cancel(f->req);
			f->req = NULL;
		}
		conclude(sd, f, fail, 0, e.msg[0] ? e.msg : lab_strerror(rc));
		flight_free(sd, f);
		return !sd->fatal;
	}
	sd->inflight++;
	return true;
}

static void wake_cb(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	pump(arg);
}

static void pump(struct sender *sd)
{
	if (sd->done)
		return;
	const struct upload_send_opts *o = sd->o;
	int64_t now = wall_ms();
	int64_t earliest = -1; /* next_at of the first row that is not due yet */
	if (!sd->fatal) {
		sqlite3_stmt *q = prep(sd->s,
				       "SELECT " ROW_COLS " FROM upload u JOIN run r ON r.id = u.run_id"
				       " WHERE (u.state = 'pending' OR (?2 AND u.state = 'failed'))"
				       " AND (?1 = 0 OR u.run_id = ?1) ORDER BY u.id",
				       &sd->err);
		if (!q) {
			sd->fatal = LAB_EINFRA;
		} else {
			sqlite3_bind_int64(q, 1, o->run_id);
			sqlite3_bind_int(q, 2, o->failed_too);
			int st = SQLITE_DONE;
			while (!sd->fatal && (st = sqlite3_step(q)) == SQLITE_ROW) {
				int64_t id = sqlite3_column_int64(q, 0);
				const char *state = col_str(q, 7);
				int64_t next = parse_iso_ms((const char *)sqlite3_column_text(q, 9));
				bool started = was_started(sd, id);
				if (in_flight(sd, id))
					continue;
				bool eligible;
				if (strcmp(state, "failed") == 0)
					eligible = !started; /* once per invocation */
				else if (!sd->deadline_ms)
					eligible = !started && (o->now || next <= now);
				else
					eligible = (!started && o->now) || next <= now;
				if (!eligible) {
					if (sd->deadline_ms && strcmp(state, "pending") == 0 &&
					    (earliest < 0 || next < earliest))
						earliest = next;
					continue;
				}
				if (sd->inflight >= sd->parallel) {
					earliest = now; /* a completion will pump again */
					continue;
				}
				if (!start_row(sd, q))
					break;
			}
			if (!sd->fatal && st != SQLITE_ROW && st != SQLITE_DONE)
				sd->fatal = db_err(sd->s, &sd->err, "reading the outbox");
			sqlite3_finalize(q);
		}
	}
	if (sd->inflight > 0)
		return;
	if (!sd->fatal && sd->deadline_ms && earliest >= 0) {
		uint64_t mono = lab_now_ms();
		int64_t wait = earliest - wall_ms();
		if (wait < 0)
			wait = 0;
		if (mono + (uint64_t)wait <= sd->deadline_ms) {
			loop_timer_start(sd->l, &sd->wake, (uint64_t)wait);
			return;
		}
	}
	sd->done = true;
}

int upload_send(struct store *s, struct loop *l, const struct upload_send_opts *o,
		struct upload_stats *st, struct lab_err *e)
{
	struct upload_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	struct sender sd = {.s = s, .l = l, .o = o, .st = st};
	int rc = upload_targets_parse(o->targets, &sd.over, e);
	if (rc)
		return rc;
	if (o->spool_dir) {
		sd.spool_root = xstrdup(o->spool_dir);
	} else {
		const char *p = store_path(s);
		const char *slash = strrchr(p, '/');
		if (strcmp(p, ":memory:") == 0 || !*p) {
			upload_targets_free(&sd.over);
			return lab_err_set(e, LAB_EUSAGE, "an in-memory store needs a spool directory");
		}
		sd.spool_root = slash ? xasprintf("%.*s/uploads", (int)(slash - p), p)
				      : xstrdup("uploads");
	}
	sd.h = http_new(l, e);
	if (!sd.h) {
		free(sd.spool_root);
		upload_targets_free(&sd.over);
		return LAB_EINFRA;
	}
	sd.parallel = o->parallel > 0 ? o->parallel : UPLOAD_DEFAULT_PARALLEL;
	sd.deadline_ms = o->max_time_ms ? lab_now_ms() + o->max_time_ms : 0;
	loop_timer_init(&sd.kick, kick_cb, &sd);
	loop_timer_init(&sd.wake, wake_cb, &sd);
	pump(&sd);
	while (!sd.done) {
		if (loop_run_once(l, -1) < 0 || loop_stopped(l))
			break;
		if (sd.inflight == 0 && !loop_timer_pending(&sd.kick) && !loop_timer_pending(&sd.wake))
			pump(&sd);
	}
	loop_timer_stop(l, &sd.kick);
	loop_timer_stop(l, &sd.wake);
	/* Interrupted (loop stopped): abandon what is in flight; those rows stay
	 * pending with the attempt charged and go again later. */
	while (sd.flights) {
		struct flight *f = sd.flights;
		if (f->req)
			http_req_cancel(f->req);
		flight_free(&sd, f);
	}
	http_free(sd.h);
	struct lab_err qe = {0};
	sqlite3_stmt *q = prep(s, "SELECT state FROM upload WHERE id = ?", &qe);
	for (size_t i = 0; q && i < sd.nstarted; i++) {
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, sd.started[i]);
		if (sqlite3_step(q) != SQLITE_ROW || strcmp(col_str(q, 0), "sent") != 0)
			st->unsent++;
	}
	sqlite3_finalize(q);
	free(sd.started);
	free(sd.spool_root);
	upload_targets_free(&sd.over);
	if (sd.fatal) {
		*e = sd.err;
		return sd.fatal;
	}
	return LAB_OK;
}
