/* schedule.c's shared resources: counts, all-or-nothing per stage, the queue
 * (grants are deferred to the loop, in arrival order when they fit), a
 * finished board leaving the queue, and the config errors. */
#include "config.h"
#include "loop.h"
#include "schedule.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/emmclab-test-sched-XXXXXX";

static struct lab_cfg *load(const char *extra, const char *uses, struct lab_err *e)
{
	char *path = xasprintf("%s/lab.yaml", dir);
	FILE *f = fopen(path, "w");
	fprintf(f,
	        "lab:\n  name: t\n%s\n"
	        "types:\n  - name: ty\n    modes:\n      fua: {cmdline: a}\n"
	        "boards:\n"
	        "  - {name: b0, type: ty, console: {driver: pty, path: /x}, power: {driver: "
	        "manual}, deploy: {driver: none}, uses: %s}\n"
	        "  - {name: b1, type: ty, console: {driver: pty, path: /x}, power: {driver: "
	        "manual}, deploy: {driver: none}, uses: {boot: [pdu]}}\n"
	        "  - {name: b2, type: ty, console: {driver: pty, path: /x}, power: {driver: "
	        "manual}, deploy: {driver: none}, uses: {boot: [tftp]}}\n",
	        extra, uses);
	fclose(f);
	const char *paths[] = {path};
	struct lab_cfg *c = NULL;
	int rc = config_load(paths, 1, &c, e);
	free(path);
	return rc ? NULL : c;
}

static int granted[8];
static void grant(void *arg)
{
	granted[(int)(intptr_t)arg]++;
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	struct lab_err e = {0};
	struct lab_cfg *lab =
	    load("  resources: {tftp: 2, pdu: 1}", "{boot: [tftp, pdu], test: tftp}", &e);
	ok(lab != NULL, "lab with resources loads %s", e.msg);
	struct schedule_res *r = NULL;
	ok(lab && schedule_res_new(lab, &r, &e) == LAB_OK && r, "resources built %s", e.msg);
	struct loop *l = loop_new();
	char w[32];
	ok(schedule_res_acquire(r, l, 0, "boot", grant, (void *)0, w, sizeof w),
	   "b0 takes tftp + pdu");
	is_int(schedule_res_used(r, "tftp"), 1, "tftp 1 of 2");
	is_int(schedule_res_used(r, "pdu"), 1, "pdu 1 of 1");
	ok(schedule_res_acquire(r, l, 0, "boot", grant, (void *)0, w, sizeof w),
	   "taking again is a no-op");
	is_int(schedule_res_used(r, "pdu"), 1, "still one pdu user");
	ok(!schedule_res_acquire(r, l, 1, "boot", grant, (void *)1, w, sizeof w),
	   "b1 waits for the pdu");
	is_str(w, "pdu", "it names what it waits for");
	ok(schedule_res_acquire(r, l, 2, "boot", grant, (void *)2, w, sizeof w),
	   "b2 needs only tftp: goes ahead");
	is_int(schedule_res_used(r, "tftp"), 2, "tftp 2 of 2");
	ok(schedule_res_acquire(r, l, 2, "test", grant, (void *)2, w, sizeof w),
	   "a stage with no uses never waits");
	ok(schedule_res_acquire(r, l, 1, "test", grant, (void *)1, w, sizeof w),
	   "b1 has no test uses");
	schedule_res_release(r, l, 0, "boot");
	is_int(granted[1], 0, "grants are deferred, not called from release");
	loop_run_once(l, 0);
	is_int(granted[1], 1, "b1 is granted the pdu once b0 released it");
	is_int(schedule_res_used(r, "pdu"), 1, "held by b1 now");
	ok(!schedule_res_acquire(r, l, 0, "boot", grant, (void *)0, w, sizeof w),
	   "b0 queues for its next boot");
	schedule_res_release(r, l, 0, NULL); /* b0 finished: leaves the queue */
	schedule_res_release(r, l, 1, "boot");
	loop_run_once(l, 0);
	is_int(granted[0], 0, "a finished board is not granted anything");
	is_int(schedule_res_used(r, "pdu"), 0, "pdu free");
	schedule_res_release(r, l, 2, NULL);
	is_int(schedule_res_used(r, "tftp"), 0, "tftp free");
	is_int(schedule_res_used(r, "nope"), -1, "unknown resource");
	schedule_res_free(r);
	loop_free(l);
	config_free(lab);

	static const struct {
		const char *extra, *uses, *want;
	} bad[] = {
	    {"  resources: {tftp: 0, pdu: 1}", "{boot: [tftp]}", "tftp wants a count"},
	    {"  resources: {tftp: 2, pdu: 1}", "{boot: [tfpt]}",
	     "uses 'tfpt', which the lab's resources: do not declare"},
	    {"  resources: {tftp: 2, pdu: 1}", "{flash: [tftp]}", "unknown stage 'flash'"},
	    {"  resources: [tftp]", "{boot: [tftp]}", "resources: want a map"},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(bad); i++) {
		e = (struct lab_err){0};
		lab = load(bad[i].extra, bad[i].uses, &e);
		r = NULL;
		int rc = lab ? schedule_res_new(lab, &r, &e) : -1;
		ok(rc == LAB_EUSAGE && strstr(e.msg, bad[i].want) && strstr(e.msg, "lab.yaml:"),
		   "refused with file:line:col: %s", e.msg);
		schedule_res_free(r);
		config_free(lab);
	}
	ok(schedule_res_acquire(NULL, NULL, 0, "boot", grant, NULL, NULL, 0),
	   "no resources declared (NULL set): never waits");

	char *cmd = xasprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	free(cmd);
	return tap_done();
}
