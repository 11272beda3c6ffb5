/*
 * proto.c - the DUT agent line protocol (see proto.h and docs/agent.md).
 *
 * libc only: this file is also compiled into the static emmclab-agent, so it
 * must not use util.c or anything beyond the C library.
 *
 * Parsing rules (what the console noise forces on us):
 *  - trailing CR/LF are stripped; anything before the LAST "@@emmclab " is
 *    noise (a valid body never contains '@': it is percent-encoded);
 *  - the CRC is checked before the structure, so a line damaged anywhere
 *    (including a truncated line without " crc=") is PROTO_BAD_CRC, with
 *    m->seq set when the sequence number was still readable, so the caller
 *    can ask the agent to resend it;
 *  - a line whose CRC is right but whose structure is wrong is
 *    PROTO_MALFORMED (a bug at the sender, resending will not help);
 *  - a right CRC with another protocol version is PROTO_BAD_VERSION.
 */
#include "proto.h"
#include "crc.h"
#include "hex.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CRC_FIELD " crc="
#define CRC_FIELD_LEN 5

static int proto_unreserved(unsigned char c)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("._~:/+,-", c) != NULL;
}

/* Keys and kinds: a conservative identifier set, so they never need encoding. */
static int proto_keychar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

int proto_encode_value(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	if (!dst || size == 0)
		return -1;
	for (; src && *src; src++) {
		unsigned char c = (unsigned char)*src;

		if (proto_unreserved(c)) {
			if (n + 1 >= size)
				return -1;
			dst[n++] = (char)c;
		} else {
			if (n + 3 >= size)
				return -1;
			dst[n++] = '%';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 0xf];
		}
	}
	dst[n] = '\0';
	return (int)n;
}

/* dst may equal src (decoding never grows).  %00 is refused: values are C strings. */
int proto_decode_value(char *dst, size_t size, const char *src, size_t len)
{
	size_t i = 0, n = 0;

	if (!dst || size == 0 || (!src && len))
		return -1;
	while (i < len) {
		unsigned char c = (unsigned char)src[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = hex_digit((unsigned char)src[i + 1]);
			lo = hex_digit((unsigned char)src[i + 2]);
			if (hi < 0 || lo < 0 || (hi | lo) == 0)
				return -1;
			c = (unsigned char)(hi << 4 | lo);
			i += 3;
		} else {
			if (c == '\0')
				return -1;
			i++;
		}
		if (n + 1 >= size)
			return -1;
		dst[n++] = (char)c;
	}
	dst[n] = '\0';
	return (int)n;
}

/* Strict unsigned decimal, no sign, no leading junk; 0 on success. */
static int proto_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20)
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Last occurrence of the magic followed by a space. */
static const char *proto_find_magic(const char *line, size_t len)
{
	const size_t ml = sizeof(PROTO_MAGIC) - 1;
	size_t end;

	if (len < ml + 1)
		return NULL;
	/* from the end: the candidates are the '@'s at 0 .. len - ml - 1 */
	end = len - ml;
	while (end > 0) {
		const char *p = memrchr(line, '@', end);
		size_t i;

		if (!p)
			return NULL;
		i = (size_t)(p - line);
		if (memcmp(p, PROTO_MAGIC, ml) == 0 && line[i + ml] == ' ')
			return p;
		end = i;
	}
	return NULL;
}

/* Best-effort seq from "@@emmclab <ver> <seq> ..." for PROTO_BAD_CRC. */
static uint64_t proto_peek_seq(const char *body, size_t len)
{
	const size_t ml = sizeof(PROTO_MAGIC) - 1;
	size_t i = ml + 1, s;
	uint64_t seq = 0;

	while (i < len && body[i] >= '0' && body[i] <= '9')
		i++;
	if (i == ml + 1 || i >= len || body[i] != ' ')
		return 0;
	s = ++i;
	while (i < len && body[i] >= '0' && body[i] <= '9')
		i++;
	if (i >= len || body[i] != ' ')
		return 0;
	if (proto_parse_u64(body + s, i - s, &seq) != 0)
		return 0;
	return seq;
}

static void proto_msg_reset(struct proto_msg *m)
{
	m->version = 0;
	m->seq = 0;
	m->kind[0] = '\0';
	m->nkv = 0;
	m->storage[0] = '\0';
}

/* Next space-separated token of storage starting at *pos; NUL-terminates it. */
static char *proto_next_token(char *s, size_t len, size_t *pos)
{
	size_t i = *pos, start;

	while (i < len && s[i] == ' ')
		i++;
	if (i >= len)
		return NULL;
	start = i;
	while (i < len && s[i] != ' ')
		i++;
	s[i] = '\0';
	*pos = i < len ? i + 1 : len;
	return s + start;
}

int proto_parse(const char *line, size_t len, struct proto_msg *m)
{
	const char *body, *crcp = NULL;
	size_t blen, clen, i, pos;
	uint32_t want = 0;
	uint64_t u;
	char *tok;

	proto_msg_reset(m);
	if (!line)
		return PROTO_NOT_PROTO;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	body = proto_find_magic(line, len);
	if (!body)
		return PROTO_NOT_PROTO;
	blen = len - (size_t)(body - line);
	m->seq = proto_peek_seq(body, blen);

	/* The last " crc=" ends the line: exactly 8 hex digits, maybe trailing blanks. */
	for (i = blen >= CRC_FIELD_LEN ? blen - CRC_FIELD_LEN + 1 : 0; i-- > 0;)
		if (body[i] == ' ' && memcmp(body + i, CRC_FIELD, CRC_FIELD_LEN) == 0) {
			crcp = body + i;
			break;
		}
	if (!crcp)
		return PROTO_BAD_CRC;
	clen = blen - (size_t)(crcp - body) - CRC_FIELD_LEN;
	while (clen > 8 && (crcp[CRC_FIELD_LEN + clen - 1] == ' ' ||
			    crcp[CRC_FIELD_LEN + clen - 1] == '\t'))
		clen--;
	if (clen != 8)
		return PROTO_BAD_CRC;
	for (i = 0; i < 8; i++) {
		int v = hex_digit((unsigned char)crcp[CRC_FIELD_LEN + i]);

		if (v < 0)
			return PROTO_BAD_CRC;
		want = want << 4 | (uint32_t)v;
	}
	blen = (size_t)(crcp - body);
	if (crc32_ieee(body, blen) != want)
		return PROTO_BAD_CRC;

	/* From here the bytes are what the sender meant. */
	if (blen >= sizeof(m->storage))
		goto malformed;
	memcpy(m->storage, body, blen);
	m->storage[blen] = '\0';
	pos = 0;
	tok = proto_next_token(m->storage, blen, &pos); /* the magic */
	tok = proto_next_token(m->storage, blen, &pos);
	if (!tok || proto_parse_u64(tok, strlen(tok), &u) != 0 || u > 1000000)
		goto malformed;
	m->version = (int)u;
	if (m->version != PROTO_VERSION) {
		m->nkv = 0;
		return PROTO_BAD_VERSION;
	}
	tok = proto_next_token(m->storage, blen, &pos);
	if (!tok || proto_parse_u64(tok, strlen(tok), &u) != 0 || u == 0)
		goto malformed;
	m->seq = u;
	tok = proto_next_token(m->storage, blen, &pos);
	if (!tok || strlen(tok) >= sizeof(m->kind))
		goto malformed;
	for (i = 0; tok[i]; i++)
		if (!proto_keychar((unsigned char)tok[i]))
			goto malformed;
	memcpy(m->kind, tok, strlen(tok) + 1);

	while ((tok = proto_next_token(m->storage, blen, &pos)) != NULL) {
		char *eq = strchr(tok, '=');
		char *k;
		int n;

		if (!eq || eq == tok || m->nkv >= PROTO_MAX_KV)
			goto malformed;
		for (k = tok; k < eq; k++)
			if (!proto_keychar((unsigned char)*k))
				goto malformed;
		*eq = '\0';
		n = proto_decode_value(eq + 1, strlen(eq + 1) + 1, eq + 1, strlen(eq + 1));
		if (n < 0)
			goto malformed;
		m->kv[m->nkv].key = tok;
		m->kv[m->nkv].value = eq + 1;
		m->nkv++;
	}
	return PROTO_OK;

malformed:
	m->nkv = 0;
	m->kind[0] = '\0';
	return PROTO_MALFORMED;
}

const char *proto_get(const struct proto_msg *m, const char *key)
{
	size_t i;

	if (!m || !key)
		return NULL;
	for (i = 0; i < m->nkv; i++)
		if (strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].value;
	return NULL;
}

int proto_get_i64(const struct proto_msg *m, const char *key, int64_t *out)
{
	const char *s = proto_get(m, key);
	char *end;
	long long v;

	if (!s || !*s || !out)
		return -1;
	/* base 10 only: "010" is ten, "0x10" is an error */
	if (!((*s >= '0' && *s <= '9') || ((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Numbers on the wire are C-locale decimals: refuse hex floats, inf, nan,
 * and parse with an explicit C locale so the controller's locale cannot
 * turn "1.5" into 1. */
int proto_get_double(const struct proto_msg *m, const char *key, double *out)
{
	static locale_t c_locale;
	const char *s = proto_get(m, key);
	char *end;
	double v;
	size_t i;

	if (!s || !*s || !out)
		return -1;
	for (i = 0; s[i]; i++)
		if (!strchr("0123456789+-.eE", s[i]))
			return -1;
	if (!c_locale)
		c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (!c_locale)
		return -1;
	errno = 0;
	v = strtod_l(s, &end, c_locale);
	if (errno || *end || end == s)
		return -1;
	*out = v;
	return 0;
}

/* Append len bytes and a NUL at buf + *n if they fit in size, as snprintf
 * would succeed; -1 if not.  proto_format without snprintf: a simulated
 * night formats a line a sample, most of the simulator's printf work. */
static int put(char *buf, size_t size, size_t *n, const char *s, size_t len)
{
	if (len >= size - *n)
		return -1;
	memcpy(buf + *n, s, len);
	*n += len;
	buf[*n] = '\0';
	return 0;
}

#define PROTO_STR_(x) #x
#define PROTO_STR(x) PROTO_STR_(x)

/* v in decimal at the end of t[0..24); returns its first digit */
static char *u64_dec(char t[24], uint64_t v)
{
	char *q = t + 24;
	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return q;
}

int proto_format(char *buf, size_t size, uint64_t seq, const char *kind, const char *const *kv)
{
	size_t n = 0, i, nkv = 0;
	int r;
	char t[24], *d;

	if (!buf || size == 0 || !kind || !*kind || strlen(kind) >= sizeof(((struct proto_msg *)0)->kind))
		return -1;
	for (i = 0; kind[i]; i++)
		if (!proto_keychar((unsigned char)kind[i]))
			return -1;
	/* The receiver keeps lines in PROTO_MAX_LINE bytes with the NUL. */
	if (size > PROTO_MAX_LINE)
		size = PROTO_MAX_LINE;
	/* "MAGIC VERSION SEQ KIND" */
	static const char head[] = PROTO_MAGIC " " PROTO_STR(PROTO_VERSION) " ";
	d = u64_dec(t, seq);
	if (put(buf, size, &n, head, sizeof head - 1) || put(buf, size, &n, d, (size_t)(t + 24 - d)) ||
	    put(buf, size, &n, " ", 1) || put(buf, size, &n, kind, strlen(kind)))
		return -1;
	for (; kv && kv[0]; kv += 2) {
		const char *key = kv[0];

		if (!*key || ++nkv > PROTO_MAX_KV)
			return -1;
		for (i = 0; key[i]; i++)
			if (!proto_keychar((unsigned char)key[i]))
				return -1;
		if (put(buf, size, &n, " ", 1) || put(buf, size, &n, key, i) || put(buf, size, &n, "=", 1))
			return -1;
		r = proto_encode_value(buf + n, size - n, kv[1] ? kv[1] : "");
		if (r < 0)
			return -1;
		n += (size_t)r;
	}
	uint32_t crc = crc32_ieee(buf, n);
	const unsigned char be[4] = {(unsigned char)(crc >> 24), (unsigned char)(crc >> 16),
				     (unsigned char)(crc >> 8), (unsigned char)crc};
	char c[CRC_FIELD_LEN + 9];
	memcpy(c, CRC_FIELD, CRC_FIELD_LEN);
	hex_encode(c + CRC_FIELD_LEN, be, sizeof be); /* "%08x" */
	c[CRC_FIELD_LEN + 8] = '\n';
	if (put(buf, size, &n, c, sizeof c))
		return -1;
	return (int)n;
}
