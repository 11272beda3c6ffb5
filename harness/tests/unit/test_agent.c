/* test_agent.c - emmclab-agent itself (agent.c): resend of logged lines,
 * unknown commands and keys, no device. */
#include "test_agent.h"

static void test_resend_and_errors(const char *root, const char *empty)
{
	struct run r, s;
	char l2[PROTO_MAX_LINE], l4[PROTO_MAX_LINE];
	char *p;
	int i;

	run_agent(&r, "--sysroot", root, "mode", NULL);
	ok(r.nlines >= 3, "mode printed lines");
	/* lines 2 and 3 (1-based) of the first run */
	p = r.raw;
	for (i = 1; i < 2; i++)
		p = strchr(p, '\n') + 1;
	snprintf(l2, sizeof(l2), "%.*s", (int)(strchr(p, '\n') - p + 1), p);
	p = strchr(p, '\n') + 1;
	snprintf(l4, sizeof(l4), "%.*s", (int)(strchr(p, '\n') - p + 1), p);
	run_agent(&s, "resend", "3", "2", NULL);
	is_int(s.status, 0, "resend exit 0");
	{
		char want[2 * PROTO_MAX_LINE];

		snprintf(want, sizeof(want), "%s%s", l4, l2);
		is_str(s.raw, want, "resend is byte-identical, in the order asked");
	}
	run_free(&s);
	run_agent(&s, "resend", "99", NULL);
	is_int(s.status, 1, "resend of an unknown seq fails");
	is_int((long long)s.rawlen, 0, "and prints nothing on stdout");
	run_free(&s);
	run_free(&r);

	run_agent(&r, "--sysroot", empty, "frobnicate", NULL);
	is_int(r.status, 1, "unknown command: exit 1");
	is_int(r.bad, 0, "unknown command: still hello..done");
	ok(find_msg(&r, "error", "code", "bad-command") != NULL, "bad-command");
	run_free(&r);
	run_agent(&r, "--sysroot", empty, "androbench", "size=3", NULL);
	is_int(r.status, 1, "unknown key: exit 1");
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "unknown key: bad-arg");
	run_free(&r);
	run_agent(&r, "--sysroot", empty, "androbench", "iter=0", NULL);
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "iter=0 refused");
	run_free(&r);
	run_agent(&r, "--sysroot", empty, "mode", NULL);
	ok(find_msg(&r, "error", "code", "no-device") != NULL, "mode without a device");
	is_str(get_kv(&r, "hello", "device"), "none", "hello device=none");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	make_sysroot();
	test_resend_and_errors(sys_root, sys_empty);
	agent_cleanup();
	return tap_done();
}
