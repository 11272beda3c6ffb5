/*
 * sim_main.c - emmclab-sim: serve every board of a lab file on one loop.
 *
 *   emmclab-sim --lab LAB.yaml [--state-dir DIR] [--ready-fd N]
 *
 * Creates a pty per board linked at console.path, one HTTP server per
 * distinct power URL port (pdudaemon + Tasmota APIs and /sim/ control),
 * optionally ser2net for boards with sim.ser2net_port, then reports
 * "ready ..." (or "error: ...") on the ready fd (emmclab sim start waits for
 * it).  SIGTERM/SIGINT: remove the links, stop ser2net, reap it, exit 0.
 */
#include "sim_board.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int ready_fd = -1;
static bool ser2net_exited;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	if (ready_fd >= 0) {
		size_t n = strlen(s), off = 0;
		while (off < n) {
			ssize_t w = write(ready_fd, s + off, n - off);
			if (w <= 0 && errno != EINTR)
				break;
			if (w > 0)
				off += (size_t)w;
		}
		close(ready_fd);
		ready_fd = -1;
	}
	fputs(s, stderr);
	free(s);
}

static void on_signal(struct loop *l, int signo, void *arg)
{
	LAB_UNUSED(signo);
	LAB_UNUSED(arg);
	loop_stop(l);
}

static void on_ser2net(struct loop *l, pid_t pid, int status, void *arg)
{
	struct sim *s = arg;
	LAB_UNUSED(pid);
	s->ser2net_pid = 0;
	ser2net_exited = true;
	if (!loop_stopped(l)) {
		fprintf(stderr, "emmclab-sim: ser2net exited (status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
}

static int start_ser2net(struct sim *s, struct lab_err *e)
{
	struct lab_buf y;
	lab_buf_init(&y, 1 << 20);
	lab_buf_printf(&y, "%%YAML 1.1\n---\n# written by emmclab-sim: simulated consoles on TCP (raw)\n");
	size_t n = 0;
	for (size_t i = 0; i < s->nboards; i++) {
		struct sim_board *b = s->boards[i];
		int64_t port = sim_board_ser2net_port(b);
		if (port <= 0)
			continue;
		lab_buf_printf(&y, "\nconnection: &con%zu\n  accepter: tcp,127.0.0.1,%lld\n"
				   "  connector: serialdev,%s,115200n81,local\n"
				   "  options:\n    kickolduser: true\n",
			       i, (long long)port, sim_board_pts(b));
		n++;
	}
	if (n == 0) {
		lab_buf_free(&y);
		return LAB_OK;
	}
	s->ser2net_conf = xasprintf("%s/ser2net.yaml", s->state_dir);
	int rc = lab_write_file_atomic(s->ser2net_conf, y.data, y.len, e);
	lab_buf_free(&y);
	if (rc)
		return rc;
	char *log = xasprintf("%s/ser2net.log", s->state_dir);
	int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	free(log);
	char *argv[] = {(char *)"ser2net", (char *)"-n", (char *)"-d", (char *)"-u", (char *)"-c",
			s->ser2net_conf, NULL};
	pid_t pid = lab_spawn(argv, NULL, -1, lfd, lfd);
	int err = errno;
	if (lfd >= 0)
		close(lfd);
	if (pid < 0 && err == ENOENT) {
		/* ser2net only republishes consoles that are already on their
		 * pseudo-terminals: without it the lab still runs (the quick
		 * start does not install it), the TCP ports are just not there. */
		fprintf(stderr,
			"emmclab-sim: ser2net (Debian package ser2net) is not installed: the %zu "
			"console%s with sim.ser2net_port %s not published on TCP\n",
			n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
		return LAB_OK;
	}
	if (pid < 0)
		return LAB_ERR(e, LAB_EINFRA, "cannot run ser2net (Debian package ser2net): %s",
			       strerror(err));
	s->ser2net_pid = pid;
	loop_child_watch(s->loop, pid, on_ser2net, s);
	return LAB_OK;
}

static void on_stop_timeout(struct loop *l, struct loop_timer *t, void *arg)
{
	LAB_UNUSED(t);
	struct sim *s = arg;
	if (s->ser2net_pid > 0)
		kill(s->ser2net_pid, SIGKILL);
	loop_stop(l);
}

static int pid_alive(const char *pidfile)
{
	char *data = NULL;
	size_t len = 0;
	struct lab_err e = {0};
	if (lab_read_file(pidfile, 64, &data, &len, &e) != 0)
		return 0;
	int64_t pid = 0;
	data[strcspn(data, "\n")] = '\0';
	int alive = lab_parse_i64(data, &pid) == 0 && pid > 0 && kill((pid_t)pid, 0) == 0 ? (int)pid : 0;
	free(data);
	return alive;
}

/* A lab of N boards holds several fds per board (console, transcript, HTTP
 * sockets): raise the soft fd limit to the hard one, as far as it goes. */
static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: emmclab-sim --lab LAB.yaml [--state-dir DIR] [--ready-fd N] | --keys\n");
}

int main(int argc, char **argv)
{
	const char *lab_path = NULL;
	const char *state_dir = getenv("EMMCLAB_SIM_DIR");
	if (!state_dir || !state_dir[0])
		state_dir = "/tmp/emmclab-sim";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--lab") == 0 && i + 1 < argc) {
			lab_path = argv[++i];
		} else if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc) {
			state_dir = argv[++i];
		} else if (strcmp(argv[i], "--ready-fd") == 0 && i + 1 < argc) {
			int64_t fd;
			if (lab_parse_i64(argv[++i], &fd) != 0 || fd < 0 || fd > 65535) {
				usage();
				return 2;
			}
			ready_fd = (int)fd;
			lab_fd_cloexec(ready_fd);
		} else if (strcmp(argv[i], "--keys") == 0) {
			/* the sim: block keys, for docs/simulator.md */
			opt_help(stdout, sim_cfg_opts, 0);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			return 0;
		} else {
			usage();
			return 2;
		}
	}
	if (!lab_path) {
		report("error: no lab file (--lab LAB.yaml)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();

	struct sim s = {0};
	struct lab_err e = {0};
	int rc = LAB_OK;
	s.state_dir = xstrdup(state_dir);
	if (lab_mkdir_p(s.state_dir, 0755) != 0) {
		report("error: cannot create state dir %s: %s\n", s.state_dir, strerror(errno));
		return 3;
	}
	char *pidfile = xasprintf("%s/sim.pid", s.state_dir);
	char *portfile = xasprintf("%s/sim.port", s.state_dir);
	int other = pid_alive(pidfile);
	if (other && other != getpid()) {
		report("error: a simulator already runs with state dir %s (pid %d)\n", s.state_dir, other);
		return 3;
	}

	const char *paths[] = {lab_path};
	if (config_load(paths, 1, &s.lab, &e) != 0) {
		report("error: %s%s%s\n", e.msg, e.where[0] ? " at " : "", e.where);
		return 2;
	}
	/* lab: {sim: {...}} gives defaults for every board's sim: block */
	struct cfg_node *root = NULL, *labsim = NULL;
	if (cfg_parse_file(lab_path, &root, &e) == 0) {
		struct cfg_node *ln = cfg_map_get(root, "lab");
		struct cfg_node *sn = ln && ln->kind == CFG_MAP ? cfg_map_get(ln, "sim") : NULL;
		if (sn && sn->kind == CFG_MAP)
			labsim = sn;
	}
	lab_err_clear(&e);

	s.loop = loop_new();
	for (size_t i = 0; i < s.lab->nboards; i++) {
		struct board_cfg *bc = &s.lab->boards[i];
		bool simulated = bc->sim || (bc->type_name && strcmp(bc->type_name, "sim-board") == 0);
		if (!simulated || !bc->enabled)
			continue;
		struct cfg_node *saved = bc->sim, *merged = NULL;
		if (labsim) {
			merged = bc->sim ? cfg_merge(labsim, bc->sim) : cfg_clone(labsim);
			bc->sim = merged;
		}
		struct sim_board *b = sim_board_new(&s, bc, &e);
		bc->sim = saved;
		if (merged)
			cfg_free(merged);
		if (!b) {
			rc = e.rc ? e.rc : LAB_EUSAGE;
			goto out;
		}
		s.boards = xreallocarray(s.boards, s.nboards + 1, sizeof *s.boards);
		s.boards[s.nboards++] = b;
	}
	if (s.nboards == 0) {
		rc = LAB_ERR(&e, LAB_EUSAGE, "%s: no simulated boards (type sim-board or a sim: block)", lab_path);
		goto out;
	}
	int ports[16];
	size_t nports = 0;
	for (size_t i = 0; i < s.nboards; i++) {
		const struct sim_power_cfg *pw = sim_board_powercfg(s.boards[i]);
		if (strcmp(pw->driver, "pdudaemon") != 0 && strcmp(pw->driver, "tasmota") != 0)
			continue;
		if (strcmp(pw->host, "127.0.0.1") != 0 && strcmp(pw->host, "localhost") != 0) {
			rc = LAB_ERR(&e, LAB_EUSAGE, "board %s: the simulated power API listens on 127.0.0.1 only (url host %s)",
				     sim_board_name(s.boards[i]), pw->host);
			goto out;
		}
		bool seen = false;
		for (size_t k = 0; k < nports; k++)
			seen |= ports[k] == pw->port;
		if (!seen && nports < LAB_ARRAY_SIZE(ports))
			ports[nports++] = pw->port;
	}
	for (size_t i = 0; i < s.nboards; i++)
		if ((rc = sim_board_start(s.boards[i], s.state_dir, &e)) != 0)
			goto out;
	if ((rc = sim_http_start(&s, ports, nports, &s.http, &e)) != 0)
		goto out;
	if ((rc = start_ser2net(&s, &e)) != 0)
		goto out;
	loop_signal(s.loop, SIGTERM, on_signal, NULL);
	loop_signal(s.loop, SIGINT, on_signal, NULL);
	loop_signal(s.loop, SIGHUP, on_signal, NULL);

	char pidbuf[32];
	int pl = snprintf(pidbuf, sizeof pidbuf, "%d\n", (int)getpid());
	if ((rc = lab_write_file_atomic(pidfile, pidbuf, (size_t)pl, &e)) != 0)
		goto out;
	char portbuf[32];
	pl = snprintf(portbuf, sizeof portbuf, "%d\n", nports ? ports[0] : 0);
	if ((rc = lab_write_file_atomic(portfile, portbuf, (size_t)pl, &e)) != 0)
		goto out;

	struct lab_buf msg;
	lab_buf_init(&msg, 65536);
	lab_buf_printf(&msg, "ready pid=%d boards=%zu http=", (int)getpid(), s.nboards);
	for (size_t k = 0; k < nports; k++)
		lab_buf_printf(&msg, "%s127.0.0.1:%d", k ? "," : "", ports[k]);
	lab_buf_printf(&msg, "\n");
	report("%s", lab_buf_cstr(&msg));
	lab_buf_free(&msg);

	loop_run(s.loop);

	/* shutdown: stop ser2net and reap it (bounded) */
	if (s.ser2net_pid > 0 && !ser2net_exited) {
		kill(s.ser2net_pid, SIGTERM);
		struct loop_timer t;
		loop_timer_init(&t, on_stop_timeout, &s);
		/* loop_run returned because of loop_stop; run passes until reaped */
		loop_timer_start(s.loop, &t, 2000);
		uint64_t until = lab_now_ms() + 3000;
		while (!ser2net_exited && lab_now_ms() < until)
			loop_run_once(s.loop, 100);
		loop_timer_stop(s.loop, &t);
	}
	unlink(pidfile);
	unlink(portfile);
out:
	if (rc != LAB_OK)
		report("error: %s%s%s\n", e.msg[0] ? e.msg : lab_strerror(rc), e.where[0] ? " at " : "",
		       e.where);
	if (s.ser2net_pid > 0 && !ser2net_exited) {
		kill(s.ser2net_pid, SIGKILL);
		waitpid(s.ser2net_pid, NULL, 0);
	}
	sim_http_free(s.http);
	for (size_t i = 0; i < s.nboards; i++)
		sim_board_free(s.boards[i]);
	free(s.boards);
	if (s.ser2net_conf) {
		unlink(s.ser2net_conf);
		free(s.ser2net_conf);
	}
	if (root)
		cfg_free(root);
	config_free(s.lab);
	if (s.loop)
		loop_free(s.loop);
	free(s.tx_dirty);
	free(pidfile);
	free(portfile);
	free(s.state_dir);
	return rc == LAB_OK ? 0 : lab_exit_code(rc);
}
