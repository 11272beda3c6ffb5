/* test_agent_workloads.c - emmclab-agent workloads on host files and
 * directories: androbench, fscopy (dir= and tree=PATH), powerfail write and
 * check (truncated and corrupted at every byte), precondition on a file,
 * the tracefs counting path with a fake tracefs, parse-trace, fio. */
#include "test_agent.h"

#include <dirent.h>
#include <stdint.h>

static int dir_entries(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static double sample(const struct run *r, const char *metric, int iter, const char *unit)
{
	char it[16];
	int i;

	snprintf(it, sizeof(it), "%d", iter);
	for (i = 0; i < r->nlines; i++) {
		const struct proto_msg *m = &r->msg[i];
		const char *mm = proto_get(m, "metric"), *ii = proto_get(m, "iter");
		const char *u = proto_get(m, "unit");
		double v;

		if (strcmp(m->kind, "sample") || !mm || strcmp(mm, metric) || !ii || strcmp(ii, it))
			continue;
		if (!u || strcmp(u, unit) != 0 || proto_get_double(m, "value", &v) != 0)
			return -2;
		return v;
	}
	return -1;
}

static long long counter(const struct run *r, const char *name)
{
	int i;

	for (i = 0; i < r->nlines; i++) {
		const char *n = proto_get(&r->msg[i], "name");
		int64_t v;

		if (!strcmp(r->msg[i].kind, "counter") && n && !strcmp(n, name) &&
		    proto_get_i64(&r->msg[i], "value", &v) == 0)
			return v;
	}
	return -1;
}

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
		is_int(count_msg(&r, "sample"), 16, "samples still there");
		is_int(r.status, 0, "status ok");
	} else {
		ok(1, "# SKIP host has mmc tracefs events");
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

static void make_tree(void)
{
	char big[70000];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	put_str("src/Makefile", "all:\n");
	put_str("src/kernel/sched/core.c", "int x;\n");
	put_file("src/fs/ext4/big.bin", big, sizeof(big));
	put_str("src/empty/.keep", "");
	{
		char p[4200];

		tpath(p, sizeof(p), "src/link");
		if (symlink("Makefile", p) != 0)
			printf("# symlink failed\n");
	}
}

static void test_fscopy(void)
{
	static const char *const phases[] = { "copy1_time", "rm_time", "copy2_time", "sync_time" };
	char dir[4200], arg[4300], src[4200], targ[4300];
	double sum = 0, wall;
	struct run r;
	size_t i;

	tpath(dir, sizeof(dir), "fs");
	mkdir(dir, 0755);
	snprintf(arg, sizeof(arg), "dir=%s", dir);
	run_agent(&r, "fscopy", "iterations=2", arg, "scale=0.002", NULL);
	is_int(r.bad, 0, "fscopy: protocol");
	is_int(r.status, 0, "fscopy: exit 0");
	{
		const struct proto_msg *m = find_msg(&r, "progress", NULL, NULL);
		const char *what = m ? proto_get(m, "what") : NULL;

		ok(what && strstr(what, "158 files, 10 dirs"), "synthetic tree size: %s",
		   what ? what : "(none)");
	}
	wall = sample(&r, "wall_time", 2, "s");
	ok(wall > 0, "wall_time");
	for (i = 0; i < 4; i++) {
		double v = sample(&r, phases[i], 2, "s");

		ok(v >= 0, "%s", phases[i]);
		sum += v;
	}
	is_near(sum, wall, 0.05, "phases add up to the wall time");
	ok(sample(&r, "mkfs_time", 1, "s") == -1, "no mkfs_time with dir=");
	is_int(count_msg(&r, "sample"), 10, "5 samples x 2 iterations");
	is_int(dir_entries(dir), 0, "dir= left clean");
	run_free(&r);

	make_tree();
	tpath(src, sizeof(src), "src");
	snprintf(targ, sizeof(targ), "tree=%s", src);
	run_agent(&r, "fscopy", "iter=3", arg, targ, NULL);
	is_int(r.status, 0, "fscopy tree=PATH: exit 0");
	ok(sample(&r, "copy1_time", 3, "s") >= 0, "tree=PATH copied (iter 3)");
	is_int(dir_entries(dir), 0, "tree=PATH: dir left clean");
	run_free(&r);

	run_agent(&r, "fscopy", "target=/dev/null", NULL);
	is_int(r.status, 1, "fscopy target=/dev/null refused");
	ok(find_msg(&r, "error", "code", "bad-target") != NULL, "not a block device or file");
	run_free(&r);
}

/* powerfail: write N records, then check truncations and corruptions */
#define PF_N 4
#define PF_RS 128

static void pf_check(const char *file, int acked, long long *intact, long long *lost,
		     long long *corrupt)
{
	char f[4300], a[64];
	struct run r;

	snprintf(f, sizeof(f), "file=%s", file);
	snprintf(a, sizeof(a), "acked=%d", acked);
	run_agent(&r, "powerfail-check", f, a, "record_size=128", NULL);
	*intact = counter(&r, "intact");
	*lost = counter(&r, "lost");
	*corrupt = counter(&r, "corrupt");
	if (r.bad || r.status)
		*intact = -99;
	run_free(&r);
}

static void test_powerfail(void)
{
	static unsigned char orig[PF_N * PF_RS];
	char file[4200], farg[4300], work[4200];
	long long in, lo, co;
	int len, pos, trunc_bad = 0, corrupt_bad = 0, fd, i;
	struct run r;

	tpath(file, sizeof(file), "pf.dat");
	tpath(work, sizeof(work), "pf-work.dat");
	snprintf(farg, sizeof(farg), "file=%s", file);
	run_agent(&r, "powerfail-write", farg, "records=4", "record_size=128", NULL);
	is_int(r.bad, 0, "powerfail-write: protocol");
	is_int(r.status, 0, "powerfail-write: exit 0");
	for (i = 1; i <= PF_N; i++) {
		char v[8];
		const struct proto_msg *m;

		snprintf(v, sizeof(v), "%d", i);
		m = find_msg(&r, "counter", "value", v);
		ok(m && !strcmp(proto_get(m, "name"), "acked"), "record %d acked", i);
	}
	run_free(&r);
	fd = open(file, O_RDONLY);
	ok(fd >= 0 && read(fd, orig, sizeof(orig)) == (ssize_t)sizeof(orig), "file has 4 records");
	if (fd >= 0)
		close(fd);

	pf_check(file, 4, &in, &lo, &co);
	ok(in == 4 && lo == 0 && co == 0, "all 4 intact (%lld/%lld/%lld)", in, lo, co);
	pf_check(file, 6, &in, &lo, &co);
	ok(in == 4 && lo == 2 && co == 0, "acked 6 of 4 written: 2 lost");
	pf_check(file, 2, &in, &lo, &co);
	ok(in == 2 && lo == 0 && co == 0, "acked 2: 2 intact (others extra)");

	/* truncated at every length: full records intact, a partial one corrupt, rest lost */
	for (len = 0; len <= (int)sizeof(orig); len++) {
		int full = len / PF_RS, part = len % PF_RS ? 1 : 0;

		put_file("pf-work.dat", orig, (size_t)len);
		pf_check(work, PF_N, &in, &lo, &co);
		if (in != full || co != part || lo != PF_N - full - part) {
			if (trunc_bad++ < 3)
				printf("# truncated at %d: intact %lld lost %lld corrupt %lld\n", len,
				       in, lo, co);
		}
	}
	is_int(trunc_bad, 0, "truncation at every byte classified");

	/* one byte flipped at every position: exactly that record corrupt */
	for (pos = 0; pos < (int)sizeof(orig); pos++) {
		static unsigned char copy[sizeof(orig)];

		memcpy(copy, orig, sizeof(orig));
		copy[pos] ^= 0x5a;
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		if (in != PF_N - 1 || co != 1 || lo != 0) {
			if (corrupt_bad++ < 3)
				printf("# flipped %d: intact %lld lost %lld corrupt %lld\n", pos, in,
				       lo, co);
		}
	}
	is_int(corrupt_bad, 0, "corruption at every byte detected");

	/* a zeroed (never written) record is lost, not corrupt */
	{
		static unsigned char copy[sizeof(orig)];

		memcpy(copy, orig, sizeof(orig));
		memset(copy + PF_RS, 0, PF_RS);
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		ok(in == 3 && lo == 1 && co == 0, "zeroed record 2: lost");
	}
	/* a record from another run (valid CRC, other run id) is corrupt */
	{
		static unsigned char other[sizeof(orig)], copy[sizeof(orig)];

		run_agent(&r, "powerfail-write", farg, "records=4", "record_size=128", NULL);
		run_free(&r);
		fd = open(file, O_RDONLY);
		ok(fd >= 0 && read(fd, other, sizeof(other)) == (ssize_t)sizeof(other), "second run");
		if (fd >= 0)
			close(fd);
		ok(memcmp(other, orig, sizeof(orig)) != 0, "a new run writes other records");
		memcpy(copy, orig, sizeof(orig));
		memcpy(copy + 2 * PF_RS, other + 2 * PF_RS, PF_RS);
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		ok(in == 3 && co == 1, "stale record of another run: corrupt");
	}
	run_agent(&r, "powerfail-check", farg, "acked=9", "record_size=128", NULL);
	ok(find_msg(&r, "error", "code", "integrity") != NULL, "integrity error line on loss");
	is_int(r.status, 0, "loss is a finding: status ok");
	run_free(&r);
}

static void test_precondition(void)
{
	static unsigned char before[1 << 20], after[1 << 20];
	char file[4200], targ[4300];
	struct run r;
	int fd, same = 0;
	size_t i;

	memset(before, 0xAA, sizeof(before));
	put_file("pre.img", before, sizeof(before));
	tpath(file, sizeof(file), "pre.img");
	snprintf(targ, sizeof(targ), "target=%s", file);
	run_agent(&r, "precondition", "passes=2", targ, NULL);
	is_int(r.bad, 0, "precondition: protocol");
	is_int(r.status, 0, "precondition: exit 0");
	ok(count_msg(&r, "progress") >= 4, "progress lines (%d)", count_msg(&r, "progress"));
	ok(find_msg(&r, "progress", "pct", "100") != NULL, "reaches 100%%");
	run_free(&r);
	fd = open(file, O_RDONLY);
	ok(fd >= 0 && read(fd, after, sizeof(after)) == (ssize_t)sizeof(after) &&
	   read(fd, after, 1) == 0, "size unchanged");
	if (fd >= 0)
		close(fd);
	for (i = 0; i < sizeof(after); i++)
		same += after[i] == 0xAA;
	ok(same < 1 << 14, "data replaced by random bytes (%d bytes still 0xAA)", same);

	/* /dev/null stands for a character device.  Once it was found replaced by a
	 * regular file on the test machine (by something outside this suite): then
	 * the agent would rightly write it, so say that instead of a puzzling failure,
	 * and do not fill the machine's /dev/null with random bytes. */
	struct stat st = {0};
	if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
		run_agent(&r, "precondition", "passes=1", "target=/dev/null", NULL);
		is_int(r.status, 1, "character device refused");
		ok(find_msg(&r, "error", "code", "bad-target") != NULL, "as a bad target");
		run_free(&r);
	} else {
		ok(0, "character device refused: /dev/null is not a character device on this "
		   "machine (mode %o): restore it (mknod -m 666 /dev/null c 1 3)", (unsigned)st.st_mode);
	}
	run_agent(&r, "precondition", "passes=0", targ, NULL);
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "passes=0 refused");
	run_free(&r);
}

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
	run_agent(&r, "fio", "job=/nonexistent.fio", NULL);
	is_int(r.status, 1, "fio with a missing job fails");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_androbench();
	test_count_fake_tracefs();
	test_parse_trace();
	test_fscopy();
	test_powerfail();
	test_precondition();
	test_fio();
	agent_cleanup();
	return tap_done();
}
