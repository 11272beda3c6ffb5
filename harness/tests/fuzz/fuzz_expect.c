/*
 * fuzz_expect.c - libFuzzer target for the expect engine.
 *
 * Input: first line = a regex (<= 64 bytes), rest = console bytes.
 *  1. Robustness: the bytes are fed in pseudo-random pieces (escapes, CR, NUL, long lines
 *     and all) to an engine with a small buffer and a mixed pattern set; the buffer must
 *     stay within its cap.
 *  2. Literals are chunking-independent: the same stream fed whole and in pieces must
 *     give the same sequence of literal matches.
 *  3. Differential regex check: with the bytes stripped of what the cleaner removes,
 *     the engine's successive matches of the fuzzed regex (with its required-literal
 *     prefilter and line-bounded search) equal plain regexec over the whole text, up
 *     to a regexec match that holds a newline (a bracket range such as [\003-9]),
 *     which the line-bounded engine never makes.
 */
#include "expect.h"

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXM 64

struct log {
	int n;
	int id[MAXM];
	size_t at[MAXM]; /* stream offset of the match start (bytes consumed before it) */
	size_t len[MAXM];
	size_t consumed;
};

static void on_match(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct log *g = arg;
	if (g->n < MAXM) {
		g->id[g->n] = m->id;
		g->at[g->n] = g->consumed + m->before_len;
		g->len[g->n] = m->len;
		g->n++;
	}
	g->consumed += m->before_len + (m->len ? m->len : 1);
}

static uint32_t next(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void feed_pieces(struct expect *x, const uint8_t *d, size_t n, uint32_t seed)
{
	while (n) {
		size_t k = 1 + next(&seed) % 97;
		if (k > n)
			k = n;
		expect_feed(x, (const char *)d, k);
		d += k;
		n -= k;
	}
}

static const char *const lits[] = {"login: ", "=> ", "@@emmclab 1 ", "\n#", "aa"};

static void literal_run(const uint8_t *d, size_t n, bool pieces, struct log *g)
{
	struct expect *x = expect_new(NULL, 0);
	for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++)
		expect_add(x, EXPECT_LITERAL, lits[i], 0, on_match, g, NULL);
	if (pieces)
		feed_pieces(x, d, n, (uint32_t)n);
	else
		expect_feed(x, (const char *)d, n);
	expect_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size < 65 ? size : 65);
	if (!nl)
		return 0;
	char re[66];
	size_t rl = (size_t)(nl - data);
	memcpy(re, data, rl);
	re[rl] = '\0';
	if (rl == 0 || strlen(re) != rl)
		return 0; /* empty (refused by expect_add) or NUL inside the pattern */
	const uint8_t *d = nl + 1;
	size_t n = size - rl - 1;

	/* 1. robustness with a tiny buffer */
	struct log g0 = {0};
	struct expect *x = expect_new(NULL, 256);
	expect_add(x, EXPECT_REGEX, re, 0, on_match, &g0, NULL);
	expect_add(x, EXPECT_REGEX, "[#$] *$", 0, on_match, &g0, NULL);
	expect_add(x, EXPECT_REGEX, "mmcblk[0-9]+: mmc[0-9]+:[0-9a-f]+", 0, on_match, &g0, NULL);
	expect_add(x, EXPECT_LITERAL, "login:", 0, on_match, &g0, NULL);
	feed_pieces(x, d, n, 7);
	if (expect_buffered(x) > 256)
		abort();
	expect_free(x);

	/* 2. literals do not depend on chunking */
	struct log a = {0}, b = {0};
	literal_run(d, n, false, &a);
	literal_run(d, n, true, &b);
	if (a.n != b.n)
		abort();
	for (int i = 0; i < a.n; i++)
		if (a.id[i] != b.id[i] || a.at[i] != b.at[i])
			abort();

	/* 3. differential: engine vs. plain regexec on clean text (patterns the engine
	 * refuses, e.g. stacked quantifiers, are skipped) */
	struct log e = {0};
	x = expect_new(NULL, n + 1);
	if (expect_add(x, EXPECT_REGEX, re, 0, on_match, &e, NULL) < 0) {
		expect_free(x);
		return 0;
	}
	regex_t r;
	if (regcomp(&r, re, REG_EXTENDED | REG_NEWLINE) != 0)
		abort(); /* the engine accepted it */
	char *t = malloc(n + 1);
	size_t tl = 0;
	for (size_t i = 0; i < n; i++)
		if (d[i] != 0 && d[i] != '\r' && d[i] != 0x1b)
			t[tl++] = (char)d[i];
	t[tl] = '\0';
	expect_feed(x, t, tl);
	expect_free(x);
	size_t pos = 0;
	int k = 0;
	bool newline = false;
	while (k < MAXM && pos <= tl) {
		regmatch_t m[1];
		int fl = pos > 0 && t[pos - 1] != '\n' ? REG_NOTBOL : 0;
		if (regexec(&r, t + pos, 1, m, fl) != 0)
			break;
		size_t so = pos + (size_t)m[0].rm_so, eo = pos + (size_t)m[0].rm_eo;
		if (so == eo && so >= tl)
			break; /* the engine waits for more text after an empty match at the end */
		if (memchr(t + so, '\n', eo - so)) {
			/* a bracket range holding '\n' ([\003-9]): regexec matches across
			 * lines there, the engine never does (expect.h); not comparable */
			newline = true;
			break;
		}
		if (k >= e.n || e.at[k] != so || e.len[k] != eo - so)
			abort();
		k++;
		pos = eo > so ? eo : so + 1;
	}
	if (!newline && k < MAXM && k != e.n)
		abort();
	regfree(&r);
	free(t);
	return 0;
}
