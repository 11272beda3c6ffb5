/* test_agent_powerfail.c - emmclab-agent powerfail write and check
 * (powerfail.c), the record file truncated and corrupted at every byte. */
#include "test_agent.h"

/* powerfail: write N records, then check truncations and corruptions */
#define PF_N 4
#define PF_RS 128

static void pf_check(const char *file, int acked, long long *intact, long long *lost,
		     long long *corrupt)
{
	char f[4300], a[64];
	struct run r;

	snprintf(f, sizeof(f), "file=%s", file);
	snprintf(a, sizeof(a), "acked=%d", acked);
	run_agent(&r, "powerfail-check", f, a, "record_size=128", NULL);
	*intact = counter(&r, "intact");
	*lost = counter(&r, "lost");
	*corrupt = counter(&r, "corrupt");
	if (r.bad || r.status)
		*intact = -99;
	run_free(&r);
}

static void test_powerfail(void)
{
	static unsigned char orig[PF_N * PF_RS];
	char file[4200], farg[4300], work[4200];
	long long in, lo, co;
	int len, pos, trunc_bad = 0, corrupt_bad = 0, fd, i;
	struct run r;

	tpath(file, sizeof(file), "pf.dat");
	tpath(work, sizeof(work), "pf-work.dat");
	snprintf(farg, sizeof(farg), "file=%s", file);
	run_agent(&r, "powerfail-write", farg, "records=4", "record_size=128", NULL);
	is_int(r.bad, 0, "powerfail-write: protocol");
	is_int(r.status, 0, "powerfail-write: exit 0");
	for (i = 1; i <= PF_N; i++) {
		char v[8];
		const struct proto_msg *m;

		snprintf(v, sizeof(v), "%d", i);
		m = find_msg(&r, "counter", "value", v);
		ok(m && !strcmp(proto_get(m, "name"), "acked"), "record %d acked", i);
	}
	run_free(&r);
	fd = open(file, O_RDONLY);
	ok(fd >= 0 && read(fd, orig, sizeof(orig)) == (ssize_t)sizeof(orig), "file has 4 records");
	if (fd >= 0)
		close(fd);

	pf_check(file, 4, &in, &lo, &co);
	ok(in == 4 && lo == 0 && co == 0, "all 4 intact (%lld/%lld/%lld)", in, lo, co);
	pf_check(file, 6, &in, &lo, &co);
	ok(in == 4 && lo == 2 && co == 0, "acked 6 of 4 written: 2 lost");
	pf_check(file, 2, &in, &lo, &co);
	ok(in == 2 && lo == 0 && co == 0, "acked 2: 2 intact (others extra)");

	/* truncated at every length: full records intact, a partial one corrupt, rest lost */
	for (len = 0; len <= (int)sizeof(orig); len++) {
		int full = len / PF_RS, part = len % PF_RS ? 1 : 0;

		put_file("pf-work.dat", orig, (size_t)len);
		pf_check(work, PF_N, &in, &lo, &co);
		if (in != full || co != part || lo != PF_N - full - part) {
			if (trunc_bad++ < 3)
				printf("# truncated at %d: intact %lld lost %lld corrupt %lld\n", len,
				       in, lo, co);
		}
	}
	is_int(trunc_bad, 0, "truncation at every byte classified");

	/* one byte flipped at every position: exactly that record corrupt */
	for (pos = 0; pos < (int)sizeof(orig); pos++) {
		static unsigned char copy[sizeof(orig)];

		memcpy(copy, orig, sizeof(orig));
		copy[pos] ^= 0x5a;
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		if (in != PF_N - 1 || co != 1 || lo != 0) {
			if (corrupt_bad++ < 3)
				printf("# flipped %d: intact %lld lost %lld corrupt %lld\n", pos, in,
				       lo, co);
		}
	}
	is_int(corrupt_bad, 0, "corruption at every byte detected");

	/* a zeroed (never written) record is lost, not corrupt */
	{
		static unsigned char copy[sizeof(orig)];

		memcpy(copy, orig, sizeof(orig));
		memset(copy + PF_RS, 0, PF_RS);
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		ok(in == 3 && lo == 1 && co == 0, "zeroed record 2: lost");
	}
	/* a record from another run (valid CRC, other run id) is corrupt */
	{
		static unsigned char other[sizeof(orig)], copy[sizeof(orig)];

		run_agent(&r, "powerfail-write", farg, "records=4", "record_size=128", NULL);
		run_free(&r);
		fd = open(file, O_RDONLY);
		ok(fd >= 0 && read(fd, other, sizeof(other)) == (ssize_t)sizeof(other), "second run");
		if (fd >= 0)
			close(fd);
		ok(memcmp(other, orig, sizeof(orig)) != 0, "a new run writes other records");
		memcpy(copy, orig, sizeof(orig));
		memcpy(copy + 2 * PF_RS, other + 2 * PF_RS, PF_RS);
		put_file("pf-work.dat", copy, sizeof(copy));
		pf_check(work, PF_N, &in, &lo, &co);
		ok(in == 3 && co == 1, "stale record of another run: corrupt");
	}
	/* records of two sectors: one sector of record 2 old (zero) is torn, and corrupt */
	{
		static unsigned char big[3 * 1024];
		char a[4300];

		run_agent(&r, "powerfail-write", farg, "records=3", "record_size=1024", NULL);
		run_free(&r);
		fd = open(file, O_RDONLY);
		ok(fd >= 0 && read(fd, big, sizeof(big)) == (ssize_t)sizeof(big), "two-sector records");
		if (fd >= 0)
			close(fd);
		memset(big + 1024 + 512, 0, 512);
		put_file("pf-work.dat", big, sizeof(big));
		snprintf(a, sizeof(a), "file=%s", work);
		run_agent(&r, "powerfail-check", a, "acked=3", "record_size=1024", NULL);
		ok(counter(&r, "intact") == 2 && counter(&r, "corrupt") == 1 &&
			   counter(&r, "torn") == 1 && counter(&r, "lost") == 0,
		   "half-written record: torn (and corrupt)");
		run_free(&r);
		memset(big + 1024, 0xa5, 512);
		put_file("pf-work.dat", big, sizeof(big));
		run_agent(&r, "powerfail-check", a, "acked=3", "record_size=1024", NULL);
		ok(counter(&r, "corrupt") == 1 && counter(&r, "torn") == 0,
		   "no sector of the record left: corrupt, not torn");
		run_free(&r);
	}
	run_agent(&r, "powerfail-check", farg, "acked=9", "record_size=128", NULL);
	ok(find_msg(&r, "error", "code", "integrity") != NULL, "integrity error line on loss");
	is_int(r.status, 0, "loss is a finding: status ok");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_powerfail();
	agent_cleanup();
	return tap_done();
}
