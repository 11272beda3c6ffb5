/*
 * identify.c - who is the part: CID (sysfs, or decoded from the raw CID),
 * EXT_CSD (MMC_IOC_CMD, debugfs, or a dump file) and the kernel knobs.
 *
 * The EXT_CSD fields are decoded with the same revision gates as Linux 6.1
 * drivers/mmc/core/mmc.c (mmc_decode_ext_csd), so a field the kernel would
 * ignore on an old part is not reported either.
 */
#include "agent.h"
#include "hex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/mmc/ioctl.h>

#define EXT_CSD_CMDQ_MODE_EN 15
#define EXT_CSD_CACHE_CTRL 33
#define EXT_CSD_WR_REL_PARAM 166
#define EXT_CSD_REV 192
#define EXT_CSD_SEC_CNT 212
#define EXT_CSD_REL_WR_SEC_C 222
#define EXT_CSD_CACHE_SIZE 249
#define EXT_CSD_FIRMWARE_VERSION 254
#define EXT_CSD_DEVICE_VERSION 262
#define EXT_CSD_PRE_EOL_INFO 267
#define EXT_CSD_LIFE_A 268
#define EXT_CSD_LIFE_B 269
#define EXT_CSD_CMDQ_DEPTH 307
#define EXT_CSD_CMDQ_SUPPORT 308

/* MMC_RSP_SPI_R1 | MMC_RSP_R1 | MMC_CMD_ADTC (the kernel's mmc core) */
#define AGENT_MMC_FLAGS_R1_ADTC 0xB5
#define MMC_SEND_EXT_CSD 8

void agent_kv_init(struct agent_kv *k)
{
	k->n = 0;
	k->used = 0;
	k->kv[0] = NULL;
}

/* Later adds of the same key replace nothing: first value wins (sysfs before decode). */
void agent_kv_add(struct agent_kv *k, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *dst;
	int r;

	if (agent_kv_get(k, key) || k->n >= (int)(sizeof(k->kv) / sizeof(k->kv[0]) - 1) / 2)
		return;
	dst = k->store + k->used;
	va_start(ap, fmt);
	r = vsnprintf(dst, sizeof(k->store) - k->used, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(k->store) - k->used)
		return;
	k->used += (size_t)r + 1;
	k->kv[2 * k->n] = key;
	k->kv[2 * k->n + 1] = dst;
	k->n++;
	k->kv[2 * k->n] = NULL;
}

const char *agent_kv_get(const struct agent_kv *k, const char *key)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (strcmp(k->kv[2 * i], key) == 0)
			return k->kv[2 * i + 1];
	return NULL;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void agent_decode_ext_csd(const uint8_t *ext, struct agent_kv *k)
{
	unsigned rev = ext[EXT_CSD_REV];
	char hex[1025];

	agent_kv_add(k, "ext_csd_rev", "%u", rev);
	if (rev >= 2 && le32(ext + EXT_CSD_SEC_CNT))
		agent_kv_add(k, "capacity_bytes", "%llu",
			     (unsigned long long)le32(ext + EXT_CSD_SEC_CNT) * 512ull);
	if (rev >= 6) {
		/* CACHE_SIZE counts kilobits */
		agent_kv_add(k, "cache_kib", "%u", le32(ext + EXT_CSD_CACHE_SIZE) / 8u);
		agent_kv_add(k, "cache_ctrl", "%u", ext[EXT_CSD_CACHE_CTRL] & 1u);
	}
	if (rev >= 5)
		agent_kv_add(k, "rel_wr_param", "%u", ext[EXT_CSD_WR_REL_PARAM]);
	if (rev >= 3)
		agent_kv_add(k, "rel_sectors", "%u", ext[EXT_CSD_REL_WR_SEC_C]);
	if (rev >= 8) {
		unsigned depth = (ext[EXT_CSD_CMDQ_DEPTH] & 0x1fu) + 1;
		int sup = ext[EXT_CSD_CMDQ_SUPPORT] & 1;

		/* the kernel ignores depths <= 2 as inefficient */
		if (depth <= 2)
			sup = 0;
		agent_kv_add(k, "cmdq_support", "%d", sup);
		agent_kv_add(k, "cmdq_depth", "%u", sup ? depth : 0);
		agent_kv_add(k, "cmdq_mode_en", "%u", ext[EXT_CSD_CMDQ_MODE_EN] & 1u);
	}
	if (rev >= 7) {
		char fw[17];

		agent_kv_add(k, "life_a", "%u", ext[EXT_CSD_LIFE_A]);
		agent_kv_add(k, "life_b", "%u", ext[EXT_CSD_LIFE_B]);
		agent_kv_add(k, "pre_eol", "%u", ext[EXT_CSD_PRE_EOL_INFO]);
		hex_encode(fw, ext + EXT_CSD_FIRMWARE_VERSION, 8);
		agent_kv_add(k, "fw_version", "%s", fw);
		agent_kv_add(k, "device_version", "0x%04x",
			     (unsigned)ext[EXT_CSD_DEVICE_VERSION] |
				     (unsigned)ext[EXT_CSD_DEVICE_VERSION + 1] << 8);
	}
	hex_encode(hex, ext, 512);
	agent_kv_add(k, "ext_csd", "%s", hex);
}

/* bits [start, start+len) of the 128-bit big-endian CID (bit 0 = LSB). */
static uint32_t cid_bits(const uint8_t *cid, unsigned start, unsigned len)
{
	uint32_t v = 0;
	unsigned i;

	for (i = start + len; i-- > start;)
		v = v << 1 | ((cid[15 - i / 8] >> (i % 8)) & 1u);
	return v;
}

/* Decode a 32-hex-digit CID like the kernel does for MMC v2..v4+ (every eMMC).
 * ext_csd_rev < 0 when unknown (no production date adjustment then). */
int agent_decode_cid(const char *hex, int ext_csd_rev, struct agent_kv *k)
{
	uint8_t cid[16];
	char name[7];
	unsigned year, prv, i;

	if (strlen(hex) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		cid[i] = (uint8_t)(hi << 4 | lo);
	}
	agent_kv_add(k, "manfid", "0x%06x", cid_bits(cid, 120, 8));
	agent_kv_add(k, "oemid", "0x%04x", cid_bits(cid, 104, 16));
	for (i = 0; i < 6; i++) {
		unsigned c = cid_bits(cid, 96 - 8 * i, 8);

		name[i] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
	}
	name[6] = '\0';
	for (i = 6; i > 0 && name[i - 1] == ' '; i--)
		name[i - 1] = '\0';
	agent_kv_add(k, "name", "%s", name);
	prv = cid_bits(cid, 48, 8);
	agent_kv_add(k, "prv", "0x%x", prv);
	agent_kv_add(k, "serial", "0x%08x", cid_bits(cid, 16, 32));
	year = cid_bits(cid, 8, 4) + 1997;
	/* JESD84-B451: from EXT_CSD rev 5 the 4-bit year counts from 2013 */
	if (ext_csd_rev >= 5 && year < 2010)
		year += 16;
	agent_kv_add(k, "date", "%02u/%04u", cid_bits(cid, 12, 4), year);
	/* PRV is n.m in two BCD nibbles: report them as hw/fw revision */
	agent_kv_add(k, "hwrev", "0x%x", prv >> 4);
	agent_kv_add(k, "fwrev", "0x%x", prv & 0xfu);
	return 0;
}

/* 512 raw bytes, or 1024 hex digits with any whitespace (the debugfs format). */
static int ext_csd_from_buf(const char *buf, size_t n, uint8_t *ext)
{
	size_t i, got = 0;
	int hi = -1;

	if (n == 512) {
		memcpy(ext, buf, 512);
		return 0;
	}
	for (i = 0; i < n; i++) {
		int v = hex_digit(buf[i]);

		if (v < 0) {
			if (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')
				continue;
			return -1;
		}
		if (hi < 0) {
			hi = v;
		} else {
			if (got >= 512)
				return -1;
			ext[got++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return got == 512 && hi < 0 ? 0 : -1;
}

static int ext_csd_from_file(const char *path, uint8_t *ext)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -1;
	n = agent_read_all(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -1;
	return ext_csd_from_buf(buf, (size_t)n, ext);
}

/* CMD8 SEND_EXT_CSD through the mmc block ioctl.  In CQE mode the kernel
 * halts the queue for it, so identify runs between workloads. */
static int ext_csd_ioctl(const struct agent *a, uint8_t *ext, char *err, size_t errsize)
{
	struct mmc_ioc_cmd ic;
	char path[PATH_MAX];
	int fd, r;

	if (agent_path(a, path, sizeof(path), "/dev/%s", a->device) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errsize, "%.200s: %s", path, strerror(errno));
		return -1;
	}
	memset(&ic, 0, sizeof(ic));
	memset(ext, 0, 512);
	ic.write_flag = 0;
	ic.opcode = MMC_SEND_EXT_CSD;
	ic.arg = 0;
	ic.flags = AGENT_MMC_FLAGS_R1_ADTC;
	ic.blksz = 512;
	ic.blocks = 1;
	mmc_ioc_cmd_set_data(ic, ext);
	r = ioctl(fd, MMC_IOC_CMD, &ic);
	if (r != 0)
		snprintf(err, errsize, "MMC_IOC_CMD on %.200s: %s", path, strerror(errno));
	close(fd);
	return r == 0 ? 0 : -1;
}

/* /sys/kernel/debug/mmc0/mmc0:0001/ext_csd (needs debugfs mounted). */
static int ext_csd_debugfs(const struct agent *a, uint8_t *ext)
{
	char host[32], path[PATH_MAX], card[PATH_MAX], real[PATH_MAX], *base;

	if (agent_host_of(a, a->device, host, sizeof(host)) != 0 ||
	    agent_path(a, card, sizeof(card), "/sys/block/%s/device", a->device) < 0 ||
	    !realpath(card, real))
		return -1;
	base = strrchr(real, '/');
	if (!base || agent_path(a, path, sizeof(path), "/sys/kernel/debug/%s/%s/ext_csd", host,
				base + 1) < 0)
		return -1;
	return ext_csd_from_file(path, ext);
}

/* A fresh EXT_CSD: MMC_IOC_CMD, else debugfs.  *src names which; err says
 * why the ioctl failed when both did (-1). */
int agent_read_ext_csd(const struct agent *a, uint8_t *ext, const char **src, char *err,
		       size_t errsize)
{
	if (ext_csd_ioctl(a, ext, err, errsize) == 0) {
		*src = "ioctl";
		return 0;
	}
	if (ext_csd_debugfs(a, ext) == 0) {
		*src = "debugfs";
		return 0;
	}
	return -1;
}

/* sysfs numbers are "0x.." or decimal; print them as decimal. */
static void add_sysfs_num(const struct agent *a, struct agent_kv *k, const char *key,
			  const char *file)
{
	char buf[64], *end;
	unsigned long v;

	if (agent_readf(a, buf, sizeof(buf), "/sys/block/%s/device/%s", a->device, file) <= 0)
		return;
	errno = 0;
	v = strtoul(buf, &end, 0);
	if (!errno && !*end)
		agent_kv_add(k, key, "%lu", v);
}

static void add_sysfs_str(const struct agent *a, struct agent_kv *k, const char *key,
			  const char *file)
{
	char buf[256];

	if (agent_readf(a, buf, sizeof(buf), "/sys/block/%s/device/%s", a->device, file) >= 0)
		agent_kv_add(k, key, "%s", buf);
}

/* mmc_block.fua=auto|on|off and mmc_core.disable_cqe=0|1 from our series. */
void agent_knobs(const struct agent *a, struct agent_kv *k)
{
	char buf[32];

	if (agent_readf(a, buf, sizeof(buf), "/sys/module/mmc_block/parameters/fua") > 0)
		agent_kv_add(k, "knob_fua", "%s", buf);
	else
		agent_kv_add(k, "knob_fua", "missing");
	if (agent_readf(a, buf, sizeof(buf), "/sys/module/mmc_core/parameters/disable_cqe") > 0)
		/* bool parameters read Y/N, int ones 0/1 */
		agent_kv_add(k, "knob_disable_cqe", "%s",
			     buf[0] == 'Y' || buf[0] == 'y' || buf[0] == '1' ? "1" : "0");
	else
		agent_kv_add(k, "knob_disable_cqe", "missing");
}

int cmd_identify(struct agent *a)
{
	static struct agent_kv k, sys, dec;
	static const char *const order[] = {
		"cid", "manfid", "oemid", "name", "prv", "serial", "date", "fwrev", "hwrev",
		"ext_csd_rev", "capacity_bytes", "cache_kib", "cache_ctrl", "rel_wr_param",
		"rel_sectors", "cmdq_support", "cmdq_depth", "cmdq_en", "cmdq_mode_en", "life_a",
		"life_b", "pre_eol", "fw_version", "device_version", "kernel", "cmdline",
		"knob_fua", "knob_disable_cqe", "ext_csd_src", "ext_csd_error", "cid_error", "ext_csd",
		NULL
	};
	const char *file = agent_arg(a, "ext_csd");
	char buf[1100], err[512] = "", cid[64] = "";
	uint8_t ext[512];
	const char *src = "none";
	struct utsname un;
	int rev = -1, i, have_ext = 0;

	agent_kv_init(&k);
	agent_kv_init(&sys);
	agent_kv_init(&dec);
	if (!a->device[0] && !file) {
		agent_error(a, "no-device", "no eMMC found under /sys/block (use --device)");
		return -1;
	}
	if (a->device[0] && agent_readf(a, buf, 64, "/sys/block/%s/size", a->device) < 0) {
		agent_error(a, "no-device", "/sys/block/%s: %s", a->device, strerror(errno));
		return -1;
	}
	if (file) {
		if (ext_csd_from_file(file, ext) != 0) {
			agent_error(a, "bad-ext-csd", "%s: not 512 bytes or 1024 hex digits", file);
			return -1;
		}
		have_ext = 1;
		src = "file";
	} else if (agent_read_ext_csd(a, ext, &src, err, sizeof(err)) == 0) {
		have_ext = 1;
	}
	/* not an error line: identity without EXT_CSD is still an identity */
	if (have_ext) {
		agent_decode_ext_csd(ext, &dec);
		rev = ext[EXT_CSD_REV];
	}

	if (a->device[0]) {
		/* sysfs is what the running kernel believes: it wins over our decode */
		add_sysfs_str(a, &sys, "manfid", "manfid");
		add_sysfs_str(a, &sys, "oemid", "oemid");
		add_sysfs_str(a, &sys, "name", "name");
		add_sysfs_str(a, &sys, "prv", "prv");
		add_sysfs_str(a, &sys, "serial", "serial");
		add_sysfs_str(a, &sys, "date", "date");
		add_sysfs_str(a, &sys, "fwrev", "fwrev");
		add_sysfs_str(a, &sys, "hwrev", "hwrev");
		add_sysfs_num(a, &sys, "cmdq_en", "cmdq_en");
		if (rev < 0 && agent_readf(a, buf, 16, "/sys/block/%s/device/rev", a->device) > 0)
			rev = (int)strtol(buf, NULL, 0);
		if (!have_ext) {
			/* sysfs carries a few EXT_CSD fields too */
			if (rev >= 0)
				agent_kv_add(&sys, "ext_csd_rev", "%d", rev);
			add_sysfs_num(a, &sys, "rel_sectors", "rel_sectors");
			add_sysfs_num(a, &sys, "pre_eol", "pre_eol_info");
			if (agent_readf(a, buf, 64, "/sys/block/%s/device/life_time", a->device) > 0) {
				unsigned la, lb;

				if (sscanf(buf, "%x %x", &la, &lb) == 2) {
					agent_kv_add(&sys, "life_a", "%u", la);
					agent_kv_add(&sys, "life_b", "%u", lb);
				}
			}
		}
		if (agent_readf(a, buf, 64, "/sys/block/%s/size", a->device) > 0)
			agent_kv_add(&sys, "capacity_bytes", "%llu", strtoull(buf, NULL, 10) * 512ull);
		if (agent_readf(a, cid, sizeof(cid), "/sys/block/%s/device/cid", a->device) > 0) {
			agent_kv_add(&k, "cid", "%s", cid);
			if (agent_decode_cid(cid, rev, &dec) != 0)
				agent_kv_add(&k, "cid_error", "not 32 hex digits");
		}
	}
	/* EXT_CSD values before sysfs size (whole user area either way) */
	if (agent_kv_get(&dec, "capacity_bytes"))
		agent_kv_add(&k, "capacity_bytes", "%s", agent_kv_get(&dec, "capacity_bytes"));
	for (i = 0; i < sys.n; i++)
		agent_kv_add(&k, sys.kv[2 * i], "%s", sys.kv[2 * i + 1]);
	for (i = 0; i < dec.n; i++)
		agent_kv_add(&k, dec.kv[2 * i], "%s", dec.kv[2 * i + 1]);
	agent_kv_add(&k, "kernel", "%s", uname(&un) == 0 ? un.release : "unknown");
	/* capped: the whole identity must fit one protocol line */
	if (agent_readf(a, buf, 512, "/proc/cmdline") >= 0)
		agent_kv_add(&k, "cmdline", "%s", buf);
	agent_knobs(a, &k);
	agent_kv_add(&k, "ext_csd_src", "%s", src);
	if (!have_ext)
		agent_kv_add(&k, "ext_csd_error", "%s; debugfs not readable either", err);

	{
		static struct agent_kv out;
		const char *const *o;

		agent_kv_init(&out);
		for (o = order; *o; o++)
			if (agent_kv_get(&k, *o))
				agent_kv_add(&out, *o, "%s", agent_kv_get(&k, *o));
		agent_emit(a, "identity", out.kv);
	}
	return 0;
}
