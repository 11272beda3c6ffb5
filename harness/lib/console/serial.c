/*
 * console/serial.c - a real UART through libserialport.
 *
 * libserialport 0.1.1 (Debian 12) wants /dev/NAME with a /sys/class/tty/NAME
 * entry: by-id symlinks and pseudo-terminals are rejected.  So the device is
 * resolved with realpath first (configs name /dev/serial/by-id/... links,
 * which survive re-enumeration), the port is opened and configured with
 * sp_set_*, and its fd (sp_get_port_handle) is handed to the loop,
 * non-blocking.  libserialport itself never blocks us: we never call its
 * blocking read/write.
 */
#include "console.h"

#include <errno.h>
#include <libserialport.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

static const char *const parity_names[] = {"none", "odd", "even", "mark", "space", NULL};
static const char *const flow_names[] = {"none", "xonxoff", "rtscts", "dtrdsr", NULL};

struct serial_cfg {
	char *device;
	int64_t baud;
	int64_t data_bits;
	int parity;
	int64_t stop_bits;
	int flow;
};

static const struct opt serial_opts[] = {
	{.key = "device", .type = OPT_STR, .offset = offsetof(struct serial_cfg, device),
	 .flags = OPT_REQUIRED, .help = "UART device, preferably a /dev/serial/by-id/... link"},
	{.key = "baud", .type = OPT_INT, .offset = offsetof(struct serial_cfg, baud),
	 .def = "115200", .min = 50, .max = 16000000, .help = "baud rate"},
	{.key = "data_bits", .type = OPT_INT, .offset = offsetof(struct serial_cfg, data_bits),
	 .def = "8", .min = 5, .max = 8, .help = "data bits"},
	{.key = "parity", .type = OPT_ENUM, .offset = offsetof(struct serial_cfg, parity),
	 .def = "none", .choices = parity_names, .help = "parity"},
	{.key = "stop_bits", .type = OPT_INT, .offset = offsetof(struct serial_cfg, stop_bits),
	 .def = "1", .min = 1, .max = 2, .help = "stop bits"},
	{.key = "flow", .type = OPT_ENUM, .offset = offsetof(struct serial_cfg, flow),
	 .def = "none", .choices = flow_names, .help = "flow control"},
	{0},
};

struct serial_priv {
	struct sp_port *port;
};

/* libserialport error text: the OS message only exists after SP_ERR_FAIL. */
static void sp_msg(enum sp_return r, char *buf, size_t n)
{
	if (r == SP_ERR_FAIL) {
		char *m = sp_last_error_message();
		snprintf(buf, n, "%s", m ? m : "failed");
		sp_free_error_message(m);
	} else if (r == SP_ERR_ARG) {
		snprintf(buf, n, "rejected by libserialport (not a serial port it supports)");
	} else if (r == SP_ERR_SUPP) {
		snprintf(buf, n, "not supported by this port");
	} else {
		snprintf(buf, n, "libserialport error %d", (int)r);
	}
}

static int serial_open(struct console *c, int *fd, struct lab_err *e)
{
	struct serial_cfg *cfg = console_cfg(c);
	char real[PATH_MAX];
	if (!realpath(cfg->device, real))
		return LAB_ERR(e, LAB_EINFRA, "%s: serial console %s: %s", console_board(c),
			       cfg->device, strerror(errno));
	char via[PATH_MAX + 16] = "";
	if (strcmp(real, cfg->device) != 0)
		snprintf(via, sizeof via, " (-> %s)", real);
	if (strncmp(real, "/dev/pts/", 9) == 0)
		return LAB_ERR(e, LAB_EUSAGE,
			       "%s: serial console %s%s is a pseudo-terminal: libserialport cannot "
			       "open ptys, use `driver: pty`",
			       console_board(c), cfg->device, via);
	struct sp_port *port = NULL;
	char msg[256];
	enum sp_return r = sp_get_port_by_name(real, &port);
	if (r != SP_OK) {
		sp_msg(r, msg, sizeof msg);
		return LAB_ERR(e, LAB_EINFRA, "%s: serial console %s%s: %s", console_board(c),
			       cfg->device, via, msg);
	}
	r = sp_open(port, SP_MODE_READ_WRITE);
	if (r != SP_OK) {
		sp_msg(r, msg, sizeof msg);
		sp_free_port(port);
		return LAB_ERR(e, LAB_EINFRA, "%s: serial console %s%s: open: %s", console_board(c),
			       cfg->device, via, msg);
	}
	static const enum sp_parity par[] = {SP_PARITY_NONE, SP_PARITY_ODD, SP_PARITY_EVEN,
					     SP_PARITY_MARK, SP_PARITY_SPACE};
	static const enum sp_flowcontrol flow[] = {SP_FLOWCONTROL_NONE, SP_FLOWCONTROL_XONXOFF,
						   SP_FLOWCONTROL_RTSCTS, SP_FLOWCONTROL_DTRDSR};
	const char *what = "baud rate";
	if ((r = sp_set_baudrate(port, (int)cfg->baud)) == SP_OK) {
		what = "data bits";
		if ((r = sp_set_bits(port, (int)cfg->data_bits)) == SP_OK) {
			what = "parity";
			if ((r = sp_set_parity(port, par[cfg->parity])) == SP_OK) {
				what = "stop bits";
				if ((r = sp_set_stopbits(port, (int)cfg->stop_bits)) == SP_OK) {
					what = "flow control";
					r = sp_set_flowcontrol(port, flow[cfg->flow]);
				}
			}
		}
	}
	int handle = -1;
	if (r == SP_OK) {
		what = "handle";
		r = sp_get_port_handle(port, &handle);
	}
	if (r != SP_OK) {
		sp_msg(r, msg, sizeof msg);
		sp_close(port);
		sp_free_port(port);
		return LAB_ERR(e, LAB_EINFRA, "%s: serial console %s%s: setting %s: %s",
			       console_board(c), cfg->device, via, what, msg);
	}
	/* libserialport 0.1.1 on Linux does not set CRTSCTS for SP_FLOWCONTROL_RTSCTS (it
	 * leaves CTS ignored; seen with strace on Debian 12): apply flow control with termios
	 * ourselves and read it back. */
	struct termios tio;
	if (tcgetattr(handle, &tio) == 0) {
		tio.c_cflag &= ~(tcflag_t)CRTSCTS;
		tio.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
		if (cfg->flow == 1)
			tio.c_iflag |= IXON | IXOFF;
		else if (cfg->flow == 2)
			tio.c_cflag |= CRTSCTS;
		struct termios chk;
		if (tcsetattr(handle, TCSANOW, &tio) < 0 || tcgetattr(handle, &chk) < 0 ||
		    (chk.c_cflag & CRTSCTS) != (tio.c_cflag & CRTSCTS)) {
			sp_close(port);
			sp_free_port(port);
			return LAB_ERR(e, LAB_EINFRA, "%s: serial console %s%s: flow control %s not accepted "
				       "by the driver", console_board(c), cfg->device, via,
				       flow_names[cfg->flow]);
		}
	}
	struct serial_priv *p = xcalloc(1, sizeof *p);
	p->port = port;
	*console_priv(c) = p;
	*fd = handle; /* console.c makes it non-blocking and close-on-exec */
	return LAB_OK;
}

static void serial_close(struct console *c)
{
	struct serial_priv *p = *console_priv(c);
	if (!p)
		return;
	sp_close(p->port); /* closes the fd */
	sp_free_port(p->port);
	free(p);
	*console_priv(c) = NULL;
}

const struct console_driver console_serial = {
	.name = "serial",
	.version = CONSOLE_OPS_VERSION,
	.help = "a UART through libserialport (by-id links are resolved with realpath)",
	.options = serial_opts,
	.cfg_size = sizeof(struct serial_cfg),
	.open = serial_open,
	.close = serial_close,
};
