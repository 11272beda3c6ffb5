/*
 * store_internal.h - what the store's own files share: the SQLite handle
 * behind a struct store and the error helper.
 *
 * Only the store (store*.c) and the results loader (results.c) include this;
 * the unit and fuzz tests include it to inject faults (a full disk, a run
 * left 'running') and to inspect rows the API does not return.  Every other
 * module goes through store.h, and the sealed_store test (a CMake script run
 * by ctest, cmake/check_sealed_store.cmake) fails if SQLite leaks out again.
 */
#ifndef EMMCLAB_STORE_INTERNAL_H
#define EMMCLAB_STORE_INTERNAL_H

#include <sqlite3.h>
#include "store.h"

/* The connection; owned by the store, never closed by the caller. */
sqlite3 *store_sqlite(struct store *s);

/* Set e from the connection's last error: "path: what: message (hint)".
 * `src` is the SQLite result code.  Constraint failures are the caller's data
 * (LAB_EUSAGE); everything else is the machine (LAB_EINFRA).  Returns the code. */
int store_fail(struct store *s, struct lab_err *e, int src, const char *what);

/* sqlite3_exec(sql) with the error set by store_fail(). */
int store_exec(struct store *s, const char *sql, const char *what, struct lab_err *e);

/* sqlite3_bind_text with SQLITE_TRANSIENT, NULL bound as NULL. */
void store_bind_text(sqlite3_stmt *q, int i, const char *v);

/* Prepare sql (not cached); NULL with e set on failure. */
sqlite3_stmt *store_prepare(struct store *s, const char *sql, struct lab_err *e);
/* sql prepared once for the store's life, keyed by the string's address (a
 * literal: a statement written once a boot or an iteration); returned reset,
 * bindings cleared.  The store finalizes it; the caller never does.  NULL with
 * e set on failure. */
sqlite3_stmt *store_prepare_cached(struct store *s, const char *sql, struct lab_err *e);
/* The same as a return code (*q NULL on failure), for bulk readers and writers. */
int store_prepare_rc(struct store *s, const char *sql, sqlite3_stmt **q, struct lab_err *e);
/* LAB_EINFRA "path: what: message (hint)" from the connection, whatever the
 * cause (import, export, the outbox: a constraint failure there is the
 * machine's, not the data's). */
int store_fail_infra(struct store *s, struct lab_err *e, const char *what);

#endif
