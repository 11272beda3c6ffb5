/*
 * shell.h - a Linux shell session on a board console: find the login or
 * shell prompt after boot, log in, set a unique prompt, switch echo off, run
 * commands between markers with their exit status, move small files in
 * base64 chunks (sha256-checked), push the agent when it is missing.  Kernel
 * panic / oops lines are watched for as long as the session is attached.
 *
 * Ownership: like uboot.h, the caller owns the console and the expect engine
 * and feeds every received byte to the expect engine.  While an operation is
 * in flight the session owns the expect engine's line callback and its own
 * patterns; it never frees either.
 *
 * Loop rules: every call returns at once; the callback runs later on the loop,
 * exactly once, unless shell_cancel()/shell_free() come first.  One operation
 * at a time (LAB_EUSAGE when busy).
 *
 * Command wrapping (docs/agent.md):
 *     echo @@BEGIN-<n>@@; <cmd>; echo @@END-<n>@@ $?
 * A BEGIN marker counts only when nothing but blanks follows it on its line,
 * an END marker only when followed by a number, so the echo of the command
 * itself (before `stty -echo` took effect) never matches; markers of earlier,
 * timed-out commands are ignored (n grows).  A command that times out is sent
 * Ctrl-C.
 */
#ifndef EMMCLAB_SHELL_H
#define EMMCLAB_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "loop.h"
#include "util.h"

struct shell;
struct console;
struct expect;

#define SHELL_MAX_OUTPUT (4 * 1024 * 1024) /* command output kept in memory */
#define SHELL_B64_CHUNK 768                  /* base64 characters per command (busybox ash: 1 KiB lines) */

/* Why an operation failed (board.c maps these to enum board_fail). */
enum shell_fail {
	SHELL_FAIL_NONE,
	SHELL_FAIL_PANIC,          /* kernel panic / oops seen */
	SHELL_FAIL_BOOT_TIMEOUT,   /* neither login nor shell prompt within the boot budget */
	SHELL_FAIL_LOGIN_TIMEOUT,  /* login prompt seen, no working shell after logging in */
	SHELL_FAIL_LOGIN_REFUSED,  /* "Login incorrect" */
	SHELL_FAIL_COMMAND_TIMEOUT,/* END marker not seen in time */
	SHELL_FAIL_IO,             /* console write failed, file mismatch, bad input */
};

/* rc LAB_OK (exit_status is the command's), LAB_ETIMEOUT, LAB_EINFRA, LAB_EPROTO;
 * out/len: output between the markers (NUL-terminated, valid during the callback). */
typedef void (*shell_cb)(struct shell *s, int rc, int exit_status, const char *out, size_t len,
			 void *arg);
/* Every complete output line of the running command, as it arrives (agent lines). */
typedef void (*shell_line_cb)(struct shell *s, const char *line, size_t len, void *arg);

/* cfg borrowed; board used in messages. */
struct shell *shell_new(struct loop *l, struct console *c, struct expect *x,
			const struct shell_cfg *cfg, const char *board);
void shell_free(struct shell *s);
void shell_cancel(struct shell *s);
/* An operation (attach, run, put, get) is in flight. */
bool shell_busy(const struct shell *s);
enum shell_fail shell_failure(const struct shell *s);
const char *shell_errmsg(const struct shell *s);
/* The prompt set by shell_attach ("EMMCLAB-<token>$ "). */
const char *shell_prompt(const struct shell *s);
/* Kernel log lines seen while attached (last few, for messages): the panic line. */
const char *shell_panic_line(const struct shell *s);

/* Watch console lines for kernel panics from now on (call at power-on, so a
 * panic in the burst of text that follows "Starting kernel" is not missed) and
 * forget an earlier panic.  Every later operation fails at once with
 * SHELL_FAIL_PANIC once a panic line was seen. */
void shell_watch(struct shell *s);

/* After the kernel started: wait up to boot_ms for the login prompt
 * (cfg->login_pattern) or a shell prompt (cfg->prompt_pattern); log in as
 * cfg->user with the password from getenv(cfg->password_env); then within
 * login_ms: `stty -echo`, export PS1='EMMCLAB-<token>$ ' and a marker round
 * trip.  The callback's out is empty. */
int shell_attach(struct shell *s, uint64_t boot_ms, uint64_t login_ms, shell_cb cb, void *arg);

/* Run a command (a single line, no newline) wrapped in markers. */
int shell_run(struct shell *s, const char *cmd, uint64_t timeout_ms, shell_cb cb, void *arg);
/* Same, with every output line also passed to line_cb while it runs. */
int shell_run_lines(struct shell *s, const char *cmd, uint64_t timeout_ms, shell_line_cb line_cb,
		    shell_cb cb, void *arg);

/* Write data to remote_path (truncated first) in base64 chunks, verify with
 * sha256sum, then chmod to mode when mode != 0 (octal, e.g. 0755).
 * Fails with LAB_EINFRA when the DUT's sha256 differs. */
int shell_put_data(struct shell *s, const void *data, size_t len, const char *remote_path,
		   unsigned mode, uint64_t timeout_ms, shell_cb cb, void *arg);
int shell_put_file(struct shell *s, const char *local_path, const char *remote_path,
		   unsigned mode, uint64_t timeout_ms, shell_cb cb, void *arg);
/* Read a small remote file (at most max bytes) with `base64 FILE`; out is the content. */
int shell_get_file(struct shell *s, const char *remote_path, size_t max, uint64_t timeout_ms,
		   shell_cb cb, void *arg);
/* `test -x cfg->agent_path`; when missing and cfg->agent_local is set, push it (0755).
 * exit_status in the callback: 0 present already, 1 pushed. */
int shell_ensure_agent(struct shell *s, uint64_t timeout_ms, shell_cb cb, void *arg);

/* Quote s for a POSIX shell ('...' with '\'' for quotes); caller frees. */
char *shell_quote(const char *s);

#endif
