/* test_board.c - the board state machine against a scripted board on a pty,
 * powered through the real `exec` power driver (commands write to a FIFO the
 * fake board listens on). */
#include "board.h"
#include "console.h"
#include "fakeboard.h"
#include "power.h"
#include "tap.h"

#include <dirent.h>
#include <sys/stat.h>

struct rig {
	struct loop *l;
	struct fakeboard fb;
	char dir[64];
	char fifo[128];
	int fifo_fd;
	int acks_after_off;   /* acks still in flight when the power goes (written raw) */
	struct board_type type;
	struct board_cfg cfg;
	struct lab_cfg lab;
	struct kernel_cfg kernel;
	struct board *b;
	/* results */
	bool done;
	int rc;
	enum board_fail fail;
	char msg[700];
	char events[4096];
	int nretry, nquarantine, ntranscripts;
	uint64_t transcript_bytes;
	char transcript_path[512];
	uint64_t seqs[16];
	int nmsgs;
	int status;
	char out[1024];
	char trace[16384];
	bool pw_done;
	int pw_rc, pw_state;
	uint64_t pw_at_ns, off_at_ns;
};

static void on_fifo(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(ev);
	struct rig *r = arg;
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *save = NULL, *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
		if (strcmp(w, "on") == 0)
			fb_power_on(&r->fb);
		else if (strcmp(w, "off") == 0) {
			fb_power_off(&r->fb);
			r->off_at_ns = lab_now_ns();
			for (; r->acks_after_off > 0; r->acks_after_off--)
				fb_agent_ack(&r->fb, true);
		}
	}
}

static void on_event(struct board *b, const char *kind, const char *stage, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rig *r = arg;
	char line[600];
	snprintf(line, sizeof line, "%s@%s: %.500s\n", kind, stage ? stage : "-", msg);
	lab_strlcat(r->events, line, sizeof r->events);
	if (strcmp(kind, "retry") == 0)
		r->nretry++;
	if (strcmp(kind, "quarantine") == 0)
		r->nquarantine++;
}

static void on_transcript(struct board *b, const char *path, const char *sha, uint64_t bytes,
			  int boot_n, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(sha);
	LAB_UNUSED(boot_n);
	struct rig *r = arg;
	r->ntranscripts++;
	r->transcript_bytes = bytes;
	lab_strlcpy(r->transcript_path, path, sizeof r->transcript_path);
}

static void on_done(struct board *b, int rc, enum board_fail fail, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
	r->fail = fail;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

static void on_cmd(struct board *b, int rc, int status, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(len);
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
	r->status = status;
	lab_strlcpy(r->out, out, sizeof r->out);
}

static void on_msg(struct board *b, const struct proto_msg *m, void *arg)
{
	LAB_UNUSED(b);
	struct rig *r = arg;
	if (r->nmsgs < 16)
		r->seqs[r->nmsgs++] = m->seq;
}

static void on_pw(struct board *b, int rc, int state, const char *msg, void *arg)
{
	LAB_UNUSED(b);
	LAB_UNUSED(msg);
	struct rig *r = arg;
	r->pw_done = true;
	r->pw_rc = rc;
	r->pw_state = state;
	r->pw_at_ns = lab_now_ns();
}

static struct cfg_node *node(const char *yaml)
{
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("test", yaml, strlen(yaml), &n, &e)) {
		fprintf(stderr, "yaml: %s\n", e.msg);
		abort();
	}
	return n;
}

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof *r);
	r->l = loop_new();
	if (fb_init(&r->fb, r->l))
		abort();
	r->fb.agent_installed = true;
	snprintf(r->dir, sizeof r->dir, "/tmp/emmclab-tb-XXXXXX");
	if (!mkdtemp(r->dir))
		abort();
	snprintf(r->fifo, sizeof r->fifo, "%s/power", r->dir);
	if (mkfifo(r->fifo, 0600))
		abort();
	r->fifo_fd = open(r->fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	loop_fd_add(r->l, r->fifo_fd, LOOP_READ, on_fifo, r);

	struct board_type *t = &r->type;
	t->name = (char *)"fake-type";
	t->uboot.autoboot_pattern = (char *)"Hit any key to stop autoboot";
	t->uboot.interrupt_key = (char *)" ";
	t->uboot.prompt = (char *)"=> ";
	t->uboot.bootargs = (char *)"console=ttyS0";
	t->shell.login_pattern = (char *)"login: *$";
	t->shell.prompt_pattern = (char *)"[#$] *$";
	t->shell.user = (char *)"root";
	t->shell.agent_path = (char *)"/usr/bin/emmclab-agent";
	t->timeouts = (struct timeouts_cfg){.power_ms = 3000, .first_output_ms = 800,
		.bootloader_ms = 2000, .deploy_ms = 2000, .boot_ms = 1500, .login_ms = 1500,
		.command_ms = 3000};
	t->retries = 1;
	t->quarantine_after = 2;

	/* the console through a link the test can remove: a vanished board's
	 * /dev/pts/N is soon another program's pty */
	char yaml[512], link[128];
	snprintf(link, sizeof link, "%s/tty", r->dir);
	if (symlink(r->fb.path, link))
		abort();
	snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\nreconnect_delay: 100ms\nreconnect_window: 500ms\n",
		 link);
	r->cfg.console = node(yaml);
	snprintf(yaml, sizeof yaml,
		 "driver: exec\noff_time: 50ms\non: [sh, -c, 'echo on > %s']\noff: [sh, -c, 'echo off > %s']\n",
		 r->fifo, r->fifo);
	r->cfg.power = node(yaml);
	r->cfg.name = (char *)"fake1";
	r->cfg.type = t;
	r->lab.transcripts = r->dir;
	r->kernel.name = (char *)"k";
	r->kernel.cmdline = (char *)"root=/dev/mmcblk0p2";

	static const struct board_events ev = {.event = on_event, .transcript = on_transcript};
	struct lab_err e = {0};
	if (board_new(r->l, &r->lab, &r->cfg, &ev, r, &r->b, &e)) {
		fprintf(stderr, "board_new: %s\n", e.msg);
		abort();
	}
}

static void rig_fini(struct rig *r)
{
	board_free(r->b);
	cfg_free(r->cfg.console);
	cfg_free(r->cfg.power);
	loop_fd_del(r->l, r->fifo_fd);
	close(r->fifo_fd);
	fb_fini(&r->fb);
	/* let the power commands' children be reaped */
	for (int i = 0; i < 10; i++)
		loop_run_once(r->l, 10);
	loop_free(r->l);
	DIR *d = opendir(r->dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[700];
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", r->dir, de->d_name);
		if (unlink(p)) {
			/* the -work directory */
			rmdir(p);
		}
	}
	if (d)
		closedir(d);
	rmdir(r->dir);
}

static bool wait_done(struct rig *r, uint64_t ms)
{
	bool ok = fb_run_until(r->l, &r->done, ms);
	r->done = false;
	return ok;
}

static void test_happy_path(void)
{
	struct rig r;
	rig_init(&r);
	is_str(board_state_name(board_get_state(r.b)), "off", "starts off");
	is_int(board_boot(r.b, &r.kernel, "mmc_block.fua=off mmc_core.disable_cqe=1", NULL, on_done, &r),
	       LAB_OK, "boot started");
	is_int(board_boot(r.b, &r.kernel, "", NULL, on_done, &r), LAB_EUSAGE, "one operation at a time");
	ok(wait_done(&r, 10000), "boot finished");
	is_int(r.rc, LAB_OK, "booted to a shell");
	if (r.rc)
		fprintf(stderr, "# %s\n# events:\n%s", r.msg, r.events);
	is_str(board_state_name(board_get_state(r.b)), "shell", "state shell");
	is_str(r.fb.last_cmdline, "console=ttyS0 root=/dev/mmcblk0p2 mmc_block.fua=off mmc_core.disable_cqe=1",
	       "type bootargs + kernel cmdline + mode cmdline reached the kernel");

	board_shell(r.b, "cat /proc/cmdline", 0, on_cmd, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "shell command");
	ok(strstr(r.out, "mmc_block.fua=off") != NULL, "its output: %s", r.out);

	/* the agent: line 3 arrives with a bad CRC and is re-requested */
	r.fb.corrupt_seq = 3;
	r.fb.noise = true;
	is_int(board_agent(r.b, "mode expect=fua", 5000, on_msg, on_done, &r), LAB_OK, "agent started");
	ok(wait_done(&r, 8000), "agent finished");
	is_int(r.rc, LAB_OK, "agent ok after resend");
	is_int(r.nmsgs, 4, "four messages");
	ok(r.seqs[0] == 1 && r.seqs[1] == 2 && r.seqs[2] == 3 && r.seqs[3] == 4, "delivered in seq order");
	ok(strstr(r.events, "re-requesting 1 line") != NULL, "resend noted as an event");

	/* the END marker is mangled on the way in: the agent's own lines still decide */
	r.nmsgs = 0;
	r.fb.mangle_end_once = true;
	board_agent(r.b, "mode", 5000, on_msg, on_done, &r);
	ok(wait_done(&r, 8000), "agent finished");
	is_int(r.rc, LAB_OK, "agent ok although the shell's end marker was lost");
	is_int(r.nmsgs, 4, "all four messages");

	/* a line that stays corrupted: bounded resends, then agent-protocol */
	r.nmsgs = 0;
	r.fb.corrupt_always = 2;
	board_agent(r.b, "mode", 8000, on_msg, on_done, &r);
	ok(wait_done(&r, 10000), "agent finished");
	is_str(board_fail_name(r.fail), "agent-protocol", "persistent corruption: agent-protocol");
	ok(strstr(r.msg, "seq 2") != NULL, "names the missing line: %s", r.msg);
	is_int(r.nmsgs, 1, "only the line before the gap was delivered");
	ok(strstr(r.events, "(try 3)") != NULL && strstr(r.events, "(try 4)") == NULL,
	   "three resend requests");
	r.fb.corrupt_always = 0;

	/* the agent vanished: exit 127, nothing replayed from the old log */
	r.nmsgs = 0;
	r.fb.agent_installed = false;
	board_agent(r.b, "mode", 5000, on_msg, on_done, &r);
	wait_done(&r, 8000);
	is_str(board_fail_name(r.fail), "agent-protocol", "missing agent: agent-protocol");
	ok(strstr(r.msg, "not found") != NULL, "says not found: %s", r.msg);
	is_int(r.nmsgs, 0, "no stale message delivered");
	r.fb.agent_installed = true;

	board_power_off(r.b, on_done, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "powered off");
	is_int(r.fb.mode, FB_OFF, "the board is off");
	is_int(r.ntranscripts, 1, "one transcript for one boot");
	ok(r.transcript_bytes > 500, "transcript has the boot (%llu bytes)",
	   (unsigned long long)r.transcript_bytes);
	char *t = NULL;
	size_t tl = 0;
	struct lab_err e = {0};
	ok(lab_read_file(r.transcript_path, 1 << 20, &t, &tl, &e) == 0 && strstr(t, "Hit any key") &&
	   strstr(t, "Starting kernel") && strstr(t, "@@emmclab 1 4 done"), "transcript holds U-Boot, kernel and agent");
	ok(strstr(r.transcript_path, "/fake1-1-") != NULL, "named <board>-<boot>-<utc>: %s", r.transcript_path);
	free(t);
	rig_fini(&r);
}

static void test_retry_then_success(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.panic = true;
	r.fb.faults_left = 1; /* first boot only */
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	ok(wait_done(&r, 15000), "finished");
	is_int(r.rc, LAB_OK, "second attempt succeeded");
	is_int(r.nretry, 1, "one retry");
	ok(strstr(r.events, "kernel-panic@booting") != NULL, "first attempt classified kernel-panic");
	is_int(board_boot_count(r.b), 2, "two boots, two transcripts");
	is_int(r.ntranscripts, 1, "first transcript closed when the retry began");
	rig_fini(&r);
}

static void expect_failure(const char *what, void (*setup)(struct fakeboard *), enum board_fail want)
{
	struct rig r;
	rig_init(&r);
	setup(&r.fb);
	uint64_t t0 = lab_now_ms();
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	ok(wait_done(&r, 20000), "%s: finished", what);
	is_int(r.rc, LAB_EINFRA, what);
	is_str(board_fail_name(r.fail), board_fail_name(want), what);
	is_int(r.nretry, 1, "retried once (retries: 1)");
	ok(lab_now_ms() - t0 < 15000, "%s: within the stage budgets", what);
	ok(r.msg[0] != '\0', "%s: message: %s", what, r.msg);
	rig_fini(&r);
}

static void set_no_output(struct fakeboard *f)
{
	f->no_output = true;
}

static void set_uboot_hang(struct fakeboard *f)
{
	f->uboot_hang = true;
}

static void set_no_login(struct fakeboard *f)
{
	f->no_login = true;
}

static void set_login_wrong(struct fakeboard *f)
{
	f->login = true;
	f->password = "nobody-knows";
}

static void set_agent_missing(struct fakeboard *f)
{
	f->agent_installed = false;
}

static void test_quarantine(void)
{
	struct rig r;
	rig_init(&r);
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	wait_done(&r, 10000);
	is_int(r.rc, LAB_OK, "boots while healthy");
	int boots = r.fb.boots;
	board_health_fail(r.b, "job 1 failed");
	ok(!board_quarantined(r.b), "one failure: not yet");
	board_health_ok(r.b);
	is_int(board_failures(r.b), 0, "success resets the count");
	board_health_fail(r.b, "job 2 failed");
	board_health_fail(r.b, "job 3 failed");
	ok(board_quarantined(r.b), "quarantined after 2 consecutive failures");
	board_health_fail(r.b, "job 4 failed");
	is_int(r.nquarantine, 1, "quarantine event emitted once");
	is_str(board_state_name(board_get_state(r.b)), "quarantined", "state quarantined");
	is_int(board_boot(r.b, &r.kernel, "", NULL, on_done, &r), LAB_OK, "boot call accepted");
	ok(!r.done, "callback not run inside the call");
	wait_done(&r, 2000);
	is_str(board_fail_name(r.fail), "quarantined", "refused: quarantined");
	is_int(r.fb.boots, boots, "the board was not touched");
	board_power_off(r.b, on_done, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "a quarantined board can still be switched off");
	rig_fini(&r);
}

static void test_paced_uboot(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.fifo = 16;
	r.type.uboot.char_delay_ms = 3;
	r.type.uboot.chunk = 8;
	board_boot(r.b, &r.kernel, "mmc_block.fua=on mmc_core.disable_cqe=0", NULL, on_done, &r);
	ok(wait_done(&r, 15000), "finished");
	is_int(r.rc, LAB_OK, "boot through a 16-byte FIFO with paced typing");
	ok(strstr(r.fb.last_cmdline, "mmc_core.disable_cqe=0") != NULL, "long bootargs intact: %s",
	   r.fb.last_cmdline);
	rig_fini(&r);
}

static void on_trace(struct board *b, const char *what, const char *detail, void *arg)
{
	LAB_UNUSED(b);
	struct rig *r = arg;
	char line[800];
	snprintf(line, sizeof line, "%s: %s\n", what, detail);
	lab_strlcat(r->trace, line, sizeof r->trace);
}

/* bootdelay -2: U-Boot boots by itself.  Without a deploy at the prompt the
 * board carries on to its shell and says why the U-Boot step was skipped. */
static void test_autoboot_by_itself(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.autoboot_silent = true;
	board_set_trace(r.b, on_trace, &r);
	uint64_t t0 = lab_now_ms();
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	ok(wait_done(&r, 10000), "finished");
	ok(r.rc == LAB_OK, "reached the shell (%s)", r.msg);
	ok(lab_now_ms() - t0 < 2800, "without waiting out the bootloader budget (2.8 s)");
	ok(strstr(r.events, "info@bootloader") && strstr(r.events, "booted by itself") &&
	   strstr(r.events, "carrying on"), "said so: %s", r.events);
	is_int(r.nretry, 0, "no retry");
	/* --explain's lines: each wait with its pattern and budget, and what came */
	ok(strstr(r.trace, "step: power cycle (exec, budget 3.0 s)") &&
	   strstr(r.trace, "waits for: U-Boot: /Hit any key to stop autoboot/ (autoboot), the prompt `=> ` "
		  "or kernel start, 2.8 s") &&
	   strstr(r.trace, "matched: U-Boot: Starting kernel (the kernel started without us)") &&
	   strstr(r.trace, "waits for: Linux: login /login: *$/ or shell prompt /[#$] *$/ within 1.5 s") &&
	   strstr(r.trace, "matched: a working shell"), "trace: %s", r.trace);
	rig_fini(&r);
}

/* A power cut under a running powerfail-write: acks printed after the cut
 * was ordered, and those still in flight when the power went, reach the
 * command; the command is then abandoned without its callback. */
static void test_power_cut(void)
{
	struct rig r;
	rig_init(&r);
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	ok(wait_done(&r, 10000) && r.rc == LAB_OK, "booted");
	r.fb.agent_stream = true;
	is_int(board_agent(r.b, "powerfail-write iter=1", 5000, on_msg, on_done, &r), LAB_OK, "writer started");
	for (int i = 0; i < 200 && r.nmsgs < 1; i++)
		loop_run_once(r.l, 10);
	fb_agent_ack(&r.fb, false);
	fb_agent_ack(&r.fb, false);
	for (int i = 0; i < 200 && r.nmsgs < 3; i++)
		loop_run_once(r.l, 10);
	is_int(r.nmsgs, 3, "hello and two acks while writing");
	r.acks_after_off = 2;
	is_int(board_power_cut(r.b, on_pw, &r), LAB_OK, "cut ordered");
	fb_agent_ack(&r.fb, false); /* printed while the power driver works */
	is_int(board_power(r.b, POWER_ON, on_pw, &r), LAB_EUSAGE, "no other power request during the cut");
	is_int(board_power_cut(r.b, on_pw, &r), LAB_EUSAGE, "one cut at a time");
	is_int(board_boot(r.b, &r.kernel, "", NULL, on_done, &r), LAB_EUSAGE, "no boot during the cut");
	ok(fb_run_until(r.l, &r.pw_done, 5000), "cut finished");
	is_int(r.pw_rc, LAB_OK, "cut ok");
	is_int(r.pw_state, POWER_IS_OFF, "power off");
	is_int(r.fb.mode, FB_OFF, "the board is off");
	is_int(r.nmsgs, 6, "the ack printed during the cut and both in flight were delivered");
	ok(r.nmsgs == 6 && r.seqs[5] == 6, "in seq order, the last one 6");
	is_str(board_state_name(board_get_state(r.b)), "off", "state off");
	uint64_t drained_ms = (r.pw_at_ns - r.off_at_ns) / 1000000u;
	ok(r.off_at_ns && drained_ms >= BOARD_CUT_QUIET_MS && drained_ms < BOARD_CUT_DRAIN_MAX_MS,
	   "the cut ended a quiet %d ms after the power went (%llu ms)", BOARD_CUT_QUIET_MS,
	   (unsigned long long)drained_ms);
	fb_run_for(r.l, 2 * BOARD_CUT_QUIET_MS);
	ok(!r.done, "the abandoned writer's callback never ran");
	is_int(r.nmsgs, 6, "nothing after the cut");
	is_int(r.ntranscripts, 1, "the cut closed the boot's transcript");
	char *t = NULL;
	size_t tl = 0;
	struct lab_err e = {0};
	ok(lab_read_file(r.transcript_path, 1 << 20, &t, &tl, &e) == 0 && strstr(t, "== power cut requested ==") &&
	   strstr(t, "value=5 ") && strstr(t, "== power cut =="),
	   "the transcript marks the cut and holds the drained acks");
	free(t);
	r.fb.agent_stream = false;

	/* the board is free again; with nothing running a cut is a power-off */
	r.pw_done = false;
	is_int(board_boot(r.b, &r.kernel, "", NULL, on_done, &r), LAB_OK, "boots again after the cut");
	ok(wait_done(&r, 10000) && r.rc == LAB_OK, "booted again");
	is_int(board_power_cut(r.b, on_pw, &r), LAB_OK, "a cut with no command running");
	ok(fb_run_until(r.l, &r.pw_done, 5000) && r.pw_rc == LAB_OK && r.pw_state == POWER_IS_OFF,
	   "is a plain power-off");
	is_int(r.ntranscripts, 2, "a transcript per boot");
	rig_fini(&r);
}

static void on_vanish(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct rig *r = arg;
	char link[128];
	snprintf(link, sizeof link, "%s/tty", r->dir);
	unlink(link);
	fb_vanish(&r->fb);
}

/* The console dies mid-boot (QEMU exited): the step ends when the console's
 * reconnect window (500 ms here) is over, as no-console, not at the
 * bootloader budget (2.8 s per attempt here) as bootloader-hang. */
static void test_console_lost(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.uboot_hang = true; /* without the loss this would be bootloader-hang */
	struct loop_timer vt;
	loop_timer_init(&vt, on_vanish, &r);
	uint64_t t0 = lab_now_ms();
	board_boot(r.b, &r.kernel, "", NULL, on_done, &r);
	loop_timer_start(r.l, &vt, 400);
	ok(wait_done(&r, 15000), "finished");
	uint64_t dt = lab_now_ms() - t0;
	is_int(r.rc, LAB_EINFRA, "failed");
	is_str(board_fail_name(r.fail), "no-console", "classified no-console");
	ok(strstr(r.msg, "console lost") && strstr(r.msg, "reconnect window"), "why: %s", r.msg);
	ok(dt < 4500, "both attempts over in %llu ms (two bootloader timeouts: 5.6 s)",
	   (unsigned long long)dt);
	ok(strstr(r.events, "no-console@bootloader") != NULL, "first attempt ended in the bootloader: %s",
	   r.events);
	loop_timer_stop(r.l, &vt);
	rig_fini(&r);
}

int main(void)
{
	is_str(board_fail_name(FAIL_NO_OUTPUT), "no-output", "failure names");
	is_str(board_fail_name(FAIL_BOOTLOADER_HANG), "bootloader-hang", "failure names");
	is_str(board_state_name(BOARD_POWERING_OFF), "powering-off", "state names");
	test_happy_path();
	test_retry_then_success();
	expect_failure("no output", set_no_output, FAIL_NO_OUTPUT);
	expect_failure("U-Boot hang", set_uboot_hang, FAIL_BOOTLOADER_HANG);
	expect_failure("no login prompt", set_no_login, FAIL_BOOT_TIMEOUT);
	expect_failure("login refused", set_login_wrong, FAIL_LOGIN_TIMEOUT);
	expect_failure("agent missing, nothing to push", set_agent_missing, FAIL_DEPLOY);
	test_quarantine();
	test_paced_uboot();
	test_autoboot_by_itself();
	test_power_cut();
	test_console_lost();
	return tap_done();
}
