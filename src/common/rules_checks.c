/*
 * rules_checks.c - what a rule's settings say together, checked once every
 * key of the rule is read: the resilience keys that cannot apply to the
 * rule as written, the bounds that must be whole numbers, the rates that
 * must not exceed one another, and the core's own validation told in the
 * user's key names.
 *
 * Each problem is reported; where keeping the setting would mislead, it is
 * dropped (or repaired, as the message says) and the rule stays in force.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "goodbye.h"
#include "internal.h"
#include "rules_internal.h"

/*
 * A listener's max and an adaptive concurrency limit's bounds count
 * requests in flight, which come whole: a fractional one is reported and
 * rounded up (max, so the listener still admits something) or dropped (the
 * others, which then take their defaults).
 */
static void check_whole_bounds(struct reporter *r, struct agile_rule *rule)
{
	static const struct {
		const char *key;
		size_t offset;
	} bounds[] = {
		{ "max", CONFIG_FIELD(max_rate) },
		{ "min", CONFIG_FIELD(min_rate) },
		{ "floor", CONFIG_FIELD(floor_rate) },
		{ "probe", CONFIG_FIELD(probe_rate) },
		{ "initial", CONFIG_FIELD(initial_rate) },
	};
	const char *unit;

	if (rule->inbound)
		unit = "connections at once";
	else if (rule->resilience.conc_mode == AGILE_CONC_ADAPTIVE)
		unit = "requests in flight under concurrency=adaptive";
	else
		return;
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		double *value = (double *)(void *)((char *)&rule->config +
		                                   bounds[i].offset);
		/* Rates are at most RATE_LIMIT_MAX, so the cast is exact for
		 * whole ones (and the preload does not link libm's floor). */
		int64_t whole = (int64_t)*value;
		char shown[RATE_TEXT];

		if (*value == (double)whole)
			continue;
		format_rate(shown, *value);
		report(r, "key \"%s\": %s is not a whole number; expected a "
		       "whole number of %s", bounds[i].key, shown, unit);
		*value = i == 0 ? (double)(whole + 1) : 0;
	}
}

/* concurrency_min=, _initial=, _max=: only with concurrency=adaptive, in
 * order; out of order, the pair is reported and the defaults stand. */
static void check_conc_bounds(struct reporter *r,
                              struct agile_resilience_config *c)
{
	int32_t min = c->conc_min > 0 ? c->conc_min
	              : AGILE_LAW_DEFAULT_MIN_LIMIT;
	int32_t max = c->conc_max > 0 ? c->conc_max
	              : AGILE_LAW_DEFAULT_MAX_LIMIT;
	int32_t initial = c->conc_initial > 0 ? c->conc_initial
	                  : AGILE_LAW_DEFAULT_INITIAL_LIMIT;

	if (c->conc_min == 0 && c->conc_initial == 0 && c->conc_max == 0)
		return;
	if (c->conc_mode != AGILE_CONC_ADAPTIVE) {
		report(r, "key \"%s\" has no effect without "
		       "concurrency=adaptive; expected concurrency=adaptive as "
		       "well", c->conc_min ? "concurrency_min"
		       : c->conc_initial ? "concurrency_initial"
		       : "concurrency_max");
		return;
	}
	/* An initial limit a given bound leaves outside follows it. */
	if (c->conc_initial == 0 && initial > max)
		initial = c->conc_initial = max;
	if (c->conc_initial == 0 && initial < min)
		initial = c->conc_initial = min;
	if (min > max || initial < min || initial > max) {
		report(r, "concurrency_min=%d, concurrency_initial=%d and "
		       "concurrency_max=%d are out of order; expected min <= "
		       "initial <= max (the defaults stand)", (int)min,
		       (int)initial, (int)max);
		c->conc_min = c->conc_initial = c->conc_max = 0;
	}
}

static bool status_in(const struct agile_resilience_config *c, int list,
                      int status)
{
	unsigned bit = (unsigned)status - 100;

	return (c->status_list[list][bit / 64] >> (bit % 64)) & 1;
}

static void status_set(struct agile_resilience_config *c, int list,
                       int status, bool on)
{
	unsigned bit = (unsigned)status - 100;
	uint64_t mask = UINT64_C(1) << (bit % 64);

	if (on)
		c->status_list[list][bit / 64] |= mask;
	else
		c->status_list[list][bit / 64] &= ~mask;
}

/* The verdict keys: only with proto=http, and each status in one list.  A
 * status that unreachable= or ignore= names leaves overload's default
 * list (429 and 503), which is only a default. */
static void check_verdicts(struct reporter *r,
                           struct agile_resilience_config *c)
{
	static const char *const names[AGILE_STATUS_LISTS] = {
		"overload", "unreachable", "ignore"
	};

	for (int a = 0; a < AGILE_STATUS_LISTS; a++)
		if ((c->status_lists & (1u << a)) && c->proto != AGILE_PROTO_HTTP)
			report(r, "key \"%s\" has no effect without proto=http; "
			       "expected proto=http as well", names[a]);
	if (!(c->status_lists & (1u << AGILE_STATUS_OVERLOAD)) &&
	    (c->status_lists & ~(1u << AGILE_STATUS_OVERLOAD))) {
		static const int defaults[] = { 429, 503 };

		for (size_t i = 0; i < 2; i++)
			status_set(c, AGILE_STATUS_OVERLOAD, defaults[i],
			           !status_in(c, AGILE_STATUS_UNREACHABLE,
			                      defaults[i]) &&
			           !status_in(c, AGILE_STATUS_IGNORE,
			                      defaults[i]));
		c->status_lists |= 1u << AGILE_STATUS_OVERLOAD;
	}
	for (int a = 0; a < AGILE_STATUS_LISTS; a++)
		for (int b = a + 1; b < AGILE_STATUS_LISTS; b++)
			for (int status = 100; status < 600; status++)
				if (status_in(c, a, status) &&
				    status_in(c, b, status)) {
					report(r, "key \"%s\": %d is also in %s; "
					       "expected each status in one list",
					       names[b], status, names[a]);
					status_set(c, b, status, false);
				}
	if (c->cache_hit_count > 0 && c->proto != AGILE_PROTO_HTTP)
		report(r, "key \"cache_hit\" has no effect without proto=http; "
		       "expected proto=http as well");
}

/* baseline_probe=: the agile law's adaptive cap (a listener's, or
 * concurrency=adaptive's) under the baseline anchor, whose window it
 * moves. */
static void check_baseline_probe(struct reporter *r,
                                 const struct agile_rule *rule)
{
	const struct agile_resilience_config *c = &rule->resilience;
	struct agile_resolved resolved;

	if (!rule->inbound && c->conc_mode != AGILE_CONC_ADAPTIVE) {
		report(r, "key \"baseline_probe\" has no effect without an "
		       "adaptive cap; expected concurrency=adaptive as well");
		return;
	}
	if (c->conc_law != AGILE_LAW_AGILE) {
		report(r, "key \"baseline_probe\" has no effect with a windowed "
		       "law; expected law=agile (the default)");
		return;
	}
	if (agile_resolve(&rule->config, AGILE_KIND_CONCURRENCY,
	                  &resolved) == 0 &&
	    resolved.anchor != AGILE_ANCHOR_BASELINE &&
	    rule->config.baseline_probe_ns > 0)
		report(r, "key \"baseline_probe\" has no effect under the slo "
		       "anchor, whose window is 0.8 x slo; expected "
		       "anchor=baseline as well, or no baseline_probe");
}

/* The seed knobs together: each needs the feature it tunes, and the
 * breaker's floor and the backoff's bounds come in order.  A knob out of
 * order is reported and dropped, so the preset's values stand. */
static void check_seed_knobs(struct reporter *r, struct agile_rule *rule)
{
	struct agile_resilience_config *c = &rule->resilience;
	const struct agile_sre sre = AGILE_SRE_PRESET;
	const struct agile_backoff backoff = AGILE_BACKOFF_PRESET;
	double breaker_k = c->breaker_k > 0 ? c->breaker_k : sre.k;
	int64_t base = c->retry_base_ns > 0 ? c->retry_base_ns
	                                    : backoff.base_ns;
	int64_t cap = c->retry_cap_ns > 0 ? c->retry_cap_ns : backoff.cap_ns;
	bool windowed = c->conc_law != AGILE_LAW_AGILE &&
	                (rule->inbound || c->conc_mode == AGILE_CONC_ADAPTIVE);
	const char *k;

	if ((k = agile__rules_knob_given(c, "law_")) != NULL && !windowed)
		report(r, "key \"%s\" has no effect without a windowed law; "
		       "expected %s as well", k, rule->inbound
		       ? "law=aimd, vegas or gradient"
		       : "concurrency=adaptive,law=aimd (or vegas or gradient)");
	if (rule->config.baseline_probe_ns != 0)
		check_baseline_probe(r, rule);
	if ((k = agile__rules_knob_given(c, "breaker_")) != NULL &&
	    !c->breaker)
		report(r, "key \"%s\" has no effect without breaker=sre; "
		       "expected breaker=sre as well", k);
	if (c->breaker_floor > breaker_k) {
		char floor_text[AGILE__NUMBER_TEXT], k_text[AGILE__NUMBER_TEXT];

		agile__format_number(floor_text, c->breaker_floor);
		agile__format_number(k_text, breaker_k);
		report(r, "key \"breaker_floor\": %s is above breaker_k (%s); "
		       "expected a floor the weight can decay to (the "
		       "preset's stands)", floor_text, k_text);
		c->breaker_floor = 0;
	}
	if ((k = agile__rules_knob_given(c, "shed_")) != NULL && !c->shed_cpu)
		report(r, "key \"%s\" has no effect without shed=cpu; "
		       "expected shed=cpu as well", k);
	if ((k = agile__rules_knob_given(c, "retry_")) != NULL && c->retry <= 0)
		report(r, "key \"%s\" has no effect without retry=N; "
		       "expected retry=N as well", k);
	if (base > cap) {
		char base_text[AGILE__NUMBER_TEXT], cap_text[AGILE__NUMBER_TEXT];

		agile__format_duration(base_text, base);
		agile__format_duration(cap_text, cap);
		report(r, "retry_base=%s is above retry_cap=%s; expected base <= "
		       "cap (the preset's stand)", base_text, cap_text);
		c->retry_base_ns = c->retry_cap_ns = 0;
	}
}

void agile__rules_check_resilience(struct reporter *r,
                                   struct agile_rule *rule)
{
	struct agile_resilience_config *c = &rule->resilience;
	bool cidr = rule->kind == AGILE_DEST_INET &&
	            rule->prefix.prefix_len < 128;

	if (c->key_rate > 0 && !cidr) {
		report(r, "key \"key_rate\" applies to a CIDR or * rule; expected "
		       "a destination such as 10.0.0.0/8:443 or *:443");
		c->key_rate = 0;
	}
	if (c->keys > 0 && c->key_rate <= 0)
		report(r, "key \"keys\" has no effect without key_rate; expected "
		       "key_rate=R as well");
	if (rule->inbound && agile__has_goodbye(c->proto)) {
		report(r, "key \"proto\": %s applies to AGILE_DEST_ variables "
		       "only; expected http, grpc or none on a listener",
		       agile__goodbye_proto_name(c->proto));
		c->proto = AGILE_PROTO_NONE;
	}
	if (c->exclude_count > 0 && c->proto != AGILE_PROTO_HTTP)
		report(r, "key \"exclude\" has no effect without proto=http; "
		       "expected proto=http as well");
	check_verdicts(r, c);
	check_conc_bounds(r, c);
	check_seed_knobs(r, rule);
	if (c->shed_response == AGILE_SHED_CLOSE && c->retry_after_ns > 0)
		report(r, "key \"retry_after\" needs an HTTP shed_response; "
		       "expected shed_response=503 (or another status) as well");
	if (c->client_rate <= 0 && (c->client_prefix > 0 || c->clients > 0 ||
	                            c->client_header[0] != '\0'))
		report(r, "key \"%s\" has no effect without client_rate; "
		       "expected client_rate=R as well",
		       c->client_header[0] != '\0' ? "client_key"
		       : c->client_prefix > 0 ? "client_prefix" : "clients");
	if (c->client_header[0] != '\0' && c->proto != AGILE_PROTO_HTTP) {
		report(r, "key \"client_key\" reads a request header; "
		       "expected proto=http as well");
		c->client_header[0] = '\0';
	}
	if (rule->inbound && rule->config.max_rate > AGILE_STATE_PERMITS) {
		char shown[RATE_TEXT];

		format_rate(shown, rule->config.max_rate);
		report(r, "key \"max\": %s is too large for a listener; "
		       "expected at most %d connections at once", shown,
		       AGILE_STATE_PERMITS);
		rule->config.max_rate = AGILE_STATE_PERMITS;
	}
	check_whole_bounds(r, rule);
}

/* The rates that must not exceed another one, checked after parsing: each
 * offender is reported and falls back to its default, so the rule keeps
 * its ceiling and loses only the inconsistent setting. */
static void check_order(struct reporter *r, const char *low_name,
                        double *low, const char *high_name, double high)
{
	char low_text[RATE_TEXT], high_text[RATE_TEXT];

	if (*low > 0 && high > 0 && *low > high) {
		format_rate(low_text, *low);
		format_rate(high_text, high);
		report(r, "%s (%s) is above %s (%s); expected %s <= %s",
		       low_name, low_text, high_name, high_text, low_name,
		       high_name);
		*low = 0;
	}
}

/* The struct agile_config field names that agile_config_validate() writes
 * in its messages, and the keys the user wrote for them. */
static const struct {
	const char *field;
	const char *key;
} field_keys[] = {
	{ "max_rate", "max" },
	{ "min_rate", "min" },
	{ "floor_rate", "floor" },
	{ "probe_rate", "probe" },
	{ "initial_rate", "initial" },
	{ "slo_ns", "slo" },
	{ "tick_ns", "tick" },
	{ "slow_half_life_ns", "slow_half_life" },
	{ "slow_down_half_life_ns", "slow_down_half_life" },
	{ "target_inflation", "inflation" },
	{ "up_step", "up" },
	{ "down_step", "down" },
	{ "slow_start_gain", "slow_start" },
};

/* Copy a core message, replacing each field name that stands as a whole
 * word by its key, so "floor_rate (600)" reads "floor (600)". */
static void speak_keys(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	while (*src != '\0' && n + 1 < size) {
		size_t word = 0;
		const char *text;
		size_t len;

		while (isalnum((unsigned char)src[word]) || src[word] == '_')
			word++;
		text = src;
		len = word > 0 ? word : 1;
		for (size_t i = 0; word > 0 && i < sizeof(field_keys) /
		                                   sizeof(field_keys[0]); i++) {
			if (strlen(field_keys[i].field) == word &&
			    memcmp(field_keys[i].field, src, word) == 0) {
				text = field_keys[i].key;
				len = strlen(text);
				break;
			}
		}
		for (size_t i = 0; i < len && n + 1 < size; i++)
			dst[n++] = text[i];
		src += word > 0 ? word : 1;
	}
	dst[n] = '\0';
}

/* Report what the core's own validation finds, in the variable's name and
 * the user's key names.  Those are repairs agile_resolve() would otherwise
 * make silently; the rule stays in force with the repaired value. */
static void report_problems(struct reporter *r, const struct agile_config *c)
{
	struct agile_problem problems[8];
	size_t count = agile_config_validate(c, problems, 8);
	char text[sizeof(problems[0].message) + 32];

	for (size_t i = 0; i < count && i < 8; i++) {
		speak_keys(text, sizeof(text), problems[i].message);
		report(r, "%s", text);
	}
	if (count > 8)
		report(r, "%zu more problems in this configuration", count - 8);
}

void agile__rules_check_rates(struct reporter *r, struct agile_config *c)
{
	check_order(r, "floor", &c->floor_rate, "max", c->max_rate);
	check_order(r, "min", &c->min_rate, "max", c->max_rate);
	check_order(r, "probe", &c->probe_rate, "max", c->max_rate);
	check_order(r, "initial", &c->initial_rate, "max", c->max_rate);
	check_order(r, "probe", &c->probe_rate, "floor", c->floor_rate);
	report_problems(r, c);
}
