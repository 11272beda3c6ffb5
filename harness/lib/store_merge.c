/*
 * store_merge.c - `emmclab db merge`: copy the runs of another results
 * database into this one (see store_merge() in store.h).
 *
 * The source is ATTACHed and every run whose uuid is new is copied with
 * fresh ids; parts, boards and kernels are matched by identity, so a merge
 * twice is a no-op.  Each run is its own transaction: the database lock is
 * never held for longer than one run's copy, so a nightly writing at the
 * same time waits for a moment, not for the whole merge; and a merge that
 * fails half-way keeps the runs it copied (the next merge copies the rest).
 */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

struct merge {
	struct store *s;
	struct lab_err *e;
};

static int mexec(struct merge *m, const char *sql, int64_t a, int64_t b, const char *what)
{
	sqlite3_stmt *q;
	int r = sqlite3_prepare_v2(store_sqlite(m->s), sql, -1, &q, NULL);
	if (r != SQLITE_OK)
		return store_fail(m->s, m->e, r, what);
	if (sqlite3_bind_parameter_count(q) >= 1)
		sqlite3_bind_int64(q, 1, a);
	if (sqlite3_bind_parameter_count(q) >= 2)
		sqlite3_bind_int64(q, 2, b);
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		;
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail(m->s, m->e, sqlite3_extended_errcode(store_sqlite(m->s)), what);
	return LAB_OK;
}

/* For each id the query yields (old ids not mapped yet), run `find` (may
 * yield the matching new id) or else `insert`, and record old -> new in map. */
static int map_ids(struct merge *m, int64_t run, const char *list_sql, const char *find_sql,
		   const char *insert_sql, const char *map, const char *what)
{
	sqlite3_stmt *l = NULL, *f = NULL, *ins = NULL, *put = NULL;
	char *put_sql = xasprintf("INSERT INTO temp.%s (old, new) VALUES (?1, ?2)", map);
	int rc = LAB_OK, r;
	if (sqlite3_prepare_v2(store_sqlite(m->s), list_sql, -1, &l, NULL) ||
	    sqlite3_prepare_v2(store_sqlite(m->s), find_sql, -1, &f, NULL) ||
	    sqlite3_prepare_v2(store_sqlite(m->s), insert_sql, -1, &ins, NULL) ||
	    sqlite3_prepare_v2(store_sqlite(m->s), put_sql, -1, &put, NULL)) {
		rc = store_fail(m->s, m->e, sqlite3_errcode(store_sqlite(m->s)), what);
		goto out;
	}
	sqlite3_bind_int64(l, 1, run);
	while ((r = sqlite3_step(l)) == SQLITE_ROW) {
		int64_t old = sqlite3_column_int64(l, 0), nw;
		sqlite3_bind_int64(f, 1, old);
		r = sqlite3_step(f);
		if (r == SQLITE_ROW) {
			nw = sqlite3_column_int64(f, 0);
		} else if (r == SQLITE_DONE) {
			sqlite3_bind_int64(ins, 1, old);
			if (sqlite3_step(ins) != SQLITE_DONE) {
				rc = store_fail(m->s, m->e, sqlite3_extended_errcode(store_sqlite(m->s)), what);
				goto out;
			}
			sqlite3_reset(ins);
			nw = sqlite3_last_insert_rowid(store_sqlite(m->s));
		} else {
			rc = store_fail(m->s, m->e, r, what);
			goto out;
		}
		sqlite3_reset(f);
		sqlite3_bind_int64(put, 1, old);
		sqlite3_bind_int64(put, 2, nw);
		if (sqlite3_step(put) != SQLITE_DONE) {
			rc = store_fail(m->s, m->e, sqlite3_extended_errcode(store_sqlite(m->s)), what);
			goto out;
		}
		sqlite3_reset(put);
	}
	if (r != SQLITE_DONE)
		rc = store_fail(m->s, m->e, r, what);
out:
	sqlite3_finalize(l);
	sqlite3_finalize(f);
	sqlite3_finalize(ins);
	sqlite3_finalize(put);
	free(put_sql);
	return rc;
}

#define NEVER "SELECT 1 WHERE 0"

static int merge_run(struct merge *m, int64_t old_run)
{
	int rc;
	if ((rc = mexec(m, "INSERT INTO main.run (uuid, plan, lab, source, started_at, finished_at,"
			   " status, config_json, note) SELECT uuid, plan, lab, source, started_at,"
			   " finished_at, status, config_json, note FROM src.run WHERE id = ?1",
			old_run, 0, "copying a run")))
		return rc;
	int64_t run = sqlite3_last_insert_rowid(store_sqlite(m->s));
	/* mexec runs one statement each. */
	if ((rc = mexec(m, "DELETE FROM temp.m_job", 0, 0, "clearing maps")) ||
	    (rc = mexec(m, "DELETE FROM temp.m_iter", 0, 0, "clearing maps")))
		return rc;
	/* Identity rows are matched, never duplicated. */
	rc = map_ids(m, old_run,
		     "SELECT DISTINCT part_id FROM src.job WHERE run_id = ?1"
		     " AND part_id NOT IN (SELECT old FROM temp.m_part)",
		     "SELECT p.id FROM main.part p, src.part o WHERE o.id = ?1 AND p.label = o.label"
		     " AND p.cid IS o.cid",
		     "INSERT INTO main.part (label, cid, manfid, oemid, name, prv, serial, date, fwrev,"
		     " ext_csd_rev, capacity_bytes, cache_kib, rel_wr_param, rel_sectors, cmdq_support,"
		     " cmdq_depth, ext_csd_hex) SELECT label, cid, manfid, oemid, name, prv, serial,"
		     " date, fwrev, ext_csd_rev, capacity_bytes, cache_kib, rel_wr_param, rel_sectors,"
		     " cmdq_support, cmdq_depth, ext_csd_hex FROM src.part WHERE id = ?1",
		     "m_part", "merging parts");
	if (!rc)
		rc = map_ids(m, old_run,
			     "SELECT DISTINCT board_id FROM (SELECT board_id FROM src.job WHERE run_id = ?1"
			     " UNION SELECT board_id FROM src.event WHERE run_id = ?1"
			     " UNION SELECT board_id FROM src.transcript WHERE run_id = ?1)"
			     " WHERE board_id IS NOT NULL AND board_id NOT IN (SELECT old FROM temp.m_board)",
			     "SELECT b.id FROM main.board b, src.board o WHERE o.id = ?1 AND b.name = o.name",
			     "INSERT INTO main.board (name, type, host, lab) SELECT name, type, host, lab"
			     " FROM src.board WHERE id = ?1",
			     "m_board", "merging boards");
	if (!rc)
		rc = map_ids(m, old_run,
			     "SELECT DISTINCT kernel_id FROM src.job WHERE run_id = ?1 AND kernel_id IS NOT"
			     " NULL AND kernel_id NOT IN (SELECT old FROM temp.m_kernel)",
			     "SELECT k.id FROM main.kernel k, src.kernel o WHERE o.id = ?1 AND"
			     " k.version = o.version AND k.series_hash IS o.series_hash AND"
			     " k.image_sha256 IS o.image_sha256",
			     "INSERT INTO main.kernel (version, series_hash, config_hash, image_sha256)"
			     " SELECT version, series_hash, config_hash, image_sha256 FROM src.kernel"
			     " WHERE id = ?1",
			     "m_kernel", "merging kernels");
	if (rc)
		return rc;
	char *job_ins = xasprintf(
		"INSERT INTO main.job (run_id, board_id, part_id, kernel_id, suite, mode, verified_fua,"
		" verified_write_cache, verified_cqe, verified_mode, verified_by, status, seq,"
		" started_at, finished_at, kernel_cmdline, source_key, cause) SELECT %lld,"
		" (SELECT new FROM temp.m_board WHERE old = j.board_id),"
		" (SELECT new FROM temp.m_part WHERE old = j.part_id),"
		" (SELECT new FROM temp.m_kernel WHERE old = j.kernel_id), suite, mode, verified_fua,"
		" verified_write_cache, verified_cqe, verified_mode, verified_by, status, seq,"
		" started_at, finished_at, kernel_cmdline, source_key, cause FROM src.job j WHERE id = ?1",
		(long long)run);
	rc = map_ids(m, old_run, "SELECT id FROM src.job WHERE run_id = ?1 ORDER BY id", NEVER,
		     job_ins, "m_job", "copying jobs");
	free(job_ins);
	if (!rc)
		rc = map_ids(m, old_run,
			     "SELECT i.id FROM src.iteration i JOIN src.job j ON j.id = i.job_id"
			     " WHERE j.run_id = ?1 ORDER BY i.id", NEVER,
			     "INSERT INTO main.iteration (job_id, workload, n, started_at, duration_s,"
			     " warmup) SELECT (SELECT new FROM temp.m_job WHERE old = i.job_id), workload,"
			     " n, started_at, duration_s, warmup FROM src.iteration i WHERE id = ?1",
			     "m_iter", "copying iterations");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.sample (iteration_id, metric, value, unit, value_text)"
			   " SELECT m.new, s.metric, s.value, s.unit, s.value_text FROM src.sample s"
			   " JOIN temp.m_iter m ON m.old = s.iteration_id ORDER BY s.id",
			   0, 0, "copying samples");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.counter (iteration_id, name, value) SELECT m.new, c.name,"
			   " c.value FROM src.counter c JOIN temp.m_iter m ON m.old = c.iteration_id"
			   " ORDER BY c.id", 0, 0, "copying counters");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.event (run_id, job_id, board_id, at, kind, stage, message)"
			   " SELECT ?2, (SELECT new FROM temp.m_job WHERE old = e.job_id),"
			   " (SELECT new FROM temp.m_board WHERE old = e.board_id), at, kind, stage,"
			   " message FROM src.event e WHERE run_id = ?1 ORDER BY id",
			   old_run, run, "copying events");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.transcript (run_id, job_id, board_id, path, sha256, bytes,"
			   " boot_n) SELECT ?2, (SELECT new FROM temp.m_job WHERE old = t.job_id),"
			   " (SELECT new FROM temp.m_board WHERE old = t.board_id), path, sha256, bytes,"
			   " boot_n FROM src.transcript t WHERE run_id = ?1 ORDER BY id",
			   old_run, run, "copying transcripts");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.artifact (run_id, job_id, kind, path, sha256) SELECT ?2,"
			   " (SELECT new FROM temp.m_job WHERE old = a.job_id), kind, path, sha256"
			   " FROM src.artifact a WHERE run_id = ?1 ORDER BY id",
			   old_run, run, "copying artifacts");
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.import_file (run_id, name, sha256, bytes, layout, header,"
			   " eol, final_eol, exact, imported_at) SELECT ?2, name, sha256, bytes, layout,"
			   " header, eol, final_eol, exact, imported_at FROM src.import_file"
			   " WHERE run_id = ?1", old_run, run, "copying import records");
	return rc;
}

int store_merge(struct store *s, const char *src_path, int *copied, int *skipped,
		struct lab_err *e)
{
	struct store *src;
	struct merge m = {s, e};
	char *a, *b;
	*copied = *skipped = 0;
	/* Recognise the source first: newer, foreign or corrupt files are refused. */
	int rc = store_open(src_path, STORE_READONLY | STORE_AS_IS, &src, e);
	if (rc)
		return rc;
	int v = store_schema_version(src);
	store_close(src);
	if (v != store_schema_version(s))
		return lab_err_set(e, LAB_EUSAGE,
				   "%s is at schema version %d, %s at %d: run `emmclab db migrate --db %s` first",
				   src_path, v, store_path(s), store_schema_version(s), src_path);
	a = realpath(src_path, NULL);
	b = realpath(store_path(s), NULL);
	int same = a && b && strcmp(a, b) == 0;
	free(a);
	free(b);
	if (same)
		return lab_err_set(e, LAB_EUSAGE, "cannot merge %s into itself", src_path);

	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(store_sqlite(s), "ATTACH DATABASE ?1 AS src", -1, &q, NULL) != SQLITE_OK)
		return store_fail(s, e, sqlite3_errcode(store_sqlite(s)), "attach");
	sqlite3_bind_text(q, 1, src_path, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, r, "attaching the source database");
	rc = store_exec(s,
		      "CREATE TEMP TABLE IF NOT EXISTS m_part (old INTEGER PRIMARY KEY, new INTEGER);"
		      "CREATE TEMP TABLE IF NOT EXISTS m_board (old INTEGER PRIMARY KEY, new INTEGER);"
		      "CREATE TEMP TABLE IF NOT EXISTS m_kernel (old INTEGER PRIMARY KEY, new INTEGER);"
		      "CREATE TEMP TABLE IF NOT EXISTS m_job (old INTEGER PRIMARY KEY, new INTEGER);"
		      "CREATE TEMP TABLE IF NOT EXISTS m_iter (old INTEGER PRIMARY KEY, new INTEGER);"
		      "DELETE FROM temp.m_part; DELETE FROM temp.m_board; DELETE FROM temp.m_kernel;",
		      "preparing the merge", e);
	/* The runs to copy, read before the first commit. */
	int64_t *ids = NULL;
	size_t nids = 0, cap = 0;
	if (!rc) {
		r = sqlite3_prepare_v2(store_sqlite(s),
				       "SELECT id, uuid IN (SELECT uuid FROM main.run) FROM src.run"
				       " ORDER BY id", -1, &q, NULL);
		if (r != SQLITE_OK)
			rc = store_fail(s, e, r, "listing runs");
		while (!rc && (r = sqlite3_step(q)) == SQLITE_ROW) {
			if (sqlite3_column_int(q, 1)) {
				(*skipped)++;
				continue;
			}
			if (nids == cap) {
				cap = cap ? cap * 2 : 64;
				ids = xrealloc(ids, cap * sizeof *ids);
			}
			ids[nids++] = sqlite3_column_int64(q, 0);
		}
		if (!rc && r != SQLITE_DONE)
			rc = store_fail(s, e, r, "listing runs");
		sqlite3_finalize(q);
	}
	for (size_t i = 0; i < nids && !rc; i++) {
		if ((rc = store_begin(s, e)))
			break;
		rc = merge_run(&m, ids[i]);
		if (!rc)
			rc = store_commit(s, e);
		else
			store_rollback(s);
		if (!rc)
			(*copied)++;
	}
	free(ids);
	sqlite3_exec(store_sqlite(s), "DETACH DATABASE src", NULL, NULL, NULL);
	if (rc)
		return rc == LAB_EUSAGE ? LAB_EINFRA : rc;
	return LAB_OK;
}
