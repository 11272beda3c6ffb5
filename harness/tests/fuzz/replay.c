/*
 * replay.c - main() for a fuzz target in a build without libFuzzer (gcc, the
 * sanitizer build): runs LLVMFuzzerTestOneInput once on every file named,
 * or on every file of every directory named, as libFuzzer does with files.
 * So the seed corpora and the crash regressions (regress_<area>/) run in
 * every build under ctest, not only in a clang fuzz build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return 1;
	/* an exact-size copy, so ASan sees a read past the input's end */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact) {
		free(buf);
		return 1;
	}
	memcpy(exact, buf, n);
	free(buf);
	printf("replay %s (%zu bytes)\n", path, n);
	fflush(stdout);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	int bad = 0, files = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= run_file(argv[i]);
			files++;
			continue;
		}
		struct dirent **list;
		int n = scandir(argv[i], &list, NULL, NULL);
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		char **names = calloc((size_t)n + 1, sizeof *names);
		int k = 0;
		for (int j = 0; j < n; j++) {
			if (list[j]->d_name[0] != '.' && names) {
				size_t len = strlen(argv[i]) + strlen(list[j]->d_name) + 2;
				names[k] = malloc(len);
				if (names[k])
					snprintf(names[k++], len, "%s/%s", argv[i],
					         list[j]->d_name);
			}
			free(list[j]);
		}
		free(list);
		if (!names)
			return 1;
		qsort(names, (size_t)k, sizeof *names, cmp);
		for (int j = 0; j < k; j++) {
			bad |= run_file(names[j]);
			files++;
			free(names[j]);
		}
		free(names);
	}
	printf("%d input(s) replayed\n", files);
	return bad || files == 0;
}
