/* util.c - see util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	va_list ap;
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

int lab_write_file_atomic(const char *path, const void *data, size_t len, struct lab_err *e)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = lab_err_set(e, LAB_EINFRA, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: write: %s", tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			free(tmp);
			return rc;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int rc = lab_err_set(e, LAB_EINFRA, "%s: %s", tmp, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	if (rename(tmp, path) < 0) {
		int rc = lab_err_set(e, LAB_EINFRA, "rename %s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	return LAB_OK;
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

/* SHA-256 (FIPS 180-4). */
struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t S1 = ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = h + S1 + ch + K256[i] + w[i];
		uint32_t S0 = ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22);
		uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + mj;
		h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof iv);
	s->len = 0;
	s->n = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->len += len;
	while (len) {
		size_t c = 64 - s->n < len ? 64 - s->n : len;
		memcpy(s->buf + s->n, p, c);
		s->n += c;
		p += c;
		len -= c;
		if (s->n == 64) {
			sha256_block(s, s->buf);
			s->n = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, char hex[65])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80;
	sha256_update(s, &pad, 1);
	pad = 0;
	while (s->n != 56)
		sha256_update(s, &pad, 1);
	uint8_t lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, lenb, 8);
	for (int i = 0; i < 8; i++)
		snprintf(hex + 8 * i, 9, "%08" PRIx32, s->h[i]);
}

void lab_sha256(const void *data, size_t len, char hex[65])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, hex);
}

int lab_sha256_file(const char *path, char hex[65], struct lab_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lab_err_set(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	struct sha256 s;
	sha256_init(&s);
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: read: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		if (r == 0)
			break;
		sha256_update(&s, chunk, (size_t)r);
	}
	close(fd);
	sha256_final(&s, hex);
	return LAB_OK;
}

uint32_t lab_crc32(uint32_t crc, const void *data, size_t len)
{
	static uint32_t table[256];
	static int ready;
	if (!ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		ready = 1;
	}
	const uint8_t *p = data;
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
