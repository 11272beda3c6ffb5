/* json.c - see json.h. */
#include "json.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int scalar_text(const json_t *v, const char *path, char *out, size_t outsz,
		       struct lab_err *e)
{
	char num[40];
	const char *s;
	size_t n;
	switch (json_typeof(v)) {
	case JSON_STRING:
		s = json_string_value(v);
		n = json_string_length(v);
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		s = num;
		n = strlen(num);
		break;
	case JSON_REAL:
		lab_fmt_double(num, sizeof num, json_real_value(v));
		s = num;
		n = strlen(num);
		break;
	case JSON_TRUE: s = "true"; n = 4; break;
	case JSON_FALSE: s = "false"; n = 5; break;
	case JSON_NULL: s = "null"; n = 4; break;
	default:
		return LAB_ERR(e, LAB_EPROTO, "key '%s' is not a scalar", path);
	}
	if (outsz) {
		if (n >= outsz)
			n = outsz - 1;
		memcpy(out, s, n);
		out[n] = '\0';
	}
	return LAB_OK;
}

int json_get(const char *text, size_t len, const char *path, char *out, size_t outsz,
	     struct lab_err *e)
{
	if (outsz)
		out[0] = '\0';
	/* Any value at the top, so that a bare scalar is "not an object" like a device's
	 * odd answer, and the whole text must parse: a truncated answer is not an answer. */
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_DECODE_ANY, &je);
	if (!root)
		return LAB_ERR(e, LAB_EPROTO, "answer is not valid JSON (%s at byte %d)", je.text,
			       je.position);
	const json_t *v = root;
	int rc = LAB_OK;
	for (const char *seg = path;;) {
		size_t seglen = strcspn(seg, ".");
		if (json_is_array(v) && seglen && seglen == strspn(seg, "0123456789")) {
			v = json_array_get(v, strtoul(seg, NULL, 10));
		} else if (json_is_object(v)) {
			v = json_object_getn(v, seg, seglen);
		} else {
			rc = LAB_ERR(e, LAB_EPROTO, "no key '%s' (not an object)", path);
			break;
		}
		if (!v) {
			rc = LAB_ERR(e, LAB_EPROTO, "no key '%s' in the answer", path);
			break;
		}
		if (seg[seglen] != '.') {
			rc = scalar_text(v, path, out, outsz, e);
			break;
		}
		seg += seglen + 1;
	}
	json_decref(root);
	return rc;
}

void json_buf_escape(struct lab_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;
	for (; *p; p++) {
		const char *esc = NULL;
		char u[8];
		switch (*p) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '<': esc = "\\u003c"; break; /* safe to embed in HTML <script> too */
		default:
			if (*p < 0x20 || *p == 0x7f) {
				snprintf(u, sizeof u, "\\u%04x", *p);
				esc = u;
			}
		}
		if (!esc)
			continue;
		lab_buf_append(b, run, (size_t)(p - run));
		lab_buf_append(b, esc, strlen(esc));
		run = p + 1;
	}
	lab_buf_append(b, run, (size_t)(p - run));
}

void json_buf_str(struct lab_buf *b, const char *s)
{
	lab_buf_append(b, "\"", 1);
	json_buf_escape(b, s);
	lab_buf_append(b, "\"", 1);
}

void json_put_str(FILE *f, const char *s)
{
	struct lab_buf b;
	lab_buf_init(&b, 0);
	json_buf_str(&b, s);
	fwrite(b.data, 1, b.len, f);
	lab_buf_free(&b);
}

void json_put_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.10g", v);
	else
		fputs("null", f);
}
