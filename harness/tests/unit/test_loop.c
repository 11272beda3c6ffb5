/* Event loop: timer ordering, cancellation, fd readiness under load, children, signals, defer. */
#include "loop.h"
#include "tap.h"
#include "util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

static int order[32], norder;

struct tdata {
	struct loop_timer t;
	int id;
};

static void on_t(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct tdata *d = arg;
	order[norder++] = d->id;
}

static void test_timer_order(void)
{
	struct loop *l = loop_new();
	struct tdata d[6];
	uint64_t delays[6] = {30, 10, 20, 10, 0, 50};
	norder = 0;
	/* before arming: a pause between arming and t0 (a loaded machine) must not
	 * make the 30 ms wait look short */
	uint64_t t0 = lab_now_ms();
	for (int i = 0; i < 6; i++) {
		d[i].id = i;
		loop_timer_init(&d[i].t, on_t, &d[i]);
		loop_timer_start(l, &d[i].t, delays[i]);
	}
	loop_timer_stop(l, &d[5].t); /* cancelled: never fires */
	ok(!loop_timer_pending(&d[5].t), "stopped timer not pending");
	loop_run(l);
	uint64_t el = lab_now_ms() - t0;
	is_int(norder, 5, "five timers fired");
	int want[5] = {4, 1, 3, 2, 0}; /* by deadline, FIFO among equal deadlines */
	int same = 1;
	for (int i = 0; i < 5; i++)
		same &= order[i] == want[i];
	ok(same, "timers fire in deadline order, FIFO for ties (%d %d %d %d %d)", order[0], order[1],
	   order[2], order[3], order[4]);
	ok(el >= 30 && el < 1000, "loop waited for the last timer (%llu ms)", (unsigned long long)el);
	loop_free(l);
}

/* A timer that rearms itself must not starve fds or loop forever in one pass. */
struct rearm {
	struct loop_timer t;
	int count;
};
static void on_rearm(struct loop *l, struct loop_timer *t, void *arg)
{
	struct rearm *r = arg;
	if (++r->count < 100)
		loop_timer_start(l, t, 0);
}

static void test_rearm(void)
{
	struct loop *l = loop_new();
	struct rearm r = {.count = 0};
	loop_timer_init(&r.t, on_rearm, &r);
	loop_timer_start(l, &r.t, 0);
	loop_run_once(l, 0);
	is_int(r.count, 1, "a zero-delay rearm runs on the next pass, not the same one");
	loop_run(l);
	is_int(r.count, 100, "rearmed timer ran 100 times");
	loop_free(l);
}

#define NPIPES 200
struct pipe_ctx {
	int rfd, wfd;
	int got;
	long bytes;
};
static int pipes_done;
static void on_read(struct loop *l, int fd, unsigned ev, void *arg)
{
	struct pipe_ctx *p = arg;
	char buf[4096];
	LAB_UNUSED(ev);
	ssize_t r = read(fd, buf, sizeof buf);
	if (r > 0) {
		p->bytes += r;
		return;
	}
	/* EOF */
	loop_fd_del(l, fd);
	close(fd);
	p->got = 1;
	if (++pipes_done == NPIPES)
		loop_stop(l);
}

static void test_fd_load(void)
{
	struct loop *l = loop_new();
	static struct pipe_ctx p[NPIPES];
	pipes_done = 0;
	for (int i = 0; i < NPIPES; i++) {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC) < 0)
			abort();
		p[i].rfd = fds[0];
		p[i].wfd = fds[1];
		p[i].got = 0;
		p[i].bytes = 0;
		lab_fd_nonblock(fds[0]);
		loop_fd_add(l, fds[0], LOOP_READ, on_read, &p[i]);
	}
	char blob[1000];
	memset(blob, 'x', sizeof blob);
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < NPIPES; i++)
			if (write(p[i].wfd, blob, sizeof blob) != (ssize_t)sizeof blob)
				abort();
	for (int i = 0; i < NPIPES; i++)
		close(p[i].wfd);
	loop_run(l);
	int all = 1;
	for (int i = 0; i < NPIPES; i++)
		all &= p[i].got && p[i].bytes == 10000;
	ok(all, "%d pipes all read to EOF with every byte", NPIPES);
	loop_free(l);
}

struct child_ctx {
	int status;
	pid_t pid;
	int fired;
};
static void on_child(struct loop *l, pid_t pid, int st, void *arg)
{
	LAB_UNUSED(l);
	struct child_ctx *c = arg;
	c->fired = 1;
	c->pid = pid;
	c->status = st;
}

static void test_child(void)
{
	struct loop *l = loop_new();
	char *argv[] = {"sh", "-c", "exit 7", NULL};
	pid_t pid = lab_spawn(argv, NULL, -1, -1, -1);
	ok(pid > 0, "spawned a child");
	struct child_ctx c = {0};
	ok(loop_idle(l), "a new loop is idle");
	loop_child_watch(l, pid, on_child, &c);
	ok(!loop_idle(l), "a watched child keeps the loop busy");
	loop_run(l);
	ok(loop_idle(l), "idle again once the child is reaped");
	ok(c.fired && c.pid == pid, "child exit delivered");
	ok(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 7, "exit status 7 reported");
	ok(waitpid(pid, NULL, WNOHANG) < 0, "child already reaped (no zombie)");
	loop_free(l);
}

static int got_sig;
static void on_sig(struct loop *l, int signo, void *arg)
{
	LAB_UNUSED(arg);
	got_sig = signo;
	loop_stop(l);
}

static void test_signal(void)
{
	struct loop *l = loop_new();
	loop_signal(l, SIGTERM, on_sig, NULL);
	ok(loop_idle(l), "a signal handler alone does not keep the loop busy");
	kill(getpid(), SIGTERM);
	struct loop_timer guard;
	loop_timer_init(&guard, on_t, &(struct tdata){.id = 99});
	loop_timer_start(l, &guard, 2000);
	loop_run(l);
	is_int(got_sig, SIGTERM, "SIGTERM delivered as a loop event");
	loop_signal(l, SIGTERM, NULL, NULL);
	loop_free(l);
}

static int deferred;
static void on_defer(void *arg)
{
	deferred += *(int *)arg;
}

static void test_defer(void)
{
	struct loop *l = loop_new();
	int v = 5;
	loop_defer(l, on_defer, &v);
	is_int(deferred, 0, "defer does not run immediately");
	loop_run_once(l, 0);
	is_int(deferred, 5, "deferred call ran on the next pass");
	loop_free(l);
}

int main(void)
{
	test_timer_order();
	test_rearm();
	test_fd_load();
	test_child();
	test_signal();
	test_defer();
	return tap_done();
}
