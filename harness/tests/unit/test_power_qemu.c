/* test_power_qemu.c - the qemu power driver and deploy method of the virtual
 * board, with a fake QEMU (a script that records its arguments and sleeps,
 * or one that fails at start), the boot hand-over file between them, and the
 * persistent media file (created sparse, kept across power cycles). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "deploy.h"
#include "power_testlib.h"
#include "qemu_boot.h"
#include "tap.h"

extern const struct power_driver power_qemu;
extern const struct deploy_driver deploy_qemu;

static char dir[64];

static void write_script(const char *name, const char *body)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	fputs(body, f);
	fclose(f);
	chmod(path, 0755);
}

static char *slurp(const char *name)
{
	char path[256], *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (lab_read_file(path, 1 << 20, &data, &len, &e) != LAB_OK)
		return xstrdup("");
	return data;
}

static void deploy_cb(struct deploy *d, int rc, const char *msg, void *arg)
{
	LAB_UNUSED(d);
	LAB_UNUSED(msg);
	*(int *)arg = rc + 100;
}

int main(void)
{
	struct loop *l = loop_new();
	struct lab_err e = {0};
	lab_strlcpy(dir, "/tmp/emmclab-test-qemu-XXXXXX", sizeof dir);
	ok(mkdtemp(dir) != NULL, "temp dir");
	ok(power_driver_find("qemu") == &power_qemu && deploy_driver_find("qemu") == &deploy_qemu,
	   "qemu power driver and deploy method are registered");
	/* fake QEMU: prints its argv (one per line) and runs until killed */
	write_script("fakeq", "#!/bin/sh\nfor a in \"$@\"; do echo \"arg:$a\"; done\nexec sleep 30\n");
	write_script("badq", "#!/bin/sh\necho 'qemu-system-x86_64: -chardev socket: Address already in use' >&2\nexit 1\n");

	/* boot file round trip; newlines refused */
	char st[128];
	snprintf(st, sizeof st, "%s/st", dir);
	struct qemu_boot b = {.kernel = "/k/vmlinuz", .initrd = "/k/initrd", .append = "mmc_block.fua=off"};
	is_int(qemu_boot_write(st, &b, &e), LAB_OK, "boot file written");
	struct qemu_boot r;
	bool found = false;
	is_int(qemu_boot_read(st, &r, &found, &e), LAB_OK, "boot file read");
	ok(found && r.kernel && strcmp(r.kernel, "/k/vmlinuz") == 0 && strcmp(r.append, "mmc_block.fua=off") == 0,
	   "boot file values survive");
	qemu_boot_free(&r);
	struct qemu_boot bad = {.kernel = "/k", .initrd = "/i", .append = "a\nb"};
	is_int(qemu_boot_write(st, &bad, &e), LAB_EUSAGE, "newline in the command line refused");
	char none[128];
	snprintf(none, sizeof none, "%s/none", dir);
	is_int(qemu_boot_read(none, &r, &found, &e), LAB_OK, "no boot file is not an error");
	ok(!found, "... and reads as not found");
	char *def = qemu_boot_dir(NULL, "b1");
	ok(strstr(def, "emmclab-qemu-b1") != NULL, "default state directory names the board");
	free(def);

	/* power: off -> on (boots what the deploy wrote + the board's append) -> off */
	char yaml[1024];
	snprintf(yaml, sizeof yaml,
		 "{driver: qemu, port: 23456, qemu: %s/fakeq, dir: %s, append: \"vemmc.profile=slowrel\", "
		 "off_time: 100ms}", dir, st);
	lab_err_clear(&e);
	struct power *p = power_from_yaml(l, "b1", yaml, &e);
	ok(p != NULL, "qemu power from YAML: %s", e.msg);
	if (!p)
		return tap_done();
	struct op_res res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "state off before power-on (%s)", res.msg);
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "on: %s", res.msg);
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "state on while QEMU runs");
	char *log = slurp("st/qemu.log");
	ok(strstr(log, "arg:/k/vmlinuz") && strstr(log, "arg:/k/initrd"), "kernel and initrd from the boot file");
	ok(strstr(log, "arg:console=ttyS0,115200 panic=-1 mmc_block.fua=off vemmc.profile=slowrel") != NULL,
	   "command line: console, the job's, then the board's append");
	ok(strstr(log, "arg:socket,id=con,host=127.0.0.1,port=23456,server=on,wait=on") != NULL,
	   "serial is a local TCP server that waits for the console");
	free(log);
	res = run_op(l, p, POWER_OFF, 6000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "off: %s", res.msg);
	ok(res.ms < 2500, "SIGTERM is enough for a well-behaved QEMU (%llu ms)", (unsigned long long)res.ms);
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "state off after power-off");
	res = run_op(l, p, POWER_OFF, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "off when already off");
	power_free(p);

	/* media: a sparse host file behind ivshmem-plain, created once and kept */
	snprintf(yaml, sizeof yaml,
		 "{driver: qemu, port: 23458, qemu: %s/fakeq, dir: %s, media: \"card,1.img\", "
		 "media_size: 4MiB, off_time: 100ms}", dir, st);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b4", yaml, &e);
	ok(p != NULL, "qemu power with media: %s", e.msg);
	if (!p)
		return tap_done();
	char media[256], want[512];
	snprintf(media, sizeof media, "%s/card,1.img", st);
	struct stat ms = {0}; /* printed below even when stat fails */
	ok(stat(media, &ms) != 0, "no media file before the first power-on");
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "on with media: %s", res.msg);
	ok(stat(media, &ms) == 0 && ms.st_size == 4 << 20, "media file created at media_size (%lld bytes)",
	   (long long)ms.st_size);
	ok((long long)ms.st_blocks * 512 < ms.st_size, "... sparse (%lld blocks)", (long long)ms.st_blocks);
	log = slurp("st/qemu.log");
	snprintf(want, sizeof want,
		 "arg:-object\narg:memory-backend-file,id=vemmc,share=on,mem-path=%s/card,,1.img,size=4194304\n"
		 "arg:-device\narg:ivshmem-plain,memdev=vemmc\n", st);
	ok(strstr(log, want) != NULL, "shared file backend (comma doubled) behind ivshmem-plain");
	free(log);
	FILE *mf = fopen(media, "r+");
	ok(mf && fseek(mf, 12345, SEEK_SET) == 0 && fputs("durable", mf) >= 0 && fclose(mf) == 0,
	   "the card writes into its media");
	res = run_op(l, p, POWER_OFF, 6000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "off with media");
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "on again");
	char got[8] = "";
	mf = fopen(media, "r");
	ok(mf && fseek(mf, 12345, SEEK_SET) == 0 && fread(got, 1, 7, mf) == 7, "media readable");
	if (mf)
		fclose(mf);
	ok(memcmp(got, "durable", 7) == 0 && stat(media, &ms) == 0 && ms.st_size == 4 << 20,
	   "media kept across the power cycle (contents and size)");
	res = run_op(l, p, POWER_OFF, 6000);
	power_free(p);
	snprintf(yaml, sizeof yaml, "{driver: qemu, port: 23459, qemu: %s/fakeq, dir: %s, media: m.img, "
		 "media_size: 3MiB}", dir, st);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b5", yaml, &e);
	ok(p == NULL && strstr(e.msg, "power of two") != NULL, "media_size must be a power of two: %s", e.msg);
	if (p)
		power_free(p);
	snprintf(yaml, sizeof yaml, "{driver: qemu, port: 23460, qemu: %s/fakeq, dir: %s, media: %s}",
		 dir, st, dir);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b6", yaml, &e);
	ok(p != NULL, "media on a directory: accepted at configuration");
	if (p) {
		res = run_op(l, p, POWER_ON, 5000);
		ok(res.rc == LAB_EINFRA && res.state == POWER_IS_OFF && strstr(res.msg, ": media ") != NULL,
		   "... refused at power-on, naming the media: %s", res.msg);
		power_free(p);
	}

	/* a QEMU that exits at once: the error quotes its last words */
	snprintf(yaml, sizeof yaml, "{driver: qemu, port: 23457, qemu: %s/badq, dir: %s}", dir, st);
	p = power_from_yaml(l, "b2", yaml, &e);
	ok(p != NULL, "second board");
	if (!p)
		return tap_done();
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc != LAB_OK && strstr(res.msg, "Address already in use") != NULL,
	   "QEMU failing at start is an error naming why: %s", res.msg);
	power_free(p);

	/* deploy: writes the job's kernel, initrd and command line */
	char kdir[128], kimg[160], kird[160];
	snprintf(kdir, sizeof kdir, "%s/dep", dir);
	snprintf(kimg, sizeof kimg, "%s/fakeq", dir);
	snprintf(kird, sizeof kird, "%s/badq", dir);
	snprintf(yaml, sizeof yaml, "{driver: qemu, dir: %s}", kdir);
	struct cfg_node *n = NULL;
	struct deploy *d = NULL;
	lab_err_clear(&e);
	ok(cfg_parse_buffer("t.yaml", yaml, strlen(yaml), &n, &e) == LAB_OK &&
	   deploy_new(l, "b3", n, &d, &e) == LAB_OK, "qemu deploy from YAML: %s", e.msg);
	cfg_free(n);
	if (!d)
		return tap_done();
	ok((d->drv->flags & DEPLOY_BEFORE_POWER) && (d->drv->flags & DEPLOY_BOOTS),
	   "deploy runs before power and boots by itself");
	struct kernel_cfg k = {.name = "k", .image = kimg, .initrd = kird};
	struct deploy_ctx ctx = {.kernel = &k, .bootargs = "quiet mmc_block.fua=on mmc_core.disable_cqe=0"};
	int done = 0;
	is_int(deploy_run(d, &ctx, deploy_cb, &done), LAB_OK, "deploy started");
	is_int(done, 0, "no completion from inside deploy_run");
	for (int i = 0; i < 50 && !done; i++)
		loop_run_once(l, 100);
	is_int(done, 100 + LAB_OK, "deploy done");
	is_int(qemu_boot_read(kdir, &r, &found, &e), LAB_OK, "deploy's boot file readable");
	ok(found && strcmp(r.kernel, kimg) == 0 && strcmp(r.initrd, kird) == 0 &&
	   strcmp(r.append, "quiet mmc_block.fua=on mmc_core.disable_cqe=0") == 0,
	   "boot file holds the job's kernel, initrd and command line");
	qemu_boot_free(&r);
	struct kernel_cfg k2 = {.name = "k2", .image = kimg};
	ctx.kernel = &k2;
	done = 0;
	deploy_run(d, &ctx, deploy_cb, &done);
	for (int i = 0; i < 50 && !done; i++)
		loop_run_once(l, 100);
	is_int(done, 100 + LAB_EUSAGE, "a kernel without initrd is a configuration error");
	deploy_free(d);

	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ok(system(cmd) == 0, "cleanup");
	loop_free(l);
	return tap_done();
}
