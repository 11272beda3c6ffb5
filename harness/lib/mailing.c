/*
 * mailing.c - the cover letter from lab results (mailing.h).
 */
#include "mailing.h"
#include "mode.h"
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAILING_DEFAULT_TITLE "avoid FUA where reliable write is measured slow"
#define MAILING_MAX_PATCHES 200
#define MAILING_SUBJECT_MAX 512

/* ---- the series ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *suf)
{
	size_t l = strlen(s), m = strlen(suf);
	return l >= m && strcmp(s + l - m, suf) == 0;
}

/* The Subject: header of one patch, folded lines joined; NULL when none. */
static char *patch_subject(FILE *f)
{
	char line[1024];
	struct lab_buf b;
	bool in = false;
	lab_buf_init(&b, MAILING_SUBJECT_MAX);
	while (fgets(line, sizeof line, f)) {
		size_t n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (in) {
			if (line[0] == ' ' || line[0] == '\t') {
				if (lab_buf_printf(&b, " %s", line + strspn(line, " \t")))
					break;
				continue;
			}
			break;
		}
		if (n == 0 && b.len == 0 && ftell(f) > 1)
			break; /* the end of the headers without a subject */
		if (strncmp(line, "Subject:", 8) == 0) {
			in = true;
			lab_buf_printf(&b, "%s", line + 8 + strspn(line + 8, " \t"));
		}
	}
	if (!in) {
		lab_buf_free(&b);
		return NULL;
	}
	char *s = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return s;
}

int mailing_series_load(const char *dir, struct mailing_series *s, struct lab_err *e)
{
	memset(s, 0, sizeof *s);
	DIR *d = opendir(dir);
	if (!d)
		return lab_err_set(e, LAB_EUSAGE, "--series %s: %s", dir, strerror(errno));
	struct dirent *de;
	size_t cap = 0;
	while ((de = readdir(d))) {
		if (!ends_with(de->d_name, ".patch") || strstr(de->d_name, "cover-letter"))
			continue;
		if (s->n == MAILING_MAX_PATCHES) {
			closedir(d);
			mailing_series_free(s);
			return lab_err_set(e, LAB_EUSAGE, "--series %s: more than %d patches", dir,
					   MAILING_MAX_PATCHES);
		}
		if (s->n == cap) {
			cap = cap ? 2 * cap : 16;
			s->file = xreallocarray(s->file, cap, sizeof *s->file);
		}
		s->file[s->n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (!s->n)
		return lab_err_set(e, LAB_EUSAGE, "--series %s: no .patch file", dir);
	qsort(s->file, s->n, sizeof *s->file, cmp_str);
	s->subject = xcalloc(s->n, sizeof *s->subject);
	for (size_t i = 0; i < s->n; i++) {
		char *path = xasprintf("%s/%s", dir, s->file[i]);
		FILE *f = fopen(path, "re");
		if (f) {
			s->subject[i] = patch_subject(f);
			fclose(f);
		}
		int err = errno;
		if (!s->subject[i]) {
			int rc = lab_err_set(e, LAB_EUSAGE, "%s: %s", path,
					     f ? "no Subject: line" : strerror(err));
			free(path);
			mailing_series_free(s);
			return rc;
		}
		free(path);
	}
	return LAB_OK;
}

void mailing_series_free(struct mailing_series *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->file[i]);
		if (s->subject)
			free(s->subject[i]);
	}
	free(s->file);
	free(s->subject);
	memset(s, 0, sizeof *s);
}

/* ---- text ---- */

/* One line: escaped, cut at MAILING_WIDTH columns with "~" (UTF-8 aware),
 * no trailing blanks. */
static void __attribute__((format(printf, 2, 3))) mline(FILE *f, const char *fmt, ...)
{
	char raw[2048], buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	lab_text_escape(buf, sizeof buf, raw);
	lab_text_fit(buf, MAILING_WIDTH);
	fprintf(f, "%s\n", buf);
}

/* A paragraph, words wrapped at 72 columns (the usual mail width), with a
 * prefix on every line. */
static void para(FILE *f, const char *prefix, const char *text)
{
	char buf[4096];
	lab_text_escape(buf, sizeof buf, text);
	size_t width = 72 - strlen(prefix);
	const char *p = buf;
	while (*p) {
		while (*p == ' ')
			p++;
		size_t len = strlen(p), cut = len;
		if (len > width) {
			cut = width;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = width;
		}
		mline(f, "%s%.*s", prefix, (int)cut, p);
		p += cut;
	}
}

/* ---- the 2x2 per context ---- */

enum { SLOT_FUA_OFF, SLOT_FUA_ON, SLOT_CQE_FUA, SLOT_CQE_NOFUA, SLOT_COUNT };

struct ctx {
	size_t part;
	const char *board, *kernel, *workload, *metric, *source;
	const struct compare_row *slot[SLOT_COUNT];
	const struct compare_interaction *inter;
};

static int slot_of(const struct compare_row *w)
{
	int a = lab_mode_parse(w->a->label), b = lab_mode_parse(w->b->label);
	if (a < 0 || b < 0)
		return -1;
	if (lab_mode_fua(a) && lab_mode_without_fua(a) == b)
		return lab_mode_cqe(a) ? SLOT_FUA_ON : SLOT_FUA_OFF;
	if (lab_mode_with_cqe(a) == b)
		return lab_mode_fua(a) ? SLOT_CQE_FUA : SLOT_CQE_NOFUA;
	return -1;
}

static bool ctx_is(const struct ctx *c, const struct compare_row *w)
{
	return c->part == w->part && strcmp(c->board, w->board) == 0 &&
	       strcmp(c->kernel, w->kernel) == 0 && strcmp(c->workload, w->workload) == 0 &&
	       strcmp(c->metric, w->metric) == 0 && strcmp(c->source, w->source) == 0;
}

static struct ctx *ctx_build(const struct compare_result *cr, size_t *n)
{
	struct ctx *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < cr->nrows; i++) {
		const struct compare_row *w = &cr->rows[i];
		int s = slot_of(w);
		if (s < 0 || w->part == (size_t)-1 || strcmp(w->workload, "powerfail") == 0 ||
		    !report_headline_metric(w->workload, w->metric))
			continue;
		struct ctx *c = NULL;
		for (size_t k = *n; k-- > 0;)
			if (ctx_is(&v[k], w)) {
				c = &v[k];
				break;
			}
		if (!c) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 32;
				v = xreallocarray(v, cap, sizeof *v);
			}
			c = &v[(*n)++];
			memset(c, 0, sizeof *c);
			c->part = w->part;
			c->board = w->board;
			c->kernel = w->kernel;
			c->workload = w->workload;
			c->metric = w->metric;
			c->source = w->source;
		}
		c->slot[s] = w;
	}
	for (size_t i = 0; i < cr->ninter; i++)
		for (size_t k = 0; k < *n; k++)
			if (v[k].slot[SLOT_FUA_OFF] == &cr->rows[cr->inter[i].row_off])
				v[k].inter = &cr->inter[i];
	return v;
}

/* "[lab]", "[virtual: QEMU board, vemmc model]", "[simulated: assumed ...]" */
static const char *prov_tag(char *buf, size_t n, const char *kind, const char *provenance)
{
	if (strcmp(kind, "lab") == 0)
		snprintf(buf, n, "[lab: measured]");
	else if (strcmp(kind, "virtual") == 0)
		snprintf(buf, n, "[virtual board: vemmc model, not a real card]");
	else if (strcmp(kind, "simulated") == 0)
		snprintf(buf, n, "[SIMULATED: %s]", provenance && provenance[0] ? provenance : "model");
	else
		snprintf(buf, n, "[%s]", kind);
	return buf;
}

static const char *cell(char *buf, size_t n, const struct compare_side *s)
{
	char m[24], h[24];
	if (!s)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%s +-%s n=%zu", report_num(m, sizeof m, s->d.mean),
			 report_num(h, sizeof h, s->d.ci_half), s->n);
	return buf;
}

static void effect(FILE *f, const char *what, const struct compare_row *w, double alpha)
{
	if (!w)
		return;
	char c[24], lo[24], hi[24], p[24];
	mline(f, "    %-22s %s [%s, %s] p %s", what, report_pct(c, sizeof c, w->cmp.change),
	      report_pct(lo, sizeof lo, w->cmp.change_lo), report_pct(hi, sizeof hi, w->cmp.change_hi),
	      report_p(p, sizeof p, w->cmp.welch.p, false));
	(void)alpha;
}

static void ctx_print(FILE *f, const struct ctx *c, const struct compare_result *cr)
{
	const struct compare_row *any = NULL;
	for (int s = 0; s < SLOT_COUNT && !any; s++)
		any = c->slot[s];
	char tag[96];
	mline(f, "  %s/%s, %s, %s", c->workload, c->metric, any->unit,
	      report_direction_text(any->direction));
	mline(f, "    %s", prov_tag(tag, sizeof tag, results_source_kind(c->source), any->provenance));
	const struct compare_row *s0 = c->slot[SLOT_FUA_OFF], *s1 = c->slot[SLOT_FUA_ON],
				 *q0 = c->slot[SLOT_CQE_FUA], *q1 = c->slot[SLOT_CQE_NOFUA];
	const struct compare_side *fua = s0 ? s0->a : q0 ? q0->a : NULL;
	const struct compare_side *nofua = s0 ? s0->b : q1 ? q1->a : NULL;
	const struct compare_side *fcqe = s1 ? s1->a : q0 ? q0->b : NULL;
	const struct compare_side *ncqe = s1 ? s1->b : q1 ? q1->b : NULL;
	char a[48], b[48];
	mline(f, "    %-14s %-24s %s", "mean +-CI", "CQE off", fcqe || ncqe ? "CQE on" : "");
	mline(f, "    %-14s %-24s %s", "FUA", cell(a, sizeof a, fua), fcqe ? cell(b, sizeof b, fcqe) : "");
	mline(f, "    %-14s %-24s %s", "no FUA", cell(a, sizeof a, nofua),
	      ncqe ? cell(b, sizeof b, ncqe) : "");
	effect(f, "no FUA, CQE off:", s0, cr->opts.alpha);
	effect(f, "no FUA, CQE on:", s1, cr->opts.alpha);
	effect(f, "CQE on, with FUA:", q0, cr->opts.alpha);
	effect(f, "CQE on, without FUA:", q1, cr->opts.alpha);
	if (c->inter && isfinite(c->inter->ratio)) {
		char lo[24] = "-", hi[24] = "-", p[24];
		if (isfinite(c->inter->lo)) {
			snprintf(lo, sizeof lo, "%.4f", c->inter->lo);
			snprintf(hi, sizeof hi, "%.4f", c->inter->hi);
		}
		mline(f, "    %-22s ratio %.4f [%s, %s] p %s", "interaction:", c->inter->ratio, lo, hi,
		      report_p(p, sizeof p, c->inter->p, false));
	}
}

static void pf_print(FILE *f, const struct quirks_part *p)
{
	if (!p->npf) {
		mline(f, "  power-fail: no data (never proposed without it)");
		return;
	}
	mline(f, "  power-fail: acknowledged records after a random power cut");
	mline(f, "    %-15s %-9s %5s %7s %7s %4s %4s %7s", "mode", "source", "cuts", "acked",
	      "intact", "lost", "torn", "corrupt");
	for (size_t i = 0; i < p->npf; i++) {
		const struct quirks_pf *t = &p->pf[i];
		mline(f, "    %-15s %-9s %5" PRId64 " %7" PRId64 " %7" PRId64 " %4" PRId64 " %4" PRId64
			 " %7" PRId64 "%s",
		      t->mode, strcmp(t->kind, "simulated") == 0 ? "SIMULATED" : t->kind, t->cuts,
		      t->acked, t->intact, t->lost, t->torn, t->corrupt,
		      t->cuts_with_loss ? " LOSS" : "");
	}
}

/* The quirk C text of one part, tabs as 8 blanks (mail), line by line. */
static int quirk_print(FILE *f, const struct quirks_part *p, const struct quirks_opts *o,
		       struct lab_err *e)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&mem, &len);
	if (!m)
		return lab_err_set(e, LAB_EINFRA, "open_memstream: %s", strerror(errno));
	quirks_render_part(p, o, m);
	fclose(m);
	for (char *line = mem, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char out[256];
		size_t k = 0;
		for (const char *s = line; *s && k + 9 < sizeof out; s++) {
			if (*s == '\t')
				for (int t = 0; t < 8; t++)
					out[k++] = ' ';
			else
				out[k++] = *s;
		}
		out[k] = '\0';
		mline(f, "%s", out);
	}
	free(mem);
	return LAB_OK;
}

int mailing_cover_letter(const struct quirks_result *q, const struct mailing_opts *o, FILE *f,
			 struct lab_err *e)
{
	const struct results *r = q->res;
	char n[16] = "N";
	if (o->series)
		snprintf(n, sizeof n, "%zu", o->series->n);
	mline(f, "Subject: [PATCH 0/%s] mmc: %s", n, o->title ? o->title : MAILING_DEFAULT_TITLE);
	fputc('\n', f);

	size_t nwith = 0;
	for (size_t i = 0; i < q->nparts; i++)
		nwith += q->parts[i].nspeed > 0;
	char text[2048];
	snprintf(text, sizeof text,
		 "On eMMC, REQ_FUA is carried out as a reliable write (CMD23 bit 31, or the"
		 " REL_WRITE bit of a CQE task descriptor). On many parts a reliable write costs"
		 " far more than a normal write followed by a cache flush, and the block layer"
		 " gets the same durability from the latter: when a queue does not advertise"
		 " FUA, a FUA write becomes write + flush. This series makes avoiding reliable"
		 " write a property of the card, a quirk keyed by CID for the parts where it is"
		 " measured to pay off, with an mmc_block parameter to test either way.");
	para(f, "", text);
	fputc('\n', f);
	snprintf(text, sizeof text,
		 "The figures below come from emmclab, an automated eMMC test lab: %zu run%s,"
		 " %zu part%s measured in up to four modes (FUA on/off x CQE on/off, each mode"
		 " verified on the running card before a sample was kept), means with %.3g%%"
		 " confidence intervals, relative changes with delta-method CIs and Welch"
		 " p-values; and a power-fail suite that cuts the power at random moments and"
		 " counts the acknowledged (fsync'd) records that survived.",
		 r->nruns, r->nruns == 1 ? "" : "s", nwith, nwith == 1 ? "" : "s",
		 100 * (1 - q->opts.alpha));
	para(f, "", text);
	fputc('\n', f);
	mline(f, "Provenance: every figure is tagged [lab: measured] (a real card on a");
	mline(f, "lab board), [virtual board] (QEMU's vemmc model), [SIMULATED] (the");
	mline(f, "simulator's model, not a measurement) or [imported] (published data).");
	char banner[256];
	if (results_source_banner(r, banner, sizeof banner)[0])
		para(f, "", banner);
	fputc('\n', f);

	size_t nctx;
	struct ctx *cs = ctx_build(q->cmp, &nctx);
	for (size_t i = 0; i < q->nparts; i++) {
		const struct quirks_part *p = &q->parts[i];
		if (!p->nspeed && !p->npf)
			continue;
		mline(f, "%s", p->label);
		if (p->cid[0])
		{
			mline(f, "  CID %s", p->cid);
			mline(f, "  name \"%s\", manfid %s, oemid %s", p->name, p->manfid, p->oemid);
		}
		const char *lastb = NULL, *lastk = NULL;
		for (size_t k = 0; k < nctx; k++) {
			const struct ctx *c = &cs[k];
			const struct results_part *rp = &r->parts[c->part];
			if (strcmp(rp->label, p->label) || strcmp(rp->cid, p->cid))
				continue;
			if (!lastb || strcmp(lastb, c->board) || strcmp(lastk, c->kernel))
				mline(f, "  on board %s, kernel %s:", c->board[0] ? c->board : "-",
				      c->kernel[0] ? c->kernel : "-");
			lastb = c->board;
			lastk = c->kernel;
			ctx_print(f, c, q->cmp);
		}
		pf_print(f, p);
		mline(f, "  quirk: %s", p->verdict == QUIRKS_PROPOSED ? "proposed" : "not proposed");
		int rc = quirk_print(f, p, &q->opts, e);
		if (rc) {
			free(cs);
			return rc;
		}
		fputc('\n', f);
	}
	free(cs);

	mline(f, "Proposed quirk entries (%zu of %zu parts):", q->nproposed, q->nparts);
	fputc('\n', f);
	for (size_t i = 0; i < q->nparts; i++)
		if (q->parts[i].verdict == QUIRKS_PROPOSED) {
			int rc = quirk_print(f, &q->parts[i], &q->opts, e);
			if (rc)
				return rc;
		}
	if (!q->nproposed)
		mline(f, "  none: no part's data justifies one (see each part above).");
	fputc('\n', f);
	if (o->series) {
		mline(f, "The series:");
		for (size_t i = 0; i < o->series->n; i++)
			mline(f, "  %s", o->series->subject[i]);
		fputc('\n', f);
	}
	mline(f, "Generated by emmclab kernel cover-letter from the results database.");
	return ferror(f) ? lab_err_set(e, LAB_EINFRA, "writing the cover letter: %s", strerror(errno))
			 : LAB_OK;
}
