/*
 * csv.c - reading published CSV measurements (androbench, fscopy layouts):
 * records, validation, duplicates, and rendering rows back in the
 * published layout.  See csv.h and docs/results-schema.md.
 *
 * The parser is RFC 4180 (quoted fields may hold commas, doubled quotes and
 * line ends; LF or CRLF records) plus '#' comment lines.  It works on a
 * window of the input (see struct csv_rd), caps every field and record, and
 * never trusts the input: each problem becomes a (line, reason) entry rather
 * than an abort.  Good rows go to a temporary SQLite file, not to memory.
 */
#include "csv.h"
#include "mode.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_scratch.h"

#define CSV_MAX_COLS 64

const char *csv_layout_name(enum csv_layout l)
{
	switch (l) {
	case CSV_ANDROBENCH: return "androbench";
	case CSV_FSCOPY: return "fscopy";
	}
	return "unknown";
}

static const char *const androbench_cols[] = {"board", "controller", "queue_fua", "workload",
					      "run", "mib_per_s", NULL};
static const char *const fscopy_cols[] = {"dut", "module", "mode", "run", "seconds", NULL};

/* ---- record reader ---------------------------------------------------------- */

/*
 * The reader works on a window of the input: a whole buffer (csv_parse), or
 * up to CSV_WINDOW bytes of a file refilled between records, so memory does
 * not grow with the file.  Before each record the window holds at least
 * CSV_MAX_RECORD bytes past pos (or the rest of the file): a record that
 * reaches the window's end before the file's is longer than that, and bad.
 */
#define CSV_WINDOW (1u << 20)
#define CSV_MAX_RECORD (512u << 10)

struct csv_rd {
	const char *buf;
	size_t len, pos;
	int line; /* line of buf[pos] */
	/* file input (fd >= 0); buf == win */
	int fd;
	char *win;
	bool eof;
	const char *path;
	struct lab_sha256_ctx *sha;
	uint64_t bytes;  /* read so far */
	bool seen_lf;    /* crlf is decided by the file's first LF */
	int crlf;
	char last;       /* last byte read */
};

struct csv_field {
	size_t raw_start, raw_end; /* span in buf, quotes included */
	char *val;                 /* decoded, NUL-terminated */
};

enum rec_kind { REC_EOF, REC_BLANK, REC_COMMENT, REC_DATA };

struct csv_rec {
	enum rec_kind kind;
	int line;
	size_t start, end; /* span of the whole record, line end excluded */
	int had_eol;
	int eol_len;       /* 1 (LF) or 2 (CRLF) when had_eol */
	struct csv_field f[CSV_MAX_COLS];
	size_t nf;         /* fields seen (may exceed CSV_MAX_COLS: only the first are kept) */
	const char *err;   /* malformed: why */
};

static void rec_clear(struct csv_rec *r)
{
	for (size_t i = 0; i < r->nf && i < CSV_MAX_COLS; i++)
		free(r->f[i].val);
	memset(r, 0, sizeof *r);
}

/* Length of the line end at p (1 for LF, 2 for CRLF), 0 when none. */
static size_t eol_at(const struct csv_rd *rd, size_t p)
{
	if (p < rd->len && rd->buf[p] == '\n')
		return 1;
	if (p + 1 < rd->len && rd->buf[p] == '\r' && rd->buf[p + 1] == '\n')
		return 2;
	return 0;
}

/* After an error, skip the rest of the physical line. */
static void skip_line(struct csv_rd *rd, struct csv_rec *r)
{
	while (rd->pos < rd->len && rd->buf[rd->pos] != '\n')
		rd->pos++;
	r->end = rd->pos;
	if (r->end > r->start && rd->buf[r->end - 1] == '\r')
		r->end--;
	if (rd->pos < rd->len) {
		r->eol_len = rd->pos > r->start && rd->buf[rd->pos - 1] == '\r' ? 2 : 1;
		rd->pos++;
		rd->line++;
		r->had_eol = 1;
	}
}

static int read_record(struct csv_rd *rd, struct csv_rec *r)
{
	rec_clear(r);
	r->line = rd->line;
	r->start = rd->pos;
	if (rd->pos >= rd->len)
		return r->kind = REC_EOF;
	size_t el = eol_at(rd, rd->pos);
	if (el) {
		r->end = rd->pos;
		rd->pos += el;
		rd->line++;
		r->had_eol = 1;
		r->eol_len = (int)el;
		return r->kind = REC_BLANK;
	}
	if (rd->buf[rd->pos] == '#') {
		r->kind = REC_COMMENT;
		skip_line(rd, r);
		return r->kind;
	}
	r->kind = REC_DATA;
	struct lab_buf v;
	for (;;) {
		struct csv_field fld = {.raw_start = rd->pos};
		lab_buf_init(&v, CSV_MAX_FIELD);
		if (rd->pos < rd->len && rd->buf[rd->pos] == '"') {
			rd->pos++;
			for (;;) {
				if (rd->pos >= rd->len) {
					r->err = "unterminated quoted field";
					break;
				}
				char c = rd->buf[rd->pos];
				if (c == '"') {
					if (rd->pos + 1 < rd->len && rd->buf[rd->pos + 1] == '"') {
						rd->pos += 2;
						if (lab_buf_append(&v, "\"", 1))
							r->err = "field longer than 4096 bytes";
						continue;
					}
					rd->pos++;
					break;
				}
				if (c == '\0')
					r->err = "NUL byte in a field";
				if (c == '\n')
					rd->line++;
				if (lab_buf_append(&v, &c, 1))
					r->err = "field longer than 4096 bytes";
				rd->pos++;
				if (r->err)
					break;
			}
			if (!r->err && rd->pos < rd->len && rd->buf[rd->pos] != ',' &&
			    !eol_at(rd, rd->pos))
				r->err = "text after a closing quote";
		} else {
			while (rd->pos < rd->len && rd->buf[rd->pos] != ',' && !eol_at(rd, rd->pos)) {
				char c = rd->buf[rd->pos];
				if (c == '"')
					r->err = "quote inside an unquoted field";
				else if (c == '\0')
					r->err = "NUL byte in a field";
				else if (lab_buf_append(&v, &c, 1))
					r->err = "field longer than 4096 bytes";
				if (r->err)
					break;
				rd->pos++;
			}
		}
		fld.raw_end = rd->pos;
		if (r->nf < CSV_MAX_COLS) {
			fld.val = v.data ? v.data : xstrdup("");
			r->f[r->nf] = fld;
		} else {
			lab_buf_free(&v);
		}
		r->nf++;
		if (r->err) {
			skip_line(rd, r);
			return r->kind;
		}
		if (rd->pos < rd->len && rd->buf[rd->pos] == ',') {
			rd->pos++;
			continue;
		}
		r->end = rd->pos;
		el = eol_at(rd, rd->pos);
		if (el) {
			rd->pos += el;
			rd->line++;
			r->had_eol = 1;
			r->eol_len = (int)el;
		}
		return r->kind;
	}
}

/* ---- validation -------------------------------------------------------------- */

struct parse_ctx {
	struct csv_file *f;
	size_t cap_bad;
};

static void add_bad(struct parse_ctx *c, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_bad(struct parse_ctx *c, int line, const char *fmt, ...)
{
	struct csv_file *f = c->f;
	f->nbad_total++;
	if (f->nbad >= CSV_MAX_BAD)
		return;
	if (f->nbad == c->cap_bad) {
		c->cap_bad = c->cap_bad ? 2 * c->cap_bad : 16;
		f->bad = xreallocarray(f->bad, c->cap_bad, sizeof *f->bad);
	}
	va_list ap;
	va_start(ap, fmt);
	f->bad[f->nbad].line = line;
	f->bad[f->nbad].reason = xvasprintf(fmt, ap);
	va_end(ap);
	f->nbad++;
}

/* Printable excerpt of untrusted text for a message. */
static void excerpt(char *dst, size_t n, const char *s)
{
	size_t j = 0;
	for (size_t i = 0; s[i] && j + 5 < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f)
			j += (size_t)snprintf(dst + j, n - j, "\\x%02x", ch);
		else
			dst[j++] = (char)ch;
		if (i >= 40) {
			lab_strlcpy(dst + j, "...", n - j);
			return;
		}
	}
	dst[j < n ? j : n - 1] = '\0';
}

/* Decimal number as published: digits, one point, optional exponent. */
static int decimal_text(const char *s)
{
	size_t i = 0;
	int digits = 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	while (isdigit((unsigned char)s[i])) {
		i++;
		digits++;
	}
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i])) {
			i++;
			digits++;
		}
	}
	if (!digits)
		return 0;
	if (s[i] == 'e' || s[i] == 'E') {
		i++;
		if (s[i] == '+' || s[i] == '-')
			i++;
		if (!isdigit((unsigned char)s[i]))
			return 0;
		while (isdigit((unsigned char)s[i]))
			i++;
	}
	return s[i] == '\0';
}

static int header_matches(const struct csv_rec *r, const char *const *cols)
{
	size_t n = 0;
	while (cols[n])
		n++;
	if (r->nf != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = r->f[i].val;
		while (*v == ' ')
			v++;
		size_t l = strlen(v);
		while (l && v[l - 1] == ' ')
			l--;
		if (l != strlen(cols[i]) || strncasecmp(v, cols[i], l) != 0)
			return 0;
	}
	return 1;
}

/* n digits exactly (n > 0) or, n == 0, at least one: the count, or -1. */
static int digits_at(const char *s, int n, int64_t *v)
{
	int i = 0;
	*v = 0;
	while (isdigit((unsigned char)s[i]) && (n == 0 || i < n)) {
		if (*v > (INT64_MAX - 9) / 10)
			return -1;
		*v = *v * 10 + (s[i] - '0');
		i++;
	}
	return i == 0 || (n && i != n) ? -1 : i;
}

/*
 * A wall time as published: m:ss[.f] or h:mm:ss[.f] (the ext4 copy results
 * were posted as m:ss.cc).  The seconds are rebuilt as the decimal text
 * "<whole seconds>.<f>" and parsed once, so 7:02.44 gives exactly the double
 * of 422.44.  0 when good, -1 not this shape, -2 a minutes/seconds field of
 * 60 or more (*why says which).
 */
static int parse_duration(const char *s, double *out, const char **why)
{
	int64_t part[3], n = 0;
	const char *p = s;
	int k = digits_at(p, 0, &part[n]);
	if (k < 0)
		return -1;
	p += k;
	n++;
	while (*p == ':' && n < 3) {
		if ((k = digits_at(p + 1, 2, &part[n])) < 0)
			return -1;
		p += 1 + k;
		n++;
	}
	if (n < 2)
		return -1;
	const char *frac = "";
	if (*p == '.') {
		frac = p + 1;
		for (p = frac; isdigit((unsigned char)*p); p++)
			;
		if (p == frac) /* "7:02." */
			return -1;
	}
	if (*p != '\0')
		return -1;
	for (int64_t i = 1; i < n; i++)
		if (part[i] >= 60) {
			*why = i == n - 1 ? "seconds" : "minutes";
			return -2;
		}
	if (part[0] > INT64_MAX / 3600 / 2)
		return -1;
	int64_t whole = n == 3 ? part[0] * 3600 + part[1] * 60 + part[2] : part[0] * 60 + part[1];
	char text[96];
	snprintf(text, sizeof text, "%lld.%.40s", (long long)whole, frac[0] ? frac : "0");
	return lab_parse_double(text, out) || !isfinite(*out) ? -1 : 0;
}

static int parse_run(const char *t, int *out)
{
	int64_t v;
	for (const char *p = t; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	if (lab_parse_i64(t, &v) || v < 1 || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

static void free_row(struct csv_row *r)
{
	free(r->key);
	free(r->group);
	free(r->label);
	free(r->board);
	free(r->host);
	free(r->mode);
	free(r->metric);
	free(r->value_text);
}

/* Validate one data record into *out (owned strings, free_row); 0 when good,
 * -1 when it was recorded as a bad line. */
static int check_row(struct parse_ctx *c, const char *buf, const struct csv_rec *r,
		     struct csv_row *out)
{
	struct csv_file *f = c->f;
	size_t want = f->layout == CSV_ANDROBENCH ? 6 : 5;
	char ex[64];
	if (r->nf != want) {
		add_bad(c, r->line, "expected %zu columns, found %zu", want, r->nf);
		return -1;
	}
	for (size_t i = 0; i < 3; i++) {
		if (r->f[i].val[0] == '\0') {
			add_bad(c, r->line, "empty %s",
				(f->layout == CSV_ANDROBENCH ? androbench_cols : fscopy_cols)[i]);
			return -1;
		}
	}
	struct csv_row row = {.line = r->line};
	const char *run_t, *val_t;
	if (f->layout == CSV_ANDROBENCH) {
		const char *q = r->f[2].val;
		if (strcmp(q, "0") != 0 && strcmp(q, "1") != 0) {
			excerpt(ex, sizeof ex, q);
			add_bad(c, r->line, "queue_fua must be 0 or 1, not '%s'", ex);
			return -1;
		}
		if (r->f[3].val[0] == '\0') {
			add_bad(c, r->line, "empty workload");
			return -1;
		}
		run_t = r->f[4].val;
		val_t = r->f[5].val;
	} else {
		if (lab_mode_parse(r->f[2].val) < 0)
			goto bad_mode;
		run_t = r->f[3].val;
		val_t = r->f[4].val;
	}
	if (parse_run(run_t, &row.run)) {
		excerpt(ex, sizeof ex, run_t);
		add_bad(c, r->line, "run '%s' is not a positive integer", ex);
		return -1;
	}
	if (!decimal_text(val_t) || lab_parse_double(val_t, &row.value) || !isfinite(row.value)) {
		const char *why = NULL;
		int d = f->layout == CSV_FSCOPY ? parse_duration(val_t, &row.value, &why) : -1;
		excerpt(ex, sizeof ex, val_t);
		if (d == -2) {
			add_bad(c, r->line, "wall time '%s': the %s field must be below 60", ex, why);
			return -1;
		}
		if (d < 0) {
			if (f->layout == CSV_FSCOPY)
				add_bad(c, r->line,
					"wall time '%s' is not a duration: expected seconds (422.44), "
					"m:ss.cc (7:02.44) or h:mm:ss.cc (1:07:02.44)",
					ex);
			else
				add_bad(c, r->line, "value '%s' is not a number: expected MiB/s (98.7)",
					ex);
			return -1;
		}
	}
	if (row.value < 0 || val_t[0] == '-') {
		excerpt(ex, sizeof ex, val_t);
		add_bad(c, r->line, "negative value %s", ex);
		return -1;
	}
	row.key = xstrndup(buf + r->f[0].raw_start, r->f[2].raw_end - r->f[0].raw_start);
	row.group = xasprintf("%zu:%s%zu:%s%zu:%s", strlen(r->f[0].val), r->f[0].val,
			      strlen(r->f[1].val), r->f[1].val, strlen(r->f[2].val), r->f[2].val);
	row.value_text = xstrdup(val_t);
	if (f->layout == CSV_ANDROBENCH) {
		row.label = xstrdup(r->f[0].val);
		row.board = xstrdup(r->f[0].val);
		row.host = xstrdup(r->f[1].val);
		/* queue_fua as read on a DUT with a write-back cache, without CQE */
		row.mode = xstrdup(lab_mode_name(lab_mode_from_verified(r->f[2].val[0] == '1', 1, 0)));
		row.metric = xstrdup(r->f[3].val);
	} else {
		row.label = xasprintf("%s %s", r->f[0].val, r->f[1].val);
		row.mode = xstrdup(r->f[2].val);
		row.metric = xstrdup("wall_time");
	}
	*out = row;
	return 0;
bad_mode:
	excerpt(ex, sizeof ex, r->f[2].val);
	char modes[256];
	lab_mode_list(modes, sizeof modes, ", ");
	add_bad(c, r->line, "unknown mode '%s' (%s)", ex, modes);
	return -1;
}

static int cmp_bad(const void *a, const void *b)
{
	const struct csv_bad *x = a, *y = b;
	return (x->line > y->line) - (x->line < y->line);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int64_t *csv_map_slot(struct csv_map *m, const char *key, int *found)
{
	if (2 * (m->n + 1) > m->cap) {
		struct csv_map o = *m;
		m->cap = m->cap ? 2 * m->cap : 64;
		m->k = xcalloc(m->cap, sizeof *m->k);
		m->v = xcalloc(m->cap, sizeof *m->v);
		m->n = 0;
		for (size_t i = 0; i < o.cap; i++) {
			if (!o.k[i])
				continue;
			int f;
			*csv_map_slot(m, o.k[i], &f) = o.v[i];
			free(o.k[i]);
		}
		free(o.k);
		free(o.v);
	}
	size_t i = fnv1a(key) & (m->cap - 1);
	while (m->k[i]) {
		if (strcmp(m->k[i], key) == 0) {
			*found = 1;
			return &m->v[i];
		}
		i = (i + 1) & (m->cap - 1);
	}
	*found = 0;
	m->k[i] = xstrdup(key);
	m->n++;
	return &m->v[i];
}

void csv_map_free(struct csv_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->k[i]);
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- rendering in the published layout ----------------------------------------- */

bool csv_formula_like(const char *v)
{
	if (!v || !v[0] || !strchr("=+-@\t\r", v[0]))
		return false;
	double d;
	return lab_parse_double(v, &d) != LAB_OK;
}

void csv_put_field(struct lab_buf *b, const char *v)
{
	if (!v)
		v = "";
	bool formula = csv_formula_like(v);
	if (formula)
		lab_buf_append(b, "\"'", 2);
	if (!formula && !strpbrk(v, ",\"\r\n")) {
		lab_buf_append(b, v, strlen(v));
		return;
	}
	if (!formula)
		lab_buf_append(b, "\"", 1);
	for (const char *p = v; *p; p++) {
		if (*p == '"')
			lab_buf_append(b, "\"", 1);
		lab_buf_append(b, p, 1);
	}
	lab_buf_append(b, "\"", 1);
}

/* Lines are joined by the file's line end; the final one is added at the end. */
static void out_sep(struct csv_out *r)
{
	if (r->any)
		lab_buf_append(r->b, r->eol, strlen(r->eol));
	r->any = 1;
}

void csv_render_head(struct csv_out *r, const char *comments, const char *header)
{
	for (const char *p = comments; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		out_sep(r);
		lab_buf_append(r->b, p, n);
		p += n + (nl ? 1 : 0);
	}
	out_sep(r);
	lab_buf_append(r->b, header, strlen(header));
}

void csv_render_row(struct csv_out *r, enum csv_layout l, const char *key, const char *metric,
		    int run, const char *value_text)
{
	out_sep(r);
	lab_buf_append(r->b, key, strlen(key));
	lab_buf_append(r->b, ",", 1);
	if (l == CSV_ANDROBENCH) {
		csv_put_field(r->b, metric);
		lab_buf_append(r->b, ",", 1);
	}
	lab_buf_printf(r->b, "%d,", run);
	lab_buf_append(r->b, value_text, strlen(value_text));
}


/* ---- content hash ----------------------------------------------------------------- */

/* Trimmed, inner runs of blanks made one space: re-saving a file may change those. */
static void norm_append(struct lab_buf *b, const char *s)
{
	s = s ? s : "";
	while (*s == ' ' || *s == '\t')
		s++;
	bool blank = false;
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t') {
			blank = true;
			continue;
		}
		if (blank)
			lab_buf_append(b, " ", 1);
		blank = false;
		lab_buf_append(b, s, 1);
	}
}

void csv_content_add(struct csv_content *c, const char *label, const char *board,
		     const char *host, const char *mode, const char *metric, int run, double value)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	const char *const fields[] = {label, board, host, mode, metric};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(fields); i++) {
		norm_append(&b, fields[i]);
		lab_buf_append(&b, "\x1f", 1);
	}
	char num[40];
	lab_fmt_double(num, sizeof num, value);
	lab_buf_printf(&b, "%d\x1f%s", run, num);
	unsigned char md[32];
	lab_sha256_raw(b.data, b.len, md);
	lab_buf_free(&b);
	/* the sum of the rows' digests mod 2^256: the same for any order of the rows */
	unsigned carry = 0;
	for (int i = 31; i >= 0; i--) {
		unsigned t = (unsigned)c->sum[i] + md[i] + carry;
		c->sum[i] = (unsigned char)t;
		carry = t >> 8;
	}
	c->n++;
}

void csv_content_hex(const struct csv_content *c, const char *layout, char hex[65])
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	lab_buf_printf(&b, "emmclab-rows/1\n%s\n%" PRIu64 "\n", layout, c->n);
	lab_buf_append(&b, c->sum, sizeof c->sum);
	lab_sha256(b.data, b.len, hex);
	lab_buf_free(&b);
}

/* ---- the scratch (store_scratch.c): the good rows on disk ---------------------------- */

int csv_id_get(struct csv_file *f, const char *key, int64_t *id, struct lab_err *e)
{
	return store_scratch_id_get(f->scratch, key, id, e);
}

int csv_id_put(struct csv_file *f, const char *key, int64_t id, struct lab_err *e)
{
	return store_scratch_id_put(f->scratch, key, id, e);
}

int csv_each_row(struct csv_file *f, int (*cb)(const struct csv_row *r, void *arg), void *arg,
		 struct lab_err *e)
{
	return store_scratch_each_row(f->scratch, cb, arg, e);
}

/* ---- scan ---------------------------------------------------------------------------- */

static void rd_feed(struct csv_rd *rd, const char *p, size_t n)
{
	if (n == 0)
		return;
	lab_sha256_update(rd->sha, p, n);
	rd->bytes += n;
	if (!rd->seen_lf) {
		const char *lf = memchr(p, '\n', n);
		if (lf) {
			rd->seen_lf = true;
			rd->crlf = (lf > p ? lf[-1] : rd->last) == '\r';
		}
	}
	rd->last = p[n - 1];
}

/* Keep at least CSV_MAX_RECORD bytes past pos in the window, or all that is left. */
static int rd_fill(struct csv_rd *rd, struct lab_err *e)
{
	if (rd->fd < 0 || rd->eof || rd->len - rd->pos >= CSV_MAX_RECORD)
		return LAB_OK;
	memmove(rd->win, rd->win + rd->pos, rd->len - rd->pos);
	rd->len -= rd->pos;
	rd->pos = 0;
	while (rd->len < CSV_WINDOW && !rd->eof) {
		ssize_t n = read(rd->fd, rd->win + rd->len, CSV_WINDOW - rd->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lab_err_set(e, LAB_EINFRA, "%s: read: %s", rd->path, strerror(errno));
		if (n == 0)
			rd->eof = true;
		rd_feed(rd, rd->win + rd->len, (size_t)n);
		rd->len += (size_t)n;
	}
	return LAB_OK;
}

/* A record ran into the end of the window: drop the rest of its physical line. */
static int rd_skip_overlong(struct csv_rd *rd, struct lab_err *e)
{
	for (;;) {
		const char *lf = memchr(rd->buf + rd->pos, '\n', rd->len - rd->pos);
		if (lf) {
			rd->pos = (size_t)(lf - rd->buf) + 1;
			rd->line++;
			return LAB_OK;
		}
		rd->pos = rd->len;
		if (rd->eof)
			return LAB_OK;
		int rc = rd_fill(rd, e);
		if (rc)
			return rc;
		if (rd->len == 0 && rd->eof)
			return LAB_OK;
	}
}

struct scan {
	struct parse_ctx c;
	struct csv_rd *rd;
	struct csv_content content;
	bool rows_exact; /* every good row re-renders as written */
	struct lab_buf render;
};

/* A good row: into the scratch, or a duplicate (the later line is the bad one). */
static int keep_row(struct scan *sc, const struct csv_rec *rec, struct csv_row *row,
		    struct lab_err *e)
{
	struct csv_file *f = sc->c.f;
	int first = 0;
	int rc = store_scratch_add_row(f->scratch, row, &first, e);
	if (rc)
		return rc;
	if (first) {
		char ex[64];
		excerpt(ex, sizeof ex, row->key);
		add_bad(&sc->c, row->line, "duplicate run %d for %s%s%s (first on line %d)", row->run,
			ex, f->layout == CSV_ANDROBENCH ? " " : "",
			f->layout == CSV_ANDROBENCH ? row->metric : "", first);
		return LAB_OK;
	}
	f->nrows++;
	csv_content_add(&sc->content, row->label, row->board, row->host, row->mode, row->metric,
			row->run, row->value);
	if (!sc->rows_exact)
		return LAB_OK;
	/* Export renders every row of a job with the key of its first row. */
	bool same;
	if ((rc = store_scratch_first_key(f->scratch, row->group, row->key, &same, e)))
		return rc;
	if (!same)
		sc->rows_exact = false;
	struct csv_out out = {.b = &sc->render, .eol = ""};
	sc->render.len = 0;
	csv_render_row(&out, f->layout, row->key, row->metric, row->run, row->value_text);
	if (sc->render.len != rec->end - rec->start ||
	    memcmp(sc->render.data, sc->rd->buf + rec->start, sc->render.len) != 0)
		sc->rows_exact = false;
	return LAB_OK;
}

static int scan(struct csv_rd *rd, const char *name, struct csv_file *f, struct lab_err *e)
{
	struct scan sc = {.c = {.f = f}, .rd = rd, .rows_exact = true};
	struct csv_rec rec = {0};
	struct lab_buf comments;
	int rc = store_scratch_new(&f->scratch, e);
	if (rc)
		return rc;
	lab_buf_init(&comments, 1u << 20);
	lab_buf_init(&sc.render, 0);
	int header_seen = 0, anomalies = 0;
	for (;;) {
		if ((rc = rd_fill(rd, e)))
			break;
		if (read_record(rd, &rec) == REC_EOF)
			break;
		if (rd->fd >= 0 && !rd->eof && rd->pos >= rd->len) {
			/* longer than the window allows: bad, and skipped to its line end */
			int line = rec.line;
			rec_clear(&rec);
			rec.kind = REC_DATA;
			rec.line = line;
			rec.err = "record longer than 512 KiB";
			if ((rc = rd_skip_overlong(rd, e)))
				break;
		}
		if (rec.had_eol && rec.eol_len != (rd->crlf ? 2 : 1))
			anomalies++; /* mixed line ends: export would use one */
		if (rec.kind == REC_BLANK) {
			anomalies++;
			continue;
		}
		if (rec.kind == REC_COMMENT) {
			if (comments.len)
				lab_buf_append(&comments, "\n", 1);
			if (lab_buf_append(&comments, rd->buf + rec.start, rec.end - rec.start))
				anomalies++;
			/* kept as a C string: a NUL byte would cut it */
			if (header_seen || memchr(rd->buf + rec.start, '\0', rec.end - rec.start))
				anomalies++;
			continue;
		}
		if (!header_seen) {
			if (rec.err) {
				rc = lab_err_set(e, LAB_EUSAGE, "%s:%d: bad header: %s", name,
						 rec.line, rec.err);
				break;
			}
			if (header_matches(&rec, androbench_cols)) {
				f->layout = CSV_ANDROBENCH;
			} else if (header_matches(&rec, fscopy_cols)) {
				f->layout = CSV_FSCOPY;
			} else {
				char ex[64];
				char *h = xstrndup(rd->buf + rec.start, rec.end - rec.start);
				excerpt(ex, sizeof ex, h);
				free(h);
				rc = lab_err_set(e, LAB_EUSAGE,
						 "%s:%d: unknown layout, header '%s' (known: "
						 "board,controller,queue_fua,workload,run,mib_per_s and "
						 "dut,module,mode,run,seconds)", name, rec.line, ex);
				break;
			}
			f->header = xstrndup(rd->buf + rec.start, rec.end - rec.start);
			header_seen = 1;
			continue;
		}
		if (rec.err) {
			add_bad(&sc.c, rec.line, "%s", rec.err);
			continue;
		}
		struct csv_row row;
		if (check_row(&sc.c, rd->buf, &rec, &row) == 0) {
			rc = keep_row(&sc, &rec, &row, e);
			free_row(&row);
			if (rc)
				break;
		}
	}
	rec_clear(&rec);
	lab_buf_free(&sc.render);
	if (rc == LAB_OK && !header_seen)
		rc = lab_err_set(e, LAB_EUSAGE, "%s: no header line (empty file or only comments)",
				 name);
	if (rc == LAB_OK) {
		f->comments = comments.len ? xstrndup(comments.data, comments.len) : NULL;
		if (f->nbad)
			qsort(f->bad, f->nbad, sizeof *f->bad, cmp_bad);
		f->exact = !anomalies && f->nbad_total == 0 && sc.rows_exact;
		csv_content_hex(&sc.content, csv_layout_name(f->layout), f->content_sha256);
	}
	lab_buf_free(&comments);
	return rc;
}

static struct csv_file *file_new(const char *name)
{
	struct csv_file *f = xcalloc(1, sizeof *f);
	const char *base = strrchr(name, '/');
	f->name = xstrdup(base ? base + 1 : name);
	return f;
}

struct collect {
	struct csv_file *f;
	size_t cap;
};

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static int collect_row(const struct csv_row *r, void *arg)
{
	struct collect *c = arg;
	struct csv_file *f = c->f;
	if (f->nrows == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		f->rows = xreallocarray(f->rows, c->cap, sizeof *f->rows);
	}
	f->rows[f->nrows++] = (struct csv_row){
		.line = r->line,
		.key = xstrdup(r->key),
		.group = xstrdup(r->group),
		.label = dup_or_null(r->label),
		.board = dup_or_null(r->board),
		.host = dup_or_null(r->host),
		.mode = dup_or_null(r->mode),
		.metric = xstrdup(r->metric),
		.run = r->run,
		.value = r->value,
		.value_text = xstrdup(r->value_text),
	};
	return LAB_OK;
}

int csv_parse(const char *buf, size_t len, const char *name, struct csv_file **out,
	      struct lab_err *e)
{
	struct csv_file *f = file_new(name);
	struct csv_rd rd = {.buf = buf, .len = len, .line = 1, .fd = -1, .eof = true};
	f->bytes = len;
	lab_sha256(buf, len, f->sha256);
	const char *nl = memchr(buf, '\n', len);
	rd.crlf = f->crlf = nl && nl > buf && nl[-1] == '\r';
	f->final_eol = len > 0 && buf[len - 1] == '\n';
	int rc = scan(&rd, name, f, e);
	if (rc) {
		csv_free(f);
		*out = NULL;
		return rc;
	}
	/* the rows in memory too, for callers that look at them (tests, fuzzing) */
	struct collect col = {.f = f};
	f->nrows = 0;
	rc = store_scratch_each_row(f->scratch, collect_row, &col, e);
	if (rc) {
		csv_free(f);
		*out = NULL;
		return rc;
	}
	*out = f;
	return LAB_OK;
}

int csv_read_file(const char *path, struct csv_file **out, struct lab_err *e)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lab_err_set(e, errno == ENOENT ? LAB_EUSAGE : LAB_EINFRA, "%s: %s", path,
				   strerror(errno));
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return lab_err_set(e, LAB_EUSAGE, "%s: is a directory", path);
	}
	struct csv_file *f = file_new(path);
	struct csv_rd rd = {.line = 1, .fd = fd, .path = path, .sha = lab_sha256_new()};
	rd.win = xmalloc(CSV_WINDOW);
	rd.buf = rd.win;
	int rc = scan(&rd, path, f, e);
	close(fd);
	free(rd.win);
	lab_sha256_final(rd.sha, f->sha256);
	if (rc) {
		csv_free(f);
		return rc;
	}
	f->bytes = (size_t)rd.bytes;
	f->crlf = rd.crlf;
	f->final_eol = rd.bytes > 0 && rd.last == '\n';
	*out = f;
	return LAB_OK;
}

void csv_free(struct csv_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->rows && i < f->nrows; i++)
		free_row(&f->rows[i]);
	for (size_t i = 0; i < f->nbad; i++)
		free(f->bad[i].reason);
	store_scratch_free(f->scratch);
	free(f->rows);
	free(f->bad);
	free(f->name);
	free(f->comments);
	free(f->header);
	free(f);
}
