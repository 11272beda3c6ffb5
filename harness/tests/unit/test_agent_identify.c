/* test_agent_identify.c - emmclab-agent identify (identify.c) against a
 * fake sysfs (--sysroot) and crafted EXT_CSD and CID dumps. */
#include "test_agent.h"

#include <stdint.h>

static void make_ext_csd(uint8_t *e, int rev)
{
	memset(e, 0, 512);
	e[192] = (uint8_t)rev;
	e[212] = 0x00; e[213] = 0x00; e[214] = 0xE9; e[215] = 0x00; /* 15269888 sectors */
	e[249] = 0x00; e[250] = 0x10; e[251] = 0; e[252] = 0;         /* 4096 kbit */
	e[33] = 1;
	e[166] = 0x15;
	e[222] = 1;
	for (int i = 0; i < 8; i++)
		e[254 + i] = (uint8_t)(i + 1);
	e[262] = 0x34; e[263] = 0x12;
	e[267] = 1; e[268] = 2; e[269] = 3;
	e[307] = 0x1f; e[308] = 1;
	e[15] = 1;
}

static void test_discovery_and_cid(const char *root)
{
	struct run r;

	run_agent(&r, "--sysroot", root, "identify", NULL);
	is_int(r.bad, 0, "identify: protocol invariants");
	is_int(r.status, 0, "identify: exit 0 without EXT_CSD access");
	is_str(get_kv(&r, "hello", "device"), "mmcblk1", "the MMC, not the SD card, is found");
	is_str(get_kv(&r, "hello", "cmd"), "identify", "hello names the command");
	ok(find_msg(&r, "error", NULL, NULL) == NULL, "no error line: identity without EXT_CSD is fine");
	ok(get_kv(&r, "identity", "ext_csd_error") != NULL, "why EXT_CSD is missing: ext_csd_error");
	is_str(get_kv(&r, "identity", "cid"), CID_HEX, "raw cid");
	is_str(get_kv(&r, "identity", "manfid"), "0x000015", "manfid decoded from the CID");
	is_str(get_kv(&r, "identity", "oemid"), "0x0100", "oemid 16 bits");
	is_str(get_kv(&r, "identity", "name"), "8GTF4R", "product name");
	is_str(get_kv(&r, "identity", "prv"), "0x12", "prv");
	is_str(get_kv(&r, "identity", "hwrev"), "0x1", "hwrev = PRV high nibble");
	is_str(get_kv(&r, "identity", "fwrev"), "0x2", "fwrev = PRV low nibble");
	is_str(get_kv(&r, "identity", "serial"), "0xdeadbeef", "serial");
	is_str(get_kv(&r, "identity", "date"), "06/2016", "date: rev 8 (sysfs) moves 2000 to 2016");
	is_str(get_kv(&r, "identity", "ext_csd_rev"), "8", "ext_csd_rev from sysfs rev");
	is_str(get_kv(&r, "identity", "life_a"), "2", "life_a from sysfs");
	is_str(get_kv(&r, "identity", "life_b"), "3", "life_b from sysfs");
	is_str(get_kv(&r, "identity", "pre_eol"), "1", "pre_eol from sysfs");
	is_str(get_kv(&r, "identity", "rel_sectors"), "1", "rel_sectors from sysfs");
	is_str(get_kv(&r, "identity", "capacity_bytes"), "7818182656", "capacity from size");
	is_str(get_kv(&r, "identity", "knob_fua"), "on", "knob_fua");
	is_str(get_kv(&r, "identity", "knob_disable_cqe"), "1", "bool knob Y reads 1");
	is_str(get_kv(&r, "identity", "cmdline"),
	       "console=ttyS0 mmc_block.fua=on mmc_core.disable_cqe=1", "cmdline");
	is_str(get_kv(&r, "identity", "ext_csd_src"), "none", "ext_csd_src");
	ok(get_kv(&r, "identity", "ext_csd") == NULL, "no ext_csd hex without a read");
	run_free(&r);

	/* sysfs wins over the decode (the kernel's view) */
	put_str("root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001/manfid", "0x000045\n");
	put_str("root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001/date", "01/2020\n");
	run_agent(&r, "--sysroot", root, "identify", NULL);
	is_str(get_kv(&r, "identity", "manfid"), "0x000045", "sysfs manfid wins");
	is_str(get_kv(&r, "identity", "date"), "01/2020", "sysfs date wins");
	run_free(&r);

	/* worst case: a long cmdline of bytes that all need encoding, plus the EXT_CSD hex */
	{
		static char cmd[3000];
		char hex[1100];
		int i;

		for (i = 0; i < 2999; i++)
			cmd[i] = i % 2 ? ' ' : '=';
		put_str("root/proc/cmdline", cmd);
		for (i = 0; i < 1024; i++)
			hex[i] = "0123456789abcdef"[i % 16];
		hex[1024] = '\0';
		put_str("root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd", hex);
		run_agent(&r, "--sysroot", root, "identify", NULL);
		is_int(r.bad, 0, "long cmdline: protocol");
		ok(get_kv(&r, "identity", "ext_csd") != NULL, "identity with EXT_CSD still fits");
		is_int((long long)strlen(get_kv(&r, "identity", "cmdline")), 512 - 1,
		       "cmdline capped");
		run_free(&r);
		put_str("root/proc/cmdline", "console=ttyS0 mmc_block.fua=on mmc_core.disable_cqe=1\n");
		{
			char dbg[4200];

			tpath(dbg, sizeof(dbg), "root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd");
			unlink(dbg);
		}
	}

	run_agent(&r, "--sysroot", root, "--device", "/dev/mmcblk0", "identify", NULL);
	is_str(get_kv(&r, "hello", "device"), "mmcblk0", "--device /dev/mmcblk0 accepted");
	run_free(&r);
}

static void check_gates(const char *root, int rev)
{
	static const struct {
		const char *key, *want;
		int min_rev;
	} fields[] = {
		{ "capacity_bytes", "7818182656", 2 }, { "rel_sectors", "1", 3 },
		{ "rel_wr_param", "21", 5 },           { "cache_kib", "512", 6 },
		{ "cache_ctrl", "1", 6 },              { "life_a", "2", 7 },
		{ "life_b", "3", 7 },                  { "pre_eol", "1", 7 },
		{ "fw_version", "0102030405060708", 7 }, { "device_version", "0x1234", 7 },
		{ "cmdq_support", "1", 8 },            { "cmdq_depth", "32", 8 },
		{ "cmdq_mode_en", "1", 8 },
	};
	char rel[64], path[4200], want_rev[8];
	uint8_t e[512];
	struct run r;
	size_t i;

	make_ext_csd(e, rev);
	snprintf(rel, sizeof(rel), "extcsd-%d.bin", rev);
	put_file(rel, e, sizeof(e));
	tpath(path, sizeof(path), rel);
	{
		char arg[4300];

		snprintf(arg, sizeof(arg), "ext_csd=%s", path);
		/* an empty sysroot: no device, the dump alone */
		run_agent(&r, "--sysroot", root, "identify", arg, NULL);
	}
	ok(r.bad == 0, "rev %d: protocol", rev);
	ok(r.status == 0, "rev %d: ok", rev);
	snprintf(want_rev, sizeof(want_rev), "%d", rev);
	is_str(get_kv(&r, "identity", "ext_csd_rev"), want_rev, "ext_csd_rev");
	is_str(get_kv(&r, "identity", "ext_csd_src"), "file", "src file");
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *v = get_kv(&r, "identity", fields[i].key);

		if (rev >= fields[i].min_rev)
			is_str(v, fields[i].want, fields[i].key);
		else
			ok(v == NULL, "rev %d: %s gated off (got %s)", rev, fields[i].key,
			   v ? v : "(none)");
	}
	{
		const char *hex = get_kv(&r, "identity", "ext_csd");
		char byte[3];

		snprintf(byte, sizeof(byte), "%02x", rev);
		ok(hex && strlen(hex) == 1024 && strncmp(hex + 2 * 192, byte, 2) == 0 &&
		   strncmp(hex + 2 * 262, "3412", 4) == 0, "rev %d: 512-byte hex dump", rev);
	}
	run_free(&r);
}

static void test_ext_csd(const char *root, const char *empty)
{
	char hex[2048], path[4200], arg[4300];
	uint8_t e[512];
	struct run r;
	int rev, i, n = 0;

	for (rev = 1; rev <= 8; rev++)
		check_gates(empty, rev);

	/* shallow queues are ignored like the kernel does (depth <= 2) */
	make_ext_csd(e, 8);
	e[307] = 1;
	put_file("shallow.bin", e, sizeof(e));
	tpath(path, sizeof(path), "shallow.bin");
	snprintf(arg, sizeof(arg), "ext_csd=%s", path);
	run_agent(&r, "--sysroot", empty, "identify", arg, NULL);
	is_str(get_kv(&r, "identity", "cmdq_support"), "0", "depth 2: no cmdq");
	is_str(get_kv(&r, "identity", "cmdq_depth"), "0", "depth 2: depth 0");
	run_free(&r);

	/* debugfs hex text format, with the device's sysfs: CID date uses the EXT_CSD rev */
	make_ext_csd(e, 4);
	for (i = 0; i < 512; i++)
		n += snprintf(hex + n, sizeof(hex) - (size_t)n, "%02x%s", e[i],
			      i % 32 == 31 ? "\n" : "");
	put_str("root/sys/kernel/debug/mmc1/mmc1:0001/ext_csd", hex);
	run_agent(&r, "--sysroot", root, "identify", NULL);
	is_int(r.bad, 0, "debugfs: protocol");
	is_str(get_kv(&r, "identity", "ext_csd_src"), "debugfs", "EXT_CSD from debugfs");
	is_str(get_kv(&r, "identity", "ext_csd_rev"), "4", "debugfs rev 4");
	is_str(get_kv(&r, "identity", "capacity_bytes"), "7818182656", "capacity from EXT_CSD");
	ok(get_kv(&r, "identity", "ext_csd_error") == NULL, "no ext_csd_error when debugfs works");
	run_free(&r);
	/* rev 4 from the dump, no sysfs date/rev override: the 4-bit year is not moved */
	{
		char p[4200];

		tpath(p, sizeof(p), "root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001/date");
		unlink(p);
	}
	run_agent(&r, "--sysroot", root, "identify", NULL);
	is_str(get_kv(&r, "identity", "date"), "06/2000", "rev 4: year 2000 stays");
	run_free(&r);

	put_str("bad.hex", "00 11 22");
	tpath(path, sizeof(path), "bad.hex");
	snprintf(arg, sizeof(arg), "ext_csd=%s", path);
	run_agent(&r, "--sysroot", empty, "identify", arg, NULL);
	is_int(r.status, 1, "short dump: exit 1");
	ok(find_msg(&r, "error", "code", "bad-ext-csd") != NULL, "bad-ext-csd");
	is_int(r.bad, 0, "error run still well-formed");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	make_sysroot();
	test_discovery_and_cid(sys_root);
	test_ext_csd(sys_root, sys_empty);
	agent_cleanup();
	return tap_done();
}
