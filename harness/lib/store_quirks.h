/*
 * store_quirks.h - the reads `emmclab kernel quirks` and `kernel
 * cover-letter` need beyond the results model (store_quirks.c): the CID
 * fields of every part (the quirk table keys on them) and the power-fail
 * outcomes per part, mode and run source.
 *
 * Row pointers passed to a callback are valid only during the call; a NULL
 * column is "" (never NULL).  LAB_OK or LAB_EINFRA with the database's
 * message.  Loop thread only, like the rest of the store.
 */
#ifndef EMMCLAB_STORE_QUIRKS_H
#define EMMCLAB_STORE_QUIRKS_H

#include <stdint.h>
#include "store.h"

struct store_part_id {
	const char *label, *cid, *manfid, *oemid, *name; /* as the part table holds them */
};
/* Every part, by label then cid. */
int store_part_ids(struct store *s, void (*cb)(const struct store_part_id *p, void *arg),
		   void *arg, struct lab_err *e);

/* The power-fail iterations (workload "powerfail") of jobs whose verified
 * mode is the requested one, summed per (part, mode, run source).  One
 * iteration is one cut.  Per iteration the check's counters are taken
 * (acked, intact, lost, torn, corrupt), falling back to the samples
 * acked_records / lost_records / corrupt_records; intact without a counter
 * is acked - lost - torn - corrupt; torn without a counter is 0. */
struct store_pf_tally {
	const char *part_label, *cid, *mode, *source;
	int64_t cuts, acked, intact, lost, torn, corrupt;
	int64_t cuts_with_loss; /* cuts that lost, tore or corrupted any acknowledged record */
};
int store_pf_tallies(struct store *s, void (*cb)(const struct store_pf_tally *t, void *arg),
		     void *arg, struct lab_err *e);

#endif
