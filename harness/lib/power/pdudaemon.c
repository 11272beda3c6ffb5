/*
 * power/pdudaemon.c - a port of a PDU behind pdudaemon's HTTP listener:
 * GET <url>/power/control/{on|off|reboot}?hostname=H&port=N (or ?alias=A).
 * 200 means pdudaemon took the request.  pdudaemon (0.0.8 in Debian 12) runs
 * the PDU action before answering; other versions may queue it and answer
 * first, in which case the switching delay is the PDU's and not seen here.
 * No state query exists.  The native cycle is "reboot" with delay= set from
 * off_time (whole seconds, rounded up), so the plug stays off long enough.
 */
#include "httppower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pdu_cfg {
	char *url;
	char *hostname;
	int64_t port;
	char *alias;
	int64_t retries;
};

static const struct opt pdu_opts[] = {
	{.key = "url", .type = OPT_STR, .offset = offsetof(struct pdu_cfg, url),
	 .def = "http://127.0.0.1:16421", .help = "pdudaemon HTTP listener"},
	{.key = "hostname", .type = OPT_STR, .offset = offsetof(struct pdu_cfg, hostname),
	 .help = "PDU name in pdudaemon.conf (with port; or use alias)"},
	{.key = "port", .type = OPT_INT, .offset = offsetof(struct pdu_cfg, port), .def = "-1",
	 .min = -1, .max = 65535, .help = "outlet number on the PDU"},
	{.key = "alias", .type = OPT_STR, .offset = offsetof(struct pdu_cfg, alias),
	 .help = "pdudaemon alias (instead of hostname and port)"},
	{.key = "retries", .type = OPT_INT, .offset = offsetof(struct pdu_cfg, retries), .def = "2",
	 .min = 0, .max = 10, .help = "retries on connect errors, 5xx and timeouts"},
	{0},
};

struct pdu {
	struct httppower hp; /* first: the callbacks get &pdu->hp */
	char *target;        /* "hostname=..&port=.." or "alias=.." */
	enum power_op op;
};

static int pdu_init(struct power *p, struct lab_err *e)
{
	struct pdu_cfg *c = p->cfg;
	bool has_host = c->hostname && c->hostname[0];
	bool has_alias = c->alias && c->alias[0];
	if (has_alias && (has_host || c->port >= 0))
		return lab_err_set(e, LAB_EUSAGE,
				   "board %s: pdudaemon power: give either alias or hostname and port, not both",
				   p->board);
	if (!has_alias && (!has_host || c->port < 0))
		return lab_err_set(e, LAB_EUSAGE,
				   "board %s: pdudaemon power: hostname and port are required (or alias)",
				   p->board);
	struct pdu *d = xcalloc(1, sizeof *d);
	int rc = httppower_init(&d->hp, p, c->url, NULL, NULL, (int)c->retries, e);
	if (rc) {
		free(d);
		return rc;
	}
	if (has_alias) {
		char *a = http_escape(c->alias);
		d->target = xasprintf("alias=%s", a);
		free(a);
		free(p->device);
		p->device = xasprintf("pdudaemon power of %s (%s alias %s)", p->board, d->hp.base,
				      c->alias);
	} else {
		char *h = http_escape(c->hostname);
		d->target = xasprintf("hostname=%s&port=%lld", h, (long long)c->port);
		free(h);
		free(p->device);
		p->device = xasprintf("pdudaemon power of %s (%s %s port %lld)", p->board, d->hp.base,
				      c->hostname, (long long)c->port);
	}
	p->priv = d;
	return LAB_OK;
}

static void pdu_fini(struct power *p)
{
	struct pdu *d = p->priv;
	if (!d)
		return;
	httppower_fini(&d->hp);
	free(d->target);
	free(d);
}

static void pdu_answer(struct httppower *hp, const struct http_result *res)
{
	LAB_UNUSED(res);
	struct pdu *d = (struct pdu *)hp;
	power_complete(hp->p, LAB_OK, d->op == POWER_OFF ? POWER_IS_OFF : POWER_IS_ON, NULL);
}

static int pdu_start(struct power *p, enum power_op op)
{
	struct pdu *d = p->priv;
	const char *req = op == POWER_ON ? "on" : op == POWER_OFF ? "off" : "reboot";
	char path[512];
	uint64_t extra = 0;
	d->op = op;
	if (op == POWER_STATE)
		return LAB_EUSAGE; /* power.c never asks: can_read_state is false */
	if (op == POWER_CYCLE) {
		/* pdudaemon sleeps `delay` seconds between off and on before it answers. */
		uint64_t delay = (p->off_time_ms + 999) / 1000;
		snprintf(path, sizeof path, "/power/control/reboot?%s&delay=%llu", d->target,
			 (unsigned long long)delay);
		extra = delay * 1000;
		d->hp.retry_timeouts = false; /* a retried reboot would cycle twice */
	} else {
		snprintf(path, sizeof path, "/power/control/%s?%s", req, d->target);
		d->hp.retry_timeouts = true;
	}
	httppower_send(&d->hp, req, "GET", path, extra, pdu_answer);
	return LAB_OK;
}

static void pdu_cancel(struct power *p)
{
	struct pdu *d = p->priv;
	httppower_cancel(&d->hp);
}

const struct power_driver power_pdudaemon = {
	.name = "pdudaemon",
	.version = POWER_OPS_VERSION,
	.help = "an outlet of a PDU driven by pdudaemon (HTTP listener)",
	.options = pdu_opts,
	.cfg_size = sizeof(struct pdu_cfg),
	.init = pdu_init,
	.fini = pdu_fini,
	.start = pdu_start,
	.cancel = pdu_cancel,
	.native_cycle = true,
	.can_read_state = false,
};
