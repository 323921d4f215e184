/*
 * config_internal.h - what the files of the resolving walk share: the
 * report validate collects problems in and its one writer, and passes 3
 * and 4 (config_presets.c) as config.c's walk calls them.
 */
#ifndef AGILE_CONFIG_INTERNAL_H
#define AGILE_CONFIG_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agile.h"
#include "internal.h"

#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))

/* Large enough for any number, duration or name the messages print. */
#define SHORT_TEXT AGILE__NUMBER_TEXT

/* How many anchors there are: AGILE_ANCHOR_SLO is the last, and
 * config_names.c checks its table of their names against this. */
#define ANCHOR_COUNT ((unsigned)AGILE_ANCHOR_SLO + 1)

/* Where validate collects problems; resolve passes NULL, and no problem is
 * written. */
struct report {
	struct agile_problem *out;
	size_t cap;
	size_t count;
};

static inline void PRINTF_LIKE(3, 4)
problem(struct report *rep, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (rep == NULL)
		return;
	if (rep->count < rep->cap) {
		struct agile_problem *p = &rep->out[rep->count];

		snprintf(p->field, sizeof p->field, "%s", field);
		va_start(ap, fmt);
		vsnprintf(p->message, sizeof p->message, fmt, ap);
		va_end(ap);
	}
	rep->count++;
}

void agile__apply_rules_off(const struct agile_config *c,
                            struct agile_resolved *r, struct report *rep);
enum agile_anchor agile__apply_preset(struct agile_resolved *r,
                                      struct report *rep,
                                      enum agile_preset preset,
                                      enum agile_anchor anchor, int64_t slo);
void agile__apply_defaults(struct agile_resolved *r);

#endif
