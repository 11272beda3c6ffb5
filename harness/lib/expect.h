/*
 * expect.h - the expect engine: several patterns at once (literal or POSIX
 * extended regex), a timeout each, matching across read boundaries on a
 * bounded buffer.  ANSI escapes, NUL and CR are stripped before matching
 * (the transcript keeps the raw bytes).  Fed by a console's data callback.
 *
 * Usage: expect_feed() every received chunk; arm patterns with expect_add();
 * when a pattern matches, its callback runs with the match and the text
 * before it; all patterns of that "set" can be cleared with expect_clear().
 * Callbacks may add/clear patterns.  Timeouts are loop timers.
 *
 * Semantics (expect.c):
 *  - A pattern stays armed until expect_remove/expect_clear (use it as a one-shot by
 *    removing it, or the whole set with expect_clear, from the callback).  A match stops
 *    that pattern's timeout; a timeout fires once (m->timeout, m->before = buffered text)
 *    and leaves the pattern armed.
 *  - The buffer holds cleaned text since the last match (or flush); a match consumes it up
 *    to the match end before the callback runs.  Among several patterns the earliest
 *    match in the stream wins (ties: the pattern added first).  A newly added pattern
 *    also searches text already buffered.
 *  - groups[0] is the whole match, groups[1..9] the subexpressions.
 *  - Regexes use REG_EXTENDED|REG_NEWLINE: `^`/`$` match at line boundaries and at the
 *    buffer ends ("=> $" matches a prompt waiting for input).  A match never holds a
 *    newline, not even through a bracket range that includes one ([\003-9]), where
 *    plain regexec would match across lines.
 *  - Callbacks may call expect_feed (queued until the callback returns) and even
 *    expect_free (deferred).  l may be NULL (no timeouts), e.g. in fuzzing or benchmarks.
 */
#ifndef EMMCLAB_EXPECT_H
#define EMMCLAB_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loop.h"
#include "util.h"

struct expect;

enum expect_kind { EXPECT_LITERAL, EXPECT_REGEX };

struct expect_match {
	int id;               /* pattern id given to expect_add */
	const char *text;     /* the matched text (NUL-terminated, valid during the callback) */
	size_t len;
	const char *before;   /* cleaned text since the last match/clear up to the match */
	size_t before_len;
	const char *groups[10]; /* regex submatches (NUL-terminated copies), NULL if unused */
	bool timeout;          /* true: this is the pattern's timeout, text is NULL */
};

typedef void (*expect_cb)(struct expect *x, const struct expect_match *m, void *arg);

/* buf_max: cap of the retained text (default 64 KiB when 0); older text is dropped,
 * but a match spanning at most buf_max bytes is never missed. */
struct expect *expect_new(struct loop *l, size_t buf_max);
void expect_free(struct expect *x);
/* Add a pattern. timeout_ms 0 = none. Returns id >= 0 or -1 (bad regex, e set). */
int expect_add(struct expect *x, enum expect_kind kind, const char *pattern, uint64_t timeout_ms,
	       expect_cb cb, void *arg, struct lab_err *e);
void expect_remove(struct expect *x, int id);
void expect_clear(struct expect *x);           /* remove every pattern */
void expect_flush(struct expect *x);           /* drop buffered text */
void expect_feed(struct expect *x, const char *buf, size_t n);
/* Line mode: cb for every complete cleaned line (used for protocol lines);
 * NULL disables. Called before pattern matching. */
void expect_set_line_cb(struct expect *x, void (*cb)(struct expect *, const char *line,
						      size_t len, void *), void *arg);
size_t expect_buffered(const struct expect *x);
/* Whether the regex is found without regcomp/regexec (plain text with an optional
 * leading ^ and trailing $, like the shell prompt's); for tests. */
bool expect_regex_is_plain(const char *pattern);

#endif
