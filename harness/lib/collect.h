/*
 * collect.h - what one agent invocation reported, decoded from its protocol
 * messages: samples, counters (one value per name), the verified mode values,
 * the part's identity and running kernel, and the first error.
 *
 * Ownership and loop rules: the runner (run.c) keeps one struct collect per
 * board, resets it before each agent invocation and reads it in the
 * invocation's done callback; samples are stored only after `done`.  The
 * strings it points to live until the next collect_reset: metric, unit and
 * counter names are kept once for the process (they repeat every iteration
 * on every board), up to a bound past which each is the struct's own copy;
 * the rest are its own.  collect_free releases everything.  No I/O; one
 * thread (the names' pool is not locked).
 */
#ifndef EMMCLAB_COLLECT_H
#define EMMCLAB_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "health.h"
#include "proto.h"
#include "store.h"

struct collect {
	struct store_sample *samples;
	size_t nsamples, capsamples;
	struct store_counter *counters;
	size_t ncounters, capcounters;
	bool have_mode, have_identity;
	int fua, write_cache, cqe; /* -1 until a mode line says */
	char vmode[32];
	struct store_part part;
	char *strs[64]; /* strings owned for part fields */
	size_t nstrs;
	char **names;   /* names past the pool's bound, owned */
	size_t nnames, capnames;
	char kernel[128];
	char error[256]; /* why it failed: the latest error line or bad sample, "" if none */
	double wall_time; /* the wall_time sample, -1 when none */
	bool no_tracefs;  /* the agent said it could not trace (no counters) */
	bool have_health; /* the part's wear, from an identity or a health line */
	struct health_reading health;
};

/* Make c empty for the next invocation, keeping its arrays' room (also the
 * first initialisation of a zeroed struct). */
void collect_reset(struct collect *c);
/* Free everything c holds; it is then a zeroed struct. */
void collect_free(struct collect *c);

enum collect_note {
	COLLECT_TAKEN,      /* decoded (or ignored) */
	COLLECT_NO_TRACEFS, /* the agent has no tracefs: counts missing, the workload goes on */
};
/* Decode one message.  integrity_is_result: an `error code=integrity` line is
 * the measurement (powerfail-check), not an error. */
enum collect_note collect_msg(struct collect *c, const struct proto_msg *m, bool integrity_is_result);

/* Is m the counter `name` with a valid value (then in *v)? */
bool collect_is_counter(const struct proto_msg *m, const char *name, int64_t *v);
/* A counter's value, -1 when it was not reported. */
int64_t collect_counter(const struct collect *c, const char *name);

#endif
