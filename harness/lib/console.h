/*
 * console.h - board consoles as drivers (console/<name>.c each exporting
 * `const struct console_driver console_<name>`, one row in console_drivers[]):
 * serial (libserialport), tcp (raw / telnet RFC 2217, as ser2net offers),
 * pty (simulated boards), exec (a child's stdio, e.g. QEMU).
 *
 * A console is opened once per board and lives across boots; it reconnects
 * on loss.  All I/O is non-blocking on the loop: writes are queued and
 * drained when the fd is writable, paced per board (char_delay/chunk).
 * Every byte received is passed to the transcript (if attached) and then to
 * the data callback.  A console that vanishes while the board is off is not
 * an error (console_set_expect_down).
 */
#ifndef EMMCLAB_CONSOLE_H
#define EMMCLAB_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfgnode.h"
#include "loop.h"
#include "opt.h"
#include "util.h"

struct console;
struct transcript;

struct console_events {
	void (*data)(struct console *c, const char *buf, size_t n, void *arg);
	/* up == false: lost (reconnect is being tried unless closed); msg says why */
	void (*state)(struct console *c, bool up, const char *msg, void *arg);
	/* Lost while the board is on (not console_set_expect_down) and not back
	 * within the console's reconnect_window (end of file, refused reconnection):
	 * the owner ends its current step with "console lost".  Reconnecting goes
	 * on; may be NULL. */
	void (*gone)(struct console *c, const char *msg, void *arg);
};

/* Bumped when struct console_driver changes; every ops table sets .version to it. */
#define CONSOLE_OPS_VERSION 1

struct console_driver {
	const char *name;          /* first: the registry finds drivers by it */
	int version;               /* CONSOLE_OPS_VERSION */
	const char *help;
	const struct opt *options;
	size_t cfg_size;
	/* Required: open, close.  Optional: rx_filter, tx_filter, connected. */
	/* Open the transport; returns the fd to watch (non-blocking, O_CLOEXEC) or -1 with e set.
	 * A driver may return LAB_OK with *fd == -1 and *pending == true when connecting async. */
	int (*open)(struct console *c, int *fd, struct lab_err *e);
	void (*close)(struct console *c);
	/* Optional filters (telnet IAC handling): transform received bytes in place, return new
	 * length; may queue replies with console_write_raw. */
	size_t (*rx_filter)(struct console *c, char *buf, size_t n);
	/* Optional: escape outgoing bytes (telnet doubles IAC). Returns malloc'd buffer. */
	char *(*tx_filter)(struct console *c, const char *buf, size_t n, size_t *outn);
	/* Optional (async connect): open() called console_connect_pending(); the fd became
	 * writable or failed.  Check the result, queue greetings; LAB_OK means the link is up. */
	int (*connected)(struct console *c, struct lab_err *e);
};
/* Ownership: console.c stops watching the fd before calling close(); the driver closes
 * its fd there and frees what it keeps in *console_priv(). */

struct console_pacing {
	uint64_t char_delay_us; /* delay between chunks */
	size_t chunk;           /* bytes per chunk (0 = no pacing) */
	/* Echo pacing (0 = off): up to echo_window bytes are written at once,
	 * and the next go as soon as every printable byte written so far has
	 * come back in order (the board echoes what it has read, so its receive
	 * FIFO is empty), or after the time char_delay/chunk gives that many
	 * bytes, whichever is first.  For line editors that echo (U-Boot). */
	size_t echo_window;
};

/* Create from a `console:` block. Does not open yet. */
int console_new(struct loop *l, const char *board, const struct cfg_node *cfg,
		const struct console_events *ev, void *arg, struct console **out, struct lab_err *e);
void console_free(struct console *c);
int console_open(struct console *c, struct lab_err *e);
void console_close(struct console *c);
bool console_is_up(const struct console *c);
/* While true, loss/EOF is expected (board off) and reported but retried quietly;
 * the reconnect window runs only while false. */
void console_set_expect_down(struct console *c, bool expect);
/* Lost for longer than the reconnect window (the gone event fired), not back yet. */
bool console_is_gone(const struct console *c);
void console_set_pacing(struct console *c, const struct console_pacing *p);
/* Forget the bytes still awaited as echo (a new line starts: what was typed
 * before has come back or never will, e.g. an interrupt key). */
void console_echo_reset(struct console *c);
/* Pace waits released by the echo and by the timer (echo pacing). */
void console_echo_stats(const struct console *c, uint64_t *by_echo, uint64_t *by_timer);
/* Queue bytes; paced. Returns LAB_EINFRA if the queue cap (1 MiB) would overflow. */
int console_write(struct console *c, const void *buf, size_t n);
int console_write_str(struct console *c, const char *s);
/* Bytes still queued (not yet written). */
size_t console_pending(const struct console *c);
/* Unpaced, unfiltered write to the transport queue (protocol replies). */
int console_write_raw(struct console *c, const void *buf, size_t n);
void console_attach_transcript(struct console *c, struct transcript *t); /* NULL detaches */
const char *console_board(const struct console *c);
void *console_cfg(struct console *c);   /* driver config (for drivers) */
void **console_priv(struct console *c); /* driver private slot (for drivers) */
struct loop *console_loop(struct console *c);
/* Every console driver, one row each, NULL-terminated. */
extern const struct console_driver *const console_drivers[];
/* Check one ops table (version, name, help, required hooks). */
int console_ops_check(const struct console_driver *d, struct lab_err *e);
/* console_ops_check on every row of console_drivers. */
int console_registry_check(struct lab_err *e);
/* For drivers, from open(): the fd is connecting; wait for writability (at most timeout_ms,
 * 0 = 10 s) and then call the driver's connected() hook. */
void console_connect_pending(struct console *c, uint64_t timeout_ms);
/* tcp driver, rfc2217: the value the server last confirmed for COM-PORT-OPTION command
 * cmd (1 baud rate, 2 data size, 3 parity 1..5 = none/odd/even/mark/space, 4 stop size,
 * 5 control); 0 = no answer yet or not a tcp console. */
uint32_t console_tcp_comport(struct console *c, int cmd);
/* The driver of this console and a description of its transport (for messages). */
const struct console_driver *console_get_driver(const struct console *c);

/* ---- transcripts: every byte, per boot, timestamped per line ---- */
/* A transcript file: each line prefixed "[   12.345678] " (monotonic seconds since open).
 * Size-capped: past max_bytes the file is rotated to PATH.1 (one old copy kept). */
int transcript_open(const char *path, uint64_t max_bytes, struct transcript **out, struct lab_err *e);
void transcript_write(struct transcript *t, const char *buf, size_t n);
/* Marks written into the transcript (e.g. "== power on =="), on their own line. */
void transcript_mark(struct transcript *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Close; returns total bytes and the sha256 of the (last) file. */
int transcript_close(struct transcript *t, char sha256[65], uint64_t *bytes, struct lab_err *e);
const char *transcript_path(const struct transcript *t);
/* Flush buffered output on a short (200 ms) loop timer; without a loop the buffer is
 * written when it fills (64 KiB), on marks and on close.  Called by console_attach_transcript. */
void transcript_set_loop(struct transcript *t, struct loop *l);
/* Cap a transcript directory's total size: remove its oldest transcripts (regular files
 * named *.log or *.log.1, by modification time) until the rest fit in max_total bytes;
 * files modified in the last minute (open transcripts) are never removed.  max_total 0:
 * no cap.  Reports how many files and bytes went. */
int transcript_prune(const char *dir, uint64_t max_total, size_t *removed, uint64_t *freed,
		     struct lab_err *e);

#endif
