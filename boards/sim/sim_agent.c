/*
 * sim_agent.c - emmclab-agent on a simulated board: the contract's commands
 * (docs/agent.md) answered from the eMMC model, printed as protocol
 * lines (proto_format) with modelled timing, kept in a log for `resend`.
 * The bad-crc fault corrupts lines on the wire only; resend prints the
 * logged (correct) line.
 */
#include "sim_board.h"
#include "agent_cmds.h"
#include "hex.h"
#include "lathist.h"
#include "mode.h"
#include "proto.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct agent_run {
	struct sim_board *b;
	uint64_t seq;
	bool to_console;
	struct lab_buf *capture;
	double t_ms;     /* modelled time so far (capture mode) */
	double pending;  /* delay before the next line (console mode) */
	bool error;
	char **lines;
	size_t nlines;
	int argc;
	char **argv;     /* key=value arguments */
};

static void alog_add(struct sim_board *b, const char *line);

/* The agent log's line k (k < nalog), valid until the next alog_add. */
static const char *alog_line(const struct sim_board *b, size_t k)
{
	return b->alog_text.data + b->alog_off[k];
}

/* A command's log starts empty; its room is kept for the next command (a
 * string each line and freeing them all were a tenth of the simulator's
 * allocations), unless a long run (powerfail-write) made it large. */
static void log_reset(struct sim_board *b)
{
	b->nalog = 0;
	b->alog_text.len = 0;
	if (b->alog_text.cap > 64 * 1024 || b->alog_cap > 4096) {
		lab_buf_free(&b->alog_text);
		free(b->alog_off);
		b->alog_off = NULL;
		b->alog_cap = 0;
	}
}

static void wait_ms(struct agent_run *r, double ms)
{
	if (ms < 0)
		ms = 0;
	r->pending += ms;
	r->t_ms += ms;
}

static void out_line(struct agent_run *r, const char *line, bool corruptible)
{
	struct sim_board *b = r->b;
	char *copy = NULL; /* only a corrupted line differs from the one logged */
	const char *wire = line;
	if (corruptible && sim_board_fault_on(b, FAULT_BAD_CRC) &&
	    sim_rng_chance(&b->rng_fault, b->faults[FAULT_BAD_CRC].value) &&
	    sim_board_fault_fire(b, FAULT_BAD_CRC)) {
		/* Flip one hex digit of the CRC: the line still parses, the check fails. */
		wire = copy = xstrdup(line);
		char *crc = strstr(copy, " crc=");
		if (crc && crc[5]) {
			size_t k = 5 + rand_next(&b->rng_fault) % 8;
			if (crc[k] && crc[k] != '\n')
				crc[k] = crc[k] == '0' ? '1' : '0';
		}
		b->lines_corrupted++;
	}
	if (r->to_console) {
		sim_emit(b, r->pending, wire);
		r->pending = 0;
	} else {
		lab_buf_append(r->capture, wire, strlen(wire));
	}
	free(copy);
}

static void emit(struct agent_run *r, const char *kind, const char *const *kv)
{
	char line[PROTO_MAX_LINE];
	int n = proto_format(line, sizeof line, r->seq + 1, kind, kv);
	if (n < 0) {
		const char *e[] = {"code", "line-too-long", "msg", kind, NULL};
		n = proto_format(line, sizeof line, r->seq + 1, "error", e);
		if (n < 0)
			return;
	}
	r->seq++;
	alog_add(r->b, line);
	out_line(r, line, true);
}

static void emit_error(struct agent_run *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void emit_error(struct agent_run *r, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *kv[] = {"code", code, "msg", msg, NULL};
	emit(r, "error", kv);
}

static void emit_progress(struct agent_run *r, int pct, const char *what)
{
	char p[16];
	snprintf(p, sizeof p, "%d", pct);
	const char *kv[] = {"what", what, "pct", p, NULL};
	emit(r, "progress", kv);
}

static void emit_sample(struct agent_run *r, const char *w, unsigned iter, const char *metric,
			double value, const char *unit)
{
	char it[16], v[64];
	snprintf(it, sizeof it, "%u", iter);
	snprintf(v, sizeof v, "%.9g", isfinite(value) ? value : 0.0);
	const char *kv[] = {"workload", w, "iter", it, "metric", metric, "value", v, "unit", unit, NULL};
	emit(r, "sample", kv);
}

static void emit_counter(struct agent_run *r, const char *w, unsigned iter, const char *name,
			 long long value)
{
	char it[16], v[32];
	snprintf(it, sizeof it, "%u", iter);
	snprintf(v, sizeof v, "%lld", value);
	const char *kv[] = {"workload", w, "iter", it, "name", name, "value", v, NULL};
	emit(r, "counter", kv);
}

static const char *arg(const struct agent_run *r, const char *key)
{
	size_t kl = strlen(key);
	for (int i = 0; i < r->argc; i++)
		if (strncmp(r->argv[i], key, kl) == 0 && r->argv[i][kl] == '=')
			return r->argv[i] + kl + 1;
	return NULL;
}

static bool arg_num(struct agent_run *r, const char *key, double def, double min, double max,
		    double *out)
{
	const char *s = arg(r, key);
	*out = def;
	if (!s)
		return true;
	if (lab_parse_double(s, out) != 0 || *out < min || *out > max) {
		emit_error(r, "bad-arg", "%s=%s: want a number in %g..%g", key, s, min, max);
		return false;
	}
	return true;
}

/* ---- commands ---- */

/* Wear (docs/simulator.md, an assumption, not fitted): a rated 3,000
 * program/erase cycles, so each 300 full-device writes use 10 % more of the
 * life (life_a and life_b one step each, from the part's table values);
 * PRE_EOL_INFO turns warning at 0x09 and urgent past the life. */
#define SIM_RATED_PE 3000u

static void sim_life(const struct sim_board *b, unsigned *la, unsigned *lb, unsigned *eol)
{
	const struct sim_part *p = b->part;
	uint64_t step = p->capacity_bytes * (SIM_RATED_PE / 10u);
	unsigned used = step ? (unsigned)(b->wear_bytes / step) : 0;
	*la = p->life_a + used > 0x0b ? 0x0b : p->life_a + used;
	*lb = p->life_b + used > 0x0b ? 0x0b : p->life_b + used;
	unsigned worst = *la > *lb ? *la : *lb;
	*eol = worst >= 0x0b ? 3 : worst >= 0x09 && p->pre_eol < 2 ? 2 : p->pre_eol;
}

static void ext_csd_hex(struct sim_board *b, char *out)
{
	const struct sim_part *p = b->part;
	unsigned life_a, life_b, pre_eol;
	sim_life(b, &life_a, &life_b, &pre_eol);
	unsigned char e[512] = {0};
	e[15] = b->eff.cqe;
	e[33] = p->cache_kib > 0;
	e[166] = (unsigned char)p->rel_wr_param;
	e[167] = 0x1f;
	e[179] = 0x48;
	e[192] = (unsigned char)p->ext_csd_rev;
	e[196] = 0x57;
	uint32_t sec = (uint32_t)(p->capacity_bytes / 512);
	for (int i = 0; i < 4; i++)
		e[212 + i] = (unsigned char)(sec >> (8 * i));
	e[222] = (unsigned char)p->rel_sectors;
	uint32_t kbit = p->cache_kib * 8;
	for (int i = 0; i < 4; i++)
		e[249 + i] = (unsigned char)(kbit >> (8 * i));
	for (int i = 0; i < 8 && p->fw_version[i]; i++)
		e[254 + i] = (unsigned char)p->fw_version[i];
	e[262] = (unsigned char)p->device_version;
	e[267] = (unsigned char)pre_eol;
	e[268] = (unsigned char)life_a;
	e[269] = (unsigned char)life_b;
	e[307] = p->cmdq_depth ? (unsigned char)((p->cmdq_depth - 1) & 0x1f) : 0;
	e[308] = p->cmdq_support;
	hex_encode(out, e, sizeof e);
}

static void read_sys(struct sim_board *b, const char *rel, char *out, size_t n)
{
	struct lab_buf v;
	lab_buf_init(&v, 4096);
	char path[256];
	snprintf(path, sizeof path, "/sys/block/mmcblk0/%s", rel);
	if (sim_read_path(b, path, &v)) {
		snprintf(out, n, "%s", lab_buf_cstr(&v));
		out[strcspn(out, "\n")] = '\0';
	} else {
		snprintf(out, n, "missing");
	}
	lab_buf_free(&v);
}

static int cmd_identify(struct agent_run *r)
{
	struct sim_board *b = r->b;
	const struct sim_part *p = b->part;
	char cid[64], manfid[32], oemid[32], prv[32], serial[32], fwrev[32], hwrev[32], rev[16],
		cap[32], cache[16], ctrl[8], relp[16], rels[16], cq[8], cqd[8], la[8], lb[8], eol[8],
		fw[32], dv[16], cqe_knob[8];
	static char ext[1100];
	read_sys(b, "device/cid", cid, sizeof cid);
	read_sys(b, "device/manfid", manfid, sizeof manfid);
	read_sys(b, "device/oemid", oemid, sizeof oemid);
	read_sys(b, "device/prv", prv, sizeof prv);
	read_sys(b, "device/serial", serial, sizeof serial);
	read_sys(b, "device/fwrev", fwrev, sizeof fwrev);
	read_sys(b, "device/hwrev", hwrev, sizeof hwrev);
	snprintf(rev, sizeof rev, "%d", p->ext_csd_rev);
	snprintf(cap, sizeof cap, "%llu", (unsigned long long)p->capacity_bytes);
	snprintf(cache, sizeof cache, "%u", p->cache_kib);
	snprintf(ctrl, sizeof ctrl, "%d", p->cache_kib > 0);
	snprintf(relp, sizeof relp, "0x%02x", p->rel_wr_param);
	snprintf(rels, sizeof rels, "%u", p->rel_sectors);
	snprintf(cq, sizeof cq, "%d", p->cmdq_support);
	snprintf(cqd, sizeof cqd, "%u", p->cmdq_depth);
	unsigned life_a, life_b, pre_eol;
	sim_life(b, &life_a, &life_b, &pre_eol);
	snprintf(la, sizeof la, "0x%02x", life_a);
	snprintf(lb, sizeof lb, "0x%02x", life_b);
	snprintf(eol, sizeof eol, "0x%02x", pre_eol);
	unsigned char fwb[8] = {0};
	memcpy(fwb, p->fw_version, strnlen(p->fw_version, sizeof fwb));
	hex_encode(fw, fwb, sizeof fwb);
	snprintf(dv, sizeof dv, "0x%04x", p->device_version);
	snprintf(cqe_knob, sizeof cqe_knob, "%s", b->knob_cqe < 0 ? "missing" : b->knob_cqe ? "1" : "0");
	ext_csd_hex(b, ext);
	const char *kv[] = {
		"cid", cid, "manfid", manfid, "oemid", oemid, "name", p->name, "prv", prv,
		"serial", serial, "date", p->date, "fwrev", fwrev, "hwrev", hwrev, "ext_csd_rev", rev,
		"capacity_bytes", cap, "cache_kib", cache, "cache_ctrl", ctrl, "rel_wr_param", relp,
		"rel_sectors", rels, "cmdq_support", cq, "cmdq_depth", cqd, "life_a", la, "life_b", lb,
		"pre_eol", eol, "fw_version", fw, "device_version", dv, "kernel", b->cfg.kernel_version,
		"cmdline", b->cmdline, "knob_fua", b->knob_fua[0] ? b->knob_fua : "missing",
		"knob_disable_cqe", cqe_knob, "ext_csd", ext, "ext_csd_src", "ioctl", NULL,
	};
	wait_ms(r, 30);
	emit(r, "identity", kv);
	return 0;
}

static int cmd_health(struct agent_run *r)
{
	unsigned life_a, life_b, pre_eol;
	char la[8], lb[8], eol[8];
	sim_life(r->b, &life_a, &life_b, &pre_eol);
	snprintf(la, sizeof la, "%u", life_a);
	snprintf(lb, sizeof lb, "%u", life_b);
	snprintf(eol, sizeof eol, "%u", pre_eol);
	const char *kv[] = {"life_a", la, "life_b", lb, "pre_eol", eol, "device", "mmcblk0",
			    "src", "ioctl", NULL};
	wait_ms(r, 10);
	emit(r, "health", kv);
	return 0;
}

static int cmd_mode(struct agent_run *r)
{
	struct sim_board *b = r->b;
	const char *expect = arg(r, "expect");
	if (expect && lab_mode_parse(expect) < 0) {
		char modes[256];
		lab_mode_list(modes, sizeof modes, " or ");
		emit_error(r, "bad-arg", "expect=%s: want %s", expect, modes);
		return -1;
	}
	const char *mode = sim_mode_name(b->eff);
	char fua[4], wc[4], cqe[4], cmdq[4], tags[8], kc[8];
	snprintf(fua, sizeof fua, "%d", b->eff.fua);
	snprintf(wc, sizeof wc, "%d", b->eff.cache);
	bool cqe_on = b->eff.cqe && b->cqe_line;
	snprintf(cqe, sizeof cqe, "%d", cqe_on);
	snprintf(cmdq, sizeof cmdq, "%d", b->eff.cqe);
	snprintf(tags, sizeof tags, "%u", b->eff.cqe ? b->part->cmdq_depth : 64);
	snprintf(kc, sizeof kc, "%s", b->knob_cqe < 0 ? "missing" : b->knob_cqe ? "1" : "0");
	bool fua_off_log = strstr(lab_buf_cstr(&b->klog), "FUA off") != NULL;
	const char *cqe_log = b->cqe_line ? "cqe" :
			      strcmp(b->cfg.host, "sdhci-sprd") == 0 ? "hsq" : "none";
	const char *kv[32]; /* 12 pairs + NULL */
	size_t k = 0;
	kv[k++] = "fua";
	kv[k++] = fua;
	kv[k++] = "write_cache";
	kv[k++] = wc;
	kv[k++] = "cqe";
	kv[k++] = cqe;
	kv[k++] = "cmdq_en";
	kv[k++] = cmdq;
	kv[k++] = "nr_tags";
	kv[k++] = tags;
	kv[k++] = "knob_fua";
	kv[k++] = b->knob_fua[0] ? b->knob_fua : "missing";
	kv[k++] = "knob_disable_cqe";
	kv[k++] = kc;
	kv[k++] = "mode";
	kv[k++] = mode;
	if (expect) {
		kv[k++] = "expect";
		kv[k++] = expect;
		kv[k++] = "match";
		kv[k++] = strcmp(expect, mode) == 0 ? "1" : "0";
	}
	kv[k++] = "cqe_log";
	kv[k++] = cqe_log;
	kv[k++] = "fua_off_log";
	kv[k++] = fua_off_log ? "1" : "0";
	kv[k++] = "device";
	kv[k++] = "mmcblk0";
	kv[k] = NULL;
	wait_ms(r, 20);
	emit(r, "mode", kv);
	return 0;
}

static double slow_factor(struct sim_board *b)
{
	return sim_board_fault_on(b, FAULT_SLOW_PART) ? b->faults[FAULT_SLOW_PART].value : 1.0;
}

static int cmd_precondition(struct agent_run *r)
{
	struct sim_board *b = r->b;
	double passes;
	if (!arg_num(r, "passes", 3, 1, 100, &passes))
		return -1;
	b->fs_runs = 0; /* a freshly preconditioned part: the next fscopy is a warm-up */
	b->wear_bytes += (uint64_t)passes * b->part->capacity_bytes;
	double pass_s = (double)b->part->capacity_bytes / 1048576.0 / b->part->seq_write_mibs *
			slow_factor(b);
	char what[128];
	for (int p = 1; p <= (int)passes; p++) {
		for (int pct = 0; pct < 100; pct += 25) {
			snprintf(what, sizeof what, "precondition pass %d/%d", p, (int)passes);
			emit_progress(r, pct, what);
			wait_ms(r, pass_s * 1000 / 4);
		}
		snprintf(what, sizeof what, "precondition pass %d/%d done in %.1f s", p, (int)passes, pass_s);
		emit_progress(r, 100, what);
	}
	return 0;
}

static void count_io(struct sim_board *b, long rel, long flushes)
{
	b->rel_writes += rel;
	b->flushes += flushes;
}

/*
 * Put the k-th smallest of v[lo..hi] at v[k], smaller ones before it and
 * larger ones after (Hoare's selection, median-of-three pivot): the same
 * order statistic a full sort gives, in linear time.  The percentiles of
 * 4,096 draws a request kind and iteration were sorted with qsort, a
 * quarter of the simulator's CPU at 64 boards (perf).
 */
static void select_kth(double *v, long lo, long hi, long k)
{
	while (hi > lo) {
		long mid = lo + (hi - lo) / 2;
		double a = v[lo], b = v[mid], c = v[hi];
		double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		long i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

/*
 * The standard normal quantile: Acklam's rational approximation (relative
 * error 1.2e-9) and one Halley step on erfc, which brings it to double
 * precision.  Used to build the log-normal table below and for its tails.
 */
static double normal_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
				   -2.759285104469687e+02, 1.383577518672690e+02,
				   -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
				   -1.556989798598866e+02, 6.680131188771972e+01,
				   -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
				   -2.400758277161838e+00, -2.549732539343734e+00,
				   4.374664141464968e+00, 2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
				   2.445134137142996e+00, 3.754408661907416e+00};
	const double plow = 0.02425;
	double x;
	if (p < plow || p > 1 - plow) {
		double q = sqrt(-2 * log(p < plow ? p : 1 - p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
		if (p > 1 - plow)
			x = -x;
	} else {
		double q = p - 0.5, r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	}
	double e = 0.5 * erfc(-x / M_SQRT2) - p;
	double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
	return x - u / (1 + x * u / 2);
}

/*
 * A log-normal draw (sigma LN_SIGMA around 1) by its quantile function: a
 * table of exp(sigma * z(i / LN_TAB)), linear between its points, exact in
 * the outermost interval at each end (1 draw in 2,048 there).  One uniform
 * and a table read instead of Box-Muller's log, sqrt and cos and an exp:
 * 8,192 draws an iteration were most of the simulator's CPU at 1,024 boards.
 * Linear interpolation of the quantile function bends the distribution
 * inside an interval by less than 1e-6 of its value in the body.
 */
#define LN_SIGMA 0.25
#define LN_TAB 4096
static double ln_tab[LN_TAB + 1];

static void lognormal_init(void)
{
	if (ln_tab[LN_TAB / 2] == 0) {
		for (int i = 1; i < LN_TAB; i++)
			ln_tab[i] = exp(LN_SIGMA * normal_quantile((double)i / LN_TAB));
	}
}

/* after lognormal_init() */
static double lognormal_draw(struct rand_gen *g)
{
	/* u in (0, 1): never 0 or 1, whose quantiles are infinite */
	double u = ((double)(rand_next(g) >> 11) + 0.5) * 0x1.0p-53;
	double t = u * LN_TAB;
	if (t < 1 || t >= LN_TAB - 1)
		return exp(LN_SIGMA * normal_quantile(u));
	int i = (int)t;
	return ln_tab[i] + (t - i) * (ln_tab[i + 1] - ln_tab[i]);
}

/*
 * The values at the ascending 0-based ranks at[0..nk) of v[0..n) (positive
 * doubles), as select_kth finds them, in three passes: positive doubles
 * order as their bit patterns, so a count per 1/256 octave (the top 8
 * mantissa bits) puts each rank in one bucket of a few values, and only that
 * bucket is searched.  A spread beyond 2^15 buckets (128 octaves; never the
 * latency model's) falls back to select_kth over the whole array.
 */
#define PCT_SHIFT 44
#define PCT_MAXB 32768
#define PCT_MARK 0x80000000u

/* A buffer of doubles kept between calls (the simulator is one thread):
 * freeing 64 KiB or more makes malloc consolidate its whole heap, and the
 * latency draws would do it every iteration. */
struct scratch {
	double *v;
	size_t cap;
};

static double *scratch_get(struct scratch *b, size_t n)
{
	if (n > b->cap) {
		b->cap = n;
		b->v = xreallocarray(b->v, b->cap, sizeof *b->v);
	}
	return b->v;
}

/* percentiles() from its counts on: cnt[b - lo] counts the values of v whose
 * bits >> PCT_SHIFT are b (every value's bucket lies in cnt, nk <= 8). */
static void pct_select(double *v, long n, const long *at, size_t nk, double *out, uint32_t *cnt,
		       uint64_t lo)
{
	/* each rank's bucket and its rank inside the bucket */
	size_t bk[8];
	long inb[8];
	long cum = 0;
	size_t b = 0;
	for (size_t k = 0; k < nk; k++) {
		while (cum + (long)cnt[b] <= at[k]) {
			cum += cnt[b];
			b++;
		}
		bk[k] = b;
		inb[k] = at[k] - cum;
	}
	/* the ranks' distinct buckets (ascending), a segment of tmp each, filled
	 * in one pass over v: a bucket of them is marked in cnt by the top bit (a
	 * count is below 2^31) and its segment's number */
	size_t nd = 0, seg[8], len[8], fill[8], of[8];
	for (size_t k = 0; k < nk; k++) {
		if (k == 0 || bk[k] != bk[k - 1]) {
			seg[nd] = fill[nd] = nd ? seg[nd - 1] + len[nd - 1] : 0;
			len[nd] = cnt[bk[k]];
			cnt[bk[k]] = PCT_MARK | (uint32_t)nd;
			nd++;
		}
		of[k] = nd - 1;
	}
	static struct scratch sel;
	double *tmp = scratch_get(&sel, seg[nd - 1] + len[nd - 1]);
	for (long i = 0; i < n; i++) {
		uint64_t x;
		memcpy(&x, &v[i], sizeof x);
		uint32_t c = cnt[(x >> PCT_SHIFT) - lo];
		if (c & PCT_MARK)
			tmp[fill[c & 7]++] = v[i];
	}
	for (size_t k = 0; k < nk; k++) {
		long s = (long)seg[of[k]];
		select_kth(tmp, s, s + (long)len[of[k]] - 1, s + inb[k]);
		out[k] = tmp[s + inb[k]];
	}
}

static void percentiles(double *v, long n, const long *at, size_t nk, double *out)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	bool pos = true;
	for (long i = 0; i < n; i++) {
		uint64_t b;
		memcpy(&b, &v[i], sizeof b);
		b >>= PCT_SHIFT;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
		pos = pos && v[i] > 0;
	}
	if (!pos || nk > 8 || hi - lo >= PCT_MAXB) {
		long from = 0;
		for (size_t k = 0; k < nk; k++) {
			if (at[k] >= from) {
				select_kth(v, from, n - 1, at[k]);
				from = at[k];
			}
			out[k] = v[at[k]];
		}
		return;
	}
	size_t nb = (size_t)(hi - lo) + 1;
	uint32_t *cnt = xcalloc(nb, sizeof *cnt);
	for (long i = 0; i < n; i++) {
		uint64_t b;
		memcpy(&b, &v[i], sizeof b);
		cnt[(b >> PCT_SHIFT) - lo]++;
	}
	pct_select(v, n, at, nk, out, cnt, lo);
	free(cnt);
}

#define PCT_WIN_OCT 16
#define PCT_WIN (PCT_WIN_OCT << (52 - PCT_SHIFT)) /* 1/256-octave buckets */
#define PCT_PER_LH (1 << (50 - PCT_SHIFT))       /* of them in a lathist bucket */
static uint32_t pct_window[PCT_WIN];

/* Per-request latency as the real agent reports it (suites/agent/latency.c):
 * n log-normal draws around med_us (spread and a 1 % tail of 3-6x: the model's
 * assumption, fitted to nothing), percentiles and lathist buckets.  Its own
 * stream, so every other simulated figure stays what it was. */
static void emit_latency(struct agent_run *r, const char *w, unsigned it, const char *op,
			 double med_us, long n)
{
	static const struct { const char *name; double pct; } pc[] = {
		{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}};
	struct rand_gen g;
	char stream[160], metric[64], its[16], ns[24], buckets[LATHIST_BUCKETS * 24];
	long counts[LATHIST_BUCKETS] = {0}, at_rank_buf[LAB_ARRAY_SIZE(pc)];
	if (n <= 0 || med_us <= 0)
		return;
	snprintf(stream, sizeof stream, "lat/%s/%s/%s/%u/%s", r->b->name, sim_mode_name(r->b->dev), w,
		 it, op);
	sim_rng_seed(&g, (uint64_t)r->b->cfg.seed, stream);
	static struct scratch draws;
	double *v = scratch_get(&draws, (size_t)n);
	/* percentiles()'s counts per 1/256 octave, taken as the values are
	 * drawn (two passes over v fewer), in a window of PCT_WIN_OCT octaves
	 * around the median, 1/256 to 256 times it: the model's draws lie
	 * within about 1/8 to 48 times it (med_us > 0, so every draw is
	 * positive).  A draw outside the window sends the percentiles through
	 * percentiles() instead.  The window starts on a lathist bucket's edge
	 * (64 of its buckets to one), so the lathist counts are its sums when
	 * every draw is in it and none of them below 4 us (lathist_bucket_d's
	 * shift; 4 us is such an edge too). */
	uint64_t mb, wlo;
	memcpy(&mb, &med_us, sizeof mb);
	mb >>= PCT_SHIFT;
	wlo = (mb > PCT_WIN / 2 ? mb - PCT_WIN / 2 : 0) & ~(uint64_t)(PCT_PER_LH - 1);
	memset(pct_window, 0, sizeof pct_window);
	bool inwin = true;
	lognormal_init();
	/* a copy whose address stays here: the generator's words stay in
	 * registers (counts, a long array, could alias g's once seeded) */
	struct rand_gen lg = g;
	for (long i = 0; i < n; i++) {
		double x = med_us * lognormal_draw(&lg);
		if (rand_next(&lg) % 100 == 0)
			x *= 3.0 + (double)(rand_next(&lg) % 300) / 100.0;
		v[i] = x;
		uint64_t xb;
		memcpy(&xb, &x, sizeof xb);
		xb = (xb >> PCT_SHIFT) - wlo; /* wraps when below the window */
		if (xb < PCT_WIN)
			pct_window[xb]++;
		else
			inwin = false;
	}
	bool summed = inwin;
	for (size_t at = 0; summed && at < PCT_WIN; at += PCT_PER_LH) {
		uint32_t sum = 0;
		for (size_t i = 0; i < PCT_PER_LH; i++)
			sum += pct_window[at + i];
		/* lathist_bucket_d: 4 * octave + quarter (from 4 us: 4 * 1025),
		 * the top bucket open */
		uint64_t q = (wlo + at) >> (50 - PCT_SHIFT);
		if (sum && q < (uint64_t)1025 << 2) {
			memset(counts, 0, sizeof counts); /* a draw below 4 us */
			summed = false;
		} else {
			uint64_t k = q - ((uint64_t)1023 << 2);
			counts[k < LATHIST_BUCKETS ? k : LATHIST_BUCKETS - 1] += sum;
		}
	}
	if (!summed)
		for (long i = 0; i < n; i++)
			counts[lathist_bucket_d(v[i])]++;
	/* nearest-rank percentiles, ascending ranks */
	double at_v[LAB_ARRAY_SIZE(pc)];
	for (size_t k = 0; k < LAB_ARRAY_SIZE(pc); k++) {
		long rank = (long)ceil(pc[k].pct / 100.0 * (double)n);
		at_rank_buf[k] = (rank < 1 ? 1 : rank) - 1;
	}
	if (inwin)
		pct_select(v, n, at_rank_buf, LAB_ARRAY_SIZE(pc), at_v, pct_window, wlo);
	else
		percentiles(v, n, at_rank_buf, LAB_ARRAY_SIZE(pc), at_v);
	for (size_t k = 0; k < LAB_ARRAY_SIZE(pc); k++) {
		snprintf(metric, sizeof metric, "rq_%s_lat_%s_us", op, pc[k].name);
		emit_sample(r, w, it, metric, floor(at_v[k]), "us");
	}
	size_t used = 0;
	buckets[0] = '\0';
	for (unsigned k = 0; k < LATHIST_BUCKETS; k++)
		if (counts[k])
			used += (size_t)snprintf(buckets + used, sizeof buckets - used, "%s%u:%ld",
						 used ? " " : "", k, counts[k]);
	snprintf(its, sizeof its, "%u", it);
	snprintf(ns, sizeof ns, "%ld", n);
	const char *kv[] = {"workload", w, "iter", its, "op", op, "n", ns, "buckets", buckets, NULL};
	emit(r, "latency", kv);
}

static int cmd_androbench(struct agent_run *r)
{
	struct sim_board *b = r->b;
	double iters, label, count, seq, req, rnd, ios, lat;
	/* As the real agent: iter= labels the iteration, iterations= runs several. */
	if (!arg_num(r, "iter", 1, 1, 100000, &label) || !arg_num(r, "iterations", 1, 1, 100000, &iters) ||
	    !arg_num(r, "count", 0, 0, 1, &count) || !arg_num(r, "latency", 1, 0, 1, &lat) ||
	    !arg_num(r, "seq_mib", 64, 1, 65536, &seq) || !arg_num(r, "req_mib", 32, 1, 4096, &req) ||
	    !arg_num(r, "rand_mib", 64, 1, 65536, &rnd) || !arg_num(r, "rand_ios", 4096, 1, 1e8, &ios))
		return -1;
	struct sim_ab_args a = {.seq_mib = seq, .req_mib = req, .rand_mib = rnd, .rand_ios = (long)ios};
	char what[128];
	for (unsigned it = (unsigned)label; it < (unsigned)label + (unsigned)iters; it++) {
		snprintf(what, sizeof what, "androbench iter %u in /dev/mmcblk0", it);
		emit_progress(r, (int)((it - (unsigned)label) * 100 / (unsigned)iters), what);
		struct sim_ab_result res;
		sim_model_androbench(b->part, b->dev, slow_factor(b), &a, &b->rng_model, &res);
		wait_ms(r, res.duration_s * 1000);
		emit_sample(r, "androbench", it, "seq_read", res.seq_read, "MiB/s");
		emit_sample(r, "androbench", it, "seq_write", res.seq_write, "MiB/s");
		emit_sample(r, "androbench", it, "rand_read", res.rand_read, "MiB/s");
		emit_sample(r, "androbench", it, "rand_write", res.rand_write, "MiB/s");
		emit_sample(r, "androbench", it, "rand_read_iops", res.rand_read_iops, "IOPS");
		emit_sample(r, "androbench", it, "rand_write_iops", res.rand_write_iops, "IOPS");
		emit_sample(r, "androbench", it, "write_lat_p50", res.lat_p50_us, "us");
		emit_sample(r, "androbench", it, "write_lat_p99", res.lat_p99_us, "us");
		count_io(b, res.rel_writes, res.flushes);
		b->wear_bytes += (uint64_t)((seq + rnd) * 1048576.0);
		if (count > 0) {
			emit_counter(r, "androbench", it, "reliable_writes", res.rel_writes);
			emit_counter(r, "androbench", it, "flushes", res.flushes);
			emit_counter(r, "androbench", it, "stat_flushes", res.flushes);
			emit_counter(r, "androbench", it, "stat_flush_ms", res.flush_ms);
		}
		if (count > 0 && lat > 0) {
			/* the random writes' requests, split as sim_model_androbench prices them:
			 * FUA on, the write is reliable; off, a cached write then a flush */
			const struct sim_ab_model *m = &b->part->ab;
			double cqe = b->dev.cqe ? 1.0 - m->cqe_gain : 1.0;
			double w_us = !b->dev.cache ? m->rw_us + m->rw_rel_us :
				      b->dev.fua ? m->rw_us * cqe + m->rw_rel_us * (b->dev.cqe ? 0.82 : 1.0) :
				      m->rw_us * cqe;
			emit_latency(r, "androbench", it, "write", w_us * slow_factor(b), (long)ios);
			if (res.flushes > 0)
				emit_latency(r, "androbench", it, "flush", m->rw_flush_us * slow_factor(b),
					     res.flushes);
		}
	}
	return 0;
}

static int cmd_fscopy(struct agent_run *r)
{
	struct sim_board *b = r->b;
	double iters, label, count, scale;
	if (!arg_num(r, "iter", 1, 1, 100000, &label) || !arg_num(r, "iterations", 1, 1, 100000, &iters) ||
	    !arg_num(r, "count", 0, 0, 1, &count) ||
	    !arg_num(r, "scale", 1.0, 0.0001, 100, &scale))
		return -1;
	const char *tree = arg(r, "tree");
	char what[160];
	snprintf(what, sizeof what, "fscopy synthetic tree seed=1: %u files, %u dirs, %.1f MiB",
		 (unsigned)(79000 * scale), (unsigned)(5100 * scale), 1228.8 * scale);
	if (!tree || strcmp(tree, "synthetic") == 0)
		emit_progress(r, 0, what);
	for (unsigned it = (unsigned)label; it < (unsigned)label + (unsigned)iters; it++) {
		snprintf(what, sizeof what, "fscopy iter %u on /dev/mmcblk0", it);
		emit_progress(r, (int)((it - (unsigned)label) * 100 / (unsigned)iters), what);
		struct sim_fs_result res;
		sim_model_fscopy(b->part, b->dev, b->fs_runs == 0, slow_factor(b), scale, &b->rng_model, &res);
		b->fs_runs++;
		wait_ms(r, res.wall * 1000);
		emit_sample(r, "fscopy", it, "wall_time", res.wall, "s");
		emit_sample(r, "fscopy", it, "mkfs_time", res.mkfs, "s");
		emit_sample(r, "fscopy", it, "mount_time", res.mount, "s");
		emit_sample(r, "fscopy", it, "copy1_time", res.copy1, "s");
		emit_sample(r, "fscopy", it, "rm_time", res.rm, "s");
		emit_sample(r, "fscopy", it, "copy2_time", res.copy2, "s");
		emit_sample(r, "fscopy", it, "sync_time", res.sync, "s");
		count_io(b, res.rel_writes, res.flushes);
		b->wear_bytes += (uint64_t)(6 * 1205.6 * 1048576.0 * scale); /* 6 copies of the tree */
		if (count > 0) {
			emit_counter(r, "fscopy", it, "reliable_writes", res.rel_writes);
			emit_counter(r, "fscopy", it, "flushes", res.flushes);
			emit_counter(r, "fscopy", it, "stat_flushes", res.flushes);
			emit_counter(r, "fscopy", it, "stat_flush_ms", res.flush_ms);
		}
	}
	return 0;
}

/* Each acknowledgement is applied when its line reaches the console, so a
 * power cut keeps exactly what the controller could have seen. */
static void pf_ack(struct sim_board *b, long seq)
{
	b->pf.acked = seq;
	b->pf.written = seq;
}

#define PFW_ASYNC 1000 /* powerfail-write continues in pfw_step */
#define PFW_BATCH 128
#define ALOG_MAX 2000000

static void alog_add(struct sim_board *b, const char *line)
{
	if (b->nalog >= ALOG_MAX)
		return; /* resend cannot serve lines this far; the log is capped */
	if (b->nalog == b->alog_cap) {
		b->alog_cap = b->alog_cap ? 2 * b->alog_cap : 64;
		b->alog_off = xreallocarray(b->alog_off, b->alog_cap, sizeof *b->alog_off);
	}
	b->alog_off[b->nalog++] = b->alog_text.len;
	lab_buf_append(&b->alog_text, line, strlen(line) + 1);
}

static void write_log_file(struct sim_board *b, const char *log_path)
{
	struct sim_file *f = log_path[0] == '/' ? sim_file_create(b, log_path, 0644) : NULL;
	if (!f)
		return;
	f->data.len = 0;
	for (size_t k = 0; k < b->nalog; k++)
		if (lab_buf_append(&f->data, alog_line(b, k), strlen(alog_line(b, k))) != 0)
			break;
}

static void pfw_step(struct sim_board *b, long arg)
{
	LAB_UNUSED(arg);
	if (!b->pfw.on)
		return;
	struct agent_run r = {.b = b, .to_console = true, .seq = b->pfw.seq - 1};
	size_t k = 0;
	char it[16], v[32], line[PROTO_MAX_LINE];
	snprintf(it, sizeof it, "%ld", b->pfw.iter);
	for (int n = 0; n < PFW_BATCH && b->pfw.next <= b->pfw.total; n++, b->pfw.next++) {
		snprintf(v, sizeof v, "%ld", b->pfw.next);
		const char *kv[] = {"workload", "powerfail", "iter", it, "name", "acked", "value", v, NULL};
		if (proto_format(line, sizeof line, r.seq + 1, "counter", kv) < 0)
			break;
		r.seq++;
		alog_add(b, line);
		/* the same wire corruption as every agent line */
		char *wire = xstrdup(line);
		if (sim_board_fault_on(b, FAULT_BAD_CRC) &&
		    sim_rng_chance(&b->rng_fault, b->faults[FAULT_BAD_CRC].value) &&
		    sim_board_fault_fire(b, FAULT_BAD_CRC)) {
			char *crc = strstr(wire, " crc=");
			if (crc && crc[5])
				crc[5] = crc[5] == '0' ? '1' : '0';
			b->lines_corrupted++;
		}
		/* not time-scaled by default: the controller's cut comes after real ms */
		sim_emit_insert(b, k++, b->pfw.rec_ms, b->cfg.powerfail_realtime ? b->pfw.rec_ms : 0, wire,
				NULL, 0);
		free(wire);
		sim_emit_insert(b, k++, 0, 0, NULL, pf_ack, b->pfw.next);
		count_io(b, b->dev.fua ? 1 : 0, b->dev.fua ? 1 : 2);
	}
	b->pfw.seq = r.seq + 1;
	if (b->pfw.next <= b->pfw.total) {
		sim_emit_insert(b, k, 0, 0, NULL, pfw_step, 0);
		return;
	}
	b->pfw.on = false;
	char lines[32];
	snprintf(lines, sizeof lines, "%llu", (unsigned long long)r.seq);
	const char *dkv[] = {"status", "ok", "lines", lines, NULL};
	if (proto_format(line, sizeof line, r.seq + 1, "done", dkv) >= 0) {
		alog_add(b, line);
		sim_emit_insert(b, k, 1, 0, line, NULL, 0);
	}
	write_log_file(b, b->pfw.log_path);
}

static int cmd_powerfail_write(struct agent_run *r)
{
	struct sim_board *b = r->b;
	double records, rsize, iter;
	if (!arg_num(r, "records", 20000, 1, 1e8, &records) ||
	    !arg_num(r, "record_size", 4096, 64, 1 << 20, &rsize) || !arg_num(r, "iter", 1, 1, 1e6, &iter))
		return -1;
	const char *file = arg(r, "file");
	snprintf(b->pf.path, sizeof b->pf.path, "%s", file ? file : "/root/emmclab-powerfail.dat");
	b->pf.active = true;
	b->pf.acked = b->pf.written = b->pf.durable = 0;
	char what[320];
	snprintf(what, sizeof what, "powerfail-write %s records=%.0f record_size=%.0f", b->pf.path,
		 records, rsize);
	emit_progress(r, 0, what);
	/* fsync per record: a reliable write with FUA, write + flush without. */
	const struct sim_ab_model *m = &b->part->ab;
	double rec_us = m->rw_us * (rsize / 4096.0) + (b->dev.fua ? m->rw_rel_us : m->rw_flush_us);
	rec_us *= slow_factor(b);
	if (r->to_console) {
		/* Acks are generated in batches as the console takes them (the
		 * run usually ends with a power cut), not all up front. */
		b->pfw.on = true;
		b->pfw.next = 1;
		b->pfw.total = (long)records;
		b->pfw.iter = (long)iter;
		b->pfw.rec_ms = rec_us / 1000.0;
		b->pfw.seq = r->seq + 1;
		sim_emit_fn(b, r->pending, pfw_step, 0);
		r->pending = 0;
		return PFW_ASYNC;
	}
	for (long s = 1; s <= (long)records; s++) {
		wait_ms(r, rec_us / 1000.0);
		emit_counter(r, "powerfail", (unsigned)iter, "acked", s);
		pf_ack(b, s);
		count_io(b, b->dev.fua ? 1 : 0, b->dev.fua ? 1 : 2);
	}
	return 0;
}

static int cmd_powerfail_check(struct agent_run *r)
{
	struct sim_board *b = r->b;
	double acked, rsize, iter;
	if (!arg_num(r, "acked", 0, 0, 1e12, &acked) ||
	    !arg_num(r, "record_size", 4096, 64, 1 << 20, &rsize) || !arg_num(r, "iter", 1, 1, 1e6, &iter))
		return -1;
	const char *file = arg(r, "file");
	const char *path = file ? file : "/root/emmclab-powerfail.dat";
	if (!b->pf.path[0] || strcmp(path, b->pf.path) != 0) {
		emit_error(r, "io", "%s: No such file or directory", path);
		return -1;
	}
	long present = b->pf.active ? b->pf.written : b->pf.durable;
	long a = (long)acked;
	long intact = a < present ? a : present;
	long lost = a > present ? a - present : 0;
	long extra = present > a ? present - a : 0;
	wait_ms(r, (double)present * rsize / 1048576.0 / b->part->ab.seq_read * 1000.0);
	emit_counter(r, "powerfail", (unsigned)iter, "acked", a);
	emit_counter(r, "powerfail", (unsigned)iter, "intact", intact);
	emit_counter(r, "powerfail", (unsigned)iter, "lost", lost);
	emit_counter(r, "powerfail", (unsigned)iter, "corrupt", 0);
	emit_counter(r, "powerfail", (unsigned)iter, "extra", extra);
	emit_counter(r, "powerfail", (unsigned)iter, "last_intact", present);
	if (lost)
		emit_error(r, "integrity", "%ld of %ld acknowledged records lost, 0 corrupt", lost, a);
	return 0;
}

void sim_agent_poweroff(struct sim_board *b)
{
	if (!b->pf.active)
		return;
	b->pf.active = false;
	b->pf.durable = b->pf.written;
	/* A part that acknowledges a flush before the data is safe loses the
	 * records still in its cache - only when FUA is off (no reliable writes). */
	if (!b->dev.fua && b->dev.cache && sim_board_fault_fire(b, FAULT_LOSE_WRITES)) {
		long lose = (long)b->faults[FAULT_LOSE_WRITES].value;
		if (lose < 1)
			lose = 1;
		b->pf.durable = b->pf.written > lose ? b->pf.written - lose : 0;
	}
}

static int cmd_resend(struct agent_run *r, int argc, char **argv)
{
	struct sim_board *b = r->b;
	for (int i = 0; i < argc; i++) {
		int64_t seq;
		if (lab_parse_i64(argv[i], &seq) != 0 || seq < 1)
			continue;
		if ((size_t)seq <= b->nalog)
			out_line(r, alog_line(b, (size_t)seq - 1), false);
	}
	if (r->to_console && r->pending > 0)
		sim_emit(b, r->pending, "");
	return 0;
}

/* fio and parse-trace: what a board without fio or a saved trace answers. */
static int cmd_fio(struct agent_run *r)
{
	emit_error(r, "no-fio", "fio is not installed on this board");
	return -1;
}

static int cmd_parse_trace(struct agent_run *r)
{
	emit_error(r, "bad-command", "parse-trace is not simulated (no saved tracefs trace)");
	return -1;
}

static int cmd_parse_latency(struct agent_run *r)
{
	emit_error(r, "bad-command", "parse-latency is not simulated (no saved tracefs trace)");
	return -1;
}

/* The contract's commands (harness/common/agent_cmds.h): the real agent's
 * names and keys, a handler each. */
#define SIM_AGENT_CMD_(id, name, keys, usage) {name, keys, cmd_##id},
static const struct {
	const char *name, *keys;
	int (*run)(struct agent_run *r);
} cmds[] = {AGENT_COMMANDS(SIM_AGENT_CMD_)};
#undef SIM_AGENT_CMD_

int sim_agent_run(struct sim_board *b, int argc, char **argv, double *t_ms, bool to_console,
		  struct lab_buf *capture)
{
	struct agent_run r = {.b = b, .to_console = to_console, .capture = capture};
	const char *log_path = "/tmp/emmclab-agent.log";
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--log") == 0 && i + 1 < argc)
			log_path = argv[++i];
		else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--version") == 0) {
			char *s = xasprintf("emmclab-agent %s (proto 1)\n", EMMCLAB_VERSION);
			if (to_console)
				sim_emit(b, 1, s);
			else
				lab_buf_append(capture, s, strlen(s));
			free(s);
			return 0;
		} else {
			char *s = xasprintf("emmclab-agent: unknown option %s\n", argv[i]);
			if (to_console)
				sim_emit(b, 1, s);
			else
				lab_buf_append(capture, s, strlen(s));
			free(s);
			return 2;
		}
	}
	if (i >= argc) {
		const char *u = "usage: emmclab-agent [--log FILE] [--device mmcblkN] COMMAND [key=value ...]\n";
		if (to_console)
			sim_emit(b, 1, u);
		else
			lab_buf_append(capture, u, strlen(u));
		return 2;
	}
	const char *cmd = argv[i++];
	b->agent_runs++;
	wait_ms(&r, 5); /* exec + startup */
	if (strcmp(cmd, "resend") == 0) {
		int rc = cmd_resend(&r, argc - i, argv + i);
		if (!to_console)
			*t_ms += r.t_ms;
		return rc;
	}
	log_reset(b);
	r.argc = argc - i;
	r.argv = argv + i;
	const char *kv[] = {"version", EMMCLAB_VERSION, "proto", "1", "cmd", cmd, "kernel",
			    b->cfg.kernel_version, "device", "mmcblk0", NULL};
	emit(&r, "hello", kv);
	int rc = 0;
	int found = -1;
	for (size_t c = 0; c < LAB_ARRAY_SIZE(cmds); c++)
		if (strcmp(cmds[c].name, cmd) == 0)
			found = (int)c;
	if (found < 0) {
		emit_error(&r, "bad-command", "unknown command '%s' (see --help)", cmd);
		rc = -1;
	} else {
		for (int k = 0; k < r.argc; k++)
			if (!agent_cmd_key_allowed(cmds[found].keys, r.argv[k])) {
				emit_error(&r, "bad-arg", "%s: unknown argument '%s' (keys: %s)", cmd, r.argv[k],
					   cmds[found].keys);
				rc = -1;
			}
		if (rc == 0)
			rc = cmds[found].run(&r);
	}
	if (rc == PFW_ASYNC) { /* pfw_step prints the rest, `done` and the log */
		snprintf(b->pfw.log_path, sizeof b->pfw.log_path, "%s", log_path);
		return 0;
	}
	char lines[32];
	snprintf(lines, sizeof lines, "%llu", (unsigned long long)r.seq);
	const char *dkv[] = {"status", rc == 0 ? "ok" : "error", "lines", lines, NULL};
	wait_ms(&r, 1);
	emit(&r, "done", dkv);
	write_log_file(b, log_path); /* the log on the DUT, for `cat` */
	if (!to_console)
		*t_ms += r.t_ms;
	return rc == 0 ? 0 : 1;
}
