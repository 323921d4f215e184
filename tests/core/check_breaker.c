/*
 * check_breaker.c - the rolling window and the two primitives built on it,
 * the SRE breaker and the CPU-aware shedder, on a virtual clock.
 *
 * Every expectation is exact: the window's bookkeeping is integer, and the
 * breaker's and shedder's formulas are recomputed here from the counts the
 * test put in, so a change to either formula shows up as a wrong number
 * rather than as a shifted threshold.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "agile_resilience.h"
#include "check_suites.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* A roll that never refuses while the drop fraction stays under it. */
#define LENIENT 0.999

/* --- rolling window ------------------------------------------------------- */

struct collected {
	int64_t values[AGILE_ROLLING_MAX_BUCKETS];
	int n;
};

static void collect(const void *bucket, void *arg)
{
	struct collected *c = arg;
	c->values[c->n++] = *(const int64_t *)bucket;
}

static struct collected each(const struct agile_rolling *w, int64_t now,
                             bool current, const int64_t *buckets)
{
	struct collected c = { .n = 0 };
	agile_rolling_each(w, now, current, buckets, sizeof(buckets[0]),
	                   collect, &c);
	return c;
}

static void add(struct agile_rolling *w, int64_t *buckets, int64_t now,
                int64_t v)
{
	buckets[agile_rolling_slot(w, now, buckets, sizeof(buckets[0]))] += v;
}

START_TEST(rolling_init_sizes)
{
	struct agile_rolling w;
	int64_t buckets[AGILE_ROLLING_MAX_BUCKETS];

	buckets[0] = 99;
	ck_assert_int_eq(agile_rolling_init(&w, 0, 1000, 5, buckets,
	                                    sizeof(buckets[0])), 0);
	ck_assert_int_eq(w.size, 1); /* raised to one */
	ck_assert_int_eq(w.width_ns, 1000);
	ck_assert_int_eq(w.start_ns, 5);
	ck_assert_int_eq(buckets[0], 0); /* zeroed */

	ck_assert_int_eq(agile_rolling_init(&w, 4, 3, 0, buckets,
	                                    sizeof(buckets[0])), 0);
	ck_assert_int_eq(w.width_ns, 1); /* 3 / 4 widened to 1 ns */

	ck_assert_int_eq(agile_rolling_init(&w, AGILE_ROLLING_MAX_BUCKETS, SEC,
	                                    0, buckets, sizeof(buckets[0])), 0);
	ck_assert_int_eq(agile_rolling_init(&w, AGILE_ROLLING_MAX_BUCKETS + 1,
	                                    SEC, 0, buckets,
	                                    sizeof(buckets[0])), -EINVAL);
}
END_TEST

START_TEST(rolling_each_oldest_first_with_and_without_current)
{
	struct agile_rolling w;
	int64_t b[4];

	ck_assert_int_eq(agile_rolling_init(&w, 4, 400, 0, b, sizeof(b[0])), 0);
	add(&w, b, 0, 1);   /* bucket [0, 100) */
	add(&w, b, 150, 2); /* bucket [100, 200) */
	ck_assert_int_eq(w.start_ns, 100); /* snapped, not 150 */

	/* At 150 the window is the four buckets ending with [100, 200): the
	 * two before [0, 100) are from a window ago and hold zeros. */
	struct collected c = each(&w, 150, true, b);
	ck_assert_int_eq(c.n, 4);
	ck_assert_int_eq(c.values[0], 0);
	ck_assert_int_eq(c.values[1], 0);
	ck_assert_int_eq(c.values[2], 1);
	ck_assert_int_eq(c.values[3], 2);

	/* Without the current bucket the partial [100, 200) is left out. */
	c = each(&w, 150, false, b);
	ck_assert_int_eq(c.n, 3);
	ck_assert_int_eq(c.values[2], 1);
}
END_TEST

START_TEST(rolling_reads_skip_swept_buckets_without_clearing)
{
	struct agile_rolling w;
	int64_t b[4];

	ck_assert_int_eq(agile_rolling_init(&w, 4, 400, 0, b, sizeof(b[0])), 0);
	add(&w, b, 0, 1);
	add(&w, b, 150, 2);

	/* At 350 the current bucket is [300, 400); [200, 300) and it were
	 * never written, so only [0, 100) and [100, 200) are live. */
	struct collected c = each(&w, 350, true, b);
	ck_assert_int_eq(c.n, 2);
	ck_assert_int_eq(c.values[0], 1);
	ck_assert_int_eq(c.values[1], 2);
	/* The current bucket is already among the skipped ones, so leaving
	 * it out changes nothing. */
	ck_assert_int_eq(each(&w, 350, false, b).n, 2);

	/* [0, 100) ages out at 400, [100, 200) at 500. */
	c = each(&w, 450, true, b);
	ck_assert_int_eq(c.n, 1);
	ck_assert_int_eq(c.values[0], 2);
	ck_assert_int_eq(each(&w, 500, true, b).n, 0);
	ck_assert_int_eq(each(&w, 10 * SEC, true, b).n, 0);

	/* Reads wrote nothing, and two reads at the same now agree. */
	ck_assert_int_eq(b[0], 1);
	ck_assert_int_eq(b[1], 2);
	ck_assert_int_eq(w.head, 1);
	ck_assert_int_eq(each(&w, 450, true, b).n, each(&w, 450, true, b).n);
}
END_TEST

START_TEST(rolling_writes_clear_swept_buckets_and_snap)
{
	struct agile_rolling w;
	int64_t b[4];

	ck_assert_int_eq(agile_rolling_init(&w, 4, 400, 0, b, sizeof(b[0])), 0);
	add(&w, b, 0, 1);
	add(&w, b, 150, 2);
	add(&w, b, 250, 4);
	/* A write at 450 sweeps past [200,300)'s successor slots: the slots
	 * for [300, 400) and [400, 500) are cleared, the latter holding
	 * [0, 100)'s 1 from a window ago. */
	add(&w, b, 450, 8);
	ck_assert_int_eq(w.start_ns, 400);
	struct collected c = each(&w, 450, true, b);
	ck_assert_int_eq(c.n, 4);
	ck_assert_int_eq(c.values[0], 2);
	ck_assert_int_eq(c.values[1], 4);
	ck_assert_int_eq(c.values[2], 0);
	ck_assert_int_eq(c.values[3], 8);

	/* A gap longer than the window clears everything and still lands on
	 * the grid the window opened on. */
	add(&w, b, 1234, 16);
	ck_assert_int_eq(w.start_ns, 1200);
	c = each(&w, 1234, true, b);
	ck_assert_int_eq(c.n, 4);
	ck_assert_int_eq(c.values[0] + c.values[1] + c.values[2], 0);
	ck_assert_int_eq(c.values[3], 16);
}
END_TEST

START_TEST(rolling_clock_stepping_back_stays_in_head)
{
	struct agile_rolling w;
	int64_t b[4];

	ck_assert_int_eq(agile_rolling_init(&w, 4, 400, 1000, b, sizeof(b[0])),
	                 0);
	add(&w, b, 1050, 1);
	add(&w, b, 900, 2); /* before the head's start: same bucket */
	ck_assert_int_eq(w.head, 0);
	ck_assert_int_eq(b[0], 3);
	ck_assert_int_eq(each(&w, 900, false, b).n, 3);
}
END_TEST

START_TEST(rolling_extreme_clock_values)
{
	struct agile_rolling w;
	int64_t b[8];

	ck_assert_int_eq(agile_rolling_init(&w, 8, 8 * SEC, INT64_MIN + 1, b,
	                                    sizeof(b[0])), 0);
	add(&w, b, INT64_MIN + 1, 1);
	/* A gap that overflows signed subtraction is still a whole window. */
	add(&w, b, INT64_MAX, 2);
	struct collected c = each(&w, INT64_MAX, true, b);
	ck_assert_int_eq(c.n, 8);
	int64_t sum = 0;
	for (int i = 0; i < c.n; i++)
		sum += c.values[i];
	ck_assert_int_eq(sum, 2);
	ck_assert_int_le(w.start_ns, INT64_MAX);
	ck_assert_int_gt(w.start_ns, INT64_MAX - SEC);
}
END_TEST

/* --- SRE breaker ---------------------------------------------------------- */

static void breaker_preset(struct agile_breaker *b)
{
	ck_assert_int_eq(agile_breaker_init(b, NULL, 0), 0);
}

/* Let one call through at `now` with a lenient roll and settle it. */
static void outcome(struct agile_breaker *b, int64_t now, bool success)
{
	struct agile_breaker_call call;

	ck_assert(agile_breaker_allow(b, now, LENIENT, &call));
	if (success)
		ck_assert_int_eq(agile_breaker_pass(b, &call, now), 0);
	else
		ck_assert_int_eq(agile_breaker_fail(b, &call, now), 0);
}

START_TEST(breaker_preset_values)
{
	struct agile_sre sre = AGILE_SRE_PRESET;
	struct agile_breaker b;

	ck_assert_double_eq(sre.k, 1.5);
	ck_assert_double_eq(sre.floor, 1.1);
	ck_assert_double_eq(sre.protection, 5);
	ck_assert_int_eq(sre.probe_ns, SEC);
	ck_assert_int_eq(sre.window_ns, 10 * SEC);
	ck_assert_int_eq(sre.size, 40);
	breaker_preset(&b);
	ck_assert_int_eq(b.window.width_ns, 250 * MS);
	ck_assert_int_eq(b.window.size, 40);

	/* Copy the preset and change one field. */
	sre.k = 2.0;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), 0);
	ck_assert_double_eq(b.sre.k, 2.0);
	ck_assert_double_eq(b.sre.floor, 1.1);
}
END_TEST

START_TEST(breaker_init_rejects_invalid)
{
	struct agile_breaker b;
	struct agile_sre sre = AGILE_SRE_PRESET;

	sre.k = NAN;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), -EINVAL);
	sre = (struct agile_sre)AGILE_SRE_PRESET;
	sre.protection = -1;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), -EINVAL);
	sre = (struct agile_sre)AGILE_SRE_PRESET;
	sre.probe_ns = -1;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), -EINVAL);
	sre = (struct agile_sre)AGILE_SRE_PRESET;
	sre.size = AGILE_ROLLING_MAX_BUCKETS + 1;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), -EINVAL);
	sre.size = 0;
	ck_assert_int_eq(agile_breaker_init(&b, &sre, 0), 0);
	ck_assert_int_eq(b.sre.size, 1);
}
END_TEST

START_TEST(breaker_healthy_passes_everything)
{
	struct agile_breaker b;
	breaker_preset(&b);

	/* A roll of zero is refused by any positive drop, so passing with it
	 * shows the drop is not positive. */
	for (int i = 0; i < 1000; i++) {
		struct agile_breaker_call call;
		int64_t now = i * 10 * MS;
		ck_assert(agile_breaker_allow(&b, now, 0.0, &call));
		ck_assert_int_eq(agile_breaker_pass(&b, &call, now), 0);
		ck_assert_double_eq(agile_breaker_ratio(&b, now), 0);
	}
}
END_TEST

START_TEST(breaker_protection_lets_first_calls_through)
{
	struct agile_breaker b;
	breaker_preset(&b);

	/* With no success at all, drop = (total - 5) / (total + 1) is at or
	 * under zero for the first six calls: protection. */
	for (int i = 0; i < 6; i++) {
		struct agile_breaker_call call;
		ck_assert(agile_breaker_allow(&b, 0, 0.0, &call));
		ck_assert_int_eq(agile_breaker_fail(&b, &call, 0), 0);
	}
	struct agile_breaker_call call;
	ck_assert(!agile_breaker_allow(&b, 0, 0.0, &call));
}
END_TEST

START_TEST(breaker_formula_exact)
{
	struct agile_breaker b;
	struct agile_breaker_reading r;
	breaker_preset(&b);

	/* Ten failures and four successes in the first bucket. */
	for (int i = 0; i < 10; i++)
		outcome(&b, 0, false);
	for (int i = 0; i < 4; i++)
		outcome(&b, 10 * MS, true);
	agile_breaker_read(&b, 20 * MS, &r);
	ck_assert_int_eq(r.total, 14);
	ck_assert_int_eq(r.accepts, 4);
	/* The bucket has both: it ends both runs. */
	ck_assert_int_eq(r.failing, 0);
	ck_assert_int_eq(r.working, 0);
	ck_assert_double_eq(r.weight, 1.5);
	double drop = (14 - 5 - 1.5 * 4) / 15.0;
	ck_assert_double_eq_tol(r.drop, drop, 1e-15);
	ck_assert_double_eq_tol(agile_breaker_ratio(&b, 20 * MS), drop, 1e-15);

	/* A roll just under the drop is refused, one at it passes. */
	struct agile_breaker_call call;
	ck_assert(agile_breaker_allow(&b, 20 * MS, drop, &call));
	ck_assert_int_eq(agile_breaker_pass(&b, &call, 20 * MS), 0);
	agile_breaker_read(&b, 20 * MS, &r);
	drop = (15 - 5 - 1.5 * 5) / 16.0;
	ck_assert_double_eq_tol(r.drop, drop, 1e-15);
	ck_assert(!agile_breaker_allow(&b, 20 * MS, nextafter(drop, 0), &call));
}
END_TEST

START_TEST(breaker_k_decays_with_failing_run)
{
	struct agile_breaker b;
	struct agile_breaker_reading r;
	breaker_preset(&b);

	/* One failure in each of 20 consecutive 250 ms buckets. */
	for (int i = 0; i < 20; i++)
		outcome(&b, i * 250 * MS, false);
	agile_breaker_read(&b, 19 * 250 * MS, &r);
	ck_assert_int_eq(r.failing, 20);
	ck_assert_double_eq_tol(r.weight, 1.5 - 0.4 * 20 / 40.0, 1e-15);

	/* An empty bucket leaves the run as it is; a drop-only bucket too. */
	agile_breaker_read(&b, 21 * 250 * MS, &r);
	ck_assert_int_eq(r.failing, 20);

	/* Forty failing buckets reach the floor, and it holds there. */
	for (int i = 20; i < 60; i++)
		outcome(&b, i * 250 * MS, false);
	agile_breaker_read(&b, 59 * 250 * MS, &r);
	ck_assert_int_eq(r.failing, 40);
	ck_assert_double_eq_tol(r.weight, 1.1, 1e-15);

	/* One success ends the failing run. */
	outcome(&b, 60 * 250 * MS, true);
	agile_breaker_read(&b, 60 * 250 * MS, &r);
	ck_assert_int_eq(r.failing, 0);
	ck_assert_double_eq(r.weight, 1.5);
}
END_TEST

START_TEST(breaker_recovery_scaled_by_working_run)
{
	struct agile_breaker b;
	struct agile_breaker_reading r;
	breaker_preset(&b);

	/* Three failures in each of buckets 0..19, then one success in each
	 * of buckets 20..29. */
	for (int i = 0; i < 20; i++)
		for (int j = 0; j < 3; j++)
			outcome(&b, i * 250 * MS, false);
	for (int i = 20; i < 30; i++)
		outcome(&b, i * 250 * MS, true);

	int64_t now = 29 * 250 * MS + 100 * MS;
	agile_breaker_read(&b, now, &r);
	ck_assert_int_eq(r.total, 70);
	ck_assert_int_eq(r.accepts, 10);
	ck_assert_int_eq(r.failing, 0);
	ck_assert_int_eq(r.working, 10);
	double drop = (70 - 5 - 1.5 * 10) / 71.0 * (40 - 10) / 40.0;
	ck_assert_double_eq_tol(r.drop, drop, 1e-15);

	/* Each further working bucket scales the refusals down by 1/40. */
	outcome(&b, 30 * 250 * MS, true);
	agile_breaker_read(&b, 30 * 250 * MS, &r);
	ck_assert_int_eq(r.working, 11);
	drop = (71 - 5 - 1.5 * 11) / 72.0 * 29 / 40.0;
	ck_assert_double_eq_tol(r.drop, drop, 1e-15);
}
END_TEST

START_TEST(breaker_refusals_recorded_as_drops)
{
	struct agile_breaker b;
	struct agile_breaker_reading before, after;
	struct agile_breaker_call call;
	breaker_preset(&b);

	for (int i = 0; i < 20; i++)
		outcome(&b, 0, false);
	agile_breaker_read(&b, 100 * MS, &before);
	ck_assert(!agile_breaker_allow(&b, 100 * MS, 0.0, &call));
	ck_assert_uint_eq(call.open, 0);
	agile_breaker_read(&b, 100 * MS, &after);
	ck_assert_int_eq(after.total, before.total + 1);
	ck_assert_int_eq(after.accepts, before.accepts);
	ck_assert_int_eq(b.tallies[0].drop, 1);
	ck_assert_int_eq(b.tallies[0].failure, 20);
	ck_assert_int_eq(b.tallies[0].total, 21);

	/* A refused call cannot be settled. */
	ck_assert_int_eq(agile_breaker_pass(&b, &call, 100 * MS), -EALREADY);
	ck_assert_int_eq(b.tallies[0].total, 21);
}
END_TEST

START_TEST(breaker_probe_after_quiet_spell)
{
	struct agile_breaker b;
	struct agile_breaker_call call;
	breaker_preset(&b);

	/* Twenty failures at 0: the last call let through was at 0. */
	for (int i = 0; i < 20; i++)
		outcome(&b, 0, false);
	ck_assert(!agile_breaker_allow(&b, 100 * MS, 0.0, &call));
	/* Exactly probe_ns later is not yet past it. */
	ck_assert(!agile_breaker_allow(&b, SEC, 0.0, &call));
	/* The ratio leaves the probe out: it stays positive while the probe
	 * lets one call through whatever the roll. */
	ck_assert_double_gt(agile_breaker_ratio(&b, SEC + 1), 0.5);
	ck_assert(agile_breaker_allow(&b, SEC + 1, 0.0, &call));
	ck_assert_int_eq(b.last_pass_ns, SEC + 1);
	/* Only one: the next call at the same instant rolls again. */
	struct agile_breaker_call second;
	ck_assert(!agile_breaker_allow(&b, SEC + 1, 0.0, &second));
	/* The probe succeeds; the backend is noticed back. */
	ck_assert_int_eq(agile_breaker_pass(&b, &call, SEC + 2), 0);
	struct agile_breaker_reading r;
	agile_breaker_read(&b, SEC + 2, &r);
	ck_assert_int_eq(r.accepts, 1);
	ck_assert_int_eq(r.working, 1);
}
END_TEST

START_TEST(breaker_call_settled_exactly_once)
{
	struct agile_breaker b;
	struct agile_breaker_call call;
	breaker_preset(&b);

	ck_assert(agile_breaker_allow(&b, 0, 0.5, &call));
	ck_assert_uint_eq(call.open, 1);
	/* Until settled the window holds no record of the call. */
	ck_assert_int_eq(b.tallies[0].total, 0);
	ck_assert_int_eq(agile_breaker_pass(&b, &call, 5 * MS), 0);
	ck_assert_int_eq(agile_breaker_fail(&b, &call, 5 * MS), -EALREADY);
	ck_assert_int_eq(agile_breaker_pass(&b, &call, 5 * MS), -EALREADY);
	ck_assert_int_eq(b.tallies[0].total, 1);
	ck_assert_int_eq(b.tallies[0].success, 1);
	ck_assert_int_eq(b.tallies[0].failure, 0);
}
END_TEST

START_TEST(breaker_outage_ages_out_of_window)
{
	struct agile_breaker b;
	breaker_preset(&b);

	for (int i = 0; i < 50; i++)
		outcome(&b, 0, false);
	ck_assert_double_gt(agile_breaker_ratio(&b, 0), 0.8);
	/* The outage bucket is still inside the window 9.99 s later and gone
	 * at 10 s, with nothing written in between: reads age it out. */
	ck_assert_double_gt(agile_breaker_ratio(&b, 10 * SEC - 1), 0.8);
	ck_assert_double_eq(agile_breaker_ratio(&b, 10 * SEC), 0);
	struct agile_breaker_call call;
	ck_assert(agile_breaker_allow(&b, 10 * SEC, 0.0, &call));
}
END_TEST

START_TEST(breaker_recovers_within_seconds_after_outage)
{
	/* A one-minute outage under steady traffic of 100 calls a second,
	 * each refused or let through by a fixed sequence of rolls, then a
	 * backend that answers again.  The working-run scaling, not the
	 * ageing of the window, is what lifts the throttle: within six
	 * seconds of recovery at least half the calls pass. */
	struct agile_breaker b;
	breaker_preset(&b);
	uint64_t state = 42;
	int64_t now = 0;

	for (; now < 60 * SEC; now += 10 * MS) {
		struct agile_breaker_call call;
		state = state * 6364136223846793005u + 1442695040888963407u;
		double roll = (double)(state >> 11) / 9007199254740992.0;
		if (agile_breaker_allow(&b, now, roll, &call))
			ck_assert_int_eq(agile_breaker_fail(&b, &call, now), 0);
	}
	ck_assert_double_gt(agile_breaker_ratio(&b, now), 0.8);

	int passed_last_second = 0;
	for (int64_t end = now + 6 * SEC; now < end; now += 10 * MS) {
		struct agile_breaker_call call;
		state = state * 6364136223846793005u + 1442695040888963407u;
		double roll = (double)(state >> 11) / 9007199254740992.0;
		bool ok = agile_breaker_allow(&b, now, roll, &call);
		if (ok)
			ck_assert_int_eq(agile_breaker_pass(&b, &call, now), 0);
		if (end - now <= SEC)
			passed_last_second += ok;
	}
	ck_assert_int_ge(passed_last_second, 50);
}
END_TEST

/* --- CPU-aware shedder ---------------------------------------------------- */

static void shedder_preset(struct agile_shedder *s)
{
	ck_assert_int_eq(agile_shedder_init(s, NULL, 0), 0);
}

START_TEST(shedder_preset_values)
{
	struct agile_shed shed = AGILE_SHED_PRESET;
	struct agile_shedder s;

	ck_assert_int_eq(shed.size, 50);
	ck_assert_int_eq(shed.window_ns, 5 * SEC);
	ck_assert_int_eq(shed.cpu, 900);
	ck_assert_int_eq(shed.latency_ns, SEC);
	ck_assert_double_eq(shed.beta, 0.9);
	ck_assert_int_eq(shed.cool_ns, SEC);
	ck_assert_double_eq(shed.floor, 0.1);
	shedder_preset(&s);
	ck_assert_int_eq(s.window.width_ns, 100 * MS);

	shed.cpu = 1000;
	ck_assert_int_eq(agile_shedder_init(&s, &shed, 0), -EINVAL);
	shed = (struct agile_shed)AGILE_SHED_PRESET;
	shed.beta = 1.5;
	ck_assert_int_eq(agile_shedder_init(&s, &shed, 0), -EINVAL);
	shed = (struct agile_shed)AGILE_SHED_PRESET;
	shed.floor = NAN;
	ck_assert_int_eq(agile_shedder_init(&s, &shed, 0), -EINVAL);
	shed = (struct agile_shed)AGILE_SHED_PRESET;
	shed.size = AGILE_ROLLING_MAX_BUCKETS + 1;
	ck_assert_int_eq(agile_shedder_init(&s, &shed, 0), -EINVAL);
}
END_TEST

START_TEST(shedder_assumed_latency_while_window_empty)
{
	struct agile_shedder s;
	struct agile_shedder_reading r;
	shedder_preset(&s);

	agile_shedder_read(&s, 0, 0, &r);
	ck_assert_int_eq(r.busiest, 1);
	ck_assert_double_eq(r.fastest_ns, 1e9);
	/* One pass per 100 ms bucket for one second: ten in flight. */
	ck_assert_double_eq(r.capacity, 10);
	ck_assert_double_eq(r.factor, 1);
	ck_assert(!r.hot);
}
END_TEST

START_TEST(shedder_capacity_from_whole_buckets)
{
	struct agile_shedder s;
	struct agile_shedder_reading r;
	struct agile_shedder_ticket t[8];
	shedder_preset(&s);

	/* Bucket [0, 100 ms): three passes of 40 ms.  Bucket [100, 200 ms):
	 * five passes of 80 ms. */
	for (int i = 0; i < 3; i++)
		ck_assert(agile_shedder_allow(&s, 0, 0, &t[i]));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(agile_shedder_pass(&s, &t[i], 40 * MS), 0);
	for (int i = 0; i < 5; i++)
		ck_assert(agile_shedder_allow(&s, 100 * MS, 0, &t[i]));
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(agile_shedder_pass(&s, &t[i], 180 * MS), 0);

	/* At 150 ms the current bucket is partial and left out. */
	agile_shedder_read(&s, 150 * MS, 0, &r);
	ck_assert_int_eq(r.busiest, 3);
	ck_assert_double_eq(r.fastest_ns, 40e6);
	ck_assert_double_eq_tol(r.capacity, 3 * 40e6 / 100e6, 1e-12);

	/* At 250 ms both are whole: the busiest bucket and the fastest one
	 * are different buckets, and capacity combines them. */
	agile_shedder_read(&s, 250 * MS, 925, &r);
	ck_assert_int_eq(r.busiest, 5);
	ck_assert_double_eq(r.fastest_ns, 40e6);
	ck_assert_double_eq_tol(r.capacity, 5 * 40e6 / 100e6, 1e-12);
	ck_assert_double_eq_tol(r.factor, 75 / 100.0, 1e-15);
	ck_assert(r.hot);

	/* At 5.05 s the window covers [0.1 s, 5.1 s): the first bucket has
	 * aged out and the second is all that is left. */
	agile_shedder_read(&s, 5 * SEC + 50 * MS, 0, &r);
	ck_assert_int_eq(r.busiest, 5);
	ck_assert_double_eq(r.fastest_ns, 80e6);
	ck_assert_double_eq_tol(r.capacity, 5 * 80e6 / 100e6, 1e-12);

	/* A capacity under one call is raised to one. */
	shedder_preset(&s);
	ck_assert(agile_shedder_allow(&s, 0, 0, &t[0]));
	ck_assert_int_eq(agile_shedder_pass(&s, &t[0], 40 * MS), 0);
	agile_shedder_read(&s, 150 * MS, 0, &r);
	ck_assert_int_eq(r.busiest, 1);
	ck_assert_double_eq(r.capacity, 1);
}
END_TEST

START_TEST(shedder_floor_share)
{
	struct agile_shedder s;
	struct agile_shedder_reading r;
	shedder_preset(&s);

	int32_t cpus[] = { 0, 900, 950, 990, 1000, 5000 };
	double factors[] = { 1, 1, 0.5, 0.1, 0.1, 0.1 };
	for (int i = 0; i < 6; i++) {
		agile_shedder_read(&s, 0, cpus[i], &r);
		ck_assert_double_eq_tol(r.factor, factors[i], 1e-15);
	}
}
END_TEST

START_TEST(shedder_in_flight_moving_average)
{
	struct agile_shedder s;
	struct agile_shedder_ticket t[10];
	shedder_preset(&s);

	for (int i = 0; i < 10; i++)
		ck_assert(agile_shedder_allow(&s, 0, 0, &t[i]));
	ck_assert_int_eq(agile_shedder_flying(&s), 10);
	/* Starting calls does not move the average; finishing does, with
	 * the count left in flight. */
	ck_assert_double_eq(s.average, 0);
	ck_assert_int_eq(agile_shedder_fail(&s, &t[0]), 0);
	ck_assert_double_eq_tol(s.average, 0.1 * 9, 1e-15);
	ck_assert_int_eq(agile_shedder_pass(&s, &t[1], MS), 0);
	ck_assert_double_eq_tol(s.average, 0.9 * 0.9 + 0.1 * 8, 1e-15);
	ck_assert_int_eq(agile_shedder_flying(&s), 8);
	/* Exactly one settlement per ticket. */
	ck_assert_int_eq(agile_shedder_fail(&s, &t[1]), -EALREADY);
	ck_assert_int_eq(agile_shedder_pass(&s, &t[0], MS), -EALREADY);
	ck_assert_int_eq(agile_shedder_flying(&s), 8);
}
END_TEST

/* Keep 100 calls in flight and finish-and-restart ten of them, failing
 * them so capacity stays at the empty-window ten: the average climbs to
 * 99 * (1 - 0.9^10), about 64.5. */
static void fill(struct agile_shedder *s, struct agile_shedder_ticket *t)
{
	for (int i = 0; i < 100; i++)
		ck_assert(agile_shedder_allow(s, 0, 0, &t[i]));
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(agile_shedder_fail(s, &t[i]), 0);
		ck_assert(agile_shedder_allow(s, 0, 0, &t[i]));
	}
	ck_assert_double_eq_tol(s->average, 99 * (1 - pow(0.9, 10)), 1e-9);
}

START_TEST(shedder_needs_hot_and_full)
{
	struct agile_shedder s;
	struct agile_shedder_ticket t[101];
	shedder_preset(&s);

	/* CPU at 100% but the in-flight average still zero: not full. */
	for (int i = 0; i < 50; i++)
		ck_assert(agile_shedder_allow(&s, 0, 1000, &t[i]));
	shedder_preset(&s);
	fill(&s, t);
	/* Average far over capacity, but the CPU under the threshold. */
	ck_assert(agile_shedder_allow(&s, MS, 899, &t[100]));
	ck_assert_int_eq(agile_shedder_fail(&s, &t[100]), 0);
	/* Hot and full. */
	ck_assert(!agile_shedder_allow(&s, MS, 900, &t[100]));
	ck_assert_uint_eq(t[100].open, 0);
	ck_assert_int_eq(agile_shedder_flying(&s), 100);
}
END_TEST

START_TEST(shedder_limit_is_scaled_capacity)
{
	struct agile_shedder s;
	struct agile_shedder_ticket t[20];
	shedder_preset(&s);

	/* Seven in flight and an average of 5.5, as if the server had been
	 * running a while; one finishing leaves six and moves the average to
	 * 0.9 x 5.5 + 0.1 x 6.  The empty window's capacity is ten. */
	for (int i = 0; i < 7; i++)
		ck_assert(agile_shedder_allow(&s, 0, 0, &t[i]));
	s.average = 5.5;
	ck_assert_int_eq(agile_shedder_fail(&s, &t[0]), 0);
	ck_assert_double_eq_tol(s.average, 0.9 * 5.5 + 0.6, 1e-12);
	/* At 950 thousandths the limit is 10 x 0.5 = 5: flying 6 > 5 and
	 * average 5.55 > 5, refused. */
	ck_assert(!agile_shedder_allow(&s, 0, 950, &t[0]));
	/* At 940 the limit is 10 x 0.6 = 6: flying 6 is not over it. */
	ck_assert(agile_shedder_allow(&s, 0, 940, &t[0]));
}
END_TEST

START_TEST(shedder_cool_down)
{
	struct agile_shedder s;
	struct agile_shedder_ticket t[101];
	struct agile_shedder_reading r;
	shedder_preset(&s);

	fill(&s, t);
	ck_assert(!agile_shedder_allow(&s, 2 * SEC, 950, &t[100]));
	/* The CPU falls back, but the shedder refused while hot: it stays hot
	 * for a second after the last hot reading. */
	ck_assert(!agile_shedder_allow(&s, 2 * SEC + 500 * MS, 0, &t[100]));
	ck_assert(!agile_shedder_allow(&s, 3 * SEC - 1, 0, &t[100]));
	agile_shedder_read(&s, 3 * SEC, 0, &r);
	ck_assert(!r.hot);
	ck_assert(agile_shedder_allow(&s, 3 * SEC, 0, &t[100]));
	ck_assert_uint_eq(s.dropped, 0);
	ck_assert_int_eq(agile_shedder_fail(&s, &t[100]), 0);

	/* Hot without a refusal leaves nothing behind when the CPU falls. */
	shedder_preset(&s);
	ck_assert(agile_shedder_allow(&s, 0, 950, &t[0]));
	agile_shedder_read(&s, 1, 0, &r);
	ck_assert(!r.hot);
}
END_TEST

Suite *breaker_suite(void)
{
	Suite *s = suite_create("breaker");

	TCase *rolling = tcase_create("rolling");
	tcase_add_test(rolling, rolling_init_sizes);
	tcase_add_test(rolling, rolling_each_oldest_first_with_and_without_current);
	tcase_add_test(rolling, rolling_reads_skip_swept_buckets_without_clearing);
	tcase_add_test(rolling, rolling_writes_clear_swept_buckets_and_snap);
	tcase_add_test(rolling, rolling_clock_stepping_back_stays_in_head);
	tcase_add_test(rolling, rolling_extreme_clock_values);
	suite_add_tcase(s, rolling);

	TCase *breaker = tcase_create("sre");
	tcase_add_test(breaker, breaker_preset_values);
	tcase_add_test(breaker, breaker_init_rejects_invalid);
	tcase_add_test(breaker, breaker_healthy_passes_everything);
	tcase_add_test(breaker, breaker_protection_lets_first_calls_through);
	tcase_add_test(breaker, breaker_formula_exact);
	tcase_add_test(breaker, breaker_k_decays_with_failing_run);
	tcase_add_test(breaker, breaker_recovery_scaled_by_working_run);
	tcase_add_test(breaker, breaker_refusals_recorded_as_drops);
	tcase_add_test(breaker, breaker_probe_after_quiet_spell);
	tcase_add_test(breaker, breaker_call_settled_exactly_once);
	tcase_add_test(breaker, breaker_outage_ages_out_of_window);
	tcase_add_test(breaker, breaker_recovers_within_seconds_after_outage);
	suite_add_tcase(s, breaker);

	TCase *shedder = tcase_create("shedder");
	tcase_add_test(shedder, shedder_preset_values);
	tcase_add_test(shedder, shedder_assumed_latency_while_window_empty);
	tcase_add_test(shedder, shedder_capacity_from_whole_buckets);
	tcase_add_test(shedder, shedder_floor_share);
	tcase_add_test(shedder, shedder_in_flight_moving_average);
	tcase_add_test(shedder, shedder_needs_hot_and_full);
	tcase_add_test(shedder, shedder_limit_is_scaled_capacity);
	tcase_add_test(shedder, shedder_cool_down);
	suite_add_tcase(s, shedder);

	return s;
}
