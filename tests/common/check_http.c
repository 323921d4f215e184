/*
 * check_http.c - proto=http's Retry-After (src/common/http.c): delta-seconds
 * and the three forms of RFC 9110's HTTP-date, read against a wall clock
 * passed in, so every expectation is exact.  A date is honoured only when
 * it is spelt as the grammar says and names a real moment (right day name,
 * day within its month, time in range); a date already past is no pause,
 * and a pause beyond 999,999,999 seconds is not honoured in either form.
 * Last, a 503 read by agile__http_response pauses a slot's bucket until
 * the date.  And agile__http_interim, which every plain connection's
 * reads go through, tells a read of interim (1xx) responses from one
 * holding the answer.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agile.h"
#include "fdtable.h"
#include "resilience.h"
#include "resilience_hook.h"
#include "state.h"

/* RFC 9110's example, Wed, 21 Oct 2015 07:28:00 GMT, since the epoch. */
#define EXAMPLE_S INT64_C(1445412480)
/* The wall clock of most tests: 2015-10-21 07:20:00.25 UTC, 479.75 s
 * before the example. */
#define WALL_NS (INT64_C(1445412000) * AGILE_NS_PER_S + 250000000)

static int64_t date_s(const char *v, int64_t unix_s)
{
	return agile__http_date_s(v, strlen(v), unix_s);
}

static int64_t retry_after_ns(const char *v, int64_t unix_ns)
{
	return agile__http_retry_after_ns(v, strlen(v), unix_ns);
}

START_TEST(http_date_three_forms)
{
	int64_t wall_s = WALL_NS / AGILE_NS_PER_S;

	ck_assert_int_eq(date_s("Wed, 21 Oct 2015 07:28:00 GMT", wall_s),
	                 EXAMPLE_S);
	ck_assert_int_eq(date_s("Wednesday, 21-Oct-15 07:28:00 GMT", wall_s),
	                 EXAMPLE_S);
	ck_assert_int_eq(date_s("Wed Oct 21 07:28:00 2015", wall_s),
	                 EXAMPLE_S);
	/* asctime's day of one digit, after a space or a zero. */
	ck_assert_int_eq(date_s("Sun Nov  6 08:49:37 1994", wall_s),
	                 INT64_C(784111777));
	ck_assert_int_eq(date_s("Sun Nov 06 08:49:37 1994", wall_s),
	                 INT64_C(784111777));
	/* The edges of the calendar: the epoch, a leap day, a year's end. */
	ck_assert_int_eq(date_s("Thu, 01 Jan 1970 00:00:00 GMT", wall_s), 0);
	ck_assert_int_eq(date_s("Tue, 29 Feb 2000 23:59:59 GMT", wall_s),
	                 INT64_C(951868799));
	ck_assert_int_eq(date_s("Sat, 29 Feb 2048 00:00:00 GMT", wall_s),
	                 INT64_C(2466547200));
	ck_assert_int_eq(date_s("Fri, 31 Dec 9999 23:59:59 GMT", wall_s),
	                 INT64_C(253402300799));
}
END_TEST

START_TEST(http_date_refuses_what_the_grammar_does_not_spell)
{
	static const char *const bad[] = {
		"Thu, 21 Oct 2015 07:28:00 GMT",  /* the wrong day name */
		"wed, 21 Oct 2015 07:28:00 GMT",  /* names are case-sensitive */
		"Wed, 21 oct 2015 07:28:00 GMT",
		"Wed, 21 Oct 2015 07:28:00 UTC",
		"Wed, 21 Oct 2015 07:28:00",
		"Wed, 21 Oct 2015 7:28:00 GMT",
		"Wed,  21 Oct 2015 07:28:00 GMT",
		"Wed, 21 Oct 15 07:28:00 GMT",
		"Wed, 21-Oct-2015 07:28:00 GMT",
		"Wed, 21 Oct 2015 24:00:00 GMT",  /* times out of range */
		"Wed, 21 Oct 2015 07:60:00 GMT",
		"Wed, 21 Oct 2015 07:28:60 GMT",  /* no leap seconds */
		"Sun, 29 Feb 2100 00:00:00 GMT",  /* 2100 is no leap year */
		"Thu, 31 Apr 2015 00:00:00 GMT",
		"Sun, 00 Oct 2015 00:00:00 GMT",
		"Wed, 21 Oct 2015 07:28:00 GMT ", /* a value is trimmed first */
		"Wed, 21 Oct +015 07:28:00 GMT",
		"Wed, 21-Oct-15 07:28:00 GMT",    /* RFC 850 takes the long name */
		"Wednesday, 21 Oct 2015 07:28:00 GMT",
		"Wednesday, 21-Oct-15 07:28:00 UTC",
		"Wed Oct 21 07:28:00 15",
		"Wed Oct  21 07:28:00 2015",
		"Wed Oct 21  7:28:00 2015",
		"Wed Oct 21 07:28:00 2015 GMT",
		"Wed, 21 Oct 2015 07:28:00 GMT\r\n",
		"",
		"120",
	};
	int64_t wall_s = WALL_NS / AGILE_NS_PER_S;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(date_s(bad[i], wall_s) == -1, "\"%s\" read as %lld",
		              bad[i], (long long)date_s(bad[i], wall_s));
	ck_assert_int_eq(agile__http_date_s(NULL, 0, wall_s), -1);
}
END_TEST

/* RFC 9110: a two-digit year more than 50 years ahead is the last such
 * year in the past. */
START_TEST(http_date_rfc850_century)
{
	/* 2026-11-30 10:00:00 UTC: 2076 is 50 years ahead, 2077 more. */
	int64_t wall_s = INT64_C(1796032800);

	ck_assert_int_eq(date_s("Monday, 30-Nov-76 00:00:00 GMT", wall_s),
	                 INT64_C(3373920000));
	ck_assert_int_eq(date_s("Wednesday, 30-Nov-77 00:00:00 GMT", wall_s),
	                 INT64_C(249696000));
	/* The day name is the placed year's: 2077's would be refused. */
	ck_assert_int_eq(date_s("Tuesday, 30-Nov-77 00:00:00 GMT", wall_s),
	                 -1);
	/* At the turn of the year the wall clock's year moves with it. */
	ck_assert_int_eq(date_s("Sunday, 01-Jan-50 00:00:00 GMT",
	                        INT64_C(946684799)), /* 1999-12-31 23:59:59 */
	                 INT64_C(-631152000));        /* 1950 */
	ck_assert_int_eq(date_s("Saturday, 01-Jan-50 00:00:00 GMT",
	                        INT64_C(946684800)), /* 2000-01-01 00:00:00 */
	                 INT64_C(2524608000));        /* 2050 */
}
END_TEST

START_TEST(retry_after_delta_seconds)
{
	ck_assert_int_eq(retry_after_ns("120", WALL_NS),
	                 120 * AGILE_NS_PER_S);
	ck_assert_int_eq(retry_after_ns("999999999", WALL_NS),
	                 INT64_C(999999999) * AGILE_NS_PER_S);
	ck_assert_int_eq(retry_after_ns("0", WALL_NS), 0);
	ck_assert_int_eq(retry_after_ns("1000000000", WALL_NS), 0);
	ck_assert_int_eq(retry_after_ns("-1", WALL_NS), 0);
	ck_assert_int_eq(retry_after_ns("1.5", WALL_NS), 0);
	ck_assert_int_eq(agile__http_retry_after_ns(NULL, 0, WALL_NS), 0);
}
END_TEST

START_TEST(retry_after_http_date)
{
	int64_t cap_ns = INT64_C(999999999) * AGILE_NS_PER_S;
	int64_t leap_ns = INT64_C(2466547200) * AGILE_NS_PER_S;

	/* The time left until the date, to the nanosecond, in every form. */
	ck_assert_int_eq(retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT",
	                                WALL_NS), 479750000000);
	ck_assert_int_eq(retry_after_ns("Wednesday, 21-Oct-15 07:28:00 GMT",
	                                WALL_NS), 479750000000);
	ck_assert_int_eq(retry_after_ns("Wed Oct 21 07:28:00 2015", WALL_NS),
	                 479750000000);
	/* A date just ahead, now, or past: no pause once it has come. */
	ck_assert_int_eq(retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT",
	                                EXAMPLE_S * AGILE_NS_PER_S - 1), 1);
	ck_assert_int_eq(retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT",
	                                EXAMPLE_S * AGILE_NS_PER_S), 0);
	ck_assert_int_eq(retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT",
	                                EXAMPLE_S * AGILE_NS_PER_S + 1), 0);
	ck_assert_int_eq(retry_after_ns("Sun, 06 Nov 1994 08:49:37 GMT",
	                                WALL_NS), 0);
	/* The cap of delta-seconds holds for a date too: 999,999,999 s
	 * ahead is honoured, a nanosecond more is not. */
	ck_assert_int_eq(retry_after_ns("Sat, 29 Feb 2048 00:00:00 GMT",
	                                leap_ns - cap_ns), cap_ns);
	ck_assert_int_eq(retry_after_ns("Sat, 29 Feb 2048 00:00:00 GMT",
	                                leap_ns - cap_ns - 1), 0);
	ck_assert_int_eq(retry_after_ns("Fri, 31 Dec 9999 23:59:59 GMT",
	                                WALL_NS), 0);
	/* A wall clock before 1970 still counts whole seconds right. */
	ck_assert_int_eq(retry_after_ns("Thu, 01 Jan 1970 00:00:01 GMT",
	                                -250000000), 1250000000);
	/* Not a date. */
	ck_assert_int_eq(retry_after_ns("Thu, 21 Oct 2015 07:28:00 GMT",
	                                WALL_NS), 0);
}
END_TEST

/* A 503 whose Retry-After is a date pauses the bucket until that moment of
 * the wall clock, on the preload's clock: its next grant is planned one
 * interval before, and the pause is counted. */
START_TEST(response_pauses_until_the_date)
{
	static const char response[] =
		"HTTP/1.1 503 Service Unavailable\r\n"
		"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
		"Content-Length: 0\r\n\r\n";
	static struct agile_state_slot slot;
	struct agile_fd t;
	int64_t now_ns = 1000 * AGILE_NS_PER_S;

	memset(&t, 0, sizeof(t));
	memset(&slot, 0, sizeof(slot));
	slot.limiter.bucket.interval_ns = 10000000;
	slot.limiter.bucket.last_ns = now_ns;
	ck_assert_int_eq(agile__http_response(&t, NULL, &slot, response,
	                                      sizeof(response) - 1, now_ns,
	                                      WALL_NS),
	                 AGILE_HTTP_REFUSED);
	ck_assert_int_eq(slot.resilience.paused_until_ns,
	                 now_ns + 479750000000);
	ck_assert_int_eq(slot.limiter.bucket.last_ns,
	                 now_ns + 479750000000 - 10000000);
	ck_assert_uint_eq(slot.resilience.http_pauses, 1);

	/* The same response read after the date pauses nothing. */
	memset(&slot, 0, sizeof(slot));
	slot.limiter.bucket.interval_ns = 10000000;
	slot.limiter.bucket.last_ns = now_ns;
	ck_assert_int_eq(agile__http_response(&t, NULL, &slot, response,
	                                      sizeof(response) - 1, now_ns,
	                                      EXAMPLE_S * AGILE_NS_PER_S),
	                 AGILE_HTTP_REFUSED);
	ck_assert_int_eq(slot.resilience.paused_until_ns, 0);
	ck_assert_int_eq(slot.limiter.bucket.last_ns, now_ns);
	ck_assert_uint_eq(slot.resilience.http_pauses, 0);
}
END_TEST

static bool interim(const char *text)
{
	return agile__http_interim(text, strlen(text));
}

/* What a client reads between "Expect: 100-continue" and its body, and
 * what it does not: only whole interim responses and nothing else answer
 * no request (recv.c keeps the request in flight for them). */
START_TEST(interim_responses_alone)
{
	ck_assert(interim("HTTP/1.1 100 Continue\r\n\r\n"));
	ck_assert(interim("HTTP/1.0 100\r\n\r\n"));
	ck_assert(interim("HTTP/1.1 102 Processing\r\n\r\n"));
	ck_assert(interim("HTTP/1.1 103 Early Hints\r\n"
	                  "Link: </s.css>; rel=preload\r\n\r\n"));
	ck_assert(interim("HTTP/1.1 100 Continue\r\n\r\n"
	                  "HTTP/1.1 103 Early Hints\r\n\r\n"));
	/* The final response with it, in the same read, is the answer. */
	ck_assert(!interim("HTTP/1.1 100 Continue\r\n\r\n"
	                   "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"));
	ck_assert(!interim("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2"));
	/* Cut short: the rest may hold anything. */
	ck_assert(!interim("HTTP/1.1 100 Continue\r\n"));
	ck_assert(!interim("HTTP/1.1 100 Cont"));
	/* 101 is the upgrade's answer; other classes are final. */
	ck_assert(!interim("HTTP/1.1 101 Switching Protocols\r\n"
	                   "Upgrade: websocket\r\n\r\n"));
	ck_assert(!interim("HTTP/1.1 200 OK\r\n\r\n"));
	ck_assert(!interim("HTTP/1.1 204 No Content\r\n\r\n"));
	ck_assert(!interim("HTTP/2 100\r\n\r\n"));
	ck_assert(!interim("+OK\r\n"));
	ck_assert(!agile__http_interim(NULL, 0));
	ck_assert(!agile__http_interim("HTTP/1.1 100 Continue\r\n\r\n", 0));
	/* The same, as the receive path asks (read_verdict.h). */
	ck_assert_int_eq(agile__http_read_verdict("HTTP/1.1 100 Continue\r\n\r\n",
	                                          25), AGILE_READ_INTERIM);
	ck_assert_int_eq(agile__http_read_verdict("HTTP/1.1 200 OK\r\n\r\n", 19),
	                 AGILE_READ_RESPONSE);
}
END_TEST

static enum agile_http_verdict verdict(const struct agile_resilience_config *c,
                                       struct agile_state_slot *slot,
                                       const char *response)
{
	struct agile_fd t;

	memset(&t, 0, sizeof(t));
	return agile__http_response(&t, c, slot, response, strlen(response),
	                            AGILE_NS_PER_S, WALL_NS);
}

/* The rule's lists decide a status's verdict, and cache_hit= which
 * headers mark a hit: a 502 unreachable, a 202 ignored, a 503 refused by
 * overload's default, CF-Cache-Status a hit where X-Cache no longer is. */
START_TEST(verdicts_by_the_rule)
{
	static struct agile_state_slot slot;
	struct agile_resilience_config c;

	memset(&c, 0, sizeof(c));
	memset(&slot, 0, sizeof(slot));
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 502 Bad Gateway\r\n\r\n"),
	                 AGILE_HTTP_FAILED);
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 200 OK\r\n"
	                         "X-Cache: TCP_HIT\r\n\r\n"), AGILE_HTTP_SKIP);
	c.status_lists = (1u << AGILE_STATUS_UNREACHABLE) |
	                 (1u << AGILE_STATUS_IGNORE);
	c.status_list[AGILE_STATUS_UNREACHABLE][(502 - 100) / 64] |=
		UINT64_C(1) << ((502 - 100) % 64);
	c.status_list[AGILE_STATUS_IGNORE][(202 - 100) / 64] |=
		UINT64_C(1) << ((202 - 100) % 64);
	c.cache_hit_count = 1;
	strcpy(c.cache_hit[0], "CF-Cache-Status");
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 502 Bad Gateway\r\n\r\n"),
	                 AGILE_HTTP_REFUSED);
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 202 Accepted\r\n\r\n"),
	                 AGILE_HTTP_SKIP);
	ck_assert_uint_eq(slot.resilience.http_ignored, 1);
	/* overload= not given: its default still holds. */
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 503 Busy\r\n\r\n"),
	                 AGILE_HTTP_REFUSED);
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 504 Timeout\r\n\r\n"),
	                 AGILE_HTTP_FAILED);
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 200 OK\r\n"
	                         "X-Cache: HIT\r\n\r\n"), AGILE_HTTP_SAMPLE);
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 200 OK\r\n"
	                         "cf-cache-status: hit\r\n\r\n"),
	                 AGILE_HTTP_SKIP);
	ck_assert_uint_eq(slot.resilience.http_cache_hits, 2);
	/* overload=none: a 503 is another 5xx. */
	c.status_lists |= 1u << AGILE_STATUS_OVERLOAD;
	ck_assert_int_eq(verdict(&c, &slot, "HTTP/1.1 503 Busy\r\n\r\n"),
	                 AGILE_HTTP_FAILED);
}
END_TEST

static struct agile_http_frame frame(const char *m, bool response)
{
	struct agile_http_frame f;

	agile__http_frame(m, strlen(m), response, &f);
	return f;
}

/* What a listener with proto=http reads of a message's framing
 * (inbound.c): where the head ends, the body's length, and whether the
 * connection ends with it. */
START_TEST(frame_requests)
{
	struct agile_http_frame f;

	f = frame("GET / HTTP/1.1\r\nHost: a\r\n\r\n", false);
	ck_assert_uint_eq(f.head_len, 27);
	ck_assert_int_eq(f.body, 0);
	ck_assert(!f.close && !f.head_method && !f.options_method);
	f = frame("POST /x HTTP/1.1\r\nContent-Length: 12\r\n\r\nab", false);
	ck_assert_int_eq(f.body, 12);
	ck_assert_uint_eq(f.head_len, 40);
	f = frame("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked"
	          "\r\n\r\n", false);
	ck_assert_int_eq(f.body, AGILE_HTTP_CHUNKED);
	f = frame("POST /x HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", false);
	ck_assert_int_eq(f.body, AGILE_HTTP_TO_CLOSE);
	f = frame("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n",
	          false);
	ck_assert(f.close);
	f = frame("GET / HTTP/1.0\r\n\r\n", false);
	ck_assert(f.close);
	f = frame("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", false);
	ck_assert(!f.close);
	f = frame("HEAD / HTTP/1.1\r\n\r\n", false);
	ck_assert(f.head_method);
	f = frame("OPTIONS * HTTP/1.1\r\n\r\n", false);
	ck_assert(f.options_method);
	/* A head cut short is not framed at all. */
	f = frame("GET / HTTP/1.1\r\nHost: a\r\n", false);
	ck_assert_uint_eq(f.head_len, 0);
	f = frame("GET / HTTP/1.1\r\nHost: a\r\n\r", false);
	ck_assert_uint_eq(f.head_len, 0);
}
END_TEST

START_TEST(frame_responses)
{
	struct agile_http_frame f;

	f = frame("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n", true);
	ck_assert_int_eq(f.status, 200);
	ck_assert_uint_eq(f.head_len, 38);
	ck_assert_int_eq(f.body, 3);
	f = frame("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true);
	ck_assert_int_eq(f.body, AGILE_HTTP_CHUNKED);
	f = frame("HTTP/1.1 200 OK\r\n\r\n", true);
	ck_assert_int_eq(f.body, AGILE_HTTP_TO_CLOSE);
	/* No body, whatever the headers say. */
	f = frame("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
	          true);
	ck_assert_int_eq(f.body, 0);
	f = frame("HTTP/1.1 204 No Content\r\n\r\n", true);
	ck_assert_int_eq(f.body, 0);
	f = frame("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", true);
	ck_assert(f.close);
}
END_TEST

static Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("retry_after");

	tcase_add_test(tc, http_date_three_forms);
	tcase_add_test(tc, http_date_refuses_what_the_grammar_does_not_spell);
	tcase_add_test(tc, http_date_rfc850_century);
	tcase_add_test(tc, retry_after_delta_seconds);
	tcase_add_test(tc, retry_after_http_date);
	tcase_add_test(tc, response_pauses_until_the_date);
	suite_add_tcase(s, tc);
	tc = tcase_create("interim");
	tcase_add_test(tc, interim_responses_alone);
	suite_add_tcase(s, tc);
	tc = tcase_create("verdicts");
	tcase_add_test(tc, verdicts_by_the_rule);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame");
	tcase_add_test(tc, frame_requests);
	tcase_add_test(tc, frame_responses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(http_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
