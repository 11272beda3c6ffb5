/*
 * bench.c - the AndroBench-style storage workload (docs/suites.md):
 *   seq write : seq_mib MiB file, req_mib MiB requests, O_DIRECT, fdatasync timed
 *   seq read  : the same file back, O_DIRECT
 *   rand read : rand_ios x 4 KiB at random aligned offsets of the first rand_mib MiB, O_DIRECT
 *   rand write: rand_ios x 4 KiB, O_DIRECT|O_DSYNC (each write durable before the next:
 *               FUA write, or write + flush, depending on the mode), latency per write
 * Where O_DIRECT is refused (tmpfs) the buffered path is used and a
 * `error code=no-odirect` line says so once.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1024ull * 1024ull)
#define RAND_BS 4096u

struct bench {
	uint64_t seq_bytes, req_bytes, rand_bytes, rand_ios;
	int direct;
	int warned;
	char path[PATH_MAX];
	unsigned char *buf;
	uint64_t *lat;
};

/* The directory to run in: dir=, else a writable mount of the eMMC. */
int agent_workdir(struct agent *a, char *dir, size_t size)
{
	const char *d = agent_arg(a, "dir");
	struct stat st;

	if (d) {
		if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) {
			agent_error(a, "no-dir", "dir=%s: not a directory", d);
			return -1;
		}
		return (size_t)snprintf(dir, size, "%s", d) < size ? 0 : -1;
	}
	if (!a->device[0] || agent_find_mount(a, a->device, dir, size) != 0) {
		agent_error(a, "no-dir", "no writable mount of %s: give dir=PATH",
			    a->device[0] ? a->device : "an eMMC");
		return -1;
	}
	return 0;
}

/* Whole disk holding path (for block stat / tracing), else the agent's device. */
void agent_disk_of_path(struct agent *a, const char *path, char *disk, size_t size)
{
	struct stat st;

	if (stat(path, &st) == 0 && agent_whole_disk(a, S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev,
						     disk, size) == 0)
		return;
	snprintf(disk, size, "%s", a->device);
}

static int bench_open(struct agent *a, struct bench *b, int flags)
{
	int fd;

	if (b->direct) {
		fd = open(b->path, flags | O_DIRECT | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EINVAL)
			return fd;
		b->direct = 0;
		if (!b->warned)
			agent_error(a, "no-odirect", "%s: O_DIRECT refused, buffered I/O used "
				    "(figures include the page cache)", b->path);
		b->warned = 1;
	}
	return open(b->path, flags | O_CLOEXEC, 0644);
}

static int bench_io(struct agent *a, int fd, int wr, unsigned char *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t r = wr ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			agent_error(a, "io", "%s at %llu: %s", wr ? "write" : "read",
				    (unsigned long long)off, r < 0 ? strerror(errno) : "short read");
			return -1;
		}
		buf += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static double secs(uint64_t t0, uint64_t t1)
{
	double s = (double)(t1 - t0) / 1e9;

	return s > 1e-9 ? s : 1e-9;
}

static int bench_sequential(struct agent *a, struct bench *b, int wr, uint64_t total, double *mibs)
{
	uint64_t off, t0, t1;
	int fd = bench_open(a, b, wr ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY);

	if (fd < 0) {
		agent_error(a, "io", "%s: %s", b->path, strerror(errno));
		return -1;
	}
	if (!wr && !b->direct)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = agent_now_ns();
	for (off = 0; off < total; off += b->req_bytes) {
		size_t n = total - off < b->req_bytes ? (size_t)(total - off) : (size_t)b->req_bytes;

		if (bench_io(a, fd, wr, b->buf, n, off) != 0) {
			close(fd);
			return -1;
		}
	}
	if (wr && fdatasync(fd) != 0) {
		agent_error(a, "io", "fdatasync %s: %s", b->path, strerror(errno));
		close(fd);
		return -1;
	}
	t1 = agent_now_ns();
	if (!b->direct)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	*mibs = (double)total / (double)MIB / secs(t0, t1);
	return 0;
}

static int bench_random(struct agent *a, struct bench *b, struct rand_gen *rng, int wr,
			double *mibs, double *iops)
{
	uint64_t blocks = b->rand_bytes / RAND_BS, i, t0, t1;
	int fd = bench_open(a, b, wr ? O_WRONLY | O_DSYNC : O_RDONLY);

	if (fd < 0) {
		agent_error(a, "io", "%s: %s", b->path, strerror(errno));
		return -1;
	}
	t0 = agent_now_ns();
	for (i = 0; i < b->rand_ios; i++) {
		uint64_t off = (rand_next(rng) % blocks) * RAND_BS, s = agent_now_ns();

		if (bench_io(a, fd, wr, b->buf, RAND_BS, off) != 0) {
			close(fd);
			return -1;
		}
		if (wr)
			b->lat[i] = agent_now_ns() - s;
	}
	t1 = agent_now_ns();
	close(fd);
	*iops = (double)b->rand_ios / secs(t0, t1);
	*mibs = *iops * RAND_BS / (double)MIB;
	return 0;
}

static int bench_iter(struct agent *a, struct bench *b, struct rand_gen *rng, unsigned iter)
{
	double seq_w, seq_r, rr, rw, rr_iops, rw_iops, p50, p99;
	uint64_t fill = b->rand_bytes > b->seq_bytes ? b->rand_bytes : b->seq_bytes;

	rand_fill(rng, b->buf, (size_t)b->req_bytes);
	if (bench_sequential(a, b, 1, b->seq_bytes, &seq_w) != 0)
		return -1;
	if (fill > b->seq_bytes) {
		/* the random area is bigger than the sequential file: extend it, untimed */
		int fd = bench_open(a, b, O_WRONLY);
		uint64_t off;

		if (fd < 0)
			return -1;
		for (off = b->seq_bytes; off < fill; off += b->req_bytes) {
			size_t n = fill - off < b->req_bytes ? (size_t)(fill - off) : (size_t)b->req_bytes;

			if (bench_io(a, fd, 1, b->buf, n, off) != 0) {
				close(fd);
				return -1;
			}
		}
		(void)fdatasync(fd);
		close(fd);
	}
	if (bench_sequential(a, b, 0, b->seq_bytes, &seq_r) != 0 ||
	    bench_random(a, b, rng, 0, &rr, &rr_iops) != 0 ||
	    bench_random(a, b, rng, 1, &rw, &rw_iops) != 0)
		return -1;
	agent_percentile_us(b->lat, (size_t)b->rand_ios, 50, &p50);
	agent_percentile_us(b->lat, (size_t)b->rand_ios, 99, &p99);
	agent_sample(a, "androbench", iter, "seq_read", seq_r, "MiB/s");
	agent_sample(a, "androbench", iter, "seq_write", seq_w, "MiB/s");
	agent_sample(a, "androbench", iter, "rand_read", rr, "MiB/s");
	agent_sample(a, "androbench", iter, "rand_write", rw, "MiB/s");
	agent_sample(a, "androbench", iter, "rand_read_iops", rr_iops, "IOPS");
	agent_sample(a, "androbench", iter, "rand_write_iops", rw_iops, "IOPS");
	agent_sample(a, "androbench", iter, "write_lat_p50", p50, "us");
	agent_sample(a, "androbench", iter, "write_lat_p99", p99, "us");
	return 0;
}

int cmd_androbench(struct agent *a)
{
	static struct bench b;
	uint64_t first, iters, seq_mib, req_mib, rand_mib, count, seed;
	char dir[PATH_MAX], disk[64];
	struct rand_gen rng;
	unsigned it;
	int rc = 0;
	void *p;

	if (agent_arg_u64(a, "iter", 1, 1, 1000000, &first) ||
	    agent_arg_u64(a, "iterations", 1, 1, 1000, &iters) || agent_arg_u64(a, "seq_mib", 64, 1, 65536, &seq_mib) ||
	    agent_arg_u64(a, "req_mib", 32, 1, 256, &req_mib) ||
	    agent_arg_u64(a, "rand_mib", 64, 1, 65536, &rand_mib) ||
	    agent_arg_u64(a, "rand_ios", 2048, 1, 10000000, &b.rand_ios) ||
	    agent_arg_u64(a, "count", 0, 0, 1, &count) ||
	    agent_arg_u64(a, "seed", 0, 0, UINT64_MAX, &seed))
		return -1;
	if (agent_workdir(a, dir, sizeof(dir)) != 0)
		return -1;
	b.seq_bytes = seq_mib * MIB;
	b.req_bytes = req_mib * MIB;
	b.rand_bytes = rand_mib * MIB;
	b.direct = 1;
	if ((size_t)snprintf(b.path, sizeof(b.path), "%s/emmclab-androbench.%ld.dat", dir,
			     (long)getpid()) >= sizeof(b.path)) {
		agent_error(a, "bad-arg", "dir path too long");
		return -1;
	}
	if (posix_memalign(&p, 4096, (size_t)b.req_bytes) != 0) {
		agent_error(a, "nomem", "cannot allocate %llu MiB", (unsigned long long)req_mib);
		return -1;
	}
	b.buf = p;
	b.lat = calloc((size_t)b.rand_ios, sizeof(*b.lat));
	if (!b.lat) {
		free(b.buf);
		agent_error(a, "nomem", "latency buffer");
		return -1;
	}
	agent_disk_of_path(a, dir, disk, sizeof(disk));
	/* default: the offsets differ per iteration label but repeat across runs */
	rand_seed(&rng, agent_arg(a, "seed") ? seed : first);
	for (it = 1; it <= iters && rc == 0; it++) {
		unsigned label = (unsigned)(first + it - 1);

		struct agent_count c;

		agent_progress(a, (int)((it - 1) * 100 / iters), "androbench iter %u (%u/%llu) in %s",
			       label, it, (unsigned long long)iters, dir);
		if (count)
			agent_count_begin(a, &c, disk);
		rc = bench_iter(a, &b, &rng, label);
		if (count)
			agent_count_end(a, &c, "androbench", label);
		unlink(b.path);
	}
	free(b.buf);
	free(b.lat);
	return rc;
}
