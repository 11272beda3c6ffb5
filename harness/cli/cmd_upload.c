/*
 * cmd_upload.c - `emmclab upload`: list, retry and re-send the web uploads
 * waiting in the outbox of the results store (see upload.h, docs/uploads.md).
 *
 *   upload --pending [--all] [--run ID]         what is waiting (or everything)
 *   upload --retry [--now] [--failed] [--max-time DUR] [--run ID]
 *                                               send what is due, all targets at once
 *   upload --run ID [--no-send]                 queue (with --config) and re-send a run now
 * Common: --db PATH, --config FILE (lab or plan whose `uploads:` override the
 * stored target configuration by name), --spool DIR, --parallel N.
 */
#include "cli.h"
#include "config.h"
#include "loop.h"
#include "store.h"
#include "upload.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	O_DB = CLI_LONG_ONLY, O_PENDING, O_RETRY, O_RUN, O_CONFIG, O_NOW, O_FAILED, O_MAXTIME, O_SPOOL,
	O_PARALLEL, O_ALL, O_NOSEND, O_SCHEMA,
};

static void print_row(const struct upload_row *r, void *arg)
{
	int *n = arg;
	if ((*n)++ == 0)
		printf("%5s %5s  %-14s %-8s %-7s %4s  %-24s  %s\n", "id", "run", "target", "kind", "state",
		       "try", "next", "key");
	printf("%5lld %5lld  %-14.14s %-8s %-7s %4lld  %-24s  %s\n", (long long)r->id,
	       (long long)r->run_id, r->target, r->kind, r->state, (long long)r->attempts,
	       r->next_at ? r->next_at : (r->sent_at ? r->sent_at : "-"), r->idem_key);
	if (r->last_error && *r->last_error)
		printf("%13s last error: %s\n", "", r->last_error);
}

static void on_progress(void *arg, const struct upload_row *r, enum upload_verdict v, long status,
			const char *msg)
{
	LAB_UNUSED(status);
	struct cli *cli = arg;
	const char *what = v == UPLOAD_SENT ? "sent" : v == UPLOAD_RETRY ? "retry later" : "failed";
	if (cli->quiet && v == UPLOAD_SENT)
		return;
	printf("%-11s %s %s (run %lld, attempt %lld)%s%s\n", what, r->target, r->idem_key,
	       (long long)r->run_id, (long long)r->attempts, msg && *msg ? ": " : "", msg ? msg : "");
	fflush(stdout);
}

const struct cli_opt cmd_upload_opts[] = {
	{"pending", O_PENDING, NULL, "list what waits in the outbox", 0},
	{"all", O_ALL, NULL, "--pending: every row, the sent ones too", 0},
	{"retry", O_RETRY, NULL, "send what is due, every target at once", 0},
	{"now", O_NOW, NULL, "--retry: ignore the backoff", 0},
	{"failed", O_FAILED, NULL, "--retry: include rows that failed for good", 0},
	{"max-time", O_MAXTIME, "DUR", "--retry: keep retrying for this long (30s, 10m, 2h)", 0},
	{"run", O_RUN, "ID",
	 "queue run ID again and send it now; with --pending or --retry: only its rows", 0},
	{"no-send", O_NOSEND, NULL, "--run: queue only", 0},
	{"schema", O_SCHEMA, NULL, "print the key tables of docs/uploads.md and exit", 0},
	{"db", O_DB, "PATH", CLI_DB_HELP, 0},
	{"config", O_CONFIG, "FILE",
	 "lab or plan whose uploads: override the stored targets by name (repeatable)", 0},
	{"spool", O_SPOOL, "DIR",
	 "directory the bundles are rendered in (default <db dir>/uploads)", 0},
	{"parallel", O_PARALLEL, "N", "requests in flight at once (1..256, default 8)", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_upload(struct cli *cli, int argc, char **argv)
{
	const char *db = NULL;
	const char **configs = NULL;
	size_t nconfigs = 0;
	bool pending = false, retry = false, all = false, nosend = false;
	struct upload_send_opts so = {0};
	int64_t run_id = 0;
	struct cli_getopt g;
	int c, rc = 0;
	cli_getopt_init(&g, "upload");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case O_DB:
			db = optarg;
			break;
		case O_PENDING:
			pending = true;
			break;
		case O_RETRY:
			retry = true;
			break;
		case O_RUN:
			if (lab_parse_i64(optarg, &run_id) || run_id <= 0) {
				fprintf(stderr, "emmclab: upload: --run wants a run id, not '%s'\n", optarg);
				free(configs);
				return 2;
			}
			break;
		case O_CONFIG:
			configs = xreallocarray(configs, nconfigs + 1, sizeof *configs);
			configs[nconfigs++] = optarg;
			break;
		case O_NOW:
			so.now = true;
			break;
		case O_FAILED:
			so.failed_too = true;
			break;
		case O_MAXTIME:
			if (opt_parse_duration(optarg, &so.max_time_ms)) {
				fprintf(stderr, "emmclab: upload: --max-time wants a duration (30s, 10m, 2h), not '%s'\n",
					optarg);
				free(configs);
				return 2;
			}
			break;
		case O_SPOOL:
			so.spool_dir = optarg;
			break;
		case O_PARALLEL: {
			int64_t p;
			if (lab_parse_i64(optarg, &p) || p < 1 || p > 256) {
				fprintf(stderr, "emmclab: upload: --parallel wants 1..256, not '%s'\n", optarg);
				free(configs);
				return 2;
			}
			so.parallel = (int)p;
			break;
		}
		case O_ALL:
			all = true;
			break;
		case O_NOSEND:
			nosend = true;
			break;
		case O_SCHEMA: /* the key tables of docs/uploads.md */
			upload_schema_md(stdout);
			free(configs);
			return 0;
		default:
			free(configs);
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc || (pending + retry) > 1 || (!pending && !retry && !run_id)) {
		if (optind < argc)
			fprintf(stderr, "emmclab: upload: unexpected argument '%s'\n", argv[optind]);
		free(configs);
		return cli_usage("upload");
	}
	if (nosend && (!run_id || pending || retry)) {
		fprintf(stderr, "emmclab: upload: --no-send goes with --run ID (queue only)\n");
		free(configs);
		return 2;
	}

	struct lab_err e = {0};
	struct lab_cfg *lab = NULL;
	if (nconfigs) {
		if (config_load(configs, nconfigs, &lab, &e)) {
			free(configs);
			return cli_error(&e);
		}
		so.targets = upload_config_targets(lab);
		if (!so.targets) {
			fprintf(stderr, "emmclab: upload: %s has no uploads: section\n", configs[0]);
			config_free(lab);
			free(configs);
			return 2;
		}
		if (upload_check_targets(so.targets, &e)) {
			config_free(lab);
			free(configs);
			return cli_error(&e);
		}
	}
	free(configs);

	const char *path = store_default_path(db);
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "emmclab: upload: no results database at %s\n", path);
		config_free(lab);
		return 2;
	}
	struct store *s = NULL;
	/* Not read-only even for --pending: an older store gets the outbox columns first. */
	if (store_open(path, 0, &s, &e)) {
		config_free(lab);
		return cli_error(&e);
	}
	if (pending) {
		int n = 0;
		if (upload_list(s, run_id, all, print_row, &n, &e))
			rc = cli_error(&e);
		else if (n == 0 && !cli->quiet)
			printf("no uploads %s\n", all ? "in the outbox" : "waiting");
		store_close(s);
		config_free(lab);
		return rc;
	}
	if (run_id && !retry) {
		int n = 0;
		if (upload_requeue_run(s, run_id, so.targets, &n, &e)) {
			store_close(s);
			config_free(lab);
			return cli_error(&e);
		}
		if (!cli->quiet)
			printf("run %lld: %d upload%s due now\n", (long long)run_id, n, n == 1 ? "" : "s");
		if (nosend) {
			store_close(s);
			config_free(lab);
			return 0;
		}
		so.now = true;
	}
	so.run_id = run_id;
	so.progress = on_progress;
	so.progress_arg = cli;
	struct loop *l = loop_new();
	struct upload_stats st;
	if (upload_send(s, l, &so, &st, &e)) {
		rc = cli_error(&e);
	} else {
		if (!cli->quiet)
			printf("%d attempt%s: %d sent, %d to retry later, %d failed; %d not delivered\n",
			       st.attempted, st.attempted == 1 ? "" : "s", st.sent, st.retry, st.rejected,
			       st.unsent);
		rc = st.unsent ? 3 : 0;
	}
	loop_free(l);
	store_close(s);
	config_free(lab);
	return rc;
}
