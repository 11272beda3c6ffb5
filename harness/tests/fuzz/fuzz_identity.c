/*
 * fuzz_identity.c - libFuzzer target for the agent's EXT_CSD and CID decoders
 * (suites/agent/identify.c, included here to reach the static debugfs-text reader).
 *
 * The input is read as an EXT_CSD dump (512 raw bytes, or hex text with
 * blanks, as debugfs prints it) and, when it reads, decoded; its first 32
 * bytes are decoded as a CID with every EXT_CSD revision.  The decoded
 * fields must fit the key/value store, and the identity line they make must
 * format and parse back through the protocol (proto.c) unchanged.
 */
#include "identify.c"

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const struct agent_kv *k)
{
	static char line[PROTO_MAX_LINE];
	static struct proto_msg m;
	int n = proto_format(line, sizeof line, 1, "identity", k->kv);
	if (n < 0)
		abort(); /* a real identity line is about 1.3 KB: it must always fit */
	if (proto_parse(line, (size_t)n, &m) != PROTO_OK || (int)m.nkv != k->n)
		abort();
	for (size_t i = 0; i < m.nkv; i++)
		if (strcmp(m.kv[i].key, k->kv[2 * i]) || strcmp(m.kv[i].value, k->kv[2 * i + 1]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct agent_kv k;
	uint8_t ext[512];

	if (ext_csd_from_buf((const char *)data, size, ext) == 0) {
		agent_kv_init(&k);
		agent_decode_ext_csd(ext, &k);
		roundtrip(&k);
	}
	char hex[33];
	size_t n = size < 32 ? size : 32;
	memcpy(hex, data, n);
	hex[n] = '\0';
	for (int rev = -1; rev <= 9; rev++) {
		agent_kv_init(&k);
		if (agent_decode_cid(hex, rev, &k) == 0) {
			roundtrip(&k);
			const char *name = agent_kv_get(&k, "name");
			for (const char *c = name; c && *c; c++)
				if (*c < 0x20 || *c >= 0x7f)
					abort(); /* the product name is printable, whatever the CID
					          */
		}
	}
	return 0;
}
