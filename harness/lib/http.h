/*
 * http.h - HTTP(S) client requests on the event loop (libcurl multi interface).
 *
 * Nothing here blocks: curl's sockets are watched by the loop
 * (CURLMOPT_SOCKETFUNCTION -> loop_fd_add/mod/del) and its timeouts are a
 * loop_timer (CURLMOPT_TIMERFUNCTION); curl_multi_socket_action() runs from
 * those callbacks.  Single-threaded, like the loop.
 *
 * Ownership and lifetime:
 *  - struct http owns one curl multi handle (connection cache, keep-alive).
 *    http_ref(loop) hands out one shared instance per loop (refcounted,
 *    http_unref() when done); http_new()/http_free() make a private one.
 *    Free/unref before loop_free().  Never free an http from inside one of
 *    its own completion callbacks: use loop_defer().
 *  - A request is built with http_req_new() + setters, then handed over with
 *    http_req_start().  From then on the http owns it: the callback runs
 *    exactly once, later, from a loop callback (never inside
 *    http_req_start()), and the request is freed right after the callback
 *    returns.  http_req_cancel() abandons it: no callback, freed at once.
 *    Cancelling inside its own callback is a no-op.  A request never
 *    started is freed with http_req_cancel() too.
 *
 * Safety defaults: only http and https; no redirects unless
 * http_req_follow(); a redirect to another origin (scheme, host, port) is
 * refused while the request carries credentials (basic/digest auth or a
 * header marked secret); response bodies are capped (64 KiB by default;
 * over the cap the request fails with LAB_EPROTO); every socket is
 * close-on-exec.  Messages redact the URL's password and never show secret
 * header values.
 *
 * Retries (http_req_retry): transient failures (connect refused or timed
 * out, DNS failure, connection closed without an answer, send/receive
 * errors, HTTP 5xx, optionally a timeout) are retried with exponential
 * backoff (backoff, 2*backoff, ... capped at 10 s); everything else fails at
 * once.  Retry only idempotent requests, or say why the server copes.
 */
#ifndef EMMCLAB_HTTP_H
#define EMMCLAB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loop.h"
#include "util.h"

struct http;
struct http_req;

/* What the callback receives; pointers are valid only during the callback. */
struct http_result {
	int rc;                   /* LAB_OK: a 2xx answer (or any status with HTTP_ANY_STATUS);
				   * LAB_ETIMEOUT; LAB_EPROTO (body over cap, bad redirect);
				   * LAB_EINFRA (connect, transfer, non-2xx status) */
	long status;              /* HTTP status of the last answer, 0 when none */
	const char *body;         /* NUL-terminated (body_len bytes before the NUL) */
	size_t body_len;
	const char *content_type; /* NULL when the server sent none */
	const char *url;          /* last URL tried, password redacted */
	const char *err;          /* "" on success, else what failed, e.g. "HTTP 500: Internal error"
				   * or "connect failed: Connection refused" */
	int attempts;             /* 1 + retries used */
	uint64_t elapsed_ms;      /* from start to completion, backoff included */
};

typedef void (*http_done_cb)(struct http_req *r, const struct http_result *res, void *arg);

enum http_retry_on {
	HTTP_RETRY_CONNECT = 1, /* connect/DNS/closed-without-answer/send/recv errors */
	HTTP_RETRY_5XX = 2,     /* status 500..599 */
	HTTP_RETRY_TIMEOUT = 4, /* the attempt ran past its timeout */
	HTTP_RETRY_TRANSIENT = HTTP_RETRY_CONNECT | HTTP_RETRY_5XX,
};

enum http_req_flags {
	HTTP_ANY_STATUS = 1, /* rc LAB_OK for any complete answer; caller judges .status */
};

struct http *http_new(struct loop *l, struct lab_err *e);
void http_free(struct http *h); /* cancels in-flight requests without callbacks */
struct http *http_ref(struct loop *l, struct lab_err *e); /* shared per loop */
void http_unref(struct http *h);
size_t http_active(const struct http *h); /* requests started and not completed */
uint64_t http_connects(const struct http *h); /* connections opened so far (the rest reused one) */

/* method: "GET", "POST", "PUT", "DELETE", ... ; url: http:// or https://. */
struct http_req *http_req_new(struct http *h, const char *method, const char *url);
/* "Name: value" header line; secret: counts as a credential and is never shown. */
void http_req_header(struct http_req *r, const char *line, bool secret);
/* Request body (copied).  For POST/PUT; a POST without a body sends Content-Length: 0. */
void http_req_body(struct http_req *r, const void *data, size_t len, const char *content_type);
/* Stream a file as the body (PUT/POST), re-read from the start on every retry. */
int http_req_body_file(struct http_req *r, const char *path, const char *content_type,
		       struct lab_err *e);
/* multipart/form-data parts (POST): a text field, or a file with its content type. */
void http_req_form_field(struct http_req *r, const char *name, const char *value);
int http_req_form_file(struct http_req *r, const char *name, const char *path,
		       const char *content_type, struct lab_err *e);
/* HTTP basic or digest authentication (curl picks what the server asks for). */
void http_req_auth(struct http_req *r, const char *user, const char *password);
/* Verify the server certificate against this PEM CA bundle instead of the
 * system store (verification itself always stays on). */
void http_req_ca_file(struct http_req *r, const char *path);
/* Per attempt: whole transfer and connect phase, in ms (defaults 30 s, 10 s). */
void http_req_timeout(struct http_req *r, uint64_t total_ms, uint64_t connect_ms);
/* Cap of the response body in bytes (0 = default 64 KiB). */
void http_req_max_body(struct http_req *r, size_t max);
void http_req_retry(struct http_req *r, int retries, uint64_t backoff_ms, unsigned on);
/* Follow up to max redirects (default 0 = none), see the origin rule above. */
void http_req_follow(struct http_req *r, int max);
void http_req_flags(struct http_req *r, unsigned flags);
int http_req_start(struct http_req *r, http_done_cb cb, void *arg);
void http_req_cancel(struct http_req *r);

/* Percent-encode s for a query value or path segment (RFC 3986 unreserved kept). Caller frees. */
char *http_escape(const char *s);
/* url with any password replaced by "***" (for messages).  Caller frees. */
char *http_url_redact(const char *url);

#endif
