/*
 * console_bench.c - benchmarks of the console engine (run by bench/console_bench.sh).
 *
 *   console_bench gen FILE MB        write a realistic boot-log stream of about MB MiB
 *                                    (U-Boot, kernel log with ANSI colours and CR LF,
 *                                    login, shell, agent protocol lines) and print the
 *                                    true number of occurrences of the unanchored patterns
 *   console_bench expect FILE        feed FILE in 4 KiB chunks through one expect engine
 *                                    with the boot pattern set armed; print MB/s and counts
 *   console_bench patterns           print the pattern set (kind<TAB>pattern), used by the
 *                                    script to write the Tcl expect baseline
 *   console_bench idle N SECONDS     N pty consoles attached (pty driver + expect engine +
 *                                    transcript each), no traffic; print CPU use of the
 *                                    process over SECONDS (getrusage) in % of one core
 */
#include "console.h"
#include "expect.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct pat {
	enum expect_kind kind;
	const char *re;
	bool anchored; /* `$`-anchored: count depends on chunking, not checked */
};

static const struct pat pats[] = {
	{EXPECT_LITERAL, "Hit any key to stop autoboot", false},
	{EXPECT_REGEX, "=> $", true},
	{EXPECT_REGEX, "login: *$", true},
	{EXPECT_LITERAL, "Kernel panic", false},
	{EXPECT_REGEX, "[#$] *$", true},
	{EXPECT_REGEX, "@@emmclab 1 [0-9]+ ", false},
	{EXPECT_LITERAL, "Command Queue Engine enabled", false},
	{EXPECT_REGEX, "mmcblk[0-9]+: mmc[0-9]+:[0-9a-f]+", false},
	{EXPECT_LITERAL, "Starting kernel ...", false},
	{EXPECT_REGEX, "EXT4-fs \\(mmcblk[0-9]+p[0-9]+\\): mounted", false},
};
#define NPATS (sizeof pats / sizeof pats[0])

/* ---- generator ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static const char *const kernel_lines[] = {
	"Booting Linux on physical CPU 0x0000000000 [0x410fd034]",
	"Linux version 6.1.0-emmclab (build@lab) (aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT",
	"Machine model: Rockchip RK3399 Evaluation Board",
	"efi: UEFI not found.",
	"Zone ranges:",
	"  DMA      [mem 0x0000000000200000-0x00000000f7ffffff]",
	"psci: probing for conduit method from DT.",
	"percpu: Embedded 20 pages/cpu s43880 r8192 d29848 u81920",
	"Kernel command line: console=ttyS2,1500000 root=/dev/mmcblk0p2 rw rootwait emmclab.mode=fua",
	"Dentry cache hash table entries: 524288 (order: 10, 4194304 bytes, linear)",
	"Memory: 3912764K/4061184K available (16384K kernel code, 2346K rwdata)",
	"rcu: Hierarchical RCU implementation.",
	"arch_timer: cp15 timer(s) running at 24.00MHz (phys).",
	"Console: colour dummy device 80x25",
	"Calibrating delay loop (skipped), value calculated using timer frequency.. 48.00 BogoMIPS",
	"pid_max: default: 32768 minimum: 301",
	"Mount-cache hash table entries: 8192 (order: 4, 65536 bytes, linear)",
	"smp: Brought up 1 node, 6 CPUs",
	"devtmpfs: initialized",
	"dw_mmc fe320000.mmc: IDMAC supports 32-bit address mode.",
	"sdhci-arasan fe330000.mmc: Command Queue Engine enabled",
	"mmc0: CQHCI version 5.10",
	"mmc0: SDHCI controller on fe330000.mmc [fe330000.mmc] using ADMA",
	"mmc0: new HS400 Enhanced strobe MMC card at address 0001",
	"mmcblk0: mmc0:0001 8GTF4R 7.28 GiB",
	"mmcblk0boot0: mmc0:0001 8GTF4R 4.00 MiB",
	" mmcblk0: p1 p2",
	"EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Quota mode: none.",
	"VFS: Mounted root (ext4 filesystem) on device 179:2.",
	"Freeing unused kernel memory: 7296K",
	"Run /sbin/init as init process",
	"random: crng init done",
};

struct gen {
	FILE *f;
	uint64_t bytes;
	uint64_t counts[NPATS];
	double t;
	unsigned seq;
};

static void out(struct gen *g, const char *s)
{
	size_t n = strlen(s);
	fwrite(s, 1, n, g->f);
	g->bytes += n;
}

static void klog(struct gen *g, const char *s)
{
	char line[512];
	g->t += (rnd() % 20000) / 1e6;
	snprintf(line, sizeof line, "[%5u.%06u] %s\r\n", (unsigned)g->t,
		 (unsigned)((g->t - (unsigned)g->t) * 1e6), s);
	out(g, line);
}

static void one_boot(struct gen *g)
{
	char line[512];
	g->t = 0;
	out(g, "\r\nU-Boot SPL 2023.01 (Jan 10 2023 - 12:00:00 +0000)\r\nTrying to boot from MMC1\r\n"
	       "\r\n\r\nU-Boot 2023.01 (Jan 10 2023 - 12:00:00 +0000)\r\n\r\nModel: Rockchip RK3399 "
	       "Evaluation Board\r\nDRAM:  3.9 GiB\r\nCore:  272 devices, 31 uclasses, devicetree: "
	       "separate\r\nMMC:   mmc@fe320000: 1, mmc@fe330000: 0\r\nIn:    serial\r\nOut:   "
	       "serial\r\nErr:   serial\r\nNet:   eth0: ethernet@fe300000\r\n");
	out(g, "Hit any key to stop autoboot:  3 \b\b\b 2 \b\b\b 0 \r\n");
	g->counts[0]++;
	out(g, "=> setenv bootargs console=ttyS2,1500000 root=/dev/mmcblk0p2 rw rootwait\r\n"
	       "=> tftp ${kernel_addr_r} Image\r\nUsing ethernet@fe300000 device\r\nTFTP from server "
	       "192.168.1.1; our IP address is 192.168.1.50\r\nLoading: #################################"
	       "################################\r\n\t 5.2 MiB/s\r\ndone\r\nBytes transferred = "
	       "22555136 (1583200 hex)\r\n=> booti ${kernel_addr_r} - ${fdt_addr_r}\r\n"
	       "## Flattened Device Tree blob at 01f00000\r\n   Booting using the fdt blob at "
	       "0x1f00000\r\n\r\nStarting kernel ...\r\n\r\n");
	g->counts[8]++;
	for (size_t i = 0; i < sizeof kernel_lines / sizeof kernel_lines[0]; i++) {
		klog(g, kernel_lines[i]);
		if (strstr(kernel_lines[i], "Command Queue Engine enabled"))
			g->counts[6]++;
		if (strstr(kernel_lines[i], "mmcblk0: mmc0:0001"))
			g->counts[7]++;
		if (strstr(kernel_lines[i], "EXT4-fs (mmcblk0p2): mounted"))
			g->counts[9]++;
	}
	/* systemd-style status with colour escapes */
	for (int i = 0; i < 12; i++) {
		snprintf(line, sizeof line, "[\x1b[0;32m  OK  \x1b[0m] Started \x1b[0;1;39mService %d "
					    "of the emmclab image\x1b[0m.\r\n", i);
		out(g, line);
	}
	out(g, "\r\nWelcome to Buildroot\r\nemmclab-rk3399 login: root\r\nPassword: \r\n"
	       "# export PS1='EMMCLAB-4f2a$ '\r\nEMMCLAB-4f2a$ emmclab-agent run androbench\r\n");
	for (int i = 0; i < 60; i++) {
		snprintf(line, sizeof line,
			 "@@emmclab 1 %u sample workload=seqwrite metric=bw value=%u.%02u unit=MB%%2Fs "
			 "iteration=%d crc=%08x\r\n",
			 g->seq++, 80 + rnd() % 40, rnd() % 100, i, rnd());
		out(g, line);
		g->counts[5]++;
		if (i % 20 == 19) {
			klog(g, "mmc0: cqhci: timeout for tag 3, qcnt 1");
			klog(g, "mmc0: running CQE recovery");
		}
	}
	if (rnd() % 50 == 0) {
		klog(g, "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b");
		g->counts[3]++;
	}
}

static int cmd_gen(const char *path, double mb)
{
	struct gen g = {0};
	g.f = fopen(path, "we");
	if (!g.f) {
		perror(path);
		return 1;
	}
	while (g.bytes < (uint64_t)(mb * 1048576.0))
		one_boot(&g);
	fclose(g.f);
	printf("bytes %llu\n", (unsigned long long)g.bytes);
	for (size_t i = 0; i < NPATS; i++)
		if (!pats[i].anchored)
			printf("expected %zu %llu\n", i, (unsigned long long)g.counts[i]);
	return 0;
}

/* ---- expect throughput ---- */

static uint64_t hits[NPATS];

static void on_match(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	LAB_UNUSED(m);
	hits[(size_t)(uintptr_t)arg]++;
}

static int cmd_expect(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct expect *x = expect_new(NULL, 0);
	for (size_t i = 0; i < NPATS; i++) {
		struct lab_err e = {0};
		if (expect_add(x, pats[i].kind, pats[i].re, 0, on_match, (void *)(uintptr_t)i, &e) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
	}
	char buf[4096];
	uint64_t total = 0;
	uint64_t t0 = lab_now_ns();
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r <= 0)
			break;
		expect_feed(x, buf, (size_t)r);
		total += (uint64_t)r;
	}
	uint64_t dt = lab_now_ns() - t0;
	close(fd);
	expect_free(x);
	printf("bytes %llu seconds %.4f MBps %.2f\n", (unsigned long long)total, dt / 1e9,
	       total / 1e6 / (dt / 1e9));
	for (size_t i = 0; i < NPATS; i++)
		printf("count %zu %llu\n", i, (unsigned long long)hits[i]);
	return 0;
}

static int cmd_patterns(void)
{
	for (size_t i = 0; i < NPATS; i++)
		printf("%s\t%s\n", pats[i].kind == EXPECT_LITERAL ? "ex" : "re", pats[i].re);
	return 0;
}

/* ---- idle cost ---- */

static void idle_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	expect_feed(arg, buf, n);
}

static void on_stop(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(t);
	LAB_UNUSED(arg);
	loop_stop(l);
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int cmd_idle(int n, double secs)
{
	struct loop *l = loop_new();
	int *masters = calloc((size_t)n, sizeof *masters);
	struct console **cons = calloc((size_t)n, sizeof *cons);
	struct expect **xs = calloc((size_t)n, sizeof *xs);
	struct transcript **ts = calloc((size_t)n, sizeof *ts);
	char dir[] = "/tmp/emmclab-idle-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	for (int i = 0; i < n; i++) {
		masters[i] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (masters[i] < 0 || grantpt(masters[i]) || unlockpt(masters[i])) {
			perror("posix_openpt");
			return 1;
		}
		char yaml[256], name[32], tpath[300];
		snprintf(yaml, sizeof yaml, "driver: pty\npath: %s\n", ptsname(masters[i]));
		snprintf(name, sizeof name, "dut%d", i);
		struct cfg_node *node = NULL;
		struct lab_err e = {0};
		xs[i] = expect_new(l, 0);
		for (size_t k = 0; k < NPATS; k++)
			expect_add(xs[i], pats[k].kind, pats[k].re, 0, on_match, (void *)(uintptr_t)k, &e);
		struct console_events ev = {.data = idle_data};
		if (cfg_parse_buffer("idle", yaml, strlen(yaml), &node, &e) ||
		    console_new(l, name, node, &ev, xs[i], &cons[i], &e) ||
		    console_open(cons[i], &e)) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
		cfg_free(node);
		snprintf(tpath, sizeof tpath, "%s/%s.log", dir, name);
		transcript_open(tpath, 0, &ts[i], &e);
		console_attach_transcript(cons[i], ts[i]);
	}
	struct loop_timer stop;
	loop_timer_init(&stop, on_stop, NULL);
	double c0 = cpu_seconds();
	uint64_t t0 = lab_now_ns();
	loop_timer_start(l, &stop, (uint64_t)(secs * 1000));
	loop_run(l);
	double cpu = cpu_seconds() - c0;
	double wall = (lab_now_ns() - t0) / 1e9;
	printf("consoles %d wall %.2f cpu %.4f percent %.4f\n", n, wall, cpu, 100.0 * cpu / wall);
	for (int i = 0; i < n; i++) {
		char path[300];
		snprintf(path, sizeof path, "%s", transcript_path(ts[i]));
		console_free(cons[i]);
		transcript_close(ts[i], NULL, NULL, NULL);
		unlink(path);
		expect_free(xs[i]);
		close(masters[i]);
	}
	rmdir(dir);
	loop_free(l);
	free(masters);
	free(cons);
	free(xs);
	free(ts);
	return 0;
}

int main(int argc, char **argv)
{
	double num = 0;
	int64_t n = 0;
	if (argc >= 4 && strcmp(argv[1], "gen") == 0 && lab_parse_double(argv[3], &num) == LAB_OK)
		return cmd_gen(argv[2], num);
	if (argc >= 3 && strcmp(argv[1], "expect") == 0)
		return cmd_expect(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "patterns") == 0)
		return cmd_patterns();
	if (argc >= 4 && strcmp(argv[1], "idle") == 0 && lab_parse_i64(argv[2], &n) == LAB_OK &&
	    n > 0 && n <= 4096 && lab_parse_double(argv[3], &num) == LAB_OK)
		return cmd_idle((int)n, num);
	fprintf(stderr, "usage: console_bench gen FILE MB | expect FILE | patterns | idle N SECONDS\n");
	return 2;
}
