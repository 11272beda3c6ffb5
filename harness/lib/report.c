/*
 * report.c - the report model, the renderer table and shared formatting.
 */
#include "report.h"
#include "csv.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The report renderers (report/<format>.c, each exporting report_<format>): one row
 * each.  A new one is its file, one row here and its line in harness/CMakeLists.txt. */
#define REPORT_RENDERERS(X)                                                                        \
	X(report_text)                                                                             \
	X(report_markdown)                                                                         \
	X(report_html)                                                                             \
	X(report_json)                                                                             \
	X(report_csv)                                                                              \
	X(report_junit)
#define X(d) extern const struct report_renderer d;
REPORT_RENDERERS(X)
#undef X

const struct report_renderer *const report_renderers[] = {
#define X(d) &d,
	REPORT_RENDERERS(X)
#undef X
	NULL,
};

int report_ops_check(const struct report_renderer *r, struct lab_err *e)
{
	if (!r->name || !r->name[0])
		return LAB_ERR(e, LAB_EINFRA, "report renderer without a name");
	if (r->version != REPORT_OPS_VERSION)
		return LAB_ERR(e, LAB_EINFRA, "report renderer '%s': ops version %d, expected %d",
			       r->name, r->version, REPORT_OPS_VERSION);
	if (!r->ext || !r->ext[0] || !r->mime || !r->mime[0])
		return LAB_ERR(e, LAB_EINFRA, "report renderer '%s': no file extension or MIME type",
			       r->name);
	if (!r->render)
		return LAB_ERR(e, LAB_EINFRA, "report renderer '%s': no render hook", r->name);
	return LAB_OK;
}

int report_registry_check(struct lab_err *e)
{
	for (size_t i = 0; report_renderers[i]; i++) {
		int rc = report_ops_check(report_renderers[i], e);
		if (rc)
			return rc;
	}
	return LAB_OK;
}

const struct report_renderer *report_renderer_find(const char *name)
{
	for (size_t i = 0; report_renderers[i]; i++)
		if (strcmp(report_renderers[i]->name, name) == 0)
			return report_renderers[i];
	return NULL;
}

static int bad_format(const char *format, struct lab_err *e)
{
	char names[128] = "";
	for (size_t i = 0; report_renderers[i]; i++) {
		if (i)
			lab_strlcat(names, "|", sizeof names);
		lab_strlcat(names, report_renderers[i]->name, sizeof names);
	}
	return LAB_ERR(e, LAB_EUSAGE, "unknown report format '%s' (one of %s)", format, names);
}

int report_render(const struct report_model *m, const char *format, FILE *f, struct lab_err *e)
{
	const struct report_renderer *r = report_renderer_find(format);
	if (!r)
		return bad_format(format, e);
	int rc = r->render(m, f, e);
	if (!rc && (fflush(f) != 0 || ferror(f)))
		return LAB_ERR(e, LAB_EINFRA, "writing the %s report failed", format);
	return rc;
}

void report_opts_init(struct report_opts *o)
{
	memset(o, 0, sizeof *o);
	o->alpha = 0.05;
	o->min_effect = 0.01;
	o->regress_threshold = REGRESS_DEFAULT_THRESHOLD;
	o->trend_runs = 90;
	o->dut_detail = REPORT_DUT_DETAIL;
}

void report_opts_for_format(struct report_opts *o, const char *format)
{
	/* the HTML draws the latency charts of the first dut_detail parts only */
	if (strcmp(format, "html") == 0)
		o->lat_parts = o->dut_detail;
}

static void summarize(struct report_model *m)
{
	struct report_summary *s = &m->sum;
	const struct results *r = m->res;
	memset(s, 0, sizeof *s);
	s->regressions = -1;
	for (size_t i = 0; i < r->nruns; i++) {
		const struct results_run *u = &r->runs[i];
		s->jobs_total += u->jobs_total;
		s->jobs_ok += u->jobs_ok;
		s->jobs_failed += u->jobs_infra + u->jobs_mismatch;
		s->mode_mismatches += u->jobs_mismatch > u->events_mismatch ? u->jobs_mismatch
									    : u->events_mismatch;
		s->infra_errors += u->events_infra;
	}
	s->samples = r->nsamples;
	for (size_t i = 0; i < r->ngroups; i++)
		for (size_t k = 0; k < r->groups[i].n; k++)
			s->warmups += r->groups[i].warm[k];
	if (m->regress) {
		s->regressions = (int)m->regress->nworse;
		s->improvements = (int)m->regress->nbetter;
	}
}

/* Count the parts with histograms (they come grouped by part); keep those
 * of the first keep parts only (0: all). */
static void lat_keep_parts(struct report_model *m, size_t keep)
{
	size_t cut = m->nlat;
	m->nlat_parts = 0;
	for (size_t i = 0; i < m->nlat; i++)
		if (i == 0 || strcmp(m->lat[i - 1].part, m->lat[i].part) != 0)
			if (++m->nlat_parts == keep + 1 && keep)
				cut = i;
	store_lathist_truncate(&m->lat, &m->nlat, cut);
}

/* The latency histograms, read on a thread of their own with their own
 * read-only connection while the caller's loads the samples and the trends
 * (each about a third of a 1,024-board night's report). */
struct lat_load {
	char *path;
	int64_t run_id;
	const struct results_filter *filter;
	bool exclude_warmup;
	struct store_lathist *lat;
	size_t nlat;
	int rc;
	struct lab_err e;
	pthread_t th;
	bool started;
};

static void *lat_load_main(void *arg)
{
	struct lat_load *L = arg;
	struct store *rs;
	L->rc = store_open(L->path, STORE_READONLY, &rs, &L->e);
	if (L->rc == LAB_OK) {
		L->rc = store_lathist_load(rs, L->run_id, L->filter, L->exclude_warmup, &L->lat,
					   &L->nlat, &L->e);
		store_close(rs);
	}
	return NULL;
}

static void lat_load_start(struct lat_load *L, struct store *s, const struct report_opts *o,
			   int64_t run_id)
{
	const char *p = store_path(s);
	memset(L, 0, sizeof *L);
	/* a memory database is the caller's connection's alone */
	if (!p || strcmp(p, ":memory:") == 0 || strncmp(p, "file:", 5) == 0)
		return;
	L->path = xstrdup(p);
	L->run_id = run_id;
	L->filter = &o->filter;
	L->exclude_warmup = o->exclude_warmup;
	L->started = lab_thread_start(&L->th, lat_load_main, L) == 0;
}

/* Join the thread (or load here when there was none); its result into m. */
static int lat_load_finish(struct lat_load *L, struct store *s, struct report_model *m,
			   const struct report_opts *o, struct lab_err *e)
{
	int rc;
	if (L->started) {
		pthread_join(L->th, NULL);
		L->started = false;
		m->lat = L->lat;
		m->nlat = L->nlat;
		rc = L->rc;
		if (rc)
			*e = L->e;
	} else {
		rc = store_lathist_load(s, m->run_id, &o->filter, o->exclude_warmup, &m->lat, &m->nlat,
					e);
	}
	free(L->path);
	L->path = NULL;
	return rc;
}

int report_build(struct store *s, const struct report_opts *o, struct report_model **out,
		 struct lab_err *e)
{
	struct lat_load L = {0};
	struct report_model *m = xcalloc(1, sizeof *m);
	int rc;
	if (o)
		m->opts = *o;
	else
		report_opts_init(&m->opts);
	o = &m->opts;
	lab_utc_iso(m->generated_at, sizeof m->generated_at, (int64_t)time(NULL));

	struct results_filter f = o->filter;
	f.run_ids = NULL;
	f.nrun_ids = 0;
	f.upto_run = 0;
	f.last_runs = 0;
	f.run_id = 0;
	if (!o->all) {
		m->run_id = o->run_id;
		if (!m->run_id && (rc = results_latest_run(s, &m->run_id, e)))
			goto fail;
		if (!m->run_id) {
			rc = LAB_ERR(e, LAB_EUSAGE, "the results database holds no run yet");
			goto fail;
		}
		f.run_id = m->run_id;
	}
	if (!o->modes_only)
		lat_load_start(&L, s, o, m->run_id);
	if ((rc = results_load(s, &f, &m->res, e)))
		goto fail;
	if (m->run_id) {
		const struct results_run *u = results_run_by_id(m->res, m->run_id);
		snprintf(m->scope, sizeof m->scope, "run %lld (%s%s%s, %s)", (long long)m->run_id,
			 u->started_at, u->plan[0] ? ", plan " : "", u->plan, u->source);
	}
	if (m->run_id && !o->modes_only) {
		const struct results_run *u = results_run_by_id(m->res, m->run_id);
		/* Trends: this night and the ones before it. */
		struct results_filter hf = o->filter;
		hf.run_id = 0;
		hf.run_ids = NULL;
		hf.nrun_ids = 0;
		hf.upto_run = m->run_id;
		hf.last_runs = o->trend_runs ? o->trend_runs : 90;
		hf.source = u->source;
		if ((rc = results_trend_load(s, &hf, m->res, o->dut_detail, &m->trend, e)))
			goto fail;
	} else if (!m->run_id) {
		snprintf(m->scope, sizeof m->scope, "all runs (%zu)", m->res->nruns);
	}
	if (!m->trend && !o->modes_only)
		m->trend = results_trend_of(m->res, o->dut_detail);
	/* The latency histograms before the comparison is built: those past the
	 * first lat_parts parts go again before the comparison's peak (11 MB at
	 * 1,024 boards). */
	if (!o->modes_only && (rc = lat_load_finish(&L, s, m, o, e)))
		goto fail;
	lat_keep_parts(m, o->lat_parts);
	struct compare_opts co;
	compare_opts_init(&co);
	co.alpha = o->alpha;
	co.min_effect = o->min_effect;
	co.exclude_warmup = o->exclude_warmup;
	if ((rc = compare_build(m->res, &co, &m->modes, e)))
		goto fail;
	if (o->baseline) {
		if (!m->run_id) {
			rc = LAB_ERR(e, LAB_EUSAGE, "--baseline needs one run (--run ID), not --all");
			goto fail;
		}
		struct regress_opts ro;
		regress_opts_init(&ro);
		ro.alpha = o->alpha;
		ro.threshold = o->regress_threshold;
		ro.exclude_warmup = o->exclude_warmup;
		if ((rc = baseline_get(s, o->baseline, &m->base, e)) ||
		    (rc = regress_build(s, m->run_id, o->baseline, &ro, &m->rres, &m->regress,
					&m->base_runs, &m->nbase_runs, e)))
			goto fail;
	}
	results_source_banner(m->res, m->provenance, sizeof m->provenance);
	summarize(m);
	*out = m;
	return LAB_OK;
fail:
	if (L.started) { /* a failure before its result was taken: wait, then drop it */
		struct lab_err le = {0};
		struct report_model tmp = {0};
		lat_load_finish(&L, s, &tmp, o, &le);
		store_lathist_free(tmp.lat, tmp.nlat);
	}
	free(L.path);
	report_free(m);
	return rc;
}

void report_free(struct report_model *m)
{
	if (!m)
		return;
	compare_free(m->regress);
	compare_free(m->modes);
	results_free(m->rres);
	results_trend_free(m->trend);
	results_free(m->res);
	free(m->base_runs);
	store_lathist_free(m->lat, m->nlat);
	free(m);
}

int report_render_file(const struct report_model *m, const char *format, const char *path,
		       struct lab_err *e)
{
	/* streamed to the temporary file: a 1024-board report is 170 MB of HTML,
	 * which a memory stream held twice over while it grew */
	struct lab_atomic a;
	int rc = lab_atomic_open(&a, path, e);
	if (rc)
		return rc;
	rc = report_render(m, format, a.f, e);
	if (rc)
		lab_atomic_abort(&a);
	else
		rc = lab_atomic_commit(&a, e);
	return rc;
}

int report_write_model(struct report_model *m, const char *format, const char *path,
		       struct lab_err *e)
{
	if (!report_renderer_find(format))
		return bad_format(format, e);
	/* The nightly report usually lands in a directory nobody created yet. */
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		lab_mkdir_p(dir, 0755);
	}
	free(dir);
	return report_render_file(m, format, path, e);
}

int report_write_file(struct store *s, int64_t run_id, const char *format, const char *path,
		      struct report_opts *o, struct lab_err *e)
{
	if (!report_renderer_find(format))
		return bad_format(format, e);
	struct report_opts def;
	if (!o) {
		report_opts_init(&def);
		o = &def;
	}
	struct report_opts oo = *o;
	oo.run_id = run_id;
	if (run_id)
		oo.all = false;
	report_opts_for_format(&oo, format);
	struct report_model *m;
	int rc = report_build(s, &oo, &m, e);
	if (rc)
		return rc;
	rc = report_write_model(m, format, path, e);
	report_free(m);
	return rc;
}

/* The metrics a reader looks at first (end-of-run table, HTML overview); the
 * rest (IOPS twins of MiB/s, latency percentiles, fscopy phases) are in the
 * per-DUT sections and `emmclab compare`. */
bool report_headline_metric(const char *workload, const char *metric)
{
	static const char *const heads[][2] = {
		{"androbench", "seq_read"}, {"androbench", "seq_write"}, {"androbench", "rand_read"},
		{"androbench", "rand_write"}, {"fscopy", "wall_time"}, {"powerfail", "lost_records"},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(heads); i++)
		if (strcmp(heads[i][0], workload) == 0 && strcmp(heads[i][1], metric) == 0)
			return true;
	return false;
}

int report_print_mode_table(struct store *s, int64_t run_id, FILE *f, struct lab_err *e)
{
	struct report_opts o;
	report_opts_init(&o);
	return report_print_mode_table_opts(s, run_id, &o, f, e);
}

int report_print_mode_table_opts(struct store *s, int64_t run_id, const struct report_opts *ro,
				 FILE *f, struct lab_err *e)
{
	struct lab_err he = {0};
	return report_run_outputs(s, run_id, ro, f, NULL, e, &he);
}

int report_run_outputs(struct store *s, int64_t run_id, const struct report_opts *ro, FILE *table,
		       const char *html_path, struct lab_err *e, struct lab_err *html_e)
{
	struct report_opts o = *ro;
	o.run_id = run_id;
	if (html_path && run_id)
		o.all = false; /* as report_write_file */
	/* the table alone reads the mode comparisons only: the trends of the
	 * last nights and the latency histograms were most of its cost
	 * (callgrind); the HTML report needs them */
	o.modes_only = !html_path;
	if (html_path)
		report_opts_for_format(&o, "html");
	struct report_model *m;
	int rc = report_build(s, &o, &m, e);
	if (rc)
		return rc;
	report_text_mode_table(m, table);
	fflush(table);
	if (html_path && report_write_model(m, "html", html_path, html_e))
		rc = LAB_EINFRA;
	report_free(m);
	return rc;
}

/* ---- formatting helpers ---- */

void report_xml_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		/* the run of characters that need no escaping goes out in one write */
		const unsigned char *q = p;
		while (*q && *q != '&' && *q != '<' && *q != '>' && *q != '"' && *q != '\'' &&
		       (*q >= 0x20 || *q == '\n' || *q == '\t'))
			q++;
		if (q > p)
			fwrite(p, 1, (size_t)(q - p), f);
		if (!*q)
			break;
		switch (*q) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc('?', f); /* control characters are not allowed in XML 1.0 */
		}
		p = q + 1;
	}
}

void report_csv_str(FILE *f, const char *s)
{
	s = s ? s : "";
	bool formula = csv_formula_like(s); /* shown as text, never run by a spreadsheet */
	if (!formula && !strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputs(formula ? "\"'" : "\"", f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

const char *report_pct(char *buf, size_t n, double frac)
{
	if (!isfinite(frac))
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%+.2f%%", 100.0 * frac);
	return buf;
}

const char *report_p(char *buf, size_t n, double p, bool approx)
{
	if (!isfinite(p))
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%.3g%s", p, approx ? "~" : "");
	return buf;
}

/*
 * "%.1f" without printf's exact decimal expansion: an SVG coordinate is one
 * rounding of v * 10 to an integer, which is the same digits printf writes
 * unless v * 10 is within 1e-6 of a tie (where the product's own rounding
 * could decide it) or too large for that margin: those go to snprintf.  At
 * 1,024 boards the report has some ten million coordinates, and printf's
 * multi-precision path for them was most of the report's CPU.
 */
const char *report_fmt_1f(char *buf, size_t n, double v)
{
	double a = fabs(v) * 10.0;
	if (!(a < 1e9)) {
		snprintf(buf, n, "%.1f", v);
		return buf;
	}
	double r = nearbyint(a);
	if (fabs(a - r) > 0.5 - 1e-6) {
		snprintf(buf, n, "%.1f", v);
		return buf;
	}
	lab_fmt_fixed(buf, n, (uint64_t)r, 1, signbit(v)); /* as printf: -0.04 is "-0.0" */
	return buf;
}

const char *report_num(char *buf, size_t n, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "n/a");
		return buf;
	}
	double a = fabs(v);
	int dec = a >= 1000 ? 1 : a >= 100 ? 2 : a >= 10 ? 3 : a >= 1 ? 3 : 4;
	if (a != 0 && a < 0.001) {
		snprintf(buf, n, "%.3g", v);
		return buf;
	}
	snprintf(buf, n, "%.*f", dec, v);
	return buf;
}

const char *report_direction_text(int direction)
{
	return direction > 0 ? "higher is better" : direction < 0 ? "lower is better" : "direction unknown";
}

size_t report_summary_lines(const struct report_model *m, char lines[][128], size_t max)
{
	const struct report_summary *s = &m->sum;
	size_t n = 0;
	if (n < max) {
		if (s->regressions < 0)
			snprintf(lines[n++], 128, "regressions: not checked (no baseline)");
		else
			snprintf(lines[n++], 128, "regressions: %d against baseline '%s' (%d improved)",
				 s->regressions, m->base.name, s->improvements);
	}
	if (n < max)
		snprintf(lines[n++], 128, "infrastructure errors: %d", s->infra_errors);
	if (n < max)
		snprintf(lines[n++], 128, "jobs: %d ok, %d failed, %d total", s->jobs_ok, s->jobs_failed,
			 s->jobs_total);
	if (n < max)
		snprintf(lines[n++], 128, "mode mismatches: %d", s->mode_mismatches);
	if (n < max)
		snprintf(lines[n++], 128, "samples: %zu (%zu flagged warm-up, %s)", s->samples, s->warmups,
			 m->opts.exclude_warmup ? "excluded" : "kept");
	return n;
}

const char *report_context(char *buf, size_t n, const struct compare_row *w)
{
	buf[0] = '\0';
	const char *parts[] = {w->part_label, w->board, w->kernel};
	for (size_t i = 0; i < 3; i++) {
		if (!parts[i] || !parts[i][0])
			continue;
		if (buf[0])
			lab_strlcat(buf, " / ", n);
		lab_strlcat(buf, parts[i], n);
	}
	/* Provenance: a figure that is not a lab measurement says what it is. */
	if (w->source && w->source[0] && strcmp(w->source, "lab") != 0) {
		lab_strlcat(buf, buf[0] ? " [" : "[", n);
		lab_strlcat(buf, w->source, n);
		lab_strlcat(buf, "]", n);
	}
	return buf;
}

const char *report_pp(char *buf, size_t n, double frac)
{
	double v = 100 * frac;
	if (!isfinite(v))
		snprintf(buf, n, "n/a");
	else /* no "-0.00 pp" */
		snprintf(buf, n, "%+.2f pp", fabs(v) < 0.005 ? 0.0 : v);
	return buf;
}

const char *report_interaction(char *buf, size_t n, const struct compare_result *cr,
			       const struct compare_interaction *x)
{
	const struct compare_row *w0 = &cr->rows[x->row_off], *w1 = &cr->rows[x->row_on];
	char c0[24], c1[24], d[24], r[24], lo[24], hi[24], p[24];
	report_pct(c0, sizeof c0, w0->cmp.change);
	report_pct(c1, sizeof c1, w1->cmp.change);
	report_pp(d, sizeof d, x->diff);
	if (!isfinite(x->ratio)) {
		snprintf(buf, n, "%s/%s: FUA effect %s without CQE, %s with: no test", w0->workload,
			 w0->metric, c0, c1);
		return buf;
	}
	snprintf(r, sizeof r, "%.4f", x->ratio);
	if (isfinite(x->lo)) {
		snprintf(lo, sizeof lo, "%.4f", x->lo);
		snprintf(hi, sizeof hi, "%.4f", x->hi);
	} else {
		lab_strlcpy(lo, "-", sizeof lo);
		lab_strlcpy(hi, "-", sizeof hi);
	}
	report_p(p, sizeof p, x->p, false);
	snprintf(buf, n,
		 "%s/%s: FUA effect %s without CQE, %s with (%s); ratio %s [%s, %s] %.3g%% CI, p %s",
		 w0->workload, w0->metric, c0, c1, d, r, lo, hi, 100 * (1 - cr->opts.alpha), p);
	return buf;
}
