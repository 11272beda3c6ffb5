/* test_cfgnode.c - YAML tree: positions, errors, anchors, merge, print round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgnode.h"
#include "tap.h"

static struct cfg_node *parse(const char *name, const char *text, struct lab_err *e)
{
	struct cfg_node *n = NULL;
	lab_err_clear(e);
	if (cfg_parse_buffer(name, text, strlen(text), &n, e) != LAB_OK)
		return NULL;
	return n;
}

static void expect_error(const char *text, const char *want, const char *what)
{
	struct lab_err e = {0};
	struct cfg_node *n = parse("t.yaml", text, &e);
	ok(n == NULL, "%s: rejected", what);
	is_int(e.rc, LAB_EUSAGE, what);
	is_str(e.msg, want, what);
	cfg_free(n);
}

/* Structural equality (kind, values, keys); positions are not compared. */
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

static char *print_to_string(const struct cfg_node *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cfg_print(f, n, 0);
	fclose(f);
	return buf;
}

int main(void)
{
	struct lab_err e = {0};

	/* positions on maps, keys, values, sequence items */
	struct cfg_node *n = parse("lab.yaml",
				   "lab:\n"
				   "  name: bench\n"
				   "boards:\n"
				   "  - name: dut1\n"
				   "    tags: [a, \"yes\"]\n"
				   "  - name: ~\n",
				   &e);
	ok(n != NULL, "parses: %s", e.msg);
	is_int(n->kind, CFG_MAP, "root is a map");
	is_int(n->n, 2, "two top keys");
	is_str(n->file, "lab.yaml", "file name kept");
	struct cfg_node *lab = cfg_map_get(n, "lab");
	is_int(lab->line, 2, "lab value line");
	is_int(lab->col, 3, "lab value col");
	is_int(n->keys[1]->line, 3, "key 'boards' line");
	is_int(n->keys[1]->col, 1, "key 'boards' col");
	struct cfg_node *boards = cfg_map_get(n, "boards");
	is_int(boards->kind, CFG_SEQ, "boards is a seq");
	is_int(boards->items[0]->line, 4, "first item line");
	is_int(boards->items[0]->col, 5, "first item col");
	struct cfg_node *tags = cfg_map_get(boards->items[0], "tags");
	is_int(tags->n, 2, "flow seq");
	ok(!tags->items[0]->quoted && tags->items[1]->quoted, "quoted flag");
	is_int(tags->items[1]->col, 15, "flow item col");
	is_int(cfg_map_get(boards->items[1], "name")->kind, CFG_NULL, "~ is null");
	ok(cfg_map_get(n, "nope") == NULL, "missing key -> NULL");

	/* clones keep file names valid after the document is freed */
	struct cfg_node *c = cfg_clone(lab);
	cfg_free(n);
	is_str(c->file, "lab.yaml", "clone file survives");
	is_str(cfg_map_get(c, "name")->value, "bench", "clone value");
	struct lab_err e2 = {0};
	cfg_error(&e2, cfg_map_get(c, "name"), "bad name '%s'", "bench");
	is_str(e2.msg, "lab.yaml:2:9: bad name 'bench'", "cfg_error format");
	cfg_free(c);

	/* syntax and structure errors */
	expect_error("a: 1\nb: [1, 2\n", "t.yaml:3:1: did not find expected ',' or ']' while parsing a flow sequence",
		     "unterminated flow seq");
	expect_error("a: b: c\n", "t.yaml:1:5: mapping values are not allowed in this context",
		     "mapping value in scalar");
	expect_error("a: 1\nb: 2\na: 3\n", "t.yaml:3:1: duplicate key 'a' (first at line 1:1)",
		     "duplicate key");
	expect_error("a: 1\n---\nb: 2\n",
		     "t.yaml:2:1: more than one YAML document in one file is not supported",
		     "multi-document");
	expect_error("a: *nope\n", "t.yaml:1:4: unknown anchor '*nope'", "unknown alias");
	expect_error("? [a, b]\n: 1\n", "t.yaml:1:3: map keys must be plain scalars", "complex key");
	expect_error("a:\n\tb: 1\n",
		     "t.yaml:2:1: found character that cannot start any token while scanning for the next token",
		     "tab indentation");

	/* alias bomb is bounded */
	{
		char bomb[2048] = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
		for (int i = 1; i < 9; i++) {
			char line[128];
			snprintf(line, sizeof line, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n",
				 i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
			lab_strlcat(bomb, line, sizeof bomb);
		}
		struct cfg_node *b = parse("bomb.yaml", bomb, &e);
		ok(b == NULL, "alias bomb rejected");
		ok(strstr(e.msg, "expands beyond") != NULL, "alias bomb message: %s", e.msg);
		cfg_free(b);
	}

	/* anchors, aliases and merge keys */
	n = parse("m.yaml",
		  "base: &b {driver: serial, baud: 115200}\n"
		  "one:\n"
		  "  <<: *b\n"
		  "  baud: 1500000\n"
		  "two: *b\n",
		  &e);
	ok(n != NULL, "anchors parse: %s", e.msg);
	struct cfg_node *one = cfg_map_get(n, "one");
	is_int(one->n, 2, "merge: two keys");
	is_str(cfg_map_get(one, "baud")->value, "1500000", "explicit key wins over merge");
	is_str(cfg_map_get(one, "driver")->value, "serial", "merged key");
	struct cfg_node *two = cfg_map_get(n, "two");
	is_str(cfg_map_get(two, "driver")->value, "serial", "alias copied");
	is_int(two->line, 5, "alias reported where used");
	cfg_free(n);

	/* An anchor defined on a merge value (or inside one, or on the "<<" key) stays
	 * usable after that merge is applied: the merge value is dropped from the tree,
	 * and a later alias must copy it, not freed memory (found by fuzz_config). */
	n = parse("m2.yaml",
		  "one:\n"
		  "  <<: &x {driver: serial, tags: [&t a]}\n"
		  "  baud: 1\n"
		  "two:\n"
		  "  <<: *x\n"
		  "  tag: *t\n"
		  "three:\n"
		  "  &k <<: {baud: 2}\n"
		  "four: [*k]\n",
		  &e);
	ok(n != NULL, "anchors on merge values parse: %s", e.msg);
	if (n) {
		two = cfg_map_get(n, "two");
		is_str(cfg_map_get(two, "driver")->value, "serial", "alias of a merge value");
		is_str(cfg_map_get(two, "tag")->value, "a", "alias inside a merge value");
		is_str(cfg_map_get(cfg_map_get(n, "three"), "baud")->value, "2", "anchored << merges");
		struct cfg_node *four = cfg_map_get(n, "four");
		ok(four && four->n == 1 && strcmp(four->items[0]->value, "<<") == 0,
		   "alias of the << key");
		cfg_free(n);
	}

	/* cfg_merge: maps merge key by key, others replace */
	struct cfg_node *d = parse("d.yaml",
				   "console: {driver: serial, baud: 115200}\n"
				   "tags: [a]\n"
				   "enabled: true\n",
				   &e);
	struct cfg_node *o = parse("o.yaml",
				   "console: {baud: 1500000}\n"
				   "tags: [b]\n"
				   "name: x\n",
				   &e);
	struct cfg_node *m = cfg_merge(d, o);
	is_int(m->n, 4, "merged keys");
	struct cfg_node *con = cfg_map_get(m, "console");
	is_str(cfg_map_get(con, "driver")->value, "serial", "base key kept");
	is_str(cfg_map_get(con, "baud")->value, "1500000", "override wins");
	is_str(cfg_map_get(con, "baud")->file, "o.yaml", "override position");
	is_str(cfg_map_get(con, "driver")->file, "d.yaml", "base position");
	struct cfg_node *mt = cfg_map_get(m, "tags");
	is_int(mt->n, 1, "seq replaced");
	is_str(mt->items[0]->value, "b", "seq replaced by override");
	is_str(m->file, "o.yaml", "merged map at override position");
	cfg_free(m);
	cfg_free(d);
	cfg_free(o);

	/* a block naming another driver replaces the inherited block */
	d = parse("d.yaml", "deploy: {driver: uboot-tftp, server: 10.0.0.1, timeout: 5m}\n", &e);
	o = parse("o.yaml", "deploy: {driver: fastboot, serial: ABC}\n", &e);
	m = cfg_merge(d, o);
	con = cfg_map_get(m, "deploy");
	is_str(cfg_map_get(con, "driver")->value, "fastboot", "other driver wins");
	ok(cfg_map_get(con, "server") == NULL && cfg_map_get(con, "timeout") == NULL,
	   "the other driver's keys are not inherited");
	is_int(con->n, 2, "replaced block has only its own keys");
	cfg_free(m);
	cfg_free(o);
	o = parse("o.yaml", "deploy: {driver: uboot-tftp, dtb: x.dtb}\n", &e);
	m = cfg_merge(d, o);
	is_int(cfg_map_get(m, "deploy")->n, 4, "same driver named again: still merged");
	cfg_free(m);
	cfg_free(d);
	cfg_free(o);

	/* print -> reparse round trip, including awkward strings */
	const char *awk =
		"s1: \"yes\"\n"
		"s2: 'a: b'\n"
		"s3: \"#hash\"\n"
		"s4: \"line\\nbreak\\ttab \\\"q\\\" \\\\\"\n"
		"s5: ''\n"
		"s6: \"123\"\n"
		"b: yes\n"
		"num: 12\n"
		"nul: ~\n"
		"empty_map: {}\n"
		"empty_seq: []\n"
		"nested:\n"
		"  - {a: 1, b: [x, {c: d}]}\n"
		"  - - deep\n"
		"    - er\n"
		"  - plain\n"
		"\"key: with colon\": v\n";
	struct cfg_node *r1 = parse("rt.yaml", awk, &e);
	ok(r1 != NULL, "round trip source parses: %s", e.msg);
	char *txt = print_to_string(r1);
	struct cfg_node *r2 = parse("rt2.yaml", txt, &e);
	ok(r2 != NULL, "printed YAML re-parses: %s\n%s", e.msg, txt);
	ok(same(r1, r2), "round trip is identical:\n%s", txt);
	ok(cfg_map_get(r2, "s1")->quoted, "quoted 'yes' stays quoted");
	ok(!cfg_map_get(r2, "b")->quoted, "plain yes stays plain");
	is_str(cfg_map_get(r2, "s4")->value, "line\nbreak\ttab \"q\" \\", "escapes survive");
	free(txt);
	cfg_free(r1);
	cfg_free(r2);

	/* empty document, file errors */
	n = parse("empty.yaml", "", &e);
	ok(n && n->kind == CFG_NULL, "empty file is a null document");
	cfg_free(n);
	lab_err_clear(&e);
	n = NULL;
	ok(cfg_parse_file("/nonexistent/x.yaml", &n, &e) == LAB_EUSAGE, "missing file is EUSAGE");
	is_str(e.msg, "/nonexistent/x.yaml: No such file or directory", "missing file message");

	struct cfg_node *s = cfg_new_scalar("<command line>", 1, 7, "42");
	lab_err_clear(&e);
	cfg_error(&e, s, "x");
	is_str(e.msg, "<command line>:1:7: x", "new scalar position");
	cfg_free(s);
	cfg_free(n);
	return tap_done();
}
