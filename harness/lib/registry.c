/* registry.c - see registry.h. */
#include "registry.h"
#include "console.h"
#include "deploy.h"
#include "power.h"
#include "report.h"
#include "upload.h"

int lab_registries_check(struct lab_err *e)
{
	int rc = console_registry_check(e);
	if (!rc)
		rc = power_registry_check(e);
	if (!rc)
		rc = deploy_registry_check(e);
	if (!rc)
		rc = report_registry_check(e);
	if (!rc)
		rc = upload_registry_check(e);
	return rc;
}
