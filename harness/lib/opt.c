/*
 * opt.c - option tables: defaults, parsing and validation of YAML maps into
 * structs, printing the resolved values back as YAML, help and schema text.
 *
 * Every error names the node's file:line:col and the key.  A value of `~`
 * (null) resets an option to its default.
 */
#include "opt.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void *field(void *obj, const struct opt *o)
{
	return (char *)obj + o->offset;
}

static const void *cfield(const void *obj, const struct opt *o)
{
	return (const char *)obj + o->offset;
}

static bool has_range(const struct opt *o)
{
	return o->min < o->max;
}

/* ---- durations and sizes ---- */

/* Parse "12", "12.5" at *s; returns false when there are no digits. */
static bool parse_decimal(const char **s, long double *out)
{
	const char *p = *s;
	long double v = 0;
	bool digits = false;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		digits = true;
		p++;
	}
	if (*p == '.') {
		long double scale = 0.1L;
		p++;
		while (*p >= '0' && *p <= '9') {
			v += (*p - '0') * scale;
			scale /= 10;
			digits = true;
			p++;
		}
	}
	if (!digits)
		return false;
	*s = p;
	*out = v;
	return true;
}

int opt_parse_duration(const char *s, uint64_t *ms)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
	};
	if (s == NULL || *s == '\0')
		return LAB_EUSAGE;
	const char *p = s;
	long double total = 0;
	long double v;
	if (!parse_decimal(&p, &v))
		return LAB_EUSAGE;
	if (*p == '\0') {
		total = v * 1000; /* bare number: seconds */
	} else {
		for (;;) {
			size_t best = 0, blen = 0;
			for (size_t i = 0; i < LAB_ARRAY_SIZE(units); i++) {
				size_t l = strlen(units[i].unit);
				if (strncmp(p, units[i].unit, l) == 0 && l > blen &&
				    !(p[l] >= 'a' && p[l] <= 'z')) {
					best = i;
					blen = l;
				}
			}
			if (blen == 0)
				return LAB_EUSAGE;
			total += v * units[best].ms;
			p += blen;
			if (*p == '\0')
				break;
			if (!parse_decimal(&p, &v))
				return LAB_EUSAGE;
		}
	}
	if (total > (long double)UINT64_MAX / 2)
		return LAB_EUSAGE;
	*ms = (uint64_t)llroundl(total);
	return LAB_OK;
}

int opt_parse_size(const char *s, uint64_t *bytes)
{
	static const struct { const char *unit; unsigned shift; } units[] = {
		{"", 0}, {"b", 0}, {"k", 10}, {"kb", 10}, {"kib", 10}, {"m", 20}, {"mb", 20},
		{"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40}, {"tb", 40}, {"tib", 40},
	};
	if (s == NULL || *s == '\0')
		return LAB_EUSAGE;
	const char *p = s;
	long double v;
	if (!parse_decimal(&p, &v))
		return LAB_EUSAGE;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(units); i++) {
		if (strcasecmp(p, units[i].unit) == 0) {
			long double b = v * (long double)(1ULL << units[i].shift);
			if (b > (long double)UINT64_MAX / 2)
				return LAB_EUSAGE;
			*bytes = (uint64_t)llroundl(b);
			return LAB_OK;
		}
	}
	return LAB_EUSAGE;
}

/* Shortest exact spelling: "1h30m", "250ms", "0s". */
void opt_format_duration(char *buf, size_t n, uint64_t ms)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
	};
	if (ms == 0) {
		lab_strlcpy(buf, "0s", n);
		return;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < LAB_ARRAY_SIZE(units); i++) {
		if (ms >= units[i].ms) {
			char part[32];
			snprintf(part, sizeof part, "%llu%s", (unsigned long long)(ms / units[i].ms),
				 units[i].unit);
			lab_strlcat(buf, part, n);
			ms %= units[i].ms;
		}
	}
}

void opt_format_size(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(units); i++) {
		unsigned shift = 40 - 10 * (unsigned)i;
		uint64_t u = 1ULL << shift;
		if (bytes >= u && bytes % u == 0) {
			snprintf(buf, n, "%llu%s", (unsigned long long)(bytes >> shift), units[i]);
			return;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)bytes);
}

static void format_bound(char *buf, size_t n, const struct opt *o, double v)
{
	if (o->type == OPT_DURATION)
		opt_format_duration(buf, n, (uint64_t)v);
	else if (o->type == OPT_SIZE)
		opt_format_size(buf, n, (uint64_t)v);
	else if (o->type == OPT_INT)
		snprintf(buf, n, "%lld", (long long)v);
	else
		snprintf(buf, n, "%g", v);
}

/* ---- values ---- */

size_t opt_argv_script(const struct opt_strlist *tmpl)
{
	static const char *const shells[] = {"sh", "bash", "dash", "ash", "ksh", "mksh", "zsh"};
	if (tmpl->n < 2)
		return 0;
	const char *prog = strrchr(tmpl->v[0], '/');
	prog = prog ? prog + 1 : tmpl->v[0];
	bool shell = false;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(shells); i++)
		shell |= strcmp(prog, shells[i]) == 0;
	if (!shell)
		return 0;
	for (size_t i = 1; i + 1 < tmpl->n && tmpl->v[i][0] == '-'; i++)
		if (tmpl->v[i][1] != '-' && strchr(tmpl->v[i], 'c'))
			return i + 1; /* -c, -ec, -xc ...: the next word is the script */
	return 0;
}

/* A "{word}" inside a shell script would be substituted and parsed again by the shell. */
static int argv_check(const struct opt *o, const struct cfg_node *val,
		      const struct opt_strlist *l, struct lab_err *e)
{
	size_t script = opt_argv_script(l);
	if (script == 0)
		return LAB_OK;
	for (const char *open = strchr(l->v[script], '{'); open; open = strchr(open + 1, '{')) {
		size_t k = strspn(open + 1, "abcdefghijklmnopqrstuvwxyz_");
		if (k && open[1 + k] == '}') {
			const struct cfg_node *at = val->kind == CFG_SEQ && script < val->n ?
							    val->items[script] : val;
			return cfg_error(e, at,
					 "'%s': placeholder {%.*s} inside the script of '%s -c': the "
					 "shell would parse the value again; pass it as an argument "
					 "after the script ('{%.*s}') and use \"$1\"",
					 o->key, (int)k, open + 1, l->v[0], (int)k, open + 1);
		}
	}
	return LAB_OK;
}

int opt_name_error(struct lab_err *e, const struct cfg_node *at, const char *key,
		   const char *value, const char *why)
{
	char shown[160];
	lab_text_escape(shown, sizeof shown, value);
	return cfg_error(e, at, "'%s': '%s' is not a valid name: %s "
			 "([A-Za-z0-9][A-Za-z0-9._+-]{0,63}, no '..'; see docs/configuration.md)",
			 key, shown, why);
}

static const char *kind_name(const struct cfg_node *n)
{
	switch (n->kind) {
	case CFG_MAP: return "a map";
	case CFG_SEQ: return "a list";
	case CFG_NULL: return "null";
	default: return "a scalar";
	}
}

static void strlist_free(struct opt_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void free_one(const struct opt *o, void *obj)
{
	void *p = field(obj, o);
	switch (o->type) {
	case OPT_STR:
	case OPT_NAME:
		free(*(char **)p);
		*(char **)p = NULL;
		break;
	case OPT_STRLIST:
	case OPT_ARGV:
		strlist_free(p);
		break;
	case OPT_NODE:
		cfg_free(*(struct cfg_node **)p);
		*(struct cfg_node **)p = NULL;
		break;
	case OPT_SECTION:
		opt_free(o->sub, p);
		break;
	default:
		break;
	}
}

static int range_error(const struct opt *o, const struct cfg_node *val, struct lab_err *e)
{
	char lo[48], hi[48];
	format_bound(lo, sizeof lo, o, o->min);
	format_bound(hi, sizeof hi, o, o->max);
	return cfg_error(e, val, "'%s' must be between %s and %s, got '%s'", o->key, lo, hi,
			 val->value);
}

static bool parse_bool_word(const char *s, bool *out)
{
	static const char *const t[] = {"true", "yes", "on", NULL};
	static const char *const f[] = {"false", "no", "off", NULL};
	for (size_t i = 0; t[i]; i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

static int set_default_one(const struct opt *o, void *obj, struct lab_err *e);

int opt_parse_value(const struct opt *o, const struct cfg_node *val, void *obj, struct lab_err *e)
{
	void *p = field(obj, o);
	if (val == NULL)
		return LAB_OK;
	if (val->kind == CFG_NULL) {
		if (o->flags & OPT_REQUIRED)
			return cfg_error(e, val, "'%s' needs a value", o->key);
		free_one(o, obj);
		return set_default_one(o, obj, e);
	}
	bool need_scalar = o->type != OPT_STRLIST && o->type != OPT_ARGV && o->type != OPT_NODE &&
			   o->type != OPT_SECTION;
	if (need_scalar && val->kind != CFG_SCALAR) {
		static const char *const what[] = {
			[OPT_STR] = "a string", [OPT_INT] = "an integer", [OPT_DOUBLE] = "a number",
			[OPT_BOOL] = "a boolean", [OPT_DURATION] = "a duration", [OPT_SIZE] = "a size",
			[OPT_ENUM] = "one word", [OPT_NAME] = "a name",
		};
		return cfg_error(e, val, "'%s' expects %s, got %s", o->key, what[o->type],
				 kind_name(val));
	}
	const char *s = val->value;
	switch (o->type) {
	case OPT_STR:
		free(*(char **)p);
		*(char **)p = xstrdup(s);
		return LAB_OK;
	case OPT_NAME: {
		/* "" means unset where the key is optional */
		const char *why = s[0] || (o->flags & OPT_REQUIRED) ? lab_name_check(s) : NULL;
		if (why)
			return opt_name_error(e, val, o->key, s, why);
		free(*(char **)p);
		*(char **)p = xstrdup(s);
		return LAB_OK;
	}
	case OPT_INT: {
		int64_t v;
		if (lab_parse_i64(s, &v))
			return cfg_error(e, val, "'%s' expects an integer, got '%s'", o->key, s);
		if (has_range(o) && ((double)v < o->min || (double)v > o->max))
			return range_error(o, val, e);
		*(int64_t *)p = v;
		return LAB_OK;
	}
	case OPT_DOUBLE: {
		double v;
		if (lab_parse_double(s, &v) || isinf(v))
			return cfg_error(e, val, "'%s' expects a number, got '%s'", o->key, s);
		if (has_range(o) && (v < o->min || v > o->max))
			return range_error(o, val, e);
		*(double *)p = v;
		return LAB_OK;
	}
	case OPT_BOOL: {
		bool v;
		if (!parse_bool_word(s, &v))
			return cfg_error(e, val,
					 "'%s' expects a boolean (true/false, yes/no, on/off), got '%s'",
					 o->key, s);
		*(bool *)p = v;
		return LAB_OK;
	}
	case OPT_DURATION: {
		uint64_t v;
		if (opt_parse_duration(s, &v))
			return cfg_error(e, val,
					 "'%s' expects a duration like 250ms, 30s, 5m, 8h or 1h30m, got '%s'",
					 o->key, s);
		if (has_range(o) && ((double)v < o->min || (double)v > o->max))
			return range_error(o, val, e);
		*(uint64_t *)p = v;
		return LAB_OK;
	}
	case OPT_SIZE: {
		uint64_t v;
		if (opt_parse_size(s, &v))
			return cfg_error(e, val,
					 "'%s' expects a size like 4096, 4k, 64MiB or 32G, got '%s'",
					 o->key, s);
		if (has_range(o) && ((double)v < o->min || (double)v > o->max))
			return range_error(o, val, e);
		*(uint64_t *)p = v;
		return LAB_OK;
	}
	case OPT_ENUM: {
		for (int i = 0; o->choices && o->choices[i]; i++) {
			if (strcmp(o->choices[i], s) == 0) {
				*(int *)p = i;
				return LAB_OK;
			}
		}
		char list[256] = "";
		for (int i = 0; o->choices && o->choices[i]; i++) {
			if (i)
				lab_strlcat(list, ", ", sizeof list);
			lab_strlcat(list, o->choices[i], sizeof list);
		}
		return cfg_error(e, val, "'%s': invalid value '%s' (choose one of: %s)", o->key, s,
				 list);
	}
	case OPT_STRLIST:
	case OPT_ARGV: {
		struct opt_strlist l = {0};
		if (val->kind == CFG_SCALAR) {
			l.v = xcalloc(1, sizeof *l.v);
			l.v[0] = xstrdup(s);
			l.n = 1;
		} else if (val->kind == CFG_SEQ) {
			l.v = xcalloc(val->n + 1, sizeof *l.v);
			for (size_t i = 0; i < val->n; i++) {
				const struct cfg_node *it = val->items[i];
				if (it->kind != CFG_SCALAR) {
					strlist_free(&l);
					return cfg_error(e, it, "'%s' items must be strings, got %s",
							 o->key, kind_name(it));
				}
				l.v[l.n++] = xstrdup(it->value);
			}
		} else {
			return cfg_error(e, val, "'%s' expects a string or a list of strings, got %s",
					 o->key, kind_name(val));
		}
		if (o->type == OPT_ARGV) {
			int rc = argv_check(o, val, &l, e);
			if (rc) {
				strlist_free(&l);
				return rc;
			}
		}
		strlist_free(p);
		*(struct opt_strlist *)p = l;
		return LAB_OK;
	}
	case OPT_NODE:
		cfg_free(*(struct cfg_node **)p);
		*(struct cfg_node **)p = cfg_clone(val);
		return LAB_OK;
	case OPT_SECTION:
		if (val->kind != CFG_MAP)
			return cfg_error(e, val, "'%s' expects a map, got %s", o->key, kind_name(val));
		return opt_parse(o->sub, val, p, e);
	}
	return cfg_error(e, val, "'%s': unsupported option type", o->key);
}

/* ---- defaults ---- */

static int set_default_one(const struct opt *o, void *obj, struct lab_err *e)
{
	void *p = field(obj, o);
	switch (o->type) {
	case OPT_STR:
	case OPT_NAME: *(char **)p = NULL; break;
	case OPT_INT: *(int64_t *)p = 0; break;
	case OPT_DOUBLE: *(double *)p = 0; break;
	case OPT_BOOL: *(bool *)p = false; break;
	case OPT_DURATION:
	case OPT_SIZE: *(uint64_t *)p = 0; break;
	case OPT_ENUM: *(int *)p = 0; break;
	case OPT_STRLIST:
	case OPT_ARGV: memset(p, 0, sizeof(struct opt_strlist)); break;
	case OPT_NODE: *(struct cfg_node **)p = NULL; break;
	case OPT_SECTION: return opt_defaults(o->sub, p, e);
	}
	if (o->def == NULL)
		return LAB_OK;
	char name[128];
	snprintf(name, sizeof name, "<default of '%s'>", o->key);
	struct cfg_node *n = NULL;
	int rc;
	if (o->type == OPT_STRLIST || o->type == OPT_ARGV || o->type == OPT_NODE) {
		rc = cfg_parse_buffer(name, o->def, strlen(o->def), &n, e);
		if (rc)
			return rc;
	} else {
		/* scalar defaults are taken literally ("" stays an empty string) */
		n = cfg_new_scalar(name, 1, 1, o->def);
		n->quoted = 1;
	}
	if (n->kind == CFG_NULL)
		rc = LAB_OK; /* "~" as a default: none */
	else
		rc = opt_parse_value(o, n, obj, e);
	cfg_free(n);
	return rc;
}

int opt_defaults(const struct opt *table, void *obj, struct lab_err *e)
{
	int rc = LAB_OK;
	for (const struct opt *o = table; o->key; o++) {
		int r = set_default_one(o, obj, e);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* ---- parse ---- */

const char *opt_suggest(const struct opt *table, const char *key)
{
	const char *best = NULL;
	int bd = 4;
	for (const struct opt *o = table; o->key; o++) {
		int d = lab_edit_distance(key, o->key);
		if (d < bd && (size_t)d < strlen(o->key)) {
			bd = d;
			best = o->key;
		}
	}
	return best;
}

static const struct opt *find_opt(const struct opt *table, const char *key)
{
	for (const struct opt *o = table; o->key; o++)
		if (strcmp(o->key, key) == 0)
			return o;
	return NULL;
}

int opt_parse(const struct opt *table, const struct cfg_node *map, void *obj, struct lab_err *e)
{
	if (map == NULL || map->kind == CFG_NULL) {
		map = NULL;
	} else if (map->kind != CFG_MAP) {
		return cfg_error(e, map, "expected a map, got %s", kind_name(map));
	}
	for (size_t i = 0; map && i < map->n; i++) {
		const struct cfg_node *k = map->keys[i];
		const struct opt *o = find_opt(table, k->value);
		if (o == NULL) {
			const char *s = opt_suggest(table, k->value);
			if (s)
				return cfg_error(e, k, "unknown key '%s' (did you mean '%s'?)", k->value, s);
			return cfg_error(e, k, "unknown key '%s'", k->value);
		}
		int rc = opt_parse_value(o, map->items[i], obj, e);
		if (rc)
			return rc;
	}
	for (const struct opt *o = table; o->key; o++) {
		if ((o->flags & OPT_REQUIRED) && cfg_map_get(map, o->key) == NULL) {
			if (map)
				return cfg_error(e, map, "missing required key '%s'", o->key);
			return lab_err_set(e, LAB_EUSAGE, "missing required key '%s'", o->key);
		}
	}
	return LAB_OK;
}

void opt_free(const struct opt *table, void *obj)
{
	if (obj == NULL)
		return;
	for (const struct opt *o = table; o->key; o++)
		free_one(o, obj);
}

/* ---- print ---- */

static void print_double(FILE *f, double v)
{
	char buf[64];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* keep it a float on re-read, and never let it look like an int to humans */
	if (!strpbrk(buf, ".eEn"))
		lab_strlcat(buf, ".0", sizeof buf);
	fputs(buf, f);
}

void opt_print_value(FILE *f, const struct opt *o, const void *obj, int indent)
{
	const void *p = cfield(obj, o);
	char buf[64];
	if (o->type == OPT_NODE) {
		cfg_print_value(f, o->key, *(struct cfg_node *const *)p, indent);
		return;
	}
	fprintf(f, "%*s", indent, "");
	cfg_print_string(f, o->key);
	fputc(':', f);
	switch (o->type) {
	case OPT_STR:
	case OPT_NAME: {
		const char *s = *(char *const *)p;
		fputc(' ', f);
		if (s)
			cfg_print_string(f, s);
		else
			fputc('~', f);
		break;
	}
	case OPT_INT:
		fprintf(f, " %lld", (long long)*(const int64_t *)p);
		break;
	case OPT_DOUBLE:
		fputc(' ', f);
		print_double(f, *(const double *)p);
		break;
	case OPT_BOOL:
		fputs(*(const bool *)p ? " true" : " false", f);
		break;
	case OPT_DURATION:
		opt_format_duration(buf, sizeof buf, *(const uint64_t *)p);
		fprintf(f, " %s", buf);
		break;
	case OPT_SIZE:
		opt_format_size(buf, sizeof buf, *(const uint64_t *)p);
		fprintf(f, " %s", buf);
		break;
	case OPT_ENUM: {
		int i = *(const int *)p;
		fputc(' ', f);
		cfg_print_string(f, o->choices && i >= 0 ? o->choices[i] : "~");
		break;
	}
	case OPT_STRLIST:
	case OPT_ARGV: {
		const struct opt_strlist *l = p;
		fputs(" [", f);
		for (size_t i = 0; i < l->n; i++) {
			if (i)
				fputs(", ", f);
			cfg_print_string(f, l->v[i]);
		}
		fputc(']', f);
		break;
	}
	case OPT_SECTION:
		fputc('\n', f);
		opt_print(f, o->sub, p, indent + 2);
		return;
	case OPT_NODE:
		break;
	}
	fputc('\n', f);
}

void opt_print(FILE *f, const struct opt *table, const void *obj, int indent)
{
	for (const struct opt *o = table; o->key; o++)
		opt_print_value(f, o, obj, indent);
}

/* ---- help and schema ---- */

static const char *opt_type_name(const struct opt *o)
{
	static const char *const names[] = {
		[OPT_STR] = "string", [OPT_INT] = "integer", [OPT_DOUBLE] = "number",
		[OPT_BOOL] = "bool", [OPT_DURATION] = "duration", [OPT_SIZE] = "size",
		[OPT_ENUM] = "enum", [OPT_STRLIST] = "string list", [OPT_NODE] = "block", [OPT_ARGV] = "argv",
		[OPT_SECTION] = "map", [OPT_NAME] = "name",
	};
	return names[o->type];
}

static void describe_range(char *buf, size_t n, const struct opt *o)
{
	buf[0] = '\0';
	if (o->type == OPT_ENUM && o->choices) {
		for (int i = 0; o->choices[i]; i++) {
			if (i)
				lab_strlcat(buf, "|", n);
			lab_strlcat(buf, o->choices[i], n);
		}
	} else if (has_range(o) && o->type != OPT_STR) {
		char lo[48], hi[48];
		format_bound(lo, sizeof lo, o, o->min);
		format_bound(hi, sizeof hi, o, o->max);
		snprintf(buf, n, "%s..%s", lo, hi);
	}
}

void opt_help(FILE *f, const struct opt *table, int indent)
{
	for (const struct opt *o = table; o->key; o++) {
		if (o->flags & OPT_HIDDEN)
			continue;
		char range[256];
		describe_range(range, sizeof range, o);
		fprintf(f, "%*s%-22s %-11s", indent, "", o->key, opt_type_name(o));
		if (o->flags & OPT_REQUIRED)
			fputs(" required", f);
		else if (o->def)
			fprintf(f, " default %s", o->def[0] ? o->def : "\"\"");
		if (range[0])
			fprintf(f, " (%s)", range);
		if (o->help)
			fprintf(f, "\n%*s  %s", indent, "", o->help);
		fputc('\n', f);
		if (o->type == OPT_SECTION && o->sub)
			opt_help(f, o->sub, indent + 4);
	}
}

static void md_cell(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

void opt_schema_md(FILE *f, const struct opt *table, const char *prefix)
{
	fputs("| key | type | default | range / choices | description |\n", f);
	fputs("|---|---|---|---|---|\n", f);
	for (const struct opt *o = table; o->key; o++) {
		if (o->flags & OPT_HIDDEN)
			continue;
		char range[256];
		describe_range(range, sizeof range, o);
		fprintf(f, "| `%s%s%s` | %s | ", prefix ? prefix : "", prefix && *prefix ? "." : "",
			o->key, opt_type_name(o));
		if (o->flags & OPT_REQUIRED)
			fputs("**required**", f);
		else if (o->def)
			fprintf(f, "`%s`", o->def[0] ? o->def : "\"\"");
		fputs(" | ", f);
		md_cell(f, range);
		fputs(" | ", f);
		md_cell(f, o->help);
		fputs(" |\n", f);
	}
}
