/*
 * config_check.h - what `emmclab check` finds beyond what loading checks:
 * combinations of blocks that cannot boot (the type's U-Boot against the
 * deploy method and the power driver), artefacts missing on the host for the
 * chosen deploy and power, and where the agent comes from.  Every finding
 * names file:line:col.  Touches no device; reads only host file metadata.
 */
#ifndef EMMCLAB_CONFIG_CHECK_H
#define EMMCLAB_CONFIG_CHECK_H

#include "config.h"

enum config_finding { CONFIG_WARNING, CONFIG_ERROR };
typedef void (*config_finding_cb)(enum config_finding kind, const char *msg, void *arg);

enum { CONFIG_CHECK_FILES = 1 }; /* also check that the host files named exist */

/* Report every finding through cb; returns the number of errors (warnings
 * are advice: the configuration may still work, e.g. an agent on the image). */
int config_check(const struct lab_cfg *c, unsigned flags, config_finding_cb cb, void *arg);

#endif
