/*
 * latency.h - per-request write and flush latency of one workload iteration
 * from the block:block_rq_issue / block:block_rq_complete tracepoints
 * (docs/agent.md "Request latency").
 *
 * The events go to a tracefs instance of their own (instances/emmclab-lat),
 * so the mode proof's mmc events in the top-level buffer (count.c) are not
 * consumed.  A forked reader parses the instance's trace_pipe while the
 * workload runs and keeps histograms in shared memory: no event is stored or
 * shipped, only per iteration the percentiles (sample lines) and one
 * `latency` line per operation with the log-spaced buckets of lathist.h.
 *
 * Sequential like the rest of the agent: one begin/end pair at a time.
 */
#ifndef EMMCLAB_AGENT_LATENCY_H
#define EMMCLAB_AGENT_LATENCY_H

#include <stddef.h>
#include <stdint.h>

struct agent;

/* Start tracing requests of the whole disk `disk` (e.g. "mmcblk0").  Off with
 * the argument latency=0; a kernel without the block events or tracefs gets
 * one progress note and no latency lines. */
void agent_lat_begin(struct agent *a, const char *disk);
/* Stop, and report the iteration's percentiles and histograms. */
void agent_lat_end(struct agent *a, const char *workload, unsigned iter);

/* ---- the parser, also used by parse-latency and the tests ---- */
enum { LAT_WRITE, LAT_FLUSH, LAT_NOPS };

/* Fine histogram for the percentiles: exact microseconds below 2048, then
 * 1024 bins per octave (under 0.1 % error) up to 2^31 us. */
#define LAT_FINE_EXACT 2048u
#define LAT_FINE_BINS  (LAT_FINE_EXACT + 20u * 1024u)

struct lat_pending {
	uint64_t sector;
	uint32_t nr;
	uint8_t op;
	uint64_t t_us;
};

struct lat_parser {
	unsigned dev_major, dev_minor; /* only this disk's requests */
	uint32_t fine[LAT_NOPS][LAT_FINE_BINS];
	uint64_t n[LAT_NOPS];
	uint64_t unmatched; /* completions without an issue seen (tracing began mid-request) */
	size_t npend;
	struct lat_pending pend[1024]; /* issued, not completed (CQE: up to the queue depth) */
	size_t tail_len;
	char tail[1024]; /* an incomplete last line between two feeds */
};

void lat_parser_init(struct lat_parser *p, unsigned major, unsigned minor);
/* Parse a chunk of trace text (any split: partial lines are kept). */
void lat_parser_feed(struct lat_parser *p, const char *buf, size_t len);
/* Nearest-rank percentile of op in microseconds; -1 when op has no request. */
double lat_parser_percentile(const struct lat_parser *p, int op, double pct);
/* Emit the samples and latency lines of op for (workload, iter). */
void lat_report(struct agent *a, const struct lat_parser *p, const char *workload, unsigned iter);

#endif
