/*
 * deploy/uboot_tftp.c - netboot from U-Boot over TFTP.
 *
 * 1. Stage the job's artifacts (kernel image, initrd, DTB) into the TFTP
 *    root as <tftp_root>/<subdir>/<file name> (subdir defaults to the board
 *    name, so boards never see each other's files): a copy (default) or a
 *    hard link (stage: link; falls back to a copy across file systems),
 *    written under a temporary name and renamed into place so a board that
 *    is fetching never sees a half-written file, mode 0644 for the TFTP
 *    daemon's user, then checked against the sha256 deploy.c took.
 * 2. At the U-Boot prompt (board.c hands over the session): network set-up
 *    (dhcp, or ip/netmask), serverip, tftp each file, bootargs, boot command
 *    (uboot_netboot in uboot.c); completes when the kernel takes over.
 *
 * Staging is plain local file I/O done inside run() (tens of ms for a kernel
 * image): it is bounded and does not wait on any peer.  Staged files are left
 * in place after the run (overwritten by the next one) for post-mortems.
 */
#include "config.h"
#include "deploy.h"
#include "uboot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tftp_cfg {
	char *tftp_root;
	char *subdir;
	int stage;
	char *ip, *netmask, *server;
	char *dtb;
	char *boot_cmd;
	uint64_t step_timeout_ms;
};

static const char *const stage_modes[] = {"copy", "link", NULL};

static const struct opt tftp_opts[] = {
	{.key = "tftp_root", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, tftp_root),
	 .flags = OPT_REQUIRED, .help = "root directory of the TFTP server on this host"},
	{.key = "subdir", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, subdir),
	 .def = "{board}", .help = "directory under tftp_root for this board's files ({board})"},
	{.key = "stage", .type = OPT_ENUM, .offset = offsetof(struct tftp_cfg, stage), .def = "copy",
	 .choices = stage_modes, .help = "copy the artifacts or hard-link them"},
	{.key = "ip", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, ip),
	 .help = "board's static IP address; empty: dhcp"},
	{.key = "netmask", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, netmask),
	 .help = "netmask with a static ip"},
	{.key = "server", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, server),
	 .help = "TFTP server address as the board sees it (empty: from DHCP)"},
	{.key = "dtb", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, dtb),
	 .help = "this board's DTB: a path, or a file name found next to the kernel image "
		 "(or in its dtbs/ or dtbs/*/); wins over the kernel's dtb"},
	{.key = "boot_cmd", .type = OPT_STR, .offset = offsetof(struct tftp_cfg, boot_cmd),
	 .help = "boot command (default: the board type's, else booti with the staged files)"},
	{.key = "step_timeout", .type = OPT_DURATION, .offset = offsetof(struct tftp_cfg, step_timeout_ms),
	 .def = "120s", .min = 1000, .max = 3600000, .help = "timeout of one U-Boot command (tftp)"},
	{0},
};

struct tftp {
	struct deploy *d;
	struct uboot *ub;         /* borrowed from the ctx while running */
	char *dir;                /* <tftp_root>/<subdir> */
	char *rel;                /* <subdir> as TFTP names it */
	char *names[3];           /* staged TFTP names: kernel, initrd, dtb */
	struct loop_timer later;
	int fail_rc;
	char fail_msg[512];
};

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct tftp *s = arg;
	deploy_complete(s->d, s->fail_rc, "uboot-tftp deploy on %s: %s", s->d->board, s->fail_msg);
}

static char *subst_board(const char *tmpl, const char *board)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	for (const char *p = tmpl; *p; p++) {
		if (!strncmp(p, "{board}", 7)) {
			lab_buf_append(&b, board, strlen(board));
			p += 6;
		} else {
			lab_buf_append(&b, p, 1);
		}
	}
	char *r = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return r;
}

static int tftp_init(struct deploy *d, struct lab_err *e)
{
	struct tftp_cfg *c = d->cfg;
	if (!c->tftp_root || c->tftp_root[0] != '/')
		return lab_err_set(e, LAB_EUSAGE, "board %s: uboot-tftp: tftp_root must be an absolute path",
				   d->board);
	char *rel = subst_board(c->subdir ? c->subdir : "", d->board);
	if (strstr(rel, "..") || rel[0] == '/') {
		free(rel);
		return lab_err_set(e, LAB_EUSAGE,
				   "board %s: uboot-tftp: subdir must stay inside tftp_root (no '..', not absolute)",
				   d->board);
	}
	struct tftp *s = xcalloc(1, sizeof *s);
	s->d = d;
	s->rel = rel;
	s->dir = rel[0] ? xasprintf("%s/%s", c->tftp_root, rel) : xstrdup(c->tftp_root);
	loop_timer_init(&s->later, on_later, s);
	d->priv = s;
	return LAB_OK;
}

static void tftp_cancel(struct deploy *d)
{
	struct tftp *s = d->priv;
	loop_timer_stop(d->loop, &s->later);
	if (s->ub) {
		uboot_cancel(s->ub);
		s->ub = NULL;
	}
}

static void tftp_fini(struct deploy *d)
{
	struct tftp *s = d->priv;
	if (!s)
		return;
	tftp_cancel(d);
	for (int i = 0; i < 3; i++)
		free(s->names[i]);
	free(s->dir);
	free(s->rel);
	free(s);
	d->priv = NULL;
}

static int stage_files(struct tftp *s, const char *const src[3], struct lab_err *e);

static int copy_fd(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -1;
		break; /* no in-kernel copy here: plain read/write */
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (ssize_t o = 0; o < n;) {
			ssize_t w = write(out, buf + o, (size_t)(n - o));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			o += w;
		}
	}
}

/* Stage src as <dir>/<base> via a temporary name; link or copy. */
static int stage_one(struct tftp *s, const char *src, const char *base, bool link_it,
		     struct lab_err *e)
{
	char *tmp = xasprintf("%s/.%s.emmclab-%d", s->dir, base, (int)getpid());
	char *dst = xasprintf("%s/%s", s->dir, base);
	int rc = LAB_OK;
	unlink(tmp);
	bool linked = link_it && link(src, tmp) == 0;
	if (linked) {
		/* The TFTP daemon's user must be able to read it (the artifact's own mode). */
		struct stat st;
		if (stat(tmp, &st) == 0 && (st.st_mode & 0444) != 0444)
			chmod(tmp, st.st_mode | 0444);
	} else {
		int in = open(src, O_RDONLY | O_CLOEXEC);
		int out = in < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (in < 0 || out < 0 || copy_fd(in, out) < 0) {
			rc = LAB_ERR(e, LAB_EINFRA, "cannot copy %s to %s: %s", src, tmp, strerror(errno));
			unlink(tmp);
		}
		if (out >= 0 && close(out) < 0 && !rc)
			rc = LAB_ERR(e, LAB_EINFRA, "cannot write %s: %s", tmp, strerror(errno));
		if (in >= 0)
			close(in);
		if (!rc)
			fchmodat(AT_FDCWD, tmp, 0644, 0);
	}
	if (!rc && rename(tmp, dst) < 0) {
		rc = LAB_ERR(e, LAB_EINFRA, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(dst);
	return rc;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* The board's dtb option: absolute, or looked up next to the kernel image. Caller frees. */
static char *find_dtb(const char *dtb, const char *image, struct lab_err *e)
{
	if (dtb[0] == '/') {
		if (access(dtb, R_OK) == 0)
			return xstrdup(dtb);
		LAB_ERR(e, LAB_EUSAGE, "dtb %s: %s", dtb, strerror(errno));
		return NULL;
	}
	const char *slash = strrchr(image, '/');
	char *dir = slash ? xstrndup(image, (size_t)(slash - image)) : xstrdup(".");
	char *cand[2] = {xasprintf("%s/%s", dir, dtb), xasprintf("%s/dtbs/%s", dir, dtb)};
	char *found = NULL;
	for (int i = 0; i < 2 && !found; i++)
		if (access(cand[i], R_OK) == 0)
			found = xstrdup(cand[i]);
	if (!found) {
		/* Kernel trees install as dtbs/<vendor>/<name>.dtb. */
		char *dtbs = xasprintf("%s/dtbs", dir);
		DIR *dh = opendir(dtbs);
		struct dirent *de;
		while (dh && !found && (de = readdir(dh)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char *p = xasprintf("%s/%s/%s", dtbs, de->d_name, dtb);
			if (access(p, R_OK) == 0)
				found = p;
			else
				free(p);
		}
		if (dh)
			closedir(dh);
		free(dtbs);
	}
	if (!found)
		LAB_ERR(e, LAB_EUSAGE, "dtb %s not found next to %s (nor in dtbs/, dtbs/*/)", dtb, image);
	free(cand[0]);
	free(cand[1]);
	free(dir);
	return found;
}

static int stage_all(struct tftp *s, const struct kernel_cfg *k, struct lab_err *e)
{
	struct tftp_cfg *c = s->d->cfg;
	const char *src[3] = {k->image, k->initrd, k->dtb};
	char *board_dtb = NULL;
	if (c->dtb && c->dtb[0]) {
		board_dtb = find_dtb(c->dtb, k->image, e);
		if (!board_dtb)
			return LAB_EUSAGE;
		/* Record what is really booted for the results store. */
		int rc = lab_sha256_file(board_dtb, s->d->dtb_sha256, e);
		if (rc) {
			free(board_dtb);
			return rc;
		}
		src[2] = board_dtb;
	}
	int rc = stage_files(s, src, e);
	free(board_dtb);
	return rc;
}

static int stage_files(struct tftp *s, const char *const src[3], struct lab_err *e)
{
	struct tftp_cfg *c = s->d->cfg;
	const char *want[3] = {s->d->kernel_sha256, s->d->initrd_sha256, s->d->dtb_sha256};
	if (lab_mkdir_p(s->dir, 0755) != 0)
		return LAB_ERR(e, LAB_EINFRA, "cannot create %s: %s", s->dir, strerror(errno));
	for (int i = 0; i < 3; i++) {
		free(s->names[i]);
		s->names[i] = NULL;
		if (!src[i] || !src[i][0])
			continue;
		const char *b = base_name(src[i]);
		for (int j = 0; j < i; j++)
			if (s->names[j] && !strcmp(base_name(s->names[j]), b))
				return LAB_ERR(e, LAB_EUSAGE, "two artifacts named %s: rename one", b);
		int rc = stage_one(s, src[i], b, c->stage == 1, e);
		if (rc)
			return rc;
		char *dst = xasprintf("%s/%s", s->dir, b);
		char got[65];
		rc = lab_sha256_file(dst, got, e);
		if (!rc && want[i][0] && strcmp(got, want[i]) != 0)
			rc = LAB_ERR(e, LAB_EINFRA, "staged %s does not match its source (sha256 %.12s, want %.12s)",
				     dst, got, want[i]);
		free(dst);
		if (rc)
			return rc;
		s->names[i] = s->rel[0] ? xasprintf("%s/%s", s->rel, b) : xstrdup(b);
	}
	return LAB_OK;
}

static void on_netboot(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct tftp *s = arg;
	s->ub = NULL;
	if (rc == LAB_OK)
		deploy_complete(s->d, LAB_OK, NULL);
	else {
		/* the session's messages start with the board's name already */
		const char *m = uboot_errmsg(u);
		size_t bl = strlen(s->d->board);
		if (!strncmp(m, s->d->board, bl) && !strncmp(m + bl, ": ", 2))
			m += bl + 2;
		deploy_complete(s->d, rc, "uboot-tftp deploy on %s: %s", s->d->board, m);
	}
}

static int tftp_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	struct tftp *s = d->priv;
	struct tftp_cfg *c = d->cfg;
	struct lab_err e = {0};
	int rc = LAB_OK;
	if (!ctx->kernel || !ctx->kernel->image || !ctx->kernel->image[0])
		rc = lab_err_set(&e, LAB_EUSAGE, "no kernel image to boot");
	else if (!ctx->uboot)
		rc = lab_err_set(&e, LAB_EUSAGE,
				 "no U-Boot session (does the board type set uboot.prompt?)");
	if (!rc)
		rc = stage_all(s, ctx->kernel, &e);
	if (!rc) {
		struct uboot_netboot nb = {
			.dhcp = !(c->ip && c->ip[0]),
			.ipaddr = c->ip,
			.netmask = c->netmask,
			.serverip = c->server,
			.kernel = s->names[0],
			.initrd = s->names[1],
			.dtb = s->names[2],
			.bootargs = ctx->bootargs,
			.boot_cmd = c->boot_cmd && c->boot_cmd[0] ? c->boot_cmd : NULL,
			.step_timeout_ms = c->step_timeout_ms,
		};
		s->ub = ctx->uboot;
		rc = uboot_netboot(ctx->uboot, &nb, d->timeout_ms, on_netboot, s);
		if (rc) {
			s->ub = NULL;
			lab_err_set(&e, rc, "U-Boot session busy or netboot refused: %s",
				    uboot_errmsg(ctx->uboot));
		}
	}
	if (rc) {
		s->fail_rc = rc;
		lab_strlcpy(s->fail_msg, e.msg, sizeof s->fail_msg);
		loop_timer_start(d->loop, &s->later, 0); /* never complete inside run() */
	}
	return LAB_OK;
}

const struct deploy_driver deploy_uboot_tftp = {
	.name = "uboot-tftp",
	.version = DEPLOY_OPS_VERSION,
	.help = "stage kernel/initrd/DTB in a TFTP root and netboot them from U-Boot",
	.options = tftp_opts,
	.cfg_size = sizeof(struct tftp_cfg),
	.flags = DEPLOY_AT_UBOOT | DEPLOY_BOOTS,
	.init = tftp_init,
	.fini = tftp_fini,
	.run = tftp_run,
	.cancel = tftp_cancel,
};
