/*
 * fakeboard.h - a tiny scripted board behind a pseudo-terminal, driven by
 * the test's own loop: U-Boot (autoboot countdown, echo, Ctrl-C, hush-style
 * and-or lists and if/then/else as U-Boot 2023.01's hush runs them, setenv/printenv, tftpboot, booti, a UART FIFO that drops
 * input arriving in bursts) and a Linux shell (login, PS1, stty -echo, the
 * controller's marker wrapping, base64 file writes, sha256sum, the agent with
 * corrupted lines and `resend`).  Used by test_uboot*, test_shell*, test_board*.
 * Header-only: every function is static (unused ones are fine).
 */
#ifndef EMMCLAB_FAKEBOARD_H
#define EMMCLAB_FAKEBOARD_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cfgnode.h"
#include "console.h"
#include "loop.h"
#include "proto.h"
#include "util.h"

#define FB_UNUSED __attribute__((unused))

enum fb_mode { FB_OFF, FB_AUTOBOOT, FB_UBOOT, FB_KBOOT, FB_LOGIN, FB_PASSWORD, FB_SHELL, FB_DEAD };

struct fb_file {
	char name[128];
	struct lab_buf data;
	bool exec;
};

struct fakeboard {
	struct loop *l;
	int master;
	int slave_keep; /* keeps the pty from hanging up while the controller reconnects */
	char path[128];
	enum fb_mode mode;
	/* behaviour */
	bool has_uboot;        /* power-on goes through U-Boot */
	bool autoboot;         /* without an interrupt, boot Linux after the countdown */
	bool login;            /* Linux asks for a login */
	const char *password;  /* NULL: none asked */
	bool no_output;        /* silent after power-on */
	bool uboot_hang;       /* banner, countdown, then ignores input */
	int uboot_status;      /* hush's $?: the last command's status (0 success, 1 failure) */
	bool autoboot_silent;  /* bootdelay -2: no countdown, U-Boot boots Linux by itself */
	bool keys_too_late;    /* bootdelay 0: the countdown shows, keys come too late, Linux boots */
	bool panic;            /* kernel panics during boot */
	bool no_login;         /* boot log ends without a prompt */
	int fifo;              /* U-Boot: bytes accepted per read; the rest is lost (0 = no loss) */
	int drop_once_at;      /* U-Boot: drop the n-th input byte once (0 = never) */
	int drop_line_at;      /* U-Boot: drop the n-th character of every line (0 = never) */
	int corrupt_seq;       /* agent: corrupt this seq on its first output (0 = never) */
	int corrupt_always;    /* agent: corrupt this seq every time, resends too (0 = never) */
	bool agent_installed;
	bool agent_stream;     /* agent: hello, then `acked` counters until the power goes (no done) */
	int agent_acks;        /* agent_stream: the last ack printed */
	bool noise;            /* kernel log lines between command outputs */
	bool mangle_end_once;  /* shell: the next END marker command loses a character */
	bool mangle_begin_once;/* shell: the next BEGIN marker command loses a character */
	int faults_left;       /* >0: panic/no_output only for this many boots */
	/* state */
	struct loop_timer t;
	int countdown;
	int in_count;
	int fifo_overflows;    /* U-Boot reads longer than fifo (bytes lost) */
	int max_burst;         /* U-Boot: longest single read (pty delivery coalesces writes) */
	bool dropped_this_line;
	char line[8192];
	size_t llen;
	bool echo;
	char ps1[64];
	char last_cmdline[1024];
	char env[16][2][256];
	int nenv;
	struct fb_file files[8];
	int nfiles;
	char agent_log[64][512];
	int agent_nlog;
	int boots;
	int ctrl_c;
	int commands;
	struct lab_buf out; /* pending output (written paced by the loop) */
};

static FB_UNUSED void fb_write(struct fakeboard *f, const char *s)
{
	if (f->mode == FB_OFF)
		return;
	size_t n = strlen(s);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(f->master, s + off, n - off);
		if (w > 0)
			off += (size_t)w;
		else
			break; /* pty buffer full: tests keep outputs small */
	}
}

static FB_UNUSED void fb_printf(struct fakeboard *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static FB_UNUSED void fb_printf(struct fakeboard *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	fb_write(f, s);
	free(s);
}

static FB_UNUSED const char *fb_getenv(struct fakeboard *f, const char *k)
{
	for (int i = 0; i < f->nenv; i++)
		if (strcmp(f->env[i][0], k) == 0)
			return f->env[i][1];
	return NULL;
}

static FB_UNUSED void fb_setenv(struct fakeboard *f, const char *k, const char *v)
{
	for (int i = 0; i < f->nenv; i++)
		if (strcmp(f->env[i][0], k) == 0) {
			lab_strlcpy(f->env[i][1], v, sizeof f->env[i][1]);
			return;
		}
	if (f->nenv < 16) {
		lab_strlcpy(f->env[f->nenv][0], k, sizeof f->env[0][0]);
		lab_strlcpy(f->env[f->nenv][1], v, sizeof f->env[0][1]);
		f->nenv++;
	}
}

static FB_UNUSED struct fb_file *fb_file(struct fakeboard *f, const char *name, bool create)
{
	for (int i = 0; i < f->nfiles; i++)
		if (strcmp(f->files[i].name, name) == 0)
			return &f->files[i];
	if (!create || f->nfiles >= 8)
		return NULL;
	struct fb_file *x = &f->files[f->nfiles++];
	lab_strlcpy(x->name, name, sizeof x->name);
	lab_buf_init(&x->data, 0);
	x->exec = false;
	return x;
}

/* Expand ${var} and $? like hush. */
static FB_UNUSED void fb_expand(struct fakeboard *f, const char *in, char *out, size_t n)
{
	size_t o = 0;
	while (*in && o + 1 < n) {
		if (in[0] == '$' && in[1] == '?') {
			char st[16];
			snprintf(st, sizeof st, "%d", f->uboot_status);
			for (const char *v = st; *v && o + 1 < n; v++)
				out[o++] = *v;
			in += 2;
			continue;
		}
		if (in[0] == '$' && in[1] == '{') {
			const char *e = strchr(in, '}');
			if (e) {
				char k[64];
				size_t kl = (size_t)(e - in - 2) < sizeof k - 1 ? (size_t)(e - in - 2) : sizeof k - 1;
				memcpy(k, in + 2, kl);
				k[kl] = '\0';
				const char *v = fb_getenv(f, k);
				if (v)
					for (; *v && o + 1 < n; v++)
						out[o++] = *v;
				in = e + 1;
				continue;
			}
		}
		out[o++] = *in++;
	}
	out[o] = '\0';
}

static void fb_linux_boot(struct fakeboard *f);

/* One U-Boot command; returns its success. */
static FB_UNUSED bool fb_uboot_cmd(struct fakeboard *f, char *cmd)
{
	while (*cmd == ' ')
		cmd++;
	char x[1024];
	fb_expand(f, cmd, x, sizeof x);
	if (strncmp(x, "echo ", 5) == 0 || strcmp(x, "echo") == 0) {
		fb_printf(f, "%s\r\n", x[4] ? x + 5 : "");
		return true;
	}
	if (strcmp(x, "version") == 0) {
		fb_write(f, "U-Boot 2023.04 (fake)\r\n");
		return true;
	}
	if (strcmp(x, "false") == 0)
		return false;
	if (strcmp(x, "hang-after-error") == 0) {
		/* U-Boot's panic path: the error line, then nothing (no prompt, no marker) */
		fb_write(f, "### ERROR ### Please RESET the board ###\r\n");
		f->mode = FB_DEAD;
		return false;
	}
	if (strcmp(x, "true") == 0)
		return true;
	if (strncmp(x, "setenv ", 7) == 0) {
		/* the raw (unexpanded) command decides quoting: '...' literal, "..." expanded */
		char *k = cmd + 7;
		char *sp = strchr(k, ' ');
		char key[64], val[512];
		if (!sp) {
			lab_strlcpy(key, k, sizeof key);
			fb_setenv(f, key, "");
			return true;
		}
		size_t kl = (size_t)(sp - k) < sizeof key - 1 ? (size_t)(sp - k) : sizeof key - 1;
		memcpy(key, k, kl);
		key[kl] = '\0';
		char *v = sp + 1;
		size_t vl = strlen(v);
		if (vl >= 2 && v[0] == '\'' && v[vl - 1] == '\'') {
			v[vl - 1] = '\0';
			lab_strlcpy(val, v + 1, sizeof val);
		} else if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v[vl - 1] = '\0';
			fb_expand(f, v + 1, val, sizeof val);
		} else {
			fb_expand(f, v, val, sizeof val);
		}
		fb_setenv(f, key, val);
		return true;
	}
	if (strncmp(x, "printenv ", 9) == 0) {
		const char *v = fb_getenv(f, x + 9);
		if (!v) {
			fb_printf(f, "## Error: \"%s\" not defined\r\n", x + 9);
			return false;
		}
		fb_printf(f, "%s=%s\r\n", x + 9, v);
		return true;
	}
	if (strcmp(x, "dhcp") == 0) {
		fb_write(f, "BOOTP broadcast 1\r\nDHCP client bound to address 10.0.0.5 (3 ms)\r\n");
		fb_setenv(f, "ipaddr", "10.0.0.5");
		return true;
	}
	if (strncmp(x, "tftpboot ", 9) == 0) {
		char addr[64], file[256];
		if (sscanf(x + 9, "%63s %255s", addr, file) != 2)
			return false;
		if (strstr(file, "missing")) {
			fb_write(f, "TFTP error: 'File not found' (1)\r\nNot retrying...\r\n");
			return false;
		}
		fb_printf(f, "Using ethernet@0 device\r\nFilename '%s'.\r\nLoad address: %s\r\n"
			  "Loading: ##########\r\ndone\r\nBytes transferred = 1234 (4d2 hex)\r\n", file, addr);
		fb_setenv(f, "filesize", strstr(file, "initrd") ? "2222" : "4d2");
		return true;
	}
	if (strncmp(x, "booti", 5) == 0 || strcmp(x, "boot") == 0) {
		if (strstr(x, "bad")) {
			fb_write(f, "Bad Linux ARM64 Image magic!\r\n");
			return false;
		}
		lab_strlcpy(f->last_cmdline, fb_getenv(f, "bootargs") ? fb_getenv(f, "bootargs") : "",
			    sizeof f->last_cmdline);
		fb_write(f, "## Flattened Device Tree blob at 4fa00000\r\nStarting kernel ...\r\n\r\n");
		fb_linux_boot(f);
		return true;
	}
	fb_printf(f, "Unknown command '%s' - try 'help'\r\n", x);
	return false;
}

/* hush as U-Boot 2023.01 runs it (observed: harness/tests/vectors/uboot-2023.01-hush.txt):
 * "a; b", and-or lists where a failing `&&` (or a succeeding `||`) skips the rest
 * of the list up to the next `;` (so `false && x || y` runs neither), and
 * if/then/else/fi (one level); $? is the last command's status (a skipped one
 * leaves it). */
static FB_UNUSED void fb_uboot_line(struct fakeboard *f, char *line)
{
	f->commands++;
	bool st = true, skipping = false, cond = false;
	enum { P_NONE, P_COND, P_THEN, P_ELSE } phase = P_NONE;
	int op = 0; /* connector before this segment: 0 `;`, 1 `&&`, 2 `||` */
	char *p = line;
	while (p && *p) {
		char *q = p, *end = NULL;
		int nop = 0;
		for (; *q; q++) {
			if (*q == ';' || (q[0] == '&' && q[1] == '&') || (q[0] == '|' && q[1] == '|')) {
				end = q;
				nop = *q == ';' ? 0 : *q == '&' ? 1 : 2;
				q += nop ? 2 : 1;
				break;
			}
		}
		if (end)
			*end = '\0';
		char *seg = p;
		p = end ? q : NULL;
		int this_op = op;
		op = nop;
		while (*seg == ' ')
			seg++;
		size_t sl = strlen(seg);
		while (sl && seg[sl - 1] == ' ')
			seg[--sl] = '\0';
		if (skipping && this_op != 0)
			continue;
		skipping = false;
		if ((this_op == 1 && !st) || (this_op == 2 && st)) {
			skipping = true;
			continue;
		}
		if (strncmp(seg, "if ", 3) == 0) {
			phase = P_COND;
			seg += 3;
		} else if (strncmp(seg, "then", 4) == 0 && (seg[4] == ' ' || !seg[4])) {
			phase = P_THEN;
			cond = st;
			seg += 4;
		} else if (strncmp(seg, "else", 4) == 0 && (seg[4] == ' ' || !seg[4])) {
			phase = P_ELSE;
			seg += 4;
		} else if (strcmp(seg, "fi") == 0) {
			phase = P_NONE;
			continue;
		}
		if ((phase == P_THEN && !cond) || (phase == P_ELSE && cond))
			continue;
		while (*seg == ' ')
			seg++;
		if (!*seg)
			continue;
		st = fb_uboot_cmd(f, seg);
		f->uboot_status = st ? 0 : 1;
		if (f->mode != FB_UBOOT)
			return; /* booted */
	}
}

static FB_UNUSED void fb_agent_emit(struct fakeboard *f, int seq, const char *kind, const char *const *kv)
{
	char line[1024];
	int n = proto_format(line, sizeof line, (uint64_t)seq, kind, kv);
	if (n < 0)
		return;
	if (f->agent_nlog < 64 && seq == f->agent_nlog + 1)
		lab_strlcpy(f->agent_log[f->agent_nlog++], line, sizeof f->agent_log[0]);
	if (seq == f->corrupt_seq || seq == f->corrupt_always) {
		if (seq == f->corrupt_seq)
			f->corrupt_seq = 0;
		char *c = strstr(line, "crc=");
		if (c)
			c[4] = c[4] == '0' ? '1' : '0';
	}
	fb_write(f, line);
}

/* agent_stream: the next `acked` counter (seq = ack + 1), as powerfail-write
 * prints it after each fsync; also written when the board is off (raw), as
 * bytes a USB-serial adapter still holds are read after the power went. */
static FB_UNUSED void fb_agent_ack(struct fakeboard *f, bool raw)
{
	char v[24], line[512];
	snprintf(v, sizeof v, "%d", ++f->agent_acks);
	const char *kv[] = {"workload", "powerfail", "iter", "1", "name", "acked", "value", v, NULL};
	int seq = f->agent_acks + 1;
	if (!raw) {
		fb_agent_emit(f, seq, "counter", kv);
		return;
	}
	int n = proto_format(line, sizeof line, (uint64_t)seq, "counter", kv);
	if (n < 0 || write(f->master, line, (size_t)n) != n)
		abort();
}

static FB_UNUSED int fb_shell_cmd(struct fakeboard *f, char *c)
{
	while (*c == ' ')
		c++;
	size_t cl = strlen(c);
	while (cl && c[cl - 1] == ' ')
		c[--cl] = '\0';
	if (strncmp(c, "stty -echo", 10) == 0) {
		f->echo = false;
		return 0;
	}
	if (strncmp(c, "export PS1='", 12) == 0) {
		char *e = strrchr(c + 12, '\'');
		if (e)
			*e = '\0';
		lab_strlcpy(f->ps1, c + 12, sizeof f->ps1);
		return 0;
	}
	if (strcmp(c, "true") == 0)
		return 0;
	if (strcmp(c, "false") == 0)
		return 1;
	if (strcmp(c, "hang") == 0)
		return -1;
	if (strcmp(c, "noise") == 0) {
		fb_write(f, "output line\r\n[   99.1] mmc0: noise from the kernel\r\nmore\r\n");
		return 0;
	}
	if (strcmp(c, "oops") == 0) {
		fb_write(f, "[  100.0] Unable to handle kernel NULL pointer dereference at 0\r\n");
		f->mode = FB_DEAD;
		return -1;
	}
	if (strcmp(c, "cat /proc/cmdline") == 0) {
		fb_printf(f, "%s\r\n", f->last_cmdline);
		return 0;
	}
	if (strncmp(c, "echo ", 5) == 0 && !strstr(c, "|")) {
		fb_printf(f, "%s\r\n", c + 5);
		return 0;
	}
	if (strncmp(c, "rm -f ", 6) == 0) {
		struct fb_file *x = fb_file(f, c + 6, false);
		if (x) {
			lab_buf_free(&x->data);
			*x = f->files[--f->nfiles];
		}
		return 0;
	}
	if (strncmp(c, "echo ", 5) == 0) { /* echo B64 | base64 -d >> FILE */
		char b64[4096], file[128];
		if (sscanf(c, "echo %4095s | base64 -d >> %127s", b64, file) != 2)
			return 2;
		struct fb_file *x = fb_file(f, file, true);
		static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		unsigned v = 0;
		int bits = 0;
		for (char *p = b64; *p && *p != '='; p++) {
			const char *q = strchr(tab, *p);
			if (!q)
				return 1;
			v = (v << 6) | (unsigned)(q - tab);
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				unsigned char byte = (unsigned char)(v >> bits);
				lab_buf_append(&x->data, &byte, 1);
			}
		}
		return 0;
	}
	if (strncmp(c, "sha256sum ", 10) == 0) {
		struct fb_file *x = fb_file(f, c + 10, false);
		if (!x) {
			fb_printf(f, "sha256sum: %s: No such file or directory\r\n", c + 10);
			return 1;
		}
		char h[65];
		lab_sha256(x->data.data ? x->data.data : "", x->data.len, h);
		fb_printf(f, "%s  %s\r\n", h, c + 10);
		return 0;
	}
	if (strncmp(c, "base64 ", 7) == 0) {
		struct fb_file *x = fb_file(f, c + 7, false);
		if (!x)
			return 1;
		static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const unsigned char *d = (const unsigned char *)(x->data.data ? x->data.data : "");
		size_t n = x->data.len, col = 0;
		for (size_t i = 0; i < n; i += 3) {
			unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) |
				     (i + 2 < n ? d[i + 2] : 0);
			char q[5] = {tab[(v >> 18) & 63], tab[(v >> 12) & 63],
				     i + 1 < n ? tab[(v >> 6) & 63] : '=', i + 2 < n ? tab[v & 63] : '=', 0};
			fb_write(f, q);
			if ((col += 4) >= 76) {
				fb_write(f, "\r\n");
				col = 0;
			}
		}
		fb_write(f, "\r\n");
		return 0;
	}
	if (strncmp(c, "test -x ", 8) == 0) {
		char *amp = strstr(c, " && ");
		if (amp)
			*amp = '\0';
		struct fb_file *x = fb_file(f, c + 8, false);
		bool yes = (x && x->exec) || (strcmp(c + 8, "/usr/bin/emmclab-agent") == 0 &&
					      f->agent_installed);
		if (yes && amp)
			fb_write(f, "yes\r\n");
		return yes ? 0 : 1;
	}
	if (strncmp(c, "chmod 755 ", 10) == 0) {
		struct fb_file *x = fb_file(f, c + 10, false);
		if (!x)
			return 1;
		x->exec = true;
		if (strcmp(c + 10, "/usr/bin/emmclab-agent") == 0)
			f->agent_installed = true;
		return 0;
	}
	if (strncmp(c, "/usr/bin/emmclab-agent resend", 29) == 0) {
		char *p = c + 29;
		while (*p) {
			long s = strtol(p, &p, 10);
			if (s >= 1 && s <= f->agent_nlog) {
				char l[512];
				lab_strlcpy(l, f->agent_log[s - 1], sizeof l);
				char *crc = strstr(l, "crc=");
				if (s == f->corrupt_always && crc)
					crc[4] = crc[4] == '0' ? '1' : '0';
				fb_write(f, l);
			}
			while (*p == ' ')
				p++;
			if (*p && (*p < '0' || *p > '9'))
				break;
		}
		return 0;
	}
	if (strncmp(c, "/usr/bin/emmclab-agent", 22) == 0) {
		if (!f->agent_installed) {
			fb_write(f, "sh: /usr/bin/emmclab-agent: not found\r\n");
			return 127;
		}
		f->agent_nlog = 0;
		if (f->agent_stream) { /* powerfail-write: the test prints the acks (fb_agent_ack) */
			const char *hi[] = {"version", "0.1", "proto", "1", "cmd", "powerfail-write", NULL};
			fb_agent_emit(f, 1, "hello", hi);
			f->agent_acks = 0;
			return -1; /* runs until the power goes */
		}
		const char *hello[] = {"version", "0.1", "proto", "1", "cmd", "mode", NULL};
		fb_agent_emit(f, 1, "hello", hello);
		if (f->noise)
			fb_write(f, "[  12.0] random kernel line\r\n");
		const char *mode[] = {"fua", "1", "write_cache", "1", "cqe", "0", "mode", "fua", NULL};
		fb_agent_emit(f, 2, "mode", mode);
		const char *s1[] = {"workload", "androbench", "iter", "1", "metric", "seq_write", "value",
				    "41.5", "unit", "MiB/s", NULL};
		fb_agent_emit(f, 3, "sample", s1);
		const char *done[] = {"status", "ok", "lines", "3", NULL};
		fb_agent_emit(f, 4, "done", done);
		return 0;
	}
	fb_printf(f, "sh: %s: not found\r\n", c);
	return 127;
}

/* The controller's wrapping: echo @@BEGIN-n@@; CMD; echo @@END-n@@ $? */
static FB_UNUSED void fb_shell_line(struct fakeboard *f, char *line)
{
	f->commands++;
	int status = 0;
	char *save = NULL;
	for (char *part = strtok_r(line, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		char *p = part;
		while (*p == ' ')
			p++;
		if (strncmp(p, "echo @@END-", 11) == 0 && f->mangle_end_once) {
			f->mangle_end_once = false;
			fb_write(f, "sh: ech: not found\r\n");
			continue;
		}
		if (strncmp(p, "echo @@BEGIN-", 13) == 0 && f->mangle_begin_once) {
			f->mangle_begin_once = false;
			fb_printf(f, "@@BEGN-%s\r\n", p + 13);
			continue;
		}
		if (strncmp(p, "echo @@END-", 11) == 0) {
			char m[64];
			if (sscanf(p, "echo %63s", m) == 1)
				fb_printf(f, "%s %d\r\n", m, status);
			continue;
		}
		status = fb_shell_cmd(f, p);
		if (status < 0)
			return; /* hangs (until Ctrl-C) or died */
	}
	if (f->noise)
		fb_write(f, "[  13.5] mmc0: kernel message after a command\r\n");
	fb_write(f, f->ps1);
}

static FB_UNUSED void fb_prompt_timer(struct loop *l, struct loop_timer *t, void *arg);

static FB_UNUSED void fb_linux_boot(struct fakeboard *f)
{
	f->mode = FB_KBOOT;
	f->boots++;
	lab_strlcpy(f->ps1, "# ", sizeof f->ps1);
	f->echo = true;
	fb_printf(f, "[    0.000000] Booting Linux on physical CPU 0x0\r\n"
		  "[    0.000000] Linux version 6.1.0-emmclab #1 SMP\r\n"
		  "[    0.000000] Kernel command line: %s\r\n", f->last_cmdline);
	f->t.cb = fb_prompt_timer;
	loop_timer_start(f->l, &f->t, 30);
}

static FB_UNUSED void fb_prompt_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct fakeboard *f = arg;
	bool fault = f->faults_left != 0;
	if (f->panic && fault) {
		fb_write(f, "[    1.2] Kernel panic - not syncing: VFS: Unable to mount root fs\r\n");
		f->mode = FB_DEAD;
		if (f->faults_left > 0)
			f->faults_left--;
		return;
	}
	fb_write(f, "[    1.5] mmcblk0: mmc0:0001 FAKE32 29.1 GiB\r\n");
	if (f->no_login) {
		f->mode = FB_DEAD;
		return;
	}
	if (f->login) {
		f->mode = FB_LOGIN;
		fb_write(f, "\r\nfake login: ");
	} else {
		f->mode = FB_SHELL;
		fb_write(f, f->ps1);
	}
}

static FB_UNUSED void fb_countdown(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct fakeboard *f = arg;
	if (f->mode != FB_AUTOBOOT)
		return;
	if (f->countdown == 0) {
		fb_write(f, "\b\b\b  0\r\n");
		if (f->uboot_hang) {
			f->mode = FB_DEAD;
			return;
		}
		f->mode = FB_UBOOT;
		lab_strlcpy(f->last_cmdline, "console=ttyS0 (autoboot)", sizeof f->last_cmdline);
		fb_write(f, "Starting kernel ...\r\n");
		fb_linux_boot(f);
		return;
	}
	f->countdown--;
	fb_printf(f, "\b\b\b%3d", f->countdown);
	loop_timer_start(f->l, &f->t, 100);
}

static FB_UNUSED void fb_power_on(struct fakeboard *f)
{
	f->mode = FB_KBOOT; /* so fb_write prints */
	f->llen = 0;
	f->in_count = 0;
	f->nenv = 0;
	fb_setenv(f, "bootargs", "console=ttyS0 root=/dev/mmcblk0p2");
	fb_setenv(f, "kernel_addr_r", "0x40480000");
	fb_setenv(f, "fdt_addr_r", "0x4fa00000");
	fb_setenv(f, "ramdisk_addr_r", "0x4ff00000");
	if (f->no_output && f->faults_left != 0) {
		if (f->faults_left > 0)
			f->faults_left--;
		f->mode = FB_DEAD;
		return;
	}
	if (!f->has_uboot) {
		lab_strlcpy(f->last_cmdline, "console=ttyS0", sizeof f->last_cmdline);
		fb_linux_boot(f);
		return;
	}
	fb_write(f, "\r\nU-Boot SPL 2023.04\r\nU-Boot 2023.04 (fake)\r\n\r\nDRAM:  2 GiB\r\n"
		    "MMC:   mmc@fe330000: 0\r\nLoading Environment from MMC... OK\r\n");
	if (f->uboot_hang && f->faults_left > 0)
		f->faults_left--;
	if (f->autoboot_silent) {
		f->mode = FB_UBOOT;
		lab_strlcpy(f->last_cmdline, "console=ttyS0 (autoboot)", sizeof f->last_cmdline);
		fb_write(f, "Starting kernel ...\r\n");
		fb_linux_boot(f);
		return;
	}
	f->mode = FB_AUTOBOOT;
	f->countdown = 3;
	fb_write(f, "Hit any key to stop autoboot:  3");
	f->t.cb = fb_countdown;
	loop_timer_start(f->l, &f->t, 100);
}

static FB_UNUSED void fb_power_off(struct fakeboard *f)
{
	loop_timer_stop(f->l, &f->t);
	f->mode = FB_OFF;
}

static FB_UNUSED void fb_input(struct fakeboard *f, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char ch = buf[i];
		switch (f->mode) {
		case FB_AUTOBOOT:
			if (f->uboot_hang || f->keys_too_late)
				break;
			loop_timer_stop(f->l, &f->t);
			f->mode = FB_UBOOT;
			fb_write(f, "\r\n=> ");
			break;
		case FB_UBOOT:
			f->in_count++;
			if (f->drop_once_at && f->in_count == f->drop_once_at) {
				f->drop_once_at = 0;
				break;
			}
			if (f->drop_line_at && (int)f->llen + 1 == f->drop_line_at && ch != 3 &&
			    ch != '\r' && ch != '\n' && !f->dropped_this_line) {
				f->dropped_this_line = true;
				break;
			}
			if (ch == 3 || ch == '\r' || ch == '\n')
				f->dropped_this_line = false;
			if (ch == 3) {
				f->ctrl_c++;
				f->llen = 0;
				fb_write(f, "<INTERRUPT>\r\n=> ");
			} else if (ch == '\r' || ch == '\n') {
				fb_write(f, "\r\n");
				f->line[f->llen] = '\0';
				f->llen = 0;
				if (f->line[0])
					fb_uboot_line(f, f->line);
				if (f->mode == FB_UBOOT)
					fb_write(f, "=> ");
			} else if (f->llen + 1 < sizeof f->line) {
				f->line[f->llen++] = ch;
				char e[2] = {ch, 0};
				fb_write(f, e);
			}
			break;
		case FB_LOGIN:
		case FB_PASSWORD:
		case FB_SHELL:
			if (ch == 3) {
				f->ctrl_c++;
				f->llen = 0;
				fb_write(f, "^C\r\n");
				fb_write(f, f->ps1);
				break;
			}
			if (ch == '\r' || ch == '\n') {
				f->line[f->llen] = '\0';
				f->llen = 0;
				if (f->echo && f->mode != FB_PASSWORD)
					fb_write(f, "\r\n");
				if (f->mode == FB_LOGIN) {
					if (f->password) {
						f->mode = FB_PASSWORD;
						fb_write(f, "Password: ");
					} else {
						f->mode = FB_SHELL;
						fb_write(f, f->ps1);
					}
				} else if (f->mode == FB_PASSWORD) {
					if (strcmp(f->line, f->password) == 0) {
						f->mode = FB_SHELL;
						fb_write(f, "\r\n");
						fb_write(f, f->ps1);
					} else {
						f->mode = FB_LOGIN;
						fb_write(f, "\r\nLogin incorrect\r\nfake login: ");
					}
				} else {
					fb_shell_line(f, f->line);
				}
			} else if (f->llen + 1 < sizeof f->line) {
				f->line[f->llen++] = ch;
				if (f->echo && f->mode != FB_PASSWORD) {
					char e[2] = {ch, 0};
					fb_write(f, e);
				}
			}
			break;
		default:
			break; /* off, booting, dead: input lost */
		}
	}
}

static FB_UNUSED void fb_on_read(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(ev);
	struct fakeboard *f = arg;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n <= 0)
		return;
	/* A UART FIFO of f->fifo bytes: what arrives in one burst beyond it is lost. */
	if (f->mode == FB_UBOOT && n > f->max_burst)
		f->max_burst = (int)n;
	if (f->fifo > 0 && (f->mode == FB_UBOOT) && n > f->fifo) {
		f->fifo_overflows++;
		n = f->fifo;
	}
	fb_input(f, buf, (size_t)n);
}

/* Create the pty pair; the controller opens f->path with the pty console driver. */
static FB_UNUSED int fb_init(struct fakeboard *f, struct loop *l)
{
	memset(f, 0, sizeof *f);
	f->l = l;
	f->has_uboot = true;
	f->autoboot = true;
	f->faults_left = -1;
	f->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (f->master < 0 || grantpt(f->master) || unlockpt(f->master))
		return -1;
	const char *p = ptsname(f->master);
	if (!p)
		return -1;
	lab_strlcpy(f->path, p, sizeof f->path);
	struct termios tio;
	/* raw on the board side too: bytes pass unchanged */
	f->slave_keep = open(f->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (f->slave_keep >= 0 && tcgetattr(f->slave_keep, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(f->slave_keep, TCSANOW, &tio);
	}
	lab_fd_nonblock(f->master);
	loop_timer_init(&f->t, fb_countdown, f);
	lab_strlcpy(f->ps1, "# ", sizeof f->ps1);
	return loop_fd_add(l, f->master, LOOP_READ, fb_on_read, f);
}

/* The board's console goes away for good (QEMU exited): the pty is closed, so
 * reads hang up and reopening its path fails. */
static FB_UNUSED void fb_vanish(struct fakeboard *f)
{
	loop_timer_stop(f->l, &f->t);
	if (f->master >= 0) {
		loop_fd_del(f->l, f->master);
		close(f->master);
		f->master = -1;
	}
	if (f->slave_keep >= 0) {
		close(f->slave_keep);
		f->slave_keep = -1;
	}
	f->mode = FB_OFF;
}

static FB_UNUSED void fb_fini(struct fakeboard *f)
{
	loop_timer_stop(f->l, &f->t);
	if (f->master >= 0) {
		loop_fd_del(f->l, f->master);
		close(f->master);
	}
	if (f->slave_keep >= 0)
		close(f->slave_keep);
	for (int i = 0; i < f->nfiles; i++)
		lab_buf_free(&f->files[i].data);
	f->nfiles = 0;
}

/* Run the loop for ms: what is on the ptys and timers due in that time get handled. */
static FB_UNUSED void fb_run_for(struct loop *l, uint64_t ms);

/* Run the loop until *done or timeout_ms. */
static FB_UNUSED bool fb_run_until(struct loop *l, const bool *done, uint64_t timeout_ms)
{
	uint64_t end = lab_now_ms() + timeout_ms;
	while (!*done && lab_now_ms() < end)
		loop_run_once(l, 20);
	return *done;
}

static FB_UNUSED void fb_run_for(struct loop *l, uint64_t ms)
{
	bool never = false;
	fb_run_until(l, &never, ms);
}

/* A pty console on the fake board, opened, with `ev` and `arg` for its events
 * (the rig every shell, U-Boot and agent-session test drives); aborts on error. */
static FB_UNUSED struct console *fb_console(struct fakeboard *f, struct loop *l,
					     const struct console_events *ev, void *arg)
{
	char yaml[256];
	snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\n", f->path);
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	struct console *c = NULL;
	if (cfg_parse_buffer("test", yaml, strlen(yaml), &n, &e) ||
	    console_new(l, "fake", n, ev, arg, &c, &e) || console_open(c, &e)) {
		fprintf(stderr, "fake console: %s\n", e.msg);
		abort();
	}
	cfg_free(n);
	return c;
}

#endif
