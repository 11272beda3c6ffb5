/*
 * agent_cmds.c - the argument check of the agent contract (agent_cmds.h).
 */
#include "agent_cmds.h"

#include <string.h>

bool agent_cmd_key_allowed(const char *keys, const char *arg)
{
	const char *eq = strchr(arg, '='), *p = keys;
	size_t kl;

	if (!eq || eq == arg)
		return false;
	kl = (size_t)(eq - arg);
	while (*p) {
		size_t l = strcspn(p, " ");

		if (l == kl && strncmp(p, arg, kl) == 0)
			return true;
		p += l;
		while (*p == ' ')
			p++;
	}
	return false;
}
