/*
 * internal.h - helpers libagile's files share and do not export: saturating
 * arithmetic on times, clamped conversions from double, the bucket's
 * spacing rules, which validate.c checks a bucket against, and the matching
 * of the names its parsers take.
 *
 * Limiter state lives in a file that other processes can write, so the core
 * must be total on any bit pattern its state can hold: a time plus an
 * interval saturates instead of overflowing, and a double becomes an integer
 * only through a conversion that maps NaN and out-of-range values to a
 * defined one (a plain cast of those is undefined behaviour).
 */
#ifndef AGILE_INTERNAL_H
#define AGILE_INTERNAL_H

#include <stdint.h>

#include "agile.h"

/* The longest spacing the bucket plans, about 146 years.  A rate near zero
 * would otherwise ask for an interval that does not fit in int64_t, and
 * llround() of such a value is unspecified. */
#define AGILE__MAX_INTERVAL_NS (INT64_C(1) << 62)

/* A bucket's last_ns before its first take: far enough in the past that
 * max(now, last + interval) is `now` for any realistic clock, and far enough
 * from INT64_MIN that adding even AGILE__MAX_INTERVAL_NS cannot overflow. */
#define AGILE__NEVER_NS (INT64_MIN / 2)

/* The index of `name` among the `count` canonical `names` (lower case,
 * words joined by '-'), or -1.  ASCII case is ignored and '_' stands for
 * '-', as people type names on command lines and in the environment; no
 * locale is consulted.  In config_names.c. */
int agile__name_index(const char *name, const char *const *names, int count);
/* Whether `name` is the canonical `word` under the same rule, the one every
 * keyword value follows (presets, anchors, laws, the preload's pace=,
 * breaker=, proto=, ... and AGILE_LOG); and whether it begins with `word`,
 * for a keyword followed by more ("adaptive,law=aimd", "cpu:800"). */
bool agile__name_is(const char *name, const char *word);
bool agile__name_starts(const char *name, const char *word);

/* a + b, saturating at INT64_MAX and INT64_MIN instead of wrapping. */
static inline int64_t agile__add_sat(int64_t a, int64_t b)
{
	int64_t sum;

	if (__builtin_add_overflow(a, b, &sum))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return sum;
}

/* a - b, saturating likewise. */
static inline int64_t agile__sub_sat(int64_t a, int64_t b)
{
	int64_t diff;

	if (__builtin_sub_overflow(a, b, &diff))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return diff;
}

/* v + 1 for a counter of agreeing ticks, stopping at INT32_MAX. */
static inline int32_t agile__inc_sat_i32(int32_t v)
{
	return v < INT32_MAX ? v + 1 : INT32_MAX;
}

/* v within [lo, hi]; a NaN (garbage in the shared state, carried through
 * the arithmetic) reads as lo, the cautious end. */
static inline double agile__clamp(double v, double lo, double hi)
{
	if (v < lo || v != v)
		v = lo;
	if (v > hi)
		v = hi;
	return v;
}

/* The integer part of v, clamped into int64_t; NaN reads as 0.  Every
 * double that reaches an integer goes through a clamp like this one, never
 * through a plain cast. */
static inline int64_t agile__trunc_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 0x1p63)
		return INT64_MAX;
	if (v <= -0x1p63)
		return INT64_MIN;
	return (int64_t)v;
}

/* The spacing of a ceiling of max_rate grants per second: rounded up, at
 * least 1 ns, at most AGILE__MAX_INTERVAL_NS; max_rate > 0. */
int64_t agile__bucket_min_interval(double max_rate);

/* The spacing `rate` (>= 0, possibly +inf) asks for, rounded to the nearest
 * nanosecond, at least min_interval_ns and at most AGILE__MAX_INTERVAL_NS
 * (which a rate of 0 gets). */
int64_t agile__bucket_interval(double rate, int64_t min_interval_ns);

/* The furthest ahead of now a send's theoretical arrival time may be: an
 * hour.  Further is not a time a send wrote (a corrupt file), and a longer
 * interval is not one a bucket of this build holds. */
#define AGILE__SEND_AHEAD_MAX_NS (3600 * AGILE_NS_PER_S)

/* The send spacing of bucket.c: when a send granted by `b` may go out at
 * `now_ns`, given *tat_ns, the theoretical arrival time of the next send,
 * which it advances by one interval (atomically: any number of threads and
 * processes may share it).  Returns now_ns or later; now_ns when `b` holds
 * no usable interval, leaving *tat_ns alone. */
int64_t agile__bucket_send_slot(const struct agile_bucket *b, int64_t *tat_ns,
                                int64_t now_ns);

/* The longest a cut's backlog (controller.backlog_ms) may hold further
 * cuts: AGILE_BACKLOG_MAX_TICKS ticks, in milliseconds, within uint32_t.
 * controller_rules.c sets it no higher, and validate.c rejects more. */
static inline uint32_t agile__backlog_most_ms(int64_t tick_ns)
{
	int64_t ticks_ms = tick_ns / 1000000;

	if (ticks_ms <= 0)
		return 0;
	if (ticks_ms > (int64_t)(UINT32_MAX / AGILE_BACKLOG_MAX_TICKS))
		return UINT32_MAX;
	return (uint32_t)(ticks_ms * AGILE_BACKLOG_MAX_TICKS);
}

/* A double as text with up to 15 significant digits and a '.' as the
 * decimal point whatever the host program's locale ("nan", "inf" as such):
 * format.c's, for config.c's and validate.c's messages. */
#define AGILE__NUMBER_TEXT 48
void agile__format_number(char out[AGILE__NUMBER_TEXT], double value);
/* A duration as text in the largest unit in which it is exact ("250us",
 * "1.5s", "2m"), as agile_duration_format prints it. */
void agile__format_duration(char out[AGILE__NUMBER_TEXT], int64_t ns);

#endif /* AGILE_INTERNAL_H */
