/*
 * agent.h - emmclab-agent, the static program that runs on the DUT.
 *
 * It is a plain sequential program (no event loop): one invocation runs one
 * command and prints protocol lines (harness/common/proto.h) on stdout, each
 * also appended to the log for `resend`.  libc only (+ libm), C11 + POSIX/
 * Linux headers, so it links statically for any target.  Invocation, kinds
 * and keys: docs/agent.md (the agent contract).
 *
 * Every system path (/sys, /proc, /dev) goes through agent_path(), which
 * prefixes the --sysroot given for tests; nothing else knows about it.
 */
#ifndef EMMCLAB_AGENT_H
#define EMMCLAB_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "rand.h"

#ifndef EMMCLAB_VERSION
#define EMMCLAB_VERSION "0.0.0"
#endif

#define AGENT_MAX_ARGS 32

struct agent {
	const char *cmd;          /* command name */
	char device[64];          /* "mmcblk0", "" when none */
	const char *sysroot;      /* "" in production */
	const char *log_path;
	int log_fd;               /* -1: no log */
	uint64_t seq;             /* last seq printed */
	int nargs;
	char *args[AGENT_MAX_ARGS]; /* "key=value" (or bare words for resend) */
	int tracefs_warned;       /* no-tracefs reported once per invocation */
	char tracefs_mounted[64]; /* what agent_count_mount mounted, "" if nothing */
};

/* Output: one protocol line; too-long lines become an error line (seq stays dense). */
void agent_emit(struct agent *a, const char *kind, const char *const *kv);
void agent_error(struct agent *a, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void agent_progress(struct agent *a, int pct, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void agent_sample(struct agent *a, const char *workload, unsigned iter, const char *metric,
		  double value, const char *unit);
void agent_counter(struct agent *a, const char *workload, unsigned iter, const char *name,
		   int64_t value);

/* Arguments (key=value after the command).  The getters report a bad-arg
 * error line themselves and return -1. */
const char *agent_arg(const struct agent *a, const char *key);
int agent_arg_u64(struct agent *a, const char *key, uint64_t def, uint64_t min, uint64_t max,
		  uint64_t *out);
int agent_arg_double(struct agent *a, const char *key, double def, double min, double max,
		     double *out);

/* Paths and small files.  agent_readf returns the length read with trailing
 * whitespace stripped, or -1 (errno set). */
int agent_path(const struct agent *a, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int agent_readf(const struct agent *a, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int agent_writef(const struct agent *a, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int agent_read_all(int fd, char *buf, size_t size); /* up to size-1 bytes, NUL-terminated */
int agent_write_all(int fd, const void *buf, size_t len);

/* Block devices. */
int agent_whole_disk(const struct agent *a, dev_t dev, char *name, size_t size);
int agent_dev_in_use(const struct agent *a, dev_t dev, char *why, size_t size);
int agent_find_mount(const struct agent *a, const char *disk, char *dir, size_t size);
int agent_host_of(const struct agent *a, const char *disk, char *host, size_t size);

/* Workload placement (bench.c): dir= or a writable mount of the eMMC;
 * the whole disk under a path (for counters), else the agent's device. */
int agent_workdir(struct agent *a, char *dir, size_t size);
void agent_disk_of_path(struct agent *a, const char *path, char *disk, size_t size);

/* The destructive target (precond.c): target= or /dev/<device>; refuses a
 * mounted/swapped/held block device.  Returns a write fd or -1 (error line printed). */
int agent_open_target(struct agent *a, char *path, size_t psize, uint64_t *size, int *is_blk);

/* Time and children (randomness: struct rand_gen, harness/common/rand.h). */
uint64_t agent_now_ns(void);
/* fork/exec argv (PATH searched); child stdout to out_fd (-1: /dev/null),
 * stderr captured into err.  Returns the exit status, 127 when not found,
 * 128+sig when killed, -1 when fork failed. */
int agent_exec(char *const argv[], int out_fd, char *err, size_t errsize);
int agent_which(const char *prog, char *buf, size_t size);
int agent_percentile_us(uint64_t *ns, size_t n, double pct, double *out);

/* Counting (count.c): tracefs mmc_request_start + block stat deltas. */
struct agent_count {
	int trace_on;
	char tracefs[256];
	char disk[64];
	char host[32];
	int have_stat;
	uint64_t flushes, flush_ms;
};
/* Unmount what the counting mounted (tracefs or debugfs), at exit. */
void agent_count_unmount(struct agent *a);
void agent_count_begin(struct agent *a, struct agent_count *c, const char *disk);
void agent_count_end(struct agent *a, struct agent_count *c, const char *workload, unsigned iter);
/* Classify a trace text (the tracefs `trace` format); counts into rel/flush. */
int agent_count_trace_text(const char *text, const char *host, uint64_t *rel, uint64_t *flush,
			   uint64_t *events);

/* EXT_CSD / CID decoding (identify.c). */
struct agent_kv {
	int n;
	const char *kv[2 * 48 + 1];
	char store[6144];
	size_t used;
};
void agent_kv_init(struct agent_kv *k);
void agent_kv_add(struct agent_kv *k, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *agent_kv_get(const struct agent_kv *k, const char *key);
void agent_decode_ext_csd(const uint8_t *ext, struct agent_kv *k);
int agent_decode_cid(const char *hex, int ext_csd_rev, struct agent_kv *k);
void agent_knobs(const struct agent *a, struct agent_kv *k); /* knob_fua, knob_disable_cqe */

/* Commands. */
/* EXT_CSD read now (MMC_IOC_CMD, else debugfs); *src "ioctl"/"debugfs". */
int agent_read_ext_csd(const struct agent *a, uint8_t *ext, const char **src, char *err,
		       size_t errsize);
/* sysfs life_time ("0x01 0x02") into a and b; 0 when both parse. */
int agent_parse_life_time(const char *s, unsigned *a, unsigned *b);
int cmd_identify(struct agent *a);
int cmd_health(struct agent *a);
int cmd_mode(struct agent *a);
int cmd_precondition(struct agent *a);
int cmd_androbench(struct agent *a);
int cmd_fscopy(struct agent *a);
int cmd_powerfail_write(struct agent *a);
int cmd_powerfail_check(struct agent *a);
int cmd_fio(struct agent *a);
int cmd_parse_trace(struct agent *a);
int cmd_parse_latency(struct agent *a); /* latency.c */

#endif
