/* store_scratch.c - a temporary SQLite file for one CSV file's rows (see store_scratch.h). */
#include "store_scratch.h"
#include "store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { SQ_INS, SQ_DUP, SQ_GRP_INS, SQ_GRP_KEY, SQ_ID_GET, SQ_ID_PUT, SQ_ROWS, SQ_N };

struct store_scratch {
	sqlite3 *db;
	sqlite3_stmt *q[SQ_N];
};

static const char *const scratch_sql[SQ_N] = {
	[SQ_INS] = "INSERT INTO r (line, g, key, label, board, host, mode, metric, run, value, vtext)"
		   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[SQ_DUP] = "SELECT line FROM r WHERE g = ?1 AND metric = ?2 AND run = ?3",
	[SQ_GRP_INS] = "INSERT OR IGNORE INTO grp (g, key) VALUES (?1, ?2)",
	[SQ_GRP_KEY] = "SELECT key FROM grp WHERE g = ?1",
	[SQ_ID_GET] = "SELECT v FROM ids WHERE k = ?1",
	[SQ_ID_PUT] = "INSERT OR REPLACE INTO ids (k, v) VALUES (?1, ?2)",
	[SQ_ROWS] = "SELECT line, key, g, label, board, host, mode, metric, run, value, vtext"
		    " FROM r ORDER BY line",
};

void store_scratch_free(struct store_scratch *sc)
{
	if (!sc)
		return;
	for (int i = 0; i < SQ_N; i++)
		sqlite3_finalize(sc->q[i]);
	sqlite3_close(sc->db);
	free(sc);
}

/* "" as the file name: a private database on disk, deleted on close; only
 * the page cache (2 MiB) is in memory. */
int store_scratch_new(struct store_scratch **out, struct lab_err *e)
{
	struct store_scratch *sc = xcalloc(1, sizeof *sc);
	*out = NULL;
	store_sqlite_config();
	int r = sqlite3_open_v2("", &sc->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_exec(sc->db,
				 "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
				 " PRAGMA cache_size = -2048; PRAGMA temp_store = FILE;"
				 "CREATE TABLE r (line INTEGER PRIMARY KEY, g TEXT NOT NULL,"
				 " key TEXT NOT NULL, label TEXT, board TEXT, host TEXT, mode TEXT,"
				 " metric TEXT NOT NULL, run INTEGER NOT NULL, value REAL, vtext TEXT);"
				 "CREATE UNIQUE INDEX r_dup ON r (g, metric, run);"
				 "CREATE TABLE grp (g TEXT PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID;"
				 "CREATE TABLE ids (k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;"
				 "BEGIN",
				 NULL, NULL, NULL);
	for (int i = 0; i < SQ_N && r == SQLITE_OK; i++)
		r = sqlite3_prepare_v2(sc->db, scratch_sql[i], -1, &sc->q[i], NULL);
	if (r != SQLITE_OK) {
		int rc = lab_err_set(e, LAB_EINFRA, "import scratch file: %s",
				     sc->db ? sqlite3_errmsg(sc->db) : sqlite3_errstr(r));
		store_scratch_free(sc);
		return rc;
	}
	*out = sc;
	return LAB_OK;
}

static void bind_opt(sqlite3_stmt *q, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i);
}

static int sq_done(struct store_scratch *sc, sqlite3_stmt *q, int r, struct lab_err *e)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (r == SQLITE_DONE || r == SQLITE_ROW)
		return LAB_OK;
	return lab_err_set(e, LAB_EINFRA, "import scratch file: %s", sqlite3_errmsg(sc->db));
}

int store_scratch_id_get(struct store_scratch *sc, const char *key, int64_t *id,
			 struct lab_err *e)
{
	sqlite3_stmt *q = sc->q[SQ_ID_GET];
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	*id = r == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	int rc = sq_done(sc, q, r, e);
	return rc ? -1 : r == SQLITE_ROW;
}

int store_scratch_id_put(struct store_scratch *sc, const char *key, int64_t id,
			 struct lab_err *e)
{
	sqlite3_stmt *q = sc->q[SQ_ID_PUT];
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, id);
	return sq_done(sc, q, sqlite3_step(q), e);
}

int store_scratch_each_row(struct store_scratch *sc,
			   int (*cb)(const struct csv_row *r, void *arg), void *arg,
			   struct lab_err *e)
{
	/* its own statement: the callback may use the id map meanwhile */
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(sc->db, scratch_sql[SQ_ROWS], -1, &q, NULL) != SQLITE_OK)
		return lab_err_set(e, LAB_EINFRA, "import scratch file: %s",
				   sqlite3_errmsg(sc->db));
	int r, rc = LAB_OK;
	while (rc == LAB_OK && (r = sqlite3_step(q)) == SQLITE_ROW) {
		struct csv_row row = {
			.line = sqlite3_column_int(q, 0),
			.key = (char *)sqlite3_column_text(q, 1),
			.group = (char *)sqlite3_column_text(q, 2),
			.label = (char *)sqlite3_column_text(q, 3),
			.board = (char *)sqlite3_column_text(q, 4),
			.host = (char *)sqlite3_column_text(q, 5),
			.mode = (char *)sqlite3_column_text(q, 6),
			.metric = (char *)sqlite3_column_text(q, 7),
			.run = sqlite3_column_int(q, 8),
			.value = sqlite3_column_double(q, 9),
			.value_text = (char *)sqlite3_column_text(q, 10),
		};
		rc = cb(&row, arg);
	}
	if (rc == LAB_OK && r != SQLITE_DONE)
		rc = lab_err_set(e, LAB_EINFRA, "import scratch file: %s",
				 sqlite3_errmsg(sc->db));
	sqlite3_finalize(q);
	return rc;
}

int store_scratch_add_row(struct store_scratch *sc, const struct csv_row *row, int *first_line,
			  struct lab_err *e)
{
	sqlite3_stmt *q = sc->q[SQ_INS];
	*first_line = 0;
	sqlite3_bind_int(q, 1, row->line);
	sqlite3_bind_text(q, 2, row->group, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, row->key, -1, SQLITE_STATIC);
	bind_opt(q, 4, row->label);
	bind_opt(q, 5, row->board);
	bind_opt(q, 6, row->host);
	bind_opt(q, 7, row->mode);
	sqlite3_bind_text(q, 8, row->metric, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 9, row->run);
	sqlite3_bind_double(q, 10, row->value);
	sqlite3_bind_text(q, 11, row->value_text, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if ((r & 0xff) == SQLITE_CONSTRAINT) {
		sqlite3_stmt *d = sc->q[SQ_DUP];
		sqlite3_bind_text(d, 1, row->group, -1, SQLITE_STATIC);
		sqlite3_bind_text(d, 2, row->metric, -1, SQLITE_STATIC);
		sqlite3_bind_int(d, 3, row->run);
		r = sqlite3_step(d);
		*first_line = r == SQLITE_ROW ? sqlite3_column_int(d, 0) : -1;
		return sq_done(sc, d, r, e);
	}
	if (r != SQLITE_DONE)
		return lab_err_set(e, LAB_EINFRA, "import scratch file: %s", sqlite3_errmsg(sc->db));
	return LAB_OK;
}

int store_scratch_first_key(struct store_scratch *sc, const char *group, const char *key,
			    bool *same, struct lab_err *e)
{
	sqlite3_stmt *g = sc->q[SQ_GRP_INS];
	*same = true;
	sqlite3_bind_text(g, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_text(g, 2, key, -1, SQLITE_STATIC);
	int rc = sq_done(sc, g, sqlite3_step(g), e);
	if (rc || sqlite3_changes(sc->db) > 0)
		return rc;
	g = sc->q[SQ_GRP_KEY];
	sqlite3_bind_text(g, 1, group, -1, SQLITE_STATIC);
	int r = sqlite3_step(g);
	*same = r == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(g, 0), key) == 0;
	return sq_done(sc, g, r, e);
}
