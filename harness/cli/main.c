/* main.c - subcommand table, help and dispatch. */
#include "cli.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

static int cmd_version(struct cli *cli, int argc, char **argv);
static int cmd_help(struct cli *cli, int argc, char **argv);

enum { O_MAN = CLI_LONG_ONLY, O_MARKDOWN };

static const struct cli_opt cmd_version_opts[] = {
	{NULL, 0, NULL, NULL, 0},
};

static const struct cli_opt cmd_help_opts[] = {
	{"man", O_MAN, NULL, "print the man page (roff), as installed as emmclab.1", 0},
	{"markdown", O_MARKDOWN, NULL, "print the command reference of docs/cli.md", 0},
	{NULL, 0, NULL, NULL, 0},
};

static const struct cmd_entry cmd_table[] = {
	{"run", "[OPTIONS] PLAN.yaml [FILE.yaml...]",
	 "run a test plan on a lab and store every timing",
	 "Loads the plan and its lab, expands jobs (board x kernel x suite x mode x iteration),\n"
	 "drives every board on one event loop, verifies each mode on the DUT before storing\n"
	 "a sample, prints the comparison table and writes the HTML report, queues the uploads\n"
	 "of the run in its outbox and tries them once. --with-sim starts the simulated lab of\n"
	 "the plan's lab file first (emmclab sim start) and stops it afterwards.\n"
	 "Exit 0 when the run completed, 1 when a regression against the baseline was found,\n"
	 "3 when infrastructure failures left jobs without results.",
	 cmd_run, cmd_run_opts},
	{"board",
	 "[OPTIONS] NAME power on|off|cycle|state | NAME console | NAME boot | NAME release | list-usb",
	 "drive one board by hand: power, console, boot to a shell, release from quarantine",
	 "Uses the same drivers as `run`. The interactive console escapes with Ctrl-] and shares\n"
	 "the board's transcript. A board quarantined by a run stays out of later runs until\n"
	 "`emmclab board NAME release` records that an operator looked at it.", cmd_board,
	 cmd_board_opts},
	{"check", "[OPTIONS] FILE...", "validate lab, type, suite and plan files and print the resolved configuration",
	 "Every error names file:line:column; an unknown key names the nearest valid key; console,\n"
	 "power and deploy blocks are checked with the drivers' own option tables. --quiet prints\n"
	 "only errors; --schema prints the key tables of docs/configuration.md.", cmd_check,
	 cmd_check_opts},
	{"compare", "[OPTIONS]",
	 "compare modes, parts, kernels or runs with confidence intervals and tests",
	 "Welch's t-test and Mann-Whitney U per group pair, with a verdict at the given alpha and\n"
	 "minimum effect size. Works on imported published data as on lab runs.", cmd_compare,
	 cmd_compare_opts},
	{"report", "[OPTIONS]",
	 "render a run (or all data) as a report",
	 "One results model, several renderers; the HTML file is self-contained with inline SVG.",
	 cmd_report, cmd_report_opts},
	{"baseline", "set [OPTIONS] | show [OPTIONS]",
	 "pin or show the regression baseline",
	 "Nightly runs are compared against the baseline; significant regressions exit 1.",
	 cmd_baseline, cmd_baseline_opts},
	{"upload", "--pending [OPTIONS] | --retry [OPTIONS] | --run ID [OPTIONS] | --schema",
	 "send results to the configured web targets",
	 "Uploads go through a durable outbox in the results store and are idempotent.\n"
	 "--pending lists what waits; --retry sends what is due (all targets at once; --now ignores\n"
	 "the backoff, --failed includes rows that failed for good, --max-time keeps retrying);\n"
	 "--run ID queues the run for the targets of --config FILE (if given) and sends it again.\n"
	 "Exit 3 while something is left undelivered. See docs/uploads.md.", cmd_upload,
	 cmd_upload_opts},
	{"import", "[OPTIONS] FILE.csv...", "import published measurements (CSV)",
	 "Recognises the AndroBench (board,controller,queue_fua,workload,run,mib_per_s) and ext4 copy\n"
	 "(dut,module,mode,run,seconds) layouts by their header; each file becomes one run.\n"
	 "Every bad line is reported as FILE:LINE: reason and nothing is imported unless --skip-bad.\n"
	 "The same file (sha256) is imported only once unless --force. See docs/results-schema.md.",
	 cmd_import, cmd_import_opts},
	{"db", "migrate|info|check|export [OPTIONS] | merge [OPTIONS] SRC.db",
	 "manage the results database",
	 "migrate applies numbered migrations (import and run migrate on their own); info shows\n"
	 "the schema version, row counts and bytes per sample; check runs quick_check and\n"
	 "foreign_key_check; export writes every sample with its context, or an imported run in\n"
	 "its published layout, byte for byte; merge copies the runs of another database that\n"
	 "are not here yet (by run uuid; conflicts are reported, not copied, and exit 1).\n"
	 "The database is --db PATH, else $EMMCLAB_DB, else results/lab.db.",
	 cmd_db, cmd_db_opts},
	{"kernel", "quirks [OPTIONS] | cover-letter [OPTIONS]",
	 "propose mmc quirk entries and render the series' cover letter from results",
	 "quirks prints the MMC_FIXUP lines (avoid reliable write for FUA) for the parts whose\n"
	 "data justifies it: significantly faster without FUA and no acknowledged record lost,\n"
	 "torn or corrupt in the power-fail suite; each with its evidence, every other part with\n"
	 "why not. cover-letter renders the mailing-list text: per part the 2x2 with CIs, the\n"
	 "power-fail outcomes, the quirk entries and the series' subjects. Only lab figures are\n"
	 "evidence unless --accept names more. See docs/kernel.md.",
	 cmd_kernel, cmd_kernel_opts},
	{"status", "[OPTIONS]", "show runs in progress (live), recent runs, quarantine and the upload outbox", NULL,
	 cmd_status, cmd_status_opts},
	{"sim", "start LAB.yaml | stop | status | fault BOARD FAULT[=VALUE][:COUNT] | clear BOARD | "
	 "power BOARD on|off|reboot  (each with [OPTIONS])",
	 "run the simulated lab in the background", "The simulator serves every board of the lab file:\n"
	 "console on a pseudo-terminal, power over HTTP (pdudaemon and Tasmota APIs).\n"
	 "State dir: --state-dir DIR, $EMMCLAB_SIM_DIR or /tmp/emmclab-sim. See docs/simulator.md.",
	 cmd_sim, cmd_sim_opts},
	{"version", "", "print the version", NULL, cmd_version, cmd_version_opts},
	{"help", "[OPTIONS] [COMMAND]", "show help for emmclab or one command", NULL, cmd_help,
	 cmd_help_opts},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};

const struct cmd_entry *cli_find_cmd(const char *name)
{
	for (const struct cmd_entry *c = cmd_table; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_usage(const char *cmd)
{
	const struct cmd_entry *c = cli_find_cmd(cmd);
	if (c)
		fprintf(stderr, "usage: emmclab %s %s\n", c->name, c->usage);
	return 2;
}

int cli_db_missing(const char *cmd, const char *path)
{
	if (access(path, F_OK) == 0)
		return 0;
	fprintf(stderr, "emmclab: %s: no results database at %s (import data or run a plan first)\n",
		cmd, path);
	return 2;
}

int cli_error(const struct lab_err *e)
{
	/* The source location helps with infrastructure errors; a usage error
	 * already names the user's file:line:column or the bad option. */
	/* messages quote DUT, import and config text: control bytes escaped */
	char msg[4 * sizeof e->msg];
	lab_text_escape(msg, sizeof msg, e->msg);
	if (e->where[0] && e->rc != LAB_EUSAGE)
		fprintf(stderr, "emmclab: %s (%s)\n", msg, e->where);
	else
		fprintf(stderr, "emmclab: %s\n", msg[0] ? msg : lab_strerror(e->rc));
	return lab_exit_code(e->rc ? e->rc : LAB_EINFRA);
}

static int cmd_version(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	if (argc > 0) { /* not when called for --version */
		struct cli_getopt g;
		cli_getopt_init(&g, "version");
		if (cli_getopt(&g, argc, argv) != -1)
			return cli_getopt_fail(&g);
		if (optind < argc)
			return cli_usage("version");
	}
	printf("emmclab %s\n", EMMCLAB_VERSION);
	return 0;
}

/* Short-less options line up with the long names of the others. */
static const char *opt_pad(const struct cli_opt *o)
{
	return o->val > 0 && o->val < CLI_LONG_ONLY ? "" : "    ";
}

/* The options list of `help CMD`: one line per option, the help text aligned. */
static void print_opts(FILE *f, const struct cli_opt *opts)
{
	const struct cli_opt *all[CLI_MAX_OPTS + 1];
	size_t n = cli_opts_all(opts, all, LAB_ARRAY_SIZE(all));
	int w = 0;
	char spec[96], col[100];
	for (size_t i = 0; i < n; i++) {
		cli_opt_spec(spec, sizeof spec, all[i]);
		snprintf(col, sizeof col, "%s%s", opt_pad(all[i]), spec);
		if ((int)strlen(col) > w && strlen(col) <= 30)
			w = (int)strlen(col); /* a longer one gets its help on the next line */
	}
	fputs("\noptions:\n", f);
	for (size_t i = 0; i < n; i++) {
		cli_opt_spec(spec, sizeof spec, all[i]);
		snprintf(col, sizeof col, "%s%s", opt_pad(all[i]), spec);
		if ((int)strlen(col) > w)
			fprintf(f, "  %s\n  %*s  %s\n", col, w, "", all[i]->help);
		else
			fprintf(f, "  %-*s  %s\n", w, col, all[i]->help);
	}
}

void cli_help(FILE *f, const struct cmd_entry *c)
{
	fprintf(f, "usage: emmclab %s %s\n\n%s.\n", c->name, c->usage, c->summary);
	if (c->help)
		fprintf(f, "\n%s\n", c->help);
	print_opts(f, c->opts);
}

static void usage_all(FILE *f)
{
	fprintf(f, "usage: emmclab [-v] [-q] COMMAND [ARGS]\n\ncommands:\n");
	for (const struct cmd_entry *c = cmd_table; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "\nexit codes: 0 ok, 1 regression or test failure found, 2 usage or configuration\n"
		   "error, 3 infrastructure error.  `emmclab help COMMAND` for details.\n");
}

/* roff man page generated from the same table (installed as emmclab.1). */
static void man_escape(FILE *f, const char *s)
{
	const char *start = s;
	for (; s && *s; s++) {
		bool bol = s == start || s[-1] == '\n';
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\n' && s[1] == '\n') {
			fputs("\n.PP\n", f);
			s++;
		} else if (*s == '\n')
			fputs("\n.br\n", f);
		else if ((*s == '.' || *s == '\'') && bol)
			fprintf(f, "\\&%c", *s);
		else
			fputc(*s, f);
	}
}

static void print_man(FILE *f)
{
	fprintf(f, ".TH EMMCLAB 1 \"\" \"emmclab %s\" \"User Commands\"\n", EMMCLAB_VERSION);
	fputs(".SH NAME\nemmclab \\- automated test lab for eMMC storage\n", f);
	fputs(".SH SYNOPSIS\n.B emmclab\n[\\-v] [\\-q]\n.I command\n[\n.I args\n]\n", f);
	fputs(".SH DESCRIPTION\nemmclab power-cycles and flashes boards that carry eMMC modules, boots "
	      "them into kernels that can run four write modes (fua, cache\\-nofua, fua\\-cqe, "
	      "cache\\-nofua\\-cqe), verifies the mode on the device, stores every timing in SQLite "
	      "and compares modes, parts and nights.\n.SH COMMANDS\n", f);
	for (const struct cmd_entry *c = cmd_table; c->name; c++) {
		fprintf(f, ".TP\n.B %s ", c->name);
		man_escape(f, c->usage);
		fputs("\n", f);
		man_escape(f, c->summary);
		fputs(".\n", f);
		if (c->help) {
			fputs(".br\n", f);
			man_escape(f, c->help);
			fputs("\n", f);
		}
		const struct cli_opt *all[CLI_MAX_OPTS + 1];
		size_t n = cli_opts_all(c->opts, all, LAB_ARRAY_SIZE(all));
		char spec[96];
		fputs(".RS\n", f);
		for (size_t k = 0; k < n; k++) {
			fputs(".TP\n.B ", f);
			man_escape(f, cli_opt_spec(spec, sizeof spec, all[k]));
			fputs("\n", f);
			man_escape(f, all[k]->help);
			fputs("\n", f);
		}
		fputs(".RE\n", f);
	}
	fputs(".SH EXIT STATUS\n.TP\n0\nok\n.TP\n1\na regression or test failure was found\n"
	      ".TP\n2\nusage or configuration error\n.TP\n3\ninfrastructure error\n", f);
	fputs(".SH SEE ALSO\nThe user guide in docs/ of the source tree.\n", f);
}

/* Markdown reference for docs/cli.md (a test keeps the two in step). */
static void print_markdown(FILE *f)
{
	for (const struct cmd_entry *c = cmd_table; c->name; c++) {
		fprintf(f, "### emmclab %s\n\n```\nemmclab %s %s\n```\n\n%s.\n", c->name, c->name,
			c->usage, c->summary);
		if (c->help)
			fprintf(f, "\n```\n%s\n```\n", c->help);
		const struct cli_opt *all[CLI_MAX_OPTS + 1];
		size_t n = cli_opts_all(c->opts, all, LAB_ARRAY_SIZE(all));
		char spec[96];
		fputs("\nOptions:\n\n", f);
		for (size_t k = 0; k < n; k++)
			fprintf(f, "- `%s`: %s\n", cli_opt_spec(spec, sizeof spec, all[k]),
				all[k]->help);
		fputc('\n', f);
	}
}

static int cmd_help(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	struct cli_getopt g;
	int ch;
	cli_getopt_init(&g, "help");
	while ((ch = cli_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case O_MAN: print_man(stdout); return 0;
		case O_MARKDOWN: print_markdown(stdout); return 0;
		default: return cli_getopt_fail(&g);
		}
	}
	if (optind >= argc) {
		usage_all(stdout);
		return 0;
	}
	const struct cmd_entry *c = cli_find_cmd(argv[optind]);
	if (!c) {
		fprintf(stderr, "emmclab: no command '%s'\n", argv[optind]);
		return 2;
	}
	cli_help(stdout, c);
	return 0;
}

/* A lab of N boards holds several fds per board (console, transcript, HTTP
 * sockets): raise the soft fd limit to the hard one, as far as it goes. */
static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int main(int argc, char **argv)
{
	struct cli cli = {.prog = argv[0]};
	raise_nofile();
	/* A driver table without its required hooks is a build mistake: refuse to
	 * run anything rather than crash on the first board that uses it. */
	struct lab_err re = {0};
	if (lab_registries_check(&re) != LAB_OK) {
		fprintf(stderr, "emmclab: %s\n", re.msg);
		return 3;
	}
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-v") == 0)
			cli.verbose = true;
		else if (strcmp(argv[i], "-q") == 0)
			cli.quiet = true;
		else if (strcmp(argv[i], "--version") == 0)
			return cmd_version(&cli, 0, NULL);
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage_all(stdout);
			return 0;
		} else {
			fprintf(stderr, "emmclab: unknown option '%s'\n", argv[i]);
			usage_all(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage_all(stderr);
		return 2;
	}
	const struct cmd_entry *c = cli_find_cmd(argv[i]);
	if (!c) {
		const char *best = NULL;
		int bd = 3;
		for (const struct cmd_entry *k = cmd_table; k->name; k++) {
			int d = lab_edit_distance(argv[i], k->name);
			if (d < bd) {
				bd = d;
				best = k->name;
			}
		}
		fprintf(stderr, "emmclab: unknown command '%s'%s%s%s\n", argv[i],
			best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
		return 2;
	}
	/* `emmclab CMD --help` is `emmclab help CMD`, also for commands whose first
	 * word is a subcommand (db, baseline, sim). */
	if (argc - i == 2 && (strcmp(argv[i + 1], "--help") == 0 || strcmp(argv[i + 1], "-h") == 0)) {
		cli_help(stdout, c);
		return 0;
	}
	/* Handlers see argv[0] == command name. */
	int rc = c->exec(&cli, argc - i, argv + i);
	fflush(stdout);
	return rc;
}
