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

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
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
	/* foreign keys not enforced on this connection: the journal's writer,
	 * whose rows name the rows it has just written in the same transaction
	 * (the parent lookups were a fifth of its inserts' work).  The store's
	 * own deletes remove an iteration's samples and counters themselves, so
	 * they leave no orphan on such a connection either; `db check` finds any. */
	STORE_NO_FK = 8,
};

/* The database path a command uses: `opt` (--db) if given, else $EMMCLAB_DB,
 * else "results/lab.db" relative to the current directory. */
const char *store_default_path(const char *opt);

/* Open (creating if needed) and migrate to the latest schema.  A database
 * from a newer schema, a corrupt file or an unwritable path is an error
 * (LAB_EINFRA) with a clear message, and nothing is written. */
/* Process-wide SQLite settings, before the first connection (store_open calls it). */
void store_sqlite_config(void);
int store_open(const char *path, int flags, struct store **out, struct lab_err *e);
void store_close(struct store *s);
int store_schema_version(struct store *s);
/* Apply pending migrations up to `target` (0 = latest); each in its own transaction. */
int store_migrate(struct store *s, int target, struct lab_err *e);

int store_begin(struct store *s, struct lab_err *e);
int store_commit(struct store *s, struct lab_err *e);
/* Between the transactions of a long writer (import, db merge): commit, leave the
 * write lock free for STORE_YIELD_MS, begin again.  Committing and beginning at once
 * left other writers only the microseconds in between: SQLite has no queue for its
 * lock, a waiting writer polls (sqlite3's busy handler every 100 ms, a run's flush
 * from its backoff timer), and one polling during an import got in about one time in
 * five within 3 s.  A sleep, not a timer: these commands have no event loop. */
#define STORE_YIELD_MS 50
int store_commit_yield(struct store *s, struct lab_err *e);
void store_rollback(struct store *s);
/* True while a transaction (store_begin or a unit) is open on s. */
bool store_in_transaction(struct store *s);
/* A unit of work that nests: a transaction of its own, or a savepoint inside
 * the caller's transaction.  store_unit_end commits (rc == LAB_OK) or undoes
 * just the unit and returns rc (or the commit's error). */
struct store_unit {
	int nested; /* 0: its own transaction, 1: a savepoint, 2: flat (store_set_units_flat) */
};
/* Inside a transaction that the caller rolls back whole whenever a write fails
 * (the journal's flush), units take no savepoint of their own.  A savepoint makes
 * SQLite copy every page a unit changes into the statement journal, a temporary
 * file once past 64 KiB: 16 pwrite64 calls a stored iteration at 16 boards. */
void store_set_units_flat(struct store *s, bool on);
int store_unit_begin(struct store *s, struct store_unit *u, struct lab_err *e);
int store_unit_end(struct store *s, struct store_unit *u, int rc, struct lab_err *e);

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
/* How the mode was proved: "tracepoints" or "sysfs-only" (schema 6). */
int store_job_verified_by(struct store *s, int64_t job_id, const char *verified_by,
			  struct lab_err *e);
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
/* PRAGMA quick_check + foreign_key_check; each problem appended to `report`
 * (one line each, capped); *problems = count. */
int store_check(struct store *s, struct lab_buf *report, int *problems, struct lab_err *e);
/* Copy every run of the database at src_path whose uuid is not in s, with new
 * ids, one transaction per run (the lock is never held for long; on an error
 * the runs already copied stay, *copied says how many).  Parts, boards and
 * kernels are matched by identity. */
int store_merge(struct store *s, const char *src_path, int *copied, int *skipped,
		struct lab_err *e);
/* The same, with conflicts: a run already here whose content differs (status,
 * end, jobs, iterations, samples) and a run whose board is known here by
 * name with another type or host are not copied; one line each is appended
 * to report (NULL: none), *nconflicts counts them. */
int store_merge_report(struct store *s, const char *src_path, int *copied, int *skipped,
		       int *nconflicts, struct lab_buf *report, struct lab_err *e);

/* Online backup of the whole store into a self-contained file at path
 * (written as path.tmp, fsynced, renamed: never half a file; no -wal). */
int store_snapshot(struct store *s, const char *path, struct lab_err *e);

/* A run continued by `run --resume`: running again, its config_json (the
 * new controller's identity) replaced when given. */
int store_run_resume(struct store *s, int64_t run_id, const char *config_json, struct lab_err *e);
/* Discard one iteration (an interrupted one, re-run on resume). */
int store_iteration_drop(struct store *s, int64_t job_id, const char *workload, int n,
			 struct lab_err *e);

/* A fresh run uuid (v4). */
int store_new_uuid(char out[37], struct lab_err *e);
/* A board's id by name (0 when it has none yet); a read. */
int store_board_find(struct store *s, const char *name, int64_t *id, struct lab_err *e);
/* Runs of `host` marked running, with their config_json (the controller's
 * pid, start time and boot id: lock.h), for telling dead ones. */
int store_runs_running_cfg(struct store *s, const char *host,
			   void (*cb)(int64_t run_id, const char *config_json, void *arg), void *arg,
			   struct lab_err *e);
/* The newest run of plan on lab that is not complete (run --resume). */
int store_run_latest_unfinished(struct store *s, const char *plan, const char *lab, int64_t *run_id,
				struct lab_err *e);
/* What --resume needs of a run: its config_json (caller frees), every job
 * (by seq) and every stored iteration (job seq, workload, n). */
struct store_resume_job {
	int seq;
	const char *board, *suite, *mode, *status, *cause, *finished_at; /* cause, finished_at may be NULL */
};
/* The newest event message of job seq of the run with this kind, stage and
 * message LIKE pattern, into out (LAB_EFOUND when none). */
int store_event_last(struct store *s, int64_t run_id, int seq, const char *kind, const char *stage,
		     const char *like, char *out, size_t n);
int store_run_resume_info(struct store *s, int64_t run_id, char **config_json,
			  void (*job_cb)(const struct store_resume_job *j, void *arg),
			  void (*iter_cb)(int seq, const char *workload, int n, void *arg), void *arg,
			  struct lab_err *e);

/* How long a write waits for another process's lock inside SQLite (store_open
 * sets 5 s for the CLI; the runner sets a few ms and retries from a timer). */
void store_set_busy_timeout(struct store *s, int ms);
/* Whether the last failure on s was the database lock (SQLITE_BUSY/LOCKED). */
bool store_busy(struct store *s);
/* The time following writes record (UTC ISO-8601), NULL/"" for now. */
void store_set_clock(struct store *s, const char *at);

/* ---- the run's journal (store_journal.c) ----
 * Every write of a run is an entry: appended to <db>.pending/<uuid>.jnl
 * (flock'ed by its run) and held in memory until a flush commits it.  A
 * flush takes the lock or gives up at once (*busy; the caller retries from a
 * timer); every pending entry commits in one transaction, with the run's
 * journal_seq, so a journal replayed after a crash applies nothing twice.
 * Entries name jobs by plan index (job.seq) and boards by name. */
struct store_jnl;
/* Open (and lock) the journal of run uuid; entries an earlier process of
 * the same run left are pending again.  ":memory:" databases: memory only. */
int store_jnl_open(struct store *s, const char *uuid, struct store_jnl **out, struct lab_err *e);
/* Close; the file goes only when nothing is pending. */
void store_jnl_close(struct store_jnl *j);
/* Commit every pending entry now, on this thread (after the worker's batch, if
 * one is out). */
int store_jnl_flush(struct store_jnl *j, bool *busy, struct lab_err *e);
/* Flushes on a thread of their own, with their own connection to the database
 * (busy_ms: how long it waits for another process's lock inside SQLite), so the
 * event loop never runs SQLite's work or waits on its lock.  A no-op for memory
 * databases.  Then: store_jnl_flush_start hands every pending entry to the
 * thread (false: nothing pending, or a batch is still out); the fd of
 * store_jnl_async_fd turns readable when it is done, and store_jnl_flush_done
 * takes the outcome: the entries applied (*applied), or, when the database was
 * busy or an error came, the batch pending again before what came meanwhile.
 * The entry functions may be called at any time; store_jnl_flush and
 * store_jnl_close wait for a batch that is out, store_jnl_run_id answers 0 then. */
int store_jnl_async(struct store_jnl *j, int busy_ms, struct lab_err *e);
/* Back to flushes on the caller's thread (after the batch that is out, if any). */
void store_jnl_async_end(struct store_jnl *j);
int store_jnl_async_fd(const struct store_jnl *j);
bool store_jnl_flush_start(struct store_jnl *j);
bool store_jnl_inflight(const struct store_jnl *j);
int store_jnl_flush_done(struct store_jnl *j, size_t *applied, bool *busy, struct lab_err *e);
size_t store_jnl_pending(const struct store_jnl *j);
/* The run row's id once committed, else 0. */
int64_t store_jnl_run_id(struct store_jnl *j);
const char *store_jnl_uuid(const struct store_jnl *j);
/* The journal directory of a database (NULL for memory databases); caller frees. */
char *store_journal_dir(struct store *s);
/* Replay the journals no live process holds (their controllers died); one
 * line per journal appended to log.  A journal whose entries cannot apply is
 * renamed .bad (reported, never retried).  LAB_EINFRA when the database is busy. */
int store_jnl_replay_dir(struct store *s, int *replayed, struct lab_buf *log, struct lab_err *e);

int store_jnl_run(struct store_jnl *j, const struct store_run_info *ri, struct lab_err *e);
int store_jnl_resume(struct store_jnl *j, const char *config_json, struct lab_err *e);
int store_jnl_board(struct store_jnl *j, const char *name, const char *type, const char *host,
		    const char *lab, struct lab_err *e);
/* A job of the plan (status pending, no part yet). */
int store_jnl_job(struct store_jnl *j, int seq, const char *board, const char *suite,
		  const char *mode, const char *cmdline, struct lab_err *e);
int store_jnl_job_start(struct store_jnl *j, int seq, struct lab_err *e);
int store_jnl_job_part(struct store_jnl *j, int seq, const struct store_part *p,
		       const char *kernel, struct lab_err *e);
/* verified_by: "tracepoints" / "sysfs-only", NULL when not known */
int store_jnl_job_verified(struct store_jnl *j, int seq, int fua, int write_cache, int cqe,
			   const char *verified_mode, const char *verified_by, struct lab_err *e);
/* status as store_job_finish; cause: why a job that is not ok ended (NULL none). */
int store_jnl_job_finish(struct store_jnl *j, int seq, const char *status, const char *cause,
			 struct lab_err *e);
int store_jnl_iteration(struct store_jnl *j, int seq, const char *workload, int n,
			double duration_s, int warmup, const struct store_sample *samples,
			size_t nsamples, const struct store_counter *counters, size_t ncounters,
			struct lab_err *e);
/* Where the iteration just journalled ran (schema 8): executor "local" or
 * "lava", the LAVA job's URL and worker (NULL locally). */
int store_jnl_iteration_origin(struct store_jnl *j, int seq, const char *workload, int n,
			       const char *executor, const char *job_url, const char *worker,
			       struct lab_err *e);
int store_jnl_iteration_drop(struct store_jnl *j, int seq, const char *workload, int n,
			     struct lab_err *e);
/* seq -1: no job; board NULL: none. */
int store_jnl_event(struct store_jnl *j, int seq, const char *board, const char *kind,
		    const char *stage, const char *message, struct lab_err *e);
int store_jnl_transcript(struct store_jnl *j, int seq, const char *board, const char *path,
			 const char *sha256, int64_t bytes, int boot_n, struct lab_err *e);

/* ---- part health (store_health.c, schema 7; docs/running.md "Part health") ---- */
struct health_reading;
/* One reading of job_id's part, at `at` (UTC ISO-8601, NULL: now), phase
 * "before" or "after".  flag non-NULL: the reading is past the board type's
 * thresholds, and job.health_flag records why (the first reason is kept). */
int store_health_write(struct store *s, int64_t job_id, const char *at, const char *phase,
		       const struct health_reading *h, const char *flag, struct lab_err *e);
/* A part's readings summed up: the first and the latest (its trend) and the
 * latest flagged job's reason. */
struct store_health_sum {
	int n;                          /* readings */
	int first_a, first_b, first_eol; /* -1: unknown */
	int last_a, last_b, last_eol;
	char first_at[32], last_at[32], last_phase[8], last_src[16];
	int flagged_jobs;
	char flag[192]; /* the latest flagged job's reason, "" none */
};
int store_health_summary(struct store *s, int64_t part_id, struct store_health_sum *out,
			 struct lab_err *e);
/* Every part with a reading, by label: cb(part id, label, cid, summary). */
int store_health_parts(struct store *s,
		       void (*cb)(int64_t part_id, const char *label, const char *cid,
				  const struct store_health_sum *h, void *arg),
		       void *arg, struct lab_err *e);
/* The journal entry of a reading (job by plan index). */
int store_jnl_health(struct store_jnl *j, int seq, const char *phase,
		     const struct health_reading *h, const char *flag, struct lab_err *e);

/* ---- reads for the CLI, the runner and the upload kinds (store_query.c) ----
 * Row pointers passed to a callback are valid only during the call.  A
 * NULL column is a NULL pointer unless the comment says otherwise.  Every
 * function returns LAB_OK or LAB_EINFRA with the database's message. */

/* A run with its job and sample counts (`emmclab status`). */
struct store_run_summary {
	int64_t id;
	const char *started_at, *status, *source, *plan;
	int64_t jobs, ok, infra, mismatch, samples;
};
/* The newest `limit` runs, newest first; *n = rows handed to cb. */
int store_runs_recent(struct store *s, int64_t limit,
		      void (*cb)(const struct store_run_summary *r, int i, void *arg), void *arg,
		      int *n, struct lab_err *e);
/* The highest run id, 0 when there is no run. */
int store_run_last(struct store *s, int64_t *run_id, struct lab_err *e);
/* --run takes a run id or a run uuid: LAB_EUSAGE "no run 'ARG' in PATH" when neither matches. */
int store_run_find(struct store *s, const char *arg, int64_t *run_id, struct lab_err *e);

/* The events of a run by kind: count, and the latest one's message and board. */
struct store_event_kind {
	const char *kind;
	int64_t count;
	const char *message, *board;
};
int store_event_kinds(struct store *s, int64_t run_id,
		      void (*cb)(const struct store_event_kind *k, void *arg), void *arg, int *n,
		      struct lab_err *e);

/* A board stays quarantined from its 'quarantine' event until a later
 * 'unquarantine' event (emmclab board NAME release). */
struct store_quarantine {
	const char *board, *at; /* the latest quarantine event */
	int64_t run_id;
	const char *message;
};
/* Quarantined boards by name; board_id 0 = every board; cb may be NULL (count only). */
int store_quarantined(struct store *s, int64_t board_id,
		      void (*cb)(const struct store_quarantine *q, void *arg), void *arg, int *n,
		      struct lab_err *e);
/* Whether one board is quarantined (the same rule). */
int store_board_quarantined(struct store *s, int64_t board_id, bool *quarantined,
			    struct lab_err *e);

/* The tables `db info` counts, in its order (NULL-terminated). */
extern const char *const store_info_tables[];
/* Rows of a table of the schema; LAB_EUSAGE when this database has no such table. */
int store_table_rows(struct store *s, const char *table, int64_t *n, struct lab_err *e);
/* The rowids of the rows of `table` ("sample" or "counter") whose iteration
 * is in first..last, [*lo, *hi] (through the table's index on iteration_id,
 * which holds them): a night's rows out of many.  The empty range [1, 0]
 * when there is none. */
int store_iter_rowids(struct store *s, const char *table, int64_t first, int64_t last, int64_t *lo,
		      int64_t *hi, struct lab_err *e);
/* PRAGMA page_count, page_size, freelist_count; each -1 when unknown. */
int store_pages(struct store *s, int64_t *count, int64_t *size, int64_t *free_pages,
		struct lab_err *e);

/* Past runs, for the schedule's estimates (schedule.h; store_history.c).  The
 * durations of workload's iterations in jobs of (board type, suite, mode) of
 * finished lab runs, newest first, at most 1000: */
int store_history_durations(struct store *s, const char *type, const char *suite, const char *mode,
			    const char *workload, void (*cb)(double secs, void *arg), void *arg,
			    struct lab_err *e);
/* ... and per (run, board) of that type and suite: the wall time from its
 * first job's start to its last job's end, the sum of its iteration
 * durations and its number of slots (iterations of a job), newest first. */
int store_history_spans(struct store *s, const char *type, const char *suite,
			void (*cb)(double span_s, double dur_s, int64_t slots, void *arg), void *arg,
			struct lab_err *e);

/* Runs of `host` still marked running by the controller (not imported), with
 * the pid their controller wrote in config_json (0 if none). */
int store_runs_running(struct store *s, const char *host,
		       void (*cb)(int64_t run_id, int64_t pid, void *arg), void *arg,
		       struct lab_err *e);
/* A run whose controller died: its unfinished jobs become infra, a
 * 'controller-died' event is written and the run is finished as aborted,
 * in one transaction.  What it committed before stays. */
int store_run_abort_dead(struct store *s, int64_t run_id, struct lab_err *e);
/* Set a run's start and finish time (benchmarks back-date generated nights). */
int store_run_set_times(struct store *s, int64_t run_id, const char *started_at,
			const char *finished_at, struct lab_err *e);

/* A run's identity; absent columns are "" (never NULL). */
struct store_run_row {
	int64_t id;
	char uuid[40];
	char started_at[32], finished_at[32];
	char status[16];
	char plan[128], lab[128];
};
/* LAB_EUSAGE "PATH: no run ID" when there is none. */
int store_run_get(struct store *s, int64_t run_id, struct store_run_row *r, struct lab_err *e);

/* A job of a run with its kernel, board and part names; absent ones "". */
struct store_job_row {
	int64_t id, board_id; /* board_id 0: none */
	const char *suite, *mode, *status, *verified_mode;
	const char *kernel, *board, *board_type, *part, *cid;
};
/* The run's jobs by seq; a nonzero return of cb stops and is returned. */
int store_run_jobs(struct store *s, int64_t run_id,
		   int (*cb)(const struct store_job_row *j, void *arg), void *arg, struct lab_err *e);
/* A job's samples by workload, metric, iteration; warm-up ones left out on request. */
int store_job_samples(struct store *s, int64_t job_id, bool exclude_warmup,
		      void (*cb)(const char *workload, const char *metric, const char *unit,
				 double value, void *arg),
		      void *arg, struct lab_err *e);
/* Transcript paths of a job, and of its board's boots outside any job of the
 * run (board_id 0: none), distinct, oldest first; cb returns false to stop. */
int store_job_transcripts(struct store *s, int64_t run_id, int64_t job_id, int64_t board_id,
			  bool (*cb)(const char *path, void *arg), void *arg, struct lab_err *e);

/* Counts of a run for its summary (the webhook). */
struct store_run_counts {
	int64_t jobs, ok, infra, mismatch, skipped; /* by job status */
	int64_t samples;
	int64_t infra_events; /* events other than 'info' */
};
int store_run_counts(struct store *s, int64_t run_id, struct store_run_counts *c,
		     struct lab_err *e);
enum store_run_names { STORE_NAMES_BOARDS, STORE_NAMES_PARTS, STORE_NAMES_KERNELS };
/* The distinct board names, part labels or kernel versions of a run's jobs, sorted. */
int store_run_names(struct store *s, int64_t run_id, enum store_run_names which,
		    void (*cb)(const char *name, void *arg), void *arg, struct lab_err *e);

/* ---- regression baselines (store_baseline.c) ---- */

struct store_baseline {
	int64_t id;
	const char *name, *kind; /* kind "run" | "last-n" */
	int64_t run_id;          /* 0 for last-n */
	int last_n;              /* 0 for run */
	const char *set_at;      /* "" when unknown */
};
/* Whether run_id exists. */
int store_run_exists(struct store *s, int64_t run_id, bool *exists, struct lab_err *e);
/* Insert or replace the baseline b->name (b->id ignored). */
int store_baseline_put(struct store *s, const struct store_baseline *b, struct lab_err *e);
/* The baseline of that name (*found false when none), or every one by name. */
int store_baseline_get(struct store *s, const char *name,
		       void (*cb)(const struct store_baseline *b, void *arg), void *arg,
		       bool *found, struct lab_err *e);
int store_baseline_list(struct store *s, void (*cb)(const struct store_baseline *b, void *arg),
			void *arg, struct lab_err *e);
/* The last `limit` complete runs of test_run's source started before it
 * (ties broken by id), newest first; caller frees *ids. */
int store_runs_before(struct store *s, int64_t test_run, int limit, int64_t **ids, size_t *n,
		      struct lab_err *e);

/* ---- the upload outbox, table `upload` (store_outbox.c; see upload.h) ---- */

struct store_outbox_row {
	int64_t id, run_id;
	const char *run_uuid, *target, *kind, *idem_key, *item, *state; /* never NULL */
	int64_t attempts;
	const char *next_at, *last_error; /* NULL when unset */
	const char *created_at;           /* never NULL */
	const char *sent_at;              /* NULL until sent */
	const char *spec;                 /* the target's resolved YAML, NULL if none */
};
/* Queue one row (state pending, 0 attempts); an existing row of the same
 * target and idempotency key is left alone. */
int store_outbox_add(struct store *s, int64_t run_id, const char *target, const char *kind,
		     const char *idem_key, const char *next_at, const char *created_at,
		     const char *spec, const char *item, struct lab_err *e);
/* Make a run's rows due at next_at again (pending, 0 attempts, no error):
 * those of `target`, or every row when target is NULL; *changed += rows. */
int store_outbox_requeue(struct store *s, int64_t run_id, const char *target, const char *next_at,
			 int *changed, struct lab_err *e);
/* Rows by id: not sent (or all with `all`); run_id 0 = every run. */
int store_outbox_list(struct store *s, int64_t run_id, bool all,
		      void (*cb)(const struct store_outbox_row *r, void *arg), void *arg,
		      struct lab_err *e);
/* Pending rows (and failed ones with failed_too) by id; cb may write to the
 * store; it returns false to stop. */
int store_outbox_pending(struct store *s, int64_t run_id, bool failed_too,
			 bool (*cb)(const struct store_outbox_row *r, void *arg), void *arg,
			 struct lab_err *e);
/* Before an attempt: charge it (attempts, next_at; a failed row is pending again). */
int store_outbox_charge(struct store *s, int64_t id, int64_t attempts, const char *next_at,
			struct lab_err *e);
/* After an attempt: "sent" (at sent_at, error cleared), or "pending"/"failed"
 * with last_error (a failed row has no next time). */
int store_outbox_record(struct store *s, int64_t id, const char *state, const char *sent_at,
			const char *last_error, struct lab_err *e);
/* Whether row id is sent (false when there is no such row). */
int store_outbox_is_sent(struct store *s, int64_t id, bool *sent, struct lab_err *e);

#endif
