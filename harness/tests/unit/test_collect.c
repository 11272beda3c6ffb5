/* test_collect.c - decoding one agent invocation's messages. */
#include "collect.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static struct proto_msg pm;

static const struct proto_msg *msg(const char *kind, const char *const *kv)
{
	static uint64_t seq;
	char line[1024];
	int n = proto_format(line, sizeof line, ++seq, kind, kv);
	if (n < 0 || proto_parse(line, (size_t)n, &pm) != PROTO_OK)
		abort();
	return &pm;
}

static enum collect_note feed(struct collect *c, const char *kind, const char *const *kv)
{
	return collect_msg(c, msg(kind, kv), false);
}

int main(void)
{
	struct collect c;
	memset(&c, 0, sizeof c);
	collect_reset(&c);
	is_int(c.fua, -1, "no mode yet: fua -1");
	ok(c.wall_time < 0, "no wall_time yet");

	feed(&c, "sample", (const char *const[]){"metric", "seq_write", "value", "12.5", "unit", "MB/s", NULL});
	feed(&c, "sample", (const char *const[]){"metric", "wall_time", "value", "3.25", "unit", "s", NULL});
	is_int((long long)c.nsamples, 2, "two samples");
	is_str(c.samples[0].metric, "seq_write", "metric");
	is_near(c.samples[0].value, 12.5, 1e-9, "value");
	is_near(c.wall_time, 3.25, 1e-9, "wall_time kept apart too");

	feed(&c, "sample", (const char *const[]){"metric", "x", "unit", "s", NULL});
	ok(strstr(c.error, "malformed sample line") != NULL, "a sample without a value is an error");
	c.error[0] = '\0';

	/* a latency line becomes one counter per bucket (docs/agent.md "Request latency") */
	feed(&c, "latency", (const char *const[]){"workload", "androbench", "iter", "1", "op", "flush", "n", "7",
						  "buckets", "37:5 41:2", NULL});
	is_int(collect_counter(&c, "rq_flush_lat_b37"), 5, "latency: bucket 37");
	is_int(collect_counter(&c, "rq_flush_lat_b41"), 2, "latency: bucket 41");
	is_int((long long)c.ncounters, 2, "latency: only the non-empty buckets");
	ok(!c.error[0], "latency: no error");
	feed(&c, "latency", (const char *const[]){"op", "write", "buckets", "0:3 7:4 100:9", NULL});
	is_int(collect_counter(&c, "rq_write_lat_b0"), 3, "latency: bucket 0 named b0");
	is_int(collect_counter(&c, "rq_write_lat_b7"), 4, "latency: a one-digit bucket");
	is_int(collect_counter(&c, "rq_write_lat_b100"), 9, "latency: a three-digit bucket");
	is_int((long long)c.ncounters, 5, "latency: the write buckets added");
	ok(!c.error[0], "latency: still no error");
	feed(&c, "latency", (const char *const[]){"op", "read", "buckets", "1:1", NULL});
	ok(strstr(c.error, "malformed latency line") != NULL, "latency: an unknown op is an error");
	c.error[0] = '\0';
	feed(&c, "latency", (const char *const[]){"op", "write", "buckets", "3:1 999:1", NULL});
	ok(strstr(c.error, "malformed latency buckets") != NULL, "latency: a bucket past the top is an error");
	c.error[0] = '\0';
	collect_reset(&c);

	feed(&c, "counter", (const char *const[]){"name", "flushes", "value", "3", NULL});
	feed(&c, "counter", (const char *const[]){"name", "flushes", "value", "5", NULL});
	feed(&c, "counter", (const char *const[]){"name", "bad", "value", "-2", NULL});
	is_int((long long)c.ncounters, 1, "one value per counter name, invalid ones dropped");
	is_int(collect_counter(&c, "flushes"), 5, "a repeated counter replaces");
	is_int(collect_counter(&c, "nope"), -1, "missing counter: -1");

	int64_t v = 0;
	ok(collect_is_counter(msg("counter", (const char *const[]){"name", "acked", "value", "7", NULL}),
			      "acked", &v) && v == 7, "collect_is_counter: acked=7");
	ok(!collect_is_counter(msg("sample", (const char *const[]){"name", "acked", "value", "7", NULL}),
			       "acked", &v), "not a counter");

	feed(&c, "mode", (const char *const[]){"fua", "1", "write_cache", "1", "cqe", "0", "mode", "fua", NULL});
	ok(c.have_mode && c.fua == 1 && c.write_cache == 1 && c.cqe == 0, "mode values");
	is_str(c.vmode, "fua", "the agent's mode name");

	feed(&c, "identity", (const char *const[]){"cid", "150100", "name", "AJTD4R", "ext_csd_rev", "8",
						   "capacity_bytes", "15758000128", "kernel", "6.1.0", NULL});
	ok(c.have_identity, "identity");
	is_str(c.part.cid, "150100", "cid");
	is_str(c.part.name, "AJTD4R", "name");
	is_int(c.part.ext_csd_rev, 8, "ext_csd_rev");
	is_int(c.part.capacity_bytes, 15758000128LL, "capacity");
	ok(c.part.serial == NULL, "absent key: NULL");
	is_str(c.kernel, "6.1.0", "kernel");

	is_int(feed(&c, "error", (const char *const[]){"code", "no-tracefs", "msg", "x", NULL}),
	       COLLECT_NO_TRACEFS, "no-tracefs is a note");
	ok(c.error[0] == '\0', "and no error");
	ok(c.no_tracefs, "but remembered for the mode proof");
	is_int(collect_msg(&c, msg("error", (const char *const[]){"code", "integrity", "msg", "lost", NULL}),
			   true), COLLECT_TAKEN, "integrity as a result");
	ok(c.error[0] == '\0', "is no error");
	feed(&c, "error", (const char *const[]){"code", "integrity", "msg", "lost", NULL});
	is_str(c.error, "agent error integrity: lost", "otherwise it is");

	collect_reset(&c);
	ok(c.nsamples == 0 && c.ncounters == 0 && !c.have_mode && !c.have_identity && !c.error[0],
	   "reset empties");

	/* Names are kept once for the process: a second board's collect points
	 * at the same copies; a reset keeps the arrays' room. */
	struct collect d;
	memset(&d, 0, sizeof d);
	collect_reset(&d);
	const char *const s1[] = {"metric", "seq_write", "value", "1", "unit", "MB/s", NULL};
	feed(&c, "sample", s1);
	feed(&d, "sample", s1);
	ok(c.samples[0].metric == d.samples[0].metric && c.samples[0].unit == d.samples[0].unit,
	   "two collects share a name's one copy");
	size_t room = c.capsamples;
	collect_reset(&c);
	ok(c.capsamples == room && room > 0 && c.nsamples == 0, "a reset keeps the room");
	/* A DUT that invents names: past the pool's bound each is the collect's
	 * own copy, and a repeated one still replaces its value. */
	char name[32], val[8] = "1";
	for (int i = 0; i < 4200; i++) {
		snprintf(name, sizeof name, "invented_%d", i);
		feed(&d, "counter", (const char *const[]){"name", name, "value", val, NULL});
	}
	is_int((long long)d.ncounters, 4200, "4,200 invented counter names, each kept");
	ok(d.nnames > 0, "the ones past the pool's bound are owned (%zu)", d.nnames);
	feed(&d, "counter", (const char *const[]){"name", "invented_4199", "value", "9", NULL});
	feed(&d, "counter", (const char *const[]){"name", "invented_0", "value", "8", NULL});
	is_int((long long)d.ncounters, 4200, "repeats replace");
	is_int(collect_counter(&d, "invented_4199"), 9, "an owned name's value replaced");
	is_int(collect_counter(&d, "invented_0"), 8, "a pooled name's value replaced");
	feed(&d, "sample", (const char *const[]){"metric", "brand_new", "value", "2", "unit", "s", NULL});
	is_str(d.samples[d.nsamples - 1].metric, "brand_new", "a new metric once the pool is full");
	collect_reset(&d);
	is_int((long long)d.nnames, 0, "a reset frees the owned names");
	collect_free(&d);
	collect_free(&c);
	ok(!c.samples && !c.counters && !c.names, "collect_free releases the arrays");
	return tap_done();
}
