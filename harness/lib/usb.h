/*
 * usb.h - libusb on the event loop, device matching, async transfers.
 *
 * One libusb context per struct loop, shared and reference-counted by every
 * USB driver on that loop (usb_ctx_get/usb_ctx_put).  libusb's fds are
 * watched by the loop (libusb_get_pollfds + pollfd notifiers) and its
 * timeouts armed as a loop timer; events are handled with a zero timeout.
 * No call here blocks on a transfer: opening a device and claiming an
 * interface are single quick ioctls, every transfer is asynchronous and
 * completes through a callback run from a loop callback.
 *
 * Matching: VID/PID (a list of pairs), and optionally manufacturer, product,
 * serial strings, an interface class triple, and the port path ("location")
 * "BUS-PORT.PORT..." as printed by `emmclab board list-usb` (stable across
 * replug, unlike bus addresses).  Strings are read from sysfs (the kernel's
 * cached copy), so matching and listing need no permission on the device.
 * Exactly one device must match: none or several is an error that lists
 * what was found.
 *
 * Ownership: usb_dev_open() gives a struct usb_dev; usb_dev_close() releases
 * it.  A close with transfers in flight cancels them and defers the real
 * libusb_close until libusb has returned them (no callback follows a close
 * or a usb_xfer_cancel()).
 */
#ifndef EMMCLAB_USB_H
#define EMMCLAB_USB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <libusb.h>
#include "loop.h"
#include "util.h"

struct usb_ctx;
struct usb_dev;
struct usb_xfer;

/* The shared context of this loop (created on first use). */
int usb_ctx_get(struct loop *l, struct usb_ctx **out, struct lab_err *e);
void usb_ctx_put(struct usb_ctx *u);
libusb_context *usb_ctx_libusb(struct usb_ctx *u);

#define USB_MAX_IDS 8
#define USB_LOCATION_MAX 48 /* "255-" + 7 ports of up to 3 digits */
#define USB_STR_MAX 128

struct usb_match {
	uint16_t ids[USB_MAX_IDS][2]; /* VID, PID pairs; nids == 0: any device */
	size_t nids;
	const char *manufacturer;     /* NULL or "": any; else exact */
	const char *product;
	const char *serial;
	const char *location;         /* "1-1.4" (or "1": root hub of bus 1) */
	int iface_class, iface_subclass, iface_protocol; /* -1: any (all -1 unless set) */
	const char *what;             /* "dcttech USB relay", for messages */
};
void usb_match_init(struct usb_match *m, const char *what);
void usb_match_id(struct usb_match *m, uint16_t vid, uint16_t pid);

/* What is known about one device without opening it. */
struct usb_info {
	uint16_t vid, pid;
	uint8_t bus, addr;
	uint8_t dev_class;
	char location[USB_LOCATION_MAX];
	char manufacturer[USB_STR_MAX], product[USB_STR_MAX], serial[USB_STR_MAX];
	char sysfs[160];  /* /sys/bus/usb/devices/<location>, "" when absent */
	int speed;        /* LIBUSB_SPEED_* */
	int iface;        /* the interface that matched the class triple, else -1 */
};

/* Fill info for dev (strings from sysfs). */
void usb_info_get(libusb_device *dev, struct usb_info *info);
/* Does info/dev satisfy m? (location, ids, strings, interface class) */
bool usb_matches(libusb_device *dev, const struct usb_info *info, struct usb_match *m, int *iface);

/* Every device that matches (up to max); returns the count (may exceed max). */
size_t usb_find_all(struct usb_ctx *u, struct usb_match *m, struct usb_info *out, size_t max);

/* Open exactly one matching device.  iface >= 0: detach the kernel driver
 * (auto-detach) and claim it; with the class triple set, the matched
 * interface is claimed when iface is -2.  Errors (LAB_EINFRA): no device,
 * several devices (ambiguous: names their locations), permission denied
 * (points at the udev rules in docs/lab-setup.md). */
int usb_dev_open(struct usb_ctx *u, struct usb_match *m, int iface, struct usb_dev **out,
		 struct lab_err *e);
void usb_dev_close(struct usb_dev *d);
const struct usb_info *usb_dev_info(const struct usb_dev *d);
/* The bulk/interrupt endpoint addresses of the claimed interface (0 if none). */
uint8_t usb_dev_ep(const struct usb_dev *d, bool in, int type /* LIBUSB_TRANSFER_TYPE_* */);

/* Completion: status is a LIBUSB_TRANSFER_* code (COMPLETED on success);
 * data/len the bytes received (IN) or sent (OUT).  Runs on the loop. */
typedef void (*usb_xfer_cb)(void *arg, int status, const uint8_t *data, size_t len);

/* Control transfer; bmRequestType bit 7 gives the direction.  For OUT, data
 * (len bytes) is copied; for IN, len is the size to read. */
struct usb_xfer *usb_control(struct usb_dev *d, uint8_t req_type, uint8_t req, uint16_t value,
			     uint16_t index, const void *data, uint16_t len, unsigned timeout_ms,
			     usb_xfer_cb cb, void *arg);
/* Bulk or interrupt transfer on ep (direction from bit 7).  OUT data is
 * copied unless borrow is set (then it must stay valid until completion). */
struct usb_xfer *usb_transfer(struct usb_dev *d, int type, uint8_t ep, const void *data,
			      size_t len, bool borrow, unsigned timeout_ms, usb_xfer_cb cb,
			      void *arg);
/* Both return NULL when libusb refuses the submission (device gone, closing):
 * no callback follows then; the caller reports the failure from the loop. */
/* Abandon: no callback follows. */
void usb_xfer_cancel(struct usb_xfer *x);

/* "LIBUSB_TRANSFER_STALL" style text of a transfer status. */
const char *usb_status_str(int status);

/* Parse "1-1.4" -> bus 1, ports {1,4}; "1" -> bus 1, no ports. */
int usb_parse_location(const char *s, uint8_t *bus, uint8_t *ports, int *nports);

/* `emmclab board list-usb`: every USB device with the driver keys that match it (usb_list.c). */
int board_list_usb(FILE *out, struct lab_err *e);

#endif
