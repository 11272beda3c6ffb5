/*
 * mode.h - the write modes (docs/running.md), shared by the
 * controller, the DUT agent and the simulator.  Plain libc: the static agent
 * links it without the rest of the library.
 *
 * LAB_MODES is the one table: each row is
 *   X(enum id, name, fua, write_cache, cqe, abbrev, help)
 * where fua / write_cache / cqe are what the running DUT shows in queue/fua,
 * queue/write_cache ("write back") and the command queue engine, and abbrev
 * is the name in narrow table columns (at most 9 characters).  Everything
 * else (config keys, store checks, import, compare pairs, reports, the agent
 * and the simulator) loops over it, so a new mode is one more row.  Row
 * order is the order modes are listed and sorted in; the names are stored in
 * the database and printed, so a row is never renamed.
 */
#ifndef EMMCLAB_MODE_H
#define EMMCLAB_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_cmds.h"

#define LAB_MODES(X)                                                                               \
	X(MODE_FUA, "fua", 1, 1, 0, "fua", "REQ_FUA as reliable write, CQE off")                   \
	X(MODE_CACHE_NOFUA, "cache-nofua", 0, 1, 0, "nofua",                                       \
	  "FUA not advertised (write + flush), CQE off")                                           \
	X(MODE_FUA_CQE, "fua-cqe", 1, 1, 1, "fua-cqe",                                             \
	  "reliable write through the CQE task descriptor")                                        \
	X(MODE_CACHE_NOFUA_CQE, "cache-nofua-cqe", 0, 1, 1, "nofua-cqe", "write + flush, CQE on")

#define LAB_MODE_ENUM_(id, name, fua, wc, cqe, abbrev, help) id,
enum lab_mode { LAB_MODES(LAB_MODE_ENUM_) MODE_COUNT };
#undef LAB_MODE_ENUM_

struct lab_mode_info {
	const char *name;
	bool fua;         /* queue/fua = 1: REQ_FUA reaches the card as a reliable write */
	bool write_cache; /* queue/write_cache = write back */
	bool cqe;         /* the command queue engine is on */
	const char *abbrev;
	const char *help;
};

extern const struct lab_mode_info lab_modes[MODE_COUNT];
extern const char *const lab_mode_names[MODE_COUNT + 1]; /* the names, NULL-terminated */

int lab_mode_parse(const char *s);   /* -1 if unknown (or NULL) */
const char *lab_mode_name(int mode); /* NULL if out of range */
bool lab_mode_fua(int mode);
bool lab_mode_cqe(int mode);

/* The mode the DUT runs from the values read on it: each is negative when
 * unknown, else zero or not.  -1 when a value is unknown or no mode has
 * these values (write-through, FUA without a cache: not modes we test). */
int lab_mode_from_verified(int fua, int write_cache, int cqe);

/* The same mode without FUA (fua -> cache-nofua), -1 for a mode without FUA
 * or without such a counterpart: the pairs the mode reports compare. */
int lab_mode_without_fua(int mode);
/* The same mode with the CQE on (fua -> fua-cqe), -1 for a CQE mode or
 * without such a counterpart. */
int lab_mode_with_cqe(int mode);

/* Whether the tracepoint counts of one iteration of `workload` prove the
 * mode (docs/running.md): a mode without FUA shows no reliable write; for a
 * workload that issues FUA writes (AGENT_WORKLOADS in agent_cmds.h) a mode
 * with FUA shows some and a cache mode without FUA flushes instead.
 * flushes < 0: not reported.  On false, why says which rule failed. */
bool lab_mode_proof_ok(int mode, const char *workload, int64_t rel, int64_t flushes, char *why,
		       size_t size);

/* "fua, cache-nofua, fua-cqe or cache-nofua-cqe" with `last` (", " or
 * " or ") before the last name; returns snprintf's length. */
int lab_mode_list(char *buf, size_t size, const char *last);

#endif
