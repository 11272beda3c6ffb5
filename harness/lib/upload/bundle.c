/*
 * bundle.c - the files an upload sends (a rendered report, or a snapshot of
 * the whole store), rendered into the run's spool once so that every
 * re-send carries the same bytes.  See upload.h.
 */
#include "upload_internal.h"
#include "report.h"

#include <string.h>
#include <sys/stat.h>

const char *upload_bundle_name(const char *format)
{
	static const struct {
		const char *fmt, *name;
	} names[] = {
		{"html", "report.html"}, {"json", "report.json"}, {"csv", "report.csv"},
		{"junit", "report.xml"}, {"markdown", "report.md"}, {"text", "report.txt"},
		{"sqlite", "results.db"},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(names); i++)
		if (strcmp(format, names[i].fmt) == 0)
			return names[i].name;
	return NULL;
}

int upload_bundle_file(const struct upload_job *j, const char *format, char *path, size_t n,
		       const char **name, const char **mime, struct lab_err *e)
{
	const char *nm = upload_bundle_name(format);
	if (!nm)
		return lab_err_set(e, LAB_EUSAGE, "unknown bundle format '%s'", format);
	const char *mt = "application/vnd.sqlite3";
	if (strcmp(format, "sqlite") != 0) {
		const struct report_renderer *r = report_renderer_find(format);
		if (!r)
			return lab_err_set(e, LAB_EUSAGE, "no report renderer '%s'", format);
		mt = r->mime;
	}
	if ((size_t)snprintf(path, n, "%s/%s", j->spool, nm) >= n)
		return lab_err_set(e, LAB_EINFRA, "spool path too long");
	if (name)
		*name = nm;
	if (mime)
		*mime = mt;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		return LAB_OK; /* rendered by an earlier attempt: the same bytes again */
	if (strcmp(format, "sqlite") == 0)
		return store_snapshot(j->s, path, e);
	return report_write_file(j->s, j->run->id, format, path, NULL, e);
}
