/*
 * check_resilience.c - the quota counters (token bucket, exact sliding
 * window, period quota), the gate, the backoff and the deadline, on a
 * virtual clock, and the golden run that puts the same bursty traffic
 * through all three quotas.
 *
 * Times are integers the test chooses.  The token bucket counts in integer
 * units, so its expectations are exact too: no tolerance hides a token.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "agile_resilience.h"
#include "check_suites.h"

#define US AGILE_NS_PER_US
#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* --- token bucket --------------------------------------------------------- */

START_TEST(token_bucket_starts_full)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, 20, 0, 5 * SEC), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 5 * SEC), 20);
	for (int i = 0; i < 20; i++)
		ck_assert(agile_token_bucket_take(&b, 5 * SEC, 1));
	ck_assert(!agile_token_bucket_take(&b, 5 * SEC, 1));
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 5 * SEC), 0);
}
END_TEST

START_TEST(token_bucket_burst_defaults_to_rate_never_under_one)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, 7, 0, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 7);
	ck_assert_int_eq(agile_token_bucket_init(&b, 7, -3, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 7);
	ck_assert_int_eq(agile_token_bucket_init(&b, 7, NAN, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 7);
	ck_assert_int_eq(agile_token_bucket_init(&b, 7, 3, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 3);
	/* Half a token a second defaults to a burst of one, not a half. */
	ck_assert_int_eq(agile_token_bucket_init(&b, 0.5, 0, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 1);
	ck_assert(agile_token_bucket_take(&b, 0, 1));
	ck_assert_int_eq(agile_token_bucket_init(&b, 100, 0.25, 0), 0);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 1);
	/* A zero rate is a bucket that never refills. */
	ck_assert_int_eq(agile_token_bucket_init(&b, 0, 0, 0), 0);
	ck_assert(agile_token_bucket_take(&b, 0, 1));
	ck_assert(!agile_token_bucket_take(&b, 1000 * SEC, 1));
	ck_assert_int_eq(agile_token_bucket_next(&b, 1000 * SEC, 1), INT64_MAX);
}
END_TEST

START_TEST(token_bucket_init_rejects_invalid)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, -1, 0, 0), -EINVAL);
	ck_assert_int_eq(agile_token_bucket_init(&b, NAN, 0, 0), -EINVAL);
	ck_assert_int_eq(agile_token_bucket_init(&b, INFINITY, 0, 0), -EINVAL);
	ck_assert_int_eq(agile_token_bucket_init(&b, 1, 1e12, 0), -EINVAL);
}
END_TEST

START_TEST(token_bucket_refill_exact_and_capped)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, 20, 0, 0), 0);
	for (int i = 0; i < 20; i++)
		ck_assert(agile_token_bucket_take(&b, 0, 1));
	/* 20 a second is one every 50 ms, to the nanosecond. */
	ck_assert(!agile_token_bucket_take(&b, 50 * MS - 1, 1));
	ck_assert(agile_token_bucket_take(&b, 50 * MS, 1));
	/* Refills of 2.5 ms (0.05 token) add up to exactly one token. */
	int64_t now = 50 * MS;
	for (int i = 0; i < 19; i++) {
		now += 2500 * US;
		ck_assert(!agile_token_bucket_take(&b, now, 1));
	}
	now += 2500 * US;
	ck_assert(agile_token_bucket_take(&b, now, 1));
	/* An hour idle fills it to the burst, no further. */
	ck_assert_double_eq(agile_token_bucket_tokens(&b, now + 3600 * SEC), 20);
	ck_assert_double_eq(agile_token_bucket_tokens(&b, INT64_MAX), 20);
}
END_TEST

START_TEST(token_bucket_take_n)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, 10, 0, 0), 0);
	ck_assert(agile_token_bucket_take(&b, 0, 4));
	ck_assert(agile_token_bucket_take(&b, 0, 0)); /* free */
	ck_assert(!agile_token_bucket_take(&b, 0, 7)); /* takes nothing */
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 6);
	ck_assert(agile_token_bucket_take(&b, 0, 6));
	ck_assert(!agile_token_bucket_take(&b, 0, -1));
	ck_assert(!agile_token_bucket_take(&b, 0, NAN));
	ck_assert(agile_token_bucket_take(&b, 250 * MS, 2.5));
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 250 * MS), 0);
	/* More than the burst can never be taken. */
	ck_assert(!agile_token_bucket_take(&b, 3600 * SEC, 11));
}
END_TEST

START_TEST(token_bucket_next_five_tokens_in_200ms)
{
	struct agile_token_bucket b;

	/* A quota of twenty a second with one token left: five tokens are
	 * four short, and four at twenty a second take 200 ms. */
	ck_assert_int_eq(agile_token_bucket_init(&b, 20, 0, 0), 0);
	for (int i = 0; i < 19; i++)
		ck_assert(agile_token_bucket_take(&b, 0, 1));
	ck_assert_int_eq(agile_token_bucket_next(&b, 0, 5), 200 * MS);
	ck_assert_int_eq(agile_token_bucket_next(&b, 0, 1), 0);
	ck_assert_int_eq(agile_token_bucket_next(&b, 0, 0), 0);
	ck_assert_int_eq(agile_token_bucket_next(&b, 120 * MS, 5), 80 * MS);
	/* next does not take. */
	ck_assert_double_eq(agile_token_bucket_tokens(&b, 0), 1);
	ck_assert(!agile_token_bucket_take(&b, 200 * MS - 1, 5));
	ck_assert(agile_token_bucket_take(&b, 200 * MS, 5));
	ck_assert_int_eq(agile_token_bucket_next(&b, 200 * MS, 21), INT64_MAX);
	ck_assert_int_eq(agile_token_bucket_next(&b, 200 * MS, -1), INT64_MAX);
}
END_TEST

START_TEST(token_bucket_take_after_next_succeeds)
{
	/* Fractional rates round their refill down; next must still report a
	 * wait after which the take succeeds, and not a nanosecond more. */
	const double rates[] = { 3, 0.7, 1.0 / 3, 29.97, 1e6 / 7, 123456.789 };
	const double wants[] = { 1, 0.3, 1, 2.5, 1 };

	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (size_t w = 0; w < sizeof(wants) / sizeof(wants[0]); w++) {
			struct agile_token_bucket b;
			int64_t now = 12345;

			ck_assert_int_eq(agile_token_bucket_init(&b, rates[r],
			                                         10, now), 0);
			ck_assert(agile_token_bucket_take(&b, now, 10));
			for (int step = 0; step < 5; step++) {
				int64_t wait = agile_token_bucket_next(
					&b, now, wants[w]);
				ck_assert_int_gt(wait, 0);
				struct agile_token_bucket early = b;
				ck_assert(!agile_token_bucket_take(
					&early, now + wait - 1, wants[w]));
				now += wait;
				ck_assert(agile_token_bucket_take(&b, now,
				                                  wants[w]));
			}
		}
	}
}
END_TEST

START_TEST(token_bucket_clock_stepping_back)
{
	struct agile_token_bucket b;

	ck_assert_int_eq(agile_token_bucket_init(&b, 10, 2, SEC), 0);
	ck_assert(agile_token_bucket_take(&b, SEC, 2));
	/* An earlier reading neither refills nor moves the bucket back. */
	ck_assert(!agile_token_bucket_take(&b, 0, 1));
	ck_assert_int_eq(b.at_ns, SEC);
	ck_assert_int_eq(agile_token_bucket_next(&b, 0, 1), 100 * MS);
	ck_assert(agile_token_bucket_take(&b, SEC + 100 * MS, 1));
}
END_TEST

/* --- exact sliding window ------------------------------------------------- */

static struct agile_sliding_window *sliding_new(int32_t quota, int64_t window)
{
	struct agile_sliding_window *w = malloc(AGILE_SLIDING_WINDOW_BYTES(quota));

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(agile_sliding_window_init(w, quota, window), 0);
	return w;
}

START_TEST(sliding_window_counts_any_window_long_stretch)
{
	struct agile_sliding_window *w = sliding_new(3, SEC);

	ck_assert_int_eq(agile_sliding_window_left(w, 0), 3);
	ck_assert(agile_sliding_window_take(w, 0));
	ck_assert(agile_sliding_window_take(w, 100 * MS));
	ck_assert(agile_sliding_window_take(w, 200 * MS));
	ck_assert_int_eq(agile_sliding_window_left(w, 200 * MS), 0);
	ck_assert(!agile_sliding_window_take(w, 300 * MS));
	ck_assert(!agile_sliding_window_take(w, SEC - 1));
	/* The event at 0 leaves at exactly 1 s. */
	ck_assert_int_eq(agile_sliding_window_left(w, SEC), 1);
	ck_assert(agile_sliding_window_take(w, SEC));
	ck_assert(!agile_sliding_window_take(w, SEC + 99 * MS));
	/* Refused events were not stored: at 1.1 s the one from 100 ms has
	 * left, and the refusals at 300 ms and 999 ms take no room. */
	ck_assert_int_eq(agile_sliding_window_left(w, SEC + 100 * MS), 1);
	ck_assert_int_eq(agile_sliding_window_left(w, 5 * SEC), 3);
	free(w);
}
END_TEST

START_TEST(sliding_window_next_is_when_oldest_leaves)
{
	struct agile_sliding_window *w = sliding_new(2, SEC);

	ck_assert_int_eq(agile_sliding_window_next(w, 0), 0);
	ck_assert(agile_sliding_window_take(w, 100 * MS));
	ck_assert_int_eq(agile_sliding_window_next(w, 100 * MS), 0);
	ck_assert(agile_sliding_window_take(w, 400 * MS));
	ck_assert_int_eq(agile_sliding_window_next(w, 500 * MS), 600 * MS);
	ck_assert_int_eq(agile_sliding_window_next(w, SEC + 99 * MS), 1 * MS);
	ck_assert_int_eq(agile_sliding_window_next(w, SEC + 100 * MS), 0);
	/* next and left write nothing. */
	ck_assert_int_eq(w->count, 2);
	ck_assert(!agile_sliding_window_take(w, SEC + 100 * MS - 1));
	ck_assert(agile_sliding_window_take(w, SEC + 100 * MS));
	ck_assert_int_eq(agile_sliding_window_next(w, SEC + 100 * MS),
	                 300 * MS);
	free(w);
}
END_TEST

START_TEST(sliding_window_ring_wraps)
{
	struct agile_sliding_window *w = sliding_new(5, 10 * MS);
	int passed = 0;

	/* One event per millisecond for a second: five in every 10 ms. */
	for (int64_t t = 0; t < SEC; t += MS)
		passed += agile_sliding_window_take(w, t);
	ck_assert_int_eq(passed, 500);
	free(w);
}
END_TEST

START_TEST(sliding_window_edges)
{
	struct agile_sliding_window *w = sliding_new(0, SEC);

	ck_assert(!agile_sliding_window_take(w, 0));
	ck_assert_int_eq(agile_sliding_window_left(w, 0), 0);
	ck_assert_int_eq(agile_sliding_window_next(w, 0), INT64_MAX);
	ck_assert_int_eq(agile_sliding_window_init(w, -1, SEC), -EINVAL);
	free(w);

	/* A window under a nanosecond is raised to one: only events at the
	 * same instant share it. */
	w = sliding_new(1, 0);
	ck_assert_int_eq(w->window_ns, 1);
	ck_assert(agile_sliding_window_take(w, 7));
	ck_assert(!agile_sliding_window_take(w, 7));
	ck_assert(agile_sliding_window_take(w, 8));
	free(w);

	/* Extreme clock readings do not overflow the age test. */
	w = sliding_new(1, SEC);
	ck_assert(agile_sliding_window_take(w, INT64_MIN));
	ck_assert(agile_sliding_window_take(w, INT64_MAX));
	ck_assert_int_eq(agile_sliding_window_next(w, INT64_MAX), SEC);
	free(w);
}
END_TEST

/* --- period quota --------------------------------------------------------- */

START_TEST(period_quota_under_hit_over)
{
	struct agile_period_quota q;

	ck_assert_int_eq(agile_period_quota_init(&q, 3, SEC, false), 0);
	ck_assert_int_eq(agile_period_quota_take(&q, 500 * MS),
	                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(agile_period_quota_take(&q, 600 * MS),
	                 AGILE_QUOTA_UNDER);
	/* The event that reaches the quota is admitted. */
	ck_assert_int_eq(agile_period_quota_take(&q, 700 * MS), AGILE_QUOTA_HIT);
	ck_assert_int_eq(agile_period_quota_take(&q, 800 * MS),
	                 AGILE_QUOTA_OVER);
	ck_assert_int_eq(agile_period_quota_take(&q, 900 * MS),
	                 AGILE_QUOTA_OVER);
	ck_assert_int_eq(q.count, 3); /* refusals are not counted */
	ck_assert_int_eq(agile_period_quota_left(&q, 800 * MS), 0);
}
END_TEST

START_TEST(period_quota_opens_on_first_event)
{
	struct agile_period_quota q;

	ck_assert_int_eq(agile_period_quota_init(&q, 2, SEC, false), 0);
	/* No period open: the whole quota is left and nothing to wait for. */
	ck_assert_int_eq(agile_period_quota_left(&q, 0), 2);
	ck_assert_int_eq(agile_period_quota_next(&q, 0), 0);
	ck_assert_int_eq(agile_period_quota_take(&q, 500 * MS),
	                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(agile_period_quota_left(&q, 500 * MS), 1);
	ck_assert_int_eq(agile_period_quota_next(&q, 800 * MS), 700 * MS);
	ck_assert_int_eq(agile_period_quota_take(&q, 1499 * MS), AGILE_QUOTA_HIT);
	/* The period ends a full period after the first event. */
	ck_assert_int_eq(agile_period_quota_left(&q, 1500 * MS), 2);
	ck_assert_int_eq(agile_period_quota_next(&q, 1500 * MS), 0);
	/* Quiet until 4.2 s: the next period opens there, not on a grid. */
	ck_assert_int_eq(agile_period_quota_take(&q, 4200 * MS),
	                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(q.start_ns, 4200 * MS);
	ck_assert_int_eq(agile_period_quota_next(&q, 4200 * MS), SEC);
}
END_TEST

START_TEST(period_quota_aligned_on_callers_clock)
{
	struct agile_period_quota q;

	ck_assert_int_eq(agile_period_quota_init(&q, 2, SEC, true), 0);
	ck_assert_int_eq(agile_period_quota_take(&q, 900 * MS),
	                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(q.start_ns, 0);
	ck_assert_int_eq(agile_period_quota_take(&q, 950 * MS), AGILE_QUOTA_HIT);
	ck_assert_int_eq(agile_period_quota_take(&q, 999 * MS),
	                 AGILE_QUOTA_OVER);
	ck_assert_int_eq(agile_period_quota_next(&q, 999 * MS), MS);
	ck_assert_int_eq(agile_period_quota_take(&q, SEC), AGILE_QUOTA_UNDER);

	/* Floor division: a negative reading lands in [-1 s, 0). */
	ck_assert_int_eq(agile_period_quota_init(&q, 2, SEC, true), 0);
	ck_assert_int_eq(agile_period_quota_take(&q, -1), AGILE_QUOTA_UNDER);
	ck_assert_int_eq(q.start_ns, -SEC);
	ck_assert_int_eq(agile_period_quota_next(&q, -1), 1);
}
END_TEST

START_TEST(period_quota_daily_resets_at_midnight_utc)
{
	/* A cron job allowed 1000 calls a day on a Unix wall clock: with
	 * aligned days the count starts over at 00:00 UTC, not 24 hours after
	 * the first run. */
	const int64_t day = 86400 * SEC;
	const int64_t midnight = INT64_C(1700006400) * SEC; /* a UTC midnight */
	struct agile_period_quota q;

	ck_assert_int_eq(midnight % day, 0);
	ck_assert_int_eq(agile_period_quota_init(&q, 1000, day, true), 0);
	int64_t evening = midnight + 23 * 3600 * SEC;
	for (int i = 0; i < 999; i++)
		ck_assert_int_eq(agile_period_quota_take(&q, evening + i),
		                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(agile_period_quota_take(&q, evening + 999),
	                 AGILE_QUOTA_HIT);
	ck_assert_int_eq(agile_period_quota_take(&q, evening + 1000),
	                 AGILE_QUOTA_OVER);
	ck_assert_int_eq(agile_period_quota_next(&q, evening), 3600 * SEC);
	ck_assert_int_eq(agile_period_quota_take(&q, midnight + day),
	                 AGILE_QUOTA_UNDER);
	ck_assert_int_eq(agile_period_quota_left(&q, midnight + day), 999);
}
END_TEST

START_TEST(period_quota_edges)
{
	struct agile_period_quota q;

	ck_assert_int_eq(agile_period_quota_init(&q, -1, SEC, false), -EINVAL);
	ck_assert_int_eq(agile_period_quota_init(&q, 0, SEC, false), 0);
	ck_assert_int_eq(agile_period_quota_take(&q, 0), AGILE_QUOTA_OVER);
	ck_assert_int_eq(agile_period_quota_left(&q, 0), 0);
	ck_assert_int_eq(agile_period_quota_init(&q, 1, 0, false), 0);
	ck_assert_int_eq(q.period_ns, 1);
	ck_assert_int_eq(agile_period_quota_take(&q, 5), AGILE_QUOTA_HIT);
	ck_assert_int_eq(agile_period_quota_take(&q, 5), AGILE_QUOTA_OVER);
	ck_assert_int_eq(agile_period_quota_take(&q, 6), AGILE_QUOTA_HIT);
}
END_TEST

/* --- the golden run --------------------------------------------------------- */

/*
 * The seed's example: one burst of forty calls every two seconds, offered
 * to a token bucket, an exact sliding window and a period, each with a
 * quota of twenty a second.  Each burst spans a whole-second mark: its
 * calls are 2 ms apart from 960 ms, twenty of them before the mark and
 * twenty from it on.  The period is aligned to whole seconds, so its count
 * starts again at the mark.
 *
 *   bucket   21: the twenty tokens saved while idle, plus one more earned
 *                during the burst's 78 ms (at 20 a second, one per 50 ms)
 *   sliding  20: all forty fall inside one second
 *   period   40: twenty on each side of the boundary
 */
START_TEST(golden_bursts_against_three_quotas)
{
	struct agile_token_bucket bucket;
	struct agile_sliding_window *sliding = sliding_new(20, SEC);
	struct agile_period_quota period;

	ck_assert_int_eq(agile_token_bucket_init(&bucket, 20, 0, 0), 0);
	ck_assert_int_eq(agile_period_quota_init(&period, 20, SEC, true), 0);

	for (int burst = 0; burst < 4; burst++) {
		int64_t start = burst * 2 * SEC + 960 * MS;
		int64_t boundary = burst * 2 * SEC + SEC;
		int bucket_passed = 0, sliding_passed = 0, period_passed = 0;
		int hits = 0, last_bucket_pass = -1;

		for (int i = 0; i < 40; i++) {
			int64_t now = start + i * 2 * MS;
			ck_assert(i < 20 ? now < boundary : now >= boundary);
			if (agile_token_bucket_take(&bucket, now, 1)) {
				bucket_passed++;
				last_bucket_pass = i;
			}
			sliding_passed += agile_sliding_window_take(sliding, now);
			enum agile_quota_state st =
				agile_period_quota_take(&period, now);
			period_passed += st != AGILE_QUOTA_OVER;
			hits += st == AGILE_QUOTA_HIT;
		}
		ck_assert_int_eq(bucket_passed, 21);
		ck_assert_int_eq(sliding_passed, 20);
		ck_assert_int_eq(period_passed, 40);
		/* The extra token lands exactly 50 ms into the burst. */
		ck_assert_int_eq(last_bucket_pass, 25);
		/* The period warned on the last call of each side. */
		ck_assert_int_eq(hits, 2);
	}
	free(sliding);
}
END_TEST

START_TEST(golden_quota_headroom_after_a_burst)
{
	/* What each quota reports right after the first burst of the golden
	 * run, at 1.038 s: the bucket has saved 0.56 token since its last
	 * pass, the window is full until the first call leaves, and the
	 * aligned period is spent until 2 s. */
	struct agile_token_bucket bucket;
	struct agile_sliding_window *sliding = sliding_new(20, SEC);
	struct agile_period_quota period;
	int64_t now = 0;

	ck_assert_int_eq(agile_token_bucket_init(&bucket, 20, 0, 0), 0);
	ck_assert_int_eq(agile_period_quota_init(&period, 20, SEC, true), 0);
	for (int i = 0; i < 40; i++) {
		now = 960 * MS + i * 2 * MS;
		(void)agile_token_bucket_take(&bucket, now, 1);
		(void)agile_sliding_window_take(sliding, now);
		(void)agile_period_quota_take(&period, now);
	}
	ck_assert_int_eq(now, 1038 * MS);
	ck_assert_double_eq_tol(agile_token_bucket_tokens(&bucket, now), 0.56,
	                        1e-9);
	ck_assert_int_eq(agile_token_bucket_next(&bucket, now, 1), 22 * MS);
	ck_assert_int_eq(agile_sliding_window_left(sliding, now), 0);
	ck_assert_int_eq(agile_sliding_window_next(sliding, now), 922 * MS);
	ck_assert_int_eq(agile_period_quota_left(&period, now), 0);
	ck_assert_int_eq(agile_period_quota_next(&period, now), 962 * MS);
	free(sliding);
}
END_TEST

/* --- gate ----------------------------------------------------------------- */

START_TEST(gate_ceiling)
{
	struct agile_gate g;

	agile_gate_init(&g, 2);
	ck_assert(agile_gate_enter(&g));
	ck_assert(agile_gate_enter(&g));
	ck_assert(!agile_gate_enter(&g));
	ck_assert_int_eq(agile_gate_held(&g), 2);
	ck_assert_int_eq(agile_gate_leave(&g), 0);
	ck_assert(agile_gate_enter(&g));
	ck_assert_int_eq(agile_gate_leave(&g), 0);
	ck_assert_int_eq(agile_gate_leave(&g), 0);
	ck_assert_int_eq(agile_gate_held(&g), 0);
	/* Leaving an empty gate is a caller bug, refused without effect. */
	ck_assert_int_eq(agile_gate_leave(&g), -EINVAL);
	ck_assert_int_eq(agile_gate_held(&g), 0);
}
END_TEST

START_TEST(gate_zero_or_less_is_no_ceiling)
{
	const int64_t limits[] = { 0, -1, INT64_MIN };

	for (size_t l = 0; l < 3; l++) {
		struct agile_gate g;
		agile_gate_init(&g, limits[l]);
		for (int i = 0; i < 10000; i++)
			ck_assert(agile_gate_enter(&g));
		ck_assert_int_eq(agile_gate_held(&g), 10000);
	}
}
END_TEST

struct gate_run {
	struct agile_gate *gate;
	int64_t *peak;
	int admitted;
};

static void *gate_worker(void *arg)
{
	struct gate_run *run = arg;

	for (int i = 0; i < 20000; i++) {
		if (!agile_gate_enter(run->gate))
			continue;
		run->admitted++;
		int64_t held = agile_gate_held(run->gate);
		int64_t peak = __atomic_load_n(run->peak, __ATOMIC_RELAXED);
		while (held > peak &&
		       !__atomic_compare_exchange_n(run->peak, &peak, held, true,
		                                    __ATOMIC_RELAXED,
		                                    __ATOMIC_RELAXED))
			;
		ck_assert_int_eq(agile_gate_leave(run->gate), 0);
	}
	return NULL;
}

START_TEST(gate_threads_never_exceed_limit)
{
	struct agile_gate g;
	int64_t peak = 0;
	pthread_t threads[8];
	struct gate_run runs[8];

	agile_gate_init(&g, 3);
	for (int i = 0; i < 8; i++) {
		runs[i] = (struct gate_run){ .gate = &g, .peak = &peak };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, gate_worker,
		                                &runs[i]), 0);
	}
	int admitted = 0;
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
		admitted += runs[i].admitted;
	}
	ck_assert_int_le(peak, 3);
	ck_assert_int_gt(admitted, 0);
	ck_assert_int_eq(agile_gate_held(&g), 0);
}
END_TEST

/* --- backoff -------------------------------------------------------------- */

START_TEST(backoff_preset_values)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	ck_assert_int_eq(b.base_ns, 100 * MS);
	ck_assert_int_eq(b.cap_ns, SEC);
	ck_assert_double_eq(b.factor, 2.0);
	ck_assert_int_eq(b.attempts, 3);
	ck_assert_uint_eq(b.jitter, AGILE_JITTER_SPREAD);
	ck_assert_double_eq(b.spread, 0.2);
}
END_TEST

START_TEST(backoff_ceiling)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	ck_assert_int_eq(agile_backoff_ceiling(&b, 1), 100 * MS);
	ck_assert_int_eq(agile_backoff_ceiling(&b, 2), 200 * MS);
	ck_assert_int_eq(agile_backoff_ceiling(&b, 3), 400 * MS);
	ck_assert_int_eq(agile_backoff_ceiling(&b, 4), 800 * MS);
	ck_assert_int_eq(agile_backoff_ceiling(&b, 5), SEC); /* 1.6 s capped */
	ck_assert_int_eq(agile_backoff_ceiling(&b, 5000), SEC); /* pow = inf */
	ck_assert_int_eq(agile_backoff_ceiling(&b, INT32_MAX), SEC);
	/* Retry zero or less is no retry: nothing to wait. */
	ck_assert_int_eq(agile_backoff_ceiling(&b, 0), 0);
	ck_assert_int_eq(agile_backoff_ceiling(&b, -3), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, 0, 0.5, 0), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, INT32_MIN, 0.5, 0), 0);

	b.factor = 1.5;
	ck_assert_int_eq(agile_backoff_ceiling(&b, 3), 225 * MS);
}
END_TEST

START_TEST(backoff_rigid_full_equal)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	b.jitter = AGILE_JITTER_RIGID;
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.9, 0), 200 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 9, 0.0, 0), SEC);

	b.jitter = AGILE_JITTER_FULL;
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.0, 0), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.5, 0), 100 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 4, 0.25, 0), 200 * MS);

	b.jitter = AGILE_JITTER_EQUAL;
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.0, 0), 100 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.5, 0), 150 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 6, 0.5, 0), 750 * MS);
}
END_TEST

START_TEST(backoff_decorrelated_grows_from_previous)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	b.jitter = AGILE_JITTER_DECORRELATED;
	/* No previous wait reads as base: uniform over [100 ms, 300 ms]. */
	ck_assert_int_eq(agile_backoff_delay(&b, 1, 0.0, 0), 100 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 1, 0.5, 0), 200 * MS);
	/* From 500 ms: [100 ms, 1.5 s], held to the 1 s cap. */
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.5, 500 * MS), 800 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.9, 500 * MS), SEC);
	/* The retry number does not matter, only where the last wait fell. */
	ck_assert_int_eq(agile_backoff_delay(&b, 7, 0.5, 500 * MS), 800 * MS);
	/* A previous wait under a third of base keeps it at base. */
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.7, 10 * MS), 100 * MS);
}
END_TEST

START_TEST(backoff_spread_within_fraction_of_ceiling)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	/* The preset's second retry: a 200 ms ceiling, +-20%, so a draw of
	 * 0.1 waits 160 + 0.1 x 80 = 168 ms. */
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.1, 0), 168 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.0, 0), 160 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.5, 0), 200 * MS);
	ck_assert_int_le(agile_backoff_delay(&b, 2, 0.999999, 0), 240 * MS);
	ck_assert_int_gt(agile_backoff_delay(&b, 2, 0.999999, 0), 239 * MS);
	/* The upper end of the spread can exceed the 1 s cap. */
	ck_assert_int_eq(agile_backoff_delay(&b, 5, 0.75, 0), 1100 * MS);
	/* The fraction is held to [0, 1]. */
	b.spread = 3;
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.0, 0), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.75, 0), 300 * MS);
	b.spread = -1;
	ck_assert_int_eq(agile_backoff_delay(&b, 2, 0.75, 0), 200 * MS);
}
END_TEST

START_TEST(backoff_draws_clamped)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	b.jitter = AGILE_JITTER_FULL;
	ck_assert_int_eq(agile_backoff_delay(&b, 3, -0.5, 0), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, 3, NAN, 0), 0);
	ck_assert_int_eq(agile_backoff_delay(&b, 3, 7.0, 0), 400 * MS);
	ck_assert_int_eq(agile_backoff_delay(&b, 3, INFINITY, 0), 400 * MS);
	/* Same draw, same wait. */
	ck_assert_int_eq(agile_backoff_delay(&b, 3, 0.123, 0),
	                 agile_backoff_delay(&b, 3, 0.123, 0));
}
END_TEST

START_TEST(backoff_more)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	/* Three attempts: the first call and two retries. */
	ck_assert(agile_backoff_more(&b, 0));
	ck_assert(agile_backoff_more(&b, 1));
	ck_assert(agile_backoff_more(&b, 2));
	ck_assert(!agile_backoff_more(&b, 3));
	ck_assert(!agile_backoff_more(&b, 4));
	b.attempts = 1;
	ck_assert(!agile_backoff_more(&b, 1));
}
END_TEST

START_TEST(backoff_schedule_pads_with_zero)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;
	int64_t out[8];
	const double draws[] = { 0.5 };

	/* Two retries; the second has no draw and uses zero, the low end. */
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 1, out, 8), 2);
	ck_assert_int_eq(out[0], 100 * MS);
	ck_assert_int_eq(out[1], 160 * MS);
	ck_assert_uint_eq(agile_backoff_schedule(&b, NULL, 0, out, 8), 2);
	ck_assert_int_eq(out[0], 80 * MS);
	ck_assert_int_eq(out[1], 160 * MS);

	/* A short array gets what fits; the count says what was needed. */
	b.attempts = 6;
	out[1] = -1;
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 1, out, 1), 5);
	ck_assert_int_eq(out[0], 100 * MS);
	ck_assert_int_eq(out[1], -1);
	ck_assert_uint_eq(agile_backoff_schedule(&b, NULL, 0, NULL, 0), 5);

	/* No retries, nothing at all. */
	b.attempts = 1;
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 1, out, 8), 0);
	b.attempts = 0;
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 1, out, 8), 0);
	b.attempts = -4;
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 1, out, 8), 0);
}
END_TEST

START_TEST(backoff_schedule_decorrelated_chains)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;
	const double draws[] = { 0.5, 0.5, 0.5 };
	int64_t out[4];

	b.jitter = AGILE_JITTER_DECORRELATED;
	b.attempts = 5;
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 3, out, 4), 4);
	/* [100, 300] -> 200; [100, 600] -> 350; [100, 1050] -> 575; then
	 * the missing draw is zero: base. */
	ck_assert_int_eq(out[0], 200 * MS);
	ck_assert_int_eq(out[1], 350 * MS);
	ck_assert_int_eq(out[2], 575 * MS);
	ck_assert_int_eq(out[3], 100 * MS);
}
END_TEST

/* --- deadline ------------------------------------------------------------- */

START_TEST(deadline_expires_at_budget)
{
	struct agile_deadline d = agile_deadline_start(100 * MS, SEC);
	int64_t left = -1;

	ck_assert(!agile_deadline_expired(&d, SEC));
	ck_assert(!agile_deadline_expired(&d, SEC + 100 * MS - 1));
	ck_assert(agile_deadline_expired(&d, SEC + 100 * MS));
	ck_assert(agile_deadline_remaining(&d, SEC + 30 * MS, &left));
	ck_assert_int_eq(left, 70 * MS);
	ck_assert(agile_deadline_remaining(&d, SEC + 100 * MS, &left));
	ck_assert_int_eq(left, 0);
}
END_TEST

START_TEST(deadline_remaining_never_negative)
{
	struct agile_deadline d = agile_deadline_start(100 * MS, SEC);
	int64_t left = -1;

	ck_assert(agile_deadline_remaining(&d, 50 * SEC, &left));
	ck_assert_int_eq(left, 0);
	ck_assert(agile_deadline_remaining(&d, INT64_MAX, &left));
	ck_assert_int_eq(left, 0);
	/* A reading before the start has spent nothing. */
	ck_assert(agile_deadline_remaining(&d, 0, &left));
	ck_assert_int_eq(left, 100 * MS);
	ck_assert(!agile_deadline_expired(&d, INT64_MIN));
}
END_TEST

START_TEST(deadline_no_budget_never_expires)
{
	const int64_t budgets[] = { 0, -1, INT64_MIN };

	for (int i = 0; i < 3; i++) {
		struct agile_deadline d = agile_deadline_start(budgets[i], 0);
		int64_t left = 42;

		ck_assert(!agile_deadline_expired(&d, 0));
		ck_assert(!agile_deadline_expired(&d, INT64_MAX));
		/* No budget has no finite remainder. */
		ck_assert(!agile_deadline_remaining(&d, 0, &left));
		ck_assert_int_eq(left, 42);
	}
}
END_TEST

START_TEST(deadline_huge_budget)
{
	struct agile_deadline d = agile_deadline_start(INT64_MAX, INT64_MIN);
	int64_t left;

	/* The whole int64_t range apart, without overflowing: from INT64_MIN
	 * to -1 is exactly INT64_MAX nanoseconds. */
	ck_assert(!agile_deadline_expired(&d, -2));
	ck_assert(agile_deadline_remaining(&d, -2, &left));
	ck_assert_int_eq(left, 1);
	ck_assert(agile_deadline_expired(&d, -1));
	ck_assert(agile_deadline_remaining(&d, -1, &left));
	ck_assert_int_eq(left, 0);
	ck_assert(agile_deadline_expired(&d, INT64_MAX));
}
END_TEST

Suite *resilience_suite(void)
{
	Suite *s = suite_create("resilience");

	TCase *bucket = tcase_create("token_bucket");
	tcase_add_test(bucket, token_bucket_starts_full);
	tcase_add_test(bucket, token_bucket_burst_defaults_to_rate_never_under_one);
	tcase_add_test(bucket, token_bucket_init_rejects_invalid);
	tcase_add_test(bucket, token_bucket_refill_exact_and_capped);
	tcase_add_test(bucket, token_bucket_take_n);
	tcase_add_test(bucket, token_bucket_next_five_tokens_in_200ms);
	tcase_add_test(bucket, token_bucket_take_after_next_succeeds);
	tcase_add_test(bucket, token_bucket_clock_stepping_back);
	suite_add_tcase(s, bucket);

	TCase *sliding = tcase_create("sliding_window");
	tcase_add_test(sliding, sliding_window_counts_any_window_long_stretch);
	tcase_add_test(sliding, sliding_window_next_is_when_oldest_leaves);
	tcase_add_test(sliding, sliding_window_ring_wraps);
	tcase_add_test(sliding, sliding_window_edges);
	suite_add_tcase(s, sliding);

	TCase *period = tcase_create("period_quota");
	tcase_add_test(period, period_quota_under_hit_over);
	tcase_add_test(period, period_quota_opens_on_first_event);
	tcase_add_test(period, period_quota_aligned_on_callers_clock);
	tcase_add_test(period, period_quota_daily_resets_at_midnight_utc);
	tcase_add_test(period, period_quota_edges);
	suite_add_tcase(s, period);

	TCase *golden = tcase_create("golden");
	tcase_add_test(golden, golden_bursts_against_three_quotas);
	tcase_add_test(golden, golden_quota_headroom_after_a_burst);
	suite_add_tcase(s, golden);

	TCase *gate = tcase_create("gate");
	tcase_add_test(gate, gate_ceiling);
	tcase_add_test(gate, gate_zero_or_less_is_no_ceiling);
	tcase_add_test(gate, gate_threads_never_exceed_limit);
	suite_add_tcase(s, gate);

	TCase *backoff = tcase_create("backoff");
	tcase_add_test(backoff, backoff_preset_values);
	tcase_add_test(backoff, backoff_ceiling);
	tcase_add_test(backoff, backoff_rigid_full_equal);
	tcase_add_test(backoff, backoff_decorrelated_grows_from_previous);
	tcase_add_test(backoff, backoff_spread_within_fraction_of_ceiling);
	tcase_add_test(backoff, backoff_draws_clamped);
	tcase_add_test(backoff, backoff_more);
	tcase_add_test(backoff, backoff_schedule_pads_with_zero);
	tcase_add_test(backoff, backoff_schedule_decorrelated_chains);
	suite_add_tcase(s, backoff);

	TCase *deadline = tcase_create("deadline");
	tcase_add_test(deadline, deadline_expires_at_budget);
	tcase_add_test(deadline, deadline_remaining_never_negative);
	tcase_add_test(deadline, deadline_no_budget_never_expires);
	tcase_add_test(deadline, deadline_huge_budget);
	suite_add_tcase(s, deadline);

	return s;
}
