/*
 * cmd_board.c - `emmclab board`: drive one board by hand with the same
 * drivers as `run`.
 *
 *   board NAME power on|off|cycle|state
 *   board NAME console                  interactive; Ctrl-] leaves
 *   board NAME boot [--kernel K] [--mode M] [--cmdline ARGS] [--run CMD]... [--agent ARGS]
 *                   [--leave-on]
 *   board list-usb
 *
 * Power outlives the command: `power on` leaves the board on (a QEMU board
 * too: its state is in its state directory, see power/qemu.c); `boot` ends
 * with a power-off unless --leave-on.  While `boot` runs commands, a board
 * whose power state is local (QEMU) is watched, so a guest that powers
 * itself off (`--run 'poweroff -f'`) ends the command at once.
 *
 * The lab comes from --lab FILE, else $EMMCLAB_LAB, else
 * boards/labs/sim-lab.yaml (current directory, then the installed data dir).
 */
#include "board.h"
#include "cli.h"
#include "store.h"
#include "config.h"
#include "console.h"
#include "lock.h"
#include "power.h"
#include "usb.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>


#define ESCAPE_KEY 0x1d /* Ctrl-] */

struct bctx {
	struct cli *cli;
	struct loop *l;
	struct board *b;
	const struct lab_cfg *lab;
	bool done;
	int rc;
	enum board_fail fail;
	char msg[700];
	int power_state;
	/* boot */
	char **runs;
	size_t nruns, run_i;
	const char *agent_args;
	int exit_code;
	/* console */
	bool raw;
	struct termios saved;
	/* boot: the power watch (boot_watch_*) */
	struct power *watch;
	struct loop_timer watch_timer;
	bool powered_off; /* the board went off by itself during a step */
};

enum {
	OPT_LAB = CLI_LONG_ONLY, OPT_KERNEL, OPT_MODE, OPT_CMDLINE, OPT_RUN, OPT_AGENT, OPT_TDIR,
	OPT_DB, OPT_EXPLAIN, OPT_LEAVE_ON,
};

const struct cli_opt cmd_board_opts[] = {
	{"lab", OPT_LAB, "LAB.yaml",
	 "the lab file (default $EMMCLAB_LAB, else boards/labs/sim-lab.yaml)", 0},
	{"transcripts", OPT_TDIR, "DIR", "directory of the console transcripts", 0},
	{"mode", OPT_MODE, "M", "boot: add the kernel command line of this mode's recipe", 0},
	{"kernel", OPT_KERNEL, "K", "boot: the kernel of the lab to boot (default its first)", 0},
	{"cmdline", OPT_CMDLINE, "ARGS", "boot: more kernel command line", 0},
	{"run", OPT_RUN, "CMD", "boot: run CMD in the shell once booted (repeatable, in order)", 0},
	{"agent", OPT_AGENT, "ARGS", "boot: run the agent with ARGS once booted", 0},
	{"explain", OPT_EXPLAIN, NULL,
	 "boot: show each step on stderr: what it waits for (pattern, budget) and what matched", 0},
	{"leave-on", OPT_LEAVE_ON, NULL,
	 "boot: leave the board on at the end (default: power it off)", 0},
	{"db", OPT_DB, "PATH",
	 "release: " CLI_DB_HELP, 0},
	{NULL, 0, NULL, NULL, 0},
};

static const char *default_lab(void)
{
	const char *env = getenv("EMMCLAB_LAB");
	if (env && env[0])
		return env;
	static const char *const cands[] = {
		"boards/labs/sim-lab.yaml",
		EMMCLAB_DATADIR "/boards/labs/sim-lab.yaml",
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(cands); i++)
		if (access(cands[i], R_OK) == 0)
			return cands[i];
	return NULL;
}

static void on_event(struct board *b, const char *kind, const char *stage, const char *msg, void *arg)
{
	struct bctx *c = arg;
	if (c->cli->quiet && strcmp(kind, "info") == 0)
		return;
	fprintf(stderr, "%s: %s%s%s: %s\n", board_name(b), kind, stage ? " in " : "", stage ? stage : "",
		msg);
}

/* --explain: each step with its time since the first one */
static void on_trace(struct board *b, const char *what, const char *detail, void *arg)
{
	LAB_UNUSED(arg);
	static uint64_t t0;
	if (!t0)
		t0 = lab_now_ms();
	fprintf(stderr, "%s: [%7.3f] %-9s %s\n", board_name(b), (double)(lab_now_ms() - t0) / 1000.0,
		what, detail);
}

static void on_state(struct board *b, enum board_state s, void *arg)
{
	struct bctx *c = arg;
	if (c->cli->verbose)
		fprintf(stderr, "%s: state %s\n", board_name(b), board_state_name(s));
}

static void on_transcript(struct board *b, const char *path, const char *sha, uint64_t bytes,
			  int boot_n, void *arg)
{
	struct bctx *c = arg;
	LAB_UNUSED(sha);
	if (!c->cli->quiet)
		fprintf(stderr, "%s: transcript of boot %d: %s (%llu bytes)\n", board_name(b), boot_n, path,
			(unsigned long long)bytes);
}

static void on_sigint(struct loop *l, int signo, void *arg)
{
	LAB_UNUSED(signo);
	struct bctx *c = arg;
	board_abort(c->b);
	c->rc = LAB_EINFRA;
	snprintf(c->msg, sizeof c->msg, "interrupted");
	c->done = true;
	loop_stop(l);
}

static void run_until_done(struct bctx *c)
{
	while (!c->done && !loop_stopped(c->l))
		loop_run_once(c->l, 1000);
}

/* ---- power ---- */

static void on_power(struct board *b, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct bctx *c = arg;
	c->rc = rc;
	c->power_state = state;
	snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "");
	c->done = true;
}

static int do_power(struct bctx *c, const char *what)
{
	static const char *const names[] = {"on", "off", "cycle", "state"};
	static const enum power_op ops[] = {POWER_ON, POWER_OFF, POWER_CYCLE, POWER_STATE};
	int op = -1;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(names); i++)
		if (strcmp(what, names[i]) == 0)
			op = (int)ops[i];
	if (op < 0) {
		fprintf(stderr, "emmclab: board power: expected on, off, cycle or state, not '%s'\n", what);
		return 2;
	}
	int rc = board_power(c->b, op, on_power, c);
	if (rc) {
		fprintf(stderr, "emmclab: %s: power request refused%s (%s)\n", board_name(c->b),
			op == POWER_STATE ? ": this power driver cannot read the state" : "",
			lab_strerror(rc));
		return lab_exit_code(rc);
	}
	run_until_done(c);
	if (c->rc) {
		fprintf(stderr, "emmclab: %s: power %s failed: %s\n", board_name(c->b), what,
			c->msg[0] ? c->msg : lab_strerror(c->rc));
		return lab_exit_code(c->rc);
	}
	if (op == POWER_STATE)
		printf("%s\n", c->power_state == POWER_IS_ON ? "on" :
		       c->power_state == POWER_IS_OFF ? "off" : "unknown");
	else if (!c->cli->quiet)
		printf("%s: power %s: done\n", board_name(c->b), what);
	return 0;
}

/* ---- boot: the power watch, the agent policy and the final power-off ---- */

#define WATCH_MS 200 /* a local state read: a file and /proc, no device */

static void on_watch_timer(struct loop *l, struct loop_timer *t, void *arg);

static void on_watch_state(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	LAB_UNUSED(msg);
	struct bctx *c = arg;
	if (c->done)
		return;
	if (rc == LAB_OK && state == POWER_IS_OFF) {
		/* the guest powered itself off: what it was running will never answer */
		c->powered_off = true;
		board_abort(c->b);
		c->done = true;
		return;
	}
	loop_timer_start(c->l, &c->watch_timer, WATCH_MS);
}

static void on_watch_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct bctx *c = arg;
	if (!c->done && power_request(c->watch, POWER_STATE, on_watch_state, c) != LAB_OK)
		loop_timer_start(c->l, &c->watch_timer, WATCH_MS);
}

/* Watch the power of a board whose state is local (QEMU) while its shell
 * runs our steps: a second driver instance reads the state every process
 * sees.  Other drivers are not polled (a state read is a device request). */
static void boot_watch_start(struct bctx *c)
{
	const struct board_cfg *bc = board_cfg(c->b);
	const struct cfg_node *dn = bc->power ? cfg_map_get(bc->power, "driver") : NULL;
	const struct power_driver *d = dn && dn->kind == CFG_SCALAR ? power_driver_find(dn->value) : NULL;
	struct lab_err e = {0};
	if (c->watch || !d || !d->state_is_local || !d->can_read_state ||
	    power_new(c->l, bc->name, bc->power, &c->watch, &e) != LAB_OK)
		return;
	loop_timer_init(&c->watch_timer, on_watch_timer, c);
	loop_timer_start(c->l, &c->watch_timer, WATCH_MS);
}

static void boot_watch_stop(struct bctx *c)
{
	if (!c->watch)
		return;
	loop_timer_stop(c->l, &c->watch_timer);
	power_free(c->watch);
	c->watch = NULL;
}

/* Without --agent nothing here runs the agent: do not demand one at boot
 * (the lab was loaded for this command alone). */
static void boot_agent_policy(struct lab_cfg *lab, const struct board_cfg *bc, bool agent)
{
	if (agent || !bc->type)
		return;
	struct board_type *t = &lab->types[bc->type - lab->types];
	free(t->shell.agent_path);
	t->shell.agent_path = xstrdup("");
}

static void on_final_off(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(fail);
	struct bctx *c = arg;
	c->rc = rc;
	snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "");
	c->done = true;
}

/* `boot` leaves the board as it found it: off (unless --leave-on), through
 * its power driver, also after a failure or an interrupt.  Returns an exit
 * code to use when the boot itself succeeded. */
static int boot_power_off(struct bctx *c, bool leave_on)
{
	if (leave_on || !board_cfg(c->b)->power)
		return 0;
	board_abort(c->b); /* nothing of the boot is still wanted */
	c->done = false;
	c->rc = LAB_OK;
	c->msg[0] = '\0';
	if (board_power_off(c->b, on_final_off, c) != LAB_OK)
		return 3;
	uint64_t end = loop_now_ms(c->l) + 120000; /* bounded even if a driver never answers */
	while (!c->done && loop_now_ms(c->l) < end)
		if (loop_run_once(c->l, 100) < 0)
			break;
	if (!c->done || c->rc) {
		fprintf(stderr, "emmclab: %s: power-off at the end failed: %s\n", board_name(c->b),
			c->msg[0] ? c->msg : "no answer");
		return 3;
	}
	if (!c->cli->quiet)
		fprintf(stderr, "%s: powered off (--leave-on keeps it on)\n", board_name(c->b));
	return 0;
}

/* ---- boot ---- */

static void next_step(struct bctx *c);

static void on_cmd(struct board *b, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(b);
	struct bctx *c = arg;
	fwrite(out, 1, len, stdout);
	fflush(stdout);
	if (rc) {
		c->rc = rc;
		c->done = true;
		fprintf(stderr, "emmclab: %s: command failed: %s\n", board_name(c->b), lab_strerror(rc));
		return;
	}
	if (status != 0) {
		fprintf(stderr, "emmclab: %s: `%s` exited with %d\n", board_name(c->b),
			c->runs[c->run_i - 1], status);
		c->exit_code = 1;
	}
	next_step(c);
}

static void on_msg(struct board *b, const struct proto_msg *m, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(arg);
	printf("%llu %s", (unsigned long long)m->seq, m->kind);
	for (size_t i = 0; i < m->nkv; i++)
		printf(" %s=%s", m->kv[i].key, m->kv[i].value);
	printf("\n");
	fflush(stdout);
}

static void on_agent_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct bctx *c = arg;
	if (rc) {
		fprintf(stderr, "emmclab: %s: agent: %s (%s)\n", board_name(c->b), msg ? msg : "",
			board_fail_name(fail));
		c->rc = rc;
	}
	c->done = true;
}

static void next_step(struct bctx *c)
{
	if (c->run_i < c->nruns) {
		const char *cmd = c->runs[c->run_i++];
		if (board_shell(c->b, cmd, 0, on_cmd, c) == LAB_OK)
			return;
		c->rc = LAB_EINFRA;
		c->done = true;
		return;
	}
	if (c->agent_args) {
		const char *a = c->agent_args;
		c->agent_args = NULL;
		if (board_agent(c->b, a, 0, on_msg, on_agent_done, c) == LAB_OK)
			return;
		fprintf(stderr, "emmclab: %s: the agent cannot run (no shell.agent_path?)\n",
			board_name(c->b));
		c->rc = LAB_EUSAGE;
	}
	c->done = true;
}

static void on_booted(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	struct bctx *c = arg;
	if (rc) {
		c->rc = rc;
		c->fail = fail;
		snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "");
		c->done = true;
		return;
	}
	if (!c->cli->quiet)
		fprintf(stderr, "%s: at a shell (state %s)\n", board_name(b), board_state_name(board_get_state(b)));
	boot_watch_start(c);
	next_step(c);
}

static int do_boot(struct bctx *c, const char *kernel_name, const char *mode, const char *cmdline,
		   const char *tdir)
{
	const struct kernel_cfg *k = NULL;
	if (kernel_name) {
		k = config_kernel(c->lab, kernel_name);
		if (!k) {
			fprintf(stderr, "emmclab: no kernel '%s' in the lab\n", kernel_name);
			return 2;
		}
	} else if (c->lab->nkernels) {
		k = &c->lab->kernels[0];
	}
	const struct board_cfg *bc = board_cfg(c->b);
	struct lab_buf extra;
	lab_buf_init(&extra, 8192);
	if (mode) {
		int m = lab_mode_parse(mode);
		if (m < 0) {
			char modes[256];
			lab_mode_list(modes, sizeof modes, ", ");
			fprintf(stderr, "emmclab: unknown mode '%s' (%s)\n", mode, modes);
			lab_buf_free(&extra);
			return 2;
		}
		if (bc->type && !bc->type->modes[m].supported)
			fprintf(stderr, "emmclab: warning: mode %s is not supported by type %s\n", mode,
				bc->type->name);
		if (bc->type && bc->type->modes[m].cmdline)
			lab_buf_printf(&extra, "%s", bc->type->modes[m].cmdline);
	}
	if (cmdline)
		lab_buf_printf(&extra, "%s%s", extra.len ? " " : "", cmdline);
	int rc = board_boot(c->b, k, lab_buf_cstr(&extra), tdir, on_booted, c);
	lab_buf_free(&extra);
	if (rc) {
		fprintf(stderr, "emmclab: %s: cannot boot: %s\n", board_name(c->b), lab_strerror(rc));
		return lab_exit_code(rc);
	}
	run_until_done(c);
	boot_watch_stop(c);
	if (c->powered_off) {
		bool more = c->run_i < c->nruns || c->agent_args;
		fprintf(stderr, "emmclab: %s: the board powered itself off during %s%s%s%s\n",
			board_name(c->b), c->run_i ? "`" : "the agent", c->run_i ? c->runs[c->run_i - 1] : "",
			c->run_i ? "`" : "", more ? "; the remaining steps were not run" : "");
		return more ? 1 : c->exit_code;
	}
	if (c->rc) {
		if (c->msg[0])
			fprintf(stderr, "emmclab: %s: boot failed (%s): %s\n", board_name(c->b),
				board_fail_name(c->fail), c->msg);
		return lab_exit_code(c->rc);
	}
	return c->exit_code;
}

/* ---- interactive console ---- */

static void restore_tty(struct bctx *c)
{
	if (c->raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &c->saved);
		c->raw = false;
	}
}

static void on_tap(struct board *b, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(arg);
	/* the CLI owns stdout; a terminal keeps up with a UART */
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

static void on_stdin(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(ev);
	struct bctx *c = arg;
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		loop_fd_del(l, fd);
		c->done = true;
		return;
	}
	char *esc = memchr(buf, ESCAPE_KEY, (size_t)n);
	size_t len = esc ? (size_t)(esc - buf) : (size_t)n;
	if (len && console_write(board_console(c->b), buf, len) != LAB_OK)
		fprintf(stderr, "\r\nemmclab: console write queue full\r\n");
	if (esc) {
		loop_fd_del(l, fd);
		c->done = true;
	}
}

static void on_stdin_eof_grace(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct bctx *c = arg;
	c->done = true;
}

static int do_console(struct bctx *c, const char *tdir)
{
	struct lab_err e = {0};
	if (board_console_open(c->b, tdir, &e))
		return cli_error(&e);
	board_set_tap(c->b, on_tap, c);
	bool tty = isatty(STDIN_FILENO);
	if (tty && tcgetattr(STDIN_FILENO, &c->saved) == 0) {
		struct termios raw = c->saved;
		cfmakeraw(&raw);
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
			c->raw = true;
	}
	if (!c->cli->quiet)
		fprintf(stderr, "%s: console open; Ctrl-] leaves%s\r\n", board_name(c->b),
			tty ? "" : " (stdin is not a terminal: until EOF)");
	/* O_NONBLOCK is on the open file description, shared with our parent's
	 * terminal: put the old flags back on the way out */
	int fl = fcntl(STDIN_FILENO, F_GETFL);
	lab_fd_nonblock(STDIN_FILENO);
	if (loop_fd_add(c->l, STDIN_FILENO, LOOP_READ, on_stdin, c) != 0) {
		if (fl >= 0)
			fcntl(STDIN_FILENO, F_SETFL, fl);
		restore_tty(c);
		fprintf(stderr, "emmclab: cannot watch stdin\n");
		return 3;
	}
	run_until_done(c);
	/* stdin ended: give output already on its way a moment, then leave */
	struct loop_timer grace;
	loop_timer_init(&grace, on_stdin_eof_grace, c);
	c->done = false;
	if (!tty) {
		loop_timer_start(c->l, &grace, 500);
		run_until_done(c);
	}
	loop_timer_stop(c->l, &grace);
	if (loop_fd_watched(c->l, STDIN_FILENO))
		loop_fd_del(c->l, STDIN_FILENO);
	if (fl >= 0)
		fcntl(STDIN_FILENO, F_SETFL, fl);
	restore_tty(c);
	board_set_tap(c->b, NULL, NULL);
	if (!c->cli->quiet)
		fprintf(stderr, "\n%s: console closed\n", board_name(c->b));
	return 0;
}

/* ---- entry ---- */

int cmd_board(struct cli *cli, int argc, char **argv)
{
	const char *lab_path = NULL, *kernel = NULL, *mode = NULL, *cmdline = NULL, *agent = NULL;
	const char *tdir = NULL, *db = NULL;
	bool explain = false;
	bool leave_on = false;
	char **runs = NULL;
	size_t nruns = 0;
	struct cli_getopt g;
	int opt;
	cli_getopt_init(&g, "board");
	/* GNU getopt permutes: options may come before or after NAME VERB */
	while ((opt = cli_getopt(&g, argc, argv)) != -1) {
		switch (opt) {
		case OPT_LAB: lab_path = optarg; break;
		case OPT_KERNEL: kernel = optarg; break;
		case OPT_MODE: mode = optarg; break;
		case OPT_CMDLINE: cmdline = optarg; break;
		case OPT_AGENT: agent = optarg; break;
		case OPT_TDIR: tdir = optarg; break;
		case OPT_DB: db = optarg; break;
		case OPT_EXPLAIN: explain = true; break;
		case OPT_LEAVE_ON: leave_on = true; break;
		case OPT_RUN:
			runs = xreallocarray(runs, nruns + 1, sizeof *runs);
			runs[nruns++] = optarg;
			break;
		default:
			free(runs);
			return cli_getopt_fail(&g);
		}
	}
	char *pos[4];
	int npos = 0;
	while (optind < argc) {
		if (npos >= 4) {
			free(runs);
			return cli_usage("board");
		}
		pos[npos++] = argv[optind++];
	}
	if (npos == 1 && strcmp(pos[0], "list-usb") == 0) {
		free(runs);
		struct lab_err e = {0};
		int rc = board_list_usb(stdout, &e);
		return rc ? cli_error(&e) : 0;
	}
	if (npos < 2) {
		free(runs);
		return cli_usage("board");
	}
	const char *name = pos[0], *verb = pos[1];
	if (strcmp(verb, "release") == 0 && npos == 2) {
		/* Quarantine holds across runs until an operator releases the board. */
		free(runs);
		struct lab_err re = {0};
		struct store *st = NULL;
		if (store_open(store_default_path(db), 0, &st, &re))
			return cli_error(&re);
		int64_t bid = 0;
		int rc = store_board_upsert(st, name, NULL, NULL, NULL, &bid, &re);
		if (!rc)
			rc = store_event(st, 0, 0, bid, "unquarantine", NULL,
					 "released by the operator (emmclab board release)", &re);
		store_close(st);
		if (rc)
			return cli_error(&re);
		printf("%s: released from quarantine\n", name);
		return 0;
	}
	bool is_power = strcmp(verb, "power") == 0, is_console = strcmp(verb, "console") == 0,
	     is_boot = strcmp(verb, "boot") == 0;
	if ((!is_power && !is_console && !is_boot) || (is_power && npos != 3) ||
	    (!is_power && npos != 2) || (!is_boot && (nruns || agent || mode || kernel || cmdline || leave_on))) {
		free(runs);
		return cli_usage("board");
	}
	if (!lab_path)
		lab_path = default_lab();
	if (!lab_path) {
		free(runs);
		fprintf(stderr, "emmclab: no lab file: use --lab FILE or set EMMCLAB_LAB\n");
		return 2;
	}
	struct lab_err e = {0};
	struct lab_cfg *lab = NULL;
	const char *paths[] = {lab_path};
	if (config_load(paths, 1, &lab, &e)) {
		free(runs);
		return cli_error(&e);
	}
	const struct board_cfg *bc = config_board(lab, name);
	if (!bc) {
		fprintf(stderr, "emmclab: no board '%s' in %s\n", name, lab_path);
		config_free(lab);
		free(runs);
		return 2;
	}
	/* One process drives a board at a time: boot (which deploys, i.e.
	 * flashes) takes the board's lock as a run does; console and power share
	 * it with each other (watch the console, cycle power from another shell),
	 * never with a run or a boot. */
	struct lab_lock *lk = NULL;
	char *ldir = lock_dir(lab->locks, &e);
	if (!ldir || (is_boot ? lock_take(ldir, name, &lk, NULL, &e)
			      : lock_take_shared(ldir, name, &lk, NULL, &e))) {
		free(ldir);
		fprintf(stderr, "emmclab: %s\n", e.msg);
		config_free(lab);
		free(runs);
		return 3;
	}
	free(ldir);
	struct bctx c = {.cli = cli, .lab = lab, .runs = runs, .nruns = nruns, .agent_args = agent};
	if (is_boot)
		boot_agent_policy(lab, bc, agent != NULL);
	c.l = loop_new();
	static const struct board_events ev = {.state = on_state, .event = on_event,
					       .transcript = on_transcript};
	int code;
	if (board_new(c.l, lab, bc, &ev, &c, &c.b, &e)) {
		code = cli_error(&e);
		goto out;
	}
	if (explain)
		board_set_trace(c.b, on_trace, &c);
	loop_signal(c.l, SIGINT, on_sigint, &c);
	loop_signal(c.l, SIGTERM, on_sigint, &c);
	if (is_power)
		code = do_power(&c, pos[2]);
	else if (is_console)
		code = do_console(&c, tdir);
	else
		code = do_boot(&c, kernel, mode, cmdline, tdir);
	if (c.msg[0] && strcmp(c.msg, "interrupted") == 0) {
		fprintf(stderr, "emmclab: interrupted\n");
		code = 3;
	}
	if (is_boot) {
		int off = boot_power_off(&c, leave_on);
		if (code == 0)
			code = off;
	}
	board_free(c.b);
	/* Let what the drivers started finish before the loop goes: power
	 * commands, an exec console's child (SIGTERM, SIGKILL after its grace).
	 * A few zero-wait passes were not enough on a loaded machine: the child
	 * was left unreaped and its reaper leaked.  Bounded, so a leftover watch
	 * cannot hang the command. */
	uint64_t drain_end = loop_now_ms(c.l) + 5000;
	while (!loop_idle(c.l) && loop_now_ms(c.l) < drain_end)
		if (loop_run_once(c.l, 100) < 0)
			break;
out:
	restore_tty(&c);
	loop_free(c.l);
	lock_release(lk);
	config_free(lab);
	free(runs);
	return code;
}
