/*
 * quota.c - a period quota: a fixed-window counter that admits `quota`
 * events per period and starts again when the period ends.
 *
 * Unaligned, the period clock is started by traffic: the first event after
 * a period has run out begins the next one at its own time.  Aligned, a
 * period is [m * period, (m + 1) * period) on the caller's clock, computed
 * with floor division so negative clock readings land in the right period
 * too.
 */
#include <errno.h>

#include "agile_resilience.h"

/* Whether the period opened at start_ns is still open at now_ns.  A clock
 * reading before the start (a clock that stepped back) stays in it. */
static bool still_open(const struct agile_period_quota *q, int64_t now_ns)
{
	if (!q->open)
		return false;
	if (now_ns <= q->start_ns)
		return true;
	return (uint64_t)now_ns - (uint64_t)q->start_ns <
	       (uint64_t)q->period_ns;
}

/* The start of the period now_ns falls in. */
static int64_t period_start(const struct agile_period_quota *q, int64_t now_ns)
{
	if (!q->align)
		return now_ns;
	int64_t into = now_ns % q->period_ns;
	if (into < 0)
		into += q->period_ns;
	return now_ns - into;
}

int agile_period_quota_init(struct agile_period_quota *q, int32_t quota,
                            int64_t period_ns, bool align)
{
	if (quota < 0)
		return -EINVAL;
	q->period_ns = period_ns < 1 ? 1 : period_ns;
	q->start_ns = 0;
	q->quota = quota;
	q->count = 0;
	q->align = align ? 1 : 0;
	q->open = 0;
	return 0;
}

enum agile_quota_state agile_period_quota_take(struct agile_period_quota *q,
                                               int64_t now_ns)
{
	if (!still_open(q, now_ns)) {
		q->start_ns = period_start(q, now_ns);
		q->count = 0;
		q->open = 1;
	}
	if (q->count >= q->quota)
		return AGILE_QUOTA_OVER;
	q->count++;
	return q->count == q->quota ? AGILE_QUOTA_HIT : AGILE_QUOTA_UNDER;
}

int32_t agile_period_quota_left(const struct agile_period_quota *q,
                                int64_t now_ns)
{
	if (!still_open(q, now_ns))
		return q->quota;
	return q->quota - q->count;
}

int64_t agile_period_quota_next(const struct agile_period_quota *q,
                                int64_t now_ns)
{
	if (!still_open(q, now_ns))
		return 0;
	if (now_ns < q->start_ns)
		return q->period_ns;
	return q->period_ns - (int64_t)((uint64_t)now_ns - (uint64_t)q->start_ns);
}
