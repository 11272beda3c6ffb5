/*
 * sim_calib.h - which figures of the simulator (boards/sim) are fitted to
 * published data (results/reference) and which are the model's assumptions.
 *
 * Shared by the simulator (whose timing constants follow this table) and the
 * controller, which marks every simulated figure in its outputs
 * (docs/reports.md, "Provenance").  A part is named by what its CID says
 * (manufacturer id and product name), so a stored run knows it without the
 * lab file.  Plain libc, no state.
 */
#ifndef EMMCLAB_SIM_CALIB_H
#define EMMCLAB_SIM_CALIB_H

#include <stdbool.h>

struct sim_calib {
	unsigned manfid;      /* CID MID */
	const char *pnm;      /* CID PNM, trailing blanks trimmed */
	const char *workload; /* agent workload */
	bool cqe;             /* the modes with the CQE on (else the ones without) */
	const char *metrics;  /* the fitted metrics, one blank between them */
	const char *ref;      /* where the published figures are */
};
extern const struct sim_calib sim_calib_table[]; /* ends with a NULL pnm */

/* True when the simulator's `metric` of `workload` on the part, in a mode with
 * (cqe) or without the CQE, is fitted to published data; false: assumed. */
bool sim_calib_fitted(unsigned manfid, const char *pnm, const char *workload, bool cqe,
                      const char *metric);
/* The same for a part named by its CID (32 hex digits, as sysfs shows it);
 * false when the CID is missing or malformed. */
bool sim_calib_fitted_cid(const char *cid, const char *workload, bool cqe, const char *metric);

#endif
