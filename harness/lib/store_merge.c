/*
 * store_merge.c - `emmclab db merge`: copy the runs of another results
 * database into this one (see store_merge() in store.h).
 *
 * The source is ATTACHed and every run whose uuid is new is copied with
 * fresh ids; parts, boards and kernels are matched by identity, so a merge
 * twice is a no-op.  Each run is its own transaction, or several when its
 * copy would hold the lock for longer than MERGE_HOLD_MS (the run is then
 * 'merging' until the last one): the database lock is never held for long,
 * so a nightly writing at the same time waits for a moment, not for the
 * whole merge; and a merge that fails half-way keeps the runs it copied (the
 * next merge removes a half-copied one and copies the rest).
 *
 * A run is copied with everything it holds: jobs (health flags too),
 * iterations (where each ran: executor, LAVA job URL, worker), samples,
 * counters (the latency histograms are counters), its jobs' part health
 * readings, events, transcripts, artifacts and import records.  Readings
 * whose job was deleted follow their part, once.  Baselines and the upload
 * outbox are the database's own and are not copied.
 *
 * Conflicts (store_merge_report): a run whose uuid is present but whose
 * content differs (a copy taken while it was still running, or an edited
 * database), and a run whose board is known here by name with another type
 * or mmc host, are not copied: each is one line in the report, so the
 * union never silently mixes two versions of a run or two boards.
 */
#include "store_internal.h"
#include "lock.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct merge {
	struct store *s;
	struct lab_err *e;
	const char *src_path;
	struct lab_buf *report; /* conflict lines (NULL: count only) */
	int nconflicts;
	bool conflict;          /* the run being copied has one: roll it back */
	uint64_t held_since;    /* lab_now_ms() when the current transaction began */
};

static void __attribute__((format(printf, 2, 3))) conflict(struct merge *m, const char *fmt, ...)
{
	m->nconflicts++;
	m->conflict = true;
	if (!m->report)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	lab_buf_printf(m->report, "%s\n", line);
}

/* What a run holds, to tell two copies of one uuid apart. */
struct run_print {
	char status[16], finished[32], started[32], plan[64];
	int64_t jobs, iters, samples;
	double total;
};

#define RUN_PRINT(db)                                                                              \
	"SELECT r.status, COALESCE(r.finished_at, ''), COALESCE(r.started_at, ''),"               \
	" COALESCE(r.plan, ''),"                                                                   \
	" (SELECT count(*) FROM " db ".job WHERE run_id = r.id),"                                  \
	" (SELECT count(*) FROM " db ".iteration i JOIN " db ".job j ON j.id = i.job_id"            \
	"  WHERE j.run_id = r.id),"                                                                \
	" (SELECT count(*) FROM " db ".sample s JOIN " db ".iteration i ON i.id = s.iteration_id"  \
	"  JOIN " db ".job j ON j.id = i.job_id WHERE j.run_id = r.id),"                           \
	" (SELECT total(s.value) FROM " db ".sample s JOIN " db ".iteration i"                     \
	"  ON i.id = s.iteration_id JOIN " db ".job j ON j.id = i.job_id WHERE j.run_id = r.id)"  \
	" FROM " db ".run r WHERE r.uuid = ?1"

static int run_print(struct merge *m, const char *sql, const char *uuid, struct run_print *p)
{
	sqlite3_stmt *q;
	memset(p, 0, sizeof *p);
	if (store_prepare_rc(m->s, sql, &q, m->e))
		return m->e->rc;
	sqlite3_bind_text(q, 1, uuid, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		snprintf(p->status, sizeof p->status, "%s", (const char *)sqlite3_column_text(q, 0));
		snprintf(p->finished, sizeof p->finished, "%s", (const char *)sqlite3_column_text(q, 1));
		snprintf(p->started, sizeof p->started, "%s", (const char *)sqlite3_column_text(q, 2));
		snprintf(p->plan, sizeof p->plan, "%s", (const char *)sqlite3_column_text(q, 3));
		p->jobs = sqlite3_column_int64(q, 4);
		p->iters = sqlite3_column_int64(q, 5);
		p->samples = sqlite3_column_int64(q, 6);
		p->total = sqlite3_column_double(q, 7);
	}
	sqlite3_finalize(q);
	return r == SQLITE_ROW || r == SQLITE_DONE ? LAB_OK : store_fail(m->s, m->e, r, "reading a run");
}

/* A uuid present on both sides: the same run, or a conflict. */
static int check_present(struct merge *m, const char *uuid)
{
	struct run_print a, b;
	int rc = run_print(m, RUN_PRINT("main"), uuid, &a);
	if (!rc)
		rc = run_print(m, RUN_PRINT("src"), uuid, &b);
	if (rc)
		return rc;
	if (strcmp(a.status, b.status) == 0 && strcmp(a.finished, b.finished) == 0 &&
	    a.jobs == b.jobs && a.iters == b.iters && a.samples == b.samples && a.total == b.total)
		return LAB_OK;
	conflict(m,
		 "conflict: run %s (plan %s, started %s) differs: here %s, %" PRId64 " jobs, %" PRId64
		 " iterations, %" PRId64 " samples; in %s %s, %" PRId64 " jobs, %" PRId64
		 " iterations, %" PRId64 " samples; kept this database's copy",
		 uuid, a.plan, a.started, a.status, a.jobs, a.iters, a.samples, m->src_path, b.status,
		 b.jobs, b.iters, b.samples);
	m->conflict = false; /* nothing to roll back: the run was never copied */
	return LAB_OK;
}

/* After the boards of a run are mapped: one known here by name with another
 * type or host is a different board (two hosts named theirs alike). */
static int check_boards(struct merge *m, int64_t old_run)
{
	sqlite3_stmt *q;
	if (store_prepare_rc(m->s,
			     "SELECT o.name, COALESCE(b.type, ''), COALESCE(b.host, ''),"
			     " COALESCE(o.type, ''), COALESCE(o.host, ''), r.uuid"
			     " FROM temp.m_board mb JOIN main.board b ON b.id = mb.new"
			     " JOIN src.board o ON o.id = mb.old, src.run r WHERE r.id = ?1"
			     " AND (b.type IS NOT o.type OR b.host IS NOT o.host)"
			     " AND mb.old IN (SELECT board_id FROM src.job WHERE run_id = ?1)"
			     " ORDER BY o.name",
			     &q, m->e))
		return m->e->rc;
	sqlite3_bind_int64(q, 1, old_run);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		conflict(m,
			 "conflict: run %s not copied: board '%s' is type '%s', host '%s' here but"
			 " type '%s', host '%s' in %s (rename one of them)",
			 (const char *)sqlite3_column_text(q, 5), (const char *)sqlite3_column_text(q, 0),
			 (const char *)sqlite3_column_text(q, 1), (const char *)sqlite3_column_text(q, 2),
			 (const char *)sqlite3_column_text(q, 3), (const char *)sqlite3_column_text(q, 4),
			 m->src_path);
	sqlite3_finalize(q);
	return r == SQLITE_DONE ? LAB_OK : store_fail(m->s, m->e, r, "checking boards");
}

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
static int map_ids2(struct merge *m, int64_t run, int64_t arg2, const char *list_sql,
		    const char *find_sql, const char *insert_sql, const char *map, const char *what)
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
	if (sqlite3_bind_parameter_count(l) >= 2)
		sqlite3_bind_int64(l, 2, arg2);
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

static int map_ids(struct merge *m, int64_t run, const char *list_sql, const char *find_sql,
		   const char *insert_sql, const char *map, const char *what)
{
	return map_ids2(m, run, 0, list_sql, find_sql, insert_sql, map, what);
}

#define NEVER "SELECT 1 WHERE 0"

/* A run too big for one short transaction is copied in several (iterations
 * MERGE_CHUNK at a time, the transaction ended after MERGE_HOLD_MS and the
 * lock left free for STORE_YIELD_MS, as import does).  Until its last one
 * commits it is in the database with status 'merging' and its note naming
 * the merging process; a merge that died half-way leaves it so, and the next
 * merge removes it (in batches too) and copies the run again. */
#define MERGE_CHUNK "256" /* iterations, as SQL text */
#define MERGE_HOLD_MS 200
#define MERGING_NOTE "emmclab db merge: pid %lld start %llu boot %39s"

static int hold_check(struct merge *m)
{
	if (lab_now_ms() - m->held_since < MERGE_HOLD_MS)
		return LAB_OK;
	int rc = store_commit_yield(m->s, m->e);
	m->held_since = lab_now_ms();
	return rc;
}

/*
 * Wear readings whose job is gone (part_health.job_id ON DELETE SET NULL)
 * belong to no run: copied for the parts known here by identity, unless an
 * equal reading is here already, so a merge twice adds nothing.  One
 * transaction after the runs'.
 */
static int merge_orphan_health(struct merge *m)
{
	int rc = store_begin(m->s, m->e);
	if (rc)
		return rc;
	rc = mexec(m,
		   "INSERT INTO main.part_health (part_id, job_id, at, phase, life_a, life_b, pre_eol,"
		   " src) SELECT p.id, NULL, h.at, h.phase, h.life_a, h.life_b, h.pre_eol, h.src"
		   " FROM src.part_health h JOIN src.part o ON o.id = h.part_id"
		   " JOIN main.part p ON p.label = o.label AND p.cid IS o.cid"
		   " WHERE h.job_id IS NULL AND NOT EXISTS (SELECT 1 FROM main.part_health x"
		   " WHERE x.part_id = p.id AND x.job_id IS NULL AND x.at = h.at AND x.phase = h.phase"
		   " AND x.life_a IS h.life_a AND x.life_b IS h.life_b AND x.pre_eol IS h.pre_eol"
		   " AND x.src IS h.src) ORDER BY h.id",
		   0, 0, "copying part health without a job");
	if (!rc)
		return store_commit(m->s, m->e);
	store_rollback(m->s);
	return rc;
}

static int merge_run(struct merge *m, int64_t old_run)
{
	int rc;
	struct lock_proc me;
	lock_proc_self(&me);
	char *note = xasprintf(MERGING_NOTE, (long long)me.pid, (unsigned long long)me.start,
			       me.boot_id[0] ? me.boot_id : "-");
	sqlite3_stmt *ins;
	if (store_prepare_rc(m->s,
			     "INSERT INTO main.run (uuid, plan, lab, source, started_at, finished_at,"
			     " status, config_json, note) SELECT uuid, plan, lab, source, started_at,"
			     " finished_at, 'merging', config_json, ?2 FROM src.run WHERE id = ?1",
			     &ins, m->e)) {
		free(note);
		return m->e->rc;
	}
	sqlite3_bind_int64(ins, 1, old_run);
	sqlite3_bind_text(ins, 2, note, -1, SQLITE_TRANSIENT);
	free(note);
	int r = sqlite3_step(ins);
	sqlite3_finalize(ins);
	if (r != SQLITE_DONE)
		return store_fail(m->s, m->e, sqlite3_extended_errcode(store_sqlite(m->s)),
				  "copying a run");
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
		rc = check_boards(m, old_run);
	if (!rc && m->conflict)
		return LAB_OK;
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
		" started_at, finished_at, kernel_cmdline, source_key, cause, health_flag) SELECT %lld,"
		" (SELECT new FROM temp.m_board WHERE old = j.board_id),"
		" (SELECT new FROM temp.m_part WHERE old = j.part_id),"
		" (SELECT new FROM temp.m_kernel WHERE old = j.kernel_id), suite, mode, verified_fua,"
		" verified_write_cache, verified_cqe, verified_mode, verified_by, status, seq,"
		" started_at, finished_at, kernel_cmdline, source_key, cause, health_flag FROM src.job j"
		" WHERE id = ?1",
		(long long)run);
	rc = map_ids(m, old_run, "SELECT id FROM src.job WHERE run_id = ?1 ORDER BY id", NEVER,
		     job_ins, "m_job", "copying jobs");
	free(job_ins);
	/* Iterations MERGE_CHUNK at a time, each chunk with its samples and
	 * counters, in id order as before; `last` is the chunk's start.  The
	 * plans are forced (`+`, CROSS JOIN): left to itself SQLite scanned the
	 * run's every iteration, sample and counter for each chunk (a 1.78
	 * million sample run took 8 minutes instead of 4 s). */
	for (int64_t last = 0; !rc;) {
		rc = map_ids2(m, old_run, last,
			      /* a rowid range scan from the last chunk on, not the whole
			       * run's iterations sorted again for every chunk */
			      "SELECT i.id FROM src.iteration i WHERE i.id > ?2 AND +i.job_id IN"
			      " (SELECT id FROM src.job WHERE run_id = ?1) ORDER BY i.id LIMIT "
			      MERGE_CHUNK,
			      NEVER,
			      "INSERT INTO main.iteration (job_id, workload, n, started_at, duration_s,"
			      " warmup, executor, job_url, worker) SELECT (SELECT new FROM temp.m_job"
			      " WHERE old = i.job_id), workload, n, started_at, duration_s, warmup,"
			      " executor, job_url, worker FROM src.iteration i WHERE id = ?1",
			      "m_iter", "copying iterations");
		int64_t top = last;
		sqlite3_stmt *q;
		if (!rc && !store_prepare_rc(m->s, "SELECT COALESCE(max(old), 0) FROM temp.m_iter", &q,
					     m->e)) {
			if (sqlite3_step(q) == SQLITE_ROW)
				top = sqlite3_column_int64(q, 0);
			sqlite3_finalize(q);
		} else if (!rc) {
			rc = m->e->rc;
		}
		if (rc || top == last)
			break;
		rc = mexec(m,
			   "INSERT INTO main.sample (iteration_id, metric, value, unit, value_text)"
			   " SELECT m.new, s.metric, s.value, s.unit, s.value_text FROM temp.m_iter m"
			   " CROSS JOIN src.sample s ON s.iteration_id = m.old WHERE m.old > ?1"
			   " ORDER BY s.id",
			   last, 0, "copying samples");
		if (!rc)
			rc = mexec(m,
				   "INSERT INTO main.counter (iteration_id, name, value) SELECT m.new,"
				   " c.name, c.value FROM temp.m_iter m CROSS JOIN src.counter c"
				   " ON c.iteration_id = m.old WHERE m.old > ?1 ORDER BY c.id",
				   last, 0, "copying counters");
		last = top;
		if (!rc)
			rc = hold_check(m);
	}
	/* The run's wear readings: the part is the job's (store_health_write), so
	 * it is mapped already; the jobs are new, so none of these is here yet. */
	if (!rc)
		rc = mexec(m,
			   "INSERT INTO main.part_health (part_id, job_id, at, phase, life_a, life_b,"
			   " pre_eol, src) SELECT mp.new, mj.new, h.at, h.phase, h.life_a, h.life_b,"
			   " h.pre_eol, h.src FROM src.part_health h JOIN temp.m_job mj ON mj.old = h.job_id"
			   " JOIN temp.m_part mp ON mp.old = h.part_id ORDER BY h.id",
			   0, 0, "copying part health");
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
	/* the last transaction of the run makes it what it was */
	if (!rc)
		rc = mexec(m,
			   "UPDATE main.run SET (status, note) = (SELECT status, note FROM src.run"
			   " WHERE id = ?1) WHERE id = ?2",
			   old_run, run, "finishing a run");
	return rc;
}

/* A run left 'merging' by a merge that died: removed, iterations MERGE_CHUNK
 * at a time (their samples and counters go with them).  One still being
 * merged by a live process is left alone: *busy is set. */
static int drop_partial(struct merge *m, const char *uuid, bool *busy)
{
	*busy = false;
	sqlite3_stmt *q;
	if (store_prepare_rc(m->s, "SELECT id, COALESCE(note, '') FROM main.run WHERE uuid = ?1"
				   " AND status = 'merging'", &q, m->e))
		return m->e->rc;
	sqlite3_bind_text(q, 1, uuid, -1, SQLITE_TRANSIENT);
	int64_t id = 0;
	struct lock_proc p = {0};
	if (sqlite3_step(q) == SQLITE_ROW) {
		id = sqlite3_column_int64(q, 0);
		long long pid = 0;
		unsigned long long start = 0;
		char boot[40] = "";
		if (sscanf((const char *)sqlite3_column_text(q, 1), MERGING_NOTE, &pid, &start,
			   boot) == 3) {
			p.pid = pid;
			p.start = start;
			if (strcmp(boot, "-") != 0)
				lab_strlcpy(p.boot_id, boot, sizeof p.boot_id);
		}
	}
	sqlite3_finalize(q);
	if (!id)
		return LAB_OK;
	struct lock_proc me;
	lock_proc_self(&me);
	if (p.pid > 0 && p.pid != me.pid && lock_proc_alive(&p)) {
		*busy = true;
		return LAB_OK;
	}
	int rc;
	for (;;) {
		if ((rc = mexec(m,
				"DELETE FROM main.iteration WHERE id IN (SELECT i.id FROM main.iteration i"
				" JOIN main.job j ON j.id = i.job_id WHERE j.run_id = ?1 LIMIT " MERGE_CHUNK ")",
				id, 0, "removing a half-merged run")))
			return rc;
		if (sqlite3_changes(store_sqlite(m->s)) == 0)
			break;
		if ((rc = hold_check(m)))
			return rc;
	}
	return mexec(m, "DELETE FROM main.run WHERE id = ?1", id, 0, "removing a half-merged run");
}

int store_merge(struct store *s, const char *src_path, int *copied, int *skipped,
		struct lab_err *e)
{
	int nconflicts;
	return store_merge_report(s, src_path, copied, skipped, &nconflicts, NULL, e);
}

int store_merge_report(struct store *s, const char *src_path, int *copied, int *skipped,
		       int *nconflicts, struct lab_buf *report, struct lab_err *e)
{
	struct store *src;
	struct merge m = {s, e, src_path, report, 0, false, 0};
	char *a, *b;
	*copied = *skipped = *nconflicts = 0;
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
	char **uuids = NULL;
	size_t nids = 0, cap = 0;
	if (!rc) {
		r = sqlite3_prepare_v2(store_sqlite(s),
				       "SELECT id, uuid IN (SELECT uuid FROM main.run WHERE status !="
				       " 'merging'), uuid, status = 'merging' FROM src.run ORDER BY id",
				       -1, &q, NULL);
		if (r != SQLITE_OK)
			rc = store_fail(s, e, r, "listing runs");
		while (!rc && (r = sqlite3_step(q)) == SQLITE_ROW) {
			if (sqlite3_column_int(q, 3)) { /* half a run: its copy would stay so */
				conflict(&m, "run %s not copied: it is still being merged into %s",
					 (const char *)sqlite3_column_text(q, 2), src_path);
				m.conflict = false;
				continue;
			}
			if (sqlite3_column_int(q, 1)) {
				(*skipped)++;
				rc = check_present(&m, (const char *)sqlite3_column_text(q, 2));
				continue;
			}
			if (nids == cap) {
				cap = cap ? cap * 2 : 64;
				ids = xrealloc(ids, cap * sizeof *ids);
				uuids = xrealloc(uuids, cap * sizeof *uuids);
			}
			uuids[nids] = xstrdup((const char *)sqlite3_column_text(q, 2));
			ids[nids++] = sqlite3_column_int64(q, 0);
		}
		if (!rc && r != SQLITE_DONE)
			rc = store_fail(s, e, r, "listing runs");
		sqlite3_finalize(q);
	}
	for (size_t i = 0; i < nids && !rc; i++) {
		/* one run a transaction, the lock left free for a moment in between */
		if (i > 0) {
			struct timespec ts = {0, STORE_YIELD_MS * 1000000L};
			nanosleep(&ts, NULL);
		}
		if ((rc = store_begin(s, e)))
			break;
		m.held_since = lab_now_ms();
		m.conflict = false;
		/* another merge may have copied it since the list was read */
		int present = 0;
		if (!store_prepare_rc(s, "SELECT count(*) FROM main.run WHERE uuid = ?1 AND status !="
					 " 'merging'", &q, e)) {
			sqlite3_bind_text(q, 1, uuids[i], -1, SQLITE_TRANSIENT);
			if (sqlite3_step(q) == SQLITE_ROW)
				present = sqlite3_column_int(q, 0);
			sqlite3_finalize(q);
		} else {
			rc = e->rc;
		}
		if (!rc && present) {
			(*skipped)++;
			rc = check_present(&m, uuids[i]);
			m.conflict = false;
			store_rollback(s);
			continue;
		}
		if (rc) {
			store_rollback(s);
			break;
		}
		bool busy = false;
		if ((rc = drop_partial(&m, uuids[i], &busy))) {
			store_rollback(s);
			break;
		}
		if (busy) {
			store_rollback(s);
			conflict(&m, "run %s not copied: another `emmclab db merge` is copying it now",
				 uuids[i]);
			continue;
		}
		rc = merge_run(&m, ids[i]);
		if (!rc && m.conflict) {
			store_rollback(s); /* reported, not copied */
			continue;
		}
		if (!rc)
			rc = store_commit(s, e);
		else
			store_rollback(s);
		if (!rc)
			(*copied)++;
	}
	if (!rc)
		rc = merge_orphan_health(&m);
	*nconflicts = m.nconflicts;
	for (size_t i = 0; i < nids; i++)
		free(uuids[i]);
	free(uuids);
	free(ids);
	sqlite3_exec(store_sqlite(s), "DETACH DATABASE src", NULL, NULL, NULL);
	if (rc)
		return rc == LAB_EUSAGE ? LAB_EINFRA : rc;
	return LAB_OK;
}
