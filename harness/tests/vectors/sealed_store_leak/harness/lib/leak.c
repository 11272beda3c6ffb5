/* A module that runs SQL on the store's handle: what the sealed_store
 * check must refuse (ctest sealed_store_detects_leak expects it to fail). */
#include "store_internal.h"

int leak_count_runs(struct store *s);

int leak_count_runs(struct store *s)
{
	sqlite3_stmt *q;
	sqlite3_prepare_v2(store_sqlite(s), "SELECT count(*) FROM run", -1, &q, NULL);
	return q ? 1 : 0;
}
