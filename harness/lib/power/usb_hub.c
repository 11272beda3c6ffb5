/*
 * power/usb_hub.c - per-port power of a USB hub (driver "usb-hub"), the
 * uhubctl method.
 *
 * The hub is named by its location (port path, "1-1.4"; "1" for the root
 * hub of bus 1) and the port.  Before switching, the hub descriptor
 * (0xA0/6, 0x2900 or 0x2A00 for USB3) must say per-port switching
 * (wHubCharacteristics bits 1:0 == 01) and have the port: many hubs do not
 * switch ports individually, and switching such a hub would cut the power
 * of every port or of none.
 *
 * A USB3 hub is two hubs (a USB2 and a USB3 half) that share a BOS
 * container ID; both halves are switched, or the port stays powered
 * through the other half.  The partner is found by reading the BOS
 * descriptor of every hub of the same vendor.
 *
 * Switching: the kernel's port `disable` file (Linux >= 6.0:
 * /sys/bus/usb/devices/<hub>:1.0/<hub>-port<N>/disable, writing 1 powers the
 * port off) when it exists and is writable (method auto/sysfs), otherwise
 * SET_FEATURE/CLEAR_FEATURE(PORT_POWER) (0x23, 3/1, wValue 8).  The port
 * status (0xA3/0, power bit 0x0100 USB2, 0x0200 USB3) is read back after
 * every switch; with the sysfs method and no access to the device, the
 * `disable` file is read back instead.
 */
#include "power.h"
#include "usb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { M_AUTO, M_SYSFS, M_LIBUSB };
static const char *const hub_methods[] = {"auto", "sysfs", "libusb", NULL};

struct hub_cfg {
	char *location;
	int64_t port;
	int method;
	bool pair;
};

static const struct opt hub_opts[] = {
	{.key = "location", .type = OPT_STR, .offset = offsetof(struct hub_cfg, location),
	 .flags = OPT_REQUIRED, .help = "hub port path BUS-PORT.PORT... (\"1\": root hub of bus 1)"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct hub_cfg, port),
	 .flags = OPT_REQUIRED, .min = 1, .max = 31, .help = "hub port number"},
	{.key = "method", .type = OPT_ENUM, .offset = offsetof(struct hub_cfg, method), .def = "auto",
	 .choices = hub_methods, .help = "auto (sysfs disable file, else libusb), sysfs or libusb"},
	{.key = "pair", .type = OPT_BOOL, .offset = offsetof(struct hub_cfg, pair), .def = "true",
	 .help = "also switch the other half of a USB3 hub (same BOS container ID)"},
	{0},
};

#define XFER_MS 2000
#define MAX_HUBS 16

struct hub_t {
	struct usb_info info;
	struct usb_dev *dev;
	bool usb3;
	bool via_sysfs;
	uint8_t cid[16];
	bool has_cid;
};

struct hub {
	struct power *p;
	struct hub_cfg *c;
	struct usb_ctx *u;
	enum power_op op;
	struct hub_t t[2]; /* the named hub, and its other half */
	int nt, ti;
	int step;
	/* partner search */
	struct usb_info cand[MAX_HUBS];
	size_t ncand, ci;
	struct usb_dev *probe;
	struct usb_xfer *x;
	int state_seen;
	struct loop_timer later;
	int later_rc;
	char later_msg[512];
};

static void hub_release(struct hub *h)
{
	if (h->x) {
		usb_xfer_cancel(h->x);
		h->x = NULL;
	}
	for (int i = 0; i < 2; i++) {
		usb_dev_close(h->t[i].dev);
		h->t[i].dev = NULL;
	}
	usb_dev_close(h->probe);
	h->probe = NULL;
}

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct hub *h = arg;
	power_complete(h->p, h->later_rc, h->later_rc ? POWER_UNKNOWN : h->state_seen, "%s",
		       h->later_msg);
}

/* Finish (error or success) from the loop: this may run inside start(). */
static void finish(struct hub *h, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(struct hub *h, int rc, const char *fmt, ...)
{
	h->later_msg[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(h->later_msg, sizeof h->later_msg, fmt, ap);
		va_end(ap);
	}
	h->later_rc = rc;
	hub_release(h);
	loop_timer_start(h->p->loop, &h->later, 0);
}

static int hub_init(struct power *p, struct lab_err *e)
{
	struct hub_cfg *c = p->cfg;
	uint8_t bus, ports[8];
	int np;
	if (usb_parse_location(c->location, &bus, ports, &np))
		return LAB_ERR(e, LAB_EUSAGE, "usb-hub of %s: bad location '%s' (want BUS-PORT.PORT...)",
			       p->board, c->location);
	struct hub *h = xcalloc(1, sizeof *h);
	h->p = p;
	h->c = c;
	loop_timer_init(&h->later, on_later, h);
	int rc = usb_ctx_get(p->loop, &h->u, e);
	if (rc) {
		free(h);
		return rc;
	}
	p->priv = h;
	p->device = xasprintf("usb-hub %s port %lld of %s", c->location, (long long)c->port, p->board);
	return LAB_OK;
}

static void hub_fini(struct power *p)
{
	struct hub *h = p->priv;
	if (!h)
		return;
	loop_timer_stop(p->loop, &h->later);
	hub_release(h);
	usb_ctx_put(h->u);
	free(h);
}

static void hub_cancel(struct power *p)
{
	struct hub *h = p->priv;
	loop_timer_stop(p->loop, &h->later);
	hub_release(h);
}

/* sysfs port directory of hub t, port n */
static void port_dir(const struct hub_t *t, int port, char *buf, size_t n)
{
	const char *loc = t->info.location;
	if (strchr(loc, '-'))
		snprintf(buf, n, "/sys/bus/usb/devices/%s:1.0/%s-port%d", loc, loc, port);
	else /* root hub: usbN, interface N-0:1.0 */
		snprintf(buf, n, "/sys/bus/usb/devices/%s-0:1.0/usb%s-port%d", loc, loc, port);
}

static int sysfs_disable(const struct hub_t *t, int port, int val, bool write_it)
{
	char dir[256], path[300];
	port_dir(t, port, dir, sizeof dir);
	snprintf(path, sizeof path, "%s/disable", dir);
	int fd = open(path, (write_it ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r;
	if (write_it) {
		r = write(fd, val ? "1" : "0", 1) == 1 ? 0 : -1;
	} else {
		char b[8] = "";
		ssize_t n = read(fd, b, sizeof b - 1);
		r = n > 0 ? (b[0] == '1') : -1;
	}
	close(fd);
	return r;
}

static void step(struct hub *h);

/* ---- partner search: BOS container IDs --------------------------------- */

static bool parse_cid(const uint8_t *d, size_t len, uint8_t cid[16])
{
	if (len < 5 || d[1] != 0x0F)
		return false;
	size_t total = (size_t)(d[2] | d[3] << 8);
	if (total > len)
		total = len;
	for (size_t off = d[0]; off + 3 <= total;) {
		uint8_t l = d[off];
		if (l < 3 || off + l > total)
			break;
		if (d[off + 1] == 0x10 && d[off + 2] == 0x04 && l >= 20) {
			memcpy(cid, d + off + 4, 16);
			return true;
		}
		off += l;
	}
	return false;
}

static void probe_next(struct hub *h);

static void probe_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct hub *h = arg;
	h->x = NULL;
	uint8_t cid[16];
	if (status == LIBUSB_TRANSFER_COMPLETED && parse_cid(data, len, cid) &&
	    memcmp(cid, h->t[0].cid, 16) == 0 && h->nt < 2) {
		h->t[1].info = h->cand[h->ci];
		h->t[1].usb3 = h->cand[h->ci].speed >= LIBUSB_SPEED_SUPER;
		h->t[1].dev = h->probe; /* keep it open: we switch it too */
		h->probe = NULL;
		h->nt = 2;
	} else {
		usb_dev_close(h->probe);
		h->probe = NULL;
	}
	h->ci++;
	probe_next(h);
}

static void probe_next(struct hub *h)
{
	while (h->nt < 2 && h->ci < h->ncand) {
		struct usb_match m;
		usb_match_init(&m, h->p->device);
		m.location = h->cand[h->ci].location;
		struct lab_err e = {0};
		if (usb_dev_open(h->u, &m, -1, &h->probe, &e) == LAB_OK) {
			h->x = usb_control(h->probe, 0x80, 6, 0x0F00, 0, NULL, 255, XFER_MS, probe_done, h);
			if (h->x)
				return;
			usb_dev_close(h->probe);
			h->probe = NULL;
		}
		h->ci++;
	}
	h->step = 10; /* partners done: check descriptors */
	h->ti = 0;
	step(h);
}

static void own_bos_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct hub *h = arg;
	h->x = NULL;
	if (status == LIBUSB_TRANSFER_COMPLETED && parse_cid(data, len, h->t[0].cid)) {
		h->t[0].has_cid = true;
		struct usb_match m;
		usb_match_init(&m, h->p->device);
		struct usb_info all[MAX_HUBS];
		size_t n = usb_find_all(h->u, &m, all, MAX_HUBS);
		h->ncand = 0;
		for (size_t i = 0; i < n && i < MAX_HUBS; i++)
			if (all[i].dev_class == 9 && all[i].vid == h->t[0].info.vid &&
			    strcmp(all[i].location, h->t[0].info.location) != 0 &&
			    all[i].bus != h->t[0].info.bus)
				h->cand[h->ncand++] = all[i];
		h->ci = 0;
		probe_next(h);
		return;
	}
	h->step = 10; /* no BOS / no container ID: a USB2-only hub */
	h->ti = 0;
	step(h);
}

/* ---- per-hub steps: descriptor check, switch, read back ------------------ */

static void hubdesc_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct hub *h = arg;
	h->x = NULL;
	struct hub_t *t = &h->t[h->ti];
	if (status != LIBUSB_TRANSFER_COMPLETED || len < 5) {
		finish(h, LAB_EINFRA, "%s: reading the hub descriptor of %s failed: %s", h->p->device,
		       t->info.location, usb_status_str(status));
		return;
	}
	uint8_t nports = data[2];
	uint16_t chars = (uint16_t)(data[3] | data[4] << 8);
	if ((chars & 3) != 1) {
		finish(h, LAB_EUSAGE,
		       "%s: hub %s (%04x:%04x) does not switch port power per port "
		       "(wHubCharacteristics 0x%04x): use another hub or a relay",
		       h->p->device, t->info.location, t->info.vid, t->info.pid, chars);
		return;
	}
	if (h->c->port > nports) {
		finish(h, LAB_EUSAGE, "%s: hub %s has %u ports", h->p->device, t->info.location, nports);
		return;
	}
	h->step = 11;
	step(h);
}

static void switched(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	LAB_UNUSED(len);
	struct hub *h = arg;
	h->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		finish(h, LAB_EINFRA, "%s: PORT_POWER request to %s failed: %s", h->p->device,
		       h->t[h->ti].info.location, usb_status_str(status));
		return;
	}
	h->step = 12;
	step(h);
}

static void status_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct hub *h = arg;
	h->x = NULL;
	struct hub_t *t = &h->t[h->ti];
	if (status != LIBUSB_TRANSFER_COMPLETED || len < 4) {
		finish(h, LAB_EINFRA, "%s: port status of %s failed: %s", h->p->device,
		       t->info.location, usb_status_str(status));
		return;
	}
	uint16_t st = (uint16_t)(data[0] | data[1] << 8);
	int on = !!(st & (t->usb3 ? 0x0200 : 0x0100));
	if (h->op != POWER_STATE && on != (h->op == POWER_ON)) {
		finish(h, LAB_EINFRA, "%s: port still %s on %s after switching (status 0x%04x)",
		       h->p->device, on ? "powered" : "unpowered", t->info.location, st);
		return;
	}
	h->state_seen = on ? POWER_IS_ON : POWER_IS_OFF;
	h->ti++;
	h->step = 10;
	step(h);
}

static void step(struct hub *h)
{
	int port = (int)h->c->port;
	if (h->step >= 10 && h->ti >= h->nt) {
		finish(h, LAB_OK, NULL);
		return;
	}
	struct hub_t *t = &h->t[h->ti];
	switch (h->step) {
	case 10: /* descriptor check (skipped for a state query) */
		if (h->op == POWER_STATE) {
			h->step = 12;
			step(h);
			return;
		}
		if (!t->dev) {
			finish(h, LAB_EINFRA, "%s: cannot open hub %s to check its descriptor",
			       h->p->device, t->info.location);
			return;
		}
		h->x = usb_control(t->dev, 0xA0, 6, t->usb3 ? 0x2A00 : 0x2900, 0, NULL, 71, XFER_MS,
				   hubdesc_done, h);
		break;
	case 11: { /* switch */
		int off = h->op == POWER_OFF;
		if (h->c->method != M_LIBUSB && sysfs_disable(t, port, off, true) == 0) {
			t->via_sysfs = true;
			h->step = 12;
			step(h);
			return;
		}
		if (h->c->method == M_SYSFS) {
			char dir[256];
			port_dir(t, port, dir, sizeof dir);
			finish(h, LAB_EINFRA, "%s: cannot write %s/disable: %s", h->p->device, dir,
			       strerror(errno));
			return;
		}
		h->x = usb_control(t->dev, 0x23, off ? 1 : 3, 8, (uint16_t)port, NULL, 0, XFER_MS,
				   switched, h);
		break;
	}
	case 12: /* read back */
		if (!t->dev) {
			int d = sysfs_disable(t, port, 0, false);
			if (d < 0) {
				finish(h, LAB_EINFRA, "%s: cannot read the port state of %s", h->p->device,
				       t->info.location);
				return;
			}
			if (h->op != POWER_STATE && d != (h->op == POWER_OFF)) {
				finish(h, LAB_EINFRA, "%s: port %d of %s: disable reads %d", h->p->device,
				       port, t->info.location, d);
				return;
			}
			h->state_seen = d ? POWER_IS_OFF : POWER_IS_ON;
			h->ti++;
			h->step = 10;
			step(h);
			return;
		}
		h->x = usb_control(t->dev, 0xA3, 0, 0, (uint16_t)port, NULL, 4, XFER_MS, status_done, h);
		break;
	}
	if (!h->x)
		finish(h, LAB_EINFRA, "%s: cannot submit a request to hub %s", h->p->device,
		       t->info.location);
}

static int hub_start(struct power *p, enum power_op op)
{
	struct hub *h = p->priv;
	h->op = op;
	h->nt = 0;
	h->state_seen = POWER_UNKNOWN;
	memset(h->t, 0, sizeof h->t);
	struct usb_match m;
	usb_match_init(&m, p->device);
	m.location = h->c->location;
	struct usb_info found;
	size_t n = usb_find_all(h->u, &m, &found, 1);
	if (n == 0 || found.dev_class != 9) {
		finish(h, LAB_EINFRA, "%s: no hub at %s%s", p->device, h->c->location,
		       n ? " (the device there is not a hub)" : "");
		return LAB_OK;
	}
	h->t[0].info = found;
	h->t[0].usb3 = found.speed >= LIBUSB_SPEED_SUPER;
	h->nt = 1;
	struct lab_err e = {0};
	if (usb_dev_open(h->u, &m, -1, &h->t[0].dev, &e) != LAB_OK) {
		/* no access to the hub device: only the sysfs method can work */
		if (h->c->method == M_LIBUSB) {
			finish(h, LAB_EINFRA, "%s", e.msg);
			return LAB_OK;
		}
		h->t[0].dev = NULL;
		h->step = op == POWER_STATE ? 12 : 11;
		h->ti = 0;
		step(h);
		return LAB_OK;
	}
	if (h->c->pair) {
		h->x = usb_control(h->t[0].dev, 0x80, 6, 0x0F00, 0, NULL, 255, XFER_MS, own_bos_done, h);
		if (h->x)
			return LAB_OK;
	}
	h->step = 10;
	h->ti = 0;
	step(h);
	return LAB_OK;
}

const struct power_driver power_usb_hub = {
	.name = "usb-hub",
	.version = POWER_OPS_VERSION,
	.help = "per-port power of a USB hub that supports it (both halves of USB3 hubs), read back",
	.options = hub_opts,
	.cfg_size = sizeof(struct hub_cfg),
	.init = hub_init,
	.fini = hub_fini,
	.start = hub_start,
	.cancel = hub_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
