/*
 * proto.h - the DUT agent line protocol (docs/agent.md), shared by the agent,
 * the simulated boards and the controller.  Self-contained: libc only, so
 * the static agent can link it without the rest of the library.
 *
 *   @@emmclab 1 <seq> <kind> key=value key=value ... crc=<8 hex digits>
 *
 * The CRC is CRC-32 (IEEE) of every byte of the line before " crc=".
 * Values are percent-encoded (every byte outside [A-Za-z0-9._~:/+,-] is %XX).
 * Kinds: hello identity mode sample counter progress error done.
 * The agent keeps what it printed in a log; `emmclab-agent resend SEQ...`
 * prints those lines again, so the controller re-requests corrupted lines.
 */
#ifndef EMMCLAB_PROTO_H
#define EMMCLAB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC "@@emmclab"
#define PROTO_VERSION 1
#define PROTO_MAX_LINE 4096
#define PROTO_MAX_KV 64

enum proto_status {
	PROTO_OK = 0,
	PROTO_NOT_PROTO = 1, /* ordinary console text: no magic */
	PROTO_BAD_CRC = 2,   /* magic and seq readable, CRC wrong: ask again (seq valid if >0) */
	PROTO_MALFORMED = 3, /* magic present but unparsable */
	PROTO_BAD_VERSION = 4,
};

struct proto_kv {
	char *key;
	char *value; /* decoded */
};

struct proto_msg {
	int version;
	uint64_t seq;
	char kind[24];
	struct proto_kv kv[PROTO_MAX_KV];
	size_t nkv;
	char storage[PROTO_MAX_LINE]; /* keys/values point here */
};

/* Parse one line (no trailing newline needed; CR/LF stripped). Leading noise
 * before the magic is tolerated. */
int proto_parse(const char *line, size_t len, struct proto_msg *m);
const char *proto_get(const struct proto_msg *m, const char *key);
int proto_get_i64(const struct proto_msg *m, const char *key, int64_t *out);
int proto_get_double(const struct proto_msg *m, const char *key, double *out);

/* Build a line: kv is key, value, key, value, ..., NULL.  Writes at most
 * size bytes incl. NUL and the trailing "\n"; returns length or -1 if too long. */
int proto_format(char *buf, size_t size, uint64_t seq, const char *kind, const char *const *kv);

/* Percent-encoding helpers. Return length written or -1 if it does not fit. */
int proto_encode_value(char *dst, size_t size, const char *src);
int proto_decode_value(char *dst, size_t size, const char *src, size_t len);

#endif
