/*
 * sim.h - the simulated lab (emmclab-sim): boards that answer like real ones
 * on a pseudo-terminal, power over HTTP (pdudaemon and Tasmota APIs), and an
 * eMMC timing model calibrated from the published reference data.
 *
 * Everything runs on one struct loop (loop.h), one thread.  A board's console
 * output is a queue of items, each with a *modelled* delay; the real wait is
 * the modelled one divided by the board's time_scale (with per-item floors so
 * a controller can still react).  Nothing blocks; every wait is a timer.
 *
 * Pure parts (PRNG, part profiles and timing model, U-Boot line editor, UART
 * FIFO) have no loop or I/O and are unit-tested (tests/unit/test_sim_*.c).
 */
#ifndef EMMCLAB_SIM_H
#define EMMCLAB_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "loop.h"
#include "opt.h"
#include "rand.h"
#include "util.h"

/* ---- random streams (struct rand_gen, harness/common/rand.h): deterministic under seed ---- */
/* Seed a stream: same (seed, stream name) -> same sequence. */
void sim_rng_seed(struct rand_gen *r, uint64_t seed, const char *stream);
double sim_rng_normal(struct rand_gen *r); /* N(0, 1), Box-Muller */
bool sim_rng_chance(struct rand_gen *r, double p);

/* ---- eMMC part profiles and the timing model (sim_model.c) ---- */
struct sim_fs_model {   /* ext4 copy benchmark, one iteration (seconds) */
	double base_s;      /* everything but the commit costs */
	double warmup_s;    /* extra on the first iteration after preconditioning */
	double sd_s;        /* iteration-to-iteration noise */
	double flush_ms;    /* cost of one flush after a journal commit's data */
	double rel_ms;      /* cost of one reliable (FUA) journal commit write */
	double cqe_gain;    /* fraction of base_s saved with CQE on */
	double cqe_rel_ms;  /* reliable write cost with CQE (task descriptor REL_WRITE) */
	double cqe_flush_ms;
	int commits;        /* journal commits (FUA writes) per iteration */
};

struct sim_ab_model {   /* AndroBench-style, per I/O costs */
	double seq_read, seq_read_fua;   /* MiB/s (published sprd: differs by mode) */
	double rand_read, rand_read_fua; /* MiB/s, 4 KiB */
	double sw_mibs;                  /* sequential write bandwidth into the cache */
	double sw_flush_ms, sw_rel_ms;   /* per 32 MiB request: flush after / reliable write */
	double rw_us;                    /* 4 KiB random write into the cache */
	double rw_flush_us, rw_rel_us;   /* extra per O_DSYNC write: flush / reliable write */
	double cqe_gain;                 /* random I/O per-request overhead saved with CQE */
	double cv_sr, cv_rr, cv_sw, cv_rw; /* coefficients of variation */
};

struct sim_part {
	const char *model;      /* profile name used in lab files (part.model / sim.model) */
	const char *label;      /* human description */
	const char *name;       /* CID product name (sysfs device/name) */
	unsigned manfid, oemid, prv, hwrev, fwrev;
	unsigned serial;
	const char *date;       /* "MM/YYYY" */
	uint64_t capacity_bytes;
	int ext_csd_rev;        /* 6 = 4.5, 7 = 5.0, 8 = 5.1 */
	unsigned cache_kib;
	unsigned rel_wr_param;  /* EXT_CSD WR_REL_PARAM */
	unsigned rel_sectors;
	bool cmdq_support;
	unsigned cmdq_depth;
	unsigned life_a, life_b, pre_eol;
	const char *fw_version; /* 8 bytes, as printed */
	unsigned device_version;
	const char *bus_mode;   /* "HS400 Enhanced strobe", "HS200", ... */
	double seq_write_mibs;  /* for preconditioning passes */
	struct sim_fs_model fs;
	struct sim_ab_model ab;
	const char *calibration; /* where the numbers come from (docs) */
};

const struct sim_part *sim_part_find(const char *model);
/* Whether the model's `metric` of `workload` on p (modes with or without the
 * CQE) is fitted to published data (the table shared with the controller,
 * harness/common/sim_calib.h); false: the model's assumption. */
bool sim_model_fitted(const struct sim_part *p, const char *workload, bool cqe, const char *metric);
const struct sim_part *sim_part_at(size_t i); /* NULL past the end */

/* The kernel's effective behaviour (what the timing depends on). */
struct sim_effmode {
	bool fua;   /* queue/fua */
	bool cache; /* queue/write_cache == write back */
	bool cqe;   /* command queue engine on */
};
const char *sim_mode_name(struct sim_effmode m); /* fua, cache-nofua, ..., unknown */

struct sim_fs_result {
	double wall, mkfs, mount, copy1, rm, copy2, sync;
	long rel_writes, flushes, flush_ms;
};
/* One fscopy iteration.  first: first iteration after preconditioning; slow: factor
 * (slow-part fault, 1.0 normally); scale: workload size factor. */
void sim_model_fscopy(const struct sim_part *p, struct sim_effmode m, bool first, double slow,
		      double scale, struct rand_gen *r, struct sim_fs_result *out);

struct sim_ab_args {
	double seq_mib, req_mib, rand_mib;
	long rand_ios;
};
struct sim_ab_result {
	double seq_read, seq_write, rand_read, rand_write; /* MiB/s */
	double rand_read_iops, rand_write_iops;
	double lat_p50_us, lat_p99_us;
	double duration_s;
	long rel_writes, flushes, flush_ms;
};
void sim_model_androbench(const struct sim_part *p, struct sim_effmode m, double slow,
			  const struct sim_ab_args *a, struct rand_gen *r, struct sim_ab_result *out);
/* Human size as the kernel prints it ("29.1 GiB"). */
void sim_human_size(char *buf, size_t n, uint64_t bytes);

/* ---- U-Boot line editor (cli_readline semantics) and UART FIFO (sim_lined.c) ---- */
#define SIM_CBSIZE 256 /* CONFIG_SYS_CBSIZE */
struct sim_lined {
	char buf[SIM_CBSIZE];
	size_t len;
};
enum { SIM_LINED_MORE = 0, SIM_LINED_LINE = 1, SIM_LINED_INTR = 2 };
void sim_lined_reset(struct sim_lined *l);
/* Feed one received character; echo (what U-Boot prints back) is appended to
 * echo.  SIM_LINED_LINE: l->buf holds the line (NUL-terminated, may be empty). */
int sim_lined_feed(struct sim_lined *l, unsigned char c, struct lab_buf *echo);

/* A UART receive FIFO of `depth` bytes emptied by the CPU at `cps` chars/s:
 * characters arriving while it is full are lost (as on a real board when
 * input is pasted faster than the bootloader polls). */
struct sim_fifo {
	double level;
	uint64_t last_ns;
	unsigned depth;
	double cps;
	uint64_t lost;
};
void sim_fifo_init(struct sim_fifo *f, unsigned depth, double cps);
/* One character that arrived at about at_ns but surely by latest_ns (a pty
 * read says only that bytes came since the previous read): if the FIFO is
 * full at at_ns, it is taken as arriving once there is room, if that is by
 * latest_ns.  The simulator's own scheduling delays never drop input that
 * could have fit; a paste faster than the FIFO drains still loses.  True if accepted. */
bool sim_fifo_push_by(struct sim_fifo *f, uint64_t at_ns, uint64_t latest_ns);

/* ---- faults ---- */
enum sim_fault_id {
	FAULT_NO_OUTPUT, FAULT_UBOOT_HANG, FAULT_PANIC, FAULT_NO_LOGIN, FAULT_GARBAGE,
	FAULT_DROP_CHARS, FAULT_BAD_CRC, FAULT_PDU_500, FAULT_PDU_TIMEOUT, FAULT_NO_POWER_OFF,
	FAULT_LOSE_WRITES, FAULT_SLOW_PART, FAULT_MODE_STUCK, FAULT_FUA_IGNORED, FAULT_COUNT
};
extern const char *const sim_fault_names[]; /* NULL-terminated, enum order */
struct sim_fault {
	bool on;
	double value;   /* rate, factor or count of records, per fault */
	long remaining; /* -1: unlimited; else times it may still fire */
	long fired;
};
/* Parse "name[=value][:count]"; fills id/value/count (count -1 if absent). */
int sim_fault_parse(const char *spec, int *id, double *value, bool *has_value, long *count,
		    struct lab_err *e);
double sim_fault_default_value(int id);

/* ---- the sim: block of a board (parsed with sim_cfg_opts) ---- */
struct sim_cfg {
	char *model;
	char *host;
	bool cqe;
	int64_t seed;
	struct opt_strlist faults;
	int64_t ser2net_port;
	double time_scale;
	uint64_t autoboot_floor_ms; /* minimum real time per countdown second */
	char *prompt;
	int64_t bootdelay;
	int64_t max_input_cps;
	int64_t fifo;
	bool login;
	char *hostname;
	bool agent_installed;
	char *agent_path;
	struct opt_strlist tftp_files;
	char *tftp_root;
	char *kernel_version;
	bool kernel_patched;
	char *bootargs;
	char *uboot_version;
	char *machine;
	char *soc;
	uint64_t boot_ms;       /* modelled kernel boot time to the prompt */
	double fault_rate;
	bool powerfail_realtime;
};
extern const struct opt sim_cfg_opts[];

/* ---- boards (sim_board.c, sim_uboot.c, sim_linux.c, sim_agent.c) ---- */
struct sim;
struct sim_board;

struct sim_board *sim_board_new(struct sim *s, const struct board_cfg *bc, struct lab_err *e);
void sim_board_free(struct sim_board *b);
/* Create the pty and its link; spawn nothing. */
int sim_board_start(struct sim_board *b, const char *state_dir, struct lab_err *e);
const char *sim_board_name(const struct sim_board *b);
const char *sim_board_pts(const struct sim_board *b);
int64_t sim_board_ser2net_port(const struct sim_board *b);

/* Power (from the HTTP APIs).  delay_ms: modelled delay before it takes effect. */
enum sim_power_op { SIM_POWER_ON, SIM_POWER_OFF, SIM_POWER_TOGGLE, SIM_POWER_REBOOT };
void sim_board_power(struct sim_board *b, enum sim_power_op op);
bool sim_board_relay_on(const struct sim_board *b); /* relay state (what the plug reports) */
/* The power block as the simulator understands it. */
struct sim_power_cfg {
	char driver[24];      /* pdudaemon | tasmota | other */
	char host[64];        /* URL host */
	int port;             /* URL TCP port */
	char prefix[128];     /* URL path (tasmota) without trailing '/' */
	char hostname[64];    /* pdudaemon */
	char alias[64];
	int64_t pdu_port;     /* pdudaemon port */
	int64_t relay;        /* tasmota relay (0 = single) */
};
const struct sim_power_cfg *sim_board_powercfg(const struct sim_board *b);

/* Faults at run time.  Returns LAB_EUSAGE for an unknown fault. */
int sim_board_set_fault(struct sim_board *b, const char *spec, struct lab_err *e);
void sim_board_clear_faults(struct sim_board *b);
/* Consume one firing of a fault (true if it is on and fires). */
bool sim_board_fault_fire(struct sim_board *b, int id);
bool sim_board_fault_on(const struct sim_board *b, int id);
/* Append this board's state as a JSON object. */
void sim_board_json(const struct sim_board *b, struct lab_buf *out);

/* ---- the whole simulator ---- */
struct sim {
	struct loop *loop;
	struct lab_cfg *lab;
	char *state_dir;
	struct sim_board **boards;
	size_t nboards;
	struct sim_http *http;
	pid_t ser2net_pid;
	char *ser2net_conf;
	/* boards with console output queued this loop pass (sim_board.c) */
	struct sim_board **tx_dirty;
	size_t ntx_dirty, ctx_dirty;
	bool tx_deferred;
	/* largest lateness of an output timer in the last 200 ms, and when seen:
	 * the UART FIFO's arrival estimate widens by it (sim_board.c) */
	uint64_t late_ns, late_at_ns;
};
struct sim_board *sim_find_board(struct sim *s, const char *name);

/* ---- HTTP server (sim_http.c) ---- */
struct sim_http;
/* Listen on 127.0.0.1:port for each distinct port (nports entries). */
int sim_http_start(struct sim *s, const int *ports, size_t nports, struct sim_http **out,
		   struct lab_err *e);
void sim_http_free(struct sim_http *h);

#endif
