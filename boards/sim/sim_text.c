/*
 * sim_text.c - command-line splitting and tokenising (a small subset of
 * POSIX sh / U-Boot hush: quotes, backslash, $VAR ${VAR} $?, ; && || |,
 * > >> < 2> 2>&1), string maps, base64 and JSON escaping.
 */
#include "sim_board.h"

#include <stdlib.h>
#include <string.h>

/* ---- string map ---- */

const char *sim_kv_get(const struct sim_kv *kv, const char *k)
{
	for (size_t i = 0; i < kv->n; i++)
		if (strcmp(kv->k[i], k) == 0)
			return kv->v[i];
	return NULL;
}

void sim_kv_set(struct sim_kv *kv, const char *k, const char *v)
{
	size_t i = 0;
	for (; i < kv->n; i++) {
		int c = strcmp(kv->k[i], k);
		if (c == 0) {
			free(kv->v[i]);
			if (v) {
				kv->v[i] = xstrdup(v);
			} else {
				free(kv->k[i]);
				memmove(kv->k + i, kv->k + i + 1, (kv->n - i - 1) * sizeof *kv->k);
				memmove(kv->v + i, kv->v + i + 1, (kv->n - i - 1) * sizeof *kv->v);
				kv->n--;
			}
			return;
		}
		if (c > 0)
			break; /* kept sorted: printenv lists in order */
	}
	if (!v)
		return;
	if (kv->n == kv->cap) {
		kv->cap = kv->cap ? 2 * kv->cap : 16;
		kv->k = xreallocarray(kv->k, kv->cap, sizeof *kv->k);
		kv->v = xreallocarray(kv->v, kv->cap, sizeof *kv->v);
	}
	memmove(kv->k + i + 1, kv->k + i, (kv->n - i) * sizeof *kv->k);
	memmove(kv->v + i + 1, kv->v + i, (kv->n - i) * sizeof *kv->v);
	kv->k[i] = xstrdup(k);
	kv->v[i] = xstrdup(v);
	kv->n++;
}

void sim_kv_clear(struct sim_kv *kv)
{
	for (size_t i = 0; i < kv->n; i++) {
		free(kv->k[i]);
		free(kv->v[i]);
	}
	free(kv->k);
	free(kv->v);
	kv->k = kv->v = NULL;
	kv->n = kv->cap = 0;
}

/* dst becomes a copy of src.  Every power-on loads the saved environment
 * over the one in RAM, which mostly holds the same names and values: only
 * the values that differ are copied then (copying all of them was a tenth of
 * the simulator's allocations). */
void sim_kv_copy(struct sim_kv *dst, const struct sim_kv *src)
{
	bool same_names = dst->n == src->n;
	for (size_t i = 0; i < src->n && same_names; i++)
		same_names = strcmp(dst->k[i], src->k[i]) == 0;
	if (same_names) {
		for (size_t i = 0; i < src->n; i++) {
			if (strcmp(dst->v[i], src->v[i]) != 0) {
				free(dst->v[i]);
				dst->v[i] = xstrdup(src->v[i]);
			}
		}
		return;
	}
	sim_kv_clear(dst);
	for (size_t i = 0; i < src->n; i++) /* src is sorted: each goes at the end */
		sim_kv_set(dst, src->k[i], src->v[i]);
}

/* ---- lists ---- */

size_t sim_split_list(const char *line, struct sim_seg *segs, size_t max)
{
	size_t n = 0;
	const char *start = line;
	int op = SIM_OP_NONE;
	char q = 0;
	const char *p = line;
	for (;; p++) {
		char c = *p;
		int nop = -1;
		size_t skip = 0;
		if (c == '\0') {
			nop = SIM_OP_NONE;
		} else if (q) {
			if (c == '\\' && q == '"' && p[1])
				p++;
			else if (c == q)
				q = 0;
			continue;
		} else if (c == '\\' && p[1]) {
			p++;
			continue;
		} else if (c == '\'' || c == '"') {
			q = c;
			continue;
		} else if (c == ';') {
			nop = SIM_OP_SEQ;
			skip = 1;
		} else if (c == '&' && p[1] == '&') {
			nop = SIM_OP_AND;
			skip = 2;
		} else if (c == '|' && p[1] == '|') {
			nop = SIM_OP_OR;
			skip = 2;
		} else if (c == '&') {
			nop = SIM_OP_SEQ; /* no job control: background runs in sequence */
			skip = 1;
		} else {
			continue;
		}
		size_t len = (size_t)(p - start);
		const char *s = start;
		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len && n < max) {
			segs[n].text = xstrndup(s, len);
			segs[n].op = n == 0 ? SIM_OP_NONE : op;
			n++;
		}
		if (c == '\0')
			break;
		op = nop;
		p += skip - 1;
		start = p + 1;
	}
	return n;
}

void sim_segs_free(struct sim_seg *segs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(segs[i].text);
}

/* ---- tokens ---- */

static bool is_name_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

static const char *expand_var(const char *p, sim_var_fn var, void *ctx, struct lab_buf *w)
{
	/* p points after '$' */
	char name[128];
	size_t n = 0;
	if (*p == '{') {
		const char *e = strchr(p, '}');
		if (!e) {
			lab_buf_append(w, "$", 1);
			return p;
		}
		n = (size_t)(e - p - 1);
		if (n >= sizeof name)
			n = sizeof name - 1;
		memcpy(name, p + 1, n);
		name[n] = '\0';
		p = e + 1;
	} else if (*p == '?' || *p == '$' || *p == '#') {
		name[0] = *p;
		name[1] = '\0';
		p++;
	} else if (is_name_char(*p, true)) {
		while (is_name_char(*p, n == 0) && n < sizeof name - 1)
			name[n++] = *p++;
		name[n] = '\0';
	} else {
		lab_buf_append(w, "$", 1);
		return p;
	}
	const char *v = var ? var(ctx, name) : NULL;
	if (v)
		lab_buf_append(w, v, strlen(v));
	return p;
}

static void push_word(struct sim_tok *toks, size_t max, size_t *n, struct lab_buf *w, bool *have)
{
	if (!*have)
		return;
	if (*n < max) {
		toks[*n].type = TOK_WORD;
		toks[*n].fd = 0;
		toks[*n].s = xstrdup(lab_buf_cstr(w));
		(*n)++;
	}
	w->len = 0;
	if (w->data)
		w->data[0] = '\0'; /* a next word with nothing appended ($UNSET) is empty, not this one */
	*have = false;
}

static void push_op(struct sim_tok *toks, size_t max, size_t *n, int type, int fd)
{
	if (*n < max) {
		toks[*n].type = type;
		toks[*n].fd = fd;
		toks[*n].s = NULL;
		(*n)++;
	}
}

size_t sim_tokenize(const char *s, sim_var_fn var, void *ctx, struct sim_tok *toks, size_t max)
{
	/* the word being built: one buffer kept from call to call (the
	 * simulator is one thread, and var() does not tokenize) */
	static struct lab_buf w = {.max = 65536};
	w.len = 0;
	if (w.data)
		w.data[0] = '\0';
	size_t n = 0;
	bool have = false;
	const char *p = s;
	while (*p) {
		char c = *p;
		if (c == ' ' || c == '\t') {
			push_word(toks, max, &n, &w, &have);
			p++;
		} else if (c == '\'') {
			const char *e = strchr(p + 1, '\'');
			size_t len = e ? (size_t)(e - p - 1) : strlen(p + 1);
			lab_buf_append(&w, p + 1, len);
			have = true;
			p += len + 1 + (e ? 1 : 0);
		} else if (c == '"') {
			p++;
			have = true;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1] && strchr("\"\\$`", p[1])) {
					lab_buf_append(&w, p + 1, 1);
					p += 2;
				} else if (*p == '$') {
					p = expand_var(p + 1, var, ctx, &w);
				} else {
					lab_buf_append(&w, p, 1);
					p++;
				}
			}
			if (*p == '"')
				p++;
		} else if (c == '\\' && p[1]) {
			lab_buf_append(&w, p + 1, 1);
			have = true;
			p += 2;
		} else if (c == '$') {
			p = expand_var(p + 1, var, ctx, &w);
			have = true;
		} else if (c == '|') {
			push_word(toks, max, &n, &w, &have);
			push_op(toks, max, &n, TOK_PIPE, 0);
			p++;
		} else if ((c == '2' || c == '1') && !have && p[1] == '>') {
			int fd = c - '0';
			if (p[2] == '&' && p[3] == '1') {
				push_op(toks, max, &n, TOK_DUP, fd);
				p += 4;
			} else if (p[2] == '>') {
				push_op(toks, max, &n, TOK_APPEND, fd);
				p += 3;
			} else {
				push_op(toks, max, &n, TOK_OUT, fd);
				p += 2;
			}
		} else if (c == '>') {
			push_word(toks, max, &n, &w, &have);
			if (p[1] == '>') {
				push_op(toks, max, &n, TOK_APPEND, 1);
				p += 2;
			} else {
				push_op(toks, max, &n, TOK_OUT, 1);
				p++;
			}
		} else if (c == '<') {
			push_word(toks, max, &n, &w, &have);
			push_op(toks, max, &n, TOK_IN, 0);
			p++;
		} else {
			lab_buf_append(&w, p, 1);
			have = true;
			p++;
		}
	}
	push_word(toks, max, &n, &w, &have);
	return n;
}

void sim_toks_free(struct sim_tok *toks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(toks[i].s);
}

/* ---- base64 ---- */

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

bool sim_base64_decode(const char *in, size_t n, struct lab_buf *out)
{
	uint32_t acc = 0;
	int bits = 0;
	bool pad = false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad = true;
			continue;
		}
		int v = b64val(c);
		if (v < 0 || pad)
			return false;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			unsigned char byte = (unsigned char)(acc >> bits);
			if (lab_buf_append(out, &byte, 1) != 0)
				return false;
		}
	}
	return true;
}
