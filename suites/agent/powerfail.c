/*
 * powerfail.c - data integrity across a power cut (docs/suites.md "powerfail").
 *
 * powerfail-write appends fixed-size records, each fsync'd before it is
 * acknowledged with `counter name=acked value=SEQ`; the controller cuts the
 * power at a random moment and remembers the last ack it saw.  After the
 * next boot powerfail-check acked=N verifies that records 1..N are intact.
 *
 * Record (little-endian), record_size bytes:
 *   0 "EMPF" | 4 u32 record_size | 8 u64 seq | 16 u64 run_id | 24 payload ... |
 *   size-4 u32 CRC-32 of bytes [0, size-4)
 * run_id is random per powerfail-write, so records of an older run left in
 * the file are never taken for this run's.
 *
 * powerfail-check classifies each acknowledged record: intact; lost (all
 * zero: never reached the medium); corrupt (anything else), and of those
 * torn: some 512-byte sectors hold this record's bytes and others do not (a
 * write cut part way, at sector granularity).  `corrupt` keeps counting
 * every damaged record (torn included), as before `torn` existed.
 */
#include "agent.h"
#include "crc.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PF_MAGIC "EMPF"
#define PF_HDR 24
#define PF_SECTOR 512

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void pf_build(unsigned char *r, size_t size, uint64_t seq, uint64_t run_id)
{
	struct rand_gen rng;

	memcpy(r, PF_MAGIC, 4);
	put32(r + 4, (uint32_t)size);
	put64(r + 8, seq);
	put64(r + 16, run_id);
	rand_seed(&rng, run_id ^ (seq * 0x9e3779b97f4a7c15ull));
	rand_fill(&rng, r + PF_HDR, size - PF_HDR - 4);
	put32(r + size - 4, crc32_ieee(r, size - 4));
}

/* 1 intact (run_id filled when *run_id == 0), 0 invalid */
static int pf_valid(const unsigned char *r, size_t size, uint64_t seq, uint64_t *run_id)
{
	if (memcmp(r, PF_MAGIC, 4) != 0 || get32(r + 4) != size || get64(r + 8) != seq ||
	    get32(r + size - 4) != crc32_ieee(r, size - 4))
		return 0;
	if (*run_id == 0)
		*run_id = get64(r + 16);
	return get64(r + 16) == *run_id;
}

/* 1: some whole sectors of the @got bytes at @r are record @seq's, some not (torn) */
static int pf_partly(const unsigned char *r, unsigned char *want, size_t got, size_t size,
		     uint64_t seq, uint64_t run_id)
{
	size_t off;
	int same = 0, other = 0;

	pf_build(want, size, seq, run_id);
	for (off = 0; off < size; off += PF_SECTOR) {
		size_t n = size - off < PF_SECTOR ? size - off : PF_SECTOR;

		if (off + n <= got && memcmp(r + off, want + off, n) == 0)
			same = 1;
		else
			other = 1;
	}
	return same && other;
}

static int pf_file(struct agent *a, char *path, size_t size)
{
	const char *f = agent_arg(a, "file");
	char dir[PATH_MAX];

	if (f)
		return (size_t)snprintf(path, size, "%s", f) < size ? 0 : -1;
	if (agent_workdir(a, dir, sizeof(dir)) != 0)
		return -1;
	return (size_t)snprintf(path, size, "%s/emmclab-powerfail.dat", dir) < size ? 0 : -1;
}

static int pf_sync_dir(const char *path)
{
	char copy[PATH_MAX];
	int fd, r;

	snprintf(copy, sizeof(copy), "%s", path);
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

int cmd_powerfail_write(struct agent *a)
{
	uint64_t records, rsize, iter, seq, run_id;
	char path[PATH_MAX];
	unsigned char *r;
	int fd;

	if (agent_arg_u64(a, "records", 20000, 1, 100000000, &records) ||
	    agent_arg_u64(a, "record_size", 4096, 64, 1 << 20, &rsize) ||
	    agent_arg_u64(a, "iter", 1, 1, 1000000, &iter) || pf_file(a, path, sizeof(path)) != 0)
		return -1;
	if (rsize % 8) {
		agent_error(a, "bad-arg", "record_size=%llu: want a multiple of 8",
			    (unsigned long long)rsize);
		return -1;
	}
	r = malloc((size_t)rsize);
	if (!r) {
		agent_error(a, "nomem", "record buffer");
		return -1;
	}
	do {
		struct rand_gen rng;

		rand_seed(&rng, agent_now_ns() ^ ((uint64_t)getpid() << 32));
		run_id = rand_next(&rng);
	} while (run_id == 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd) != 0 || pf_sync_dir(path) != 0) {
		agent_error(a, "io", "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(r);
		return -1;
	}
	agent_progress(a, 0, "powerfail-write %s records=%llu record_size=%llu", path,
		       (unsigned long long)records, (unsigned long long)rsize);
	for (seq = 1; seq <= records; seq++) {
		size_t done = 0;

		pf_build(r, (size_t)rsize, seq, run_id);
		while (done < rsize) {
			ssize_t w = pwrite(fd, r + done, (size_t)rsize - done,
					   (off_t)((seq - 1) * rsize + done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				agent_error(a, "io", "write record %llu: %s", (unsigned long long)seq,
					    w < 0 ? strerror(errno) : "no space");
				close(fd);
				free(r);
				return -1;
			}
			done += (size_t)w;
		}
		/* only a record that fsync returned for is acknowledged */
		if (fsync(fd) != 0) {
			agent_error(a, "io", "fsync record %llu: %s", (unsigned long long)seq,
				    strerror(errno));
			close(fd);
			free(r);
			return -1;
		}
		agent_counter(a, "powerfail", (unsigned)iter, "acked", (int64_t)seq);
	}
	close(fd);
	free(r);
	return 0;
}

int cmd_powerfail_check(struct agent *a)
{
	uint64_t acked, rsize, iter, nslots, i, run_id = 0;
	uint64_t intact = 0, lost = 0, corrupt = 0, torn = 0, extra = 0, contiguous = 0;
	int contiguous_open = 1;
	char path[PATH_MAX];
	unsigned char *r, *want;
	struct stat st;
	int fd;

	if (agent_arg_u64(a, "acked", 0, 0, UINT64_MAX / 2, &acked) ||
	    agent_arg_u64(a, "record_size", 4096, 64, 1 << 20, &rsize) ||
	    agent_arg_u64(a, "iter", 1, 1, 1000000, &iter) || pf_file(a, path, sizeof(path)) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		agent_error(a, "io", "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	r = malloc((size_t)rsize);
	want = malloc((size_t)rsize);
	if (!r || !want) {
		free(r);
		free(want);
		close(fd);
		agent_error(a, "nomem", "record buffer");
		return -1;
	}
	nslots = ((uint64_t)st.st_size + rsize - 1) / rsize;
	/* the run id: of the first intact record anywhere (record 1 may be the damaged one) */
	for (i = 0; i < nslots && !run_id; i++)
		if (pread(fd, r, (size_t)rsize, (off_t)(i * rsize)) == (ssize_t)rsize)
			(void)pf_valid(r, (size_t)rsize, i + 1, &run_id);
	if (nslots < acked)
		nslots = acked;
	for (i = 0; i < nslots; i++) {
		ssize_t got = pread(fd, r, (size_t)rsize, (off_t)(i * rsize));
		int ok = 0, empty = 1;
		ssize_t j;

		if (got < 0) {
			agent_error(a, "io", "read %s: %s", path, strerror(errno));
			free(r);
			free(want);
			close(fd);
			return -1;
		}
		for (j = 0; j < got && empty; j++)
			empty = r[j] == 0;
		if (got == (ssize_t)rsize && run_id)
			ok = pf_valid(r, (size_t)rsize, i + 1, &run_id);
		if (ok && contiguous_open)
			contiguous = i + 1;
		else
			contiguous_open = 0;
		if (i < acked) {
			if (ok)
				intact++;
			else if (empty) /* never reached the medium (or a hole): lost */
				lost++;
			else { /* torn or garbage: corrupt */
				corrupt++;
				torn += run_id && pf_partly(r, want, (size_t)got, (size_t)rsize, i + 1,
							    run_id);
			}
		} else if (ok) {
			extra++;
		}
	}
	free(r);
	free(want);
	close(fd);
	agent_counter(a, "powerfail", (unsigned)iter, "acked", (int64_t)acked);
	agent_counter(a, "powerfail", (unsigned)iter, "intact", (int64_t)intact);
	agent_counter(a, "powerfail", (unsigned)iter, "lost", (int64_t)lost);
	agent_counter(a, "powerfail", (unsigned)iter, "corrupt", (int64_t)corrupt);
	agent_counter(a, "powerfail", (unsigned)iter, "torn", (int64_t)torn);
	agent_counter(a, "powerfail", (unsigned)iter, "extra", (int64_t)extra);
	agent_counter(a, "powerfail", (unsigned)iter, "last_intact", (int64_t)contiguous);
	if (lost || corrupt)
		agent_error(a, "integrity",
			    "%llu of %llu acknowledged records lost, %llu corrupt (%llu torn)",
			    (unsigned long long)lost, (unsigned long long)acked,
			    (unsigned long long)corrupt, (unsigned long long)torn);
	return 0;
}
