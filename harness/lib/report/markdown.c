/* report/markdown.c - GitHub-flavoured Markdown: summary, one table per DUT. */
#include "report.h"

#include <math.h>
#include <string.h>

/* Table cells: escape the characters Markdown would interpret. */
static void md(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (strchr("|\\`*_[]<>#", *s))
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

static void side(FILE *f, const struct compare_side *s)
{
	char m[32], c[32];
	if (!s->n) {
		fputs(" 0 | n/a |", f);
		return;
	}
	fprintf(f, " %zu%s | %s \xc2\xb1 %s |", s->n, s->nwarmup ? "\\*" : "",
		report_num(m, sizeof m, s->d.mean), report_num(c, sizeof c, s->d.ci_half));
}

static void table(FILE *f, const struct compare_result *cr, bool with_mode)
{
	const char *last = NULL, *lastsrc = NULL;
	size_t lastpart = (size_t)-1;
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		char ctx[256];
		report_context(ctx, sizeof ctx, w);
		if (!last || strcmp(last, w->part_label) != 0 || lastpart != w->part ||
		    strcmp(lastsrc, w->source) != 0) {
			fputs("\n### ", f);
			md(f, ctx[0] ? ctx : "all parts");
			fprintf(f, "\n\n| %sworkload/metric | unit | a | n | mean \xc2\xb1 95%% CI | b | n | mean \xc2\xb1 95%% CI "
				   "| change [95%% CI] | p Welch | p MWU | verdict |\n",
				with_mode ? "mode | " : "");
			fprintf(f, "|%s---|---|---|--:|--:|---|--:|--:|--:|--:|--:|---|\n", with_mode ? "---|" : "");
			last = w->part_label;
			lastsrc = w->source;
			lastpart = w->part;
		}
		char ch[24], lo[24], hi[24];
		fputs("| ", f);
		if (with_mode) {
			md(f, w->mode);
			fputs(" | ", f);
		}
		md(f, w->workload);
		fputc('/', f);
		md(f, w->metric);
		fputs(" | ", f);
		md(f, w->unit);
		fputs(" | ", f);
		md(f, w->a->label);
		fputs(" |", f);
		side(f, w->a);
		fputc(' ', f);
		md(f, w->b->label);
		fputs(" |", f);
		side(f, w->b);
		fprintf(f, " %s", report_pct(ch, sizeof ch, w->cmp.change));
		if (isfinite(w->cmp.change_lo))
			fprintf(f, " [%s, %s]", report_pct(lo, sizeof lo, w->cmp.change_lo),
				report_pct(hi, sizeof hi, w->cmp.change_hi));
		fputs(" |", f);
		char pw[32], pm[32];
		fprintf(f, " %s | %s |", report_p(pw, sizeof pw, w->cmp.welch.p, false),
			report_p(pm, sizeof pm, w->cmp.mwu.p, !w->cmp.mwu.exact));
		fputs(" **", f);
		md(f, stats_verdict_name(w->cmp.verdict));
		fputs("**", f);
		if (w->cmp.note[0]) {
			fputs(" (", f);
			md(f, w->cmp.note);
			fputc(')', f);
		}
		if (w->provenance[0]) {
			fputs(" _", f);
			md(f, w->provenance);
			fputc('_', f);
		}
		fputs(" |\n", f);
	}
}

static int render_body(const struct report_model *m, FILE *f);

/* Written through lab_text_stream: labels, names and event messages come from
 * the DUT, imports and configs (docs/reports.md, "Control characters"). */
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
	fputs("# ", f);
	md(f, m->opts.title ? m->opts.title : "emmclab report");
	fputs(": ", f);
	md(f, m->scope);
	fprintf(f, "\n\nGenerated %s.\n\n", m->generated_at);
	if (m->provenance[0]) {
		fputs("**", f);
		md(f, m->provenance);
		fputs("**\n\n", f);
	}
	fputs("## Summary\n\n", f);
	char lines[8][128];
	size_t n = report_summary_lines(m, lines, 8);
	for (size_t i = 0; i < n; i++) {
		fputs("- ", f);
		md(f, lines[i]);
		fputc('\n', f);
	}
	fprintf(f, "\n## Modes\n\nChange is b vs a; verdicts at alpha %.3g with a minimum effect of %.3g%%. "
		   "\\* = a warm-up iteration was flagged in that group.\n",
		m->opts.alpha, 100 * m->opts.min_effect);
	table(f, m->modes, false);
	if (m->modes->ninter) {
		fprintf(f, "\n### Does the CQE change the FUA effect?\n\n| DUT | workload/metric | FUA effect "
			   "without CQE | with CQE | difference | ratio of ratios [%.3g%% CI] | p |\n"
			   "|---|---|--:|--:|--:|--:|--:|\n",
			100 * (1 - m->opts.alpha));
		for (size_t i = 0; i < m->modes->ninter; i++) {
			const struct compare_interaction *x = &m->modes->inter[i];
			const struct compare_row *w0 = &m->modes->rows[x->row_off];
			const struct compare_row *w1 = &m->modes->rows[x->row_on];
			char ctx[256], c0[24], c1[24], d[24], p[24];
			fputs("| ", f);
			md(f, report_context(ctx, sizeof ctx, w0));
			fputs(" | ", f);
			md(f, w0->workload);
			fputs("/", f);
			md(f, w0->metric);
			report_pp(d, sizeof d, x->diff);
			fprintf(f, " | %s | %s | %s |", report_pct(c0, sizeof c0, w0->cmp.change),
				report_pct(c1, sizeof c1, w1->cmp.change), d);
			if (isfinite(x->lo))
				fprintf(f, " %.4f [%.4f, %.4f] | %s |\n", x->ratio, x->lo, x->hi,
					report_p(p, sizeof p, x->p, false));
			else
				fputs(" no test | |\n", f);
		}
	}
	if (m->regress) {
		fprintf(f, "\n## Against baseline '");
		md(f, m->base.name);
		fprintf(f, "' (%zu run%s, threshold %.3g%%)\n", m->nbase_runs, m->nbase_runs == 1 ? "" : "s",
			100 * m->opts.regress_threshold);
		table(f, m->regress, true);
	}
	size_t nev = 0;
	for (size_t i = 0; i < m->res->nevents; i++)
		nev += strcmp(m->res->events[i].kind, "info") != 0;
	if (nev) {
		fprintf(f, "\n## Infrastructure events\n\n| time | kind | board | stage | message |\n|---|---|---|---|---|\n");
		for (size_t i = 0; i < m->res->nevents; i++) {
			const struct results_event *ev = &m->res->events[i];
			if (strcmp(ev->kind, "info") == 0)
				continue;
			const char *cells[] = {ev->at, ev->kind, ev->board, ev->stage, ev->message};
			for (size_t k = 0; k < 5; k++) {
				fputs("| ", f);
				md(f, cells[k]);
				fputc(' ', f);
			}
			fputs("|\n", f);
		}
	}
	return LAB_OK;
}

const struct report_renderer report_markdown = {
	.name = "markdown",
	.version = REPORT_OPS_VERSION,
	.ext = "md",
	.mime = "text/markdown",
	.render = render,
};
