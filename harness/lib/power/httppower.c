/* httppower.c - shared plumbing of the HTTP power drivers; see httppower.h. */
#include "httppower.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTPPOWER_BACKOFF_MS 250

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct httppower *hp = arg;
	power_complete(hp->p, hp->later_rc, POWER_UNKNOWN, "%s: %s", hp->p->device, hp->later_msg);
}

int httppower_init(struct httppower *hp, struct power *p, const char *url, const char *user,
		   const char *password_env, int retries, struct lab_err *e)
{
	memset(hp, 0, sizeof *hp);
	hp->p = p;
	if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
		return lab_err_set(e, LAB_EUSAGE, "board %s: %s power: url must start with http:// or https:// (got '%s')",
				   p->board, p->drv->name, url ? url : "");
	if (password_env && password_env[0]) {
		const char *pw = getenv(password_env);
		if (!pw)
			return lab_err_set(e, LAB_EUSAGE,
					   "board %s: %s power: environment variable %s (password_env) is not set",
					   p->board, p->drv->name, password_env);
		hp->password = xstrdup(pw);
	}
	hp->http = http_ref(p->loop, e);
	if (!hp->http) {
		free(hp->password);
		return e ? e->rc : LAB_EINFRA;
	}
	hp->base = xstrdup(url);
	size_t n = strlen(hp->base);
	while (n > 0 && hp->base[n - 1] == '/')
		hp->base[--n] = '\0';
	hp->user = user && user[0] ? xstrdup(user) : NULL;
	hp->retries = retries;
	/* Fit every attempt and the backoff between them inside the power timeout;
	 * when that leaves too little per attempt, the power timeout is the backstop. */
	uint64_t backoff = 0;
	for (int i = 0; i < retries; i++)
		backoff += (uint64_t)HTTPPOWER_BACKOFF_MS << i;
	uint64_t tries = (uint64_t)retries + 1;
	hp->try_ms = p->timeout_ms > backoff ? (p->timeout_ms - backoff) / tries : 0;
	if (hp->try_ms < 300)
		hp->try_ms = p->timeout_ms / tries;
	if (hp->try_ms < 100)
		hp->try_ms = 100;
	hp->retry_timeouts = true;
	loop_timer_init(&hp->later, on_later, hp);
	char *red = http_url_redact(hp->base);
	free(p->device);
	p->device = xasprintf("%s power of %s (%s)", p->drv->name, p->board, red);
	free(red);
	return LAB_OK;
}

void httppower_fini(struct httppower *hp)
{
	httppower_cancel(hp);
	if (hp->http)
		http_unref(hp->http);
	hp->http = NULL;
	free(hp->base);
	free(hp->user);
	if (hp->password) {
		memset(hp->password, 0, strlen(hp->password));
		free(hp->password);
	}
}

void httppower_cancel(struct httppower *hp)
{
	if (hp->req) {
		http_req_cancel(hp->req);
		hp->req = NULL;
	}
	if (hp->p)
		loop_timer_stop(hp->p->loop, &hp->later);
}

static void on_done(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct httppower *hp = arg;
	hp->req = NULL;
	if (res->rc != LAB_OK) {
		if (res->attempts > 1)
			power_complete(hp->p, res->rc, POWER_UNKNOWN, "%s: %s: %s (%d attempts)",
				       hp->p->device, hp->what, res->err, res->attempts);
		else
			power_complete(hp->p, res->rc, POWER_UNKNOWN, "%s: %s: %s", hp->p->device,
				       hp->what, res->err);
		return;
	}
	hp->cb(hp, res);
}

/* httppower_fail on the next loop pass (from inside drv->start). */
static void httppower_fail_later(struct httppower *hp, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void httppower_send(struct httppower *hp, const char *what, const char *method,
		    const char *path_query, uint64_t extra_ms, httppower_cb cb)
{
	lab_strlcpy(hp->what, what, sizeof hp->what);
	char *url = xasprintf("%s%s", hp->base, path_query);
	struct http_req *r = http_req_new(hp->http, method, url);
	free(url);
	http_req_timeout(r, hp->try_ms + extra_ms, hp->try_ms < 5000 ? hp->try_ms : 5000);
	http_req_retry(r, hp->retries, HTTPPOWER_BACKOFF_MS,
		       HTTP_RETRY_TRANSIENT | (hp->retry_timeouts ? HTTP_RETRY_TIMEOUT : 0));
	http_req_max_body(r, 16384);
	if (hp->user && !hp->query_auth)
		http_req_auth(r, hp->user, hp->password ? hp->password : "");
	hp->cb = cb;
	hp->req = r;
	if (http_req_start(r, on_done, hp) != LAB_OK) {
		hp->req = NULL;
		httppower_fail_later(hp, LAB_EINFRA, "cannot start the HTTP request");
	}
}

void httppower_fail(struct httppower *hp, int rc, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	power_complete(hp->p, rc, POWER_UNKNOWN, "%s: %s", hp->p->device, msg);
}

static void httppower_fail_later(struct httppower *hp, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(hp->later_msg, sizeof hp->later_msg, fmt, ap);
	va_end(ap);
	hp->later_rc = rc;
	loop_timer_start(hp->p->loop, &hp->later, 0);
}

bool httppower_json(struct httppower *hp, const struct http_result *res, const char *key,
		    char *out, size_t outsz)
{
	struct lab_err e = {0};
	if (json_get(res->body, res->body_len, key, out, outsz, &e) == LAB_OK)
		return true;
	char snip[96];
	size_t n = 0;
	for (size_t i = 0; i < res->body_len && n + 1 < sizeof snip; i++)
		snip[n++] = (res->body[i] < 0x20) ? ' ' : res->body[i];
	snip[n] = '\0';
	httppower_fail(hp, LAB_EPROTO, "%s: unexpected answer: %s: '%s%s'", hp->what, e.msg, snip,
		       res->body_len > n ? "..." : "");
	return false;
}
