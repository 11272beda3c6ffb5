/*
 * power/shelly.c - Shelly relays over HTTP.
 * Gen1: GET <url>/relay/<ch>?turn=on|off -> {"ison":true|false,...}; state GET <url>/relay/<ch>.
 * Gen2/Plus/Pro: GET <url>/rpc/Switch.Set?id=<ch>&on=true|false, then
 * GET <url>/rpc/Switch.GetStatus?id=<ch> -> {"output":true|false,...} (also the state query).
 * The resulting state is always read back and checked.  user/password_env:
 * HTTP basic (Gen1) or digest (Gen2) authentication.
 */
#include "httppower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shelly_cfg {
	char *url;
	int64_t gen;
	int64_t channel;
	char *user;
	char *password_env;
	int64_t retries;
};

static const struct opt shelly_opts[] = {
	{.key = "url", .type = OPT_STR, .offset = offsetof(struct shelly_cfg, url),
	 .flags = OPT_REQUIRED, .help = "device base URL"},
	{.key = "gen", .type = OPT_INT, .offset = offsetof(struct shelly_cfg, gen), .def = "1",
	 .min = 1, .max = 2, .help = "API generation: 1 (relay/) or 2 (rpc/Switch.*, also Plus/Pro)"},
	{.key = "channel", .type = OPT_INT, .offset = offsetof(struct shelly_cfg, channel), .def = "0",
	 .min = 0, .max = 15, .help = "relay/switch id"},
	{.key = "user", .type = OPT_STR, .offset = offsetof(struct shelly_cfg, user),
	 .help = "user for HTTP authentication (Gen2: admin)"},
	{.key = "password_env", .type = OPT_STR, .offset = offsetof(struct shelly_cfg, password_env),
	 .help = "environment variable holding the password"},
	{.key = "retries", .type = OPT_INT, .offset = offsetof(struct shelly_cfg, retries), .def = "2",
	 .min = 0, .max = 10, .help = "retries on connect errors, 5xx and timeouts"},
	{0},
};

struct shelly {
	struct httppower hp;
	int gen;
	int ch;
	enum power_op op;
};

static int shelly_init(struct power *p, struct lab_err *e)
{
	struct shelly_cfg *c = p->cfg;
	struct shelly *d = xcalloc(1, sizeof *d);
	int rc = httppower_init(&d->hp, p, c->url, c->user, c->password_env, (int)c->retries, e);
	if (rc) {
		free(d);
		return rc;
	}
	d->gen = (int)c->gen;
	d->ch = (int)c->channel;
	p->priv = d;
	return LAB_OK;
}

static void shelly_fini(struct power *p)
{
	struct shelly *d = p->priv;
	if (!d)
		return;
	httppower_fini(&d->hp);
	free(d);
}

/* Check the state read back ("true"/"false") against the operation. */
static void shelly_state(struct shelly *d, const char *key, const char *v)
{
	struct httppower *hp = &d->hp;
	int state;
	if (strcmp(v, "true") == 0)
		state = POWER_IS_ON;
	else if (strcmp(v, "false") == 0)
		state = POWER_IS_OFF;
	else {
		httppower_fail(hp, LAB_EPROTO, "%s: '%s' is '%s', not true or false", hp->what, key, v);
		return;
	}
	if ((d->op == POWER_ON && state != POWER_IS_ON) || (d->op == POWER_OFF && state != POWER_IS_OFF)) {
		httppower_fail(hp, LAB_EINFRA, "%s: relay reports %s=%s afterwards", hp->what, key, v);
		return;
	}
	power_complete(hp->p, LAB_OK, state, NULL);
}

static void gen1_answer(struct httppower *hp, const struct http_result *res)
{
	char v[16];
	if (httppower_json(hp, res, "ison", v, sizeof v))
		shelly_state((struct shelly *)hp, "ison", v);
}

static void gen2_status(struct httppower *hp, const struct http_result *res)
{
	char v[16];
	if (httppower_json(hp, res, "output", v, sizeof v))
		shelly_state((struct shelly *)hp, "output", v);
}

static void gen2_query(struct shelly *d)
{
	char path[128], what[64];
	snprintf(path, sizeof path, "/rpc/Switch.GetStatus?id=%d", d->ch);
	snprintf(what, sizeof what, "Switch.GetStatus id=%d", d->ch);
	httppower_send(&d->hp, what, "GET", path, 0, gen2_status);
}

static void gen2_set(struct httppower *hp, const struct http_result *res)
{
	char v[16];
	/* The answer is {"was_on":..}: a JSON check catches a wrong device or an error page. */
	if (httppower_json(hp, res, "was_on", v, sizeof v))
		gen2_query((struct shelly *)hp);
}

static int shelly_start(struct power *p, enum power_op op)
{
	struct shelly *d = p->priv;
	char path[128], what[64];
	d->op = op;
	if (op == POWER_CYCLE)
		return LAB_EUSAGE; /* power.c runs off, off_time, on */
	bool set = op == POWER_ON || op == POWER_OFF;
	if (d->gen == 1) {
		if (set) {
			snprintf(path, sizeof path, "/relay/%d?turn=%s", d->ch, op == POWER_ON ? "on" : "off");
			snprintf(what, sizeof what, "relay %d turn=%s", d->ch, op == POWER_ON ? "on" : "off");
		} else {
			snprintf(path, sizeof path, "/relay/%d", d->ch);
			snprintf(what, sizeof what, "relay %d (state)", d->ch);
		}
		httppower_send(&d->hp, what, "GET", path, 0, gen1_answer);
	} else if (set) {
		const char *on = op == POWER_ON ? "true" : "false";
		snprintf(path, sizeof path, "/rpc/Switch.Set?id=%d&on=%s", d->ch, on);
		snprintf(what, sizeof what, "Switch.Set id=%d on=%s", d->ch, on);
		httppower_send(&d->hp, what, "GET", path, 0, gen2_set);
	} else {
		gen2_query(d);
	}
	return LAB_OK;
}

static void shelly_cancel(struct power *p)
{
	struct shelly *d = p->priv;
	httppower_cancel(&d->hp);
}

const struct power_driver power_shelly = {
	.name = "shelly",
	.version = POWER_OPS_VERSION,
	.help = "a Shelly relay over HTTP (Gen1 relay/ or Gen2 rpc/Switch.*), state read back",
	.options = shelly_opts,
	.cfg_size = sizeof(struct shelly_cfg),
	.init = shelly_init,
	.fini = shelly_fini,
	.start = shelly_start,
	.cancel = shelly_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
