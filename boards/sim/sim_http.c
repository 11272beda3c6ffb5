/*
 * sim_http.c - the simulated power plugs and the control API, one small
 * HTTP/1.1 server on the loop (non-blocking accept/read/write, persistent
 * connections as pdudaemon's aiohttp server keeps them: a connection serves
 * requests one after another until the client asks for "Connection: close"
 * (HTTP/1.0: unless it asks for keep-alive), stays idle HTTP_IDLE_MS or is
 * the oldest idle one when HTTP_MAX_CONNS are open; request size capped,
 * 400 on garbage, after which the connection closes):
 *   pdudaemon  GET /power/control/{on|off|reboot}?hostname=H&port=N | alias=A
 *   Tasmota    GET <prefix>/cm?cmnd=Power[N][ On|Off|Toggle]
 *   control    GET /sim/state, POST /sim/fault?board=B&fault=F[&value=V][&count=N],
 *              POST /sim/clear?board=B, POST /sim/power?board=B&op=on|off|reboot
 */
#include "json.h"
#include "sim_board.h"
#include "hex.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTP_MAX_REQ 16384
#define HTTP_MAX_CONNS 256
#define HTTP_IDLE_MS 15000
#define HTTP_HOLD_MS 120000

struct conn {
	struct sim_http *h;
	int fd;
	int port;
	struct lab_buf in, out;
	size_t req_len; /* bytes of c->in the request being answered takes */
	unsigned served; /* requests answered */
	bool done;  /* response queued */
	bool keep;  /* the connection stays open after it */
	bool hold;  /* pdu-timeout: never answer */
	struct loop_timer idle;
	struct conn *next;
};

struct listener {
	int fd, port;
	struct sim_http *h;
};

/* pdudaemon requests name a board by hostname and port or by alias: an
 * index of keys to the first board in lab order that answers to each, built
 * on the first request (a scan of every board per request was the
 * simulator's largest user-space cost at 1024 boards). */
struct pdu_slot {
	char *key; /* NULL: empty */
	size_t board;
};

struct sim_http {
	struct sim *s;
	struct listener ls[16];
	size_t nls;
	struct conn *conns;
	size_t nconns;
	bool paused; /* at HTTP_MAX_CONNS: the listeners are not watched */
	struct pdu_slot *pdu; /* open addressing, npdu a power of two */
	size_t npdu;
};

/* At HTTP_MAX_CONNS the listeners are not watched (connections wait in the
 * kernel's listen backlog); below it again, they are. */
static void listen_pause(struct sim_http *h, bool pause)
{
	h->paused = pause;
	for (size_t i = 0; i < h->nls; i++)
		loop_fd_mod(h->s->loop, h->ls[i].fd, pause ? 0 : LOOP_READ);
}

static void conn_close(struct conn *c)
{
	struct sim_http *h = c->h;
	for (struct conn **pp = &h->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	h->nconns--;
	if (h->paused && h->nconns < HTTP_MAX_CONNS)
		listen_pause(h, false); /* take the connections that waited in the backlog */
	loop_timer_stop(h->s->loop, &c->idle);
	loop_fd_del(h->s->loop, c->fd);
	close(c->fd);
	lab_buf_free(&c->in);
	lab_buf_free(&c->out);
	loop_defer(h->s->loop, free, c);
}

static void respond(struct conn *c, int code, const char *ctype, const char *body)
{
	const char *reason = code == 200 ? "OK" : code == 400 ? "Bad Request" : code == 404 ? "Not Found" :
			     code == 405 ? "Method Not Allowed" : code == 413 ? "Payload Too Large" :
			     code == 500 ? "Internal Server Error" : "Error";
	/* After garbage the rest of the stream cannot be trusted; at the
	 * connection limit others may wait in the backlog for this one. */
	if (code == 400 || code == 413 || c->h->nconns >= HTTP_MAX_CONNS)
		c->keep = false;
	lab_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				"Connection: %s\r\nServer: emmclab-sim\r\n\r\n%s",
		       code, reason, ctype, strlen(body), c->keep ? "keep-alive" : "close", body);
	c->done = true;
	loop_fd_mod(c->h->s->loop, c->fd, LOOP_WRITE);
}

/* URL-decode src[0..n) into dst (size cap); '+' is a space in queries. */
static void url_decode(char *dst, size_t size, const char *src, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < size; i++) {
		if (src[i] == '%' && i + 2 < n && hex_digit(src[i + 1]) >= 0 && hex_digit(src[i + 2]) >= 0) {
			dst[o++] = (char)(hex_digit(src[i + 1]) * 16 + hex_digit(src[i + 2]));
			i += 2;
		} else if (src[i] == '+') {
			dst[o++] = ' ';
		} else {
			dst[o++] = src[i];
		}
	}
	dst[o] = '\0';
}

static bool query_get(const char *query, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);
	const char *p = query;
	while (p && *p) {
		size_t l = strcspn(p, "&");
		if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			url_decode(out, size, p + kl + 1, l - kl - 1);
			return true;
		}
		p += l;
		if (*p == '&')
			p++;
	}
	return false;
}

/* Faults on the power API of a board: true if the request must not be answered normally. */
static bool power_fault(struct conn *c, struct sim_board *b)
{
	if (sim_board_fault_fire(b, FAULT_PDU_TIMEOUT)) {
		c->hold = true; /* never answer; the client's timeout must fire */
		loop_timer_start(c->h->s->loop, &c->idle, HTTP_HOLD_MS);
		return true;
	}
	if (sim_board_fault_fire(b, FAULT_PDU_500)) {
		respond(c, 500, "text/plain", "Internal Server Error\n");
		return true;
	}
	return false;
}

static uint64_t pdu_hash(const char *k)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ull;
	return h;
}

static struct pdu_slot *pdu_slot(struct sim_http *h, const char *key)
{
	size_t m = h->npdu - 1, i = (size_t)pdu_hash(key) & m;
	while (h->pdu[i].key && strcmp(h->pdu[i].key, key) != 0)
		i = (i + 1) & m;
	return &h->pdu[i];
}

/* Keys: "h" hostname "\n" port, "a" alias, "n" board name (a board without
 * an alias also answers to its name). */
static char *pdu_key(char kind, const char *a, int64_t port)
{
	return port == INT64_MIN ? xasprintf("%c%s", kind, a)
				 : xasprintf("%c%s\n%lld", kind, a, (long long)port);
}

static void pdu_put(struct sim_http *h, char *key, size_t board)
{
	struct pdu_slot *sl = pdu_slot(h, key);
	if (sl->key) {
		free(key); /* an earlier board has it */
		return;
	}
	sl->key = key;
	sl->board = board;
}

static void pdu_build(struct sim_http *h)
{
	struct sim *s = h->s;
	h->npdu = 64;
	while (h->npdu < 4 * s->nboards)
		h->npdu *= 2;
	h->pdu = xcalloc(h->npdu, sizeof *h->pdu);
	for (size_t i = 0; i < s->nboards; i++) {
		const struct sim_power_cfg *pw = sim_board_powercfg(s->boards[i]);
		if (strcmp(pw->driver, "pdudaemon") != 0)
			continue;
		pdu_put(h, pdu_key('h', pw->hostname, pw->pdu_port), i);
		if (pw->alias[0])
			pdu_put(h, pdu_key('a', pw->alias, INT64_MIN), i);
		else
			pdu_put(h, pdu_key('n', sim_board_name(s->boards[i]), INT64_MIN), i);
	}
}

static size_t pdu_find(struct sim_http *h, char kind, const char *a, int64_t port)
{
	if (!h->pdu)
		pdu_build(h);
	char *key = pdu_key(kind, a, port);
	struct pdu_slot *sl = pdu_slot(h, key);
	free(key);
	return sl->key ? sl->board : SIZE_MAX;
}

static void handle_pdudaemon(struct conn *c, const char *action, const char *query)
{
	struct sim *s = c->h->s;
	char host[64] = "", port[16] = "", alias[64] = "";
	query_get(query, "hostname", host, sizeof host);
	query_get(query, "port", port, sizeof port);
	query_get(query, "alias", alias, sizeof alias);
	enum sim_power_op op;
	if (strcmp(action, "on") == 0)
		op = SIM_POWER_ON;
	else if (strcmp(action, "off") == 0)
		op = SIM_POWER_OFF;
	else if (strcmp(action, "reboot") == 0)
		op = SIM_POWER_REBOOT;
	else {
		respond(c, 400, "text/plain", "Unknown request\n");
		return;
	}
	if (!alias[0] && (!host[0] || !port[0])) {
		respond(c, 400, "text/plain", "Missing hostname or port\n");
		return;
	}
	int64_t pn = -1;
	if (port[0] && lab_parse_i64(port, &pn) != 0) {
		respond(c, 400, "text/plain", "Bad port\n");
		return;
	}
	size_t i = SIZE_MAX;
	if (alias[0]) {
		size_t by_alias = pdu_find(c->h, 'a', alias, INT64_MIN);
		size_t by_name = pdu_find(c->h, 'n', alias, INT64_MIN);
		i = by_alias < by_name ? by_alias : by_name;
	} else {
		i = pdu_find(c->h, 'h', host, pn);
	}
	if (i < s->nboards) {
		struct sim_board *b = s->boards[i];
		if (power_fault(c, b))
			return;
		sim_board_power(b, op); /* requests apply in arrival order, as pdudaemon's queue */
		respond(c, 200, "text/plain", "OK - accepted request\n");
		return;
	}
	respond(c, 404, "text/plain", "Unknown PDU or port\n");
}

static void handle_tasmota(struct conn *c, const char *prefix, const char *query)
{
	struct sim *s = c->h->s;
	char cmnd[128];
	if (!query_get(query, "cmnd", cmnd, sizeof cmnd)) {
		respond(c, 400, "application/json", "{\"Command\":\"Error\"}");
		return;
	}
	/* "Power[N][ ARG]" */
	size_t wl = strcspn(cmnd, " ");
	char word[32];
	snprintf(word, sizeof word, "%.*s", (int)(wl < 31 ? wl : 31), cmnd);
	const char *argp = cmnd[wl] ? cmnd + wl + 1 : "";
	if (strncasecmp(word, "power", 5) != 0) {
		respond(c, 200, "application/json", "{\"Command\":\"Unknown\"}");
		return;
	}
	int64_t relay = 0;
	if (word[5] && (lab_parse_i64(word + 5, &relay) != 0 || relay < 1 || relay > 32)) {
		respond(c, 200, "application/json", "{\"Command\":\"Unknown\"}");
		return;
	}
	int want = -1; /* -1 query, 0 off, 1 on, 2 toggle */
	if (!argp[0])
		want = -1;
	else if (!strcasecmp(argp, "on") || !strcmp(argp, "1"))
		want = 1;
	else if (!strcasecmp(argp, "off") || !strcmp(argp, "0"))
		want = 0;
	else if (!strcasecmp(argp, "toggle") || !strcmp(argp, "2"))
		want = 2;
	else {
		respond(c, 200, "application/json", "{\"Command\":\"Error\"}");
		return;
	}
	for (size_t i = 0; i < s->nboards; i++) {
		struct sim_board *b = s->boards[i];
		const struct sim_power_cfg *pw = sim_board_powercfg(b);
		if (strcmp(pw->driver, "tasmota") != 0 || strcmp(pw->prefix, prefix) != 0 ||
		    pw->port != c->port)
			continue;
		bool same = pw->relay == relay || (pw->relay <= 1 && relay <= 1);
		if (!same)
			continue;
		if (power_fault(c, b))
			return;
		if (want == 1)
			sim_board_power(b, SIM_POWER_ON);
		else if (want == 0)
			sim_board_power(b, SIM_POWER_OFF);
		else if (want == 2)
			sim_board_power(b, SIM_POWER_TOGGLE);
		char body[64];
		if (relay)
			snprintf(body, sizeof body, "{\"POWER%lld\":\"%s\"}", (long long)relay,
				 sim_board_relay_on(b) ? "ON" : "OFF");
		else
			snprintf(body, sizeof body, "{\"POWER\":\"%s\"}", sim_board_relay_on(b) ? "ON" : "OFF");
		respond(c, 200, "application/json", body);
		return;
	}
	respond(c, 404, "application/json", "{\"Command\":\"Unknown\"}");
}

static void handle_sim(struct conn *c, const char *method, const char *what, const char *query)
{
	struct sim *s = c->h->s;
	if (strcmp(what, "state") == 0) {
		struct lab_buf o;
		lab_buf_init(&o, 4u << 20);
		lab_buf_printf(&o, "{\"pid\":%d,\"boards\":[", (int)getpid());
		for (size_t i = 0; i < s->nboards; i++) {
			if (i)
				lab_buf_append(&o, ",", 1);
			sim_board_json(s->boards[i], &o);
		}
		lab_buf_printf(&o, "]}\n");
		respond(c, 200, "application/json", lab_buf_cstr(&o));
		lab_buf_free(&o);
		return;
	}
	if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0) {
		respond(c, 405, "text/plain", "Method Not Allowed\n");
		return;
	}
	char bn[128] = "";
	query_get(query, "board", bn, sizeof bn);
	struct sim_board *b = sim_find_board(s, bn);
	if (!b) {
		respond(c, 404, "application/json", "{\"error\":\"unknown board\"}\n");
		return;
	}
	if (strcmp(what, "fault") == 0) {
		char f[64] = "", v[64] = "", n[32] = "", spec[200];
		if (!query_get(query, "fault", f, sizeof f) || !f[0]) {
			respond(c, 400, "application/json", "{\"error\":\"missing fault\"}\n");
			return;
		}
		query_get(query, "value", v, sizeof v);
		query_get(query, "count", n, sizeof n);
		snprintf(spec, sizeof spec, "%s%s%s%s%s", f, v[0] ? "=" : "", v, n[0] ? ":" : "", n);
		struct lab_err e = {0};
		if (sim_board_set_fault(b, spec, &e) != 0) {
			struct lab_buf o;
			lab_buf_init(&o, 4096);
			lab_buf_printf(&o, "{\"error\":");
			json_buf_str(&o, e.msg);
			lab_buf_printf(&o, "}\n");
			respond(c, 400, "application/json", lab_buf_cstr(&o));
			lab_buf_free(&o);
			return;
		}
	} else if (strcmp(what, "clear") == 0) {
		sim_board_clear_faults(b);
	} else if (strcmp(what, "power") == 0) {
		char op[16] = "";
		query_get(query, "op", op, sizeof op);
		if (strcmp(op, "on") == 0)
			sim_board_power(b, SIM_POWER_ON);
		else if (strcmp(op, "off") == 0)
			sim_board_power(b, SIM_POWER_OFF);
		else if (strcmp(op, "reboot") == 0)
			sim_board_power(b, SIM_POWER_REBOOT);
		else {
			respond(c, 400, "application/json", "{\"error\":\"op must be on, off or reboot\"}\n");
			return;
		}
	} else {
		respond(c, 404, "application/json", "{\"error\":\"unknown endpoint\"}\n");
		return;
	}
	struct lab_buf o;
	lab_buf_init(&o, 65536);
	sim_board_json(b, &o);
	lab_buf_append(&o, "\n", 1);
	respond(c, 200, "application/json", lab_buf_cstr(&o));
	lab_buf_free(&o);
}

static void handle(struct conn *c, char *req)
{
	/* request line: METHOD SP TARGET SP HTTP/1.x */
	char *eol = strstr(req, "\r\n");
	if (!eol) {
		respond(c, 400, "text/plain", "Bad Request\n");
		return;
	}
	*eol = '\0';
	char method[16], target[2048], version[16];
	if (sscanf(req, "%15s %2047s %15s", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0 || target[0] != '/') {
		respond(c, 400, "text/plain", "Bad Request\n");
		return;
	}
	for (const char *m = method; *m; m++)
		if (*m < 'A' || *m > 'Z') {
			respond(c, 400, "text/plain", "Bad Request\n");
			return;
		}
	char *q = strchr(target, '?');
	const char *query = "";
	if (q) {
		*q = '\0';
		query = q + 1;
	}
	char path[2048];
	url_decode(path, sizeof path, target, strlen(target));
	if (strncmp(path, "/power/control/", 15) == 0) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) {
			respond(c, 405, "text/plain", "Method Not Allowed\n");
			return;
		}
		handle_pdudaemon(c, path + 15, query);
		return;
	}
	if (strncmp(path, "/sim/", 5) == 0) {
		handle_sim(c, method, path + 5, query);
		return;
	}
	size_t pl = strlen(path);
	if (pl >= 3 && strcmp(path + pl - 3, "/cm") == 0) {
		path[pl - 3] = '\0';
		handle_tasmota(c, path, query);
		return;
	}
	respond(c, 404, "text/plain", "Not Found\n");
}

static void on_idle(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	conn_close(arg);
}

/* Does the request (its header block, NUL-terminated) keep the connection? */
static bool wants_keep(const char *req)
{
	const char *eol = strstr(req, "\r\n");
	bool http10 = eol && eol - req >= 8 && strncmp(eol - 8, "HTTP/1.0", 8) == 0;
	for (const char *h = eol; h && h[0] && h[2]; h = strstr(h + 2, "\r\n")) {
		if (strncasecmp(h + 2, "Connection:", 11) != 0)
			continue;
		const char *v = h + 13;
		while (*v == ' ' || *v == '\t')
			v++;
		if (strncasecmp(v, "close", 5) == 0)
			return false;
		if (strncasecmp(v, "keep-alive", 10) == 0)
			return true;
	}
	return !http10;
}

/* Answer the request at the head of c->in once it is whole. */
static void try_request(struct conn *c)
{
	if (c->done || c->hold || c->in.len == 0)
		return;
	const char *s = lab_buf_cstr(&c->in);
	const char *end = strstr(s, "\r\n\r\n");
	if (!end) {
		/* Reject a garbage request line at once rather than at the idle timeout. */
		const char *nl = strchr(s, '\n');
		const char *sp = strchr(s, ' ');
		const char *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
		if (memchr(c->in.data, '\0', c->in.len) ||
		    (nl && (!sp || sp > nl || sp[1] != '/' || !sp2 || sp2 > nl ||
			    strncmp(sp2 + 1, "HTTP/1.", 7) != 0)))
			respond(c, 400, "text/plain", "Bad Request\n");
		return;
	}
	/* A body (POST) is read but unused: the control API takes its arguments in the query. */
	size_t hdr = (size_t)(end - s) + 4, body = 0;
	const char *cl = strcasestr(s, "\r\nContent-Length:");
	if (cl && cl < end) {
		int64_t n = 0;
		char num[24];
		size_t ln = strcspn(cl + 17, "\r");
		snprintf(num, sizeof num, "%.*s", (int)(ln < 23 ? ln : 23), cl + 17);
		char *np = num;
		while (*np == ' ')
			np++;
		if (lab_parse_i64(np, &n) != 0 || n < 0 || n > HTTP_MAX_REQ) {
			respond(c, 400, "text/plain", "Bad Request\n");
			return;
		}
		if (c->in.len < hdr + (size_t)n)
			return;
		body = (size_t)n;
	}
	char *req = xstrndup(s, hdr);
	c->req_len = hdr + body;
	c->keep = wants_keep(req);
	/* From the request on: a client that never reads the answer is closed
	 * as an idle one (pdu-timeout's hold sets its own, longer time). */
	loop_timer_start(c->h->s->loop, &c->idle, HTTP_IDLE_MS);
	handle(c, req);
	free(req);
}

static void on_conn(struct loop *l, int fd, unsigned ev, void *arg)
{
	struct conn *c = arg;
	if (ev & LOOP_WRITE) {
		while (c->out.len) {
			ssize_t w = send(fd, c->out.data, c->out.len, MSG_NOSIGNAL);
			if (w > 0) {
				lab_buf_consume(&c->out, (size_t)w);
				continue;
			}
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			conn_close(c);
			return;
		}
		if (c->done && !c->keep) {
			shutdown(fd, SHUT_WR);
			conn_close(c);
		} else if (c->done) {
			/* Answered: the connection waits for the next request. */
			lab_buf_consume(&c->in, c->req_len);
			c->req_len = 0;
			c->served++;
			c->done = false;
			loop_fd_mod(l, fd, LOOP_READ);
			loop_timer_start(l, &c->idle, HTTP_IDLE_MS);
			try_request(c); /* one the client sent without waiting */
		}
		return;
	}
	char buf[4096];
	ssize_t r = recv(fd, buf, sizeof buf, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_close(c);
		return;
	}
	if (c->hold)
		return; /* never answered */
	if (c->in.len + (size_t)r > HTTP_MAX_REQ) {
		if (!c->done)
			respond(c, 413, "text/plain", "Request Too Large\n");
		return;
	}
	lab_buf_append(&c->in, buf, (size_t)r);
	try_request(c);
}

/* The oldest kept-alive connection that waits for its next request
 * (connections are pushed at the head, so the last such one in the list); a
 * new one whose first request has not arrived yet is not idle. */
static struct conn *idle_conn(struct sim_http *h)
{
	struct conn *found = NULL;
	for (struct conn *c = h->conns; c; c = c->next)
		if (c->served && !c->done && !c->hold && c->in.len == 0)
			found = c;
	return found;
}

static void on_accept(struct loop *l, int fd, unsigned ev, void *arg)
{
	struct listener *ls = arg;
	struct sim_http *h = ls->h;
	LAB_UNUSED(ev);
	for (int n = 0; n < 64; n++) {
		struct conn *old = h->nconns >= HTTP_MAX_CONNS ? idle_conn(h) : NULL;
		if (old)
			conn_close(old); /* an idle kept-alive connection makes room */
		if (h->nconns >= HTTP_MAX_CONNS) {
			/* As a real server under load: connections beyond the limit wait
			 * in the kernel's listen backlog (answered late, never dropped)
			 * until one closes; a whole lab powering on at once would
			 * otherwise see refused power requests the real pdudaemon never
			 * gives. */
			listen_pause(h, true);
			return;
		}
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		struct conn *c = xcalloc(1, sizeof *c);
		c->h = h;
		c->fd = cfd;
		c->port = ls->port;
		lab_buf_init(&c->in, HTTP_MAX_REQ + 1);
		lab_buf_init(&c->out, 8u << 20);
		loop_timer_init(&c->idle, on_idle, c);
		loop_timer_start(l, &c->idle, HTTP_IDLE_MS);
		c->next = h->conns;
		h->conns = c;
		h->nconns++;
		loop_fd_add(l, cfd, LOOP_READ, on_conn, c);
	}
}

int sim_http_start(struct sim *s, const int *ports, size_t nports, struct sim_http **out,
		   struct lab_err *e)
{
	struct sim_http *h = xcalloc(1, sizeof *h);
	h->s = s;
	*out = h;
	for (size_t i = 0; i < nports && h->nls < LAB_ARRAY_SIZE(h->ls); i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return LAB_ERR(e, LAB_EINFRA, "socket: %s", strerror(errno));
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ports[i])};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0) {
			int err = errno;
			close(fd);
			return LAB_ERR(e, LAB_EINFRA, "power API: cannot listen on 127.0.0.1:%d: %s", ports[i],
				       strerror(err));
		}
		struct listener *ls = &h->ls[h->nls++];
		ls->fd = fd;
		ls->port = ports[i];
		ls->h = h;
		loop_fd_add(s->loop, fd, LOOP_READ, on_accept, ls);
	}
	return LAB_OK;
}

void sim_http_free(struct sim_http *h)
{
	if (!h)
		return;
	while (h->conns)
		conn_close(h->conns);
	for (size_t i = 0; i < h->nls; i++) {
		loop_fd_del(h->s->loop, h->ls[i].fd);
		close(h->ls[i].fd);
	}
	for (size_t i = 0; i < h->npdu; i++)
		free(h->pdu[i].key);
	free(h->pdu);
	free(h);
}
