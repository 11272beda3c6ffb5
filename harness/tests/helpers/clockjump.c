/*
 * clockjump.c - LD_PRELOAD shim for the fault campaign (fault_campaign.sh):
 * the wall clock jumps by EMMCLAB_CLOCKJUMP_BY seconds (negative: backwards)
 * EMMCLAB_CLOCKJUMP_AFTER seconds after the program started, as an NTP step
 * or an operator's `date -s` would.  CLOCK_REALTIME (and its coarse variant),
 * gettimeofday() and time() jump; CLOCK_MONOTONIC / BOOTTIME do not, so a
 * controller whose timers run on the monotonic clock must not notice.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime(void)
{
	static clock_gettime_fn fn;
	if (!fn)
		fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
	return fn;
}

/* Offset in seconds to add to the wall clock now (0 before the jump). */
static int64_t jump_offset(void)
{
	static int init;
	static int64_t start, after, by;
	struct timespec m;
	if (!init) {
		const char *a = getenv("EMMCLAB_CLOCKJUMP_AFTER"),
		           *b = getenv("EMMCLAB_CLOCKJUMP_BY");
		after = a ? strtoll(a, NULL, 10) : 0;
		by = b ? strtoll(b, NULL, 10) : 0;
		real_clock_gettime()(CLOCK_MONOTONIC, &m);
		start = m.tv_sec;
		init = 1;
	}
	real_clock_gettime()(CLOCK_MONOTONIC, &m);
	return m.tv_sec - start >= after ? by : 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts);
int clock_gettime(clockid_t clk, struct timespec *ts)
{
	int rc = real_clock_gettime()(clk, ts);
	if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		ts->tv_sec += jump_offset();
	return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz);
int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	(void)tz;
	struct timespec ts;
	int rc = clock_gettime(CLOCK_REALTIME, &ts);
	if (rc == 0) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return rc;
}

time_t time(time_t *t);
time_t time(time_t *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
