/* health.c - part wear readings and thresholds (see health.h). */
#include "health.h"
#include "results.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

const char *const health_action_names[] = {"flag", "skip", NULL};

void health_reading_init(struct health_reading *r)
{
	r->life_a = r->life_b = r->pre_eol = -1;
	r->src[0] = '\0';
}

bool health_reading_any(const struct health_reading *r)
{
	return r->life_a >= 0 || r->life_b >= 0 || r->pre_eol >= 0;
}

int health_value(const char *s)
{
	int64_t v;
	/* strtoll base 0 would read "010" as octal: the agent never sends that */
	if (!s || !*s || (s[0] == '0' && s[1] >= '0' && s[1] <= '9') || lab_parse_i64(s, &v) ||
	    v < 0 || v > 255)
		return -1;
	return (int)v;
}

bool health_exceeds(const struct health_cfg *c, const struct health_reading *r, char *why,
		    size_t size)
{
	static const char *const names[] = {"life_a", "life_b"};
	const int life[] = {r->life_a, r->life_b};
	/* 0 is "not defined" in JESD84-B51: no estimate, not a fresh part */
	for (int i = 0; i < 2; i++) {
		if (life[i] > 0 && life[i] > c->life_time_max) {
			snprintf(why, size, "%s 0x%02x (%s used) > life_time_max 0x%02x", names[i],
				 (unsigned)life[i], health_life_text(life[i]),
				 (unsigned)c->life_time_max);
			return true;
		}
	}
	if (r->pre_eol > 0 && r->pre_eol > c->pre_eol_max) {
		snprintf(why, size, "pre_eol %d (%s) > pre_eol_max %d", r->pre_eol,
			 health_eol_text(r->pre_eol), (int)c->pre_eol_max);
		return true;
	}
	if (size)
		why[0] = '\0';
	return false;
}

const char *health_life_text(int v)
{
	static const char *const t[] = {"not defined", "0-10%",  "10-20%", "20-30%",
					"30-40%",      "40-50%", "50-60%", "60-70%",
					"70-80%",      "80-90%", "90-100%", "past its life"};
	if (v < 0)
		return "?";
	return v < (int)LAB_ARRAY_SIZE(t) ? t[v] : "not defined";
}

const char *health_eol_text(int v)
{
	static const char *const t[] = {"not defined", "normal", "warning", "urgent"};
	if (v < 0)
		return "?";
	return v < (int)LAB_ARRAY_SIZE(t) ? t[v] : "not defined";
}

void health_delta_text(int first, int last, char *buf, size_t size)
{
	if (first < 0 || last < 0)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%+d", last - first);
}

static void hex_or_q(int v, char *buf, size_t size)
{
	if (v < 0)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "0x%02x", (unsigned)v);
}

void health_now_text(const struct store_health_sum *h, char *buf, size_t size)
{
	char a[16], b[16], eol[16];
	hex_or_q(h->last_a, a, sizeof a);
	hex_or_q(h->last_b, b, sizeof b);
	if (h->last_eol < 0)
		snprintf(eol, sizeof eol, "?");
	else
		snprintf(eol, sizeof eol, "%d", h->last_eol);
	snprintf(buf, size, "A %s (%s) B %s (%s) pre-EOL %s (%s)", a, health_life_text(h->last_a), b,
		 health_life_text(h->last_b), eol, health_eol_text(h->last_eol));
}

void health_trend_text(const struct store_health_sum *h, char *buf, size_t size)
{
	char da[16], db[16];
	health_delta_text(h->first_a, h->last_a, da, sizeof da);
	health_delta_text(h->first_b, h->last_b, db, sizeof db);
	snprintf(buf, size, "A %s B %s in %d reading%s since %s", da, db, h->n,
		 h->n == 1 ? "" : "s", h->first_at[0] ? h->first_at : "?");
}

bool health_part_shown(const struct results *r, size_t part)
{
	if (!r->parts[part].health.n)
		return false;
	/* groups are ordered by part first (results.h): the first group at or
	 * after part, by bisection (a linear scan per part was O(parts x groups),
	 * 2% of a 1,024-board report) */
	size_t lo = 0, hi = r->ngroups;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->groups[mid].part < part)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->ngroups && r->groups[lo].part == part;
}
