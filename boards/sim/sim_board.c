/*
 * sim_board.c - one simulated board: its sim: options, the pty console, the
 * timed output queue, power, faults and the JSON state.
 */
#include "json.h"
#include "sim_board.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

const char *const sim_stage_names[] = {
	"off", "rom", "autoboot", "uboot", "uboot-busy", "ums", "fastboot",
	"kernel", "login", "shell", "dead", NULL,
};

#define O(f) offsetof(struct sim_cfg, f)
const struct opt sim_cfg_opts[] = {
	{.key = "model", .type = OPT_STR, .offset = O(model), .def = "",
	 .help = "eMMC part profile (default: part.model)"},
	{.key = "host", .type = OPT_STR, .offset = O(host), .def = "",
	 .help = "mmc host controller driver (default: the board type's host)"},
	{.key = "cqe", .type = OPT_BOOL, .offset = O(cqe), .def = "false",
	 .help = "the host has a command queue engine"},
	{.key = "seed", .type = OPT_INT, .offset = O(seed), .def = "1", .min = 0, .max = 1e15,
	 .help = "PRNG seed (timing noise and faults are deterministic under it)"},
	{.key = "faults", .type = OPT_STRLIST, .offset = O(faults),
	 .help = "faults active from the start: name[=value][:count]"},
	{.key = "ser2net_port", .type = OPT_INT, .offset = O(ser2net_port), .def = "0", .min = 0,
	 .max = 65535, .help = "also publish the console through ser2net on 127.0.0.1:PORT (raw)"},
	{.key = "time_scale", .type = OPT_DOUBLE, .offset = O(time_scale), .def = "1000", .min = 1,
	 .max = 1e7, .help = "modelled seconds per real second"},
	{.key = "autoboot_floor", .type = OPT_DURATION, .offset = O(autoboot_floor_ms),
	 .def = "250ms", .min = 0, .max = 10000,
	 .help = "minimum real time per autoboot countdown second"},
	{.key = "prompt", .type = OPT_STR, .offset = O(prompt), .def = "=> ",
	 .help = "U-Boot prompt"},
	{.key = "bootdelay", .type = OPT_INT, .offset = O(bootdelay), .def = "3", .min = -1, .max = 60,
	 .help = "autoboot countdown in seconds (-1: no autoboot)"},
	{.key = "max_input_cps", .type = OPT_INT, .offset = O(max_input_cps), .def = "2000", .min = 1,
	 .max = 10000000, .help = "characters per second U-Boot drains from the UART FIFO"},
	{.key = "fifo", .type = OPT_INT, .offset = O(fifo), .def = "16", .min = 1, .max = 65536,
	 .help = "UART receive FIFO depth"},
	{.key = "login", .type = OPT_BOOL, .offset = O(login), .def = "false",
	 .help = "Linux boots to a login prompt (user root, no password) instead of a shell"},
	{.key = "hostname", .type = OPT_STR, .offset = O(hostname), .def = "",
	 .help = "hostname (default: board name)"},
	{.key = "agent_installed", .type = OPT_BOOL, .offset = O(agent_installed), .def = "true",
	 .help = "the agent is present in the root filesystem"},
	{.key = "agent_path", .type = OPT_STR, .offset = O(agent_path), .def = "",
	 .help = "where the agent lives on the DUT (default: the type's shell.agent_path, else /usr/bin/emmclab-agent)"},
	{.key = "tftp_files", .type = OPT_STRLIST, .offset = O(tftp_files),
	 .help = "files the TFTP server has (others: File not found); empty = any"},
	{.key = "tftp_root", .type = OPT_STR, .offset = O(tftp_root), .def = "",
	 .help = "TFTP root directory: tftp serves the real files found there"},
	{.key = "kernel_version", .type = OPT_STR, .offset = O(kernel_version),
	 .def = "6.1.0-emmclab", .help = "uname -r"},
	{.key = "kernel_patched", .type = OPT_BOOL, .offset = O(kernel_patched), .def = "true",
	 .help = "the kernel carries the FUA-disable series (knobs present)"},
	{.key = "bootargs", .type = OPT_STR, .offset = O(bootargs),
	 .def = "console=ttyS2,1500000n8 root=/dev/mmcblk0p2 rw rootwait",
	 .help = "default bootargs in the U-Boot environment"},
	{.key = "uboot_version", .type = OPT_STR, .offset = O(uboot_version), .def = "2023.07",
	 .help = "U-Boot version in the banner"},
	{.key = "machine", .type = OPT_STR, .offset = O(machine), .def = "Pine64 RockPro64 v2.1",
	 .help = "machine model (U-Boot Model:, Linux Machine model:)"},
	{.key = "soc", .type = OPT_STR, .offset = O(soc), .def = "rk3399", .help = "SoC name"},
	{.key = "boot_time", .type = OPT_DURATION, .offset = O(boot_ms), .def = "6s", .min = 100,
	 .max = 600000, .help = "modelled kernel boot time to the prompt"},
	{.key = "powerfail_realtime", .type = OPT_BOOL, .offset = O(powerfail_realtime), .def = "true",
	 .help = "powerfail-write acknowledges records in real time (the controller cuts power after real milliseconds)"},
	{.key = "fault_rate", .type = OPT_DOUBLE, .offset = O(fault_rate), .def = "0", .min = 0,
	 .max = 1, .help = "rate for rate faults given without a value (0: each fault's default)"},
	{0},
};
#undef O

/* ---- helpers ---- */

#define SIM_RX_WINDOW_NS (25ULL * 1000000ULL)
#define SIM_LATE_KEEP_NS (200ULL * 1000000ULL) /* how long a late timer counts */

static double scaled_real_ms(const struct sim_board *b, double model_ms, double floor_ms)
{
	double r = model_ms / b->cfg.time_scale;
	if (r < floor_ms)
		r = floor_ms;
	return r;
}

static void tx_flush(struct sim_board *b);
static void sock_client_gone(struct sim_board *b);

static void on_master(struct loop *l, int fd, unsigned ev, void *arg)
{
	struct sim_board *b = arg;
	LAB_UNUSED(l);
	if (ev & LOOP_WRITE)
		tx_flush(b);
	if (!(ev & (LOOP_READ | LOOP_ERROR)))
		return;
	unsigned char buf[4096];
	ssize_t r = read(fd, buf, sizeof buf);
	if (r <= 0) {
		/* pty: EAGAIN, or EIO while no slave is open (we hold one, so rare).
		 * Socket: EOF or a reset is the client gone; EAGAIN is nothing. */
		if (b->listen_fd >= 0 && (r == 0 || (errno != EAGAIN && errno != EINTR)))
			sock_client_gone(b);
		return;
	}
	/* A console hands over in one read what arrived while we were not scheduled
	 * (a loaded host): all we know is that the bytes came since the previous
	 * read.  They are taken as arriving at its time (at most SIM_RX_WINDOW
	 * ago), each one later only when the FIFO has no room for it then
	 * (sim_fifo_push_by, up to now): the earliest arrival the read allows,
	 * so our scheduling delays never overflow the FIFO of a controller that
	 * typed at its pace or on the echo, while a paste faster than the FIFO
	 * drains still loses characters. */
	uint64_t now = lab_now_ns();
	uint64_t w = b->last_rx_ns && now > b->last_rx_ns ? now - b->last_rx_ns : 0;
	/* While the simulator itself runs late (its timers fire late: not
	 * scheduled, hundreds of boards on a loaded host), bytes may have waited
	 * in the pty that long too: widen the window by the recent lateness. */
	struct sim *s = b->sim;
	uint64_t cap = SIM_RX_WINDOW_NS;
	if (s->late_at_ns && now - s->late_at_ns < SIM_LATE_KEEP_NS)
		cap += s->late_ns;
	if (w > cap)
		w = cap;
	b->last_rx_ns = now;
	b->rx_ns = now - w;
	for (ssize_t i = 0; i < r; i++) {
		if (!b->running)
			continue; /* board off: input goes nowhere */
		b->chars_in++;
		if (sim_board_fault_on(b, FAULT_DROP_CHARS)) {
			struct sim_fault *f = &b->faults[FAULT_DROP_CHARS];
			if (sim_rng_chance(&b->rng_fault, f->value) && sim_board_fault_fire(b, FAULT_DROP_CHARS)) {
				b->chars_dropped++;
				continue;
			}
		}
		switch (b->stage) {
		case SIM_ROM:
		case SIM_AUTOBOOT:
		case SIM_UBOOT:
		case SIM_UBOOT_BUSY:
		case SIM_UMS:
		case SIM_FASTBOOT:
			sim_uboot_input(b, buf[i]);
			break;
		case SIM_KERNEL:
		case SIM_LOGIN:
		case SIM_SHELL:
			sim_linux_input(b, buf[i]);
			break;
		default:
			break;
		}
	}
	sim_uboot_rxq_arm(b); /* once a read, not once a character */
}

/* A deadline the modelled firmware polls the UART for (U-Boot's countdown
 * checks tstc() every 10 ms until its last moment) reads what the console
 * holds first: a late simulator (not scheduled on a loaded host) must not let
 * its own timer overtake a key that reached the console in time. */
void sim_board_poll_input(struct sim_board *b)
{
	if (b->master >= 0)
		on_master(b->loop, b->master, LOOP_READ, b);
}

static void watch_master(struct sim_board *b)
{
	if (b->master < 0)
		return;
	unsigned ev = LOOP_READ | (b->txq.len ? LOOP_WRITE : 0);
	if (loop_fd_watched(b->loop, b->master))
		loop_fd_mod(b->loop, b->master, ev);
	else
		loop_fd_add(b->loop, b->master, ev, on_master, b);
}

/* Console backlog watermarks: above HIGH the board's output queue pauses
 * (as a real program blocks on a slow console) until the reader drained it
 * below LOW.  Without this a fast workload would outrun any reader. */
#define SIM_TXQ_HIGH (256u * 1024u)
#define SIM_TXQ_LOW (64u * 1024u)
static void q_arm(struct sim_board *b);

static void tx_flush(struct sim_board *b)
{
	while (b->txq.len && b->master >= 0) {
		ssize_t w = write(b->master, b->txq.data, b->txq.len);
		if (w > 0) {
			lab_buf_consume(&b->txq, (size_t)w);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		break; /* EAGAIN: the reader is behind; wait for LOOP_WRITE */
	}
	watch_master(b);
	if (b->q_stalled && b->txq.len < SIM_TXQ_LOW) {
		b->q_stalled = false;
		q_arm(b);
	}
}

/* Console bytes produced during one loop pass (the echo of every character of
 * a read, the items of one timer batch) leave in one write at the end of the
 * pass: a pty write costs the kernel a work item and a wake-up of the reader,
 * so one write per character made the simulator, not the boards it models,
 * the limit of a large lab.  The delay is the rest of the pass (microseconds). */
static void tx_flush_dirty(void *arg)
{
	struct sim *s = arg;
	s->tx_deferred = false;
	/* a flush may queue more output (resumed schedule): it lands in the list again */
	while (s->ntx_dirty) {
		struct sim_board *b = s->tx_dirty[--s->ntx_dirty];
		b->tx_dirty = false;
		tx_flush(b);
	}
}

static void tx_later(struct sim_board *b)
{
	struct sim *s = b->sim;
	if (b->tx_dirty || b->master < 0)
		return;
	if (s->ntx_dirty == s->ctx_dirty) {
		s->ctx_dirty = s->ctx_dirty ? 2 * s->ctx_dirty : 64;
		s->tx_dirty = xreallocarray(s->tx_dirty, s->ctx_dirty, sizeof *s->tx_dirty);
	}
	s->tx_dirty[s->ntx_dirty++] = b;
	b->tx_dirty = true;
	if (!s->tx_deferred) {
		s->tx_deferred = true;
		loop_defer(b->loop, tx_flush_dirty, s);
	}
}

static void tx_forget(struct sim_board *b)
{
	struct sim *s = b->sim;
	if (!b->tx_dirty)
		return;
	for (size_t i = 0; i < s->ntx_dirty; i++) {
		if (s->tx_dirty[i] == b) {
			s->tx_dirty[i] = s->tx_dirty[--s->ntx_dirty];
			break;
		}
	}
	b->tx_dirty = false;
}

/* Queue console bytes: ONLCR like a tty/UART driver, garbage fault applied. */
static void out_bytes(struct sim_board *b, const char *data, size_t len)
{
	if (b->listen_fd >= 0 && b->master < 0) {
		b->tx_dropped += len; /* a socket console nobody is connected to */
		return;
	}
	bool garbage = sim_board_fault_on(b, FAULT_GARBAGE);
	/* The common case in spans (memchr for the newlines), not a byte at a
	 * time: no garbage fault, and room for the worst case (every byte a
	 * newline that gets its CR) so the per-byte drop below cannot happen. */
	if (!garbage && b->txq.len + 2 * len + 2 < b->txq.max) {
		size_t i = 0;
		while (i < len) {
			const char *nl = memchr(data + i, '\n', len - i);
			size_t end = nl ? (size_t)(nl - data) : len;
			lab_buf_append(&b->txq, data + i, end - i);
			if (!nl)
				break;
			if (end == 0 || data[end - 1] != '\r')
				lab_buf_append(&b->txq, "\r\n", 2);
			else
				lab_buf_append(&b->txq, "\n", 1);
			i = end + 1;
		}
		tx_later(b);
		return;
	}
	double rate = garbage ? b->faults[FAULT_GARBAGE].value : 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		if (garbage && sim_rng_chance(&b->rng_fault, rate)) {
			b->garbage_bytes++;
			if (sim_rng_chance(&b->rng_fault, 0.5)) {
				c ^= (unsigned char)(1u << (rand_next(&b->rng_fault) % 8));
			} else {
				unsigned char g = (unsigned char)(rand_next(&b->rng_fault) & 0xff);
				if (b->txq.len + 1 < b->txq.max)
					lab_buf_append(&b->txq, &g, 1);
			}
		}
		if (b->txq.len + 2 >= b->txq.max) {
			b->tx_dropped++; /* nobody reads: a real UART loses the bytes too */
			continue;
		}
		if (c == '\n' && (i == 0 || data[i - 1] != '\r'))
			lab_buf_append(&b->txq, "\r", 1);
		lab_buf_append(&b->txq, &c, 1);
	}
	tx_later(b);
}

void sim_out_now(struct sim_board *b, const char *data, size_t len)
{
	if (b->running)
		out_bytes(b, data, len);
}

void sim_set_stage(struct sim_board *b, enum sim_stage s)
{
	b->stage = s;
}

/* ---- timed output ---- */

static void q_fire(struct loop *l, struct loop_timer *t, void *arg);

static void q_arm(struct sim_board *b)
{
	if (loop_timer_pending(&b->qtimer) || b->qhead >= b->qn || b->q_stalled)
		return;
	struct sim_item *it = &b->q[b->qhead];
	double owed = b->q_owed_ms;
	b->q_owed_ms = 0;
	/* a floor is real time from now (a countdown a controller must be able
	 * to interrupt): never shortened to catch up */
	if (owed < 0 && it->floor_ms > 0)
		owed = 0;
	double ms = scaled_real_ms(b, it->delay_ms, it->floor_ms) + owed;
	uint64_t now = lab_now_ns();
	int64_t off = (int64_t)(ms * 1e6);
	b->q_due_ns = off < 0 && (uint64_t)-off > now ? 0 : now + (uint64_t)off;
	loop_timer_start_ns(b->loop, &b->qtimer, off > 0 ? (uint64_t)off : 0);
}

/* own: text is a heap string the queue takes over (no copy) */
static void q_push_own(struct sim_board *b, double delay_ms, double floor_ms, char *text,
		       size_t len, sim_item_fn fn, long arg, bool own)
{
	if (b->qhead && b->qhead == b->qn) {
		b->qhead = b->qn = 0;
	}
	if (b->qn == b->qcap) {
		if (b->qhead > b->qcap / 2) {
			memmove(b->q, b->q + b->qhead, (b->qn - b->qhead) * sizeof *b->q);
			b->qn -= b->qhead;
			b->qhead = 0;
		} else {
			b->qcap = b->qcap ? b->qcap * 2 : 64;
			b->q = xreallocarray(b->q, b->qcap, sizeof *b->q);
		}
	}
	struct sim_item *it = &b->q[b->qn++];
	it->delay_ms = delay_ms < 0 ? 0 : delay_ms;
	it->floor_ms = floor_ms;
	it->text = !text ? NULL : own ? text : xstrndup(text, len);
	it->len = text ? len : 0;
	it->fn = fn;
	it->arg = arg;
	q_arm(b);
}

static void q_push(struct sim_board *b, double delay_ms, double floor_ms, const char *text,
		   size_t len, sim_item_fn fn, long arg)
{
	q_push_own(b, delay_ms, floor_ms, (char *)text, len, fn, arg, false);
}

void sim_emit_insert(struct sim_board *b, size_t k, double delay_ms, double floor_ms,
		     const char *text, sim_item_fn fn, long arg)
{
	size_t pos = b->qhead + k;
	if (pos >= b->qn) {
		q_push(b, delay_ms, floor_ms, text, text ? strlen(text) : 0, fn, arg);
		return;
	}
	if (b->qn == b->qcap) {
		b->qcap = b->qcap ? b->qcap * 2 : 64;
		b->q = xreallocarray(b->q, b->qcap, sizeof *b->q);
	}
	memmove(b->q + pos + 1, b->q + pos, (b->qn - pos) * sizeof *b->q);
	b->qn++;
	struct sim_item *it = &b->q[pos];
	it->delay_ms = delay_ms < 0 ? 0 : delay_ms;
	it->floor_ms = floor_ms;
	it->text = text ? xstrdup(text) : NULL;
	it->len = text ? strlen(text) : 0;
	it->fn = fn;
	it->arg = arg;
	q_arm(b);
}

void sim_emit(struct sim_board *b, double delay_ms, const char *text)
{
	q_push(b, delay_ms, 0, text, strlen(text), NULL, 0);
}

void sim_emit_floor(struct sim_board *b, double delay_ms, uint32_t floor_ms, const char *text)
{
	q_push(b, delay_ms, floor_ms, text, strlen(text), NULL, 0);
}

void sim_emitf(struct sim_board *b, double delay_ms, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	q_push_own(b, delay_ms, 0, s, strlen(s), NULL, 0, true);
}

void sim_emit_fn(struct sim_board *b, double delay_ms, sim_item_fn fn, long arg)
{
	q_push(b, delay_ms, 0, NULL, 0, fn, arg);
}

void sim_emit_fn_floor(struct sim_board *b, double delay_ms, uint32_t floor_ms, sim_item_fn fn,
		       long arg)
{
	q_push(b, delay_ms, floor_ms, NULL, 0, fn, arg);
}

void sim_sched_clear(struct sim_board *b)
{
	b->q_stalled = false;
	b->q_owed_ms = 0;
	b->q_gen++;
	b->pfw.on = false;
	for (size_t i = b->qhead; i < b->qn; i++)
		free(b->q[i].text);
	b->qhead = b->qn = 0;
	loop_timer_stop(b->loop, &b->qtimer);
	b->ub_nrxq = 0;
	loop_timer_stop(b->loop, &b->rxq_timer);
}

bool sim_sched_idle(const struct sim_board *b)
{
	return b->qhead >= b->qn;
}

/* Items due within this much real time of the head run with it, and the
 * time they ran ahead is added to the wait of the item after them, so the
 * schedule as a whole keeps its pace: a boot log of lines a fraction of a
 * millisecond apart is one write and one wake-up of each side, not one per
 * line (a real 115200-baud UART needs 87 us per character anyway).
 *
 * A board keeps its own clock as a real one does: when the head runs late
 * (the simulator was not scheduled, or a pass of a thousand boards took its
 * time), the items after it that were due by now run with it and the next
 * wait is shortened by what is still behind, instead of every late timer
 * pushing the rest of the board's schedule back.  Without that a loaded
 * simulator stretched each board's modelled time by the sum of its timers'
 * latenesses.  Only an answer to input starts a fresh schedule (from the
 * input), and a floor (the autoboot countdown) is never caught up. */
#define SIM_COALESCE_MS 1.0

static void q_fire(struct loop *l, struct loop_timer *t, void *arg)
{
	struct sim_board *b = arg;
	LAB_UNUSED(l);
	double ahead = 0;
	/* how late the simulator runs: the largest lateness of the last 200 ms */
	uint64_t now = lab_now_ns();
	struct sim *s = b->sim;
	if (now > t->when_ns) {
		uint64_t late = now - t->when_ns;
		if (late > s->late_ns || now - s->late_at_ns >= SIM_LATE_KEEP_NS) {
			s->late_ns = late;
			s->late_at_ns = now;
		}
	}
	/* how far the board's schedule is behind: its items due by now run too */
	double behind = now > b->q_due_ns ? (double)(now - b->q_due_ns) / 1e6 : 0;
	unsigned gen = b->q_gen;
	/* Run the head, then every following item due within SIM_COALESCE_MS. */
	for (int batch = 0; batch < 256 && b->qhead < b->qn; batch++) {
		if (b->txq.len > SIM_TXQ_HIGH) {
			b->q_stalled = true; /* resumed by tx_flush */
			b->q_owed_ms = ahead;
			return;
		}
		if (batch > 0) {
			struct sim_item *nx = &b->q[b->qhead];
			if (nx->floor_ms > 0)
				break; /* real time from now (q_arm) */
			double d = scaled_real_ms(b, nx->delay_ms, nx->floor_ms);
			if (d >= 0.05) {
				if (ahead + d > SIM_COALESCE_MS + behind)
					break;
				ahead += d;
			}
		}
		struct sim_item it = b->q[b->qhead++];
		if (it.text) {
			out_bytes(b, it.text, it.len);
			free(it.text);
		}
		if (it.fn)
			it.fn(b, it.arg); /* may clear or refill the queue */
	}
	if (b->qhead >= b->qn)
		b->qhead = b->qn = 0;
	if (b->q_gen != gen)
		return; /* cleared and maybe refilled (an answer to input): armed from now */
	/* The next item waits from the schedule's time, also one an item of the
	 * batch queued (armed on its push, from now); into an empty queue, an
	 * item (an answer to input) waits from its own start. */
	b->q_owed_ms = b->qhead < b->qn ? ahead - behind : 0;
	loop_timer_stop(b->loop, &b->qtimer);
	q_arm(b);
}

/* ---- power ---- */

static void power_cut(struct sim_board *b)
{
	sim_sched_clear(b);
	if (b->running) {
		sim_agent_poweroff(b);
		sim_linux_poweroff(b);
	}
	b->running = false;
	b->stage = SIM_OFF;
}

static void power_on(struct sim_board *b)
{
	if (b->running)
		return;
	b->running = true;
	b->boots++;
	/* Output nobody read before the cut is gone, as on a real UART. */
	b->txq.len = 0;
	if (b->slave >= 0)
		tcflush(b->slave, TCIFLUSH);
	sim_uboot_poweron(b);
}

static void on_ptimer(struct loop *l, struct loop_timer *t, void *arg)
{
	struct sim_board *b = arg;
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	b->relay = true;
	power_on(b);
}

void sim_board_power(struct sim_board *b, enum sim_power_op op)
{
	b->power_ops++;
	loop_timer_stop(b->loop, &b->ptimer);
	if (op == SIM_POWER_TOGGLE)
		op = b->relay ? SIM_POWER_OFF : SIM_POWER_ON;
	switch (op) {
	case SIM_POWER_ON:
		b->relay = true;
		power_on(b);
		break;
	case SIM_POWER_OFF:
	case SIM_POWER_REBOOT:
		b->relay = false;
		if (!sim_board_fault_fire(b, FAULT_NO_POWER_OFF))
			power_cut(b);
		if (op == SIM_POWER_REBOOT) /* pdudaemon reboot: off, a short pause, on */
			loop_timer_start_ns(b->loop, &b->ptimer,
					    (uint64_t)(scaled_real_ms(b, 1000, 20) * 1e6));
		break;
	default:
		break;
	}
}

bool sim_board_relay_on(const struct sim_board *b)
{
	return b->relay;
}

const struct sim_power_cfg *sim_board_powercfg(const struct sim_board *b)
{
	return &b->pw;
}

/* ---- faults ---- */

bool sim_board_fault_on(const struct sim_board *b, int id)
{
	const struct sim_fault *f = &b->faults[id];
	return f->on && f->remaining != 0;
}

bool sim_board_fault_fire(struct sim_board *b, int id)
{
	struct sim_fault *f = &b->faults[id];
	if (!f->on || f->remaining == 0)
		return false;
	if (f->remaining > 0)
		f->remaining--;
	f->fired++;
	return true;
}

int sim_board_set_fault(struct sim_board *b, const char *spec, struct lab_err *e)
{
	int id;
	double value;
	bool has_value;
	long count;
	int rc = sim_fault_parse(spec, &id, &value, &has_value, &count, e);
	if (rc)
		return rc;
	struct sim_fault *f = &b->faults[id];
	f->on = true;
	f->value = value;
	if (!has_value && b->cfg.fault_rate > 0 &&
	    (id == FAULT_GARBAGE || id == FAULT_DROP_CHARS || id == FAULT_BAD_CRC))
		f->value = b->cfg.fault_rate;
	f->remaining = count;
	f->fired = 0;
	return LAB_OK;
}

void sim_board_clear_faults(struct sim_board *b)
{
	memset(b->faults, 0, sizeof b->faults);
}

/* ---- lifecycle ---- */

static void url_split(const char *url, struct sim_power_cfg *pw)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	size_t hl = strcspn(p, ":/");
	snprintf(pw->host, sizeof pw->host, "%.*s", (int)hl, p);
	p += hl;
	pw->port = 80;
	if (*p == ':') {
		int64_t v;
		char num[16];
		size_t nl = strcspn(p + 1, "/");
		snprintf(num, sizeof num, "%.*s", (int)nl, p + 1);
		if (lab_parse_i64(num, &v) == 0 && v > 0 && v < 65536)
			pw->port = (int)v;
		p += 1 + nl;
	}
	snprintf(pw->prefix, sizeof pw->prefix, "%s", p);
	size_t l = strlen(pw->prefix);
	while (l && pw->prefix[l - 1] == '/')
		pw->prefix[--l] = '\0';
}

static const char *node_str(const struct cfg_node *map, const char *key)
{
	const struct cfg_node *n = map ? cfg_map_get(map, key) : NULL;
	return n && n->kind == CFG_SCALAR ? n->value : NULL;
}

struct sim_board *sim_board_new(struct sim *s, const struct board_cfg *bc, struct lab_err *e)
{
	struct sim_board *b = xcalloc(1, sizeof *b);
	b->sim = s;
	b->loop = s->loop;
	b->name = xstrdup(bc->name);
	b->bc = bc;
	b->master = b->slave = b->listen_fd = -1;
	lab_buf_init(&b->txq, 1 << 20);
	lab_buf_init(&b->klog, 256 * 1024);
	lab_buf_init(&b->line, 4096); /* N_TTY canonical line limit */
	loop_timer_init(&b->qtimer, q_fire, b);
	loop_timer_init(&b->ptimer, on_ptimer, b);
	loop_timer_init(&b->rxq_timer, sim_uboot_rxq_fire, b);
	b->knob_cqe = -1;

	if (opt_defaults(sim_cfg_opts, &b->cfg, e) != 0)
		goto fail;
	if (bc->sim && bc->sim->kind == CFG_MAP && opt_parse(sim_cfg_opts, bc->sim, &b->cfg, e) != 0)
		goto fail;
	if (!(bc->sim && bc->sim->kind == CFG_MAP && cfg_map_get(bc->sim, "cqe")))
		b->cfg.cqe = bc->type ? bc->type->has_cqe : false;
	const char *model = b->cfg.model && b->cfg.model[0] ? b->cfg.model : bc->part.model;
	b->part = sim_part_find(model);
	if (!b->part) {
		struct lab_buf names;
		lab_buf_init(&names, 4096);
		for (size_t i = 0; sim_part_at(i); i++)
			lab_buf_printf(&names, "%s%s", i ? ", " : "", sim_part_at(i)->model);
		if (bc->sim)
			cfg_error(e, bc->sim, "board %s: unknown part model '%s' (known: %s)", bc->name,
				  model ? model : "", lab_buf_cstr(&names));
		else
			LAB_ERR(e, LAB_EUSAGE, "board %s: unknown part model '%s' (known: %s)", bc->name,
				model ? model : "", lab_buf_cstr(&names));
		lab_buf_free(&names);
		goto fail;
	}
	if (!b->cfg.host || !b->cfg.host[0]) {
		free(b->cfg.host);
		b->cfg.host = xstrdup(bc->type && bc->type->host ? bc->type->host : "sdhci-of-arasan");
	}
	if (!b->cfg.agent_path || !b->cfg.agent_path[0]) {
		free(b->cfg.agent_path);
		b->cfg.agent_path = xstrdup(bc->type && bc->type->shell.agent_path && bc->type->shell.agent_path[0]
					    ? bc->type->shell.agent_path : "/usr/bin/emmclab-agent");
	}
	if (!b->cfg.hostname || !b->cfg.hostname[0]) {
		free(b->cfg.hostname);
		b->cfg.hostname = xstrdup(bc->name);
	}
	for (size_t i = 0; i < b->cfg.faults.n; i++)
		if (sim_board_set_fault(b, b->cfg.faults.v[i], e) != 0) {
			if (bc->sim)
				lab_err_set(e, LAB_EUSAGE, "board %s", bc->name);
			goto fail;
		}
	sim_rng_seed(&b->rng_model, (uint64_t)b->cfg.seed, b->name);
	char fs[160];
	snprintf(fs, sizeof fs, "%s/faults", b->name);
	sim_rng_seed(&b->rng_fault, (uint64_t)b->cfg.seed, fs);
	sim_fifo_init(&b->fifo, (unsigned)b->cfg.fifo, (double)b->cfg.max_input_cps);

	/* power block */
	const char *drv = node_str(bc->power, "driver");
	snprintf(b->pw.driver, sizeof b->pw.driver, "%s", drv ? drv : "");
	const char *url = node_str(bc->power, "url");
	if (!url && strcmp(b->pw.driver, "pdudaemon") == 0)
		url = "http://127.0.0.1:16421";
	if (url)
		url_split(url, &b->pw);
	const char *v;
	if ((v = node_str(bc->power, "hostname")))
		snprintf(b->pw.hostname, sizeof b->pw.hostname, "%s", v);
	if ((v = node_str(bc->power, "alias")))
		snprintf(b->pw.alias, sizeof b->pw.alias, "%s", v);
	if ((v = node_str(bc->power, "port")))
		lab_parse_i64(v, &b->pw.pdu_port);
	if ((v = node_str(bc->power, "relay")))
		lab_parse_i64(v, &b->pw.relay);

	/* console: a pty, or a Unix socket the controller's tcp driver connects to */
	const char *cdrv = node_str(bc->console, "driver");
	const char *path = node_str(bc->console, "path");
	const char *proto = node_str(bc->console, "protocol");
	bool is_pty = cdrv && strcmp(cdrv, "pty") == 0;
	bool is_sock = cdrv && strcmp(cdrv, "tcp") == 0 && (!proto || strcmp(proto, "raw") == 0);
	if (!(is_pty || is_sock) || !path || !path[0]) {
		static const char need[] = "board %s: the simulator needs console {driver: pty, path: ...} "
					   "or {driver: tcp, path: SOCKET} (raw protocol)";
		if (bc->console)
			cfg_error(e, bc->console, need, bc->name);
		else
			LAB_ERR(e, LAB_EUSAGE, need, bc->name);
		goto fail;
	}
	if (is_sock && b->cfg.ser2net_port > 0) {
		cfg_error(e, bc->console, "board %s: sim.ser2net_port publishes a pty console; this console is "
			  "already a socket", bc->name);
		goto fail;
	}
	if (is_sock && strlen(path) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
		cfg_error(e, bc->console, "board %s: console path %s is too long for a socket", bc->name, path);
		goto fail;
	}
	b->sock = is_sock;
	b->link = xstrdup(path);
	sim_uboot_default_env(b, &b->env_saved);
	sim_kv_copy(&b->env, &b->env_saved);
	snprintf(b->cwd, sizeof b->cwd, "/root");
	sim_linux_init_fs(b);
	return b;
fail:
	sim_board_free(b);
	return NULL;
}

/* ---- socket console: one client at a time, like QEMU's -chardev
 * socket,server=on,wait=off.  While a client is connected the listening
 * socket is not watched, so a second one waits in the backlog until the
 * first has gone (the controller's board locks keep a second operator away
 * before that). ---- */

static void on_listen(struct loop *l, int fd, unsigned ev, void *arg);

/* The console's directory (the link's or the socket's), made if missing. */
static void mkdir_parent(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		lab_mkdir_p(dir, 0755);
	}
	free(dir);
}

static void sock_listen_watch(struct sim_board *b)
{
	if (b->listen_fd >= 0 && !loop_fd_watched(b->loop, b->listen_fd))
		loop_fd_add(b->loop, b->listen_fd, LOOP_READ, on_listen, b);
}

static void on_listen(struct loop *l, int fd, unsigned ev, void *arg)
{
	struct sim_board *b = arg;
	LAB_UNUSED(ev);
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c < 0)
		return; /* EAGAIN (the client gave up), EMFILE: the backlog keeps it */
	loop_fd_del(l, fd);
	b->master = c; /* txq is empty: out_bytes drops output while nobody is connected */
	watch_master(b);
}

static void sock_client_gone(struct sim_board *b)
{
	tx_forget(b);
	loop_fd_del(b->loop, b->master);
	close(b->master);
	b->master = -1;
	b->txq.len = 0;
	if (b->q_stalled) {
		b->q_stalled = false; /* output now goes nowhere: the board runs on */
		q_arm(b);
	}
	sock_listen_watch(b);
}

static int sock_start(struct sim_board *b, struct lab_err *e)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	memcpy(un.sun_path, b->link, strlen(b->link) + 1); /* length checked at parse */
	mkdir_parent(b->link);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "board %s: socket: %s", b->name, strerror(errno));
	struct stat st;
	if (lstat(b->link, &st) == 0) {
		/* Left by a simulator that died: replace it.  One that still serves
		 * it answers a connect (or has a full backlog): leave it alone. */
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			return LAB_ERR(e, LAB_EUSAGE, "board %s: console path %s exists and is not a socket",
				       b->name, b->link);
		}
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int cr = probe >= 0 ? connect(probe, (struct sockaddr *)&un, sizeof un) : -1;
		int cerr = errno;
		if (probe >= 0)
			close(probe);
		if (cr == 0 || cerr == EAGAIN) {
			close(fd);
			return LAB_ERR(e, LAB_EINFRA, "board %s: console socket %s is served by another process",
				       b->name, b->link);
		}
		unlink(b->link);
	}
	if (bind(fd, (struct sockaddr *)&un, sizeof un) != 0 || listen(fd, 4) != 0) {
		int err = errno;
		close(fd);
		return LAB_ERR(e, LAB_EINFRA, "board %s: listen on %s: %s", b->name, b->link, strerror(err));
	}
	/* The console is its owner's, as a pty slave is: nobody else types into it. */
	if (chmod(b->link, 0600) != 0 || stat(b->link, &st) != 0) {
		int err = errno;
		close(fd);
		unlink(b->link);
		return LAB_ERR(e, LAB_EINFRA, "board %s: %s: %s", b->name, b->link, strerror(err));
	}
	b->sock_dev = st.st_dev;
	b->sock_ino = st.st_ino;
	b->listen_fd = fd;
	sock_listen_watch(b);
	return LAB_OK;
}

int sim_board_start(struct sim_board *b, const char *state_dir, struct lab_err *e)
{
	LAB_UNUSED(state_dir);
	if (b->sock)
		return sock_start(b, e);
	b->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (b->master < 0)
		return LAB_ERR(e, LAB_EINFRA, "board %s: posix_openpt: %s", b->name, strerror(errno));
	if (grantpt(b->master) != 0 || unlockpt(b->master) != 0)
		return LAB_ERR(e, LAB_EINFRA, "board %s: grantpt/unlockpt: %s", b->name, strerror(errno));
	if (ptsname_r(b->master, b->pts, sizeof b->pts) != 0)
		return LAB_ERR(e, LAB_EINFRA, "board %s: ptsname: %s", b->name, strerror(errno));
	/* Hold the slave open: without it the master reports HUP (and busy-loops
	 * the poller) whenever no controller is attached. */
	b->slave = open(b->pts, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (b->slave < 0)
		return LAB_ERR(e, LAB_EINFRA, "board %s: open %s: %s", b->name, b->pts, strerror(errno));
	/* Raw line discipline: the board's bytes reach the reader unchanged, and
	 * the tty does not echo them back into the board. */
	struct termios t;
	if (tcgetattr(b->slave, &t) == 0) {
		cfmakeraw(&t);
		cfsetispeed(&t, B115200);
		cfsetospeed(&t, B115200);
		tcsetattr(b->slave, TCSANOW, &t);
	}
	mkdir_parent(b->link);
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", b->link, (int)getpid());
	unlink(tmp);
	if (symlink(b->pts, tmp) != 0 || rename(tmp, b->link) != 0) {
		int err = errno;
		unlink(tmp);
		return LAB_ERR(e, LAB_EINFRA, "board %s: link %s -> %s: %s", b->name, b->link, b->pts,
			       strerror(err));
	}
	watch_master(b);
	return LAB_OK;
}

void sim_board_free(struct sim_board *b)
{
	if (!b)
		return;
	sim_sched_clear(b);
	loop_timer_stop(b->loop, &b->ptimer);
	tx_forget(b);
	if (b->master >= 0) {
		loop_fd_del(b->loop, b->master);
		close(b->master);
	}
	if (b->slave >= 0)
		close(b->slave);
	if (b->listen_fd >= 0) {
		loop_fd_del(b->loop, b->listen_fd);
		close(b->listen_fd);
		/* Remove the socket file only if it is still the one we bound. */
		struct stat st;
		if (lstat(b->link, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == b->sock_dev &&
		    st.st_ino == b->sock_ino)
			unlink(b->link);
	}
	if (b->link && b->pts[0]) {
		/* Remove the link only if it still points at our pty. */
		char target[128];
		ssize_t n = readlink(b->link, target, sizeof target - 1);
		if (n > 0) {
			target[n] = '\0';
			if (strcmp(target, b->pts) == 0)
				unlink(b->link);
		}
	}
	free(b->q);
	lab_buf_free(&b->txq);
	lab_buf_free(&b->klog);
	lab_buf_free(&b->line);
	for (size_t i = 0; i < b->npending; i++)
		free(b->pending[i]);
	for (size_t i = 0; i < b->nfiles; i++) {
		free(b->files[i].path);
		lab_buf_free(&b->files[i].data);
	}
	lab_buf_free(&b->alog_text);
	free(b->alog_off);
	sim_kv_clear(&b->env);
	sim_kv_clear(&b->env_saved);
	sim_kv_clear(&b->vars);
	opt_free(sim_cfg_opts, &b->cfg);
	free(b->link);
	free(b->name);
	free(b);
}

struct sim_board *sim_find_board(struct sim *s, const char *name)
{
	for (size_t i = 0; i < s->nboards; i++)
		if (strcmp(sim_board_name(s->boards[i]), name) == 0)
			return s->boards[i];
	return NULL;
}

const char *sim_board_name(const struct sim_board *b)
{
	return b->name;
}

const char *sim_board_pts(const struct sim_board *b)
{
	return b->pts;
}

int64_t sim_board_ser2net_port(const struct sim_board *b)
{
	return b->cfg.ser2net_port;
}

void sim_board_json(const struct sim_board *b, struct lab_buf *o)
{
	lab_buf_printf(o, "{\"name\":");
	json_buf_str(o, b->name);
	lab_buf_printf(o, ",\"power\":\"%s\",\"running\":%s,\"stage\":\"%s\",\"boots\":%lu,",
		       b->relay ? "on" : "off", b->running ? "true" : "false",
		       sim_stage_names[b->stage], b->boots);
	lab_buf_printf(o, "\"part\":");
	json_buf_str(o, b->part->model);
	lab_buf_printf(o, ",\"console\":");
	json_buf_str(o, b->link);
	lab_buf_printf(o, ",\"pts\":");
	json_buf_str(o, b->pts);
	bool linux_up = b->stage == SIM_KERNEL || b->stage == SIM_LOGIN || b->stage == SIM_SHELL;
	lab_buf_printf(o, ",\"mode\":\"%s\",\"fua\":%d,\"cqe\":%d,\"knob_fua\":\"%s\",\"cmdline\":",
		       linux_up ? sim_mode_name(b->eff) : "none", b->eff.fua, b->eff.cqe,
		       b->knob_fua[0] ? b->knob_fua : "none");
	json_buf_str(o, linux_up ? b->cmdline : "");
	lab_buf_printf(o, ",\"counters\":{\"reliable_writes\":%ld,\"flushes\":%ld,\"chars_in\":%llu,"
			  "\"chars_dropped\":%llu,\"fifo_lost\":%llu,\"lines_corrupted\":%llu,"
			  "\"garbage_bytes\":%llu,\"tx_dropped\":%llu,\"agent_runs\":%llu,"
			  "\"power_ops\":%lu,\"pf_acked\":%ld,\"pf_durable\":%ld},",
		       b->rel_writes, b->flushes, (unsigned long long)b->chars_in,
		       (unsigned long long)b->chars_dropped, (unsigned long long)b->fifo.lost,
		       (unsigned long long)b->lines_corrupted, (unsigned long long)b->garbage_bytes,
		       (unsigned long long)b->tx_dropped, (unsigned long long)b->agent_runs,
		       b->power_ops, b->pf.acked, b->pf.durable);
	lab_buf_printf(o, "\"faults\":[");
	bool first = true;
	for (int i = 0; i < FAULT_COUNT; i++) {
		const struct sim_fault *f = &b->faults[i];
		if (!f->on)
			continue;
		lab_buf_printf(o, "%s{\"fault\":\"%s\",\"value\":%g,\"remaining\":%ld,\"fired\":%ld}",
			       first ? "" : ",", sim_fault_names[i], f->value, f->remaining, f->fired);
		first = false;
	}
	lab_buf_printf(o, "]}");
}
