/*
 * cmd_compare.c - `emmclab compare`: modes (default), parts, kernels, runs,
 * or a run against the regression baseline, with CIs, Welch and MWU tests.
 */
#include "baseline.h"
#include "cli.h"
#include "compare.h"
#include "json.h"
#include "report.h"
#include "results.h"
#include "store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
	O_DB = CLI_LONG_ONLY, O_BY, O_FILTER, O_ALPHA, O_MIN, O_A, O_B, O_FORMAT, O_WARM, O_BASE,
	O_RUN, O_POOL,
};

#define MAX_FILTERS 16

static int parse_frac(const char *opt, const char *v, double lo, double hi, double scale, double *out)
{
	double d;
	if (lab_parse_double(v, &d) || !(d >= lo && d <= hi)) {
		fprintf(stderr, "emmclab: compare: %s wants a number in [%g, %g], not '%s'\n", opt, lo, hi, v);
		return 2;
	}
	*out = d * scale;
	return 0;
}

static void print_row(FILE *f, const struct compare_row *w)
{
	char ma[24], ca[24], mb[24], cb[24], ch[24], lo[24], hi[24], pw[16], pm[16];
	char pair[80];
	snprintf(pair, sizeof pair, "%s vs %s", w->b->label, w->a->label);
	char wm[96];
	snprintf(wm, sizeof wm, "%s%s%s/%s", w->mode, w->mode[0] ? " " : "", w->workload, w->metric);
	if (isfinite(w->cmp.welch.p))
		snprintf(pw, sizeof pw, "%.3g", w->cmp.welch.p);
	else
		snprintf(pw, sizeof pw, "n/a");
	if (isfinite(w->cmp.mwu.p))
		snprintf(pm, sizeof pm, "%.3g%s", w->cmp.mwu.p, w->cmp.mwu.exact ? "" : "~");
	else
		snprintf(pm, sizeof pm, "n/a");
	char chg[64];
	if (isfinite(w->cmp.change_lo))
		snprintf(chg, sizeof chg, "%s [%s, %s]", report_pct(ch, sizeof ch, w->cmp.change),
			 report_pct(lo, sizeof lo, w->cmp.change_lo), report_pct(hi, sizeof hi, w->cmp.change_hi));
	else
		snprintf(chg, sizeof chg, "%s", report_pct(ch, sizeof ch, w->cmp.change));
	fprintf(f, "  %-26s %-30s %3zu %10s \xc2\xb1%-9s %3zu %10s \xc2\xb1%-9s %-28s %-9s %-9s %s",
		wm, pair, w->a->n, report_num(ma, sizeof ma, w->a->d.mean), report_num(ca, sizeof ca, w->a->d.ci_half),
		w->b->n, report_num(mb, sizeof mb, w->b->d.mean), report_num(cb, sizeof cb, w->b->d.ci_half), chg, pw,
		pm, stats_verdict_name(w->cmp.verdict));
	if (w->a->nwarmup || w->b->nwarmup)
		fprintf(f, " [warm-up: %zu/%zu%s]", w->a->nwarmup, w->b->nwarmup,
			w->a->warmup_excluded || w->b->warmup_excluded ? " excluded" : " kept");
	if (w->cmp.note[0])
		fprintf(f, " (%s)", w->cmp.note);
	if (w->provenance[0])
		fprintf(f, " {%s}", w->provenance);
	fputc('\n', f);
}

static void print_text(FILE *f, const struct results *res, const struct compare_result *cr)
{
	const char *last = NULL;
	size_t lastp = (size_t)-2;
	fprintf(f, "compare by %s: alpha %.3g, minimum effect %.3g%%, 95%% CIs (change: delta method)\n",
		compare_by_name(cr->opts.by), cr->opts.alpha, 100 * cr->opts.min_effect);
	char banner[256];
	if (results_source_banner(res, banner, sizeof banner)[0])
		fprintf(f, "%s\n%s\n", banner,
			cr->opts.pool_sources ? "sources pooled (--pool-sources)"
					      : "grouped by source: sources are not pooled (--pool-sources pools them)");
	if (!cr->nrows) {
		fprintf(f, "nothing to compare (no samples match)\n");
		return;
	}
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		char ctx[256];
		report_context(ctx, sizeof ctx, w);
		if (!last || strcmp(last, ctx) != 0 || lastp != w->part) {
			fprintf(f, "\n== %s\n", ctx[0] ? ctx : "all parts");
			fprintf(f, "  %-26s %-30s %3s %10s  %-9s %3s %10s  %-9s %-28s %-9s %-9s %s\n", "workload/metric",
				"pair (b vs a)", "n", "mean a", "95% CI", "n", "mean b", "95% CI",
				"change [95% CI]", "p Welch", "p MWU", "verdict");
			free((void *)last);
			last = xstrdup(ctx);
			lastp = w->part;
		}
		print_row(f, w);
	}
	free((void *)last);
	if (cr->ninter) {
		/* The ratio of the two FUA ratios: 1 when the CQE leaves the FUA effect alone. */
		fprintf(f, "\nInteraction (does the CQE change the FUA effect?):\n");
		for (size_t i = 0; i < cr->ninter; i++) {
			char ctx[256], line[320];
			report_context(ctx, sizeof ctx, &cr->rows[cr->inter[i].row_off]);
			fprintf(f, "  %s%s%s\n", ctx, ctx[0] ? ": " : "",
				report_interaction(line, sizeof line, cr, &cr->inter[i]));
		}
	}
	/* One sentence per comparison: what a reader of the list post wants. */
	fprintf(f, "\nVerdicts:\n");
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		char ctx[256], ch[24];
		report_context(ctx, sizeof ctx, w);
		const char *what;
		switch (w->cmp.verdict) {
		case VERDICT_BETTER:
			what = "significantly better";
			break;
		case VERDICT_WORSE:
			what = "significantly worse";
			break;
		case VERDICT_CHANGED:
			what = "significantly different";
			break;
		case VERDICT_NO_DIFF:
			what = strstr(w->cmp.note, "below minimum effect") ? "significant but below the minimum effect"
									   : "no significant difference";
			break;
		default:
			what = "not tested";
		}
		fprintf(f, "  %s%s%s%s %s/%s: %s vs %s %s, %s", ctx, ctx[0] ? ":" : "", w->mode[0] ? " " : "",
			w->mode, w->workload, w->metric, w->b->label, w->a->label,
			report_pct(ch, sizeof ch, w->cmp.change), what);
		if (isfinite(w->cmp.welch.p))
			fprintf(f, " (p=%.3g)", w->cmp.welch.p);
		else if (w->cmp.note[0])
			fprintf(f, " (%s)", w->cmp.note);
		if (w->provenance[0])
			fprintf(f, " {%s}", w->provenance);
		fputc('\n', f);
	}
}

const struct cli_opt cmd_compare_opts[] = {
	{"db", O_DB, "PATH", CLI_DB_HELP, 0},
	{"by", O_BY, "mode|part|kernel|run", "what to compare (default mode)", 0},
	{"filter", O_FILTER, "FIELD=VALUE",
	 "only these samples (repeatable: part, board, kernel, mode, ...)", 0},
	{"alpha", O_ALPHA, "A", "significance level of the tests (default 0.05)", 0},
	{"min-effect", O_MIN, "PCT", "smallest change in percent that counts (default 1)", 0},
	{"a", O_A, "X", "the first side: a mode, part, kernel or run id (with --b)", 0},
	{"b", O_B, "Y", "the second side (with --a)", 0},
	{"exclude-warmup", O_WARM, NULL, "leave out the warm-up iterations", 0},
	{"pool-sources", O_POOL, NULL,
	 "pool runs of different sources (lab, virtual, simulated, imported); default: each its own group", 0},
	{"baseline", O_BASE, "NAME",
	 "compare against a regression baseline (NAME default: default)", CLI_OPTIONAL},
	{"run", O_RUN, "ID", "the run to compare (default the newest)", 0},
	{"format", O_FORMAT, "text|json", "output format (default text)", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_compare(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	lab_mem_bulk_mapped(); /* every sample of the scope in memory */
	const char *db = NULL, *format = "text", *baseline = NULL;
	struct compare_opts o;
	compare_opts_init(&o);
	struct results_filter flt = {0};
	struct lab_err e = {0};
	bool min_given = false;
	int64_t run = 0;
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "compare");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case O_DB:
			db = optarg;
			break;
		case O_BY:
			if (compare_by_parse(optarg, &o.by)) {
				fprintf(stderr, "emmclab: compare: --by mode|part|kernel|run, not '%s'\n", optarg);
				return 2;
			}
			break;
		case O_FILTER:
			if (results_filter_add(&flt, optarg, &e))
				return cli_error(&e);
			break;
		case O_ALPHA:
			if (parse_frac("--alpha", optarg, 1e-6, 0.5, 1, &o.alpha))
				return 2;
			break;
		case O_MIN:
			if (parse_frac("--min-effect (percent)", optarg, 0, 1000, 0.01, &o.min_effect))
				return 2;
			min_given = true;
			break;
		case O_A:
			o.a = optarg;
			break;
		case O_B:
			o.b = optarg;
			break;
		case O_FORMAT:
			format = optarg;
			if (strcmp(format, "text") && strcmp(format, "json")) {
				fprintf(stderr, "emmclab: compare: --format text|json, not '%s'\n", format);
				return 2;
			}
			break;
		case O_WARM:
			o.exclude_warmup = true;
			break;
		case O_POOL:
			o.pool_sources = true;
			break;
		case O_BASE:
			baseline = optarg ? optarg : BASELINE_DEFAULT;
			break;
		case O_RUN:
			if (lab_parse_i64(optarg, &run) || run <= 0) {
				fprintf(stderr, "emmclab: compare: --run wants a run id, not '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emmclab: compare: unexpected argument '%s'\n", argv[optind]);
		return cli_usage("compare");
	}
	struct store *s;
	if (cli_db_missing("compare", store_default_path(db)))
		return 2;
	if (store_open(store_default_path(db), STORE_READONLY, &s, &e))
		return cli_error(&e);
	struct results *res = NULL;
	struct compare_result *cr = NULL;
	int rc;
	if (baseline) {
		struct regress_opts ro;
		regress_opts_init(&ro);
		ro.alpha = o.alpha;
		if (min_given)
			ro.threshold = o.min_effect;
		ro.exclude_warmup = o.exclude_warmup;
		if (!run && (rc = results_latest_run(s, &run, &e)))
			goto out;
		rc = regress_build(s, run, baseline, &ro, &res, &cr, NULL, NULL, &e);
	} else {
		if (run)
			flt.run_id = run;
		rc = results_load(s, &flt, &res, &e);
		if (!rc)
			rc = compare_build(res, &o, &cr, &e);
	}
	if (rc)
		goto out;
	if (strcmp(format, "json") == 0) {
		char banner[256];
		results_source_banner(res, banner, sizeof banner);
		printf("{\"schema\":\"emmclab-compare/1\",\"by\":\"%s\",\"alpha\":%.6g,\"min_effect\":%.6g,"
		       "\"pool_sources\":%s,\"provenance\":",
		       compare_by_name(cr->opts.by), cr->opts.alpha, cr->opts.min_effect,
		       cr->opts.pool_sources ? "true" : "false");
		json_put_str(stdout, banner);
		printf(",\"comparisons\":");
		report_json_comparisons(stdout, cr);
		printf(",\"interactions\":");
		report_json_interactions(stdout, cr);
		printf(",\"better\":%zu,\"worse\":%zu,\"no_difference\":%zu,\"no_test\":%zu}\n", cr->nbetter,
		       cr->nworse, cr->nnodiff, cr->nnotest);
	} else {
		/* labels, board and kernel names come from DUTs, imports and configs */
		FILE *f = lab_text_stream(stdout);
		if (baseline)
			fprintf(f ? f : stdout, "run %lld against baseline '%s'\n", (long long)run, baseline);
		print_text(f ? f : stdout, res, cr);
		if (f)
			fclose(f);
	}
out:;
	/* With a baseline, a significant regression is a finding: exit 1. */
	bool found = !rc && baseline && cr && cr->nworse > 0;
	if (found)
		fprintf(stderr, "emmclab: %zu regression%s against baseline '%s'\n", cr->nworse,
			cr->nworse == 1 ? "" : "s", baseline);
	compare_free(cr);
	results_free(res);
	store_close(s);
	if (rc)
		return cli_error(&e);
	return found ? 1 : 0;
}
