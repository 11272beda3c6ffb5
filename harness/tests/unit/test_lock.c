/* test_lock.c - board locks: exclusive, non-blocking, the holder named, free
 * when the holder dies; a process recognised by pid + start time + boot id. */
#include "tap.h"
#include "lock.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/emmclab-test-lock.XXXXXX";

/* A child that takes the lock, reports on a pipe, then waits to be killed. */
static pid_t hold_in_child(const char *name)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct lab_lock *l;
		struct lab_err e = {0};
		char c = lock_take(dir, name, &l, NULL, &e) == LAB_OK ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	char c = 0;
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 'y')
		pid = -1;
	close(p[0]);
	return pid;
}

static void test_exclusive(void)
{
	struct lab_lock *a = NULL, *b = NULL;
	struct lab_err e = {0};
	is_int(lock_take(dir, "b5", &a, NULL, &e), LAB_OK, "first lock taken");
	/* flock is per open file: a second take, even in this process, is refused */
	struct lock_holder h;
	e = (struct lab_err){0};
	is_int(lock_take(dir, "b5", &b, &h, &e), LAB_EINFRA, "second lock refused at once");
	ok(b == NULL, "no lock handed out");
	is_int(h.proc.pid, getpid(), "holder pid named");
	ok(strstr(e.msg, "board b5 is in use by pid") != NULL, "message names the holder: %s", e.msg);
	ok(strstr(e.msg, "test_lock") != NULL, "message names the command: %s", e.msg);
	ok(h.since[0] == '2', "since recorded (%s)", h.since);
	struct lock_holder r;
	is_int(lock_read_holder(dir, "b5", &r, &e), LAB_OK, "holder readable by anyone");
	is_int(r.proc.pid, getpid(), "record pid");
	ok(lock_proc_alive(&r.proc), "the holder is alive");
	lock_release(a);
	e = (struct lab_err){0};
	is_int(lock_take(dir, "b5", &b, NULL, &e), LAB_OK, "free again after release");
	lock_release(b);
	/* other boards are independent */
	struct lab_lock *c = NULL, *d = NULL;
	is_int(lock_take(dir, "b5", &c, NULL, &e), LAB_OK, "b5");
	is_int(lock_take(dir, "bsprd", &d, NULL, &e), LAB_OK, "bsprd at the same time");
	lock_release(c);
	lock_release(d);
}

static void test_shared(void)
{
	struct lab_lock *a = NULL, *b = NULL, *x = NULL;
	struct lab_err e = {0};
	is_int(lock_take_shared(dir, "s1", &a, NULL, &e), LAB_OK, "shared (a console)");
	is_int(lock_take_shared(dir, "s1", &b, NULL, &e), LAB_OK, "shared again (a power command)");
	e = (struct lab_err){0};
	is_int(lock_take(dir, "s1", &x, NULL, &e), LAB_EINFRA, "exclusive (a run) refused meanwhile");
	ok(strstr(e.msg, "in use by pid") != NULL, "holder named: %s", e.msg);
	lock_release(a);
	lock_release(b);
	is_int(lock_take(dir, "s1", &x, NULL, &e), LAB_OK, "exclusive once they are gone");
	e = (struct lab_err){0};
	is_int(lock_take_shared(dir, "s1", &a, NULL, &e), LAB_EINFRA, "shared refused under a run");
	lock_release(x);
}

static void test_dead_holder(void)
{
	pid_t pid = hold_in_child("dut/1");
	ok(pid > 0, "child holds the lock");
	struct lab_lock *l = NULL;
	struct lock_holder h;
	struct lab_err e = {0};
	is_int(lock_take(dir, "dut/1", &l, &h, &e), LAB_EINFRA, "held by the child");
	is_int(h.proc.pid, pid, "the child is named");
	ok(lock_proc_alive(&h.proc), "child alive");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ok(!lock_proc_alive(&h.proc), "child recognised as dead");
	e = (struct lab_err){0};
	is_int(lock_take(dir, "dut/1", &l, NULL, &e), LAB_OK,
	       "a dead holder's lock is free, no clean-up needed");
	lock_release(l);
	char *p = lock_path(dir, "dut/1");
	ok(strstr(p, "/dut_1.lock") != NULL, "name made a file name (%s)", p);
	free(p);
}

static void test_proc(void)
{
	struct lock_proc me;
	lock_proc_self(&me);
	ok(me.start > 0, "start time read");
	ok(strlen(me.boot_id) == 36, "boot id read (%s)", me.boot_id);
	ok(lock_proc_alive(&me), "self alive");
	struct lock_proc x = me;
	x.start++;
	ok(!lock_proc_alive(&x), "same pid, other start time: a reused pid, dead");
	x = me;
	x.boot_id[0] = x.boot_id[0] == 'a' ? 'b' : 'a';
	ok(!lock_proc_alive(&x), "same pid, other boot: the host rebooted, dead");
	x = me;
	x.start = 0;
	x.boot_id[0] = '\0';
	ok(lock_proc_alive(&x), "pid only (an old record): judged by the pid");
	x.pid = 0;
	ok(!lock_proc_alive(&x), "no pid: dead");
}

static void test_dir(void)
{
	struct lab_err e = {0};
	char *sub = xasprintf("%s/a/b", dir);
	setenv("EMMCLAB_LOCKS", sub, 1);
	char *d = lock_dir("/nonexistent-lab-locks", &e);
	is_str(d, sub, "$EMMCLAB_LOCKS first, created");
	free(d);
	unsetenv("EMMCLAB_LOCKS");
	d = lock_dir(sub, &e);
	is_str(d, sub, "the lab's locks: next");
	free(d);
	e = (struct lab_err){0};
	d = lock_dir("/proc/emmclab-locks", &e);
	ok(d == NULL && strstr(e.msg, "/proc/emmclab-locks"), "an unusable directory is an error: %s",
	   e.msg);
	free(d);
	free(sub);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 77;
	test_exclusive();
	test_shared();
	test_dead_holder();
	test_proc();
	test_dir();
	char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ok(0, "clean-up");
	free(cmd);
	return tap_done();
}
