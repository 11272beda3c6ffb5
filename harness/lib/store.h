/*
 * store.h - the results store (SQLite, WAL, foreign keys, numbered migrations).
 *
 * Ownership: one struct store per process, used only from the loop thread.
 * Every write that belongs together is one transaction: an iteration's
 * samples and counters land together or not at all.  The schema lives in
 * results/migrations/NNN_*.sql, compiled in (migrations.c, generated).
 * See docs/results-schema.md.
 */
#ifndef EMMCLAB_STORE_H
#define EMMCLAB_STORE_H

#include <stdint.h>
#include <stddef.h>
#include <sqlite3.h>
#include "util.h"

struct store_migration {
	int version;
	const char *name;
	const char *sql;
};
extern const struct store_migration store_migrations[]; /* ends with {0, NULL, NULL} */
int store_schema_latest(void);

struct store;

enum store_open_flags {
	STORE_READONLY = 1,   /* no migration, no writes */
	STORE_NO_MIGRATE = 2, /* fail if the schema is not current instead of migrating */
	STORE_AS_IS = 4,      /* accept an older schema without migrating (db info, db migrate --to) */
};

/* The database path a command uses: `opt` (--db) if given, else $EMMCLAB_DB,
 * else "results/lab.db" relative to the current directory. */
const char *store_default_path(const char *opt);

/* Open (creating if needed) and migrate to the latest schema.  A database
 * from a newer schema, a corrupt file or an unwritable path is an error
 * (LAB_EINFRA) with a clear message, and nothing is written. */
int store_open(const char *path, int flags, struct store **out, struct lab_err *e);
void store_close(struct store *s);
sqlite3 *store_db(struct store *s);
int store_schema_version(struct store *s);
/* Apply pending migrations up to `target` (0 = latest); each in its own transaction. */
int store_migrate(struct store *s, int target, struct lab_err *e);

int store_begin(struct store *s, struct lab_err *e);
int store_commit(struct store *s, struct lab_err *e);
void store_rollback(struct store *s);

/* Identity of an eMMC part, from the agent's `identity` line or an import. */
struct store_part {
	const char *label;
	const char *cid;
	const char *manfid, *oemid, *name, *prv, *serial, *date, *fwrev;
	int ext_csd_rev;          /* -1 unknown */
	int64_t capacity_bytes;   /* -1 unknown */
	int64_t cache_kib;        /* -1 unknown */
	int rel_wr_param;         /* -1 unknown */
	int rel_sectors;          /* -1 unknown */
	int cmdq_support;         /* -1 unknown */
	int cmdq_depth;           /* -1 unknown */
	const char *ext_csd_hex;
};
void store_part_init(struct store_part *p); /* all unknown */
int store_part_upsert(struct store *s, const struct store_part *p, int64_t *id, struct lab_err *e);
int store_board_upsert(struct store *s, const char *name, const char *type, const char *host,
		       const char *lab, int64_t *id, struct lab_err *e);
int store_kernel_upsert(struct store *s, const char *version, const char *series_hash,
			const char *config_hash, const char *image_sha256, int64_t *id,
			struct lab_err *e);

struct store_run_info {
	const char *uuid; /* NULL: generated */
	const char *plan, *lab, *source, *config_json, *note;
};
int store_run_begin(struct store *s, const struct store_run_info *ri, int64_t *run_id,
		    struct lab_err *e);
int store_run_finish(struct store *s, int64_t run_id, const char *status, struct lab_err *e);

struct store_job_info {
	int64_t run_id, board_id, part_id, kernel_id; /* board/kernel 0 = NULL */
	const char *suite, *mode, *kernel_cmdline;
	int seq;
};
int store_job_begin(struct store *s, const struct store_job_info *ji, int64_t *job_id,
		    struct lab_err *e);
/* Record the verified mode (values -1 = unknown) and the verdict string. */
int store_job_verified(struct store *s, int64_t job_id, int fua, int write_cache, int cqe,
		       const char *verified_mode, struct lab_err *e);
/* status: ok|infra|mode-mismatch|skipped.  mode-mismatch deletes the job's iterations. */
int store_job_finish(struct store *s, int64_t job_id, const char *status, struct lab_err *e);

struct store_sample {
	const char *metric;
	double value;
	const char *unit;
};
struct store_counter {
	const char *name;
	int64_t value;
};
/* One iteration with all its samples and counters, atomically. */
int store_iteration_write(struct store *s, int64_t job_id, const char *workload, int n,
			  double duration_s, int warmup, const struct store_sample *samples,
			  size_t nsamples, const struct store_counter *counters, size_t ncounters,
			  int64_t *iteration_id, struct lab_err *e);

int store_event(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
		const char *kind, const char *stage, const char *message, struct lab_err *e);
int store_transcript(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
		     const char *path, const char *sha256, int64_t bytes, int boot_n,
		     struct lab_err *e);
int store_artifact(struct store *s, int64_t run_id, int64_t job_id, const char *kind,
		   const char *path, const char *sha256, struct lab_err *e);

/* Additions (store.c).  store_iteration_write inside store_begin/store_commit
 * uses a savepoint, so bulk writers wrap many iterations in one transaction. */
const char *store_path(struct store *s);
/* A fresh UUID v4 from /dev/urandom, 36 chars + NUL. */
int store_uuid4(char out[37], struct lab_err *e);
/* PRAGMA quick_check + foreign_key_check; each problem appended to `report`
 * (one line each, capped); *problems = count. */
int store_check(struct store *s, struct lab_buf *report, int *problems, struct lab_err *e);
/* Copy every run of the database at src_path whose uuid is not in s, with new
 * ids, in one transaction.  Parts, boards and kernels are matched by identity. */
int store_merge(struct store *s, const char *src_path, int *copied, int *skipped,
		struct lab_err *e);

#endif
