/*
 * rules_keys.c - the keys of a rule: the table that names each one, its
 * type, where it is stored and what its message expects; finding a key, and
 * the nearest one to a misspelt word ("did you mean"); and storing one
 * setting by its key's type.
 *
 * The table is the one list of keys: completion/agilepreload.bash and
 * agilepreload(7) follow it, name for name and in order, and
 * tests/tools/completion.sh checks that they do.
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "rules_internal.h"

/* concurrency_min=, _initial=, _max=: an adaptive cap's bounds. */
#define CONC_BOUND_EXPECTED \
	"expected a whole number of connections at once from 1 to " \
	AGILE_STRINGIFY(AGILE_STATE_PERMITS)
/* overload=, unreachable=, ignore=: HTTP statuses. */
#define STATUS_LIST_EXPECTED \
	"expected none or a comma-separated list of HTTP statuses from 100 " \
	"to 599 such as 502,504"
#define DURATION_EXPECTED "expected a duration such as 250us, 200ms or 1.5s"
/* breaker_buckets=, shed_buckets=: a rolling window's buckets. */
#define BUCKETS_EXPECTED \
	"expected a whole number of buckets from 1 to " \
	AGILE_STRINGIFY(AGILE_ROLLING_MAX_BUCKETS)
#define FRACTION_EXPECTED "expected a decimal number from 0 to 1"
#define LAW_OPEN_ONE "expected a decimal number greater than 0, at most 1,"
#define RATE_EXPECTED_MAX "expected a rate greater than 0: " RATE_FORMS
#define RATE_EXPECTED "expected a rate, 0 or more: " RATE_FORMS

#define AGILE_STRINGIFY_(x) #x
#define AGILE_STRINGIFY(x) AGILE_STRINGIFY_(x)

/* The order is the order of agilepreload(7) and of the list printed when an
 * unknown key has no close match. */
const struct key_spec agile__rules_keys[] = {
	{ "max", KEY_RATE, CONFIG_FIELD(max_rate), RATE_EXPECTED_MAX,
	  SCOPE_BOTH },
	{ "min", KEY_RATE, CONFIG_FIELD(min_rate),
	  RATE_EXPECTED, SCOPE_BOTH },
	{ "floor", KEY_RATE, CONFIG_FIELD(floor_rate),
	  RATE_EXPECTED, SCOPE_BOTH },
	{ "probe", KEY_RATE, CONFIG_FIELD(probe_rate),
	  RATE_EXPECTED, SCOPE_BOTH },
	{ "initial", KEY_RATE, CONFIG_FIELD(initial_rate),
	  RATE_EXPECTED, SCOPE_BOTH },
	{ "slo", KEY_DURATION, CONFIG_FIELD(slo_ns), DURATION_EXPECTED,
	  SCOPE_BOTH },
	{ "anchor", KEY_ANCHOR, CONFIG_FIELD(anchor),
	  "expected unset, baseline or slo", SCOPE_BOTH },
	{ "preset", KEY_PRESET, CONFIG_FIELD(preset),
	  "expected none, balanced, latency-first, throughput-first or seed",
	  SCOPE_BOTH },
	{ "tail_factor", KEY_DECIMAL, CONFIG_FIELD(tail_factor),
	  "expected a decimal number, 0 or more, such as 1.5", SCOPE_BOTH },
	{ "tail_tolerance", KEY_DECIMAL, CONFIG_FIELD(tail_tolerance),
	  "expected a decimal number, 0 or more, such as 0.05", SCOPE_BOTH },
	{ "tick", KEY_TICK, CONFIG_FIELD(tick_ns),
	  "expected a duration from 10ms to 60s such as 500ms, or 0s for the "
	  "default of 1s", SCOPE_BOTH },
	{ "up", KEY_DECIMAL, CONFIG_FIELD(up_step),
	  "expected a decimal number, 0 or more, such as 0.05", SCOPE_BOTH },
	{ "down", KEY_DECIMAL, CONFIG_FIELD(down_step),
	  "expected a decimal number, 0 or more, such as 0.3", SCOPE_BOTH },
	{ "gain", KEY_DECIMAL, CONFIG_FIELD(gain),
	  "expected a decimal number, 0 or more, such as 0.5", SCOPE_BOTH },
	{ "inflation", KEY_DECIMAL, CONFIG_FIELD(target_inflation),
	  "expected a decimal number, 0 or more, such as 1.0", SCOPE_BOTH },
	{ "deadband", KEY_DECIMAL, CONFIG_FIELD(deadband),
	  "expected a decimal number, 0 or more, such as 0.1", SCOPE_BOTH },
	{ "backoff_ticks", KEY_COUNT, CONFIG_FIELD(backoff_ticks),
	  "expected a whole number of ticks, 0 or more", SCOPE_BOTH },
	{ "recover_ticks", KEY_COUNT, CONFIG_FIELD(recover_ticks),
	  "expected a whole number of ticks, 0 or more", SCOPE_BOTH },
	{ "slow_start", KEY_DECIMAL, CONFIG_FIELD(slow_start_gain),
	  "expected a decimal number, 0 or more, such as 2.0", SCOPE_BOTH },
	{ "recover_ramp", KEY_DECIMAL, CONFIG_FIELD(recover_ramp),
	  "expected a decimal number, 0 or more, such as 0.5", SCOPE_BOTH },
	{ "slow_half_life", KEY_DURATION, CONFIG_FIELD(slow_half_life_ns),
	  DURATION_EXPECTED, SCOPE_BOTH },
	{ "slow_down_half_life", KEY_DURATION,
	  CONFIG_FIELD(slow_down_half_life_ns), DURATION_EXPECTED, SCOPE_BOTH },
	{ "max_baseline_rise", KEY_DECIMAL, CONFIG_FIELD(max_baseline_rise),
	  "expected a decimal number, 0 or more, such as 0.002", SCOPE_BOTH },
	{ "delivered_share", KEY_RULE, CONFIG_FIELD(delivered_share),
	  "expected off or a decimal number from 0 to 1 such as 0.92 (off "
	  "also turns off knee_ramp and probe_acceleration)", SCOPE_BOTH },
	{ "knee_ramp", KEY_RULE, CONFIG_FIELD(knee_ramp),
	  "expected off or a decimal number, 1 or more, such as 2",
	  SCOPE_BOTH },
	{ "probe_acceleration", KEY_RULE, CONFIG_FIELD(probe_acceleration),
	  "expected off or a decimal number, 1 or more, such as 2",
	  SCOPE_BOTH },
	{ "goodput_cut", KEY_RULE, CONFIG_FIELD(goodput_cut),
	  "expected off or a decimal number from 0 to 1 such as 1",
	  SCOPE_BOTH },
	{ "pace", KEY_PACE, 0, "expected request or connect", SCOPE_DEST },
	{ "inflight", KEY_INFLIGHT, 0,
	  "expected auto, off or a decimal gain greater than 0, at most "
	  AGILE_STRINGIFY(AGILE_INFLIGHT_GAIN_MAX) ", such as 1.5",
	  SCOPE_DEST },
	/* The resilience keys (resilience.h), in agilepreload(7)'s order.
	 * FIRST_RESILIENCE_KEY below names the first one. */
	{ "concurrency", KEY_RESILIENCE, 0,
	  "expected a whole number of connections from 1 to "
	  AGILE_STRINGIFY(AGILE_STATE_PERMITS) ", or adaptive[,law=agile|aimd|"
	  "vegas|gradient]", SCOPE_DEST },
	{ "acquire_timeout", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "breaker", KEY_RESILIENCE, 0, "expected sre", SCOPE_DEST },
	{ "breaker_k", KEY_RESILIENCE, 0,
	  "expected a decimal number, 1 or more, such as 1.5", SCOPE_DEST },
	{ "breaker_protection", KEY_RESILIENCE, 0,
	  "expected a decimal number of calls, 0 or more, such as 5",
	  SCOPE_DEST },
	{ "breaker_window", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "breaker_floor", KEY_RESILIENCE, 0,
	  "expected a decimal number from 1 to breaker_k (1.5 by default), "
	  "such as 1.1", SCOPE_DEST },
	{ "breaker_probe", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "breaker_buckets", KEY_RESILIENCE, 0, BUCKETS_EXPECTED, SCOPE_DEST },
	{ "quota", KEY_RESILIENCE, 0,
	  "expected N/PERIOD[,align] such as 1000/1d or 20/s,align",
	  SCOPE_DEST },
	{ "window", KEY_RESILIENCE, 0,
	  "expected N/SPAN such as 100/1m, with N from 1 to "
	  AGILE_STRINGIFY(AGILE_STATE_WINDOW_MAX), SCOPE_DEST },
	{ "over", KEY_RESILIENCE, 0, "expected refuse or wait", SCOPE_DEST },
	{ "proto", KEY_RESILIENCE, 0,
	  "expected http, grpc, redis, postgres, mysql, memcached or none",
	  SCOPE_BOTH },
	{ "exclude", KEY_RESILIENCE, 0,
	  "expected a comma-separated list of at most "
	  AGILE_STRINGIFY(AGILE_EXCLUDE_MAX) " paths such as /health,/metrics, "
	  "each at most 47 characters",
	  SCOPE_BOTH },
	{ "connect_timeout", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "retry", KEY_RESILIENCE, 0,
	  "expected a whole number of retries from 0 to 100", SCOPE_DEST },
	{ "retry_base", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "retry_cap", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "retry_factor", KEY_RESILIENCE, 0,
	  "expected a decimal number from 1 to 100, such as 2", SCOPE_DEST },
	{ "retry_jitter", KEY_RESILIENCE, 0,
	  "expected rigid, full, equal, decorrelated, spread or spread:F with "
	  "F from 0 to 1, such as spread:0.2", SCOPE_DEST },
	{ "key_rate", KEY_RESILIENCE, 0,
	  "expected R[,burst=B]: a decimal number of connects per second per "
	  "address greater than 0, B 1 or more (the rate by default)",
	  SCOPE_DEST },
	{ "keys", KEY_RESILIENCE, 0,
	  "expected a whole number of addresses from 1 to 10000000",
	  SCOPE_DEST },
	{ "shed", KEY_RESILIENCE, 0, "expected cpu or cpu:PERMILLE with "
	  "PERMILLE from 1 to 999, such as cpu:800", SCOPE_LISTEN },
	{ "shed_window", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_LISTEN },
	{ "shed_buckets", KEY_RESILIENCE, 0, BUCKETS_EXPECTED, SCOPE_LISTEN },
	{ "shed_latency", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_LISTEN },
	{ "shed_cool", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_LISTEN },
	{ "shed_beta", KEY_RESILIENCE, 0, FRACTION_EXPECTED " such as 0.9",
	  SCOPE_LISTEN },
	{ "shed_floor", KEY_RESILIENCE, 0, FRACTION_EXPECTED " such as 0.1",
	  SCOPE_LISTEN },
	{ "shed_response", KEY_RESILIENCE, 0,
	  "expected close or an HTTP status from 400 to 599 such as 503",
	  SCOPE_LISTEN },
	{ "retry_after", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_LISTEN },
	{ "concurrency_min", KEY_RESILIENCE, 0, CONC_BOUND_EXPECTED " (1 by "
	  "default)", SCOPE_DEST },
	{ "concurrency_initial", KEY_RESILIENCE, 0, CONC_BOUND_EXPECTED
	  " (10 by default)", SCOPE_DEST },
	{ "concurrency_max", KEY_RESILIENCE, 0, CONC_BOUND_EXPECTED " (1000 by "
	  "default)", SCOPE_DEST },
	{ "baseline_probe", KEY_INTERVAL, CONFIG_FIELD(baseline_probe_ns),
	  "expected off or a duration such as 60s (0s for the default)",
	  SCOPE_BOTH },
	{ "overload", KEY_RESILIENCE, 0, STATUS_LIST_EXPECTED " (429,503 by "
	  "default)", SCOPE_BOTH },
	{ "unreachable", KEY_RESILIENCE, 0, STATUS_LIST_EXPECTED, SCOPE_BOTH },
	{ "ignore", KEY_RESILIENCE, 0, STATUS_LIST_EXPECTED, SCOPE_BOTH },
	{ "cache_hit", KEY_RESILIENCE, 0,
	  "expected a comma-separated list of at most "
	  AGILE_STRINGIFY(AGILE_CACHE_HIT_MAX) " header names such as "
	  "X-Cache,CF-Cache-Status, each at most 31 characters", SCOPE_BOTH },
	{ "client_rate", KEY_RESILIENCE, 0,
	  "expected R[,burst=B]: requests per second per client greater than "
	  "0, such as 5 or 5,burst=10, with B 1 or more", SCOPE_LISTEN },
	{ "client_prefix", KEY_RESILIENCE, 0,
	  "expected the address bits that name one client, from 1 to 128, "
	  "such as 64 (IPv4 addresses use at most 32)", SCOPE_LISTEN },
	{ "client_key", KEY_RESILIENCE, 0,
	  "expected header:NAME, such as header:X-Api-Key, NAME at most 47 "
	  "characters", SCOPE_LISTEN },
	{ "clients", KEY_RESILIENCE, 0,
	  "expected a whole number of clients from 1 to "
	  AGILE_STRINGIFY(AGILE_CLIENTS_MAX), SCOPE_LISTEN },
	{ "law", KEY_RESILIENCE, 0, "expected agile, aimd, vegas or gradient",
	  SCOPE_LISTEN },
	{ "law_smoothing", KEY_RESILIENCE, 0, LAW_OPEN_ONE " such as 0.2",
	  SCOPE_BOTH },
	{ "law_increase", KEY_RESILIENCE, 0,
	  "expected a decimal number greater than 0 such as 1", SCOPE_BOTH },
	{ "law_decrease", KEY_RESILIENCE, 0,
	  "expected a decimal number greater than 0 and below 1 such as 0.5",
	  SCOPE_BOTH },
	{ "law_utilization", KEY_RESILIENCE, 0, LAW_OPEN_ONE " such as 0.9",
	  SCOPE_BOTH },
	{ "law_tolerance", KEY_RESILIENCE, 0, LAW_OPEN_ONE " such as 0.1",
	  SCOPE_BOTH },
	{ "law_warmup", KEY_RESILIENCE, 0,
	  "expected a whole number of samples from 0 to 1000000 such as 10",
	  SCOPE_BOTH },
	{ "law_min_decay", KEY_RESILIENCE, 0, FRACTION_EXPECTED " such as "
	  "0.001", SCOPE_BOTH },
	{ "law_jitter", KEY_RESILIENCE, 0, FRACTION_EXPECTED " such as 0.1",
	  SCOPE_BOTH },
	/* The fleet keys (fleet_config.h; window=N/SPAN,shared is read there
	 * too); their expectations are fleet_config.c's. */
	{ "fleet_max", KEY_FLEET, 0, "", SCOPE_DEST },
	{ "fleet", KEY_FLEET, 0, "", SCOPE_DEST },
	{ "redis_timeout", KEY_FLEET, 0, "", SCOPE_DEST },
};

#define KEY_COUNT_ALL (sizeof(agile__rules_keys) / sizeof(agile__rules_keys[0]))
#define FIRST_RESILIENCE_KEY "concurrency"

_Static_assert(KEY_COUNT_ALL <= RULES_KEYS_MAX,
               "RULES_KEYS_MAX must hold every key");

/*
 * Optimal-string-alignment distance (Levenshtein plus adjacent swaps), case
 * folded, so "flor", "floro", "MAX" and "mxa" all find their key.  Keys are
 * short; a longer word is not close to any of them.
 */
#define DISTANCE_MAX_LEN 32

static int edit_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	int d[DISTANCE_MAX_LEN + 1][DISTANCE_MAX_LEN + 1];

	if (la > DISTANCE_MAX_LEN || lb > DISTANCE_MAX_LEN)
		return INT_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			int best = d[i - 1][j - 1] + (ca != cb);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 &&
			    ca == tolower((unsigned char)b[j - 2]) &&
			    cb == tolower((unsigned char)a[i - 2]) &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* The key nearest to `word`, or NULL when none is close enough to be the
 * one meant: at most 2 edits, and fewer than half the word's letters. */
static const char *nearest_key(const char *word, size_t len)
{
	const char *best = NULL;
	int best_distance = INT_MAX;

	for (size_t i = 0; i < KEY_COUNT_ALL; i++) {
		int distance = edit_distance(word, len,
		                             agile__rules_keys[i].name);
		if (distance < best_distance) {
			best_distance = distance;
			best = agile__rules_keys[i].name;
		}
	}
	if (best_distance > 2 || (size_t)best_distance * 2 >= len + (len == 1))
		return NULL;
	return best;
}

const struct key_spec *agile__rules_find_key(const char *word, size_t len)
{
	for (size_t i = 0; i < KEY_COUNT_ALL; i++)
		if (strlen(agile__rules_keys[i].name) == len &&
		    memcmp(agile__rules_keys[i].name, word, len) == 0)
			return &agile__rules_keys[i];
	return NULL;
}

void agile__rules_report_unknown_key(struct reporter *r, const char *word,
                                     size_t len)
{
	const char *near = nearest_key(word, len);
	char list[MESSAGE_MAX / 2 + 64];
	size_t used = 0;

	if (len > QUOTE_MAX)
		len = QUOTE_MAX;
	if (near != NULL) {
		report(r, "unknown key \"%.*s\"; did you mean \"%s\"?", (int)len,
		       word, near);
		return;
	}
	/* The controller's keys in full; the resilience keys are too many
	 * to list in one line as well, so the message names a few and
	 * points to the manual. */
	list[0] = '\0';
	for (size_t i = 0; i < KEY_COUNT_ALL && used < sizeof(list) &&
	     strcmp(agile__rules_keys[i].name, FIRST_RESILIENCE_KEY) != 0; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
		                         "%s%s", i == 0 ? "" : ", ",
		                         agile__rules_keys[i].name);
	report(r, "unknown key \"%.*s\"; expected one of %s, or a resilience "
	       "key such as concurrency, breaker, quota, window or proto (see "
	       "agilepreload(7))", (int)len, word, list);
}

void agile__rules_report_number(struct reporter *r,
                                const struct key_spec *key,
                                const char *value, enum number_error why)
{
	static const char *const what[] = {
		[NUMBER_EMPTY] = "has no value",
		[NUMBER_NOT_NUMBER] = "is not a number",
		[NUMBER_EXPONENT] = "has an exponent; write it in plain "
		                    "digits",
		[NUMBER_NOT_WHOLE] = "is not a whole number",
		[NUMBER_NEGATIVE] = "is negative",
		[NUMBER_TOO_LARGE] = "is too large",
		[NUMBER_NO_UNIT] = "has no unit",
		[NUMBER_BAD_UNIT] = "has an unknown unit",
		[NUMBER_TOO_SLOW] = "is below one request per hour, the "
		                    "slowest rate",
		[NUMBER_ZERO_PERIOD] = "has a period of 0",
	};

	if (why == NUMBER_NOT_NUMBER &&
	    (key->type == KEY_DURATION || key->type == KEY_TICK ||
	     key->type == KEY_INTERVAL)) {
		report(r, "key \"%s\": \"%.*s\" is not a duration; %s", key->name,
		       QUOTE_MAX, value, key->expect);
		return;
	}
	if (why == NUMBER_EMPTY) {
		report(r, "key \"%s\" has no value; %s", key->name, key->expect);
		return;
	}
	report(r, "key \"%s\": \"%.*s\" %s; %s", key->name, QUOTE_MAX, value,
	       what[why], key->expect);
}

/* A fleet setting (fleet_max=, fleet=, redis_timeout=, window=...,shared),
 * read by fleet_config.c; reported like every other setting. */
static bool parse_fleet(struct reporter *r, struct agile_rule *rule,
                        const struct key_spec *key, const char *value)
{
	char text[MESSAGE_MAX / 2];

	if (agile__fleet_setting(&rule->fleet, key->name, value, text,
	                        sizeof(text)) == 0)
		return true;
	report(r, "key \"%s\": %s", key->name, text);
	return false;
}

/* The rules_off bit of a KEY_RULE key: its field names its rule. */
static uint32_t rule_bit(const struct key_spec *key)
{
	if (key->offset == CONFIG_FIELD(delivered_share))
		return AGILE_RULE_DELIVERED;
	if (key->offset == CONFIG_FIELD(knee_ramp))
		return AGILE_RULE_KNEE_RAMP;
	if (key->offset == CONFIG_FIELD(probe_acceleration))
		return AGILE_RULE_PROBE;
	return AGILE_RULE_GOODPUT;
}

bool agile__rules_apply(struct reporter *r, struct agile_rule *rule,
                        const struct key_spec *key, const char *value)
{
	char *field = (char *)&rule->config + key->offset;
	enum number_error why = NUMBER_OK;
	uint64_t whole;
	int64_t ns;
	double decimal;

	switch (key->type) {
	case KEY_RATE:
		why = agile__lex_rate(value, &decimal);
		if (why == NUMBER_TOO_LARGE) {
			report(r, "key \"%s\": \"%.*s\" is too large; expected at "
			       "most %" PRId64 " requests per second", key->name,
			       QUOTE_MAX, value, RATE_LIMIT_MAX);
			return false;
		}
		if (why == NUMBER_OK)
			*(double *)(void *)field = decimal;
		break;
	case KEY_COUNT:
		why = agile__lex_whole(value, INT_MAX, &whole);
		if (why == NUMBER_OK)
			*(int *)(void *)field = (int)whole;
		break;
	case KEY_INTERVAL:
		if (agile__name_is(value, "off")) {
			*(int64_t *)(void *)field = AGILE_BASELINE_PROBE_OFF;
			break;
		}
		/* Otherwise a duration, as KEY_DURATION. */
		/* fall through */
	case KEY_DURATION:
		why = agile__lex_duration(value, &ns);
		if (why == NUMBER_OK)
			*(int64_t *)(void *)field = ns;
		break;
	case KEY_TICK:
		why = agile__lex_duration(value, &ns);
		if (why == NUMBER_OK && ns != 0 &&
		    (ns < AGILE_TICK_MIN_NS || ns > AGILE_TICK_MAX_NS)) {
			report(r, "key \"%s\": \"%.*s\" is %s; %s", key->name,
			       QUOTE_MAX, value, ns < AGILE_TICK_MIN_NS ?
			       "too short" : "too long", key->expect);
			return false;
		}
		if (why == NUMBER_OK)
			*(int64_t *)(void *)field = ns;
		break;
	case KEY_DECIMAL:
		why = agile__lex_decimal(value, &decimal);
		if (why == NUMBER_OK)
			*(double *)(void *)field = decimal;
		break;
	case KEY_RULE:
		if (agile__name_is(value, "off")) {
			rule->config.rules_off |= rule_bit(key);
			*(double *)(void *)field = 0;
			break;
		}
		why = agile__lex_decimal(value, &decimal);
		if (why == NUMBER_OK)
			*(double *)(void *)field = decimal;
		break;
	case KEY_ANCHOR:
		if (agile_anchor_parse(value, &rule->config.anchor) != 0) {
			report(r, "key \"anchor\": \"%.*s\" is not an anchor; %s",
			       QUOTE_MAX, value, key->expect);
			return false;
		}
		break;
	case KEY_PRESET:
		if (agile_preset_parse(value, &rule->config.preset) != 0) {
			report(r, "key \"preset\": \"%.*s\" is not a preset; %s",
			       QUOTE_MAX, value, key->expect);
			return false;
		}
		break;
	case KEY_PACE:
		if (agile__name_is(value, "request")) {
			rule->pace = AGILE_PACE_REQUEST;
		} else if (agile__name_is(value, "connect")) {
			rule->pace = AGILE_PACE_CONNECT;
		} else {
			report(r, "key \"pace\": \"%.*s\" is not a pace; %s",
			       QUOTE_MAX, value, key->expect);
			return false;
		}
		break;
	case KEY_INFLIGHT:
		if (agile__name_is(value, "auto")) {
			rule->inflight = AGILE_INFLIGHT_AUTO;
			break;
		}
		if (agile__name_is(value, "off")) {
			rule->inflight = AGILE_INFLIGHT_OFF;
			break;
		}
		why = agile__lex_decimal(value, &decimal);
		if (why == NUMBER_OK &&
		    !(decimal > 0 && decimal <= AGILE_INFLIGHT_GAIN_MAX)) {
			report(r, "key \"inflight\": \"%.*s\" is out of range; %s",
			       QUOTE_MAX, value, key->expect);
			return false;
		}
		if (why == NUMBER_OK)
			rule->inflight = decimal;
		break;
	case KEY_RESILIENCE:
		if (strcmp(key->name, "window") == 0 &&
		    agile__fleet_window_is_shared(value))
			return parse_fleet(r, rule, key, value);
		return agile__rules_resilience(r, rule, key, value);
	case KEY_FLEET:
		return parse_fleet(r, rule, key, value);
	}
	if (why != NUMBER_OK) {
		agile__rules_report_number(r, key, value, why);
		return false;
	}
	return true;
}

const char *agile__pace_name(enum agile_pace pace)
{
	return pace == AGILE_PACE_CONNECT ? "connect" : "request";
}

double agile__rule_inflight_gain(const struct agile_rule *rule)
{
	const struct agile_config *c = &rule->config;

	if (rule->inflight == AGILE_INFLIGHT_OFF)
		return 0;
	if (rule->inflight > 0)
		return rule->inflight;
	/* auto: where the law moves the rate, and not under the seed's law,
	 * which stays the seed's alone. */
	if (c->preset == AGILE_PRESET_SEED ||
	    (c->floor_rate > 0 && c->floor_rate >= c->max_rate))
		return 0;
	return AGILE_INFLIGHT_DEFAULT_GAIN;
}
