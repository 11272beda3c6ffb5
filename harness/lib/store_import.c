/*
 * store_import.c - storing scanned CSV files (csv.h) as runs of source
 * 'import:<name>', each file recorded in `import_file` with the hash of its
 * bytes and of its rows, so that the same data imported again is refused
 * however it was re-saved, and `db export --layout original` can give the
 * file back.  See store_csv.h.
 *
 * The rows come from the file's scratch (csv_each_row), never all in memory,
 * and are written in transactions of IMPORT_BATCH samples, so a long import
 * holds the write lock for short stretches only.  The run stays 'running'
 * (with this process's pid and host in config_json) until its last sample
 * is in; a failure deletes it, and a later import deletes one whose process
 * died.  So an import is stored whole or not at all.
 */
#include "store_csv.h"
#include "store_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A transaction ends after IMPORT_HOLD_MS or IMPORT_BATCH samples, whichever comes
 * first, and the lock is then left free for STORE_YIELD_MS (store_commit_yield): a
 * writer polling for it gets in within a few of its polls, and the pauses cost the
 * import a fifth of its time at most. */
#define IMPORT_BATCH 50000
#define IMPORT_HOLD_MS 200

static int step_reset(struct store *s, sqlite3_stmt *q, const char *what, struct lab_err *e)
{
	int r = sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (r != SQLITE_DONE && r != SQLITE_ROW)
		return store_fail_infra(s, e, what);
	return LAB_OK;
}

/* Run id of an earlier import whose `col` is `hash`, 0 when none. */
static int import_find(struct store *s, const char *col, const char *hash, int64_t *run_id,
		       struct lab_err *e)
{
	sqlite3_stmt *q;
	*run_id = 0;
	char *sql = xasprintf("SELECT run_id FROM import_file WHERE %s = ?1 ORDER BY run_id LIMIT 1",
			      col);
	int rc = store_prepare_rc(s, sql, &q, e);
	free(sql);
	if (rc)
		return rc;
	sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*run_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return store_fail_infra(s, e, "looking up earlier imports");
	return LAB_OK;
}

/* Content hashes of imports made before schema 4 (or merged), from their samples:
 * the same normalised rows csv.c hashes. */
static int backfill_content(struct store *s, struct lab_err *e)
{
	sqlite3_stmt *runs, *rows, *upd;
	int rc = store_prepare_rc(s, "SELECT run_id, layout FROM import_file WHERE content_sha256 IS NULL",
				  &runs, e);
	if (rc)
		return rc;
	rc = store_prepare_rc(s,
			      "SELECT p.label, b.name, b.host, j.mode, sm.metric, i.n, sm.value"
			      " FROM job j JOIN part p ON p.id = j.part_id"
			      " LEFT JOIN board b ON b.id = j.board_id"
			      " JOIN iteration i ON i.job_id = j.id"
			      " JOIN sample sm ON sm.iteration_id = i.id WHERE j.run_id = ?1",
			      &rows, e);
	if (rc) {
		sqlite3_finalize(runs);
		return rc;
	}
	rc = store_prepare_rc(s, "UPDATE import_file SET content_sha256 = ?2 WHERE run_id = ?1", &upd, e);
	int r;
	while (rc == LAB_OK && (r = sqlite3_step(runs)) == SQLITE_ROW) {
		int64_t run = sqlite3_column_int64(runs, 0);
		const char *layout = (const char *)sqlite3_column_text(runs, 1);
		struct csv_content c = {0};
		sqlite3_bind_int64(rows, 1, run);
		while ((r = sqlite3_step(rows)) == SQLITE_ROW)
			csv_content_add(&c, (const char *)sqlite3_column_text(rows, 0),
					(const char *)sqlite3_column_text(rows, 1),
					(const char *)sqlite3_column_text(rows, 2),
					(const char *)sqlite3_column_text(rows, 3),
					(const char *)sqlite3_column_text(rows, 4),
					sqlite3_column_int(rows, 5), sqlite3_column_double(rows, 6));
		sqlite3_reset(rows);
		if (r != SQLITE_DONE) {
			rc = store_fail_infra(s, e, "reading an earlier import");
			break;
		}
		char hex[65];
		csv_content_hex(&c, layout ? layout : "", hex);
		sqlite3_bind_int64(upd, 1, run);
		sqlite3_bind_text(upd, 2, hex, -1, SQLITE_TRANSIENT);
		rc = step_reset(s, upd, "recording the content hash of an earlier import", e);
	}
	sqlite3_finalize(runs);
	sqlite3_finalize(rows);
	sqlite3_finalize(upd);
	return rc;
}

static int delete_run(struct store *s, int64_t run_id, struct lab_err *e)
{
	sqlite3_stmt *q;
	int rc = store_prepare_rc(s, "DELETE FROM run WHERE id = ?1", &q, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(q, 1, run_id);
	rc = step_reset(s, q, "removing an unfinished import", e);
	sqlite3_finalize(q);
	return rc;
}

/* Imports left 'running' by a process of this host that is gone: half-written, removed. */
static int reap_dead_imports(struct store *s, const char *host, struct lab_err *e)
{
	sqlite3_stmt *q;
	int rc = store_prepare_rc(s,
				  "SELECT id, json_extract(config_json, '$.pid') FROM run"
				  " WHERE status = 'running' AND source LIKE 'import:%'"
				  " AND json_valid(config_json) AND json_extract(config_json, '$.host') = ?1",
				  &q, e);
	if (rc)
		return rc;
	sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
	int64_t dead[64];
	size_t n = 0;
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW && n < LAB_ARRAY_SIZE(dead)) {
		pid_t pid = (pid_t)sqlite3_column_int64(q, 1);
		if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
			dead[n++] = sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return store_fail_infra(s, e, "looking for unfinished imports");
	for (size_t i = 0; i < n && rc == LAB_OK; i++)
		rc = delete_run(s, dead[i], e);
	return rc;
}

enum { Q_BOARD_INS, Q_BOARD_ID, Q_JOB_IMPORTED, Q_ITER, Q_SAMPLE, Q_FILE, Q_N };

static const char *const import_sql[Q_N] = {
	/* An import never rewrites a lab board's description. */
	[Q_BOARD_INS] = "INSERT OR IGNORE INTO board (name, host) VALUES (?1, ?2)",
	[Q_BOARD_ID] = "SELECT id FROM board WHERE name = ?1",
	[Q_JOB_IMPORTED] = "UPDATE job SET status = 'ok', finished_at = started_at,"
			   " source_key = ?2 WHERE id = ?1",
	[Q_ITER] = "INSERT INTO iteration (job_id, workload, n, warmup) VALUES (?1, ?2, ?3, 0)",
	[Q_SAMPLE] = "INSERT INTO sample (iteration_id, metric, value, unit, value_text)"
		     " VALUES (?1, ?2, ?3, ?4, ?5)",
	[Q_FILE] = "INSERT INTO import_file (run_id, name, sha256, bytes, layout, header, eol,"
		   " final_eol, exact, imported_at, content_sha256)"
		   " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
};

struct importer {
	struct store *s;
	struct csv_file *f;
	sqlite3_stmt **q;
	int64_t run_id;
	int seq;
	size_t in_batch;
	struct timespec batch_start;
	const char *unit, *workload;
	struct lab_err *e;
};

static int new_job(struct importer *im, const struct csv_row *r, int64_t *job)
{
	struct store *s = im->s;
	sqlite3_stmt **q = im->q;
	struct store_part p;
	int64_t part_id, board_id = 0;
	int rc;
	store_part_init(&p);
	p.label = r->label;
	if ((rc = store_part_upsert(s, &p, &part_id, im->e)))
		return rc;
	if (r->board) {
		sqlite3_bind_text(q[Q_BOARD_INS], 1, r->board, -1, SQLITE_STATIC);
		sqlite3_bind_text(q[Q_BOARD_INS], 2, r->host, -1, SQLITE_STATIC);
		if ((rc = step_reset(s, q[Q_BOARD_INS], "adding a board", im->e)))
			return rc;
		sqlite3_bind_text(q[Q_BOARD_ID], 1, r->board, -1, SQLITE_STATIC);
		if (sqlite3_step(q[Q_BOARD_ID]) == SQLITE_ROW)
			board_id = sqlite3_column_int64(q[Q_BOARD_ID], 0);
		if ((rc = step_reset(s, q[Q_BOARD_ID], "finding a board", im->e)))
			return rc;
	}
	struct store_job_info ji = {.run_id = im->run_id, .board_id = board_id, .part_id = part_id,
				    .suite = im->workload, .mode = r->mode, .seq = im->seq++};
	if ((rc = store_job_begin(s, &ji, job, im->e)))
		return rc;
	sqlite3_bind_int64(q[Q_JOB_IMPORTED], 1, *job);
	sqlite3_bind_text(q[Q_JOB_IMPORTED], 2, r->key, -1, SQLITE_STATIC);
	return step_reset(s, q[Q_JOB_IMPORTED], "marking a job imported", im->e);
}

/* How long the current transaction has held the write lock. */
static int64_t held_ms(const struct importer *im)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - im->batch_start.tv_sec) * 1000 +
	       (now.tv_nsec - im->batch_start.tv_nsec) / 1000000;
}

static int import_row(const struct csv_row *r, void *arg)
{
	struct importer *im = arg;
	sqlite3_stmt **q = im->q;
	int64_t job, it;
	int rc = LAB_OK;
	/* jobs and iterations by key, in the scratch: memory does not grow with the file */
	char *gk = xasprintf("g:%" PRId64 ":%s", im->run_id, r->group); /* a file may be imported twice */
	int found = csv_id_get(im->f, gk, &job, im->e);
	if (found == 0) {
		rc = new_job(im, r, &job);
		if (rc == LAB_OK)
			rc = csv_id_put(im->f, gk, job, im->e);
	}
	free(gk);
	if (found < 0)
		return LAB_EINFRA;
	if (rc)
		return rc;
	char ik[48];
	snprintf(ik, sizeof ik, "i:%" PRId64 "/%d", job, r->run);
	found = csv_id_get(im->f, ik, &it, im->e);
	if (found < 0)
		return LAB_EINFRA;
	if (found == 0) {
		sqlite3_bind_int64(q[Q_ITER], 1, job);
		sqlite3_bind_text(q[Q_ITER], 2, im->workload, -1, SQLITE_STATIC);
		sqlite3_bind_int(q[Q_ITER], 3, r->run);
		if ((rc = step_reset(im->s, q[Q_ITER], "adding an iteration", im->e)))
			return rc;
		it = sqlite3_last_insert_rowid(store_sqlite(im->s));
		if ((rc = csv_id_put(im->f, ik, it, im->e)))
			return rc;
	}
	sqlite3_bind_int64(q[Q_SAMPLE], 1, it);
	sqlite3_bind_text(q[Q_SAMPLE], 2, r->metric, -1, SQLITE_STATIC);
	sqlite3_bind_double(q[Q_SAMPLE], 3, r->value);
	sqlite3_bind_text(q[Q_SAMPLE], 4, im->unit, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_SAMPLE], 5, r->value_text, -1, SQLITE_STATIC);
	if ((rc = step_reset(im->s, q[Q_SAMPLE], "adding a sample", im->e)))
		return rc;
	/* short transactions: other writers (a nightly run) get the lock in between */
	if (++im->in_batch == 1)
		clock_gettime(CLOCK_MONOTONIC, &im->batch_start);
	if (im->in_batch >= IMPORT_BATCH || (im->in_batch % 256 == 0 && held_ms(im) >= IMPORT_HOLD_MS)) {
		im->in_batch = 0;
		if ((rc = store_commit_yield(im->s, im->e)))
			return rc;
	}
	return LAB_OK;
}

/* The run and its import_file row, in one short transaction with the duplicate check. */
static int import_start(struct store *s, struct csv_file *f, const struct store_import_opts *o,
			sqlite3_stmt **q, const char *host, int64_t *out_run, struct lab_err *e)
{
	/* kept even when this import is refused: it is a fact about the old ones */
	int rc = store_begin(s, e);
	if (rc)
		return rc;
	if ((rc = backfill_content(s, e)) || (rc = store_commit(s, e)))
		goto fail;
	if ((rc = store_begin(s, e)))
		return rc;
	int64_t prev = 0;
	if (!(o && o->force)) {
		if ((rc = import_find(s, "content_sha256", f->content_sha256, &prev, e)))
			goto fail;
		if (prev) {
			int64_t same_bytes = 0;
			if ((rc = import_find(s, "sha256", f->sha256, &same_bytes, e)))
				goto fail;
			rc = lab_err_set(e, LAB_EUSAGE,
					 "%s: already imported as run %" PRId64 " (%s); use --force to "
					 "import it again",
					 f->name, prev,
					 same_bytes == prev ? "same sha256"
							    : "the same rows, re-saved: line ends, "
							      "comments, quoting or order differ");
			goto fail;
		}
	}
	char *source = xasprintf("import:%s", f->name);
	char *cfg = xasprintf("{\"import\": true, \"pid\": %ld, \"host\": \"%s\"}", (long)getpid(),
			      host);
	struct store_run_info ri = {.source = source, .note = f->comments, .config_json = cfg};
	rc = store_run_begin(s, &ri, out_run, e);
	free(source);
	free(cfg);
	if (rc)
		goto fail;
	char now[32];
	lab_utc_iso(now, sizeof now, (int64_t)time(NULL));
	sqlite3_bind_int64(q[Q_FILE], 1, *out_run);
	sqlite3_bind_text(q[Q_FILE], 2, f->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 3, f->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q[Q_FILE], 4, (int64_t)f->bytes);
	sqlite3_bind_text(q[Q_FILE], 5, csv_layout_name(f->layout), -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 6, f->header, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 7, f->crlf ? "CRLF" : "LF", -1, SQLITE_STATIC);
	sqlite3_bind_int(q[Q_FILE], 8, f->final_eol);
	sqlite3_bind_int(q[Q_FILE], 9, f->exact);
	sqlite3_bind_text(q[Q_FILE], 10, now, -1, SQLITE_STATIC);
	sqlite3_bind_text(q[Q_FILE], 11, f->content_sha256, -1, SQLITE_STATIC);
	if ((rc = step_reset(s, q[Q_FILE], "recording the imported file", e)))
		goto fail;
	return store_commit(s, e);
fail:
	store_rollback(s);
	return rc;
}

static int import_rows(struct store *s, struct csv_file *f, sqlite3_stmt **q, int64_t run_id,
		       struct lab_err *e)
{
	struct importer im = {.s = s, .f = f, .q = q, .run_id = run_id, .e = e,
			      .unit = f->layout == CSV_ANDROBENCH ? "MiB/s" : "s",
			      .workload = csv_layout_name(f->layout)};
	int rc = store_begin(s, e);
	if (rc)
		return rc;
	rc = csv_each_row(f, import_row, &im, e);
	if (rc == LAB_OK)
		rc = store_run_finish(s, run_id, "complete", e);
	if (rc == LAB_OK)
		return store_commit(s, e);
	store_rollback(s);
	return rc;
}

int store_import(struct store *s, struct csv_file *const *files, size_t n,
		 const struct store_import_opts *o, int64_t *run_ids, struct lab_err *e)
{
	for (size_t i = 0; i < n && !(o && o->force); i++)
		for (size_t k = 0; k < i; k++)
			if (strcmp(files[k]->content_sha256, files[i]->content_sha256) == 0)
				return lab_err_set(e, LAB_EUSAGE, "%s and %s hold the same rows%s",
						   files[k]->name, files[i]->name,
						   strcmp(files[k]->sha256, files[i]->sha256)
							   ? ""
							   : " (they are the same file)");
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	for (char *p = host; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_'; /* it goes into JSON text */
	int rc = store_begin(s, e);
	if (rc == LAB_OK && (rc = reap_dead_imports(s, host, e)) == LAB_OK)
		rc = store_commit(s, e);
	else
		store_rollback(s);
	if (rc)
		return rc;
	sqlite3_stmt *q[Q_N] = {0};
	for (int i = 0; i < Q_N && rc == LAB_OK; i++)
		rc = store_prepare_rc(s, import_sql[i], &q[i], e);
	int64_t *done = xcalloc(n + 1, sizeof *done);
	size_t ndone = 0;
	for (size_t i = 0; i < n && rc == LAB_OK; i++) {
		int64_t id = 0;
		rc = import_start(s, files[i], o, q, host, &id, e);
		if (rc == LAB_OK) {
			done[ndone++] = id; /* from here on, a failure must remove it */
			rc = import_rows(s, files[i], q, id, e);
		}
		if (run_ids)
			run_ids[i] = rc ? 0 : id;
	}
	for (int i = 0; i < Q_N; i++)
		sqlite3_finalize(q[i]);
	if (rc && ndone) {
		/* all or nothing: the files stored before this one go too */
		struct lab_err e2 = {0};
		int rc2 = store_begin(s, &e2);
		for (size_t i = 0; i < ndone && rc2 == LAB_OK; i++)
			rc2 = delete_run(s, done[i], &e2);
		if (rc2 == LAB_OK)
			rc2 = store_commit(s, &e2);
		else
			store_rollback(s);
		for (size_t i = 0; run_ids && i < n; i++)
			run_ids[i] = 0;
	}
	free(done);
	return rc;
}
