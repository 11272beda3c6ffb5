/* test_agent.h - run the built emmclab-agent and check every line it prints
 * against the protocol (dense seqs from 1, hello first, done last with
 * lines=N-1), and the fake sysfs they run against.  Shared by test_agent.c
 * and the test_agent_<module>.c programs, one per agent module (header only). */
#ifndef EMMCLAB_TEST_AGENT_H
#define EMMCLAB_TEST_AGENT_H

#include "proto.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define RUN_MAX_LINES 4096

struct run {
	int status;              /* exit status */
	int nlines;              /* protocol lines */
	int bad;                 /* lines that did not parse, seq gaps, ... */
	char *raw;               /* whole stdout */
	size_t rawlen;
	struct proto_msg *msg;   /* [nlines] */
};

static char agent_bin[4096];
static char test_tmp[4096];

static __attribute__((unused)) void agent_setup(void)
{
	const char *bin = getenv("EMMCLAB_BIN");
	char tmpl[] = "/tmp/emmclab-test-agent.XXXXXX";

	snprintf(agent_bin, sizeof(agent_bin), "%s/suites/agent/emmclab-agent", bin ? bin : ".");
	if (access(agent_bin, X_OK) != 0) {
		printf("Bail out! %s not built (EMMCLAB_BIN=%s)\n", agent_bin, bin ? bin : "");
		exit(1);
	}
	if (!mkdtemp(tmpl)) {
		printf("Bail out! mkdtemp\n");
		exit(1);
	}
	snprintf(test_tmp, sizeof(test_tmp), "%s", tmpl);
}

static __attribute__((unused)) void agent_cleanup(void)
{
	char cmd[4200];

	if (test_tmp[0] && strncmp(test_tmp, "/tmp/emmclab-test-agent.", 24) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_tmp);
		if (system(cmd) != 0)
			printf("# cleanup of %s failed\n", test_tmp);
	}
}

static __attribute__((unused)) void run_free(struct run *r)
{
	free(r->raw);
	free(r->msg);
	memset(r, 0, sizeof(*r));
}

/* argv without argv[0]; NULL-terminated.  Always uses a log in test_tmp. */
static __attribute__((unused)) int run_agentv(struct run *r, const char *const *args)
{
	const char *argv[64];
	char log[4200];
	int p[2], n = 0, i;
	posix_spawn_file_actions_t fa;
	size_t cap = 65536;
	pid_t pid;
	char *line;

	memset(r, 0, sizeof(*r));
	snprintf(log, sizeof(log), "%s/agent.log", test_tmp);
	argv[n++] = agent_bin;
	argv[n++] = "--log";
	argv[n++] = log;
	for (i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe(p) != 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	if (posix_spawn(&pid, agent_bin, &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	r->raw = malloc(cap + 1);
	for (;;) {
		ssize_t got;

		if (r->rawlen == cap) {
			cap *= 2;
			r->raw = realloc(r->raw, cap + 1);
		}
		got = read(p[0], r->raw + r->rawlen, cap - r->rawlen);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		r->rawlen += (size_t)got;
	}
	close(p[0]);
	r->raw[r->rawlen] = '\0';
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128;
	r->msg = calloc(RUN_MAX_LINES, sizeof(*r->msg));
	for (line = r->raw; line < r->raw + r->rawlen;) {
		char *nl = memchr(line, '\n', (size_t)(r->raw + r->rawlen - line));
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (r->nlines < RUN_MAX_LINES) {
			struct proto_msg *m = &r->msg[r->nlines];

			if (proto_parse(line, len, m) != PROTO_OK || m->seq != (uint64_t)r->nlines + 1)
				r->bad++;
			r->nlines++;
		}
		line += len + 1;
	}
	if (r->nlines < 2 || strcmp(r->msg[0].kind, "hello") != 0 ||
	    strcmp(r->msg[r->nlines - 1].kind, "done") != 0)
		r->bad++;
	else {
		const char *l = proto_get(&r->msg[r->nlines - 1], "lines");
		const char *st = proto_get(&r->msg[r->nlines - 1], "status");

		if (!l || strtol(l, NULL, 10) != r->nlines - 1)
			r->bad++;
		if (!st || (strcmp(st, "ok") == 0) != (r->status == 0))
			r->bad++;
	}
	return 0;
}

static __attribute__((unused)) int run_agent(struct run *r, ...)
{
	const char *args[64];
	va_list ap;
	int n = 0;

	va_start(ap, r);
	while (n < 63 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	return run_agentv(r, args);
}

/* The first message of kind (with key=value when key given), or NULL. */
static __attribute__((unused)) const struct proto_msg *find_msg(const struct run *r, const char *kind, const char *key,
					const char *value)
{
	int i;

	for (i = 0; i < r->nlines; i++) {
		const char *v;

		if (strcmp(r->msg[i].kind, kind) != 0)
			continue;
		if (!key)
			return &r->msg[i];
		v = proto_get(&r->msg[i], key);
		if (v && strcmp(v, value) == 0)
			return &r->msg[i];
	}
	return NULL;
}

static __attribute__((unused)) int count_msg(const struct run *r, const char *kind)
{
	int i, n = 0;

	for (i = 0; i < r->nlines; i++)
		n += strcmp(r->msg[i].kind, kind) == 0;
	return n;
}

static __attribute__((unused)) const char *get_kv(const struct run *r, const char *kind, const char *key)
{
	const struct proto_msg *m = find_msg(r, kind, NULL, NULL);

	return m ? proto_get(m, key) : NULL;
}

/* write a file under test_tmp (mkdir -p of its parents) */
static __attribute__((unused)) void put_file(const char *rel, const void *data, size_t len)
{
	char path[4200], *s;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", test_tmp, rel);
	for (s = path + strlen(test_tmp) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	close(fd);
}

static __attribute__((unused)) void put_str(const char *rel, const char *s)
{
	put_file(rel, s, strlen(s));
}

static __attribute__((unused)) void tpath(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", test_tmp, rel);
}

/* ---- fixtures and readers shared by the test_agent_*.c programs ---- */

/* CID: MID 0x15, OID 0x0100, PNM "8GTF4R", PRV 0x12, PSN 0xdeadbeef, MDT 6/(3), CRC */
#define CID_HEX "15010038475446345212deadbeef6301"

static __attribute__((unused)) void sysroot_link(const char *rel_link, const char *target)
{
	char path[4200];

	tpath(path, sizeof(path), rel_link);
	unlink(path);
	if (symlink(target, path) != 0) {
		printf("Bail out! symlink %s\n", path);
		exit(1);
	}
}

/* Filled by make_sysroot(): the board below, and an empty sysroot. */
static char sys_root[4200], sys_empty[4200];

/* A board: mmcblk0 is an SD card, mmcblk1 the eMMC on host mmc1. */
static __attribute__((unused)) void make_sysroot(void)
{
	const char *card = "root/sys/devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001";
	const char *sd = "root/sys/devices/platform/soc/mmc0/mmc_host/mmc0/mmc0:aaaa";
	char p[512];

	snprintf(p, sizeof(p), "%s/type", sd);
	put_str(p, "SD\n");
	snprintf(p, sizeof(p), "%s/cid", card);
	put_str(p, CID_HEX "\n");
	snprintf(p, sizeof(p), "%s/type", card);
	put_str(p, "MMC\n");
	snprintf(p, sizeof(p), "%s/cmdq_en", card);
	put_str(p, "0\n");
	snprintf(p, sizeof(p), "%s/rev", card);
	put_str(p, "0x8\n");
	snprintf(p, sizeof(p), "%s/life_time", card);
	put_str(p, "0x02 0x03\n");
	snprintf(p, sizeof(p), "%s/pre_eol_info", card);
	put_str(p, "0x01\n");
	snprintf(p, sizeof(p), "%s/rel_sectors", card);
	put_str(p, "0x1\n");
	put_str("root/sys/block/mmcblk0/size", "100\n");
	sysroot_link("root/sys/block/mmcblk0/device",
		     "../../devices/platform/soc/mmc0/mmc_host/mmc0/mmc0:aaaa");
	put_str("root/sys/block/mmcblk1/size", "15269888\n");
	sysroot_link("root/sys/block/mmcblk1/device",
		     "../../devices/platform/soc/mmc1/mmc_host/mmc1/mmc1:0001");
	put_str("root/sys/block/mmcblk1boot0/size", "8192\n");
	put_str("root/sys/block/mmcblk1/queue/fua", "1\n");
	put_str("root/sys/block/mmcblk1/queue/write_cache", "write back\n");
	put_str("root/sys/block/mmcblk1/mq/0/nr_tags", "64\n");
	put_str("root/sys/block/mmcblk1/stat",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n");
	put_str("root/sys/module/mmc_block/parameters/fua", "on\n");
	put_str("root/sys/module/mmc_core/parameters/disable_cqe", "Y\n");
	put_str("root/proc/cmdline", "console=ttyS0 mmc_block.fua=on mmc_core.disable_cqe=1\n");
	put_str("root/dev/kmsg", "6,1,1,-;mmc1: new HS400 MMC card at address 0001\n");
	tpath(sys_root, sizeof(sys_root), "root");
	tpath(sys_empty, sizeof(sys_empty), "empty");
	mkdir(sys_empty, 0755);
}

static __attribute__((unused)) int dir_entries(const char *path)
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

static __attribute__((unused)) double sample(const struct run *r, const char *metric, int iter, const char *unit)
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

static __attribute__((unused)) long long counter(const struct run *r, const char *name)
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

#endif
