/* Unit tests of the console layer with the pty driver: I/O both ways, transcript hook,
 * pacing, queue cap, loss and reconnect through a symlink, expect_down, config errors. */
#include "console.h"
#include "expect.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctx {
	char rx[8192];
	size_t rxn;
	int ups, downs;
	char last_msg[300];
};

static void on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct ctx *x = arg;
	if (x->rxn + n < sizeof x->rx) {
		memcpy(x->rx + x->rxn, buf, n);
		x->rxn += n;
		x->rx[x->rxn] = '\0';
	}
}

static void on_state(struct console *c, bool up, const char *msg, void *arg)
{
	LAB_UNUSED(c);
	struct ctx *x = arg;
	if (up)
		x->ups++;
	else
		x->downs++;
	lab_strlcpy(x->last_msg, msg, sizeof x->last_msg);
}

static const struct console_events events = {.data = on_data, .state = on_state};

/* A pty whose master we keep (the "board" side); returns master fd, slave path. */
static int make_pty(char *slave, size_t n)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return -1;
	lab_strlcpy(slave, ptsname(m), n);
	lab_fd_nonblock(m);
	return m;
}

static void run_for(struct loop *l, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
}

static bool run_until(struct loop *l, bool (*cond)(void *), void *arg, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (!cond(arg) && lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
	return cond(arg);
}

static size_t master_read(int m, char *buf, size_t n)
{
	ssize_t r = read(m, buf, n - 1);
	if (r < 0)
		r = 0;
	buf[r] = '\0';
	return (size_t)r;
}

static struct console *mk(struct loop *l, const char *yaml, struct ctx *x, struct lab_err *e)
{
	struct cfg_node *n = NULL;
	struct console *c = NULL;
	if (cfg_parse_buffer("test.yaml", yaml, strlen(yaml), &n, e) != LAB_OK)
		return NULL;
	if (console_new(l, "dut1", n, &events, x, &c, e) != LAB_OK)
		c = NULL;
	cfg_free(n);
	return c;
}

static bool got_rx(void *arg)
{
	struct ctx *x = arg;
	return strstr(x->rx, "world") != NULL;
}

static bool is_down(void *arg)
{
	return ((struct ctx *)arg)->downs > 0;
}

static bool up_twice(void *arg)
{
	return ((struct ctx *)arg)->ups >= 2;
}

int main(void)
{
	char dir[] = "/tmp/emmclab-conpty-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char link[256], slave[128], yaml[512], trpath[256];
	snprintf(link, sizeof link, "%s/ttyDUT", dir);
	int m = make_pty(slave, sizeof slave);
	ok(m >= 0, "pty pair: %s", slave);
	ok(symlink(slave, link) == 0, "symlink to the slave");

	struct loop *l = loop_new();
	struct ctx x = {0};
	struct lab_err e = {0};

	/* config errors */
	struct console *bad = mk(l, "driver: ptx\npath: /x\n", &x, &e);
	ok(bad == NULL && strstr(e.msg, "did you mean 'pty'"), "unknown driver suggests: %s", e.msg);
	lab_err_clear(&e);
	bad = mk(l, "driver: pty\n", &x, &e);
	ok(bad == NULL && strstr(e.msg, "path"), "missing path refused: %s", e.msg);
	lab_err_clear(&e);
	bad = mk(l, "driver: pty\npath: /nonexistent/tty\n", &x, &e);
	ok(bad != NULL, "console created (not opened yet)");
	ok(console_open(bad, &e) != LAB_OK && strstr(e.msg, "/nonexistent/tty"),
	   "open of a missing pty fails with its name: %s", e.msg);
	console_free(bad);
	lab_err_clear(&e);

	snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\nreconnect_delay: 50ms\n", link);
	struct console *c = mk(l, yaml, &x, &e);
	ok(c != NULL, "console from yaml %s", e.msg);
	is_int(console_open(c, &e), LAB_OK, "open");
	ok(console_is_up(c), "up after open");
	is_int(x.ups, 1, "state callback: up");

	snprintf(trpath, sizeof trpath, "%s/boot.log", dir);
	struct transcript *t = NULL;
	is_int(transcript_open(trpath, 0, &t, &e), LAB_OK, "transcript open");
	console_attach_transcript(c, t);

	/* board -> console */
	ok(write(m, "hello\nworld", 11) == 11, "board writes");
	ok(run_until(l, got_rx, &x, 1000), "data callback got the bytes");
	is_str(x.rx, "hello\nworld", "bytes unchanged (raw mode)");

	/* console -> board */
	is_int(console_write_str(c, "ls\r"), LAB_OK, "write queued");
	run_for(l, 50);
	char buf[4096];
	master_read(m, buf, sizeof buf);
	is_str(buf, "ls\r", "board received exactly what was typed (no CR/NL mangling)");
	is_int((long long)console_pending(c), 0, "queue drained");

	/* pacing: 2 bytes per 30 ms */
	struct console_pacing p = {.char_delay_us = 30000, .chunk = 2};
	console_set_pacing(c, &p);
	uint64_t t0 = lab_now_ms();
	console_write_str(c, "abcdef");
	loop_run_once(l, 5);
	/* What the console wrote is judged by its queue: a pty hands bytes to the
	 * master side in a kernel work item, so they may not be readable yet on a
	 * loaded machine (reading at once would then see "").  */
	ok(console_pending(c) == 4, "first chunk goes at once, the rest waits (%zu queued)",
	   console_pending(c));
	char all[64] = "";
	size_t got = 0;
	while (got < 6 && lab_now_ms() - t0 < 3000) {
		loop_run_once(l, 5);
		got += master_read(m, all + got, sizeof all - got);
	}
	uint64_t dt = lab_now_ms() - t0;
	is_str(all, "abcdef", "all paced bytes arrived, in order");
	ok(dt >= 55 && dt < 2000, "pacing took %llu ms (2 pauses of 30 ms)", (unsigned long long)dt);

	/* echo pacing: 4 at once, the next on their echo; the timer (1 byte a
	 * second: 4 s for 4) only when the echo does not come */
	struct console_pacing ep = {.char_delay_us = 1000000, .chunk = 1, .echo_window = 4};
	console_set_pacing(c, &ep);
	run_for(l, 50); /* the previous pace wait lapses */
	uint64_t e0, e1;
	console_echo_stats(c, &e0, &e1);
	t0 = lab_now_ms();
	console_write_str(c, "0123456789ab\r");
	got = 0;
	memset(all, 0, sizeof all);
	int reads = 0;
	while (got < 13 && lab_now_ms() - t0 < 3000) {
		loop_run_once(l, 5);
		char one[64];
		size_t k = master_read(m, one, sizeof one - 1);
		if (k) {
			reads++;
			ok(k <= 4, "never more than the window unechoed (read %zu)", k);
			/* the board echoes what it read, with noise before it */
			ok(write(m, "~", 1) == 1 && write(m, one, k) == (ssize_t)k, "board echoes");
			memcpy(all + got, one, k);
			got += k;
		}
	}
	dt = lab_now_ms() - t0;
	is_str(all, "0123456789ab\r", "echo-paced bytes arrived, in order");
	ok(dt < 2000, "on the echo: %llu ms, not the timer's 12 s", (unsigned long long)dt);
	uint64_t by_echo, by_timer;
	console_echo_stats(c, &by_echo, &by_timer);
	ok(by_echo - e0 >= 3 && by_timer == e1, "released by the echo %llu times, by the timer %llu",
	   (unsigned long long)(by_echo - e0), (unsigned long long)(by_timer - e1));
	/* no echo: the timer releases at the type's pace (4 bytes: 4 s at 1/s,
	 * so a 100 ms pace here) */
	struct console_pacing ep2 = {.char_delay_us = 25000, .chunk = 1, .echo_window = 4};
	console_set_pacing(c, &ep2);
	t0 = lab_now_ms();
	console_write_str(c, "ABCDEFGH");
	got = 0;
	memset(all, 0, sizeof all);
	while (got < 8 && lab_now_ms() - t0 < 3000) {
		loop_run_once(l, 5);
		got += master_read(m, all + got, sizeof all - got);
	}
	dt = lab_now_ms() - t0;
	is_str(all, "ABCDEFGH", "without an echo all bytes still arrive");
	ok(dt >= 95, "paced by the timer: %llu ms (4 bytes at 25 ms a byte)", (unsigned long long)dt);
	console_echo_stats(c, &by_echo, &by_timer);
	ok(by_timer - e1 >= 1, "released by the timer");
	/* other text does not release the wait: "wxyz" awaited, "xyzw" comes */
	run_for(l, 150);
	char tmp[16];
	master_read(m, tmp, sizeof tmp);
	console_write_str(c, "wxyz");
	console_write_str(c, "ABCD");
	ok(console_pending(c) == 4, "one window written (%zu queued)", console_pending(c));
	ok(write(m, "xyzw", 4) == 4, "board prints something else");
	run_for(l, 40);
	ok(console_pending(c) == 4, "not released by text that is not the echo (%zu queued)",
	   console_pending(c));
	run_for(l, 150);
	ok(console_pending(c) == 0, "released by the timer after all");
	struct console_pacing nop = {0};
	console_set_pacing(c, &nop);
	run_for(l, 20);
	master_read(m, tmp, sizeof tmp);

	/* queue cap */
	char *big = xcalloc(1, 1024 * 1024 + 1);
	is_int(console_write(c, big, 1024 * 1024 + 1), LAB_EINFRA, "queue cap of 1 MiB enforced");
	free(big);

	/* loss: the board's pty goes away */
	console_set_expect_down(c, true);
	close(m);
	ok(run_until(l, is_down, &x, 1000), "loss reported");
	ok(strstr(x.last_msg, "expected") != NULL, "while off the loss is marked expected: %s",
	   x.last_msg);
	ok(!console_is_up(c), "down");
	/* a new pty appears under the same link: reconnect */
	m = make_pty(slave, sizeof slave);
	unlink(link);
	ok(symlink(slave, link) == 0, "link now points to %s", slave);
	console_set_expect_down(c, false);
	ok(run_until(l, up_twice, &x, 2000), "reconnected through the link");
	x.rxn = 0;
	x.rx[0] = '\0';
	ok(write(m, "world again", 11) == 11, "board writes on the new pty");
	ok(run_until(l, got_rx, &x, 1000), "data after reconnect");

	console_attach_transcript(c, NULL);
	char sha[65];
	uint64_t bytes = 0;
	is_int(transcript_close(t, sha, &bytes, &e), LAB_OK, "transcript close");
	char *txt = NULL;
	size_t tl = 0;
	lab_read_file(trpath, 1 << 20, &txt, &tl, &e);
	ok(txt && strstr(txt, "] hello\n[") && strstr(txt, "] world"), "transcript has timestamped lines");
	is_int((long long)bytes, (long long)tl, "bytes reported = file size");
	char sha2[65];
	lab_sha256(txt, tl, sha2);
	is_str(sha, sha2, "sha256 of the transcript file");
	free(txt);

	console_close(c);
	ok(!console_is_up(c), "closed");
	console_free(c);
	close(m);
	loop_free(l);
	unlink(link);
	unlink(trpath);
	rmdir(dir);
	return tap_done();
}
