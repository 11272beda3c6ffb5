/*
 * cmd_sim.c - `emmclab sim`: run the simulated lab in the background.
 *
 *   sim start LAB.yaml [--state-dir DIR]   spawn emmclab-sim detached, wait until ready
 *   sim stop [--state-dir DIR]             SIGTERM, wait (bounded) for it to exit
 *   sim status [--state-dir DIR] [--json]  boards, power, stage, mode
 *   sim fault BOARD FAULT[=VALUE][:COUNT]  inject a fault at run time
 *   sim clear BOARD                        clear a board's faults
 *   sim power BOARD on|off|reboot          press the simulated plug
 *
 * DIR defaults to $EMMCLAB_SIM_DIR or /tmp/emmclab-sim.  The simulator binary
 * is $EMMCLAB_SIM, else next to this binary (build tree:
 * ../boards/sim/emmclab-sim; installed: same directory), else on PATH.
 * This is the CLI layer: it may block (with timeouts); there is no loop here.
 */
#include "cli.h"
#include "json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *sim_dir(const char *opt)
{
	if (opt)
		return opt;
	const char *e = getenv("EMMCLAB_SIM_DIR");
	return e && e[0] ? e : "/tmp/emmclab-sim";
}

static char *find_sim_binary(void)
{
	const char *e = getenv("EMMCLAB_SIM");
	if (e && e[0])
		return xstrdup(e);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			const char *rel[] = {"/../boards/sim/emmclab-sim", "/emmclab-sim"};
			for (size_t i = 0; i < LAB_ARRAY_SIZE(rel); i++) {
				char *p = xasprintf("%s%s", self, rel[i]);
				if (access(p, X_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	return xstrdup("emmclab-sim"); /* PATH */
}

static void msleep(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* pid from DIR/sim.pid if that process is alive and is the simulator; else 0 */
static pid_t sim_pid(const char *dir)
{
	char *pf = xasprintf("%s/sim.pid", dir);
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	pid_t pid = 0;
	if (lab_read_file(pf, 64, &data, &len, &e) == 0) {
		int64_t v;
		data[strcspn(data, "\n")] = '\0';
		if (lab_parse_i64(data, &v) == 0 && v > 0 && kill((pid_t)v, 0) == 0) {
			char *cp = xasprintf("/proc/%lld/cmdline", (long long)v);
			char *cmd = NULL;
			size_t cl = 0;
			struct lab_err e2 = {0};
			if (lab_read_file(cp, 4096, &cmd, &cl, &e2) == 0) {
				/* argv[0] only (NUL-separated): is it the simulator? */
				if (strstr(cmd, "emmclab-sim"))
					pid = (pid_t)v;
				free(cmd);
			}
			free(cp);
		}
		free(data);
	}
	free(pf);
	return pid;
}

static int sim_port(const char *dir)
{
	char *pf = xasprintf("%s/sim.port", dir);
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	int port = 0;
	if (lab_read_file(pf, 64, &data, &len, &e) == 0) {
		int64_t v;
		data[strcspn(data, "\n")] = '\0';
		if (lab_parse_i64(data, &v) == 0 && v > 0 && v < 65536)
			port = (int)v;
		free(data);
	}
	free(pf);
	return port;
}

/* Minimal blocking HTTP/1.1 request to 127.0.0.1 (5 s timeouts). */
static int http_req(int port, const char *method, const char *target, int *status,
		    struct lab_buf *body, struct lab_err *e)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "socket: %s", strerror(errno));
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		int err = errno;
		close(fd);
		return LAB_ERR(e, LAB_EINFRA, "simulator at 127.0.0.1:%d: %s", port, strerror(err));
	}
	char *req = xasprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\n"
			      "Connection: close\r\n\r\n", method, target, port);
	size_t n = strlen(req), off = 0;
	while (off < n) {
		ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
		if (w <= 0) {
			free(req);
			close(fd);
			return LAB_ERR(e, LAB_EINFRA, "simulator at 127.0.0.1:%d: send: %s", port,
				       strerror(errno));
		}
		off += (size_t)w;
	}
	free(req);
	struct lab_buf resp;
	lab_buf_init(&resp, 16u << 20);
	char buf[8192];
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof buf, 0);
		if (r > 0) {
			if (lab_buf_append(&resp, buf, (size_t)r) != 0)
				break;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	close(fd);
	const char *s = lab_buf_cstr(&resp);
	int code = 0;
	if (sscanf(s, "HTTP/1.%*d %d", &code) != 1) {
		lab_buf_free(&resp);
		return LAB_ERR(e, LAB_EINFRA, "simulator at 127.0.0.1:%d: bad or no HTTP answer", port);
	}
	const char *b = strstr(s, "\r\n\r\n");
	if (b)
		lab_buf_append(body, b + 4, strlen(b + 4));
	*status = code;
	lab_buf_free(&resp);
	return LAB_OK;
}

/* Field key of board i in the simulator's state answer ("" when absent). */
static void board_field(struct lab_buf *state, size_t i, const char *key, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "boards.%zu.%s", i, key);
	json_get(lab_buf_cstr(state), state->len, path, out, n, NULL);
}

static int sim_stop(const char *dir);

/* Whether the simulator pid was started for the lab file lababs (its
 * command line says --lab LABABS). */
static bool sim_runs_lab(pid_t pid, const char *lababs)
{
	char path[64], b[8192];
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0)
		return false;
	b[n] = '\0';
	for (char *p = b; p < b + n; p += strlen(p) + 1)
		if (strcmp(p, "--lab") == 0 && p + strlen(p) + 1 < b + n)
			return strcmp(p + strlen(p) + 1, lababs) == 0;
	return false;
}

static int sim_start(const char *lab, const char *dir_opt, bool reuse)
{
	if (!lab)
		return cli_usage("sim");
	const char *dir = sim_dir(dir_opt);
	struct lab_err e = {0};
	char lababs[PATH_MAX];
	if (!realpath(lab, lababs)) {
		lab_err_set(&e, LAB_EUSAGE, "%s: %s", lab, strerror(errno));
		return cli_error(&e);
	}
	if (lab_mkdir_p(dir, 0755) != 0) {
		lab_err_set(&e, LAB_EINFRA, "cannot create %s: %s", dir, strerror(errno));
		return cli_error(&e);
	}
	pid_t running = sim_pid(dir);
	if (running && reuse) {
		/* run --resume --with-sim: the simulator a killed run left behind */
		if (sim_runs_lab(running, lababs)) {
			printf("simulator already running for %s (pid %d): reused\n", lababs, (int)running);
			return 0;
		}
		printf("simulator (pid %d) runs another lab: restarting it\n", (int)running);
		sim_stop(dir);
		running = sim_pid(dir);
	}
	if (running) {
		lab_err_set(&e, LAB_EINFRA, "a simulator already runs in %s (pid %d): emmclab sim stop first",
			    dir, (int)running);
		return cli_error(&e);
	}
	char *bin = find_sim_binary();
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		free(bin);
		lab_err_set(&e, LAB_EINFRA, "pipe: %s", strerror(errno));
		return cli_error(&e);
	}
	char *logp = xasprintf("%s/sim.log", dir);
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		lab_err_set(&e, LAB_EINFRA, "fork: %s", strerror(errno));
		return cli_error(&e);
	}
	if (child == 0) {
		/* Detach: new session, then fork again so init adopts the simulator. */
		setsid();
		pid_t g = fork();
		if (g != 0) {
			/* the go-between exits at once: free first, or valgrind counts a leak */
			free(bin);
			free(logp);
			_exit(g < 0 ? 127 : 0);
		}
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		if (pfd[1] == 3)
			fcntl(3, F_SETFD, 0); /* dup2(3, 3) would keep close-on-exec */
		else if (dup2(pfd[1], 3) < 0)
			_exit(127);
		char *args[] = {bin, (char *)"--lab", lababs, (char *)"--state-dir", (char *)dir,
				(char *)"--ready-fd", (char *)"3", NULL};
		signal(SIGPIPE, SIG_DFL);
		execvp(bin, args);
		dprintf(3, "error: cannot run %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	int st;
	waitpid(child, &st, 0);
	/* Wait for "ready ..." or "error: ..." (the simulator closes the pipe after it). */
	char msg[4096];
	size_t len = 0;
	int timeout_ms = 20000;
	while (len + 1 < sizeof msg) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t n = read(pfd[0], msg + len, sizeof msg - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pfd[0]);
	msg[len] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	int rc;
	if (strncmp(msg, "ready", 5) == 0) {
		printf("simulator running: %s, state %s, log %s\n", msg + 6, dir, logp);
		rc = 0;
	} else if (strncmp(msg, "error: ", 7) == 0) {
		lab_err_set(&e, strstr(msg, ".yaml") ? LAB_EUSAGE : LAB_EINFRA, "simulator: %s", msg + 7);
		rc = cli_error(&e);
	} else {
		/* Not ready in time: do not leave a half-started simulator behind. */
		pid_t stale = sim_pid(dir);
		if (stale > 0)
			kill(stale, SIGTERM);
		lab_err_set(&e, LAB_EINFRA, "simulator did not report readiness (see %s)", logp);
		rc = cli_error(&e);
	}
	free(logp);
	free(bin);
	return rc;
}

static int sim_stop(const char *dir)
{
	pid_t pid = sim_pid(dir);
	if (!pid) {
		printf("no simulator running (state %s)\n", dir);
		return 0;
	}
	kill(pid, SIGTERM);
	for (int i = 0; i < 250; i++) { /* 5 s */
		if (kill(pid, 0) != 0 && errno == ESRCH) {
			printf("simulator stopped (pid %d)\n", (int)pid);
			return 0;
		}
		msleep(20);
	}
	kill(pid, SIGKILL);
	struct lab_err e = {0};
	lab_err_set(&e, LAB_EINFRA, "simulator (pid %d) did not exit on SIGTERM within 5 s: killed", (int)pid);
	return cli_error(&e);
}

static int sim_request(const char *dir, const char *method, const char *target, bool print_body)
{
	struct lab_err e = {0};
	if (!sim_pid(dir)) {
		lab_err_set(&e, LAB_EINFRA, "no simulator running (state %s)", dir);
		return cli_error(&e);
	}
	int port = sim_port(dir);
	if (!port) {
		lab_err_set(&e, LAB_EINFRA, "simulator in %s has no HTTP port", dir);
		return cli_error(&e);
	}
	struct lab_buf body;
	lab_buf_init(&body, 16u << 20);
	int status = 0;
	int rc = http_req(port, method, target, &status, &body, &e);
	if (rc) {
		lab_buf_free(&body);
		return cli_error(&e);
	}
	if (status != 200) {
		lab_err_set(&e, status == 404 || status == 400 ? LAB_EUSAGE : LAB_EINFRA, "simulator: HTTP %d: %s",
			    status, lab_buf_cstr(&body));
		lab_buf_free(&body);
		return cli_error(&e);
	}
	if (print_body)
		fputs(lab_buf_cstr(&body), stdout);
	lab_buf_free(&body);
	return 0;
}

static int sim_status(const char *dir, bool json)
{
	struct lab_err e = {0};
	pid_t pid = sim_pid(dir);
	if (!pid) {
		printf("no simulator running (state %s)\n", dir);
		return 3;
	}
	int port = sim_port(dir);
	struct lab_buf body;
	lab_buf_init(&body, 16u << 20);
	int status = 0;
	if (http_req(port, "GET", "/sim/state", &status, &body, &e) != 0 || status != 200) {
		lab_buf_free(&body);
		if (!e.msg[0])
			lab_err_set(&e, LAB_EINFRA, "simulator: HTTP %d", status);
		return cli_error(&e);
	}
	if (json) {
		fputs(lab_buf_cstr(&body), stdout);
		lab_buf_free(&body);
		return 0;
	}
	printf("simulator pid %d, power API 127.0.0.1:%d, state %s\n", (int)pid, port, dir);
	printf("%-10s %-5s %-10s %-16s %6s  %s\n", "BOARD", "POWER", "STAGE", "MODE", "BOOTS", "CONSOLE");
	for (size_t i = 0;; i++) {
		char name[64], power[8], stage[16], mode[24], boots[16], console[256];
		board_field(&body, i, "name", name, sizeof name);
		if (!name[0])
			break;
		board_field(&body, i, "power", power, sizeof power);
		board_field(&body, i, "stage", stage, sizeof stage);
		board_field(&body, i, "mode", mode, sizeof mode);
		board_field(&body, i, "boots", boots, sizeof boots);
		board_field(&body, i, "console", console, sizeof console);
		printf("%-10s %-5s %-10s %-16s %6s  %s\n", name, power, stage, mode, boots, console);
	}
	lab_buf_free(&body);
	return 0;
}

/* Percent-encode a query value. */
static char *qenc(const char *s)
{
	struct lab_buf b;
	lab_buf_init(&b, 4096);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.')
			lab_buf_append(&b, p, 1);
		else
			lab_buf_printf(&b, "%%%02X", *p);
	}
	char *r = xstrdup(lab_buf_cstr(&b));
	lab_buf_free(&b);
	return r;
}

enum { O_STATE_DIR = CLI_LONG_ONLY, O_JSON, O_REUSE };

const struct cli_opt cmd_sim_opts[] = {
	{"state-dir", O_STATE_DIR, "DIR",
	 "state directory (default $EMMCLAB_SIM_DIR, else /tmp/emmclab-sim)", 0},
	{"json", O_JSON, NULL, "status, fault, clear, power: the simulator's JSON answer", 0},
	{"reuse", O_REUSE, NULL,
	 "start: a simulator already running for the same lab file is kept (another lab's is "
	 "restarted) instead of an error",
	 0},
	{NULL, 0, NULL, NULL, 0},
};

int cmd_sim(struct cli *cli, int argc, char **argv)
{
	LAB_UNUSED(cli);
	if (argc < 2)
		return cli_usage("sim");
	const char *sub = argv[1];
	const char *dir_opt = NULL;
	bool json = false, reuse = false;
	struct cli_getopt g;
	int c;
	argc--;
	argv++;
	cli_getopt_init(&g, "sim");
	while ((c = cli_getopt(&g, argc, argv)) != -1) {
		switch (c) {
		case O_STATE_DIR: dir_opt = optarg; break;
		case O_JSON: json = true; break;
		case O_REUSE: reuse = true; break;
		default: return cli_getopt_fail(&g);
		}
	}
	char *pos[4];
	int npos = 0;
	for (; optind < argc; optind++) {
		if (npos == 4)
			return cli_usage("sim");
		pos[npos++] = argv[optind];
	}
	if (strcmp(sub, "start") == 0)
		return npos == 1 && !json ? sim_start(pos[0], dir_opt, reuse) : cli_usage("sim");
	const char *dir = sim_dir(dir_opt);
	if (strcmp(sub, "stop") == 0 && npos == 0)
		return sim_stop(dir);
	if (strcmp(sub, "status") == 0 && npos == 0)
		return sim_status(dir, json);
	if ((strcmp(sub, "fault") == 0 && npos == 2) || (strcmp(sub, "clear") == 0 && npos == 1) ||
	    (strcmp(sub, "power") == 0 && npos == 2)) {
		char *board = qenc(pos[0]);
		char *target;
		if (strcmp(sub, "fault") == 0) {
			/* FAULT[=VALUE][:COUNT] is parsed by the simulator */
			char *f = qenc(pos[1]);
			target = xasprintf("/sim/fault?board=%s&fault=%s", board, f);
			free(f);
		} else if (strcmp(sub, "clear") == 0) {
			target = xasprintf("/sim/clear?board=%s", board);
		} else {
			char *op = qenc(pos[1]);
			target = xasprintf("/sim/power?board=%s&op=%s", board, op);
			free(op);
		}
		int rc = sim_request(dir, "POST", target, json);
		if (rc == 0 && !json)
			printf("%s %s: ok\n", sub, pos[0]);
		free(target);
		free(board);
		return rc;
	}
	return cli_usage("sim");
}
