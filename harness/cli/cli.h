/*
 * cli.h - the emmclab command line: one table of subcommands (main.c) and
 * one option table per subcommand (cmd_<name>_opts, next to its handler)
 * drive parsing, `emmclab help [CMD]`, the man page and docs/cli.md, as
 * tmux's cmd_entry and git's parse-options do.  Each handler lives in
 * cmd_<name>.c as `int cmd_<name>(struct cli *cli, int argc, char **argv)`
 * and returns an exit code (0 ok, 1 regression/test failure, 2 usage or
 * configuration error, 3 infrastructure error).  Only this layer prints and
 * exits; the library returns codes and struct lab_err.
 */
#ifndef EMMCLAB_CLI_H
#define EMMCLAB_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include "util.h"

struct cli {
	const char *prog;
	bool verbose;
	bool quiet;
};

typedef int (*cmd_handler)(struct cli *cli, int argc, char **argv);

/* One option of a subcommand.  `val` is what cli_getopt returns for it: a
 * letter is also its short form (-o), anything >= CLI_LONG_ONLY is long only. */
#define CLI_LONG_ONLY 256
#define CLI_OPTIONAL 1u /* the argument may be left out: --baseline[=NAME] */
#define CLI_MAX_OPTS 32

struct cli_opt {
	const char *name; /* long name without "--"; NULL ends the table */
	int val;
	const char *arg;  /* argument name shown in help ("PATH"); NULL: takes none */
	const char *help; /* one line */
	unsigned flags;
};

struct cmd_entry {
	const char *name;
	const char *usage;   /* arguments after the name; [OPTIONS] stands for the table */
	const char *summary; /* one line */
	const char *help;    /* paragraphs for `emmclab help NAME` */
	cmd_handler exec;
	const struct cli_opt *opts; /* what the parser takes; every table also takes -h/--help */
};

const struct cmd_entry *cli_find_cmd(const char *name);

/* getopt_long over a command's option table (cli/options.c).  Errors are
 * printed ("emmclab: CMD: unknown option '--x'") and returned as '?', --help
 * as 'h' after printing the command's help. */
struct cli_getopt {
	const struct cmd_entry *cmd;
	struct option longopts[CLI_MAX_OPTS + 2];
	char shortopts[3 * CLI_MAX_OPTS + 4];
	bool help_shown;
};
/* Start parsing argv[1..] (argv[0] is the command, or its subcommand). */
void cli_getopt_init(struct cli_getopt *g, const char *cmd);
int cli_getopt(struct cli_getopt *g, int argc, char **argv); /* -1 at the end; optarg, optind */
/* The exit code for what cli_getopt returned and the caller does not take:
 * 0 after --help, else 2 (the usage is printed). */
int cli_getopt_fail(const struct cli_getopt *g);

/* The options of a command's table followed by -h/--help (unless the table has it):
 * fills out[] (at most max) and returns how many. */
size_t cli_opts_all(const struct cli_opt *opts, const struct cli_opt **out, size_t max);
/* "-o, --output FILE", "--baseline[=NAME]": the left column of an options list. */
const char *cli_opt_spec(char *buf, size_t n, const struct cli_opt *o);
/* Print `emmclab help CMD` to f (main.c). */
void cli_help(FILE *f, const struct cmd_entry *c);

/* The help of --db PATH where the database is store_default_path()'s. */
#define CLI_DB_HELP "results database (default $EMMCLAB_DB, else results/lab.db)"

/* The option tables, one per command, next to their handlers. */
extern const struct cli_opt cmd_run_opts[], cmd_board_opts[], cmd_check_opts[],
	cmd_compare_opts[], cmd_report_opts[], cmd_baseline_opts[], cmd_upload_opts[],
	cmd_import_opts[], cmd_db_opts[], cmd_status_opts[], cmd_sim_opts[];
extern const struct cli_opt cmd_kernel_opts[];

/* Print "emmclab: <where>: <msg>" for an error and return its exit code. */
int cli_error(const struct lab_err *e);
int cli_usage(const char *cmd); /* print usage of cmd to stderr, return 2 */
/* Reading commands never create a database: 0 when path exists, else the
 * message "emmclab: CMD: no results database at PATH ..." and 2. */
int cli_db_missing(const char *cmd, const char *path);

/* Handlers: one cmd_<name>.c each. */
int cmd_run(struct cli *, int, char **);
int cmd_board(struct cli *, int, char **);
int cmd_check(struct cli *, int, char **);
int cmd_compare(struct cli *, int, char **);
int cmd_report(struct cli *, int, char **);
int cmd_baseline(struct cli *, int, char **);
int cmd_upload(struct cli *, int, char **);
int cmd_import(struct cli *, int, char **);
int cmd_db(struct cli *, int, char **);
int cmd_status(struct cli *, int, char **);
int cmd_sim(struct cli *, int, char **);
int cmd_kernel(struct cli *, int, char **);

#endif
