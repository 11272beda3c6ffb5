/*
 * upload.c - the registry of upload kinds: one row per kind, each kind one
 * file in upload/ exporting its ops table.  upload_registry_check() is run
 * at start-up (and by test_upload) so a kind without a required hook is
 * refused by name instead of crashing on its first upload.
 *
 * The rest of the upload module lives in upload/: target.c (configuration),
 * secret.c (tokens), outbox.c (queueing, on the store's outbox), bundle.c
 * (report files to send), sender.c (draining the outbox on the loop).
 */
#include "upload.h"
#include "driver.h"

#include <string.h>

/* The upload kinds (upload/<kind>.c, each exporting upload_<kind>): one row
 * each.  A new one is its file, one row here and its line in harness/CMakeLists.txt. */
#define UPLOAD_KINDS(X)                                                                            \
	X(upload_squad)                                                                            \
	X(upload_http_put)                                                                         \
	X(upload_webhook)
#define X(d) extern const struct upload_kind d;
UPLOAD_KINDS(X)
#undef X

const struct upload_kind *const upload_kinds[] = {
#define X(d) &d,
	UPLOAD_KINDS(X)
#undef X
	NULL,
};

const struct upload_kind *upload_kind_find(const char *name)
{
	for (size_t i = 0; name && upload_kinds[i]; i++)
		if (strcmp(upload_kinds[i]->name, name) == 0)
			return upload_kinds[i];
	return NULL;
}

DRIVER_HEAD_ASSERT(struct upload_kind);

static int upload_kind_check(const void *ops, struct lab_err *e)
{
	const struct upload_kind *k = ops;
	int rc = driver_check_head("upload", k, UPLOAD_OPS_VERSION, e);
	if (!rc)
		rc = driver_check_hook("upload", k->name, k->options != NULL, "options", e);
	if (!rc)
		rc = driver_check_hook("upload", k->name, k->items != NULL, "items", e);
	if (!rc)
		rc = driver_check_hook("upload", k->name, k->request != NULL, "request", e);
	return rc;
}

int upload_kinds_check(const struct upload_kind *const *kinds, struct lab_err *e)
{
	size_t n = 0;
	while (kinds[n])
		n++;
	if (n > UPLOAD_KINDS_MAX)
		return LAB_ERR(e, LAB_EINFRA, "more than %d upload kinds: raise UPLOAD_KINDS_MAX",
			       UPLOAD_KINDS_MAX);
	const struct driver_kind dk = {"upload", (const void *const *)kinds, NULL};
	return driver_check_list(&dk, upload_kind_check, e);
}

int upload_registry_check(struct lab_err *e)
{
	return upload_kinds_check(upload_kinds, e);
}
