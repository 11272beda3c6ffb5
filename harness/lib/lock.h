/*
 * lock.h - exclusive board locks, and telling a live process from a dead one.
 *
 * A board is driven by one process at a time: `run`, `board NAME
 * power|console|boot|flash` take its lock, a flock(2) on <dir>/<board>.lock.
 * The kernel drops a flock when its holder dies, so a lock of a dead process
 * is free by construction (no stale-lock clean-up).  Acquisition never
 * blocks.  After locking, the holder writes who it is into the file (pid,
 * process start time, boot id, since, command line) for the message the
 * next process prints.
 *
 * The directory: $EMMCLAB_LOCKS, else the lab's `locks:`, else /run/emmclab;
 * when that cannot be created (not root), $XDG_RUNTIME_DIR/emmclab, else
 * /tmp/emmclab-locks-<uid> (docs/running.md, "Board locks").
 */
#ifndef EMMCLAB_LOCK_H
#define EMMCLAB_LOCK_H

#include <stdbool.h>
#include <stdint.h>
#include "util.h"

#define LOCK_DEFAULT_DIR "/run/emmclab"

/* A process, as it can be recognised later: pid alone is reused, so the
 * process's start time (clock ticks after boot, /proc/PID/stat field 22)
 * and the boot id (/proc/sys/kernel/random/boot_id) go with it. */
struct lock_proc {
	int64_t pid;
	uint64_t start;    /* 0 unknown */
	char boot_id[40];  /* "" unknown */
};
void lock_proc_self(struct lock_proc *p);
/* Whether p still runs: same boot, pid present, same start time.  Unknown
 * fields are not held against it (an older record with a pid only). */
bool lock_proc_alive(const struct lock_proc *p);

/* Who holds a lock, from its file. */
struct lock_holder {
	struct lock_proc proc;
	char since[32];  /* UTC ISO-8601 */
	char cmd[256];   /* command line, spaces between arguments */
};

struct lab_lock;

/* The lock directory for a lab's `locks:` value (NULL/"": the default),
 * created if missing; caller frees. */
char *lock_dir(const char *lab_locks, struct lab_err *e);

/* Take <dir>/<name>.lock without waiting.  LAB_OK with *out; LAB_EINFRA with
 * "board NAME is in use by pid N (CMD) since T" when another process holds
 * it (*holder filled when given), or another message on an I/O error. */
int lock_take(const char *dir, const char *name, struct lab_lock **out,
	      struct lock_holder *holder, struct lab_err *e);
/* The same, shared: shared holders (`board console`, `board power`) go
 * together, but never with an exclusive one (a run, `board boot`). */
int lock_take_shared(const char *dir, const char *name, struct lab_lock **out,
		     struct lock_holder *holder, struct lab_err *e);
/* Release (close) and free; NULL is fine. */
void lock_release(struct lab_lock *l);
/* Read a lock file's holder record; LAB_EINFRA when absent or empty. */
int lock_read_holder(const char *dir, const char *name, struct lock_holder *h,
		     struct lab_err *e);
/* The file a lock of that name uses; caller frees. */
char *lock_path(const char *dir, const char *name);

#endif
