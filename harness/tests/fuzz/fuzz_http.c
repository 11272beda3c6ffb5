/*
 * fuzz_http.c - libFuzzer target for HTTP replies: a raw response (status
 * line, headers, body: the input after its first byte) is served by an
 * in-process TCP server on 127.0.0.1 and read through the real path: libcurl
 * and http.c, then either a power driver's reply parser (shelly gen 1 and 2,
 * tasmota, esphome, pdudaemon; state, on and off) or the verdict of every
 * upload kind (SQUAD, http-put/WebDAV, webhook) on the result.
 *
 * Byte 0 picks the case.  Every operation must complete once, with a known rc
 * and state, and a reply the driver cannot read must never count as success.
 */
#include "http.h"
#include "power.h"
#include "upload.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct loop *L;
static int lsock, port;
static const uint8_t *reply;
static size_t reply_len;
static bool done;

struct conn {
	int fd;
	char req[8192];
	size_t n;
};

static void on_client(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(events);
	struct conn *c = arg;
	ssize_t r = read(fd, c->req + c->n, sizeof c->req - 1 - c->n);
	if (r > 0) {
		c->n += (size_t)r;
		c->req[c->n] = '\0';
		if (!strstr(c->req, "\r\n\r\n") && c->n < sizeof c->req - 1)
			return; /* the request head is not complete yet */
		/* blocking write of a reply of at most -max_len bytes: fits the socket buffer */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		for (size_t off = 0; off < reply_len;) {
			ssize_t w = write(fd, reply + off, reply_len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		shutdown(fd, SHUT_WR);
	}
	loop_fd_del(l, fd);
	close(fd);
	free(c);
}

static void on_accept(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(events);
	LAB_UNUSED(arg);
	int s = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (s < 0)
		return;
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->fd = s;
	loop_fd_add(l, s, LOOP_READ, on_client, c);
}

static void init_once(void)
{
	if (L)
		return;
	L = loop_new();
	lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&a, sizeof a) || listen(lsock, 16) ||
	    getsockname(lsock, (struct sockaddr *)&a, &al))
		abort();
	port = ntohs(a.sin_port);
	loop_fd_add(L, lsock, LOOP_READ, on_accept, NULL);
}

static void run_until_done(void)
{
	uint64_t end = lab_now_ms() + 10000;
	while (!done && lab_now_ms() < end)
		loop_run_once(L, 20);
	if (!done)
		abort(); /* no completion within 10 s of an immediate reply */
	done = false;
}

static void on_power(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	LAB_UNUSED(msg);
	enum power_op op = *(enum power_op *)arg;
	if (done || rc < LAB_OK || rc > LAB_EPROTO || state < POWER_UNKNOWN || state > POWER_IS_ON)
		abort();
	/* a read state that succeeded knows the state */
	if (op == POWER_STATE && rc == LAB_OK && state == POWER_UNKNOWN)
		abort();
	done = true;
}

static void on_http(struct http_req *r, const struct http_result *res, void *arg)
{
	LAB_UNUSED(r);
	LAB_UNUSED(arg);
	if (done || !res->body || strlen(res->body) > res->body_len || !res->err)
		abort();
	for (const struct upload_kind *const *k = upload_kinds; *k; k++) {
		enum upload_verdict v =
		    (*k)->judge ? (*k)->judge(NULL, res) : upload_judge_default(NULL, res);
		if (v == UPLOAD_SENT && res->status == 0)
			abort(); /* no answer is never delivered */
	}
	done = true;
}

static const char *const drivers[] = {
    "{driver: shelly, gen: 1, channel: 0, url: 'http://127.0.0.1:%d/s', retries: 0, "
    "off_time: 0, timeout: 10s}",
    "{driver: shelly, gen: 2, channel: 1, url: 'http://127.0.0.1:%d/s', retries: 0, "
    "off_time: 0, timeout: 10s}",
    "{driver: tasmota, url: 'http://127.0.0.1:%d/t', relay: 2, retries: 0, off_time: 0, "
    "timeout: 10s}",
    "{driver: esphome, switch: relay_1, url: 'http://127.0.0.1:%d/e', retries: 0, off_time: 0, "
    "timeout: 10s}",
    "{driver: pdudaemon, url: 'http://127.0.0.1:%d', hostname: pdu, port: 3, retries: 0, "
    "off_time: 0, timeout: 10s}",
};
#define NDRV (sizeof drivers / sizeof drivers[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	init_once();
	reply = data + 1;
	reply_len = size - 1;
	unsigned sel = data[0] % (NDRV * 3 + 1);
	if (sel == NDRV * 3) {
		struct lab_err e = {0};
		struct http *h = http_new(L, &e);
		char url[64];
		snprintf(url, sizeof url, "http://127.0.0.1:%d/api/submit/g/p/b/e", port);
		struct http_req *r = http_req_new(h, "POST", url);
		http_req_body(r, "{}", 2, "application/json");
		http_req_timeout(r, 10000, 5000);
		http_req_flags(r, HTTP_ANY_STATUS);
		if (http_req_start(r, on_http, NULL) != LAB_OK)
			abort();
		run_until_done();
		http_free(h);
		return 0;
	}
	char yaml[300];
	snprintf(yaml, sizeof yaml, drivers[sel / 3], port);
	struct cfg_node *n = NULL;
	struct power *p = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("fuzz.yaml", yaml, strlen(yaml), &n, &e) ||
	    power_new(L, "fuzz", n, &p, &e))
		abort();
	cfg_free(n);
	static const enum power_op ops[] = {POWER_STATE, POWER_ON, POWER_OFF};
	enum power_op op = ops[sel % 3];
	if (op == POWER_STATE && !p->drv->can_read_state)
		op = POWER_ON;
	if (power_request(p, op, on_power, &op) == LAB_OK)
		run_until_done();
	power_free(p);
	return 0;
}
