/*
 * upload.h - web uploads of run results through a durable outbox.
 *
 * Targets come from the `uploads:` list of a lab or plan (config.h keeps it
 * raw): each item is {name, kind: squad|http-put|webhook, url, ...}, parsed
 * by upload/target.c with one option table for the common keys and one per
 * kind (upload/squad.c, upload/http_put.c, upload/webhook.c: one ops table
 * each, listed in upload_kinds[] in upload.c).
 *
 * The outbox is the store's `upload` table (store_outbox_* in store.h,
 * driven by upload/outbox.c).  Queueing a run writes one row
 * per thing to send (a SQUAD test run per build/environment, a file of the
 * WebDAV bundle, a webhook call), each with an idempotency key that is the
 * same on every re-send (SQUAD job_id, PUT path, webhook Idempotency-Key),
 * and the target's resolved configuration (no secrets: tokens are only
 * referenced by environment variable or file), so a later
 * `emmclab upload --retry` needs no configuration at all.
 *
 * Sending (upload/sender.c) runs on the loop (libcurl multi through http.h), all due rows of
 * all targets at once.  A row is charged an attempt and given its next
 * time (exponential backoff with jitter) BEFORE its request starts, so a
 * crash mid-send leaves it pending; it becomes `sent` only after the server
 * said so, `failed` only on an answer that retrying cannot change (401,
 * 403, 404, a contract error) or after max_attempts.  Re-sends are harmless:
 * SQUAD answers a known job_id with 400 "already a test run", which counts
 * as delivered; a PUT to the same path replaces the same bytes.
 *
 * Ownership: everything runs on the caller's thread and loop; the library
 * never prints.  Secrets are never stored, logged or put in messages.
 */
#ifndef EMMCLAB_UPLOAD_H
#define EMMCLAB_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "cfgnode.h"
#include "config.h"
#include "http.h"
#include "loop.h"
#include "opt.h"
#include "store.h"
#include "util.h"

/* ---- targets ---- */

struct upload_kind;

struct upload_target {
	char *name;
	int kind_idx;                 /* index into the kind choices */
	char *url;
	char *token_env, *token_file; /* where the token lives (never the token) */
	char *ca_file;                /* PEM bundle for TLS verification */
	uint64_t timeout_ms, connect_timeout_ms;
	uint64_t backoff_ms, max_backoff_ms;
	int64_t max_attempts;         /* 0: retry transient failures forever */
	const struct upload_kind *kind;
	void *cfg;                    /* the kind's own options (kind->cfg_size bytes) */
	char *spec;                   /* resolved target as YAML, stored in each outbox row */
	const char *file;             /* where it was defined (may be "outbox") */
	int line, col;
};

struct upload_targets {
	struct upload_target *v;
	size_t n;
};

/* Parse an `uploads:` sequence (NULL or empty: no targets).  Relative
 * token_file/ca_file/password_file paths resolve against the file that
 * names them.  Errors are LAB_EUSAGE "file:line:col: ...". */
int upload_targets_parse(const struct cfg_node *seq, struct upload_targets *out, struct lab_err *e);
void upload_targets_free(struct upload_targets *t);
/* Validate without keeping anything (for `check` and before a run starts). */
int upload_check_targets(const struct cfg_node *seq, struct lab_err *e);
/* The targets a loaded configuration uses: the plan's list when it has one, else the lab's. */
const struct cfg_node *upload_config_targets(const struct lab_cfg *c);
/* Markdown table of every key, from the option tables (docs/uploads.md). */
void upload_schema_md(FILE *f);

/* ---- queueing ---- */

/* Queue every upload of run_id for the targets, inside the caller's open
 * transaction (store_begin ... store_commit): the rows commit or vanish
 * with whatever else the transaction holds.  Rows that already exist
 * (same target and idempotency key) are left alone. */
int upload_enqueue_run_tx(struct store *s, int64_t run_id, const struct cfg_node *targets,
			  struct lab_err *e);
/* The same in a transaction of its own (a savepoint when one is open). */
int upload_enqueue_run(struct store *s, int64_t run_id, const struct cfg_node *targets,
		       struct lab_err *e);
/* store_run_finish and the queueing in ONE transaction: the call the runner
 * makes at the end of a run.  If the upload configuration is invalid the
 * run is still finished (alone) and the configuration error returned; on a
 * database error (disk full) nothing is written and the error returned:
 * `emmclab upload --run ID --config FILE` queues it later. */
int upload_finish_run(struct store *s, int64_t run_id, const char *status,
		      const struct cfg_node *targets, struct lab_err *e);

/* Make the rows of run_id due now again (state pending, sent ones too):
 * with targets, first queue what those targets want and reset only their
 * rows; without, reset every row of the run.  *n = rows made due. */
int upload_requeue_run(struct store *s, int64_t run_id, const struct cfg_node *targets,
		       int *n, struct lab_err *e);

/* ---- listing ---- */

struct upload_row {
	int64_t id, run_id;
	const char *run_uuid, *target, *kind, *idem_key, *item, *state;
	int64_t attempts;
	const char *next_at, *last_error, *created_at, *sent_at;
};
typedef void (*upload_row_cb)(const struct upload_row *r, void *arg);
/* Rows not sent (pending and failed), or all with `all`; run_id 0 = every run. */
int upload_list(struct store *s, int64_t run_id, bool all, upload_row_cb cb, void *arg,
		struct lab_err *e);

/* ---- sending ---- */

enum upload_verdict {
	UPLOAD_SENT,     /* delivered (or the server already had it) */
	UPLOAD_RETRY,    /* transient: try again after the backoff */
	UPLOAD_REJECTED, /* permanent: retrying the same request cannot help */
};

struct upload_send_opts {
	int64_t run_id;          /* 0: every run */
	const char *spool_dir;   /* bundles are rendered here; NULL: <db dir>/uploads */
	const struct cfg_node *targets; /* configuration overriding the stored one, by name */
	bool now;                /* ignore next_at: send every pending row at once */
	bool failed_too;         /* also send rows in state failed */
	uint64_t max_time_ms;    /* 0: one attempt per due row; else keep retrying due rows
				  * (waiting for their backoff) until all are done or this long */
	int parallel;            /* requests in flight at once (0: 8) */
	/* Progress, once per finished attempt (library code does not print). */
	void (*progress)(void *arg, const struct upload_row *r, enum upload_verdict v,
			 long status, const char *msg);
	void *progress_arg;
};

struct upload_stats {
	int attempted, sent, retry, rejected; /* per attempt */
	int unsent;  /* rows attempted by this call that are not sent at its end */
};

/* Send what is due on loop l (driven here until done).  Returns LAB_OK even
 * when attempts failed (see stats); errors only for the store itself. */
int upload_send(struct store *s, struct loop *l, const struct upload_send_opts *o,
		struct upload_stats *st, struct lab_err *e);

/* ---- for the kinds (upload/<kind>.c) ---- */

struct upload_run {
	int64_t id;
	char uuid[40];
	char started_at[32], finished_at[32];
	char status[16];
	char plan[128], lab[128];
	char date[11];           /* YYYY-MM-DD of started_at (UTC) */
};

struct upload_item {
	char *idem_key;
	char *item;
};
struct upload_items {
	struct upload_item *v;
	size_t n;
};
void upload_items_add(struct upload_items *l, const char *idem_key, const char *item);

/* One outbox row on its way out. */
struct upload_job {
	struct store *s;
	const struct upload_target *t;
	const struct upload_run *run;
	const char *idem_key, *item;
	const char *spool;       /* per-run spool directory (exists) */
	const char *secret;      /* token from token_env/token_file, NULL when none */
};

/* Bumped when struct upload_kind changes; every kind states the version it was written for. */
#define UPLOAD_OPS_VERSION 1
/* Room in the registry (the `kind:` choices are built from it). */
#define UPLOAD_KINDS_MAX 16

struct upload_kind {
	/* The head every driver kind shares (struct driver_head, driver.h). */
	const char *name;
	int version;                 /* UPLOAD_OPS_VERSION */
	const char *help;
	const struct opt *options;   /* the kind's keys (common keys are upload.c's) */
	size_t cfg_size;
	/* Required: name, help, options (may be empty: {0}), items, request. */
	/* Check the parsed options together (optional). */
	int (*check)(struct upload_target *t, struct lab_err *e);
	/* The rows this target sends for a run. */
	int (*items)(struct store *s, const struct upload_target *t, const struct upload_run *run,
		     struct upload_items *out, struct lab_err *e);
	/* Build the request (method, URL, body, auth).  Timeouts, TLS and
	 * redirect policy are applied by upload.c afterwards. */
	int (*request)(struct http *h, const struct upload_job *j, struct http_req **out,
		       struct lab_err *e);
	/* Judge an answer (optional; default upload_judge_default). */
	enum upload_verdict (*judge)(const struct upload_job *j, const struct http_result *res);
};

extern const struct upload_kind upload_squad, upload_http_put, upload_webhook;
/* The registry (upload.c): every kind once, NULL-terminated. */
extern const struct upload_kind *const upload_kinds[];
/* The kind of that name, or NULL. */
const struct upload_kind *upload_kind_find(const char *name);
/* Every entry of kinds has the current ops version, a name and the required
 * hooks; the error names the kind and the hook.  upload_registry_check runs
 * it on upload_kinds[] (at start-up and in test_upload). */
int upload_kinds_check(const struct upload_kind *const *kinds, struct lab_err *e);
int upload_registry_check(struct lab_err *e);

/* 2xx sent; no answer, 408, 425, 429 and 5xx retry; any other status rejected. */
enum upload_verdict upload_judge_default(const struct upload_job *j, const struct http_result *res);

/* The bundle file for a format (html, json, csv, junit, markdown, text, or
 * sqlite: a snapshot of the whole store through the online backup API),
 * rendered into the spool once and reused by every later attempt so that a
 * re-send carries the same bytes.  Fills path and the file name. */
int upload_bundle_file(const struct upload_job *j, const char *format, char *path, size_t n,
		       const char **name, const char **mime, struct lab_err *e);
/* "report.html" ... or "results.db"; NULL for an unknown format. */
const char *upload_bundle_name(const char *format);

/* SQUAD identifiers: [A-Za-z0-9][A-Za-z0-9_.-]*.  upload_squad_slug maps
 * any text onto that set (others become '_', an empty result "none"). */
bool upload_squad_ident_ok(const char *s);
void upload_squad_slug(const char *in, char *out, size_t n);

/* Secrets: the value of environment variable `name`, or the first line of a
 * file that must be a regular file not readable by group or others.  The
 * caller frees *out.  Messages name the variable or file, never the value. */
int upload_secret_env(const char *name, char **out, struct lab_err *e);
int upload_secret_file(const char *path, char **out, struct lab_err *e);
/* Replace every occurrence of secret in msg by "***" (in place, msg stays NUL-terminated). */
void upload_redact(char *msg, size_t n, const char *secret);

/* Expand {kernel} {board} {board_type} {part} {plan} {lab} {date} {run}
 * placeholders from vars (name, value, name, value, ..., NULL); an unknown
 * or unclosed placeholder is LAB_EUSAGE naming it.  Caller frees *out.
 * upload_template_vars lists every name with a sample value (validation). */
int upload_expand(const char *tmpl, const char *const *vars, char **out, struct lab_err *e);
extern const char *const upload_template_vars[];

#endif
