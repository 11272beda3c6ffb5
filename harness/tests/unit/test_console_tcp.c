/* tcp console: telnet parsing against a scripted server (split IAC/SB sequences), then a
 * real ser2net publishing a pty on 127.0.0.1, raw and telnet(rfc2217), both directions,
 * RFC 2217 settings checked on the pty, loss and reconnect. */
#include "console.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

struct ctx {
	char rx[8192];
	size_t rxn;
	int ups, downs;
	char msg[300];
};

static void on_data(struct console *c, const char *buf, size_t n, void *arg)
{
	LAB_UNUSED(c);
	struct ctx *x = arg;
	if (x->rxn + n < sizeof x->rx) {
		memcpy(x->rx + x->rxn, buf, n);
		x->rxn += n;
	}
}

static void on_state(struct console *c, bool up, const char *msg, void *arg)
{
	LAB_UNUSED(c);
	struct ctx *x = arg;
	if (up)
		x->ups++;
	else
		x->downs++;
	lab_strlcpy(x->msg, msg, sizeof x->msg);
}

static const struct console_events events = {.data = on_data, .state = on_state};

static struct console *mk(struct loop *l, const char *yaml, struct ctx *x)
{
	struct cfg_node *n = NULL;
	struct console *c = NULL;
	struct lab_err e = {0};
	if (cfg_parse_buffer("t.yaml", yaml, strlen(yaml), &n, &e) == LAB_OK)
		console_new(l, "dut", n, &events, x, &c, &e);
	if (!c)
		fprintf(stderr, "# console_new: %s\n", e.msg);
	cfg_free(n);
	return c;
}

static void spin(struct loop *l, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
}

static bool wait_rx(struct loop *l, struct ctx *x, size_t n, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (x->rxn < n && lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
	return x->rxn >= n;
}

static bool wait_ups(struct loop *l, struct ctx *x, int n, unsigned ms)
{
	uint64_t t0 = lab_now_ms();
	while (x->ups < n && lab_now_ms() - t0 < ms)
		loop_run_once(l, 5);
	return x->ups >= n;
}

/* Read from fd until n bytes or timeout, while running the loop. */
static size_t collect(struct loop *l, int fd, char *buf, size_t n, unsigned ms)
{
	size_t got = 0;
	uint64_t t0 = lab_now_ms();
	while (got < n && lab_now_ms() - t0 < ms) {
		loop_run_once(l, 5);
		ssize_t r = read(fd, buf + got, n - got);
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	bind(s, (struct sockaddr *)&a, sizeof a);
	getsockname(s, (struct sockaddr *)&a, &len);
	close(s);
	return ntohs(a.sin_port);
}

static int listener(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 4) < 0)
		return -1;
	getsockname(s, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	return s;
}

static void test_telnet_parser(void)
{
	struct loop *l = loop_new();
	int port = 0;
	int ls = listener(&port);
	ok(ls >= 0, "scripted telnet server on 127.0.0.1:%d", port);
	char yaml[256];
	snprintf(yaml, sizeof yaml, "driver: tcp\nport: %d\nprotocol: telnet\n", port);
	struct ctx x = {0};
	struct console *c = mk(l, yaml, &x);
	struct lab_err e = {0};
	is_int(console_open(c, &e), LAB_OK, "open (async connect)");
	ok(wait_ups(l, &x, 1, 2000), "connected");
	int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	ok(s >= 0, "accepted");
	unsigned char buf[256];
	size_t n = collect(l, s, (char *)buf, 12, 1000);
	static const unsigned char hello[] = {255, 251, 0, 255, 253, 0, 255, 251, 3, 255, 253, 3};
	ok(n == 12 && memcmp(buf, hello, 12) == 0, "client offers WILL/DO BINARY and SGA");

	/* data with IAC IAC, an unsupported DO, a split SB, CR NUL (not binary yet) */
	static const unsigned char p1[] = {'a', 'b', 255};
	static const unsigned char p2[] = {255, 'c', 255};
	static const unsigned char p3[] = {253, 1, 'd', 255, 250, 24, 'x', 't', 255};
	static const unsigned char p4[] = {255, 'm', 255};
	static const unsigned char p5[] = {240, 'e', '\r'};
	static const unsigned char p6[] = {0, 'f'};
	const unsigned char *parts[] = {p1, p2, p3, p4, p5, p6};
	size_t lens[] = {sizeof p1, sizeof p2, sizeof p3, sizeof p4, sizeof p5, sizeof p6};
	for (size_t i = 0; i < 6; i++) {
		ok(write(s, parts[i], lens[i]) == (ssize_t)lens[i], "server part %zu", i);
		spin(l, 15);
	}
	ok(wait_rx(l, &x, 8, 1000), "data arrived");
	ok(x.rxn == 8 && memcmp(x.rx, "ab\xff" "cde\rf", 8) == 0,
	   "IAC IAC -> 0xff, options and split SB removed, CR NUL -> CR (%zu bytes)", x.rxn);
	n = collect(l, s, (char *)buf, 3, 500);
	static const unsigned char wont_echo[] = {255, 252, 1};
	ok(n == 3 && memcmp(buf, wont_echo, 3) == 0, "unsupported DO ECHO refused with WONT");

	/* server agrees to binary: then CR passes alone and IAC is doubled */
	static const unsigned char agree[] = {255, 251, 0, 255, 253, 0, 255, 251, 3, 255, 253, 3};
	ok(write(s, agree, sizeof agree) == (ssize_t)sizeof agree, "server agrees");
	spin(l, 30);
	n = collect(l, s, (char *)buf, sizeof buf, 100);
	is_int((long long)n, 0, "acknowledgements are not answered (no negotiation loop)");
	console_write(c, "x\xffy\r", 4);
	n = collect(l, s, (char *)buf, 5, 1000);
	ok(n == 5 && memcmp(buf, "x\xff\xffy\r", 5) == 0, "tx: IAC doubled, bare CR in binary mode");
	x.rxn = 0;
	ok(write(s, "g\r\0h", 4) == 4, "server sends CR NUL in binary mode");
	ok(wait_rx(l, &x, 4, 1000) && memcmp(x.rx, "g\r\0h", 4) == 0, "binary: CR NUL kept as is");

	/* server closes: loss reported, reconnect attempts */
	close(s);
	spin(l, 100);
	ok(x.downs >= 1, "loss reported: %s", x.msg);
	console_free(c);
	close(ls);

	/* refused */
	int dead = free_port();
	snprintf(yaml, sizeof yaml, "driver: tcp\nport: %d\nreconnect_delay: 50ms\n", dead);
	struct ctx y = {0};
	c = mk(l, yaml, &y);
	is_int(console_open(c, &e), LAB_OK, "open to a closed port starts connecting");
	uint64_t t0 = lab_now_ms();
	while (y.downs == 0 && lab_now_ms() - t0 < 2000)
		loop_run_once(l, 5);
	ok(strstr(y.msg, "refused") && strstr(y.msg, "127.0.0.1"), "refusal reported: %s", y.msg);
	console_free(c);
	loop_free(l);
}

/* ---- against a real ser2net ---- */

static pid_t start_ser2net(const char *dir, const char *tty, int raw_port, int tn_port)
{
	char pidf[300], y1[300], y2[300], y3[300], y4[300], y5[300];
	snprintf(pidf, sizeof pidf, "%s/ser2net.pid", dir);
	snprintf(y1, sizeof y1, "connection: &raw");
	snprintf(y2, sizeof y2, "  accepter: tcp,127.0.0.1,%d", raw_port);
	snprintf(y3, sizeof y3, "  connector: serialdev,%s,115200n81,local", tty);
	snprintf(y4, sizeof y4, "connection: &rfc");
	snprintf(y5, sizeof y5, "  accepter: telnet(rfc2217),tcp,127.0.0.1,%d", tn_port);
	char *argv[] = {"ser2net", "-n", "-u", "-P", pidf, "-Y", y1, "-Y", y2, "-Y", y3,
			"-Y", y4, "-Y", y5, "-Y", y3, NULL};
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid = lab_spawn(argv, NULL, devnull, devnull, devnull);
	close(devnull);
	/* wait until both ports listen */
	for (int i = 0; i < 200; i++) {
		int okc = 0;
		int ports[2] = {raw_port, tn_port};
		for (int k = 0; k < 2; k++) {
			int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct sockaddr_in a = {.sin_family = AF_INET,
						.sin_port = htons((uint16_t)ports[k]),
						.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
			if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
				okc++;
			close(s);
		}
		if (okc == 2)
			break;
		usleep(20000);
	}
	usleep(100000); /* let ser2net drop the probe connections */
	return pid;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

static void test_ser2net(void)
{
	if (access("/usr/sbin/ser2net", X_OK) != 0) {
		ok(0, "ser2net is installed (Debian package ser2net, see .ci/packages.txt)");
		return;
	}
	char dir[] = "/tmp/emmclab-s2n-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	grantpt(m);
	unlockpt(m);
	char tty[64];
	lab_strlcpy(tty, ptsname(m), sizeof tty);
	lab_fd_nonblock(m);
	int rp = free_port(), tp = free_port();
	while (tp == rp)
		tp = free_port();
	pid_t s2n = start_ser2net(dir, tty, rp, tp);
	ok(s2n > 0, "ser2net started: %s on raw %d, rfc2217 %d", tty, rp, tp);
	struct loop *l = loop_new();
	char yaml[512];
	struct lab_err e = {0};

	/* raw */
	snprintf(yaml, sizeof yaml, "driver: tcp\nhost: 127.0.0.1\nport: %d\nprotocol: raw\n", rp);
	struct ctx x = {0};
	struct console *c = mk(l, yaml, &x);
	is_int(console_open(c, &e), LAB_OK, "raw: open");
	ok(wait_ups(l, &x, 1, 2000), "raw: connected to ser2net");
	spin(l, 100);
	console_write_str(c, "boot\r");
	char buf[512];
	size_t n = collect(l, m, buf, 5, 2000);
	ok(n == 5 && memcmp(buf, "boot\r", 5) == 0, "raw: console -> ser2net -> pty");
	ok(write(m, "U-Boot> \xff\n", 10) == 10, "pty side writes");
	ok(wait_rx(l, &x, 10, 2000) && memcmp(x.rx, "U-Boot> \xff\n", 10) == 0,
	   "raw: pty -> ser2net -> console");
	console_free(c);
	spin(l, 200);

	/* telnet with RFC 2217 */
	snprintf(yaml, sizeof yaml,
		 "driver: tcp\nport: %d\nprotocol: rfc2217\nbaud: 57600\ndata_bits: 7\n"
		 "parity: even\nstop_bits: 2\nreconnect_delay: 100ms\n",
		 tp);
	struct ctx y = {0};
	c = mk(l, yaml, &y);
	is_int(console_open(c, &e), LAB_OK, "rfc2217: open");
	ok(wait_ups(l, &y, 1, 2000), "rfc2217: connected");
	uint64_t t0 = lab_now_ms();
	while (console_tcp_comport(c, 4) == 0 && lab_now_ms() - t0 < 2000)
		loop_run_once(l, 5);
	is_int(console_tcp_comport(c, 1), 57600, "server confirmed SET-BAUDRATE 57600");
	is_int(console_tcp_comport(c, 2), 7, "server confirmed SET-DATASIZE 7");
	is_int(console_tcp_comport(c, 3), 3, "server confirmed SET-PARITY even");
	is_int(console_tcp_comport(c, 4), 2, "server confirmed SET-STOPSIZE 2");
	spin(l, 100);
	int sl = open(tty, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	struct termios tio;
	ok(sl >= 0 && tcgetattr(sl, &tio) == 0, "read the pty's line settings");
	is_int(cfgetospeed(&tio), B57600, "ser2net set 57600 baud on the device");
	/* Linux ptys force CS8 and no parity (pty_set_termios), so only speed and stop bits
	 * can be seen on the device; the confirmations above cover the rest. */
	ok(tio.c_cflag & CSTOPB, "2 stop bits on the device");
	if (sl >= 0)
		close(sl);
	console_write(c, "ls\xff\r", 4);
	n = collect(l, m, buf, 4, 2000);
	ok(n == 4 && memcmp(buf, "ls\xff\r", 4) == 0, "rfc2217: IAC escaped on the wire, one 0xff on the pty");
	ok(write(m, "# \xff\xfe\r\n", 6) == 6, "pty side writes 0xff");
	ok(wait_rx(l, &y, 6, 2000) && memcmp(y.rx, "# \xff\xfe\r\n", 6) == 0,
	   "rfc2217: 0xff from the pty arrives once");

	/* ser2net dies: loss; it comes back: reconnect */
	stop(s2n);
	t0 = lab_now_ms();
	while (y.downs == 0 && lab_now_ms() - t0 < 2000)
		loop_run_once(l, 5);
	ok(y.downs >= 1, "loss when ser2net goes away: %s", y.msg);
	s2n = start_ser2net(dir, tty, rp, tp);
	ok(wait_ups(l, &y, 2, 3000), "reconnected by itself after ser2net restart");
	y.rxn = 0;
	ok(write(m, "again\n", 6) == 6, "pty side writes");
	ok(wait_rx(l, &y, 6, 2000) && memcmp(y.rx, "again\n", 6) == 0, "data flows after reconnect");
	console_free(c);
	loop_free(l);
	stop(s2n);
	close(m);
	char pidf[300];
	snprintf(pidf, sizeof pidf, "%s/ser2net.pid", dir);
	unlink(pidf);
	rmdir(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_telnet_parser();
	test_ser2net();
	return tap_done();
}
