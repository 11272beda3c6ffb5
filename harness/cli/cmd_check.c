/* cmd_check.c - `emmclab check FILE...`: load lab/type/suite/plan files together,
 * print the resolved configuration, or the first error as file:line:col; then
 * the checks across blocks (config_check.c): errors exit 2, warnings are printed. */
#include "cli.h"
#include "config.h"
#include "config_check.h"
#include "console.h"
#include "deploy.h"
#include "loop.h"
#include "power.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver blocks (console, power, deploy) are kept raw by the loader; their
 * keys belong to the drivers.  Check them with the drivers' own option tables,
 * without touching any device.  Returns the number of errors printed. */
static int check_drivers(const struct lab_cfg *c)
{
	int errors = 0;
	struct loop *l = loop_new();
	for (size_t i = 0; i < c->nboards; i++) {
		const struct board_cfg *b = &c->boards[i];
		struct lab_err e = {0};
		if (b->power && power_check_cfg(b->name, b->power, &e)) {
			fprintf(stderr, "emmclab: %s\n", e.msg);
			errors++;
		}
		lab_err_clear(&e);
		if (b->deploy && deploy_check_cfg(b->name, b->deploy, &e)) {
			fprintf(stderr, "emmclab: %s\n", e.msg);
			errors++;
		}
		lab_err_clear(&e);
		struct console *con = NULL;
		static const struct console_events ev = {0};
		if (l && b->console) {
			if (console_new(l, b->name, b->console, &ev, NULL, &con, &e)) {
				fprintf(stderr, "emmclab: %s\n", e.msg);
				errors++;
			} else {
				console_free(con);
			}
		}
	}
	loop_free(l);
	return errors;
}

static void on_finding(enum config_finding kind, const char *msg, void *arg)
{
	const bool *quiet = arg;
	if (kind == CONFIG_WARNING && *quiet)
		return;
	fprintf(stderr, "emmclab: %s\n", msg);
}

enum { O_SCHEMA = CLI_LONG_ONLY, O_OFFLINE };

const struct cli_opt cmd_check_opts[] = {
	{"quiet", 'q', NULL, "print only errors", 0},
	{"offline", O_OFFLINE, NULL,
	 "skip what reads this host (kernel, initrd, firmware and agent files): for a lab checked "
	 "away from its controller", 0},
	{"schema", O_SCHEMA, NULL, "print the key tables of docs/configuration.md and exit", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_check(struct cli *cli, int argc, char **argv)
{
	bool quiet = cli->quiet;
	unsigned flags = CONFIG_CHECK_FILES;
	struct cli_getopt g;
	int ch;
	cli_getopt_init(&g, "check");
	while ((ch = cli_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'q': quiet = true; break;
		case O_OFFLINE: flags &= ~(unsigned)CONFIG_CHECK_FILES; break;
		case O_SCHEMA: config_schema_md(stdout); return 0;
		default: return cli_getopt_fail(&g);
		}
	}
	const char **files = xcalloc((size_t)argc + 1, sizeof *files);
	size_t n = 0;
	for (int i = optind; i < argc; i++)
		files[n++] = argv[i];
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
	int bad = check_drivers(c);
	/* combinations that load but cannot boot; warnings do not change the exit code */
	if (!bad)
		bad = config_check(c, flags, on_finding, &quiet);
	if (bad) {
		config_free(c);
		return 2;
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
