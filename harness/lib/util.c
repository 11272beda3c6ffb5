/* util.c - see util.h. */
#include "util.h"
#include "hex.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

const char *lab_strerror(int rc)
{
	switch (rc) {
	case LAB_OK: return "ok";
	case LAB_EFOUND: return "regression or test failure found";
	case LAB_EUSAGE: return "usage or configuration error";
	case LAB_EINFRA: return "infrastructure error";
	case LAB_ETIMEOUT: return "timed out";
	case LAB_EPROTO: return "protocol error";
	default: return "unknown error";
	}
}

int lab_exit_code(int rc)
{
	switch (rc) {
	case LAB_OK: return 0;
	case LAB_EFOUND: return 1;
	case LAB_EUSAGE: return 2;
	default: return 3;
	}
}

int lab_err_setv(struct lab_err *e, int rc, const char *fmt, va_list ap)
{
	if (e == NULL || e->msg[0] != '\0')
		return rc;
	e->rc = rc;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	return rc;
}

int lab_err_set(struct lab_err *e, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lab_err_setv(e, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int lab_err_at(struct lab_err *e, int rc, const char *file, int line, const char *func,
	       const char *fmt, ...)
{
	va_list ap;
	if (e == NULL || e->msg[0] != '\0')
		return rc;
	const char *base = strrchr(file, '/');
	snprintf(e->where, sizeof e->where, "%s:%d %s", base ? base + 1 : file, line, func);
	va_start(ap, fmt);
	lab_err_setv(e, rc, fmt, ap);
	va_end(ap);
	return rc;
}

void lab_err_clear(struct lab_err *e)
{
	memset(e, 0, sizeof *e);
}

static void oom(void)
{
	fputs("emmclab: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		oom();
	return p;
}

/* A large calloc is a fresh mapping whose pages nothing has touched.  A
 * read of such a page maps the kernel's shared zero page, and the first write
 * after it is a copy-on-write fault that flushes the page's TLB entry on every
 * CPU the process runs on (an interrupt to the other core when a second
 * thread runs).  Hash tables probe (read) a slot before they fill it, so each
 * of their pages took two faults and a flush: 9,000 flushes in the report of a
 * 1,024-board night (docs/benchmarks.md, wave 26).  memset writes first. */
void *xcalloc_written(size_t n, size_t sz)
{
	void *p = xreallocarray(NULL, n, sz); /* its overflow check; n * sz fits */
	memset(p, 0, n * sz);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xreallocarray(void *p, size_t n, size_t sz)
{
	if (sz && n > SIZE_MAX / sz)
		oom();
	return xrealloc(p, n * sz);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		oom();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *p;
	if (vasprintf(&p, fmt, ap) < 0)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

void lab_mem_bulk_mapped(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

/* ---- string pool ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void strpool_grow(struct lab_strpool *sp)
{
	size_t ncap = sp->cap ? sp->cap * 2 : 256;
	char **ns = xcalloc_written(ncap, sizeof *ns);
	for (size_t i = 0; i < sp->cap; i++) {
		if (!sp->slot[i])
			continue;
		size_t j = fnv1a(sp->slot[i], strlen(sp->slot[i])) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = sp->slot[i];
	}
	free(sp->slot);
	sp->slot = ns;
	sp->cap = ncap;
}

const char *lab_strpool_intern(struct lab_strpool *sp, const char *s)
{
	if (!s)
		s = "";
	if (sp->n * 2 >= sp->cap)
		strpool_grow(sp);
	size_t len = strlen(s);
	size_t j = fnv1a(s, len) & (sp->cap - 1);
	while (sp->slot[j]) {
		if (strcmp(sp->slot[j], s) == 0)
			return sp->slot[j];
		j = (j + 1) & (sp->cap - 1);
	}
	sp->slot[j] = xstrndup(s, len);
	sp->n++;
	return sp->slot[j];
}

void lab_strpool_free(struct lab_strpool *sp)
{
	for (size_t i = 0; i < sp->cap; i++)
		free(sp->slot[i]);
	free(sp->slot);
	sp->slot = NULL;
	sp->cap = sp->n = 0;
}

void lab_idseq_push(struct lab_idseq *q, int64_t id)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 1024;
		q->id = xreallocarray(q->id, q->cap, sizeof *q->id);
	}
	q->id[q->n++] = id;
}

bool lab_idseq_find(struct lab_idseq *q, int64_t id, size_t *out)
{
	size_t h = q->hint;
	if (h < q->n && q->id[h] == id) {
		*out = h;
		return true;
	}
	if (h + 1 < q->n && q->id[h + 1] == id) {
		*out = q->hint = h + 1;
		return true;
	}
	size_t lo = 0, hi = q->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < q->n && q->id[lo] == id) {
		*out = q->hint = lo;
		return true;
	}
	return false;
}

size_t lab_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

size_t lab_strlcat(char *dst, const char *src, size_t size)
{
	size_t d = strnlen(dst, size);
	if (d == size)
		return d + strlen(src);
	return d + lab_strlcpy(dst + d, src, size - d);
}

void lab_fmt_fixed(char *buf, size_t n, uint64_t m, int k, bool neg)
{
	char tmp[64], *q = tmp + sizeof tmp; /* 20 digits, '.', 40 decimals, '-' */
	*--q = '\0';
	if (k > 40)
		k = 40;
	for (int d = 0; d < k; d++) {
		*--q = (char)('0' + m % 10);
		m /= 10;
	}
	if (k > 0)
		*--q = '.';
	do {
		*--q = (char)('0' + m % 10);
		m /= 10;
	} while (m);
	if (neg)
		*--q = '-';
	lab_strlcpy(buf, q, n);
}

void lab_fmt_double(char *buf, size_t n, double v)
{
	/* The shortest %.*g that reads back as v.  If p <= 15 digits do, the
	 * p-digit decimal is also v's nearest 15-digit one (a double's error,
	 * 1.1e-16 relative, is below half a 15-digit step, 5e-16), so %.15g
	 * prints those p digits with zeros after them that %g strips, or before
	 * the point in an integer; p is the count of digits left once leading
	 * and trailing zeros go.  Otherwise p is 16 or 17.  One to three
	 * conversions each way instead of the five a binary search needs; the
	 * same text (test_util compares with that search).  Subnormals carry
	 * fewer digits than that: the binary search. */
	/* Most figures are short decimals (an agent's "24.8831278"): the smallest
	 * k with v = m / 10^k exactly, m < 10^15, gives the text without printf,
	 * as %.15g would write it (the decimal m / 10^k has at most 15 digits and
	 * v is its nearest double, m / 10^k being one correctly rounded
	 * division).  Only where %g keeps the fixed notation: 1e-4 <= |v| < 1e9,
	 * and no integer with trailing zeros (which %.2g writes as 1.5e+03). */
	double a = fabs(v);
	if (a >= 1e-4 && a < 1e9) {
		static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
					     1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
		for (int k = 0; k < (int)LAB_ARRAY_SIZE(p10); k++) {
			double t = a * p10[k];
			if (t >= 1e15)
				break;
			double m = nearbyint(t);
			if (m / p10[k] != a)
				continue;
			uint64_t u = (uint64_t)m;
			if (k == 0 && u % 10 == 0)
				break;
			lab_fmt_fixed(buf, n, u, k, v < 0);
			return;
		}
	}
	if (v != 0 && a < DBL_MIN) {
		int lo = 1, hi = 17;
		while (lo < hi) {
			int p = lo + (hi - lo) / 2;
			snprintf(buf, n, "%.*g", p, v);
			if (strtod(buf, NULL) == v)
				hi = p;
			else
				lo = p + 1;
		}
		snprintf(buf, n, "%.*g", lo, v);
		return;
	}
	snprintf(buf, n, "%.15g", v);
	if (strtod(buf, NULL) == v) {
		int digits = 0, zeros = 0;
		bool lead = true;
		for (const char *c = buf; *c && *c != 'e' && *c != 'E'; c++) {
			if (*c < '0' || *c > '9')
				continue;
			if (*c == '0' && lead)
				continue;
			lead = false;
			if (*c == '0') {
				zeros++;
			} else {
				digits += zeros + 1;
				zeros = 0;
			}
		}
		if (digits < 1)
			digits = 1;
		if (digits < 15)
			snprintf(buf, n, "%.*g", digits, v);
		return;
	}
	snprintf(buf, n, "%.16g", v);
	if (strtod(buf, NULL) == v)
		return;
	snprintf(buf, n, "%.17g", v);
}

int lab_parse_i64(const char *s, int64_t *out)
{
	char *end;
	if (s == NULL || *s == '\0')
		return LAB_EUSAGE;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || *end != '\0')
		return LAB_EUSAGE;
	*out = v;
	return LAB_OK;
}

int lab_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (s == NULL || *s == '\0' || *s == '-')
		return LAB_EUSAGE;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end != '\0')
		return LAB_EUSAGE;
	*out = v;
	return LAB_OK;
}

int lab_parse_double(const char *s, double *out)
{
	char *end;
	if (s == NULL || *s == '\0')
		return LAB_EUSAGE;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end != '\0' || isnan(v))
		return LAB_EUSAGE;
	*out = v;
	return LAB_OK;
}

void lab_buf_init(struct lab_buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

int lab_buf_append(struct lab_buf *b, const void *p, size_t n)
{
	if (b->max && b->len + n > b->max)
		return LAB_EINFRA;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->len + n + 1)
			nc *= 2;
		b->data = xrealloc(b->data, nc);
		b->cap = nc;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return LAB_OK;
}

int lab_buf_printf(struct lab_buf *b, const char *fmt, ...)
{
	/* Formatted straight into the spare room when it fits (the usual case:
	 * no allocation), else through a temporary copy. */
	va_list ap;
	va_start(ap, fmt);
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	int n = room ? vsnprintf(b->data + b->len, room, fmt, ap) : -1;
	va_end(ap);
	if (n >= 0 && (size_t)n < room && (!b->max || b->len + (size_t)n <= b->max)) {
		b->len += (size_t)n;
		return LAB_OK;
	}
	if (b->data)
		b->data[b->len] = '\0';
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	int rc = lab_buf_append(b, s, strlen(s));
	free(s);
	return rc;
}

void lab_buf_consume(struct lab_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

void lab_buf_reset(struct lab_buf *b, size_t keep)
{
	if (b->cap > keep) {
		free(b->data);
		b->data = NULL;
		b->cap = 0;
	}
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void lab_buf_free(struct lab_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *lab_buf_cstr(struct lab_buf *b)
{
	if (b->data == NULL)
		return "";
	return b->data;
}

uint64_t lab_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lab_now_ms(void)
{
	return lab_now_ns() / 1000000ull;
}

void lab_utc_iso(char *buf, size_t n, int64_t unix_secs)
{
	time_t t = (time_t)unix_secs;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int lab_fd_cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);
	if (f < 0 || fcntl(fd, F_SETFD, f | FD_CLOEXEC) < 0)
		return LAB_EINFRA;
	return LAB_OK;
}

int lab_fd_nonblock(int fd)
{
	int f = fcntl(fd, F_GETFL);
	if (f < 0 || fcntl(fd, F_SETFL, f | O_NONBLOCK) < 0)
		return LAB_EINFRA;
	return LAB_OK;
}

static void atomic_end(struct lab_atomic *a)
{
	free(a->buf); /* after fclose: the stream used it until then */
	a->buf = NULL;
	free(a->tmp);
	free(a->path);
	a->tmp = a->path = NULL;
	a->f = NULL;
}

int lab_atomic_open(struct lab_atomic *a, const char *path, struct lab_err *e)
{
	a->path = xstrdup(path);
	a->tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	a->buf = NULL;
	int fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(a->f = fdopen(fd, "w"))) {
		int rc = lab_err_set(e, LAB_EINFRA, "%s: %s", a->tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(a->tmp);
		}
		atomic_end(a);
		return rc;
	}
	a->buf = xmalloc(65536);
	setvbuf(a->f, a->buf, _IOFBF, 65536);
	return LAB_OK;
}

int lab_atomic_commit(struct lab_atomic *a, struct lab_err *e)
{
	int rc = LAB_OK;
	/* a write that failed earlier (ENOSPC) left the stream's error flag */
	if (fflush(a->f) != 0)
		rc = lab_err_set(e, LAB_EINFRA, "%s: write: %s", a->tmp, strerror(errno));
	else if (ferror(a->f))
		rc = lab_err_set(e, LAB_EINFRA, "%s: a write failed", a->tmp);
	else if (fsync(fileno(a->f)) < 0)
		rc = lab_err_set(e, LAB_EINFRA, "%s: %s", a->tmp, strerror(errno));
	if (fclose(a->f) != 0 && !rc)
		rc = lab_err_set(e, LAB_EINFRA, "%s: %s", a->tmp, strerror(errno));
	if (!rc && rename(a->tmp, a->path) < 0)
		rc = lab_err_set(e, LAB_EINFRA, "rename %s: %s", a->path, strerror(errno));
	if (rc)
		unlink(a->tmp);
	atomic_end(a);
	return rc;
}

void lab_atomic_abort(struct lab_atomic *a)
{
	if (!a->f)
		return;
	fclose(a->f);
	unlink(a->tmp);
	atomic_end(a);
}

int lab_write_file_atomic(const char *path, const void *data, size_t len, struct lab_err *e)
{
	struct lab_atomic a;
	int rc = lab_atomic_open(&a, path, e);
	if (rc)
		return rc;
	if (len)
		fwrite(data, 1, len, a.f);
	return lab_atomic_commit(&a, e);
}

int lab_read_file(const char *path, size_t max, char **out, size_t *len, struct lab_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lab_err_set(e, errno == ENOENT ? LAB_EUSAGE : LAB_EINFRA, "%s: %s", path,
				   strerror(errno));
	struct lab_buf b;
	lab_buf_init(&b, max);
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: read: %s", path, strerror(errno));
			close(fd);
			lab_buf_free(&b);
			return rc;
		}
		if (r == 0)
			break;
		if (lab_buf_append(&b, chunk, (size_t)r) != LAB_OK) {
			close(fd);
			lab_buf_free(&b);
			return lab_err_set(e, LAB_EUSAGE, "%s: larger than %zu bytes", path, max);
		}
	}
	close(fd);
	if (b.data == NULL)
		lab_buf_append(&b, "", 0);
	*out = b.data;
	if (len)
		*len = b.len;
	return LAB_OK;
}

int lab_mkdir_p(const char *path, int mode)
{
	/* The common case at lab scale: the directory is already there (every job
	 * makes sure of its work directory), which one stat answers instead of a
	 * failing mkdir per path component. */
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return LAB_OK;
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST) {
				free(p);
				return LAB_EINFRA;
			}
			*s = '/';
		}
	}
	int rc = (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST) ? LAB_EINFRA : LAB_OK;
	free(p);
	return rc;
}

int lab_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *row = xcalloc(lb + 1, sizeof *row);
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int tmp = row[j];
			int cost = a[i - 1] == b[j - 1] ? 0 : 1;
			int v = prev + cost;
			if (row[j] + 1 < v)
				v = row[j] + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			prev = tmp;
		}
	}
	int d = row[lb];
	free(row);
	return d;
}

/* SHA-256 from OpenSSL's libcrypto (its assembly is several times faster than portable C,
 * and artefacts are hashed on every boot).  EVP fails only when it cannot allocate, which
 * xmalloc treats as fatal too. */
static void sha256_hex(const unsigned char *md, char hex[65])
{
	hex_encode(hex, md, 32);
}

void lab_sha256(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	if (!EVP_Digest(data, len, md, NULL, EVP_sha256(), NULL))
		abort();
	sha256_hex(md, hex);
}

struct lab_sha256_ctx *lab_sha256_new(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		abort();
	return (struct lab_sha256_ctx *)ctx;
}

void lab_sha256_update(struct lab_sha256_ctx *c, const void *data, size_t len)
{
	if (len && !EVP_DigestUpdate((EVP_MD_CTX *)c, data, len))
		abort();
}

void lab_sha256_final(struct lab_sha256_ctx *c, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	if (!EVP_DigestFinal_ex((EVP_MD_CTX *)c, md, NULL))
		abort();
	EVP_MD_CTX_free((EVP_MD_CTX *)c);
	sha256_hex(md, hex);
}

void lab_sha256_raw(const void *data, size_t len, unsigned char md[32])
{
	unsigned char full[EVP_MAX_MD_SIZE];
	if (!EVP_Digest(data, len, full, NULL, EVP_sha256(), NULL))
		abort();
	memcpy(md, full, 32);
}

int lab_sha256_file(const char *path, char hex[65], struct lab_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lab_err_set(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		abort();
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: read: %s", path, strerror(errno));
			close(fd);
			EVP_MD_CTX_free(ctx);
			return rc;
		}
		if (r == 0)
			break;
		if (!EVP_DigestUpdate(ctx, chunk, (size_t)r))
			abort();
	}
	close(fd);
	unsigned char md[EVP_MAX_MD_SIZE];
	if (!EVP_DigestFinal_ex(ctx, md, NULL))
		abort();
	EVP_MD_CTX_free(ctx);
	sha256_hex(md, hex);
	return LAB_OK;
}

/* ---- safe names, paths and text ---- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '+' || c == '-';
}

const char *lab_name_check(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return "a name cannot be empty";
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return "a name starts with a letter or a digit";
	size_t i;
	for (i = 0; s[i]; i++) {
		if (!name_char(s[i]))
			return "a name holds only letters, digits and . _ + -";
		if (i >= LAB_NAME_MAX)
			return "a name is at most 64 characters";
	}
	if (strstr(s, ".."))
		return "a name cannot contain '..'";
	return NULL;
}

int lab_path_join(const char *dir, const char *name, char **out, struct lab_err *e)
{
	*out = NULL;
	bool bad = name == NULL || name[0] == '\0' || strcmp(name, ".") == 0 ||
		   strcmp(name, "..") == 0 || strchr(name, '/') != NULL;
	for (const char *p = name; !bad && *p; p++)
		bad = (unsigned char)*p < 0x20 || *p == 0x7f;
	if (bad)
		return LAB_ERR(e, LAB_EUSAGE, "'%s' cannot be a file name inside %s (a single path "
			       "component without control bytes, not '.' or '..')",
			       name ? name : "", dir);
	size_t dl = strlen(dir);
	*out = dl && dir[dl - 1] == '/' ? xasprintf("%s%s", dir, name) : xasprintf("%s/%s", dir, name);
	return LAB_OK;
}

/* Bytes of the valid, printable UTF-8 character at s, or 0 when s[0] must be escaped. */
static size_t text_char_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? 0 : 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf; /* no UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (avail < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (c == 0xc2 && s[1] <= 0x9f)
		return 0; /* C1 control: 0x9b is CSI on some terminals */
	return len;
}

size_t lab_text_escape(char *dst, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t avail = strlen(s), need = 0, w = 0;
	bool full = n == 0;
	while (avail) {
		size_t l = text_char_len(p, avail);
		char esc[5];
		const char *piece = (const char *)p;
		size_t pl = l;
		if (l == 0) {
			snprintf(esc, sizeof esc, "\\x%02x", p[0]);
			piece = esc;
			pl = 4;
			l = 1;
		}
		if (!full && w + pl < n) {
			memcpy(dst + w, piece, pl);
			w += pl;
		} else
			full = true;
		need += pl;
		p += l;
		avail -= l;
	}
	if (n)
		dst[w] = '\0';
	return need;
}

bool lab_text_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t avail = strlen(s);
	while (avail) {
		size_t l = text_char_len(p, avail);
		if (l == 0)
			return false;
		p += l;
		avail -= l;
	}
	return true;
}

struct text_cookie {
	FILE *under;
	unsigned char part[4]; /* an incomplete UTF-8 sequence held for the next write */
	size_t npart;
};

static void text_emit(struct text_cookie *c, const unsigned char *p, size_t avail, bool final)
{
	/* characters that need no escape go out together, one fwrite per run (a
	 * call per character was a quarter of `emmclab compare`'s CPU at 1,024
	 * boards) */
	const unsigned char *run = p;
	while (avail) {
		size_t l = text_char_len(p, avail);
		if (l == 0 && !final && avail < 4 && p[0] >= 0xc2 && p[0] <= 0xf4) {
			/* maybe only cut by the write boundary: decide with the next bytes */
			bool prefix_ok = true;
			for (size_t i = 1; i < avail; i++)
				prefix_ok &= (p[i] & 0xc0) == 0x80;
			if (prefix_ok) {
				fwrite(run, 1, (size_t)(p - run), c->under);
				memcpy(c->part, p, avail);
				c->npart = avail;
				return;
			}
		}
		if (l == 0) {
			fwrite(run, 1, (size_t)(p - run), c->under);
			fprintf(c->under, "\\x%02x", p[0]);
			l = 1;
			run = p + l;
		}
		p += l;
		avail -= l;
	}
	fwrite(run, 1, (size_t)(p - run), c->under);
}

static ssize_t text_write(void *cookie, const char *buf, size_t size)
{
	struct text_cookie *c = cookie;
	size_t done = 0;
	/* complete a held sequence first, byte by byte */
	while (c->npart && done < size) {
		c->part[c->npart++] = (unsigned char)buf[done++];
		unsigned char held[4];
		size_t nh = c->npart;
		memcpy(held, c->part, nh);
		c->npart = 0;
		text_emit(c, held, nh, false);
	}
	text_emit(c, (const unsigned char *)buf + done, size - done, false);
	return (ssize_t)size;
}

static int text_close(void *cookie)
{
	struct text_cookie *c = cookie;
	if (c->npart)
		text_emit(c, c->part, c->npart, true);
	fflush(c->under);
	free(c);
	return 0;
}

FILE *lab_text_stream(FILE *under)
{
	struct text_cookie *c = xcalloc(1, sizeof *c);
	c->under = under;
	cookie_io_functions_t io = {.write = text_write, .close = text_close};
	FILE *f = fopencookie(c, "w", io);
	if (f == NULL) {
		free(c);
		return NULL;
	}
	return f;
}

void lab_text_fit(char *buf, int width)
{
	size_t len = strlen(buf), i = 0, cut = 0;
	int cols = 0;
	while (i < len) {
		if (cols == width - 1)
			cut = i;
		unsigned char c = (unsigned char)buf[i];
		i += c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (i > len)
			i = len;
		cols++;
	}
	if (cols > width) {
		buf[cut] = '~';
		buf[cut + 1] = '\0';
	}
	size_t n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = '\0';
}

int lab_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
