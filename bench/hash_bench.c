/*
 * hash_bench.c - CPU cost of hashing a deploy artefact (lab_sha256_file, the
 * call every deploy makes for every artefact).  Prints the SHA-256, then the
 * CPU seconds (user + system) of each of N passes.  Run by bench/hash_bench.sh,
 * which compares it with coreutils' sha256sum on the same file.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: hash_bench FILE PASSES\n");
		return 2;
	}
	int64_t passes;
	if (lab_parse_i64(argv[2], &passes) || passes < 1 || passes > 100) {
		fprintf(stderr, "hash_bench: PASSES must be 1..100\n");
		return 2;
	}
	char hex[65];
	for (int64_t i = 0; i < passes; i++) {
		struct lab_err e = {0};
		double t0 = cpu_s();
		if (lab_sha256_file(argv[1], hex, &e)) {
			fprintf(stderr, "hash_bench: %s\n", e.msg);
			return 1;
		}
		printf("%s cpu_s %.3f\n", i == 0 ? hex : "-", cpu_s() - t0);
	}
	return 0;
}
