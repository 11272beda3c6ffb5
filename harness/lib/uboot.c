/* uboot.c - a U-Boot session on a board console (see uboot.h for the rules). */
#include "uboot.h"
#include "console.h"
#include "expect.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_START_RE "Starting kernel|Booting Linux|Linux version [0-9]|Uncompressing Linux"
/* A command's status marker, `@@UB-<n>-<$?>@@`: one source for every line (its
 * compiled form is shared), the marker number checked in on_result. */
#define RESULT_RE "@@UB-([0-9]+)-(-?[0-9]+)@@"
#define PROMPT_WAIT_MS 1000   /* after Ctrl-C / an interrupt key: how long to wait for a prompt */
#define KEY_TRIES 6           /* interrupt key presses before giving up on a prompt */
#define ECHO_SLACK_MS 1000    /* echo budget on top of the paced typing time */
/* After one of U-Boot's own error lines: how long the fail marker may take
 * before the step is failed on the error line alone (U-Boot hung or reset). */
#define ERROR_GRACE_MS 3000

/* U-Boot 2023.01's error lines of the commands a lab runs (tftpboot, dhcp,
 * zboot, booti, bootz, bootm, bootefi, the shell itself), each matched as a
 * whole line.  The literal newline ends the match only once the line is
 * complete (REG_NEWLINE: a bracket without \n never crosses a line). */
#define UBOOT_ERROR_RE                                                                             \
	"[^\n]*(TFTP error: |Retry count exceeded|Bad Linux ARM64 Image magic|"                     \
	"Bad Linux ARM zImage magic|## Kernel loading failed|Unknown command '|"                   \
	"Wrong Image Format for bootm|ERROR: can't get kernel image|Invalid Boot Flag|"            \
	"Ramdisk image is corrupt|Could not find a valid device tree|No UEFI binary known|"         \
	"Bad Magic Number|Bad Data CRC|Retry time exceeded|No ethernet found|\\*\\*\\* ERROR: `|### ERROR ### Please RESET)[^\n]*\n"

enum ub_op { OP_NONE, OP_INTERRUPT, OP_SYNC, OP_RUN, OP_BOOT, OP_SCRIPT };

/* What the current line waits for after its echo was verified. */
enum ub_wait { W_NONE, W_SYNC, W_RESULT, W_BOOT };

struct ub_step {
	char *cmd;
	char *label;
	bool boot;
};

struct uboot {
	struct loop *loop;
	struct console *con;
	struct expect *x;
	const struct uboot_cfg *cfg;
	char *board;

	enum ub_op op;
	uboot_cb cb;
	void *arg;
	unsigned marker;         /* marker counter, unique per session */
	unsigned retypes;
	uint64_t slow_delay_ms;  /* learned pacing after dropped characters (0: none) */
	size_t slow_chunk;
	unsigned slow_window_n;  /* echo_window halved this often (dropped characters) */
	int pats[6];
	size_t npats;
	struct loop_timer deadline; /* whole operation */
	struct loop_timer step;     /* echo / prompt / marker wait */
	struct loop_timer done;     /* deferred completion */
	uint64_t step_timeout_ms;

	/* the line being typed */
	char line[UBOOT_MAX_LINE + 64];
	enum ub_wait wait;
	int tries;
	bool retyping;           /* waiting for the prompt after Ctrl-C */
	int keys;                /* interrupt key presses */
	bool after_sync_boot;    /* interrupt: sync follows */

	/* script (netboot / boot_local) */
	struct ub_step *steps;
	size_t nsteps, cur;

	/* result */
	int rc;
	struct lab_buf out;
	char err[512];
	char tailbuf[400];
	char errline[200];       /* U-Boot's own error line seen in the current step */
	bool autobooted;         /* interrupt: the kernel started without us */
	bool saw_autoboot;       /* interrupt: the autoboot prompt was seen */
	uboot_trace_cb trace;
	void *trace_arg;
};

static void ub_type(struct uboot *u);
static void ub_sync_start(struct uboot *u);
static void script_next(struct uboot *u);

static void clear_pats(struct uboot *u)
{
	for (size_t i = 0; i < u->npats; i++)
		expect_remove(u->x, u->pats[i]);
	u->npats = 0;
}

static void add_pat(struct uboot *u, enum expect_kind k, const char *pat, expect_cb cb)
{
	struct lab_err e = {0};
	int id = expect_add(u->x, k, pat, 0, cb, u, &e);
	if (id >= 0 && u->npats < LAB_ARRAY_SIZE(u->pats))
		u->pats[u->npats++] = id;
	else if (id >= 0)
		expect_remove(u->x, id);
}

static void free_steps(struct uboot *u)
{
	for (size_t i = 0; i < u->nsteps; i++) {
		free(u->steps[i].cmd);
		free(u->steps[i].label);
	}
	free(u->steps);
	u->steps = NULL;
	u->nsteps = u->cur = 0;
}

static void stop_all(struct uboot *u)
{
	clear_pats(u);
	loop_timer_stop(u->loop, &u->deadline);
	loop_timer_stop(u->loop, &u->step);
	u->wait = W_NONE;
	u->retyping = false;
}

static void on_done(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	uboot_cb cb = u->cb;
	void *cb_arg = u->arg;
	u->op = OP_NONE;
	u->cb = NULL;
	free_steps(u);
	if (cb)
		cb(u, u->rc, u->out.data ? u->out.data : "", u->out.len, cb_arg);
}

/* Finish the operation; the callback runs on the next loop pass. */
static void finish(struct uboot *u, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(struct uboot *u, int rc, const char *fmt, ...)
{
	stop_all(u);
	u->rc = rc;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(u->err, sizeof u->err, fmt, ap);
		va_end(ap);
	}
	lab_buf_cstr(&u->out);
	loop_timer_start(u->loop, &u->done, 0);
}

/* The pacing in force: the type's, or slower once the board was seen to drop input. */
static void eff_pacing(const struct uboot *u, uint64_t *delay_ms, size_t *chunk)
{
	uint64_t d = u->cfg->char_delay_ms;
	size_t c = u->cfg->chunk > 0 ? (size_t)u->cfg->chunk : 1;
	if (u->slow_delay_ms > d)
		d = u->slow_delay_ms;
	if (u->slow_chunk && u->slow_chunk < c)
		c = u->slow_chunk;
	*delay_ms = d;
	*chunk = c;
}

/* The echo window in force: the type's, halved at each slow-down. */
static size_t eff_window(const struct uboot *u)
{
	size_t w = u->cfg->echo_window > 0 ? (size_t)u->cfg->echo_window : 0;
	for (unsigned i = 0; i < u->slow_window_n && w > 1; i++)
		w /= 2;
	return w > 1 ? w : 0;
}

static void set_pacing(struct uboot *u)
{
	struct console_pacing p = {0};
	uint64_t d;
	size_t c;
	eff_pacing(u, &d, &c);
	if (d > 0) {
		p.char_delay_us = d * 1000;
		p.chunk = c;
		p.echo_window = eff_window(u);
	}
	console_set_pacing(u->con, &p);
}

/* A mangled echo: type slower from now on (bootloader UARTs without flow
 * control drop what overflows their FIFO).  Bounded: 1 character per 40 ms. */
static void slow_down(struct uboot *u)
{
	uint64_t d;
	size_t c;
	eff_pacing(u, &d, &c);
	if (d == 0) {
		d = 5;
		c = c > 16 ? 16 : c;
	} else {
		c = c > 1 ? c / 2 : 1;
		d = d * 2 > 40 ? 40 : d * 2;
	}
	u->slow_delay_ms = d;
	u->slow_chunk = c;
	u->slow_window_n++;
	set_pacing(u);
}

static uint64_t typing_ms(const struct uboot *u, size_t n)
{
	uint64_t d;
	size_t c;
	eff_pacing(u, &d, &c);
	if (d == 0)
		return 0;
	return (uint64_t)((n + c - 1) / c) * d;
}

static const char *prompt(const struct uboot *u)
{
	return u->cfg->prompt && u->cfg->prompt[0] ? u->cfg->prompt : "=> ";
}

static int send(struct uboot *u, const char *s)
{
	if (console_write_str(u->con, s) != LAB_OK) {
		finish(u, LAB_EINFRA, "%s: console write failed (queue full or console down)", u->board);
		return -1;
	}
	return 0;
}

/* The tail of U-Boot's output for error messages: trailing blank lines
 * dropped, at most max bytes, newlines shown as " / ". */
static const char *tail(struct uboot *u, size_t max)
{
	char *buf = u->tailbuf;
	size_t cap = sizeof u->tailbuf;
	const char *s = u->out.data ? u->out.data : "";
	size_t len = u->out.len;
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	const char *p = len > max ? s + len - max : s;
	if (p > s && p[-1] != '\n') {
		/* start at a line, not in the middle of one */
		const char *nl = memchr(p, '\n', (size_t)(s + len - p));
		if (nl && nl + 1 < s + len)
			p = nl + 1;
	}
	size_t o = 0;
	for (; p < s + len && o + 4 < cap; p++) {
		if (*p == '\n') {
			memcpy(buf + o, " / ", 3);
			o += 3;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* ---- typing with echo verification ---- */

static void trace(struct uboot *u, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void trace(struct uboot *u, const char *what, const char *fmt, ...)
{
	if (!u->trace)
		return;
	char d[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, sizeof d, fmt, ap);
	va_end(ap);
	u->trace(u, what, d, u->trace_arg);
}

static void on_echo_timeout(struct loop *l, struct loop_timer *t, void *arg);

static const char *step_label(const struct uboot *u)
{
	return u->op == OP_SCRIPT && u->cur > 0 ? u->steps[u->cur - 1].label : "command";
}

/* Keep the command's output: the text before a match, without the newline that
 * ended the echoed line. */
static void out_add(struct uboot *u, const char *b, size_t n)
{
	if (u->out.len == 0)
		while (n > 0 && b[0] == '\n') {
			b++;
			n--;
		}
	lab_buf_append(&u->out, b, n);
	lab_buf_cstr(&u->out);
}

/* "TFTP error: 'File not found' (1)" and the tail of the output around it. */
static void fail_with_output(struct uboot *u, const char *what)
{
	if (u->errline[0])
		finish(u, LAB_EFOUND, "%s: U-Boot %s failed: %s (output: %s)", u->board, what,
		       u->errline, tail(u, 160));
	else
		finish(u, LAB_EFOUND, "%s: U-Boot %s failed: %s", u->board, what, tail(u, 300));
}

static void on_result(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	if (m->timeout)
		return;
	enum ub_wait w = u->wait;
	out_add(u, m->before, m->before_len);
	if (w == W_RESULT && (!m->groups[1] || strtoul(m->groups[1], NULL, 10) != u->marker)) {
		/* another line's status marker: it cannot follow this line's echo
		 * unless the console is confused; not this command's answer, so the
		 * patterns and the timeout stay */
		out_add(u, m->text, m->len);
		trace(u, "ignored", "%s (not marker %u)", m->text, u->marker);
		return;
	}
	clear_pats(u);
	loop_timer_stop(u->loop, &u->step);
	u->wait = W_NONE;
	trace(u, "matched", "%s", m->text);

	if (w == W_SYNC) {
		if (u->op == OP_SCRIPT) {
			script_next(u);
			return;
		}
		finish(u, LAB_OK, NULL);
		return;
	}
	bool kernel = w == W_BOOT && strstr(m->text, "@@UB-") == NULL;
	bool okm = w == W_RESULT && m->groups[2] && strcmp(m->groups[2], "0") == 0;
	if (w == W_BOOT) {
		if (kernel) {
			if (u->op == OP_SCRIPT && u->cur < u->nsteps) {
				script_next(u);
				return;
			}
			finish(u, LAB_OK, NULL);
		} else {
			fail_with_output(u, u->op == OP_SCRIPT ? step_label(u) : "boot command");
		}
		return;
	}
	if (!okm) {
		fail_with_output(u, step_label(u));
		return;
	}
	if (u->op == OP_SCRIPT) {
		script_next(u);
		return;
	}
	finish(u, LAB_OK, NULL);
}

static void on_marker_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	if (u->errline[0]) {
		/* U-Boot said what went wrong and then never came back to its prompt */
		fail_with_output(u, step_label(u));
		return;
	}
	const char *what = u->wait == W_BOOT ? "no kernel start after the boot command" :
			   u->wait == W_SYNC ? "U-Boot did not answer the marker command" :
			   "command did not complete";
	const char *label = u->op == OP_SCRIPT && u->cur > 0 ? u->steps[u->cur - 1].label : NULL;
	finish(u, LAB_ETIMEOUT, "%s: %s%s%s within %llu ms", u->board, label ? label : "",
	       label ? ": " : "", what, (unsigned long long)u->step_timeout_ms);
}

/* One of U-Boot's own error lines: remember the first, keep the output, and
 * give the fail marker ERROR_GRACE_MS to come (it does on U-Boot 2023.01:
 * `if` runs the else branch); a command that still succeeds overall (OK marker
 * within the grace) is a success. */
static void on_error_line(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	if (m->timeout)
		return;
	out_add(u, m->before, m->before_len);
	out_add(u, m->text, m->len);
	if (!u->errline[0]) {
		size_t n = m->len;
		const char *t = m->text;
		while (n > 0 && (t[0] == '\n' || t[0] == ' '))
			t++, n--;
		while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == ' '))
			n--;
		if (n >= sizeof u->errline)
			n = sizeof u->errline - 1;
		memcpy(u->errline, t, n);
		u->errline[n] = '\0';
		trace(u, "matched", "U-Boot error line: %s", u->errline);
		loop_timer_stop(u->loop, &u->step);
		u->step.cb = on_marker_timeout;
		loop_timer_start(u->loop, &u->step, ERROR_GRACE_MS);
	}
}

static void on_echo(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	if (m->timeout)
		return;
	clear_pats(u);
	loop_timer_stop(u->loop, &u->step);
	/* Exactly one terminator, and only now that the line is known to be right. */
	if (send(u, "\r"))
		return;
	lab_buf_free(&u->out);
	lab_buf_init(&u->out, UBOOT_MAX_OUTPUT);
	u->errline[0] = '\0';
	char pat[64];
	switch (u->wait) {
	case W_SYNC:
		snprintf(pat, sizeof pat, "@@UB-%u@@", u->marker);
		add_pat(u, EXPECT_LITERAL, pat, on_result);
		trace(u, "waits for", "%s (U-Boot answers)", pat);
		break;
	case W_RESULT:
		add_pat(u, EXPECT_REGEX, RESULT_RE, on_result);
		add_pat(u, EXPECT_REGEX, UBOOT_ERROR_RE, on_error_line);
		trace(u, "waits for", "@@UB-%u-<status>@@ (0: success) or a U-Boot error line, %.1f s",
		      u->marker, (double)u->step_timeout_ms / 1000.0);
		break;
	case W_BOOT:
		snprintf(pat, sizeof pat, "@@UB-%u-FAIL@@", u->marker);
		add_pat(u, EXPECT_LITERAL, pat, on_result);
		add_pat(u, EXPECT_REGEX, KERNEL_START_RE, on_result);
		add_pat(u, EXPECT_REGEX, UBOOT_ERROR_RE, on_error_line);
		trace(u, "waits for", "kernel start (/%s/) or %s or a U-Boot error line, %.1f s",
		      KERNEL_START_RE, pat, (double)u->step_timeout_ms / 1000.0);
		break;
	case W_NONE:
		break;
	}
	u->step.cb = on_marker_timeout;
	loop_timer_start(u->loop, &u->step, u->step_timeout_ms);
}

static void on_retype_prompt(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	struct uboot *u = arg;
	clear_pats(u);
	loop_timer_stop(u->loop, &u->step);
	u->retyping = false;
	ub_type(u);
}

static void on_retype_wait(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	clear_pats(u);
	u->retyping = false;
	ub_type(u); /* no prompt after Ctrl-C: type anyway, the echo check decides */
}

static void on_echo_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	clear_pats(u);
	if (++u->tries > UBOOT_TYPE_RETRIES) {
		finish(u, LAB_EINFRA, "%s: U-Boot echo never matched the typed line after %d tries "
		       "(characters dropped? slow the typing: uboot.char_delay/chunk): %.80s",
		       u->board, u->tries, u->line);
		return;
	}
	u->retypes++;
	slow_down(u);
	/* Ctrl-C makes U-Boot drop the mangled line and print a fresh prompt. */
	if (send(u, "\x03"))
		return;
	u->retyping = true;
	add_pat(u, EXPECT_LITERAL, prompt(u), on_retype_prompt);
	u->step.cb = on_retype_wait;
	loop_timer_start(u->loop, &u->step, PROMPT_WAIT_MS + typing_ms(u, 1));
}

/* Type u->line (no terminator) and wait for its exact echo. */
static void ub_type(struct uboot *u)
{
	expect_flush(u->x);
	trace(u, "types", "%s", u->line);
	console_echo_reset(u->con); /* an interrupt key or a mangled line is not echoed */
	if (send(u, u->line))
		return;
	add_pat(u, EXPECT_LITERAL, u->line, on_echo);
	u->step.cb = on_echo_timeout;
	loop_timer_start(u->loop, &u->step, ECHO_SLACK_MS + typing_ms(u, strlen(u->line)));
}

static int start_line(struct uboot *u, enum ub_wait w, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int start_line(struct uboot *u, enum ub_wait w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(u->line, sizeof u->line, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > UBOOT_MAX_LINE) {
		finish(u, LAB_EUSAGE, "%s: U-Boot command line too long (%d > %d characters)", u->board,
		       n, UBOOT_MAX_LINE);
		return -1;
	}
	u->wait = w;
	u->tries = 0;
	ub_type(u);
	return 0;
}

static void line_for_cmd(struct uboot *u, const char *cmd, bool boot)
{
	u->marker++;
	if (boot)
		start_line(u, W_BOOT, "%s; echo @@UB-%u-FAIL@@", cmd, u->marker);
	else
		/* The command's status in the marker: 37 characters shorter than
		 * `if CMD; then echo @@UB-n-OK@@; else echo @@UB-n-FAIL@@; fi`, which
		 * is typed at char_delay/chunk (0.74 s a command at sdhci-sprd's
		 * 20 ms a character).  Not `CMD && echo OK || echo FAIL`: U-Boot's
		 * hush skips the rest of an and-or list after a failing `&&`. */
		start_line(u, W_RESULT, "%s; echo @@UB-%u-$?@@", cmd, u->marker);
}

/* ---- sync ---- */

static void sync_type(struct uboot *u)
{
	clear_pats(u);
	loop_timer_stop(u->loop, &u->step);
	u->marker++;
	start_line(u, W_SYNC, "echo @@UB-%u@@", u->marker);
}

static void on_sync_prompt(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	sync_type(arg);
}

static void on_sync_wait(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	sync_type(arg);
}

static void ub_sync_start(struct uboot *u)
{
	/* Ctrl-C clears whatever is on the command line (a stray interrupt key). */
	if (send(u, "\x03"))
		return;
	add_pat(u, EXPECT_LITERAL, prompt(u), on_sync_prompt);
	u->step.cb = on_sync_wait;
	loop_timer_start(u->loop, &u->step, PROMPT_WAIT_MS);
}

/* ---- interrupt ---- */

static void on_key_wait(struct loop *l, struct loop_timer *t, void *arg);

static void on_prompt_seen(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	trace(u, "matched", "the prompt `%s`", m->text);
	clear_pats(u);
	loop_timer_stop(u->loop, &u->step);
	ub_sync_start(u);
}

static void on_autobooted(struct expect *x, const struct expect_match *m, void *arg);

static void press_key(struct uboot *u)
{
	const char *key = u->cfg->interrupt_key && u->cfg->interrupt_key[0] ? u->cfg->interrupt_key : " ";
	if (send(u, key))
		return;
	u->keys++;
	clear_pats(u);
	trace(u, "waits for", "the U-Boot prompt `%s` after interrupt key %d", prompt(u), u->keys);
	add_pat(u, EXPECT_LITERAL, prompt(u), on_prompt_seen);
	add_pat(u, EXPECT_REGEX, KERNEL_START_RE, on_autobooted);
	u->step.cb = on_key_wait;
	loop_timer_start(u->loop, &u->step, PROMPT_WAIT_MS);
}

static void on_key_wait(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	if (u->keys >= KEY_TRIES) {
		/* Some U-Boots print no prompt until a line is entered: try the marker. */
		clear_pats(u);
		ub_sync_start(u);
		return;
	}
	press_key(u);
}

static void on_autoboot(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	u->saw_autoboot = true;
	trace(u, "matched", "%s", m->text);
	press_key(u);
}

/* The kernel started while we were waiting to interrupt autoboot: U-Boot
 * booted by itself (bootdelay -2, or 0 and the key came too late). */
static void on_autobooted(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct uboot *u = arg;
	u->autobooted = true;
	trace(u, "matched", "%s (the kernel started without us)", m->text);
	if (!u->saw_autoboot)
		finish(u, LAB_EFOUND, "%s: U-Boot booted by itself: the kernel started (`%s`) with no "
		       "autoboot prompt (/%s/) before it, so autoboot cannot be interrupted "
		       "(bootdelay -2 on this board?) or uboot.autoboot_pattern does not match its text",
		       u->board, m->text, u->cfg->autoboot_pattern && u->cfg->autoboot_pattern[0] ?
		       u->cfg->autoboot_pattern : "Hit any key to stop autoboot");
	else
		finish(u, LAB_EFOUND, "%s: U-Boot booted by itself: the kernel started (`%s`) after the "
		       "autoboot prompt and %d interrupt key press%s (bootdelay 0, or the board "
		       "wants another uboot.interrupt_key)", u->board, m->text, u->keys,
		       u->keys == 1 ? "" : "es");
}

static void on_deadline(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct uboot *u = arg;
	const char *what = "operation";
	if (u->wait != W_NONE && u->tries > 0 && (u->retyping || u->step.cb == on_echo_timeout)) {
		finish(u, LAB_EINFRA, "%s: U-Boot echo never matched the typed line after %d tries "
		       "(characters dropped? slow the typing: uboot.char_delay/chunk): %.80s",
		       u->board, u->tries, u->line);
		return;
	}
	switch (u->op) {
	case OP_INTERRUPT:
		what = u->keys ? "no U-Boot prompt after interrupting autoboot" :
			"no autoboot prompt, U-Boot prompt or kernel start";
		break;
	case OP_SYNC:
		what = "U-Boot did not answer";
		break;
	case OP_RUN:
		what = "command did not complete";
		break;
	case OP_BOOT:
		what = "kernel did not start";
		break;
	case OP_SCRIPT:
		what = u->cur > 0 ? u->steps[u->cur - 1].label : "sequence";
		break;
	case OP_NONE:
		break;
	}
	finish(u, LAB_ETIMEOUT, "%s: %s (timed out)", u->board, what);
}

/* ---- public API ---- */

struct uboot *uboot_new(struct loop *l, struct console *c, struct expect *x,
			const struct uboot_cfg *cfg, const char *board)
{
	struct uboot *u = xcalloc(1, sizeof *u);
	u->loop = l;
	u->con = c;
	u->x = x;
	u->cfg = cfg;
	u->board = xstrdup(board ? board : "board");
	loop_timer_init(&u->deadline, on_deadline, u);
	loop_timer_init(&u->step, on_echo_timeout, u);
	loop_timer_init(&u->done, on_done, u);
	lab_buf_init(&u->out, UBOOT_MAX_OUTPUT);
	return u;
}

void uboot_cancel(struct uboot *u)
{
	if (!u)
		return;
	stop_all(u);
	loop_timer_stop(u->loop, &u->done);
	free_steps(u);
	u->op = OP_NONE;
	u->cb = NULL;
}

void uboot_free(struct uboot *u)
{
	if (!u)
		return;
	uboot_cancel(u);
	lab_buf_free(&u->out);
	free(u->board);
	free(u);
}

bool uboot_busy(const struct uboot *u)
{
	return u->op != OP_NONE;
}

const char *uboot_errmsg(const struct uboot *u)
{
	return u->err;
}

unsigned uboot_retypes(const struct uboot *u)
{
	return u->retypes;
}

bool uboot_autobooted(const struct uboot *u)
{
	return u->autobooted;
}

void uboot_set_trace(struct uboot *u, uboot_trace_cb cb, void *arg)
{
	u->trace = cb;
	u->trace_arg = arg;
}

char *uboot_bootargs(const struct uboot_cfg *cfg, const char *cmdline)
{
	const char *a = cfg->bootargs ? cfg->bootargs : "";
	const char *b = cmdline ? cmdline : "";
	return xasprintf("%s%s%s", a, a[0] && b[0] ? " " : "", b);
}

static int begin(struct uboot *u, enum ub_op op, uint64_t timeout_ms, uboot_cb cb, void *arg)
{
	if (u->op != OP_NONE)
		return LAB_EUSAGE;
	u->op = op;
	u->cb = cb;
	u->arg = arg;
	u->rc = LAB_OK;
	u->err[0] = '\0';
	u->keys = 0;
	u->autobooted = u->saw_autoboot = false;
	u->errline[0] = '\0';
	lab_buf_free(&u->out);
	lab_buf_init(&u->out, UBOOT_MAX_OUTPUT);
	u->step_timeout_ms = timeout_ms ? timeout_ms : 30000;
	set_pacing(u);
	if (timeout_ms)
		loop_timer_start(u->loop, &u->deadline, timeout_ms);
	return LAB_OK;
}

int uboot_interrupt(struct uboot *u, uint64_t timeout_ms, uboot_cb cb, void *arg)
{
	int rc = begin(u, OP_INTERRUPT, timeout_ms, cb, arg);
	if (rc)
		return rc;
	const char *pat = u->cfg->autoboot_pattern && u->cfg->autoboot_pattern[0] ?
		u->cfg->autoboot_pattern : "Hit any key to stop autoboot";
	struct lab_err e = {0};
	int id = expect_add(u->x, EXPECT_REGEX, pat, 0, on_autoboot, u, &e);
	if (id < 0) {
		finish(u, LAB_EUSAGE, "%s: bad uboot.autoboot_pattern: %s", u->board, e.msg);
		return LAB_OK;
	}
	u->pats[u->npats++] = id;
	/* Already stopped at a prompt (bootdelay -1, or a previous interrupt). */
	add_pat(u, EXPECT_LITERAL, prompt(u), on_prompt_seen);
	add_pat(u, EXPECT_REGEX, KERNEL_START_RE, on_autobooted);
	trace(u, "waits for", "/%s/ (autoboot), the prompt `%s` or kernel start, %.1f s", pat,
	      prompt(u), (double)timeout_ms / 1000.0);
	return LAB_OK;
}

int uboot_sync(struct uboot *u, uint64_t timeout_ms, uboot_cb cb, void *arg)
{
	int rc = begin(u, OP_SYNC, timeout_ms, cb, arg);
	if (rc)
		return rc;
	ub_sync_start(u);
	return LAB_OK;
}

int uboot_run(struct uboot *u, const char *cmd, uint64_t timeout_ms, uboot_cb cb, void *arg)
{
	int rc = begin(u, OP_RUN, timeout_ms, cb, arg);
	if (rc)
		return rc;
	line_for_cmd(u, cmd, false);
	return LAB_OK;
}

int uboot_boot(struct uboot *u, const char *cmd, uint64_t timeout_ms, uboot_cb cb, void *arg)
{
	int rc = begin(u, OP_BOOT, timeout_ms, cb, arg);
	if (rc)
		return rc;
	line_for_cmd(u, cmd && cmd[0] ? cmd : "boot", true);
	return LAB_OK;
}

static char *setenv_cmd(const char *name, const char *value)
{
	return xasprintf("setenv %s '%s'", name, value ? value : "");
}

static bool valid_env_name(const char *s)
{
	if (!s || !s[0])
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

int uboot_setenv(struct uboot *u, const char *name, const char *value, uint64_t timeout_ms,
		 uboot_cb cb, void *arg)
{
	if (!valid_env_name(name) || (value && strchr(value, '\'')))
		return LAB_EUSAGE;
	int rc = begin(u, OP_RUN, timeout_ms, cb, arg);
	if (rc)
		return rc;
	char *c = setenv_cmd(name, value);
	line_for_cmd(u, c, false);
	free(c);
	return LAB_OK;
}

/* ---- scripts: a list of commands run one after another ---- */

static void add_step(struct uboot *u, const char *label, bool boot, char *cmd)
{
	u->steps = xreallocarray(u->steps, u->nsteps + 1, sizeof *u->steps);
	u->steps[u->nsteps].cmd = cmd;
	u->steps[u->nsteps].label = xstrdup(label);
	u->steps[u->nsteps].boot = boot;
	u->nsteps++;
}

static void script_next(struct uboot *u)
{
	if (u->cur >= u->nsteps) {
		finish(u, LAB_OK, NULL);
		return;
	}
	struct ub_step *s = &u->steps[u->cur++];
	line_for_cmd(u, s->cmd, s->boot);
}

static int add_env_steps(struct uboot *u)
{
	for (size_t i = 0; i < u->cfg->env.n; i++) {
		const char *kv = u->cfg->env.v[i];
		const char *eq = strchr(kv, '=');
		if (!eq)
			return -1;
		char *name = xstrndup(kv, (size_t)(eq - kv));
		if (!valid_env_name(name) || strchr(eq + 1, '\'')) {
			free(name);
			return -1;
		}
		char *label = xasprintf("setenv %s", name);
		add_step(u, label, false, setenv_cmd(name, eq + 1));
		free(label);
		free(name);
	}
	return 0;
}

static bool empty(const char *s)
{
	return !s || !s[0];
}

static int script_start(struct uboot *u, uboot_cb cb, void *arg, uint64_t timeout_ms,
			uint64_t step_ms)
{
	/* begin() resets state; steps were prepared by the caller on u->steps already */
	struct ub_step *steps = u->steps;
	size_t n = u->nsteps;
	u->steps = NULL;
	u->nsteps = 0;
	int rc = begin(u, OP_SCRIPT, timeout_ms, cb, arg);
	u->steps = steps;
	u->nsteps = n;
	u->cur = 0;
	if (rc) {
		free_steps(u);
		return rc;
	}
	u->step_timeout_ms = step_ms;
	script_next(u);
	return LAB_OK;
}

int uboot_netboot(struct uboot *u, const struct uboot_netboot *nb, uint64_t timeout_ms,
		  uboot_cb cb, void *arg)
{
	if (u->op != OP_NONE)
		return LAB_EUSAGE;
	if (empty(nb->kernel) || (nb->bootargs && strchr(nb->bootargs, '\'')) ||
	    (u->cfg->bootargs && strchr(u->cfg->bootargs, '\'')))
		return LAB_EUSAGE;
	free_steps(u);
	if (add_env_steps(u)) {
		free_steps(u);
		return LAB_EUSAGE;
	}
	if (!empty(nb->serverip))
		add_step(u, "setenv serverip", false, setenv_cmd("serverip", nb->serverip));
	if (nb->dhcp) {
		/* autoload=no: dhcp must not start a TFTP of its own */
		add_step(u, "setenv autoload", false, setenv_cmd("autoload", "no"));
		add_step(u, "dhcp", false, xstrdup("dhcp"));
		if (!empty(nb->serverip)) /* DHCP may have overwritten it */
			add_step(u, "setenv serverip", false, setenv_cmd("serverip", nb->serverip));
	} else {
		if (!empty(nb->ipaddr))
			add_step(u, "setenv ipaddr", false, setenv_cmd("ipaddr", nb->ipaddr));
		if (!empty(nb->netmask))
			add_step(u, "setenv netmask", false, setenv_cmd("netmask", nb->netmask));
	}
	add_step(u, "tftp kernel", false, xasprintf("tftpboot ${kernel_addr_r} %s", nb->kernel));
	if (!empty(nb->dtb))
		add_step(u, "tftp dtb", false, xasprintf("tftpboot ${fdt_addr_r} %s", nb->dtb));
	if (!empty(nb->initrd)) {
		add_step(u, "tftp initrd", false, xasprintf("tftpboot ${ramdisk_addr_r} %s", nb->initrd));
		/* ${filesize} is overwritten by the next tftp: keep the initrd's */
		add_step(u, "save initrd size", false, xstrdup("setenv initrd_size ${filesize}"));
	}
	/* Always: the board type's uboot.bootargs, then the kernel's and the mode's
	 * command line (nb->bootargs); U-Boot's own ${bootargs} belongs to the
	 * board's default boot and is replaced. */
	char *ba = uboot_bootargs(u->cfg, nb->bootargs);
	add_step(u, "setenv bootargs", false, setenv_cmd("bootargs", ba));
	free(ba);
	char *boot;
	if (!empty(nb->boot_cmd))
		boot = xstrdup(nb->boot_cmd);
	else if (!empty(u->cfg->boot_cmd))
		boot = xstrdup(u->cfg->boot_cmd);
	else
		boot = xasprintf("booti ${kernel_addr_r} %s%s", empty(nb->initrd) ? "-" :
				 "${ramdisk_addr_r}:${initrd_size}", empty(nb->dtb) ? "" :
				 " ${fdt_addr_r}");
	add_step(u, "boot", true, boot);
	return script_start(u, cb, arg, timeout_ms, nb->step_timeout_ms ? nb->step_timeout_ms : 120000);
}

int uboot_boot_local(struct uboot *u, const char *extra_bootargs, uint64_t timeout_ms,
		     uboot_cb cb, void *arg)
{
	if (u->op != OP_NONE)
		return LAB_EUSAGE;
	if ((extra_bootargs && strchr(extra_bootargs, '\'')) ||
	    (u->cfg->bootargs && strchr(u->cfg->bootargs, '\'')))
		return LAB_EUSAGE;
	free_steps(u);
	if (add_env_steps(u)) {
		free_steps(u);
		return LAB_EUSAGE;
	}
	bool has_extra = !empty(extra_bootargs);
	if (!empty(u->cfg->bootargs)) {
		char *v = xasprintf("%s%s%s", u->cfg->bootargs, has_extra ? " " : "",
				    has_extra ? extra_bootargs : "");
		add_step(u, "setenv bootargs", false, setenv_cmd("bootargs", v));
		free(v);
	} else if (has_extra) {
		/* Double quotes: hush expands ${bootargs} at run time. */
		if (strchr(extra_bootargs, '"') || strchr(extra_bootargs, '$')) {
			free_steps(u);
			return LAB_EUSAGE;
		}
		add_step(u, "setenv bootargs", false,
			 xasprintf("setenv bootargs \"${bootargs} %s\"", extra_bootargs));
	}
	/* cfg->boot_cmd starts images loaded by a deploy; from the board's own storage
	 * U-Boot's `boot` runs ${bootcmd}, which loads them first. */
	add_step(u, "boot", true, xstrdup("boot"));
	return script_start(u, cb, arg, timeout_ms, timeout_ms ? timeout_ms : 60000);
}
