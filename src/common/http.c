/*
 * http.c - proto=http: what the preload learns from the plaintext HTTP/1.x
 * it already sees, without any change to the program (the seed's HTTP
 * adapters and verdicts).
 *
 * Only the first bytes of a request and of a response are read: the ones
 * the send or receive that starts or ends the request carries, which for
 * ordinary clients and servers hold the request line, or the status line and
 * the headers.  A header that arrives in a later read, or that the read
 * cuts short (its line is not ended by CRLF), is not seen; a response
 * whose first read is not a status line (TLS, HTTP/2, a pipelined body) is
 * an ordinary sample.  Nothing is buffered or copied.
 *
 * Outbound verdicts (agile__http_response):
 *   overload=    (429 and 503 by default) the downstream turned the work
 *                away: recorded as unreachable, never as a fast sample;
 *                with a Retry-After of N seconds the destination's bucket
 *                is paused N seconds (its next grant is planned no
 *                earlier), across every process sharing it; with an
 *                HTTP-date, until that time of the wall clock
 *                (agile__http_retry_after_ns).
 *   unreachable= (none by default) the downstream was not reached (a
 *                proxy's 502, say): unreachable, no pause.
 *   ignore=      (none by default) answered, but not a sample (a 202 that
 *                only says "queued", a 404).
 *   other 5xx    a sample, and a failure for breaker=sre.
 *   cache hit    cache_hit= names the headers (X-Cache and Age by
 *                default): a value holding HIT, or an Age above 0, says
 *                the response did not come from the downstream's work, so
 *                it is not a sample.
 *   excluded     a request whose path is in exclude= (itself, or below it,
 *                or with a query) is not a sample.
 * Inbound (inbound.c) uses agile__http_status, agile__http_request, the
 * lists (agile__http_in_list) and agile__http_cache_hit.
 *
 * Whatever proto= says, the receive path (preload/track/recv.c) asks
 * agile__http_read_verdict (http.h) whether a read that would end a request
 * holds only interim (1xx) responses, which answer no request (see there).
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "atomics.h"
#include "internal.h"
#include "h2hpack.h"
#include "http.h"
#include "resilience_hook.h"

/* The end of the headers (or of the data, if they are cut short). */
static size_t header_end(const char *p, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++)
		if (memcmp(p + i, "\r\n\r\n", 4) == 0)
			return i + 2;
	return len;
}

/* The value of header `name` in p[0, len), or NULL; *vlen its length. */
static const char *header_value(const char *p, size_t len, const char *name,
                                size_t *vlen)
{
	size_t nlen = strlen(name);
	size_t i = 0;

	/* Skip the start line. */
	while (i + 1 < len && !(p[i] == '\r' && p[i + 1] == '\n'))
		i++;
	while (i + 2 + nlen < len) {
		const char *line = p + i + 2;
		size_t rest = len - i - 2;
		size_t eol = 0;

		while (eol + 1 < rest && !(line[eol] == '\r' &&
		                           line[eol + 1] == '\n'))
			eol++;
		/* A line the read cut short is not read: its value may be
		 * cut too (the "Retry-After: 1" of a 17). */
		if (eol + 1 >= rest)
			return NULL;
		if (eol > nlen && line[nlen] == ':' &&
		    strncasecmp(line, name, nlen) == 0) {
			const char *v = line + nlen + 1;
			size_t n = eol - nlen - 1;

			while (n > 0 && (*v == ' ' || *v == '\t')) {
				v++;
				n--;
			}
			while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			*vlen = n;
			return v;
		}
		i += 2 + eol;
	}
	return NULL;
}

/* A whole number of seconds, or -1. */
static int64_t seconds_value(const char *v, size_t n)
{
	int64_t s = 0;

	if (v == NULL || n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -1;
		s = s * 10 + (v[i] - '0');
	}
	return s;
}

/* The longest pause a Retry-After may ask for, in seconds: what fits in
 * the nine digits seconds_value reads.  A longer one, in either form, is
 * taken for garbage and not honoured. */
#define RETRY_AFTER_MAX_S 999999999

/* The index of the name v[0, n) in names[0, count), or -1.  RFC 9110's
 * names are case-sensitive. */
static int name_index(const char *v, size_t n, const char *const *names,
                      int count)
{
	for (int i = 0; i < count; i++)
		if (strlen(names[i]) == n && memcmp(v, names[i], n) == 0)
			return i;
	return -1;
}

/* The number in the n digits at v, or -1 when one is not a digit.  With
 * space_ok, a leading space stands for a zero (asctime's day). */
static int digits(const char *v, size_t n, bool space_ok)
{
	int x = 0;

	for (size_t i = 0; i < n; i++) {
		if (space_ok && i == 0 && n > 1 && v[i] == ' ')
			continue;
		if (!isdigit((unsigned char)v[i]))
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

static bool is_leap(int64_t year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

/* Days from 1970-01-01 to year-month-day of the proleptic Gregorian
 * calendar (month 1 to 12): Howard Hinnant's days_from_civil, exact for
 * every year, so the reading stays pure and needs nothing of libc's time
 * zone machinery (timegm). */
static int64_t days_from_civil(int64_t year, int month, int day)
{
	int64_t era, yoe, doy, doe;

	year -= month <= 2;
	era = (year >= 0 ? year : year - 399) / 400;
	yoe = year - era * 400;
	doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The year of the proleptic Gregorian calendar holding the moment unix_s
 * (Hinnant's civil_from_days, the year only). */
static int64_t year_of(int64_t unix_s)
{
	int64_t z = (unix_s >= 0 ? unix_s : unix_s - 86399) / 86400 + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;

	/* mp counts months from March: 10 and 11 are the next year's January
	 * and February. */
	return yoe + era * 400 + (mp >= 10);
}

static const char *const day_names[] = {
	"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
};
static const char *const long_day_names[] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
	"Saturday",
};
static const char *const month_names[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec",
};

/* The seconds since the epoch of a date and time whose parts were read,
 * or -1 when they name no real moment: a day past its month's end, a
 * time out of range, or a day name that is not the date's (a sender that
 * gets the weekday wrong is not trusted with the rest). */
static int64_t civil_seconds(int64_t year, int month, int day, int hour,
                             int minute, int second, int weekday)
{
	static const int month_days[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
	};
	int64_t days;

	if (month < 1 || day < 1 ||
	    day > month_days[month - 1] + (month == 2 && is_leap(year)) ||
	    hour < 0 || hour > 23 || minute < 0 || minute > 59 ||
	    second < 0 || second > 59)
		return -1;
	days = days_from_civil(year, month, day);
	/* 1970-01-01 was a Thursday. */
	if (((days % 7 + 7 + 4) % 7) != weekday)
		return -1;
	return days * 86400 + hour * 3600 + minute * 60 + second;
}

/* "HH:MM:SS" at v: hour, minute and second, or false. */
static bool time_of_day(const char *v, int *hour, int *minute, int *second)
{
	if (v[2] != ':' || v[5] != ':')
		return false;
	*hour = digits(v, 2, false);
	*minute = digits(v + 3, 2, false);
	*second = digits(v + 6, 2, false);
	return *hour >= 0 && *minute >= 0 && *second >= 0;
}

int64_t agile__http_date_s(const char *v, size_t n, int64_t unix_s)
{
	int weekday, month, day, hour, minute, second;
	int64_t year;
	const char *comma;

	if (v == NULL || n < 24)
		return -1;
	comma = memchr(v, ',', n < 10 ? n : 10);
	if (comma == NULL) {
		/* asctime-date: "Sun Nov  6 08:49:37 1994". */
		if (n != 24 || v[3] != ' ' || v[7] != ' ' || v[10] != ' ' ||
		    v[19] != ' ' || !time_of_day(v + 11, &hour, &minute,
		                                 &second))
			return -1;
		weekday = name_index(v, 3, day_names, 7);
		month = name_index(v + 4, 3, month_names, 12) + 1;
		day = digits(v + 8, 2, true);
		year = digits(v + 20, 4, false);
	} else if (comma - v == 3) {
		/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
		if (n != 29 || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' ||
		    v[16] != ' ' || v[25] != ' ' ||
		    memcmp(v + 26, "GMT", 3) != 0 ||
		    !time_of_day(v + 17, &hour, &minute, &second))
			return -1;
		weekday = name_index(v, 3, day_names, 7);
		day = digits(v + 5, 2, false);
		month = name_index(v + 8, 3, month_names, 12) + 1;
		year = digits(v + 12, 4, false);
	} else {
		/* rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT".  RFC 9110
		 * reads a two-digit year that would be more than 50 years
		 * ahead as the last such year in the past. */
		const char *d = comma + 2;
		int64_t this_year = year_of(unix_s);
		int yy;

		if ((size_t)(d - v) + 22 != n || comma[1] != ' ' ||
		    d[2] != '-' || d[6] != '-' || d[9] != ' ' ||
		    d[18] != ' ' || memcmp(d + 19, "GMT", 3) != 0 ||
		    !time_of_day(d + 10, &hour, &minute, &second))
			return -1;
		weekday = name_index(v, (size_t)(comma - v), long_day_names,
		                     7);
		day = digits(d, 2, false);
		month = name_index(d + 3, 3, month_names, 12) + 1;
		yy = digits(d + 7, 2, false);
		if (yy < 0)
			return -1;
		year = this_year - this_year % 100 + yy;
		if (year > this_year + 50)
			year -= 100;
	}
	if (weekday < 0 || day < 0 || year < 0)
		return -1;
	return civil_seconds(year, month, day, hour, minute, second, weekday);
}

int64_t agile__http_retry_after_ns(const char *v, size_t n, int64_t unix_ns)
{
	int64_t seconds = seconds_value(v, n);
	int64_t unix_s, date_s, ahead_s, pause_ns;

	if (seconds >= 0)
		return seconds * AGILE_NS_PER_S;
	/* Floor division, so that a fraction of a second is never lost or
	 * counted twice, even before 1970. */
	unix_s = unix_ns / AGILE_NS_PER_S -
	         (unix_ns % AGILE_NS_PER_S < 0);
	date_s = agile__http_date_s(v, n, unix_s);
	if (date_s < 0 || date_s <= unix_s)
		return 0; /* not a date, or one already past */
	ahead_s = date_s - unix_s;
	if (ahead_s > RETRY_AFTER_MAX_S + 1)
		return 0;
	pause_ns = ahead_s * AGILE_NS_PER_S - (unix_ns - unix_s *
	                                       AGILE_NS_PER_S);
	return pause_ns <= (int64_t)RETRY_AFTER_MAX_S * AGILE_NS_PER_S
	       ? pause_ns : 0;
}

int agile__http_status(const void *data, size_t len)
{
	const char *p = data;
	int status = 0;

	if (p == NULL || len < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    p[8] != ' ')
		return 0;
	for (int i = 9; i < 12; i++) {
		if (!isdigit((unsigned char)p[i]))
			return 0;
		status = status * 10 + (p[i] - '0');
	}
	return status >= 100 && status <= 599 ? status : 0;
}

bool agile__http_interim(const void *data, size_t len)
{
	const char *p = data;
	size_t i = 0;

	/* Every response read on a plain connection asks: its status's first
	 * digit (a status line is "HTTP/1.x NNN") turns away all but 1xx
	 * before the line is parsed. */
	if (p == NULL || len < 12 || p[9] != '1')
		return false;
	while (i < len) {
		int status = agile__http_status(p + i, len - i);
		size_t head;

		/* 101 Switching Protocols is the upgrade request's answer. */
		if (status < 100 || status > 199 || status == 101)
			return false;
		head = header_end(p + i, len - i);
		if (head == len - i)
			return false; /* cut short: no blank line in this read */
		i += head + 2;
	}
	return true;
}

/* Whether path[0, len) is one of the excluded ones. */
bool agile__http_path_excluded(const struct agile_resilience_config *c,
                               const char *path, size_t len)
{
	const char *end = path + len;

	for (uint32_t i = 0; i < c->exclude_count; i++) {
		size_t n = strlen(c->exclude[i]);

		if ((size_t)(end - path) >= n &&
		    memcmp(path, c->exclude[i], n) == 0 &&
		    (path + n == end || path[n] == '?' || path[n] == '/' ||
		     c->exclude[i][n - 1] == '/'))
			return true;
	}
	return false;
}

/* Whether the request line's path is one of the excluded ones. */
static bool excluded(const struct agile_resilience_config *c, const char *p,
                     size_t len)
{
	const char *sp = memchr(p, ' ', len < 16 ? len : 16);
	const char *path, *end;

	if (sp == NULL || sp == p)
		return false;
	path = sp + 1;
	end = memchr(path, ' ', len - (size_t)(path - p));
	if (end == NULL)
		end = p + len;
	return agile__http_path_excluded(c, path, (size_t)(end - path));
}

void agile__http_request(struct agile_fd *t,
                         const struct agile_resilience_config *c,
                         const void *data, size_t len)
{
	if (c->exclude_count == 0)
		return;
	/* A request whose first bytes are not visible (a send whose first
	 * iovec is empty) is not excluded: the mark of an earlier request
	 * not yet answered must not pass to it (fuzz_tls_plain found one). */
	if (data != NULL && len > 0 && excluded(c, data, len))
		__atomic_fetch_or(&t->flags, AGILE_FD_EXCLUDED,
		                  __ATOMIC_ACQ_REL);
	else
		__atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_EXCLUDED,
		                   __ATOMIC_ACQ_REL);
}

/* Plan the bucket's next grant no earlier than until_ns.  The bucket spaces
 * grants from its last planned one (agile.h), so moving that forward to one
 * interval before until_ns pauses it, for every process, and the grants
 * after the pause keep their spacing instead of arriving in a burst. */
static void pause_bucket(struct agile_state_slot *s, int64_t until_ns)
{
	struct agile_bucket *b = &s->limiter.bucket;
	/* Saturating: another process may have left garbage in the spacing,
	 * which the next grant's check repairs (destinations.c). */
	int64_t want = agile__sub_sat(until_ns,
	                              agile__load_i64(&b->interval_ns));
	int64_t last = agile__load_i64(&b->last_ns);
	int64_t until = agile__load_i64(&s->resilience.paused_until_ns);

	while (last < want && !agile__cas_i64(&b->last_ns, &last, want))
		;
	while (until < until_ns &&
	       !agile__cas_i64(&s->resilience.paused_until_ns, &until,
	                       until_ns))
		;
}

bool agile__http_in_list(const struct agile_resilience_config *c,
                         enum agile_status_list list, int status)
{
	unsigned bit = (unsigned)status - 100;

	if (status < 100 || status > 599)
		return false;
	if (c == NULL || !(c->status_lists & (1u << list)))
		return list == AGILE_STATUS_OVERLOAD &&
		       (status == 429 || status == 503);
	return (c->status_list[list][bit / 64] >> (bit % 64)) & 1;
}

/* Whether header `name`'s value v[0, n) marks a cache hit: Age above 0,
 * any other holding "hit" in any case (X-Cache: HIT, TCP_HIT, hit from
 * cloudfront). */
static bool hit_value(const char *name, const char *v, size_t n)
{
	if (strcasecmp(name, "Age") == 0)
		return seconds_value(v, n) > 0;
	for (size_t i = 0; i + 3 <= n; i++)
		if (strncasecmp(v + i, "HIT", 3) == 0)
			return true;
	return false;
}

bool agile__http_cache_hit(const struct agile_resilience_config *c,
                           const void *data, size_t len)
{
	static const char *const defaults[] = { "X-Cache", "Age" };
	const char *p = data;
	size_t head, count, vlen;

	if (p == NULL)
		return false;
	head = header_end(p, len);
	count = c != NULL && c->cache_hit_count > 0 ? c->cache_hit_count : 2;
	for (size_t i = 0; i < count; i++) {
		const char *name = c != NULL && c->cache_hit_count > 0
		                   ? c->cache_hit[i] : defaults[i];
		const char *v = header_value(p, head, name, &vlen);

		if (v != NULL && hit_value(name, v, vlen))
			return true;
	}
	return false;
}

enum agile_http_verdict agile__http_response(struct agile_fd *t,
                                             const struct agile_resilience_config *c,
                                             struct agile_state_slot *s,
                                             const void *data, size_t len,
                                             int64_t now_ns, int64_t unix_ns)
{
	struct agile_state_resilience *z = &s->resilience;
	uint8_t flags = __atomic_fetch_and(&t->flags,
	                                   (uint8_t)~AGILE_FD_EXCLUDED,
	                                   __ATOMIC_ACQ_REL);
	int status = agile__http_status(data, len);
	size_t head, vlen = 0;
	const char *v = NULL;

	if (flags & AGILE_FD_EXCLUDED) {
		agile__add_u64(&z->http_excluded, 1);
		return AGILE_HTTP_SKIP;
	}
	if (status == 0)
		return AGILE_HTTP_SAMPLE;
	if (agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status)) {
		head = header_end(data, len);
		v = header_value(data, head, "Retry-After", &vlen);
	} else if (!agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status) &&
	           !agile__http_in_list(c, AGILE_STATUS_IGNORE, status) &&
	           agile__http_cache_hit(c, data, len)) {
		agile__add_u64(&z->http_cache_hits, 1);
		return AGILE_HTTP_SKIP;
	}
	return agile__http_status_verdict(s, c, status, v, vlen, now_ns,
	                                  unix_ns);
}

enum agile_http_verdict agile__http_status_verdict(struct agile_state_slot *s,
                                                   const struct agile_resilience_config *c,
                                                   int status,
                                                   const char *retry_after,
                                                   size_t retry_len,
                                                   int64_t now_ns,
                                                   int64_t unix_ns)
{
	if (agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status)) {
		int64_t pause_ns = agile__http_retry_after_ns(retry_after,
		                                              retry_len,
		                                              unix_ns);

		if (pause_ns > 0) {
			pause_bucket(s, now_ns + pause_ns);
			agile__add_u64(&s->resilience.http_pauses, 1);
		}
		return AGILE_HTTP_REFUSED;
	}
	if (agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status))
		return AGILE_HTTP_REFUSED;
	if (agile__http_in_list(c, AGILE_STATUS_IGNORE, status)) {
		agile__add_u64(&s->resilience.http_ignored, 1);
		return AGILE_HTTP_SKIP;
	}
	return status >= 500 ? AGILE_HTTP_FAILED : AGILE_HTTP_SAMPLE;
}

/* gRPC's status codes the verdicts read (grpc/doc/statuscodes.md). */
#define GRPC_DEADLINE_EXCEEDED 4
#define GRPC_RESOURCE_EXHAUSTED 8
#define GRPC_UNAVAILABLE 14

enum agile_http_verdict agile__http_h2_verdict(struct agile_state_slot *s,
                                               const struct agile_resilience_config *c,
                                               const struct agile_h2_fields *f,
                                               int64_t now_ns,
                                               int64_t unix_ns)
{
	/* A trailers-only gRPC response carries grpc-status in its one
	 * block, under :status 200: the gRPC code decides. */
	switch (f->grpc_status) {
	case GRPC_UNAVAILABLE:
	case GRPC_RESOURCE_EXHAUSTED:
		return AGILE_HTTP_REFUSED;
	case GRPC_DEADLINE_EXCEEDED:
		return AGILE_HTTP_TRUNCATED;
	default:
		break;
	}
	if (agile__http_in_list(c, AGILE_STATUS_OVERLOAD, f->status))
		return agile__http_status_verdict(s, c, f->status,
		                                  f->retry_after,
		                                  f->retry_after_len, now_ns,
		                                  unix_ns);
	/* HPACK's reader marks X-Cache and Age only (h2hpack.h): cache_hit=
	 * names other headers on HTTP/1.x. */
	if (f->cache_hit &&
	    !agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, f->status) &&
	    !agile__http_in_list(c, AGILE_STATUS_IGNORE, f->status)) {
		agile__add_u64(&s->resilience.http_cache_hits, 1);
		return AGILE_HTTP_SKIP;
	}
	return agile__http_status_verdict(s, c, f->status, NULL, 0, now_ns,
	                                  unix_ns);
}

/* Whether the comma-separated list v[0, n) holds `token`, case aside. */
static bool has_token(const char *v, size_t n, const char *token)
{
	size_t tlen = strlen(token);

	for (size_t i = 0; i < n;) {
		size_t j = i, e;

		while (j < n && v[j] != ',')
			j++;
		while (i < j && (v[i] == ' ' || v[i] == '\t'))
			i++;
		e = j;
		while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - i == tlen && strncasecmp(v + i, token, tlen) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

void agile__http_frame(const void *data, size_t len, bool response,
                       struct agile_http_frame *f)
{
	const char *p = data;
	const char *v;
	size_t end, n;
	bool http10;

	memset(f, 0, sizeof(*f));
	if (p == NULL)
		return;
	end = header_end(p, len);
	if (end == len || end + 2 > len)
		return; /* the head is not all here */
	f->head_len = end + 2;
	if (response) {
		f->status = agile__http_status(p, len);
		http10 = len > 8 && memcmp(p, "HTTP/1.0", 8) == 0;
	} else {
		size_t eol = 0;

		while (eol + 1 < end && !(p[eol] == '\r' && p[eol + 1] == '\n'))
			eol++;
		http10 = eol >= 8 && memcmp(p + eol - 8, "HTTP/1.0", 8) == 0;
		f->head_method = len > 5 && memcmp(p, "HEAD ", 5) == 0;
		f->options_method = len > 8 && memcmp(p, "OPTIONS ", 8) == 0;
	}
	v = header_value(p, end, "Connection", &n);
	f->close = v != NULL ? has_token(v, n, "close") ||
	                       (http10 && !has_token(v, n, "keep-alive"))
	                     : http10;
	if (response && ((f->status >= 100 && f->status < 200) ||
	                 f->status == 204 || f->status == 304))
		return; /* no body (RFC 9112 6.3) */
	v = header_value(p, end, "Transfer-Encoding", &n);
	if (v != NULL) {
		/* Chunked last is chunked; any other coding on a request has
		 * no length a reader can find (6.3 point 4): "to close". */
		f->body = n >= 7 && strncasecmp(v + n - 7, "chunked", 7) == 0
		          ? AGILE_HTTP_CHUNKED : AGILE_HTTP_TO_CLOSE;
		return;
	}
	v = header_value(p, end, "Content-Length", &n);
	if (v != NULL) {
		int64_t cl = n > 0 && n <= 15 ? 0 : -1;

		for (size_t i = 0; i < n && cl >= 0; i++)
			cl = isdigit((unsigned char)v[i])
			     ? cl * 10 + (v[i] - '0') : -1;
		f->body = cl >= 0 ? cl : AGILE_HTTP_TO_CLOSE;
		return;
	}
	f->body = response ? AGILE_HTTP_TO_CLOSE : 0;
}

const char *agile__http_header(const void *data, size_t len, const char *name,
                               size_t *vlen)
{
	const char *p = data;

	if (p == NULL)
		return NULL;
	return header_value(p, header_end(p, len), name, vlen);
}
