/*
 * check_http2.c - HTTP/2's frames that are neither a request nor a
 * response (src/common/http2.c): the client preface, recognised exactly; a
 * send of whole connection-keeping frames (nghttp2's closing GOAWAY, a
 * SETTINGS acknowledgement), across iovecs, and not when a HEADERS or DATA
 * frame, a frame cut short or more comes with them; a read of the
 * server's SETTINGS, PING or WINDOW_UPDATE, but not its RST_STREAM or
 * GOAWAY, which answer.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http2.h"

/* The frames as nghttp2 writes them (h2load, byte for byte). */
#define GOAWAY "\0\0\x08\x07\0\0\0\0\0" "\0\0\0\0" "\0\0\0\0"
#define SETTINGS_ACK "\0\0\0\x04\x01\0\0\0\0"
#define SETTINGS "\0\0\x06\x04\0\0\0\0\0" "\0\x03\0\0\0\x64"
#define WINDOW_UPDATE "\0\0\x04\x08\0\0\0\0\0" "\0\x0f\0\x01"
#define PING_ACK "\0\0\x08\x06\x01\0\0\0\0" "12345678"
#define RST_STREAM "\0\0\x04\x03\0\0\0\0\x01" "\0\0\0\x08"
#define HEADERS "\0\0\x05\x01\x05\0\0\0\x03" "\x85\x86\xbf\x82\xbe"
#define DATA "\0\0\x03\0\x01\0\0\0\x01" "ok\n"

static bool no_request(const char *p, size_t n)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };

	return agile__h2_no_request(&iov, 1);
}

#define NO_REQUEST(literal) no_request(literal, sizeof(literal) - 1)
#define NO_RESPONSE(literal) \
	agile__h2_no_response(literal, sizeof(literal) - 1)

START_TEST(client_preface)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

	ck_assert(agile__h2_preface(preface, 24));
	/* With the client's SETTINGS and first request, as h2load sends it. */
	ck_assert(agile__h2_preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	                            SETTINGS HEADERS, 24 + 15 + 14));
	ck_assert(!agile__h2_preface(preface, 23));
	ck_assert(!agile__h2_preface("PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", 24));
	ck_assert(!agile__h2_preface("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27));
	ck_assert(!agile__h2_preface(NULL, 24));
}
END_TEST

START_TEST(sends_that_keep_the_connection)
{
	struct iovec split[] = {
		{ .iov_base = (void *)GOAWAY, .iov_len = 4 },
		{ .iov_base = NULL, .iov_len = 0 },
		{ .iov_base = (void *)(GOAWAY + 4), .iov_len = 13 },
	};

	ck_assert(NO_REQUEST(GOAWAY));
	ck_assert(NO_REQUEST(SETTINGS_ACK));
	ck_assert(NO_REQUEST(SETTINGS));
	ck_assert(NO_REQUEST(WINDOW_UPDATE));
	ck_assert(NO_REQUEST(PING_ACK));
	ck_assert(NO_REQUEST(RST_STREAM));
	ck_assert(NO_REQUEST(SETTINGS_ACK WINDOW_UPDATE GOAWAY));
	ck_assert(agile__h2_no_request(split, 3));
	ck_assert(!agile__h2_no_request(split, 2));
}
END_TEST

START_TEST(sends_that_are_requests)
{
	char big[300];

	ck_assert(!NO_REQUEST(HEADERS));
	ck_assert(!NO_REQUEST(DATA));
	ck_assert(!NO_REQUEST(SETTINGS_ACK HEADERS));
	ck_assert(!NO_REQUEST(HEADERS GOAWAY));
	/* Cut short, or with bytes after the last frame. */
	ck_assert(!no_request(GOAWAY, 16));
	ck_assert(!no_request(SETTINGS_ACK, 8));
	ck_assert(!NO_REQUEST(GOAWAY "\0"));
	ck_assert(!NO_REQUEST(""));
	ck_assert(!agile__h2_no_request(NULL, 0));
	/* Frame types past CONTINUATION. */
	ck_assert(!NO_REQUEST("\0\0\0\x0a\0\0\0\0\0"));
	/* Longer than any send of control frames looked at. */
	memset(big, 0, sizeof(big));
	big[1] = (char)((sizeof(big) - 9) >> 8);
	big[2] = (char)(sizeof(big) - 9);
	big[3] = 7;
	ck_assert(!no_request(big, sizeof(big)));
	/* Text. */
	ck_assert(!NO_REQUEST("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
}
END_TEST

START_TEST(reads_that_answer_no_request)
{
	ck_assert(NO_RESPONSE(SETTINGS));
	ck_assert(NO_RESPONSE(SETTINGS WINDOW_UPDATE));
	ck_assert(NO_RESPONSE(SETTINGS_ACK));
	ck_assert(NO_RESPONSE(PING_ACK));
	/* A response, and the server's refusals, answer. */
	ck_assert(!NO_RESPONSE(SETTINGS HEADERS DATA));
	ck_assert(!NO_RESPONSE(HEADERS));
	ck_assert(!NO_RESPONSE(RST_STREAM));
	ck_assert(!NO_RESPONSE(GOAWAY));
	/* A frame the read cut short: counted as an answer, as before. */
	ck_assert(!agile__h2_no_response(SETTINGS, 10));
	ck_assert(!agile__h2_no_response(NULL, 9));
	ck_assert(!agile__h2_no_response(SETTINGS, 0));
	/* The same, as the receive path asks (read_verdict.h). */
	ck_assert_int_eq(agile__h2_read_verdict(SETTINGS, sizeof(SETTINGS) - 1),
	                 AGILE_READ_INTERIM);
	ck_assert_int_eq(agile__h2_read_verdict(HEADERS, sizeof(HEADERS) - 1),
	                 AGILE_READ_RESPONSE);
}
END_TEST

static Suite *http2_suite(void)
{
	Suite *s = suite_create("http2");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, client_preface);
	tcase_add_test(tc, sends_that_keep_the_connection);
	tcase_add_test(tc, sends_that_are_requests);
	tcase_add_test(tc, reads_that_answer_no_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(http2_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
