/* test_agent_count.c - reliable-write and flush counting (count.c): the
 * tracefs path with a fake tracefs, and parse-trace. */
#include "test_agent.h"

static void test_count_fake_tracefs(void)
{
	static const char *const files[] = {
		"root/sys/kernel/tracing/tracing_on", "root/sys/kernel/tracing/trace",
		"root/sys/kernel/tracing/events/mmc/mmc_request_start/enable",
		"root/sys/kernel/tracing/events/mmc/mmc_request_start/filter",
	};
	char dir[4200], arg[4300], root[4200], buf[512], p[4200];
	struct run r;
	size_t i;

	for (i = 0; i < 4; i++)
		put_str(files[i], "");
	put_str("root/sys/block/mmcblk0/size", "1000\n");
	put_str("root/sys/block/mmcblk0/stat", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n");
	tpath(root, sizeof(root), "root");
	tpath(dir, sizeof(dir), "cnt");
	mkdir(dir, 0755);
	snprintf(arg, sizeof(arg), "dir=%s", dir);
	run_agent(&r, "--sysroot", root, "--device", "mmcblk0", "androbench", arg, "seq_mib=1",
		  "req_mib=1", "rand_mib=1", "rand_ios=8", "count=1", NULL);
	is_int(r.bad, 0, "count: protocol");
	is_int(r.status, 0, "count: exit 0");
	ok(find_msg(&r, "error", "code", "no-tracefs") == NULL, "fake tracefs accepted");
	is_int(counter(&r, "reliable_writes"), 0, "reliable_writes counted (none in an empty trace)");
	is_int(counter(&r, "flushes"), 0, "flushes counted");
	is_int(counter(&r, "stat_flushes"), 0, "stat_flushes delta");
	is_int(counter(&r, "stat_flush_ms"), 0, "stat_flush_ms delta");
	/* the event is left disabled and unfiltered, tracing back on */
	tpath(p, sizeof(p), files[2]);
	{
		FILE *f = fopen(p, "r");

		ok(f && fgets(buf, sizeof(buf), f) && strcmp(buf, "0") == 0, "event disabled after");
		if (f)
			fclose(f);
	}
	tpath(p, sizeof(p), files[0]);
	{
		FILE *f = fopen(p, "r");

		ok(f && fgets(buf, sizeof(buf), f) && strcmp(buf, "1") == 0, "tracing_on restored");
		if (f)
			fclose(f);
	}
	run_free(&r);

	/* without tracefs: one error line, the workload still runs */
	run_agent(&r, "androbench", arg, "iterations=2", "seq_mib=1", "req_mib=1", "rand_mib=1",
		  "rand_ios=8", "count=1", NULL);
	if (find_msg(&r, "error", "code", "no-tracefs")) {
		int i2, n = 0;

		for (i2 = 0; i2 < r.nlines; i2++) {
			const char *c = proto_get(&r.msg[i2], "code");

			n += c && strcmp(c, "no-tracefs") == 0;
		}
		is_int(n, 1, "no-tracefs reported once");
		/* the workload's own: a host with a tracefs but no mmc events
		 * (one `perf trace` mounted) adds request latencies (rq_*) */
		n = 0;
		for (i2 = 0; i2 < r.nlines; i2++) {
			const char *m = proto_get(&r.msg[i2], "metric");

			n += strcmp(r.msg[i2].kind, "sample") == 0 && !(m && strncmp(m, "rq_", 3) == 0);
		}
		is_int(n, 16, "samples still there");
		is_int(r.status, 0, "status ok");
	} else {
		tap_skip("the no-tracefs path: this host has mmc tracefs events");
	}
	run_free(&r);
}

static void test_parse_trace(void)
{
	const char *trace =
		"# tracer: nop\n"
		"# entries-in-buffer/entries-written: 6/6   #P:4\n"
		"  kworker/0:1H-80  [000] ..... 12.5: mmc_request_start: mmc0: start struct "
		"mmc_request[0000000012]: cmd_opcode=25 cmd_arg=0x1000 cmd_flags=0xb5 cmd_retries=0 "
		"stop_opcode=0 stop_arg=0x0 stop_flags=0x0 stop_retries=0 sbc_opcode=23 "
		"sbc_arg=0x80000008 sbc_flags=0x15 sbc_retires=0 blocks=8 block_size=512 "
		"blk_addr=4096 data_flags=0x100 tag=0 can_retune=1 doing_retune=0 retune_now=0 "
		"need_retune=0 hold_retune=1 retune_period=0\n"
		"  kworker/0:1H-80  [000] ..... 12.6: mmc_request_start: mmc0: start struct "
		"mmc_request[0000000013]: cmd_opcode=25 cmd_arg=0x2000 cmd_flags=0xb5 cmd_retries=0 "
		"stop_opcode=0 stop_arg=0x0 stop_flags=0x0 stop_retries=0 sbc_opcode=23 "
		"sbc_arg=0x8 sbc_flags=0x15 sbc_retires=0 blocks=8 block_size=512 blk_addr=8192 "
		"data_flags=0x100 tag=0\n"
		"  kworker/0:1H-80  [000] ..... 12.7: mmc_request_start: mmc0: start struct "
		"mmc_request[0000000014]: cmd_opcode=6 cmd_arg=0x3200101 cmd_flags=0x49d "
		"cmd_retries=0 sbc_opcode=0 sbc_arg=0x0 data_flags=0x0 tag=0\n"
		"  kworker/0:1H-80  [000] ..... 12.8: mmc_request_start: mmc0: start struct "
		"mmc_request[0000000015]: cmd_opcode=6 cmd_arg=0x3b70101 cmd_flags=0x49d "
		"cmd_retries=0 sbc_opcode=0 sbc_arg=0x0 data_flags=0x0 tag=0\n"
		"  kworker/1:1H-81  [001] ..... 12.9: mmc_request_start: mmc0: start struct "
		"mmc_request[0000000016]: cmd_opcode=0 cmd_arg=0x0 cmd_flags=0x0 cmd_retries=0 "
		"sbc_opcode=0 sbc_arg=0x0 data_flags=0x1100 tag=5\n"
		"  kworker/1:1H-81  [001] ..... 13.0: mmc_request_start: mmc1: start struct "
		"mmc_request[0000000017]: cmd_opcode=6 cmd_arg=0x3200101 sbc_opcode=23 "
		"sbc_arg=0x80000001 data_flags=0x1100 tag=0\n";
	char path[4200], arg[4300];
	struct run r;

	put_str("trace.txt", trace);
	tpath(path, sizeof(path), "trace.txt");
	snprintf(arg, sizeof(arg), "file=%s", path);
	run_agent(&r, "parse-trace", arg, "host=mmc0", NULL);
	is_int(r.bad, 0, "parse-trace: protocol");
	is_int(counter(&r, "events"), 5, "mmc0 events only");
	is_int(counter(&r, "reliable_writes"), 2, "CMD23 bit 31 + CQE REL_WR, not plain CMD23");
	is_int(counter(&r, "flushes"), 1, "FLUSH_CACHE only, not another SWITCH");
	run_free(&r);
	run_agent(&r, "parse-trace", arg, NULL);
	is_int(counter(&r, "events"), 6, "all hosts");
	is_int(counter(&r, "reliable_writes"), 3, "all hosts: reliable writes");
	is_int(counter(&r, "flushes"), 2, "all hosts: flushes");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_count_fake_tracefs();
	test_parse_trace();
	agent_cleanup();
	return tap_done();
}
