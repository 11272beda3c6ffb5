/* test_health.c - part wear: the protocol values and thresholds (health.c),
 * how a collect takes them from identity and health lines (collect.c), and
 * the agent's `health` command (suites/agent/health.c) on a fake sysfs and
 * debugfs (--sysroot): a fresh EXT_CSD wins over sysfs's values from boot. */
#include "collect.h"
#include "health.h"
#include "results.h"
#include "test_agent.h"

#include <stdint.h>

static void test_values(void)
{
	is_int(health_value("0x0a"), 10, "0x0a");
	is_int(health_value("0x0A"), 10, "0x0A");
	is_int(health_value("11"), 11, "decimal");
	is_int(health_value("0"), 0, "0 (not defined)");
	is_int(health_value("255"), 255, "255");
	is_int(health_value("256"), -1, "out of range");
	is_int(health_value("-1"), -1, "negative");
	is_int(health_value(""), -1, "empty");
	is_int(health_value(NULL), -1, "missing");
	is_int(health_value("0x"), -1, "bare 0x");
	is_int(health_value("010"), -1, "octal-looking is refused");
	is_int(health_value("2 "), -1, "trailing junk");
	is_str(health_life_text(1), "0-10%", "life 0x01");
	is_str(health_life_text(10), "90-100%", "life 0x0a");
	is_str(health_life_text(11), "past its life", "life 0x0b");
	is_str(health_life_text(0), "not defined", "life 0");
	is_str(health_life_text(12), "not defined", "life 0x0c");
	is_str(health_eol_text(2), "warning", "pre_eol 2");
	is_str(health_eol_text(-1), "?", "pre_eol unknown");
}

static void test_threshold(void)
{
	struct health_cfg c = {.life_time_max = 0x09, .pre_eol_max = 1};
	struct health_reading r;
	char why[160];

	health_reading_init(&r);
	ok(!health_reading_any(&r), "an empty reading says nothing");
	ok(!health_exceeds(&c, &r, why, sizeof why) && !why[0], "unknown values never exceed");
	r.life_a = 9;
	r.life_b = 9;
	r.pre_eol = 1;
	ok(!health_exceeds(&c, &r, why, sizeof why), "at the threshold: accepted");
	r.life_b = 10;
	ok(health_exceeds(&c, &r, why, sizeof why), "life_b past the threshold");
	is_str(why, "life_b 0x0a (90-100% used) > life_time_max 0x09", "why names life_b");
	r.life_b = 0;
	r.life_a = 11;
	ok(health_exceeds(&c, &r, why, sizeof why), "life_a past its life");
	is_str(why, "life_a 0x0b (past its life used) > life_time_max 0x09", "why names life_a");
	r.life_a = 1;
	ok(!health_exceeds(&c, &r, why, sizeof why), "life_b 0 (not defined) is no reading");
	r.pre_eol = 2;
	ok(health_exceeds(&c, &r, why, sizeof why), "pre_eol warning > pre_eol_max 1");
	is_str(why, "pre_eol 2 (warning) > pre_eol_max 1", "why names pre_eol");
	c.pre_eol_max = 2;
	ok(!health_exceeds(&c, &r, why, sizeof why), "pre_eol_max 2 accepts a warning");

	struct store_health_sum h = {.n = 3, .first_a = 1, .first_b = 1, .last_a = 3, .last_b = 1,
				     .first_eol = 1, .last_eol = 2};
	char now[160], trend[96];
	lab_strlcpy(h.first_at, "2026-11-02T01:00:00Z", sizeof h.first_at);
	health_now_text(&h, now, sizeof now);
	health_trend_text(&h, trend, sizeof trend);
	is_str(now, "A 0x03 (20-30%) B 0x01 (0-10%) pre-EOL 2 (warning)", "latest reading text");
	is_str(trend, "A +2 B +0 in 3 readings since 2026-11-02T01:00:00Z", "trend text");
}

static struct proto_msg pm;

static const struct proto_msg *msg(const char *kind, const char *const *kv)
{
	static uint64_t seq;
	char line[1024];
	int n = proto_format(line, sizeof line, ++seq, kind, kv);
	if (n < 0 || proto_parse(line, (size_t)n, &pm) != PROTO_OK)
		abort();
	return &pm;
}

static void test_collect(void)
{
	static struct collect c;
	collect_reset(&c);
	const char *id[] = {"cid", CID_HEX, "life_a", "0x02", "life_b", "0x03", "pre_eol", "0x01",
			    "ext_csd_src", "none", NULL};
	collect_msg(&c, msg("identity", id), false);
	ok(c.have_identity && c.have_health, "identity carries the health");
	ok(c.health.life_a == 2 && c.health.life_b == 3 && c.health.pre_eol == 1, "hex values");
	is_str(c.health.src, "sysfs", "no EXT_CSD: the values came from sysfs");
	collect_reset(&c);
	ok(!c.have_health && c.health.life_a == -1, "reset forgets the reading");
	const char *h[] = {"life_a", "10", "life_b", "junk", "src", "ioctl", NULL};
	collect_msg(&c, msg("health", h), false);
	ok(c.have_health && c.health.life_a == 10 && c.health.life_b == -1 && c.health.pre_eol == -1,
	   "health line: a bad value is unknown, not zero");
	is_str(c.health.src, "ioctl", "src kept");
	collect_reset(&c);
	const char *none[] = {"cid", CID_HEX, NULL};
	collect_msg(&c, msg("identity", none), false);
	ok(c.have_identity && !c.have_health, "an identity without life fields has no reading");
	collect_reset(&c);
}

static const char *get_path(const char *rel)
{
	static char p[4200];
	tpath(p, sizeof p, rel);
	return p;
}

static void test_agent_health(void)
{
	struct run r;
	uint8_t e[512];
	char hex[1100];

	run_agent(&r, "--sysroot", sys_root, "--device", "mmcblk1", "health", NULL);
	is_int(r.bad, 0, "health: protocol invariants");
	is_int(r.status, 0, "health: exit 0 from sysfs");
	is_str(get_kv(&r, "health", "life_a"), "2", "sysfs life_time A");
	is_str(get_kv(&r, "health", "life_b"), "3", "sysfs life_time B");
	is_str(get_kv(&r, "health", "pre_eol"), "1", "sysfs pre_eol_info");
	is_str(get_kv(&r, "health", "src"), "sysfs", "src sysfs");
	run_free(&r);

	/* a fresh EXT_CSD in debugfs wins over sysfs's values from card init */
	memset(e, 0, sizeof e);
	e[192] = 8;
	e[267] = 2;
	e[268] = 5;
	e[269] = 6;
	for (int i = 0; i < 512; i++)
		snprintf(hex + 2 * i, 3, "%02x", e[i]);
	put_str("root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd", hex);
	run_agent(&r, "--sysroot", sys_root, "--device", "mmcblk1", "health", NULL);
	is_int(r.status, 0, "health: exit 0 from debugfs");
	is_str(get_kv(&r, "health", "life_a"), "5", "EXT_CSD[268]");
	is_str(get_kv(&r, "health", "life_b"), "6", "EXT_CSD[269]");
	is_str(get_kv(&r, "health", "pre_eol"), "2", "EXT_CSD[267]");
	is_str(get_kv(&r, "health", "src"), "debugfs", "src debugfs");
	run_free(&r);

	/* an EXT_CSD before rev 7 has no such fields: sysfs instead */
	e[192] = 6;
	for (int i = 0; i < 512; i++)
		snprintf(hex + 2 * i, 3, "%02x", e[i]);
	put_str("root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd", hex);
	run_agent(&r, "--sysroot", sys_root, "--device", "mmcblk1", "health", NULL);
	is_str(get_kv(&r, "health", "life_a"), "2", "rev 6: sysfs again");
	run_free(&r);

	/* nothing readable: an error line, exit 1 */
	run_agent(&r, "--sysroot", sys_empty, "--device", "mmcblk1", "health", NULL);
	ok(r.status != 0, "no sysfs: non-zero exit");
	ok(find_msg(&r, "error", "code", "no-health") || find_msg(&r, "error", "code", "no-device"),
	   "no sysfs: an error line");
	ok(!find_msg(&r, "health", NULL, NULL), "no sysfs: no health line");
	run_free(&r);

	/* a malformed sysfs life_time is no value (pre_eol_info still is) */
	unlink(get_path("root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd"));
	put_str("root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001/life_time", "0x01\n");
	run_agent(&r, "--sysroot", sys_root, "--device", "mmcblk1", "health", NULL);
	is_int(r.status, 0, "one life_time value: still a reading");
	ok(!get_kv(&r, "health", "life_a"), "one life_time value: no life_a");
	is_str(get_kv(&r, "health", "pre_eol"), "1", "pre_eol_info kept");
	run_free(&r);
}

/* A part is listed when it has readings and values in scope; groups are
 * ordered by part, which health_part_shown bisects. */
static void test_part_shown(void)
{
	struct results_part parts[5] = {{0}};
	struct results_group groups[6] = {{0}};
	size_t gp[6] = {0, 0, 2, 2, 2, 4};
	for (size_t i = 0; i < 5; i++)
		parts[i].health.n = i == 4 ? 0 : 1;
	for (size_t i = 0; i < 6; i++)
		groups[i].part = gp[i];
	struct results r = {.parts = parts, .nparts = 5, .groups = groups, .ngroups = 6};
	ok(health_part_shown(&r, 0) && health_part_shown(&r, 2), "parts with readings and values shown");
	ok(!health_part_shown(&r, 1) && !health_part_shown(&r, 3), "parts without values not shown");
	ok(!health_part_shown(&r, 4), "a part without readings not shown");
	r.ngroups = 0;
	ok(!health_part_shown(&r, 0), "no values: nothing shown");
}

int main(void)
{
	test_values();
	test_part_shown();
	test_threshold();
	test_collect();
	agent_setup();
	make_sysroot();
	test_agent_health();
	agent_cleanup();
	return tap_done();
}
