/* cmd_status.c - `emmclab status`: recent runs, events of the last run,
 * quarantined boards and the upload outbox, read-only. */
#include "cli.h"
#include "store.h"

#include <inttypes.h>
#include <string.h>

enum { OPT_DB = CLI_LONG_ONLY, OPT_LAST };

const struct cli_opt cmd_status_opts[] = {
	{"db", OPT_DB, "PATH", "results database (default $EMMCLAB_DB, else results/lab.db)", 0},
	{"last", OPT_LAST, "N", "show the newest N runs (default 10)", 0},
	{NULL, 0, NULL, NULL, 0},
};

static const char *col(sqlite3_stmt *q, int i)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	return t ? t : "-";
}

/* Run a query and hand each row to a printer; false on SQL error. */
static int each_row(struct store *s, const char *sql, int64_t arg,
		    void (*row)(sqlite3_stmt *q, int n), int *nrows, struct lab_err *e)
{
	sqlite3_stmt *q;
	int r = sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL);
	if (r != SQLITE_OK)
		return lab_err_set(e, LAB_EINFRA, "%s: %s", store_path(s), sqlite3_errmsg(store_db(s)));
	if (sqlite3_bind_parameter_count(q))
		sqlite3_bind_int64(q, 1, arg);
	int n = 0;
	while ((r = sqlite3_step(q)) == SQLITE_ROW)
		row(q, n++);
	sqlite3_finalize(q);
	if (nrows)
		*nrows = n;
	if (r != SQLITE_DONE)
		return lab_err_set(e, LAB_EINFRA, "%s: %s", store_path(s), sqlite3_errmsg(store_db(s)));
	return LAB_OK;
}

static void print_run(sqlite3_stmt *q, int n)
{
	if (n == 0)
		printf("  %5s  %-20s  %-8s  %-28s  %5s %5s %5s %5s %8s\n", "run", "started", "status",
		       "source / plan", "jobs", "ok", "infra", "mism", "samples");
	char src[64];
	snprintf(src, sizeof src, "%s%s%s", col(q, 3), sqlite3_column_type(q, 4) != SQLITE_NULL ? " / " : "",
		 sqlite3_column_type(q, 4) != SQLITE_NULL ? col(q, 4) : "");
	printf("  %5lld  %-20s  %-8s  %-28.28s  %5lld %5lld %5lld %5lld %8lld\n",
	       (long long)sqlite3_column_int64(q, 0), col(q, 1), col(q, 2), src,
	       (long long)sqlite3_column_int64(q, 5), (long long)sqlite3_column_int64(q, 6),
	       (long long)sqlite3_column_int64(q, 7), (long long)sqlite3_column_int64(q, 8),
	       (long long)sqlite3_column_int64(q, 9));
}

static void print_event_kind(sqlite3_stmt *q, int n)
{
	LAB_UNUSED(n);
	printf("  %-16s %5lld  last: %s%s%s\n", col(q, 0), (long long)sqlite3_column_int64(q, 1),
	       col(q, 2), sqlite3_column_type(q, 3) != SQLITE_NULL ? " on " : "",
	       sqlite3_column_type(q, 3) != SQLITE_NULL ? col(q, 3) : "");
}

static void print_quarantine(sqlite3_stmt *q, int n)
{
	LAB_UNUSED(n);
	printf("  %-16s since %s (run %lld): %s\n", col(q, 0), col(q, 1),
	       (long long)sqlite3_column_int64(q, 2), col(q, 3));
}

static void print_upload(sqlite3_stmt *q, int n)
{
	if (n == 0)
		printf("  %5s  %5s  %-14s %-9s %-8s %4s  %-20s  %s\n", "id", "run", "target", "kind",
		       "state", "try", "next", "last error");
	printf("  %5lld  %5lld  %-14.14s %-9s %-8s %4lld  %-20s  %s\n",
	       (long long)sqlite3_column_int64(q, 0), (long long)sqlite3_column_int64(q, 1), col(q, 2),
	       col(q, 3), col(q, 4), (long long)sqlite3_column_int64(q, 5), col(q, 6), col(q, 7));
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	const char *db = NULL;
	int64_t last = 10;
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "status");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		if (c == OPT_DB) {
			db = optarg;
		} else if (c == OPT_LAST) {
			if (lab_parse_i64(optarg, &last) != LAB_OK || last <= 0) {
				fprintf(stderr,
					"emmclab: status: --last wants a positive number, not '%s'\n",
					optarg);
				return cli_usage("status");
			}
		} else {
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emmclab: status: unexpected argument '%s'\n", argv[optind]);
		return cli_usage("status");
	}
	struct lab_err e = {0};
	struct store *s;
	const char *path = store_default_path(db);
	if (store_open(path, STORE_READONLY, &s, &e))
		return cli_error(&e);
	int n, rc;
	printf("database %s (schema %d)\n\nruns (newest first):\n", path, store_schema_version(s));
	rc = each_row(s,
		      "SELECT r.id, r.started_at, r.status, r.source, r.plan,"
		      " (SELECT count(*) FROM job j WHERE j.run_id = r.id),"
		      " (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'ok'),"
		      " (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'infra'),"
		      " (SELECT count(*) FROM job j WHERE j.run_id = r.id AND j.status = 'mode-mismatch'),"
		      " (SELECT count(*) FROM sample s JOIN iteration i ON i.id = s.iteration_id"
		      "  JOIN job j ON j.id = i.job_id WHERE j.run_id = r.id)"
		      " FROM run r ORDER BY r.id DESC LIMIT ?1",
		      last, print_run, &n, &e);
	if (!rc && n == 0)
		printf("  (none)\n");
	int64_t last_run = 0;
	if (!rc) {
		sqlite3_stmt *q;
		sqlite3_prepare_v2(store_db(s), "SELECT max(id) FROM run", -1, &q, NULL);
		if (sqlite3_step(q) == SQLITE_ROW)
			last_run = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	if (!rc && last_run) {
		printf("\nevents of run %" PRId64 " by kind:\n", last_run);
		rc = each_row(s,
			      /* bare columns come from the max(e.id) row: the latest event */
			      "SELECT e.kind, count(*), e.message, b.name, max(e.id) FROM event e"
			      " LEFT JOIN board b ON b.id = e.board_id WHERE e.run_id = ?1"
			      " GROUP BY e.kind ORDER BY count(*) DESC, e.kind",
			      last_run, print_event_kind, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	if (!rc) {
		/* Quarantine holds until a later 'unquarantine' event for the board. */
		printf("\nquarantined boards:\n");
		rc = each_row(s,
			      "SELECT b.name, e.at, e.run_id, e.message, max(e.id) FROM event e"
			      " JOIN board b ON b.id = e.board_id WHERE e.kind = 'quarantine'"
			      " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.board_id = e.board_id"
			      "  AND u.kind = 'unquarantine' AND u.id > e.id)"
			      " GROUP BY b.id ORDER BY b.name",
			      0, print_quarantine, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	if (!rc) {
		printf("\nuploads waiting:\n");
		rc = each_row(s,
			      "SELECT id, run_id, target, kind, state, attempts, next_at, last_error"
			      " FROM upload WHERE state <> 'sent' ORDER BY id",
			      0, print_upload, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	store_close(s);
	if (rc)
		return cli_error(&e);
	return 0;
}
