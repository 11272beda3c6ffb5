/* cmd_status.c - `emmclab status`: runs in progress (their progress files),
 * recent runs, events of the last run, quarantined boards and the upload
 * outbox, read-only. */
#include "cli.h"
#include "health.h"
#include "progress.h"
#include "results.h"
#include "store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_DB = CLI_LONG_ONLY, OPT_LAST, OPT_STATE_DIR };

const struct cli_opt cmd_status_opts[] = {
	{"db", OPT_DB, "PATH", CLI_DB_HELP, 0},
	{"last", OPT_LAST, "N", "show the newest N runs (default 10)", 0},
	{"state-dir", OPT_STATE_DIR, "DIR",
	 "where runs keep their live progress (default $EMMCLAB_STATE_DIR, else .DB.live beside the database)", 0},
	{NULL, 0, NULL, NULL, 0},
};

static const char *dash(const char *t)
{
	return t ? t : "-";
}

/* arg: the kinds seen (results_source_kind), for the provenance lines. */
struct kinds_seen {
	bool simulated, virt, imported, mixed;
};

static void print_run(const struct store_run_summary *r, int n, void *arg)
{
	struct kinds_seen *k = arg;
	const char *kind = results_source_kind(r->source);
	k->simulated |= strcmp(kind, "simulated") == 0;
	k->virt |= strcmp(kind, "virtual") == 0;
	k->imported |= strcmp(kind, "imported") == 0;
	k->mixed |= strcmp(kind, "mixed") == 0;
	if (n == 0)
		printf("  %5s  %-20s  %-8s  %-28s  %5s %5s %5s %5s %8s\n", "run", "started", "status",
		       "source / plan", "jobs", "ok", "infra", "mism", "samples");
	char src[64];
	snprintf(src, sizeof src, "%s%s%s", dash(r->source), r->plan ? " / " : "",
		 r->plan ? r->plan : "");
	printf("  %5lld  %-20s  %-8s  %-28.28s  %5lld %5lld %5lld %5lld %8lld\n", (long long)r->id,
	       dash(r->started_at), dash(r->status), src, (long long)r->jobs, (long long)r->ok,
	       (long long)r->infra, (long long)r->mismatch, (long long)r->samples);
}

static void print_event_kind(const struct store_event_kind *k, void *arg)
{
	LAB_UNUSED(arg);
	printf("  %-16s %5lld  last: %s%s%s\n", dash(k->kind), (long long)k->count, dash(k->message),
	       k->board ? " on " : "", k->board ? k->board : "");
}

static void print_quarantine(const struct store_quarantine *q, void *arg)
{
	LAB_UNUSED(arg);
	printf("  %-16s since %s (run %lld): %s\n", dash(q->board), dash(q->at), (long long)q->run_id,
	       dash(q->message));
}

static void print_upload(const struct store_outbox_row *u, void *arg)
{
	int *n = arg;
	if ((*n)++ == 0)
		printf("  %5s  %5s  %-14s %-9s %-8s %4s  %-20s  %s\n", "id", "run", "target", "kind",
		       "state", "try", "next", "last error");
	printf("  %5lld  %5lld  %-14.14s %-9s %-8s %4lld  %-20s  %s\n", (long long)u->id,
	       (long long)u->run_id, u->target, u->kind, u->state, (long long)u->attempts,
	       dash(u->next_at), dash(u->last_error));
}

static void print_health(int64_t part_id, const char *label, const char *cid,
			 const struct store_health_sum *h, void *arg)
{
	LAB_UNUSED(part_id);
	int *n = arg;
	char now[160], trend[96];
	(*n)++;
	health_now_text(h, now, sizeof now);
	health_trend_text(h, trend, sizeof trend);
	printf("  %-20s %s\n    latest %s (%s a job, from %s): %s\n    trend: %s\n", label,
	       cid[0] ? cid : "-", h->last_at, h->last_phase, h->last_src[0] ? h->last_src : "?", now,
	       trend);
	if (h->flagged_jobs)
		printf("    WORN: %d job%s flagged; latest: %s\n", h->flagged_jobs,
		       h->flagged_jobs == 1 ? "" : "s", h->flag);
}

/* One run in progress: a line for the run, one per board not done yet. */
static void print_live(const struct progress_view *v, void *arg)
{
	LAB_UNUSED(arg);
	char el[16], eta[16];
	progress_fmt_duration(el, sizeof el, v->started > 0 ? (double)(time(NULL) - v->started) : -1);
	progress_fmt_duration(eta, sizeof eta, v->alive ? v->eta_s : -1);
	int pct = v->total > 0 ? (int)(v->done * 100 / v->total) : 0;
	if (!v->alive) {
		printf("  run %lld (plan %s, lab %s): NOT RUNNING: %s; %lld/%lld slots were done "
		       "(continue it with emmclab run --resume %lld)\n",
		       (long long)v->run_id, v->plan, v->lab, v->why_dead, (long long)v->done,
		       (long long)v->total, (long long)v->run_id);
		return;
	}
	printf("  run %lld (plan %s, lab %s, pid %lld): running for %s, %lld/%lld slots (%d%%), ETA %s\n",
	       (long long)v->run_id, v->plan, v->lab, (long long)v->pid, el, (long long)v->done,
	       (long long)v->total, pct, eta);
	for (size_t i = 0; i < v->nboards; i++) {
		const struct progress_board_view *b = &v->boards[i];
		if (strcmp(b->stage, "done") == 0)
			continue;
		progress_fmt_duration(eta, sizeof eta, b->eta_s);
		char job[96];
		snprintf(job, sizeof job, "%s/%s", b->suite, b->mode);
		printf("    %-12s %-14s %-26s it %d/%d  slot %lld/%lld  ETA %s\n", b->name, b->stage, job,
		       b->iteration, b->iterations,
		       (long long)(b->done < b->total ? b->done + 1 : b->total), (long long)b->total, eta);
	}
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	const char *db = NULL;
	const char *state_dir = NULL;
	int64_t last = 10;
	struct cli_getopt g;
	int c;
	cli_getopt_init(&g, "status");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		if (c == OPT_DB) {
			db = optarg;
		} else if (c == OPT_STATE_DIR) {
			state_dir = optarg;
		} else if (c == OPT_LAST) {
			if (lab_parse_i64(optarg, &last) != LAB_OK || last <= 0) {
				fprintf(stderr,
					"emmclab: status: --last wants a positive number, not '%s'\n",
					optarg);
				return cli_usage("status");
			}
		} else {
			return cli_getopt_fail(&g);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emmclab: status: unexpected argument '%s'\n", argv[optind]);
		return cli_usage("status");
	}
	struct lab_err e = {0};
	struct store *s;
	const char *path = store_default_path(db);
	if (store_open(path, STORE_READONLY, &s, &e))
		return cli_error(&e);
	/* sources, board names and event messages come from DUTs, imports and
	 * configs: everything goes through lab_text_stream (control bytes escaped) */
	FILE *real = stdout, *safe = lab_text_stream(real);
	if (safe)
		stdout = safe;
	int n, rc;
	printf("database %s (schema %d)\n", path, store_schema_version(s));
	/* Runs in progress first: what someone in another shell wants to see. */
	char *sdir = progress_state_dir(state_dir, path);
	size_t nlive = 0;
	struct lab_err pe = {0};
	printf("\nin progress (%s):\n", sdir);
	if (progress_scan(sdir, print_live, NULL, &nlive, &pe))
		printf("  (cannot read: %s)\n", pe.msg);
	else if (nlive == 0)
		printf("  (none)\n");
	free(sdir);
	printf("\nruns (newest first):\n");
	struct kinds_seen ks = {0};
	rc = store_runs_recent(s, last, print_run, &ks, &n, &e);
	if (!rc && n == 0)
		printf("  (none)\n");
	if (ks.simulated)
		printf("  simulated: figures from the simulator's model, not measurements\n");
	if (ks.virt)
		printf("  virtual: figures from an emulated board, not a real part\n");
	if (ks.mixed)
		printf("  mixed: runs on boards of several sources\n");
	if (ks.imported)
		printf("  import:NAME: figures imported from files\n");
	int64_t last_run = 0;
	if (!rc)
		rc = store_run_last(s, &last_run, &e);
	if (!rc && last_run) {
		printf("\nevents of run %" PRId64 " by kind:\n", last_run);
		rc = store_event_kinds(s, last_run, print_event_kind, NULL, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	if (!rc) {
		printf("\nquarantined boards:\n");
		rc = store_quarantined(s, 0, print_quarantine, NULL, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	if (!rc) {
		/* docs/running.md, "Part health": each part's latest wear and its trend */
		printf("\npart health (EXT_CSD life time A/B, PRE_EOL_INFO):\n");
		n = 0;
		if (store_schema_version(s) < 7)
			printf("  (schema %d has no health readings: `emmclab db migrate`)\n",
			       store_schema_version(s));
		else if (!(rc = store_health_parts(s, print_health, &n, &e)) && n == 0)
			printf("  (none)\n");
	}
	if (!rc) {
		printf("\nuploads waiting:\n");
		n = 0;
		rc = store_outbox_list(s, 0, false, print_upload, &n, &e);
		if (!rc && n == 0)
			printf("  (none)\n");
	}
	if (safe) {
		stdout = real;
		fclose(safe);
	}
	store_close(s);
	if (rc)
		return cli_error(&e);
	return 0;
}
