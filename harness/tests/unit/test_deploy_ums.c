/* test_deploy_ums.c - deploy ums, host half: wait for the device, write, verify, size check.
 * (The U-Boot half -- typing `ums 0 mmc 0`, Ctrl-C -- goes through uboot.h and is
 * not exercised here: a regular file stands in for the gadget's block device.) */
#include "cfgnode.h"
#include "deploy.h"
#include "tap.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct res {
	int done, rc;
	char msg[700];
};

static void done_cb(struct deploy *d, int rc, const char *msg, void *arg)
{
	(void)d;
	struct res *r = arg;
	r->done++;
	r->rc = rc;
	snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

static struct res run(struct loop *l, const char *yaml, void (*during)(void))
{
	struct res r = {0};
	struct lab_err e = {0};
	struct cfg_node *n = NULL;
	struct deploy *d = NULL;
	if (cfg_parse_buffer("t.yaml", yaml, strlen(yaml), &n, &e) || deploy_new(l, "dut1", n, &d, &e)) {
		r.rc = -1;
		snprintf(r.msg, sizeof r.msg, "setup: %s", e.msg);
		cfg_free(n);
		return r;
	}
	cfg_free(n);
	struct deploy_ctx ctx = {0};
	deploy_run(d, &ctx, done_cb, &r);
	uint64_t t0 = lab_now_ms();
	bool called = false;
	while (!r.done && lab_now_ms() - t0 < 20000) {
		loop_run_once(l, 50);
		if (during && !called && lab_now_ms() - t0 > 300) {
			during();
			called = true;
		}
	}
	deploy_free(d);
	return r;
}

static char dir[128], img[200], dev[200];

static void make_dev(void)
{
	int fd = open(dev, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 4 << 20))
		perror("dev");
	close(fd);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/emmclab-ums-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(img, sizeof img, "%s/disk.img", dir);
	snprintf(dev, sizeof dev, "%s/sdz", dir);
	size_t len = 1536 * 1024 + 100;
	char *data = malloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(i * 7 + i / 4096);
	struct lab_err e = {0};
	ok(lab_write_file_atomic(img, data, len, &e) == LAB_OK, "image written");
	struct loop *l = loop_new();
	char y[600];

	/* The device appears a little later (as the gadget enumerates). */
	snprintf(y, sizeof y, "{driver: ums, image: %s, device: %s, wait: 5s}", img, dev);
	uint64_t t0 = lab_now_ms();
	struct res r = run(l, y, make_dev);
	is_int(r.rc, LAB_OK, "image written to the device once it appeared");
	ok(strstr(r.msg, "read back and compared") != NULL, "message: %s", r.msg);
	ok(lab_now_ms() - t0 >= 300, "waited for the device");
	char *got = NULL;
	size_t glen = 0;
	ok(lab_read_file(dev, 8 << 20, &got, &glen, &e) == LAB_OK && glen == 4 << 20 &&
	   memcmp(got, data, len) == 0, "device holds the image");
	free(got);

	/* Image larger than the device. */
	if (truncate(dev, 1 << 20) != 0)
		perror("truncate");
	r = run(l, y, NULL);
	is_int(r.rc, LAB_EINFRA, "image larger than the device: error");
	ok(strstr(r.msg, "is larger than") != NULL, "message: %s", r.msg);

	/* No device. */
	snprintf(y, sizeof y, "{driver: ums, image: %s, device: %s/none, wait: 400ms}", img, dir);
	r = run(l, y, NULL);
	is_int(r.rc, LAB_ETIMEOUT, "no device: timeout");
	ok(strstr(r.msg, "no block device") != NULL, "message: %s", r.msg);

	/* Neither device nor serial. */
	snprintf(y, sizeof y, "{driver: ums, image: %s}", img);
	r = run(l, y, NULL);
	ok(r.rc == -1 && strstr(r.msg, "set device or serial"), "config refused: %s", r.msg);

	loop_free(l);
	free(data);
	snprintf(y, sizeof y, "rm -rf %s", dir);
	if (system(y) != 0)
		return 1;
	return tap_done();
}
