/* test_agent_mode.c - emmclab-agent mode (mode.c) against a fake sysfs and
 * kernel log: the mode derived from queue/fua, write_cache, cmdq_en and the
 * CQE log line, expect=, the knobs. */
#include "mode.h"
#include "test_agent.h"

static void set_mode_files(const char *fua, const char *wc, const char *cmdq, const char *kmsg)
{
	put_str("root/sys/block/mmcblk1/queue/fua", fua);
	put_str("root/sys/block/mmcblk1/queue/write_cache", wc);
	put_str("root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001/cmdq_en", cmdq);
	put_str("root/dev/kmsg", kmsg);
}

static void test_mode(const char *root)
{
	static const struct {
		const char *fua, *wc, *cmdq, *kmsg, *mode, *cqe_log;
	} cases[] = {
		{ "1\n", "write back\n", "0\n", "", "fua", "none" },
		{ "0\n", "write back\n", "0\n", "mmc1: Host Software Queue enabled\n", "cache-nofua", "hsq" },
		{ "1\n", "write back\n", "1\n", "x\nmmc1: Command Queue Engine enabled\n", "fua-cqe", "cqe" },
		{ "0\n", "write back\n", "1\n", "mmc1: Command Queue Engine enabled\n", "cache-nofua-cqe", "cqe" },
		/* another host's CQE line does not count; cmdq_en alone then decides */
		{ "0\n", "write back\n", "1\n", "mmc0: Command Queue Engine enabled\n", "cache-nofua-cqe", "none" },
		/* the log says software queue: not CQE whatever cmdq_en says */
		{ "1\n", "write back\n", "1\n", "mmc1: Host Software Queue enabled\n", "fua", "hsq" },
		/* last probe wins */
		{ "1\n", "write back\n", "1\n", "mmc1: Command Queue Engine enabled\nmmc1: Host Software Queue enabled\n", "fua", "hsq" },
		{ "0\n", "write through\n", "0\n", "", "unknown", "none" },
	};
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_mode_files(cases[i].fua, cases[i].wc, cases[i].cmdq, cases[i].kmsg);
		run_agent(&r, "--sysroot", root, "mode", NULL);
		ok(r.bad == 0, "mode case %zu: protocol", i);
		is_str(get_kv(&r, "mode", "mode"), cases[i].mode, "derived mode");
		is_str(get_kv(&r, "mode", "cqe_log"), cases[i].cqe_log, "cqe_log");
		ok(get_kv(&r, "mode", "expect") == NULL, "no expect key without expect=");
		run_free(&r);
	}
	set_mode_files("0\n", "write back\n", "1\n", "mmc1: Command Queue Engine enabled\n"
		       "mmc_block: mmcblk1: FUA off (mmc_block.fua=off): REQ_FUA becomes write + flush\n");
	run_agent(&r, "--sysroot", root, "mode", "expect=cache-nofua-cqe", NULL);
	is_int(r.status, 0, "mode expect: exit 0");
	is_str(get_kv(&r, "mode", "fua"), "0", "fua");
	is_str(get_kv(&r, "mode", "write_cache"), "1", "write_cache");
	is_str(get_kv(&r, "mode", "cqe"), "1", "cqe");
	is_str(get_kv(&r, "mode", "cmdq_en"), "1", "cmdq_en");
	is_str(get_kv(&r, "mode", "nr_tags"), "64", "nr_tags");
	is_str(get_kv(&r, "mode", "knob_fua"), "on", "knob_fua");
	is_str(get_kv(&r, "mode", "knob_disable_cqe"), "1", "knob_disable_cqe");
	is_str(get_kv(&r, "mode", "expect"), "cache-nofua-cqe", "expect echoed");
	is_str(get_kv(&r, "mode", "match"), "1", "match");
	is_str(get_kv(&r, "mode", "fua_off_log"), "1", "the series' FUA-off line seen");
	run_free(&r);
	run_agent(&r, "--sysroot", root, "mode", "expect=fua", NULL);
	is_str(get_kv(&r, "mode", "match"), "0", "mismatch");
	is_int(r.status, 0, "mismatch is a result, not an agent error");
	run_free(&r);
	run_agent(&r, "--sysroot", root, "mode", "expect=fast", NULL);
	is_int(r.status, 1, "bad expect: exit 1");
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "bad expect: bad-arg");
	is_int(r.bad, 0, "bad expect: protocol");
	run_free(&r);

	/* knobs: missing module parameters, int knob */
	{
		char p[4200];

		tpath(p, sizeof(p), "root/sys/module/mmc_block/parameters/fua");
		unlink(p);
		put_str("root/sys/module/mmc_core/parameters/disable_cqe", "0\n");
		run_agent(&r, "--sysroot", root, "mode", NULL);
		is_str(get_kv(&r, "mode", "knob_fua"), "missing", "knob_fua missing");
		is_str(get_kv(&r, "mode", "knob_disable_cqe"), "0", "int knob 0");
		run_free(&r);
	}
}

/* Every row of the mode table: the sysfs values it names, found and matched. */
static void test_mode_table(const char *root)
{
	struct run r;
	int m;

	for (m = 0; m < MODE_COUNT; m++) {
		const struct lab_mode_info *mi = &lab_modes[m];
		char expect[64];

		set_mode_files(mi->fua ? "1\n" : "0\n", mi->write_cache ? "write back\n" : "write through\n",
			       mi->cqe ? "1\n" : "0\n",
			       mi->cqe ? "mmc1: Command Queue Engine enabled\n" : "");
		snprintf(expect, sizeof(expect), "expect=%s", mi->name);
		run_agent(&r, "--sysroot", root, "mode", expect, NULL);
		ok(r.bad == 0 && r.status == 0, "mode %s: protocol, exit 0", mi->name);
		is_str(get_kv(&r, "mode", "mode"), mi->name, "derived from the row's values");
		is_str(get_kv(&r, "mode", "match"), "1", "and matches expect=");
		run_free(&r);
	}
}

int main(void)
{
	agent_setup();
	make_sysroot();
	test_mode(sys_root);
	test_mode_table(sys_root);
	agent_cleanup();
	return tap_done();
}
