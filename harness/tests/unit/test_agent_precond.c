/* test_agent_precond.c - emmclab-agent precondition (precond.c) on a
 * file. */
#include "test_agent.h"

static void test_precondition(void)
{
	static unsigned char before[1 << 20], after[1 << 20];
	char file[4200], targ[4300];
	struct run r;
	int fd, same = 0;
	size_t i;

	memset(before, 0xAA, sizeof(before));
	put_file("pre.img", before, sizeof(before));
	tpath(file, sizeof(file), "pre.img");
	snprintf(targ, sizeof(targ), "target=%s", file);
	run_agent(&r, "precondition", "passes=2", targ, NULL);
	is_int(r.bad, 0, "precondition: protocol");
	is_int(r.status, 0, "precondition: exit 0");
	ok(count_msg(&r, "progress") >= 4, "progress lines (%d)", count_msg(&r, "progress"));
	ok(find_msg(&r, "progress", "pct", "100") != NULL, "reaches 100%%");
	run_free(&r);
	fd = open(file, O_RDONLY);
	ok(fd >= 0 && read(fd, after, sizeof(after)) == (ssize_t)sizeof(after) &&
	   read(fd, after, 1) == 0, "size unchanged");
	if (fd >= 0)
		close(fd);
	for (i = 0; i < sizeof(after); i++)
		same += after[i] == 0xAA;
	ok(same < 1 << 14, "data replaced by random bytes (%d bytes still 0xAA)", same);

	/* /dev/null stands for a character device.  Once it was found replaced by a
	 * regular file on the test machine (by something outside this suite): then
	 * the agent would rightly write it, so say that instead of a puzzling failure,
	 * and do not fill the machine's /dev/null with random bytes. */
	struct stat st = {0};
	if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
		run_agent(&r, "precondition", "passes=1", "target=/dev/null", NULL);
		is_int(r.status, 1, "character device refused");
		ok(find_msg(&r, "error", "code", "bad-target") != NULL, "as a bad target");
		run_free(&r);
	} else {
		ok(0, "character device refused: /dev/null is not a character device on this "
		   "machine (mode %o): restore it (mknod -m 666 /dev/null c 1 3)", (unsigned)st.st_mode);
	}
	run_agent(&r, "precondition", "passes=0", targ, NULL);
	ok(find_msg(&r, "error", "code", "bad-arg") != NULL, "passes=0 refused");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_precondition();
	agent_cleanup();
	return tap_done();
}
