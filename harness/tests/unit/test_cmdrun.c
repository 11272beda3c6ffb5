/* cmdrun: a substituted value is one argv element, never parsed again (a value full of
 * shell syntax arrives byte for byte and runs nothing); a placeholder inside a `sh -c`
 * script is refused. */
#include "cmdrun.h"
#include "loop.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/emmclab-cmdrun-XXXXXX";

struct res {
	bool done;
	int wstatus;
	char out[4096];
};

static void on_done(struct cmdrun *c, int wstatus, const char *out, const char *err, void *arg)
{
	LAB_UNUSED(c);
	LAB_UNUSED(err);
	struct res *r = arg;
	r->done = true;
	r->wstatus = wstatus;
	lab_strlcpy(r->out, out, sizeof r->out);
}

static const char *const keys[] = {"board", "bootargs"};

static void test_verbatim(struct loop *L)
{
	char pwned[300];
	snprintf(pwned, sizeof pwned, "%s/pwned", dir);
	char *hostile = xasprintf("a b; touch %s $(touch %s) `touch %s` '\"\\ | & > %s.2 {x}",
				  pwned, pwned, pwned, pwned);
	/* the script counts its arguments and prints each between brackets */
	char *v[] = {"sh", "-c", "printf '%s\\n' \"$#\"; for a; do printf '[%s]\\n' \"$a\"; done",
		     "sh", "{board}", "pre-{bootargs}-post"};
	struct opt_strlist t = {v, LAB_ARRAY_SIZE(v)};
	const char *vals[] = {hostile, "x;y $(z)"};
	char **argv = NULL;
	struct lab_err e = {0};
	int rc = cmdrun_expand(&t, keys, vals, 2, &argv, &e);
	is_int(rc, LAB_OK, "expand a template with hostile values");
	if (rc)
		return;
	is_str(argv[4], hostile, "the value is one argv element, unchanged");
	struct res r = {0};
	struct cmdrun *c = NULL;
	rc = cmdrun_start(L, argv, 65536, on_done, &r, &c, &e);
	is_int(rc, LAB_OK, "start");
	for (int i = 0; i < 500 && !r.done; i++)
		loop_run_once(L, 20);
	ok(r.done && WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == 0, "the command ran");
	char *want = xasprintf("2\n[%s]\n[pre-x;y $(z)-post]\n", hostile);
	is_str(r.out, want, "two arguments arrived, byte for byte");
	ok(access(pwned, F_OK) != 0, "nothing in the value was run (no %s)", pwned);
	free(want);
	cmdrun_argv_free(argv);
	free(hostile);
}

static void test_script_refused(void)
{
	char *v[] = {"/bin/sh", "-ec", "relay-ctl on {board}"};
	struct opt_strlist t = {v, LAB_ARRAY_SIZE(v)};
	const char *vals[] = {"b1", ""};
	char **argv = NULL;
	struct lab_err e = {0};
	is_int(cmdrun_expand(&t, keys, vals, 2, &argv, &e), LAB_EUSAGE,
	       "a placeholder inside a sh -c script is refused");
	ok(strstr(e.msg, "placeholder {board} inside the script") != NULL, "message: %s", e.msg);
	char *v2[] = {"bash", "-c", "echo \"$1\"", "bash", "{board}"};
	struct opt_strlist t2 = {v2, LAB_ARRAY_SIZE(v2)};
	lab_err_clear(&e);
	is_int(cmdrun_expand(&t2, keys, vals, 2, &argv, &e), LAB_OK,
	       "a script without placeholders, the value as an argument: fine");
	if (argv) {
		is_str(argv[4], "b1", "argument substituted");
		cmdrun_argv_free(argv);
	}
	char *v3[] = {"printf", "%s", "-c", "{board}"};
	struct opt_strlist t3 = {v3, LAB_ARRAY_SIZE(v3)};
	argv = NULL;
	is_int(cmdrun_expand(&t3, keys, vals, 2, &argv, &e), LAB_OK, "not a shell: -c is only a word");
	cmdrun_argv_free(argv);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 3;
	struct loop *L = loop_new();
	test_verbatim(L);
	test_script_refused();
	loop_free(L);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	free(cmd);
	return tap_done();
}
