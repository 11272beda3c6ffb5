/* Named like a store file but outside harness/lib itself: not the store,
 * so the sealed_store check must refuse it too. */
#include <sqlite3.h>
