/* test_registry.c - the driver registries: every shipped ops table passes the
 * start-up check, and a hand-made table with a wrong version, no help or a
 * missing required hook, or a name listed twice, is rejected with the driver
 * and the hook named; a power or deploy hook that refuses to start is reported
 * from the loop, not inside the request. */
#include <string.h>

#include "config.h"
#include "console.h"
#include "deploy.h"
#include "driver.h"
#include "loop.h"
#include "power.h"
#include "registry.h"
#include "report.h"
#include "tap.h"
#include "upload.h"

static int power_start(struct power *p, enum power_op op)
{
	(void)p;
	(void)op;
	return LAB_OK;
}

static int power_refuse(struct power *p, enum power_op op)
{
	(void)p;
	(void)op;
	return LAB_EINFRA;
}

struct refused {
	int done, rc, state;
	char msg[200];
};

static void on_refused(struct power *p, int rc, int state, const char *msg, void *arg)
{
	(void)p;
	struct refused *r = arg;
	r->done++;
	r->rc = rc;
	r->state = state;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

static int deploy_run_fake(struct deploy *d, const struct deploy_ctx *ctx)
{
	(void)d;
	(void)ctx;
	return LAB_OK;
}

static int deploy_refuse(struct deploy *d, const struct deploy_ctx *ctx)
{
	(void)d;
	(void)ctx;
	return LAB_EINFRA;
}

static void on_deploy_done(struct deploy *d, int rc, const char *msg, void *arg)
{
	(void)d;
	struct refused *r = arg;
	r->done++;
	r->rc = rc;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

static int console_open_fake(struct console *c, int *fd, struct lab_err *e)
{
	(void)c;
	(void)e;
	*fd = -1;
	return LAB_OK;
}

static void console_close_fake(struct console *c)
{
	(void)c;
}

static int render_fake(const struct report_model *m, FILE *f, struct lab_err *e)
{
	(void)m;
	(void)f;
	(void)e;
	return LAB_OK;
}

static int power_check_fake(const void *ops, struct lab_err *e)
{
	return power_ops_check(ops, e);
}

/* Runs `call`, which reports into the macro's own `ce`: rejected with exactly msg_want,
 * or accepted when msg_want is NULL. */
#define CHECK(call, msg_want, name)                                                                \
	do {                                                                                       \
		struct lab_err ce = {0};                                                           \
		int rc_ = (call);                                                                  \
		if (msg_want) {                                                                    \
			ok(rc_ == LAB_EINFRA, "%s: rejected (rc %d)", name, rc_);                   \
			is_str(ce.msg, (const char *)(msg_want), name);                              \
		} else {                                                                           \
			ok(rc_ == LAB_OK, "%s: accepted (%s)", name, ce.msg);                        \
		}                                                                                  \
	} while (0)

int main(void)
{
	struct lab_err first = {0};
	ok(lab_registries_check(&first) == LAB_OK, "every registry passes (%s)", first.msg);
	/* (test_upload checks hand-made bad upload kinds) */

	CHECK(console_registry_check(&ce), NULL, "console registry");
	CHECK(power_registry_check(&ce), NULL, "power registry");
	CHECK(deploy_registry_check(&ce), NULL, "deploy registry");
	CHECK(report_registry_check(&ce), NULL, "report registry");
	CHECK(upload_registry_check(&ce), NULL, "upload registry");

	size_t n = 0;
	for (; power_drivers[n]; n++)
		ok(power_driver_find(power_drivers[n]->name) == power_drivers[n], "power %s found",
		   power_drivers[n]->name);
	ok(n >= 10, "10 power drivers listed (%zu)", n);
	for (n = 0; console_drivers[n]; n++)
		;
	ok(n == 4, "4 console drivers listed (%zu)", n);
	for (n = 0; deploy_drivers[n]; n++)
		;
	ok(n == 6, "6 deploy methods listed (%zu)", n);
	for (n = 0; report_renderers[n]; n++)
		;
	ok(n == 6, "6 report renderers listed (%zu)", n);

	/* Hand-made power tables. */
	struct power_driver pw = {.name = "fake", .version = POWER_OPS_VERSION, .help = "a fake",
				  .start = power_start};
	CHECK(power_ops_check(&pw, &ce), NULL, "good power table");
	pw.start = NULL;
	CHECK(power_ops_check(&pw, &ce), "power driver 'fake': no start hook", "power: missing start");
	pw.start = power_start;
	pw.version = POWER_OPS_VERSION + 1;
	CHECK(power_ops_check(&pw, &ce), "power driver 'fake': ops version 2, expected 1",
	      "power: wrong version");
	pw.version = 0; /* a table written before .version existed */
	CHECK(power_ops_check(&pw, &ce), "power driver 'fake': ops version 0, expected 1",
	      "power: no version");
	pw.version = POWER_OPS_VERSION;
	pw.help = NULL;
	CHECK(power_ops_check(&pw, &ce), "power driver 'fake': no help line", "power: no help");
	pw.help = "a fake";
	pw.name = NULL;
	CHECK(power_ops_check(&pw, &ce), "power driver without a name", "power: no name");
	pw.name = "fake";
	/* driver_find would never reach the second row of a name */
	const struct power_driver *twice[] = {&pw, power_drivers[0], &pw, NULL};
	struct driver_kind dk = {"power", (const void *const *)twice, NULL};
	CHECK(driver_check_list(&dk, power_check_fake, &ce), "power driver 'fake': listed twice",
	      "power: a name listed twice");
	twice[2] = NULL;
	CHECK(driver_check_list(&dk, power_check_fake, &ce), NULL, "power: distinct names");

	/* A start hook that refuses at once: power.c reports it from the loop, never
	 * inside the caller's power_request(). */
	struct loop *l = loop_new();
	struct power_driver rf = {.name = "refuse", .version = POWER_OPS_VERSION, .help = "a fake",
				  .start = power_refuse};
	struct power pr = {.drv = &rf, .loop = l, .device = "refuse power of b1", .timeout_ms = 5000};
	loop_timer_init(&pr.timer, NULL, &pr);
	struct refused r = {0};
	ok(power_request(&pr, POWER_ON, on_refused, &r) == LAB_OK, "power: refused request accepted");
	ok(r.done == 0, "power: a refused start is not reported inside power_request (%d)", r.done);
	for (int i = 0; i < 50 && !r.done; i++)
		loop_run_once(l, 100);
	ok(r.done == 1 && r.rc == LAB_EINFRA && r.state == POWER_UNKNOWN,
	   "power: refused start reported once from the loop (done %d, rc %d)", r.done, r.rc);
	is_str(r.msg, "refuse power of b1: power-on failed to start", "power: refused start message");
	ok(!pr.busy, "power: idle again after the refusal");

	/* The same for a deploy method that cannot start, and for a missing artifact,
	 * whose report a deploy_free before the next pass cancels. */
	struct deploy_driver drf = {.name = "refusedep", .version = DEPLOY_OPS_VERSION,
				    .help = "a fake", .run = deploy_refuse};
	struct deploy dd = {.drv = &drf, .loop = l, .board = "b1", .timeout_ms = 5000};
	loop_timer_init(&dd.timer, NULL, &dd);
	struct deploy_ctx dctx = {0};
	memset(&r, 0, sizeof r);
	ok(deploy_run(&dd, &dctx, on_deploy_done, &r) == LAB_OK, "deploy: refused run accepted");
	ok(r.done == 0, "deploy: a refused run is not reported inside deploy_run (%d)", r.done);
	for (int i = 0; i < 50 && !r.done; i++)
		loop_run_once(l, 100);
	ok(r.done == 1 && r.rc == LAB_EINFRA, "deploy: refused run reported once (done %d, rc %d)",
	   r.done, r.rc);
	is_str(r.msg, "refusedep deploy on b1 failed to start", "deploy: refused run message");
	struct deploy *dn = NULL;
	struct cfg_node *dcfg = NULL;
	struct lab_err de_err = {0};
	ok(cfg_parse_buffer("t.yaml", "{driver: none}", 14, &dcfg, &de_err) == LAB_OK &&
		   deploy_new(l, "b2", dcfg, &dn, &de_err) == LAB_OK,
	   "deploy: none method created (%s)", de_err.msg);
	cfg_free(dcfg);
	struct kernel_cfg kc = {.name = "k", .image = "/nonexistent/emmclab/Image"};
	dctx.kernel = &kc;
	memset(&r, 0, sizeof r);
	ok(dn && deploy_run(dn, &dctx, on_deploy_done, &r) == LAB_OK, "deploy: run with a missing image");
	deploy_free(dn);
	for (int i = 0; i < 3; i++)
		loop_run_once(l, 10);
	ok(r.done == 0, "deploy: no report for a deploy freed before the next pass");
	loop_free(l);

	/* Console: both open and close are required. */
	struct console_driver co = {.name = "fakecon", .version = CONSOLE_OPS_VERSION,
				    .help = "a fake", .open = console_open_fake,
				    .close = console_close_fake};
	CHECK(console_ops_check(&co, &ce), NULL, "good console table");
	co.close = NULL;
	CHECK(console_ops_check(&co, &ce), "console driver 'fakecon': no close hook",
	      "console: missing close");
	co.close = console_close_fake;
	co.open = NULL;
	CHECK(console_ops_check(&co, &ce), "console driver 'fakecon': no open hook",
	      "console: missing open");

	struct deploy_driver de = {.name = "fakedep", .version = DEPLOY_OPS_VERSION, .help = "a fake",
				   .run = deploy_run_fake};
	CHECK(deploy_ops_check(&de, &ce), NULL, "good deploy table");
	de.run = NULL;
	CHECK(deploy_ops_check(&de, &ce), "deploy driver 'fakedep': no run hook", "deploy: missing run");
	de.run = deploy_run_fake;
	de.version = 7;
	CHECK(deploy_ops_check(&de, &ce), "deploy driver 'fakedep': ops version 7, expected 1",
	      "deploy: wrong version");

	struct report_renderer re = {.name = "fakefmt", .version = REPORT_OPS_VERSION, .ext = "x",
				     .mime = "text/x", .render = render_fake};
	CHECK(report_ops_check(&re, &ce), NULL, "good renderer");
	re.render = NULL;
	CHECK(report_ops_check(&re, &ce), "report renderer 'fakefmt': no render hook",
	      "report: missing render");
	re.render = render_fake;
	re.version = 3;
	CHECK(report_ops_check(&re, &ce), "report renderer 'fakefmt': ops version 3, expected 1",
	      "report: wrong version");
	re.version = REPORT_OPS_VERSION;
	re.mime = NULL;
	CHECK(report_ops_check(&re, &ce), "report renderer 'fakefmt': no file extension or MIME type",
	      "report: no MIME type");
	return tap_done();
}
