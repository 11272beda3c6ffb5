/* Unit tests of json.c: path lookup through jansson (scalars, nesting, escapes, malformed
 * texts) and the one escaper's exact bytes (what reports and upload bodies have always had). */
#include "json.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void test_get(void)
{
	char out[64];
	struct lab_err e = {0};
	const char *t = "{\"POWER1\":\"ON\",\"n\":-1.5e3,\"i\":42,\"r\":0.1,\"b\":true,\"z\":null,"
			"\"o\":{\"x\":{\"y\":\"a\\u00e9\\\"\\ud83d\\ude00\"}},"
			"\"arr\":[1,{\"k\":2}],\"POWER\":\"OFF\"}";
	ok(json_get(t, strlen(t), "POWER1", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "ON") == 0, "string value");
	ok(json_get(t, strlen(t), "POWER", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "OFF") == 0, "key after an array");
	ok(json_get(t, strlen(t), "n", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "-1.5e+03") == 0, "real in shortest form (%s)", out);
	ok(json_get(t, strlen(t), "r", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "0.1") == 0, "real 0.1 (%s)", out);
	ok(json_get(t, strlen(t), "i", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "42") == 0, "integer");
	ok(json_get(t, strlen(t), "b", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "true") == 0, "literal");
	ok(json_get(t, strlen(t), "z", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "null") == 0, "null");
	ok(json_get(t, strlen(t), "o.x.y", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "a\xc3\xa9\"\xf0\x9f\x98\x80") == 0, "nested path, escapes and a surrogate pair decoded");
	ok(json_get(t, strlen(t), "arr.1.k", out, sizeof out, &e) == LAB_OK &&
	   strcmp(out, "2") == 0, "array index");
	lab_err_clear(&e);
	ok(json_get(t, strlen(t), "arr.2.k", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "no key 'arr.2.k'"), "index past the end: %s", e.msg);
	lab_err_clear(&e);
	ok(json_get(t, strlen(t), "arr.k", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "not an object"), "key on an array: %s", e.msg);
	lab_err_clear(&e);
	ok(json_get(t, strlen(t), "o.x", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "not a scalar"), "object not scalar: %s", e.msg);
	lab_err_clear(&e);
	ok(json_get(t, strlen(t), "POWER.x", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "not an object"), "path through a scalar: %s", e.msg);
	lab_err_clear(&e);
	ok(json_get(t, strlen(t), "nope", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "no key 'nope'") && out[0] == '\0', "absent key: %s", e.msg);
	lab_err_clear(&e);
	ok(json_get("\"ON\"", 4, "a", out, sizeof out, &e) == LAB_EPROTO &&
	   strstr(e.msg, "not an object"), "a bare scalar is not an object: %s", e.msg);
	const char *bad[] = {"{\"POWER\": \"ON\", \"ison\": tru", "{\"a\":1,}", "[1,2", "",
			     "{\"a\" 1}", "{\"a\":\"x\"} junk", "{\"a\":\"\x01\"}"};
	int rejected = 0;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(bad); i++) {
		lab_err_clear(&e);
		rejected += json_get(bad[i], strlen(bad[i]), "a", out, sizeof out, &e) == LAB_EPROTO &&
			    strstr(e.msg, "not valid JSON");
	}
	is_int(rejected, (int)LAB_ARRAY_SIZE(bad), "malformed JSON rejected");
	/* len bounds the text: what follows is not read. */
	ok(json_get("{\"a\":1}xyz", 7, "a", out, sizeof out, NULL) == LAB_OK &&
	   strcmp(out, "1") == 0, "length respected");
	char tiny[3];
	ok(json_get(t, strlen(t), "POWER1", tiny, sizeof tiny, NULL) == LAB_OK &&
	   strcmp(tiny, "ON") == 0, "exact fit");
	ok(json_get(t, strlen(t), "POWER", tiny, sizeof tiny, NULL) == LAB_OK &&
	   strcmp(tiny, "OF") == 0, "truncated");
}

static void test_escape(void)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	json_buf_str(&b, "a\"b\\c\n\r\t\b\f\x01\x1f<>/&'\x7f\xc3\xa9\xff end");
	is_str(lab_buf_cstr(&b),
	       "\"a\\\"b\\\\c\\n\\r\\t\\u0008\\u000c\\u0001\\u001f\\u003c>/&'\\u007f\xc3\xa9\xff end\"",
	       "escaper bytes");
	lab_buf_free(&b);
	lab_buf_init(&b, 0);
	json_buf_str(&b, NULL);
	json_buf_escape(&b, "x<");
	is_str(lab_buf_cstr(&b), "\"\"x\\u003c", "NULL is empty; escape without quotes");
	lab_buf_free(&b);

	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	json_put_str(f, "t\tx");
	fputc(' ', f);
	json_put_num(f, 5.0);
	fputc(' ', f);
	json_put_num(f, 1.0 / 3);
	fputc(' ', f);
	json_put_num(f, 1e300 * 1e300);
	fclose(f);
	is_str(mem, "\"t\\tx\" 5 0.3333333333 null", "stream string and report numbers");
	free(mem);
}

int main(void)
{
	test_get();
	test_escape();
	return tap_done();
}
