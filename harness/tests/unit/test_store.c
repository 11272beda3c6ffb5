/* Results store: migrations (empty, from v1), round trip, atomic iterations
 * (fault injected mid-way), bulk savepoints, NaN rejection, newer schema,
 * corrupt and foreign files, disk full, mode mismatch. */
#include "store.h"
#include "store_internal.h" /* fault injection and row inspection */
#include "store_latency.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/emmclab-test-store-XXXXXX";

static char *tpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static int64_t q_int(struct store *s, const char *sql)
{
	sqlite3_stmt *q;
	int64_t v = -1;
	if (sqlite3_prepare_v2(store_sqlite(s), sql, -1, &q, NULL) != SQLITE_OK)
		return -2;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static int raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	int r = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return r;
}

/* A new store in the test directory; NULL (and a failed test) when it
 * cannot be opened. */
static struct store *topen(const char *name)
{
	struct lab_err e = {0};
	struct store *s = NULL;
	char *path = tpath(name);
	int rc = store_open(path, 0, &s, &e);
	free(path);
	if (rc != LAB_OK) {
		ok(0, "open %s: %s", name, e.msg);
		return NULL;
	}
	return s;
}

/* A run with one job, ready for iterations. */
static int64_t make_job(struct store *s, const char *label, const char *mode)
{
	struct lab_err e = {0};
	struct store_part p;
	int64_t part, board, kernel, run, job;
	store_part_init(&p);
	p.label = label;
	p.cid = "150100444a54533452082a8b23009f00";
	p.cache_kib = 512;
	int rc = store_part_upsert(s, &p, &part, &e);
	rc |= store_board_upsert(s, "rk3399-1", "rk3399", "sdhci-of-arasan", "lab1", &board, &e);
	rc |= store_kernel_upsert(s, "6.1.0-fua", "abc", NULL, "img", &kernel, &e);
	struct store_run_info ri = {.plan = "nightly", .lab = "lab1"};
	rc |= store_run_begin(s, &ri, &run, &e);
	struct store_job_info ji = {.run_id = run, .board_id = board, .part_id = part,
				    .kernel_id = kernel, .suite = "androbench", .mode = mode};
	rc |= store_job_begin(s, &ji, &job, &e);
	if (rc) {
		fprintf(stderr, "# make_job: %s\n", e.msg);
		return 0;
	}
	return job;
}

static void test_fresh(void)
{
	struct lab_err e = {0};
	struct store *s;
	char *p = tpath("fresh/sub/lab.db"); /* parent directories are created */
	int rc = store_open(p, 0, &s, &e);
	is_int(rc, LAB_OK, "open creates a fresh database");
	if (rc) {
		fprintf(stderr, "# %s\n", e.msg);
		free(p);
		return;
	}
	is_int(store_schema_version(s), store_schema_latest(), "fresh database is at the latest schema");
	ok(store_schema_latest() >= 2, "at least two migrations embedded");
	is_int(q_int(s, "PRAGMA user_version"), store_schema_latest(), "user_version stored");
	is_int(q_int(s, "PRAGMA application_id"), 0x454d4c42, "application_id is ours");
	is_int(q_int(s, "PRAGMA foreign_keys"), 1, "foreign keys on");
	is_int(q_int(s, "PRAGMA synchronous"), 1, "synchronous NORMAL");
	sqlite3_stmt *q;
	sqlite3_prepare_v2(store_sqlite(s), "PRAGMA journal_mode", -1, &q, NULL);
	sqlite3_step(q);
	is_str((const char *)sqlite3_column_text(q, 0), "wal", "journal mode WAL");
	sqlite3_finalize(q);
	is_int(q_int(s, "SELECT count(*) FROM sample_flat"), 0, "sample_flat view exists");
	struct lab_buf rep;
	int problems = -1;
	lab_buf_init(&rep, 0);
	is_int(store_check(s, &rep, &problems, &e), LAB_OK, "check runs");
	is_int(problems, 0, "fresh database checks clean");
	lab_buf_free(&rep);
	store_close(s);
	/* Reopening is idempotent. */
	is_int(store_open(p, STORE_NO_MIGRATE, &s, &e), LAB_OK, "reopen with NO_MIGRATE");
	store_close(s);
	free(p);
}

static void test_from_v1(void)
{
	struct lab_err e = {0};
	struct store *s;
	char *p = tpath("v1.db");
	int rc = store_open(p, STORE_AS_IS, &s, &e);
	is_int(rc, LAB_OK, "open as-is");
	if (rc)
		return;
	is_int(store_schema_version(s), 0, "empty file has version 0");
	is_int(store_migrate(s, 1, &e), LAB_OK, "migrate to 1 only");
	is_int(store_schema_version(s), 1, "now version 1");
	is_int(q_int(s, "SELECT count(*) FROM sqlite_master WHERE name = 'sample_flat'"), 0,
	       "v1 has no sample_flat");
	int64_t job = make_job(s, "DUT1", "fua");
	ok(job > 0, "v1: job written through the API");
	struct store_sample sm[2] = {{"seq_write", 199.94, "MiB/s"}, {"rand_write", 68.6, "MiB/s"}};
	struct store_counter ct[1] = {{"reliable_writes", 461}};
	int64_t it;
	is_int(store_iteration_write(s, job, "androbench", 1, 12.5, 0, sm, 2, ct, 1, &it, &e), LAB_OK,
	       "v1: iteration written");
	store_close(s);

	rc = store_open(p, STORE_NO_MIGRATE, &s, &e);
	is_int(rc, LAB_EINFRA, "NO_MIGRATE refuses an old schema");
	ok(strstr(e.msg, "older") != NULL, "message says older: %s", e.msg);
	lab_err_clear(&e);
	rc = store_open(p, STORE_READONLY, &s, &e);
	is_int(rc, LAB_EINFRA, "READONLY refuses an old schema");
	lab_err_clear(&e);

	rc = store_open(p, 0, &s, &e);
	is_int(rc, LAB_OK, "open migrates v1 -> latest");
	if (rc)
		return;
	is_int(store_schema_version(s), store_schema_latest(), "migrated");
	is_int(q_int(s, "SELECT count(*) FROM sample_flat WHERE part_label = 'DUT1' AND mode = 'fua'"
		     " AND board = 'rk3399-1' AND kernel = '6.1.0-fua'"), 2, "v1 samples visible in sample_flat");
	is_int(q_int(s, "SELECT value FROM counter WHERE name = 'reliable_writes'"), 461, "counter survived");
	is_int(q_int(s, "SELECT count(*) FROM sample WHERE value_text IS NULL"), 2, "new column NULL for old rows");
	is_int(store_migrate(s, 1, &e), LAB_EUSAGE, "no downgrade");
	lab_err_clear(&e);
	is_int(store_migrate(s, store_schema_latest() + 1, &e), LAB_EUSAGE, "no unknown target");
	store_close(s);
	free(p);
}

/* Every earlier schema version, not only v1: data written at version v
 * (through the API, as that release would have) survives the migration to
 * the latest, and each migration step applies on its own. */
static void test_from_each_version(void)
{
	for (int v = 1; v < store_schema_latest(); v++) {
		struct lab_err e = {0};
		struct store *s;
		char name[32];
		snprintf(name, sizeof name, "from-v%d.db", v);
		char *p = tpath(name);
		if (store_open(p, STORE_AS_IS, &s, &e) != LAB_OK) {
			ok(0, "open as-is for v%d: %s", v, e.msg);
			free(p);
			continue;
		}
		is_int(store_migrate(s, v, &e), LAB_OK, "migrate an empty file to exactly this version");
		is_int(store_schema_version(s), v, "at the earlier version");
		int64_t job = make_job(s, "DUTv", "cache-nofua");
		struct store_sample sm[1] = {{"wall_time", 421.53, "s"}};
		struct store_counter ct[1] = {{"flushes", 17}};
		int64_t it = 0;
		is_int(store_iteration_write(s, job, "fscopy", 1, 421.53, 0, sm, 1, ct, 1, &it, &e), LAB_OK,
		       "an iteration written at the earlier version");
		store_close(s);
		lab_err_clear(&e);
		is_int(store_open(p, 0, &s, &e), LAB_OK, "open migrates to the latest");
		is_int(store_schema_version(s), store_schema_latest(), "latest after migration");
		is_int(q_int(s, "SELECT count(*) FROM sample WHERE metric = 'wall_time' AND value = 421.53"), 1,
		       "the sample survived the migration");
		is_int(q_int(s, "SELECT value FROM counter WHERE name = 'flushes'"), 17, "the counter survived");
		store_close(s);
		free(p);
	}
}

static void test_round_trip(void)
{
	struct lab_err e = {0};
	struct store *s;
	char *p = tpath("rt.db");
	if (store_open(p, 0, &s, &e)) {
		ok(0, "open: %s", e.msg);
		return;
	}
	int64_t job = make_job(s, "DUT5 industrial", "cache-nofua-cqe");
	struct store_sample sm[3] = {{"seq_read", 266.8, "MiB/s"},
				     {"wall_time", 437.55, "s"},
				     {"p99_latency", 1234.5678901234567, "us"}};
	int64_t it;
	is_int(store_iteration_write(s, job, "fscopy", 1, 437.55, 1, sm, 3, NULL, 0, &it, &e), LAB_OK,
	       "iteration written");
	is_int(store_job_verified(s, job, 0, 1, 1, "cache-nofua-cqe", &e), LAB_OK, "verified");
	is_int(store_job_finish(s, job, "ok", &e), LAB_OK, "job finished");
	sqlite3_stmt *q;
	sqlite3_prepare_v2(store_sqlite(s),
			   "SELECT value, unit, warmup, verified_mode, job_status, run_uuid FROM sample_flat"
			   " WHERE metric = 'p99_latency'", -1, &q, NULL);
	ok(sqlite3_step(q) == SQLITE_ROW, "row read back");
	ok(sqlite3_column_double(q, 0) == 1234.5678901234567, "double exact");
	is_str((const char *)sqlite3_column_text(q, 1), "us", "unit");
	is_int(sqlite3_column_int(q, 2), 1, "warmup flag");
	is_str((const char *)sqlite3_column_text(q, 3), "cache-nofua-cqe", "verified mode");
	is_str((const char *)sqlite3_column_text(q, 4), "ok", "job status");
	const char *uuid = (const char *)sqlite3_column_text(q, 5);
	ok(uuid && strlen(uuid) == 36 && uuid[14] == '4' && strchr("89ab", uuid[19]),
	   "generated uuid is v4: %s", uuid ? uuid : "(null)");
	sqlite3_finalize(q);

	/* Same identity again: same part row, unknown facts filled in. */
	struct store_part pp;
	int64_t part2;
	store_part_init(&pp);
	pp.label = "DUT5 industrial";
	pp.cid = "150100444a54533452082a8b23009f00";
	pp.ext_csd_rev = 8;
	is_int(store_part_upsert(s, &pp, &part2, &e), LAB_OK, "upsert again");
	is_int(q_int(s, "SELECT count(*) FROM part"), 1, "one part row");
	is_int(q_int(s, "SELECT ext_csd_rev FROM part"), 8, "new fact added");
	is_int(q_int(s, "SELECT cache_kib FROM part"), 512, "known fact kept");

	/* Bad inputs: usage errors, nothing written. */
	struct store_sample nan_s[2] = {{"seq_read", 1.0, "MiB/s"}, {"seq_write", NAN, "MiB/s"}};
	int64_t before = q_int(s, "SELECT count(*) FROM iteration");
	is_int(store_iteration_write(s, job, "fscopy", 2, 1.0, 0, nan_s, 2, NULL, 0, &it, &e),
	       LAB_EUSAGE, "NaN rejected");
	ok(strstr(e.msg, "seq_write") != NULL, "message names the metric: %s", e.msg);
	lab_err_clear(&e);
	nan_s[1].value = INFINITY;
	is_int(store_iteration_write(s, job, "fscopy", 2, 1.0, 0, nan_s, 2, NULL, 0, &it, &e),
	       LAB_EUSAGE, "inf rejected");
	lab_err_clear(&e);
	is_int(store_iteration_write(s, job, "fscopy", 2, -1.0, 0, sm, 1, NULL, 0, &it, &e),
	       LAB_EUSAGE, "negative duration rejected");
	lab_err_clear(&e);
	is_int(store_iteration_write(s, job, "fscopy", 1, 1.0, 0, sm, 1, NULL, 0, &it, &e),
	       LAB_EUSAGE, "duplicate iteration number is a constraint (usage) error");
	lab_err_clear(&e);
	is_int(store_iteration_write(s, 99999, "fscopy", 1, 1.0, 0, sm, 1, NULL, 0, &it, &e),
	       LAB_EUSAGE, "unknown job rejected by foreign key");
	lab_err_clear(&e);
	is_int(q_int(s, "SELECT count(*) FROM iteration"), before, "no iteration left behind");
	struct store_job_info bad = {.run_id = 1, .part_id = 1, .suite = "x", .mode = "turbo"};
	int64_t jb;
	is_int(store_job_begin(s, &bad, &jb, &e), LAB_EUSAGE, "unknown mode rejected");
	lab_err_clear(&e);
	is_int(store_run_finish(s, 1, "great", &e), LAB_EUSAGE, "unknown run status rejected");
	lab_err_clear(&e);
	is_int(store_run_finish(s, 1, "complete", &e), LAB_OK, "run finished");
	is_int(store_event(s, 1, job, 0, "quarantine", "boot", "3 failures", &e), LAB_OK, "event");
	is_int(store_transcript(s, 1, job, 0, "t/boot1.log", "00", 10, 1, &e), LAB_OK, "transcript");
	is_int(store_artifact(s, 1, job, "kernel", "Image", "00", &e), LAB_OK, "artifact");
	store_close(s);
	free(p);
}

static void test_atomic(void)
{
	struct lab_err e = {0};
	struct store *s;
	char *p = tpath("atomic.db");
	if (store_open(p, 0, &s, &e)) {
		ok(0, "open: %s", e.msg);
		return;
	}
	int64_t job = make_job(s, "DUT2", "fua");
	/* Fault injected after the iteration row and two samples are in. */
	sqlite3_exec(store_sqlite(s),
		     "CREATE TEMP TRIGGER boom AFTER INSERT ON sample WHEN NEW.metric = 'm3'"
		     " BEGIN SELECT RAISE(FAIL, 'injected fault'); END", NULL, NULL, NULL);
	struct store_sample sm[4] = {{"m1", 1, "s"}, {"m2", 2, "s"}, {"m3", 3, "s"}, {"m4", 4, "s"}};
	int64_t it;
	int rc = store_iteration_write(s, job, "w", 1, 1.0, 0, sm, 4, NULL, 0, &it, &e);
	ok(rc != LAB_OK, "fault mid-iteration fails (%s)", e.msg);
	lab_err_clear(&e);
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 0, "no iteration row left");
	is_int(q_int(s, "SELECT count(*) FROM sample"), 0, "no sample left");
	ok(sqlite3_get_autocommit(store_sqlite(s)), "no transaction left open");

	/* Failure in the counters, after all samples. */
	struct store_counter ct[2] = {{"flushes", 1}, {"flushes", 2}};
	rc = store_iteration_write(s, job, "w", 1, 1.0, 0, sm, 2, ct, 2, &it, &e);
	ok(rc != LAB_OK, "duplicate counter fails");
	lab_err_clear(&e);
	is_int(q_int(s, "SELECT count(*) FROM sample"), 0, "samples rolled back with the counter");

	/* Bulk: many iterations in one transaction; a failing one leaves the others. */
	is_int(store_begin(s, &e), LAB_OK, "bulk begin");
	is_int(store_iteration_write(s, job, "w", 1, 1.0, 0, sm, 2, NULL, 0, &it, &e), LAB_OK, "bulk 1");
	rc = store_iteration_write(s, job, "w", 2, 1.0, 0, sm, 4, NULL, 0, &it, &e);
	ok(rc != LAB_OK, "bulk 2 fails at the injected fault");
	lab_err_clear(&e);
	is_int(store_iteration_write(s, job, "w", 3, 1.0, 0, sm, 2, NULL, 0, &it, &e), LAB_OK, "bulk 3");
	ok(!sqlite3_get_autocommit(store_sqlite(s)), "outer transaction still open");
	is_int(store_commit(s, &e), LAB_OK, "bulk commit");
	is_int(q_int(s, "SELECT sum(n) FROM iteration"), 4, "iterations 1 and 3 (not 2)");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 2, "iterations 1 and 3 stored");
	is_int(q_int(s, "SELECT count(*) FROM sample"), 4, "their samples stored");

	/* Mode mismatch drops the job's results. */
	is_int(store_job_finish(s, job, "mode-mismatch", &e), LAB_OK, "mode-mismatch");
	is_int(q_int(s, "SELECT count(*) FROM sample"), 0, "mismatched samples gone");
	is_int(q_int(s, "SELECT count(*) FROM job WHERE status = 'mode-mismatch'"), 1, "job kept with status");
	store_close(s);
	free(p);
}

/* The journal's writer has no foreign keys (STORE_NO_FK): no cascade runs
 * there, so the store's deletes of iterations remove their samples and
 * counters themselves; neither a discarded iteration nor a mismatched job
 * leaves an orphan row. */
static void test_no_fk(void)
{
	struct lab_err e = {0};
	struct store *s, *w;
	char *p = tpath("nofk.db");
	if (store_open(p, 0, &s, &e)) {
		ok(0, "open: %s", e.msg);
		free(p);
		return;
	}
	int64_t job = make_job(s, "DUT5", "fua"), job2 = make_job(s, "DUT5", "cache-nofua");
	if (store_open(p, STORE_NO_MIGRATE | STORE_NO_FK, &w, &e)) {
		ok(0, "open without foreign keys: %s", e.msg);
		store_close(s);
		free(p);
		return;
	}
	is_int(q_int(w, "PRAGMA foreign_keys"), 0, "foreign keys off on that connection");
	is_int(q_int(s, "PRAGMA foreign_keys"), 1, "and still on on the other");
	struct store_sample sm[2] = {{"m1", 1, "s"}, {"m2", 2, "s"}};
	struct store_counter ct[2] = {{"flushes", 1}, {"rq_write_lat_b10", 7}};
	int64_t it;
	int wrote = 0;
	for (int n = 1; n <= 3; n++)
		wrote += store_iteration_write(w, job, "w", n, 1.0, 0, sm, 2, ct, 2, &it, &e) == LAB_OK;
	for (int n = 1; n <= 2; n++)
		wrote += store_iteration_write(w, job2, "w", n, 1.0, 0, sm, 2, ct, 2, &it, &e) == LAB_OK;
	is_int(wrote, 5, "five iterations written without foreign keys");
	/* inside a transaction, as the journal applies it, and alone */
	is_int(store_begin(w, &e), LAB_OK, "begin");
	is_int(store_iteration_drop(w, job, "w", 2, &e), LAB_OK, "iteration 2 discarded");
	is_int(store_commit(w, &e), LAB_OK, "commit");
	is_int(store_iteration_drop(w, job, "w", 3, &e), LAB_OK, "iteration 3 discarded");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 3, "three iterations left");
	is_int(q_int(s, "SELECT count(*) FROM sample"), 6, "their samples only");
	is_int(q_int(s, "SELECT count(*) FROM counter"), 6, "their counters only");
	is_int(store_job_finish(w, job2, "mode-mismatch", &e), LAB_OK, "a job's mode mismatch");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 1, "its iterations gone");
	is_int(q_int(s, "SELECT count(*) FROM sample"), 2, "its samples gone");
	is_int(q_int(s, "SELECT count(*) FROM counter"), 2, "its counters gone");
	is_int(q_int(s, "SELECT count(*) FROM pragma_foreign_key_check"), 0, "no orphan row");
	char *kept = xasprintf("SELECT count(*) FROM sample s JOIN iteration i ON i.id = s.iteration_id"
			       " WHERE i.job_id = %lld AND i.n = 1", (long long)job);
	is_int(q_int(s, kept), 2, "iteration 1's samples kept");
	free(kept);
	store_close(w);
	store_close(s);
	free(p);
}

static void test_disk_full(void)
{
	struct lab_err e = {0};
	struct store *s;
	char *p = tpath("full.db");
	if (store_open(p, 0, &s, &e)) {
		ok(0, "open: %s", e.msg);
		return;
	}
	int64_t job = make_job(s, "DUT3", "cache-nofua");
	int64_t pages = q_int(s, "PRAGMA page_count");
	char pragma[64];
	snprintf(pragma, sizeof pragma, "PRAGMA max_page_count = %lld", (long long)pages + 3);
	sqlite3_exec(store_sqlite(s), pragma, NULL, NULL, NULL);
	struct store_sample sm[50];
	char names[50][16];
	for (int i = 0; i < 50; i++) {
		snprintf(names[i], sizeof names[i], "metric_%02d", i);
		sm[i] = (struct store_sample){names[i], i * 1.5, "MiB/s"};
	}
	int rc = LAB_OK, n;
	int64_t it;
	for (n = 1; n < 1000 && rc == LAB_OK; n++)
		rc = store_iteration_write(s, job, "w", n, 1.0, 0, sm, 50, NULL, 0, &it, &e);
	is_int(rc, LAB_EINFRA, "database full is an infrastructure error");
	ok(strstr(e.msg, "full") != NULL, "message says full: %s", e.msg);
	lab_err_clear(&e);
	int64_t iters = q_int(s, "SELECT count(*) FROM iteration");
	is_int(iters, n - 2, "every completed iteration kept, the failed one absent");
	is_int(q_int(s, "SELECT count(*) FROM sample"), iters * 50, "no partial iteration");
	ok(sqlite3_get_autocommit(store_sqlite(s)), "no transaction left open");
	store_close(s);
	if (store_open(p, 0, &s, &e) == LAB_OK) {
		is_int(q_int(s, "SELECT count(*) FROM sample"), iters * 50, "data intact after reopen");
		struct lab_buf rep;
		int problems = -1;
		lab_buf_init(&rep, 0);
		store_check(s, &rep, &problems, &e);
		is_int(problems, 0, "database consistent after the failure");
		lab_buf_free(&rep);
		store_close(s);
	}
	free(p);
}

static int file_hash(const char *path, char hex[65])
{
	struct lab_err e = {0};
	return lab_sha256_file(path, hex, &e);
}

static void test_refusals(void)
{
	struct lab_err e = {0};
	struct store *s;
	char before[65], after[65];
	struct stat st;

	/* Newer schema. */
	char *p = tpath("newer.db");
	if (store_open(p, 0, &s, &e) == LAB_OK)
		store_close(s);
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d", store_schema_latest() + 5);
	raw_exec(p, sql);
	file_hash(p, before);
	is_int(store_open(p, 0, &s, &e), LAB_EINFRA, "newer schema refused");
	char want[160];
	snprintf(want, sizeof want,
		 "database schema version %d is newer than this emmclab (%d); upgrade emmclab",
		 store_schema_latest() + 5, store_schema_latest());
	is_str(e.msg, want, "newer-schema message");
	file_hash(p, after);
	is_str(after, before, "newer database untouched");
	char *wal = xasprintf("%s-wal", p);
	ok(stat(wal, &st) < 0, "no WAL file created");
	free(wal);
	lab_err_clear(&e);
	free(p);

	/* Not a database. */
	p = tpath("corrupt.db");
	lab_write_file_atomic(p, "this is a text file, not SQLite\n", 32, &e);
	file_hash(p, before);
	is_int(store_open(p, 0, &s, &e), LAB_EINFRA, "corrupt file refused");
	ok(strstr(e.msg, "not an SQLite database") != NULL, "corrupt message: %s", e.msg);
	file_hash(p, after);
	is_str(after, before, "corrupt file untouched");
	lab_err_clear(&e);
	free(p);

	/* Another application's database. */
	p = tpath("other.db");
	raw_exec(p, "CREATE TABLE t(x)");
	is_int(store_open(p, 0, &s, &e), LAB_EINFRA, "foreign database refused");
	ok(strstr(e.msg, "not an emmclab database") != NULL, "foreign message: %s", e.msg);
	lab_err_clear(&e);
	free(p);

	/* Paths that cannot hold a database. */
	p = tpath("corrupt.db/lab.db"); /* parent is a regular file */
	is_int(store_open(p, 0, &s, &e), LAB_EINFRA, "parent is a file");
	ok(e.msg[0] != '\0', "message: %s", e.msg);
	lab_err_clear(&e);
	free(p);
	is_int(store_open(tmpdir, 0, &s, &e), LAB_EINFRA, "a directory is not a database");
	lab_err_clear(&e);
	p = tpath("missing.db");
	is_int(store_open(p, STORE_READONLY, &s, &e), LAB_EINFRA, "read-only open of a missing file");
	ok(strstr(e.msg, "no such database") != NULL, "missing message: %s", e.msg);
	ok(stat(p, &st) < 0, "read-only open created nothing");
	lab_err_clear(&e);
	free(p);
}

static void test_merge(void)
{
	struct lab_err e = {0};
	struct store *a, *b;
	char *pa = tpath("merge-a.db"), *pb = tpath("merge-b.db");
	if (store_open(pa, 0, &a, &e) || store_open(pb, 0, &b, &e)) {
		ok(0, "open: %s", e.msg);
		return;
	}
	/* b already knows the board and has a run of its own. */
	int64_t other = make_job(b, "DUT9", "fua");
	ok(other > 0, "b has a job");
	int64_t job = make_job(a, "DUT1", "fua-cqe");
	struct store_sample sm[2] = {{"seq_write", 150.5, "MiB/s"}, {"rand_write", 12.5, "MiB/s"}};
	struct store_counter ct[2] = {{"reliable_writes", 461}, {"flushes", 3}};
	int64_t it;
	int rc = store_iteration_write(a, job, "androbench", 1, 2.0, 0, sm, 2, ct, 2, &it, &e);
	rc |= store_iteration_write(a, job, "androbench", 2, 2.0, 1, sm, 2, ct, 1, &it, &e);
	rc |= store_event(a, 1, job, 1, "retry", "boot", "console silent", &e);
	rc |= store_event(a, 1, 0, 1, "quarantine", "boot", "3 failures", &e);
	rc |= store_transcript(a, 1, job, 1, "boot1.log", "ab", 100, 1, &e);
	rc |= store_artifact(a, 1, job, "kernel", "Image", "cd", &e);
	is_int(rc, LAB_OK, "a filled");
	store_close(a);
	int copied = -1, skipped = -1;
	is_int(store_merge(b, pa, &copied, &skipped, &e), LAB_OK, "merge a into b");
	is_int(copied, 1, "one run copied");
	is_int(skipped, 0, "none skipped");
	is_int(q_int(b, "SELECT count(*) FROM board"), 1, "board matched by name, not duplicated");
	is_int(q_int(b, "SELECT count(*) FROM kernel"), 1, "kernel matched");
	is_int(q_int(b, "SELECT count(*) FROM part"), 2, "new part added");
	is_int(q_int(b, "SELECT count(*) FROM sample_flat WHERE part_label = 'DUT1' AND mode = 'fua-cqe'"
		     " AND run_id = 2"), 4, "samples under the new run id");
	is_int(q_int(b, "SELECT sum(value) FROM counter c JOIN iteration i ON i.id = c.iteration_id"
		     " JOIN job j ON j.id = i.job_id WHERE j.run_id = 2"), 461 * 2 + 3, "counters copied");
	is_int(q_int(b, "SELECT count(*) FROM event e JOIN job j ON j.id = e.job_id"
		     " WHERE e.run_id = 2 AND j.run_id = 2"), 1, "event points at the copied job");
	is_int(q_int(b, "SELECT count(*) FROM event WHERE run_id = 2 AND kind = 'quarantine'"
		     " AND job_id IS NULL AND board_id = 1"), 1, "run-level event kept, board mapped");
	is_int(q_int(b, "SELECT count(*) FROM transcript t JOIN job j ON j.id = t.job_id WHERE j.run_id = 2"),
	       1, "transcript copied");
	is_int(q_int(b, "SELECT count(*) FROM artifact WHERE run_id = 2"), 1, "artifact copied");
	is_int(q_int(b, "SELECT count(*) FROM iteration WHERE warmup = 1"), 1, "warmup flag copied");
	is_int(store_merge(b, pa, &copied, &skipped, &e), LAB_OK, "merge again");
	is_int(copied, 0, "nothing copied twice");
	is_int(skipped, 1, "known uuid skipped");
	struct lab_buf rep;
	int problems = -1;
	lab_buf_init(&rep, 0);
	store_check(b, &rep, &problems, &e);
	is_int(problems, 0, "merged database consistent");
	lab_buf_free(&rep);
	lab_err_clear(&e);
	is_int(store_merge(b, pb, &copied, &skipped, &e), LAB_EUSAGE, "merge into itself refused");
	store_close(b);
	free(pa);
	free(pb);
}

static void count_quarantine(const struct store_quarantine *q, void *arg)
{
	(*(int *)arg)++;
	is_str(q->board, "rk3399-1", "quarantined board named");
}

/* The named reads that replaced SQL in the CLI and the runner. */
static void test_queries(void)
{
	struct lab_err e = {0};
	struct store *s = topen("queries.db");
	if (!s)
		return;
	int64_t job = make_job(s, "partQ", "fua");
	ok(job > 0, "job");
	int64_t run = 0, board = 0, found = 0;
	is_int(store_run_last(s, &run, &e), LAB_OK, "last run");
	ok(run > 0, "a run exists");
	store_board_upsert(s, "rk3399-1", NULL, NULL, NULL, &board, &e);
	is_int(store_run_find(s, "1", &found, &e), LAB_OK, "run found by id");
	is_int(found, run, "the right run");
	is_int(store_run_find(s, "no-such-uuid", &found, &e), LAB_EUSAGE, "unknown run refused");
	ok(strstr(e.msg, "no run 'no-such-uuid'") != NULL, "message names it: %s", e.msg);
	lab_err_clear(&e);
	struct store_run_row rr;
	is_int(store_run_get(s, run, &rr, &e), LAB_OK, "run row");
	is_str(rr.plan, "nightly", "run plan");
	is_str(rr.finished_at, "", "unfinished run: empty finish time");

	/* One quarantine rule for the runner and `status`. */
	bool q = true;
	is_int(store_board_quarantined(s, board, &q, &e), LAB_OK, "quarantine query");
	ok(!q, "a fresh board is not quarantined");
	store_event(s, run, 0, board, "quarantine", "boot", "3 failures", &e);
	is_int(store_board_quarantined(s, board, &q, &e), LAB_OK, "quarantine query");
	ok(q, "quarantined after a quarantine event");
	int n = 0, seen = 0;
	is_int(store_quarantined(s, 0, count_quarantine, &seen, &n, &e), LAB_OK, "quarantine list");
	is_int(n, 1, "one quarantined board listed");
	is_int(seen, 1, "handed to the callback");
	store_event(s, 0, 0, board, "unquarantine", NULL, "released", &e);
	is_int(store_board_quarantined(s, board, &q, &e), LAB_OK, "quarantine query");
	ok(!q, "released by a later unquarantine event");

	struct store_run_counts c;
	is_int(store_run_counts(s, run, &c, &e), LAB_OK, "run counts");
	is_int(c.jobs, 1, "one job");
	is_int(c.infra_events, 1, "the run's non-info events counted (the release has no run)");
	is_int(q_int(s, "SELECT count(*) FROM run"), 1, "one run, so the counts below are its own");
	is_int(c.ok, q_int(s, "SELECT count(*) FROM job WHERE status = 'ok'"), "ok jobs counted");
	is_int(c.infra, q_int(s, "SELECT count(*) FROM job WHERE status = 'infra'"), "infra jobs");
	is_int(c.mismatch, 0, "no mismatched job");
	is_int(c.skipped, 0, "no skipped job");
	is_int(c.samples, q_int(s, "SELECT count(*) FROM sample"), "samples counted");
	struct store_run_counts none;
	is_int(store_run_counts(s, run + 1000, &none, &e), LAB_OK, "counts of an unknown run");
	is_int(none.jobs + none.ok + none.samples + none.infra_events, 0, "all zero");
	int64_t rows = 0;
	is_int(store_table_rows(s, "job", &rows, &e), LAB_OK, "rows of a table");
	is_int(rows, 1, "one job row");
	is_int(store_table_rows(s, "no_such_table", &rows, &e), LAB_EUSAGE, "unknown table refused");
	lab_err_clear(&e);

	/* A run whose controller died: jobs infra, one event, run aborted --
	 * all or nothing: when finishing the run fails, neither the jobs nor
	 * the event change (else the next run reaps it again). */
	sqlite3_exec(store_sqlite(s),
		     "CREATE TEMP TRIGGER no_abort BEFORE UPDATE OF status ON run"
		     " BEGIN SELECT RAISE(ABORT, 'injected'); END",
		     NULL, NULL, NULL);
	ok(store_run_abort_dead(s, run, &e) != LAB_OK, "abort refused when the run cannot finish");
	lab_err_clear(&e);
	is_int(q_int(s, "SELECT count(*) FROM job WHERE status = 'infra'"), 0, "its job unchanged");
	is_int(q_int(s, "SELECT count(*) FROM event WHERE kind = 'controller-died'"), 0, "no event");
	ok(!store_in_transaction(s), "no transaction left open");
	sqlite3_exec(store_sqlite(s), "DROP TRIGGER no_abort", NULL, NULL, NULL);
	is_int(store_run_abort_dead(s, run, &e), LAB_OK, "abort a dead run");
	is_int(q_int(s, "SELECT count(*) FROM job WHERE status = 'infra'"), 1, "its job is infra");
	is_int(q_int(s, "SELECT count(*) FROM event WHERE kind = 'controller-died'"), 1, "one event");
	is_int(q_int(s, "SELECT count(*) FROM run WHERE status = 'aborted'"), 1, "run aborted");
	store_close(s);
}

/* Latency histograms: a bucket is the sum over a group's iterations, kept
 * when positive; every op of every mode of a part is a group. */
static void test_lathist(void)
{
	struct lab_err e = {0};
	struct store *s = topen("lathist.db");
	if (!s)
		return;
	int64_t job = make_job(s, "partL", "fua");
	struct store_sample sm[1] = {{"rq_write_lat_p99", 80.0, "us"}};
	struct store_counter c1[3] = {{"rq_write_lat_b3", 5}, {"rq_flush_lat_b2", 4}, {"rq_write_lat_b4", 1}};
	struct store_counter c2[3] = {{"rq_write_lat_b3", 7}, {"rq_flush_lat_b2", 0}, {"rq_write_lat_b4", 0}};
	int rc = store_iteration_write(s, job, "androbench", 1, 1.0, 0, sm, 1, c1, 3, NULL, &e);
	rc |= store_iteration_write(s, job, "androbench", 2, 1.0, 0, sm, 1, c2, 3, NULL, &e);
	rc |= store_job_finish(s, job, "ok", &e);
	ok(rc == LAB_OK, "iterations with latency counters stored (%s)", e.msg);
	/* the store refuses a negative counter; a database written otherwise may hold one */
	is_int(sqlite3_exec(store_sqlite(s),
			    "UPDATE counter SET value = -6 WHERE name = 'rq_flush_lat_b2' AND value = 0",
			    NULL, NULL, NULL),
	       SQLITE_OK, "a negative count planted");
	struct store_lathist *h = NULL;
	size_t n = 0;
	is_int(store_lathist_load(s, 0, NULL, false, &h, &n, &e), LAB_OK, "histograms loaded");
	ok(n == 2 && h && !strcmp(h[0].op, "flush") && !strcmp(h[1].op, "write"),
	   "one histogram per op, flush before write (%zu)", n);
	if (n == 2) {
		is_int((long long)h[1].counts[3], 12, "write bucket 3: 5 + 7");
		is_int((long long)h[1].counts[4], 1, "write bucket 4: 1 + 0");
		is_int((long long)h[1].n, 13, "write requests: the buckets' sum");
		is_int((long long)h[0].counts[2], 0, "flush bucket 2: 4 - 6 < 0 counts as 0");
		is_int((long long)h[0].n, 0, "no flush requests");
		ok(!strcmp(h[1].part, "partL") && !strcmp(h[1].mode, "fua") &&
		   !strcmp(h[1].workload, "androbench"), "part, mode and workload kept");
	}
	store_lathist_free(h, n);

	/* Two more nights: each night's histograms are its own, read from the
	 * rowids of its counters only (first, middle and last night). */
	int64_t runs[3] = {q_int(s, "SELECT max(id) FROM run"), 0, 0};
	for (int k = 1; k < 3; k++) {
		int64_t j = make_job(s, "partL", "fua");
		struct store_counter c[2] = {{"rq_write_lat_b3", 100 * k}, {"reliable_writes", 9}};
		rc = store_iteration_write(s, j, "androbench", 1, 1.0, 0, sm, 1, c, 2, NULL, &e);
		rc |= store_job_finish(s, j, "ok", &e);
		ok(rc == LAB_OK, "night %d stored (%s)", k + 1, e.msg);
		runs[k] = q_int(s, "SELECT max(id) FROM run");
	}
	long long want[3] = {12, 100, 200};
	for (int k = 0; k < 3; k++) {
		h = NULL;
		n = 0;
		ok(store_lathist_load(s, runs[k], NULL, false, &h, &n, &e) == LAB_OK, "night %d loaded", k + 1);
		size_t w = n == 2 ? 1 : 0;
		ok(n >= 1 && !strcmp(h[w].op, "write") && (long long)h[w].counts[3] == want[k] &&
			   (long long)h[w].n == want[k] + (k == 0),
		   "night %d: its own write bucket 3, %lld (%zu histograms)", k + 1, want[k], n);
		store_lathist_free(h, n);
	}
	store_close(s);
}

/* `run --dry-run`'s board schedules: newest run first, finished lab runs
 * only, at most 200 (run, board) schedules, read run by run. */
struct spans_seen {
	int64_t slots[256];
	size_t n;
};

static void on_span(double span_s, double dur_s, int64_t slots, void *arg)
{
	struct spans_seen *sp = arg;
	(void)span_s;
	(void)dur_s;
	if (sp->n < LAB_ARRAY_SIZE(sp->slots))
		sp->slots[sp->n] = slots;
	sp->n++;
}

static void test_history_spans(void)
{
	struct lab_err e = {0};
	struct store *s = topen("spans.db");
	if (!s)
		return;
	struct store_sample sm[1] = {{"seq_read", 1.0, "MiB/s"}};
	int rc = 0;
	/* runs 1-3 (finished): one board's job with k iterations; run 4 still running */
	for (int k = 1; k <= 4; k++) {
		int64_t job = make_job(s, "partH", "fua");
		for (int n = 1; n <= k; n++)
			rc |= store_iteration_write(s, job, "androbench", n, 0.5, 0, sm, 1, NULL, 0, NULL, &e);
		rc |= store_job_finish(s, job, "ok", &e);
		if (k < 4)
			rc |= store_run_finish(s, q_int(s, "SELECT max(id) FROM run"), "complete", &e);
	}
	ok(rc == LAB_OK, "four runs stored (%s)", e.msg);
	struct spans_seen sp = {0};
	is_int(store_history_spans(s, "rk3399", "androbench", on_span, &sp, &e), LAB_OK, "spans read");
	ok(sp.n == 3 && sp.slots[0] == 3 && sp.slots[1] == 2 && sp.slots[2] == 1,
	   "newest finished run first, the running one left out (%zu)", sp.n);
	/* a newer run of 205 boards: 200 schedules, all its own */
	struct store_run_info ri = {.plan = "nightly", .lab = "lab1"};
	int64_t run, part, kernel, board, job;
	struct store_part p;
	store_part_init(&p);
	p.label = "partH";
	p.cid = "150100444a54533452082a8b23009f00";
	rc = store_part_upsert(s, &p, &part, &e);
	rc |= store_kernel_upsert(s, "6.1.0-fua", "abc", NULL, "img", &kernel, &e);
	rc |= store_run_begin(s, &ri, &run, &e);
	for (int b = 0; b < 205 && !rc; b++) {
		char name[32];
		snprintf(name, sizeof name, "big-%d", b);
		rc |= store_board_upsert(s, name, "rk3399", "sdhci-of-arasan", "lab1", &board, &e);
		struct store_job_info ji = {.run_id = run, .board_id = board, .part_id = part,
					    .kernel_id = kernel, .suite = "androbench", .mode = "fua"};
		rc |= store_job_begin(s, &ji, &job, &e);
		for (int n = 1; n <= 5; n++)
			rc |= store_iteration_write(s, job, "androbench", n, 0.5, 0, sm, 1, NULL, 0, NULL, &e);
		rc |= store_job_finish(s, job, "ok", &e);
	}
	rc |= store_run_finish(s, run, "complete", &e);
	ok(rc == LAB_OK, "a run of 205 boards stored (%s)", e.msg);
	memset(&sp, 0, sizeof sp);
	is_int(store_history_spans(s, "rk3399", "androbench", on_span, &sp, &e), LAB_OK, "spans read again");
	size_t five = 0;
	for (size_t i = 0; i < sp.n && i < LAB_ARRAY_SIZE(sp.slots); i++)
		five += sp.slots[i] == 5;
	ok(sp.n == 200 && five == 200, "at most 200 schedules, all from the newest run (%zu, %zu)", sp.n, five);
	memset(&sp, 0, sizeof sp);
	is_int(store_history_spans(s, "other-type", "androbench", on_span, &sp, &e), LAB_OK, "other type");
	is_int((long long)sp.n, 0, "no schedule of another board type");
	store_close(s);
}

/* ---- the run's journal ---- */

static int fill_journal(struct store_jnl *j, int iter_from, int iter_to)
{
	struct lab_err e = {0};
	struct store_sample sm[2] = {{"rand_write", 12.5, "MiB/s"}, {"seq read", 0.1 + 0.2, "MiB/s"}};
	struct store_counter ct[1] = {{"reliable_writes", 42}};
	int rc = 0;
	for (int n = iter_from; n <= iter_to; n++)
		rc |= store_jnl_iteration(j, 0, "androbench", n, 1.25, 0, sm, 2, ct, 1, &e);
	return rc;
}

static int start_journal(struct store *s, const char *uuid, struct store_jnl **j)
{
	struct lab_err e = {0};
	struct store_run_info ri = {.plan = "nightly", .lab = "lab1", .source = "lab",
				    .config_json = "{\"pid\":1}"};
	struct store_part p;
	store_part_init(&p);
	p.label = "DUT 1";
	p.cid = "150100444a54533452082a8b23009f00";
	p.cache_kib = 512;
	int rc = store_jnl_open(s, uuid, j, &e);
	if (rc) {
		fprintf(stderr, "# %s\n", e.msg);
		return rc;
	}
	rc |= store_jnl_run(*j, &ri, &e);
	rc |= store_jnl_board(*j, "b 1", "sim-board", "sdhci", "lab1", &e);
	rc |= store_jnl_job(*j, 0, "b 1", "s", "fua", "mmc_block.fua=on", &e);
	rc |= store_jnl_job(*j, 1, "b 1", "s", "cache-nofua", NULL, &e);
	rc |= store_jnl_job_start(*j, 0, &e);
	rc |= store_jnl_job_part(*j, 0, &p, "6.1.0", &e);
	rc |= store_jnl_job_verified(*j, 0, 1, 1, 0, "fua", "tracepoints", &e);
	rc |= store_jnl_event(*j, -1, NULL, "info", NULL, "percent % tilde ~ newline\n end", &e);
	rc |= store_jnl_event(*j, 1, "b 1", "no-console", "booting", "silent", &e);
	rc |= store_jnl_job_finish(*j, 1, "infra", "no console output", &e);
	return rc;
}

static void test_journal(void)
{
	char *path = tpath("jnl.db");
	struct store *s;
	struct lab_err e = {0};
	struct store_jnl *j = NULL;
	bool busy = true;
	ok(store_open(path, 0, &s, &e) == LAB_OK, "open");
	ok(start_journal(s, "11111111-2222-3333-4444-555555555555", &j) == LAB_OK, "entries queued");
	ok(fill_journal(j, 1, 2) == LAB_OK, "iterations queued");
	is_int((int64_t)store_jnl_pending(j), 12, "pending entries");
	is_int(q_int(s, "SELECT count(*) FROM run"), 0, "nothing committed before the flush");
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK && !busy, "flush: %s", e.msg);
	is_int((int64_t)store_jnl_pending(j), 0, "nothing pending");
	ok(store_jnl_run_id(j) > 0, "the run row's id known");
	is_int(q_int(s, "SELECT count(*) FROM job WHERE part_id IS NULL AND status = 'infra'"
			" AND cause = 'no console output' AND seq = 1"),
	       1, "a job that failed before identify is written, without a part, with its cause");
	is_int(q_int(s, "SELECT count(*) FROM job j JOIN part p ON p.id = j.part_id JOIN kernel k"
			" ON k.id = j.kernel_id WHERE j.seq = 0 AND j.status = 'running'"
			" AND j.verified_mode = 'fua' AND j.started_at IS NOT NULL"),
	       1, "the identified job has its part, kernel, verified mode");
	is_int(q_int(s, "SELECT count(*) FROM sample WHERE metric = 'seq read'"
			" AND value = 0.1 + 0.2"),
	       2, "values read back exactly");
	is_int(q_int(s, "SELECT count(*) FROM event WHERE message = 'percent % tilde ~ newline\n end'"),
	       1, "text read back exactly");
	is_int(q_int(s, "SELECT count(*) FROM event WHERE kind = 'no-console' AND board_id ="
			" (SELECT id FROM board WHERE name = 'b 1') AND job_id IS NOT NULL"),
	       1, "event linked to its board and job");
	int64_t mark = q_int(s, "SELECT journal_seq FROM run");
	is_int(mark, 12, "the run row holds the last entry committed");

	/* Another process holds the lock (a sqlite3 shell's BEGIN IMMEDIATE). */
	sqlite3 *other;
	sqlite3_open(path, &other);
	ok(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK, "lock held");
	store_set_busy_timeout(s, 10);
	ok(fill_journal(j, 3, 3) == LAB_OK, "one more iteration");
	uint64_t t0 = lab_now_ms();
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK && busy, "flush reports busy");
	ok(lab_now_ms() - t0 < 1000, "and does not wait for long");
	is_int((int64_t)store_jnl_pending(j), 1, "the entry is still pending");
	sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK && !busy, "flush after the lock is released");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 3, "the waiting iteration committed");

	/* A crash between COMMIT and the journal's truncation: replaying what
	 * was committed applies nothing twice. */
	char *jpath = xasprintf("%s.pending/11111111-2222-3333-4444-555555555555.jnl", path);
	ok(fill_journal(j, 4, 4) == LAB_OK, "iteration 4");
	char *copy = xasprintf("%s.copy", jpath);
	char *cmd = xasprintf("cp '%s' '%s'", jpath, copy);
	ok(system(cmd) == 0, "journal copied before its flush");
	free(cmd);
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK && !busy, "flushed");
	/* the controller dies now: entries 5.. never committed */
	ok(fill_journal(j, 5, 6) == LAB_OK, "iterations 5, 6 written to the journal only");
	store_jnl_close(j); /* pending: the file stays, as after a SIGKILL */
	struct stat st;
	ok(stat(jpath, &st) == 0 && st.st_size > 0, "journal kept with pending entries");
	/* Put back the pre-flush copy with 5, 6 appended: as if truncation never happened. */
	cmd = xasprintf("grep ' =androbench =[56] ' '%s' > '%s.tail' && cat '%s' '%s.tail' > '%s'",
			jpath, jpath, copy, jpath, jpath);
	ok(system(cmd) == 0, "journal holds committed and uncommitted entries");
	free(cmd);
	/* and a line cut by the crash */
	FILE *f = fopen(jpath, "a");
	fputs("99 iter =2026-12-01T00:00:00Z =0 =androbench =7", f);
	fclose(f);
	store_close(s);

	ok(store_open(path, 0, &s, &e) == LAB_OK, "reopen");
	int nrep = 0;
	struct lab_buf log;
	lab_buf_init(&log, 0);
	ok(store_jnl_replay_dir(s, &nrep, &log, &e) == LAB_OK, "replay: %s", e.msg);
	is_int(nrep, 1, "one journal replayed");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 6,
	       "committed entries not applied twice, lost ones recovered, the cut line ignored");
	is_int(q_int(s, "SELECT count(DISTINCT n) FROM iteration"), 6, "iterations 1..6 once each");
	is_int(q_int(s, "SELECT count(*) FROM event"), 2, "events once each");
	ok(stat(jpath, &st) < 0, "journal removed after its replay");
	lab_buf_free(&log);

	/* A live run's journal (locked) is left alone by a replay. */
	ok(store_jnl_open(s, "live-run", &j, &e) == LAB_OK, "a live run's journal");
	struct store_run_info ri = {.plan = "p", .lab = "l"};
	store_jnl_run(j, &ri, &e);
	struct store *s2;
	ok(store_open(path, 0, &s2, &e) == LAB_OK, "second connection");
	ok(store_jnl_replay_dir(s2, &nrep, NULL, &e) == LAB_OK && nrep == 0, "not replayed");
	struct store_jnl *j2 = NULL;
	e = (struct lab_err){0};
	ok(store_jnl_open(s2, "live-run", &j2, &e) != LAB_OK && strstr(e.msg, "in use"),
	   "nor opened by another process: %s", e.msg);
	store_close(s2);
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK, "the live run commits");
	store_jnl_close(j);
	sqlite3_close(other);
	store_close(s);
	free(copy);
	free(jpath);
	free(path);
}

/* Wait until the journal's thread is done with its batch (poll on its fd). */
static bool wait_jnl(struct store_jnl *j)
{
	struct pollfd pfd = {.fd = store_jnl_async_fd(j), .events = POLLIN};
	return pfd.fd >= 0 && poll(&pfd, 1, 10000) == 1;
}

static void test_journal_async(void)
{
	char *path = tpath("jnl-async.db");
	struct store *s;
	struct lab_err e = {0};
	struct store_jnl *j = NULL;
	bool busy = true;
	size_t applied = 0;
	ok(store_open(path, 0, &s, &e) == LAB_OK, "open");
	ok(start_journal(s, "async-run", &j) == LAB_OK, "entries queued");
	ok(store_jnl_flush(j, &busy, &e) == LAB_OK && !busy, "the run row, on this thread");
	sigset_t before, after;
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	ok(store_jnl_async(j, 10, &e) == LAB_OK && store_jnl_async_fd(j) >= 0, "a thread of its own: %s",
	   e.msg);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	ok(sigismember(&before, SIGTERM) == sigismember(&after, SIGTERM) &&
		   sigismember(&before, SIGINT) == sigismember(&after, SIGINT),
	   "the caller's signal mask unchanged");
	ok(!store_jnl_flush_start(j), "nothing pending: no batch");

	ok(fill_journal(j, 1, 3) == LAB_OK, "three iterations");
	ok(store_jnl_flush_start(j), "handed to the thread");
	ok(store_jnl_inflight(j) && store_jnl_pending(j) == 0, "in flight, none pending");
	ok(fill_journal(j, 4, 5) == LAB_OK, "two more while it applies");
	ok(!store_jnl_flush_start(j), "one batch at a time");
	is_int((int64_t)store_jnl_run_id(j), 0, "no connection use while the thread has it");
	ok(wait_jnl(j), "its fd turns readable");
	ok(store_jnl_flush_done(j, &applied, &busy, &e) == LAB_OK && !busy, "done: %s", e.msg);
	is_int((int64_t)applied, 3, "three entries applied");
	is_int((int64_t)store_jnl_pending(j), 2, "the two that came meanwhile still pending");
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 3, "committed, seen by the caller's connection");
	ok(store_jnl_run_id(j) > 0, "the run row's id known");

	/* Another process holds the lock: the batch comes back, before what came meanwhile. */
	sqlite3 *other;
	sqlite3_open(path, &other);
	ok(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK, "lock held");
	ok(store_jnl_flush_start(j), "the two handed over");
	ok(fill_journal(j, 6, 6) == LAB_OK, "one more meanwhile");
	ok(wait_jnl(j), "done");
	ok(store_jnl_flush_done(j, &applied, &busy, &e) == LAB_OK && busy, "busy");
	is_int((int64_t)applied, 0, "nothing applied");
	is_int((int64_t)store_jnl_pending(j), 3, "all three pending again");
	sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(other);
	ok(store_jnl_flush_start(j) && wait_jnl(j), "again, the lock free");
	ok(store_jnl_flush_done(j, &applied, &busy, &e) == LAB_OK && !busy && applied == 3,
	   "applied: %s", e.msg);
	is_int(q_int(s, "SELECT count(DISTINCT n) FROM iteration"), 6, "iterations 1..6 once each");
	is_int(q_int(s, "SELECT journal_seq FROM run"), 16, /* 10 entries, 6 iterations */
	       "the mark is the last entry's: the returned batch kept its place before the newer one");

	/* Back to this thread (the runner, when it cannot watch the eventfd): the batch
	 * that is out is waited for, later flushes are synchronous. */
	ok(fill_journal(j, 1300, 1300) == LAB_OK && store_jnl_flush_start(j), "one more handed over");
	store_jnl_async_end(j);
	ok(store_jnl_async_fd(j) < 0 && !store_jnl_inflight(j), "no thread any more");
	ok(fill_journal(j, 1301, 1301) == LAB_OK && store_jnl_flush(j, &busy, &e) == LAB_OK && !busy,
	   "a synchronous flush: %s", e.msg);
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 8, "both committed");
	ok(store_jnl_async(j, 10, &e) == LAB_OK && store_jnl_async_fd(j) >= 0, "a thread again");

	/* Closed while a batch is out: it waits for it; nothing pending, the file goes. */
	ok(fill_journal(j, 7, 7) == LAB_OK && store_jnl_flush_start(j), "iteration 7 handed over");
	store_jnl_close(j);
	is_int(q_int(s, "SELECT count(*) FROM iteration"), 9, "committed before the close returned");
	char *jpath = xasprintf("%s.pending/async-run.jnl", path);
	struct stat st;
	ok(stat(jpath, &st) < 0, "journal removed: nothing pending");
	free(jpath);

	/* A memory database has no second connection: flushes stay on this thread. */
	struct store *m;
	ok(store_open(":memory:", 0, &m, &e) == LAB_OK, "memory database");
	ok(start_journal(m, "mem-run", &j) == LAB_OK, "entries");
	ok(store_jnl_async(j, 10, &e) == LAB_OK && store_jnl_async_fd(j) < 0, "no thread");
	ok(!store_jnl_flush_start(j) && store_jnl_flush(j, &busy, &e) == LAB_OK && !busy, "flushed here");
	is_int(q_int(m, "SELECT count(*) FROM job"), 2, "committed");
	store_jnl_close(j);
	store_close(m);
	store_close(s);
	free(path);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_fresh();
	test_from_v1();
	test_from_each_version();
	test_round_trip();
	test_atomic();
	test_no_fk();
	test_disk_full();
	test_refusals();
	test_merge();
	test_queries();
	test_lathist();
	test_history_spans();
	test_journal();
	test_journal_async();
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", tmpdir);
	free(cmd);
	return tap_done();
}
