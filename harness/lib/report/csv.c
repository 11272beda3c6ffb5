/* report/csv.c - one CSV row per comparison (mode pairs, then baseline); each row
 * names its source and, simulated, whether it is fitted or assumed (Provenance). */
#include "report.h"

#include <math.h>

static void num(FILE *f, double v, double scale)
{
	fputc(',', f);
	if (isfinite(v))
		fprintf(f, "%.10g", v * scale);
}

static void rows(FILE *f, const char *kind, const struct compare_result *cr)
{
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		const char *s[] = {kind, w->part_label, w->board, w->kernel, w->mode, w->workload,
				   w->metric, w->unit, w->a->label, w->b->label};
		for (size_t k = 0; k < LAB_ARRAY_SIZE(s); k++) {
			if (k)
				fputc(',', f);
			report_csv_str(f, s[k]);
		}
		fprintf(f, ",%zu", w->a->n);
		num(f, w->a->d.mean, 1);
		num(f, w->a->d.ci_half, 1);
		fprintf(f, ",%zu", w->b->n);
		num(f, w->b->d.mean, 1);
		num(f, w->b->d.ci_half, 1);
		num(f, w->cmp.change, 100);
		num(f, w->cmp.change_lo, 100);
		num(f, w->cmp.change_hi, 100);
		num(f, w->cmp.welch.p, 1);
		num(f, w->cmp.mwu.p, 1);
		fprintf(f, ",%s,%zu,%zu,", stats_verdict_name(w->cmp.verdict), w->a->nwarmup, w->b->nwarmup);
		report_csv_str(f, w->cmp.note);
		fputc(',', f);
		report_csv_str(f, w->source);
		fputc(',', f);
		report_csv_str(f, w->provenance);
		fputs("\r\n", f);
	}
}

static int render(const struct report_model *m, FILE *f, struct lab_err *e)
{
	LAB_UNUSED(e);
	fputs("kind,part,board,kernel,mode,workload,metric,unit,a,b,n_a,mean_a,ci95_a,n_b,mean_b,ci95_b,"
	      "change_pct,change_lo_pct,change_hi_pct,p_welch,p_mwu,verdict,warmup_a,warmup_b,note,source,provenance\r\n",
	      f);
	rows(f, "mode", m->modes);
	if (m->regress)
		rows(f, "baseline", m->regress);
	return LAB_OK;
}

const struct report_renderer report_csv = {
	.name = "csv",
	.version = REPORT_OPS_VERSION,
	.ext = "csv",
	.mime = "text/csv",
	.render = render,
};
