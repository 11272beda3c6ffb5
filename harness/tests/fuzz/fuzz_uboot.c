/*
 * fuzz_uboot.c - libFuzzer target for the U-Boot session (uboot.c) on
 * arbitrary bootloader output: autoboot interrupt and sync, a command with its
 * markers, setenv and a kernel start, each answered by pieces of the input
 * (fuzz_board.h).  Every operation must complete exactly once within its
 * timeout, with a known rc, and output within UBOOT_MAX_OUTPUT.
 */
#include "fuzz_board.h"
#include "uboot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_ub(struct uboot *u, int rc, const char *out, size_t len, void *arg)
{
	LAB_UNUSED(u);
	LAB_UNUSED(arg);
	if (fzb.done || len > UBOOT_MAX_OUTPUT || strlen(out) != len)
		abort(); /* twice, or output over its cap or not NUL-terminated where it says */
	if (rc < LAB_OK || rc > LAB_EPROTO)
		abort();
	fzb.done = true;
	fzb.rc = rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct uboot_cfg cfg = {
	    .autoboot_pattern = (char *)"Hit any key to stop autoboot",
	    .interrupt_key = (char *)" ",
	    .prompt = (char *)"=> ",
	    .boot_cmd = (char *)"booti ${kernel_addr_r} - ${fdt_addr_r}",
	};
	if (!fzb_begin(data, size))
		return 0;
	struct uboot *u = uboot_new(fzb.l, fzb.con, fzb.x, &cfg, "fuzz");
	/* each step only after the previous one succeeded, as board.c does */
	bool ok =
	    uboot_interrupt(u, 40, on_ub, NULL) == LAB_OK && fzb_wait(3000) && fzb.rc == LAB_OK;
	if (ok)
		ok = uboot_run(u, "mmc info", 25, on_ub, NULL) == LAB_OK && fzb_wait(3000) &&
		     (fzb.rc == LAB_OK || fzb.rc == LAB_EFOUND);
	if (ok)
		ok = uboot_setenv(u, "bootargs", "console=ttyS0 mmc_block.fua=off", 25, on_ub,
		                  NULL) == LAB_OK &&
		     fzb_wait(3000) && fzb.rc == LAB_OK;
	if (ok && uboot_boot(u, "booti 0x40480000 - 0x44000000", 25, on_ub, NULL) == LAB_OK)
		fzb_wait(3000);
	if (uboot_busy(u))
		abort(); /* an operation outlived its timeout */
	uboot_free(u);
	fzb_end();
	return 0;
}
