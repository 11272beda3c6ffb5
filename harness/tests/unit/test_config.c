/* test_config.c - config_load: includes, defaults, types, plans, errors with file:line:col,
 * print -> reload round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "tap.h"

static char dir[64];

static char *path_of(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
	char *p = path_of(name);
	struct lab_err e = {0};
	if (lab_write_file_atomic(p, text, strlen(text), &e) != LAB_OK)
		printf("# cannot write %s: %s\n", p, e.msg);
	free(p);
}

static const char type_a[] =
	"type:\n"
	"  name: board-a\n"
	"  has_cqe: true\n"
	"  modes:\n"
	"    fua: {cmdline: \"mmc_block.fua=on mmc_core.disable_cqe=1\"}\n"
	"    fua-cqe:\n"
	"      cmdline: \"mmc_block.fua=on mmc_core.disable_cqe=0\"\n"
	"      sysfs: [\"/sys/module/mmc_block/parameters/fua=on\"]\n"
	"  board:\n"
	"    console: {driver: serial, baud: 1500000}\n";

static const char suite_s[] =
	"suite:\n"
	"  name: quick\n"
	"  modes: [fua, fua-cqe]\n"
	"  iterations: 3\n"
	"  order: random\n"
	"  workloads:\n"
	"    - name: androbench\n"
	"      args: {seq_mib: 64}\n"
	"    - {name: fscopy, iterations: 2}\n";

/* Load `files` (names in dir); return rc and leave the message in e. */
static int load(struct lab_err *e, struct lab_cfg **c, const char *f1, const char *f2)
{
	char *p1 = path_of(f1), *p2 = f2 ? path_of(f2) : NULL;
	const char *paths[] = {p1, p2};
	lab_err_clear(e);
	*c = NULL;
	int rc = config_load(paths, f2 ? 2 : 1, c, e);
	free(p1);
	free(p2);
	return rc;
}

/* Expect an error whose text, after "<dir>/", is `want`. */
static void expect_error(const char *f1, const char *want, const char *what)
{
	struct lab_err e;
	struct lab_cfg *c;
	int rc = load(&e, &c, f1, NULL);
	is_int(rc, LAB_EUSAGE, what);
	size_t dl = strlen(dir);
	const char *msg = strncmp(e.msg, dir, dl) == 0 && e.msg[dl] == '/' ? e.msg + dl + 1 : e.msg;
	is_str(msg, want, what);
	ok(c == NULL, "%s: no config on error", what);
}

static char *print_cfg(const struct lab_cfg *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	config_print(f, c);
	fclose(f);
	return buf;
}

static int k_node_ok(const struct lab_cfg *c)
{
	const struct kernel_cfg *k = config_kernel(c, "k1");
	const struct cfg_node *img = k && k->node ? cfg_map_get(k->node, "image") : NULL;
	return img && img->line == 9;
}

int main(void)
{
	lab_strlcpy(dir, "/tmp/emmclab-test-config-XXXXXX", sizeof dir);
	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return tap_done();
	}
	struct lab_err e;
	struct lab_cfg *c;

	/* modes */
	is_int(lab_mode_parse("cache-nofua-cqe"), MODE_CACHE_NOFUA_CQE, "mode parse");
	is_int(lab_mode_parse("nope"), -1, "unknown mode");
	ok(lab_mode_fua(MODE_FUA_CQE) && !lab_mode_fua(MODE_CACHE_NOFUA), "fua modes");
	ok(lab_mode_cqe(MODE_CACHE_NOFUA_CQE) && !lab_mode_cqe(MODE_FUA), "cqe modes");

	/* paths */
	char *p = config_path("a/b/lab.yaml", "../types/x.yaml");
	is_str(p, "a/types/x.yaml", "config_path relative");
	free(p);
	p = config_path("a/lab.yaml", "/abs/k");
	is_str(p, "/abs/k", "config_path absolute");
	free(p);
	p = config_path("lab.yaml", "./k/./Image");
	is_str(p, "k/Image", "config_path in cwd");
	free(p);

	/* a complete lab: include, defaults, type board defaults, overrides */
	put("types/a.yaml", "");
	{
		char *d = path_of("types");
		lab_mkdir_p(d, 0755);
		free(d);
	}
	put("types/a.yaml", type_a);
	put("suite.yaml", suite_s);
	put("lab.yaml",
	    "include: [types/a.yaml]\n"
	    "lab: {name: t, results: db/lab.db}\n"
	    "defaults:\n"
	    "  type: board-a\n"
	    "  tags: [nightly]\n"
	    "  power: {driver: pdudaemon, url: \"http://127.0.0.1:16421\", hostname: pdu}\n"
	    "  console: {baud: 115200}\n"
	    "kernels:\n"
	    "  - {name: k1, image: img/Image, dtb: /abs/b.dtb}\n"
	    "boards:\n"
	    "  - name: b1\n"
	    "    power: {port: 1}\n"
	    "    console: {device: /dev/ttyUSB0}\n"
	    "  - name: b2\n"
	    "    enabled: no\n"
	    "    tags: [spare]\n"
	    "    power: {port: 2}\n"
	    "    console: {device: /dev/ttyUSB1, baud: 921600}\n");
	put("plan.yaml",
	    "include: suite.yaml\n"
	    "plan:\n"
	    "  name: nightly\n"
	    "  lab: lab.yaml\n"
	    "  boards: [nightly]\n"
	    "  kernels: [k1]\n"
	    "  suites: [quick]\n"
	    "  budget: 1h30m\n"
	    "  results: out/r.db\n");
	int rc = load(&e, &c, "plan.yaml", NULL);
	ok(rc == LAB_OK, "full load: %s", e.msg);
	if (rc == LAB_OK) {
		is_int((long long)c->ntypes, 1, "one type");
		is_int((long long)c->nboards, 2, "two boards");
		const struct board_cfg *b1 = config_board(c, "b1");
		const struct board_cfg *b2 = config_board(c, "b2");
		ok(b1 && b2, "boards found");
		ok(b1->type == &c->types[0], "type resolved from defaults");
		is_str(b1->type_name, "board-a", "type name");
		is_str(cfg_map_get(b1->console, "driver")->value, "serial", "type board default");
		is_str(cfg_map_get(b1->console, "baud")->value, "115200", "lab default over type default");
		is_str(cfg_map_get(b2->console, "baud")->value, "921600", "board over lab default");
		is_str(cfg_map_get(b1->power, "hostname")->value, "pdu", "defaults merged into block");
		is_str(cfg_map_get(b1->power, "port")->value, "1", "board key in block");
		ok(b1->enabled && !b2->enabled, "enabled");
		is_int((long long)b2->tags.n, 1, "tags replaced, not merged");
		is_int(b1->line, 11, "board position");
		ok(c->types[0].modes[MODE_FUA].supported, "fua supported");
		ok(!c->types[0].modes[MODE_CACHE_NOFUA].supported, "unlisted mode unsupported");
		is_str(c->types[0].modes[MODE_FUA_CQE].sysfs.v[0], "/sys/module/mmc_block/parameters/fua=on",
		       "sysfs recipe");
		is_int((long long)c->types[0].timeouts.boot_ms, 180000, "timeout default");
		is_str(c->types[0].uboot.prompt, "", "a type without a uboot: block has no U-Boot prompt");
		ok(c->types[0].node && c->types[0].node->line == 2 && k_node_ok(c),
		   "types and kernels keep their YAML for check's positions");
		const struct kernel_cfg *k = config_kernel(c, "k1");
		char *want = path_of("img/Image");
		is_str(k->image, want, "kernel image relative to its file");
		free(want);
		is_str(k->dtb, "/abs/b.dtb", "absolute path kept");
		want = path_of("db/lab.db");
		is_str(c->results, want, "results relative to the top file's directory");
		free(want);
		const struct suite_cfg *s = config_suite(c, "quick");
		ok(s != NULL, "suite from include");
		is_int((long long)s->nworkloads, 2, "workloads");
		is_int(s->order, 1, "order random");
		is_int(s->workloads[1].iterations, 2, "workload iterations");
		is_str(cfg_map_get(s->workloads[0].args, "seq_mib")->value, "64", "workload args");
		ok(c->plan != NULL, "plan");
		is_int((long long)c->plan->budget_ms, 5400000, "plan budget");
		want = path_of("lab.yaml");
		is_str(c->plan->lab, want, "plan lab path resolved");
		free(want);
		want = path_of("out/r.db");
		is_str(c->plan->results, want, "plan results relative to the plan");
		free(want);

		/* print -> reload -> print is stable */
		char *t1 = print_cfg(c);
		put("printed.yaml", t1);
		struct lab_cfg *c2 = NULL;
		rc = load(&e, &c2, "printed.yaml", NULL);
		ok(rc == LAB_OK, "printed config reloads: %s", e.msg);
		if (rc == LAB_OK) {
			char *t2 = print_cfg(c2);
			ok(strcmp(t1, t2) == 0, "print -> reload -> print identical");
			if (strcmp(t1, t2) != 0)
				printf("# first:\n%s\n# second:\n%s\n", t1, t2);
			free(t2);
			config_free(c2);
		}
		free(t1);
		config_free(c);
	}

	/* a plan can name a suite file directly */
	put("plan2.yaml",
	    "plan: {name: p2, lab: lab.yaml, suites: [suite.yaml]}\n");
	rc = load(&e, &c, "plan2.yaml", NULL);
	ok(rc == LAB_OK, "plan with suite path: %s", e.msg);
	if (rc == LAB_OK) {
		is_str(c->plan->suites.v[0], "quick", "suite path replaced by its name");
		config_free(c);
	}

	/* errors, each with the exact file:line:col */
	put("e_syntax_inc.yaml", "include: [bad.yaml]\n");
	put("bad.yaml", "boards:\n  - name: x\n    tags: [a, b\n");
	expect_error("e_syntax_inc.yaml",
		     "bad.yaml:4:1: did not find expected ',' or ']' while parsing a flow sequence",
		     "syntax error names the included file");
	put("e_type.yaml", "type:\n  name: t\n  has_cqe: maybe\n");
	expect_error("e_type.yaml",
		     "e_type.yaml:3:12: 'has_cqe' expects a boolean (true/false, yes/no, on/off), got 'maybe'",
		     "wrong type");
	put("e_range.yaml", "type:\n  name: t\n  retries: 50\n");
	expect_error("e_range.yaml", "e_range.yaml:3:12: 'retries' must be between 0 and 20, got '50'",
		     "range");
	put("e_unknown.yaml", "include: types/a.yaml\nboards:\n  - name: b\n    type: board-a\n    consle: {}\n");
	expect_error("e_unknown.yaml",
		     "e_unknown.yaml:5:5: unknown key 'consle' (did you mean 'console'?)",
		     "unknown key with suggestion");
	put("e_section.yaml", "bords: []\n");
	expect_error("e_section.yaml", "e_section.yaml:1:1: unknown section 'bords' (did you mean 'boards'?)",
		     "unknown section");
	put("e_required.yaml", "include: types/a.yaml\nboards:\n  - type: board-a\n    tags: [x]\n");
	expect_error("e_required.yaml", "e_required.yaml:3:5: missing required key 'name'", "missing required");
	put("e_dupkey.yaml", "lab:\n  name: a\n  name: b\n");
	expect_error("e_dupkey.yaml", "e_dupkey.yaml:3:3: duplicate key 'name' (first at line 2:3)",
		     "duplicate key");
	put("cyc1.yaml", "include: cyc2.yaml\n");
	put("cyc2.yaml", "lab: {name: x}\ninclude:\n  - cyc1.yaml\n");
	{
		struct lab_err e2;
		struct lab_cfg *c3;
		rc = load(&e2, &c3, "cyc1.yaml", NULL);
		is_int(rc, LAB_EUSAGE, "include cycle");
		char *want = xasprintf("%s/cyc2.yaml:3:5: include cycle: %s/cyc1.yaml -> %s/cyc2.yaml -> %s/cyc1.yaml",
				       dir, dir, dir, dir);
		is_str(e2.msg, want, "include cycle message");
		free(want);
	}
	put("e_missing_inc.yaml", "include:\n  - nothere.yaml\n");
	{
		struct lab_err e2;
		struct lab_cfg *c3;
		rc = load(&e2, &c3, "e_missing_inc.yaml", NULL);
		is_int(rc, LAB_EUSAGE, "missing include");
		char *want = xasprintf("%s/e_missing_inc.yaml:2:5: cannot read '%s/nothere.yaml': "
				       "No such file or directory", dir, dir);
		is_str(e2.msg, want, "missing include message");
		free(want);
	}
	put("e_typeref.yaml", "include: types/a.yaml\nboards:\n  - name: b\n    type: board-b\n");
	expect_error("e_typeref.yaml",
		     "e_typeref.yaml:4:11: unknown board type 'board-b' (did you mean 'board-a'?)",
		     "unknown type reference");
	put("e_dupboard.yaml",
	    "include: types/a.yaml\ndefaults: {type: board-a}\nboards:\n  - name: b\n  - name: c\n  - name: b\n");
	{
		struct lab_err e2;
		struct lab_cfg *c3;
		rc = load(&e2, &c3, "e_dupboard.yaml", NULL);
		is_int(rc, LAB_EUSAGE, "duplicate board");
		char *want = xasprintf("%s/e_dupboard.yaml:6:11: duplicate board 'b' (first defined at "
				       "%s/e_dupboard.yaml:4:5)", dir, dir);
		is_str(e2.msg, want, "duplicate board names both positions");
		free(want);
	}
	put("e_mode.yaml", "suite:\n  name: s\n  modes: [fua, cache-nofau]\n  workloads: [{name: fscopy}]\n");
	expect_error("e_mode.yaml",
		     "e_mode.yaml:3:16: unknown mode 'cache-nofau' (did you mean 'cache-nofua'?)",
		     "unknown suite mode");
	put("e_typemode.yaml", "type:\n  name: t\n  modes:\n    fau: {cmdline: x}\n");
	expect_error("e_typemode.yaml", "e_typemode.yaml:4:5: unknown key 'fau' (did you mean 'fua'?)",
		     "unknown mode in a type");
	put("e_cqe.yaml", "type:\n  name: t\n  modes:\n    fua-cqe: {cmdline: x}\n");
	expect_error("e_cqe.yaml", "e_cqe.yaml:4:5: mode 'fua-cqe' needs a CQE host (has_cqe: true)",
		     "cqe mode without cqe");
	put("e_workload.yaml", "suite:\n  name: s\n  workloads:\n    - name: androbnch\n");
	expect_error("e_workload.yaml",
		     "e_workload.yaml:4:13: unknown workload 'androbnch' (did you mean 'androbench'?)",
		     "unknown workload");
	put("e_plan_suite.yaml", "include: suite.yaml\nplan: {name: p, suites: [quik]}\n");
	expect_error("e_plan_suite.yaml",
		     "e_plan_suite.yaml:2:26: unknown suite 'quik' (did you mean 'quick'?)",
		     "plan unknown suite");
	put("e_plan_kernel.yaml", "include: lab.yaml\nplan:\n  name: p\n  suites: quick\n  kernels: [k2]\n");
	put("e_plan_kernel2.yaml", "include: [suite.yaml, e_plan_kernel.yaml]\n");
	expect_error("e_plan_kernel2.yaml",
		     "e_plan_kernel.yaml:5:13: unknown kernel 'k2' (did you mean 'k1'?)", "plan unknown kernel");
	put("e_plan_board.yaml",
	    "include: [lab.yaml, suite.yaml]\nplan:\n  name: p\n  suites: quick\n  boards: [b1, gpu]\n");
	expect_error("e_plan_board.yaml", "e_plan_board.yaml:5:16: unknown board or tag 'gpu'",
		     "plan unknown board");
	put("e_two_labs.yaml", "include: lab.yaml\nlab: {name: again}\n");
	{
		struct lab_err e2;
		struct lab_cfg *c3;
		rc = load(&e2, &c3, "e_two_labs.yaml", NULL);
		is_int(rc, LAB_EUSAGE, "two lab sections");
		char *want = xasprintf("%s/e_two_labs.yaml:2:1: second 'lab:' section (the first is at "
				       "%s/lab.yaml:2:6)", dir, dir);
		is_str(e2.msg, want, "two lab sections message");
		free(want);
	}
	put("e_driver.yaml", "include: types/a.yaml\nboards:\n  - {name: b, type: board-a, power: {port: 1}}\n");
	expect_error("e_driver.yaml", "e_driver.yaml:3:37: 'power' expects a map with a 'driver:' key",
		     "driver block without driver");
	put("e_sysfs.yaml", "type:\n  name: t\n  modes:\n    fua: {sysfs: [fua=on]}\n");
	expect_error("e_sysfs.yaml", "e_sysfs.yaml:4:19: 'sysfs' items are \"/sys/path=value\", got 'fua=on'",
		     "sysfs recipe format");
	put("e_defaults.yaml", "defaults: {consol: {driver: serial}}\n");
	expect_error("e_defaults.yaml", "e_defaults.yaml:1:12: unknown key 'consol' (did you mean 'console'?)",
		     "defaults checked without boards");

	/* a uboot: block, even without a prompt key, brings U-Boot's default prompt */
	put("ub.yaml", "type: {name: ub, uboot: {chunk: 4}}\n");
	{
		const char *paths[] = {path_of("ub.yaml")};
		struct lab_err e2 = {0};
		rc = config_load(paths, 1, &c, &e2);
		ok(rc == LAB_OK && strcmp(c->types[0].uboot.prompt, "=> ") == 0,
		   "type with a uboot: block: default prompt '=> ' (%s)", e2.msg);
		if (rc == LAB_OK)
			config_free(c);
		free((char *)paths[0]);
	}

	/* missing top-level file */
	{
		const char *paths[] = {"/nonexistent/lab.yaml"};
		struct lab_err e2 = {0};
		rc = config_load(paths, 1, &c, &e2);
		is_int(rc, LAB_EUSAGE, "missing file");
		is_str(e2.msg, "/nonexistent/lab.yaml: No such file or directory", "missing file message");
	}

	/* the shipped board types and the example lab load */
	const char *src = getenv("EMMCLAB_SRC");
	if (src) {
		char *lab = xasprintf("%s/boards/labs/example-lab.yaml", src);
		const char *paths[] = {lab};
		rc = config_load(paths, 1, &c, &e);
		ok(rc == LAB_OK, "example lab loads: %s", e.msg);
		if (rc == LAB_OK) {
			is_int((long long)c->nboards, 20, "example lab has 20 boards");
			config_free(c);
		}
		free(lab);
	}

	char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	free(cmd);
	return tap_done();
}
