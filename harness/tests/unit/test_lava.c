/* Unit tests of lava.c: the job definition LAVA 2023.01 accepts (checked by
 * YAML round trip and the keys the farm needs), the device block's option
 * table, and cutting a job log into the agent commands' output with LAVA's
 * verdict on incomplete jobs (log lines as 2023.01 writes them, YAML tags
 * in result lines included). */
#include "cfgnode.h"
#include "config.h"
#include "lava.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cfg_node *yaml(const char *s)
{
	struct cfg_node *n = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("test", s, strlen(s), &n, &e) != LAB_OK)
		fprintf(stderr, "# yaml: %s\n", e.msg);
	return n;
}

static void test_definition(void)
{
	struct lava_device_cfg d;
	struct lab_err e = {0};
	struct cfg_node *n =
	    yaml("{device_type: qemu, tags: [emmclab], cmdline: \"vemmc.profile=slowrel\"}");
	ok(n && lava_device_parse(n, &d, &e) == LAB_OK, "device block parses");
	struct kernel_cfg k = {.name = (char *)"k",
	                       .image = (char *)"/boot/vmlinuz",
	                       .initrd = (char *)"http://files/initramfs.cpio.gz",
	                       .cmdline = (char *)"console=ttyS0,115200"};
	const char *steps[] = {"identify", "mode expect=fua", "androbench iter=1 count=1 'x=a b'"};
	struct lava_job_spec sp = {.dev = &d,
	                           .kernel = &k,
	                           .name = "emmclab \"quoted\" job",
	                           .cmdline = "mmc_block.fua=on",
	                           .case_prefix = "b1-fua-it1",
	                           .steps = steps,
	                           .nsteps = 3};
	char *def = lava_job_definition(&sp);
	struct cfg_node *t = yaml(def);
	ok(t != NULL, "the definition is YAML");
	const struct cfg_node *v = t ? cfg_map_get(t, "device_type") : NULL;
	ok(v && strcmp(v->value, "qemu") == 0, "device_type");
	v = t ? cfg_map_get(t, "job_name") : NULL;
	ok(v && strcmp(v->value, "emmclab \"quoted\" job") == 0, "job name quoted");
	ok(strstr(def, "format: cpio.newc") && strstr(def, "lava: true"),
	   "cpio.newc ramdisk with LAVA's overlay");
	ok(strstr(def, "arch: \"x86_64\""), "context arch");
	ok(strstr(def, "console=ttyS0,115200 mmc_block.fua=on vemmc.profile=slowrel"),
	   "kernel, mode and board command line in that order");
	ok(strstr(def, "file:///") && strstr(def, "http://files/initramfs.cpio.gz"),
	   "a path becomes file://, a URL stays");
	ok(strstr(def, "emmclab_step 2 /bin/emmclab-agent androbench iter=1 count=1 'x=a b'"),
	   "the step keeps the shell quoting");
	ok(strstr(def, "lava-test-case") && strstr(def, "--measurement") && strstr(def, "--units"),
	   "samples become LAVA measurements");
	ok(!strstr(def, "quiet"), "no quiet");
	free(def);
	cfg_free(t);
	cfg_free(n);
	lava_device_free(&d);
	n = yaml("{tags: [x]}");
	ok(lava_device_parse(n, &d, &e) == LAB_EUSAGE && strstr(e.msg, "device_type"),
	   "device_type is required (%s)", e.msg);
	cfg_free(n);
	n = yaml("{device_type: qemu, tag: [x]}");
	ok(lava_device_parse(n, &d, &e) == LAB_EUSAGE && strstr(e.msg, "test:"),
	   "an unknown key names its position (%s)", e.msg);
	cfg_free(n);
}

static const char complete_log[] =
    "- {\"dt\": \"2026-12-01T20:25:22.1\", \"lvl\": \"info\", \"msg\": \"start\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.2\", \"lvl\": \"target\", \"msg\": \"+ echo 'EMMCLAB-LAVA "
    "begin 0'\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.3\", \"lvl\": \"target\", \"msg\": \"EMMCLAB-LAVA begin "
    "0\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.4\", \"lvl\": \"target\", \"msg\": \"@@emmclab 1 1 hello "
    "crc=00000000\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.5\", \"lvl\": \"target\", \"msg\": \"EMMCLAB-LAVA end 0 "
    "0\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.6\", \"lvl\": \"results\", \"msg\": {\"case\": \"probe\", "
    "\"definition\": \"0_emmclab\", \"endtc\": ! \"601\", \"measurement\": ! \"12.5\", \"result\": "
    "\"pass\"}}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.7\", \"lvl\": \"target\", \"msg\": \"EMMCLAB-LAVA begin "
    "1\"}\n"
    "- {\"dt\": \"2026-12-01T20:25:22.8\", \"lvl\": \"target\", \"msg\": \"line a\"}\n"
    "not a log line\n"
    "- {\"dt\": \"2026-12-01T20:25:22.9\", \"lvl\": \"target\", \"msg\": \"line b\"}\n";

static void test_log(void)
{
	const char *steps[] = {"identify", "mode expect=fua"};
	struct lava_outcome o;
	memset(&o, 0, sizeof o);
	ok(lava_log_parse(complete_log, strlen(complete_log), steps, 2, &o) == LAB_OK &&
	       o.nsteps == 2,
	   "log parsed into 2 steps");
	ok(o.steps[0].nlines == 1 && strstr(o.steps[0].lines[0], "@@emmclab 1 1 hello"),
	   "step 0: its one line (the xtrace line outside)");
	ok(o.steps[0].exit_status == 0, "step 0 ended with 0");
	ok(o.steps[1].nlines == 2 && o.steps[1].exit_status == -1, "step 1: no end marker");
	ok(o.kind == NULL, "no failure noted");
	static const char infra[] =
	    "- {\"dt\": \"x\", \"lvl\": \"results\", \"msg\": {\"case\": \"auto-login-action\", "
	    "\"definition\": \"lava\", \"result\": \"fail\"}}\n"
	    "- {\"dt\": \"x\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"definition\": "
	    "\"lava\", \"error_msg\": \"qemu died\", \"error_type\": \"Infrastructure\", "
	    "\"result\": \"fail\"}}\n";
	memset(&o.msg, 0, sizeof o.msg);
	lava_log_parse(infra, strlen(infra), steps, 2, &o);
	ok(o.kind && strcmp(o.kind, "lava-infra") == 0 && strstr(o.msg, "qemu died"),
	   "Infrastructure error -> lava-infra (%s: %s)", o.kind ? o.kind : "-", o.msg);
	o.kind = NULL;
	static const char boot[] =
	    "- {\"dt\": \"x\", \"lvl\": \"results\", \"msg\": {\"case\": \"auto-login-action\", "
	    "\"definition\": \"lava\", \"result\": \"fail\"}}\n"
	    "- {\"dt\": \"x\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"definition\": "
	    "\"lava\", \"error_msg\": \"auto-login-action timed out\", \"error_type\": \"Job\", "
	    "\"result\": \"fail\"}}\n";
	lava_log_parse(boot, strlen(boot), steps, 2, &o);
	ok(o.kind && strcmp(o.kind, "boot-timeout") == 0, "a failed login -> boot-timeout (%s)",
	   o.kind ? o.kind : "-");
	o.kind = NULL;
	static const char tmo[] =
	    "- {\"dt\": \"x\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"definition\": "
	    "\"lava\", \"error_msg\": \"lava-test-shell timed out\", \"error_type\": "
	    "\"LAVATimeout\", \"result\": \"fail\"}}\n";
	lava_log_parse(tmo, strlen(tmo), steps, 2, &o);
	ok(o.kind && strcmp(o.kind, "job-timeout") == 0, "LAVATimeout -> job-timeout");
	lava_outcome_free(&o);
}

int main(void)
{
	test_definition();
	test_log();
	return tap_done();
}
