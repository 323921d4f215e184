/*
 * fuzz_http.c - libFuzzer harness for proto=http (src/common/http.c), which
 * reads the status line and headers of the responses a server sends, and
 * the request line of the requests an inbound client sends.
 *
 * The input is three parts, split at the first two NUL bytes:
 *     exclude paths, one a line, as exclude= would hold them (a line that
 *         rules.c would refuse, not beginning with '/' or too long, is
 *         left out)
 *     a request's first bytes
 *     a response's first bytes (the rest of the input, NULs and all)
 * The request goes through agile__http_request, the response through
 * agile__http_status and agile__http_response at two clocks (the
 * preload's and the wall clock, each pair a moment), on a fresh
 * slot; http.c keeps no state between reads but the socket's excluded
 * mark, which the request sets and the response consumes.  Every part is
 * given in an allocation of exactly its size.  The seeds in corpus/http/
 * are real responses (Python's http.server and curl) and RFC 9110's.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - a status is neither 0 nor 100 to 599, or is not the three digits
 *     after "HTTP/1.x ";
 *   - a verdict is not one resilience_hook.h defines, or disagrees with
 *     the status: REFUSED exactly for 429 and 503, FAILED only for
 *     another 5xx;
 *   - the excluded mark does not match the exclude list (a request marked
 *     whose line holds none of the paths), or survives the response;
 *   - a pause is anything but what http.c documents: only for a 429 or
 *     503, from one nanosecond to 999,999,999 seconds after the clock, as
 *     long as the response's Retry-After says when read by the harness's
 *     own reader (delta-seconds, or the time left until an HTTP-date,
 *     which the C library's strptime and strftime read); the bucket's next
 *     grant then planned one interval before its end, never earlier than
 *     it was; and the pause counter counting it;
 *   - a response taken for interim responses alone (agile__http_interim,
 *     which keeps a request in flight) does not start with a 1xx status
 *     other than 101, or does not end with the blank line that closes a
 *     header block.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agile.h"
#include "fdtable.h"
#include "resilience.h"
#include "resilience_hook.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bucket's spacing and last planned grant before the response. */
#define INTERVAL_NS 10000000
#define LAST_NS 5000

/* The two wall clocks the responses are read at (see below). */
#define WALL_2015_NS ((int64_t)1445412000 * AGILE_NS_PER_S + 250000000)
#define WALL_2026_NS ((int64_t)1796032800 * AGILE_NS_PER_S + 750000000)

/* An exact-size copy of p[0, n), so a read past it is caught. */
static char *exact(const uint8_t *p, size_t n)
{
	char *copy = malloc(n > 0 ? n : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, p, n);
	return copy;
}

static void parse_excludes(struct agile_resilience_config *c,
                           const uint8_t *p, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n && c->exclude_count < AGILE_EXCLUDE_MAX;
	     i++) {
		size_t len;

		if (i < n && p[i] != '\n')
			continue;
		len = i - start;
		if (len > 0 && len < AGILE_EXCLUDE_LEN && p[start] == '/') {
			memcpy(c->exclude[c->exclude_count], p + start, len);
			c->exclude[c->exclude_count][len] = '\0';
			c->exclude_count++;
		}
		start = i + 1;
	}
}

/* The three forms of RFC 9110's HTTP-date, as strftime(3) writes them;
 * asctime's day may also be given with a leading zero. */
#define IMF_FIXDATE "%a, %d %b %Y %H:%M:%S GMT"
#define RFC850_DATE "%A, %d-%b-%y %H:%M:%S GMT"
#define ASCTIME_DATE "%a %b %e %H:%M:%S %Y"
#define ASCTIME_DATE_0 "%a %b %d %H:%M:%S %Y"
static const char *const date_formats[] = {
	IMF_FIXDATE, RFC850_DATE, ASCTIME_DATE, ASCTIME_DATE_0,
};

/* strftime() with date_formats[form], each spelt out so that the compiler
 * checks it; RFC 850's two-digit year, which the compiler rightly warns
 * of, is written by hand. */
static size_t write_date(char *out, size_t size, size_t form,
                         const struct tm *tm)
{
	size_t n;
	char *yy;

	switch (form) {
	case 0:
		return strftime(out, size, IMF_FIXDATE, tm);
	case 1:
		n = strftime(out, size, "%A, %d-%b-YY %H:%M:%S GMT", tm);
		yy = strstr(out, "-YY ");
		if (n == 0 || yy == NULL)
			return 0;
		yy[1] = (char)('0' + (tm->tm_year + 1900) % 100 / 10);
		yy[2] = (char)('0' + (tm->tm_year + 1900) % 10);
		return n;
	case 2:
		return strftime(out, size, ASCTIME_DATE, tm);
	default:
		return strftime(out, size, ASCTIME_DATE_0, tm);
	}
}

/* The seconds since the epoch of the HTTP-date v[0, n), read by the C
 * library, or -1: strptime() reads it in one of the forms, and strftime()
 * must write back exactly the same bytes for the moment it names, which
 * holds only when every field is in range and the day name is the date's.
 * An RFC 850 date's two-digit year is placed as RFC 9110 says: no more
 * than 50 years after the year of unix_s. */
static int64_t date_value(const char *v, size_t n, int64_t unix_s)
{
	char text[64], back[64];

	if (n >= sizeof(text))
		return -1;
	memcpy(text, v, n);
	text[n] = '\0';
	for (size_t f = 0; f < sizeof(date_formats) / sizeof(*date_formats);
	     f++) {
		struct tm tm, now;
		time_t t = (time_t)unix_s;
		const char *end;

		memset(&tm, 0, sizeof(tm));
		end = strptime(text, date_formats[f], &tm);
		if (end == NULL || *end != '\0')
			continue;
		if (f == 1) {
			int year, yy = (tm.tm_year + 1900) % 100;

			gmtime_r(&t, &now);
			year = now.tm_year + 1900 - (now.tm_year + 1900) % 100 +
			       yy;
			if (year > now.tm_year + 1900 + 50)
				year -= 100;
			tm.tm_year = year - 1900;
		}
		t = timegm(&tm);
		gmtime_r(&t, &tm);
		if (write_date(back, sizeof(back), f, &tm) == n &&
		    memcmp(back, text, n) == 0)
			return (int64_t)t;
	}
	return -1;
}

/* The pause, in nanoseconds, that RFC 9110's Retry-After asks of the
 * headers in p[0, n) at wall-clock time unix_ns, read independently of
 * http.c: the first Retry-After line after the status line and before the
 * blank line, whole (ended by CRLF within the read: a cut line's value may
 * be cut too), holding 1 to 9 digits, or an HTTP-date still ahead, and
 * nothing else but blanks around it; 0 for none or for more than
 * 999,999,999 seconds. */
static int64_t retry_after(const char *p, size_t n, int64_t unix_ns)
{
	size_t line = 0;

	while (line + 1 < n && !(p[line] == '\r' && p[line + 1] == '\n'))
		line++;
	line += 2;
	while (line + 1 < n) {
		size_t eol = line, v, end;
		int64_t seconds = 0;

		while (eol + 1 < n && !(p[eol] == '\r' && p[eol + 1] == '\n'))
			eol++;
		if (eol + 1 >= n || eol == line)
			return 0; /* a cut line, or the blank line */
		if (eol - line < 12 ||
		    strncasecmp(p + line, "Retry-After:", 12) != 0) {
			line = eol + 2;
			continue;
		}
		v = line + 12;
		end = eol;
		while (v < end && (p[v] == ' ' || p[v] == '\t'))
			v++;
		while (end > v && (p[end - 1] == ' ' || p[end - 1] == '\t'))
			end--;
		if (end == v)
			return 0;
		for (size_t i = v; i < end; i++) {
			if (p[i] < '0' || p[i] > '9' || end - v > 9) {
				int64_t unix_s = unix_ns / AGILE_NS_PER_S;
				int64_t date = date_value(p + v, end - v,
				                          unix_s);

				/* The harness's wall clocks are after 1970
				 * and not whole seconds. */
				if (date <= unix_s ||
				    date - unix_s > 999999999)
					return 0;
				return date * AGILE_NS_PER_S - unix_ns;
			}
			seconds = seconds * 10 + (p[i] - '0');
		}
		return seconds * AGILE_NS_PER_S;
	}
	return 0;
}

static void check_status(const char *p, size_t n, int status)
{
	if (status == 0)
		return;
	if (status < 100 || status > 599 || n < 12 ||
	    memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0') != status)
		abort();
}

static void check_response(const struct agile_resilience_config *c,
                           const char *request, size_t request_len,
                           const char *response, size_t response_len,
                           int64_t now_ns, int64_t unix_ns)
{
	struct agile_fd t;
	static struct agile_state_slot slot;
	struct agile_state_resilience *z = &slot.resilience;
	int status = agile__http_status(response, response_len);
	enum agile_http_verdict verdict;
	int marked;

	memset(&t, 0, sizeof(t));
	memset(&slot, 0, sizeof(slot));
	slot.limiter.bucket.interval_ns = INTERVAL_NS;
	slot.limiter.bucket.last_ns = LAST_NS;
	check_status(response, response_len, status);
	if (agile__http_interim(response, response_len) &&
	    (status < 100 || status > 199 || status == 101 ||
	     response_len < 16 ||
	     memcmp(response + response_len - 4, "\r\n\r\n", 4) != 0))
		abort();

	agile__http_request(&t, c, request, request_len);
	marked = (t.flags & AGILE_FD_EXCLUDED) != 0;
	if (marked) {
		int found = 0;

		for (uint32_t i = 0; i < c->exclude_count && !found; i++)
			found = memmem(request, request_len, c->exclude[i],
			               strlen(c->exclude[i])) != NULL;
		if (!found)
			abort();
	}
	if (t.flags & ~AGILE_FD_EXCLUDED)
		abort();

	verdict = agile__http_response(&t, c, &slot, response, response_len,
	                               now_ns, unix_ns);
	if (t.flags & AGILE_FD_EXCLUDED)
		abort();
	if (marked) {
		if (verdict != AGILE_HTTP_SKIP || z->http_excluded != 1 ||
		    z->paused_until_ns != 0)
			abort();
		return;
	}
	switch (verdict) {
	case AGILE_HTTP_SAMPLE:
	case AGILE_HTTP_SKIP:
		if (status == 429 || status == 503)
			abort();
		break;
	case AGILE_HTTP_REFUSED:
		if (status != 429 && status != 503)
			abort();
		break;
	case AGILE_HTTP_FAILED:
		if (status < 500 || status == 503)
			abort();
		break;
	default:
		abort();
	}
	if ((status == 429 || status == 503) &&
	    z->paused_until_ns != now_ns +
	    retry_after(response, response_len, unix_ns) &&
	    !(z->paused_until_ns == 0 &&
	      retry_after(response, response_len, unix_ns) == 0))
		abort();
	if (z->paused_until_ns == 0) {
		if (z->http_pauses != 0 ||
		    slot.limiter.bucket.last_ns != LAST_NS)
			abort();
	} else {
		int64_t pause = z->paused_until_ns - now_ns;
		int64_t planned = z->paused_until_ns - INTERVAL_NS;

		/* Whole seconds from now, or up to a whole second of the
		 * wall clock. */
		if (verdict != AGILE_HTTP_REFUSED || z->http_pauses != 1 ||
		    pause < 1 || pause > (int64_t)999999999 * AGILE_NS_PER_S ||
		    (pause % AGILE_NS_PER_S != 0 &&
		     (unix_ns + pause) % AGILE_NS_PER_S != 0))
			abort();
		if (slot.limiter.bucket.last_ns !=
		    (planned > LAST_NS ? planned : LAST_NS))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agile_resilience_config c;
	const uint8_t *nul1, *nul2;
	const uint8_t *req, *resp;
	size_t req_len, resp_len;
	char *request, *response;

	memset(&c, 0, sizeof(c));
	c.proto = AGILE_PROTO_HTTP;
	nul1 = memchr(data, '\0', size);
	if (nul1 == NULL)
		return 0;
	parse_excludes(&c, data, (size_t)(nul1 - data));
	req = nul1 + 1;
	nul2 = memchr(req, '\0', size - (size_t)(req - data));
	if (nul2 == NULL)
		return 0;
	req_len = (size_t)(nul2 - req);
	resp = nul2 + 1;
	resp_len = size - (size_t)(resp - data);

	request = exact(req, req_len);
	response = exact(resp, resp_len);
	/* The preload's clock is CLOCK_MONOTONIC: a second after boot, and a
	 * year of uptime.  The wall clock is 2015-10-21 07:20:00.25 UTC
	 * (eight minutes before the date RFC 9110's example gives), and
	 * 2026-11-30 10:00:00.75 UTC. */
	check_response(&c, request, req_len, response, resp_len,
	               AGILE_NS_PER_S, WALL_2015_NS);
	check_response(&c, request, req_len, response, resp_len,
	               (int64_t)365 * 86400 * AGILE_NS_PER_S, WALL_2026_NS);
	/* A read that brought only some of the response: whatever it holds
	 * is judged alone. */
	for (size_t cut = 0; cut < resp_len && cut < 64; cut += 7) {
		char *part = exact(resp, cut);

		check_response(&c, request, req_len, part, cut,
		               AGILE_NS_PER_S, WALL_2015_NS);
		free(part);
	}
	free(request);
	free(response);
	return 0;
}
