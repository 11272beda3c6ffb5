/* collect.c - decoding an agent invocation's messages (see collect.h). */
#include "collect.h"
#include "lathist.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Metric, unit and counter names: the same few hundred every iteration of
 * every board, kept once (two allocations and frees a sample before).  A DUT
 * that invents names does not grow the pool past this: each further name is
 * the collect's own copy until its reset. */
#define COLLECT_POOL_MAX 4096
static struct lab_strpool pool;

/* The pool's copy of s, or NULL when the pool is full and s not in it. */
static const char *pooled(const char *s)
{
	if (pool.n < COLLECT_POOL_MAX)
		return lab_strpool_intern(&pool, s);
	return NULL;
}

static const char *name_of(struct collect *c, const char *s)
{
	const char *p = pooled(s);
	if (p)
		return p;
	if (c->nnames == c->capnames) {
		c->capnames = c->capnames ? 2 * c->capnames : 16;
		c->names = xreallocarray(c->names, c->capnames, sizeof *c->names);
	}
	return c->names[c->nnames++] = xstrdup(s);
}

/* One counter value per name and iteration (the store's key): a repeated line
 * replaces.  A pooled name equals only its own pointer (the pool never drops
 * a name, and a name left out once it was full stays out). */
static void put_counter(struct collect *c, const char *name, int64_t v)
{
	const char *p = pooled(name);
	for (size_t i = 0; i < c->ncounters; i++) {
		if (p ? c->counters[i].name == p : strcmp(c->counters[i].name, name) == 0) {
			c->counters[i].value = v;
			return;
		}
	}
	if (c->ncounters == c->capcounters) {
		c->capcounters = c->capcounters ? 2 * c->capcounters : 32;
		c->counters = xreallocarray(c->counters, c->capcounters, sizeof *c->counters);
	}
	c->counters[c->ncounters++] = (struct store_counter){p ? p : name_of(c, name), v};
}

/* A `latency` line (docs/agent.md "Request latency"): its lathist buckets
 * "k:count k:count" become counters rq_<op>_lat_b<k> of the iteration. */
static void collect_latency(struct collect *c, const struct proto_msg *m)
{
	const char *op = proto_get(m, "op"), *b = proto_get(m, "buckets");
	char name[64];
	if (!op || !b || (strcmp(op, "write") != 0 && strcmp(op, "flush") != 0)) {
		snprintf(c->error, sizeof c->error, "malformed latency line (seq %llu)",
			 (unsigned long long)m->seq);
		return;
	}
	size_t prefix = (size_t)snprintf(name, sizeof name, "rq_%s_lat_b", op); /* op: write|flush */
	while (*b) {
		char *end;
		unsigned long k = strtoul(b, &end, 10);
		if (end == b || *end != ':' || k >= LATHIST_BUCKETS)
			break;
		b = end + 1;
		long long n = strtoll(b, &end, 10);
		if (end == b || n < 0 || (*end && *end != ' '))
			break;
		/* rq_<op>_lat_b<k>: the prefix once, k by hand (snprintf per bucket was
		 * most of this function) */
		size_t at = prefix;
		char digits[24];
		size_t nd = 0;
		do
			digits[nd++] = (char)('0' + k % 10);
		while ((k /= 10) && nd < sizeof digits);
		while (nd && at + 1 < sizeof name)
			name[at++] = digits[--nd];
		name[at] = '\0';
		put_counter(c, name, n);
		b = *end ? end + 1 : end;
	}
	if (*b)
		snprintf(c->error, sizeof c->error, "malformed latency buckets (seq %llu)",
			 (unsigned long long)m->seq);
}

void collect_reset(struct collect *c)
{
	for (size_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	struct collect keep = {
		.samples = c->samples, .capsamples = c->capsamples,
		.counters = c->counters, .capcounters = c->capcounters,
		.names = c->names, .capnames = c->capnames,
	};
	*c = keep;
	c->fua = c->write_cache = c->cqe = -1;
	c->wall_time = -1;
	health_reading_init(&c->health);
}

void collect_free(struct collect *c)
{
	collect_reset(c);
	free(c->samples);
	free(c->counters);
	free(c->names);
	memset(c, 0, sizeof *c);
}

/* life_a / life_b / pre_eol of an identity or health line (docs/agent.md). */
static void take_health(struct collect *c, const struct proto_msg *m, const char *src)
{
	struct health_reading *h = &c->health;
	h->life_a = health_value(proto_get(m, "life_a"));
	h->life_b = health_value(proto_get(m, "life_b"));
	h->pre_eol = health_value(proto_get(m, "pre_eol"));
	lab_strlcpy(h->src, !src || strcmp(src, "none") == 0 ? "sysfs" : src, sizeof h->src);
	c->have_health = health_reading_any(h);
}

static char *own(struct collect *c, const char *s)
{
	if (!s || c->nstrs >= LAB_ARRAY_SIZE(c->strs))
		return NULL;
	return c->strs[c->nstrs++] = xstrdup(s);
}

static int geti(const struct proto_msg *m, const char *k)
{
	int64_t v;
	return proto_get_i64(m, k, &v) == 0 ? (int)v : -1;
}

static int64_t geti64(const struct proto_msg *m, const char *k)
{
	int64_t v;
	return proto_get_i64(m, k, &v) == 0 ? v : -1;
}

enum collect_note collect_msg(struct collect *c, const struct proto_msg *m, bool integrity_is_result)
{
	if (strcmp(m->kind, "sample") == 0) {
		double v;
		const char *metric = proto_get(m, "metric");
		const char *unit = proto_get(m, "unit");
		if (!metric || !unit || proto_get_double(m, "value", &v) != 0 || !isfinite(v)) {
			snprintf(c->error, sizeof c->error, "malformed sample line (seq %llu)",
				 (unsigned long long)m->seq);
			return COLLECT_TAKEN;
		}
		if (c->nsamples == c->capsamples) {
			c->capsamples = c->capsamples ? 2 * c->capsamples : 16;
			c->samples = xreallocarray(c->samples, c->capsamples, sizeof *c->samples);
		}
		c->samples[c->nsamples++] = (struct store_sample){name_of(c, metric), v, name_of(c, unit)};
		if (strcmp(metric, "wall_time") == 0)
			c->wall_time = v;
	} else if (strcmp(m->kind, "counter") == 0) {
		const char *name = proto_get(m, "name");
		int64_t v = geti64(m, "value");
		if (!name || v < 0)
			return COLLECT_TAKEN;
		put_counter(c, name, v);
	} else if (strcmp(m->kind, "latency") == 0) {
		collect_latency(c, m);
	} else if (strcmp(m->kind, "mode") == 0) {
		c->have_mode = true;
		c->fua = geti(m, "fua");
		c->write_cache = geti(m, "write_cache");
		c->cqe = geti(m, "cqe");
		const char *vm = proto_get(m, "mode");
		lab_strlcpy(c->vmode, vm ? vm : "unknown", sizeof c->vmode);
	} else if (strcmp(m->kind, "identity") == 0) {
		struct store_part *p = &c->part;
		c->have_identity = true;
		store_part_init(p);
		p->cid = own(c, proto_get(m, "cid"));
		p->manfid = own(c, proto_get(m, "manfid"));
		p->oemid = own(c, proto_get(m, "oemid"));
		p->name = own(c, proto_get(m, "name"));
		p->prv = own(c, proto_get(m, "prv"));
		p->serial = own(c, proto_get(m, "serial"));
		p->date = own(c, proto_get(m, "date"));
		p->fwrev = own(c, proto_get(m, "fwrev"));
		p->ext_csd_rev = geti(m, "ext_csd_rev");
		p->capacity_bytes = geti64(m, "capacity_bytes");
		p->cache_kib = geti64(m, "cache_kib");
		p->rel_wr_param = geti(m, "rel_wr_param");
		p->rel_sectors = geti(m, "rel_sectors");
		p->cmdq_support = geti(m, "cmdq_support");
		p->cmdq_depth = geti(m, "cmdq_depth");
		p->ext_csd_hex = own(c, proto_get(m, "ext_csd"));
		const char *k = proto_get(m, "kernel");
		lab_strlcpy(c->kernel, k ? k : "", sizeof c->kernel);
		take_health(c, m, proto_get(m, "ext_csd_src"));
	} else if (strcmp(m->kind, "health") == 0) {
		take_health(c, m, proto_get(m, "src"));
	} else if (strcmp(m->kind, "error") == 0) {
		const char *code = proto_get(m, "code");
		const char *msg = proto_get(m, "msg");
		/* Missing tracefs does not fail the workload: the mode proof decides. */
		if (code && strcmp(code, "no-tracefs") == 0) {
			c->no_tracefs = true; /* the controller decides (mode proof) */
			return COLLECT_NO_TRACEFS;
		}
		/* powerfail-check reports lost records as an error line too: that is
		 * the result being measured, taken from its counters, not a failure. */
		if (code && strcmp(code, "integrity") == 0 && integrity_is_result)
			return COLLECT_TAKEN;
		snprintf(c->error, sizeof c->error, "agent error %s: %s", code ? code : "?",
			 msg ? msg : "");
	}
	return COLLECT_TAKEN;
}

bool collect_is_counter(const struct proto_msg *m, const char *name, int64_t *v)
{
	if (strcmp(m->kind, "counter") != 0)
		return false;
	const char *n = proto_get(m, "name");
	if (!n || strcmp(n, name) != 0)
		return false;
	*v = geti64(m, "value");
	return *v >= 0;
}

int64_t collect_counter(const struct collect *c, const char *name)
{
	for (size_t i = 0; i < c->ncounters; i++)
		if (strcmp(c->counters[i].name, name) == 0)
			return c->counters[i].value;
	return -1;
}
