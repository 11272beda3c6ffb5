/*
 * json.h - the controller's one JSON module: reading through jansson, writing
 * through one escaper.
 *
 * Reading: json_get() parses a whole text with jansson and returns the scalar
 * at a dotted path, for device answers ("POWER1", "switch.output") and the
 * simulator's state.
 *
 * Writing: every JSON producer (reports, upload bodies, the run's config
 * record, db export) writes strings through json_buf_escape()/json_buf_str()/
 * json_put_str() and report numbers through json_put_num().  jansson's
 * json_dumps() is not used for writing because it cannot produce the bytes the
 * reports and uploads have always had: it leaves '<' and 0x7f raw (we write
 * \u003c, safe inside an HTML <script>, and \u007f), writes \b and \f short
 * (we write \u0008, \u000c), prints 5.0 as "5.0" (we print "%.10g": "5"), and
 * refuses strings that are not valid UTF-8 (console text and device names are
 * passed through byte for byte).
 *
 * No I/O besides the FILE the caller passes; not thread-safe only as far as
 * that FILE is not.
 */
#ifndef EMMCLAB_JSON_H
#define EMMCLAB_JSON_H

#include <stddef.h>
#include <stdio.h>
#include "util.h"

/*
 * Find the scalar at a dotted path of object keys (a decimal segment indexes
 * an array: "boards.0.name") in the JSON text (len bytes; the whole text must
 * be one JSON value) and copy it to out, truncated
 * to outsz: strings unescaped, integers in decimal, reals in the shortest form
 * that reads back the same, true/false/null as words.  LAB_OK when found;
 * LAB_EPROTO when the text is not JSON, or the key is absent or not a scalar
 * (out is ""), with the reason in e (may be NULL).
 */
int json_get(const char *text, size_t len, const char *path, char *out, size_t outsz,
	     struct lab_err *e);

/* The escaper: s (NULL = "") as the inside of a JSON string, no quotes. */
void json_buf_escape(struct lab_buf *b, const char *s);
/* s as a quoted JSON string, to a buffer or a stream. */
void json_buf_str(struct lab_buf *b, const char *s);
void json_put_str(FILE *f, const char *s);
/* A report number: "%.10g", null when not finite. */
void json_put_num(FILE *f, double v);

#endif
