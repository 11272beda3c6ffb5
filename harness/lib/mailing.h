/*
 * mailing.h - the cover letter of the upstream-form patch series, rendered
 * from lab results (`emmclab kernel cover-letter`, docs/kernel.md):
 * subject, motivation, per part the 2x2 (FUA x CQE) tables with CIs and the
 * interaction, power-fail outcomes per mode, the proposed quirk entries and
 * the series' patch subjects.  Plain text, every line at most 75 columns,
 * data escaped (lab_text_escape): no control byte from the database or a
 * patch file reaches the output.  Every figure carries its provenance.
 *
 * Library code: writes only to the FILE * given.
 */
#ifndef EMMCLAB_MAILING_H
#define EMMCLAB_MAILING_H

#include <stdio.h>
#include "quirks.h"
#include "util.h"

#define MAILING_WIDTH 75

/* A patch series directory: its *.patch files by name, without a
 * 0000-cover-letter.patch, and each one's Subject (folded lines joined). */
struct mailing_series {
	char **file, **subject;
	size_t n;
};
/* LAB_EUSAGE when dir cannot be read, has no patch, or a patch has no Subject:. */
int mailing_series_load(const char *dir, struct mailing_series *s, struct lab_err *e);
void mailing_series_free(struct mailing_series *s);

struct mailing_opts {
	const char *title;                  /* after "mmc: "; NULL: the default */
	const struct mailing_series *series; /* NULL: none given ("[PATCH 0/N]") */
};

/* Write the cover letter of q (quirks_build) to f. */
int mailing_cover_letter(const struct quirks_result *q, const struct mailing_opts *o, FILE *f,
			 struct lab_err *e);

#endif
