/*
 * rand.c - xoshiro256** (Blackman and Vigna; its step, rand_next, is inline
 * in rand.h), state from splitmix64.
 */
#include "rand.h"

#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rand_seed(struct rand_gen *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

double rand_uniform(struct rand_gen *r)
{
	return (double)(rand_next(r) >> 11) * 0x1.0p-53;
}

void rand_fill(struct rand_gen *r, void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len >= 8) {
		uint64_t v = rand_next(r);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = rand_next(r);

		memcpy(p, &v, len);
	}
}
