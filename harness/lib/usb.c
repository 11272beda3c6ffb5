/* usb.c - libusb on the event loop, device matching, async transfers (see usb.h). */
#include "usb.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

struct usb_ctx {
	struct loop *loop;
	libusb_context *ctx;
	int refs;
	struct loop_timer timer;
	struct usb_ctx *next;
	struct usb_xfer *done_head, **done_tail; /* completed, not yet dispatched */
	/* fds epoll refuses (a regular file standing in for a usbfs node, as
	 * under umockdev): while transfers are in flight libusb is polled by a
	 * 1 ms timer instead.  Real usbfs nodes are always epoll-able. */
	int unpollable[8];
	size_t nunpollable;
	unsigned inflight;
	int fds[32]; /* fds we watch (libusb has a handful: event fd, timerfd, one per open device) */
	size_t nfds;
};

/* One context per loop: every driver of a loop shares it (one thread, no locks). */
static struct usb_ctx *usb_ctxs;

struct usb_dev {
	struct usb_ctx *u;
	libusb_device_handle *h;
	struct usb_info info;
	int claimed; /* claimed interface or -1 */
	struct {
		uint8_t addr;
		uint8_t type;
		uint16_t maxp;
	} eps[16];
	size_t neps;
	unsigned inflight;
	bool closing;
	struct usb_xfer *xfers; /* in flight (for close) */
};

struct usb_xfer {
	struct usb_dev *d;
	struct libusb_transfer *t;
	usb_xfer_cb cb;
	void *arg;
	bool control;
	bool done;
	struct usb_xfer *next, **pprev; /* the device's list, until dispatched */
	struct usb_xfer *done_next;
};

static void dev_release(struct usb_dev *d);

static void ctx_update_timer(struct usb_ctx *u)
{
	struct timeval tv;
	int r = libusb_get_next_timeout(u->ctx, &tv);
	uint64_t poll_ns = u->nunpollable && u->inflight ? 1000000ull : UINT64_MAX;
	if (r == 1 || poll_ns != UINT64_MAX) {
		uint64_t ns = r == 1 ? (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull :
				       UINT64_MAX;
		loop_timer_start_ns(u->loop, &u->timer, ns < poll_ns ? ns : poll_ns);
	} else {
		loop_timer_stop(u->loop, &u->timer);
	}
}

static void xfer_dispatch(struct usb_xfer *x);

static void ctx_handle(struct usb_ctx *u)
{
	struct timeval zero = {0, 0};
	u->refs++; /* a callback may drop the last other reference */
	/* Zero timeout: handle what is ready, never wait. */
	libusb_handle_events_timeout_completed(u->ctx, &zero, NULL);
	/* Completions run here, outside libusb's event handling, so callbacks
	 * may open, close and submit freely (libusb_open from inside a
	 * transfer callback deadlocks on libusb's event lock). */
	while (u->done_head) {
		struct usb_xfer *x = u->done_head;
		u->done_head = x->done_next;
		if (!u->done_head)
			u->done_tail = &u->done_head;
		xfer_dispatch(x);
	}
	ctx_update_timer(u);
	usb_ctx_put(u);
}

static void on_fd(struct loop *l, int fd, unsigned events, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(fd);
	LAB_UNUSED(events);
	ctx_handle(arg);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	ctx_handle(arg);
}

static unsigned poll_to_loop(short ev)
{
	unsigned e = 0;
	if (ev & POLLIN)
		e |= LOOP_READ;
	if (ev & POLLOUT)
		e |= LOOP_WRITE;
	return e;
}

static void fd_added(int fd, short events, void *arg)
{
	struct usb_ctx *u = arg;
	if (loop_fd_watched(u->loop, fd)) {
		loop_fd_mod(u->loop, fd, poll_to_loop(events));
	} else if (loop_fd_add(u->loop, fd, poll_to_loop(events), on_fd, u) == 0) {
		if (u->nfds < LAB_ARRAY_SIZE(u->fds))
			u->fds[u->nfds++] = fd;
	} else if (u->nunpollable < LAB_ARRAY_SIZE(u->unpollable)) {
		u->unpollable[u->nunpollable++] = fd;
	}
}

static void fd_removed(int fd, void *arg)
{
	struct usb_ctx *u = arg;
	loop_fd_del(u->loop, fd);
	for (size_t i = 0; i < u->nunpollable; i++)
		if (u->unpollable[i] == fd) {
			u->unpollable[i] = u->unpollable[--u->nunpollable];
			break;
		}
	for (size_t i = 0; i < u->nfds; i++)
		if (u->fds[i] == fd) {
			u->fds[i] = u->fds[--u->nfds];
			break;
		}
}

int usb_ctx_get(struct loop *l, struct usb_ctx **out, struct lab_err *e)
{
	for (struct usb_ctx *u = usb_ctxs; u; u = u->next)
		if (u->loop == l) {
			u->refs++;
			*out = u;
			return LAB_OK;
		}
	struct usb_ctx *u = xcalloc(1, sizeof *u);
	int r = libusb_init(&u->ctx);
	if (r) {
		free(u);
		return LAB_ERR(e, LAB_EINFRA, "libusb_init: %s", libusb_strerror(r));
	}
	u->loop = l;
	u->refs = 1;
	u->done_tail = &u->done_head;
	loop_timer_init(&u->timer, on_timer, u);
	const struct libusb_pollfd **fds = libusb_get_pollfds(u->ctx);
	for (size_t i = 0; fds && fds[i]; i++)
		fd_added(fds[i]->fd, fds[i]->events, u);
	libusb_free_pollfds(fds);
	libusb_set_pollfd_notifiers(u->ctx, fd_added, fd_removed, u);
	u->next = usb_ctxs;
	usb_ctxs = u;
	*out = u;
	return LAB_OK;
}

void usb_ctx_put(struct usb_ctx *u)
{
	if (!u || --u->refs > 0)
		return;
	for (struct usb_ctx **pp = &usb_ctxs; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	libusb_set_pollfd_notifiers(u->ctx, NULL, NULL, NULL);
	for (size_t i = 0; i < u->nfds; i++)
		loop_fd_del(u->loop, u->fds[i]);
	loop_timer_stop(u->loop, &u->timer);
	libusb_exit(u->ctx);
	free(u);
}

libusb_context *usb_ctx_libusb(struct usb_ctx *u)
{
	return u->ctx;
}

void usb_match_init(struct usb_match *m, const char *what)
{
	memset(m, 0, sizeof *m);
	m->iface_class = m->iface_subclass = m->iface_protocol = -1;
	m->what = what;
}

void usb_match_id(struct usb_match *m, uint16_t vid, uint16_t pid)
{
	if (m->nids < USB_MAX_IDS) {
		m->ids[m->nids][0] = vid;
		m->ids[m->nids][1] = pid;
		m->nids++;
	}
}

int usb_parse_location(const char *s, uint8_t *bus, uint8_t *ports, int *nports)
{
	*nports = 0;
	if (!s || !*s)
		return LAB_EUSAGE;
	const char *p = s;
	unsigned v = 0;
	int digits = 0;
	while (*p >= '0' && *p <= '9' && digits < 4) {
		v = v * 10 + (unsigned)(*p++ - '0');
		digits++;
	}
	if (!digits || v == 0 || v > 255)
		return LAB_EUSAGE;
	*bus = (uint8_t)v;
	if (*p == '\0')
		return LAB_OK;
	if (*p != '-')
		return LAB_EUSAGE;
	p++;
	for (;;) {
		v = 0;
		digits = 0;
		while (*p >= '0' && *p <= '9' && digits < 4) {
			v = v * 10 + (unsigned)(*p++ - '0');
			digits++;
		}
		if (!digits || v == 0 || v > 255 || *nports >= 7)
			return LAB_EUSAGE;
		ports[(*nports)++] = (uint8_t)v;
		if (*p == '\0')
			return LAB_OK;
		if (*p != '.')
			return LAB_EUSAGE;
		p++;
	}
}

/* Read a sysfs attribute (one line, capped); "" when absent. */
static void sysfs_str(const char *dir, const char *attr, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!dir[0])
		return;
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, attr);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		r = 0;
	buf[r] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
}

void usb_info_get(libusb_device *dev, struct usb_info *info)
{
	memset(info, 0, sizeof *info);
	info->iface = -1;
	struct libusb_device_descriptor dd;
	if (libusb_get_device_descriptor(dev, &dd) == 0) {
		info->vid = dd.idVendor;
		info->pid = dd.idProduct;
		info->dev_class = dd.bDeviceClass;
	}
	info->bus = libusb_get_bus_number(dev);
	info->addr = libusb_get_device_address(dev);
	info->speed = libusb_get_device_speed(dev);
	uint8_t ports[8];
	int n = libusb_get_port_numbers(dev, ports, sizeof ports);
	char sysname[USB_LOCATION_MAX];
	if (n <= 0) {
		snprintf(info->location, sizeof info->location, "%u", info->bus);
		snprintf(sysname, sizeof sysname, "usb%u", info->bus);
	} else {
		size_t off = (size_t)snprintf(info->location, sizeof info->location, "%u-", info->bus);
		for (int i = 0; i < n && off < sizeof info->location; i++)
			off += (size_t)snprintf(info->location + off, sizeof info->location - off,
						"%s%u", i ? "." : "", ports[i]);
		lab_strlcpy(sysname, info->location, sizeof sysname);
	}
	char dir[160];
	snprintf(dir, sizeof dir, "/sys/bus/usb/devices/%s", sysname);
	if (access(dir, F_OK) == 0)
		lab_strlcpy(info->sysfs, dir, sizeof info->sysfs);
	sysfs_str(info->sysfs, "manufacturer", info->manufacturer, sizeof info->manufacturer);
	sysfs_str(info->sysfs, "product", info->product, sizeof info->product);
	sysfs_str(info->sysfs, "serial", info->serial, sizeof info->serial);
}

static bool str_ok(const char *want, const char *have)
{
	return !want || !*want || strcmp(want, have) == 0;
}

/* The first interface (altsetting 0) of the active config with the class triple. */
static int find_iface(libusb_device *dev, const struct usb_match *m)
{
	struct libusb_config_descriptor *cd;
	if (libusb_get_active_config_descriptor(dev, &cd) != 0 &&
	    libusb_get_config_descriptor(dev, 0, &cd) != 0)
		return -1;
	int found = -1;
	for (int i = 0; i < cd->bNumInterfaces && found < 0; i++) {
		if (cd->interface[i].num_altsetting < 1)
			continue;
		const struct libusb_interface_descriptor *id = &cd->interface[i].altsetting[0];
		if ((m->iface_class < 0 || id->bInterfaceClass == m->iface_class) &&
		    (m->iface_subclass < 0 || id->bInterfaceSubClass == m->iface_subclass) &&
		    (m->iface_protocol < 0 || id->bInterfaceProtocol == m->iface_protocol))
			found = id->bInterfaceNumber;
	}
	libusb_free_config_descriptor(cd);
	return found;
}

bool usb_matches(libusb_device *dev, const struct usb_info *info, struct usb_match *m, int *iface)
{
	if (m->location && *m->location && strcmp(m->location, info->location) != 0)
		return false;
	if (m->nids) {
		bool any = false;
		for (size_t i = 0; i < m->nids; i++)
			if (m->ids[i][0] == info->vid && m->ids[i][1] == info->pid)
				any = true;
		if (!any)
			return false;
	}
	if (!str_ok(m->manufacturer, info->manufacturer) || !str_ok(m->product, info->product) ||
	    !str_ok(m->serial, info->serial))
		return false;
	int ifc = -1;
	if (m->iface_class >= 0 || m->iface_subclass >= 0 || m->iface_protocol >= 0) {
		ifc = find_iface(dev, m);
		if (ifc < 0)
			return false;
	}
	if (iface)
		*iface = ifc;
	return true;
}

size_t usb_find_all(struct usb_ctx *u, struct usb_match *m, struct usb_info *out, size_t max)
{
	libusb_device **list;
	ssize_t n = libusb_get_device_list(u->ctx, &list);
	if (n < 0)
		return 0;
	size_t found = 0;
	for (ssize_t i = 0; i < n; i++) {
		struct usb_info info;
		usb_info_get(list[i], &info);
		int ifc;
		if (!usb_matches(list[i], &info, m, &ifc))
			continue;
		info.iface = ifc;
		if (found < max)
			out[found] = info;
		found++;
	}
	libusb_free_device_list(list, 1);
	return found;
}

static void describe_match(const struct usb_match *m, char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < m->nids && off < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "%s%04x:%04x", i ? "|" : "", m->ids[i][0],
					m->ids[i][1]);
#define ADD(label, v) \
	if ((v) && *(v) && off < n) \
		off += (size_t)snprintf(buf + off, n - off, " %s=\"%s\"", label, v);
	ADD("manufacturer", m->manufacturer)
	ADD("product", m->product)
	ADD("serial", m->serial)
	ADD("location", m->location)
#undef ADD
}

static void collect_eps(struct usb_dev *d, libusb_device *dev, int iface)
{
	struct libusb_config_descriptor *cd;
	if (libusb_get_active_config_descriptor(dev, &cd) != 0)
		return;
	for (int i = 0; i < cd->bNumInterfaces; i++) {
		if (cd->interface[i].num_altsetting < 1)
			continue;
		const struct libusb_interface_descriptor *id = &cd->interface[i].altsetting[0];
		if (id->bInterfaceNumber != iface)
			continue;
		for (int k = 0; k < id->bNumEndpoints && d->neps < LAB_ARRAY_SIZE(d->eps); k++) {
			d->eps[d->neps].addr = id->endpoint[k].bEndpointAddress;
			d->eps[d->neps].type = id->endpoint[k].bmAttributes & 3;
			d->eps[d->neps].maxp = id->endpoint[k].wMaxPacketSize;
			d->neps++;
		}
	}
	libusb_free_config_descriptor(cd);
}

int usb_dev_open(struct usb_ctx *u, struct usb_match *m, int iface, struct usb_dev **out,
		 struct lab_err *e)
{
	libusb_device **list;
	ssize_t n = libusb_get_device_list(u->ctx, &list);
	if (n < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: cannot list USB devices: %s", m->what,
			       libusb_strerror((int)n));
	libusb_device *hit = NULL;
	struct usb_info hinfo;
	int hiface = -1;
	size_t nhit = 0;
	char where[256] = "";
	size_t woff = 0;
	for (ssize_t i = 0; i < n; i++) {
		struct usb_info info;
		usb_info_get(list[i], &info);
		int ifc;
		if (!usb_matches(list[i], &info, m, &ifc))
			continue;
		if (woff < sizeof where)
			woff += (size_t)snprintf(where + woff, sizeof where - woff, "%s%s%s%s%s",
						 nhit ? ", " : "", info.location,
						 info.serial[0] ? " (serial " : "", info.serial,
						 info.serial[0] ? ")" : "");
		if (nhit++ == 0) {
			hit = list[i];
			hinfo = info;
			hiface = ifc;
		}
	}
	char desc[300];
	describe_match(m, desc, sizeof desc);
	if (nhit == 0) {
		libusb_free_device_list(list, 1);
		return LAB_ERR(e, LAB_EINFRA, "%s: no USB device matches %s (see `emmclab board list-usb`)",
			       m->what, desc);
	}
	if (nhit > 1) {
		libusb_free_device_list(list, 1);
		return LAB_ERR(e, LAB_EINFRA,
			       "%s: %zu USB devices match %s: %s; ambiguous, add a serial or location",
			       m->what, nhit, desc, where);
	}
	libusb_device_handle *h = NULL;
	int r = libusb_open(hit, &h);
	if (r) {
		libusb_free_device_list(list, 1);
		return LAB_ERR(e, LAB_EINFRA, "%s at %s: cannot open: %s%s", m->what, hinfo.location,
			       libusb_strerror(r),
			       r == LIBUSB_ERROR_ACCESS ?
				       " (install the udev rules of docs/lab-setup.md)" : "");
	}
	struct usb_dev *d = xcalloc(1, sizeof *d);
	d->u = u;
	d->h = h;
	d->info = hinfo;
	d->info.iface = hiface;
	d->claimed = -1;
	if (iface == -2)
		iface = hiface;
	if (iface >= 0) {
		libusb_set_auto_detach_kernel_driver(h, 1);
		r = libusb_claim_interface(h, iface);
		if (r) {
			libusb_close(h);
			free(d);
			libusb_free_device_list(list, 1);
			return LAB_ERR(e, LAB_EINFRA, "%s at %s: cannot claim interface %d: %s", m->what,
				       hinfo.location, iface, libusb_strerror(r));
		}
		d->claimed = iface;
		collect_eps(d, hit, iface);
	}
	libusb_free_device_list(list, 1);
	u->refs++;
	*out = d;
	return LAB_OK;
}

static void dev_release(struct usb_dev *d)
{
	struct usb_ctx *u = d->u;
	if (d->claimed >= 0)
		libusb_release_interface(d->h, d->claimed);
	libusb_close(d->h);
	free(d);
	usb_ctx_put(u);
}

void usb_dev_close(struct usb_dev *d)
{
	if (!d)
		return;
	d->closing = true;
	for (struct usb_xfer *x = d->xfers; x; x = x->next) {
		x->cb = NULL;
		if (!x->done)
			libusb_cancel_transfer(x->t);
	}
	if (d->inflight == 0)
		dev_release(d);
}

const struct usb_info *usb_dev_info(const struct usb_dev *d)
{
	return &d->info;
}

uint8_t usb_dev_ep(const struct usb_dev *d, bool in, int type)
{
	for (size_t i = 0; i < d->neps; i++)
		if (d->eps[i].type == type && !!(d->eps[i].addr & 0x80) == in)
			return d->eps[i].addr;
	return 0;
}

static void LIBUSB_CALL xfer_done(struct libusb_transfer *t)
{
	struct usb_xfer *x = t->user_data;
	struct usb_ctx *u = x->d->u;
	x->done = true;
	x->done_next = NULL;
	*u->done_tail = x;
	u->done_tail = &x->done_next;
}

static void xfer_dispatch(struct usb_xfer *x)
{
	struct usb_dev *d = x->d;
	struct libusb_transfer *t = x->t;
	*x->pprev = x->next;
	if (x->next)
		x->next->pprev = x->pprev;
	/* inflight still counts this transfer during the callback, so a
	 * usb_dev_close() from inside it defers the release to below. */
	usb_xfer_cb cb = x->cb;
	if (cb) {
		const uint8_t *data = t->buffer;
		size_t len = (size_t)t->actual_length;
		if (x->control)
			data += LIBUSB_CONTROL_SETUP_SIZE;
		cb(x->arg, t->status, data, len);
	}
	libusb_free_transfer(t);
	free(x);
	d->inflight--;
	d->u->inflight--;
	if (d->closing && d->inflight == 0)
		dev_release(d);
}

static struct usb_xfer *xfer_submit(struct usb_dev *d, struct libusb_transfer *t, bool control,
				    usb_xfer_cb cb, void *arg)
{
	struct usb_xfer *x = xcalloc(1, sizeof *x);
	x->d = d;
	x->t = t;
	x->cb = cb;
	x->arg = arg;
	x->control = control;
	t->user_data = x;
	t->callback = xfer_done;
	int r = libusb_submit_transfer(t);
	if (r) {
		/* NULL tells the caller at once (no completion follows): it
		 * reports the failure itself, from its own loop callback. */
		free(x);
		libusb_free_transfer(t);
		return NULL;
	}
	x->next = d->xfers;
	if (x->next)
		x->next->pprev = &x->next;
	x->pprev = &d->xfers;
	d->xfers = x;
	d->inflight++;
	d->u->inflight++;
	ctx_update_timer(d->u);
	return x;
}

struct usb_xfer *usb_control(struct usb_dev *d, uint8_t req_type, uint8_t req, uint16_t value,
			     uint16_t index, const void *data, uint16_t len, unsigned timeout_ms,
			     usb_xfer_cb cb, void *arg)
{
	if (d->closing)
		return NULL;
	struct libusb_transfer *t = libusb_alloc_transfer(0);
	if (!t)
		return NULL;
	unsigned char *buf = xcalloc(1, LIBUSB_CONTROL_SETUP_SIZE + (size_t)len);
	libusb_fill_control_setup(buf, req_type, req, value, index, len);
	if (!(req_type & 0x80) && len && data)
		memcpy(buf + LIBUSB_CONTROL_SETUP_SIZE, data, len);
	libusb_fill_control_transfer(t, d->h, buf, NULL, NULL, timeout_ms);
	t->flags = LIBUSB_TRANSFER_FREE_BUFFER;
	return xfer_submit(d, t, true, cb, arg);
}

struct usb_xfer *usb_transfer(struct usb_dev *d, int type, uint8_t ep, const void *data,
			      size_t len, bool borrow, unsigned timeout_ms, usb_xfer_cb cb,
			      void *arg)
{
	if (d->closing || len > 0x7fffffff)
		return NULL;
	struct libusb_transfer *t = libusb_alloc_transfer(0);
	if (!t)
		return NULL;
	unsigned char *buf;
	if (borrow) {
		buf = (unsigned char *)(uintptr_t)data;
	} else {
		buf = xmalloc(len ? len : 1);
		if (!(ep & 0x80) && len)
			memcpy(buf, data, len);
		t->flags = LIBUSB_TRANSFER_FREE_BUFFER;
	}
	if (type == LIBUSB_TRANSFER_TYPE_INTERRUPT)
		libusb_fill_interrupt_transfer(t, d->h, ep, buf, (int)len, NULL, NULL, timeout_ms);
	else
		libusb_fill_bulk_transfer(t, d->h, ep, buf, (int)len, NULL, NULL, timeout_ms);
	return xfer_submit(d, t, false, cb, arg);
}

void usb_xfer_cancel(struct usb_xfer *x)
{
	if (!x)
		return;
	x->cb = NULL;
	if (!x->done)
		libusb_cancel_transfer(x->t);
}

const char *usb_status_str(int status)
{
	switch (status) {
	case LIBUSB_TRANSFER_COMPLETED: return "completed";
	case LIBUSB_TRANSFER_ERROR: return "transfer error";
	case LIBUSB_TRANSFER_TIMED_OUT: return "timed out";
	case LIBUSB_TRANSFER_CANCELLED: return "cancelled";
	case LIBUSB_TRANSFER_STALL: return "stalled";
	case LIBUSB_TRANSFER_NO_DEVICE: return "device gone";
	case LIBUSB_TRANSFER_OVERFLOW: return "overflow";
	default: return "unknown transfer status";
	}
}
