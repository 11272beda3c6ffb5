/*
 * sim_calib.c - the simulator's fitted figures (sim_calib.h).
 *
 * Only these come from published data: the ext4 copy's wall time of DUT1-4
 * without the CQE and of DUT5 in all four modes (fs-copy-benchmark.csv), and
 * the sdhci-sprd part's AndroBench throughput without the CQE
 * (androbench-sdhci-sprd.csv; the IOPS are the same figures in other units).
 * The rest (AndroBench on DUT1-5, the CQE modes of DUT1/DUT2, the ext4 copy's
 * phase split, write latency percentiles) is the model's assumption.
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
