/*
 * cmd_kernel.c - `emmclab kernel quirks|cover-letter`: what the lab gives
 * back to the kernel series (docs/kernel.md): the quirk-table entries the
 * stored results justify, and the cover letter of the upstream series.
 */
#include "cli.h"
#include "mailing.h"
#include "quirks.h"
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_DB = CLI_LONG_ONLY, O_ALPHA, O_MIN_GAIN, O_MIN_CUTS, O_ACCEPT, O_WARM, O_SERIES, O_TITLE };

const struct cli_opt cmd_kernel_opts[] = {
	{"db", O_DB, "PATH", CLI_DB_HELP, 0},
	{"alpha", O_ALPHA, "A", "significance level of the FUA effect (default 0.05)", 0},
	{"min-gain", O_MIN_GAIN, "PCT", "minimum gain without FUA, percent (default 5)", 0},
	{"min-cuts", O_MIN_CUTS, "N", "power cuts needed without FUA (default 20)", 0},
	{"accept", O_ACCEPT, "KINDS",
	 "also take virtual,simulated,imported figures as evidence (default: lab only)", 0},
	{"exclude-warmup", O_WARM, NULL, "drop flagged warm-up values before testing", 0},
	{"series", O_SERIES, "DIR", "cover-letter: the patch series (N and the patch subjects)", 0},
	{"title", O_TITLE, "TEXT", "cover-letter: the subject after \"mmc: \"", 0},
	{"output", 'o', "FILE", "write to FILE (atomically) instead of standard output", 0},
	{NULL, 0, NULL, NULL, 0},
};

static int number(const char *opt, const char *v, double lo, double hi, double *out)
{
	double d;
	if (lab_parse_double(v, &d) || !(d >= lo && d <= hi)) {
		fprintf(stderr, "emmclab: kernel: %s wants a number in [%g, %g], not '%s'\n", opt, lo,
			hi, v);
		return 2;
	}
	*out = d;
	return 0;
}

int cmd_kernel(struct cli *cli, int argc, char **argv)
{
	(void)cli;
	struct lab_err e = {0};
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "emmclab: kernel: which subcommand? quirks or cover-letter\n");
		return cli_usage("kernel");
	}
	const char *sub = argv[1];
	bool letter = strcmp(sub, "cover-letter") == 0;
	if (!letter && strcmp(sub, "quirks") != 0) {
		fprintf(stderr, "emmclab: kernel: unknown subcommand '%s' (quirks, cover-letter)\n", sub);
		return cli_usage("kernel");
	}
	struct quirks_opts qo;
	quirks_opts_init(&qo);
	const char *db = NULL, *out = NULL, *series = NULL, *title = NULL, *accept = NULL;
	struct cli_getopt g;
	int c;
	double d;
	cli_getopt_init(&g, "kernel");
	while ((c = cli_getopt(&g, argc - 1, argv + 1)) != -1) {
		switch (c) {
		case O_DB: db = optarg; break;
		case 'o': out = optarg; break;
		case O_SERIES: series = optarg; break;
		case O_TITLE: title = optarg; break;
		case O_WARM: qo.exclude_warmup = true; break;
		case O_ALPHA:
			if (number("--alpha", optarg, 1e-9, 0.5, &qo.alpha))
				return 2;
			break;
		case O_MIN_GAIN:
			if (number("--min-gain", optarg, 0, 1000, &d))
				return 2;
			qo.min_gain = d / 100;
			break;
		case O_MIN_CUTS:
			if (number("--min-cuts", optarg, 1, 1e9, &d) || d != (double)(int64_t)d) {
				fprintf(stderr, "emmclab: kernel: --min-cuts wants a whole number\n");
				return 2;
			}
			qo.min_cuts = (int64_t)d;
			break;
		case O_ACCEPT: accept = optarg; break;
		default:
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc - 1) {
		fprintf(stderr, "emmclab: kernel %s: unexpected argument '%s'\n", sub, argv[optind + 1]);
		return cli_usage("kernel");
	}
	if (!letter && (series || title)) {
		fprintf(stderr, "emmclab: kernel quirks: --series and --title are for cover-letter\n");
		return cli_usage("kernel");
	}
	if (accept && quirks_accept_parse(accept, &qo.accept, &e))
		return cli_error(&e);
	struct mailing_series ms = {0};
	if (series && mailing_series_load(series, &ms, &e))
		return cli_error(&e);
	const char *path = store_default_path(db);
	if (cli_db_missing("kernel", path)) {
		mailing_series_free(&ms);
		return 2;
	}
	struct store *s;
	if (store_open(path, STORE_READONLY, &s, &e)) {
		mailing_series_free(&ms);
		return cli_error(&e);
	}
	struct quirks_result *q = NULL;
	int rc = quirks_build(s, &qo, &q, &e);
	store_close(s);
	char *mem = NULL;
	size_t len = 0;
	FILE *f = NULL;
	if (!rc && !(f = open_memstream(&mem, &len)))
		rc = lab_err_set(&e, LAB_EINFRA, "open_memstream: %s", strerror(errno));
	if (!rc) {
		if (letter) {
			struct mailing_opts mo = {title, series ? &ms : NULL};
			rc = mailing_cover_letter(q, &mo, f, &e);
		} else {
			quirks_render(q, f);
		}
		fclose(f);
	}
	if (!rc) {
		if (out)
			rc = lab_write_file_atomic(out, mem, len, &e);
		else if (fwrite(mem, 1, len, stdout) != len)
			rc = lab_err_set(&e, LAB_EINFRA, "writing standard output: %s", strerror(errno));
	}
	free(mem);
	quirks_free(q);
	mailing_series_free(&ms);
	return rc ? cli_error(&e) : 0;
}
