/*
 * store_journal.c - the run's writes: held in memory and in a journal file
 * until they commit (see store.h, "the run's journal").
 *
 * Why: a run must not lose the night because another program (a sqlite3
 * shell, a backup, `db merge`, `import`) holds the database lock.  Every
 * write of a run is an entry: one text line appended to the journal file
 * (so a killed controller loses nothing) and kept in memory; a flush
 * commits every pending entry in one transaction and never waits on the
 * lock for long (the caller retries from a loop timer).  Entries name jobs
 * by their plan index and boards by name, not by row ids, so a journal can
 * be replayed by another process after a crash; the run row keeps the
 * sequence number of the last entry committed (run.journal_seq) in the same
 * transaction, so a replay never applies an entry twice.
 *
 * Line: "<seq> <kind> <at> <field>... <crc32 hex>\n"; a field is "~" (NULL)
 * or "=" and the value with %, space, control bytes and '~' %XX-encoded.
 * A line without its newline or with a wrong CRC (a write cut by a crash)
 * ends the replay there.
 */
#include "store_internal.h"
#include "crc.h"
#include "health.h"
#include "mode.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JNL_MAGIC "emmclab-journal 1"
/* Committed entries stay in the file (a replay skips them by run.journal_seq)
 * until it grows past this: one ftruncate per MiB, not two syscalls a flush. */
#define JNL_RESET_BYTES (1u << 20)

enum {
	JQ_JOB_ID,
	JQ_JOB_INSERT,
	JQ_JOB_START,
	JQ_JOB_PART,
	JQ_JOB_CAUSE,
	JQ_BOARD_ID,
	JQ_MARK,
	JQ_ORIGIN,
	JQ_COUNT
};

static const char *const jq_sql[JQ_COUNT] = {
	[JQ_JOB_ID] = "SELECT id FROM job WHERE run_id = ?1 AND seq = ?2 ORDER BY id LIMIT 1",
	[JQ_JOB_INSERT] = "INSERT INTO job (run_id, board_id, part_id, kernel_id, suite, mode, status,"
			  " seq, kernel_cmdline) VALUES (?1, ?2, NULL, NULL, ?3, ?4, 'pending', ?5, ?6)",
	[JQ_JOB_START] = "UPDATE job SET status = 'running', started_at = COALESCE(started_at, ?2),"
			 " finished_at = NULL, cause = NULL WHERE id = ?1",
	[JQ_JOB_PART] = "UPDATE job SET part_id = ?2, kernel_id = COALESCE(?3, kernel_id) WHERE id = ?1",
	[JQ_JOB_CAUSE] = "UPDATE job SET cause = ?2 WHERE id = ?1",
	[JQ_BOARD_ID] = "SELECT id FROM board WHERE name = ?1",
	[JQ_MARK] = "UPDATE run SET journal_seq = ?2 WHERE id = ?1 AND journal_seq < ?2",
	[JQ_ORIGIN] = "UPDATE iteration SET executor = ?4, job_url = ?5, worker = ?6"
		      " WHERE job_id = ?1 AND workload = ?2 AND n = ?3",
};

/* The applying thread of store_jnl_async: it owns the batch, the journal's
 * own connection and the apply state (q, job_ids, run_id) from flush_start
 * until its eventfd fires; the loop's thread owns them otherwise. */
struct jnl_worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool go, done, quit; /* under mu */
	int efd;             /* readable: a batch was applied (or not) */
	struct store *main_s; /* the caller's connection, given back at close */
	char **lines;        /* the batch, oldest first */
	size_t n;
	int64_t skip;        /* entries up to this seq are committed already */
	bool busy;
	int rc;
	struct lab_err err;
};

struct store_jnl {
	struct store *s;
	struct jnl_worker *w; /* NULL: flushes apply on the caller's thread */
	bool inflight;        /* a batch is with the worker */
	char *path; /* NULL: memory only (":memory:" databases, tests) */
	int fd;
	char uuid[40];
	int64_t run_id;   /* 0 until the run row is known */
	int64_t next_seq; /* of the next entry */
	int64_t mark;     /* run.journal_seq as last committed by us; -1 unknown */
	uint64_t bytes;   /* in the file: it is emptied past JNL_RESET_BYTES */
	char **lines;     /* pending entries, oldest first */
	size_t n, cap;
	int64_t *job_ids; /* by plan index; 0 unknown */
	size_t njob_ids;
	sqlite3_stmt *q[JQ_COUNT];
	struct lab_buf line;
};

/* ---- encoding ---- */

static void put_field(struct lab_buf *b, const char *v)
{
	if (!v) {
		lab_buf_append(b, " ~", 2);
		return;
	}
	static const char hex[] = "0123456789ABCDEF";
	lab_buf_append(b, " =", 2);
	/* runs of plain bytes in one append: values are mostly plain */
	const unsigned char *p = (const unsigned char *)v, *run = p;
	for (;; p++) {
		if (*p > ' ' && *p != '%' && *p != '~' && *p < 0x7f)
			continue;
		lab_buf_append(b, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		char x[3] = {'%', hex[*p >> 4], hex[*p & 15]};
		lab_buf_append(b, x, 3);
		run = p + 1;
	}
}

static void put_i64(struct lab_buf *b, int64_t v)
{
	char t[24]; /* what " =%" PRId64 writes, without snprintf (70,000 a 64-board night) */
	uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	lab_fmt_fixed(t, sizeof t, m, 0, v < 0);
	lab_buf_append(b, " =", 2);
	lab_buf_append(b, t, strlen(t));
}

static void put_dbl(struct lab_buf *b, double v)
{
	char t[40];
	lab_fmt_double(t, sizeof t, v);
	lab_buf_append(b, " =", 2);
	lab_buf_append(b, t, strlen(t));
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode one field in place: NULL for "~", else the value. */
static int decode_field(char *f, char **out)
{
	if (strcmp(f, "~") == 0) {
		*out = NULL;
		return 0;
	}
	if (f[0] != '=')
		return -1;
	char *w = f;
	for (char *r = f + 1; *r; r++) {
		if (*r == '%') {
			int h = hexval(r[1]), l = h >= 0 ? hexval(r[2]) : -1;
			if (l < 0)
				return -1;
			*w++ = (char)(h * 16 + l);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	*out = f;
	return 0;
}

/* A parsed entry: fields point into a private copy of the line. */
struct entry {
	char *buf;
	int64_t seq;
	const char *kind, *at;
	char **f;
	size_t nf;
};

static void entry_free(struct entry *en)
{
	free(en->buf);
	free(en->f);
	en->buf = NULL;
	en->f = NULL;
}

/* Split and check a line (without its newline); -1 when damaged. */
static int entry_parse(const char *line, struct entry *en)
{
	memset(en, 0, sizeof *en);
	const char *sp = strrchr(line, ' ');
	if (!sp)
		return -1;
	char crc[16];
	snprintf(crc, sizeof crc, "%08x", crc32_ieee(line, (size_t)(sp - line)));
	if (strcmp(sp + 1, crc) != 0)
		return -1;
	en->buf = xstrndup(line, (size_t)(sp - line));
	size_t nt = 1;
	for (const char *p = en->buf; *p; p++)
		nt += *p == ' ';
	char **tok = xcalloc(nt, sizeof *tok);
	size_t k = 0;
	char *save = NULL;
	for (char *t = strtok_r(en->buf, " ", &save); t && k < nt; t = strtok_r(NULL, " ", &save))
		tok[k++] = t;
	en->f = tok; /* fields are decoded into the same array, shifted by 3 */
	if (k < 3 || lab_parse_i64(tok[0], &en->seq))
		goto bad;
	en->kind = tok[1];
	char *at;
	if (decode_field(tok[2], &at) || !at)
		goto bad;
	en->at = at;
	for (size_t i = 3; i < k; i++)
		if (decode_field(tok[i], &en->f[en->nf++]))
			goto bad;
	return 0;
bad:
	entry_free(en);
	return -1;
}

static const char *fs(const struct entry *en, size_t i)
{
	return i < en->nf ? en->f[i] : NULL;
}

static int64_t fi(const struct entry *en, size_t i, int64_t def)
{
	int64_t v;
	const char *t = fs(en, i);
	return t && lab_parse_i64(t, &v) == 0 ? v : def;
}

static double fd_(const struct entry *en, size_t i)
{
	double v;
	const char *t = fs(en, i);
	return t && lab_parse_double(t, &v) == 0 ? v : 0;
}

/* ---- applying entries (inside the flush's transaction) ---- */

static sqlite3_stmt *jq(struct store_jnl *j, int id, struct lab_err *e)
{
	if (!j->q[id]) {
		if (sqlite3_prepare_v3(store_sqlite(j->s), jq_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
				       &j->q[id], NULL) != SQLITE_OK) {
			store_fail_infra(j->s, e, "prepare");
			j->q[id] = NULL;
			return NULL;
		}
	} else {
		sqlite3_reset(j->q[id]);
		sqlite3_clear_bindings(j->q[id]);
	}
	return j->q[id];
}

static int jq_done(struct store_jnl *j, sqlite3_stmt *q, const char *what, struct lab_err *e)
{
	int r;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		;
	sqlite3_reset(q);
	return r == SQLITE_DONE ? LAB_OK : store_fail(j->s, e, r, what);
}

static int find_run(struct store_jnl *j, struct lab_err *e)
{
	if (j->run_id)
		return LAB_OK;
	int rc = store_run_find(j->s, j->uuid, &j->run_id, e);
	if (rc)
		j->run_id = 0;
	return rc;
}

static int job_id(struct store_jnl *j, int64_t seq, int64_t *id, struct lab_err *e)
{
	if (seq < 0)
		return LAB_ERR(e, LAB_EUSAGE, "journal: job %" PRId64, seq);
	if ((size_t)seq < j->njob_ids && j->job_ids[seq]) {
		*id = j->job_ids[seq];
		return LAB_OK;
	}
	int rc = find_run(j, e);
	if (rc)
		return rc;
	sqlite3_stmt *q = jq(j, JQ_JOB_ID, e);
	if (!q)
		return LAB_EINFRA;
	sqlite3_bind_int64(q, 1, j->run_id);
	sqlite3_bind_int64(q, 2, seq);
	int r = sqlite3_step(q);
	*id = r == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	sqlite3_reset(q);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return store_fail(j->s, e, r, "finding a job");
	if (!*id)
		return LAB_ERR(e, LAB_EUSAGE, "journal of run %s: no job %" PRId64, j->uuid, seq);
	if ((size_t)seq >= j->njob_ids) {
		size_t n = (size_t)seq * 2 + 16;
		j->job_ids = xrealloc(j->job_ids, n * sizeof *j->job_ids);
		memset(j->job_ids + j->njob_ids, 0, (n - j->njob_ids) * sizeof *j->job_ids);
		j->njob_ids = n;
	}
	j->job_ids[seq] = *id;
	return LAB_OK;
}

static int board_id(struct store_jnl *j, const char *name, int64_t *id, struct lab_err *e)
{
	*id = 0;
	if (!name)
		return LAB_OK;
	sqlite3_stmt *q = jq(j, JQ_BOARD_ID, e);
	if (!q)
		return LAB_EINFRA;
	store_bind_text(q, 1, name);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW)
		*id = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	return r == SQLITE_ROW || r == SQLITE_DONE ? LAB_OK : store_fail(j->s, e, r, "finding a board");
}

static int opt_job(struct store_jnl *j, const struct entry *en, size_t i, int64_t *id,
		   struct lab_err *e)
{
	int64_t seq = fi(en, i, -1);
	*id = 0;
	return seq < 0 ? LAB_OK : job_id(j, seq, id, e);
}

static int apply_iteration(struct store_jnl *j, const struct entry *en, struct lab_err *e)
{
	/* seq workload n duration warmup nsamples (metric value unit)* ncounters (name value)* */
	int64_t jid;
	int rc = job_id(j, fi(en, 0, -1), &jid, e);
	if (rc)
		return rc;
	size_t ns = (size_t)fi(en, 4, 0), at = 5;
	if (ns > en->nf || at + ns * 3 >= en->nf)
		return LAB_ERR(e, LAB_EUSAGE, "journal: short iteration entry");
	struct store_sample *sm = xcalloc(ns + 1, sizeof *sm);
	for (size_t i = 0; i < ns; i++, at += 3)
		sm[i] = (struct store_sample){fs(en, at), fd_(en, at + 1), fs(en, at + 2)};
	size_t nc = (size_t)fi(en, at++, 0);
	struct store_counter *ct = xcalloc(nc + 1, sizeof *ct);
	if (nc > en->nf)
		nc = 0;
	for (size_t i = 0; i < nc && at + 1 < en->nf; i++, at += 2)
		ct[i] = (struct store_counter){fs(en, at), fi(en, at + 1, 0)};
	rc = store_iteration_write(j->s, jid, fs(en, 1), (int)fi(en, 2, 0), fd_(en, 3),
				   (int)fi(en, 5 + ns * 3 + 1 + nc * 2, 0), sm, ns, ct, nc, NULL, e);
	free(sm);
	free(ct);
	return rc;
}

static int apply(struct store_jnl *j, const struct entry *en, struct lab_err *e)
{
	const char *k = en->kind;
	int64_t jid = 0, bid = 0;
	int rc;
	sqlite3_stmt *q;
	if (strcmp(k, "run") == 0) { /* plan lab source config_json note */
		struct store_run_info ri = {.uuid = j->uuid, .plan = fs(en, 0), .lab = fs(en, 1),
					    .source = fs(en, 2), .config_json = fs(en, 3),
					    .note = fs(en, 4)};
		struct lab_err fe = {0};
		if (find_run(j, &fe) == LAB_OK)
			return LAB_OK; /* replayed again after a commit it did not see */
		return store_run_begin(j->s, &ri, &j->run_id, e);
	}
	if (strcmp(k, "resume") == 0) /* config_json */
		return (rc = find_run(j, e)) ? rc : store_run_resume(j->s, j->run_id, fs(en, 0), e);
	if (strcmp(k, "board") == 0) /* name type host lab */
		return store_board_upsert(j->s, fs(en, 0), fs(en, 1), fs(en, 2), fs(en, 3), &bid, e);
	if (strcmp(k, "job") == 0) { /* seq board suite mode cmdline */
		if ((rc = find_run(j, e)) || (rc = board_id(j, fs(en, 1), &bid, e)))
			return rc;
		if (lab_mode_parse(fs(en, 3)) < 0 || !fs(en, 2))
			return LAB_ERR(e, LAB_EUSAGE, "journal: job without suite or mode");
		if (!(q = jq(j, JQ_JOB_INSERT, e)))
			return LAB_EINFRA;
		sqlite3_bind_int64(q, 1, j->run_id);
		if (bid)
			sqlite3_bind_int64(q, 2, bid);
		store_bind_text(q, 3, fs(en, 2));
		store_bind_text(q, 4, fs(en, 3));
		sqlite3_bind_int64(q, 5, fi(en, 0, 0));
		store_bind_text(q, 6, fs(en, 4));
		return jq_done(j, q, "writing a job", e);
	}
	if (strcmp(k, "start") == 0) { /* seq */
		if ((rc = job_id(j, fi(en, 0, -1), &jid, e)) || !(q = jq(j, JQ_JOB_START, e)))
			return rc ? rc : LAB_EINFRA;
		sqlite3_bind_int64(q, 1, jid);
		store_bind_text(q, 2, en->at);
		return jq_done(j, q, "starting a job", e);
	}
	if (strcmp(k, "part") == 0) { /* seq kernel label cid manfid ... ext_csd_hex */
		if ((rc = job_id(j, fi(en, 0, -1), &jid, e)))
			return rc;
		struct store_part p;
		store_part_init(&p);
		p.label = fs(en, 2);
		p.cid = fs(en, 3);
		p.manfid = fs(en, 4);
		p.oemid = fs(en, 5);
		p.name = fs(en, 6);
		p.prv = fs(en, 7);
		p.serial = fs(en, 8);
		p.date = fs(en, 9);
		p.fwrev = fs(en, 10);
		p.ext_csd_rev = (int)fi(en, 11, -1);
		p.capacity_bytes = fi(en, 12, -1);
		p.cache_kib = fi(en, 13, -1);
		p.rel_wr_param = (int)fi(en, 14, -1);
		p.rel_sectors = (int)fi(en, 15, -1);
		p.cmdq_support = (int)fi(en, 16, -1);
		p.cmdq_depth = (int)fi(en, 17, -1);
		p.ext_csd_hex = fs(en, 18);
		int64_t pid = 0, kid = 0;
		if ((rc = store_part_upsert(j->s, &p, &pid, e)))
			return rc;
		if (fs(en, 1) && *fs(en, 1) &&
		    (rc = store_kernel_upsert(j->s, fs(en, 1), NULL, NULL, NULL, &kid, e)))
			return rc;
		if (!(q = jq(j, JQ_JOB_PART, e)))
			return LAB_EINFRA;
		sqlite3_bind_int64(q, 1, jid);
		sqlite3_bind_int64(q, 2, pid);
		if (kid)
			sqlite3_bind_int64(q, 3, kid);
		return jq_done(j, q, "recording a job's part", e);
	}
	if (strcmp(k, "verified") == 0) { /* seq fua wc cqe mode [by] */
		if ((rc = job_id(j, fi(en, 0, -1), &jid, e)) ||
		    (rc = store_job_verified(j->s, jid, (int)fi(en, 1, -1), (int)fi(en, 2, -1),
					     (int)fi(en, 3, -1), fs(en, 4), e)))
			return rc;
		/* a journal written before schema 6 has no sixth field */
		return fs(en, 5) && *fs(en, 5) ? store_job_verified_by(j->s, jid, fs(en, 5), e) : 0;
	}
	if (strcmp(k, "end") == 0) { /* seq status cause */
		if ((rc = job_id(j, fi(en, 0, -1), &jid, e)) ||
		    (rc = store_job_finish(j->s, jid, fs(en, 1), e)))
			return rc;
		if (!(q = jq(j, JQ_JOB_CAUSE, e)))
			return LAB_EINFRA;
		sqlite3_bind_int64(q, 1, jid);
		store_bind_text(q, 2, fs(en, 2));
		return jq_done(j, q, "recording a job's cause", e);
	}
	if (strcmp(k, "iter") == 0)
		return apply_iteration(j, en, e);
	if (strcmp(k, "origin") == 0) { /* seq workload n executor job_url worker */
		if ((rc = job_id(j, fi(en, 0, -1), &jid, e)))
			return rc;
		if (!(q = jq(j, JQ_ORIGIN, e)))
			return LAB_EINFRA;
		sqlite3_bind_int64(q, 1, jid);
		store_bind_text(q, 2, fs(en, 1));
		sqlite3_bind_int64(q, 3, fi(en, 2, 0));
		store_bind_text(q, 4, fs(en, 3));
		store_bind_text(q, 5, fs(en, 4) && *fs(en, 4) ? fs(en, 4) : NULL);
		store_bind_text(q, 6, fs(en, 5) && *fs(en, 5) ? fs(en, 5) : NULL);
		return jq_done(j, q, "recording where an iteration ran", e);
	}
	if (strcmp(k, "drop") == 0) /* seq workload n */
		return (rc = job_id(j, fi(en, 0, -1), &jid, e))
			       ? rc
			       : store_iteration_drop(j->s, jid, fs(en, 1), (int)fi(en, 2, 0), e);
	if (strcmp(k, "event") == 0) { /* seq board kind stage message */
		if ((rc = find_run(j, e)) || (rc = opt_job(j, en, 0, &jid, e)) ||
		    (rc = board_id(j, fs(en, 1), &bid, e)))
			return rc;
		return store_event(j->s, j->run_id, jid, bid, fs(en, 2), fs(en, 3), fs(en, 4), e);
	}
	if (strcmp(k, "transcript") == 0) { /* seq board path sha bytes boot_n */
		if ((rc = find_run(j, e)) || (rc = opt_job(j, en, 0, &jid, e)) ||
		    (rc = board_id(j, fs(en, 1), &bid, e)))
			return rc;
		return store_transcript(j->s, j->run_id, jid, bid, fs(en, 2), fs(en, 3),
					fi(en, 4, 0), (int)fi(en, 5, 0), e);
	}
	if (strcmp(k, "health") == 0) { /* seq phase life_a life_b pre_eol src flag (schema 7) */
		struct health_reading h;
		health_reading_init(&h);
		h.life_a = (int)fi(en, 2, -1);
		h.life_b = (int)fi(en, 3, -1);
		h.pre_eol = (int)fi(en, 4, -1);
		lab_strlcpy(h.src, fs(en, 5) ? fs(en, 5) : "", sizeof h.src);
		return (rc = job_id(j, fi(en, 0, -1), &jid, e))
			       ? rc
			       : store_health_write(j->s, jid, en->at, fs(en, 1), &h, fs(en, 6), e);
	}
	return LAB_ERR(e, LAB_EUSAGE, "journal: unknown entry '%s'", k);
}

/* ---- the journal object ---- */

static void worker_stop(struct store_jnl *j);
static void finalize_stmts(struct store_jnl *j);

static int jnl_write(struct store_jnl *j, const char *data, size_t len, struct lab_err *e)
{
	while (j->fd >= 0 && len > 0) {
		ssize_t w = write(j->fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return LAB_ERR(e, LAB_EINFRA, "%s: %s", j->path, strerror(errno));
		data += w;
		len -= (size_t)w;
		j->bytes += (uint64_t)w;
	}
	return LAB_OK;
}

/* Start an entry: "<seq> <kind> =<at>". */
static struct lab_buf *begin(struct store_jnl *j, const char *kind)
{
	char at[32];
	lab_utc_iso(at, sizeof at, (int64_t)time(NULL));
	j->line.len = 0;
	lab_buf_printf(&j->line, "%" PRId64 " %s", j->next_seq, kind);
	put_field(&j->line, at);
	return &j->line;
}

/* End it: CRC, newline, into the file and the pending list. */
static int end(struct store_jnl *j, struct lab_err *e)
{
	struct lab_buf *b = &j->line;
	lab_buf_printf(b, " %08x\n", crc32_ieee(b->data, b->len));
	int rc = jnl_write(j, b->data, b->len, e);
	if (rc)
		return rc;
	if (j->n == j->cap) {
		j->cap = j->cap ? j->cap * 2 : 64;
		j->lines = xrealloc(j->lines, j->cap * sizeof *j->lines);
	}
	j->lines[j->n++] = xstrndup(b->data, b->len - 1);
	j->next_seq++;
	return LAB_OK;
}

/* Apply entries in one transaction; *busy when the lock was not had.
 * Entries up to `mark` (their seq) are recorded in run.journal_seq. */
static int apply_lines(struct store_jnl *j, char **lines, size_t n, int64_t skip_upto, bool *busy,
		       size_t *bad_line, struct lab_err *e)
{
	struct store *s = j->s;
	*busy = false;
	if (n == 0)
		return LAB_OK;
	struct lab_err be = {0};
	if (store_begin(s, &be)) {
		if (store_busy(s)) {
			*busy = true;
			return LAB_OK;
		}
		*e = be;
		return be.rc;
	}
	int rc = LAB_OK;
	int64_t last = 0;
	size_t i;
	/* any failure below rolls the whole transaction back: no savepoint per entry */
	store_set_units_flat(s, true);
	for (i = 0; i < n && rc == LAB_OK; i++) {
		struct entry en;
		if (entry_parse(lines[i], &en)) {
			rc = LAB_ERR(e, LAB_EINFRA, "%s: damaged entry %zu",
				     j->path ? j->path : "journal", i + 1);
			break;
		}
		if (en.seq > skip_upto) {
			store_set_clock(s, en.at);
			rc = apply(j, &en, e);
			last = en.seq;
		}
		entry_free(&en);
		if (rc && bad_line)
			*bad_line = i;
	}
	store_set_clock(s, NULL);
	store_set_units_flat(s, false);
	if (rc == LAB_OK && last && find_run(j, e) == LAB_OK) {
		sqlite3_stmt *q = jq(j, JQ_MARK, e);
		if (!q) {
			rc = LAB_EINFRA;
		} else {
			sqlite3_bind_int64(q, 1, j->run_id);
			sqlite3_bind_int64(q, 2, last);
			rc = jq_done(j, q, "marking the journal", e);
		}
	}
	if (rc == LAB_OK)
		rc = store_commit(s, e);
	if (rc) {
		bool b = store_busy(s);
		store_rollback(s);
		/* Ids learnt inside the transaction are gone with it. */
		if (j->job_ids)
			memset(j->job_ids, 0, j->njob_ids * sizeof *j->job_ids);
		j->run_id = 0;
		if (b) {
			*busy = true;
			return LAB_OK;
		}
	}
	return rc;
}

static int64_t run_mark(struct store_jnl *j)
{
	struct lab_err e = {0};
	if (find_run(j, &e))
		return 0;
	sqlite3_stmt *q = NULL;
	int64_t v = 0;
	if (sqlite3_prepare_v2(store_sqlite(j->s), "SELECT journal_seq FROM run WHERE id = ?1", -1,
			       &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, j->run_id);
		if (sqlite3_step(q) == SQLITE_ROW)
			v = sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	return v;
}

/* Read the file's whole entries (up to the first damaged one). */
static int read_lines(struct store_jnl *j, char ***out, size_t *n, char uuid[40], struct lab_err *e)
{
	*out = NULL;
	*n = 0;
	struct lab_buf b;
	lab_buf_init(&b, 0);
	char chunk[65536];
	if (lseek(j->fd, 0, SEEK_SET) < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", j->path, strerror(errno));
	for (;;) {
		ssize_t r = read(j->fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			lab_buf_free(&b);
			return LAB_ERR(e, LAB_EINFRA, "%s: %s", j->path, strerror(errno));
		}
		if (r == 0)
			break;
		lab_buf_append(&b, chunk, (size_t)r);
	}
	size_t cap = 0;
	char *p = b.data, *endp = b.data + b.len;
	bool first = true;
	while (p && p < endp) {
		char *nl = memchr(p, '\n', (size_t)(endp - p));
		if (!nl)
			break; /* cut by a crash: never acknowledged */
		*nl = '\0';
		if (first) {
			first = false;
			if (strncmp(p, JNL_MAGIC " ", sizeof JNL_MAGIC) == 0 && uuid)
				lab_strlcpy(uuid, p + sizeof JNL_MAGIC, 40);
			p = nl + 1;
			continue;
		}
		struct entry en;
		if (entry_parse(p, &en))
			break;
		entry_free(&en);
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*out = xrealloc(*out, cap * sizeof **out);
		}
		(*out)[(*n)++] = xstrdup(p);
		p = nl + 1;
	}
	lab_buf_free(&b);
	return LAB_OK;
}

static void free_lines(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

static int jnl_reset_file(struct store_jnl *j, struct lab_err *e)
{
	if (j->fd < 0)
		return LAB_OK;
	if (ftruncate(j->fd, 0) < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", j->path, strerror(errno));
	j->bytes = 0;
	char head[96];
	int n = snprintf(head, sizeof head, "%s %s\n", JNL_MAGIC, j->uuid);
	return jnl_write(j, head, (size_t)n, e);
}

static int open_locked(const char *path, int *fd, struct lab_err *e)
{
	*fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (*fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;
		close(*fd);
		*fd = -1;
		if (err == EWOULDBLOCK)
			return LAB_ERR(e, LAB_EINFRA, "%s: in use by another controller", path);
		return LAB_ERR(e, LAB_EINFRA, "%s: flock: %s", path, strerror(err));
	}
	return LAB_OK;
}

char *store_journal_dir(struct store *s)
{
	const char *p = store_path(s);
	if (!p || strcmp(p, ":memory:") == 0 || strncmp(p, "file:", 5) == 0)
		return NULL;
	return xasprintf("%s.pending", p);
}

static struct store_jnl *jnl_new(struct store *s, const char *uuid)
{
	struct store_jnl *j = xcalloc(1, sizeof *j);
	j->s = s;
	j->fd = -1;
	j->next_seq = 1;
	j->mark = -1;
	lab_strlcpy(j->uuid, uuid, sizeof j->uuid);
	lab_buf_init(&j->line, 0);
	return j;
}

void store_jnl_close(struct store_jnl *j)
{
	if (!j)
		return;
	worker_stop(j);
	/* Nothing pending: the file has served; else it waits for a replay. */
	if (j->fd >= 0 && j->n == 0 && j->path) {
		unlink(j->path);
		/* An empty directory goes too: `rm lab.db*` keeps working. */
		char *sl = strrchr(j->path, '/');
		if (sl) {
			*sl = '\0';
			rmdir(j->path);
		}
	}
	if (j->fd >= 0)
		close(j->fd);
	finalize_stmts(j);
	free_lines(j->lines, j->n);
	free(j->job_ids);
	lab_buf_free(&j->line);
	free(j->path);
	free(j);
}

/* Replay what an earlier process of this run left, then start afresh. */
static int adopt(struct store_jnl *j, struct lab_err *e)
{
	char **old;
	size_t n;
	int rc = read_lines(j, &old, &n, NULL, e);
	if (rc)
		return rc;
	if (n == 0) {
		free(old);
		return jnl_reset_file(j, e);
	}
	struct entry en;
	if (entry_parse(old[n - 1], &en) == 0) {
		j->next_seq = en.seq + 1;
		entry_free(&en);
	}
	/* They stay pending (in memory and, rewritten, in the file) until committed. */
	if ((rc = jnl_reset_file(j, e)) == LAB_OK)
		for (size_t i = 0; i < n && rc == LAB_OK; i++) {
			rc = jnl_write(j, old[i], strlen(old[i]), e);
			if (!rc)
				rc = jnl_write(j, "\n", 1, e);
		}
	j->lines = old;
	j->n = j->cap = n;
	return rc;
}

int store_jnl_open(struct store *s, const char *uuid, struct store_jnl **out, struct lab_err *e)
{
	*out = NULL;
	if (!uuid || !*uuid || strlen(uuid) >= 40 || strchr(uuid, '/'))
		return LAB_ERR(e, LAB_EUSAGE, "journal: bad run uuid");
	struct store_jnl *j = jnl_new(s, uuid);
	char *dir = store_journal_dir(s);
	int rc = LAB_OK;
	if (dir) {
		if (lab_mkdir_p(dir, 0755)) {
			rc = LAB_ERR(e, LAB_EINFRA, "cannot create %s: %s", dir, strerror(errno));
			free(dir);
			store_jnl_close(j);
			return rc;
		}
		j->path = xasprintf("%s/%s.jnl", dir, uuid);
		free(dir);
		if ((rc = open_locked(j->path, &j->fd, e)) || (rc = adopt(j, e))) {
			free(j->path);
			j->path = NULL; /* keep the file for a later replay */
			if (j->fd >= 0)
				close(j->fd);
			j->fd = -1;
			store_jnl_close(j);
			return rc;
		}
	}
	/* A resumed run numbers on after what its earlier processes committed:
	 * entries at or below run.journal_seq are skipped as already applied. */
	int64_t mark = run_mark(j);
	if (j->next_seq <= mark)
		j->next_seq = mark + 1;
	/* Only this process (it holds the journal's flock) commits the run's
	 * entries from now on: the mark is known without asking again. */
	j->mark = j->run_id ? mark : -1;
	j->run_id = 0; /* looked up again inside the first flush */
	*out = j;
	return LAB_OK;
}

/* ---- applying on a worker thread ---- */

static void *worker_main(void *arg)
{
	struct store_jnl *j = arg;
	struct jnl_worker *w = j->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->go && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->quit)
			break;
		w->go = false;
		pthread_mutex_unlock(&w->mu);
		w->err = (struct lab_err){0};
		w->busy = false;
		w->rc = apply_lines(j, w->lines, w->n, w->skip, &w->busy, NULL, &w->err);
		pthread_mutex_lock(&w->mu);
		w->done = true;
		pthread_cond_broadcast(&w->cv);
		uint64_t one = 1;
		while (write(w->efd, &one, sizeof one) < 0 && errno == EINTR)
			;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void finalize_stmts(struct store_jnl *j)
{
	for (int i = 0; i < JQ_COUNT; i++) {
		sqlite3_finalize(j->q[i]);
		j->q[i] = NULL;
	}
}

int store_jnl_async(struct store_jnl *j, int busy_ms, struct lab_err *e)
{
	if (j->w || !j->path)
		return LAB_OK; /* memory databases: a second connection is another database */
	struct store *ws;
	int rc = store_open(store_path(j->s), STORE_NO_MIGRATE | STORE_NO_FK, &ws, e);
	if (rc)
		return rc;
	store_set_busy_timeout(ws, busy_ms);
	struct jnl_worker *w = xcalloc(1, sizeof *w);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		rc = LAB_ERR(e, LAB_EINFRA, "journal: eventfd: %s", strerror(errno));
		store_close(ws);
		free(w);
		return rc;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (j->mark < 0)
		j->mark = run_mark(j);
	finalize_stmts(j); /* prepared on the caller's connection */
	w->main_s = j->s;
	j->s = ws;
	j->w = w;
	int err = lab_thread_start(&w->th, worker_main, j);
	if (err) {
		j->s = w->main_s;
		j->w = NULL;
		close(w->efd);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		store_close(ws);
		return LAB_ERR(e, LAB_EINFRA, "journal: thread: %s", strerror(err));
	}
	return LAB_OK;
}

void store_jnl_async_end(struct store_jnl *j)
{
	if (j)
		worker_stop(j);
}

int store_jnl_async_fd(const struct store_jnl *j)
{
	return j && j->w ? j->w->efd : -1;
}

bool store_jnl_inflight(const struct store_jnl *j)
{
	return j && j->inflight;
}

bool store_jnl_flush_start(struct store_jnl *j)
{
	struct jnl_worker *w = j->w;
	if (!w || j->inflight || j->n == 0)
		return false;
	w->lines = j->lines;
	w->n = j->n;
	w->skip = j->mark;
	j->lines = NULL;
	j->n = j->cap = 0;
	j->inflight = true;
	pthread_mutex_lock(&w->mu);
	w->done = false;
	w->go = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return true;
}

static int64_t line_seq(const char *line)
{
	return strtoll(line, NULL, 10);
}

/* The batch's outcome, on the caller's thread once the worker is done. */
static int batch_done(struct store_jnl *j, size_t *applied, bool *busy, struct lab_err *e)
{
	struct jnl_worker *w = j->w;
	j->inflight = false;
	*busy = w->busy;
	*applied = 0;
	if (w->rc || w->busy) {
		/* Still pending, before what came meanwhile. */
		size_t n = w->n + j->n;
		char **l = xreallocarray(NULL, n ? n : 1, sizeof *l);
		memcpy(l, w->lines, w->n * sizeof *l);
		if (j->n)
			memcpy(l + w->n, j->lines, j->n * sizeof *l);
		free(j->lines);
		free(w->lines);
		j->lines = l;
		j->n = j->cap = n;
		w->lines = NULL;
		w->n = 0;
		if (w->rc)
			*e = w->err;
		return w->rc;
	}
	*applied = w->n;
	if (w->n)
		j->mark = line_seq(w->lines[w->n - 1]);
	free_lines(w->lines, w->n);
	w->lines = NULL;
	w->n = 0;
	/* Emptied only with nothing pending: what came meanwhile stays in the file. */
	return j->n == 0 && j->bytes > JNL_RESET_BYTES ? jnl_reset_file(j, e) : LAB_OK;
}

int store_jnl_flush_done(struct store_jnl *j, size_t *applied, bool *busy, struct lab_err *e)
{
	*busy = false;
	*applied = 0;
	if (!j->w || !j->inflight)
		return LAB_OK;
	uint64_t v;
	if (read(j->w->efd, &v, sizeof v) < 0 && errno == EAGAIN)
		return LAB_OK; /* not yet */
	pthread_mutex_lock(&j->w->mu);
	bool done = j->w->done;
	pthread_mutex_unlock(&j->w->mu);
	if (!done)
		return LAB_OK;
	return batch_done(j, applied, busy, e);
}

/* Wait for the worker's batch (close, a synchronous flush). */
static int wait_batch(struct store_jnl *j, bool *busy, struct lab_err *e)
{
	*busy = false;
	if (!j->w || !j->inflight)
		return LAB_OK;
	pthread_mutex_lock(&j->w->mu);
	while (!j->w->done)
		pthread_cond_wait(&j->w->cv, &j->w->mu);
	pthread_mutex_unlock(&j->w->mu);
	uint64_t v;
	while (read(j->w->efd, &v, sizeof v) < 0 && errno == EINTR)
		;
	size_t applied;
	return batch_done(j, &applied, busy, e);
}

static void worker_stop(struct store_jnl *j)
{
	struct jnl_worker *w = j->w;
	if (!w)
		return;
	bool busy;
	struct lab_err e = {0};
	wait_batch(j, &busy, &e); /* what failed stays pending: the file stays */
	pthread_mutex_lock(&w->mu);
	w->quit = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	close(w->efd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	finalize_stmts(j);
	store_close(j->s);
	j->s = w->main_s;
	j->w = NULL;
	free(w);
}

int store_jnl_flush(struct store_jnl *j, bool *busy, struct lab_err *e)
{
	*busy = false;
	int rc = wait_batch(j, busy, e);
	if (rc || *busy)
		return rc;
	if (j->n == 0)
		return LAB_OK;
	int64_t mark = j->mark >= 0 ? j->mark : run_mark(j);
	rc = apply_lines(j, j->lines, j->n, mark, busy, NULL, e);
	if (rc || *busy)
		return rc;
	for (size_t i = 0; i < j->n; i++)
		free(j->lines[i]);
	j->n = 0;
	j->mark = j->next_seq - 1;
	return j->bytes > JNL_RESET_BYTES ? jnl_reset_file(j, e) : LAB_OK;
}

size_t store_jnl_pending(const struct store_jnl *j)
{
	return j->n;
}

int64_t store_jnl_run_id(struct store_jnl *j)
{
	if (j->inflight)
		return 0; /* the worker has the connection: ask after its batch */
	struct lab_err e = {0};
	find_run(j, &e);
	return j->run_id;
}

const char *store_jnl_uuid(const struct store_jnl *j)
{
	return j->uuid;
}

int store_jnl_replay_dir(struct store *s, int *replayed, struct lab_buf *log, struct lab_err *e)
{
	*replayed = 0;
	char *dir = store_journal_dir(s);
	if (!dir)
		return LAB_OK;
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return LAB_OK;
	}
	struct dirent *de;
	int rc = LAB_OK;
	while ((de = readdir(d)) != NULL && rc == LAB_OK) {
		size_t len = strlen(de->d_name);
		if (len < 5 || len > 44 || strcmp(de->d_name + len - 4, ".jnl") != 0)
			continue;
		char uuid[40];
		lab_strlcpy(uuid, de->d_name, len - 3 < sizeof uuid ? len - 3 : sizeof uuid);
		struct store_jnl *j = jnl_new(s, uuid);
		j->path = xasprintf("%s/%s", dir, de->d_name);
		struct lab_err le = {0};
		if (open_locked(j->path, &j->fd, &le)) {
			/* Its run is alive (or the file is not ours to take): leave it. */
			free(j->path);
			j->path = NULL;
			store_jnl_close(j);
			continue;
		}
		char **lines;
		size_t n;
		bool busy = false;
		if ((rc = read_lines(j, &lines, &n, NULL, e)) == LAB_OK) {
			size_t bad = 0;
			int64_t mark = run_mark(j);
			struct lab_err ae = {0};
			int arc = apply_lines(j, lines, n, mark, &busy, &bad, &ae);
			if (busy) {
				rc = LAB_ERR(e, LAB_EINFRA, "%s: database busy, journal not replayed",
					     store_path(s));
			} else if (arc) {
				/* Never retried forever: set aside with its reason, reported once. */
				char *aside = xasprintf("%s.bad", j->path);
				rename(j->path, aside);
				if (log)
					lab_buf_printf(log, "%s: entry %zu: %s; set aside as %s\n",
						       j->path, bad + 1, ae.msg, aside);
				free(aside);
			} else {
				unlink(j->path);
				if (n && log)
					lab_buf_printf(log, "%s: %zu entries of run %s replayed\n",
						       j->path, n, uuid);
				(*replayed)++;
			}
			free_lines(lines, n);
		}
		/* The file is dealt with (removed or set aside); keep close() from
		 * unlinking a new one of the same name. */
		free(j->path);
		j->path = NULL;
		if (busy) {
			close(j->fd);
			j->fd = -1;
		}
		store_jnl_close(j);
	}
	closedir(d);
	rmdir(dir); /* fails, as it should, while a journal is left in it */
	free(dir);
	return rc;
}

/* ---- entries ---- */

int store_jnl_run(struct store_jnl *j, const struct store_run_info *ri, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "run");
	put_field(b, ri->plan);
	put_field(b, ri->lab);
	put_field(b, ri->source);
	put_field(b, ri->config_json);
	put_field(b, ri->note);
	return end(j, e);
}

int store_jnl_resume(struct store_jnl *j, const char *config_json, struct lab_err *e)
{
	put_field(begin(j, "resume"), config_json);
	return end(j, e);
}

int store_jnl_board(struct store_jnl *j, const char *name, const char *type, const char *host,
		    const char *lab, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "board");
	put_field(b, name);
	put_field(b, type);
	put_field(b, host);
	put_field(b, lab);
	return end(j, e);
}

int store_jnl_job(struct store_jnl *j, int seq, const char *board, const char *suite,
		  const char *mode, const char *cmdline, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "job");
	put_i64(b, seq);
	put_field(b, board);
	put_field(b, suite);
	put_field(b, mode);
	put_field(b, cmdline);
	return end(j, e);
}

int store_jnl_job_start(struct store_jnl *j, int seq, struct lab_err *e)
{
	put_i64(begin(j, "start"), seq);
	return end(j, e);
}

static void put_opt(struct lab_buf *b, int64_t v)
{
	if (v < 0)
		put_field(b, NULL);
	else
		put_i64(b, v);
}

int store_jnl_job_part(struct store_jnl *j, int seq, const struct store_part *p,
		       const char *kernel, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "part");
	put_i64(b, seq);
	put_field(b, kernel);
	put_field(b, p->label);
	put_field(b, p->cid);
	put_field(b, p->manfid);
	put_field(b, p->oemid);
	put_field(b, p->name);
	put_field(b, p->prv);
	put_field(b, p->serial);
	put_field(b, p->date);
	put_field(b, p->fwrev);
	put_opt(b, p->ext_csd_rev);
	put_opt(b, p->capacity_bytes);
	put_opt(b, p->cache_kib);
	put_opt(b, p->rel_wr_param);
	put_opt(b, p->rel_sectors);
	put_opt(b, p->cmdq_support);
	put_opt(b, p->cmdq_depth);
	put_field(b, p->ext_csd_hex);
	return end(j, e);
}

int store_jnl_job_verified(struct store_jnl *j, int seq, int fua, int write_cache, int cqe,
			   const char *verified_mode, const char *verified_by, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "verified");
	put_i64(b, seq);
	put_opt(b, fua);
	put_opt(b, write_cache);
	put_opt(b, cqe);
	put_field(b, verified_mode);
	put_field(b, verified_by ? verified_by : "");
	return end(j, e);
}

int store_jnl_job_finish(struct store_jnl *j, int seq, const char *status, const char *cause,
			 struct lab_err *e)
{
	struct lab_buf *b = begin(j, "end");
	put_i64(b, seq);
	put_field(b, status);
	put_field(b, cause);
	return end(j, e);
}

int store_jnl_iteration(struct store_jnl *j, int seq, const char *workload, int n,
			double duration_s, int warmup, const struct store_sample *samples,
			size_t nsamples, const struct store_counter *counters, size_t ncounters,
			struct lab_err *e)
{
	struct lab_buf *b = begin(j, "iter");
	put_i64(b, seq);
	put_field(b, workload);
	put_i64(b, n);
	put_dbl(b, duration_s);
	put_i64(b, (int64_t)nsamples);
	for (size_t i = 0; i < nsamples; i++) {
		put_field(b, samples[i].metric);
		put_dbl(b, samples[i].value);
		put_field(b, samples[i].unit);
	}
	put_i64(b, (int64_t)ncounters);
	for (size_t i = 0; i < ncounters; i++) {
		put_field(b, counters[i].name);
		put_i64(b, counters[i].value);
	}
	put_i64(b, warmup ? 1 : 0);
	return end(j, e);
}

int store_jnl_iteration_origin(struct store_jnl *j, int seq, const char *workload, int n,
			       const char *executor, const char *job_url, const char *worker,
			       struct lab_err *e)
{
	struct lab_buf *b = begin(j, "origin");
	put_i64(b, seq);
	put_field(b, workload);
	put_i64(b, n);
	put_field(b, executor);
	put_field(b, job_url ? job_url : "");
	put_field(b, worker ? worker : "");
	return end(j, e);
}

int store_jnl_iteration_drop(struct store_jnl *j, int seq, const char *workload, int n,
			     struct lab_err *e)
{
	struct lab_buf *b = begin(j, "drop");
	put_i64(b, seq);
	put_field(b, workload);
	put_i64(b, n);
	return end(j, e);
}

int store_jnl_event(struct store_jnl *j, int seq, const char *board, const char *kind,
		    const char *stage, const char *message, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "event");
	if (seq >= 0)
		put_i64(b, seq);
	else
		put_field(b, NULL);
	put_field(b, board);
	put_field(b, kind);
	put_field(b, stage);
	put_field(b, message ? message : "");
	return end(j, e);
}

int store_jnl_health(struct store_jnl *j, int seq, const char *phase,
		     const struct health_reading *h, const char *flag, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "health");
	put_i64(b, seq);
	put_field(b, phase);
	put_opt(b, h->life_a);
	put_opt(b, h->life_b);
	put_opt(b, h->pre_eol);
	put_field(b, h->src);
	put_field(b, flag);
	return end(j, e);
}

int store_jnl_transcript(struct store_jnl *j, int seq, const char *board, const char *path,
			 const char *sha256, int64_t bytes, int boot_n, struct lab_err *e)
{
	struct lab_buf *b = begin(j, "transcript");
	if (seq >= 0)
		put_i64(b, seq);
	else
		put_field(b, NULL);
	put_field(b, board);
	put_field(b, path);
	put_field(b, sha256);
	put_i64(b, bytes);
	put_i64(b, boot_n);
	return end(j, e);
}
