/*
 * fuzz_config.c - libFuzzer target for the configuration parser.
 *
 * For every input: parse it (cfgnode), print the tree and require the print
 * to parse back to the same tree, run it through an option table with every
 * option type, and load it as a configuration file with config_load (inputs
 * with '/' are not loaded, so `include:` can only name files in the private
 * temporary directory and never a device or FIFO).  Includes: the input is
 * split at lines "#--8<--"; piece 0 is fuzz.yaml, piece i is inc<i>.yaml
 * (up to 3), so `include: [inc1.yaml]` chains real files, cycles and all.
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DEMMCLAB_FUZZ=ON ...; run:
 *   fuzz_config -max_total_time=60 harness/tests/fuzz/corpus_config
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct all {
	char *s;
	int64_t i;
	double d;
	bool b;
	uint64_t dur, size;
	int e;
	struct opt_strlist l;
	struct cfg_node *n;
	struct all_sub {
		char *s;
		int64_t i;
	} sub;
};

static const char *const choices[] = {"a", "b", "c", NULL};

static const struct opt sub_opts[] = {
	{.key = "s", .type = OPT_STR, .offset = offsetof(struct all_sub, s), .def = "x"},
	{.key = "i", .type = OPT_INT, .offset = offsetof(struct all_sub, i), .min = -5, .max = 5},
	{0},
};

static const struct opt all_opts[] = {
	{.key = "s", .type = OPT_STR, .offset = offsetof(struct all, s)},
	{.key = "i", .type = OPT_INT, .offset = offsetof(struct all, i), .min = 0, .max = 1000},
	{.key = "d", .type = OPT_DOUBLE, .offset = offsetof(struct all, d)},
	{.key = "b", .type = OPT_BOOL, .offset = offsetof(struct all, b)},
	{.key = "dur", .type = OPT_DURATION, .offset = offsetof(struct all, dur), .def = "1s"},
	{.key = "size", .type = OPT_SIZE, .offset = offsetof(struct all, size), .def = "4k"},
	{.key = "e", .type = OPT_ENUM, .offset = offsetof(struct all, e), .choices = choices, .def = "a"},
	{.key = "l", .type = OPT_STRLIST, .offset = offsetof(struct all, l), .def = "[p, q]"},
	{.key = "n", .type = OPT_NODE, .offset = offsetof(struct all, n)},
	{.key = "sub", .type = OPT_SECTION, .offset = offsetof(struct all, sub), .sub = sub_opts},
	{0},
};

static int same(const struct cfg_node *a, const struct cfg_node *b)
{
	if (!a || !b)
		return a == b;
	if (a->kind != b->kind || a->n != b->n)
		return 0;
	if (a->kind == CFG_SCALAR && strcmp(a->value, b->value) != 0)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		if (a->kind == CFG_MAP && strcmp(a->keys[i]->value, b->keys[i]->value) != 0)
			return 0;
		if (!same(a->items[i], b->items[i]))
			return 0;
	}
	return 1;
}

static char tmpdir[64];
static char tmpfile_path[96];

#define FUZZ_INCLUDES 3
#define FUZZ_CUT "\n#--8<--\n"

static void inc_path(char *buf, size_t n, int i)
{
	snprintf(buf, n, "%s/inc%d.yaml", tmpdir, i);
}

static void cleanup(void)
{
	char p[128];
	for (int i = 1; i <= FUZZ_INCLUDES; i++) {
		inc_path(p, sizeof p, i);
		unlink(p);
	}
	unlink(tmpfile_path);
	rmdir(tmpdir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lab_err e = {0};
	struct cfg_node *n = NULL;
	if (cfg_parse_buffer("fuzz.yaml", (const char *)data, size, &n, &e) != LAB_OK)
		return 0;

	/* print -> parse must give the same tree */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cfg_print(f, n, 0);
	fclose(f);
	struct cfg_node *n2 = NULL;
	lab_err_clear(&e);
	if (cfg_parse_buffer("printed.yaml", buf, len, &n2, &e) != LAB_OK || !same(n, n2)) {
		fprintf(stderr, "round trip failed: %s\n--- printed:\n%s\n", e.msg, buf);
		abort();
	}
	free(buf);
	cfg_free(n2);

	/* every option type */
	struct all a;
	lab_err_clear(&e);
	if (opt_defaults(all_opts, &a, &e) == LAB_OK) {
		if (opt_parse(all_opts, n, &a, &e) == LAB_OK) {
			f = open_memstream(&buf, &len);
			opt_print(f, all_opts, &a, 0);
			fclose(f);
			free(buf);
		}
	}
	opt_free(all_opts, &a);
	cfg_free(n);

	/* the whole loader */
	if (memchr(data, '/', size) == NULL) {
		if (tmpdir[0] == '\0') {
			lab_strlcpy(tmpdir, "/tmp/emmclab-fuzz-XXXXXX", sizeof tmpdir);
			if (mkdtemp(tmpdir) == NULL) {
				perror("fuzz_config: mkdtemp");
				abort();
			}
			snprintf(tmpfile_path, sizeof tmpfile_path, "%s/fuzz.yaml", tmpdir);
			atexit(cleanup);
		}
		lab_err_clear(&e);
		/* the include pieces first (absent ones removed), then the main file */
		const char *d = (const char *)data, *end = d + size;
		const char *cut = memmem(d, size, FUZZ_CUT, strlen(FUZZ_CUT));
		size_t main_len = cut ? (size_t)(cut - d) : size;
		for (int i = 1; i <= FUZZ_INCLUDES; i++) {
			char p[128];
			inc_path(p, sizeof p, i);
			if (!cut) {
				unlink(p);
				continue;
			}
			const char *s = cut + strlen(FUZZ_CUT);
			cut = memmem(s, (size_t)(end - s), FUZZ_CUT, strlen(FUZZ_CUT));
			size_t plen = cut ? (size_t)(cut - s) : (size_t)(end - s);
			if (lab_write_file_atomic(p, s, plen, &e) != LAB_OK) {
				/* the harness's own file, not the code under test: say so */
				fprintf(stderr, "fuzz_config: cannot write an include piece: %s\n", e.msg);
				abort();
			}
		}
		if (lab_write_file_atomic(tmpfile_path, data, main_len, &e) == LAB_OK) {
			const char *paths[] = {tmpfile_path};
			struct lab_cfg *c = NULL;
			lab_err_clear(&e);
			if (config_load(paths, 1, &c, &e) == LAB_OK) {
				f = open_memstream(&buf, &len);
				config_print(f, c);
				fclose(f);
				free(buf);
				config_free(c);
			}
		}
	}
	return 0;
}
