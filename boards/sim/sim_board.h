/*
 * sim_board.h - private to boards/sim: one simulated board.
 *
 * A board owns its console: a pty pair (the simulator keeps the slave open so
 * the master never reports HUP while no controller is attached), or a Unix
 * stream socket it listens on, one client at a time (QEMU's -chardev
 * socket,server=on; output while nobody is connected is lost, as on a UART
 * nobody listens to).  Then an output queue
 * of timed items, its U-Boot and Linux state, and its fault settings.
 * Everything runs on the sim's loop.
 */
#ifndef EMMCLAB_SIM_BOARD_H
#define EMMCLAB_SIM_BOARD_H

#include <sys/types.h>
#include "sim.h"

enum sim_stage {
	SIM_OFF, SIM_ROM, SIM_AUTOBOOT, SIM_UBOOT, SIM_UBOOT_BUSY, SIM_UMS, SIM_FASTBOOT,
	SIM_KERNEL, SIM_LOGIN, SIM_SHELL, SIM_DEAD, SIM_STAGE_COUNT
};
extern const char *const sim_stage_names[];

/* Small ordered string map (U-Boot environment, shell variables). */
struct sim_kv {
	char **k, **v;
	size_t n, cap; /* cap: room in k and v */
};
const char *sim_kv_get(const struct sim_kv *kv, const char *k);
void sim_kv_set(struct sim_kv *kv, const char *k, const char *v); /* v NULL deletes */
void sim_kv_clear(struct sim_kv *kv);
void sim_kv_copy(struct sim_kv *dst, const struct sim_kv *src);

/* In-memory files of the DUT's root filesystem. */
struct sim_file {
	char *path;
	struct lab_buf data;
	unsigned mode; /* permission bits */
};

struct sim_board;
typedef void (*sim_item_fn)(struct sim_board *b, long arg);
struct sim_item {
	double delay_ms;   /* modelled */
	double floor_ms;   /* minimum real delay */
	char *text;
	size_t len;
	sim_item_fn fn;
	long arg;
};

/* Powerfail record file state (the agent's powerfail-write/-check). */
struct sim_pf {
	char path[256];
	long written;  /* records written (and acknowledged when printed) */
	long acked;    /* acknowledged on the console */
	long durable;  /* records that survive a power cut */
	bool active;
};

#define SIM_MAX_FILES 256
#define SIM_MAX_PENDING 64

struct sim_board {
	struct sim *sim;
	struct loop *loop;
	char *name;
	const struct board_cfg *bc;
	struct sim_cfg cfg;
	const struct sim_part *part;
	struct sim_power_cfg pw;

	/* console: master is the pty master, or the connected socket client (-1
	 * while none); listen_fd the socket console's listening socket (-1: pty) */
	int master, slave;
	bool sock;            /* console {driver: tcp, path: SOCKET} */
	int listen_fd;
	dev_t sock_dev;
	ino_t sock_ino;       /* the socket file we bound: removed at exit only if still ours */
	char pts[64];
	char *link;           /* pty: the symlink to the slave; socket: its path */
	struct lab_buf txq;
	bool tx_dirty;        /* in sim.tx_dirty: written at the end of the loop pass */
	uint64_t tx_dropped;
	bool q_stalled;       /* output backlog: the board "blocks" on its console */

	/* output schedule */
	struct sim_item *q;
	size_t qhead, qn, qcap;
	struct loop_timer qtimer;
	/* real time the last batch ran ahead of the schedule (> 0: added to the
	 * next wait) or fell behind it (< 0: taken off, down to no wait) */
	double q_owed_ms;
	uint64_t q_due_ns;    /* when the armed head item is due on the schedule */
	unsigned q_gen;       /* counts sim_sched_clear: a fresh schedule */
	struct loop_timer ptimer; /* reboot: on after off */

	/* power and stage */
	bool relay, running;
	enum sim_stage stage;
	unsigned long boots, power_ops;

	/* faults */
	struct sim_fault faults[FAULT_COUNT];
	struct rand_gen rng_model, rng_fault;

	/* U-Boot */
	struct sim_lined lined;
	char lastcmd[SIM_CBSIZE];
	struct sim_kv env, env_saved;
	struct sim_fifo fifo;
	uint64_t rx_ns;       /* earliest arrival time of the batch being processed */
	uint64_t last_rx_ns;  /* when the batch being processed (or the last) was read */
	int countdown;
	bool early_key;
	int ub_status;
	bool ub_polling;      /* the running line polls ctrlc() (tftp, dhcp, load, sleep...) */
	unsigned char ub_pend[64]; /* typed ahead while a command ran: still in the FIFO */
	size_t ub_npend;
	/* At the prompt: characters in the FIFO that U-Boot reads (and echoes,
	 * and acts on) when the modelled CPU gets to them, at rxq_timer */
	unsigned char ub_rxq[256];
	size_t ub_nrxq;
	uint64_t ub_rxq_read_ns; /* when the last of them is read */
	struct loop_timer rxq_timer;
	uint64_t loaded[8];   /* addresses holding an image (tftp/load) */
	size_t nloaded;

	/* Linux */
	char cmdline[2048];
	struct sim_effmode eff; /* what sysfs and the mode line show */
	/* What the card receives: the timings and the tracepoint counters follow
	 * it, not eff, so a kernel whose I/O path ignores the FUA knob
	 * (fua-ignored) makes the counters disagree with sysfs. */
	struct sim_effmode dev;
	char knob_fua[8];      /* auto|on|off|missing */
	int knob_cqe;          /* 0|1, -1 missing */
	bool cqe_line;         /* "Command Queue Engine enabled" was logged */
	struct lab_buf klog;   /* kernel log (dmesg) */
	double uptime_s;       /* modelled, for dmesg timestamps */
	bool tty_echo;
	struct lab_buf line;   /* line discipline buffer */
	char *pending[SIM_MAX_PENDING];
	size_t npending;
	bool busy;
	int last_status;
	struct sim_kv vars;
	char cwd[256];
	struct sim_file files[SIM_MAX_FILES];
	size_t nfiles;

	/* agent */
	struct lab_buf alog_text; /* the agent log's lines, each NUL-ended, one after the other */
	size_t *alog_off;         /* where line k starts in alog_text */
	size_t nalog, alog_cap;
	int fs_runs;           /* fscopy iterations since the last precondition (warm-up); device state, survives power cycles */
	uint64_t wear_bytes;   /* written by the agent's workloads: the part's wear (sim_agent.c sim_life) */
	struct sim_pf pf;
	struct {              /* powerfail-write acks, generated in batches on the console */
		bool on;
		long next, total, iter;
		double rec_ms;
		uint64_t seq;     /* protocol seq of the next line */
		char log_path[256];
	} pfw;

	/* statistics for /sim/state */
	uint64_t chars_in, chars_dropped, lines_corrupted, garbage_bytes;
	long rel_writes, flushes;
	uint64_t agent_runs;
};

/* sim_board.c: output */
void sim_emit(struct sim_board *b, double delay_ms, const char *text);
void sim_emitf(struct sim_board *b, double delay_ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sim_emit_floor(struct sim_board *b, double delay_ms, uint32_t floor_ms, const char *text);
void sim_emit_fn(struct sim_board *b, double delay_ms, sim_item_fn fn, long arg);
void sim_emit_fn_floor(struct sim_board *b, double delay_ms, uint32_t floor_ms, sim_item_fn fn,
		       long arg);
/* Insert an item k places after the head (0 = next), before what is queued
 * behind it: output generated lazily by an item keeps its place in line. */
void sim_emit_insert(struct sim_board *b, size_t k, double delay_ms, double floor_ms,
		     const char *text, sim_item_fn fn, long arg);
void sim_sched_clear(struct sim_board *b);
bool sim_sched_idle(const struct sim_board *b);
/* Write now (echo), bypassing the schedule. */
void sim_out_now(struct sim_board *b, const char *data, size_t len);
void sim_set_stage(struct sim_board *b, enum sim_stage s);
/* Read what the console holds now (U-Boot's tstc() before a deadline). */
void sim_board_poll_input(struct sim_board *b);

/* sim_uboot.c */
void sim_uboot_poweron(struct sim_board *b);
void sim_uboot_input(struct sim_board *b, unsigned char c);
void sim_uboot_rxq_fire(struct loop *l, struct loop_timer *t, void *arg);
void sim_uboot_rxq_arm(struct sim_board *b); /* after a read: the queue's timer */
void sim_uboot_default_env(struct sim_board *b, struct sim_kv *env);
const char *sim_host_node(const char *host);     /* U-Boot/DT node "mmc@fe330000" */
const char *sim_host_linux(const char *host);    /* "fe330000.mmc" */

/* sim_linux.c */
void sim_linux_boot(struct sim_board *b, const char *bootargs);
void sim_linux_input(struct sim_board *b, unsigned char c);
void sim_linux_poweroff(struct sim_board *b); /* power cut: volatile state */
void sim_linux_init_fs(struct sim_board *b);  /* the root filesystem at first boot */
struct sim_file *sim_file_find(struct sim_board *b, const char *path);
struct sim_file *sim_file_create(struct sim_board *b, const char *path, unsigned mode);
void sim_file_remove(struct sim_board *b, const char *path);
/* Content of a readable path (dynamic sysfs/proc or a file); false if none. */
bool sim_read_path(struct sim_board *b, const char *path, struct lab_buf *out);

/* sim_agent.c: run the agent; output scheduled; returns the exit status. */
int sim_agent_run(struct sim_board *b, int argc, char **argv, double *t_ms, bool to_console,
		  struct lab_buf *capture);
void sim_agent_poweroff(struct sim_board *b);

/* sim_text.c: command-line splitting and tokenising shared by U-Boot and the shell */
enum sim_list_op { SIM_OP_NONE, SIM_OP_SEQ, SIM_OP_AND, SIM_OP_OR };
struct sim_seg {
	char *text;
	int op; /* how it joins the previous segment */
};
/* Split at ; && || (outside quotes).  Returns count (<= max). */
size_t sim_split_list(const char *line, struct sim_seg *segs, size_t max);
void sim_segs_free(struct sim_seg *segs, size_t n);

enum sim_tok_type { TOK_WORD, TOK_PIPE, TOK_OUT, TOK_APPEND, TOK_IN, TOK_DUP };
struct sim_tok {
	int type;
	int fd;   /* redirections: which fd (1 or 2); TOK_DUP: 2>&1 */
	char *s;  /* TOK_WORD */
};
typedef const char *(*sim_var_fn)(void *ctx, const char *name);
/* Tokenise with quote removal and $VAR/${VAR}/$? expansion.  Returns count. */
size_t sim_tokenize(const char *s, sim_var_fn var, void *ctx, struct sim_tok *toks, size_t max);
void sim_toks_free(struct sim_tok *toks, size_t n);
/* base64 decode (ignores whitespace); false on bad input. */
bool sim_base64_decode(const char *in, size_t n, struct lab_buf *out);

#endif
