/*
 * sim_model.c - PRNG, eMMC part profiles and the timing model of the
 * simulated boards.
 *
 * Calibration (docs/simulator.md has the derivation):
 *  - fscopy: T = base*(1-cqe_gain) + commits*(fua ? rel : flush) + warmup(first)
 *    + N(0, sd).  With FUA each ext4 journal commit is one reliable write;
 *    without it the block layer turns it into write + flush.  base and rel
 *    were solved from the published steady means per DUT and mode (iterations
 *    2..5 where the first is a warm-up), flush chosen per part; sd, the
 *    warm-up's mean and its SD are fitted per DUT and mode to the published
 *    spread (harness/common/sim_calib.c, sim_calib_noise_table;
 *    bench/sim_fit.py prints all of these from the CSVs).  Where no number is
 *    published (CQE modes on DUT1-4) the CQE terms come from DUT5 (the only
 *    CQE data).
 *  Which figures are fitted and which assumed is one table shared with the
 *  controller (harness/common/sim_calib.c), so every output can say so.
 *  - androbench: per-I/O costs.  The sdhci-sprd part reproduces the published
 *    AndroBench figures; the other parts are derived from their class and the
 *    sign/size of their fscopy FUA penalty (not published: unverified).
 */
#include "sim.h"
#include "mode.h"
#include "sim_calib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- random streams ---- */

void sim_rng_seed(struct rand_gen *r, uint64_t seed, const char *stream)
{
	/* FNV-1a of the stream name keeps streams of one seed independent. */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = stream ? stream : ""; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ULL;
	}
	rand_seed(r, seed ^ h);
}

double sim_rng_normal(struct rand_gen *r)
{
	double u1 = rand_uniform(r), u2 = rand_uniform(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

bool sim_rng_chance(struct rand_gen *r, double p)
{
	if (p <= 0)
		return false;
	return rand_uniform(r) < p;
}

/* ---- part profiles ---- */

/*
 * CID/EXT_CSD values are representative of each part class (the published
 * sources do not give them); timing constants are fitted as described above.
 */
static const struct sim_part parts[] = {
	{
		.model = "foresee-32g", .label = "DUT1 Foresee 32GB module (Pine64, blue PCB)",
		.name = "NCard", .manfid = 0x88, .oemid = 0x0103, .prv = 0x01, .hwrev = 0, .fwrev = 0,
		.serial = 0x5a0c11e3, .date = "03/2020", .capacity_bytes = 61071360ULL * 512,
		.ext_csd_rev = 8, .cache_kib = 256, .rel_wr_param = 0x15, .rel_sectors = 1,
		.cmdq_support = true, .cmdq_depth = 32, .life_a = 1, .life_b = 1, .pre_eol = 1,
		.fw_version = "A0.01.00", .device_version = 0, .bus_mode = "HS200",
		.seq_write_mibs = 80,
		.fs = {.base_s = 797.229, .warmup_s = 0, .sd_s = 12.2, .flush_ms = 5.0, .rel_ms = 31.412,
		       .cqe_gain = 0.005, .cqe_rel_ms = 25.13, .cqe_flush_ms = 5.0, .commits = 461},
		.ab = {.seq_read = 150, .seq_read_fua = 150, .rand_read = 25, .rand_read_fua = 25,
		       .sw_mibs = 80, .sw_flush_ms = 8, .sw_rel_ms = 60, .rw_us = 250,
		       .rw_flush_us = 2000, .rw_rel_us = 8000, .cqe_gain = 0.10,
		       .cv_sr = 0.01, .cv_rr = 0.01, .cv_sw = 0.03, .cv_rw = 0.05},
		.calibration = "fscopy fua/cache-nofua: published (DUT1); androbench and CQE: derived",
	},
	{
		.model = "silicongo-16g", .label = "DUT2 SiliconGo module (green PCB)",
		.name = "SG016", .manfid = 0x9f, .oemid = 0x5449, .prv = 0x10, .hwrev = 0, .fwrev = 0,
		.serial = 0x0012a4f7, .date = "07/2019", .capacity_bytes = 30539776ULL * 512,
		.ext_csd_rev = 8, .cache_kib = 512, .rel_wr_param = 0x15, .rel_sectors = 1,
		.cmdq_support = true, .cmdq_depth = 16, .life_a = 1, .life_b = 1, .pre_eol = 1,
		.fw_version = "SG160701", .device_version = 0, .bus_mode = "HS200",
		.seq_write_mibs = 70,
		.fs = {.base_s = 466.005, .warmup_s = 23.16, .sd_s = 1.56, .flush_ms = 3.0, .rel_ms = 3.944,
		       .cqe_gain = 0.005, .cqe_rel_ms = 3.16, .cqe_flush_ms = 3.0, .commits = 461},
		.ab = {.seq_read = 140, .seq_read_fua = 140, .rand_read = 22, .rand_read_fua = 22,
		       .sw_mibs = 70, .sw_flush_ms = 6, .sw_rel_ms = 10, .rw_us = 280,
		       .rw_flush_us = 1500, .rw_rel_us = 1900, .cqe_gain = 0.10,
		       .cv_sr = 0.01, .cv_rr = 0.01, .cv_sw = 0.03, .cv_rw = 0.05},
		.calibration = "fscopy fua/cache-nofua: published (DUT2, warm-up); androbench and CQE: derived",
	},
	{
		.model = "hardkernel-8g", .label = "DUT3 Hardkernel 8GB module (orange PCB)",
		.name = "8GTF4R", .manfid = 0x15, .oemid = 0x0100, .prv = 0x00, .hwrev = 0, .fwrev = 0,
		.serial = 0x2c8e7a01, .date = "11/2016", .capacity_bytes = 15269888ULL * 512,
		.ext_csd_rev = 7, .cache_kib = 256, .rel_wr_param = 0x05, .rel_sectors = 1,
		.cmdq_support = false, .cmdq_depth = 0, .life_a = 2, .life_b = 1, .pre_eol = 1,
		.fw_version = "\x01", .device_version = 0, .bus_mode = "HS200",
		.seq_write_mibs = 45,
		.fs = {.base_s = 419.900, .warmup_s = 1.68, .sd_s = 1.39, .flush_ms = 2.0, .rel_ms = 9.034,
		       .cqe_gain = 0.005, .cqe_rel_ms = 7.0, .cqe_flush_ms = 2.0, .commits = 461},
		.ab = {.seq_read = 140, .seq_read_fua = 140, .rand_read = 20, .rand_read_fua = 20,
		       .sw_mibs = 45, .sw_flush_ms = 5, .sw_rel_ms = 15, .rw_us = 300,
		       .rw_flush_us = 1200, .rw_rel_us = 2500, .cqe_gain = 0.10,
		       .cv_sr = 0.01, .cv_rr = 0.01, .cv_sw = 0.03, .cv_rw = 0.05},
		.calibration = "fscopy fua/cache-nofua: published (DUT3); androbench: derived; no CMDQ",
	},
	{
		.model = "hardkernel-16g", .label = "DUT4 Hardkernel 16GB eMMC 5.0 module (orange PCB, white dot)",
		.name = "AJTD4R", .manfid = 0x15, .oemid = 0x0100, .prv = 0x00, .hwrev = 0, .fwrev = 0,
		.serial = 0x6b11d2c4, .date = "05/2018", .capacity_bytes = 30777344ULL * 512,
		.ext_csd_rev = 7, .cache_kib = 512, .rel_wr_param = 0x05, .rel_sectors = 1,
		.cmdq_support = false, .cmdq_depth = 0, .life_a = 1, .life_b = 1, .pre_eol = 1,
		.fw_version = "\x05", .device_version = 0, .bus_mode = "HS200",
		.seq_write_mibs = 75,
		.fs = {.base_s = 438.648, .warmup_s = 2.12, .sd_s = 0.69, .flush_ms = 2.5, .rel_ms = 3.194,
		       .cqe_gain = 0.005, .cqe_rel_ms = 3.7, .cqe_flush_ms = 2.5, .commits = 461},
		.ab = {.seq_read = 150, .seq_read_fua = 150, .rand_read = 24, .rand_read_fua = 24,
		       .sw_mibs = 75, .sw_flush_ms = 5, .sw_rel_ms = 8, .rw_us = 220,
		       .rw_flush_us = 1000, .rw_rel_us = 1300, .cqe_gain = 0.10,
		       .cv_sr = 0.01, .cv_rr = 0.01, .cv_sw = 0.03, .cv_rw = 0.05},
		.calibration = "fscopy fua/cache-nofua: published (DUT4); androbench: derived; eMMC 5.0, no CMDQ",
	},
	{
		.model = "industrial-8g", .label = "DUT5 Industrial eMMC (CQE-capable host)",
		.name = "Q2J55L", .manfid = 0x13, .oemid = 0x014e, .prv = 0x10, .hwrev = 0, .fwrev = 0,
		.serial = 0x1f2e3d4c, .date = "02/2021", .capacity_bytes = 15269888ULL * 512,
		.ext_csd_rev = 8, .cache_kib = 512, .rel_wr_param = 0x15, .rel_sectors = 1,
		.cmdq_support = true, .cmdq_depth = 32, .life_a = 1, .life_b = 1, .pre_eol = 1,
		.fw_version = "0013\0\0\0\0", .device_version = 0, .bus_mode = "HS400 Enhanced strobe",
		.seq_write_mibs = 120,
		.fs = {.base_s = 418.344, .warmup_s = 16.57, .sd_s = 0.79, .flush_ms = 6.5, .rel_ms = 2.021,
		       .cqe_gain = 0.00498, .cqe_rel_ms = 1.413, .cqe_flush_ms = 6.5, .commits = 461},
		.ab = {.seq_read = 280, .seq_read_fua = 280, .rand_read = 45, .rand_read_fua = 45,
		       .sw_mibs = 120, .sw_flush_ms = 10, .sw_rel_ms = 5, .rw_us = 150,
		       .rw_flush_us = 3000, .rw_rel_us = 900, .cqe_gain = 0.15,
		       .cv_sr = 0.01, .cv_rr = 0.01, .cv_sw = 0.03, .cv_rw = 0.05},
		.calibration = "fscopy all four modes: published (DUT5, warm-up); androbench: derived",
	},
	{
		.model = "sprd-32g", .label = "Unisoc board eMMC 5.1 32GB (sdhci-sprd)",
		.name = "BJTD4R", .manfid = 0x15, .oemid = 0x0100, .prv = 0x05, .hwrev = 0, .fwrev = 0,
		.serial = 0x9a3b2c1d, .date = "09/2021", .capacity_bytes = 61071360ULL * 512,
		.ext_csd_rev = 8, .cache_kib = 1024, .rel_wr_param = 0x15, .rel_sectors = 1,
		.cmdq_support = true, .cmdq_depth = 32, .life_a = 1, .life_b = 1, .pre_eol = 1,
		.fw_version = "\x03", .device_version = 0, .bus_mode = "HS400 Enhanced strobe",
		.seq_write_mibs = 205,
		.fs = {.base_s = 300.0, .warmup_s = 3.0, .sd_s = 1.0, .flush_ms = 1.0, .rel_ms = 5.0,
		       .cqe_gain = 0.005, .cqe_rel_ms = 4.0, .cqe_flush_ms = 1.0, .commits = 461},
		/* Fitted to androbench-sdhci-sprd.csv: rand write 70.32 MiB/s (no FUA) =
		 * 55.6 us per 4 KiB = 40 + 15.6; 12.68 MiB/s (FUA) = 308 us = 40 + 268;
		 * seq write 200.5 vs 149.5 MiB/s over 32 MiB requests. */
		.ab = {.seq_read = 265.74, .seq_read_fua = 257.86, .rand_read = 98.81,
		       .rand_read_fua = 100.2, .sw_mibs = 205.0, .sw_flush_ms = 3.6, .sw_rel_ms = 58.0,
		       .rw_us = 40.0, .rw_flush_us = 15.55, .rw_rel_us = 268.1, .cqe_gain = 0.10,
		       .cv_sr = 0.009, .cv_rr = 0.005, .cv_sw = 0.025, .cv_rw = 0.025},
		.calibration = "androbench: published (sdhci-sprd, queue_fua 0/1); fscopy: derived",
	},
};

bool sim_model_fitted(const struct sim_part *p, const char *workload, bool cqe, const char *metric)
{
	return sim_calib_fitted(p->manfid, p->name, workload, cqe, metric);
}

const struct sim_part *sim_part_find(const char *model)
{
	if (!model)
		return NULL;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(parts); i++)
		if (strcmp(parts[i].model, model) == 0)
			return &parts[i];
	return NULL;
}

const struct sim_part *sim_part_at(size_t i)
{
	return i < LAB_ARRAY_SIZE(parts) ? &parts[i] : NULL;
}

const char *sim_mode_name(struct sim_effmode m)
{
	int mode = lab_mode_from_verified(m.fua, m.cache, m.cqe);
	return mode >= 0 ? lab_mode_name(mode) : "unknown";
}

void sim_human_size(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < LAB_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
	else if (v < 10)
		snprintf(buf, n, "%.2f %s", v, units[u]);
	else if (v < 100)
		snprintf(buf, n, "%.1f %s", v, units[u]);
	else
		snprintf(buf, n, "%.0f %s", v, units[u]);
}

/* ---- timing model ---- */

static double noisy(struct rand_gen *r, double v, double cv)
{
	double x = v * (1.0 + cv * sim_rng_normal(r));
	return x > v * 0.05 ? x : v * 0.05;
}

void sim_model_fscopy(const struct sim_part *p, struct sim_effmode m, bool first, double slow,
		      double scale, struct rand_gen *r, struct sim_fs_result *out)
{
	const struct sim_fs_model *f = &p->fs;
	if (scale <= 0)
		scale = 1.0;
	if (slow <= 0)
		slow = 1.0;
	/* Journal commits: the published 461 on DUT5, +-1 %. */
	long commits = lround(f->commits * scale * (1.0 + 0.01 * sim_rng_normal(r)));
	if (commits < 1)
		commits = 1;
	double base = f->base_s * scale * (m.cqe ? 1.0 - f->cqe_gain : 1.0);
	double flush = m.cqe ? f->cqe_flush_ms : f->flush_ms;
	double rel = m.cqe ? f->cqe_rel_ms : f->rel_ms;
	double cost_s = (m.fua ? rel : flush) / 1000.0;
	double commit_s = commits * cost_s;
	/* The spread and warm-up of this mode (fitted, or the profile's assumption).
	 * The fitted SD is the whole iteration-to-iteration spread: the commit-count
	 * jitter's share is taken out of the normal term so the total stays it. */
	const struct sim_calib_noise *nz =
	    sim_calib_noise(p->manfid, p->name, "fscopy", "wall_time", sim_mode_name(m));
	double sd = nz ? nz->sd : f->sd_s, jit = 0.01 * f->commits * cost_s;
	sd = sd > jit ? sqrt(sd * sd - jit * jit) : 0.0;
	double warm = 0.0;
	if (first) {
		warm = nz ? nz->warmup_s : f->warmup_s;
		if (nz && nz->warmup_sd > 0)
			warm += nz->warmup_sd * sim_rng_normal(r);
		warm = warm > 0 ? warm * scale : 0.0;
	}
	double wall = base + commit_s + warm + sd * sqrt(scale) * sim_rng_normal(r);
	wall *= slow;
	if (wall < 1.0)
		wall = 1.0;
	memset(out, 0, sizeof *out);
	out->wall = wall;
	/* Phase split of the published procedure (mkfs, mount, 3 copies, rm, 3 copies, sync). */
	out->mkfs = wall * 0.012;
	out->mount = wall * 0.0005;
	out->copy1 = wall * (0.44 + 0.004 * sim_rng_normal(r));
	out->rm = wall * 0.07;
	out->copy2 = wall * (0.44 + 0.004 * sim_rng_normal(r));
	out->sync = wall - out->mkfs - out->mount - out->copy1 - out->rm - out->copy2;
	if (out->sync < 0)
		out->sync = 0;
	/* Commands as the kernel issues them (docs/simulator.md): a commit is PREFLUSH|FUA.
	 * FUA on: flush + reliable write.  FUA off: flush + write + flush.
	 * Plus the flushes of sync and umount. */
	if (m.fua) {
		out->rel_writes = commits;
		out->flushes = commits + 3;
	} else {
		out->rel_writes = 0;
		out->flushes = (m.cache ? 2 * commits : 0) + 3;
	}
	out->flush_ms = lround(out->flushes * flush * slow);
}

/* The coefficient of variation of an AndroBench metric in a mode: fitted where
 * published (sim_calib_noise_table), else the profile's assumed `dflt`. */
static double ab_cv(const struct sim_part *p, struct sim_effmode m, const char *metric,
		    double dflt)
{
	const struct sim_calib_noise *nz =
	    sim_calib_noise(p->manfid, p->name, "androbench", metric, sim_mode_name(m));
	return nz ? nz->sd : dflt;
}

void sim_model_androbench(const struct sim_part *p, struct sim_effmode m, double slow,
			  const struct sim_ab_args *a, struct rand_gen *r, struct sim_ab_result *out)
{
	const struct sim_ab_model *b = &p->ab;
	if (slow <= 0)
		slow = 1.0;
	memset(out, 0, sizeof *out);
	double seq_mib = a->seq_mib > 0 ? a->seq_mib : 64;
	double req_mib = a->req_mib > 0 ? a->req_mib : 32;
	long nreq = lround(ceil(seq_mib / req_mib));
	long ios = a->rand_ios > 0 ? a->rand_ios : 4096;
	double cqe = m.cqe ? 1.0 - b->cqe_gain : 1.0;

	out->seq_read = noisy(r, m.fua ? b->seq_read_fua : b->seq_read,
			      ab_cv(p, m, "seq_read", b->cv_sr)) / slow;
	out->rand_read = noisy(r, (m.fua ? b->rand_read_fua : b->rand_read) / cqe,
			       ab_cv(p, m, "rand_read", b->cv_rr)) / slow;

	/* Sequential write: data into the cache, then per request either a
	 * reliable write of its tail or a flush. */
	double req_s = req_mib / b->sw_mibs + (m.fua ? b->sw_rel_ms : b->sw_flush_ms) / 1000.0;
	out->seq_write = noisy(r, req_mib / req_s, ab_cv(p, m, "seq_write", b->cv_sw)) / slow;

	/* Random O_DSYNC 4 KiB writes: each is a FUA write (reliable write, or
	 * write + flush without FUA). */
	double io_us = b->rw_us * cqe + (m.fua ? b->rw_rel_us * (m.cqe ? 0.82 : 1.0) : b->rw_flush_us);
	if (!m.cache)
		io_us = b->rw_us + b->rw_rel_us; /* write through: every write programmed */
	out->rand_write = noisy(r, 4096.0 / (io_us * 1e-6) / 1048576.0,
				ab_cv(p, m, "rand_write", b->cv_rw)) / slow;
	out->rand_read_iops = out->rand_read * 1048576.0 / 4096.0;
	out->rand_write_iops = out->rand_write * 1048576.0 / 4096.0;
	double lat = 1e6 / out->rand_write_iops;
	out->lat_p50_us = lat * (0.92 + 0.02 * sim_rng_normal(r));
	out->lat_p99_us = lat * (2.4 + 0.2 * fabs(sim_rng_normal(r)));
	out->duration_s = seq_mib / out->seq_read + seq_mib / out->seq_write +
			  ios * 4096.0 / 1048576.0 / out->rand_read +
			  ios * 4096.0 / 1048576.0 / out->rand_write + 0.5;
	/* O_DIRECT|O_DSYNC on the raw device: a FUA write then a flush (docs/simulator.md). */
	long fua_ios = ios + nreq;
	if (m.fua) {
		out->rel_writes = fua_ios;
		out->flushes = fua_ios;
	} else {
		out->rel_writes = 0;
		out->flushes = m.cache ? 2 * fua_ios : 0;
	}
	out->flush_ms = lround(out->flushes * (m.fua ? b->rw_flush_us : b->rw_flush_us) / 1000.0 * slow);
}

/* ---- faults ---- */

const char *const sim_fault_names[] = {
	"no-output", "uboot-hang", "panic", "no-login", "garbage", "drop-chars", "bad-crc",
	"pdu-500", "pdu-timeout", "no-power-off", "lose-writes", "slow-part", "mode-stuck",
	"fua-ignored", NULL,
};

double sim_fault_default_value(int id)
{
	switch (id) {
	case FAULT_GARBAGE:
		return 0.002; /* per output byte */
	case FAULT_DROP_CHARS:
		return 0.05;  /* per input character */
	case FAULT_BAD_CRC:
		return 0.2;   /* per agent line */
	case FAULT_LOSE_WRITES:
		return 32;    /* acknowledged records in the volatile cache */
	case FAULT_SLOW_PART:
		return 2.0;   /* timing factor */
	default:
		return 0;
	}
}

int sim_fault_parse(const char *spec, int *id, double *value, bool *has_value, long *count,
		    struct lab_err *e)
{
	char name[64];
	const char *p = spec;
	size_t n = strcspn(p, "=:");
	if (n == 0 || n >= sizeof name)
		return LAB_ERR(e, LAB_EUSAGE, "bad fault '%s'", spec);
	memcpy(name, p, n);
	name[n] = '\0';
	p += n;
	*id = -1;
	for (int i = 0; sim_fault_names[i]; i++)
		if (strcmp(sim_fault_names[i], name) == 0)
			*id = i;
	if (*id < 0) {
		const char *best = NULL;
		int bd = 4;
		for (int i = 0; sim_fault_names[i]; i++) {
			int d = lab_edit_distance(name, sim_fault_names[i]);
			if (d < bd) {
				bd = d;
				best = sim_fault_names[i];
			}
		}
		return LAB_ERR(e, LAB_EUSAGE, "unknown fault '%s'%s%s%s", name,
			       best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
	}
	*value = sim_fault_default_value(*id);
	*has_value = false;
	*count = -1;
	if (*p == '=') {
		p++;
		char num[64];
		size_t m = strcspn(p, ":");
		if (m == 0 || m >= sizeof num)
			return LAB_ERR(e, LAB_EUSAGE, "fault '%s': bad value", spec);
		memcpy(num, p, m);
		num[m] = '\0';
		if (lab_parse_double(num, value) != 0 || *value < 0)
			return LAB_ERR(e, LAB_EUSAGE, "fault '%s': bad value '%s'", spec, num);
		*has_value = true;
		p += m;
	}
	if (*p == ':') {
		int64_t c;
		if (lab_parse_i64(p + 1, &c) != 0 || c < 0)
			return LAB_ERR(e, LAB_EUSAGE, "fault '%s': bad count '%s'", spec, p + 1);
		*count = (long)c;
	} else if (*p) {
		return LAB_ERR(e, LAB_EUSAGE, "bad fault '%s'", spec);
	}
	return LAB_OK;
}
