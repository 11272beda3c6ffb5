/* cmd_report.c - `emmclab report`: render a run (or all runs) in one format. */
#include "cli.h"
#include "report.h"
#include "store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	O_DB = CLI_LONG_ONLY, O_RUN, O_ALL, O_FORMAT, O_BASE, O_WARM, O_ALPHA, O_MIN, O_THR, O_TITLE,
	O_FILTER, O_DETAIL,
};

static int num(const char *opt, const char *v, double lo, double hi, double *out)
{
	if (lab_parse_double(v, out) || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "emmclab: report: %s wants a number in [%g, %g], not '%s'\n", opt, lo, hi, v);
		return 2;
	}
	return 0;
}

const struct cli_opt cmd_report_opts[] = {
	{"db", O_DB, "PATH", CLI_DB_HELP, 0},
	{"run", O_RUN, "ID", "the run to render (default the newest)", 0},
	{"all", O_ALL, NULL, "every run in the database", 0},
	{"format", O_FORMAT, "text|markdown|html|json|csv|junit",
	 "output format (default text)", 0},
	{"output", 'o', "FILE", "write to FILE (atomically) instead of standard output", 0},
	{"baseline", O_BASE, "NAME", "check against a regression baseline (NAME default: default)",
	 CLI_OPTIONAL},
	{"threshold", O_THR, "PCT",
	 "smallest change in percent against the baseline (default 2)", 0},
	{"exclude-warmup", O_WARM, NULL, "leave out the warm-up iterations", 0},
	{"filter", O_FILTER, "FIELD=VALUE",
	 "only these samples (repeatable: part, board, kernel, mode, ...)", 0},
	{"alpha", O_ALPHA, "A", "significance level of the tests (default 0.05)", 0},
	{"min-effect", O_MIN, "PCT", "smallest change in percent that counts (default 1)", 0},
	{"title", O_TITLE, "TEXT", "title of the report (default \"emmclab report\")", 0},
	{"dut-detail", O_DETAIL, "N",
	 "html: box plots and tables for the first N DUTs, latency charts and trends for the first N parts; "
	 "'all' for every one (default 64; the part comparison lists every DUT)", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_report(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	lab_mem_bulk_mapped(); /* every sample of the scope in memory */
	const char *db = NULL, *format = "text", *out = NULL;
	struct report_opts o;
	report_opts_init(&o);
	struct lab_err e = {0};
	double d;
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "report");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case O_DB:
			db = optarg;
			break;
		case O_RUN:
			if (lab_parse_i64(optarg, &o.run_id) || o.run_id <= 0) {
				fprintf(stderr, "emmclab: report: --run wants a run id, not '%s'\n", optarg);
				return 2;
			}
			break;
		case O_ALL:
			o.all = true;
			break;
		case O_FORMAT:
			format = optarg;
			break;
		case O_BASE:
			o.baseline = optarg ? optarg : BASELINE_DEFAULT;
			break;
		case O_WARM:
			o.exclude_warmup = true;
			break;
		case O_ALPHA:
			if (num("--alpha", optarg, 1e-6, 0.5, &o.alpha))
				return 2;
			break;
		case O_MIN:
			if (num("--min-effect (percent)", optarg, 0, 1000, &d))
				return 2;
			o.min_effect = d / 100;
			break;
		case O_THR:
			if (num("--threshold (percent)", optarg, 0, 1000, &d))
				return 2;
			o.regress_threshold = d / 100;
			break;
		case O_TITLE:
			o.title = optarg;
			break;
		case O_DETAIL: {
			int64_t v;
			if (!strcmp(optarg, "all"))
				o.dut_detail = SIZE_MAX;
			else if (lab_parse_i64(optarg, &v) || v < 0) {
				fprintf(stderr, "emmclab: report: --dut-detail wants a count or 'all', not '%s'\n",
					optarg);
				return 2;
			} else
				o.dut_detail = (size_t)v;
			break;
		}
		case O_FILTER:
			if (results_filter_add(&o.filter, optarg, &e))
				return cli_error(&e);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emmclab: report: unexpected argument '%s'\n", argv[optind]);
		return cli_usage("report");
	}
	if (o.all && o.run_id) {
		fprintf(stderr, "emmclab: report: --run and --all exclude each other\n");
		return 2;
	}
	if (!report_renderer_find(format)) {
		/* the list comes from the registry: docs_cli checks that help says the same */
		fprintf(stderr, "emmclab: report: unknown format '%s' (", format);
		for (size_t i = 0; report_renderers[i]; i++)
			fprintf(stderr, "%s%s", i ? "|" : "", report_renderers[i]->name);
		fputs(")\n", stderr);
		return 2;
	}
	struct store *s;
	if (cli_db_missing("report", store_default_path(db)))
		return 2;
	if (store_open(store_default_path(db), STORE_READONLY, &s, &e))
		return cli_error(&e);
	struct report_model *m = NULL;
	report_opts_for_format(&o, format);
	int rc = report_build(s, &o, &m, &e);
	if (!rc) {
		if (out) {
			rc = report_render_file(m, format, out, &e);
		} else {
			rc = report_render(m, format, stdout, &e);
		}
	}
	int regressions = m ? m->sum.regressions : 0;
	report_free(m);
	store_close(s);
	if (rc)
		return cli_error(&e);
	if (regressions > 0) {
		fprintf(stderr, "emmclab: %d regression%s against baseline '%s'\n", regressions,
			regressions == 1 ? "" : "s", o.baseline);
		return 1;
	}
	return 0;
}
