/*
 * board.c - one board as a state machine on the loop (see board.h).
 *
 * A boot attempt: [deploy before power] -> power cycle -> (first output within
 * first_output) -> [U-Boot: interrupt + sync within bootloader] -> [deploy at
 * U-Boot, or boot from the board's own storage with the mode's bootargs] ->
 * shell (login/prompt within boot, shell within login) -> agent present.
 * Each stage's failure is classified (enum board_fail), reported as an event,
 * and the attempt is retried after a power cycle up to type.retries times.
 *
 * Whether the board stops in U-Boot: always when the deploy method works at
 * the U-Boot prompt; otherwise when the type has a U-Boot prompt configured
 * (uboot.prompt not empty) and the deploy method does not boot the kernel
 * itself, so the mode's command line can be put into bootargs.
 *
 * Once at the shell, board_agent hands one agent invocation to the board's
 * agent session (agent_session.c: protocol lines, re-requests, the done
 * check) and maps how it ended to a failure class.
 */
#include "board.h"
#include "agent_session.h"
#include "console.h"
#include "deploy.h"
#include "expect.h"
#include "power.h"
#include "shell.h"
#include "uboot.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_MS 60000

enum b_op { OP_NONE, OP_BOOT, OP_SHELL, OP_AGENT, OP_PUT, OP_OFF, OP_POWER };

struct board {
	struct loop *loop;
	const struct lab_cfg *lab;
	const struct board_cfg *cfg;
	const struct board_type *type;
	struct board_events ev;
	void *ev_arg;

	struct console *con;
	struct expect *x;
	struct power *pw;
	struct deploy *dep;
	struct uboot *ub;
	struct shell *sh;
	struct uboot_cfg ub_default;   /* used when the board has no type */
	struct shell_cfg sh_default;

	enum board_state state;
	int failures;
	bool quarantined;
	board_tap_cb tap;
	void *tap_arg;

	/* current operation */
	enum b_op op;
	board_done_cb done_cb;
	board_cmd_cb cmd_cb;
	board_msg_cb msg_cb;
	board_power_cb power_cb;
	void *cb_arg;
	struct loop_timer done_timer, first_output;
	int rc;
	enum board_fail fail;
	char msg[600];
	int cmd_status;
	struct lab_buf cmd_out;
	int power_state;

	/* boot */
	const struct kernel_cfg *kernel;
	char *extra;
	char *bootargs;
	char *tdir;
	char *workdir;
	int attempt;
	int boot_n;
	bool got_output;
	struct transcript *tr;
	bool offline_phase;      /* deploy before power is running */
	bool at_uboot;           /* this attempt stopped at the U-Boot prompt */

	struct agent_session *agent; /* runs board_agent's invocations, one at a time */

	/* a power cut under a running agent command (board_power_cut) */
	enum { CUT_NONE, CUT_POWERING, CUT_DRAINING } cut;
	board_power_cb cut_cb;
	void *cut_arg;
	struct loop_timer cut_timer;
	uint64_t cut_deadline_ns;
	int cut_rc;
	char cut_msg[600];
	board_trace_cb trace;
	void *trace_arg;
};

static const char *const state_names[BOARD_STATE_COUNT] = {
	"off", "powering", "bootloader", "deploy", "booting", "shell", "running", "powering-off",
	"quarantined",
};

static const char *const fail_names[FAIL_COUNT] = {
	"none", "power", "no-console", "no-output", "bootloader-hang", "deploy", "kernel-panic",
	"boot-timeout", "login-timeout", "command-timeout", "agent-protocol", "mode-mismatch",
	"quarantined", "autoboot",
};

const char *board_state_name(enum board_state s)
{
	return (unsigned)s < BOARD_STATE_COUNT ? state_names[s] : "?";
}

const char *board_fail_name(enum board_fail f)
{
	return (unsigned)f < FAIL_COUNT ? fail_names[f] : "?";
}

static void boot_attempt(struct board *b);
static void power_cycle(struct board *b);
static void attempt_failed(struct board *b, enum board_fail f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- small helpers ---- */

static void trace(struct board *b, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void trace(struct board *b, const char *what, const char *fmt, ...)
{
	if (!b->trace)
		return;
	char d[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, sizeof d, fmt, ap);
	va_end(ap);
	b->trace(b, what, d, b->trace_arg);
}

static double secs(uint64_t ms)
{
	return (double)ms / 1000.0;
}

static uint64_t tmo(uint64_t v, uint64_t def)
{
	return v ? v : def;
}

static const struct timeouts_cfg *timeouts(const struct board *b)
{
	static const struct timeouts_cfg none;
	return b->type ? &b->type->timeouts : &none;
}

static const struct uboot_cfg *ub_cfg(struct board *b)
{
	return b->type ? &b->type->uboot : &b->ub_default;
}

static const struct shell_cfg *sh_cfg(struct board *b)
{
	return b->type ? &b->type->shell : &b->sh_default;
}

static void set_state(struct board *b, enum board_state s)
{
	if (b->state == s)
		return;
	b->state = s;
	if (b->ev.state)
		b->ev.state(b, s, b->ev_arg);
}

static void emit(struct board *b, const char *kind, const char *stage, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void emit(struct board *b, const char *kind, const char *stage, const char *fmt, ...)
{
	char m[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	if (b->tr)
		transcript_mark(b->tr, "== %s%s%s: %s ==", kind, stage ? " in " : "", stage ? stage : "", m);
	if (b->ev.event)
		b->ev.event(b, kind, stage, m, b->ev_arg);
}

static void on_done_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct board *b = arg;
	enum b_op op = b->op;
	void *a = b->cb_arg;
	b->op = OP_NONE;
	switch (op) {
	case OP_SHELL: {
		board_cmd_cb cb = b->cmd_cb;
		b->cmd_cb = NULL;
		if (cb)
			cb(b, b->rc, b->cmd_status, b->cmd_out.data ? b->cmd_out.data : "", b->cmd_out.len, a);
		break;
	}
	case OP_POWER: {
		board_power_cb cb = b->power_cb;
		b->power_cb = NULL;
		if (cb)
			cb(b, b->rc, b->power_state, b->msg[0] ? b->msg : NULL, a);
		break;
	}
	case OP_NONE:
		break;
	default: {
		board_done_cb cb = b->done_cb;
		b->done_cb = NULL;
		if (cb)
			cb(b, b->rc, b->fail, b->msg[0] ? b->msg : NULL, a);
		break;
	}
	}
}

/* Complete the current operation on the next loop pass. */
static void complete(struct board *b, int rc, enum board_fail f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void complete(struct board *b, int rc, enum board_fail f, const char *fmt, ...)
{
	b->rc = rc;
	b->fail = rc == LAB_OK ? FAIL_NONE : f;
	b->msg[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b->msg, sizeof b->msg, fmt, ap);
		va_end(ap);
	}
	loop_timer_stop(b->loop, &b->first_output);
	loop_timer_start(b->loop, &b->done_timer, 0);
}

static void close_transcript(struct board *b, bool report)
{
	if (!b->tr)
		return;
	console_attach_transcript(b->con, NULL);
	char sha[65] = "";
	uint64_t bytes = 0;
	struct lab_err e = {0};
	char *path = xstrdup(transcript_path(b->tr));
	int rc = transcript_close(b->tr, sha, &bytes, &e);
	b->tr = NULL;
	if (report && rc == LAB_OK && b->ev.transcript)
		b->ev.transcript(b, path, sha, bytes, b->boot_n, b->ev_arg);
	free(path);
}

static int open_transcript(struct board *b, const char *dir, struct lab_err *e)
{
	close_transcript(b, true);
	if (!dir || !dir[0])
		dir = b->lab && b->lab->transcripts && b->lab->transcripts[0] ? b->lab->transcripts : ".";
	if (lab_mkdir_p(dir, 0755) != 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: cannot create transcript directory %s", b->cfg->name, dir);
	b->boot_n++;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
	char *fname = xasprintf("%s-%d-%s.log", b->cfg->name, b->boot_n, ts);
	char *path;
	int rc = lab_path_join(dir, fname, &path, e); /* the name cannot leave dir */
	free(fname);
	if (rc)
		return rc;
	uint64_t max = b->lab && b->lab->transcript_max ? b->lab->transcript_max : 64u * 1024 * 1024;
	rc = transcript_open(path, max, &b->tr, e);
	free(path);
	if (rc)
		return rc;
	console_attach_transcript(b->con, b->tr);
	return LAB_OK;
}

/* Stop everything in flight (drivers that cannot be cancelled are recreated). */
static void stop_activity(struct board *b)
{
	loop_timer_stop(b->loop, &b->first_output);
	if (b->ub)
		uboot_cancel(b->ub);
	if (b->sh)
		shell_cancel(b->sh);
	if (b->x) {
		expect_clear(b->x);
		expect_set_line_cb(b->x, NULL, NULL);
	}
	if (b->dep && b->dep->busy) {
		deploy_free(b->dep);
		b->dep = NULL;
	}
	if (b->pw && b->pw->busy) {
		power_free(b->pw);
		b->pw = NULL;
	}
}

static int ensure_power(struct board *b, struct lab_err *e)
{
	if (b->pw)
		return LAB_OK;
	if (!b->cfg->power)
		return LAB_ERR(e, LAB_EUSAGE, "%s: no power: block in the lab", b->cfg->name);
	int rc = power_new(b->loop, b->cfg->name, b->cfg->power, &b->pw, e);
	/* The type's stage budget applies unless the power block sets its own. */
	if (rc == LAB_OK && timeouts(b)->power_ms && !cfg_map_get(b->cfg->power, "timeout"))
		b->pw->timeout_ms = timeouts(b)->power_ms;
	return rc;
}

static int ensure_deploy(struct board *b, struct lab_err *e)
{
	if (b->dep || !b->cfg->deploy)
		return LAB_OK;
	int rc = deploy_new(b->loop, b->cfg->name, b->cfg->deploy, &b->dep, e);
	/* as for power: the type's stage budget, unless the deploy block sets its own */
	if (rc == LAB_OK && timeouts(b)->deploy_ms && !cfg_map_get(b->cfg->deploy, "timeout"))
		b->dep->timeout_ms = timeouts(b)->deploy_ms;
	return rc;
}

static int ensure_console(struct board *b, struct lab_err *e)
{
	if (console_is_up(b->con))
		return LAB_OK;
	return console_open(b->con, e);
}

/* ---- console events ---- */

static void on_first_output_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct board *b = arg;
	if (b->op == OP_BOOT && !b->got_output)
		attempt_failed(b, FAIL_NO_OUTPUT, "no console output within %llu ms of power-on",
			       (unsigned long long)tmo(timeouts(b)->first_output_ms, 30000));
}

static void on_con_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct board *b = arg;
	if (b->tap)
		b->tap(b, buf, n, b->tap_arg);
	if (b->cut == CUT_DRAINING) { /* the power is off: drained until quiet */
		uint64_t now = lab_now_ns();
		uint64_t left = b->cut_deadline_ns > now ? (b->cut_deadline_ns - now) / 1000000u : 0;
		loop_timer_start(b->loop, &b->cut_timer, left < BOARD_CUT_QUIET_MS ? left : BOARD_CUT_QUIET_MS);
	}
	if (b->state == BOARD_POWERING_OFF || (b->state == BOARD_OFF && b->op != OP_NONE))
		return; /* noise from a board being switched off belongs to nobody */
	if (!b->got_output && b->op == OP_BOOT && b->state != BOARD_POWERING) {
		b->got_output = true;
		loop_timer_stop(b->loop, &b->first_output);
		trace(b, "matched", "first console output (%zu bytes)", n);
	}
	expect_feed(b->x, buf, n);
}

static void on_con_state(struct console *c, bool up, const char *msg, void *arg)
{
	LAB_UNUSED(c);
	struct board *b = arg;
	if (!up && b->state != BOARD_OFF && b->state != BOARD_POWERING &&
	    b->state != BOARD_POWERING_OFF && b->cut == CUT_NONE)
		emit(b, "info", board_state_name(b->state), "console lost: %s", msg ? msg : "?");
}

/* The console stayed lost past its reconnect window while the board is on
 * (QEMU exited, ser2net went away): whatever the board waits for cannot come,
 * so the step ends now with its own cause instead of at its timeout. */
static void on_con_gone(struct console *c, const char *msg, void *arg)
{
	LAB_UNUSED(c);
	struct board *b = arg;
	if (b->state == BOARD_OFF || b->state == BOARD_POWERING || b->state == BOARD_POWERING_OFF)
		return;
	if (b->cut != CUT_NONE)
		return; /* the power is being cut (QEMU's console goes with it): the cut ends by itself */
	switch (b->op) {
	case OP_BOOT:
		if (!b->offline_phase)
			attempt_failed(b, FAIL_NO_CONSOLE, "console lost: %s", msg);
		break;
	case OP_SHELL:
	case OP_AGENT:
	case OP_PUT:
		emit(b, board_fail_name(FAIL_NO_CONSOLE), "running", "console lost: %s", msg);
		stop_activity(b);
		set_state(b, BOARD_SHELL);
		complete(b, LAB_EINFRA, FAIL_NO_CONSOLE, "console lost: %s", msg);
		break;
	default:
		break;
	}
}

/* ---- boot ---- */

static enum board_fail classify_shell(struct board *b)
{
	switch (shell_failure(b->sh)) {
	case SHELL_FAIL_PANIC:
		return FAIL_KERNEL_PANIC;
	case SHELL_FAIL_BOOT_TIMEOUT:
		return b->got_output ? FAIL_BOOT_TIMEOUT : FAIL_NO_OUTPUT;
	case SHELL_FAIL_LOGIN_TIMEOUT:
	case SHELL_FAIL_LOGIN_REFUSED:
		return FAIL_LOGIN_TIMEOUT;
	case SHELL_FAIL_COMMAND_TIMEOUT:
		return FAIL_COMMAND_TIMEOUT;
	default:
		return FAIL_BOOT_TIMEOUT;
	}
}

static void boot_success(struct board *b)
{
	trace(b, "matched", "a working shell: boot done (attempt %d)", b->attempt);
	set_state(b, BOARD_SHELL);
	if (b->tr)
		transcript_mark(b->tr, "== shell ready (attempt %d) ==", b->attempt);
	complete(b, LAB_OK, FAIL_NONE, NULL);
}

static void on_agent_ready(struct shell *s, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct board *b = arg;
	if (rc != LAB_OK) {
		enum board_fail f = shell_failure(b->sh) == SHELL_FAIL_PANIC ? FAIL_KERNEL_PANIC :
			rc == LAB_ETIMEOUT ? FAIL_COMMAND_TIMEOUT : FAIL_DEPLOY;
		attempt_failed(b, f, "agent: %s", shell_errmsg(b->sh));
		return;
	}
	if (status == 1)
		emit(b, "info", "shell", "agent pushed to %s", sh_cfg(b)->agent_path);
	boot_success(b);
}

static void on_shell_attached(struct shell *s, int rc, int status, const char *out, size_t len,
			      void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(status);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct board *b = arg;
	if (rc != LAB_OK) {
		attempt_failed(b, classify_shell(b), "%s", shell_errmsg(b->sh));
		return;
	}
	set_state(b, BOARD_SHELL);
	const struct shell_cfg *sc = sh_cfg(b);
	trace(b, "matched", "shell prompt %s", shell_prompt(b->sh));
	if (sc->agent_path && sc->agent_path[0]) {
		trace(b, "step", "agent: test -x %s (push %s when missing)", sc->agent_path,
		      sc->agent_local && sc->agent_local[0] ? sc->agent_local : "nothing");
		uint64_t t = tmo(timeouts(b)->command_ms, DEFAULT_TIMEOUT_MS) * 10;
		if (shell_ensure_agent(b->sh, t, on_agent_ready, b) == LAB_OK)
			return;
		attempt_failed(b, FAIL_DEPLOY, "cannot check the agent");
		return;
	}
	boot_success(b);
}

static void start_booting(struct board *b)
{
	set_state(b, BOARD_BOOTING);
	const struct timeouts_cfg *t = timeouts(b);
	const struct shell_cfg *sc = sh_cfg(b);
	trace(b, "waits for", "Linux: login /%s/ or shell prompt /%s/ within %.1f s, then a shell "
	      "within %.1f s", sc->login_pattern ? sc->login_pattern : "login: *$",
	      sc->prompt_pattern ? sc->prompt_pattern : "[#$] *$", secs(tmo(t->boot_ms, 120000)),
	      secs(tmo(t->login_ms, 60000)));
	if (shell_attach(b->sh, tmo(t->boot_ms, 120000), tmo(t->login_ms, 60000), on_shell_attached, b)) {
		attempt_failed(b, FAIL_BOOT_TIMEOUT, "shell session busy");
		return;
	}
}

static void on_ub_booted(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct board *b = arg;
	if (rc == LAB_OK) {
		start_booting(b);
		return;
	}
	attempt_failed(b, rc == LAB_EFOUND ? FAIL_DEPLOY : FAIL_BOOTLOADER_HANG, "%s",
		       uboot_errmsg(b->ub));
}

static void on_deployed(struct deploy *d, int rc, const char *msg, void *arg)
{
	LAB_UNUSED(d);
	struct board *b = arg;
	if (rc != LAB_OK) {
		attempt_failed(b, FAIL_DEPLOY, "%s", msg ? msg : "deploy failed");
		return;
	}
	unsigned fl = b->dep->drv->flags;
	if (b->offline_phase) {
		/* deployed offline: now power the board */
		b->offline_phase = false;
		power_cycle(b);
		return;
	}
	if (fl & DEPLOY_BOOTS) {
		start_booting(b);
		return;
	}
	if (b->at_uboot) {
		/* deployed at U-Boot (or nothing to deploy): boot from the board's storage */
		set_state(b, BOARD_BOOTLOADER);
		if (uboot_boot_local(b->ub, b->bootargs, tmo(timeouts(b)->bootloader_ms, 60000),
				     on_ub_booted, b))
			attempt_failed(b, FAIL_DEPLOY, "cannot boot from U-Boot: bad bootargs (quotes?) "
				       "or uboot.env entry");
		return;
	}
	start_booting(b);
}

static bool wants_uboot(struct board *b)
{
	unsigned fl = b->dep ? b->dep->drv->flags : 0;
	if (fl & DEPLOY_AT_UBOOT)
		return true;
	if (fl & DEPLOY_BOOTS)
		return false;
	const struct uboot_cfg *u = ub_cfg(b);
	return u->prompt && u->prompt[0];
}

static void run_deploy(struct board *b)
{
	set_state(b, BOARD_DEPLOY);
	trace(b, "step", "deploy %s%s (budget %.1f s)", b->dep->drv->name,
	      b->at_uboot ? " at the U-Boot prompt" : "", secs(b->dep->timeout_ms));
	struct deploy_ctx ctx = {
		.kernel = b->kernel,
		.bootargs = b->bootargs,
		.uboot = b->ub,
		.workdir = b->workdir,
	};
	if (deploy_run(b->dep, &ctx, on_deployed, b) != LAB_OK)
		attempt_failed(b, FAIL_DEPLOY, "deploy method busy");
}

static void on_uboot_ready(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct board *b = arg;
	if (rc != LAB_OK && uboot_autobooted(b->ub)) {
		/* U-Boot booted by itself.  A deploy that works at the prompt (netboot,
		 * ums, fastboot) cannot have happened: that is this failure.  Otherwise
		 * the board boots what it would have booted from U-Boot anyway: carry on
		 * (the mode check later sees whether the mode's bootargs were needed). */
		if (b->dep && (b->dep->drv->flags & DEPLOY_AT_UBOOT)) {
			attempt_failed(b, FAIL_AUTOBOOT, "%s; the %s deploy needs the U-Boot prompt",
				       uboot_errmsg(b->ub), b->dep->drv->name);
			return;
		}
		emit(b, "info", "bootloader", "%s; carrying on without the U-Boot step%s%s%s",
		     uboot_errmsg(b->ub), b->bootargs && b->bootargs[0] ? " (bootargs not set: " : "",
		     b->bootargs && b->bootargs[0] ? b->bootargs : "",
		     b->bootargs && b->bootargs[0] ? ")" : "");
		start_booting(b);
		return;
	}
	if (rc != LAB_OK) {
		attempt_failed(b, b->got_output ? FAIL_BOOTLOADER_HANG : FAIL_NO_OUTPUT, "%s",
			       uboot_errmsg(b->ub));
		return;
	}
	if (b->tr)
		transcript_mark(b->tr, "== U-Boot prompt reached ==");
	trace(b, "matched", "U-Boot prompt, U-Boot answers");
	b->at_uboot = true;
	if (b->dep && !(b->dep->drv->flags & DEPLOY_BEFORE_POWER)) {
		run_deploy(b);
		return;
	}
	if (uboot_boot_local(b->ub, b->bootargs, tmo(timeouts(b)->bootloader_ms, 60000), on_ub_booted,
			     b))
		attempt_failed(b, FAIL_DEPLOY, "cannot boot from U-Boot: bad bootargs (quotes?) or "
			       "uboot.env entry");
}

static void on_powered(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	LAB_UNUSED(state);
	struct board *b = arg;
	if (rc != LAB_OK) {
		attempt_failed(b, FAIL_POWER, "%s", msg ? msg : "power cycle failed");
		return;
	}
	console_set_expect_down(b->con, false);
	/* panic watch from power-on, not before: the last lines of the previous
	 * boot's panic may still come in while the power is being cycled */
	shell_watch(b->sh);
	b->at_uboot = false;
	if (b->tr)
		transcript_mark(b->tr, "== power on ==");
	const struct timeouts_cfg *t = timeouts(b);
	trace(b, "matched", "power on");
	if (!b->got_output) {
		loop_timer_start(b->loop, &b->first_output, tmo(t->first_output_ms, 30000));
		trace(b, "waits for", "first console output within %.1f s",
		      secs(tmo(t->first_output_ms, 30000)));
	}
	unsigned fl = b->dep ? b->dep->drv->flags : 0;
	if (wants_uboot(b)) {
		set_state(b, BOARD_BOOTLOADER);
		trace(b, "step", "U-Boot: interrupt autoboot and synchronise (%s)",
		      fl & DEPLOY_AT_UBOOT ? "the deploy works at its prompt" :
		      "uboot.prompt is set: the mode's bootargs go in from there");
		/* the interrupt budget includes the wait for first output */
		uint64_t budget = tmo(t->bootloader_ms, 60000) + tmo(t->first_output_ms, 30000);
		if (uboot_interrupt(b->ub, budget, on_uboot_ready, b))
			attempt_failed(b, FAIL_BOOTLOADER_HANG, "U-Boot session busy");
		return;
	}
	if (b->dep && !(fl & DEPLOY_BEFORE_POWER)) {
		run_deploy(b);
		return;
	}
	start_booting(b);
}

static void power_cycle(struct board *b)
{
	struct lab_err e = {0};
	if (ensure_power(b, &e)) {
		complete(b, LAB_EUSAGE, FAIL_POWER, "%s", e.msg);
		return;
	}
	expect_flush(b->x);
	set_state(b, BOARD_POWERING);
	console_set_expect_down(b->con, true);
	if (b->tr)
		transcript_mark(b->tr, "== power cycle ==");
	trace(b, "step", "power cycle (%s, budget %.1f s)", b->pw->drv->name, secs(b->pw->timeout_ms));
	if (power_request(b->pw, POWER_CYCLE, on_powered, b) != LAB_OK)
		attempt_failed(b, FAIL_POWER, "power driver busy");
}

/* One attempt: transcript, console, [offline deploy], power cycle. */
static void boot_attempt(struct board *b)
{
	struct lab_err e = {0};
	stop_activity(b);
	b->attempt++;
	b->got_output = false;
	b->offline_phase = false;
	if (open_transcript(b, b->tdir, &e)) {
		attempt_failed(b, FAIL_NO_CONSOLE, "transcript: %s", e.msg);
		return;
	}
	transcript_mark(b->tr, "== boot %d, attempt %d ==", b->boot_n, b->attempt);
	if (ensure_console(b, &e)) {
		attempt_failed(b, FAIL_NO_CONSOLE, "%s", e.msg);
		return;
	}
	if (ensure_deploy(b, &e)) {
		/* a configuration error: retrying would not help */
		complete(b, LAB_EUSAGE, FAIL_DEPLOY, "%s", e.msg);
		return;
	}
	if (b->dep && (b->dep->drv->flags & DEPLOY_BEFORE_POWER)) {
		b->offline_phase = true;
		run_deploy(b);
		return;
	}
	power_cycle(b);
}

static void attempt_failed(struct board *b, enum board_fail f, const char *fmt, ...)
{
	if (b->op != OP_BOOT || loop_timer_pending(&b->done_timer))
		return;
	char m[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	const char *stage = board_state_name(b->state);
	trace(b, "failed", "%s in %s: %s", board_fail_name(f), stage, m);
	emit(b, board_fail_name(f), stage, "attempt %d: %s", b->attempt, m);
	stop_activity(b);
	int64_t retries = b->type ? b->type->retries : 0;
	if (retries < 0)
		retries = 0;
	if (b->attempt <= retries) {
		emit(b, "retry", stage, "power cycle and boot again (attempt %d of %lld) after %s",
		     b->attempt + 1, (long long)retries + 1, board_fail_name(f));
		boot_attempt(b);
		return;
	}
	complete(b, LAB_EINFRA, f, "%s (%s, %d attempt%s)", m, board_fail_name(f), b->attempt,
		 b->attempt == 1 ? "" : "s");
}

static char *join_args(const char *a, const char *b)
{
	bool ha = a && a[0], hb = b && b[0];
	return xasprintf("%s%s%s", ha ? a : "", ha && hb ? " " : "", hb ? b : "");
}

int board_boot(struct board *b, const struct kernel_cfg *kernel, const char *extra_cmdline,
	       const char *transcript_dir, board_done_cb cb, void *arg)
{
	if (b->op != OP_NONE || b->cut != CUT_NONE)
		return LAB_EUSAGE;
	b->op = OP_BOOT;
	b->done_cb = cb;
	b->cb_arg = arg;
	if (b->quarantined) {
		complete(b, LAB_EINFRA, FAIL_QUARANTINED, "%s is quarantined after %d consecutive failures",
			 b->cfg->name, b->failures);
		return LAB_OK;
	}
	b->kernel = kernel;
	free(b->extra);
	b->extra = xstrdup(extra_cmdline ? extra_cmdline : "");
	free(b->bootargs);
	b->bootargs = join_args(kernel ? kernel->cmdline : NULL, extra_cmdline);
	free(b->tdir);
	b->tdir = transcript_dir ? xstrdup(transcript_dir) : NULL;
	free(b->workdir);
	const char *base = transcript_dir && transcript_dir[0] ? transcript_dir :
		b->lab && b->lab->transcripts && b->lab->transcripts[0] ? b->lab->transcripts : ".";
	char *wname = xasprintf("%s-work", b->cfg->name);
	struct lab_err we = {0};
	int wrc = lab_path_join(base, wname, &b->workdir, &we); /* the name cannot leave base */
	free(wname);
	if (wrc) {
		complete(b, wrc, FAIL_DEPLOY, "%s", we.msg);
		return LAB_OK;
	}
	lab_mkdir_p(b->workdir, 0755);
	b->attempt = 0;
	boot_attempt(b);
	return LAB_OK;
}

/* ---- shell commands ---- */

static int shell_ready(struct board *b)
{
	if (b->op != OP_NONE || b->cut != CUT_NONE)
		return LAB_EUSAGE;
	if (b->state != BOARD_SHELL)
		return LAB_EUSAGE;
	return LAB_OK;
}

static void on_cmd_done(struct shell *s, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(s);
	struct board *b = arg;
	lab_buf_free(&b->cmd_out);
	lab_buf_init(&b->cmd_out, 0);
	lab_buf_append(&b->cmd_out, out, len);
	lab_buf_cstr(&b->cmd_out);
	b->cmd_status = status;
	set_state(b, BOARD_SHELL);
	if (rc != LAB_OK) {
		enum board_fail f = shell_failure(b->sh) == SHELL_FAIL_PANIC ? FAIL_KERNEL_PANIC :
			rc == LAB_ETIMEOUT ? FAIL_COMMAND_TIMEOUT : FAIL_NONE;
		emit(b, f ? board_fail_name(f) : "info", "running", "%s", shell_errmsg(b->sh));
	}
	complete(b, rc, FAIL_NONE, rc ? "%s" : NULL, shell_errmsg(b->sh));
}

int board_shell(struct board *b, const char *cmd, uint64_t timeout_ms, board_cmd_cb cb, void *arg)
{
	int rc = shell_ready(b);
	if (rc)
		return rc;
	rc = shell_run(b->sh, cmd, tmo(timeout_ms, tmo(timeouts(b)->command_ms, DEFAULT_TIMEOUT_MS)),
		       on_cmd_done, b);
	if (rc)
		return rc;
	b->op = OP_SHELL;
	b->cmd_cb = cb;
	b->cb_arg = arg;
	set_state(b, BOARD_RUNNING);
	return LAB_OK;
}

static void on_put_done(struct shell *s, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(status);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct board *b = arg;
	set_state(b, BOARD_SHELL);
	enum board_fail f = rc == LAB_OK ? FAIL_NONE :
		shell_failure(b->sh) == SHELL_FAIL_PANIC ? FAIL_KERNEL_PANIC :
		rc == LAB_ETIMEOUT ? FAIL_COMMAND_TIMEOUT : FAIL_DEPLOY;
	complete(b, rc, f, rc ? "%s" : NULL, shell_errmsg(b->sh));
}

int board_put_file(struct board *b, const char *local_path, const char *remote_path,
		   board_done_cb cb, void *arg)
{
	int rc = shell_ready(b);
	if (rc)
		return rc;
	uint64_t t = tmo(timeouts(b)->command_ms, DEFAULT_TIMEOUT_MS) * 10;
	rc = shell_put_file(b->sh, local_path, remote_path, 0, t, on_put_done, b);
	if (rc)
		return rc;
	b->op = OP_PUT;
	b->done_cb = cb;
	b->cb_arg = arg;
	set_state(b, BOARD_RUNNING);
	return LAB_OK;
}

/* ---- the agent (the session itself is agent_session.c) ---- */

static void on_agent_msg(const struct proto_msg *m, void *arg)
{
	struct board *b = arg;
	if (b->msg_cb)
		b->msg_cb(b, m, b->cb_arg);
}

static void on_agent_info(const char *msg, void *arg)
{
	emit(arg, "info", "running", "%s", msg);
}

static void on_agent_done(int rc, enum agent_session_fail fail, const char *msg, const char *event,
			  void *arg)
{
	struct board *b = arg;
	static const enum board_fail fails[] = {
		[AGENT_SESSION_OK] = FAIL_NONE,
		[AGENT_SESSION_PANIC] = FAIL_KERNEL_PANIC,
		[AGENT_SESSION_TIMEOUT] = FAIL_COMMAND_TIMEOUT,
		[AGENT_SESSION_PROTOCOL] = FAIL_AGENT_PROTOCOL,
	};
	enum board_fail f = fails[fail];
	set_state(b, BOARD_SHELL);
	if (event)
		emit(b, board_fail_name(f), "running", "%s", event);
	complete(b, rc, f, msg ? "%s" : NULL, msg);
}

int board_agent(struct board *b, const char *args, uint64_t timeout_ms, board_msg_cb msg_cb,
		board_done_cb done_cb, void *arg)
{
	int rc = shell_ready(b);
	if (rc)
		return rc;
	const struct shell_cfg *sc = sh_cfg(b);
	if (!sc->agent_path || !sc->agent_path[0])
		return LAB_EUSAGE;
	b->op = OP_AGENT;
	b->msg_cb = msg_cb;
	b->done_cb = done_cb;
	b->cb_arg = arg;
	set_state(b, BOARD_RUNNING);
	static const struct agent_session_cbs cbs = {
		.msg = on_agent_msg, .info = on_agent_info, .done = on_agent_done};
	uint64_t t = tmo(timeout_ms, tmo(timeouts(b)->command_ms, DEFAULT_TIMEOUT_MS));
	if (agent_session_start(b->agent, sc->agent_path, sc->block_device, args, t, &cbs, b))
		complete(b, LAB_EINFRA, FAIL_AGENT_PROTOCOL, "agent: shell session busy");
	return LAB_OK;
}

/* ---- power ---- */

static void on_powered_off(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	LAB_UNUSED(state);
	struct board *b = arg;
	if (b->tr)
		transcript_mark(b->tr, "== power off%s ==", rc ? " failed" : "");
	close_transcript(b, true);
	set_state(b, BOARD_OFF);
	if (rc)
		emit(b, "power", "powering-off", "%s", msg ? msg : "power off failed");
	complete(b, rc, rc ? FAIL_POWER : FAIL_NONE, rc ? "%s" : NULL, msg ? msg : "power off failed");
}

int board_power_off(struct board *b, board_done_cb cb, void *arg)
{
	if (b->op != OP_NONE || b->cut != CUT_NONE)
		return LAB_EUSAGE;
	struct lab_err e = {0};
	stop_activity(b);
	b->op = OP_OFF;
	b->done_cb = cb;
	b->cb_arg = arg;
	if (ensure_power(b, &e)) {
		close_transcript(b, true);
		complete(b, e.rc ? e.rc : LAB_EUSAGE, FAIL_POWER, "%s", e.msg);
		return LAB_OK;
	}
	set_state(b, BOARD_POWERING_OFF);
	console_set_expect_down(b->con, true);
	if (power_request(b->pw, POWER_OFF, on_powered_off, b) != LAB_OK) {
		b->op = OP_NONE;
		return LAB_EUSAGE;
	}
	return LAB_OK;
}

static void on_power_op(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	struct board *b = arg;
	b->power_state = state;
	if (state == POWER_IS_OFF)
		set_state(b, BOARD_OFF);
	snprintf(b->msg, sizeof b->msg, "%s", msg ? msg : "");
	b->rc = rc;
	loop_timer_start(b->loop, &b->done_timer, 0);
}

int board_power(struct board *b, int power_op, board_power_cb cb, void *arg)
{
	if (b->op != OP_NONE || b->cut != CUT_NONE)
		return LAB_EUSAGE;
	struct lab_err e = {0};
	int rc = ensure_power(b, &e);
	if (rc)
		return rc;
	if (power_request(b->pw, (enum power_op)power_op, on_power_op, b) != LAB_OK)
		return LAB_EUSAGE;
	b->op = OP_POWER;
	b->power_cb = cb;
	b->cb_arg = arg;
	b->msg[0] = '\0';
	if (power_op == POWER_OFF)
		console_set_expect_down(b->con, true);
	else if (power_op == POWER_ON || power_op == POWER_CYCLE)
		console_set_expect_down(b->con, false);
	return LAB_OK;
}

/* ---- a power cut under a running agent command ---- */

/* The drain is over (or the power driver failed): abandon the command, report. */
static void on_cut_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct board *b = arg;
	board_power_cb cb = b->cut_cb;
	int rc = b->cut_rc;
	b->cut = CUT_NONE;
	b->cut_cb = NULL;
	/* the agent command (or its ending) is abandoned: none of its callbacks follows */
	stop_activity(b);
	loop_timer_stop(b->loop, &b->done_timer);
	b->op = OP_NONE;
	b->done_cb = NULL;
	b->msg_cb = NULL;
	if (b->tr)
		transcript_mark(b->tr, "== power cut%s ==", rc ? " failed" : "");
	close_transcript(b, true);
	if (b->power_state == POWER_IS_OFF)
		set_state(b, BOARD_OFF);
	if (cb)
		cb(b, rc, b->power_state, b->cut_msg[0] ? b->cut_msg : NULL, b->cut_arg);
}

static void on_cut_power(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	struct board *b = arg;
	b->cut_rc = rc;
	b->power_state = state;
	snprintf(b->cut_msg, sizeof b->cut_msg, "%s", msg ? msg : "");
	/* failed (the power may be on), or the command had ended: nothing to drain */
	if (rc != LAB_OK || b->op != OP_AGENT) {
		loop_timer_start(b->loop, &b->cut_timer, 0);
		return;
	}
	/* Lines the DUT printed before it lost power may still be in the UART,
	 * the USB-serial adapter, ser2net or the pty: read them until quiet. */
	b->cut = CUT_DRAINING;
	b->cut_deadline_ns = lab_now_ns() + (uint64_t)BOARD_CUT_DRAIN_MAX_MS * 1000000u;
	loop_timer_start(b->loop, &b->cut_timer, BOARD_CUT_QUIET_MS);
}

int board_power_cut(struct board *b, board_power_cb cb, void *arg)
{
	if (b->cut != CUT_NONE || (b->op != OP_NONE && b->op != OP_AGENT))
		return LAB_EUSAGE;
	struct lab_err e = {0};
	int rc = ensure_power(b, &e);
	if (rc)
		return rc;
	if (power_request(b->pw, POWER_OFF, on_cut_power, b) != LAB_OK)
		return LAB_EUSAGE;
	/* The board stays in its running state: its console output is the
	 * command's until the cut is over (on_con_data drops a board's output
	 * while it is powering off). */
	b->cut = CUT_POWERING;
	b->cut_cb = cb;
	b->cut_arg = arg;
	b->cut_rc = LAB_OK;
	b->cut_msg[0] = '\0';
	console_set_expect_down(b->con, true);
	if (b->tr)
		transcript_mark(b->tr, "== power cut requested ==");
	return LAB_OK;
}

void board_abort(struct board *b)
{
	stop_activity(b);
	loop_timer_stop(b->loop, &b->done_timer);
	loop_timer_stop(b->loop, &b->cut_timer);
	b->cut = CUT_NONE;
	b->cut_cb = NULL;
	b->op = OP_NONE;
	b->done_cb = NULL;
	b->cmd_cb = NULL;
	b->power_cb = NULL;
	close_transcript(b, true);
}

/* ---- health ---- */

void board_health_fail(struct board *b, const char *why)
{
	b->failures++;
	int64_t after = b->type ? b->type->quarantine_after : 0;
	if (!b->quarantined && after > 0 && b->failures >= after) {
		b->quarantined = true;
		set_state(b, BOARD_QUARANTINED);
		emit(b, "quarantine", NULL, "%d consecutive failures (quarantine_after %lld); last: %s",
		     b->failures, (long long)after, why ? why : "?");
	}
}

void board_health_ok(struct board *b)
{
	b->failures = 0;
}

void board_health_restore(struct board *b, int failures, bool quarantined)
{
	b->failures = failures;
	b->quarantined = quarantined;
}

bool board_quarantined(const struct board *b)
{
	return b->quarantined;
}

int board_failures(const struct board *b)
{
	return b->failures;
}

/* ---- lifecycle ---- */

int board_new(struct loop *l, const struct lab_cfg *lab, const struct board_cfg *cfg,
	      const struct board_events *ev, void *arg, struct board **out, struct lab_err *e)
{
	if (!cfg->console)
		return LAB_ERR(e, LAB_EUSAGE, "%s: no console: block in the lab", cfg->name);
	struct board *b = xcalloc(1, sizeof *b);
	b->loop = l;
	b->lab = lab;
	b->cfg = cfg;
	b->type = cfg->type;
	if (ev)
		b->ev = *ev;
	b->ev_arg = arg;
	b->state = BOARD_OFF;
	b->ub_default.prompt = (char *)"=> ";
	b->ub_default.autoboot_pattern = (char *)"Hit any key to stop autoboot";
	b->ub_default.interrupt_key = (char *)" ";
	b->sh_default.user = (char *)"root";
	loop_timer_init(&b->done_timer, on_done_timer, b);
	loop_timer_init(&b->cut_timer, on_cut_timer, b);
	loop_timer_init(&b->first_output, on_first_output_timeout, b);
	lab_buf_init(&b->cmd_out, 0);
	static const struct console_events cev = {
		.data = on_con_data, .state = on_con_state, .gone = on_con_gone};
	int rc = console_new(l, cfg->name, cfg->console, &cev, b, &b->con, e);
	if (rc) {
		free(b);
		return rc;
	}
	/* boot logs are long: 64 KiB of text per match is plenty for prompts and markers */
	b->x = expect_new(l, 0);
	b->ub = uboot_new(l, b->con, b->x, ub_cfg(b), cfg->name);
	b->sh = shell_new(l, b->con, b->x, sh_cfg(b), cfg->name);
	b->agent = agent_session_new(b->sh);
	/* configuration errors surface now rather than at the first boot */
	if ((rc = ensure_power(b, e)) != LAB_OK || (rc = ensure_deploy(b, e)) != LAB_OK) {
		board_free(b);
		return rc;
	}
	*out = b;
	return LAB_OK;
}

void board_free(struct board *b)
{
	if (!b)
		return;
	stop_activity(b);
	loop_timer_stop(b->loop, &b->done_timer);
	loop_timer_stop(b->loop, &b->cut_timer);
	close_transcript(b, false);
	uboot_free(b->ub);
	shell_free(b->sh);
	if (b->con)
		console_free(b->con);
	expect_free(b->x);
	power_free(b->pw);
	deploy_free(b->dep);
	agent_session_free(b->agent);
	free(b->extra);
	free(b->bootargs);
	free(b->tdir);
	free(b->workdir);
	lab_buf_free(&b->cmd_out);
	free(b);
}

const char *board_name(const struct board *b)
{
	return b->cfg->name;
}

const struct board_cfg *board_cfg(const struct board *b)
{
	return b->cfg;
}

enum board_state board_get_state(const struct board *b)
{
	return b->quarantined && b->op == OP_NONE ? BOARD_QUARANTINED : b->state;
}

int board_boot_count(const struct board *b)
{
	return b->boot_n;
}

struct console *board_console(struct board *b)
{
	return b->con;
}

int board_console_open(struct board *b, const char *transcript_dir, struct lab_err *e)
{
	int rc = ensure_console(b, e);
	if (rc)
		return rc;
	rc = open_transcript(b, transcript_dir, e);
	if (rc == LAB_OK)
		transcript_mark(b->tr, "== interactive console ==");
	return rc;
}

static void on_uboot_trace(struct uboot *u, const char *what, const char *detail, void *arg)
{
	LAB_UNUSED(u);
	struct board *b = arg;
	trace(b, what, "U-Boot: %s", detail);
}

void board_set_trace(struct board *b, board_trace_cb cb, void *arg)
{
	b->trace = cb;
	b->trace_arg = arg;
	uboot_set_trace(b->ub, cb ? on_uboot_trace : NULL, b);
}

void board_set_tap(struct board *b, board_tap_cb tap, void *arg)
{
	b->tap = tap;
	b->tap_arg = arg;
}
