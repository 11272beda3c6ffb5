/* Deploy methods none, exec and uboot-tftp: completion on the loop, argv templates,
 * timeouts, TFTP staging (copy/link, sha256 check), a real TFTP fetch of the staged files
 * (tftpd-hpa's in.tftpd + curl), and the netboot through a U-Boot session on a fake board. */
#include "config.h"
#include "console.h"
#include "deploy.h"
#include "expect.h"
#include "fakeboard.h"
#include "tap.h"
#include "uboot.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern const struct deploy_driver deploy_none, deploy_exec, deploy_uboot_tftp;

static char dir[] = "/tmp/emmclab-deploy-XXXXXX";
static struct loop *L;

struct dres {
	bool done;
	int rc;
	char msg[600];
};

static void on_dep(struct deploy *d, int rc, const char *msg, void *arg)
{
	LAB_UNUSED(d);
	struct dres *r = arg;
	r->done = true;
	r->rc = rc;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

static struct deploy *mk(struct loop *l, const char *yaml, struct lab_err *e)
{
	struct cfg_node *n = NULL;
	struct deploy *d = NULL;
	if (cfg_parse_buffer("test.yaml", yaml, strlen(yaml), &n, e) != LAB_OK)
		return NULL;
	if (deploy_new(l, "dut1", n, &d, e) != LAB_OK)
		d = NULL;
	cfg_free(n);
	return d;
}

static struct dres run(struct loop *l, struct deploy *d, const struct deploy_ctx *ctx, uint64_t ms)
{
	struct dres r = {0};
	deploy_run(d, ctx, on_dep, &r);
	if (r.done)
		lab_strlcpy(r.msg, "CALLBACK INSIDE deploy_run", sizeof r.msg);
	fb_run_until(l, &r.done, ms);
	if (!r.done) {
		r.rc = -1;
		lab_strlcpy(r.msg, "no completion", sizeof r.msg);
	}
	return r;
}

static char *path(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
	char *p = path(name);
	lab_write_file_atomic(p, text, strlen(text), NULL);
	free(p);
}

static char *get(const char *p)
{
	char *t = NULL;
	size_t n;
	if (lab_read_file(p, 1 << 20, &t, &n, NULL) != LAB_OK)
		return xstrdup("(unreadable)");
	return t;
}

static struct kernel_cfg K;

static void test_none_exec(void)
{
	struct lab_err e = {0};
	struct deploy_ctx ctx = {.kernel = &K, .bootargs = "console=ttyS2 mmc_block.fua=off",
				 .workdir = dir};
	struct deploy *d = mk(L, "{driver: none}", &e);
	ok(d && d->drv == &deploy_none && deploy_none.flags == 0, "deploy none");
	struct dres r = run(L, d, &ctx, 2000);
	ok(r.done && r.rc == LAB_OK, "none completes on the loop (%s)", r.msg);
	deploy_free(d);

	char yaml[1024], *out = path("exec.out");
	snprintf(yaml, sizeof yaml,
		 "{driver: exec, command: [sh, -c, 'printf \"%%s|\" \"$@\" > %s', x, '{kernel}', '{dtb}',"
		 " '{initrd}', '{board}', '{bootargs}', 'dir={workdir}']}", out);
	d = mk(L, yaml, &e);
	ok(d && deploy_exec.flags == DEPLOY_BEFORE_POWER, "deploy exec (runs before power-on) %s", e.msg);
	r = run(L, d, &ctx, 5000);
	ok(r.rc == LAB_OK, "exec deploy ran (%s)", r.msg);
	char *t = get(out), want[1024];
	snprintf(want, sizeof want, "%s|%s|%s|dut1|console=ttyS2 mmc_block.fua=off|dir=%s|", K.image,
		 K.dtb, K.initrd, dir);
	is_str(t, want, "placeholders expanded into separate argv elements");
	free(t);
	free(out);
	ok(strlen(d->kernel_sha256) == 64 && strlen(d->dtb_sha256) == 64, "artifact hashes recorded");
	deploy_free(d);

	d = mk(L, "{driver: exec, command: [sh, -c, 'echo flasher: no device >&2; exit 2']}", &e);
	r = run(L, d, &ctx, 5000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "exec deploy on dut1") &&
	   strstr(r.msg, "exited with 2: flasher: no device"), "failure message: %s", r.msg);
	deploy_free(d);

	d = mk(L, "{driver: exec, timeout: 1s, command: [sh, -c, 'sleep 30; true']}", &e);
	uint64_t t0 = lab_now_ms();
	r = run(L, d, &ctx, 5000);
	uint64_t el = lab_now_ms() - t0;
	ok(r.rc == LAB_ETIMEOUT && el < 2500, "hanging deploy command times out (%llu ms): %s",
	   (unsigned long long)el, r.msg);
	deploy_free(d);
	for (int i = 0; i < 10; i++)
		loop_run_once(L, 20);
	ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child left (killed and reaped)");

	lab_err_clear(&e);
	ok(mk(L, "{driver: exec, command: [flash, '{kernal}']}", &e) == NULL && strstr(e.msg, "{kernal}"),
	   "unknown placeholder refused at load: %s", e.msg);
}

/* ---- uboot-tftp ---- */

struct rig {
	struct fakeboard fb;
	struct console *con;
	struct expect *x;
	struct uboot_cfg cfg;
	struct uboot *ub;
	bool done;
	int rc;
};

static void rig_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	expect_feed(((struct rig *)arg)->x, buf, n);
}

static void rig_ub(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
}

static bool rig_uboot(struct rig *r)
{
	/* As board.c does at a power cycle: the last boot's output still on the pty
	 * (its kernel log, written right after "Starting kernel"; the loop may not
	 * have run since) is read in the power-off time and dropped, not taken for
	 * this boot's kernel starting by itself. */
	fb_run_for(L, 50);
	r->done = false;
	expect_flush(r->x);
	fb_power_on(&r->fb);
	uboot_interrupt(r->ub, 5000, rig_ub, r);
	fb_run_until(L, &r->done, 6000);
	return r->done && r->rc == LAB_OK;
}

static bool rig_init(struct rig *r)
{
	memset(r, 0, sizeof *r);
	if (fb_init(&r->fb, L))
		return false;
	char yaml[256];
	snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\n", r->fb.path);
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	static const struct console_events ev = {.data = rig_data};
	if (cfg_parse_buffer("test", yaml, strlen(yaml), &n, &e) ||
	    console_new(L, "dut1", n, &ev, r, &r->con, &e) || console_open(r->con, &e)) {
		printf("# console: %s\n", e.msg);
		cfg_free(n);
		return false;
	}
	cfg_free(n);
	r->x = expect_new(L, 0);
	r->cfg.autoboot_pattern = (char *)"Hit any key to stop autoboot";
	r->cfg.interrupt_key = (char *)" ";
	r->cfg.prompt = (char *)"=> ";
	r->ub = uboot_new(L, r->con, r->x, &r->cfg, "dut1");
	return rig_uboot(r);
}

static void rig_fini(struct rig *r)
{
	uboot_free(r->ub);
	console_free(r->con);
	expect_free(r->x);
	fb_fini(&r->fb);
}

static bool same_file(const char *a, const char *b)
{
	char *x = get(a), *y = get(b);
	bool same = strcmp(x, y) == 0;
	free(x);
	free(y);
	return same;
}

static pid_t tftpd = -1;
static int tftp_port;

static void start_tftpd(const char *root)
{
	if (geteuid() != 0 || access("/usr/sbin/in.tftpd", X_OK) != 0)
		return;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t al = sizeof a;
	bind(s, (struct sockaddr *)&a, sizeof a);
	getsockname(s, (struct sockaddr *)&a, &al);
	close(s);
	tftp_port = ntohs(a.sin_port);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", tftp_port);
	/* Foreground, chrooted to the root, as the package's tftp user: like the Debian service. */
	char *argv[] = {"/usr/sbin/in.tftpd", "-L", "-a", addr, "-s", (char *)root, NULL};
	tftpd = lab_spawn(argv, NULL, -1, -1, -1);
	poll(NULL, 0, 300);
}

static bool tftp_fetch(const char *name, const char *to)
{
	char url[256];
	snprintf(url, sizeof url, "tftp://127.0.0.1:%d/%s", tftp_port, name);
	char *argv[] = {"curl", "-s", "-f", "--max-time", "10", "-o", (char *)to, url, NULL};
	pid_t pid = lab_spawn(argv, NULL, -1, -1, -1);
	int st = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_tftp(void)
{
	struct rig r;
	struct lab_err e = {0};
	ok(rig_init(&r), "fake board at the U-Boot prompt");
	char *root = path("tftp"), yaml[512];
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s', server: 10.0.0.1}", root);
	struct deploy *d = mk(L, yaml, &e);
	ok(d && (deploy_uboot_tftp.flags & (DEPLOY_AT_UBOOT | DEPLOY_BOOTS)) ==
		(DEPLOY_AT_UBOOT | DEPLOY_BOOTS), "uboot-tftp deploy (%s)", e.msg);
	if (!d)
		return;
	struct deploy_ctx ctx = {.kernel = &K, .bootargs = "console=ttyS2 root=/dev/ram0 mmc_block.fua=off",
				 .uboot = r.ub, .workdir = dir};
	struct dres res = run(L, d, &ctx, 10000);
	ok(res.rc == LAB_OK, "netboot through U-Boot (%s)", res.msg);
	is_str(r.fb.last_cmdline, ctx.bootargs, "kernel started with the job's bootargs");
	is_str(fb_getenv(&r.fb, "serverip"), "10.0.0.1", "serverip set");
	char *k = xasprintf("%s/dut1/Image", root), *i = xasprintf("%s/dut1/initrd.img", root),
	     *t = xasprintf("%s/dut1/board.dtb", root);
	ok(same_file(k, K.image) && same_file(i, K.initrd) && same_file(t, K.dtb),
	   "artifacts staged as <tftp_root>/dut1/<name>");
	struct stat st, src;
	ok(stat(k, &st) == 0 && (st.st_mode & 0777) == 0644, "staged mode 0644 (readable by tftpd)");
	stat(K.image, &src);
	ok(st.st_ino != src.st_ino, "copy by default");
	deploy_free(d);

	/* The staged files through a real TFTP server. */
	start_tftpd(root);
	if (tftpd > 0) {
		char *got = path("fetched");
		ok(tftp_fetch("dut1/Image", got) && same_file(got, K.image),
		   "in.tftpd (chroot to tftp_root) serves dut1/Image as staged");
		ok(!tftp_fetch("dut1/nothing", got), "and refuses a missing file");
		free(got);
		kill(tftpd, SIGTERM);
		waitpid(tftpd, NULL, 0);
	} else {
		tap_skip("real TFTP fetch: needs root and /usr/sbin/in.tftpd (tftpd-hpa)");
	}

	/* Hard links, a shared subdir name, and a file U-Boot cannot fetch. */
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s', subdir: 'lab/{board}-x', stage: link}",
		 root);
	d = mk(L, yaml, &e);
	ok(rig_uboot(&r), "board power-cycled back to U-Boot");
	res = run(L, d, &ctx, 10000);
	free(k);
	k = xasprintf("%s/lab/dut1-x/Image", root);
	ok(res.rc == LAB_OK && stat(k, &st) == 0 && st.st_ino == src.st_ino, "stage: link hard-links (%s)",
	   res.msg);
	deploy_free(d);

	struct kernel_cfg bad = K;
	bad.image = path("missing-Image");
	put("missing-Image", "not really a kernel");
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s'}", root);
	d = mk(L, yaml, &e);
	ctx.kernel = &bad;
	ok(rig_uboot(&r), "board power-cycled back to U-Boot");
	res = run(L, d, &ctx, 10000);
	ok(res.rc != LAB_OK && strstr(res.msg, "uboot-tftp deploy on dut1") && strstr(res.msg, "File not found"),
	   "TFTP failure reported with U-Boot's words: %s", res.msg);
	ctx.kernel = &K;
	ctx.uboot = NULL;
	res = run(L, d, &ctx, 5000);
	ok(res.rc == LAB_EUSAGE && strstr(res.msg, "no U-Boot session"), "no session: %s", res.msg);
	deploy_free(d);
	free(bad.image);

	/* The board's own DTB by name, found in dtbs/<vendor>/ next to the kernel image. */
	char *vd = path("dtbs/rockchip");
	lab_mkdir_p(vd, 0755);
	put("dtbs/rockchip/rk3399-rockpro64.dtb", "rockpro64 dtb\n");
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s', dtb: rk3399-rockpro64.dtb}", root);
	d = mk(L, yaml, &e);
	ctx.uboot = r.ub;
	ok(rig_uboot(&r), "board power-cycled back to U-Boot");
	res = run(L, d, &ctx, 10000);
	char *bd = xasprintf("%s/dut1/rk3399-rockpro64.dtb", root), *vdf = path("dtbs/rockchip/rk3399-rockpro64.dtb");
	char h[65];
	lab_sha256_file(vdf, h, NULL);
	ok(res.rc == LAB_OK && same_file(bd, vdf) && strcmp(d->dtb_sha256, h) == 0,
	   "board dtb found in dtbs/rockchip/, staged, its sha256 recorded (%s)", res.msg);
	deploy_free(d);
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s', dtb: nope.dtb}", root);
	d = mk(L, yaml, &e);
	res = run(L, d, &ctx, 5000);
	ok(res.rc == LAB_EUSAGE && strstr(res.msg, "nope.dtb not found"), "missing board dtb: %s", res.msg);
	deploy_free(d);
	free(bd);
	free(vdf);
	free(vd);

	lab_err_clear(&e);
	snprintf(yaml, sizeof yaml, "{driver: uboot-tftp, tftp_root: '%s', subdir: '../etc'}", root);
	ok(mk(L, yaml, &e) == NULL && strstr(e.msg, "inside tftp_root"), "subdir escaping the root refused");
	free(k);
	free(i);
	free(t);
	free(root);
	rig_fini(&r);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	put("Image", "ARM64 kernel image bytes\n");
	put("initrd.img", "initramfs bytes\n");
	put("board.dtb", "dtb bytes\n");
	K.name = (char *)"k1";
	K.image = path("Image");
	K.initrd = path("initrd.img");
	K.dtb = path("board.dtb");
	L = loop_new();
	test_none_exec();
	test_tftp();
	loop_free(L);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ok(system(cmd) == 0, "cleaned up");
	free(K.image);
	free(K.initrd);
	free(K.dtb);
	return tap_done();
}
