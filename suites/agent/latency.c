/*
 * latency.c - per-request latency from the block tracepoints (latency.h).
 *
 * A request's latency is block_rq_complete's timestamp minus the last
 * block_rq_issue of the same (sector, sectors, operation): the time the
 * driver and the card held it.  rwbs says the operation: "W.." a write (with
 * an 'F' after the W: FUA), "FF" the flush the flush machinery issues; a
 * leading 'F' before W is a preflush (split off before issue).  Reads,
 * discards and other disks are ignored.  Seen on 6.1 (virtual board): the
 * flush is issued at sector 0 and completes at sector 2^64-1, and a write +
 * post-flush (no FUA) completes its original request again as "WS () 0 + 0".
 */
#include "agent.h"
#include "latency.h"
#include "lathist.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAT_INSTANCE "instances/emmclab-lat"

static const char *const lat_op_names[LAT_NOPS] = {"write", "flush"};

void lat_parser_init(struct lat_parser *p, unsigned major, unsigned minor)
{
	memset(p, 0, sizeof(*p));
	p->dev_major = major;
	p->dev_minor = minor;
}

static unsigned fine_bin(uint64_t us)
{
	unsigned e = 11;

	if (us < LAT_FINE_EXACT)
		return (unsigned)us;
	while (e < 30 && (us >> (e + 1)) != 0)
		e++;
	if ((us >> (e + 1)) != 0) /* 2^31 us and more: the top bin */
		return LAT_FINE_BINS - 1;
	return LAT_FINE_EXACT + (e - 11) * 1024u + (unsigned)((us >> (e - 10)) - 1024u);
}

static uint64_t fine_lo(unsigned bin)
{
	unsigned e, sub;

	if (bin < LAT_FINE_EXACT)
		return bin;
	e = 11 + (bin - LAT_FINE_EXACT) / 1024u;
	sub = (bin - LAT_FINE_EXACT) % 1024u;
	return (uint64_t)(1024u + sub) << (e - 10);
}

/* "12345.678901" before ": block_rq_..." in whole microseconds. */
static int parse_ts(const char *line, const char *colon, uint64_t *us)
{
	const char *s = colon;
	uint64_t sec = 0, frac = 0;
	unsigned digits = 0;

	while (s > line && s[-1] != ' ')
		s--;
	for (; s < colon && *s >= '0' && *s <= '9'; s++)
		sec = sec * 10 + (uint64_t)(*s - '0');
	if (s >= colon || *s != '.')
		return -1;
	for (s++; s < colon && *s >= '0' && *s <= '9'; s++, digits++)
		if (digits < 6)
			frac = frac * 10 + (uint64_t)(*s - '0');
	if (s != colon || digits == 0)
		return -1;
	for (; digits < 6; digits++)
		frac *= 10;
	*us = sec * 1000000u + frac;
	return 0;
}

/* The operation of an rwbs string: LAT_WRITE, LAT_FLUSH, or -1 (ignored). */
static int rwbs_op(const char *rwbs)
{
	const char *op = rwbs;

	if (op[0] == 'F' && op[1] && strchr("WRDNF", op[1])) /* a preflush, then the op */
		op++;
	if (op[0] == 'W')
		return LAT_WRITE;
	if (op[0] == 'F')
		return LAT_FLUSH;
	return -1;
}

static void record(struct lat_parser *p, int op, uint64_t us)
{
	p->fine[op][fine_bin(us)]++;
	p->n[op]++;
}

static void parse_line(struct lat_parser *p, const char *line)
{
	const char *ev, *s;
	char rwbs[16];
	unsigned maj, min;
	unsigned long long sector;
	unsigned nr;
	int issue, op, len;
	uint64_t t;
	size_t i;

	if ((ev = strstr(line, ": block_rq_issue: ")) != NULL)
		issue = 1;
	else if ((ev = strstr(line, ": block_rq_complete: ")) != NULL)
		issue = 0;
	else
		return;
	if (parse_ts(line, ev, &t) != 0)
		return;
	s = strchr(ev + 2, ':') + 2;
	if (sscanf(s, "%u,%u %15s%n", &maj, &min, rwbs, &len) != 3 || maj != p->dev_major ||
	    min != p->dev_minor || (op = rwbs_op(rwbs)) < 0)
		return;
	/* issue: "bytes (cmd) sector + nr [comm]"; complete: "(cmd) sector + nr [err]";
	 * newer kernels add fields after nr */
	s = strchr(s + len, ')');
	if (!s || sscanf(s + 1, " %llu + %u", &sector, &nr) != 2)
		return;
	/* The flush machinery's flush has no position: issued at sector 0, it
	 * completes at (sector_t)-1; one is in flight per queue, so the op is the key. */
	if (op == LAT_FLUSH)
		sector = nr = 0;
	/* a write whose post-flush just finished ends as "W () 0 + 0": its data
	 * request completed (and was counted) before the flush */
	else if (!issue && nr == 0)
		return;
	for (i = 0; i < p->npend; i++)
		if (p->pend[i].sector == sector && p->pend[i].nr == nr && p->pend[i].op == op)
			break;
	if (issue) {
		/* a requeued request is issued again: its latency runs from the last issue */
		if (i == p->npend) {
			if (p->npend == sizeof(p->pend) / sizeof(p->pend[0]))
				p->pend[0] = p->pend[--p->npend]; /* never completed: drop one */
			i = p->npend++;
		}
		p->pend[i] = (struct lat_pending){sector, nr, (uint8_t)op, t};
		return;
	}
	if (i == p->npend) {
		p->unmatched++;
		return;
	}
	record(p, op, t >= p->pend[i].t_us ? t - p->pend[i].t_us : 0);
	p->pend[i] = p->pend[--p->npend];
}

void lat_parser_feed(struct lat_parser *p, const char *buf, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(buf, '\n', len);
		size_t part = nl ? (size_t)(nl - buf) : len;
		size_t room = sizeof(p->tail) - 1 - p->tail_len;

		/* an overlong line is cut: no event line is near 1 KiB */
		memcpy(p->tail + p->tail_len, buf, part < room ? part : room);
		p->tail_len += part < room ? part : room;
		if (!nl)
			return;
		p->tail[p->tail_len] = '\0';
		parse_line(p, p->tail);
		p->tail_len = 0;
		buf = nl + 1;
		len -= part + 1;
	}
}

double lat_parser_percentile(const struct lat_parser *p, int op, double pct)
{
	uint64_t rank, seen = 0;
	unsigned b;

	if (p->n[op] == 0)
		return -1;
	rank = (uint64_t)((pct / 100.0) * (double)p->n[op] + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > p->n[op])
		rank = p->n[op];
	for (b = 0; b < LAT_FINE_BINS; b++) {
		seen += p->fine[op][b];
		if (seen >= rank)
			return (double)fine_lo(b);
	}
	return (double)fine_lo(LAT_FINE_BINS - 1);
}

void lat_report(struct agent *a, const struct lat_parser *p, const char *workload, unsigned iter)
{
	static const struct {
		const char *name;
		double pct;
	} pcts[] = {
	    {"p50", 50},
	    {"p90", 90},
	    {"p99", 99},
	    {"p999", 99.9},
	};
	char metric[64], it[24], n[24], buckets[LATHIST_BUCKETS * 24];
	uint64_t coarse[LATHIST_BUCKETS];
	const char *kv[13];
	size_t i, used;
	unsigned b;
	int op;

	snprintf(it, sizeof(it), "%u", iter);
	for (op = 0; op < LAT_NOPS; op++) {
		if (p->n[op] == 0)
			continue;
		for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
			snprintf(metric, sizeof(metric), "rq_%s_lat_%s_us", lat_op_names[op],
			         pcts[i].name);
			agent_sample(a, workload, iter, metric,
			             lat_parser_percentile(p, op, pcts[i].pct), "us");
		}
		memset(coarse, 0, sizeof(coarse));
		for (b = 0; b < LAT_FINE_BINS; b++)
			coarse[lathist_bucket(fine_lo(b))] += p->fine[op][b];
		/* sparse "bucket:count" pairs: a workload fills a few decades at most */
		used = 0;
		buckets[0] = '\0';
		for (b = 0; b < LATHIST_BUCKETS; b++) {
			if (!coarse[b])
				continue;
			used +=
			    (size_t)snprintf(buckets + used, sizeof(buckets) - used, "%s%u:%llu",
			                     used ? " " : "", b, (unsigned long long)coarse[b]);
		}
		snprintf(n, sizeof(n), "%llu", (unsigned long long)p->n[op]);
		kv[0] = "workload";
		kv[1] = workload;
		kv[2] = "iter";
		kv[3] = it;
		kv[4] = "op";
		kv[5] = lat_op_names[op];
		kv[6] = "n";
		kv[7] = n;
		kv[8] = "buckets";
		kv[9] = buckets;
		kv[10] = NULL;
		agent_emit(a, "latency", kv);
	}
}

/* ---- tracing ---- */

static struct {
	int on;
	char inst[PATH_MAX]; /* the instance directory, system path */
	pid_t reader;
	int stop_fd;              /* closed: the reader drains and exits */
	struct lat_parser *p;     /* shared with the reader */
	unsigned long long lost0; /* overrun count before */
} lat;

static int tracing_dir(const struct agent *a, char *dir, size_t size)
{
	static const char *const cands[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	char path[PATH_MAX];
	size_t i;

	/* count.c mounted tracefs before (find_tracefs) when it had to */
	for (i = 0; i < 2; i++) {
		if (agent_path(a, path, sizeof(path), "%s/instances", cands[i]) < 0)
			continue;
		if (access(path, W_OK) == 0)
			return (size_t)snprintf(dir, size, "%s", cands[i]) < size ? 0 : -1;
	}
	return -1;
}

static unsigned long long overruns(const struct agent *a)
{
	char buf[1024], *s;
	unsigned long long sum = 0, v;
	int cpu;

	/* per-CPU "overrun:" of the instance's ring buffer: events lost to a full buffer */
	for (cpu = 0; cpu < 4096; cpu++) {
		if (agent_readf(a, buf, sizeof(buf), "%s/per_cpu/cpu%d/stats", lat.inst, cpu) < 0)
			break;
		s = strstr(buf, "overrun:");
		if (s && sscanf(s, "overrun: %llu", &v) == 1)
			sum += v;
	}
	return sum;
}

static void reader_main(int pipe_fd, int stop_fd, struct lat_parser *p)
{
	static char buf[64 << 10];
	struct pollfd pfd = {stop_fd, POLLIN, 0};
	int stopping = 0;

	/* the workload's signals are not ours; the parent ends us by closing stop_fd */
	signal(SIGINT, SIG_IGN);
	for (;;) {
		ssize_t r = read(pipe_fd, buf, sizeof(buf));

		if (r > 0) {
			lat_parser_feed(p, buf, (size_t)r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || (r < 0 && errno != EAGAIN) || stopping)
			break; /* drained after the stop, or the pipe failed */
		/* Not woken by the events (on one CPU that is a context switch per
		 * request, measured in docs/agent.md): the buffer is drained every
		 * 200 ms, which it holds many times over (buffer_size_kb). */
		if (poll(&pfd, 1, 200) > 0 && pfd.revents)
			stopping = 1;
	}
	_exit(0);
}

static void lat_cleanup(struct agent *a)
{
	char path[PATH_MAX];

	(void)agent_writef(a, "0", "%s/tracing_on", lat.inst);
	(void)agent_writef(a, "0", "%s/events/block/block_rq_issue/enable", lat.inst);
	(void)agent_writef(a, "0", "%s/events/block/block_rq_complete/enable", lat.inst);
	if (lat.p)
		munmap(lat.p, sizeof(*lat.p));
	lat.p = NULL;
	lat.on = 0;
	/* the instance's ring buffers go with it (EBUSY while a reader holds it) */
	if (agent_path(a, path, sizeof(path), "%s", lat.inst) == 0)
		(void)rmdir(path);
}

static void lat_note(struct agent *a, const char *why)
{
	static int noted;

	if (!noted)
		agent_progress(a, 0, "no request latency: %s", why);
	noted = 1;
}

void agent_lat_begin(struct agent *a, const char *disk)
{
	char top[256], path[PATH_MAX], buf[64], filter[160];
	const char *off = agent_arg(a, "latency");
	unsigned maj, min;
	int pipe_fd, stop[2];

	if (lat.on || (off && strcmp(off, "0") == 0))
		return;
	if (!disk || !disk[0] || agent_readf(a, buf, sizeof(buf), "/sys/block/%s/dev", disk) < 0 ||
	    sscanf(buf, "%u:%u", &maj, &min) != 2) {
		lat_note(a, "no block device number");
		return;
	}
	if (tracing_dir(a, top, sizeof(top)) != 0) {
		lat_note(a, "no writable tracefs instances");
		return;
	}
	if ((size_t)snprintf(lat.inst, sizeof(lat.inst), "%s/" LAT_INSTANCE, top) >=
	        sizeof(lat.inst) ||
	    agent_path(a, path, sizeof(path), "%s", lat.inst) < 0 ||
	    (mkdir(path, 0700) != 0 && errno != EEXIST)) {
		lat_note(a, "cannot create the tracefs instance");
		return;
	}
	lat.p =
	    mmap(NULL, sizeof(*lat.p), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (lat.p == MAP_FAILED) {
		lat.p = NULL;
		lat_note(a, "no memory for the histograms");
		return;
	}
	lat_parser_init(lat.p, maj, min);
	lat.on = 1;
	(void)agent_writef(a, "0", "%s/tracing_on", lat.inst);
	(void)agent_writef(a, "", "%s/trace", lat.inst);
	/* ~40 bytes an event: 1 MiB per CPU holds 25k requests, 200 ms of any eMMC */
	(void)agent_writef(a, "1024", "%s/buffer_size_kb", lat.inst);
	/* the kernel's dev_t is major << 20 | minor; only writes and flushes */
	snprintf(filter, sizeof(filter), "dev == %u && (rwbs ~ \"*W*\" || rwbs ~ \"*F*\")",
	         (maj << 20) | min);
	if (agent_writef(a, filter, "%s/events/block/block_rq_issue/filter", lat.inst) != 0 ||
	    agent_writef(a, filter, "%s/events/block/block_rq_complete/filter", lat.inst) != 0) {
		/* an older kernel without globs: the parser filters anyway */
		(void)agent_writef(a, "0", "%s/events/block/block_rq_issue/filter", lat.inst);
		(void)agent_writef(a, "0", "%s/events/block/block_rq_complete/filter", lat.inst);
	}
	if (agent_writef(a, "1", "%s/events/block/block_rq_issue/enable", lat.inst) != 0 ||
	    agent_writef(a, "1", "%s/events/block/block_rq_complete/enable", lat.inst) != 0) {
		lat_cleanup(a);
		lat_note(a, "no block:block_rq_issue/complete events");
		return;
	}
	lat.lost0 = overruns(a);
	if (agent_path(a, path, sizeof(path), "%s/trace_pipe", lat.inst) < 0 ||
	    (pipe_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		lat_cleanup(a);
		lat_note(a, "cannot open trace_pipe");
		return;
	}
	if (pipe2(stop, O_CLOEXEC) != 0) {
		close(pipe_fd);
		lat_cleanup(a);
		lat_note(a, "no pipe");
		return;
	}
	fflush(stdout);
	lat.reader = fork();
	if (lat.reader == 0) {
		close(stop[1]);
		reader_main(pipe_fd, stop[0], lat.p);
	}
	close(pipe_fd);
	close(stop[0]);
	if (lat.reader < 0) {
		close(stop[1]);
		lat_cleanup(a);
		lat_note(a, "fork failed");
		return;
	}
	lat.stop_fd = stop[1];
	(void)agent_writef(a, "1", "%s/tracing_on", lat.inst);
}

void agent_lat_end(struct agent *a, const char *workload, unsigned iter)
{
	unsigned long long lost;
	int st;

	if (!lat.on)
		return;
	(void)agent_writef(a, "0", "%s/tracing_on", lat.inst);
	close(lat.stop_fd);
	while (waitpid(lat.reader, &st, 0) < 0 && errno == EINTR)
		;
	lost = overruns(a) - lat.lost0;
	lat_report(a, lat.p, workload, iter);
	/* a counter, not an error: the percentiles stand, but on fewer requests */
	if (lost || lat.p->unmatched)
		agent_counter(a, workload, iter, "rq_lat_lost", (int64_t)(lost + lat.p->unmatched));
	lat_cleanup(a);
}

int cmd_parse_latency(struct agent *a)
{
	static char buf[64 << 10];
	static struct lat_parser p;
	const char *file = agent_arg(a, "file"), *dev = agent_arg(a, "dev");
	unsigned maj, min;
	ssize_t r;
	int fd;

	if (!file || !dev || sscanf(dev, "%u:%u", &maj, &min) != 2) {
		agent_error(a, "bad-arg", "parse-latency needs file=PATH dev=MAJOR:MINOR");
		return -1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		agent_error(a, "io", "%s: %s", file, strerror(errno));
		return -1;
	}
	lat_parser_init(&p, maj, min);
	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			lat_parser_feed(&p, buf, (size_t)r);
	close(fd);
	if (r < 0) {
		agent_error(a, "io", "%s: %s", file, strerror(errno));
		return -1;
	}
	lat_report(a, &p, "trace", 1);
	agent_counter(a, "trace", 1, "rq_lat_unmatched", (int64_t)p.unmatched);
	return 0;
}
