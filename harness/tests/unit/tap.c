#include "tap.h"
#include <stdarg.h>

int tap_n, tap_failed;
static int tap_skipped;

void tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
}

void tap_skip(const char *why)
{
	tap_skipped++;
	printf("# SKIP %s\n", why);
	fflush(stdout);
}

int tap_done(void)
{
	printf("1..%d\n%d passed, %d failed\n", tap_n, tap_n - tap_failed, tap_failed);
	if (tap_failed)
		return 1;
	if (tap_skipped) {
		printf("# %d part(s) skipped: reported as skipped (77), not passed\n", tap_skipped);
		return 77;
	}
	return 0;
}
