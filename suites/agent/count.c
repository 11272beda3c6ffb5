/*
 * count.c - what the kernel actually sent to the card during a workload:
 * reliable writes and flushes from the mmc:mmc_request_start tracepoint,
 * and the block layer's flush count/time (stat fields 16-17).
 *
 * Reliable write: data_flags & 0x1000 (MMC_DATA_REL_WR, every mode), or
 * without CQE sbc_opcode == 23 && sbc_arg & 0x80000000 (CMD23 bit 31).
 * Flush: cmd_opcode == 6 && cmd_arg == 0x03200101 (SWITCH FLUSH_CACHE).
 */
#include "agent.h"
#include "latency.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define EVENT "events/mmc/mmc_request_start"
#define FILTER "(data_flags & 0x1000) || (sbc_opcode == 23 && sbc_arg & 0x80000000) || " \
	       "(cmd_opcode == 6 && cmd_arg == 0x03200101)"

static int field_u64(const char *line, const char *key, uint64_t *out)
{
	const char *p = line;
	size_t kl = strlen(key);
	char *end;

	/* the key must start a word: "cmd_arg=" must not match "sbc_cmd_arg=" */
	while ((p = strstr(p, key)) != NULL) {
		if (p == line || p[-1] == ' ')
			break;
		p += kl;
	}
	if (!p)
		return -1;
	errno = 0;
	*out = strtoull(p + kl, &end, 0);
	return errno || end == p + kl ? -1 : 0;
}

int agent_count_trace_text(const char *text, const char *host, uint64_t *rel, uint64_t *flush,
			   uint64_t *events)
{
	const char *line = text;
	char hostpat[48];

	*rel = *flush = *events = 0;
	if (host && *host)
		snprintf(hostpat, sizeof(hostpat), " %s: start struct mmc_request", host);
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char buf[1024];
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		uint64_t data_flags = 0, sbc_op = 0, sbc_arg = 0, cmd_op = 0, cmd_arg = 0;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : NULL;
		if (buf[0] == '#' || !strstr(buf, "mmc_request_start:") ||
		    (host && *host && !strstr(buf, hostpat)))
			continue;
		if (field_u64(buf, "cmd_opcode=", &cmd_op) != 0)
			continue;
		(*events)++;
		(void)field_u64(buf, "cmd_arg=", &cmd_arg);
		(void)field_u64(buf, "sbc_opcode=", &sbc_op);
		(void)field_u64(buf, "sbc_arg=", &sbc_arg);
		(void)field_u64(buf, "data_flags=", &data_flags);
		if ((data_flags & 0x1000) || (sbc_op == 23 && (sbc_arg & 0x80000000u)))
			(*rel)++;
		if (cmd_op == 6 && cmd_arg == 0x03200101u)
			(*flush)++;
	}
	return 0;
}

static int read_stat(const struct agent *a, const char *disk, uint64_t *flushes, uint64_t *ms)
{
	char buf[512];
	unsigned long long f[17];
	int n;

	if (!disk[0] || agent_readf(a, buf, sizeof(buf), "/sys/block/%s/stat", disk) <= 0)
		return -1;
	n = sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
			"%llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
		   &f[8], &f[9], &f[10], &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
	if (n < 17) /* kernels before 5.5 have no flush fields */
		return -1;
	*flushes = f[15];
	*ms = f[16];
	return 0;
}

static int find_mounted(const struct agent *a, char *dir, size_t size)
{
	static const char *const cands[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < 2; i++) {
		if (agent_path(a, path, sizeof(path), "%s/" EVENT "/enable", cands[i]) < 0)
			continue;
		if (access(path, W_OK) == 0) /* stored without the sysroot */
			return (size_t)snprintf(dir, size, "%s", cands[i]) < size ? 0 : -1;
	}
	return -1;
}

/*
 * The mode proof needs the tracepoints (docs/agent.md), so a kernel that has
 * tracefs but no mount of it gets one: tracefs on /sys/kernel/tracing, else
 * debugfs on /sys/kernel/debug (older kernels expose tracing only there).
 * Only on the real root: under --sysroot (tests) the tree is what it is.
 */
static int find_tracefs(struct agent *a, char *dir, size_t size)
{
	static const struct { const char *src, *fs, *at; } how[] = {
		{ "tracefs", "tracefs", "/sys/kernel/tracing" },
		{ "debugfs", "debugfs", "/sys/kernel/debug" },
	};
	size_t i;

	if (find_mounted(a, dir, size) == 0)
		return 0;
	if (a->sysroot[0] || a->tracefs_mounted[0])
		return -1;
	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		if (mount(how[i].src, how[i].at, how[i].fs, MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			continue;
		snprintf(a->tracefs_mounted, sizeof(a->tracefs_mounted), "%s", how[i].at);
		if (find_mounted(a, dir, size) == 0)
			return 0;
		agent_count_unmount(a); /* mounted, but no mmc events in it */
	}
	return -1;
}

void agent_count_unmount(struct agent *a)
{
	if (a->tracefs_mounted[0] && umount(a->tracefs_mounted) != 0)
		agent_error(a, "tracefs-umount", "%s: %s", a->tracefs_mounted, strerror(errno));
	a->tracefs_mounted[0] = '\0';
}

static void count_begin(struct agent *a, struct agent_count *c, const char *disk)
{
	char filter[512];

	memset(c, 0, sizeof(*c));
	snprintf(c->disk, sizeof(c->disk), "%s", disk ? disk : "");
	if (!c->disk[0] || agent_host_of(a, c->disk, c->host, sizeof(c->host)) != 0)
		c->host[0] = '\0';
	c->have_stat = read_stat(a, c->disk, &c->flushes, &c->flush_ms) == 0;

	if (find_tracefs(a, c->tracefs, sizeof(c->tracefs)) != 0) {
		if (!a->tracefs_warned)
			agent_error(a, "no-tracefs", "tracefs with mmc events not writable (mounting "
				    "tracefs or debugfs did not help): no reliable_writes/flushes "
				    "counters");
		a->tracefs_warned = 1;
		return;
	}
	/* c->tracefs is a system path: agent_writef adds the sysroot */
	(void)agent_writef(a, "0", "%s/tracing_on", c->tracefs);
	(void)agent_writef(a, "", "%s/trace", c->tracefs);
	if (c->host[0])
		snprintf(filter, sizeof(filter), "(%s) && name == \"%s\"", FILTER, c->host);
	else
		snprintf(filter, sizeof(filter), "%s", FILTER);
	/* an older kernel may reject a field: count unfiltered then (we classify anyway) */
	if (agent_writef(a, filter, "%s/" EVENT "/filter", c->tracefs) != 0)
		(void)agent_writef(a, "0", "%s/" EVENT "/filter", c->tracefs);
	if (agent_writef(a, "1", "%s/" EVENT "/enable", c->tracefs) != 0 ||
	    agent_writef(a, "1", "%s/tracing_on", c->tracefs) != 0) {
		agent_error(a, "no-tracefs", "cannot enable %s/" EVENT ": %s", c->tracefs,
			    strerror(errno));
		a->tracefs_warned = 1;
		return;
	}
	c->trace_on = 1;
}

void agent_count_begin(struct agent *a, struct agent_count *c, const char *disk)
{
	count_begin(a, c, disk);
	agent_lat_begin(a, c->disk); /* after count_begin: it mounts tracefs when needed */
}

void agent_count_end(struct agent *a, struct agent_count *c, const char *workload, unsigned iter)
{
	uint64_t f, ms;

	agent_lat_end(a, workload, iter);
	if (c->trace_on) {
		static char text[8 << 20]; /* filtered events only; 8 MiB is ~20k requests */
		char path[PATH_MAX];
		uint64_t rel, flush, events;
		unsigned long long in_buf = 0, written = 0;
		const char *hdr;
		int fd, n;

		(void)agent_writef(a, "0", "%s/tracing_on", c->tracefs);
		fd = agent_path(a, path, sizeof(path), "%s/trace", c->tracefs) < 0 ? -1 :
			open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? agent_read_all(fd, text, sizeof(text)) : -1;
		if (fd >= 0)
			close(fd);
		(void)agent_writef(a, "0", "%s/" EVENT "/enable", c->tracefs);
		(void)agent_writef(a, "0", "%s/" EVENT "/filter", c->tracefs);
		(void)agent_writef(a, "1", "%s/tracing_on", c->tracefs);
		if (n < 0) {
			agent_error(a, "trace-read", "%s: %s", path, strerror(errno));
		} else {
			agent_count_trace_text(text, c->host, &rel, &flush, &events);
			hdr = strstr(text, "entries-in-buffer/entries-written:");
			if (hdr && sscanf(hdr, "entries-in-buffer/entries-written: %llu/%llu", &in_buf,
					  &written) == 2 && written > in_buf)
				agent_error(a, "trace-overrun", "%llu of %llu events lost: counters are "
					    "low", written - in_buf, written);
			if ((size_t)n >= sizeof(text) - 1)
				agent_error(a, "trace-overrun", "trace text over %zu bytes: counters "
					    "are low", sizeof(text));
			agent_counter(a, workload, iter, "reliable_writes", (int64_t)rel);
			agent_counter(a, workload, iter, "flushes", (int64_t)flush);
		}
	}
	if (c->have_stat && read_stat(a, c->disk, &f, &ms) == 0) {
		agent_counter(a, workload, iter, "stat_flushes", (int64_t)(f - c->flushes));
		agent_counter(a, workload, iter, "stat_flush_ms", (int64_t)(ms - c->flush_ms));
	} else if (!c->have_stat) {
		agent_error(a, "no-blockstat", "no /sys/block/%s/stat with flush fields",
			    c->disk[0] ? c->disk : "?");
	}
}

int cmd_parse_trace(struct agent *a)
{
	static char text[8 << 20];
	const char *file = agent_arg(a, "file");
	uint64_t rel, flush, events;
	int fd, n;

	if (!file) {
		agent_error(a, "bad-arg", "parse-trace needs file=PATH");
		return -1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		agent_error(a, "io", "%s: %s", file, strerror(errno));
		return -1;
	}
	n = agent_read_all(fd, text, sizeof(text));
	close(fd);
	if (n < 0) {
		agent_error(a, "io", "%s: %s", file, strerror(errno));
		return -1;
	}
	agent_count_trace_text(text, agent_arg(a, "host"), &rel, &flush, &events);
	agent_counter(a, "trace", 1, "events", (int64_t)events);
	agent_counter(a, "trace", 1, "reliable_writes", (int64_t)rel);
	agent_counter(a, "trace", 1, "flushes", (int64_t)flush);
	return 0;
}
