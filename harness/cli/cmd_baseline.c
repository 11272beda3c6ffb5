/* cmd_baseline.c - `emmclab baseline set|show`: the regression baselines. */
#include "baseline.h"
#include "cli.h"
#include "results.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

enum { O_DB = CLI_LONG_ONLY, O_RUN, O_LAST, O_NAME };

const struct cli_opt cmd_baseline_opts[] = {
	{"db", O_DB, "PATH", CLI_DB_HELP, 0},
	{"name", O_NAME, "NAME",
	 "the baseline's name (set: default \"default\"; show: every baseline)", 0},
	{"run", O_RUN, "ID", "set: pin this run (default the newest)", 0},
	{"last", O_LAST, "N", "set: pin the newest N runs (1..1000)", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_baseline(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	if (argc < 2 || (strcmp(argv[1], "set") && strcmp(argv[1], "show")))
		return cli_usage("baseline");
	const char *sub = argv[1];
	const char *db = NULL, *name = NULL;
	int64_t run = 0, last = 0;
	struct cli_getopt g;
	int c;
	argc--;
	argv++;
	cli_getopt_init(&g, "baseline");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case O_DB:
			db = optarg;
			break;
		case O_RUN:
			if (lab_parse_i64(optarg, &run) || run <= 0) {
				fprintf(stderr, "emmclab: baseline: --run wants a run id, not '%s'\n", optarg);
				return 2;
			}
			break;
		case O_LAST:
			if (lab_parse_i64(optarg, &last) || last <= 0 || last > 1000) {
				fprintf(stderr, "emmclab: baseline: --last wants 1..1000, not '%s'\n", optarg);
				return 2;
			}
			break;
		case O_NAME:
			name = optarg;
			break;
		default:
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emmclab: baseline: unexpected argument '%s'\n", argv[optind]);
		return cli_usage("baseline");
	}
	const char *path = store_default_path(db);
	struct lab_err e = {0};
	struct store *s;
	int rc;
	if (strcmp(sub, "set") == 0) {
		if (run && last) {
			fprintf(stderr, "emmclab: baseline set: --run and --last exclude each other\n");
			return 2;
		}
		if (cli_db_missing("baseline", path))
			return 2;
		if (store_open(path, STORE_NO_MIGRATE, &s, &e))
			return cli_error(&e);
		rc = LAB_OK;
		if (!run && !last && (rc = results_latest_run(s, &run, &e)) == 0 && !run)
			rc = lab_err_set(&e, LAB_EUSAGE, "no run to pin: the database holds no run");
		if (!rc)
			rc = baseline_set(s, name ? name : BASELINE_DEFAULT, run, (int)last, &e);
		store_close(s);
		if (rc)
			return cli_error(&e);
		if (run)
			printf("baseline '%s' = run %lld\n", name ? name : BASELINE_DEFAULT, (long long)run);
		else
			printf("baseline '%s' = last %lld complete runs\n", name ? name : BASELINE_DEFAULT,
			       (long long)last);
		return 0;
	}
	if (cli_db_missing("baseline", path))
		return 2;
	if (store_open(path, STORE_READONLY, &s, &e))
		return cli_error(&e);
	struct baseline_info *list = NULL;
	size_t n = 0;
	if (name) {
		list = xmalloc(sizeof *list);
		rc = baseline_get(s, name, list, &e);
		n = rc ? 0 : 1;
	} else {
		rc = baseline_list(s, &list, &n, &e);
	}
	if (!rc && n == 0)
		printf("no baseline set (emmclab baseline set --run ID | --last N)\n");
	for (size_t i = 0; !rc && i < n; i++) {
		if (strcmp(list[i].kind, "run") == 0)
			printf("%-16s run %lld (set %s)\n", list[i].name, (long long)list[i].run_id, list[i].set_at);
		else
			printf("%-16s last %d complete runs (set %s)\n", list[i].name, list[i].last_n,
			       list[i].set_at);
	}
	free(list);
	store_close(s);
	return rc ? cli_error(&e) : 0;
}
