/*
 * quirks.h - the lab closes the loop: from stored results, propose the
 * entries of the kernel's mmc quirk table (part identity by CID -> avoid
 * FUA, i.e. reliable write) for the parts whose data justifies it, each
 * with its evidence (docs/kernel.md, "Quirk proposal and cover letter").
 *
 * The rule (quirks_decide), for one part:
 *  1. it has power-fail data at all (else "no power-fail data");
 *  2. no acknowledged record was lost, torn or corrupted in any mode, in any
 *     data about it (a loss seen anywhere, even in a simulated run, blocks);
 *  3. at least min_cuts cuts in the modes without FUA from accepted sources;
 *  4. speed: among the FUA-effect cells of the 2x2 (cache-nofua vs fua,
 *     cache-nofua-cqe vs fua-cqe) on the headline metrics from accepted
 *     sources, none is significantly worse without FUA and at least one is
 *     significantly better (Welch p < alpha) by at least min_gain;
 *  5. its CID fields (manfid, oemid, name) are known.
 * Accepted sources: lab runs, and the kinds named in accept (virtual,
 * simulated, imported) - figures from a model or a CSV are never evidence
 * for an upstream table unless asked, and the entry then says so.
 *
 * Library code: no printing except to the FILE * given; no exit.
 */
#ifndef EMMCLAB_QUIRKS_H
#define EMMCLAB_QUIRKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "compare.h"
#include "results.h"
#include "stats.h"
#include "store.h"
#include "util.h"

/* The quirk line's flag; the upstream-form series defines it (docs/kernel.md). */
#define QUIRKS_FIXUP_FLAG "MMC_QUIRK_AVOID_REL_WRITE"

enum quirks_kind_bit { QUIRKS_ACCEPT_VIRTUAL = 1, QUIRKS_ACCEPT_SIMULATED = 2, QUIRKS_ACCEPT_IMPORTED = 4 };

struct quirks_opts {
	double alpha;        /* default 0.05 */
	double min_gain;     /* fraction, default 0.05 */
	int64_t min_cuts;    /* cuts without FUA, default 20 */
	unsigned accept;     /* quirks_kind_bit: kinds accepted beside lab */
	bool exclude_warmup;
};
void quirks_opts_init(struct quirks_opts *o);
/* "virtual,simulated" -> bits; LAB_EUSAGE naming the bad word. */
int quirks_accept_parse(const char *s, unsigned *bits, struct lab_err *e);
/* Whether figures of this source kind (results_source_kind) count as evidence. */
bool quirks_kind_accepted(const struct quirks_opts *o, const char *kind);

/* One FUA-effect cell of the 2x2: b = the mode without FUA vs a = with. */
struct quirks_speed {
	const char *board, *kernel, *workload, *metric, *unit, *kind, *provenance;
	const char *fua_mode, *nofua_mode;
	bool cqe;
	double change, lo, hi, p; /* relative change without FUA (fractions), Welch p */
	size_t na, nb;
	int direction;            /* stats_direction: 1 higher is better, -1 lower */
	enum stats_verdict verdict;
};

/* Power-fail outcomes of one mode from one source kind. */
struct quirks_pf {
	const char *mode, *kind;
	int64_t cuts, acked, intact, lost, torn, corrupt, cuts_with_loss;
};

enum quirks_verdict {
	QUIRKS_PROPOSED,
	QUIRKS_NO_POWERFAIL,   /* no power-fail data at all */
	QUIRKS_LOSS,           /* an acknowledged record lost, torn or corrupt */
	QUIRKS_FEW_CUTS,       /* too few accepted cuts without FUA */
	QUIRKS_NO_SPEED,       /* no accepted FUA-effect cell */
	QUIRKS_SLOWER,         /* significantly slower without FUA somewhere */
	QUIRKS_NOT_SIGNIFICANT,
	QUIRKS_NO_IDENTITY,    /* CID fields unknown */
};
const char *quirks_verdict_name(enum quirks_verdict v);

struct quirks_part {
	const char *label, *cid, *manfid, *oemid, *name; /* never NULL */
	struct quirks_speed *speed;
	size_t nspeed, speed_cap;
	struct quirks_pf *pf;
	size_t npf, pf_cap;
	/* the decision */
	enum quirks_verdict verdict;
	char why[200];                  /* one line, "" when proposed */
	const struct quirks_speed *best; /* the strongest accepted gain (NULL: none) */
	int64_t cuts_nofua, lost_nofua, torn_nofua, corrupt_nofua; /* accepted, modes without FUA */
	int64_t cuts_fua, lost_fua, torn_fua, corrupt_fua;         /* accepted, modes with FUA */
	char kinds[64];                 /* the kinds of the evidence used, e.g. "lab" */
	unsigned long mfid, oem;        /* parsed manfid / oemid (when known) */
};

/* Decide one part from its speed cells and power-fail tallies (the rule above). */
void quirks_decide(struct quirks_part *p, const struct quirks_opts *o);
/* Append a cell or a tally to a part (strings are not copied: they must
 * outlive the part; quirks_build points them into its own storage). */
void quirks_part_add_speed(struct quirks_part *p, const struct quirks_speed *s);
void quirks_part_add_pf(struct quirks_part *p, const struct quirks_pf *t);
void quirks_part_fini(struct quirks_part *p);

struct quirks_result {
	struct quirks_opts opts;
	struct quirks_part *parts; /* by label, then cid */
	size_t nparts;
	size_t nproposed;
	struct results *res;       /* what the speed cells were taken from */
	struct compare_result *cmp;/* by mode, on res */
	void *priv;                /* string pool */
};
/* Load everything from the store (every run), compare the modes and decide
 * every part.  Read-only. */
int quirks_build(struct store *s, const struct quirks_opts *o, struct quirks_result **out,
		 struct lab_err *e);
void quirks_free(struct quirks_result *q);

/* The C text of the proposal: for each proposed part a comment with its
 * evidence, then the MMC_FIXUP initializer line; then one comment line per
 * part not proposed and why.  Every line <= 75 columns (a tab counts 8);
 * data is escaped (control bytes never reach f, "*" "/" never closes a
 * comment early, the name is a valid C string). */
void quirks_render(const struct quirks_result *q, FILE *f);
/* The same for one part (proposed: comment + line; else the one comment). */
void quirks_render_part(const struct quirks_part *p, const struct quirks_opts *o, FILE *f);

#endif
