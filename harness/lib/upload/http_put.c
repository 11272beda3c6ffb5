/*
 * upload/http_put.c - the report bundle PUT to a WebDAV server or object
 * store: <url>/<path>/<file> with path "{date}/{run}" by default, one outbox
 * row per file so a re-send only carries what did not arrive.  A PUT to the
 * same path replaces the same bytes: the files are rendered into the spool
 * once and every attempt sends them from there.  Authentication: HTTP
 * basic/digest (user + password_env/password_file) or a bearer token
 * (token_env/token_file).
 */
#include "upload.h"

#include <stdlib.h>
#include <string.h>

struct put_cfg {
	struct opt_strlist files;
	char *path;
	char *user, *password_env, *password_file;
};

#define P(f) offsetof(struct put_cfg, f)
static const struct opt put_opts[] = {
	{.key = "files", .type = OPT_STRLIST, .offset = P(files), .def = "[html, json, csv]",
	 .help = "what the bundle holds: html, json, csv, junit, markdown, text, sqlite (a "
		 "snapshot of the whole store)"},
	{.key = "path", .type = OPT_STR, .offset = P(path), .def = "{date}/{run}",
	 .help = "directory under url ({date} is the run's start day, UTC; {run} its uuid)"},
	{.key = "user", .type = OPT_STR, .offset = P(user), .help = "user for HTTP basic/digest auth"},
	{.key = "password_env", .type = OPT_STR, .offset = P(password_env),
	 .help = "environment variable holding the password"},
	{.key = "password_file", .type = OPT_STR, .offset = P(password_file),
	 .help = "file holding the password (refused when group or world readable)"},
	{0},
};
#undef P

static int put_check(struct upload_target *t, struct lab_err *e)
{
	const struct put_cfg *c = t->cfg;
	const char *where = t->file ? t->file : "?";
	if (c->files.n == 0)
		return lab_err_set(e, LAB_EUSAGE, "%s:%d: target '%s': files is empty", where, t->line,
				   t->name);
	for (size_t i = 0; i < c->files.n; i++) {
		if (!upload_bundle_name(c->files.v[i]))
			return lab_err_set(e, LAB_EUSAGE,
					   "%s:%d: target '%s': unknown file kind '%s' (html, json, csv, "
					   "junit, markdown, text, sqlite)", where, t->line, t->name,
					   c->files.v[i]);
		for (size_t k = 0; k < i; k++)
			if (strcmp(c->files.v[k], c->files.v[i]) == 0)
				return lab_err_set(e, LAB_EUSAGE, "%s:%d: target '%s': '%s' listed twice",
						   where, t->line, t->name, c->files.v[i]);
	}
	if (c->password_env && c->password_file)
		return lab_err_set(e, LAB_EUSAGE,
				   "%s:%d: target '%s': password_env and password_file exclude each other",
				   where, t->line, t->name);
	if (c->user && !c->password_env && !c->password_file)
		return lab_err_set(e, LAB_EUSAGE, "%s:%d: target '%s': user needs password_env or password_file",
				   where, t->line, t->name);
	if (!c->user && (c->password_env || c->password_file))
		return lab_err_set(e, LAB_EUSAGE, "%s:%d: target '%s': a password needs a user", where,
				   t->line, t->name);
	if (c->user && (t->token_env || t->token_file))
		return lab_err_set(e, LAB_EUSAGE, "%s:%d: target '%s': use either user/password or a token",
				   where, t->line, t->name);
	char *x = NULL;
	int rc = upload_expand(c->path, upload_template_vars, &x, e);
	free(x);
	return rc;
}

/* The directory part of every key: the template expanded, each segment
 * made safe (no empty, "." or ".." segments, no leading/trailing '/'). */
static int dir_of_run(const struct upload_target *t, const struct upload_run *run, char **out,
		      struct lab_err *e)
{
	const struct put_cfg *c = t->cfg;
	const char *vars[] = {"kernel", "", "board", "", "board_type", "", "part", "",
			      "plan", run->plan, "lab", run->lab, "date", run->date, "run", run->uuid,
			      NULL};
	char *x = NULL;
	int rc = upload_expand(c->path, vars, &x, e);
	if (rc)
		return rc;
	struct lab_buf b;
	lab_buf_init(&b, 4096);
	for (char *save = NULL, *seg = strtok_r(x, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		if (!strcmp(seg, ".") || !strcmp(seg, ".."))
			continue;
		if (b.len)
			lab_buf_append(&b, "/", 1);
		lab_buf_append(&b, seg, strlen(seg));
	}
	free(x);
	*out = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return LAB_OK;
}

static int put_items(struct store *s, const struct upload_target *t, const struct upload_run *run,
		     struct upload_items *out, struct lab_err *e)
{
	LAB_UNUSED(s);
	const struct put_cfg *c = t->cfg;
	char *dir = NULL;
	int rc = dir_of_run(t, run, &dir, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < c->files.n; i++) {
		char *key = xasprintf("%s%s%s", dir, *dir ? "/" : "", upload_bundle_name(c->files.v[i]));
		upload_items_add(out, key, c->files.v[i]);
		free(key);
	}
	free(dir);
	return LAB_OK;
}

static int put_request(struct http *h, const struct upload_job *j, struct http_req **out,
		       struct lab_err *e)
{
	const struct put_cfg *c = j->t->cfg;
	*out = NULL;
	char path[4096];
	const char *mime;
	int rc = upload_bundle_file(j, j->item, path, sizeof path, NULL, &mime, e);
	if (rc)
		return rc;
	/* Percent-encode each segment of the key; '/' stays a separator. */
	struct lab_buf u;
	lab_buf_init(&u, 8192);
	size_t ul = strlen(j->t->url);
	while (ul && j->t->url[ul - 1] == '/')
		ul--;
	lab_buf_append(&u, j->t->url, ul);
	char *key = xstrdup(j->idem_key);
	for (char *save = NULL, *seg = strtok_r(key, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		char *esc = http_escape(seg);
		lab_buf_append(&u, "/", 1);
		lab_buf_append(&u, esc, strlen(esc));
		free(esc);
	}
	free(key);
	struct http_req *r = http_req_new(h, "PUT", lab_buf_cstr(&u));
	lab_buf_free(&u);
	rc = http_req_body_file(r, path, mime, e);
	if (!rc && c->user) {
		char *pw = NULL;
		rc = c->password_env ? upload_secret_env(c->password_env, &pw, e)
				     : upload_secret_file(c->password_file, &pw, e);
		if (!rc)
			http_req_auth(r, c->user, pw);
		if (pw) {
			memset(pw, 0, strlen(pw));
			free(pw);
		}
	}
	if (!rc && j->secret) {
		char *line = xasprintf("Authorization: Bearer %s", j->secret);
		http_req_header(r, line, true);
		memset(line, 0, strlen(line));
		free(line);
	}
	if (rc) {
		http_req_cancel(r);
		return rc;
	}
	*out = r;
	return LAB_OK;
}

const struct upload_kind upload_http_put = {
	.name = "http-put",
	.version = UPLOAD_OPS_VERSION,
	.options = put_opts,
	.cfg_size = sizeof(struct put_cfg),
	.help = "The report bundle PUT file by file to `<url>/<path>/<file>` (WebDAV such as "
		"nginx `dav_methods PUT`, or an object store that accepts PUT).",
	.check = put_check,
	.items = put_items,
	.request = put_request,
	.judge = NULL,
};
