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

/*
 * The noise of the timing model, per part, workload, metric and mode: fitted
 * to the published samples (their spread, not only their mean), or assumed
 * where nothing is published.  The simulator draws every iteration with these
 * (boards/sim/sim_model.c); a cell without a row uses the part profile's
 * assumed spread.  bench/sim_fit.py prints the fitted rows from the CSVs.
 *
 * fscopy wall_time: sd is the iteration-to-iteration SD in seconds of the
 * steady iterations (2-5 where the first is a warm-up, else all five), the
 * journal-commit jitter included; warmup_s / warmup_sd the mean and SD of the
 * extra time of the first iteration after preconditioning (one value per part:
 * every published series of a part gives one estimate).  androbench: sd is
 * the coefficient of variation of the five runs; no warm-up.
 */
struct sim_calib_noise {
	unsigned manfid;      /* CID MID */
	const char *pnm;      /* CID PNM */
	const char *workload; /* agent workload */
	const char *metric;   /* the metric drawn (IOPS follow their MiB/s) */
	const char *mode;     /* mode name (mode.h) */
	double sd;            /* seconds (fscopy) or relative (androbench) */
	double warmup_s;      /* fscopy: mean extra of the first iteration after preconditioning */
	double warmup_sd;     /* fscopy: its SD over series */
	bool fitted;          /* false: assumed */
	const char *source;   /* the CSV rows it was fitted to, or what the assumption is */
};
extern const struct sim_calib_noise sim_calib_noise_table[]; /* ends with a NULL pnm */

/* The row for a cell, or NULL (the part profile's assumed spread applies). */
const struct sim_calib_noise *sim_calib_noise(unsigned manfid, const char *pnm,
                                              const char *workload, const char *metric,
                                              const char *mode);

#endif
