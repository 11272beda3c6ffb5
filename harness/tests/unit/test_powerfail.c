/* The power-fail state machine: every transition, the cut timer, failures
 * named by the phase they happened in, transitions out of phase ignored. */
#include "powerfail.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* What the hooks saw. */
static struct {
	int agents, power_offs, boots, faileds, checkeds;
	char agent_args[256];
	uint64_t agent_timeout;
	char kind[64], msg[256];
	int64_t acked, lost, corrupt;
	int refuse_agent, refuse_power, refuse_boot;
	const char *agent_error;
} h;

static int hk_agent(void *arg, const char *args, uint64_t timeout_ms)
{
	LAB_UNUSED(arg);
	h.agents++;
	lab_strlcpy(h.agent_args, args, sizeof h.agent_args);
	h.agent_timeout = timeout_ms;
	return h.refuse_agent ? LAB_EUSAGE : LAB_OK;
}

static int hk_power_off(void *arg)
{
	LAB_UNUSED(arg);
	h.power_offs++;
	return h.refuse_power ? LAB_EUSAGE : LAB_OK;
}

static int hk_boot(void *arg)
{
	LAB_UNUSED(arg);
	h.boots++;
	return h.refuse_boot ? LAB_EUSAGE : LAB_OK;
}

static const char *hk_agent_error(void *arg)
{
	LAB_UNUSED(arg);
	return h.agent_error ? h.agent_error : "";
}

static void hk_failed(void *arg, const char *kind, const char *msg)
{
	LAB_UNUSED(arg);
	h.faileds++;
	lab_strlcpy(h.kind, kind, sizeof h.kind);
	lab_strlcpy(h.msg, msg, sizeof h.msg);
}

static void hk_checked(void *arg, int64_t acked, int64_t lost, int64_t corrupt)
{
	LAB_UNUSED(arg);
	h.checkeds++;
	h.acked = acked;
	h.lost = lost;
	h.corrupt = corrupt;
}

static const struct powerfail_hooks hooks = {
	.agent = hk_agent, .power_off = hk_power_off, .boot = hk_boot,
	.agent_error = hk_agent_error, .failed = hk_failed, .checked = hk_checked,
};

static const struct powerfail_iteration iter = {
	.iteration = 3,
	.cut_ms = 60000, /* the tests below cut by the writer ending, unless they say so */
	.agent_timeout_ms = 7000,
	.write_args = " records=100",
	.check_args = " file=/tmp/pf",
	.verify_args = "mode expect=fua",
};

static void start(struct powerfail *pf, struct loop *l)
{
	memset(&h, 0, sizeof h);
	powerfail_init(pf, l, &hooks, NULL);
	powerfail_start(pf, &iter);
}

static void test_names(void)
{
	is_str(powerfail_phase_name(POWERFAIL_IDLE), "idle", "idle");
	is_str(powerfail_phase_name(POWERFAIL_WRITING), "write", "writing is named for messages");
	is_str(powerfail_phase_name(POWERFAIL_CUTTING), "power cut", "cutting");
	is_str(powerfail_phase_name(POWERFAIL_BOOTING), "boot after the cut", "booting");
	is_str(powerfail_phase_name(POWERFAIL_VERIFYING), "mode verification after the cut", "verifying");
	is_str(powerfail_phase_name(POWERFAIL_CHECKING), "check", "checking");
	is_str(powerfail_phase_name(POWERFAIL_PHASE_COUNT), "?", "out of range");
}

static void test_whole_iteration(void)
{
	struct loop *l = loop_new();
	struct powerfail pf;
	start(&pf, l);
	is_int(powerfail_phase(&pf), POWERFAIL_WRITING, "start: writing");
	is_str(h.agent_args, "powerfail-write iter=3 records=100", "the writer's command line");
	is_int((long long)h.agent_timeout, 7000, "the writer's timeout");
	ok(powerfail_ack(&pf, 5), "an ack while writing is taken");
	ok(powerfail_ack(&pf, 4), "an older ack is taken too");
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	is_int(powerfail_phase(&pf), POWERFAIL_CUTTING, "writer done: the power is cut");
	is_int(h.power_offs, 1, "power off asked once");
	ok(powerfail_ack(&pf, 9), "an ack drained while the power is being cut is taken");
	ok(powerfail_ack(&pf, 7), "an older one too");
	powerfail_booted(&pf, LAB_OK, FAIL_NONE, NULL);
	is_int(powerfail_phase(&pf), POWERFAIL_CUTTING, "booted before powered off: ignored");
	powerfail_powered_off(&pf, LAB_OK, NULL);
	is_int(powerfail_phase(&pf), POWERFAIL_BOOTING, "powered off: booting");
	ok(!powerfail_ack(&pf, 12), "no acks once the cut is over");
	is_int(h.boots, 1, "boot asked once");
	powerfail_booted(&pf, LAB_OK, FAIL_NONE, NULL);
	is_int(powerfail_phase(&pf), POWERFAIL_VERIFYING, "booted: verifying");
	is_str(h.agent_args, "mode expect=fua", "the verification command");
	is_int((long long)h.agent_timeout, 120000, "verification's timeout");
	powerfail_verified(&pf);
	is_int(powerfail_phase(&pf), POWERFAIL_CHECKING, "verified: checking");
	is_str(h.agent_args, "powerfail-check iter=3 acked=9 file=/tmp/pf",
	       "the check, with the highest ack up to the end of the cut");
	powerfail_checked(&pf, LAB_OK, FAIL_NONE, NULL, 5, 1, 0);
	is_int(powerfail_phase(&pf), POWERFAIL_IDLE, "checked: idle");
	is_int(h.checkeds, 1, "result reported once");
	is_int(h.acked, 5, "acked");
	is_int(h.lost, 1, "lost records are a result");
	is_int(h.faileds, 0, "no failure");
	powerfail_fini(&pf);
	loop_free(l);
}

static void test_timer_cuts(void)
{
	struct loop *l = loop_new();
	struct powerfail pf;
	memset(&h, 0, sizeof h);
	powerfail_init(&pf, l, &hooks, NULL);
	struct powerfail_iteration it = iter;
	it.cut_ms = 5;
	powerfail_start(&pf, &it);
	uint64_t end = lab_now_ms() + 2000;
	while (h.power_offs == 0 && lab_now_ms() < end)
		loop_run_once(l, 50);
	is_int(h.power_offs, 1, "the timer cuts the power while the writer runs");
	is_int(powerfail_phase(&pf), POWERFAIL_CUTTING, "cutting");
	powerfail_written(&pf, LAB_EINFRA, FAIL_COMMAND_TIMEOUT, "late");
	is_int(powerfail_phase(&pf), POWERFAIL_CUTTING, "a writer ending after the cut is ignored");
	is_int(h.faileds, 0, "and is no failure");
	powerfail_fini(&pf);
	loop_free(l);
}

static void test_failures(void)
{
	struct loop *l = loop_new();
	struct powerfail pf;

	start(&pf, l);
	powerfail_written(&pf, LAB_EINFRA, FAIL_KERNEL_PANIC, "agent: panic");
	is_int(powerfail_phase(&pf), POWERFAIL_IDLE, "writer failed: idle");
	is_str(h.kind, "kernel-panic", "kind from the board's failure class");
	is_str(h.msg, "powerfail write: agent: panic", "message names the phase");
	is_int(h.power_offs, 0, "no cut after a failed writer");
	powerfail_fini(&pf);

	start(&pf, l);
	h.agent_error = "agent error io: EIO";
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	is_str(h.kind, "agent-protocol", "an agent error line fails the writer");
	is_str(h.msg, "powerfail write: agent error io: EIO", "the error line is the reason");
	powerfail_fini(&pf);

	memset(&h, 0, sizeof h);
	h.refuse_agent = 1;
	powerfail_init(&pf, l, &hooks, NULL);
	powerfail_start(&pf, &iter);
	is_str(h.msg, "powerfail write: could not start the agent", "agent refused");
	is_int(powerfail_phase(&pf), POWERFAIL_IDLE, "idle");
	powerfail_fini(&pf);

	start(&pf, l);
	h.refuse_power = 1;
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	is_str(h.kind, "power", "refused cut: power");
	is_str(h.msg, "powerfail power cut: the power driver refused", "refused cut message");
	powerfail_fini(&pf);

	start(&pf, l);
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_EINFRA, "relay stuck");
	is_str(h.kind, "power", "power off failed: power");
	is_str(h.msg, "powerfail power cut: relay stuck", "power off failure message");
	powerfail_fini(&pf);

	start(&pf, l);
	h.refuse_boot = 1;
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_OK, NULL);
	is_str(h.msg, "powerfail boot after the cut: board busy", "boot refused");
	powerfail_fini(&pf);

	start(&pf, l);
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_OK, NULL);
	powerfail_booted(&pf, LAB_EINFRA, FAIL_BOOT_TIMEOUT, NULL);
	is_str(h.kind, "boot-timeout", "boot failure kind");
	is_str(h.msg, "powerfail boot after the cut: failed", "no reason given: failed");
	powerfail_fini(&pf);

	start(&pf, l);
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_OK, NULL);
	powerfail_booted(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_fail(&pf, LAB_OK, FAIL_NONE, NULL);
	is_str(h.msg, "powerfail mode verification after the cut: failed", "runner's verification failure");
	powerfail_fini(&pf);

	start(&pf, l);
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_OK, NULL);
	powerfail_booted(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_stop(&pf);
	is_int(powerfail_phase(&pf), POWERFAIL_IDLE, "stop: idle");
	is_int(h.faileds, 0, "stop reports nothing");
	powerfail_fail(&pf, LAB_EINFRA, FAIL_POWER, "x");
	is_int(h.faileds, 0, "a failure when idle is ignored");
	powerfail_fini(&pf);

	start(&pf, l);
	powerfail_written(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_powered_off(&pf, LAB_OK, NULL);
	powerfail_booted(&pf, LAB_OK, FAIL_NONE, NULL);
	powerfail_verified(&pf);
	powerfail_checked(&pf, LAB_OK, FAIL_NONE, NULL, 10, -1, 0);
	is_str(h.msg, "powerfail check: the check reported no acked/lost/corrupt counts", "missing counts");
	is_int(h.checkeds, 0, "no result without counts");
	powerfail_fini(&pf);

	loop_free(l);
}

static void test_cut_ms(void)
{
	uint64_t a = powerfail_cut_ms(42, 1, 2, 0, 500, 3000);
	ok(a >= 500 && a <= 3000, "cut within [lo, hi] (%llu)", (unsigned long long)a);
	is_int((long long)powerfail_cut_ms(42, 1, 2, 0, 500, 3000), (long long)a, "reproducible");
	bool differs = false;
	for (int i = 0; i < 8; i++)
		differs |= powerfail_cut_ms(42, 1, 2 + i, 0, 500, 3000) != a;
	ok(differs, "another iteration cuts elsewhere");
	is_int((long long)powerfail_cut_ms(7, 0, 1, 0, 800, 100), 800, "hi below lo counts as lo");
}

int main(void)
{
	test_names();
	test_whole_iteration();
	test_timer_cuts();
	test_failures();
	test_cut_ms();
	return tap_done();
}
