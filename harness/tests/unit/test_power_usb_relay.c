/* test_power_usb_relay.c - usb-relay power driver against umockdev-emulated relay boards. */
#include "power.h"
#include "power_testlib.h"
#include "tap.h"
#include "usb.h"
#include "usbmock.h"

int board_list_usb(FILE *out, struct lab_err *e);

struct dct {
	char id[6];
	uint8_t mask;
	int nrelays;
	bool stuck; /* ignores commands: read-back must catch it */
};

static int dct_control(struct mockdev *m, const uint8_t *setup, const uint8_t *out, uint8_t *in,
		       size_t *inlen)
{
	struct dct *d = m->state;
	if (setup[0] == 0xA0 && setup[1] == 0x01 && setup[3] == 0x03) {
		memcpy(in, d->id, 5);
		in[5] = in[6] = 0;
		in[7] = d->mask;
		*inlen = 8;
		return 0;
	}
	if (setup[0] == 0x21 && setup[1] == 0x09 && setup[3] == 0x03) {
		if (d->stuck)
			return 0;
		uint8_t n = out[1];
		switch (out[0]) {
		case 0xFF: if (n >= 1 && n <= d->nrelays) d->mask |= (uint8_t)(1u << (n - 1)); break;
		case 0xFD: if (n >= 1 && n <= d->nrelays) d->mask &= (uint8_t)~(1u << (n - 1)); break;
		case 0xFE: d->mask = (uint8_t)((1u << d->nrelays) - 1); break;
		case 0xFC: d->mask = 0; break;
		default: return -EPIPE;
		}
		return 0;
	}
	return -EPIPE;
}

static const uint8_t hid_iface[] = {MOCK_IFACE(0, 1, 3, 0, 0), MOCK_HID, MOCK_EP(0x81, 3, 8)};
static const uint8_t hub_iface[] = {MOCK_IFACE(0, 1, 9, 0, 0), MOCK_EP(0x81, 3, 2)};

static struct mockdev *add_dct(const char *loc, const char *id, int n, struct dct *st)
{
	char prod[16];
	snprintf(prod, sizeof prod, "USBRelay%d", n);
	memset(st, 0, sizeof *st);
	memcpy(st->id, id, 5);
	st->nrelays = n;
	struct mockdev *m = mock_add(loc, 0x16c0, 0x05df, 0, "www.dcttech.com", prod, NULL, hid_iface,
				     sizeof hid_iface, 1);
	m->control = dct_control;
	m->state = st;
	return m;
}

struct lcus {
	uint8_t last[8];
	size_t len;
	unsigned writes;
};

static int lcus_out(struct mockdev *m, uint8_t ep, const uint8_t *data, size_t len)
{
	struct lcus *s = m->state;
	(void)ep;
	memcpy(s->last, data, len < 8 ? len : 8);
	s->len = len;
	s->writes++;
	return 0;
}

static struct power *mk(struct loop *l, const char *yaml, struct lab_err *e)
{
	lab_err_clear(e);
	return power_from_yaml(l, "dut1", yaml, e);
}

int main(int argc, char **argv)
{
	(void)argc;
	mock_reexec(argv);
	mock_start();
	struct loop *l = loop_new();
	struct lab_err e = {0};

	mock_add("usb1", 0x1d6b, 0x0002, 9, "Linux", "xHCI Host Controller", "0000:00:14.0", hub_iface,
		 sizeof hub_iface, 1);
	mock_add("1-1", 0x05e3, 0x0610, 9, "GenesysLogic", "USB2.0 Hub", NULL, hub_iface,
		 sizeof hub_iface, 1);
	struct dct a, b, c;
	struct mockdev *ma = add_dct("1-1.4", "QAAMZ", 4, &a);

	/* One board, ID given: on, state, off, cycle. */
	struct power *p = mk(l, "{driver: usb-relay, id: QAAMZ, relay: 2, off_time: 0}", &e);
	ok(p != NULL, "create dcttech relay (%s)", e.msg);
	if (!p)
		return tap_done();
	struct op_res r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_OK, "relay on");
	ok(r.rc == LAB_OK || printf("# %s\n", r.msg), "on message");
	is_int(r.state, POWER_IS_ON, "state after on");
	is_int(a.mask, 0x02, "relay 2 bit set on the board");
	r = run_op(l, p, POWER_STATE, 5000);
	is_int(r.rc, LAB_OK, "state query");
	is_int(r.state, POWER_IS_ON, "state read back: on");
	r = run_op(l, p, POWER_OFF, 5000);
	is_int(r.rc, LAB_OK, "relay off");
	is_int(a.mask, 0x00, "relay 2 bit cleared");
	r = run_op(l, p, POWER_STATE, 5000);
	is_int(r.state, POWER_IS_OFF, "state read back: off");
	r = run_op(l, p, POWER_CYCLE, 5000);
	is_int(r.rc, LAB_OK, "cycle (off then on)");
	is_int(a.mask, 0x02, "on after cycle");
	ok(ma->controls >= 8, "control transfers went through the emulated device (%u)", ma->controls);
	power_free(p);

	/* Relay number beyond the board. */
	p = mk(l, "{driver: usb-relay, id: QAAMZ, relay: 6}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EUSAGE, "relay 6 on a 4-relay board refused");
	ok(strstr(r.msg, "only 4 relays") != NULL, "message names the relay count: %s", r.msg);
	power_free(p);

	/* A second board: the ID picks the right one. */
	struct mockdev *mb = add_dct("1-1.3", "XY123", 2, &b);
	a.mask = 0;
	p = mk(l, "{driver: usb-relay, id: XY123, relay: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_OK, "on by ID among two boards");
	is_int(b.mask, 0x01, "board XY123 switched");
	is_int(a.mask, 0x00, "board QAAMZ untouched");
	power_free(p);

	/* Two boards, no ID: ambiguous. */
	p = mk(l, "{driver: usb-relay, relay: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EINFRA, "two boards without id: error");
	ok(strstr(r.msg, "ambiguous") && strstr(r.msg, "1-1.3") && strstr(r.msg, "1-1.4"),
	   "ambiguous, names both locations: %s", r.msg);
	power_free(p);

	/* ...but a location picks one. */
	p = mk(l, "{driver: usb-relay, relay: 1, location: 1-1.4}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_OK, "location selects the board");
	is_int(a.mask, 0x01, "board at 1-1.4 switched");
	power_free(p);

	/* Unknown ID. */
	p = mk(l, "{driver: usb-relay, id: NOPE1, relay: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EINFRA, "unknown id: error");
	ok(strstr(r.msg, "NOPE1") && strstr(r.msg, "QAAMZ") && strstr(r.msg, "XY123"),
	   "message lists the IDs found: %s", r.msg);
	power_free(p);

	/* Two boards with the same ID (a cloned EEPROM). */
	struct mockdev *mc = add_dct("1-1.2", "QAAMZ", 2, &c);
	p = mk(l, "{driver: usb-relay, id: QAAMZ, relay: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EINFRA, "duplicate id: error");
	ok(strstr(r.msg, "ambiguous") != NULL, "duplicate id is ambiguous: %s", r.msg);
	power_free(p);
	mock_remove(mc);
	mock_remove(mb);

	/* A relay that does not move: the read-back catches it. */
	a.stuck = true;
	a.mask = 0;
	p = mk(l, "{driver: usb-relay, id: QAAMZ, relay: 3}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EINFRA, "stuck relay: error");
	ok(strstr(r.msg, "reports it off") != NULL, "message says the board disagrees: %s", r.msg);
	power_free(p);
	a.stuck = false;

	/* Bad id in config. */
	p = mk(l, "{driver: usb-relay, id: TOOLONG, relay: 1}", &e);
	ok(p == NULL && strstr(e.msg, "longer than 5"), "id too long refused: %s", e.msg);

	/* No board at all. */
	mock_remove(ma);
	p = mk(l, "{driver: usb-relay, relay: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_EINFRA, "no relay board: error");
	ok(strstr(r.msg, "no dcttech") != NULL, "message: %s", r.msg);
	power_free(p);

	/* LCUS: interrupt OUT frames, no read-back. */
	static const uint8_t lcus_iface[] = {MOCK_IFACE(0, 2, 3, 0, 0), MOCK_HID, MOCK_EP(0x81, 3, 8),
					     MOCK_EP(0x01, 3, 8)};
	struct lcus ls = {0};
	struct mockdev *ml = mock_add("1-1.1", 0x5131, 0x2007, 0, NULL, NULL, NULL, lcus_iface,
				      sizeof lcus_iface, 1);
	ml->out = lcus_out;
	ml->state = &ls;
	p = mk(l, "{driver: usb-relay, type: lcus, relay: 1}", &e);
	ok(p != NULL, "create lcus (%s)", e.msg);
	r = run_op(l, p, POWER_ON, 5000);
	is_int(r.rc, LAB_OK, "lcus on");
	ok(ls.len == 4 && ls.last[0] == 0xA0 && ls.last[1] == 1 && ls.last[2] == 1 && ls.last[3] == 0xA2,
	   "lcus frame A0 01 01 A2 (got %02x %02x %02x %02x, %zu bytes)", ls.last[0], ls.last[1],
	   ls.last[2], ls.last[3], ls.len);
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && ls.last[2] == 0 && ls.last[3] == 0xA1, "lcus off frame A0 01 00 A1");
	r = run_op(l, p, POWER_STATE, 5000);
	is_int(r.rc, LAB_EUSAGE, "lcus cannot report state");
	power_free(p);

	/* `emmclab board list-usb` */
	struct dct d5;
	add_dct("1-1.5", "LIST1", 8, &d5);
	d5.mask = 0x81;
	static const uint8_t fb_iface[] = {MOCK_IFACE(0, 2, 0xff, 0x42, 0x03), MOCK_EP(0x81, 2, 512),
					   MOCK_EP(0x01, 2, 512)};
	mock_add("1-2", 0x18d1, 0x4ee0, 0, "U-Boot", "USB download gadget", "0123456789ABCDEF01",
		 fb_iface, sizeof fb_iface, 1);
	char *buf = NULL;
	size_t blen = 0;
	FILE *mf = open_memstream(&buf, &blen);
	lab_err_clear(&e);
	int lrc = board_list_usb(mf, &e);
	fclose(mf);
	is_int(lrc, LAB_OK, "board_list_usb");
	ok(strstr(buf, "1-1.5        16c0:05df dcttech USBRelay8, id LIST1, on-mask 0x81") != NULL,
	   "relay listed with its ID");
	ok(strstr(buf, "power: {driver: usb-relay, id: LIST1, relay: 1..8}") != NULL, "relay config line");
	ok(strstr(buf, "type: lcus, location: 1-1.1") != NULL, "LCUS listed by location");
	ok(strstr(buf, "deploy: {driver: fastboot, serial: \"0123456789ABCDEF01\"}") != NULL,
	   "fastboot device listed with its serial");
	ok(strstr(buf, "1-1          05e3:0610 USB2 hub") != NULL, "hub listed");
	printf("%s", buf);
	free(buf);

	loop_free(l);
	mock_free_all();
	return tap_done();
}
