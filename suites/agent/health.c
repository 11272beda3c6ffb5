/*
 * health.c - the part's wear, read now (docs/agent.md, `health`): EXT_CSD
 * DEVICE_LIFE_TIME_EST_TYP_A [268], _TYP_B [269] and PRE_EOL_INFO [267].
 *
 * The EXT_CSD is read fresh (MMC_IOC_CMD, else debugfs): sysfs life_time and
 * pre_eol_info hold what the kernel read when it initialised the card, so
 * after a night of writes without a reboot they are stale.  sysfs is the
 * fallback, and the line says which source it is.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXT_CSD_REV 192
#define EXT_CSD_PRE_EOL_INFO 267
#define EXT_CSD_LIFE_A 268
#define EXT_CSD_LIFE_B 269

int agent_parse_life_time(const char *s, unsigned *a, unsigned *b)
{
	char *end;
	unsigned long x, y;

	x = strtoul(s, &end, 16);
	if (end == s || (*end != ' ' && *end != '\t'))
		return -1;
	s = end;
	y = strtoul(s, &end, 16);
	if (end == s || *end || x > 255 || y > 255)
		return -1;
	*a = (unsigned)x;
	*b = (unsigned)y;
	return 0;
}

int cmd_health(struct agent *a)
{
	static struct agent_kv k;
	const char *src = "sysfs";
	char buf[64], err[512];
	uint8_t ext[512];

	agent_kv_init(&k);
	if (!a->device[0]) {
		agent_error(a, "no-device", "no eMMC found under /sys/block (use --device)");
		return -1;
	}
	/* JESD84-B50: the fields exist from EXT_CSD revision 7 (eMMC 5.0) */
	if (agent_read_ext_csd(a, ext, &src, err, sizeof(err)) == 0 && ext[EXT_CSD_REV] >= 7) {
		agent_kv_add(&k, "life_a", "%u", ext[EXT_CSD_LIFE_A]);
		agent_kv_add(&k, "life_b", "%u", ext[EXT_CSD_LIFE_B]);
		agent_kv_add(&k, "pre_eol", "%u", ext[EXT_CSD_PRE_EOL_INFO]);
	} else {
		unsigned la, lb;

		src = "sysfs";
		if (agent_readf(a, buf, sizeof(buf), "/sys/block/%s/device/life_time", a->device) > 0 &&
		    agent_parse_life_time(buf, &la, &lb) == 0) {
			agent_kv_add(&k, "life_a", "%u", la);
			agent_kv_add(&k, "life_b", "%u", lb);
		}
		if (agent_readf(a, buf, sizeof(buf), "/sys/block/%s/device/pre_eol_info", a->device) > 0) {
			char *end;
			unsigned long v = strtoul(buf, &end, 0);

			if (end != buf && !*end && v <= 255)
				agent_kv_add(&k, "pre_eol", "%lu", v);
		}
	}
	if (k.n == 0) {
		agent_error(a, "no-health", "%s: no EXT_CSD rev >= 7 and no sysfs life_time/pre_eol_info",
			    a->device);
		return -1;
	}
	agent_kv_add(&k, "device", "%s", a->device);
	agent_kv_add(&k, "src", "%s", src);
	agent_emit(a, "health", k.kv);
	return 0;
}
