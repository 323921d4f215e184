/*
 * gate.c - a concurrency gate: a count with a ceiling and no notion of time.
 *
 * Both fields are naturally aligned 8-byte integers updated with
 * compare-and-swap, so a gate in a shared-memory file admits correctly
 * across threads and processes.  A full gate says no immediately; waiting
 * for room, if wanted, is the caller's policy, not the gate's.
 */
#include <errno.h>

#include "agile_resilience.h"
#include "atomics.h"

void agile_gate_init(struct agile_gate *g, int64_t limit)
{
	agile__store_i64(&g->limit, limit);
	agile__store_i64(&g->held, 0);
}

bool agile_gate_enter(struct agile_gate *g)
{
	int64_t limit = agile__load_i64(&g->limit);
	int64_t held = agile__load_i64(&g->held);

	do {
		if (limit > 0 && held >= limit)
			return false;
	} while (!agile__cas_i64(&g->held, &held, held + 1));
	return true;
}

int agile_gate_leave(struct agile_gate *g)
{
	int64_t held = agile__load_i64(&g->held);

	do {
		if (held <= 0)
			return -EINVAL;
	} while (!agile__cas_i64(&g->held, &held, held - 1));
	return 0;
}

int64_t agile_gate_held(const struct agile_gate *g)
{
	return agile__load_i64(&g->held);
}
