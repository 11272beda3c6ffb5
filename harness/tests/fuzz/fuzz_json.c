/*
 * fuzz_json.c - libFuzzer target for json.c.
 *
 * Any input is looked up with a few paths (json_get through jansson must
 * never crash or read past len).  Independently the input, up to its first
 * NUL, is written with the one escaper as a JSON string inside an object;
 * when it is valid UTF-8, reading that text back must give the same bytes
 * (invalid UTF-8 is passed through by the escaper and refused by jansson).
 */
#include "json.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {"a", "POWER1", "a.b", "boards.0.name", "0"};
	char out[256];
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		json_get((const char *)data, size, paths[i], out, sizeof out, NULL);

	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	size_t n = strlen(s);
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_append(&b, "{\"k\":", 5);
	json_buf_str(&b, s);
	lab_buf_append(&b, "}", 1);
	json_t *v = json_loadb(b.data, b.len, 0, NULL);
	json_t *k = v ? json_object_get(v, "k") : NULL;
	if (v && (!json_is_string(k) || json_string_length(k) != n ||
		  memcmp(json_string_value(k), s, n) != 0))
		abort();
	if (!v && json_stringn(s, n)) /* valid UTF-8 must come back */
		abort();
	json_decref(v);
	lab_buf_free(&b);
	free(s);
	return 0;
}
