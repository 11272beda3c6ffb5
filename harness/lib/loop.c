/* loop.c - see loop.h.  epoll for fds, a binary heap for timers, signalfd for signals. */
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define NOT_PENDING ((size_t)-1)

struct fd_watch {
	bool used;
	unsigned events;
	loop_fd_cb cb;
	void *arg;
	uint64_t gen; /* bumped on del/add so stale epoll events are dropped */
};

struct child_watch {
	pid_t pid;
	loop_child_cb cb;
	void *arg;
};

struct sig_watch {
	loop_signal_cb cb;
	void *arg;
};

struct deferred {
	loop_defer_cb fn;
	void *arg;
};

struct loop {
	int epfd;
	int sigfd;
	sigset_t sigmask;
	sigset_t oldmask;
	struct fd_watch *fds;
	size_t nfds;
	size_t nwatched;
	struct loop_timer **heap;
	size_t nheap, capheap;
	uint64_t timer_seq;
	struct child_watch *children;
	size_t nchildren, capchildren;
	struct sig_watch sigs[65];
	bool stopped;
	struct deferred *defer;
	size_t ndefer, capdefer;
	struct deferred *defer_spare; /* run_deferred's other array */
	size_t capspare;
	uint64_t now_ns;
};

struct loop *loop_new(void)
{
	struct loop *l = xcalloc(1, sizeof *l);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	sigemptyset(&l->sigmask);
	/* SIGCHLD is always ours: the loop reaps every child. */
	sigaddset(&l->sigmask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &l->sigmask, &l->oldmask);
	l->sigfd = signalfd(-1, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sigfd < 0) {
		close(l->epfd);
		free(l);
		return NULL;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)-1};
	epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->sigfd, &ev);
	l->now_ns = lab_now_ns();
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->ndefer; i++)
		l->defer[i].fn(l->defer[i].arg);
	close(l->sigfd);
	close(l->epfd);
	sigprocmask(SIG_SETMASK, &l->oldmask, NULL);
	free(l->fds);
	free(l->heap);
	free(l->children);
	free(l->defer);
	free(l->defer_spare);
	free(l);
}

static uint32_t to_epoll(unsigned ev)
{
	uint32_t e = 0;
	if (ev & LOOP_READ)
		e |= EPOLLIN | EPOLLRDHUP;
	if (ev & LOOP_WRITE)
		e |= EPOLLOUT;
	return e;
}

int loop_fd_add(struct loop *l, int fd, unsigned events, loop_fd_cb cb, void *arg)
{
	if (fd < 0)
		return LAB_EUSAGE;
	if ((size_t)fd >= l->nfds) {
		size_t n = l->nfds ? l->nfds : 64;
		while (n <= (size_t)fd)
			n *= 2;
		l->fds = xreallocarray(l->fds, n, sizeof *l->fds);
		memset(l->fds + l->nfds, 0, (n - l->nfds) * sizeof *l->fds);
		l->nfds = n;
	}
	struct fd_watch *w = &l->fds[fd];
	if (w->used)
		return LAB_EUSAGE;
	w->gen++;
	struct epoll_event ev = {.events = to_epoll(events),
				 .data.u64 = ((uint64_t)(w->gen & 0xffffffff) << 32) | (uint32_t)fd};
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return LAB_EINFRA;
	w->used = true;
	w->events = events;
	w->cb = cb;
	w->arg = arg;
	l->nwatched++;
	return LAB_OK;
}

int loop_fd_mod(struct loop *l, int fd, unsigned events)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
		return LAB_EUSAGE;
	struct fd_watch *w = &l->fds[fd];
	if (w->events == events)
		return LAB_OK;
	struct epoll_event ev = {.events = to_epoll(events),
				 .data.u64 = ((uint64_t)(w->gen & 0xffffffff) << 32) | (uint32_t)fd};
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return LAB_EINFRA;
	w->events = events;
	return LAB_OK;
}

void loop_fd_del(struct loop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->fds[fd].used = false;
	l->fds[fd].gen++;
	l->nwatched--;
}

bool loop_fd_watched(struct loop *l, int fd)
{
	return fd >= 0 && (size_t)fd < l->nfds && l->fds[fd].used;
}

/* ---- timers: binary min-heap on (when_ns, seq) ---- */

static bool t_less(const struct loop_timer *a, const struct loop_timer *b)
{
	return a->when_ns < b->when_ns || (a->when_ns == b->when_ns && a->seq < b->seq);
}

static void heap_swap(struct loop *l, size_t i, size_t j)
{
	struct loop_timer *t = l->heap[i];
	l->heap[i] = l->heap[j];
	l->heap[j] = t;
	l->heap[i]->heap_idx = i;
	l->heap[j]->heap_idx = j;
}

static void heap_up(struct loop *l, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!t_less(l->heap[i], l->heap[p]))
			break;
		heap_swap(l, i, p);
		i = p;
	}
}

static void heap_down(struct loop *l, size_t i)
{
	for (;;) {
		size_t a = 2 * i + 1, b = a + 1, m = i;
		if (a < l->nheap && t_less(l->heap[a], l->heap[m]))
			m = a;
		if (b < l->nheap && t_less(l->heap[b], l->heap[m]))
			m = b;
		if (m == i)
			break;
		heap_swap(l, i, m);
		i = m;
	}
}

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg)
{
	memset(t, 0, sizeof *t);
	t->heap_idx = NOT_PENDING;
	t->cb = cb;
	t->arg = arg;
}

bool loop_timer_pending(const struct loop_timer *t)
{
	return t->heap_idx != NOT_PENDING;
}

void loop_timer_stop(struct loop *l, struct loop_timer *t)
{
	if (t->heap_idx == NOT_PENDING)
		return;
	size_t i = t->heap_idx;
	l->nheap--;
	if (i != l->nheap) {
		l->heap[i] = l->heap[l->nheap];
		l->heap[i]->heap_idx = i;
		heap_down(l, i);
		heap_up(l, i);
	}
	t->heap_idx = NOT_PENDING;
}

void loop_timer_start_ns(struct loop *l, struct loop_timer *t, uint64_t delay_ns)
{
	loop_timer_stop(l, t);
	t->when_ns = lab_now_ns() + delay_ns;
	t->seq = ++l->timer_seq;
	if (l->nheap == l->capheap) {
		l->capheap = l->capheap ? l->capheap * 2 : 64;
		l->heap = xreallocarray(l->heap, l->capheap, sizeof *l->heap);
	}
	l->heap[l->nheap] = t;
	t->heap_idx = l->nheap++;
	heap_up(l, t->heap_idx);
}

void loop_timer_start(struct loop *l, struct loop_timer *t, uint64_t delay_ms)
{
	loop_timer_start_ns(l, t, delay_ms * 1000000ull);
}

/* ---- children and signals ---- */

int loop_child_watch(struct loop *l, pid_t pid, loop_child_cb cb, void *arg)
{
	if (l->nchildren == l->capchildren) {
		l->capchildren = l->capchildren ? l->capchildren * 2 : 16;
		l->children = xreallocarray(l->children, l->capchildren, sizeof *l->children);
	}
	l->children[l->nchildren++] = (struct child_watch){pid, cb, arg};
	/* The child may already have exited before we watched it. */
	kill(getpid(), SIGCHLD);
	return LAB_OK;
}

void loop_child_unwatch(struct loop *l, pid_t pid)
{
	for (size_t i = 0; i < l->nchildren; i++) {
		if (l->children[i].pid == pid) {
			l->children[i] = l->children[--l->nchildren];
			return;
		}
	}
}

int loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg)
{
	if (signo <= 0 || signo >= 65 || signo == SIGCHLD)
		return LAB_EUSAGE;
	l->sigs[signo].cb = cb;
	l->sigs[signo].arg = arg;
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, signo);
	if (cb) {
		sigaddset(&l->sigmask, signo);
		sigprocmask(SIG_BLOCK, &one, NULL);
	} else {
		sigdelset(&l->sigmask, signo);
		if (!sigismember(&l->oldmask, signo))
			sigprocmask(SIG_UNBLOCK, &one, NULL);
	}
	if (signalfd(l->sigfd, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC) < 0)
		return LAB_EINFRA;
	return LAB_OK;
}

static void reap_children(struct loop *l)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			break;
		for (size_t i = 0; i < l->nchildren; i++) {
			if (l->children[i].pid == pid) {
				struct child_watch c = l->children[i];
				l->children[i] = l->children[--l->nchildren];
				c.cb(l, pid, st, c.arg);
				break;
			}
		}
	}
}

static int handle_signals(struct loop *l)
{
	struct signalfd_siginfo si;
	int n = 0;
	bool chld = false;
	while (read(l->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		n++;
		if (si.ssi_signo == SIGCHLD)
			chld = true;
		else if (si.ssi_signo < 65 && l->sigs[si.ssi_signo].cb)
			l->sigs[si.ssi_signo].cb(l, (int)si.ssi_signo, l->sigs[si.ssi_signo].arg);
	}
	if (chld)
		reap_children(l);
	return n;
}

void loop_defer(struct loop *l, loop_defer_cb fn, void *arg)
{
	if (l->ndefer == l->capdefer) {
		l->capdefer = l->capdefer ? l->capdefer * 2 : 16;
		l->defer = xreallocarray(l->defer, l->capdefer, sizeof *l->defer);
	}
	l->defer[l->ndefer++] = (struct deferred){fn, arg};
}

static void run_deferred(struct loop *l)
{
	while (l->ndefer) {
		/* The calls made now are taken out whole, and the spare array takes
		 * what they defer meanwhile: two arrays swapped, where a copy each
		 * pass was an allocation each pass of both programs. */
		size_t n = l->ndefer, cap = l->capdefer;
		struct deferred *d = l->defer;
		l->defer = l->defer_spare;
		l->capdefer = l->capspare;
		l->defer_spare = NULL;
		l->capspare = 0;
		l->ndefer = 0;
		for (size_t i = 0; i < n; i++)
			d[i].fn(d[i].arg);
		free(l->defer_spare); /* a nested pass's, if a callback ran one */
		l->defer_spare = d;
		l->capspare = cap;
	}
}

static int run_timers(struct loop *l)
{
	int n = 0;
	uint64_t now = lab_now_ns();
	/* Only timers due now; timers armed by callbacks for "now" wait for the next pass. */
	uint64_t limit_seq = l->timer_seq;
	while (l->nheap && l->heap[0]->when_ns <= now && l->heap[0]->seq <= limit_seq) {
		struct loop_timer *t = l->heap[0];
		loop_timer_stop(l, t);
		n++;
		t->cb(l, t, t->arg);
	}
	return n;
}

int loop_run_once(struct loop *l, int max_wait_ms)
{
	run_deferred(l);
	int timeout = max_wait_ms;
	if (l->nheap) {
		uint64_t now = lab_now_ns();
		uint64_t when = l->heap[0]->when_ns;
		int64_t ms = when <= now ? 0 : (int64_t)((when - now + 999999) / 1000000);
		if (ms > INT_MAX)
			ms = INT_MAX; /* a far timer: wake up in ~24 days and look again */
		if (timeout < 0 || ms < timeout)
			timeout = (int)ms;
	}
	struct epoll_event evs[256]; /* many boards: fewer epoll_wait calls a pass */
	int n = epoll_wait(l->epfd, evs, (int)LAB_ARRAY_SIZE(evs), timeout);
	if (n < 0 && errno != EINTR)
		return -1;
	l->now_ns = lab_now_ns();
	int handled = 0;
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == (uint64_t)-1) {
			handled += handle_signals(l);
			continue;
		}
		int fd = (int)(uint32_t)evs[i].data.u64;
		uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
		if ((size_t)fd >= l->nfds || !l->fds[fd].used || (uint32_t)l->fds[fd].gen != gen)
			continue; /* removed by an earlier callback in this pass */
		unsigned ev = 0;
		if (evs[i].events & (EPOLLIN | EPOLLRDHUP))
			ev |= LOOP_READ;
		if (evs[i].events & EPOLLOUT)
			ev |= LOOP_WRITE;
		if (evs[i].events & (EPOLLERR | EPOLLHUP))
			ev |= LOOP_ERROR | (l->fds[fd].events & LOOP_READ);
		struct fd_watch w = l->fds[fd];
		w.cb(l, fd, ev, w.arg);
		handled++;
	}
	handled += run_timers(l);
	run_deferred(l);
	return handled;
}

bool loop_idle(const struct loop *l)
{
	return l->nwatched == 0 && l->nheap == 0 && l->nchildren == 0 && l->ndefer == 0;
}

int loop_run(struct loop *l)
{
	l->stopped = false;
	while (!l->stopped) {
		if (loop_idle(l))
			break;
		if (loop_run_once(l, -1) < 0)
			return LAB_EINFRA;
	}
	return LAB_OK;
}

void loop_stop(struct loop *l)
{
	l->stopped = true;
}

bool loop_stopped(const struct loop *l)
{
	return l->stopped;
}

static uint64_t loop_now_ns(struct loop *l)
{
	LAB_UNUSED(l);
	return lab_now_ns();
}

uint64_t loop_now_ms(struct loop *l)
{
	return loop_now_ns(l) / 1000000ull;
}

pid_t lab_spawn(char *const argv[], char *const envp[], int in_fd, int out_fd, int err_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid;
	posix_spawn_file_actions_init(&fa);
	if (in_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0); /* own group, so a timeout can kill the whole tree */
	int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return pid;
}
