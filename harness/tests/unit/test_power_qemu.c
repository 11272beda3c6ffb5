/* test_power_qemu.c - the qemu power driver and deploy method of the virtual
 * board, with a fake QEMU (a script that records its arguments and sleeps,
 * or one that fails at start), the boot hand-over file between them, and the
 * persistent media file (created sparse, kept across power cycles). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

	/* any command line: no fixed defaults, a firmware and no kernel (U-Boot loads it) */
	char fw[128];
	snprintf(fw, sizeof fw, "%s/fw", dir);
	snprintf(yaml, sizeof yaml,
		 "{driver: qemu, port: 23461, qemu: %s/fakeq, dir: %s, defaults: [], machine: q35, "
		 "accel: \"\", bios: /usr/lib/u-boot/qemu-x86/u-boot.rom, extra: [-nic, user]}", dir, fw);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7", yaml, &e);
	ok(p != NULL, "kernel-less qemu power: %s", e.msg);
	if (!p)
		return tap_done();
	is_int(p->off_time_ms, 0, "qemu power: no off time by default");
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "on without a kernel: %s", res.msg);
	log = slurp("fw/qemu.log");
	ok(strstr(log, "arg:-bios\narg:/usr/lib/u-boot/qemu-x86/u-boot.rom\n") != NULL, "-bios passed");
	ok(!strstr(log, "arg:-kernel") && !strstr(log, "arg:-append"), "no -kernel, no -append");
	ok(!strstr(log, "arg:-nodefaults") && !strstr(log, "arg:-no-reboot") && !strstr(log, "arg:-accel"),
	   "defaults: [] drops -nodefaults/-display/-no-reboot; accel \"\" drops -accel");
	ok(strstr(log, "arg:-machine\narg:q35\n") && strstr(log, "arg:-nic\narg:user\n"), "machine and extra");
	ok(strstr(log, ",nodelay=on\n") != NULL, "the serial server sets TCP_NODELAY (nodelay=on)");
	free(log);

	/* the serial console on a Unix socket instead of TCP; port or socket, not both */
	run_op(l, p, POWER_OFF, 6000);
	power_free(p);
	snprintf(yaml, sizeof yaml, "{driver: qemu, socket: con.sock, qemu: %s/fakeq, dir: %s}", dir, fw);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7s", yaml, &e);
	ok(p != NULL, "qemu power on a Unix socket: %s", e.msg);
	if (!p)
		return tap_done();
	res = run_op(l, p, POWER_ON, 5000);
	log = slurp("fw/qemu.log");
	snprintf(want, sizeof want, "arg:socket,id=con,path=%s/con.sock,server=on,wait=on\n", fw);
	ok(res.rc == LAB_OK && strstr(log, want) != NULL, "chardev on the socket path (relative to dir): %s", res.msg);
	free(log);
	run_op(l, p, POWER_OFF, 6000);
	power_free(p);
	snprintf(yaml, sizeof yaml, "{driver: qemu, socket: s, port: 1234, dir: %s}", fw);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7t", yaml, &e);
	ok(p == NULL && strstr(e.msg, "port or socket"), "port and socket both: refused (%s)", e.msg);
	snprintf(yaml, sizeof yaml, "{driver: qemu, dir: %s}", fw);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7u", yaml, &e);
	ok(p == NULL && strstr(e.msg, "port or socket"), "neither: refused");
	snprintf(yaml, sizeof yaml,
		 "{driver: qemu, port: 23461, qemu: %s/fakeq, dir: %s, defaults: [], machine: q35, "
		 "accel: \"\", bios: /usr/lib/u-boot/qemu-x86/u-boot.rom, extra: [-nic, user]}", dir, fw);
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7", yaml, &e);
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK, "on again (TCP)");

	/* the power state outlives the object (another process): qemu.pid, liveness-checked */
	char pidf[160];
	snprintf(pidf, sizeof pidf, "%s/qemu.pid", fw);
	ok(access(pidf, R_OK) == 0, "qemu.pid written at power-on");
	power_free(p); /* this "process" ends: QEMU stays on */
	lab_err_clear(&e);
	p = power_from_yaml(l, "b7", yaml, &e);
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "a new driver sees the QEMU it did not start as on");
	res = run_op(l, p, POWER_ON, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "... and power on is a no-op");
	res = run_op(l, p, POWER_OFF, 6000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF && res.ms < 2500,
	   "... and can switch it off (%llu ms)", (unsigned long long)res.ms);
	ok(access(pidf, R_OK) != 0, "qemu.pid removed at power-off");
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF, "state off after another's power-off");
	/* a stale qemu.pid (a dead pid, or one recycled by another program) reads as off */
	FILE *pf = fopen(pidf, "w");
	fprintf(pf, "%d 1\n", (int)getpid());
	fclose(pf);
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF && access(pidf, R_OK) != 0,
	   "a pid whose start time differs is not our QEMU: off, stale file removed");
	power_free(p);

	/* a guest that powers itself off: QEMU exits, the state is off at once */
	write_script("shortq", "#!/bin/sh\nexec sleep 0.6\n");
	snprintf(yaml, sizeof yaml, "{driver: qemu, port: 23462, qemu: %s/shortq, dir: %s}", dir, fw);
	p = power_from_yaml(l, "b8", yaml, &e);
	res = run_op(l, p, POWER_ON, 5000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_ON, "short-lived QEMU on");
	for (int i = 0; i < 15; i++)
		loop_run_once(l, 100);
	res = run_op(l, p, POWER_STATE, 2000);
	ok(res.rc == LAB_OK && res.state == POWER_IS_OFF && access(pidf, R_OK) != 0,
	   "guest power-off: off at once, qemu.pid gone");
	power_free(p);

	/* kernel: wins over a boot file left by an earlier process; a fresh deploy wins over kernel: */
	struct qemu_boot old = {.kernel = "/stale/vmlinuz", .initrd = "/stale/initrd", .append = "stale"};
	qemu_boot_write(fw, &old, &e);
	snprintf(yaml, sizeof yaml,
		 "{driver: qemu, port: 23463, qemu: %s/fakeq, dir: %s, kernel: /own/bzImage, initrd: /own/initrd}",
		 dir, fw);
	p = power_from_yaml(l, "b9", yaml, &e);
	res = run_op(l, p, POWER_ON, 5000);
	log = slurp("fw/qemu.log");
	ok(res.rc == LAB_OK && strstr(log, "arg:/own/bzImage\narg:-initrd\narg:/own/initrd\n") &&
		   !strstr(log, "stale"),
	   "a stale boot file does not win over kernel:");
	free(log);
	run_op(l, p, POWER_OFF, 6000);
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL); /* a distinct mtime even on coarse clocks */
	struct qemu_boot fresh = {.kernel = "/job/vmlinuz", .initrd = "/job/initrd", .append = "mmc_block.fua=on"};
	qemu_boot_write(fw, &fresh, &e);
	res = run_op(l, p, POWER_ON, 5000);
	log = slurp("fw/qemu.log");
	ok(res.rc == LAB_OK && strstr(log, "arg:/job/vmlinuz\n") && strstr(log, "mmc_block.fua=on"),
	   "a boot file a deploy wrote after we started wins");
	free(log);
	run_op(l, p, POWER_OFF, 6000);
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
