/* shell.c - a Linux shell session on a board console (see shell.h). */
#include "shell.h"
#include "console.h"
#include "expect.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PUT_MAX (64u * 1024 * 1024)
#define LINE_SNIP 200
/* A command's output and result buffers keep up to this much room from one
 * command to the next: a boot's short commands reuse them.  Larger ones are
 * given back (4 KiB kept cost 6 KB a board at 1,024 boards, against the
 * 100 KB budget). */
#define SHELL_KEEP_ROOM 1024

/* Lines that mean the kernel is dead or dying, on boot and while running. */
static const char *const panic_markers[] = {
	"Kernel panic - not syncing", "Internal error: Oops", "Unable to handle kernel",
	"BUG: unable to handle", "general protection fault:", "Oops: 0", NULL,
};

enum sh_op { OP_NONE, OP_ATTACH, OP_RUN, OP_PUT, OP_GET, OP_AGENT };
enum sh_attach { AT_BOOT, AT_LOGIN, AT_SETUP };

struct shell;
/* Continuation after an internal command finished. */
typedef void (*sh_next)(struct shell *s, int rc, int status);

struct shell {
	struct loop *loop;
	struct console *con;
	struct expect *x;
	const struct shell_cfg *cfg;
	char *board;
	char prompt[48];

	enum sh_op op;
	shell_cb cb;
	void *arg;
	shell_line_cb line_cb;
	struct loop_timer deadline, step, done;
	int pats[6];
	size_t npats;

	/* attach */
	enum sh_attach at;
	bool login_seen, password_sent;
	uint64_t boot_ms, login_ms;

	/* the command in flight */
	bool in_cmd, seen_begin;
	int prompt_pat;          /* expect id of the prompt watch, -1 when none */
	unsigned n;
	char mbegin[24], mend[24]; /* "@@BEGIN-n@@" and "@@END-n@@ " of command n */
	size_t mbegin_len, mend_len;
	uint64_t cmd_timeout_ms;
	sh_next next;
	struct lab_buf out;
	int status;

	/* put / get / agent */
	char *data;
	size_t len, off;
	char *remote;
	unsigned mode;
	size_t get_max;
	bool pushed;

	/* result */
	int rc;
	int result_status;
	enum shell_fail fail;
	bool panicked;
	char panic_line[LINE_SNIP + 1];
	char err[512];
	/* What the callback gets as out, when has_result (else ""): an op's
	 * start leaves the buffer alone, so a callback that starts the next
	 * command still reads its own output ("valid during the callback"). */
	struct lab_buf result;
	bool has_result;
};

static void run_internal(struct shell *s, const char *cmd, uint64_t timeout_ms, sh_next next);

/* ---- small helpers ---- */

static void clear_pats(struct shell *s)
{
	for (size_t i = 0; i < s->npats; i++)
		expect_remove(s->x, s->pats[i]);
	s->npats = 0;
}

static int add_pat(struct shell *s, enum expect_kind k, const char *pat, expect_cb cb)
{
	struct lab_err e = {0};
	int id = expect_add(s->x, k, pat, 0, cb, s, &e);
	if (id < 0) {
		snprintf(s->err, sizeof s->err, "%s: bad pattern '%.60s': %.300s", s->board, pat, e.msg);
		return -1;
	}
	if (s->npats < LAB_ARRAY_SIZE(s->pats))
		s->pats[s->npats++] = id;
	else
		expect_remove(s->x, id);
	return 0;
}

static void on_done(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct shell *s = arg;
	shell_cb cb = s->cb;
	void *cb_arg = s->arg;
	s->op = OP_NONE;
	s->cb = NULL;
	s->line_cb = NULL;
	if (cb)
		cb(s, s->rc, s->result_status, s->has_result && s->result.data ? s->result.data : "",
		   s->has_result ? s->result.len : 0, cb_arg);
}

static void stop_all(struct shell *s)
{
	clear_pats(s);
	if (s->prompt_pat >= 0) {
		expect_remove(s->x, s->prompt_pat);
		s->prompt_pat = -1;
	}
	loop_timer_stop(s->loop, &s->deadline);
	loop_timer_stop(s->loop, &s->step);
	s->in_cmd = false;
	s->next = NULL;
	free(s->data);
	s->data = NULL;
	free(s->remote);
	s->remote = NULL;
}

static void finish(struct shell *s, int rc, enum shell_fail f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void finish(struct shell *s, int rc, enum shell_fail f, const char *fmt, ...)
{
	if (s->op == OP_NONE || loop_timer_pending(&s->done))
		return;
	stop_all(s);
	s->rc = rc;
	s->fail = rc == LAB_OK ? SHELL_FAIL_NONE : f;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof s->err, fmt, ap);
		va_end(ap);
	}
	lab_buf_cstr(&s->result);
	loop_timer_start(s->loop, &s->done, 0);
}

static int send(struct shell *s, const char *str)
{
	if (console_write_str(s->con, str) != LAB_OK) {
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: console write failed (queue full or console down)",
		       s->board);
		return -1;
	}
	return 0;
}

static bool safe_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("/._-+:,=@%", c) != NULL;
}

char *shell_quote(const char *str)
{
	bool plain = str[0] != '\0';
	for (const char *p = str; *p; p++)
		if (!safe_char(*p))
			plain = false;
	if (plain)
		return xstrdup(str);
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_append(&b, "'", 1);
	for (const char *p = str; *p; p++) {
		if (*p == '\'')
			lab_buf_append(&b, "'\\''", 4);
		else
			lab_buf_append(&b, p, 1);
	}
	lab_buf_append(&b, "'", 1);
	lab_buf_cstr(&b);
	return b.data;
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64chars[(v >> 18) & 63];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

/* Decode, skipping whitespace; -1 on a bad character. */
static int b64_decode(const char *in, size_t n, struct lab_buf *out)
{
	unsigned v = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (c == '\n' || c == ' ' || c == '\t' || c == '\r')
			continue;
		if (c == '=')
			break;
		const char *p = strchr(b64chars, c);
		if (!p || !c)
			return -1;
		v = (v << 6) | (unsigned)(p - b64chars);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			unsigned char byte = (unsigned char)((v >> bits) & 0xff);
			if (lab_buf_append(out, &byte, 1))
				return -1;
		}
	}
	return 0;
}

/* ---- lines: markers, output, panics ---- */

static bool is_blank_tail(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t')
			return false;
	return true;
}

/* memmem for the short markers tested on every console line: memchr on the
 * first byte then memcmp costs a fifth of glibc memmem's set-up per call. */
static const char *find_n(const char *line, size_t len, const char *needle, size_t n)
{
	const char *p = line, *end = line + len;
	if (n == 0)
		return line;
	while ((size_t)(end - p) >= n && (p = memchr(p, needle[0], (size_t)(end - p) - n + 1))) {
		if (memcmp(p, needle, n) == 0)
			return p;
		p++;
	}
	return NULL;
}

static const char *find_in(const char *line, size_t len, const char *needle)
{
	return find_n(line, len, needle, strlen(needle));
}

static void cmd_complete(struct shell *s, int rc);

/* The prompt at the very end of the text after a command started means the
 * command is over; if its END marker did not come first, characters of the
 * marker were lost on the way in (no echo to check with stty -echo). */
static void on_prompt_back(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	struct shell *s = arg;
	s->prompt_pat = -1;
	if (s->in_cmd && s->seen_begin)
		cmd_complete(s, LAB_EPROTO);
}

static void arm_prompt_watch(struct shell *s)
{
	char re[96];
	size_t o = 0;
	for (const char *p = s->prompt; *p && o + 3 < sizeof re; p++) {
		if (strchr("$.^*+?()[]{}|\\", *p))
			re[o++] = '\\';
		re[o++] = *p;
	}
	re[o++] = '$';
	re[o] = '\0';
	struct lab_err e = {0};
	if (s->prompt_pat >= 0)
		expect_remove(s->x, s->prompt_pat);
	s->prompt_pat = expect_add(s->x, EXPECT_REGEX, re, 0, on_prompt_back, s, &e);
}

static void on_line(struct expect *x, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(x);
	struct shell *s = arg;
	for (const char *const *p = panic_markers; *p; p++) {
		if (find_in(line, len, *p)) {
			if (!s->panicked) {
				s->panicked = true;
				size_t k = len < LINE_SNIP ? len : LINE_SNIP;
				memcpy(s->panic_line, line, k);
				s->panic_line[k] = '\0';
			}
			if (s->op != OP_NONE)
				finish(s, LAB_EINFRA, SHELL_FAIL_PANIC, "%s: kernel panic/oops: %s", s->board,
				       s->panic_line);
			return;
		}
	}
	if (!s->in_cmd)
		return;
	const char *end = line + len;
	if (!s->seen_begin) {
		const char *m = find_n(line, len, s->mbegin, s->mbegin_len);
		if (m && is_blank_tail(m + s->mbegin_len, end)) {
			s->seen_begin = true;
			arm_prompt_watch(s);
			return;
		}
	}
	const char *m = find_n(line, len, s->mend, s->mend_len);
	if (m) {
		const char *d = m + s->mend_len;
		int st = 0;
		const char *q = d;
		while (q < end && *q >= '0' && *q <= '9' && st < 100000)
			st = st * 10 + (*q++ - '0');
		if (q > d && is_blank_tail(q, end)) {
			/* output without a final newline ends up before the marker */
			if (m > line && s->seen_begin) {
				lab_buf_append(&s->out, line, (size_t)(m - line));
				lab_buf_append(&s->out, "\n", 1);
			}
			if (m > line && s->line_cb)
				s->line_cb(s, line, (size_t)(m - line), s->arg);
			s->status = st;
			/* no BEGIN: a character of it was lost; the output is incomplete */
			cmd_complete(s, s->seen_begin ? LAB_OK : LAB_EPROTO);
			return;
		}
	}
	if (s->line_cb)
		s->line_cb(s, line, len, s->arg);
	if (!s->seen_begin)
		return;
	/* A streaming consumer (the agent's protocol lines) has every line already:
	 * keep only a bounded tail of the output, so a long writer never overflows. */
	if (s->line_cb && s->out.len + len + 1 > SHELL_MAX_OUTPUT / 2)
		lab_buf_consume(&s->out, s->out.len / 2 + len + 1 < s->out.len ? s->out.len / 2 + len + 1
										 : s->out.len);
	if (lab_buf_append(&s->out, line, len) || lab_buf_append(&s->out, "\n", 1))
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: command output over %u bytes", s->board,
		       SHELL_MAX_OUTPUT);
}

/* ---- running wrapped commands ---- */

static void cmd_complete(struct shell *s, int rc)
{
	if (s->prompt_pat >= 0) {
		expect_remove(s->x, s->prompt_pat);
		s->prompt_pat = -1;
	}
	sh_next next = s->next;
	s->in_cmd = false;
	s->next = NULL;
	loop_timer_stop(s->loop, &s->step);
	lab_buf_cstr(&s->out);
	if (next)
		next(s, rc, s->status);
}

static void on_cmd_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct shell *s = arg;
	/* Kill what runs so the next command finds a shell. */
	console_write_str(s->con, "\x03");
	cmd_complete(s, LAB_ETIMEOUT);
}

static void run_internal(struct shell *s, const char *cmd, uint64_t timeout_ms, sh_next next)
{
	s->n++;
	s->mbegin_len = (size_t)snprintf(s->mbegin, sizeof s->mbegin, "@@BEGIN-%u@@", s->n);
	s->mend_len = (size_t)snprintf(s->mend, sizeof s->mend, "@@END-%u@@ ", s->n);
	s->in_cmd = true;
	s->seen_begin = false;
	s->status = -1;
	s->next = next;
	lab_buf_reset(&s->out, SHELL_KEEP_ROOM);
	char *line = xasprintf("echo @@BEGIN-%u@@; %s; echo @@END-%u@@ $?\n", s->n, cmd, s->n);
	int rc = send(s, line);
	free(line);
	if (rc)
		return;
	s->step.cb = on_cmd_timeout;
	loop_timer_start(s->loop, &s->step, timeout_ms ? timeout_ms : 60000);
}

static void set_result(struct shell *s, const char *p, size_t n)
{
	if (p == s->out.data && n == s->out.len) {
		/* the whole output: the two buffers trade places, nothing is copied */
		struct lab_buf t = s->result;
		s->result = s->out;
		s->result.max = 0;
		s->out = t;
		s->out.max = SHELL_MAX_OUTPUT;
		lab_buf_reset(&s->out, SHELL_KEEP_ROOM);
	} else {
		lab_buf_reset(&s->result, SHELL_KEEP_ROOM);
		lab_buf_append(&s->result, p, n);
	}
	s->has_result = true;
}

/* ---- attach ---- */

static void attach_setup_done(struct shell *s, int rc, int status)
{
	if (rc == LAB_ETIMEOUT) {
		if (s->login_seen)
			finish(s, LAB_ETIMEOUT, SHELL_FAIL_LOGIN_TIMEOUT,
			       "%s: logged in but the shell did not answer within %llu ms", s->board,
			       (unsigned long long)s->login_ms);
		else
			finish(s, LAB_ETIMEOUT, SHELL_FAIL_BOOT_TIMEOUT,
			       "%s: a prompt was seen but the shell did not answer within %llu ms", s->board,
			       (unsigned long long)s->login_ms);
		return;
	}
	LAB_UNUSED(status); /* stty may be missing; PS1 export cannot fail */
	expect_flush(s->x);
	set_result(s, "", 0);
	s->result_status = 0;
	finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
}

static void attach_setup(struct shell *s)
{
	clear_pats(s);
	loop_timer_stop(s->loop, &s->deadline);
	s->at = AT_SETUP;
	char *cmd = xasprintf("stty -echo 2>/dev/null; export PS1='%s'", s->prompt);
	run_internal(s, cmd, s->login_ms, attach_setup_done);
	free(cmd);
}

static void on_prompt(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	attach_setup(arg);
}

static void on_login_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct shell *s = arg;
	finish(s, LAB_ETIMEOUT, SHELL_FAIL_LOGIN_TIMEOUT, "%s: login prompt seen, no shell within %llu ms",
	       s->board, (unsigned long long)s->login_ms);
}

static void on_password(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	struct shell *s = arg;
	const char *pw = s->cfg->password_env && s->cfg->password_env[0] ?
		getenv(s->cfg->password_env) : NULL;
	if (s->password_sent) {
		finish(s, LAB_EINFRA, SHELL_FAIL_LOGIN_REFUSED, "%s: asked for the password again", s->board);
		return;
	}
	s->password_sent = true;
	char *line = xasprintf("%s\n", pw ? pw : "");
	send(s, line);
	free(line);
}

static void on_incorrect(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	struct shell *s = arg;
	finish(s, LAB_EINFRA, SHELL_FAIL_LOGIN_REFUSED, "%s: login refused for user '%s'%s", s->board,
	       s->cfg->user && s->cfg->user[0] ? s->cfg->user : "root",
	       s->cfg->password_env && s->cfg->password_env[0] && !getenv(s->cfg->password_env) ?
	       " (password variable not set)" : "");
}

static void on_login(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	struct shell *s = arg;
	clear_pats(s);
	loop_timer_stop(s->loop, &s->deadline);
	s->login_seen = true;
	s->at = AT_LOGIN;
	char *line = xasprintf("%s\n", s->cfg->user && s->cfg->user[0] ? s->cfg->user : "root");
	int rc = send(s, line);
	free(line);
	if (rc)
		return;
	const char *pp = s->cfg->prompt_pattern && s->cfg->prompt_pattern[0] ? s->cfg->prompt_pattern :
		"[#$] *$";
	if (add_pat(s, EXPECT_REGEX, "[Pp]assword: *$", on_password) ||
	    add_pat(s, EXPECT_LITERAL, "Login incorrect", on_incorrect) ||
	    add_pat(s, EXPECT_REGEX, pp, on_prompt)) {
		finish(s, LAB_EUSAGE, SHELL_FAIL_IO, NULL);
		return;
	}
	s->deadline.cb = on_login_timeout;
	loop_timer_start(s->loop, &s->deadline, s->login_ms);
}

static void on_askfirst(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	send(arg, "\n"); /* busybox init's askfirst console */
}

static void on_boot_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct shell *s = arg;
	finish(s, LAB_ETIMEOUT, SHELL_FAIL_BOOT_TIMEOUT, "%s: no login or shell prompt within %llu ms",
	       s->board, (unsigned long long)s->boot_ms);
}

/* ---- public ---- */

struct shell *shell_new(struct loop *l, struct console *c, struct expect *x,
			const struct shell_cfg *cfg, const char *board)
{
	struct shell *s = xcalloc(1, sizeof *s);
	s->loop = l;
	s->con = c;
	s->x = x;
	s->cfg = cfg;
	s->board = xstrdup(board ? board : "board");
	s->prompt_pat = -1;
	loop_timer_init(&s->deadline, on_boot_timeout, s);
	loop_timer_init(&s->step, on_cmd_timeout, s);
	loop_timer_init(&s->done, on_done, s);
	lab_buf_init(&s->out, SHELL_MAX_OUTPUT);
	lab_buf_init(&s->result, 0);
	unsigned tok = (unsigned)(lab_now_ns() ^ ((uint64_t)getpid() << 20) ^ (uintptr_t)s);
	snprintf(s->prompt, sizeof s->prompt, "EMMCLAB-%06x$ ", tok & 0xffffff);
	return s;
}

void shell_cancel(struct shell *s)
{
	if (!s)
		return;
	stop_all(s);
	loop_timer_stop(s->loop, &s->done);
	expect_set_line_cb(s->x, NULL, NULL);
	s->op = OP_NONE;
	s->cb = NULL;
	s->line_cb = NULL;
}

void shell_free(struct shell *s)
{
	if (!s)
		return;
	shell_cancel(s);
	lab_buf_free(&s->out);
	lab_buf_free(&s->result);
	free(s->board);
	free(s);
}

bool shell_busy(const struct shell *s)
{
	return s->op != OP_NONE;
}

enum shell_fail shell_failure(const struct shell *s)
{
	return s->fail;
}

const char *shell_errmsg(const struct shell *s)
{
	return s->err;
}

const char *shell_prompt(const struct shell *s)
{
	return s->prompt;
}

const char *shell_panic_line(const struct shell *s)
{
	return s->panic_line;
}

static int begin(struct shell *s, enum sh_op op, shell_cb cb, void *arg)
{
	if (s->op != OP_NONE)
		return LAB_EUSAGE;
	s->op = op;
	s->cb = cb;
	s->arg = arg;
	s->line_cb = NULL;
	s->rc = LAB_OK;
	s->fail = SHELL_FAIL_NONE;
	s->err[0] = '\0';
	s->result_status = -1;
	s->has_result = false;
	struct console_pacing none = {0};
	console_set_pacing(s->con, &none);
	expect_set_line_cb(s->x, on_line, s);
	if (s->panicked) {
		finish(s, LAB_EINFRA, SHELL_FAIL_PANIC, "%s: kernel panic/oops: %s", s->board, s->panic_line);
		return 1;
	}
	return LAB_OK;
}

int shell_attach(struct shell *s, uint64_t boot_ms, uint64_t login_ms, shell_cb cb, void *arg)
{
	int rc = begin(s, OP_ATTACH, cb, arg);
	if (rc)
		return rc == 1 ? LAB_OK : rc;
	s->login_seen = s->password_sent = false;
	s->at = AT_BOOT;
	s->login_ms = login_ms ? login_ms : 60000;
	s->boot_ms = boot_ms ? boot_ms : 120000;
	const char *lp = s->cfg->login_pattern && s->cfg->login_pattern[0] ? s->cfg->login_pattern :
		"login: *$";
	const char *pp = s->cfg->prompt_pattern && s->cfg->prompt_pattern[0] ? s->cfg->prompt_pattern :
		"[#$] *$";
	if (add_pat(s, EXPECT_REGEX, lp, on_login) || add_pat(s, EXPECT_REGEX, pp, on_prompt) ||
	    add_pat(s, EXPECT_LITERAL, "Please press Enter to activate this console", on_askfirst)) {
		finish(s, LAB_EUSAGE, SHELL_FAIL_IO, NULL);
		return LAB_OK;
	}
	s->deadline.cb = on_boot_timeout;
	loop_timer_start(s->loop, &s->deadline, s->boot_ms);
	/* Text already buffered (the kernel's whole boot log can arrive in the same
	 * read as "Starting kernel") is only matched when more comes: press Enter,
	 * as a human would, so a prompt printed already is printed again. */
	if (expect_buffered(s->x) > 0)
		send(s, "\n");
	return LAB_OK;
}

void shell_watch(struct shell *s)
{
	s->panicked = false;
	s->panic_line[0] = '\0';
	expect_set_line_cb(s->x, on_line, s);
}

static void run_done(struct shell *s, int rc, int status)
{
	if (rc == LAB_ETIMEOUT) {
		finish(s, LAB_ETIMEOUT, SHELL_FAIL_COMMAND_TIMEOUT, "%s: command timed out after %llu ms",
		       s->board, (unsigned long long)s->cmd_timeout_ms);
		return;
	}
	if (rc == LAB_EPROTO) {
		set_result(s, s->out.data ? s->out.data : "", s->out.len);
		s->result_status = status;
		finish(s, LAB_EPROTO, SHELL_FAIL_IO, "%s: a marker of the command was lost (characters "
		       "dropped on the way to the board?)", s->board);
		return;
	}
	set_result(s, s->out.data ? s->out.data : "", s->out.len);
	s->result_status = status;
	finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
}

int shell_run_lines(struct shell *s, const char *cmd, uint64_t timeout_ms, shell_line_cb line_cb,
		    shell_cb cb, void *arg)
{
	if (strchr(cmd, '\n'))
		return LAB_EUSAGE;
	int rc = begin(s, OP_RUN, cb, arg);
	if (rc)
		return rc == 1 ? LAB_OK : rc;
	s->line_cb = line_cb;
	s->cmd_timeout_ms = timeout_ms ? timeout_ms : 60000;
	run_internal(s, cmd, s->cmd_timeout_ms, run_done);
	return LAB_OK;
}

int shell_run(struct shell *s, const char *cmd, uint64_t timeout_ms, shell_cb cb, void *arg)
{
	return shell_run_lines(s, cmd, timeout_ms, NULL, cb, arg);
}

/* ---- put ---- */

static void put_chunk(struct shell *s, int rc, int status);

static bool step_failed(struct shell *s, int rc, int status, const char *what)
{
	if (rc == LAB_EPROTO) {
		finish(s, LAB_EPROTO, SHELL_FAIL_IO, "%s: %s: a command marker was lost (characters "
		       "dropped on the way to the board?)", s->board, what);
		return true;
	}
	if (rc == LAB_ETIMEOUT) {
		finish(s, LAB_ETIMEOUT, SHELL_FAIL_COMMAND_TIMEOUT, "%s: %s timed out", s->board, what);
		return true;
	}
	if (status != 0) {
		const char *o = s->out.data ? s->out.data : "";
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: %s failed (exit %d): %.200s", s->board, what,
		       status, o);
		return true;
	}
	return false;
}

static void put_chmod_done(struct shell *s, int rc, int status)
{
	if (step_failed(s, rc, status, "chmod"))
		return;
	s->result_status = s->op == OP_AGENT ? 1 : 0;
	finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
}

static void put_sum_done(struct shell *s, int rc, int status)
{
	if (step_failed(s, rc, status, "sha256sum"))
		return;
	char want[65];
	lab_sha256(s->data, s->len, want);
	const char *o = s->out.data ? s->out.data : "";
	const char *h = strstr(o, want);
	if (!h) {
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: %s: sha256 on the DUT differs from %s (got %.64s)",
		       s->board, s->remote, want, o);
		return;
	}
	if (s->mode) {
		char *q = shell_quote(s->remote);
		char *cmd = xasprintf("chmod %o %s", s->mode, q);
		run_internal(s, cmd, s->cmd_timeout_ms, put_chmod_done);
		free(cmd);
		free(q);
		return;
	}
	s->result_status = 0;
	finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
}

static void put_chunk(struct shell *s, int rc, int status)
{
	if (step_failed(s, rc, status, "writing the file"))
		return;
	char *q = shell_quote(s->remote);
	if (s->off >= s->len) {
		char *cmd = xasprintf("sha256sum %s", q);
		run_internal(s, cmd, s->cmd_timeout_ms, put_sum_done);
		free(cmd);
		free(q);
		return;
	}
	size_t raw = SHELL_B64_CHUNK / 4 * 3;
	size_t n = s->len - s->off < raw ? s->len - s->off : raw;
	char b64[SHELL_B64_CHUNK + 8];
	b64_encode((const unsigned char *)s->data + s->off, n, b64);
	s->off += n;
	char *cmd = xasprintf("echo %s | base64 -d >> %s", b64, q);
	run_internal(s, cmd, s->cmd_timeout_ms, put_chunk);
	free(cmd);
	free(q);
}

static int put_start(struct shell *s, const void *data, size_t len, const char *remote_path,
		     unsigned mode, uint64_t timeout_ms)
{
	s->data = xmalloc(len ? len : 1);
	if (len)
		memcpy(s->data, data, len);
	s->len = len;
	s->off = 0;
	s->remote = xstrdup(remote_path);
	s->mode = mode;
	s->cmd_timeout_ms = timeout_ms && timeout_ms < 30000 ? timeout_ms : 30000;
	char *q = shell_quote(remote_path);
	char *cmd = xasprintf("rm -f %s", q);
	run_internal(s, cmd, s->cmd_timeout_ms, put_chunk);
	free(cmd);
	free(q);
	return LAB_OK;
}

static void on_put_deadline(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct shell *s = arg;
	console_write_str(s->con, "\x03");
	finish(s, LAB_ETIMEOUT, SHELL_FAIL_COMMAND_TIMEOUT, "%s: writing %s timed out", s->board,
	       s->remote ? s->remote : "a file");
}

int shell_put_data(struct shell *s, const void *data, size_t len, const char *remote_path,
		   unsigned mode, uint64_t timeout_ms, shell_cb cb, void *arg)
{
	if (len > PUT_MAX || !remote_path || !remote_path[0])
		return LAB_EUSAGE;
	int rc = begin(s, OP_PUT, cb, arg);
	if (rc)
		return rc == 1 ? LAB_OK : rc;
	put_start(s, data, len, remote_path, mode, timeout_ms);
	/* finish() leaves op set until on_done: a first send that failed has completed already */
	if (timeout_ms && !loop_timer_pending(&s->done)) {
		s->deadline.cb = on_put_deadline;
		loop_timer_start(s->loop, &s->deadline, timeout_ms);
	}
	return LAB_OK;
}

int shell_put_file(struct shell *s, const char *local_path, const char *remote_path,
		   unsigned mode, uint64_t timeout_ms, shell_cb cb, void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(local_path, PUT_MAX, &buf, &len, &e) != LAB_OK) {
		snprintf(s->err, sizeof s->err, "%s", e.msg);
		return LAB_EINFRA;
	}
	int rc = shell_put_data(s, buf, len, remote_path, mode, timeout_ms, cb, arg);
	free(buf);
	return rc;
}

/* ---- get ---- */

static void get_done(struct shell *s, int rc, int status)
{
	if (step_failed(s, rc, status, "reading the file"))
		return;
	struct lab_buf dec;
	lab_buf_init(&dec, s->get_max ? s->get_max : 1);
	if (b64_decode(s->out.data ? s->out.data : "", s->out.len, &dec)) {
		lab_buf_free(&dec);
		finish(s, LAB_EPROTO, SHELL_FAIL_IO, "%s: bad base64 from the DUT (or larger than %zu bytes)",
		       s->board, s->get_max);
		return;
	}
	set_result(s, dec.data ? dec.data : "", dec.len);
	lab_buf_free(&dec);
	s->result_status = 0;
	finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
}

int shell_get_file(struct shell *s, const char *remote_path, size_t max, uint64_t timeout_ms,
		   shell_cb cb, void *arg)
{
	int rc = begin(s, OP_GET, cb, arg);
	if (rc)
		return rc == 1 ? LAB_OK : rc;
	s->get_max = max;
	s->cmd_timeout_ms = timeout_ms ? timeout_ms : 60000;
	char *q = shell_quote(remote_path);
	char *cmd = xasprintf("base64 %s", q);
	run_internal(s, cmd, s->cmd_timeout_ms, get_done);
	free(cmd);
	free(q);
	return LAB_OK;
}

/* ---- agent ---- */

static void agent_test_done(struct shell *s, int rc, int status)
{
	LAB_UNUSED(status);
	if (rc == LAB_ETIMEOUT) {
		finish(s, LAB_ETIMEOUT, SHELL_FAIL_COMMAND_TIMEOUT, "%s: test -x timed out", s->board);
		return;
	}
	const char *o = s->out.data ? s->out.data : "";
	if (strstr(o, "yes")) {
		s->result_status = 0;
		finish(s, LAB_OK, SHELL_FAIL_NONE, NULL);
		return;
	}
	const char *local = s->cfg->agent_local;
	if (!local || !local[0]) {
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: the agent %s is missing on the DUT and "
		       "shell.agent_local is not set", s->board, s->cfg->agent_path);
		return;
	}
	char *buf = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(local, PUT_MAX, &buf, &len, &e) != LAB_OK) {
		finish(s, LAB_EINFRA, SHELL_FAIL_IO, "%s: cannot read the agent to push: %s", s->board,
		       e.msg);
		return;
	}
	put_start(s, buf, len, s->cfg->agent_path, 0755, 0);
	free(buf);
}

int shell_ensure_agent(struct shell *s, uint64_t timeout_ms, shell_cb cb, void *arg)
{
	if (!s->cfg->agent_path || !s->cfg->agent_path[0])
		return LAB_EUSAGE;
	int rc = begin(s, OP_AGENT, cb, arg);
	if (rc)
		return rc == 1 ? LAB_OK : rc;
	s->cmd_timeout_ms = 30000;
	char *q = shell_quote(s->cfg->agent_path);
	char *cmd = xasprintf("test -x %s && echo yes", q);
	run_internal(s, cmd, s->cmd_timeout_ms, agent_test_done);
	free(cmd);
	free(q);
	if (timeout_ms && !loop_timer_pending(&s->done)) {
		s->deadline.cb = on_put_deadline;
		loop_timer_start(s->loop, &s->deadline, timeout_ms);
	}
	return LAB_OK;
}
