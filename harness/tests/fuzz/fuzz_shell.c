/*
 * fuzz_shell.c - libFuzzer target for the Linux shell session (shell.c) on
 * arbitrary console output: finding the login or shell prompt, logging in,
 * commands between markers (with their output lines), a file read back in
 * base64, each answered by pieces of the input (fuzz_board.h), and an agent
 * session (agent_session.c: protocol lines, CRC re-requests, gaps).  Every
 * operation completes once, with a known rc and output within SHELL_MAX_OUTPUT;
 * the agent's messages arrive in increasing seq order, each once.
 */
#include "agent_session.h"
#include "fuzz_board.h"
#include "shell.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_sh(struct shell *s, int rc, int st, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(st);
	LAB_UNUSED(arg);
	if (fzb.done || len > SHELL_MAX_OUTPUT || (out && strlen(out) > len))
		abort();
	if (rc < LAB_OK || rc > LAB_EPROTO)
		abort();
	fzb.done = true;
	fzb.rc = rc;
}

static uint64_t last_seq;

static void on_msg(const struct proto_msg *m, void *arg)
{
	LAB_UNUSED(arg);
	if (m->seq <= last_seq)
		abort(); /* out of order or twice */
	last_seq = m->seq;
}

static void on_agent_done(int rc, enum agent_session_fail fail, const char *msg, const char *event,
                          void *arg)
{
	LAB_UNUSED(fail);
	LAB_UNUSED(event);
	LAB_UNUSED(arg);
	if (fzb.done || (rc != LAB_OK && (!msg || !*msg)))
		abort(); /* twice, or a failure without a reason */
	fzb.done = true;
	fzb.rc = rc;
}

static void on_line(struct shell *s, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(s);
	LAB_UNUSED(arg);
	if (memchr(line, '\n', len))
		abort(); /* a line callback gets one line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct shell_cfg cfg = {
	    .login_pattern = (char *)"login: *$",
	    .user = (char *)"root",
	    .password_env = (char *)"",
	    .prompt_pattern = (char *)"[#$] *$",
	    .agent_path = (char *)"/usr/bin/emmclab-agent",
	    .agent_local = (char *)"",
	    .block_device = (char *)"",
	};
	if (!fzb_begin(data, size))
		return 0;
	struct shell *s = shell_new(fzb.l, fzb.con, fzb.x, &cfg, "fuzz");
	fzb.subst = shell_prompt(s);
	shell_watch(s);
	bool ok =
	    shell_attach(s, 40, 40, on_sh, NULL) == LAB_OK && fzb_wait(3000) && fzb.rc == LAB_OK;
	if (ok)
		ok = shell_run(s, "uname -r", 25, on_sh, NULL) == LAB_OK && fzb_wait(3000) &&
		     fzb.rc == LAB_OK;
	if (ok)
		ok = shell_run_lines(s, "emmclab-agent identify", 25, on_line, on_sh, NULL) ==
		         LAB_OK &&
		     fzb_wait(3000) && fzb.rc == LAB_OK;
	if (ok) {
		static const struct agent_session_cbs cbs = {.msg = on_msg, .done = on_agent_done};
		struct agent_session *as = agent_session_new(s);
		last_seq = 0;
		ok = agent_session_start(as, "/usr/bin/emmclab-agent", "", "mode expect=fua", 60,
		                         &cbs, NULL) == LAB_OK &&
		     fzb_wait(3000) && fzb.rc == LAB_OK;
		agent_session_free(as);
	}
	if (ok && shell_get_file(s, "/proc/cmdline", 4096, 25, on_sh, NULL) == LAB_OK)
		fzb_wait(3000);
	if (shell_busy(s))
		abort(); /* an operation outlived its timeout */
	shell_free(s);
	fzb_end();
	return 0;
}
