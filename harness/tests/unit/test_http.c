/* http.c against a real local server (power_fakedev.py): concurrency on one loop,
 * timeouts, body cap, retries, early close, redirects and credentials, bodies, cancel. */
#include "http.h"
#include "loop.h"
#include "power_fakedev.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int port;
static char base[64];

struct got {
	int done;
	int rc;
	long status;
	int attempts;
	uint64_t elapsed;
	char body[512];
	size_t body_len;
	char err[512];
	char url[256];
	bool cb_in_start;
};

static bool in_start;

static void on_done(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	struct got *g = arg;
	g->done++;
	g->rc = res->rc;
	g->status = res->status;
	g->attempts = res->attempts;
	g->elapsed = res->elapsed_ms;
	g->body_len = res->body_len;
	g->cb_in_start = in_start;
	lab_strlcpy(g->body, res->body, sizeof g->body);
	lab_strlcpy(g->err, res->err, sizeof g->err);
	lab_strlcpy(g->url, res->url, sizeof g->url);
}

/* Run the loop until every got is done (or a guard fires). */
static struct loop_timer guard;
static void on_guard(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(t);
	*(int *)arg = 1;
	loop_stop(l);
}

static int run_until(struct loop *l, struct got *g, size_t n, uint64_t max_ms)
{
	int fired = 0;
	loop_timer_init(&guard, on_guard, &fired);
	loop_timer_start(l, &guard, max_ms);
	for (;;) {
		size_t done = 0;
		for (size_t i = 0; i < n; i++)
			done += g[i].done > 0;
		if (done == n || fired)
			break;
		loop_run_once(l, 100);
	}
	loop_timer_stop(l, &guard);
	return fired ? -1 : 0;
}

static struct http_req *get(struct http *h, const char *path)
{
	char url[512];
	snprintf(url, sizeof url, "%s%s", base, path);
	return http_req_new(h, "GET", url);
}

static void test_concurrent(struct loop *l, struct http *h)
{
	enum { N = 40 };
	static struct got g[N];
	memset(g, 0, sizeof g);
	uint64_t t0 = lab_now_ms();
	for (int i = 0; i < N; i++) {
		char path[64];
		snprintf(path, sizeof path, "/sleep?ms=%d", 300 + i);
		in_start = true;
		http_req_start(get(h, path), on_done, &g[i]);
		in_start = false;
	}
	is_int(http_active(h), N, "all requests in flight");
	run_until(l, g, N, 20000);
	uint64_t el = lab_now_ms() - t0;
	int good = 0, sync_cb = 0;
	for (int i = 0; i < N; i++) {
		char want[32];
		snprintf(want, sizeof want, "slept %d\n", 300 + i);
		good += g[i].done == 1 && g[i].rc == LAB_OK && g[i].status == 200 &&
			strcmp(g[i].body, want) == 0;
		sync_cb += g[i].cb_in_start;
	}
	is_int(good, N, "40 concurrent requests each got its own answer");
	is_int(sync_cb, 0, "no callback from inside http_req_start");
	/* Serially this would take > 12 s; concurrently about 0.35 s plus python overhead. */
	ok(el < 5000, "requests ran concurrently on one loop (%llu ms for 40 x 300 ms)",
	   (unsigned long long)el);
	is_int(http_active(h), 0, "nothing left in flight");
}

/* One wave of N concurrent requests; returns the connections it opened. */
static uint64_t wave(struct loop *l, struct http *h, int n)
{
	static struct got g[64];
	memset(g, 0, sizeof g);
	uint64_t c0 = http_connects(h);
	for (int i = 0; i < n; i++)
		http_req_start(get(h, "/sleep?ms=150"), on_done, &g[i]);
	run_until(l, g, (size_t)n, 20000);
	int good = 0;
	for (int i = 0; i < n; i++)
		good += g[i].rc == LAB_OK && g[i].status == 200;
	ok(good == n, "a wave of %d concurrent requests answered (%d)", n, good);
	return http_connects(h) - c0;
}

/* Idle connections kept for the next wave: 32 for a few users, one for each
 * user of the shared instance beyond that (a board with HTTP power each). */
static void test_keepalive(struct loop *l)
{
	enum { N = 48, USERS = 48 };
	struct http *h = http_ref(l, NULL);
	uint64_t c = wave(l, h, N);
	ok(c >= N && c <= N + 3, "first wave: a connection for each request (%llu)", (unsigned long long)c);
	/* exact when nothing else happens; a connection libcurl finds dead (a
	 * loaded machine) is opened again, so a little slack upward */
	c = wave(l, h, N);
	ok(c >= N - 32 && c <= N - 32 + 3,
	   "one user: 32 idle connections kept, the other 16 opened again (%llu)", (unsigned long long)c);
	struct http *more[USERS - 1];
	for (int i = 0; i < USERS - 1; i++)
		more[i] = http_ref(l, NULL);
	wave(l, h, N); /* the cache grows to the new cap */
	c = wave(l, h, N);
	ok(c <= 3, "48 users: the wave's connections kept and reused (%llu opened; 16 with a fixed 32)",
	   (unsigned long long)c);
	for (int i = 0; i < USERS - 1; i++)
		http_unref(more[i]);
	wave(l, h, N); /* back to 32 kept */
	c = wave(l, h, N);
	ok(c >= N - 32 && c <= N - 32 + 3, "users gone: 32 idle connections kept again (%llu opened)",
	   (unsigned long long)c);
	http_unref(h);
}

static void test_timeout(struct loop *l, struct http *h)
{
	struct got g = {0};
	struct http_req *r = get(h, "/f/hang/x");
	http_req_timeout(r, 400, 0);
	uint64_t t0 = lab_now_ms();
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	uint64_t el = lab_now_ms() - t0;
	is_int(g.rc, LAB_ETIMEOUT, "hanging server: timeout");
	ok(el >= 390 && el < 2000, "timed out after ~400 ms (%llu ms)", (unsigned long long)el);
	ok(strstr(g.err, "no answer within 400 ms") != NULL, "timeout message: %s", g.err);

	/* Retried timeouts: 2 retries with 100 ms backoff -> 3 attempts. */
	memset(&g, 0, sizeof g);
	r = get(h, "/f/hang/y");
	http_req_timeout(r, 200, 0);
	http_req_retry(r, 2, 100, HTTP_RETRY_TIMEOUT);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.attempts, 3, "timeouts retried when asked");
	ok(g.elapsed >= 3 * 200 + 100 + 200, "backoff 100 then 200 ms between attempts (%llu ms)",
	   (unsigned long long)g.elapsed);
}

static void test_cap(struct loop *l, struct http *h)
{
	struct got g = {0};
	struct http_req *r = get(h, "/big?n=200000");
	http_req_max_body(r, 1000);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.rc, LAB_EPROTO, "body over the cap fails");
	ok(strstr(g.err, "larger than 1000 bytes") != NULL, "cap message: %s", g.err);
	ok(g.body_len <= 1000, "no more than the cap kept (%zu)", g.body_len);

	memset(&g, 0, sizeof g);
	r = get(h, "/big?n=1000");
	http_req_max_body(r, 1000);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && g.body_len == 1000, "body exactly at the cap is fine");
}

static void test_errors(struct loop *l, struct http *h)
{
	struct got g = {0};
	struct http_req *r = get(h, "/f/500/cm");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.rc, LAB_EINFRA, "HTTP 500 is an error");
	is_int(g.status, 500, "status reported");
	is_str(g.err, "HTTP 500: Internal error: relay driver crashed", "500 message with body line");
	is_int(g.attempts, 1, "no retry unless asked");

	memset(&g, 0, sizeof g);
	r = get(h, "/f/500/cm");
	http_req_retry(r, 2, 50, HTTP_RETRY_TRANSIENT);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.attempts, 3, "5xx retried twice");

	memset(&g, 0, sizeof g);
	r = get(h, "/f/flaky2/echo");
	http_req_retry(r, 2, 50, HTTP_RETRY_TRANSIENT);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && g.attempts == 3, "flaky server: 503, 503, then 200 (rc %d, %d attempts)",
	   g.rc, g.attempts);

	memset(&g, 0, sizeof g);
	r = get(h, "/nothing-here");
	http_req_retry(r, 2, 50, HTTP_RETRY_TRANSIENT);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_EINFRA && g.status == 404 && g.attempts == 1, "404 is not retried");

	memset(&g, 0, sizeof g);
	r = get(h, "/f/close/x");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.rc, LAB_EINFRA, "early close is an error");
	ok(strstr(g.err, "without an answer") || strstr(g.err, "connection broke"), "close message: %s",
	   g.err);

	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", fakedev_dead_port());
	memset(&g, 0, sizeof g);
	r = http_req_new(h, "GET", url);
	http_req_retry(r, 1, 50, HTTP_RETRY_TRANSIENT);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_EINFRA && g.attempts == 2, "connection refused, retried once");
	ok(strstr(g.err, "connect failed") != NULL, "refused message: %s", g.err);

	memset(&g, 0, sizeof g);
	r = http_req_new(h, "GET", "file:///etc/passwd");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc != LAB_OK, "file:// refused (%s)", g.err);
}

static void test_bodies(struct loop *l, struct http *h)
{
	struct got g = {0};
	char url[128];
	snprintf(url, sizeof url, "%s/echo", base);
	struct http_req *r = http_req_new(h, "POST", url);
	http_req_body(r, "hello=1", 7, "application/x-www-form-urlencoded");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strncmp(g.body, "POST /echo", 10) == 0, "POST sent");
	ok(strstr(g.body, "\nhello=1") != NULL, "POST body arrived");
	ok(strstr(g.body, "Content-Type: application/x-www-form-urlencoded") != NULL,
	   "content type sent");

	memset(&g, 0, sizeof g);
	r = http_req_new(h, "POST", url);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strstr(g.body, "Content-Length: 0") != NULL,
	   "empty POST sends Content-Length: 0");

	char path[] = "/tmp/emmclab-http-XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && write(fd, "file-body-123", 13) == 13, "temp file");
	close(fd);
	memset(&g, 0, sizeof g);
	r = http_req_new(h, "PUT", url);
	ok(http_req_body_file(r, path, "text/plain", NULL) == LAB_OK, "body from file");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strncmp(g.body, "PUT /echo", 9) == 0 &&
	   strstr(g.body, "\nfile-body-123") != NULL, "PUT streamed the file");

	memset(&g, 0, sizeof g);
	r = http_req_new(h, "POST", url);
	http_req_form_field(r, "project", "emmc");
	ok(http_req_form_file(r, "tests", path, "application/json", NULL) == LAB_OK, "form file");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strstr(g.body, "multipart/form-data") &&
	   strstr(g.body, "name=\"project\"") && strstr(g.body, "file-body-123"),
	   "multipart form with a field and a file");
	unlink(path);

	memset(&g, 0, sizeof g);
	snprintf(url, sizeof url, "%s/auth", base);
	r = http_req_new(h, "GET", url);
	http_req_auth(r, "user", "pw");
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strcmp(g.body, "authorised\n") == 0, "basic auth after the challenge");
}

static void test_redirects(struct loop *l, struct http *h)
{
	struct got g = {0};
	char url[512];
	/* Same origin, with credentials: followed. */
	snprintf(url, sizeof url, "%s/redirect?to=%s/echo", base, base);
	struct http_req *r = http_req_new(h, "GET", url);
	http_req_follow(r, 3);
	http_req_header(r, "Auth-Token: sekrit", true);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strncmp(g.body, "GET /echo", 9) == 0, "same-origin redirect followed (%d %s)", g.rc, g.err);
	ok(strstr(g.body, "Auth-Token: sekrit") != NULL, "credentials kept on the same origin");

	/* Other origin (localhost vs 127.0.0.1), with credentials: refused. */
	memset(&g, 0, sizeof g);
	snprintf(url, sizeof url, "%s/redirect?to=http://localhost:%d/echo", base, port);
	r = http_req_new(h, "GET", url);
	http_req_follow(r, 3);
	http_req_header(r, "Auth-Token: sekrit", true);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	is_int(g.rc, LAB_EPROTO, "cross-origin redirect with credentials refused");
	ok(strstr(g.err, "another host") && !strstr(g.err, "sekrit"), "message: %s", g.err);

	/* Other origin without credentials: followed. */
	memset(&g, 0, sizeof g);
	r = http_req_new(h, "GET", url);
	http_req_follow(r, 3);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strncmp(g.body, "GET /echo", 9) == 0,
	   "cross-origin redirect without credentials followed");

	/* Not following: the 302 is an error. */
	memset(&g, 0, sizeof g);
	r = http_req_new(h, "GET", url);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_EINFRA && g.status == 302, "no redirects unless asked");

	/* POST + 303 -> GET. */
	memset(&g, 0, sizeof g);
	snprintf(url, sizeof url, "%s/redirect?code=303&to=%s/echo", base, base);
	r = http_req_new(h, "POST", url);
	http_req_body(r, "x", 1, NULL);
	http_req_follow(r, 1);
	http_req_start(r, on_done, &g);
	run_until(l, &g, 1, 10000);
	ok(g.rc == LAB_OK && strncmp(g.body, "GET /echo", 9) == 0, "303 turns POST into GET");
}

static int cancelled_calls;
static void on_never(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	LAB_UNUSED(res);
	LAB_UNUSED(arg);
	cancelled_calls++;
}

static void test_cancel(struct loop *l)
{
	int fds0 = fakedev_count_fds();
	struct http *h = http_new(l, NULL);
	struct http_req *r[5];
	for (int i = 0; i < 5; i++) {
		r[i] = get(h, "/sleep?ms=500");
		http_req_start(r[i], on_never, NULL);
	}
	for (int i = 0; i < 20; i++)
		loop_run_once(l, 10); /* connections open, requests sent */
	http_req_cancel(r[0]);
	http_req_cancel(r[1]);
	is_int(http_active(h), 3, "cancelled requests are gone");
	http_free(h); /* three still in flight */
	struct got g = {0};
	struct loop_timer t;
	loop_timer_init(&t, on_guard, &g.done);
	loop_timer_start(l, &t, 700);
	loop_run(l);
	is_int(cancelled_calls, 0, "no callback after cancel or free");
	is_int(fakedev_count_fds(), fds0, "no fd left open after free");
}

static void test_helpers(void)
{
	char *s = http_escape("Power On/ä&x=1");
	is_str(s, "Power%20On%2F%C3%A4%26x%3D1", "escape");
	free(s);
	s = http_url_redact("http://admin:hunter2@10.0.0.5:8080/cm?x=1");
	is_str(s, "http://admin:***@10.0.0.5:8080/cm?x=1", "password redacted");
	free(s);
	s = http_url_redact("http://10.0.0.5/a@b");
	is_str(s, "http://10.0.0.5/a@b", "@ in the path is not userinfo");
	free(s);
}

int main(void)
{
	test_helpers();
	pid_t srv = fakedev_start(&port);
	ok(srv > 0, "fake device server started (port %d)", port);
	if (srv <= 0)
		return tap_done();
	snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
	struct loop *l = loop_new();
	struct http *h = http_ref(l, NULL);
	ok(h && http_ref(l, NULL) == h, "one shared instance per loop");
	http_unref(h);
	test_concurrent(l, h);
	test_timeout(l, h);
	test_cap(l, h);
	test_errors(l, h);
	test_bodies(l, h);
	test_redirects(l, h);
	http_unref(h);
	test_keepalive(l);
	test_cancel(l);
	loop_free(l);
	fakedev_stop(srv);
	return tap_done();
}
