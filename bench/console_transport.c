/*
 * console_transport.c - what a console round trip costs the machine, by
 * transport, when many consoles are busy at once (the shape of a large lab:
 * the controller and the simulator each watch N consoles with epoll).
 *
 *   console_transport pty|unix|tcp N ROUNDS
 *
 * Makes N connected pairs of the transport (a pty master and its raw slave; a
 * Unix stream socketpair; a TCP connection on 127.0.0.1 with TCP_NODELAY),
 * forks: the child echoes whatever arrives on its ends; the parent writes 16
 * bytes to each of its ends, and writes back what comes back, until ROUNDS
 * round trips per pair are done.  Prints "pairs N rounds R bytes B".  The CPU
 * it costs, including kernel threads (a pty write's flip-buffer work runs in
 * a kworker, charged to neither process), is measured around it by
 * bench/console_transport.sh from /proc/stat.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "console_transport: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
		die("fcntl");
}

/* one connected pair: *a the parent's end, *b the child's */
static void make_pair(const char *kind, int *a, int *b)
{
	if (strcmp(kind, "pty") == 0) {
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK);
		if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
			die("posix_openpt");
		char name[64];
		if (ptsname_r(m, name, sizeof name) != 0)
			die("ptsname");
		int s = open(name, O_RDWR | O_NOCTTY | O_NONBLOCK);
		if (s < 0)
			die("open pts");
		struct termios t;
		if (tcgetattr(s, &t) != 0)
			die("tcgetattr");
		cfmakeraw(&t);
		if (tcsetattr(s, TCSANOW, &t) != 0)
			die("tcsetattr");
		*a = s; /* the controller opens the slave, as the pty console driver does */
		*b = m;
		return;
	}
	if (strcmp(kind, "unix") == 0) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
			die("socketpair");
		*a = sv[0];
		*b = sv[1];
		return;
	}
	if (strcmp(kind, "tcp") != 0) {
		fprintf(stderr, "console_transport: transport must be pty, unix or tcp\n");
		exit(2);
	}
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &sl) != 0)
		die("listen");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) != 0)
		die("connect");
	int s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	close(l);
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	nonblock(c);
	nonblock(s);
	*a = c;
	*b = s;
}

/* Serve fds[0..n): echo (child) or count and send again (parent) until total
 * bytes have come in. */
static void serve(const int *fds, int n, long long total, int echo)
{
	int ep = epoll_create1(0);
	if (ep < 0)
		die("epoll_create1");
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			die("epoll_ctl");
	}
	static const char msg[16] = "0123456789abcde\n";
	if (!echo)
		for (int i = 0; i < n; i++)
			if (write(fds[i], msg, sizeof msg) != (ssize_t)sizeof msg)
				die("write");
	long long got = 0;
	char buf[4096];
	struct epoll_event evs[256];
	while (got < total) {
		int k = epoll_wait(ep, evs, 256, 10000);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die(k == 0 ? "no progress in 10 s" : "epoll_wait");
		for (int j = 0; j < k; j++) {
			int fd = fds[evs[j].data.u32];
			ssize_t r = read(fd, buf, sizeof buf);
			if (r <= 0)
				continue;
			got += r;
			if ((echo || got < total) && write(fd, buf, (size_t)r) != r)
				die("write back");
		}
	}
	close(ep);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: console_transport pty|unix|tcp N ROUNDS\n");
		return 2;
	}
	int n = atoi(argv[2]), rounds = atoi(argv[3]);
	if (n < 1 || n > 4096 || rounds < 1) {
		fprintf(stderr, "console_transport: N in 1..4096, ROUNDS >= 1\n");
		return 2;
	}
	int *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
	if (!a || !b)
		die("calloc");
	for (int i = 0; i < n; i++)
		make_pair(argv[1], &a[i], &b[i]);
	long long total = (long long)n * rounds * 16;
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		for (int i = 0; i < n; i++)
			close(a[i]);
		serve(b, n, total, 1);
		_exit(0);
	}
	serve(a, n, total, 0);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	printf("pairs %d rounds %d bytes %lld\n", n, rounds, total);
	free(a);
	free(b);
	return 0;
}
