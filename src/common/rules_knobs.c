/*
 * rules_knobs.c - the seed knobs of a rule: the windowed laws' options
 * (law_*), the breaker's floor, probe and buckets, the CPU shedder's
 * history, latency, cool-down, beta and floor (shed_*), and retry='s
 * backoff (retry_base, _cap, _factor, _jitter).  Most only need a value in
 * range, so they are rows of one table read by one function; the table
 * also tells rules_checks.c which knobs a rule gave.
 */
#include "config.h"

#include <string.h>

#include "internal.h"
#include "rules_internal.h"

#define KNOB_FIELD(f) offsetof(struct agile_resilience_config, f)

/*
 * The knobs that only need a value in range (agile_laws.h,
 * agile_resilience.h), read by agile__rules_knob: one row each, its field
 * and the bit that says it was given where its zero is a value.
 */
enum knob_kind {
	KNOB_DURATION, /* int64_t nanoseconds, > 0 */
	KNOB_BUCKETS,  /* int32_t, from least to most */
	KNOB_SAMPLES,  /* int64_t, from least to most */
	KNOB_DECIMAL   /* double, in the range */
};

struct seed_knob {
	const char *name;
	enum knob_kind kind;
	size_t field;
	double least, most; /* the range, both ends in it ... */
	bool open_least;    /* ... but least when this is true */
	bool open_most;     /* ... and most when this is */
	uint32_t law_given;   /* AGILE_LAW_GIVEN_* it sets */
	uint32_t knobs_given; /* AGILE_KNOB_* it sets */
};

static const struct seed_knob seed_knobs[] = {
	{ "law_smoothing", KNOB_DECIMAL, KNOB_FIELD(law_smoothing), 0, 1,
	  true, false, AGILE_LAW_GIVEN_SMOOTHING, 0 },
	{ "law_increase", KNOB_DECIMAL, KNOB_FIELD(law_increase_rate), 0,
	  1e9, true, false, AGILE_LAW_GIVEN_INCREASE, 0 },
	{ "law_decrease", KNOB_DECIMAL, KNOB_FIELD(law_decrease_ratio), 0,
	  1, true, true, AGILE_LAW_GIVEN_DECREASE, 0 },
	{ "law_utilization", KNOB_DECIMAL, KNOB_FIELD(law_utilization),
	  0, 1, true, false, AGILE_LAW_GIVEN_UTILIZATION, 0 },
	{ "law_tolerance", KNOB_DECIMAL, KNOB_FIELD(law_tolerance), 0, 1,
	  true, false, AGILE_LAW_GIVEN_TOLERANCE, 0 },
	{ "law_warmup", KNOB_SAMPLES, KNOB_FIELD(law_warmup_samples), 0,
	  1e6, false, false, AGILE_LAW_GIVEN_WARMUP, 0 },
	{ "law_min_decay", KNOB_DECIMAL,
	  KNOB_FIELD(law_min_latency_decay), 0, 1, false, false,
	  AGILE_LAW_GIVEN_MIN_DECAY, 0 },
	{ "law_jitter", KNOB_DECIMAL, KNOB_FIELD(law_jitter), 0, 1, false,
	  false, AGILE_LAW_GIVEN_JITTER, 0 },
	{ "breaker_floor", KNOB_DECIMAL, KNOB_FIELD(breaker_floor), 1,
	  1e9, false, false, 0, 0 },
	{ "breaker_probe", KNOB_DURATION, KNOB_FIELD(breaker_probe_ns), 0,
	  0, false, false, 0, 0 },
	{ "breaker_buckets", KNOB_BUCKETS, KNOB_FIELD(breaker_buckets), 1,
	  AGILE_ROLLING_MAX_BUCKETS, false, false, 0, 0 },
	{ "shed_window", KNOB_DURATION, KNOB_FIELD(shed_window_ns), 0, 0,
	  false, false, 0, 0 },
	{ "shed_buckets", KNOB_BUCKETS, KNOB_FIELD(shed_buckets), 1,
	  AGILE_ROLLING_MAX_BUCKETS, false, false, 0, 0 },
	{ "shed_latency", KNOB_DURATION, KNOB_FIELD(shed_latency_ns), 0,
	  0, false, false, 0, 0 },
	{ "shed_cool", KNOB_DURATION, KNOB_FIELD(shed_cool_ns), 0, 0,
	  false, false, 0, 0 },
	{ "shed_beta", KNOB_DECIMAL, KNOB_FIELD(shed_beta), 0, 1, false,
	  false, 0, AGILE_KNOB_SHED_BETA },
	{ "shed_floor", KNOB_DECIMAL, KNOB_FIELD(shed_floor), 0, 1, false,
	  false, 0, AGILE_KNOB_SHED_FLOOR },
	{ "retry_base", KNOB_DURATION, KNOB_FIELD(retry_base_ns), 0, 0,
	  false, false, 0, 0 },
	{ "retry_cap", KNOB_DURATION, KNOB_FIELD(retry_cap_ns), 0, 0,
	  false, false, 0, 0 },
	{ "retry_factor", KNOB_DECIMAL, KNOB_FIELD(retry_factor), 1, 100,
	  false, false, 0, 0 },
};

#define SEED_KNOBS (sizeof(seed_knobs) / sizeof(seed_knobs[0]))

static const struct seed_knob *seed_knob(const char *name)
{
	for (size_t i = 0; i < SEED_KNOBS; i++)
		if (strcmp(seed_knobs[i].name, name) == 0)
			return &seed_knobs[i];
	return NULL;
}

static bool knob_in_range(const struct seed_knob *k, double x)
{
	return (k->open_least ? x > k->least : x >= k->least) &&
	       (k->open_most ? x < k->most : x <= k->most);
}

bool agile__rules_knob(struct reporter *r, const struct key_spec *key,
                       const char *value, struct agile_resilience_config *c)
{
	const struct seed_knob *k = seed_knob(key->name);
	char *field = (char *)c + k->field;
	enum number_error why;
	uint64_t whole = 0;
	double x;

	if (k->kind == KNOB_DURATION)
		return agile__rules_duration(r, key, value,
		                             (int64_t *)(void *)field);
	if (k->kind == KNOB_DECIMAL) {
		why = agile__lex_decimal(value, &x);
	} else {
		why = agile__lex_whole(value, (uint64_t)k->most, &whole);
		x = (double)whole;
	}
	if (why != NUMBER_OK && why != NUMBER_TOO_LARGE) {
		agile__rules_report_number(r, key, value, why);
		return false;
	}
	if (why != NUMBER_OK || !knob_in_range(k, x)) {
		report(r, "key \"%s\": \"%.*s\" is not valid; %s", key->name,
		       QUOTE_MAX, value, key->expect);
		return false;
	}
	if (k->kind == KNOB_DECIMAL)
		*(double *)(void *)field = x;
	else if (k->kind == KNOB_BUCKETS)
		*(int32_t *)(void *)field = (int32_t)whole;
	else
		*(int64_t *)(void *)field = (int64_t)whole;
	c->law_given |= k->law_given;
	c->knobs_given |= k->knobs_given;
	return true;
}

const char *agile__rules_knob_given(const struct agile_resilience_config *c,
                                    const char *prefix)
{
	size_t n = strlen(prefix);

	if (strcmp(prefix, "retry_") == 0 && c->retry_jitter > 0)
		return "retry_jitter";
	for (size_t i = 0; i < SEED_KNOBS; i++) {
		const struct seed_knob *k = &seed_knobs[i];
		const char *field = (const char *)c + k->field;
		bool set;

		if (strncmp(k->name, prefix, n) != 0)
			continue;
		if (k->law_given != 0)
			set = (c->law_given & k->law_given) != 0;
		else if (k->knobs_given != 0)
			set = (c->knobs_given & k->knobs_given) != 0;
		else if (k->kind == KNOB_DECIMAL)
			set = *(const double *)(const void *)field > 0;
		else if (k->kind == KNOB_BUCKETS)
			set = *(const int32_t *)(const void *)field > 0;
		else
			set = *(const int64_t *)(const void *)field > 0;
		if (set)
			return k->name;
	}
	return NULL;
}

bool agile__rules_retry_jitter(const char *value,
                               struct agile_resilience_config *c)
{
	static const char *const names[] = {
		[AGILE_JITTER_RIGID] = "rigid", [AGILE_JITTER_FULL] = "full",
		[AGILE_JITTER_EQUAL] = "equal",
		[AGILE_JITTER_DECORRELATED] = "decorrelated",
		[AGILE_JITTER_SPREAD] = "spread",
	};
	int i = agile__name_index(value, names,
	                          (int)(sizeof(names) / sizeof(names[0])));
	double f;

	if (i < 0 && agile__name_starts(value, "spread:")) {
		if (agile__lex_decimal(value + 7, &f) != NUMBER_OK || f > 1)
			return false;
		c->retry_spread = f;
		c->knobs_given |= AGILE_KNOB_RETRY_SPREAD;
		i = AGILE_JITTER_SPREAD;
	}
	if (i < 0)
		return false;
	c->retry_jitter = (uint32_t)i + 1;
	return true;
}
