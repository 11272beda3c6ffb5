/*
 * upload_internal.h - what the files of lib/upload/ share and nobody else
 * uses.  Loop thread only, like upload.h.
 */
#ifndef EMMCLAB_UPLOAD_INTERNAL_H
#define EMMCLAB_UPLOAD_INTERNAL_H

#include "upload.h"

#define UPLOAD_SECRET_MAX 4096
#define UPLOAD_DEFAULT_PARALLEL 8

/* target.c: parse one target map into t (the resolved spec kept in
 * t->spec), and free what it holds (t zeroed). */
int upload_target_parse(const struct cfg_node *map, struct upload_target *t, struct lab_err *e);
void upload_target_free(struct upload_target *t);

/* outbox.c: UTC wall clock in ms, and as "YYYY-MM-DDTHH:MM:SS.mmmZ"
 * (sortable as text); parse it back (-1 when unreadable). */
int64_t upload_wall_ms(void);
void upload_iso_ms(char *buf, size_t n, int64_t ms);
int64_t upload_parse_iso_ms(const char *s);
/* outbox.c: the run an outbox row belongs to (LAB_EUSAGE when gone). */
int upload_run_load(struct store *s, int64_t run_id, struct upload_run *r, struct lab_err *e);

#endif
