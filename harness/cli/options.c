/* options.c - getopt_long driven by a command's option table (see cli.h). */
#include "cli.h"

#include <assert.h>
#include <string.h>

static const struct cli_opt help_opt = {"help", 'h', NULL, "show this help and exit", 0};

size_t cli_opts_all(const struct cli_opt *opts, const struct cli_opt **out, size_t max)
{
	size_t n = 0;
	bool has_help = false;
	for (const struct cli_opt *o = opts; o && o->name && n < max; o++) {
		if (strcmp(o->name, "help") == 0)
			has_help = true;
		out[n++] = o;
	}
	if (!has_help && n < max)
		out[n++] = &help_opt;
	return n;
}

const char *cli_opt_spec(char *buf, size_t n, const struct cli_opt *o)
{
	char sh[8] = "";
	if (o->val > 0 && o->val < CLI_LONG_ONLY)
		snprintf(sh, sizeof sh, "-%c, ", o->val);
	if (!o->arg)
		snprintf(buf, n, "%s--%s", sh, o->name);
	else if (o->flags & CLI_OPTIONAL)
		snprintf(buf, n, "%s--%s[=%s]", sh, o->name, o->arg);
	else
		snprintf(buf, n, "%s--%s %s", sh, o->name, o->arg);
	return buf;
}

void cli_getopt_init(struct cli_getopt *g, const char *cmd)
{
	memset(g, 0, sizeof *g);
	g->cmd = cli_find_cmd(cmd);
	assert(g->cmd);
	const struct cli_opt *all[CLI_MAX_OPTS + 1];
	size_t n = cli_opts_all(g->cmd->opts, all, LAB_ARRAY_SIZE(all));
	assert(n <= CLI_MAX_OPTS);
	/* ':' first: a missing argument is told apart from an unknown option. */
	size_t k = 0;
	g->shortopts[k++] = ':';
	for (size_t i = 0; i < n; i++) {
		const struct cli_opt *o = all[i];
		int has_arg = !o->arg                     ? no_argument
			      : (o->flags & CLI_OPTIONAL) ? optional_argument
							  : required_argument;
		g->longopts[i] = (struct option){o->name, has_arg, NULL, o->val};
		if (o->val > 0 && o->val < CLI_LONG_ONLY) {
			g->shortopts[k++] = (char)o->val;
			if (has_arg != no_argument)
				g->shortopts[k++] = ':';
			if (has_arg == optional_argument)
				g->shortopts[k++] = ':';
		}
	}
	g->shortopts[k] = '\0';
	optind = 1;
	opterr = 0;
}

/* For "did you mean": the long name the word abbreviates, else the nearest one. */
static const char *nearest(const struct cli_getopt *g, const char *word, size_t len)
{
	char name[64];
	snprintf(name, sizeof name, "%.*s", (int)len, word);
	for (const struct option *o = g->longopts; o->name; o++)
		if (strncmp(o->name, name, len) == 0)
			return o->name;
	const char *best = NULL;
	int bd = 3;
	for (const struct option *o = g->longopts; o->name; o++) {
		int d = lab_edit_distance(name, o->name);
		if (d < bd) {
			bd = d;
			best = o->name;
		}
	}
	return best;
}

static int unknown(const struct cli_getopt *g, const char *word)
{
	size_t len = strcspn(word + 2, "=");
	const char *best = nearest(g, word + 2, len);
	if (best && strlen(best) == len && strncmp(best, word + 2, len) == 0) /* --flag=VALUE */
		fprintf(stderr, "emmclab: %s: option '--%s' takes no argument\n", g->cmd->name,
			best);
	else
		fprintf(stderr, "emmclab: %s: unknown option '%.*s'%s%s%s\n", g->cmd->name,
			(int)len + 2, word, best ? " (did you mean '--" : "", best ? best : "",
			best ? "'?)" : "");
	return '?';
}

/* Is "--name[=value]" spelled as a long name of the table? */
static bool exact(const struct cli_getopt *g, const char *word)
{
	size_t len = strcspn(word + 2, "=");
	for (const struct option *o = g->longopts; o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, word + 2, len) == 0)
			return true;
	return false;
}

int cli_getopt(struct cli_getopt *g, int argc, char **argv)
{
	int idx = -1;
	int c = getopt_long(argc, argv, g->shortopts, g->longopts, &idx);
	if (idx >= 0 && c != '?' && c != ':') {
		/* getopt_long takes any unambiguous prefix; we take only what help lists. */
		const char *word =
			optarg && optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
		if (!exact(g, word))
			return unknown(g, word);
	}
	if (c == 'h') {
		cli_help(stdout, g->cmd);
		g->help_shown = true;
		return c;
	}
	if (c == '?' || c == ':') {
		/* A long option is the word itself; a short one may sit in a cluster (-qx). */
		const char *word = argv[optind - 1];
		if (strncmp(word, "--", 2) == 0 && (c == '?' || !exact(g, word)))
			return unknown(g, word);
		char sh[3] = {'-', (char)optopt, '\0'};
		if (strncmp(word, "--", 2) != 0)
			word = sh;
		fprintf(stderr, "emmclab: %s: %s '%s'%s\n", g->cmd->name,
			c == ':' ? "option" : "unknown option", word,
			c == ':' ? " needs an argument" : "");
		return '?';
	}
	return c;
}

int cli_getopt_fail(const struct cli_getopt *g)
{
	if (g->help_shown)
		return 0;
	return cli_usage(g->cmd->name);
}
