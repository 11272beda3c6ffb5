/* cmdrun.c - see cmdrun.h. */
#include "cmdrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct cmdrun {
	struct loop *loop;
	pid_t pid;
	int fd[2];           /* stdout, stderr read ends (-1 when closed) */
	struct lab_buf buf[2];
	cmdrun_cb cb;
	void *arg;
};

static void pipe_close(struct cmdrun *c, int i)
{
	if (c->fd[i] >= 0) {
		loop_fd_del(c->loop, c->fd[i]);
		close(c->fd[i]);
		c->fd[i] = -1;
	}
}

/* Read what is there; beyond the cap the bytes are dropped so the child never blocks. */
static void drain(struct cmdrun *c, int i)
{
	char tmp[4096];
	while (c->fd[i] >= 0) {
		ssize_t r = read(c->fd[i], tmp, sizeof tmp);
		if (r > 0) {
			size_t room = c->buf[i].max - c->buf[i].len;
			lab_buf_append(&c->buf[i], tmp, (size_t)r < room ? (size_t)r : room);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		pipe_close(c, i); /* EOF or error */
	}
}

static void on_pipe(struct loop *l, int fd, unsigned ev, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(ev);
	struct cmdrun *c = arg;
	drain(c, fd == c->fd[0] ? 0 : 1);
}

static void cmdrun_free(struct cmdrun *c)
{
	pipe_close(c, 0);
	pipe_close(c, 1);
	lab_buf_free(&c->buf[0]);
	lab_buf_free(&c->buf[1]);
	free(c);
}

static void on_exit_cb(struct loop *l, pid_t pid, int wstatus, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(pid);
	struct cmdrun *c = arg;
	/* Everything the child wrote is in the pipes now; a background grandchild
	 * holding them open must not delay us, so take what is there and close. */
	drain(c, 0);
	drain(c, 1);
	pipe_close(c, 0);
	pipe_close(c, 1);
	c->pid = -1;
	c->cb(c, wstatus, lab_buf_cstr(&c->buf[0]), lab_buf_cstr(&c->buf[1]), c->arg);
	cmdrun_free(c);
}

int cmdrun_start(struct loop *l, char *const argv[], size_t cap, cmdrun_cb cb, void *arg,
		 struct cmdrun **out, struct lab_err *e)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1};
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		int err = errno;
		if (devnull >= 0)
			close(devnull);
		if (po[0] >= 0) {
			close(po[0]);
			close(po[1]);
		}
		return LAB_ERR(e, LAB_EINFRA, "cannot create pipes for %s: %s", argv[0], strerror(err));
	}
	pid_t pid = lab_spawn(argv, NULL, devnull, po[1], pe[1]);
	int err = errno;
	close(devnull);
	close(po[1]);
	close(pe[1]);
	if (pid < 0) {
		close(po[0]);
		close(pe[0]);
		return LAB_ERR(e, LAB_EINFRA, "cannot run %s: %s", argv[0], strerror(err));
	}
	struct cmdrun *c = xcalloc(1, sizeof *c);
	c->loop = l;
	c->pid = pid;
	c->fd[0] = po[0];
	c->fd[1] = pe[0];
	c->cb = cb;
	c->arg = arg;
	for (int i = 0; i < 2; i++) {
		lab_buf_init(&c->buf[i], cap ? cap : 4096);
		lab_fd_nonblock(c->fd[i]);
		loop_fd_add(l, c->fd[i], LOOP_READ, on_pipe, c);
	}
	loop_child_watch(l, pid, on_exit_cb, c);
	*out = c;
	return LAB_OK;
}

void cmdrun_kill(struct cmdrun *c)
{
	if (!c)
		return;
	if (c->pid > 0) {
		/* The whole group: a wrapper script's children die with it. The loop reaps. */
		kill(-c->pid, SIGKILL);
		loop_child_unwatch(c->loop, c->pid);
	}
	cmdrun_free(c);
}

int cmdrun_expand(const struct opt_strlist *tmpl, const char *const keys[],
		  const char *const vals[], size_t n, char ***out, struct lab_err *e)
{
	/* A value substituted into a shell script would be parsed again by the
	 * shell (a board named 'x;reboot'): values go in argv elements only. */
	size_t script = opt_argv_script(tmpl);
	if (script) {
		for (const char *open = strchr(tmpl->v[script], '{'); open; open = strchr(open + 1, '{'))
			for (size_t k = 0; k < n; k++)
				if (strncmp(open + 1, keys[k], strlen(keys[k])) == 0 &&
				    open[1 + strlen(keys[k])] == '}')
					return LAB_ERR(e, LAB_EUSAGE,
					       "placeholder {%s} inside the script of '%s -c': the shell "
					       "would parse the value again; pass it as an argument after "
					       "the script ('{%s}') and use \"$1\" (or $0)",
					       keys[k], tmpl->v[0], keys[k]);
	}
	char **argv = xcalloc(tmpl->n + 1, sizeof *argv);
	for (size_t i = 0; i < tmpl->n; i++) {
		struct lab_buf b;
		lab_buf_init(&b, 0);
		const char *s = tmpl->v[i];
		while (*s) {
			const char *open = strchr(s, '{');
			const char *close = open ? strchr(open, '}') : NULL;
			if (!open || !close) {
				lab_buf_append(&b, s, strlen(s));
				break;
			}
			lab_buf_append(&b, s, (size_t)(open - s));
			size_t klen = (size_t)(close - open - 1);
			size_t k;
			for (k = 0; k < n; k++)
				if (strlen(keys[k]) == klen && strncmp(keys[k], open + 1, klen) == 0)
					break;
			if (k == n) {
				lab_buf_free(&b);
				cmdrun_argv_free(argv);
				struct lab_buf known;
				lab_buf_init(&known, 1024);
				for (k = 0; k < n; k++)
					lab_buf_printf(&known, "%s{%s}", k ? " " : "", keys[k]);
				int rc = LAB_ERR(e, LAB_EUSAGE, "unknown placeholder {%.*s} in '%s' (known: %s)",
						 (int)klen, open + 1, tmpl->v[i], lab_buf_cstr(&known));
				lab_buf_free(&known);
				return rc;
			}
			if (vals[k])
				lab_buf_append(&b, vals[k], strlen(vals[k]));
			s = close + 1;
		}
		argv[i] = xstrdup(lab_buf_cstr(&b));
		lab_buf_free(&b);
	}
	*out = argv;
	return LAB_OK;
}

void cmdrun_argv_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}

void cmdrun_describe(char *const argv[], char *buf, size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			lab_strlcat(buf, " ", size);
		lab_strlcat(buf, argv[i], size);
	}
}

void cmdrun_status_text(int wstatus, const char *err, char *buf, size_t size)
{
	/* The last non-empty line of stderr says what went wrong, usually. */
	const char *end = err + strlen(err);
	while (end > err && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	const char *start = end;
	while (start > err && start[-1] != '\n')
		start--;
	int len = (int)(end - start);
	if (len > 200)
		len = 200;
	if (WIFSIGNALED(wstatus))
		snprintf(buf, size, "killed by signal %d%s%.*s", WTERMSIG(wstatus), len ? ": " : "",
			 len, start);
	else
		snprintf(buf, size, "exited with %d%s%.*s", WEXITSTATUS(wstatus), len ? ": " : "", len,
			 start);
}
