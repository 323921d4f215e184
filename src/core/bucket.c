/*
 * bucket.c - the leaky bucket that paces outbound calls: the rate actuator.
 *
 * The bucket keeps one number that matters, the planned time of the latest
 * grant.  A take plans the next grant one interval after it, or now if that is
 * already past, and publishes it with a compare-and-swap, so any number of
 * threads and processes sharing the struct get distinct slots spaced at least
 * one interval apart.  No credit accumulates while the bucket is idle: the
 * static ceiling is a promise about every window, not an average, so a burst
 * after a quiet spell would break it.
 *
 * The ceiling is enforced here as well as in the controller's clamp:
 * min_interval_ns is fixed at init, every interval is clamped to it, and take
 * clamps again, so no rate a caller asks for can undercut it.
 *
 * The send spacing (agile__bucket_send_slot, at the end) is the bucket's
 * second use of its interval: a GCRA on the times the granted sends go out.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "agile.h"
#include "atomics.h"
#include "internal.h"

int64_t agile__bucket_interval(double rate, int64_t min_interval_ns)
{
	double ns = (double)AGILE_NS_PER_S / rate;
	int64_t interval_ns;

	/* A rate of 0 asks for an infinite spacing, and a negated comparison
	 * also catches a NaN: both get the longest. */
	if (!(ns < (double)AGILE__MAX_INTERVAL_NS))
		interval_ns = AGILE__MAX_INTERVAL_NS;
	else
		interval_ns = llround(ns);
	return interval_ns < min_interval_ns ? min_interval_ns : interval_ns;
}

int64_t agile__bucket_min_interval(double max_rate)
{
	/* The ceiling's spacing is rounded up, never to the nearest: rounding
	 * 1e9 / 3 down to 333333333 ns would let the bucket run a hair faster
	 * than the rate that was promised.  It is at least 1 ns, which caps a
	 * ceiling above 1e9 grants per second at 1e9. */
	double min_ns = ceil((double)AGILE_NS_PER_S / max_rate);

	if (!(min_ns < (double)AGILE__MAX_INTERVAL_NS))
		return AGILE__MAX_INTERVAL_NS;
	if (min_ns < 1)
		return 1;
	return (int64_t)min_ns;
}

/* The spacing as a take reads it.  Static, so next_slot inlines it: the
 * exported agile_bucket_interval_ns can be interposed, and a call to it
 * from a take cost 13 instructions (scripts/bench-hotpath). */
static inline int64_t interval_of(const struct agile_bucket *b)
{
	int64_t interval_ns = agile__load_i64(&b->interval_ns);
	int64_t min_interval_ns = agile__load_i64(&b->min_interval_ns);

	/* interval_ns is clamped whenever it is written, but the struct lives
	 * in a shared file that any process can write; clamping again here is
	 * what makes the ceiling hold whatever wrote the field.  A spacing
	 * below 1 ns or above the longest one is garbage whatever wrote it,
	 * and is read as the nearest sane one. */
	if (interval_ns < min_interval_ns)
		interval_ns = min_interval_ns;
	if (interval_ns < 1)
		interval_ns = 1;
	if (interval_ns > AGILE__MAX_INTERVAL_NS)
		interval_ns = AGILE__MAX_INTERVAL_NS;
	return interval_ns;
}

int64_t agile_bucket_interval_ns(const struct agile_bucket *b)
{
	return interval_of(b);
}

/* The point after which a rise moves planned grants: now_ns + keep_ns. */
static int64_t moved_from(int64_t now_ns, int64_t keep_ns)
{
	return agile__add_sat(now_ns, keep_ns < 0 ? 0 : keep_ns);
}

/* A grant planned at planned_ns at the spacing `before`, once the spacing
 * is `after`: its distance beyond from_ns shrinks by after / before,
 * rounded up (a grant moved closer is never moved past its share), exact
 * in long double for any span a bucket plans (validate.c bounds it).  Left
 * where it is when the spacing did not shrink or it is due by from_ns. */
static int64_t moved_closer(int64_t planned_ns, int64_t from_ns,
                            int64_t after, int64_t before)
{
	int64_t span;
	long double moved;

	if (after >= before || planned_ns <= from_ns)
		return planned_ns;
	span = planned_ns - from_ns; /* positive: no overflow */
	moved = ceill((long double)span * (long double)after /
	              (long double)before);
	if (!(moved < (long double)span))
		return planned_ns;
	return agile__add_sat(from_ns, (int64_t)moved);
}

/* The slot a take issued now would get, given the latest planned grant. */
static int64_t next_slot(const struct agile_bucket *b, int64_t last_ns,
                         int64_t now_ns)
{
	int64_t interval_ns = interval_of(b);

	/* Saturating: a wrapped planned time would be a slot in the distant
	 * past, granted at once. */
	int64_t due_ns = agile__add_sat(last_ns, interval_ns);
	return due_ns > now_ns ? due_ns : now_ns;
}

int agile_bucket_init(struct agile_bucket *b, double rate, double max_rate)
{
	/* The negated comparisons also reject NaN.  An infinite ceiling is no
	 * ceiling at all, so it is refused rather than read as "unlimited". */
	if (!(rate > 0) || !(max_rate > 0) || isinf(max_rate))
		return -EINVAL;

	int64_t min_interval_ns = agile__bucket_min_interval(max_rate);

	agile__store_i64(&b->min_interval_ns, min_interval_ns);
	agile__store_i64(&b->interval_ns,
	                 agile__bucket_interval(rate, min_interval_ns));
	agile__store_i64(&b->last_ns, AGILE__NEVER_NS);
	agile__store_u64(&b->grants, 0);
	agile__store_i64(&b->rise_ns, AGILE__NEVER_NS);
	return 0;
}

void agile_bucket_set_rate(struct agile_bucket *b, double rate)
{
	/* A non-positive or NaN rate is a caller bug with no meaningful
	 * reading; keeping the current rate is safer than stopping traffic or
	 * opening the bucket to the ceiling. */
	if (!(rate > 0))
		return;

	int64_t min_interval_ns = agile__load_i64(&b->min_interval_ns);
	agile__store_i64(&b->interval_ns,
	                 agile__bucket_interval(rate, min_interval_ns));
}

void agile_bucket_retime(struct agile_bucket *b, double rate, int64_t now_ns,
                         int64_t keep_ns)
{
	int64_t from = moved_from(now_ns, keep_ns);
	int64_t before = interval_of(b);
	int64_t after, last_ns, moved;

	agile_bucket_set_rate(b, rate);
	after = interval_of(b);
	if (after < before)
		agile__store_i64(&b->rise_ns, now_ns);
	/* A take that lands between the store above and this CAS planned its
	 * grant at the new spacing already; moving it too only brings it a
	 * little closer to the grant before it, never under the new spacing
	 * from the grants the rise moved. */
	last_ns = agile__load_i64(&b->last_ns);
	do {
		moved = moved_closer(last_ns, from, after, before);
		if (moved == last_ns)
			return;
	} while (!agile__cas_i64(&b->last_ns, &last_ns, moved));
}

int64_t agile_bucket_replan(const struct agile_bucket *b, int64_t planned_ns,
                            int64_t *ref_ns, int64_t now_ns, int64_t keep_ns)
{
	int64_t current = interval_of(b);
	int64_t ref = *ref_ns;

	*ref_ns = current;
	if (ref <= 0)
		return planned_ns;
	/* Any rise_ns, whatever wrote it, keeps `from` within [now_ns, the
	 * next tick's end]. */
	int64_t from = moved_from(now_ns, keep_ns);
	int64_t rise = agile__load_i64(&b->rise_ns);
	if (rise > AGILE__NEVER_NS) {
		int64_t kept = moved_from(rise, keep_ns);

		if (kept < from)
			from = kept > now_ns ? kept : now_ns;
	}
	return moved_closer(planned_ns, from, current, ref);
}

double agile_bucket_rate(const struct agile_bucket *b)
{
	int64_t interval_ns = agile__load_i64(&b->interval_ns);

	/* A spacing below 1 ns is garbage (see next_slot); read as 1 ns, it
	 * also keeps the division away from zero. */
	if (interval_ns < 1)
		interval_ns = 1;
	return (double)AGILE_NS_PER_S / (double)interval_ns;
}

int64_t agile_bucket_take(struct agile_bucket *b, int64_t now_ns)
{
	int64_t last_ns = agile__load_i64(&b->last_ns);
	int64_t planned_ns;

	/* A failed CAS reloads last_ns, and the interval is re-read on every
	 * attempt, so a rate change that lands meanwhile applies to this grant. */
	do {
		planned_ns = next_slot(b, last_ns, now_ns);
	} while (!agile__cas_i64(&b->last_ns, &last_ns, planned_ns));

	agile__add_u64(&b->grants, 1);
	return planned_ns;
}

bool agile_bucket_try_take(struct agile_bucket *b, int64_t now_ns,
                           int64_t max_wait_ns, int64_t *planned_ns)
{
	int64_t last_ns = agile__load_i64(&b->last_ns);
	int64_t slot_ns;

	do {
		slot_ns = next_slot(b, last_ns, now_ns);
		/* slot_ns >= now_ns, so the wait is exact in unsigned arithmetic
		 * even across the whole int64_t range.  A negative max_wait_ns
		 * refuses every slot, including one due now. */
		uint64_t wait_ns = (uint64_t)slot_ns - (uint64_t)now_ns;
		if (max_wait_ns < 0 || wait_ns > (uint64_t)max_wait_ns)
			return false;
	} while (!agile__cas_i64(&b->last_ns, &last_ns, slot_ns));

	agile__add_u64(&b->grants, 1);
	if (planned_ns != NULL)
		*planned_ns = slot_ns;
	return true;
}

/*
 * When a granted send may go out, given the destination's sends before it:
 * a GCRA on send times, with a tolerance of half an interval.
 *
 * The bucket spaces the grants' planned times, and the preload plans a
 * grant at connect() but waits for it at the first send.  A program that
 * sends on its sockets in another order than it connected them (an event
 * loop writing whichever socket its poller lists first: Node's fetch with
 * 200 sockets put 66 requests inside one second at max=20) sleeps through
 * a later grant while earlier ones pass, and then sends on all of those at
 * once.  Spacing the sends themselves keeps the ceiling; a program that
 * sends in order meets the schedule already and never waits here, and a
 * uniform delay between connect and first send (a distant server's
 * handshake) shifts every send alike and costs nothing either.  The
 * tolerance absorbs the scheduling noise of on-time sends: without it,
 * each late wake-up would push every later send back.
 */
int64_t agile__bucket_send_slot(const struct agile_bucket *b, int64_t *tat_ns,
                                int64_t now_ns)
{
	int64_t interval = agile__load_i64(&b->interval_ns);
	int64_t min_interval = agile__load_i64(&b->min_interval_ns);
	int64_t tat = agile__load_i64(tat_ns);
	int64_t next, slot;

	if (interval < min_interval)
		interval = min_interval;
	if (interval <= 0 || interval > AGILE__SEND_AHEAD_MAX_NS)
		return now_ns; /* not a bucket this build wrote: no spacing */
	do {
		/* A time in the past means the destination was idle.  One
		 * more than an hour ahead was not written by a send (a corrupt
		 * file) and is ignored as well, which also keeps the sum from
		 * overflowing; a nearer one is legitimate however far ahead,
		 * since every sender waiting meanwhile has reserved one
		 * interval. */
		next = tat;
		if (next < now_ns || next - now_ns > AGILE__SEND_AHEAD_MAX_NS)
			next = now_ns;
		slot = next - interval / 2;
		if (slot < now_ns)
			slot = now_ns;
	} while (!agile__cas_i64(tat_ns, &tat, next + interval));
	return slot;
}
