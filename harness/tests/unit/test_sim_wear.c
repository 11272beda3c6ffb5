/* test_sim_wear.c - the simulated parts wear with the bytes their workloads
 * write (boards/sim/sim_agent.c sim_life, docs/simulator.md): the simulated
 * agent's `health` line, before and after preconditioning, and the steps to
 * PRE_EOL warning and past the rated life. */
#include "health.h"
#include "proto.h"
#include "sim_board.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static struct sim_board b;

/* Run the simulated agent (output captured) and return its health reading. */
static struct health_reading run(const char *a1, const char *a2)
{
	char *argv[] = {"emmclab-agent", (char *)a1, (char *)a2, NULL};
	struct lab_buf out;
	struct health_reading h;
	double t = 0;
	lab_buf_init(&out, 4096);
	health_reading_init(&h);
	sim_agent_run(&b, a2 ? 3 : 2, argv, &t, false, &out);
	for (char *line = (char *)lab_buf_cstr(&out), *nl; line && *line; line = nl) {
		static struct proto_msg m;
		nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(++nl - line) : strlen(line);
		if (proto_parse(line, len, &m) == PROTO_OK && strcmp(m.kind, "health") == 0) {
			h.life_a = health_value(proto_get(&m, "life_a"));
			h.life_b = health_value(proto_get(&m, "life_b"));
			h.pre_eol = health_value(proto_get(&m, "pre_eol"));
		}
	}
	lab_buf_free(&out);
	return h;
}

int main(void)
{
	b.part = sim_part_find("industrial-8g");
	b.cfg.kernel_version = "6.1.0-sim";
	if (!b.part) {
		ok(0, "industrial-8g profile");
		return tap_done();
	}
	uint64_t cap = b.part->capacity_bytes;
	struct health_reading h = run("health", NULL);
	ok(h.life_a == (int)b.part->life_a && h.life_b == (int)b.part->life_b &&
	   h.pre_eol == (int)b.part->pre_eol, "fresh: the profile's values (%d %d %d)", h.life_a,
	   h.life_b, h.pre_eol);
	run("precondition", "passes=100");
	ok(b.wear_bytes == 100 * cap, "precondition counts passes x capacity");
	h = run("health", NULL);
	is_int(h.life_a, (int)b.part->life_a, "100 full writes: no step yet (slowly)");
	run("precondition", "passes=100");
	run("precondition", "passes=100");
	h = run("health", NULL);
	is_int(h.life_a, (int)b.part->life_a + 1, "300 full writes (10% of 3,000 cycles): one step A");
	is_int(h.life_b, (int)b.part->life_b + 1, "and B");
	is_int(h.pre_eol, 1, "pre_eol still normal");
	b.wear_bytes = (uint64_t)(0x09 - b.part->life_a) * 300 * cap;
	h = run("health", NULL);
	is_int(h.life_a, 0x09, "life 0x09 (80-90%)");
	is_int(h.pre_eol, 2, "pre_eol warning from 0x09");
	b.wear_bytes = 20 * 300 * cap;
	h = run("health", NULL);
	is_int(h.life_a, 0x0b, "capped at 0x0b (past the life)");
	is_int(h.pre_eol, 3, "pre_eol urgent past the life");
	struct health_cfg c = {.life_time_max = 0x09, .pre_eol_max = 1};
	char why[160];
	ok(health_exceeds(&c, &h, why, sizeof why), "the default thresholds flag it: %s", why);
	return tap_done();
}
