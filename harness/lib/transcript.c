/*
 * transcript.c - per-boot console transcripts (see console.h).
 *
 * Bytes are kept raw; the only additions are a "[sssss.uuuuuu] " prefix at
 * the start of every line (monotonic time since open, taken when the line's
 * first byte arrived) and a '\n' after 4 KiB without one, so a binary blast
 * cannot make a single unbounded line.  Output is buffered (64 KiB) and
 * written when the buffer fills, on a short flush timer (if a loop was given
 * with transcript_set_loop) and on close.  Files are regular files, so the
 * writes do not block the loop in any meaningful way.  The SHA-256 of the
 * file is taken from the bytes as they are written (not by reading the file
 * back at close: 1,024 simulated boards boot several hundred times a second).
 */
#include "console.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TR_BUF 65536
/* The buffer grows on demand up to TR_BUF and larger ones are given back after
 * a flush: a lab of a thousand boards keeps a few KiB per open transcript
 * resident (mostly what arrives between two flush timer ticks), not 64 KiB. */
#define TR_BUF_MIN 4096
#define TR_BUF_KEEP 16384
#define TR_LINE_MAX 4096
#define TR_FLUSH_MS 200
#define TR_MARKS 2048 /* marks held while a line of board output is open */

struct transcript {
	char *path;
	int fd;
	uint64_t max_bytes;  /* 0: no cap */
	uint64_t file_bytes; /* written to the current file (incl. buffered) */
	uint64_t total;      /* written to all files */
	uint64_t t0_ns;
	bool bol;            /* next byte starts a line */
	size_t line_len;
	char *buf;
	size_t blen, bcap;
	struct loop *loop;
	struct loop_timer flush_timer;
	struct lab_err err;  /* first write error, reported by close */
	struct lab_sha256_ctx *sha; /* of the current file's bytes written so far */
	char marks[TR_MARKS]; /* whole mark lines (time prefix taken at the mark) */
	size_t mlen;
};

static void tr_flush(struct transcript *t)
{
	size_t off = 0;
	while (off < t->blen && t->fd >= 0) {
		ssize_t w = write(t->fd, t->buf + off, t->blen - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			LAB_ERR(&t->err, LAB_EINFRA, "%s: write: %s", t->path,
				w < 0 ? strerror(errno) : "short write");
			break;
		}
		off += (size_t)w;
	}
	if (t->sha)
		lab_sha256_update(t->sha, t->buf, off);
	t->blen = 0;
	if (t->bcap > TR_BUF_KEEP) {
		free(t->buf);
		t->buf = NULL;
		t->bcap = 0;
	}
}

static void put(struct transcript *t, const void *p, size_t n);

/* Write the held marks on their own lines: at the end of the board's open
 * line, or (flush timer, close) after the line stayed open - a prompt. */
static void emit_marks(struct transcript *t)
{
	if (!t->mlen)
		return;
	if (!t->bol)
		put(t, "\n", 1);
	put(t, t->marks, t->mlen);
	t->mlen = 0;
	t->bol = true;
	tr_flush(t); /* marks are rare and matter: make them visible at once */
}

static void on_flush(struct loop *l, struct loop_timer *tm, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(tm);
	emit_marks(arg);
	tr_flush(arg);
}

static int open_file(struct transcript *t, struct lab_err *e)
{
	t->fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (t->fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "transcript %s: %s", t->path, strerror(errno));
	t->file_bytes = 0;
	if (t->sha) { /* rotated: the hash is of the new file */
		char drop[65];
		lab_sha256_final(t->sha, drop);
	}
	t->sha = lab_sha256_new();
	return LAB_OK;
}

int transcript_open(const char *path, uint64_t max_bytes, struct transcript **out, struct lab_err *e)
{
	struct transcript *t = xcalloc(1, sizeof *t);
	t->path = xstrdup(path);
	t->max_bytes = max_bytes;
	t->bol = true;
	t->t0_ns = lab_now_ns();
	loop_timer_init(&t->flush_timer, on_flush, t);
	int rc = open_file(t, e);
	if (rc) {
		free(t->path);
		free(t);
		return rc;
	}
	*out = t;
	return LAB_OK;
}

void transcript_set_loop(struct transcript *t, struct loop *l)
{
	if (t->loop)
		loop_timer_stop(t->loop, &t->flush_timer);
	t->loop = l;
	if (l && t->blen)
		loop_timer_start(l, &t->flush_timer, TR_FLUSH_MS);
}

static void put(struct transcript *t, const void *p, size_t n)
{
	while (n) {
		if (t->blen == TR_BUF)
			tr_flush(t);
		if (t->blen + n > t->bcap && t->bcap < TR_BUF) {
			size_t nc = t->bcap ? t->bcap : TR_BUF_MIN;
			while (nc < t->blen + n && nc < TR_BUF)
				nc *= 2;
			t->buf = xrealloc(t->buf, nc);
			t->bcap = nc;
		}
		size_t take = t->bcap - t->blen;
		if (take > n)
			take = n;
		memcpy(t->buf + t->blen, p, take);
		t->blen += take;
		t->file_bytes += take;
		t->total += take;
		p = (const char *)p + take;
		n -= take;
	}
}

/* "[%5llu.%06llu] " of d ns as seconds.microseconds, without snprintf: it
 * is written on every console line of every board (pre: >= 32 bytes). */
static size_t tr_stamp(char *pre, uint64_t d)
{
	char dig[24];
	size_t nd = 0, k = 0;
	uint64_t sec = d / 1000000000ull, us = d % 1000000000ull / 1000ull;
	do {
		dig[nd++] = (char)('0' + sec % 10);
		sec /= 10;
	} while (sec);
	pre[k++] = '[';
	for (size_t i = nd; i < 5; i++)
		pre[k++] = ' ';
	while (nd)
		pre[k++] = dig[--nd];
	pre[k++] = '.';
	for (int i = 5; i >= 0; i--, us /= 10)
		pre[k + (size_t)i] = (char)('0' + us % 10);
	k += 6;
	pre[k++] = ']';
	pre[k++] = ' ';
	return k;
}

/* At a line start: rotate if the file is full, then write the time prefix. */
static void line_start(struct transcript *t)
{
	if (t->max_bytes && t->file_bytes >= t->max_bytes && t->fd >= 0) {
		tr_flush(t);
		close(t->fd);
		char *old = xasprintf("%s.1", t->path);
		if (rename(t->path, old) < 0)
			LAB_ERR(&t->err, LAB_EINFRA, "rotate %s: %s", t->path, strerror(errno));
		free(old);
		if (open_file(t, &t->err) != LAB_OK)
			t->fd = -1;
	}
	char pre[40];
	put(t, pre, tr_stamp(pre, lab_now_ns() - t->t0_ns));
	t->bol = false;
	t->line_len = 0;
}

void transcript_write(struct transcript *t, const char *buf, size_t n)
{
	if (!t || n == 0)
		return;
	while (n) {
		if (t->bol)
			line_start(t);
		const char *nl = memchr(buf, '\n', n);
		size_t take = nl ? (size_t)(nl - buf) + 1 : n;
		size_t room = TR_LINE_MAX - t->line_len;
		if (take > room) {
			/* overlong line: split it so every line has a timestamp */
			put(t, buf, room);
			put(t, "\n", 1);
			t->bol = true;
			buf += room;
			n -= room;
			continue;
		}
		put(t, buf, take);
		t->line_len += take;
		if (nl) {
			t->bol = true;
			emit_marks(t);
		}
		buf += take;
		n -= take;
	}
	if (t->loop && !loop_timer_pending(&t->flush_timer))
		loop_timer_start(t->loop, &t->flush_timer, TR_FLUSH_MS);
}

void transcript_mark(struct transcript *t, const char *fmt, ...)
{
	if (!t)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	size_t len = strnlen(msg, sizeof msg);
	/* Strip newlines so the mark stays one line. */
	for (size_t i = 0; i < len; i++)
		if (msg[i] == '\n' || msg[i] == '\r')
			msg[i] = ' ';
	/* A mark never splits a line of board output: while one is open the mark
	 * waits (with its own time) for its end, or at most the flush timer. */
	uint64_t d = lab_now_ns() - t->t0_ns;
	char line[600];
	int w = snprintf(line, sizeof line, "[%5llu.%06llu] %.*s\n",
			 (unsigned long long)(d / 1000000000ull),
			 (unsigned long long)(d % 1000000000ull / 1000ull), (int)len, msg);
	size_t wl = w < 0 ? 0 : (size_t)w >= sizeof line ? sizeof line - 1 : (size_t)w;
	if (t->mlen + wl > sizeof t->marks)
		emit_marks(t);
	bool first = t->mlen == 0;
	memcpy(t->marks + t->mlen, line, wl);
	t->mlen += wl;
	if (t->bol || !t->loop)
		emit_marks(t);
	else if (first) /* the full interval from now, not what a pending flush has left */
		loop_timer_start(t->loop, &t->flush_timer, TR_FLUSH_MS);
}

int transcript_close(struct transcript *t, char sha256[65], uint64_t *bytes, struct lab_err *e)
{
	if (!t)
		return LAB_OK;
	if (t->loop)
		loop_timer_stop(t->loop, &t->flush_timer);
	emit_marks(t);
	tr_flush(t);
	int rc = LAB_OK;
	if (t->fd >= 0 && close(t->fd) < 0)
		LAB_ERR(&t->err, LAB_EINFRA, "%s: close: %s", t->path, strerror(errno));
	t->fd = -1;
	if (t->err.msg[0]) {
		rc = lab_err_set(e, t->err.rc ? t->err.rc : LAB_EINFRA, "%s", t->err.msg);
	} else if (sha256 && t->sha) {
		lab_sha256_final(t->sha, sha256);
		t->sha = NULL;
	}
	if (t->sha) {
		char drop[65];
		lab_sha256_final(t->sha, drop);
	}
	if (rc && sha256)
		sha256[0] = '\0';
	if (bytes)
		*bytes = t->total;
	free(t->buf);
	free(t->path);
	free(t);
	return rc;
}

const char *transcript_path(const struct transcript *t)
{
	return t->path;
}

/* ---- the directory's total ---- */

struct tr_file {
	char *name;
	uint64_t bytes;
	time_t mtime;
};

static int tr_file_cmp(const void *a, const void *b)
{
	const struct tr_file *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool tr_is_transcript(const char *n)
{
	size_t l = strlen(n);
	return (l > 4 && strcmp(n + l - 4, ".log") == 0) || (l > 6 && strcmp(n + l - 6, ".log.1") == 0);
}

int transcript_prune(const char *dir, uint64_t max_total, size_t *removed, uint64_t *freed,
		     struct lab_err *e)
{
	size_t nrm = 0;
	uint64_t nfreed = 0;
	if (removed)
		*removed = 0;
	if (freed)
		*freed = 0;
	if (!max_total)
		return LAB_OK;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? LAB_OK
				       : LAB_ERR(e, LAB_EINFRA, "transcripts %s: %s", dir, strerror(errno));
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return LAB_ERR(e, LAB_EINFRA, "transcripts %s: %s", dir, strerror(errno));
	}
	struct tr_file *f = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!tr_is_transcript(de->d_name) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			f = xreallocarray(f, cap, sizeof *f);
		}
		f[n++] = (struct tr_file){xstrdup(de->d_name), (uint64_t)st.st_size, st.st_mtime};
		total += (uint64_t)st.st_size;
	}
	if (n)
		qsort(f, n, sizeof *f, tr_file_cmp);
	time_t now = time(NULL);
	int rc = LAB_OK;
	for (size_t i = 0; i < n && total > max_total; i++) {
		if (now - f[i].mtime < 60)
			break; /* sorted by age: the rest are younger still, maybe open */
		if (unlinkat(dfd, f[i].name, 0) == 0) {
			total -= f[i].bytes;
			nfreed += f[i].bytes;
			nrm++;
		} else if (errno != ENOENT && !rc) {
			rc = LAB_ERR(e, LAB_EINFRA, "transcripts %s: cannot remove %s: %s", dir, f[i].name,
				     strerror(errno));
		}
	}
	for (size_t i = 0; i < n; i++)
		free(f[i].name);
	free(f);
	closedir(d);
	if (removed)
		*removed = nrm;
	if (freed)
		*freed = nfreed;
	return rc;
}
