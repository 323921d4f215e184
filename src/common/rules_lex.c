/*
 * rules_lex.c - the numbers of the rule syntax: whole numbers, decimals,
 * durations with their unit, periods ("1d", "h") and rates ("5", "0.5",
 * "1/10s"), each read exactly and each failure named by its own reason.
 *
 * Hand-written rather than strtod/strtoull: the preload may parse after
 * the program has called setlocale(), where strtod() would want a decimal
 * comma, and the messages need to tell an exponent, a negative number and a
 * missing unit apart, which the libc readers fold into one failure.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

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

enum number_error agile__lex_whole(const char *text, uint64_t limit,
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

enum number_error agile__lex_decimal(const char *text, double *out)
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
enum number_error agile__lex_duration(const char *text, int64_t *out_ns)
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

int agile__parse_duration(const char *text, int64_t *out_ns)
{
	int64_t ns;

	if (text == NULL || agile__lex_duration(text, &ns) != NUMBER_OK)
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

/*
 * A period or span: a duration (see agile__lex_duration) that may also be in
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
	why = agile__lex_duration(buf, &ns);
	if (why != NUMBER_OK)
		return why;
	if (ns > INT64_MAX / scale)
		return NUMBER_TOO_LARGE;
	*out_ns = ns * scale;
	return NUMBER_OK;
}

/* "N/PERIOD" with N in [1, max_count]; the text after PERIOD (from the
 * first ',') is left in *rest, or NULL. */
bool agile__lex_count_per(const char *value, int64_t max_count,
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
	if (agile__lex_whole(buf, (uint64_t)max_count, &n) != NUMBER_OK ||
	    n == 0)
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
enum number_error agile__lex_rate(const char *text, double *out)
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
		why = agile__lex_whole(count_text, (uint64_t)RATE_LIMIT_MAX,
		                       &whole);
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
