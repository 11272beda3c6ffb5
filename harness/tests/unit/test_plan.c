/* Plan expansion: slot orders, reboots, preconditioning, unsupported modes, selection errors. */
#include "config.h"
#include "plan.h"
#include "run.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/emmclab-test-plan-XXXXXX";

static const char *lab_yaml =
	"lab:\n  name: t\n"
	"types:\n"
	"  - name: nocqe\n    modes:\n      fua: {cmdline: \"mmc_block.fua=on\"}\n"
	"      cache-nofua: {cmdline: \"mmc_block.fua=off\"}\n"
	"  - name: cqe\n    has_cqe: true\n    modes:\n      fua: {cmdline: a}\n      cache-nofua: {cmdline: b}\n"
	"      fua-cqe: {cmdline: c}\n      cache-nofua-cqe: {cmdline: d}\n"
	"boards:\n"
	"  - {name: b1, type: nocqe, tags: [x], console: {driver: pty, path: /nonexistent}, power: {driver: manual}, deploy: {driver: none}}\n"
	"  - {name: b2, type: cqe, console: {driver: pty, path: /nonexistent}, power: {driver: manual}, deploy: {driver: none}}\n"
	"  - {name: b3, type: cqe, enabled: false, console: {driver: pty, path: /nonexistent}, power: {driver: manual}, deploy: {driver: none}}\n";

static char *write_file(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	return p;
}

static struct lab_cfg *load(const char *plan_text, struct lab_err *e)
{
	char *lab = write_file("lab.yaml", lab_yaml);
	char *plan = write_file("plan.yaml", plan_text);
	const char *paths[] = {plan};
	struct lab_cfg *c = NULL;
	int rc = config_load(paths, 1, &c, e);
	free(lab);
	free(plan);
	return rc ? NULL : c;
}

static void slots_str(const struct plan *p, size_t bi, char *out, size_t n)
{
	out[0] = '\0';
	for (size_t k = 0; k < p->boards[bi].nslots; k++) {
		const struct plan_slot *s = &p->boards[bi].slots[k];
		char one[32];
		snprintf(one, sizeof one, "%s%s%d%s", k ? " " : "", s->reboot ? "^" : "",
			 p->jobs[s->job].mode, s->precondition ? "p" : "");
		snprintf(one + strlen(one), sizeof one - strlen(one), ".%d", s->iteration);
		lab_strlcat(out, one, n);
	}
}

static const char *suite_fmt =
	"suites:\n  - name: s\n    modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]\n"
	"    iterations: %d\n    order: %s\n    seed: 7\n    precondition_passes: %d\n"
	"    workloads: [{name: androbench}]\n"
	"plan:\n  name: p\n  lab: lab.yaml\n  suites: [s]\n%s";

static struct plan *expand(int iters, const char *order, int pre, const char *extra, struct lab_cfg **labp)
{
	char *text = xasprintf(suite_fmt, iters, order, pre, extra);
	struct lab_err e = {0};
	struct lab_cfg *lab = load(text, &e);
	free(text);
	if (!lab) {
		printf("# config: %s\n", e.msg);
		return NULL;
	}
	struct plan *p = NULL;
	if (plan_expand(lab, &p, &e)) {
		printf("# plan: %s\n", e.msg);
		config_free(lab);
		return NULL;
	}
	*labp = lab;
	return p;
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	struct lab_cfg *lab = NULL;
	char buf[512];

	struct plan *p = expand(2, "interleave", 1, "", &lab);
	ok(p != NULL, "interleave plan expands");
	if (p) {
		is_int(p->nboards, 2, "disabled board left out");
		is_int(p->njobs, 6, "2 modes on the no-CQE board + 4 on the CQE board");
		is_int(p->nnotes, 2, "two unsupported modes noted");
		slots_str(p, 0, buf, sizeof buf);
		is_str(buf, "^0p.1 ^1.1 ^0.2 ^1.2", "no-CQE board: A1 B1 A2 B2, reboot per slot, precondition first");
		slots_str(p, 1, buf, sizeof buf);
		is_str(buf, "^0p.1 ^1.1 ^2.1 ^3.1 ^0.2 ^1.2 ^2.2 ^3.2", "CQE board interleaves all four modes");
		plan_free(p);
		config_free(lab);
	}

	p = expand(3, "sequential", 0, "", &lab);
	ok(p != NULL, "sequential plan expands");
	if (p) {
		slots_str(p, 0, buf, sizeof buf);
		is_str(buf, "^0.1 0.2 0.3 ^1.1 1.2 1.3", "sequential: one boot per mode, no precondition");
		plan_free(p);
		config_free(lab);
	}

	p = expand(3, "random", 0, "", &lab);
	char first[512] = "";
	ok(p != NULL, "random plan expands");
	if (p) {
		slots_str(p, 1, first, sizeof first);
		size_t n = p->boards[1].nslots;
		is_int(n, 12, "random keeps every slot");
		/* each round holds each mode exactly once */
		int okround = 1;
		for (int r = 0; r < 3; r++) {
			int seen = 0;
			for (int k = 0; k < 4; k++) {
				const struct plan_slot *s = &p->boards[1].slots[r * 4 + k];
				seen |= 1 << p->jobs[s->job].mode;
				okround &= s->iteration == r + 1;
			}
			okround &= seen == 15;
		}
		ok(okround, "random order shuffles within rounds: %s", first);
		plan_free(p);
		config_free(lab);
	}
	p = expand(3, "random", 0, "", &lab);
	if (p) {
		slots_str(p, 1, buf, sizeof buf);
		is_str(buf, first, "random order is deterministic under the seed");
		plan_free(p);
		config_free(lab);
	}

	p = expand(1, "interleave", 0, "  boards: [x]\n", &lab);
	ok(p && p->nboards == 1, "selection by tag");
	if (p) {
		plan_free(p);
		config_free(lab);
	}

	/* The plan's order and seed replace the suite's. */
	p = expand(2, "sequential", 0, "  order: interleave\n", &lab);
	ok(p != NULL, "plan order expands");
	if (p) {
		slots_str(p, 0, buf, sizeof buf);
		is_str(buf, "^0.1 ^1.1 ^0.2 ^1.2", "plan order: interleave overrides the suite's sequential");
		plan_free(p);
		config_free(lab);
	}
	char seeded[512] = "";
	p = expand(4, "interleave", 0, "  order: random\n  seed: 12345\n", &lab);
	if (p) {
		slots_str(p, 1, seeded, sizeof seeded);
		is_int(plan_suite_seed(lab->plan, p->jobs[0].suite), 12345, "plan seed replaces the suite's");
		is_int(plan_suite_order(lab->plan, p->jobs[0].suite), 1, "plan order random");
		plan_free(p);
		config_free(lab);
	}
	p = expand(4, "interleave", 0, "  order: random\n  seed: 12345\n", &lab);
	if (p) {
		slots_str(p, 1, buf, sizeof buf);
		is_str(buf, seeded, "plan random order is reproducible under its seed");
		plan_free(p);
		config_free(lab);
	}
	ok(strcmp(seeded, "^0.1 ^1.1 ^2.1 ^3.1 ^0.2 ^1.2 ^2.2 ^3.2 ^0.3 ^1.3 ^2.3 ^3.3 ^0.4 ^1.4 ^2.4 ^3.4") != 0,
	   "the seeded order is not the interleaved one");

	/* Priorities: the higher suite's slots come first on each board. */
	static const char *two =
		"suites:\n"
		"  - {name: low, modes: [fua], iterations: 1, workloads: [{name: androbench}]}\n"
		"  - {name: high, modes: [cache-nofua], iterations: 1, workloads: [{name: androbench}]}\n"
		"  - {name: mid, modes: [fua], iterations: 1, workloads: [{name: fscopy}]}\n"
		"plan:\n  name: p\n  lab: lab.yaml\n  suites: [low, high, mid]\n%s";
	struct lab_err e = {0};
	char *text = xasprintf(two, "  priorities: {high: 10, mid: 5}\n");
	lab = load(text, &e);
	free(text);
	p = NULL;
	ok(lab && plan_expand(lab, &p, &e) == 0, "plan with priorities expands %s", e.msg);
	if (p) {
		const struct plan_board *pb = &p->boards[0];
		ok(pb->nslots == 3 && strcmp(p->jobs[pb->slots[0].job].suite->name, "high") == 0 &&
			   strcmp(p->jobs[pb->slots[1].job].suite->name, "mid") == 0 &&
			   strcmp(p->jobs[pb->slots[2].job].suite->name, "low") == 0,
		   "priorities: high, then mid, then low (default 0)");
		is_int(p->jobs[pb->slots[0].job].priority, 10, "the job carries its priority");
		plan_free(p);
	}
	config_free(lab);
	text = xasprintf(two, "");
	e = (struct lab_err){0};
	lab = load(text, &e);
	free(text);
	p = NULL;
	if (lab && plan_expand(lab, &p, &e) == 0) {
		ok(strcmp(p->jobs[p->boards[0].slots[0].job].suite->name, "low") == 0,
		   "no priorities: the plan's suite order");
		plan_free(p);
	}
	config_free(lab);
	text = xasprintf(two, "  priorities:\n    nope: 3\n");
	e = (struct lab_err){0};
	lab = load(text, &e);
	free(text);
	p = NULL;
	ok(lab && plan_expand(lab, &p, &e) == LAB_EUSAGE && strstr(e.msg, "plan.yaml:10:5:") &&
		   strstr(e.msg, "'nope' is not a suite"),
	   "a priority for an unknown suite names file:line:col: %s", e.msg);
	config_free(lab);
	text = xasprintf(two, "  priorities: {high: soon}\n");
	e = (struct lab_err){0};
	lab = load(text, &e);
	free(text);
	p = NULL;
	ok(lab && plan_expand(lab, &p, &e) == LAB_EUSAGE && strstr(e.msg, "wants an integer"),
	   "a priority that is not an integer is refused: %s", e.msg);
	config_free(lab);

	e = (struct lab_err){0};
	text = xasprintf(suite_fmt, 1, "interleave", 0, "  boards: [nope]\n");
	lab = load(text, &e);
	free(text);
	if (lab) {
		struct plan *q = NULL;
		int rc = plan_expand(lab, &q, &e);
		ok(rc == LAB_EUSAGE && strstr(e.msg, "'nope'"), "unknown board named in the error: %s", e.msg);
		config_free(lab);
	} else {
		ok(strstr(e.msg, "nope") != NULL, "unknown board rejected at load: %s", e.msg);
	}

	char *cmd = xasprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	free(cmd);
	return tap_done();
}
