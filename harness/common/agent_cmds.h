/*
 * agent_cmds.h - the agent contract's commands (docs/agent.md): each row is
 *   X(id, name, keys, usage)
 * where keys are the key=value arguments the command accepts (space
 * separated) and usage is its --help line.  emmclab-agent and the simulated
 * agent (boards/sim/sim_agent.c) both build their command tables from it, a
 * handler cmd_<id> each, so their names and argument checks cannot drift.
 * `resend SEQ...` is not a row: it prints logged lines, no hello or done.
 * Plain libc: the static agent links it.
 */
#ifndef EMMCLAB_AGENT_CMDS_H
#define EMMCLAB_AGENT_CMDS_H

#include <stdbool.h>

#define AGENT_COMMANDS(X)                                                                          \
	X(identify, "identify", "ext_csd",                                                         \
	  "CID, EXT_CSD and sysfs identity of the eMMC (ext_csd=FILE: decode a 512-byte dump)")    \
	X(mode, "mode", "expect", "verified fua / write_cache / cqe state; expect=MODE compares")  \
	X(health, "health", "",                                                                    \
	  "wear now: EXT_CSD life-time estimates A/B [268/269] and PRE_EOL_INFO [267]")            \
	X(precondition, "precondition", "passes target seed",                                      \
	  "passes=N full-device writes of /dev/urandom data, as dd did (seed=S: reproducible "     \
	  "data instead; target=PATH: file or block device)")                                      \
	X(androbench, "androbench", "iter iterations dir seq_mib req_mib rand_mib rand_ios seed count latency", \
	  "iter=N [iterations=1] [dir=PATH] [seq_mib=64] [req_mib=32] [rand_mib=64] "              \
	  "[rand_ios=2048] [count=1] [latency=1]")                                                             \
	X(fscopy, "fscopy", "iter iterations tree unpack scale count dir target seed latency",             \
	  "iter=N [iterations=1] [tree=synthetic|DIR|FILE.tar.xz [unpack=DIR]] [scale=1.0] "       \
	  "[count=1] [latency=1] [dir=PATH | target=BLOCKDEV]")                                                \
	X(powerfail_write, "powerfail-write", "records file record_size iter",                     \
	  "[records=N] [file=PATH] [record_size=4096]: fsync'd, CRC'd records, acked as counters") \
	X(powerfail_check, "powerfail-check", "file acked record_size iter",                       \
	  "[file=PATH] [acked=N]: verify every acknowledged record")                               \
	X(fio, "fio", "job iter count latency",                                                    \
	  "job=PATH [count=1] [latency=1]: run fio --output-format=json and report figures")                   \
	X(parse_trace, "parse-trace", "file host",                                                 \
	  "file=PATH [host=mmcN]: count reliable writes and flushes in a saved tracefs `trace`")  \
	X(parse_latency, "parse-latency", "file dev",                                              \
	  "file=PATH dev=MAJOR:MINOR: request latency histograms of a saved block_rq trace")

/*
 * What each workload sends to the card, derived from its I/O (the mode proof
 * of docs/running.md applies it):  X(name, counted, fua, reason)
 *   counted  the agent reports reliable_writes and flushes per iteration
 *            (tracepoints) and the controller requires them
 *   fua      AGENT_FUA_YES: it issues REQ_FUA writes, so a fua mode must show
 *            reliable writes and a cache-nofua mode none and flushes instead;
 *            AGENT_FUA_JOB: its job decides, so only "a mode without FUA
 *            shows no reliable write" applies
 */
enum agent_fua { AGENT_FUA_NO, AGENT_FUA_YES, AGENT_FUA_JOB };

#define AGENT_WORKLOADS(X)                                                                         \
	X("androbench", 1, AGENT_FUA_YES,                                                          \
	  "the random writes are O_DIRECT|O_DSYNC: each is a REQ_FUA write (a write + flush "     \
	  "without FUA); the sequential write's fdatasync adds a flush")                          \
	X("fscopy", 1, AGENT_FUA_YES,                                                              \
	  "ext4 (mkfs.ext4 defaults, barriers on) writes every journal commit block with "        \
	  "REQ_PREFLUSH|REQ_FUA, and umount/sync commit the journal")                             \
	X("fio", 1, AGENT_FUA_JOB,                                                                 \
	  "the job file decides: sync=1, fsync= or O_DSYNC issue FUA writes, buffered or "        \
	  "read-only jobs need not")                                                               \
	X("powerfail", 0, AGENT_FUA_YES,                                                           \
	  "not counted: the power cut ends the writer before its counters could be read; its "    \
	  "result is the integrity check of the acknowledged records")

struct agent_workload {
	const char *name;
	int counted;
	enum agent_fua fua;
	const char *reason;
};

/* The row of AGENT_WORKLOADS for a workload name, NULL if none. */
const struct agent_workload *agent_workload_find(const char *name);

/* Whether arg ("key=value") names one of keys (space separated). */
bool agent_cmd_key_allowed(const char *keys, const char *arg);

#endif
