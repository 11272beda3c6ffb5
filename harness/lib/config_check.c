/*
 * config_check.c - configuration that loads but cannot work (see
 * config_check.h).  Each rule is one function over one board (or kernel);
 * the driver facts come from the registries (deploy flags, power driver
 * names), so a new deploy method is checked by its flags without a new rule.
 */
#include "config_check.h"
#include "deploy.h"
#include "power.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_AGENT_PATH "/usr/local/bin/emmclab-agent"

struct ck {
	unsigned flags;
	config_finding_cb cb;
	void *arg;
	int errors;
	const struct board_type **warned; /* types already warned about their agent */
	size_t nwarned;
};

static void say(struct ck *k, enum config_finding kind, const struct cfg_node *at, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));
static void say(struct ck *k, enum config_finding kind, const struct cfg_node *at, const char *fmt,
		...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char full[1100];
	if (at && at->file)
		snprintf(full, sizeof full, "%s:%d:%d: %s%s", at->file, at->line, at->col,
			 kind == CONFIG_WARNING ? "warning: " : "", msg);
	else
		snprintf(full, sizeof full, "%s%s", kind == CONFIG_WARNING ? "warning: " : "", msg);
	if (kind == CONFIG_ERROR)
		k->errors++;
	k->cb(kind, full, k->arg);
}

/* A board's position as a node (boards keep file/line/col, not their node). */
static struct cfg_node board_at(const struct board_cfg *b)
{
	struct cfg_node n = {.kind = CFG_MAP, .file = b->file, .line = b->line, .col = b->col};
	return n;
}

static const char *driver_name(const struct cfg_node *block)
{
	const struct cfg_node *d = block ? cfg_map_get(block, "driver") : NULL;
	return d && d->kind == CFG_SCALAR ? d->value : NULL;
}

static const struct cfg_node *key_or(const struct cfg_node *block, const char *key,
				     const struct cfg_node *fallback)
{
	const struct cfg_node *n = block ? cfg_map_get(block, key) : NULL;
	return n ? n : fallback;
}

static bool has_uboot(const struct board_type *t)
{
	return t && t->uboot.prompt && t->uboot.prompt[0];
}

/* Host files named by the board's power block must exist (qemu: kernel, initrd, bios, qemu). */
static void check_power_files(struct ck *k, const struct board_cfg *b)
{
	static const char *const keys[] = {"kernel", "initrd", "bios"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(keys); i++) {
		const struct cfg_node *v = cfg_map_get(b->power, keys[i]);
		if (v && v->kind == CFG_SCALAR && v->value[0] && access(v->value, R_OK) != 0)
			say(k, CONFIG_ERROR, v, "board %s: power %s %s: cannot read it", b->name, keys[i],
			    v->value);
	}
}

/* The U-Boot of the type against what the deploy method and the power driver do. */
static void check_boot_path(struct ck *k, const struct lab_cfg *c, const struct board_cfg *b)
{
	struct cfg_node at = board_at(b);
	const char *dname = driver_name(b->deploy), *pname = driver_name(b->power);
	const struct deploy_driver *dd = dname ? deploy_driver_find(dname) : NULL;
	unsigned fl = dd ? dd->flags : 0;
	const struct board_type *t = b->type;
	bool qemu = pname && strcmp(pname, "qemu") == 0;
	const struct cfg_node *pk = qemu ? cfg_map_get(b->power, "kernel") : NULL;
	const struct cfg_node *bios = qemu ? cfg_map_get(b->power, "bios") : NULL;
	bool qemu_kernel = (pk && pk->kind == CFG_SCALAR && pk->value[0]) || (fl & DEPLOY_BOOTS);

	if (b->lava) /* LAVA boots it: checked by lava.c when the run starts */
		return;

	if (!b->console)
		say(k, CONFIG_ERROR, &at, "board %s has no console: block: %s", b->name,
		    fl & DEPLOY_AT_UBOOT ? "the deploy method types at the U-Boot prompt" :
					  "nothing can see it boot");
	const char *cname = driver_name(b->console);
	if (cname && strcmp(cname, "tcp") == 0 && !cfg_map_get(b->console, "port") &&
	    !cfg_map_get(b->console, "path"))
		say(k, CONFIG_ERROR, key_or(b->console, "driver", &at),
		    "board %s: console tcp needs port: (or path: for a Unix socket)", b->name);
	if ((fl & DEPLOY_AT_UBOOT) && !has_uboot(t))
		say(k, CONFIG_ERROR, key_or(b->deploy, "driver", &at),
		    "board %s: deploy %s works at the U-Boot prompt, but type %s has no U-Boot "
		    "(give the type a uboot: block with its prompt)",
		    b->name, dname, t ? t->name : "?");
	/* with a deploy that boots, the board does not wait for U-Boot (board.c) */
	if (qemu && has_uboot(t) && pk && pk->kind == CFG_SCALAR && pk->value[0] &&
	    !(fl & (DEPLOY_AT_UBOOT | DEPLOY_BOOTS)))
		say(k, CONFIG_ERROR, pk,
		    "board %s: QEMU boots the kernel itself (-kernel), so the U-Boot prompt of type %s "
		    "never comes: drop the type's uboot: block, or boot U-Boot (bios:) without kernel:",
		    b->name, t->name);
	if (qemu && !qemu_kernel && !(bios && bios->kind == CFG_SCALAR && bios->value[0]) &&
	    !cfg_map_get(b->power, "extra"))
		say(k, CONFIG_WARNING, key_or(b->power, "driver", &at),
		    "board %s: qemu power with no kernel:, no bios:, no extra: and no deploy that boots: "
		    "QEMU's firmware finds nothing to boot", b->name);
	if (qemu && !has_uboot(t) && (fl & DEPLOY_AT_UBOOT) == 0 && bios && !qemu_kernel)
		say(k, CONFIG_WARNING, bios,
		    "board %s: bios: without a kernel, but type %s has no uboot: block: if this "
		    "firmware is U-Boot, describe its prompt so the mode's bootargs reach the kernel",
		    b->name, t ? t->name : "?");
	/* a board that boots by itself from its storage gets no mode command line */
	if (!qemu_kernel && !has_uboot(t) && !(fl & (DEPLOY_AT_UBOOT | DEPLOY_BOOTS)) && t) {
		for (int m = 0; m < MODE_COUNT; m++) {
			if (t->modes[m].supported && t->modes[m].cmdline && t->modes[m].cmdline[0] && c->plan) {
				say(k, CONFIG_WARNING, &at,
				    "board %s: type %s has no U-Boot and the deploy method does not boot: "
				    "mode %s's cmdline cannot reach the kernel",
				    b->name, t->name, lab_mode_names[m]);
				break;
			}
		}
	}
	if (qemu && (k->flags & CONFIG_CHECK_FILES))
		check_power_files(k, b);
	/* what the deploy method needs of the lab's kernels */
	for (size_t i = 0; dd && i < c->nkernels; i++) {
		const struct kernel_cfg *kc = &c->kernels[i];
		const struct cfg_node *kat = kc->node ? kc->node : &at;
		if (strcmp(dd->name, "qemu") == 0 && (!kc->image[0] || !kc->initrd[0]))
			say(k, CONFIG_ERROR, kat,
			    "kernel %s: board %s deploys with qemu, which needs image: and initrd:",
			    kc->name, b->name);
		else if ((fl & DEPLOY_AT_UBOOT) && !kc->image[0])
			say(k, CONFIG_ERROR, kat, "kernel %s: board %s deploys with %s, which needs image:",
			    kc->name, b->name, dd->name);
	}
}

/* Where the agent comes from, for boards a plan runs suites on. */
static void check_agent(struct ck *k, const struct board_cfg *b)
{
	const struct board_type *t = b->type;
	if (!t)
		return;
	const struct cfg_node *sh = t->node ? cfg_map_get(t->node, "shell") : NULL;
	struct cfg_node tat = {.kind = CFG_MAP, .file = t->file, .line = t->line, .col = 1};
	const struct cfg_node *at = t->node ? t->node : &tat;
	const struct cfg_node *ap = key_or(sh, "agent_path", sh ? sh : at);
	const struct cfg_node *al = key_or(sh, "agent_local", sh ? sh : at);
	const struct shell_cfg *s = &t->shell;
	bool sent = s->agent_local && s->agent_local[0];
	if (!s->agent_path || !s->agent_path[0]) {
		say(k, CONFIG_ERROR, ap, "board %s: the plan runs the agent, but type %s has no "
		    "shell.agent_path", b->name, t->name);
		return;
	}
	if (sent && (k->flags & CONFIG_CHECK_FILES) && access(s->agent_local, R_OK) != 0) {
		say(k, CONFIG_ERROR, al, "board %s: shell.agent_local %s: cannot read it", b->name,
		    s->agent_local);
		return;
	}
	for (size_t i = 0; i < k->nwarned; i++)
		if (k->warned[i] == t)
			return; /* once per type */
	if (!sent && !(sh && cfg_map_get(sh, "agent_path"))) {
		k->warned = xreallocarray(k->warned, k->nwarned + 1, sizeof *k->warned);
		k->warned[k->nwarned++] = t;
		say(k, CONFIG_WARNING, at,
		    "board %s (and any other of type %s): the type neither names shell.agent_path nor sends the agent "
		    "(shell.agent_local): it must be at the default %s on the DUT image",
		    b->name, t->name, DEFAULT_AGENT_PATH);
	}
}

static bool plan_selects(const struct lab_cfg *c, const struct board_cfg *b)
{
	const struct plan_cfg *p = c->plan;
	if (!p)
		return false;
	if (p->boards.n == 0)
		return b->enabled;
	for (size_t i = 0; i < p->boards.n; i++) {
		if (strcmp(p->boards.v[i], "all") == 0 || strcmp(p->boards.v[i], b->name) == 0)
			return true;
		for (size_t j = 0; j < b->tags.n; j++)
			if (strcmp(p->boards.v[i], b->tags.v[j]) == 0)
				return true;
	}
	return false;
}

/* Every artefact a kernel names must be on the host. */
static void check_kernel_files(struct ck *k, const struct kernel_cfg *kc)
{
	const char *keys[] = {"image", "initrd", "dtb"};
	const char *vals[] = {kc->image, kc->initrd, kc->dtb};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(keys); i++) {
		if (!vals[i] || !vals[i][0] || access(vals[i], R_OK) == 0)
			continue;
		const struct cfg_node *at = kc->node ? cfg_map_get(kc->node, keys[i]) : NULL;
		say(k, CONFIG_ERROR, at ? at : kc->node, "kernel %s: %s %s: cannot read it", kc->name,
		    keys[i], vals[i]);
	}
}

int config_check(const struct lab_cfg *c, unsigned flags, config_finding_cb cb, void *arg)
{
	struct ck k = {.flags = flags, .cb = cb, .arg = arg};
	for (size_t i = 0; (flags & CONFIG_CHECK_FILES) && i < c->nkernels; i++)
		check_kernel_files(&k, &c->kernels[i]);
	for (size_t i = 0; i < c->nboards; i++) {
		const struct board_cfg *b = &c->boards[i];
		check_boot_path(&k, c, b);
		if (plan_selects(c, b))
			check_agent(&k, b);
	}
	free(k.warned);
	return k.errors;
}
