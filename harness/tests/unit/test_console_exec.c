/* exec console: child stdio over a socketpair and over a pty, respawn on exit, Ctrl-C as
 * SIGINT through the pty, kill on close (SIGTERM, then SIGKILL), spawn errors. */
#include "console.h"
#include "tap.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctx {
	char rx[16384];
	size_t rxn;
	int ups, downs;
	char msg[300];
};

static void on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct ctx *x = arg;
	if (x->rxn + n < sizeof x->rx - 1) {
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
	lab_strlcpy(x->msg, msg, sizeof x->msg);
}

static const struct console_events events = {.data = on_data, .state = on_state};

static struct console *mk(struct loop *l, const char *yaml, struct ctx *x)
{
	struct cfg_node *n = NULL;
	struct console *c = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("t.yaml", yaml, strlen(yaml), &n, &e) == LAB_OK)
		console_new(l, "dut", n, &events, x, &c, &e);
	if (!c)
		fprintf(stderr, "# console_new: %s\n", e.msg);
	cfg_free(n);
	return c;
}

static bool wait_for(struct loop *l, struct ctx *x, const char *s, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (!strstr(x->rx, s) && lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
	return strstr(x->rx, s) != NULL;
}

static pid_t read_pid(const char *path)
{
	char *s = NULL;
	struct lab_err e = {0};
	int64_t v = -1;
	if (lab_read_file(path, 64, &s, NULL, &e) == LAB_OK) {
		s[strcspn(s, "\n")] = '\0';
		lab_parse_i64(s, &v);
	}
	free(s);
	return (pid_t)v;
}

static bool gone_within(struct loop *l, pid_t pid, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (lab_now_ms() - t0 < ms) {
		loop_run_once(l, 10);
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
	}
	return false;
}

int main(void)
{
	struct loop *l = loop_new();
	struct lab_err e = {0};
	char dir[] = "/tmp/emmclab-exec-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char yaml[1024];

	/* socketpair stdio, respawn after exit */
	struct ctx x = {0};
	struct console *c = mk(l,
			       "driver: exec\nreconnect_delay: 50ms\ncommand: [sh, -c, "
			       "'echo ready; read l; echo \"got:$l\"; echo err >&2']\n",
			       &x);
	ok(c != NULL, "exec console");
	is_int(console_open(c, &e), LAB_OK, "spawned");
	ok(wait_for(l, &x, "ready\n", 2000), "child stdout arrives");
	console_write_str(c, "abc\n");
	ok(wait_for(l, &x, "got:abc\nerr\n", 2000), "stdin reaches the child, stderr comes too");
	uint64_t t0 = lab_now_ms();
	while (x.ups < 2 && lab_now_ms() - t0 < 2000)
		loop_run_once(l, 5);
	ok(x.downs >= 1, "exit seen as loss: %s", x.msg);
	is_int(x.ups, 2, "command started again after reconnect_delay");
	console_free(c);

	/* pty: a terminal, Ctrl-C is SIGINT */
	struct ctx y = {0};
	c = mk(l,
	       "driver: exec\npty: true\ncommand: [sh, -c, "
	       "'trap \"echo caught-INT; exit 0\" INT; tty; echo armed; while :; do sleep 0.05; done']\n",
	       &y);
	is_int(console_open(c, &e), LAB_OK, "pty child spawned");
	ok(wait_for(l, &y, "armed", 3000), "child runs");
	ok(strstr(y.rx, "/dev/pts/") != NULL, "child's stdin is a pty");
	ok(strstr(y.rx, "armed\r\n") != NULL, "sane terminal: NL written as CR NL");
	console_write(c, "\x03", 1);
	ok(wait_for(l, &y, "caught-INT", 3000), "Ctrl-C typed on the console interrupts the child");
	console_free(c);

	/* close kills: a child that ignores SIGTERM gets SIGKILL */
	char pidf[300];
	snprintf(pidf, sizeof pidf, "%s/pid", dir);
	snprintf(yaml, sizeof yaml,
		 "driver: exec\ncommand: [sh, -c, 'trap \"\" TERM; echo $$ > %s; echo up; "
		 "while :; do sleep 0.05; done']\n",
		 pidf);
	struct ctx z = {0};
	c = mk(l, yaml, &z);
	console_open(c, &e);
	ok(wait_for(l, &z, "up", 3000), "stubborn child up");
	pid_t pid = read_pid(pidf);
	ok(pid > 0 && kill(pid, 0) == 0, "child %d alive", (int)pid);
	uint64_t tk = lab_now_ms();
	console_close(c);
	ok(gone_within(l, pid, 4000), "killed and reaped after close");
	uint64_t dk = lab_now_ms() - tk;
	ok(dk >= 1500, "SIGKILL only after the grace period (%llu ms)", (unsigned long long)dk);
	console_free(c);

	/* a well-behaved child goes at once */
	snprintf(yaml, sizeof yaml,
		 "driver: exec\npty: true\ncommand: [sh, -c, 'echo $$ > %s; echo up; exec sleep 100']\n",
		 pidf);
	struct ctx w = {0};
	c = mk(l, yaml, &w);
	console_open(c, &e);
	ok(wait_for(l, &w, "up", 3000), "child up");
	pid = read_pid(pidf);
	tk = lab_now_ms();
	console_free(c);
	ok(gone_within(l, pid, 2000), "SIGTERM on free");
	ok(lab_now_ms() - tk < 1000, "quickly");

	/* spawn errors */
	struct ctx v = {0};
	c = mk(l, "driver: exec\ncommand: [/nonexistent/qemu]\n", &v);
	lab_err_clear(&e);
	ok(console_open(c, &e) != LAB_OK && strstr(e.msg, "/nonexistent/qemu"),
	   "missing program: %s", e.msg);
	console_free(c);

	loop_free(l);
	unlink(pidf);
	rmdir(dir);
	return tap_done();
}
