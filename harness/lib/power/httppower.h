/*
 * httppower.h - what the HTTP power drivers (pdudaemon, tasmota, shelly,
 * esphome) share: one request at a time on the loop's shared struct http,
 * per-attempt timeout derived from the power timeout, retries with backoff
 * for transient failures, credentials from the environment, and error
 * messages of the form "<driver> power of <board> (<url>): <what failed>".
 * Internal to those drivers; owned by the struct power it is embedded in.
 */
#ifndef EMMCLAB_HTTPPOWER_H
#define EMMCLAB_HTTPPOWER_H

#include <stdbool.h>
#include <stdint.h>
#include "http.h"
#include "power.h"

struct httppower;
/* Called with a successful (2xx) answer; on failure the power op is completed for you. */
typedef void (*httppower_cb)(struct httppower *hp, const struct http_result *res);

struct httppower {
	struct power *p;
	struct http *http;
	struct http_req *req;   /* in flight, or NULL */
	char *base;             /* configured URL without a trailing '/' */
	char *user, *password;  /* password read from the environment at init */
	int retries;
	uint64_t try_ms;        /* timeout of one attempt */
	bool retry_timeouts;    /* set per request: false for non-idempotent ones */
	bool query_auth;        /* credentials go in the query (tasmota), not HTTP auth */
	char what[64];          /* the request in messages, e.g. "Power1 On" (no secrets) */
	httppower_cb cb;
	struct loop_timer later; /* completes a failure found before any request */
	int later_rc;
	char later_msg[384];
};

/* url: the device's base URL; password_env: name of an env var or NULL/"". */
int httppower_init(struct httppower *hp, struct power *p, const char *url, const char *user,
		   const char *password_env, int retries, struct lab_err *e);
void httppower_fini(struct httppower *hp);
/* method + base URL + path_query (already escaped).  what: the request in messages.
 * extra_ms lengthens the attempt timeout. */
void httppower_send(struct httppower *hp, const char *what, const char *method,
		    const char *path_query, uint64_t extra_ms, httppower_cb cb);
void httppower_cancel(struct httppower *hp);
/* Complete the power operation with an error "<device>: <msg>" (from a loop callback). */
void httppower_fail(struct httppower *hp, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Look up a JSON scalar in res->body; on failure completes the op with a message and returns false. */
bool httppower_json(struct httppower *hp, const struct http_result *res, const char *key,
		    char *out, size_t outsz);

#endif
