/*
 * config_names.c - the names of presets and anchors, their parsers, and the
 * matching of names that every keyword libagile and the preload parse
 * follows (internal.h's agile__name_is and friends).
 *
 * Everything here is pure: no clock, no allocation, no I/O.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "agile.h"
#include "config_internal.h"
#include "internal.h"

static const char *const preset_names[AGILE_PRESET_COUNT] = {
	[AGILE_PRESET_NONE] = "none",
	[AGILE_PRESET_BALANCED] = "balanced",
	[AGILE_PRESET_LATENCY_FIRST] = "latency-first",
	[AGILE_PRESET_THROUGHPUT_FIRST] = "throughput-first",
	[AGILE_PRESET_SEED] = "seed",
};

static const char *const anchor_names[] = {
	[AGILE_ANCHOR_UNSET] = "unset",
	[AGILE_ANCHOR_BASELINE] = "baseline",
	[AGILE_ANCHOR_SLO] = "slo",
};

_Static_assert(sizeof anchor_names / sizeof anchor_names[0] == ANCHOR_COUNT,
               "config_internal.h's ANCHOR_COUNT counts anchor_names");

static const char degraded_anchor_name[] =
	"baseline (slo anchor requested without an slo)";

const char *agile_preset_name(enum agile_preset preset)
{
	if ((unsigned)preset >= AGILE_PRESET_COUNT)
		return "unknown";
	return preset_names[preset];
}

const char *agile_resolved_anchor_name(const struct agile_resolved *r)
{
	if (r == NULL)
		return "unknown";
	if (r->anchor == AGILE_ANCHOR_SLO)
		return anchor_names[AGILE_ANCHOR_SLO];
	if (r->anchor == AGILE_ANCHOR_BASELINE)
		return r->anchor_degraded ? degraded_anchor_name
		                          : anchor_names[AGILE_ANCHOR_BASELINE];
	if (r->anchor == AGILE_ANCHOR_UNSET)
		return anchor_names[AGILE_ANCHOR_UNSET];
	return "unknown";
}

/*
 * Names come from command lines and environment variables, so matching is
 * forgiving about what people type: ASCII case is ignored and '_' stands for
 * '-' ("LATENCY_FIRST" is "latency-first").  No locale is consulted.
 */
static char name_char(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (char)(c - 'A' + 'a');
	return c == '_' ? '-' : c;
}

bool agile__name_starts(const char *name, const char *word)
{
	for (; *word != '\0'; name++, word++)
		if (name_char(*name) != *word)
			return false;
	return true;
}

bool agile__name_is(const char *name, const char *word)
{
	return agile__name_starts(name, word) && name[strlen(word)] == '\0';
}

int agile__name_index(const char *name, const char *const *names, int count)
{
	for (int i = 0; i < count; i++)
		if (agile__name_is(name, names[i]))
			return i;
	return -1;
}

int agile_preset_parse(const char *name, enum agile_preset *out)
{
	int i;

	if (name == NULL || out == NULL)
		return -EINVAL;
	i = agile__name_index(name, preset_names, AGILE_PRESET_COUNT);
	if (i < 0)
		return -EINVAL;
	*out = (enum agile_preset)i;
	return 0;
}

int agile_anchor_parse(const char *name, enum agile_anchor *out)
{
	int i;

	if (name == NULL || out == NULL)
		return -EINVAL;
	i = agile__name_index(name, anchor_names, (int)ANCHOR_COUNT);
	if (i < 0)
		return -EINVAL;
	*out = (enum agile_anchor)i;
	return 0;
}
