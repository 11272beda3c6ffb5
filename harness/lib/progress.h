/*
 * progress.h - what a run is doing, for people and for other processes.
 *
 * The runner reports stages, finished slots, board events and job results
 * here; this module renders them three ways:
 *   text  the runner's familiar "[HH:MM:SS] message" log lines;
 *   live  the same, plus a block at the bottom of a terminal with one line per
 *         board (stage, job, iteration, ETA) and an overall progress bar,
 *         redrawn from a loop timer at most 4 times a second;
 *   json  one JSON object a line per event (docs/running.md lists the fields).
 * Independently of the format it keeps a progress file (JSON, rewritten at most
 * once a second as tmp + rename, so a reader never sees half a file) that
 * `emmclab status` reads from another shell; the file names the writer's pid,
 * its start time and the boot id, so a reader can tell a dead writer from a
 * live one even after a reboot or pid reuse.
 *
 * Loop thread only; progress_run_end() must come before the loop is freed
 * (it stops the timer that run_begin started).  Writes only to the FILE and the directory the caller
 * names; never exits.  ETAs: remaining slots x the board's mean slot time so
 * far, else the per-slot estimate the caller gave (past runs), else unknown.
 */
#ifndef EMMCLAB_PROGRESS_H
#define EMMCLAB_PROGRESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util.h"

struct loop;
struct progress;

enum progress_format { PROGRESS_TEXT, PROGRESS_JSON };

struct progress_opts {
	FILE *out; /* log lines and the live block (NULL: none) */
	enum progress_format format;
	bool live;             /* text only: draw the live block (out is a terminal) */
	const char *state_dir; /* progress file directory (NULL: no file) */
};

struct progress *progress_new(const struct progress_opts *o);
void progress_free(struct progress *p);

/* The run started: boards are added next (in plan order), then the timers start. */
void progress_run_begin(struct progress *p, struct loop *l, int64_t run_id, const char *plan,
                        const char *lab, size_t njobs);
/* Board idx (0-based, in order) named name has nslots slots; est_slot_s > 0
 * is the per-slot estimate from past runs (0: none). */
void progress_board(struct progress *p, size_t idx, const char *name, size_t nslots,
                    double est_slot_s);
/* Board idx is now in stage (copied, at most 31 bytes) for job suite/mode, iteration it
 * of its; slot is the index of the current slot (slots before it are done or dropped). */
void progress_stage(struct progress *p, size_t idx, const char *stage, const char *suite,
                    const char *mode, int it, int its, size_t slot);
/* A slot of board idx finished (all its workloads stored). */
void progress_slot_done(struct progress *p, size_t idx, size_t next_slot);
/* The board has nothing left. */
void progress_board_done(struct progress *p, size_t idx);
/* An infrastructure event, a job result: true when rendered here as JSON (the
 * caller then writes no text line for it). */
bool progress_event(struct progress *p, size_t idx, const char *kind, const char *stage,
                    const char *msg);
bool progress_job(struct progress *p, size_t idx, const char *suite, const char *mode,
                  const char *status, const char *why);
/* A free-form line (the runner's log): "[HH:MM:SS] line" or {"event":"log"}. */
void progress_log(struct progress *p, const char *line);
void progress_vlog(struct progress *p, const char *fmt, va_list ap);
/* The run ended with status (complete, aborted, failed): stops the timers,
 * clears the live block, emits run-end and removes the progress file. */
void progress_run_end(struct progress *p, const char *status);

/* The state directory: opt (--state-dir), else $EMMCLAB_STATE_DIR, else
 * .DB.live beside the results database (results/.lab.db.live), so `run` and `status` pointed at the
 * same database meet without more configuration (caller frees). */
char *progress_state_dir(const char *opt, const char *db);
/* The progress file of run_id in dir (caller frees). */
char *progress_file_path(const char *dir, int64_t run_id);

/* ---- reading (emmclab status) ---- */

struct progress_board_view {
	char name[64], stage[32], suite[64], mode[24];
	int iteration, iterations;
	int64_t done, total;
	double eta_s; /* < 0: unknown */
};

struct progress_view {
	int64_t run_id, pid;
	char plan[128], lab[128], host[128];
	int64_t started, updated; /* unix seconds */
	int64_t done, total;
	double eta_s;
	bool alive; /* the writer is still running */
	char why_dead[128];
	struct progress_board_view *boards;
	size_t nboards;
};

/* Read and check one progress file. */
int progress_read(const char *path, struct progress_view *v, struct lab_err *e);
void progress_view_free(struct progress_view *v);
/* Every progress file in dir, each read into cb (unreadable ones skipped);
 * *n is how many were found. */
int progress_scan(const char *dir, void (*cb)(const struct progress_view *v, void *arg), void *arg,
                  size_t *n, struct lab_err *e);

/* "1h02m", "4m05s", "12s"; "-" when negative. */
void progress_fmt_duration(char *buf, size_t n, double secs);
/* The time now as the JSON lines' "ts": UTC with milliseconds, 2026-12-01T17:04:25.939Z. */
void progress_ts(char *buf, size_t n);

#endif
