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
#include "plan.h"
#include "progress.h"
#include "schedule.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
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

enum { O_NO_REPORT = CLI_LONG_ONLY, O_NO_UPLOAD, O_WITH_SIM, O_LOG_FORMAT, O_STATE_DIR, O_DRY_RUN, O_RESUME };

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
	{"dry-run", O_DRY_RUN, NULL,
	 "print the schedule (per board: jobs, modes, order, iterations) with an estimate from past runs; touch nothing", 0},
	{"log-format", O_LOG_FORMAT, "text|json",
	 "stderr log: text (default; with a live per-board view on a terminal) or json (one object a line)", 0},
	{"state-dir", O_STATE_DIR, "DIR",
	 "directory of the live progress file `status` reads (default $EMMCLAB_STATE_DIR, else .DB.live beside the database)", 0},
	{"resume", O_RESUME, "RUN",
	 "continue an interrupted run (RUN: id or uuid; default the newest unfinished run of the "
	 "plan): stored iterations are kept, interrupted ones run again",
	 CLI_OPTIONAL},
	{NULL, 0, NULL, NULL, 0},
};

/* The run's own notes on stderr: "emmclab: ..." lines, or with --log-format
 * json one {"event":"log"} object each, so every line is JSON (docs/running.md). */
static struct progress *json_log;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (json_log) {
		progress_vlog(json_log, fmt, ap);
	} else {
		fputs("emmclab: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

/* --log-format json: the closing summary as one object (docs/running.md). */
static void print_summary_json(const struct run_result *r)
{
	char ts[40];
	progress_ts(ts, sizeof ts);
	fprintf(stderr,
		"{\"ts\":\"%s\",\"event\":\"summary\",\"run\":%lld,\"status\":\"%s\",\"wall_s\":%.1f,\"jobs\":%d,"
		"\"jobs_ok\":%d,\"jobs_infra\":%d,\"jobs_mismatch\":%d,\"jobs_skipped\":%d,"
		"\"iterations\":%d,\"samples\":%d,\"events\":%d,\"boards_quarantined\":%d}\n",
		ts, (long long)r->run_id, r->aborted ? "aborted" : "finished", (double)r->wall_ms / 1000.0,
		r->jobs, r->jobs_ok, r->jobs_infra, r->jobs_mismatch, r->jobs_skipped, r->iterations,
		r->samples, r->events, r->boards_quarantined);
}

/* --dry-run: the schedule and its estimate; the database is only read, and
 * only when it exists (a first run has no history). */
static int dry_run_print(struct lab_cfg *lab, const char *db)
{
	struct lab_err e = {0};
	struct plan *p = NULL;
	struct schedule_res *shared = NULL;
	if (plan_expand(lab, &p, &e))
		return cli_error(&e);
	if (schedule_res_new(lab, &shared, &e)) {
		plan_free(p);
		return cli_error(&e);
	}
	schedule_res_free(shared);
	struct store *s = NULL;
	if (access(db, F_OK) == 0 && store_open(db, STORE_READONLY, &s, &e)) {
		fprintf(stderr, "emmclab: run --dry-run: %s: estimates without history\n", e.msg);
		s = NULL;
	}
	struct schedule_est est;
	e = (struct lab_err){0};
	int rc = schedule_estimate(lab, p, s, &est, &e);
	if (rc == LAB_OK)
		schedule_print(stdout, lab, p, &est);
	schedule_est_free(&est);
	if (s)
		store_close(s);
	plan_free(p);
	return rc ? cli_error(&e) : 0;
}

int cmd_run(struct cli *cli, int argc, char **argv)
{
	const char *db = getenv("EMMCLAB_DB");
	const char *report = NULL;
	const char *tdir = NULL;
	bool with_sim = false, no_report = false, no_upload = false, dry_run = false;
	const char *baseline = NULL;
	const char *state_dir = NULL;
	enum progress_format log_format = PROGRESS_TEXT;
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
		case O_STATE_DIR: state_dir = optarg; break;
		case O_DRY_RUN: dry_run = true; break;
		case O_LOG_FORMAT:
			if (strcmp(optarg, "text") == 0) {
				log_format = PROGRESS_TEXT;
			} else if (strcmp(optarg, "json") == 0) {
				log_format = PROGRESS_JSON;
			} else {
				fprintf(stderr, "emmclab: run: --log-format is text or json, not '%s'\n", optarg);
				return cli_usage("run");
			}
			break;
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
	if (dry_run) {
		int x = dry_run_print(lab, db);
		config_free(lab);
		return x;
	}
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
	char *sdir = progress_state_dir(state_dir, db);
	struct progress_opts po = {.out = cli->quiet ? NULL : stderr, .format = log_format,
				   .live = !cli->quiet && isatty(STDERR_FILENO), .state_dir = sdir};
	struct progress *prog = progress_new(&po);
	/* the log and the tables quote DUT text (kernel versions, part labels,
	 * console lines): through lab_text_stream, control bytes escaped.  The
	 * progress output is not: its JSON is escaped by the encoder and its live
	 * block is made of our own terminal sequences and safe names. */
	FILE *log = lab_text_stream(stderr), *out = lab_text_stream(stdout);
	if (log)
		setvbuf(log, NULL, _IOLBF, 0);
	struct run_opts o = {.log = cli->quiet ? NULL : log ? log : stderr, .verbose = cli->verbose,
			     .transcript_dir = tdir, .slot_retries = 1, .progress = prog,
			     .resume = resume};
	struct run_result res;
	rc = run_plan(lab, s, &o, &res, &e);
	if (log_format == PROGRESS_JSON && !cli->quiet)
		json_log = prog;
	if (with_sim)
		sim_ctl(self, "stop", NULL, NULL);
	free(labfile);
	free(self);
	int exit_code = 0;
	if (log)
		fclose(log);
	if (rc && res.run_id == 0) {
		if (out)
			fclose(out);
		exit_code = cli_error(&e);
		json_log = NULL;
		progress_free(prog);
		free(sdir);
		store_close(s);
		config_free(lab);
		return exit_code;
	}
	if (rc)
		exit_code = cli_error(&e);

	if (log_format == PROGRESS_JSON)
		print_summary_json(&res);
	else
		fprintf(stderr,
			"emmclab: run %lld %s in %.1f s: %d jobs (%d ok, %d infrastructure, %d mode mismatch, "
			"%d skipped), %d iterations, %d samples stored, %d events\n",
			(long long)res.run_id, res.aborted ? "aborted" : "finished",
			(double)res.wall_ms / 1000.0, res.jobs, res.jobs_ok, res.jobs_infra,
			res.jobs_mismatch, res.jobs_skipped, res.iterations, res.samples, res.events);
	if (res.store_busy_waits)
		say("the results store was busy %d time(s), %.1f s in all (another process held the "
		    "database lock); nothing was lost",
		    res.store_busy_waits, (double)res.store_busy_ms / 1000.0);
	if (res.boards_quarantined)
		say("%d board(s) quarantined", res.boards_quarantined);

	/* Warm-up outliers leave the statistics when a suite of the plan says so
	 * (they stay visible in every report). */
	/* The boards' memory is free now; give its pages back before the
	 * end-of-night report loads every sample of the night, so the two do not
	 * add up in the run's peak (glibc keeps freed heap pages resident), and
	 * let the report's large arrays be mappings of their own. */
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	lab_mem_bulk_mapped();
	struct report_opts ro;
	report_opts_init(&ro);
	for (size_t i = 0; i < lab->plan->suites.n; i++) {
		const struct suite_cfg *sc = config_suite(lab, lab->plan->suites.v[i]);
		if (sc && sc->exclude_warmup)
			ro.exclude_warmup = true;
	}
	struct lab_err re = {0}, he = {0};
	if (report_run_outputs(s, res.run_id, &ro, stdout, report, &re, &he)) {
		if (he.msg[0])
			say("HTML report: %s", he.msg);
		else
			say("comparison table%s: %s", report ? " and HTML report" : "", re.msg);
	} else if (report) {
		say("HTML report written to %s", report);
	}
	fflush(stdout);
	if (upload_config_targets(lab) && !no_upload) {
		/* One immediate attempt; whatever fails stays in the outbox for
		 * `emmclab upload --retry` (cron or a timer), nothing is lost. */
		struct loop *l = loop_new();
		struct upload_stats st = {0};
		struct lab_err ue = {0};
		struct upload_send_opts uo = {.run_id = res.run_id, .max_time_ms = 0};
		if (!l || upload_send(s, l, &uo, &st, &ue))
			say("uploads: %s", ue.msg[0] ? ue.msg : "cannot start");
		else
			say("uploads: %d sent, %d left in the outbox (emmclab upload --retry)",
				st.sent, st.unsent);
		loop_free(l);
	}
	if (res.integrity_failures > 0) {
		say("%d power-fail iteration(s) lost acknowledged data",
			res.integrity_failures);
		if (exit_code == 0)
			exit_code = 1;
	}
	if (baseline) {
		int nreg = 0;
		struct lab_err be = {0};
		if (regress_check(s, res.run_id, baseline, &nreg, out ? out : stdout, &be))
			say("baseline check: %s", be.msg);
		else if (nreg > 0 && exit_code == 0)
			exit_code = 1;
	}
	/* Incomplete results (infrastructure failures, mode mismatches, an abort,
	 * nothing completed) are 3 and take precedence over 1: the finding may be
	 * incomplete too.  Both are printed above. */
	if (res.jobs_infra > 0 || res.jobs_mismatch > 0 || res.aborted || res.jobs_ok == 0)
		exit_code = 3;
	json_log = NULL;
	progress_free(prog);
	free(sdir);
	if (out)
		fclose(out);
	store_close(s);
	config_free(lab);
	return exit_code;
}
