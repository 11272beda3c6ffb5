/* exec and manual power drivers: commands without a shell, state parsing, emulated cycle,
 * timeouts that kill the whole process group, no zombies; the operator prompt on a pty. */
#include "loop.h"
#include "power.h"
#include "power_testlib.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern const struct power_driver power_exec, power_manual;

static struct loop *L;
static char dir[] = "/tmp/emmclab-pexec-XXXXXX";
static char logpath[300];

static struct power *mk(const char *yaml)
{
	struct lab_err e = {0};
	struct power *p = power_from_yaml(L, "dut1", yaml, &e);
	if (!p)
		printf("# power_new failed: %s\n", e.msg);
	return p;
}

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	if (lab_read_file(path, 65536, &t, &n, NULL) != LAB_OK)
		return xstrdup("");
	return t;
}

static void test_exec_basic(void)
{
	char yaml[2048];
	/* sh -c is the test's choice: the driver itself never uses a shell. */
	snprintf(yaml, sizeof yaml,
		 "{driver: exec, off_time: 300ms, timeout: 5s,"
		 " on: [sh, -c, 'echo on $0 >> %s', '{board}'],"
		 " off: [sh, -c, 'echo off $0 >> %s', '{board}'],"
		 " state: [sh, -c, 'tail -n1 %s | cut -d\" \" -f1']}",
		 logpath, logpath, logpath);
	struct power *p = mk(yaml);
	ok(p != NULL, "exec power from YAML");
	if (!p)
		return;
	struct op_res r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "exec on (%s)", r.msg);
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "state command printed 'on' (%s)", r.msg);
	r = run_op(L, p, POWER_CYCLE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON && r.ms >= 290,
	   "cycle without a cycle command: off, off_time, on (%llu ms, %s)", (unsigned long long)r.ms,
	   r.msg);
	r = run_op(L, p, POWER_OFF, 5000);
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "state command printed 'off'");
	char *t = slurp(logpath);
	is_str(t, "on dut1\noff dut1\non dut1\noff dut1\n", "commands ran in order with {board}");
	free(t);
	power_free(p);

	/* Exit status as state; a failing command with its stderr in the message. */
	p = mk("{driver: exec, timeout: 5s, on: [sh, -c, 'echo relay 7 not found >&2; exit 3'],"
	       " off: ['true'], cycle: ['true'], state: [sh, -c, 'exit 1']}");
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "silent state command exiting 1 means off");
	r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "exec power of dut1") &&
	   strstr(r.msg, "exited with 3: relay 7 not found"), "failure message: %s", r.msg);
	/* off + on would fail here (the on command exits 3): success means the cycle
	 * command ran.  Not a time bound: `true` took 566 ms in an ASan suite at -j2. */
	r = run_op(L, p, POWER_CYCLE, 5000);
	ok(r.rc == LAB_OK, "cycle command used when given (%llu ms, %s)", (unsigned long long)r.ms, r.msg);
	power_free(p);

	p = mk("{driver: exec, timeout: 5s, on: [/nonexistent/relayctl, on], off: ['true'],"
	       " state: [echo, maybe]}");
	r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc != LAB_OK && strstr(r.msg, "/nonexistent/relayctl"), "missing program: %s", r.msg);
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_EPROTO && strstr(r.msg, "maybe"), "state output neither on nor off: %s", r.msg);
	power_free(p);

	p = mk("{driver: exec, timeout: 5s, on: ['true'], off: ['true']}");
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_EUSAGE && strstr(r.msg, "no 'state' command"), "no state command: %s", r.msg);
	power_free(p);

	struct lab_err e = {0};
	ok(power_from_yaml(L, "dut1", "{driver: exec, on: [relay, '{bord}'], off: ['true']}", &e) == NULL &&
	   strstr(e.msg, "{bord}"), "unknown placeholder refused: %s", e.msg);
	lab_err_clear(&e);
	ok(power_from_yaml(L, "dut1", "{driver: exec, on: ['true']}", &e) == NULL, "off is required: %s",
	   e.msg);
}

static bool gone(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	/* A zombie of PID 1 (containers without an init that reaps) counts as dead. */
	char path[64], *t;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	t = slurp(path);
	char *rp = strrchr(t, ')');
	bool z = !t[0] || (rp && rp[1] == ' ' && rp[2] == 'Z');
	free(t);
	return z;
}

static void test_exec_timeout(void)
{
	char yaml[1024], pids[300];
	snprintf(pids, sizeof pids, "%s/pids", dir);
	/* A wrapper with a child and a grandchild, all hanging. */
	snprintf(yaml, sizeof yaml,
		 "{driver: exec, timeout: 500ms, off: ['true'],"
		 " on: [sh, -c, 'sleep 60 & (sleep 61 & echo $! >> %s; wait) & echo $$ $! >> %s; wait']}",
		 pids, pids);
	struct power *p = mk(yaml);
	struct op_res r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_ETIMEOUT && r.ms >= 480 && r.ms < 1500, "hanging command times out (%llu ms): %s",
	   (unsigned long long)r.ms, r.msg);
	/* Let the loop reap what was killed. */
	for (int i = 0; i < 20; i++)
		loop_run_once(L, 20);
	char *t = slurp(pids);
	int v[4] = {0}, n = 0;
	for (char *s = t, *end; n < 4 && *s; s = end) {
		long x = strtol(s, &end, 10);
		if (end == s) {
			end++;
			continue;
		}
		v[n++] = (int)x;
	}
	free(t);
	ok(n >= 3, "the command recorded its pids (%d)", n);
	int dead = 0;
	for (int i = 0; i < n; i++)
		dead += gone(v[i]);
	is_int(dead, n, "the whole process group was killed");
	ok(n > 0 && waitpid(v[n > 1 ? 1 : 0], NULL, WNOHANG) < 0, "killed command reaped (no zombie child)");
	power_free(p);
}

/* ---- manual: the child process gets a pty as its controlling terminal ---- */

static int manual_child(const char *slave, const char *answer_kind)
{
	LAB_UNUSED(answer_kind);
	setsid();
	int fd = open(slave, O_RDWR); /* first tty opened after setsid: the controlling one */
	if (fd < 0)
		return 10;
	struct loop *l = loop_new();
	struct lab_err e = {0};
	struct power *p = power_from_yaml(l, "dut5", "{driver: manual, timeout: 10s, off_time: 0}", &e);
	if (!p)
		return 11;
	struct op_res r = run_op(l, p, POWER_ON, 10000);
	int code = r.rc == LAB_OK && r.state == POWER_IS_ON ? 0 : 12;
	if (!code) {
		r = run_op(l, p, POWER_OFF, 10000);
		code = r.rc == LAB_EINFRA && strstr(r.msg, "operator reported") ? 0 : 13;
	}
	power_free(p);
	loop_free(l);
	return code;
}

static bool wait_for(int mfd, const char *want, char *seen, size_t seensz)
{
	size_t n = strlen(seen);
	for (int i = 0; i < 100 && !strstr(seen, want); i++) {
		struct pollfd pfd = {.fd = mfd, .events = POLLIN};
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t r = read(mfd, seen + n, seensz - 1 - n);
		if (r > 0)
			n += (size_t)r;
		seen[n] = '\0';
	}
	return strstr(seen, want) != NULL;
}

static void test_manual(void)
{
	int mfd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ok(mfd >= 0 && grantpt(mfd) == 0 && unlockpt(mfd) == 0, "pty for the operator");
	char slave[128];
	lab_strlcpy(slave, ptsname(mfd), sizeof slave);
	pid_t pid = fork();
	if (pid == 0)
		_exit(manual_child(slave, "enter"));
	char seen[4096] = "";
	ok(wait_for(mfd, "switch on the power of board dut5", seen, sizeof seen),
	   "prompt shown on the terminal");
	ok(write(mfd, "\r", 1) == 1, "operator presses Enter");
	ok(wait_for(mfd, "switch off the power of board dut5", seen, sizeof seen), "second prompt");
	ok(write(mfd, "what?\r", 6) == 6, "operator types nonsense");
	ok(wait_for(mfd, "Press Enter when done", seen, sizeof seen), "asked again");
	ok(write(mfd, "fail\r", 5) == 5, "operator reports failure");
	int st = -1;
	for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
		poll(NULL, 0, 50);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "on confirmed, off refused by the operator (child %d)",
	   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(mfd);

	/* No controlling terminal: immediate, clear error. */
	pid = fork();
	if (pid == 0) {
		setsid();
		struct loop *l = loop_new();
		struct power *p = power_from_yaml(l, "dut5", "{driver: manual, timeout: 10s}", NULL);
		struct op_res r = run_op(l, p, POWER_ON, 10000);
		_exit(r.rc == LAB_EINFRA && strstr(r.msg, "no controlling terminal") && r.ms < 1000 ? 0 : 1);
	}
	for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
		poll(NULL, 0, 50);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "non-interactive run: manual power fails at once");
}

int main(void)
{
	ok(power_driver_find("exec") == &power_exec && power_driver_find("manual") == &power_manual,
	   "exec and manual drivers registered");
	if (!mkdtemp(dir))
		return 1;
	snprintf(logpath, sizeof logpath, "%s/log", dir);
	L = loop_new();
	test_exec_basic();
	test_exec_timeout();
	loop_free(L);
	test_manual();
	char cmd[400];
	snprintf(cmd, sizeof cmd, "%s/pids", dir);
	unlink(cmd);
	unlink(logpath);
	rmdir(dir);
	return tap_done();
}
