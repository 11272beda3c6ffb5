/*
 * rand.h - the deterministic random generator (xoshiro256**, seeded through
 * splitmix64) of the agent's workloads and the simulator's model and faults:
 * the same seed gives the same sequence on every host.  Not for secrets.
 * Plain libc: the static agent links it.
 */
#ifndef EMMCLAB_RAND_H
#define EMMCLAB_RAND_H

#include <stddef.h>
#include <stdint.h>

struct rand_gen {
	uint64_t s[4];
};

void rand_seed(struct rand_gen *r, uint64_t seed);
double rand_uniform(struct rand_gen *r); /* [0, 1), 53 bits */
void rand_fill(struct rand_gen *r, void *buf, size_t len);

/* The next 64 bits.  Inline: the simulator draws 8,192 a simulated
 * AndroBench iteration, two calls a draw. */
static inline uint64_t rand_next(struct rand_gen *r)
{
	uint64_t *s = r->s, res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = s[3] << 45 | s[3] >> 19;
	return res;
}

#endif
