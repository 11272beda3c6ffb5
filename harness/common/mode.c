/*
 * mode.c - the mode table (mode.h) and the rules that read it.
 */
#include "mode.h"

#include <stdio.h>
#include <string.h>

#define LAB_MODE_ROW_(id, n, f, w, c, a, h)                                                        \
	[id] = {.name = n, .fua = f, .write_cache = w, .cqe = c, .abbrev = a, .help = h},
const struct lab_mode_info lab_modes[MODE_COUNT] = {LAB_MODES(LAB_MODE_ROW_)};
#undef LAB_MODE_ROW_

#define LAB_MODE_NAME_(id, n, f, w, c, a, h) [id] = n,
const char *const lab_mode_names[MODE_COUNT + 1] = {LAB_MODES(LAB_MODE_NAME_) NULL};
#undef LAB_MODE_NAME_

#define LAB_WORKLOAD_ROW_(n, c, f, r) {.name = n, .counted = c, .fua = f, .reason = r},
static const struct agent_workload workloads[] = {AGENT_WORKLOADS(LAB_WORKLOAD_ROW_)};
#undef LAB_WORKLOAD_ROW_

const struct agent_workload *agent_workload_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof workloads / sizeof workloads[0]; i++)
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	return NULL;
}

int lab_mode_parse(const char *s)
{
	for (int i = 0; s && i < MODE_COUNT; i++)
		if (strcmp(s, lab_modes[i].name) == 0)
			return i;
	return -1;
}

const char *lab_mode_name(int mode)
{
	return mode >= 0 && mode < MODE_COUNT ? lab_modes[mode].name : NULL;
}

bool lab_mode_fua(int mode)
{
	return mode >= 0 && mode < MODE_COUNT && lab_modes[mode].fua;
}

bool lab_mode_cqe(int mode)
{
	return mode >= 0 && mode < MODE_COUNT && lab_modes[mode].cqe;
}

static int find(bool fua, bool write_cache, bool cqe)
{
	for (int i = 0; i < MODE_COUNT; i++)
		if (lab_modes[i].fua == fua && lab_modes[i].write_cache == write_cache &&
		    lab_modes[i].cqe == cqe)
			return i;
	return -1;
}

int lab_mode_from_verified(int fua, int write_cache, int cqe)
{
	if (fua < 0 || write_cache < 0 || cqe < 0)
		return -1;
	return find(fua != 0, write_cache != 0, cqe != 0);
}

int lab_mode_without_fua(int mode)
{
	if (!lab_mode_fua(mode))
		return -1;
	return find(false, lab_modes[mode].write_cache, lab_modes[mode].cqe);
}

int lab_mode_with_cqe(int mode)
{
	if (mode < 0 || mode >= MODE_COUNT || lab_modes[mode].cqe)
		return -1;
	return find(lab_modes[mode].fua, lab_modes[mode].write_cache, true);
}

bool lab_mode_proof_ok(int mode, const char *workload, int64_t rel, int64_t flushes, char *why,
		       size_t size)
{
	const struct agent_workload *w = agent_workload_find(workload);
	bool fua_writes = w && w->fua == AGENT_FUA_YES;

	if (size)
		why[0] = '\0';
	if (mode < 0 || mode >= MODE_COUNT)
		return false;
	if (!lab_modes[mode].fua && rel > 0) {
		snprintf(why, size, "%lld reliable writes in mode %s, which must issue none",
			 (long long)rel, lab_modes[mode].name);
		return false;
	}
	if (lab_modes[mode].fua && fua_writes && rel <= 0) {
		snprintf(why, size, "no reliable write in mode %s although %s issues FUA writes",
			 lab_modes[mode].name, workload);
		return false;
	}
	if (!lab_modes[mode].fua && lab_modes[mode].write_cache && fua_writes && flushes == 0) {
		snprintf(why, size, "no flush in mode %s although %s issues FUA writes (write + "
			 "flush expected)", lab_modes[mode].name, workload);
		return false;
	}
	return true;
}

int lab_mode_list(char *buf, size_t size, const char *last)
{
	size_t n = 0;
	int r = 0;

	if (size)
		buf[0] = '\0';
	for (int i = 0; i < MODE_COUNT; i++) {
		const char *sep = i == 0 ? "" : i == MODE_COUNT - 1 ? last : ", ";

		r = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, "%s%s", sep,
		             lab_modes[i].name);
		if (r < 0)
			return r;
		n += (size_t)r;
	}
	return (int)n;
}
