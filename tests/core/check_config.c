/*
 * check_config.c - the configuration module: defaults, the preset table,
 * the repairs agile_resolve() makes and the problem agile_config_validate()
 * reports for each, names and parsing, and every rendering.
 *
 * Most tests start from a config holding only max_rate (and sometimes an
 * SLO), which is the whole configuration the README asks of most services,
 * and change one field from there.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "agile.h"
#include "check_suites.h"

#define SLO_200MS (200 * AGILE_NS_PER_MS)

static struct agile_config minimal(void)
{
	struct agile_config c = { .max_rate = 500 };

	return c;
}

static struct agile_config with_slo(void)
{
	struct agile_config c = { .max_rate = 500, .slo_ns = SLO_200MS };

	return c;
}

static struct agile_resolved resolve(const struct agile_config *c)
{
	struct agile_resolved r;
	int rc = agile_resolve(c, AGILE_KIND_RATE, &r);

	ck_assert_int_eq(rc, 0);
	return r;
}

/* Validate `c`, expect exactly `count` problems, and return the first one
 * reported for `field` (a copy; the test fails when there is none). */
static struct agile_problem problem_for(const struct agile_config *c,
                                        size_t count, const char *field)
{
	struct agile_problem problems[32];
	size_t n = agile_config_validate(c, problems, 32);

	ck_assert_uint_eq(n, count);
	for (size_t i = 0; i < n && i < 32; i++)
		if (strcmp(problems[i].field, field) == 0)
			return problems[i];
	ck_abort_msg("no problem reported for field \"%s\"", field);
	return problems[0];
}

#define ck_assert_contains(haystack, needle)                                   \
	ck_assert_msg(strstr((haystack), (needle)) != NULL,                    \
	              "\"%s\" does not contain \"%s\"", (haystack), (needle))

/* ------------------------------------------------------------------------ */
/* Defaults                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(config_default_rates)
{
	struct agile_config c = minimal();
	struct agile_resolved r = resolve(&c);

	ck_assert_int_eq(r.max_rate, 500);
	ck_assert_int_eq(r.min_rate, AGILE_DEFAULT_MIN_RATE);
	ck_assert_int_eq(r.floor_rate, AGILE_DEFAULT_MIN_RATE);
	ck_assert_int_eq(r.probe_rate, AGILE_DEFAULT_MIN_RATE);
	ck_assert_int_eq(r.initial_rate, 500 / 8);
	ck_assert_int_eq(r.slo_ns, 0);
}
END_TEST

START_TEST(config_default_durations)
{
	struct agile_config c = minimal();
	struct agile_resolved r = resolve(&c);

	ck_assert_int_eq(r.tick_ns, AGILE_DEFAULT_TICK_NS);
	ck_assert_int_eq(r.tick_ns, AGILE_NS_PER_S);
	ck_assert_int_eq(r.slow_half_life_ns, 60 * AGILE_NS_PER_S);
	ck_assert_int_eq(r.slow_down_half_life_ns, 5 * AGILE_NS_PER_S);
}
END_TEST

START_TEST(config_default_gains)
{
	struct agile_config c = minimal();
	struct agile_resolved r = resolve(&c);

	ck_assert_double_eq(r.tail_factor, 1.0);
	ck_assert_double_eq(r.target_inflation, 1.0);
	ck_assert_double_eq(r.up_step, 0.05);
	ck_assert_double_eq(r.down_step, 0.30);
	ck_assert_double_eq(r.gain, 0.5);
	ck_assert_double_eq(r.slow_start_gain, 2.0);
	ck_assert_double_eq(r.deadband, 0.1);
	ck_assert_double_eq(r.max_baseline_rise, 0.002);
	ck_assert_double_eq(r.recover_ramp, 0.0);
	/* The matrix rules are preset none's with an SLO only. */
	ck_assert_double_eq(r.delivered_share, 0.0);
	ck_assert_double_eq(r.knee_ramp, 0.0);
	ck_assert_double_eq(r.probe_acceleration, 0.0);
	ck_assert_double_eq(r.goodput_cut, 0.0);
}
END_TEST

START_TEST(config_default_policy_without_slo)
{
	struct agile_config c = minimal();
	struct agile_resolved r = resolve(&c);

	ck_assert_uint_eq(r.kind, AGILE_KIND_RATE);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_NONE);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_uint_eq(r.anchor_degraded, 0);
	ck_assert_double_eq(r.tail_tolerance, 0.0);
	ck_assert_int_eq(r.backoff_ticks, 1);
	ck_assert_int_eq(r.recover_ticks, 1);
}
END_TEST

START_TEST(config_kind_is_stored)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_CONCURRENCY, &r), 0);
	ck_assert_uint_eq(r.kind, AGILE_KIND_CONCURRENCY);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), 0);
	ck_assert_uint_eq(r.kind, AGILE_KIND_RATE);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The preset table, with and without an SLO                                 */
/* ------------------------------------------------------------------------ */

START_TEST(config_preset_none_with_slo)
{
	struct agile_config c = with_slo();
	struct agile_resolved r = resolve(&c);

	ck_assert_uint_eq(r.preset, AGILE_PRESET_NONE);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_SLO);
	ck_assert_uint_eq(r.anchor_degraded, 0);
	ck_assert_double_eq(r.tail_tolerance, AGILE_DEFAULT_TAIL_TOLERANCE_SLO);
	ck_assert_int_eq(r.backoff_ticks, 2);
	ck_assert_int_eq(r.recover_ticks, 2);
	ck_assert_double_eq(r.target_inflation, 1.0);
	ck_assert_int_eq(r.slo_ns, SLO_200MS);
	ck_assert_double_eq(r.delivered_share, AGILE_DEFAULT_DELIVERED_SHARE);
	ck_assert_double_eq(r.delivered_share, 0.92);
	ck_assert_double_eq(r.knee_ramp, AGILE_DEFAULT_KNEE_RAMP);
	ck_assert_double_eq(r.knee_ramp, 2.0);
	ck_assert_double_eq(r.probe_acceleration,
	                    AGILE_DEFAULT_PROBE_ACCELERATION);
	ck_assert_double_eq(r.probe_acceleration, 2.0);
	ck_assert_double_eq(r.goodput_cut, AGILE_DEFAULT_GOODPUT_CUT);
	ck_assert_double_eq(r.goodput_cut, 1.0);
}
END_TEST

/*
 * Preset seed is preset none as the seed ran it, before the matrix rules:
 * with an SLO it resolves to what none resolves to with the four rules
 * off; without one, to balanced, as none does.
 */
START_TEST(config_preset_seed_is_the_seeds_none)
{
	struct agile_config none = with_slo();
	struct agile_config seed = with_slo();
	struct agile_resolved a, b;

	seed.preset = AGILE_PRESET_SEED;
	a = resolve(&none);
	b = resolve(&seed);
	ck_assert_uint_eq(b.preset, AGILE_PRESET_SEED);
	ck_assert_uint_eq(b.anchor, AGILE_ANCHOR_SLO);
	ck_assert_double_eq(b.tail_tolerance, AGILE_DEFAULT_TAIL_TOLERANCE_SLO);
	ck_assert_int_eq(b.backoff_ticks, 2);
	ck_assert_int_eq(b.recover_ticks, 2);
	ck_assert_double_eq(b.delivered_share, 0.0);
	ck_assert_double_eq(b.knee_ramp, 0.0);
	ck_assert_double_eq(b.probe_acceleration, 0.0);
	ck_assert_double_eq(b.goodput_cut, 0.0);
	a.preset = b.preset;
	a.delivered_share = 0;
	a.knee_ramp = 0;
	a.probe_acceleration = 0;
	a.goodput_cut = 0;
	ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);

	none = minimal();
	seed = minimal();
	seed.preset = AGILE_PRESET_SEED;
	a = resolve(&none);
	b = resolve(&seed);
	a.preset = b.preset;
	ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

/* A rule set explicitly runs under any preset, the seed's included, and an
 * explicit value wins over none's default. */
START_TEST(config_matrix_rules_explicit)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_SEED;
	c.delivered_share = 0.8;
	c.knee_ramp = 3;
	r = resolve(&c);
	ck_assert_double_eq(r.delivered_share, 0.8);
	ck_assert_double_eq(r.knee_ramp, 3.0);
	ck_assert_double_eq(r.probe_acceleration, 0.0);
	ck_assert_double_eq(r.goodput_cut, 0.0);

	c = with_slo();
	c.probe_acceleration = 1;
	c.goodput_cut = 0.5;
	r = resolve(&c);
	ck_assert_double_eq(r.probe_acceleration, 1.0);
	ck_assert_double_eq(r.goodput_cut, 0.5);
	ck_assert_double_eq(r.delivered_share, 0.92);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
}
END_TEST

/* Without an SLO, none is balanced in everything but the name it keeps. */
START_TEST(config_preset_none_without_slo_is_balanced)
{
	struct agile_config none = minimal();
	struct agile_config balanced = minimal();
	struct agile_resolved a, b;

	balanced.preset = AGILE_PRESET_BALANCED;
	a = resolve(&none);
	b = resolve(&balanced);
	ck_assert_uint_eq(a.preset, AGILE_PRESET_NONE);
	ck_assert_uint_eq(b.preset, AGILE_PRESET_BALANCED);
	a.preset = b.preset;
	ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

START_TEST(config_preset_balanced_with_slo)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_BALANCED;
	r = resolve(&c);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_BALANCED);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_double_eq(r.target_inflation, 1.0);
	ck_assert_int_eq(r.backoff_ticks, 1);
	ck_assert_int_eq(r.recover_ticks, 1);
	ck_assert_double_eq(r.tail_tolerance, 0.0);
}
END_TEST

START_TEST(config_preset_balanced_without_slo)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_BALANCED;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_uint_eq(r.anchor_degraded, 0);
	ck_assert_int_eq(r.backoff_ticks, 1);
	ck_assert_int_eq(r.recover_ticks, 1);
	ck_assert_double_eq(r.tail_tolerance, 0.0);
}
END_TEST

START_TEST(config_preset_latency_first_with_slo)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_LATENCY_FIRST;
	r = resolve(&c);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_LATENCY_FIRST);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_SLO);
	ck_assert_uint_eq(r.anchor_degraded, 0);
	ck_assert_int_eq(r.backoff_ticks, 2);
	ck_assert_int_eq(r.recover_ticks, 2);
	/* A named preset keeps the quantile guard. */
	ck_assert_double_eq(r.tail_tolerance, 0.0);
	ck_assert_double_eq(r.target_inflation, 1.0);
}
END_TEST

/* Latency-first without an SLO cannot have its anchor; it keeps the rest of
 * its row, the two-tick hysteresis. */
START_TEST(config_preset_latency_first_without_slo)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_LATENCY_FIRST;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_uint_eq(r.anchor_degraded, 1);
	ck_assert_int_eq(r.backoff_ticks, 2);
	ck_assert_int_eq(r.recover_ticks, 2);
	ck_assert_str_eq(agile_resolved_anchor_name(&r),
	                 "baseline (slo anchor requested without an slo)");
}
END_TEST

START_TEST(config_preset_throughput_first_with_slo)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_THROUGHPUT_FIRST;
	r = resolve(&c);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_THROUGHPUT_FIRST);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_double_eq(r.target_inflation, AGILE_THROUGHPUT_FIRST_INFLATION);
	ck_assert_double_eq(r.target_inflation, 2.5);
	ck_assert_int_eq(r.backoff_ticks, 2);
	ck_assert_int_eq(r.recover_ticks, 2);
	ck_assert_double_eq(r.tail_tolerance, 0.0);
}
END_TEST

START_TEST(config_preset_throughput_first_without_slo)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_THROUGHPUT_FIRST;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_uint_eq(r.anchor_degraded, 0);
	ck_assert_double_eq(r.target_inflation, 2.5);
	ck_assert_int_eq(r.backoff_ticks, 2);
	ck_assert_int_eq(r.recover_ticks, 2);
}
END_TEST

START_TEST(config_explicit_fields_beat_preset)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.preset = AGILE_PRESET_THROUGHPUT_FIRST;
	c.anchor = AGILE_ANCHOR_SLO;
	c.target_inflation = 0.5;
	c.backoff_ticks = 3;
	c.recover_ticks = 4;
	c.tail_tolerance = 0.1;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_SLO);
	ck_assert_double_eq(r.target_inflation, 0.5);
	ck_assert_int_eq(r.backoff_ticks, 3);
	ck_assert_int_eq(r.recover_ticks, 4);
	ck_assert_double_eq(r.tail_tolerance, 0.1);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_THROUGHPUT_FIRST);
}
END_TEST

/* An explicit baseline anchor under none with an SLO keeps the preset's
 * tolerance, but the hysteresis follows the anchor in force. */
START_TEST(config_explicit_baseline_anchor_under_none)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;

	c.anchor = AGILE_ANCHOR_BASELINE;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_double_eq(r.tail_tolerance, 0.05);
	ck_assert_int_eq(r.backoff_ticks, 1);
	ck_assert_int_eq(r.recover_ticks, 1);
}
END_TEST

START_TEST(config_explicit_gains_are_kept)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.tail_factor = 1.5;
	c.up_step = 0.1;
	c.down_step = 0.2;
	c.gain = 0.8;
	c.slow_start_gain = 1.0;
	c.deadband = 0.2;
	c.recover_ramp = 0.5;
	c.max_baseline_rise = 0.001;
	c.tick_ns = 250 * AGILE_NS_PER_MS;
	c.slow_half_life_ns = 30 * AGILE_NS_PER_S;
	c.slow_down_half_life_ns = 2 * AGILE_NS_PER_S;
	r = resolve(&c);
	ck_assert_double_eq(r.tail_factor, 1.5);
	ck_assert_double_eq(r.up_step, 0.1);
	ck_assert_double_eq(r.down_step, 0.2);
	ck_assert_double_eq(r.gain, 0.8);
	ck_assert_double_eq(r.slow_start_gain, 1.0);
	ck_assert_double_eq(r.deadband, 0.2);
	ck_assert_double_eq(r.recover_ramp, 0.5);
	ck_assert_double_eq(r.max_baseline_rise, 0.001);
	ck_assert_int_eq(r.tick_ns, 250 * AGILE_NS_PER_MS);
	ck_assert_int_eq(r.slow_half_life_ns, 30 * AGILE_NS_PER_S);
	ck_assert_int_eq(r.slow_down_half_life_ns, 2 * AGILE_NS_PER_S);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Anchor degradation                                                        */
/* ------------------------------------------------------------------------ */

START_TEST(config_anchor_slo_without_slo_degrades)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.anchor = AGILE_ANCHOR_SLO;
	r = resolve(&c);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_BASELINE);
	ck_assert_uint_eq(r.anchor_degraded, 1);
	/* The hysteresis default follows the anchor in force, not the one
	 * asked for. */
	ck_assert_int_eq(r.backoff_ticks, 1);
	ck_assert_int_eq(r.recover_ticks, 1);
	ck_assert_str_eq(agile_resolved_anchor_name(&r),
	                 "baseline (slo anchor requested without an slo)");
}
END_TEST

START_TEST(config_anchor_names)
{
	struct agile_config c = with_slo();
	struct agile_resolved r = resolve(&c);

	ck_assert_str_eq(agile_resolved_anchor_name(&r), "slo");
	c.anchor = AGILE_ANCHOR_BASELINE;
	r = resolve(&c);
	ck_assert_str_eq(agile_resolved_anchor_name(&r), "baseline");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Rate bounds: legacy fallback, initial rate and their repairs              */
/* ------------------------------------------------------------------------ */

START_TEST(config_legacy_min_rate_fills_floor_and_probe)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.min_rate = 20;
	r = resolve(&c);
	ck_assert_int_eq(r.min_rate, 20);
	ck_assert_int_eq(r.floor_rate, 20);
	ck_assert_int_eq(r.probe_rate, 20);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
}
END_TEST

START_TEST(config_explicit_floor_and_probe_beat_min_rate)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.min_rate = 20;
	c.floor_rate = 50;
	c.probe_rate = 10;
	r = resolve(&c);
	ck_assert_int_eq(r.min_rate, 20);
	ck_assert_int_eq(r.floor_rate, 50);
	ck_assert_int_eq(r.probe_rate, 10);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
}
END_TEST

START_TEST(config_initial_is_max_over_8)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.max_rate = 1000;
	r = resolve(&c);
	ck_assert_int_eq(r.initial_rate, 125);
	c.max_rate = 7; /* 7/8 is 0: the floor takes over */
	r = resolve(&c);
	ck_assert_int_eq(r.initial_rate, 1);
}
END_TEST

START_TEST(config_initial_at_least_floor)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.max_rate = 100;
	c.floor_rate = 50;
	r = resolve(&c);
	ck_assert_int_eq(r.initial_rate, 50);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
}
END_TEST

START_TEST(config_repair_min_above_max)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.min_rate = 600;
	r = resolve(&c);
	ck_assert_int_eq(r.min_rate, 500);
	ck_assert_int_eq(r.floor_rate, 500);
	ck_assert_int_eq(r.probe_rate, 500);
	ck_assert_int_eq(r.initial_rate, 500);
	/* One repair, one message: the inherited floor is not reported twice. */
	p = problem_for(&c, 1, "min_rate");
	ck_assert_str_eq(p.message, "min_rate (600) is above max_rate (500); "
	                            "it would be clamped to 500.");
}
END_TEST

START_TEST(config_repair_floor_above_max)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.floor_rate = 700;
	r = resolve(&c);
	ck_assert_int_eq(r.floor_rate, 500);
	ck_assert_int_eq(r.probe_rate, 1);
	p = problem_for(&c, 1, "floor_rate");
	ck_assert_contains(p.message, "floor_rate (700) is above max_rate (500)");
	ck_assert_contains(p.message, "clamped to 500");
}
END_TEST

START_TEST(config_repair_probe_above_floor)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.floor_rate = 20;
	c.probe_rate = 50;
	r = resolve(&c);
	ck_assert_int_eq(r.probe_rate, 20);
	ck_assert_int_eq(r.floor_rate, 20);
	p = problem_for(&c, 1, "probe_rate");
	ck_assert_contains(p.message, "probe_rate (50) is above floor_rate (20)");
	ck_assert_contains(p.message, "the outage floor must not exceed the "
	                              "operating floor");
}
END_TEST

/* A probe inherited from min_rate can also land above an explicit floor;
 * the message says where the number came from. */
START_TEST(config_repair_inherited_probe_above_floor)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.min_rate = 50;
	c.floor_rate = 20;
	r = resolve(&c);
	ck_assert_int_eq(r.probe_rate, 20);
	p = problem_for(&c, 1, "probe_rate");
	ck_assert_contains(p.message, "50, inherited from min_rate");

	c = minimal();
	c.probe_rate = 5;
	r = resolve(&c);
	ck_assert_int_eq(r.probe_rate, 1);
	p = problem_for(&c, 1, "probe_rate");
	ck_assert_contains(p.message, "floor_rate (1, the default)");
}
END_TEST

START_TEST(config_repair_initial_out_of_range)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.initial_rate = 900;
	r = resolve(&c);
	ck_assert_int_eq(r.initial_rate, 500);
	p = problem_for(&c, 1, "initial_rate");
	ck_assert_contains(p.message, "initial_rate (900) is above max_rate (500)");

	c.initial_rate = 5;
	c.floor_rate = 20;
	r = resolve(&c);
	ck_assert_int_eq(r.initial_rate, 20);
	p = problem_for(&c, 1, "initial_rate");
	ck_assert_contains(p.message, "initial_rate (5) is below floor_rate (20)");
	ck_assert_contains(p.message, "raised to 20");
}
END_TEST

START_TEST(config_resolve_rejects_max_rate_zero)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	memset(&r, 0xa5, sizeof r);
	c.max_rate = 0;
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), -EINVAL);
	c.max_rate = -3;
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), -EINVAL);
	/* `out` is untouched on failure. */
	ck_assert_uint_eq(r.kind, 0xa5a5a5a5u);
	/* max_rate is a double: compare its bytes, not its value. */
	{
		unsigned char pattern[sizeof r.max_rate];

		memset(pattern, 0xa5, sizeof pattern);
		ck_assert_int_eq(memcmp(&r.max_rate, pattern, sizeof pattern), 0);
	}
}
END_TEST

START_TEST(config_resolve_rejects_bad_arguments)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	ck_assert_int_eq(agile_resolve(NULL, AGILE_KIND_RATE, &r), -EINVAL);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, NULL), -EINVAL);
	ck_assert_int_eq(agile_resolve(&c, (enum agile_kind)7, &r), -EINVAL);
}
END_TEST

START_TEST(config_resolve_is_deterministic)
{
	struct agile_config c = with_slo();
	struct agile_resolved a, b;

	c.min_rate = 900;
	c.deadband = 3;
	c.gain = NAN;
	memset(&a, 0x11, sizeof a);
	memset(&b, 0x77, sizeof b);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &a), 0);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &b), 0);
	ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Repairs of the policy fields                                              */
/* ------------------------------------------------------------------------ */

START_TEST(config_repair_deadband_one)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.deadband = 1.0;
	r = resolve(&c);
	ck_assert_double_eq(r.deadband, AGILE_DEFAULT_DEADBAND);
	p = problem_for(&c, 1, "deadband");
	ck_assert_contains(p.message, "deadband (1) must be in [0, 1)");
	ck_assert_contains(p.message, "reset to 0.1");
}
END_TEST

/* The tick has a range (AGILE_TICK_MIN_NS to AGILE_TICK_MAX_NS): outside
 * it is reported and brought to the nearer bound; the bounds themselves and
 * 0 (the default) pass. */
START_TEST(config_repair_tick_out_of_range)
{
	struct agile_config c = minimal();
	struct agile_problem p;

	c.tick_ns = 1;
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_TICK_MIN_NS);
	p = problem_for(&c, 1, "tick_ns");
	ck_assert_contains(p.message, "tick_ns (1ns) must be from 10ms to 1m");
	ck_assert_contains(p.message, "raised to 10ms");

	c.tick_ns = 3600 * AGILE_NS_PER_S;
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_TICK_MAX_NS);
	p = problem_for(&c, 1, "tick_ns");
	ck_assert_contains(p.message, "tick_ns (1h) must be from 10ms to 1m");
	ck_assert_contains(p.message, "lowered to 1m");

	c.tick_ns = INT64_MAX;
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_TICK_MAX_NS);
	(void)problem_for(&c, 1, "tick_ns");

	c.tick_ns = AGILE_TICK_MIN_NS;
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_TICK_MIN_NS);
	c.tick_ns = AGILE_TICK_MAX_NS;
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_TICK_MAX_NS);
	c.tick_ns = 0;
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	ck_assert_int_eq(resolve(&c).tick_ns, AGILE_DEFAULT_TICK_NS);
}
END_TEST

START_TEST(config_repair_down_step_one)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.down_step = 1.0;
	r = resolve(&c);
	ck_assert_double_eq(r.down_step, AGILE_DEFAULT_DOWN_STEP);
	p = problem_for(&c, 1, "down_step");
	ck_assert_contains(p.message, "down_step (1) must be below 1");
	ck_assert_contains(p.message, "reset to 0.3");
}
END_TEST

START_TEST(config_repair_up_step_one)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.up_step = 1.5;
	r = resolve(&c);
	ck_assert_double_eq(r.up_step, AGILE_DEFAULT_UP_STEP);
	p = problem_for(&c, 1, "up_step");
	ck_assert_contains(p.message, "up_step (1.5) must be below 1");
	ck_assert_contains(p.message, "reset to 0.05");
}
END_TEST

START_TEST(config_repair_slow_start_gain_below_one)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.slow_start_gain = 0.5;
	r = resolve(&c);
	ck_assert_double_eq(r.slow_start_gain, 1.0);
	p = problem_for(&c, 1, "slow_start_gain");
	ck_assert_contains(p.message, "slow_start_gain (0.5) must be at least 1");
	ck_assert_contains(p.message, "raised to 1");
}
END_TEST

/* Each matrix rule's range: past it the value is repaired, and validate
 * says how. */
START_TEST(config_repair_matrix_rules)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;
	struct agile_problem p;

	c.delivered_share = 1.5;
	r = resolve(&c);
	ck_assert_double_eq(r.delivered_share, AGILE_DEFAULT_DELIVERED_SHARE);
	p = problem_for(&c, 1, "delivered_share");
	ck_assert_contains(p.message, "delivered_share (1.5) must be at most 1");

	c = with_slo();
	c.knee_ramp = 0.5;
	r = resolve(&c);
	ck_assert_double_eq(r.knee_ramp, 1.0);
	p = problem_for(&c, 1, "knee_ramp");
	ck_assert_contains(p.message, "knee_ramp (0.5) must be at least 1");

	c = with_slo();
	c.probe_acceleration = 0.25;
	r = resolve(&c);
	ck_assert_double_eq(r.probe_acceleration, 1.0);
	p = problem_for(&c, 1, "probe_acceleration");
	ck_assert_contains(p.message,
	                   "probe_acceleration (0.25) must be at least 1");

	c = with_slo();
	c.goodput_cut = 2;
	r = resolve(&c);
	ck_assert_double_eq(r.goodput_cut, AGILE_DEFAULT_GOODPUT_CUT);
	p = problem_for(&c, 1, "goodput_cut");
	ck_assert_contains(p.message, "goodput_cut (2) must be at most 1");

	c = with_slo();
	c.delivered_share = -0.5;
	c.goodput_cut = NAN;
	r = resolve(&c);
	ck_assert_double_eq(r.delivered_share, AGILE_DEFAULT_DELIVERED_SHARE);
	ck_assert_double_eq(r.goodput_cut, AGILE_DEFAULT_GOODPUT_CUT);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 2);
}
END_TEST

START_TEST(config_repair_tail_tolerance_one)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;
	struct agile_problem p;

	c.tail_tolerance = 1.0;
	r = resolve(&c);
	/* The preset decides instead: none with an SLO picks the 5% ratio. */
	ck_assert_double_eq(r.tail_tolerance, AGILE_DEFAULT_TAIL_TOLERANCE_SLO);
	p = problem_for(&c, 1, "tail_tolerance");
	ck_assert_contains(p.message, "tail_tolerance (1) must be below 1");
}
END_TEST

/* Every negative field is unset: resolving it gives exactly the defaults,
 * and validate names each one. */
START_TEST(config_repair_negative_fields)
{
	static const char *const fields[] = {
		"min_rate", "floor_rate", "probe_rate", "initial_rate", "slo_ns",
		"tail_factor", "tail_tolerance", "backoff_ticks", "recover_ticks",
		"slow_half_life_ns", "slow_down_half_life_ns", "max_baseline_rise",
		"tick_ns", "target_inflation", "up_step", "down_step", "gain",
		"slow_start_gain", "deadband", "recover_ramp",
	};
	const size_t nfields = sizeof fields / sizeof fields[0];
	struct agile_config c = {
		.max_rate = 500, .min_rate = -1, .floor_rate = -2, .probe_rate = -3,
		.initial_rate = -4, .slo_ns = -5, .tail_factor = -1,
		.tail_tolerance = -0.1, .backoff_ticks = -1, .recover_ticks = -2,
		.slow_half_life_ns = -1, .slow_down_half_life_ns = -1,
		.max_baseline_rise = -0.5, .tick_ns = -1000, .target_inflation = -1,
		.up_step = -0.05, .down_step = -0.3, .gain = -0.5,
		.slow_start_gain = -2, .deadband = -0.1, .recover_ramp = -0.5,
	};
	struct agile_config plain = minimal();
	struct agile_problem problems[32];
	struct agile_resolved a = resolve(&c);
	struct agile_resolved b = resolve(&plain);
	size_t n;

	ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
	n = agile_config_validate(&c, problems, 32);
	ck_assert_uint_eq(n, nfields);
	for (size_t i = 0; i < nfields; i++) {
		ck_assert_str_eq(problems[i].field, fields[i]);
		ck_assert_contains(problems[i].message, "must not be negative");
		ck_assert_contains(problems[i].message, fields[i]);
	}
}
END_TEST

START_TEST(config_repair_non_finite_fields)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	struct agile_problem p;

	c.gain = NAN;
	c.up_step = INFINITY;
	r = resolve(&c);
	ck_assert_double_eq(r.gain, AGILE_DEFAULT_GAIN);
	ck_assert_double_eq(r.up_step, AGILE_DEFAULT_UP_STEP);
	p = problem_for(&c, 2, "gain");
	ck_assert_contains(p.message, "gain (nan) is not a finite number");
	ck_assert_contains(p.message, "the default of 0.5 applies");
	p = problem_for(&c, 2, "up_step");
	ck_assert_contains(p.message, "up_step (inf) is not a finite number");
}
END_TEST

START_TEST(config_repair_unknown_enumerations)
{
	struct agile_config c = with_slo();
	struct agile_resolved r;
	struct agile_problem p;

	c.preset = (enum agile_preset)42;
	c.anchor = (enum agile_anchor)9;
	r = resolve(&c);
	ck_assert_uint_eq(r.preset, AGILE_PRESET_NONE);
	ck_assert_uint_eq(r.anchor, AGILE_ANCHOR_SLO);
	p = problem_for(&c, 2, "preset");
	ck_assert_contains(p.message, "preset (42) is not a known preset");
	p = problem_for(&c, 2, "anchor");
	ck_assert_contains(p.message, "anchor (9) is not a known anchor");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Validate                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(config_validate_clean_config_is_silent)
{
	struct agile_config c = minimal();
	struct agile_problem problems[4];

	ck_assert_uint_eq(agile_config_validate(&c, problems, 4), 0);
	c = with_slo();
	ck_assert_uint_eq(agile_config_validate(&c, problems, 4), 0);
	c.preset = AGILE_PRESET_LATENCY_FIRST;
	c.floor_rate = 20;
	c.probe_rate = 5;
	c.initial_rate = 50;
	c.tail_factor = 1.5;
	c.tail_tolerance = 0.1;
	c.deadband = 0.99;
	c.down_step = 0.99;
	ck_assert_uint_eq(agile_config_validate(&c, problems, 4), 0);
}
END_TEST

/* Rates below 1/s: max alone is complete (the default floor of 1 becomes
 * the ceiling), fractions are kept exactly and printed as written, and a
 * bound below one request per hour is raised to it. */
START_TEST(config_sub_second_rates)
{
	struct agile_config c = { .max_rate = 0.5 };
	struct agile_resolved r;
	struct agile_problem p;
	char text[4096];

	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), 0);
	ck_assert(r.max_rate == 0.5);
	ck_assert(r.min_rate == 0.5);
	ck_assert(r.floor_rate == 0.5);
	ck_assert(r.probe_rate == 0.5);
	ck_assert(r.initial_rate == 0.5);

	c = (struct agile_config){ .max_rate = 0.5, .floor_rate = 0.1,
	                           .probe_rate = 0.05 };
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), 0);
	ck_assert(r.floor_rate == 0.1);
	ck_assert(r.probe_rate == 0.05);
	ck_assert(r.initial_rate == 0.1);
	agile_resolved_format(&r, text, sizeof text);
	ck_assert_contains(text, "max_rate: 0.5\n");

	c.floor_rate = 0.75;
	p = problem_for(&c, 1, "floor_rate");
	ck_assert_str_eq(p.message, "floor_rate (0.75) is above max_rate (0.5); "
	                            "it would be clamped to 0.5.");
	c.floor_rate = 0.1;
	c.initial_rate = 0.01;
	p = problem_for(&c, 1, "initial_rate");
	ck_assert_str_eq(p.message, "initial_rate (0.01) is below floor_rate "
	                            "(0.1); it would be raised to 0.1.");

	c = (struct agile_config){ .max_rate = 0.0001 };
	p = problem_for(&c, 1, "max_rate");
	ck_assert_str_eq(p.message, "max_rate (0.0001) is below one request per "
	                            "hour, the slowest rate a limiter takes; it "
	                            "would be raised to 0.000277777777777778.");
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), 0);
	ck_assert(r.max_rate == AGILE_MIN_RATE);
	ck_assert(r.floor_rate == AGILE_MIN_RATE);

	c.max_rate = INFINITY;
	p = problem_for(&c, 1, "max_rate");
	ck_assert_str_eq(p.message, "max_rate (inf) must be a finite number "
	                            "greater than 0: it is the ceiling you "
	                            "promise the downstream, and nothing can run "
	                            "without it.");
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_RATE, &r), -EINVAL);

	ck_assert_uint_eq(agile_rate_format(0.1, text, sizeof text), 3);
	ck_assert_str_eq(text, "0.1");
	agile_rate_format(500, text, sizeof text);
	ck_assert_str_eq(text, "500");
	agile_rate_format(1.0 / 60, text, sizeof text);
	ck_assert_str_eq(text, "0.0166666666666667");
}
END_TEST

START_TEST(config_validate_max_rate)
{
	struct agile_config c = { .max_rate = 0 };
	struct agile_problem p = problem_for(&c, 1, "max_rate");

	ck_assert_contains(p.message, "max_rate (0) must be greater than 0");
	ck_assert_contains(p.message, "ceiling you promise");
	/* NULL is the zero config, which lacks only max_rate. */
	ck_assert_uint_eq(agile_config_validate(NULL, NULL, 0), 1);
}
END_TEST

/* Without a usable max_rate the other checks still run. */
START_TEST(config_validate_continues_without_max_rate)
{
	struct agile_config c = { .max_rate = -1, .floor_rate = 10,
	                          .probe_rate = 30, .deadband = 2 };
	struct agile_problem problems[8];
	size_t n = agile_config_validate(&c, problems, 8);

	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(problems[0].field, "max_rate");
	ck_assert_str_eq(problems[1].field, "probe_rate");
	ck_assert_str_eq(problems[2].field, "deadband");
}
END_TEST

START_TEST(config_validate_anchor_slo_without_slo)
{
	struct agile_config c = minimal();
	struct agile_problem p;

	c.anchor = AGILE_ANCHOR_SLO;
	p = problem_for(&c, 1, "anchor");
	ck_assert_str_eq(p.message, "anchor slo needs slo_ns; without it the "
	                            "baseline anchor runs.");
}
END_TEST

START_TEST(config_validate_latency_first_without_slo)
{
	struct agile_config c = minimal();
	struct agile_problem p;

	c.preset = AGILE_PRESET_LATENCY_FIRST;
	p = problem_for(&c, 1, "preset");
	ck_assert_contains(p.message, "preset latency-first needs slo_ns");
	ck_assert_contains(p.message, "baseline anchor runs");

	/* An explicit anchor takes the blame when both ask for the SLO. */
	c.anchor = AGILE_ANCHOR_SLO;
	p = problem_for(&c, 1, "anchor");
	ck_assert_contains(p.message, "anchor slo needs slo_ns");
}
END_TEST

START_TEST(config_validate_negative_duration_message)
{
	struct agile_config c = minimal();
	struct agile_problem p;

	c.tick_ns = -5;
	p = problem_for(&c, 1, "tick_ns");
	ck_assert_str_eq(p.message, "tick_ns (-5) must not be negative; it would "
	                            "be treated as unset: the default of 1s "
	                            "applies.");
	c = minimal();
	c.slo_ns = -1;
	p = problem_for(&c, 1, "slo_ns");
	ck_assert_contains(p.message, "there is no SLO and the tail guard is off");
}
END_TEST

START_TEST(config_validate_respects_cap)
{
	struct agile_config c = { .max_rate = 0, .deadband = 1, .down_step = 2,
	                          .gain = -1 };
	struct agile_problem problems[3];

	memset(problems, 0x5a, sizeof problems);
	ck_assert_uint_eq(agile_config_validate(&c, problems, 2), 4);
	ck_assert_str_eq(problems[0].field, "max_rate");
	ck_assert_str_eq(problems[1].field, "down_step");
	/* Nothing is written past the cap. */
	ck_assert_uint_eq((unsigned char)problems[2].field[0], 0x5a);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 4);
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 5), 4);
}
END_TEST

/* Every message is a whole sentence that names its field; a message cut by
 * the 224-byte buffer would lose its final period. */
START_TEST(config_validate_messages_are_sentences)
{
	struct agile_config c = {
		.preset = (enum agile_preset)7, .min_rate = 900, .floor_rate = -1,
		.probe_rate = 800, .max_rate = 500, .initial_rate = 600,
		.slo_ns = -1, .anchor = AGILE_ANCHOR_SLO, .tail_factor = NAN,
		.tail_tolerance = 3, .backoff_ticks = -1, .recover_ticks = -1,
		.slow_half_life_ns = -1, .slow_down_half_life_ns = -1,
		.max_baseline_rise = -1, .tick_ns = -1, .target_inflation = -1,
		.up_step = 7, .down_step = 7, .gain = -INFINITY,
		.slow_start_gain = 0.25, .deadband = 7, .recover_ramp = -1,
	};
	struct agile_problem problems[32];
	size_t n = agile_config_validate(&c, problems, 32);

	ck_assert_uint_ge(n, 20);
	ck_assert_uint_le(n, 32);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(problems[i].message);

		ck_assert_uint_lt(len, sizeof problems[i].message - 1);
		ck_assert_int_eq(problems[i].message[len - 1], '.');
		ck_assert_contains(problems[i].message, problems[i].field);
	}
}
END_TEST

/* validate and resolve are one walk: a config validate finds clean resolves
 * to exactly what its fields say, and each reported config is repaired. */
START_TEST(config_validate_agrees_with_resolve)
{
	struct agile_config c = minimal();
	struct agile_resolved r;

	c.floor_rate = 40;
	c.probe_rate = 40;
	c.initial_rate = 40;
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 0);
	r = resolve(&c);
	ck_assert_int_eq(r.probe_rate, 40);
	ck_assert_int_eq(r.initial_rate, 40);
	c.probe_rate = 41;
	ck_assert_uint_eq(agile_config_validate(&c, NULL, 0), 1);
	r = resolve(&c);
	ck_assert_int_eq(r.probe_rate, 40);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Names and parsing                                                         */
/* ------------------------------------------------------------------------ */

START_TEST(config_preset_names_round_trip)
{
	static const char *const names[] = { "none", "balanced",
		                              "latency-first",
		                              "throughput-first", "seed" };

	for (int i = 0; i < AGILE_PRESET_COUNT; i++) {
		enum agile_preset p = AGILE_PRESET_COUNT;

		ck_assert_str_eq(agile_preset_name((enum agile_preset)i), names[i]);
		ck_assert_int_eq(agile_preset_parse(names[i], &p), 0);
		ck_assert_int_eq(p, i);
	}
	ck_assert_str_eq(agile_preset_name(AGILE_PRESET_COUNT), "unknown");
}
END_TEST

START_TEST(config_parse_is_forgiving_about_case)
{
	enum agile_preset p = AGILE_PRESET_NONE;
	enum agile_anchor a = AGILE_ANCHOR_UNSET;

	ck_assert_int_eq(agile_preset_parse("LATENCY_FIRST", &p), 0);
	ck_assert_int_eq(p, AGILE_PRESET_LATENCY_FIRST);
	ck_assert_int_eq(agile_anchor_parse("SLO", &a), 0);
	ck_assert_int_eq(a, AGILE_ANCHOR_SLO);
}
END_TEST

START_TEST(config_anchor_parse)
{
	enum agile_anchor a = AGILE_ANCHOR_SLO;

	ck_assert_int_eq(agile_anchor_parse("unset", &a), 0);
	ck_assert_int_eq(a, AGILE_ANCHOR_UNSET);
	ck_assert_int_eq(agile_anchor_parse("baseline", &a), 0);
	ck_assert_int_eq(a, AGILE_ANCHOR_BASELINE);
	ck_assert_int_eq(agile_anchor_parse("slo", &a), 0);
	ck_assert_int_eq(a, AGILE_ANCHOR_SLO);
}
END_TEST

START_TEST(config_parse_rejects_unknown_names)
{
	enum agile_preset p = AGILE_PRESET_BALANCED;
	enum agile_anchor a = AGILE_ANCHOR_BASELINE;

	ck_assert_int_eq(agile_preset_parse("fast", &p), -EINVAL);
	ck_assert_int_eq(agile_preset_parse("", &p), -EINVAL);
	ck_assert_int_eq(agile_preset_parse("balanced ", &p), -EINVAL);
	ck_assert_int_eq(agile_preset_parse(NULL, &p), -EINVAL);
	ck_assert_int_eq(agile_preset_parse("none", NULL), -EINVAL);
	ck_assert_int_eq(p, AGILE_PRESET_BALANCED);
	ck_assert_int_eq(agile_anchor_parse("slow", &a), -EINVAL);
	ck_assert_int_eq(agile_anchor_parse("sl", &a), -EINVAL);
	ck_assert_int_eq(a, AGILE_ANCHOR_BASELINE);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Rendering                                                                 */
/* ------------------------------------------------------------------------ */

static void check_duration(int64_t ns, const char *want)
{
	char buf[64];
	size_t n = agile_duration_format(ns, buf, sizeof buf);

	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(n, strlen(want));
}

START_TEST(config_duration_format)
{
	check_duration(0, "0s");
	check_duration(1, "1ns");
	check_duration(999, "999ns");
	check_duration(1500, "1.5us");
	check_duration(250 * AGILE_NS_PER_US, "250us");
	check_duration(200 * AGILE_NS_PER_MS, "200ms");
	check_duration(1234567, "1.234567ms");
	check_duration(1500 * AGILE_NS_PER_MS, "1.5s");
	check_duration(AGILE_NS_PER_S, "1s");
	check_duration(61 * AGILE_NS_PER_S, "61s");
	check_duration(90 * AGILE_NS_PER_S, "1.5m");
	check_duration(120 * AGILE_NS_PER_S, "2m");
	check_duration(3600 * AGILE_NS_PER_S, "1h");
	check_duration(-200 * AGILE_NS_PER_MS, "-200ms");
	check_duration(INT64_MIN, "-9223372036.854775808s");
}
END_TEST

START_TEST(config_duration_format_truncates)
{
	char buf[4];

	memset(buf, 'x', sizeof buf);
	ck_assert_uint_eq(agile_duration_format(1500 * AGILE_NS_PER_MS, buf,
	                                        sizeof buf), 4);
	ck_assert_str_eq(buf, "1.5");
	ck_assert_uint_eq(agile_duration_format(1500 * AGILE_NS_PER_MS, NULL, 0),
	                  4);
	buf[0] = 'x';
	ck_assert_uint_eq(agile_duration_format(AGILE_NS_PER_S, buf, 1), 2);
	ck_assert_int_eq(buf[0], '\0');
}
END_TEST

static void check_window(const struct agile_config *c, const char *want)
{
	struct agile_resolved r = resolve(c);
	char buf[128];
	size_t n = agile_resolved_window(&r, buf, sizeof buf);

	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(n, strlen(want));
}

START_TEST(config_window_strings)
{
	struct agile_config c = minimal();

	check_window(&c, "(1+1.00) x baseline");
	c.preset = AGILE_PRESET_THROUGHPUT_FIRST;
	check_window(&c, "(1+2.50) x baseline");
	c = with_slo();
	check_window(&c, "0.8 x 200ms");
	c.preset = AGILE_PRESET_BALANCED;
	check_window(&c, "min((1+1.00) x baseline, 0.8 x 200ms)");
}
END_TEST

static void check_tail(const struct agile_config *c, const char *want)
{
	struct agile_resolved r = resolve(c);
	char buf[128];
	size_t n = agile_resolved_tail(&r, buf, sizeof buf);

	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(n, strlen(want));
}

START_TEST(config_tail_strings)
{
	struct agile_config c = minimal();

	check_tail(&c, "off (SLO unset)");
	c = with_slo();
	check_tail(&c, "200ms (1.0x SLO), ratio > 5% + margin");
	c.preset = AGILE_PRESET_LATENCY_FIRST;
	check_tail(&c, "200ms (1.0x SLO)");
	c.tail_factor = 2;
	check_tail(&c, "400ms (2.0x SLO)");
	c.tail_factor = 1.25;
	c.tail_tolerance = 0.075;
	check_tail(&c, "250ms (1.25x SLO), ratio > 7.5% + margin");
}
END_TEST

START_TEST(config_format_lists_every_key)
{
	static const char *const lines[] = {
		"kind: rate\n", "preset: none\n", "anchor: slo\n",
		"anchor_degraded: no\n", "window: 0.8 x 200ms\n",
		"tail: 200ms (1.0x SLO), ratio > 5% + margin\n",
		"max_rate: 500\n", "min_rate: 1\n", "floor_rate: 1\n",
		"probe_rate: 1\n", "initial_rate: 62\n", "slo: 200ms\n",
		"tail_factor: 1\n", "tail_tolerance: 0.05\n",
		"backoff_ticks: 2\n", "recover_ticks: 2\n", "tick: 1s\n",
		"slow_half_life: 1m\n", "slow_down_half_life: 5s\n",
		"max_baseline_rise: 0.002\n", "target_inflation: 1\n",
		"up_step: 0.05\n", "down_step: 0.3\n", "gain: 0.5\n",
		"slow_start_gain: 2\n", "deadband: 0.1\n", "recover_ramp: 0\n",
		"delivered_share: 0.92\n", "knee_ramp: 2\n",
		"probe_acceleration: 2\n", "goodput_cut: 1\n",
	};
	struct agile_config c = with_slo();
	struct agile_resolved r = resolve(&c);
	char buf[2048];
	size_t n = agile_resolved_format(&r, buf, sizeof buf);
	size_t newlines = 0;

	ck_assert_uint_eq(n, strlen(buf));
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		ck_assert_contains(buf, lines[i]);
	for (const char *s = buf; *s != '\0'; s++)
		newlines += *s == '\n';
	ck_assert_uint_eq(newlines, sizeof lines / sizeof lines[0]);
}
END_TEST

START_TEST(config_format_concurrency_degraded)
{
	struct agile_config c = minimal();
	struct agile_resolved r;
	char buf[2048];

	c.preset = AGILE_PRESET_LATENCY_FIRST;
	ck_assert_int_eq(agile_resolve(&c, AGILE_KIND_CONCURRENCY, &r), 0);
	agile_resolved_format(&r, buf, sizeof buf);
	ck_assert_contains(buf, "kind: concurrency\n");
	ck_assert_contains(buf, "preset: latency-first\n");
	ck_assert_contains(buf, "anchor: baseline (slo anchor requested without "
	                        "an slo)\n");
	ck_assert_contains(buf, "anchor_degraded: yes\n");
	ck_assert_contains(buf, "slo: unset\n");
	ck_assert_contains(buf, "tail: off (SLO unset)\n");
}
END_TEST

/* Every prefix length gives the same return value and a NUL-terminated
 * prefix of the full text. */
START_TEST(config_format_truncates_cleanly)
{
	struct agile_config c = with_slo();
	struct agile_resolved r = resolve(&c);
	char full[2048], part[2048];
	size_t want = agile_resolved_format(&r, full, sizeof full);
	size_t json_want = agile_resolved_json(&r, NULL, 0);

	ck_assert_uint_eq(agile_resolved_format(&r, NULL, 0), want);
	for (size_t len = 1; len <= want + 1; len++) {
		memset(part, 'x', sizeof part);
		ck_assert_uint_eq(agile_resolved_format(&r, part, len), want);
		ck_assert_int_eq(part[len - 1], '\0');
		ck_assert_int_eq(strncmp(part, full, len - 1), 0);
		ck_assert_int_eq(part[len], 'x');
	}
	for (size_t len = 1; len <= json_want + 1; len += 7) {
		ck_assert_uint_eq(agile_resolved_json(&r, part, len), json_want);
		ck_assert_uint_eq(strlen(part), len - 1 < json_want ? len - 1
		                                                    : json_want);
	}
}
END_TEST

START_TEST(config_json_exact)
{
	static const char want[] =
		"{\"kind\":\"rate\",\"preset\":\"none\",\"anchor\":\"slo\","
		"\"anchor_degraded\":false,\"window\":\"0.8 x 200ms\","
		"\"tail\":\"200ms (1.0x SLO), ratio > 5% + margin\","
		"\"max_rate\":500,\"min_rate\":1,\"floor_rate\":1,"
		"\"probe_rate\":1,\"initial_rate\":62,"
		"\"slo_ns\":200000000,\"slo\":\"200ms\","
		"\"tail_factor\":1,\"tail_tolerance\":0.05,"
		"\"backoff_ticks\":2,\"recover_ticks\":2,"
		"\"tick_ns\":1000000000,\"tick\":\"1s\","
		"\"slow_half_life_ns\":60000000000,\"slow_half_life\":\"1m\","
		"\"slow_down_half_life_ns\":5000000000,"
		"\"slow_down_half_life\":\"5s\","
		"\"max_baseline_rise\":0.002,\"target_inflation\":1,"
		"\"up_step\":0.05,\"down_step\":0.3,\"gain\":0.5,"
		"\"slow_start_gain\":2,\"deadband\":0.1,\"recover_ramp\":0,"
		"\"delivered_share\":0.92,\"knee_ramp\":2,"
		"\"probe_acceleration\":2,\"goodput_cut\":1}";
	struct agile_config c = with_slo();
	struct agile_resolved r = resolve(&c);
	char buf[2048];

	ck_assert_uint_eq(agile_resolved_json(&r, buf, sizeof buf),
	                  strlen(want));
	ck_assert_str_eq(buf, want);
}
END_TEST

/*
 * A small structural JSON check: one object of string keys mapped to strings,
 * numbers, booleans or null, as agile_resolved_json emits.  It is strict about
 * what it accepts (no trailing commas, no bare words, escapes well formed) so
 * a rendering slip fails the test.
 */
static bool json_string_ok(const char **p)
{
	if (**p != '"')
		return false;
	for ((*p)++; **p != '"'; (*p)++) {
		unsigned char c = (unsigned char)**p;

		if (c < 0x20)
			return false;
		if (c == '\\') {
			(*p)++;
			if (**p == 'u') {
				for (int i = 0; i < 4; i++) {
					(*p)++;
					if (!strchr("0123456789abcdefABCDEF", **p) || **p == 0)
						return false;
				}
			} else if (!strchr("\"\\/bfnrt", **p) || **p == 0) {
				return false;
			}
		}
	}
	(*p)++;
	return true;
}

static bool json_number_ok(const char **p)
{
	const char *start = *p;

	if (**p == '-')
		(*p)++;
	if (**p == '0')
		(*p)++;
	else if (**p >= '1' && **p <= '9')
		while (**p >= '0' && **p <= '9')
			(*p)++;
	else
		return false;
	if (**p == '.') {
		(*p)++;
		if (!(**p >= '0' && **p <= '9'))
			return false;
		while (**p >= '0' && **p <= '9')
			(*p)++;
	}
	if (**p == 'e' || **p == 'E') {
		(*p)++;
		if (**p == '+' || **p == '-')
			(*p)++;
		if (!(**p >= '0' && **p <= '9'))
			return false;
		while (**p >= '0' && **p <= '9')
			(*p)++;
	}
	return *p > start;
}

static bool json_value_ok(const char **p)
{
	static const char *const words[] = { "true", "false", "null" };

	if (**p == '"')
		return json_string_ok(p);
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);

		if (strncmp(*p, words[i], n) == 0) {
			*p += n;
			return true;
		}
	}
	return json_number_ok(p);
}

/* Returns the number of members, or -1 when `text` is not such an object. */
static int json_object_members(const char *text)
{
	const char *p = text;
	int members = 0;

	if (*p++ != '{')
		return -1;
	if (*p == '}')
		return p[1] == '\0' ? 0 : -1;
	for (;;) {
		if (!json_string_ok(&p) || *p++ != ':' || !json_value_ok(&p))
			return -1;
		members++;
		if (*p == '}')
			return p[1] == '\0' ? members : -1;
		if (*p++ != ',')
			return -1;
	}
}

START_TEST(config_json_is_well_formed)
{
	struct agile_config configs[4] = { minimal(), with_slo(), minimal(),
		                           with_slo() };
	char buf[2048];

	configs[2].preset = AGILE_PRESET_LATENCY_FIRST;
	configs[3].preset = AGILE_PRESET_THROUGHPUT_FIRST;
	configs[3].tail_factor = 1.75;
	configs[3].recover_ramp = 0.5;
	configs[3].max_baseline_rise = 1e-7;
	for (size_t i = 0; i < 4; i++) {
		struct agile_resolved r;

		ck_assert_int_eq(agile_resolve(&configs[i], AGILE_KIND_CONCURRENCY,
		                               &r), 0);
		ck_assert_uint_lt(agile_resolved_json(&r, buf, sizeof buf),
		                  sizeof buf);
		/* 31 listed fields, four durations carrying an extra _ns. */
		ck_assert_int_eq(json_object_members(buf), 35);
	}
	/* The checker itself rejects what it should. */
	ck_assert_int_eq(json_object_members("{\"a\":1,}"), -1);
	ck_assert_int_eq(json_object_members("{\"a\":nan}"), -1);
	ck_assert_int_eq(json_object_members("{\"a\":\"x\"}"), 1);
}
END_TEST

/* A hand-built struct with a NaN must still render as valid JSON. */
START_TEST(config_json_non_finite_is_null)
{
	struct agile_config c = minimal();
	struct agile_resolved r = resolve(&c);
	char buf[2048];

	r.gain = NAN;
	agile_resolved_json(&r, buf, sizeof buf);
	ck_assert_contains(buf, "\"gain\":null");
	ck_assert_int_eq(json_object_members(buf), 35);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *defaults = tcase_create("defaults");
	TCase *presets = tcase_create("presets");
	TCase *rates = tcase_create("rates");
	TCase *repairs = tcase_create("repairs");
	TCase *validate = tcase_create("validate");
	TCase *names = tcase_create("names");
	TCase *render = tcase_create("render");

	tcase_add_test(defaults, config_default_rates);
	tcase_add_test(defaults, config_default_durations);
	tcase_add_test(defaults, config_default_gains);
	tcase_add_test(defaults, config_default_policy_without_slo);
	tcase_add_test(defaults, config_kind_is_stored);
	suite_add_tcase(s, defaults);

	tcase_add_test(presets, config_preset_none_with_slo);
	tcase_add_test(presets, config_preset_none_without_slo_is_balanced);
	tcase_add_test(presets, config_preset_seed_is_the_seeds_none);
	tcase_add_test(presets, config_matrix_rules_explicit);
	tcase_add_test(presets, config_preset_balanced_with_slo);
	tcase_add_test(presets, config_preset_balanced_without_slo);
	tcase_add_test(presets, config_preset_latency_first_with_slo);
	tcase_add_test(presets, config_preset_latency_first_without_slo);
	tcase_add_test(presets, config_preset_throughput_first_with_slo);
	tcase_add_test(presets, config_preset_throughput_first_without_slo);
	tcase_add_test(presets, config_explicit_fields_beat_preset);
	tcase_add_test(presets, config_explicit_baseline_anchor_under_none);
	tcase_add_test(presets, config_explicit_gains_are_kept);
	tcase_add_test(presets, config_anchor_slo_without_slo_degrades);
	tcase_add_test(presets, config_anchor_names);
	suite_add_tcase(s, presets);

	tcase_add_test(rates, config_legacy_min_rate_fills_floor_and_probe);
	tcase_add_test(rates, config_explicit_floor_and_probe_beat_min_rate);
	tcase_add_test(rates, config_initial_is_max_over_8);
	tcase_add_test(rates, config_initial_at_least_floor);
	tcase_add_test(rates, config_repair_min_above_max);
	tcase_add_test(rates, config_repair_floor_above_max);
	tcase_add_test(rates, config_repair_probe_above_floor);
	tcase_add_test(rates, config_repair_inherited_probe_above_floor);
	tcase_add_test(rates, config_repair_initial_out_of_range);
	tcase_add_test(rates, config_resolve_rejects_max_rate_zero);
	tcase_add_test(rates, config_resolve_rejects_bad_arguments);
	tcase_add_test(rates, config_resolve_is_deterministic);
	suite_add_tcase(s, rates);

	tcase_add_test(repairs, config_repair_deadband_one);
	tcase_add_test(repairs, config_repair_down_step_one);
	tcase_add_test(repairs, config_repair_tick_out_of_range);
	tcase_add_test(repairs, config_repair_up_step_one);
	tcase_add_test(repairs, config_repair_slow_start_gain_below_one);
	tcase_add_test(repairs, config_repair_tail_tolerance_one);
	tcase_add_test(repairs, config_repair_matrix_rules);
	tcase_add_test(repairs, config_repair_negative_fields);
	tcase_add_test(repairs, config_repair_non_finite_fields);
	tcase_add_test(repairs, config_repair_unknown_enumerations);
	suite_add_tcase(s, repairs);

	tcase_add_test(validate, config_validate_clean_config_is_silent);
	tcase_add_test(validate, config_validate_max_rate);
	tcase_add_test(validate, config_sub_second_rates);
	tcase_add_test(validate, config_validate_continues_without_max_rate);
	tcase_add_test(validate, config_validate_anchor_slo_without_slo);
	tcase_add_test(validate, config_validate_latency_first_without_slo);
	tcase_add_test(validate, config_validate_negative_duration_message);
	tcase_add_test(validate, config_validate_respects_cap);
	tcase_add_test(validate, config_validate_messages_are_sentences);
	tcase_add_test(validate, config_validate_agrees_with_resolve);
	suite_add_tcase(s, validate);

	tcase_add_test(names, config_preset_names_round_trip);
	tcase_add_test(names, config_parse_is_forgiving_about_case);
	tcase_add_test(names, config_anchor_parse);
	tcase_add_test(names, config_parse_rejects_unknown_names);
	suite_add_tcase(s, names);

	tcase_add_test(render, config_duration_format);
	tcase_add_test(render, config_duration_format_truncates);
	tcase_add_test(render, config_window_strings);
	tcase_add_test(render, config_tail_strings);
	tcase_add_test(render, config_format_lists_every_key);
	tcase_add_test(render, config_format_concurrency_degraded);
	tcase_add_test(render, config_format_truncates_cleanly);
	tcase_add_test(render, config_json_exact);
	tcase_add_test(render, config_json_is_well_formed);
	tcase_add_test(render, config_json_non_finite_is_null);
	suite_add_tcase(s, render);

	return s;
}
