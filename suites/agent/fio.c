/*
 * fio.c - run a fio job file when fio exists on the DUT and report a few
 * figures per job as samples (workload=fio, metric=<job>.<dir>_<what>):
 *   <job>.read_bw / write_bw (MiB/s), read_iops / write_iops (IOPS),
 *   read_lat_mean / write_lat_mean and *_clat_p99 (us)
 * fio's JSON is read with a tiny path walker (no allocation, bounded).
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p == '"' ? p + 1 : NULL;
}

/* Skip one JSON value; NULL on malformed input. */
static const char *skip_value(const char *p, int depth)
{
	p = ws(p);
	if (depth > 64)
		return NULL;
	if (*p == '"')
		return skip_string(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = skip_string(ws(p));
				if (!p || *(p = ws(p)) != ':')
					return NULL;
				p++;
			}
			p = skip_value(p, depth + 1);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == ',') {
				p++;
				continue;
			}
			return *p == close ? p + 1 : NULL;
		}
	}
	while (*p && !strchr(",}] \n\r\t", *p))
		p++;
	return p;
}

/* Value of member key in the object at p (NULL if absent). */
static const char *member(const char *p, const char *key)
{
	size_t kl = strlen(key);

	p = ws(p);
	if (*p != '{')
		return NULL;
	p = ws(p + 1);
	while (*p == '"') {
		const char *k = p + 1, *e = skip_string(p);

		if (!e)
			return NULL;
		p = ws(e);
		if (*p != ':')
			return NULL;
		p = ws(p + 1);
		if ((size_t)(e - 1 - k) == kl && strncmp(k, key, kl) == 0)
			return p;
		p = skip_value(p, 0);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p != ',')
			return NULL;
		p = ws(p + 1);
	}
	return NULL;
}

static int number(const char *p, double *out)
{
	char *end;

	if (!p)
		return -1;
	*out = strtod(ws(p), &end);
	return end == ws(p) ? -1 : 0;
}

static void fio_dir(struct agent *a, const char *job, const char *jname, const char *dir,
		    unsigned iter)
{
	const char *d = member(job, dir), *pct;
	double io = 0, v;
	char metric[160];

	if (!d || number(member(d, "io_bytes"), &io) != 0 || io <= 0)
		return;
	if (number(member(d, "bw"), &v) == 0) { /* KiB/s */
		snprintf(metric, sizeof(metric), "%s.%s_bw", jname, dir);
		agent_sample(a, "fio", iter, metric, v / 1024.0, "MiB/s");
	}
	if (number(member(d, "iops"), &v) == 0) {
		snprintf(metric, sizeof(metric), "%s.%s_iops", jname, dir);
		agent_sample(a, "fio", iter, metric, v, "IOPS");
	}
	if (number(member(member(d, "lat_ns"), "mean"), &v) == 0) {
		snprintf(metric, sizeof(metric), "%s.%s_lat_mean", jname, dir);
		agent_sample(a, "fio", iter, metric, v / 1000.0, "us");
	}
	pct = member(member(d, "clat_ns"), "percentile");
	if (number(member(pct, "99.000000"), &v) == 0) {
		snprintf(metric, sizeof(metric), "%s.%s_clat_p99", jname, dir);
		agent_sample(a, "fio", iter, metric, v / 1000.0, "us");
	}
}

/* Report every job of a fio JSON document; -1 if it is not one. */
int agent_fio_report(struct agent *a, const char *json, unsigned iter);
int agent_fio_report(struct agent *a, const char *json, unsigned iter)
{
	const char *doc = strchr(json, '{'), *jobs, *p;
	int n = 0;

	if (!doc || !(jobs = member(doc, "jobs")) || *ws(jobs) != '[')
		return -1;
	p = ws(ws(jobs) + 1);
	while (*p == '{') {
		const char *name = member(p, "jobname"), *e;
		char jname[64] = "job";

		if (name && *name == '"' && (e = skip_string(name)) != NULL)
			snprintf(jname, sizeof(jname), "%.*s", (int)(e - name - 2), name + 1);
		fio_dir(a, p, jname, "read", iter);
		fio_dir(a, p, jname, "write", iter);
		n++;
		p = skip_value(p, 0);
		if (!p)
			return -1;
		p = ws(p);
		if (*p != ',')
			break;
		p = ws(p + 1);
	}
	return n > 0 ? 0 : -1;
}

int cmd_fio(struct agent *a)
{
	static char out[4 << 20];
	const char *job = agent_arg(a, "job");
	char tmpl[] = "/tmp/emmclab-fio.XXXXXX", err[512], path[4096];
	struct agent_count c;
	uint64_t iter, count;
	int fd, st, n, rc = 0;

	if (agent_arg_u64(a, "iter", 1, 1, 1000000, &iter) ||
	    agent_arg_u64(a, "count", 0, 0, 1, &count))
		return -1;
	if (!job) {
		agent_error(a, "bad-arg", "fio needs job=PATH");
		return -1;
	}
	if (agent_which("fio", path, sizeof(path)) != 0) {
		agent_error(a, "no-fio", "fio not found in PATH");
		return -1;
	}
	if (access(job, R_OK) != 0) {
		agent_error(a, "bad-arg", "job=%s: %s", job, strerror(errno));
		return -1;
	}
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		agent_error(a, "io", "mkostemp: %s", strerror(errno));
		return -1;
	}
	unlink(tmpl);
	/* the job's files are on the eMMC: count its commands while fio runs */
	if (count)
		agent_count_begin(a, &c, a->device);
	{
		char *argv[] = { "fio", "--output-format=json", (char *)job, NULL };

		st = agent_exec(argv, fd, err, sizeof(err));
	}
	if (st != 0) {
		agent_error(a, "fio", "fio exited with %d: %s", st, err);
		rc = -1;
	} else {
		n = lseek(fd, 0, SEEK_SET) == 0 ? agent_read_all(fd, out, sizeof(out)) : -1;
		if (n < 0 || agent_fio_report(a, out, (unsigned)iter) != 0) {
			agent_error(a, "fio", "no fio JSON with jobs in the output");
			rc = -1;
		}
	}
	close(fd);
	if (count)
		agent_count_end(a, &c, "fio", (unsigned)iter);
	return rc;
}
