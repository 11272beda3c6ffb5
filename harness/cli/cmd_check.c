/* cmd_check.c - `emmclab check FILE...`: load lab/type/suite/plan files together,
 * print the resolved configuration, or the first error as file:line:col. */
#include "cli.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_check(struct cli *cli, int argc, char **argv)
{
	bool quiet = cli->quiet;
	const char **files = xcalloc((size_t)argc + 1, sizeof *files);
	size_t n = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
			quiet = true;
		} else if (strcmp(argv[i], "--schema") == 0) {
			/* hidden: the key tables of docs/configuration.md */
			free(files);
			config_schema_md(stdout);
			return 0;
		} else if (strcmp(argv[i], "--") == 0) {
			for (i++; i < argc; i++)
				files[n++] = argv[i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "emmclab: check: unknown option '%s'\n", argv[i]);
			free(files);
			return cli_usage("check");
		} else {
			files[n++] = argv[i];
		}
	}
	if (n == 0) {
		free(files);
		return cli_usage("check");
	}
	struct lab_err e = {0};
	struct lab_cfg *c = NULL;
	int rc = config_load(files, n, &c, &e);
	free(files);
	if (rc) {
		fprintf(stderr, "emmclab: %s\n", e.msg[0] ? e.msg : lab_strerror(rc));
		return 2; /* every load failure is a configuration problem for `check` */
	}
	if (!quiet) {
		config_print(stdout, c);
		fflush(stdout);
		size_t enabled = 0;
		for (size_t i = 0; i < c->nboards; i++)
			enabled += c->boards[i].enabled;
		fprintf(stderr, "emmclab: ok: %zu board type%s, %zu board%s (%zu enabled), %zu kernel%s, "
			"%zu suite%s%s%s\n",
			c->ntypes, c->ntypes == 1 ? "" : "s", c->nboards, c->nboards == 1 ? "" : "s",
			enabled, c->nkernels, c->nkernels == 1 ? "" : "s", c->nsuites,
			c->nsuites == 1 ? "" : "s", c->plan ? ", plan " : "",
			c->plan && c->plan->name ? c->plan->name : "");
	}
	config_free(c);
	return 0;
}
