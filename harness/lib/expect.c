/*
 * expect.c - see expect.h.
 *
 * Text flows: raw chunk -> cleaner (state machine: CSI/OSC/DCS escapes, NUL,
 * CR dropped; survives escapes split across reads) -> line callback and the
 * match buffer.  The match buffer holds cleaned text since the last match
 * (or flush), capped at buf_max: storage is 2*buf_max so a new segment of up
 * to buf_max bytes is matched together with the buf_max bytes before it,
 * which is why a match of at most buf_max bytes is never missed.
 *
 * Every pattern remembers how far it has already searched (scan_from), so a
 * growing buffer is never rescanned from the start: literals resume len-1
 * bytes before the old end, line-local regexes (most: REG_NEWLINE keeps `.`
 * and [^x] off newlines) resume at the start of the last incomplete line.
 * Only a regex that can match a newline ([[:space:]], a literal newline...)
 * rescans the (bounded) buffer.
 *
 * Among several patterns the earliest match in the stream wins (ties: the
 * pattern added first); after its callback the buffer is consumed up to the
 * match end and matching goes on, so one chunk can fire several patterns.
 */
#include "expect.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_DEFAULT_MAX (64 * 1024)
#define EXPECT_LINE_MAX (64 * 1024)
#define EXPECT_PENDING_MAX (1024 * 1024)
/* The match buffer starts small and grows up to 2*buf_max+1 as text waits for
 * a match, and goes back to this size once consumed: a lab of a thousand
 * consoles keeps kilobytes per console resident, not the full 128 KiB cap. */
#define EXPECT_BUF_MIN 2048
#define EXPECT_BUF_KEEP (16 * 1024) /* larger idle storage (buffers) is given back */
#define CSI_MAX 64      /* longer "CSI" sequences are garbage: give up on them */
#define OSC_MAX 4096

enum clean_state { CL_NORMAL, CL_ESC, CL_ESC_INTER, CL_CSI, CL_STR, CL_STR_ESC };

/* A literal with its rarest byte: memchr on that byte, then memcmp, beats memmem on
 * console text (most needles hold an upper-case letter or punctuation like '@' or '='). */
struct needle {
	const char *s;
	size_t n;
	size_t k; /* offset of the rare byte */
};

struct pattern {
	struct expect *x;
	int id;
	enum expect_kind kind;
	char *lit;
	size_t litlen;
	struct needle litn;
	struct re_shared *rs; /* regex: compiled once per process (re_acquire) */
	bool multiline;   /* regex may match across '\n': rescan whole buffer */
	const char *req;  /* regex: a literal every match contains (prefilter), or NULL */
	size_t reqlen;
	struct needle reqn;
	size_t scan_from; /* buffer offset from which a match may still be found */
	expect_cb cb;
	void *arg;
	struct loop_timer timer;
	bool dead;
	/* result of the last search within one run_matches pass: text only shrinks from
	 * the front during a pass, so a match at or after the cut stays the earliest */
	enum { C_UNKNOWN, C_MATCH, C_NONE } cache;
	size_t cso, ceo;
	regmatch_t crm[10];
};

struct expect {
	struct loop *loop;
	size_t buf_max;
	char *buf;        /* cleaned text, NUL-terminated, storage up to 2*buf_max+1 */
	size_t len;
	size_t cap;       /* storage of buf: grown on demand, given back when idle */
	bool bol;         /* buf[0] is at the start of a line */
	struct pattern **pats;
	size_t npats, cappats;
	int next_id;
	enum clean_state cst;
	size_t cst_len;
	/* line callback */
	void (*line_cb)(struct expect *, const char *, size_t, void *);
	void *line_arg;
	struct lab_buf line;
	/* re-entrancy: feeds from callbacks are queued, frees deferred */
	int depth;
	bool dead;
	struct lab_buf pending;
	char *scratch;   /* cleaned copy of one input piece */
	size_t scratch_cap;
	struct lab_buf mtext, mbefore;
};

/* ---- compiled regexes, shared ----
 * Every board arms the same few regexes again on every boot and command (the
 * shell prompt, login, "Starting kernel"): compiling them each time, and
 * rebuilding glibc's lazily built DFA tables, was a quarter of the
 * controller's instructions per iteration.  A compiled regex is shared by
 * every pattern with the same source (regexec only reads it; the DFA tables
 * it adds are the same for every user) and kept, once unused, among the
 * RE_IDLE_MAX most recently released.  Loop thread only, like the engines. */
#define RE_IDLE_MAX 64

struct re_shared {
	char *src;
	regex_t re;       /* not compiled when plain */
	bool multiline;
	char *req;
	/* plain: the regex is req itself, anchored at a line start (abol) and/or a
	 * line end (aeol): found with the needle, no regcomp, no regexec, no DFA */
	bool plain, abol, aeol;
	/* alternation: one literal per alternative, one of which every match
	 * contains (required_any); nany == 0 when there is no such set */
	char **any;
	struct needle *anyn;
	size_t nany;
	unsigned refs;
	struct re_shared *iprev, *inext; /* idle list (refs 0), oldest first */
	struct re_shared *next;
};

/* The idle list is what makes eviction O(1): a lab of 1,024 boards holds
 * thousands of regexes in use (per-board markers among them), and searching
 * them all for the oldest idle one on every release was 2 % of the
 * controller's CPU. */
static struct {
	struct re_shared **b;
	size_t nb, n, nidle;
	struct re_shared *ihead, *itail;
} re_cache;

static void idle_remove(struct re_shared *r)
{
	*(r->iprev ? &r->iprev->inext : &re_cache.ihead) = r->inext;
	*(r->inext ? &r->inext->iprev : &re_cache.itail) = r->iprev;
	r->iprev = r->inext = NULL;
	re_cache.nidle--;
}

static void idle_append(struct re_shared *r)
{
	r->inext = NULL;
	r->iprev = re_cache.itail;
	*(re_cache.itail ? &re_cache.itail->inext : &re_cache.ihead) = r;
	re_cache.itail = r;
	re_cache.nidle++;
}

static size_t re_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static void re_unlink(struct re_shared *r)
{
	struct re_shared **pp = &re_cache.b[re_hash(r->src) & (re_cache.nb - 1)];
	while (*pp != r)
		pp = &(*pp)->next;
	*pp = r->next;
	re_cache.n--;
	if (!r->plain)
		regfree(&r->re);
	free(r->src);
	free(r->req);
	for (size_t i = 0; i < r->nany; i++)
		free(r->any[i]);
	free(r->any);
	free(r->anyn);
	free(r);
}

static void re_release(struct re_shared *r)
{
	if (--r->refs)
		return;
	idle_append(r);
	if (re_cache.nidle <= RE_IDLE_MAX)
		return;
	struct re_shared *old = re_cache.ihead;
	idle_remove(old);
	re_unlink(old);
}

static bool regex_multiline(const char *re);
static char *plain_literal(const char *re, bool *bol, bool *eol);
static char *required_literal(const char *re);
static void required_any(struct re_shared *r);

/* The compiled form of pattern (a new reference), or NULL with regcomp's code in *rc. */
static struct re_shared *re_acquire(const char *pattern, int *rc, char *msg, size_t msglen)
{
	size_t h = re_hash(pattern);
	if (re_cache.nb) {
		for (struct re_shared *e = re_cache.b[h & (re_cache.nb - 1)]; e; e = e->next) {
			if (strcmp(e->src, pattern) == 0) {
				if (e->refs++ == 0)
					idle_remove(e);
				return e;
			}
		}
	}
	struct re_shared *r = xcalloc(1, sizeof *r);
	r->req = plain_literal(pattern, &r->abol, &r->aeol);
	r->plain = r->req != NULL;
	if (!r->plain) {
		*rc = regcomp(&r->re, pattern, REG_EXTENDED | REG_NEWLINE);
		if (*rc != 0) {
			regerror(*rc, &r->re, msg, msglen);
			free(r);
			return NULL;
		}
	}
	r->src = xstrdup(pattern);
	if (!r->plain) {
		r->multiline = regex_multiline(pattern);
		r->req = required_literal(pattern);
		if (!r->req)
			required_any(r);
	}
	r->refs = 1;
	if (re_cache.n >= 2 * re_cache.nb) {
		size_t nb = re_cache.nb ? 2 * re_cache.nb : 64;
		struct re_shared **b = xcalloc(nb, sizeof *b);
		for (size_t i = 0; i < re_cache.nb; i++) {
			for (struct re_shared *e = re_cache.b[i], *nx; e; e = nx) {
				nx = e->next;
				size_t k = re_hash(e->src) & (nb - 1);
				e->next = b[k];
				b[k] = e;
			}
		}
		free(re_cache.b);
		re_cache.b = b;
		re_cache.nb = nb;
	}
	size_t k = h & (re_cache.nb - 1);
	r->next = re_cache.b[k];
	re_cache.b[k] = r;
	re_cache.n++;
	return r;
}

bool expect_regex_is_plain(const char *pattern)
{
	bool bol, eol;
	char *lit = plain_literal(pattern, &bol, &eol);
	free(lit);
	return lit != NULL;
}

struct expect *expect_new(struct loop *l, size_t buf_max)
{
	struct expect *x = xcalloc(1, sizeof *x);
	x->loop = l;
	x->buf_max = buf_max ? buf_max : EXPECT_DEFAULT_MAX;
	x->cap = EXPECT_BUF_MIN;
	x->buf = xmalloc(x->cap);
	x->buf[0] = '\0';
	x->bol = true;
	lab_buf_init(&x->line, EXPECT_LINE_MAX + 1);
	lab_buf_init(&x->pending, EXPECT_PENDING_MAX);
	lab_buf_init(&x->mtext, 0);
	lab_buf_init(&x->mbefore, 0);
	return x;
}

static void pattern_free(struct pattern *p)
{
	if (p->x->loop)
		loop_timer_stop(p->x->loop, &p->timer);
	if (p->rs)
		re_release(p->rs);
	free(p->lit);
	free(p);
}

static void expect_destroy(struct expect *x)
{
	for (size_t i = 0; i < x->npats; i++)
		pattern_free(x->pats[i]);
	free(x->pats);
	free(x->buf);
	free(x->scratch);
	lab_buf_free(&x->line);
	lab_buf_free(&x->pending);
	lab_buf_free(&x->mtext);
	lab_buf_free(&x->mbefore);
	free(x);
}

void expect_free(struct expect *x)
{
	if (!x)
		return;
	if (x->depth > 0) {
		/* called from one of our callbacks: finish the dispatch first */
		x->dead = true;
		for (size_t i = 0; i < x->npats; i++) {
			x->pats[i]->dead = true;
			loop_timer_stop(x->loop, &x->pats[i]->timer);
		}
		return;
	}
	expect_destroy(x);
}

/* Drop patterns marked dead (only when no callback is running). */
static void reap_patterns(struct expect *x)
{
	size_t j = 0;
	for (size_t i = 0; i < x->npats; i++) {
		if (x->pats[i]->dead)
			pattern_free(x->pats[i]);
		else
			x->pats[j++] = x->pats[i];
	}
	x->npats = j;
}

static void leave(struct expect *x);

static void on_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct pattern *p = arg;
	struct expect *x = p->x;
	if (p->dead)
		return;
	struct expect_match m;
	memset(&m, 0, sizeof m);
	m.id = p->id;
	m.timeout = true;
	m.before = x->buf;
	m.before_len = x->len;
	x->depth++;
	p->cb(x, &m, p->arg);
	leave(x);
}

/* Rough frequency of a byte in console text (higher = more common). */
static int byte_rank(unsigned char c)
{
	if (c == ' ')
		return 10;
	if (c >= 'a' && c <= 'z')
		return strchr("etaoinsrhldcum", c) ? 8 : 4;
	if (c >= '0' && c <= '9')
		return 6;
	if (strchr(".:[]-_/,\n\t", c))
		return 6;
	if (c >= 'A' && c <= 'Z')
		return 2;
	return 1;
}

static void needle_init(struct needle *nd, const char *s, size_t n)
{
	nd->s = s;
	nd->n = n;
	nd->k = 0;
	for (size_t i = 1; i < n; i++)
		if (byte_rank((unsigned char)s[i]) < byte_rank((unsigned char)s[nd->k]))
			nd->k = i;
}

/* First occurrence of the needle in h[0..hn), or NULL. */
static const char *needle_find(const struct needle *nd, const char *h, size_t hn)
{
	if (nd->n == 0 || hn < nd->n)
		return NULL;
	const char *p = h + nd->k;
	const char *last = h + hn - (nd->n - nd->k); /* last position the rare byte may be */
	char c = nd->s[nd->k];
	while (p <= last) {
		p = memchr(p, c, (size_t)(last - p) + 1);
		if (!p)
			return NULL;
		const char *start = p - nd->k;
		if (memcmp(start, nd->s, nd->n) == 0)
			return start;
		p++;
	}
	return NULL;
}

/* Could this regex match a newline under REG_NEWLINE?  Conservative. */
static bool regex_multiline(const char *s)
{
	return strchr(s, '\n') || strstr(s, ":space:") || strstr(s, ":cntrl:") ||
	       strstr(s, "\\s") || strstr(s, "\\W") || strstr(s, "\\`") || strstr(s, "\\'");
}

/* Past the bracket expression that starts at re[i] ('['): []...] and [^]...] keep a
 * leading ], and [:class:], [.coll.], [=equiv=] are skipped whole. */
static size_t skip_bracket(const char *re, size_t i, size_t n)
{
	size_t j = i + 1;
	if (re[j] == '^')
		j++;
	if (re[j] == ']')
		j++;
	while (j < n && re[j] != ']') {
		if (re[j] == '[' && (re[j + 1] == ':' || re[j + 1] == '.' || re[j + 1] == '=')) {
			const char *close = strstr(re + j + 2, (char[]){re[j + 1], ']', 0});
			j = close ? (size_t)(close - re) + 2 : n;
		} else {
			j++;
		}
	}
	return j + 1; /* n + 1 when unterminated (regcomp refuses those) */
}

/*
 * The text an ERE matches when it is nothing but plain characters (escaped
 * specials count: `\$` is a `$`), with an optional leading `^` and trailing `$`
 * (*bol, *eol), or NULL.  Under REG_NEWLINE such a regex matches exactly where
 * the text occurs with a line start before it and a line end (or the end of the
 * text) after it, so it needs no regex: the shell prompt regex is one per board
 * (its token), and glibc built some 33 KB of DFA tables for each (heaptrack, a
 * 256-board night: 8.5 MB of 26.7 MB of heap while driving).  Conservative: any
 * other special character, a GNU escape (\w, \<, \1...), a newline or a
 * non-ASCII byte (locale-dependent) gives NULL, and the regex is compiled.
 */
static char *plain_literal(const char *re, bool *bol, bool *eol)
{
	size_t n = strlen(re), i = 0, k = 0;
	*bol = *eol = false;
	if (re[0] == '^') {
		*bol = true;
		i = 1;
	}
	char *out = xmalloc(n + 1);
	for (; i < n; i++) {
		unsigned char c = (unsigned char)re[i];
		if (c == '$' && i == n - 1) {
			*eol = true;
			break;
		}
		if (c == '\\' && i + 1 < n && strchr(".[]()*+?{}|^$\\", re[i + 1])) {
			out[k++] = re[++i];
			continue;
		}
		if (c == '\\' || c == '\n' || c >= 0x80 || strchr(".[]()*+?{}|^$", c)) {
			free(out);
			return NULL;
		}
		out[k++] = (char)c;
	}
	if (k == 0) {
		free(out);
		return NULL;
	}
	out[k] = '\0';
	return out;
}

/*
 * The longest run of plain characters that every match of an ERE must contain,
 * or NULL.  Conservative: patterns with alternation give none; runs stop at any
 * special character; a character made optional or repeatable by the next token
 * (?, *, +, {) ends the run (dropped unless it is `+`, which keeps one copy).
 * Used only to skip regexec where the literal does not occur.
 */
static char *required_literal(const char *re)
{
	if (strchr(re, '|'))
		return NULL;
	size_t n = strlen(re);
	char *best = NULL, *cur = xmalloc(n + 1);
	size_t bestlen = 0, curlen = 0;
	int depth = 0;
	for (size_t i = 0; i <= n; i++) {
		char ch = re[i];
		bool lit = false;
		char litc = 0;
		size_t next = i + 1;
		if (ch == '\\' && i + 1 < n && strchr(".[]()*+?{}|^$\\", re[i + 1])) {
			lit = depth == 0;
			litc = re[i + 1];
			next = i + 2;
		} else if (ch == '\\') {
			next = i + 2; /* \1, \w, \b, \<...: not a plain character */
		} else if (ch == '[') {
			next = skip_bracket(re, i, n);
		} else if (ch == '(') {
			depth++;
		} else if (ch == ')') {
			depth = depth > 0 ? depth - 1 : 0;
		} else if (ch && !strchr(".*+?{}^$\\", ch)) {
			lit = depth == 0;
			litc = ch;
		}
		/* the quantifier chain after this atom: any ?, * or {} makes it optional
		 * (a+* is optional too); a pure + chain keeps one copy but ends the run */
		bool optional = false, quant = false;
		size_t j = next;
		while (j < n && strchr("+*?{", re[j])) {
			quant = true;
			if (re[j] != '+')
				optional = true;
			if (re[j] == '{') {
				const char *close = strchr(re + j, '}');
				j = close ? (size_t)(close - re) : n;
			}
			j++;
		}
		next = j; /* the quantifiers are consumed with their atom */
		if (lit && !optional)
			cur[curlen++] = litc;
		if (!lit || quant) {
			if (curlen > bestlen) {
				free(best);
				best = xstrndup(cur, curlen);
				bestlen = curlen;
			}
			curlen = 0;
		}
		if (next > i + 1)
			i = next - 1;
	}
	free(cur);
	return best;
}

/*
 * For a regex whose alternation is either at the top level (A|B|C) or inside
 * one top-level group that no quantifier makes optional (x(A|B|C)y), a
 * required literal of every alternative: every match contains one of them,
 * so where none occurs regexec need not run.  U-Boot's error-line pattern (19
 * alternatives, matching across its newline, so searched over the whole
 * buffer) ran regexec on every chunk of console text: 9 % of the controller's
 * instructions.  Conservative: any other shape, or an alternative without a
 * literal of 2 characters or more, gives no set.
 */
static void required_any(struct re_shared *r)
{
	const char *re = r->src;
	size_t n = strlen(re);
	if (!strchr(re, '|'))
		return;
	/* where the alternation bars are, and the single top-level group holding them */
	int depth = 0, bar_depth = -1;
	size_t gs = 0, ge = 0, cur_gs = 0, groups_with_bars = 0;
	bool cur_has_bar = false;
	for (size_t i = 0; i < n; i++) {
		char c = re[i];
		if (c == '\\') {
			i++;
		} else if (c == '[') {
			i = skip_bracket(re, i, n) - 1;
		} else if (c == '(') {
			if (depth == 0) {
				cur_gs = i;
				cur_has_bar = false;
			}
			depth++;
		} else if (c == ')') {
			if (depth == 0)
				return;
			if (--depth == 0 && cur_has_bar) {
				gs = cur_gs;
				ge = i;
				groups_with_bars++;
			}
		} else if (c == '|') {
			if (bar_depth >= 0 && bar_depth != depth)
				return; /* bars at two depths */
			if (depth > 1)
				return;
			bar_depth = depth;
			if (depth == 1)
				cur_has_bar = true;
		}
	}
	if (depth != 0 || bar_depth < 0)
		return;
	size_t from = 0, to = n;
	if (bar_depth == 1) {
		if (groups_with_bars != 1)
			return;
		if (ge + 1 < n && strchr("?*{", re[ge + 1]))
			return; /* the group may match nothing */
		from = gs + 1;
		to = ge;
	}
	/* split [from, to) at the bars of its own level */
	char **lits = NULL;
	size_t nl = 0;
	depth = 0;
	size_t start = from;
	for (size_t i = from; i <= to; i++) {
		char c = i < to ? re[i] : '|';
		if (i < to && c == '\\') {
			i++;
			continue;
		}
		if (i < to && c == '[') {
			i = skip_bracket(re, i, to) - 1;
			continue;
		}
		if (c == '(')
			depth++;
		else if (c == ')')
			depth--;
		if (c != '|' || depth != 0)
			continue;
		char *alt = xstrndup(re + start, i - start);
		char *lit = required_literal(alt);
		free(alt);
		if (!lit || strlen(lit) < 2) {
			free(lit);
			for (size_t k = 0; k < nl; k++)
				free(lits[k]);
			free(lits);
			return;
		}
		lits = xreallocarray(lits, nl + 1, sizeof *lits);
		lits[nl++] = lit;
		start = i + 1;
	}
	r->any = lits;
	r->nany = nl;
	r->anyn = xcalloc(nl, sizeof *r->anyn);
	for (size_t k = 0; k < nl; k++)
		needle_init(&r->anyn[k], lits[k], strlen(lits[k]));
}

/* Does any literal of the set occur in h[0..hn)? */
static bool any_present(const struct re_shared *r, const char *h, size_t hn)
{
	for (size_t k = 0; k < r->nany; k++)
		if (needle_find(&r->anyn[k], h, hn))
			return true;
	return false;
}

/* POSIX leaves adjacent duplication symbols (a+*, b?+, c{2}*) undefined, and glibc's
 * regcomp takes exponential time on chains of them: refuse them up front. */
static bool stacked_quantifiers(const char *re)
{
	bool prev_quant = false;
	for (size_t i = 0; re[i]; i++) {
		char ch = re[i];
		if (ch == '\\') {
			if (re[i + 1])
				i++;
			prev_quant = false;
		} else if (ch == '[') {
			size_t j = i + 1;
			if (re[j] == '^')
				j++;
			if (re[j] == ']')
				j++;
			while (re[j] && re[j] != ']') {
				if (re[j] == '[' && (re[j + 1] == ':' || re[j + 1] == '.' || re[j + 1] == '=')) {
					const char *close = strstr(re + j + 2, (char[]){re[j + 1], ']', 0});
					j = close ? (size_t)(close - re) + 2 : strlen(re);
				} else {
					j++;
				}
			}
			i = re[j] ? j : j - 1;
			prev_quant = false;
		} else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
			if (prev_quant && i > 0)
				return true;
			if (ch == '{') {
				const char *close = strchr(re + i, '}');
				if (!close)
					return false; /* regcomp will say what is wrong */
				i = (size_t)(close - re);
			}
			prev_quant = true;
		} else {
			prev_quant = false;
		}
	}
	return false;
}

int expect_add(struct expect *x, enum expect_kind kind, const char *pattern, uint64_t timeout_ms,
	       expect_cb cb, void *arg, struct lab_err *e)
{
	if (!pattern || !*pattern) {
		LAB_ERR(e, LAB_EUSAGE, "expect: empty pattern");
		return -1;
	}
	struct pattern *p = xcalloc(1, sizeof *p);
	p->x = x;
	p->kind = kind;
	p->cb = cb;
	p->arg = arg;
	if (kind == EXPECT_LITERAL) {
		p->lit = xstrdup(pattern);
		p->litlen = strlen(pattern);
		needle_init(&p->litn, p->lit, p->litlen);
	} else {
		if (stacked_quantifiers(pattern)) {
			LAB_ERR(e, LAB_EUSAGE, "expect: bad regex '%s': adjacent repetition operators",
				pattern);
			free(p);
			return -1;
		}
		int rc = 0;
		char msg[256];
		p->rs = re_acquire(pattern, &rc, msg, sizeof msg);
		if (!p->rs) {
			LAB_ERR(e, LAB_EUSAGE, "expect: bad regex '%s': %s", pattern, msg);
			free(p);
			return -1;
		}
		p->multiline = p->rs->multiline;
		p->req = p->rs->req;
		p->reqlen = p->req ? strlen(p->req) : 0;
		needle_init(&p->reqn, p->req, p->reqlen);
	}
	p->id = x->next_id++;
	if (x->next_id < 0) /* wrapped after 2^31 patterns */
		x->next_id = 0;
	loop_timer_init(&p->timer, on_timeout, p);
	if (timeout_ms && x->loop)
		loop_timer_start(x->loop, &p->timer, timeout_ms);
	if (x->npats == x->cappats) {
		x->cappats = x->cappats ? 2 * x->cappats : 8;
		x->pats = xreallocarray(x->pats, x->cappats, sizeof *x->pats);
	}
	x->pats[x->npats++] = p;
	return p->id;
}

void expect_remove(struct expect *x, int id)
{
	for (size_t i = 0; i < x->npats; i++) {
		struct pattern *p = x->pats[i];
		if (p->id == id && !p->dead) {
			p->dead = true;
			loop_timer_stop(x->loop, &p->timer);
		}
	}
	if (x->depth == 0)
		reap_patterns(x);
}

void expect_clear(struct expect *x)
{
	for (size_t i = 0; i < x->npats; i++) {
		x->pats[i]->dead = true;
		loop_timer_stop(x->loop, &x->pats[i]->timer);
	}
	if (x->depth == 0)
		reap_patterns(x);
}

void expect_flush(struct expect *x)
{
	x->len = 0;
	if (x->cap > EXPECT_BUF_KEEP) {
		x->cap = EXPECT_BUF_MIN;
		x->buf = xrealloc(x->buf, x->cap);
	}
	x->buf[0] = '\0';
	x->bol = true;
	for (size_t i = 0; i < x->npats; i++) {
		x->pats[i]->scan_from = 0;
		x->pats[i]->cache = C_UNKNOWN;
	}
	if (x->depth > 0)
		x->pending.len = 0; /* text fed from a callback before the flush goes too */
}

size_t expect_buffered(const struct expect *x)
{
	return x->len;
}

void expect_set_line_cb(struct expect *x, void (*cb)(struct expect *, const char *line, size_t len,
						      void *),
			void *arg)
{
	x->line_cb = cb;
	x->line_arg = arg;
}

/* Remove CR, NUL and terminal escape sequences.  Returns the cleaned length. */
static size_t clean(struct expect *x, const char *in, size_t n, char *out)
{
	size_t o = 0;
	enum clean_state st = x->cst;
	size_t sl = x->cst_len;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (st == CL_NORMAL && c != 0x1b && c != '\r' && c != '\0') {
			/* fast path: plain text runs */
			size_t j = i;
			while (j < n && in[j] != 0x1b && in[j] != '\r' && in[j] != '\0')
				j++;
			memmove(out + o, in + i, j - i);
			o += j - i;
			i = j - 1;
			continue;
		}
		switch (st) {
		case CL_NORMAL:
			if (c == 0x1b) {
				st = CL_ESC;
			} else if (c != '\r' && c != '\0') {
				out[o++] = (char)c;
			}
			break;
		case CL_ESC:
			if (c == '[') {
				st = CL_CSI;
				sl = 0;
			} else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
				st = CL_STR; /* OSC, DCS, SOS, PM, APC: strings up to ST/BEL */
				sl = 0;
			} else if (c >= 0x20 && c <= 0x2f) {
				st = CL_ESC_INTER; /* ESC ( B and friends */
			} else if (c == 0x1b) {
				st = CL_ESC;
			} else {
				st = CL_NORMAL; /* two-byte escape (ESC 7, ESC c, ...) */
			}
			break;
		case CL_ESC_INTER:
			if (c < 0x20 || c > 0x2f)
				st = CL_NORMAL;
			break;
		case CL_CSI:
			if (c >= 0x40 && c <= 0x7e) {
				st = CL_NORMAL;
			} else if (c == 0x1b) {
				st = CL_ESC;
			} else if (c < 0x20 || ++sl > CSI_MAX) {
				/* not a CSI after all: keep the byte (newlines matter) */
				st = CL_NORMAL;
				if (c != '\r' && c != '\0')
					out[o++] = (char)c;
			}
			break;
		case CL_STR:
			if (c == 0x07) {
				st = CL_NORMAL;
			} else if (c == 0x1b) {
				st = CL_STR_ESC;
			} else if (c == '\n' || ++sl > OSC_MAX) {
				st = CL_NORMAL;
				if (c == '\n')
					out[o++] = '\n';
			}
			break;
		case CL_STR_ESC:
			if (c == '\\') {
				st = CL_NORMAL;
			} else if (c == '[') {
				st = CL_CSI; /* unterminated string followed by a CSI */
				sl = 0;
			} else {
				st = CL_STR;
			}
			break;
		}
	}
	x->cst = st;
	x->cst_len = sl;
	return o;
}

static void emit_lines(struct expect *x, const char *s, size_t n)
{
	while (n) {
		const char *nl = memchr(s, '\n', n);
		size_t take = nl ? (size_t)(nl - s) : n;
		size_t room = EXPECT_LINE_MAX - x->line.len;
		if (take > room) {
			/* overlong line: deliver what we have as a line of its own */
			lab_buf_append(&x->line, s, room);
			s += room;
			n -= room;
			x->line_cb(x, x->line.data, x->line.len, x->line_arg);
			x->line.len = 0;
			if (x->dead || !x->line_cb)
				return;
			continue;
		}
		lab_buf_append(&x->line, s, take);
		if (!nl)
			return;
		s += take + 1;
		n -= take + 1;
		lab_buf_append(&x->line, "", 0); /* ensure data != NULL */
		x->line_cb(x, x->line.data, x->line.len, x->line_arg);
		lab_buf_reset(&x->line, EXPECT_BUF_KEEP);
		if (x->dead || !x->line_cb)
			return;
	}
}

/* Drop the first n bytes of the match buffer. */
static void consume(struct expect *x, size_t n)
{
	if (n == 0)
		return;
	if (n > x->len)
		n = x->len;
	x->bol = x->buf[n - 1] == '\n';
	memmove(x->buf, x->buf + n, x->len - n + 1);
	x->len -= n;
	if (x->cap > EXPECT_BUF_KEEP && x->len < EXPECT_BUF_MIN / 2) {
		x->cap = EXPECT_BUF_MIN;
		x->buf = xrealloc(x->buf, x->cap);
	}
	for (size_t i = 0; i < x->npats; i++) {
		struct pattern *p = x->pats[i];
		p->scan_from = p->scan_from > n ? p->scan_from - n : 0;
		if (p->cache == C_MATCH) {
			if (p->cso >= n) {
				p->cso -= n;
				p->ceo -= n;
				for (int k = 0; k < 10; k++) {
					if (p->crm[k].rm_so >= 0) {
						p->crm[k].rm_so -= (regoff_t)n;
						p->crm[k].rm_eo -= (regoff_t)n;
					}
				}
			} else {
				p->cache = C_UNKNOWN;
			}
		}
	}
}

static void shift_groups(regmatch_t *rm, size_t base)
{
	for (int i = 0; i < 10; i++) {
		if (rm[i].rm_so >= 0) {
			rm[i].rm_so += (regoff_t)base;
			rm[i].rm_eo += (regoff_t)base;
		}
	}
}

/* Line-local regex with a required literal: run regexec only on lines that contain
 * the literal, each bounded at its end (its '\n' is briefly replaced by a NUL, which
 * `$` treats the same under REG_NEWLINE). */
static bool find_req(struct expect *x, struct pattern *p, size_t from, size_t *so, size_t *eo,
		     regmatch_t *rm)
{
	size_t pos = from;
	while (pos < x->len) {
		const char *hit = needle_find(&p->reqn, x->buf + pos, x->len - pos);
		if (!hit)
			break;
		size_t h = (size_t)(hit - x->buf);
		const char *nl = memrchr(x->buf + pos, '\n', h - pos);
		size_t ls = nl ? (size_t)(nl - x->buf) + 1 : pos;
		const char *e = memchr(hit, '\n', x->len - h);
		size_t le = e ? (size_t)(e - x->buf) : x->len;
		bool at_bol = ls == 0 ? x->bol : x->buf[ls - 1] == '\n';
		char saved = x->buf[le];
		x->buf[le] = '\0';
		int r = regexec(&p->rs->re, x->buf + ls, 10, rm, at_bol ? 0 : REG_NOTBOL);
		x->buf[le] = saved;
		if (r == 0) {
			*so = ls + (size_t)rm[0].rm_so;
			*eo = ls + (size_t)rm[0].rm_eo;
			shift_groups(rm, ls);
			p->scan_from = ls;
			return true;
		}
		pos = le + 1;
	}
	/* Only the last (incomplete) line can still match later. */
	const char *nl = from < x->len ? memrchr(x->buf + from, '\n', x->len - from) : NULL;
	p->scan_from = nl ? (size_t)(nl - x->buf) + 1 : from;
	return false;
}

/* A plain regex (plain_literal): the needle where its anchors hold.  Whether
 * they hold depends only on the bytes beside it and the end of the text, so
 * like a literal the search resumes len-1 bytes before the old end. */
static bool find_plain(struct expect *x, struct pattern *p, size_t *so, size_t *eo,
		       regmatch_t *rm)
{
	const struct re_shared *r = p->rs;
	size_t n = p->reqlen, pos = p->scan_from;
	while (pos < x->len) {
		const char *hit = needle_find(&p->reqn, x->buf + pos, x->len - pos);
		if (!hit)
			break;
		size_t h = (size_t)(hit - x->buf);
		bool bol_ok = !r->abol || (h == 0 ? x->bol : x->buf[h - 1] == '\n');
		bool eol_ok = !r->aeol || h + n == x->len || x->buf[h + n] == '\n';
		if (bol_ok && eol_ok) {
			*so = h;
			*eo = h + n;
			rm[0].rm_so = (regoff_t)h;
			rm[0].rm_eo = (regoff_t)(h + n);
			for (int i = 1; i < 10; i++)
				rm[i].rm_so = rm[i].rm_eo = -1;
			p->scan_from = h;
			return true;
		}
		pos = h + 1;
	}
	size_t resume = x->len >= n ? x->len - n + 1 : 0;
	if (resume > p->scan_from)
		p->scan_from = resume;
	return false;
}

/* Earliest match of p in the buffer at or after p->scan_from. */
static bool find(struct expect *x, struct pattern *p, size_t *so, size_t *eo, regmatch_t *rm)
{
	if (p->kind == EXPECT_LITERAL) {
		size_t from = p->scan_from;
		if (from < x->len) {
			const char *hit = needle_find(&p->litn, x->buf + from, x->len - from);
			if (hit) {
				*so = (size_t)(hit - x->buf);
				*eo = *so + p->litlen;
				p->scan_from = *so;
				return true;
			}
		}
		p->scan_from = x->len >= p->litlen ? x->len - p->litlen + 1 : 0;
		return false;
	}
	if (p->rs->plain)
		return find_plain(x, p, so, eo, rm);
	size_t from = p->multiline ? 0 : p->scan_from;
	if (from > x->len)
		from = x->len;
	if (p->req && !p->multiline)
		return find_req(x, p, from, so, eo, rm);
	if (p->req && !needle_find(&p->reqn, x->buf, x->len))
		return false;
	bool at_bol = from == 0 ? x->bol : x->buf[from - 1] == '\n';
	int flags = at_bol ? 0 : REG_NOTBOL;
	/* a match lies within [from, len): without one of the set's literals there, none */
	bool possible = !p->rs->nany || any_present(p->rs, x->buf + from, x->len - from);
	if (possible && regexec(&p->rs->re, x->buf + from, 10, rm, flags) == 0) {
		*so = from + (size_t)rm[0].rm_so;
		*eo = from + (size_t)rm[0].rm_eo;
		shift_groups(rm, from);
		p->scan_from = from;
		return true;
	}
	/* No match up to here: only the last (incomplete) line can still match. */
	const char *nl = memrchr(x->buf + from, '\n', x->len - from);
	if (nl)
		p->scan_from = (size_t)(nl - x->buf) + 1;
	else
		p->scan_from = from;
	return false;
}

/* Fire every match in the buffer, earliest first. */
static void run_matches(struct expect *x)
{
	regmatch_t best_rm[10];
	for (size_t i = 0; i < x->npats; i++)
		x->pats[i]->cache = C_UNKNOWN;
	for (;;) {
		struct pattern *best = NULL;
		size_t bso = 0, beo = 0;
		for (size_t i = 0; i < x->npats; i++) {
			struct pattern *p = x->pats[i];
			if (p->dead)
				continue;
			if (p->cache == C_UNKNOWN) {
				bool hit = find(x, p, &p->cso, &p->ceo, p->crm);
				p->cache = hit ? C_MATCH : C_NONE;
			}
			if (p->cache != C_MATCH)
				continue;
			if (!best || p->cso < bso) {
				best = p;
				bso = p->cso;
				beo = p->ceo;
			}
		}
		if (best && best->kind == EXPECT_REGEX)
			memcpy(best_rm, best->crm, sizeof best_rm);
		if (!best)
			return;
		/* An empty regex match at the very end would fire forever: wait for more text. */
		if (beo == bso && bso >= x->len)
			return;
		struct expect_match m;
		memset(&m, 0, sizeof m);
		m.id = best->id;
		x->mtext.len = 0;
		lab_buf_append(&x->mtext, x->buf + bso, beo - bso);
		x->mbefore.len = 0;
		lab_buf_append(&x->mbefore, x->buf, bso);
		char *groups[10] = {0};
		if (best->kind == EXPECT_REGEX) {
			for (int i = 0; i < 10; i++)
				if (best_rm[i].rm_so >= 0)
					groups[i] = xstrndup(x->buf + best_rm[i].rm_so,
							     (size_t)(best_rm[i].rm_eo - best_rm[i].rm_so));
		}
		m.text = x->mtext.data;
		m.len = beo - bso;
		m.before = x->mbefore.data;
		m.before_len = bso;
		for (int i = 0; i < 10; i++)
			m.groups[i] = groups[i];
		loop_timer_stop(x->loop, &best->timer); /* it matched in time */
		best->cache = C_UNKNOWN;
		/* Consume first: the callback sees a buffer that starts after the match. */
		consume(x, beo > bso ? beo : bso + 1);
		best->cb(x, &m, best->arg);
		for (int i = 0; i < 10; i++)
			free(groups[i]);
		lab_buf_reset(&x->mbefore, EXPECT_BUF_KEEP);
		lab_buf_reset(&x->mtext, EXPECT_BUF_KEEP);
		if (x->dead)
			return;
	}
}

/* Append one cleaned piece (<= buf_max) and match. */
static void add_piece(struct expect *x, const char *s, size_t n)
{
	if (x->len + n > 2 * x->buf_max) {
		/* unreachable by construction: keep the newest text */
		consume(x, x->len + n - 2 * x->buf_max);
	}
	if (x->len + n + 1 > x->cap) {
		size_t nc = x->cap;
		while (nc < x->len + n + 1)
			nc *= 2;
		if (nc > 2 * x->buf_max + 1)
			nc = 2 * x->buf_max + 1;
		x->buf = xrealloc(x->buf, nc);
		x->cap = nc;
	}
	memcpy(x->buf + x->len, s, n);
	x->len += n;
	x->buf[x->len] = '\0';
	run_matches(x);
	if (x->dead)
		return;
	if (x->len > x->buf_max)
		consume(x, x->len - x->buf_max);
}

static void feed_clean(struct expect *x, const char *buf, size_t n)
{
	if (n > x->scratch_cap) {
		x->scratch_cap = n;
		x->scratch = xrealloc(x->scratch, n);
	}
	size_t cn = clean(x, buf, n, x->scratch);
	const char *s = x->scratch;
	if (x->line_cb && cn) {
		emit_lines(x, s, cn);
		if (x->dead)
			return;
	}
	while (cn) {
		size_t take = cn < x->buf_max ? cn : x->buf_max;
		add_piece(x, s, take);
		if (x->dead)
			return;
		s += take;
		cn -= take;
	}
	if (x->scratch_cap > EXPECT_BUF_KEEP) { /* a burst's copy: not kept per console */
		free(x->scratch);
		x->scratch = NULL;
		x->scratch_cap = 0;
	}
}

void expect_feed(struct expect *x, const char *buf, size_t n)
{
	if (n == 0)
		return;
	if (x->depth > 0) {
		/* from inside a callback: handled when the current dispatch ends */
		if (lab_buf_append(&x->pending, buf, n) != LAB_OK) {
			size_t room = x->pending.max - x->pending.len;
			lab_buf_append(&x->pending, buf + n - room, room);
		}
		return;
	}
	x->depth++;
	feed_clean(x, buf, n);
	leave(x);
}

/* End of a dispatch: run text fed from callbacks, then apply deferred frees. */
static void leave(struct expect *x)
{
	if (x->depth == 1) {
		while (!x->dead && x->pending.len) {
			char *p = x->pending.data;
			size_t pn = x->pending.len;
			lab_buf_init(&x->pending, EXPECT_PENDING_MAX);
			feed_clean(x, p, pn);
			free(p);
		}
	}
	x->depth--;
	if (x->depth > 0)
		return;
	if (x->dead) {
		expect_destroy(x);
		return;
	}
	reap_patterns(x);
}
