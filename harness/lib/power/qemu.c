/*
 * power/qemu.c - power of a virtual board (boards/virt): "on" starts QEMU,
 * "off" stops it (SIGTERM, SIGKILL after 3 s) and reaps it, state is
 * whether our QEMU process still runs.  A guest that powers itself off
 * (poweroff -f; QEMU runs with -no-reboot) simply shows up as off.
 *
 * The board's serial port is a TCP server of QEMU on 127.0.0.1:port that
 * waits for its client before the guest starts, so a `tcp` console on that
 * port sees every byte from the first one.  What to boot comes from the
 * boot file the `qemu` deploy method writes into dir (kernel, initrd,
 * append: the job's kernel and mode command line); without one, from this
 * driver's kernel/initrd keys.  The driver's append (the board's own
 * arguments, e.g. vemmc.profile=) is added to every command line.  QEMU's own messages go to
 * dir/qemu.log, which an error quotes.
 *
 * Without `media` the card lives in guest RAM: every power-on starts with a
 * blank virtual eMMC.  With `media: FILE` the card's durable contents are
 * FILE (created sparse at media_size when missing, never truncated or
 * deleted by us): QEMU maps it as a shared file-backed memory backend behind
 * an ivshmem-plain device, which vemmc uses as its media.  What the card
 * made durable survives "off" (QEMU killed); its volatile cache, in guest
 * RAM, does not - a real power cut (docs/kernel.md).
 */
#include "power.h"
#include "qemu_boot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QEMU_KILL_GRACE_MS 3000
#define QEMU_START_CHECK_MS 300 /* QEMU refusing its arguments exits within this */

struct qemu_cfg {
	char *qemu;
	int64_t memory_mib;
	int64_t smp;
	int64_t port;
	char *dir;
	char *kernel, *initrd, *append;
	char *media;
	uint64_t media_size;
	struct opt_strlist extra;
};

static const struct opt qemu_opts[] = {
	{.key = "qemu", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, qemu),
	 .def = "qemu-system-x86_64", .help = "QEMU system emulator binary"},
	{.key = "memory", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, memory_mib),
	 .def = "512", .min = 64, .max = 65536,
	 .help = "guest RAM in MiB (holds the virtual eMMC twice, once with media)"},
	{.key = "smp", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, smp), .def = "1",
	 .min = 1, .max = 64, .help = "guest CPUs"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, port), .min = 1,
	 .max = 65535, .flags = OPT_REQUIRED,
	 .help = "TCP port on 127.0.0.1 where QEMU serves the serial console (console: tcp)"},
	{.key = "dir", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, dir),
	 .help = "state directory shared with the qemu deploy method (default $TMPDIR/emmclab-qemu-BOARD)"},
	{.key = "kernel", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, kernel),
	 .def = "/vmlinuz", .help = "kernel to boot when no deploy wrote a boot file"},
	{.key = "initrd", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, initrd),
	 .help = "initramfs to boot when no deploy wrote a boot file"},
	{.key = "append", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, append), .def = "",
	 .help = "added to every kernel command line (e.g. this board's vemmc.profile=)"},
	{.key = "media", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, media),
	 .help = "host file holding the card's durable contents across power cycles (ivshmem-plain; "
		 "relative to dir; created sparse when missing); unset: the card is guest RAM, blank at each boot"},
	{.key = "media_size", .type = OPT_SIZE, .offset = offsetof(struct qemu_cfg, media_size),
	 .def = "64MiB", .min = 1048576, .max = 4294967296.0,
	 .help = "size of the media file and of the ivshmem BAR: a power of two, at least the vemmc capacity"},
	{.key = "extra", .type = OPT_STRLIST, .offset = offsetof(struct qemu_cfg, extra),
	 .help = "more QEMU arguments"},
	{0},
};

struct pqemu {
	struct power *p;
	char *dir;
	pid_t pid;               /* running QEMU, or -1 */
	bool exited;             /* ... which exited before the start check */
	int wstatus;
	enum power_op op;        /* operation in progress (POWER_STATE when idle) */
	bool busy;
	struct loop_timer timer; /* start check, kill grace, deferred completion */
	int later_rc, later_state;
	char later_msg[700];
};

static void on_timer(struct loop *l, struct loop_timer *t, void *arg);

static int qemu_init(struct power *p, struct lab_err *e)
{
	struct qemu_cfg *c = p->cfg;
	struct pqemu *q = xcalloc(1, sizeof *q);
	q->p = p;
	q->pid = -1;
	loop_timer_init(&q->timer, on_timer, q);
	if (c->media_size & (c->media_size - 1)) {
		free(q);
		/* a PCI BAR, which the ivshmem memory becomes, is a power of two */
		return lab_err_set(e, LAB_EUSAGE, "board %s: qemu power: media_size %llu is not a power of two",
				   p->board, (unsigned long long)c->media_size);
	}
	if (c->media && (!c->media[0] || strchr(c->media, '\n'))) {
		free(q);
		return lab_err_set(e, LAB_EUSAGE, "board %s: qemu power: bad media path", p->board);
	}
	q->dir = qemu_boot_dir(c->dir, p->board);
	if (lab_mkdir_p(q->dir, 0755) != 0) {
		int err = errno;
		free(q->dir);
		free(q);
		return lab_err_set(e, LAB_EINFRA, "board %s: qemu power: cannot create %s: %s",
				   p->board, c->dir ? c->dir : "the state directory", strerror(err));
	}
	p->priv = q;
	p->device = xasprintf("QEMU of %s (serial 127.0.0.1:%lld)", p->board, (long long)c->port);
	return LAB_OK;
}

/* Complete from the loop (never inside start()). */
static void complete_later(struct pqemu *q, int rc, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void complete_later(struct pqemu *q, int rc, int state, const char *fmt, ...)
{
	q->later_rc = rc;
	q->later_state = state;
	q->later_msg[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(q->later_msg, sizeof q->later_msg, fmt, ap);
		va_end(ap);
	}
	q->op = POWER_STATE;
	q->busy = false;
	loop_timer_start(q->p->loop, &q->timer, 0);
}

static void finish(struct pqemu *q, int rc, int state, const char *msg)
{
	q->busy = false;
	loop_timer_stop(q->p->loop, &q->timer);
	power_complete(q->p, rc, state, "%s", msg ? msg : "");
}

/* Last line of dir/qemu.log, for messages. */
static void log_tail(struct pqemu *q, char *out, size_t n)
{
	char path[1024], *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	out[0] = '\0';
	snprintf(path, sizeof path, "%s/qemu.log", q->dir);
	if (lab_read_file(path, 64 * 1024, &data, &len, &e) != LAB_OK)
		return;
	while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		data[--len] = '\0';
	const char *nl = strrchr(data, '\n');
	lab_strlcpy(out, nl ? nl + 1 : data, n);
	free(data);
}

static void on_exit_child(struct loop *l, pid_t pid, int wstatus, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(pid);
	struct pqemu *q = arg;
	q->pid = -1;
	q->wstatus = wstatus;
	if (!q->busy)
		return; /* exited on its own (guest poweroff): state reads off */
	if (q->op == POWER_OFF) {
		finish(q, LAB_OK, POWER_IS_OFF, NULL);
	} else if (q->op == POWER_ON) {
		char tail[300], msg[400];
		log_tail(q, tail, sizeof tail);
		snprintf(msg, sizeof msg, "%s: QEMU exited at start (status %d): %s", q->p->device,
			 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus),
			 tail[0] ? tail : "see qemu.log");
		finish(q, LAB_EINFRA, POWER_IS_OFF, msg);
	}
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct pqemu *q = arg;
	if (q->busy && q->op == POWER_ON) {
		/* survived the start check: it is waiting for the console or booting */
		finish(q, LAB_OK, POWER_IS_ON, NULL);
		return;
	}
	if (q->busy && q->op == POWER_OFF) {
		if (q->pid > 0) {
			kill(q->pid, SIGKILL); /* did not stop on SIGTERM: the reaper completes */
			return;
		}
		finish(q, LAB_OK, POWER_IS_OFF, NULL);
		return;
	}
	/* deferred completion */
	power_complete(q->p, q->later_rc, q->later_state, "%s", q->later_msg);
}

static char *boot_value(const struct qemu_boot *b, const char *own, const char *which)
{
	const char *v = b ? (strcmp(which, "kernel") == 0 ? b->kernel :
			     strcmp(which, "initrd") == 0 ? b->initrd : b->append) : NULL;
	if (b && v)
		return xstrdup(v);
	return own ? xstrdup(own) : NULL;
}

/* s with every comma doubled (QEMU's option syntax). Malloc'd. */
static char *qemu_opt_escape(const char *s)
{
	size_t n = strlen(s), commas = 0;
	for (size_t i = 0; i < n; i++)
		commas += s[i] == ',';
	char *out = xmalloc(n + commas + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		*o++ = s[i];
		if (s[i] == ',')
			*o++ = ',';
	}
	*o = '\0';
	return out;
}

/*
 * The media file: created sparse when missing, grown (sparse) when shorter
 * than media_size (QEMU refuses a backing file smaller than the backend),
 * otherwise left as it is - it is the card.  Sets *path (malloc'd).
 */
static int media_prepare(struct pqemu *q, char **path, char *err, size_t errn)
{
	struct qemu_cfg *c = q->p->cfg;
	*path = c->media[0] == '/' ? xstrdup(c->media) : xasprintf("%s/%s", q->dir, c->media);
	int fd = open(*path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errn, "%s: media %s: %s", q->p->device, *path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errn, "%s: media %s is not a regular file", q->p->device, *path);
		goto fail;
	}
	if ((uint64_t)st.st_size < c->media_size && ftruncate(fd, (off_t)c->media_size) != 0) {
		snprintf(err, errn, "%s: media %s: cannot size it: %s", q->p->device, *path,
			 strerror(errno));
		goto fail;
	}
	close(fd);
	return LAB_OK;
fail:
	if (fd >= 0)
		close(fd);
	free(*path);
	*path = NULL;
	return LAB_EINFRA;
}

static int start_qemu(struct pqemu *q, char *err, size_t errn)
{
	struct qemu_cfg *c = q->p->cfg;
	struct qemu_boot boot = {0};
	struct lab_err e = {0};
	bool have_boot = false;
	int rc = qemu_boot_read(q->dir, &boot, &have_boot, &e);
	if (rc != LAB_OK) {
		lab_strlcpy(err, e.msg, errn);
		return rc;
	}
	char *kernel = boot_value(have_boot ? &boot : NULL, c->kernel, "kernel");
	char *initrd = boot_value(have_boot ? &boot : NULL, c->initrd, "initrd");
	char *append = boot_value(have_boot ? &boot : NULL, NULL, "append");
	qemu_boot_free(&boot);
	if (!kernel || !kernel[0] || !initrd || !initrd[0]) {
		snprintf(err, errn, "%s: no kernel or initrd (deploy qemu, or set kernel/initrd)",
			 q->p->device);
		free(kernel);
		free(initrd);
		free(append);
		return LAB_EUSAGE;
	}
	char *media = NULL, *backend = NULL;
	if (c->media) {
		rc = media_prepare(q, &media, err, errn);
		if (rc != LAB_OK) {
			free(kernel);
			free(initrd);
			free(append);
			return rc;
		}
		char *esc = qemu_opt_escape(media);
		backend = xasprintf("memory-backend-file,id=vemmc,share=on,mem-path=%s,size=%llu", esc,
				    (unsigned long long)c->media_size);
		free(esc);
	}
	char mem[32], smp[32], chardev[128], cmdline[4096];
	snprintf(mem, sizeof mem, "%lld", (long long)c->memory_mib);
	snprintf(smp, sizeof smp, "%lld", (long long)c->smp);
	snprintf(chardev, sizeof chardev, "socket,id=con,host=127.0.0.1,port=%lld,server=on,wait=on",
		 (long long)c->port);
	/* the serial console is ours; the rest of the command line is the job's */
	snprintf(cmdline, sizeof cmdline, "console=ttyS0,115200 panic=-1%s%s%s%s",
		 append && append[0] ? " " : "", append ? append : "", c->append[0] ? " " : "",
		 c->append);
	const char *fixed[] = {c->qemu, "-machine", "pc", "-accel", "tcg", "-m", mem, "-smp", smp,
			       "-nodefaults", "-display", "none", "-no-reboot", "-chardev", chardev,
			       "-serial", "chardev:con", "-kernel", kernel, "-initrd", initrd,
			       "-append", cmdline};
	size_t nf = LAB_ARRAY_SIZE(fixed), na = 0;
	char **argv = xcalloc(nf + 4 + c->extra.n + 1, sizeof *argv);
	for (size_t i = 0; i < nf; i++)
		argv[na++] = (char *)fixed[i];
	if (backend) {
		argv[na++] = "-object";
		argv[na++] = backend;
		argv[na++] = "-device";
		argv[na++] = "ivshmem-plain,memdev=vemmc";
	}
	for (size_t i = 0; i < c->extra.n; i++)
		argv[na++] = c->extra.v[i];

	char logpath[1024];
	snprintf(logpath, sizeof logpath, "%s/qemu.log", q->dir);
	int logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid_t pid = -1;
	int spawn_err = 0;
	if (logfd >= 0 && nullfd >= 0) {
		pid = lab_spawn(argv, NULL, nullfd, logfd, logfd);
		spawn_err = errno;
	} else {
		spawn_err = errno;
	}
	if (logfd >= 0)
		close(logfd);
	if (nullfd >= 0)
		close(nullfd);
	free(argv);
	free(kernel);
	free(initrd);
	free(append);
	free(media);
	free(backend);
	if (pid < 0) {
		snprintf(err, errn, "%s: cannot start %s: %s", q->p->device, c->qemu,
			 strerror(spawn_err));
		return LAB_EINFRA;
	}
	q->pid = pid;
	loop_child_watch(q->p->loop, pid, on_exit_child, q);
	return LAB_OK;
}

static int qemu_start(struct power *p, enum power_op op)
{
	struct pqemu *q = p->priv;
	char err[600];
	q->op = op;
	q->busy = true;
	switch (op) {
	case POWER_STATE:
		complete_later(q, LAB_OK, q->pid > 0 ? POWER_IS_ON : POWER_IS_OFF, NULL);
		return LAB_OK;
	case POWER_ON:
		if (q->pid > 0) {
			complete_later(q, LAB_OK, POWER_IS_ON, NULL);
			return LAB_OK;
		}
		int rc = start_qemu(q, err, sizeof err);
		if (rc != LAB_OK) {
			complete_later(q, rc, POWER_IS_OFF, "%s", err);
			return LAB_OK;
		}
		q->op = POWER_ON;
		q->busy = true;
		loop_timer_start(p->loop, &q->timer, QEMU_START_CHECK_MS);
		return LAB_OK;
	case POWER_OFF:
		if (q->pid <= 0) {
			complete_later(q, LAB_OK, POWER_IS_OFF, NULL);
			return LAB_OK;
		}
		kill(q->pid, SIGTERM);
		loop_timer_start(p->loop, &q->timer, QEMU_KILL_GRACE_MS);
		return LAB_OK;
	case POWER_CYCLE:
		break;
	}
	q->busy = false;
	return LAB_EUSAGE; /* cycle is emulated by power.c */
}

static void qemu_cancel(struct power *p)
{
	struct pqemu *q = p->priv;
	/* an "off" that timed out before the SIGKILL grace: do not leave QEMU running
	 * (still watched: on_exit_child reaps it) */
	if (q->busy && q->op == POWER_OFF && q->pid > 0)
		kill(q->pid, SIGKILL);
	q->busy = false;
	loop_timer_stop(p->loop, &q->timer);
}

static void qemu_fini(struct power *p)
{
	struct pqemu *q = p->priv;
	if (!q)
		return;
	loop_timer_stop(p->loop, &q->timer);
	if (q->pid > 0) {
		/* the controller is done with the board: do not leave QEMU behind */
		loop_child_unwatch(p->loop, q->pid);
		kill(q->pid, SIGKILL);
	}
	free(q->dir);
	free(q);
	p->priv = NULL;
}

const struct power_driver power_qemu = {
	.name = "qemu",
	.version = POWER_OPS_VERSION,
	.help = "virtual board: on starts QEMU (serial on a local TCP port), off stops it",
	.options = qemu_opts,
	.cfg_size = sizeof(struct qemu_cfg),
	.init = qemu_init,
	.fini = qemu_fini,
	.start = qemu_start,
	.cancel = qemu_cancel,
	.can_read_state = true,
};
