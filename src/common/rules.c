/*
 * rules.c - the destination rules: parsing AGILE_DEST_<NAME> values into
 * struct agile_rule, and matching a socket address against the rules.
 *
 * The parser is pure: it reads the strings it is given, writes the structs it
 * is given and reports every problem as one complete line through the
 * caller's callback.  It allocates nothing and does no I/O, so the preload can
 * run it in a constructor and the tests can drive it without a process.  The
 * one function that talks to the network, agile_rules_resolve_hosts(), is
 * kept apart and called by the preload when it chooses.
 *
 * The error policy is the product's promise about the ceiling: a setting that
 * cannot be read keeps its default and the rule stays in force, because a
 * typo in `floor` must not switch the limit off; only a rule whose
 * destination or `max` cannot be read is disabled, since there is nothing
 * to enforce without them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "goodbye.h"
#include "internal.h"
#include "rules.h"

#define DEST_PREFIX "AGILE_DEST_"
#define DEST_PREFIX_LEN (sizeof(DEST_PREFIX) - 1)
#define LISTEN_PREFIX "AGILE_LISTEN_"
#define LISTEN_PREFIX_LEN (sizeof(LISTEN_PREFIX) - 1)

/* The longest line a message can be; longer user text is cut short. */
#define MESSAGE_MAX 512
/* How much of a user's value a message quotes. */
#define QUOTE_MAX 64

/* Room for a rate as agile_rate_format() writes it. */
#define RATE_TEXT 48

static void format_rate(char out[RATE_TEXT], double rate)
{
	agile_rate_format(rate, out, RATE_TEXT);
}

/* A rate above one grant per nanosecond cannot be spaced by the bucket, whose
 * clock is in whole nanoseconds; such a `max` would silently mean no limit. */
#define RATE_LIMIT_MAX INT64_C(1000000000)

#define DEST_EXPECTED \
	"expected IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path"
/* A listener is matched by the address its socket is bound to, so neither
 * a host name nor a Unix path can name one. */
#define LISTEN_EXPECTED \
	"expected :PORT, IPv4:PORT, [IPv6]:PORT or CIDR:PORT, such as :8080"
/* concurrency_min=, _initial=, _max=: an adaptive cap's bounds. */
#define CONC_BOUND_EXPECTED \
	"expected a whole number of connections at once from 1 to " \
	AGILE_STRINGIFY(AGILE_STATE_PERMITS)
/* overload=, unreachable=, ignore=: HTTP statuses. */
#define STATUS_LIST_EXPECTED \
	"expected none or a comma-separated list of HTTP statuses from 100 " \
	"to 599 such as 502,504"
#define DURATION_EXPECTED "expected a duration such as 250us, 200ms or 1.5s"
#define RATE_FORMS \
	"requests per second such as 5 or 0.5, or a count per period such as " \
	"1/10s or 30/1m"
#define RATE_EXPECTED_MAX "expected a rate greater than 0: " RATE_FORMS
#define RATE_EXPECTED "expected a rate, 0 or more: " RATE_FORMS

/* ------------------------------------------------------------------------ */
/* Settings                                                                  */
/* ------------------------------------------------------------------------ */

enum key_type {
	KEY_RATE,     /* double requests per second, >= 0: see parse_rate */
	KEY_COUNT,    /* int ticks, >= 0 */
	KEY_DURATION, /* int64_t nanoseconds, with a unit */
	KEY_TICK,     /* a KEY_DURATION of 0 (unset) or from AGILE_TICK_MIN_NS
	                 to AGILE_TICK_MAX_NS */
	KEY_DECIMAL,  /* double, >= 0 */
	KEY_ANCHOR,
	KEY_PRESET,
	KEY_PACE,
	KEY_RESILIENCE, /* struct agile_resilience_config: see parse_resilience */
	KEY_FLEET      /* struct agile_fleet_rule: see fleet_config.h */
};

/* Which rules a key applies to. */
enum key_scope {
	SCOPE_BOTH = 0, /* destinations and listeners */
	SCOPE_DEST,     /* AGILE_DEST_ only */
	SCOPE_LISTEN    /* AGILE_LISTEN_ only */
};

struct key_spec {
	const char *name;
	enum key_type type;
	size_t offset;      /* into struct agile_config; unused for KEY_PACE
	                       and KEY_RESILIENCE */
	const char *expect; /* the "expected ..." tail of a message */
	enum key_scope scope;
};

#define CONFIG_FIELD(field) offsetof(struct agile_config, field)
#define AGILE_STRINGIFY_(x) #x
#define AGILE_STRINGIFY(x) AGILE_STRINGIFY_(x)

/* The order is the order of agilepreload(7) and of the list printed when an
 * unknown key has no close match. */
static const struct key_spec keys[] = {
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
	{ "pace", KEY_PACE, 0, "expected request or connect", SCOPE_DEST },
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
	{ "quota", KEY_RESILIENCE, 0,
	  "expected N/PERIOD[,align] such as 1000/1d or 20/s,align",
	  SCOPE_DEST },
	{ "window", KEY_RESILIENCE, 0,
	  "expected N/SPAN such as 100/1m, with N from 1 to "
	  AGILE_STRINGIFY(AGILE_STATE_WINDOW_MAX), SCOPE_DEST },
	{ "over", KEY_RESILIENCE, 0, "expected refuse or wait", SCOPE_DEST },
	{ "proto", KEY_RESILIENCE, 0,
	  "expected http, redis, postgres, mysql, memcached or none",
	  SCOPE_BOTH },
	{ "exclude", KEY_RESILIENCE, 0,
	  "expected a comma-separated list of at most "
	  AGILE_STRINGIFY(AGILE_EXCLUDE_MAX) " paths such as /health,/metrics, "
	  "each at most 47 characters",
	  SCOPE_BOTH },
	{ "connect_timeout", KEY_RESILIENCE, 0, DURATION_EXPECTED, SCOPE_DEST },
	{ "retry", KEY_RESILIENCE, 0,
	  "expected a whole number of retries from 0 to 100", SCOPE_DEST },
	{ "key_rate", KEY_RESILIENCE, 0,
	  "expected R[,burst=B]: a decimal number of connects per second per "
	  "address greater than 0, B 1 or more (the rate by default)",
	  SCOPE_DEST },
	{ "keys", KEY_RESILIENCE, 0,
	  "expected a whole number of addresses from 1 to 10000000",
	  SCOPE_DEST },
	{ "shed", KEY_RESILIENCE, 0, "expected cpu or cpu:PERMILLE with "
	  "PERMILLE from 1 to 999, such as cpu:800", SCOPE_LISTEN },
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
	/* The fleet keys (fleet_config.h; window=N/SPAN,shared is read there
	 * too); their expectations are fleet_config.c's. */
	{ "fleet_max", KEY_FLEET, 0, "", SCOPE_DEST },
	{ "fleet", KEY_FLEET, 0, "", SCOPE_DEST },
	{ "redis_timeout", KEY_FLEET, 0, "", SCOPE_DEST },
};



#define KEY_COUNT_ALL (sizeof(keys) / sizeof(keys[0]))
#define KEY_MAX (&keys[0]) /* max, the one required key */
#define FIRST_RESILIENCE_KEY "concurrency"


/* ------------------------------------------------------------------------ */
/* Reporting                                                                 */
/* ------------------------------------------------------------------------ */

/* Where messages go while one variable is parsed. */
/* The kinds of problem a deferring reporter keeps apart (each further
 * kind is passed on at once). */
#define REPORT_KINDS 8

struct reporter {
	const char *var; /* "AGILE_DEST_API", the prefix of every message */
	agile_rules_error_fn fn;
	void *arg;
	int errors;
	/* A rule's reporter defers: a problem repeated in one variable (a
	 * key given 9,999 times, 30,000 stray words) is one line, its first
	 * occurrence with the count, at report_flush.  Two messages are the
	 * same problem when they are equal but for what they quote (the
	 * key, the value, the word). */
	bool defer;
	int kinds;
	struct {
		int count;
		char line[MESSAGE_MAX];
	} kind[REPORT_KINDS];
};

/* Are messages a and b equal outside their quoted ("...") parts? */
static bool same_problem(const char *a, const char *b)
{
	for (;;) {
		if (*a == '"' && *b == '"') {
			a = strchr(a + 1, '"');
			b = strchr(b + 1, '"');
			if (a == NULL || b == NULL)
				return a == b;
		}
		if (*a != *b)
			return false;
		if (*a == '\0')
			return true;
		a++;
		b++;
	}
}

/* Format one message, prefix it with the variable's name and pass it on,
 * or keep it for report_flush. */
__attribute__((format(printf, 2, 3)))
static void report(struct reporter *r, const char *fmt, ...)
{
	char line[MESSAGE_MAX];
	int n, k = 0;
	va_list ap;

	r->errors++;
	n = snprintf(line, sizeof(line), "%s: ", r->var);
	if (n >= 0 && (size_t)n < sizeof(line)) {
		va_start(ap, fmt);
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	if (r->defer) {
		while (k < r->kinds && !same_problem(r->kind[k].line, line))
			k++;
		if (k < r->kinds) {
			r->kind[k].count++;
			return;
		}
	}
	if (r->defer && k < REPORT_KINDS) {
		r->kind[k].count = 1;
		memcpy(r->kind[k].line, line, sizeof(line));
		r->kinds++;
		return;
	}
	if (r->fn != NULL)
		r->fn(line, r->arg);
}

/* Pass on what a deferring reporter kept, one line per kind, in the order
 * first seen; returns the errors counted. */
static int report_flush(struct reporter *r)
{
	for (int k = 0; k < r->kinds; k++) {
		char *line = r->kind[k].line;
		size_t n = strlen(line);

		if (r->kind[k].count > 1)
			snprintf(line + n, MESSAGE_MAX - n, " (and %d more like "
			         "it)", r->kind[k].count - 1);
		if (r->fn != NULL)
			r->fn(line, r->arg);
	}
	r->kinds = 0;
	return r->errors;
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------ */

/* Why a number could not be read; each has its own message. */
enum number_error {
	NUMBER_OK = 0,
	NUMBER_EMPTY,        /* nothing after the `=` */
	NUMBER_NOT_NUMBER,   /* not digits at all */
	NUMBER_EXPONENT,     /* "1e3": digits, but with an exponent */
	NUMBER_NOT_WHOLE,    /* a decimal where a whole number is needed */
	NUMBER_NEGATIVE,
	NUMBER_TOO_LARGE,
	NUMBER_NO_UNIT,      /* a duration without its unit */
	NUMBER_BAD_UNIT,     /* a duration with a unit we do not know */
	NUMBER_TOO_SLOW,     /* a rate below AGILE_MIN_RATE */
	NUMBER_ZERO_PERIOD   /* a rate per a period of 0 */
};

/*
 * Split "12.50ms" into its digits and what follows.  Accepts an optional
 * leading '-' (so a negative number is reported as such, not as garbage),
 * digits, and an optional '.' with more digits; at least one digit overall.
 * Locale-independent on purpose: the preload may parse after the program has
 * called setlocale(), where strtod() would want a decimal comma.
 */
struct decimal {
	bool negative;
	const char *int_digits;
	size_t int_len;
	const char *frac_digits;
	size_t frac_len;
	const char *rest; /* the first character after the number */
};

static bool scan_decimal(const char *text, struct decimal *d)
{
	const char *p = text;

	memset(d, 0, sizeof(*d));
	if (*p == '-') {
		d->negative = true;
		p++;
	}
	d->int_digits = p;
	while (isdigit((unsigned char)*p))
		p++;
	d->int_len = (size_t)(p - d->int_digits);
	if (*p == '.') {
		p++;
		d->frac_digits = p;
		while (isdigit((unsigned char)*p))
			p++;
		d->frac_len = (size_t)(p - d->frac_digits);
	}
	d->rest = p;
	return d->int_len + d->frac_len > 0;
}

/* True when what follows the digits is an exponent ("e3", "E-2"): a
 * number written in a notation the parser does not read, which deserves
 * a better word than "not a number". */
static bool is_exponent(const char *rest)
{
	if (*rest != 'e' && *rest != 'E')
		return false;
	rest++;
	if (*rest == '+' || *rest == '-')
		rest++;
	if (!isdigit((unsigned char)*rest))
		return false;
	while (isdigit((unsigned char)*rest))
		rest++;
	return *rest == '\0';
}

/* True when every digit of the number is zero ("-0" is not negative). */
static bool decimal_is_zero(const struct decimal *d)
{
	for (size_t i = 0; i < d->int_len; i++)
		if (d->int_digits[i] != '0')
			return false;
	for (size_t i = 0; i < d->frac_len; i++)
		if (d->frac_digits[i] != '0')
			return false;
	return true;
}

/* A plain number: digits with an optional fraction and nothing after them
 * (an exponent named as such), not below zero. */
static enum number_error scan_plain_decimal(const char *text,
                                            struct decimal *d)
{
	if (!scan_decimal(text, d))
		return NUMBER_NOT_NUMBER;
	if (*d->rest != '\0')
		return is_exponent(d->rest) ? NUMBER_EXPONENT
		                            : NUMBER_NOT_NUMBER;
	if (d->negative && !decimal_is_zero(d))
		return NUMBER_NEGATIVE;
	return NUMBER_OK;
}

/* Accumulate decimal digits into *value; false on overflow past `limit`. */
static bool accumulate(const char *digits, size_t len, uint64_t limit,
                       uint64_t *value)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t digit = (uint64_t)(digits[i] - '0');
		if (*value > (limit - digit) / 10)
			return false;
		*value = *value * 10 + digit;
	}
	return true;
}

static enum number_error parse_whole(const char *text, uint64_t limit,
                                     uint64_t *out)
{
	enum number_error why;
	struct decimal d;
	uint64_t value = 0;

	if (*text == '\0')
		return NUMBER_EMPTY;
	why = scan_plain_decimal(text, &d);
	if (why != NUMBER_OK)
		return why;
	if (d.frac_digits != NULL)
		return NUMBER_NOT_WHOLE;
	if (!accumulate(d.int_digits, d.int_len, limit, &value))
		return NUMBER_TOO_LARGE;
	*out = value;
	return NUMBER_OK;
}

/* Decimals are knobs near 1 (gains, fractions, factors); anything past a
 * million is a typo, and the bound keeps the arithmetic exact-ish. */
#define DECIMAL_LIMIT 1000000.0

static enum number_error parse_decimal(const char *text, double *out)
{
	enum number_error why;
	struct decimal d;
	double value = 0.0;
	double scale = 1.0;

	if (*text == '\0')
		return NUMBER_EMPTY;
	why = scan_plain_decimal(text, &d);
	if (why != NUMBER_OK)
		return why;
	for (size_t i = 0; i < d.int_len; i++) {
		value = value * 10.0 + (d.int_digits[i] - '0');
		if (value > DECIMAL_LIMIT)
			return NUMBER_TOO_LARGE;
	}
	for (size_t i = 0; i < d.frac_len && i < 17; i++) {
		scale /= 10.0;
		value += (d.frac_digits[i] - '0') * scale;
	}
	*out = value;
	return NUMBER_OK;
}

static const struct {
	const char *suffix;
	int64_t ns;
} duration_units[] = {
	{ "ns", 1 },
	{ "us", AGILE_NS_PER_US },
	{ "ms", AGILE_NS_PER_MS },
	{ "s", AGILE_NS_PER_S },
	{ "m", 60 * AGILE_NS_PER_S },
	{ "h", 3600 * AGILE_NS_PER_S },
};

/*
 * Durations are computed in integers: the whole part times the unit, plus the
 * fraction's digits scaled by the unit, so "1.5s" is exactly 1500000000 ns
 * and "0.1s" does not come out as 99999999.  Fractions of a nanosecond are
 * dropped.
 */
static enum number_error parse_duration(const char *text, int64_t *out_ns)
{
	struct decimal d;
	int64_t unit = 0;
	uint64_t whole = 0;
	uint64_t frac_ns = 0;
	uint64_t frac_scale = 1;

	if (*text == '\0')
		return NUMBER_EMPTY;
	if (!scan_decimal(text, &d))
		return NUMBER_NOT_NUMBER;
	if (*d.rest == '\0')
		return NUMBER_NO_UNIT;
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]);
	     i++)
		if (strcmp(d.rest, duration_units[i].suffix) == 0)
			unit = duration_units[i].ns;
	if (unit == 0)
		return NUMBER_BAD_UNIT;
	if (d.negative && !decimal_is_zero(&d))
		return NUMBER_NEGATIVE;
	if (!accumulate(d.int_digits, d.int_len, (uint64_t)INT64_MAX, &whole) ||
	    whole > (uint64_t)(INT64_MAX / unit))
		return NUMBER_TOO_LARGE;
	/* The unit is at most 3.6e12 ns, so 13 fraction digits reach below a
	 * nanosecond; later ones cannot change the result.  The product is
	 * taken in 128 bits: 13 digits times an hour is past 64. */
	for (size_t i = 0; i < d.frac_len && i < 13; i++) {
		frac_ns = frac_ns * 10 + (uint64_t)(d.frac_digits[i] - '0');
		frac_scale *= 10;
	}
	frac_ns = (uint64_t)((unsigned __int128)frac_ns * (uint64_t)unit /
	                     frac_scale);
	if (frac_ns > (uint64_t)INT64_MAX - whole * (uint64_t)unit)
		return NUMBER_TOO_LARGE;
	*out_ns = (int64_t)(whole * (uint64_t)unit + frac_ns);
	return NUMBER_OK;
}

int agile_parse_duration(const char *text, int64_t *out_ns)
{
	int64_t ns;

	if (text == NULL || parse_duration(text, &ns) != NUMBER_OK)
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */
/* ------------------------------------------------------------------------ */

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
		int distance = edit_distance(word, len, keys[i].name);
		if (distance < best_distance) {
			best_distance = distance;
			best = keys[i].name;
		}
	}
	if (best_distance > 2 || (size_t)best_distance * 2 >= len + (len == 1))
		return NULL;
	return best;
}

static const struct key_spec *find_key(const char *word, size_t len)
{
	for (size_t i = 0; i < KEY_COUNT_ALL; i++)
		if (strlen(keys[i].name) == len &&
		    memcmp(keys[i].name, word, len) == 0)
			return &keys[i];
	return NULL;
}

static void report_unknown_key(struct reporter *r, const char *word,
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
	     strcmp(keys[i].name, FIRST_RESILIENCE_KEY) != 0; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
		                         "%s%s", i == 0 ? "" : ", ",
		                         keys[i].name);
	report(r, "unknown key \"%.*s\"; expected one of %s, or a resilience "
	       "key such as concurrency, breaker, quota, window or proto (see "
	       "agilepreload(7))", (int)len, word, list);
}

/* The message for a number that could not be read, e.g.
 *   key "max": "fast" is not a number; expected ... */
static void report_number(struct reporter *r, const struct key_spec *key,
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
	    (key->type == KEY_DURATION || key->type == KEY_TICK)) {
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

/* ------------------------------------------------------------------------ */
/* Resilience settings                                                       */
/* ------------------------------------------------------------------------ */

/*
 * A period or span: a duration (see parse_duration) that may also be in
 * hours (h) or days (d), or a bare unit meaning one of it ("s", "m", "h",
 * "d"), so quota=1000/d and quota=1000/1d say the same.
 */
static enum number_error parse_period(const char *text, int64_t *out_ns)
{
	char buf[64];
	size_t len = strlen(text);
	int64_t scale = 1;
	int64_t ns;
	enum number_error why;

	if (len == 0)
		return NUMBER_EMPTY;
	if (len + 2 >= sizeof(buf))
		return NUMBER_NOT_NUMBER;
	if (!isdigit((unsigned char)text[0]) && text[0] != '.' &&
	    text[0] != '-')
		snprintf(buf, sizeof(buf), "1%s", text);
	else
		snprintf(buf, sizeof(buf), "%s", text);
	len = strlen(buf);
	if (buf[len - 1] == 'h' || buf[len - 1] == 'd') {
		scale = buf[len - 1] == 'h' ? 3600 : 86400;
		buf[len - 1] = 's';
	}
	why = parse_duration(buf, &ns);
	if (why != NUMBER_OK)
		return why;
	if (ns > INT64_MAX / scale)
		return NUMBER_TOO_LARGE;
	*out_ns = ns * scale;
	return NUMBER_OK;
}

/* "N/PERIOD" with N in [1, max_count]; the text after PERIOD (from the
 * first ',') is left in *rest, or NULL. */
static bool parse_count_per(const char *value, int64_t max_count,
                            int32_t *count, int64_t *period_ns,
                            const char **rest)
{
	char buf[96];
	char *slash, *comma;
	uint64_t n;

	if (strlen(value) >= sizeof(buf))
		return false;
	strcpy(buf, value);
	*rest = NULL;
	comma = strchr(buf, ',');
	if (comma != NULL) {
		*comma = '\0';
		*rest = value + (comma - buf) + 1;
	}
	slash = strchr(buf, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	if (parse_whole(buf, (uint64_t)max_count, &n) != NUMBER_OK || n == 0)
		return false;
	if (parse_period(slash + 1, period_ns) != NUMBER_OK || *period_ns <= 0)
		return false;
	*count = (int32_t)n;
	return true;
}

/*
 * A rate: requests per second in plain digits ("5", "0.5"), or a whole count
 * per period written as quota= writes one ("1/10s", "30/1m", "1/h").  Either
 * way it is at most RATE_LIMIT_MAX and, unless 0, at least AGILE_MIN_RATE:
 * one request per hour.  The count per period is divided once, in double, so
 * "1/2s" is exactly 0.5 and "1/1h" exactly AGILE_MIN_RATE.
 */
static enum number_error parse_rate(const char *text, double *out)
{
	const char *slash = strchr(text, '/');
	enum number_error why;
	struct decimal d;
	uint64_t whole = 0, frac = 0, frac_scale = 1;
	double rate;

	if (*text == '\0')
		return NUMBER_EMPTY;
	if (slash != NULL) {
		char count_text[32];
		size_t len = (size_t)(slash - text);
		int64_t period_ns;

		if (len >= sizeof(count_text))
			return NUMBER_TOO_LARGE;
		memcpy(count_text, text, len);
		count_text[len] = '\0';
		why = parse_whole(count_text, (uint64_t)RATE_LIMIT_MAX, &whole);
		if (why == NUMBER_EMPTY)
			return NUMBER_NOT_NUMBER;
		if (why != NUMBER_OK)
			return why;
		why = parse_period(slash + 1, &period_ns);
		if (why == NUMBER_EMPTY)
			return NUMBER_NOT_NUMBER;
		if (why != NUMBER_OK)
			return why;
		if (period_ns <= 0)
			return NUMBER_ZERO_PERIOD;
		rate = (double)whole * (double)AGILE_NS_PER_S / (double)period_ns;
	} else {
		why = scan_plain_decimal(text, &d);
		if (why != NUMBER_OK)
			return why;
		if (!accumulate(d.int_digits, d.int_len,
		                (uint64_t)RATE_LIMIT_MAX, &whole))
			return NUMBER_TOO_LARGE;
		/* 17 digits are past a double's precision; later ones cannot
		 * change the value. */
		for (size_t i = 0; i < d.frac_len && i < 17; i++) {
			frac = frac * 10 + (uint64_t)(d.frac_digits[i] - '0');
			frac_scale *= 10;
		}
		rate = (double)whole + (double)frac / (double)frac_scale;
	}
	if (rate > (double)RATE_LIMIT_MAX)
		return NUMBER_TOO_LARGE;
	if (rate > 0 && rate < AGILE_MIN_RATE)
		return NUMBER_TOO_SLOW;
	*out = rate;
	return NUMBER_OK;
}

/* A positive duration into *out_ns, or a report. */
static bool resilience_duration(struct reporter *r, const struct key_spec *key,
                                const char *value, int64_t *out_ns)
{
	int64_t ns;
	enum number_error why = parse_duration(value, &ns);

	if (why != NUMBER_OK) {
		report_number(r, key, value, why);
		return false;
	}
	if (ns <= 0) {
		report(r, "key \"%s\": \"%.*s\" is not greater than 0; %s",
		       key->name, QUOTE_MAX, value, key->expect);
		return false;
	}
	*out_ns = ns;
	return true;
}

/* The paths of exclude=: each begins with '/', none is empty or too long. */
static bool parse_exclude(const char *value, struct agile_resilience_config *c)
{
	const char *p = value;
	uint32_t n = 0;

	if (*value == '\0')
		return false;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");

		if (len == 0 || p[0] != '/' || len >= AGILE_EXCLUDE_LEN ||
		    n == AGILE_EXCLUDE_MAX)
			return false;
		memcpy(c->exclude[n], p, len);
		c->exclude[n][len] = '\0';
		n++;
		p += len;
		/* A trailing comma is an empty path, not a separator. */
		if (*p == ',' && *++p == '\0')
			return false;
	}
	c->exclude_count = n;
	return true;
}

/* concurrency=N | adaptive | adaptive,law=NAME */
static bool parse_concurrency(const char *value,
                              struct agile_resilience_config *c)
{
	enum agile_law_kind law = AGILE_LAW_AGILE;
	uint64_t n;

	if (agile__name_starts(value, "adaptive")) {
		if (value[8] == ',') {
			if (!agile__name_starts(value + 9, "law=") ||
			    agile_law_parse(value + 13, &law) != 0)
				return false;
		} else if (value[8] != '\0') {
			return false;
		}
		c->conc_mode = AGILE_CONC_ADAPTIVE;
		c->conc_law = (uint32_t)law;
		return true;
	}
	if (parse_whole(value, AGILE_STATE_PERMITS, &n) != NUMBER_OK || n == 0)
		return false;
	c->conc_mode = AGILE_CONC_FIXED;
	c->conc_limit = (int64_t)n;
	return true;
}

/* The characters of an HTTP field name (RFC 9110's tchar). */
#define HEADER_NAME_CHARS \
	"!#$%&'*+-.^_`|~0123456789" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* overload=, unreachable=, ignore=: "none" or statuses from 100 to 599;
 * the list is given (its default no longer applies) only when all of it
 * reads. */
static bool parse_status_list(const char *value,
                              struct agile_resilience_config *c,
                              enum agile_status_list list)
{
	uint64_t bits[AGILE_STATUS_WORDS] = { 0 };
	const char *p = value;

	if (!agile__name_is(value, "none")) {
		for (;;) {
			int status = 0, digits = 0;

			while (*p >= '0' && *p <= '9' && digits < 4) {
				status = status * 10 + (*p++ - '0');
				digits++;
			}
			if (digits != 3 || status < 100 || status > 599 ||
			    (*p != ',' && *p != '\0'))
				return false;
			bits[(status - 100) / 64] |= UINT64_C(1)
			                             << ((status - 100) % 64);
			if (*p++ == '\0')
				break;
		}
	}
	memcpy(c->status_list[list], bits, sizeof(bits));
	c->status_lists |= 1u << list;
	return true;
}

/* cache_hit=NAME[,NAME]...: header names (RFC 9110's tchar). */
static bool parse_cache_hit(const char *value,
                            struct agile_resilience_config *c)
{
	char names[AGILE_CACHE_HIT_MAX][AGILE_CACHE_HIT_LEN];
	uint32_t count = 0;
	const char *p = value;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= AGILE_CACHE_HIT_LEN ||
		    count == AGILE_CACHE_HIT_MAX ||
		    strspn(p, HEADER_NAME_CHARS) < n)
			return false;
		memcpy(names[count], p, n);
		names[count++][n] = '\0';
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	memcpy(c->cache_hit, names, sizeof(names));
	c->cache_hit_count = count;
	return true;
}

/* client_rate=R[,burst=B]: R > 0 requests a second per client, B >= 1. */
static bool parse_client_rate(const char *value,
                              struct agile_resilience_config *c)
{
	char rate[32];
	const char *comma = strchr(value, ',');
	size_t n = comma != NULL ? (size_t)(comma - value) : strlen(value);
	double r, burst = 0;

	if (n >= sizeof(rate))
		return false;
	memcpy(rate, value, n);
	rate[n] = '\0';
	if (parse_decimal(rate, &r) != NUMBER_OK || !(r > 0) || r > 1e9)
		return false;
	if (comma != NULL &&
	    (!agile__name_starts(comma + 1, "burst=") ||
	     parse_decimal(comma + 7, &burst) != NUMBER_OK || !(burst >= 1) ||
	     burst > 1e9))
		return false;
	c->client_rate = r;
	c->client_burst = burst;
	return true;
}

/*
 * One key of struct agile_resilience_config.  Like every other setting, a
 * value that cannot be read is reported and the key keeps its default; the
 * rule stays in force.
 */
static bool parse_resilience(struct reporter *r, struct agile_rule *rule,
                             const struct key_spec *key, const char *value)
{
	struct agile_resilience_config *c = &rule->resilience;
	const char *name = key->name;
	const char *rest;
	enum number_error why;
	uint64_t whole;
	double decimal;
	bool ok = true;

	if (*value == '\0') {
		report(r, "key \"%s\" has no value; %s", name, key->expect);
		return false;
	}
	if (strcmp(name, "concurrency") == 0) {
		enum agile_law_kind law;

		/* A misspelt law is the likely mistake: name it, not the
		 * whole syntax. */
		if (agile__name_starts(value, "adaptive,law=") &&
		    agile_law_parse(value + 13, &law) != 0) {
			report(r, "key \"concurrency\": law \"%.*s\" is not "
			       "known; expected agile, aimd, vegas or gradient",
			       QUOTE_MAX, value + 13);
			return false;
		}
		ok = parse_concurrency(value, c);
	} else if (strcmp(name, "law") == 0) {
		enum agile_law_kind law;

		/* A listener's cap is always adaptive: this picks its law. */
		ok = agile_law_parse(value, &law) == 0;
		if (ok)
			c->conc_law = (uint32_t)law;
	} else if (strcmp(name, "acquire_timeout") == 0) {
		return resilience_duration(r, key, value, &c->acquire_timeout_ns);
	} else if (strcmp(name, "breaker") == 0) {
		ok = agile__name_is(value, "sre");
		c->breaker = ok;
	} else if (strcmp(name, "breaker_k") == 0) {
		why = parse_decimal(value, &decimal);
		if (why != NUMBER_OK) {
			report_number(r, key, value, why);
			return false;
		}
		ok = decimal >= 1.0;
		if (ok)
			c->breaker_k = decimal;
	} else if (strcmp(name, "breaker_protection") == 0) {
		why = parse_decimal(value, &decimal);
		if (why != NUMBER_OK) {
			report_number(r, key, value, why);
			return false;
		}
		c->breaker_protection = decimal;
	} else if (strcmp(name, "breaker_window") == 0) {
		return resilience_duration(r, key, value, &c->breaker_window_ns);
	} else if (strcmp(name, "quota") == 0) {
		ok = parse_count_per(value, INT32_MAX, &c->quota,
		                     &c->quota_period_ns, &rest);
		if (ok && rest != NULL) {
			ok = agile__name_is(rest, "align");
			c->quota_align = ok;
		}
		if (!ok)
			c->quota = 0;
	} else if (strcmp(name, "window") == 0) {
		ok = parse_count_per(value, AGILE_STATE_WINDOW_MAX, &c->window,
		                     &c->window_span_ns, &rest) && rest == NULL;
		if (!ok)
			c->window = 0;
	} else if (strcmp(name, "over") == 0) {
		if (agile__name_is(value, "refuse"))
			c->over = AGILE_OVER_REFUSE;
		else if (agile__name_is(value, "wait"))
			c->over = AGILE_OVER_WAIT;
		else
			ok = false;
	} else if (strcmp(name, "proto") == 0) {
		if (agile__name_is(value, "http"))
			c->proto = AGILE_PROTO_HTTP;
		else if (agile__name_is(value, "redis"))
			c->proto = AGILE_PROTO_REDIS;
		else if (agile__name_is(value, "postgres"))
			c->proto = AGILE_PROTO_POSTGRES;
		else if (agile__name_is(value, "mysql"))
			c->proto = AGILE_PROTO_MYSQL;
		else if (agile__name_is(value, "memcached"))
			c->proto = AGILE_PROTO_MEMCACHED;
		else if (agile__name_is(value, "none"))
			c->proto = AGILE_PROTO_NONE;
		else
			ok = false;
	} else if (strcmp(name, "exclude") == 0) {
		ok = parse_exclude(value, c);
		if (!ok)
			c->exclude_count = 0;
	} else if (strcmp(name, "connect_timeout") == 0) {
		return resilience_duration(r, key, value, &c->connect_timeout_ns);
	} else if (strcmp(name, "retry") == 0) {
		why = parse_whole(value, 100, &whole);
		if (why != NUMBER_OK) {
			report_number(r, key, value, why);
			return false;
		}
		c->retry = (int32_t)whole;
	} else if (strcmp(name, "key_rate") == 0) {
		char rate[32];
		const char *comma = strchr(value, ',');
		size_t n = comma != NULL ? (size_t)(comma - value)
		                         : strlen(value);
		double burst = 0;

		ok = n < sizeof(rate);
		if (ok) {
			memcpy(rate, value, n);
			rate[n] = '\0';
			why = parse_decimal(rate, &decimal);
			if (why != NUMBER_OK && comma == NULL) {
				report_number(r, key, value, why);
				return false;
			}
			ok = why == NUMBER_OK && decimal > 0;
		}
		/* The seed's burst: tokens an address may save up. */
		if (ok && comma != NULL)
			ok = agile__name_starts(comma + 1, "burst=") &&
			     parse_decimal(comma + 7, &burst) == NUMBER_OK &&
			     burst >= 1 && burst <= 1e9;
		if (ok) {
			c->key_rate = decimal;
			c->key_burst = burst;
		}
	} else if (strcmp(name, "keys") == 0) {
		why = parse_whole(value, 10000000, &whole);
		if (why != NUMBER_OK) {
			report_number(r, key, value, why);
			return false;
		}
		ok = whole > 0;
		if (ok)
			c->keys = (int64_t)whole;
	} else if (strcmp(name, "shed") == 0) {
		ok = agile__name_starts(value, "cpu");
		if (ok && value[3] == ':') {
			ok = parse_whole(value + 4, 999, &whole) == NUMBER_OK &&
			     whole > 0;
			if (ok)
				c->shed_cpu_permille = (int32_t)whole;
		} else if (ok && value[3] != '\0') {
			ok = false;
		}
		c->shed_cpu = ok;
	} else if (strcmp(name, "shed_response") == 0) {
		if (agile__name_is(value, "close")) {
			c->shed_response = AGILE_SHED_CLOSE;
		} else {
			ok = parse_whole(value, 599, &whole) == NUMBER_OK &&
			     whole >= 400;
			if (ok) {
				c->shed_response = AGILE_SHED_HTTP;
				c->shed_status = (int32_t)whole;
			}
		}
	} else if (strcmp(name, "retry_after") == 0) {
		return resilience_duration(r, key, value, &c->retry_after_ns);
	} else if (strcmp(name, "concurrency_min") == 0 ||
	           strcmp(name, "concurrency_initial") == 0 ||
	           strcmp(name, "concurrency_max") == 0) {
		ok = parse_whole(value, AGILE_STATE_PERMITS, &whole) ==
		     NUMBER_OK && whole >= 1;
		if (ok && strcmp(name, "concurrency_min") == 0)
			c->conc_min = (int32_t)whole;
		else if (ok && strcmp(name, "concurrency_initial") == 0)
			c->conc_initial = (int32_t)whole;
		else if (ok)
			c->conc_max = (int32_t)whole;
	} else if (strcmp(name, "overload") == 0) {
		ok = parse_status_list(value, c, AGILE_STATUS_OVERLOAD);
	} else if (strcmp(name, "unreachable") == 0) {
		ok = parse_status_list(value, c, AGILE_STATUS_UNREACHABLE);
	} else if (strcmp(name, "ignore") == 0) {
		ok = parse_status_list(value, c, AGILE_STATUS_IGNORE);
	} else if (strcmp(name, "cache_hit") == 0) {
		ok = parse_cache_hit(value, c);
	} else if (strcmp(name, "client_rate") == 0) {
		ok = parse_client_rate(value, c);
	} else if (strcmp(name, "client_prefix") == 0) {
		ok = parse_whole(value, 128, &whole) == NUMBER_OK && whole >= 1;
		if (ok)
			c->client_prefix = (int32_t)whole;
	} else if (strcmp(name, "client_key") == 0) {
		const char *header = value + strlen("header:");

		ok = agile__name_starts(value, "header:") && *header != '\0' &&
		     strlen(header) < sizeof(c->client_header) &&
		     strspn(header, HEADER_NAME_CHARS) == strlen(header);
		if (ok)
			memcpy(c->client_header, header, strlen(header) + 1);
	} else if (strcmp(name, "clients") == 0) {
		ok = parse_whole(value, AGILE_CLIENTS_MAX, &whole) == NUMBER_OK &&
		     whole >= 1;
		if (ok)
			c->clients = (uint32_t)whole;
	}
	if (!ok)
		report(r, "key \"%s\": \"%.*s\" is not valid; %s", name,
		       QUOTE_MAX, value, key->expect);
	return ok;
}

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

/*
 * What the resilience keys say together, checked once every key is read:
 * settings that cannot apply to the rule as written are reported (and,
 * where keeping them would mislead, dropped).
 */
static void check_resilience(struct reporter *r, struct agile_rule *rule)
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
		       "only; expected http or none on a listener",
		       agile__goodbye_proto_name(c->proto));
		c->proto = AGILE_PROTO_NONE;
	}
	if (c->exclude_count > 0 && c->proto != AGILE_PROTO_HTTP)
		report(r, "key \"exclude\" has no effect without proto=http; "
		       "expected proto=http as well");
	check_verdicts(r, c);
	check_conc_bounds(r, c);
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

/* A fleet setting (fleet_max=, fleet=, redis_timeout=, window=...,shared),
 * read by fleet_config.c; reported like every other setting. */
static bool parse_fleet(struct reporter *r, struct agile_rule *rule,
                        const struct key_spec *key, const char *value)
{
	char text[MESSAGE_MAX / 2];

	if (agile_fleet_setting(&rule->fleet, key->name, value, text,
	                        sizeof(text)) == 0)
		return true;
	report(r, "key \"%s\": %s", key->name, text);
	return false;
}

/* Store one setting into the rule.  On any error the field keeps the value
 * it had (the default, zero) and the error is reported. */
static bool apply_setting(struct reporter *r, struct agile_rule *rule,
                          const struct key_spec *key, const char *value)
{
	char *field = (char *)&rule->config + key->offset;
	enum number_error why = NUMBER_OK;
	uint64_t whole;
	int64_t ns;
	double decimal;

	switch (key->type) {
	case KEY_RATE:
		why = parse_rate(value, &decimal);
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
		why = parse_whole(value, INT_MAX, &whole);
		if (why == NUMBER_OK)
			*(int *)(void *)field = (int)whole;
		break;
	case KEY_DURATION:
		why = parse_duration(value, &ns);
		if (why == NUMBER_OK)
			*(int64_t *)(void *)field = ns;
		break;
	case KEY_TICK:
		why = parse_duration(value, &ns);
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
		why = parse_decimal(value, &decimal);
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
	case KEY_RESILIENCE:
		if (strcmp(key->name, "window") == 0 &&
		    agile_fleet_window_is_shared(value))
			return parse_fleet(r, rule, key, value);
		return parse_resilience(r, rule, key, value);
	case KEY_FLEET:
		return parse_fleet(r, rule, key, value);
	}
	if (why != NUMBER_OK) {
		report_number(r, key, value, why);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Destinations                                                              */
/* ------------------------------------------------------------------------ */

/* Why a destination could not be read, beyond the generic message. */
enum dest_error {
	DEST_OK = 0,
	DEST_UNREADABLE, /* the generic "cannot read destination" */
	DEST_BAD_PORT,   /* a number outside 1..65535 */
	DEST_BAD_PREFIX, /* a prefix length past the address family's bits */
	DEST_TOO_LONG,   /* a unix path longer than sun_path */
	DEST_NO_PORT,    /* an address or name with no ":PORT" after it */
	DEST_BRACKETS,   /* an IPv6 address without its brackets */
	DEST_PREFIX_OUTSIDE, /* "[fd00::]/8:443": the length outside them */
	DEST_NOT_LISTENABLE, /* a listener given a host name or a unix: path */
	DEST_NUMERIC_FORM,   /* "0x7f.0.0.1": IPv4, not in dotted decimal */
	DEST_HOST_BITS       /* read, but with bits set past its prefix */
};

/* PORT := 1..65535 | *  ->  0 for `*`. */
static enum dest_error parse_port(const char *text, int *port)
{
	uint64_t value;

	if (strcmp(text, "*") == 0) {
		*port = 0;
		return DEST_OK;
	}
	switch (parse_whole(text, UINT32_MAX, &value)) {
	case NUMBER_OK:
		break;
	case NUMBER_TOO_LARGE:
	case NUMBER_NEGATIVE:
		return DEST_BAD_PORT;
	default:
		return DEST_UNREADABLE;
	}
	if (value == 0 || value > 65535)
		return DEST_BAD_PORT;
	*port = (int)value;
	return DEST_OK;
}

/* "/len" after an address, or nothing: the full length. */
static enum dest_error parse_prefix_len(const char *text, int bits, int *len)
{
	uint64_t value;

	if (text == NULL) {
		*len = bits;
		return DEST_OK;
	}
	if (parse_whole(text, 1000, &value) != NUMBER_OK)
		return *text == '\0' ? DEST_UNREADABLE : DEST_BAD_PREFIX;
	if (value > (uint64_t)bits)
		return DEST_BAD_PREFIX;
	*len = (int)value;
	return DEST_OK;
}

/* Zero the bits past the prefix so matching is one masked comparison and
 * 10.0.0.1/8 means the same as 10.0.0.0/8; returns whether any was set. */
static bool mask_prefix(struct agile_inet_prefix *p)
{
	bool dropped = false;

	for (int i = 0; i < 16; i++) {
		int keep = p->prefix_len - i * 8;
		uint8_t mask;

		if (keep >= 8)
			continue;
		mask = keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
		dropped |= (p->addr[i] & ~mask) != 0;
		p->addr[i] &= mask;
	}
	return dropped;
}

static void map_ipv4(struct agile_inet_prefix *p, const struct in_addr *a)
{
	memset(p->addr, 0, 10);
	p->addr[10] = 0xff;
	p->addr[11] = 0xff;
	memcpy(p->addr + 12, a, 4);
}

/* An address with an optional "/len", in a buffer we may cut. */
static enum dest_error parse_address(char *text, bool ipv6,
                                     struct agile_inet_prefix *out)
{
	char *slash = strchr(text, '/');
	const char *len_text = NULL;
	int len;
	enum dest_error e;

	if (slash != NULL) {
		*slash = '\0';
		len_text = slash + 1;
	}
	if (ipv6) {
		struct in6_addr a6;
		if (inet_pton(AF_INET6, text, &a6) != 1)
			return DEST_UNREADABLE;
		e = parse_prefix_len(len_text, 128, &len);
		if (e != DEST_OK)
			return e;
		memcpy(out->addr, &a6, 16);
		out->prefix_len = (uint8_t)len;
	} else {
		struct in_addr a4;
		if (inet_pton(AF_INET, text, &a4) != 1)
			return DEST_UNREADABLE;
		e = parse_prefix_len(len_text, 32, &len);
		if (e != DEST_OK)
			return e;
		map_ipv4(out, &a4);
		out->prefix_len = (uint8_t)(96 + len);
	}
	return mask_prefix(out) ? DEST_HOST_BITS : DEST_OK;
}

/* A hostname: letters, digits, '-', '_' and '.', in non-empty labels, with
 * at least one character that is not a digit or a dot (else it is a
 * mistyped IPv4 address, and saying so is kinder than a DNS failure). */
static bool is_hostname(const char *text)
{
	size_t label = 0;
	bool has_letter = false;

	if (*text == '\0' || strlen(text) >= AGILE_RULE_DEST_MAX)
		return false;
	for (const char *p = text; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return false;
		if (!isdigit(c))
			has_letter = true;
		label++;
	}
	return has_letter;
}

static enum dest_error parse_unix(const char *path, struct agile_rule *rule)
{
	if (path[0] != '/' && path[0] != '@')
		return DEST_UNREADABLE;
	if (path[1] == '\0')
		return DEST_UNREADABLE;
	if (strlen(path) >= sizeof(rule->unix_path))
		return DEST_TOO_LONG;
	rule->kind = AGILE_DEST_UNIX;
	strcpy(rule->unix_path, path);
	return DEST_OK;
}

/* Copy at most `len` bytes of src, cut to fit, lower-cased if asked. */
static void copy_text(char *dst, size_t size, const char *src, size_t len,
                      bool lower)
{
	size_t n = 0;

	for (; n < len && n + 1 < size; n++)
		dst[n] = lower ? (char)tolower((unsigned char)src[n]) : src[n];
	dst[n] = '\0';
}

/* Copy a hostname without case and without a trailing dot, the form that
 * agile_rules_learn() compares. */
static void normalise_host(char *dst, size_t size, const char *src)
{
	size_t n;

	copy_text(dst, size, src, strlen(src), true);
	n = strlen(dst);
	if (n > 0 && dst[n - 1] == '.')
		dst[n - 1] = '\0';
}
static enum dest_error parse_dest(const char *text, struct agile_rule *rule)
{
	char buf[AGILE_RULE_DEST_MAX];
	char *host;
	char *port_text;
	enum dest_error e;

	if (strncmp(text, "unix:", 5) == 0)
		return parse_unix(text + 5, rule);
	if (strlen(text) >= sizeof(buf))
		return DEST_UNREADABLE;
	strcpy(buf, text);

	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		if (close != NULL && close[1] == '\0')
			return DEST_NO_PORT;
		if (close != NULL && close[1] == '/')
			return DEST_PREFIX_OUTSIDE;
		if (close == NULL || close[1] != ':')
			return DEST_UNREADABLE;
		*close = '\0';
		host = buf + 1;
		port_text = close + 2;
		e = parse_port(port_text, &rule->port);
		if (e != DEST_OK)
			return e;
		rule->kind = AGILE_DEST_INET;
		return parse_address(host, true, &rule->prefix);
	}

	port_text = strrchr(buf, ':');
	if (port_text == NULL)
		return buf[0] != '\0' && strchr(buf, '=') == NULL ? DEST_NO_PORT
		                                                 : DEST_UNREADABLE;
	*port_text++ = '\0';
	host = buf;
	/* A second colon means an IPv6 address without its brackets. */
	if (strchr(host, ':') != NULL)
		return DEST_BRACKETS;
	e = parse_port(port_text, &rule->port);
	if (e != DEST_OK)
		return e;

	if (strcmp(host, "*") == 0) {
		rule->kind = AGILE_DEST_INET;
		memset(&rule->prefix, 0, sizeof(rule->prefix));
		return DEST_OK;
	}
	if (host[0] != '\0' && strspn(host, "0123456789./") == strlen(host)) {
		rule->kind = AGILE_DEST_INET;
		return parse_address(host, false, &rule->prefix);
	}
	if (!is_hostname(host))
		return DEST_UNREADABLE;
	/* getaddrinfo would read "0x7f.0.0.1", "127.1" or "2130706433" as
	 * an IPv4 address, never look it up: not a host name. */
	if (inet_aton(host, &(struct in_addr){ 0 }) != 0)
		return DEST_NUMERIC_FORM;
	rule->kind = AGILE_DEST_HOST;
	normalise_host(rule->host, sizeof(rule->host), host);
	return DEST_OK;
}

static void report_dest(struct reporter *r, const char *text,
                        enum dest_error e, bool inbound)
{
	const char *what = inbound ? "listening address" : "destination";

	switch (e) {
	case DEST_NO_PORT:
		report(r, "%s \"%.*s\" has no port; %s", what, QUOTE_MAX, text,
		       inbound ? LISTEN_EXPECTED
		               : "expected ADDRESS:PORT, with PORT from 1 to "
		                 "65535 or *");
		break;
	case DEST_BRACKETS:
		report(r, "%s \"%.*s\": an IPv6 address needs brackets; "
		       "expected [IPv6]:PORT such as [::1]:5432", what, QUOTE_MAX,
		       text);
		break;
	case DEST_PREFIX_OUTSIDE:
		report(r, "%s \"%.*s\": the prefix length goes inside the "
		       "brackets; expected [IPv6/LEN]:PORT such as "
		       "[fd00::/8]:443", what, QUOTE_MAX, text);
		break;
	case DEST_BAD_PORT:
		report(r, "%s \"%.*s\": the port is out of range; expected 1 to "
		       "65535, or * for any port", what, QUOTE_MAX, text);
		break;
	case DEST_BAD_PREFIX:
		report(r, "%s \"%.*s\": the prefix length is out of range; "
		       "expected /0 to /32 for IPv4 and /0 to /128 for IPv6",
		       what, QUOTE_MAX, text);
		break;
	case DEST_TOO_LONG:
		report(r, "%s \"%.*s\": the path is too long; expected at most "
		       "%zu bytes", what, QUOTE_MAX, text,
		       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		break;
	case DEST_NOT_LISTENABLE:
		report(r, "listening address \"%.*s\": a listener is matched "
		       "by the address its socket is bound to, never by a host "
		       "name or a path; " LISTEN_EXPECTED, QUOTE_MAX, text);
		break;
	case DEST_NUMERIC_FORM:
		report(r, "%s \"%.*s\": an IPv4 address must be written in "
		       "dotted decimal, not in hexadecimal, octal or fewer "
		       "parts; expected ADDRESS:PORT such as 127.0.0.1:8080",
		       what, QUOTE_MAX, text);
		break;
	case DEST_HOST_BITS:
		report(r, "%s \"%.*s\": the address has bits set past its "
		       "prefix length, which are ignored; expected the "
		       "network's first address, such as 10.0.0.0/8", what,
		       QUOTE_MAX, text);
		break;
	case DEST_OK:
	case DEST_UNREADABLE:
		report(r, "cannot read %s \"%.*s\"; %s", what, QUOTE_MAX, text,
		       inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* One rule                                                                  */
/* ------------------------------------------------------------------------ */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The next whitespace-separated word of *p, copied into buf; false at the
 * end.  A word longer than the buffer is cut, which makes it unreadable
 * rather than something else. */
static bool next_word(const char **p, char *buf, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (is_space(*s))
		s++;
	if (*s == '\0')
		return false;
	while (*s != '\0' && !is_space(*s)) {
		if (n + 1 < size)
			buf[n++] = *s;
		s++;
	}
	buf[n] = '\0';
	*p = s;
	return true;
}

/* "max=500" where the destination should be: a known key before a '='. */
static bool looks_like_setting(const char *word)
{
	const char *eq = strchr(word, '=');

	return eq != NULL && find_key(word, (size_t)(eq - word)) != NULL;
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

/* One rule of either kind; `inbound` for an AGILE_LISTEN_ variable. */
static int parse_rule(const char *var, const char *name, const char *value,
                      bool inbound, struct agile_rule *out,
                      agile_rules_error_fn on_error, void *arg)
{
	struct reporter r = { var, on_error, arg, 0, .defer = true };
	bool seen[KEY_COUNT_ALL] = { false };
	bool dest_ok;
	bool max_ok = false;
	char word[MESSAGE_MAX / 2];
	const char *p = value;
	enum dest_error e;

	memset(out, 0, sizeof(*out));
	out->inbound = inbound;
	out->resilience.inbound = inbound;
	out->resilience.breaker_protection = -1.0; /* unset: the preset's */
	copy_text(out->name, sizeof(out->name), name, strlen(name), true);
	if (strlen(name) >= sizeof(out->name))
		report(&r, "the name is longer than %zu characters; agilestat "
		       "shows it as \"%s\"", sizeof(out->name) - 1, out->name);
	/* agilerun refuses such a NAME; a variable set some other way (env,
	 * a service unit) is told the same, and its rule still applies. */
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                 "0123456789_") < strlen(name))
		report(&r, "the name may hold only letters, digits and '_'; "
		       "agilestat shows it as \"%s\"", out->name);

	if (!next_word(&p, word, sizeof(word))) {
		/* An empty value: nothing else to say about it. */
		report(&r, "no %s; %s", inbound ? "listening address"
		                                : "destination",
		       inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		return report_flush(&r);
	}
	if (looks_like_setting(word)) {
		/* A forgotten destination: say so, and still read the settings
		 * so every other mistake is reported in the same run. */
		report(&r, "no %s before \"%.*s\"; %s",
		       inbound ? "listening address" : "destination", QUOTE_MAX,
		       word, inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		p = value;
		dest_ok = false;
	} else {
		copy_text(out->dest_text, sizeof(out->dest_text), word,
		          strlen(word), false);
		/* A listener's ":8080" is any local address: "*:8080". */
		if (inbound && word[0] == ':' &&
		    strlen(word) + 1 < sizeof(word)) {
			memmove(word + 1, word, strlen(word) + 1);
			word[0] = '*';
		}
		e = parse_dest(word, out);
		/* Bits past the prefix: a warning, the rule is kept. */
		if (e == DEST_HOST_BITS) {
			report_dest(&r, out->dest_text, e, inbound);
			e = DEST_OK;
		}
		/* A listener is matched by the address its socket is bound
		 * to (agile_rules_match_listen), which no host name or path
		 * ever equals: refuse one rather than never match. */
		if (e == DEST_OK && inbound && out->kind != AGILE_DEST_INET)
			e = DEST_NOT_LISTENABLE;
		dest_ok = e == DEST_OK;
		if (!dest_ok)
			report_dest(&r, out->dest_text, e, inbound);
	}

	while (next_word(&p, word, sizeof(word))) {
		char *eq = strchr(word, '=');
		const struct key_spec *key;
		size_t index;

		if (eq == NULL) {
			key = find_key(word, strlen(word));
			if (key != NULL)
				report(&r, "key \"%s\" has no value; expected "
				       "%s=VALUE", key->name, key->name);
			else
				report(&r, "\"%.*s\" is not a setting; expected "
				       "key=value", QUOTE_MAX, word);
			continue;
		}
		if (eq == word) {
			/* "max = 5" splits into "max", "=" and "5": the
			 * list of every key would not tell what went wrong. */
			report(&r, "\"%.*s\" has no key; expected key=value, "
			       "with no space around \"=\"", QUOTE_MAX, word);
			continue;
		}
		key = find_key(word, (size_t)(eq - word));
		if (key == NULL) {
			report_unknown_key(&r, word, (size_t)(eq - word));
			continue;
		}
		index = (size_t)(key - keys);
		if ((key->scope == SCOPE_DEST && inbound) ||
		    (key->scope == SCOPE_LISTEN && !inbound)) {
			report(&r, "key \"%s\" applies to %s variables only; "
			       "it is ignored here", key->name,
			       inbound ? "AGILE_DEST_" : "AGILE_LISTEN_");
			continue;
		}
		if (seen[index]) {
			report(&r, "key \"%s\" is set twice; expected each key "
			       "once (the first value is kept)", key->name);
			continue;
		}
		seen[index] = true;
		if (apply_setting(&r, out, key, eq + 1) && key == KEY_MAX) {
			if (out->config.max_rate > 0)
				max_ok = true;
			else
				report(&r, "key \"max\": \"%.*s\" is not greater "
				       "than 0; %s", QUOTE_MAX, eq + 1,
				       KEY_MAX->expect);
		}
	}
	if (!seen[KEY_MAX - keys])
		report(&r, "key \"max\" is missing; expected max=N, %s",
		       inbound ? "a whole number of connections at once "
		                 "greater than 0"
		               : "a rate greater than 0: " RATE_FORMS);
	/* A listener that reads its requests (proto=http) sheds requests,
	 * not connections, and answers each: 503 unless shed_response= says
	 * otherwise (inbound.c). */
	if (inbound && out->resilience.proto == AGILE_PROTO_HTTP &&
	    !seen[find_key("shed_response", strlen("shed_response")) - keys]) {
		out->resilience.shed_response = AGILE_SHED_HTTP;
		out->resilience.shed_status = 503;
	}
	check_resilience(&r, out);
	{
		/* What the fleet settings say together (fleet_config.h). */
		char text[MESSAGE_MAX / 2];

		if (agile_fleet_check(&out->fleet, text, sizeof(text)) < 0)
			report(&r, "%s", text);
	}

	if (max_ok) {
		struct agile_config *c = &out->config;
		check_order(&r, "floor", &c->floor_rate, "max", c->max_rate);
		check_order(&r, "min", &c->min_rate, "max", c->max_rate);
		check_order(&r, "probe", &c->probe_rate, "max", c->max_rate);
		check_order(&r, "initial", &c->initial_rate, "max", c->max_rate);
		check_order(&r, "probe", &c->probe_rate, "floor", c->floor_rate);
		report_problems(&r, c);
	}
	out->enabled = dest_ok && max_ok;
	return report_flush(&r);
}

int agile_rule_parse(const char *var, const char *name, const char *value,
                     struct agile_rule *out, agile_rules_error_fn on_error,
                     void *arg)
{
	return parse_rule(var, name, value, false, out, on_error, arg);
}

int agile_listen_parse(const char *var, const char *name, const char *value,
                       struct agile_rule *out, agile_rules_error_fn on_error,
                       void *arg)
{
	return parse_rule(var, name, value, true, out, on_error, arg);
}

/* ------------------------------------------------------------------------ */
/* The environment                                                           */
/* ------------------------------------------------------------------------ */

/* NAME of an "AGILE_DEST_NAME=value" entry, its length, and the value. */
static bool dest_entry(const char *entry, const char **name, size_t *len,
                       const char **value, bool *inbound)
{
	const char *eq;

	if (strncmp(entry, DEST_PREFIX, DEST_PREFIX_LEN) == 0)
		*inbound = false;
	else if (strncmp(entry, LISTEN_PREFIX, LISTEN_PREFIX_LEN) == 0)
		*inbound = true;
	else
		return false;
	eq = strchr(entry, '=');
	if (eq == NULL)
		return false;
	*name = entry + (*inbound ? LISTEN_PREFIX_LEN : DEST_PREFIX_LEN);
	*len = (size_t)(eq - *name);
	*value = eq + 1;
	return true;
}

/* One AGILE_DEST_ entry's place in the order of rules. */
struct entry_key {
	const char *name;
	size_t len;
	size_t index; /* in envp */
	bool inbound; /* AGILE_LISTEN_ rather than AGILE_DEST_ */
};

/*
 * Order of entries: NAME without case, then NAME as written, then position
 * in envp, so the order is total and every process sorts the same variables
 * the same way whatever order its environment holds them in.
 */
static int compare_entries(const struct entry_key *a,
                           const struct entry_key *b)
{
	int c;

	for (size_t i = 0; i < a->len && i < b->len; i++) {
		c = tolower((unsigned char)a->name[i]) -
		    tolower((unsigned char)b->name[i]);
		if (c != 0)
			return c;
	}
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	c = memcmp(a->name, b->name, a->len);
	if (c != 0)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * Rules are taken in sorted order by selection: each round scans envp for
 * the smallest entry after the previous one.  O(rules x environment), at
 * most 33 passes over a few dozen strings, and no allocation, which matters
 * in a constructor that runs in every process of a script.
 */
int agile_rules_parse(char *const *envp, struct agile_rules *out,
                      agile_rules_error_fn on_error, void *arg)
{
	struct entry_key previous = { NULL, 0, 0, false };
	int errors = 0;

	memset(out, 0, sizeof(*out));
	out->generation = 1;
	if (envp == NULL)
		return 0;
	for (;;) {
		struct entry_key next = { NULL, 0, 0, false };
		struct entry_key candidate;
		const char *value = NULL;
		const char *candidate_value;
		char var[LISTEN_PREFIX_LEN + AGILE_RULE_DEST_MAX];
		char name[AGILE_RULE_DEST_MAX];
		const char *prefix;
		struct agile_rule *rule;
		struct reporter r;

		for (size_t i = 0; envp[i] != NULL; i++) {
			if (!dest_entry(envp[i], &candidate.name, &candidate.len,
			                &candidate_value, &candidate.inbound))
				continue;
			candidate.index = i;
			if (previous.name != NULL &&
			    compare_entries(&candidate, &previous) <= 0)
				continue;
			if (next.name == NULL ||
			    compare_entries(&candidate, &next) < 0) {
				next = candidate;
				value = candidate_value;
			}
		}
		if (next.name == NULL)
			break;
		previous = next;
		prefix = next.inbound ? LISTEN_PREFIX : DEST_PREFIX;
		snprintf(var, sizeof(var), "%s%.*s", prefix, (int)next.len,
		         next.name);
		r = (struct reporter){ var, on_error, arg, 0, .defer = false };

		if (next.len == 0) {
			report(&r, "no NAME after %s; expected %s<NAME>=%s "
			       "key=value...", prefix, prefix,
			       next.inbound ? "[ADDRESS]:PORT" : "DEST");
			errors += r.errors;
			continue;
		}
		if (out->count == AGILE_RULES_MAX) {
			report(&r, "too many destinations; at most %d are read "
			       "and this one is ignored", AGILE_RULES_MAX);
			errors += r.errors;
			continue;
		}

		rule = &out->rule[out->count];
		snprintf(name, sizeof(name), "%.*s", (int)next.len, next.name);
		errors += parse_rule(var, name, value, next.inbound, rule,
		                     on_error, arg);
		for (int i = 0; i < out->count; i++) {
			if (strcmp(out->rule[i].name, rule->name) != 0)
				continue;
			report(&r, "the name \"%s\" is already used by another "
			       "%s variable (names are compared without "
			       "case); both rules are kept", rule->name,
			       out->rule[i].inbound ? "AGILE_LISTEN_"
			                            : "AGILE_DEST_");
			errors += r.errors;
			break;
		}
		out->count++;
	}
	return errors;
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */
/* ------------------------------------------------------------------------ */

/* The address and port of an AF_INET or AF_INET6 sockaddr, IPv4 mapped. */
static bool inet_key(const struct sockaddr *addr, socklen_t len,
                     uint8_t out[16], int *port)
{
	if (addr == NULL)
		return false;
	if (addr->sa_family == AF_INET &&
	    len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)addr;
		struct agile_inet_prefix p;
		map_ipv4(&p, &in->sin_addr);
		memcpy(out, p.addr, 16);
		*port = ntohs(in->sin_port);
		return true;
	}
	if (addr->sa_family == AF_INET6 &&
	    len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)addr;
		memcpy(out, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return true;
	}
	return false;
}

static bool prefix_contains(const struct agile_inet_prefix *p,
                            const uint8_t addr[16])
{
	/* Whole bytes with memcmp, then the partial one: every matched
	 * connect() asks this of every rule, and an exact address is a /128,
	 * which byte by byte cost about 300 instructions a rule. */
	int whole = p->prefix_len / 8;
	int rest = p->prefix_len % 8;

	if (memcmp(addr, p->addr, (size_t)whole) != 0)
		return false;
	return rest == 0 ||
	       (addr[whole] & (uint8_t)(0xff << (8 - rest))) == p->addr[whole];
}

/* Whether an AF_UNIX address names the rule's path.  A pathname address may
 * or may not carry its terminating NUL inside `len`; an abstract one is the
 * exact bytes after its leading NUL. */
static bool unix_matches(const struct agile_rule *rule,
                         const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_un *un = (const void *)addr;
	size_t offset = offsetof(struct sockaddr_un, sun_path);
	size_t path_len;
	size_t want;

	if (addr == NULL || addr->sa_family != AF_UNIX || len <= offset)
		return false;
	path_len = (size_t)len - offset;
	if (path_len > sizeof(un->sun_path))
		path_len = sizeof(un->sun_path);
	if (rule->unix_path[0] == '@') {
		want = strlen(rule->unix_path + 1);
		return un->sun_path[0] == '\0' && path_len == want + 1 &&
		       memcmp(un->sun_path + 1, rule->unix_path + 1, want) == 0;
	}
	want = strlen(rule->unix_path);
	return strnlen(un->sun_path, path_len) == want &&
	       memcmp(un->sun_path, rule->unix_path, want) == 0;
}

/* How specific a matching rule is: prefix bits times two, plus one for an
 * exact port, so a longer prefix always beats a port and a port breaks ties
 * between equal prefixes.  -1 when the rule does not match. */
static int specificity(const struct agile_rule *rule, const uint8_t addr[16],
                       int port)
{
	int bits = -1;

	if (rule->port != 0 && rule->port != port)
		return -1;
	if (rule->kind == AGILE_DEST_INET) {
		if (prefix_contains(&rule->prefix, addr))
			bits = rule->prefix.prefix_len;
	} else if (rule->kind == AGILE_DEST_HOST) {
		int count = __atomic_load_n(&rule->host_addr_count,
		                            __ATOMIC_ACQUIRE);
		for (int i = 0; i < count && i < AGILE_RULE_HOST_ADDRS; i++)
			if (memcmp(rule->host_addrs[i].addr, addr, 16) == 0)
				bits = 128;
	}
	if (bits < 0)
		return -1;
	return bits * 2 + (rule->port != 0);
}

int agile_rules_match(const struct agile_rules *rules,
                      const struct sockaddr *addr, socklen_t len)
{
	uint8_t key[16];
	int port;
	int best = -1;
	int best_score = -1;

	if (rules == NULL || addr == NULL)
		return -1;
	if (addr->sa_family == AF_UNIX) {
		for (int i = 0; i < rules->count; i++)
			if (rules->rule[i].enabled && !rules->rule[i].inbound &&
			    rules->rule[i].kind == AGILE_DEST_UNIX &&
			    unix_matches(&rules->rule[i], addr, len))
				return i;
		return -1;
	}
	if (!inet_key(addr, len, key, &port))
		return -1;
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *rule = &rules->rule[i];
		int score;
		if (!rule->enabled || rule->kind == AGILE_DEST_UNIX ||
		    rule->inbound)
			continue;
		score = specificity(rule, key, port);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

void agile_match_cache_put(struct agile_match_cache *cache,
                           uint64_t generation, const struct sockaddr *addr,
                           socklen_t len, int dest)
{
	uint64_t head, addr6[2];

	if (!agile__match_cache_key(addr, len, &head, addr6))
		return;
	/* Empty while it is rewritten, valid again only once whole: a vfork
	 * child (which writes its parent's thread storage) killed half-way
	 * must not leave a key beside another key's answer.  The fences keep
	 * the compiler from moving the stores across the generation's; a
	 * child of clone(CLONE_VM) without its own thread storage that runs
	 * beside its parent shares errno and everything else per thread with
	 * it, and is not made safe here either. */
	cache->generation = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cache->head = head;
	cache->addr6[0] = addr6[0];
	cache->addr6[1] = addr6[1];
	cache->dest = dest;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cache->generation = generation;
}

int agile_rules_match_listen(const struct agile_rules *rules,
                             const struct sockaddr *addr, socklen_t len)
{
	uint8_t key[16];
	int port;
	int best = -1;
	int best_score = -1;

	if (rules == NULL || !inet_key(addr, len, key, &port))
		return -1;
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *rule = &rules->rule[i];
		int score;

		if (!rule->enabled || !rule->inbound ||
		    rule->kind != AGILE_DEST_INET)
			continue;
		score = specificity(rule, key, port);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

/* ------------------------------------------------------------------------ */
/* Hostnames                                                                 */
/* ------------------------------------------------------------------------ */

static void learn_into(struct agile_rules *rules, struct agile_rule *rule,
                       const uint8_t addr[16])
{
	int count = rule->host_addr_count;
	int slot;

	for (int i = 0; i < count; i++)
		if (memcmp(rule->host_addrs[i].addr, addr, 16) == 0)
			return;
	rule->host_unresolved = false;
	if (count < AGILE_RULE_HOST_ADDRS) {
		memcpy(rule->host_addrs[count].addr, addr, 16);
		rule->host_addrs[count].prefix_len = 128;
		/* Publish the slot only after it is written. */
		__atomic_store_n(&rule->host_addr_count, count + 1,
		                 __ATOMIC_RELEASE);
	} else {
		/* Full: replace the oldest, so a name whose addresses rotate
		 * (DNS round robin behind a load balancer) keeps matching. */
		slot = rule->host_addr_next % AGILE_RULE_HOST_ADDRS;
		memcpy(rule->host_addrs[slot].addr, addr, 16);
		rule->host_addr_next = (slot + 1) % AGILE_RULE_HOST_ADDRS;
	}
	/* What this address matches has changed (and what the one it
	 * replaced matches): remembered matches go stale.  Bumped after the
	 * address is published, so a matcher that reads the new generation
	 * (acquire) before matching also sees the address. */
	__atomic_add_fetch(&rules->generation, 1, __ATOMIC_RELEASE);
}

void agile_rules_learn(struct agile_rules *rules, const char *host,
                       const struct sockaddr *addr, socklen_t len)
{
	char want[AGILE_RULE_DEST_MAX];
	uint8_t key[16];
	int port;

	if (rules == NULL || host == NULL || !inet_key(addr, len, key, &port))
		return;
	normalise_host(want, sizeof(want), host);
	for (int i = 0; i < rules->count; i++) {
		struct agile_rule *rule = &rules->rule[i];
		if (rule->kind == AGILE_DEST_HOST &&
		    strcmp(rule->host, want) == 0)
			learn_into(rules, rule, key);
	}
}

size_t agile_rule_var(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, DEST_PREFIX "%s", name);

	for (size_t i = DEST_PREFIX_LEN; i < len && buf[i] != '\0'; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
	return n < 0 ? 0 : (size_t)n;
}
int agile_rules_resolve_hosts(struct agile_rules *rules,
                              agile_getaddrinfo_fn resolve,
                              agile_rules_error_fn on_error, void *arg)
{
	int failed = 0;

	if (rules == NULL)
		return 0;
	if (resolve == NULL)
		resolve = getaddrinfo;
	for (int i = 0; i < rules->count; i++) {
		struct agile_rule *rule = &rules->rule[i];
		struct addrinfo hints, *res = NULL;
		char var[DEST_PREFIX_LEN + AGILE_RULE_NAME_MAX];
		int rc;

		if (!rule->enabled || rule->kind != AGILE_DEST_HOST ||
		    rule->host_addr_count > 0)
			continue;
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		rc = resolve(rule->host, NULL, &hints, &res);
		if (rc == 0)
			for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
				agile_rules_learn(rules, rule->host, ai->ai_addr,
				                  ai->ai_addrlen);
		if (res != NULL)
			freeaddrinfo(res);
		if (rule->host_addr_count > 0)
			continue;
		rule->host_unresolved = true;
		failed++;
		if (on_error != NULL) {
			struct reporter r;
			agile_rule_var(rule->name, var, sizeof(var));
			r = (struct reporter){ var, on_error, arg, 0, .defer = false };
			report(&r, "cannot resolve host \"%s\" (%s); its "
			       "connections count as unreachable until the "
			       "program resolves it", rule->host,
			       rc != 0 ? gai_strerror(rc) : "no address");
		}
	}
	return failed;
}

const char *agile_pace_name(enum agile_pace pace)
{
	return pace == AGILE_PACE_CONNECT ? "connect" : "request";
}
