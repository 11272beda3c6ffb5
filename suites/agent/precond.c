/*
 * precond.c - precondition: N full-device passes of random data (the
 * published ext4 copy benchmark did three `dd if=/dev/urandom` passes), so
 * every run starts from a device whose FTL has seen every block written.
 * By default the data is read from /dev/urandom, as dd read it: each pass
 * is `dd if=/dev/urandom of=TARGET bs=4M` plus an fdatasync.  seed=S writes
 * reproducible xoshiro data instead (same sizes, same offsets).
 *
 * Destructive by design, so: the target is either named (target=PATH, a
 * regular file or a block device) or the eMMC the agent found, and a block
 * device that is mounted, swapped on or held by dm/md is refused.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#define CHUNK (4u << 20)

/* Open the destructive target: returns an fd (size in *size) or -1 after an error line. */
int agent_open_target(struct agent *a, char *path, size_t psize, uint64_t *size, int *is_blk)
{
	const char *t = agent_arg(a, "target");
	char why[512];
	struct stat st;
	int fd, r;

	if (t) {
		snprintf(path, psize, "%s", t);
	} else if (a->device[0]) {
		if (agent_path(a, path, psize, "/dev/%s", a->device) < 0)
			return -1;
	} else {
		agent_error(a, "no-device", "no eMMC found and no target=PATH");
		return -1;
	}
	if (stat(path, &st) != 0) {
		agent_error(a, "no-device", "%s: %s", path, strerror(errno));
		return -1;
	}
	*is_blk = S_ISBLK(st.st_mode);
	if (!*is_blk && !S_ISREG(st.st_mode)) {
		agent_error(a, "bad-target", "%s: neither a block device nor a regular file", path);
		return -1;
	}
	if (*is_blk) {
		r = agent_dev_in_use(a, st.st_rdev, why, sizeof(why));
		if (r != 0) {
			agent_error(a, "in-use", "refusing to write %s: %s", path,
				    r > 0 ? why : "cannot tell whether it is mounted");
			return -1;
		}
	}
	fd = open(path, O_WRONLY | O_CLOEXEC | (*is_blk ? O_EXCL : 0));
	if (fd < 0) {
		agent_error(a, "io", "%s: %s", path, strerror(errno));
		return -1;
	}
	if (*is_blk) {
		if (ioctl(fd, BLKGETSIZE64, size) != 0) {
			agent_error(a, "io", "BLKGETSIZE64 %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	} else {
		*size = (uint64_t)st.st_size;
	}
	if (*size == 0) {
		agent_error(a, "bad-target", "%s: size 0", path);
		close(fd);
		return -1;
	}
	return fd;
}

/* n bytes of /dev/urandom (reads of a few MiB may come back short). */
static int urandom_fill(int ufd, unsigned char *buf, size_t n)
{
	while (n) {
		ssize_t r = read(ufd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

int cmd_precondition(struct agent *a)
{
	uint64_t passes, seed, size, pass;
	char path[PATH_MAX];
	struct rand_gen rng;
	unsigned char *buf;
	int fd, is_blk, ufd = -1;
	void *p;

	if (agent_arg_u64(a, "passes", 3, 1, 100, &passes) ||
	    agent_arg_u64(a, "seed", 0, 0, UINT64_MAX, &seed))
		return -1;
	if (!agent_arg(a, "seed") && (ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0) {
		agent_error(a, "io", "/dev/urandom: %s (seed=S writes generated data instead)",
			    strerror(errno));
		return -1;
	}
	fd = agent_open_target(a, path, sizeof(path), &size, &is_blk);
	if (fd < 0) {
		if (ufd >= 0)
			close(ufd);
		return -1;
	}
	if (posix_memalign(&p, 4096, CHUNK) != 0) {
		close(fd);
		if (ufd >= 0)
			close(ufd);
		agent_error(a, "nomem", "4 MiB buffer");
		return -1;
	}
	buf = p;
	rand_seed(&rng, seed);
	agent_progress(a, 0, "precondition %llu passes over %s (%llu bytes) from %s",
		       (unsigned long long)passes, path, (unsigned long long)size,
		       ufd >= 0 ? "/dev/urandom" : "seed");
	for (pass = 1; pass <= passes; pass++) {
		uint64_t off = 0, next = 0, t0 = agent_now_ns();

		while (off < size) {
			size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
			ssize_t w;

			if (ufd < 0) {
				rand_fill(&rng, buf, n);
			} else if (urandom_fill(ufd, buf, n) != 0) {
				agent_error(a, "io", "/dev/urandom: %s", strerror(errno));
				free(buf);
				close(fd);
				close(ufd);
				return -1;
			}
			w = pwrite(fd, buf, n, (off_t)off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				agent_error(a, "io", "write %s at %llu: %s", path,
					    (unsigned long long)off, w < 0 ? strerror(errno) : "no space");
				free(buf);
				close(fd);
				if (ufd >= 0)
					close(ufd);
				return -1;
			}
			off += (uint64_t)w;
			if (off * 20 / size >= next) {
				agent_progress(a, (int)(off * 100 / size), "precondition pass %llu/%llu "
					       "%s", (unsigned long long)pass,
					       (unsigned long long)passes, path);
				next = off * 20 / size + 1;
			}
		}
		if (fdatasync(fd) != 0) {
			agent_error(a, "io", "fdatasync %s: %s", path, strerror(errno));
			free(buf);
			close(fd);
			if (ufd >= 0)
				close(ufd);
			return -1;
		}
		agent_progress(a, 100, "precondition pass %llu/%llu done in %.1f s",
			       (unsigned long long)pass, (unsigned long long)passes,
			       (double)(agent_now_ns() - t0) / 1e9);
	}
	free(buf);
	close(fd);
	if (ufd >= 0)
		close(ufd);
	return 0;
}
