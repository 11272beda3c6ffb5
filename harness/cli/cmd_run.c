/* cmd_run.c - `emmclab run`: load a plan and its lab, run it, print the mode
 * table, write the HTML report, check the baseline. */
#include "cli.h"
#include "config.h"
#include "baseline.h"
#include "report.h"
#include "run.h"
#include "store.h"
#include "upload.h"
#include "loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run `emmclab sim start|stop LAB` as a child of this CLI (blocking is fine
 * here: this is the command line, not the event loop). */
static int sim_ctl(const char *self, const char *verb, const char *lab, const char *flag)
{
	char *argv[] = {(char *)self, "sim", (char *)verb, (char *)lab, (char *)flag, NULL};
	if (lab == NULL)
		argv[3] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(2, 1); /* stdout carries the comparison table only */
		execv(self, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *self_path(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return xstrdup("emmclab");
	buf[n] = '\0';
	return xstrdup(buf);
}

enum { O_NO_REPORT = CLI_LONG_ONLY, O_NO_UPLOAD, O_WITH_SIM, O_RESUME };

const struct cli_opt cmd_run_opts[] = {
	{"db", 'd', "PATH",
	 "results database (default $EMMCLAB_DB, the plan's or lab's results:, results/lab.db)", 0},
	{"report", 'r', "PATH",
	 "HTML report of the run (default the plan's report_html:, results/report.html)", 0},
	{"no-report", O_NO_REPORT, NULL, "write no HTML report", 0},
	{"no-upload", O_NO_UPLOAD, NULL, "send no uploads at the end of the run", 0},
	{"transcripts", 't', "DIR", "directory of the console transcripts (one file per boot)", 0},
	{"with-sim", O_WITH_SIM, NULL,
	 "start the simulated lab of the plan's lab file first, stop it after", 0},
	{"baseline", 'b', "NAME",
	 "check the run against this regression baseline (exit 1 on a regression)", 0},
	{"resume", O_RESUME, "RUN",
	 "continue an interrupted run (RUN: id or uuid; default the newest unfinished run of the "
	 "plan): stored iterations are kept, interrupted ones run again",
	 CLI_OPTIONAL},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_run(struct cli *cli, int argc, char **argv)
{
	const char *db = getenv("EMMCLAB_DB");
	const char *report = NULL;
	const char *tdir = NULL;
	bool with_sim = false, no_report = false, no_upload = false;
	const char *baseline = NULL;
	const char *resume = NULL;
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "run");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'r': report = optarg; break;
		case O_NO_REPORT: no_report = true; break;
		case O_NO_UPLOAD: no_upload = true; break;
		case 't': tdir = optarg; break;
		case O_WITH_SIM: with_sim = true; break;
		case 'b': baseline = optarg; break;
		case O_RESUME: resume = optarg ? optarg : ""; break;
		default: return cli_getopt_fail(&g);
		}
	}
	if (optind >= argc)
		return cli_usage("run");
	struct lab_err e = {0};
	struct lab_cfg *lab = NULL;
	int rc = config_load((const char *const *)argv + optind, (size_t)(argc - optind), &lab, &e);
	if (rc)
		return cli_error(&e);
	if (!lab->plan) {
		fprintf(stderr, "emmclab: run needs a plan file (a file with a 'plan:' section)\n");
		config_free(lab);
		return 2;
	}
	if (!db)
		db = lab->plan->results && lab->plan->results[0] ? lab->plan->results
		     : lab->results && lab->results[0]	   ? lab->results
							   : "results/lab.db";
	if (!report && !no_report)
		report = lab->plan->report_html && lab->plan->report_html[0] ? lab->plan->report_html
									 : "results/report.html";

	char *self = self_path();
	char *labfile = NULL;
	if (with_sim) {
		labfile = config_path(lab->plan->file, lab->plan->lab);
		if (!cli->quiet)
			fprintf(stderr, "emmclab: starting the simulated lab %s\n", labfile);
		/* Resuming after a crash: the simulator the dead run left is reused. */
		int src = sim_ctl(self, "start", labfile, resume ? "--reuse" : NULL);
		if (src != 0) {
			fprintf(stderr, "emmclab: could not start the simulated lab (exit %d)\n", src);
			free(labfile);
			free(self);
			config_free(lab);
			return 3;
		}
	}

	struct store *s = NULL;
	rc = store_open(db, 0, &s, &e);
	if (rc) {
		int x = cli_error(&e);
		if (with_sim)
			sim_ctl(self, "stop", NULL, NULL);
		free(labfile);
		free(self);
		config_free(lab);
		return x;
	}
	struct run_opts o = {.log = cli->quiet ? NULL : stderr, .verbose = cli->verbose,
			     .transcript_dir = tdir, .slot_retries = 1, .resume = resume};
	struct run_result res;
	rc = run_plan(lab, s, &o, &res, &e);
	if (with_sim)
		sim_ctl(self, "stop", NULL, NULL);
	free(labfile);
	free(self);
	int exit_code = 0;
	if (rc && res.run_id == 0) {
		exit_code = cli_error(&e);
		store_close(s);
		config_free(lab);
		return exit_code;
	}
	if (rc)
		exit_code = cli_error(&e);

	fprintf(stderr,
		"emmclab: run %lld %s in %.1f s: %d jobs (%d ok, %d infrastructure, %d mode mismatch, "
		"%d skipped), %d iterations, %d samples stored, %d events\n",
		(long long)res.run_id, res.aborted ? "aborted" : "finished", (double)res.wall_ms / 1000.0,
		res.jobs, res.jobs_ok, res.jobs_infra, res.jobs_mismatch, res.jobs_skipped,
		res.iterations, res.samples, res.events);
	if (res.store_busy_waits)
		fprintf(stderr, "emmclab: the results store was busy %d time(s), %.1f s in all "
				"(another process held the database lock); nothing was lost\n",
			res.store_busy_waits, (double)res.store_busy_ms / 1000.0);
	if (res.boards_quarantined)
		fprintf(stderr, "emmclab: %d board(s) quarantined\n", res.boards_quarantined);

	/* Warm-up outliers leave the statistics when a suite of the plan says so
	 * (they stay visible in every report). */
	struct report_opts ro;
	report_opts_init(&ro);
	for (size_t i = 0; i < lab->plan->suites.n; i++) {
		const struct suite_cfg *sc = config_suite(lab, lab->plan->suites.v[i]);
		if (sc && sc->exclude_warmup)
			ro.exclude_warmup = true;
	}
	struct lab_err re = {0};
	if (report_print_mode_table_opts(s, res.run_id, &ro, stdout, &re))
		fprintf(stderr, "emmclab: comparison table: %s\n", re.msg);
	fflush(stdout);
	if (report) {
		struct lab_err he = {0};
		if (report_write_file(s, res.run_id, "html", report, &ro, &he))
			fprintf(stderr, "emmclab: HTML report: %s\n", he.msg);
		else
			fprintf(stderr, "emmclab: HTML report written to %s\n", report);
	}
	if (upload_config_targets(lab) && !no_upload) {
		/* One immediate attempt; whatever fails stays in the outbox for
		 * `emmclab upload --retry` (cron or a timer), nothing is lost. */
		struct loop *l = loop_new();
		struct upload_stats st = {0};
		struct lab_err ue = {0};
		struct upload_send_opts uo = {.run_id = res.run_id, .max_time_ms = 0};
		if (!l || upload_send(s, l, &uo, &st, &ue))
			fprintf(stderr, "emmclab: uploads: %s\n", ue.msg[0] ? ue.msg : "cannot start");
		else
			fprintf(stderr, "emmclab: uploads: %d sent, %d left in the outbox (emmclab upload --retry)\n",
				st.sent, st.unsent);
		loop_free(l);
	}
	if (res.integrity_failures > 0) {
		fprintf(stderr, "emmclab: %d power-fail iteration(s) lost acknowledged data\n",
			res.integrity_failures);
		if (exit_code == 0)
			exit_code = 1;
	}
	if (baseline) {
		int nreg = 0;
		struct lab_err be = {0};
		if (regress_check(s, res.run_id, baseline, &nreg, stdout, &be))
			fprintf(stderr, "emmclab: baseline check: %s\n", be.msg);
		else if (nreg > 0 && exit_code == 0)
			exit_code = 1;
	}
	/* Incomplete results (infrastructure failures, mode mismatches, an abort,
	 * nothing completed) are 3 and take precedence over 1: the finding may be
	 * incomplete too.  Both are printed above. */
	if (res.jobs_infra > 0 || res.jobs_mismatch > 0 || res.aborted || res.jobs_ok == 0)
		exit_code = 3;
	store_close(s);
	config_free(lab);
	return exit_code;
}
