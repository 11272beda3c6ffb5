/* test_agent_bench.c - emmclab-agent androbench (bench.c) on a host
 * directory. */
#include "test_agent.h"

static void test_androbench(void)
{
	static const char *const rates[] = { "seq_read", "seq_write", "rand_read", "rand_write" };
	char dir[4200], arg[4300];
	struct run r;
	int it;
	size_t i;

	tpath(dir, sizeof(dir), "ab");
	mkdir(dir, 0755);
	snprintf(arg, sizeof(arg), "dir=%s", dir);
	run_agent(&r, "androbench", "iter=1", "iterations=2", arg, "seq_mib=4", "req_mib=2", "rand_mib=2",
		  "rand_ios=64", NULL);
	is_int(r.bad, 0, "androbench: protocol");
	is_int(r.status, 0, "androbench: exit 0");
	is_int(count_msg(&r, "sample"), 16, "8 samples x 2 iterations");
	for (it = 1; it <= 2; it++) {
		for (i = 0; i < 4; i++)
			ok(sample(&r, rates[i], it, "MiB/s") > 0, "iter %d %s > 0 MiB/s", it, rates[i]);
		ok(sample(&r, "rand_read_iops", it, "IOPS") > 0, "rand_read_iops");
		ok(sample(&r, "rand_write_iops", it, "IOPS") > 0, "rand_write_iops");
		ok(sample(&r, "write_lat_p50", it, "us") > 0, "write_lat_p50");
		ok(sample(&r, "write_lat_p99", it, "us") >= sample(&r, "write_lat_p50", it, "us"),
		   "p99 >= p50");
	}
	/* IOPS and MiB/s agree (4 KiB) */
	is_near(sample(&r, "rand_write", 1, "MiB/s"),
		sample(&r, "rand_write_iops", 1, "IOPS") * 4096 / 1048576.0, 1e-3, "MiB/s = IOPS x 4 KiB");
	is_int(dir_entries(dir), 0, "the test file is removed");
	run_free(&r);

	/* iter= is the label of the (first) iteration, as the controller passes it */
	run_agent(&r, "androbench", "iter=7", arg, "seq_mib=1", "req_mib=1", "rand_mib=1",
		  "rand_ios=8", NULL);
	is_int(count_msg(&r, "sample"), 8, "iter=7: one iteration");
	ok(sample(&r, "seq_write", 7, "MiB/s") > 0, "labelled iter 7");
	run_free(&r);

	run_agent(&r, "androbench", "dir=/nonexistent/x", NULL);
	ok(find_msg(&r, "error", "code", "no-dir") != NULL, "missing dir: no-dir");
	is_int(r.status, 1, "missing dir: exit 1");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_androbench();
	agent_cleanup();
	return tap_done();
}
