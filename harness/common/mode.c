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

/* Workloads whose fua-mode iterations need not show a reliable write. */
static const char *const rw_optional[] = {"androbench", NULL};

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

bool lab_mode_reliable_writes_ok(int mode, const char *workload, int64_t count)
{
	if (!lab_mode_fua(mode))
		return count <= 0;
	if (count != 0)
		return true;
	for (size_t i = 0; workload && rw_optional[i]; i++)
		if (strcmp(workload, rw_optional[i]) == 0)
			return true;
	return false;
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
