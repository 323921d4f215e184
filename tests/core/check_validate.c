/*
 * check_validate.c - a limiter's body as another process may leave it in
 * the shared state file, on a virtual clock.
 *
 * Two promises.  The core is total on any bit pattern its pointer-free state
 * can hold: the garbage a wider fuzzer found in slot bodies (a negative
 * min_interval_ns in the bucket's saturating add, a NaN reaching an integer
 * in the tail guard, now + tick_ns past INT64_MAX) gives exact, defined
 * answers here, and the sanitizer build turns any overflow or bad conversion
 * into a failure.  And agile_rate_validate tells garbage from every state
 * the core itself reaches: each field it checks is damaged on its own and
 * named, and long runs through the control law's paths never fail it.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "agile.h"
#include "check_suites.h"
#include "internal.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* --- helpers -------------------------------------------------------------- */

static struct agile_resolved resolved_of(const struct agile_config *c)
{
	struct agile_resolved r;

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(agile_resolve(c, AGILE_KIND_RATE, &r), 0);
	return r;
}

/* A limiter at max 100/s, floor 10 (min and probe 1) started at now_ns. */
static void init_100(struct agile_rate_limiter *l, int64_t now_ns)
{
	struct agile_config c = { .max_rate = 100, .floor_rate = 10 };

	ck_assert_int_eq(agile_rate_init(l, &c, now_ns), 0);
}

/* The check's verdict on `l` against its own configuration, and the field
 * named, "" when it passes. */
static const char *verdict(const struct agile_rate_limiter *l, int64_t now_ns)
{
	static struct agile_problem why;
	struct agile_resolved r = l->loop.config;

	memset(&why, 0, sizeof(why));
	if (agile_rate_validate(l, &r, now_ns, &why) == 0) {
		ck_assert_str_eq(why.field, "");
		return "";
	}
	ck_assert_msg(why.message[0] != '\0', "a rejection says why");
	return why.field;
}

/* A tick's worth of traffic: `n` grants and answers of `rtt_ns` each. */
static void busy_tick(struct agile_rate_limiter *l, int64_t now_ns, int n,
                      int64_t rtt_ns)
{
	for (int i = 0; i < n; i++) {
		(void)agile_rate_take(l, now_ns);
		agile_rate_observe(l, rtt_ns);
	}
}

/* --- the core is total ------------------------------------------------------ */

START_TEST(validate_bucket_negative_min_interval_saturates)
{
	struct agile_bucket b;

	/* The fuzzer's first find: a negative spacing made the saturating
	 * add itself overflow.  A spacing below 1 ns reads as 1 ns. */
	ck_assert_int_eq(agile_bucket_init(&b, 10, 100), 0);
	b.min_interval_ns = INT64_MIN;
	b.interval_ns = INT64_MIN;
	b.last_ns = INT64_MAX - 1;
	ck_assert_int_eq(agile_bucket_take(&b, 5 * SEC), INT64_MAX);
	ck_assert_int_eq(agile_bucket_take(&b, 5 * SEC), INT64_MAX);
	b.last_ns = INT64_MIN;
	ck_assert_int_eq(agile_bucket_take(&b, 5 * SEC), 5 * SEC);
	ck_assert_int_eq(agile_bucket_take(&b, 5 * SEC), 5 * SEC + 1);
	ck_assert_double_eq(agile_bucket_rate(&b), 1e9);
	b.interval_ns = 0;
	ck_assert_double_eq(agile_bucket_rate(&b), 1e9);
	/* A spacing past the longest is read as the longest (2^62 ns). */
	b.min_interval_ns = INT64_MAX;
	b.interval_ns = INT64_MAX;
	b.last_ns = 0;
	ck_assert_int_eq(agile_bucket_take(&b, 0), INT64_C(1) << 62);
}
END_TEST

START_TEST(validate_tick_clock_saturates)
{
	struct agile_config c = { .max_rate = 100, .tick_ns = AGILE_TICK_MAX_NS };
	struct agile_rate_limiter l;
	const int64_t late = INT64_MAX - AGILE_TICK_MAX_NS / 2;

	/* now + tick_ns past INT64_MAX, at init and at every claim. */
	ck_assert_int_eq(agile_rate_init(&l, &c, late), 0);
	ck_assert_int_eq(l.loop.next_tick_ns, INT64_MAX);
	l.loop.next_tick_ns = late;
	ck_assert(agile_rate_tick_if_due(&l, late + 1));
	ck_assert_int_eq(l.loop.next_tick_ns, INT64_MAX);
	ck_assert(!agile_rate_tick_if_due(&l, INT64_MAX - 1));

	/* A last tick at INT64_MIN: the elapsed time saturates at INT64_MAX
	 * ns, over which the tick's ten grants spread. */
	init_100(&l, 5 * SEC);
	l.loop.last_tick_ns = INT64_MIN;
	busy_tick(&l, 5 * SEC, 10, 20 * MS);
	agile_rate_tick(&l, 6 * SEC);
	ck_assert_double_eq(l.loop.ctl.used,
	                    10 / ((double)INT64_MAX / (double)SEC));
	ck_assert_int_eq(l.loop.last_tick_ns, 6 * SEC);
}
END_TEST

START_TEST(validate_controller_nan_reads_as_floor)
{
	struct agile_config c = { .max_rate = 100, .floor_rate = 10,
	                          .slo_ns = 100 * MS };
	struct agile_rate_limiter l;
	struct agile_stats s;

	ck_assert_int_eq(agile_rate_init(&l, &c, 0), 0);
	/* The fuzzer's second find: a NaN tail target reached an integer.
	 * With a NaN rate, tail factor and smoothed share, a tick with
	 * samples steps to the floor, the cautious end. */
	l.loop.ctl.rate = NAN;
	l.loop.ctl.tail_ratio = NAN;
	l.loop.config.tail_factor = NAN;
	busy_tick(&l, 0, 20, 20 * MS);
	agile_rate_tick(&l, SEC);
	ck_assert_double_eq(agile_rate_rate(&l), 10);
	ck_assert_double_eq(agile_bucket_rate(&l.bucket), 10);

	/* An infinite tail target counts nothing above it. */
	init_100(&l, 0);
	l.loop.config.slo_ns = 100 * MS;
	l.loop.config.tail_factor = INFINITY;
	l.loop.config.tail_tolerance = 0.05;
	busy_tick(&l, 0, 20, 20 * MS);
	agile_rate_tick(&l, SEC);
	ck_assert_double_eq(l.loop.ctl.tail_ratio, 0);

	/* Statistics of latencies no int64_t holds: NaN reads as 0, the
	 * rest clamps. */
	l.loop.ctl.baseline_ns = NAN;
	l.loop.ctl.fast_ns = INFINITY;
	l.loop.ctl.p50_ns = -INFINITY;
	l.loop.ctl.p99_ns = 1e300;
	agile_rate_stats(&l, &s);
	ck_assert_int_eq(s.baseline_ns, 0);
	ck_assert_int_eq(s.fast_ns, INT64_MAX);
	ck_assert_int_eq(s.p50_ns, INT64_MIN);
	ck_assert_int_eq(s.p99_ns, INT64_MAX);
}
END_TEST

START_TEST(validate_counters_saturate)
{
	struct agile_rate_limiter l;

	/* Counts of agreeing ticks stop at INT32_MAX rather than overflow. */
	init_100(&l, 0);
	l.loop.ctl.up_agree = INT32_MAX;
	busy_tick(&l, 0, 100, 5 * MS);
	agile_rate_tick(&l, SEC);
	ck_assert_int_eq(l.loop.ctl.up_agree, INT32_MAX);
	l.loop.ctl.down_agree = INT32_MAX;
	l.loop.ctl.baseline_ns = (double)MS;
	busy_tick(&l, SEC, 100, 500 * MS);
	agile_rate_tick(&l, 2 * SEC);
	ck_assert_int_eq(l.loop.ctl.down_agree, INT32_MAX);
}
END_TEST

START_TEST(validate_slo_anchor_without_slo_cuts_a_full_step)
{
	struct agile_rate_limiter l;

	/* An SLO anchor with no SLO (no resolve writes it) has a window of
	 * 0: a congested tick cuts the full down_step instead of dividing by
	 * the window. */
	init_100(&l, 0);
	l.loop.config.anchor = AGILE_ANCHOR_SLO;
	l.loop.ctl.cold_start = 0;
	l.loop.ctl.rate = 50;
	busy_tick(&l, 0, 50, 20 * MS);
	agile_rate_tick(&l, SEC);
	ck_assert_uint_eq(l.loop.ctl.last_action, AGILE_ACTION_DECREASE);
	ck_assert_double_eq_tol(agile_rate_rate(&l), 50 * (1 - 0.3), 1e-9);
}
END_TEST

START_TEST(validate_concurrency_limit_of_garbage)
{
	struct agile_config c = { .max_rate = 8 };
	struct agile_conc_limiter l;

	/* The limit is the controller's target made whole: a NaN target
	 * steps to the floor, never through a conversion of the NaN. */
	ck_assert_int_eq(agile_conc_init(&l, &c, 0), 0);
	l.loop.ctl.rate = NAN;
	agile_conc_tick(&l, SEC);
	ck_assert_uint_eq(agile_conc_limit(&l), 1);
}
END_TEST

/* Random bytes over a whole body, seeded: every operation runs on them
 * (under the sanitizers: without a report), the check rejects them, and a
 * fresh init passes it. */
START_TEST(validate_random_bodies)
{
	uint64_t x = 0x9e3779b97f4a7c15u;

	for (int round = 0; round < 200; round++) {
		struct agile_rate_limiter l;
		uint8_t *p = (uint8_t *)&l;
		struct agile_stats s;
		int64_t planned;

		for (size_t i = 0; i < sizeof(l); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (uint8_t)x;
		}
		ck_assert_str_ne(verdict(&l, 5 * SEC), "");
		for (int k = 0; k < 3; k++) {
			int64_t t = (5 + k) * SEC;

			(void)agile_rate_take(&l, t);
			(void)agile_rate_try_take(&l, t, SEC, &planned);
			agile_rate_observe(&l, 20 * MS);
			agile_rate_observe_truncated(&l, 2 * SEC);
			agile_rate_unavailable(&l);
			(void)agile_rate_tick_if_due(&l, t);
			agile_rate_tick(&l, t);
			agile_rate_stats(&l, &s);
		}
		init_100(&l, 5 * SEC);
		ck_assert_str_eq(verdict(&l, 5 * SEC), "");
	}
}
END_TEST

/* --- the check -------------------------------------------------------------- */

START_TEST(validate_no_false_alarm_through_the_law)
{
	const struct agile_config configs[] = {
		{ .max_rate = 100, .floor_rate = 10 },
		{ .max_rate = 300, .slo_ns = 100 * MS },
		{ .max_rate = 300, .slo_ns = 100 * MS, .preset = AGILE_PRESET_SEED },
		{ .max_rate = 3, .min_rate = 1, .tick_ns = 250 * MS },
		{ .max_rate = 1000000000, .tail_tolerance = 0.02,
		  .slo_ns = 5 * MS, .recover_ramp = 0.5 },
	};
	const int64_t starts[] = { 0, -5 * SEC, INT64_C(1) << 61 };

	/* Slow start, a latency rise past the SLO, an outage, recovery and
	 * an idle spell, starting anywhere on the clock: every tick's state
	 * passes the check against the configuration it runs with. */
	for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
			struct agile_rate_limiter l;
			struct agile_resolved r = resolved_of(&configs[c]);
			int64_t now = starts[s];

			ck_assert_int_eq(agile_rate_init(&l, &configs[c], now), 0);
			ck_assert_str_eq(verdict(&l, now), "");
			for (int tick = 0; tick < 120; tick++) {
				int64_t rtt = tick < 40 ? 20 * MS :
				              tick < 60 ? 400 * MS : 30 * MS;
				int n = tick >= 100 ? 0 : 30;

				for (int i = 0; i < n; i++) {
					(void)agile_rate_take(&l, now);
					if (tick >= 70 && tick < 80)
						agile_rate_unavailable(&l);
					else
						agile_rate_observe(&l, rtt);
				}
				now += r.tick_ns;
				(void)agile_rate_tick_if_due(&l, now);
				ck_assert_msg(verdict(&l, now)[0] == '\0',
				              "config %zu start %zu tick %d: %s",
				              c, s, tick, verdict(&l, now));
			}
		}
	}
}
END_TEST

START_TEST(validate_names_each_bucket_field)
{
	struct agile_rate_limiter l;
	const int64_t now = 100 * SEC;

	init_100(&l, now);
	/* The ceiling's spacing is exact: 10 ms for 100/s. */
	l.bucket.min_interval_ns = 10 * MS - 1;
	ck_assert_str_eq(verdict(&l, now), "bucket.min_interval_ns");
	init_100(&l, now);
	l.bucket.interval_ns = 10 * MS - 1;
	ck_assert_str_eq(verdict(&l, now), "bucket.interval_ns");
	/* probe_rate 1/s: no spacing above 1 s. */
	l.bucket.interval_ns = SEC;
	ck_assert_str_eq(verdict(&l, now), "");
	l.bucket.interval_ns = SEC + 1;
	ck_assert_str_eq(verdict(&l, now), "bucket.interval_ns");
	init_100(&l, now);
	l.bucket.last_ns = INT64_MIN;
	ck_assert_str_eq(verdict(&l, now), "bucket.last_ns");
	l.bucket.last_ns = now + AGILE_BUCKET_MAX_AHEAD_NS;
	ck_assert_str_eq(verdict(&l, now), "");
	l.bucket.last_ns = now + AGILE_BUCKET_MAX_AHEAD_NS + 1;
	ck_assert_str_eq(verdict(&l, now), "bucket.last_ns");
}
END_TEST

START_TEST(validate_names_each_loop_field)
{
	struct agile_rate_limiter l;
	struct agile_resolved r;
	struct agile_problem why;
	const int64_t now = 100 * SEC;

	/* The stored configuration must be the one checked against. */
	init_100(&l, now);
	r = l.loop.config;
	r.tick_ns = 2 * SEC;
	ck_assert_int_eq(agile_rate_validate(&l, &r, now, &why), -EINVAL);
	ck_assert_str_eq(why.field, "config");
	ck_assert_msg(strstr(why.message, "tick_ns 1000000000") != NULL,
	              "%s", why.message);
	/* A tick at most one tick and the slack ahead. */
	l.loop.next_tick_ns = now + SEC + AGILE_CLOCK_SLACK_NS;
	ck_assert_str_eq(verdict(&l, now), "");
	l.loop.next_tick_ns++;
	ck_assert_str_eq(verdict(&l, now), "next_tick_ns");
	l.loop.next_tick_ns = INT64_MIN;
	ck_assert_str_eq(verdict(&l, now), "");
	l.loop.last_tick_ns = now + AGILE_CLOCK_SLACK_NS + 1;
	ck_assert_str_eq(verdict(&l, now), "last_tick_ns");
	init_100(&l, now);
	l.grants_at_tick = 1;
	ck_assert_str_eq(verdict(&l, now), "grants_at_tick");
	(void)agile_rate_take(&l, now);
	ck_assert_str_eq(verdict(&l, now), "");
}
END_TEST

START_TEST(validate_names_each_controller_field)
{
	struct agile_rate_limiter l;
	struct agile_problem why;
	const int64_t now = 100 * SEC;

	init_100(&l, now);
	l.loop.ctl.rate = NAN;
	ck_assert_str_eq(verdict(&l, now), "controller.rate");
	ck_assert_int_eq(agile_rate_validate(&l, &l.loop.config, now, &why),
	                 -EINVAL);
	ck_assert_str_eq(why.message, "controller.rate (nan) must be a finite "
	                 "number of at least 1.");
	l.loop.ctl.rate = 0.5;
	ck_assert_str_eq(verdict(&l, now), "controller.rate");
	/* Above max_rate is no damage: the step clamps it, the bucket holds
	 * the ceiling, and a fleet's controller runs to the fleet's. */
	l.loop.ctl.rate = 1e6;
	ck_assert_str_eq(verdict(&l, now), "");

	init_100(&l, now);
	l.loop.ctl.baseline_ns = INFINITY;
	ck_assert_str_eq(verdict(&l, now), "controller.baseline_ns");
	init_100(&l, now);
	l.loop.ctl.p99_ns = -1;
	ck_assert_str_eq(verdict(&l, now), "controller.p99_ns");
	init_100(&l, now);
	l.loop.ctl.used = -0.5;
	ck_assert_str_eq(verdict(&l, now), "controller.used");
	init_100(&l, now);
	l.loop.ctl.cold_start = 2;
	ck_assert_str_eq(verdict(&l, now), "controller.cold_start");
	init_100(&l, now);
	l.loop.ctl.probe_mode = UINT32_MAX;
	ck_assert_str_eq(verdict(&l, now), "controller.probe_mode");
	init_100(&l, now);
	l.loop.ctl.up_agree = -1;
	ck_assert_str_eq(verdict(&l, now), "controller.up_agree");
	init_100(&l, now);
	l.loop.ctl.last_action = AGILE_ACTION_COUNT;
	ck_assert_str_eq(verdict(&l, now), "controller.last_action");
	init_100(&l, now);
	l.loop.ctl.cut_ended_cold = 2;
	ck_assert_str_eq(verdict(&l, now), "controller.cut_ended_cold");
	init_100(&l, now);
	l.loop.ctl.slo_broke = AGILE_BREAK_TICKS_MOST + 1;
	ck_assert_str_eq(verdict(&l, now), "controller.slo_broke");
	/* The quantile guard (tail_tolerance 0 without an SLO) never writes
	 * the ratio guard's share... */
	init_100(&l, now);
	l.loop.ctl.tail_ratio = 0.5;
	ck_assert_str_eq(verdict(&l, now), "controller.tail_ratio");
	/* ... and the delivered-rate rules, off without an SLO, their
	 * state. */
	init_100(&l, now);
	l.loop.ctl.knee_rate = 40;
	ck_assert_str_eq(verdict(&l, now), "controller.knee_rate");
	init_100(&l, now);
	l.loop.ctl.increase_streak = 3;
	ck_assert_str_eq(verdict(&l, now), "controller.increase_streak");
	init_100(&l, now);
	l.loop.ctl.backlog_ms = 1;
	ck_assert_str_eq(verdict(&l, now), "controller.backlog_ms");
}
END_TEST

START_TEST(validate_delivered_rules_on)
{
	struct agile_config c = { .max_rate = 300, .slo_ns = 100 * MS };
	struct agile_rate_limiter l;
	const int64_t now = 100 * SEC;

	/* Preset none with an SLO: the ratio guard and the delivered-rate
	 * rules are on, and their state may be anything in range. */
	ck_assert_int_eq(agile_rate_init(&l, &c, now), 0);
	l.loop.ctl.knee_rate = 40;
	l.loop.ctl.tail_ratio = 0.5;
	l.loop.ctl.tail_threshold = 0.2;
	l.loop.ctl.increase_streak = 3;
	ck_assert_str_eq(verdict(&l, now), "");
	l.loop.ctl.tail_ratio = 1.5;
	ck_assert_str_eq(verdict(&l, now), "controller.tail_ratio");
	l.loop.ctl.tail_ratio = 0.5;
	l.loop.ctl.span_s = -INFINITY;
	ck_assert_str_eq(verdict(&l, now), "controller.span_s");
	/* A cut's backlog holds the next cuts for three ticks at most. */
	l.loop.ctl.span_s = 0;
	l.loop.ctl.backlog_ms = 3000;
	ck_assert_str_eq(verdict(&l, now), "");
	l.loop.ctl.backlog_ms = 3001;
	ck_assert_str_eq(verdict(&l, now), "controller.backlog_ms");
}
END_TEST

START_TEST(validate_controller_alone_and_null_why)
{
	struct agile_config c = { .max_rate = 100 };
	struct agile_resolved r = resolved_of(&c);
	struct agile_controller ctl;
	struct agile_bucket b;

	agile_controller_init(&ctl, &r);
	ck_assert_int_eq(agile_controller_validate(&ctl, &r, NULL), 0);
	ctl.fast_ns = NAN;
	ck_assert_int_eq(agile_controller_validate(&ctl, &r, NULL), -EINVAL);
	ck_assert_int_eq(agile_bucket_init(&b, 12, 100), 0);
	ck_assert_int_eq(agile_bucket_validate(&b, &r, 0, NULL), 0);
	/* A configuration without a ceiling has nothing to check against. */
	r.max_rate = 0;
	ck_assert_int_eq(agile_bucket_validate(&b, &r, 0, NULL), -EINVAL);
}
END_TEST

/* The field the bucket check named before it was split in two, worked
 * out from the configuration on every call as it then was (edb801d), or ""
 * for a healthy bucket.  agile_bucket_validate is now the split check
 * itself, so comparing the two would prove nothing about the bounds: a
 * wrong spacing in agile_bucket_bounds would pass on both sides. */
static const char *whole_check_field(const struct agile_bucket *b,
                                     const struct agile_resolved *r,
                                     int64_t now_ns)
{
	int64_t ceiling_ns, slowest_ns;

	if (!(r->max_rate > 0) || !isfinite(r->max_rate))
		return "max_rate";
	ceiling_ns = agile__bucket_min_interval(r->max_rate);
	if (b->min_interval_ns != ceiling_ns)
		return "bucket.min_interval_ns";
	slowest_ns = agile__bucket_interval(
		r->probe_rate > 0 ? r->probe_rate : 0, ceiling_ns);
	if (b->interval_ns < ceiling_ns || b->interval_ns > slowest_ns)
		return "bucket.interval_ns";
	if (b->last_ns < AGILE__NEVER_NS ||
	    b->last_ns > agile__add_sat(now_ns, AGILE_BUCKET_MAX_AHEAD_NS))
		return "bucket.last_ns";
	return "";
}

/* The split check is the whole one: the verdict and field of the check as
 * it was before the split, and agile_bucket_validate's message, for the
 * bounds worked out once, on every boundary of every field and on random
 * buckets, for three configurations (a sub-1/s ceiling among them). */
START_TEST(validate_bucket_check_is_validate)
{
	const struct agile_config configs[] = {
		{ .max_rate = 100 },
		{ .max_rate = 3, .probe_rate = 0.5 },
		{ .max_rate = 0.1, .floor_rate = 0.05, .probe_rate = 0.01 },
	};
	uint64_t x = 0x2545f4914f6cdd1du;

	for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		struct agile_resolved r = resolved_of(&configs[c]);
		struct agile_bucket_bounds bounds;
		const int64_t now = 50 * SEC;

		agile_bucket_bounds(&r, &bounds);
		ck_assert_int_eq(bounds.min_interval_ns,
		                 agile__bucket_min_interval(r.max_rate));
		for (int round = 0; round < 400; round++) {
			struct agile_bucket b;
			struct agile_problem one, two;
			int64_t edges[] = {
				bounds.min_interval_ns, bounds.max_interval_ns,
				AGILE__NEVER_NS,
				now + AGILE_BUCKET_MAX_AHEAD_NS,
			};
			int rc_one, rc_two;

			ck_assert_int_eq(agile_bucket_init(&b, r.max_rate,
			                                   r.max_rate), 0);
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Each field at an edge, one off it, or random. */
			for (int f = 0; f < 3; f++) {
				int64_t *field = f == 0 ? &b.min_interval_ns
				                 : f == 1 ? &b.interval_ns
				                          : &b.last_ns;
				int64_t edge = edges[f == 2 ? 2 + (x >> 9 & 1)
				                            : (x >> 9 & 1)];

				switch ((x >> (12 + 3 * f)) & 7) {
				case 0: *field = edge - 1; break;
				case 1: *field = edge + 1; break;
				case 2: *field = edge; break;
				case 3: *field = (int64_t)(x * (uint64_t)(f + 3)); break;
				default: break; /* as initialised */
				}
			}
			memset(&one, 0, sizeof(one));
			memset(&two, 0, sizeof(two));
			rc_one = agile_bucket_validate(&b, &r, now, &one);
			rc_two = agile_bucket_check(&b, &bounds, now, &two);
			ck_assert_str_eq(two.field,
			                 whole_check_field(&b, &r, now));
			ck_assert_int_eq(rc_one, rc_two);
			ck_assert_str_eq(one.field, two.field);
			ck_assert_str_eq(one.message, two.message);
		}
	}
}
END_TEST

START_TEST(validate_bucket_bounds_without_ceiling)
{
	struct agile_config c = { .max_rate = 100 };
	struct agile_resolved r = resolved_of(&c);
	struct agile_bucket_bounds bounds;
	struct agile_problem why;
	struct agile_bucket b;

	ck_assert_int_eq(agile_bucket_init(&b, 100, 100), 0);
	r.max_rate = NAN;
	agile_bucket_bounds(&r, &bounds);
	ck_assert_int_eq(agile_bucket_check(&b, &bounds, 0, &why), -EINVAL);
	ck_assert_str_eq(why.field, "max_rate");
	r.max_rate = -1;
	agile_bucket_bounds(&r, &bounds);
	ck_assert_int_eq(agile_bucket_check(&b, &bounds, 0, NULL), -EINVAL);
}
END_TEST

Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *total = tcase_create("total");
	TCase *check = tcase_create("check");

	tcase_add_test(total, validate_bucket_negative_min_interval_saturates);
	tcase_add_test(total, validate_tick_clock_saturates);
	tcase_add_test(total, validate_controller_nan_reads_as_floor);
	tcase_add_test(total, validate_counters_saturate);
	tcase_add_test(total, validate_slo_anchor_without_slo_cuts_a_full_step);
	tcase_add_test(total, validate_concurrency_limit_of_garbage);
	tcase_add_test(total, validate_random_bodies);
	suite_add_tcase(s, total);
	tcase_add_test(check, validate_no_false_alarm_through_the_law);
	tcase_add_test(check, validate_names_each_bucket_field);
	tcase_add_test(check, validate_names_each_loop_field);
	tcase_add_test(check, validate_names_each_controller_field);
	tcase_add_test(check, validate_delivered_rules_on);
	tcase_add_test(check, validate_controller_alone_and_null_why);
	tcase_add_test(check, validate_bucket_check_is_validate);
	tcase_add_test(check, validate_bucket_bounds_without_ceiling);
	suite_add_tcase(s, check);
	return s;
}
