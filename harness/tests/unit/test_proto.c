/* test_proto.c - the agent line protocol: CRC, format/parse, encoding, limits. */
#include "crc.h"
#include "proto.h"
#include "tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Build "<body> crc=XXXXXXXX" with a correct CRC for hand-made bodies. */
static void with_crc(char *out, size_t size, const char *body)
{
	snprintf(out, size, "%s crc=%08x", body, crc32_ieee(body, strlen(body)));
}

static int parse_str(const char *s, struct proto_msg *m)
{
	return proto_parse(s, strlen(s), m);
}

static void test_crc(void)
{
	is_int(crc32_ieee("123456789", 9), 0xCBF43926u, "crc32 check value");
	is_int(crc32_ieee("", 0), 0, "crc32 of nothing");
	is_int(crc32_ieee("a", 1), 0xe8b7be43u, "crc32 of 'a'");
	/* the sliced loop against the bit-at-a-time definition: every length up to
	 * 300 at every alignment, so each tail and misalignment is covered */
	unsigned char buf[320];
	unsigned long long x = 1;
	for (size_t i = 0; i < sizeof buf; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (unsigned char)(x >> 56);
	}
	int bad = 0;
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 300; n++) {
			uint32_t c = 0xffffffffu;
			for (size_t i = 0; i < n; i++) {
				c ^= buf[off + i];
				for (int k = 0; k < 8; k++)
					c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
			}
			if (crc32_ieee(buf + off, n) != (c ^ 0xffffffffu))
				bad++;
		}
	is_int(bad, 0, "crc32 equals the bitwise definition at 2,408 lengths and offsets");
}

static void test_every_kind(void)
{
	static const char *const kinds[] = { "hello", "identity", "mode", "sample", "counter",
					     "progress", "error", "done" };
	static struct proto_msg m;
	char line[PROTO_MAX_LINE];
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const char *kv[] = { "a", "1", "text", "hello world = 100% @home\t\"q\"", "empty", "", NULL };
		int n = proto_format(line, sizeof(line), i + 1, kinds[i], kv);

		ok(n > 0 && line[n - 1] == '\n', "format %s", kinds[i]);
		is_int(parse_str(line, &m), PROTO_OK, "parse formatted line");
		is_str(m.kind, kinds[i], "kind survives");
		is_int((long long)m.seq, (long long)(i + 1), "seq survives");
		is_int(m.version, 1, "version");
		is_int((long long)m.nkv, 3, "three keys");
		is_str(proto_get(&m, "text"), "hello world = 100% @home\t\"q\"", "value decoded");
		is_str(proto_get(&m, "empty"), "", "empty value");
		ok(proto_get(&m, "missing") == NULL, "missing key is NULL");
		ok(strchr(line + 2, '@') == NULL, "no '@' after the magic (encoded)");
	}
}

static void test_realistic(void)
{
	static struct proto_msg m;
	char line[PROTO_MAX_LINE], noisy[PROTO_MAX_LINE + 64];
	const char *kv[] = { "workload", "androbench", "iter", "3", "metric", "seq_write",
			     "value", "149.5", "unit", "MiB/s", NULL };
	double d = 0;
	int64_t v = 0;
	int n = proto_format(line, sizeof(line), 42, "sample", kv);

	ok(n > 0, "format sample");
	ok(strncmp(line, "@@emmclab 1 42 sample workload=androbench iter=3 metric=seq_write "
			 "value=149.5 unit=MiB/s crc=", 87) == 0, "wire layout: %s", line);
	is_int(proto_get_double(&m, "value", &d), -1, "get on an empty message fails");
	is_int(parse_str(line, &m), PROTO_OK, "parse");
	is_int(proto_get_double(&m, "value", &d), 0, "value is a double");
	is_near(d, 149.5, 1e-12, "value");
	is_int(proto_get_i64(&m, "iter", &v), 0, "iter is an int");
	is_int(v, 3, "iter");
	is_int(proto_get_i64(&m, "value", &v), -1, "149.5 is not an int");
	is_int(proto_get_i64(&m, "unit", &v), -1, "unit is not an int");
	is_int(proto_get_double(&m, "unit", &d), -1, "unit is not a double");

	/* console noise in front, CR LF behind */
	snprintf(noisy, sizeof(noisy), "[  12.345678] mmc0: x@@emmclab 0 garbage%.*s\r\n", n - 1, line);
	is_int(parse_str(noisy, &m), PROTO_OK, "noise before the magic is tolerated");
	is_int((long long)m.seq, 42, "seq with noise");
	snprintf(noisy, sizeof(noisy), "%.*s\r\r\n", n - 1, line);
	is_int(parse_str(noisy, &m), PROTO_OK, "CR CR LF");
	snprintf(noisy, sizeof(noisy), "%.*s  ", n - 1, line);
	is_int(parse_str(noisy, &m), PROTO_OK, "trailing blanks after the crc");
	/* len is honoured: a NUL-free prefix only */
	is_int(proto_parse(line, (size_t)n - 3, &m), PROTO_BAD_CRC, "cut by len");
	is_int((long long)m.seq, 42, "seq still extracted");

	is_int(parse_str("login: root", &m), PROTO_NOT_PROTO, "plain text");
	is_int(parse_str("", &m), PROTO_NOT_PROTO, "empty");
	is_int(parse_str("@@emmclab", &m), PROTO_NOT_PROTO, "bare magic");
	is_int(parse_str("@@emmclabX 1 2 done crc=00000000", &m), PROTO_NOT_PROTO, "magic must end");
	is_int(proto_parse(NULL, 0, &m), PROTO_NOT_PROTO, "NULL");
}

static void test_bad_crc(void)
{
	static struct proto_msg m;
	char line[PROTO_MAX_LINE], bad[PROTO_MAX_LINE];
	const char *kv[] = { "status", "ok", "lines", "7", NULL };
	int n = proto_format(line, sizeof(line), 8, "done", kv);
	int i, fails = 0, seqs = 0;

	/* flip every byte in turn: never accepted */
	for (i = 0; i < n - 1; i++) {
		int r;

		memcpy(bad, line, (size_t)n + 1);
		bad[i] ^= 0x01;
		r = parse_str(bad, &m);
		if (r == PROTO_OK)
			fails++;
		if (r == PROTO_BAD_CRC && m.seq == 8)
			seqs++;
	}
	is_int(fails, 0, "no single-bit corruption accepted");
	ok(seqs >= n - 1 - 16, "seq recovered from most corrupted lines (%d of %d)", seqs, n - 1);

	memcpy(bad, line, (size_t)n + 1);
	bad[strlen("@@emmclab 1 8 done status=")] = 'x';
	is_int(parse_str(bad, &m), PROTO_BAD_CRC, "value changed");
	is_int((long long)m.seq, 8, "seq of the bad line");
	is_int((long long)m.nkv, 0, "no keys from a bad line");

	/* truncations at every position (line cut by noise) */
	fails = 0;
	for (i = 0; i < n - 1; i++) {
		int r = proto_parse(line, (size_t)i, &m);

		if (r == PROTO_OK)
			fails++;
	}
	is_int(fails, 0, "no truncation accepted");
	is_int(parse_str("@@emmclab 1 17 sample metric=x", &m), PROTO_BAD_CRC, "no crc field");
	is_int((long long)m.seq, 17, "seq of a truncated line");
	is_int(parse_str("@@emmclab 1 17 done crc=1234567", &m), PROTO_BAD_CRC, "7 hex digits");
	is_int(parse_str("@@emmclab 1 17 done crc=123456789", &m), PROTO_BAD_CRC, "9 hex digits");
	is_int(parse_str("@@emmclab 1 17 done crc=1234567g", &m), PROTO_BAD_CRC, "not hex");
	is_int(parse_str("@@emmclab 1 x17 done crc=12345678", &m), PROTO_BAD_CRC, "bad seq, bad crc");
	is_int((long long)m.seq, 0, "unreadable seq is 0");

	/* upper-case hex CRC is accepted */
	{
		char body[] = "@@emmclab 1 3 done status=ok lines=2";
		char up[128];

		snprintf(up, sizeof(up), "%s crc=%08X", body, crc32_ieee(body, strlen(body)));
		is_int(parse_str(up, &m), PROTO_OK, "upper-case crc");
	}
}

static void test_malformed(void)
{
	static struct proto_msg m;
	static const char *const bodies[] = {
		"@@emmclab 1 0 done",                 /* seq 0 */
		"@@emmclab 1 -3 done",                /* negative seq */
		"@@emmclab 1 99999999999999999999999 done", /* overflow */
		"@@emmclab 1 5",                      /* no kind */
		"@@emmclab 1 5 do!ne",                /* bad kind char */
		"@@emmclab 1 5 averyveryverylongkindname0123", /* kind too long */
		"@@emmclab 1 5 done novalue",         /* no '=' */
		"@@emmclab 1 5 done =v",              /* empty key */
		"@@emmclab 1 5 done k%41=v",          /* encoded key */
		"@@emmclab 1 5 done k=%4",            /* short escape */
		"@@emmclab 1 5 done k=%zz",           /* bad escape */
		"@@emmclab 1 5 done k=%00",           /* NUL */
		"@@emmclab x 5 done",                 /* version not a number */
	};
	char line[PROTO_MAX_LINE];
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		with_crc(line, sizeof(line), bodies[i]);
		is_int(parse_str(line, &m), PROTO_MALFORMED, bodies[i]);
	}
	with_crc(line, sizeof(line), "@@emmclab 2 5 done status=ok");
	is_int(parse_str(line, &m), PROTO_BAD_VERSION, "version 2");
	is_int(m.version, 2, "version reported");
	with_crc(line, sizeof(line), "@@emmclab 1 5 done  status=ok   lines=4");
	is_int(parse_str(line, &m), PROTO_OK, "runs of blanks between fields");
	is_str(proto_get(&m, "lines"), "4", "lines");
	with_crc(line, sizeof(line), "@@emmclab 1 5 done a=1 a=2");
	is_int(parse_str(line, &m), PROTO_OK, "duplicate keys");
	is_str(proto_get(&m, "a"), "1", "first duplicate wins");
	with_crc(line, sizeof(line), "@@emmclab 1 5 done v=a%2fb");
	is_int(parse_str(line, &m), PROTO_OK, "lower-case escapes");
	is_str(proto_get(&m, "v"), "a/b", "decoded");
}

static void test_encoding(void)
{
	char src[256], enc[1024], dec[256];
	int i, n;

	for (i = 1; i < 256; i++)
		src[i - 1] = (char)i;
	src[255] = '\0';
	n = proto_encode_value(enc, sizeof(enc), src);
	ok(n > 255, "all bytes encode (%d)", n);
	ok(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~:/+,-%")
		   == (size_t)n, "only the safe set on the wire");
	is_int(proto_decode_value(dec, sizeof(dec), enc, (size_t)n), 255, "decode length");
	ok(memcmp(dec, src, 256) == 0, "all bytes round trip");

	is_int(proto_encode_value(enc, sizeof(enc), "a b"), 5, "space is %%20");
	is_str(enc, "a%20b", "a%20b");
	is_int(proto_encode_value(enc, sizeof(enc), "MiB/s"), 5, "slash kept");
	is_int(proto_encode_value(enc, sizeof(enc), ""), 0, "empty");
	is_int(proto_encode_value(enc, 4, "abc"), 3, "exact fit");
	is_int(proto_encode_value(enc, 3, "abc"), -1, "no room for NUL");
	is_int(proto_encode_value(enc, 5, "ab c"), -1, "escape does not fit");
	is_int(proto_decode_value(dec, 4, "abc", 3), 3, "decode exact fit");
	is_int(proto_decode_value(dec, 3, "abc", 3), -1, "decode no room");
	is_int(proto_decode_value(dec, sizeof(dec), "%4", 2), -1, "truncated escape");
	is_int(proto_decode_value(dec, sizeof(dec), "%", 1), -1, "lone percent");
	is_int(proto_decode_value(dec, sizeof(dec), "%41%42", 6), 2, "two escapes");
	is_str(dec, "AB", "AB");
	is_int(proto_decode_value(dec, sizeof(dec), "a%41", 1), 1, "len honoured");
	is_str(dec, "a", "prefix only");
	is_int(proto_decode_value(dec, sizeof(dec), "a%41", 2), -1, "escape cut by len");
}

static void test_limits(void)
{
	static struct proto_msg m;
	static char big[PROTO_MAX_LINE * 2];
	char line[PROTO_MAX_LINE];
	const char *kv[4] = { "v", big, NULL, NULL };
	const char *many[2 * PROTO_MAX_KV + 3];
	char keys[PROTO_MAX_KV + 1][8];
	size_t fixed, i;
	int n;

	/* "@@emmclab 1 1 x v=" + value + " crc=XXXXXXXX\n" + NUL == PROTO_MAX_LINE */
	fixed = strlen("@@emmclab 1 1 x v=") + strlen(" crc=12345678\n") + 1;
	memset(big, 'z', PROTO_MAX_LINE - fixed);
	big[PROTO_MAX_LINE - fixed] = '\0';
	n = proto_format(line, sizeof(line), 1, "x", kv);
	is_int(n, PROTO_MAX_LINE - 1, "longest line formats");
	is_int(parse_str(line, &m), PROTO_OK, "longest line parses");
	is_int((long long)strlen(proto_get(&m, "v")), (long long)(PROTO_MAX_LINE - fixed), "value intact");
	big[PROTO_MAX_LINE - fixed] = 'z';
	big[PROTO_MAX_LINE - fixed + 1] = '\0';
	is_int(proto_format(line, sizeof(line), 1, "x", kv), -1, "one byte more is refused");
	{
		static char huge[PROTO_MAX_LINE * 3];

		is_int(proto_format(huge, sizeof(huge), 1, "x", kv), -1, "cap holds with a bigger buffer");
	}
	/* a too-long line with a valid CRC (hand-made) is malformed, not OK */
	{
		static char body[PROTO_MAX_LINE * 3], l2[PROTO_MAX_LINE * 3];

		memset(big, 'z', PROTO_MAX_LINE);
		big[PROTO_MAX_LINE] = '\0';
		snprintf(body, sizeof(body), "@@emmclab 1 1 x v=%s", big);
		with_crc(l2, sizeof(l2), body);
		is_int(parse_str(l2, &m), PROTO_MALFORMED, "over-long line refused");
	}
	is_int(proto_format(line, 10, 1, "x", NULL), -1, "small buffer");
	is_int(proto_format(line, sizeof(line), 1, "bad kind", NULL), -1, "kind with a space");
	is_int(proto_format(line, sizeof(line), 1, "", NULL), -1, "empty kind");
	kv[0] = "bad key";
	kv[1] = "1";
	kv[2] = NULL;
	is_int(proto_format(line, sizeof(line), 1, "x", kv), -1, "key with a space");
	n = proto_format(line, sizeof(line), UINT64_MAX, "done", NULL);
	ok(n > 0, "max seq formats");
	is_int(parse_str(line, &m), PROTO_OK, "max seq parses");
	ok(m.seq == UINT64_MAX, "max seq value");

	for (i = 0; i <= PROTO_MAX_KV; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		many[2 * i] = keys[i];
		many[2 * i + 1] = "1";
	}
	many[2 * PROTO_MAX_KV] = NULL;
	n = proto_format(line, sizeof(line), 5, "identity", many);
	ok(n > 0, "PROTO_MAX_KV pairs format");
	is_int(parse_str(line, &m), PROTO_OK, "and parse");
	is_int((long long)m.nkv, PROTO_MAX_KV, "all kept");
	many[2 * PROTO_MAX_KV] = keys[PROTO_MAX_KV];
	many[2 * PROTO_MAX_KV + 1] = "1";
	many[2 * PROTO_MAX_KV + 2] = NULL;
	is_int(proto_format(line, sizeof(line), 5, "identity", many), -1, "one pair too many");
}

static void test_numbers(void)
{
	static struct proto_msg m;
	char line[PROTO_MAX_LINE];
	const char *kv[] = { "a", "-12", "b", "0x10", "c", "1e3", "d", "nan", "e", "inf",
			     "f", "1e999", "g", "010", "h", "9223372036854775808", "i", " 1", NULL };
	int64_t v;
	double d;

	ok(proto_format(line, sizeof(line), 1, "sample", kv) > 0, "format numbers");
	is_int(parse_str(line, &m), PROTO_OK, "parse numbers");
	ok(proto_get_i64(&m, "a", &v) == 0 && v == -12, "negative int");
	is_int(proto_get_i64(&m, "b", &v), -1, "hex refused");
	is_int(proto_get_double(&m, "b", &d), -1, "hex float refused");
	ok(proto_get_double(&m, "c", &d) == 0 && d == 1000.0, "exponent");
	is_int(proto_get_double(&m, "d", &d), -1, "nan refused");
	is_int(proto_get_double(&m, "e", &d), -1, "inf refused");
	is_int(proto_get_double(&m, "f", &d), -1, "overflow refused");
	ok(proto_get_i64(&m, "g", &v) == 0 && v == 10, "decimal with a leading zero");
	is_int(proto_get_i64(&m, "h", &v), -1, "i64 overflow");
	is_int(proto_get_i64(&m, "i", &v), -1, "leading blank refused");
	is_int(proto_get_i64(&m, "zz", &v), -1, "missing key");
}

int main(void)
{
	test_crc();
	test_every_kind();
	test_realistic();
	test_bad_crc();
	test_malformed();
	test_encoding();
	test_limits();
	test_numbers();
	return tap_done();
}
