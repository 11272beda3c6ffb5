/* lock.c - see lock.h. */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct lab_lock {
	int fd;
	char *path;
	bool shared;
};

/* Read a small file whole (procfs files report size 0: read until EOF). */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < n) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static void boot_id(char out[40])
{
	char b[64];
	out[0] = '\0';
	if (read_small("/proc/sys/kernel/random/boot_id", b, sizeof b) > 0) {
		b[strcspn(b, "\n")] = '\0';
		lab_strlcpy(out, b, 40);
	}
}

/* Field 22 of /proc/PID/stat (after the parenthesised command, which may
 * hold spaces and parentheses itself: parse from the last ')'). */
static uint64_t proc_start(int64_t pid)
{
	char path[64], b[1024];
	snprintf(path, sizeof path, "/proc/%" PRId64 "/stat", pid);
	if (read_small(path, b, sizeof b) <= 0)
		return 0;
	const char *p = strrchr(b, ')');
	if (!p)
		return 0;
	p++;
	/* After ')' come fields 3.. : skip 19 of them to reach field 22. */
	for (int f = 3; f < 22 && p; f++) {
		p = strchr(p + 1, ' ');
	}
	if (!p)
		return 0;
	return strtoull(p + 1, NULL, 10);
}

void lock_proc_self(struct lock_proc *p)
{
	memset(p, 0, sizeof *p);
	p->pid = (int64_t)getpid();
	p->start = proc_start(p->pid);
	boot_id(p->boot_id);
}

bool lock_proc_alive(const struct lock_proc *p)
{
	if (p->pid <= 0)
		return false;
	char now[40];
	boot_id(now);
	if (p->boot_id[0] && now[0] && strcmp(p->boot_id, now) != 0)
		return false; /* the host rebooted since: every process of then is gone */
	if (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH)
		return false;
	if (p->start) {
		uint64_t s = proc_start(p->pid);
		if (s && s != p->start)
			return false; /* the pid was reused */
	}
	return true;
}

static int dir_ok(const char *d)
{
	struct stat st;
	if (lab_mkdir_p(d, 0755) != LAB_OK && errno != EEXIST)
		return -1;
	if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode) || access(d, W_OK | X_OK) < 0)
		return -1;
	return 0;
}

char *lock_dir(const char *lab_locks, struct lab_err *e)
{
	const char *env = getenv("EMMCLAB_LOCKS");
	const char *want = env && *env ? env : lab_locks && *lab_locks ? lab_locks : NULL;
	if (want) {
		if (dir_ok(want) < 0) {
			lab_err_set(e, LAB_EINFRA, "lock directory %s: %s", want,
				    errno ? strerror(errno) : "not a writable directory");
			return NULL;
		}
		return xstrdup(want);
	}
	if (dir_ok(LOCK_DEFAULT_DIR) == 0)
		return xstrdup(LOCK_DEFAULT_DIR);
	/* Not root: a directory of this user's (locks then hold among this
	 * user's processes only; a shared lab names a shared `locks:`). */
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *d = xdg && *xdg ? xasprintf("%s/emmclab", xdg)
			      : xasprintf("/tmp/emmclab-locks-%ld", (long)getuid());
	if (dir_ok(d) < 0) {
		lab_err_set(e, LAB_EINFRA, "lock directory %s: %s (set the lab's locks:)", d,
			    strerror(errno));
		free(d);
		return NULL;
	}
	return d;
}

char *lock_path(const char *dir, const char *name)
{
	/* A board name is a file name here: anything but [A-Za-z0-9._-] becomes '_'. */
	char *n = xstrdup(name);
	for (char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			*p = '_';
	if (n[0] == '.')
		n[0] = '_';
	char *p = xasprintf("%s/%s.lock", dir, n);
	free(n);
	return p;
}

static void parse_holder(char *b, struct lock_holder *h)
{
	memset(h, 0, sizeof *h);
	char *save = NULL;
	for (char *l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');
		if (!eq)
			continue;
		*eq++ = '\0';
		int64_t v;
		if (strcmp(l, "pid") == 0 && lab_parse_i64(eq, &v) == 0)
			h->proc.pid = v;
		else if (strcmp(l, "start") == 0)
			h->proc.start = strtoull(eq, NULL, 10);
		else if (strcmp(l, "boot") == 0)
			lab_strlcpy(h->proc.boot_id, eq, sizeof h->proc.boot_id);
		else if (strcmp(l, "since") == 0)
			lab_strlcpy(h->since, eq, sizeof h->since);
		else if (strcmp(l, "cmd") == 0)
			lab_strlcpy(h->cmd, eq, sizeof h->cmd);
	}
}

static int holder_from_fd(int fd, struct lock_holder *h)
{
	char b[2048];
	ssize_t n = pread(fd, b, sizeof b - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	parse_holder(b, h);
	return h->proc.pid > 0 ? 0 : -1;
}

int lock_read_holder(const char *dir, const char *name, struct lock_holder *h, struct lab_err *e)
{
	char *path = lock_path(dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = LAB_OK;
	if (fd < 0 || holder_from_fd(fd, h) < 0)
		rc = lab_err_set(e, LAB_EINFRA, "%s: no holder recorded", path);
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

static void self_cmdline(char *out, size_t n)
{
	char b[1024];
	ssize_t len = read_small("/proc/self/cmdline", b, sizeof b);
	out[0] = '\0';
	if (len <= 0)
		return;
	for (ssize_t i = 0; i < len - 1; i++)
		if (b[i] == '\0' || b[i] == '\n')
			b[i] = ' ';
	lab_strlcpy(out, b, n);
}

static int take(const char *dir, const char *name, bool shared, struct lab_lock **out,
		struct lock_holder *holder, struct lab_err *e)
{
	*out = NULL;
	if (holder)
		memset(holder, 0, sizeof *holder);
	char *path = lock_path(dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		int rc = lab_err_set(e, LAB_EINFRA, "board %s: lock %s: %s", name, path,
				     strerror(errno));
		free(path);
		return rc;
	}
	if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		int err = errno;
		struct lock_holder h;
		int rc;
		if (err != EWOULDBLOCK)
			rc = lab_err_set(e, LAB_EINFRA, "board %s: lock %s: %s", name, path,
					 strerror(err));
		else if (holder_from_fd(fd, &h) == 0) {
			rc = lab_err_set(e, LAB_EINFRA, "board %s is in use by pid %" PRId64 " (%s) since %s",
					 name, h.proc.pid, h.cmd[0] ? h.cmd : "?",
					 h.since[0] ? h.since : "?");
			if (holder)
				*holder = h;
		} else {
			/* Locked a moment ago: its holder has not written itself in yet. */
			rc = lab_err_set(e, LAB_EINFRA, "board %s is in use by another process (%s)",
					 name, path);
		}
		close(fd);
		free(path);
		return rc;
	}
	struct lock_proc me;
	lock_proc_self(&me);
	char since[32], cmd[256];
	lab_utc_iso(since, sizeof since, (int64_t)time(NULL));
	self_cmdline(cmd, sizeof cmd);
	char rec[512];
	int n = snprintf(rec, sizeof rec, "pid=%" PRId64 "\nstart=%" PRIu64 "\nboot=%s\nsince=%s\ncmd=%s\n",
			 me.pid, me.start, me.boot_id, since, cmd);
	if (n < 0 || (size_t)n >= sizeof rec)
		n = (int)strlen(rec);
	/* Written after locking: a reader never sees a record of a non-holder
	 * (shared holders: the newest one's). */
	if ((!shared && ftruncate(fd, 0) < 0) || pwrite(fd, rec, (size_t)n, 0) != n ||
	    (shared && ftruncate(fd, n) < 0)) {
		int rc = lab_err_set(e, LAB_EINFRA, "board %s: lock %s: %s", name, path,
				     strerror(errno));
		close(fd);
		free(path);
		return rc;
	}
	struct lab_lock *l = xcalloc(1, sizeof *l);
	l->fd = fd;
	l->path = path;
	l->shared = shared;
	*out = l;
	return LAB_OK;
}

int lock_take(const char *dir, const char *name, struct lab_lock **out,
	      struct lock_holder *holder, struct lab_err *e)
{
	return take(dir, name, false, out, holder, e);
}

int lock_take_shared(const char *dir, const char *name, struct lab_lock **out,
		     struct lock_holder *holder, struct lab_err *e)
{
	return take(dir, name, true, out, holder, e);
}

void lock_release(struct lab_lock *l)
{
	if (!l)
		return;
	/* Emptied while still held: the next holder's record is the only one a
	 * reader can find. */
	if (!l->shared && ftruncate(l->fd, 0) < 0) {
		/* a stale record is only a less precise message */
	}
	close(l->fd);
	free(l->path);
	free(l);
}
