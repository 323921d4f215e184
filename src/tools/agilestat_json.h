/*
 * agilestat_json.h - how agilestat's modules write a string from the state
 * file: into its --json and --prometheus output, its table (a terminal) and
 * its --history CSV, so the destinations' names and the fleet's Redis
 * address and error are escaped the one same way; and a Prometheus sample's
 * value, so every module's counters and gauges print alike.
 *
 * Every string in the file is untrusted: any process of the user's can
 * write there, a destination is written as the user wrote it, and a Unix
 * socket's path is any bytes, escape sequences included.
 */
#ifndef AGILESTAT_JSON_H
#define AGILESTAT_JSON_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The replacement character, U+FFFD, in UTF-8. */
#define AGILESTAT_REPLACEMENT "\xef\xbf\xbd"

/*
 * The length of the well-formed UTF-8 character at `s` (1 to 4), or 0 when
 * the bytes there are not one (a stray continuation byte, an overlong form,
 * a surrogate, a code point above U+10FFFF, or a sequence cut short, as
 * the state file's 128 bytes of destination can cut one).  A destination
 * is written as the user wrote it, and a Unix socket's path is any bytes,
 * while JSON and the Prometheus text format both hold UTF-8 only.
 */
static inline int agilestat_utf8_len(const unsigned char *s)
{
	int n;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte's range rules out overlong forms, surrogates and
	 * code points above U+10FFFF (RFC 3629, section 4). */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* `s` as a JSON string on stdout: quoted, '"' and '\' escaped, every
 * control character as \u00XX, and each byte that is not part of a
 * well-formed UTF-8 character as U+FFFD, so the document always parses. */
static inline void agilestat_json_string(const char *s)
{
	putchar('"');
	while (*s != '\0') {
		unsigned char c = (unsigned char)*s;
		int len = agilestat_utf8_len((const unsigned char *)s);

		if (len == 0) {
			printf("\\ufffd");
			len = 1;
		} else if (c == '"' || c == '\\') {
			printf("\\%c", c);
		} else if (c < 0x20) {
			printf("\\u%04x", c);
		} else {
			fwrite(s, 1, (size_t)len, stdout);
		}
		s += len;
	}
	putchar('"');
}

/* The size agilestat_text needs for a string of at most n bytes. */
#define AGILESTAT_TEXT_SIZE(n) (4 * (size_t)(n) + 1)

/*
 * `s` made safe for a terminal, into `out` (AGILESTAT_TEXT_SIZE(strlen(s))
 * bytes hold it all; a shorter `out` holds a cut copy): well-formed UTF-8
 * is kept, but every control character (C0, DEL, and C1, U+0080 to U+009F,
 * which terminals take for the start of an escape sequence too) and every
 * byte that is not part of a well-formed character becomes \xNN, and '\'
 * becomes "\\", so an escape can be told from the bytes it stands for.
 * Returns `out`.
 */
static inline const char *agilestat_text(const char *s, char *out,
                                         size_t out_len)
{
	size_t used = 0;

	while (*s != '\0') {
		const unsigned char *u = (const unsigned char *)s;
		int len = agilestat_utf8_len(u);
		bool escape = len == 0 || u[0] < 0x20 || u[0] == 0x7f ||
		              (len == 2 && u[0] == 0xc2 && u[1] < 0xa0);
		int n = escape ? (len == 0 ? 1 : len) : len;
		size_t need = escape ? 4 * (size_t)n : u[0] == '\\' ? 2 : (size_t)n;

		if (used + need >= out_len)
			break;
		if (escape)
			for (int i = 0; i < n; i++)
				used += (size_t)snprintf(out + used, 5,
				                         "\\x%02x", u[i]);
		else if (u[0] == '\\')
			used += (size_t)snprintf(out + used, 3, "\\\\");
		else {
			memcpy(out + used, s, (size_t)n);
			used += (size_t)n;
		}
		s += n;
	}
	if (out_len > 0)
		out[used] = '\0';
	return out;
}

/* `s` as one field of a CSV record on stdout (RFC 4180): escaped as
 * agilestat_text does, then, when it holds a comma or a double quote,
 * enclosed in double quotes with each double quote doubled. */
static inline void agilestat_csv_field(const char *s)
{
	char text[AGILESTAT_TEXT_SIZE(256)];

	agilestat_text(s, text, sizeof(text));
	if (strpbrk(text, ",\"") == NULL) {
		fputs(text, stdout);
		return;
	}
	putchar('"');
	for (const char *c = text; *c != '\0'; c++) {
		if (*c == '"')
			putchar('"');
		putchar(*c);
	}
	putchar('"');
}

/* `s` as a Prometheus label value on stdout: quoted, with '\', '"' and a
 * line feed escaped as the text format requires, and each byte that is not
 * part of a well-formed UTF-8 character as U+FFFD. */
static inline void agilestat_prometheus_label(const char *s)
{
	putchar('"');
	while (*s != '\0') {
		unsigned char c = (unsigned char)*s;
		int len = agilestat_utf8_len((const unsigned char *)s);

		if (len == 0) {
			fputs(AGILESTAT_REPLACEMENT, stdout);
			len = 1;
		} else if (c == '\\' || c == '"') {
			printf("\\%c", c);
		} else if (c == '\n') {
			printf("\\n");
		} else {
			fwrite(s, 1, (size_t)len, stdout);
		}
		s += len;
	}
	putchar('"');
}

/*
 * A Prometheus sample's value, after its labels, with the line's end.  A
 * counter is a whole number and is written as one, every digit: as a
 * double with "%.9g" (as it was) 1,099,511,627,783 read 1.09951163e+12,
 * and no double holds a count above 2^53 exactly.  A gauge is written in
 * the shortest form that reads back as the same double (at most 17
 * significant digits), with the text format's own NaN and +Inf/-Inf.
 * agilestat never calls setlocale(), so the decimal point is '.'.
 */
static inline void agilestat_prometheus_counter(uint64_t value)
{
	printf(" %" PRIu64 "\n", value);
}

static inline void agilestat_prometheus_gauge(double value)
{
	char text[32];

	if (isnan(value)) {
		printf(" NaN\n");
		return;
	}
	if (isinf(value)) {
		printf(" %cInf\n", value > 0 ? '+' : '-');
		return;
	}
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(text, sizeof(text), "%.*g", digits, value);
		if (strtod(text, NULL) == value)
			break;
	}
	printf(" %s\n", text);
}

#endif /* AGILESTAT_JSON_H */
