/*
 * config.c - turn the configuration a user wrote into the one a limiter runs
 * with, and explain every change made on the way (format.c prints the
 * result).
 *
 * agile_resolve() and agile_config_validate() are one walk over the config
 * (resolve_into below): the walk fills a struct agile_resolved and, when it is
 * given a report, writes one problem for each repair it makes.  Keeping a
 * single walk is what guarantees that validate reports exactly the repairs
 * resolve performs, no more and no fewer.
 *
 * The walk runs in four passes, and the order matters:
 *
 *  1. Unusable values (negative, NaN, infinite, out-of-range enumerations,
 *     fractions past their bound) are turned back into 0, "unset".
 *  2. Rate bounds: min_rate falls back to its default, floor_rate and
 *     probe_rate inherit it, then they are clamped against max_rate and each
 *     other, and initial_rate is derived or clamped into [floor, max].
 *  3. The preset fills the policy fields still at 0, the SLO anchor degrades
 *     to the baseline one when there is no SLO, the tick hysteresis takes
 *     the default of the anchor in force, and rules_off turns off the
 *     rules it names, whatever the preset gave them.
 *  4. Every field still at 0 takes its AGILE_DEFAULT_* value.
 *
 * Passes 1 and 2 and the walk are this file's; passes 3 and 4, the preset
 * table and the defaults, are config_presets.c's, and the names of presets
 * and anchors, with the matching of every keyword libagile parses, are
 * config_names.c's.
 *
 * Everything here is pure: no clock, no allocation, no I/O.  Text goes into
 * caller buffers with snprintf semantics.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agile.h"
#include "config_internal.h"
#include "internal.h"

#define STRINGIFY_(token) #token
#define STRINGIFY(token) STRINGIFY_(token)

/*
 * Each *_field helper takes one value as written and returns it, or 0 when it
 * cannot be used; `unset` completes the sentence "it would be treated as
 * unset: ..." so the message says what happens instead.
 */
static int64_t count_field(struct report *rep, const char *field, int64_t value,
                           const char *unset)
{
	if (value >= 0)
		return value;
	problem(rep, field,
	        "%s (%" PRId64 ") must not be negative; it would be treated as "
	        "unset: %s.", field, value, unset);
	return 0;
}

static int ticks_field(struct report *rep, const char *field, int value)
{
	if (value >= 0)
		return value;
	problem(rep, field,
	        "%s (%d) must not be negative; it would be treated as unset: "
	        "the preset or the anchor in force decides.", field, value);
	return 0;
}

static double real_field(struct report *rep, const char *field, double value,
                         const char *unset)
{
	char shown[SHORT_TEXT];

	if (isfinite(value) && value >= 0)
		return value;
	agile__format_number(shown, value);
	if (isfinite(value))
		problem(rep, field,
		        "%s (%s) must not be negative; it would be treated as "
		        "unset: %s.", field, shown, unset);
	else
		problem(rep, field,
		        "%s (%s) is not a finite number; it would be treated as "
		        "unset: %s.", field, shown, unset);
	return 0;
}

/*
 * A per-tick step must stay below the whole rate.  Returns `step` when it
 * does; otherwise reports why (`why`) and returns 0, so the default
 * (`fallback`) is filled in later.
 */
static double step_below_one(struct report *rep, const char *field,
                             double step, double fallback, const char *why)
{
	char shown[SHORT_TEXT], fallback_text[SHORT_TEXT];

	if (step < 1)
		return step;
	agile__format_number(shown, step);
	agile__format_number(fallback_text, fallback);
	problem(rep, field, "%s (%s) must be below 1: %s; it would be reset to %s.",
	        field, shown, why, fallback_text);
	return 0;
}

/* "the default of 0.05 applies" and friends, for real_field's `unset`. */
struct default_text {
	char text[SHORT_TEXT + 32];
};

static struct default_text default_real(double value)
{
	struct default_text d;
	char shown[SHORT_TEXT];

	agile__format_number(shown, value);
	snprintf(d.text, sizeof d.text, "the default of %s applies", shown);
	return d;
}

static struct default_text default_duration(int64_t ns)
{
	struct default_text d;
	char shown[SHORT_TEXT];

	agile__format_duration(shown, ns);
	snprintf(d.text, sizeof d.text, "the default of %s applies", shown);
	return d;
}

/* The tick as written: negative is unset; outside [AGILE_TICK_MIN_NS,
 * AGILE_TICK_MAX_NS] it is reported and brought to the nearer bound, as
 * the user clearly wanted it short (long). */
static int64_t tick_field(struct report *rep, int64_t value)
{
	char shown[SHORT_TEXT], lowest[SHORT_TEXT], highest[SHORT_TEXT];
	int64_t tick = count_field(rep, "tick_ns", value,
	                           default_duration(AGILE_DEFAULT_TICK_NS).text);

	if (tick == 0 ||
	    (tick >= AGILE_TICK_MIN_NS && tick <= AGILE_TICK_MAX_NS))
		return tick;
	agile__format_duration(shown, tick);
	agile__format_duration(lowest, AGILE_TICK_MIN_NS);
	agile__format_duration(highest, AGILE_TICK_MAX_NS);
	problem(rep, "tick_ns",
	        "tick_ns (%s) must be from %s to %s: every gain is per tick, "
	        "so a shorter tick moves the rate faster than its answers "
	        "come back, and a longer one leaves a slowdown unanswered; it "
	        "would be %s to %s.", shown, lowest, highest,
	        tick < AGILE_TICK_MIN_NS ? "raised" : "lowered",
	        tick < AGILE_TICK_MIN_NS ? lowest : highest);
	return tick < AGILE_TICK_MIN_NS ? AGILE_TICK_MIN_NS : AGILE_TICK_MAX_NS;
}

/* How a bound came to have its value, for the clamp messages. */
static void describe_rate(char out[SHORT_TEXT + 32], double value,
                          double written, double min_written)
{
	char shown[SHORT_TEXT];

	agile__format_number(shown, value);
	if (written > 0)
		snprintf(out, SHORT_TEXT + 32, "%s", shown);
	else if (min_written > 0)
		snprintf(out, SHORT_TEXT + 32, "%s, inherited from min_rate",
		         shown);
	else
		snprintf(out, SHORT_TEXT + 32, "%s, the default", shown);
}

/*
 * A rate bound as written: negative, not finite or set below AGILE_MIN_RATE
 * is reported.  Returns the value to use, 0 for unset; a bound below the
 * slowest rate is raised to it rather than dropped, as the user clearly
 * wanted it slow.
 */
static double rate_field(struct report *rep, const char *field, double value,
                         const char *unset)
{
	char shown[SHORT_TEXT], lowest[SHORT_TEXT];

	agile__format_number(shown, value);
	if (!isfinite(value)) {
		problem(rep, field, "%s (%s) is not a finite number; it would be "
		        "treated as unset: %s.", field, shown, unset);
		return 0;
	}
	if (value < 0) {
		problem(rep, field, "%s (%s) must not be negative; it would be "
		        "treated as unset: %s.", field, shown, unset);
		return 0;
	}
	if (value > 0 && value < AGILE_MIN_RATE) {
		agile__format_number(lowest, AGILE_MIN_RATE);
		problem(rep, field, "%s (%s) is below one request per hour, the "
		        "slowest rate a limiter takes; it would be raised to %s.",
		        field, shown, lowest);
		return AGILE_MIN_RATE;
	}
	return value;
}

/* max/8 rounded down: a function of its own, as resolve_rates' `floor`
 * hides floor(). */
static double rate_eighth(double max)
{
	return floor(max / 8);
}

/* Pass 2: the rate bounds.  `max_ok` is false when max_rate is unusable; the
 * comparisons against it are then skipped, as there is nothing to compare. */
static void resolve_rates(const struct agile_config *c, bool max_ok,
                          struct agile_resolved *r, struct report *rep)
{
	double max = max_ok ? rate_field(rep, "max_rate", c->max_rate, "")
	                    : c->max_rate;
	double min_w = rate_field(rep, "min_rate", c->min_rate,
	                          "the default of "
	                          STRINGIFY(AGILE_DEFAULT_MIN_RATE) " applies");
	double floor_w = rate_field(rep, "floor_rate", c->floor_rate,
	                            "it inherits min_rate");
	double probe_w = rate_field(rep, "probe_rate", c->probe_rate,
	                            "it inherits min_rate");
	double initial_w = rate_field(rep, "initial_rate", c->initial_rate,
	                              "it is derived as max_rate/8");
	double min = min_w > 0 ? min_w : AGILE_DEFAULT_MIN_RATE;
	double floor, probe, initial;
	char shown[SHORT_TEXT], bound[SHORT_TEXT];

	/* The default floor of 1 is "1, or the ceiling when that is lower":
	 * max_rate=0.5 alone is a complete configuration. */
	if (max_ok && min_w == 0 && min > max)
		min = max;
	if (max_ok && min > max) {
		agile__format_number(shown, min);
		agile__format_number(bound, max);
		problem(rep, "min_rate",
		        "min_rate (%s) is above max_rate (%s); it would be clamped "
		        "to %s.", shown, bound, bound);
		min = max;
	}

	/* An inherited floor was already clamped with min_rate above. */
	floor = floor_w > 0 ? floor_w : min;
	if (max_ok && floor > max) {
		agile__format_number(shown, floor);
		agile__format_number(bound, max);
		problem(rep, "floor_rate",
		        "floor_rate (%s) is above max_rate (%s); it would be "
		        "clamped to %s.", shown, bound, bound);
		floor = max;
	}

	/* Checking probe against the floor also covers probe above max_rate,
	 * since the floor is at most max_rate by now. */
	probe = probe_w > 0 ? probe_w : min;
	if (probe > floor) {
		char probe_text[SHORT_TEXT + 32], floor_text[SHORT_TEXT + 32];

		describe_rate(probe_text, probe, probe_w, min_w);
		describe_rate(floor_text, floor, floor_w, min_w);
		agile__format_number(bound, floor);
		problem(rep, "probe_rate",
		        "probe_rate (%s) is above floor_rate (%s); the outage floor "
		        "must not exceed the operating floor, so it would be lowered "
		        "to %s.", probe_text, floor_text, bound);
		probe = floor;
	}

	if (initial_w == 0) {
		/* Guessing high costs a couple of fast backoff ticks, guessing low
		 * a long additive climb, hence max/8 rather than the floor.
		 * Rounded down, as it was when rates were whole numbers. */
		initial = max_ok ? rate_eighth(max) : 0;
		if (initial < floor)
			initial = floor;
	} else if (max_ok && initial_w > max) {
		agile__format_number(shown, initial_w);
		agile__format_number(bound, max);
		problem(rep, "initial_rate",
		        "initial_rate (%s) is above max_rate (%s); it would be "
		        "clamped to %s.", shown, bound, bound);
		initial = max;
	} else if (initial_w < floor) {
		agile__format_number(shown, initial_w);
		agile__format_number(bound, floor);
		problem(rep, "initial_rate",
		        "initial_rate (%s) is below floor_rate (%s); it would be "
		        "raised to %s.", shown, bound, bound);
		initial = floor;
	} else {
		initial = initial_w;
	}

	r->max_rate = max;
	r->min_rate = min;
	r->floor_rate = floor;
	r->probe_rate = probe;
	r->initial_rate = initial;
}

/* Pass 1 of resolve_into for the enumerations and the SLO, which the
 * others need: the preset and the anchor as they will run (an unknown one
 * reported and replaced), and the SLO in *slo. */
static void resolve_enums(const struct agile_config *c,
                          struct agile_resolved *r, struct report *rep,
                          enum agile_preset *preset_out,
                          enum agile_anchor *anchor_out, int64_t *slo)
{
	enum agile_preset preset = c->preset;
	enum agile_anchor anchor = c->anchor;
	bool max_ok = c->max_rate > 0 && isfinite(c->max_rate);

	if ((unsigned)preset >= AGILE_PRESET_COUNT) {
		problem(rep, "preset",
		        "preset (%d) is not a known preset; it would run as none.",
		        (int)preset);
		preset = AGILE_PRESET_NONE;
	}
	if (!max_ok) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, c->max_rate);
		problem(rep, "max_rate",
		        "max_rate (%s) must be %sgreater than 0: it is the "
		        "ceiling you promise the downstream, and nothing can run "
		        "without it.", shown,
		        isfinite(c->max_rate) ? "" : "a finite number ");
	}
	resolve_rates(c, max_ok, r, rep);
	*slo = count_field(rep, "slo_ns", c->slo_ns,
	                   "there is no SLO and the tail guard is off");
	/* The law is not resolved (a concurrency limiter reads it as written)
	 * but an unknown one is reported: both limiters refuse it. */
	if ((unsigned)c->law >= AGILE_LAW_COUNT)
		problem(rep, "law",
		        "law (%d) is not a known law (agile, aimd, vegas or "
		        "gradient); the limiter would refuse to start.",
		        (int)c->law);
	if ((unsigned)anchor >= ANCHOR_COUNT) {
		problem(rep, "anchor",
		        "anchor (%d) is not a known anchor; the preset would choose "
		        "one.", (int)anchor);
		anchor = AGILE_ANCHOR_UNSET;
	}
	*preset_out = preset;
	*anchor_out = anchor;
}

/* Pass 1 for the rest, in the order of struct agile_config: the tail
 * guard, the tick counts, the half-lives and the tick. */
static void resolve_guard(const struct agile_config *c,
                          struct agile_resolved *r, struct report *rep)
{
	r->tail_factor = real_field(rep, "tail_factor", c->tail_factor,
	                            default_real(AGILE_DEFAULT_TAIL_FACTOR).text);
	r->tail_tolerance = real_field(rep, "tail_tolerance", c->tail_tolerance,
	                               "the preset decides");
	if (r->tail_tolerance >= 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->tail_tolerance);
		problem(rep, "tail_tolerance",
		        "tail_tolerance (%s) must be below 1: no share of a tick can "
		        "exceed all of it, so the guard would never fire; the preset "
		        "would decide instead.", shown);
		r->tail_tolerance = 0;
	}
	r->backoff_ticks = ticks_field(rep, "backoff_ticks", c->backoff_ticks);
	r->recover_ticks = ticks_field(rep, "recover_ticks", c->recover_ticks);
	r->slow_half_life_ns = count_field(
		rep, "slow_half_life_ns", c->slow_half_life_ns,
		default_duration(AGILE_DEFAULT_SLOW_HALF_LIFE_NS).text);
	r->slow_down_half_life_ns = count_field(
		rep, "slow_down_half_life_ns", c->slow_down_half_life_ns,
		default_duration(AGILE_DEFAULT_SLOW_DOWN_HALF_LIFE_NS).text);
	r->max_baseline_rise = real_field(
		rep, "max_baseline_rise", c->max_baseline_rise,
		default_real(AGILE_DEFAULT_MAX_BASELINE_RISE).text);
	r->tick_ns = tick_field(rep, c->tick_ns);
	r->target_inflation = real_field(rep, "target_inflation",
	                                 c->target_inflation, "the preset decides");
}

/* Pass 1, continued: the steps, the gains and the deadband. */
static void resolve_steps(const struct agile_config *c,
                          struct agile_resolved *r, struct report *rep)
{
	r->up_step = real_field(rep, "up_step", c->up_step,
	                        default_real(AGILE_DEFAULT_UP_STEP).text);
	r->up_step = step_below_one(
		rep, "up_step", r->up_step, AGILE_DEFAULT_UP_STEP,
		"an additive step of the whole rate or more is a doubling, "
		"which is slow_start_gain's job");
	r->down_step = real_field(rep, "down_step", c->down_step,
	                          default_real(AGILE_DEFAULT_DOWN_STEP).text);
	r->down_step = step_below_one(
		rep, "down_step", r->down_step, AGILE_DEFAULT_DOWN_STEP,
		"a step of the whole rate would cut it to nothing in one tick");
	r->gain = real_field(rep, "gain", c->gain,
	                     default_real(AGILE_DEFAULT_GAIN).text);
	r->slow_start_gain = real_field(
		rep, "slow_start_gain", c->slow_start_gain,
		default_real(AGILE_DEFAULT_SLOW_START_GAIN).text);
	if (r->slow_start_gain > 0 && r->slow_start_gain < 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->slow_start_gain);
		problem(rep, "slow_start_gain",
		        "slow_start_gain (%s) must be at least 1: below 1 the cold "
		        "start would shrink the rate while latency is healthy; it "
		        "would be raised to 1, pure additive increase.", shown);
		r->slow_start_gain = 1;
	}
	r->deadband = real_field(rep, "deadband", c->deadband,
	                         default_real(AGILE_DEFAULT_DEADBAND).text);
	if (r->deadband >= 1) {
		char shown[SHORT_TEXT], fallback[SHORT_TEXT];

		agile__format_number(shown, r->deadband);
		agile__format_number(fallback, AGILE_DEFAULT_DEADBAND);
		problem(rep, "deadband",
		        "deadband (%s) must be in [0, 1): a hold band as wide as "
		        "the whole window leaves no latency low enough to count as "
		        "healthy, so the rate could never rise; it would be reset "
		        "to %s.", shown, fallback);
		r->deadband = 0;
	}
}

/* Pass 1, continued: the recover ramp and the matrix rules. */
static void resolve_rules(const struct agile_config *c,
                          struct agile_resolved *r, struct report *rep)
{
	r->recover_ramp = real_field(rep, "recover_ramp", c->recover_ramp,
	                             "the recover ramp stays off");
	r->delivered_share = real_field(rep, "delivered_share",
	                                c->delivered_share, "the preset decides");
	if (r->delivered_share > 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->delivered_share);
		problem(rep, "delivered_share",
		        "delivered_share (%s) must be at most 1: a cut to more than "
		        "the downstream delivered keeps the queue growing; the "
		        "preset would decide instead.", shown);
		r->delivered_share = 0;
	}
	r->knee_ramp = real_field(rep, "knee_ramp", c->knee_ramp,
	                          "the preset decides");
	if (r->knee_ramp > 0 && r->knee_ramp < 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->knee_ramp);
		problem(rep, "knee_ramp",
		        "knee_ramp (%s) must be at least 1: below 1 the climb back "
		        "to the knee would shrink the rate; it would be raised to "
		        "1, which turns the ramp off.", shown);
		r->knee_ramp = 1;
	}
	r->probe_acceleration = real_field(rep, "probe_acceleration",
	                                   c->probe_acceleration,
	                                   "the preset decides");
	if (r->probe_acceleration > 0 && r->probe_acceleration < 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->probe_acceleration);
		problem(rep, "probe_acceleration",
		        "probe_acceleration (%s) must be at least 1: below 1 each "
		        "increase in a row would be smaller than the last; it "
		        "would be raised to 1, plain additive increase.", shown);
		r->probe_acceleration = 1;
	}
	r->goodput_cut = real_field(rep, "goodput_cut", c->goodput_cut,
	                            "the preset decides");
	if (r->goodput_cut > 1) {
		char shown[SHORT_TEXT];

		agile__format_number(shown, r->goodput_cut);
		problem(rep, "goodput_cut",
		        "goodput_cut (%s) must be at most 1: above it the cut could "
		        "keep more than the answers that met the target; the "
		        "preset would decide instead.", shown);
		r->goodput_cut = 0;
	}
}

/*
 * The whole walk.  `r` receives a complete resolved config even when
 * max_rate is unusable (resolve then discards it); `rep` may be NULL.
 */
static void resolve_into(const struct agile_config *c, enum agile_kind kind,
                         struct agile_resolved *r, struct report *rep)
{
	enum agile_preset preset;
	enum agile_anchor anchor;
	int64_t slo;

	memset(r, 0, sizeof *r);
	r->kind = (uint32_t)kind;
	resolve_enums(c, r, rep, &preset, &anchor, &slo);
	resolve_guard(c, r, rep);
	resolve_steps(c, r, rep);
	resolve_rules(c, r, rep);
	anchor = agile__apply_preset(r, rep, preset, anchor, slo);
	agile__apply_rules_off(c, r, rep);
	agile__apply_defaults(r);
	r->preset = (uint32_t)preset;
	r->anchor = (uint32_t)anchor;
	r->slo_ns = slo;
}

size_t agile_config_validate(const struct agile_config *config,
                             struct agile_problem *out, size_t cap)
{
	static const struct agile_config empty;
	struct report rep = { .out = out, .cap = out != NULL ? cap : 0 };
	struct agile_resolved scratch;

	/* A missing config is the zero config: only max_rate is wrong in it. */
	resolve_into(config != NULL ? config : &empty, AGILE_KIND_RATE, &scratch,
	             &rep);
	return rep.count;
}

int agile_resolve(const struct agile_config *config, enum agile_kind kind,
                  struct agile_resolved *out)
{
	struct agile_resolved r;

	if (config == NULL || out == NULL || !(config->max_rate > 0) ||
	    !isfinite(config->max_rate))
		return -EINVAL;
	if (kind != AGILE_KIND_RATE && kind != AGILE_KIND_CONCURRENCY)
		return -EINVAL;
	resolve_into(config, kind, &r, NULL);
	*out = r;
	return 0;
}
