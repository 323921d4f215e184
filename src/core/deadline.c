/*
 * deadline.c - a budget of time counted from a start instant.  A budget of
 * zero or less stands for "no limit" and never runs out.
 */
#include "agile_resilience.h"

struct agile_deadline agile_deadline_start(int64_t budget_ns, int64_t now_ns)
{
	struct agile_deadline d = { .start_ns = now_ns, .budget_ns = budget_ns };
	return d;
}

/* Time spent since the start, never negative: a clock reading before the
 * start has spent nothing. */
static uint64_t spent(const struct agile_deadline *d, int64_t now_ns)
{
	if (now_ns <= d->start_ns)
		return 0;
	return (uint64_t)now_ns - (uint64_t)d->start_ns;
}

bool agile_deadline_expired(const struct agile_deadline *d, int64_t now_ns)
{
	if (d->budget_ns <= 0)
		return false;
	return spent(d, now_ns) >= (uint64_t)d->budget_ns;
}

bool agile_deadline_remaining(const struct agile_deadline *d, int64_t now_ns,
                              int64_t *remaining_ns)
{
	if (d->budget_ns <= 0)
		return false;
	uint64_t used = spent(d, now_ns);
	*remaining_ns = used >= (uint64_t)d->budget_ns
	                        ? 0
	                        : d->budget_ns - (int64_t)used;
	return true;
}
