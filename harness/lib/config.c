/*
 * config.c - loading lab, board type, kernel, suite and plan files into one
 * resolved struct lab_cfg (config.h), with includes, defaults and
 * cross-file validation.  Every error names file:line:col.
 *
 * Loading happens in two passes: (1) read every file (includes first, each
 * file once, cycles are errors) and collect the raw section nodes; (2) merge
 * defaults, parse every node with its option table and check references.
 * The raw documents live until the end of config_load; parsed structs keep
 * clones of the driver blocks, so nothing points into freed documents.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIG_MAX_FILES 256

/* Workloads the agent implements (docs/agent.md). */
static const char *const workload_names[] = {"androbench", "fscopy", "powerfail", "fio", NULL};
static const char *const order_names[] = {"interleave", "random", "sequential", NULL};
static const char *const plan_order_names[] = {"suite", "interleave", "random", "sequential", NULL};
const char *const config_source_names[] = {"lab", "virtual", "simulated", NULL};

/* ---- option tables ---- */

#define F(st, m) offsetof(struct st, m)

static const struct opt recipe_opts[] = {
	{.key = "supported", .type = OPT_BOOL, .offset = F(mode_recipe, supported), .def = "true",
	 .help = "the board can run this mode (a mode listed under `modes:` is supported unless false)"},
	{.key = "cmdline", .type = OPT_STR, .offset = F(mode_recipe, cmdline), .def = "",
	 .help = "appended to the kernel command line to select the mode"},
	{.key = "sysfs", .type = OPT_STRLIST, .offset = F(mode_recipe, sysfs),
	 .help = "\"path=value\" writes done after boot, before the mode is verified"},
	{.key = "kernel", .type = OPT_STR, .offset = F(mode_recipe, kernel),
	 .help = "a different kernel image for this mode (path, relative to the file)"},
	{.key = "dtb", .type = OPT_STR, .offset = F(mode_recipe, dtb),
	 .help = "a different device tree for this mode (path, relative to the file)"},
	{0},
};

/* One section per row of the mode table (mode.h). */
#define MODE_ENTRY(id, name, fua, wc, cqe, abbrev, h) \
	{.key = name, .type = OPT_SECTION, .offset = (id) * sizeof(struct mode_recipe), \
	 .sub = recipe_opts, .help = h},
static const struct opt modes_opts[] = {
	LAB_MODES(MODE_ENTRY)
	{0},
};
#undef MODE_ENTRY

static const struct opt uboot_opts[] = {
	{.key = "autoboot_pattern", .type = OPT_STR, .offset = F(uboot_cfg, autoboot_pattern),
	 .def = "Hit any key to stop autoboot", .help = "regex announcing the autoboot countdown"},
	{.key = "interrupt_key", .type = OPT_STR, .offset = F(uboot_cfg, interrupt_key), .def = " ",
	 .help = "what to send to stop autoboot"},
	{.key = "prompt", .type = OPT_STR, .offset = F(uboot_cfg, prompt), .def = "=> ",
	 .help = "the U-Boot prompt (literal); empty, and the default of a type without a `uboot:` block: no U-Boot, boards boot by themselves"},
	{.key = "char_delay", .type = OPT_DURATION, .offset = F(uboot_cfg, char_delay_ms),
	 .def = "10ms", .min = 0, .max = 1000, .help = "delay between typed chunks (U-Boot drops pasted input)"},
	{.key = "chunk", .type = OPT_INT, .offset = F(uboot_cfg, chunk), .def = "1", .min = 1,
	 .max = 4096, .help = "characters typed per chunk before the delay"},
	{.key = "echo_window", .type = OPT_INT, .offset = F(uboot_cfg, echo_window), .def = "0",
	 .min = 0, .max = 256,
	 .help = "the UART receive FIFO's depth: type this many characters at once and the next "
		 "as soon as U-Boot has echoed them (it echoes what it reads), char_delay/chunk "
		 "only if the echo is late; 0: char_delay/chunk alone"},
	{.key = "boot_cmd", .type = OPT_STR, .offset = F(uboot_cfg, boot_cmd),
	 .def = "booti ${kernel_addr_r} - ${fdt_addr_r}", .help = "command that starts the kernel"},
	{.key = "bootargs", .type = OPT_STR, .offset = F(uboot_cfg, bootargs), .def = "",
	 .help = "base kernel command line (the kernel's and the mode's are appended)"},
	{.key = "env", .type = OPT_STRLIST, .offset = F(uboot_cfg, env),
	 .help = "\"name=value\" variables set before booting"},
	{0},
};

static const struct opt shell_opts[] = {
	{.key = "login_pattern", .type = OPT_STR, .offset = F(shell_cfg, login_pattern),
	 .def = "login: *$", .help = "regex of the login prompt"},
	{.key = "user", .type = OPT_STR, .offset = F(shell_cfg, user), .def = "root",
	 .help = "login user"},
	{.key = "password_env", .type = OPT_STR, .offset = F(shell_cfg, password_env), .def = "",
	 .help = "environment variable holding the password (empty: no password)"},
	{.key = "prompt_pattern", .type = OPT_STR, .offset = F(shell_cfg, prompt_pattern),
	 .def = "[#$] *$", .help = "regex of the first shell prompt"},
	{.key = "agent_path", .type = OPT_STR, .offset = F(shell_cfg, agent_path),
	 .def = "/usr/local/bin/emmclab-agent", .help = "path of emmclab-agent on the DUT"},
	{.key = "agent_local", .type = OPT_STR, .offset = F(shell_cfg, agent_local), .def = "",
	 .help = "host path of the agent to push when missing on the DUT (empty: never push)"},
	{.key = "block_device", .type = OPT_STR, .offset = F(shell_cfg, block_device), .def = "",
	 .help = "eMMC block device, e.g. mmcblk0 (empty: the agent finds the eMMC)"},
	{0},
};

#define TMO(k, m, d, h) \
	{.key = k, .type = OPT_DURATION, .offset = F(timeouts_cfg, m), .def = d, .min = 100, \
	 .max = 7 * 86400000.0, .help = h}
static const struct opt timeouts_opts[] = {
	TMO("power", power_ms, "30s", "one power operation"),
	TMO("first_output", first_output_ms, "30s", "first console byte after power-on"),
	TMO("bootloader", bootloader_ms, "1m", "power-on to the bootloader prompt"),
	TMO("deploy", deploy_ms, "10m", "flashing or loading the artifacts"),
	TMO("boot", boot_ms, "3m", "boot command to the login prompt"),
	TMO("login", login_ms, "1m", "login to a usable shell"),
	TMO("command", command_ms, "1h", "one agent command: one workload iteration (an ext4 copy pass takes ~15 min on slow parts)"),
	TMO("job", job_ms, "8h", "one job (board x kernel x suite x mode) including retries; also bounds the precondition"),
	{0},
};

static const struct opt health_opts[] = {
	{.key = "life_time_max", .type = OPT_INT, .offset = F(health_cfg, life_time_max),
	 .def = "0x09", .min = 1, .max = 11,
	 .help = "highest acceptable EXT_CSD life-time estimate A or B (0x01: 0-10% of the rated "
		 "life used ... 0x0a: 90-100%, 0x0b: past it); a part above is flagged"},
	{.key = "pre_eol_max", .type = OPT_INT, .offset = F(health_cfg, pre_eol_max), .def = "1",
	 .min = 1, .max = 3,
	 .help = "highest acceptable PRE_EOL_INFO (1 normal, 2 warning: 80% of the reserved "
		 "blocks used, 3 urgent); a part above is flagged"},
	{.key = "on_exceed", .type = OPT_ENUM, .offset = F(health_cfg, on_exceed), .def = "flag",
	 .choices = health_action_names,
	 .help = "a flagged part's jobs: flag (they run; their figures are marked WORN in every "
		 "output) or skip (the board's remaining jobs are skipped)"},
	{0},
};

static const struct opt type_base_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(board_type, name), .flags = OPT_REQUIRED,
	 .help = "type name, referenced by boards' `type:`"},
	{.key = "description", .type = OPT_STR, .offset = F(board_type, description), .def = "",
	 .help = "free text"},
	{.key = "host", .type = OPT_STR, .offset = F(board_type, host), .def = "",
	 .help = "mmc host controller driver, e.g. sdhci-sprd"},
	{.key = "has_cqe", .type = OPT_BOOL, .offset = F(board_type, has_cqe), .def = "false",
	 .help = "the host has a command queue engine (needed by the -cqe modes)"},
	{.key = "trace", .type = OPT_BOOL, .offset = F(board_type, trace), .def = "true",
	 .help = "the agent can trace mmc requests (tracefs); false: samples are verified by sysfs "
		 "alone and marked sysfs-only (needs trace_reason)"},
	{.key = "trace_reason", .type = OPT_STR, .offset = F(board_type, trace_reason), .def = "",
	 .help = "why a board of this type cannot trace (required with `trace: false`)"},
	{.key = "source", .type = OPT_ENUM, .offset = F(board_type, source), .def = "lab",
	 .choices = config_source_names,
	 .help = "what its figures are: lab (a real board), virtual (an emulated board such as QEMU's) or simulated (emmclab sim's model); runs and reports say so"},
	{.key = "uboot", .type = OPT_SECTION, .offset = F(board_type, uboot), .sub = uboot_opts,
	 .help = "U-Boot interaction"},
	{.key = "shell", .type = OPT_SECTION, .offset = F(board_type, shell), .sub = shell_opts,
	 .help = "Linux shell login and agent"},
	{.key = "timeouts", .type = OPT_SECTION, .offset = F(board_type, timeouts),
	 .sub = timeouts_opts, .help = "per-stage timeouts"},
	{.key = "modes", .type = OPT_SECTION, .offset = F(board_type, modes), .sub = modes_opts,
	 .help = "mode recipes keyed by mode name; unlisted modes are unsupported"},
	{.key = "retries", .type = OPT_INT, .offset = F(board_type, retries), .def = "2", .min = 0,
	 .max = 20, .help = "boot retries (each with a power cycle) before the job fails"},
	{.key = "quarantine_after", .type = OPT_INT, .offset = F(board_type, quarantine_after),
	 .def = "3", .min = 1, .max = 1000,
	 .help = "consecutive health failures before the board is quarantined"},
	{.key = "health", .type = OPT_SECTION, .offset = F(board_type, health), .sub = health_opts,
	 .help = "wear thresholds of the fitted parts, checked before and after every job"},
	{0},
};

static const struct opt part_opts[] = {
	{.key = "label", .type = OPT_STR, .offset = F(part_cfg, label), .def = "",
	 .help = "human name of the fitted eMMC part"},
	{.key = "cid", .type = OPT_STR, .offset = F(part_cfg, cid), .def = "",
	 .help = "expected CID (32 hex digits); checked against the DUT's identity"},
	{.key = "model", .type = OPT_NAME, .offset = F(part_cfg, model), .def = "",
	 .help = "simulator/virtual profile name"},
	{0},
};

static const struct opt board_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(board_cfg, name), .flags = OPT_REQUIRED,
	 .help = "unique board name"},
	{.key = "type", .type = OPT_NAME, .offset = F(board_cfg, type_name), .flags = OPT_REQUIRED,
	 .help = "board type name (may come from `defaults:`)"},
	{.key = "part", .type = OPT_SECTION, .offset = F(board_cfg, part), .sub = part_opts,
	 .help = "the eMMC part fitted"},
	{.key = "console", .type = OPT_NODE, .offset = F(board_cfg, console),
	 .help = "{driver: serial|tcp|pty|exec, ...} (keys checked by the console driver)"},
	{.key = "power", .type = OPT_NODE, .offset = F(board_cfg, power),
	 .help = "{driver: pdudaemon|tasmota|shelly|esphome|usb-relay|usb-hub|ykush|exec|manual|qemu, ...}"},
	{.key = "deploy", .type = OPT_NODE, .offset = F(board_cfg, deploy),
	 .help = "{driver: uboot-tftp|fastboot|ums|exec|qemu|none, ...}"},
	{.key = "lava", .type = OPT_NODE, .offset = F(board_cfg, lava),
	 .help = "the board is a LAVA device: {device_type, tags, ...} (keys checked by lava.c; docs/lava.md); it needs no console, power or deploy"},
	{.key = "sim", .type = OPT_NODE, .offset = F(board_cfg, sim),
	 .help = "simulator-only block, ignored by the controller"},
	{.key = "uses", .type = OPT_NODE, .offset = F(board_cfg, uses),
	 .help = "shared resources of the lab it needs, per stage: {boot: [tftp, pdu-main], test: [...]} (a type sets it for its boards under `board:`)"},
	{.key = "tags", .type = OPT_STRLIST, .offset = F(board_cfg, tags),
	 .help = "tags a plan can select boards by"},
	{.key = "enabled", .type = OPT_BOOL, .offset = F(board_cfg, enabled), .def = "true",
	 .help = "false keeps the board out of every plan"},
	{0},
};

static const struct opt kernel_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(kernel_cfg, name), .flags = OPT_REQUIRED,
	 .help = "kernel name, referenced by plans"},
	{.key = "image", .type = OPT_STR, .offset = F(kernel_cfg, image), .def = "",
	 .help = "kernel image path (relative to this file)"},
	{.key = "initrd", .type = OPT_STR, .offset = F(kernel_cfg, initrd), .def = "",
	 .help = "initramfs path (relative to this file)"},
	{.key = "dtb", .type = OPT_STR, .offset = F(kernel_cfg, dtb), .def = "",
	 .help = "device tree blob path (relative to this file)"},
	{.key = "cmdline", .type = OPT_STR, .offset = F(kernel_cfg, cmdline), .def = "",
	 .help = "base kernel command line"},
	{.key = "version", .type = OPT_STR, .offset = F(kernel_cfg, version), .def = "",
	 .help = "expected `uname -r` (checked after boot when set)"},
	{0},
};

static const struct opt workload_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(workload_cfg, name), .flags = OPT_REQUIRED,
	 .help = "androbench | fscopy | powerfail | fio"},
	{.key = "args", .type = OPT_NODE, .offset = F(workload_cfg, args),
	 .help = "map passed to the agent as key=value"},
	{.key = "iterations", .type = OPT_INT, .offset = F(workload_cfg, iterations), .def = "0",
	 .min = 0, .max = 100000, .help = "iterations of this workload (0: the suite's)"},
	{0},
};

static const struct opt suite_base_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(suite_cfg, name), .flags = OPT_REQUIRED,
	 .help = "suite name, referenced by plans"},
	{.key = "description", .type = OPT_STR, .offset = F(suite_cfg, description), .def = "",
	 .help = "free text"},
	{.key = "modes", .type = OPT_STRLIST, .offset = F(suite_cfg, modes),
	 .def = "[fua, cache-nofua, fua-cqe, cache-nofua-cqe]",
	 .help = "modes to run; modes a board type does not support are skipped on that board"},
	{.key = "iterations", .type = OPT_INT, .offset = F(suite_cfg, iterations), .def = "5",
	 .min = 1, .max = 100000, .help = "iterations per mode"},
	{.key = "reboot_between_modes", .type = OPT_BOOL, .offset = F(suite_cfg, reboot_between_modes),
	 .def = "true", .help = "reboot at every mode change; false lets modes whose recipes are sysfs-only (no cmdline, same kernel) switch in place"},
	{.key = "order", .type = OPT_ENUM, .offset = F(suite_cfg, order), .def = "interleave",
	 .choices = order_names, .help = "interleave (ABAB, cancels drift), random (seeded) or sequential"},
	{.key = "seed", .type = OPT_INT, .offset = F(suite_cfg, seed), .def = "1",
	 .help = "seed of the random order"},
	{.key = "precondition_passes", .type = OPT_INT, .offset = F(suite_cfg, precondition_passes),
	 .def = "0", .min = 0, .max = 100, .help = "full-device random write passes before the first iteration"},
	{.key = "exclude_warmup", .type = OPT_BOOL, .offset = F(suite_cfg, exclude_warmup),
	 .def = "true", .help = "leave first iterations flagged as warm-up outliers out of the statistics run prints and reports (always shown)"},
	{0},
};

static const struct opt plan_base_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(plan_cfg, name), .flags = OPT_REQUIRED,
	 .help = "plan name (stored with the run)"},
	{.key = "lab", .type = OPT_STR, .offset = F(plan_cfg, lab), .def = "",
	 .help = "lab file to load (relative to the plan)"},
	{.key = "boards", .type = OPT_STRLIST, .offset = F(plan_cfg, boards),
	 .help = "board names or tags (empty: every enabled board)"},
	{.key = "kernels", .type = OPT_STRLIST, .offset = F(plan_cfg, kernels),
	 .help = "kernel names (empty: boards boot what they have)"},
	{.key = "suites", .type = OPT_STRLIST, .offset = F(plan_cfg, suites), .flags = OPT_REQUIRED,
	 .help = "suite names, or suite files (relative to the plan) to load"},
	{.key = "budget", .type = OPT_DURATION, .offset = F(plan_cfg, budget_ms), .def = "0s",
	 .help = "time budget of the run (0: none); jobs not started by then are skipped"},
	{.key = "parallel", .type = OPT_INT, .offset = F(plan_cfg, parallel), .def = "0", .min = 0,
	 .max = 1000, .help = "boards driven at once (0: all)"},
	{.key = "results", .type = OPT_STR, .offset = F(plan_cfg, results), .def = "",
	 .help = "database path, relative to the plan (empty: the lab's)"},
	{.key = "report_html", .type = OPT_STR, .offset = F(plan_cfg, report_html), .def = "",
	 .help = "HTML report written after the run, relative to the plan (empty: results/report.html; run --no-report writes none)"},
	{.key = "uploads", .type = OPT_NODE, .offset = F(plan_cfg, uploads),
	 .help = "upload targets for this plan (see docs/uploads.md)"},
	{.key = "job_budget", .type = OPT_DURATION, .offset = F(plan_cfg, job_budget_ms), .def = "0s",
	 .help = "time budget of each job (0: the board type's timeouts.job); a job past it is given up as timed out"},
	{.key = "priorities", .type = OPT_NODE, .offset = F(plan_cfg, priorities),
	 .help = "map of suite name to priority (integer, default 0): higher-priority suites run first on each board, so a spent budget drops the lowest"},
	{.key = "order", .type = OPT_ENUM, .offset = F(plan_cfg, order), .def = "suite",
	 .choices = plan_order_names, .help = "mode order on every board: suite (each suite's order), interleave, random (seeded) or sequential"},
	{.key = "seed", .type = OPT_INT, .offset = F(plan_cfg, seed), .def = "0",
	 .help = "seed of the random order for every suite (0: each suite's seed)"},
	{0},
};

/* The lab section, parsed into a private struct and moved into lab_cfg. */
struct lab_section {
	char *name;
	char *results;
	char *transcripts;
	uint64_t transcript_max;
	uint64_t transcripts_keep;
	char *locks;
	uint64_t store_wait_ms;
	struct cfg_node *sim;
	struct cfg_node *resources;
	struct cfg_node *lava;
};

static const struct opt lab_opts[] = {
	{.key = "name", .type = OPT_NAME, .offset = F(lab_section, name), .def = "lab",
	 .help = "lab name"},
	{.key = "results", .type = OPT_STR, .offset = F(lab_section, results), .def = "lab.db",
	 .help = "results database (relative to the directory of the first file named)"},
	{.key = "transcripts", .type = OPT_STR, .offset = F(lab_section, transcripts),
	 .def = "transcripts", .help = "console transcript directory (same base)"},
	{.key = "transcript_max", .type = OPT_SIZE, .offset = F(lab_section, transcript_max),
	 .def = "64MiB", .min = 4096, .max = 1099511627776.0,
	 .help = "bytes per transcript file before it rotates"},
	{.key = "transcripts_keep", .type = OPT_SIZE, .offset = F(lab_section, transcripts_keep),
	 .def = "4GiB", .min = 0, .max = 1125899906842624.0,
	 .help = "total bytes the transcript directory may hold: each run removes the oldest "
		 "transcripts beyond it, on a thread while its boards start (0: no cap)"},
	{.key = "locks", .type = OPT_STR, .offset = F(lab_section, locks), .def = "",
	 .help = "directory of the board lock files (empty: $EMMCLAB_LOCKS, /run/emmclab, or a "
		 "per-user directory when /run is not writable; see docs/running.md)"},
	{.key = "store_wait", .type = OPT_DURATION, .offset = F(lab_section, store_wait_ms),
	 .def = "30m", .min = 0, .max = 604800000.0,
	 .help = "how long a run keeps retrying writes while another process holds the "
		 "database lock (entries wait in a journal meanwhile)"},
	{.key = "sim", .type = OPT_NODE, .offset = F(lab_section, sim),
	 .help = "simulator-only settings, ignored by the controller"},
	{.key = "resources", .type = OPT_NODE, .offset = F(lab_section, resources),
	 .help = "shared limited resources and how many users each takes at once: {tftp: 2, flash-port: 1, pdu-main: 1}; boards name them in `uses:` and queue for them"},
	{.key = "lava", .type = OPT_NODE, .offset = F(lab_section, lava),
	 .help = "the LAVA server boards with a `lava:` block run on: {url, user, token_file | token_env, ...} (keys checked by lava.c; docs/lava.md)"},
	{0},
};

/*
 * Some keys are not members of the public structs (a type's `board:`
 * defaults, a suite's `workloads:` list).  They are parsed through a wrapper
 * struct whose first member is the public struct, with a table built from the
 * public table plus the extra keys; the public table alone frees the struct.
 */
struct type_wrap {
	struct board_type t;
	struct cfg_node *board;
};

struct suite_wrap {
	struct suite_cfg s;
	struct cfg_node *workloads;
};

static const struct opt type_extra[] = {
	{.key = "board", .type = OPT_NODE, .offset = F(type_wrap, board),
	 .help = "defaults for every board of this type (console, power, deploy, ...), under `defaults:`"},
	{0},
};

static const struct opt suite_extra[] = {
	{.key = "workloads", .type = OPT_NODE, .offset = F(suite_wrap, workloads),
	 .help = "list of workloads, each a map (below)"},
	{0},
};

static struct opt type_opts_buf[LAB_ARRAY_SIZE(type_base_opts) + LAB_ARRAY_SIZE(type_extra)];
static struct opt suite_opts_buf[LAB_ARRAY_SIZE(suite_base_opts) + LAB_ARRAY_SIZE(suite_extra)];

static const struct opt *join_tables(struct opt *buf, const struct opt *a, const struct opt *b)
{
	if (buf[0].key)
		return buf;
	size_t n = 0;
	for (; a->key; a++)
		buf[n++] = *a;
	for (; b->key; b++)
		buf[n++] = *b;
	return buf;
}

static const struct opt *type_opts(void)
{
	return join_tables(type_opts_buf, type_base_opts, type_extra);
}

static const struct opt *suite_opts(void)
{
	return join_tables(suite_opts_buf, suite_base_opts, suite_extra);
}

/* Top-level keys of a configuration file. */
static const struct opt top_keys[] = {
	{.key = "include", .help = "files to load first (relative to this file)"},
	{.key = "lab", .help = "lab settings (one per configuration)"},
	{.key = "types"}, {.key = "type"}, {.key = "defaults"}, {.key = "boards"},
	{.key = "kernels"}, {.key = "suites"}, {.key = "suite"}, {.key = "plan"}, {.key = "uploads"},
	{0},
};

/* ---- paths ---- */

/* Lexical clean-up: drop "." components and fold "dir/.." (no symlinks are resolved). */
static char *clean_path(const char *p)
{
	size_t n = strlen(p);
	char *out = xmalloc(n + 2);
	char **parts = xcalloc(n + 1, sizeof *parts);
	size_t np = 0;
	bool abs = p[0] == '/';
	char *tmp = xstrdup(p);
	char *save = NULL;
	for (char *tok = strtok_r(tmp, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0 && np > 0 && strcmp(parts[np - 1], "..") != 0) {
			np--;
			continue;
		}
		if (strcmp(tok, "..") == 0 && abs)
			continue;
		parts[np++] = tok;
	}
	out[0] = '\0';
	size_t len = 0;
	if (abs)
		out[len++] = '/';
	for (size_t i = 0; i < np; i++) {
		size_t l = strlen(parts[i]);
		if (i)
			out[len++] = '/';
		memcpy(out + len, parts[i], l);
		len += l;
	}
	if (len == 0)
		out[len++] = '.';
	out[len] = '\0';
	free(parts);
	free(tmp);
	return out;
}

char *config_path(const char *relative_to_file, const char *path)
{
	if (path == NULL)
		return NULL;
	if (path[0] == '\0')
		return xstrdup("");
	if (path[0] == '/' || relative_to_file == NULL || relative_to_file[0] == '<')
		return clean_path(path);
	const char *slash = strrchr(relative_to_file, '/');
	if (slash == NULL)
		return clean_path(path);
	char *joined = xasprintf("%.*s/%s", (int)(slash - relative_to_file), relative_to_file, path);
	char *c = clean_path(joined);
	free(joined);
	return c;
}

static char *dir_of(const char *file)
{
	const char *slash = strrchr(file, '/');
	if (slash == NULL)
		return xstrdup(".");
	if (slash == file)
		return xstrdup("/");
	return xstrndup(file, (size_t)(slash - file));
}

/* Make a path absolute against the current directory, so the resolved
 * configuration means the same from anywhere (the runner, a printed copy). */
static char *absolute(char *p)
{
	char cwd[PATH_MAX];
	if (p[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return p;
	char *joined = xasprintf("%s/%s", cwd, p);
	free(p);
	p = clean_path(joined);
	free(joined);
	return p;
}

/* Resolve a string member in place relative to `file` (empty stays empty). */
static void resolve_in_place(char **p, const char *file)
{
	if (*p == NULL || (*p)[0] == '\0')
		return;
	char *r = absolute(config_path(file, *p));
	free(*p);
	*p = r;
}

/* ---- pass 1: reading files ---- */

struct nodes {
	const struct cfg_node **v;
	size_t n;
};

static void nodes_push(struct nodes *l, const struct cfg_node *n)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	l->v[l->n++] = n;
}

struct loader {
	struct lab_err *e;
	struct cfg_node **docs;
	size_t ndocs;
	char **seen;      /* realpaths of files read (each file is read once) */
	size_t nseen;
	char **stack;     /* realpaths being read, for cycle detection */
	char **stack_names;
	size_t nstack;
	struct nodes types, boards, defaults, kernels, suites;
	const struct cfg_node *lab, *plan, *uploads;
};

static int load_file(struct loader *L, const char *path, const struct cfg_node *ref);

static int file_error(struct loader *L, const struct cfg_node *ref, const char *path, int err)
{
	if (ref)
		return cfg_error(L->e, ref, "cannot read '%s': %s", path, strerror(err));
	return lab_err_set(L->e, LAB_EUSAGE, "%s: %s", path, strerror(err));
}

static int one_section(struct loader *L, const struct cfg_node *key, const struct cfg_node *val,
		       const struct cfg_node **slot)
{
	if (val->kind != CFG_MAP)
		return cfg_error(L->e, val, "'%s' expects a map, got %s", key->value,
				 val->kind == CFG_SEQ ? "a list" : "a scalar");
	if (*slot)
		return cfg_error(L->e, key, "second '%s:' section (the first is at %s:%d:%d)",
				 key->value, (*slot)->file, (*slot)->line, (*slot)->col);
	*slot = val;
	return LAB_OK;
}

static int list_section(struct loader *L, const struct cfg_node *key, const struct cfg_node *val,
			struct nodes *out)
{
	if (val->kind == CFG_NULL)
		return LAB_OK;
	if (val->kind != CFG_SEQ)
		return cfg_error(L->e, val, "'%s' expects a list of maps", key->value);
	for (size_t i = 0; i < val->n; i++) {
		if (val->items[i]->kind != CFG_MAP)
			return cfg_error(L->e, val->items[i], "'%s' items must be maps", key->value);
		nodes_push(out, val->items[i]);
	}
	return LAB_OK;
}

static int do_includes(struct loader *L, const struct cfg_node *file_node, const struct cfg_node *inc)
{
	if (inc->kind == CFG_NULL)
		return LAB_OK;
	if (inc->kind == CFG_SCALAR) {
		char *p = config_path(file_node->file, inc->value);
		int rc = load_file(L, p, inc);
		free(p);
		return rc;
	}
	if (inc->kind != CFG_SEQ)
		return cfg_error(L->e, inc, "'include' expects a file name or a list of file names");
	for (size_t i = 0; i < inc->n; i++) {
		int rc = do_includes(L, file_node, inc->items[i]);
		if (rc)
			return rc;
		if (inc->items[i]->kind == CFG_SEQ)
			return cfg_error(L->e, inc->items[i], "'include' items must be file names");
	}
	return LAB_OK;
}

static int load_root(struct loader *L, const struct cfg_node *root)
{
	if (root->kind == CFG_NULL)
		return LAB_OK;
	if (root->kind != CFG_MAP)
		return cfg_error(L->e, root, "a configuration file must be a map of sections "
				 "(lab, types, boards, defaults, kernels, suites, plan, include)");
	for (size_t i = 0; i < root->n; i++) {
		const struct cfg_node *k = root->keys[i];
		bool known = false;
		for (const struct opt *o = top_keys; o->key; o++)
			known |= strcmp(o->key, k->value) == 0;
		if (!known) {
			const char *s = opt_suggest(top_keys, k->value);
			if (s)
				return cfg_error(L->e, k, "unknown section '%s' (did you mean '%s'?)",
						 k->value, s);
			return cfg_error(L->e, k, "unknown section '%s' (expected one of lab, types, "
					 "type, boards, defaults, kernels, suites, suite, plan, uploads, include)",
					 k->value);
		}
	}
	/* includes first, so this file's defaults and definitions come after theirs */
	const struct cfg_node *inc = cfg_map_get(root, "include");
	int rc = inc ? do_includes(L, root, inc) : LAB_OK;
	for (size_t i = 0; !rc && i < root->n; i++) {
		const struct cfg_node *k = root->keys[i], *v = root->items[i];
		const char *s = k->value;
		if (strcmp(s, "include") == 0)
			continue;
		else if (strcmp(s, "lab") == 0)
			rc = one_section(L, k, v, &L->lab);
		else if (strcmp(s, "plan") == 0)
			rc = one_section(L, k, v, &L->plan);
		else if (strcmp(s, "types") == 0)
			rc = list_section(L, k, v, &L->types);
		else if (strcmp(s, "boards") == 0)
			rc = list_section(L, k, v, &L->boards);
		else if (strcmp(s, "kernels") == 0)
			rc = list_section(L, k, v, &L->kernels);
		else if (strcmp(s, "suites") == 0)
			rc = list_section(L, k, v, &L->suites);
		else if (strcmp(s, "uploads") == 0) {
			if (L->uploads)
				rc = cfg_error(L->e, k, "second 'uploads:' section (the first is at %s:%d:%d)",
					       L->uploads->file, L->uploads->line, L->uploads->col);
			L->uploads = v;
		} else if (strcmp(s, "type") == 0 || strcmp(s, "suite") == 0 ||
			   strcmp(s, "defaults") == 0) {
			if (v->kind != CFG_MAP) {
				rc = cfg_error(L->e, v, "'%s' expects a map", s);
				break;
			}
			nodes_push(s[0] == 't' ? &L->types : s[0] == 's' ? &L->suites : &L->defaults, v);
		}
	}
	return rc;
}

static int load_file(struct loader *L, const char *path, const struct cfg_node *ref)
{
	char real[PATH_MAX];
	if (realpath(path, real) == NULL)
		return file_error(L, ref, path, errno);
	for (size_t i = 0; i < L->nstack; i++) {
		if (strcmp(L->stack[i], real) == 0) {
			char chain[400] = "";
			for (size_t j = i; j < L->nstack; j++) {
				lab_strlcat(chain, L->stack_names[j], sizeof chain);
				lab_strlcat(chain, " -> ", sizeof chain);
			}
			lab_strlcat(chain, path, sizeof chain);
			return cfg_error(L->e, ref, "include cycle: %s", chain);
		}
	}
	for (size_t i = 0; i < L->nseen; i++)
		if (strcmp(L->seen[i], real) == 0)
			return LAB_OK; /* already read (two files including the same types is normal) */
	if (L->nseen >= CONFIG_MAX_FILES)
		return cfg_error(L->e, ref, "more than %d configuration files", CONFIG_MAX_FILES);

	struct cfg_node *root = NULL;
	int rc = cfg_parse_file(path, &root, L->e);
	if (rc)
		return rc;
	L->docs = xreallocarray(L->docs, L->ndocs + 1, sizeof *L->docs);
	L->docs[L->ndocs++] = root;
	L->seen = xreallocarray(L->seen, L->nseen + 1, sizeof *L->seen);
	L->seen[L->nseen++] = xstrdup(real);
	L->stack = xreallocarray(L->stack, L->nstack + 1, sizeof *L->stack);
	L->stack_names = xreallocarray(L->stack_names, L->nstack + 1, sizeof *L->stack_names);
	L->stack[L->nstack] = xstrdup(real);
	L->stack_names[L->nstack] = xstrdup(path);
	L->nstack++;
	rc = load_root(L, root);
	L->nstack--;
	free(L->stack[L->nstack]);
	free(L->stack_names[L->nstack]);
	return rc;
}

static void loader_free(struct loader *L)
{
	for (size_t i = 0; i < L->ndocs; i++)
		cfg_free(L->docs[i]);
	free(L->docs);
	for (size_t i = 0; i < L->nseen; i++)
		free(L->seen[i]);
	free(L->seen);
	free(L->stack);
	free(L->stack_names);
	free(L->types.v);
	free(L->boards.v);
	free(L->defaults.v);
	free(L->kernels.v);
	free(L->suites.v);
}

/* ---- pass 2: building ---- */

static const char *suggest_in(const char *const *names, size_t n, const char *s)
{
	const char *best = NULL;
	int bd = 4;
	for (size_t i = 0; i < n; i++) {
		if (names[i] == NULL)
			continue;
		int d = lab_edit_distance(s, names[i]);
		if (d < bd && (size_t)d < strlen(names[i])) {
			bd = d;
			best = names[i];
		}
	}
	return best;
}

static int unknown_ref(struct lab_err *e, const struct cfg_node *at, const char *what,
		       const char *name, const char *const *names, size_t n)
{
	const char *s = suggest_in(names, n, name);
	if (s)
		return cfg_error(e, at, "unknown %s '%s' (did you mean '%s'?)", what, name, s);
	if (n == 0)
		return cfg_error(e, at, "unknown %s '%s' (none is defined)", what, name);
	return cfg_error(e, at, "unknown %s '%s'", what, name);
}

/* The node of item i of a strlist-valued key (for positions), or the key's value. */
static const struct cfg_node *strlist_item(const struct cfg_node *map, const char *key, size_t i)
{
	const struct cfg_node *v = cfg_map_get(map, key);
	if (v && v->kind == CFG_SEQ && i < v->n)
		return v->items[i];
	return v ? v : map;
}

static int check_sysfs(struct lab_err *e, const struct cfg_node *recipe)
{
	const struct cfg_node *s = cfg_map_get(recipe, "sysfs");
	if (s == NULL)
		return LAB_OK;
	for (size_t i = 0; i < (s->kind == CFG_SEQ ? s->n : 1); i++) {
		const struct cfg_node *it = s->kind == CFG_SEQ ? s->items[i] : s;
		if (it->kind == CFG_SCALAR && (it->value[0] != '/' || !strchr(it->value, '=')))
			return cfg_error(e, it, "'sysfs' items are \"/sys/path=value\", got '%s'",
					 it->value);
	}
	return LAB_OK;
}

/*
 * Defaults that fit the type described: a type with no `uboot:` block has no
 * U-Boot, so its prompt is empty and boards of it do not wait for one (the
 * uboot keys' defaults apply only to a type that has the block).
 */
static void type_fit_defaults(struct board_type *t, const struct cfg_node *n)
{
	if (!cfg_map_get(n, "uboot")) {
		free(t->uboot.prompt);
		t->uboot.prompt = xstrdup("");
	}
}

static int build_type(struct lab_cfg *c, const struct cfg_node *n, struct cfg_node **board_defaults,
		      struct lab_err *e)
{
	struct type_wrap w;
	int rc = opt_defaults(type_opts(), &w, e);
	if (!rc)
		rc = opt_parse(type_opts(), n, &w, e);
	if (!rc)
		type_fit_defaults(&w.t, n);
	if (!rc && !w.t.trace && !w.t.trace_reason[0])
		rc = cfg_error(e, cfg_map_get(n, "trace"),
			       "`trace: false` needs trace_reason: why this board cannot trace mmc "
			       "requests (its samples are then marked sysfs-only)");
	const struct cfg_node *modes = cfg_map_get(n, "modes");
	for (int m = 0; !rc && m < MODE_COUNT; m++) {
		const struct cfg_node *r = modes ? cfg_map_get(modes, lab_mode_names[m]) : NULL;
		if (r == NULL) {
			w.t.modes[m].supported = false;
			continue;
		}
		if ((rc = check_sysfs(e, r)))
			break;
		if (lab_mode_cqe(m) && w.t.modes[m].supported && !w.t.has_cqe) {
			size_t k = 0;
			while (modes->items[k] != r)
				k++;
			rc = cfg_error(e, modes->keys[k], "mode '%s' needs a CQE host (has_cqe: true)",
				       lab_mode_names[m]);
		}
		resolve_in_place(&w.t.modes[m].kernel, r->file);
		resolve_in_place(&w.t.modes[m].dtb, r->file);
	}
	for (size_t i = 0; !rc && i < c->ntypes; i++) {
		if (strcmp(c->types[i].name, w.t.name) == 0)
			rc = cfg_error(e, cfg_map_get(n, "name"),
				       "duplicate board type '%s' (also defined at %s:%d)", w.t.name,
				       c->types[i].file, c->types[i].line);
	}
	if (!rc && w.board && w.board->kind != CFG_MAP)
		rc = cfg_error(e, w.board, "'board' expects a map of board defaults");
	if (rc) {
		opt_free(type_base_opts, &w.t);
		cfg_free(w.board);
		return rc;
	}
	w.t.file = n->file;
	w.t.line = n->line;
	w.t.node = cfg_clone(n);
	c->types[c->ntypes] = w.t;
	board_defaults[c->ntypes] = w.board;
	c->ntypes++;
	return LAB_OK;
}

static int build_kernel(struct lab_cfg *c, const struct cfg_node *n, struct lab_err *e)
{
	struct kernel_cfg k;
	int rc = opt_defaults(kernel_opts, &k, e);
	if (!rc)
		rc = opt_parse(kernel_opts, n, &k, e);
	for (size_t i = 0; !rc && i < c->nkernels; i++)
		if (strcmp(c->kernels[i].name, k.name) == 0)
			rc = cfg_error(e, cfg_map_get(n, "name"), "duplicate kernel '%s'", k.name);
	if (rc) {
		opt_free(kernel_opts, &k);
		return rc;
	}
	resolve_in_place(&k.image, n->file);
	resolve_in_place(&k.initrd, n->file);
	resolve_in_place(&k.dtb, n->file);
	k.node = cfg_clone(n);
	c->kernels[c->nkernels++] = k;
	return LAB_OK;
}

static int build_workloads(struct suite_cfg *s, const struct cfg_node *wl, struct lab_err *e)
{
	if (wl == NULL || wl->kind == CFG_NULL)
		return LAB_OK;
	if (wl->kind != CFG_SEQ)
		return cfg_error(e, wl, "'workloads' expects a list of maps");
	s->workloads = xcalloc(wl->n + 1, sizeof *s->workloads);
	for (size_t i = 0; i < wl->n; i++) {
		struct workload_cfg *w = &s->workloads[i];
		int rc = opt_defaults(workload_opts, w, e);
		if (!rc)
			rc = opt_parse(workload_opts, wl->items[i], w, e);
		if (!rc && w->args && w->args->kind != CFG_MAP)
			rc = cfg_error(e, w->args, "'args' expects a map of key: value");
		/* keys reach the DUT's shell as key=value words: names only */
		for (size_t k = 0; !rc && w->args && k < w->args->n; k++) {
			const char *why = lab_name_check(w->args->keys[k]->value);
			if (why)
				rc = opt_name_error(e, w->args->keys[k], "args", w->args->keys[k]->value,
						    why);
		}
		if (!rc && lab_mode_parse(w->name) < 0) {
			bool known = false;
			for (size_t j = 0; workload_names[j]; j++)
				known |= strcmp(workload_names[j], w->name) == 0;
			if (!known)
				rc = unknown_ref(e, cfg_map_get(wl->items[i], "name"), "workload", w->name,
						 workload_names, LAB_ARRAY_SIZE(workload_names) - 1);
		}
		s->nworkloads++;
		if (rc)
			return rc;
	}
	return LAB_OK;
}

static void suite_free(struct suite_cfg *s)
{
	for (size_t i = 0; i < s->nworkloads; i++)
		opt_free(workload_opts, &s->workloads[i]);
	free(s->workloads);
	s->workloads = NULL;
	s->nworkloads = 0;
	opt_free(suite_base_opts, s);
}

static int build_suite(struct lab_cfg *c, const struct cfg_node *n, struct lab_err *e)
{
	struct suite_wrap w;
	int rc = opt_defaults(suite_opts(), &w, e);
	w.s.workloads = NULL;
	w.s.nworkloads = 0;
	if (!rc)
		rc = opt_parse(suite_opts(), n, &w, e);
	for (size_t i = 0; !rc && i < w.s.modes.n; i++) {
		if (lab_mode_parse(w.s.modes.v[i]) < 0)
			rc = unknown_ref(e, strlist_item(n, "modes", i), "mode", w.s.modes.v[i],
					 lab_mode_names, MODE_COUNT);
	}
	if (!rc && w.s.modes.n == 0)
		rc = cfg_error(e, cfg_map_get(n, "modes"), "a suite needs at least one mode");
	if (!rc)
		rc = build_workloads(&w.s, w.workloads, e);
	if (!rc && w.s.nworkloads == 0)
		rc = cfg_error(e, n, "suite '%s' has no workloads", w.s.name);
	for (size_t i = 0; !rc && i < c->nsuites; i++)
		if (strcmp(c->suites[i].name, w.s.name) == 0)
			rc = cfg_error(e, cfg_map_get(n, "name"), "duplicate suite '%s' (also in %s)",
				       w.s.name, c->suites[i].file);
	cfg_free(w.workloads);
	if (rc) {
		suite_free(&w.s);
		return rc;
	}
	w.s.file = n->file;
	c->suites[c->nsuites++] = w.s;
	return LAB_OK;
}

static const struct board_type *find_type(const struct lab_cfg *c, const char *name, size_t *idx)
{
	for (size_t i = 0; i < c->ntypes; i++) {
		if (strcmp(c->types[i].name, name) == 0) {
			*idx = i;
			return &c->types[i];
		}
	}
	return NULL;
}

static int type_ref_error(const struct lab_cfg *c, const struct cfg_node *at, const char *name,
			  struct lab_err *e)
{
	const char **names = xcalloc(c->ntypes + 1, sizeof *names);
	for (size_t i = 0; i < c->ntypes; i++)
		names[i] = c->types[i].name;
	int rc = unknown_ref(e, at, "board type", name, names, c->ntypes);
	free(names);
	return rc;
}

static int build_board(struct lab_cfg *c, const struct cfg_node *n, const struct cfg_node *defaults,
		       struct cfg_node *const *type_boards, struct lab_err *e)
{
	/* the type's `board:` defaults sit under the lab's `defaults:`, the board's own keys on top */
	const struct cfg_node *tn = cfg_map_get(n, "type");
	if (tn == NULL)
		tn = cfg_map_get(defaults, "type");
	const struct cfg_node *tb = NULL;
	size_t ti = 0;
	if (tn && tn->kind == CFG_SCALAR) {
		if (find_type(c, tn->value, &ti) == NULL)
			return type_ref_error(c, tn, tn->value, e);
		tb = type_boards[ti];
		if (tb && (cfg_map_get(tb, "name") || cfg_map_get(tb, "type")))
			return cfg_error(e, cfg_map_get(tb, "name") ? cfg_map_get(tb, "name")
								    : cfg_map_get(tb, "type"),
					 "a type's board defaults cannot set 'name' or 'type'");
	}
	struct cfg_node *m1 = cfg_merge(tb, defaults);
	struct cfg_node *merged = cfg_merge(m1, n);
	cfg_free(m1);
	struct board_cfg b;
	memset(&b, 0, sizeof b);
	int rc = opt_defaults(board_opts, &b, e);
	if (!rc)
		rc = opt_parse(board_opts, merged, &b, e);
	if (!rc)
		b.type = find_type(c, b.type_name, &ti);
	if (!rc && b.type == NULL)
		rc = type_ref_error(c, cfg_map_get(merged, "type"), b.type_name, e);
	const struct cfg_node *blocks[] = {cfg_map_get(merged, "console"), cfg_map_get(merged, "power"),
					   cfg_map_get(merged, "deploy")};
	for (size_t i = 0; !rc && i < LAB_ARRAY_SIZE(blocks); i++) {
		const struct cfg_node *bl = blocks[i];
		if (bl && bl->kind != CFG_NULL &&
		    (bl->kind != CFG_MAP || cfg_map_get(bl, "driver") == NULL))
			rc = cfg_error(e, bl, "'%s' expects a map with a 'driver:' key",
				       i == 0 ? "console" : i == 1 ? "power" : "deploy");
	}
	for (size_t i = 0; !rc && i < c->nboards; i++) {
		if (strcmp(c->boards[i].name, b.name) == 0) {
			const struct cfg_node *at = cfg_map_get(merged, "name");
			rc = cfg_error(e, at, "duplicate board '%s' (first defined at %s:%d:%d)", b.name,
				       c->boards[i].file, c->boards[i].line, c->boards[i].col);
		}
	}
	cfg_free(merged);
	if (rc) {
		opt_free(board_opts, &b);
		return rc;
	}
	b.file = n->file;
	b.line = n->line;
	b.col = n->col;
	c->boards[c->nboards++] = b;
	return LAB_OK;
}

/* config_path() takes a file; base_dir is a directory. */
static char *base_path(const struct lab_cfg *c, const char *p)
{
	char *f = xasprintf("%s/x", c->base_dir);
	char *r = config_path(f, p);
	free(f);
	return r;
}

static int build_lab(struct lab_cfg *c, const struct cfg_node *n, struct lab_err *e)
{
	struct lab_section s;
	int rc = opt_defaults(lab_opts, &s, e);
	if (!rc && n)
		rc = opt_parse(lab_opts, n, &s, e);
	if (!rc) {
		c->name = s.name;
		c->results = base_path(c, s.results);
		c->transcripts = base_path(c, s.transcripts);
		c->transcript_max = s.transcript_max;
		c->transcripts_keep = s.transcripts_keep;
		c->resources = s.resources;
		s.resources = NULL;
		c->lava = s.lava;
		s.lava = NULL;
		c->locks = s.locks && s.locks[0] ? base_path(c, s.locks) : NULL;
		c->store_wait_ms = s.store_wait_ms;
		s.name = NULL;
	}
	opt_free(lab_opts, &s);
	return rc;
}

static bool is_path(const char *s)
{
	size_t l = strlen(s);
	return strchr(s, '/') || (l > 5 && strcmp(s + l - 5, ".yaml") == 0) ||
	       (l > 4 && strcmp(s + l - 4, ".yml") == 0);
}

/* Read the files a plan names (its lab, suite files) before anything is built. */
static int load_plan_files(struct loader *L)
{
	const struct cfg_node *p = L->plan;
	const struct cfg_node *lab = cfg_map_get(p, "lab");
	int rc = LAB_OK;
	/* a file holding both the plan and a lab section (e.g. `emmclab check` output)
	 * is self-contained: its plan.lab is only a record of where the lab came from */
	bool self_contained = L->lab && strcmp(L->lab->file, p->file) == 0;
	if (lab && lab->kind == CFG_SCALAR && lab->value[0] && !self_contained) {
		char *path = config_path(p->file, lab->value);
		rc = load_file(L, path, lab);
		free(path);
	}
	const struct cfg_node *s = cfg_map_get(p, "suites");
	for (size_t i = 0; !rc && s && i < (s->kind == CFG_SEQ ? s->n : 1); i++) {
		const struct cfg_node *it = s->kind == CFG_SEQ ? s->items[i] : s;
		if (it->kind == CFG_SCALAR && is_path(it->value)) {
			char *path = config_path(p->file, it->value);
			rc = load_file(L, path, it);
			free(path);
		}
	}
	return rc;
}

static bool board_matches(const struct board_cfg *b, const char *sel)
{
	if (strcmp(b->name, sel) == 0)
		return true;
	for (size_t i = 0; i < b->tags.n; i++)
		if (strcmp(b->tags.v[i], sel) == 0)
			return true;
	return false;
}

static int build_plan(struct lab_cfg *c, struct loader *L, struct lab_err *e)
{
	const struct cfg_node *n = L->plan;
	struct plan_cfg *p = xcalloc(1, sizeof *p);
	int rc = opt_defaults(plan_base_opts, p, e);
	if (!rc)
		rc = opt_parse(plan_base_opts, n, p, e);
	c->plan = p;
	p->file = n->file;
	if (rc)
		return rc;
	resolve_in_place(&p->lab, n->file);
	/* a plan's output paths are relative to the plan file, like its other paths */
	resolve_in_place(&p->results, n->file);
	resolve_in_place(&p->report_html, n->file);
	/* suite files become the names of the suites they define */
	struct opt_strlist names = {0};
	for (size_t i = 0; i < p->suites.n; i++) {
		const char *s = p->suites.v[i];
		const struct cfg_node *at = strlist_item(n, "suites", i);
		size_t before = names.n;
		if (is_path(s)) {
			char *path = config_path(n->file, s);
			char real[PATH_MAX], sreal[PATH_MAX];
			if (realpath(path, real) == NULL)
				real[0] = '\0';
			for (size_t j = 0; j < c->nsuites; j++) {
				if (real[0] && realpath(c->suites[j].file, sreal) &&
				    strcmp(sreal, real) == 0) {
					names.v = xreallocarray(names.v, names.n + 1, sizeof *names.v);
					names.v[names.n++] = xstrdup(c->suites[j].name);
				}
			}
			free(path);
			if (names.n == before) {
				rc = cfg_error(e, at, "'%s' defines no suite", s);
				break;
			}
			continue;
		}
		bool found = false;
		for (size_t j = 0; j < c->nsuites; j++)
			found |= strcmp(c->suites[j].name, s) == 0;
		if (!found) {
			const char **v = xcalloc(c->nsuites + 1, sizeof *v);
			for (size_t j = 0; j < c->nsuites; j++)
				v[j] = c->suites[j].name;
			rc = unknown_ref(e, at, "suite", s, v, c->nsuites);
			free(v);
			break;
		}
		names.v = xreallocarray(names.v, names.n + 1, sizeof *names.v);
		names.v[names.n++] = xstrdup(s);
	}
	for (size_t i = 0; i < p->suites.n; i++)
		free(p->suites.v[i]);
	free(p->suites.v);
	p->suites = names;
	if (rc)
		return rc;
	for (size_t i = 0; i < p->kernels.n; i++) {
		if (config_kernel(c, p->kernels.v[i]) == NULL) {
			const char **v = xcalloc(c->nkernels + 1, sizeof *v);
			for (size_t j = 0; j < c->nkernels; j++)
				v[j] = c->kernels[j].name;
			rc = unknown_ref(e, strlist_item(n, "kernels", i), "kernel", p->kernels.v[i], v,
					 c->nkernels);
			free(v);
			return rc;
		}
	}
	for (size_t i = 0; i < p->boards.n; i++) {
		bool found = false;
		for (size_t j = 0; j < c->nboards; j++)
			found |= board_matches(&c->boards[j], p->boards.v[i]);
		if (!found) {
			const char **v = xcalloc(c->nboards + 1, sizeof *v);
			for (size_t j = 0; j < c->nboards; j++)
				v[j] = c->boards[j].name;
			rc = unknown_ref(e, strlist_item(n, "boards", i), "board or tag", p->boards.v[i],
					 v, c->nboards);
			free(v);
			return rc;
		}
	}
	return LAB_OK;
}

int config_load(const char *const *paths, size_t npaths, struct lab_cfg **out, struct lab_err *e)
{
	struct loader L;
	memset(&L, 0, sizeof L);
	L.e = e;
	*out = NULL;
	if (npaths == 0)
		return lab_err_set(e, LAB_EUSAGE, "no configuration file given");
	int rc = LAB_OK;
	for (size_t i = 0; !rc && i < npaths; i++)
		rc = load_file(&L, paths[i], NULL);
	if (!rc && L.plan)
		rc = load_plan_files(&L);

	struct lab_cfg *c = xcalloc(1, sizeof *c);
	struct cfg_node **type_boards = xcalloc(L.types.n + 1, sizeof *type_boards);
	struct cfg_node *defaults = NULL;
	c->base_dir = absolute(dir_of(paths[0]));
	c->types = xcalloc(L.types.n + 1, sizeof *c->types);
	c->kernels = xcalloc(L.kernels.n + 1, sizeof *c->kernels);
	c->suites = xcalloc(L.suites.n + 1, sizeof *c->suites);
	c->boards = xcalloc(L.boards.n + 1, sizeof *c->boards);

	for (size_t i = 0; !rc && i < L.types.n; i++)
		rc = build_type(c, L.types.v[i], type_boards, e);
	for (size_t i = 0; !rc && i < L.kernels.n; i++)
		rc = build_kernel(c, L.kernels.v[i], e);
	for (size_t i = 0; !rc && i < L.suites.n; i++)
		rc = build_suite(c, L.suites.v[i], e);
	for (size_t i = 0; !rc && i < L.defaults.n; i++) {
		const struct cfg_node *d = L.defaults.v[i];
		if (cfg_map_get(d, "name")) {
			rc = cfg_error(e, cfg_map_get(d, "name"), "'defaults' cannot set a board's 'name'");
			break;
		}
		struct cfg_node *m = cfg_merge(defaults, d);
		cfg_free(defaults);
		defaults = m;
	}
	for (size_t i = 0; !rc && i < L.boards.n; i++)
		rc = build_board(c, L.boards.v[i], defaults, type_boards, e);
	/* defaults are checked even when no board uses them */
	if (!rc && defaults && L.boards.n == 0) {
		struct board_cfg b;
		struct cfg_node *d = cfg_clone(defaults);
		rc = opt_defaults(board_opts, &b, e);
		/* `name`/`type` are required on boards, not in defaults */
		if (!rc) {
			for (const struct opt *o = board_opts; !rc && o->key; o++) {
				const struct cfg_node *v = cfg_map_get(d, o->key);
				if (v)
					rc = opt_parse_value(o, v, &b, e);
			}
			for (size_t i = 0; !rc && i < d->n; i++) {
				bool known = false;
				for (const struct opt *o = board_opts; o->key; o++)
					known |= strcmp(o->key, d->keys[i]->value) == 0;
				if (!known) {
					const char *s = opt_suggest(board_opts, d->keys[i]->value);
					rc = s ? cfg_error(e, d->keys[i], "unknown key '%s' (did you mean '%s'?)",
							   d->keys[i]->value, s)
					       : cfg_error(e, d->keys[i], "unknown key '%s'", d->keys[i]->value);
				}
			}
		}
		opt_free(board_opts, &b);
		cfg_free(d);
	}
	if (!rc)
		rc = build_lab(c, L.lab, e);
	if (!rc && L.uploads)
		c->uploads = cfg_clone(L.uploads);
	if (!rc && L.plan)
		rc = build_plan(c, &L, e);

	cfg_free(defaults);
	for (size_t i = 0; i < c->ntypes; i++)
		cfg_free(type_boards[i]);
	free(type_boards);
	loader_free(&L);
	if (rc) {
		config_free(c);
		return rc;
	}
	*out = c;
	return LAB_OK;
}

void config_free(struct lab_cfg *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->ntypes; i++) {
		cfg_free(c->types[i].node);
		opt_free(type_base_opts, &c->types[i]);
	}
	free(c->types);
	for (size_t i = 0; i < c->nboards; i++)
		opt_free(board_opts, &c->boards[i]);
	free(c->boards);
	for (size_t i = 0; i < c->nkernels; i++) {
		cfg_free(c->kernels[i].node);
		opt_free(kernel_opts, &c->kernels[i]);
	}
	free(c->kernels);
	for (size_t i = 0; i < c->nsuites; i++)
		suite_free(&c->suites[i]);
	free(c->suites);
	if (c->plan) {
		opt_free(plan_base_opts, c->plan);
		free(c->plan);
	}
	cfg_free(c->uploads);
	cfg_free(c->resources);
	cfg_free(c->lava);
	free(c->name);
	free(c->results);
	free(c->transcripts);
	free(c->locks);
	free(c->base_dir);
	free(c);
}

const struct board_cfg *config_board(const struct lab_cfg *c, const char *name)
{
	for (size_t i = 0; c && i < c->nboards; i++)
		if (strcmp(c->boards[i].name, name) == 0)
			return &c->boards[i];
	return NULL;
}

const struct suite_cfg *config_suite(const struct lab_cfg *c, const char *name)
{
	for (size_t i = 0; c && i < c->nsuites; i++)
		if (strcmp(c->suites[i].name, name) == 0)
			return &c->suites[i];
	return NULL;
}

const struct kernel_cfg *config_kernel(const struct lab_cfg *c, const char *name)
{
	for (size_t i = 0; c && i < c->nkernels; i++)
		if (strcmp(c->kernels[i].name, name) == 0)
			return &c->kernels[i];
	return NULL;
}

/* ---- printing ---- */

/* Print a struct as one item of a block list: "- key: ..." at indent. */
static void print_item(FILE *f, const struct opt *table, const void *obj, int indent)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (m == NULL)
		return;
	opt_print(m, table, obj, indent + 2);
	fclose(m);
	if (len > (size_t)indent + 1)
		buf[indent] = '-';
	fputs(buf, f);
	free(buf);
}

static void print_type(FILE *f, const struct board_type *t, int indent)
{
	/* modes print only when supported: unlisted modes are unsupported on reload */
	struct board_type copy = *t;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (m == NULL)
		return;
	for (const struct opt *o = type_base_opts; o->key; o++) {
		if (o->type != OPT_SECTION || o->sub != modes_opts) {
			opt_print_value(m, o, &copy, indent + 2);
			continue;
		}
		fprintf(m, "%*smodes:", indent + 2, "");
		bool any = false;
		for (int i = 0; i < MODE_COUNT; i++)
			any |= t->modes[i].supported;
		fputs(any ? "\n" : " {}\n", m);
		for (int i = 0; i < MODE_COUNT; i++) {
			if (!t->modes[i].supported)
				continue;
			fprintf(m, "%*s%s:\n", indent + 4, "", lab_mode_names[i]);
			opt_print(m, recipe_opts, &t->modes[i], indent + 6);
		}
	}
	fclose(m);
	if (len > (size_t)indent + 1)
		buf[indent] = '-';
	fputs(buf, f);
	free(buf);
}

void config_print(FILE *f, const struct lab_cfg *c)
{
	fprintf(f, "# resolved by emmclab %s: includes read, defaults merged, paths resolved\n",
		EMMCLAB_VERSION);
	fputs("lab:\n", f);
	fputs("  name: ", f);
	cfg_print_string(f, c->name ? c->name : "lab");
	fputs("\n  results: ", f);
	cfg_print_string(f, c->results ? c->results : "");
	fputs("\n  transcripts: ", f);
	cfg_print_string(f, c->transcripts ? c->transcripts : "");
	char sz[64];
	opt_format_size(sz, sizeof sz, c->transcript_max);
	fprintf(f, "\n  transcript_max: %s\n", sz);
	opt_format_size(sz, sizeof sz, c->transcripts_keep);
	fprintf(f, "  transcripts_keep: %s\n", sz);
	if (c->locks) {
		fputs("  locks: ", f);
		cfg_print_string(f, c->locks);
		fputc('\n', f);
	}
	if (c->ntypes) {
		fputs("types:\n", f);
		for (size_t i = 0; i < c->ntypes; i++)
			print_type(f, &c->types[i], 2);
	}
	if (c->nkernels) {
		fputs("kernels:\n", f);
		for (size_t i = 0; i < c->nkernels; i++)
			print_item(f, kernel_opts, &c->kernels[i], 2);
	}
	if (c->nsuites) {
		fputs("suites:\n", f);
		for (size_t i = 0; i < c->nsuites; i++) {
			const struct suite_cfg *s = &c->suites[i];
			print_item(f, suite_base_opts, s, 2);
			fputs("    workloads:\n", f);
			for (size_t j = 0; j < s->nworkloads; j++)
				print_item(f, workload_opts, &s->workloads[j], 6);
		}
	}
	if (c->nboards) {
		fputs("boards:\n", f);
		for (size_t i = 0; i < c->nboards; i++)
			print_item(f, board_opts, &c->boards[i], 2);
	}
	if (c->uploads)
		cfg_print_value(f, "uploads", c->uploads, 0);
	if (c->plan) {
		fputs("plan:\n", f);
		opt_print(f, plan_base_opts, c->plan, 2);
	}
}

/* ---- schema (docs/configuration.md is generated from the tables) ---- */

void config_schema_md(FILE *f)
{
	static const struct {
		const char *title, *prefix;
		const struct opt *(*table)(void);
		const struct opt *plain;
	} sections[] = {
		{"`lab:`", "lab", NULL, lab_opts},
		{"`types:` / `type:` (board types)", "", type_opts, NULL},
		{"board type `uboot:`", "uboot", NULL, uboot_opts},
		{"board type `shell:`", "shell", NULL, shell_opts},
		{"board type `timeouts:`", "timeouts", NULL, timeouts_opts},
		{"board type `health:` (part wear, docs/running.md)", "health", NULL, health_opts},
		{"board type `modes:` (keys are mode names)", "modes", NULL, modes_opts},
		{"a mode recipe (`modes.<mode>:`)", "", NULL, recipe_opts},
		{"`boards:` (and `defaults:`)", "", NULL, board_opts},
		{"board `part:`", "part", NULL, part_opts},
		{"`kernels:`", "", NULL, kernel_opts},
		{"`suites:` / `suite:`", "", suite_opts, NULL},
		{"suite `workloads:` items", "", NULL, workload_opts},
		{"`plan:`", "plan", NULL, plan_base_opts},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(sections); i++) {
		fprintf(f, "### %s\n\n", sections[i].title);
		opt_schema_md(f, sections[i].table ? sections[i].table() : sections[i].plain,
			      sections[i].prefix);
		fputc('\n', f);
	}
}
