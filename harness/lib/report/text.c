/*
 * report/text.c - plain text for a mailing-list post: every line at most 72
 * columns (longer labels are cut with "~"), per DUT and mode the samples,
 * mean and CI, then each mode pair's change, p-values and verdict.
 */
#include "health.h"
#include "report.h"
#include "mode.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_WIDTH 72

/* Print one line cut to `width` columns (UTF-8 aware: never splits a character). */
static void __attribute__((format(printf, 3, 4))) tline(FILE *f, int width, const char *fmt, ...)
{
	char raw[1024], buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	/* DUT, import and config text may hold control bytes: escape before
	 * measuring, so the cut counts what the terminal shows */
	lab_text_escape(buf, sizeof buf, raw);
	lab_text_fit(buf, width);
	fprintf(f, "%s\n", buf);
}

/* The provenance banner, one source a line ("source: a - ...; b - ..." is
 * split at "; "), so several sources keep within the width. */
static void banner(FILE *f, int width, const char *b)
{
	for (bool first = true; b && *b; first = false) {
		const char *end = strstr(b, "; ");
		int len = end ? (int)(end - b) : (int)strlen(b);
		tline(f, width, "%s%.*s", first ? "" : "        ", len, b);
		b = end ? end + 2 : NULL;
	}
}

static bool same_ctx(const struct compare_row *a, const struct compare_row *b)
{
	return strcmp(a->part_label, b->part_label) == 0 && a->part == b->part &&
	       strcmp(a->board, b->board) == 0 && strcmp(a->kernel, b->kernel) == 0 &&
	       strcmp(a->source, b->source) == 0;
}

static bool same_metric(const struct compare_row *a, const struct compare_row *b)
{
	return same_ctx(a, b) && strcmp(a->workload, b->workload) == 0 &&
	       strcmp(a->metric, b->metric) == 0;
}

static void side_line(FILE *f, int width, const struct compare_side *s)
{
	char m[32], c[32], warm[40] = "";
	if (s->nwarmup)
		snprintf(warm, sizeof warm, "  %zu warm-up%s", s->nwarmup,
			 s->warmup_excluded ? " excluded" : "");
	if (s->n == 0) {
		tline(f, width, "    %-16s %3s  %10s", s->label, "0", "no data");
		return;
	}
	report_num(c, sizeof c, s->d.ci_half);
	tline(f, width, "    %-16s %3zu %10s  %s%-9s%s", s->label, s->n, report_num(m, sizeof m, s->d.mean),
	      isfinite(s->d.ci_half) ? "\xc2\xb1" : " ", isfinite(s->d.ci_half) ? c : "n/a", warm);
}

static void pair_lines(FILE *f, int width, const struct compare_row *w)
{
	char ch[24], lo[24], hi[24];
	const struct stats_cmp *c = &w->cmp;
	if (isfinite(c->change) && isfinite(c->change_lo))
		tline(f, width, "    %s vs %s: %s [%s, %s]", w->b->label, w->a->label,
		      report_pct(ch, sizeof ch, c->change), report_pct(lo, sizeof lo, c->change_lo),
		      report_pct(hi, sizeof hi, c->change_hi));
	else
		tline(f, width, "    %s vs %s: %s", w->b->label, w->a->label,
		      report_pct(ch, sizeof ch, c->change));
	if (isfinite(c->welch.p))
		tline(f, width, "      p(Welch)=%.3g p(MWU%s)=%.3g -> %s", c->welch.p,
		      c->mwu.exact ? "" : "~", c->mwu.p, stats_verdict_name(c->verdict));
	else
		tline(f, width, "      -> %s", stats_verdict_name(c->verdict));
	if (c->note[0])
		tline(f, width, "      (%s)", c->note);
	if (w->provenance[0])
		tline(f, width, "      (%s: %s)", w->source, w->provenance);
}

/* Per DUT: each workload/metric with its modes, then each mode pair. */
static void rows_text(FILE *f, int width, const struct compare_result *cr, bool show_mode)
{
	for (size_t i = 0; i < cr->nrows;) {
		const struct compare_row *w = &cr->rows[i];
		char ctx[256];
		tline(f, width, "%s", "");
		tline(f, width, "%s", report_context(ctx, sizeof ctx, w)[0] ? ctx : "(all parts)");
		size_t j = i;
		while (j < cr->nrows && same_ctx(w, &cr->rows[j])) {
			const struct compare_row *x = &cr->rows[j];
			if (show_mode && x->mode[0])
				tline(f, width, "  %s %s/%s (%s, %s)", x->mode, x->workload, x->metric,
				      x->unit, report_direction_text(x->direction));
			else
				tline(f, width, "  %s/%s (%s, %s)", x->workload, x->metric, x->unit,
				      report_direction_text(x->direction));
			tline(f, width, "    %-16s %3s %10s  %s", "mode", "n", "mean", "95% CI");
			size_t k = j;
			const char *seen[16];
			size_t nseen = 0;
			while (k < cr->nrows && same_metric(x, &cr->rows[k]) &&
			       strcmp(x->mode, cr->rows[k].mode) == 0) {
				const struct compare_side *sides[2] = {cr->rows[k].a, cr->rows[k].b};
				for (int q = 0; q < 2; q++) {
					bool dup = false;
					for (size_t z = 0; z < nseen; z++)
						dup |= strcmp(seen[z], sides[q]->label) == 0;
					if (dup || nseen == LAB_ARRAY_SIZE(seen))
						continue;
					seen[nseen++] = sides[q]->label;
					side_line(f, width, sides[q]);
				}
				k++;
			}
			for (size_t q = j; q < k; q++)
				pair_lines(f, width, &cr->rows[q]);
			j = k;
		}
		i = j;
	}
}

/* An interaction in two short lines: mails and terminals stay within 72 columns. */
static void inter_lines(FILE *f, int width, const struct compare_result *cr,
			const struct compare_interaction *x)
{
	const struct compare_row *w0 = &cr->rows[x->row_off], *w1 = &cr->rows[x->row_on];
	char c0[24], c1[24], d[24], r[24], lo[24], hi[24], p[24];
	report_pct(c0, sizeof c0, w0->cmp.change);
	report_pct(c1, sizeof c1, w1->cmp.change);
	report_pp(d, sizeof d, x->diff);
	tline(f, width, "  CQE x FUA %s/%s: FUA %s without CQE, %s with", w0->workload,
	      w0->metric, c0, c1);
	if (!isfinite(x->ratio)) {
		tline(f, width, "    no test");
		return;
	}
	/* ratios near 1: four decimals, whatever the magnitude */
	snprintf(r, sizeof r, "%.4f", x->ratio);
	snprintf(lo, sizeof lo, isfinite(x->lo) ? "%.4f" : "n/a", x->lo);
	snprintf(hi, sizeof hi, isfinite(x->hi) ? "%.4f" : "n/a", x->hi);
	report_p(p, sizeof p, x->p, false);
	tline(f, width, "    %s; ratio of ratios %s [%s, %s], p %s", d, r, lo, hi, p);
}

void report_text_modes(const struct report_model *m, FILE *f, int width)
{
	if (m->modes->nrows == 0) {
		tline(f, width, "No samples to compare in %s.", m->scope);
		return;
	}
	tline(f, width, "Modes compared (alpha %.3g, minimum effect %.3g%%):", m->opts.alpha,
	      100 * m->opts.min_effect);
	rows_text(f, width, m->modes, false);
	if (m->modes->ninter) {
		tline(f, width, "%s", "");
		tline(f, width, "Does the CQE change the FUA effect? (%.3g%% CI)", 100 * (1 - m->opts.alpha));
		for (size_t i = 0; i < m->modes->ninter; i++) {
			char ctx[256];
			tline(f, width, "%s",
			      report_context(ctx, sizeof ctx, &m->modes->rows[m->modes->inter[i].row_off]));
			inter_lines(f, width, m->modes, &m->modes->inter[i]);
		}
	}
}

/*
 * The table `emmclab run` prints at the end: per DUT, the headline metrics of
 * each workload, the 2x2 of modes (compare_mode_pairs) with means, the change
 * and the verdict, then the CQE x FUA interaction.  The full comparison (every
 * metric, CIs, p-values) is `emmclab compare` / `emmclab report`.
 */
static const char *short_verdict(enum stats_verdict v)
{
	switch (v) {
	case VERDICT_BETTER: return "better";
	case VERDICT_WORSE: return "WORSE";
	case VERDICT_NO_DIFF: return "same";
	default: return "no test";
	}
}

static void fmt_mean(char *buf, size_t n, const struct compare_side *s)
{
	if (s->n == 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.4g", s->d.mean);
}

/* Rows of one block of the table: the same part, board and source. */
static bool same_block(const struct compare_row *a, const struct compare_row *b)
{
	return strcmp(a->part_label, b->part_label) == 0 && strcmp(a->board, b->board) == 0 &&
	       strcmp(a->source, b->source) == 0;
}

static void mode_table(const struct report_model *m, FILE *f);

/* Written through lab_text_stream: part labels, board and kernel names come
 * from the DUT, imports and configs (docs/reports.md, "Control characters"). */
void report_text_mode_table(const struct report_model *m, FILE *out)
{
	FILE *f = lab_text_stream(out);
	mode_table(m, f ? f : out);
	if (f)
		fclose(f);
}

static void mode_table(const struct report_model *m, FILE *f)
{
	const struct compare_result *c = m->modes;
	size_t shown = 0;
	fprintf(f, "FUA vs cache-no-FUA, with and without CQE (the 2x2): means of n\n"
		   "iterations, change of the right mode against the left (nofua =\n"
		   "cache-nofua), verdict at alpha %.3g and minimum effect %.3g%%;\n"
		   "CQE x FUA: does the CQE change the FUA effect (ratio of ratios, 1 = no)\n",
		m->opts.alpha, 100 * m->opts.min_effect);
	if (m->provenance[0])
		banner(f, TEXT_WIDTH, m->provenance);
	size_t nassumed = 0;
	/* Each block's interactions, listed once (in their order) by the row
	 * that starts the block: looking them up among all of the run's for
	 * every block cost a thousand parts a million string comparisons. */
	size_t *bstart = c->nrows ? xmalloc(c->nrows * sizeof *bstart) : NULL;
	size_t *ihead = c->nrows ? xmalloc(c->nrows * sizeof *ihead) : NULL;
	size_t *inext = c->ninter ? xmalloc(c->ninter * sizeof *inext) : NULL;
	for (size_t i = 0; i < c->nrows; i++) {
		ihead[i] = SIZE_MAX;
		bstart[i] = i > 0 && same_block(&c->rows[i - 1], &c->rows[i]) ? bstart[i - 1] : i;
	}
	for (size_t i = c->ninter; i-- > 0;) {
		size_t b = bstart[c->inter[i].row_off];
		inext[i] = ihead[b];
		ihead[b] = i;
	}
	for (size_t pi = 0; pi < c->nrows; pi++) {
		/* One block per part/board/source; rows of a block are contiguous. */
		if (bstart[pi] != pi)
			continue;
		bool header = false;
		/* A sub-table per pair of the 2x2 (compare_mode_pairs). */
		struct compare_mode_pair mp[2 * MODE_COUNT];
		size_t nmp = compare_mode_pairs(mp, LAB_ARRAY_SIZE(mp));
		for (size_t k = 0; k < nmp; k++) {
			int pa = mp[k].a, pb = mp[k].b;
			bool sub = false;
			for (size_t i = pi; i < c->nrows; i++) {
				const struct compare_row *x = &c->rows[i];
				if (bstart[i] != pi)
					break;
				if (!x->a->label || !x->b->label || strcmp(x->a->label, lab_mode_names[pa]) != 0 ||
				    strcmp(x->b->label, lab_mode_names[pb]) != 0 || !report_headline_metric(x->workload, x->metric))
					continue;
				if (!header) {
					/* label, then board and kernel: long part labels
					 * stay within a mail's 72 columns */
					fprintf(f, "\n%.72s%s%s%s\n", x->part_label,
						strcmp(x->source, "lab") ? " [" : "",
						strcmp(x->source, "lab") ? x->source : "",
						strcmp(x->source, "lab") ? "]" : "");
					if (x->board[0] || x->kernel[0])
						fprintf(f, "  %s%.30s%s%.40s\n", x->board[0] ? "on " : "",
							x->board, x->kernel[0] ? ", kernel " : "", x->kernel);
					/* docs/running.md, "Part health" */
					if (strstr(x->cmp.note, "WORN:"))
						fprintf(f, "  WORN: a part past its health thresholds "
							   "(emmclab status)\n");
					header = true;
				}
				if (!sub) {
					fprintf(f, "  %-22s %-5s %2s %9s %9s %8s %s\n", "workload/metric", "unit",
						"n", lab_modes[pa].abbrev, lab_modes[pb].abbrev, "change", "verdict");
					sub = true;
				}
				char wm[64], ma[24], mb[24], ch[24];
				snprintf(wm, sizeof wm, "%s/%s", x->workload, x->metric);
				fmt_mean(ma, sizeof ma, x->a);
				fmt_mean(mb, sizeof mb, x->b);
				report_pct(ch, sizeof ch, x->cmp.change);
				bool assumed = x->provenance[0] && strcmp(x->provenance, "fitted to published data");
				nassumed += assumed;
				fprintf(f, "  %-22s %-5s %2zu %9s %9s %8s %s%s\n", wm, x->unit ? x->unit : "",
					x->a->n < x->b->n ? x->a->n : x->b->n, ma, mb, ch, short_verdict(x->cmp.verdict),
					assumed ? " *" : "");
				shown++;
			}
		}
		for (size_t i = ihead[pi]; i != SIZE_MAX; i = inext[i]) {
			const struct compare_row *x = &c->rows[c->inter[i].row_off];
			if (!report_headline_metric(x->workload, x->metric))
				continue;
			inter_lines(f, TEXT_WIDTH, c, &c->inter[i]);
		}
	}
	free(bstart);
	free(ihead);
	free(inext);
	if (shown == 0)
		fprintf(f, "\nNo FUA vs cache-no-FUA pair with samples in %s.\n", m->scope);
	if (nassumed)
		fprintf(f, "\n* assumed (no published data): the simulator's model, not fitted to a\n"
			   "  published figure; the others are fitted to results/reference.\n");
	fprintf(f, "\nAll metrics, CIs and p-values: emmclab compare --run %lld\n",
		(long long)m->run_id);
}

static int render_body(const struct report_model *m, FILE *f);

static int render(const struct report_model *m, FILE *out, struct lab_err *e)
{
	LAB_UNUSED(e);
	FILE *f = lab_text_stream(out);
	int rc = render_body(m, f ? f : out);
	if (f)
		fclose(f);
	return rc;
}

static int render_body(const struct report_model *m, FILE *f)
{
	int w = TEXT_WIDTH;
	tline(f, w, "%s: %s", m->opts.title ? m->opts.title : "emmclab report", m->scope);
	tline(f, w, "generated %s", m->generated_at);
	if (m->provenance[0])
		banner(f, w, m->provenance);
	tline(f, w, "%s", "");
	char lines[8][128];
	size_t n = report_summary_lines(m, lines, 8);
	tline(f, w, "Summary");
	for (size_t i = 0; i < n; i++)
		tline(f, w, "  %s", lines[i]);
	tline(f, w, "%s", "");
	report_text_modes(m, f, w);
	if (m->regress) {
		tline(f, w, "%s", "");
		tline(f, w, "Against baseline '%s' (%s, %zu run%s), threshold %.3g%%:", m->base.name,
		      m->base.kind, m->nbase_runs, m->nbase_runs == 1 ? "" : "s",
		      100 * m->opts.regress_threshold);
		size_t shown = 0;
		for (size_t i = 0; i < m->regress->nrows; i++) {
			const struct compare_row *x = &m->regress->rows[i];
			if (x->cmp.verdict != VERDICT_WORSE && x->cmp.verdict != VERDICT_BETTER)
				continue;
			char ch[24];
			tline(f, w, "  %s: %s %s %s/%s %s", x->cmp.verdict == VERDICT_WORSE ? "REGRESSION" : "improved",
			      x->part_label, x->mode, x->workload, x->metric,
			      report_pct(ch, sizeof ch, x->cmp.change));
			shown++;
		}
		if (!shown)
			tline(f, w, "  no significant change in %zu comparisons", m->regress->nrows);
	}
	/* each part's wear (docs/running.md, "Part health"), for the parts shown */
	for (size_t i = 0, shown = 0; i < m->res->nparts; i++) {
		const struct store_health_sum *h = &m->res->parts[i].health;
		if (!health_part_shown(m->res, i))
			continue;
		char now[160], trend[96];
		health_now_text(h, now, sizeof now);
		health_trend_text(h, trend, sizeof trend);
		if (shown++ == 0) {
			tline(f, w, "%s", "");
			tline(f, w, "Part health (EXT_CSD life time A/B, PRE_EOL_INFO):");
		}
		tline(f, w, "  %s%s", m->res->parts[i].label, h->flagged_jobs ? ": WORN" : "");
		tline(f, w, "    %s", now);
		tline(f, w, "    trend %s", trend);
		if (h->flagged_jobs)
			tline(f, w, "    %d job%s flagged: %s", h->flagged_jobs,
			      h->flagged_jobs == 1 ? "" : "s", h->flag);
	}
	size_t nev = 0;
	for (size_t i = 0; i < m->res->nevents; i++)
		nev += strcmp(m->res->events[i].kind, "info") != 0;
	if (nev) {
		tline(f, w, "%s", "");
		tline(f, w, "Infrastructure events (%zu):", nev);
		size_t shown = 0;
		for (size_t i = 0; i < m->res->nevents && shown < 30; i++) {
			const struct results_event *ev = &m->res->events[i];
			if (strcmp(ev->kind, "info") == 0)
				continue;
			tline(f, w, "  %s %s %s: %s", ev->at, ev->kind, ev->board, ev->message);
			shown++;
		}
		if (nev > shown)
			tline(f, w, "  ... and %zu more", nev - shown);
	}
	return LAB_OK;
}

const struct report_renderer report_text = {
	.name = "text",
	.version = REPORT_OPS_VERSION,
	.ext = "txt",
	.mime = "text/plain",
	.render = render,
};
