/*
 * fscopy.c - the published ext4 copy benchmark (docs/suites.md): per iteration
 * mkfs.ext4, mount, copy a source tree three times, remove the three
 * copies, copy three times again, umount (the seed's exact sequence, all
 * inside the timing); wall time and per-phase times on CLOCK_MONOTONIC.
 * With dir= (no device of its own) the last step is syncfs instead.
 *
 * The tree is a real directory (tree=PATH), a tarball unpacked before the
 * first iteration outside the timing (tree=FILE.tar[.xz|.gz|.bz2|.zst], e.g.
 * Debian's /usr/src/linux-source-6.1.tar.xz), or a synthetic one generated
 * from a seed while "copying" (tree=synthetic, the default): its shape
 * follows a Linux 6.2 source tree - 79,000 files at scale=1, ~16 files per
 * directory, log-normal file sizes with median 5.3 KiB and sigma 1.5
 * (mean ~16 KiB, ~1.2 GiB in all), capped at 16 MiB.  Generating instead
 * of reading keeps the source out of the measurement, as a warm page cache
 * did in the published runs, and needs no 1.2 GiB of RAM on the DUT.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define TREE_FILES 79000.0
#define FILES_PER_DIR 16u
#define SIZE_MEDIAN 5300.0
#define SIZE_SIGMA 1.5
#define SIZE_CAP (16u << 20)
#define POOL (1u << 20)

struct tree {
	uint64_t seed;
	uint32_t nfiles, ndirs;
	uint32_t *parent; /* parent[0] == 0: the root */
	unsigned char *pool;
	uint64_t bytes;
	const char *src; /* tree=PATH, else NULL */
};

static const char *const exts[] = { ".c", ".c", ".c", ".h", ".h", ".S", ".rst", ".txt",
				    ".yaml", ".dts", ".sh", "" };

static uint32_t tree_size(struct rand_gen *r)
{
	double u1 = 1.0 - rand_uniform(r), u2 = rand_uniform(r);
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	double s = exp(log(SIZE_MEDIAN) + SIZE_SIGMA * z);

	return s > SIZE_CAP ? SIZE_CAP : (uint32_t)s;
}

static int tree_init(struct tree *t, double scale, uint64_t seed)
{
	struct rand_gen r;
	uint32_t k, i;

	t->seed = seed;
	t->nfiles = (uint32_t)llround(TREE_FILES * scale);
	if (t->nfiles < 1)
		t->nfiles = 1;
	t->ndirs = (t->nfiles + FILES_PER_DIR - 1) / FILES_PER_DIR;
	t->parent = calloc(t->ndirs, sizeof(*t->parent));
	t->pool = malloc(POOL);
	if (!t->parent || !t->pool)
		return -1;
	rand_seed(&r, seed);
	rand_fill(&r, t->pool, POOL);
	/* random recursive tree, biased to shallow parents (u^2): depth ~3-8 */
	for (k = 1; k < t->ndirs; k++) {
		double u = rand_uniform(&r);

		t->parent[k] = (uint32_t)((double)k * u * u);
	}
	t->bytes = 0;
	rand_seed(&r, seed ^ 0x5eedf11e5ull);
	for (i = 0; i < t->nfiles; i++) {
		t->bytes += tree_size(&r);
		(void)rand_next(&r); /* content offset, see tree_write */
	}
	return 0;
}

static void tree_free(struct tree *t)
{
	free(t->parent);
	free(t->pool);
}

static int tree_dirpath(const struct tree *t, uint32_t d, char *buf, size_t size)
{
	uint32_t chain[64];
	int n = 0, len = 0;

	while (d != 0 && n < 64) {
		chain[n++] = d;
		d = t->parent[d];
	}
	buf[0] = '\0';
	while (n-- > 0) {
		int r = snprintf(buf + len, size - (size_t)len, "/dir%u", chain[n]);

		if (r < 0 || (size_t)r >= size - (size_t)len)
			return -1;
		len += r;
	}
	return 0;
}

static int write_all_fd(int fd, const unsigned char *p, size_t n)
{
	return agent_write_all(fd, p, n);
}

/* One synthetic copy under dst: directories in index order (parents first),
 * then files dir by dir, like a recursive copy visits them. */
static int tree_write(struct agent *a, const struct tree *t, const char *dst)
{
	struct rand_gen r;
	char path[PATH_MAX], dpath[PATH_MAX];
	uint32_t d, i;

	if (mkdir(dst, 0755) != 0) {
		agent_error(a, "io", "mkdir %s: %s", dst, strerror(errno));
		return -1;
	}
	rand_seed(&r, t->seed ^ 0x5eedf11e5ull);
	for (d = 0, i = 0; d < t->ndirs; d++) {
		uint32_t end = (d + 1) * FILES_PER_DIR;

		if (tree_dirpath(t, d, dpath, sizeof(dpath)) != 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s%s", dst, dpath) >= sizeof(path)) {
			agent_error(a, "io", "path too long");
			return -1;
		}
		if (d && mkdir(path, 0755) != 0) {
			agent_error(a, "io", "mkdir %s: %s", path, strerror(errno));
			return -1;
		}
		for (; i < t->nfiles && i < end; i++) {
			uint32_t size = tree_size(&r), off = (uint32_t)(rand_next(&r) % POOL), left;
			char fpath[PATH_MAX];
			int fd;

			if ((size_t)snprintf(fpath, sizeof(fpath), "%s/file%u%s", path, i,
					     exts[i % (sizeof(exts) / sizeof(exts[0]))]) >= sizeof(fpath))
				return -1;
			fd = open(fpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				agent_error(a, "io", "%s: %s", fpath, strerror(errno));
				return -1;
			}
			for (left = size; left;) {
				uint32_t n = POOL - off < left ? POOL - off : left;

				if (write_all_fd(fd, t->pool + off, n) != 0) {
					agent_error(a, "io", "write %s: %s", fpath, strerror(errno));
					close(fd);
					return -1;
				}
				left -= n;
				off = 0;
			}
			if (close(fd) != 0) {
				agent_error(a, "io", "close %s: %s", fpath, strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

/* cp -r of a real tree: directories, regular files (mode kept), symlinks. */
static int copy_tree(struct agent *a, const char *src, const char *dst, unsigned char *buf,
		     size_t bsize, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (depth > 64 || lstat(src, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    mkdir(dst, st.st_mode & 07777) != 0 || !(d = opendir(src))) {
		agent_error(a, "io", "copy %s -> %s: %s", src, dst, strerror(errno));
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char s[PATH_MAX], t[PATH_MAX];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(s, sizeof(s), "%s/%s", src, de->d_name) >= sizeof(s) ||
		    (size_t)snprintf(t, sizeof(t), "%s/%s", dst, de->d_name) >= sizeof(t) ||
		    lstat(s, &st) != 0) {
			agent_error(a, "io", "copy %s: %s", s, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			rc = copy_tree(a, s, t, buf, bsize, depth + 1);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(s, target, sizeof(target) - 1);

			if (n < 0 || (target[n] = '\0', symlink(target, t) != 0)) {
				agent_error(a, "io", "symlink %s: %s", t, strerror(errno));
				rc = -1;
			}
		} else if (S_ISREG(st.st_mode)) {
			int in = open(s, O_RDONLY | O_CLOEXEC);
			int out = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
			ssize_t n = 0;

			while (in >= 0 && out >= 0 && (n = read(in, buf, bsize)) > 0)
				if (agent_write_all(out, buf, (size_t)n) != 0) {
					n = -1;
					break;
				}
			if (in < 0 || out < 0 || n < 0) {
				agent_error(a, "io", "copy %s: %s", s, strerror(errno));
				rc = -1;
			}
			if (in >= 0)
				close(in);
			if (out >= 0 && close(out) != 0 && rc == 0) {
				agent_error(a, "io", "close %s: %s", t, strerror(errno));
				rc = -1;
			}
		}
		/* sockets, fifos, devices: not part of a source tree, skipped */
	}
	closedir(d);
	return rc;
}

/* rm -r */
static int rm_tree(struct agent *a, const char *path, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) != 0) {
			agent_error(a, "io", "unlink %s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (depth > 64 || !(d = opendir(path))) {
		agent_error(a, "io", "rm %s: %s", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char p[PATH_MAX];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= sizeof(p))
			rc = -1;
		else
			rc = rm_tree(a, p, depth + 1);
	}
	closedir(d);
	if (rc == 0 && rmdir(path) != 0) {
		agent_error(a, "io", "rmdir %s: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* One progress line per step of the sequence: the agent's own step log
 * (docs/suites.md), which the host test checks against strace. */
static void step(struct agent *a, unsigned iter, const char *what, const char *arg)
{
	agent_progress(a, 0, "fscopy iter %u step %s %s", iter, what, arg);
}

static int copy_three(struct agent *a, const struct tree *t, const char *root, unsigned char *buf,
		      unsigned iter)
{
	char dst[PATH_MAX];
	int i;

	for (i = 1; i <= 3; i++) {
		if ((size_t)snprintf(dst, sizeof(dst), "%s/copy%d", root, i) >= sizeof(dst))
			return -1;
		step(a, iter, "cp", dst);
		if (t->src ? copy_tree(a, t->src, dst, buf, 256 << 10, 0) : tree_write(a, t, dst))
			return -1;
	}
	return 0;
}

static int rm_three(struct agent *a, const char *root, unsigned iter)
{
	char dst[PATH_MAX];
	int i;

	for (i = 1; i <= 3; i++) {
		if ((size_t)snprintf(dst, sizeof(dst), "%s/copy%d", root, i) >= sizeof(dst))
			return -1;
		if (iter)
			step(a, iter, "rm", dst);
		if (rm_tree(a, dst, 0) != 0)
			return -1;
	}
	return 0;
}

static double since(uint64_t *t)
{
	uint64_t now = agent_now_ns();
	double s = (double)(now - *t) / 1e9;

	*t = now;
	return s;
}

static int fscopy_iter(struct agent *a, const struct tree *tr, const char *target, const char *dir,
		       unsigned iter, int count, unsigned char *buf)
{
	double mkfs_s = 0, mount_s = 0, copy1_s, rm_s, copy2_s, last_s;
	char mnt[PATH_MAX], root[PATH_MAX], disk[64], err[512];
	struct agent_count c;
	uint64_t t0, tm;
	int mounted = 0, rc = -1, fd;

	if (dir)
		agent_disk_of_path(a, dir, disk, sizeof(disk));
	else
		agent_disk_of_path(a, target, disk, sizeof(disk));
	if (count)
		agent_count_begin(a, &c, disk);
	t0 = tm = agent_now_ns();
	if (!dir) {
		char *argv[] = { "mke2fs", "-t", "ext4", "-F", "-q", (char *)target, NULL };
		int st;

		step(a, iter, "mkfs.ext4", target);
		st = agent_exec(argv, -1, err, sizeof(err));
		if (st == 127) {
			char *alt[] = { "mkfs.ext4", "-F", "-q", (char *)target, NULL };

			st = agent_exec(alt, -1, err, sizeof(err));
		}
		if (st != 0) {
			agent_error(a, "mkfs", "mke2fs %s: status %d: %s", target, st, err);
			goto out;
		}
		mkfs_s = since(&tm);
		snprintf(mnt, sizeof(mnt), "/tmp/emmclab-fscopy.XXXXXX");
		if (!mkdtemp(mnt)) {
			agent_error(a, "io", "mkdtemp: %s", strerror(errno));
			goto out;
		}
		step(a, iter, "mount", mnt);
		if (mount(target, mnt, "ext4", 0, "") != 0) {
			agent_error(a, "mount", "mount %s on %s: %s", target, mnt, strerror(errno));
			rmdir(mnt);
			goto out;
		}
		mounted = 1;
		mount_s = since(&tm);
		snprintf(root, sizeof(root), "%s", mnt);
	} else {
		if ((size_t)snprintf(root, sizeof(root), "%s/emmclab-fscopy.%ld", dir,
				     (long)getpid()) >= sizeof(root) || mkdir(root, 0755) != 0) {
			agent_error(a, "io", "mkdir %s: %s", root, strerror(errno));
			goto out;
		}
		tm = agent_now_ns();
		t0 = tm;
	}
	if (copy_three(a, tr, root, buf, iter) != 0)
		goto out;
	copy1_s = since(&tm);
	if (rm_three(a, root, iter) != 0)
		goto out;
	rm_s = since(&tm);
	if (copy_three(a, tr, root, buf, iter) != 0)
		goto out;
	copy2_s = since(&tm);
	if (mounted) {
		/* the seed ends with umount: it writes back and commits the journal */
		step(a, iter, "umount", mnt);
		if (umount(mnt) != 0) {
			agent_error(a, "mount", "umount %s: %s", mnt, strerror(errno));
			goto out;
		}
		mounted = 0;
		last_s = since(&tm);
		rmdir(mnt);
	} else {
		step(a, iter, "syncfs", root);
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) != 0) {
			agent_error(a, "io", "syncfs %s: %s", root, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
		last_s = since(&tm);
	}
	agent_sample(a, "fscopy", iter, "wall_time", (double)(tm - t0) / 1e9, "s");
	if (!dir) {
		agent_sample(a, "fscopy", iter, "mkfs_time", mkfs_s, "s");
		agent_sample(a, "fscopy", iter, "mount_time", mount_s, "s");
	}
	agent_sample(a, "fscopy", iter, "copy1_time", copy1_s, "s");
	agent_sample(a, "fscopy", iter, "rm_time", rm_s, "s");
	agent_sample(a, "fscopy", iter, "copy2_time", copy2_s, "s");
	agent_sample(a, "fscopy", iter, dir ? "sync_time" : "umount_time", last_s, "s");
	rc = 0;
out:
	if (count)
		agent_count_end(a, &c, "fscopy", iter);
	if (mounted) {
		/* a failed iteration: leave the device unmounted, outside the timing */
		if (umount(mnt) != 0)
			agent_error(a, "mount", "umount %s: %s", mnt, strerror(errno));
		else
			rmdir(mnt);
	} else if (dir) {
		/* untimed clean-up of the host directory */
		(void)rm_three(a, root, 0);
		(void)rmdir(root);
	}
	return rc;
}

static int is_tarball(const char *p)
{
	static const char *const ext[] = { ".tar", ".tar.xz", ".txz", ".tar.gz", ".tgz",
					   ".tar.bz2", ".tar.zst" };
	size_t n = strlen(p), i;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t l = strlen(ext[i]);

		if (n > l && strcmp(p + n - l, ext[i]) == 0)
			return 1;
	}
	return 0;
}

/* Files, directories and bytes of a real tree (reported with its size). */
static void tree_stat(const char *path, int depth, uint64_t *files, uint64_t *dirs, uint64_t *bytes)
{
	struct dirent *de;
	DIR *d;

	if (depth > 64 || !(d = opendir(path)))
		return;
	(*dirs)++;
	while ((de = readdir(d)) != NULL) {
		char p[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= sizeof(p) ||
		    lstat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			tree_stat(p, depth + 1, files, dirs, bytes);
		} else {
			(*files)++;
			if (S_ISREG(st.st_mode))
				*bytes += (uint64_t)st.st_size;
		}
	}
	closedir(d);
}

/* tree=FILE.tar*: `tar -xf` into unpack=DIR (default a fresh directory under
 * /tmp, on the DUT usually tmpfs, so the source is read from RAM as the
 * published runs read it from a warm page cache), before any timing.  A
 * tarball with one top-level directory (linux-source-6.1/) copies that one,
 * as `cp -r linux-6.2.2` did.  *stage is what to remove afterwards ("" if
 * the caller's unpack= directory is kept). */
static int tree_unpack(struct agent *a, const char *tarball, char *src, size_t size, char *stage,
		       size_t ssize)
{
	const char *into = agent_arg(a, "unpack");
	char err[512], only[PATH_MAX] = "";
	struct dirent *de;
	uint64_t t0 = agent_now_ns();
	int n = 0, st;
	DIR *d;

	stage[0] = '\0';
	if (into) {
		if ((size_t)snprintf(src, size, "%s", into) >= size ||
		    (mkdir(src, 0755) != 0 && errno != EEXIST)) {
			agent_error(a, "io", "unpack=%s: %s", into, strerror(errno));
			return -1;
		}
	} else {
		snprintf(src, size, "/tmp/emmclab-tree.XXXXXX");
		if (!mkdtemp(src)) {
			agent_error(a, "io", "mkdtemp: %s", strerror(errno));
			return -1;
		}
		snprintf(stage, ssize, "%s", src);
	}
	agent_progress(a, 0, "fscopy unpacking %s into %s (not timed)", tarball, src);
	{
		char *argv[] = { "tar", "-xf", (char *)tarball, "-C", src, NULL };

		st = agent_exec(argv, -1, err, sizeof(err));
	}
	if (st != 0) {
		agent_error(a, "unpack", "tar -xf %s -C %s: status %d: %s", tarball, src, st, err);
		return -1;
	}
	if (!(d = opendir(src))) {
		agent_error(a, "io", "%s: %s", src, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char p[PATH_MAX];
		struct stat sb;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", src, de->d_name) < sizeof(p) &&
		    lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
			snprintf(only, sizeof(only), "%s", p);
	}
	closedir(d);
	if (n == 1 && only[0])
		snprintf(src, size, "%s", only);
	agent_progress(a, 0, "fscopy unpacked %s in %.1f s", tarball,
		       (double)(agent_now_ns() - t0) / 1e9);
	return 0;
}

int cmd_fscopy(struct agent *a)
{
	static struct tree t;
	const char *tree = agent_arg(a, "tree"), *dir = agent_arg(a, "dir");
	char target[PATH_MAX], dbuf[PATH_MAX], sbuf[PATH_MAX], stage[PATH_MAX] = "";
	uint64_t first, iters, count, seed;
	unsigned char *buf = NULL;
	double scale;
	unsigned it;
	int rc = 0;

	if (agent_arg_u64(a, "iter", 1, 1, 1000000, &first) ||
	    agent_arg_u64(a, "iterations", 1, 1, 1000, &iters) ||
	    agent_arg_double(a, "scale", 1.0, 0.00001, 10.0, &scale) ||
	    agent_arg_u64(a, "count", 0, 0, 1, &count) ||
	    agent_arg_u64(a, "seed", 6002, 0, UINT64_MAX, &seed))
		return -1;
	if (dir && agent_arg(a, "target")) {
		agent_error(a, "bad-arg", "dir= and target= exclude each other");
		return -1;
	}
	if (dir) {
		if (agent_workdir(a, dbuf, sizeof(dbuf)) != 0)
			return -1;
		dir = dbuf;
	} else {
		uint64_t size;
		int is_blk, fd = agent_open_target(a, target, sizeof(target), &size, &is_blk);

		if (fd < 0)
			return -1;
		close(fd);
		if (!is_blk) {
			agent_error(a, "bad-target", "%s: fscopy needs a block device (or dir=)", target);
			return -1;
		}
	}
	t.src = tree && strcmp(tree, "synthetic") != 0 ? tree : NULL;
	if (t.src) {
		uint64_t files = 0, dirs = 0, bytes = 0;
		struct stat st;

		if (stat(t.src, &st) != 0 || (!S_ISDIR(st.st_mode) &&
					      !(S_ISREG(st.st_mode) && is_tarball(t.src)))) {
			agent_error(a, "bad-arg", "tree=%s: not a directory or a .tar[.xz|.gz|.bz2|.zst]",
				    t.src);
			return -1;
		}
		if (S_ISREG(st.st_mode)) {
			if (tree_unpack(a, t.src, sbuf, sizeof(sbuf), stage, sizeof(stage)) != 0) {
				if (stage[0])
					(void)rm_tree(a, stage, 0);
				return -1;
			}
			t.src = sbuf;
		}
		tree_stat(t.src, 0, &files, &dirs, &bytes);
		agent_progress(a, 0, "fscopy tree %s: %llu files, %llu dirs, %.1f MiB", t.src,
			       (unsigned long long)files, (unsigned long long)dirs,
			       (double)bytes / 1048576.0);
	}
	if (tree_init(&t, t.src ? 0.00001 : scale, seed) != 0 || !(buf = malloc(256 << 10))) {
		agent_error(a, "nomem", "tree");
		tree_free(&t);
		if (stage[0])
			(void)rm_tree(a, stage, 0);
		return -1;
	}
	if (!t.src)
		agent_progress(a, 0, "fscopy synthetic tree seed=%llu: %u files, %u dirs, %.1f MiB",
			       (unsigned long long)seed, t.nfiles, t.ndirs,
			       (double)t.bytes / 1048576.0);
	for (it = 1; it <= iters && rc == 0; it++) {
		unsigned label = (unsigned)(first + it - 1);

		agent_progress(a, (int)((it - 1) * 100 / iters), "fscopy iter %u (%u/%llu) on %s", label, it,
			       (unsigned long long)iters, dir ? dir : target);
		rc = fscopy_iter(a, &t, dir ? NULL : target, dir, label, (int)count, buf);
	}
	free(buf);
	tree_free(&t);
	if (stage[0] && rm_tree(a, stage, 0) != 0)
		rc = -1;
	return rc;
}
