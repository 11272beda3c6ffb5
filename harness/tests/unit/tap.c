#include "tap.h"
#include <stdarg.h>

int tap_n, tap_failed;

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

int tap_done(void)
{
	printf("1..%d\n%d passed, %d failed\n", tap_n, tap_n - tap_failed, tap_failed);
	return tap_failed ? 1 : 0;
}
