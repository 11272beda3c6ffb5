/*
 * fuzz_latency.c - libFuzzer target for the agent's block_rq trace parser
 * (suites/agent/latency.c: lat_parser_feed).
 *
 * The input is trace text fed in two chunks split where its first byte says
 * (partial lines must carry over); the histograms must hold exactly the
 * requests counted, percentiles must be ordered, and the in-flight table
 * must stay within its bound.
 */
#include "agent.h"
#include "latency.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct lat_parser p;
	size_t cut;

	if (size < 1)
		return 0;
	cut = data[0] % size;
	lat_parser_init(&p, 179, 0);
	lat_parser_feed(&p, (const char *)data + 1, cut);
	lat_parser_feed(&p, (const char *)data + 1 + cut, size - 1 - cut);
	if (p.npend > sizeof(p.pend) / sizeof(p.pend[0]) || p.tail_len >= sizeof(p.tail))
		abort();
	for (int op = 0; op < LAT_NOPS; op++) {
		uint64_t sum = 0;

		for (unsigned b = 0; b < LAT_FINE_BINS; b++)
			sum += p.fine[op][b];
		if (sum != p.n[op])
			abort();
		double p50 = lat_parser_percentile(&p, op, 50), p99 = lat_parser_percentile(&p, op, 99);
		if (p.n[op] ? !(p50 >= 0 && p50 <= p99) : (p50 != -1 || p99 != -1))
			abort();
	}
	return 0;
}
