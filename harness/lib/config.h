/*
 * config.h - the resolved configuration: lab, board types, boards, suites, plan.
 *
 * Every struct here is filled through an option table (config.c) from YAML.
 * Driver-specific blocks (console, power, deploy, sim) are kept as raw nodes
 * and parsed by the driver's own option table when it is instantiated, so a
 * new driver needs no change here.  See docs/configuration.md.
 */
#ifndef EMMCLAB_CONFIG_H
#define EMMCLAB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "cfgnode.h"
#include "health.h"
#include "mode.h"
#include "opt.h"
#include "util.h"

/* How a mode is requested on a board type. */
struct mode_recipe {
	bool supported;
	char *cmdline;              /* appended to the kernel command line */
	struct opt_strlist sysfs;   /* "path=value" written after boot, before verification */
	char *kernel, *dtb;         /* optional: a different kernel/DTB for this mode */
};

struct uboot_cfg {
	char *autoboot_pattern; /* regex; default "Hit any key to stop autoboot" */
	char *interrupt_key;    /* default " " */
	char *prompt;           /* literal, default "=> " */
	uint64_t char_delay_ms; /* paced typing */
	int64_t chunk;          /* characters per chunk before the delay (1 = per char) */
	int64_t echo_window;    /* echo pacing: characters typed ahead of their echo (0 = off) */
	char *boot_cmd;         /* e.g. "booti ${kernel_addr_r} - ${fdt_addr_r}" */
	char *bootargs;         /* base bootargs, mode cmdline appended */
	struct opt_strlist env; /* "name=value" set before boot */
};

struct shell_cfg {
	char *login_pattern;    /* regex, default "login: *$" */
	char *user;             /* default root */
	char *password_env;     /* env var holding the password; empty = none */
	char *prompt_pattern;   /* regex for an initial shell prompt, default "[#$] *$" */
	char *agent_path;       /* path of emmclab-agent on the DUT */
	char *agent_local;      /* host path of the agent binary to push when missing; "" = never push */
	char *block_device;     /* e.g. mmcblk0; "" = agent finds the eMMC */
};

struct timeouts_cfg {
	uint64_t power_ms, first_output_ms, bootloader_ms, deploy_ms, boot_ms, login_ms,
		command_ms, job_ms;
};

/* A board type's `source:`, in config_source_names[] order. */
enum config_source { CONFIG_SOURCE_LAB, CONFIG_SOURCE_VIRTUAL, CONFIG_SOURCE_SIMULATED };
extern const char *const config_source_names[];

struct board_type {
	char *name;
	char *description;
	char *host;              /* mmc host controller driver name, e.g. sdhci-sprd */
	bool has_cqe;            /* the host supports CQE */
	bool trace;              /* the agent can trace mmc requests (the mode proof) */
	char *trace_reason;      /* why not, required with trace: false */
	int source;              /* enum config_source: where its figures come from */
	struct uboot_cfg uboot;
	struct shell_cfg shell;
	struct timeouts_cfg timeouts;
	struct mode_recipe modes[MODE_COUNT];
	int64_t retries;         /* boot retries with a power cycle */
	int64_t quarantine_after;/* consecutive health failures before quarantine */
	struct health_cfg health;/* part wear thresholds (health.h) */
	const char *file;        /* where it was defined */
	int line;
	struct cfg_node *node;   /* its YAML, for positions in `check` (config_check.c); owned */
};

struct kernel_cfg {
	char *name;
	char *image, *initrd, *dtb; /* host paths (artifacts, verified by sha256) */
	char *cmdline;             /* base command line */
	char *version;             /* expected uname -r, optional */
	struct cfg_node *node;     /* its YAML, for positions in `check` (config_check.c); owned */
};

struct part_cfg {          /* what the lab says is fitted; verified against identity */
	char *label;
	char *cid;             /* optional expected CID */
	char *model;           /* sim/virt profile name */
};

/* Whether boards of type t prove their mode with tracepoints (NULL: yes). */
static inline bool board_type_traces(const struct board_type *t)
{
	return !t || t->trace;
}

struct board_cfg {
	char *name;
	char *type_name;
	const struct board_type *type; /* resolved */
	struct part_cfg part;
	struct cfg_node *console;  /* {driver: serial|tcp|pty|exec, ...} */
	struct cfg_node *power;    /* {driver: pdudaemon|tasmota|..., ...} */
	struct cfg_node *deploy;   /* {driver: uboot-tftp|fastboot|ums|exec|qemu|none, ...} */
	struct cfg_node *sim;      /* simulator-only block, ignored by the controller */
	struct cfg_node *lava;     /* {device_type, tags, ...}: a LAVA device (lava.h), NULL: local */
	struct opt_strlist tags;
	bool enabled;
	struct cfg_node *uses;     /* {stage: [resource, ...]}: the lab's shared resources it needs (schedule.h) */
	const char *file;
	int line, col;
};

struct workload_cfg {
	char *name;              /* androbench | fscopy | powerfail | fio */
	struct cfg_node *args;   /* passed to the agent as key=value */
	int64_t iterations;      /* 0: the suite's */
};

struct suite_cfg {
	char *name;
	char *description;
	struct opt_strlist modes;     /* mode names; unsupported ones are skipped per board */
	int64_t iterations;
	bool reboot_between_modes;
	int order;                    /* 0 interleave (ABAB..), 1 random (seeded), 2 sequential */
	int64_t seed;
	int64_t precondition_passes;
	bool exclude_warmup;
	struct workload_cfg *workloads;
	size_t nworkloads;
	const char *file;
};

struct plan_cfg {
	char *name;
	char *lab;                   /* path to the lab file (relative to the plan) */
	struct opt_strlist boards;   /* names or tags; empty = all enabled */
	struct opt_strlist kernels;  /* kernel names; empty = the lab's default */
	struct opt_strlist suites;   /* suite names or paths */
	uint64_t budget_ms;
	int64_t parallel;            /* boards at once; 0 = all */
	uint64_t job_budget_ms;      /* per job; 0 = the board type's timeouts.job */
	struct cfg_node *priorities; /* suite name -> priority (higher first), checked by plan.c */
	int order;                   /* 0 each suite's own, else 1 + the suite order (plan.h) */
	int64_t seed;                /* random order's seed for every suite; 0: each suite's */
	char *results;               /* database path */
	char *report_html;           /* HTML report path */
	struct cfg_node *uploads;    /* upload targets, parsed by upload.c */
	const char *file;
};

struct lab_cfg {
	char *name;
	char *results;               /* default database path */
	char *transcripts;           /* transcript directory */
	uint64_t transcript_max;     /* bytes per transcript before rotation */
	uint64_t transcripts_keep;   /* total bytes of the transcript directory (0: no cap) */
	char *locks;                 /* board lock directory, NULL: the default (lock.h) */
	uint64_t store_wait_ms;      /* how long a run retries a busy database */
	struct board_type *types;
	size_t ntypes;
	struct board_cfg *boards;
	size_t nboards;
	struct kernel_cfg *kernels;
	size_t nkernels;
	struct suite_cfg *suites;
	size_t nsuites;
	struct plan_cfg *plan;       /* when a plan was loaded */
	struct cfg_node *uploads;
	struct cfg_node *resources;  /* {name: count}: shared limited resources (schedule.h) */
	struct cfg_node *lava;       /* the LAVA server (lava.h), NULL: none */
	char *base_dir;              /* directory of the top file: relative paths resolve here */
};

/*
 * Load any mix of lab, type, suite and plan files (a plan pulls in its lab,
 * a lab its includes).  On error: LAB_EUSAGE with "file:line:col: message".
 */
int config_load(const char *const *paths, size_t npaths, struct lab_cfg **out, struct lab_err *e);
void config_free(struct lab_cfg *c);
/* Print the resolved configuration as YAML (emmclab check). */
void config_print(FILE *f, const struct lab_cfg *c);

/* Markdown tables of every configuration key, from the option tables (docs). */
void config_schema_md(FILE *f);

const struct board_cfg *config_board(const struct lab_cfg *c, const char *name);
const struct suite_cfg *config_suite(const struct lab_cfg *c, const char *name);
const struct kernel_cfg *config_kernel(const struct lab_cfg *c, const char *name);
/* Resolve a path relative to the file that named it; caller frees. */
char *config_path(const char *relative_to_file, const char *path);

#endif
