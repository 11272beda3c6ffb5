/* test_mode.c - the mode table: names round trip, unknown names, the rule
 * from verified values, the FUA and CQE counterparts, the reliable-write rule,
 * the printed list. */
#include "mode.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static void test_names(void)
{
	for (int m = 0; m < MODE_COUNT; m++) {
		is_int(lab_mode_parse(lab_mode_name(m)), m, lab_modes[m].name);
		is_str(lab_mode_names[m], lab_modes[m].name, "names list follows the table");
		ok(strlen(lab_modes[m].abbrev) <= 9, "%s: abbreviation fits a 9-column cell",
		   lab_modes[m].name);
		ok(lab_modes[m].help && lab_modes[m].help[0], "%s: has help", lab_modes[m].name);
		for (int k = 0; k < m; k++)
			ok(lab_modes[k].fua != lab_modes[m].fua ||
			       lab_modes[k].write_cache != lab_modes[m].write_cache ||
			       lab_modes[k].cqe != lab_modes[m].cqe,
			   "%s and %s differ in what the DUT shows", lab_modes[k].name,
			   lab_modes[m].name);
	}
	ok(lab_mode_names[MODE_COUNT] == NULL, "names list is NULL-terminated");
	/* Stored in the database and printed: these never change. */
	is_int(lab_mode_parse("fua"), MODE_FUA, "fua");
	is_int(lab_mode_parse("cache-nofua"), MODE_CACHE_NOFUA, "cache-nofua");
	is_int(lab_mode_parse("fua-cqe"), MODE_FUA_CQE, "fua-cqe");
	is_int(lab_mode_parse("cache-nofua-cqe"), MODE_CACHE_NOFUA_CQE, "cache-nofua-cqe");
	is_int(MODE_FUA, 0, "fua is row 0");
	is_int(MODE_CACHE_NOFUA_CQE, 3, "cache-nofua-cqe is row 3");

	is_int(lab_mode_parse("nope"), -1, "unknown name");
	is_int(lab_mode_parse("FUA"), -1, "names are case-sensitive");
	is_int(lab_mode_parse("fua "), -1, "no trailing space");
	is_int(lab_mode_parse(""), -1, "empty name");
	is_int(lab_mode_parse(NULL), -1, "NULL name");
	ok(lab_mode_name(-1) == NULL && lab_mode_name(MODE_COUNT) == NULL, "name out of range");
	ok(lab_mode_fua(MODE_FUA_CQE) && !lab_mode_fua(MODE_CACHE_NOFUA) && !lab_mode_fua(-1),
	   "fua");
	ok(lab_mode_cqe(MODE_CACHE_NOFUA_CQE) && !lab_mode_cqe(MODE_FUA) &&
	       !lab_mode_cqe(MODE_COUNT),
	   "cqe");
}

/* The row with these values, -1 when none: what the rule must find. */
static int row_of(int fua, int wc, int cqe)
{
	for (int m = 0; m < MODE_COUNT; m++)
		if (lab_modes[m].fua == fua && lab_modes[m].write_cache == wc &&
		    lab_modes[m].cqe == cqe)
			return m;
	return -1;
}

static void test_verified(void)
{
	is_int(lab_mode_from_verified(1, 1, 0), MODE_FUA, "fua=1 cache=1 cqe=0 is fua");
	is_int(lab_mode_from_verified(0, 1, 0), MODE_CACHE_NOFUA, "fua=0 cache=1 is cache-nofua");
	is_int(lab_mode_from_verified(1, 1, 1), MODE_FUA_CQE, "fua with CQE");
	is_int(lab_mode_from_verified(0, 1, 1), MODE_CACHE_NOFUA_CQE, "cache-nofua with CQE");
	/* Every combination, write-through and FUA without a cache included:
	 * a mode exactly when a row has those values. */
	for (int v = 0; v < 8; v++) {
		int fua = v & 1, wc = (v >> 1) & 1, cqe = (v >> 2) & 1;
		char what[64];
		snprintf(what, sizeof what, "fua=%d write_cache=%d cqe=%d", fua, wc, cqe);
		is_int(lab_mode_from_verified(fua, wc, cqe), row_of(fua, wc, cqe), what);
	}
	is_int(lab_mode_from_verified(-1, 1, 0), -1, "unknown fua");
	is_int(lab_mode_from_verified(1, -1, 0), -1, "unknown write_cache");
	is_int(lab_mode_from_verified(1, 1, -1), -1, "unknown cqe");
	is_int(lab_mode_from_verified(2, 1, 0), MODE_FUA, "any nonzero value is set");
}

static void test_counterparts(void)
{
	is_int(lab_mode_without_fua(MODE_FUA), MODE_CACHE_NOFUA, "fua without FUA");
	is_int(lab_mode_without_fua(MODE_FUA_CQE), MODE_CACHE_NOFUA_CQE, "fua-cqe without FUA");
	is_int(lab_mode_without_fua(MODE_CACHE_NOFUA), -1, "cache-nofua has no FUA to drop");
	is_int(lab_mode_without_fua(-1), -1, "out of range");
	is_int(lab_mode_with_cqe(MODE_FUA), MODE_FUA_CQE, "fua with CQE");
	is_int(lab_mode_with_cqe(MODE_CACHE_NOFUA), MODE_CACHE_NOFUA_CQE, "cache-nofua with CQE");
	is_int(lab_mode_with_cqe(MODE_FUA_CQE), -1, "already CQE");
	is_int(lab_mode_with_cqe(MODE_COUNT), -1, "out of range");
}

static void test_reliable_writes(void)
{
	char why[200];
	ok(lab_mode_proof_ok(MODE_CACHE_NOFUA, "fscopy", 0, 12, why, sizeof why), "no FUA, none: ok");
	ok(!lab_mode_proof_ok(MODE_CACHE_NOFUA, "fscopy", 3, 12, why, sizeof why),
	   "no FUA, some: mismatch");
	ok(strstr(why, "3 reliable writes in mode cache-nofua") != NULL, "the cause is named: %s", why);
	ok(!lab_mode_proof_ok(MODE_CACHE_NOFUA_CQE, "androbench", 1, 5, why, sizeof why),
	   "no FUA, some: mismatch for androbench too");
	ok(!lab_mode_proof_ok(MODE_CACHE_NOFUA, "fscopy", 0, 0, why, sizeof why),
	   "no FUA, FUA writes, no flush either: mismatch");
	ok(strstr(why, "no flush") != NULL, "the cause is named: %s", why);
	ok(lab_mode_proof_ok(MODE_CACHE_NOFUA, "fscopy", 0, -1, why, sizeof why),
	   "flushes not reported: only the reliable-write rule");
	ok(lab_mode_proof_ok(MODE_FUA, "fscopy", 65, 65, why, sizeof why), "FUA, some: ok");
	ok(!lab_mode_proof_ok(MODE_FUA, "fscopy", 0, 3, why, sizeof why), "FUA, none: mismatch");
	ok(strstr(why, "no reliable write in mode fua") != NULL, "the cause is named: %s", why);
	/* the exemption is gone: androbench's writes are O_DSYNC / fsync'd */
	ok(!lab_mode_proof_ok(MODE_FUA, "androbench", 0, 9, why, sizeof why),
	   "androbench with FUA must show reliable writes");
	ok(!lab_mode_proof_ok(MODE_FUA_CQE, "androbench", 0, 9, why, sizeof why), "also with CQE");
	/* fio: the job decides whether it writes with FUA */
	ok(lab_mode_proof_ok(MODE_FUA_CQE, "fio", 0, 0, why, sizeof why), "fio job without FUA: ok");
	ok(!lab_mode_proof_ok(MODE_CACHE_NOFUA, "fio", 4, 0, why, sizeof why),
	   "fio: reliable writes without FUA are still refused");
	ok(!lab_mode_proof_ok(-1, "fscopy", 0, 0, why, sizeof why), "no mode: not proved");
	/* every workload row states its reason */
	const char *names[] = {"androbench", "fscopy", "fio", "powerfail"};
	for (size_t i = 0; i < 4; i++) {
		const struct agent_workload *w = agent_workload_find(names[i]);
		ok(w && w->reason && strlen(w->reason) > 20, "%s has a stated reason", names[i]);
	}
	ok(agent_workload_find("nope") == NULL, "unknown workload: no row");
	ok(agent_workload_find("powerfail") && !agent_workload_find("powerfail")->counted,
	   "powerfail is not counted");
}

static void test_list(void)
{
	char buf[256], want[256] = "";
	for (int m = 0; m < MODE_COUNT; m++) {
		size_t n = strlen(want);
		snprintf(want + n, sizeof want - n, "%s%s", m ? ", " : "", lab_modes[m].name);
	}
	is_int(lab_mode_list(buf, sizeof buf, ", "), (long long)strlen(want), "length returned");
	is_str(buf, want, "every name, with commas");
	ok(strncmp(buf, "fua, cache-nofua, fua-cqe, cache-nofua-cqe", 42) == 0, "in table order");
	lab_mode_list(buf, sizeof buf, " or ");
	char *last = strrchr(want, ',');
	ok(last && strlen(buf) == strlen(want) + 2 &&
	       strncmp(buf, want, (size_t)(last - want)) == 0 &&
	       strncmp(buf + (last - want), " or ", 4) == 0,
	   "'or' before the last name: %s", buf);
	char small[8];
	int n = lab_mode_list(small, sizeof small, ", ");
	is_int(n, (long long)strlen(want), "full length when truncated");
	is_str(small, "fua, ca", "truncated, terminated");
}

int main(void)
{
	test_names();
	test_verified();
	test_counterparts();
	test_reliable_writes();
	test_list();
	return tap_done();
}
