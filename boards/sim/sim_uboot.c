/*
 * sim_uboot.c - the boot ROM / SPL / U-Boot part of a simulated board:
 * banner, autoboot countdown, the command line (hush as U-Boot 2023.01 runs
 * it: and-or lists with its skip rule, if/then/elif/else/fi, $?, variables)
 * and the commands a lab uses (env, dhcp, tftp, load, booti/bootz/bootm,
 * zboot, ums, fastboot, mmc, version, reset).  Texts follow U-Boot 2023.01
 * (harness/tests/vectors/uboot-2023.01-hush.txt: what the real one printed).
 */
#include "sim_board.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct host_info {
	const char *host, *node, *linux_dev;
};
static const struct host_info hosts[] = {
	{"sdhci-of-arasan", "mmc@fe330000", "fe330000.mmc"},
	{"dw_mmc", "mmc@ff520000", "ff520000.mmc"},
	{"dw_mmc-rockchip", "mmc@ff520000", "ff520000.mmc"},
	{"dw_mmc-exynos", "mmc@12200000", "12200000.mmc"},
	{"meson-gx", "mmc@d0074000", "d0074000.mmc"},
	{"meson-gx-mmc", "mmc@d0074000", "d0074000.mmc"},
	{"sdhci-sprd", "sdio@201a0000", "201a0000.sdio"},
	{"sdhci-esdhc-imx", "mmc@5b010000", "5b010000.mmc"},
	{"sdhci-esdhc", "mmc@5b010000", "5b010000.mmc"},
};

const char *sim_host_node(const char *host)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(hosts); i++)
		if (strcmp(hosts[i].host, host) == 0)
			return hosts[i].node;
	return "mmc@1c11000";
}

const char *sim_host_linux(const char *host)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(hosts); i++)
		if (strcmp(hosts[i].host, host) == 0)
			return hosts[i].linux_dev;
	return "1c11000.mmc";
}

static int board_index(const struct sim_board *b)
{
	for (size_t i = 0; i < b->sim->nboards; i++)
		if (b->sim->boards[i] == b)
			return (int)i;
	return 0;
}

void sim_uboot_default_env(struct sim_board *b, struct sim_kv *env)
{
	char v[512];
	sim_kv_clear(env);
	sim_kv_set(env, "arch", "arm");
	sim_kv_set(env, "baudrate", "1500000");
	sim_kv_set(env, "board", b->name);
	sim_kv_set(env, "board_name", b->name);
	sim_kv_set(env, "bootargs", b->cfg.bootargs);
	sim_kv_set(env, "bootcmd",
		   "load mmc 0:1 ${kernel_addr_r} Image; load mmc 0:1 ${fdt_addr_r} ${fdtfile}; "
		   "booti ${kernel_addr_r} - ${fdt_addr_r}");
	snprintf(v, sizeof v, "%lld", (long long)b->cfg.bootdelay);
	sim_kv_set(env, "bootdelay", v);
	sim_kv_set(env, "cpu", "armv8");
	snprintf(v, sizeof v, "62:6d:6d:63:%02x:%02x", (board_index(b) >> 8) & 0xff,
		 board_index(b) & 0xff);
	sim_kv_set(env, "ethaddr", v);
	sim_kv_set(env, "fdt_addr_r", "0x01f00000");
	snprintf(v, sizeof v, "%s-%s.dtb", b->cfg.soc, b->name);
	sim_kv_set(env, "fdtfile", v);
	sim_kv_set(env, "kernel_addr_r", "0x02080000");
	sim_kv_set(env, "loadaddr", "0x00800800");
	sim_kv_set(env, "ramdisk_addr_r", "0x06000000");
	sim_kv_set(env, "scriptaddr", "0x00500000");
	sim_kv_set(env, "soc", b->cfg.soc);
	sim_kv_set(env, "stderr", "serial");
	sim_kv_set(env, "stdin", "serial");
	sim_kv_set(env, "stdout", "serial");
	sim_kv_set(env, "vendor", "emmclab");
}

/* ---- power-on sequence ---- */

static void ub_key(struct sim_board *b, unsigned char c);

static void ub_prompt(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_set_stage(b, SIM_UBOOT);
	b->ub_polling = false;
	sim_lined_reset(&b->lined);
	sim_out_now(b, b->cfg.prompt, strlen(b->cfg.prompt));
	/* readline now reads what was typed while the command ran */
	size_t n = b->ub_npend;
	unsigned char pend[sizeof b->ub_pend];
	memcpy(pend, b->ub_pend, n);
	b->ub_npend = 0;
	for (size_t i = 0; i < n && b->stage == SIM_UBOOT; i++)
		ub_key(b, pend[i]);
}

static void ub_run_line(struct sim_board *b, const char *line);
static int ub_exec(struct sim_board *b, const char *line, int depth);

static void ub_autoboot(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	const char *bootcmd = sim_kv_get(&b->env, "bootcmd");
	if (bootcmd && bootcmd[0])
		ub_run_line(b, bootcmd);
	else
		sim_emit_fn(b, 0, ub_prompt, 0);
}

static void ub_tick(struct sim_board *b, long left)
{
	if (left == 0) {
		/* U-Boot polls tstc() up to the last moment: a key already in the
		 * UART stops the countdown (ub_stop_autoboot prints the 0) */
		sim_board_poll_input(b);
		if (b->stage != SIM_AUTOBOOT)
			return;
	}
	char s[32];
	snprintf(s, sizeof s, "\b\b\b%2ld ", left);
	sim_out_now(b, s, strlen(s));
	b->countdown = (int)left;
	if (left > 0) {
		sim_emit_fn_floor(b, 1000, (uint32_t)b->cfg.autoboot_floor_ms, ub_tick, left - 1);
		return;
	}
	sim_out_now(b, "\n", 1);
	sim_set_stage(b, SIM_UBOOT_BUSY);
	ub_autoboot(b, 0);
}

static void ub_stop_autoboot(struct sim_board *b)
{
	sim_sched_clear(b);
	sim_out_now(b, "\b\b\b 0 \n", 7);
	ub_prompt(b, 0);
}

static void ub_start_countdown(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	int64_t delay = b->cfg.bootdelay;
	const char *bd = sim_kv_get(&b->env, "bootdelay");
	if (bd)
		lab_parse_i64(bd, &delay);
	if (delay < 0) { /* bootdelay -1: no autoboot, no countdown, straight to the prompt */
		ub_prompt(b, 0);
		return;
	}
	char s[64];
	snprintf(s, sizeof s, "Hit any key to stop autoboot: %2lld ", (long long)delay);
	sim_out_now(b, s, strlen(s));
	if (sim_board_fault_fire(b, FAULT_UBOOT_HANG)) {
		/* hung after the banner: the countdown never moves, keys go nowhere */
		sim_set_stage(b, SIM_DEAD);
		return;
	}
	sim_set_stage(b, SIM_AUTOBOOT);
	if (b->early_key) {
		/* A key typed during SPL waits in the FIFO: autoboot stops at once. */
		b->early_key = false;
		ub_stop_autoboot(b);
		return;
	}
	if (delay == 0) {
		ub_tick(b, 0);
		return;
	}
	sim_emit_fn_floor(b, 1000, (uint32_t)b->cfg.autoboot_floor_ms, ub_tick, (long)delay - 1);
}

void sim_uboot_poweron(struct sim_board *b)
{
	sim_set_stage(b, SIM_ROM);
	sim_lined_reset(&b->lined);
	sim_kv_copy(&b->env, &b->env_saved); /* RAM is gone: the saved environment is loaded */
	b->nloaded = 0;
	b->early_key = false;
	b->ub_npend = 0;
	b->ub_polling = false;
	b->lastcmd[0] = '\0';
	b->fifo.level = 0;
	b->ub_status = 0;
	if (sim_board_fault_fire(b, FAULT_NO_OUTPUT)) {
		sim_set_stage(b, SIM_DEAD);
		return;
	}
	const char *v = b->cfg.uboot_version;
	sim_emit(b, 250, "DDR Version 1.24 20191016\nIn\nddr4 2133MHz, 4GB\nOUT\n");
	sim_emitf(b, 180, "\nU-Boot SPL %s (Jul 10 2023 - 12:00:00 +0000)\n"
			  "Trying to boot from MMC1\n", v);
	sim_emit(b, 120, "NOTICE:  BL31: v2.8(release):v2.8-emmclab\n"
			 "NOTICE:  BL31: Built : 12:00:00, Jul 10 2023\n");
	char dram[32];
	sim_human_size(dram, sizeof dram, 4ULL << 30);
	sim_emitf(b, 400,
		  "\n\nU-Boot %s (Jul 10 2023 - 12:00:00 +0000)\n\n"
		  "SoC: %s\nModel: %s\nDRAM:  %s\n"
		  "Core:  302 devices, 31 uclasses, devicetree: separate\n",
		  v, b->cfg.soc, b->cfg.machine, "3.9 GiB");
	sim_emitf(b, 150, "MMC:   %s: 0\n", sim_host_node(b->cfg.host));
	sim_emit(b, 60, "Loading Environment from MMC... OK\n"
			"In:    serial\nOut:   serial\nErr:   serial\n");
	sim_emitf(b, 40, "Net:   eth0: ethernet@fe300000\n");
	sim_emit_fn(b, 30, ub_start_countdown, 0);
}

/* ---- command line ---- */

struct ub_ctx {
	struct sim_board *b;
	char status[16];
};

static const char *ub_var(void *ctx, const char *name)
{
	struct ub_ctx *c = ctx;
	if (strcmp(name, "?") == 0) {
		snprintf(c->status, sizeof c->status, "%d", c->b->ub_status);
		return c->status;
	}
	return sim_kv_get(&c->b->env, name);
}

static bool parse_addr(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 16);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool addr_loaded(struct sim_board *b, uint64_t a)
{
	for (size_t i = 0; i < b->nloaded; i++)
		if (b->loaded[i] == a)
			return true;
	return false;
}

static void mark_loaded(struct sim_board *b, uint64_t a, uint64_t size)
{
	char v[32];
	if (!addr_loaded(b, a)) {
		if (b->nloaded < LAB_ARRAY_SIZE(b->loaded))
			b->loaded[b->nloaded++] = a;
	}
	snprintf(v, sizeof v, "%" PRIx64, size);
	sim_kv_set(&b->env, "filesize", v);
	snprintf(v, sizeof v, "%" PRIx64, a);
	sim_kv_set(&b->env, "fileaddr", v);
}

static uint64_t default_file_size(const char *name)
{
	if (strstr(name, "Image") || strstr(name, "vmlinuz") || strstr(name, "zImage"))
		return 21498368;
	if (strstr(name, ".dtb"))
		return 62513;
	if (strstr(name, "initrd") || strstr(name, "rd") || strstr(name, ".cpio"))
		return 9437544;
	return 1048576;
}

/* Is the file on the TFTP server, and how big? */
static bool tftp_lookup(struct sim_board *b, const char *name, uint64_t *size)
{
	if (b->cfg.tftp_root && b->cfg.tftp_root[0]) {
		char *p = xasprintf("%s/%s", b->cfg.tftp_root, name);
		struct stat st;
		bool okf = stat(p, &st) == 0 && S_ISREG(st.st_mode);
		free(p);
		if (!okf)
			return false;
		*size = (uint64_t)st.st_size;
		return true;
	}
	if (b->cfg.tftp_files.n) {
		for (size_t i = 0; i < b->cfg.tftp_files.n; i++)
			if (strcmp(b->cfg.tftp_files.v[i], name) == 0) {
				*size = default_file_size(name);
				return true;
			}
		return false;
	}
	*size = default_file_size(name);
	return true;
}

static int cmd_tftp(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	uint64_t addr = 0;
	const char *file = NULL;
	if (argc >= 3) {
		if (!parse_addr(argv[1], &addr)) {
			sim_emit(b, 0, "Usage:\ntftpboot [loadAddress] [[hostIPaddr:]bootfilename]\n");
			return 1;
		}
		file = argv[2];
	} else if (argc == 2) {
		parse_addr(sim_kv_get(&b->env, "loadaddr"), &addr);
		file = argv[1];
	} else {
		parse_addr(sim_kv_get(&b->env, "loadaddr"), &addr);
		file = sim_kv_get(&b->env, "bootfile");
		if (!file) {
			sim_emit(b, 0, "*** Warning: no boot file name; using 'C0A8002A.img'\n");
			file = "C0A8002A.img";
		}
	}
	const char *sip = sim_kv_get(&b->env, "serverip");
	const char *ip = sim_kv_get(&b->env, "ipaddr");
	if (!ip) {
		sim_emit(b, 10, "*** ERROR: `ipaddr' not set\n");
		return 1;
	}
	if (!sip) {
		sim_emit(b, 10, "*** ERROR: `serverip' not set\n");
		return 1;
	}
	sim_emitf(b, 5, "Using ethernet@fe300000 device\nTFTP from server %s; our IP address is %s\n"
			"Filename '%s'.\nLoad address: 0x%" PRIx64 "\nLoading: ",
		  sip, ip, file, addr);
	uint64_t size;
	if (!tftp_lookup(b, file, &size)) {
		sim_emit(b, 20, "*\nTFTP error: 'File not found' (1)\nNot retrying...\n");
		return 1;
	}
	/* One '#' per 10 blocks of 1468 bytes, 65 per line, at ~11 MiB/s. */
	const double bw = 11.0 * 1048576.0;
	uint64_t blocks = (size + 1467) / 1468;
	uint64_t hashes = (blocks + 9) / 10;
	if (hashes == 0)
		hashes = 1;
	double per_hash_ms = (double)size / bw * 1000.0 / (double)hashes;
	for (uint64_t h = 0; h < hashes;) {
		uint64_t n = hashes - h < 65 ? hashes - h : 65;
		char line[80];
		memset(line, '#', n);
		line[n] = '\0';
		h += n;
		sim_emitf(b, per_hash_ms * (double)n, "%s%s", line, h < hashes ? "\n\t " : "\n");
	}
	sim_emitf(b, 1, "\t %.1f MiB/s\ndone\nBytes transferred = %" PRIu64 " (%" PRIx64 " hex)\n",
		  bw / 1048576.0 * (0.95 + 0.1 * rand_uniform(&b->rng_model)), size, size);
	mark_loaded(b, addr, size);
	return 0;
}

static int cmd_load(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	/* load mmc 0:1 ADDR FILE (ext4load/fatload alike) */
	if (argc < 5) {
		sim_emitf(b, 0, "Usage:\n%s <interface> [<dev[:part]> [<addr> [<filename> [bytes [pos]]]]]\n",
			  argv[0]);
		return 1;
	}
	uint64_t addr;
	if (strcmp(argv[1], "mmc") != 0 || !parse_addr(argv[3], &addr)) {
		sim_emitf(b, 0, "Can't get partition %s %s\n", argv[1], argv[2]);
		return 1;
	}
	if (!argv[4][0]) {
		sim_emitf(b, 5, "** File not found %s **\n", argv[4]);
		return 1;
	}
	uint64_t size = default_file_size(argv[4]);
	double ms = (double)size / (60.0 * 1048576.0) * 1000.0 + 3;
	sim_emitf(b, ms, "%" PRIu64 " bytes read in %.0f ms (%.1f MiB/s)\n", size, ms,
		  (double)size / 1048576.0 / (ms / 1000.0));
	mark_loaded(b, addr, size);
	return 0;
}

static void ub_start_kernel(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	const char *ba = sim_kv_get(&b->env, "bootargs");
	sim_linux_boot(b, ba ? ba : "");
}

/* returns 0 ok, 1 failed, 2 kernel started (stop the line) */
static int cmd_boot_image(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	uint64_t kaddr = 0;
	const char *ka = argc > 1 ? argv[1] : sim_kv_get(&b->env, "loadaddr");
	if (!parse_addr(ka, &kaddr) || !addr_loaded(b, kaddr)) {
		if (strcmp(argv[0], "bootz") == 0)
			sim_emit(b, 2, "Bad Linux ARM zImage magic!\n");
		else if (strcmp(argv[0], "bootm") == 0)
			sim_emitf(b, 2, "## Booting kernel from Legacy Image at %s ...\n"
					"Wrong Image Format for bootm command\n"
					"ERROR: can't get kernel image!\n", ka ? ka : "");
		else
			sim_emit(b, 2, "Bad Linux ARM64 Image magic!\n");
		return 1;
	}
	uint64_t fdt = 0;
	if (argc > 3 && parse_addr(argv[3], &fdt)) {
		if (!addr_loaded(b, fdt)) {
			sim_emitf(b, 2, "ERROR: Did not find a cmdline Flattened Device Tree\n"
					"Could not find a valid device tree\n");
			return 1;
		}
		sim_emitf(b, 5, "## Flattened Device Tree blob at %08" PRIx64 "\n"
				"   Booting using the fdt blob at 0x%" PRIx64 "\n"
				"Working FDT set to %" PRIx64 "\n", fdt, fdt, fdt);
	}
	if (argc > 2 && strcmp(argv[2], "-") != 0) {
		uint64_t rd = 0;
		char rds[64];
		snprintf(rds, sizeof rds, "%s", argv[2]);
		char *colon = strchr(rds, ':');
		if (colon)
			*colon = '\0';
		if (!parse_addr(rds, &rd) || !addr_loaded(b, rd)) {
			sim_emit(b, 2, "Wrong Ramdisk Image Format\nRamdisk image is corrupt or invalid\n");
			return 1;
		}
		sim_emit(b, 40, "   Loading Ramdisk to f4d6b000, end f55a0a00 ... OK\n");
	}
	if (fdt)
		sim_emit(b, 10, "   Loading Device Tree to 00000000f4d5a000, end 00000000f4d6aa82 ... OK\n"
				"Working FDT set to f4d5a000\n");
	sim_emit(b, 20, "\nStarting kernel ...\n\n");
	sim_emit_fn(b, 50, ub_start_kernel, 0);
	return 2;
}

/* x86's zboot [addr] [size] [initrd addr] [initrd size], with the texts of the
 * real qemu-x86 U-Boot 2023.01 (vectors/uboot-2023.01-hush.txt, uboot_real.sh). */
static int cmd_zboot(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	uint64_t kaddr = 0;
	const char *ka = argc > 1 ? argv[1] : sim_kv_get(&b->env, "loadaddr");
	if (!parse_addr(ka, &kaddr) || !addr_loaded(b, kaddr)) {
		sim_emit(b, 2, "Error: Invalid Boot Flag (found 0x0000, expected 0xaa55)\n"
			       "## Kernel loading failed ...\n");
		return 1;
	}
	sim_emit(b, 5, "Valid Boot Flag\nMagic signature found\n"
		       "Linux kernel version 6.1.0-emmclab (sim)\nBuilding boot_params at 0x00090000\n"
		       "Loading bzImage at address 100000 (8225280 bytes)\n");
	uint64_t rd = 0, sz = 0;
	if (argc > 4 && parse_addr(argv[3], &rd) && parse_addr(argv[4], &sz))
		sim_emitf(b, 2, "Initial RAM disk at linear address 0x%08" PRIx64 ", size %" PRIu64 " bytes\n",
			  rd, sz);
	const char *ba = sim_kv_get(&b->env, "bootargs");
	sim_emitf(b, 2, "Kernel command line: \"%s\"\nKernel loaded at 00100000, setup_base=00090000\n"
			"\nStarting kernel ...\n\n", ba ? ba : "");
	sim_emit_fn(b, 50, ub_start_kernel, 0);
	return 2;
}

static int cmd_mmc(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	const struct sim_part *p = b->part;
	char cap[32];
	sim_human_size(cap, sizeof cap, p->capacity_bytes);
	const char *sub = argc > 1 ? argv[1] : "";
	if (strcmp(sub, "list") == 0) {
		sim_emitf(b, 1, "%s: 0 (eMMC)\n", sim_host_node(b->cfg.host));
	} else if (strcmp(sub, "info") == 0) {
		unsigned ver = p->ext_csd_rev >= 8 ? 51 : p->ext_csd_rev == 7 ? 50 : 45;
		sim_emitf(b, 2,
			  "Device: %s\nManufacturer ID: %x\nOEM: %x\nName: %s \n"
			  "Bus Speed: 200000000\nMode: %s (200MHz)\nRd Block Len: 512\n"
			  "MMC version %u.%u\nHigh Capacity: Yes\nCapacity: %s\nBus Width: 8-bit\n"
			  "Erase Group Size: 512 KiB\nHC WP Group Size: 8 MiB\nUser Capacity: %s WRREL\n"
			  "Boot Capacity: 4 MiB ENH\nRPMB Capacity: 4 MiB ENH\n"
			  "Boot area 0 is not write protected\nBoot area 1 is not write protected\n",
			  sim_host_node(b->cfg.host), p->manfid, p->oemid, p->name, p->bus_mode, ver / 10,
			  ver % 10, cap, cap);
	} else if (strcmp(sub, "dev") == 0) {
		if (argc > 2 && strcmp(argv[2], "0") != 0) {
			sim_emitf(b, 1, "Can't set block device\n");
			return 1;
		}
		sim_emit(b, 2, "switch to partitions #0, OK\nmmc0(part 0) is current device\n");
	} else if (strcmp(sub, "part") == 0) {
		uint64_t sectors = p->capacity_bytes / 512;
		sim_emitf(b, 3,
			  "\nPartition Map for MMC device 0  --   Partition Type: DOS\n\n"
			  "Part\tStart Sector\tNum Sectors\tUUID\t\tType\n"
			  "  1\t32768     \t524288    \t5e3da3da-01\t0c Boot\n"
			  "  2\t557056    \t%-10" PRIu64 "\t5e3da3da-02\t83\n",
			  sectors - 557056);
	} else if (strcmp(sub, "rescan") == 0) {
		return 0;
	} else {
		sim_emit(b, 0, "Usage:\nmmc info - display info of the current MMC device\n"
			       "mmc list - lists available devices\nmmc dev [dev] [part] - show or set current mmc device\n"
			       "mmc part - lists available partition on current mmc device\n");
		return 1;
	}
	return 0;
}

static int cmd_printenv(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	if (argc > 1) {
		int rc = 0;
		for (int i = 1; i < argc; i++) {
			const char *v = sim_kv_get(&b->env, argv[i]);
			if (v)
				sim_emitf(b, 0, "%s=%s\n", argv[i], v);
			else {
				sim_emitf(b, 0, "## Error: \"%s\" not defined\n", argv[i]);
				rc = 1;
			}
		}
		return rc;
	}
	struct lab_buf o;
	lab_buf_init(&o, 256 * 1024);
	size_t size = 0;
	for (size_t i = 0; i < b->env.n; i++) {
		lab_buf_printf(&o, "%s=%s\n", b->env.k[i], b->env.v[i]);
		size += strlen(b->env.k[i]) + strlen(b->env.v[i]) + 2;
	}
	lab_buf_printf(&o, "\nEnvironment size: %zu/65532 bytes\n", size + 1);
	sim_emit(b, 1, lab_buf_cstr(&o));
	lab_buf_free(&o);
	return 0;
}

static int cmd_setenv(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	if (argc < 2) {
		sim_emit(b, 0, "Usage:\nsetenv name value ...\n    - set environment variable 'name' to 'value ...'\n"
			       "setenv name\n    - delete environment variable 'name'\n");
		return 1;
	}
	if (argc == 2) {
		sim_kv_set(&b->env, argv[1], NULL);
		return 0;
	}
	struct lab_buf v;
	lab_buf_init(&v, 65536);
	for (int i = 2; i < argc; i++)
		lab_buf_printf(&v, "%s%s", i > 2 ? " " : "", argv[i]);
	sim_kv_set(&b->env, argv[1], lab_buf_cstr(&v));
	lab_buf_free(&v);
	return 0;
}

static int cmd_saveenv(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	sim_kv_copy(&b->env_saved, &b->env);
	sim_emit(b, 80, "Saving Environment to MMC... Writing to MMC(0)... OK\n");
	return 0;
}

static int cmd_env_default(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	sim_uboot_default_env(b, &b->env);
	sim_emit(b, 1, "## Resetting to default environment\n");
	return 0;
}

static int cmd_dhcp(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	char ip[32];
	snprintf(ip, sizeof ip, "192.168.0.%d", 40 + board_index(b) % 200);
	sim_emit(b, 1500, "ethernet@fe300000 Waiting for PHY auto negotiation to complete. done\n"
			  "Speed: 1000, full duplex\n");
	sim_emit(b, 10, "BOOTP broadcast 1\n");
	sim_emit(b, 1000, "BOOTP broadcast 2\n");
	sim_emitf(b, 4, "DHCP client bound to address %s (1004 ms)\n", ip);
	sim_kv_set(&b->env, "ipaddr", ip);
	sim_kv_set(&b->env, "netmask", "255.255.255.0");
	sim_kv_set(&b->env, "gatewayip", "192.168.0.1");
	if (!sim_kv_get(&b->env, "serverip"))
		sim_kv_set(&b->env, "serverip", "192.168.0.1");
	const char *al = sim_kv_get(&b->env, "autoload");
	const char *bf = sim_kv_get(&b->env, "bootfile");
	if (bf && (!al || (strcmp(al, "no") != 0 && strcmp(al, "n") != 0))) {
		char *targv[] = {(char *)"tftpboot", NULL};
		return cmd_tftp(b, 1, targv, depth);
	}
	return 0;
}

static void ub_enter_stage(struct sim_board *b, long stage)
{
	sim_set_stage(b, (enum sim_stage)stage);
}

static void ub_reset(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_sched_clear(b);
	b->boots++;
	sim_uboot_poweron(b);
}

static int cmd_echo(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	struct lab_buf o;
	lab_buf_init(&o, 65536);
	int i = 1;
	bool nl = true;
	if (argc > 1 && strcmp(argv[1], "-n") == 0) {
		nl = false;
		i = 2;
	}
	for (int k = i; k < argc; k++)
		lab_buf_printf(&o, "%s%s", k > i ? " " : "", argv[k]);
	if (nl)
		lab_buf_append(&o, "\n", 1);
	sim_emit(b, 0, lab_buf_cstr(&o));
	lab_buf_free(&o);
	return 0;
}

static int cmd_env(struct sim_board *b, int argc, char **argv, int depth)
{
	const char *sub = argc > 1 ? argv[1] : "";
	if (strcmp(sub, "default") == 0)
		return cmd_env_default(b, argc - 1, argv + 1, depth);
	if (strcmp(sub, "print") == 0)
		return cmd_printenv(b, argc - 1, argv + 1, depth);
	if (strcmp(sub, "set") == 0)
		return cmd_setenv(b, argc - 1, argv + 1, depth);
	if (strcmp(sub, "save") == 0)
		return cmd_saveenv(b, argc - 1, argv + 1, depth);
	sim_emit(b, 0, "Usage:\nenv default [-f] -a - [forcibly] reset default environment\n"
		       "env print [-a | name ...] - print environment\nenv save - save environment\n"
		       "env set [-f] name [arg ...]\n");
	return 1;
}

/* boot: run bootcmd; run VAR...: run each variable's commands */
static int cmd_run(struct sim_board *b, int argc, char **argv, int depth)
{
	if (depth > 16) {
		sim_emit(b, 0, "## Error: too many levels of run\n");
		return 1;
	}
	int start = strcmp(argv[0], "boot") == 0 ? 0 : 1;
	if (start == 1 && argc < 2) {
		sim_emit(b, 0, "Usage:\nrun var [...]\n    - run the commands in the environment variable(s) 'var'\n");
		return 1;
	}
	int n = start == 0 ? 1 : argc - 1;
	for (int i = 0; i < n; i++) {
		const char *var = start == 0 ? "bootcmd" : argv[1 + i];
		const char *v = sim_kv_get(&b->env, var);
		if (!v) {
			sim_emitf(b, 0, "## Error: \"%s\" not defined\n", var);
			return 1;
		}
		char *copy = xstrdup(v);
		int rc = ub_exec(b, copy, depth + 1);
		free(copy);
		if (rc)
			return rc;
	}
	return 0;
}

static int cmd_ums(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	if (argc < 3) {
		sim_emit(b, 0, "Usage:\nums <USB_controller> [<devtype>] <dev[:part]>  e.g. ums 0 mmc 0\n");
		return 1;
	}
	sim_emitf(b, 30, "UMS: LUN 0, dev mmc 0, hwpart 0, sector 0x0, count 0x%" PRIx64 "\n",
		  b->part->capacity_bytes / 512);
	sim_emit(b, 5, "\\");
	sim_emit_fn(b, 0, ub_enter_stage, SIM_UMS);
	return 2;
}

static int cmd_fastboot(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	if (argc < 2) {
		sim_emit(b, 0, "Usage:\nfastboot [-l addr] [-s size] usb <controller> | udp\n");
		return 1;
	}
	sim_emit_fn(b, 30, ub_enter_stage, SIM_FASTBOOT);
	return 2;
}

static int cmd_version(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	sim_emitf(b, 1, "\nU-Boot %s (Jul 10 2023 - 12:00:00 +0000)\n\n"
			"aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0\n"
			"GNU ld (GNU Binutils for Debian) 2.40\n", b->cfg.uboot_version);
	return 0;
}

static int cmd_reset(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	sim_emit(b, 1, "resetting ...\n");
	sim_emit_fn(b, 100, ub_reset, 0);
	return 2;
}

static int cmd_sleep(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(depth);
	double s = 0;
	if (argc < 2 || lab_parse_double(argv[1], &s) != 0 || s < 0) {
		sim_emit(b, 0, "Usage:\nsleep N\n    - delay execution for N seconds (N is _decimal_ and can be\n      fractional)\n");
		return 1;
	}
	sim_emit(b, s * 1000, "");
	return 0;
}

static int cmd_true(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	return 0;
}

static int cmd_false(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	return 1;
}

static int cmd_help(struct sim_board *b, int argc, char **argv, int depth);

/* A command that polls ctrlc() while it runs: what is typed meanwhile is consumed. */
#define UB_POLLS 1u

/* The U-Boot commands, in the order `help` lists them: one handler each,
 * returning 0 ok, 1 failure, 2 the line must stop. */
struct ub_cmd {
	const char *name;
	int (*run)(struct sim_board *b, int argc, char **argv, int depth);
	unsigned flags;
};

static const struct ub_cmd ub_commands[] = {
	{"?", cmd_help, 0},
	{"boot", cmd_run, 0},
	{"booti", cmd_boot_image, UB_POLLS},
	{"bootm", cmd_boot_image, UB_POLLS},
	{"bootz", cmd_boot_image, UB_POLLS},
	{"dhcp", cmd_dhcp, UB_POLLS},
	{"echo", cmd_echo, 0},
	{"env", cmd_env, 0},
	{"ext4load", cmd_load, UB_POLLS},
	{"false", cmd_false, 0},
	{"fastboot", cmd_fastboot, UB_POLLS},
	{"fatload", cmd_load, UB_POLLS},
	{"help", cmd_help, 0},
	{"load", cmd_load, UB_POLLS},
	{"mmc", cmd_mmc, 0},
	{"printenv", cmd_printenv, 0},
	{"reset", cmd_reset, 0},
	{"run", cmd_run, 0},
	{"saveenv", cmd_saveenv, 0},
	{"setenv", cmd_setenv, 0},
	{"sleep", cmd_sleep, UB_POLLS},
	{"tftp", cmd_tftp, UB_POLLS},
	{"tftpboot", cmd_tftp, UB_POLLS},
	{"true", cmd_true, 0},
	{"ums", cmd_ums, UB_POLLS},
	{"version", cmd_version, 0},
	{"zboot", cmd_zboot, UB_POLLS},
};

static int cmd_help(struct sim_board *b, int argc, char **argv, int depth)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(depth);
	struct lab_buf o;
	lab_buf_init(&o, 65536);
	for (size_t i = 0; i < LAB_ARRAY_SIZE(ub_commands); i++)
		lab_buf_printf(&o, "%-10s- %s\n", ub_commands[i].name, "command");
	sim_emit(b, 1, lab_buf_cstr(&o));
	lab_buf_free(&o);
	return 0;
}

/* Run one simple command; returns 0 ok, 1 failure, 2 the line must stop. */
static int ub_command(struct sim_board *b, int argc, char **argv, int depth)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(ub_commands); i++) {
		const struct ub_cmd *c = &ub_commands[i];
		if (strcmp(argv[0], c->name) != 0)
			continue;
		if (c->flags & UB_POLLS)
			b->ub_polling = true; /* ctrlc() consumes what is typed meanwhile */
		return c->run(b, argc, argv, depth);
	}
	sim_emitf(b, 0, "Unknown command '%s' - try 'help'\n", argv[0]);
	return 1;
}

/* if/then/elif/else/fi, nested: whether the enclosing code runs (outer),
 * whether a branch was taken, whether the part being read now runs. */
struct ub_if {
	bool outer, taken, active;
};

static bool ub_keyword(const char *w)
{
	return !strcmp(w, "if") || !strcmp(w, "then") || !strcmp(w, "elif") || !strcmp(w, "else") ||
	       !strcmp(w, "fi");
}

/* Execute a command line as U-Boot 2023.01's hush does (observed on the real
 * one: harness/tests/vectors/uboot-2023.01-hush.txt).  Where hush is not
 * POSIX: a failing `&&` (or a succeeding `||`) skips the rest of the and-or
 * list up to the next `;`, so `false && a || b` runs neither a nor b and
 * `true || a && b` does not run b.  $? is the last command's status (a skipped
 * one leaves it).  Returns 0/1 status, 2 when the line handed the board to
 * something else (kernel, ums, reset). */
static int ub_exec(struct sim_board *b, const char *line, int depth)
{
	struct sim_seg segs[64];
	size_t n = sim_split_list(line, segs, LAB_ARRAY_SIZE(segs));
	int rc = 0;
	bool skipping = false;
	struct ub_if ifs[8];
	size_t nif = 0;
	for (size_t i = 0; i < n; i++) {
		int op = segs[i].op;
		if (skipping && (op == SIM_OP_AND || op == SIM_OP_OR))
			continue;
		skipping = false;
		bool here = nif == 0 || ifs[nif - 1].active;
		if (here && ((op == SIM_OP_AND && b->ub_status != 0) ||
			     (op == SIM_OP_OR && b->ub_status == 0))) {
			skipping = true;
			continue;
		}
		struct ub_ctx ctx = {.b = b};
		struct sim_tok toks[128];
		size_t nt = sim_tokenize(segs[i].text, ub_var, &ctx, toks, LAB_ARRAY_SIZE(toks));
		char *words[129];
		int nw = 0;
		for (size_t k = 0; k < nt; k++)
			if (toks[k].type == TOK_WORD)
				words[nw++] = toks[k].s;
		char **argv = words;
		int argc = nw;
		/* leading keywords ("if false", "then echo T", "else", "fi") */
		while (argc > 0 && ub_keyword(argv[0])) {
			const char *kw = argv[0];
			struct ub_if *t = nif ? &ifs[nif - 1] : NULL;
			if (!strcmp(kw, "if")) {
				if (nif < LAB_ARRAY_SIZE(ifs)) {
					bool outer = nif == 0 || ifs[nif - 1].active;
					ifs[nif++] = (struct ub_if){.outer = outer, .active = outer};
				}
			} else if (!t) {
				sim_emit(b, 0, "syntax error\n");
				b->ub_status = 1;
				argc = 0;
				break;
			} else if (!strcmp(kw, "then")) {
				bool run = t->active && b->ub_status == 0; /* the condition just run */
				t->taken = t->taken || run;
				t->active = run;
			} else if (!strcmp(kw, "elif") || !strcmp(kw, "else")) {
				t->active = t->outer && !t->taken;
			} else { /* fi */
				nif--;
			}
			argv++;
			argc--;
		}
		int r = -1;
		if (argc > 0 && (nif == 0 || ifs[nif - 1].active)) {
			/* hush: name=value assigns a (local) variable; we keep it in env */
			char *eq = strchr(argv[0], '=');
			if (argc == 1 && eq && eq != argv[0]) {
				*eq = '\0';
				sim_kv_set(&b->env, argv[0], eq + 1);
				r = 0;
			} else {
				argv[argc] = NULL;
				r = ub_command(b, argc, argv, depth);
			}
		}
		sim_toks_free(toks, nt);
		if (r == 2) {
			rc = 2;
			break;
		}
		if (r >= 0)
			b->ub_status = r;
	}
	sim_segs_free(segs, n);
	return rc == 2 ? 2 : b->ub_status;
}

static void ub_run_line(struct sim_board *b, const char *line)
{
	sim_set_stage(b, SIM_UBOOT_BUSY);
	int rc = ub_exec(b, line, 0);
	if (rc != 2)
		sim_emit_fn(b, 0, ub_prompt, 0);
}

static void ub_dispatch(struct sim_board *b, unsigned char c);

/* The prompt's characters are read when the modelled CPU has emptied the
 * FIFO up to them: echoed, edited and run then, not on arrival, so an echo
 * says the FIFO has room again as on a real board (a controller that types
 * the next characters on the echo must not overflow it). */
void sim_uboot_rxq_fire(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct sim_board *b = arg;
	unsigned char q[sizeof b->ub_rxq];
	size_t n = b->ub_nrxq;
	memcpy(q, b->ub_rxq, n);
	b->ub_nrxq = 0;
	for (size_t i = 0; i < n && b->running; i++)
		ub_dispatch(b, q[i]);
}

void sim_uboot_input(struct sim_board *b, unsigned char c)
{
	/* Every U-Boot stage reads through the UART FIFO (on_master, the only
	 * caller, sets the batch's arrival and read times first). */
	if (!sim_fifo_push_by(&b->fifo, b->rx_ns, b->last_rx_ns))
		return;
	if (b->stage == SIM_UBOOT || b->ub_nrxq) {
		if (b->ub_nrxq == sizeof b->ub_rxq)
			sim_uboot_rxq_fire(b->loop, &b->rxq_timer, b);
		b->ub_rxq[b->ub_nrxq++] = c;
		/* read once the FIFO has drained down to it */
		b->ub_rxq_read_ns = b->fifo.last_ns + (uint64_t)(b->fifo.level * 1e9 / b->fifo.cps);
		return;
	}
	ub_dispatch(b, c);
}

void sim_uboot_rxq_arm(struct sim_board *b)
{
	if (!b->ub_nrxq)
		return;
	uint64_t now = lab_now_ns();
	loop_timer_start_ns(b->loop, &b->rxq_timer,
			    b->ub_rxq_read_ns > now ? b->ub_rxq_read_ns - now : 0);
}

static void ub_dispatch(struct sim_board *b, unsigned char c)
{
	switch (b->stage) {
	case SIM_ROM:
		/* waits in the FIFO: the first key stops autoboot, the rest reach the CLI */
		if (!b->early_key)
			b->early_key = true;
		else if (b->ub_npend < b->fifo.depth && b->ub_npend < sizeof b->ub_pend)
			b->ub_pend[b->ub_npend++] = c;
		return;
	case SIM_AUTOBOOT:
		ub_stop_autoboot(b);
		return;
	case SIM_UBOOT:
		ub_key(b, c);
		return;
	case SIM_UBOOT_BUSY:
		if (c == 0x03) { /* ctrlc() polled by long commands */
			sim_sched_clear(b);
			b->ub_npend = 0;
			sim_out_now(b, "\nAbort\n", 7);
			b->ub_status = 1;
			ub_prompt(b, 0);
		} else if (!b->ub_polling && b->ub_npend < b->fifo.depth &&
			   b->ub_npend < sizeof b->ub_pend) {
			b->ub_pend[b->ub_npend++] = c;
		}
		return;
	case SIM_UMS:
		if (c == 0x03) {
			sim_out_now(b, "\rCTRL+C - Operation aborted.\n", 29);
			ub_prompt(b, 0);
		}
		return;
	case SIM_FASTBOOT:
		if (c == 0x03)
			ub_prompt(b, 0);
		return;
	default:
		return;
	}
}

static void ub_key(struct sim_board *b, unsigned char c)
{
	{
		/* one buffer for every key's echo (the simulator is one thread): a
		 * buffer of its own each was a quarter of the simulator's mallocs */
		static struct lab_buf echo = {.max = 4096};
		echo.len = 0;
		int r = sim_lined_feed(&b->lined, c, &echo);
		if (echo.len)
			sim_out_now(b, echo.data, echo.len);
		if (r == SIM_LINED_INTR) {
			sim_out_now(b, "<INTERRUPT>\n", 12);
			ub_prompt(b, 0);
		} else if (r == SIM_LINED_LINE) {
			char line[SIM_CBSIZE];
			lab_strlcpy(line, b->lined.buf, sizeof line);
			sim_lined_reset(&b->lined);
			if (!line[0]) {
				if (!b->lastcmd[0]) {
					ub_prompt(b, 0);
					return;
				}
				lab_strlcpy(line, b->lastcmd, sizeof line); /* empty line repeats */
			} else {
				lab_strlcpy(b->lastcmd, line, sizeof b->lastcmd);
			}
			ub_run_line(b, line);
		}
	}
}
