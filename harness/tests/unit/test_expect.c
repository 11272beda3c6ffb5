/* Unit tests of the expect engine: literals, regexes, cleaning, boundaries, timeouts. */
#include "expect.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
	int n;
	int ids[64];
	char text[64][256];
	char before[64][256];
	char g1[64][64];
	int timeouts;
};

static void cb(struct expect *x, const struct expect_match *m, void *arg)
{
	LAB_UNUSED(x);
	struct rec *r = arg;
	if (m->timeout) {
		r->timeouts++;
		return;
	}
	if (r->n >= 64)
		return;
	r->ids[r->n] = m->id;
	lab_strlcpy(r->text[r->n], m->text, sizeof r->text[0]);
	lab_strlcpy(r->before[r->n], m->before, sizeof r->before[0]);
	lab_strlcpy(r->g1[r->n], m->groups[1] ? m->groups[1] : "", sizeof r->g1[0]);
	r->n++;
}

static void feeds(struct expect *x, const char *s)
{
	expect_feed(x, s, strlen(s));
}

static void test_literal_across_reads(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	int id = expect_add(x, EXPECT_LITERAL, "Hit any key to stop autoboot", 0, cb, &r, NULL);
	ok(id >= 0, "literal added");
	feeds(x, "U-Boot 2023.01\nHit any ke");
	is_int(r.n, 0, "no match on a partial literal");
	feeds(x, "y to stop autoboot:  3");
	is_int(r.n, 1, "literal matched across two reads");
	is_str(r.text[0], "Hit any key to stop autoboot", "match text");
	is_str(r.before[0], "U-Boot 2023.01\n", "before text");
	is_int((long long)expect_buffered(x), 4, "buffer consumed up to the match end");
	/* split one byte at a time */
	feeds(x, "\n");
	const char *s = "Hit any key to stop autoboot";
	for (size_t i = 0; s[i]; i++)
		expect_feed(x, s + i, 1);
	is_int(r.n, 2, "literal fed byte by byte matched once");
	is_str(r.before[1], ":  3\n", "before of the second match");
	expect_free(x);
}

static void test_regex_and_cleaning(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	struct lab_err e = {0};
	int p = expect_add(x, EXPECT_REGEX, "=> $", 0, cb, &r, &e);
	ok(p >= 0, "regex prompt added");
	feeds(x, "Net:   eth0\r\n\x1b[1;3");
	feeds(x, "2m=> \x1b[0m");
	is_int(r.n, 1, "prompt behind a split CSI escape matched");
	is_str(r.text[0], "=> ", "escape and CR removed from the match");
	is_str(r.before[0], "Net:   eth0\n", "CR removed from before");
	expect_clear(x);
	int l = expect_add(x, EXPECT_LITERAL, "login: ", 0, cb, &r, &e);
	feeds(x, "\x1b]0;title\x07" "buildroot log\x1b]2;t\x1b\\" "in: ");
	is_int(r.n, 2, "OSC strings (BEL and ST terminated) removed");
	is_int(r.ids[1], l, "login matched");
	expect_feed(x, "a\0b\0c login: ", 13);
	is_int(r.n, 3, "NUL bytes removed");
	is_str(r.before[2], "abc ", "before without NULs");
	expect_free(x);
}

static void test_order_and_groups(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	int b = expect_add(x, EXPECT_LITERAL, "bbb", 0, cb, &r, NULL);
	int a = expect_add(x, EXPECT_REGEX, "a+", 0, cb, &r, NULL);
	int g = expect_add(x, EXPECT_REGEX, "@@emmclab 1 ([0-9]+) ", 0, cb, &r, NULL);
	feeds(x, "xx aaa bbb @@emmclab 1 42 hello\n");
	is_int(r.n, 3, "three matches from one chunk");
	is_int(r.ids[0], a, "earliest in the stream first");
	is_int(r.ids[1], b, "then the next");
	is_int(r.ids[2], g, "then the protocol line");
	is_str(r.text[0], "aaa", "regex match text");
	is_str(r.before[1], " ", "before is text since the previous match");
	is_str(r.g1[2], "42", "submatch 1");
	/* ^ anchors at line starts only */
	expect_clear(x);
	int anc = expect_add(x, EXPECT_REGEX, "^login", 0, cb, &r, NULL);
	feeds(x, "xlogin ");
	is_int(r.n, 3, "^ does not match mid-line");
	feeds(x, "\nlogin");
	is_int(r.n, 4, "^ matches after a newline");
	is_int(r.ids[3], anc, "anchored id");
	struct lab_err e = {0};
	int bad = expect_add(x, EXPECT_REGEX, "([0-9]", 0, cb, &r, &e);
	is_int(bad, -1, "bad regex refused");
	ok(strstr(e.msg, "bad regex") != NULL, "error says why: %s", e.msg);
	expect_free(x);
}

/* Regexes with a required literal are searched line by line: same results as regexec. */
static void test_prefilter(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	struct lab_err e = {0};
	int ext = expect_add(x, EXPECT_REGEX, "EXT4-fs \\(mmcblk([0-9]+)p[0-9]+\\): mounted", 0, cb,
			     &r, &e);
	int opt = expect_add(x, EXPECT_REGEX, "x?yz+q", 0, cb, &r, &e);
	int grp = expect_add(x, EXPECT_REGEX, "^(ab)?cd{2}$", 0, cb, &r, &e);
	ok(ext >= 0 && opt >= 0 && grp >= 0, "regexes added %s", e.msg);
	feeds(x, "EXT4-fs (mmcblk0p1): mou");
	feeds(x, "nted\nyzzzq\nxxcdd\n");
	feeds(x, "abcdd\ncdd");
	is_int(r.n, 4, "four matches");
	is_int(r.ids[0], ext, "escaped parentheses are literal");
	is_str(r.g1[0], "0", "group inside the match");
	is_int(r.ids[1], opt, "optional x, repeated z");
	is_str(r.text[1], "yzzzq", "longest match");
	is_int(r.ids[2], grp, "anchored with an optional group");
	is_str(r.text[2], "abcdd", "not the mid-line cdd");
	is_int(r.ids[3], grp, "$ matches at the buffer end");
	lab_err_clear(&e);
	ok(expect_add(x, EXPECT_REGEX, "a+*", 0, cb, &r, &e) < 0 && strstr(e.msg, "adjacent"),
	   "stacked quantifiers refused: %s", e.msg);
	expect_free(x);
}

static void test_bounded(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 1024);
	char junk[4096];
	memset(junk, 'j', sizeof junk);
	for (int i = 0; i < 256; i++)
		expect_feed(x, junk, sizeof junk);
	ok(expect_buffered(x) <= 1024, "buffer stays bounded (%zu)", expect_buffered(x));
	/* a match of exactly buf_max bytes, fed in two halves, is still found */
	char pat[1025];
	for (int i = 0; i < 1024; i++)
		pat[i] = (char)('a' + i % 26);
	pat[1024] = '\0';
	int id = expect_add(x, EXPECT_LITERAL, pat, 0, cb, &r, NULL);
	expect_feed(x, pat, 600);
	expect_feed(x, pat + 600, 424);
	is_int(r.n, 1, "match as long as the buffer cap found across reads");
	is_int(r.ids[0], id, "right id");
	/* one huge feed with the match in the middle */
	char *big = xmalloc(1 << 20);
	memset(big, 'q', 1 << 20);
	memcpy(big + 500000, "MARKER", 6);
	expect_add(x, EXPECT_LITERAL, "MARKER", 0, cb, &r, NULL);
	expect_feed(x, big, 1 << 20);
	is_int(r.n, 2, "match inside a 1 MiB feed found");
	ok(expect_buffered(x) <= 1024, "still bounded");
	free(big);
	expect_free(x);
}

struct lines {
	int n;
	char l[8][64];
};

static void line_cb(struct expect *x, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(x);
	struct lines *L = arg;
	if (L->n < 8 && strlen(line) == len)
		lab_strlcpy(L->l[L->n++], line, sizeof L->l[0]);
}

static void test_lines(void)
{
	struct lines L = {0};
	struct expect *x = expect_new(NULL, 0);
	expect_set_line_cb(x, line_cb, &L);
	feeds(x, "one\r\ntw");
	feeds(x, "o\x1b[K\r\nthree");
	is_int(L.n, 2, "two complete lines");
	is_str(L.l[0], "one", "line 1 cleaned");
	is_str(L.l[1], "two", "line 2 cleaned, split across reads");
	expect_free(x);
}

/* callbacks that change the engine */
struct reent {
	struct expect *x;
	struct rec r;
	int stage;
};

static void cb_reent(struct expect *x, const struct expect_match *m, void *arg)
{
	struct reent *s = arg;
	cb(x, m, &s->r);
	if (s->stage == 0) {
		/* first prompt: clear, arm the next, inject text */
		expect_clear(x);
		expect_add(x, EXPECT_LITERAL, "second", 0, cb_reent, s, NULL);
		s->stage = 1;
		expect_feed(x, "injected second", 15);
	} else if (s->stage == 1) {
		s->stage = 2;
		expect_free(x); /* free from inside a callback: deferred */
	}
}

static void test_reentrancy(void)
{
	struct reent s = {0};
	s.x = expect_new(NULL, 0);
	expect_add(s.x, EXPECT_LITERAL, "first", 0, cb_reent, &s, NULL);
	expect_add(s.x, EXPECT_LITERAL, "other", 0, cb_reent, &s, NULL);
	feeds(s.x, "first other");
	is_int(s.r.n, 2, "cleared pattern did not fire, injected text matched");
	is_str(s.r.text[1], "second", "pattern added from a callback matched injected text");
	is_int(s.stage, 2, "freed from inside its callback without crashing");
}

static void test_timeouts(void)
{
	struct loop *l = loop_new();
	struct rec r = {0};
	struct expect *x = expect_new(l, 0);
	int t = expect_add(x, EXPECT_LITERAL, "never", 50, cb, &r, NULL);
	int m = expect_add(x, EXPECT_LITERAL, "soon", 50, cb, &r, NULL);
	ok(t >= 0 && m >= 0, "patterns with timeouts");
	feeds(x, "it came soon");
	uint64_t t0 = lab_now_ms();
	while (lab_now_ms() - t0 < 200)
		loop_run_once(l, 20);
	is_int(r.n, 1, "one match");
	is_int(r.timeouts, 1, "only the unmatched pattern timed out");
	expect_free(x);
	loop_free(l);
}

/* A line callback that turns line mode off while an overlong line (no
 * newline within the buffer cap) is being cut: no call through NULL. */
static int off_calls;
static void line_off_cb(struct expect *x, const char *line, size_t len, void *arg)
{
	LAB_UNUSED(line);
	LAB_UNUSED(len);
	LAB_UNUSED(arg);
	off_calls++;
	expect_set_line_cb(x, NULL, NULL);
}

static void test_line_cb_off_on_overlong(void)
{
	struct expect *x = expect_new(NULL, 0);
	expect_set_line_cb(x, line_off_cb, NULL);
	size_t n = 192 * 1024;
	char *big = xmalloc(n);
	memset(big, 'a', n);
	expect_feed(x, big, n);
	expect_feed(x, "tail\n", 5);
	ok(off_calls == 1, "line mode switched off from its own callback on an overlong line (%d calls)",
	   off_calls);
	free(big);
	expect_free(x);
}

/* Compiled regexes are shared between engines and kept after removal (expect.c's
 * cache): every user still matches on its own, evicted ones come back compiled
 * anew, a bad regex is refused every time. */
static void test_shared_regexes(void)
{
	struct rec r1 = {0}, r2 = {0};
	struct expect *x1 = expect_new(NULL, 0), *x2 = expect_new(NULL, 0);
	int a = expect_add(x1, EXPECT_REGEX, "([a-z]+)=([0-9]+)$", 0, cb, &r1, NULL);
	int b = expect_add(x2, EXPECT_REGEX, "([a-z]+)=([0-9]+)$", 0, cb, &r2, NULL);
	ok(a >= 0 && b >= 0, "the same regex in two engines");
	feeds(x1, "x\nfoo=12\n");
	feeds(x2, "bar=7\n");
	is_int(r1.n, 1, "engine 1 matched");
	is_str(r1.g1[0], "foo", "engine 1's group");
	is_int(r2.n, 1, "engine 2 matched");
	is_str(r2.g1[0], "bar", "engine 2's group");
	expect_remove(x1, a);
	feeds(x1, "baz=1\n");
	feeds(x2, "qux=2\n");
	is_int(r1.n, 1, "removed from engine 1: no match there");
	is_int(r2.n, 2, "engine 2 still matches");
	is_str(r2.g1[1], "qux", "engine 2's second group");
	/* more distinct regexes than are kept idle: each matches, then the first again */
	struct rec r3 = {0};
	int ok_all = 1;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 100; i++) {
			char re[64], line[64];
			snprintf(re, sizeof re, "^tok%d-([0-9]+)$", i);
			snprintf(line, sizeof line, "tok%d-%d\n", i, round);
			int before = r3.n;
			int id = expect_add(x1, EXPECT_REGEX, re, 0, cb, &r3, NULL);
			feeds(x1, line);
			if (id < 0 || r3.n != before + 1 || r3.n > 64)
				ok_all = 0;
			expect_remove(x1, id);
			if (r3.n == 64)
				r3.n = 0;
		}
	}
	ok(ok_all, "200 add/match/remove rounds over 100 distinct regexes (evicted ones recompiled)");
	/* one regex taken back from the idle list again and again between others
	 * that push older idle ones out (the idle list's unlink and eviction) */
	struct rec r4 = {0};
	ok_all = 1;
	for (int i = 0; i < 300; i++) {
		char re[64], line[64];
		bool hot = i % 3 == 0;
		if (hot)
			snprintf(re, sizeof re, "^hot-([0-9]+)$");
		else
			snprintf(re, sizeof re, "^cold%d-([0-9]+)$", i);
		snprintf(line, sizeof line, hot ? "hot-%d\n" : "cold%d-1\n", i);
		int before = r4.n;
		int id = expect_add(x1, EXPECT_REGEX, re, 0, cb, &r4, NULL);
		feeds(x1, line);
		if (id < 0 || r4.n != before + 1)
			ok_all = 0;
		expect_remove(x1, id);
		if (r4.n == 64)
			r4.n = 0;
	}
	ok(ok_all, "a regex reused from the idle list between 200 others: every add matched");
	struct lab_err e = {0};
	is_int(expect_add(x1, EXPECT_REGEX, "a(b", 0, cb, &r1, &e), -1, "a bad regex is refused");
	ok(strstr(e.msg, "bad regex") != NULL, "with a message: %s", e.msg);
	struct lab_err e2 = {0};
	is_int(expect_add(x2, EXPECT_REGEX, "a(b", 0, cb, &r2, &e2), -1, "and refused again");
	expect_free(x1);
	expect_free(x2);
}

/* The match buffer grows on demand: a long match fed in pieces into a default
 * engine is found, and the buffer still respects its cap. */
static void test_buffer_growth(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	size_t n = 40000;
	char *lit = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		lit[i] = (char)('A' + i % 23);
	lit[n] = '\0';
	int id = expect_add(x, EXPECT_LITERAL, lit, 0, cb, &r, NULL);
	feeds(x, "noise before\n");
	for (size_t off = 0; off < n; off += 4000)
		expect_feed(x, lit + off, 4000);
	is_int(r.n, 1, "a 40000-byte literal fed in ten pieces matched");
	is_int(r.ids[0], id, "right id");
	is_str(r.before[0], "noise before\n", "before text");
	char *junk = xmalloc(200000);
	memset(junk, 'z', 200000);
	expect_feed(x, junk, 200000);
	ok(expect_buffered(x) <= 64 * 1024, "unmatched text still capped (%zu)", expect_buffered(x));
	free(junk);
	free(lit);
	expect_free(x);
}

/* Alternations: a literal per alternative skips regexec where none occurs
 * (required_any); the matches must be what regexec alone finds, also with the
 * literal split across reads, and shapes without such a set must still match. */
static void test_alternation_prefilter(void)
{
	struct rec r = {0};
	struct expect *x = expect_new(NULL, 0);
	struct lab_err e = {0};
	int ks = expect_add(x, EXPECT_REGEX, "Starting kernel|Booting Linux|Linux version [0-9]", 0, cb,
			    &r, &e);
	int er = expect_add(x, EXPECT_REGEX,
			    "[^\n]*(TFTP error: |Retry count exceeded|\\*\\*\\* ERROR: `)[^\n]*\n", 0, cb, &r,
			    &e);
	ok(ks >= 0 && er >= 0, "alternation regexes added %s", e.msg);
	feeds(x, "U-Boot 2023.01\n=> dhcp\nBOOTP broadcast 1\nDHCP client bound\n");
	for (int i = 0; i < 50; i++)
		feeds(x, "Loading: ################# 1.2 MiB/s\n");
	is_int(r.n, 0, "no alternative in the text: no match");
	feeds(x, "=> tftpboot 0x1000 k\nTFTP er");
	is_int(r.n, 0, "half the literal: no match yet");
	feeds(x, "ror: 'File not found' (1)\n");
	is_int(r.n, 1, "the literal completed across reads: matched");
	is_int(r.ids[0], er, "the error line");
	is_str(r.text[0], "TFTP error: 'File not found' (1)\n", "the whole error line");
	feeds(x, "*** ERROR: `serverip' not set\n");
	is_int(r.n, 2, "escaped stars in an alternative");
	is_str(r.text[1], "*** ERROR: `serverip' not set\n", "that line");
	feeds(x, "Booting Li");
	feeds(x, "nux on physical CPU 0x0\n");
	is_int(r.n, 3, "a top-level alternative across reads");
	is_int(r.ids[2], ks, "the kernel start");
	is_str(r.text[2], "Booting Linux", "its text");
	feeds(x, "[    0.000000] Linux version 6.1.0\n");
	is_int(r.n, 4, "the alternative with a bracket after its literal");
	is_str(r.text[3], "Linux version 6", "its text");
	expect_free(x);

	/* shapes that give no set: an optional group, a one-character alternative,
	 * two groups of alternatives, nested ones */
	struct rec q = {0};
	x = expect_new(NULL, 0);
	int o = expect_add(x, EXPECT_REGEX, "(ab|cd)?xy", 0, cb, &q, &e);
	int one = expect_add(x, EXPECT_REGEX, "(fo|b)r!", 0, cb, &q, &e);
	int two = expect_add(x, EXPECT_REGEX, "(k|l)(m|n)#", 0, cb, &q, &e);
	int nest = expect_add(x, EXPECT_REGEX, "<(p(q|r)|st)>", 0, cb, &q, &e);
	ok(o >= 0 && one >= 0 && two >= 0 && nest >= 0, "fallback shapes added %s", e.msg);
	feeds(x, "..xy..br!..ln#..<pr>..<st>\n");
	is_int(q.n, 5, "each fallback shape matches");
	is_int(q.ids[0], o, "optional group: the bare xy");
	is_int(q.ids[1], one, "one-character alternative");
	is_int(q.ids[2], two, "two groups");
	is_int(q.ids[3], nest, "nested alternation");
	is_str(q.text[4], "<st>", "and its other alternative");
	expect_free(x);
}

/* Plain regexes (text, optional ^ and $) are found without regexec: they must match
 * exactly where glibc's regexec matches the same regex made non-plain by a group
 * around its text, in random texts fed in random pieces. */
static unsigned plain_rng = 12345;
static unsigned plain_rand(void)
{
	plain_rng = plain_rng * 1103515245u + 12345u;
	return (plain_rng >> 16) & 0x7fff;
}

static void test_plain_regexes(void)
{
	ok(expect_regex_is_plain("EMMCLAB-0c05f8\\$ $"), "the shell prompt regex is plain");
	ok(expect_regex_is_plain("^=> $"), "anchors both sides");
	ok(expect_regex_is_plain("a\\.b\\[c\\]\\\\"), "escaped specials are plain");
	const char *not_plain[] = {"a.b", "ab*", "a|b", "(ab)", "[ab]", "a$b", "a^b", "\\w", "a\\<",
				   "\\1", "^", "^$", "$", "a\nb", "caf\xc3\xa9", "a{2}", "a+", "a?"};
	int refused = 0;
	for (size_t i = 0; i < sizeof not_plain / sizeof *not_plain; i++)
		refused += !expect_regex_is_plain(not_plain[i]);
	is_int(refused, (long long)(sizeof not_plain / sizeof *not_plain),
	       "specials, GNU escapes, empty text, newlines and non-ASCII are compiled");

	const char alpha[] = "ab$. \n";
	const char *atoms[] = {"a", "b", "\\$", "\\.", " "};
	int mismatches = 0, matches = 0, plain = 0;
	for (int round = 0; round < 3000; round++) {
		char re[64] = "", grouped[72] = "", lit[32] = "";
		bool bol = plain_rand() % 2, eol = plain_rand() % 2;
		int natoms = 1 + (int)(plain_rand() % 3);
		for (int i = 0; i < natoms; i++)
			strcat(lit, atoms[plain_rand() % 5]);
		snprintf(re, sizeof re, "%s%s%s", bol ? "^" : "", lit, eol ? "$" : "");
		snprintf(grouped, sizeof grouped, "%s(%s)%s", bol ? "^" : "", lit, eol ? "$" : "");
		plain += expect_regex_is_plain(re) && !expect_regex_is_plain(grouped);
		char text[200];
		size_t tn = 20 + plain_rand() % 150;
		for (size_t i = 0; i < tn; i++)
			text[i] = alpha[plain_rand() % (sizeof alpha - 1)];
		struct rec *r[2];
		struct expect *x[2];
		const char *pats[2] = {re, grouped};
		bool pre = plain_rand() % 4 == 0; /* a line before the pattern is added */
		for (int k = 0; k < 2; k++) {
			r[k] = calloc(1, sizeof *r[k]);
			x[k] = expect_new(NULL, 0);
			if (pre)
				feeds(x[k], "x\n");
			expect_add(x[k], EXPECT_REGEX, pats[k], 0, cb, r[k], NULL);
		}
		for (size_t off = 0; off < tn;) {
			size_t piece = 1 + plain_rand() % 12;
			if (piece > tn - off)
				piece = tn - off;
			for (int k = 0; k < 2; k++)
				expect_feed(x[k], text + off, piece);
			off += piece;
		}
		bool same = r[0]->n == r[1]->n;
		for (int i = 0; same && i < r[0]->n; i++)
			same = strcmp(r[0]->text[i], r[1]->text[i]) == 0 &&
			       strcmp(r[0]->before[i], r[1]->before[i]) == 0;
		if (!same && mismatches++ < 3)
			fprintf(stderr, "# plain '%s' matched %d times, regexec %d times\n", re, r[0]->n,
				r[1]->n);
		matches += r[0]->n;
		for (int k = 0; k < 2; k++) {
			expect_free(x[k]);
			free(r[k]);
		}
	}
	is_int(plain, 3000, "every generated regex plain, its grouped twin compiled");
	ok(mismatches == 0, "plain regexes match where regexec does (%d mismatches, %d matches)",
	   mismatches, matches);
	ok(matches > 3000, "and they matched often (%d)", matches);
}

int main(void)
{
	test_literal_across_reads();
	test_regex_and_cleaning();
	test_order_and_groups();
	test_prefilter();
	test_alternation_prefilter();
	test_plain_regexes();
	test_bounded();
	test_lines();
	test_reentrancy();
	test_timeouts();
	test_line_cb_off_on_overlong();
	test_shared_regexes();
	test_buffer_growth();
	return tap_done();
}
