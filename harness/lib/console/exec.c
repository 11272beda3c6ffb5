/*
 * console/exec.c - a child process as the console (QEMU with -serial stdio,
 * a script imitating a board).  Its stdin/stdout/stderr are either one end
 * of a socketpair (a bidirectional pipe: one fd for the loop) or the slave
 * of a fresh pty pair (pty: true), in which case the child runs in its own
 * session with the pty as controlling terminal, so Ctrl-C typed on the
 * console reaches it as SIGINT like on a real terminal.
 *
 * The child is reaped through loop_child_watch.  Closing the console sends
 * SIGTERM to the child's process group and SIGKILL 2 s later if it is still
 * there (a small reaper object outlives the console for that).  A child that
 * exits on its own shows up as end-of-file: console.c then reconnects, i.e.
 * starts the command again after reconnect_delay.
 */
#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

#define EXEC_KILL_GRACE_MS 2000

struct exec_cfg {
	struct opt_strlist command;
	bool pty;
	bool raw;
};

static const struct opt exec_opts[] = {
	{.key = "command", .type = OPT_ARGV, .offset = offsetof(struct exec_cfg, command),
	 .flags = OPT_REQUIRED, .help = "argv of the program whose stdio is the console (no shell)"},
	{.key = "pty", .type = OPT_BOOL, .offset = offsetof(struct exec_cfg, pty), .def = "false",
	 .help = "give the child a pseudo-terminal instead of a socketpair"},
	{.key = "raw", .type = OPT_BOOL, .offset = offsetof(struct exec_cfg, raw), .def = "false",
	 .help = "with pty: raw mode (no echo, no CR/NL translation) instead of a sane terminal"},
	{0},
};

struct exec_priv {
	struct loop *loop;
	int fd;
	pid_t pid;
	bool exited;
	int status;
};

struct reaper {
	struct loop *loop;
	pid_t pid;
	struct loop_timer t;
};

static void reaper_done(struct loop *l, pid_t pid, int st, void *arg)
{
	LAB_UNUSED(pid);
	LAB_UNUSED(st);
	struct reaper *r = arg;
	loop_timer_stop(l, &r->t);
	free(r);
}

static void reaper_kill(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(t);
	struct reaper *r = arg;
	kill(-r->pid, SIGKILL);
	kill(r->pid, SIGKILL);
}

static void on_child(struct loop *l, pid_t pid, int st, void *arg)
{
	LAB_UNUSED(l);
	LAB_UNUSED(pid);
	struct exec_priv *p = arg;
	p->exited = true;
	p->status = st;
}

static pid_t spawn(char *const argv[], int stdio_fd, const char *tty, bool setsid_tty)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid;
	posix_spawn_file_actions_init(&fa);
	if (tty) {
		/* opened after setsid, without O_NOCTTY: becomes the controlling terminal */
		posix_spawn_file_actions_addopen(&fa, 0, tty, O_RDWR, 0);
		posix_spawn_file_actions_adddup2(&fa, 0, 1);
		posix_spawn_file_actions_adddup2(&fa, 0, 2);
	} else {
		posix_spawn_file_actions_adddup2(&fa, stdio_fd, 0);
		posix_spawn_file_actions_adddup2(&fa, stdio_fd, 1);
		posix_spawn_file_actions_adddup2(&fa, stdio_fd, 2);
	}
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	if (setsid_tty) {
		flags |= POSIX_SPAWN_SETSID;
	} else {
		flags |= POSIX_SPAWN_SETPGROUP; /* own group: close kills the whole tree */
		posix_spawnattr_setpgroup(&at, 0);
	}
	posix_spawnattr_setflags(&at, flags);
	int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return pid;
}

static int exec_open(struct console *c, int *fd, struct lab_err *e)
{
	struct exec_cfg *cfg = console_cfg(c);
	if (cfg->command.n == 0)
		return LAB_ERR(e, LAB_EUSAGE, "%s: exec console: empty command", console_board(c));
	char **argv = xcalloc(cfg->command.n + 1, sizeof *argv);
	for (size_t i = 0; i < cfg->command.n; i++)
		argv[i] = cfg->command.v[i];
	int mine = -1;
	pid_t pid = -1;
	int err = 0;
	if (cfg->pty) {
		char tty[128];
		mine = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (mine < 0 || grantpt(mine) < 0 || unlockpt(mine) < 0 ||
		    ptsname_r(mine, tty, sizeof tty) != 0) {
			err = errno;
			goto fail;
		}
		int s = open(tty, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (s < 0) {
			err = errno;
			goto fail;
		}
		struct termios tio;
		if (tcgetattr(s, &tio) == 0) {
			if (cfg->raw)
				cfmakeraw(&tio);
			tcsetattr(s, TCSANOW, &tio);
		}
		pid = spawn(argv, -1, tty, true);
		err = errno;
		close(s); /* the child has its own; ours would hide its exit (no EIO) */
	} else {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			err = errno;
			goto fail;
		}
		mine = sv[0];
		pid = spawn(argv, sv[1], NULL, false);
		err = errno;
		close(sv[1]);
	}
	if (pid < 0)
		goto fail;
	free(argv);
	struct exec_priv *p = xcalloc(1, sizeof *p);
	p->loop = console_loop(c);
	p->fd = mine;
	p->pid = pid;
	loop_child_watch(p->loop, pid, on_child, p);
	*console_priv(c) = p;
	*fd = mine;
	return LAB_OK;
fail:
	if (mine >= 0)
		close(mine);
	free(argv);
	return LAB_ERR(e, LAB_EINFRA, "%s: exec console '%s': %s", console_board(c),
		       cfg->command.v[0], strerror(err));
}

static void exec_close(struct console *c)
{
	struct exec_priv *p = *console_priv(c);
	if (!p)
		return;
	close(p->fd);
	if (!p->exited) {
		loop_child_unwatch(p->loop, p->pid);
		/* already dead (a failed exec): reaped here, no reaper left to leak (valgrind) */
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
			free(p);
			*console_priv(c) = NULL;
			return;
		}
		struct reaper *r = xcalloc(1, sizeof *r);
		r->loop = p->loop;
		r->pid = p->pid;
		loop_timer_init(&r->t, reaper_kill, r);
		loop_timer_start(p->loop, &r->t, EXEC_KILL_GRACE_MS);
		loop_child_watch(p->loop, p->pid, reaper_done, r);
		kill(-p->pid, SIGTERM);
		kill(p->pid, SIGTERM);
		kill(-p->pid, SIGCONT); /* a stopped child would never see SIGTERM */
	}
	free(p);
	*console_priv(c) = NULL;
}

const struct console_driver console_exec = {
	.name = "exec",
	.version = CONSOLE_OPS_VERSION,
	.help = "a child process's stdio (socketpair) or a pty given to it (pty: true)",
	.options = exec_opts,
	.cfg_size = sizeof(struct exec_cfg),
	.open = exec_open,
	.close = exec_close,
};
