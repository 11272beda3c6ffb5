/* test_agent_latency.c - request latency (suites/agent/latency.c) through
 * parse-latency on a saved block_rq trace, and the lathist buckets. */
#include "test_agent.h"
#include "lathist.h"

#include <math.h>

static void ev(FILE *f, int issue, double t, const char *dev, const char *rwbs,
               unsigned long long sector, unsigned nr, int newfmt)
{
	/* 6.1: issue "dev rwbs bytes () sector + nr [comm]", complete "dev rwbs () sector + nr
	 * [err]"; 6.10+ adds "ioprio,..." after nr */
	fprintf(f, "  kworker/0:1H-80  [000] d..1. %.6f: block_rq_%s: %s %s ", t,
	        issue ? "issue" : "complete", dev, rwbs);
	if (issue)
		fprintf(f, "%u ", nr * 512);
	fprintf(f, "() %llu + %u %s[%s]\n", sector, nr, newfmt ? "none,0,0 " : "",
	        issue ? "kworker/0:1H" : "0");
}

static void test_parse_latency(void)
{
	char path[4200], arg[4300];
	struct run r;
	FILE *f;
	int i;

	tpath(path, sizeof(path), "lat.txt");
	f = fopen(path, "w");
	fputs("# tracer: nop\n#\n", f);
	ev(f, 1, 100.000100, "179,0", "W", 1000, 8, 0);
	ev(f, 1, 100.000200, "179,0", "R", 3000, 8, 0); /* a read: ignored */
	ev(f, 1, 100.000200, "8,0", "WS", 1000, 8, 0);  /* another disk: ignored */
	ev(f, 0, 100.000350, "179,0", "W", 1000, 8, 0); /* 250 us */
	ev(f, 0, 100.000900, "179,0", "R", 3000, 8, 0);
	ev(f, 0, 100.009000, "8,0", "WS", 1000, 8, 0);
	ev(f, 1, 100.001000, "179,0", "WFS", 2000, 8, 0); /* FUA write */
	ev(f, 1, 100.004000, "179,0", "FF", 0, 0, 0);     /* the flush machinery's flush */
	ev(f, 0, 100.003000, "179,0", "WFS", 2000, 8, 0); /* 2000 us */
	ev(f, 0, 100.005500, "179,0", "FF", 18446744073709551615ull, 0, 0); /* 1500 us; 6.1
	                                                                     * completes it at -1 */
	ev(f, 0, 100.005510, "179,0", "WS", 0, 0, 0);    /* the flushed write ends: not a request */
	ev(f, 1, 101.000000, "179,0", "WS", 4000, 8, 0); /* requeued: issued again */
	ev(f, 1, 101.000500, "179,0", "WS", 4000, 8, 0);
	ev(f, 0, 101.000600, "179,0", "WS", 4000, 8, 0);  /* 100 us from the last issue */
	ev(f, 1, 102.000000, "179,0", "WS", 5000, 8, 1);  /* a 6.12 line */
	ev(f, 0, 102.000500, "179,0", "WS", 5000, 8, 1);  /* 500 us */
	ev(f, 1, 102.100000, "179,0", "FWS", 6000, 8, 0); /* preflush + write: a write */
	ev(f, 0, 102.100700, "179,0", "FWS", 6000, 8, 0); /* 700 us */
	ev(f, 0, 102.200000, "179,0", "WS", 7000, 8, 0);  /* issued before tracing began */
	/* 400 writes of 1 ms, two queued at a time (CQE): past one 64 KiB read */
	for (i = 0; i < 400; i += 2) {
		double t = 200.0 + i * 0.01;

		ev(f, 1, t, "179,0", "WS", 10000u + (unsigned)i * 8, 8, 0);
		ev(f, 1, t + 0.0001, "179,0", "WS", 10008u + (unsigned)i * 8, 8, 0);
		ev(f, 0, t + 0.001, "179,0", "WS", 10000u + (unsigned)i * 8, 8, 0);
		ev(f, 0, t + 0.0011, "179,0", "WS", 10008u + (unsigned)i * 8, 8, 0);
	}
	ok(ftell(f) > 65536, "the trace is longer than one read of the parser");
	fclose(f);
	snprintf(arg, sizeof(arg), "file=%s", path);
	run_agent(&r, "parse-latency", arg, "dev=179:0", NULL);
	is_int(r.bad, 0, "parse-latency: protocol");
	is_int(r.status, 0, "parse-latency: exit 0");
	/* writes sorted: 100 250 500 700 1000 x400 2000 (405) */
	ok(sample(&r, "rq_write_lat_p50_us", 1, "us") == 1000, "write p50");
	ok(sample(&r, "rq_write_lat_p90_us", 1, "us") == 1000, "write p90");
	ok(sample(&r, "rq_write_lat_p99_us", 1, "us") == 1000, "write p99: rank 401 of 405");
	ok(sample(&r, "rq_write_lat_p999_us", 1, "us") == 2000,
	   "write p99.9: rank 405, the FUA write");
	ok(sample(&r, "rq_flush_lat_p50_us", 1, "us") == 1500, "flush p50");
	ok(sample(&r, "rq_flush_lat_p999_us", 1, "us") == 1500, "flush p99.9");
	is_int(counter(&r, "rq_lat_unmatched"), 1, "a completion without its issue");
	is_int(count_msg(&r, "latency"), 2, "one latency line per operation");
	{
		const struct proto_msg *w = find_msg(&r, "latency", "op", "write");
		const struct proto_msg *fl = find_msg(&r, "latency", "op", "flush");
		char want[128];
		const char *b;

		ok(w && proto_get(w, "n") && strcmp(proto_get(w, "n"), "405") == 0, "write n=405");
		snprintf(want, sizeof(want), "%u:1 %u:1 %u:1 %u:1 %u:400 %u:1", lathist_bucket(100),
		         lathist_bucket(250), lathist_bucket(500), lathist_bucket(700),
		         lathist_bucket(1000), lathist_bucket(2000));
		b = w ? proto_get(w, "buckets") : NULL;
		ok(b && strcmp(b, want) == 0, "write buckets '%s' (want '%s')", b ? b : "", want);
		snprintf(want, sizeof(want), "%u:1", lathist_bucket(1500));
		b = fl ? proto_get(fl, "buckets") : NULL;
		ok(b && strcmp(b, want) == 0, "flush buckets '%s'", b ? b : "");
	}
	run_free(&r);

	/* another disk: nothing of 179:0 */
	run_agent(&r, "parse-latency", arg, "dev=8:0", NULL);
	ok(sample(&r, "rq_write_lat_p50_us", 1, "us") == 8800, "8:0: its one write, 8.8 ms");
	is_int(count_msg(&r, "latency"), 1, "8:0: writes only");
	run_free(&r);
	run_agent(&r, "parse-latency", arg, NULL);
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "dev= is required");
	run_free(&r);
}

static void test_lathist(void)
{
	unsigned k, bad = 0;

	is_int((int)lathist_bucket(0), 0, "0 us: bucket 0");
	is_int((int)lathist_bucket(1), 0, "1 us: bucket 0");
	is_int((int)lathist_bucket(2), 4, "2 us: bucket 4");
	is_int((int)lathist_bucket(UINT64_MAX), LATHIST_BUCKETS - 1, "the top bucket is open");
	/* from 7 us the edges are integers: each lower edge lands in its own bucket,
	 * the value below it in the previous one, and edges grow by 2^(1/4) or so */
	for (k = 12; k + 1 < LATHIST_BUCKETS; k++) {
		uint64_t lo = (uint64_t)lathist_lo_us(k);
		double ratio = lathist_lo_us(k + 1) / lathist_lo_us(k);

		bad += lathist_bucket(lo) != k || lathist_bucket(lo - 1) != k - 1 || ratio < 1.14 ||
		       ratio > 1.26;
	}
	is_int((int)bad, 0, "bucket edges consistent and log-spaced");

	/* lathist_bucket_d (the simulator's) is lathist_bucket of the whole
	 * microseconds: at every edge, next to it, and at random doubles */
	static const double fixed[] = {0.0, -1.0, 0.5, 0.999, 1.0, 1.5, 2.0, 2.99, 3.0, 3.999999,
				       4.0, 4.0000001, 4.99, 5.0, 6.5, 7.99, 8.0, 4294967295.9,
				       4294967296.0, 1e15, 9.2e18};
	bad = 0;
	for (k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
		bad += lathist_bucket_d(fixed[k]) !=
		       lathist_bucket(fixed[k] > 0 ? (uint64_t)fixed[k] : 0);
	for (k = 1; k < LATHIST_BUCKETS; k++) {
		double lo = lathist_lo_us(k);
		bad += lathist_bucket_d(lo) != lathist_bucket((uint64_t)lo) ||
		       lathist_bucket_d(nextafter(lo, 0)) !=
			       lathist_bucket((uint64_t)nextafter(lo, 0)) ||
		       lathist_bucket_d(lo + 0.5) != lathist_bucket((uint64_t)(lo + 0.5));
	}
	uint64_t st = 88172645463325252u;
	for (k = 0; k < 1000000; k++) {
		st ^= st << 13;
		st ^= st >> 7;
		st ^= st << 17;
		/* 2^-10 .. 2^40 us, log-uniform */
		double x = ldexp(1.0 + (double)(st >> 11) * 0x1.0p-53, (int)(st % 51) - 10);
		bad += lathist_bucket_d(x) != lathist_bucket((uint64_t)x);
	}
	is_int((int)bad, 0, "the double bucket agrees with the integer one");
}

int main(void)
{
	agent_setup();
	test_parse_latency();
	test_lathist();
	agent_cleanup();
	return tap_done();
}
