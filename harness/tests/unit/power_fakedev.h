/* power_fakedev.h - start/stop the fake HTTP power device server (helpers/power_fakedev.py)
 * from a unit test.  Test helper only: blocking waits are fine here, before the loop runs. */
#ifndef EMMCLAB_POWER_FAKEDEV_H
#define EMMCLAB_POWER_FAKEDEV_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "loop.h"
#include "util.h"

/* Returns the server pid (its own process group) and the port, or -1. */
static inline pid_t fakedev_start(int *port)
{
	const char *src = getenv("EMMCLAB_SRC");
	char path[1024];
	snprintf(path, sizeof path, "%s/harness/tests/helpers/power_fakedev.py",
		 src ? src : EMMCLAB_SOURCE_DIR);
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	char *argv[] = {"python3", path, NULL};
	pid_t pid = lab_spawn(argv, NULL, -1, fds[1], -1);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	char buf[64] = "";
	size_t n = 0;
	struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
	while (n + 1 < sizeof buf && !strchr(buf, '\n') && poll(&pfd, 1, 15000) > 0) {
		ssize_t r = read(fds[0], buf + n, sizeof buf - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(fds[0]);
	int64_t v;
	char *nl = strchr(buf, '\n');
	if (strncmp(buf, "PORT ", 5) != 0 || !nl) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	*nl = '\0';
	if (lab_parse_i64(buf + 5, &v) != LAB_OK) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	*port = (int)v;
	return pid;
}

static inline void fakedev_stop(pid_t pid)
{
	if (pid > 0) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A TCP port on 127.0.0.1 with nothing listening (bound then closed). */
static inline int fakedev_dead_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t al = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0)
		abort();
	close(s);
	return ntohs(a.sin_port);
}

/* Count open fds of this process (leak checks). */
static inline int fakedev_count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

#endif
