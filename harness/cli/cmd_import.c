/* cmd_import.c - `emmclab import`: published measurements (CSV) into the results store. */
#include "cli.h"
#include "store.h"
#include "store_csv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = CLI_LONG_ONLY, OPT_SKIP_BAD, OPT_FORCE };

const struct cli_opt cmd_import_opts[] = {
	{"db", OPT_DB, "PATH", CLI_DB_HELP, 0},
	{"skip-bad", OPT_SKIP_BAD, NULL,
	 "import the good lines of a file with bad ones (still reported)", 0},
	{"force", OPT_FORCE, NULL, "import rows again that were imported before (same content)", 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_import(struct cli *cli, int argc, char **argv)
{
	const char *db = NULL;
	int skip_bad = 0, c;
	struct store_import_opts o = {0};
	struct cli_getopt g;
	cli_getopt_init(&g, "import");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case OPT_DB: db = optarg; break;
		case OPT_SKIP_BAD: skip_bad = 1; break;
		case OPT_FORCE: o.force = 1; break;
		default:
			return cli_getopt_fail(&g);
		}
	}
	int nfiles = argc - optind;
	if (nfiles < 1) {
		fprintf(stderr, "emmclab: import: no file given\n");
		return cli_usage("import");
	}
	char **paths = argv + optind;
	struct csv_file **files = xcalloc((size_t)nfiles, sizeof *files);
	int64_t *runs = xcalloc((size_t)nfiles, sizeof *runs);
	int worst = 0; /* highest exit code so far */
	size_t bad = 0;

	/* Read and check every file first: each bad line is reported, and a
	 * file that fails (or has bad lines, without --skip-bad) stops all. */
	for (int i = 0; i < nfiles; i++) {
		struct lab_err e = {0};
		if (csv_read_file(paths[i], &files[i], &e)) {
			int code = cli_error(&e);
			if (code > worst)
				worst = code;
			continue;
		}
		struct csv_file *f = files[i];
		for (size_t k = 0; k < f->nbad; k++)
			fprintf(stderr, "%s:%d: %s\n", paths[i], f->bad[k].line, f->bad[k].reason);
		if (f->nbad_total > f->nbad)
			fprintf(stderr, "%s: ... and %zu more bad lines\n", paths[i],
				f->nbad_total - f->nbad);
		bad += f->nbad_total;
		if (f->nrows == 0) {
			fprintf(stderr, "emmclab: %s: no good rows to import\n", paths[i]);
			if (worst < 2)
				worst = 2;
		}
	}
	int rc = 0;
	if (worst) {
		fprintf(stderr, "emmclab: nothing imported\n");
		rc = worst;
		goto out;
	}
	if (bad && !skip_bad) {
		fprintf(stderr, "emmclab: %zu bad line%s; nothing imported (--skip-bad imports the good "
				"lines)\n", bad, bad == 1 ? "" : "s");
		rc = 2;
		goto out;
	}
	struct lab_err e = {0};
	struct store *s;
	const char *path = store_default_path(db);
	if (store_open(path, 0, &s, &e)) {
		rc = cli_error(&e);
		goto out;
	}
	if (store_import(s, files, (size_t)nfiles, &o, runs, &e)) {
		store_close(s);
		rc = cli_error(&e);
		fprintf(stderr, "emmclab: nothing imported\n");
		goto out;
	}
	store_close(s);
	for (int i = 0; i < nfiles && !cli->quiet; i++)
		printf("%s: run %" PRId64 " (%s layout, %zu samples%s) in %s\n", paths[i], runs[i],
		       csv_layout_name(files[i]->layout), files[i]->nrows,
		       files[i]->exact ? "" : "; not byte-exact for --layout original", path);
	if (bad)
		fprintf(stderr, "emmclab: warning: %zu bad line%s skipped\n", bad, bad == 1 ? "" : "s");
out:
	for (int i = 0; i < nfiles; i++)
		csv_free(files[i]);
	free(files);
	free(runs);
	return rc;
}
