/* progress.c: durations, the JSON log (every line one object with the
 * documented fields), ETAs, the progress file (written by a loop timer, read
 * back by status) and its liveness check (own pid alive; a dead pid, another
 * boot, a reused pid are not). */
#include "loop.h"
#include "progress.h"
#include "tap.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/emmclab-test-progress-XXXXXX";

/* Every line of text must be one JSON object with ts and event. */
static int check_lines(const char *text, int *nlines, char *events, size_t n)
{
	*nlines = 0;
	events[0] = '\0';
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		if (!nl)
			return -1;
		json_error_t je;
		json_t *o = json_loadb(p, (size_t)(nl - p), 0, &je);
		if (!o || !json_is_object(o) || !json_is_string(json_object_get(o, "ts")) ||
		    !json_is_string(json_object_get(o, "event"))) {
			json_decref(o);
			return -1;
		}
		lab_strlcat(events, json_string_value(json_object_get(o, "event")), n);
		lab_strlcat(events, " ", n);
		json_decref(o);
		(*nlines)++;
		p = nl + 1;
	}
	return 0;
}

static void count_alive(const struct progress_view *v, void *arg)
{
	*(int *)arg += v->alive;
}

static void edit_file(const char *path, const char *from, const char *to)
{
	char *text = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(path, 1 << 20, &text, &len, &e))
		return;
	char *at = strstr(text, from);
	if (at) {
		FILE *f = fopen(path, "w");
		fwrite(text, 1, (size_t)(at - text), f);
		fputs(to, f);
		fputs(at + strlen(from), f);
		fclose(f);
	}
	free(text);
}

int main(void)
{
	char b[32];
	progress_fmt_duration(b, sizeof b, 3725);
	is_str(b, "1h02m", "hours");
	progress_fmt_duration(b, sizeof b, 245);
	is_str(b, "4m05s", "minutes");
	progress_fmt_duration(b, sizeof b, 12);
	is_str(b, "12s", "seconds");
	progress_fmt_duration(b, sizeof b, 2.5);
	is_str(b, "2.5s", "tenths under 10 s");
	progress_fmt_duration(b, sizeof b, -1);
	is_str(b, "-", "unknown");

	char *d = progress_state_dir(NULL, "results/lab.db");
	is_str(d, "results/.lab.db.live", "state dir beside the database, hidden");
	free(d);
	d = progress_state_dir(NULL, "lab.db");
	is_str(d, ".lab.db.live", "state dir of a bare database name");
	free(d);
	d = progress_state_dir("/run/x", "lab.db");
	is_str(d, "/run/x", "--state-dir wins");
	free(d);
	setenv("EMMCLAB_STATE_DIR", "/run/y", 1);
	d = progress_state_dir(NULL, "lab.db");
	is_str(d, "/run/y", "then $EMMCLAB_STATE_DIR");
	free(d);
	unsetenv("EMMCLAB_STATE_DIR");

	if (!mkdtemp(dir))
		return 1;
	char *sdir = xasprintf("%s/state", dir);

	/* A JSON-logged run with a progress file. */
	char *log = NULL;
	size_t loglen = 0;
	FILE *mem = open_memstream(&log, &loglen);
	struct progress_opts o = {
	    .out = mem, .format = PROGRESS_JSON, .live = true, .state_dir = sdir};
	struct progress *p = progress_new(&o);
	struct loop *l = loop_new();
	progress_run_begin(p, l, 7, "plan-x", "lab \"q\"", 4);
	progress_board(p, 0, "b1", 4, 0);
	progress_board(p, 1, "b2", 2, 10);
	progress_stage(p, 0, "booting", "s", "fua", 1, 2, 0);
	progress_stage(p, 0, "booting", "s", "fua", 1, 2, 0); /* same stage again: no line */
	progress_stage(p, 1, "wait:tftp", "s", "fua", 1, 2, 0);
	ok(progress_event(p, 0, "retry", "running", "once more"),
	   "board events are rendered as JSON");
	ok(progress_job(p, 0, "s", "fua", "ok", NULL), "job results are rendered as JSON");
	progress_log(p, "a \"quoted\" line\twith a tab");
	progress_slot_done(p, 0, 1);
	/* the file is written by the loop timer, at most once a second */
	char *path = progress_file_path(sdir, 7);
	uint64_t end = lab_now_ms() + 3000;
	while (access(path, F_OK) != 0 && lab_now_ms() < end)
		loop_run_once(l, 200);
	ok(access(path, F_OK) == 0, "the loop timer writes the progress file");
	struct progress_view v;
	struct lab_err e = {0};
	ok(progress_read(path, &v, &e) == LAB_OK, "the progress file reads back %s", e.msg);
	is_int(v.run_id, 7, "run id");
	is_int(v.pid, getpid(), "writer pid");
	ok(v.alive, "this process is alive: %s", v.why_dead);
	is_str(v.lab, "lab \"q\"", "strings round-trip through the escaper");
	is_int(v.total, 6, "total slots");
	is_int(v.done, 1, "one slot done");
	is_int(v.nboards, 2, "two boards");
	is_str(v.boards[0].stage, "booting", "board stage");
	is_str(v.boards[1].stage, "wait:tftp", "waiting shows as a stage");
	is_int(v.boards[0].iteration, 1, "iteration");
	ok(v.boards[0].eta_s >= 0, "ETA from the board's own finished slot (%g)",
	   v.boards[0].eta_s);
	ok(v.boards[1].eta_s >= 10 && v.boards[1].eta_s <= 20,
	   "ETA from the estimate: 2 slots x 10 s (%g)", v.boards[1].eta_s);
	progress_view_free(&v);
	size_t nlive = 0;
	int alive = 0;
	ok(progress_scan(sdir, count_alive, &alive, &nlive, &e) == LAB_OK && nlive == 1 &&
	       alive == 1,
	   "scan finds the live run");
	progress_board_done(p, 0);
	progress_board_done(p, 1);
	progress_run_end(p, "complete");
	ok(access(path, F_OK) != 0, "the progress file is removed at the end");
	ok(access(sdir, F_OK) != 0, "and its empty directory");
	progress_free(p);
	loop_free(l);
	fclose(mem);
	int nl = 0;
	char events[512];
	ok(check_lines(log, &nl, events, sizeof events) == 0, "every line is one JSON object: %s",
	   log);
	is_str(events,
	       "run-start stage stage board-event job log slot-done board-done board-done run-end ",
	       "the events in order");
	ok(strstr(log, "\"message\":\"a \\\"quoted\\\" line\\twith a tab\"") != NULL,
	   "log text escaped");
	ok(strstr(log, "\"iteration\":1,\"iterations\":2,\"slot\":1,\"slots\":4") != NULL,
	   "stage fields (slot is 1-based)");
	free(log);

	/* Liveness: a dead writer, another boot, a reused pid. */
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	lab_mkdir_p(sdir, 0755);
	struct progress_opts o2 = {.out = NULL, .format = PROGRESS_TEXT, .state_dir = sdir};
	p = progress_new(&o2);
	l = loop_new();
	progress_run_begin(p, l, 8, "plan-y", "lab", 1);
	progress_board(p, 0, "b1", 1, 0);
	path = (free(path), progress_file_path(sdir, 8));
	end = lab_now_ms() + 3000;
	while (access(path, F_OK) != 0 && lab_now_ms() < end)
		loop_run_once(l, 200);
	progress_free(p); /* no run_end: as if the controller had died */
	loop_free(l);
	char pidbuf[32], deadbuf[32];
	snprintf(pidbuf, sizeof pidbuf, "\"pid\":%ld,", (long)getpid());
	snprintf(deadbuf, sizeof deadbuf, "\"pid\":%ld,", (long)child);
	edit_file(path, pidbuf, deadbuf);
	ok(progress_read(path, &v, &e) == LAB_OK && !v.alive && strstr(v.why_dead, "is gone"),
	   "a dead writer is not alive: %s", v.why_dead);
	progress_view_free(&v);
	edit_file(path, deadbuf, pidbuf);
	edit_file(path, "\"proc_start\":", "\"proc_start\":1");
	ok(progress_read(path, &v, &e) == LAB_OK && !v.alive &&
	       strstr(v.why_dead, "another process"),
	   "a reused pid (other start time) is not alive: %s", v.why_dead);
	progress_view_free(&v);
	edit_file(path, "\"boot_id\":\"", "\"boot_id\":\"x");
	ok(progress_read(path, &v, &e) == LAB_OK && !v.alive && strstr(v.why_dead, "rebooted"),
	   "a file from before a reboot is not alive: %s", v.why_dead);
	progress_view_free(&v);
	nlive = 0;
	alive = 0;
	ok(progress_scan(sdir, count_alive, &alive, &nlive, &e) == LAB_OK && nlive == 1 &&
	       alive == 0,
	   "scan reports the dead run, not alive");
	edit_file(path, "{\"version\":1", "{\"version\":9");
	e = (struct lab_err){0};
	ok(progress_read(path, &v, &e) == LAB_EPROTO, "another version is refused: %s", e.msg);
	progress_view_free(&v);

	free(path);
	free(sdir);
	char *cmd = xasprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	free(cmd);
	return tap_done();
}
