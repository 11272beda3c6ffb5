/* tap.h - a tiny TAP test harness for unit tests (run by ctest). */
#ifndef EMMCLAB_TAP_H
#define EMMCLAB_TAP_H

#include <stdio.h>
#include <string.h>

extern int tap_n, tap_failed;
void tap_ok(int cond, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A part that cannot run here (a missing program, no root): prints "# SKIP why"
 * and makes tap_done() return 77, ctest's skip code, unless something failed. */
void tap_skip(const char *why);
int tap_done(void); /* prints the plan and "N passed, N failed"; returns exit code */

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(a, b, name) do { long long _a = (a), _b = (b); \
	tap_ok(_a == _b, __FILE__, __LINE__, "%s (got %lld, want %lld)", name, _a, _b); } while (0)
#define is_str(a, b, name) do { const char *_a = (a), *_b = (b); \
	tap_ok(_a && _b && strcmp(_a, _b) == 0, __FILE__, __LINE__, "%s (got '%s', want '%s')", name, \
	       _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
#define is_near(a, b, tol, name) do { double _a = (a), _b = (b); \
	tap_ok(_a - _b <= (tol) && _b - _a <= (tol), __FILE__, __LINE__, "%s (got %.10g, want %.10g)", \
	       name, _a, _b); } while (0)

#endif
