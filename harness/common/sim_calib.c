/*
 * sim_calib.c - the simulator's fitted figures (sim_calib.h).
 *
 * Only these come from published data: the ext4 copy's wall time of DUT1-4
 * without the CQE and of DUT5 in all four modes (fs-copy-benchmark.csv), and
 * the sdhci-sprd part's AndroBench throughput without the CQE
 * (androbench-sdhci-sprd.csv; the IOPS are the same figures in other units).
 * The rest (AndroBench on DUT1-5, the CQE modes of DUT1/DUT2, the ext4 copy's
 * phase split, write latency percentiles) is the model's assumption.  The
 * noise of each fitted cell (spread and warm-up) is fitted to the same
 * published samples as its mean: sim_calib_noise_table below.
 */
#include "sim_calib.h"

#include <stddef.h>
#include <string.h>

#define FS_REF    "results/reference/fs-copy-benchmark.csv"
#define AB_REF    "results/reference/androbench-sdhci-sprd.csv"
#define AB_FITTED "seq_read seq_write rand_read rand_write rand_read_iops rand_write_iops"

const struct sim_calib sim_calib_table[] = {
    {0x88, "NCard", "fscopy", false, "wall_time", FS_REF " (DUT1)"},
    {0x9f, "SG016", "fscopy", false, "wall_time", FS_REF " (DUT2)"},
    {0x15, "8GTF4R", "fscopy", false, "wall_time", FS_REF " (DUT3)"},
    {0x15, "AJTD4R", "fscopy", false, "wall_time", FS_REF " (DUT4)"},
    {0x13, "Q2J55L", "fscopy", false, "wall_time", FS_REF " (DUT5)"},
    {0x13, "Q2J55L", "fscopy", true, "wall_time", FS_REF " (DUT5)"},
    {0x15, "BJTD4R", "androbench", false, AB_FITTED, AB_REF},
    {0, NULL, NULL, false, NULL, NULL},
};

/* Fitted rows: printed by bench/sim_fit.py from the CSVs (SD of the steady
 * runs, warm-up mean and SD over a part's series; CV of the AndroBench runs).
 * No published cell shows a skew beyond two standard errors of the sample
 * skewness (0.91 for five runs, 1.01 for four), so the noise is normal; the
 * one asymmetry the data shows, the slow first iteration, is the warm-up.
 * Assumed rows: the CQE modes of DUT1/DUT2 (no published CQE run) take the
 * spread fitted without the CQE.  Every other cell uses its part profile's
 * assumed spread (sd_s, cv_*: boards/sim/sim_model.c). */
const struct sim_calib_noise sim_calib_noise_table[] = {
    {0x88, "NCard", "fscopy", "wall_time", "cache-nofua", 10.681, 0.00, 0.00, true,
     FS_REF " DUT1 cache-nofua runs 1-5"},
    {0x88, "NCard", "fscopy", "wall_time", "fua", 13.629, 0.00, 0.00, true,
     FS_REF " DUT1 fua runs 1-5"},
    {0x9f, "SG016", "fscopy", "wall_time", "fua", 0.348, 23.16, 0.00, true,
     FS_REF " DUT2 fua runs 2-5"},
    {0x9f, "SG016", "fscopy", "wall_time", "cache-nofua", 2.180, 23.16, 0.00, true,
     FS_REF " DUT2 cache-nofua runs 2-5"},
    {0x15, "8GTF4R", "fscopy", "wall_time", "cache-nofua", 1.780, 1.68, 0.00, true,
     FS_REF " DUT3 cache-nofua runs 2-5"},
    {0x15, "8GTF4R", "fscopy", "wall_time", "fua", 0.830, 1.68, 0.00, true,
     FS_REF " DUT3 fua runs 2-5"},
    {0x15, "AJTD4R", "fscopy", "wall_time", "fua", 0.719, 2.12, 2.26, true,
     FS_REF " DUT4 fua runs 2-5"},
    {0x15, "AJTD4R", "fscopy", "wall_time", "cache-nofua", 0.658, 2.12, 2.26, true,
     FS_REF " DUT4 cache-nofua runs 2-5"},
    {0x13, "Q2J55L", "fscopy", "wall_time", "cache-nofua", 0.723, 16.57, 1.76, true,
     FS_REF " DUT5 cache-nofua runs 2-5"},
    {0x13, "Q2J55L", "fscopy", "wall_time", "cache-nofua-cqe", 1.044, 16.57, 1.76, true,
     FS_REF " DUT5 cache-nofua-cqe runs 2-5"},
    {0x13, "Q2J55L", "fscopy", "wall_time", "fua", 0.493, 16.57, 1.76, true,
     FS_REF " DUT5 fua runs 2-5"},
    {0x13, "Q2J55L", "fscopy", "wall_time", "fua-cqe", 0.797, 16.57, 1.76, true,
     FS_REF " DUT5 fua-cqe runs 2-5"},
    {0x15, "BJTD4R", "androbench", "rand_read", "cache-nofua", 0.00348, 0, 0, true,
     AB_REF " queue_fua=0 rand_read"},
    {0x15, "BJTD4R", "androbench", "rand_read", "fua", 0.01140, 0, 0, true,
     AB_REF " queue_fua=1 rand_read"},
    {0x15, "BJTD4R", "androbench", "rand_write", "cache-nofua", 0.06463, 0, 0, true,
     AB_REF " queue_fua=0 rand_write"},
    {0x15, "BJTD4R", "androbench", "rand_write", "fua", 0.01883, 0, 0, true,
     AB_REF " queue_fua=1 rand_write"},
    {0x15, "BJTD4R", "androbench", "seq_read", "cache-nofua", 0.00813, 0, 0, true,
     AB_REF " queue_fua=0 seq_read"},
    {0x15, "BJTD4R", "androbench", "seq_read", "fua", 0.00965, 0, 0, true,
     AB_REF " queue_fua=1 seq_read"},
    {0x15, "BJTD4R", "androbench", "seq_write", "cache-nofua", 0.02995, 0, 0, true,
     AB_REF " queue_fua=0 seq_write"},
    {0x15, "BJTD4R", "androbench", "seq_write", "fua", 0.02004, 0, 0, true,
     AB_REF " queue_fua=1 seq_write"},
    {0x88, "NCard", "fscopy", "wall_time", "fua-cqe", 13.629, 0.00, 0.00, false,
     "assumed: DUT1 fua's fitted spread (no published CQE run)"},
    {0x88, "NCard", "fscopy", "wall_time", "cache-nofua-cqe", 10.681, 0.00, 0.00, false,
     "assumed: DUT1 cache-nofua's fitted spread (no published CQE run)"},
    {0x9f, "SG016", "fscopy", "wall_time", "fua-cqe", 0.348, 23.16, 0.00, false,
     "assumed: DUT2 fua's fitted spread and warm-up (no published CQE run)"},
    {0x9f, "SG016", "fscopy", "wall_time", "cache-nofua-cqe", 2.180, 23.16, 0.00, false,
     "assumed: DUT2 cache-nofua's fitted spread and warm-up (no published CQE run)"},
    {0, NULL, NULL, NULL, NULL, 0, 0, 0, false, NULL},
};

const struct sim_calib_noise *sim_calib_noise(unsigned manfid, const char *pnm,
                                              const char *workload, const char *metric,
                                              const char *mode)
{
	if (!pnm || !workload || !metric || !mode)
		return NULL;
	for (const struct sim_calib_noise *n = sim_calib_noise_table; n->pnm; n++)
		if (n->manfid == manfid && strcmp(n->pnm, pnm) == 0 &&
		    strcmp(n->workload, workload) == 0 && strcmp(n->metric, metric) == 0 &&
		    strcmp(n->mode, mode) == 0)
			return n;
	return NULL;
}

static bool word_in(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

bool sim_calib_fitted(unsigned manfid, const char *pnm, const char *workload, bool cqe,
                      const char *metric)
{
	if (!pnm || !workload || !metric || !metric[0])
		return false;
	for (const struct sim_calib *c = sim_calib_table; c->pnm; c++)
		if (c->manfid == manfid && strcmp(c->pnm, pnm) == 0 &&
		    strcmp(c->workload, workload) == 0 && c->cqe == cqe &&
		    word_in(c->metrics, metric))
			return true;
	return false;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool sim_calib_fitted_cid(const char *cid, const char *workload, bool cqe, const char *metric)
{
	unsigned char b[16];
	if (!cid || strlen(cid) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		int h = hexval(cid[2 * i]), l = hexval(cid[2 * i + 1]);
		if (h < 0 || l < 0)
			return false;
		b[i] = (unsigned char)(h << 4 | l);
	}
	/* CID: MID, CBX, OID, PNM[6], PRV, PSN[4], MDT, CRC (JEDEC eMMC 5.1, 7.2). */
	char pnm[7];
	memcpy(pnm, b + 3, 6);
	pnm[6] = '\0';
	for (int i = 5; i >= 0 && (pnm[i] == ' ' || pnm[i] == '\0'); i--)
		pnm[i] = '\0';
	return sim_calib_fitted(b[0], pnm, workload, cqe, metric);
}
