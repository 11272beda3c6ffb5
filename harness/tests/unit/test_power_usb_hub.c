/* test_power_usb_hub.c - usb-hub and ykush power drivers against umockdev-emulated hubs. */
#include "power.h"
#include "power_testlib.h"
#include "tap.h"
#include "usb.h"
#include "usbmock.h"

struct hubm {
	uint8_t nports;
	uint16_t chars;
	bool usb3;
	bool has_cid;
	uint8_t cid[16];
	uint16_t power; /* bit per port */
	unsigned switches;
};

static int hub_control(struct mockdev *m, const uint8_t *setup, const uint8_t *out, uint8_t *in,
		       size_t *inlen)
{
	struct hubm *h = m->state;
	(void)out;
	uint16_t wvalue = (uint16_t)(setup[2] | setup[3] << 8), windex = (uint16_t)(setup[4] | setup[5] << 8);
	if (setup[0] == 0xA0 && setup[1] == 6 && (wvalue >> 8) == (h->usb3 ? 0x2A : 0x29)) {
		uint8_t d[12] = {12, h->usb3 ? 0x2A : 0x29, h->nports, (uint8_t)h->chars, (uint8_t)(h->chars >> 8), 50, 100};
		memcpy(in, d, sizeof d);
		*inlen = sizeof d;
		return 0;
	}
	if (setup[0] == 0x80 && setup[1] == 6 && wvalue == 0x0F00) {
		if (!h->has_cid)
			return -EPIPE;
		uint8_t d[25] = {5, 0x0F, 25, 0, 1, 20, 0x10, 0x04, 0};
		memcpy(d + 9, h->cid, 16);
		memcpy(in, d, sizeof d);
		*inlen = sizeof d;
		return 0;
	}
	if (setup[0] == 0x23 && (setup[1] == 3 || setup[1] == 1) && wvalue == 8) {
		if (windex < 1 || windex > h->nports)
			return -EPIPE;
		if ((h->chars & 3) == 1) { /* ganged hubs ignore it */
			if (setup[1] == 3)
				h->power |= (uint16_t)(1u << windex);
			else
				h->power &= (uint16_t)~(1u << windex);
		}
		h->switches++;
		return 0;
	}
	if (setup[0] == 0xA3 && setup[1] == 0) {
		uint16_t st = 0x0001;
		if (h->power & (1u << windex))
			st |= h->usb3 ? 0x0200 : 0x0100;
		in[0] = (uint8_t)st;
		in[1] = (uint8_t)(st >> 8);
		in[2] = in[3] = 0;
		*inlen = 4;
		return 0;
	}
	return -EPIPE;
}

static const uint8_t hub_iface[] = {MOCK_IFACE(0, 1, 9, 0, 0), MOCK_EP(0x81, 3, 2)};

static struct mockdev *add_hub(const char *loc, uint16_t vid, uint16_t pid, struct hubm *h, bool usb3)
{
	h->usb3 = usb3;
	if (!h->nports)
		h->nports = 4;
	mock_speed = usb3 ? 5000 : 480;
	struct mockdev *m = mock_add(loc, vid, pid, 9, "Hubs Inc", usb3 ? "USB3 Hub" : "USB2 Hub", NULL,
				     hub_iface, sizeof hub_iface, 1);
	mock_speed = 480;
	m->control = hub_control;
	m->state = h;
	return m;
}

/* YKUSH model */
struct ykm {
	uint8_t on; /* bit per port */
	uint8_t last_cmd;
};

static int yk_out(struct mockdev *m, uint8_t ep, const uint8_t *data, size_t len)
{
	struct ykm *y = m->state;
	(void)ep;
	if (len != 64)
		return -EPIPE;
	uint8_t c = data[0], n = c & 0x0f;
	y->last_cmd = c;
	uint8_t rep[64] = {0x01, c};
	if ((c & 0xf0) == 0x10)
		y->on |= (uint8_t)(1u << n);
	else if ((c & 0xf0) == 0x00)
		y->on &= (uint8_t)~(1u << n);
	else if ((c & 0xf0) == 0x20)
		rep[1] = (uint8_t)((y->on & (1u << n)) ? 0x10 | n : n);
	mock_queue_in(m, 0x81, rep, sizeof rep, 0);
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
	struct op_res r;
	struct power *p;

	struct hubm root1 = {.nports = 4, .chars = 0x0009}, root2 = {.nports = 4, .chars = 0x0009};
	add_hub("usb1", 0x1d6b, 0x0002, &root1, false);
	add_hub("usb2", 0x1d6b, 0x0003, &root2, true);

	/* A USB2 hub with per-port switching, libusb method. */
	struct hubm h2 = {.nports = 4, .chars = 0x0001, .power = 0x1e};
	add_hub("1-1", 0x05e3, 0x0610, &h2, false);
	p = mk(l, "{driver: usb-hub, location: 1-1, port: 2, method: libusb, off_time: 0}", &e);
	ok(p != NULL, "create usb-hub (%s)", e.msg);
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "port 2 off (%d %s)", r.rc, r.msg);
	is_int(h2.power & 0x04, 0, "port 2 unpowered on the hub");
	is_int(h2.power & 0x02, 0x02, "port 1 untouched");
	r = run_op(l, p, POWER_STATE, 5000);
	is_int(r.state, POWER_IS_OFF, "state reads off");
	r = run_op(l, p, POWER_CYCLE, 5000);
	ok(r.rc == LAB_OK && (h2.power & 0x04), "cycle ends powered (%s)", r.msg);
	power_free(p);

	/* Port beyond the hub. */
	p = mk(l, "{driver: usb-hub, location: 1-1, port: 7}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	ok(r.rc == LAB_EUSAGE && strstr(r.msg, "has 4 ports"), "port 7 refused: %s", r.msg);
	power_free(p);

	/* A ganged hub: refused, not silently 'switched'. */
	struct hubm gang = {.nports = 4, .chars = 0x0000};
	add_hub("1-2", 0x1a40, 0x0101, &gang, false);
	p = mk(l, "{driver: usb-hub, location: 1-2, port: 1}", &e);
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_EUSAGE && strstr(r.msg, "does not switch port power per port"),
	   "hub without per-port switching: %s", r.msg);
	is_int(gang.switches, 0, "no request sent to it");
	power_free(p);

	/* No hub at that location. */
	p = mk(l, "{driver: usb-hub, location: 1-9, port: 1}", &e);
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "no hub at 1-9"), "missing hub: %s", r.msg);
	power_free(p);
	p = mk(l, "{driver: usb-hub, location: 'x-1', port: 1}", &e);
	ok(p == NULL && strstr(e.msg, "bad location"), "bad location refused: %s", e.msg);

	/* A USB3 hub: USB2 half on bus 1, USB3 half on bus 2, same container ID. */
	struct hubm a2 = {.nports = 4, .chars = 0x0001, .has_cid = true, .power = 0x1e},
		    a3 = {.nports = 4, .chars = 0x0001, .has_cid = true, .power = 0x1e},
		    other = {.nports = 4, .chars = 0x0001, .has_cid = true, .power = 0x1e};
	memcpy(a2.cid, "0123456789abcdef", 16);
	memcpy(a3.cid, "0123456789abcdef", 16);
	memcpy(other.cid, "fedcba9876543210", 16);
	add_hub("1-3", 0x2109, 0x2817, &a2, false);
	add_hub("2-3", 0x2109, 0x0817, &a3, true);
	add_hub("2-4", 0x2109, 0x0817, &other, true);
	p = mk(l, "{driver: usb-hub, location: 1-3, port: 3, method: libusb}", &e);
	r = run_op(l, p, POWER_OFF, 5000);
	is_int(r.rc, LAB_OK, "USB3 hub port off");
	ok(!(a2.power & 0x08) && !(a3.power & 0x08), "both halves switched off (usb2 %#x, usb3 %#x)",
	   a2.power, a3.power);
	ok(other.power & 0x08, "an unrelated USB3 hub of the same vendor untouched");
	r = run_op(l, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && (a2.power & 0x08) && (a3.power & 0x08), "both halves on again");
	power_free(p);
	p = mk(l, "{driver: usb-hub, location: 1-3, port: 3, pair: false, method: libusb}", &e);
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && !(a2.power & 0x08) && (a3.power & 0x08), "pair: false switches one half");
	power_free(p);

	/* The sysfs method: the kernel's disable file, then read back through libusb. */
	char *sys = umockdev_testbed_get_sys_dir(mock_tb);
	char *pdir = g_strdup_printf("%s/bus/usb/devices/1-1:1.0/1-1-port3", sys);
	g_mkdir_with_parents(pdir, 0755);
	char *dis = g_strdup_printf("%s/disable", pdir);
	g_file_set_contents(dis, "0\n", -1, NULL);
	h2.power = 0x1e;
	unsigned before = h2.switches;
	p = mk(l, "{driver: usb-hub, location: 1-1, port: 3, method: sysfs}", &e);
	r = run_op(l, p, POWER_OFF, 5000);
	char *txt = NULL;
	g_file_get_contents(dis, &txt, NULL, NULL);
	ok(txt && txt[0] == '1', "sysfs disable file written with 1 (%s)", txt ? txt : "?");
	is_int(h2.switches, before, "no PORT_POWER request with the sysfs method");
	/* the emulated hub does not see sysfs writes, so the read-back disagrees: */
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "still powered"), "read-back checks the hub: %s", r.msg);
	g_free(txt);
	power_free(p);
	g_free(dis);
	g_free(pdir);
	g_free(sys);

	/* YKUSH */
	static const uint8_t yk_iface[] = {MOCK_IFACE(0, 2, 3, 0, 0), MOCK_HID, MOCK_EP(0x81, 3, 64),
					   MOCK_EP(0x01, 3, 64)};
	struct ykm yk = {0};
	struct mockdev *my = mock_add("1-4", 0x04d8, 0xf2f7, 0, "Yepkit Lda.", "YKUSH", "YK21001",
				      yk_iface, sizeof yk_iface, 1);
	my->out = yk_out;
	my->state = &yk;
	p = mk(l, "{driver: ykush, serial: YK21001, port: 2, off_time: 0}", &e);
	ok(p != NULL, "create ykush (%s)", e.msg);
	r = run_op(l, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON && (yk.on & 0x04), "ykush port 2 on (%s)", r.msg);
	is_int(yk.last_cmd, 0x22, "status queried after switching");
	r = run_op(l, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && !(yk.on & 0x04), "ykush port 2 off");
	r = run_op(l, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "ykush state off");
	power_free(p);
	p = mk(l, "{driver: ykush, serial: YK99999, port: 1}", &e);
	r = run_op(l, p, POWER_ON, 5000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "YK99999"), "unknown YKUSH serial: %s", r.msg);
	power_free(p);

	loop_free(l);
	return tap_done();
}
