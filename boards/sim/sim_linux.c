/*
 * sim_linux.c - the Linux side of a simulated board: the kernel boot log
 * (reflecting the command line, the part, the FUA knob and CQE), login, a
 * tty line discipline, and a small busybox-like shell over an in-memory root
 * filesystem with the sysfs/procfs files docs/running.md names.
 */
#include "sim_board.h"
#include "hex.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- files ---- */

struct sim_file *sim_file_find(struct sim_board *b, const char *path)
{
	for (size_t i = 0; i < b->nfiles; i++)
		if (strcmp(b->files[i].path, path) == 0)
			return &b->files[i];
	return NULL;
}

struct sim_file *sim_file_create(struct sim_board *b, const char *path, unsigned mode)
{
	struct sim_file *f = sim_file_find(b, path);
	if (f)
		return f;
	if (b->nfiles >= SIM_MAX_FILES)
		return NULL;
	f = &b->files[b->nfiles++];
	f->path = xstrdup(path);
	lab_buf_init(&f->data, 32u << 20);
	f->mode = mode;
	return f;
}

void sim_file_remove(struct sim_board *b, const char *path)
{
	for (size_t i = 0; i < b->nfiles; i++)
		if (strcmp(b->files[i].path, path) == 0) {
			free(b->files[i].path);
			lab_buf_free(&b->files[i].data);
			b->files[i] = b->files[--b->nfiles];
			return;
		}
}

void sim_linux_init_fs(struct sim_board *b)
{
	static const char elf[] = "\x7f" "ELF\x02\x01\x01";
	struct sim_file *f = sim_file_create(b, "/bin/sh", 0755);
	if (f)
		lab_buf_append(&f->data, elf, sizeof elf - 1);
	f = sim_file_create(b, "/etc/os-release", 0644);
	if (f)
		lab_buf_printf(&f->data, "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n");
	if (b->cfg.agent_installed && b->cfg.agent_path[0] == '/') {
		f = sim_file_create(b, b->cfg.agent_path, 0755);
		if (f)
			lab_buf_append(&f->data, elf, sizeof elf - 1);
	}
}

static bool volatile_path(const char *p)
{
	return strncmp(p, "/tmp/", 5) == 0 || strncmp(p, "/run/", 5) == 0 ||
	       strncmp(p, "/dev/shm/", 9) == 0;
}

void sim_linux_poweroff(struct sim_board *b)
{
	for (size_t i = 0; i < b->nfiles;) {
		if (volatile_path(b->files[i].path)) {
			free(b->files[i].path);
			lab_buf_free(&b->files[i].data);
			b->files[i] = b->files[--b->nfiles];
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < b->npending; i++)
		free(b->pending[i]);
	b->npending = 0;
	b->line.len = 0;
	b->busy = false;
	b->knob_fua[0] = '\0';
}

static void abs_path(struct sim_board *b, const char *p, char *out, size_t n)
{
	if (p[0] == '/')
		snprintf(out, n, "%s", p);
	else if (strcmp(b->cwd, "/") == 0)
		snprintf(out, n, "/%s", p);
	else
		snprintf(out, n, "%s/%s", b->cwd, p);
}

/* ---- dynamic sysfs/procfs ---- */

static void cid_hex(const struct sim_part *p, char out[33])
{
	unsigned char c[16] = {0};
	c[0] = (unsigned char)p->manfid;
	c[1] = 0x01; /* BGA */
	c[2] = (unsigned char)(p->oemid & 0xff);
	for (int i = 0; i < 6; i++)
		c[3 + i] = (unsigned char)(p->name[i] && i < (int)strlen(p->name) ? p->name[i] : ' ');
	c[9] = (unsigned char)p->prv;
	c[10] = (unsigned char)(p->serial >> 24);
	c[11] = (unsigned char)(p->serial >> 16);
	c[12] = (unsigned char)(p->serial >> 8);
	c[13] = (unsigned char)p->serial;
	/* date is "MM/YYYY" in the part profile (compiled-in, always well-formed) */
	int mon = (int)strtol(p->date, NULL, 10), year = (int)strtol(p->date + 3, NULL, 10);
	c[14] = (unsigned char)((mon << 4) | ((year - 1997) & 0xf));
	/* CRC7 over bytes 0..14 */
	unsigned crc = 0;
	for (int i = 0; i < 15; i++)
		for (int bit = 7; bit >= 0; bit--) {
			unsigned in = (c[i] >> bit) & 1;
			unsigned top = (crc >> 6) & 1;
			crc = (crc << 1) & 0x7f;
			if (in ^ top)
				crc ^= 0x09;
		}
	c[15] = (unsigned char)((crc << 1) | 1);
	hex_encode(out, c, 16);
}

static const char *mmcdev = "/sys/block/mmcblk0/device/";

bool sim_read_path(struct sim_board *b, const char *path, struct lab_buf *o)
{
	const struct sim_part *p = b->part;
	char v[256];
	v[0] = '\0';
	const char *dev = NULL;
	size_t dl = strlen(mmcdev);
	if (strncmp(path, mmcdev, dl) == 0)
		dev = path + dl;
	if (strcmp(path, "/proc/cmdline") == 0)
		snprintf(v, sizeof v, "%.250s", b->cmdline);
	else if (strcmp(path, "/proc/version") == 0)
		snprintf(v, sizeof v, "Linux version %s (emmclab@build) (aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT",
			 b->cfg.kernel_version);
	else if (strcmp(path, "/etc/hostname") == 0 || strcmp(path, "/proc/sys/kernel/hostname") == 0)
		snprintf(v, sizeof v, "%s", b->cfg.hostname);
	else if (strcmp(path, "/sys/block/mmcblk0/queue/fua") == 0)
		snprintf(v, sizeof v, "%d", b->eff.fua);
	else if (strcmp(path, "/sys/block/mmcblk0/queue/write_cache") == 0)
		snprintf(v, sizeof v, "%s", b->eff.cache ? "write back" : "write through");
	else if (strcmp(path, "/sys/block/mmcblk0/mq/0/nr_tags") == 0)
		snprintf(v, sizeof v, "%u", b->eff.cqe ? p->cmdq_depth : 64);
	else if (strcmp(path, "/sys/block/mmcblk0/size") == 0)
		snprintf(v, sizeof v, "%llu", (unsigned long long)(p->capacity_bytes / 512));
	else if (strcmp(path, "/sys/block/mmcblk0/stat") == 0)
		snprintf(v, sizeof v, "%8d %8d %8d %8d %8ld %8d %8ld %8d %8d %8d %8d %8d %8d %8d %8d %8ld %8ld",
			 1520, 210, 95432, 812, b->flushes * 3 + 200, 40, b->flushes * 24 + 1600,
			 2210, 0, 3100, 4020, 0, 0, 0, 0, b->flushes, b->flushes * 4);
	else if (strcmp(path, "/sys/module/mmc_block/parameters/fua") == 0) {
		if (!b->cfg.kernel_patched)
			return false;
		snprintf(v, sizeof v, "%s", b->knob_fua[0] ? b->knob_fua : "auto");
	} else if (strcmp(path, "/sys/module/mmc_core/parameters/disable_cqe") == 0) {
		if (!b->cfg.kernel_patched)
			return false;
		snprintf(v, sizeof v, "%d", b->knob_cqe > 0);
	} else if (dev) {
		if (strcmp(dev, "cid") == 0)
			cid_hex(p, v);
		else if (strcmp(dev, "name") == 0)
			snprintf(v, sizeof v, "%s", p->name);
		else if (strcmp(dev, "manfid") == 0)
			snprintf(v, sizeof v, "0x%06x", p->manfid);
		else if (strcmp(dev, "oemid") == 0)
			snprintf(v, sizeof v, "0x%04x", p->oemid);
		else if (strcmp(dev, "prv") == 0)
			snprintf(v, sizeof v, "0x%x", p->prv);
		else if (strcmp(dev, "hwrev") == 0)
			snprintf(v, sizeof v, "0x%x", p->hwrev);
		else if (strcmp(dev, "fwrev") == 0)
			snprintf(v, sizeof v, "0x%x", p->fwrev);
		else if (strcmp(dev, "serial") == 0)
			snprintf(v, sizeof v, "0x%08x", p->serial);
		else if (strcmp(dev, "date") == 0)
			snprintf(v, sizeof v, "%s", p->date);
		else if (strcmp(dev, "type") == 0)
			snprintf(v, sizeof v, "MMC");
		else if (strcmp(dev, "rev") == 0)
			snprintf(v, sizeof v, "0x%x", p->ext_csd_rev);
		else if (strcmp(dev, "pre_eol_info") == 0)
			snprintf(v, sizeof v, "0x%02x", p->pre_eol);
		else if (strcmp(dev, "life_time") == 0)
			snprintf(v, sizeof v, "0x%02x 0x%02x", p->life_a, p->life_b);
		else if (strcmp(dev, "rel_sectors") == 0)
			snprintf(v, sizeof v, "0x%x", p->rel_sectors);
		else if (strcmp(dev, "cmdq_en") == 0)
			snprintf(v, sizeof v, "%d", b->eff.cqe);
		else if (strcmp(dev, "erase_size") == 0)
			snprintf(v, sizeof v, "524288");
		else
			return false;
	} else {
		struct sim_file *f = sim_file_find(b, path);
		if (!f)
			return false;
		lab_buf_append(o, f->data.data ? f->data.data : "", f->data.len);
		return true;
	}
	lab_buf_printf(o, "%s\n", v);
	return true;
}

static bool is_dir(struct sim_board *b, const char *path)
{
	static const char *const dirs[] = {
		"/", "/tmp", "/root", "/usr", "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/etc", "/sys",
		"/proc", "/dev", "/mnt", "/var", "/run", "/sys/block", "/sys/block/mmcblk0",
		"/sys/block/mmcblk0/queue", "/sys/block/mmcblk0/device", "/sys/module",
		"/sys/kernel/tracing", "/usr/local/bin", NULL,
	};
	for (int i = 0; dirs[i]; i++)
		if (strcmp(dirs[i], path) == 0)
			return true;
	size_t l = strlen(path);
	for (size_t i = 0; i < b->nfiles; i++)
		if (strncmp(b->files[i].path, path, l) == 0 && b->files[i].path[l] == '/')
			return true;
	return false;
}

/* ---- kernel ---- */

static void klog(struct sim_board *b, double dt_ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void klog(struct sim_board *b, double dt_ms, const char *fmt, ...)
{
	b->uptime_s += dt_ms / 1000.0;
	/* formatted on the stack (a boot logs about 60 lines; three allocations
	 * a line were a sixth of the simulator's), on the heap when longer */
	char msg_buf[512], line_buf[600];
	char *msg = msg_buf, *line = line_buf;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg_buf, sizeof msg_buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		msg_buf[0] = '\0';
	else if ((size_t)n >= sizeof msg_buf) {
		va_start(ap, fmt);
		msg = xvasprintf(fmt, ap);
		va_end(ap);
	}
	unsigned long sec = (unsigned long)b->uptime_s;
	unsigned long us = (unsigned long)((b->uptime_s - (double)sec) * 1e6);
	n = snprintf(line_buf, sizeof line_buf, "[%5lu.%06lu] %s\n", sec, us, msg);
	if (n < 0)
		line_buf[0] = '\0';
	else if ((size_t)n >= sizeof line_buf)
		line = xasprintf("[%5lu.%06lu] %s\n", sec, us, msg);
	lab_buf_append(&b->klog, line, strlen(line));
	sim_emit(b, dt_ms, line);
	if (line != line_buf)
		free(line);
	if (msg != msg_buf)
		free(msg);
}

static const char *cmdline_param(const char *cmdline, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	const char *p = cmdline;
	const char *found = NULL;
	while ((p = strstr(p, key))) {
		if ((p == cmdline || p[-1] == ' ') && p[kl] == '=')
			found = p + kl + 1; /* the last one wins, as in the kernel */
		p += kl;
	}
	if (!found)
		return NULL;
	size_t l = strcspn(found, " ");
	snprintf(out, n, "%.*s", (int)l, found);
	return out;
}

static bool rel_capable(const struct sim_part *p)
{
	return (p->rel_wr_param & 0x04) || p->rel_sectors > 0;
}

/* What mmc_block decides at probe (docs/kernel.md, plus our series' knobs). */
static void probe_mode(struct sim_board *b, bool stuck)
{
	const struct sim_part *p = b->part;
	bool cache_on = p->cache_kib > 0 && p->ext_csd_rev >= 6;
	bool rel = rel_capable(p);
	bool cache_enabled = cache_on || rel;
	/* sdhci-sprd sets the series' host cap: keep the cache, do not advertise FUA. */
	bool fua_auto = rel && strcmp(b->cfg.host, "sdhci-sprd") != 0;
	bool fua = fua_auto;
	if (!stuck && strcmp(b->knob_fua, "on") == 0)
		fua = rel; /* the series: on = whenever the card can do reliable writes */
	else if (!stuck && strcmp(b->knob_fua, "off") == 0)
		fua = false;
	bool disable = b->knob_cqe > 0; /* mode-stuck is about the FUA knob only */
	b->eff.cache = cache_enabled;
	b->eff.fua = fua && cache_enabled;
	b->eff.cqe = b->cfg.cqe && p->cmdq_support && !disable;
	b->dev = b->eff;
	/* fua-ignored: sysfs follows the knob, the request path does what auto does */
	if (sim_board_fault_on(b, FAULT_FUA_IGNORED))
		b->dev.fua = fua_auto && cache_enabled;
}

static void to_shell(struct sim_board *b, long arg);

static void to_login(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_set_stage(b, SIM_LOGIN);
	b->line.len = 0;
	char s[256];
	snprintf(s, sizeof s, "\nDebian GNU/Linux 12 %s ttyS2\n\n%s login: ", b->cfg.hostname,
		 b->cfg.hostname);
	sim_out_now(b, s, strlen(s));
}

static void go_dead(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_set_stage(b, SIM_DEAD);
}

void sim_linux_boot(struct sim_board *b, const char *bootargs)
{
	const struct sim_part *p = b->part;
	sim_set_stage(b, SIM_KERNEL);
	lab_strlcpy(b->cmdline, bootargs, sizeof b->cmdline);
	b->klog.len = 0;
	b->uptime_s = 0;
	b->tty_echo = true;
	b->busy = false;
	b->last_status = 0;
	sim_kv_clear(&b->vars);
	sim_kv_set(&b->vars, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	sim_kv_set(&b->vars, "HOME", "/root");
	sim_kv_set(&b->vars, "PS1", "# ");
	snprintf(b->cwd, sizeof b->cwd, "/root");

	char val[64];
	bool unknown_fua = false;
	if (b->cfg.kernel_patched) {
		snprintf(b->knob_fua, sizeof b->knob_fua, "auto");
		b->knob_cqe = 0;
		if (cmdline_param(bootargs, "mmc_block.fua", val, sizeof val)) {
			if (strcmp(val, "on") == 0 || strcmp(val, "off") == 0 || strcmp(val, "auto") == 0)
				snprintf(b->knob_fua, sizeof b->knob_fua, "%.7s", val);
			else
				unknown_fua = true;
		}
		if (cmdline_param(bootargs, "mmc_core.disable_cqe", val, sizeof val))
			b->knob_cqe = strcmp(val, "1") == 0 || strcmp(val, "y") == 0 || strcmp(val, "Y") == 0;
	} else {
		snprintf(b->knob_fua, sizeof b->knob_fua, "missing");
		b->knob_cqe = -1;
	}
	bool stuck = sim_board_fault_fire(b, FAULT_MODE_STUCK);
	probe_mode(b, stuck);
	b->cqe_line = b->eff.cqe;

	klog(b, 0, "Booting Linux on physical CPU 0x0000000000 [0x410fd034]");
	klog(b, 0, "Linux version %s (emmclab@build) (aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0, "
		   "GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT Mon Jul 10 12:00:00 UTC 2023",
	     b->cfg.kernel_version);
	klog(b, 0, "Machine model: %s", b->cfg.machine);
	klog(b, 1, "earlycon: uart8250 at MMIO32 0x00000000ff1a0000 (options '1500000n8')");
	klog(b, 1, "Zone ranges:");
	klog(b, 0, "  DMA      [mem 0x0000000000200000-0x00000000f7ffffff]");
	klog(b, 2, "Kernel command line: %s", bootargs);
	if (unknown_fua)
		klog(b, 0, "mmc_block: invalid value for fua, using auto");
	if (!b->cfg.kernel_patched) {
		if (strstr(bootargs, "mmc_block.fua="))
			klog(b, 0, "mmc_block: unknown parameter 'fua' ignored");
		if (strstr(bootargs, "mmc_core.disable_cqe="))
			klog(b, 0, "mmc_core: unknown parameter 'disable_cqe' ignored");
	}
	klog(b, 3, "Memory: 3969864K/4061184K available (16192K kernel code, 4306K rwdata, 10852K rodata, 7040K init, 599K bss, 91320K reserved)");
	klog(b, 20, "rcu: Hierarchical RCU implementation.");
	klog(b, 180, "Serial: 8250/16550 driver, 5 ports, IRQ sharing disabled");
	klog(b, 2, "printk: console [ttyS2] enabled");
	if (sim_board_fault_fire(b, FAULT_PANIC)) {
		klog(b, 600, "Waiting for root device /dev/mmcblk0p2...");
		klog(b, 800, "VFS: Cannot open root device \"mmcblk0p2\" or unknown-block(0,0): error -6");
		klog(b, 1, "Please append a correct \"root=\" boot option; here are the available partitions:");
		klog(b, 1, "Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)");
		klog(b, 1, "CPU: 0 PID: 1 Comm: swapper/0 Not tainted %s #1", b->cfg.kernel_version);
		klog(b, 1, "Hardware name: %s (DT)", b->cfg.machine);
		klog(b, 1, "Call trace:");
		klog(b, 0, " dump_backtrace+0xe4/0x140");
		klog(b, 0, " panic+0x18c/0x37c");
		klog(b, 0, " mount_block_root+0x1e4/0x214");
		klog(b, 1, "---[ end Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0) ]---");
		sim_emit_fn(b, 0, go_dead, 0);
		return;
	}
	const char *ldev = sim_host_linux(b->cfg.host);
	double boot_ms = (double)b->cfg.boot_ms;
	if (strncmp(b->cfg.host, "sdhci", 5) == 0)
		klog(b, boot_ms * 0.15, "mmc0: SDHCI controller on %s [%s] using ADMA 64-bit", ldev, ldev);
	else
		klog(b, boot_ms * 0.15, "%s %s: mmc host probed", b->cfg.host, ldev);
	if (b->eff.cqe)
		klog(b, 30, "mmc0: Command Queue Engine enabled");
	else if (b->cfg.cqe && p->cmdq_support && b->knob_cqe > 0)
		klog(b, 30, "mmc0: Command Queue Engine disabled (mmc_core.disable_cqe=1)");
	else if (strcmp(b->cfg.host, "sdhci-sprd") == 0)
		klog(b, 30, "mmc0: Host Software Queue enabled");
	klog(b, 10, "mmc0: new %s MMC card at address 0001", p->bus_mode);
	char cap[32];
	sim_human_size(cap, sizeof cap, p->capacity_bytes);
	klog(b, 5, "mmcblk0: mmc0:0001 %s %s", p->name, cap);
	klog(b, 1, "mmcblk0boot0: mmc0:0001 %s 4.00 MiB", p->name);
	klog(b, 1, "mmcblk0boot1: mmc0:0001 %s 4.00 MiB", p->name);
	klog(b, 1, "mmcblk0rpmb: mmc0:0001 %s 4.00 MiB, chardev (243:0)", p->name);
	klog(b, 2, " mmcblk0: p1 p2");
	if (b->cfg.kernel_patched) {
		/* the series logs its decision once per card (patch 0004); a
		 * mode-stuck kernel behaves as `auto` and says so */
		const char *pol = stuck ? "auto" : b->knob_fua;
		if (b->eff.fua)
			klog(b, 0, "mmc_block: mmcblk0: FUA on (mmc_block.fua=%s): REQ_FUA becomes reliable write", pol);
		else if (strcmp(pol, "on") == 0)
			klog(b, 0, "mmc_block: mmcblk0: FUA unavailable (mmc_block.fua=on): no reliable write on this card or host");
		else if (!rel_capable(p))
			klog(b, 0, "mmc_block: mmcblk0: FUA off (mmc_block.fua=%s): no reliable write on this card or host", pol);
		else if (!b->eff.cache)
			klog(b, 0, "mmc_block: mmcblk0: FUA off (mmc_block.fua=%s): no write cache, writes are durable on completion", pol);
		else if (strcmp(pol, "off") == 0)
			klog(b, 0, "mmc_block: mmcblk0: FUA off (mmc_block.fua=off): REQ_FUA becomes write + flush");
		else
			klog(b, 0, "mmc_block: mmcblk0: FUA off (host no-fua): REQ_FUA becomes write + flush");
	}
	klog(b, boot_ms * 0.25, "EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Quota mode: none.");
	klog(b, 1, "VFS: Mounted root (ext4 filesystem) on device 179:2.");
	klog(b, 30, "Freeing unused kernel memory: 7040K");
	klog(b, 20, "Run /sbin/init as init process");
	if (sim_board_fault_fire(b, FAULT_NO_LOGIN)) {
		klog(b, boot_ms * 0.3, "random: crng init done");
		klog(b, 500, "systemd-journald[213]: Failed to open runtime journal: Input/output error");
		sim_emit_fn(b, 0, go_dead, 0);
		return;
	}
	klog(b, boot_ms * 0.3, "random: crng init done");
	if (b->cfg.login)
		sim_emit_fn(b, boot_ms * 0.3, to_login, 0);
	else
		sim_emit_fn(b, boot_ms * 0.3, to_shell, 0);
}

/* ---- shell ---- */

static void print_prompt(struct sim_board *b)
{
	const char *ps1 = sim_kv_get(&b->vars, "PS1");
	struct lab_buf o;
	lab_buf_init(&o, 4096);
	for (const char *p = ps1 ? ps1 : "# "; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			if (*p == 'u')
				lab_buf_printf(&o, "root");
			else if (*p == 'h')
				lab_buf_printf(&o, "%s", b->cfg.hostname);
			else if (*p == 'w')
				lab_buf_printf(&o, "%s", strcmp(b->cwd, "/root") == 0 ? "~" : b->cwd);
			else if (*p == '$')
				lab_buf_printf(&o, "#");
			else
				lab_buf_append(&o, p, 1);
		} else {
			lab_buf_append(&o, p, 1);
		}
	}
	sim_out_now(b, o.data ? o.data : "", o.len);
	lab_buf_free(&o);
}

static void shell_exec(struct sim_board *b, const char *line);

static void shell_idle(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	if (b->stage != SIM_SHELL)
		return;
	b->busy = false;
	print_prompt(b);
	if (b->npending) {
		char *next = b->pending[0];
		memmove(b->pending, b->pending + 1, (b->npending - 1) * sizeof *b->pending);
		b->npending--;
		shell_exec(b, next);
		free(next);
	}
}

static void to_shell(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_set_stage(b, SIM_SHELL);
	b->line.len = 0;
	b->busy = false;
	shell_idle(b, 0);
}

struct sh_ctx {
	struct sim_board *b;
	char st[16];
};

static const char *sh_var(void *ctx, const char *name)
{
	struct sh_ctx *c = ctx;
	if (strcmp(name, "?") == 0) {
		snprintf(c->st, sizeof c->st, "%d", c->b->last_status);
		return c->st;
	}
	if (strcmp(name, "$") == 0)
		return "412";
	return sim_kv_get(&c->b->vars, name);
}

/* Output of one command. */
struct sh_io {
	const char *in;
	size_t inlen;
	struct lab_buf *out, *err;
	double t_ms;       /* modelled time it took */
	bool to_console;   /* stdout is the console (agent prints with timing) */
	bool stop;         /* the board went away (poweroff/reboot): stop the line */
};

static void errf(struct sh_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void errf(struct sh_io *io, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	lab_buf_append(io->err, s, strlen(s));
	free(s);
}

static bool find_exec(struct sim_board *b, const char *name, char *path, size_t n)
{
	if (strchr(name, '/')) {
		abs_path(b, name, path, n);
		return sim_file_find(b, path) != NULL;
	}
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(dirs); i++) {
		snprintf(path, n, "%s/%s", dirs[i], name);
		struct sim_file *f = sim_file_find(b, path);
		if (f && (f->mode & 0111))
			return true;
	}
	return false;
}

static void reboot_board(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	sim_sched_clear(b);
	sim_agent_poweroff(b);
	sim_linux_poweroff(b);
	b->boots++;
	sim_uboot_poweron(b);
}

static void base64_encode(const unsigned char *d, size_t n, struct lab_buf *o)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t col = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)d[i + 1] << 8;
		if (i + 2 < n)
			v |= d[i + 2];
		char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63], i + 1 < n ? tbl[(v >> 6) & 63] : '=',
			     i + 2 < n ? tbl[v & 63] : '='};
		lab_buf_append(o, q, 4);
		col += 4;
		if (col >= 76) {
			lab_buf_append(o, "\n", 1);
			col = 0;
		}
	}
	if (col)
		lab_buf_append(o, "\n", 1);
}

/* Read input files (or stdin) for filters. Returns false after an error. */
static bool read_inputs(struct sim_board *b, const char *prog, int argc, char **argv, int first,
			struct sh_io *io, struct lab_buf *data)
{
	if (first >= argc) {
		lab_buf_append(data, io->in ? io->in : "", io->inlen);
		return true;
	}
	bool okall = true;
	for (int i = first; i < argc; i++) {
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		if (is_dir(b, path)) {
			errf(io, "%s: read error: Is a directory\n", prog);
			okall = false;
		} else if (!sim_read_path(b, path, data)) {
			errf(io, "%s: can't open '%s': No such file or directory\n", prog, argv[i]);
			okall = false;
		}
	}
	return okall;
}

static int sh_grep(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	int flags = REG_NOSUB;
	bool inv = false, count = false, quiet = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++)
		for (const char *f = argv[i] + 1; *f; f++) {
			if (*f == 'i')
				flags |= REG_ICASE;
			else if (*f == 'v')
				inv = true;
			else if (*f == 'c')
				count = true;
			else if (*f == 'q')
				quiet = true;
			else if (*f == 'E')
				flags |= REG_EXTENDED;
		}
	if (i >= argc) {
		errf(io, "BusyBox v1.36.1 multi-call binary.\n\nUsage: grep [-HhnlLoqvsrRiwFE] PATTERN [FILE]...\n");
		return 2;
	}
	regex_t re;
	if (regcomp(&re, argv[i], flags) != 0) {
		errf(io, "grep: bad regex '%s'\n", argv[i]);
		return 2;
	}
	struct lab_buf data;
	lab_buf_init(&data, 64u << 20);
	bool okr = read_inputs(b, "grep", argc, argv, i + 1, io, &data);
	long n = 0;
	const char *p = data.data ? lab_buf_cstr(&data) : "";
	while (*p) {
		size_t l = strcspn(p, "\n");
		char *line = xstrndup(p, l);
		bool m = regexec(&re, line, 0, NULL, 0) == 0;
		if (m != inv) {
			n++;
			if (!count && !quiet)
				lab_buf_printf(io->out, "%s\n", line);
		}
		free(line);
		p += l + (p[l] ? 1 : 0);
	}
	if (count)
		lab_buf_printf(io->out, "%ld\n", n);
	regfree(&re);
	lab_buf_free(&data);
	return n ? 0 : (okr ? 1 : 2);
}

static int sh_test(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(io);
	if (strcmp(argv[0], "[") == 0) {
		if (strcmp(argv[argc - 1], "]") != 0) {
			errf(io, "sh: [: missing ]\n");
			return 2;
		}
		argc--;
	}
	bool neg = false;
	int i = 1;
	if (i < argc && strcmp(argv[i], "!") == 0) {
		neg = true;
		i++;
	}
	int n = argc - i;
	bool r = false;
	if (n == 0) {
		r = false;
	} else if (n == 1) {
		r = argv[i][0] != '\0';
	} else if (n == 2) {
		const char *op = argv[i], *a = argv[i + 1];
		char path[512];
		abs_path(b, a, path, sizeof path);
		struct sim_file *f = sim_file_find(b, path);
		struct lab_buf tmp;
		lab_buf_init(&tmp, 1 << 16);
		bool exists = f || is_dir(b, path) || sim_read_path(b, path, &tmp);
		lab_buf_free(&tmp);
		if (strcmp(op, "-x") == 0)
			r = (f && (f->mode & 0111)) || is_dir(b, path);
		else if (strcmp(op, "-e") == 0)
			r = exists;
		else if (strcmp(op, "-f") == 0)
			r = exists && !is_dir(b, path);
		else if (strcmp(op, "-d") == 0)
			r = is_dir(b, path);
		else if (strcmp(op, "-s") == 0)
			r = f && f->data.len > 0;
		else if (strcmp(op, "-z") == 0)
			r = a[0] == '\0';
		else if (strcmp(op, "-n") == 0)
			r = a[0] != '\0';
		else {
			errf(io, "sh: %s: unknown operand\n", op);
			return 2;
		}
	} else if (n == 3) {
		const char *a = argv[i], *op = argv[i + 1], *c = argv[i + 2];
		int64_t x = 0, y = 0;
		bool nums = lab_parse_i64(a, &x) == 0 && lab_parse_i64(c, &y) == 0;
		if (strcmp(op, "=") == 0 || strcmp(op, "==") == 0)
			r = strcmp(a, c) == 0;
		else if (strcmp(op, "!=") == 0)
			r = strcmp(a, c) != 0;
		else if (nums && strcmp(op, "-eq") == 0)
			r = x == y;
		else if (nums && strcmp(op, "-ne") == 0)
			r = x != y;
		else if (nums && strcmp(op, "-gt") == 0)
			r = x > y;
		else if (nums && strcmp(op, "-lt") == 0)
			r = x < y;
		else if (nums && strcmp(op, "-ge") == 0)
			r = x >= y;
		else if (nums && strcmp(op, "-le") == 0)
			r = x <= y;
		else {
			errf(io, "sh: %s: bad number or operator\n", op);
			return 2;
		}
	}
	return (r != neg) ? 0 : 1;
}

static int sh_chmod(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	if (argc < 3) {
		errf(io, "chmod: missing operand\n");
		return 1;
	}
	const char *m = argv[1];
	int rc = 0;
	for (int i = 2; i < argc; i++) {
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		struct sim_file *f = sim_file_find(b, path);
		if (!f) {
			errf(io, "chmod: %s: No such file or directory\n", argv[i]);
			rc = 1;
			continue;
		}
		if (m[0] >= '0' && m[0] <= '7')
			f->mode = (unsigned)strtoul(m, NULL, 8) & 07777;
		else if (strstr(m, "+x"))
			f->mode |= 0111;
		else if (strstr(m, "-x"))
			f->mode &= ~0111u;
	}
	return rc;
}

/* Writes through redirection to a path. */
static int write_path(struct sim_board *b, const char *name, const char *data, size_t len,
		      bool append, struct sh_io *io)
{
	char path[512];
	abs_path(b, name, path, sizeof path);
	if (strcmp(path, "/dev/null") == 0)
		return 0;
	if (strcmp(path, "/dev/console") == 0 || strcmp(path, "/dev/ttyS2") == 0 ||
	    strcmp(path, "/dev/kmsg") == 0) {
		lab_buf_append(io->out, data, len);
		return 0;
	}
	if (strncmp(path, "/sys/", 5) == 0 || strncmp(path, "/proc/", 6) == 0) {
		char v[64];
		snprintf(v, sizeof v, "%.*s", (int)(len < 63 ? len : 63), data);
		v[strcspn(v, "\n")] = '\0';
		if (strcmp(path, "/sys/module/mmc_block/parameters/fua") == 0 && b->cfg.kernel_patched) {
			if (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto")) {
				errf(io, "sh: write error: Invalid argument\n");
				return 1;
			}
			/* read by mmc_block at probe: takes effect on the next bind */
			snprintf(b->knob_fua, sizeof b->knob_fua, "%.7s", v);
			return 0;
		}
		if (strcmp(path, "/sys/module/mmc_core/parameters/disable_cqe") == 0 && b->cfg.kernel_patched) {
			b->knob_cqe = strcmp(v, "1") == 0 || strcmp(v, "Y") == 0 || strcmp(v, "y") == 0;
			return 0;
		}
		if (strcmp(path, "/sys/bus/mmc/drivers/mmcblk/bind") == 0) {
			probe_mode(b, sim_board_fault_on(b, FAULT_MODE_STUCK));
			if (b->eff.cqe && !b->cqe_line) {
				klog(b, 0, "mmc0: Command Queue Engine enabled");
				b->cqe_line = true;
			}
			return 0;
		}
		if (strcmp(path, "/sys/bus/mmc/drivers/mmcblk/unbind") == 0 ||
		    strcmp(path, "/proc/sys/vm/drop_caches") == 0 ||
		    strncmp(path, "/sys/kernel/tracing/", 20) == 0)
			return 0;
		if (strcmp(path, "/sys/block/mmcblk0/queue/write_cache") == 0) {
			if (strcmp(v, "write through") == 0) {
				b->eff.cache = false;
				b->eff.fua = false; /* write through drops FUA and flushes */
				b->dev = b->eff;
			} else if (strcmp(v, "write back") == 0) {
				probe_mode(b, sim_board_fault_on(b, FAULT_MODE_STUCK));
			} else {
				errf(io, "sh: write error: Invalid argument\n");
				return 1;
			}
			return 0;
		}
		errf(io, "sh: can't create %s: Permission denied\n", name);
		return 1;
	}
	if (is_dir(b, path)) {
		errf(io, "sh: can't create %s: Is a directory\n", name);
		return 1;
	}
	char dir[512];
	snprintf(dir, sizeof dir, "%s", path);
	char *sl = strrchr(dir, '/');
	if (sl && sl != dir) {
		*sl = '\0';
		if (!is_dir(b, dir)) {
			errf(io, "sh: can't create %s: nonexistent directory\n", name);
			return 1;
		}
	}
	struct sim_file *f = sim_file_create(b, path, 0644);
	if (!f) {
		errf(io, "sh: can't create %s: No space left on device\n", name);
		return 1;
	}
	if (!append)
		f->data.len = 0;
	if (lab_buf_append(&f->data, data, len) != 0) {
		errf(io, "sh: write error: File too large\n");
		return 1;
	}
	return 0;
}

static int sh_echo(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	int i = 1;
	bool nl = true, esc = false;
	for (; i < argc && argv[i][0] == '-' && (strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "-e") == 0 ||
						  strcmp(argv[i], "-ne") == 0 || strcmp(argv[i], "-en") == 0); i++) {
		if (strchr(argv[i], 'n'))
			nl = false;
		if (strchr(argv[i], 'e'))
			esc = true;
	}
	for (int k = i; k < argc; k++) {
		if (k > i)
			lab_buf_append(io->out, " ", 1);
		if (!esc) {
			lab_buf_append(io->out, argv[k], strlen(argv[k]));
			continue;
		}
		for (const char *p = argv[k]; *p; p++) {
			if (*p == '\\' && p[1] == 'n') {
				lab_buf_append(io->out, "\n", 1);
				p++;
			} else if (*p == '\\' && p[1] == 't') {
				lab_buf_append(io->out, "\t", 1);
				p++;
			} else {
				lab_buf_append(io->out, p, 1);
			}
		}
	}
	if (nl)
		lab_buf_append(io->out, "\n", 1);
	return 0;
}

static int sh_printf(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	if (argc < 2)
		return 1;
	int ai = 2;
	for (const char *p = argv[1]; *p; p++) {
		if (*p == '\\' && p[1] == 'n') {
			lab_buf_append(io->out, "\n", 1);
			p++;
		} else if (*p == '%' && p[1] == 's') {
			const char *a = ai < argc ? argv[ai++] : "";
			lab_buf_append(io->out, a, strlen(a));
			p++;
		} else if (*p == '%' && p[1] == '%') {
			lab_buf_append(io->out, "%", 1);
			p++;
		} else {
			lab_buf_append(io->out, p, 1);
		}
	}
	return 0;
}

/* export and local: NAME=VALUE sets (there is one scope); a bare NAME is kept as it is. */
static int sh_export(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(io);
	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq) {
			*eq = '\0';
			sim_kv_set(&b->vars, argv[i], eq + 1);
			*eq = '=';
		}
	}
	return 0;
}

static int sh_unset(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(io);
	for (int i = 1; i < argc; i++)
		sim_kv_set(&b->vars, argv[i], NULL);
	return 0;
}

static int sh_cat(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	return read_inputs(b, "cat", argc, argv, 1, io, io->out) ? 0 : 1;
}

static int sh_uname(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	if (argc > 1 && strcmp(argv[1], "-r") == 0)
		lab_buf_printf(io->out, "%s\n", b->cfg.kernel_version);
	else if (argc > 1 && strcmp(argv[1], "-m") == 0)
		lab_buf_printf(io->out, "aarch64\n");
	else if (argc > 1 && strcmp(argv[1], "-a") == 0)
		lab_buf_printf(io->out, "Linux %s %s #1 SMP PREEMPT Mon Jul 10 12:00:00 UTC 2023 aarch64 GNU/Linux\n",
			       b->cfg.hostname, b->cfg.kernel_version);
	else
		lab_buf_printf(io->out, "Linux\n");
	return 0;
}

static int sh_hostname(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_printf(io->out, "%s\n", b->cfg.hostname);
	return 0;
}

static int sh_id(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_printf(io->out, "uid=0(root) gid=0(root) groups=0(root)\n");
	return 0;
}

static int sh_whoami(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_printf(io->out, "root\n");
	return 0;
}

static int sh_pwd(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_printf(io->out, "%s\n", b->cwd);
	return 0;
}

static int sh_cd(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	char path[256];
	abs_path(b, argc > 1 ? argv[1] : "/root", path, sizeof path);
	if (!is_dir(b, path)) {
		errf(io, "sh: cd: can't cd to %s: No such file or directory\n", argc > 1 ? argv[1] : "");
		return 2;
	}
	snprintf(b->cwd, sizeof b->cwd, "%s", path);
	return 0;
}

static int sh_base64(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	bool dec = argc > 1 && strcmp(argv[1], "-d") == 0;
	struct lab_buf data;
	lab_buf_init(&data, 32u << 20);
	int rc = 0;
	if (!read_inputs(b, "base64", argc, argv, dec ? 2 : 1, io, &data))
		rc = 1;
	else if (dec) {
		if (!sim_base64_decode(data.data ? data.data : "", data.len, io->out)) {
			errf(io, "base64: invalid input\n");
			rc = 1;
		}
	} else {
		base64_encode((const unsigned char *)(data.data ? data.data : ""), data.len, io->out);
	}
	lab_buf_free(&data);
	return rc;
}

static int sh_sha256sum(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct lab_buf data;
		lab_buf_init(&data, 64u << 20);
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		if (!sim_read_path(b, path, &data)) {
			errf(io, "sha256sum: %s: No such file or directory\n", argv[i]);
			rc = 1;
		} else {
			char hex[65];
			lab_sha256(data.data ? data.data : "", data.len, hex);
			lab_buf_printf(io->out, "%s  %s\n", hex, argv[i]);
		}
		lab_buf_free(&data);
	}
	if (argc == 1) {
		char hex[65];
		lab_sha256(io->in ? io->in : "", io->inlen, hex);
		lab_buf_printf(io->out, "%s  -\n", hex);
	}
	return rc;
}

static int sh_rm(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	bool force = false;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			force |= strchr(argv[i], 'f') != NULL;
			continue;
		}
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		if (sim_file_find(b, path)) {
			sim_file_remove(b, path);
		} else if (!force) {
			errf(io, "rm: can't remove '%s': No such file or directory\n", argv[i]);
			rc = 1;
		}
	}
	return rc;
}

static int sh_touch(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	for (int i = 1; i < argc; i++) {
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		if (!sim_file_find(b, path) && write_path(b, argv[i], "", 0, true, io) != 0)
			return 1;
	}
	return 0;
}

static int sh_mkdir(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(io);
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		char path[512];
		abs_path(b, argv[i], path, sizeof path);
		char *keep = xasprintf("%s/.keep", path);
		sim_file_create(b, keep, 0644);
		free(keep);
	}
	return 0;
}

static int sh_ls(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	const char *dir = "/";
	char path[512];
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			dir = argv[i];
	abs_path(b, argc > 1 && argv[argc - 1][0] != '-' ? dir : b->cwd, path, sizeof path);
	struct sim_file *f = sim_file_find(b, path);
	if (f) {
		lab_buf_printf(io->out, "%s\n", argc > 1 ? argv[argc - 1] : path);
		return 0;
	}
	if (!is_dir(b, path)) {
		errf(io, "ls: %s: No such file or directory\n", path);
		return 1;
	}
	size_t l = strlen(path);
	for (size_t i = 0; i < b->nfiles; i++) {
		const char *p = b->files[i].path;
		if (strncmp(p, path, l) == 0 && (p[l] == '/' || l == 1) &&
		    !strchr(p + l + (l == 1 ? 0 : 1), '/') && !strstr(p, "/.keep"))
			lab_buf_printf(io->out, "%s\n", p + l + (l == 1 ? 0 : 1));
	}
	return 0;
}

static int sh_head(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	const char *c = argv[0];
	long n = 10;
	int i = 1;
	if (i < argc && strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
		n = strtol(argv[i + 1], NULL, 10);
		i += 2;
	} else if (i < argc && argv[i][0] == '-' && isdigit((unsigned char)argv[i][1])) {
		n = strtol(argv[i] + 1, NULL, 10);
		i++;
	}
	struct lab_buf data;
	lab_buf_init(&data, 64u << 20);
	bool okr = read_inputs(b, c, argc, argv, i, io, &data);
	const char *s = data.data ? lab_buf_cstr(&data) : "";
	long lines = 0;
	for (const char *p = s; *p; p++)
		lines += *p == '\n';
	long skip = c[0] == 'h' ? 0 : (lines > n ? lines - n : 0), k = 0;
	for (const char *p = s; *p;) {
		size_t l = strcspn(p, "\n");
		if (k >= skip && k < skip + n) {
			lab_buf_append(io->out, p, l);
			lab_buf_append(io->out, "\n", 1);
		}
		k++;
		p += l + (p[l] ? 1 : 0);
	}
	lab_buf_free(&data);
	return okr ? 0 : 1;
}

static int sh_wc(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	struct lab_buf data;
	lab_buf_init(&data, 64u << 20);
	int first = 1;
	bool lonly = argc > 1 && strcmp(argv[1], "-l") == 0, conly = argc > 1 && strcmp(argv[1], "-c") == 0;
	if (lonly || conly)
		first = 2;
	bool okr = read_inputs(b, "wc", argc, argv, first, io, &data);
	long lines = 0;
	for (size_t i = 0; i < data.len; i++)
		lines += data.data[i] == '\n';
	if (lonly)
		lab_buf_printf(io->out, "%ld\n", lines);
	else if (conly)
		lab_buf_printf(io->out, "%zu\n", data.len);
	else
		lab_buf_printf(io->out, "%7ld %7ld %7zu\n", lines, lines, data.len);
	lab_buf_free(&data);
	return okr ? 0 : 1;
}

static int sh_tee(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	bool app = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-a") == 0) {
			app = true;
			continue;
		}
		write_path(b, argv[i], io->in ? io->in : "", io->inlen, app, io);
	}
	lab_buf_append(io->out, io->in ? io->in : "", io->inlen);
	return 0;
}

static int sh_sync(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	io->t_ms += 20;
	b->flushes++;
	return 0;
}

static int sh_sleep(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	double s = 0;
	if (argc < 2 || lab_parse_double(argv[1], &s) != 0 || s < 0) {
		errf(io, "sleep: invalid number '%s'\n", argc > 1 ? argv[1] : "");
		return 1;
	}
	io->t_ms += s * 1000;
	return 0;
}

static int sh_dmesg(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_append(io->out, b->klog.data ? b->klog.data : "", b->klog.len);
	return 0;
}

static int sh_stty(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(io);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-echo") == 0)
			b->tty_echo = false;
		else if (strcmp(argv[i], "echo") == 0 || strcmp(argv[i], "sane") == 0)
			b->tty_echo = true;
	}
	return 0;
}

static int sh_mount(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	lab_buf_printf(io->out, "/dev/mmcblk0p2 on / type ext4 (rw,relatime)\n"
				"proc on /proc type proc (rw,nosuid,nodev,noexec,relatime)\n"
				"sysfs on /sys type sysfs (rw,nosuid,nodev,noexec,relatime)\n"
				"tmpfs on /tmp type tmpfs (rw,nosuid,nodev)\n"
				"tracefs on /sys/kernel/tracing type tracefs (rw,nosuid,nodev,noexec,relatime)\n");
	return 0;
}

/* The path of each of argv[first..argc); 1 when one is not found. */
static int which_names(struct sim_board *b, int argc, char **argv, int first, struct sh_io *io)
{
	int rc = 0;
	for (int i = first; i < argc; i++) {
		char path[512];
		if (find_exec(b, argv[i], path, sizeof path))
			lab_buf_printf(io->out, "%s\n", path);
		else
			rc = 1;
	}
	return rc;
}

static int sh_which(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	return which_names(b, argc, argv, 1, io);
}

static int sh_poweroff(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	const char *c = argv[0];
	bool force = argc > 1 && strcmp(argv[1], "-f") == 0;
	bool rb = strcmp(c, "reboot") == 0;
	if (!force)
		lab_buf_printf(io->out, "The system is going down NOW!\nSent SIGTERM to all processes\n"
					"Sent SIGKILL to all processes\n");
	b->uptime_s += force ? 0.05 : 1.5;
	char *l = xasprintf("[%5lu.%06lu] reboot: %s\n", (unsigned long)b->uptime_s,
			    (unsigned long)((b->uptime_s - (double)(unsigned long)b->uptime_s) * 1e6),
			    rb ? "Restarting system" : "Power down");
	lab_buf_append(io->out, l, strlen(l));
	free(l);
	io->stop = true;
	io->t_ms += force ? 50 : 1500;
	return rb ? 1 : 2; /* marks: 1 reboot, 2 halt (see shell_exec) */
}

static int sh_exit(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	io->stop = true;
	return 3;
}

/* Not a builtin: a program in $PATH (or by path).  emmclab-agent runs as the
 * simulated agent; any other executable runs and prints nothing. */
static int sh_external(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	const char *c = argv[0];
	char path[512];
	if (!find_exec(b, c, path, sizeof path)) {
		errf(io, "sh: %s: not found\n", c);
		return 127;
	}
	struct sim_file *f = sim_file_find(b, path);
	if (!(f->mode & 0111)) {
		errf(io, "sh: %s: Permission denied\n", c);
		return 126;
	}
	bool elf = f->data.len >= 4 && memcmp(f->data.data, "\x7f" "ELF", 4) == 0;
	bool script = f->data.len >= 2 && memcmp(f->data.data, "#!", 2) == 0;
	if (!elf && !script) {
		errf(io, "sh: %s: Exec format error\n", c);
		return 126;
	}
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strstr(base, "emmclab-agent"))
		return sim_agent_run(b, argc, argv, &io->t_ms, io->to_console, io->out);
	return 0; /* another program: it runs and prints nothing */
}

static int sh_true(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(io);
	return 0;
}

static int sh_false(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	LAB_UNUSED(b);
	LAB_UNUSED(argc);
	LAB_UNUSED(argv);
	LAB_UNUSED(io);
	return 1;
}

static int sh_command(struct sim_board *b, int argc, char **argv, struct sh_io *io);

/* `command -v NAME...` is which; `command NAME ARGS` runs NAME (there are no
 * shell functions to skip); a bare `command` does nothing. */
static int sh_command_v(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	if (argc > 1 && strcmp(argv[1], "-v") == 0)
		return which_names(b, argc, argv, 2, io);
	return argc > 1 ? sh_command(b, argc - 1, argv + 1, io) : 0;
}

/* The shell's builtins and the busybox applets the controller uses: one
 * handler each (returning the exit status), found by name; anything else is
 * looked up in $PATH (sh_external). */
struct sh_builtin {
	const char *name;
	int (*run)(struct sim_board *b, int argc, char **argv, struct sh_io *io);
};

static const struct sh_builtin sh_builtins[] = {
	{"echo", sh_echo},
	{"printf", sh_printf},
	{"export", sh_export},
	{"unset", sh_unset},
	{"local", sh_export},
	{"true", sh_true},
	{":", sh_true},
	{"false", sh_false},
	{"cat", sh_cat},
	{"uname", sh_uname},
	{"hostname", sh_hostname},
	{"id", sh_id},
	{"whoami", sh_whoami},
	{"pwd", sh_pwd},
	{"cd", sh_cd},
	{"test", sh_test},
	{"[", sh_test},
	{"base64", sh_base64},
	{"sha256sum", sh_sha256sum},
	{"rm", sh_rm},
	{"touch", sh_touch},
	{"mkdir", sh_mkdir},
	{"ls", sh_ls},
	{"chmod", sh_chmod},
	{"grep", sh_grep},
	{"head", sh_head},
	{"tail", sh_head},
	{"wc", sh_wc},
	{"tee", sh_tee},
	{"sync", sh_sync},
	{"sleep", sh_sleep},
	{"dmesg", sh_dmesg},
	{"stty", sh_stty},
	{"mount", sh_mount},
	{"which", sh_which},
	{"command", sh_command_v},
	{"poweroff", sh_poweroff},
	{"halt", sh_poweroff},
	{"reboot", sh_poweroff},
	{"exit", sh_exit},
	{"logout", sh_exit},
};

static int sh_command(struct sim_board *b, int argc, char **argv, struct sh_io *io)
{
	for (size_t i = 0; i < LAB_ARRAY_SIZE(sh_builtins); i++)
		if (strcmp(argv[0], sh_builtins[i].name) == 0)
			return sh_builtins[i].run(b, argc, argv, io);
	return sh_external(b, argc, argv, io);
}

/* Run one pipeline (tokens).  Console output is emitted in order. */
static int run_pipeline(struct sim_board *b, struct sim_tok *toks, size_t nt, bool *stop)
{
	struct lab_buf in, out, err, console;
	lab_buf_init(&in, 64u << 20);
	lab_buf_init(&console, 64u << 20);
	int status = 0;
	size_t start = 0;
	double t_ms = 0;
	while (start <= nt) {
		size_t end = start;
		while (end < nt && toks[end].type != TOK_PIPE)
			end++;
		bool last = end >= nt;
		char *argv[130];
		int argc = 0;
		const char *outfile = NULL, *infile = NULL;
		bool append = false, err_null = false, err_to_out = false, err_file = false;
		const char *errfile = NULL;
		bool syntax = false;
		for (size_t i = start; i < end; i++) {
			struct sim_tok *t = &toks[i];
			if (t->type == TOK_WORD) {
				if (argc < 128)
					argv[argc++] = t->s;
				continue;
			}
			if (t->type == TOK_DUP) {
				err_to_out = true;
				continue;
			}
			if (i + 1 >= end || toks[i + 1].type != TOK_WORD) {
				syntax = true;
				break;
			}
			const char *target = toks[++i].s;
			if (t->type == TOK_IN) {
				infile = target;
			} else if (t->fd == 2) {
				if (strcmp(target, "/dev/null") == 0)
					err_null = true;
				else {
					err_file = true;
					errfile = target;
				}
			} else {
				outfile = target;
				append = t->type == TOK_APPEND;
			}
		}
		argv[argc] = NULL;
		lab_buf_init(&out, 64u << 20);
		lab_buf_init(&err, 1u << 20);
		struct sh_io io = {.in = in.data, .inlen = in.len, .out = &out, .err = &err};
		io.to_console = last && !outfile;
		if (syntax) {
			errf(&io, "sh: syntax error: unexpected newline\n");
			status = 2;
		} else if (infile) {
			char path[512];
			abs_path(b, infile, path, sizeof path);
			in.len = 0;
			if (!sim_read_path(b, path, &in)) {
				errf(&io, "sh: can't open %s: no such file\n", infile);
				status = 1;
				argc = 0;
			}
			io.in = in.data;
			io.inlen = in.len;
		}
		if (!syntax && argc > 0) {
			/* plain assignment: NAME=value */
			char *eq = strchr(argv[0], '=');
			if (argc == 1 && eq && eq != argv[0] && !strchr(argv[0], '/')) {
				*eq = '\0';
				sim_kv_set(&b->vars, argv[0], eq + 1);
				status = 0;
			} else {
				status = sh_command(b, argc, argv, &io);
				/* the agent may already have printed to the console with timing */
				if (io.to_console && io.t_ms > 0 && console.len) {
					sim_emit(b, 0, lab_buf_cstr(&console));
					console.len = 0;
				}
			}
		}
		t_ms += io.t_ms;
		if (outfile && !syntax) {
			if (write_path(b, outfile, out.data ? out.data : "", out.len, append, &io) != 0)
				status = 1;
			out.len = 0;
		}
		if (err.len) {
			if (err_null) {
				/* discarded */
			} else if (err_file) {
				write_path(b, errfile, err.data, err.len, true, &io);
			} else if (err_to_out && !last) {
				lab_buf_append(&out, err.data, err.len);
			} else {
				lab_buf_append(&console, err.data, err.len);
			}
		}
		if (last) {
			lab_buf_append(&console, out.data ? out.data : "", out.len);
		} else {
			in.len = 0;
			lab_buf_append(&in, out.data ? out.data : "", out.len);
		}
		lab_buf_free(&out);
		lab_buf_free(&err);
		if (io.stop) {
			*stop = true;
			break;
		}
		if (last)
			break;
		start = end + 1;
	}
	sim_emit(b, t_ms, console.len ? lab_buf_cstr(&console) : "");
	lab_buf_free(&console);
	lab_buf_free(&in);
	return status;
}

static void shell_exec(struct sim_board *b, const char *line)
{
	b->busy = true;
	struct sim_seg segs[64];
	size_t n = sim_split_list(line, segs, LAB_ARRAY_SIZE(segs));
	bool stop = false;
	int code = 0;
	for (size_t i = 0; i < n && !stop; i++) {
		if (segs[i].op == SIM_OP_AND && b->last_status != 0)
			continue;
		if (segs[i].op == SIM_OP_OR && b->last_status == 0)
			continue;
		struct sh_ctx ctx = {.b = b};
		struct sim_tok toks[256];
		size_t nt = sim_tokenize(segs[i].text, sh_var, &ctx, toks, LAB_ARRAY_SIZE(toks));
		if (nt) {
			code = run_pipeline(b, toks, nt, &stop);
			if (!stop)
				b->last_status = code;
		}
		sim_toks_free(toks, nt);
	}
	sim_segs_free(segs, n);
	if (stop) {
		if (code == 1) /* reboot */
			sim_emit_fn(b, 100, reboot_board, 0);
		else if (code == 2) /* halted: powered but silent */
			sim_emit_fn(b, 0, go_dead, 0);
		else if (b->cfg.login)
			sim_emit_fn(b, 10, to_login, 0);
		else
			sim_emit_fn(b, 10, to_shell, 0);
		return;
	}
	sim_emit_fn(b, 0, shell_idle, 0);
}

/* ---- tty ---- */

static void login_line(struct sim_board *b, const char *user)
{
	if (strcmp(user, "root") == 0) {
		sim_set_stage(b, SIM_SHELL);
		b->busy = true;
		sim_emitf(b, 300, "Linux %s %s #1 SMP PREEMPT aarch64\n\n"
				  "The programs included with the Debian GNU/Linux system are free software.\n",
			  b->cfg.hostname, b->cfg.kernel_version);
		sim_emit_fn(b, 0, shell_idle, 0);
	} else if (user[0]) {
		sim_emit(b, 100, "Password: ");
		sim_emit(b, 2000, "\nLogin incorrect\n");
		sim_emit_fn(b, 0, to_login, 0);
	} else {
		char s[128];
		snprintf(s, sizeof s, "%s login: ", b->cfg.hostname);
		sim_out_now(b, s, strlen(s));
	}
}

void sim_linux_input(struct sim_board *b, unsigned char c)
{
	if (b->stage == SIM_KERNEL)
		return; /* getty flushes what was typed during boot */
	bool echo = b->stage == SIM_LOGIN || b->tty_echo;
	if (c == 0x03) { /* ^C: SIGINT to the foreground job, input flushed */
		if (echo)
			sim_out_now(b, "^C\n", 3);
		b->line.len = 0;
		for (size_t i = 0; i < b->npending; i++)
			free(b->pending[i]);
		b->npending = 0;
		if (b->stage == SIM_SHELL) {
			sim_sched_clear(b);
			b->last_status = 130;
			b->busy = false;
			shell_idle(b, 0);
		} else {
			to_login(b, 0);
		}
		return;
	}
	if (c == 0x7f || c == 0x08) {
		if (b->line.len) {
			b->line.len--;
			if (echo)
				sim_out_now(b, "\b \b", 3);
		}
		return;
	}
	if (c == 0x15) { /* ^U */
		while (b->line.len) {
			b->line.len--;
			if (echo)
				sim_out_now(b, "\b \b", 3);
		}
		return;
	}
	if (c == 0x04 && b->line.len == 0) { /* ^D on an empty line: logout */
		if (b->stage == SIM_SHELL && !b->busy) {
			if (b->cfg.login)
				to_login(b, 0);
			else
				shell_idle(b, 0);
		}
		return;
	}
	if (c == '\r')
		c = '\n'; /* ICRNL */
	if (c != '\n') {
		if (lab_buf_append(&b->line, &c, 1) == 0 && echo)
			sim_out_now(b, (const char *)&c, 1);
		return;
	}
	if (echo)
		sim_out_now(b, "\n", 1);
	char *line = xstrndup(b->line.data ? b->line.data : "", b->line.len);
	b->line.len = 0;
	if (b->stage == SIM_LOGIN) {
		login_line(b, line);
		free(line);
		return;
	}
	if (b->busy) {
		if (b->npending < SIM_MAX_PENDING)
			b->pending[b->npending++] = line;
		else
			free(line);
		return;
	}
	shell_exec(b, line);
	free(line);
}
