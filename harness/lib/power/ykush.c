/*
 * power/ykush.c - Yepkit YKUSH switchable hubs (driver "ykush"):
 * YKUSH 04d8:f2f7 (3 ports), YKUSH3 04d8:f11b (3 ports), YKUSH XS 04d8:f0cd
 * (1 port).  A 64-byte HID report on the interrupt OUT endpoint, answered on
 * interrupt IN: 0x1N port N on, 0x0N off, 0x2N status (reply byte 1: 0x1N
 * on, 0x0N off).  Every switch is followed by a status query that must
 * agree.  Boards are told apart by their USB serial (YK...).
 */
#include "power.h"
#include "usb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct yk_cfg {
	char *serial;
	char *location;
	int64_t port;
};

static const struct opt yk_opts[] = {
	{.key = "serial", .type = OPT_STR, .offset = offsetof(struct yk_cfg, serial),
	 .help = "USB serial of the YKUSH (e.g. YK21001; required with several)"},
	{.key = "location", .type = OPT_STR, .offset = offsetof(struct yk_cfg, location),
	 .help = "USB port path of the YKUSH"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct yk_cfg, port),
	 .flags = OPT_REQUIRED, .min = 1, .max = 3, .help = "downstream port (1..3; XS: 1)"},
	{0},
};

#define YK_VID 0x04d8
#define YK_REPORT 64
#define XFER_MS 2000

struct yk {
	struct power *p;
	struct yk_cfg *c;
	struct usb_ctx *u;
	struct usb_dev *d;
	struct usb_xfer *x;
	uint8_t ep_in, ep_out;
	enum power_op op;
	int step; /* 0: command sent, 1: status sent */
	struct loop_timer later;
	int later_rc, later_state;
	char later_msg[512];
};

static void yk_close(struct yk *y)
{
	if (y->x) {
		usb_xfer_cancel(y->x);
		y->x = NULL;
	}
	usb_dev_close(y->d);
	y->d = NULL;
}

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct yk *y = arg;
	power_complete(y->p, y->later_rc, y->later_state, "%s", y->later_msg);
}

static void yk_finish(struct yk *y, int rc, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void yk_finish(struct yk *y, int rc, int state, const char *fmt, ...)
{
	y->later_msg[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(y->later_msg, sizeof y->later_msg, fmt, ap);
		va_end(ap);
	}
	y->later_rc = rc;
	y->later_state = state;
	if (rc)
		yk_close(y); /* find it again next time (replug) */
	loop_timer_start(y->p->loop, &y->later, 0);
}

static int yk_init(struct power *p, struct lab_err *e)
{
	struct yk_cfg *c = p->cfg;
	struct yk *y = xcalloc(1, sizeof *y);
	y->p = p;
	y->c = c;
	loop_timer_init(&y->later, on_later, y);
	int rc = usb_ctx_get(p->loop, &y->u, e);
	if (rc) {
		free(y);
		return rc;
	}
	p->priv = y;
	p->device = xasprintf("ykush %s port %lld of %s", c->serial ? c->serial : "(any)",
			      (long long)c->port, p->board);
	return LAB_OK;
}

static void yk_fini(struct power *p)
{
	struct yk *y = p->priv;
	if (!y)
		return;
	loop_timer_stop(p->loop, &y->later);
	yk_close(y);
	usb_ctx_put(y->u);
	free(y);
}

static void yk_cancel(struct power *p)
{
	struct yk *y = p->priv;
	loop_timer_stop(p->loop, &y->later);
	yk_close(y);
}

static void yk_send(struct yk *y, uint8_t cmd);

static void got_reply(void *arg, int status, const uint8_t *data, size_t len)
{
	struct yk *y = arg;
	y->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED || len < 2) {
		yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: no answer: %s", y->p->device,
			  usb_status_str(status));
		return;
	}
	uint8_t n = (uint8_t)y->c->port;
	if (y->step == 0) {
		y->step = 1;
		yk_send(y, (uint8_t)(0x20 | n));
		return;
	}
	int on;
	if (data[1] == (0x10 | n))
		on = 1;
	else if (data[1] == n)
		on = 0;
	else {
		yk_finish(y, LAB_EPROTO, POWER_UNKNOWN, "%s: status reply %02x %02x not understood",
			  y->p->device, data[0], data[1]);
		return;
	}
	if (y->op != POWER_STATE && on != (y->op == POWER_ON)) {
		yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: port reports %s after switching %s",
			  y->p->device, on ? "on" : "off", y->op == POWER_ON ? "on" : "off");
		return;
	}
	yk_finish(y, LAB_OK, on ? POWER_IS_ON : POWER_IS_OFF, NULL);
}

static void sent(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	LAB_UNUSED(len);
	struct yk *y = arg;
	y->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: command failed: %s", y->p->device,
			  usb_status_str(status));
		return;
	}
	y->x = usb_transfer(y->d, LIBUSB_TRANSFER_TYPE_INTERRUPT, y->ep_in, NULL, YK_REPORT, false,
			    XFER_MS, got_reply, y);
	if (!y->x)
		yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: cannot read the answer", y->p->device);
}

static void yk_send(struct yk *y, uint8_t cmd)
{
	uint8_t rep[YK_REPORT] = {cmd, cmd};
	y->x = usb_transfer(y->d, LIBUSB_TRANSFER_TYPE_INTERRUPT, y->ep_out, rep, YK_REPORT, false,
			    XFER_MS, sent, y);
	if (!y->x)
		yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: cannot send the command", y->p->device);
}

static int yk_start(struct power *p, enum power_op op)
{
	struct yk *y = p->priv;
	y->op = op;
	if (!y->d) {
		struct usb_match m;
		usb_match_init(&m, p->device);
		usb_match_id(&m, YK_VID, 0xf2f7);
		usb_match_id(&m, YK_VID, 0xf11b);
		usb_match_id(&m, YK_VID, 0xf0cd);
		m.serial = y->c->serial;
		m.location = y->c->location;
		struct lab_err e = {0};
		if (usb_dev_open(y->u, &m, 0, &y->d, &e)) {
			yk_finish(y, e.rc, POWER_UNKNOWN, "%s", e.msg);
			return LAB_OK;
		}
		y->ep_in = usb_dev_ep(y->d, true, LIBUSB_TRANSFER_TYPE_INTERRUPT);
		y->ep_out = usb_dev_ep(y->d, false, LIBUSB_TRANSFER_TYPE_INTERRUPT);
		if (!y->ep_in || !y->ep_out) {
			yk_finish(y, LAB_EINFRA, POWER_UNKNOWN, "%s: no interrupt endpoints", p->device);
			return LAB_OK;
		}
		if (usb_dev_info(y->d)->pid == 0xf0cd && y->c->port > 1) {
			yk_finish(y, LAB_EUSAGE, POWER_UNKNOWN, "%s: a YKUSH XS has one port", p->device);
			return LAB_OK;
		}
	}
	uint8_t n = (uint8_t)y->c->port;
	if (op == POWER_STATE) {
		y->step = 1;
		yk_send(y, (uint8_t)(0x20 | n));
	} else {
		y->step = 0;
		yk_send(y, (uint8_t)(op == POWER_ON ? 0x10 | n : n));
	}
	return LAB_OK;
}

const struct power_driver power_ykush = {
	.name = "ykush",
	.version = POWER_OPS_VERSION,
	.help = "Yepkit YKUSH / YKUSH3 / YKUSH XS switchable USB hub port, read back",
	.options = yk_opts,
	.cfg_size = sizeof(struct yk_cfg),
	.init = yk_init,
	.fini = yk_fini,
	.start = yk_start,
	.cancel = yk_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
