/*
 * usbmock.h - USB devices emulated with umockdev for the USB driver tests.
 *
 * The test program re-executes itself under umockdev's LD_PRELOAD library
 * (no kernel module, no root), builds a sysfs tree with descriptors and
 * strings, and answers the usbdevfs ioctls libusb issues (SUBMITURB,
 * REAPURB, DISCARDURB, claim/release) from a UMockdevIoctlBase handler,
 * the way libusb's own tests/umockdev.c does.  The handler runs on
 * umockdev's thread; every device model below is called from there, one
 * ioctl at a time, and the test reads model state only after the driver's
 * operation completed (the ioctl round trip orders the accesses).
 *
 * A device model supplies:
 *   control(): a control transfer (setup + data stage); return 0 or -EPIPE (stall)
 *   out():     a bulk/interrupt OUT transfer; it may queue IN packets with
 *              mock_queue_in(); return 0 or a negative errno (transfer error)
 * IN transfers complete when a packet is queued for their endpoint.
 */
#ifndef EMMCLAB_USBMOCK_H
#define EMMCLAB_USBMOCK_H

#include <errno.h>
#include <glib.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <umockdev.h>
#include <unistd.h>

struct mockdev;
typedef int (*mock_control_fn)(struct mockdev *m, const uint8_t *setup, const uint8_t *out,
			       uint8_t *in, size_t *inlen);
typedef int (*mock_out_fn)(struct mockdev *m, uint8_t ep, const uint8_t *data, size_t len);

struct mock_pkt {
	uint8_t ep;
	uint8_t *data;
	size_t len;
	int status;
	struct mock_pkt *next;
};

struct mock_urb {
	UMockdevIoctlData *urb; /* resolved struct usbdevfs_urb (ref held) */
	uint8_t *client_buf;    /* buffer in the client (same address space) */
	int status;
	size_t actual;
	const uint8_t *in;      /* data to copy into client_buf at reap */
	uint8_t inbuf[4096 + 8];
	uint8_t *inbig;         /* large IN data */
};

struct mockdev {
	char devnode[64];
	char sysname[48];
	mock_control_fn control;
	mock_out_fn out;
	void *state;
	struct mock_pkt *inq, **inq_tail;
	GList *waiting; /* IN urbs with no data yet (struct mock_urb *) */
	GList *done;    /* completed urbs, to reap in order */
	unsigned submits, controls, outs;
	struct mockdev *next;
};

static UMockdevTestbed *mock_tb;
static UMockdevIoctlBase *mock_handler;
static struct mockdev *mock_devs;
static struct mockdev *mock_gone; /* removed devices, freed by mock_free_all() */
static int mock_addr_next[8];
static int mock_speed = 480; /* sysfs speed of the next mock_add (5000: USB3) */

static inline void mock_queue_in(struct mockdev *m, uint8_t ep, const void *data, size_t len, int status);

static inline struct mockdev *mock_find(const char *devnode)
{
	for (struct mockdev *m = mock_devs; m; m = m->next)
		if (strcmp(m->devnode, devnode) == 0 || (strlen(devnode) > strlen(m->devnode) &&
		    strcmp(devnode + strlen(devnode) - strlen(m->devnode), m->devnode) == 0))
			return m;
	return NULL;
}

static inline void mock_urb_finish(struct mockdev *m, struct mock_urb *u)
{
	m->done = g_list_append(m->done, u);
}

/* Hand queued IN packets to waiting IN urbs. */
static inline void mock_match_in(struct mockdev *m)
{
	GList *l = m->waiting;
	while (l) {
		GList *next = l->next;
		struct mock_urb *u = l->data;
		struct usbdevfs_urb *urb = (struct usbdevfs_urb *)u->urb->data;
		struct mock_pkt **pp = &m->inq, *p;
		for (p = m->inq; p; pp = &p->next, p = p->next)
			if (p->ep == urb->endpoint)
				break;
		if (p) {
			*pp = p->next;
			if (m->inq_tail == &p->next)
				m->inq_tail = pp;
			size_t n = p->len < (size_t)urb->buffer_length ? p->len : (size_t)urb->buffer_length;
			u->inbig = g_malloc(n ? n : 1);
			memcpy(u->inbig, p->data, n);
			u->in = u->inbig;
			u->actual = n;
			u->status = p->status;
			free(p->data);
			free(p);
			m->waiting = g_list_delete_link(m->waiting, l);
			mock_urb_finish(m, u);
		}
		l = next;
	}
}

static inline void mock_queue_in(struct mockdev *m, uint8_t ep, const void *data, size_t len, int status)
{
	struct mock_pkt *p = calloc(1, sizeof *p);
	p->ep = ep;
	p->data = malloc(len ? len : 1);
	memcpy(p->data, data, len);
	p->len = len;
	p->status = status;
	if (!m->inq_tail)
		m->inq_tail = &m->inq;
	*m->inq_tail = p;
	m->inq_tail = &p->next;
	mock_match_in(m);
}

static inline gboolean mock_ioctl_cb(UMockdevIoctlBase *handler, UMockdevIoctlClient *client, gpointer data)
{
	(void)handler;
	(void)data;
	struct mockdev *m = mock_find(umockdev_ioctl_client_get_devnode(client));
	gulong request = umockdev_ioctl_client_get_request(client);
	UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);
	if (!m)
		return FALSE;
	switch (request) {
	case USBDEVFS_GET_CAPABILITIES: {
		UMockdevIoctlData *d = umockdev_ioctl_data_resolve(arg, 0, sizeof(guint32), NULL);
		*(guint32 *)d->data = USBDEVFS_CAP_BULK_CONTINUATION | USBDEVFS_CAP_NO_PACKET_SIZE_LIM |
				      USBDEVFS_CAP_REAP_AFTER_DISCONNECT | USBDEVFS_CAP_ZERO_PACKET;
		umockdev_ioctl_data_unref(d);
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	}
	case USBDEVFS_CLAIMINTERFACE:
	case USBDEVFS_RELEASEINTERFACE:
	case USBDEVFS_CLEAR_HALT:
	case USBDEVFS_RESET:
	case USBDEVFS_RESETEP:
	case USBDEVFS_SETINTERFACE:
	case USBDEVFS_DISCONNECT_CLAIM:
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	case USBDEVFS_GETDRIVER:
	case USBDEVFS_IOCTL:
		umockdev_ioctl_client_complete(client, -1, ENODATA);
		return TRUE;
	case USBDEVFS_SUBMITURB: {
		UMockdevIoctlData *ud = umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_urb), NULL);
		struct usbdevfs_urb *urb = (struct usbdevfs_urb *)ud->data;
		struct mock_urb *u = g_new0(struct mock_urb, 1);
		u->urb = ud;
		u->client_buf = urb->buffer;
		m->submits++;
		if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
			const uint8_t *setup = urb->buffer;
			size_t wlen = (size_t)(setup[6] | setup[7] << 8);
			size_t inlen = 0;
			m->controls++;
			int st = m->control ? m->control(m, setup, setup + 8, u->inbuf, &inlen) : -EPIPE;
			if (setup[0] & 0x80) {
				if (inlen > wlen)
					inlen = wlen;
				u->in = u->inbuf;
				u->actual = inlen;
			} else {
				u->actual = wlen;
			}
			u->status = st;
			if (st)
				u->actual = 0;
			mock_urb_finish(m, u);
		} else if (urb->endpoint & 0x80) {
			m->waiting = g_list_append(m->waiting, u);
			mock_match_in(m);
		} else {
			m->outs++;
			int st = m->out ? m->out(m, urb->endpoint, urb->buffer, (size_t)urb->buffer_length) : -EPIPE;
			u->status = st;
			u->actual = st ? 0 : (size_t)urb->buffer_length;
			mock_urb_finish(m, u);
			mock_match_in(m);
		}
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	}
	case USBDEVFS_REAPURB:
	case USBDEVFS_REAPURBNDELAY: {
		if (!m->done) {
			umockdev_ioctl_client_complete(client, -1, EAGAIN);
			return TRUE;
		}
		struct mock_urb *u = m->done->data;
		m->done = g_list_delete_link(m->done, m->done);
		struct usbdevfs_urb *urb = (struct usbdevfs_urb *)u->urb->data;
		urb->status = u->status;
		urb->actual_length = (int)u->actual;
		if (u->in && u->actual) {
			size_t off = urb->type == USBDEVFS_URB_TYPE_CONTROL ? 8 : 0;
			memcpy(u->client_buf + off, u->in, u->actual);
		}
		UMockdevIoctlData *p = umockdev_ioctl_data_resolve(arg, 0, sizeof(gpointer), NULL);
		umockdev_ioctl_data_set_ptr(p, 0, u->urb);
		umockdev_ioctl_data_unref(p);
		umockdev_ioctl_client_complete(client, 0, 0);
		umockdev_ioctl_data_unref(u->urb);
		g_free(u->inbig);
		g_free(u);
		return TRUE;
	}
	case USBDEVFS_DISCARDURB: {
		gulong addr = (gulong)(uintptr_t)arg->client_addr;
		for (GList *l = m->waiting; l; l = l->next) {
			struct mock_urb *u = l->data;
			if (u->urb->client_addr == addr) {
				m->waiting = g_list_delete_link(m->waiting, l);
				u->status = -ENOENT;
				u->actual = 0;
				mock_urb_finish(m, u);
				umockdev_ioctl_client_complete(client, 0, 0);
				return TRUE;
			}
		}
		umockdev_ioctl_client_complete(client, -1, EINVAL);
		return TRUE;
	}
	default:
		fprintf(stderr, "# usbmock: unhandled ioctl 0x%lx on %s\n", request, m->devnode);
		return FALSE;
	}
}

/* Re-run this program under the umockdev preload library when needed. */
static inline void mock_reexec(char **argv)
{
	const char *old = getenv("LD_PRELOAD");
	if (umockdev_in_mock_environment() || (old && strstr(old, "libumockdev-preload")))
		return;
	char *pre = g_strdup_printf("libumockdev-preload.so.0%s%s", old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
	g_free(pre);
	execv("/proc/self/exe", argv);
	perror("execv /proc/self/exe");
	exit(99);
}

static inline void mock_start(void)
{
	mock_tb = umockdev_testbed_new();
	mock_handler = umockdev_ioctl_base_new();
	g_signal_connect(mock_handler, "handle-ioctl", G_CALLBACK(mock_ioctl_cb), NULL);
}

/* Descriptor builder helpers. */
struct mock_desc {
	uint8_t b[512];
	size_t n;
};
static inline void md_add(struct mock_desc *d, const uint8_t *p, size_t n)
{
	memcpy(d->b + d->n, p, n);
	d->n += n;
}

/*
 * Add a device at sysname ("usb1", "1-1", "1-1.4") with a device descriptor
 * (vid, pid, class) and a config whose interfaces are given raw (interface +
 * endpoint descriptors, from iface_desc).  Parents must be added first.
 */
static inline struct mockdev *mock_add(const char *sysname, uint16_t vid, uint16_t pid, uint8_t dclass,
				const char *manufacturer, const char *product, const char *serial,
				const uint8_t *iface_desc, size_t iface_len, uint8_t nifaces)
{
	struct mockdev *m = calloc(1, sizeof *m);
	m->inq_tail = &m->inq;
	snprintf(m->sysname, sizeof m->sysname, "%s", sysname);
	int bus = 1;
	const char *parent = NULL;
	char parentbuf[48];
	if (strncmp(sysname, "usb", 3) == 0) {
		bus = atoi(sysname + 3);
	} else {
		bus = atoi(sysname);
		snprintf(parentbuf, sizeof parentbuf, "%s", sysname);
		char *dot = strrchr(parentbuf, '.');
		if (dot)
			*dot = '\0';
		else
			snprintf(parentbuf, sizeof parentbuf, "usb%d", bus);
		parent = parentbuf;
	}
	int addr = ++mock_addr_next[bus & 7];
	snprintf(m->devnode, sizeof m->devnode, "/dev/bus/usb/%03d/%03d", bus, addr);
	struct mock_desc d = {0};
	uint8_t dev[18] = {18, 1, 0x00, 0x02, dclass, 0, 0, 64, (uint8_t)vid, (uint8_t)(vid >> 8),
			   (uint8_t)pid, (uint8_t)(pid >> 8), 0x00, 0x01, 1, 2, 3, 1};
	md_add(&d, dev, sizeof dev);
	uint16_t total = (uint16_t)(9 + iface_len);
	uint8_t cfg[9] = {9, 2, (uint8_t)total, (uint8_t)(total >> 8), nifaces, 1, 0, 0x80, 50};
	md_add(&d, cfg, sizeof cfg);
	md_add(&d, iface_desc, iface_len);
	GString *hex = g_string_new("");
	for (size_t i = 0; i < d.n; i++)
		g_string_append_printf(hex, "%02x", d.b[i]);
	/* Build the sysfs path from the parent chain. */
	/* sysfs path: /devices/usbN/N-a/N-a.b/... from the name's prefixes */
	char path[256];
	int off = snprintf(path, sizeof path, "/devices/usb%d", bus);
	if (parent) {
		size_t n = strlen(sysname);
		for (size_t i = 0; i <= n; i++)
			if (i == n || (sysname[i] == '.' && i > 0))
				off += snprintf(path + off, sizeof path - (size_t)off, "/%.*s", (int)i, sysname);
	}
	char *spec = g_strdup_printf(
		"P: %s\nN: bus/usb/%03d/%03d\nE: SUBSYSTEM=usb\nE: DRIVER=usb\nE: BUSNUM=%03d\n"
		"E: DEVNUM=%03d\nE: DEVNAME=/dev/bus/usb/%03d/%03d\nE: DEVTYPE=usb_device\n"
		"A: bConfigurationValue=1\\n\nA: busnum=%d\\n\nA: devnum=%d\\n\nA: speed=%d\\n\n"
		"%s%s%s%s%s%s%s%s%sH: descriptors=%s\n",
		path, bus, addr, bus, addr, bus, addr, bus, addr, mock_speed,
		manufacturer ? "A: manufacturer=" : "", manufacturer ? manufacturer : "",
		manufacturer ? "\\n\n" : "", product ? "A: product=" : "", product ? product : "",
		product ? "\\n\n" : "", serial ? "A: serial=" : "", serial ? serial : "",
		serial ? "\\n\n" : "", hex->str);
	g_string_free(hex, TRUE);
	GError *err = NULL;
	if (!umockdev_testbed_attach_ioctl(mock_tb, m->devnode, mock_handler, &err)) {
		fprintf(stderr, "# attach_ioctl %s: %s\n", m->devnode, err ? err->message : "?");
		exit(99);
	}
	if (!umockdev_testbed_add_from_string(mock_tb, spec, &err)) {
		fprintf(stderr, "# add_from_string: %s\n", err ? err->message : "?");
		exit(99);
	}
	g_free(spec);
	/* /sys/bus/usb/devices/<sysname> as the kernel has it. */
	char *sys = umockdev_testbed_get_sys_dir(mock_tb);
	char *bd = g_strdup_printf("%s/bus/usb/devices", sys);
	g_mkdir_with_parents(bd, 0755);
	char *link = g_strdup_printf("%s/%s", bd, sysname);
	char *target = g_strdup_printf("../../..%s", path);
	if (symlink(target, link) != 0 && errno != EEXIST)
		perror("symlink");
	g_free(link);
	g_free(target);
	g_free(bd);
	g_free(sys);
	m->next = mock_devs;
	mock_devs = m;
	return m;
}

static inline void mock_remove(struct mockdev *m)
{
	char *sys = umockdev_testbed_get_sys_dir(mock_tb);
	char *link = g_strdup_printf("%s/bus/usb/devices/%s", sys, m->sysname);
	char target[512];
	ssize_t n = readlink(link, target, sizeof target - 1);
	if (n > 0) {
		target[n] = '\0';
		char *p = strstr(target, "/devices/");
		if (p) {
			char *sp = g_strdup_printf("/sys%s", p);
			umockdev_testbed_remove_device(mock_tb, sp);
			g_free(sp);
		}
	}
	unlink(link);
	g_free(link);
	g_free(sys);
	for (struct mockdev **pp = &mock_devs; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	/* kept until mock_free_all(): a late ioctl must not touch freed memory */
	m->next = mock_gone;
	mock_gone = m;
}

/* Free every device model, removed or not.  Call at the very end of a test,
 * once the code under test has released libusb (no ioctl can come any more). */
static inline void mock_free_all(void)
{
	struct mockdev *lists[2] = {mock_devs, mock_gone};
	for (int i = 0; i < 2; i++) {
		for (struct mockdev *m = lists[i], *next; m; m = next) {
			next = m->next;
			for (struct mock_pkt *p = m->inq, *pn; p; p = pn) {
				pn = p->next;
				free(p->data);
				free(p);
			}
			g_list_free(m->waiting);
			g_list_free(m->done);
			free(m);
		}
	}
	mock_devs = mock_gone = NULL;
}

/* Descriptor snippets. */
#define MOCK_IFACE(num, nep, cls, sub, proto) 9, 4, num, 0, nep, cls, sub, proto, 0
#define MOCK_EP(addr, attr, maxp) 7, 5, addr, attr, (uint8_t)(maxp), (uint8_t)((maxp) >> 8), 1
#define MOCK_HID 9, 0x21, 0x11, 0x01, 0, 1, 0x22, 22, 0

#endif
