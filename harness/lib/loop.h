/*
 * loop.h - the one event loop (epoll + monotonic timers + signalfd).
 *
 * Rules: every fd, timer, child process and signal of the
 * controller is owned by one struct loop, run on one thread.  Nothing blocks
 * inside a callback; every wait is a timer.  Callbacks may add or remove any
 * watch, including their own.  Objects must not be freed inside their own
 * callback: use loop_defer() to free them on the next pass.
 *
 * Timers are caller-owned (embed struct loop_timer in your object) so there
 * is never a dangling handle: loop_timer_stop() on a stopped timer is a no-op.
 */
#ifndef EMMCLAB_LOOP_H
#define EMMCLAB_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct loop;
struct loop_timer;

enum { LOOP_READ = 1, LOOP_WRITE = 2, LOOP_ERROR = 4 /* reported only: HUP/ERR */ };

typedef void (*loop_fd_cb)(struct loop *l, int fd, unsigned events, void *arg);
typedef void (*loop_timer_cb)(struct loop *l, struct loop_timer *t, void *arg);
typedef void (*loop_child_cb)(struct loop *l, pid_t pid, int wstatus, void *arg);
typedef void (*loop_signal_cb)(struct loop *l, int signo, void *arg);
typedef void (*loop_defer_cb)(void *arg);

struct loop_timer {
	uint64_t when_ns; /* absolute monotonic deadline */
	uint64_t seq;     /* FIFO order among equal deadlines */
	size_t heap_idx;  /* (size_t)-1 when not pending */
	loop_timer_cb cb;
	void *arg;
};

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Watch fd for events (LOOP_READ|LOOP_WRITE).  One watch per fd. */
int loop_fd_add(struct loop *l, int fd, unsigned events, loop_fd_cb cb, void *arg);
int loop_fd_mod(struct loop *l, int fd, unsigned events);
void loop_fd_del(struct loop *l, int fd);
bool loop_fd_watched(struct loop *l, int fd);

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg);
/* (Re)arm a one-shot timer delay_ms from now. */
void loop_timer_start(struct loop *l, struct loop_timer *t, uint64_t delay_ms);
void loop_timer_start_ns(struct loop *l, struct loop_timer *t, uint64_t delay_ns);
void loop_timer_stop(struct loop *l, struct loop_timer *t);
bool loop_timer_pending(const struct loop_timer *t);

/* Call cb once the child exits (reaped by the loop).  Children that are not
 * watched are reaped too, so there are never zombies. */
int loop_child_watch(struct loop *l, pid_t pid, loop_child_cb cb, void *arg);
void loop_child_unwatch(struct loop *l, pid_t pid);

/* Deliver signo as a loop event (blocked + signalfd).  cb NULL removes. */
int loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg);

/* Run fn(arg) at the start of the next pass (safe deferred free). */
void loop_defer(struct loop *l, loop_defer_cb fn, void *arg);

/* Run until loop_stop() or until nothing is watched (no fds, timers, children). */
int loop_run(struct loop *l);
/* One pass: wait at most max_wait_ms (-1: until an event), dispatch. Returns events handled. */
int loop_run_once(struct loop *l, int max_wait_ms);
void loop_stop(struct loop *l);
bool loop_stopped(const struct loop *l);
/* True when nothing is pending: no fds, timers, watched children or deferred
 * calls (signal handlers do not count), i.e. when loop_run() would return. */
bool loop_idle(const struct loop *l);

uint64_t loop_now_ms(struct loop *l);

/*
 * Spawn argv[0] (PATH searched) with no shell.  stdin/stdout/stderr: pass
 * -1 to inherit, or an fd to dup onto it; use lab_spawn_pipes for pipes.
 * The child gets an unblocked signal mask and default handlers; all other
 * fds are close-on-exec already.  Returns pid or -1 (errno set).
 */
pid_t lab_spawn(char *const argv[], char *const envp[], int in_fd, int out_fd, int err_fd);

#endif
