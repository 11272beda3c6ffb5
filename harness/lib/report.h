/*
 * report.h - one report model, several renderers (text, markdown, html,
 * json, csv, junit).
 *
 * report_build() loads the selected run (or every run), compares the modes,
 * optionally checks against a regression baseline, and gathers the summary
 * (regressions, infrastructure errors, jobs ok/failed, mode mismatches) that
 * every renderer puts at the top.  Renderers are `const struct
 * report_renderer` tables, one per file report/<name>.c, one row each in
 * report_renderers[] (report.c).
 * Library code: renderers write only to the FILE * they are given.
 */
#ifndef EMMCLAB_REPORT_H
#define EMMCLAB_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "baseline.h"
#include "compare.h"
#include "results.h"
#include "store.h"
#include "store_latency.h"
#include "util.h"

struct report_opts {
	int64_t run_id;         /* 0: the newest run (unless all) */
	bool all;               /* every run in the store */
	const char *baseline;   /* NULL: no regression check */
	double alpha;           /* default 0.05 */
	double min_effect;      /* mode comparisons, default 0.01 */
	double regress_threshold; /* default REGRESS_DEFAULT_THRESHOLD */
	bool exclude_warmup;
	const char *title;      /* NULL: "emmclab report" */
	size_t trend_runs;      /* nights in the HTML trends, default 90 */
	struct results_filter filter; /* further narrowing (part, mode, ...); run fields ignored */
	bool modes_only;        /* only what the mode table needs: no trends, no latency histograms */
	size_t dut_detail;      /* html: DUTs drawn in full (box plots, tables) and parts with
				 * latency charts and trends, the first in report order; SIZE_MAX: all */
	size_t lat_parts;       /* 0: every part's latency histograms; else those of the first
				 * lat_parts parts only (what the HTML draws: its dut_detail) */
};
/* The HTML report's default dut_detail: 64 DUTs are about 10 MB of HTML; every
 * DUT of a 1,024-board night was 157 MB, which a browser does not open. */
#define REPORT_DUT_DETAIL 64
void report_opts_init(struct report_opts *o);
/* Narrow o to what FORMAT renders (set the other options first): the model
 * then holds no more than that renderer shows. */
void report_opts_for_format(struct report_opts *o, const char *format);

struct report_summary {
	int regressions;        /* -1: no baseline given */
	int improvements;       /* baseline comparisons that got better */
	int infra_errors;       /* events that are not "info" */
	int jobs_total, jobs_ok, jobs_failed, mode_mismatches;
	size_t samples, warmups;
};

struct report_model {
	struct report_opts opts;
	char generated_at[32];
	char scope[160];             /* "run 12 (2026-11-30T06:14:07Z, plan nightly)" or "all runs (3)" */
	char provenance[256];        /* results_source_banner() of res: "" when all lab runs */
	int64_t run_id;              /* 0 when all */
	struct results *res;         /* the selected data */
	struct compare_result *modes;/* mode comparisons on res */
	struct results_trend *trend; /* trends over nights of the first dut_detail parts */
	struct results *rres;        /* baseline + run data, NULL without baseline */
	struct compare_result *regress; /* baseline vs run, NULL without baseline */
	struct baseline_info base;
	int64_t *base_runs;
	size_t nbase_runs;
	struct report_summary sum;
	struct store_lathist *lat;   /* request latency histograms of res's scope (store_latency.h) */
	size_t nlat;
	size_t nlat_parts;           /* the parts with histograms, also those opts.lat_parts left out */
};

int report_build(struct store *s, const struct report_opts *o, struct report_model **out,
		 struct lab_err *e);
void report_free(struct report_model *m);

/* Bumped when struct report_renderer changes; every table sets .version to it. */
#define REPORT_OPS_VERSION 1

struct report_renderer {
	const char *name;  /* --format value; first: the registry finds renderers by it */
	int version;       /* REPORT_OPS_VERSION */
	const char *ext;   /* file extension */
	const char *mime;
	int (*render)(const struct report_model *m, FILE *f, struct lab_err *e); /* required */
};
/* Every renderer, one row each, NULL-terminated. */
extern const struct report_renderer *const report_renderers[];
const struct report_renderer *report_renderer_find(const char *name);
/* Check one renderer table (version, name, ext, mime, render). */
int report_ops_check(const struct report_renderer *r, struct lab_err *e);
/* report_ops_check on every row of report_renderers. */
int report_registry_check(struct lab_err *e);
int report_render(const struct report_model *m, const char *format, FILE *f, struct lab_err *e);

/* Render a built model as FORMAT into PATH atomically, streamed (lab_atomic). */
int report_render_file(const struct report_model *m, const char *format, const char *path,
		       struct lab_err *e);
/* The same with the format checked and PATH's directory made. */
int report_write_model(struct report_model *m, const char *format, const char *path,
		       struct lab_err *e);
/* The end of `run`: the comparison table on TABLE and, when HTML_PATH is set,
 * the HTML report, from one model (one load of the run's samples and one set
 * of comparisons instead of one each).  A failure to build the model is
 * returned in E (nothing printed); a failure to write the HTML file returns
 * non-zero with the table printed and the reason in HTML_E (E untouched). */
int report_run_outputs(struct store *s, int64_t run_id, const struct report_opts *ro, FILE *table,
		       const char *html_path, struct lab_err *e, struct lab_err *html_e);
/* Build and render run_id (0: newest) into `path` atomically (tmp + rename). */
int report_write_file(struct store *s, int64_t run_id, const char *format, const char *path,
		      struct report_opts *o, struct lab_err *e);
/* The FUA vs cache-no-FUA (and CQE) table per DUT, <= 72 columns, printed by
 * `run` at the end of a night. */
int report_print_mode_table(struct store *s, int64_t run_id, FILE *f, struct lab_err *e);
/* The same with options (e.g. exclude_warmup from the plan's suites). */
int report_print_mode_table_opts(struct store *s, int64_t run_id, const struct report_opts *o,
				 FILE *f, struct lab_err *e);

/* ---- helpers shared by the renderers ---- */
void report_xml_str(FILE *f, const char *s); /* escapes & < > " ' (HTML and XML) */
void report_csv_str(FILE *f, const char *s); /* RFC 4180 quoting when needed */
/* "+12.34%" or "n/a" */
const char *report_pct(char *buf, size_t n, double frac);
/* A p-value ("%.3g", "~" when approximate) or "n/a". */
const char *report_p(char *buf, size_t n, double p, bool approx);
/* Shortest sensible fixed-point for a measurement: 4 significant digits min. */
const char *report_num(char *buf, size_t n, double v);
/* v as "%.1f" writes it, digit for digit, without printf's slow exact path. */
const char *report_fmt_1f(char *buf, size_t n, double v);
const char *report_direction_text(int direction); /* "higher is better" ... */
/* The summary as short lines (no newline), for renderers: fills up to max lines. */
size_t report_summary_lines(const struct report_model *m, char lines[][128], size_t max);
/* Group label "part / board / kernel" skipping empty parts. */
const char *report_context(char *buf, size_t n, const struct compare_row *w);
/* A difference of two changes (fractions) in percentage points: "+0.16 pp". */
const char *report_pp(char *buf, size_t n, double frac);
/* One line on an interaction: the two FUA effects, their difference and the
 * ratio of ratios with its CI and p. */
const char *report_interaction(char *buf, size_t n, const struct compare_result *cr,
			       const struct compare_interaction *x);

/* The comparisons as a JSON array (report schema emmclab-report/1). */
void report_json_comparisons(FILE *f, const struct compare_result *cr);
void report_json_interactions(FILE *f, const struct compare_result *cr); /* a JSON array */

/* Text tables with every line cut to at most `width` columns. */
void report_text_modes(const struct report_model *m, FILE *f, int width);
void report_text_mode_table(const struct report_model *m, FILE *f); /* compact table printed by `run` */
bool report_headline_metric(const char *workload, const char *metric);

#endif
