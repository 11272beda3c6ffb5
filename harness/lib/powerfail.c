/* powerfail.c - the power-fail iteration's state machine (see powerfail.h). */
#include "powerfail.h"
#include "util.h"

#include <stdlib.h>

static const char *const phase_names[POWERFAIL_PHASE_COUNT] = {
	[POWERFAIL_IDLE] = "idle",
	[POWERFAIL_WRITING] = "write",
	[POWERFAIL_CUTTING] = "power cut",
	[POWERFAIL_BOOTING] = "boot after the cut",
	[POWERFAIL_VERIFYING] = "mode verification after the cut",
	[POWERFAIL_CHECKING] = "check",
};

const char *powerfail_phase_name(enum powerfail_phase p)
{
	return (unsigned)p < POWERFAIL_PHASE_COUNT ? phase_names[p] : "?";
}

enum powerfail_phase powerfail_phase(const struct powerfail *pf)
{
	return pf->phase;
}

uint64_t powerfail_cut_ms(int64_t suite_seed, size_t board, int iteration, int attempt,
			  uint64_t lo_ms, uint64_t hi_ms)
{
	if (hi_ms < lo_ms)
		hi_ms = lo_ms;
	/* a splitmix64 finaliser over the inputs: reproducible, well spread */
	uint64_t seed = (uint64_t)suite_seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)board << 32) ^
			((uint64_t)iteration << 8) ^ (uint64_t)attempt;
	seed ^= seed >> 31;
	seed *= 0xBF58476D1CE4E5B9ull;
	seed ^= seed >> 27;
	return lo_ms + seed % (hi_ms - lo_ms + 1);
}

static void fail_now(struct powerfail *pf, int rc, enum board_fail fail, const char *msg)
{
	const char *what = powerfail_phase_name(pf->phase);
	loop_timer_stop(pf->loop, &pf->timer);
	pf->phase = POWERFAIL_IDLE;
	const char *kind = rc ? board_fail_name(fail) : "agent-protocol";
	const char *aerr = pf->hooks->agent_error ? pf->hooks->agent_error(pf->arg) : NULL;
	char *m = xasprintf("powerfail %s: %s", what, aerr && aerr[0] ? aerr : msg ? msg : "failed");
	pf->hooks->failed(pf->arg, kind, m);
	free(m);
}

void powerfail_fail(struct powerfail *pf, int rc, enum board_fail fail, const char *msg)
{
	if (pf->phase != POWERFAIL_IDLE)
		fail_now(pf, rc, fail, msg);
}

void powerfail_stop(struct powerfail *pf)
{
	loop_timer_stop(pf->loop, &pf->timer);
	pf->phase = POWERFAIL_IDLE;
}

/* writing -> power cut (the timer, or the writer finished first) */
static void cut(struct powerfail *pf)
{
	loop_timer_stop(pf->loop, &pf->timer);
	pf->phase = POWERFAIL_CUTTING;
	/* Abandon the writer mid-record: that is the point. */
	if (pf->hooks->power_off(pf->arg))
		fail_now(pf, LAB_EINFRA, FAIL_POWER, "the power driver refused");
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct powerfail *pf = arg;
	if (pf->phase == POWERFAIL_WRITING)
		cut(pf);
}

void powerfail_init(struct powerfail *pf, struct loop *l, const struct powerfail_hooks *hooks,
		    void *arg)
{
	*pf = (struct powerfail){.loop = l, .hooks = hooks, .arg = arg, .phase = POWERFAIL_IDLE};
	loop_timer_init(&pf->timer, on_timer, pf);
}

void powerfail_fini(struct powerfail *pf)
{
	powerfail_stop(pf);
	free(pf->check_args);
	free(pf->verify_args);
	pf->check_args = pf->verify_args = NULL;
}

void powerfail_start(struct powerfail *pf, const struct powerfail_iteration *it)
{
	free(pf->check_args);
	free(pf->verify_args);
	pf->check_args = xstrdup(it->check_args ? it->check_args : "");
	pf->verify_args = xstrdup(it->verify_args ? it->verify_args : "");
	pf->iteration = it->iteration;
	pf->agent_timeout_ms = it->agent_timeout_ms;
	pf->phase = POWERFAIL_WRITING;
	pf->acked = 0;
	loop_timer_start(pf->loop, &pf->timer, it->cut_ms);
	char *args = xasprintf("powerfail-write iter=%d%s", it->iteration,
			       it->write_args ? it->write_args : "");
	if (pf->hooks->agent(pf->arg, args, pf->agent_timeout_ms))
		fail_now(pf, LAB_OK, FAIL_AGENT_PROTOCOL, "could not start the agent");
	free(args);
}

bool powerfail_ack(struct powerfail *pf, int64_t seq)
{
	/* Acknowledgements stream while the writer runs: keep only the latest.
	 * Those that arrive after the cut was ordered were printed before the
	 * power died (the power driver takes its time, the console has buffers):
	 * the DUT acknowledged them, so they count.  Dropping them would hide the
	 * loss of the last records, the very loss a cache without FUA causes. */
	if (pf->phase != POWERFAIL_WRITING && pf->phase != POWERFAIL_CUTTING)
		return false;
	if (seq > pf->acked)
		pf->acked = seq;
	return true;
}

void powerfail_written(struct powerfail *pf, int rc, enum board_fail fail, const char *msg)
{
	if (pf->phase != POWERFAIL_WRITING)
		return;
	const char *aerr = pf->hooks->agent_error ? pf->hooks->agent_error(pf->arg) : NULL;
	if (rc != LAB_OK || (aerr && aerr[0])) {
		fail_now(pf, rc, fail, msg);
		return;
	}
	/* Every record was written before the cut came: cut now. */
	cut(pf);
}

void powerfail_powered_off(struct powerfail *pf, int rc, const char *msg)
{
	if (pf->phase != POWERFAIL_CUTTING)
		return;
	if (rc != LAB_OK) {
		fail_now(pf, LAB_EINFRA, FAIL_POWER, msg);
		return;
	}
	pf->phase = POWERFAIL_BOOTING;
	if (pf->hooks->boot(pf->arg))
		fail_now(pf, LAB_EINFRA, FAIL_POWER, "board busy");
}

void powerfail_booted(struct powerfail *pf, int rc, enum board_fail fail, const char *msg)
{
	if (pf->phase != POWERFAIL_BOOTING)
		return;
	if (rc != LAB_OK) {
		fail_now(pf, rc, fail, msg);
		return;
	}
	pf->phase = POWERFAIL_VERIFYING;
	if (pf->hooks->agent(pf->arg, pf->verify_args, 120000))
		fail_now(pf, LAB_OK, FAIL_AGENT_PROTOCOL, "could not start the agent");
}

void powerfail_verified(struct powerfail *pf)
{
	if (pf->phase != POWERFAIL_VERIFYING)
		return;
	pf->phase = POWERFAIL_CHECKING;
	char *args = xasprintf("powerfail-check iter=%d acked=%lld%s", pf->iteration,
			       (long long)pf->acked, pf->check_args);
	if (pf->hooks->agent(pf->arg, args, pf->agent_timeout_ms))
		fail_now(pf, LAB_OK, FAIL_AGENT_PROTOCOL, "could not start the agent");
	free(args);
}

void powerfail_checked(struct powerfail *pf, int rc, enum board_fail fail, const char *msg,
		       int64_t acked, int64_t lost, int64_t corrupt)
{
	if (pf->phase != POWERFAIL_CHECKING)
		return;
	const char *aerr = pf->hooks->agent_error ? pf->hooks->agent_error(pf->arg) : NULL;
	if (rc != LAB_OK || (aerr && aerr[0])) {
		fail_now(pf, rc, fail, msg);
		return;
	}
	if (acked < 0 || lost < 0 || corrupt < 0) {
		fail_now(pf, LAB_OK, FAIL_AGENT_PROTOCOL, "the check reported no acked/lost/corrupt counts");
		return;
	}
	pf->phase = POWERFAIL_IDLE;
	pf->hooks->checked(pf->arg, acked, lost, corrupt);
}
