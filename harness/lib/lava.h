/*
 * lava.h - the LAVA executor: a board of the lab that is a device of a LAVA
 * farm.  emmclab plans, verifies and stores; LAVA boots and runs.
 *
 * Per slot the runner (run.c) asks for one LAVA job: lava_job_definition()
 * writes it (deploy kernel + ramdisk to tmpfs with LAVA's overlay in the
 * cpio.newc ramdisk, boot with the mode's command line, one inline test whose
 * steps run the agent commands the runner would type on a local board, each
 * between EMMCLAB-LAVA begin/end markers, and report every sample with
 * `lava-test-case --measurement --units`).  lava_job_submit() posts it to
 * /api/v0.2/jobs/ (Authorization: Token), a loop timer polls the job with
 * backoff, and when LAVA finishes it the log (/api/v0.2/jobs/ID/logs/) is
 * fetched and cut into steps: the target lines between the markers, which the
 * runner hands to the same protocol parser and collector as a console's.
 *
 * The token comes from a file or an environment variable and lives only in
 * a request header marked secret (http.h): never in a message, a log or the
 * definition.
 *
 * Loop rules: nothing blocks; callbacks run from loop callbacks, never inside
 * the call that started the job.  lava_job_free() inside its own callback is
 * allowed (the job is idle then).
 */
#ifndef EMMCLAB_LAVA_H
#define EMMCLAB_LAVA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfgnode.h"
#include "loop.h"
#include "opt.h"
#include "util.h"

struct lava;
struct lava_job;
struct kernel_cfg;

/* A board's `lava:` block. */
struct lava_device_cfg {
	char *device_type;          /* LAVA device type, e.g. qemu */
	struct opt_strlist tags;    /* LAVA device tags the job asks for */
	char *arch;                 /* the job's context arch (QEMU) */
	char *cmdline;              /* appended after the kernel's and the mode's command line */
	char *kernel_url;           /* default: file:// of the kernel image */
	char *initrd_url;           /* default: file:// of the kernel's initrd */
	char *compression;          /* of the ramdisk: gz (default), xz, none */
	char *login;                /* user LAVA logs in as */
	struct opt_strlist prompts; /* shell prompts LAVA waits for */
	char *agent_path;           /* emmclab-agent on the DUT */
	uint64_t boot_timeout_ms, test_timeout_ms, queue_timeout_ms;
};

/* Parse a board's `lava:` block (file:line:col errors); free with lava_device_free. */
int lava_device_parse(const struct cfg_node *n, struct lava_device_cfg *d, struct lab_err *e);
void lava_device_free(struct lava_device_cfg *d);

/* The server from the lab's `lava:` block; reads the token now. */
int lava_new(struct loop *l, const struct cfg_node *n, struct lava **out, struct lab_err *e);
void lava_free(struct lava *lv);
const char *lava_url(const struct lava *lv); /* base URL, ending in '/' */

/* Counters for the benchmark: requests made, bytes of log fetched. */
struct lava_stats {
	uint64_t requests, log_bytes, polls;
};
void lava_get_stats(const struct lava *lv, struct lava_stats *st);

/* One agent command of a job and, after the job, what it printed. */
struct lava_step {
	char *args;   /* as given to the agent, e.g. "mode expect=fua" */
	char **lines; /* target lines between its markers */
	size_t nlines;
	int exit_status; /* -1: no end marker (the command did not finish) */
};

struct lava_job_spec {
	const struct lava_device_cfg *dev;
	const struct kernel_cfg *kernel;
	const char *name;         /* job name */
	const char *cmdline;      /* the mode's recipe */
	const char *case_prefix;  /* lava-test-case name prefix, e.g. "fua" */
	const char *const *steps; /* agent argument strings */
	size_t nsteps;
	uint64_t job_timeout_ms;
};
/* The job definition (YAML); caller frees. */
char *lava_job_definition(const struct lava_job_spec *sp);

/* How a LAVA job ended. */
struct lava_outcome {
	int rc;           /* LAB_OK: Complete and its log parsed; else LAB_EINFRA */
	const char *kind; /* NULL, or the failure class: "lava-infra", "lava-canceled",
	                   * "job-timeout", "boot-timeout", "device-offline" */
	char msg[512];
	int64_t id;
	char url[256]; /* the job's page */
	char worker[128];
	char device[128];
	struct lava_step *steps; /* owned by the job */
	size_t nsteps;
	uint64_t finished_ms; /* loop time LAVA was seen finished (the log fetch follows) */
};

/* id known (the caller journals it before anything else happens) */
typedef void (*lava_submitted_cb)(struct lava_job *j, int64_t id, const char *url, void *arg);
typedef void (*lava_done_cb)(struct lava_job *j, const struct lava_outcome *o, void *arg);

/* Submit and follow; steps are copied (outcome steps in the same order). */
int lava_job_submit(struct lava *lv, const char *definition, const char *const *steps,
                    size_t nsteps, uint64_t queue_timeout_ms, lava_submitted_cb sub,
                    lava_done_cb done, void *arg, struct lava_job **out, struct lab_err *e);
/* Follow a job submitted earlier (run --resume). */
int lava_job_attach(struct lava *lv, int64_t id, const char *const *steps, size_t nsteps,
                    uint64_t queue_timeout_ms, lava_done_cb done, void *arg, struct lava_job **out);
/* Stop following (no callback follows); the LAVA job itself runs on. */
void lava_job_free(struct lava_job *j);
/* Ask LAVA to cancel the job (shutdown); fire and forget. */
void lava_job_cancel(struct lava_job *j);

/* Cut a LAVA log (the /logs/ YAML, one "- {...}" per line) into the steps'
 * target lines; sets o->steps.  Exposed for the unit test.  Also notes in
 * o->msg / o->kind the error LAVA reported, if any. */
int lava_log_parse(const char *log, size_t len, const char *const *steps, size_t nsteps,
                   struct lava_outcome *o);
void lava_outcome_free(struct lava_outcome *o);

#endif
