/*
 * check_laws.c - adaptx's windowed laws (AIMD, Vegas, Gradient), their
 * options and their window, on a virtual clock.
 *
 * Each arithmetic test builds a law with warm-up and jitter off, records a
 * window of synthetic calls at chosen latencies and in-flight counts, closes
 * the window by advancing the clock one sample window, and asserts the exact
 * new limit.  The expected numbers are worked out in the comments from the
 * rules in agile_laws.h, not recomputed with the code under test.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "agile.h"
#include "agile_laws.h"
#include "check_suites.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* A law of `kind` with warm-up and jitter off, starting at `initial`, its
 * window opening at t = 0. */
static struct agile_law_options plain(enum agile_law_kind kind, int64_t initial)
{
	struct agile_law_options o;

	agile_law_options_init(&o);
	ck_assert_int_eq(agile_law_set_kind(&o, kind), 0);
	ck_assert_int_eq(agile_law_set_initial_limit(&o, initial), 0);
	ck_assert_int_eq(agile_law_set_warmup_samples(&o, 0), 0);
	ck_assert_int_eq(agile_law_set_jitter(&o, 0), 0);
	return o;
}

static void start(struct agile_law *law, const struct agile_law_options *o)
{
	ck_assert_int_eq(agile_law_init(law, o, 0), 0);
}

/* Record n successful calls of `latency` with `in_flight` in flight. */
static void calls(struct agile_law *law, int n, int64_t latency, uint64_t in_flight)
{
	for (int i = 0; i < n; i++)
		ck_assert(agile_law_record(law, true, latency, in_flight));
}

static void failures(struct agile_law *law, int n, int64_t latency)
{
	for (int i = 0; i < n; i++)
		ck_assert(agile_law_record(law, false, latency, 1));
}

/* Close the window that opened at window_index x 1 s. */
static enum agile_law_result close_window(struct agile_law *law, int window_index)
{
	return agile_law_advance(law, (int64_t)(window_index + 1) * SEC, NULL, NULL);
}

/* --- options ---------------------------------------------------------------- */

START_TEST(laws_defaults_are_adaptx_defaults)
{
	struct agile_law_options o;

	agile_law_options_init(&o);
	ck_assert_int_eq(o.kind, AGILE_LAW_AIMD);
	ck_assert_int_eq(o.initial_limit, 10);
	ck_assert_int_eq(o.min_limit, 1);
	ck_assert_int_eq(o.max_limit, 1000);
	ck_assert_double_eq(o.smoothing, 0.2);
	ck_assert_double_eq(o.increase_rate, 1.0);
	ck_assert_double_eq(o.decrease_ratio, 0.5);
	ck_assert_double_eq(o.utilization, 0.9);
	ck_assert_int_eq(o.target_latency_ns, 100 * MS);
	ck_assert_double_eq(o.tolerance, 0.1);
	ck_assert_int_eq(o.sample_window_ns, SEC);
	ck_assert_int_eq(o.warmup_samples, 10);
	ck_assert_double_eq(o.min_latency_decay, 0.001);
	ck_assert_double_eq(o.jitter, 0.1);

	struct agile_law law;
	ck_assert_int_eq(agile_law_init(&law, NULL, 0), 0);
	ck_assert_int_eq(law.config.kind, AGILE_LAW_AIMD);
	ck_assert_int_eq(agile_law_limit(&law), 10);
}
END_TEST

START_TEST(laws_parse_accepts_the_four_names)
{
	enum agile_law_kind k = AGILE_LAW_COUNT;

	ck_assert_int_eq(agile_law_parse("agile", &k), 0);
	ck_assert_int_eq(k, AGILE_LAW_AGILE);
	ck_assert_int_eq(agile_law_parse("aimd", &k), 0);
	ck_assert_int_eq(k, AGILE_LAW_AIMD);
	ck_assert_int_eq(agile_law_parse("Vegas", &k), 0);
	ck_assert_int_eq(k, AGILE_LAW_VEGAS);
	ck_assert_int_eq(agile_law_parse("GRADIENT", &k), 0);
	ck_assert_int_eq(k, AGILE_LAW_GRADIENT);

	k = AGILE_LAW_VEGAS;
	ck_assert_int_eq(agile_law_parse("cubic", &k), -EINVAL);
	ck_assert_int_eq(agile_law_parse("aimdx", &k), -EINVAL);
	ck_assert_int_eq(agile_law_parse("", &k), -EINVAL);
	ck_assert_int_eq(agile_law_parse(NULL, &k), -EINVAL);
	ck_assert_int_eq(agile_law_parse("aimd", NULL), -EINVAL);
	ck_assert_int_eq(k, AGILE_LAW_VEGAS); /* untouched on error */

	ck_assert_str_eq(agile_law_name(AGILE_LAW_AGILE), "agile");
	ck_assert_str_eq(agile_law_name(AGILE_LAW_GRADIENT), "gradient");
	ck_assert_str_eq(agile_law_name(42), "aimd");
	ck_assert_str_eq(agile_law_name(-1), "aimd");
}
END_TEST

START_TEST(laws_setters_ignore_out_of_range_values)
{
	struct agile_law_options o;

	agile_law_options_init(&o);
	/* Each refused value leaves the previous one, not the default. */
	ck_assert_int_eq(agile_law_set_initial_limit(&o, 7), 0);
	ck_assert_int_eq(agile_law_set_initial_limit(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_initial_limit(&o, -3), -EINVAL);
	ck_assert_int_eq(o.initial_limit, 7);
	ck_assert_int_eq(agile_law_set_min_limit(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_max_limit(&o, -1), -EINVAL);
	ck_assert_int_eq(o.min_limit, 1);
	ck_assert_int_eq(o.max_limit, 1000);

	ck_assert_int_eq(agile_law_set_smoothing(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_smoothing(&o, 1.5), -EINVAL);
	ck_assert_int_eq(agile_law_set_smoothing(&o, NAN), -EINVAL);
	ck_assert_int_eq(agile_law_set_smoothing(&o, 1), 0);
	ck_assert_double_eq(o.smoothing, 1);

	ck_assert_int_eq(agile_law_set_increase_rate(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_increase_rate(&o, INFINITY), -EINVAL);
	ck_assert_int_eq(agile_law_set_increase_rate(&o, 2.5), 0);
	ck_assert_double_eq(o.increase_rate, 2.5);

	ck_assert_int_eq(agile_law_set_decrease_ratio(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_decrease_ratio(&o, 1), -EINVAL);
	ck_assert_int_eq(agile_law_set_decrease_ratio(&o, 0.7), 0);
	ck_assert_double_eq(o.decrease_ratio, 0.7);

	ck_assert_int_eq(agile_law_set_utilization(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_utilization(&o, 1.01), -EINVAL);
	ck_assert_int_eq(agile_law_set_utilization(&o, 1), 0);

	ck_assert_int_eq(agile_law_set_target_latency_ns(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_tolerance(&o, 0), -EINVAL);
	ck_assert_int_eq(agile_law_set_tolerance(&o, 2), -EINVAL);
	ck_assert_int_eq(agile_law_set_sample_window_ns(&o, -SEC), -EINVAL);
	ck_assert_int_eq(agile_law_set_warmup_samples(&o, -1), -EINVAL);
	ck_assert_int_eq(agile_law_set_warmup_samples(&o, 0), 0);
	ck_assert_int_eq(agile_law_set_min_latency_decay(&o, -0.1), -EINVAL);
	ck_assert_int_eq(agile_law_set_min_latency_decay(&o, 0), 0);
	ck_assert_int_eq(agile_law_set_jitter(&o, 1.1), -EINVAL);
	ck_assert_int_eq(agile_law_set_jitter(&o, 1), 0);

	ck_assert_int_eq(o.target_latency_ns, 100 * MS);
	ck_assert_double_eq(o.tolerance, 0.1);
	ck_assert_int_eq(o.sample_window_ns, SEC);
	ck_assert_int_eq(o.warmup_samples, 0);
	ck_assert_double_eq(o.min_latency_decay, 0);
	ck_assert_double_eq(o.jitter, 1);
}
END_TEST

START_TEST(laws_resolve_enforces_the_cross_field_rules)
{
	struct agile_law_options o;

	/* max below min is raised to min; initial is clamped into it. */
	agile_law_options_init(&o);
	agile_law_set_min_limit(&o, 50);
	agile_law_set_max_limit(&o, 20);
	agile_law_options_resolve(&o);
	ck_assert_int_eq(o.min_limit, 50);
	ck_assert_int_eq(o.max_limit, 50);
	ck_assert_int_eq(o.initial_limit, 50);

	agile_law_options_init(&o);
	agile_law_set_initial_limit(&o, 5000);
	agile_law_options_resolve(&o);
	ck_assert_int_eq(o.initial_limit, 1000);

	agile_law_options_init(&o);
	agile_law_set_min_limit(&o, 4);
	agile_law_set_initial_limit(&o, 2);
	agile_law_options_resolve(&o);
	ck_assert_int_eq(o.initial_limit, 4);

	/* Fields written directly out of range take their defaults, and the
	 * floor of 1 holds whatever was written. */
	agile_law_options_init(&o);
	o.min_limit = -5;
	o.max_limit = 0;
	o.smoothing = NAN;
	o.decrease_ratio = 1;
	o.jitter = -1;
	o.warmup_samples = -2;
	agile_law_options_resolve(&o);
	ck_assert_int_eq(o.min_limit, 1);
	ck_assert_int_eq(o.max_limit, 1000);
	ck_assert_double_eq(o.smoothing, 0.2);
	ck_assert_double_eq(o.decrease_ratio, 0.5);
	ck_assert_double_eq(o.jitter, 0.1);
	ck_assert_int_eq(o.warmup_samples, 10);
}
END_TEST

START_TEST(laws_unknown_kind_behaves_as_aimd)
{
	struct agile_law_options o;
	struct agile_law law;

	agile_law_options_init(&o);
	ck_assert_int_eq(agile_law_set_kind(&o, AGILE_LAW_VEGAS), 0);
	ck_assert_int_eq(agile_law_set_kind(&o, 17), -EINVAL);
	ck_assert_int_eq(o.kind, AGILE_LAW_AIMD);

	o.kind = 99; /* written directly */
	agile_law_set_warmup_samples(&o, 0);
	agile_law_set_jitter(&o, 0);
	start(&law, &o);
	ck_assert_int_eq(law.config.kind, AGILE_LAW_AIMD);
	/* And it runs AIMD: one failing window halves 10 to 5. */
	failures(&law, 1, 5 * MS);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 5);
}
END_TEST

/* --- AIMD ------------------------------------------------------------------- */

START_TEST(laws_aimd_failures_in_a_window_cut_once)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 40);
	struct agile_law law;

	start(&law, &o);
	calls(&law, 5, 10 * MS, 40);
	failures(&law, 10, 10 * MS);
	/* Ten failures, one window: 40 x 0.5 = 20, not 40 / 2^10. */
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 20);
	ck_assert_uint_eq(law.decreases, 1);
	ck_assert_uint_eq(law.adjustments, 1);
}
END_TEST

START_TEST(laws_aimd_decrease_truncates_toward_zero)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 7);
	struct agile_law law;

	agile_law_set_decrease_ratio(&o, 0.7);
	start(&law, &o);
	failures(&law, 1, MS);
	close_window(&law, 0);
	/* 7 x 0.7 = 4.9 -> 4 */
	ck_assert_int_eq(agile_law_limit(&law), 4);
}
END_TEST

START_TEST(laws_aimd_grows_only_past_the_utilisation_gate)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;

	start(&law, &o);
	/* ceil(10 x 0.9) = 9: a window peaking at 8 in flight holds. */
	calls(&law, 20, 10 * MS, 8);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 10);
	/* Peaking at 9 grows by the increase rate, 1. */
	calls(&law, 3, 10 * MS, 1);
	calls(&law, 1, 10 * MS, 9);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 11);
	/* Serial traffic (1 in flight) holds it still. */
	calls(&law, 100, 10 * MS, 1);
	ck_assert_int_eq(close_window(&law, 2), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 11);
}
END_TEST

START_TEST(laws_aimd_fractional_rate_keeps_its_remainder)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;
	int64_t seen[4];

	agile_law_set_increase_rate(&o, 0.5);
	start(&law, &o);
	for (int w = 0; w < 4; w++) {
		calls(&law, 1, 10 * MS, 1000);
		close_window(&law, w);
		seen[w] = agile_law_limit(&law);
	}
	/* 0.5 of credit per window: +0, +1, +0, +1. */
	ck_assert_int_eq(seen[0], 10);
	ck_assert_int_eq(seen[1], 11);
	ck_assert_int_eq(seen[2], 11);
	ck_assert_int_eq(seen[3], 12);
	ck_assert_double_eq(law.state.aimd.credit, 0);
}
END_TEST

START_TEST(laws_aimd_never_leaves_its_bounds)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 2);
	struct agile_law law;

	agile_law_set_min_limit(&o, 2);
	agile_law_set_max_limit(&o, 3);
	start(&law, &o);
	failures(&law, 1, MS);
	/* 2 x 0.5 = 1, floored at min 2: the law ran and held. */
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 2);
	ck_assert_uint_eq(law.decreases, 0);
	for (int w = 1; w < 4; w++) {
		calls(&law, 1, MS, 3);
		close_window(&law, w);
	}
	ck_assert_int_eq(agile_law_limit(&law), 3);
}
END_TEST

/* --- Vegas ------------------------------------------------------------------ */

START_TEST(laws_vegas_grows_while_the_queue_is_below_alpha)
{
	struct agile_law_options o = plain(AGILE_LAW_VEGAS, 10);
	struct agile_law law;

	agile_law_set_min_latency_decay(&o, 0);
	start(&law, &o);
	/* First window: rtt_min = mean = 10 ms, queue = 10 x (1 - 1) = 0;
	 * alpha = 10 x 0.1 x (1 - 10/100) = 0.9: 0 < 0.9, +1. */
	calls(&law, 4, 10 * MS, 1);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 11);
	ck_assert_double_eq(law.state.vegas.min_ns, 10 * MS);
	ck_assert_double_eq(law.state.vegas.avg_ns, 10 * MS);
}
END_TEST

START_TEST(laws_vegas_holds_inside_the_band_and_backs_off_above_it)
{
	struct agile_law_options o = plain(AGILE_LAW_VEGAS, 10);
	struct agile_law law;

	agile_law_set_min_latency_decay(&o, 0);
	start(&law, &o);
	calls(&law, 1, 10 * MS, 1);
	close_window(&law, 0); /* 11, rtt_min 10 ms */
	/* Mean 12 ms: queue = 11 x (1 - 10/12) = 1.833; alpha = 11 x 0.1 x
	 * 0.9 = 0.99, 2 alpha = 1.98: inside the band, hold. */
	calls(&law, 2, 12 * MS, 1);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 11);
	/* Mean 15 ms (10 and 20): queue = 11 x (1 - 10/15) = 3.67 > 1.98:
	 * 11 x 0.5 = 5.5 -> 5. */
	calls(&law, 1, 10 * MS, 1);
	calls(&law, 1, 20 * MS, 1);
	ck_assert_int_eq(close_window(&law, 2), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 5);
}
END_TEST

START_TEST(laws_vegas_band_unscaled_when_target_is_below_rtt_min)
{
	struct agile_law_options o = plain(AGILE_LAW_VEGAS, 100);
	struct agile_law law;

	agile_law_set_min_latency_decay(&o, 0);
	agile_law_set_target_latency_ns(&o, 5 * MS);
	start(&law, &o);
	calls(&law, 1, 10 * MS, 1);
	close_window(&law, 0); /* queue 0 < alpha 10: 101 */
	ck_assert_int_eq(agile_law_limit(&law), 101);
	/* Target 5 ms <= rtt_min 10 ms: alpha = 101 x 0.1 = 10.1, 2 alpha =
	 * 20.2.  Mean 11.5 ms: queue = 101 x (1 - 10/11.5) = 13.17: hold. */
	calls(&law, 1, 11500000, 1);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_HELD);
	/* Mean 20 ms: queue = 101 x 0.5 = 50.5 > 20.2: 50. */
	calls(&law, 1, 20 * MS, 1);
	ck_assert_int_eq(close_window(&law, 2), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 50);
}
END_TEST

START_TEST(laws_vegas_rtt_min_decays_toward_the_average)
{
	struct agile_law_options o = plain(AGILE_LAW_VEGAS, 10);
	struct agile_law law;

	agile_law_set_min_latency_decay(&o, 0.5);
	agile_law_set_max_limit(&o, 10);
	start(&law, &o);
	calls(&law, 1, 10 * MS, 1);
	close_window(&law, 0);
	ck_assert_double_eq_tol(law.state.vegas.min_ns, 10 * MS, 1e-3);
	/* Mean 30 ms: avg = 0.2 x 30 + 0.8 x 10 = 14 ms; rtt_min drifts half
	 * way toward it, 10 -> 12 ms, and the window's own 30 ms is higher. */
	calls(&law, 1, 30 * MS, 1);
	close_window(&law, 1);
	ck_assert_double_eq_tol(law.state.vegas.avg_ns, 14 * MS, 1e-3);
	ck_assert_double_eq_tol(law.state.vegas.min_ns, 12 * MS, 1e-3);
	/* A window whose minimum is below the drifted one resets it. */
	calls(&law, 1, 8 * MS, 1);
	calls(&law, 1, 40 * MS, 1);
	close_window(&law, 2);
	ck_assert_double_eq_tol(law.state.vegas.min_ns, 8 * MS, 1e-3);
}
END_TEST

START_TEST(laws_vegas_ignores_failures)
{
	struct agile_law_options o = plain(AGILE_LAW_VEGAS, 10);
	struct agile_law law;

	agile_law_set_min_latency_decay(&o, 0);
	start(&law, &o);
	/* Every call failed, but at the floor latency: queue 0, +1. */
	failures(&law, 5, 10 * MS);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 11);
}
END_TEST

/* --- Gradient --------------------------------------------------------------- */

START_TEST(laws_gradient_first_window_seeds_the_average_and_holds)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 10);
	struct agile_law law;

	start(&law, &o);
	calls(&law, 2, 500 * MS, 1);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 10);
	/* Seeded with the first mean, not blended with zero. */
	ck_assert_double_eq(law.state.gradient.avg_ns, 500 * MS);
}
END_TEST

START_TEST(laws_gradient_steps_and_proportional_backoff)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 10);
	struct agile_law law;

	start(&law, &o);
	calls(&law, 1, 100 * MS, 1);
	close_window(&law, 0); /* avg 100, hold at 10 */

	/* 100 ms: avg stays 100, g = 0 <= 0.1: +1. */
	calls(&law, 1, 100 * MS, 1);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 11);

	/* 50 ms: avg = 0.2 x 50 + 0.8 x 100 = 90, g = -40/90 < -0.1: +2. */
	calls(&law, 1, 50 * MS, 1);
	ck_assert_int_eq(close_window(&law, 2), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 13);
	ck_assert_double_eq_tol(law.state.gradient.avg_ns, 90 * MS, 1e-3);

	/* 200 ms: avg = 40 + 72 = 112, g = 88/112 = 0.786, factor
	 * max(1 - 0.393, 0.5) = 0.607: 13 x 0.607 = 7.89 -> 7. */
	calls(&law, 1, 200 * MS, 1);
	ck_assert_int_eq(close_window(&law, 3), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 7);

	/* 1000 ms: avg = 200 + 89.6 = 289.6, g = 2.45: the factor bottoms
	 * out at the decrease ratio, 7 x 0.5 -> 3. */
	calls(&law, 1, 1000 * MS, 1);
	ck_assert_int_eq(close_window(&law, 4), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 3);
}
END_TEST

START_TEST(laws_gradient_tolerance_edge_is_a_unit_step)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 10);
	struct agile_law law;

	agile_law_set_smoothing(&o, 1); /* avg = the window's mean */
	start(&law, &o);
	calls(&law, 1, 100 * MS, 1);
	close_window(&law, 0);
	/* With smoothing 1 the average is the mean itself: g = 0. */
	calls(&law, 1, 300 * MS, 1);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 11);
}
END_TEST

START_TEST(laws_gradient_failures_cut_once)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 20);
	struct agile_law law;

	start(&law, &o);
	/* The first window holds even with failures: no average yet. */
	failures(&law, 3, 100 * MS);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_HELD);
	failures(&law, 30, 100 * MS);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 10);
}
END_TEST

/* --- jitter ----------------------------------------------------------------- */

START_TEST(laws_jitter_withholds_a_share_on_heads)
{
	struct agile_law_options o;
	struct agile_law_draw heads = {.amount = 0.5, .coin = 0.3};
	struct agile_law_draw tails = {.amount = 0.5, .coin = 0.7};
	struct agile_law_draw all = {.amount = 0.999, .coin = 0};

	agile_law_options_init(&o); /* jitter 0.1 */
	/* +50: withheld = int(50 x 0.1 x 0.5) = 2, on heads only. */
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, &heads), 148);
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, &tails), 150);
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, NULL), 150);
	/* int(50 x 0.1 x 0.999) = 4 */
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, &all), 146);
	/* A step of 1 is never withheld: int(0.1 x u) = 0. */
	ck_assert_int_eq(agile_law_jitter(&o, 10, 11, &all), 11);
	/* Holds and decreases pass through. */
	ck_assert_int_eq(agile_law_jitter(&o, 10, 10, &all), 10);
	ck_assert_int_eq(agile_law_jitter(&o, 10, 5, &all), 5);
	/* Jitter 0 disables it; out-of-range draws are clamped. */
	agile_law_set_jitter(&o, 0);
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, &all), 150);
	agile_law_set_jitter(&o, 1);
	struct agile_law_draw wild = {.amount = 7, .coin = -3};
	ck_assert_int_eq(agile_law_jitter(&o, 100, 150, &wild), 100);
}
END_TEST

START_TEST(laws_jitter_applies_before_the_clamp)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;
	struct agile_law_draw d = {.amount = 0.5, .coin = 0.1};

	agile_law_set_jitter(&o, 0.1);
	agile_law_set_increase_rate(&o, 2000);
	start(&law, &o);
	calls(&law, 1, MS, 10);
	/* 10 + 2000 = 2010, less int(2000 x 0.1 x 0.5) = 100 -> 1910, then
	 * clamped to the maximum 1000. */
	ck_assert_int_eq(agile_law_advance(&law, SEC, &d, NULL),
	                 AGILE_LAW_INCREASED);
	ck_assert_int_eq(agile_law_limit(&law), 1000);

	/* Below the ceiling the withheld share shows: +20, less
	 * int(20 x 0.1 x 0.5) = 1. */
	agile_law_set_increase_rate(&o, 20);
	start(&law, &o);
	calls(&law, 1, MS, 10);
	agile_law_advance(&law, SEC, &d, NULL);
	ck_assert_int_eq(agile_law_limit(&law), 29);
}
END_TEST

/* --- the window ------------------------------------------------------------- */

START_TEST(laws_window_closes_after_exactly_one_sample_window)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;
	struct agile_law_change ch;

	agile_law_set_sample_window_ns(&o, 250 * MS);
	start(&law, &o);
	failures(&law, 1, MS);
	ck_assert(!agile_law_due(&law, 250 * MS - 1));
	ck_assert_int_eq(agile_law_advance(&law, 250 * MS - 1, NULL, NULL),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_eq(agile_law_limit(&law), 10);
	ck_assert(agile_law_due(&law, 250 * MS));
	ck_assert_int_eq(agile_law_advance(&law, 250 * MS, NULL, &ch),
	                 AGILE_LAW_DECREASED);
	ck_assert_int_eq(ch.old_limit, 10);
	ck_assert_int_eq(ch.new_limit, 5);
	/* The next window opened at 250 ms. */
	ck_assert_int_eq(law.window.start_ns, 250 * MS);
	ck_assert(!agile_law_due(&law, 499 * MS));
}
END_TEST

START_TEST(laws_one_adjustment_per_window)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 64);
	struct agile_law law;

	start(&law, &o);
	failures(&law, 50, MS);
	ck_assert_int_eq(agile_law_advance(&law, SEC, NULL, NULL),
	                 AGILE_LAW_DECREASED);
	/* Failures recorded after the close, and repeated advances at the
	 * same instant, do not run the law again in the new window. */
	failures(&law, 50, MS);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(agile_law_advance(&law, SEC + 999 * MS, NULL, NULL),
		                 AGILE_LAW_NOT_DUE);
	ck_assert_int_eq(agile_law_limit(&law), 32);
	ck_assert_int_eq(agile_law_advance(&law, 2 * SEC, NULL, NULL),
	                 AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 16);
	ck_assert_uint_eq(law.windows, 2);
}
END_TEST

START_TEST(laws_idle_spell_closes_one_window_not_a_burst)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 64);
	struct agile_law law;

	start(&law, &o);
	failures(&law, 1, MS);
	ck_assert_int_eq(agile_law_advance(&law, 60 * SEC, NULL, NULL),
	                 AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_advance(&law, 60 * SEC, NULL, NULL),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_eq(agile_law_limit(&law), 32);
	ck_assert_uint_eq(law.windows, 1);
}
END_TEST

START_TEST(laws_window_summary_is_exact)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;
	struct agile_law_change ch;

	start(&law, &o);
	ck_assert(agile_law_record(&law, true, 10 * MS, 3));
	ck_assert(agile_law_record(&law, false, 30 * MS, 7));
	ck_assert(agile_law_record(&law, true, 20 * MS, 2));
	agile_law_advance(&law, SEC, NULL, &ch);
	ck_assert_uint_eq(ch.summary.samples, 3);
	ck_assert_uint_eq(ch.summary.failures, 1);
	ck_assert_uint_eq(ch.summary.peak_in_flight, 7);
	ck_assert_double_eq(ch.summary.mean_ns, 20 * MS);
	ck_assert_int_eq(ch.summary.min_ns, 10 * MS);
	/* The next window starts empty. */
	agile_law_advance(&law, 2 * SEC, NULL, &ch);
	ck_assert_uint_eq(ch.summary.samples, 0);
	ck_assert_uint_eq(ch.summary.peak_in_flight, 0);
	ck_assert_int_eq(ch.summary.min_ns, 0);
}
END_TEST

/* A failure without a latency (a call that never reached the downstream)
 * is a sample and a failure of the window, but not a latency: the mean and
 * the minimum are the timed samples' alone. */
START_TEST(laws_failure_without_latency_counts_but_times_nothing)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;
	struct agile_law_change ch;

	start(&law, &o);
	ck_assert(agile_law_record(&law, true, 10 * MS, 3));
	ck_assert(agile_law_record_failure(&law, 9));
	ck_assert(agile_law_record(&law, true, 30 * MS, 2));
	agile_law_advance(&law, SEC, NULL, &ch);
	ck_assert_uint_eq(ch.summary.samples, 3);
	ck_assert_uint_eq(ch.summary.timed, 2);
	ck_assert_uint_eq(ch.summary.failures, 1);
	ck_assert_uint_eq(ch.summary.peak_in_flight, 9);
	ck_assert_double_eq(ch.summary.mean_ns, 20 * MS);
	ck_assert_int_eq(ch.summary.min_ns, 10 * MS);
	ck_assert_int_eq(ch.new_limit, 5);
	ck_assert_uint_eq(law.seen, 3);

	/* Only such failures: no latency at all, and AIMD still cuts. */
	ck_assert(agile_law_record_failure(&law, 1));
	ck_assert_int_eq(agile_law_advance(&law, 2 * SEC, NULL, &ch),
	                 AGILE_LAW_DECREASED);
	ck_assert_double_eq(ch.summary.mean_ns, 0);
	ck_assert_int_eq(ch.summary.min_ns, 0);
	ck_assert_int_eq(ch.new_limit, 2);

	/* The agile kind records nothing. */
	o.kind = AGILE_LAW_AGILE;
	start(&law, &o);
	ck_assert(!agile_law_record_failure(&law, 1));
	ck_assert_uint_eq(law.window.samples, 0);
}
END_TEST

START_TEST(laws_empty_window_rolls_without_running_the_law)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 10);
	struct agile_law law;

	start(&law, &o);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_EMPTY);
	/* Gradient's first window is still ahead: the average is unset. */
	ck_assert_double_eq(law.state.gradient.avg_ns, 0);
	ck_assert_uint_eq(law.adjustments, 0);
	ck_assert_uint_eq(law.windows, 1);
}
END_TEST

START_TEST(laws_skipped_samples_are_not_recorded)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;

	agile_law_set_warmup_samples(&o, 1);
	start(&law, &o);
	/* A zero (or negative) latency is skipped: no warm-up count, no
	 * failure, no peak. */
	ck_assert(!agile_law_record(&law, false, 0, 10));
	ck_assert(!agile_law_record(&law, false, -5, 10));
	ck_assert_uint_eq(law.seen, 0);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_WARMING);
	ck_assert_int_eq(agile_law_limit(&law), 10);
	/* One real sample ends warm-up; the skipped failures and their peak
	 * of 10 never reached the window, so this one holds. */
	ck_assert(!agile_law_record(&law, false, 0, 10));
	ck_assert(agile_law_record(&law, true, MS, 1));
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_HELD);
	ck_assert_int_eq(agile_law_limit(&law), 10);
}
END_TEST

START_TEST(laws_warmup_rolls_windows_until_enough_samples)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 40);
	struct agile_law law;

	agile_law_set_warmup_samples(&o, 10); /* adaptx's default */
	start(&law, &o);
	failures(&law, 4, MS);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_WARMING);
	failures(&law, 5, MS);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_WARMING);
	ck_assert_int_eq(agile_law_limit(&law), 40);
	ck_assert_uint_eq(law.seen, 9);
	/* The tenth sample lands in this window: the law runs on it. */
	failures(&law, 1, MS);
	ck_assert_int_eq(close_window(&law, 2), AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_law_limit(&law), 20);
	ck_assert_uint_eq(law.windows, 3);
	ck_assert_uint_eq(law.adjustments, 1);
}
END_TEST

START_TEST(laws_warmup_feeds_no_estimator)
{
	struct agile_law_options o = plain(AGILE_LAW_GRADIENT, 10);
	struct agile_law law;

	agile_law_set_warmup_samples(&o, 3);
	start(&law, &o);
	calls(&law, 2, 900 * MS, 1);
	ck_assert_int_eq(close_window(&law, 0), AGILE_LAW_WARMING);
	ck_assert_double_eq(law.state.gradient.avg_ns, 0);
	/* First window the law runs on: seeds the average and holds. */
	calls(&law, 1, 100 * MS, 1);
	ck_assert_int_eq(close_window(&law, 1), AGILE_LAW_HELD);
	ck_assert_double_eq(law.state.gradient.avg_ns, 100 * MS);
}
END_TEST

START_TEST(laws_reset_returns_to_the_initial_limit)
{
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10);
	struct agile_law law;

	agile_law_set_increase_rate(&o, 0.5);
	agile_law_set_warmup_samples(&o, 2);
	start(&law, &o);
	/* Credit 0.5 a window: 10, 11, 11, 12, 12, leaving half a step. */
	for (int w = 0; w < 5; w++) {
		calls(&law, 2, MS, 100);
		close_window(&law, w);
	}
	ck_assert_int_eq(agile_law_limit(&law), 12);
	ck_assert_double_eq(law.state.aimd.credit, 0.5);
	calls(&law, 1, MS, 100); /* an open window and a half credit */
	agile_law_reset(&law, 10 * SEC, 3);
	ck_assert_int_eq(agile_law_limit(&law), 10);
	ck_assert_uint_eq(law.seen, 0);
	ck_assert_uint_eq(law.windows, 0);
	ck_assert_uint_eq(law.increases, 0);
	ck_assert_double_eq(law.state.aimd.credit, 0);
	ck_assert_uint_eq(law.window.samples, 0);
	ck_assert_int_eq(law.window.start_ns, 10 * SEC);
	/* More in flight than the initial limit: the limit is raised to it. */
	agile_law_reset(&law, 11 * SEC, 25);
	ck_assert_int_eq(agile_law_limit(&law), 25);
}
END_TEST

START_TEST(laws_agile_kind_is_inert)
{
	struct agile_law_options o = plain(AGILE_LAW_AGILE, 10);
	struct agile_law law;

	start(&law, &o);
	ck_assert_int_eq(law.config.kind, AGILE_LAW_AGILE);
	ck_assert(!agile_law_record(&law, false, MS, 10));
	ck_assert(!agile_law_due(&law, 100 * SEC));
	ck_assert_int_eq(agile_law_advance(&law, 100 * SEC, NULL, NULL),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_eq(agile_law_limit(&law), 10);
}
END_TEST

/* A longer AIMD run on the virtual clock: saturated windows grow the limit
 * by one each, a failure halves it, idle windows hold. */
START_TEST(laws_aimd_story_on_a_virtual_clock)
{
	struct agile_law_options o;
	struct agile_law law;
	int64_t now = 0;
	int64_t expect[] = {10, 11, 12, 13, 14, 7, 7, 8};

	agile_law_options_init(&o); /* defaults: warm-up 10, jitter 0.1 */
	agile_law_init(&law, &o, now);
	for (int w = 0; w < 8; w++) {
		uint64_t in_flight = agile_law_limit(&law); /* saturated */
		int n = w == 0 ? 5 : 20;

		if (w == 6)
			in_flight = 1; /* idle window */
		for (int i = 0; i < n; i++) {
			now += 40 * MS;
			agile_law_record(&law, !(w == 5 && i == 3), 35 * MS,
			                 in_flight);
		}
		/* Steps of 1 are never withheld, whatever the draws. */
		struct agile_law_draw d = {.amount = 0.99, .coin = 0};
		now = (int64_t)(w + 1) * SEC;
		agile_law_advance(&law, now, &d, NULL);
		ck_assert_int_eq(agile_law_limit(&law), expect[w]);
	}
}
END_TEST

Suite *laws_suite(void)
{
	Suite *s = suite_create("laws");
	TCase *options = tcase_create("options");
	TCase *aimd = tcase_create("aimd");
	TCase *vegas = tcase_create("vegas");
	TCase *gradient = tcase_create("gradient");
	TCase *jitter = tcase_create("jitter");
	TCase *window = tcase_create("window");

	tcase_add_test(options, laws_defaults_are_adaptx_defaults);
	tcase_add_test(options, laws_parse_accepts_the_four_names);
	tcase_add_test(options, laws_setters_ignore_out_of_range_values);
	tcase_add_test(options, laws_resolve_enforces_the_cross_field_rules);
	tcase_add_test(options, laws_unknown_kind_behaves_as_aimd);
	suite_add_tcase(s, options);

	tcase_add_test(aimd, laws_aimd_failures_in_a_window_cut_once);
	tcase_add_test(aimd, laws_aimd_decrease_truncates_toward_zero);
	tcase_add_test(aimd, laws_aimd_grows_only_past_the_utilisation_gate);
	tcase_add_test(aimd, laws_aimd_fractional_rate_keeps_its_remainder);
	tcase_add_test(aimd, laws_aimd_never_leaves_its_bounds);
	tcase_add_test(aimd, laws_aimd_story_on_a_virtual_clock);
	suite_add_tcase(s, aimd);

	tcase_add_test(vegas, laws_vegas_grows_while_the_queue_is_below_alpha);
	tcase_add_test(vegas, laws_vegas_holds_inside_the_band_and_backs_off_above_it);
	tcase_add_test(vegas, laws_vegas_band_unscaled_when_target_is_below_rtt_min);
	tcase_add_test(vegas, laws_vegas_rtt_min_decays_toward_the_average);
	tcase_add_test(vegas, laws_vegas_ignores_failures);
	suite_add_tcase(s, vegas);

	tcase_add_test(gradient, laws_gradient_first_window_seeds_the_average_and_holds);
	tcase_add_test(gradient, laws_gradient_steps_and_proportional_backoff);
	tcase_add_test(gradient, laws_gradient_tolerance_edge_is_a_unit_step);
	tcase_add_test(gradient, laws_gradient_failures_cut_once);
	suite_add_tcase(s, gradient);

	tcase_add_test(jitter, laws_jitter_withholds_a_share_on_heads);
	tcase_add_test(jitter, laws_jitter_applies_before_the_clamp);
	suite_add_tcase(s, jitter);

	tcase_add_test(window, laws_window_closes_after_exactly_one_sample_window);
	tcase_add_test(window, laws_one_adjustment_per_window);
	tcase_add_test(window, laws_idle_spell_closes_one_window_not_a_burst);
	tcase_add_test(window, laws_window_summary_is_exact);
	tcase_add_test(window, laws_failure_without_latency_counts_but_times_nothing);
	tcase_add_test(window, laws_empty_window_rolls_without_running_the_law);
	tcase_add_test(window, laws_skipped_samples_are_not_recorded);
	tcase_add_test(window, laws_warmup_rolls_windows_until_enough_samples);
	tcase_add_test(window, laws_warmup_feeds_no_estimator);
	tcase_add_test(window, laws_reset_returns_to_the_initial_limit);
	tcase_add_test(window, laws_agile_kind_is_inert);
	suite_add_tcase(s, window);
	return s;
}
