/*
 * mode.c - verify which mode of the mode table (harness/common/mode.h) the
 * running kernel is in (docs/running.md "Every sample is verified").
 */
#include "agent.h"
#include "mode.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <unistd.h>

struct klog_scan {
	char cqe_pat[64], hsq_pat[64], fua_pat[64];
	int cqe;     /* -1 unknown, 0 software queue, 1 CQE (last probe wins) */
	int fua_off; /* the series' "FUA off" probe line seen */
	int readable;
};

static void klog_line(struct klog_scan *s, const char *line)
{
	if (strstr(line, s->cqe_pat))
		s->cqe = 1;
	else if (strstr(line, s->hsq_pat))
		s->cqe = 0;
	if (strstr(line, s->fua_pat))
		s->fua_off = 1;
}

/* The kernel log: /dev/kmsg (one record per read, non-blocking), else
 * klogctl(); a regular file at <sysroot>/dev/kmsg (tests) is read by lines. */
static void klog_scan(const struct agent *a, struct klog_scan *s)
{
	static char buf[1 << 20];
	char path[PATH_MAX];
	struct stat st;
	int fd, n;

	s->cqe = -1;
	s->fua_off = 0;
	s->readable = 0;
	if (agent_path(a, path, sizeof(path), "/dev/kmsg") < 0)
		return;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) {
		for (;;) {
			ssize_t r = read(fd, buf, 8192);

			if (r < 0 && errno == EPIPE) /* overwritten under us: go on */
				continue;
			if (r < 0 && errno == EAGAIN) /* the end of the log */
				s->readable = 1;
			if (r <= 0)
				break;
			buf[r] = '\0';
			s->readable = 1;
			klog_line(s, buf);
		}
		close(fd);
		if (s->readable)
			return;
	} else if (fd >= 0) {
		FILE *f = fdopen(fd, "r");

		if (!f) {
			close(fd);
			return;
		}
		s->readable = 1;
		while (fgets(buf, 8192, f))
			klog_line(s, buf);
		fclose(f);
		return;
	}
	if (a->sysroot[0])
		return; /* tests never look at the host's log */
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, (int)sizeof(buf) - 1);
	if (n > 0) {
		char *line = buf, *nl;

		buf[n] = '\0';
		s->readable = 1;
		while (line && *line) {
			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			klog_line(s, line);
			line = nl ? nl + 1 : NULL;
		}
	}
}

static int read_int(const struct agent *a, const char *file, long *out)
{
	char buf[64], *end;

	if (agent_readf(a, buf, sizeof(buf), "/sys/block/%s/%s", a->device, file) <= 0)
		return -1;
	errno = 0;
	*out = strtol(buf, &end, 10);
	return errno || *end ? -1 : 0;
}

int cmd_mode(struct agent *a)
{
	static struct agent_kv k;
	const char *expect = agent_arg(a, "expect");
	char host[32], wc[64];
	struct klog_scan s;
	long fua = -1, cmdq = -1, tags = -1;
	int write_back, cqe, m;
	const char *mode;

	if (expect && lab_mode_parse(expect) < 0) {
		char modes[256];

		lab_mode_list(modes, sizeof(modes), " or ");
		agent_error(a, "bad-arg", "expect=%s: want %s", expect, modes);
		return -1;
	}
	if (!a->device[0]) {
		agent_error(a, "no-device", "no eMMC found under /sys/block (use --device)");
		return -1;
	}
	if (agent_readf(a, wc, sizeof(wc), "/sys/block/%s/size", a->device) < 0) {
		agent_error(a, "no-device", "/sys/block/%s: %s", a->device, strerror(errno));
		return -1;
	}
	agent_kv_init(&k);
	memset(&s, 0, sizeof(s));
	if (agent_host_of(a, a->device, host, sizeof(host)) != 0)
		host[0] = '\0';
	snprintf(s.cqe_pat, sizeof(s.cqe_pat), "%s%sCommand Queue Engine enabled", host,
		 host[0] ? ": " : "");
	snprintf(s.hsq_pat, sizeof(s.hsq_pat), "%s%sHost Software Queue enabled", host,
		 host[0] ? ": " : "");
	snprintf(s.fua_pat, sizeof(s.fua_pat), "%.40s: FUA off", a->device);
	klog_scan(a, &s);

	if (read_int(a, "queue/fua", &fua) != 0)
		fua = -1;
	/* -1 when queue/write_cache is missing */
	write_back = agent_readf(a, wc, sizeof(wc), "/sys/block/%s/queue/write_cache", a->device) > 0 ?
		     strcmp(wc, "write back") == 0 : -1;
	if (read_int(a, "device/cmdq_en", &cmdq) != 0)
		cmdq = -1;
	if (read_int(a, "mq/0/nr_tags", &tags) != 0)
		tags = -1;
	/* cmdq_en is only set when the host enabled CQE; the log line confirms
	 * it, and says "Host Software Queue" when it was not the CQE. */
	cqe = cmdq == 1 && s.cqe != 0;

	if (fua >= 0)
		agent_kv_add(&k, "fua", "%ld", fua);
	if (write_back >= 0)
		agent_kv_add(&k, "write_cache", "%d", write_back);
	agent_kv_add(&k, "cqe", "%d", cqe);
	agent_kv_add(&k, "cmdq_en", "%ld", cmdq < 0 ? 0 : cmdq);
	if (tags >= 0)
		agent_kv_add(&k, "nr_tags", "%ld", tags);
	agent_knobs(a, &k);
	/* queue/fua other than 0 or 1 is not a value we know */
	m = lab_mode_from_verified(fua == 0 || fua == 1 ? (int)fua : -1, write_back, cqe);
	mode = m >= 0 ? lab_mode_name(m) : "unknown";
	agent_kv_add(&k, "mode", "%s", mode);
	if (expect) {
		agent_kv_add(&k, "expect", "%s", expect);
		agent_kv_add(&k, "match", "%d", strcmp(expect, mode) == 0);
	}
	agent_kv_add(&k, "cqe_log", "%s", s.cqe < 0 ? (s.readable ? "none" : "unreadable") :
				      s.cqe ? "cqe" : "hsq");
	agent_kv_add(&k, "fua_off_log", "%d", s.fua_off);
	agent_kv_add(&k, "device", "%s", a->device);
	agent_emit(a, "mode", k.kv);
	return 0;
}
