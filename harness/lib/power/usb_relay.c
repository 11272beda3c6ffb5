/*
 * power/usb_relay.c - USB HID relay boards (driver name "usb-relay").
 *
 *   dcttech     16c0:05df, product "USBRelayN" (N = 1,2,4,8 relays).  The
 *               board ID (5 printable bytes) lives in the feature report,
 *               not in the USB serial, so `id:` is matched by reading the
 *               report of every candidate.  Switch with SET_REPORT (feature,
 *               report 0) "FF n" / "FD n", then read the report back and
 *               check bit n-1 of byte 7: the state is verified every time.
 *   lcus        5131:2007: interrupt OUT "A0 n s (A0+n+s)"; no read-back.
 *   ucreatefun  0519:2018: one byte 0xF0+n on, 0x00+n off; every board has
 *               serial A0001, so boards are told apart by `location:` only.
 *
 * The device is opened on first use and kept open; a transfer error closes
 * it so the next operation finds it again (replug).  Everything is async.
 */
#include "power.h"
#include "usb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum relay_type { RELAY_DCTTECH, RELAY_LCUS, RELAY_UCREATEFUN };
static const char *const relay_types[] = {"dcttech", "lcus", "ucreatefun", NULL};

struct relay_cfg {
	int type;
	char *id;
	int64_t relay;
	char *location;
};

static const struct opt relay_opts[] = {
	{.key = "type", .type = OPT_ENUM, .offset = offsetof(struct relay_cfg, type),
	 .def = "dcttech", .choices = relay_types,
	 .help = "dcttech (16c0:05df USBRelayN), lcus (5131:2007) or ucreatefun (0519:2018)"},
	{.key = "id", .type = OPT_STR, .offset = offsetof(struct relay_cfg, id),
	 .help = "dcttech board ID (5 characters, from `emmclab board list-usb`)"},
	{.key = "relay", .type = OPT_INT, .offset = offsetof(struct relay_cfg, relay),
	 .flags = OPT_REQUIRED, .min = 1, .max = 8, .help = "relay number, from 1"},
	{.key = "location", .type = OPT_STR, .offset = offsetof(struct relay_cfg, location),
	 .help = "USB port path BUS-PORT.PORT... (required to tell identical boards apart)"},
	{0},
};

#define DCT_VID 0x16c0
#define DCT_PID 0x05df
#define REPORT_LEN 8
#define XFER_MS 2000
#define MAX_CANDIDATES 16

struct relay {
	struct power *p;
	struct relay_cfg *c;
	struct usb_ctx *u;
	struct usb_dev *d;
	struct usb_xfer *x;
	enum power_op op;
	int nrelays;
	/* dcttech: looking for the board with our ID among the candidates */
	struct usb_info cand[MAX_CANDIDATES];
	size_t ncand, ci;
	char seen[MAX_CANDIDATES][8];
	char hit_loc[MAX_CANDIDATES][USB_LOCATION_MAX];
	size_t nhits;
	/* a failure found inside start(): reported from the loop */
	struct loop_timer later;
	int later_rc;
	char later_msg[512];
};

static void relay_close(struct relay *r)
{
	if (r->x) {
		usb_xfer_cancel(r->x);
		r->x = NULL;
	}
	usb_dev_close(r->d);
	r->d = NULL;
}

static void on_later(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct relay *r = arg;
	power_complete(r->p, r->later_rc, POWER_UNKNOWN, "%s", r->later_msg);
}

static int fail_later(struct relay *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_later(struct relay *r, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->later_msg, sizeof r->later_msg, fmt, ap);
	va_end(ap);
	r->later_rc = rc;
	relay_close(r);
	loop_timer_start(r->p->loop, &r->later, 0);
	return LAB_OK;
}

static void fail_now(struct relay *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_now(struct relay *r, int rc, const char *fmt, ...)
{
	/* Always through the timer: this may run inside start(), where
	 * power_complete() must not be called. */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->later_msg, sizeof r->later_msg, fmt, ap);
	va_end(ap);
	r->later_rc = rc;
	relay_close(r);
	loop_timer_start(r->p->loop, &r->later, 0);
}

static int relay_init(struct power *p, struct lab_err *e)
{
	struct relay_cfg *c = p->cfg;
	if (c->type == RELAY_DCTTECH && c->id && strlen(c->id) > 5)
		return LAB_ERR(e, LAB_EUSAGE, "usb-relay of %s: id '%s' is longer than 5 characters",
			       p->board, c->id);
	struct relay *r = xcalloc(1, sizeof *r);
	r->p = p;
	r->c = c;
	loop_timer_init(&r->later, on_later, r);
	int rc = usb_ctx_get(p->loop, &r->u, e);
	if (rc) {
		free(r);
		return rc;
	}
	p->priv = r;
	char where[128] = "";
	if (c->id && *c->id)
		snprintf(where, sizeof where, " %s", c->id);
	else if (c->location && *c->location)
		snprintf(where, sizeof where, " at %s", c->location);
	p->device = xasprintf("usb-relay %s%s relay %lld of %s", relay_types[c->type], where,
			      (long long)c->relay, p->board);
	return LAB_OK;
}

static void relay_fini(struct power *p)
{
	struct relay *r = p->priv;
	if (!r)
		return;
	loop_timer_stop(p->loop, &r->later);
	relay_close(r);
	usb_ctx_put(r->u);
	free(r);
}

static void relay_cancel(struct power *p)
{
	struct relay *r = p->priv;
	loop_timer_stop(p->loop, &r->later);
	relay_close(r); /* state unknown after an abandoned transfer: reopen next time */
}

/* ---- dcttech ---------------------------------------------------------- */

static void dct_read_done(void *arg, int status, const uint8_t *data, size_t len);

static void dct_read(struct relay *r)
{
	r->x = usb_control(r->d, 0xA0, 0x01, 0x0300, 0, NULL, REPORT_LEN, XFER_MS, dct_read_done, r);
	if (!r->x)
		fail_now(r, LAB_EINFRA, "%s: cannot submit GET_REPORT", r->p->device);
}

static void dct_read_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct relay *r = arg;
	r->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED || len < REPORT_LEN) {
		fail_now(r, LAB_EINFRA, "%s: reading the relay state failed: %s (%zu bytes)",
			 r->p->device, usb_status_str(status), len);
		return;
	}
	int bit = (data[7] >> (r->c->relay - 1)) & 1;
	if (r->op == POWER_STATE) {
		power_complete(r->p, LAB_OK, bit ? POWER_IS_ON : POWER_IS_OFF, NULL);
		return;
	}
	int want = r->op == POWER_ON;
	if (bit != want) {
		fail_now(r, LAB_EINFRA, "%s: switched %s but the board reports it %s (mask 0x%02x)",
			 r->p->device, want ? "on" : "off", bit ? "on" : "off", data[7]);
		return;
	}
	power_complete(r->p, LAB_OK, want ? POWER_IS_ON : POWER_IS_OFF, NULL);
}

static void dct_write_done(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	LAB_UNUSED(len);
	struct relay *r = arg;
	r->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		fail_now(r, LAB_EINFRA, "%s: SET_REPORT failed: %s", r->p->device,
			 usb_status_str(status));
		return;
	}
	dct_read(r); /* read back: the only proof the relay moved */
}

static void dct_operate(struct relay *r)
{
	if (r->op == POWER_STATE) {
		dct_read(r);
		return;
	}
	uint8_t rep[REPORT_LEN] = {r->op == POWER_ON ? 0xFF : 0xFD, (uint8_t)r->c->relay};
	r->x = usb_control(r->d, 0x21, 0x09, 0x0300, 0, rep, REPORT_LEN, XFER_MS, dct_write_done, r);
	if (!r->x)
		fail_now(r, LAB_EINFRA, "%s: cannot submit SET_REPORT", r->p->device);
}

static int dct_relays(const struct usb_info *i)
{
	/* "USBRelay2" -> 2; anything else after the prefix -> 8 (be permissive) */
	const char *s = i->product + 8;
	if (*s >= '1' && *s <= '8' && s[1] == '\0')
		return *s - '0';
	return 8;
}

static void dct_probe_next(struct relay *r);

static void dct_probe_done(void *arg, int status, const uint8_t *data, size_t len)
{
	struct relay *r = arg;
	r->x = NULL;
	struct usb_info *ci = &r->cand[r->ci];
	if (status == LIBUSB_TRANSFER_COMPLETED && len >= REPORT_LEN) {
		char id[8] = "";
		for (int i = 0; i < 5; i++)
			id[i] = (data[i] >= 0x20 && data[i] < 0x7f) ? (char)data[i] : '?';
		id[5] = '\0';
		lab_strlcpy(r->seen[r->ci], id, sizeof r->seen[r->ci]);
		if (strcmp(id, r->c->id) == 0)
			lab_strlcpy(r->hit_loc[r->nhits++], ci->location, USB_LOCATION_MAX);
	} else {
		lab_strlcpy(r->seen[r->ci], "?", sizeof r->seen[r->ci]);
	}
	usb_dev_close(r->d);
	r->d = NULL;
	r->ci++;
	dct_probe_next(r);
}

static int open_at(struct relay *r, uint16_t vid, uint16_t pid, const char *loc, const char *what,
		   struct lab_err *e)
{
	struct usb_match m;
	usb_match_init(&m, what);
	usb_match_id(&m, vid, pid);
	m.location = loc;
	return usb_dev_open(r->u, &m, 0, &r->d, e);
}

static void dct_probe_next(struct relay *r)
{
	struct lab_err e = {0};
	while (r->ci < r->ncand) {
		if (open_at(r, DCT_VID, DCT_PID, r->cand[r->ci].location, r->p->device, &e) == LAB_OK)
			break;
		lab_strlcpy(r->seen[r->ci], "?", sizeof r->seen[r->ci]);
		lab_err_clear(&e);
		r->ci++;
	}
	if (r->ci < r->ncand) {
		r->x = usb_control(r->d, 0xA0, 0x01, 0x0300, 0, NULL, REPORT_LEN, XFER_MS,
				   dct_probe_done, r);
		if (!r->x)
			fail_now(r, LAB_EINFRA, "%s: cannot submit GET_REPORT", r->p->device);
		return;
	}
	/* All candidates read: exactly one must carry the ID. */
	if (r->nhits != 1) {
		char list[400] = "";
		size_t off = 0;
		for (size_t i = 0; i < r->ncand && off < sizeof list; i++)
			off += (size_t)snprintf(list + off, sizeof list - off, "%s%s at %s",
						i ? ", " : "", r->seen[i], r->cand[i].location);
		if (r->nhits == 0)
			fail_now(r, LAB_EINFRA, "%s: no dcttech relay board with ID '%s' (found: %s)",
				 r->p->device, r->c->id, list);
		else
			fail_now(r, LAB_EINFRA,
				 "%s: %zu dcttech relay boards carry ID '%s' (%s): ambiguous, add location",
				 r->p->device, r->nhits, r->c->id, list);
		return;
	}
	const char *loc = r->hit_loc[0];
	int rc = open_at(r, DCT_VID, DCT_PID, loc, r->p->device, &e);
	if (rc) {
		fail_now(r, rc, "%s", e.msg);
		return;
	}
	for (size_t i = 0; i < r->ncand; i++)
		if (strcmp(r->cand[i].location, loc) == 0)
			r->nrelays = dct_relays(&r->cand[i]);
	if (r->c->relay > r->nrelays) {
		fail_now(r, LAB_EUSAGE, "%s: the board has only %d relays", r->p->device, r->nrelays);
		return;
	}
	dct_operate(r);
}

static int dct_start(struct relay *r)
{
	if (r->d) {
		dct_operate(r);
		return LAB_OK;
	}
	struct usb_match m;
	usb_match_init(&m, r->p->device);
	usb_match_id(&m, DCT_VID, DCT_PID);
	m.location = r->c->location;
	struct usb_info all[MAX_CANDIDATES];
	size_t n = usb_find_all(r->u, &m, all, MAX_CANDIDATES);
	r->ncand = 0;
	for (size_t i = 0; i < n && i < MAX_CANDIDATES; i++)
		if (strncmp(all[i].product, "USBRelay", 8) == 0) /* 16c0:05df is shared by V-USB */
			r->cand[r->ncand++] = all[i];
	if (r->ncand == 0)
		return fail_later(r, LAB_EINFRA, "%s: no dcttech USBRelay board (16c0:05df)%s%s",
				  r->p->device, r->c->location ? " at " : "",
				  r->c->location ? r->c->location : "");
	if (!r->c->id || !*r->c->id) {
		if (r->ncand > 1) {
			char list[300] = "";
			size_t off = 0;
			for (size_t i = 0; i < r->ncand && off < sizeof list; i++)
				off += (size_t)snprintf(list + off, sizeof list - off, "%s%s",
							i ? ", " : "", r->cand[i].location);
			return fail_later(r, LAB_EINFRA,
					  "%s: %zu dcttech relay boards (%s): ambiguous, set id or location",
					  r->p->device, r->ncand, list);
		}
		struct lab_err e = {0};
		int rc = open_at(r, DCT_VID, DCT_PID, r->cand[0].location, r->p->device, &e);
		if (rc)
			return fail_later(r, rc, "%s", e.msg);
		r->nrelays = dct_relays(&r->cand[0]);
		if (r->c->relay > r->nrelays)
			return fail_later(r, LAB_EUSAGE, "%s: the board has only %d relays",
					  r->p->device, r->nrelays);
		dct_operate(r);
		return LAB_OK;
	}
	r->ci = 0;
	r->nhits = 0;
	dct_probe_next(r);
	return LAB_OK;
}

/* ---- lcus / ucreatefun: write-only ---------------------------------------- */

static void wo_done(void *arg, int status, const uint8_t *data, size_t len)
{
	LAB_UNUSED(data);
	LAB_UNUSED(len);
	struct relay *r = arg;
	r->x = NULL;
	if (status != LIBUSB_TRANSFER_COMPLETED) {
		fail_now(r, LAB_EINFRA, "%s: write failed: %s", r->p->device, usb_status_str(status));
		return;
	}
	/* These boards cannot be read back: the state is what we commanded. */
	power_complete(r->p, LAB_OK, r->op == POWER_ON ? POWER_IS_ON : POWER_IS_OFF, NULL);
}

static int wo_start(struct relay *r)
{
	if (r->op == POWER_STATE)
		return fail_later(r, LAB_EUSAGE, "%s: this relay type cannot report its state",
				  r->p->device);
	bool lcus = r->c->type == RELAY_LCUS;
	if (!r->d) {
		struct lab_err e = {0};
		int rc = open_at(r, lcus ? 0x5131 : 0x0519, lcus ? 0x2007 : 0x2018, r->c->location,
				 r->p->device, &e);
		if (rc)
			return fail_later(r, rc, "%s", e.msg);
	}
	uint8_t n = (uint8_t)r->c->relay, s = r->op == POWER_ON;
	uint8_t buf[4];
	size_t len;
	if (lcus) {
		buf[0] = 0xA0;
		buf[1] = n;
		buf[2] = s;
		buf[3] = (uint8_t)(0xA0 + n + s);
		len = 4;
	} else {
		buf[0] = (uint8_t)(s ? 0xF0 + n : n);
		len = 1;
	}
	uint8_t ep = usb_dev_ep(r->d, false, LIBUSB_TRANSFER_TYPE_INTERRUPT);
	if (ep)
		r->x = usb_transfer(r->d, LIBUSB_TRANSFER_TYPE_INTERRUPT, ep, buf, len, false, XFER_MS,
				    wo_done, r);
	else /* no interrupt OUT endpoint: HID SET_REPORT (output report 0) */
		r->x = usb_control(r->d, 0x21, 0x09, 0x0200, 0, buf, (uint16_t)len, XFER_MS, wo_done, r);
	if (!r->x)
		return fail_later(r, LAB_EINFRA, "%s: cannot submit the relay command", r->p->device);
	return LAB_OK;
}

static int relay_start(struct power *p, enum power_op op)
{
	struct relay *r = p->priv;
	r->op = op;
	if (r->c->type == RELAY_DCTTECH)
		return dct_start(r);
	return wo_start(r);
}

const struct power_driver power_usb_relay = {
	.name = "usb-relay",
	.version = POWER_OPS_VERSION,
	.help = "USB HID relay board: dcttech USBRelayN (state read back), LCUS, Ucreatefun",
	.options = relay_opts,
	.cfg_size = sizeof(struct relay_cfg),
	.init = relay_init,
	.fini = relay_fini,
	.start = relay_start,
	.cancel = relay_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
