/*
 * power/esphome.c - an ESPHome switch over its web_server REST API:
 * POST <url>/switch/<id>/turn_on|turn_off, then GET <url>/switch/<id> ->
 * {"id":"switch-<id>","state":"ON"|"OFF","value":true|false} to check the
 * result (also the state query).  user/password_env: HTTP basic or digest
 * authentication (web_server auth:).
 */
#include "httppower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct esphome_cfg {
	char *url;
	char *sw;
	char *user;
	char *password_env;
	int64_t retries;
};

static const struct opt esphome_opts[] = {
	{.key = "url", .type = OPT_STR, .offset = offsetof(struct esphome_cfg, url),
	 .flags = OPT_REQUIRED, .help = "device base URL"},
	{.key = "switch", .type = OPT_STR, .offset = offsetof(struct esphome_cfg, sw),
	 .flags = OPT_REQUIRED, .help = "switch object id (as in /switch/<id>)"},
	{.key = "user", .type = OPT_STR, .offset = offsetof(struct esphome_cfg, user),
	 .help = "web_server auth user"},
	{.key = "password_env", .type = OPT_STR, .offset = offsetof(struct esphome_cfg, password_env),
	 .help = "environment variable holding the web_server password"},
	{.key = "retries", .type = OPT_INT, .offset = offsetof(struct esphome_cfg, retries),
	 .def = "2", .min = 0, .max = 10, .help = "retries on connect errors, 5xx and timeouts"},
	{0},
};

struct esphome {
	struct httppower hp;
	char *id; /* escaped */
	enum power_op op;
};

static int esphome_init(struct power *p, struct lab_err *e)
{
	struct esphome_cfg *c = p->cfg;
	if (!c->sw || !c->sw[0])
		return lab_err_set(e, LAB_EUSAGE, "board %s: esphome power: 'switch' is empty", p->board);
	struct esphome *d = xcalloc(1, sizeof *d);
	int rc = httppower_init(&d->hp, p, c->url, c->user, c->password_env, (int)c->retries, e);
	if (rc) {
		free(d);
		return rc;
	}
	d->id = http_escape(c->sw);
	p->priv = d;
	return LAB_OK;
}

static void esphome_fini(struct power *p)
{
	struct esphome *d = p->priv;
	if (!d)
		return;
	httppower_fini(&d->hp);
	free(d->id);
	free(d);
}

static void esphome_status(struct httppower *hp, const struct http_result *res)
{
	struct esphome *d = (struct esphome *)hp;
	char v[16];
	if (!httppower_json(hp, res, "state", v, sizeof v))
		return;
	int state;
	if (strcasecmp(v, "ON") == 0)
		state = POWER_IS_ON;
	else if (strcasecmp(v, "OFF") == 0)
		state = POWER_IS_OFF;
	else {
		httppower_fail(hp, LAB_EPROTO, "%s: state is '%s', not ON or OFF", hp->what, v);
		return;
	}
	if ((d->op == POWER_ON && state != POWER_IS_ON) || (d->op == POWER_OFF && state != POWER_IS_OFF)) {
		httppower_fail(hp, LAB_EINFRA, "switch %s reports %s after turn_%s", d->id, v,
			       d->op == POWER_ON ? "on" : "off");
		return;
	}
	power_complete(hp->p, LAB_OK, state, NULL);
}

static void esphome_query(struct esphome *d)
{
	char path[256], what[64];
	snprintf(path, sizeof path, "/switch/%s", d->id);
	snprintf(what, sizeof what, "GET switch/%.40s", d->id);
	httppower_send(&d->hp, what, "GET", path, 0, esphome_status);
}

static void esphome_set(struct httppower *hp, const struct http_result *res)
{
	LAB_UNUSED(res);
	esphome_query((struct esphome *)hp);
}

static int esphome_start(struct power *p, enum power_op op)
{
	struct esphome *d = p->priv;
	char path[256], what[64];
	d->op = op;
	if (op == POWER_CYCLE)
		return LAB_EUSAGE; /* power.c runs off, off_time, on */
	if (op == POWER_STATE) {
		esphome_query(d);
		return LAB_OK;
	}
	const char *act = op == POWER_ON ? "turn_on" : "turn_off";
	snprintf(path, sizeof path, "/switch/%s/%s", d->id, act);
	snprintf(what, sizeof what, "POST switch/%.30s/%s", d->id, act);
	httppower_send(&d->hp, what, "POST", path, 0, esphome_set);
	return LAB_OK;
}

static void esphome_cancel(struct power *p)
{
	struct esphome *d = p->priv;
	httppower_cancel(&d->hp);
}

const struct power_driver power_esphome = {
	.name = "esphome",
	.version = POWER_OPS_VERSION,
	.help = "an ESPHome switch over its REST API, state read back",
	.options = esphome_opts,
	.cfg_size = sizeof(struct esphome_cfg),
	.init = esphome_init,
	.fini = esphome_fini,
	.start = esphome_start,
	.cancel = esphome_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
