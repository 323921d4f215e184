/*
 * validate.c - the check of a limiter's body (agile_rate_validate and its
 * parts): is this state one the core itself could have written for a given
 * resolved configuration?
 *
 * A limiter's state can live in a file other processes write: a bug, an
 * older build, a hostile program of the same user.  The core is total on any
 * bit pattern (it saturates, clamps and never divides by zero), so garbage
 * cannot crash it, but it runs as garbage: a spacing below the ceiling's
 * breaks the promise until something rewrites it, a grant planned a century
 * ahead stalls every caller, a NaN rate sits at the floor.  A caller that did
 * not write the state itself checks it here before trusting it and
 * re-initialises what fails (the preload does: src/common/state.c).
 *
 * The checks are exact where the core's own arithmetic decides (the
 * ceiling's spacing, the configuration byte for byte, flags and enumerations)
 * and generous where other processes' clocks and queues come in (how far
 * ahead a grant or a tick may be planned), so that no state the core can
 * reach fails: a false alarm would reset a healthy limiter.  Every field is
 * read atomically, as the hot path and the tick winner write them.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agile.h"
#include "atomics.h"
#include "internal.h"

/* Write the problem (when asked for) and return -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
reject(struct agile_problem *why, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL)
		return -EINVAL;
	snprintf(why->field, sizeof(why->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(why->message, sizeof(why->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A double field within [lo, hi]; the negated test also rejects NaN.
 * Returns 0 or reject()'s -EINVAL. */
static int real_within(struct agile_problem *why, const char *field, double v,
                       double lo, double hi)
{
	char shown[AGILE__NUMBER_TEXT], low[AGILE__NUMBER_TEXT];
	char high[AGILE__NUMBER_TEXT];

	if (v >= lo && v <= hi)
		return 0;
	agile__format_number(shown, v);
	agile__format_number(low, lo);
	if (hi >= 0x1p1023)
		return reject(why, field, "%s (%s) must be a finite number of "
		              "at least %s.", field, shown, low);
	agile__format_number(high, hi);
	return reject(why, field, "%s (%s) must be a number in [%s, %s].",
	              field, shown, low, high);
}

/* A flag that only ever holds 0 or 1. */
static int flag(struct agile_problem *why, const char *field, uint32_t v)
{
	if (v <= 1)
		return 0;
	return reject(why, field, "%s (%" PRIu32 ") must be 0 or 1.", field, v);
}

/* A count of ticks in a row, which saturates and never goes below 0. */
static int count(struct agile_problem *why, const char *field, int32_t v)
{
	if (v >= 0)
		return 0;
	return reject(why, field, "%s (%" PRId32 ") must not be negative.",
	              field, v);
}

/* Any finite double up to this is accepted where no tighter bound holds. */
#define FINITE_MAX 0x1.fffffffffffffp1023

void agile_bucket_bounds(const struct agile_resolved *r,
                         struct agile_bucket_bounds *out)
{
	out->max_rate = r->max_rate;
	out->min_interval_ns = 0;
	out->max_interval_ns = 0;
	if (!(r->max_rate > 0) || !isfinite(r->max_rate))
		return; /* agile_bucket_check rejects it by max_rate */
	out->min_interval_ns = agile__bucket_min_interval(r->max_rate);
	/* The controller never runs below probe_rate, so no spacing it asks
	 * for is longer than probe_rate's. */
	out->max_interval_ns = agile__bucket_interval(
		r->probe_rate > 0 ? r->probe_rate : 0, out->min_interval_ns);
}

int agile_bucket_check(const struct agile_bucket *b,
                       const struct agile_bucket_bounds *bounds,
                       int64_t now_ns, struct agile_problem *why)
{
	int64_t min_interval_ns = agile__load_i64(&b->min_interval_ns);
	int64_t interval_ns = agile__load_i64(&b->interval_ns);
	int64_t last_ns = agile__load_i64(&b->last_ns);
	int64_t ceiling_ns = bounds->min_interval_ns;
	int64_t slowest_ns = bounds->max_interval_ns;
	char max[AGILE__NUMBER_TEXT];

	/* The ceiling is written out only for a message: this check runs
	 * before every grant the preload makes, and formatting a double
	 * costs some 2,500 instructions. */
	if (!(bounds->max_rate > 0) || !isfinite(bounds->max_rate)) {
		agile__format_number(max, bounds->max_rate);
		return reject(why, "max_rate", "max_rate (%s) must be "
		              "above 0: without it there is no ceiling to "
		              "check the bucket against.", max);
	}
	if (min_interval_ns != ceiling_ns) {
		agile__format_number(max, bounds->max_rate);
		return reject(why, "bucket.min_interval_ns",
		              "bucket.min_interval_ns (%" PRId64 ") must be %"
		              PRId64 " ns, the spacing of max_rate %s.",
		              min_interval_ns, ceiling_ns, max);
	}
	if (interval_ns < ceiling_ns || interval_ns > slowest_ns)
		return reject(why, "bucket.interval_ns",
		              "bucket.interval_ns (%" PRId64 ") must be within "
		              "[%" PRId64 ", %" PRId64 "] ns, the spacings of "
		              "max_rate and probe_rate.", interval_ns,
		              ceiling_ns, slowest_ns);
	if (last_ns < AGILE__NEVER_NS)
		return reject(why, "bucket.last_ns",
		              "bucket.last_ns (%" PRId64 ") is before the time "
		              "a fresh bucket starts from (%" PRId64 ").",
		              last_ns, AGILE__NEVER_NS);
	if (last_ns > agile__add_sat(now_ns, AGILE_BUCKET_MAX_AHEAD_NS))
		return reject(why, "bucket.last_ns",
		              "bucket.last_ns (%" PRId64 ") plans a grant more "
		              "than %" PRId64 " s after now (%" PRId64 ").",
		              last_ns, AGILE_BUCKET_MAX_AHEAD_NS / AGILE_NS_PER_S,
		              now_ns);
	return 0;
}

int agile_bucket_validate(const struct agile_bucket *b,
                          const struct agile_resolved *r, int64_t now_ns,
                          struct agile_problem *why)
{
	struct agile_bucket_bounds bounds;

	agile_bucket_bounds(r, &bounds);
	return agile_bucket_check(b, &bounds, now_ns, why);
}

/* The delivered-rate rules' state, which stays 0 while they are off. */
static int delivered_rules_off(const struct agile_controller *c,
                               struct agile_problem *why)
{
	static const char off[] = "must stay 0 while the delivered-rate rules "
	                          "are off (delivered_share 0, or a "
	                          "concurrency limiter)";
	const struct {
		const char *field;
		double value;
	} reals[] = {
		{ "controller.delivered", agile__load_double(&c->delivered) },
		{ "controller.knee_rate", agile__load_double(&c->knee_rate) },
		{ "controller.peak_knee", agile__load_double(&c->peak_knee) },
		{ "controller.answer_ratio",
		  agile__load_double(&c->answer_ratio) },
		{ "controller.span_grants", agile__load_double(&c->span_grants) },
		{ "controller.span_answers",
		  agile__load_double(&c->span_answers) },
		{ "controller.span_s", agile__load_double(&c->span_s) },
		{ "controller.paired_grants",
		  agile__load_double(&c->paired_grants) },
		{ "controller.paired_answers",
		  agile__load_double(&c->paired_answers) },
	};
	const struct {
		const char *field;
		int64_t value;
	} words[] = {
		{ "controller.paired", agile__load_u32(&c->paired) },
		{ "controller.span_split", agile__load_u32(&c->span_split) },
		{ "controller.cut_from_used",
		  agile__load_u32(&c->cut_from_used) },
		{ "controller.cut_ended_cold",
		  agile__load_u32(&c->cut_ended_cold) },
		{ "controller.slo_broke", agile__load_u32(&c->slo_broke) },
		{ "controller.backlog_ms", agile__load_u32(&c->backlog_ms) },
		{ "controller.increase_streak",
		  agile__load_i32(&c->increase_streak) },
	};

	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		char shown[AGILE__NUMBER_TEXT];

		if (reals[i].value == 0)
			continue;
		agile__format_number(shown, reals[i].value);
		return reject(why, reals[i].field, "%s (%s) %s.", reals[i].field,
		              shown, off);
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i].value != 0)
			return reject(why, words[i].field, "%s (%" PRId64 ") %s.",
			              words[i].field, words[i].value, off);
	return 0;
}

int agile_controller_validate(const struct agile_controller *c,
                              const struct agile_resolved *r,
                              struct agile_problem *why)
{
	/*
	 * The rate is checked for what every step needs of it, not against
	 * [probe_rate, max_rate]: the next step clamps it into those bounds
	 * anyway, the bucket holds the ceiling whatever the controller says,
	 * and fleet=adaptive mirrors a fleet's controller, whose ceiling is
	 * the fleet's, into a host's limiter.  Latencies are counts of
	 * nanoseconds, so they fit in [0, 2^63]; shares of a tick in [0, 1].
	 * The rate's own floor is 1 unless the limiter is configured below
	 * 1/s, where it is the slowest rate any limiter takes.
	 */
	const double lowest_rate = r->probe_rate < 1 ? AGILE_MIN_RATE : 1;
	const struct {
		const char *field;
		double value, lo, hi;
	} reals[] = {
		{ "controller.rate", agile__load_double(&c->rate), lowest_rate,
		  FINITE_MAX },
		{ "controller.baseline_ns", agile__load_double(&c->baseline_ns),
		  0, 0x1p63 },
		{ "controller.fast_ns", agile__load_double(&c->fast_ns), 0,
		  0x1p63 },
		{ "controller.p50_ns", agile__load_double(&c->p50_ns), 0, 0x1p63 },
		{ "controller.p99_ns", agile__load_double(&c->p99_ns), 0, 0x1p63 },
		{ "controller.tail_ratio", agile__load_double(&c->tail_ratio), 0,
		  1 },
		{ "controller.tail_threshold",
		  agile__load_double(&c->tail_threshold), 0, FINITE_MAX },
		{ "controller.tail_series_share",
		  agile__load_double(&c->tail_series_share), 0, 1 },
		{ "controller.tail_series_load",
		  agile__load_double(&c->tail_series_load), 0, FINITE_MAX },
		{ "controller.tail_own", agile__load_double(&c->tail_own), 0, 1 },
		{ "controller.last_step", agile__load_double(&c->last_step), 0,
		  FINITE_MAX },
		{ "controller.fastest_ns", agile__load_double(&c->fastest_ns), 0,
		  0x1p63 },
		{ "controller.used", agile__load_double(&c->used), 0, FINITE_MAX },
		{ "controller.delivered", agile__load_double(&c->delivered), 0,
		  FINITE_MAX },
		{ "controller.knee_rate", agile__load_double(&c->knee_rate), 0,
		  FINITE_MAX },
		{ "controller.peak_knee", agile__load_double(&c->peak_knee), 0,
		  FINITE_MAX },
		{ "controller.answer_ratio", agile__load_double(&c->answer_ratio),
		  0, FINITE_MAX },
		{ "controller.span_grants", agile__load_double(&c->span_grants),
		  0, FINITE_MAX },
		{ "controller.span_answers", agile__load_double(&c->span_answers),
		  0, FINITE_MAX },
		{ "controller.span_s", agile__load_double(&c->span_s), 0,
		  FINITE_MAX },
		{ "controller.paired_grants",
		  agile__load_double(&c->paired_grants), 0, FINITE_MAX },
		{ "controller.paired_answers",
		  agile__load_double(&c->paired_answers), 0, FINITE_MAX },
	};
	const struct {
		const char *field;
		uint32_t value;
	} flags[] = {
		{ "controller.cold_start", agile__load_u32(&c->cold_start) },
		{ "controller.probe_mode", agile__load_u32(&c->probe_mode) },
		{ "controller.cutting", agile__load_u32(&c->cutting) },
		{ "controller.paired", agile__load_u32(&c->paired) },
		{ "controller.span_split", agile__load_u32(&c->span_split) },
		{ "controller.cut_from_used", agile__load_u32(&c->cut_from_used) },
		{ "controller.cut_ended_cold",
		  agile__load_u32(&c->cut_ended_cold) },
		{ "controller.fast_series", agile__load_u32(&c->fast_series) },
	};
	const struct {
		const char *field;
		int32_t value;
	} counts[] = {
		{ "controller.up_agree", agile__load_i32(&c->up_agree) },
		{ "controller.down_agree", agile__load_i32(&c->down_agree) },
		{ "controller.increase_streak",
		  agile__load_i32(&c->increase_streak) },
	};
	uint32_t action = agile__load_u32(&c->last_action);
	int rc;

	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		rc = real_within(why, reals[i].field, reals[i].value,
		                 reals[i].lo, reals[i].hi);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		rc = flag(why, flags[i].field, flags[i].value);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		rc = count(why, counts[i].field, counts[i].value);
		if (rc < 0)
			return rc;
	}
	if (action >= AGILE_ACTION_COUNT)
		return reject(why, "controller.last_action",
		              "controller.last_action (%" PRIu32 ") is not an "
		              "action; there are %d.", action, AGILE_ACTION_COUNT);
	if (agile__load_u32(&c->slo_broke) > AGILE_BREAK_TICKS_MOST)
		return reject(why, "controller.slo_broke",
		              "controller.slo_broke (%" PRIu32 ") is more than "
		              "the %d ticks an SLO break is counted to.",
		              agile__load_u32(&c->slo_broke),
		              AGILE_BREAK_TICKS_MOST);
	if (agile__load_u32(&c->backlog_ms) >
	    agile__backlog_most_ms(r->tick_ns))
		return reject(why, "controller.backlog_ms",
		              "controller.backlog_ms (%" PRIu32 ") is more than "
		              "the %" PRIu32 " ms (three ticks) a cut's backlog "
		              "may hold the next cuts.",
		              agile__load_u32(&c->backlog_ms),
		              agile__backlog_most_ms(r->tick_ns));
	/* The quantile guard never writes the ratio guard's state. */
	if (!(r->tail_tolerance > 0) &&
	    (agile__load_double(&c->tail_ratio) != 0 ||
	     agile__load_double(&c->tail_threshold) != 0))
		return reject(why, "controller.tail_ratio",
		              "controller.tail_ratio and tail_threshold must "
		              "stay 0 while tail_tolerance is 0 (the quantile "
		              "guard).");
	if (!(r->delivered_share > 0) || r->kind != AGILE_KIND_RATE)
		return delivered_rules_off(c, why);
	return 0;
}

/* What both limiters share: the configuration, the tick clock and the
 * controller. */
static int loop_validate(const struct agile_loop *loop,
                         const struct agile_resolved *r, int64_t now_ns,
                         struct agile_problem *why)
{
	int64_t next_tick_ns = agile__load_i64(&loop->next_tick_ns);
	int64_t last_tick_ns = agile__load_i64(&loop->last_tick_ns);
	int64_t slack_now = agile__add_sat(now_ns, AGILE_CLOCK_SLACK_NS);

	if (memcmp(&loop->config, r, sizeof(*r)) != 0) {
		char stored[AGILE__NUMBER_TEXT], checked[AGILE__NUMBER_TEXT];

		agile__format_number(stored, loop->config.max_rate);
		agile__format_number(checked, r->max_rate);
		return reject(why, "config",
		              "the resolved configuration stored with the "
		              "limiter (max_rate %s, tick_ns %" PRId64 ") is not "
		              "the one it is checked against (max_rate %s, "
		              "tick_ns %" PRId64 ").", stored, loop->config.tick_ns,
		              checked, r->tick_ns);
	}
	/* A claim sets next_tick_ns to the claimer's now plus one tick, and
	 * the claimer's now may be a little ahead of ours. */
	if (next_tick_ns > agile__add_sat(slack_now, r->tick_ns))
		return reject(why, "next_tick_ns",
		              "next_tick_ns (%" PRId64 ") is more than a tick "
		              "(%" PRId64 " ns) and %" PRId64 " s after now (%"
		              PRId64 "): no step would run until then.",
		              next_tick_ns, r->tick_ns,
		              AGILE_CLOCK_SLACK_NS / AGILE_NS_PER_S, now_ns);
	if (last_tick_ns > slack_now)
		return reject(why, "last_tick_ns",
		              "last_tick_ns (%" PRId64 ") is more than %" PRId64
		              " s after now (%" PRId64 ").", last_tick_ns,
		              AGILE_CLOCK_SLACK_NS / AGILE_NS_PER_S, now_ns);
	return agile_controller_validate(&loop->ctl, r, why);
}

int agile_rate_validate(const struct agile_rate_limiter *l,
                        const struct agile_resolved *r, int64_t now_ns,
                        struct agile_problem *why)
{
	/* grants_at_tick first: it was copied from totals.grants, which only
	 * grows, so the later load of that can only be larger. */
	uint64_t at_tick = agile__load_u64(&l->grants_at_tick);
	uint64_t grants = agile__load_u64(&l->loop.totals.grants);
	int rc = loop_validate(&l->loop, r, now_ns, why);

	if (rc < 0)
		return rc;
	rc = agile_bucket_validate(&l->bucket, r, now_ns, why);
	if (rc < 0)
		return rc;
	if (at_tick > grants)
		return reject(why, "grants_at_tick",
		              "grants_at_tick (%" PRIu64 ") is above the grants "
		              "ever made (%" PRIu64 ").", at_tick, grants);
	return 0;
}
