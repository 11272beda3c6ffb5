/* test_agent_fio.c - emmclab-agent fio (fio.c). */
#include "test_agent.h"

static void test_fio(void)
{
	char job[4200], jarg[4300], text[8500];
	struct run r;

	snprintf(text, sizeof(text),
		 "[global]\ndirectory=%s\nsize=1m\nbs=4k\nioengine=psync\n\n"
		 "[rw one]\nrw=randrw\n", test_tmp);
	put_str("job.fio", text);
	tpath(job, sizeof(job), "job.fio");
	snprintf(jarg, sizeof(jarg), "job=%s", job);
	run_agent(&r, "fio", jarg, NULL);
	is_int(r.bad, 0, "fio: protocol");
	if (find_msg(&r, "error", "code", "no-fio")) {
		is_int(r.status, 1, "no fio: status error");
	} else {
		is_int(r.status, 0, "fio: exit 0");
		ok(sample(&r, "rw one.read_bw", 1, "MiB/s") > 0, "read bandwidth");
		ok(sample(&r, "rw one.write_iops", 1, "IOPS") > 0, "write iops");
		ok(sample(&r, "rw one.write_lat_mean", 1, "us") > 0, "write latency");
	}
	run_free(&r);
	/* the controller asks every workload for counters (count=1) */
	run_agent(&r, "--sysroot", sys_empty, "fio", jarg, "iter=2", "count=1", NULL);
	is_int(r.bad, 0, "fio count=1: protocol");
	ok(find_msg(&r, "error", "code", "bad-arg") == NULL, "count= is a fio key");
	if (!find_msg(&r, "error", "code", "no-fio")) {
		is_int(r.status, 0, "fio count=1: exit 0");
		ok(sample(&r, "rw one.read_bw", 2, "MiB/s") > 0, "samples of iter 2");
		ok(find_msg(&r, "error", "code", "no-tracefs") != NULL,
		   "no tracefs in the sysroot: said, not fatal");
	}
	run_free(&r);
	run_agent(&r, "fio", "job=/nonexistent.fio", NULL);
	is_int(r.status, 1, "fio with a missing job fails");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	make_sysroot();
	test_fio();
	agent_cleanup();
	return tap_done();
}
