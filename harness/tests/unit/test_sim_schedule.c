/* test_sim_schedule.c - a simulated board's output schedule under a loaded
 * host (boards/sim/sim_board.c q_fire, sim_uboot.c ub_tick).
 *
 * 1. U-Boot's countdown reads the console up to its last moment, as
 *    abortboot polls tstc(): a key that reached the pty after the loop's
 *    epoll_wait returned but before the countdown's timer ran stops
 *    autoboot.  A host that preempts the simulator in that window must not
 *    turn a key typed in time into a board that booted by itself (a CI
 *    failure of scenario.board_sim, 2026-12-07).  The window is made
 *    deterministic: a timer of the test's own, due just before the
 *    countdown's, types the key in the same pass.
 * 2. A board keeps its own clock: a simulator that was not scheduled for a
 *    while runs the items that fell due meanwhile and keeps the later ones
 *    at their times, rather than pushing the rest of the boot back by its
 *    lateness (the test stalls the loop with a sleep). */
#include "config.h"
#include "loop.h"
#include "sim_board.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

/* One board's console as the test reads it, from power-on to power-off. */
struct con {
	struct sim *s;
	struct sim_board *b;
	int fd;
	struct lab_buf seen;
	uint64_t on_ns; /* when the board was switched on */
};

static void type_key(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	const int *fd = arg;
	ok(write(*fd, " ", 1) == 1, "the key is typed in the countdown's own pass");
}

/* Run the loop and collect the console until `want` shows or ms pass. */
static bool read_until(struct con *c, const char *want, int ms)
{
	uint64_t end = lab_now_ns() + (uint64_t)ms * 1000000ULL;
	while (lab_now_ns() < end) {
		loop_run_once(c->s->loop, 5);
		char buf[4096];
		ssize_t r;
		while ((r = read(c->fd, buf, sizeof buf)) > 0)
			lab_buf_append(&c->seen, buf, (size_t)r);
		if (want && strstr(lab_buf_cstr(&c->seen), want))
			return true;
	}
	return false;
}

/* Open b's console (raw) and switch the board on. */
static void con_on(struct con *c, struct sim *s, struct sim_board *b)
{
	c->s = s;
	c->b = b;
	lab_buf_init(&c->seen, 1 << 20);
	c->fd = open(sim_board_pts(b), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	ok(c->fd >= 0, "%s: pty slave opens", sim_board_name(b));
	struct termios tio;
	if (c->fd >= 0 && tcgetattr(c->fd, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(c->fd, TCSANOW, &tio);
	}
	c->on_ns = lab_now_ns();
	sim_board_power(b, SIM_POWER_ON);
}

static void con_off(struct con *c)
{
	sim_board_power(c->b, SIM_POWER_OFF);
	close(c->fd);
	lab_buf_free(&c->seen);
}

static void countdown_polls(struct sim *s, struct sim_board *b)
{
	struct con c;
	con_on(&c, s, b);
	ok(read_until(&c, "Hit any key to stop autoboot", 5000), "the countdown starts");
	is_int(b->stage, SIM_AUTOBOOT, "the board counts down");
	/* Our timer is due before the countdown's (armed when the prompt went
	 * out); after the sleep both are due, and the pass runs them in order:
	 * the key lands in the pty after epoll_wait has returned. */
	struct loop_timer t;
	loop_timer_init(&t, type_key, &c.fd);
	loop_timer_start(s->loop, &t, 0);
	usleep(600 * 1000);
	loop_run_once(s->loop, 0);
	ok(b->stage == SIM_UBOOT || b->stage == SIM_UBOOT_BUSY,
	   "the key stops autoboot (stage %s)", sim_stage_names[b->stage]);
	read_until(&c, NULL, 200);
	const char *out = lab_buf_cstr(&c.seen);
	ok(strstr(out, "\b\b\b 0 \r\n=> ") != NULL, "U-Boot prints 0 and its prompt");
	ok(strstr(out, "Starting kernel") == NULL && strstr(out, "load mmc") == NULL &&
	   strstr(out, "bytes read") == NULL, "and does not boot by itself");

	/* No key: the countdown runs out and bootcmd runs (the poll reads nothing). */
	sim_board_power(b, SIM_POWER_OFF);
	read_until(&c, NULL, 100);
	lab_buf_consume(&c.seen, c.seen.len);
	sim_board_power(b, SIM_POWER_ON);
	ok(read_until(&c, "Starting kernel", 5000), "untouched, it boots by itself");
	con_off(&c);
}

/* b2 runs in real time (time_scale 1) to its prompt (bootdelay -1): DDR
 * 250 ms, SPL 180, BL31 120, U-Boot 400, MMC 150, environment 60, net 40,
 * countdown 30: 1,230 ms after power-on.  The loop stalls 800 ms from the
 * first line (at 250 ms): SPL, BL31 and the banner fall due meanwhile. */
static void keeps_its_clock(struct sim *s, struct sim_board *b)
{
	struct con c;
	con_on(&c, s, b);
	ok(read_until(&c, "DDR Version", 5000), "the first line");
	usleep(800 * 1000);
	ok(read_until(&c, "=> ", 5000), "the prompt");
	double ms = (double)(lab_now_ns() - c.on_ns) / 1e6;
	/* kept its clock: ~1,230 ms; pushed back by the stall: ~1,850 ms */
	ok(ms >= 1200 && ms < 1530, "the prompt on the board's own time: %.0f ms (1,230 "
	   "modelled; the stall's lateness added would be ~1,850)", ms);
	const char *out = lab_buf_cstr(&c.seen);
	const char *spl = strstr(out, "U-Boot SPL"), *mmc = strstr(out, "MMC:   ");
	ok(spl && mmc && spl < mmc, "every line, in order");
	con_off(&c);
}

/* b3: a late countdown second is not caught up: the next one still gets its
 * full floor (300 ms) of real time for a controller to interrupt. */
static void countdown_not_caught_up(struct sim *s, struct sim_board *b)
{
	struct con c;
	con_on(&c, s, b);
	ok(read_until(&c, "Hit any key to stop autoboot:  2 ", 5000), "b3 counts down");
	usleep(450 * 1000); /* its second second falls due 150 ms into this */
	uint64_t t1 = lab_now_ns();
	ok(read_until(&c, "\b\b\b 1 ", 1000), "the late second");
	ok(read_until(&c, "\b\b\b 0 ", 2000), "the last second");
	double ms = (double)(lab_now_ns() - t1) / 1e6;
	ok(ms >= 280, "the last second lasts its floor after a late one: %.0f ms (300; caught "
	   "up it would be ~150)", ms);
	con_off(&c);
}

int main(void)
{
	char dir[] = "/tmp/emmclab-test-sim-schedule-XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	/* b1: bootdelay 1, one countdown timer of 500 ms real (room for a loaded host) */
	char *lab = xasprintf("%s/lab.yaml", dir);
	char *text = xasprintf(
		"lab:\n  name: ab\n  transcripts: %s/tr\n"
		"types:\n  - name: t\n    host: sim\n    uboot: {prompt: \"=> \"}\n"
		"boards:\n"
		"  - name: b1\n    type: t\n"
		"    part: {label: DUT, model: industrial-8g}\n"
		"    console: {driver: pty, path: %s/b1.tty}\n"
		"    power: {driver: pdudaemon, url: \"http://127.0.0.1:9\", hostname: pdu, port: 1}\n"
		"    sim: {time_scale: 1000, bootdelay: 1, autoboot_floor: 500ms}\n"
		"  - name: b2\n    type: t\n"
		"    part: {label: DUT, model: industrial-8g}\n"
		"    console: {driver: pty, path: %s/b2.tty}\n"
		"    power: {driver: pdudaemon, url: \"http://127.0.0.1:9\", hostname: pdu, port: 2}\n"
		"    sim: {time_scale: 1, bootdelay: -1}\n"
		"  - name: b3\n    type: t\n"
		"    part: {label: DUT, model: industrial-8g}\n"
		"    console: {driver: pty, path: %s/b3.tty}\n"
		"    power: {driver: pdudaemon, url: \"http://127.0.0.1:9\", hostname: pdu, port: 3}\n"
		"    sim: {time_scale: 1000, bootdelay: 2, autoboot_floor: 300ms}\n",
		dir, dir, dir, dir);
	struct lab_err e = {0};
	ok(lab_write_file_atomic(lab, text, strlen(text), &e) == 0, "lab file written");
	const char *paths[] = {lab};
	struct sim s = {0};
	s.state_dir = dir;
	if (config_load(paths, 1, &s.lab, &e) != 0) {
		ok(0, "lab loads: %s %s", e.msg, e.where);
		return tap_done();
	}
	s.loop = loop_new();
	struct sim_board *boards[3];
	for (size_t i = 0; i < 3; i++) {
		boards[i] = sim_board_new(&s, &s.lab->boards[i], &e);
		ok(boards[i] != NULL, "board %zu created %s", i + 1, boards[i] ? "" : e.msg);
		if (!boards[i])
			return tap_done();
		ok(sim_board_start(boards[i], dir, &e) == 0, "board %zu started %s", i + 1, e.msg);
	}
	s.boards = boards;
	s.nboards = 3;

	countdown_polls(&s, boards[0]);
	keeps_its_clock(&s, boards[1]);
	countdown_not_caught_up(&s, boards[2]);

	for (size_t i = 0; i < 3; i++)
		sim_board_free(boards[i]);
	free(s.tx_dirty); /* the sim's list of boards with output queued */
	loop_free(s.loop);
	config_free(s.lab);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	ok(system(cmd) == 0, "temporary directory removed");
	free(cmd);
	free(text);
	free(lab);
	return tap_done();
}
