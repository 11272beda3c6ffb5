/* test_upload.c - upload targets, secrets, the outbox in the run's
 * transaction (rollback, idempotence, disk full), backoff and give-up. */
#include "tap.h"
#include "upload.h"
#include "store_internal.h" /* fault injection and row inspection */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/emmclab-test-upload-XXXXXX";

static struct cfg_node *yaml(const char *text)
{
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("t.yaml", text, strlen(text), &n, &e)) {
		printf("# yaml: %s\n", e.msg);
		return NULL;
	}
	return n;
}

static int check(const char *text, struct lab_err *e)
{
	struct cfg_node *n = yaml(text);
	lab_err_clear(e);
	int rc = upload_check_targets(n, e);
	cfg_free(n);
	return rc;
}

static long long q_int(struct store *s, const char *sql)
{
	sqlite3_stmt *q;
	long long v = -1;
	if (sqlite3_prepare_v2(store_sqlite(s), sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static char *q_str(struct store *s, const char *sql)
{
	sqlite3_stmt *q;
	char *v = NULL;
	if (sqlite3_prepare_v2(store_sqlite(s), sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
	    sqlite3_column_text(q, 0))
		v = xstrdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return v;
}

static void test_idents(void)
{
	char b[64];
	ok(upload_squad_ident_ok("6.1.0-emmclab"), "kernel version is an identifier");
	ok(!upload_squad_ident_ok("_x"), "leading underscore refused");
	ok(!upload_squad_ident_ok("a b"), "space refused");
	ok(!upload_squad_ident_ok(""), "empty refused");
	upload_squad_slug("DUT1 Foresee 32GB module (Pine64, blue PCB)", b, sizeof b);
	is_str(b, "DUT1_Foresee_32GB_module_Pine64_blue_PCB", "part label slug");
	ok(upload_squad_ident_ok(b), "slug is an identifier");
	upload_squad_slug("6.1.0+", b, sizeof b);
	is_str(b, "6.1.0", "trailing junk dropped");
	upload_squad_slug("--/x", b, sizeof b);
	is_str(b, "x", "leading separators dropped");
	upload_squad_slug("", b, sizeof b);
	is_str(b, "none", "empty becomes none");
	upload_squad_slug("äö", b, sizeof b);
	is_str(b, "none", "only non-ASCII becomes none");

	char *x = NULL;
	struct lab_err e = {0};
	const char *vars[] = {"kernel", "6.1", "date", "2026-01-02", NULL};
	is_int(upload_expand("k{kernel}-{date}", vars, &x, &e), LAB_OK, "expand");
	is_str(x, "k6.1-2026-01-02", "expanded");
	free(x);
	is_int(upload_expand("{nope}", vars, &x, &e), LAB_EUSAGE, "unknown placeholder");
	ok(strstr(e.msg, "{nope}") != NULL, "names it: %s", e.msg);
	lab_err_clear(&e);
	is_int(upload_expand("{kernel", vars, &x, &e), LAB_EUSAGE, "unclosed placeholder");
}

static void test_parse(void)
{
	struct lab_err e = {0};
	is_int(check("- {name: s, kind: squad, url: 'https://squad.example/', group: g, project: p}", &e),
	       LAB_OK, "minimal squad target");
	is_int(check("- {name: s, kind: squad, url: 'https://x/', group: g, projekt: p}", &e), LAB_EUSAGE,
	       "typo in a kind key");
	ok(strstr(e.msg, "did you mean 'project'") != NULL, "suggests: %s", e.msg);
	ok(strstr(e.msg, "t.yaml:1:") != NULL, "names file:line: %s", e.msg);
	is_int(check("- {name: s, kind: squad, url: 'https://x/', group: g, project: p, tokn_env: T}", &e),
	       LAB_EUSAGE, "typo in a common key");
	ok(strstr(e.msg, "token_env") != NULL, "suggests token_env: %s", e.msg);
	is_int(check("- {name: s, kind: ftp, url: 'https://x/'}", &e), LAB_EUSAGE, "unknown kind");
	is_int(check("- {name: s, kind: webhook, url: 'https://u:pw@x/'}", &e), LAB_EUSAGE,
	       "credentials in the url refused");
	ok(strstr(e.msg, "no credentials in the url") != NULL && !strstr(e.msg, "pw@"),
	   "says why without echoing: %s", e.msg);
	is_int(check("- {name: s, kind: webhook, url: 'ftp://x/'}", &e), LAB_EUSAGE, "ftp refused");
	is_int(check("- {name: s, kind: webhook, url: 'https://x/', token_env: A, token_file: b}", &e),
	       LAB_EUSAGE, "token_env and token_file exclusive");
	is_int(check("- {name: a, kind: webhook, url: 'https://x/'}\n- {name: a, kind: webhook, url: 'https://y/'}",
		     &e), LAB_EUSAGE, "duplicate names");
	is_int(check("- {name: 'a b', kind: webhook, url: 'https://x/'}", &e), LAB_EUSAGE, "bad name");
	is_int(check("- {name: s, kind: squad, url: 'https://x/', group: 'my group', project: p}", &e),
	       LAB_EUSAGE, "group must be a SQUAD identifier");
	is_int(check("- {name: s, kind: squad, url: 'https://x/', group: g, project: p, build: '{branch}'}", &e),
	       LAB_EUSAGE, "unknown placeholder in build");
	is_int(check("- {name: d, kind: http-put, url: 'https://x/', files: [html, pdf]}", &e), LAB_EUSAGE,
	       "unknown bundle file");
	is_int(check("- {name: d, kind: http-put, url: 'https://x/', user: u}", &e), LAB_EUSAGE,
	       "user without a password source");
	is_int(check("- {name: d, kind: http-put, url: 'https://x/', user: u, password_env: P, token_env: T}", &e),
	       LAB_EUSAGE, "user/password and token exclusive");
	is_int(check("- {name: d, kind: webhook, url: 'https://x/', retry_backoff: 1h, retry_max_backoff: 1m}", &e),
	       LAB_EUSAGE, "max backoff below backoff");
	is_int(check("{name: d}", &e), LAB_EUSAGE, "uploads must be a list");
	is_int(check("[]", &e), LAB_OK, "empty list is fine");

	/* Relative file paths resolve against the config file, in the stored spec too. */
	struct cfg_node *n = NULL;
	const char *txt = "- {name: d, kind: http-put, url: 'https://x/', token_file: tok, ca_file: ca.pem}\n";
	cfg_parse_buffer("/etc/emmclab/lab.yaml", txt, strlen(txt), &n, &e);
	struct upload_targets tl;
	is_int(upload_targets_parse(n, &tl, &e), LAB_OK, "parse with paths");
	cfg_free(n);
	if (tl.n == 1) {
		is_str(tl.v[0].token_file, "/etc/emmclab/tok", "token_file absolute");
		is_str(tl.v[0].ca_file, "/etc/emmclab/ca.pem", "ca_file absolute");
		ok(strstr(tl.v[0].spec, "/etc/emmclab/tok") != NULL, "spec holds the absolute path");
		/* The spec parses back to the same target. */
		struct cfg_node *back = NULL;
		is_int(cfg_parse_buffer("spec", tl.v[0].spec, strlen(tl.v[0].spec), &back, &e), LAB_OK,
		       "spec is YAML");
		struct cfg_node *seq = yaml("[]");
		if (seq && back) {
			free(seq->items);
			seq->items = xcalloc(1, sizeof *seq->items);
			seq->items[0] = back;
			seq->n = 1;
			struct upload_targets t2;
			is_int(upload_targets_parse(seq, &t2, &e), LAB_OK, "spec re-parses");
			if (t2.n == 1) {
				is_str(t2.v[0].ca_file, "/etc/emmclab/ca.pem", "same ca_file");
				is_int(t2.v[0].timeout_ms, tl.v[0].timeout_ms, "same timeout");
			}
			upload_targets_free(&t2);
		}
		cfg_free(seq);
	}
	upload_targets_free(&tl);
}

static void test_secrets(void)
{
	struct lab_err e = {0};
	char path[256], *v = NULL;
	snprintf(path, sizeof path, "%s/token", tmpdir);
	FILE *f = fopen(path, "w");
	fputs("tok-123\nsecond line ignored\n", f);
	fclose(f);
	chmod(path, 0644);
	is_int(upload_secret_file(path, &v, &e), LAB_EUSAGE, "world-readable token file refused");
	ok(strstr(e.msg, "chmod 600") != NULL && !strstr(e.msg, "tok-123"), "says so, no value: %s", e.msg);
	chmod(path, 0640);
	lab_err_clear(&e);
	is_int(upload_secret_file(path, &v, &e), LAB_EUSAGE, "group-readable token file refused");
	chmod(path, 0600);
	lab_err_clear(&e);
	is_int(upload_secret_file(path, &v, &e), LAB_OK, "mode 600 accepted");
	is_str(v, "tok-123", "first line, newline stripped");
	free(v);
	lab_err_clear(&e);
	is_int(upload_secret_file(tmpdir, &v, &e), LAB_EUSAGE, "a directory is not a secret file");
	lab_err_clear(&e);
	/* A FIFO with no writer: refused at once, not an open() that blocks the loop
	 * (the alarm kills the test if it does). */
	char *fifo = xasprintf("%s/token.fifo", tmpdir);
	ok(mkfifo(fifo, 0600) == 0, "fifo made");
	alarm(10);
	is_int(upload_secret_file(fifo, &v, &e), LAB_EUSAGE, "a FIFO is not a secret file");
	alarm(0);
	unlink(fifo);
	free(fifo);
	unsetenv("EMMCLAB_T_TOKEN");
	lab_err_clear(&e);
	is_int(upload_secret_env("EMMCLAB_T_TOKEN", &v, &e), LAB_EUSAGE, "unset env");
	setenv("EMMCLAB_T_TOKEN", "a\r\nX-Injected: 1", 1);
	lab_err_clear(&e);
	is_int(upload_secret_env("EMMCLAB_T_TOKEN", &v, &e), LAB_EUSAGE, "header injection refused");
	ok(!strstr(e.msg, "Injected"), "value not echoed: %s", e.msg);
	setenv("EMMCLAB_T_TOKEN", "abc", 1);
	is_int(upload_secret_env("EMMCLAB_T_TOKEN", &v, &e), LAB_OK, "env token");
	free(v);

	char msg[128] = "HTTP 401: token supersecret is wrong (supersecret)";
	upload_redact(msg, sizeof msg, "supersecret");
	is_str(msg, "HTTP 401: token *** is wrong (***)", "redacted");
}

/* A run with an ok job (samples) and an infra job (transcript). */
static int64_t make_run(struct store *s, struct lab_err *e)
{
	struct store_part p;
	store_part_init(&p);
	p.label = "DUT1 Foresee 32GB";
	p.cid = "15010038474e443352";
	int64_t part, board, kernel, run, j1, j2, it;
	if (store_part_upsert(s, &p, &part, e) || store_board_upsert(s, "pine64-1", "sprd", "sdhci-sprd", "lab", &board, e) ||
	    store_kernel_upsert(s, "6.1.0-emmclab+", "abc", NULL, NULL, &kernel, e))
		return 0;
	struct store_run_info ri = {.plan = "nightly", .lab = "lab"};
	if (store_run_begin(s, &ri, &run, e))
		return 0;
	struct store_job_info ji = {.run_id = run, .board_id = board, .part_id = part, .kernel_id = kernel,
				    .suite = "androbench", .mode = "fua", .seq = 1};
	if (store_job_begin(s, &ji, &j1, e) || store_job_verified(s, j1, 1, 1, 0, "fua", e))
		return 0;
	struct store_sample sm[] = {{"seq_write", 20.5, "MiB/s"}, {"rand_write", 1.5, "MiB/s"}};
	if (store_iteration_write(s, j1, "androbench", 1, 10, 0, sm, 2, NULL, 0, &it, e) ||
	    store_iteration_write(s, j1, "androbench", 2, 10, 0, sm, 2, NULL, 0, &it, e) ||
	    store_job_finish(s, j1, "ok", e))
		return 0;
	ji.mode = "cache-nofua";
	ji.seq = 2;
	if (store_job_begin(s, &ji, &j2, e) || store_job_finish(s, j2, "infra", e))
		return 0;
	char tp[256];
	snprintf(tp, sizeof tp, "%s/boot-2.log", tmpdir);
	FILE *f = fopen(tp, "w");
	fputs("U-Boot 2023.01\nresetting ...\n", f);
	fclose(f);
	if (store_transcript(s, run, j2, board, tp, "00", 30, 1, e))
		return 0;
	return run;
}

static const char *targets_yaml(int port)
{
	static char buf[1024];
	snprintf(buf, sizeof buf,
		 "- {name: sq, kind: squad, url: 'http://127.0.0.1:%d', group: lab, project: emmc,"
		 "   environment: '{board}-{part}', retry_backoff: 40ms, retry_max_backoff: 100ms, max_attempts: 3,"
		 "   connect_timeout: 1s}\n"
		 "- {name: dav, kind: http-put, url: 'http://127.0.0.1:%d/dav', files: [html, sqlite],"
		 "   retry_backoff: 40ms, retry_max_backoff: 100ms, connect_timeout: 1s}\n"
		 "- {name: hook, kind: webhook, url: 'http://127.0.0.1:%d/hook', retry_backoff: 1h}\n",
		 port, port, port);
	return buf;
}

/* A port nothing listens on (connect refused at once). */
static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	bind(fd, (struct sockaddr *)&a, sizeof a);
	getsockname(fd, (struct sockaddr *)&a, &l);
	close(fd);
	return ntohs(a.sin_port);
}

static void count_row(const struct upload_row *r, void *arg)
{
	LAB_UNUSED(r);
	(*(int *)arg)++;
}

static void test_outbox(void)
{
	struct lab_err e = {0};
	char db[256];
	snprintf(db, sizeof db, "%s/lab.db", tmpdir);
	struct store *s = NULL;
	if (store_open(db, 0, &s, &e)) {
		ok(0, "store_open: %s", e.msg);
		return;
	}
	int64_t run = make_run(s, &e);
	ok(run > 0, "run made %s", e.msg);
	int port = closed_port();
	struct cfg_node *t = yaml(targets_yaml(port));

	is_int(upload_enqueue_run_tx(s, run, t, &e), LAB_EUSAGE, "_tx refuses to run outside a transaction");
	lab_err_clear(&e);

	/* Rolled back with the run's finish: nothing queued, run still running. */
	store_begin(s, &e);
	store_run_finish(s, run, "complete", &e);
	is_int(upload_enqueue_run_tx(s, run, t, &e), LAB_OK, "queued inside the transaction");
	ok(q_int(s, "SELECT count(*) FROM upload") == 4, "visible inside: 1 squad (one board/part/kernel) + 2 files + 1 hook (%lld)",
	   q_int(s, "SELECT count(*) FROM upload"));
	store_rollback(s);
	is_int(q_int(s, "SELECT count(*) FROM upload"), 0, "rollback drops the rows");
	char *st = q_str(s, "SELECT status FROM run");
	is_str(st, "running", "and the finish");
	free(st);

	/* Disk full while queueing: an error, nothing half-written. */
	long long pages = q_int(s, "PRAGMA page_count");
	char sql[128];
	snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", pages);
	sqlite3_exec(store_sqlite(s), sql, NULL, NULL, NULL);
	lab_err_clear(&e);
	/* Enough rows to need a new page. */
	struct lab_buf big;
	lab_buf_init(&big, 0);
	lab_buf_printf(&big, "%s", targets_yaml(port));
	for (int i = 0; i < 60; i++)
		lab_buf_printf(&big, "- {name: hook%d, kind: webhook, url: 'http://127.0.0.1:%d/hook%d/%s'}\n", i,
			       port, i, "padding-padding-padding-padding-padding-padding-padding-padding");
	struct cfg_node *bt = yaml(lab_buf_cstr(&big));
	lab_buf_free(&big);
	int rc = upload_finish_run(s, run, "complete", bt, &e);
	is_int(rc, LAB_EINFRA, "disk full is an infrastructure error");
	ok(strstr(e.msg, "full") != NULL, "says full: %s", e.msg);
	is_int(q_int(s, "SELECT count(*) FROM upload"), 0, "no row queued");
	st = q_str(s, "SELECT status FROM run");
	is_str(st, "running", "run not finished either (same transaction)");
	free(st);
	sqlite3_exec(store_sqlite(s), "PRAGMA max_page_count = 1073741823", NULL, NULL, NULL);
	cfg_free(bt);

	/* Bad upload configuration: the run still finishes, the error comes back. */
	struct cfg_node *bad = yaml("- {name: x, kind: squad, url: 'http://h/'}");
	lab_err_clear(&e);
	is_int(upload_finish_run(s, run, "complete", bad, &e), LAB_EUSAGE, "bad targets reported");
	st = q_str(s, "SELECT status FROM run");
	is_str(st, "complete", "run finished anyway");
	free(st);
	cfg_free(bad);
	sqlite3_exec(store_sqlite(s), "UPDATE run SET status = 'running', finished_at = NULL", NULL, NULL, NULL);

	lab_err_clear(&e);
	is_int(upload_finish_run(s, run, "complete", t, &e), LAB_OK, "finish + queue");
	is_int(q_int(s, "SELECT count(*) FROM upload"), 4, "four rows");
	is_int(q_int(s, "SELECT count(*) FROM run WHERE status = 'complete'"), 1, "run complete");
	is_int(upload_enqueue_run(s, run, t, &e), LAB_OK, "queue again");
	is_int(q_int(s, "SELECT count(*) FROM upload"), 4, "idempotent: still four");
	char *key = q_str(s, "SELECT group_concat(idem_key || '|' || item, ';') FROM upload WHERE target = 'sq'");
	ok(key && strstr(key, ".6.1.0-emmclab.pine64-1-DUT1_Foresee_32GB|6.1.0-emmclab\tpine64-1-DUT1_Foresee_32GB"),
	   "squad job_id and item from kernel/board/part: %s", key ? key : "(null)");
	free(key);
	key = q_str(s, "SELECT idem_key FROM upload WHERE target = 'dav' AND item = 'sqlite'");
	ok(key && strlen(key) == 10 + 1 + 36 + 1 + 10 && strstr(key, "/results.db"), "put path <date>/<uuid>/results.db: %s",
	   key ? key : "(null)");
	free(key);
	ok(q_int(s, "SELECT count(*) FROM upload WHERE spec LIKE '%kind: squad%'") == 1, "spec stored");

	/* Nothing listens: every attempt fails fast, is charged and rescheduled. */
	struct loop *l = loop_new();
	char spool[256];
	snprintf(spool, sizeof spool, "%s/spool", tmpdir);
	struct upload_send_opts so = {.spool_dir = spool};
	struct upload_stats stats;
	int64_t t0 = (int64_t)time(NULL);
	is_int(upload_send(s, l, &so, &stats, &e), LAB_OK, "one pass");
	is_int(stats.attempted, 4, "all four due rows tried at once");
	is_int(stats.retry, 4, "all to retry");
	is_int(q_int(s, "SELECT count(*) FROM upload WHERE attempts = 1 AND state = 'pending'"), 4, "charged");
	is_int(q_int(s, "SELECT count(*) FROM upload WHERE last_error LIKE 'connect failed%'"), 4, "last_error");
	/* next_at: backoff/2 .. backoff after now (40 ms for sq/dav, 1 h for the hook). */
	long long hook_wait = q_int(s, "SELECT CAST((julianday(next_at) - julianday('now')) * 86400 AS INTEGER)"
				      " FROM upload WHERE target = 'hook'");
	ok(hook_wait >= 1790 && hook_wait <= 3600, "hook backs off 30..60 min (%lld s)", hook_wait);
	struct stat sb;
	char snap[512];
	snprintf(snap, sizeof snap, "%s/spool", tmpdir);
	ok(stat(snap, &sb) == 0, "spool created");

	is_int(upload_send(s, l, &so, &stats, &e), LAB_OK, "second pass right away");
	ok(stats.attempted <= 3, "the hour-away hook is not due (%d tried)", stats.attempted);

	/* Keep retrying for a while: sq gives up after 3 attempts, dav keeps going. */
	so.max_time_ms = 1500;
	is_int(upload_send(s, l, &so, &stats, &e), LAB_OK, "retry loop");
	is_int(q_int(s, "SELECT count(*) FROM upload WHERE target = 'sq' AND state = 'failed' AND attempts = 3"), 1,
	       "the squad row gave up after max_attempts");
	char *le = q_str(s, "SELECT last_error FROM upload WHERE target = 'sq' LIMIT 1");
	ok(le && strstr(le, "gave up after 3 attempts"), "says so: %s", le ? le : "(null)");
	free(le);
	ok(q_int(s, "SELECT min(attempts) FROM upload WHERE target = 'dav'") >= 4, "dav retried on (%lld)",
	   q_int(s, "SELECT min(attempts) FROM upload WHERE target = 'dav'"));
	is_int(q_int(s, "SELECT count(*) FROM upload WHERE target = 'dav' AND state = 'pending'"), 2, "still pending");
	is_int(q_int(s, "SELECT attempts FROM upload WHERE target = 'hook'"), 1, "hook waits its hour");
	ok((int64_t)time(NULL) - t0 < 10, "bounded by max_time");
	snprintf(snap, sizeof snap, "%s/spool", tmpdir);

	/* Requeue: failed rows pending again, attempts reset. */
	int n = 0;
	is_int(upload_requeue_run(s, run, NULL, &n, &e), LAB_OK, "requeue");
	is_int(n, 4, "every row of the run");
	is_int(q_int(s, "SELECT count(*) FROM upload WHERE state = 'pending' AND attempts = 0"), 4, "fresh");

	/* A snapshot was written into the spool (sqlite format) on a PUT attempt. */
	char *uuid = q_str(s, "SELECT uuid FROM run");
	snprintf(snap, sizeof snap, "%s/spool/%s/results.db", tmpdir, uuid);
	ok(stat(snap, &sb) == 0 && sb.st_size > 0, "snapshot in the spool");
	sqlite3 *sdb;
	if (sqlite3_open_v2(snap, &sdb, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *q;
		long long ns = -1;
		if (sqlite3_prepare_v2(sdb, "SELECT count(*) FROM sample", -1, &q, NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW)
			ns = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
		is_int(ns, 4, "snapshot holds the samples");
	}
	sqlite3_close(sdb);
	free(uuid);

	/* Listing: unsent rows, or all of them. */
	int rows = 0;
	is_int(upload_list(s, run, false, count_row, &rows, &e), LAB_OK, "list");
	is_int(rows, 4, "four unsent");
	sqlite3_exec(store_sqlite(s), "UPDATE upload SET state = 'sent' WHERE target = 'hook'", NULL, NULL, NULL);
	rows = 0;
	upload_list(s, 0, false, count_row, &rows, &e);
	is_int(rows, 3, "sent rows are not listed");
	rows = 0;
	upload_list(s, 0, true, count_row, &rows, &e);
	is_int(rows, 4, "unless all");
	loop_free(l);
	cfg_free(t);
	store_close(s);
}

static int fake_items(struct store *s, const struct upload_target *t, const struct upload_run *run,
		      struct upload_items *out, struct lab_err *e)
{
	LAB_UNUSED(s);
	LAB_UNUSED(t);
	LAB_UNUSED(run);
	LAB_UNUSED(out);
	LAB_UNUSED(e);
	return LAB_OK;
}

static int fake_request(struct http *h, const struct upload_job *j, struct http_req **out,
			struct lab_err *e)
{
	LAB_UNUSED(h);
	LAB_UNUSED(j);
	LAB_UNUSED(out);
	LAB_UNUSED(e);
	return LAB_OK;
}

static const struct opt no_opts[] = {{0}};

/* The registry check refuses what would crash on a kind's first upload. */
static void test_registry(void)
{
	struct lab_err e = {0};
	is_int(upload_registry_check(&e), LAB_OK, "every registered upload kind is complete");
	size_t n = 0;
	while (upload_kinds[n])
		n++;
	is_int(n, 3, "three upload kinds registered");
	ok(upload_kind_find("http-put") == &upload_http_put, "kinds are found by name");
	ok(upload_kind_find("ftp") == NULL, "an unknown kind is not found");

	const struct upload_kind good = {.name = "fake", .version = UPLOAD_OPS_VERSION,
					 .options = no_opts, .help = "a test kind",
					 .items = fake_items, .request = fake_request};
	struct upload_kind k = good;
	const struct upload_kind *one[] = {&k, NULL};
	e = (struct lab_err){0}; /* lab_err keeps the first error */
	is_int(upload_kinds_check(one, &e), LAB_OK, "a complete kind passes");
	k.version = UPLOAD_OPS_VERSION + 1;
	e = (struct lab_err){0};
	is_int(upload_kinds_check(one, &e), LAB_EINFRA, "a wrong ops version is refused");
	is_str(e.msg, "upload driver 'fake': ops version 2, expected 1", "message names kind and version");
	k = good;
	k.name = NULL;
	e = (struct lab_err){0};
	is_int(upload_kinds_check(one, &e), LAB_EINFRA, "a kind without a name is refused");
	k = good;
	k.request = NULL;
	e = (struct lab_err){0};
	is_int(upload_kinds_check(one, &e), LAB_EINFRA, "a kind without request is refused");
	is_str(e.msg, "upload driver 'fake': no request hook", "message names kind and hook");
	k = good;
	k.items = NULL;
	e = (struct lab_err){0};
	is_int(upload_kinds_check(one, &e), LAB_EINFRA, "a kind without items is refused");
	is_str(e.msg, "upload driver 'fake': no items hook", "message names the hook");
	k = good;
	const struct upload_kind *twice[] = {&k, &k, NULL};
	e = (struct lab_err){0};
	is_int(upload_kinds_check(twice, &e), LAB_EINFRA, "a kind listed twice is refused");
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	test_idents();
	test_parse();
	test_secrets();
	test_outbox();
	test_registry();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (!getenv("KEEP"))
		(void)!system(cmd);
	return tap_done();
}
