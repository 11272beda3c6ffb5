/*
 * sim_lined.c - U-Boot's console line editor (common/cli_readline.c, the
 * simple variant) and a UART receive FIFO that loses characters when input
 * arrives faster than the bootloader drains it.
 */
#include "sim.h"

#include <string.h>

void sim_lined_reset(struct sim_lined *l)
{
	l->len = 0;
	l->buf[0] = '\0';
}

static void echo_s(struct lab_buf *echo, const char *s)
{
	if (echo)
		lab_buf_append(echo, s, strlen(s));
}

int sim_lined_feed(struct sim_lined *l, unsigned char c, struct lab_buf *echo)
{
	switch (c) {
	case '\r':
	case '\n':
		/* Each of CR and LF ends a line: CR+LF is a line then an empty one. */
		l->buf[l->len] = '\0';
		echo_s(echo, "\r\n");
		return SIM_LINED_LINE;
	case '\0':
		return SIM_LINED_MORE;
	case 0x03: /* ^C: discard the line */
		l->len = 0;
		l->buf[0] = '\0';
		return SIM_LINED_INTR;
	case 0x15: /* ^U: erase the line */
		while (l->len) {
			echo_s(echo, "\b \b");
			l->len--;
		}
		l->buf[0] = '\0';
		return SIM_LINED_MORE;
	case 0x17: /* ^W: erase a word */
		while (l->len && l->buf[l->len - 1] == ' ') {
			echo_s(echo, "\b \b");
			l->len--;
		}
		while (l->len && l->buf[l->len - 1] != ' ') {
			echo_s(echo, "\b \b");
			l->len--;
		}
		l->buf[l->len] = '\0';
		return SIM_LINED_MORE;
	case 0x08:
	case 0x7f:
		if (l->len) {
			l->len--;
			l->buf[l->len] = '\0';
			echo_s(echo, "\b \b");
		}
		return SIM_LINED_MORE;
	default:
		break;
	}
	if (c == '\t')
		c = ' '; /* no completion in the simple editor: a tab is a blank */
	if (c < 0x20 && c != '\t')
		return SIM_LINED_MORE; /* other control characters are ignored */
	if (l->len < SIM_CBSIZE - 2) {
		l->buf[l->len++] = (char)c;
		l->buf[l->len] = '\0';
		if (echo)
			lab_buf_append(echo, &c, 1);
	} else {
		echo_s(echo, "\a"); /* buffer full: bell, character dropped */
	}
	return SIM_LINED_MORE;
}

void sim_fifo_init(struct sim_fifo *f, unsigned depth, double cps)
{
	f->level = 0;
	f->last_ns = 0;
	f->depth = depth ? depth : 16;
	f->cps = cps > 0 ? cps : 2000;
	f->lost = 0;
}

static void fifo_drain_to(struct sim_fifo *f, uint64_t t_ns)
{
	/* The CPU empties the FIFO at cps since the last arrival. */
	if (f->last_ns && t_ns > f->last_ns) {
		double drained = (double)(t_ns - f->last_ns) * 1e-9 * f->cps;
		f->level = f->level > drained ? f->level - drained : 0;
	}
	if (t_ns > f->last_ns)
		f->last_ns = t_ns;
}

bool sim_fifo_push_by(struct sim_fifo *f, uint64_t at_ns, uint64_t latest_ns)
{
	fifo_drain_to(f, at_ns);
	double over = f->level + 1.0 - (double)f->depth;
	if (over > 1e-9) {
		uint64_t room_ns = f->last_ns + (uint64_t)(over / f->cps * 1e9) + 1;
		if (room_ns > latest_ns) {
			f->lost++;
			return false;
		}
		fifo_drain_to(f, room_ns);
	}
	f->level += 1.0;
	return true;
}
