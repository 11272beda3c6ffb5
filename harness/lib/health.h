/*
 * health.h - the wear of an eMMC part (docs/running.md, "Part health"): the
 * EXT_CSD life-time estimates A and B (DEVICE_LIFE_TIME_EST_TYP_A [268],
 * _TYP_B [269]) and PRE_EOL_INFO [267] as the agent reports them, and the
 * board type's thresholds (`health:`) a reading is checked against.
 *
 * Pure functions, no I/O: the runner (run.c) applies them to each reading,
 * the store keeps the readings (store_health.c), `status` and the reports
 * show them.
 */
#ifndef EMMCLAB_HEALTH_H
#define EMMCLAB_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A board type's `health:` section (config.c parses it). */
struct health_cfg {
	int64_t life_time_max; /* highest acceptable life_a / life_b (0x01..0x0b) */
	int64_t pre_eol_max;   /* highest acceptable pre_eol (1 normal, 2 warning, 3 urgent) */
	int on_exceed;         /* enum health_action */
};

enum health_action {
	HEALTH_FLAG, /* the job runs; its figures are marked WORN in every output */
	HEALTH_SKIP, /* the board's remaining jobs are skipped (the part is kept for inspection) */
};
extern const char *const health_action_names[]; /* NULL-terminated, for the option table */

/* One reading; -1 where the part did not say. */
struct health_reading {
	int life_a, life_b, pre_eol;
	char src[16]; /* ioctl, debugfs, sysfs, sim ... ("" unknown) */
};

void health_reading_init(struct health_reading *r);
/* Does r carry any value? */
bool health_reading_any(const struct health_reading *r);

/* A protocol value: "0x0a", "10" or "0x0A" -> 0..255; -1 for NULL, "" or
 * anything else (a reading the agent could not make is not a zero). */
int health_value(const char *s);

/* Is r past c?  Then why is filled ("life_a 0x0a > life_time_max 0x09")
 * and true is returned.  Unknown values never exceed. */
bool health_exceeds(const struct health_cfg *c, const struct health_reading *r, char *why,
		    size_t size);

/* The JEDEC meaning of a life-time estimate: "0-10%" ... "90-100%", "past
 * its life" (0x0b), "not defined" (0 or > 0x0b), "?" (-1). */
const char *health_life_text(int v);
/* Of PRE_EOL_INFO: "normal", "warning", "urgent", "not defined", "?". */
const char *health_eol_text(int v);

struct store_health_sum;
/* A part's wear for status and the text report: the latest reading with its
 * meaning ("A 0x02 (10-20%) B 0x01 (0-10%) pre-EOL 1 (normal)"), and the
 * trend since the first reading ("A +1 B +0 in 14 readings since 2026-11-02"). */
void health_now_text(const struct store_health_sum *h, char *buf, size_t size);
void health_trend_text(const struct store_health_sum *h, char *buf, size_t size);
struct results;
/* Has parts[part] of r readings and figures in r (the reports show those)? */
bool health_part_shown(const struct results *r, size_t part);
/* "+1" / "+0" / "?": how far a life-time estimate moved between two readings. */
void health_delta_text(int first, int last, char *buf, size_t size);

#endif
