/* serial console without a UART: option validation, a missing by-id device, by-id
 * symlink resolution, pty rejection, and - where /dev/ttyS0 can be opened - that the
 * port is configured as asked (checked with tcgetattr on a second descriptor). */
#include "console.h"
#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static struct console *mk(struct loop *l, const char *yaml, struct lab_err *e)
{
	struct cfg_node *n = NULL;
	struct console *c = NULL;
	if (cfg_parse_buffer("t.yaml", yaml, strlen(yaml), &n, e) == LAB_OK)
		console_new(l, "dut", n, NULL, NULL, &c, e);
	cfg_free(n);
	return c;
}

int main(void)
{
	struct loop *l = loop_new();
	struct lab_err e = {0};
	char dir[] = "/tmp/emmclab-ser-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char yaml[512], link[300];

	struct console *c = mk(l, "driver: serial\ndevice: /dev/ttyS0\nparity: evn\n", &e);
	ok(!c && strstr(e.msg, "evn"), "bad parity refused: %s", e.msg);
	lab_err_clear(&e);
	c = mk(l, "driver: serial\ndevice: /dev/ttyS0\nbaud: 0\n", &e);
	ok(!c && strstr(e.msg, "baud"), "baud out of range refused: %s", e.msg);
	lab_err_clear(&e);

	c = mk(l, "driver: serial\ndevice: /dev/serial/by-id/usb-FTDI_nonexistent-if00-port0\n", &e);
	ok(c != NULL, "console created");
	ok(console_open(c, &e) != LAB_OK && strstr(e.msg, "usb-FTDI_nonexistent") &&
		   strstr(e.msg, "No such file"),
	   "missing device: %s", e.msg);
	ok(!console_is_up(c), "not up");
	console_free(c);

	/* a pty behind a link: resolved and refused with advice */
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	grantpt(m);
	unlockpt(m);
	snprintf(link, sizeof link, "%s/usb-fake-if00", dir);
	ok(symlink(ptsname(m), link) == 0, "link to a pty");
	snprintf(yaml, sizeof yaml, "driver: serial\ndevice: %s\n", link);
	lab_err_clear(&e);
	c = mk(l, yaml, &e);
	ok(console_open(c, &e) != LAB_OK && strstr(e.msg, "/dev/pts/") && strstr(e.msg, "driver: pty"),
	   "pty refused after resolving the link: %s", e.msg);
	console_free(c);
	close(m);
	unlink(link);

	/* a real tty behind a by-id style link */
	int probe = open("/dev/ttyS0", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct termios t0;
	if (probe >= 0 && tcgetattr(probe, &t0) == 0) {
		ok(symlink("/dev/ttyS0", link) == 0, "link to /dev/ttyS0");
		snprintf(yaml, sizeof yaml,
			 "driver: serial\ndevice: %s\nbaud: 57600\nstop_bits: 2\nflow: rtscts\n", link);
		lab_err_clear(&e);
		c = mk(l, yaml, &e);
		int rc = console_open(c, &e);
		if (rc == LAB_OK) {
			ok(console_is_up(c), "/dev/ttyS0 opened through the link");
			struct termios t;
			tcgetattr(probe, &t);
			is_int(cfgetospeed(&t), B57600, "baud configured");
			ok(t.c_cflag & CSTOPB, "2 stop bits configured");
			ok(t.c_cflag & CRTSCTS, "RTS/CTS configured");
			is_int(t.c_cflag & CSIZE, CS8, "8 data bits");
		} else {
			/* no UART behind ttyS0 (VMs, containers): the error must name both paths */
			ok(strstr(e.msg, link) && strstr(e.msg, "-> /dev/ttyS0"),
			   "ttyS0 not usable here; error names link and target: %s", e.msg);
		}
		console_free(c);
		tcsetattr(probe, TCSANOW, &t0);
		unlink(link);
	} else {
		ok(1, "no openable /dev/ttyS0 here: configuration not exercised");
	}
	if (probe >= 0)
		close(probe);
	loop_free(l);
	rmdir(dir);
	return tap_done();
}
