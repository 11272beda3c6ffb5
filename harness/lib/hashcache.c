/* hashcache.c - cached, off-loop SHA-256 of host artefacts (see hashcache.h). */
#include "hashcache.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX_BYTES (HASHCACHE_ENTRIES * 4200)

struct hashcache_req {
	struct loop *l;
	char *cache_file;
	size_t n;
	const char *paths[HASHCACHE_MAX_FILES];
	struct stat st[HASHCACHE_MAX_FILES];
	bool miss[HASHCACHE_MAX_FILES];
	char (*out)[65];
	hashcache_cb cb;
	void *arg;
	struct loop_timer later; /* completion of an all-hit request */
	int fd;                  /* pipe from the child, -1 when none */
	pid_t pid;
	struct lab_buf rx;
	uint64_t started_s;      /* realtime seconds when hashing began (racy check) */
	int rc;
	char msg[600];
};

static unsigned long children_started;

unsigned long hashcache_children(void)
{
	return children_started;
}

static uint64_t mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
}

/* One cache line: "DEV INO SIZE MTIME_NS HEX PATH". */
static bool parse_line(char *line, uint64_t k[4], char **hex, char **path)
{
	char *p = line;
	for (int i = 0; i < 4; i++) {
		char *sp = strchr(p, ' ');
		if (!sp)
			return false;
		*sp = '\0';
		if (lab_parse_u64(p, &k[i]) != 0)
			return false;
		p = sp + 1;
	}
	char *sp = strchr(p, ' ');
	if (!sp || sp - p != 64)
		return false;
	*sp = '\0';
	*hex = p;
	*path = sp + 1;
	return true;
}

static bool key_matches(const uint64_t k[4], const struct stat *st)
{
	return k[0] == (uint64_t)st->st_dev && k[1] == (uint64_t)st->st_ino &&
	       k[2] == (uint64_t)st->st_size && k[3] == mtime_ns(st);
}

bool hashcache_lookup(const char *cache_file, const char *path, const struct stat *st,
		      char out[65])
{
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (!cache_file || lab_read_file(cache_file, CACHE_MAX_BYTES, &data, &len, &e) != LAB_OK)
		return false;
	bool hit = false;
	char *save = NULL;
	for (char *line = strtok_r(data, "\n", &save); line && !hit;
	     line = strtok_r(NULL, "\n", &save)) {
		uint64_t k[4];
		char *hex, *p;
		if (parse_line(line, k, &hex, &p) && strcmp(p, path) == 0 && key_matches(k, st)) {
			memcpy(out, hex, 64);
			out[64] = '\0';
			hit = true;
		}
	}
	free(data);
	return hit;
}

/* Put the freshly hashed entries first, then the old ones not superseded, up
 * to HASHCACHE_ENTRIES lines.  Failures only cost a re-hash next time. */
static void cache_store(struct hashcache_req *r)
{
	struct lab_buf nb;
	lab_buf_init(&nb, CACHE_MAX_BYTES);
	size_t lines = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (!r->miss[i] || !r->out[i][0] || strchr(r->paths[i], '\n'))
			continue;
		struct stat now;
		/* changed while hashed, or too fresh to trust its mtime: do not cache */
		if (stat(r->paths[i], &now) != 0 || !key_matches((uint64_t[4]){(uint64_t)r->st[i].st_dev,
						       (uint64_t)r->st[i].st_ino, (uint64_t)r->st[i].st_size,
						       mtime_ns(&r->st[i])}, &now) ||
		    (uint64_t)now.st_mtim.tv_sec + HASHCACHE_RACY_S > r->started_s)
			continue;
		if (lab_buf_printf(&nb, "%llu %llu %llu %llu %s %s\n", (unsigned long long)now.st_dev,
				   (unsigned long long)now.st_ino, (unsigned long long)now.st_size,
				   (unsigned long long)mtime_ns(&now), r->out[i], r->paths[i]) == LAB_OK)
			lines++;
	}
	if (lines == 0) {
		lab_buf_free(&nb);
		return;
	}
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(r->cache_file, CACHE_MAX_BYTES, &data, &len, &e) == LAB_OK) {
		char *save = NULL;
		for (char *line = strtok_r(data, "\n", &save); line && lines < HASHCACHE_ENTRIES;
		     line = strtok_r(NULL, "\n", &save)) {
			char *copy = xstrdup(line), *hex, *p;
			uint64_t k[4];
			bool keep = parse_line(copy, k, &hex, &p);
			for (size_t i = 0; keep && i < r->n; i++)
				keep = !(r->miss[i] && strcmp(p, r->paths[i]) == 0);
			free(copy);
			if (keep && lab_buf_printf(&nb, "%s\n", line) == LAB_OK)
				lines++;
		}
		free(data);
	}
	char *dir = xstrdup(r->cache_file), *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		lab_mkdir_p(dir, 0755);
	}
	free(dir);
	lab_err_clear(&e);
	lab_write_file_atomic(r->cache_file, lab_buf_cstr(&nb), nb.len, &e);
	lab_buf_free(&nb);
}

static void req_free(struct hashcache_req *r)
{
	if (r->fd >= 0) {
		loop_fd_del(r->l, r->fd);
		close(r->fd);
	}
	loop_timer_stop(r->l, &r->later);
	lab_buf_free(&r->rx);
	free(r->cache_file);
	free(r);
}

static void finish(struct hashcache_req *r)
{
	hashcache_cb cb = r->cb;
	void *arg = r->arg;
	int rc = r->rc;
	char msg[sizeof r->msg];
	lab_strlcpy(msg, r->msg, sizeof msg);
	req_free(r);
	cb(rc, rc ? msg : NULL, arg);
}

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	finish(arg);
}

/* The child's report: one "INDEX HEX" or "INDEX !MESSAGE" line per miss. */
static void parse_report(struct hashcache_req *r)
{
	size_t got = 0;
	char *save = NULL;
	for (char *line = strtok_r((char *)lab_buf_cstr(&r->rx), "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		uint64_t i;
		if (!sp)
			continue;
		*sp = '\0';
		if (lab_parse_u64(line, &i) != 0 || i >= r->n || !r->miss[i])
			continue;
		if (sp[1] == '!') {
			if (r->rc == LAB_OK) {
				r->rc = LAB_EINFRA;
				lab_strlcpy(r->msg, sp + 2, sizeof r->msg);
			}
			continue;
		}
		if (strlen(sp + 1) != 64)
			continue;
		memcpy(r->out[i], sp + 1, 65);
		got++;
	}
	size_t want = 0;
	for (size_t i = 0; i < r->n; i++)
		want += r->miss[i];
	if (r->rc == LAB_OK && got != want) {
		r->rc = LAB_EINFRA;
		snprintf(r->msg, sizeof r->msg, "artefact hashing: the hashing process died (%zu of %zu done)",
			 got, want);
	}
	if (r->rc == LAB_OK && r->cache_file)
		cache_store(r);
}

static void on_pipe(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(ev);
	struct hashcache_req *r = arg;
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n > 0) {
			if (lab_buf_append(&r->rx, buf, (size_t)n) != LAB_OK) {
				r->rc = LAB_EINFRA;
				lab_strlcpy(r->msg, "artefact hashing: report too long", sizeof r->msg);
			}
			continue;
		}
		break; /* EOF (the child is done) or an error */
	}
	loop_fd_del(r->l, r->fd);
	close(r->fd);
	r->fd = -1;
	r->pid = -1; /* the loop reaps it */
	if (r->rc == LAB_OK)
		parse_report(r);
	finish(r);
}

static void child_main(struct hashcache_req *r, int wfd)
{
	for (size_t i = 0; i < r->n; i++) {
		if (!r->miss[i])
			continue;
		char hex[65], line[700];
		struct lab_err e = {0};
		int len = lab_sha256_file(r->paths[i], hex, &e) == LAB_OK ?
				  snprintf(line, sizeof line, "%zu %s\n", i, hex) :
				  snprintf(line, sizeof line, "%zu !%s\n", i, e.msg);
		if (len > 0 && (size_t)len < sizeof line) {
			ssize_t off = 0;
			while (off < len) {
				ssize_t w = write(wfd, line + off, (size_t)(len - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					_exit(1);
				off += w;
			}
		}
	}
	_exit(0);
}

struct hashcache_req *hashcache_start(struct loop *l, const char *cache_file,
				      const char *const *paths, size_t n, char (*out)[65],
				      hashcache_cb cb, void *arg)
{
	if (n > HASHCACHE_MAX_FILES)
		return NULL;
	struct hashcache_req *r = xcalloc(1, sizeof *r);
	r->l = l;
	r->cache_file = cache_file ? xstrdup(cache_file) : NULL;
	r->n = n;
	r->out = out;
	r->cb = cb;
	r->arg = arg;
	r->fd = -1;
	r->pid = -1;
	lab_buf_init(&r->rx, 64 * 1024);
	loop_timer_init(&r->later, on_later, r);
	bool any_miss = false;
	for (size_t i = 0; i < n; i++) {
		r->paths[i] = paths[i];
		out[i][0] = '\0';
		if (!paths[i] || !paths[i][0])
			continue;
		if (stat(paths[i], &r->st[i]) != 0) {
			r->rc = LAB_EINFRA;
			snprintf(r->msg, sizeof r->msg, "%s: %s", paths[i], strerror(errno));
			break;
		}
		if (!hashcache_lookup(r->cache_file, paths[i], &r->st[i], out[i]))
			any_miss = r->miss[i] = true;
	}
	if (r->rc != LAB_OK || !any_miss) {
		loop_timer_start(l, &r->later, 0);
		return r;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		r->rc = LAB_EINFRA;
		snprintf(r->msg, sizeof r->msg, "artefact hashing: pipe: %s", strerror(errno));
		loop_timer_start(l, &r->later, 0);
		return r;
	}
	r->started_s = (uint64_t)time(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child_main(r, pfd[1]);
	}
	int err = errno;
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		r->rc = LAB_EINFRA;
		snprintf(r->msg, sizeof r->msg, "artefact hashing: fork: %s", strerror(err));
		loop_timer_start(l, &r->later, 0);
		return r;
	}
	children_started++;
	r->pid = pid;
	r->fd = pfd[0];
	lab_fd_nonblock(r->fd);
	if (loop_fd_add(l, r->fd, LOOP_READ, on_pipe, r) != 0) {
		kill(pid, SIGKILL);
		close(r->fd);
		r->fd = -1;
		r->pid = -1;
		r->rc = LAB_EINFRA;
		lab_strlcpy(r->msg, "artefact hashing: cannot watch the pipe", sizeof r->msg);
		loop_timer_start(l, &r->later, 0);
	}
	return r;
}

void hashcache_cancel(struct hashcache_req *r)
{
	if (!r)
		return;
	if (r->pid > 0)
		kill(r->pid, SIGKILL); /* unwatched children are reaped by the loop */
	req_free(r);
}
