/*
 * console.c - the generic console layer (see console.h): driver list and
 * options, open / async connect / loss / reconnect on a delay timer, the
 * capped write queue drained on LOOP_WRITE with pacing (chunk bytes, then a
 * char_delay timer), and the transcript hook.
 *
 * Re-entrancy: the data and state callbacks may call console_write,
 * console_close and even console_free; a free from inside a callback is
 * deferred until the callback returns (depth counter).
 */
#include "console.h"
#include "driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONSOLE_QUEUE_MAX (1024 * 1024)
#define CONSOLE_READ_MAX 65536
#define CONSOLE_ECHO_MAX 256 /* printable bytes awaited as echo (echo pacing) */
#define CONSOLE_CONNECT_DEFAULT_MS 10000

DRIVER_HEAD_ASSERT(struct console_driver);

/* The console drivers (console/<name>.c, each exporting console_<name>): one row
 * each.  A new one is its file, one row here and its line in harness/CMakeLists.txt. */
#define CONSOLE_DRIVERS(X)                                                                         \
	X(console_serial)                                                                          \
	X(console_tcp)                                                                             \
	X(console_pty)                                                                             \
	X(console_exec)
#define X(d) extern const struct console_driver d;
CONSOLE_DRIVERS(X)
#undef X

const struct console_driver *const console_drivers[] = {
#define X(d) &d,
	CONSOLE_DRIVERS(X)
#undef X
	NULL,
};

struct console_common {
	char *driver;
	uint64_t reconnect_delay_ms;
	uint64_t reconnect_window_ms;
	uint64_t read_hold_ms;
	uint64_t char_delay_ms;
	int64_t chunk;
};

static const struct opt console_common_opts[] = {
	{.key = "driver", .type = OPT_STR, .offset = offsetof(struct console_common, driver),
	 .flags = OPT_REQUIRED, .help = "console driver name"},
	{.key = "reconnect_delay", .type = OPT_DURATION,
	 .offset = offsetof(struct console_common, reconnect_delay_ms), .def = "1s", .min = 10,
	 .max = 600000, .help = "wait before reopening a lost console"},
	{.key = "reconnect_window", .type = OPT_DURATION,
	 .offset = offsetof(struct console_common, reconnect_window_ms), .def = "5s", .min = 10,
	 .max = 3600000,
	 .help = "how long a console may stay lost (end of file, refused reconnection) while the "
		 "board is on before the board's current step ends with `console lost`"},
	{.key = "read_hold", .type = OPT_DURATION,
	 .offset = offsetof(struct console_common, read_hold_ms), .def = "0", .min = 0, .max = 100,
	 .help = "after each read, leave the input this long to gather (fewer wakeups for a "
		 "byte-at-a-time source such as QEMU's UART; adds at most this to every match)"},
	{.key = "char_delay", .type = OPT_DURATION,
	 .offset = offsetof(struct console_common, char_delay_ms), .def = "0", .min = 0,
	 .max = 10000, .help = "pause after every `chunk` bytes typed (board type may set it)"},
	{.key = "chunk", .type = OPT_INT, .offset = offsetof(struct console_common, chunk),
	 .def = "0", .min = 0, .max = 65536,
	 .help = "bytes typed before each char_delay pause (0 = no pacing)"},
	{0},
};

static const struct driver_kind console_kind = {"console", (const void *const *)console_drivers,
						console_common_opts};

int console_ops_check(const struct console_driver *d, struct lab_err *e)
{
	int rc = driver_check_head("console", d, CONSOLE_OPS_VERSION, e);
	if (!rc)
		rc = driver_check_hook("console", d->name, d->open != NULL, "open", e);
	if (!rc)
		rc = driver_check_hook("console", d->name, d->close != NULL, "close", e);
	return rc;
}

static int console_check_one(const void *ops, struct lab_err *e)
{
	return console_ops_check(ops, e);
}

int console_registry_check(struct lab_err *e)
{
	return driver_check_list(&console_kind, console_check_one, e);
}

/* A byte queue consumed from the front without memmove per write. */
struct wqueue {
	char *data;
	size_t off, len, cap; /* live bytes: data[off .. off+len) */
};

enum cstate { C_CLOSED, C_CONNECTING, C_UP, C_DOWN };

struct console {
	struct loop *loop;
	char *board;
	const struct console_driver *drv;
	void *cfg;
	void *priv;
	struct console_events ev;
	void *arg;
	uint64_t reconnect_delay_ms;
	uint64_t read_hold_ms;
	struct console_pacing pacing;
	enum cstate st;
	bool want_open;
	bool expect_down;
	int fd;
	unsigned watching;
	struct wqueue q;    /* paced user bytes (already tx-filtered) */
	struct wqueue rawq; /* protocol replies: go first, unpaced */
	size_t chunk_sent;
	bool pace_wait;
	unsigned char echo_exp[CONSOLE_ECHO_MAX]; /* ring: written, not yet echoed */
	size_t echo_head, echo_len;
	uint64_t echo_released, timer_released;
	struct loop_timer pace_timer, reconnect_timer, connect_timer, window_timer;
	uint64_t reconnect_window_ms;
	bool gone;          /* lost for longer than the window: told the owner */
	uint64_t up_since_ms; /* last (re)connect: a link that drops again at once is still lost */
	char cur_msg[256];  /* the latest loss reason */
	struct loop_timer hold_timer; /* read_hold: input left to gather */
	bool holding;
	uint64_t connect_timeout_ms;
	bool connect_pending;
	struct transcript *transcript;
	char last_msg[256]; /* last loss reason reported, to report reconnect failures once */
	int depth;
	bool dead;
	uint64_t gen; /* bumped on every teardown: detects close from inside a callback */
};

/* ---- write queues ---- */

static size_t wq_len(const struct wqueue *w)
{
	return w->len;
}

static void wq_push(struct wqueue *w, const void *p, size_t n)
{
	if (w->off && w->off + w->len + n > w->cap) {
		memmove(w->data, w->data + w->off, w->len);
		w->off = 0;
	}
	if (w->off + w->len + n > w->cap) {
		size_t nc = w->cap ? w->cap : 4096;
		while (nc < w->len + n)
			nc *= 2;
		w->data = xrealloc(w->data, nc);
		w->cap = nc;
	}
	memcpy(w->data + w->off + w->len, p, n);
	w->len += n;
}

static void wq_pop(struct wqueue *w, size_t n)
{
	w->off += n;
	w->len -= n;
	if (w->len == 0)
		w->off = 0;
}

static void wq_reset(struct wqueue *w)
{
	w->off = w->len = 0;
	if (w->cap > 65536) { /* give back a burst's memory */
		free(w->data);
		w->data = NULL;
		w->cap = 0;
	}
}

/* ---- options ---- */

static void on_pace(struct loop *l, struct loop_timer *t, void *arg);
static void on_hold(struct loop *l, struct loop_timer *t, void *arg);
static void on_reconnect(struct loop *l, struct loop_timer *t, void *arg);
static void on_connect_timeout(struct loop *l, struct loop_timer *t, void *arg);
static void on_window(struct loop *l, struct loop_timer *t, void *arg);

int console_new(struct loop *l, const char *board, const struct cfg_node *cfg,
		const struct console_events *ev, void *arg, struct console **out, struct lab_err *e)
{
	struct console_common cc;
	const void *ops;
	void *dcfg;
	int rc = driver_from_cfg(&console_kind, cfg, &cc, &ops, &dcfg, e);
	if (rc)
		return rc;
	const struct console_driver *d = ops;
	struct console *c = xcalloc(1, sizeof *c);
	c->loop = l;
	c->board = xstrdup(board ? board : "?");
	c->drv = d;
	c->ev = ev ? *ev : (struct console_events){0};
	c->arg = arg;
	c->fd = -1;
	c->reconnect_delay_ms = cc.reconnect_delay_ms;
	c->reconnect_window_ms = cc.reconnect_window_ms;
	c->read_hold_ms = cc.read_hold_ms;
	c->pacing.char_delay_us = cc.char_delay_ms * 1000ull;
	c->pacing.chunk = (size_t)cc.chunk;
	opt_free(console_common_opts, &cc);
	loop_timer_init(&c->pace_timer, on_pace, c);
	loop_timer_init(&c->hold_timer, on_hold, c);
	loop_timer_init(&c->reconnect_timer, on_reconnect, c);
	loop_timer_init(&c->connect_timer, on_connect_timeout, c);
	loop_timer_init(&c->window_timer, on_window, c);
	c->cfg = dcfg;
	*out = c;
	return LAB_OK;
}

static void destroy(struct console *c)
{
	console_close(c);
	driver_free_own(c->drv->options, c->cfg);
	free(c->q.data);
	free(c->rawq.data);
	free(c->board);
	free(c);
}

void console_free(struct console *c)
{
	if (!c)
		return;
	if (c->depth > 0) {
		/* from inside one of our callbacks: finish it first */
		console_close(c);
		c->dead = true;
		return;
	}
	destroy(c);
}

/* Enter/leave a callback; returns false when the console was freed inside it. */
static void enter(struct console *c)
{
	c->depth++;
}

static bool leave(struct console *c)
{
	c->depth--;
	if (c->depth == 0 && c->dead) {
		destroy(c);
		return false;
	}
	return !c->dead;
}

static void update_watch(struct console *c)
{
	if (c->fd < 0)
		return;
	unsigned want;
	if (c->st == C_CONNECTING) {
		want = LOOP_WRITE;
	} else {
		want = c->holding ? 0 : LOOP_READ;
		if (wq_len(&c->rawq) || (wq_len(&c->q) && !c->pace_wait))
			want |= LOOP_WRITE;
	}
	if (want != c->watching) {
		loop_fd_mod(c->loop, c->fd, want);
		c->watching = want;
	}
}

/* Stop using the transport (no callbacks). */
static void teardown(struct console *c)
{
	loop_timer_stop(c->loop, &c->pace_timer);
	loop_timer_stop(c->loop, &c->connect_timer);
	loop_timer_stop(c->loop, &c->hold_timer);
	c->holding = false;
	if (c->fd >= 0) {
		loop_fd_del(c->loop, c->fd);
		c->fd = -1;
	}
	if (c->st == C_UP || c->st == C_CONNECTING)
		c->drv->close(c);
	c->watching = 0;
	c->pace_wait = false;
	c->chunk_sent = 0;
	c->echo_len = 0;
	c->connect_pending = false;
	wq_reset(&c->q);
	wq_reset(&c->rawq);
	c->gen++;
}

static void report(struct console *c, bool up, const char *msg)
{
	if (!c->ev.state)
		return;
	enter(c);
	c->ev.state(c, up, msg, c->arg);
	leave(c);
}

/* The link went away: tear down, tell the owner (once per distinct reason), retry later. */
static void lost(struct console *c, const char *why)
{
	bool was_up = c->st == C_UP;
	teardown(c);
	c->st = c->want_open ? C_DOWN : C_CLOSED;
	char msg[300];
	snprintf(msg, sizeof msg, "%s%s", why, c->expect_down ? " (board off: expected)" : "");
	if (c->want_open)
		loop_timer_start(c->loop, &c->reconnect_timer, c->reconnect_delay_ms);
	lab_strlcpy(c->cur_msg, why, sizeof c->cur_msg);
	/* Lost while the board is on: the window for coming back starts now. */
	if (c->want_open && !c->expect_down && !c->gone && !loop_timer_pending(&c->window_timer))
		loop_timer_start(c->loop, &c->window_timer, c->reconnect_window_ms);
	if (was_up || strcmp(c->last_msg, why) != 0) {
		lab_strlcpy(c->last_msg, why, sizeof c->last_msg);
		report(c, false, msg);
	}
}

static void on_fd(struct loop *l, int fd, unsigned events, void *arg);

static void went_up(struct console *c)
{
	c->st = C_UP;
	c->last_msg[0] = '\0';
	c->up_since_ms = lab_now_ms();
	update_watch(c);
	report(c, true, "connected");
}

static int try_open(struct console *c, struct lab_err *e)
{
	int fd = -1;
	c->connect_pending = false;
	c->connect_timeout_ms = 0;
	c->priv = NULL;
	int rc = c->drv->open(c, &fd, e);
	if (rc)
		return rc;
	if (fd < 0) {
		c->drv->close(c);
		return LAB_ERR(e, LAB_EINFRA, "%s: console driver %s returned no fd", c->board,
			       c->drv->name);
	}
	lab_fd_cloexec(fd);
	lab_fd_nonblock(fd);
	c->fd = fd;
	if (c->connect_pending) {
		c->st = C_CONNECTING;
		c->watching = LOOP_WRITE;
		loop_fd_add(c->loop, fd, LOOP_WRITE, on_fd, c);
		loop_timer_start(c->loop, &c->connect_timer,
				 c->connect_timeout_ms ? c->connect_timeout_ms
						       : CONSOLE_CONNECT_DEFAULT_MS);
		return LAB_OK;
	}
	c->st = C_UP;
	c->watching = LOOP_READ;
	if (loop_fd_add(c->loop, fd, LOOP_READ, on_fd, c) != LAB_OK) {
		teardown(c);
		c->st = C_DOWN;
		return LAB_ERR(e, LAB_EINFRA, "%s: cannot watch console fd %d", c->board, fd);
	}
	went_up(c);
	return LAB_OK;
}

int console_open(struct console *c, struct lab_err *e)
{
	if (c->want_open)
		return LAB_OK;
	c->want_open = true;
	c->last_msg[0] = '\0';
	struct lab_err local = {0};
	enter(c);
	int rc = try_open(c, &local);
	if (!leave(c))
		return rc; /* freed by the owner from its state callback */
	if (rc == LAB_OK)
		return LAB_OK;
	if (c->expect_down) {
		/* board is off: the console may come with power; keep trying quietly */
		c->st = C_DOWN;
		lab_strlcpy(c->last_msg, local.msg, sizeof c->last_msg);
		loop_timer_start(c->loop, &c->reconnect_timer, c->reconnect_delay_ms);
		return LAB_OK;
	}
	c->want_open = false;
	c->st = C_CLOSED;
	if (e && !e->msg[0])
		*e = local;
	return rc;
}

void console_close(struct console *c)
{
	if (!c)
		return;
	c->want_open = false;
	c->gone = false;
	loop_timer_stop(c->loop, &c->reconnect_timer);
	loop_timer_stop(c->loop, &c->window_timer);
	teardown(c);
	c->st = C_CLOSED;
}

bool console_is_up(const struct console *c)
{
	return c->st == C_UP;
}

void console_set_expect_down(struct console *c, bool expect)
{
	bool was = c->expect_down;
	c->expect_down = expect;
	if (expect) {
		/* board going off: a loss from now on is expected */
		loop_timer_stop(c->loop, &c->window_timer);
		c->gone = false;
	}
	/* Board coming on: try at once rather than at the next reconnect tick; the
	 * window for coming back runs from now. */
	if (was && !expect && c->st == C_DOWN && c->want_open) {
		loop_timer_start(c->loop, &c->reconnect_timer, 0);
		if (!c->gone)
			loop_timer_start(c->loop, &c->window_timer, c->reconnect_window_ms);
	}
}

bool console_is_gone(const struct console *c)
{
	return c->gone;
}

static void drain(struct console *c, bool from_loop);

/* The pace wait is over (timer, echo or reset): write what may go now. */
static void end_pace_wait(struct console *c)
{
	loop_timer_stop(c->loop, &c->pace_timer);
	c->pace_wait = false;
	if (c->st == C_UP)
		drain(c, false);
	else
		update_watch(c);
}

void console_echo_reset(struct console *c)
{
	c->echo_len = 0;
	c->echo_head = 0;
	if (c->pacing.echo_window)
		c->chunk_sent = 0; /* a fresh window: the FIFO is taken as empty */
	if (c->pace_wait && c->pacing.echo_window)
		end_pace_wait(c); /* nothing is awaited any more: the wait was for it */
}

void console_echo_stats(const struct console *c, uint64_t *by_echo, uint64_t *by_timer)
{
	*by_echo = c->echo_released;
	*by_timer = c->timer_released;
}

void console_set_pacing(struct console *c, const struct console_pacing *p)
{
	c->pacing = *p;
	c->chunk_sent = 0;
	console_echo_reset(c);
	if (c->pacing.chunk == 0 || c->pacing.char_delay_us == 0) {
		c->pace_wait = false;
		loop_timer_stop(c->loop, &c->pace_timer);
		update_watch(c);
	}
}

static int queue(struct console *c, struct wqueue *w, const void *buf, size_t n)
{
	if (wq_len(&c->q) + wq_len(&c->rawq) + n > CONSOLE_QUEUE_MAX)
		return LAB_EINFRA;
	wq_push(w, buf, n);
	if (c->st == C_UP)
		drain(c, false);
	return LAB_OK;
}

int console_write(struct console *c, const void *buf, size_t n)
{
	if (n == 0)
		return LAB_OK;
	if (c->drv->tx_filter) {
		size_t on = 0;
		char *f = c->drv->tx_filter(c, buf, n, &on);
		int rc = queue(c, &c->q, f, on);
		free(f);
		return rc;
	}
	return queue(c, &c->q, buf, n);
}

int console_write_str(struct console *c, const char *s)
{
	return console_write(c, s, strlen(s));
}

int console_write_raw(struct console *c, const void *buf, size_t n)
{
	if (n == 0)
		return LAB_OK;
	return queue(c, &c->rawq, buf, n);
}

size_t console_pending(const struct console *c)
{
	return wq_len(&c->q) + wq_len(&c->rawq);
}

void console_attach_transcript(struct console *c, struct transcript *t)
{
	c->transcript = t;
	if (t)
		transcript_set_loop(t, c->loop);
}

const char *console_board(const struct console *c)
{
	return c->board;
}

void *console_cfg(struct console *c)
{
	return c->cfg;
}

void **console_priv(struct console *c)
{
	return &c->priv;
}

struct loop *console_loop(struct console *c)
{
	return c->loop;
}

const struct console_driver *console_get_driver(const struct console *c)
{
	return c->drv;
}

void console_connect_pending(struct console *c, uint64_t timeout_ms)
{
	c->connect_pending = true;
	c->connect_timeout_ms = timeout_ms;
}

/* ---- I/O ---- */

/* Write from a queue; returns false if the link was lost (from_loop), or on
 * a write error outside the loop's callback (the bytes stay queued and the
 * LOOP_WRITE watch meets the error again, where it may be reported). */
static bool write_some(struct console *c, struct wqueue *w, size_t max, bool from_loop)
{
	size_t n = wq_len(w) < max ? wq_len(w) : max;
	if (n == 0)
		return true;
	ssize_t r = write(c->fd, w->data + w->off, n);
	if (r < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return true;
		if (!from_loop)
			return false;
		char msg[160];
		snprintf(msg, sizeof msg, "write: %s", strerror(errno));
		lost(c, msg);
		return false;
	}
	if (w == &c->q) {
		c->chunk_sent += (size_t)r;
		if (c->pacing.echo_window)
			for (ssize_t i = 0; i < r; i++) {
				unsigned char b = (unsigned char)w->data[w->off + (size_t)i];
				if (b < 0x20 || b > 0x7e)
					continue; /* control keys are not echoed as themselves */
				if (c->echo_len == CONSOLE_ECHO_MAX) { /* forget the oldest */
					c->echo_head = (c->echo_head + 1) % CONSOLE_ECHO_MAX;
					c->echo_len--;
				}
				c->echo_exp[(c->echo_head + c->echo_len) % CONSOLE_ECHO_MAX] = b;
				c->echo_len++;
			}
	}
	wq_pop(w, (size_t)r);
	return true;
}

/* Write what may go now.  from_loop: called from the fd's LOOP_WRITE event,
 * where a write error is reported; otherwise (console_write, the pacing
 * timer) the bytes are written at once instead of a LOOP_WRITE watch being
 * armed for them and dropped again after one write: two epoll_ctl and a loop
 * pass saved per write, the watch is armed only when the fd is full. */
static void drain(struct console *c, bool from_loop)
{
	if (!write_some(c, &c->rawq, SIZE_MAX, from_loop)) {
		if (!from_loop)
			update_watch(c);
		return;
	}
	while (wq_len(&c->rawq) == 0 && !c->pace_wait && wq_len(&c->q)) {
		bool paced = c->pacing.chunk > 0 && c->pacing.char_delay_us > 0;
		if (!paced)
			c->chunk_sent = 0;
		size_t lim = c->pacing.echo_window ? c->pacing.echo_window : c->pacing.chunk;
		size_t max = paced && c->chunk_sent < lim ? lim - c->chunk_sent : SIZE_MAX;
		if (!write_some(c, &c->q, max, from_loop)) {
			if (!from_loop)
				update_watch(c);
			return;
		}
		if (!paced || c->chunk_sent < lim)
			break; /* all written, or the fd is full */
		c->chunk_sent = 0;
		if (c->pacing.echo_window && c->echo_len == 0)
			continue; /* all echoed already: the FIFO is empty */
		/* the time char_delay/chunk gives these bytes; with echo pacing
		 * the echo usually ends the wait before it */
		uint64_t chunks = (lim + c->pacing.chunk - 1) / c->pacing.chunk;
		c->pace_wait = true;
		loop_timer_start_ns(c->loop, &c->pace_timer, chunks * c->pacing.char_delay_us * 1000ull);
	}
	update_watch(c);
}

static void on_pace(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct console *c = arg;
	if (c->pacing.echo_window)
		c->timer_released++;
	end_pace_wait(c);
}

static void on_hold(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct console *c = arg;
	c->holding = false;
	update_watch(c);
}

static void on_reconnect(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct console *c = arg;
	if (!c->want_open || c->st == C_UP || c->st == C_CONNECTING)
		return;
	struct lab_err e = {0};
	enter(c);
	if (try_open(c, &e) != LAB_OK) {
		if (!c->dead && c->want_open && c->st != C_UP && c->st != C_CONNECTING)
			lost(c, e.msg[0] ? e.msg : "reopen failed");
	}
	leave(c);
}

static void on_connect_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct console *c = arg;
	char msg[200];
	snprintf(msg, sizeof msg, "connect timed out after %llu ms",
		 (unsigned long long)(c->connect_timeout_ms ? c->connect_timeout_ms
							    : CONSOLE_CONNECT_DEFAULT_MS));
	enter(c);
	lost(c, msg);
	leave(c);
}

/* Still not back after the reconnect window: the owner ends what it waits for. */
static void on_window(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct console *c = arg;
	if (c->expect_down || !c->want_open)
		return;
	/* Up again and stayed up a while: back.  Up for a moment only (a server
	 * that accepts and closes at once, a reused pty name): still lost. */
	uint64_t settle = c->reconnect_window_ms / 2 < 1000 ? c->reconnect_window_ms / 2 : 1000;
	uint64_t up = lab_now_ms() - c->up_since_ms;
	if (c->st == C_UP && up >= settle)
		return;
	if (c->st == C_UP) {
		/* just reconnected: see whether it stays */
		loop_timer_start(c->loop, &c->window_timer, settle - up);
		return;
	}
	c->gone = true;
	if (!c->ev.gone)
		return;
	char msg[400];
	snprintf(msg, sizeof msg, "%s, not back within the %llu ms reconnect window", c->cur_msg,
		 (unsigned long long)c->reconnect_window_ms);
	enter(c);
	c->ev.gone(c, msg, c->arg);
	leave(c);
}

/* Echo pacing: match what came back against the bytes awaited, in order
 * (other output in between is skipped); all back ends the pace wait. */
static void match_echo(struct console *c, const char *buf, size_t n)
{
	size_t matched = 0;
	for (size_t i = 0; i < n && c->echo_len; i++)
		if ((unsigned char)buf[i] == c->echo_exp[c->echo_head]) {
			c->echo_head = (c->echo_head + 1) % CONSOLE_ECHO_MAX;
			c->echo_len--;
			matched++;
		}
	if (matched && c->echo_len == 0 && c->pace_wait && c->st == C_UP) {
		c->echo_released++;
		end_pace_wait(c);
	}
}

static void deliver(struct console *c, char *buf, size_t n)
{
	if (c->drv->rx_filter)
		n = c->drv->rx_filter(c, buf, n);
	if (n == 0)
		return;
	if (c->echo_len)
		match_echo(c, buf, n);
	if (c->gone || loop_timer_pending(&c->window_timer)) {
		/* bytes from the board: the link is back */
		loop_timer_stop(c->loop, &c->window_timer);
		c->gone = false;
	}
	if (c->transcript)
		transcript_write(c->transcript, buf, n);
	if (c->ev.data)
		c->ev.data(c, buf, n, c->arg);
}

static void on_fd(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(fd);
	struct console *c = arg;
	uint64_t gen = c->gen;
	enter(c);
	if (c->st == C_CONNECTING) {
		loop_timer_stop(c->loop, &c->connect_timer);
		struct lab_err e = {0};
		int rc = c->drv->connected ? c->drv->connected(c, &e) : LAB_OK;
		if (c->gen != gen || c->dead)
			goto out;
		if (rc)
			lost(c, e.msg[0] ? e.msg : "connect failed");
		else
			went_up(c);
		goto out;
	}
	if (events & LOOP_READ) {
		char buf[CONSOLE_READ_MAX];
		ssize_t r = read(c->fd, buf, sizeof buf);
		if (r > 0) {
			deliver(c, buf, (size_t)r);
			if (c->gen != gen || c->dead)
				goto out;
			if (c->read_hold_ms && (size_t)r < sizeof buf && c->fd >= 0) {
				c->holding = true;
				update_watch(c);
				loop_timer_start(c->loop, &c->hold_timer, c->read_hold_ms);
			}
		} else if (r == 0) {
			lost(c, "end of file (peer closed)");
			goto out;
		} else if (errno != EAGAIN && errno != EINTR) {
			char msg[160];
			snprintf(msg, sizeof msg, "read: %s", strerror(errno));
			lost(c, msg);
			goto out;
		} else if (events & LOOP_ERROR) {
			lost(c, "hangup");
			goto out;
		}
	}
	if ((events & LOOP_WRITE) && c->st == C_UP)
		drain(c, true);
out:
	leave(c);
}
