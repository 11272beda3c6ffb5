/*
 * store_quirks.c - the part identities and power-fail tallies behind the
 * quirk proposal (store_quirks.h).  Reads only.
 */
#include "store_internal.h"
#include "store_quirks.h"

static const char *col(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);
	return t ? (const char *)t : "";
}

int store_part_ids(struct store *s, void (*cb)(const struct store_part_id *p, void *arg),
		   void *arg, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s, "SELECT label, cid, manfid, oemid, name FROM part ORDER BY label, cid", e);
	if (!q)
		return e->rc;
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_part_id p = {col(q, 0), col(q, 1), col(q, 2), col(q, 3), col(q, 4)};
		cb(&p, arg);
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail_infra(s, e, "reading parts");
	return LAB_OK;
}

/* One row per iteration first (its counters or samples), then the sums. */
#define PF_ITER                                                                                    \
	"SELECT j.part_id AS part_id, j.mode AS mode, r.source AS source,"                         \
	" COALESCE((SELECT value FROM counter WHERE iteration_id = i.id AND name = 'acked'),"      \
	"  (SELECT CAST(value AS INTEGER) FROM sample WHERE iteration_id = i.id"                   \
	"   AND metric = 'acked_records'), 0) AS acked,"                                           \
	" COALESCE((SELECT value FROM counter WHERE iteration_id = i.id AND name = 'lost'),"       \
	"  (SELECT CAST(value AS INTEGER) FROM sample WHERE iteration_id = i.id"                   \
	"   AND metric = 'lost_records'), 0) AS lost,"                                             \
	" COALESCE((SELECT value FROM counter WHERE iteration_id = i.id AND name = 'torn'), 0)"    \
	"  AS torn,"                                                                               \
	" COALESCE((SELECT value FROM counter WHERE iteration_id = i.id AND name = 'corrupt'),"    \
	"  (SELECT CAST(value AS INTEGER) FROM sample WHERE iteration_id = i.id"                   \
	"   AND metric = 'corrupt_records'), 0) AS corrupt,"                                       \
	" (SELECT value FROM counter WHERE iteration_id = i.id AND name = 'intact') AS intact"     \
	" FROM iteration i JOIN job j ON j.id = i.job_id JOIN run r ON r.id = j.run_id"            \
	" WHERE i.workload = 'powerfail' AND j.part_id IS NOT NULL AND j.verified_mode = j.mode"

int store_pf_tallies(struct store *s, void (*cb)(const struct store_pf_tally *t, void *arg),
		     void *arg, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT p.label, p.cid, x.mode, x.source, count(*), sum(x.acked),"
		" sum(COALESCE(x.intact, max(x.acked - x.lost - x.torn - x.corrupt, 0))),"
		" sum(x.lost), sum(x.torn), sum(x.corrupt),"
		" sum(x.lost + x.torn + x.corrupt > 0)"
		" FROM (" PF_ITER ") x JOIN part p ON p.id = x.part_id"
		" GROUP BY p.label, p.cid, x.mode, x.source ORDER BY p.label, p.cid, x.mode, x.source",
		e);
	if (!q)
		return e->rc;
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_pf_tally t = {
			col(q, 0), col(q, 1), col(q, 2), col(q, 3),
			sqlite3_column_int64(q, 4), sqlite3_column_int64(q, 5),
			sqlite3_column_int64(q, 6), sqlite3_column_int64(q, 7),
			sqlite3_column_int64(q, 8), sqlite3_column_int64(q, 9),
			sqlite3_column_int64(q, 10),
		};
		cb(&t, arg);
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail_infra(s, e, "reading power-fail outcomes");
	return LAB_OK;
}
