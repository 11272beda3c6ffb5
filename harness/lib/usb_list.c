/*
 * usb_list.c - `emmclab board list-usb`: every connected USB device an
 * emmclab driver can use, with the stable identifiers to paste into a lab
 * file (location = port path, serial, relay board ID) and a config line.
 *
 * Runs its own short-lived loop (the CLI has no other work meanwhile): the
 * few reads it needs (a dcttech relay's ID, a hub's descriptor) are async
 * transfers driven by that loop, each bounded by a timeout.  Devices that
 * cannot be opened (permissions) are still listed, with what is unknown.
 */
#include "usb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sync_res {
	bool done;
	int status;
	uint8_t data[64];
	size_t len;
};

static void sync_cb(void *arg, int status, const uint8_t *data, size_t len)
{
	struct sync_res *r = arg;
	r->done = true;
	r->status = status;
	r->len = len < sizeof r->data ? len : sizeof r->data;
	memcpy(r->data, data, r->len);
}

/* One control IN transfer, driven by the private loop until done. */
static bool control_in(struct loop *l, struct usb_ctx *u, const char *loc, int iface, uint8_t rt,
		       uint8_t req, uint16_t value, uint16_t len, struct sync_res *r)
{
	struct usb_match m;
	usb_match_init(&m, "list-usb");
	m.location = loc;
	struct usb_dev *d = NULL;
	struct lab_err e = {0};
	memset(r, 0, sizeof *r);
	if (usb_dev_open(u, &m, iface, &d, &e))
		return false;
	struct usb_xfer *x = usb_control(d, rt, req, value, 0, NULL, len, 1000, sync_cb, r);
	uint64_t t0 = lab_now_ms();
	while (x && !r->done && lab_now_ms() - t0 < 2000)
		loop_run_once(l, 50);
	usb_dev_close(d);
	while (x && !r->done && lab_now_ms() - t0 < 2500) /* let the cancellation come back */
		loop_run_once(l, 10);
	return r->done && r->status == LIBUSB_TRANSFER_COMPLETED;
}

static bool has_iface(libusb_device *dev, int cls, int sub, int proto)
{
	struct usb_match m;
	usb_match_init(&m, "list-usb");
	m.iface_class = cls;
	m.iface_subclass = sub;
	m.iface_protocol = proto;
	struct usb_info info;
	usb_info_get(dev, &info);
	return usb_matches(dev, &info, &m, NULL);
}

int board_list_usb(FILE *out, struct lab_err *e)
{
	struct loop *l = loop_new();
	struct usb_ctx *u;
	int rc = usb_ctx_get(l, &u, e);
	if (rc) {
		loop_free(l);
		return rc;
	}
	libusb_device **list;
	ssize_t n = libusb_get_device_list(usb_ctx_libusb(u), &list);
	if (n < 0) {
		usb_ctx_put(u);
		loop_free(l);
		return LAB_ERR(e, LAB_EINFRA, "cannot list USB devices: %s", libusb_strerror((int)n));
	}
	/* in location order, so the listing is stable */
	struct usb_info *infos = xcalloc((size_t)n + 1, sizeof *infos);
	for (ssize_t i = 0; i < n; i++)
		usb_info_get(list[i], &infos[i]);
	for (ssize_t i = 1; i < n; i++)
		for (ssize_t k = i; k > 0 && strcmp(infos[k - 1].location, infos[k].location) > 0; k--) {
			struct usb_info t = infos[k];
			infos[k] = infos[k - 1];
			infos[k - 1] = t;
			libusb_device *td = list[k];
			list[k] = list[k - 1];
			list[k - 1] = td;
		}
	size_t shown = 0;
	fprintf(out, "%-12s %-9s %-44s %s\n", "LOCATION", "VID:PID", "DEVICE", "LAB FILE");
	for (ssize_t i = 0; i < n; i++) {
		const struct usb_info *in = &infos[i];
		char what[1024] = "", cfg[1024] = ""; /* three 128-byte strings fit */
		struct sync_res r;
		if (in->vid == 0x16c0 && in->pid == 0x05df && strncmp(in->product, "USBRelay", 8) == 0) {
			if (control_in(l, u, in->location, 0, 0xA0, 0x01, 0x0300, 8, &r) && r.len >= 8) {
				char id[6];
				for (int k = 0; k < 5; k++)
					id[k] = (r.data[k] >= 0x20 && r.data[k] < 0x7f) ? (char)r.data[k] : '?';
				id[5] = '\0';
				snprintf(what, sizeof what, "dcttech %s, id %s, on-mask 0x%02x", in->product, id,
					 r.data[7]);
				snprintf(cfg, sizeof cfg, "power: {driver: usb-relay, id: %s, relay: 1..%c}", id,
					 in->product[8] ? in->product[8] : '8');
			} else {
				snprintf(what, sizeof what, "dcttech %s, id unreadable (permissions?)", in->product);
				snprintf(cfg, sizeof cfg, "power: {driver: usb-relay, location: %s, relay: N}",
					 in->location);
			}
		} else if (in->vid == 0x5131 && in->pid == 0x2007) {
			snprintf(what, sizeof what, "LCUS HID relay");
			snprintf(cfg, sizeof cfg, "power: {driver: usb-relay, type: lcus, location: %s, relay: N}",
				 in->location);
		} else if (in->vid == 0x0519 && in->pid == 0x2018) {
			snprintf(what, sizeof what, "Ucreatefun HID relay");
			snprintf(cfg, sizeof cfg,
				 "power: {driver: usb-relay, type: ucreatefun, location: %s, relay: N}",
				 in->location);
		} else if (in->vid == 0x04d8 && (in->pid == 0xf2f7 || in->pid == 0xf11b || in->pid == 0xf0cd)) {
			snprintf(what, sizeof what, "Yepkit %s, serial %s",
				 in->pid == 0xf2f7 ? "YKUSH" : in->pid == 0xf11b ? "YKUSH3" : "YKUSH XS",
				 in->serial[0] ? in->serial : "?");
			snprintf(cfg, sizeof cfg, "power: {driver: ykush, serial: %s, port: N}",
				 in->serial[0] ? in->serial : "?");
		} else if (in->dev_class == 9) {
			bool usb3 = in->speed >= LIBUSB_SPEED_SUPER;
			if (control_in(l, u, in->location, -1, 0xA0, 6, usb3 ? 0x2A00 : 0x2900, 12, &r) &&
			    r.len >= 5) {
				uint16_t ch = (uint16_t)(r.data[3] | r.data[4] << 8);
				bool pp = (ch & 3) == 1;
				snprintf(what, sizeof what, "%s hub, %u ports, %s", usb3 ? "USB3" : "USB2",
					 r.data[2], pp ? "per-port power" : "no per-port power");
				if (pp)
					snprintf(cfg, sizeof cfg, "power: {driver: usb-hub, location: %s, port: N}",
						 in->location);
			} else {
				snprintf(what, sizeof what, "%s hub, per-port power unknown (descriptor unreadable)",
					 usb3 ? "USB3" : "USB2");
			}
		} else if (has_iface(list[i], 0xff, 0x42, 0x03)) {
			snprintf(what, sizeof what, "fastboot %s, serial %s", in->product,
				 in->serial[0] ? in->serial : "?");
			snprintf(cfg, sizeof cfg, "deploy: {driver: fastboot, serial: \"%s\"}", in->serial);
		} else if (has_iface(list[i], 0x08, -1, -1)) {
			snprintf(what, sizeof what, "mass storage %s %s, serial %s", in->manufacturer,
				 in->product, in->serial[0] ? in->serial : "?");
			snprintf(cfg, sizeof cfg, "deploy: {driver: ums, serial: \"%s\"}", in->serial);
		} else {
			continue;
		}
		fprintf(out, "%-12s %04x:%04x %-44s %s\n", in->location, in->vid, in->pid, what, cfg);
		shown++;
	}
	if (!shown)
		fprintf(out, "(no relay, hub, YKUSH, fastboot or mass-storage device found)\n");
	libusb_free_device_list(list, 1);
	free(infos);
	usb_ctx_put(u);
	loop_free(l);
	return LAB_OK;
}
