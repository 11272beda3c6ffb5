/* test_deploy_fastboot.c - deploy fastboot against a umockdev-emulated fastboot device. */
#include "cfgnode.h"
#include "deploy.h"
#include "sparse.h"
#include "tap.h"
#include "usb.h"
#include "usbmock.h"

#include <fcntl.h>

/* ---- the emulated fastboot device ---------------------------------------- */

struct fbdev {
	uint32_t max_dl;
	uint8_t *part;
	size_t part_size;
	uint8_t *dl;
	size_t dl_expect, dl_have;
	bool in_data;
	long fail_after;   /* >= 0: OUT transfers fail once this many data bytes arrived */
	size_t data_total;
	unsigned downloads, flashes, sparse_flashes;
	size_t biggest_download;
	char log[8192];
};

static void reply(struct mockdev *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct mockdev *m, const char *fmt, ...)
{
	char buf[300];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	mock_queue_in(m, 0x81, buf, (size_t)n, 0);
}

/* Apply a download to the partition: raw bytes, or a sparse image (our parser,
 * itself checked against simg2img in test_sparse). */
static int apply(struct fbdev *f)
{
	struct sparse_image img;
	struct lab_err e = {0};
	if (f->dl_have >= 4 && *(uint32_t *)f->dl == SPARSE_MAGIC) {
		if (sparse_parse_mem(f->dl, f->dl_have, &img, &e))
			return -1;
		if (sparse_expanded_size(&img) > f->part_size) {
			sparse_free(&img);
			return -2;
		}
		uint64_t blk = 0;
		for (size_t i = 0; i < img.n; i++) {
			const struct sparse_chunk *c = &img.c[i];
			uint64_t at = blk * img.blk_sz, bytes = (uint64_t)c->blocks * img.blk_sz;
			if (c->type == SPARSE_RAW)
				memcpy(f->part + at, f->dl + c->src, bytes);
			else if (c->type == SPARSE_FILL)
				for (uint64_t k = 0; k < bytes; k += 4)
					memcpy(f->part + at + k, &c->fill, 4);
			blk += c->blocks;
		}
		sparse_free(&img);
		f->sparse_flashes++;
		return 0;
	}
	if (f->dl_have > f->part_size)
		return -2;
	memcpy(f->part, f->dl, f->dl_have);
	return 0;
}

static int fb_out(struct mockdev *m, uint8_t ep, const uint8_t *data, size_t len)
{
	struct fbdev *f = m->state;
	(void)ep;
	if (f->in_data) {
		if (f->fail_after >= 0 && f->data_total + len > (size_t)f->fail_after)
			return -EPROTO; /* the cable came out */
		size_t n = len;
		if (n > f->dl_expect - f->dl_have)
			n = f->dl_expect - f->dl_have;
		memcpy(f->dl + f->dl_have, data, n);
		f->dl_have += n;
		f->data_total += n;
		if (f->dl_have == f->dl_expect) {
			f->in_data = false;
			reply(m, "OKAY");
		}
		return 0;
	}
	char cmd[300];
	size_t n = len < sizeof cmd - 1 ? len : sizeof cmd - 1;
	memcpy(cmd, data, n);
	cmd[n] = '\0';
	size_t ll = strlen(f->log);
	snprintf(f->log + ll, sizeof f->log - ll, "%s|", cmd);
	unsigned long long v;
	if (strcmp(cmd, "getvar:max-download-size") == 0) {
		reply(m, "OKAY0x%08x", f->max_dl);
	} else if (strncmp(cmd, "getvar:partition-size:", 22) == 0) {
		if (strcmp(cmd + 22, "userdata") == 0)
			reply(m, "OKAY0x%016zx", f->part_size);
		else
			reply(m, "FAILunknown partition");
	} else if (sscanf(cmd, "download:%llx", &v) == 1) {
		if (v > f->max_dl) {
			reply(m, "FAILdata too large");
		} else {
			free(f->dl);
			f->dl = malloc(v ? v : 1);
			f->dl_expect = v;
			f->dl_have = 0;
			f->in_data = true;
			f->downloads++;
			if (v > f->biggest_download)
				f->biggest_download = v;
			reply(m, "DATA%08llx", v);
		}
	} else if (strncmp(cmd, "flash:", 6) == 0) {
		if (strcmp(cmd + 6, "userdata") != 0) {
			reply(m, "FAILpartition does not exist");
		} else {
			reply(m, "INFOwriting '%s'...", cmd + 6);
			int r = apply(f);
			if (r == 0) {
				f->flashes++;
				reply(m, "OKAY");
			} else {
				reply(m, r == -2 ? "FAILimage too large for partition" : "FAILbad sparse image");
			}
		}
	} else if (strncmp(cmd, "erase:", 6) == 0) {
		reply(m, "OKAY");
	} else if (strncmp(cmd, "oem ", 4) == 0) {
		reply(m, "INFOoem: %s", cmd + 4);
		reply(m, "INFOdone");
		reply(m, "OKAY");
	} else if (strcmp(cmd, "continue") == 0 || strcmp(cmd, "reboot") == 0 || strcmp(cmd, "boot") == 0) {
		reply(m, "OKAY");
	} else {
		reply(m, "FAILunknown command");
	}
	return 0;
}

static const uint8_t fb_iface[] = {MOCK_IFACE(0, 2, 0xff, 0x42, 0x03), MOCK_EP(0x81, 2, 512),
				   MOCK_EP(0x01, 2, 512)};
static const uint8_t hub_iface[] = {MOCK_IFACE(0, 1, 9, 0, 0), MOCK_EP(0x81, 3, 2)};

/* Every fake device's buffers, freed at the end (a struct may be reused). */
static struct fbdev *fb_all[16];
static size_t fb_n;

static void fb_free_all(void)
{
	for (size_t i = 0; i < fb_n; i++) {
		free(fb_all[i]->part);
		free(fb_all[i]->dl);
	}
	fb_n = 0;
}

static struct mockdev *add_fb(const char *loc, const char *serial, struct fbdev *f, size_t part_size)
{
	bool known = false;
	for (size_t i = 0; i < fb_n; i++)
		if (fb_all[i] == f) {
			free(f->part);
			free(f->dl);
			known = true;
		}
	if (!known && fb_n < sizeof fb_all / sizeof fb_all[0])
		fb_all[fb_n++] = f;
	memset(f, 0, sizeof *f);
	f->max_dl = 256 * 1024;
	f->part_size = part_size;
	f->part = calloc(1, part_size);
	f->fail_after = -1;
	struct mockdev *m = mock_add(loc, 0x18d1, 0x4ee0, 0, "U-Boot", "USB download gadget", serial,
				     fb_iface, sizeof fb_iface, 1);
	m->out = fb_out;
	m->state = f;
	return m;
}

/* ---- running a deploy ------------------------------------------------------ */

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

static struct res deploy_yaml(struct loop *l, const char *yaml)
{
	struct res r = {0};
	struct lab_err e = {0};
	struct cfg_node *n = NULL;
	struct deploy *d = NULL;
	if (cfg_parse_buffer("test.yaml", yaml, strlen(yaml), &n, &e) || deploy_new(l, "dut1", n, &d, &e)) {
		r.rc = -1;
		snprintf(r.msg, sizeof r.msg, "setup: %s", e.msg);
		cfg_free(n);
		return r;
	}
	cfg_free(n);
	struct deploy_ctx ctx = {0};
	deploy_run(d, &ctx, done_cb, &r);
	if (r.done)
		snprintf(r.msg, sizeof r.msg, "CALLBACK INSIDE deploy_run");
	uint64_t t0 = lab_now_ms();
	while (!r.done && lab_now_ms() - t0 < 20000)
		loop_run_once(l, 50);
	if (!r.done) {
		r.rc = -2;
		snprintf(r.msg, sizeof r.msg, "no completion");
	}
	deploy_free(d);
	return r;
}

static char dir[128];

static const char *write_img(const char *name, const uint8_t *data, size_t len)
{
	static char path[8][300];
	static int k;
	k = (k + 1) % 8;
	snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
	int fd = open(path[k], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		perror("write image");
	close(fd);
	return path[k];
}

int main(int argc, char **argv)
{
	(void)argc;
	mock_reexec(argv);
	mock_start();
	snprintf(dir, sizeof dir, "/tmp/emmclab-fb-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	struct loop *l = loop_new();
	char y[1500];

	mock_add("usb1", 0x1d6b, 0x0002, 9, "Linux", "xHCI Host Controller", NULL, hub_iface,
		 sizeof hub_iface, 1);
	struct fbdev f;
	struct mockdev *m = add_fb("1-2", "FB0001", &f, 8 * 1024 * 1024);

	/* Image data: random first MiB, a zero gap, a pattern, random tail. */
	size_t len = 3 * 1024 * 1024;
	uint8_t *img = calloc(1, len);
	uint32_t s = 7;
	for (size_t i = 0; i < len; i++) {
		s = s * 1103515245u + 12345u;
		if (i < 1024 * 1024 || i >= 2 * 1024 * 1024 + 512 * 1024)
			img[i] = (uint8_t)(s >> 16);
	}

	/* 1. A small raw image goes as it is. */
	const char *small = write_img("small.raw", img, 100 * 1024);
	snprintf(y, sizeof y, "{driver: fastboot, serial: FB0001, wait: 2s, flash: {userdata: %s}}", small);
	struct res r = deploy_yaml(l, y);
	is_int(r.rc, LAB_OK, "small raw image flashed");
	ok(r.rc == LAB_OK || printf("# %s\n", r.msg), "message");
	ok(memcmp(f.part, img, 100 * 1024) == 0, "partition holds the image");
	is_int(f.downloads, 1, "one download");
	is_int(f.sparse_flashes, 0, "sent raw");
	ok(strstr(f.log, "getvar:max-download-size|getvar:partition-size:userdata|download:00019000|flash:userdata|continue|") != NULL,
	   "command sequence: %s", f.log);

	/* 2. A raw image larger than max-download-size: sparse pieces. */
	memset(f.part, 0xaa, f.part_size);
	f.downloads = f.flashes = f.sparse_flashes = 0;
	f.biggest_download = 0;
	f.log[0] = '\0';
	const char *big = write_img("big.raw", img, len);
	snprintf(y, sizeof y, "{driver: fastboot, serial: FB0001, flash: {userdata: %s}, oem: [format], erase: [cache]}", big);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_OK, "big raw image flashed in pieces");
	ok(r.rc == LAB_OK || printf("# %s\n", r.msg), "message");
	ok(memcmp(f.part, img, len) == 0, "partition holds the whole image");
	ok(f.downloads >= 12 && f.flashes == f.downloads && f.sparse_flashes == f.flashes,
	   "%u sparse pieces, each downloaded and flashed", f.downloads);
	ok(f.biggest_download <= f.max_dl, "no piece above max-download-size (%zu <= %u)", f.biggest_download, f.max_dl);
	ok(strncmp(f.log, "getvar:max-download-size|oem format|erase:cache|getvar:partition-size:userdata|", 79) == 0,
	   "oem and erase run before flashing");

	/* 3. A sparse input file larger than max-download-size: resparsed. */
	struct sparse_image si;
	struct lab_err e = {0};
	char simg[300];
	snprintf(simg, sizeof simg, "%s/big.simg", dir);
	ok(sparse_open(big, 4096, &si, &e) == LAB_OK && sparse_write_file(&si, simg, &e) == LAB_OK, "make a sparse input");
	sparse_free(&si);
	memset(f.part, 0x55, f.part_size);
	f.downloads = f.sparse_flashes = f.flashes = 0;
	snprintf(y, sizeof y, "{driver: fastboot, flash: {userdata: %s}, finish: reboot}", simg);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_OK, "sparse input flashed in pieces (no serial: the only device)");
	ok(memcmp(f.part, img, len) == 0, "partition holds the image");
	ok(f.sparse_flashes >= 2, "resparsed into %u pieces", f.sparse_flashes);
	ok(strstr(f.log, "reboot|") != NULL, "finish: reboot sent");

	/* 4. Image larger than the partition: refused before any download. */
	struct fbdev f2;
	mock_remove(m);
	m = add_fb("1-3", "FB0002", &f2, 1024 * 1024);
	snprintf(y, sizeof y, "{driver: fastboot, serial: FB0002, flash: {userdata: %s}}", big);
	f2.downloads = 0;
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_EUSAGE, "image larger than the partition: error");
	ok(strstr(r.msg, "larger than partition userdata") != NULL, "message: %s", r.msg);
	is_int(f2.downloads, 0, "nothing downloaded");

	/* 5. The device refuses: FAIL with its message. */
	snprintf(y, sizeof y, "{driver: fastboot, flash: {nosuch: %s}}", small);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_EINFRA, "flash to a missing partition: error");
	ok(strstr(r.msg, "'flash:nosuch' failed: partition does not exist") != NULL, "FAIL text kept: %s", r.msg);

	/* 6. The device dies mid-transfer. */
	mock_remove(m);
	m = add_fb("1-3", "FB0002", &f2, 8 * 1024 * 1024);
	f2.fail_after = 600 * 1024;
	snprintf(y, sizeof y, "{driver: fastboot, flash: {userdata: %s}}", big);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_EINFRA, "transfer error mid-download: error");
	ok(strstr(r.msg, "failed after") && strstr(r.msg, "piece 3/"), "names the piece and bytes: %s", r.msg);

	/* 7. Two fastboot devices, no serial: ambiguous; a serial picks one. */
	struct fbdev f3;
	add_fb("1-4", "FB0003", &f3, 8 * 1024 * 1024);
	snprintf(y, sizeof y, "{driver: fastboot, flash: {userdata: %s}}", small);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_EINFRA, "two devices without serial: error");
	ok(strstr(r.msg, "ambiguous") != NULL, "message: %s", r.msg);
	snprintf(y, sizeof y, "{driver: fastboot, serial: FB0003, flash: {userdata: %s}}", small);
	r = deploy_yaml(l, y);
	ok(r.rc == LAB_OK && memcmp(f3.part, img, 100 * 1024) == 0, "serial FB0003 selects it (%s)", r.msg);
	snprintf(y, sizeof y, "{driver: fastboot, location: 1-4, flash: {userdata: %s}}", small);
	r = deploy_yaml(l, y);
	is_int(r.rc, LAB_OK, "location 1-4 selects it");

	/* 8. No device: waits, then times out with a clear message. */
	snprintf(y, sizeof y, "{driver: fastboot, serial: NOSUCH, wait: 600ms, flash: {userdata: %s}}", small);
	uint64_t t0 = lab_now_ms();
	r = deploy_yaml(l, y);
	uint64_t dt = lab_now_ms() - t0;
	is_int(r.rc, LAB_ETIMEOUT, "no device: timeout");
	ok(strstr(r.msg, "no fastboot device with serial NOSUCH") != NULL, "message: %s", r.msg);
	ok(dt >= 500 && dt < 3000, "waited about the configured time (%llu ms)", (unsigned long long)dt);

	/* 9. Missing image file. */
	r = deploy_yaml(l, "{driver: fastboot, serial: FB0003, flash: {userdata: /nonexistent/x.img}}");
	ok(r.rc != LAB_OK && strstr(r.msg, "/nonexistent/x.img"), "missing image named: %s", r.msg);

	loop_free(l);
	fb_free_all();
	mock_free_all();
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	free(img);
	return tap_done();
}
