/* http.c - libcurl multi driven by the loop; see http.h for the contract. */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTTP_DEFAULT_MAX_BODY (64 * 1024)
#define HTTP_BACKOFF_CAP_MS 10000

struct http {
	struct loop *loop;
	CURLM *multi;
	struct loop_timer timer;
	struct http_req *reqs; /* started, not yet completed */
	size_t active;
	int *fds;              /* sockets curl asked us to watch */
	size_t nfds, capfds;
	int refs;              /* shared instances (http_ref) */
	uint64_t connects;     /* connections opened (curl's CURLINFO_NUM_CONNECTS, summed) */
	struct http *next_shared;
};

struct http_req {
	struct http *h;
	CURL *easy;
	char *method;
	char *url;             /* current (changes on redirect) */
	struct curl_slist *headers;
	bool has_secret, has_auth;
	char *body;
	size_t body_len;
	bool has_body;
	char *content_type;
	int body_fd;
	curl_off_t body_size;
	curl_mime *mime;
	uint64_t total_ms, connect_ms;
	size_t max_body;
	int retries;
	uint64_t backoff_ms;
	unsigned retry_on;
	int max_redirects, redirects;
	unsigned flags;
	http_done_cb cb;
	void *arg;
	struct lab_buf resp;
	bool over_cap;
	int attempts;
	uint64_t t0_ns;
	bool started, in_multi, in_cb;
	struct loop_timer retry_timer;
	struct http_req *prev, *next;
	char errbuf[CURL_ERROR_SIZE];
};

static struct http *shared_list;

/* ---- curl <-> loop glue ---- */

#define HTTP_MAX_IDLE_CONNS 32

/* Connections stay open for the next request to the same server (a power
 * request a boot to pdudaemon, whose aiohttp server keeps them): as many idle
 * ones as the shared instance has users (one a board with HTTP power), and
 * HTTP_MAX_IDLE_CONNS at least.  A fixed 32 made 1,024 boards, whose power
 * requests come in waves of hundreds, open 12,869-15,180 connections for
 * 21,504 requests (docs/benchmarks.md, wave 18). */
static void keep_conns(struct http *h)
{
	long n = h->refs > HTTP_MAX_IDLE_CONNS ? h->refs : HTTP_MAX_IDLE_CONNS;
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, n);
}

static void process_done(struct http *h);

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct http *h = arg;
	int running;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	process_done(h);
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	LAB_UNUSED(m);
	struct http *h = userp;
	/* Never call socket_action from here (curl forbids it): the timer runs it next pass. */
	if (timeout_ms < 0)
		loop_timer_stop(h->loop, &h->timer);
	else
		loop_timer_start(h->loop, &h->timer, (uint64_t)timeout_ms);
	return 0;
}

static void on_sock(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(l);
	struct http *h = arg;
	int flags = 0, running;
	if (events & LOOP_READ)
		flags |= CURL_CSELECT_IN;
	if (events & LOOP_WRITE)
		flags |= CURL_CSELECT_OUT;
	if (events & LOOP_ERROR)
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(h->multi, fd, flags, &running);
	process_done(h);
}

static void fd_forget(struct http *h, int fd)
{
	for (size_t i = 0; i < h->nfds; i++)
		if (h->fds[i] == fd) {
			h->fds[i] = h->fds[--h->nfds];
			return;
		}
}

static int curl_sock_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	LAB_UNUSED(easy);
	LAB_UNUSED(socketp);
	struct http *h = userp;
	if (what == CURL_POLL_REMOVE) {
		loop_fd_del(h->loop, s);
		fd_forget(h, s);
		return 0;
	}
	unsigned ev = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= LOOP_READ;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= LOOP_WRITE;
	if (loop_fd_watched(h->loop, s)) {
		loop_fd_mod(h->loop, s, ev);
	} else if (loop_fd_add(h->loop, s, ev, on_sock, h) == LAB_OK) {
		if (h->nfds == h->capfds) {
			h->capfds = h->capfds ? h->capfds * 2 : 16;
			h->fds = xreallocarray(h->fds, h->capfds, sizeof *h->fds);
		}
		h->fds[h->nfds++] = s;
	}
	return 0;
}

/* Every socket close-on-exec from birth (children spawned by other drivers must not inherit it). */
static curl_socket_t open_socket_cb(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
	LAB_UNUSED(clientp);
	LAB_UNUSED(purpose);
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- instances ---- */

struct http *http_new(struct loop *l, struct lab_err *e)
{
	static bool global_done;
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			LAB_ERR(e, LAB_EINFRA, "libcurl initialisation failed");
			return NULL;
		}
		global_done = true;
	}
	struct http *h = xcalloc(1, sizeof *h);
	h->loop = l;
	h->multi = curl_multi_init();
	if (!h->multi) {
		free(h);
		LAB_ERR(e, LAB_EINFRA, "libcurl: cannot create a multi handle");
		return NULL;
	}
	loop_timer_init(&h->timer, on_timer, h);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, curl_sock_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	keep_conns(h);
	return h;
}

static void req_free(struct http_req *r);

void http_free(struct http *h)
{
	if (!h)
		return;
	while (h->reqs) {
		struct http_req *r = h->reqs;
		h->reqs = r->next;
		r->next = r->prev = NULL;
		r->started = false;
		req_free(r);
	}
	curl_multi_cleanup(h->multi);
	/* Sockets curl closed without telling us must not stay watched. */
	for (size_t i = 0; i < h->nfds; i++)
		loop_fd_del(h->loop, h->fds[i]);
	loop_timer_stop(h->loop, &h->timer);
	free(h->fds);
	free(h);
}

struct http *http_ref(struct loop *l, struct lab_err *e)
{
	for (struct http *h = shared_list; h; h = h->next_shared)
		if (h->loop == l) {
			h->refs++;
			keep_conns(h);
			return h;
		}
	struct http *h = http_new(l, e);
	if (!h)
		return NULL;
	h->refs = 1; /* http_new kept HTTP_MAX_IDLE_CONNS, as one user gets */
	h->next_shared = shared_list;
	shared_list = h;
	return h;
}

void http_unref(struct http *h)
{
	if (!h)
		return;
	if (--h->refs > 0) {
		keep_conns(h);
		return;
	}
	for (struct http **pp = &shared_list; *pp; pp = &(*pp)->next_shared)
		if (*pp == h) {
			*pp = h->next_shared;
			break;
		}
	http_free(h);
}

uint64_t http_connects(const struct http *h)
{
	return h->connects;
}

size_t http_active(const struct http *h)
{
	return h->active;
}

/* ---- requests ---- */

static size_t write_cb(char *p, size_t sz, size_t n, void *arg)
{
	struct http_req *r = arg;
	if (lab_buf_append(&r->resp, p, sz * n) != LAB_OK) {
		r->over_cap = true;
		return 0; /* makes curl fail with CURLE_WRITE_ERROR */
	}
	return sz * n;
}

static size_t read_file_cb(char *buf, size_t sz, size_t n, void *arg)
{
	struct http_req *r = arg;
	ssize_t got;
	do
		got = read(r->body_fd, buf, sz * n);
	while (got < 0 && errno == EINTR);
	return got < 0 ? CURL_READFUNC_ABORT : (size_t)got;
}

static int seek_file_cb(void *arg, curl_off_t off, int origin)
{
	struct http_req *r = arg;
	return lseek(r->body_fd, (off_t)off, origin) < 0 ? CURL_SEEKFUNC_FAIL : CURL_SEEKFUNC_OK;
}

struct http_req *http_req_new(struct http *h, const char *method, const char *url)
{
	struct http_req *r = xcalloc(1, sizeof *r);
	r->h = h;
	r->method = xstrdup(method);
	r->url = xstrdup(url);
	r->body_fd = -1;
	r->total_ms = 30000;
	r->connect_ms = 10000;
	r->max_body = HTTP_DEFAULT_MAX_BODY;
	r->easy = curl_easy_init();
	if (!r->easy) {
		fputs("emmclab: libcurl cannot create a handle\n", stderr);
		abort(); /* only on out of memory, as xmalloc */
	}
	loop_timer_init(&r->retry_timer, NULL, r);
	return r;
}

void http_req_header(struct http_req *r, const char *line, bool secret)
{
	struct curl_slist *n = curl_slist_append(r->headers, line);
	if (!n)
		abort();
	r->headers = n;
	if (secret)
		r->has_secret = true;
}

void http_req_body(struct http_req *r, const void *data, size_t len, const char *content_type)
{
	free(r->body);
	r->body = xmalloc(len + 1);
	if (len)
		memcpy(r->body, data, len);
	r->body[len] = '\0';
	r->body_len = len;
	r->has_body = true;
	free(r->content_type);
	r->content_type = content_type ? xstrdup(content_type) : NULL;
}

int http_req_body_file(struct http_req *r, const char *path, const char *content_type,
		       struct lab_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return LAB_ERR(e, LAB_EINFRA, "cannot read %s: %s", path, strerror(err));
	}
	if (r->body_fd >= 0)
		close(r->body_fd);
	r->body_fd = fd;
	r->body_size = (curl_off_t)st.st_size;
	r->has_body = true;
	free(r->content_type);
	r->content_type = content_type ? xstrdup(content_type) : NULL;
	return LAB_OK;
}

void http_req_form_field(struct http_req *r, const char *name, const char *value)
{
	if (!r->mime)
		r->mime = curl_mime_init(r->easy);
	curl_mimepart *p = curl_mime_addpart(r->mime);
	curl_mime_name(p, name);
	curl_mime_data(p, value, CURL_ZERO_TERMINATED);
}

int http_req_form_file(struct http_req *r, const char *name, const char *path,
		       const char *content_type, struct lab_err *e)
{
	if (access(path, R_OK) != 0)
		return LAB_ERR(e, LAB_EINFRA, "cannot read %s: %s", path, strerror(errno));
	if (!r->mime)
		r->mime = curl_mime_init(r->easy);
	curl_mimepart *p = curl_mime_addpart(r->mime);
	curl_mime_name(p, name);
	if (curl_mime_filedata(p, path) != CURLE_OK)
		return LAB_ERR(e, LAB_EINFRA, "cannot attach %s", path);
	if (content_type)
		curl_mime_type(p, content_type);
	return LAB_OK;
}

void http_req_auth(struct http_req *r, const char *user, const char *password)
{
	curl_easy_setopt(r->easy, CURLOPT_USERNAME, user ? user : "");
	curl_easy_setopt(r->easy, CURLOPT_PASSWORD, password ? password : "");
	curl_easy_setopt(r->easy, CURLOPT_HTTPAUTH, (long)(CURLAUTH_BASIC | CURLAUTH_DIGEST));
	r->has_auth = true;
}

void http_req_ca_file(struct http_req *r, const char *path)
{
	curl_easy_setopt(r->easy, CURLOPT_CAINFO, path); /* curl copies the string */
}

void http_req_timeout(struct http_req *r, uint64_t total_ms, uint64_t connect_ms)
{
	if (total_ms)
		r->total_ms = total_ms;
	if (connect_ms)
		r->connect_ms = connect_ms;
}

void http_req_max_body(struct http_req *r, size_t max)
{
	r->max_body = max ? max : HTTP_DEFAULT_MAX_BODY;
}

void http_req_retry(struct http_req *r, int retries, uint64_t backoff_ms, unsigned on)
{
	r->retries = retries < 0 ? 0 : retries;
	r->backoff_ms = backoff_ms;
	r->retry_on = on;
}

void http_req_follow(struct http_req *r, int max)
{
	r->max_redirects = max < 0 ? 0 : max;
}

void http_req_flags(struct http_req *r, unsigned flags)
{
	r->flags = flags;
}

static void req_free(struct http_req *r)
{
	struct http *h = r->h;
	loop_timer_stop(h->loop, &r->retry_timer);
	if (r->in_multi) {
		curl_multi_remove_handle(h->multi, r->easy);
		r->in_multi = false;
	}
	if (r->started) {
		if (r->prev)
			r->prev->next = r->next;
		else
			h->reqs = r->next;
		if (r->next)
			r->next->prev = r->prev;
		h->active--;
	}
	if (r->mime)
		curl_mime_free(r->mime);
	curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	if (r->body_fd >= 0)
		close(r->body_fd);
	lab_buf_free(&r->resp);
	free(r->body);
	free(r->content_type);
	free(r->method);
	free(r->url);
	free(r);
}

void http_req_cancel(struct http_req *r)
{
	if (!r || r->in_cb)
		return;
	req_free(r);
}

/* Method and body; re-applied after a redirect that turns the request into a GET. */
static void setup_method(struct http_req *r)
{
	CURL *c = r->easy;
	/* Setting MIMEPOST (even to NULL) makes curl POST: clear it first, then HTTPGET
	 * resets the method and the POST/UPLOAD/NOBODY state. */
	curl_easy_setopt(c, CURLOPT_MIMEPOST, NULL);
	curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
	bool post = strcasecmp(r->method, "POST") == 0;
	bool get = strcasecmp(r->method, "GET") == 0;
	if (strcasecmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
		return;
	}
	if (r->mime) {
		curl_easy_setopt(c, CURLOPT_MIMEPOST, r->mime);
		if (!post)
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
		return;
	}
	if (r->body_fd >= 0) {
		lseek(r->body_fd, 0, SEEK_SET);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, read_file_cb);
		curl_easy_setopt(c, CURLOPT_READDATA, r);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_file_cb);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, r);
		if (post) {
			curl_easy_setopt(c, CURLOPT_POST, 1L);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, r->body_size);
		} else {
			curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, r->body_size);
			if (strcasecmp(r->method, "PUT") != 0)
				curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
		}
		return;
	}
	if (r->has_body || post) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, r->body ? r->body : "");
		if (!post)
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
		return;
	}
	if (!get)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
}

static void setup_easy(struct http_req *r)
{
	CURL *c = r->easy;
	curl_easy_setopt(c, CURLOPT_PRIVATE, r);
	curl_easy_setopt(c, CURLOPT_URL, r->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* redirects are ours: origin rule */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "emmclab/" EMMCLAB_VERSION);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)r->total_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)r->connect_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
	if (r->content_type && (r->has_body || r->body_fd >= 0)) {
		char line[256];
		snprintf(line, sizeof line, "Content-Type: %s", r->content_type);
		http_req_header(r, line, false);
		free(r->content_type);
		r->content_type = NULL;
	}
	/* No "Expect: 100-continue": with a body on a reused connection libcurl
	 * 7.88 sometimes misreads the answer ("Received HTTP/0.9") and the upload
	 * fails; servers here answer at once anyway.  Added once (retries reuse r). */
	if (r->has_body || r->body_fd >= 0 || r->mime) {
		bool have = false;
		for (const struct curl_slist *h = r->headers; h; h = h->next)
			have |= strncasecmp(h->data, "Expect:", 7) == 0;
		if (!have)
			http_req_header(r, "Expect:", false);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
	setup_method(r);
}

static int add_attempt(struct http_req *r)
{
	r->attempts++;
	lab_buf_free(&r->resp);
	lab_buf_init(&r->resp, r->max_body);
	r->over_cap = false;
	r->errbuf[0] = '\0';
	if (r->body_fd >= 0)
		lseek(r->body_fd, 0, SEEK_SET);
	if (curl_multi_add_handle(r->h->multi, r->easy) != CURLM_OK)
		return LAB_EINFRA;
	r->in_multi = true;
	return LAB_OK;
}

static void finish(struct http_req *r, int rc, const char *err);

static void on_retry(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct http_req *r = arg;
	if (add_attempt(r) != LAB_OK)
		finish(r, LAB_EINFRA, "libcurl refused the request");
}

int http_req_start(struct http_req *r, http_done_cb cb, void *arg)
{
	struct http *h = r->h;
	r->cb = cb;
	r->arg = arg;
	r->t0_ns = lab_now_ns();
	setup_easy(r);
	r->started = true;
	r->next = h->reqs;
	r->prev = NULL;
	if (h->reqs)
		h->reqs->prev = r;
	h->reqs = r;
	h->active++;
	loop_timer_init(&r->retry_timer, on_retry, r);
	/* curl answers add_handle with a 0 ms timer: the transfer starts on the next loop pass. */
	int rc = add_attempt(r);
	if (rc != LAB_OK)
		req_free(r); /* no callback: the caller sees the error now */
	return rc;
}

/* ---- completion ---- */

static void first_line(const char *body, size_t len, char *out, size_t outsz)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < outsz; i++) {
		unsigned char ch = (unsigned char)body[i];
		if (ch == '\n' || ch == '\r') {
			if (o)
				break;
			continue;
		}
		out[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

static void finish(struct http_req *r, int rc, const char *err)
{
	struct http_result res = {0};
	char *url = http_url_redact(r->url);
	char *ct = NULL;
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
	res.rc = rc;
	res.status = status;
	res.body = lab_buf_cstr(&r->resp);
	res.body_len = r->resp.len;
	res.content_type = ct;
	res.url = url;
	res.err = err ? err : "";
	res.attempts = r->attempts;
	res.elapsed_ms = (lab_now_ns() - r->t0_ns) / 1000000ull;
	r->in_cb = true;
	if (r->cb)
		r->cb(r, &res, r->arg);
	r->in_cb = false;
	free(url);
	req_free(r);
}

static uint64_t backoff(const struct http_req *r)
{
	uint64_t d = r->backoff_ms;
	for (int i = 1; i < r->attempts && d < HTTP_BACKOFF_CAP_MS; i++)
		d *= 2;
	return d > HTTP_BACKOFF_CAP_MS ? HTTP_BACKOFF_CAP_MS : d;
}

static bool same_origin(const char *a, const char *b)
{
	bool same = false;
	CURLU *ua = curl_url(), *ub = curl_url();
	char *sa = NULL, *sb = NULL, *ha = NULL, *hb = NULL, *pa = NULL, *pb = NULL;
	if (ua && ub && curl_url_set(ua, CURLUPART_URL, a, 0) == CURLUE_OK &&
	    curl_url_set(ub, CURLUPART_URL, b, 0) == CURLUE_OK &&
	    curl_url_get(ua, CURLUPART_SCHEME, &sa, 0) == CURLUE_OK &&
	    curl_url_get(ub, CURLUPART_SCHEME, &sb, 0) == CURLUE_OK &&
	    curl_url_get(ua, CURLUPART_HOST, &ha, 0) == CURLUE_OK &&
	    curl_url_get(ub, CURLUPART_HOST, &hb, 0) == CURLUE_OK &&
	    curl_url_get(ua, CURLUPART_PORT, &pa, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    curl_url_get(ub, CURLUPART_PORT, &pb, CURLU_DEFAULT_PORT) == CURLUE_OK)
		same = strcasecmp(sa, sb) == 0 && strcasecmp(ha, hb) == 0 && strcmp(pa, pb) == 0;
	curl_free(sa);
	curl_free(sb);
	curl_free(ha);
	curl_free(hb);
	curl_free(pa);
	curl_free(pb);
	curl_url_cleanup(ua);
	curl_url_cleanup(ub);
	return same;
}

static bool has_userinfo(const char *url)
{
	const char *p = strstr(url, "://");
	if (!p)
		return false;
	p += 3;
	size_t auth = strcspn(p, "/?#");
	return memchr(p, '@', auth) != NULL;
}

/* Returns true when the request was re-issued to the redirect target. */
static bool try_redirect(struct http_req *r, long status, char *err, size_t errsz, int *rc)
{
	char *loc = NULL;
	curl_easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &loc);
	if (!loc || r->redirects >= r->max_redirects)
		return false;
	if (strncasecmp(loc, "http://", 7) != 0 && strncasecmp(loc, "https://", 8) != 0) {
		*rc = LAB_EPROTO;
		snprintf(err, errsz, "redirect to a non-HTTP URL refused");
		return false;
	}
	bool creds = r->has_auth || r->has_secret || has_userinfo(r->url);
	if (creds && !same_origin(r->url, loc)) {
		char *red = http_url_redact(loc);
		*rc = LAB_EPROTO;
		snprintf(err, errsz, "redirect to another host refused (request carries credentials): %s",
			 red);
		free(red);
		return false;
	}
	char *next = xstrdup(loc);
	free(r->url);
	r->url = next;
	r->redirects++;
	if (status == 303 || ((status == 301 || status == 302) && strcasecmp(r->method, "POST") == 0)) {
		free(r->method);
		r->method = xstrdup("GET");
		r->has_body = false;
		if (r->body_fd >= 0) {
			close(r->body_fd);
			r->body_fd = -1;
		}
		if (r->mime) {
			curl_easy_setopt(r->easy, CURLOPT_MIMEPOST, NULL);
			curl_mime_free(r->mime);
			r->mime = NULL;
		}
	}
	curl_easy_setopt(r->easy, CURLOPT_URL, r->url);
	setup_method(r);
	r->attempts--; /* a redirect is not a retry */
	if (add_attempt(r) != LAB_OK) {
		*rc = LAB_EINFRA;
		snprintf(err, errsz, "libcurl refused the redirected request");
		return false;
	}
	return true;
}

static void attempt_done(struct http_req *r, CURLcode cc)
{
	char err[512] = "";
	int rc = LAB_OK;
	unsigned cls = 0; /* retry class of this failure */
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);

	switch (cc) {
	case CURLE_OK:
		break;
	case CURLE_OPERATION_TIMEDOUT:
		rc = LAB_ETIMEOUT;
		cls = HTTP_RETRY_TIMEOUT;
		snprintf(err, sizeof err, "no answer within %llu ms (%s)",
			 (unsigned long long)r->total_ms, detail);
		break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		rc = LAB_EINFRA;
		cls = HTTP_RETRY_CONNECT;
		snprintf(err, sizeof err, "connect failed: %s", detail);
		break;
	case CURLE_GOT_NOTHING:
		rc = LAB_EINFRA;
		cls = HTTP_RETRY_CONNECT;
		snprintf(err, sizeof err, "server closed the connection without an answer");
		break;
	case CURLE_PARTIAL_FILE:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		rc = LAB_EINFRA;
		cls = HTTP_RETRY_CONNECT;
		snprintf(err, sizeof err, "connection broke during the exchange: %s", detail);
		break;
	case CURLE_WRITE_ERROR:
		if (r->over_cap) {
			rc = LAB_EPROTO;
			snprintf(err, sizeof err, "answer body larger than %zu bytes", r->max_body);
			break;
		}
		/* fall through */
	default:
		rc = LAB_EINFRA;
		snprintf(err, sizeof err, "%s", detail);
		break;
	}

	if (cc == CURLE_OK && status >= 300 && status < 400 && r->max_redirects > 0) {
		if (try_redirect(r, status, err, sizeof err, &rc))
			return;
		if (rc != LAB_OK) {
			finish(r, rc, err);
			return;
		}
	}
	if (cc == CURLE_OK && !(r->flags & HTTP_ANY_STATUS) && (status < 200 || status > 299)) {
		char line[160];
		first_line(lab_buf_cstr(&r->resp), r->resp.len, line, sizeof line);
		rc = LAB_EINFRA;
		if (status >= 500 && status <= 599)
			cls = HTTP_RETRY_5XX;
		snprintf(err, sizeof err, "HTTP %ld%s%s", status, line[0] ? ": " : "", line);
	}
	if (rc != LAB_OK && (cls & r->retry_on) && r->attempts <= r->retries) {
		loop_timer_start(r->h->loop, &r->retry_timer, backoff(r));
		return;
	}
	finish(r, rc, rc == LAB_OK ? NULL : err);
}

static void process_done(struct http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *easy = m->easy_handle;
		CURLcode cc = m->data.result;
		struct http_req *r = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
		curl_multi_remove_handle(h->multi, easy);
		if (!r)
			continue;
		long conns = 0;
		if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &conns) == CURLE_OK && conns > 0)
			h->connects += (uint64_t)conns;
		r->in_multi = false;
		attempt_done(r, cc);
	}
}

/* ---- helpers ---- */

char *http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = xmalloc(n * 3 + 1), *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

char *http_url_redact(const char *url)
{
	const char *p = strstr(url, "://");
	if (!p)
		return xstrdup(url);
	p += 3;
	size_t auth = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	if (!at)
		return xstrdup(url);
	const char *colon = memchr(p, ':', (size_t)(at - p));
	if (!colon)
		return xstrdup(url);
	return xasprintf("%.*s***%s", (int)(colon + 1 - url), url, at);
}
