/* test_agent_fscopy.c - emmclab-agent fscopy (fscopy.c): dir= and
 * tree=PATH. */
#include "test_agent.h"

static void make_tree(void)
{
	char big[70000];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	put_str("src/Makefile", "all:\n");
	put_str("src/kernel/sched/core.c", "int x;\n");
	put_file("src/fs/ext4/big.bin", big, sizeof(big));
	put_str("src/empty/.keep", "");
	{
		char p[4200];

		tpath(p, sizeof(p), "src/link");
		if (symlink("Makefile", p) != 0)
			printf("# symlink failed\n");
	}
}

static void test_fscopy(void)
{
	static const char *const phases[] = { "copy1_time", "rm_time", "copy2_time", "sync_time" };
	char dir[4200], arg[4300], src[4200], targ[4300];
	double sum = 0, wall;
	struct run r;
	size_t i;

	tpath(dir, sizeof(dir), "fs");
	mkdir(dir, 0755);
	snprintf(arg, sizeof(arg), "dir=%s", dir);
	run_agent(&r, "fscopy", "iterations=2", arg, "scale=0.002", NULL);
	is_int(r.bad, 0, "fscopy: protocol");
	is_int(r.status, 0, "fscopy: exit 0");
	{
		const struct proto_msg *m = find_msg(&r, "progress", NULL, NULL);
		const char *what = m ? proto_get(m, "what") : NULL;

		ok(what && strstr(what, "158 files, 10 dirs"), "synthetic tree size: %s",
		   what ? what : "(none)");
	}
	wall = sample(&r, "wall_time", 2, "s");
	ok(wall > 0, "wall_time");
	for (i = 0; i < 4; i++) {
		double v = sample(&r, phases[i], 2, "s");

		ok(v >= 0, "%s", phases[i]);
		sum += v;
	}
	is_near(sum, wall, 0.05, "phases add up to the wall time");
	ok(sample(&r, "mkfs_time", 1, "s") == -1, "no mkfs_time with dir=");
	is_int(count_msg(&r, "sample"), 10, "5 samples x 2 iterations");
	is_int(dir_entries(dir), 0, "dir= left clean");
	run_free(&r);

	make_tree();
	tpath(src, sizeof(src), "src");
	snprintf(targ, sizeof(targ), "tree=%s", src);
	run_agent(&r, "fscopy", "iter=3", arg, targ, NULL);
	is_int(r.status, 0, "fscopy tree=PATH: exit 0");
	ok(sample(&r, "copy1_time", 3, "s") >= 0, "tree=PATH copied (iter 3)");
	is_int(dir_entries(dir), 0, "tree=PATH: dir left clean");
	run_free(&r);

	run_agent(&r, "fscopy", "target=/dev/null", NULL);
	is_int(r.status, 1, "fscopy target=/dev/null refused");
	ok(find_msg(&r, "error", "code", "bad-target") != NULL, "not a block device or file");
	run_free(&r);
}

int main(void)
{
	agent_setup();
	test_fscopy();
	agent_cleanup();
	return tap_done();
}
