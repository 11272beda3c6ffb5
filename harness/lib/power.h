/*
 * power.h - power drivers: one file per driver (power/<name>.c), each
 * exporting `const struct power_driver power_<name>`, one row in
 * power_drivers[] (power.c).
 *
 * All operations are asynchronous on the loop: a request returns at once and
 * completes by calling power_complete() exactly once (from a loop callback,
 * never from inside the request call itself).  Drivers never block.
 * Every error message names the device and what failed.
 */
#ifndef EMMCLAB_POWER_H
#define EMMCLAB_POWER_H

#include <stdbool.h>
#include <stdint.h>
#include "cfgnode.h"
#include "loop.h"
#include "opt.h"
#include "util.h"

enum power_op { POWER_ON, POWER_OFF, POWER_CYCLE, POWER_STATE };
enum power_state { POWER_UNKNOWN = -1, POWER_IS_OFF = 0, POWER_IS_ON = 1 };

/* Bumped when struct power_driver changes; every ops table sets .version to it. */
#define POWER_OPS_VERSION 1

struct power;
typedef void (*power_done_cb)(struct power *p, int rc, int state, const char *msg, void *arg);

struct power_driver {
	const char *name;          /* first: the registry finds drivers by it */
	int version;               /* POWER_OPS_VERSION */
	const char *help;
	const struct opt *options; /* driver's own keys (besides driver/off_time) */
	size_t cfg_size;           /* size of the struct the options fill */
	/* Required: start.  Optional: init, fini, cancel. */
	int (*init)(struct power *p, struct lab_err *e);
	void (*fini)(struct power *p);
	/* Start an operation; complete later with power_complete().  POWER_CYCLE
	 * is only passed when .native_cycle is set; otherwise power.c runs
	 * off, waits off_time, then on.  POWER_STATE only when .can_read_state. */
	int (*start)(struct power *p, enum power_op op);
	/* Abandon an operation in flight (timeout or shutdown); no completion follows. */
	void (*cancel)(struct power *p);
	bool native_cycle;
	bool can_read_state;
	bool state_is_local; /* reading the state touches no device (a local process): cheap to poll */
	/* the off_time when the block sets none (NULL: "2s", what a real supply
	 * needs to drain); "0s" for devices without capacitors, e.g. QEMU */
	const char *off_time_default;
};

struct power {
	const struct power_driver *drv;
	struct loop *loop;
	char *board;        /* board name, for messages */
	char *device;       /* driver's description of the device, for messages */
	void *cfg;          /* driver config, filled by drv->options */
	void *priv;         /* driver state */
	uint64_t off_time_ms;  /* minimum off time before power-on (default: the driver's, else 2s) */
	uint64_t timeout_ms;   /* per operation (default 30s) */
	/* owned by power.c */
	enum power_op op, phase;
	power_done_cb cb;
	void *cb_arg;
	bool busy;
	uint64_t last_off_ns;
	struct loop_timer timer;
	int last_state;
	int refused_rc; /* what the start hook returned, reported by the timer */
};

/* Every power driver, one row each, NULL-terminated. */
extern const struct power_driver *const power_drivers[];
const struct power_driver *power_driver_find(const char *name);
/* Check one ops table (version, name, help, required hooks); the error names
 * the driver and what is wrong. */
int power_ops_check(const struct power_driver *d, struct lab_err *e);
/* power_ops_check on every row of power_drivers. */
int power_registry_check(struct lab_err *e);

/* Create from a `power:` block ({driver: NAME, off_time:, timeout:, ...driver keys}). */
int power_new(struct loop *l, const char *board, const struct cfg_node *cfg, struct power **out,
	      struct lab_err *e);
/* Validate a `power:` block (driver name and every key) without creating the driver. */
int power_check_cfg(const char *board, const struct cfg_node *cfg, struct lab_err *e);
void power_free(struct power *p);
/* Start op; cb(p, rc, state, msg, arg) runs once, later, on the loop. */
int power_request(struct power *p, enum power_op op, power_done_cb cb, void *arg);
/* For drivers: finish the current driver operation. */
void power_complete(struct power *p, int rc, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
