/*
 * cli.h - the emmclab command line: one table of subcommands (main.c) drives
 * parsing, `emmclab help [CMD]` and the man page.  Each handler lives in
 * cmd_<name>.c as `int cmd_<name>(struct cli *cli, int argc, char **argv)`
 * and returns an exit code (0 ok, 1 regression/test failure, 2 usage or
 * configuration error, 3 infrastructure error).  Only this layer prints and
 * exits; the library returns codes and struct lab_err.
 */
#ifndef EMMCLAB_CLI_H
#define EMMCLAB_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include "util.h"

struct cli {
	const char *prog;
	bool verbose;
	bool quiet;
};

struct cli;
typedef int (*cmd_handler)(struct cli *cli, int argc, char **argv);

struct cmd_entry {
	const char *name;
	const char *usage;   /* arguments after the name */
	const char *summary; /* one line */
	const char *help;    /* paragraphs for `emmclab help NAME` */
	cmd_handler exec;
};

extern const struct cmd_entry cmd_table[];

/* Print "emmclab: <where>: <msg>" for an error and return its exit code. */
int cli_error(const struct lab_err *e);
int cli_usage(const char *cmd); /* print usage of cmd to stderr, return 2 */

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

#endif
