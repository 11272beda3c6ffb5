/*
 * report/json.c - the versioned machine format ("schema": "emmclab-report/1"):
 * summary, runs, groups (with values, warm-up flags and where each value
 * was measured), comparisons, baseline comparisons and events.  Numbers
 * that do not exist are null.
 */
#include "health.h"
#include "json.h"
#include "report.h"

#include <string.h>

static void kv_str(FILE *f, const char *k, const char *v, bool comma)
{
	json_put_str(f, k);
	fputc(':', f);
	json_put_str(f, v);
	if (comma)
		fputc(',', f);
}

static void kv_num(FILE *f, const char *k, double v, bool comma)
{
	json_put_str(f, k);
	fputc(':', f);
	json_put_num(f, v);
	if (comma)
		fputc(',', f);
}

static void desc(FILE *f, const struct stats_desc *d)
{
	fprintf(f, "{\"n\":%zu,", d->n);
	kv_num(f, "mean", d->mean, true);
	kv_num(f, "sd", d->sd, true);
	kv_num(f, "median", d->median, true);
	kv_num(f, "min", d->min, true);
	kv_num(f, "max", d->max, true);
	kv_num(f, "cv", d->cv, true);
	kv_num(f, "ci95_lo", d->ci_lo, true);
	kv_num(f, "ci95_hi", d->ci_hi, false);
	fputc('}', f);
}

static void side(FILE *f, const char *k, const struct compare_side *s)
{
	json_put_str(f, k);
	fputs(":{", f);
	kv_str(f, "label", s->label, true);
	fprintf(f, "\"warmups\":%zu,\"warmup_excluded\":%s,\"stats\":", s->nwarmup,
		s->warmup_excluded ? "true" : "false");
	desc(f, &s->d);
	fputc('}', f);
}

void report_json_comparisons(FILE *f, const struct compare_result *cr)
{
	fputc('[', f);
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		fputs(i ? ",\n{" : "\n{", f);
		kv_str(f, "part", w->part_label, true);
		kv_str(f, "board", w->board, true);
		kv_str(f, "kernel", w->kernel, true);
		kv_str(f, "mode", w->mode, true);
		kv_str(f, "workload", w->workload, true);
		kv_str(f, "metric", w->metric, true);
		kv_str(f, "unit", w->unit, true);
		fprintf(f, "\"direction\":%d,", w->direction);
		side(f, "a", w->a);
		fputc(',', f);
		side(f, "b", w->b);
		fputc(',', f);
		kv_num(f, "change", w->cmp.change, true);
		kv_num(f, "change_ci95_lo", w->cmp.change_lo, true);
		kv_num(f, "change_ci95_hi", w->cmp.change_hi, true);
		kv_num(f, "welch_t", w->cmp.welch.t, true);
		kv_num(f, "welch_df", w->cmp.welch.df, true);
		kv_num(f, "p_welch", w->cmp.welch.p, true);
		kv_num(f, "mwu_u", w->cmp.mwu.u, true);
		kv_num(f, "p_mwu", w->cmp.mwu.p, true);
		fprintf(f, "\"mwu_exact\":%s,", w->cmp.mwu.exact ? "true" : "false");
		kv_str(f, "verdict", stats_verdict_name(w->cmp.verdict), true);
		kv_str(f, "note", w->cmp.note, true);
		kv_str(f, "source", w->source, true);
		kv_str(f, "provenance", w->provenance, false);
		fputc('}', f);
	}
	fputs("]", f);
}

void report_json_interactions(FILE *f, const struct compare_result *cr)
{
	fputc('[', f);
	for (size_t i = 0; i < cr->ninter; i++) {
		const struct compare_interaction *x = &cr->inter[i];
		const struct compare_row *w0 = &cr->rows[x->row_off], *w1 = &cr->rows[x->row_on];
		fputs(i ? ",\n{" : "\n{", f);
		kv_str(f, "part", w0->part_label, true);
		kv_str(f, "board", w0->board, true);
		kv_str(f, "kernel", w0->kernel, true);
		kv_str(f, "workload", w0->workload, true);
		kv_str(f, "metric", w0->metric, true);
		kv_str(f, "a_without_cqe", w0->a->label, true);
		kv_str(f, "b_without_cqe", w0->b->label, true);
		kv_str(f, "a_with_cqe", w1->a->label, true);
		kv_str(f, "b_with_cqe", w1->b->label, true);
		kv_num(f, "change_without_cqe", w0->cmp.change, true);
		kv_num(f, "change_with_cqe", w1->cmp.change, true);
		kv_num(f, "diff", x->diff, true);
		kv_num(f, "ratio", x->ratio, true);
		kv_num(f, "ratio_ci_lo", x->lo, true);
		kv_num(f, "ratio_ci_hi", x->hi, true);
		kv_num(f, "df", x->df, true);
		kv_num(f, "p", x->p, false);
		fputc('}', f);
	}
	fputs("]", f);
}

/* Where each value was measured, parallel to "iterations" (docs/lava.md):
 * "executor" local or lava, the LAVA "job_url" and "worker" (null locally). */
static void where(FILE *f, const struct results *r, const struct results_group *g)
{
	static const char *const key[] = {"executor", "job_url", "worker"};
	for (size_t x = 0; x < LAB_ARRAY_SIZE(key); x++) {
		fprintf(f, "%s\"%s\":[", x ? "," : "", key[x]);
		for (size_t k = 0; k < g->n; k++) {
			const struct results_origin *o = results_value_origin(r, g, k);
			const char *v = x == 0 ? o->executor : x == 1 ? o->job_url : o->worker;
			if (k)
				fputc(',', f);
			if (v)
				json_put_str(f, v);
			else
				fputs("null", f);
		}
		fputc(']', f);
	}
}

static int render(const struct report_model *m, FILE *f, struct lab_err *e)
{
	LAB_UNUSED(e);
	const struct results *r = m->res;
	const struct report_summary *s = &m->sum;
	fputs("{\"schema\":\"emmclab-report/1\",", f);
	kv_str(f, "generator", "emmclab " EMMCLAB_VERSION, true);
	kv_str(f, "generated_at", m->generated_at, true);
	kv_str(f, "scope", m->scope, true);
	kv_str(f, "provenance", m->provenance, true);
	fputs("\"run_id\":", f);
	if (m->run_id)
		fprintf(f, "%lld,", (long long)m->run_id);
	else
		fputs("null,", f);
	fputs("\"summary\":{\"regressions\":", f);
	if (s->regressions < 0)
		fputs("null", f);
	else
		fprintf(f, "%d", s->regressions);
	fprintf(f, ",\"improvements\":%d,\"infra_errors\":%d,\"jobs_total\":%d,\"jobs_ok\":%d,"
		   "\"jobs_failed\":%d,\"mode_mismatches\":%d,\"samples\":%zu,\"warmups\":%zu,"
		   "\"warmups_excluded\":%s},\n",
		s->improvements, s->infra_errors, s->jobs_total, s->jobs_ok, s->jobs_failed,
		s->mode_mismatches, s->samples, s->warmups, m->opts.exclude_warmup ? "true" : "false");
	fprintf(f, "\"settings\":{\"alpha\":%.6g,\"min_effect\":%.6g,\"regress_threshold\":%.6g,"
		   "\"ci\":0.95,\"change_ci\":\"delta method, Welch-Satterthwaite df\"},\n",
		m->opts.alpha, m->opts.min_effect, m->opts.regress_threshold);
	fputs("\"runs\":[", f);
	for (size_t i = 0; i < r->nruns; i++) {
		const struct results_run *u = &r->runs[i];
		fprintf(f, "%s{\"id\":%lld,", i ? ",\n" : "\n", (long long)u->id);
		kv_str(f, "uuid", u->uuid, true);
		kv_str(f, "plan", u->plan, true);
		kv_str(f, "source", u->source, true);
		kv_str(f, "source_kind", u->kind, true);
		kv_str(f, "started_at", u->started_at, true);
		kv_str(f, "finished_at", u->finished_at, true);
		kv_str(f, "status", u->status, true);
		fprintf(f, "\"jobs\":{\"total\":%d,\"ok\":%d,\"infra\":%d,\"mode_mismatch\":%d,\"skipped\":%d},"
			   "\"infra_events\":%d,\"samples\":%zu}",
			u->jobs_total, u->jobs_ok, u->jobs_infra, u->jobs_mismatch, u->jobs_skipped,
			u->events_infra, u->nsamples);
	}
	fputs("],\n\"groups\":[", f);
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct results_group *g = &r->groups[i];
		fprintf(f, "%s{\"run_id\":%lld,", i ? ",\n" : "\n", (long long)r->runs[g->run].id);
		kv_str(f, "part", r->parts[g->part].label, true);
		kv_str(f, "part_cid", r->parts[g->part].cid, true);
		kv_str(f, "board", g->board, true);
		kv_str(f, "kernel", g->kernel, true);
		kv_str(f, "mode", g->mode, true);
		kv_str(f, "suite", g->suite, true);
		kv_str(f, "workload", g->workload, true);
		kv_str(f, "metric", g->metric, true);
		kv_str(f, "unit", g->unit, true);
		kv_str(f, "source", r->runs[g->run].kind, true);
		kv_str(f, "provenance",
		       results_provenance(r, r->runs[g->run].kind, g->part, g->workload, g->mode, g->metric),
		       true);
		struct stats_desc d;
		stats_describe(g->v, g->n, 0.95, &d);
		fputs("\"stats\":", f);
		desc(f, &d);
		fputs(",\"values\":[", f);
		for (size_t k = 0; k < g->n; k++) {
			if (k)
				fputc(',', f);
			json_put_num(f, g->v[k]);
		}
		fputs("],\"iterations\":[", f);
		for (size_t k = 0; k < g->n; k++)
			fprintf(f, "%s%d", k ? "," : "", g->iter[k]);
		fputs("],\"warmup\":[", f);
		for (size_t k = 0; k < g->n; k++)
			fprintf(f, "%s%s", k ? "," : "", g->warm[k] ? "true" : "false");
		fputs("],", f);
		kv_num(f, "warmup_deviation", g->warmup_dev, true);
		where(f, r, g);
		fputc('}', f);
	}
	fputs("],\n\"comparisons\":", f);
	report_json_comparisons(f, m->modes);
	fputs(",\n\"interactions\":", f);
	report_json_interactions(f, m->modes);
	fputs(",\n\"baseline\":", f);
	if (m->regress) {
		fputs("{", f);
		kv_str(f, "name", m->base.name, true);
		kv_str(f, "kind", m->base.kind, true);
		fputs("\"runs\":[", f);
		for (size_t i = 0; i < m->nbase_runs; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)m->base_runs[i]);
		fprintf(f, "],\"threshold\":%.6g,\"comparisons\":", m->opts.regress_threshold);
		report_json_comparisons(f, m->regress);
		fputs("}", f);
	} else {
		fputs("null", f);
	}
	/* each part's wear (docs/running.md, "Part health"); null: not read */
	fputs(",\n\"part_health\":[", f);
	for (size_t i = 0, n = 0; i < r->nparts; i++) {
		const struct store_health_sum *h = &r->parts[i].health;
		if (!health_part_shown(r, i))
			continue;
		fputs(n++ ? ",\n{" : "\n{", f);
		kv_str(f, "part", r->parts[i].label, true);
		kv_str(f, "part_cid", r->parts[i].cid, true);
		const int v[] = {h->last_a, h->last_b, h->last_eol, h->first_a, h->first_b, h->first_eol};
		static const char *const k[] = {"life_a", "life_b", "pre_eol", "first_life_a",
						"first_life_b", "first_pre_eol"};
		for (size_t x = 0; x < 6; x++) {
			json_put_str(f, k[x]);
			if (v[x] < 0)
				fputs(":null,", f);
			else
				fprintf(f, ":%d,", v[x]);
		}
		kv_str(f, "at", h->last_at, true);
		kv_str(f, "first_at", h->first_at, true);
		kv_str(f, "src", h->last_src, true);
		fprintf(f, "\"readings\":%d,\"flagged_jobs\":%d,\"worn\":%s,", h->n, h->flagged_jobs,
			h->flagged_jobs ? "true" : "false");
		kv_str(f, "flag", h->flag, false);
		fputc('}', f);
	}
	fputs("]", f);
	/* request latency histograms (store_latency.h): non-empty lathist buckets */
	fputs(",\n\"latency_histograms\":[", f);
	for (size_t i = 0; i < m->nlat; i++) {
		const struct store_lathist *h = &m->lat[i];
		fputs(i ? ",\n{" : "\n{", f);
		kv_str(f, "source", h->source, true);
		kv_str(f, "part", h->part, true);
		kv_str(f, "workload", h->workload, true);
		kv_str(f, "mode", h->mode, true);
		kv_str(f, "op", h->op, true);
		fprintf(f, "\"unit\":\"us\",\"n\":%llu,\"buckets\":[", (unsigned long long)h->n);
		bool first = true;
		for (unsigned k = 0; k < LATHIST_BUCKETS; k++)
			if (h->counts[k]) {
				fprintf(f, "%s{\"lo\":%.6g,\"hi\":%.6g,\"count\":%llu}", first ? "" : ",",
					lathist_lo_us(k), lathist_lo_us(k + 1), (unsigned long long)h->counts[k]);
				first = false;
			}
		fputs("]}", f);
	}
	fputs("]", f);
	fputs(",\n\"events\":[", f);
	for (size_t i = 0; i < r->nevents; i++) {
		const struct results_event *ev = &r->events[i];
		fprintf(f, "%s{\"run_id\":%lld,", i ? ",\n" : "\n", (long long)ev->run_id);
		kv_str(f, "at", ev->at, true);
		kv_str(f, "kind", ev->kind, true);
		kv_str(f, "stage", ev->stage, true);
		kv_str(f, "board", ev->board, true);
		kv_str(f, "message", ev->message, false);
		fputc('}', f);
	}
	fprintf(f, "],\"events_dropped\":%zu}\n", r->nevents_dropped);
	return LAB_OK;
}

const struct report_renderer report_json = {
	.name = "json",
	.version = REPORT_OPS_VERSION,
	.ext = "json",
	.mime = "application/json",
	.render = render,
};
