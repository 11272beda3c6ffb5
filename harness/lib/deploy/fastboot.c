/*
 * deploy/fastboot.c - flash a board through the Android fastboot protocol
 * over libusb (deploy method "fastboot"), fully asynchronous on the loop.
 *
 * Sequence: [U-Boot: type `fastboot usb 0`] -> wait for the fastboot
 * interface (class ff/42/03, optional serial/location) -> getvar
 * max-download-size -> oem/erase commands -> for each flash entry: getvar
 * partition-size (an image larger than the partition is refused before any
 * byte moves), then download + flash; an image larger than max-download-size
 * is sent as sparse pieces (sparse_split) -> finish (continue, reboot, or
 * download + boot the kernel image).  With U-Boot, `continue` makes its
 * fastboot command return, and the board boots from the prompt afterwards.
 *
 * Replies: INFO/TEXT (logged, more follows), OKAY, FAIL<msg>, DATA<8 hex>.
 * Every failure names the step, the partition, the piece and what the
 * device said.
 */
#include "config.h"
#include "deploy.h"
#include "sparse.h"
#include "uboot.h"
#include "usb.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FIN_CONTINUE, FIN_REBOOT, FIN_BOOT, FIN_NONE };
static const char *const fin_names[] = {"continue", "reboot", "boot", "none", NULL};

struct fb_cfg {
	char *serial;
	char *location;
	struct cfg_node *flash;      /* map: partition -> image path */
	struct opt_strlist erase;
	struct opt_strlist oem;
	int finish;
	char *uboot_cmd;
	uint64_t wait_ms;
	uint64_t max_download;       /* 0: ask the device */
	uint64_t block_size;
};

static const struct opt fb_opts[] = {
	{.key = "serial", .type = OPT_STR, .offset = offsetof(struct fb_cfg, serial),
	 .help = "USB serial of the fastboot device (`fastboot devices`, `emmclab board list-usb`)"},
	{.key = "location", .type = OPT_STR, .offset = offsetof(struct fb_cfg, location),
	 .help = "USB port path BUS-PORT.PORT... of the fastboot device"},
	{.key = "flash", .type = OPT_NODE, .offset = offsetof(struct fb_cfg, flash),
	 .help = "map partition: image (raw or sparse; split to fit max-download-size)"},
	{.key = "erase", .type = OPT_STRLIST, .offset = offsetof(struct fb_cfg, erase),
	 .help = "partitions to erase first"},
	{.key = "oem", .type = OPT_STRLIST, .offset = offsetof(struct fb_cfg, oem),
	 .help = "`oem ...` commands to run first (e.g. \"format\")"},
	{.key = "finish", .type = OPT_ENUM, .offset = offsetof(struct fb_cfg, finish), .def = "continue",
	 .choices = fin_names,
	 .help = "continue (bootloader carries on), reboot, boot (the kernel image), none"},
	{.key = "uboot_cmd", .type = OPT_STR, .offset = offsetof(struct fb_cfg, uboot_cmd),
	 .def = "fastboot usb 0", .help = "typed at the U-Boot prompt to enter fastboot (\"\": already in fastboot)"},
	{.key = "wait", .type = OPT_DURATION, .offset = offsetof(struct fb_cfg, wait_ms), .def = "30s",
	 .min = 0, .max = 600000, .help = "how long to wait for the fastboot device to appear"},
	{.key = "max_download", .type = OPT_SIZE, .offset = offsetof(struct fb_cfg, max_download),
	 .def = "0", .min = 0, .max = 4294967295.0,
	 .help = "override max-download-size (0: ask the device)"},
	{.key = "block_size", .type = OPT_SIZE, .offset = offsetof(struct fb_cfg, block_size),
	 .def = "4KiB", .min = 512, .max = 1048576, .help = "sparse block size for raw images"},
	{0},
};

#define FB_REPLY_MAX 256
#define FB_CMD_MAX 4096
#define FB_CHUNK (1024 * 1024)
#define FB_CMD_MS 5000
#define FB_REPLY_MS 600000  /* flash/erase of a big partition: the deploy timeout bounds it too */
#define FB_POLL_MS 250

struct fb_flash {
	char *part;
	char *path;
};

enum fb_phase { PH_WAIT, PH_MAX, PH_OEM, PH_ERASE, PH_PSIZE, PH_DATA, PH_FLASH, PH_FINISH,
		PH_BOOTDL, PH_WAIT_UBOOT, PH_DONE };

struct fb {
	struct deploy *d;
	struct fb_cfg *c;
	struct usb_ctx *u;
	struct usb_dev *dev;
	struct usb_xfer *x;
	uint8_t ep_in, ep_out;
	struct fb_flash *fl;
	size_t nfl;
	const struct deploy_ctx *ctx;
	char *kernel_image;
	struct uboot *ub;
	bool ub_busy, ub_done;
	int ub_rc;
	/* progress */
	enum fb_phase ph;
	size_t idx;          /* oem/erase/flash index */
	uint64_t max_dl;
	uint64_t wait_until;
	struct loop_timer timer;
	/* current image */
	struct sparse_image img;
	bool img_open;
	struct sparse_image *pieces;
	size_t npieces, piece;
	/* download in progress */
	struct sparse_image *dl;   /* serialised source, or NULL for raw bytes of img */
	bool dl_raw;
	uint64_t dl_size, dl_off;
	uint8_t *buf;
	char cmd[FB_CMD_MAX];
	char info[512];       /* last INFO/TEXT lines */
	void (*on_okay)(struct fb *f, const char *payload);
	void (*on_fail)(struct fb *f, const char *payload); /* NULL: FAIL ends the deploy */
	bool expect_data;
	/* failure reported from the loop */
	int fail_rc;
	char fail_msg[1200];
	bool finished;
	unsigned long long bytes_sent;
};

static void fb_next(struct fb *f);
static void fb_read_reply(struct fb *f);
static void send_data(struct fb *f);

static void fb_close_usb(struct fb *f)
{
	if (f->x) {
		usb_xfer_cancel(f->x);
		f->x = NULL;
	}
	usb_dev_close(f->dev);
	f->dev = NULL;
}

static void fb_free_image(struct fb *f)
{
	for (size_t i = 0; i < f->npieces; i++)
		sparse_free(&f->pieces[i]);
	free(f->pieces);
	f->pieces = NULL;
	f->npieces = 0;
	if (f->img_open)
		sparse_free(&f->img);
	f->img_open = false;
}

static void fb_reset(struct fb *f)
{
	loop_timer_stop(f->d->loop, &f->timer);
	fb_close_usb(f);
	fb_free_image(f);
	if (f->ub && f->ub_busy)
		uboot_cancel(f->ub);
	f->ub_busy = false;
	f->ub = NULL;
	free(f->buf);
	f->buf = NULL;
}

static void on_fail_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct fb *f = arg;
	if (f->ph == PH_WAIT && !f->finished) {
		fb_next(f); /* the device poll */
		return;
	}
	deploy_complete(f->d, f->fail_rc, "%s", f->fail_msg);
}

/* End the deploy with an error; always from the loop (may run inside run()). */
static void fb_fail(struct fb *f, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fb_fail(struct fb *f, int rc, const char *fmt, ...)
{
	if (f->finished)
		return;
	f->finished = true;
	char msg[500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (f->info[0])
		snprintf(f->fail_msg, sizeof f->fail_msg, "fastboot on %s: %s (device said: %.200s)",
			 f->d->board, msg, f->info);
	else
		snprintf(f->fail_msg, sizeof f->fail_msg, "fastboot on %s: %s", f->d->board, msg);
	f->fail_rc = rc;
	fb_reset(f);
	f->ph = PH_DONE;
	loop_timer_start(f->d->loop, &f->timer, 0);
}

static void fb_succeed(struct fb *f)
{
	f->finished = true;
	f->ph = PH_DONE;
	fb_reset(f);
	f->fail_rc = LAB_OK;
	snprintf(f->fail_msg, sizeof f->fail_msg, "fastboot on %s: done, %llu bytes sent",
		 f->d->board, f->bytes_sent);
	loop_timer_start(f->d->loop, &f->timer, 0);
}

/* ---- transport -------------------------------------------------------- */

static void reply_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct fb *f = arg;
	f->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		fb_fail(f, LAB_EINFRA, "no reply to '%s': %s", f->cmd, usb_status_str(status));
		return;
	}
	char r[FB_REPLY_MAX + 1];
	if (len > FB_REPLY_MAX)
		len = FB_REPLY_MAX;
	memcpy(r, data, len);
	r[len] = '\0';
	if (len < 4) {
		fb_fail(f, LAB_EPROTO, "short reply '%s' to '%s'", r, f->cmd);
		return;
	}
	if (memcmp(r, "INFO", 4) == 0 || memcmp(r, "TEXT", 4) == 0) {
		/* keep the last line for messages; more follows */
		lab_strlcpy(f->info, r + 4, sizeof f->info);
		fb_read_reply(f);
		return;
	}
	if (memcmp(r, "FAIL", 4) == 0) {
		f->info[0] = '\0';
		void (*fcb)(struct fb *, const char *) = f->on_fail;
		f->on_fail = NULL;
		f->on_okay = NULL;
		if (fcb)
			fcb(f, r + 4);
		else
			fb_fail(f, LAB_EINFRA, "'%s' failed: %s", f->cmd, r + 4);
		return;
	}
	if (memcmp(r, "DATA", 4) == 0) {
		if (!f->expect_data) {
			fb_fail(f, LAB_EPROTO, "unexpected DATA reply to '%s'", f->cmd);
			return;
		}
		uint64_t n = strtoull(r + 4, NULL, 16);
		if (n != f->dl_size) {
			fb_fail(f, LAB_EPROTO, "device wants %llu bytes, we announced %llu",
				(unsigned long long)n, (unsigned long long)f->dl_size);
			return;
		}
		f->expect_data = false;
		f->dl_off = 0;
		send_data(f); /* the data phase */
		return;
	}
	if (memcmp(r, "OKAY", 4) == 0) {
		if (f->expect_data) {
			fb_fail(f, LAB_EPROTO, "OKAY instead of DATA to '%s'", f->cmd);
			return;
		}
		f->info[0] = '\0';
		void (*cb)(struct fb *, const char *) = f->on_okay;
		f->on_okay = NULL;
		f->on_fail = NULL;
		cb(f, r + 4);
		return;
	}
	fb_fail(f, LAB_EPROTO, "unknown reply '%.40s' to '%s'", r, f->cmd);
}

static void fb_read_reply(struct fb *f)
{
	f->x = usb_transfer(f->dev, LIBUSB_TRANSFER_TYPE_BULK, f->ep_in, NULL, FB_REPLY_MAX, false,
			    FB_REPLY_MS, reply_done, f);
	if (!f->x)
		fb_fail(f, LAB_EINFRA, "cannot read the reply to '%s' (device gone?)", f->cmd);
}

static void cmd_sent(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	LAB_UNUSED(len);
	struct fb *f = arg;
	f->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		fb_fail(f, LAB_EINFRA, "sending '%s' failed: %s", f->cmd, usb_status_str(status));
		return;
	}
	fb_read_reply(f);
}

static void fb_command(struct fb *f, void (*on_okay)(struct fb *, const char *), const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fb_command(struct fb *f, void (*on_okay)(struct fb *, const char *), const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(f->cmd, sizeof f->cmd, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof f->cmd) {
		fb_fail(f, LAB_EUSAGE, "command too long");
		return;
	}
	f->on_okay = on_okay;
	f->on_fail = NULL;
	f->info[0] = '\0';
	f->x = usb_transfer(f->dev, LIBUSB_TRANSFER_TYPE_BULK, f->ep_out, f->cmd, (size_t)n, false,
			    FB_CMD_MS, cmd_sent, f);
	if (!f->x)
		fb_fail(f, LAB_EINFRA, "cannot send '%s' (device gone?)", f->cmd);
}

/* ---- values ------------------------------------------------------------ */

/* Sizes come as "0x20000000", "536870912" or bare padded hex "20000000"
 * (some bootloaders): 0x -> hex; hex letters or a leading 0 -> hex; else decimal. */
static int parse_size(const char *s, uint64_t *out)
{
	while (*s == ' ')
		s++;
	if (!*s)
		return -1;
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	} else if (s[0] == '0' && s[1]) {
		base = 16;
	} else {
		for (const char *p = s; *p; p++)
			if ((*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))
				base = 16;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, base);
	while (*end == ' ')
		end++;
	if (errno || *end || end == s)
		return -1;
	*out = v;
	return 0;
}

/* ---- steps ------------------------------------------------------------- */

static void got_max(struct fb *f, const char *payload)
{
	uint64_t v;
	if (f->c->max_download) {
		f->max_dl = f->c->max_download;
	} else if (parse_size(payload, &v) == 0 && v >= 4096) {
		f->max_dl = v;
	} else {
		fb_fail(f, LAB_EPROTO, "max-download-size '%s' unreadable: set max_download", payload);
		return;
	}
	f->ph = PH_OEM;
	f->idx = 0;
	fb_next(f);
}

static void step_done(struct fb *f, const char *payload)
{
	LAB_UNUSED(payload);
	f->idx++;
	fb_next(f);
}

static void flashed(struct fb *f, const char *payload)
{
	LAB_UNUSED(payload);
	f->piece++;
	if (f->piece < (f->npieces ? f->npieces : 1)) {
		f->ph = PH_DATA;
	} else {
		fb_free_image(f);
		f->idx++;
		f->ph = PH_PSIZE;
	}
	fb_next(f);
}

static void downloaded(struct fb *f, const char *payload)
{
	LAB_UNUSED(payload);
	if (f->ph == PH_BOOTDL) {
		fb_command(f, step_done, "boot");
		f->ph = PH_FINISH;
		f->idx = 1;
		return;
	}
	f->ph = PH_FLASH;
	fb_command(f, flashed, "flash:%s", f->fl[f->idx].part);
}

/* The image is open; decide raw / sparse / split and start the first download. */
static void plan_image(struct fb *f)
{
	struct lab_err e = {0};
	f->piece = 0;
	f->npieces = 0;
	/* Raw or sparse, a file that fits goes as it is; else sparse pieces. */
	if (f->img.src_size <= f->max_dl) {
		f->ph = PH_DATA;
		fb_next(f);
		return;
	}
	if (sparse_split(&f->img, f->max_dl, &f->pieces, &f->npieces, &e)) {
		fb_fail(f, LAB_EUSAGE, "%s: %s", f->fl[f->idx].path, e.msg);
		return;
	}
	f->ph = PH_DATA;
	fb_next(f);
}

static void got_psize(struct fb *f, const char *payload)
{
	uint64_t psize;
	const struct fb_flash *fl = &f->fl[f->idx];
	uint64_t need = f->img.was_sparse ? sparse_expanded_size(&f->img) : f->img.src_size;
	if (parse_size(payload, &psize) == 0 && psize > 0 && need > psize) {
		fb_fail(f, LAB_EUSAGE, "image %s (%llu bytes) is larger than partition %s (%llu bytes)",
			fl->path, (unsigned long long)need, fl->part, (unsigned long long)psize);
		return;
	}
	plan_image(f);
}

/* A device without partition-size: flash anyway (the device checks). */
static void psize_unknown(struct fb *f, const char *payload)
{
	LAB_UNUSED(payload);
	plan_image(f);
}

static void start_download(struct fb *f, struct sparse_image *src, bool raw, uint64_t size)
{
	f->dl = src;
	f->dl_raw = raw;
	f->dl_size = size;
	f->dl_off = 0;
	f->expect_data = true;
	fb_command(f, NULL, "download:%08llx", (unsigned long long)size);
}

static void data_sent(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	struct fb *f = arg;
	f->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		const char *what = f->ph == PH_BOOTDL ? "the kernel image" : f->fl[f->idx].part;
		fb_fail(f, LAB_EINFRA, "download of %s (piece %zu/%zu) failed after %llu of %llu bytes: %s",
			what, f->piece + 1, f->npieces ? f->npieces : 1,
			(unsigned long long)f->dl_off, (unsigned long long)f->dl_size,
			usb_status_str(status));
		return;
	}
	f->dl_off += len;
	f->bytes_sent += len;
	send_data(f);
}

static void send_data(struct fb *f)
{
	if (f->dl_off >= f->dl_size) {
		f->on_okay = downloaded;
		fb_read_reply(f);
		return;
	}
	size_t n = f->dl_size - f->dl_off < FB_CHUNK ? (size_t)(f->dl_size - f->dl_off) : FB_CHUNK;
	if (!f->buf)
		f->buf = xmalloc(FB_CHUNK);
	struct lab_err e = {0};
	int rc;
	if (f->dl_raw) {
		ssize_t r = pread(f->dl->fd, f->buf, n, (off_t)f->dl_off);
		rc = r == (ssize_t)n ? LAB_OK : LAB_ERR(&e, LAB_EINFRA, "read: %s",
							 r < 0 ? strerror(errno) : "short read");
	} else {
		rc = sparse_serialize(f->dl, f->dl_off, f->buf, n, &e);
	}
	if (rc) {
		fb_fail(f, rc, "reading the image: %s", e.msg);
		return;
	}
	/* Copied, not borrowed: fb_reset() frees f->buf while a cancelled
	 * transfer may still be in libusb's hands. */
	f->x = usb_transfer(f->dev, LIBUSB_TRANSFER_TYPE_BULK, f->ep_out, f->buf, n, false, 30000,
			    data_sent, f);
	if (!f->x)
		fb_fail(f, LAB_EINFRA, "cannot send data (device gone?)");
}

static int fb_try_open(struct fb *f, struct lab_err *e, size_t *nfound)
{
	struct usb_match m;
	usb_match_init(&m, "fastboot device");
	m.iface_class = 0xff;
	m.iface_subclass = 0x42;
	m.iface_protocol = 0x03;
	m.serial = f->c->serial;
	m.location = f->c->location;
	struct usb_info found[4];
	*nfound = usb_find_all(f->u, &m, found, 4);
	if (*nfound != 1)
		return LAB_EINFRA;
	int rc = usb_dev_open(f->u, &m, -2, &f->dev, e);
	if (rc)
		return rc;
	f->ep_in = usb_dev_ep(f->dev, true, LIBUSB_TRANSFER_TYPE_BULK);
	f->ep_out = usb_dev_ep(f->dev, false, LIBUSB_TRANSFER_TYPE_BULK);
	if (!f->ep_in || !f->ep_out)
		return LAB_ERR(e, LAB_EINFRA, "fastboot interface without two bulk endpoints");
	return LAB_OK;
}

static void fb_next(struct fb *f)
{
	if (f->finished)
		return;
	switch (f->ph) {
	case PH_WAIT: {
		struct lab_err e = {0};
		size_t n = 0;
		int rc = fb_try_open(f, &e, &n);
		if (rc == LAB_OK) {
			f->ph = PH_MAX;
			fb_next(f);
			return;
		}
		if (n > 1) {
			fb_fail(f, LAB_EINFRA, "%zu fastboot devices%s%s: ambiguous, set serial or location", n,
				f->c->serial ? " with serial " : "", f->c->serial ? f->c->serial : "");
			return;
		}
		if (n == 1) { /* found but not usable (permissions, claim) */
			fb_fail(f, rc, "%s", e.msg);
			return;
		}
		if (loop_now_ms(f->d->loop) >= f->wait_until) {
			fb_fail(f, LAB_ETIMEOUT, "no fastboot device%s%s%s%s appeared within %llu ms",
				f->c->serial ? " with serial " : "", f->c->serial ? f->c->serial : "",
				f->c->location ? " at " : "", f->c->location ? f->c->location : "",
				(unsigned long long)f->c->wait_ms);
			return;
		}
		loop_timer_start(f->d->loop, &f->timer, FB_POLL_MS);
		return;
	}
	case PH_MAX:
		fb_command(f, got_max, "getvar:max-download-size");
		return;
	case PH_OEM:
		if (f->idx < f->c->oem.n) {
			fb_command(f, step_done, "oem %s", f->c->oem.v[f->idx]);
			return;
		}
		f->ph = PH_ERASE;
		f->idx = 0;
		fb_next(f);
		return;
	case PH_ERASE:
		if (f->idx < f->c->erase.n) {
			fb_command(f, step_done, "erase:%s", f->c->erase.v[f->idx]);
			return;
		}
		f->ph = PH_PSIZE;
		f->idx = 0;
		fb_next(f);
		return;
	case PH_PSIZE: {
		if (f->idx >= f->nfl) {
			f->ph = PH_FINISH;
			f->idx = 0;
			fb_next(f);
			return;
		}
		struct lab_err e = {0};
		const struct fb_flash *fl = &f->fl[f->idx];
		if (sparse_open(fl->path, (uint32_t)f->c->block_size, &f->img, &e)) {
			fb_fail(f, e.rc ? e.rc : LAB_EINFRA, "image for %s: %s", fl->part, e.msg);
			return;
		}
		f->img_open = true;
		if (f->img.src_size == 0) {
			fb_fail(f, LAB_EUSAGE, "image %s for %s is empty", fl->path, fl->part);
			return;
		}
		fb_command(f, got_psize, "getvar:partition-size:%s", fl->part);
		f->on_fail = psize_unknown;
		return;
	}
	case PH_DATA:
		if (f->npieces)
			start_download(f, &f->pieces[f->piece], false, sparse_layout(&f->pieces[f->piece]));
		else
			start_download(f, &f->img, true, f->img.src_size); /* the file as it is */
		return;
	case PH_BOOTDL:
	case PH_FLASH:
		return;
	case PH_FINISH:
		if (f->idx > 0 || f->c->finish == FIN_NONE) {
			if (f->ub && f->ub_busy && f->c->finish == FIN_CONTINUE) {
				f->ph = PH_WAIT_UBOOT; /* U-Boot's fastboot command returns now */
				if (f->ub_done)
					fb_next(f);
				return;
			}
			fb_succeed(f);
			return;
		}
		f->idx = 1;
		if (f->c->finish == FIN_CONTINUE) {
			fb_command(f, step_done, "continue");
		} else if (f->c->finish == FIN_REBOOT) {
			fb_command(f, step_done, "reboot");
		} else {
			struct lab_err e = {0};
			if (!f->kernel_image) {
				fb_fail(f, LAB_EUSAGE, "finish: boot needs a kernel image");
				return;
			}
			if (sparse_open(f->kernel_image, 4096, &f->img, &e)) {
				fb_fail(f, LAB_EINFRA, "kernel image: %s", e.msg);
				return;
			}
			f->img_open = true;
			if (f->img.src_size > f->max_dl) {
				fb_fail(f, LAB_EUSAGE, "kernel image %s (%llu bytes) exceeds max-download-size %llu",
					f->kernel_image, (unsigned long long)f->img.src_size,
					(unsigned long long)f->max_dl);
				return;
			}
			f->ph = PH_BOOTDL;
			start_download(f, &f->img, true, f->img.src_size);
		}
		return;
	case PH_WAIT_UBOOT:
		if (!f->ub_done)
			return;
		if (f->ub_rc != LAB_OK) {
			fb_fail(f, f->ub_rc, "U-Boot's '%s' failed: %s", f->c->uboot_cmd, uboot_errmsg(f->ub));
			return;
		}
		f->ub_busy = false;
		fb_succeed(f);
		return;
	case PH_DONE:
		return;
	}
}

static void on_uboot(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct fb *f = arg;
	f->ub_done = true;
	f->ub_rc = rc;
	if (f->finished)
		return;
	if (f->ph == PH_WAIT_UBOOT) {
		fb_next(f);
		return;
	}
	/* fastboot returned before we said continue: it failed or was interrupted */
	f->ub_busy = false;
	fb_fail(f, rc ? rc : LAB_EINFRA, "U-Boot's '%s' ended early: %s", f->c->uboot_cmd,
		rc ? uboot_errmsg(f->ub) : "returned before the flash finished");
}

/* ---- driver ------------------------------------------------------------- */

static int fb_init(struct deploy *d, struct lab_err *e)
{
	struct fb_cfg *c = d->cfg;
	struct fb *f = xcalloc(1, sizeof *f);
	f->d = d;
	f->c = c;
	loop_timer_init(&f->timer, on_fail_timer, f);
	if (c->flash) {
		if (c->flash->kind != CFG_MAP) {
			free(f);
			return cfg_error(e, c->flash, "fastboot flash: expected a map partition: image");
		}
		f->fl = xcalloc(c->flash->n + 1, sizeof *f->fl);
		for (size_t i = 0; i < c->flash->n; i++) {
			const struct cfg_node *v = c->flash->items[i];
			if (v->kind != CFG_SCALAR || !v->value[0]) {
				for (size_t k = 0; k < f->nfl; k++) {
					free(f->fl[k].part);
					free(f->fl[k].path);
				}
				free(f->fl);
				free(f);
				return cfg_error(e, v, "fastboot flash: image path expected");
			}
			f->fl[f->nfl].part = xstrdup(c->flash->keys[i]->value);
			f->fl[f->nfl].path = config_path(v->file, v->value);
			f->nfl++;
		}
	}
	int rc = usb_ctx_get(d->loop, &f->u, e);
	if (rc) {
		for (size_t k = 0; k < f->nfl; k++) {
			free(f->fl[k].part);
			free(f->fl[k].path);
		}
		free(f->fl);
		free(f);
		return rc;
	}
	d->priv = f;
	return LAB_OK;
}

static void fb_fini(struct deploy *d)
{
	struct fb *f = d->priv;
	if (!f)
		return;
	fb_reset(f);
	for (size_t k = 0; k < f->nfl; k++) {
		free(f->fl[k].part);
		free(f->fl[k].path);
	}
	free(f->fl);
	free(f->kernel_image);
	usb_ctx_put(f->u);
	free(f);
}

static void fb_cancel(struct deploy *d)
{
	struct fb *f = d->priv;
	f->finished = true;
	f->ph = PH_DONE;
	fb_reset(f);
}

static int fb_run(struct deploy *d, const struct deploy_ctx *ctx)
{
	struct fb *f = d->priv;
	fb_reset(f);
	f->finished = false;
	f->ctx = NULL; /* ctx is only valid during run() */
	free(f->kernel_image);
	f->kernel_image = ctx->kernel && ctx->kernel->image ? xstrdup(ctx->kernel->image) : NULL;
	f->ph = PH_WAIT;
	f->idx = 0;
	f->bytes_sent = 0;
	f->expect_data = false;
	f->dl_off = 0;
	f->ub_done = false;
	f->wait_until = loop_now_ms(d->loop) + f->c->wait_ms;
	if (ctx->uboot && f->c->uboot_cmd && f->c->uboot_cmd[0]) {
		f->ub = ctx->uboot;
		if (uboot_run(f->ub, f->c->uboot_cmd, d->timeout_ms, on_uboot, f) != LAB_OK)
			return LAB_EINFRA;
		f->ub_busy = true;
		/* give the gadget time to enumerate before the first poll */
		loop_timer_start(d->loop, &f->timer, FB_POLL_MS);
		return LAB_OK;
	}
	loop_timer_start(d->loop, &f->timer, 0);
	return LAB_OK;
}

const struct deploy_driver deploy_fastboot = {
	.name = "fastboot",
	.version = DEPLOY_OPS_VERSION,
	.help = "flash partitions with the fastboot protocol over USB (raw or sparse, split to fit)",
	.options = fb_opts,
	.cfg_size = sizeof(struct fb_cfg),
	.flags = DEPLOY_AT_UBOOT,
	.init = fb_init,
	.fini = fb_fini,
	.run = fb_run,
	.cancel = fb_cancel,
};
