/*
 * check_bucket.c - the leaky bucket on a virtual clock: the first grant is
 * immediate, grants are spaced exactly one interval apart, a rate change
 * applies to the next grant, the ceiling holds whatever rate is asked for,
 * and an idle spell earns no burst; the send spacing's GCRA lets in-order
 * sends through and spaces a burst.  Times are plain integers chosen by the
 * test, so every expectation is exact.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "agile.h"
#include "check_suites.h"
#include "internal.h"

#define MS AGILE_NS_PER_MS
#define S AGILE_NS_PER_S

START_TEST(bucket_init_rejects_invalid)
{
	struct agile_bucket b;

	ck_assert_int_eq(agile_bucket_init(&b, 0, 100), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, -1, 100), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, NAN, 100), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, 10, 0), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, 10, -100), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, 10, NAN), -EINVAL);
	/* An infinite ceiling would be no ceiling. */
	ck_assert_int_eq(agile_bucket_init(&b, 10, INFINITY), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, 10, 100), 0);
}
END_TEST

START_TEST(bucket_init_clamps_rate_to_ceiling)
{
	struct agile_bucket b;

	ck_assert_int_eq(agile_bucket_init(&b, 1000, 100), 0);
	ck_assert_int_eq(b.interval_ns, 10 * MS);
	ck_assert_int_eq(b.min_interval_ns, 10 * MS);
	ck_assert_double_eq_tol(agile_bucket_rate(&b), 100, 1e-9);
	ck_assert_uint_eq(b.grants, 0);

	ck_assert_int_eq(agile_bucket_init(&b, INFINITY, 100), 0);
	ck_assert_int_eq(b.interval_ns, 10 * MS);
}
END_TEST

START_TEST(bucket_first_take_is_now)
{
	const int64_t nows[] = { 0, 12345, -5 * S, INT64_C(1) << 62 };

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		struct agile_bucket b;
		ck_assert_int_eq(agile_bucket_init(&b, 100, 100), 0);
		ck_assert_int_eq(agile_bucket_take(&b, nows[i]), nows[i]);
		ck_assert_uint_eq(b.grants, 1);
	}
}
END_TEST

START_TEST(bucket_spacing_exact)
{
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);

	/* A caller that takes faster than the rate gets slots exactly 10 ms
	 * apart, counted from the first grant, whatever its own clock says. */
	int64_t now = 7 * S;
	for (int k = 0; k < 50; k++) {
		ck_assert_int_eq(agile_bucket_take(&b, now), 7 * S + k * 10 * MS);
		now += 3 * MS;
	}
	ck_assert_uint_eq(b.grants, 50);
}
END_TEST

START_TEST(bucket_slot_is_now_when_late)
{
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 100), 0);

	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);
	ck_assert_int_eq(agile_bucket_take(&b, 15 * MS), 15 * MS);
	ck_assert_int_eq(agile_bucket_take(&b, 15 * MS), 25 * MS);
}
END_TEST

START_TEST(bucket_rate_rounding)
{
	struct agile_bucket b;

	/* The interval is 1e9 / rate rounded to the nearest nanosecond... */
	ck_assert_int_eq(agile_bucket_init(&b, 3, 10), 0);
	ck_assert_int_eq(b.interval_ns, 333333333);
	agile_bucket_set_rate(&b, 1.5);
	ck_assert_int_eq(b.interval_ns, 666666667);

	/* ...but the ceiling's spacing is rounded up, so running at the
	 * ceiling never goes a fraction faster than it. */
	ck_assert_int_eq(agile_bucket_init(&b, 3, 3), 0);
	ck_assert_int_eq(b.min_interval_ns, 333333334);
	ck_assert_int_eq(b.interval_ns, 333333334);
	ck_assert_double_le(agile_bucket_rate(&b), 3.0);
}
END_TEST

START_TEST(bucket_rate_change_affects_next_grant)
{
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);

	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 10 * MS);

	agile_bucket_set_rate(&b, 50);
	ck_assert_double_eq_tol(agile_bucket_rate(&b), 50, 1e-9);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 30 * MS);

	agile_bucket_set_rate(&b, 200);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 35 * MS);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 40 * MS);
}
END_TEST

/* 32 threads reserved their grants at 1 req/s, up to 31 s ahead; the
 * controller raises the rate to 100 at 0.5 s: without the retime, every
 * new grant queues behind them and the program sends at 1 req/s for half
 * a minute after the rise (issue 15's grant horizon). */
START_TEST(bucket_retime_moves_planned_grants_closer)
{
	struct agile_bucket b;
	int64_t planned[32];

	ck_assert_int_eq(agile_bucket_init(&b, 1, 1000), 0);
	for (int i = 0; i < 32; i++)
		planned[i] = agile_bucket_take(&b, 0);
	ck_assert_int_eq(planned[31], 31 * S);

	agile_bucket_retime(&b, 100, 500 * MS, 0);
	/* 30.5 s of grants at 1 s each are 30.5 grants: 305 ms at 10 ms. */
	ck_assert_int_eq(b.last_ns, 805 * MS);
	ck_assert_int_eq(agile_bucket_take(&b, 500 * MS), 815 * MS);

	/* Each waiter moves its own grant by the same factor, from when it
	 * asks; asking later only keeps it a little later. */
	int64_t ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, planned[31], &ref, 500 * MS, 0),
	                 805 * MS);
	ck_assert_int_eq(ref, 10 * MS);
	ck_assert_int_eq(agile_bucket_replan(&b, 805 * MS, &ref, 600 * MS, 0),
	                 805 * MS);
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, planned[31], &ref, 600 * MS, 0),
	                 904 * MS);
	/* Spacing between two waiters' grants stays at least the new
	 * interval. */
	ref = S;
	int64_t a = agile_bucket_replan(&b, planned[30], &ref, 600 * MS, 0);
	ck_assert_int_ge(904 * MS - a, 10 * MS);
	/* A grant already due is left alone. */
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, 400 * MS, &ref, 600 * MS, 0),
	                 400 * MS);
}
END_TEST

/* The grants of the next tick keep their times (they were planned
 * knowing what the last tick said); those beyond move. */
START_TEST(bucket_retime_keeps_the_next_tick)
{
	struct agile_bucket b;
	int64_t ref = S;

	ck_assert_int_eq(agile_bucket_init(&b, 1, 1000), 0);
	for (int i = 0; i < 32; i++)
		(void)agile_bucket_take(&b, 0);
	agile_bucket_retime(&b, 100, 0, S);
	/* 30 s of grants beyond the tick's, at 10 ms each. */
	ck_assert_int_eq(b.last_ns, 1300 * MS);
	ck_assert_int_eq(agile_bucket_replan(&b, 31 * S, &ref, 0, S),
	                 1300 * MS);
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, 800 * MS, &ref, 0, S),
	                 800 * MS);
	/* A rise with every grant inside the tick moves none. */
	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);
	for (int i = 0; i < 50; i++)
		(void)agile_bucket_take(&b, 0);
	agile_bucket_retime(&b, 200, 0, S);
	ck_assert_int_eq(b.last_ns, 490 * MS);
}
END_TEST

/*
 * An event loop waits for its sockets' grants one after another: 32 taken
 * at 1 req/s, 0 to 31 s, and the rate rises to 100 at 0.5 s.  The grant at
 * 1 s is inside the rise's tick and keeps its time; the loop asks for the
 * one at 2 s when that wait ends, at 1 s, and it is no longer inside the
 * tick after that ask (1 to 2 s) but past the rise's (to 1.5 s): it moves
 * to 1.505 s, and the next, asked then, to 1.52.  Kept from each ask
 * instead, each grant was a tick after the last wait's end and none
 * moved: the loop went on at 1 req/s (ab -c 32 after an SLO break, issue
 * 15).  A rise long before the ask keeps nothing past now.
 */
START_TEST(bucket_replan_keeps_the_tick_of_the_rise)
{
	struct agile_bucket b;
	int64_t ref = S;

	ck_assert_int_eq(agile_bucket_init(&b, 1, 1000), 0);
	for (int i = 0; i < 32; i++)
		(void)agile_bucket_take(&b, 0);
	agile_bucket_retime(&b, 100, 500 * MS, S);
	ck_assert_int_eq(b.rise_ns, 500 * MS);
	ck_assert_int_eq(agile_bucket_replan(&b, S, &ref, 500 * MS, S), S);
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, 2 * S, &ref, S, S),
	                 1505 * MS);
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, 3 * S, &ref, 1505 * MS, S),
	                 1519950 * 1000);
	/* Asked 10 s after the rise: from now. */
	ref = S;
	ck_assert_int_eq(agile_bucket_replan(&b, 31 * S, &ref, 10 * S, S),
	                 10 * S + 210 * MS);
	/* A fall records no rise, and a fresh bucket none. */
	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);
	agile_bucket_retime(&b, 10, 0, S);
	ck_assert_int_eq(b.rise_ns, INT64_MIN / 2);
}
END_TEST

/* A fall leaves the planned grants where they were promised; the next
 * grant is spaced at the new interval after the last of them. */
START_TEST(bucket_retime_fall_keeps_planned_grants)
{
	struct agile_bucket b;
	int64_t ref = 10 * MS;

	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);
	for (int i = 0; i < 3; i++)
		(void)agile_bucket_take(&b, 0);
	agile_bucket_retime(&b, 10, 0, 0);
	ck_assert_int_eq(b.last_ns, 20 * MS);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 120 * MS);
	ck_assert_int_eq(agile_bucket_replan(&b, 120 * MS, &ref, 0, 0), 120 * MS);
	ck_assert_int_eq(ref, 100 * MS);
}
END_TEST

/* A rise past the ceiling moves the grants by the ceiling's spacing only:
 * the retime never plans two grants closer than max allows. */
START_TEST(bucket_retime_holds_the_ceiling)
{
	struct agile_bucket b;

	ck_assert_int_eq(agile_bucket_init(&b, 10, 20), 0);
	for (int i = 0; i < 11; i++)
		(void)agile_bucket_take(&b, 0);
	ck_assert_int_eq(b.last_ns, S);
	agile_bucket_retime(&b, 1000, 0, 0);
	ck_assert_int_eq(b.interval_ns, 50 * MS);
	ck_assert_int_eq(b.last_ns, 500 * MS);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 550 * MS);
}
END_TEST

START_TEST(bucket_ceiling_enforced)
{
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 200), 0);

	agile_bucket_set_rate(&b, 1000);
	ck_assert_int_eq(b.interval_ns, 5 * MS);
	ck_assert_double_eq_tol(agile_bucket_rate(&b), 200, 1e-9);
	agile_bucket_set_rate(&b, INFINITY);
	ck_assert_int_eq(b.interval_ns, 5 * MS);

	for (int k = 0; k < 20; k++)
		ck_assert_int_eq(agile_bucket_take(&b, 0), k * 5 * MS);
}
END_TEST

START_TEST(bucket_ceiling_holds_if_field_corrupted)
{
	/* The struct lives in a shared file any process can write.  Even an
	 * interval written behind the bucket's back cannot undercut the
	 * ceiling's spacing. */
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 200), 0);
	b.interval_ns = 1;

	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 5 * MS);
	int64_t planned = -1;
	ck_assert(!agile_bucket_try_take(&b, 0, 9 * MS, &planned));
	ck_assert_int_eq(planned, -1);
}
END_TEST

START_TEST(bucket_ceiling_above_one_per_ns)
{
	/* 1e9 grants per second is the finest spacing an int64_t nanosecond
	 * clock can express; a higher ceiling is held at one grant per ns
	 * rather than letting grants share a slot. */
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 4e9, 2e9), 0);
	ck_assert_int_eq(b.min_interval_ns, 1);
	ck_assert_int_eq(agile_bucket_take(&b, 100), 100);
	ck_assert_int_eq(agile_bucket_take(&b, 100), 101);
	ck_assert_int_eq(agile_bucket_take(&b, 100), 102);
}
END_TEST

START_TEST(bucket_set_rate_ignores_invalid)
{
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 1000), 0);

	agile_bucket_set_rate(&b, 0);
	agile_bucket_set_rate(&b, -3);
	agile_bucket_set_rate(&b, NAN);
	agile_bucket_set_rate(&b, -INFINITY);
	ck_assert_int_eq(b.interval_ns, 10 * MS);
	ck_assert_double_eq_tol(agile_bucket_rate(&b), 100, 1e-9);
}
END_TEST

START_TEST(bucket_no_burst_after_idle)
{
	/*
	 * A greedy caller on a virtual clock that idles for long spells and then
	 * takes as fast as it can.  A token bucket would grant the idle spell's
	 * credit at once; this one must keep every window T to at most
	 * T / interval + 1 grants, and the first grant after the idle spell
	 * is at `now`, the next one interval later.
	 */
	enum { GRANTS = 2000 };
	static int64_t planned[GRANTS];
	const int64_t interval = 100 * MS;
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 10, 10), 0);

	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);
	ck_assert_int_eq(agile_bucket_take(&b, 60 * S), 60 * S);
	ck_assert_int_eq(agile_bucket_take(&b, 60 * S), 60 * S + interval);

	/* A fixed linear congruential generator keeps the schedule the same on
	 * every run: mostly bursts of takes at the same instant, sometimes a
	 * short step, sometimes minutes of silence. */
	uint64_t lcg = 42;
	int64_t now = 61 * S;
	for (int i = 0; i < GRANTS; i++) {
		lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned roll = (unsigned)(lcg >> 33) % 100;
		if (roll >= 97)
			now += (int64_t)(lcg >> 20) % (600 * S);
		else if (roll >= 80)
			now += (int64_t)(lcg >> 20) % (50 * MS);
		planned[i] = agile_bucket_take(&b, now);
		ck_assert_int_ge(planned[i], now);
		if (i > 0)
			ck_assert_int_ge(planned[i] - planned[i - 1], interval);
	}

	const int64_t windows[] = { interval, 250 * MS, S, 10 * S, 60 * S };
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
		int64_t span = windows[w];
		int64_t allowed = span / interval + 1;
		int end = 0;
		for (int start = 0; start < GRANTS; start++) {
			while (end < GRANTS && planned[end] <= planned[start] + span)
				end++;
			ck_assert_int_le(end - start, allowed);
		}
	}
}
END_TEST

START_TEST(bucket_try_take_refuses_beyond_max_wait)
{
	struct agile_bucket b;
	int64_t planned = -1;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 100), 0);

	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);

	/* The next slot is at 10 ms: waiting at most 5 ms, or 1 ns short of
	 * 10 ms, is refused and reserves nothing. */
	ck_assert(!agile_bucket_try_take(&b, 0, 5 * MS, &planned));
	ck_assert(!agile_bucket_try_take(&b, 0, 10 * MS - 1, &planned));
	ck_assert(!agile_bucket_try_take(&b, 0, -1, &planned));
	ck_assert_int_eq(planned, -1);
	ck_assert_uint_eq(b.grants, 1);
	ck_assert_int_eq(b.last_ns, 0);

	/* Exactly the wait it needs is enough. */
	ck_assert(agile_bucket_try_take(&b, 0, 10 * MS, &planned));
	ck_assert_int_eq(planned, 10 * MS);
	ck_assert_uint_eq(b.grants, 2);

	/* The refusals consumed nothing: the next take is one interval on. */
	ck_assert_int_eq(agile_bucket_take(&b, 0), 20 * MS);
}
END_TEST

START_TEST(bucket_try_take_due_now)
{
	struct agile_bucket b;
	int64_t planned = -1;
	ck_assert_int_eq(agile_bucket_init(&b, 100, 100), 0);

	ck_assert(agile_bucket_try_take(&b, 5 * S, 0, &planned));
	ck_assert_int_eq(planned, 5 * S);
	ck_assert(!agile_bucket_try_take(&b, 5 * S, 0, &planned));
	/* A caller that does not want the time may pass NULL. */
	ck_assert(agile_bucket_try_take(&b, 6 * S, 0, NULL));
	ck_assert_uint_eq(b.grants, 2);
	ck_assert_int_eq(agile_bucket_take(&b, 6 * S), 6 * S + 10 * MS);
}
END_TEST

START_TEST(bucket_saturates_instead_of_wrapping)
{
	/* Near the end of int64_t time the next slot saturates at INT64_MAX
	 * rather than wrapping into the past and being granted at once. */
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 1, 1), 0);
	ck_assert_int_eq(agile_bucket_take(&b, INT64_MAX - 10), INT64_MAX - 10);
	ck_assert_int_eq(agile_bucket_take(&b, INT64_MAX - 10), INT64_MAX);

	int64_t planned = -1;
	ck_assert(!agile_bucket_try_take(&b, INT64_MIN, INT64_MAX, &planned));
	ck_assert_int_eq(planned, -1);
}
END_TEST

START_TEST(bucket_tiny_rate_capped)
{
	/* A rate near zero asks for an interval beyond int64_t; it is capped
	 * at 2^62 ns (about 146 years) instead. */
	struct agile_bucket b;
	ck_assert_int_eq(agile_bucket_init(&b, 1e-30, 1), 0);
	ck_assert_int_eq(b.interval_ns, INT64_C(1) << 62);
	ck_assert_int_eq(agile_bucket_take(&b, 0), 0);
	ck_assert_int_eq(agile_bucket_take(&b, 0), INT64_C(1) << 62);
}
END_TEST

/* The send spacing (agile__bucket_send_slot), at 10/s: an interval of
 * 100 ms, a tolerance of 50 ms. */
static void send_bucket(struct agile_bucket *b)
{
	ck_assert_int_eq(agile_bucket_init(b, 10, 10), 0);
}

START_TEST(send_slot_in_order_never_waits)
{
	/* Sends that keep the schedule, even 40 ms late (within the
	 * tolerance), go out when they come and push no later send back. */
	struct agile_bucket b;
	int64_t tat = 0;

	send_bucket(&b);
	for (int64_t k = 0; k < 5; k++) {
		int64_t now = 1 * S + k * 100 * MS + (k % 2) * 40 * MS;

		ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, now), now);
	}
	/* A late send restarts the schedule from itself (1.14 s, 1.34 s), an
	 * early one within the tolerance goes on from it. */
	ck_assert_int_eq(tat, 1 * S + 540 * MS);
}
END_TEST

START_TEST(send_slot_spaces_a_burst)
{
	/* Five sends at one instant (grants waited for out of order): the
	 * first goes now, each later one an interval after the one before,
	 * less the tolerance. */
	struct agile_bucket b;
	int64_t tat = 0;
	const int64_t now = 7 * S;

	send_bucket(&b);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, now), now);
	for (int64_t k = 1; k < 5; k++)
		ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, now),
		                 now + k * 100 * MS - 50 * MS);
	ck_assert_int_eq(tat, now + 500 * MS);
}
END_TEST

START_TEST(send_slot_no_burst_credit_after_idle)
{
	/* A theoretical arrival time in the past is an idle destination: the
	 * next send goes now, and the one after it is spaced again. */
	struct agile_bucket b;
	int64_t tat = 1 * S;
	const int64_t now = 60 * S;

	send_bucket(&b);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, now), now);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, now), now + 50 * MS);
}
END_TEST

START_TEST(send_slot_uses_the_current_interval)
{
	/* A rate change applies to the next send; an interval below the
	 * ceiling's (a field another process wrote) is read as the
	 * ceiling's. */
	struct agile_bucket b;
	int64_t tat = 0;

	ck_assert_int_eq(agile_bucket_init(&b, 10, 20), 0);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 0);
	ck_assert_int_eq(tat, 100 * MS);
	agile_bucket_set_rate(&b, 20);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 75 * MS);
	ck_assert_int_eq(tat, 150 * MS);
	b.interval_ns = 1;
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 125 * MS);
	ck_assert_int_eq(tat, 200 * MS);
}
END_TEST

START_TEST(send_slot_ignores_garbage)
{
	/* A theoretical arrival time more than an hour ahead was not written
	 * by a send and is read as now; one just within the hour is kept.
	 * A bucket whose interval is none this build writes (0, or over an
	 * hour) spaces nothing and leaves the time alone. */
	struct agile_bucket b;
	const int64_t hour = 3600 * S;
	int64_t tat = INT64_MAX;

	send_bucket(&b);
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 0);
	ck_assert_int_eq(tat, 100 * MS);
	tat = hour;
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), hour - 50 * MS);
	ck_assert_int_eq(tat, hour + 100 * MS);

	b.interval_ns = 0;
	b.min_interval_ns = 0;
	tat = 5 * S;
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 0);
	ck_assert_int_eq(tat, 5 * S);
	b.interval_ns = hour + 1;
	ck_assert_int_eq(agile__bucket_send_slot(&b, &tat, 0), 0);
	ck_assert_int_eq(tat, 5 * S);
}
END_TEST

Suite *bucket_suite(void)
{
	Suite *s = suite_create("bucket");

	TCase *init = tcase_create("init");
	tcase_add_test(init, bucket_init_rejects_invalid);
	tcase_add_test(init, bucket_init_clamps_rate_to_ceiling);
	tcase_add_test(init, bucket_rate_rounding);
	tcase_add_test(init, bucket_tiny_rate_capped);
	suite_add_tcase(s, init);

	TCase *take = tcase_create("take");
	tcase_add_test(take, bucket_first_take_is_now);
	tcase_add_test(take, bucket_spacing_exact);
	tcase_add_test(take, bucket_slot_is_now_when_late);
	tcase_add_test(take, bucket_rate_change_affects_next_grant);
	tcase_add_test(take, bucket_retime_moves_planned_grants_closer);
	tcase_add_test(take, bucket_replan_keeps_the_tick_of_the_rise);
	tcase_add_test(take, bucket_retime_fall_keeps_planned_grants);
	tcase_add_test(take, bucket_retime_keeps_the_next_tick);
	tcase_add_test(take, bucket_retime_holds_the_ceiling);
	tcase_add_test(take, bucket_no_burst_after_idle);
	tcase_add_test(take, bucket_saturates_instead_of_wrapping);
	suite_add_tcase(s, take);

	TCase *ceiling = tcase_create("ceiling");
	tcase_add_test(ceiling, bucket_ceiling_enforced);
	tcase_add_test(ceiling, bucket_ceiling_holds_if_field_corrupted);
	tcase_add_test(ceiling, bucket_ceiling_above_one_per_ns);
	tcase_add_test(ceiling, bucket_set_rate_ignores_invalid);
	suite_add_tcase(s, ceiling);

	TCase *try_take = tcase_create("try_take");
	tcase_add_test(try_take, bucket_try_take_refuses_beyond_max_wait);
	tcase_add_test(try_take, bucket_try_take_due_now);
	suite_add_tcase(s, try_take);

	TCase *send = tcase_create("send_slot");
	tcase_add_test(send, send_slot_in_order_never_waits);
	tcase_add_test(send, send_slot_spaces_a_burst);
	tcase_add_test(send, send_slot_no_burst_credit_after_idle);
	tcase_add_test(send, send_slot_uses_the_current_interval);
	tcase_add_test(send, send_slot_ignores_garbage);
	suite_add_tcase(s, send);

	return s;
}
