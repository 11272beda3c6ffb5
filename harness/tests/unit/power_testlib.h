/* power_testlib.h - build a power driver from YAML and run operations on the loop (tests only). */
#ifndef EMMCLAB_POWER_TESTLIB_H
#define EMMCLAB_POWER_TESTLIB_H

#include <stdio.h>
#include <string.h>
#include "cfgnode.h"
#include "loop.h"
#include "power.h"
#include "util.h"

struct op_res {
	int done;
	int rc;
	int state;
	char msg[600];
	uint64_t ms;
};

static inline void op_cb(struct power *p, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(p);
	struct op_res *r = arg;
	r->done++;
	r->rc = rc;
	r->state = state;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

/* power_new from a YAML flow map; NULL on error (message in e). */
static inline struct power *power_from_yaml(struct loop *l, const char *board, const char *yaml,
					    struct lab_err *e)
{
	struct cfg_node *n = NULL;
	struct power *p = NULL;
	if (cfg_parse_buffer("test.yaml", yaml, strlen(yaml), &n, e) != LAB_OK)
		return NULL;
	if (power_new(l, board, n, &p, e) != LAB_OK)
		p = NULL;
	cfg_free(n);
	return p;
}

static inline void power_test_guard(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(t);
	*(int *)arg = 1;
	loop_stop(l);
}

/* Run one operation to completion (or max_ms). */
static inline struct op_res run_op(struct loop *l, struct power *p, enum power_op op, uint64_t max_ms)
{
	struct op_res r = {0};
	r.state = -2;
	int fired = 0;
	struct loop_timer g;
	loop_timer_init(&g, power_test_guard, &fired);
	loop_timer_start(l, &g, max_ms);
	uint64_t t0 = lab_now_ms();
	if (power_request(p, op, op_cb, &r) != LAB_OK) {
		loop_timer_stop(l, &g);
		r.rc = -1;
		lab_strlcpy(r.msg, "power_request refused", sizeof r.msg);
		return r;
	}
	if (r.done)
		lab_strlcpy(r.msg, "CALLBACK FROM INSIDE power_request", sizeof r.msg);
	while (!r.done && !fired)
		loop_run_once(l, 100);
	loop_timer_stop(l, &g);
	r.ms = lab_now_ms() - t0;
	if (!r.done) {
		r.rc = -1;
		lab_strlcpy(r.msg, "no completion (test guard fired)", sizeof r.msg);
	}
	return r;
}

#endif
