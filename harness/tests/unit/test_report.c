/*
 * Report model, renderers, baselines and the regression check on a real
 * store: the published reference data plus four synthetic nightly lab runs
 * (the last one 10% slower on one metric), infrastructure events, a
 * mode-mismatch job and a hostile part label.
 */
#include "baseline.h"
#include "report.h"
#include "store.h"
#include "store_internal.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_report_db.h"

static char *render(const struct report_model *m, const char *fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct lab_err e = {0};
	int rc = report_render(m, fmt, f, &e);
	fclose(f);
	ok(rc == 0, "render %s (%s)", fmt, e.msg);
	return buf;
}

/* Nightly run: part "emmc-A" in fua and cache-nofua, 5 iterations; `slow`
 * scales cache-nofua seq_write. */
static int64_t night(struct store *s, int k, double slow, bool infra)
{
	struct lab_err e = {0};
	int64_t run, part, board, job;
	testdb_run(s, "lab", &run);
	testdb_part(s, "emmc-A <script>alert(1)</script>", &part);
	store_board_upsert(s, "rk3399-1", "rk3399", "sdhci-of-arasan", "lab", &board, &e);
	const char *modes[] = {"fua", "cache-nofua"};
	for (int m = 0; m < 2; m++) {
		struct store_job_info ji = {.run_id = run, .part_id = part, .board_id = board,
					    .suite = "nightly", .mode = modes[m]};
		store_job_begin(s, &ji, &job, &e);
		store_job_verified(s, job, m == 0, 1, 0, modes[m], &e);
		for (int it = 1; it <= 5; it++) {
			double jit = ((it * 37 + k * 11) % 7 - 3) * 0.3;
			double sw = (m ? 200.0 : 150.0) + jit;
			if (m == 1)
				sw *= slow;
			struct store_sample smp[2] = {{"seq_write", sw, "MiB/s"},
						      {"rand_write", (m ? 70.0 : 12.7) + jit * 0.1, "MiB/s"}};
			int64_t iid;
			store_iteration_write(s, job, "androbench", it, 1.0, 0, smp, 2, NULL, 0, &iid, &e);
		}
		store_job_finish(s, job, "ok", &e);
	}
	if (infra) {
		/* A job whose verified mode differed: its samples never count. */
		struct store_job_info ji = {.run_id = run, .part_id = part, .board_id = board,
					    .suite = "nightly", .mode = "fua-cqe"};
		store_job_begin(s, &ji, &job, &e);
		store_job_verified(s, job, 1, 1, 0, "fua", &e);
		store_event(s, run, job, board, "mode-mismatch", "verify", "requested fua-cqe, DUT runs fua", &e);
		store_job_finish(s, job, "mode-mismatch", &e);
		store_event(s, run, 0, board, "bootloader-hang", "uboot", "no prompt after 30 s & retry", &e);
		store_event(s, run, 0, board, "info", "run", "started", &e);
	}
	store_run_finish(s, run, "complete", &e);
	if (e.msg[0])
		ok(0, "night %d: %s", k, e.msg);
	return run;
}

static bool lines_within(const char *text, int width)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		int cols = 0;
		for (size_t i = 0; i < len; i++)
			cols += ((unsigned char)p[i] & 0xc0) != 0x80;
		if (cols > width) {
			ok(0, "line too long (%d): %.*s", cols, (int)len, p);
			return false;
		}
		p += len + (nl ? 1 : 0);
	}
	return true;
}

/* Every headline interaction of the mode table printed once, after its own
 * part's header and before the next part's: the table lists them per block. */
static bool inter_in_blocks(const struct compare_result *c, const char *tb)
{
	size_t shown = 0;
	for (size_t i = 0; i < c->ninter; i++) {
		const struct compare_row *x = &c->rows[c->inter[i].row_off];
		if (!report_headline_metric(x->workload, x->metric))
			continue;
		shown++;
		char head[160], line[160];
		snprintf(head, sizeof head, "\n\n%.72s", x->part_label);
		snprintf(line, sizeof line, "  CQE x FUA %s/%s:", x->workload, x->metric);
		const char *h = strstr(tb, head), *l = h ? strstr(h, line) : NULL;
		const char *next = h ? strstr(h + 2, "\n\n") : NULL;
		while (next && next[2] == ' ') /* a sub-table's blank line, same block */
			next = strstr(next + 2, "\n\n");
		if (!l || (next && l > next)) {
			ok(0, "interaction %s %s/%s not in its block", x->part_label, x->workload, x->metric);
			return false;
		}
	}
	size_t n = 0;
	for (const char *q = strstr(tb, "  CQE x FUA "); q; q = strstr(q + 1, "  CQE x FUA "))
		n++;
	if (n != shown || shown == 0)
		ok(0, "%zu interaction lines for %zu headline interactions", n, shown);
	return n == shown && shown > 0;
}

static void test_reference_report(struct store *s)
{
	struct report_opts o;
	report_opts_init(&o);
	o.all = true;
	struct report_model *m;
	struct lab_err e = {0};
	is_int(report_build(s, &o, &m, &e), 0, "build report over all runs");
	is_int(m->sum.regressions, -1, "no baseline: regressions not checked");
	char *t = render(m, "text");
	ok(strstr(t, "+454.57%") != NULL, "text shows the published rand_write change");
	ok(strstr(t, "+34.14%") != NULL, "text shows the published seq_write change");
	ok(lines_within(t, 72), "text lines <= 72 columns");
	ok(strstr(t, "cache-nofua-cqe vs cache-nofua:") != NULL, "text: CQE effect without FUA");
	ok(strstr(t, "CQE x FUA fscopy/wall_time: FUA +0.59% without CQE, +0.76% with") != NULL &&
		   strstr(t, "+0.16 pp; ratio of ratios 1.0016 [0.9685, 1.0359], p 0.919") != NULL,
	   "text: the DUT5 interaction");
	free(t);
	/* The end-of-run table: the four pairs of DUT5's 2x2 and the interaction. */
	char *tb = NULL;
	size_t tlen = 0;
	FILE *tf = open_memstream(&tb, &tlen);
	report_text_mode_table(m, tf);
	fclose(tf);
	ok(strstr(tb, "  workload/metric        unit   n       fua     nofua   change verdict") &&
		   strstr(tb, "  workload/metric        unit   n   fua-cqe nofua-cqe   change verdict") &&
		   strstr(tb, "  workload/metric        unit   n       fua   fua-cqe   change verdict") &&
		   strstr(tb, "  workload/metric        unit   n     nofua nofua-cqe   change verdict") &&
		   strstr(tb, "  CQE x FUA fscopy/wall_time") && lines_within(tb, 72),
	   "mode table: the 2x2 and the interaction, <= 72 cols");
	ok(inter_in_blocks(m->modes, tb), "mode table: each interaction once, in its part's block");
	free(tb);
	char *j = render(m, "json");
	ok(strstr(j, "\"interactions\":[\n{\"part\":\"DUT5") != NULL, "json: interactions");
	ok(strstr(j, "\"schema\":\"emmclab-report/1\"") == j + 1, "json starts with the schema");
	ok(strstr(j, "\\u003cscript") != NULL && !strstr(j, "<script"), "json escapes < of the hostile label");
	free(j);
	char *h = render(m, "html");
	ok(!strstr(h, "<script"), "html has no <script (hostile label escaped)");
	ok(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL, "html shows the label escaped");
	ok(!strstr(h, "http:") && !strstr(h, "https:") && !strstr(h, " src=") && !strstr(h, "href="),
	   "html has no external references");
	ok(strstr(h, "<svg") != NULL && strstr(h, "<polyline") != NULL, "html has box plots and trends");
	ok(strstr(h, "<td>cache-nofua-cqe vs cache-nofua</td>") != NULL, "html overview: the 4th cell");
	ok(strstr(h, "<td>1.0016 [0.9685, 1.0359]</td><td>0.919</td>") != NULL, "html: interaction");
	free(h);
	char *c = render(m, "csv");
	ok(strncmp(c, "kind,part,", 10) == 0, "csv header");
	free(c);
	char *md = render(m, "markdown");
	ok(strstr(md, "## Summary") != NULL, "markdown summary");
	ok(strstr(md, "| +0.59% | +0.76% | +0.16 pp | 1.0016 [0.9685, 1.0359] | 0.919 |") != NULL,
	   "markdown: interaction");
	ok(strstr(md, "\\<script\\>") != NULL, "markdown escapes the label");
	free(md);
	char *x = render(m, "junit");
	ok(strstr(x, "failures=\"0\"") != NULL, "junit: no failures without a baseline");
	ok(strstr(x, "errors=\"2\"") != NULL, "junit: the two infra events of the lab runs are errors");
	free(x);
	FILE *f = fopen("/dev/null", "w");
	lab_err_clear(&e);
	is_int(report_render(m, "pdf", f, &e), LAB_EUSAGE, "unknown format refused");
	ok(strstr(e.msg, "text|markdown|html|json|csv|junit") != NULL, "lists formats (%s)", e.msg);
	fclose(f);
	report_free(m);
}

static void test_regression(struct store *s, int64_t last, const char *dir)
{
	struct lab_err e = {0};
	int n = -1;
	is_int(regress_check(s, last, NULL, &n, NULL, &e), LAB_EUSAGE, "no baseline yet: usage error");
	ok(strstr(e.msg, "baseline set") != NULL, "hint how to set one (%s)", e.msg);
	lab_err_clear(&e);
	is_int(baseline_set(s, "default", 0, 3, &e), 0, "baseline default = last 3");
	is_int(baseline_set(s, "default", 5, 3, &e), LAB_EUSAGE, "run and last-n together refused");
	lab_err_clear(&e);
	is_int(baseline_set(s, "pinned", 999, 0, &e), LAB_EUSAGE, "pinning a missing run refused");
	lab_err_clear(&e);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	is_int(regress_check(s, last, "default", &n, f, &e), 0, "regression check");
	fclose(f);
	is_int(n, 1, "one regression: seq_write cache-nofua 10% slower");
	ok(strstr(buf, "regression: emmc-A") && strstr(buf, "cache-nofua androbench/seq_write: -9.86%"),
	   "summary names it:\n%s", buf);
	free(buf);

	struct report_opts o;
	report_opts_init(&o);
	o.run_id = last;
	o.baseline = "default";
	struct report_model *m;
	is_int(report_build(s, &o, &m, &e), 0, "report with baseline");
	is_int(m->sum.regressions, 1, "summary: one regression");
	is_int(m->sum.infra_errors, 2, "summary: mode-mismatch + bootloader-hang events");
	is_int(m->sum.mode_mismatches, 1, "summary: one mode mismatch");
	is_int(m->sum.jobs_failed, 1, "summary: one failed job");
	is_int(m->sum.jobs_ok, 2, "summary: two ok jobs");
	is_int(m->nbase_runs, 3, "three baseline runs");
	char *x = render(m, "junit");
	ok(strstr(x, "<failure type=\"regression\"") != NULL, "junit failure for the regression");
	ok(strstr(x, "type=\"bootloader-hang\"") && strstr(x, "no prompt after 30 s &amp; retry"),
	   "junit error for the infra event, escaped");
	free(x);
	char *t = render(m, "text");
	ok(strstr(t, "REGRESSION: emmc-A") != NULL, "text names the regression");
	ok(lines_within(t, 72), "text with baseline <= 72 columns");
	free(t);
	char *h = render(m, "html");
	ok(strstr(h, "Against baseline") && !strstr(h, "<script"), "html baseline section, escaped");
	free(h);
	report_free(m);

	/* Pinned baseline: run 3 is the last normal night. */
	is_int(baseline_set(s, "pinned", last - 1, 0, &e), 0, "pin run");
	is_int(regress_check(s, last, "pinned", &n, NULL, &e), 0, "check against pinned");
	is_int(n, 1, "pinned baseline finds it too");
	is_int(regress_check(s, last - 1, "pinned", &n, NULL, &e), LAB_EUSAGE, "run is its own baseline");
	lab_err_clear(&e);
	/* A normal night against the last 3 before it: nothing. */
	is_int(regress_check(s, last - 1, "default", &n, NULL, &e), 0, "check a normal night");
	is_int(n, 0, "no regression on a normal night");

	char path[600];
	snprintf(path, sizeof path, "%s/new/dir/night.html", dir);
	is_int(report_write_file(s, last, "html", path, NULL, &e), 0, "report_write_file");
	ok(access(path, R_OK) == 0, "html file written");
	is_int(report_write_file(s, last, "nope", path, NULL, &e), LAB_EUSAGE, "bad format refused");
	lab_err_clear(&e);
	buf = NULL;
	f = open_memstream(&buf, &len);
	is_int(report_print_mode_table(s, last, f, &e), 0, "mode table");
	fclose(f);
	ok(strstr(buf, "FUA vs cache-no-FUA") != NULL && strstr(buf, "cache-nofua") != NULL &&
	   lines_within(buf, 72), "mode table content, <= 72 cols");
	free(buf);
}

/* A night whose second fua iteration ran through LAVA (schema 8): the JSON
 * report says so for that value only, loaded for the run and for all runs. */
static void test_executor(struct store *s)
{
	struct lab_err e = {0};
	int64_t run = night(s, 5, 1.0, false);
	char *sql = xasprintf("UPDATE iteration SET executor = 'lava', job_url ="
			      " 'http://lava.test/scheduler/job/7', worker = 'worker-1' WHERE n = 2"
			      " AND job_id IN (SELECT id FROM job WHERE run_id = %lld AND mode = 'fua')",
			      (long long)run);
	is_int(store_exec(s, sql, "marking a LAVA iteration", &e), 0, "a LAVA iteration");
	free(sql);
	static const char want[] =
		"\"executor\":[\"local\",\"lava\",\"local\",\"local\",\"local\"],"
		"\"job_url\":[null,\"http://lava.test/scheduler/job/7\",null,null,null],"
		"\"worker\":[null,\"worker-1\",null,null,null]}";
	static const char local[] = "\"executor\":[\"local\",\"local\",\"local\",\"local\","
				    "\"local\"],\"job_url\":[null,null,null,null,null],"
				    "\"worker\":[null,null,null,null,null]}";
	for (int all = 0; all < 2; all++) {
		struct report_opts o;
		report_opts_init(&o);
		o.run_id = all ? 0 : run;
		o.all = all;
		struct report_model *m;
		is_int(report_build(s, &o, &m, &e), 0, all ? "build report: all runs" : "build report: the run");
		char *j = render(m, "json");
		/* fua: seq_write and rand_write; each value's place after warmup_deviation */
		const char *hit = strstr(j, want);
		ok(hit && strstr(hit + 1, want) && strstr(j, local), "json %s: the LAVA value, the local ones",
		   all ? "all runs" : "one run");
		/* every group: the keys before schema 8's unchanged, the new ones after them */
		int ngroups = 0, nafter = 0;
		for (const char *p = j; (p = strstr(p, "\"warmup_deviation\":")); ngroups++) {
			p += strcspn(p, ",}");
			nafter += strncmp(p, ",\"executor\":[", 13) == 0;
		}
		ok(ngroups > 0 && nafter == ngroups, "json: executor follows warmup_deviation (%d of %d)",
		   nafter, ngroups);
		free(j);
		const struct results *r = m->res;
		int nlava = 0, nbad = 0;
		for (size_t g = 0; g < r->ngroups; g++)
			for (size_t k = 0; k < r->groups[g].n; k++) {
				const struct results_group *gr = &r->groups[g];
				const struct results_origin *or = results_value_origin(r, gr, k);
				if (strcmp(or->executor, "lava") == 0)
					nlava += or->worker && strcmp(or->worker, "worker-1") == 0 &&
						 gr->iter[k] == 2 && strcmp(gr->mode, "fua") == 0;
				else
					nbad += strcmp(or->executor, "local") != 0 || or->job_url || or->worker;
			}
		is_int(nlava, 2, "results: the two LAVA values");
		is_int(nbad, 0, "results: every other value local, without a LAVA job");
		report_free(m);
	}
}

/* report_fmt_1f writes what "%.1f" writes: random coordinates, every value
 * around the ties (k/10 + 0.05 and its neighbours), signs, zeros, NaN and
 * infinities, large values. */
static void test_fmt_1f(void)
{
	char a[64], b[64];
	long bad = 0, n = 0;
	uint64_t x = 88172645463325252ull;
	for (long i = 0; i < 2000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double v = (double)(x >> 11) * 0x1.0p-53 * 1400.0 - 200.0;
		if (i % 4 == 1)
			v = round(v * 10) / 10 + 0.05; /* a decimal tie, as close as binary gets */
		else if (i % 4 == 2)
			v = nextafter(round(v * 10) / 10 + 0.05, (i & 8) ? INFINITY : -INFINITY);
		else if (i % 4 == 3)
			v = ldexp(v, (int)(x % 64) - 32);
		snprintf(b, sizeof b, "%.1f", v);
		if (strcmp(report_fmt_1f(a, sizeof a, v), b) != 0 && bad++ < 5)
			fprintf(stderr, "# %.17g: %s, printf %s\n", v, a, b);
		n++;
	}
	const double special[] = {0.0, -0.0, 0.05, -0.05, 0.25, -0.25, 0.15, 0.35, 0.45, 1e-300, -1e-300,
				  99999999.95, 1e8, 1e9, -1e12, 123456789012.25, NAN, INFINITY, -INFINITY,
				  0.04999999999999999, 2.5e-1, 680.0, 170.0};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
		snprintf(b, sizeof b, "%.1f", special[i]);
		if (strcmp(report_fmt_1f(a, sizeof a, special[i]), b) != 0 && bad++ < 10)
			fprintf(stderr, "# %.17g: %s, printf %s\n", special[i], a, b);
		n++;
	}
	ok(bad == 0, "report_fmt_1f matches %%.1f on %ld values (%ld differ)", n, bad);
}

int main(void)
{
	char dir[] = "/tmp/emmclab-test-report-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[600];
	snprintf(path, sizeof path, "%s/r.db", dir);
	struct store *s;
	struct lab_err e = {0};
	if (store_open(path, 0, &s, &e)) {
		ok(0, "store_open: %s", e.msg);
		return tap_done();
	}
	ok(testdb_reference(s) == 0, "reference data");
	int64_t last = 0;
	for (int k = 1; k <= 4; k++)
		last = night(s, k, k == 4 ? 0.9 : 1.0, k == 4);
	test_fmt_1f();
	test_reference_report(s);
	test_regression(s, last, dir);
	test_executor(s);
	store_close(s);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return tap_done();
}
