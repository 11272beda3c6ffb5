/*
 * csv.c - reading published CSV measurements (androbench, fscopy layouts):
 * records, validation, duplicates, and rendering rows back in the
 * published layout.  See csv.h and docs/results-schema.md.
 *
 * The parser is RFC 4180 (quoted fields may hold commas, doubled quotes and
 * line ends; LF or CRLF records) plus '#' comment lines.  It works on the
 * whole buffer, caps every field, and never trusts the input: each problem
 * becomes a (line, reason) entry rather than an abort.
 */
#include "csv.h"
#include "mode.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

struct csv_rd {
	const char *buf;
	size_t len, pos;
	int line; /* line of buf[pos] */
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
		}
		return r->kind;
	}
}

/* ---- validation -------------------------------------------------------------- */

struct parse_ctx {
	struct csv_file *f;
	size_t cap_rows, cap_bad;
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

static void check_row(struct parse_ctx *c, const char *buf, const struct csv_rec *r)
{
	struct csv_file *f = c->f;
	size_t want = f->layout == CSV_ANDROBENCH ? 6 : 5;
	char ex[64];
	if (r->nf != want) {
		add_bad(c, r->line, "expected %zu columns, found %zu", want, r->nf);
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		if (r->f[i].val[0] == '\0') {
			add_bad(c, r->line, "empty %s",
				(f->layout == CSV_ANDROBENCH ? androbench_cols : fscopy_cols)[i]);
			return;
		}
	}
	struct csv_row row = {.line = r->line};
	const char *run_t, *val_t;
	if (f->layout == CSV_ANDROBENCH) {
		const char *q = r->f[2].val;
		if (strcmp(q, "0") != 0 && strcmp(q, "1") != 0) {
			excerpt(ex, sizeof ex, q);
			add_bad(c, r->line, "queue_fua must be 0 or 1, not '%s'", ex);
			return;
		}
		if (r->f[3].val[0] == '\0') {
			add_bad(c, r->line, "empty workload");
			return;
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
		return;
	}
	if (!decimal_text(val_t) || lab_parse_double(val_t, &row.value) || !isfinite(row.value)) {
		excerpt(ex, sizeof ex, val_t);
		add_bad(c, r->line, "value '%s' is not a number", ex);
		return;
	}
	if (row.value < 0 || val_t[0] == '-') {
		excerpt(ex, sizeof ex, val_t);
		add_bad(c, r->line, "negative value %s", ex);
		return;
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
	if (f->nrows == c->cap_rows) {
		c->cap_rows = c->cap_rows ? 2 * c->cap_rows : 64;
		f->rows = xreallocarray(f->rows, c->cap_rows, sizeof *f->rows);
	}
	f->rows[f->nrows++] = row;
	return;
bad_mode:
	excerpt(ex, sizeof ex, r->f[2].val);
	char modes[256];
	lab_mode_list(modes, sizeof modes, ", ");
	add_bad(c, r->line, "unknown mode '%s' (%s)", ex, modes);
}

/* ---- duplicates ------------------------------------------------------------------ */

static int cmp_rowp(const void *a, const void *b)
{
	const struct csv_row *x = *(const struct csv_row *const *)a;
	const struct csv_row *y = *(const struct csv_row *const *)b;
	int c = strcmp(x->group, y->group);
	if (!c)
		c = strcmp(x->metric, y->metric);
	if (!c)
		c = (x->run > y->run) - (x->run < y->run);
	if (!c)
		c = (x->line > y->line) - (x->line < y->line);
	return c;
}

static int cmp_bad(const void *a, const void *b)
{
	const struct csv_bad *x = a, *y = b;
	return (x->line > y->line) - (x->line < y->line);
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

/* A run number twice in one group (and workload) is a bad line: the later one. */
static void drop_duplicates(struct parse_ctx *c)
{
	struct csv_file *f = c->f;
	if (f->nrows < 2)
		return;
	struct csv_row **idx = xcalloc(f->nrows, sizeof *idx);
	for (size_t i = 0; i < f->nrows; i++)
		idx[i] = &f->rows[i];
	qsort(idx, f->nrows, sizeof *idx, cmp_rowp);
	char *dead = xcalloc(f->nrows, 1);
	for (size_t i = 1; i < f->nrows; i++) {
		const struct csv_row *p = idx[i - 1], *r = idx[i];
		if (strcmp(p->group, r->group) || strcmp(p->metric, r->metric) || p->run != r->run)
			continue;
		size_t first = i - 1;
		while (first > 0 && dead[idx[first] - f->rows])
			first--;
		char ex[64];
		excerpt(ex, sizeof ex, r->key);
		add_bad(c, r->line, "duplicate run %d for %s%s%s (first on line %d)", r->run, ex,
			f->layout == CSV_ANDROBENCH ? " " : "",
			f->layout == CSV_ANDROBENCH ? r->metric : "", idx[first]->line);
		dead[r - f->rows] = 1;
	}
	size_t j = 0;
	for (size_t i = 0; i < f->nrows; i++) {
		if (dead[i])
			free_row(&f->rows[i]);
		else
			f->rows[j++] = f->rows[i];
	}
	f->nrows = j;
	free(dead);
	free(idx);
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

/* Would export --layout original give back these bytes?  Rows of one job
 * share the key of the job's first row, as the store keeps one per job. */
static int check_exact(const struct csv_file *f, const char *buf, size_t len)
{
	struct lab_buf b;
	struct csv_out r = {.b = &b, .eol = f->crlf ? "\r\n" : "\n"};
	lab_buf_init(&b, 0);
	csv_render_head(&r, f->comments, f->header);
	struct csv_map first = {0};
	for (size_t i = 0; i < f->nrows; i++) {
		int found;
		int64_t *k = csv_map_slot(&first, f->rows[i].group, &found);
		if (!found)
			*k = (int64_t)i;
		const char *key = f->rows[*k].key;
		csv_render_row(&r, f->layout, key, f->rows[i].metric, f->rows[i].run,
			   f->rows[i].value_text);
		if (b.len > len)
			break;
	}
	csv_map_free(&first);
	if (f->final_eol)
		lab_buf_append(&b, r.eol, strlen(r.eol));
	int same = b.len == len && memcmp(b.data, buf, len) == 0;
	lab_buf_free(&b);
	return same;
}

/* ---- parse ------------------------------------------------------------------------- */

int csv_parse(const char *buf, size_t len, const char *name, struct csv_file **out,
	      struct lab_err *e)
{
	struct csv_file *f = xcalloc(1, sizeof *f);
	struct parse_ctx c = {.f = f};
	struct csv_rd rd = {.buf = buf, .len = len, .line = 1};
	struct csv_rec rec = {0};
	struct lab_buf comments;
	int rc = LAB_OK;
	const char *base = strrchr(name, '/');
	f->name = xstrdup(base ? base + 1 : name);
	f->bytes = len;
	lab_sha256(buf, len, f->sha256);
	const char *nl = memchr(buf, '\n', len);
	f->crlf = nl && nl > buf && nl[-1] == '\r';
	f->final_eol = len > 0 && buf[len - 1] == '\n';
	lab_buf_init(&comments, 1u << 20);

	int header_seen = 0, anomalies = 0;
	while (read_record(&rd, &rec) != REC_EOF) {
		if (rec.kind == REC_BLANK) {
			anomalies++;
			continue;
		}
		if (rec.kind == REC_COMMENT) {
			if (comments.len)
				lab_buf_append(&comments, "\n", 1);
			if (lab_buf_append(&comments, buf + rec.start, rec.end - rec.start))
				anomalies++;
			if (header_seen)
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
				char *h = xstrndup(buf + rec.start, rec.end - rec.start);
				excerpt(ex, sizeof ex, h);
				free(h);
				rc = lab_err_set(e, LAB_EUSAGE,
						 "%s:%d: unknown layout, header '%s' (known: "
						 "board,controller,queue_fua,workload,run,mib_per_s and "
						 "dut,module,mode,run,seconds)", name, rec.line, ex);
				break;
			}
			f->header = xstrndup(buf + rec.start, rec.end - rec.start);
			header_seen = 1;
			continue;
		}
		if (rec.err) {
			add_bad(&c, rec.line, "%s", rec.err);
			continue;
		}
		check_row(&c, buf, &rec);
	}
	rec_clear(&rec);
	if (rc == LAB_OK && !header_seen)
		rc = lab_err_set(e, LAB_EUSAGE, "%s: no header line (empty file or only comments)",
				 name);
	if (rc) {
		lab_buf_free(&comments);
		csv_free(f);
		*out = NULL;
		return rc;
	}
	f->comments = comments.len ? xstrndup(comments.data, comments.len) : NULL;
	lab_buf_free(&comments);
	drop_duplicates(&c);
	if (f->nbad)
		qsort(f->bad, f->nbad, sizeof *f->bad, cmp_bad);
	f->exact = !anomalies && f->nbad_total == 0 && check_exact(f, buf, len);
	*out = f;
	return LAB_OK;
}

int csv_read_file(const char *path, struct csv_file **out, struct lab_err *e)
{
	char *buf;
	size_t len;
	*out = NULL;
	int rc = lab_read_file(path, CSV_MAX_FILE, &buf, &len, e);
	if (rc)
		return rc;
	rc = csv_parse(buf, len, path, out, e);
	free(buf);
	return rc;
}

void csv_free(struct csv_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nrows; i++)
		free_row(&f->rows[i]);
	for (size_t i = 0; i < f->nbad; i++)
		free(f->bad[i].reason);
	free(f->rows);
	free(f->bad);
	free(f->name);
	free(f->comments);
	free(f->header);
	free(f);
}
