/* test_quirks.c - the quirk decision rule, the store tallies behind it and
 * the C text it renders (quirks.c, store_quirks.c). */
#include "quirks.h"
#include "store_quirks.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct quirks_part part(const char *label)
{
	struct quirks_part p = {0};
	p.label = label;
	p.cid = "150100384754463452002c8e7a01b32d";
	p.manfid = "0x000015";
	p.oemid = "0x0100";
	p.name = "8GTF4R";
	return p;
}

/* A FUA-effect cell: change without FUA on a higher-is-better metric. */
static void speed(struct quirks_part *p, const char *kind, bool cqe, double change, double pv)
{
	struct quirks_speed s = {
		.board = "b", .kernel = "k", .workload = "androbench", .metric = "rand_write",
		.unit = "MiB/s", .kind = kind, .provenance = "", .fua_mode = cqe ? "fua-cqe" : "fua",
		.nofua_mode = cqe ? "cache-nofua-cqe" : "cache-nofua", .cqe = cqe, .change = change,
		.lo = change - 0.05, .hi = change + 0.05, .p = pv, .na = 5, .nb = 5, .direction = 1,
	};
	quirks_part_add_speed(p, &s);
}

static void pf(struct quirks_part *p, const char *mode, const char *kind, int64_t cuts,
	       int64_t lost, int64_t torn)
{
	struct quirks_pf t = {.mode = mode, .kind = kind, .cuts = cuts, .acked = cuts * 100,
			      .intact = cuts * 100 - lost - torn, .lost = lost, .torn = torn,
			      .cuts_with_loss = lost + torn > 0};
	quirks_part_add_pf(p, &t);
}

static void rule(void)
{
	struct quirks_opts o;
	quirks_opts_init(&o);

	/* justified: +40% without FUA, 25 clean cuts without FUA */
	struct quirks_part j = part("justified");
	speed(&j, "lab", false, 0.40, 1e-4);
	speed(&j, "lab", true, 0.02, 0.6);
	pf(&j, "cache-nofua", "lab", 25, 0, 0);
	pf(&j, "fua", "lab", 20, 0, 0);
	quirks_decide(&j, &o);
	is_int(j.verdict, QUIRKS_PROPOSED, "justified part proposed");
	ok(j.best && j.best->change == 0.40, "its evidence is the +40%% cell");
	is_int(j.cuts_nofua, 25, "cuts without FUA");
	is_int(j.cuts_fua, 20, "cuts with FUA");
	is_str(j.kinds, "lab", "evidence kinds");
	is_int(j.mfid, 0x15, "manfid parsed");
	is_int(j.oem, 0x100, "oemid parsed");

	/* the same speed, but one cut without FUA lost a record */
	struct quirks_part l = part("lossy");
	speed(&l, "lab", false, 0.40, 1e-4);
	pf(&l, "cache-nofua", "lab", 25, 3, 0);
	pf(&l, "fua", "lab", 20, 0, 0);
	quirks_decide(&l, &o);
	is_int(l.verdict, QUIRKS_LOSS, "power-fail loss: not proposed");
	ok(strstr(l.why, "cache-nofua") && strstr(l.why, "3 lost"), "why names the mode and the loss: %s", l.why);

	/* a torn record counts as loss, also in a FUA mode and in simulated data */
	struct quirks_part t = part("torn");
	speed(&t, "lab", false, 0.40, 1e-4);
	pf(&t, "cache-nofua", "lab", 25, 0, 0);
	pf(&t, "fua", "simulated", 20, 0, 1);
	quirks_decide(&t, &o);
	is_int(t.verdict, QUIRKS_LOSS, "a torn record anywhere blocks");

	/* no power-fail data at all */
	struct quirks_part n = part("no-pf");
	speed(&n, "lab", false, 0.40, 1e-4);
	quirks_decide(&n, &o);
	is_int(n.verdict, QUIRKS_NO_POWERFAIL, "no power-fail data: not proposed");
	is_str(n.why, "no power-fail data", "its reason");

	/* not significant: +30% with p 0.2, and +2% with p 0.001 (below min gain) */
	struct quirks_part s = part("not-significant");
	speed(&s, "lab", false, 0.30, 0.2);
	speed(&s, "lab", true, 0.02, 0.001);
	pf(&s, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&s, &o);
	is_int(s.verdict, QUIRKS_NOT_SIGNIFICANT, "not significant: not proposed");
	ok(strstr(s.why, "not significantly faster") != NULL, "why: %s", s.why);

	/* significantly slower in one cell blocks a gain in another */
	struct quirks_part w = part("slower");
	speed(&w, "lab", false, 0.40, 1e-4);
	speed(&w, "lab", true, -0.30, 1e-4);
	pf(&w, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&w, &o);
	is_int(w.verdict, QUIRKS_SLOWER, "slower somewhere: not proposed");

	/* too few cuts without FUA (cuts with FUA do not count) */
	struct quirks_part c = part("few-cuts");
	speed(&c, "lab", false, 0.40, 1e-4);
	pf(&c, "cache-nofua", "lab", 5, 0, 0);
	pf(&c, "fua", "lab", 40, 0, 0);
	quirks_decide(&c, &o);
	is_int(c.verdict, QUIRKS_FEW_CUTS, "5 cuts without FUA: not proposed");

	/* simulated-only evidence: refused, unless accepted */
	struct quirks_part m = part("simulated");
	speed(&m, "simulated", false, 0.40, 1e-4);
	pf(&m, "cache-nofua", "simulated", 25, 0, 0);
	quirks_decide(&m, &o);
	is_int(m.verdict, QUIRKS_FEW_CUTS, "simulated power-fail data is not evidence by default");
	struct quirks_part m2 = part("simulated-speed");
	speed(&m2, "simulated", false, 0.40, 1e-4);
	pf(&m2, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&m2, &o);
	is_int(m2.verdict, QUIRKS_NO_SPEED, "simulated speed is not evidence by default");
	struct quirks_opts oa = o;
	struct lab_err e = {0};
	ok(quirks_accept_parse("simulated", &oa.accept, &e) == LAB_OK, "--accept simulated");
	quirks_decide(&m, &oa);
	is_int(m.verdict, QUIRKS_PROPOSED, "accepted simulated evidence: proposed");
	is_str(m.kinds, "simulated", "and it says the evidence is simulated");
	lab_err_clear(&e);
	unsigned bits = 0;
	ok(quirks_accept_parse("virtual,lab", &bits, &e) == LAB_EUSAGE && strstr(e.msg, "'lab'"),
	   "--accept names the bad kind: %s", e.msg);

	/* justified but no CID fields (imported data) */
	struct quirks_part i = part("no-cid");
	i.manfid = "";
	speed(&i, "lab", false, 0.40, 1e-4);
	pf(&i, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&i, &o);
	is_int(i.verdict, QUIRKS_NO_IDENTITY, "no manfid: not proposed");

	/* lower-is-better metric: a negative change is the gain */
	struct quirks_part d = part("wall-time");
	struct quirks_speed ws = {.board = "", .kernel = "", .workload = "fscopy",
				  .metric = "wall_time", .unit = "s", .kind = "lab", .provenance = "",
				  .fua_mode = "fua", .nofua_mode = "cache-nofua", .change = -0.2,
				  .lo = -0.25, .hi = -0.15, .p = 1e-3, .na = 5, .nb = 5, .direction = -1};
	quirks_part_add_speed(&d, &ws);
	pf(&d, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&d, &o);
	is_int(d.verdict, QUIRKS_PROPOSED, "20%% less wall time without FUA: proposed");

	/* rendering: hostile label and name stay inside the comment / string */
	struct quirks_part h = part("evil */ \x1b[2J label");
	h.name = "A\"B\\";
	speed(&h, "lab", false, 0.40, 1e-4);
	pf(&h, "cache-nofua", "lab", 25, 0, 0);
	quirks_decide(&h, &o);
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	quirks_render_part(&h, &o, f);
	quirks_render_part(&l, &o, f);
	fclose(f);
	ok(mem && !strstr(mem, "evil */"), "a label cannot close the comment");
	ok(mem && !strchr(mem, '\x1b'), "no control byte in the output");
	ok(mem && strstr(mem, "MMC_FIXUP(\"A\\\"B\\\\\", 0x15, 0x100, add_quirk_mmc,"),
	   "the name is a valid C string: %s", mem ? mem : "");
	ok(mem && strstr(mem, "n 5/5") && strstr(mem, "without FUA: 25") && strstr(mem, "0 lost, 0 torn"),
	   "evidence: n, cuts, lost, torn");
	ok(mem && strstr(mem, "not proposed: lossy"), "a refused part is one comment");
	int width_ok = 1;
	for (char *line = mem; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t cols = 0;
		for (char *c2 = line; c2 < (nl ? nl : line + strlen(line)); c2++)
			cols += *c2 == '\t' ? 8 - cols % 8 : 1;
		width_ok &= cols <= 75;
		line = nl ? nl + 1 : NULL;
	}
	ok(width_ok, "every line <= 75 columns");
	free(mem);

	struct quirks_part *all[] = {&j, &l, &t, &n, &s, &w, &c, &m, &m2, &i, &d, &h};
	for (size_t k = 0; k < LAB_ARRAY_SIZE(all); k++)
		quirks_part_fini(all[k]);
}

/* The store side: counters per iteration, sample fallback, the torn counter,
 * only verified jobs, runs by source. */
static void tallies_cb(const struct store_pf_tally *t, void *arg)
{
	struct store_pf_tally *out = arg;
	for (int i = 0; i < 4; i++)
		if (!out[i].mode) {
			out[i] = *t;
			out[i].mode = strcmp(t->mode, "fua") == 0 ? "fua" : "cache-nofua";
			out[i].source = strcmp(t->source, "lab") == 0 ? "lab" : "simulated";
			out[i].part_label = "";
			out[i].cid = "";
			return;
		}
}

static void store_side(void)
{
	char dir[] = "/tmp/emmclab-test-quirks-XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	char path[512];
	snprintf(path, sizeof path, "%s/q.db", dir);
	struct store *s;
	struct lab_err e = {0};
	int rc = store_open(path, 0, &s, &e);
	ok(rc == LAB_OK, "open: %s", e.msg);
	if (rc)
		return;
	struct store_part sp;
	store_part_init(&sp);
	sp.label = "P1";
	sp.cid = "150100384754463452002c8e7a01b32d";
	sp.manfid = "0x000015";
	sp.oemid = "0x0100";
	sp.name = "8GTF4R";
	int64_t part, run, job;
	struct store_run_info ri = {.plan = "pf", .lab = "l", .source = "lab"};
	rc = store_part_upsert(s, &sp, &part, &e) || store_run_begin(s, &ri, &run, &e);
	const char *modes[] = {"fua", "cache-nofua", "cache-nofua"};
	const char *verified[] = {"fua", "cache-nofua", "fua"}; /* the third: mismatched, never counted */
	for (int m = 0; m < 3 && !rc; m++) {
		struct store_job_info ji = {.run_id = run, .part_id = part, .suite = "pf", .mode = modes[m]};
		rc = store_job_begin(s, &ji, &job, &e) ||
		     store_job_verified(s, job, -1, -1, -1, verified[m], &e);
		for (int it = 1; it <= 4 && !rc; it++) {
			int64_t iid;
			/* cache-nofua iteration 2 tears one record; iteration 3 has no
			 * counters, only the samples (an older store) */
			struct store_counter cn[] = {{"acked", 100}, {"intact", it == 2 && m ? 99 : 100},
						     {"lost", 0}, {"torn", it == 2 && m ? 1 : 0},
						     {"corrupt", 0}};
			struct store_sample sm[] = {{"acked_records", 100, "records"},
						    {"lost_records", it == 3 && m ? 2 : 0, "records"},
						    {"corrupt_records", 0, "records"}};
			rc = store_iteration_write(s, job, "powerfail", it, 1.0, 0, sm, 3, cn,
						   it == 3 ? 0 : 5, &iid, &e);
		}
	}
	ok(rc == LAB_OK, "fill: %s", e.msg);
	struct store_pf_tally got[4] = {{0}};
	rc = store_pf_tallies(s, tallies_cb, got, &e);
	ok(rc == LAB_OK, "tallies: %s", e.msg);
	is_str(got[0].mode, "cache-nofua", "first tally: cache-nofua");
	is_int(got[0].cuts, 4, "mismatched job not counted: 4 cuts");
	is_int(got[0].torn, 1, "torn counter summed");
	is_int(got[0].lost, 2, "lost from the samples when no counter");
	is_int(got[0].intact, 100 + 99 + 98 + 100, "intact: counter, else acked - lost - torn - corrupt");
	is_int(got[0].cuts_with_loss, 2, "cuts with loss");
	is_str(got[1].mode, "fua", "second tally: fua");
	is_int(got[1].cuts, 4, "fua cuts");
	ok(got[2].mode == NULL, "two tallies");

	/* quirks_build: P1 has loss, no speed data */
	struct quirks_opts o;
	quirks_opts_init(&o);
	struct quirks_result *q = NULL;
	rc = quirks_build(s, &o, &q, &e);
	ok(rc == LAB_OK && q && q->nparts == 1, "build: %s", e.msg);
	if (q) {
		is_int(q->parts[0].verdict, QUIRKS_LOSS, "P1 refused for its torn record");
		is_int(q->nproposed, 0, "nothing proposed");
	}
	quirks_free(q);
	store_close(s);
	unlink(path);
	char *side = xasprintf("%s-wal", path);
	unlink(side);
	free(side);
	side = xasprintf("%s-shm", path);
	unlink(side);
	free(side);
	rmdir(dir);
}

int main(void)
{
	rule();
	store_side();
	return tap_done();
}
