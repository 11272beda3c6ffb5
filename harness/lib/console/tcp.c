/*
 * console/tcp.c - a console shared over TCP, as ser2net publishes them:
 *   raw      plain bytes both ways;
 *   telnet   telnet (RFC 854) with BINARY and SUPPRESS-GO-AHEAD negotiated both ways,
 *            IAC parsing in rx (IAC IAC, options, subnegotiations split across reads)
 *            and IAC doubling in tx;
 *   rfc2217  telnet plus COM-PORT-OPTION: once the server says DO COM-PORT-OPTION
 *            we send SET-BAUDRATE / SET-DATASIZE / SET-PARITY / SET-STOPSIZE /
 *            SET-CONTROL for each serial key given (unset keys leave the port as is).
 *
 * Connect is non-blocking (console_connect_pending + the connected hook),
 * bounded by connect_timeout.  The address is resolved once, on the first
 * open (numeric addresses never block; a host name is looked up with
 * getaddrinfo at that moment and cached for later reconnects).
 *
 * TCP_NODELAY is set on the socket before it connects: a shell command is a
 * few small writes, and Nagle plus the peer's delayed ACK holds each one back
 * ~40 ms.  That is only our half: the server's replies are delayed the same
 * way unless the server sets TCP_NODELAY on its side too.  QEMU's socket
 * chardev does not by default; it does with `nodelay=on`, which the qemu
 * power driver passes.  For a console on this host, `path` connects to a
 * Unix stream socket instead (QEMU's -chardev socket,path=): no TCP at all.
 */
#include "console.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum { PROTO_RAW, PROTO_TELNET, PROTO_RFC2217 };

/* telnet */
#define IAC 255
#define DONT 254
#define DO 253
#define WONT 252
#define WILL 251
#define SB 250
#define SE 240
#define OPT_BINARY 0
#define OPT_SGA 3
#define OPT_COMPORT 44
/* RFC 2217 client -> server commands (server answers with +100) */
#define CPO_SET_BAUDRATE 1
#define CPO_SET_DATASIZE 2
#define CPO_SET_PARITY 3
#define CPO_SET_STOPSIZE 4
#define CPO_SET_CONTROL 5

static const char *const proto_names[] = {"raw", "telnet", "rfc2217", NULL};
/* index 0 = leave the remote port's setting alone */
static const char *const tcp_parity_names[] = {"keep", "none", "odd", "even", "mark", "space", NULL};
static const char *const tcp_flow_names[] = {"keep", "none", "xonxoff", "rtscts", "dtrdsr", NULL};

struct tcp_cfg {
	char *host;
	int64_t port;
	char *path;
	int protocol;
	uint64_t connect_timeout_ms;
	int64_t baud;      /* 0 = keep */
	int64_t data_bits; /* 0 = keep */
	int parity;
	int64_t stop_bits; /* 0 = keep */
	int flow;
	/* not options: the address resolved at the first open, kept for reconnects */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool resolved;
};

static const struct opt tcp_opts[] = {
	{.key = "host", .type = OPT_STR, .offset = offsetof(struct tcp_cfg, host),
	 .def = "127.0.0.1", .help = "console server (ser2net) address"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct tcp_cfg, port), .min = 0,
	 .max = 65535, .def = "0", .help = "TCP port of the console (required unless path is set)"},
	{.key = "path", .type = OPT_STR, .offset = offsetof(struct tcp_cfg, path),
	 .help = "a Unix stream socket instead of host:port, e.g. QEMU's -chardev socket,path= "
		 "(local only; no TCP: no Nagle, no per-segment cost)"},
	{.key = "protocol", .type = OPT_ENUM, .offset = offsetof(struct tcp_cfg, protocol),
	 .def = "raw", .choices = proto_names,
	 .help = "raw bytes, telnet, or telnet with RFC 2217 serial port control"},
	{.key = "connect_timeout", .type = OPT_DURATION,
	 .offset = offsetof(struct tcp_cfg, connect_timeout_ms), .def = "5s", .min = 10,
	 .max = 600000, .help = "give up a connection attempt after this long"},
	{.key = "baud", .type = OPT_INT, .offset = offsetof(struct tcp_cfg, baud), .def = "0",
	 .min = 0, .max = 16000000, .help = "rfc2217: baud rate to set (0 = leave as is)"},
	{.key = "data_bits", .type = OPT_INT, .offset = offsetof(struct tcp_cfg, data_bits),
	 .def = "0", .min = 0, .max = 8, .help = "rfc2217: 5..8 (0 = leave as is)"},
	{.key = "parity", .type = OPT_ENUM, .offset = offsetof(struct tcp_cfg, parity),
	 .def = "keep", .choices = tcp_parity_names, .help = "rfc2217: parity to set"},
	{.key = "stop_bits", .type = OPT_INT, .offset = offsetof(struct tcp_cfg, stop_bits),
	 .def = "0", .min = 0, .max = 2, .help = "rfc2217: 1 or 2 (0 = leave as is)"},
	{.key = "flow", .type = OPT_ENUM, .offset = offsetof(struct tcp_cfg, flow), .def = "keep",
	 .choices = tcp_flow_names, .help = "rfc2217: flow control to set"},
	{0},
};

enum tstate { T_DATA, T_CR, T_IAC, T_OPT, T_SB, T_SB_IAC };

struct tcp_priv {
	int fd;
	int unix_err; /* a Unix socket's connect failed at once: reported as an async failure */
	/* telnet */
	enum tstate st;
	unsigned char cmd;
	unsigned char sb[256];
	size_t sblen;
	bool sb_over;
	bool us[256], him[256];         /* option enabled on our / the server's side */
	bool asked_will[256], asked_do[256];
	bool comport_sent;
	uint32_t confirmed[6];          /* server's answers to SET-BAUDRATE..SET-CONTROL (0: none) */
};

/* "host:port" or the socket path, for messages. */
static const char *tcp_where(const struct tcp_cfg *cfg, char *buf, size_t n)
{
	if (cfg->path && cfg->path[0])
		snprintf(buf, n, "%s", cfg->path);
	else
		snprintf(buf, n, "%s:%lld", cfg->host, (long long)cfg->port);
	return buf;
}

static int resolve(struct console *c, struct tcp_cfg *cfg, struct lab_err *e)
{
	if (cfg->resolved)
		return LAB_OK;
	if (cfg->path && cfg->path[0]) {
		struct sockaddr_un *un = (struct sockaddr_un *)&cfg->addr;
		if (strlen(cfg->path) >= sizeof un->sun_path)
			return LAB_ERR(e, LAB_EUSAGE, "%s: console tcp: path %s is too long for a socket",
				       console_board(c), cfg->path);
		memset(&cfg->addr, 0, sizeof cfg->addr);
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, cfg->path, strlen(cfg->path) + 1);
		cfg->addrlen = (socklen_t)sizeof *un;
		cfg->resolved = true;
		return LAB_OK;
	}
	if (cfg->port <= 0)
		return LAB_ERR(e, LAB_EUSAGE, "%s: console tcp: needs port (or path)", console_board(c));
	char port[24];
	snprintf(port, sizeof port, "%lld", (long long)cfg->port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(cfg->host, port, &hints, &res);
	if (rc == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV;
		rc = getaddrinfo(cfg->host, port, &hints, &res);
	}
	if (rc != 0 || !res)
		return LAB_ERR(e, LAB_EINFRA, "%s: console tcp %s:%s: %s", console_board(c), cfg->host,
			       port, gai_strerror(rc));
	memcpy(&cfg->addr, res->ai_addr, res->ai_addrlen);
	cfg->addrlen = res->ai_addrlen;
	cfg->resolved = true;
	freeaddrinfo(res);
	return LAB_OK;
}

static int tcp_open(struct console *c, int *fd, struct lab_err *e)
{
	struct tcp_cfg *cfg = console_cfg(c);
	int rc = resolve(c, cfg, e);
	if (rc)
		return rc;
	struct tcp_priv *p = xcalloc(1, sizeof *p);
	int s = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		free(p);
		return LAB_ERR(e, LAB_EINFRA, "%s: console tcp: socket: %s", console_board(c),
			       strerror(errno));
	}
	int one = 1;
	if (cfg->addr.ss_family != AF_UNIX)
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* typing: no Nagle */
	int cr = connect(s, (struct sockaddr *)&cfg->addr, cfg->addrlen);
	/* a Unix socket not there yet (the server not started) fails at once; like a
	 * refused TCP connect, it is a lost link that the console retries */
	if (cr < 0 && cfg->addr.ss_family == AF_UNIX &&
	    (errno == ENOENT || errno == ECONNREFUSED || errno == EAGAIN))
		p->unix_err = errno; /* EAGAIN: its backlog is full; a Unix connect never completes later */
	else if (cr < 0 && errno != EINPROGRESS) {
		int err = errno;
		char where[300];
		close(s);
		free(p);
		return LAB_ERR(e, LAB_EINFRA, "%s: console tcp %s: %s", console_board(c),
			       tcp_where(cfg, where, sizeof where), strerror(err));
	}
	p->fd = s;
	*console_priv(c) = p;
	console_connect_pending(c, cfg->connect_timeout_ms);
	*fd = s;
	return LAB_OK;
}

static void tcp_close(struct console *c)
{
	struct tcp_priv *p = *console_priv(c);
	if (!p)
		return;
	close(p->fd);
	free(p);
	*console_priv(c) = NULL;
}

static void send3(struct console *c, unsigned char a, unsigned char b, unsigned char d)
{
	unsigned char m[3] = {a, b, d};
	console_write_raw(c, m, 3);
}

static void send_sb(struct console *c, unsigned char cmd, const unsigned char *v, size_t n)
{
	unsigned char m[32];
	size_t k = 0;
	m[k++] = IAC;
	m[k++] = SB;
	m[k++] = OPT_COMPORT;
	m[k++] = cmd;
	for (size_t i = 0; i < n && k < sizeof m - 4; i++) {
		m[k++] = v[i];
		if (v[i] == IAC)
			m[k++] = IAC;
	}
	m[k++] = IAC;
	m[k++] = SE;
	console_write_raw(c, m, k);
}

/* RFC 2217 settings from the serial-style keys that were given. */
static void send_comport(struct console *c)
{
	struct tcp_cfg *cfg = console_cfg(c);
	struct tcp_priv *p = *console_priv(c);
	if (p->comport_sent)
		return;
	p->comport_sent = true;
	if (cfg->baud > 0) {
		uint32_t b = htonl((uint32_t)cfg->baud);
		send_sb(c, CPO_SET_BAUDRATE, (unsigned char *)&b, 4);
	}
	if (cfg->data_bits > 0) {
		unsigned char v = (unsigned char)cfg->data_bits;
		send_sb(c, CPO_SET_DATASIZE, &v, 1);
	}
	if (cfg->parity > 0) {
		unsigned char v = (unsigned char)cfg->parity; /* none=1 odd=2 even=3 mark=4 space=5 */
		send_sb(c, CPO_SET_PARITY, &v, 1);
	}
	if (cfg->stop_bits > 0) {
		unsigned char v = (unsigned char)cfg->stop_bits;
		send_sb(c, CPO_SET_STOPSIZE, &v, 1);
	}
	if (cfg->flow > 0) {
		static const unsigned char out_flow[] = {0, 1, 2, 3, 19};
		unsigned char v = out_flow[cfg->flow];
		send_sb(c, CPO_SET_CONTROL, &v, 1);
		if (cfg->flow == 4) {
			unsigned char in = 18; /* DTR inbound flow control */
			send_sb(c, CPO_SET_CONTROL, &in, 1);
		}
	}
}

static int tcp_connected(struct console *c, struct lab_err *e)
{
	struct tcp_cfg *cfg = console_cfg(c);
	struct tcp_priv *p = *console_priv(c);
	int err = 0;
	socklen_t len = sizeof err;
	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (p->unix_err)
		err = p->unix_err;
	char where[300];
	if (err)
		return LAB_ERR(e, LAB_EINFRA, "%s: console tcp %s: %s", console_board(c),
			       tcp_where(cfg, where, sizeof where), strerror(err));
	if (cfg->protocol == PROTO_RAW)
		return LAB_OK;
	static const unsigned char opts[] = {OPT_BINARY, OPT_SGA};
	for (size_t i = 0; i < sizeof opts; i++) {
		p->asked_will[opts[i]] = p->asked_do[opts[i]] = true;
		send3(c, IAC, WILL, opts[i]);
		send3(c, IAC, DO, opts[i]);
	}
	if (cfg->protocol == PROTO_RFC2217) {
		p->asked_will[OPT_COMPORT] = true;
		send3(c, IAC, WILL, OPT_COMPORT);
	}
	return LAB_OK;
}

static bool we_support(struct tcp_cfg *cfg, unsigned char opt)
{
	return opt == OPT_BINARY || opt == OPT_SGA ||
	       (opt == OPT_COMPORT && cfg->protocol == PROTO_RFC2217);
}

static bool he_may(unsigned char opt)
{
	return opt == OPT_BINARY || opt == OPT_SGA;
}

/* Option negotiation without loops: answer only on a change of state. */
static void negotiate(struct console *c, struct tcp_priv *p, unsigned char cmd, unsigned char opt)
{
	struct tcp_cfg *cfg = console_cfg(c);
	switch (cmd) {
	case WILL:
		if (he_may(opt)) {
			if (!p->him[opt] && !p->asked_do[opt])
				send3(c, IAC, DO, opt);
			p->him[opt] = true;
		} else {
			send3(c, IAC, DONT, opt);
		}
		p->asked_do[opt] = false;
		break;
	case WONT:
		if (p->him[opt] || p->asked_do[opt]) {
			if (p->him[opt])
				send3(c, IAC, DONT, opt);
			p->him[opt] = false;
		}
		p->asked_do[opt] = false;
		break;
	case DO:
		if (we_support(cfg, opt)) {
			if (!p->us[opt] && !p->asked_will[opt])
				send3(c, IAC, WILL, opt);
			p->us[opt] = true;
			if (opt == OPT_COMPORT)
				send_comport(c);
		} else {
			send3(c, IAC, WONT, opt);
		}
		p->asked_will[opt] = false;
		break;
	case DONT:
		if (p->us[opt])
			send3(c, IAC, WONT, opt);
		p->us[opt] = false;
		p->asked_will[opt] = false;
		break;
	}
}

static void subneg(struct tcp_priv *p)
{
	/* Server answers to our COM-PORT-OPTION commands: cmd + 100, then the value it set. */
	if (p->sb_over || p->sblen < 3 || p->sb[0] != OPT_COMPORT)
		return;
	int cmd = p->sb[1] - 100;
	if (cmd == CPO_SET_BAUDRATE && p->sblen >= 6)
		p->confirmed[cmd] = (uint32_t)p->sb[2] << 24 | (uint32_t)p->sb[3] << 16 |
				    (uint32_t)p->sb[4] << 8 | p->sb[5];
	else if (cmd > CPO_SET_BAUDRATE && cmd <= CPO_SET_CONTROL)
		p->confirmed[cmd] = p->sb[2];
}

static size_t tcp_rx(struct console *c, char *buf, size_t n)
{
	struct tcp_cfg *cfg = console_cfg(c);
	struct tcp_priv *p = *console_priv(c);
	if (cfg->protocol == PROTO_RAW)
		return n;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)buf[i];
		switch (p->st) {
		case T_CR:
			p->st = T_DATA;
			if (b == 0 && !p->him[OPT_BINARY])
				break; /* CR NUL means CR */
			/* fall through */
		case T_DATA:
			if (b == IAC) {
				p->st = T_IAC;
			} else {
				buf[o++] = (char)b;
				if (b == '\r')
					p->st = T_CR;
			}
			break;
		case T_IAC:
			if (b == IAC) {
				buf[o++] = (char)IAC;
				p->st = T_DATA;
			} else if (b >= WILL && b <= DONT) {
				p->cmd = b;
				p->st = T_OPT;
			} else if (b == SB) {
				p->sblen = 0;
				p->sb_over = false;
				p->st = T_SB;
			} else {
				p->st = T_DATA; /* NOP, GA, AYT...: nothing to do */
			}
			break;
		case T_OPT:
			negotiate(c, p, p->cmd, b);
			p->st = T_DATA;
			break;
		case T_SB:
			if (b == IAC) {
				p->st = T_SB_IAC;
			} else if (p->sblen < sizeof p->sb) {
				p->sb[p->sblen++] = b;
			} else {
				p->sb_over = true;
			}
			break;
		case T_SB_IAC:
			if (b == SE) {
				subneg(p);
				p->st = T_DATA;
			} else if (b == IAC) {
				if (p->sblen < sizeof p->sb)
					p->sb[p->sblen++] = IAC;
				p->st = T_SB;
			} else {
				/* IAC x inside SB without SE: end the SB, treat as a command */
				subneg(p);
				p->st = T_IAC;
				i--;
			}
			break;
		}
	}
	return o;
}

static char *tcp_tx(struct console *c, const char *buf, size_t n, size_t *outn)
{
	struct tcp_cfg *cfg = console_cfg(c);
	struct tcp_priv *p = *console_priv(c);
	char *out = xmalloc(2 * n + 1);
	if (cfg->protocol == PROTO_RAW) {
		memcpy(out, buf, n);
		*outn = n;
		return out;
	}
	bool binary = p && p->us[OPT_BINARY];
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)buf[i];
		out[o++] = (char)b;
		if (b == IAC)
			out[o++] = (char)IAC;
		else if (b == '\r' && !binary && (i + 1 == n || buf[i + 1] != '\n'))
			out[o++] = '\0'; /* NVT: a bare CR is sent as CR NUL */
	}
	*outn = o;
	return out;
}

uint32_t console_tcp_comport(struct console *c, int cmd)
{
	if (console_get_driver(c)->open != tcp_open || cmd < 1 || cmd > CPO_SET_CONTROL)
		return 0;
	struct tcp_priv *p = *console_priv(c);
	return p ? p->confirmed[cmd] : 0;
}

const struct console_driver console_tcp = {
	.name = "tcp",
	.version = CONSOLE_OPS_VERSION,
	.help = "TCP console server (ser2net): raw, telnet or telnet with RFC 2217",
	.options = tcp_opts,
	.cfg_size = sizeof(struct tcp_cfg),
	.open = tcp_open,
	.close = tcp_close,
	.rx_filter = tcp_rx,
	.tx_filter = tcp_tx,
	.connected = tcp_connected,
};
