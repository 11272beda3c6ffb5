/*
 * quirks.c - propose mmc quirk-table entries from stored results
 * (quirks.h): gather each part's FUA-effect cells and power-fail tallies,
 * decide, and render the C text with the evidence beside each entry.
 */
#include "quirks.h"
#include "mode.h"
#include "report.h"
#include "store_quirks.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void quirks_opts_init(struct quirks_opts *o)
{
	memset(o, 0, sizeof *o);
	o->alpha = 0.05;
	o->min_gain = 0.05;
	o->min_cuts = 20;
}

static const struct {
	const char *kind;
	unsigned bit;
} kinds[] = {
	{"virtual", QUIRKS_ACCEPT_VIRTUAL},
	{"simulated", QUIRKS_ACCEPT_SIMULATED},
	{"imported", QUIRKS_ACCEPT_IMPORTED},
};

int quirks_accept_parse(const char *s, unsigned *bits, struct lab_err *e)
{
	char *dup = xstrdup(s), *save = NULL;
	int rc = LAB_OK;
	for (char *w = strtok_r(dup, ",", &save); w && !rc; w = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < LAB_ARRAY_SIZE(kinds); i++)
			if (strcmp(w, kinds[i].kind) == 0)
				break;
		if (i == LAB_ARRAY_SIZE(kinds))
			rc = lab_err_set(e, LAB_EUSAGE,
					 "--accept: unknown source kind '%s' (virtual, simulated, imported)", w);
		else
			*bits |= kinds[i].bit;
	}
	free(dup);
	return rc;
}

bool quirks_kind_accepted(const struct quirks_opts *o, const char *kind)
{
	if (strcmp(kind, "lab") == 0)
		return true;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(kinds); i++)
		if (strcmp(kind, kinds[i].kind) == 0)
			return (o->accept & kinds[i].bit) != 0;
	return false; /* "mixed" and anything unknown */
}

const char *quirks_verdict_name(enum quirks_verdict v)
{
	static const char *const n[] = {
		[QUIRKS_PROPOSED] = "proposed",
		[QUIRKS_NO_POWERFAIL] = "no power-fail data",
		[QUIRKS_LOSS] = "data lost in the power-fail suite",
		[QUIRKS_FEW_CUTS] = "too few power cuts",
		[QUIRKS_NO_SPEED] = "no FUA comparison",
		[QUIRKS_SLOWER] = "slower without FUA",
		[QUIRKS_NOT_SIGNIFICANT] = "not significantly faster without FUA",
		[QUIRKS_NO_IDENTITY] = "CID unknown",
	};
	return (unsigned)v < LAB_ARRAY_SIZE(n) ? n[v] : "?";
}

void quirks_part_add_speed(struct quirks_part *p, const struct quirks_speed *s)
{
	if (p->nspeed == p->speed_cap) {
		p->speed_cap = p->speed_cap ? 2 * p->speed_cap : 8;
		p->speed = xreallocarray(p->speed, p->speed_cap, sizeof *p->speed);
	}
	p->speed[p->nspeed++] = *s;
}

void quirks_part_add_pf(struct quirks_part *p, const struct quirks_pf *t)
{
	if (p->npf == p->pf_cap) {
		p->pf_cap = p->pf_cap ? 2 * p->pf_cap : 8;
		p->pf = xreallocarray(p->pf, p->pf_cap, sizeof *p->pf);
	}
	p->pf[p->npf++] = *t;
}

void quirks_part_fini(struct quirks_part *p)
{
	free(p->speed);
	free(p->pf);
	p->speed = NULL;
	p->pf = NULL;
	p->nspeed = p->npf = p->speed_cap = p->pf_cap = 0;
}

static void kind_add(char *buf, size_t n, const char *kind)
{
	size_t l = strlen(kind), len = strlen(buf);
	for (const char *s = buf; (s = strstr(s, kind)); s += l)
		if ((s == buf || s[-1] == '+') && (s[l] == '\0' || s[l] == '+'))
			return;
	snprintf(buf + len, n - len, "%s%s", len ? "+" : "", kind);
}

static bool parse_hex(const char *s, unsigned long *v)
{
	if (!s || !s[0])
		return false;
	char *end;
	unsigned long x = strtoul(s, &end, 16); /* "0x000015" and "15" alike */
	if (*end != '\0' || x > 0xffff)
		return false;
	*v = x;
	return true;
}

/* Gain without FUA in the metric's good direction (fraction); NaN unknown. */
static double gain_of(const struct quirks_speed *s)
{
	return s->direction ? s->change * s->direction : NAN;
}

void quirks_decide(struct quirks_part *p, const struct quirks_opts *o)
{
	p->verdict = QUIRKS_PROPOSED;
	p->why[0] = '\0';
	p->best = NULL;
	p->kinds[0] = '\0';
	p->cuts_nofua = p->lost_nofua = p->torn_nofua = p->corrupt_nofua = 0;
	p->cuts_fua = p->lost_fua = p->torn_fua = p->corrupt_fua = 0;

	/* 1. power-fail data at all; 2. no loss anywhere */
	const struct quirks_pf *loss = NULL;
	int64_t cuts_any = 0;
	for (size_t i = 0; i < p->npf; i++) {
		const struct quirks_pf *t = &p->pf[i];
		cuts_any += t->cuts;
		if (!loss && t->lost + t->torn + t->corrupt > 0)
			loss = t;
		if (!quirks_kind_accepted(o, t->kind))
			continue;
		int m = lab_mode_parse(t->mode);
		if (m >= 0 && !lab_mode_fua(m)) {
			p->cuts_nofua += t->cuts;
			p->lost_nofua += t->lost;
			p->torn_nofua += t->torn;
			p->corrupt_nofua += t->corrupt;
		} else {
			p->cuts_fua += t->cuts;
			p->lost_fua += t->lost;
			p->torn_fua += t->torn;
			p->corrupt_fua += t->corrupt;
		}
	}
	if (cuts_any == 0) {
		p->verdict = QUIRKS_NO_POWERFAIL;
		snprintf(p->why, sizeof p->why, "no power-fail data");
		return;
	}
	if (loss) {
		p->verdict = QUIRKS_LOSS;
		snprintf(p->why, sizeof p->why,
			 "acknowledged data lost in %s [%s]: %" PRId64 " of %" PRId64
			 " cuts, %" PRId64 " lost, %" PRId64 " torn, %" PRId64 " corrupt",
			 loss->mode, loss->kind, loss->cuts_with_loss, loss->cuts, loss->lost,
			 loss->torn, loss->corrupt);
		return;
	}
	if (p->cuts_nofua < o->min_cuts) {
		p->verdict = QUIRKS_FEW_CUTS;
		snprintf(p->why, sizeof p->why,
			 "%" PRId64 " power cuts without FUA from accepted sources, %" PRId64
			 " needed (--min-cuts; accepted: lab%s%s%s)",
			 p->cuts_nofua, o->min_cuts, o->accept & QUIRKS_ACCEPT_VIRTUAL ? ", virtual" : "",
			 o->accept & QUIRKS_ACCEPT_SIMULATED ? ", simulated" : "",
			 o->accept & QUIRKS_ACCEPT_IMPORTED ? ", imported" : "");
		return;
	}
	for (size_t i = 0; i < p->npf; i++)
		if (quirks_kind_accepted(o, p->pf[i].kind) && p->pf[i].cuts)
			kind_add(p->kinds, sizeof p->kinds, p->pf[i].kind);

	/* 4. speed */
	const struct quirks_speed *worse = NULL, *best = NULL, *top = NULL;
	size_t naccepted = 0;
	for (size_t i = 0; i < p->nspeed; i++) {
		const struct quirks_speed *s = &p->speed[i];
		if (!quirks_kind_accepted(o, s->kind))
			continue;
		naccepted++;
		double g = gain_of(s);
		bool sig = isfinite(s->p) && s->p < o->alpha && isfinite(g);
		if (sig && g < 0 && -g >= o->min_gain && !worse)
			worse = s;
		if (isfinite(g) && (!top || g > gain_of(top)))
			top = s;
		if (sig && g >= o->min_gain && (!best || g > gain_of(best)))
			best = s;
	}
	char c[24], lo[24], hi[24];
	if (!naccepted) {
		p->verdict = QUIRKS_NO_SPEED;
		snprintf(p->why, sizeof p->why,
			 "no FUA vs cache-nofua comparison from accepted sources (--accept)");
		return;
	}
	if (worse) {
		p->verdict = QUIRKS_SLOWER;
		snprintf(p->why, sizeof p->why, "slower without FUA: %s/%s%s %s [%s, %s] p %.3g [%s]",
			 worse->workload, worse->metric, worse->cqe ? " (CQE)" : "",
			 report_pct(c, sizeof c, worse->change), report_pct(lo, sizeof lo, worse->lo),
			 report_pct(hi, sizeof hi, worse->hi), worse->p, worse->kind);
		return;
	}
	if (!best) {
		p->verdict = QUIRKS_NOT_SIGNIFICANT;
		if (top)
			snprintf(p->why, sizeof p->why,
				 "not significantly faster without FUA by %.3g%% at alpha %.3g"
				 " (best: %s/%s%s %s, p %.3g)",
				 100 * o->min_gain, o->alpha, top->workload, top->metric,
				 top->cqe ? " (CQE)" : "", report_pct(c, sizeof c, top->change), top->p);
		else
			snprintf(p->why, sizeof p->why, "not significantly faster without FUA");
		return;
	}
	p->best = best;
	kind_add(p->kinds, sizeof p->kinds, best->kind);

	/* 5. identity */
	if (!p->name[0] || !parse_hex(p->manfid, &p->mfid) || !parse_hex(p->oemid, &p->oem)) {
		p->verdict = QUIRKS_NO_IDENTITY;
		snprintf(p->why, sizeof p->why,
			 "justified, but the part table has no CID name/manfid/oemid for it");
		return;
	}
}

/* ---- building from the store ---- */

struct pool {
	char **s;
	size_t n, cap;
};

static const char *pool_dup(struct pool *p, const char *s)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->s = xreallocarray(p->s, p->cap, sizeof *p->s);
	}
	return p->s[p->n++] = xstrdup(s ? s : "");
}

struct qpriv {
	struct pool pool;
	struct quirks_result *q;
	size_t cap;
};

static struct quirks_part *part_find(struct qpriv *x, const char *label, const char *cid)
{
	for (size_t i = 0; i < x->q->nparts; i++)
		if (strcmp(x->q->parts[i].label, label) == 0 && strcmp(x->q->parts[i].cid, cid) == 0)
			return &x->q->parts[i];
	return NULL;
}

static void on_part(const struct store_part_id *p, void *arg)
{
	struct qpriv *x = arg;
	if (x->q->nparts == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 16;
		x->q->parts = xreallocarray(x->q->parts, x->cap, sizeof *x->q->parts);
	}
	struct quirks_part *q = &x->q->parts[x->q->nparts++];
	memset(q, 0, sizeof *q);
	q->label = pool_dup(&x->pool, p->label);
	q->cid = pool_dup(&x->pool, p->cid);
	q->manfid = pool_dup(&x->pool, p->manfid);
	q->oemid = pool_dup(&x->pool, p->oemid);
	q->name = pool_dup(&x->pool, p->name);
}

static void on_pf(const struct store_pf_tally *t, void *arg)
{
	struct qpriv *x = arg;
	struct quirks_part *p = part_find(x, t->part_label, t->cid);
	if (!p)
		return;
	struct quirks_pf f = {
		.mode = pool_dup(&x->pool, t->mode),
		.kind = results_source_kind(t->source),
		.cuts = t->cuts, .acked = t->acked, .intact = t->intact, .lost = t->lost,
		.torn = t->torn, .corrupt = t->corrupt, .cuts_with_loss = t->cuts_with_loss,
	};
	/* runs of one kind (several sources of it) add up */
	for (size_t i = 0; i < p->npf; i++) {
		struct quirks_pf *o = &p->pf[i];
		if (strcmp(o->mode, f.mode) == 0 && o->kind == f.kind) {
			o->cuts += f.cuts;
			o->acked += f.acked;
			o->intact += f.intact;
			o->lost += f.lost;
			o->torn += f.torn;
			o->corrupt += f.corrupt;
			o->cuts_with_loss += f.cuts_with_loss;
			return;
		}
	}
	quirks_part_add_pf(p, &f);
}

int quirks_build(struct store *s, const struct quirks_opts *o, struct quirks_result **out,
		 struct lab_err *e)
{
	struct quirks_result *q = xcalloc(1, sizeof *q);
	struct qpriv *x = xcalloc(1, sizeof *x);
	x->q = q;
	q->priv = x;
	q->opts = *o;
	*out = NULL;
	struct results_filter f = {0};
	int rc = store_part_ids(s, on_part, x, e);
	if (!rc)
		rc = store_pf_tallies(s, on_pf, x, e);
	if (!rc)
		rc = results_load(s, &f, &q->res, e);
	struct compare_opts co;
	compare_opts_init(&co);
	co.by = COMPARE_BY_MODE;
	co.alpha = o->alpha;
	co.min_effect = o->min_gain;
	co.exclude_warmup = o->exclude_warmup;
	if (!rc)
		rc = compare_build(q->res, &co, &q->cmp, e);
	if (rc) {
		quirks_free(q);
		return rc;
	}
	for (size_t i = 0; i < q->cmp->nrows; i++) {
		const struct compare_row *w = &q->cmp->rows[i];
		int a = lab_mode_parse(w->a->label), b = lab_mode_parse(w->b->label);
		if (a < 0 || b < 0 || !lab_mode_fua(a) || lab_mode_without_fua(a) != b)
			continue; /* not a FUA-effect cell */
		if (strcmp(w->workload, "powerfail") == 0 ||
		    !report_headline_metric(w->workload, w->metric) || w->part == (size_t)-1)
			continue;
		const struct results_part *rp = &q->res->parts[w->part];
		struct quirks_part *p = part_find(x, rp->label, rp->cid);
		if (!p)
			continue;
		struct quirks_speed sp = {
			.board = w->board, .kernel = w->kernel, .workload = w->workload,
			.metric = w->metric, .unit = w->unit, .kind = results_source_kind(w->source),
			.provenance = w->provenance, .fua_mode = w->a->label, .nofua_mode = w->b->label,
			.cqe = lab_mode_cqe(a), .change = w->cmp.change, .lo = w->cmp.change_lo,
			.hi = w->cmp.change_hi, .p = w->cmp.welch.p, .na = w->a->n, .nb = w->b->n,
			.direction = w->direction, .verdict = w->cmp.verdict,
		};
		quirks_part_add_speed(p, &sp);
	}
	for (size_t i = 0; i < q->nparts; i++) {
		quirks_decide(&q->parts[i], o);
		q->nproposed += q->parts[i].verdict == QUIRKS_PROPOSED;
	}
	*out = q;
	return LAB_OK;
}

void quirks_free(struct quirks_result *q)
{
	if (!q)
		return;
	struct qpriv *x = q->priv;
	for (size_t i = 0; i < q->nparts; i++)
		quirks_part_fini(&q->parts[i]);
	free(q->parts);
	compare_free(q->cmp);
	results_free(q->res);
	if (x) {
		for (size_t i = 0; i < x->pool.n; i++)
			free(x->pool.s[i]);
		free(x->pool.s);
		free(x);
	}
	free(q);
}

/* ---- rendering ---- */

#define QUIRKS_WIDTH 75

/* Data for a comment: terminal-safe, and never "*" followed by "/". */
static void comment_safe(char *dst, size_t n, const char *s)
{
	lab_text_escape(dst, n, s);
	for (char *p = dst; (p = strstr(p, "*/")); p++)
		p[1] = '|';
}

/* A comment block " * " lines, words wrapped at QUIRKS_WIDTH (tab = 8). */
static void comment_wrap(FILE *f, const char *indent, const char *text)
{
	size_t lead = strlen(indent) + 3, width = QUIRKS_WIDTH - lead + (strchr(indent, '\t') ? -7 : 0);
	const char *p = text;
	while (*p) {
		while (*p == ' ')
			p++;
		size_t len = strlen(p), cut = len;
		if (len > width) {
			cut = width;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = width; /* one word longer than a line: cut it */
		}
		fprintf(f, "%s * %.*s\n", indent, (int)cut, p);
		p += cut;
	}
}

/* The name as a C string literal body: printable ASCII passes, '"' and '\\'
 * are escaped, anything else is octal. */
static void c_string(char *dst, size_t n, const char *s)
{
	size_t o = 0;
	for (; *s && o + 5 < n; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(dst + o, n - o, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f && ch != '?')
			dst[o++] = (char)ch;
		else
			o += (size_t)snprintf(dst + o, n - o, "\\%03o", ch);
	}
	dst[o] = '\0';
}

static void evidence_text(char *buf, size_t n, const struct quirks_part *p,
			  const struct quirks_opts *o)
{
	const struct quirks_speed *b = p->best;
	char lab[160], cid[80], c[24], lo[24], hi[24], pv[24];
	comment_safe(lab, sizeof lab, p->label);
	comment_safe(cid, sizeof cid, p->cid);
	report_p(pv, sizeof pv, b->p, false);
	char prov[96] = "";
	if (b->provenance && b->provenance[0])
		snprintf(prov, sizeof prov, ", %s", b->provenance);
	snprintf(buf, n,
		 "%s (CID %s): %s/%s %s [%s, %s] %.3g%% CI, p %s, n %zu/%zu, %s vs %s%s;"
		 " power-fail without FUA: %" PRId64 " cuts, %" PRId64 " lost, %" PRId64
		 " torn, %" PRId64 " corrupt (with FUA: %" PRId64 " cuts, %" PRId64
		 " lost); evidence: %s%s%s",
		 lab, cid[0] ? cid : "unknown", b->workload, b->metric,
		 report_pct(c, sizeof c, b->change), report_pct(lo, sizeof lo, b->lo),
		 report_pct(hi, sizeof hi, b->hi), 100 * (1 - o->alpha), pv, b->na, b->nb,
		 b->nofua_mode, b->fua_mode, prov, p->cuts_nofua, p->lost_nofua, p->torn_nofua,
		 p->corrupt_nofua, p->cuts_fua, p->lost_fua + p->torn_fua + p->corrupt_fua, p->kinds,
		 strcmp(p->kinds, "lab") ? " - NOT measured on a real card" : "",
		 strcmp(p->kinds, "lab") ? " (accepted by --accept)" : "");
}

void quirks_render_part(const struct quirks_part *p, const struct quirks_opts *o, FILE *f)
{
	char text[1024];
	if (p->verdict != QUIRKS_PROPOSED) {
		char lab[160], why[400];
		comment_safe(lab, sizeof lab, p->label);
		comment_safe(why, sizeof why, p->why);
		snprintf(text, sizeof text, "not proposed: %s: %s", lab, why);
		fputs("\t/*\n", f);
		comment_wrap(f, "\t", text);
		fputs("\t */\n", f);
		return;
	}
	evidence_text(text, sizeof text, p, o);
	fputs("\t/*\n", f);
	comment_wrap(f, "\t", text);
	fputs("\t */\n", f);
	char name[64];
	c_string(name, sizeof name, p->name);
	char line[160];
	snprintf(line, sizeof line, "\tMMC_FIXUP(\"%s\", 0x%lx, 0x%lx, add_quirk_mmc, %s),", name,
		 p->mfid, p->oem, QUIRKS_FIXUP_FLAG);
	if (strlen(line) + 7 <= QUIRKS_WIDTH)
		fprintf(f, "%s\n", line);
	else
		fprintf(f, "\tMMC_FIXUP(\"%s\", 0x%lx, 0x%lx, add_quirk_mmc,\n\t\t  %s),\n", name,
			p->mfid, p->oem, QUIRKS_FIXUP_FLAG);
}

void quirks_render(const struct quirks_result *q, FILE *f)
{
	const struct quirks_opts *o = &q->opts;
	char head[400];
	snprintf(head, sizeof head,
		 "Proposed by emmclab kernel quirks: avoid reliable write (FUA) where it is"
		 " significantly slower (Welch p < %.3g, gain >= %.3g%%) and no acknowledged"
		 " record was lost, torn or corrupted in >= %" PRId64
		 " power cuts without FUA. Evidence accepted: lab%s%s%s. %zu of %zu parts proposed.",
		 o->alpha, 100 * o->min_gain, o->min_cuts,
		 o->accept & QUIRKS_ACCEPT_VIRTUAL ? ", virtual (QEMU vemmc model)" : "",
		 o->accept & QUIRKS_ACCEPT_SIMULATED ? ", simulated (model, not measured)" : "",
		 o->accept & QUIRKS_ACCEPT_IMPORTED ? ", imported" : "", q->nproposed, q->nparts);
	fputs("\t/*\n", f);
	comment_wrap(f, "\t", head);
	fputs("\t */\n", f);
	for (size_t i = 0; i < q->nparts; i++)
		if (q->parts[i].verdict == QUIRKS_PROPOSED)
			quirks_render_part(&q->parts[i], o, f);
	for (size_t i = 0; i < q->nparts; i++)
		if (q->parts[i].verdict != QUIRKS_PROPOSED)
			quirks_render_part(&q->parts[i], o, f);
}
