/*
 * store.c - the results store on SQLite (see store.h, docs/results-schema.md).
 *
 * Opening never writes before the file has been recognised: a newer schema,
 * another application's database or a corrupt file is refused untouched.
 * Writes use cached prepared statements; an iteration is one transaction (a
 * savepoint when the caller already holds one, so bulk loads batch many).
 */
#include "store_internal.h"
#include "mode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 'EMLB': PRAGMA application_id, so `file lab.db` and we can tell our files. */
#define STORE_APP_ID 0x454d4c42
#define STORE_BUSY_MS 5000

enum stmt_id {
	ST_PART_FIND,
	ST_PART_INSERT,
	ST_PART_FILL,
	ST_BOARD_UPSERT,
	ST_KERNEL_FIND,
	ST_KERNEL_INSERT,
	ST_RUN_INSERT,
	ST_RUN_FINISH,
	ST_JOB_INSERT,
	ST_JOB_VERIFIED,
	ST_JOB_VERIFIED_BY,
	ST_JOB_FINISH,
	ST_JOB_DROP_SAMPLES,
	ST_JOB_DROP_COUNTERS,
	ST_JOB_DROP_ITERS,
	ST_ITER_INSERT,
	ST_SAMPLE_INSERT,
	ST_SAMPLE_INSERT8,
	ST_COUNTER_INSERT,
	ST_COUNTER_INSERT8,
	ST_EVENT_INSERT,
	ST_TRANSCRIPT_INSERT,
	ST_ARTIFACT_INSERT,
	ST_SAVEPOINT,
	ST_RELEASE,
	ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_PART_FIND] = "SELECT id FROM part WHERE label = ?1 AND cid IS ?2",
	[ST_PART_INSERT] =
		"INSERT INTO part (label, cid, manfid, oemid, name, prv, serial, date, fwrev,"
		" ext_csd_rev, capacity_bytes, cache_kib, rel_wr_param, rel_sectors,"
		" cmdq_support, cmdq_depth, ext_csd_hex)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
	/* Known facts fill in unknown ones; a later identity never erases data. */
	[ST_PART_FILL] =
		"UPDATE part SET manfid = COALESCE(?3, manfid), oemid = COALESCE(?4, oemid),"
		" name = COALESCE(?5, name), prv = COALESCE(?6, prv), serial = COALESCE(?7, serial),"
		" date = COALESCE(?8, date), fwrev = COALESCE(?9, fwrev),"
		" ext_csd_rev = COALESCE(?10, ext_csd_rev),"
		" capacity_bytes = COALESCE(?11, capacity_bytes), cache_kib = COALESCE(?12, cache_kib),"
		" rel_wr_param = COALESCE(?13, rel_wr_param), rel_sectors = COALESCE(?14, rel_sectors),"
		" cmdq_support = COALESCE(?15, cmdq_support), cmdq_depth = COALESCE(?16, cmdq_depth),"
		" ext_csd_hex = COALESCE(?17, ext_csd_hex) WHERE id = ?18",
	[ST_BOARD_UPSERT] =
		"INSERT INTO board (name, type, host, lab) VALUES (?1, ?2, ?3, ?4)"
		" ON CONFLICT(name) DO UPDATE SET type = COALESCE(excluded.type, type),"
		" host = COALESCE(excluded.host, host), lab = COALESCE(excluded.lab, lab)"
		" RETURNING id",
	[ST_KERNEL_FIND] = "SELECT id FROM kernel WHERE version = ?1 AND series_hash IS ?2"
			   " AND image_sha256 IS ?4 AND (config_hash IS ?3 OR ?3 IS NULL)",
	[ST_KERNEL_INSERT] = "INSERT INTO kernel (version, series_hash, config_hash, image_sha256)"
			     " VALUES (?1, ?2, ?3, ?4)",
	[ST_RUN_INSERT] = "INSERT INTO run (uuid, plan, lab, source, started_at, status,"
			  " config_json, note) VALUES (?1, ?2, ?3, COALESCE(?4, 'lab'), ?5,"
			  " 'running', ?6, ?7)",
	[ST_RUN_FINISH] = "UPDATE run SET status = ?2, finished_at = ?3 WHERE id = ?1",
	[ST_JOB_INSERT] = "INSERT INTO job (run_id, board_id, part_id, kernel_id, suite, mode,"
			  " status, seq, started_at, kernel_cmdline)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9)",
	[ST_JOB_VERIFIED] = "UPDATE job SET verified_fua = ?2, verified_write_cache = ?3,"
			    " verified_cqe = ?4, verified_mode = ?5 WHERE id = ?1",
	[ST_JOB_VERIFIED_BY] = "UPDATE job SET verified_by = ?2 WHERE id = ?1",
	[ST_JOB_FINISH] = "UPDATE job SET status = ?2, finished_at = ?3 WHERE id = ?1",
	/* an iteration's samples and counters go before it: the cascade does
	 * not run on a connection without foreign keys (STORE_NO_FK) */
	[ST_JOB_DROP_SAMPLES] = "DELETE FROM sample WHERE iteration_id IN"
				" (SELECT id FROM iteration WHERE job_id = ?1)",
	[ST_JOB_DROP_COUNTERS] = "DELETE FROM counter WHERE iteration_id IN"
				 " (SELECT id FROM iteration WHERE job_id = ?1)",
	[ST_JOB_DROP_ITERS] = "DELETE FROM iteration WHERE job_id = ?1",
	[ST_ITER_INSERT] = "INSERT INTO iteration (job_id, workload, n, started_at, duration_s,"
			   " warmup) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_SAMPLE_INSERT] = "INSERT INTO sample (iteration_id, metric, value, unit)"
			     " VALUES (?1, ?2, ?3, ?4)",
	[ST_COUNTER_INSERT] = "INSERT INTO counter (iteration_id, name, value) VALUES (?1, ?2, ?3)",
	/* eight rows a statement: the per-statement work (step, halt, reset) was a
	 * third of an iteration's inserts */
	[ST_SAMPLE_INSERT8] = "INSERT INTO sample (iteration_id, metric, value, unit) VALUES"
			      " (?1, ?2, ?3, ?4), (?1, ?5, ?6, ?7), (?1, ?8, ?9, ?10),"
			      " (?1, ?11, ?12, ?13), (?1, ?14, ?15, ?16), (?1, ?17, ?18, ?19),"
			      " (?1, ?20, ?21, ?22), (?1, ?23, ?24, ?25)",
	[ST_COUNTER_INSERT8] = "INSERT INTO counter (iteration_id, name, value) VALUES"
			       " (?1, ?2, ?3), (?1, ?4, ?5), (?1, ?6, ?7), (?1, ?8, ?9),"
			       " (?1, ?10, ?11), (?1, ?12, ?13), (?1, ?14, ?15), (?1, ?16, ?17)",
	[ST_EVENT_INSERT] = "INSERT INTO event (run_id, job_id, board_id, at, kind, stage, message)"
			    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_TRANSCRIPT_INSERT] = "INSERT INTO transcript (run_id, job_id, board_id, path, sha256,"
				 " bytes, boot_n) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_ARTIFACT_INSERT] = "INSERT INTO artifact (run_id, job_id, kind, path, sha256)"
			       " VALUES (?1, ?2, ?3, ?4, ?5)",
	/* Prepared once: a bulk write opens one savepoint per iteration, and
	 * parsing these two each time was ~18% of a year's ingest. */
	[ST_SAVEPOINT] = "SAVEPOINT store_unit",
	[ST_RELEASE] = "RELEASE store_unit",
};

struct store {
	sqlite3 *db;
	char *path;
	int flags;
	int version;
	sqlite3_stmt *st[ST_COUNT];
	struct cached_stmt {
		const char *sql;
		sqlite3_stmt *q;
	} *cached; /* store_prepare_cached */
	size_t ncached;
	char clock[32]; /* store_set_clock: the time writes record, "" = now */
	bool units_flat; /* store_set_units_flat */
};

static const char *const run_status_ok[] = {"running", "complete", "interrupted", "aborted",
					    "failed", NULL};
static const char *const job_status_ok[] = {"pending", "running", "ok", "infra",
					    "mode-mismatch", "skipped", NULL};

static int in_list(const char *v, const char *const *list)
{
	for (; v && *list; list++)
		if (strcmp(v, *list) == 0)
			return 1;
	return 0;
}

const char *store_default_path(const char *opt)
{
	if (opt && *opt)
		return opt;
	const char *env = getenv("EMMCLAB_DB");
	if (env && *env)
		return env;
	return "results/lab.db";
}

int store_schema_latest(void)
{
	int v = 0;
	for (const struct store_migration *m = store_migrations; m->sql; m++)
		if (m->version > v)
			v = m->version;
	return v;
}

sqlite3 *store_sqlite(struct store *s)
{
	return s->db;
}

const char *store_path(struct store *s)
{
	return s->path;
}

int store_schema_version(struct store *s)
{
	return s->version;
}

/* The time a write records: now, or the time a journalled entry was made
 * (a write retried after the database was busy keeps its real time). */
static void now_iso(struct store *s, char buf[32])
{
	if (s->clock[0])
		memcpy(buf, s->clock, 32);
	else
		lab_utc_iso(buf, 32, (int64_t)time(NULL));
}

void store_set_clock(struct store *s, const char *at)
{
	if (at && *at)
		lab_strlcpy(s->clock, at, sizeof s->clock);
	else
		s->clock[0] = '\0';
}

void store_set_busy_timeout(struct store *s, int ms)
{
	sqlite3_busy_timeout(s->db, ms);
}

bool store_busy(struct store *s)
{
	int c = sqlite3_errcode(s->db) & 0xff;
	return c == SQLITE_BUSY || c == SQLITE_LOCKED;
}

/* What an operator searches the log for, from a (primary or extended) code. */
static const char *fail_hint(int code)
{
	int prim = code & 0xff;
	if (prim == SQLITE_FULL)
		return " (disk or database size limit reached)";
	if (prim == SQLITE_READONLY)
		return " (database is read-only)";
	if (prim == SQLITE_BUSY)
		return " (another process holds the database lock)";
	return "";
}

/* Constraint failures come from the caller's data (duplicate iteration, a
 * job that does not exist): usage.  Everything else is the machine: infra. */
int store_fail(struct store *s, struct lab_err *e, int src, const char *what)
{
	int prim = src & 0xff;
	int rc = prim == SQLITE_CONSTRAINT ? LAB_EUSAGE : LAB_EINFRA;
	return lab_err_set(e, rc, "%s: %s: %s%s", s->path, what, sqlite3_errmsg(s->db),
			   fail_hint(src));
}

int store_exec(struct store *s, const char *sql, const char *what, struct lab_err *e)
{
	int r = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	if (r != SQLITE_OK)
		return store_fail(s, e, r, what);
	return LAB_OK;
}

/* *slot, sql prepared once for the store's life: prepared on first use,
 * reset with its bindings cleared after that.  NULL with e set on failure. */
static sqlite3_stmt *prepared(struct store *s, sqlite3_stmt **slot, const char *sql,
			      struct lab_err *e)
{
	if (*slot == NULL) {
		int r = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);
		if (r != SQLITE_OK) {
			store_fail(s, e, r, "prepare");
			*slot = NULL;
			return NULL;
		}
	} else {
		sqlite3_reset(*slot);
		sqlite3_clear_bindings(*slot);
	}
	return *slot;
}

static sqlite3_stmt *stmt(struct store *s, enum stmt_id id, struct lab_err *e)
{
	return prepared(s, &s->st[id], stmt_sql[id], e);
}

void store_bind_text(sqlite3_stmt *q, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(q, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

sqlite3_stmt *store_prepare(struct store *s, const char *sql, struct lab_err *e)
{
	sqlite3_stmt *q = NULL;
	int r = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
	if (r != SQLITE_OK) {
		store_fail(s, e, r, "prepare");
		return NULL;
	}
	return q;
}

sqlite3_stmt *store_prepare_cached(struct store *s, const char *sql, struct lab_err *e)
{
	size_t i = 0;
	while (i < s->ncached && s->cached[i].sql != sql)
		i++;
	if (i == s->ncached) {
		sqlite3_stmt *q = NULL;
		if (!prepared(s, &q, sql, e))
			return NULL;
		s->cached = xreallocarray(s->cached, s->ncached + 1, sizeof *s->cached);
		s->cached[s->ncached++] = (struct cached_stmt){sql, q};
		return q;
	}
	return prepared(s, &s->cached[i].q, sql, e);
}

int store_fail_infra(struct store *s, struct lab_err *e, const char *what)
{
	return lab_err_set(e, LAB_EINFRA, "%s: %s: %s%s", s->path, what, sqlite3_errmsg(s->db),
			   fail_hint(sqlite3_errcode(s->db)));
}

int store_prepare_rc(struct store *s, const char *sql, sqlite3_stmt **q, struct lab_err *e)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, q, NULL) != SQLITE_OK) {
		*q = NULL;
		return store_fail_infra(s, e, "prepare");
	}
	return LAB_OK;
}

/* -1 means unknown: store NULL. */
static void bind_opt_i64(sqlite3_stmt *q, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(q, i);
	else
		sqlite3_bind_int64(q, i, v);
}

/* 0 means "none" for foreign keys that may be NULL. */
static void bind_id(sqlite3_stmt *q, int i, int64_t v)
{
	if (v > 0)
		sqlite3_bind_int64(q, i, v);
	else
		sqlite3_bind_null(q, i);
}

/* Step a statement that returns no row (or whose row we ignore). */
static int step_done(struct store *s, sqlite3_stmt *q, const char *what, struct lab_err *e)
{
	int r = sqlite3_step(q);
	while (r == SQLITE_ROW)
		r = sqlite3_step(q);
	sqlite3_reset(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, sqlite3_extended_errcode(s->db), what);
	return LAB_OK;
}

static char *dir_of(const char *path)
{
	const char *sl = strrchr(path, '/');
	if (!sl)
		return xstrdup(".");
	if (sl == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(sl - path));
}

static int pragma_int(struct store *s, const char *sql, int *out, struct lab_err *e)
{
	sqlite3_stmt *q;
	int r = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
	if (r == SQLITE_OK) {
		r = sqlite3_step(q);
		if (r == SQLITE_ROW) {
			*out = sqlite3_column_int(q, 0);
			r = SQLITE_OK;
		}
	}
	int ext = sqlite3_extended_errcode(s->db);
	sqlite3_finalize(q);
	if (r == SQLITE_OK)
		return LAB_OK;
	if ((ext & 0xff) == SQLITE_NOTADB || (ext & 0xff) == SQLITE_CORRUPT)
		return lab_err_set(e, LAB_EINFRA,
				   "%s: not an SQLite database (corrupt, or another kind of file)",
				   s->path);
	if ((ext & 0xff) == SQLITE_READONLY || (ext & 0xff) == SQLITE_CANTOPEN) {
		/* A WAL database needs its -wal and -shm files beside it, even to read. */
		char *dir = dir_of(s->path);
		int rc = LAB_OK;
		if (access(dir, W_OK | X_OK) < 0)
			rc = lab_err_set(e, LAB_EINFRA,
					 "%s: cannot open the database: no write permission in %s "
					 "(SQLite keeps its -wal and -shm files there)", s->path, dir);
		free(dir);
		if (rc)
			return rc;
	}
	return store_fail(s, e, ext, "reading the schema version");
}

/* ---- open, migrate, close ------------------------------------------------ */

/* Explain an open failure in terms of the file system, not SQLite codes. */
static int open_fail(const char *path, int flags, int r, int sys_errno, struct lab_err *e)
{
	struct stat st;
	char *dir = dir_of(path);
	int rc;
	if (stat(path, &st) < 0 && (flags & STORE_READONLY))
		rc = lab_err_set(e, LAB_EINFRA, "%s: no such database", path);
	else if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		rc = lab_err_set(e, LAB_EINFRA, "%s: cannot create the database: %s is not a directory",
				 path, dir);
	else if (stat(path, &st) < 0 && errno == ENOENT && access(dir, W_OK | X_OK) < 0)
		rc = lab_err_set(e, LAB_EINFRA,
				 "%s: cannot create the database: no write permission in %s", path, dir);
	else
		rc = lab_err_set(e, LAB_EINFRA, "%s: cannot open the database: %s%s%s", path,
				 sqlite3_errstr(r), sys_errno ? ": " : "",
				 sys_errno ? strerror(sys_errno) : "");
	free(dir);
	return rc;
}

static int is_memory(const char *path)
{
	return strcmp(path, ":memory:") == 0 || strncmp(path, "file::memory:", 13) == 0;
}

/* "file:" URI of a path: everything but unreserved characters and '/' percent-encoded. */
static char *path_uri(const char *path, const char *query)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_append(&b, "file:", 5);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("/-._~", *p))
			lab_buf_append(&b, p, 1);
		else
			lab_buf_printf(&b, "%%%02X", *p);
	}
	lab_buf_printf(&b, "?%s", query);
	char *r = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return r;
}

/*
 * How a STORE_READONLY open reaches the file without leaving files behind
 * (docs/results-schema.md, "Read-only access").  A read-only SQLite
 * connection to a WAL database creates -wal and -shm and cannot remove them,
 * so:
 *  - file and directory writable: a read-write connection with query_only on;
 *    the last connection to close removes -wal and -shm as usual;
 *  - else, a -wal file exists (a writer is active, or died): an ordinary
 *    read-only open, which reads the log through the existing -shm;
 *  - else nobody is writing and nobody we could race can create a log here:
 *    mode=ro&immutable=1, which takes no locks and creates nothing.
 * Returns the name to open (malloc'd) and sets *oflags; *query_only tells the
 * caller to switch query_only on.
 */
static char *ro_open_name(const char *path, int *oflags, bool *query_only)
{
	*query_only = false;
	if (strncmp(path, "file:", 5) == 0) {
		*oflags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
		return xstrdup(path);
	}
	char *dir = dir_of(path);
	bool writable = access(path, W_OK) == 0 && access(dir, W_OK | X_OK) == 0;
	free(dir);
	if (writable) {
		*oflags |= SQLITE_OPEN_READWRITE;
		*query_only = true;
		return xstrdup(path);
	}
	char *wal = xasprintf("%s-wal", path);
	struct stat st;
	bool has_wal = stat(wal, &st) == 0;
	free(wal);
	*oflags |= SQLITE_OPEN_READONLY;
	if (has_wal)
		return xstrdup(path);
	*oflags |= SQLITE_OPEN_URI;
	return path_uri(path, "mode=ro&immutable=1");
}

void store_sqlite_config(void)
{
	/* Before SQLite initialises (the first open): no memory statistics.  They
	 * take a global mutex on every allocation, 447,000 times in a 16-board
	 * nightly (2 % of the controller's instructions), and nothing reads them. */
	static bool done;
	if (!done) {
		done = true;
		sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); /* SQLITE_MISUSE if initialised: harmless */
		/* Statement journals keep SQLite's default: in memory up to 64 KiB,
		 * then a temporary file.  Never spilling (SQLITE_CONFIG_STMTJRNL_SPILL
		 * -1) saved a temporary file per run flush, but bounds nothing:
		 * removing a killed import's 625,000 samples then held them all in
		 * memory (63 MiB peak, scenario.import_dedup).  A threshold of 1 or
		 * 4 MiB made that removal fail with SQLITE_FULL on Debian 12's
		 * SQLite 3.40.1 (not understood; no write failed in strace). */
	}
}

int store_open(const char *path, int flags, struct store **out, struct lab_err *e)
{
	store_sqlite_config();
	struct stat st;
	*out = NULL;
	if (!path || !*path)
		return lab_err_set(e, LAB_EUSAGE, "no database path");
	int mem = is_memory(path);
	if (!mem && !(flags & STORE_READONLY) && stat(path, &st) < 0 && errno == ENOENT) {
		/* First use: create results/ (or whatever holds the file). */
		char *dir = dir_of(path);
		if (stat(dir, &st) < 0 && lab_mkdir_p(dir, 0755) != LAB_OK) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: cannot create directory %s: %s",
					     path, dir, strerror(errno));
			free(dir);
			return rc;
		}
		free(dir);
	}
	if (!mem && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return lab_err_set(e, LAB_EINFRA, "%s: is a directory, not a database", path);

	struct store *s = xcalloc(1, sizeof *s);
	s->path = xstrdup(path);
	s->flags = flags;
	int oflags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
	bool query_only = false;
	char *name;
	if ((flags & STORE_READONLY) && !mem) {
		if (stat(path, &st) < 0 && strncmp(path, "file:", 5) != 0) {
			int rc = lab_err_set(e, LAB_EINFRA, "%s: no such database", path);
			store_close(s);
			return rc;
		}
		name = ro_open_name(path, &oflags, &query_only);
	} else {
		oflags |= (flags & STORE_READONLY) ? SQLITE_OPEN_READONLY
						   : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
		if (strncmp(path, "file:", 5) == 0)
			oflags |= SQLITE_OPEN_URI;
		name = xstrdup(path);
	}
	int r = sqlite3_open_v2(name, &s->db, oflags, NULL);
	free(name);
	if (r == SQLITE_OK && query_only)
		r = sqlite3_exec(s->db, "PRAGMA query_only = ON", NULL, NULL, NULL);
	if (r != SQLITE_OK) {
		int rc = open_fail(path, flags, r, s->db ? sqlite3_system_errno(s->db) : 0, e);
		store_close(s);
		return rc;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);

	/* Recognise the file before anything could write to it. */
	int app = 0, ver = 0, ntables = 0, rc;
	if ((rc = pragma_int(s, "PRAGMA application_id", &app, e)) ||
	    (rc = pragma_int(s, "PRAGMA user_version", &ver, e)) ||
	    (rc = pragma_int(s, "SELECT count(*) FROM sqlite_master", &ntables, e))) {
		store_close(s);
		return rc;
	}
	if (app != 0 && app != STORE_APP_ID) {
		rc = lab_err_set(e, LAB_EINFRA, "%s: not an emmclab database (application_id 0x%08x)",
				 path, (unsigned)app);
		goto fail;
	}
	if (app == 0 && ver == 0 && ntables > 0) {
		rc = lab_err_set(e, LAB_EINFRA,
				 "%s: not an emmclab database (%d schema objects, no schema version)",
				 path, ntables);
		goto fail;
	}
	int latest = store_schema_latest();
	if (ver > latest) {
		rc = lab_err_set(e, LAB_EINFRA,
				 "database schema version %d is newer than this emmclab (%d); upgrade emmclab",
				 ver, latest);
		goto fail;
	}
	s->version = ver;
	if (!(flags & STORE_READONLY) && !mem && sqlite3_db_readonly(s->db, "main") == 1) {
		rc = lab_err_set(e, LAB_EINFRA, "%s: database file is read-only", path);
		goto fail;
	}
	if ((rc = store_exec(s, flags & STORE_NO_FK ? "PRAGMA foreign_keys = OFF" : "PRAGMA foreign_keys = ON",
			     "enabling foreign keys", e)))
		goto fail;
	if (!(flags & STORE_READONLY)) {
		sqlite3_stmt *q;
		r = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &q, NULL);
		if (r == SQLITE_OK && (r = sqlite3_step(q)) == SQLITE_ROW) {
			const char *m = (const char *)sqlite3_column_text(q, 0);
			if (!mem && (!m || strcmp(m, "wal") != 0)) {
				sqlite3_finalize(q);
				rc = lab_err_set(e, LAB_EINFRA, "%s: cannot switch to WAL mode (got %s)",
						 path, m ? m : "nothing");
				goto fail;
			}
			r = SQLITE_OK;
		}
		sqlite3_finalize(q);
		if (r != SQLITE_OK) {
			char *dir = dir_of(path);
			int se = sqlite3_system_errno(s->db);
			rc = lab_err_set(e, LAB_EINFRA,
					 "%s: cannot open the write-ahead log in %s: %s%s%s", path, dir,
					 sqlite3_errmsg(s->db), se ? ": " : "", se ? strerror(se) : "");
			free(dir);
			goto fail;
		}
		/* WAL + NORMAL: durable at checkpoints, never corrupt on power loss. */
		if ((rc = store_exec(s, "PRAGMA synchronous = NORMAL", "setting synchronous", e)))
			goto fail;
	}
	if (ver < latest && !(flags & STORE_AS_IS)) {
		if (flags & (STORE_READONLY | STORE_NO_MIGRATE)) {
			rc = lab_err_set(e, LAB_EINFRA,
					 "%s: database schema version %d is older than this emmclab (%d); "
					 "run `emmclab db migrate`", path, ver, latest);
			goto fail;
		}
		if ((rc = store_migrate(s, 0, e)))
			goto fail;
	}
	*out = s;
	return LAB_OK;
fail:
	store_close(s);
	return rc;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->st[i]);
	for (size_t i = 0; i < s->ncached; i++)
		sqlite3_finalize(s->cached[i].q);
	free(s->cached);
	sqlite3_close_v2(s->db);
	free(s->path);
	free(s);
}

/* A migration that left a row pointing nowhere is refused (rolled back). */
static int fk_check(struct store *s, const char *name, struct lab_err *e)
{
	sqlite3_stmt *q;
	int r = sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &q, NULL);
	if (r != SQLITE_OK)
		return store_fail(s, e, r, "foreign_key_check");
	r = sqlite3_step(q);
	int rc = LAB_OK;
	if (r == SQLITE_ROW)
		rc = lab_err_set(e, LAB_EINFRA,
				 "%s: migration %s: table %s row %lld refers to a missing %s row",
				 s->path, name, (const char *)sqlite3_column_text(q, 0),
				 (long long)sqlite3_column_int64(q, 1),
				 (const char *)sqlite3_column_text(q, 2));
	else if (r != SQLITE_DONE)
		rc = store_fail(s, e, r, "foreign_key_check");
	sqlite3_finalize(q);
	return rc;
}

int store_migrate(struct store *s, int target, struct lab_err *e)
{
	int latest = store_schema_latest();
	if (s->flags & STORE_READONLY)
		return lab_err_set(e, LAB_EUSAGE, "%s: opened read-only, cannot migrate", s->path);
	if (target == 0)
		target = latest;
	if (target < 0 || target > latest)
		return lab_err_set(e, LAB_EUSAGE, "no schema version %d (this emmclab knows 1..%d)",
				   target, latest);
	if (target < s->version)
		return lab_err_set(e, LAB_EUSAGE,
				   "%s: schema version %d cannot be downgraded to %d", s->path,
				   s->version, target);
	int prev = 0;
	for (const struct store_migration *m = store_migrations; m->sql; m++) {
		if (m->version != prev + 1)
			return lab_err_set(e, LAB_EINFRA, "migration table broken at %s", m->name);
		prev = m->version;
		if (m->version <= s->version || m->version > target)
			continue;
		int rc, cur = 0;
		/* A migration may rebuild a table (SQLite's documented way to change
		 * a column): with foreign keys on, DROP TABLE would cascade into the
		 * rows that refer to it.  Off for the migration (it cannot change
		 * inside a transaction), checked before committing, on again after. */
		if ((rc = store_exec(s, "PRAGMA foreign_keys = OFF", "starting a migration", e)))
			return rc;
		if ((rc = store_exec(s, "BEGIN IMMEDIATE", "starting a migration", e)))
			goto fk_on;
		/* Another process may have migrated while we waited for the lock. */
		if ((rc = pragma_int(s, "PRAGMA user_version", &cur, e)))
			goto undo;
		if (cur >= m->version) {
			s->version = cur;
			if ((rc = store_exec(s, "COMMIT", "committing", e)))
				goto undo;
			if ((rc = store_exec(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", e)))
				return rc;
			continue;
		}
		char *what = xasprintf("migration %s", m->name);
		rc = store_exec(s, m->sql, what, e);
		free(what);
		if (rc)
			goto undo;
		if ((rc = fk_check(s, m->name, e)))
			goto undo;
		char pragma[96];
		snprintf(pragma, sizeof pragma, "PRAGMA application_id = %d; PRAGMA user_version = %d",
			 STORE_APP_ID, m->version);
		if ((rc = store_exec(s, pragma, "setting the schema version", e)) ||
		    (rc = store_exec(s, "COMMIT", "committing a migration", e)))
			goto undo;
		s->version = m->version;
		if ((rc = store_exec(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", e)))
			return rc;
		continue;
undo:
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
fk_on:
		sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
		return rc == LAB_EUSAGE ? LAB_EINFRA : rc;
	}
	return LAB_OK;
}

/* ---- transactions --------------------------------------------------------- */

int store_begin(struct store *s, struct lab_err *e)
{
	return store_exec(s, "BEGIN IMMEDIATE", "begin", e);
}

int store_commit(struct store *s, struct lab_err *e)
{
	int r = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (r != SQLITE_OK) {
		int rc = store_fail(s, e, r, "commit");
		store_rollback(s);
		return rc == LAB_EUSAGE ? LAB_EINFRA : rc;
	}
	return LAB_OK;
}

int store_commit_yield(struct store *s, struct lab_err *e)
{
	int rc = store_commit(s, e);
	if (rc)
		return rc;
	struct timespec ts = {0, STORE_YIELD_MS * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return store_begin(s, e);
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

bool store_in_transaction(struct store *s)
{
	return !sqlite3_get_autocommit(s->db);
}

void store_set_units_flat(struct store *s, bool on)
{
	s->units_flat = on;
}

int store_unit_begin(struct store *s, struct store_unit *u, struct lab_err *e)
{
	u->nested = !sqlite3_get_autocommit(s->db);
	if (!u->nested)
		return store_exec(s, "BEGIN IMMEDIATE", "begin", e);
	if (s->units_flat) {
		u->nested = 2; /* the caller's transaction is the unit */
		return LAB_OK;
	}
	sqlite3_stmt *q = stmt(s, ST_SAVEPOINT, e);
	return q ? step_done(s, q, "begin", e) : LAB_EINFRA;
}

int store_unit_end(struct store *s, struct store_unit *u, int rc, struct lab_err *e)
{
	if (u->nested == 2)
		return rc; /* on failure the caller rolls its whole transaction back */
	if (rc == LAB_OK) {
		sqlite3_stmt *q;
		if (u->nested) {
			q = stmt(s, ST_RELEASE, e);
			rc = q ? step_done(s, q, "commit", e) : LAB_EINFRA;
		} else {
			int r = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
			rc = r == SQLITE_OK ? LAB_OK : store_fail(s, e, r, "commit");
		}
		if (rc == LAB_OK)
			return LAB_OK;
		if (rc == LAB_EUSAGE)
			rc = LAB_EINFRA;
	}
	if (sqlite3_get_autocommit(s->db))
		return rc; /* SQLite already rolled back (e.g. SQLITE_FULL) */
	if (u->nested)
		sqlite3_exec(s->db, "ROLLBACK TO store_unit; RELEASE store_unit", NULL, NULL, NULL);
	else
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* ---- identity rows ---------------------------------------------------------- */

void store_part_init(struct store_part *p)
{
	memset(p, 0, sizeof *p);
	p->ext_csd_rev = -1;
	p->capacity_bytes = -1;
	p->cache_kib = -1;
	p->rel_wr_param = -1;
	p->rel_sectors = -1;
	p->cmdq_support = -1;
	p->cmdq_depth = -1;
}

static void bind_part(sqlite3_stmt *q, const struct store_part *p)
{
	store_bind_text(q, 1, p->label);
	store_bind_text(q, 2, p->cid);
	store_bind_text(q, 3, p->manfid);
	store_bind_text(q, 4, p->oemid);
	store_bind_text(q, 5, p->name);
	store_bind_text(q, 6, p->prv);
	store_bind_text(q, 7, p->serial);
	store_bind_text(q, 8, p->date);
	store_bind_text(q, 9, p->fwrev);
	bind_opt_i64(q, 10, p->ext_csd_rev);
	bind_opt_i64(q, 11, p->capacity_bytes);
	bind_opt_i64(q, 12, p->cache_kib);
	bind_opt_i64(q, 13, p->rel_wr_param);
	bind_opt_i64(q, 14, p->rel_sectors);
	bind_opt_i64(q, 15, p->cmdq_support);
	bind_opt_i64(q, 16, p->cmdq_depth);
	store_bind_text(q, 17, p->ext_csd_hex);
}

int store_part_upsert(struct store *s, const struct store_part *p, int64_t *id, struct lab_err *e)
{
	if (!p->label || !*p->label)
		return LAB_ERR(e, LAB_EUSAGE, "part without a label");
	sqlite3_stmt *q = stmt(s, ST_PART_FIND, e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, p->label);
	store_bind_text(q, 2, p->cid);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		int64_t found = sqlite3_column_int64(q, 0);
		sqlite3_reset(q);
		if (!(q = stmt(s, ST_PART_FILL, e)))
			return LAB_EINFRA;
		bind_part(q, p);
		sqlite3_bind_int64(q, 18, found);
		int rc = step_done(s, q, "updating a part", e);
		if (rc == LAB_OK)
			*id = found;
		return rc;
	}
	sqlite3_reset(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, r, "finding a part");
	if (!(q = stmt(s, ST_PART_INSERT, e)))
		return LAB_EINFRA;
	bind_part(q, p);
	int rc = step_done(s, q, "inserting a part", e);
	if (rc == LAB_OK)
		*id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int store_board_upsert(struct store *s, const char *name, const char *type, const char *host,
		       const char *lab, int64_t *id, struct lab_err *e)
{
	if (!name || !*name)
		return LAB_ERR(e, LAB_EUSAGE, "board without a name");
	sqlite3_stmt *q = stmt(s, ST_BOARD_UPSERT, e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, name);
	store_bind_text(q, 2, type);
	store_bind_text(q, 3, host);
	store_bind_text(q, 4, lab);
	int r = sqlite3_step(q);
	if (r != SQLITE_ROW) {
		sqlite3_reset(q);
		return store_fail(s, e, sqlite3_extended_errcode(s->db), "upserting a board");
	}
	*id = sqlite3_column_int64(q, 0);
	return step_done(s, q, "upserting a board", e);
}

int store_kernel_upsert(struct store *s, const char *version, const char *series_hash,
			const char *config_hash, const char *image_sha256, int64_t *id,
			struct lab_err *e)
{
	if (!version || !*version)
		return LAB_ERR(e, LAB_EUSAGE, "kernel without a version");
	sqlite3_stmt *q = stmt(s, ST_KERNEL_FIND, e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, version);
	store_bind_text(q, 2, series_hash);
	store_bind_text(q, 3, config_hash);
	store_bind_text(q, 4, image_sha256);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		*id = sqlite3_column_int64(q, 0);
		sqlite3_reset(q);
		return LAB_OK;
	}
	sqlite3_reset(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, r, "finding a kernel");
	if (!(q = stmt(s, ST_KERNEL_INSERT, e)))
		return LAB_EINFRA;
	store_bind_text(q, 1, version);
	store_bind_text(q, 2, series_hash);
	store_bind_text(q, 3, config_hash);
	store_bind_text(q, 4, image_sha256);
	int rc = step_done(s, q, "inserting a kernel", e);
	if (rc == LAB_OK)
		*id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

/* ---- runs and jobs ---------------------------------------------------------- */

/* A fresh UUID v4 from /dev/urandom, 36 chars + NUL. */
static int store_uuid4(char out[37], struct lab_err *e)
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "/dev/urandom: %s", strerror(errno));
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = read(fd, b + got, sizeof b - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return LAB_ERR(e, LAB_EINFRA, "/dev/urandom: short read");
		}
		got += (size_t)n;
	}
	close(fd);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
	return LAB_OK;
}

int store_new_uuid(char out[37], struct lab_err *e)
{
	return store_uuid4(out, e);
}

int store_board_find(struct store *s, const char *name, int64_t *id, struct lab_err *e)
{
	*id = 0;
	sqlite3_stmt *q = store_prepare(s, "SELECT id FROM board WHERE name = ?1", e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, name);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return r == SQLITE_ROW || r == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "finding a board");
}

int store_runs_running_cfg(struct store *s, const char *host,
			   void (*cb)(int64_t run_id, const char *config_json, void *arg), void *arg,
			   struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT id, config_json FROM run WHERE status = 'running' AND source NOT LIKE 'import%'"
		" AND json_valid(config_json) AND json_extract(config_json, '$.host') = ?1",
		e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, host);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		cb(sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1), arg);
	sqlite3_finalize(q);
	return r == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "finding running runs");
}

int store_run_latest_unfinished(struct store *s, const char *plan, const char *lab, int64_t *run_id,
				struct lab_err *e)
{
	*run_id = 0;
	sqlite3_stmt *q = store_prepare(
		s,
		"SELECT id FROM run WHERE source NOT LIKE 'import%' AND plan IS ?1 AND lab IS ?2"
		" AND status NOT IN ('complete', 'merging') ORDER BY id DESC LIMIT 1",
		e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, plan);
	store_bind_text(q, 2, lab);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*run_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return store_fail_infra(s, e, "finding a run to resume");
	if (!*run_id)
		return lab_err_set(e, LAB_EUSAGE, "%s: no unfinished run of plan %s on lab %s to resume",
				   s->path, plan ? plan : "?", lab ? lab : "?");
	return LAB_OK;
}

int store_run_resume_info(struct store *s, int64_t run_id, char **config_json,
			  void (*job_cb)(const struct store_resume_job *j, void *arg),
			  void (*iter_cb)(int seq, const char *workload, int n, void *arg), void *arg,
			  struct lab_err *e)
{
	*config_json = NULL;
	sqlite3_stmt *q = store_prepare(s, "SELECT config_json FROM run WHERE id = ?1", e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		*config_json = xstrdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	q = store_prepare(s,
			  "SELECT j.seq, COALESCE(b.name, ''), j.suite, j.mode, j.status, j.cause,"
			  " j.finished_at FROM job j LEFT JOIN board b ON b.id = j.board_id"
			  " WHERE j.run_id = ?1 ORDER BY j.seq, j.id",
			  e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_resume_job j = {
			.seq = sqlite3_column_int(q, 0),
			.board = (const char *)sqlite3_column_text(q, 1),
			.suite = (const char *)sqlite3_column_text(q, 2),
			.mode = (const char *)sqlite3_column_text(q, 3),
			.status = (const char *)sqlite3_column_text(q, 4),
			.cause = (const char *)sqlite3_column_text(q, 5),
			.finished_at = (const char *)sqlite3_column_text(q, 6),
		};
		job_cb(&j, arg);
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail_infra(s, e, "reading the run's jobs");
	q = store_prepare(s,
			  "SELECT j.seq, i.workload, i.n FROM iteration i JOIN job j ON j.id = i.job_id"
			  " WHERE j.run_id = ?1",
			  e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		iter_cb(sqlite3_column_int(q, 0), (const char *)sqlite3_column_text(q, 1),
			sqlite3_column_int(q, 2), arg);
	sqlite3_finalize(q);
	return r == SQLITE_DONE ? LAB_OK : store_fail_infra(s, e, "reading the run's iterations");
}

int store_run_begin(struct store *s, const struct store_run_info *ri, int64_t *run_id,
		    struct lab_err *e)
{
	char uuid[37], now[32];
	if (ri->uuid) {
		if (!*ri->uuid || strlen(ri->uuid) >= sizeof uuid)
			return LAB_ERR(e, LAB_EUSAGE, "bad run uuid '%.40s' (1..36 characters)",
				       ri->uuid);
		lab_strlcpy(uuid, ri->uuid, sizeof uuid);
	} else {
		int rc = store_uuid4(uuid, e);
		if (rc)
			return rc;
	}
	now_iso(s, now);
	sqlite3_stmt *q = stmt(s, ST_RUN_INSERT, e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, uuid);
	store_bind_text(q, 2, ri->plan);
	store_bind_text(q, 3, ri->lab);
	store_bind_text(q, 4, ri->source);
	store_bind_text(q, 5, now);
	store_bind_text(q, 6, ri->config_json);
	store_bind_text(q, 7, ri->note);
	int rc = step_done(s, q, "starting a run", e);
	if (rc == LAB_OK)
		*run_id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

static int update_changed(struct store *s, sqlite3_stmt *q, const char *what, int64_t id,
			  struct lab_err *e)
{
	int rc = step_done(s, q, what, e);
	if (rc == LAB_OK && sqlite3_changes(s->db) == 0)
		return LAB_ERR(e, LAB_EUSAGE, "%s: no row with id %" PRId64, what, id);
	return rc;
}

int store_run_finish(struct store *s, int64_t run_id, const char *status, struct lab_err *e)
{
	char now[32];
	if (!in_list(status, run_status_ok))
		return LAB_ERR(e, LAB_EUSAGE, "bad run status '%s'", status ? status : "(null)");
	now_iso(s, now);
	sqlite3_stmt *q = stmt(s, ST_RUN_FINISH, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	store_bind_text(q, 2, status);
	store_bind_text(q, 3, strcmp(status, "running") ? now : NULL);
	return update_changed(s, q, "finishing a run", run_id, e);
}

int store_run_resume(struct store *s, int64_t run_id, const char *config_json, struct lab_err *e)
{
	sqlite3_stmt *q = store_prepare(
		s,
		"UPDATE run SET status = 'running', finished_at = NULL,"
		" config_json = COALESCE(?2, config_json) WHERE id = ?1",
		e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, run_id);
	store_bind_text(q, 2, config_json);
	int rc = update_changed(s, q, "resuming a run", run_id, e);
	sqlite3_finalize(q);
	return rc;
}

int store_iteration_drop(struct store *s, int64_t job_id, const char *workload, int n,
			 struct lab_err *e)
{
	/* its samples and counters first, as ST_JOB_DROP_SAMPLES */
	static const char *const sql[] = {
		"DELETE FROM sample WHERE iteration_id IN (SELECT id FROM iteration"
		" WHERE job_id = ?1 AND workload = ?2 AND n = ?3)",
		"DELETE FROM counter WHERE iteration_id IN (SELECT id FROM iteration"
		" WHERE job_id = ?1 AND workload = ?2 AND n = ?3)",
		"DELETE FROM iteration WHERE job_id = ?1 AND workload = ?2 AND n = ?3"};
	struct store_unit u;
	int rc = store_unit_begin(s, &u, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(sql) && rc == LAB_OK; i++) {
		sqlite3_stmt *q = store_prepare(s, sql[i], e);
		if (!q) {
			rc = LAB_EINFRA;
			break;
		}
		sqlite3_bind_int64(q, 1, job_id);
		store_bind_text(q, 2, workload);
		sqlite3_bind_int(q, 3, n);
		rc = step_done(s, q, "discarding an interrupted iteration", e);
		sqlite3_finalize(q);
	}
	return store_unit_end(s, &u, rc, e);
}

int store_job_begin(struct store *s, const struct store_job_info *ji, int64_t *job_id,
		    struct lab_err *e)
{
	char now[32];
	if (lab_mode_parse(ji->mode) < 0) {
		char modes[256];
		lab_mode_list(modes, sizeof modes, ", ");
		return LAB_ERR(e, LAB_EUSAGE, "unknown mode '%s' (%s)", ji->mode ? ji->mode : "(null)",
			       modes);
	}
	if (!ji->suite || !*ji->suite)
		return LAB_ERR(e, LAB_EUSAGE, "job without a suite");
	now_iso(s, now);
	sqlite3_stmt *q = stmt(s, ST_JOB_INSERT, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, ji->run_id);
	bind_id(q, 2, ji->board_id);
	sqlite3_bind_int64(q, 3, ji->part_id);
	bind_id(q, 4, ji->kernel_id);
	store_bind_text(q, 5, ji->suite);
	store_bind_text(q, 6, ji->mode);
	sqlite3_bind_int(q, 7, ji->seq);
	store_bind_text(q, 8, now);
	store_bind_text(q, 9, ji->kernel_cmdline);
	int rc = step_done(s, q, "starting a job", e);
	if (rc == LAB_OK)
		*job_id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int store_job_verified(struct store *s, int64_t job_id, int fua, int write_cache, int cqe,
		       const char *verified_mode, struct lab_err *e)
{
	sqlite3_stmt *q = stmt(s, ST_JOB_VERIFIED, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, job_id);
	bind_opt_i64(q, 2, fua);
	bind_opt_i64(q, 3, write_cache);
	bind_opt_i64(q, 4, cqe);
	store_bind_text(q, 5, verified_mode);
	return update_changed(s, q, "recording the verified mode", job_id, e);
}

int store_job_verified_by(struct store *s, int64_t job_id, const char *verified_by,
			  struct lab_err *e)
{
	sqlite3_stmt *q = stmt(s, ST_JOB_VERIFIED_BY, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, job_id);
	store_bind_text(q, 2, verified_by);
	return update_changed(s, q, "recording how the mode was proved", job_id, e);
}

int store_job_finish(struct store *s, int64_t job_id, const char *status, struct lab_err *e)
{
	char now[32];
	struct store_unit u;
	if (!in_list(status, job_status_ok))
		return LAB_ERR(e, LAB_EUSAGE, "bad job status '%s'", status ? status : "(null)");
	now_iso(s, now);
	int rc = store_unit_begin(s, &u, e);
	if (rc)
		return rc;
	sqlite3_stmt *q = stmt(s, ST_JOB_FINISH, e);
	if (!q) {
		rc = LAB_EINFRA;
	} else {
		sqlite3_bind_int64(q, 1, job_id);
		store_bind_text(q, 2, status);
		store_bind_text(q, 3, now);
		rc = update_changed(s, q, "finishing a job", job_id, e);
	}
	/* A sample measured in the wrong mode is never a result. */
	if (rc == LAB_OK && strcmp(status, "mode-mismatch") == 0) {
		static const int drop[] = {ST_JOB_DROP_SAMPLES, ST_JOB_DROP_COUNTERS, ST_JOB_DROP_ITERS};
		for (size_t i = 0; i < LAB_ARRAY_SIZE(drop) && rc == LAB_OK; i++) {
			if (!(q = stmt(s, drop[i], e))) {
				rc = LAB_EINFRA;
			} else {
				sqlite3_bind_int64(q, 1, job_id);
				rc = step_done(s, q, "dropping mismatched iterations", e);
			}
		}
	}
	return store_unit_end(s, &u, rc, e);
}

/* ---- iterations --------------------------------------------------------------- */

static int check_iteration(const char *workload, int n, double duration_s,
			   const struct store_sample *samples, size_t nsamples,
			   const struct store_counter *counters, size_t ncounters, struct lab_err *e)
{
	if (!workload || !*workload)
		return LAB_ERR(e, LAB_EUSAGE, "iteration without a workload");
	if (n < 1)
		return LAB_ERR(e, LAB_EUSAGE, "%s: iteration number %d (must be >= 1)", workload, n);
	if (!isfinite(duration_s) || duration_s < 0)
		return LAB_ERR(e, LAB_EUSAGE, "%s #%d: bad duration %g s", workload, n, duration_s);
	for (size_t i = 0; i < nsamples; i++) {
		const struct store_sample *sm = &samples[i];
		if (!sm->metric || !*sm->metric || !sm->unit || !*sm->unit)
			return LAB_ERR(e, LAB_EUSAGE, "%s #%d: sample %zu without metric or unit",
				       workload, n, i);
		if (!isfinite(sm->value))
			return LAB_ERR(e, LAB_EUSAGE, "%s #%d: %s is %g, not a finite number",
				       workload, n, sm->metric, sm->value);
	}
	for (size_t i = 0; i < ncounters; i++) {
		if (!counters[i].name || !*counters[i].name)
			return LAB_ERR(e, LAB_EUSAGE, "%s #%d: counter %zu without a name", workload,
				       n, i);
		if (counters[i].value < 0)
			return LAB_ERR(e, LAB_EUSAGE, "%s #%d: counter %s is negative (%" PRId64 ")",
				       workload, n, counters[i].name, counters[i].value);
	}
	return LAB_OK;
}

int store_iteration_write(struct store *s, int64_t job_id, const char *workload, int n,
			  double duration_s, int warmup, const struct store_sample *samples,
			  size_t nsamples, const struct store_counter *counters, size_t ncounters,
			  int64_t *iteration_id, struct lab_err *e)
{
	char now[32];
	struct store_unit u;
	int rc = check_iteration(workload, n, duration_s, samples, nsamples, counters, ncounters,
				 e);
	if (rc)
		return rc;
	if ((rc = store_unit_begin(s, &u, e)))
		return rc;
	now_iso(s, now);
	sqlite3_stmt *q = stmt(s, ST_ITER_INSERT, e);
	if (!q) {
		rc = LAB_EINFRA;
		goto out;
	}
	sqlite3_bind_int64(q, 1, job_id);
	store_bind_text(q, 2, workload);
	sqlite3_bind_int(q, 3, n);
	store_bind_text(q, 4, now);
	sqlite3_bind_double(q, 5, duration_s);
	sqlite3_bind_int(q, 6, warmup ? 1 : 0);
	if ((rc = step_done(s, q, "inserting an iteration", e)))
		goto out;
	int64_t it = sqlite3_last_insert_rowid(s->db);
	/* Eight rows at a time, the rest one by one; in order, so the rows and
	 * their ids are what single inserts gave.  The strings live until the
	 * statement is reset (step_done), so they are bound without a copy. */
	for (size_t i = 0; i < nsamples;) {
		bool eight = nsamples - i >= 8;
		if (!(q = stmt(s, eight ? ST_SAMPLE_INSERT8 : ST_SAMPLE_INSERT, e))) {
			rc = LAB_EINFRA;
			goto out;
		}
		sqlite3_bind_int64(q, 1, it);
		for (int k = 0; k < (eight ? 8 : 1); k++, i++) {
			sqlite3_bind_text(q, 2 + 3 * k, samples[i].metric, -1, SQLITE_STATIC);
			sqlite3_bind_double(q, 3 + 3 * k, samples[i].value);
			sqlite3_bind_text(q, 4 + 3 * k, samples[i].unit, -1, SQLITE_STATIC);
		}
		if ((rc = step_done(s, q, "inserting a sample", e)))
			goto out;
	}
	for (size_t i = 0; i < ncounters;) {
		bool eight = ncounters - i >= 8;
		if (!(q = stmt(s, eight ? ST_COUNTER_INSERT8 : ST_COUNTER_INSERT, e))) {
			rc = LAB_EINFRA;
			goto out;
		}
		sqlite3_bind_int64(q, 1, it);
		for (int k = 0; k < (eight ? 8 : 1); k++, i++) {
			sqlite3_bind_text(q, 2 + 2 * k, counters[i].name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 3 + 2 * k, counters[i].value);
		}
		if ((rc = step_done(s, q, "inserting a counter", e)))
			goto out;
	}
	if (iteration_id)
		*iteration_id = it;
out:
	return store_unit_end(s, &u, rc, e);
}

/* ---- events, transcripts, artifacts ---------------------------------------- */

int store_event(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
		const char *kind, const char *stage, const char *message, struct lab_err *e)
{
	char now[32];
	if (!kind || !*kind)
		return LAB_ERR(e, LAB_EUSAGE, "event without a kind");
	now_iso(s, now);
	sqlite3_stmt *q = stmt(s, ST_EVENT_INSERT, e);
	if (!q)
		return LAB_EINFRA;
	bind_id(q, 1, run_id);
	bind_id(q, 2, job_id);
	bind_id(q, 3, board_id);
	store_bind_text(q, 4, now);
	store_bind_text(q, 5, kind);
	store_bind_text(q, 6, stage);
	store_bind_text(q, 7, message ? message : "");
	return step_done(s, q, "recording an event", e);
}

int store_transcript(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
		     const char *path, const char *sha256, int64_t bytes, int boot_n,
		     struct lab_err *e)
{
	if (!path || !sha256 || bytes < 0)
		return LAB_ERR(e, LAB_EUSAGE, "transcript without path, hash or size");
	sqlite3_stmt *q = stmt(s, ST_TRANSCRIPT_INSERT, e);
	if (!q)
		return LAB_EINFRA;
	bind_id(q, 1, run_id);
	bind_id(q, 2, job_id);
	bind_id(q, 3, board_id);
	store_bind_text(q, 4, path);
	store_bind_text(q, 5, sha256);
	sqlite3_bind_int64(q, 6, bytes);
	sqlite3_bind_int(q, 7, boot_n);
	return step_done(s, q, "recording a transcript", e);
}

int store_artifact(struct store *s, int64_t run_id, int64_t job_id, const char *kind,
		   const char *path, const char *sha256, struct lab_err *e)
{
	if (!kind || !path || !sha256)
		return LAB_ERR(e, LAB_EUSAGE, "artifact without kind, path or hash");
	sqlite3_stmt *q = stmt(s, ST_ARTIFACT_INSERT, e);
	if (!q)
		return LAB_EINFRA;
	bind_id(q, 1, run_id);
	bind_id(q, 2, job_id);
	store_bind_text(q, 3, kind);
	store_bind_text(q, 4, path);
	store_bind_text(q, 5, sha256);
	return step_done(s, q, "recording an artifact", e);
}

/* ---- check ---------------------------------------------------------------------- */

#define CHECK_MAX_LINES 200

int store_check(struct store *s, struct lab_buf *report, int *problems, struct lab_err *e)
{
	sqlite3_stmt *q;
	*problems = 0;
	int r = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(100)", -1, &q, NULL);
	if (r != SQLITE_OK)
		return store_fail(s, e, r, "quick_check");
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(q, 0);
		if (t && strcmp(t, "ok") == 0)
			continue;
		if ((*problems)++ < CHECK_MAX_LINES)
			lab_buf_printf(report, "integrity: %s\n", t ? t : "?");
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE) {
		if ((r & 0xff) == SQLITE_CORRUPT || (r & 0xff) == SQLITE_NOTADB) {
			(*problems)++;
			lab_buf_printf(report, "integrity: %s\n", sqlite3_errstr(r));
			return LAB_OK;
		}
		return store_fail(s, e, r, "quick_check");
	}
	r = sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &q, NULL);
	if (r != SQLITE_OK)
		return store_fail(s, e, r, "foreign_key_check");
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		if ((*problems)++ < CHECK_MAX_LINES)
			lab_buf_printf(report, "foreign key: %s row %lld refers to a missing %s row\n",
				       (const char *)sqlite3_column_text(q, 0),
				       (long long)sqlite3_column_int64(q, 1),
				       (const char *)sqlite3_column_text(q, 2));
	}
	sqlite3_finalize(q);
	if (r != SQLITE_DONE)
		return store_fail(s, e, r, "foreign_key_check");
	if (*problems > CHECK_MAX_LINES)
		lab_buf_printf(report, "... and %d more\n", *problems - CHECK_MAX_LINES);
	return LAB_OK;
}

/* ---- snapshot --------------------------------------------------------------- */

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = fsync(fd);
	close(fd);
	return r;
}

int store_snapshot(struct store *s, const char *path, struct lab_err *e)
{
	char *tmp = xasprintf("%s.tmp", path);
	unlink(tmp);
	sqlite3 *dst = NULL;
	int rc = LAB_OK;
	if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp,
				 dst ? sqlite3_errmsg(dst) : "cannot open");
		goto out;
	}
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->db, "main");
	if (!b) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errmsg(dst));
		goto out;
	}
	int st = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	if (st != SQLITE_DONE) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errstr(st));
		goto out;
	}
	/* A self-contained file: no -wal beside it. */
	if (sqlite3_exec(dst, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errmsg(dst));
		goto out;
	}
	int cr = sqlite3_close(dst);
	dst = NULL;
	if (cr != SQLITE_OK)
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", tmp, sqlite3_errstr(cr));
	else if (fsync_path(tmp) < 0 || rename(tmp, path) < 0)
		rc = lab_err_set(e, LAB_EINFRA, "snapshot %s: %s", path, strerror(errno));
out:
	if (dst)
		sqlite3_close(dst);
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}
