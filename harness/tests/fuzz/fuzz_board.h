/*
 * fuzz_board.h - the board side of the U-Boot and shell fuzz targets: a
 * pseudo-terminal whose "board" echoes what the controller types and answers
 * every typed line with the next piece of the fuzz input, so arbitrary bytes
 * (markers, prompts, escapes, NULs, endless lines) reach the session exactly
 * where a real board's output would.
 *
 * Input layout: byte 0 = flags (bit 0: echo typed text, bit 1: "\r\n" for the
 * typed "\r"); the rest is split at 0xFF bytes into replies: reply 0 is sent at
 * once (the boot banner), reply i after the i-th typed line end, Ctrl-C or
 * single key press.  A 0xFE byte in a reply is replaced by fzb.subst (the
 * session's random prompt).
 * FUZZ_BOARD_TRACE=1 in the environment prints both directions on stderr
 * (how the seed corpora were written).
 * Header-only, one board per process (the fuzz targets are single-threaded).
 */
#ifndef EMMCLAB_FUZZ_BOARD_H
#define EMMCLAB_FUZZ_BOARD_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cfgnode.h"
#include "console.h"
#include "expect.h"
#include "loop.h"
#include "util.h"

struct fzb {
	struct loop *l;
	int master, slave_keep;
	char path[64];
	struct console *con;
	struct expect *x;
	unsigned flags;
	const uint8_t *data;
	size_t size, pos;
	const char *subst; /* written for each 0xFE byte of a reply */
	bool done;
	int rc;
};

static struct fzb fzb;

static void fzb_write(const void *p, size_t n)
{
	const char *c = p;
	/* the pty buffer is a few KiB: what does not fit is dropped, like a UART overrun */
	while (n > 0) {
		ssize_t w = write(fzb.master, c, n);
		if (w <= 0)
			return;
		c += w;
		n -= (size_t)w;
	}
}

/* The next reply: bytes up to the next 0xFF. */
static void fzb_reply(void)
{
	if (fzb.pos >= fzb.size)
		return;
	const uint8_t *s = fzb.data + fzb.pos;
	const uint8_t *e = memchr(s, 0xFF, fzb.size - fzb.pos);
	size_t n = e ? (size_t)(e - s) : fzb.size - fzb.pos;
	fzb.pos += n + (e != NULL);
	if (getenv("FUZZ_BOARD_TRACE"))
		fprintf(stderr, "<<< %.*s\n", (int)n, (const char *)s);
	/* 0xFE stands for what the session chose at random (the shell prompt) */
	for (size_t i = 0; i < n; i++) {
		const uint8_t *fe = memchr(s + i, 0xFE, n - i);
		size_t k = fe ? (size_t)(fe - (s + i)) : n - i;
		fzb_write(s + i, k);
		i += k;
		if (fe && fzb.subst)
			fzb_write(fzb.subst, strlen(fzb.subst));
	}
}

static void fzb_on_read(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(events);
	LAB_UNUSED(arg);
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n > 0 && getenv("FUZZ_BOARD_TRACE"))
		fprintf(stderr, ">>> %.*s\n", (int)n, buf);
	for (ssize_t i = 0; i < n; i++) {
		if (fzb.flags & 1) {
			if (buf[i] == '\r' && (fzb.flags & 2))
				fzb_write("\r\n", 2);
			else
				fzb_write(&buf[i], 1);
		}
		/* a line end, Ctrl-C, or a lone key press (the autoboot interrupt) */
		if (buf[i] == '\r' || buf[i] == '\n' || buf[i] == 3 || n == 1)
			fzb_reply();
	}
}

static void fzb_on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	LAB_UNUSED(arg);
	if (fzb.x)
		expect_feed(fzb.x, buf, n);
}

/* Loop, pty and console: made once per process and reused by every input. */
static void fzb_init_once(void)
{
	if (fzb.l)
		return;
	fzb.l = loop_new();
	fzb.master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fzb.master < 0 || grantpt(fzb.master) || unlockpt(fzb.master) || !ptsname(fzb.master))
		abort();
	lab_strlcpy(fzb.path, ptsname(fzb.master), sizeof fzb.path);
	struct termios tio;
	fzb.slave_keep = open(fzb.path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fzb.slave_keep < 0 || tcgetattr(fzb.slave_keep, &tio) != 0)
		abort();
	cfmakeraw(&tio);
	tcsetattr(fzb.slave_keep, TCSANOW, &tio);
	lab_fd_nonblock(fzb.master);
	if (loop_fd_add(fzb.l, fzb.master, LOOP_READ, fzb_on_read, NULL))
		abort();
	char yaml[160];
	snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\n", fzb.path);
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	static const struct console_events ev = {.data = fzb_on_data};
	if (cfg_parse_buffer("fuzz", yaml, strlen(yaml), &n, &e) ||
	    console_new(fzb.l, "fuzz", n, &ev, NULL, &fzb.con, &e) || console_open(fzb.con, &e))
		abort();
	cfg_free(n);
}

/* Drain what an earlier input left in the pty, both ways. */
static void fzb_drain(void)
{
	char buf[4096];
	uint64_t end = lab_now_ms() + 5;
	fzb.pos = fzb.size; /* no reply to leftovers */
	while (lab_now_ms() < end)
		loop_run_once(fzb.l, 1);
	while (read(fzb.master, buf, sizeof buf) > 0)
		;
}

/* A fresh expect engine (small cap: the caps are part of what is tested) and the input. */
static bool fzb_begin(const uint8_t *data, size_t size)
{
	if (size < 1)
		return false;
	fzb_init_once();
	fzb_drain();
	fzb.x = expect_new(fzb.l, 4096);
	fzb.flags = data[0];
	fzb.data = data + 1;
	fzb.size = size - 1;
	fzb.pos = 0;
	fzb.done = false;
	fzb.subst = NULL;
	fzb_reply();
	return true;
}

static bool fzb_wait(uint64_t ms)
{
	uint64_t end = lab_now_ms() + ms;
	while (!fzb.done && lab_now_ms() < end)
		loop_run_once(fzb.l, 5);
	bool d = fzb.done;
	fzb.done = false;
	return d;
}

static void fzb_end(void)
{
	expect_free(fzb.x);
	fzb.x = NULL;
}

#endif
