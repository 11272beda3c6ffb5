/*
 * agent.c - emmclab-agent: command line, command table, output and log,
 * resend, and the small helpers every command uses.
 */
#include "agent.h"
#include "agent_cmds.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AGENT_DEFAULT_LOG "/tmp/emmclab-agent.log"

struct agent_cmd {
	const char *name;
	int (*run)(struct agent *a);
	const char *keys;  /* accepted keys, space separated */
	const char *usage;
};

/* One table (the contract's, harness/common/agent_cmds.h) feeds dispatch,
 * key checking and --help. */
#define AGENT_CMD_ROW_(id, name, keys, usage) { name, cmd_##id, keys, usage },
static const struct agent_cmd agent_cmds[] = { AGENT_COMMANDS(AGENT_CMD_ROW_) };
#undef AGENT_CMD_ROW_

#define NCMDS (sizeof(agent_cmds) / sizeof(agent_cmds[0]))

/* ---- output ---- */

int agent_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

void agent_emit(struct agent *a, const char *kind, const char *const *kv)
{
	char line[PROTO_MAX_LINE];
	int n = proto_format(line, sizeof(line), a->seq + 1, kind, kv);

	if (n < 0) {
		const char *e[] = { "code", "line-too-long", "msg", kind, NULL };

		n = proto_format(line, sizeof(line), a->seq + 1, "error", e);
		if (n < 0)
			return;
	}
	a->seq++;
	/* Unbuffered: a line printed is a line on the wire, even if we die next. */
	(void)agent_write_all(STDOUT_FILENO, line, (size_t)n);
	if (a->log_fd >= 0)
		(void)agent_write_all(a->log_fd, line, (size_t)n);
}

void agent_error(struct agent *a, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	const char *kv[] = { "code", code, "msg", msg, NULL };

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	agent_emit(a, "error", kv);
}

void agent_progress(struct agent *a, int pct, const char *fmt, ...)
{
	char what[256], p[16];
	va_list ap;
	const char *kv[] = { "what", what, "pct", p, NULL };

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(p), "%d", pct < 0 ? 0 : pct > 100 ? 100 : pct);
	agent_emit(a, "progress", kv);
}

void agent_sample(struct agent *a, const char *workload, unsigned iter, const char *metric,
		  double value, const char *unit)
{
	char it[16], v[64];
	const char *kv[] = { "workload", workload, "iter", it, "metric", metric,
			     "value", v, "unit", unit, NULL };

	snprintf(it, sizeof(it), "%u", iter);
	snprintf(v, sizeof(v), "%.9g", isfinite(value) ? value : 0.0);
	agent_emit(a, "sample", kv);
}

void agent_counter(struct agent *a, const char *workload, unsigned iter, const char *name,
		   int64_t value)
{
	char it[16], v[32];
	const char *kv[] = { "workload", workload, "iter", it, "name", name, "value", v, NULL };

	snprintf(it, sizeof(it), "%u", iter);
	snprintf(v, sizeof(v), "%lld", (long long)value);
	agent_emit(a, "counter", kv);
}

/* ---- arguments ---- */

const char *agent_arg(const struct agent *a, const char *key)
{
	size_t kl = strlen(key);
	int i;

	for (i = 0; i < a->nargs; i++)
		if (strncmp(a->args[i], key, kl) == 0 && a->args[i][kl] == '=')
			return a->args[i] + kl + 1;
	return NULL;
}

int agent_arg_u64(struct agent *a, const char *key, uint64_t def, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	const char *s = agent_arg(a, key);
	unsigned long long v;
	char *end;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *s == '+' || errno || *end || v < min || v > max) {
		agent_error(a, "bad-arg", "%s=%s: want an integer in %llu..%llu", key, s,
			    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int agent_arg_double(struct agent *a, const char *key, double def, double min, double max,
		     double *out)
{
	const char *s = agent_arg(a, key);
	char *end;
	double v;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (!*s || errno || *end || !isfinite(v) || v < min || v > max) {
		agent_error(a, "bad-arg", "%s=%s: want a number in %g..%g", key, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- files ---- */

static int agent_vpath(const struct agent *a, char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = snprintf(buf, size, "%s", a->sysroot), m;

	if (n < 0 || (size_t)n >= size)
		return -1;
	m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	if (m < 0 || (size_t)m >= size - (size_t)n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return n + m;
}

int agent_path(const struct agent *a, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = agent_vpath(a, buf, size, fmt, ap);
	va_end(ap);
	return r;
}

int agent_read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;

	if (size == 0)
		return -1;
	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return (int)n;
}

int agent_readf(const struct agent *a, char *buf, size_t size, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int fd, n, r;

	va_start(ap, fmt);
	r = agent_vpath(a, path, sizeof(path), fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = agent_read_all(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r' ||
			 buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return n;
}

int agent_writef(const struct agent *a, const char *value, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int fd, r;

	va_start(ap, fmt);
	r = agent_vpath(a, path, sizeof(path), fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
	if (fd < 0)
		return -1;
	r = agent_write_all(fd, value, strlen(value));
	if (close(fd) != 0)
		r = -1;
	return r;
}

/* ---- block devices ---- */

/* Whole-disk name ("mmcblk0") of a block device number, via /sys/dev/block. */
int agent_whole_disk(const struct agent *a, dev_t dev, char *name, size_t size)
{
	char path[PATH_MAX], real[PATH_MAX], tmp[16];
	char *slash;

	if (agent_path(a, path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev)) < 0)
		return -1;
	if (!realpath(path, real))
		return -1;
	if (agent_readf(a, tmp, sizeof(tmp), "/sys/dev/block/%u:%u/partition", major(dev),
			minor(dev)) >= 0) {
		slash = strrchr(real, '/');
		if (!slash)
			return -1;
		*slash = '\0';
	}
	slash = strrchr(real, '/');
	if (!slash || (size_t)snprintf(name, size, "%s", slash + 1) >= size)
		return -1;
	return 0;
}

static int agent_parse_devno(const char *s, dev_t *out)
{
	unsigned ma, mi;
	char c;

	if (sscanf(s, "%u:%u%c", &ma, &mi, &c) != 2)
		return -1;
	*out = makedev(ma, mi);
	return 0;
}

/* Is dev (a disk or partition) or anything on it mounted, swapped on or held
 * by device-mapper/md?  1 = in use (why filled), 0 = free, -1 = cannot tell. */
int agent_dev_in_use(const struct agent *a, dev_t dev, char *why, size_t size)
{
	char path[PATH_MAX], disk[64], mdisk[64], line[4096];
	int is_whole;
	FILE *f;
	DIR *d;

	if (agent_whole_disk(a, dev, disk, sizeof(disk)) != 0)
		return -1;
	is_whole = agent_readf(a, line, sizeof(line), "/sys/dev/block/%u:%u/partition",
			       major(dev), minor(dev)) < 0;
	if (agent_path(a, path, sizeof(path), "/proc/self/mountinfo") < 0)
		return -1;
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char devs[32], mnt[1024];
		dev_t md;

		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %31s %*s %1023s", devs, mnt) != 2 ||
		    agent_parse_devno(devs, &md) != 0)
			continue;
		if (md == dev || (is_whole && agent_whole_disk(a, md, mdisk, sizeof(mdisk)) == 0 &&
				  strcmp(mdisk, disk) == 0)) {
			snprintf(why, size, "%s:%s is mounted on %s", devs, disk, mnt);
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	/* swap and dm/md holders name the kernel device */
	if (agent_path(a, path, sizeof(path), "/proc/swaps") >= 0 && (f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f)) {
			struct stat st;
			char sw[1024];

			if (sscanf(line, "%1023s", sw) == 1 && stat(sw, &st) == 0 &&
			    S_ISBLK(st.st_mode) &&
			    (st.st_rdev == dev ||
			     (is_whole && agent_whole_disk(a, st.st_rdev, mdisk, sizeof(mdisk)) == 0 &&
			      strcmp(mdisk, disk) == 0))) {
				snprintf(why, size, "%s is used as swap", sw);
				fclose(f);
				return 1;
			}
		}
		fclose(f);
	}
	if (agent_path(a, path, sizeof(path), "/sys/dev/block/%u:%u/holders", major(dev),
		       minor(dev)) >= 0 && (d = opendir(path))) {
		struct dirent *de;

		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(why, size, "%s is held by %s", disk, de->d_name);
			closedir(d);
			return 1;
		}
		closedir(d);
	}
	return 0;
}

/* First writable mount point of disk or one of its partitions (longest-lived
 * place for the workload files when no dir= is given). */
int agent_find_mount(const struct agent *a, const char *disk, char *dir, size_t size)
{
	char path[PATH_MAX], line[4096], mdisk[64];
	FILE *f;

	if (agent_path(a, path, sizeof(path), "/proc/self/mountinfo") < 0)
		return -1;
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char devs[32], mnt[1024], opts[256];
		dev_t md;

		if (sscanf(line, "%*s %*s %31s %*s %1023s %255s", devs, mnt, opts) != 3 ||
		    agent_parse_devno(devs, &md) != 0 || strncmp(opts, "rw", 2) != 0)
			continue;
		if (agent_whole_disk(a, md, mdisk, sizeof(mdisk)) == 0 && strcmp(mdisk, disk) == 0) {
			/* mountinfo escapes blanks as \040; keep it simple: refuse those */
			if (strchr(mnt, '\\'))
				continue;
			fclose(f);
			return (size_t)snprintf(dir, size, "%s", mnt) < size ? 0 : -1;
		}
	}
	fclose(f);
	return -1;
}

/* mmc host ("mmc0") of a disk: /sys/block/mmcblk0/device -> .../mmc0/mmc0:0001 */
int agent_host_of(const struct agent *a, const char *disk, char *host, size_t size)
{
	char path[PATH_MAX], real[PATH_MAX], *base, *colon;

	if (agent_path(a, path, sizeof(path), "/sys/block/%s/device", disk) < 0 ||
	    !realpath(path, real))
		return -1;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	colon = strchr(base, ':');
	if (!colon || strncmp(base, "mmc", 3) != 0)
		return -1;
	*colon = '\0';
	return (size_t)snprintf(host, size, "%s", base) < size ? 0 : -1;
}

/* ---- time, randomness, children ---- */

uint64_t agent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int agent_which(const char *prog, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	const char *p;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 && (size_t)snprintf(buf, size, "%s", prog) < size ? 0 : -1;
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		int n = snprintf(buf, size, "%.*s/%s", (int)l, p, prog);

		if (l && n > 0 && (size_t)n < size && access(buf, X_OK) == 0)
			return 0;
		p += l;
		if (*p == ':')
			p++;
	}
	return -1;
}

int agent_exec(char *const argv[], int out_fd, char *err, size_t errsize)
{
	char path[PATH_MAX];
	int ep[2], status;
	size_t n = 0;
	pid_t pid;

	if (err && errsize)
		err[0] = '\0';
	if (agent_which(argv[0], path, sizeof(path)) != 0) {
		if (err)
			snprintf(err, errsize, "%s: not found", argv[0]);
		return 127;
	}
	if (pipe2(ep, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDIN_FILENO);
		dup2(out_fd >= 0 ? out_fd : null, STDOUT_FILENO);
		dup2(ep[1], STDERR_FILENO);
		execv(path, argv);
		_exit(127);
	}
	close(ep[1]);
	/* Drain stderr whole (a full pipe would block the child); keep the head. */
	for (;;) {
		char chunk[512];
		ssize_t r = read(ep[0], chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (err && n + 1 < errsize) {
			size_t c = (size_t)r < errsize - 1 - n ? (size_t)r : errsize - 1 - n;

			memcpy(err + n, chunk, c);
			n += c;
			err[n] = '\0';
		}
	}
	close(ep[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of latencies in ns, result in us.  Sorts ns. */
int agent_percentile_us(uint64_t *ns, size_t n, double pct, double *out)
{
	size_t rank;

	if (n == 0)
		return -1;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	rank = (size_t)ceil(pct / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	*out = (double)ns[rank - 1] / 1000.0;
	return 0;
}

/* ---- device discovery ---- */

static int agent_is_disk_name(const char *s)
{
	if (strncmp(s, "mmcblk", 6) != 0 || !s[6])
		return 0;
	for (s += 6; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* First /sys/block/mmcblkN (lowest N) whose device/type is "MMC" (not SD). */
static int agent_find_device(struct agent *a)
{
	char path[PATH_MAX], type[16];
	long best = -1;
	struct dirent *de;
	DIR *d;

	if (agent_path(a, path, sizeof(path), "/sys/block") < 0 || !(d = opendir(path)))
		return -1;
	while ((de = readdir(d)) != NULL) {
		long n;

		if (!agent_is_disk_name(de->d_name))
			continue;
		if (agent_readf(a, type, sizeof(type), "/sys/block/%s/device/type", de->d_name) < 0 ||
		    strcmp(type, "MMC") != 0)
			continue;
		n = strtol(de->d_name + 6, NULL, 10);
		if (best < 0 || n < best)
			best = n;
	}
	closedir(d);
	if (best < 0)
		return -1;
	snprintf(a->device, sizeof(a->device), "mmcblk%ld", best);
	return 0;
}

/* ---- resend ---- */

/* Print the logged lines with the given seqs again, byte-identical.
 * Returns 0 when every requested line was found. */
static int agent_resend(struct agent *a)
{
	static char buf[1 << 22]; /* the log of one invocation; capped at 4 MiB */
	static struct proto_msg m;
	int fd, n, i, missing = 0;

	fd = open(a->log_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "emmclab-agent: resend: %s: %s\n", a->log_path, strerror(errno));
		return 1;
	}
	n = agent_read_all(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return 1;
	for (i = 0; i < a->nargs; i++) {
		unsigned long long want;
		char *end, *line = buf;
		int found = 0;

		errno = 0;
		want = strtoull(a->args[i], &end, 10);
		if (errno || *end || !*a->args[i]) {
			fprintf(stderr, "emmclab-agent: resend: bad seq '%s'\n", a->args[i]);
			missing++;
			continue;
		}
		while (line < buf + n) {
			char *nl = memchr(line, '\n', (size_t)(buf + n - line));
			size_t len = nl ? (size_t)(nl - line + 1) : (size_t)(buf + n - line);

			if (proto_parse(line, len, &m) == PROTO_OK && m.seq == want) {
				(void)agent_write_all(STDOUT_FILENO, line, len);
				found = 1;
				break;
			}
			line += len;
		}
		if (!found) {
			fprintf(stderr, "emmclab-agent: resend: seq %llu not in %s\n", want, a->log_path);
			missing++;
		}
	}
	return missing ? 1 : 0;
}

/* ---- main ---- */

static void agent_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: emmclab-agent [--log FILE] [--device mmcblkN] [--sysroot DIR] COMMAND "
		   "[key=value ...]\n"
		   "       emmclab-agent resend SEQ [SEQ...]\n"
		   "Runs one eMMC test command on the DUT and prints emmclab protocol lines "
		   "(proto %d).\n\ncommands:\n", PROTO_VERSION);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-16s %s\n", agent_cmds[i].name, agent_cmds[i].usage);
	fprintf(f, "  %-16s %s\n", "resend", "SEQ...: print logged lines again, byte-identical");
	fprintf(f, "\ndefault log %s; default device: first /sys/block/mmcblkN of type MMC.\n",
		AGENT_DEFAULT_LOG);
}

int main(int argc, char **argv)
{
	static struct agent ag;
	struct agent *a = &ag;
	const struct agent_cmd *cmd = NULL;
	struct utsname un;
	const char *dev_opt = NULL;
	char lines[32];
	int i, rc = 0;
	size_t c;

	a->sysroot = "";
	a->log_path = AGENT_DEFAULT_LOG;
	a->log_fd = -1;
	/* A console that goes away must not kill us half-way through a write test. */
	signal(SIGPIPE, SIG_IGN);

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			agent_usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("emmclab-agent %s (proto %d)\n", EMMCLAB_VERSION, PROTO_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
			a->log_path = argv[++i];
		} else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
			dev_opt = argv[++i];
		} else if (strcmp(argv[i], "--sysroot") == 0 && i + 1 < argc) {
			a->sysroot = argv[++i];
		} else {
			fprintf(stderr, "emmclab-agent: unknown option %s\n", argv[i]);
			agent_usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		agent_usage(stderr);
		return 2;
	}
	a->cmd = argv[i++];
	for (; i < argc; i++) {
		if (a->nargs >= AGENT_MAX_ARGS) {
			fprintf(stderr, "emmclab-agent: too many arguments\n");
			return 2;
		}
		a->args[a->nargs++] = argv[i];
	}
	if (strcmp(a->cmd, "resend") == 0)
		return agent_resend(a);

	if (dev_opt) {
		if (strncmp(dev_opt, "/dev/", 5) == 0)
			dev_opt += 5;
		snprintf(a->device, sizeof(a->device), "%s", dev_opt);
	} else {
		(void)agent_find_device(a);
	}
	for (c = 0; c < NCMDS; c++)
		if (strcmp(agent_cmds[c].name, a->cmd) == 0)
			cmd = &agent_cmds[c];

	a->log_fd = open(a->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (uname(&un) != 0)
		snprintf(un.release, sizeof(un.release), "unknown");
	{
		const char *kv[] = { "version", EMMCLAB_VERSION, "proto", "1", "cmd", a->cmd,
				     "kernel", un.release, "device", a->device[0] ? a->device : "none",
				     NULL };

		agent_emit(a, "hello", kv);
	}
	if (a->log_fd < 0)
		agent_error(a, "no-log", "%s: %s (resend will not work)", a->log_path, strerror(errno));

	if (!cmd) {
		agent_error(a, "bad-command", "unknown command '%s' (see --help)", a->cmd);
		rc = -1;
	} else {
		for (i = 0; i < a->nargs; i++) {
			if (!agent_cmd_key_allowed(cmd->keys, a->args[i])) {
				agent_error(a, "bad-arg", "%s: unknown argument '%s' (keys: %s)",
					    cmd->name, a->args[i], cmd->keys);
				rc = -1;
			}
		}
		if (rc == 0)
			rc = cmd->run(a);
	}
	agent_count_unmount(a); /* before done: an error line still belongs to the command */
	snprintf(lines, sizeof(lines), "%llu", (unsigned long long)a->seq);
	{
		const char *kv[] = { "status", rc == 0 ? "ok" : "error", "lines", lines, NULL };

		agent_emit(a, "done", kv);
	}
	if (a->log_fd >= 0) {
		fsync(a->log_fd);
		close(a->log_fd);
	}
	return rc == 0 ? 0 : 1;
}
