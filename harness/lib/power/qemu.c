/*
 * power/qemu.c - power of a QEMU board (boards/virt, or any QEMU machine):
 * "on" starts QEMU, "off" stops it (SIGTERM, SIGKILL after 3 s), state is
 * whether that QEMU still runs.
 *
 * Power outlives the process, as a real plug does: the running QEMU is
 * recorded in DIR/qemu.pid ("PID STARTTIME", the start time from
 * /proc/PID/stat so a recycled pid is not taken for it), and every emmclab
 * process on the host reads that file, checks that the process is alive,
 * and can stop it.  Freeing the driver leaves a QEMU that is on running
 * (`emmclab run` and `board boot` power their boards off when done); only a
 * start still in flight is killed.  A guest that powers itself off makes
 * QEMU exit (poweroff, or any reset with -no-reboot): it reads as off at once.
 *
 * The command line: [-machine M] [-accel A] -m -smp, then `defaults`
 * (-nodefaults -display none -no-reboot unless overridden), the serial
 * console (a TCP server of QEMU on 127.0.0.1:port that waits for its client
 * before the guest starts, with nodelay=on, so a `tcp` console sees every
 * byte from the first one; power-on completes once it listens), -bios when set, the kernel when there is one,
 * the media, then `extra`.  Set `serial: false` to give the serial port
 * yourself in `extra`.
 *
 * What to boot: the boot file the `qemu` deploy method writes into dir
 * (kernel, initrd, append: the job's kernel and mode command line) when a
 * deploy wrote it after this driver was created, or when this driver has no
 * `kernel:`; else this driver's kernel/initrd; else no kernel at all - the
 * firmware (QEMU's, or `bios:`, e.g. Debian's U-Boot ROM) boots, and U-Boot
 * may load the kernel itself.  A boot file left by an earlier process never
 * wins over `kernel:`.  With a kernel, the command line is kernel_console,
 * then the boot file's append, then the driver's append (the board's own
 * arguments, e.g. vemmc.profile=).  QEMU's own messages go to dir/qemu.log,
 * which an error quotes.
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
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QEMU_KILL_GRACE_MS 3000
#define QEMU_START_CHECK_MS 300 /* QEMU refusing its arguments exits within this */
#define QEMU_POLL_MS 20         /* liveness polls of a QEMU started by another process */
#define QEMU_LISTEN_POLL_MS 5   /* ... and of its serial server coming up at power-on */

struct qemu_cfg {
	char *qemu;
	char *machine, *accel;
	int64_t memory_mib;
	int64_t smp;
	int64_t port;
	char *socket;
	char *dir;
	char *bios;
	char *kernel, *initrd, *kernel_console, *append;
	char *media;
	uint64_t media_size;
	struct opt_strlist defaults;
	bool serial;
	struct opt_strlist extra;
};

static const struct opt qemu_opts[] = {
	{.key = "qemu", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, qemu),
	 .def = "qemu-system-x86_64", .help = "QEMU system emulator binary"},
	{.key = "machine", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, machine), .def = "pc",
	 .help = "-machine value (empty: QEMU's default machine, or give it in extra)"},
	{.key = "accel", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, accel), .def = "tcg",
	 .help = "-accel value, e.g. kvm (empty: none passed)"},
	{.key = "memory", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, memory_mib),
	 .def = "512", .min = 64, .max = 65536,
	 .help = "guest RAM in MiB (holds the virtual eMMC twice, once with media)"},
	{.key = "smp", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, smp), .def = "1",
	 .min = 1, .max = 64, .help = "guest CPUs"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct qemu_cfg, port), .min = 0,
	 .max = 65535, .def = "0",
	 .help = "TCP port on 127.0.0.1 where QEMU serves the serial console (console: tcp with this "
		 "port); required unless socket is set"},
	{.key = "socket", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, socket),
	 .help = "serve the serial console on this Unix socket instead (relative to dir; console: "
		 "tcp with path:): no TCP, the cheapest console on the controller's side"},
	{.key = "dir", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, dir),
	 .help = "state directory shared with the qemu deploy method and every emmclab process "
		 "(boot file, qemu.pid, qemu.log; default $TMPDIR/emmclab-qemu-BOARD)"},
	{.key = "bios", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, bios),
	 .help = "firmware image (-bios), e.g. /usr/lib/u-boot/qemu-x86/u-boot.rom; unset: QEMU's own"},
	{.key = "kernel", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, kernel),
	 .help = "kernel QEMU loads (-kernel) when no deploy wrote a boot file; unset: none, the "
		 "firmware boots (e.g. U-Boot loads the kernel)"},
	{.key = "initrd", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, initrd),
	 .help = "initramfs that goes with kernel (-initrd)"},
	{.key = "kernel_console", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, kernel_console),
	 .def = "console=ttyS0,115200 panic=-1",
	 .help = "start of the kernel command line when QEMU loads the kernel (panic=-1 with "
		 "-no-reboot: a panic powers the board off)"},
	{.key = "append", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, append), .def = "",
	 .help = "added to every kernel command line (e.g. this board's vemmc.profile=)"},
	{.key = "media", .type = OPT_STR, .offset = offsetof(struct qemu_cfg, media),
	 .help = "host file holding the card's durable contents across power cycles (ivshmem-plain; "
		 "relative to dir; created sparse when missing); unset: the card is guest RAM, blank at each boot"},
	{.key = "media_size", .type = OPT_SIZE, .offset = offsetof(struct qemu_cfg, media_size),
	 .def = "64MiB", .min = 1048576, .max = 4294967296.0,
	 .help = "size of the media file and of the ivshmem BAR: a power of two, at least the vemmc capacity"},
	{.key = "defaults", .type = OPT_STRLIST, .offset = offsetof(struct qemu_cfg, defaults),
	 .def = "[\"-nodefaults\", \"-display\", \"none\", \"-no-reboot\"]",
	 .help = "QEMU options passed before the rest: no default devices, no display, exit on reset "
		 "(set [] to keep QEMU's default devices, or list your own)"},
	{.key = "serial", .type = OPT_BOOL, .offset = offsetof(struct qemu_cfg, serial), .def = "true",
	 .help = "pass the serial console (-chardev socket on 127.0.0.1:port, nodelay, -serial); "
		 "false: give it yourself in extra"},
	{.key = "extra", .type = OPT_STRLIST, .offset = offsetof(struct qemu_cfg, extra),
	 .help = "more QEMU arguments, last on the command line"},
	{0},
};

struct pqemu {
	struct power *p;
	char *dir;
	pid_t pid;               /* our running QEMU child, or -1 */
	pid_t ext_pid;           /* a QEMU of another process (qemu.pid) being stopped, or -1 */
	uint64_t ext_kill_ns;    /* when to SIGKILL it */
	bool exited;             /* ... which exited before the start check */
	int wstatus;
	enum power_op op;        /* operation in progress (POWER_STATE when idle) */
	bool busy;
	struct loop_timer timer; /* start check, kill grace, polls, deferred completion */
	int later_rc, later_state;
	char later_msg[700];
	struct stat boot_at_init; /* DIR/boot when we were created (st_ino 0: none) */
	uint64_t start_ns;       /* when this power-on spawned QEMU */
};

/* Is something listening on 127.0.0.1:port?  QEMU's serial server
 * (wait=on) holds the guest until the console connects, so power-on
 * completes as soon as it listens rather than after a fixed wait.  Asked of
 * the kernel's socket table with one sock_diag request for listening TCP
 * sockets on that port (the kernel walks only the listening hash: cheap,
 * unlike reading /proc/net/tcp); a probe connection cannot be used, QEMU
 * would take it for the console. */
static bool port_listening(int64_t port)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return false;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP,
		      .idiag_states = 1u << 10 /* TCP_LISTEN */},
	};
	req.r.id.idiag_sport = htons((uint16_t)port);
	bool found = false, done = false;
	if (send(fd, &req, sizeof req, 0) == (ssize_t)sizeof req) {
		char buf[8192] __attribute__((aligned(8)));
		while (!found && !done) {
			ssize_t n = recv(fd, buf, sizeof buf, 0);
			if (n <= 0)
				break;
			for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
			     h = NLMSG_NEXT(h, n)) {
				if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
					done = true;
					break;
				}
				const struct inet_diag_msg *m = NLMSG_DATA(h);
				if (ntohs(m->id.idiag_sport) == port) {
					found = true;
					break;
				}
			}
		}
	}
	close(fd);
	return found;
}

static char *socket_path(struct pqemu *q)
{
	struct qemu_cfg *c = q->p->cfg;
	return c->socket[0] == '/' ? xstrdup(c->socket) : xasprintf("%s/%s", q->dir, c->socket);
}

static bool serial_listening(struct pqemu *q)
{
	struct qemu_cfg *c = q->p->cfg;
	if (!(c->socket && c->socket[0]))
		return port_listening(c->port);
	char *sp = socket_path(q);
	struct stat st;
	bool up = stat(sp, &st) == 0 && S_ISSOCK(st.st_mode); /* bound: QEMU listens right after */
	free(sp);
	return up;
}

/* ---- DIR/qemu.pid: the power state every process sees ---- */

/* Start time (clock ticks since boot) of pid from /proc/PID/stat; 0 when it
 * does not exist or is a zombie (exited, not yet reaped: off). */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!rp || rp[1] != ' ')
		return 0;
	char *save = NULL, *tok = strtok_r(rp + 2, " ", &save);
	if (!tok || tok[0] == 'Z' || tok[0] == 'X')
		return 0;
	/* tok is field 3 (state); starttime is field 22 */
	for (int field = 3; tok && field < 22; field++)
		tok = strtok_r(NULL, " ", &save);
	uint64_t v = 0;
	return tok && lab_parse_u64(tok, &v) == 0 ? v : 0;
}

static char *pid_path(struct pqemu *q)
{
	return xasprintf("%s/qemu.pid", q->dir);
}

static void pidfile_write(struct pqemu *q, pid_t pid)
{
	char line[64], *path = pid_path(q);
	struct lab_err e = {0};
	int n = snprintf(line, sizeof line, "%d %llu\n", (int)pid, proc_start(pid));
	lab_write_file_atomic(path, line, (size_t)n, &e); /* failing costs only other processes' view */
	free(path);
}

/* The pid the file names when that process still runs, else -1 (and the
 * stale file goes). */
static pid_t pidfile_alive(struct pqemu *q)
{
	char *path = pid_path(q), *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	pid_t alive = -1;
	if (lab_read_file(path, 256, &data, &len, &e) == LAB_OK) {
		char *sp = strchr(data, ' ');
		uint64_t pid = 0, start = 0;
		if (sp) {
			*sp = '\0';
			char *nl = strchr(sp + 1, '\n');
			if (nl)
				*nl = '\0';
		}
		if (sp && lab_parse_u64(data, &pid) == 0 && lab_parse_u64(sp + 1, &start) == 0 &&
		    pid > 1 && pid < (1u << 30) && start && proc_start((pid_t)pid) == start)
			alive = (pid_t)pid;
		else
			unlink(path);
		free(data);
	}
	free(path);
	return alive;
}

static void pidfile_remove(struct pqemu *q, pid_t pid)
{
	char *path = pid_path(q), *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(path, 256, &data, &len, &e) == LAB_OK) {
		uint64_t v = 0;
		char *sp = strchr(data, ' ');
		if (sp)
			*sp = '\0';
		if (!sp || lab_parse_u64(data, &v) != 0 || (pid_t)v == pid)
			unlink(path);
		free(data);
	}
	free(path);
}

/* Is the board on: our child, or another process's live QEMU. */
static pid_t running_pid(struct pqemu *q)
{
	return q->pid > 0 ? q->pid : pidfile_alive(q);
}

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
	if ((c->port <= 0) == !(c->socket && c->socket[0])) {
		free(q);
		return lab_err_set(e, LAB_EUSAGE, "board %s: qemu power: give port or socket (one of them)",
				   p->board);
	}
	if (c->media && (!c->media[0] || strchr(c->media, '\n'))) {
		free(q);
		return lab_err_set(e, LAB_EUSAGE, "board %s: qemu power: bad media path", p->board);
	}
	q->dir = qemu_boot_dir(c->dir, p->board);
	q->ext_pid = -1;
	if (lab_mkdir_p(q->dir, 0755) != 0) {
		int err = errno;
		free(q->dir);
		free(q);
		return lab_err_set(e, LAB_EINFRA, "board %s: qemu power: cannot create %s: %s",
				   p->board, c->dir ? c->dir : "the state directory", strerror(err));
	}
	/* a boot file already there was left by an earlier process (see the top) */
	char *bf = xasprintf("%s/boot", q->dir);
	if (stat(bf, &q->boot_at_init) != 0)
		memset(&q->boot_at_init, 0, sizeof q->boot_at_init);
	free(bf);
	p->priv = q;
	if (c->socket && c->socket[0])
		p->device = xasprintf("QEMU of %s (serial %s)", p->board, c->socket);
	else
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
	struct pqemu *q = arg;
	q->pid = -1;
	q->wstatus = wstatus;
	pidfile_remove(q, pid);
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
		struct qemu_cfg *c = q->p->cfg;
		uint64_t ms = (lab_now_ns() - q->start_ns) / 1000000ull;
		/* listening for the console, or survived the start check: on */
		if ((c->serial && serial_listening(q)) || ms >= QEMU_START_CHECK_MS) {
			finish(q, LAB_OK, POWER_IS_ON, NULL);
			return;
		}
		loop_timer_start(q->p->loop, &q->timer, QEMU_LISTEN_POLL_MS);
		return;
	}
	if (q->busy && q->op == POWER_OFF && q->ext_pid > 0) {
		/* another process's QEMU: not our child, so poll until it is gone */
		if (proc_start(q->ext_pid) == 0) {
			pidfile_remove(q, q->ext_pid);
			q->ext_pid = -1;
			finish(q, LAB_OK, POWER_IS_OFF, NULL);
			return;
		}
		if (lab_now_ns() >= q->ext_kill_ns)
			kill(q->ext_pid, SIGKILL);
		loop_timer_start(q->p->loop, &q->timer, QEMU_POLL_MS);
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

/* Was DIR/boot written after we were created (by a deploy of this run, or
 * any process deploying now)? */
static bool boot_is_fresh(struct pqemu *q)
{
	char *bf = xasprintf("%s/boot", q->dir);
	struct stat st;
	bool fresh = stat(bf, &st) == 0 &&
		     (q->boot_at_init.st_ino == 0 || st.st_ino != q->boot_at_init.st_ino ||
		      st.st_dev != q->boot_at_init.st_dev ||
		      st.st_mtim.tv_sec != q->boot_at_init.st_mtim.tv_sec ||
		      st.st_mtim.tv_nsec != q->boot_at_init.st_mtim.tv_nsec);
	free(bf);
	return fresh;
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
	bool own_kernel = c->kernel && c->kernel[0];
	if (!own_kernel || boot_is_fresh(q)) {
		int rc = qemu_boot_read(q->dir, &boot, &have_boot, &e);
		if (rc != LAB_OK) {
			lab_strlcpy(err, e.msg, errn);
			return rc;
		}
	}
	bool use_boot = have_boot && boot.kernel && boot.kernel[0];
	char *kernel = xstrdup(use_boot ? boot.kernel : own_kernel ? c->kernel : "");
	char *initrd = xstrdup(use_boot ? (boot.initrd ? boot.initrd : "") :
				own_kernel && c->initrd ? c->initrd : "");
	char *append = xstrdup(use_boot && boot.append ? boot.append : "");
	qemu_boot_free(&boot);
	char *media = NULL, *backend = NULL;
	if (c->media) {
		int rc = media_prepare(q, &media, err, errn);
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
	char mem[32], smp[32];
	snprintf(mem, sizeof mem, "%lld", (long long)c->memory_mib);
	snprintf(smp, sizeof smp, "%lld", (long long)c->smp);
	char *chardev;
	if (c->socket && c->socket[0]) {
		char *sp = socket_path(q), *esc = qemu_opt_escape(sp);
		unlink(sp); /* a socket file left behind would read as listening */
		chardev = xasprintf("socket,id=con,path=%s,server=on,wait=on", esc);
		free(sp);
		free(esc);
	} else {
		chardev = xasprintf("socket,id=con,host=127.0.0.1,port=%lld,server=on,wait=on,nodelay=on",
				    (long long)c->port);
	}
	/* the serial console first; the rest of the command line is the job's, then the board's */
	struct lab_buf cmdline;
	lab_buf_init(&cmdline, 8192);
	const char *parts[] = {c->kernel_console, append, c->append};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(parts); i++)
		if (parts[i] && parts[i][0])
			lab_buf_printf(&cmdline, "%s%s", cmdline.len ? " " : "", parts[i]);
	char **argv = xcalloc(24 + c->defaults.n + c->extra.n, sizeof *argv);
	size_t na = 0;
	argv[na++] = c->qemu;
	if (c->machine && c->machine[0]) {
		argv[na++] = "-machine";
		argv[na++] = c->machine;
	}
	if (c->accel && c->accel[0]) {
		argv[na++] = "-accel";
		argv[na++] = c->accel;
	}
	argv[na++] = "-m";
	argv[na++] = mem;
	argv[na++] = "-smp";
	argv[na++] = smp;
	for (size_t i = 0; i < c->defaults.n; i++)
		argv[na++] = c->defaults.v[i];
	if (c->serial) {
		argv[na++] = "-chardev";
		argv[na++] = chardev;
		argv[na++] = "-serial";
		argv[na++] = "chardev:con";
	}
	if (c->bios && c->bios[0]) {
		argv[na++] = "-bios";
		argv[na++] = c->bios;
	}
	if (kernel[0]) {
		argv[na++] = "-kernel";
		argv[na++] = kernel;
		if (initrd[0]) {
			argv[na++] = "-initrd";
			argv[na++] = initrd;
		}
		argv[na++] = "-append";
		argv[na++] = (char *)lab_buf_cstr(&cmdline);
	}
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
	free(chardev);
	lab_buf_free(&cmdline);
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
	pidfile_write(q, pid);
	return LAB_OK;
}

static int qemu_start(struct power *p, enum power_op op)
{
	struct pqemu *q = p->priv;
	char err[600];
	q->op = op;
	q->busy = true;
	pid_t running = -1;
	switch (op) {
	case POWER_STATE:
		complete_later(q, LAB_OK, running_pid(q) > 0 ? POWER_IS_ON : POWER_IS_OFF, NULL);
		return LAB_OK;
	case POWER_ON:
		if (running_pid(q) > 0) {
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
		q->start_ns = lab_now_ns();
		loop_timer_start(p->loop, &q->timer, QEMU_LISTEN_POLL_MS);
		return LAB_OK;
	case POWER_OFF:
		if (q->pid > 0) {
			kill(q->pid, SIGTERM);
			loop_timer_start(p->loop, &q->timer, QEMU_KILL_GRACE_MS);
			return LAB_OK;
		}
		running = pidfile_alive(q);
		if (running <= 0) {
			complete_later(q, LAB_OK, POWER_IS_OFF, NULL);
			return LAB_OK;
		}
		/* started by another emmclab process: stop it all the same */
		q->ext_pid = running;
		q->ext_kill_ns = lab_now_ns() + QEMU_KILL_GRACE_MS * 1000000ull;
		kill(running, SIGTERM);
		loop_timer_start(p->loop, &q->timer, QEMU_POLL_MS);
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
	if (q->busy && q->op == POWER_OFF && q->ext_pid > 0)
		kill(q->ext_pid, SIGKILL);
	q->ext_pid = -1;
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
		loop_child_unwatch(p->loop, q->pid);
		/* a start still in flight is abandoned: kill it; a QEMU that is on stays on,
		 * recorded in qemu.pid for the next process (the loop reaps it if it
		 * exits while we still run) */
		if (q->busy && q->op == POWER_ON) {
			kill(q->pid, SIGKILL);
			pidfile_remove(q, q->pid);
		}
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
	.state_is_local = true,
	.off_time_default = "0s", /* nothing to drain: a new QEMU is a cold start */
};
