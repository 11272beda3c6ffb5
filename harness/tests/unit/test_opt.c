/* test_opt.c - option tables: defaults, types, ranges, errors with file:line:col, print round trip. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "tap.h"

struct inner {
	char *host;
	int64_t port;
};

struct thing {
	char *driver;
	char *label;
	int64_t count;
	double ratio;
	bool fast;
	uint64_t timeout_ms;
	uint64_t size;
	int order;
	struct opt_strlist tags;
	struct cfg_node *raw;
	struct inner net;
	char *secret;
};

static const char *const orders[] = {"interleave", "random", "sequential", NULL};

static const struct opt inner_opts[] = {
	{.key = "host", .type = OPT_STR, .offset = offsetof(struct inner, host), .def = "localhost",
	 .help = "host name"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct inner, port), .def = "8080",
	 .min = 1, .max = 65535, .help = "TCP port"},
	{0},
};

static const struct opt thing_opts[] = {
	{.key = "driver", .type = OPT_STR, .offset = offsetof(struct thing, driver),
	 .flags = OPT_REQUIRED, .help = "driver name"},
	{.key = "label", .type = OPT_STR, .offset = offsetof(struct thing, label), .def = "",
	 .help = "label"},
	{.key = "count", .type = OPT_INT, .offset = offsetof(struct thing, count), .def = "3",
	 .min = 0, .max = 100, .help = "count"},
	{.key = "ratio", .type = OPT_DOUBLE, .offset = offsetof(struct thing, ratio), .def = "0.5",
	 .min = 0, .max = 1, .help = "ratio"},
	{.key = "fast", .type = OPT_BOOL, .offset = offsetof(struct thing, fast), .def = "no",
	 .help = "go fast"},
	{.key = "timeout", .type = OPT_DURATION, .offset = offsetof(struct thing, timeout_ms),
	 .def = "30s", .min = 100, .max = 86400000, .help = "timeout"},
	{.key = "size", .type = OPT_SIZE, .offset = offsetof(struct thing, size), .def = "64MiB",
	 .min = 4096, .max = 1099511627776.0, .help = "size"},
	{.key = "order", .type = OPT_ENUM, .offset = offsetof(struct thing, order),
	 .def = "interleave", .choices = orders, .help = "order"},
	{.key = "tags", .type = OPT_STRLIST, .offset = offsetof(struct thing, tags), .def = "[x, y]",
	 .help = "tags"},
	{.key = "raw", .type = OPT_NODE, .offset = offsetof(struct thing, raw), .help = "raw block"},
	{.key = "net", .type = OPT_SECTION, .offset = offsetof(struct thing, net), .sub = inner_opts,
	 .help = "network"},
	{.key = "secret", .type = OPT_STR, .offset = offsetof(struct thing, secret),
	 .flags = OPT_HIDDEN, .help = "hidden"},
	{0},
};

static int load(const char *text, struct thing *t, struct lab_err *e)
{
	struct cfg_node *n = NULL;
	lab_err_clear(e);
	memset(t, 0xa5, sizeof *t); /* defaults must not read old contents */
	int rc = opt_defaults(thing_opts, t, e);
	if (rc)
		return rc;
	rc = cfg_parse_buffer("t.yaml", text, strlen(text), &n, e);
	if (!rc)
		rc = opt_parse(thing_opts, n, t, e);
	cfg_free(n);
	return rc;
}

static void expect_error(const char *text, const char *want, const char *what)
{
	struct thing t;
	struct lab_err e;
	int rc = load(text, &t, &e);
	is_int(rc, LAB_EUSAGE, what);
	is_str(e.msg, want, what);
	opt_free(thing_opts, &t);
}

static void dur(const char *s, long long want)
{
	uint64_t v = 0;
	int rc = opt_parse_duration(s, &v);
	if (want < 0)
		ok(rc != LAB_OK, "duration '%s' rejected", s);
	else
		ok(rc == LAB_OK && v == (uint64_t)want, "duration '%s' = %lld (got %llu)", s, want,
		   (unsigned long long)v);
}

static void size(const char *s, long long want)
{
	uint64_t v = 0;
	int rc = opt_parse_size(s, &v);
	if (want < 0)
		ok(rc != LAB_OK, "size '%s' rejected", s);
	else
		ok(rc == LAB_OK && v == (uint64_t)want, "size '%s' = %lld (got %llu)", s, want,
		   (unsigned long long)v);
}

int main(void)
{
	struct thing t;
	struct lab_err e;

	dur("250ms", 250);
	dur("30s", 30000);
	dur("5m", 300000);
	dur("8h", 28800000);
	dur("1h30m", 5400000);
	dur("1d", 86400000);
	dur("2m30s500ms", 150500);
	dur("1.5s", 1500);
	dur("10", 10000);
	dur("0.25", 250);
	dur("0", 0);
	dur("", -1);
	dur("5x", -1);
	dur("-5s", -1);
	dur("s", -1);
	dur("5 s", -1);
	dur("1h30", -1);
	size("4096", 4096);
	size("4k", 4096);
	size("4KiB", 4096);
	size("64MiB", 64ll << 20);
	size("64mb", 64ll << 20);
	size("32G", 32ll << 30);
	size("1.5G", 3ll << 29);
	size("2T", 2ll << 40);
	size("12x", -1);
	size("", -1);
	size("-1", -1);
	size("k", -1);

	char buf[64];
	opt_format_duration(buf, sizeof buf, 5400000);
	is_str(buf, "1h30m", "format 1h30m");
	opt_format_duration(buf, sizeof buf, 250);
	is_str(buf, "250ms", "format 250ms");
	opt_format_duration(buf, sizeof buf, 0);
	is_str(buf, "0s", "format 0s");
	opt_format_size(buf, sizeof buf, 64ull << 20);
	is_str(buf, "64MiB", "format 64MiB");
	opt_format_size(buf, sizeof buf, 4097);
	is_str(buf, "4097", "format odd size");

	/* defaults */
	int rc = load("driver: serial\n", &t, &e);
	is_int(rc, LAB_OK, "minimal parse");
	is_str(t.driver, "serial", "driver");
	is_str(t.label, "", "empty string default");
	is_int(t.count, 3, "int default");
	is_near(t.ratio, 0.5, 1e-12, "double default");
	ok(!t.fast, "bool default");
	is_int((long long)t.timeout_ms, 30000, "duration default");
	is_int((long long)t.size, 64ll << 20, "size default");
	is_int(t.order, 0, "enum default");
	is_int((long long)t.tags.n, 2, "strlist default");
	is_str(t.tags.v[1], "y", "strlist default item");
	ok(t.raw == NULL, "node default NULL");
	is_str(t.net.host, "localhost", "section default string");
	is_int(t.net.port, 8080, "section default int");
	ok(t.secret == NULL, "no default -> NULL");
	opt_free(thing_opts, &t);
	ok(t.driver == NULL && t.tags.v == NULL, "opt_free clears");

	/* every type */
	rc = load("driver: tcp\n"
		  "label: \"yes\"\n"
		  "count: 0x10\n"
		  "ratio: 0.125\n"
		  "fast: On\n"
		  "timeout: 1h30m\n"
		  "size: 4k\n"
		  "order: random\n"
		  "tags: solo\n"
		  "raw: {driver: exec, argv: [a, b]}\n"
		  "net: {port: 22}\n"
		  "secret: s3\n",
		  &t, &e);
	is_int(rc, LAB_OK, "full parse");
	ok(rc == LAB_OK, "msg: %s", e.msg);
	is_str(t.label, "yes", "quoted yes stays a string");
	is_int(t.count, 16, "hex int");
	ok(t.fast, "On is true");
	is_int((long long)t.timeout_ms, 5400000, "duration");
	is_int((long long)t.size, 4096, "size");
	is_int(t.order, 1, "enum index");
	is_int((long long)t.tags.n, 1, "scalar strlist");
	is_str(t.tags.v[0], "solo", "scalar strlist value");
	ok(t.raw && t.raw->kind == CFG_MAP, "raw node kept");
	is_str(cfg_map_get(t.raw, "driver")->value, "exec", "raw node content");
	is_int(cfg_map_get(t.raw, "driver")->line, 10, "raw node keeps positions");
	is_str(t.net.host, "localhost", "section keeps defaults");
	is_int(t.net.port, 22, "section override");
	is_str(t.secret, "s3", "hidden keys still parse");

	/* print -> reparse round trip */
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	opt_print(f, thing_opts, &t, 0);
	fclose(f);
	struct thing t2;
	rc = load(out, &t2, &e);
	ok(rc == LAB_OK, "printed YAML re-parses: %s\n%s", e.msg, out);
	is_str(t2.label, "yes", "rt label");
	is_int(t2.count, 16, "rt count");
	is_near(t2.ratio, 0.125, 0, "rt ratio exact");
	ok(t2.fast, "rt bool");
	is_int((long long)t2.timeout_ms, 5400000, "rt duration");
	is_int((long long)t2.size, 4096, "rt size");
	is_int(t2.order, 1, "rt enum");
	is_int((long long)t2.tags.n, 1, "rt strlist");
	is_str(cfg_map_get(t2.raw, "argv")->items[1]->value, "b", "rt node");
	is_int(t2.net.port, 22, "rt section");
	is_str(t2.secret, "s3", "rt hidden");
	ok(strstr(out, "timeout: 1h30m\n") && strstr(out, "size: 4KiB\n") &&
	   strstr(out, "label: \"yes\"\n"), "printed forms:\n%s", out);
	free(out);
	opt_free(thing_opts, &t2);

	/* null resets to the default */
	opt_free(thing_opts, &t);
	rc = load("driver: x\ncount: ~\ntags: ~\n", &t, &e);
	is_int(rc, LAB_OK, "null values");
	is_int(t.count, 3, "null -> default");
	is_int((long long)t.tags.n, 2, "null strlist -> default");
	opt_free(thing_opts, &t);
	rc = load("driver: x\ntags: []\n", &t, &e);
	is_int((long long)t.tags.n, 0, "empty list");
	opt_free(thing_opts, &t);

	/* errors, exact text */
	expect_error("drivr: serial\n", "t.yaml:1:1: unknown key 'drivr' (did you mean 'driver'?)",
		     "unknown key with suggestion");
	expect_error("driver: x\nzzzzzzzzz: 1\n", "t.yaml:2:1: unknown key 'zzzzzzzzz'",
		     "unknown key without suggestion");
	expect_error("label: a\n", "t.yaml:1:1: missing required key 'driver'", "missing required");
	expect_error("net:\n  port: 22\n", "t.yaml:1:1: missing required key 'driver'",
		     "missing required (nested map first)");
	expect_error("driver: x\nnet:\n  prot: 1\n",
		     "t.yaml:3:3: unknown key 'prot' (did you mean 'port'?)", "nested unknown key");
	expect_error("driver: x\nnet:\n  port: 70000\n",
		     "t.yaml:3:9: 'port' must be between 1 and 65535, got '70000'", "nested range");
	expect_error("driver: x\ncount: 101\n", "t.yaml:2:8: 'count' must be between 0 and 100, got '101'",
		     "int range");
	expect_error("driver: x\ncount: three\n", "t.yaml:2:8: 'count' expects an integer, got 'three'",
		     "int type");
	expect_error("driver: x\ncount: [1]\n", "t.yaml:2:8: 'count' expects an integer, got a list",
		     "int given a list");
	expect_error("driver: x\nratio: 1.5\n", "t.yaml:2:8: 'ratio' must be between 0 and 1, got '1.5'",
		     "double range");
	expect_error("driver: x\nfast: maybe\n",
		     "t.yaml:2:7: 'fast' expects a boolean (true/false, yes/no, on/off), got 'maybe'",
		     "bool");
	expect_error("driver: x\ntimeout: 50ms\n",
		     "t.yaml:2:10: 'timeout' must be between 100ms and 1d, got '50ms'", "duration range");
	expect_error("driver: x\ntimeout: soon\n",
		     "t.yaml:2:10: 'timeout' expects a duration like 250ms, 30s, 5m, 8h or 1h30m, got 'soon'",
		     "duration syntax");
	expect_error("driver: x\nsize: 1k\n", "t.yaml:2:7: 'size' must be between 4KiB and 1TiB, got '1k'",
		     "size range");
	expect_error("driver: x\nsize: lots\n",
		     "t.yaml:2:7: 'size' expects a size like 4096, 4k, 64MiB or 32G, got 'lots'", "size syntax");
	expect_error("driver: x\norder: randon\n",
		     "t.yaml:2:8: 'order': invalid value 'randon' (choose one of: interleave, random, sequential)",
		     "enum");
	expect_error("driver: x\ntags: [a, {b: c}]\n", "t.yaml:2:11: 'tags' items must be strings, got a map",
		     "strlist item");
	expect_error("driver: x\ntags: {a: b}\n",
		     "t.yaml:2:7: 'tags' expects a string or a list of strings, got a map", "strlist map");
	expect_error("driver: x\nnet: 5\n", "t.yaml:2:6: 'net' expects a map, got a scalar", "section");
	expect_error("driver: ~\n", "t.yaml:1:9: 'driver' needs a value", "required null");
	expect_error("- a\n", "t.yaml:1:1: expected a map, got a list", "not a map");

	is_str(opt_suggest(thing_opts, "timout"), "timeout", "suggest");
	ok(opt_suggest(thing_opts, "qqqqqqqq") == NULL, "no suggestion");

	/* opt_parse_value on a command-line scalar (--set) */
	opt_defaults(thing_opts, &t, &e);
	struct cfg_node *v = cfg_new_scalar("--set", 1, 1, "45s");
	rc = opt_parse_value(&thing_opts[5], v, &t, &e);
	is_int((long long)t.timeout_ms, 45000, "--set duration");
	cfg_free(v);
	opt_free(thing_opts, &t);

	/* help and schema mention keys, defaults and ranges */
	out = NULL;
	f = open_memstream(&out, &outlen);
	opt_help(f, thing_opts, 0);
	opt_schema_md(f, thing_opts, "thing");
	fclose(f);
	ok(strstr(out, "timeout") && strstr(out, "100ms..1d") && strstr(out, "interleave|random|sequential"),
	   "help text");
	ok(strstr(out, "| `thing.net` | map |") != NULL, "schema row");
	ok(strstr(out, "secret") == NULL, "hidden keys not in help");
	free(out);
	return tap_done();
}
