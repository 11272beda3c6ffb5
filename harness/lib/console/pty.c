/*
 * console/pty.c - a pseudo-terminal published by a simulated board (or
 * socat, or anything that hands out a /dev/pts path or a link to one).
 * We open the path non-blocking and put our side in raw mode, so bytes pass
 * unchanged both ways (no echo, no CR/NL translation).  When the other side
 * goes away the read fails (EIO/EOF) and console.c reconnects by reopening
 * the path, which may by then point to a new pty.
 */
#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

struct pty_cfg {
	char *path;
};

static const struct opt pty_opts[] = {
	{.key = "path", .type = OPT_STR, .offset = offsetof(struct pty_cfg, path),
	 .flags = OPT_REQUIRED, .help = "pseudo-terminal (or a symlink to one) published by the board"},
	{0},
};

struct pty_priv {
	int fd;
};

static int pty_open(struct console *c, int *fd, struct lab_err *e)
{
	struct pty_cfg *cfg = console_cfg(c);
	int f = open(cfg->path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (f < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: console pty %s: %s", console_board(c), cfg->path,
			       strerror(errno));
	if (!isatty(f)) {
		close(f);
		return LAB_ERR(e, LAB_EINFRA, "%s: console pty %s: not a terminal",
			       console_board(c), cfg->path);
	}
	struct termios tio;
	if (tcgetattr(f, &tio) == 0) {
		cfmakeraw(&tio);
		tio.c_cc[VMIN] = 1;
		tio.c_cc[VTIME] = 0;
		tcsetattr(f, TCSANOW, &tio);
	}
	struct pty_priv *p = xcalloc(1, sizeof *p);
	p->fd = f;
	*console_priv(c) = p;
	*fd = f;
	return LAB_OK;
}

static void pty_close(struct console *c)
{
	struct pty_priv *p = *console_priv(c);
	if (!p)
		return;
	close(p->fd);
	free(p);
	*console_priv(c) = NULL;
}

const struct console_driver console_pty = {
	.name = "pty",
	.version = CONSOLE_OPS_VERSION,
	.help = "pseudo-terminal of a simulated board (path to /dev/pts/N or a link to it)",
	.options = pty_opts,
	.cfg_size = sizeof(struct pty_cfg),
	.open = pty_open,
	.close = pty_close,
};
