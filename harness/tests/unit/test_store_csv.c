/* CSV import/export: layouts, RFC 4180 quoting, bad lines with numbers,
 * duplicates, exact round trip of the reference files, export formats. */
#include "store.h"
#include "store_internal.h" /* fault injection and row inspection */
#include "store_csv.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/emmclab-test-csv-XXXXXX";

static struct csv_file *parse(const char *text, struct lab_err *e)
{
	struct csv_file *f = NULL;
	lab_err_clear(e);
	csv_parse(text, strlen(text), "t.csv", &f, e);
	return f;
}

static int has_bad(const struct csv_file *f, int line, const char *needle)
{
	for (size_t i = 0; i < f->nbad; i++)
		if (f->bad[i].line == line && strstr(f->bad[i].reason, needle))
			return 1;
	return 0;
}

static void test_quoting(void)
{
	struct lab_err e;
	const char *t = "# c1\n"
			"dut,module,mode,run,seconds\n"
			"D1,\"a, \"\"quoted\"\" module\",fua,1,1.50\n"
			"D1,\"multi\nline\",cache-nofua,1,2\n"
			"D2,plain,fua-cqe,2,3e2\n";
	struct csv_file *f = parse(t, &e);
	ok(f != NULL, "fscopy layout recognised (%s)", e.msg);
	if (!f)
		return;
	is_int(f->layout, CSV_FSCOPY, "layout");
	is_int(f->nrows, 3, "three rows");
	is_int(f->nbad_total, 0, "no bad lines");
	is_str(f->rows[0].label, "D1 a, \"quoted\" module", "quoted field decoded");
	is_str(f->rows[0].key, "D1,\"a, \"\"quoted\"\" module\",fua", "raw key kept");
	is_str(f->rows[0].value_text, "1.50", "value text kept");
	is_near(f->rows[0].value, 1.5, 1e-12, "value");
	is_str(f->rows[1].label, "D1 multi\nline", "newline inside quotes");
	is_int(f->rows[2].line, 6, "line numbers count newlines inside quotes");
	is_near(f->rows[2].value, 300, 1e-9, "exponent");
	is_str(f->comments, "# c1", "comment kept");
	is_int(f->exact, 1, "file reproducible");
	csv_free(f);

	f = parse("dut,module,mode,run,seconds\r\nD1,m,fua,1,1.0\r\nD1,m,fua,2,1.1\r\n", &e);
	ok(f && f->crlf && f->exact && f->nrows == 2, "CRLF file parsed and reproducible");
	csv_free(f);
	f = parse("dut,module,mode,run,seconds\nD1,m,fua,1,1.0", &e);
	ok(f && !f->final_eol && f->exact, "missing final newline kept");
	csv_free(f);
	f = parse("dut,module,mode,run,seconds\nD1,\"m\",fua,1,1.0\n", &e);
	ok(f && f->nrows == 1 && f->exact, "needless quotes in the key are kept verbatim");
	csv_free(f);
	f = parse("dut,module,mode,run,seconds\nD1,m,fua,1,1.0\n\n", &e);
	ok(f && f->nrows == 1 && !f->exact, "blank line: imported, but not byte-exact");
	csv_free(f);
}

/* Spreadsheet formula injection: non-numeric fields starting = + - @ TAB CR are
 * written as text ("'..."), numbers stay numbers. */
static void test_formula_fields(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{"-1.5", "-1.5"}, {"+3", "+3"}, {"-2e-3", "-2e-3"}, {"-inf", "-inf"}, {"seq_read", "seq_read"},
		{"=1+1", "\"'=1+1\""}, {"+cmd|' /C calc'!A0", "\"'+cmd|' /C calc'!A0\""},
		{"-x", "\"'-x\""}, {"-", "\"'-\""}, {"@SUM(A1)", "\"'@SUM(A1)\""},
		{"\t=1", "\"'\t=1\""}, {"\r=1", "\"'\r=1\""}, {"=a,\"b\"", "\"'=a,\"\"b\"\"\""},
		{"a=1", "a=1"}, {"", ""},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(cases); i++) {
		struct lab_buf b;
		lab_buf_init(&b, 0);
		csv_put_field(&b, cases[i].in);
		is_str(lab_buf_cstr(&b), cases[i].out, "csv field");
		lab_buf_free(&b);
	}
}

/* csv_read_file (streamed through a 1 MiB window) and csv_parse (a buffer) agree. */
static struct csv_file *read_text(const char *name, const char *text, size_t len,
				  struct lab_err *e)
{
	char *p = xasprintf("%s/%s", tmpdir, name);
	struct csv_file *f = NULL;
	lab_err_clear(e);
	if (lab_write_file_atomic(p, text, len, e) == LAB_OK)
		csv_read_file(p, &f, e);
	free(p);
	return f;
}

static void test_stream_parity(void)
{
	struct lab_err e = {0};
	/* ~3 MiB, CRLF, quoted keys with commas and line ends: records straddle the window */
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_printf(&b, "# parity\r\ndut,module,mode,run,seconds\r\n");
	int rows = 0;
	for (int d = 0; b.len < (3u << 20); d++)
		for (int r = 1; r <= 5; r++, rows++)
			lab_buf_printf(&b, "DUT%d,\"mod, %d\r\nline two\",%s,%d,%d.%02d\r\n", d, d,
				       d % 2 ? "fua" : "cache-nofua", r, 700 + d % 90, r * 7);
	struct csv_file *m = NULL;
	csv_parse(b.data, b.len, "big.csv", &m, &e);
	struct csv_file *f = read_text("big.csv", b.data, b.len, &e);
	ok(m && f, "both read (%s)", e.msg);
	if (m && f) {
		is_int((long long)f->nrows, rows, "streamed: every row");
		is_int((long long)m->nrows, rows, "buffer: every row");
		is_int((long long)f->nbad_total, 0, "no bad lines");
		ok(f->exact && m->exact && f->crlf && f->final_eol, "both exact, CRLF, final newline");
		is_str(f->content_sha256, m->content_sha256, "same row hash");
		is_str(f->sha256, m->sha256, "same file hash");
		is_int((long long)f->bytes, (long long)b.len, "bytes counted");
	}
	csv_free(m);
	csv_free(f);
	lab_buf_free(&b);

	/* a record longer than the window allows is a bad line; the next line is read */
	lab_buf_init(&b, 0);
	lab_buf_printf(&b, "dut,module,mode,run,seconds\nD1,m,fua,1,1.0\nD1,");
	for (int i = 0; i < 1500000; i++) /* short fields: only the record is too long */
		lab_buf_append(&b, "x,", 2);
	lab_buf_printf(&b, ",fua,2,1.0\nD1,m,fua,3,1.5\nD1,m,fua,1,9\n");
	f = read_text("long.csv", b.data, b.len, &e);
	ok(f != NULL, "overlong record: read (%s)", e.msg);
	if (f) {
		is_int((long long)f->nrows, 2, "the good rows around it");
		ok(has_bad(f, 3, "record longer than 512 KiB"), "line 3 is bad: too long");
		ok(has_bad(f, 5, "duplicate run 1 for D1,m,fua (first on line 2)"),
		   "streamed duplicate names the first line");
		ok(!f->exact, "not exact");
	}
	csv_free(f);
	lab_buf_free(&b);
}

/* Found by fuzz_csv: a NUL byte in a comment line cut the stored comments, yet the
 * streamed check called the file exact; export then differed from the file. */
static void test_nul_comment(void)
{
	struct lab_err e = {0};
	static const char text[] = "# a\0b\ndut,module,mode,run,seconds\nD1,m,fua,1,1.5\n";
	struct csv_file *f = NULL;
	csv_parse(text, sizeof text - 1, "nulc.csv", &f, &e);
	ok(f && f->nrows == 1 && !f->exact, "NUL in a comment: imported, not byte-exact");
	csv_free(f);
}

/* The row hash ignores what a re-save changes and sees what a change changes. */
static void test_content_hash(void)
{
	struct lab_err e = {0};
	const char *base = "# c\ndut,module,mode,run,seconds\nD1,\"m 1\",fua,1,1.50\nD1,\"m 1\",fua,2,2\n"
			   "D2,m,cache-nofua,1,3\n";
	const char *same[] = {
		"dut,module,mode,run,seconds\r\nD2,m,cache-nofua,1,3\r\nD1,m 1,fua,2,2.0\r\n"
		"# another comment\r\nD1,  m   1 ,fua,1,1.5",
		"DUT,MODULE,MODE,RUN,SECONDS\n\"D1\",\"m 1\",fua,1,15e-1\nD1,\"m 1\",fua,2,2\nD2,m,cache-nofua,1,3\n",
	};
	const char *other[] = {
		"dut,module,mode,run,seconds\nD1,m 1,fua,1,1.51\nD1,m 1,fua,2,2\nD2,m,cache-nofua,1,3\n",
		"dut,module,mode,run,seconds\nD1,m 1,fua,1,1.5\nD1,m 1,fua,3,2\nD2,m,cache-nofua,1,3\n",
		"dut,module,mode,run,seconds\nD1,m 1,fua,1,1.5\nD1,m 1,fua,2,2\nD2,m,fua,1,3\n",
		"dut,module,mode,run,seconds\nD1,m 1,fua,1,1.5\nD1,m 1,fua,2,2\n",
	};
	struct csv_file *f0 = parse(base, &e);
	ok(f0 != NULL, "base parsed");
	if (!f0)
		return;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(same); i++) {
		struct csv_file *f = parse(same[i], &e);
		ok(f && strcmp(f->content_sha256, f0->content_sha256) == 0 &&
			   strcmp(f->sha256, f0->sha256) != 0,
		   "re-saved copy %zu: same rows, other bytes", i);
		csv_free(f);
	}
	for (size_t i = 0; i < LAB_ARRAY_SIZE(other); i++) {
		struct csv_file *f = parse(other[i], &e);
		ok(f && strcmp(f->content_sha256, f0->content_sha256) != 0, "changed copy %zu: new rows", i);
		csv_free(f);
	}
	csv_free(f0);
}

static void test_bad_lines(void)
{
	struct lab_err e;
	const char *t = "board,controller,queue_fua,workload,run,mib_per_s\n" /* 1 */
			"sprd,sdhci-sprd,0,seq_read,1,266.8\n"                /* 2 ok */
			"sprd,sdhci-sprd,0,seq_read,2\n"                      /* 3 columns */
			"sprd,sdhci-sprd,0,seq_read,3,fast\n"                 /* 4 non-numeric */
			"sprd,sdhci-sprd,0,seq_read,4,-1.5\n"                 /* 5 negative */
			"sprd,sdhci-sprd,2,seq_read,5,1\n"                    /* 6 queue_fua */
			"sprd,sdhci-sprd,0,seq_read,1,266.9\n"                /* 7 duplicate */
			"sprd,sdhci-sprd,0,seq_read,x,1\n"                    /* 8 run */
			"sprd,\"sdhci\"x,0,seq_read,6,1\n"                    /* 9 quote */
			"sprd,sdhci-sprd,0,seq_read,7,nan\n"                  /* 10 nan */
			"sprd,sdhci-sprd,0,seq_read,8,0x10\n"                 /* 11 hex */
			"sprd,sdhci-sprd,1,seq_read,1,259.3\n";               /* 12 ok */
	struct csv_file *f = parse(t, &e);
	ok(f != NULL, "androbench layout recognised");
	if (!f)
		return;
	is_int(f->layout, CSV_ANDROBENCH, "layout");
	is_int(f->nrows, 2, "two good rows");
	is_int(f->nbad_total, 9, "nine bad lines");
	ok(has_bad(f, 3, "expected 6 columns, found 5"), "line 3: column count");
	ok(has_bad(f, 4, "'fast' is not a number"), "line 4: non-numeric");
	ok(has_bad(f, 5, "negative"), "line 5: negative");
	ok(has_bad(f, 6, "queue_fua must be 0 or 1"), "line 6: queue_fua");
	ok(has_bad(f, 7, "duplicate run 1") && has_bad(f, 7, "line 2"), "line 7: duplicate names the first");
	ok(has_bad(f, 8, "not a positive integer"), "line 8: run");
	ok(has_bad(f, 9, "text after a closing quote"), "line 9: quoting");
	ok(has_bad(f, 10, "not a number"), "line 10: nan");
	ok(has_bad(f, 11, "not a number"), "line 11: hex");
	int sorted = 1;
	for (size_t i = 1; i < f->nbad; i++)
		sorted &= f->bad[i - 1].line <= f->bad[i].line;
	ok(sorted, "bad lines sorted by line");
	ok(!f->exact, "a file with bad lines is not reproducible");
	is_str(f->rows[1].mode, "fua", "queue_fua=1 -> fua");
	is_str(f->rows[0].mode, "cache-nofua", "queue_fua=0 -> cache-nofua");
	csv_free(f);

	f = parse("dut,module,mode,run,seconds\nD1,m,turbo,1,1\nD1,m,fua,1,\"1\nD1,m,fua,2,1\n", &e);
	ok(f && has_bad(f, 2, "unknown mode 'turbo'"), "unknown mode");
	ok(f && has_bad(f, 3, "unterminated"), "unterminated quote");
	csv_free(f);

	f = parse("a,b,c\n1,2,3\n", &e);
	ok(f == NULL && e.rc == LAB_EUSAGE && strstr(e.msg, "t.csv:1: unknown layout"),
	   "unknown header: %s", e.msg);
	f = parse("# only a comment\n", &e);
	ok(f == NULL && strstr(e.msg, "no header"), "no header: %s", e.msg);
	f = parse("", &e);
	ok(f == NULL, "empty file refused");
	static const char nul[] = "dut,module,mode,run,seconds\nD1,m\0x,fua,1,1\n";
	f = NULL;
	lab_err_clear(&e);
	csv_parse(nul, sizeof nul - 1, "nul.csv", &f, &e);
	ok(f && has_bad(f, 2, "NUL"), "NUL byte reported");
	csv_free(f);
}

/* Wall times as published: m:ss.cc and h:mm:ss.cc next to seconds. */
static void test_durations(void)
{
	struct lab_err e;
	const char *t = "dut,module,mode,run,seconds\n" /* 1 */
			"D1,m,fua,1,7:02.44\n"          /* 2 m:ss.cc */
			"D1,m,fua,2,422.44\n"           /* 3 seconds */
			"D1,m,fua,3,1:07:02.5\n"        /* 4 h:mm:ss.f */
			"D1,m,fua,4,13:13\n"            /* 5 m:ss */
			"D1,m,fua,5,0:59.99\n"          /* 6 */
			"D1,m,fua,6,7:60.00\n"          /* 7 seconds >= 60 */
			"D1,m,fua,7,1:60:00.0\n"        /* 8 minutes >= 60 */
			"D1,m,fua,8,7.02.44\n"          /* 9 */
			"D1,m,fua,9,7:2.44\n"           /* 10 one-digit seconds */
			"D1,m,fua,10,7:02.\n"           /* 11 */
			"D1,m,fua,11,1:2:3:4\n"         /* 12 */
			"D1,m,fua,12,-7:02.44\n"        /* 13 */
			"D1,m,fua,13,:02.44\n";         /* 14 */
	struct csv_file *f = parse(t, &e);
	ok(f != NULL, "fscopy layout with durations");
	if (!f)
		return;
	is_int(f->nrows, 5, "five good rows");
	is_int(f->nbad_total, 8, "eight bad lines");
	if (f->nrows == 5) {
		ok(f->rows[0].value == 422.44, "7:02.44 is exactly the double of 422.44 (%.17g)",
		   f->rows[0].value);
		ok(f->rows[1].value == f->rows[0].value, "same value as written in seconds");
		ok(f->rows[2].value == 4022.5, "1:07:02.5 = 4022.5 s");
		ok(f->rows[3].value == 793, "13:13 = 793 s");
		ok(f->rows[4].value == 59.99, "0:59.99");
		is_str(f->rows[0].value_text, "7:02.44", "original text kept for the exporter");
	}
	ok(has_bad(f, 7, "'7:60.00': the seconds field must be below 60"), "line 7: seconds >= 60");
	ok(has_bad(f, 8, "the minutes field must be below 60"), "line 8: minutes >= 60");
	const char *want = "expected seconds (422.44), m:ss.cc (7:02.44) or h:mm:ss.cc (1:07:02.44)";
	ok(has_bad(f, 9, "'7.02.44' is not a duration") && has_bad(f, 9, want), "line 9 says what is expected");
	for (int l = 10; l <= 14; l++)
		ok(has_bad(f, l, "is not a duration"), "line %d refused", l);
	csv_free(f);

	/* Only bad lines removed: the same durations alone re-render byte for byte. */
	f = parse("dut,module,mode,run,seconds\nD1,m,fua,1,7:02.44\nD1,m,fua,2,1:07:02.50\n", &e);
	ok(f && f->nbad_total == 0 && f->exact, "a duration file is reproducible");
	csv_free(f);
	/* A rate is not a duration. */
	f = parse("board,controller,queue_fua,workload,run,mib_per_s\nsprd,h,0,seq_read,1,1:02.00\n", &e);
	ok(f && has_bad(f, 2, "'1:02.00' is not a number: expected MiB/s"), "androbench: no durations");
	csv_free(f);
}

static char *slurp(const char *path, size_t *len)
{
	struct lab_err e = {0};
	char *b = NULL;
	if (lab_read_file(path, 1 << 20, &b, len, &e))
		return NULL;
	return b;
}

static void test_store_round_trip(void)
{
	struct lab_err e = {0};
	const char *src = getenv("EMMCLAB_SRC");
	if (!src)
		src = EMMCLAB_SOURCE_DIR;
	const char *names[2] = {"androbench-sdhci-sprd.csv", "fs-copy-benchmark.csv"};
	struct csv_file *files[2] = {0};
	for (int i = 0; i < 2; i++) {
		char *p = xasprintf("%s/results/reference/%s", src, names[i]);
		lab_err_clear(&e);
		int rc = csv_read_file(p, &files[i], &e);
		is_int(rc, LAB_OK, names[i]);
		free(p);
		if (rc) {
			fprintf(stderr, "# %s\n", e.msg);
			return;
		}
		is_int(files[i]->nbad_total, 0, "reference file has no bad lines");
		is_int(files[i]->exact, 1, "reference file reproducible");
	}
	is_int(files[0]->nrows, 40, "androbench rows");
	is_int(files[1]->nrows, 60, "fscopy rows");

	char *db = xasprintf("%s/lab.db", tmpdir);
	struct store *s;
	if (store_open(db, 0, &s, &e)) {
		ok(0, "open: %s", e.msg);
		return;
	}
	int64_t runs[2];
	struct store_import_opts o = {0};
	is_int(store_import(s, files, 2, &o, runs, &e), LAB_OK, "import both");
	sqlite3_stmt *q;
	sqlite3_prepare_v2(store_sqlite(s),
			   "SELECT count(*), count(DISTINCT job_id), count(DISTINCT iteration_id),"
			   " count(DISTINCT part_id) FROM sample_flat WHERE run_id = ?1", -1, &q, NULL);
	sqlite3_bind_int64(q, 1, runs[0]);
	sqlite3_step(q);
	is_int(sqlite3_column_int(q, 0), 40, "androbench: 40 samples");
	is_int(sqlite3_column_int(q, 1), 2, "androbench: a job per mode");
	is_int(sqlite3_column_int(q, 2), 10, "androbench: iterations per run number");
	is_int(sqlite3_column_int(q, 3), 1, "androbench: one part");
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, runs[1]);
	sqlite3_step(q);
	is_int(sqlite3_column_int(q, 0), 60, "fscopy: 60 samples");
	is_int(sqlite3_column_int(q, 1), 12, "fscopy: 12 jobs (part x mode)");
	is_int(sqlite3_column_int(q, 3), 5, "fscopy: 5 parts");
	sqlite3_finalize(q);

	for (int i = 0; i < 2; i++) {
		char *out = xasprintf("%s/out%d.csv", tmpdir, i);
		FILE *f = fopen(out, "we");
		int exact = 0;
		is_int(store_export_original(s, runs[i], f, &exact, &e), LAB_OK, "export original");
		fclose(f);
		ok(exact, "recorded as exact");
		size_t la, lb;
		char *ref = xasprintf("%s/results/reference/%s", src, names[i]);
		char *a = slurp(ref, &la), *b = slurp(out, &lb);
		ok(a && b && la == lb && memcmp(a, b, la) == 0, "%s round-trips byte for byte", names[i]);
		free(a);
		free(b);
		free(ref);
		free(out);
	}

	lab_err_clear(&e);
	is_int(store_import(s, files, 1, &o, runs, &e), LAB_EUSAGE, "second import refused");
	ok(strstr(e.msg, "already imported"), "message: %s", e.msg);
	o.force = 1;
	lab_err_clear(&e);
	is_int(store_import(s, files, 1, &o, runs, &e), LAB_OK, "--force imports again");

	char *out = xasprintf("%s/all.json", tmpdir);
	FILE *f = fopen(out, "we");
	size_t n = 0;
	is_int(store_export(s, 0, EXPORT_JSON, f, &n, &e), LAB_OK, "json export");
	fclose(f);
	is_int(n, 140, "json: every sample");
	size_t len;
	char *j = slurp(out, &len);
	ok(j && strstr(j, "\"schema\": \"emmclab-export/1\"") &&
		   strstr(j, "\"part\": \"DUT1 Foresee 32GB module (Pine64, blue PCB)\"") &&
		   strstr(j, "\"value\": 98.7,"),
	   "json content");
	free(j);
	f = fopen(out, "we");
	is_int(store_export(s, runs[0], EXPORT_CSV, f, &n, &e), LAB_OK, "csv export of one run");
	fclose(f);
	is_int(n, 40, "csv: one run's samples");
	j = slurp(out, &len);
	ok(j && strncmp(j, "run_id,run_uuid,source,part,board,", 34) == 0 &&
		   strstr(j, ",import:androbench-sdhci-sprd.csv,sprd,sprd,,androbench,fua,,androbench,1,"
			     "seq_read,259.3,MiB/s,0\n"),
	   "csv content");
	free(j);
	free(out);
	lab_err_clear(&e);
	f = fopen("/dev/null", "we");
	int exact;
	is_int(store_export_original(s, 999, f, &exact, &e), LAB_EUSAGE, "no original for a lab run");
	fclose(f);
	store_close(s);
	free(db);
	csv_free(files[0]);
	csv_free(files[1]);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_quoting();
	test_formula_fields();
	test_stream_parity();
	test_content_hash();
	test_nul_comment();
	test_bad_lines();
	test_durations();
	test_store_round_trip();
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", tmpdir);
	free(cmd);
	return tap_done();
}
