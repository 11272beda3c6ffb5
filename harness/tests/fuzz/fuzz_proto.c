/*
 * fuzz_proto.c - libFuzzer target for the agent line protocol (proto.c).
 *
 * Every input is parsed as a console line; parsing must never crash or read
 * out of bounds.  A line that parses is formatted again from its fields and
 * must parse back to the same seq, kind and key/value pairs (the values went
 * through percent-decoding and encoding on the way).  Independently the
 * input, taken as a value, must survive encode -> decode byte for byte up to
 * its first NUL.
 */
#include "proto.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct proto_msg m, m2;

static void check_roundtrip(void)
{
	const char *kv[2 * PROTO_MAX_KV + 1];
	static char line[PROTO_MAX_LINE];
	size_t i;
	int n, r;

	for (i = 0; i < m.nkv; i++) {
		kv[2 * i] = m.kv[i].key;
		kv[2 * i + 1] = m.kv[i].value;
	}
	kv[2 * m.nkv] = NULL;
	n = proto_format(line, sizeof(line), m.seq, m.kind, kv);
	if (n < 0)
		return; /* encoding may grow a value past the line limit: refused, fine */
	r = proto_parse(line, (size_t)n, &m2);
	if (r != PROTO_OK || m2.seq != m.seq || strcmp(m2.kind, m.kind) != 0 || m2.nkv != m.nkv)
		abort();
	for (i = 0; i < m.nkv; i++)
		if (strcmp(m.kv[i].key, m2.kv[i].key) != 0 || strcmp(m.kv[i].value, m2.kv[i].value) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char val[PROTO_MAX_LINE], enc[3 * PROTO_MAX_LINE + 1], dec[PROTO_MAX_LINE];
	int64_t i64;
	double d;
	size_t vlen;
	int r, n;

	r = proto_parse((const char *)data, size, &m);
	if (r == PROTO_OK) {
		if (m.seq == 0 || m.nkv > PROTO_MAX_KV)
			abort();
		for (size_t i = 0; i < m.nkv; i++) {
			(void)proto_get_i64(&m, m.kv[i].key, &i64);
			(void)proto_get_double(&m, m.kv[i].key, &d);
		}
		check_roundtrip();
	} else if (r != PROTO_NOT_PROTO && r != PROTO_BAD_CRC && r != PROTO_MALFORMED &&
		   r != PROTO_BAD_VERSION) {
		abort();
	}

	vlen = size < sizeof(val) - 1 ? size : sizeof(val) - 1;
	memcpy(val, data, vlen);
	val[vlen] = '\0';
	vlen = strlen(val);
	n = proto_encode_value(enc, sizeof(enc), val);
	if (n < 0)
		abort(); /* 3 bytes per byte always fit */
	if (proto_decode_value(dec, sizeof(dec), enc, (size_t)n) != (int)vlen ||
	    memcmp(dec, val, vlen) != 0)
		abort();
	/* and arbitrary bytes as an encoded value: bounded, NUL-terminated */
	n = proto_decode_value(dec, sizeof(dec), (const char *)data, size);
	if (n >= 0 && (size_t)n >= sizeof(dec))
		abort();
	return 0;
}

#ifdef FUZZ_PROTO_STANDALONE
/* Without libFuzzer: run every file named on the command line once. */
int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];

	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		size_t n;

		if (!f)
			return 1;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return 0;
}
#endif
