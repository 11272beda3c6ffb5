/* power.c - generic power layer: driver lookup, option parsing, off-time, cycle, timeouts. */
#include "power.h"
#include "driver.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

DRIVER_HEAD_ASSERT(struct power_driver);

/* The power drivers (power/<name>.c, each exporting power_<name>): one row
 * each.  A new one is its file, one row here and its line in harness/CMakeLists.txt. */
#define POWER_DRIVERS(X)                                                                           \
	X(power_pdudaemon)                                                                         \
	X(power_tasmota)                                                                           \
	X(power_shelly)                                                                            \
	X(power_esphome)                                                                           \
	X(power_exec)                                                                              \
	X(power_manual)                                                                            \
	X(power_usb_relay)                                                                         \
	X(power_usb_hub)                                                                           \
	X(power_ykush)                                                                             \
	X(power_qemu)
#define X(d) extern const struct power_driver d;
POWER_DRIVERS(X)
#undef X

const struct power_driver *const power_drivers[] = {
#define X(d) &d,
	POWER_DRIVERS(X)
#undef X
	NULL,
};

struct power_common {
	char *driver;
	uint64_t off_time_ms;
	uint64_t timeout_ms;
};

static const struct opt power_common_opts[] = {
	{.key = "driver", .type = OPT_STR, .offset = offsetof(struct power_common, driver),
	 .flags = OPT_REQUIRED, .help = "power driver name"},
	{.key = "off_time", .type = OPT_DURATION, .offset = offsetof(struct power_common, off_time_ms),
	 .def = "2s", .min = 0, .max = 3600000,
	 .help = "minimum time off before power-on (default 2s; 0s for the qemu driver)"},
	{.key = "timeout", .type = OPT_DURATION, .offset = offsetof(struct power_common, timeout_ms),
	 .def = "30s", .min = 100, .max = 3600000, .help = "timeout of one operation"},
	{0},
};

static const struct driver_kind power_kind = {"power", (const void *const *)power_drivers,
					      power_common_opts};

const struct power_driver *power_driver_find(const char *name)
{
	return driver_find(&power_kind, name);
}

int power_ops_check(const struct power_driver *d, struct lab_err *e)
{
	int rc = driver_check_head("power", d, POWER_OPS_VERSION, e);
	if (!rc)
		rc = driver_check_hook("power", d->name, d->start != NULL, "start", e);
	return rc;
}

static int power_check_one(const void *ops, struct lab_err *e)
{
	return power_ops_check(ops, e);
}

int power_registry_check(struct lab_err *e)
{
	return driver_check_list(&power_kind, power_check_one, e);
}

int power_new(struct loop *l, const char *board, const struct cfg_node *cfg, struct power **out,
	       struct lab_err *e)
{
	struct power_common pc;
	const void *ops;
	void *dcfg;
	int rc = driver_from_cfg(&power_kind, cfg, &pc, &ops, &dcfg, e);
	if (rc)
		return rc;
	const struct power_driver *d = ops;
	struct power *p = xcalloc(1, sizeof *p);
	p->drv = d;
	p->loop = l;
	loop_timer_init(&p->timer, NULL, p); /* power_free may stop it before any request */
	p->board = xstrdup(board);
	p->off_time_ms = pc.off_time_ms;
	if (d->off_time_default && !cfg_map_get(cfg, "off_time") &&
	    opt_parse_duration(d->off_time_default, &p->off_time_ms) != 0)
		p->off_time_ms = pc.off_time_ms;
	p->timeout_ms = pc.timeout_ms;
	p->last_state = POWER_UNKNOWN;
	p->cfg = dcfg;
	opt_free(power_common_opts, &pc);
	if (d->init && (rc = d->init(p, e)) != LAB_OK) {
		driver_free_own(d->options, p->cfg);
		free(p->board);
		free(p->device);
		free(p);
		return rc;
	}
	if (!p->device)
		p->device = xasprintf("%s power of %s", d->name, board);
	*out = p;
	return LAB_OK;
}

int power_check_cfg(const char *board, const struct cfg_node *cfg, struct lab_err *e)
{
	LAB_UNUSED(board);
	struct power_common pc;
	const void *ops;
	return driver_from_cfg(&power_kind, cfg, &pc, &ops, NULL, e);
}

void power_free(struct power *p)
{
	if (!p)
		return;
	loop_timer_stop(p->loop, &p->timer);
	if (p->drv) {
		if (p->busy && p->drv->cancel)
			p->drv->cancel(p);
		if (p->drv->fini)
			p->drv->fini(p);
	}
	if (p->drv)
		driver_free_own(p->drv->options, p->cfg);
	else
		free(p->cfg);
	free(p->board);
	free(p->device);
	free(p);
}

static void finish(struct power *p, int rc, int state, const char *msg)
{
	loop_timer_stop(p->loop, &p->timer);
	p->busy = false;
	if (rc == LAB_OK && state != POWER_UNKNOWN)
		p->last_state = state;
	if (rc == LAB_OK && state == POWER_IS_OFF)
		p->last_off_ns = lab_now_ns();
	power_done_cb cb = p->cb;
	p->cb = NULL;
	if (cb)
		cb(p, rc, state, msg, p->cb_arg);
}

static void on_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct power *p = arg;
	if (p->drv->cancel)
		p->drv->cancel(p);
	char msg[256];
	snprintf(msg, sizeof msg, "%s: no answer within %llu ms", p->device,
		 (unsigned long long)p->timeout_ms);
	finish(p, LAB_ETIMEOUT, POWER_UNKNOWN, msg);
}

static void start_phase(struct power *p, enum power_op phase);

/* The driver's start hook refused p->phase (start_phase): the callback runs from
 * the loop, so it never runs inside the caller's own power_request(). */
static void on_refused(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct power *p = arg;
	enum power_op ph = p->phase;
	char *msg = xasprintf("%s: %s failed to start", p->device,
			      ph == POWER_ON ? "power-on" : ph == POWER_OFF ? "power-off" :
			      ph == POWER_CYCLE ? "cycle" : "state query");
	finish(p, p->refused_rc, POWER_UNKNOWN, msg);
	free(msg);
}

static void on_offtime(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	start_phase(arg, POWER_ON);
}

static void start_phase(struct power *p, enum power_op phase)
{
	p->phase = phase;
	if (phase == POWER_ON && p->last_off_ns) {
		uint64_t since = (lab_now_ns() - p->last_off_ns) / 1000000ull;
		if (since < p->off_time_ms) {
			loop_timer_init(&p->timer, on_offtime, p);
			loop_timer_start(p->loop, &p->timer, p->off_time_ms - since);
			return;
		}
	}
	loop_timer_init(&p->timer, on_timeout, p);
	loop_timer_start(p->loop, &p->timer, p->timeout_ms);
	int rc = p->drv->start(p, phase);
	if (rc != LAB_OK) {
		/* Synchronous refusal: report on the next pass, never re-entrantly. */
		p->refused_rc = rc;
		loop_timer_stop(p->loop, &p->timer);
		loop_timer_init(&p->timer, on_refused, p);
		loop_timer_start(p->loop, &p->timer, 0);
	}
}

int power_request(struct power *p, enum power_op op, power_done_cb cb, void *arg)
{
	if (p->busy)
		return LAB_EUSAGE;
	if (op == POWER_STATE && !p->drv->can_read_state) {
		return LAB_EUSAGE;
	}
	p->busy = true;
	p->op = op;
	p->cb = cb;
	p->cb_arg = arg;
	if (op == POWER_CYCLE && !p->drv->native_cycle)
		start_phase(p, POWER_OFF);
	else
		start_phase(p, op);
	return LAB_OK;
}

void power_complete(struct power *p, int rc, int state, const char *fmt, ...)
{
	char msg[512] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	}
	loop_timer_stop(p->loop, &p->timer);
	if (rc == LAB_OK && p->op == POWER_CYCLE && !p->drv->native_cycle && p->phase == POWER_OFF) {
		p->last_off_ns = lab_now_ns();
		p->last_state = POWER_IS_OFF;
		start_phase(p, POWER_ON);
		return;
	}
	if (rc == LAB_OK && p->op == POWER_CYCLE && p->drv->native_cycle)
		state = POWER_IS_ON;
	finish(p, rc, state, msg[0] ? msg : NULL);
}
