/*
 * power/tasmota.c - a Tasmota plug/relay over its HTTP command API:
 * GET <url>/cm?cmnd=Power[N]%20On|Off -> {"POWER[N]":"ON"|"OFF"}; state with
 * cmnd=Power[N].  The answer is checked against what was asked.  relay 0
 * means the single relay (`Power`); N > 0 means `PowerN` (single-relay
 * firmware answers POWER for Power1: both keys are accepted).  Web
 * credentials go in the query (user=&password=), as Tasmota expects.
 */
#include "httppower.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tasmota_cfg {
	char *url;
	int64_t relay;
	char *user;
	char *password_env;
	int64_t retries;
};

static const struct opt tasmota_opts[] = {
	{.key = "url", .type = OPT_STR, .offset = offsetof(struct tasmota_cfg, url),
	 .flags = OPT_REQUIRED, .help = "device base URL (may include a path prefix)"},
	{.key = "relay", .type = OPT_INT, .offset = offsetof(struct tasmota_cfg, relay), .def = "0",
	 .min = 0, .max = 32, .help = "0: the single relay (Power); N: PowerN"},
	{.key = "user", .type = OPT_STR, .offset = offsetof(struct tasmota_cfg, user),
	 .help = "web user (when the device has a web password)"},
	{.key = "password_env", .type = OPT_STR, .offset = offsetof(struct tasmota_cfg, password_env),
	 .help = "environment variable holding the web password"},
	{.key = "retries", .type = OPT_INT, .offset = offsetof(struct tasmota_cfg, retries),
	 .def = "2", .min = 0, .max = 10, .help = "retries on connect errors, 5xx and timeouts"},
	{0},
};

struct tasmota {
	struct httppower hp;
	char cmd[32];  /* "Power" or "PowerN" */
	char key[32];  /* "POWER" or "POWERN" */
	char *auth;    /* "user=..&password=..&" or "" */
	enum power_op op;
};

static int tasmota_init(struct power *p, struct lab_err *e)
{
	struct tasmota_cfg *c = p->cfg;
	struct tasmota *d = xcalloc(1, sizeof *d);
	int rc = httppower_init(&d->hp, p, c->url, c->user, c->password_env, (int)c->retries, e);
	if (rc) {
		free(d);
		return rc;
	}
	d->hp.query_auth = true;
	if (c->relay > 0) {
		snprintf(d->cmd, sizeof d->cmd, "Power%lld", (long long)c->relay);
		snprintf(d->key, sizeof d->key, "POWER%lld", (long long)c->relay);
	} else {
		lab_strlcpy(d->cmd, "Power", sizeof d->cmd);
		lab_strlcpy(d->key, "POWER", sizeof d->key);
	}
	if (d->hp.user) {
		char *u = http_escape(d->hp.user);
		char *pw = http_escape(d->hp.password ? d->hp.password : "");
		d->auth = xasprintf("user=%s&password=%s&", u, pw);
		free(u);
		free(pw);
	} else {
		d->auth = xstrdup("");
	}
	p->priv = d;
	return LAB_OK;
}

static void tasmota_fini(struct power *p)
{
	struct tasmota *d = p->priv;
	if (!d)
		return;
	httppower_fini(&d->hp);
	free(d->auth);
	free(d);
}

static void tasmota_answer(struct httppower *hp, const struct http_result *res)
{
	struct tasmota *d = (struct tasmota *)hp;
	char v[32];
	struct lab_err e = {0};
	int rc = json_get(res->body, res->body_len, d->key, v, sizeof v, &e);
	/* Single-relay firmware answers "POWER" to Power1 (and some builds "POWER1" to Power). */
	if (rc && strcmp(d->key, "POWER1") == 0)
		rc = json_get(res->body, res->body_len, "POWER", v, sizeof v, NULL);
	else if (rc && strcmp(d->key, "POWER") == 0)
		rc = json_get(res->body, res->body_len, "POWER1", v, sizeof v, NULL);
	if (rc && !httppower_json(hp, res, d->key, v, sizeof v))
		return;
	int state;
	if (strcasecmp(v, "ON") == 0 || strcmp(v, "1") == 0)
		state = POWER_IS_ON;
	else if (strcasecmp(v, "OFF") == 0 || strcmp(v, "0") == 0)
		state = POWER_IS_OFF;
	else {
		httppower_fail(hp, LAB_EPROTO, "%s: %s is '%s', not ON or OFF", hp->what, d->key, v);
		return;
	}
	if ((d->op == POWER_ON && state != POWER_IS_ON) || (d->op == POWER_OFF && state != POWER_IS_OFF)) {
		httppower_fail(hp, LAB_EINFRA, "%s: relay reports %s afterwards", hp->what, v);
		return;
	}
	power_complete(hp->p, LAB_OK, state, NULL);
}

static int tasmota_start(struct power *p, enum power_op op)
{
	struct tasmota *d = p->priv;
	char path[512], what[64];
	d->op = op;
	if (op == POWER_CYCLE)
		return LAB_EUSAGE; /* no native cycle: power.c runs off, off_time, on */
	const char *arg = op == POWER_ON ? "On" : op == POWER_OFF ? "Off" : NULL;
	if (arg) {
		snprintf(path, sizeof path, "/cm?%scmnd=%s%%20%s", d->auth, d->cmd, arg);
		snprintf(what, sizeof what, "%s %s", d->cmd, arg);
	} else {
		snprintf(path, sizeof path, "/cm?%scmnd=%s", d->auth, d->cmd);
		snprintf(what, sizeof what, "%s (state)", d->cmd);
	}
	httppower_send(&d->hp, what, "GET", path, 0, tasmota_answer);
	return LAB_OK;
}

static void tasmota_cancel(struct power *p)
{
	struct tasmota *d = p->priv;
	httppower_cancel(&d->hp);
}

const struct power_driver power_tasmota = {
	.name = "tasmota",
	.version = POWER_OPS_VERSION,
	.help = "a Tasmota relay over HTTP (cm?cmnd=Power...), state read back",
	.options = tasmota_opts,
	.cfg_size = sizeof(struct tasmota_cfg),
	.init = tasmota_init,
	.fini = tasmota_fini,
	.start = tasmota_start,
	.cancel = tasmota_cancel,
	.native_cycle = false,
	.can_read_state = true,
};
