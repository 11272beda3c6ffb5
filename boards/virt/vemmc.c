// SPDX-License-Identifier: GPL-2.0
/*
 * vemmc - a virtual eMMC host controller with an emulated eMMC 5.1 card.
 *
 * Registers an mmc_host (with a command queue engine) in front of an
 * emulated card, so the kernel's real mmc_core / mmc_block code paths for FUA,
 * reliable write, cache flush and CQE run without hardware.  The card
 * answers the initialisation the core performs (CMD0/1/2/3/9/7, EXT_CSD,
 * CMD6 switches including CACHE_CTRL, CMDQ_MODE_EN and FLUSH_CACHE), single
 * and multiple block transfers with and without CMD23 (bit 31 = reliable
 * write), and, with CQE, task descriptors with REL_WRITE and DCMD flushes.
 *
 * The card has a volatile write cache: a normal write lands in the cache
 * and reaches the durable media only on a flush, a reliable write or when
 * the cache is full (oldest sectors are evicted first).  A power cut
 * (debugfs vemmc/power_cut or the power_cut parameter) discards the cache,
 * which is what a real power loss does to unflushed data.
 *
 * The durable media is guest RAM (vmalloc: a blank card at every boot), or,
 * when QEMU provides an ivshmem-plain device (1af4:1110) whose BAR 2 is a
 * file-backed memory backend, that BAR: the card's durable contents are then
 * the host file and survive QEMU being killed, while the cache (guest RAM)
 * does not.  Reads are served from a full copy in guest RAM (the "view").
 * lie_flush=1 makes a part that acknowledges FLUSH_CACHE without writing the
 * cache back (a lying part, for power-fail tests).
 *
 * Latencies per profile (read/write/reliable write/flush, transfer rate)
 * make parts differ measurably.  debugfs vemmc/ has the counters.
 */
#include <linux/bitmap.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <linux/mmc/card.h>
#include <linux/mmc/core.h>
#include <linux/mmc/host.h>
#include <linux/mmc/mmc.h>

#define VEMMC_SECTOR		512
#define VEMMC_RING		128	/* queued requests: CQE depth + DCMD + slack */
#define VEMMC_RCA_STATE_SHIFT	9
#define VEMMC_IVSHMEM_VENDOR	0x1af4	/* Red Hat / Qumranet */
#define VEMMC_IVSHMEM_DEVICE	0x1110	/* ivshmem(-plain) */
#define VEMMC_IVSHMEM_BAR	2	/* the shared memory */

/* R1 card states (JESD84-B51 6.13) */
enum vemmc_state {
	VEMMC_IDLE = 0, VEMMC_READY = 1, VEMMC_IDENT = 2, VEMMC_STBY = 3,
	VEMMC_TRAN = 4, VEMMC_DATA = 5, VEMMC_RCV = 6, VEMMC_PRG = 7,
};

struct vemmc_profile {
	const char *name;
	const char *pnm;	/* CID product name, 6 characters */
	u8 manfid;
	u8 oemid;
	u32 capacity_mib;
	u32 cache_kib;		/* 0: the card has no cache */
	u32 cmdq_depth;		/* 0: no command queue support */
	u32 read_us;		/* per read request */
	u32 write_us;		/* per write request (into the cache) */
	u32 relwr_us;		/* per reliable write request */
	u32 flush_us;		/* per flush ... */
	u32 flush_us_mib;	/* ... plus this per MiB of dirty data */
	u32 rate_mibs;		/* transfer rate, MiB/s */
	u8 life_a, life_b, pre_eol;
};

/*
 * "slowrel" imitates the parts for which FUA was found expensive (reliable
 * write several times a cached write + flush); "fastrel" the opposite.
 */
static const struct vemmc_profile vemmc_profiles[] = {
	{ "default", "VEMMC0", 0xfe, 0x01, 64, 1024, 32,
	  60, 80, 600, 900, 4000, 200, 1, 1, 1 },
	{ "slowrel", "VEMMCS", 0xfe, 0x02, 64, 1024, 32,
	  60, 80, 3000, 400, 2000, 200, 2, 2, 1 },
	{ "fastrel", "VEMMCF", 0xfe, 0x03, 64, 1024, 32,
	  60, 80, 150, 3000, 8000, 200, 1, 1, 1 },
	{ "nocache", "VEMMCN", 0xfe, 0x04, 64, 0, 32,
	  60, 400, 400, 50, 0, 100, 1, 1, 1 },
	{ "nocqe", "VEMMCQ", 0xfe, 0x05, 64, 1024, 0,
	  60, 80, 600, 900, 4000, 200, 1, 1, 1 },
};

static char *profile = "default";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile, "card profile: default, slowrel, fastrel, nocache, nocqe");

/* Overrides of the profile; -1 keeps the profile's value. */
static int capacity_mib = -1;
module_param(capacity_mib, int, 0444);
MODULE_PARM_DESC(capacity_mib, "capacity in MiB (RAM is used twice this, once with ivshmem media)");
static int cache_kib = -1;
module_param(cache_kib, int, 0444);
MODULE_PARM_DESC(cache_kib, "write cache size in KiB (0: no cache)");
static int cmdq_depth = -1;
module_param(cmdq_depth, int, 0444);
MODULE_PARM_DESC(cmdq_depth, "command queue depth (0: no CMDQ support, else 3..32)");
static int read_us = -1;
module_param(read_us, int, 0444);
static int write_us = -1;
module_param(write_us, int, 0444);
static int relwr_us = -1;
module_param(relwr_us, int, 0444);
static int flush_us = -1;
module_param(flush_us, int, 0444);
MODULE_PARM_DESC(flush_us, "latency of a flush (also read_us, write_us, relwr_us per request)");
static bool dcmd = true;
module_param(dcmd, bool, 0444);
MODULE_PARM_DESC(dcmd, "the CQE can issue direct commands (flush without halting the queue)");
static bool lie_flush;
module_param(lie_flush, bool, 0444);
MODULE_PARM_DESC(lie_flush, "acknowledge FLUSH_CACHE without writing the cache back (a lying part)");
static bool ivshmem = true;
module_param(ivshmem, bool, 0444);
MODULE_PARM_DESC(ivshmem, "use an ivshmem-plain device (BAR 2) as durable media when there is one");

struct vemmc_slot {
	struct mmc_request *mrq;
	bool cqe;
};

struct vemmc {
	struct mmc_host *mmc;
	struct vemmc_profile p;

	/* the card; all below guarded by card_lock (held by the worker) */
	struct mutex card_lock;
	u8 *media;		/* durable contents: vmalloc'd, or the ivshmem BAR */
	struct pci_dev *shm;	/* the ivshmem device backing media, or NULL */
	u8 *view;		/* what reads return: media + cached writes */
	unsigned long *dirty;	/* per sector: cached, not yet on the media */
	u32 *fifo;		/* cached sectors, oldest first */
	u32 fifo_head, fifo_len, cache_sectors;
	u64 sectors;
	u8 ext_csd[512];
	u8 cid[16], csd[16];
	u16 rca;
	enum vemmc_state state;
	bool switch_error;
	bool sbc_rel;		/* CMD23 with bit 31 seen for the next transfer */

	/* request queue from the core to the worker */
	spinlock_t qlock;
	struct vemmc_slot ring[VEMMC_RING];
	unsigned int qhead, qcount;
	struct workqueue_struct *wq;
	struct work_struct work;

	/* CQE */
	bool cqe_enabled;
	atomic_t cqe_inflight;
	wait_queue_head_t idle_wq;

	/* counters (debugfs) */
	u64 commands, reads, writes, reliable_writes, flushes, dcmd_flushes;
	u64 cqe_tasks, evictions, sectors_read, sectors_written, power_cuts;
	u64 lost_sectors, cache_lost_power_off, lied_flushes;
	struct dentry *dbg;
};

static struct vemmc *vemmc_dev;	/* the one instance, for power_cut */
static DEFINE_MUTEX(vemmc_dev_lock);

/* Store @val in bits [start+size-1:start] of a 128-bit big-endian register. */
static void vemmc_bits(u8 *reg, unsigned int start, unsigned int size, u32 val)
{
	unsigned int i, bit;

	for (i = 0; i < size; i++) {
		bit = start + i;
		if (val & (1u << i))
			reg[15 - bit / 8] |= 1u << (bit % 8);
		else
			reg[15 - bit / 8] &= ~(1u << (bit % 8));
	}
}

static void vemmc_resp128(const u8 *reg, u32 *resp)
{
	int i;

	for (i = 0; i < 4; i++)
		resp[i] = (u32)reg[4 * i] << 24 | (u32)reg[4 * i + 1] << 16 |
			  (u32)reg[4 * i + 2] << 8 | reg[4 * i + 3];
}

static void vemmc_build_registers(struct vemmc *v)
{
	u8 *e = v->ext_csd;
	u32 cache_kbit = v->p.cache_kib * 8;
	u32 serial = 0x5e000000 | v->p.manfid << 16 | v->p.oemid << 8 | 0x42;
	int i;

	memset(v->cid, 0, sizeof(v->cid));
	vemmc_bits(v->cid, 120, 8, v->p.manfid);
	vemmc_bits(v->cid, 112, 2, 1);			/* CBX: BGA */
	vemmc_bits(v->cid, 104, 8, v->p.oemid);
	for (i = 0; i < 6; i++)
		vemmc_bits(v->cid, 96 - 8 * i, 8, v->p.pnm[i]);
	vemmc_bits(v->cid, 48, 8, 0x10);		/* PRV 1.0 */
	vemmc_bits(v->cid, 16, 32, serial);
	vemmc_bits(v->cid, 12, 4, 6);			/* MDT: June ... */
	vemmc_bits(v->cid, 8, 4, 2024 - 2013);		/* ... 2024 (EXT_CSD rev > 4) */
	vemmc_bits(v->cid, 0, 1, 1);

	memset(v->csd, 0, sizeof(v->csd));
	vemmc_bits(v->csd, 126, 2, 3);			/* CSD_STRUCTURE: see EXT_CSD */
	vemmc_bits(v->csd, 122, 4, 4);			/* SPEC_VERS 4.x+ */
	vemmc_bits(v->csd, 112, 8, 0x27);		/* TAAC */
	vemmc_bits(v->csd, 104, 8, 0x01);		/* NSAC */
	vemmc_bits(v->csd, 96, 8, 0x32);		/* TRAN_SPEED 26 MHz */
	/* CCC: basic, block read, block write (no erase: no discard path) */
	vemmc_bits(v->csd, 84, 12, 0x015);
	vemmc_bits(v->csd, 80, 4, 9);			/* READ_BL_LEN 512 */
	vemmc_bits(v->csd, 62, 12, 0xfff);		/* C_SIZE: see SEC_COUNT */
	vemmc_bits(v->csd, 47, 3, 7);
	vemmc_bits(v->csd, 42, 5, 31);			/* ERASE_GRP_SIZE */
	vemmc_bits(v->csd, 37, 5, 31);			/* ERASE_GRP_MULT */
	vemmc_bits(v->csd, 26, 3, 2);			/* R2W_FACTOR */
	vemmc_bits(v->csd, 22, 4, 9);			/* WRITE_BL_LEN 512 */
	vemmc_bits(v->csd, 0, 1, 1);

	memset(e, 0, 512);
	e[EXT_CSD_REV] = 8;				/* eMMC 5.1 */
	e[EXT_CSD_STRUCTURE] = 2;
	e[EXT_CSD_CARD_TYPE] = EXT_CSD_CARD_TYPE_HS_26 | EXT_CSD_CARD_TYPE_HS_52;
	e[EXT_CSD_SEC_CNT + 0] = v->sectors & 0xff;
	e[EXT_CSD_SEC_CNT + 1] = (v->sectors >> 8) & 0xff;
	e[EXT_CSD_SEC_CNT + 2] = (v->sectors >> 16) & 0xff;
	e[EXT_CSD_SEC_CNT + 3] = (v->sectors >> 24) & 0xff;
	e[EXT_CSD_WR_REL_PARAM] = EXT_CSD_WR_REL_PARAM_EN | 0x01;	/* EN_REL_WR, HS_CTRL_REL */
	e[EXT_CSD_REL_WR_SEC_C] = 1;
	e[EXT_CSD_GENERIC_CMD6_TIME] = 10;		/* 100 ms */
	e[EXT_CSD_POWER_OFF_LONG_TIME] = 50;		/* 500 ms */
	e[EXT_CSD_CACHE_SIZE + 0] = cache_kbit & 0xff;
	e[EXT_CSD_CACHE_SIZE + 1] = (cache_kbit >> 8) & 0xff;
	e[EXT_CSD_CACHE_SIZE + 2] = (cache_kbit >> 16) & 0xff;
	e[EXT_CSD_CACHE_SIZE + 3] = (cache_kbit >> 24) & 0xff;
	if (v->p.cmdq_depth) {
		e[EXT_CSD_CMDQ_SUPPORT] = 1;
		e[EXT_CSD_CMDQ_DEPTH] = (v->p.cmdq_depth - 1) & 0x1f;
	}
	e[EXT_CSD_HC_ERASE_GRP_SIZE] = 1;
	e[EXT_CSD_HC_WP_GRP_SIZE] = 1;
	e[EXT_CSD_ERASE_TIMEOUT_MULT] = 1;
	memcpy(&e[EXT_CSD_FIRMWARE_VERSION], "VEMMC-01", 8);
	e[262] = 0x01;					/* DEVICE_VERSION */
	e[EXT_CSD_PRE_EOL_INFO] = v->p.pre_eol;
	e[EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A] = v->p.life_a;
	e[EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B] = v->p.life_b;
}

/* ---- the durable media and the volatile cache ---- */

static bool vemmc_cache_on(struct vemmc *v)
{
	return v->cache_sectors && (v->ext_csd[EXT_CSD_CACHE_CTRL] & 1);
}

static void vemmc_commit(struct vemmc *v, u32 s)
{
	memcpy(v->media + (size_t)s * VEMMC_SECTOR, v->view + (size_t)s * VEMMC_SECTOR,
	       VEMMC_SECTOR);
}

/* Write every cached sector to the media; returns how many there were. */
static u32 vemmc_flush_cache(struct vemmc *v)
{
	u32 i, n = 0;

	for (i = 0; i < v->fifo_len; i++) {
		u32 s = v->fifo[(v->fifo_head + i) % v->cache_sectors];

		if (test_and_clear_bit(s, v->dirty)) {
			vemmc_commit(v, s);
			n++;
		}
	}
	v->fifo_head = 0;
	v->fifo_len = 0;
	return n;
}

/* Forget every cached sector (power loss); returns how many were lost. */
static u32 vemmc_drop_cache(struct vemmc *v)
{
	u32 i, n = 0;

	for (i = 0; i < v->fifo_len; i++) {
		u32 s = v->fifo[(v->fifo_head + i) % v->cache_sectors];

		if (test_and_clear_bit(s, v->dirty)) {
			memcpy(v->view + (size_t)s * VEMMC_SECTOR,
			       v->media + (size_t)s * VEMMC_SECTOR, VEMMC_SECTOR);
			n++;
		}
	}
	v->fifo_head = 0;
	v->fifo_len = 0;
	return n;
}

/* Sectors [s, s+n) were written to the view: cache them or make them durable. */
static void vemmc_written(struct vemmc *v, u32 s, u32 n, bool reliable)
{
	u32 i;

	if (reliable || !vemmc_cache_on(v)) {
		memcpy(v->media + (size_t)s * VEMMC_SECTOR, v->view + (size_t)s * VEMMC_SECTOR,
		       (size_t)n * VEMMC_SECTOR);
		for (i = 0; i < n; i++)
			clear_bit(s + i, v->dirty);	/* stale fifo entries are skipped */
		return;
	}
	for (i = 0; i < n; i++) {
		if (test_and_set_bit(s + i, v->dirty))
			continue;
		if (v->fifo_len == v->cache_sectors) {
			/* full: evict the oldest cached sector to the media */
			u32 old = v->fifo[v->fifo_head];

			v->fifo_head = (v->fifo_head + 1) % v->cache_sectors;
			v->fifo_len--;
			if (test_and_clear_bit(old, v->dirty)) {
				vemmc_commit(v, old);
				v->evictions++;
			}
		}
		v->fifo[(v->fifo_head + v->fifo_len) % v->cache_sectors] = s + i;
		v->fifo_len++;
	}
}

static void vemmc_power_cut(struct vemmc *v)
{
	u32 n;

	mutex_lock(&v->card_lock);
	n = vemmc_drop_cache(v);
	v->power_cuts++;
	v->lost_sectors += n;
	mutex_unlock(&v->card_lock);
	pr_info("vemmc: power cut: %u cached sector(s) lost\n", n);
}

/* ---- commands ---- */

static u32 vemmc_r1(struct vemmc *v)
{
	u32 r = v->state << VEMMC_RCA_STATE_SHIFT | R1_READY_FOR_DATA;

	if (v->switch_error)
		r |= R1_SWITCH_ERROR;
	return r;
}

/* Latency of a transfer of @bytes at the profile's rate, in microseconds. */
static u64 vemmc_xfer_us(struct vemmc *v, u64 bytes)
{
	return v->p.rate_mibs ? div_u64(bytes * 1000000, (u64)v->p.rate_mibs << 20) : 0;
}

static void vemmc_sleep_us(u64 us)
{
	if (!us)
		return;
	if (us < 20000)
		usleep_range(us, us + us / 8 + 1);
	else
		msleep(DIV_ROUND_UP(us, 1000));
}

/* Move the data of a transfer at sector @addr; returns the latency in us. */
static u64 vemmc_data(struct vemmc *v, struct mmc_data *data, u32 addr, bool reliable)
{
	u32 n = data->blocks * data->blksz / VEMMC_SECTOR;
	size_t len = (size_t)data->blocks * data->blksz;
	size_t done;

	if (data->blksz != VEMMC_SECTOR || (u64)addr + n > v->sectors) {
		data->error = -EIO;
		return 0;
	}
	if (data->flags & MMC_DATA_WRITE) {
		done = sg_copy_to_buffer(data->sg, data->sg_len,
					 v->view + (size_t)addr * VEMMC_SECTOR, len);
		if (done != len) {
			data->error = -EIO;
			return 0;
		}
		vemmc_written(v, addr, n, reliable);
		data->bytes_xfered = len;
		v->writes++;
		v->sectors_written += n;
		if (reliable)
			v->reliable_writes++;
		return (reliable ? v->p.relwr_us : v->p.write_us) + vemmc_xfer_us(v, len);
	}
	done = sg_copy_from_buffer(data->sg, data->sg_len,
				   v->view + (size_t)addr * VEMMC_SECTOR, len);
	if (done != len) {
		data->error = -EIO;
		return 0;
	}
	data->bytes_xfered = len;
	v->reads++;
	v->sectors_read += n;
	return v->p.read_us + vemmc_xfer_us(v, len);
}

static u64 vemmc_flush(struct vemmc *v, bool dcmd_flush)
{
	u32 n = 0;

	/* a lying part reports success and keeps everything in the cache */
	if (lie_flush)
		v->lied_flushes++;
	else
		n = vemmc_flush_cache(v);
	v->flushes++;
	if (dcmd_flush)
		v->dcmd_flushes++;
	return v->p.flush_us + div_u64((u64)n * VEMMC_SECTOR * v->p.flush_us_mib, 1 << 20);
}

static u64 vemmc_switch(struct vemmc *v, u32 arg)
{
	u8 access = (arg >> 24) & 3, index = (arg >> 16) & 0xff, value = (arg >> 8) & 0xff;
	u8 cur = v->ext_csd[index], next;

	switch (access) {
	case MMC_SWITCH_MODE_SET_BITS:
		next = cur | value;
		break;
	case MMC_SWITCH_MODE_CLEAR_BITS:
		next = cur & ~value;
		break;
	case MMC_SWITCH_MODE_WRITE_BYTE:
		next = value;
		break;
	default:
		v->switch_error = true;
		return 0;
	}
	switch (index) {
	case EXT_CSD_FLUSH_CACHE:
		return (next & 1) ? vemmc_flush(v, false) : 0;
	case EXT_CSD_CACHE_CTRL:
		/* turning the cache off writes it back first */
		if (!(next & 1) && (cur & 1))
			vemmc_flush_cache(v);
		break;
	case EXT_CSD_CMDQ_MODE_EN:
		if ((next & 1) && !v->p.cmdq_depth) {
			v->switch_error = true;
			return 0;
		}
		break;
	case EXT_CSD_POWER_OFF_NOTIFICATION:
	case EXT_CSD_HPI_MGMT:
	case EXT_CSD_RST_N_FUNCTION:
	case EXT_CSD_ERASE_GROUP_DEF:
	case EXT_CSD_PART_CONFIG:
	case EXT_CSD_BUS_WIDTH:
	case EXT_CSD_HS_TIMING:
	case EXT_CSD_POWER_CLASS:
	case EXT_CSD_BKOPS_EN:
		break;
	default:
		v->switch_error = true;
		return 0;
	}
	v->ext_csd[index] = next;
	return 0;
}

/* Reset the volatile EXT_CSD settings (CMD0, power-up); the cache contents stay. */
static void vemmc_reset(struct vemmc *v)
{
	u8 *e = v->ext_csd;

	e[EXT_CSD_CACHE_CTRL] = 0;
	e[EXT_CSD_CMDQ_MODE_EN] = 0;
	e[EXT_CSD_BUS_WIDTH] = 0;
	e[EXT_CSD_HS_TIMING] = 0;
	e[EXT_CSD_POWER_CLASS] = 0;
	e[EXT_CSD_PART_CONFIG] = 0;
	v->state = VEMMC_IDLE;
	v->rca = 0;
	v->switch_error = false;
	v->sbc_rel = false;
}

/* Execute one command (and its data); returns the latency in us. */
static u64 vemmc_cmd(struct vemmc *v, struct mmc_command *cmd, struct mmc_data *data)
{
	u64 lat = 0;
	bool rel;

	v->commands++;
	cmd->error = 0;
	memset(cmd->resp, 0, sizeof(cmd->resp));
	switch (cmd->opcode) {
	case MMC_GO_IDLE_STATE:
		vemmc_reset(v);
		break;
	case MMC_SEND_OP_COND:
		/* ready at once; sector addressing; 2.7-3.6 V and 1.7-1.95 V */
		cmd->resp[0] = 0xc0ff8080;
		if (v->state == VEMMC_IDLE)
			v->state = VEMMC_READY;
		break;
	case MMC_ALL_SEND_CID:
		vemmc_resp128(v->cid, cmd->resp);
		v->state = VEMMC_IDENT;
		break;
	case MMC_SET_RELATIVE_ADDR:
		v->rca = cmd->arg >> 16;
		cmd->resp[0] = vemmc_r1(v);
		v->state = VEMMC_STBY;
		break;
	case MMC_SEND_CSD:
		vemmc_resp128(v->csd, cmd->resp);
		break;
	case MMC_SEND_CID:
		vemmc_resp128(v->cid, cmd->resp);
		break;
	case MMC_SELECT_CARD:
		cmd->resp[0] = vemmc_r1(v);
		v->state = (cmd->arg >> 16) == v->rca ? VEMMC_TRAN : VEMMC_STBY;
		break;
	case MMC_SEND_STATUS:
		cmd->resp[0] = vemmc_r1(v);
		v->switch_error = false;	/* clear on read */
		break;
	case MMC_SWITCH:
		cmd->resp[0] = vemmc_r1(v);
		lat = vemmc_switch(v, cmd->arg);
		break;
	case MMC_SEND_EXT_CSD:
		cmd->resp[0] = vemmc_r1(v);
		if (!data || data->blksz * data->blocks != 512) {
			cmd->error = -EINVAL;
			break;
		}
		if (sg_copy_from_buffer(data->sg, data->sg_len, v->ext_csd, 512) != 512)
			data->error = -EIO;
		else
			data->bytes_xfered = 512;
		break;
	case MMC_SET_BLOCKLEN:
	case MMC_STOP_TRANSMISSION:
		cmd->resp[0] = vemmc_r1(v);
		break;
	case MMC_SET_BLOCK_COUNT:
		cmd->resp[0] = vemmc_r1(v);
		v->sbc_rel = !!(cmd->arg & BIT(31));
		break;
	case MMC_READ_SINGLE_BLOCK:
	case MMC_READ_MULTIPLE_BLOCK:
	case MMC_WRITE_BLOCK:
	case MMC_WRITE_MULTIPLE_BLOCK:
		cmd->resp[0] = vemmc_r1(v);
		rel = v->sbc_rel;
		v->sbc_rel = false;
		if (!data || v->state != VEMMC_TRAN) {
			cmd->error = -EINVAL;
			break;
		}
		lat = vemmc_data(v, data, cmd->arg, rel && (data->flags & MMC_DATA_WRITE));
		break;
	case MMC_SLEEP_AWAKE:
		cmd->resp[0] = vemmc_r1(v);
		break;
	default:
		/* SD/SDIO probes and anything else: no response, like a real eMMC */
		cmd->error = -ETIMEDOUT;
		break;
	}
	return lat;
}

static void vemmc_run(struct vemmc *v, struct mmc_request *mrq, bool cqe)
{
	u64 lat = 0;

	mutex_lock(&v->card_lock);
	if (cqe && mrq->data) {
		/* a CQE task: the descriptor carries address, direction and REL_WRITE */
		struct mmc_data *data = mrq->data;

		v->cqe_tasks++;
		data->error = 0;
		if (!(v->ext_csd[EXT_CSD_CMDQ_MODE_EN] & 1))
			data->error = -EIO;
		else
			lat = vemmc_data(v, data, data->blk_addr,
					 (data->flags & (MMC_DATA_WRITE | MMC_DATA_REL_WR)) ==
					 (MMC_DATA_WRITE | MMC_DATA_REL_WR));
	} else if (cqe) {
		/* DCMD: a direct command (the core uses it for the cache flush) */
		v->commands++;
		mrq->cmd->error = 0;
		mrq->cmd->resp[0] = vemmc_r1(v);
		if (mrq->cmd->opcode == MMC_SWITCH &&
		    ((mrq->cmd->arg >> 16) & 0xff) == EXT_CSD_FLUSH_CACHE)
			lat = vemmc_flush(v, true);
		else
			lat = vemmc_cmd(v, mrq->cmd, NULL);
	} else {
		if (mrq->data)
			mrq->data->error = 0;
		if (mrq->sbc)
			lat += vemmc_cmd(v, mrq->sbc, NULL);
		if (!mrq->sbc || !mrq->sbc->error)
			lat += vemmc_cmd(v, mrq->cmd, mrq->data);
		if (mrq->stop && (!mrq->sbc || mrq->cmd->error ||
				  (mrq->data && mrq->data->error)))
			vemmc_cmd(v, mrq->stop, NULL);
	}
	mutex_unlock(&v->card_lock);

	vemmc_sleep_us(lat);
	if (cqe) {
		mmc_cqe_request_done(v->mmc, mrq);
		if (atomic_dec_and_test(&v->cqe_inflight))
			wake_up_all(&v->idle_wq);
	} else {
		mmc_request_done(v->mmc, mrq);
	}
}

static void vemmc_work(struct work_struct *work)
{
	struct vemmc *v = container_of(work, struct vemmc, work);
	struct vemmc_slot slot;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&v->qlock, flags);
		if (!v->qcount) {
			spin_unlock_irqrestore(&v->qlock, flags);
			return;
		}
		slot = v->ring[v->qhead];
		v->qhead = (v->qhead + 1) % VEMMC_RING;
		v->qcount--;
		spin_unlock_irqrestore(&v->qlock, flags);
		vemmc_run(v, slot.mrq, slot.cqe);
	}
}

static int vemmc_enqueue(struct vemmc *v, struct mmc_request *mrq, bool cqe)
{
	unsigned long flags;

	spin_lock_irqsave(&v->qlock, flags);
	if (v->qcount == VEMMC_RING) {
		spin_unlock_irqrestore(&v->qlock, flags);
		return -EBUSY;
	}
	v->ring[(v->qhead + v->qcount) % VEMMC_RING] = (struct vemmc_slot){ mrq, cqe };
	v->qcount++;
	spin_unlock_irqrestore(&v->qlock, flags);
	queue_work(v->wq, &v->work);
	return 0;
}

/* ---- mmc_host_ops ---- */

static void vemmc_request(struct mmc_host *mmc, struct mmc_request *mrq)
{
	struct vemmc *v = mmc_priv(mmc);

	if (vemmc_enqueue(v, mrq, false)) {
		mrq->cmd->error = -EBUSY;
		mmc_request_done(mmc, mrq);
	}
}

static void vemmc_set_ios(struct mmc_host *mmc, struct mmc_ios *ios)
{
	struct vemmc *v = mmc_priv(mmc);

	mutex_lock(&v->card_lock);
	if (ios->power_mode == MMC_POWER_OFF) {
		/* the card loses power: what was not flushed is gone */
		v->cache_lost_power_off += vemmc_drop_cache(v);
		vemmc_reset(v);
	}
	mutex_unlock(&v->card_lock);
}

static int vemmc_get_ro(struct mmc_host *mmc)
{
	return 0;
}

static int vemmc_get_cd(struct mmc_host *mmc)
{
	return 1;
}

static const struct mmc_host_ops vemmc_ops = {
	.request = vemmc_request,
	.set_ios = vemmc_set_ios,
	.get_ro = vemmc_get_ro,
	.get_cd = vemmc_get_cd,
};

/* ---- mmc_cqe_ops: an engine that executes tasks in submission order ---- */

static int vemmc_cqe_enable(struct mmc_host *mmc, struct mmc_card *card)
{
	struct vemmc *v = mmc_priv(mmc);

	/* like cqhci: only with the card in command queue mode */
	if (!card->ext_csd.cmdq_en)
		return -EINVAL;
	v->cqe_enabled = true;
	return 0;
}

static void vemmc_cqe_disable(struct mmc_host *mmc)
{
	struct vemmc *v = mmc_priv(mmc);

	v->cqe_enabled = false;
}

static int vemmc_cqe_request(struct mmc_host *mmc, struct mmc_request *mrq)
{
	struct vemmc *v = mmc_priv(mmc);
	int err;

	if (!v->cqe_enabled)
		return -EINVAL;
	mmc->cqe_on = true;
	atomic_inc(&v->cqe_inflight);
	err = vemmc_enqueue(v, mrq, true);
	if (err && atomic_dec_and_test(&v->cqe_inflight))
		wake_up_all(&v->idle_wq);
	return err;
}

static void vemmc_cqe_post_req(struct mmc_host *mmc, struct mmc_request *mrq)
{
}

static void vemmc_cqe_off(struct mmc_host *mmc)
{
	mmc->cqe_on = false;
}

static int vemmc_cqe_wait_for_idle(struct mmc_host *mmc)
{
	struct vemmc *v = mmc_priv(mmc);

	wait_event(v->idle_wq, atomic_read(&v->cqe_inflight) == 0);
	return 0;
}

static bool vemmc_cqe_timeout(struct mmc_host *mmc, struct mmc_request *mrq,
			      bool *recovery_needed)
{
	/* every task completes (after its latency): nothing to recover */
	*recovery_needed = false;
	return false;
}

static void vemmc_cqe_recovery_start(struct mmc_host *mmc)
{
}

static void vemmc_cqe_recovery_finish(struct mmc_host *mmc)
{
	vemmc_cqe_wait_for_idle(mmc);
}

static const struct mmc_cqe_ops vemmc_cqe_ops = {
	.cqe_enable = vemmc_cqe_enable,
	.cqe_disable = vemmc_cqe_disable,
	.cqe_request = vemmc_cqe_request,
	.cqe_post_req = vemmc_cqe_post_req,
	.cqe_off = vemmc_cqe_off,
	.cqe_wait_for_idle = vemmc_cqe_wait_for_idle,
	.cqe_timeout = vemmc_cqe_timeout,
	.cqe_recovery_start = vemmc_cqe_recovery_start,
	.cqe_recovery_finish = vemmc_cqe_recovery_finish,
};

/* ---- debugfs and the power_cut trigger ---- */

static int vemmc_stats_show(struct seq_file *s, void *unused)
{
	struct vemmc *v = s->private;
	u32 dirty;

	mutex_lock(&v->card_lock);
	dirty = bitmap_weight(v->dirty, v->sectors);
	seq_printf(s, "profile %s\ncapacity_mib %u\ncache_kib %u\ncmdq_depth %u\n",
		   v->p.name, v->p.capacity_mib, v->p.cache_kib, v->p.cmdq_depth);
	seq_printf(s, "cache_on %d\ncmdq_mode %d\ndirty_sectors %u\n", vemmc_cache_on(v),
		   v->ext_csd[EXT_CSD_CMDQ_MODE_EN] & 1, dirty);
	seq_printf(s, "commands %llu\nreads %llu\nwrites %llu\nreliable_writes %llu\n",
		   v->commands, v->reads, v->writes, v->reliable_writes);
	seq_printf(s, "flushes %llu\ndcmd_flushes %llu\ncqe_tasks %llu\nevictions %llu\n",
		   v->flushes, v->dcmd_flushes, v->cqe_tasks, v->evictions);
	seq_printf(s, "sectors_read %llu\nsectors_written %llu\npower_cuts %llu\n",
		   v->sectors_read, v->sectors_written, v->power_cuts);
	seq_printf(s, "lost_sectors %llu\ncache_lost_power_off %llu\n", v->lost_sectors,
		   v->cache_lost_power_off);
	seq_printf(s, "media %s\nlie_flush %d\nlied_flushes %llu\n",
		   v->shm ? pci_name(v->shm) : "ram", lie_flush, v->lied_flushes);
	mutex_unlock(&v->card_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vemmc_stats);

static ssize_t vemmc_power_cut_write(struct file *f, const char __user *buf, size_t len,
				     loff_t *pos)
{
	struct vemmc *v = file_inode(f)->i_private;

	vemmc_power_cut(v);
	return len;
}

static const struct file_operations vemmc_power_cut_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = vemmc_power_cut_write,
	.llseek = noop_llseek,
};

static int vemmc_power_cut_set(const char *val, const struct kernel_param *kp)
{
	mutex_lock(&vemmc_dev_lock);
	if (vemmc_dev)
		vemmc_power_cut(vemmc_dev);
	mutex_unlock(&vemmc_dev_lock);
	return 0;
}

static const struct kernel_param_ops vemmc_power_cut_ops = {
	.set = vemmc_power_cut_set,
};
module_param_cb(power_cut, &vemmc_power_cut_ops, NULL, 0200);
MODULE_PARM_DESC(power_cut, "write anything: the card loses its unflushed cache");

static void vemmc_debugfs(struct vemmc *v)
{
	static const struct { const char *name; size_t off; } ctr[] = {
		{ "commands", offsetof(struct vemmc, commands) },
		{ "reads", offsetof(struct vemmc, reads) },
		{ "writes", offsetof(struct vemmc, writes) },
		{ "reliable_writes", offsetof(struct vemmc, reliable_writes) },
		{ "flushes", offsetof(struct vemmc, flushes) },
		{ "dcmd_flushes", offsetof(struct vemmc, dcmd_flushes) },
		{ "cqe_tasks", offsetof(struct vemmc, cqe_tasks) },
		{ "evictions", offsetof(struct vemmc, evictions) },
		{ "power_cuts", offsetof(struct vemmc, power_cuts) },
		{ "lost_sectors", offsetof(struct vemmc, lost_sectors) },
		{ "lied_flushes", offsetof(struct vemmc, lied_flushes) },
	};
	int i;

	v->dbg = debugfs_create_dir("vemmc", NULL);
	for (i = 0; i < ARRAY_SIZE(ctr); i++)
		debugfs_create_u64(ctr[i].name, 0444, v->dbg, (u64 *)((u8 *)v + ctr[i].off));
	debugfs_create_file("stats", 0444, v->dbg, v, &vemmc_stats_fops);
	debugfs_create_file("power_cut", 0200, v->dbg, v, &vemmc_power_cut_fops);
}

/* ---- probe ---- */

static int vemmc_profile_setup(struct vemmc *v)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(vemmc_profiles); i++)
		if (sysfs_streq(profile, vemmc_profiles[i].name))
			break;
	if (i == ARRAY_SIZE(vemmc_profiles)) {
		pr_err("vemmc: unknown profile '%s'\n", profile);
		return -EINVAL;
	}
	v->p = vemmc_profiles[i];
	if (capacity_mib >= 0)
		v->p.capacity_mib = capacity_mib;
	if (cache_kib >= 0)
		v->p.cache_kib = cache_kib;
	if (cmdq_depth >= 0)
		v->p.cmdq_depth = cmdq_depth;
	if (read_us >= 0)
		v->p.read_us = read_us;
	if (write_us >= 0)
		v->p.write_us = write_us;
	if (relwr_us >= 0)
		v->p.relwr_us = relwr_us;
	if (flush_us >= 0)
		v->p.flush_us = flush_us;
	if (v->p.capacity_mib < 1 || v->p.capacity_mib > 4096 ||
	    v->p.cache_kib > v->p.capacity_mib * 1024 ||
	    (v->p.cmdq_depth && (v->p.cmdq_depth < 3 || v->p.cmdq_depth > 32))) {
		pr_err("vemmc: bad capacity_mib/cache_kib/cmdq_depth\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The durable media: BAR 2 of an ivshmem-plain device when QEMU has one
 * (the host file of its memory-backend-file), else zeroed guest RAM.  The
 * BAR is mapped write-back: it is RAM of the QEMU process (MAP_SHARED on the
 * file), so what is stored there is in the host's page cache at once and
 * survives QEMU being killed.
 */
static int vemmc_media_setup(struct vemmc *v)
{
	u64 bytes = v->sectors * VEMMC_SECTOR;
	struct pci_dev *pdev = NULL;
	int err;

	if (ivshmem)
		pdev = pci_get_device(VEMMC_IVSHMEM_VENDOR, VEMMC_IVSHMEM_DEVICE, NULL);
	if (!pdev) {
		v->media = vzalloc(bytes);
		return v->media ? 0 : -ENOMEM;
	}
	err = pci_enable_device(pdev);
	if (err) {
		pr_err("vemmc: %s: cannot enable the ivshmem device: %d\n", pci_name(pdev), err);
		goto put;
	}
	if (pci_resource_len(pdev, VEMMC_IVSHMEM_BAR) < bytes) {
		/* a card silently in RAM would defeat the point: refuse */
		pr_err("vemmc: %s: ivshmem BAR %d has %llu bytes, the card needs %llu\n",
		       pci_name(pdev), VEMMC_IVSHMEM_BAR,
		       (u64)pci_resource_len(pdev, VEMMC_IVSHMEM_BAR), bytes);
		err = -ENOSPC;
		goto disable;
	}
	err = pci_request_region(pdev, VEMMC_IVSHMEM_BAR, "vemmc");
	if (err) {
		pr_err("vemmc: %s: ivshmem BAR %d busy: %d\n", pci_name(pdev), VEMMC_IVSHMEM_BAR, err);
		goto disable;
	}
	v->media = memremap(pci_resource_start(pdev, VEMMC_IVSHMEM_BAR), bytes, MEMREMAP_WB);
	if (!v->media) {
		pr_err("vemmc: %s: cannot map ivshmem BAR %d\n", pci_name(pdev), VEMMC_IVSHMEM_BAR);
		err = -ENOMEM;
		goto release;
	}
	v->shm = pdev;
	return 0;

release:
	pci_release_region(pdev, VEMMC_IVSHMEM_BAR);
disable:
	pci_disable_device(pdev);
put:
	pci_dev_put(pdev);
	return err;
}

static void vemmc_media_release(struct vemmc *v)
{
	if (!v->shm) {
		vfree(v->media);
		v->media = NULL;
		return;
	}
	memunmap(v->media);
	v->media = NULL;
	pci_release_region(v->shm, VEMMC_IVSHMEM_BAR);
	pci_disable_device(v->shm);
	pci_dev_put(v->shm);
	v->shm = NULL;
}

static int vemmc_probe(struct platform_device *pdev)
{
	struct mmc_host *mmc;
	struct vemmc *v;
	int err;

	mmc = mmc_alloc_host(sizeof(*v), &pdev->dev);
	if (!mmc)
		return -ENOMEM;
	v = mmc_priv(mmc);
	v->mmc = mmc;
	mutex_init(&v->card_lock);
	spin_lock_init(&v->qlock);
	init_waitqueue_head(&v->idle_wq);
	INIT_WORK(&v->work, vemmc_work);
	err = vemmc_profile_setup(v);
	if (err)
		goto free_host;

	v->sectors = (u64)v->p.capacity_mib << 11;
	v->cache_sectors = v->p.cache_kib * 2;
	err = vemmc_media_setup(v);
	if (err)
		goto free_host;
	err = -ENOMEM;
	v->view = vmalloc(v->sectors * VEMMC_SECTOR);
	v->dirty = bitmap_zalloc(v->sectors, GFP_KERNEL);
	if (v->cache_sectors)
		v->fifo = kvcalloc(v->cache_sectors, sizeof(*v->fifo), GFP_KERNEL);
	if (!v->view || !v->dirty || (v->cache_sectors && !v->fifo))
		goto free_mem;
	/* power-up: the card reads what its media holds */
	memcpy(v->view, v->media, v->sectors * VEMMC_SECTOR);
	v->wq = alloc_ordered_workqueue("vemmc", WQ_MEM_RECLAIM);
	if (!v->wq)
		goto free_mem;
	vemmc_build_registers(v);
	vemmc_reset(v);

	mmc->ops = &vemmc_ops;
	mmc->f_min = 400000;
	mmc->f_max = 52000000;
	mmc->ocr_avail = MMC_VDD_32_33 | MMC_VDD_33_34 | MMC_VDD_165_195;
	mmc->caps = MMC_CAP_4_BIT_DATA | MMC_CAP_8_BIT_DATA | MMC_CAP_MMC_HIGHSPEED |
		    MMC_CAP_CMD23 | MMC_CAP_NONREMOVABLE | MMC_CAP_WAIT_WHILE_BUSY;
	mmc->caps2 = MMC_CAP2_NO_SD | MMC_CAP2_NO_SDIO | MMC_CAP2_NO_WRITE_PROTECT |
		     MMC_CAP2_CQE;
	if (dcmd)
		mmc->caps2 |= MMC_CAP2_CQE_DCMD;
	mmc->cqe_ops = &vemmc_cqe_ops;
	mmc->cqe_qdepth = dcmd ? 31 : 32;	/* slot 31 is the DCMD slot */
	mmc->max_busy_timeout = 0;		/* we wait for busy ourselves */
	mmc->max_segs = 128;
	mmc->max_blk_size = VEMMC_SECTOR;
	mmc->max_blk_count = 1024;
	mmc->max_req_size = mmc->max_blk_size * mmc->max_blk_count;
	mmc->max_seg_size = mmc->max_req_size;

	platform_set_drvdata(pdev, v);
	err = mmc_add_host(mmc);
	if (err)
		goto free_wq;
	vemmc_debugfs(v);
	mutex_lock(&vemmc_dev_lock);
	vemmc_dev = v;
	mutex_unlock(&vemmc_dev_lock);
	pr_info("vemmc: %s: profile %s, %u MiB, cache %u KiB, cmdq depth %u%s%s, media %s\n",
		mmc_hostname(mmc), v->p.name, v->p.capacity_mib, v->p.cache_kib,
		v->p.cmdq_depth, dcmd ? ", DCMD" : "", lie_flush ? ", lying flush" : "",
		v->shm ? "ivshmem (persistent)" : "RAM (blank at boot)");
	return 0;

free_wq:
	destroy_workqueue(v->wq);
free_mem:
	kvfree(v->fifo);
	bitmap_free(v->dirty);
	vfree(v->view);
	vemmc_media_release(v);
free_host:
	mmc_free_host(mmc);
	return err;
}

static int vemmc_remove(struct platform_device *pdev)
{
	struct vemmc *v = platform_get_drvdata(pdev);

	mutex_lock(&vemmc_dev_lock);
	vemmc_dev = NULL;
	mutex_unlock(&vemmc_dev_lock);
	debugfs_remove_recursive(v->dbg);
	mmc_remove_host(v->mmc);
	destroy_workqueue(v->wq);
	kvfree(v->fifo);
	bitmap_free(v->dirty);
	vfree(v->view);
	vemmc_media_release(v);
	mmc_free_host(v->mmc);
	return 0;
}

static struct platform_driver vemmc_driver = {
	.probe = vemmc_probe,
	.remove = vemmc_remove,
	.driver = {
		.name = "vemmc",
	},
};

static struct platform_device *vemmc_pdev;

static int __init vemmc_init(void)
{
	int err;

	err = platform_driver_register(&vemmc_driver);
	if (err)
		return err;
	vemmc_pdev = platform_device_register_simple("vemmc", -1, NULL, 0);
	if (IS_ERR(vemmc_pdev)) {
		platform_driver_unregister(&vemmc_driver);
		return PTR_ERR(vemmc_pdev);
	}
	return 0;
}

static void __exit vemmc_exit(void)
{
	platform_device_unregister(vemmc_pdev);
	platform_driver_unregister(&vemmc_driver);
}

module_init(vemmc_init);
module_exit(vemmc_exit);

MODULE_DESCRIPTION("Virtual eMMC host with an emulated eMMC 5.1 card (emmclab)");
MODULE_AUTHOR("emmclab developers <emmclab@example.invalid>");
MODULE_LICENSE("GPL");
