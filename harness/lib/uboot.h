/*
 * uboot.h - a U-Boot session on a board console: interrupt autoboot,
 * synchronise, run commands with a verified echo and a success marker, set
 * the environment, netboot (dhcp/static IP, tftp kernel/initrd/dtb, bootargs,
 * booti/bootz/bootm).
 *
 * Ownership: the caller (board.c, or a test) owns the console and the expect
 * engine and feeds every received console byte to the expect engine.  The
 * session only adds/removes its own patterns on that expect engine and only
 * writes to the console; it never frees either.  While an operation is in
 * flight nobody else may arm patterns that consume the same text.
 *
 * Loop rules: every call returns at once; the completion callback runs later
 * from a loop callback (never from inside the call), exactly once, unless
 * uboot_cancel() or uboot_free() is called first.  One operation at a time
 * (LAB_EUSAGE when busy).  Nothing blocks.
 *
 * How a command line is typed (dropped characters are common on bootloader
 * UARTs): the text is written paced (uboot_cfg.char_delay_ms / chunk),
 * WITHOUT a terminator; the session waits until the echo shows exactly the
 * typed text, and only then sends one "\r".  If the echo does not match in
 * time (a character was lost or garbled), it sends Ctrl-C (U-Boot discards
 * the line and prints a new prompt) and retypes, up to UBOOT_TYPE_RETRIES
 * times.  So a mangled command is never executed.  Each mismatch also slows
 * the typing for the rest of the session (adaptive pacing: from unpaced to
 * 16 characters per 5 ms, then half the chunk and twice the delay, down to
 * one character per 40 ms), so a type whose pacing is too optimistic still
 * gets through, a little slower.  With uboot_cfg.echo_window (the UART FIFO's
 * depth) a window of characters goes at once and the next on its echo
 * (console_pacing.echo_window): U-Boot echoes what it has read, so the FIFO
 * is empty then; the pace is only the fallback.  Lines are at most
 * UBOOT_MAX_LINE characters (U-Boot's CONFIG_SYS_CBSIZE is 256..2048).
 *
 * Success of a command: commands are run as `CMD; echo @@UB-<n>-$?@@` and
 * succeed when hush prints `@@UB-<n>-0@@` (needs CONFIG_HUSH_PARSER, which
 * every board we support has; `$?` is the last command's status, as
 * `if CMD; then ...` tests it).  Not `CMD && echo OK || echo FAIL`: U-Boot's
 * hush (2023.01, observed on the real qemu-x86 build, see
 * harness/tests/vectors/uboot-2023.01-hush.txt) skips the rest of an and-or
 * list after a failing `&&`, so FAIL never comes.  The marker is 37 typed
 * characters shorter than the `if CMD; then echo @@UB-<n>-OK@@; else echo
 * @@UB-<n>-FAIL@@; fi` used before.  Output is the text between the echoed
 * command line and the marker.  The echo holds `$?`, not a digit, and has
 * already been consumed when the session starts waiting, so only U-Boot's
 * answer can match.  U-Boot's own error
 * lines (TFTP error, Retry count exceeded, Bad Linux ARM64 Image magic,
 * ## Kernel loading failed, Unknown command, ...) are recognised too: the
 * first one is the failure's message, and when the marker does not follow
 * within 3 s (U-Boot hung or reset) the step fails on it.
 *
 * Autoboot: uboot_interrupt also watches for the kernel starting; a board
 * that boots by itself (bootdelay -2, or 0 with the key too late) completes
 * with LAB_EFOUND and uboot_autobooted() true, its message saying which.
 */
#ifndef EMMCLAB_UBOOT_H
#define EMMCLAB_UBOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "loop.h"
#include "util.h"

struct uboot;
struct console;
struct expect;

#define UBOOT_MAX_LINE 1000
#define UBOOT_TYPE_RETRIES 4
#define UBOOT_MAX_OUTPUT (256 * 1024)

/* Completion: rc LAB_OK / LAB_EFOUND (command ran and failed: FAIL marker) /
 * LAB_ETIMEOUT (no answer in time: the bootloader hangs) / LAB_EINFRA
 * (console write failed, echo never matched after retries).
 * out/len: the command output (cleaned text, NUL-terminated), valid during the
 * callback; msg in uboot_errmsg() when rc != LAB_OK. */
typedef void (*uboot_cb)(struct uboot *u, int rc, const char *out, size_t len, void *arg);

/* cfg is borrowed (must outlive the session); board is used in messages. */
struct uboot *uboot_new(struct loop *l, struct console *c, struct expect *x,
			const struct uboot_cfg *cfg, const char *board);
void uboot_free(struct uboot *u); /* cancels what is in flight; no callback follows */
void uboot_cancel(struct uboot *u);
bool uboot_busy(const struct uboot *u);
/* Text of the last failure ("tftp: File not found", "no prompt within 30s", ...). */
const char *uboot_errmsg(const struct uboot *u);
/* Number of command lines retyped because the echo did not match (stats/tests). */
unsigned uboot_retypes(const struct uboot *u);
/* The last uboot_interrupt ended because the kernel started by itself. */
bool uboot_autobooted(const struct uboot *u);
/* Each step as it happens, for `board boot --explain`: what = "types", "waits for"
 * or "matched", detail the text.  NULL turns it off. */
typedef void (*uboot_trace_cb)(struct uboot *u, const char *what, const char *detail, void *arg);
void uboot_set_trace(struct uboot *u, uboot_trace_cb cb, void *arg);
/* The kernel command line U-Boot passes: cfg->bootargs (the board type's:
 * console=, root=, earlycon), then cmdline (the kernel's own, then the mode's),
 * one space between.  Later words win in Linux for a repeated parameter, so a
 * mode's recipe overrides the kernel's, which overrides the board's.  Caller frees. */
char *uboot_bootargs(const struct uboot_cfg *cfg, const char *cmdline);

/* From power-on: wait for cfg->autoboot_pattern (or an already shown prompt),
 * send cfg->interrupt_key, then synchronise (uboot_sync).  timeout_ms bounds
 * the whole operation.  rc LAB_ETIMEOUT when neither pattern nor prompt came. */
int uboot_interrupt(struct uboot *u, uint64_t timeout_ms, uboot_cb cb, void *arg);

/* Already at (or near) a prompt: Ctrl-C, then type `echo @@UB-<n>@@` and wait
 * for that output on its own line.  Establishes that U-Boot reads and answers. */
int uboot_sync(struct uboot *u, uint64_t timeout_ms, uboot_cb cb, void *arg);

/* Run one command and capture output and success (see above). */
int uboot_run(struct uboot *u, const char *cmd, uint64_t timeout_ms, uboot_cb cb, void *arg);

/* setenv name 'value' (value single-quoted for hush; a value containing a
 * single quote is refused with LAB_EUSAGE). */
int uboot_setenv(struct uboot *u, const char *name, const char *value, uint64_t timeout_ms,
		 uboot_cb cb, void *arg);

/* Start a kernel: types `CMD; echo @@UB-<n>-FAIL@@` and completes with LAB_OK
 * as soon as the kernel takes over ("Starting kernel", "Booting Linux",
 * "Linux version" or "Uncompressing Linux") or with LAB_EFOUND when U-Boot
 * came back (the boot command failed: bad image, missing fdt...). */
int uboot_boot(struct uboot *u, const char *cmd, uint64_t timeout_ms, uboot_cb cb, void *arg);

/* The netboot sequence (deploy uboot-tftp). Every string may be NULL/"". */
struct uboot_netboot {
	bool dhcp;              /* `dhcp` (sets ipaddr; serverip from DHCP unless given) */
	const char *ipaddr;     /* static: setenv ipaddr (when !dhcp) */
	const char *netmask;
	const char *serverip;   /* TFTP server; setenv serverip */
	const char *kernel;     /* TFTP file name of the kernel image (required) */
	const char *initrd;     /* TFTP file name of the initrd, or NULL */
	const char *dtb;        /* TFTP file name of the DTB, or NULL */
	const char *bootargs;   /* the kernel's and the mode's command line: cfg->bootargs
				 * goes first (uboot_bootargs), always set */
	/* Boot command; NULL = cfg->boot_cmd, else "booti ${kernel_addr_r} RD FDT" with
	 * RD = "${ramdisk_addr_r}:${initrd_size}" or "-" and FDT = "${fdt_addr_r}"
	 * or omitted.  The initrd's size is saved in ${initrd_size} after its tftp. */
	const char *boot_cmd;
	uint64_t step_timeout_ms; /* per command (tftp of a big kernel); 0 = 120 s */
};
/* Runs: cfg->env settings, network set-up, tftp ${kernel_addr_r} KERNEL,
 * [tftp ${fdt_addr_r} DTB], [tftp ${ramdisk_addr_r} INITRD + save size],
 * setenv bootargs (always: uboot_bootargs(cfg, nb->bootargs)), then
 * uboot_boot(boot command).  The first failing step ends it
 * (rc as its step; uboot_errmsg names the step and U-Boot's output tail).
 * timeout_ms bounds the whole sequence. */
int uboot_netboot(struct uboot *u, const struct uboot_netboot *nb, uint64_t timeout_ms,
		  uboot_cb cb, void *arg);

/* Apply cfg->env ("name=value" each), set bootargs = cfg->bootargs + " " + extra
 * (when cfg->bootargs is empty: the board's own ${bootargs} + " " + extra; neither
 * given: untouched), then uboot_boot("boot"), which runs the board's ${bootcmd}
 * (a uboot.env entry "bootcmd=..." changes it).  Used when the board boots from
 * its own storage (deploy none).  Note: a bootcmd that sets bootargs itself
 * (extlinux.conf `append`) overrides ours. */
int uboot_boot_local(struct uboot *u, const char *extra_bootargs, uint64_t timeout_ms,
		     uboot_cb cb, void *arg);

#endif
