/* progress.c - see progress.h. */
#include "progress.h"
#include "json.h"
#include "loop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_LIVE_MS 250  /* live block: at most 4 redraws a second */
#define PROGRESS_FILE_MS 1000 /* progress file: at most one rewrite a second */

struct pboard {
	char *name;
	char stage[32];
	char suite[64], mode[24];
	int it, its;
	size_t slot, nslots;
	double est_slot_s;
	uint64_t slot_start_ns;
	size_t timed_slot; /* the slot slot_start_ns belongs to, + 1 (0: none) */
	double slot_sum_s; /* time of the finished slots */
	size_t slots_timed;
	bool done;
};

struct progress {
	struct progress_opts o;
	char *state_dir;
	char *state_path;
	struct loop *loop;
	struct loop_timer tick;
	bool ticking;
	int64_t run_id;
	char *plan, *lab;
	size_t njobs;
	int64_t started;
	struct pboard *b;
	size_t nb;
	size_t drawn; /* lines of the live block on screen */
	uint64_t last_draw_ns, last_file_ns;
	bool dirty, file_dirty;
	char host[128], boot_id[64];
	int64_t proc_start;
};

/* ---- who is writing: pid, process start time, boot ---- */

static int64_t proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* Field 22 (starttime) counts from after the command's closing paren. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	long long v = 0;
	if (sscanf(p, "%lld", &v) != 1)
		return -1;
	return v;
}

static void read_boot_id(char *out, size_t n)
{
	out[0] = '\0';
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, out, n - 1);
	close(fd);
	out[r > 0 ? r : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* ---- small formatting helpers ---- */

void progress_fmt_duration(char *buf, size_t n, double secs)
{
	if (secs < 0) {
		snprintf(buf, n, "-");
		return;
	}
	if (secs < 10 && secs != (double)(long)secs) {
		snprintf(buf, n, "%.1fs", secs);
		return;
	}
	long s = (long)(secs + 0.5);
	if (s >= 3600)
		snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
	else if (s >= 60)
		snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
	else
		snprintf(buf, n, "%lds", s);
}

void progress_ts(char *buf, size_t n)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char s[24];
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%.19s.%03uZ", s, (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

/* Remaining seconds of a board: remaining slots x its mean slot time. */
static double board_eta(const struct pboard *b, uint64_t now)
{
	if (b->done)
		return 0;
	double mean = b->slots_timed ? b->slot_sum_s / (double)b->slots_timed : b->est_slot_s;
	if (mean <= 0)
		return -1;
	size_t left = b->nslots > b->slot ? b->nslots - b->slot : 0;
	double eta = (double)left * mean;
	if (b->timed_slot == b->slot + 1 && left > 0) {
		double in = (double)(now - b->slot_start_ns) / 1e9;
		eta -= in < mean ? in : mean;
	}
	return eta;
}

static void totals(const struct progress *p, uint64_t now, int64_t *done, int64_t *total,
                   double *eta)
{
	*done = *total = 0;
	*eta = 0;
	for (size_t i = 0; i < p->nb; i++) {
		const struct pboard *b = &p->b[i];
		*total += (int64_t)b->nslots;
		*done += (int64_t)(b->done ? b->nslots : b->slot);
		double e = board_eta(b, now);
		if (e < 0 && !b->done)
			*eta = -1;
		else if (*eta >= 0 && e > *eta)
			*eta = e;
	}
}

/* ---- JSON lines ---- */

static void json_begin(struct lab_buf *j, const char *event)
{
	char ts[40];
	progress_ts(ts, sizeof ts);
	lab_buf_init(j, 0);
	lab_buf_printf(j, "{\"ts\":\"%s\",\"event\":\"%s\"", ts, event);
}

static void json_kv(struct lab_buf *j, const char *k, const char *v)
{
	if (!v)
		return;
	lab_buf_printf(j, ",\"%s\":", k);
	json_buf_str(j, v);
}

static void json_end(struct progress *p, struct lab_buf *j)
{
	lab_buf_printf(j, "}\n");
	if (p->o.out) {
		fwrite(j->data, 1, j->len, p->o.out);
		fflush(p->o.out);
	}
	lab_buf_free(j);
}

static bool json_mode(const struct progress *p)
{
	return p->o.format == PROGRESS_JSON && p->o.out;
}

/* ---- the live block ---- */

static void term_size(FILE *f, int *rows, int *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

static void erase_live(struct progress *p)
{
	if (p->drawn == 0)
		return;
	fprintf(p->o.out, "\033[%zuA\r\033[J", p->drawn);
	p->drawn = 0;
}

static void put_line(struct progress *p, const char *s, int cols)
{
	fprintf(p->o.out, "%.*s\033[K\n", cols > 1 ? cols - 1 : 1, s);
	p->drawn++;
}

static void draw_live(struct progress *p, uint64_t now)
{
	if (!p->o.live || !p->o.out || p->nb == 0)
		return;
	int rows, cols;
	term_size(p->o.out, &rows, &cols);
	erase_live(p);
	size_t room = rows > 6 ? (size_t)rows - 4 : 2, shown = 0, hidden = 0;
	char line[512], eta[16];
	for (size_t i = 0; i < p->nb; i++) {
		const struct pboard *b = &p->b[i];
		if (b->done || !b->stage[0])
			continue;
		if (shown >= room) {
			hidden++;
			continue;
		}
		progress_fmt_duration(eta, sizeof eta, board_eta(b, now));
		char job[96];
		snprintf(job, sizeof job, "%s/%s", b->suite, b->mode);
		snprintf(line, sizeof line,
		         "  %-12.12s %-14.14s %-26.26s it %d/%d  slot %zu/%zu  ETA %s", b->name,
		         b->stage, job, b->it, b->its,
		         b->slot + 1 > b->nslots ? b->nslots : b->slot + 1, b->nslots, eta);
		put_line(p, line, cols);
		shown++;
	}
	if (hidden) {
		snprintf(line, sizeof line, "  ... and %zu more board(s)", hidden);
		put_line(p, line, cols);
	}
	int64_t done, total;
	double e;
	totals(p, now, &done, &total, &e);
	int width = cols > 60 ? 30 : 10;
	int fill = total > 0 ? (int)(done * width / total) : 0;
	char bar[64];
	for (int k = 0; k < width; k++)
		bar[k] = k < fill ? '#' : '.';
	bar[width] = '\0';
	progress_fmt_duration(eta, sizeof eta, e);
	snprintf(line, sizeof line, "[%s] %3d%%  %lld/%lld slots  ETA %s", bar,
	         total > 0 ? (int)(done * 100 / total) : 0, (long long)done, (long long)total, eta);
	put_line(p, line, cols);
	fflush(p->o.out);
	p->dirty = false;
	p->last_draw_ns = now;
}

/* ---- the progress file ---- */

static void write_state(struct progress *p, uint64_t now)
{
	if (!p->state_path)
		return;
	int64_t done, total;
	double eta;
	totals(p, now, &done, &total, &eta);
	struct lab_buf j;
	lab_buf_init(&j, 0);
	lab_buf_printf(&j,
	               "{\"version\":1,\"run\":%lld,\"pid\":%ld,\"proc_start\":%lld,\"boot_id\":",
	               (long long)p->run_id, (long)getpid(), (long long)p->proc_start);
	json_buf_str(&j, p->boot_id);
	lab_buf_printf(&j, ",\"host\":");
	json_buf_str(&j, p->host);
	lab_buf_printf(&j, ",\"plan\":");
	json_buf_str(&j, p->plan);
	lab_buf_printf(&j, ",\"lab\":");
	json_buf_str(&j, p->lab);
	lab_buf_printf(
	    &j,
	    ",\"started\":%lld,\"updated\":%lld,\"jobs\":%zu,\"done\":%lld,\"total\":%lld,"
	    "\"eta_s\":%.0f,\"boards\":[",
	    (long long)p->started, (long long)time(NULL), p->njobs, (long long)done,
	    (long long)total, eta);
	for (size_t i = 0; i < p->nb; i++) {
		const struct pboard *b = &p->b[i];
		lab_buf_printf(&j, "%s{\"name\":", i ? "," : "");
		json_buf_str(&j, b->name);
		lab_buf_printf(&j, ",\"stage\":");
		json_buf_str(&j, b->done ? "done" : b->stage[0] ? b->stage : "waiting");
		lab_buf_printf(&j, ",\"suite\":");
		json_buf_str(&j, b->suite);
		lab_buf_printf(&j, ",\"mode\":");
		json_buf_str(&j, b->mode);
		lab_buf_printf(&j,
		               ",\"iteration\":%d,\"iterations\":%d,\"done\":%zu,\"total\":%zu,"
		               "\"eta_s\":%.0f}",
		               b->it, b->its, b->done ? b->nslots : b->slot, b->nslots,
		               board_eta(b, now));
	}
	lab_buf_printf(&j, "]}\n");
	/* tmp + rename: a reader sees the old file or the new one, never half.
	 * No fsync: the file only matters while this process lives. */
	char *tmp = xasprintf("%s.tmp", p->state_path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		bool ok = write(fd, j.data, j.len) == (ssize_t)j.len;
		ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, p->state_path) != 0)
			unlink(tmp);
	}
	free(tmp);
	lab_buf_free(&j);
	p->file_dirty = false;
	p->last_file_ns = now;
}

static void on_tick(struct loop *l, struct loop_timer *t, void *arg)
{
	struct progress *p = arg;
	uint64_t now = lab_now_ns();
	if (p->o.live)
		draw_live(p, now); /* also when nothing happened: the ETAs count down */
	if (p->state_path && now - p->last_file_ns >= PROGRESS_FILE_MS * 1000000ull)
		write_state(p, now);
	loop_timer_start(l, t, p->o.live ? PROGRESS_LIVE_MS : PROGRESS_FILE_MS);
}

static void changed(struct progress *p)
{
	p->dirty = p->file_dirty = true;
	uint64_t now = lab_now_ns();
	if (p->o.live && now - p->last_draw_ns >= PROGRESS_LIVE_MS * 1000000ull)
		draw_live(p, now);
}

/* ---- the API ---- */

struct progress *progress_new(const struct progress_opts *o)
{
	struct progress *p = xcalloc(1, sizeof *p);
	p->o = *o;
	if (p->o.format != PROGRESS_TEXT || !p->o.out)
		p->o.live = false;
	if (o->state_dir && o->state_dir[0])
		p->state_dir = xstrdup(o->state_dir);
	loop_timer_init(&p->tick, on_tick, p);
	gethostname(p->host, sizeof p->host - 1);
	read_boot_id(p->boot_id, sizeof p->boot_id);
	p->proc_start = proc_start_time(getpid());
	return p;
}

void progress_free(struct progress *p)
{
	if (!p)
		return;
	if (p->ticking)
		loop_timer_stop(p->loop, &p->tick);
	for (size_t i = 0; i < p->nb; i++)
		free(p->b[i].name);
	free(p->b);
	free(p->plan);
	free(p->lab);
	free(p->state_dir);
	free(p->state_path);
	free(p);
}

char *progress_state_dir(const char *opt, const char *db)
{
	if (opt && opt[0])
		return xstrdup(opt);
	const char *env = getenv("EMMCLAB_STATE_DIR");
	if (env && env[0])
		return xstrdup(env);
	/* .DB.live beside the database: hidden, and outside `rm DB*` globs */
	const char *slash = strrchr(db, '/');
	if (!slash)
		return xasprintf(".%s.live", db);
	return xasprintf("%.*s/.%s.live", (int)(slash - db), db, slash + 1);
}

char *progress_file_path(const char *dir, int64_t run_id)
{
	return xasprintf("%s/run-%lld.json", dir, (long long)run_id);
}

void progress_run_begin(struct progress *p, struct loop *l, int64_t run_id, const char *plan,
                        const char *lab, size_t njobs)
{
	p->loop = l;
	p->run_id = run_id;
	p->plan = xstrdup(plan ? plan : "");
	p->lab = xstrdup(lab ? lab : "");
	p->njobs = njobs;
	p->started = (int64_t)time(NULL);
	if (p->state_dir && lab_mkdir_p(p->state_dir, 0755) == 0)
		p->state_path = progress_file_path(p->state_dir, run_id);
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "run-start");
		lab_buf_printf(&j, ",\"run\":%lld", (long long)run_id);
		json_kv(&j, "plan", plan);
		json_kv(&j, "lab", lab);
		lab_buf_printf(&j, ",\"jobs\":%zu,\"pid\":%ld", njobs, (long)getpid());
		json_end(p, &j);
	}
	if (p->o.live || p->state_path) {
		p->ticking = true;
		loop_timer_start(l, &p->tick, p->o.live ? PROGRESS_LIVE_MS : PROGRESS_FILE_MS);
	}
}

void progress_board(struct progress *p, size_t idx, const char *name, size_t nslots,
                    double est_slot_s)
{
	if (idx >= p->nb) {
		p->b = xreallocarray(p->b, idx + 1, sizeof *p->b);
		memset(p->b + p->nb, 0, (idx + 1 - p->nb) * sizeof *p->b);
		p->nb = idx + 1;
	}
	struct pboard *b = &p->b[idx];
	free(b->name);
	b->name = xstrdup(name);
	b->nslots = nslots;
	b->est_slot_s = est_slot_s;
	p->file_dirty = true;
}

void progress_stage(struct progress *p, size_t idx, const char *stage, const char *suite,
                    const char *mode, int it, int its, size_t slot)
{
	if (idx >= p->nb)
		return;
	struct pboard *b = &p->b[idx];
	bool same = strcmp(b->stage, stage) == 0 && b->slot == slot;
	lab_strlcpy(b->stage, stage, sizeof b->stage);
	lab_strlcpy(b->suite, suite ? suite : "", sizeof b->suite);
	lab_strlcpy(b->mode, mode ? mode : "", sizeof b->mode);
	b->it = it;
	b->its = its;
	b->slot = slot;
	if (b->timed_slot != slot + 1) {
		b->timed_slot = slot + 1;
		b->slot_start_ns = lab_now_ns();
	}
	if (same)
		return;
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "stage");
		json_kv(&j, "board", b->name);
		json_kv(&j, "stage", stage);
		json_kv(&j, "suite", suite);
		json_kv(&j, "mode", mode);
		lab_buf_printf(&j, ",\"iteration\":%d,\"iterations\":%d,\"slot\":%zu,\"slots\":%zu",
		               it, its, slot + 1, b->nslots);
		json_end(p, &j);
	}
	changed(p);
}

void progress_slot_done(struct progress *p, size_t idx, size_t next_slot)
{
	if (idx >= p->nb)
		return;
	struct pboard *b = &p->b[idx];
	uint64_t now = lab_now_ns();
	double secs = 0;
	if (b->timed_slot == b->slot + 1) {
		secs = (double)(now - b->slot_start_ns) / 1e9;
		b->slot_sum_s += secs;
		b->slots_timed++;
	}
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "slot-done");
		json_kv(&j, "board", b->name);
		json_kv(&j, "suite", b->suite);
		json_kv(&j, "mode", b->mode);
		char eta[32];
		double e = board_eta(b, now);
		snprintf(eta, sizeof eta, "%.0f", e);
		lab_buf_printf(
		    &j,
		    ",\"iteration\":%d,\"slot\":%zu,\"slots\":%zu,\"seconds\":%.3f,\"eta_s\":%s",
		    b->it, b->slot + 1, b->nslots, secs, e >= 0 ? eta : "null");
		json_end(p, &j);
	}
	b->slot = next_slot;
	changed(p);
}

void progress_board_done(struct progress *p, size_t idx)
{
	if (idx >= p->nb || p->b[idx].done)
		return;
	struct pboard *b = &p->b[idx];
	b->done = true;
	b->slot = b->nslots;
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "board-done");
		json_kv(&j, "board", b->name);
		json_end(p, &j);
	}
	changed(p);
}

bool progress_event(struct progress *p, size_t idx, const char *kind, const char *stage,
                    const char *msg)
{
	if (!json_mode(p))
		return false;
	struct lab_buf j;
	json_begin(&j, "board-event");
	json_kv(&j, "board", idx < p->nb ? p->b[idx].name : NULL);
	json_kv(&j, "kind", kind);
	json_kv(&j, "stage", stage);
	json_kv(&j, "message", msg);
	json_end(p, &j);
	return true;
}

bool progress_job(struct progress *p, size_t idx, const char *suite, const char *mode,
                  const char *status, const char *why)
{
	if (!json_mode(p))
		return false;
	struct lab_buf j;
	json_begin(&j, "job");
	json_kv(&j, "board", idx < p->nb ? p->b[idx].name : NULL);
	json_kv(&j, "suite", suite);
	json_kv(&j, "mode", mode);
	json_kv(&j, "status", status);
	json_kv(&j, "why", why);
	json_end(p, &j);
	return true;
}

void progress_log(struct progress *p, const char *line)
{
	if (!p->o.out)
		return;
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "log");
		json_kv(&j, "message", line);
		json_end(p, &j);
		return;
	}
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%H:%M:%S", &tm);
	if (p->o.live)
		erase_live(p);
	/* log lines quote DUT text: control bytes escaped (docs/reports.md) */
	char *esc = NULL;
	if (!lab_text_clean(line)) {
		size_t n = lab_text_escape(NULL, 0, line) + 1;
		esc = xmalloc(n);
		lab_text_escape(esc, n, line);
	}
	fprintf(p->o.out, "[%s] %s\n", ts, esc ? esc : line);
	free(esc);
	fflush(p->o.out);
	if (p->o.live)
		changed(p);
}

void progress_vlog(struct progress *p, const char *fmt, va_list ap)
{
	char *s = xvasprintf(fmt, ap);
	progress_log(p, s);
	free(s);
}

void progress_run_end(struct progress *p, const char *status)
{
	if (p->ticking) {
		loop_timer_stop(p->loop, &p->tick);
		p->ticking = false;
	}
	if (p->o.live && p->o.out) {
		erase_live(p);
		fflush(p->o.out);
	}
	if (json_mode(p)) {
		struct lab_buf j;
		json_begin(&j, "run-end");
		lab_buf_printf(&j, ",\"run\":%lld", (long long)p->run_id);
		json_kv(&j, "status", status);
		json_end(p, &j);
	}
	if (p->state_path) {
		unlink(p->state_path);
		rmdir(p->state_dir); /* only when no other run's file is left */
	}
}

/* ---- reading ---- */

static void jstr(json_t *o, const char *k, char *out, size_t n)
{
	const char *s = json_string_value(json_object_get(o, k));
	lab_strlcpy(out, s ? s : "", n);
}

static int64_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v)
	       : json_is_real(v)  ? (int64_t)json_real_value(v)
	                          : -1;
}

static double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : -1;
}

int progress_read(const char *path, struct progress_view *v, struct lab_err *e)
{
	memset(v, 0, sizeof *v);
	char *text = NULL;
	size_t len = 0;
	int rc = lab_read_file(path, 16u << 20, &text, &len, e);
	if (rc)
		return rc;
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	free(text);
	if (!root || !json_is_object(root) || jint(root, "version") != 1) {
		json_decref(root);
		return lab_err_set(e, LAB_EPROTO, "%s: not a progress file (version 1)", path);
	}
	v->run_id = jint(root, "run");
	v->pid = jint(root, "pid");
	jstr(root, "plan", v->plan, sizeof v->plan);
	jstr(root, "lab", v->lab, sizeof v->lab);
	jstr(root, "host", v->host, sizeof v->host);
	v->started = jint(root, "started");
	v->updated = jint(root, "updated");
	v->done = jint(root, "done");
	v->total = jint(root, "total");
	v->eta_s = jnum(root, "eta_s");
	json_t *bs = json_object_get(root, "boards");
	size_t nb = json_is_array(bs) ? json_array_size(bs) : 0;
	v->boards = xcalloc(nb + 1, sizeof *v->boards);
	for (size_t i = 0; i < nb; i++) {
		json_t *b = json_array_get(bs, i);
		struct progress_board_view *bv = &v->boards[v->nboards++];
		jstr(b, "name", bv->name, sizeof bv->name);
		jstr(b, "stage", bv->stage, sizeof bv->stage);
		jstr(b, "suite", bv->suite, sizeof bv->suite);
		jstr(b, "mode", bv->mode, sizeof bv->mode);
		bv->iteration = (int)jint(b, "iteration");
		bv->iterations = (int)jint(b, "iterations");
		bv->done = jint(b, "done");
		bv->total = jint(b, "total");
		bv->eta_s = jnum(b, "eta_s");
	}
	/* Alive: same boot, the pid exists, and it is the same process (its
	 * start time), so neither a reboot nor a reused pid looks alive. */
	char boot[64], host[128] = "";
	read_boot_id(boot, sizeof boot);
	gethostname(host, sizeof host - 1);
	char fboot[64];
	jstr(root, "boot_id", fboot, sizeof fboot);
	int64_t fstart = jint(root, "proc_start");
	if (v->host[0] && strcmp(v->host, host) != 0) {
		v->alive = true;
		snprintf(v->why_dead, sizeof v->why_dead,
		         "written on host %.64s: liveness not checked", v->host);
	} else if (fboot[0] && boot[0] && strcmp(fboot, boot) != 0) {
		snprintf(v->why_dead, sizeof v->why_dead, "the host rebooted since");
	} else if (v->pid <= 0 || (kill((pid_t)v->pid, 0) < 0 && errno == ESRCH)) {
		snprintf(v->why_dead, sizeof v->why_dead, "controller pid %lld is gone",
		         (long long)v->pid);
	} else if (fstart >= 0 && proc_start_time((pid_t)v->pid) != fstart) {
		snprintf(v->why_dead, sizeof v->why_dead, "pid %lld is another process now",
		         (long long)v->pid);
	} else {
		v->alive = true;
	}
	json_decref(root);
	return LAB_OK;
}

void progress_view_free(struct progress_view *v)
{
	free(v->boards);
	v->boards = NULL;
	v->nboards = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int progress_scan(const char *dir, void (*cb)(const struct progress_view *v, void *arg), void *arg,
                  size_t *n, struct lab_err *e)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return LAB_OK;
		return lab_err_set(e, LAB_EINFRA, "%s: %s", dir, strerror(errno));
	}
	char **names = NULL;
	size_t nn = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "run-", 4) != 0 || l < 9 ||
		    strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		names = xreallocarray(names, nn + 1, sizeof *names);
		names[nn++] = xasprintf("%s/%s", dir, de->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof *names, cmp_str);
	for (size_t i = 0; i < nn; i++) {
		struct progress_view v;
		struct lab_err re = {0};
		if (progress_read(names[i], &v, &re) == LAB_OK) {
			cb(&v, arg);
			(*n)++;
		}
		progress_view_free(&v);
		free(names[i]);
	}
	free(names);
	return LAB_OK;
}
