/*
 * report/html.c - one self-contained HTML file: inline CSS and inline SVG, no
 * script, no external reference.  Sections: summary, part comparison
 * overview, per DUT box/strip plots per mode with the comparison table,
 * trends over nights (per-run means, runs ordered by date), baseline
 * comparison, where the iterations ran (when any ran through LAVA),
 * infrastructure events; request latency CDFs per mode.  Every string from
 * the data is escaped; a LAVA job's URL is text, not a link.
 */
#include "health.h"
#include "report.h"
#include "mode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#define STRIP_MAX 200   /* draw individual points up to this many per mode */
#define PLOT_W 680
#define LABEL_W 170

/*
 * fprintf for the report's markup: "%.1f" through report_fmt_1f, every other
 * conversion (flags, width, precision, length, one of d i u x s c e f g) by
 * fprintf itself with its own argument.  The format attribute keeps the
 * compiler's checking of every call.
 */
static void svgf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void svgf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char spec[16], num[48];
	const char *s = fmt;
	while (*s) {
		const char *pc = strchr(s, '%');
		if (!pc) {
			fputs(s, f);
			break;
		}
		fwrite(s, 1, (size_t)(pc - s), f);
		if (pc[1] == '%') {
			fputc('%', f);
			s = pc + 2;
			continue;
		}
		if (pc[1] == 's') {
			const char *a = va_arg(ap, const char *);
			fputs(a ? a : "(null)", f); /* as glibc's printf */
			s = pc + 2;
			continue;
		}
		if (strncmp(pc, "%.1f", 4) == 0) {
			fputs(report_fmt_1f(num, sizeof num, va_arg(ap, double)), f);
			s = pc + 4;
			continue;
		}
		const char *q = pc + 1;
		q += strspn(q, "-+ #0123456789.");
		int longs = 0, size = 0;
		for (; *q == 'l' || *q == 'z'; q++) {
			if (*q == 'l')
				longs++;
			else
				size = 1;
		}
		size_t sl = (size_t)(q - pc) + 1;
		if (!*q || sl >= sizeof spec)
			abort(); /* a conversion this helper does not know: a bug at the call */
		memcpy(spec, pc, sl);
		spec[sl] = '\0';
		switch (*q) {
		case 'd':
		case 'i':
			if (size)
				fprintf(f, spec, va_arg(ap, ssize_t));
			else if (longs == 2)
				fprintf(f, spec, va_arg(ap, long long));
			else if (longs == 1)
				fprintf(f, spec, va_arg(ap, long));
			else
				fprintf(f, spec, va_arg(ap, int));
			break;
		case 'u':
		case 'x':
			if (size)
				fprintf(f, spec, va_arg(ap, size_t));
			else if (longs == 2)
				fprintf(f, spec, va_arg(ap, unsigned long long));
			else if (longs == 1)
				fprintf(f, spec, va_arg(ap, unsigned long));
			else
				fprintf(f, spec, va_arg(ap, unsigned));
			break;
		case 'c':
			fprintf(f, spec, va_arg(ap, int));
			break;
		case 's':
			fprintf(f, spec, va_arg(ap, const char *));
			break;
		case 'e':
		case 'f':
		case 'g':
			fprintf(f, spec, va_arg(ap, double));
			break;
		default:
			abort();
		}
		s = q + 1;
	}
	va_end(ap);
}

static void esc(FILE *f, const char *s)
{
	report_xml_str(f, s);
}

/* A colour per row of the mode table (a categorical palette); grey for
 * modes outside the table. */
static const char *mode_color(const char *mode)
{
	static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
					     "#8c564b", "#e377c2", "#bcbd22", "#17becf"};
	int r = lab_mode_parse(mode);
	return r >= 0 && (size_t)r < LAB_ARRAY_SIZE(colors) ? colors[r] : "#7f7f7f";
}

static const char *verdict_class(enum stats_verdict v)
{
	switch (v) {
	case VERDICT_BETTER:
		return "better";
	case VERDICT_WORSE:
		return "worse";
	case VERDICT_NO_DIFF:
		return "nodiff";
	case VERDICT_CHANGED:
		return "changed";
	case VERDICT_NO_TEST:
		break;
	}
	return "notest";
}

static double quantile(const double *sorted, size_t n, double q)
{
	if (n == 0)
		return NAN;
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double fr = pos - (double)i;
	return i + 1 < n ? sorted[i] + fr * (sorted[i + 1] - sorted[i]) : sorted[i];
}

/* Nice tick step for a range. */
static double tick_step(double range, int want)
{
	if (!(range > 0))
		return 1;
	double raw = range / want, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void axis_x(FILE *f, double lo, double hi, double x0, double x1, double y)
{
	double step = tick_step(hi - lo, 6);
	svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='ax'/>", x0, y, x1, y);
	for (double t = ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
		double x = x0 + (t - lo) / (hi - lo) * (x1 - x0);
		char b[32];
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='tk'/>"
			   "<text x='%.1f' y='%.1f' class='tl' text-anchor='middle'>%s</text>",
			x, y, x, y + 4, x, y + 15, report_num(b, sizeof b, t));
	}
}

struct series {
	const char *label;
	const double *v;
	size_t n;
	size_t nwarm;
};

/* Horizontal box plot with the points over it, one row per mode. */
static void boxplot(FILE *f, const struct series *s, size_t ns, const char *unit)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < ns; i++)
		for (size_t k = 0; k < s[i].n; k++) {
			if (!isfinite(s[i].v[k]))
				continue;
			lo = fmin(lo, s[i].v[k]);
			hi = fmax(hi, s[i].v[k]);
		}
	if (!isfinite(lo)) {
		fputs("<p class='note'>no values to plot</p>", f);
		return;
	}
	double pad = (hi - lo) * 0.08;
	if (pad == 0)
		pad = fabs(hi) * 0.01 + 1e-9;
	lo -= pad;
	hi += pad;
	const double rowh = 34, top = 8, x0 = LABEL_W, x1 = PLOT_W - 16;
	double h = top + rowh * (double)ns + 34;
	svgf(f, "<svg class='plot' width='%d' height='%.0f' viewBox='0 0 %d %.0f' role='img'>", PLOT_W,
		h, PLOT_W, h);
	for (size_t i = 0; i < ns; i++) {
		double yc = top + rowh * (double)i + rowh / 2;
		const char *col = mode_color(s[i].label);
		svgf(f, "<text x='%.1f' y='%.1f' class='ml' text-anchor='end'>", x0 - 8, yc + 4);
		esc(f, s[i].label);
		svgf(f, " (n=%zu)</text>", s[i].n);
		if (s[i].n == 0)
			continue;
		double *v = xmalloc(s[i].n * sizeof *v);
		memcpy(v, s[i].v, s[i].n * sizeof *v);
		stats_sort(v, s[i].n); /* stable like qsort: same order, no callback */
		double q1 = quantile(v, s[i].n, 0.25), q2 = quantile(v, s[i].n, 0.5),
		       q3 = quantile(v, s[i].n, 0.75), mn = v[0], mx = v[s[i].n - 1];
		double mean = 0;
		for (size_t k = 0; k < s[i].n; k++)
			mean += v[k];
		mean /= (double)s[i].n;
		free(v);
#define X(val) (x0 + ((val) - lo) / (hi - lo) * (x1 - x0))
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>", X(mn), yc, X(mx), yc, col);
		svgf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' fill-opacity='0.18' "
			   "stroke='%s'/>",
			X(q1), yc - 10, fmax(X(q3) - X(q1), 0.8), 20.0, col, col);
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2'/>", X(q2),
			yc - 10, X(q2), yc + 10, col);
		svgf(f, "<path d='M%.1f %.1fl4 4l-4 4l-4 -4z' fill='#222'><title>mean %.6g</title></path>",
			X(mean), yc - 4, mean);
		if (s[i].n <= STRIP_MAX)
			for (size_t k = 0; k < s[i].n; k++) {
				double jit = ((double)((k * 7919) % 13) - 6) * 1.1;
				svgf(f, "<circle cx='%.1f' cy='%.1f' r='2.6' fill='%s' fill-opacity='0.75'>"
					   "<title>%.6g</title></circle>",
					X(s[i].v[k]), yc + jit, col, s[i].v[k]);
			}
#undef X
	}
	axis_x(f, lo, hi, x0, x1, top + rowh * (double)ns + 4);
	svgf(f, "<text x='%.1f' y='%.1f' class='tl' text-anchor='end'>", x1, h - 2);
	esc(f, unit);
	fputs("</text></svg>\n", f);
}

/* prov: a simulated figure's provenance, "" otherwise (docs/reports.md). */
static void pct_cell_prov(FILE *f, const struct stats_cmp *c, const char *prov)
{
	char ch[24], lo[24], hi[24];
	svgf(f, "<td class='%s'>%s", verdict_class(c->verdict), report_pct(ch, sizeof ch, c->change));
	if (isfinite(c->change_lo))
		svgf(f, "<br><small>[%s, %s]</small>", report_pct(lo, sizeof lo, c->change_lo),
			report_pct(hi, sizeof hi, c->change_hi));
	if (prov[0]) {
		fputs("<br><small class='prov'>", f);
		esc(f, prov);
		fputs("</small>", f);
	}
	fputs("</td>", f);
}

static void pct_cell(FILE *f, const struct stats_cmp *c)
{
	pct_cell_prov(f, c, "");
}

static void cmp_table(FILE *f, const struct compare_row *rows, size_t n, bool with_ctx)
{
	fputs("<table class='cmp'><tr>", f);
	if (with_ctx)
		fputs("<th>DUT</th><th>mode</th>", f);
	fputs("<th>workload/metric</th><th>a</th><th>n</th><th>mean &plusmn; 95% CI</th><th>b</th><th>n</th>"
	      "<th>mean &plusmn; 95% CI</th><th>change b vs a [95% CI]</th><th>p Welch</th><th>p MWU</th>"
	      "<th>verdict</th></tr>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		const struct compare_row *w = &rows[i];
		char m[32], c[32];
		fputs("<tr>", f);
		if (with_ctx) {
			fputs("<td>", f);
			esc(f, w->part_label);
			fputs("</td><td>", f);
			esc(f, w->mode);
			fputs("</td>", f);
		}
		fputs("<td>", f);
		esc(f, w->workload);
		fputs("/", f);
		esc(f, w->metric);
		fputs(" <small>(", f);
		esc(f, w->unit);
		fputs(")</small></td>", f);
		const struct compare_side *sd[2] = {w->a, w->b};
		for (int q = 0; q < 2; q++) {
			fputs("<td>", f);
			esc(f, sd[q]->label);
			svgf(f, "</td><td>%zu%s</td><td>%s &plusmn; %s</td>", sd[q]->n,
				sd[q]->nwarmup ? (sd[q]->warmup_excluded ? "<sup title='warm-up excluded'>w-</sup>"
									 : "<sup title='warm-up flagged, kept'>w</sup>")
					       : "",
				report_num(m, sizeof m, sd[q]->d.mean), report_num(c, sizeof c, sd[q]->d.ci_half));
		}
		pct_cell(f, &w->cmp);
		char pw[32], pm[32];
		svgf(f, "<td>%s</td><td>%s</td>", report_p(pw, sizeof pw, w->cmp.welch.p, false),
			report_p(pm, sizeof pm, w->cmp.mwu.p, !w->cmp.mwu.exact));
		svgf(f, "<td class='%s'>%s", verdict_class(w->cmp.verdict), stats_verdict_name(w->cmp.verdict));
		if (w->cmp.note[0]) {
			fputs("<br><small>", f);
			esc(f, w->cmp.note);
			fputs("</small>", f);
		}
		if (w->provenance[0]) {
			fputs("<br><small class='prov'>", f);
			esc(f, w->provenance);
			fputs("</small>", f);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static bool same_ctx(const struct compare_row *a, const struct compare_row *b)
{
	return a->part == b->part && strcmp(a->part_label, b->part_label) == 0 &&
	       strcmp(a->board, b->board) == 0 && strcmp(a->kernel, b->kernel) == 0 &&
	       strcmp(a->source, b->source) == 0;
}

static bool same_metric(const struct compare_row *a, const struct compare_row *b)
{
	return same_ctx(a, b) && strcmp(a->workload, b->workload) == 0 && strcmp(a->metric, b->metric) == 0;
}

/* Overview: DUT x workload/metric, cache-nofua vs fua (and the CQE pair). */
static void overview(FILE *f, const struct compare_result *cr)
{
	const char *cols[64][2];
	size_t ncols = 0;
	/* Headline metrics only when the data has any: the overview must fit a screen. */
	bool heads = false;
	for (size_t i = 0; i < cr->nrows; i++)
		heads |= report_headline_metric(cr->rows[i].workload, cr->rows[i].metric);
	for (size_t i = 0; i < cr->nrows && ncols < LAB_ARRAY_SIZE(cols); i++) {
		const struct compare_row *w = &cr->rows[i];
		if (heads && !report_headline_metric(w->workload, w->metric))
			continue;
		bool dup = false;
		for (size_t k = 0; k < ncols; k++)
			dup |= !strcmp(cols[k][0], w->workload) && !strcmp(cols[k][1], w->metric);
		if (!dup) {
			cols[ncols][0] = w->workload;
			cols[ncols][1] = w->metric;
			ncols++;
		}
	}
	fputs("<table class='ov'><tr><th>DUT</th><th>pair</th>", f);
	for (size_t k = 0; k < ncols; k++) {
		fputs("<th>", f);
		esc(f, cols[k][0]);
		fputs("<br>", f);
		esc(f, cols[k][1]);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (size_t i = 0; i < cr->nrows;) {
		size_t j = i;
		while (j < cr->nrows && same_ctx(&cr->rows[i], &cr->rows[j]))
			j++;
		/* A line per pair of the 2x2 (compare_mode_pairs). */
		struct compare_mode_pair mp[2 * MODE_COUNT];
		size_t nmp = compare_mode_pairs(mp, LAB_ARRAY_SIZE(mp));
		for (size_t k0 = 0; k0 < nmp; k0++) {
			const char *pa = lab_mode_names[mp[k0].a], *pb = lab_mode_names[mp[k0].b];
			bool any = false;
			for (size_t q = i; q < j; q++)
				any |= !strcmp(cr->rows[q].a->label, pa) &&
				       !strcmp(cr->rows[q].b->label, pb);
			if (!any)
				continue;
			char ctx[256];
			fputs("<tr><td>", f);
			esc(f, report_context(ctx, sizeof ctx, &cr->rows[i]));
			svgf(f, "</td><td>%s vs %s</td>", pb, pa);
			for (size_t k = 0; k < ncols; k++) {
				const struct compare_row *hit = NULL;
				for (size_t q = i; q < j; q++) {
					const struct compare_row *w = &cr->rows[q];
					if (!strcmp(w->workload, cols[k][0]) && !strcmp(w->metric, cols[k][1]) &&
					    !strcmp(w->a->label, pa) && !strcmp(w->b->label, pb))
						hit = w;
				}
				if (hit)
					pct_cell_prov(f, &hit->cmp, hit->provenance);
				else
					fputs("<td class='notest'>&ndash;</td>", f);
			}
			fputs("</tr>\n", f);
		}
		i = j;
	}
	fputs("</table>\n<p class='note'>Cells: change of the mean, b vs a, with its 95% CI; "
	      "green = better, red = worse, grey = no significant difference, white = no test.",
	      f);
	if (heads)
		fputs(" Headline metrics only; every metric is in the per-DUT sections below.", f);
	fputs("</p>\n", f);
}

/* Does the CQE change the FUA effect?  One line per context with all four cells. */
static void interactions(FILE *f, const struct compare_result *cr, double alpha)
{
	if (!cr->ninter)
		return;
	svgf(f, "<h3>Does the CQE change the FUA effect?</h3>\n<table class='ov'><tr><th>DUT</th>"
		   "<th>workload<br>metric</th><th>FUA effect<br>without CQE</th><th>FUA effect<br>"
		   "with CQE</th><th>difference</th><th>ratio of ratios<br>[%.3g%% CI]</th><th>p</th></tr>\n",
		100 * (1 - alpha));
	/* Headline metrics only when the data has any, as in the overview. */
	bool heads = false;
	for (size_t i = 0; i < cr->ninter; i++)
		heads |= report_headline_metric(cr->rows[cr->inter[i].row_off].workload,
						cr->rows[cr->inter[i].row_off].metric);
	for (size_t i = 0; i < cr->ninter; i++) {
		const struct compare_interaction *x = &cr->inter[i];
		const struct compare_row *w0 = &cr->rows[x->row_off], *w1 = &cr->rows[x->row_on];
		if (heads && !report_headline_metric(w0->workload, w0->metric))
			continue;
		char ctx[256], c0[24], c1[24], d[24], p[24];
		fputs("<tr><td>", f);
		esc(f, report_context(ctx, sizeof ctx, w0));
		fputs("</td><td>", f);
		esc(f, w0->workload);
		fputs("<br>", f);
		esc(f, w0->metric);
		report_pp(d, sizeof d, x->diff);
		svgf(f, "</td><td>%s</td><td>%s</td><td>%s</td>", report_pct(c0, sizeof c0, w0->cmp.change),
			report_pct(c1, sizeof c1, w1->cmp.change), d);
		if (isfinite(x->lo))
			svgf(f, "<td>%.4f [%.4f, %.4f]</td><td>%s</td></tr>\n", x->ratio, x->lo, x->hi,
				report_p(p, sizeof p, x->p, false));
		else
			fputs("<td class='notest'>no test</td><td></td></tr>\n", f);
	}
	fputs("</table>\n<p class='note'>Ratio of ratios: (b/a with CQE) / (b/a without CQE), "
	      "a = the FUA mode, b = the same without FUA; 1 = the CQE leaves the FUA effect alone "
	      "(method: docs/reports.md).</p>\n",
	      f);
}

/* ---- trends ---- */

/* Group strings are interned: equal pointers are equal strings, no strcmp. */
static int cmp_istr(const char *a, const char *b)
{
	return a == b ? 0 : strcmp(a, b);
}

static int cmp_trend(const void *x, const void *y, void *ctx)
{
	const struct results_trend *t = ctx;
	const struct results_trend_point *a = &t->pts[*(const size_t *)x], *b = &t->pts[*(const size_t *)y];
	int c;
	if (a->part != b->part) /* parts[] is in label order */
		return a->part < b->part ? -1 : 1;
	if ((c = cmp_istr(a->workload, b->workload)) || (c = cmp_istr(a->metric, b->metric)) ||
	    (c = cmp_istr(a->unit, b->unit)))
		return c;
	if ((c = results_mode_cmp(a->mode, b->mode)))
		return c;
	return a->run < b->run ? -1 : a->run > b->run;
}

static void trend_chart(FILE *f, const struct results_trend *t, const size_t *ix, size_t n, bool exclude)
{
	/* Per mode: the mean of each run's values (boards and kernels pooled per night). */
	size_t nruns = t->nruns;
	const char *modes[8];
	size_t nm = 0;
	double *mean = xcalloc(8 * nruns, sizeof *mean);
	size_t *cnt = xcalloc(8 * nruns, sizeof *cnt);
	for (size_t i = 0; i < n; i++) {
		const struct results_trend_point *p = &t->pts[ix[i]];
		size_t m;
		for (m = 0; m < nm && strcmp(modes[m], p->mode); m++)
			;
		if (m == nm) {
			if (nm == 8)
				continue;
			modes[nm++] = p->mode;
		}
		mean[m * nruns + p->run] += exclude ? p->sum_kept : p->sum;
		cnt[m * nruns + p->run] += exclude ? p->n_kept : p->n;
	}
	double lo = INFINITY, hi = -INFINITY;
	size_t first = nruns, last = 0, points = 0;
	for (size_t m = 0; m < nm; m++)
		for (size_t u = 0; u < nruns; u++)
			if (cnt[m * nruns + u]) {
				double v = mean[m * nruns + u] /= (double)cnt[m * nruns + u];
				lo = fmin(lo, v);
				hi = fmax(hi, v);
				first = u < first ? u : first;
				last = u > last ? u : last;
				points++;
			}
	if (first >= last || !isfinite(lo)) {
		fputs("<p class='note'>one night only: no trend yet</p>\n", f);
		goto out;
	}
	double pad = (hi - lo) * 0.1;
	if (pad == 0)
		pad = fabs(hi) * 0.01 + 1e-9;
	lo -= pad;
	hi += pad;
	const double x0 = 60, x1 = PLOT_W - 16, y0 = 10, y1 = 170;
	svgf(f, "<svg class='plot' width='%d' height='215' viewBox='0 0 %d 215' role='img'>", PLOT_W, PLOT_W);
	double step = tick_step(hi - lo, 4);
	for (double tick = ceil(lo / step) * step; tick <= hi; tick += step) {
		double y = y1 - (tick - lo) / (hi - lo) * (y1 - y0);
		char b[32];
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>"
			   "<text x='%.1f' y='%.1f' class='tl' text-anchor='end'>%s</text>",
			x0, y, x1, y, x0 - 4, y + 3, report_num(b, sizeof b, tick));
	}
	svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='ax'/>", x0, y1, x1, y1);
#define TX(u) (x0 + (double)((u) - first) / (double)(last - first) * (x1 - x0))
#define TY(v) (y1 - ((v) - lo) / (hi - lo) * (y1 - y0))
	for (size_t m = 0; m < nm; m++) {
		svgf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='", mode_color(modes[m]));
		for (size_t u = first; u <= last; u++)
			if (cnt[m * nruns + u])
				svgf(f, "%.1f,%.1f ", TX(u), TY(mean[m * nruns + u]));
		fputs("'/>", f);
		if (points <= 240)
			for (size_t u = first; u <= last; u++)
				if (cnt[m * nruns + u]) {
					svgf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'><title>run %lld ",
						TX(u), TY(mean[m * nruns + u]), mode_color(modes[m]),
						(long long)t->runs[u].id);
					esc(f, t->runs[u].started_at);
					svgf(f, ": %.6g</title></circle>", mean[m * nruns + u]);
				}
		svgf(f, "<rect x='%.1f' y='196' width='10' height='10' fill='%s'/><text x='%.1f' y='205' class='tl'>",
			x0 + 130.0 * (double)m, mode_color(modes[m]), x0 + 130.0 * (double)m + 14);
		esc(f, modes[m]);
		fputs("</text>", f);
	}
#undef TX
#undef TY
	svgf(f, "<text x='%.1f' y='184' class='tl'>", x0);
	esc(f, t->runs[first].started_at);
	svgf(f, "</text><text x='%.1f' y='184' class='tl' text-anchor='end'>", x1);
	esc(f, t->runs[last].started_at);
	fputs("</text></svg>\n", f);
out:
	free(mean);
	free(cnt);
}

static void trends(FILE *f, const struct results_trend *t, bool exclude)
{
	if (!t || t->nruns < 2) {
		fputs("<p class='note'>Trends need at least two nights in the store.</p>\n", f);
		return;
	}
	if (t->nparts < t->nparts_seen)
		svgf(f, "<p class='note'>Trends of the first %zu of %zu parts (<code>--dut-detail</code>, "
			"<code>--filter part=NAME</code>).</p>\n", t->nparts, t->nparts_seen);
	size_t *ix = xmalloc((t->npts + 1) * sizeof *ix);
	for (size_t i = 0; i < t->npts; i++)
		ix[i] = i;
	qsort_r(ix, t->npts, sizeof *ix, cmp_trend, (void *)t);
	for (size_t i = 0; i < t->npts;) {
		const struct results_trend_point *p = &t->pts[ix[i]];
		size_t j = i;
		while (j < t->npts) {
			const struct results_trend_point *q = &t->pts[ix[j]];
			if (q->part != p->part || strcmp(q->workload, p->workload) ||
			    strcmp(q->metric, p->metric) || strcmp(q->unit, p->unit))
				break;
			j++;
		}
		fputs("<h4>", f);
		esc(f, t->parts[p->part].label);
		fputs(" &mdash; ", f);
		esc(f, p->workload);
		fputs("/", f);
		esc(f, p->metric);
		fputs(" <small>(", f);
		esc(f, p->unit);
		fputs(", mean per night)</small></h4>\n", f);
		trend_chart(f, t, ix + i, j - i, exclude);
		i = j;
	}
	free(ix);
}

/* ---- request latency CDFs (store_latency.h) ---- */

/* The latency under which a fraction q of the requests completed, from the
 * buckets: the upper edge of the bucket holding that rank (an upper bound). */
static double lat_quantile(const struct store_lathist *h, double q)
{
	uint64_t rank = (uint64_t)ceil(q * (double)h->n), seen = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned k = 0; k < LATHIST_BUCKETS; k++)
		if ((seen += h->counts[k]) >= rank)
			return lathist_lo_us(k + 1);
	return lathist_lo_us(LATHIST_BUCKETS);
}

/* One chart for hs[0..n) (one part, workload and source): a CDF per mode and
 * operation, writes solid and flushes dashed, on a log x axis in us. */
static void lat_chart(FILE *f, const struct store_lathist *hs, size_t n)
{
	unsigned klo = LATHIST_BUCKETS, khi = 0;
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < LATHIST_BUCKETS; k++)
			if (hs[i].counts[k]) {
				klo = k < klo ? k : klo;
				khi = k > khi ? k : khi;
			}
	if (klo > khi)
		return;
	double lo = log10(lathist_lo_us(klo)), hi = log10(lathist_lo_us(khi + 1));
	lo = floor(lo);
	hi = ceil(hi);
	if (hi <= lo)
		hi = lo + 1;
	const double x0 = 60, x1 = PLOT_W - 16, y0 = 10, y1 = 170;
	double legend_h = 16.0 * (double)((n + 2) / 3);
	fputs("<svg class='plot cdf' data-part='", f);
	esc(f, hs[0].part);
	fputs("' data-workload='", f);
	esc(f, hs[0].workload);
	fputs("' data-source='", f);
	esc(f, hs[0].source);
	svgf(f, "' width='%d' height='%.0f' viewBox='0 0 %d %.0f' role='img'>", PLOT_W, 200 + legend_h,
		PLOT_W, 200 + legend_h);
#define LX(us) (x0 + (log10(us) - lo) / (hi - lo) * (x1 - x0))
#define LY(fr) (y1 - (fr) * (y1 - y0))
	for (int t = 0; t <= 4; t++) {
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>"
			   "<text x='%.1f' y='%.1f' class='tl' text-anchor='end'>%d%%</text>",
			x0, LY(t / 4.0), x1, LY(t / 4.0), x0 - 4, LY(t / 4.0) + 3, t * 25);
	}
	svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='ax'/>", x0, y1, x1, y1);
	for (double d = lo; d <= hi + 1e-9; d++) {
		double us = pow(10, d);
		char b[32];
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='tk'/>"
			   "<text x='%.1f' y='%.1f' class='tl' text-anchor='middle'>%s</text>",
			LX(us), y1, LX(us), y1 + 4, LX(us), y1 + 15,
			us >= 1e6 ? (snprintf(b, sizeof b, "%gs", us / 1e6), b) :
			us >= 1e3 ? (snprintf(b, sizeof b, "%gms", us / 1e3), b) :
				    (snprintf(b, sizeof b, "%gus", us), b));
	}
	svgf(f, "<text x='%.1f' y='192' class='tl' text-anchor='middle'>request latency "
		   "(issue to completion, log scale); y: share of requests at or below</text>",
		(x0 + x1) / 2);
	for (size_t i = 0; i < n; i++) {
		const struct store_lathist *h = &hs[i];
		bool flush = strcmp(h->op, "flush") == 0;
		char p50[32], p99[32], p999[32];
		report_num(p50, sizeof p50, lat_quantile(h, 0.5));
		report_num(p99, sizeof p99, lat_quantile(h, 0.99));
		report_num(p999, sizeof p999, lat_quantile(h, 0.999));
		svgf(f, "<polyline class='cdf-curve' fill='none' stroke='%s' stroke-width='1.6'%s data-mode='",
			mode_color(h->mode), flush ? " stroke-dasharray='5,3'" : "");
		esc(f, h->mode);
		fputs("' data-op='", f);
		esc(f, h->op);
		svgf(f, "' data-n='%llu' data-p50-us='%s' data-p99-us='%s' data-p999-us='%s' points='",
			(unsigned long long)h->n, p50, p99, p999);
		uint64_t cum = 0;
		bool started = false;
		for (unsigned k = klo; k <= khi; k++) {
			if (!started && h->counts[k])
				svgf(f, "%.1f,%.1f ", LX(lathist_lo_us(k)), LY(0.0));
			started |= h->counts[k] != 0;
			cum += h->counts[k];
			if (started)
				svgf(f, "%.1f,%.1f ", LX(lathist_lo_us(k + 1)), LY((double)cum / (double)h->n));
		}
		fputs("'><title>", f);
		esc(f, h->mode);
		svgf(f, " %s: %llu requests, p50 &lt;= %s us, p99 &lt;= %s us, p99.9 &lt;= %s us</title></polyline>",
			h->op, (unsigned long long)h->n, p50, p99, p999);
		double lx = x0 + 205.0 * (double)(i % 3), ly = 206 + 16.0 * (double)(i / 3);
		svgf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2'%s/>"
			   "<text x='%.1f' y='%.1f' class='tl'>",
			lx, ly - 4, lx + 16, ly - 4, mode_color(h->mode), flush ? " stroke-dasharray='5,3'" : "",
			lx + 20, ly);
		esc(f, h->mode);
		svgf(f, " %s p99 %s us</text>", h->op, p99);
	}
#undef LX
#undef LY
	fputs("</svg>\n", f);
}

/* Whether histogram i starts another part's (they come grouped by part). */
static bool lat_new_part(const struct report_model *m, size_t i)
{
	return i == 0 || strcmp(m->lat[i - 1].part, m->lat[i].part) != 0;
}

static void latency(FILE *f, const struct report_model *m)
{
	fputs("<h2>Request latency</h2>\n", f);
	if (!m->nlat) {
		fputs("<p>No request latency histograms in this scope (the agent traces them with "
		      "count=1 on a kernel with the block tracepoints).</p>\n", f);
		return;
	}
	fputs("<p class='note'>Per block request, from block_rq_issue to block_rq_complete on the DUT, "
	      "all iterations pooled; solid: writes, dashed: flushes.  Percentiles per iteration are "
	      "the rq_*_lat_* samples above.</p>\n", f);
	/* the first dut_detail parts (the model may hold no more: opts.lat_parts) */
	size_t nparts = m->nlat_parts, shown = 0;
	if (nparts > m->opts.dut_detail)
		svgf(f, "<p class='note'>Charts for the first %zu of %zu parts (<code>--dut-detail</code>, "
			"<code>--filter part=NAME</code>).</p>\n", m->opts.dut_detail, nparts);
	for (size_t i = 0; i < m->nlat;) {
		size_t j = i;
		while (j < m->nlat && !strcmp(m->lat[j].part, m->lat[i].part) &&
		       !strcmp(m->lat[j].workload, m->lat[i].workload) &&
		       !strcmp(m->lat[j].source, m->lat[i].source))
			j++;
		shown += lat_new_part(m, i);
		if (shown > m->opts.dut_detail)
			break;
		fputs("<h4>", f);
		esc(f, m->lat[i].part);
		fputs(" / ", f);
		esc(f, m->lat[i].workload);
		fputs(" <small>(source: ", f);
		esc(f, m->lat[i].source);
		if (!strcmp(m->lat[i].source, "simulated"))
			fputs("; the spread is the model's assumption: assumed (no published data)", f);
		fputs(")</small></h4>\n", f);
		lat_chart(f, &m->lat[i], j - i);
		i = j;
	}
}

/*
 * Where the iterations ran (docs/lava.md): per board and LAVA worker, how
 * many iterations and the last LAVA job, shown only when any value was
 * measured through LAVA.  An iteration is one origin (results.h), counted
 * once however many metrics it gave.
 */
#define WHERE_ROWS 64

struct where_row {
	const char *board, *worker, *last; /* last: the LAVA job of the newest iteration */
	size_t last_ix;
	int n;
};

static void where_ran(FILE *f, const struct results *r)
{
	struct where_row row[WHERE_ROWS];
	size_t nrow = 0, more = 0;
	if (r->norigins < 2)
		return;
	unsigned char *seen = xcalloc(r->norigins, 1);
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct results_group *g = &r->groups[i];
		for (size_t k = 0; k < g->n; k++) {
			uint32_t ix = g->origin ? g->origin[k] : 0;
			if (!ix || ix >= r->norigins || seen[ix])
				continue;
			seen[ix] = 1;
			const struct results_origin *o = &r->origins[ix];
			const char *worker = o->worker ? o->worker : "";
			size_t j = 0;
			while (j < nrow && (strcmp(row[j].board, g->board) || strcmp(row[j].worker, worker)))
				j++;
			if (j == nrow) {
				if (nrow == WHERE_ROWS) {
					more++;
					continue;
				}
				row[nrow++] = (struct where_row){g->board, worker, NULL, 0, 0};
			}
			row[j].n++;
			if (o->job_url && (!row[j].last || ix > row[j].last_ix)) {
				row[j].last = o->job_url;
				row[j].last_ix = ix; /* origins are in load order: rowid order */
			}
		}
	}
	free(seen);
	fputs("<h2>Where it ran</h2>\n<table><tr><th>board</th><th>executor</th><th>LAVA worker</th>"
	      "<th>iterations</th><th>last LAVA job</th></tr>\n", f);
	for (size_t j = 0; j < nrow; j++) {
		fputs("<tr><td>", f);
		esc(f, row[j].board);
		fputs("</td><td>lava</td><td>", f);
		esc(f, row[j].worker);
		svgf(f, "</td><td>%d</td><td>", row[j].n);
		esc(f, row[j].last ? row[j].last : "");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n<p class='note'>Iterations not listed ran on boards the controller drove"
	      " itself (executor local).", f);
	if (more)
		svgf(f, " %zu more LAVA iterations on other boards or workers not shown.", more);
	fputs("</p>\n", f);
}

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1150px}"
	"h1{font-size:22px;margin:0 0 4px}h2{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:32px}"
	"h3{margin:22px 0 6px}h4{margin:14px 0 2px;font-size:14px}"
	".meta{color:#666}.cards{display:flex;gap:10px;flex-wrap:wrap;margin:12px 0}"
	".card{border:1px solid #ccc;border-radius:6px;padding:8px 14px;min-width:120px;background:#fafafa}"
	".card b{display:block;font-size:22px}.card.bad{background:#fde2e1;border-color:#e99}"
	".card.good{background:#e3f4e1;border-color:#9c9}"
	"table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}"
	"td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}"
	"th{background:#f0f0f0;text-align:center}td:first-child{text-align:left}"
	".better{background:#d6f0d2}.worse{background:#f8d0cd}.nodiff{background:#eee}"
	".changed{background:#fff2c2}.notest{background:#fff;color:#888}"
	".note{color:#666;font-size:12px}svg.plot{display:block;margin:4px 0 10px;background:#fff}"
	".ax{stroke:#444}.tk{stroke:#444}.grid{stroke:#e4e4e4}.tl{font-size:11px;fill:#444}"
	".ml{font-size:12px;fill:#222}.ev td{text-align:left}";

static int render(const struct report_model *m, FILE *f, struct lab_err *e)
{
	LAB_UNUSED(e);
	const struct report_summary *s = &m->sum;
	const char *title = m->opts.title ? m->opts.title : "emmclab report";
	fputs("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
	      "<meta name='viewport' content='width=device-width'><title>",
	      f);
	esc(f, title);
	fputs(": ", f);
	esc(f, m->scope);
	svgf(f, "</title><style>%s</style></head><body>\n<h1>", css);
	esc(f, title);
	fputs("</h1><div class='meta'>", f);
	esc(f, m->scope);
	svgf(f, " &middot; generated %s &middot; alpha %.3g, minimum effect %.3g%%</div>\n", m->generated_at,
		m->opts.alpha, 100 * m->opts.min_effect);
	if (m->provenance[0]) {
		fputs("<p class='provenance'><b>", f);
		esc(f, m->provenance);
		fputs("</b></p>\n", f);
	}

	fputs("<div class='cards'>", f);
	if (s->regressions < 0)
		fputs("<div class='card'><b>&ndash;</b>regressions (no baseline)</div>", f);
	else
		svgf(f, "<div class='card %s'><b>%d</b>regressions</div>", s->regressions ? "bad" : "good",
			s->regressions);
	svgf(f, "<div class='card %s'><b>%d</b>infrastructure errors</div>", s->infra_errors ? "bad" : "good",
		s->infra_errors);
	svgf(f, "<div class='card'><b>%d / %d</b>jobs ok / failed</div>", s->jobs_ok, s->jobs_failed);
	svgf(f, "<div class='card %s'><b>%d</b>mode mismatches</div>", s->mode_mismatches ? "bad" : "good",
		s->mode_mismatches);
	svgf(f, "<div class='card'><b>%zu</b>samples (%zu warm-up %s)</div></div>\n", s->samples, s->warmups,
		m->opts.exclude_warmup ? "excluded" : "kept");

	const struct compare_result *cr = m->modes;
	fputs("<h2>Part comparison</h2>\n", f);
	if (cr->nrows) {
		overview(f, cr);
		interactions(f, cr, m->opts.alpha);
	} else
		fputs("<p>No samples in this scope.</p>\n", f);

	fputs("<h2>Per DUT</h2>\n", f);
	size_t nctx = 0;
	for (size_t i = 0; i < cr->nrows; i++)
		nctx += i == 0 || !same_ctx(&cr->rows[i - 1], &cr->rows[i]);
	size_t detail = m->opts.dut_detail;
	if (nctx > detail)
		svgf(f, "<p class='note'>Box plots and tables for the first %zu of %zu DUTs; the other %zu "
			"are in the part comparison above, and listed at the end of this section. "
			"<code>emmclab report --dut-detail all</code> draws every DUT, "
			"<code>--filter board=NAME</code> one.</p>\n",
			detail, nctx, nctx - detail);
	size_t ictx = 0;
	for (size_t i = 0; i < cr->nrows;) {
		size_t j = i;
		while (j < cr->nrows && same_ctx(&cr->rows[i], &cr->rows[j]))
			j++;
		char ctx[256];
		if (ictx++ >= detail) {
			if (ictx == detail + 1)
				fputs("<p class='note'>Not drawn here:", f);
			fputs(ictx == detail + 1 ? " " : "; ", f);
			esc(f, report_context(ctx, sizeof ctx, &cr->rows[i]));
			if (j == cr->nrows)
				fputs(".</p>\n", f);
			i = j;
			continue;
		}
		fputs("<h3>", f);
		esc(f, report_context(ctx, sizeof ctx, &cr->rows[i]));
		fputs("</h3>\n", f);
		for (size_t k = i; k < j;) {
			size_t l = k;
			while (l < j && same_metric(&cr->rows[k], &cr->rows[l]))
				l++;
			const struct compare_row *w = &cr->rows[k];
			fputs("<h4>", f);
			esc(f, w->workload);
			fputs("/", f);
			esc(f, w->metric);
			fputs(" <small>(", f);
			esc(f, w->unit);
			svgf(f, ", %s)</small></h4>\n", report_direction_text(w->direction));
			struct series sr[8];
			size_t ns = 0;
			for (size_t q = k; q < l; q++) {
				const struct compare_side *sd[2] = {cr->rows[q].a, cr->rows[q].b};
				for (int z = 0; z < 2; z++) {
					bool dup = false;
					for (size_t y = 0; y < ns; y++)
						dup |= !strcmp(sr[y].label, sd[z]->label);
					if (!dup && ns < LAB_ARRAY_SIZE(sr))
						sr[ns++] = (struct series){sd[z]->label, sd[z]->v, sd[z]->n, sd[z]->nwarmup};
				}
			}
			/* modes in the fixed order */
			for (size_t a = 1; a < ns; a++)
				for (size_t b = a; b > 0 && results_mode_rank(sr[b - 1].label) >
								results_mode_rank(sr[b].label); b--) {
					struct series t = sr[b];
					sr[b] = sr[b - 1];
					sr[b - 1] = t;
				}
			boxplot(f, sr, ns, w->unit);
			cmp_table(f, &cr->rows[k], l - k, false);
			k = l;
		}
		i = j;
	}

	latency(f, m);

	fputs("<h2>Trends over nights</h2>\n", f);
	trends(f, m->trend, m->opts.exclude_warmup);

	if (m->regress) {
		fputs("<h2>Against baseline '", f);
		esc(f, m->base.name);
		svgf(f, "'</h2>\n<p class='note'>%s baseline, runs", m->base.kind);
		for (size_t i = 0; i < m->nbase_runs; i++)
			svgf(f, "%s%lld", i ? ", " : " ", (long long)m->base_runs[i]);
		svgf(f, "; regressions are significant changes for the worse beyond %.3g%%.</p>\n",
			100 * m->opts.regress_threshold);
		cmp_table(f, m->regress->rows, m->regress->nrows, true);
	}

	/* each part's wear (docs/running.md, "Part health") */
	size_t nhealth = 0;
	for (size_t i = 0; i < m->res->nparts; i++) {
		const struct store_health_sum *h = &m->res->parts[i].health;
		if (!health_part_shown(m->res, i))
			continue;
		char now[160], trend[96];
		health_now_text(h, now, sizeof now);
		health_trend_text(h, trend, sizeof trend);
		if (nhealth++ == 0)
			fputs("<h2>Part health</h2>\n<table><tr><th>part</th><th>latest (EXT_CSD life "
			      "time A/B, PRE_EOL_INFO)</th><th>trend</th><th>flag</th></tr>\n", f);
		fputs("<tr><td>", f);
		esc(f, m->res->parts[i].label);
		fputs("</td><td>", f);
		esc(f, now);
		fputs("</td><td>", f);
		esc(f, trend);
		fputs(h->flagged_jobs ? "</td><td class='worse'><b>WORN</b>: " : "</td><td>", f);
		esc(f, h->flag);
		fputs("</td></tr>\n", f);
	}
	if (nhealth)
		fputs("</table>\n", f);

	where_ran(f, m->res);

	fputs("<h2>Infrastructure events</h2>\n", f);
	const struct results *r = m->res;
	if (!r->nevents) {
		fputs("<p>None.</p>\n", f);
	} else {
		fputs("<table class='ev'><tr><th>time</th><th>run</th><th>kind</th><th>board</th><th>stage</th>"
		      "<th>message</th></tr>\n",
		      f);
		for (size_t i = 0; i < r->nevents; i++) {
			const struct results_event *ev = &r->events[i];
			fputs("<tr><td>", f);
			esc(f, ev->at);
			svgf(f, "</td><td>%lld</td><td>", (long long)ev->run_id);
			esc(f, ev->kind);
			fputs("</td><td>", f);
			esc(f, ev->board);
			fputs("</td><td>", f);
			esc(f, ev->stage);
			fputs("</td><td>", f);
			esc(f, ev->message);
			fputs("</td></tr>\n", f);
		}
		fputs("</table>\n", f);
		if (r->nevents_dropped)
			svgf(f, "<p class='note'>%zu more events not shown.</p>\n", r->nevents_dropped);
	}
	fputs("<p class='note'>Change CIs: delta method with Welch&ndash;Satterthwaite degrees of freedom. "
	      "p MWU: exact for n &le; 20 per side, ~ = normal approximation. "
	      "Boxes: quartiles, whiskers min&ndash;max, &#9670; mean.</p>\n</body></html>\n",
	      f);
	return LAB_OK;
}

const struct report_renderer report_html = {
	.name = "html",
	.version = REPORT_OPS_VERSION,
	.ext = "html",
	.mime = "text/html",
	.render = render,
};
