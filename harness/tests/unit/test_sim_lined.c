/* Simulator: U-Boot line editing (cli_readline) and the UART FIFO that loses fast input. */
#include "sim.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static int feed(struct sim_lined *l, const char *s, struct lab_buf *echo)
{
	int r = SIM_LINED_MORE;
	for (const char *p = s; *p; p++) {
		r = sim_lined_feed(l, (unsigned char)*p, echo);
		if (r != SIM_LINED_MORE)
			return r;
	}
	return r;
}

static void test_editing(void)
{
	struct sim_lined l;
	struct lab_buf echo;
	lab_buf_init(&echo, 65536);
	sim_lined_reset(&l);
	is_int(feed(&l, "printenz\bv\r", &echo), SIM_LINED_LINE, "CR ends the line");
	is_str(l.buf, "printenv", "backspace erased a character");
	is_str(lab_buf_cstr(&echo), "printenz\b \bv\r\n", "echo: typed chars, BS-space-BS, CRLF");

	sim_lined_reset(&l);
	echo.len = 0;
	is_int(feed(&l, "abc\x7f\x7f\x7f\x7fx\n", &echo), SIM_LINED_LINE, "LF ends the line too");
	is_str(l.buf, "x", "DEL past the start is harmless");

	sim_lined_reset(&l);
	is_int(feed(&l, "reset\x03", &echo), SIM_LINED_INTR, "Ctrl-C interrupts");
	is_int((long long)l.len, 0, "and discards the line");

	sim_lined_reset(&l);
	is_int(feed(&l, "ver\r", &echo), SIM_LINED_LINE, "first line");
	sim_lined_reset(&l);
	is_int(feed(&l, "\n", &echo), SIM_LINED_LINE, "CR+LF: the LF is a second, empty line");
	is_str(l.buf, "", "empty line (U-Boot repeats the last command)");

	sim_lined_reset(&l);
	feed(&l, "setenv a b c", &echo);
	feed(&l, "\x17", &echo);
	is_str(l.buf, "setenv a b ", "Ctrl-W erases a word");
	feed(&l, "\x15", &echo);
	is_int((long long)l.len, 0, "Ctrl-U erases the line");

	sim_lined_reset(&l);
	echo.len = 0;
	for (int i = 0; i < SIM_CBSIZE + 10; i++)
		sim_lined_feed(&l, 'x', &echo);
	is_int((long long)l.len, SIM_CBSIZE - 2, "line capped at CONFIG_SYS_CBSIZE - 2");
	ok(memchr(echo.data, '\a', echo.len) != NULL, "bell when the buffer is full");
	lab_buf_free(&echo);
}

/* an arrival known exactly: no slack */
static bool push_at(struct sim_fifo *f, uint64_t t)
{
	return sim_fifo_push_by(f, t, t);
}

static void test_fifo(void)
{
	struct sim_fifo f;
	sim_fifo_init(&f, 16, 2000);
	uint64_t t = 1000000000ULL;
	int acc = 0;
	for (int i = 0; i < 20; i++)
		acc += push_at(&f, t);
	is_int(acc, 16, "a 20-char burst: 16 fit the FIFO");
	is_int((long long)f.lost, 4, "4 lost");
	t += 8000000; /* 8 ms at 2000 chars/s drains 16 */
	acc = 0;
	for (int i = 0; i < 16; i++)
		acc += push_at(&f, t);
	is_int(acc, 16, "after 8 ms the FIFO took 16 more");

	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int i = 0; i < 1000; i++) /* 1000 chars/s, paced */
		acc += push_at(&f, t + (uint64_t)i * 1000000ULL);
	is_int(acc, 1000, "paced at 1000 chars/s nothing is lost");

	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int i = 0; i < 1000; i++) /* 4000 chars/s */
		acc += push_at(&f, t + (uint64_t)i * 250000ULL);
	ok(acc > 480 && acc < 540, "at 4000 chars/s about half is lost (%d of 1000 kept)", acc);

	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int c = 0; c < 100; c++) /* chunks of 8 every 5 ms (1600 chars/s) */
		for (int i = 0; i < 8; i++)
			acc += push_at(&f, t + (uint64_t)c * 5000000ULL);
	is_int(acc, 800, "chunks of 8 every 5 ms: nothing lost");

	/* A read of 16 that came a little after 16 more (the simulator read
	 * the first late): spread over the window since that read, the first
	 * would find the FIFO full, but they may have come by the read. */
	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int i = 0; i < 16; i++)
		acc += push_at(&f, t);
	uint64_t r2 = t + 9000000; /* read 9 ms later: 18 drained by then */
	for (int i = 0; i < 16; i++)
		acc += sim_fifo_push_by(&f, t + (uint64_t)(i + 1) * 9000000ULL / 16, r2);
	is_int(acc, 32, "16 + 16 read 9 ms apart: nothing lost");
	is_int((long long)f.lost, 0, "none counted lost");
	/* a paste still loses what cannot have fitted by the read */
	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int i = 0; i < 60; i++)
		acc += sim_fifo_push_by(&f, t + (uint64_t)i * 10000000ULL / 60, t + 10000000ULL);
	is_int(acc, 36, "60 in 10 ms: 16 + 20 drained fit, 24 lost");
	sim_fifo_init(&f, 16, 2000);
	acc = 0;
	for (int i = 0; i < 20; i++)
		acc += push_at(&f, t);
	is_int(acc, 16, "push_by with no slack is push");
}

int main(void)
{
	test_editing();
	test_fifo();
	return tap_done();
}
