/* test_agent_session.c - one emmclab-agent invocation over the shell, against
 * the scripted board on a pty: seq order, CRC re-requests, bounded resends,
 * a stale hello, a missing agent, a busy shell. */
#include "agent_session.h"
#include "console.h"
#include "expect.h"
#include "fakeboard.h"
#include "shell.h"
#include "tap.h"

struct rig {
	struct loop *l;
	struct fakeboard fb;
	struct console *con;
	struct expect *x;
	struct shell_cfg cfg;
	struct shell *sh;
	struct agent_session *as;
	bool done;
	int rc;
	enum agent_session_fail fail;
	char msg[600], event[600], info[600];
	int ninfo;
	uint64_t seqs[16];
	int nmsgs;
};

static void on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct rig *r = arg;
	expect_feed(r->x, buf, n);
}

static void on_sh(struct shell *s, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(status);
	LAB_UNUSED(out);
	LAB_UNUSED(len);
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
}

static void on_msg(const struct proto_msg *m, void *arg)
{
	struct rig *r = arg;
	if (r->nmsgs < (int)LAB_ARRAY_SIZE(r->seqs))
		r->seqs[r->nmsgs] = m->seq;
	r->nmsgs++;
}

static void on_info(const char *msg, void *arg)
{
	struct rig *r = arg;
	r->ninfo++;
	lab_strlcpy(r->info, msg, sizeof r->info);
}

static void on_done(int rc, enum agent_session_fail fail, const char *msg, const char *event, void *arg)
{
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
	r->fail = fail;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
	lab_strlcpy(r->event, event ? event : "", sizeof r->event);
}

static const struct agent_session_cbs cbs = {.msg = on_msg, .info = on_info, .done = on_done};

static bool wait_done(struct rig *r, uint64_t ms)
{
	bool ok = fb_run_until(r->l, &r->done, ms);
	r->done = false;
	return ok;
}

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof *r);
	r->l = loop_new();
	if (fb_init(&r->fb, r->l))
		abort();
	r->fb.agent_installed = true;
	static const struct console_events ev = {.data = on_data};
	r->con = fb_console(&r->fb, r->l, &ev, r);
	r->x = expect_new(r->l, 0);
	r->cfg.login_pattern = (char *)"login: *$";
	r->cfg.prompt_pattern = (char *)"[#$] *$";
	r->cfg.user = (char *)"root";
	r->cfg.agent_path = (char *)"/usr/bin/emmclab-agent";
	r->sh = shell_new(r->l, r->con, r->x, &r->cfg, "fake");
	r->as = agent_session_new(r->sh);
	fb_power_on(&r->fb);
	if (shell_attach(r->sh, 3000, 3000, on_sh, r) || !wait_done(r, 5000) || r->rc)
		abort();
}

static void rig_fini(struct rig *r)
{
	agent_session_free(r->as);
	shell_free(r->sh);
	console_free(r->con);
	expect_free(r->x);
	fb_fini(&r->fb);
	loop_free(r->l);
}

static void run(struct rig *r, const char *args, uint64_t timeout_ms)
{
	r->nmsgs = 0;
	r->ninfo = 0;
	r->info[0] = '\0';
	is_int(agent_session_start(r->as, "/usr/bin/emmclab-agent", NULL, args, timeout_ms, &cbs, r),
	       LAB_OK, "session started");
	ok(wait_done(r, timeout_ms + 3000), "session ended");
}

int main(void)
{
	struct rig r;
	rig_init(&r);

	run(&r, "mode", 5000);
	is_int(r.rc, LAB_OK, "clean run: ok");
	is_int(r.nmsgs, 4, "four messages");
	is_int(r.ninfo, 0, "no re-request");
	ok(r.event[0] == '\0', "no event");

	r.fb.corrupt_seq = 3;
	r.fb.noise = true;
	run(&r, "mode expect=fua", 5000);
	is_int(r.rc, LAB_OK, "ok after a resend");
	is_int(r.nmsgs, 4, "four messages");
	ok(r.seqs[0] == 1 && r.seqs[1] == 2 && r.seqs[2] == 3 && r.seqs[3] == 4, "in seq order");
	is_int(r.ninfo, 1, "one re-request");
	is_str(r.info, "agent: re-requesting 1 line (try 1)", "re-request text");
	r.fb.noise = false;

	r.fb.corrupt_always = 2;
	run(&r, "mode", 8000);
	is_int(r.rc, LAB_EINFRA, "persistent corruption fails");
	is_int(r.fail, AGENT_SESSION_PROTOCOL, "as a protocol failure");
	is_int(r.ninfo, AGENT_SESSION_RESEND_TRIES, "bounded re-requests");
	is_str(r.msg, "agent: lines still missing after 3 resend requests (seq 2)", "message");
	is_str(r.event, "lines still missing after 3 resend requests: seq 2", "event to record");
	is_int(r.nmsgs, 1, "only the line before the gap delivered");
	r.fb.corrupt_always = 0;

	/* the fake agent always says hello cmd=mode: another command's session must not trust it */
	run(&r, "identify", 5000);
	is_int(r.rc, LAB_EINFRA, "stale hello fails");
	ok(strstr(r.msg, "not this invocation's hello (cmd=identify expected)") != NULL, "says so: %s",
	   r.msg);

	r.fb.agent_installed = false;
	run(&r, "mode", 5000);
	is_int(r.fail, AGENT_SESSION_PROTOCOL, "missing agent: protocol");
	is_str(r.msg, "agent printed no protocol line (exit 127: not found)", "missing agent message");
	is_int(r.nmsgs, 0, "nothing replayed from an older log");
	r.fb.agent_installed = true;

	/* a busy shell refuses, and the session in flight is not disturbed */
	is_int(agent_session_start(r.as, "/usr/bin/emmclab-agent", NULL, "mode", 5000, &cbs, &r), LAB_OK,
	       "started");
	is_int(agent_session_start(r.as, "/usr/bin/emmclab-agent", NULL, "mode", 5000, &cbs, &r),
	       LAB_EUSAGE, "second start while the shell is busy: refused");
	ok(wait_done(&r, 8000), "the first session ends");
	is_int(r.rc, LAB_OK, "and is ok");

	rig_fini(&r);
	return tap_done();
}
