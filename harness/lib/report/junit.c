/*
 * report/junit.c - JUnit XML for CI dashboards.  Every comparison is a
 * testcase; a significant regression against the baseline is a <failure>;
 * every infrastructure event of the run is an <error> testcase.  Mode
 * comparisons are informational (they pass) unless a side had no data, which
 * is reported as <skipped>.  Figures that are not lab measurements say so
 * (a "provenance" property and the source in each message).
 */
#include "report.h"

#include <math.h>
#include <string.h>

static void attr(FILE *f, const char *k, const char *v)
{
	fprintf(f, " %s=\"", k);
	report_xml_str(f, v);
	fputc('"', f);
}

static void cases(FILE *f, const char *suite, const struct compare_result *cr, bool regress)
{
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		char cls[512], name[512], ch[24], lo[24], hi[24], msg[640];
		snprintf(cls, sizeof cls, "emmclab.%s.%s%s%s", suite, w->part_label[0] ? w->part_label : "all",
			 w->mode[0] ? "." : "", w->mode);
		snprintf(name, sizeof name, "%s/%s %s vs %s", w->workload, w->metric, w->b->label, w->a->label);
		snprintf(msg, sizeof msg, "%s %s [%s, %s] p(Welch)=%.3g p(MWU)=%.3g n=%zu/%zu %s%s%s",
			 stats_verdict_name(w->cmp.verdict), report_pct(ch, sizeof ch, w->cmp.change),
			 report_pct(lo, sizeof lo, w->cmp.change_lo), report_pct(hi, sizeof hi, w->cmp.change_hi),
			 w->cmp.welch.p, w->cmp.mwu.p, w->a->n, w->b->n, w->unit, w->cmp.note[0] ? "; " : "",
			 w->cmp.note);
		if (w->source[0] && strcmp(w->source, "lab") != 0) { /* provenance */
			size_t len = strlen(msg);
			snprintf(msg + len, sizeof msg - len, " [%s%s%s]", w->source,
				 w->provenance[0] ? ": " : "", w->provenance);
		}
		fputs("    <testcase", f);
		attr(f, "classname", cls);
		attr(f, "name", name);
		fputs(" time=\"0\">\n", f);
		if (regress && w->cmp.verdict == VERDICT_WORSE) {
			fputs("      <failure type=\"regression\"", f);
			attr(f, "message", msg);
			fputs("/>\n", f);
		} else if (w->a->n == 0 || w->b->n == 0) {
			fputs("      <skipped", f);
			attr(f, "message", msg);
			fputs("/>\n", f);
		}
		fputs("      <system-out>", f);
		report_xml_str(f, msg);
		fputs("</system-out>\n    </testcase>\n", f);
	}
}

static int render(const struct report_model *m, FILE *f, struct lab_err *e)
{
	LAB_UNUSED(e);
	const struct results *r = m->res;
	size_t nev = 0, nskip_m = 0, nskip_r = 0;
	for (size_t i = 0; i < r->nevents; i++)
		nev += strcmp(r->events[i].kind, "info") != 0;
	for (size_t i = 0; i < m->modes->nrows; i++)
		nskip_m += m->modes->rows[i].a->n == 0 || m->modes->rows[i].b->n == 0;
	size_t nreg = m->regress ? m->regress->nrows : 0, nfail = m->regress ? m->regress->nworse : 0;
	if (m->regress)
		for (size_t i = 0; i < m->regress->nrows; i++)
			nskip_r += (m->regress->rows[i].a->n == 0 || m->regress->rows[i].b->n == 0) &&
				   m->regress->rows[i].cmp.verdict != VERDICT_WORSE;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
	attr(f, "name", m->scope);
	fprintf(f, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
		m->modes->nrows + nreg + nev, nfail, nev, nskip_m + nskip_r);
	fprintf(f, "  <testsuite name=\"modes\" tests=\"%zu\" failures=\"0\" errors=\"0\" skipped=\"%zu\"",
		m->modes->nrows, nskip_m);
	attr(f, "timestamp", m->generated_at);
	fputs(">\n", f);
	if (m->provenance[0]) {
		fputs("    <properties><property name=\"provenance\"", f);
		attr(f, "value", m->provenance);
		fputs("/></properties>\n", f);
	}
	cases(f, "modes", m->modes, false);
	fputs("  </testsuite>\n", f);
	if (m->regress) {
		fprintf(f, "  <testsuite tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\"", nreg,
			nfail, nskip_r);
		char nm[128];
		snprintf(nm, sizeof nm, "baseline %s", m->base.name);
		attr(f, "name", nm);
		fputs(">\n", f);
		cases(f, "baseline", m->regress, true);
		fputs("  </testsuite>\n", f);
	}
	fprintf(f, "  <testsuite name=\"infrastructure\" tests=\"%zu\" failures=\"0\" errors=\"%zu\">\n", nev, nev);
	size_t k = 0;
	for (size_t i = 0; i < r->nevents; i++) {
		const struct results_event *ev = &r->events[i];
		if (strcmp(ev->kind, "info") == 0)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%zu %s %s %s", ++k, ev->board, ev->kind, ev->at);
		fputs("    <testcase classname=\"emmclab.infrastructure\"", f);
		attr(f, "name", name);
		fputs(" time=\"0\">\n      <error", f);
		attr(f, "type", ev->kind);
		attr(f, "message", ev->message);
		fputs(">", f);
		report_xml_str(f, ev->stage);
		fputs("</error>\n    </testcase>\n", f);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return LAB_OK;
}

const struct report_renderer report_junit = {
	.name = "junit",
	.version = REPORT_OPS_VERSION,
	.ext = "xml",
	.mime = "application/xml",
	.render = render,
};
