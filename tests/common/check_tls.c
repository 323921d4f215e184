/*
 * check_tls.c - the TLS record walker of the preload (src/common/tls.c): what
 * it recognises in TLS 1.2 and 1.3 exchanges as OpenSSL, curl and Python
 * make them, its heuristics (the encrypted Finished and close_notify by
 * size, the ticket rule's flag), and that it gives up, never guesses, on
 * anything else: a plain protocol, early data, garbage, bytes it cannot
 * see.  Records are built from their headers with zero bodies (the walker
 * never looks into a body but a client's handshake header), and fed whole,
 * split at every byte, and spread over iovecs.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

#define CCS 20
#define ALERT 21
#define HANDSHAKE 22
#define APP 23

/* A buffer of records, built one after the other. */
struct bytes {
	uint8_t data[65536];
	size_t len;
};

static void record(struct bytes *b, int type, size_t len)
{
	uint8_t *p = b->data + b->len;

	ck_assert_uint_le(b->len + 5 + len, sizeof(b->data));
	p[0] = (uint8_t)type;
	p[1] = 3;
	p[2] = 3;
	p[3] = (uint8_t)(len >> 8);
	p[4] = (uint8_t)len;
	memset(p + 5, 0xa5, len);
	b->len += 5 + len;
}

/* A handshake record holding one message of `type` that fills it. */
static void handshake(struct bytes *b, int type, size_t body)
{
	uint8_t *p = b->data + b->len + 5;

	record(b, HANDSHAKE, 4 + body);
	p[0] = (uint8_t)type;
	p[1] = (uint8_t)(body >> 16);
	p[2] = (uint8_t)(body >> 8);
	p[3] = (uint8_t)body;
}

static void client_hello(struct bytes *b)
{
	handshake(b, 1, 508);
}

static struct bytes *fresh(void)
{
	static struct bytes b;

	b.len = 0;
	return &b;
}

static enum agile_tls_send send_all(struct agile_tls *tls,
                                    const struct bytes *b)
{
	struct iovec iov = { (void *)b->data, b->len };
	enum agile_tls_send predicted = agile__tls_classify(tls, &iov, 1,
	                                                    b->len);
	enum agile_tls_send sent = agile__tls_sent(tls, &iov, 1, b->len);

	ck_assert_msg(predicted == sent, "classify said %d, sent said %d",
	              predicted, sent);
	return sent;
}

static unsigned receive_all(struct agile_tls *tls, const struct bytes *b)
{
	struct iovec iov = { (void *)b->data, b->len };

	return agile__tls_received(tls, &iov, 1, b->len);
}

/* Receive as OpenSSL reads: each record's header, then its body. */
static unsigned receive_by_record(struct agile_tls *tls,
                                  const struct bytes *b)
{
	unsigned bits = 0;

	for (size_t at = 0; at < b->len;) {
		size_t body = (size_t)b->data[at + 3] << 8 | b->data[at + 4];
		struct iovec head = { (void *)(b->data + at), 5 };
		struct iovec rest = { (void *)(b->data + at + 5), body };

		bits |= agile__tls_received(tls, &head, 1, 5);
		if (body > 0)
			ck_assert_uint_eq(agile__tls_received(tls, &rest, 1,
			                                      body), 0);
		at += 5 + body;
	}
	return bits;
}

static uint8_t stage(const struct agile_tls *tls)
{
	return agile__tls_stage(tls);
}

/* One record of a server's flight: its content type and body length. */
struct rec {
	int type;
	size_t len;
};

/* A flight of records, ended by one of type 0. */
#define FLIGHT(...) ((const struct rec[]){ __VA_ARGS__, { 0, 0 } })

/* The opening of every TLS 1.3 connection here: the ClientHello, then the
 * server's flight in one read, its ServerHello (118 bytes, as OpenSSL's)
 * followed by the records of `flight`. */
static void tls13_hello(struct agile_tls *tls, const struct rec *flight)
{
	struct bytes *b = fresh();

	agile__tls_reset(tls);
	client_hello(b);
	ck_assert_int_eq(send_all(tls, b), AGILE_TLS_SEND_HELLO);
	ck_assert_int_eq(stage(tls), AGILE_TLS_HELLO);
	b = fresh();
	handshake(b, 2, 118);
	for (; flight->type != 0; flight++)
		record(b, flight->type, flight->len);
	ck_assert_uint_eq(receive_all(tls, b), AGILE_TLS_RECV_HELLO_ANSWER);
	ck_assert(tls->flags & AGILE_TLS_V13);
}

/* A TLS 1.3 connection up to its application data, as OpenSSL makes it:
 * the ClientHello; ServerHello, change_cipher_spec and the encrypted
 * EncryptedExtensions, Certificate, CertificateVerify, Finished; then the
 * client's change_cipher_spec and Finished in one write. */
static void tls13_handshake(struct agile_tls *tls)
{
	struct bytes *b;

	tls13_hello(tls, FLIGHT({ CCS, 1 }, { APP, 27 }, { APP, 800 },
	                        { APP, 97 }, { APP, 53 }));
	ck_assert_int_eq(stage(tls), AGILE_TLS_FINISHING);
	b = fresh();
	record(b, CCS, 1);
	record(b, APP, 53);
	ck_assert_int_eq(send_all(tls, b), AGILE_TLS_SEND_NONE);
	ck_assert_int_eq(stage(tls), AGILE_TLS_APP);
}

/* A TLS 1.2 full handshake: ServerHello to ServerHelloDone; the client's
 * ClientKeyExchange, change_cipher_spec and encrypted Finished; the
 * server's change_cipher_spec and Finished. */
static void tls12_handshake(struct agile_tls *tls)
{
	struct bytes *b = fresh();

	agile__tls_reset(tls);
	client_hello(b);
	ck_assert_int_eq(send_all(tls, b), AGILE_TLS_SEND_HELLO);
	b = fresh();
	handshake(b, 2, 80);
	handshake(b, 11, 700);
	handshake(b, 12, 140);
	handshake(b, 14, 0);
	ck_assert_uint_eq(receive_by_record(tls, b),
	                  AGILE_TLS_RECV_HELLO_ANSWER);
	ck_assert_int_eq(stage(tls), AGILE_TLS_HANDSHAKE);
	b = fresh();
	handshake(b, 16, 33);
	record(b, CCS, 1);
	record(b, HANDSHAKE, 40);
	ck_assert_int_eq(send_all(tls, b), AGILE_TLS_SEND_NONE);
	ck_assert(tls->flags & AGILE_TLS_NOT_V13);
	b = fresh();
	record(b, CCS, 1);
	record(b, HANDSHAKE, 40);
	ck_assert_uint_eq(receive_all(tls, b), 0);
	ck_assert_int_eq(stage(tls), AGILE_TLS_HANDSHAKE);
}

START_TEST(tls13_request_response_goodbye)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_handshake(&tls);
	b = fresh();
	record(b, APP, 95);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert(tls.flags & AGILE_TLS_TICKET_RULE);
	/* Two NewSessionTickets, then the response.  The first record
	 * answers the request (which one ends its round trip is track.c's
	 * rule); one as long as it is taken for another ticket. */
	b = fresh();
	record(b, APP, 250);
	ck_assert_uint_eq(receive_by_record(&tls, b), AGILE_TLS_RECV_RESPONSE);
	ck_assert_uint_eq(receive_by_record(&tls, b), 0);
	b = fresh();
	record(b, APP, 120);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_RESPONSE);
	/* A kept-alive request has no ticket rule. */
	tls.flags &= (uint16_t)~AGILE_TLS_TICKET_RULE;
	b = fresh();
	record(b, APP, 95);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert(!(tls.flags & AGILE_TLS_TICKET_RULE));
	/* close_notify: 2 bytes of alert, the inner type, a 16-byte tag. */
	b = fresh();
	record(b, APP, 19);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_GOODBYE);
	/* The server's close_notify in return is no answer to it. */
	b = fresh();
	record(b, APP, 19);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_RESPONSE);
	ck_assert(!(tls.flags & AGILE_TLS_NO_GOODBYE));
}
END_TEST

START_TEST(tls13_finished_and_request_in_one_write)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_hello(&tls, FLIGHT({ CCS, 1 }, { APP, 300 }));
	b = fresh();
	record(b, CCS, 1);
	record(b, APP, 69); /* a Finished with SHA-384 */
	record(b, APP, 200);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_APP);
}
END_TEST

START_TEST(tls13_client_certificate)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_hello(&tls, FLIGHT({ APP, 400 }));
	/* Certificate and CertificateVerify are handshake, in any number of
	 * writes, until the Finished. */
	b = fresh();
	record(b, CCS, 1);
	record(b, APP, 900);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	b = fresh();
	record(b, APP, 281);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_FINISHING);
	b = fresh();
	record(b, APP, 53);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	b = fresh();
	record(b, APP, 281);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
}
END_TEST

START_TEST(tls13_unrecognised_finished_ends_at_the_server)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_hello(&tls, FLIGHT({ APP, 400 }));
	/* A padded Finished, and the request: both taken as the flight. */
	b = fresh();
	record(b, APP, 256);
	record(b, APP, 90);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	b = fresh();
	record(b, APP, 250);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_LATE_FINISH |
	                                        AGILE_TLS_RECV_RESPONSE);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_APP);
	b = fresh();
	record(b, APP, 90);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert(!(tls.flags & AGILE_TLS_TICKET_RULE));
}
END_TEST

START_TEST(tls13_tickets_read_before_the_request)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_handshake(&tls);
	b = fresh();
	record(b, APP, 250);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_RESPONSE);
	b = fresh();
	record(b, APP, 95);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert(!(tls.flags & AGILE_TLS_TICKET_RULE));
}
END_TEST

START_TEST(tls13_hello_retry)
{
	struct agile_tls tls;
	struct bytes *b = fresh();

	agile__tls_reset(&tls);
	client_hello(b);
	send_all(&tls, b);
	b = fresh();
	handshake(b, 2, 88); /* HelloRetryRequest */
	record(b, CCS, 1);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_HELLO_ANSWER);
	b = fresh();
	record(b, CCS, 1);
	client_hello(b);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	b = fresh();
	handshake(b, 2, 118);
	record(b, CCS, 1);
	record(b, APP, 500);
	ck_assert_uint_eq(receive_all(&tls, b), 0);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_FINISHING);
	ck_assert(tls.flags & AGILE_TLS_V13);
}
END_TEST

START_TEST(tls13_goodbye_that_was_a_request)
{
	struct agile_tls tls;
	struct bytes *b;

	tls13_handshake(&tls);
	b = fresh();
	record(b, APP, 19); /* a 2-byte request */
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_GOODBYE);
	b = fresh();
	record(b, APP, 40);
	ck_assert_uint_eq(receive_all(&tls, b),
	                  AGILE_TLS_RECV_GOODBYE_ANSWERED |
	                  AGILE_TLS_RECV_RESPONSE);
	b = fresh();
	record(b, APP, 19);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
}
END_TEST

START_TEST(tls12_request_response_alert)
{
	struct agile_tls tls;
	struct bytes *b;

	tls12_handshake(&tls);
	b = fresh();
	record(b, APP, 120);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	ck_assert(!(tls.flags & AGILE_TLS_TICKET_RULE));
	b = fresh();
	record(b, APP, 300);
	ck_assert_uint_eq(receive_by_record(&tls, b), AGILE_TLS_RECV_RESPONSE);
	/* In TLS 1.2 a 19-byte record is a request: only 1.3 hides alerts. */
	b = fresh();
	record(b, APP, 19);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
	b = fresh();
	record(b, ALERT, 26);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_GOODBYE);
}
END_TEST

START_TEST(tls12_resumption_and_server_first)
{
	struct agile_tls tls;
	struct bytes *b = fresh();

	agile__tls_reset(&tls);
	client_hello(b);
	send_all(&tls, b);
	b = fresh();
	handshake(b, 2, 80);
	record(b, CCS, 1);
	record(b, HANDSHAKE, 40);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_HELLO_ANSWER);
	b = fresh();
	record(b, CCS, 1);
	record(b, HANDSHAKE, 40); /* encrypted Finished: not a ClientHello */
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_NONE);
	/* The server speaks first (an IMAP greeting): still TLS 1.2. */
	b = fresh();
	record(b, APP, 60);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_RESPONSE);
	ck_assert(!(tls.flags & AGILE_TLS_V13));
	ck_assert_int_eq(stage(&tls), AGILE_TLS_APP);
	b = fresh();
	record(b, APP, 40);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_REQUEST);
}
END_TEST

/* Every split of a TLS 1.3 exchange's client bytes into two writes gives
 * the same stages as one write, and no record is counted twice. */
START_TEST(split_writes)
{
	struct bytes whole;
	struct agile_tls tls;

	tls13_handshake(&tls);
	whole.len = 0;
	record(&whole, APP, 95);
	record(&whole, APP, 19);
	for (size_t cut = 0; cut <= whole.len; cut++) {
		struct agile_tls t = tls;
		struct iovec first = { whole.data, cut };
		struct iovec second = { whole.data + cut, whole.len - cut };
		enum agile_tls_send a = agile__tls_sent(&t, &first, 1, cut);
		enum agile_tls_send b;

		b = agile__tls_sent(&t, &second, 1, whole.len - cut);
		ck_assert_msg(a == AGILE_TLS_SEND_REQUEST ||
		              b == AGILE_TLS_SEND_REQUEST,
		              "cut %zu: no request (%d, %d)", cut, a, b);
		ck_assert_msg(!(a == AGILE_TLS_SEND_REQUEST &&
		                b == AGILE_TLS_SEND_REQUEST),
		              "cut %zu: two requests", cut);
		ck_assert_int_eq(t.out.have, 0);
		ck_assert_int_eq(t.out.skip, 0);
		ck_assert_int_eq(stage(&t), AGILE_TLS_APP);
	}
}
END_TEST

/* A partial send: what the call would carry decides the wait, what went
 * out moves the walker, and the rest is seen when it is sent. */
START_TEST(partial_send)
{
	struct agile_tls tls;
	struct bytes *b;
	struct iovec iov;

	tls13_handshake(&tls);
	b = fresh();
	record(b, APP, 95);
	iov.iov_base = b->data;
	iov.iov_len = b->len;
	/* Three header bytes: a request by its type, not yet counted. */
	ck_assert_int_eq(agile__tls_classify(&tls, &iov, 1, 3),
	                 AGILE_TLS_SEND_REQUEST);
	ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, 3), AGILE_TLS_SEND_NONE);
	iov.iov_base = b->data + 3;
	iov.iov_len = b->len - 3;
	ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, 4),
	                 AGILE_TLS_SEND_REQUEST);
	iov.iov_base = b->data + 7;
	iov.iov_len = b->len - 7;
	ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, b->len - 7),
	                 AGILE_TLS_SEND_NONE);
	ck_assert_int_eq(tls.out.skip, 0);
}
END_TEST

START_TEST(writev_across_iovecs)
{
	struct agile_tls tls;
	struct bytes *b = fresh();
	struct iovec iov[4];

	agile__tls_reset(&tls);
	client_hello(b);
	/* The header, the handshake type, the rest: as GnuTLS may hand its
	 * records to writev. */
	iov[0].iov_base = b->data;
	iov[0].iov_len = 5;
	iov[1].iov_base = b->data + 5;
	iov[1].iov_len = 1;
	iov[2].iov_base = NULL;
	iov[2].iov_len = 0;
	iov[3].iov_base = b->data + 6;
	iov[3].iov_len = b->len - 6;
	ck_assert_int_eq(agile__tls_classify(&tls, iov, 4, b->len),
	                 AGILE_TLS_SEND_HELLO);
	ck_assert_int_eq(agile__tls_sent(&tls, iov, 4, b->len),
	                 AGILE_TLS_SEND_HELLO);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_HELLO);
}
END_TEST

START_TEST(first_bytes_one_at_a_time)
{
	struct agile_tls tls;
	struct bytes *b = fresh();

	agile__tls_reset(&tls);
	client_hello(b);
	for (size_t i = 0; i < 8; i++) {
		struct iovec one = { b->data + i, 1 };

		ck_assert_int_eq(agile__tls_sent(&tls, &one, 1, 1),
		                 AGILE_TLS_SEND_PLAIN);
		ck_assert_int_eq(stage(&tls), AGILE_TLS_UNKNOWN);
	}
	{
		struct iovec rest = { b->data + 8, b->len - 8 };

		ck_assert_int_eq(agile__tls_sent(&tls, &rest, 1, b->len - 8),
		                 AGILE_TLS_SEND_HELLO);
	}
}
END_TEST

START_TEST(plain_protocols_are_given_up)
{
	static const char *const firsts[] = {
		"GET / HTTP/1.1\r\n\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00", /* a ServerHello */
		"\x16\x02\x00\x00\x05\x01\x00\x00\x01\x00", /* SSL 2 version */
		"\x16\x03\x01\x00\x06\x01\x00\x00\x01\x00\x00", /* short hello */
		"\x17\x03\x03\x00\x05hello",
	};

	for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
		struct agile_tls tls;
		size_t len = strlen(firsts[i]);
		struct iovec iov = { (void *)firsts[i], len };

		/* The embedded NULs end strlen early on purpose only where
		 * the hello is already wrong before them. */
		if (firsts[i][0] == 0x16)
			len = 10 + (i == 4);
		iov.iov_len = len;
		agile__tls_reset(&tls);
		ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, len),
		                 AGILE_TLS_SEND_PLAIN);
		ck_assert_msg(stage(&tls) == AGILE_TLS_OFF, "first bytes %zu",
		              i);
		ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, len),
		                 AGILE_TLS_SEND_PLAIN);
	}
}
END_TEST

START_TEST(gives_up_on_what_it_cannot_follow)
{
	struct agile_tls tls;
	struct bytes *b;
	struct iovec iov;

	/* Early data: application data before the server's first record. */
	agile__tls_reset(&tls);
	b = fresh();
	client_hello(b);
	record(b, APP, 100);
	ck_assert_int_eq(send_all(&tls, b), AGILE_TLS_SEND_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_OFF);

	/* Garbage where a header should be (kTLS hands the socket plaintext
	 * once the handshake is done). */
	tls13_handshake(&tls);
	iov.iov_base = (void *)"GET / HTTP/1.1\r\n";
	iov.iov_len = 16;
	ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, 16),
	                 AGILE_TLS_SEND_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_OFF);

	/* A record longer than any version allows. */
	tls13_handshake(&tls);
	b = fresh();
	record(b, APP, 16384 + 2048);
	ck_assert_uint_eq(receive_all(&tls, b), AGILE_TLS_RECV_RESPONSE);
	iov.iov_base = (void *)"\x17\x03\x03\x48\x01";
	iov.iov_len = 5;
	ck_assert_uint_eq(agile__tls_received(&tls, &iov, 1, 5),
	                  AGILE_TLS_RECV_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_OFF);

	/* Bytes it cannot see (sendfile, recvmmsg). */
	tls13_handshake(&tls);
	ck_assert_int_eq(agile__tls_classify(&tls, NULL, 0, 100),
	                 AGILE_TLS_SEND_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_APP);
	iov.iov_base = NULL;
	iov.iov_len = 100;
	ck_assert_int_eq(agile__tls_sent(&tls, &iov, 1, 100),
	                 AGILE_TLS_SEND_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_OFF);

	/* The server speaking first is no TLS client's connection. */
	agile__tls_reset(&tls);
	iov.iov_base = (void *)"220 ready\r\n";
	iov.iov_len = 11;
	ck_assert_uint_eq(agile__tls_received(&tls, &iov, 1, 11),
	                  AGILE_TLS_RECV_PLAIN);
	ck_assert_int_eq(stage(&tls), AGILE_TLS_OFF);
}
END_TEST

/* The send that starts TLS on a plain connection (STARTTLS): a whole
 * ClientHello record's header and handshake header in the first iovec's
 * first 9 bytes, and nothing else that starts with the handshake type. */
START_TEST(starts_hello_on_a_plain_connection)
{
	struct bytes *b = fresh();
	struct iovec iov = { .iov_base = b->data };
	struct iovec split[2];

	client_hello(b);
	iov.iov_len = b->len;
	ck_assert(agile__tls_starts_hello(&iov, 1));
	/* Its header and handshake header are all it needs. */
	iov.iov_len = 9;
	ck_assert(agile__tls_starts_hello(&iov, 1));
	iov.iov_len = 8;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	ck_assert(!agile__tls_starts_hello(NULL, 0));
	ck_assert(!agile__tls_starts_hello(&iov, 0));
	/* Split over iovecs it is not seen (the byte-level rules go on). */
	split[0].iov_base = b->data;
	split[0].iov_len = 4;
	split[1].iov_base = b->data + 4;
	split[1].iov_len = b->len - 4;
	ck_assert(!agile__tls_starts_hello(split, 2));

	/* Another handshake message, a version that is not 3.x, a length
	 * that does not fill the record, an application-data record. */
	b = fresh();
	handshake(b, 2, 100);
	iov.iov_base = b->data;
	iov.iov_len = b->len;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	b = fresh();
	client_hello(b);
	b->data[1] = 2;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	b->data[1] = 3;
	b->data[8]++;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	b = fresh();
	record(b, APP, 100);
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	/* Plain protocols' commands. */
	iov.iov_base = (void *)"STARTTLS\r\n";
	iov.iov_len = 10;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
	iov.iov_base = (void *)"\0\0\0\x08\x04\xd2\x16\x2f\0";
	iov.iov_len = 9;
	ck_assert(!agile__tls_starts_hello(&iov, 1));
}
END_TEST

/* A receive's facts make one verdict (tls.h): the handshake's answer
 * wins over data behind it, application data is a response whatever it
 * corrects, and the corrections alone answer nothing. */
START_TEST(read_verdict_of_the_facts)
{
	ck_assert_int_eq(agile__tls_read_verdict(0), AGILE_READ_DATA);
	ck_assert_int_eq(agile__tls_read_verdict(AGILE_TLS_RECV_HELLO_ANSWER),
	                 AGILE_READ_SETUP);
	ck_assert_int_eq(agile__tls_read_verdict(AGILE_TLS_RECV_HELLO_ANSWER |
	                                         AGILE_TLS_RECV_RESPONSE),
	                 AGILE_READ_SETUP);
	ck_assert_int_eq(agile__tls_read_verdict(AGILE_TLS_RECV_RESPONSE),
	                 AGILE_READ_RESPONSE);
	ck_assert_int_eq(agile__tls_read_verdict(AGILE_TLS_RECV_LATE_FINISH |
	                                         AGILE_TLS_RECV_RESPONSE),
	                 AGILE_READ_RESPONSE);
	ck_assert_int_eq(agile__tls_read_verdict(
	                         AGILE_TLS_RECV_GOODBYE_ANSWERED |
	                         AGILE_TLS_RECV_RESPONSE),
	                 AGILE_READ_RESPONSE);
	ck_assert_int_eq(agile__tls_read_verdict(AGILE_TLS_RECV_LATE_FINISH),
	                 AGILE_READ_DATA);
	ck_assert_uint_eq(AGILE_TLS_RECV_CORRECTIONS &
	                  (AGILE_TLS_RECV_HELLO_ANSWER | AGILE_TLS_RECV_RESPONSE |
	                   AGILE_TLS_RECV_PLAIN), 0);
}
END_TEST

static Suite *tls_suite(void)
{
	Suite *s = suite_create("tls");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, tls13_request_response_goodbye);
	tcase_add_test(tc, tls13_finished_and_request_in_one_write);
	tcase_add_test(tc, tls13_client_certificate);
	tcase_add_test(tc, tls13_unrecognised_finished_ends_at_the_server);
	tcase_add_test(tc, tls13_tickets_read_before_the_request);
	tcase_add_test(tc, tls13_hello_retry);
	tcase_add_test(tc, tls13_goodbye_that_was_a_request);
	tcase_add_test(tc, tls12_request_response_alert);
	tcase_add_test(tc, tls12_resumption_and_server_first);
	tcase_add_test(tc, split_writes);
	tcase_add_test(tc, partial_send);
	tcase_add_test(tc, writev_across_iovecs);
	tcase_add_test(tc, first_bytes_one_at_a_time);
	tcase_add_test(tc, plain_protocols_are_given_up);
	tcase_add_test(tc, gives_up_on_what_it_cannot_follow);
	tcase_add_test(tc, starts_hello_on_a_plain_connection);
	tcase_add_test(tc, read_verdict_of_the_facts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(tls_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
