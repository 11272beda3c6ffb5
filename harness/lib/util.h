/*
 * util.h - allocation wrappers, error codes and the caller-owned error buffer.
 *
 * Library code never prints and never exits (except xmalloc on OOM, which
 * aborts: there is no sane recovery).  Fallible functions return an int code
 * (LAB_OK == 0) and write a human-readable detail into a struct lab_err owned
 * by the caller.  The first error is kept: lab_err_set() does nothing when the
 * buffer already holds a message, so the root cause survives unwinding.
 */
#ifndef EMMCLAB_UTIL_H
#define EMMCLAB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

/* Return codes; also the CLI exit codes where they overlap (see docs/cli.md). */
enum lab_rc {
	LAB_OK = 0,
	LAB_EFOUND = 1,   /* a regression or test failure was found (not an error of ours) */
	LAB_EUSAGE = 2,   /* bad command line, bad configuration, bad input file */
	LAB_EINFRA = 3,   /* infrastructure: I/O, database, device, network, board */
	LAB_ETIMEOUT = 4, /* internal: a wait ran out (maps to exit 3) */
	LAB_EPROTO = 5    /* internal: a peer spoke nonsense (maps to exit 3) */
};

const char *lab_strerror(int rc);
int lab_exit_code(int rc); /* map any lab_rc to 0..3 */

struct lab_err {
	int rc;
	char where[96]; /* "file.c:123 func" or "lab.yaml:4:7" */
	char msg[512];
};

/* Record an error (first one wins).  Returns rc so callers can `return lab_err_set(...)`. */
int lab_err_set(struct lab_err *e, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int lab_err_setv(struct lab_err *e, int rc, const char *fmt, va_list ap);
void lab_err_clear(struct lab_err *e);
#define LAB_ERR(e, rc, ...) \
	lab_err_at((e), (rc), __FILE__, __LINE__, __func__, __VA_ARGS__)
int lab_err_at(struct lab_err *e, int rc, const char *file, int line, const char *func,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
/* xcalloc for a table that is read before it is written (hash slots, "done"
 * marks): the zeros are written here, so each page is faulted in writable
 * once (util.c). */
void *xcalloc_written(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t n, size_t sz);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* Bounded copy/concat: always NUL-terminate, return strlen(src) (BSD semantics). */
size_t lab_strlcpy(char *dst, const char *src, size_t size);
size_t lab_strlcat(char *dst, const char *src, size_t size);

/* Before building a large in-memory model (reports, comparisons): from here
 * on, blocks of 128 KiB and more are mappings of their own, unmapped when
 * freed.  glibc otherwise raises that threshold as large blocks are freed,
 * and then grows big arrays inside the heap, where doubling one keeps both
 * copies and a freed one stays resident.  No-op without glibc. */
void lab_mem_bulk_mapped(void);

/* A pool of strings, each kept once: intern returns the pool's copy of s
 * ("" for NULL), equal strings the same pointer, valid until the pool is
 * freed.  Zero-initialised is empty. */
struct lab_strpool {
	char **slot; /* open addressing, a power of two */
	size_t cap, n;
};
const char *lab_strpool_intern(struct lab_strpool *sp, const char *s);
void lab_strpool_free(struct lab_strpool *sp);

/*
 * A sorted list of row ids with a cursor (the results loader's jobs and
 * iterations, the latency histograms' iterations).  Rows read in rowid order
 * have sorted ids, and the rows that refer to them (iterations to jobs,
 * samples and counters to iterations) come in nearly the same order, so the
 * entry after the last hit is almost always the next one asked for: a cursor
 * with a binary-search fallback is cheaper than a hash and walks memory
 * forward instead of at random.  Zero-initialised is empty; free(q.id).
 */
struct lab_idseq {
	int64_t *id;
	size_t n, cap, hint;
};
/* Append id (ids must be pushed in ascending order). */
void lab_idseq_push(struct lab_idseq *q, int64_t id);
/* Whether id is there; *out its index. */
bool lab_idseq_find(struct lab_idseq *q, int64_t id, size_t *out);

/* The shortest "%.*g" text that reads back as exactly v (at most 17 digits). */
/* m / 10^k in fixed notation, k digits after the point (none, and no point,
 * for k = 0; at most 40), a '-' first when neg: 12345, 3 -> "12.345"; 5, 2 -> "0.05". */
void lab_fmt_fixed(char *buf, size_t n, uint64_t m, int k, bool neg);
void lab_fmt_double(char *buf, size_t n, double v);

/* Strict number parsing: whole string must be consumed, range checked. */
int lab_parse_i64(const char *s, int64_t *out);
int lab_parse_u64(const char *s, uint64_t *out);
int lab_parse_double(const char *s, double *out);

/* Growable byte buffer with a hard cap. */
struct lab_buf {
	char *data;
	size_t len, cap, max; /* max == 0: unlimited */
};
void lab_buf_init(struct lab_buf *b, size_t max);
int lab_buf_append(struct lab_buf *b, const void *p, size_t n); /* LAB_EINFRA when over max */
int lab_buf_printf(struct lab_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lab_buf_consume(struct lab_buf *b, size_t n); /* drop n bytes from the front */
/* Empty it; its room is kept for the next contents when at most keep bytes. */
void lab_buf_reset(struct lab_buf *b, size_t keep);
void lab_buf_free(struct lab_buf *b);
const char *lab_buf_cstr(struct lab_buf *b); /* NUL-terminated view (no len change) */

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t lab_now_ns(void);
uint64_t lab_now_ms(void);
/* Wall clock, UTC, ISO 8601 "2026-11-30T06:14:07Z" into buf (>= 21 bytes). */
void lab_utc_iso(char *buf, size_t n, int64_t unix_secs);

/* Start a thread that takes no signal (they stay the event loop's signalfd,
 * whatever the loop blocks later): created with every signal blocked, it
 * inherits that mask.  0 or the pthread_create error. */
int lab_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* Set O_CLOEXEC / O_NONBLOCK on an fd. */
int lab_fd_cloexec(int fd);
int lab_fd_nonblock(int fd);

/* Write a whole file atomically (tmp + fsync + rename). */
int lab_write_file_atomic(const char *path, const void *data, size_t len, struct lab_err *e);
/* The same, streamed: lab_atomic_open creates PATH.tmp.PID and gives a FILE *
 * on it (64 KiB buffer); lab_atomic_commit flushes, fsyncs and renames it over
 * PATH, or, when any write failed (a full disk), removes it and leaves PATH as
 * it was; lab_atomic_abort removes it.  Either ends the lab_atomic. */
struct lab_atomic {
	FILE *f;
	char *tmp, *path;
	char *buf; /* f's buffer (glibc ignores setvbuf's size without one) */
};
int lab_atomic_open(struct lab_atomic *a, const char *path, struct lab_err *e);
int lab_atomic_commit(struct lab_atomic *a, struct lab_err *e);
void lab_atomic_abort(struct lab_atomic *a);
/* Read a whole file (capped at max bytes). Caller frees *out. */
int lab_read_file(const char *path, size_t max, char **out, size_t *len, struct lab_err *e);
/* mkdir -p */
int lab_mkdir_p(const char *path, int mode);

/* Levenshtein distance, for "did you mean". */
int lab_edit_distance(const char *a, const char *b);

/* SHA-256 of a buffer or a file, as 64 lowercase hex chars + NUL. */
void lab_sha256(const void *data, size_t len, char hex[65]);
int lab_sha256_file(const char *path, char hex[65], struct lab_err *e);
/* Incremental SHA-256: new, update any number of times, then final (which frees).
 * lab_sha256_raw gives the 32-byte digest of a buffer. */
struct lab_sha256_ctx;
struct lab_sha256_ctx *lab_sha256_new(void);
void lab_sha256_update(struct lab_sha256_ctx *c, const void *data, size_t len);
void lab_sha256_final(struct lab_sha256_ctx *c, char hex[65]);
void lab_sha256_raw(const void *data, size_t len, unsigned char md[32]);

/*
 * Safe names (docs/configuration.md, "Names"): identifiers that end up in
 * file names, URLs, argv and the DUT's shell.  Grammar:
 * [A-Za-z0-9][A-Za-z0-9._+-]{0,63} with no "..".  Returns NULL when s is
 * one, else a short reason (static text) for the error message.
 */
#define LAB_NAME_MAX 64
const char *lab_name_check(const char *s);

/*
 * dir + "/" + name into *out (malloc'd), refusing a name that could leave
 * dir: empty, ".", "..", containing '/' or a control byte (LAB_EUSAGE).
 * For files named after boards, runs, ... (transcripts, work dirs).
 */
int lab_path_join(const char *dir, const char *name, char **out, struct lab_err *e);

/*
 * Terminal-safe text (docs/reports.md, "Control characters"): C0 controls
 * except TAB and LF, DEL, C1 controls (U+0080..U+009F) and bytes that are
 * not valid UTF-8 are written as "\xNN" (one escape per byte); everything
 * else passes unchanged.  lab_text_escape writes into dst (always
 * NUL-terminated, cut at a whole escape) and returns the length the whole
 * escaped text needs; lab_text_clean is true when s needs no escape.
 */
size_t lab_text_escape(char *dst, size_t n, const char *s);
bool lab_text_clean(const char *s);
/* A write-only stream that applies the same escaping to everything written
 * to it and passes it on to `under` (fclose flushes, leaves `under` open). */
FILE *lab_text_stream(FILE *under);

#define LAB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define LAB_UNUSED(x) ((void)(x))

/* Cut an escaped line to width columns in place (UTF-8 aware: never splits a
 * character; a cut line ends in "~") and drop trailing blanks. */
void lab_text_fit(char *buf, int width);

#endif
