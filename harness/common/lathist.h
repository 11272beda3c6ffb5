/*
 * lathist.h - the log-spaced buckets of the per-request latency histograms
 * (docs/agent.md "Request latency"), shared by the agent, the simulator and
 * the reports so the three cannot disagree on an edge.
 *
 * Log-linear, four buckets per octave of microseconds: bucket k covers
 * [lathist_lo_us(k), lathist_lo_us(k + 1)), edges 1 1.25 1.5 1.75 2 2.5 3 3.5
 * 4 5 6 7 8 10 12 14 16 20 ... (integers from 4 us on).  Bucket 0 also holds
 * 0 us (a request completed within the trace clock's microsecond).  The last
 * bucket is open above.  Plain libc, header only.
 */
#ifndef EMMCLAB_LATHIST_H
#define EMMCLAB_LATHIST_H

#include <stdint.h>

#define LATHIST_PER_OCTAVE 4
#define LATHIST_OCTAVES    32 /* 2^32 us: over an hour, past any request timeout */
#define LATHIST_BUCKETS    (LATHIST_PER_OCTAVE * LATHIST_OCTAVES)

/* The bucket of a latency in whole microseconds. */
static inline unsigned lathist_bucket(uint64_t us)
{
	unsigned e;

	if (us < 1)
		us = 1;
	e = 63u - (unsigned)__builtin_clzll(us); /* floor(log2(us)) */
	if (e >= LATHIST_OCTAVES)
		return LATHIST_BUCKETS - 1;
	/* the quarter of the octave [2^e, 2^(e+1)) the value lies in */
	return e * LATHIST_PER_OCTAVE +
	       (unsigned)(((us - ((uint64_t)1 << e)) * LATHIST_PER_OCTAVE) >> e);
}

/* The bucket of floor(us) for a non-negative double, as
 * lathist_bucket((uint64_t)us), without the conversion: from 4 us on a
 * bucket's edges are whole numbers, so floor() does not cross one and the
 * bucket is the octave and the top two mantissa bits (the simulator buckets
 * 4,096 draws an iteration).  Below 4 us (and NaN) it converts; from 2^63 us
 * on it is the open top bucket, as lathist_bucket(UINT64_MAX). */
static inline unsigned lathist_bucket_d(double us)
{
	uint64_t b;

	if (!(us >= 4.0 && us < 9223372036854775808.0))
		return lathist_bucket(us >= 4.0 ? UINT64_MAX : us > 0 ? (uint64_t)us : 0);
	__builtin_memcpy(&b, &us, sizeof b);
	b = (b >> 50) - ((uint64_t)1023 << 2); /* 4 * octave + quarter */
	return b < LATHIST_BUCKETS ? (unsigned)b : LATHIST_BUCKETS - 1;
}

/* The lower edge of bucket k in microseconds (k == LATHIST_BUCKETS: the top). */
static inline double lathist_lo_us(unsigned k)
{
	unsigned e = k / LATHIST_PER_OCTAVE, q = k % LATHIST_PER_OCTAVE;

	return (double)((uint64_t)1 << e) * (1.0 + (double)q / LATHIST_PER_OCTAVE);
}

#endif
