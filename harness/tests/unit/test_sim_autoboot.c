/* test_sim_autoboot.c - the simulated U-Boot's countdown reads the console up
 * to its last moment, as U-Boot's abortboot polls tstc() (boards/sim/
 * sim_uboot.c ub_tick): a key that reached the pty after the loop's
 * epoll_wait returned but before the countdown's timer ran stops autoboot.
 * A loaded host that preempts the simulator in that window must not turn a
 * key typed in time into a board that booted by itself (a CI failure of
 * scenario.board_sim, 2026-12-07).  The window is made deterministic here:
 * a timer of the test's own, due just before the countdown's, types the key
 * in the same pass. */
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

static int slave = -1;

static void type_key(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	LAB_UNUSED(arg);
	ok(write(slave, " ", 1) == 1, "the key is typed in the countdown's own pass");
}

/* Run the loop and collect the console until `want` shows or ms pass. */
static bool read_until(struct loop *l, struct lab_buf *seen, const char *want, int ms)
{
	uint64_t end = lab_now_ns() + (uint64_t)ms * 1000000ULL;
	while (lab_now_ns() < end) {
		loop_run_once(l, 5);
		char buf[4096];
		ssize_t r;
		while ((r = read(slave, buf, sizeof buf)) > 0)
			lab_buf_append(seen, buf, (size_t)r);
		if (want && strstr(lab_buf_cstr(seen), want))
			return true;
	}
	return false;
}

int main(void)
{
	char dir[] = "/tmp/emmclab-test-autoboot-XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	/* bootdelay 1: one countdown timer, 500 ms real (room for a loaded host) */
	char *lab = xasprintf("%s/lab.yaml", dir);
	char *text = xasprintf("lab:\n  name: ab\n  transcripts: %s/tr\n"
			       "types:\n  - name: t\n    host: sim\n    uboot: {prompt: \"=> \"}\n"
			       "boards:\n  - name: b1\n    type: t\n"
			       "    part: {label: DUT, model: industrial-8g}\n"
			       "    console: {driver: pty, path: %s/b1.tty}\n"
			       "    power: {driver: pdudaemon, url: \"http://127.0.0.1:9\", hostname: pdu, port: 1}\n"
			       "    sim: {time_scale: 1000, bootdelay: 1, autoboot_floor: 500ms}\n",
			       dir, dir);
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
	struct sim_board *b = sim_board_new(&s, &s.lab->boards[0], &e);
	ok(b != NULL, "board created %s", b ? "" : e.msg);
	if (!b)
		return tap_done();
	s.boards = &b;
	s.nboards = 1;
	ok(sim_board_start(b, dir, &e) == 0, "board started %s", e.msg);
	slave = open(sim_board_pts(b), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	ok(slave >= 0, "pty slave opens");
	struct termios tio;
	if (tcgetattr(slave, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(slave, TCSANOW, &tio);
	}
	struct lab_buf seen;
	lab_buf_init(&seen, 1 << 20);

	sim_board_power(b, SIM_POWER_ON);
	ok(read_until(s.loop, &seen, "Hit any key to stop autoboot", 5000), "the countdown starts");
	is_int(b->stage, SIM_AUTOBOOT, "the board counts down");
	/* Our timer is due before the countdown's (armed when the prompt went
	 * out); after the sleep both are due, and the pass runs them in order:
	 * the key lands in the pty after epoll_wait has returned. */
	struct loop_timer t;
	loop_timer_init(&t, type_key, NULL);
	loop_timer_start(s.loop, &t, 0);
	usleep(600 * 1000);
	loop_run_once(s.loop, 0);
	ok(b->stage == SIM_UBOOT || b->stage == SIM_UBOOT_BUSY,
	   "the key stops autoboot (stage %s)", sim_stage_names[b->stage]);
	read_until(s.loop, &seen, NULL, 200);
	const char *out = lab_buf_cstr(&seen);
	ok(strstr(out, "\b\b\b 0 \r\n=> ") != NULL, "U-Boot prints 0 and its prompt");
	ok(strstr(out, "Starting kernel") == NULL && strstr(out, "load mmc") == NULL &&
	   strstr(out, "bytes read") == NULL, "and does not boot by itself");

	/* No key: the countdown runs out and bootcmd runs (the poll reads nothing). */
	sim_board_power(b, SIM_POWER_OFF);
	read_until(s.loop, &seen, NULL, 100);
	lab_buf_consume(&seen, seen.len);
	sim_board_power(b, SIM_POWER_ON);
	ok(read_until(s.loop, &seen, "Starting kernel", 5000), "untouched, it boots by itself");

	sim_board_power(b, SIM_POWER_OFF);
	close(slave);
	sim_board_free(b);
	free(s.tx_dirty); /* the sim's list of boards with output queued */
	loop_free(s.loop);
	config_free(s.lab);
	lab_buf_free(&seen);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	ok(system(cmd) == 0, "temporary directory removed");
	free(cmd);
	free(text);
	free(lab);
	return tap_done();
}
