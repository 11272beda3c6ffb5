/* test_shell.c - the Linux shell session against a scripted board on a pty. */
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
	bool done;
	int rc, status;
	char out[65536];
	size_t len;
	int lines;
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
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
	r->status = status;
	r->len = len < sizeof r->out - 1 ? len : sizeof r->out - 1;
	memcpy(r->out, out, r->len);
	r->out[r->len] = '\0';
}

/* A callback that starts the next command at once, then reads its own
 * output again: the output handed to it must not be the new command's buffer. */
static char chain_seen[2048];
static void on_sh_chain(struct shell *s, int rc, int status, const char *out, size_t len, void *arg)
{
	struct rig *r = arg;
	size_t k = len < 1000 ? len : 1000;
	memcpy(chain_seen, out, k); /* before, '|', after */
	chain_seen[k] = '|';
	shell_run(s, "echo second", 2000, on_sh, r);
	memcpy(chain_seen + k + 1, out, k);
	chain_seen[2 * k + 1] = '\0';
	r->rc = rc;
	r->status = status;
}

static void on_line(struct shell *s, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(line);
	LAB_UNUSED(len);
	struct rig *r = arg;
	r->lines++;
}

static void rig_init(struct rig *r, bool uboot)
{
	memset(r, 0, sizeof *r);
	r->l = loop_new();
	if (fb_init(&r->fb, r->l))
		abort();
	r->fb.has_uboot = uboot;
	static const struct console_events ev = {.data = on_data};
	r->con = fb_console(&r->fb, r->l, &ev, r);
	r->x = expect_new(r->l, 0);
	r->cfg.login_pattern = (char *)"login: *$";
	r->cfg.prompt_pattern = (char *)"[#$] *$";
	r->cfg.user = (char *)"root";
	r->cfg.agent_path = (char *)"/usr/bin/emmclab-agent";
	r->sh = shell_new(r->l, r->con, r->x, &r->cfg, "fake");
}

static void rig_fini(struct rig *r)
{
	shell_free(r->sh);
	console_free(r->con);
	expect_free(r->x);
	fb_fini(&r->fb);
	loop_free(r->l);
}

static bool wait_done(struct rig *r, uint64_t ms)
{
	bool ok = fb_run_until(r->l, &r->done, ms);
	r->done = false;
	return ok;
}

static void test_login_and_run(void)
{
	struct rig r;
	rig_init(&r, false);
	r.fb.login = true;
	r.fb.password = "s3cret";
	setenv("EMMCLAB_TEST_PW", "s3cret", 1);
	r.cfg.password_env = (char *)"EMMCLAB_TEST_PW";
	fb_power_on(&r.fb);
	is_int(shell_attach(r.sh, 3000, 3000, on_sh, &r), LAB_OK, "attach started");
	ok(wait_done(&r, 5000), "attached");
	is_int(r.rc, LAB_OK, "logged in with the password");
	ok(!r.fb.echo, "stty -echo reached the board");
	is_str(r.fb.ps1, shell_prompt(r.sh), "unique prompt set");
	ok(strncmp(shell_prompt(r.sh), "EMMCLAB-", 8) == 0, "prompt has the EMMCLAB- prefix");

	shell_run(r.sh, "echo hello world", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "command ran");
	is_int(r.status, 0, "exit status 0");
	is_str(r.out, "hello world\n", "output between the markers only");

	shell_run(r.sh, "false", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.status, 1, "exit status 1");

	shell_run(r.sh, "nosuchcmd", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.status, 127, "not found: 127");

	/* kernel messages interleaved with output stay in the output, markers still found */
	r.fb.noise = true;
	shell_run_lines(r.sh, "noise", 2000, on_line, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "noisy command ok");
	is_int(r.lines, 3, "every output line passed to the line callback");
	r.fb.noise = false;

	/* a stale END marker of an older command (desync) is ignored */
	shell_run(r.sh, "echo @@END-1@@ 0", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "stale marker did not end the command early");
	is_str(r.out, "@@END-1@@ 0\n", "it is output");

	/* timeout: Ctrl-C is sent and the next command works */
	int cc = r.fb.ctrl_c;
	shell_run(r.sh, "hang", 300, on_sh, &r);
	wait_done(&r, 2000);
	is_int(r.rc, LAB_ETIMEOUT, "hanging command times out");
	is_int(shell_failure(r.sh), SHELL_FAIL_COMMAND_TIMEOUT, "classified command-timeout");
	shell_run(r.sh, "echo again", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.fb.ctrl_c, cc + 1, "Ctrl-C sent");
	is_str(r.out, "again\n", "session usable after a timeout");
	is_int(shell_run(r.sh, "a\nb", 100, on_sh, &r), LAB_EUSAGE, "newline in a command refused");

	/* characters of a marker lost on the way in: noticed at once, not after the timeout */
	uint64_t t0 = lab_now_ms();
	r.fb.mangle_end_once = true;
	shell_run(r.sh, "echo lost-end", 5000, on_sh, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_EPROTO, "lost END marker: protocol error");
	ok(lab_now_ms() - t0 < 2000, "detected by the prompt coming back, not by the timeout");
	ok(strstr(r.out, "lost-end") != NULL, "output so far kept: %s", r.out);
	r.fb.mangle_begin_once = true;
	shell_run(r.sh, "echo lost-begin", 5000, on_sh, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_EPROTO, "lost BEGIN marker: protocol error");
	shell_run(r.sh, "echo fine", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_str(r.out, "fine\n", "next command fine");

	/* outputs of different sizes in turn (the output and result buffers trade
	 * places and keep some room): each result is its own command's */
	char longcmd[1000] = "echo ", want[1000];
	memset(longcmd + 5, 'L', 900);
	longcmd[905] = '\0';
	snprintf(want, sizeof want, "%s\n", longcmd + 5);
	shell_run(r.sh, longcmd, 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_str(r.out, want, "a long output whole");
	shell_run(r.sh, "echo s", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_str(r.out, "s\n", "then a short one, nothing of the long one left");
	shell_run(r.sh, longcmd, 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_str(r.out, want, "and a long one again");
	shell_run(r.sh, "echo first", 2000, on_sh_chain, &r);
	ok(fb_run_until(r.l, &r.done, 3000), "a command started from the callback ran");
	is_str(chain_seen, "first\n|first\n", "its callback's output unchanged by starting it");
	is_str(r.out, "second\n", "and its own output is its own");
	rig_fini(&r);
}

static void test_files_and_agent(void)
{
	struct rig r;
	rig_init(&r, false);
	fb_power_on(&r.fb);
	shell_attach(r.sh, 3000, 3000, on_sh, &r);
	wait_done(&r, 5000);
	is_int(r.rc, LAB_OK, "direct shell prompt");

	unsigned char data[3000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 7 + (i >> 3));
	shell_put_data(r.sh, data, sizeof data, "/tmp/blob", 0, 10000, on_sh, &r);
	ok(wait_done(&r, 10000), "put finished");
	is_int(r.rc, LAB_OK, "put verified by sha256");
	struct fb_file *f = fb_file(&r.fb, "/tmp/blob", false);
	ok(f && f->data.len == sizeof data && memcmp(f->data.data, data, sizeof data) == 0,
	   "board has the exact bytes (%zu)", f ? f->data.len : 0);

	shell_get_file(r.sh, "/tmp/blob", 1 << 20, 5000, on_sh, &r);
	wait_done(&r, 5000);
	is_int(r.rc, LAB_OK, "get ok");
	ok(r.len == sizeof data && memcmp(r.out, data, sizeof data) == 0, "read back identical");

	shell_get_file(r.sh, "/tmp/blob", 100, 5000, on_sh, &r);
	wait_done(&r, 5000);
	ok(r.rc != LAB_OK, "read over the cap refused");

	/* the agent is missing: pushed from agent_local */
	char tmpl[] = "/tmp/emmclab-agent-XXXXXX";
	int fd = mkstemp(tmpl);
	ok(fd >= 0 && write(fd, "#!/bin/sh\necho fake agent\n", 26) == 26, "local agent file");
	close(fd);
	r.cfg.agent_local = tmpl;
	shell_ensure_agent(r.sh, 10000, on_sh, &r);
	wait_done(&r, 10000);
	is_int(r.rc, LAB_OK, "agent ensured");
	is_int(r.status, 1, "it was pushed");
	ok(r.fb.agent_installed, "board has an executable agent");
	shell_ensure_agent(r.sh, 10000, on_sh, &r);
	wait_done(&r, 10000);
	is_int(r.status, 0, "second check: present");
	unlink(tmpl);

	/* an oops while running */
	shell_run(r.sh, "oops", 2000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_EINFRA, "oops fails the command");
	is_int(shell_failure(r.sh), SHELL_FAIL_PANIC, "classified as panic");
	ok(strstr(shell_panic_line(r.sh), "Unable to handle kernel") != NULL, "panic line kept");
	rig_fini(&r);
}

static void test_boot_faults(void)
{
	struct rig r;
	rig_init(&r, false);
	r.fb.panic = true;
	shell_watch(r.sh);
	fb_power_on(&r.fb);
	shell_attach(r.sh, 3000, 3000, on_sh, &r);
	wait_done(&r, 5000);
	is_int(shell_failure(r.sh), SHELL_FAIL_PANIC, "panic during boot");

	r.fb.panic = false;
	r.fb.no_login = true;
	fb_power_off(&r.fb);
	shell_attach(r.sh, 500, 3000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(shell_failure(r.sh), SHELL_FAIL_PANIC, "a panic is remembered until shell_watch");
	shell_watch(r.sh);
	fb_power_on(&r.fb);
	shell_attach(r.sh, 500, 3000, on_sh, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_ETIMEOUT, "no prompt: timeout");
	is_int(shell_failure(r.sh), SHELL_FAIL_BOOT_TIMEOUT, "classified boot-timeout");

	r.fb.no_login = false;
	r.fb.login = true;
	r.fb.password = "right";
	r.cfg.password_env = (char *)"EMMCLAB_TEST_PW_UNSET";
	unsetenv("EMMCLAB_TEST_PW_UNSET");
	fb_power_off(&r.fb);
	shell_watch(r.sh);
	fb_power_on(&r.fb);
	shell_attach(r.sh, 3000, 3000, on_sh, &r);
	wait_done(&r, 5000);
	is_int(shell_failure(r.sh), SHELL_FAIL_LOGIN_REFUSED, "wrong password refused");
	ok(strstr(shell_errmsg(r.sh), "not set") != NULL, "says the variable is unset: %s",
	   shell_errmsg(r.sh));
	rig_fini(&r);
}

/* The whole boot log and the prompt arrived before the session was attached
 * (one burst after "Starting kernel"): the session presses Enter. */
static void test_prompt_already_there(void)
{
	struct rig r;
	rig_init(&r, false);
	shell_watch(r.sh);
	fb_power_on(&r.fb);
	fb_run_for(r.l, 300);
	ok(expect_buffered(r.x) > 0, "prompt text buffered before attaching");
	shell_attach(r.sh, 2000, 2000, on_sh, &r);
	ok(wait_done(&r, 3000), "finished");
	is_int(r.rc, LAB_OK, "attached to a prompt printed before");
	rig_fini(&r);
}

static void test_quote(void)
{
	char *q = shell_quote("/usr/bin/emmclab-agent");
	is_str(q, "/usr/bin/emmclab-agent", "plain path unquoted");
	free(q);
	q = shell_quote("it's a file");
	is_str(q, "'it'\\''s a file'", "quotes escaped");
	free(q);
}

int main(void)
{
	test_quote();
	test_login_and_run();
	test_files_and_agent();
	test_boot_faults();
	test_prompt_already_there();
	return tap_done();
}
