/*
 * deploy/ums.c - write a disk image to the board's eMMC through U-Boot's USB
 * mass storage gadget (deploy method "ums").
 *
 * At the U-Boot prompt it types `ums 0 mmc 0` (uboot_cmd), waits for the
 * host block device to appear (device: an explicit path such as
 * /dev/disk/by-id/usb-Linux_UMS_disk_0_<serial>-0:0, or serial: matched
 * against /dev/disk/by-id/usb-*_<serial>-0:*), writes the image, syncs,
 * drops the page cache and reads it back for comparison, then leaves UMS
 * with Ctrl-C (uboot_sync) so the board boots from the prompt.
 *
 * The copy runs in a forked child (block-device writes and fsync can take
 * minutes and must not stall the loop); the child reports one line on a
 * pipe ("OK <sha256 of the image>" or "ERR <message>") and is reaped by the
 * loop.  A timeout or cancel kills it.
 */
#include "deploy.h"
#include "uboot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct ums_cfg {
	char *image;
	char *device;
	char *serial;
	char *uboot_cmd;
	uint64_t wait_ms;
	bool verify;
};

static const struct opt ums_opts[] = {
	{.key = "image", .type = OPT_STR, .offset = offsetof(struct ums_cfg, image),
	 .flags = OPT_REQUIRED, .help = "raw disk image to write to the eMMC"},
	{.key = "device", .type = OPT_STR, .offset = offsetof(struct ums_cfg, device),
	 .help = "host block device of the gadget (a /dev/disk/by-id path)"},
	{.key = "serial", .type = OPT_STR, .offset = offsetof(struct ums_cfg, serial),
	 .help = "USB serial of the gadget: finds /dev/disk/by-id/usb-*_<serial>-0:*"},
	{.key = "uboot_cmd", .type = OPT_STR, .offset = offsetof(struct ums_cfg, uboot_cmd),
	 .def = "ums 0 mmc 0", .help = "typed at the U-Boot prompt (\"\": the device is already exposed)"},
	{.key = "wait", .type = OPT_DURATION, .offset = offsetof(struct ums_cfg, wait_ms), .def = "30s",
	 .min = 0, .max = 600000, .help = "how long to wait for the block device"},
	{.key = "verify", .type = OPT_BOOL, .offset = offsetof(struct ums_cfg, verify), .def = "true",
	 .help = "read the image back after writing and compare"},
	{0},
};

#define POLL_MS 250
#define CHUNK (1024 * 1024)

struct ums {
	struct deploy *d;
	struct ums_cfg *c;
	struct uboot *ub;
	bool ub_busy;
	struct loop_timer timer;
	uint64_t wait_until;
	char dev[512];
	pid_t pid;
	int rfd;
	char line[600];
	size_t nline;
	bool child_exited, finished;
	int phase; /* 0 wait device, 1 copying, 2 leaving UMS, 3 done */
	int rc;
	char msg[700];
};

static void ums_kill(struct ums *m)
{
	if (m->rfd >= 0) {
		loop_fd_del(m->d->loop, m->rfd);
		close(m->rfd);
		m->rfd = -1;
	}
	if (m->pid > 0) {
		kill(m->pid, SIGKILL); /* still reaped by the loop (it reaps unwatched children) */
		loop_child_unwatch(m->d->loop, m->pid);
		m->pid = 0;
	}
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg);

static void ums_end(struct ums *m, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ums_end(struct ums *m, int rc, const char *fmt, ...)
{
	if (m->finished)
		return;
	m->finished = true;
	char b[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	snprintf(m->msg, sizeof m->msg, "ums on %s: %s", m->d->board, b);
	m->rc = rc;
	ums_kill(m);
	if (m->ub && m->ub_busy)
		uboot_cancel(m->ub);
	m->ub_busy = false;
	m->phase = 3;
	loop_timer_start(m->d->loop, &m->timer, 0);
}

/* The block device: explicit path, or by-id entry carrying the serial. */
static bool find_device(struct ums *m)
{
	if (m->c->device && *m->c->device) {
		if (access(m->c->device, F_OK) == 0) {
			lab_strlcpy(m->dev, m->c->device, sizeof m->dev);
			return true;
		}
		return false;
	}
	DIR *dir = opendir("/dev/disk/by-id");
	if (!dir)
		return false;
	char pat[300];
	snprintf(pat, sizeof pat, "usb-*_%s-0:*", m->c->serial);
	struct dirent *de;
	bool found = false;
	while ((de = readdir(dir)) != NULL) {
		if (fnmatch(pat, de->d_name, 0) == 0 && !strstr(de->d_name, "-part")) {
			snprintf(m->dev, sizeof m->dev, "/dev/disk/by-id/%s", de->d_name);
			found = true;
			break;
		}
	}
	closedir(dir);
	return found;
}

static int child_report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int child_report(int fd, const char *fmt, ...)
{
	char b[600];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof b - 2)
		n = (int)sizeof b - 2;
	b[n++] = '\n';
	return write(fd, b, (size_t)n) == n ? 0 : 1;
}

/* In the child: copy, sync, drop the cache, compare. */
static int child_copy(const char *image, const char *dev, bool verify, int out)
{
	char sha[65];
	struct lab_err e = {0};
	if (lab_sha256_file(image, sha, &e))
		return child_report(out, "ERR %s", e.msg);
	int in = open(image, O_RDONLY | O_CLOEXEC);
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (in < 0 || fd < 0)
		return child_report(out, "ERR cannot open %s: %s", in < 0 ? image : dev, strerror(errno));
	struct stat si, sd;
	uint64_t devsize = 0;
	if (fstat(in, &si) || fstat(fd, &sd))
		return child_report(out, "ERR stat: %s", strerror(errno));
	if (S_ISBLK(sd.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &devsize))
			return child_report(out, "ERR BLKGETSIZE64 %s: %s", dev, strerror(errno));
	} else {
		devsize = (uint64_t)sd.st_size;
	}
	if ((uint64_t)si.st_size > devsize)
		return child_report(out, "ERR image %s (%lld bytes) is larger than %s (%llu bytes)", image,
				    (long long)si.st_size, dev, (unsigned long long)devsize);
	char *a = xmalloc(CHUNK), *b = xmalloc(CHUNK);
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pread(in, a, CHUNK, (off_t)off);
		if (n < 0)
			return child_report(out, "ERR reading %s: %s", image, strerror(errno));
		if (n == 0)
			break;
		if (pwrite(fd, a, (size_t)n, (off_t)off) != n)
			return child_report(out, "ERR writing %s at %llu: %s", dev, (unsigned long long)off,
					    strerror(errno));
		off += (uint64_t)n;
	}
	if (fsync(fd))
		return child_report(out, "ERR fsync %s: %s", dev, strerror(errno));
	if (verify) {
		/* read what the device holds, not what the page cache remembers */
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		for (uint64_t p = 0; p < off;) {
			size_t want = off - p < CHUNK ? (size_t)(off - p) : CHUNK;
			if (pread(in, a, want, (off_t)p) != (ssize_t)want ||
			    pread(fd, b, want, (off_t)p) != (ssize_t)want)
				return child_report(out, "ERR read-back of %s failed: %s", dev, strerror(errno));
			if (memcmp(a, b, want) != 0)
				return child_report(out, "ERR read-back differs from the image near byte %llu",
						    (unsigned long long)p);
			p += want;
		}
	}
	return child_report(out, "OK %s %llu", sha, (unsigned long long)off);
}

static void on_synced(struct uboot *u, int rc, const char *o, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(o);
	LAB_UNUSED(len);
	struct ums *m = arg;
	m->ub_busy = false;
	if (rc) {
		ums_end(m, rc, "image written, but U-Boot did not come back after Ctrl-C: %s",
			uboot_errmsg(m->ub));
		return;
	}
	ums_end(m, LAB_OK, "%s", m->line);
}

static void copy_result(struct ums *m)
{
	if (strncmp(m->line, "OK ", 3) != 0) {
		ums_end(m, LAB_EINFRA, "%s", strncmp(m->line, "ERR ", 4) == 0 ? m->line + 4 :
			"the copy process died without a word");
		return;
	}
	char res[600];
	snprintf(res, sizeof res, "wrote %s to %s (sha256 %.*s..., %s)", m->c->image, m->dev, 16,
		 m->line + 3, m->c->verify ? "read back and compared" : "not verified");
	lab_strlcpy(m->line, res, sizeof m->line);
	if (m->ub && m->ub_busy) {
		/* leave UMS: abandon the `ums` command and resynchronise with Ctrl-C */
		uboot_cancel(m->ub);
		m->phase = 2;
		if (uboot_sync(m->ub, 10000, on_synced, m) == LAB_OK)
			return;
		m->ub_busy = false;
		ums_end(m, LAB_EINFRA, "image written, but leaving UMS failed");
		return;
	}
	ums_end(m, LAB_OK, "%s", res);
}

static void on_pipe(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(ev);
	struct ums *m = arg;
	ssize_t n = read(fd, m->line + m->nline, sizeof m->line - 1 - m->nline);
	if (n > 0) {
		m->nline += (size_t)n;
		m->line[m->nline] = '\0';
		if (!strchr(m->line, '\n') && m->nline < sizeof m->line - 1)
			return;
	}
	char *nl = strchr(m->line, '\n');
	if (nl)
		*nl = '\0';
	loop_fd_del(m->d->loop, m->rfd);
	close(m->rfd);
	m->rfd = -1;
	copy_result(m);
}

static void on_child(struct loop *l, pid_t pid, int st, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(pid);
	LAB_UNUSED(st);
	struct ums *m = arg;
	m->pid = 0;
	m->child_exited = true;
}

static void start_copy(struct ums *m)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		ums_end(m, LAB_EINFRA, "pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		ums_end(m, LAB_EINFRA, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		close(p[0]);
		/* fork without exec: close-on-exec never applies, so drop the parent's fds
		 * (consoles, sockets, other boards' pipes, the loop's) for the copy's minutes */
		if (p[1] != 3 && dup2(p[1], 3) < 0)
			_exit(1);
		close_range(4, ~0U, 0);
		_exit(child_copy(m->c->image, m->dev, m->c->verify, 3));
	}
	close(p[1]);
	m->pid = pid;
	m->rfd = p[0];
	m->phase = 1;
	loop_child_watch(m->d->loop, pid, on_child, m);
	if (loop_fd_add(m->d->loop, m->rfd, LOOP_READ, on_pipe, m))
		ums_end(m, LAB_EINFRA, "cannot watch the copy process");
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct ums *m = arg;
	if (m->phase == 3) {
		deploy_complete(m->d, m->rc, "%s", m->msg);
		return;
	}
	if (find_device(m)) {
		start_copy(m);
		return;
	}
	if (loop_now_ms(m->d->loop) >= m->wait_until) {
		ums_end(m, LAB_ETIMEOUT, "no block device %s appeared within %llu ms",
			m->c->device && *m->c->device ? m->c->device : m->c->serial,
			(unsigned long long)m->c->wait_ms);
		return;
	}
	loop_timer_start(m->d->loop, &m->timer, POLL_MS);
}

static void on_uboot(struct uboot *u, int rc, const char *o, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(o);
	LAB_UNUSED(len);
	struct ums *m = arg;
	m->ub_busy = false;
	ums_end(m, rc ? rc : LAB_EINFRA, "U-Boot's '%s' ended before the image was written: %s",
		m->c->uboot_cmd, rc ? uboot_errmsg(m->ub) : "no UMS support?");
}

static int ums_init(struct deploy *d, struct lab_err *e)
{
	struct ums_cfg *c = d->cfg;
	if ((!c->device || !*c->device) && (!c->serial || !*c->serial))
		return LAB_ERR(e, LAB_EUSAGE, "ums deploy of %s: set device or serial", d->board);
	struct ums *m = xcalloc(1, sizeof *m);
	m->d = d;
	m->c = c;
	m->rfd = -1;
	loop_timer_init(&m->timer, on_timer, m);
	d->priv = m;
	return LAB_OK;
}

static void ums_reset(struct ums *m)
{
	loop_timer_stop(m->d->loop, &m->timer);
	ums_kill(m);
	if (m->ub && m->ub_busy)
		uboot_cancel(m->ub);
	m->ub_busy = false;
	m->ub = NULL;
}

static void ums_fini(struct deploy *d)
{
	struct ums *m = d->priv;
	if (!m)
		return;
	ums_reset(m);
	free(m);
}

static void ums_cancel(struct deploy *d)
{
	struct ums *m = d->priv;
	m->finished = true;
	ums_reset(m);
}

static int ums_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	struct ums *m = d->priv;
	ums_reset(m);
	m->finished = false;
	m->phase = 0;
	m->nline = 0;
	m->line[0] = '\0';
	m->wait_until = loop_now_ms(d->loop) + m->c->wait_ms;
	if (ctx->uboot && m->c->uboot_cmd && *m->c->uboot_cmd) {
		m->ub = ctx->uboot;
		if (uboot_run(m->ub, m->c->uboot_cmd, d->timeout_ms, on_uboot, m) != LAB_OK)
			return LAB_EINFRA;
		m->ub_busy = true;
		loop_timer_start(d->loop, &m->timer, POLL_MS);
		return LAB_OK;
	}
	loop_timer_start(d->loop, &m->timer, 0);
	return LAB_OK;
}

const struct deploy_driver deploy_ums = {
	.name = "ums",
	.version = DEPLOY_OPS_VERSION,
	.help = "write a disk image through U-Boot's `ums` USB mass storage, verified by read-back",
	.options = ums_opts,
	.cfg_size = sizeof(struct ums_cfg),
	.flags = DEPLOY_AT_UBOOT,
	.init = ums_init,
	.fini = ums_fini,
	.run = ums_run,
	.cancel = ums_cancel,
};
