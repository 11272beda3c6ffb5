/* cmd_db.c - `emmclab db migrate|info|check|export|merge`: manage the results database. */
#include "cli.h"
#include "store.h"
#include "store_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct db_args {
	const char *db;
	const char *out;
	const char *run;
	const char *format;
	const char *layout;
	int to;
	int nrest;
	char **rest;
};

enum { OPT_DB = CLI_LONG_ONLY, OPT_TO, OPT_RUN, OPT_FORMAT, OPT_LAYOUT };

const struct cli_opt cmd_db_opts[] = {
	{"db", OPT_DB, "PATH", "the database (default $EMMCLAB_DB, else results/lab.db)", 0},
	{"to", OPT_TO, "N", "migrate: up to schema version N (default the newest)", 0},
	{"format", OPT_FORMAT, "csv|json", "export: output format (default csv)", 0},
	{"run", OPT_RUN, "ID", "export: only this run", 0},
	{"layout", OPT_LAYOUT, "original",
	 "export: an imported run in its published layout, byte for byte", 0},
	{"output", 'o', "FILE", "export: write to FILE instead of standard output", 0},
	{NULL, 0, NULL, NULL, 0},
};

static int db_parse(const char *sub, int argc, char **argv, struct db_args *a)
{
	memset(a, 0, sizeof *a);
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "db");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		int64_t v;
		switch (c) {
		case OPT_DB: a->db = optarg; break;
		case OPT_RUN: a->run = optarg; break;
		case OPT_FORMAT: a->format = optarg; break;
		case OPT_LAYOUT: a->layout = optarg; break;
		case 'o': a->out = optarg; break;
		case OPT_TO:
			if (lab_parse_i64(optarg, &v) || v < 1 || v > 100000) {
				fprintf(stderr, "emmclab: db %s: --to wants a schema version, not '%s'\n",
					sub, optarg);
				return 2;
			}
			a->to = (int)v;
			break;
		default:
			return cli_getopt_fail(&g) ? 2 : -1;
		}
	}
	a->rest = argv + optind;
	a->nrest = argc - optind;
	return 0;
}

static int no_extra(const char *sub, const struct db_args *a)
{
	if (a->nrest) {
		fprintf(stderr, "emmclab: db %s: unexpected argument '%s'\n", sub, a->rest[0]);
		return cli_usage("db");
	}
	return 0;
}

/* A count for `db info`, -1 when this database cannot tell (no such table). */
static int64_t table_rows(struct store *s, const char *table)
{
	struct lab_err e = {0};
	int64_t n;
	return store_table_rows(s, table, &n, &e) == LAB_OK ? n : -1;
}

static int db_migrate(struct db_args *a)
{
	struct lab_err e = {0};
	struct store *s;
	const char *path = store_default_path(a->db);
	if (store_open(path, STORE_AS_IS, &s, &e))
		return cli_error(&e);
	int from = store_schema_version(s);
	int rc = store_migrate(s, a->to, &e);
	int to = store_schema_version(s);
	store_close(s);
	if (rc)
		return cli_error(&e);
	if (from == to)
		printf("%s: schema version %d, nothing to do\n", path, to);
	else
		printf("%s: schema version %d -> %d\n", path, from, to);
	return 0;
}

static int db_info(struct db_args *a)
{
	struct lab_err e = {0};
	struct store *s;
	struct stat st;
	const char *path = store_default_path(a->db);
	if (store_open(path, STORE_READONLY | STORE_AS_IS, &s, &e))
		return cli_error(&e);
	int64_t bytes = stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
	char *wal = xasprintf("%s-wal", path);
	int64_t wal_bytes = stat(wal, &st) == 0 ? (int64_t)st.st_size : 0;
	free(wal);
	printf("database:        %s\n", path);
	printf("schema version:  %d (this emmclab: %d)%s\n", store_schema_version(s),
	       store_schema_latest(),
	       store_schema_version(s) < store_schema_latest() ? " - run `emmclab db migrate`" : "");
	printf("file size:       %" PRId64 " bytes (+ %" PRId64 " in the WAL)\n", bytes, wal_bytes);
	int64_t pages, page_size, free_pages;
	struct lab_err pe = {0};
	store_pages(s, &pages, &page_size, &free_pages, &pe); /* -1 where unknown */
	printf("pages:           %" PRId64 " x %" PRId64 " bytes, %" PRId64 " free\n", pages,
	       page_size, free_pages);
	printf("rows:\n");
	for (int i = 0; store_info_tables[i]; i++) {
		int64_t n = table_rows(s, store_info_tables[i]);
		if (n >= 0)
			printf("  %-12s %" PRId64 "\n", store_info_tables[i], n);
	}
	int64_t samples = table_rows(s, "sample");
	if (samples > 0)
		printf("bytes per sample: %.1f (whole file / samples)\n",
		       (double)(bytes + wal_bytes) / (double)samples);
	struct lab_buf rep;
	int problems = 0;
	lab_buf_init(&rep, 1u << 20);
	int rc = store_check(s, &rep, &problems, &e);
	store_close(s);
	if (rc) {
		lab_buf_free(&rep);
		return cli_error(&e);
	}
	printf("integrity:       %s\n", problems ? "PROBLEMS (run `emmclab db check`)" : "ok");
	lab_buf_free(&rep);
	return problems ? 3 : 0;
}

static int db_check(struct db_args *a)
{
	struct lab_err e = {0};
	struct store *s;
	const char *path = store_default_path(a->db);
	if (store_open(path, STORE_READONLY | STORE_AS_IS, &s, &e))
		return cli_error(&e);
	struct lab_buf rep;
	int problems = 0;
	lab_buf_init(&rep, 1u << 20);
	int rc = store_check(s, &rep, &problems, &e);
	store_close(s);
	if (rc) {
		lab_buf_free(&rep);
		return cli_error(&e);
	}
	if (problems) {
		fputs(lab_buf_cstr(&rep), stderr);
		fprintf(stderr, "emmclab: %s: %d problem%s found\n", path, problems,
			problems == 1 ? "" : "s");
	} else {
		printf("%s: ok (quick_check, foreign_key_check)\n", path);
	}
	lab_buf_free(&rep);
	return problems ? 3 : 0;
}

static int db_export(struct db_args *a)
{
	struct lab_err e = {0};
	struct store *s;
	enum store_export_format fmt = EXPORT_CSV;
	int original = 0;
	if (a->format && strcmp(a->format, "json") == 0) {
		fmt = EXPORT_JSON;
	} else if (a->format && strcmp(a->format, "csv") != 0) {
		fprintf(stderr, "emmclab: db export: --format is csv or json, not '%s'\n", a->format);
		return 2;
	}
	if (a->layout) {
		if (strcmp(a->layout, "original") != 0) {
			fprintf(stderr, "emmclab: db export: --layout is 'original', not '%s'\n",
				a->layout);
			return 2;
		}
		if (!a->run) {
			fprintf(stderr, "emmclab: db export: --layout original needs --run ID\n");
			return 2;
		}
		if (a->format) {
			fprintf(stderr, "emmclab: db export: --layout original and --format exclude each other\n");
			return 2;
		}
		original = 1;
	}
	const char *path = store_default_path(a->db);
	if (store_open(path, STORE_READONLY, &s, &e))
		return cli_error(&e);
	int64_t run = 0;
	if (a->run && store_run_find(s, a->run, &run, &e)) {
		store_close(s);
		return cli_error(&e);
	}
	/* -o FILE is written to a temporary name and renamed: never half a file. */
	FILE *f = stdout;
	char *tmp = NULL;
	if (a->out && strcmp(a->out, "-") != 0) {
		tmp = xasprintf("%s.tmp.%ld", a->out, (long)getpid());
		f = fopen(tmp, "we");
		if (!f) {
			lab_err_set(&e, LAB_EINFRA, "%s: %s", a->out, strerror(errno));
			free(tmp);
			store_close(s);
			return cli_error(&e);
		}
	}
	int exact = 1, rc;
	size_t n = 0;
	if (original)
		rc = store_export_original(s, run, f, &exact, &e);
	else
		rc = store_export(s, run, fmt, f, &n, &e);
	store_close(s);
	if (tmp) {
		if (fclose(f) != 0 && rc == LAB_OK)
			rc = lab_err_set(&e, LAB_EINFRA, "%s: %s", a->out, strerror(errno));
		if (rc == LAB_OK && rename(tmp, a->out) != 0)
			rc = lab_err_set(&e, LAB_EINFRA, "%s: %s", a->out, strerror(errno));
		if (rc)
			unlink(tmp);
		free(tmp);
	}
	if (rc)
		return cli_error(&e);
	if (original && !exact)
		fprintf(stderr, "emmclab: warning: run %" PRId64 " was imported from a file with lines "
				"that cannot be reproduced (blank lines, late comments, skipped bad lines "
				"or non-canonical numbers); this output is not byte-identical to it\n", run);
	return 0;
}

static int db_merge(struct db_args *a)
{
	struct lab_err e = {0};
	struct store *s;
	if (a->nrest != 1) {
		fprintf(stderr, "emmclab: db merge: give exactly one source database\n");
		return cli_usage("db");
	}
	const char *path = store_default_path(a->db);
	if (store_open(path, 0, &s, &e))
		return cli_error(&e);
	int copied, skipped, conflicts;
	struct lab_buf report;
	lab_buf_init(&report, 1 << 20);
	int rc = store_merge_report(s, a->rest[0], &copied, &skipped, &conflicts, &report, &e);
	store_close(s);
	if (report.len) { /* board names and paths: control bytes escaped */
		FILE *es = lab_text_stream(stderr);
		fputs(lab_buf_cstr(&report), es ? es : stderr);
		if (es)
			fclose(es);
	}
	lab_buf_free(&report);
	if (rc)
		return cli_error(&e);
	printf("%s: merged %d run%s from %s (%d already present", path, copied,
	       copied == 1 ? "" : "s", a->rest[0], skipped);
	if (conflicts)
		printf(", %d conflict%s: see above)\n", conflicts, conflicts == 1 ? "" : "s");
	else
		printf(")\n");
	return conflicts ? 1 : 0; /* the database is not the union: someone must look */
}

/* Listings quote paths, board names and import sources: printed through
 * lab_text_stream (control bytes escaped).  Export writes its own formats. */
static int listed(int (*fn)(struct db_args *), struct db_args *a)
{
	FILE *real = stdout, *safe = lab_text_stream(real);
	if (safe)
		stdout = safe;
	int rc = fn(a);
	if (safe) {
		stdout = real;
		fclose(safe);
	}
	return rc;
}

int cmd_db(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	struct db_args a;
	if (argc < 2) {
		fprintf(stderr, "emmclab: db: which subcommand? migrate, info, check, export or merge\n");
		return cli_usage("db");
	}
	const char *sub = argv[1];
	int rc = db_parse(sub, argc - 1, argv + 1, &a);
	if (rc)
		return rc < 0 ? 0 : rc; /* -1: --help was shown */
	if (strcmp(sub, "merge") == 0)
		return listed(db_merge, &a);
	if ((rc = no_extra(sub, &a)))
		return rc;
	if (strcmp(sub, "migrate") == 0)
		return listed(db_migrate, &a);
	if (strcmp(sub, "info") == 0)
		return listed(db_info, &a);
	if (strcmp(sub, "check") == 0)
		return listed(db_check, &a);
	if (strcmp(sub, "export") == 0)
		return db_export(&a);
	fprintf(stderr, "emmclab: db: unknown subcommand '%s' (migrate, info, check, export, merge)\n",
		sub);
	return cli_usage("db");
}
