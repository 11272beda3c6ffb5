/*
 * fuzz_sparse.c - libFuzzer target for the Android sparse image parser.
 *
 * Any input is parsed; parsing must never crash or read out of bounds.  An
 * image that parses is serialised again (streamed, in odd-sized slices) and
 * must parse back to the same chunk list, and splitting it into small pieces
 * must give pieces that each parse and cover the whole block range.
 */
#include "sparse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sparse_image img, back;
	struct lab_err e = {0};
	if (sparse_parse_mem(data, size, &img, &e) != LAB_OK)
		return 0;
	uint64_t n = sparse_layout(&img);
	if (n > (1u << 20)) { /* a huge expansion of RAW chunks: nothing more to learn */
		sparse_free(&img);
		return 0;
	}
	uint8_t *out = malloc(n ? n : 1);
	for (uint64_t off = 0; off < n;) {
		size_t step = 1 + (size_t)(off % 97);
		if (step > n - off)
			step = (size_t)(n - off);
		if (sparse_serialize(&img, off, out + off, step, &e) != LAB_OK)
			abort();
		off += step;
	}
	if (sparse_parse_mem(out, n, &back, &e) != LAB_OK || back.n != img.n ||
	    back.total_blks != img.total_blks)
		abort();
	for (size_t i = 0; i < img.n; i++)
		if (back.c[i].type != img.c[i].type || back.c[i].blocks != img.c[i].blocks ||
		    back.c[i].fill != img.c[i].fill)
			abort();
	sparse_free(&back);
	struct sparse_image *pc = NULL;
	size_t np = 0;
	uint64_t max = 28 + 4 * 12 + img.blk_sz + (n % 3) * img.blk_sz;
	if (sparse_split(&img, max, &pc, &np, &e) == LAB_OK) {
		for (size_t i = 0; i < np; i++) {
			uint64_t blocks = 0;
			for (size_t k = 0; k < pc[i].n; k++)
				blocks += pc[i].c[k].blocks;
			if (blocks != img.total_blks || sparse_layout(&pc[i]) > max)
				abort();
			sparse_free(&pc[i]);
		}
		free(pc);
	}
	free(out);
	sparse_free(&img);
	return 0;
}
