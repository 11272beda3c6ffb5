/*
 * registry.h - the start-up check of every driver registry (console, power,
 * deploy, report, upload): each kind's <kind>_registry_check() in turn, as
 * fio's check_engine_ops() checks each engine.  emmclab runs it before any
 * command; test_registry runs it too.
 */
#ifndef EMMCLAB_REGISTRY_H
#define EMMCLAB_REGISTRY_H

#include "util.h"

/* LAB_OK, or the first bad ops table with the driver and what is wrong in e. */
int lab_registries_check(struct lab_err *e);

#endif
