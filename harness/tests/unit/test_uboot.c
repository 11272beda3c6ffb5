/* test_uboot.c - the U-Boot session against a scripted board on a pty. */
#include "console.h"
#include "expect.h"
#include "fakeboard.h"
#include "tap.h"
#include "uboot.h"

struct rig {
	struct loop *l;
	struct fakeboard fb;
	struct console *con;
	struct expect *x;
	struct uboot_cfg cfg;
	struct uboot *ub;
	/* last result */
	bool done;
	int rc;
	char out[8192];
};

static void on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct rig *r = arg;
	expect_feed(r->x, buf, n);
}

static void on_ub(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(len);
	struct rig *r = arg;
	r->done = true;
	r->rc = rc;
	lab_strlcpy(r->out, out, sizeof r->out);
}

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof *r);
	r->l = loop_new();
	if (fb_init(&r->fb, r->l))
		abort();
	static const struct console_events ev = {.data = on_data};
	r->con = fb_console(&r->fb, r->l, &ev, r);
	r->x = expect_new(r->l, 0);
	r->cfg.autoboot_pattern = (char *)"Hit any key to stop autoboot";
	r->cfg.interrupt_key = (char *)" ";
	r->cfg.prompt = (char *)"=> ";
	r->ub = uboot_new(r->l, r->con, r->x, &r->cfg, "fake");
}

static void rig_fini(struct rig *r)
{
	uboot_free(r->ub);
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

static void test_interrupt_and_commands(void)
{
	struct rig r;
	rig_init(&r);
	fb_power_on(&r.fb);
	ok(uboot_interrupt(r.ub, 5000, on_ub, &r) == LAB_OK, "interrupt started");
	ok(uboot_busy(r.ub), "busy while interrupting");
	is_int(uboot_run(r.ub, "version", 1000, on_ub, &r), LAB_EUSAGE, "second operation refused");
	ok(wait_done(&r, 6000), "interrupt completed");
	is_int(r.rc, LAB_OK, "autoboot interrupted and synchronised");
	is_int(r.fb.mode, FB_UBOOT, "board sits at the U-Boot prompt");

	uboot_run(r.ub, "version", 2000, on_ub, &r);
	ok(wait_done(&r, 3000), "version ran");
	is_int(r.rc, LAB_OK, "version succeeded");
	ok(strstr(r.out, "U-Boot 2023.04") != NULL, "output captured: '%s'", r.out);
	ok(strstr(r.out, "@@UB") == NULL, "no marker in the output");

	uboot_run(r.ub, "false", 2000, on_ub, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_EFOUND, "failing command reported as failed");

	uboot_run(r.ub, "frobnicate", 2000, on_ub, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_EFOUND, "unknown command fails");
	ok(strstr(uboot_errmsg(r.ub), "Unknown command") != NULL, "message names U-Boot's answer: %s",
	   uboot_errmsg(r.ub));

	uboot_setenv(r.ub, "bootargs", "console=ttyS2,1500000 mmc_block.fua=off", 2000, on_ub, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "setenv");
	is_str(fb_getenv(&r.fb, "bootargs"), "console=ttyS2,1500000 mmc_block.fua=off", "value set verbatim");
	is_int(uboot_setenv(r.ub, "x", "it's", 1000, on_ub, &r), LAB_EUSAGE, "quote in value refused");
	is_int(uboot_setenv(r.ub, "a b", "v", 1000, on_ub, &r), LAB_EUSAGE, "bad name refused");

	uboot_sync(r.ub, 2000, on_ub, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_OK, "resync at the prompt");
	is_int((int)uboot_retypes(r.ub), 0, "no retypes without drops");
	rig_fini(&r);
}

static void test_drops(void)
{
	struct rig r;
	rig_init(&r);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_OK, "at the prompt");
	int before;
	/* a 16-byte FIFO and no pacing: the first try loses characters, then the
	 * session slows down by itself and gets through */
	r.fb.fifo = 16;
	unsigned rt = uboot_retypes(r.ub);
	before = r.fb.commands;
	uboot_run(r.ub, "echo a-long-line-that-overflows-the-fifo", 30000, on_ub, &r);
	ok(wait_done(&r, 30000), "completed");
	is_int(r.rc, LAB_OK, "adaptive pacing got the line through the FIFO");
	ok(strstr(r.out, "a-long-line-that-overflows-the-fifo") != NULL, "output right");
	ok(uboot_retypes(r.ub) > rt, "after %u retype(s)", uboot_retypes(r.ub) - rt);
	is_int(r.fb.commands - before, 1, "executed once");
	rt = uboot_retypes(r.ub);
	uboot_run(r.ub, "echo another-long-line-through-the-fifo", 30000, on_ub, &r);
	wait_done(&r, 30000);
	is_int(r.rc, LAB_OK, "next line ok");
	is_int((int)(uboot_retypes(r.ub) - rt), 0, "the slower pace is kept: no retype");
	r.fb.fifo = 0;

	/* one character lost once: the echo check catches it and the line is retyped */
	before = r.fb.commands;
	unsigned rt0 = uboot_retypes(r.ub);
	r.fb.drop_once_at = r.fb.in_count + 5;
	uboot_setenv(r.ub, "serverip", "192.168.1.10", 3000, on_ub, &r);
	ok(wait_done(&r, 8000), "setenv completed");
	is_int(r.rc, LAB_OK, "setenv succeeded after a retype");
	is_int((int)(uboot_retypes(r.ub) - rt0), 1, "one retype");
	fb_run_until(r.l, &r.done, 100);
	is_str(fb_getenv(&r.fb, "serverip"), "192.168.1.10", "the value is right");
	is_int(r.fb.commands - before, 1, "the mangled line was never executed");
	ok(r.fb.ctrl_c >= 2, "Ctrl-C sent to discard the mangled line");

	/* a board that always mangles the line: bounded retries, then an error */
	r.fb.drop_line_at = 3;
	before = r.fb.commands;
	uboot_run(r.ub, "version", 60000, on_ub, &r);
	ok(wait_done(&r, 60000), "completed");
	is_int(r.rc, LAB_EINFRA, "gives up after bounded retries");
	ok(strstr(uboot_errmsg(r.ub), "char_delay") != NULL, "message suggests pacing: %s",
	   uboot_errmsg(r.ub));
	is_int(r.fb.commands - before, 0, "nothing mangled was executed");
	r.fb.drop_line_at = 0;
	rig_fini(&r);
}

/* The type's pacing, a 16-byte FIFO on the fake board, at the prompt. */
static bool paced_at_prompt(struct rig *r, uint64_t delay_ms, int64_t chunk, int64_t window)
{
	r->cfg.char_delay_ms = delay_ms;
	r->cfg.chunk = chunk;
	r->cfg.echo_window = window;
	r->fb.fifo = 16;
	fb_power_on(&r->fb);
	uboot_interrupt(r->ub, 5000, on_ub, r);
	return wait_done(r, 6000);
}

static void test_configured_pacing(void)
{
	struct rig r;
	rig_init(&r);
	/* The fake FIFO judges each read of the pty, and a pty delivers in a kernel
	 * work item: on a loaded machine paced chunks can arrive together.  Chunks
	 * of 4 every 10 ms overflow 16 bytes only if 5 coalesce (40 ms late); 8 every
	 * 5 ms could after 10 ms (a retype was seen once in a loaded ASan run, before
	 * the board counted overflows). */
	paced_at_prompt(&r, 10, 4, 0);
	uboot_run(r.ub, "echo a-long-line-that-overflows-the-fifo", 3000, on_ub, &r);
	ok(wait_done(&r, 8000), "completed");
	is_int(r.rc, LAB_OK, "typing paced by the type's configuration works");
	ok(uboot_retypes(r.ub) == 0, "no retypes when paced from the start (%u retypes; board: %d FIFO "
	   "overflows, longest read %d bytes)", uboot_retypes(r.ub), r.fb.fifo_overflows, r.fb.max_burst);
	rig_fini(&r);
}

static void test_echo_pacing(void)
{
	struct rig r;
	rig_init(&r);
	/* A FIFO of 16 and a pace of 1 character a second: typed on the echo,
	 * 16 at a time, a line takes the echo's round trips, not a minute, and
	 * no burst ever exceeds the FIFO. */
	ok(paced_at_prompt(&r, 1000, 1, 16), "interrupted");
	uint64_t t0 = lab_now_ms();
	uboot_run(r.ub, "echo a-long-line-that-would-take-a-minute-at-the-timer-pace", 10000, on_ub, &r);
	ok(wait_done(&r, 10000), "completed");
	uint64_t dt = lab_now_ms() - t0;
	is_int(r.rc, LAB_OK, "echo-paced typing works");
	ok(strstr(r.out, "a-long-line-that-would-take-a-minute-at-the-timer-pace") != NULL, "output right");
	ok(dt < 5000, "typed on the echo: %llu ms for a %d-character line", (unsigned long long)dt,
	   (int)strlen("echo a-long-line-that-would-take-a-minute-at-the-timer-pace; echo @@UB-1-$?@@"));
	is_int((int)uboot_retypes(r.ub), 0, "no retypes");
	is_int(r.fb.fifo_overflows, 0, "the FIFO never overflowed");
	ok(r.fb.max_burst <= 16, "no read longer than the window (%d)", r.fb.max_burst);
	rig_fini(&r);
}

static void test_netboot(void)
{
	struct rig r;
	rig_init(&r);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	wait_done(&r, 6000);
	struct uboot_netboot nb = {
		.dhcp = true, .serverip = "10.0.0.1", .kernel = "dut1/Image", .initrd = "dut1/initrd",
		.dtb = "dut1/board.dtb", .bootargs = "console=ttyS2 mmc_block.fua=on mmc_core.disable_cqe=1",
	};
	is_int(uboot_netboot(r.ub, &nb, 20000, on_ub, &r), LAB_OK, "netboot started");
	ok(wait_done(&r, 20000), "netboot completed");
	is_int(r.rc, LAB_OK, "kernel started");
	ok(r.rc == LAB_OK || !fprintf(stderr, "# %s\n", uboot_errmsg(r.ub)), "no error");
	is_str(r.fb.last_cmdline, "console=ttyS2 mmc_block.fua=on mmc_core.disable_cqe=1",
	       "bootargs reached the kernel");
	is_str(fb_getenv(&r.fb, "initrd_size"), "2222", "initrd size saved before the dtb load");
	is_str(fb_getenv(&r.fb, "serverip"), "10.0.0.1", "serverip kept after dhcp");

	/* a missing file fails at its step */
	fb_power_off(&r.fb);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	wait_done(&r, 6000);
	nb.kernel = "dut1/missing-Image";
	uboot_netboot(r.ub, &nb, 20000, on_ub, &r);
	wait_done(&r, 20000);
	is_int(r.rc, LAB_EFOUND, "tftp failure reported");
	ok(strstr(uboot_errmsg(r.ub), "tftp kernel") && strstr(uboot_errmsg(r.ub), "File not found"),
	   "message names the step and U-Boot's words: %s", uboot_errmsg(r.ub));

	/* a failing boot command comes back to U-Boot */
	uboot_boot(r.ub, "booti bad", 5000, on_ub, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_EFOUND, "failed boot command detected");
	ok(strstr(uboot_errmsg(r.ub), "Bad Linux ARM64 Image magic") != NULL, "why: %s",
	   uboot_errmsg(r.ub));

	/* local boot with the mode's arguments appended to the board's own bootargs */
	uboot_boot_local(r.ub, "mmc_block.fua=off", 5000, on_ub, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_OK, "local boot started the kernel");
	is_str(r.fb.last_cmdline, "console=ttyS0 root=/dev/mmcblk0p2 mmc_block.fua=off",
	       "extra arguments appended");
	rig_fini(&r);
}

static void test_faults(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.uboot_hang = true;
	fb_power_on(&r.fb);
	uint64_t t0 = lab_now_ms();
	uboot_interrupt(r.ub, 1500, on_ub, &r);
	ok(wait_done(&r, 5000), "completed");
	is_int(r.rc, LAB_ETIMEOUT, "a hanging U-Boot times out");
	ok(lab_now_ms() - t0 < 3000, "within its budget");
	ok(uboot_errmsg(r.ub)[0] != '\0', "message: %s", uboot_errmsg(r.ub));

	r.fb.uboot_hang = false;
	r.fb.no_output = true;
	fb_power_off(&r.fb);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 800, on_ub, &r);
	wait_done(&r, 3000);
	is_int(r.rc, LAB_ETIMEOUT, "silent board times out");
	ok(strstr(uboot_errmsg(r.ub), "no autoboot prompt") != NULL, "says nothing came: %s",
	   uboot_errmsg(r.ub));

	/* cancel: no callback */
	r.fb.no_output = false;
	fb_power_off(&r.fb);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	uboot_cancel(r.ub);
	ok(!uboot_busy(r.ub), "idle after cancel");
	ok(!fb_run_until(r.l, &r.done, 600), "no callback after cancel");
	rig_fini(&r);
}

/* What U-Boot 2023.01 really does (vectors/uboot-2023.01-hush.txt), as the fake
 * board now copies it: a failure is seen from its marker or its error line within
 * a second, never at the command timeout. */
static void test_real_hush(void)
{
	struct rig r;
	rig_init(&r);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	wait_done(&r, 6000);
	is_int(r.rc, LAB_OK, "at the prompt");

	uint64_t t0 = lab_now_ms();
	uboot_run(r.ub, "tftpboot ${kernel_addr_r} dut1/missing-Image", 60000, on_ub, &r);
	ok(wait_done(&r, 10000), "tftp of a missing file completed");
	uint64_t dt = lab_now_ms() - t0;
	is_int(r.rc, LAB_EFOUND, "reported as failed");
	ok(dt < 2000, "in %llu ms, not at the 60 s command timeout", (unsigned long long)dt);
	ok(strstr(uboot_errmsg(r.ub), "failed: TFTP error: 'File not found' (1)") != NULL,
	   "U-Boot's error line leads the message: %s", uboot_errmsg(r.ub));

	/* an error line and then silence (U-Boot hung): the error line decides */
	t0 = lab_now_ms();
	uboot_run(r.ub, "hang-after-error", 60000, on_ub, &r);
	ok(wait_done(&r, 10000), "completed");
	dt = lab_now_ms() - t0;
	is_int(r.rc, LAB_EFOUND, "failed on the error line alone");
	ok(dt >= 2500 && dt < 6000, "after the 3 s grace for the marker (%llu ms)",
	   (unsigned long long)dt);
	ok(strstr(uboot_errmsg(r.ub), "### ERROR ### Please RESET the board ###") != NULL, "why: %s",
	   uboot_errmsg(r.ub));
	rig_fini(&r);
}

/* bootdelay -2: no countdown, U-Boot starts Linux by itself. */
static void test_autoboot_by_itself(void)
{
	struct rig r;
	rig_init(&r);
	r.fb.autoboot_silent = true;
	fb_power_on(&r.fb);
	uint64_t t0 = lab_now_ms();
	uboot_interrupt(r.ub, 20000, on_ub, &r);
	ok(wait_done(&r, 20000), "completed");
	is_int(r.rc, LAB_EFOUND, "not a timeout");
	ok(lab_now_ms() - t0 < 2000, "as soon as the kernel started");
	ok(uboot_autobooted(r.ub), "uboot_autobooted");
	ok(strstr(uboot_errmsg(r.ub), "booted by itself") &&
	   strstr(uboot_errmsg(r.ub), "no autoboot prompt"), "says so: %s", uboot_errmsg(r.ub));

	/* bootdelay 0: the prompt shows but the key comes too late */
	r.fb.autoboot_silent = false;
	r.fb.keys_too_late = true;
	fb_power_off(&r.fb);
	expect_flush(r.x);
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 20000, on_ub, &r);
	ok(wait_done(&r, 20000), "completed");
	is_int(r.rc, LAB_EFOUND, "not a timeout");
	ok(uboot_autobooted(r.ub), "uboot_autobooted");
	ok(strstr(uboot_errmsg(r.ub), "after the autoboot prompt and") &&
	   strstr(uboot_errmsg(r.ub), "bootdelay 0"), "says the key came too late: %s",
	   uboot_errmsg(r.ub));
	rig_fini(&r);
}

/* The board type's bootargs go first, then the kernel's and the mode's. */
static void test_bootargs_merge(void)
{
	struct uboot_cfg c = {.bootargs = (char *)"console=ttyS0,115200"};
	char *s = uboot_bootargs(&c, "quiet mmc_block.fua=on");
	is_str(s, "console=ttyS0,115200 quiet mmc_block.fua=on", "type, then kernel + mode");
	free(s);
	s = uboot_bootargs(&c, "");
	is_str(s, "console=ttyS0,115200", "type alone");
	free(s);
	c.bootargs = NULL;
	s = uboot_bootargs(&c, "root=/dev/ram0");
	is_str(s, "root=/dev/ram0", "no type bootargs");
	free(s);

	struct rig r;
	rig_init(&r);
	r.cfg.bootargs = (char *)"console=ttyS2,1500000n8";
	fb_power_on(&r.fb);
	uboot_interrupt(r.ub, 5000, on_ub, &r);
	wait_done(&r, 6000);
	struct uboot_netboot nb = {.serverip = "10.0.0.1", .ipaddr = "10.0.0.9", .kernel = "dut1/Image",
				   .bootargs = "mmc_block.fua=off"};
	uboot_netboot(r.ub, &nb, 20000, on_ub, &r);
	ok(wait_done(&r, 20000), "netboot completed");
	ok(r.rc == LAB_OK, "kernel started (%s)", uboot_errmsg(r.ub));
	is_str(r.fb.last_cmdline, "console=ttyS2,1500000n8 mmc_block.fua=off",
	       "the type's uboot.bootargs reached the kernel");
	rig_fini(&r);
}

int main(void)
{
	test_real_hush();
	test_autoboot_by_itself();
	test_bootargs_merge();
	test_interrupt_and_commands();
	test_drops();
	test_configured_pacing();
	test_echo_pacing();
	test_netboot();
	test_faults();
	return tap_done();
}
