/*
 * tls.c - a client's TLS connection read from its record headers (what is
 * recognised, and what is a heuristic, is in tls.h).
 *
 * The walker takes each direction's bytes as they pass, in any pieces: a
 * record header split across two writes, or across the iovecs of one
 * writev, is gathered in head[] until it is whole, and a record's body is
 * skipped by its length without being looked at.  A header is checked as
 * its bytes arrive (type 20 to 24, version 3.0 to 3.4, length at most
 * 2^14 + 2048), so a plain protocol is given up at its first byte.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "tls.h"

#define TYPE_CHANGE_CIPHER_SPEC 20
#define TYPE_ALERT 21
#define TYPE_HANDSHAKE 22
#define TYPE_APPLICATION_DATA 23
#define TYPE_HEARTBEAT 24

#define HEADER_LEN 5
#define HANDSHAKE_HEADER_LEN 4
#define HANDSHAKE_CLIENT_HELLO 1
/* The longest record any version allows (TLS 1.2's TLSCiphertext). */
#define RECORD_MAX (16384 + 2048)

/* TLS 1.3's encrypted client Finished: a 4-byte handshake header, a MAC as
 * long as the suite's hash (32 or 48 bytes), the inner content type, and a
 * 16-byte AEAD tag (8 with AES-CCM-8), unpadded. */
static bool finished_sized(size_t len)
{
	return len == 4 + 32 + 1 + 16 || len == 4 + 48 + 1 + 16 ||
	       len == 4 + 32 + 1 + 8;
}

/* TLS 1.3's encrypted close_notify: a 2-byte alert, the inner type and the
 * tag, unpadded. */
static bool close_notify_sized(size_t len)
{
	return len == 2 + 1 + 16 || len == 2 + 1 + 8;
}

static void set_stage(struct agile_tls *tls, uint8_t stage)
{
	__atomic_store_n(&tls->stage, stage, __ATOMIC_RELAXED);
}

static uint16_t flags_of(const struct agile_tls *tls)
{
	return agile__tls_flags(tls);
}

static void set_flags(struct agile_tls *tls, uint16_t bits)
{
	__atomic_fetch_or(&tls->flags, bits, __ATOMIC_RELAXED);
}

static void clear_flags(struct agile_tls *tls, uint16_t bits)
{
	__atomic_fetch_and(&tls->flags, (uint16_t)~bits, __ATOMIC_RELAXED);
}

static size_t record_length(const uint8_t *head)
{
	return (size_t)head[3] << 8 | head[4];
}

/* Could the `have` bytes gathered so far begin a record?  The connection's
 * first record must be a handshake record. */
static bool head_plausible(const uint8_t *head, unsigned have, bool first)
{
	if (have >= 1 && (head[0] < TYPE_CHANGE_CIPHER_SPEC ||
	                  head[0] > TYPE_HEARTBEAT ||
	                  (first && head[0] != TYPE_HANDSHAKE)))
		return false;
	if (have >= 2 && head[1] != 3)
		return false;
	if (have >= 3 && head[2] > 4)
		return false;
	return have < HEADER_LEN || record_length(head) <= RECORD_MAX;
}

/* A ClientHello that fills its record (header and handshake header seen). */
static bool is_client_hello(const uint8_t *head, unsigned have)
{
	size_t length;

	if (have < HEADER_LEN + HANDSHAKE_HEADER_LEN ||
	    head[0] != TYPE_HANDSHAKE || head[5] != HANDSHAKE_CLIENT_HELLO)
		return false;
	length = (size_t)head[6] << 16 | (size_t)head[7] << 8 | head[8];
	return length + HANDSHAKE_HEADER_LEN == record_length(head);
}

/* How many head bytes a record needs before it is acted on: its header,
 * and of a client's handshake record as much of the handshake header as it
 * has (the ClientHello is told by it). */
static unsigned head_wanted(const struct agile_tls_stream *st, bool client)
{
	size_t body;

	if (st->have < HEADER_LEN || !client || st->head[0] != TYPE_HANDSHAKE)
		return HEADER_LEN;
	body = record_length(st->head);
	return HEADER_LEN + (body < HANDSHAKE_HEADER_LEN
	                     ? (unsigned)body : HANDSHAKE_HEADER_LEN);
}

static unsigned give_up(struct agile_tls *tls, bool client)
{
	set_stage(tls, AGILE_TLS_OFF);
	return client ? AGILE_TLS_SEND_PLAIN : AGILE_TLS_RECV_PLAIN;
}

/* A client request: the first of a TLS 1.3 connection, sent before the
 * server's tickets were read, takes the ticket rule (tls.h). */
static unsigned request(struct agile_tls *tls)
{
	uint16_t flags = flags_of(tls);

	if (!(flags & AGILE_TLS_REQUESTED)) {
		set_flags(tls, AGILE_TLS_REQUESTED);
		if ((flags & AGILE_TLS_V13) && !(flags & AGILE_TLS_SERVER_APP))
			set_flags(tls, AGILE_TLS_TICKET_RULE);
	}
	return AGILE_TLS_SEND_REQUEST;
}

/* The client sent a record whose head is `head`. */
static unsigned client_record(struct agile_tls *tls, const uint8_t *head,
                              unsigned have)
{
	uint8_t stage = agile__tls_stage(tls);
	size_t length = record_length(head);

	if (stage == AGILE_TLS_UNKNOWN) {
		if (!is_client_hello(head, have))
			return give_up(tls, true);
		set_stage(tls, AGILE_TLS_HELLO);
		return AGILE_TLS_SEND_HELLO;
	}
	switch (head[0]) {
	case TYPE_ALERT:
		return AGILE_TLS_SEND_GOODBYE;
	case TYPE_HANDSHAKE:
		/* TLS 1.3 sends no plaintext handshake but ClientHellos (a
		 * second one after a HelloRetryRequest); TLS 1.2 sends its
		 * ClientKeyExchange and Finished this way. */
		if ((stage == AGILE_TLS_HELLO || stage == AGILE_TLS_HANDSHAKE) &&
		    !is_client_hello(head, have))
			set_flags(tls, AGILE_TLS_NOT_V13);
		return AGILE_TLS_SEND_NONE;
	case TYPE_APPLICATION_DATA:
		switch (stage) {
		case AGILE_TLS_HELLO:
			/* Early data: not followed. */
			return give_up(tls, true);
		case AGILE_TLS_HANDSHAKE:
			/* TLS 1.2: the handshake is over on the client's side. */
			set_stage(tls, AGILE_TLS_APP);
			return request(tls);
		case AGILE_TLS_FINISHING:
			set_flags(tls, AGILE_TLS_FLIGHT_SENT);
			if (finished_sized(length))
				set_stage(tls, AGILE_TLS_APP);
			return AGILE_TLS_SEND_NONE;
		default:
			if ((flags_of(tls) & (AGILE_TLS_V13 |
			                      AGILE_TLS_NO_GOODBYE)) ==
			    AGILE_TLS_V13 && close_notify_sized(length)) {
				set_flags(tls, AGILE_TLS_GOODBYE_SENT);
				return AGILE_TLS_SEND_GOODBYE;
			}
			return request(tls);
		}
	default: /* change_cipher_spec, heartbeat */
		return AGILE_TLS_SEND_NONE;
	}
}

/* The client received a record whose header is `head`. */
static unsigned server_record(struct agile_tls *tls, const uint8_t *head)
{
	unsigned result = 0;
	uint16_t flags = flags_of(tls);
	size_t length = record_length(head);

	switch (agile__tls_stage(tls)) {
	case AGILE_TLS_HELLO:
		set_stage(tls, AGILE_TLS_HANDSHAKE);
		return AGILE_TLS_RECV_HELLO_ANSWER;
	case AGILE_TLS_HANDSHAKE:
		if (head[0] != TYPE_APPLICATION_DATA)
			return 0;
		if (!(flags & AGILE_TLS_NOT_V13)) {
			/* Encrypted handshake before the client's Finished:
			 * TLS 1.3. */
			set_flags(tls, AGILE_TLS_V13);
			set_stage(tls, AGILE_TLS_FINISHING);
			return 0;
		}
		/* TLS 1.2, and the server speaks first. */
		set_stage(tls, AGILE_TLS_APP);
		break;
	case AGILE_TLS_FINISHING:
		if (!(flags & AGILE_TLS_FLIGHT_SENT))
			return 0; /* the rest of the server's own flight */
		set_stage(tls, AGILE_TLS_APP);
		result = AGILE_TLS_RECV_LATE_FINISH;
		break;
	case AGILE_TLS_APP:
		break;
	default:
		return give_up(tls, false);
	}
	if (head[0] != TYPE_APPLICATION_DATA)
		return result; /* alerts, renegotiation: no answer */
	if ((flags & AGILE_TLS_GOODBYE_SENT) && !close_notify_sized(length)) {
		clear_flags(tls, AGILE_TLS_GOODBYE_SENT);
		set_flags(tls, AGILE_TLS_NO_GOODBYE);
		result |= AGILE_TLS_RECV_GOODBYE_ANSWERED;
	}
	if (!(flags & AGILE_TLS_REQUESTED))
		set_flags(tls, AGILE_TLS_SERVER_APP);
	if (flags & AGILE_TLS_TICKET_RULE) {
		/* The first record after the first request may be a ticket;
		 * a record as long as it is taken for another. */
		uint16_t first = __atomic_load_n(&tls->ticket_len,
		                                 __ATOMIC_RELAXED);

		if (first == 0)
			__atomic_store_n(&tls->ticket_len, (uint16_t)length,
			                 __ATOMIC_RELAXED);
		else if (first == length)
			return result;
	}
	return result | AGILE_TLS_RECV_RESPONSE;
}

/* Walk the first `len` bytes of iov[0..count) in one direction. */
static unsigned walk(struct agile_tls *tls, bool client,
                     const struct iovec *iov, int count, size_t len)
{
	struct agile_tls_stream *st = client ? &tls->out : &tls->in;
	unsigned result = 0;

	for (int i = 0; i < count && len > 0; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		if (n > 0 && p == NULL)
			return give_up(tls, client);
		len -= n;
		while (n > 0) {
			unsigned want, take, r;

			if (st->skip > 0) {
				size_t step = st->skip < n ? st->skip : n;

				st->skip -= (uint32_t)step;
				p += step;
				n -= step;
				continue;
			}
			want = head_wanted(st, client);
			take = want - st->have < n ? want - st->have
			                           : (unsigned)n;
			memcpy(st->head + st->have, p, take);
			st->have = (uint8_t)(st->have + take);
			p += take;
			n -= take;
			if (!head_plausible(st->head, st->have, client &&
			                    agile__tls_stage(tls) ==
			                    AGILE_TLS_UNKNOWN))
				return give_up(tls, client);
			if (st->have < head_wanted(st, client))
				continue;
			r = client ? client_record(tls, st->head, st->have)
			           : server_record(tls, st->head);
			result = client ? (r > result ? r : result) : result | r;
			if (agile__tls_stage(tls) == AGILE_TLS_OFF)
				return result;
			st->skip = (uint32_t)(record_length(st->head) -
			                      (st->have - HEADER_LEN));
			st->have = 0;
		}
	}
	if (len > 0)
		return give_up(tls, client); /* fewer bytes than were moved */
	return result;
}

void agile__tls_reset(struct agile_tls *tls)
{
	memset(tls, 0, sizeof(*tls));
}

void agile__tls_stop(struct agile_tls *tls)
{
	__atomic_fetch_and(&tls->flags, (uint16_t)~AGILE_TLS_TICKET_RULE,
	                   __ATOMIC_RELAXED);
	__atomic_store_n(&tls->stage, AGILE_TLS_OFF, __ATOMIC_RELAXED);
}

bool agile__tls_hello_record(const uint8_t *p)
{
	return head_plausible(p, HEADER_LEN, true) &&
	       is_client_hello(p, HEADER_LEN + HANDSHAKE_HEADER_LEN);
}

enum agile_tls_send agile__tls_classify(const struct agile_tls *tls,
                                        const struct iovec *iov, int count,
                                        size_t len)
{
	struct agile_tls copy;
	unsigned result;

	if (iov == NULL || agile__tls_stage(tls) == AGILE_TLS_OFF)
		return AGILE_TLS_SEND_PLAIN;
	memcpy(&copy, tls, sizeof(copy));
	result = walk(&copy, true, iov, count, len);
	/* A record whose header this send begins but does not finish is
	 * judged by its type: application data may be a request. */
	if (copy.out.have > 0 && copy.stage != AGILE_TLS_OFF) {
		unsigned partial = AGILE_TLS_SEND_NONE;

		if (copy.stage == AGILE_TLS_UNKNOWN)
			partial = AGILE_TLS_SEND_PLAIN;
		else if (copy.out.head[0] == TYPE_APPLICATION_DATA &&
		         copy.stage == AGILE_TLS_APP)
			partial = AGILE_TLS_SEND_REQUEST;
		else if (copy.out.head[0] == TYPE_ALERT)
			partial = AGILE_TLS_SEND_GOODBYE;
		if (partial > result)
			result = partial;
	}
	return (enum agile_tls_send)result;
}

enum agile_tls_send agile__tls_sent(struct agile_tls *tls,
                                    const struct iovec *iov, int count,
                                    size_t len)
{
	unsigned result;

	if (agile__tls_stage(tls) == AGILE_TLS_OFF)
		return AGILE_TLS_SEND_PLAIN;
	/* A connection's first byte says whether it may be TLS at all: a
	 * ClientHello's record starts with the handshake type.  Any other
	 * byte (the "G" of an HTTP GET) rules it out here, as walk() would,
	 * without copying the header first: every plain connection's first
	 * send asks this (about 100 instructions saved per connection). */
	if (agile__tls_stage(tls) == AGILE_TLS_UNKNOWN && tls->out.have == 0 &&
	    tls->out.skip == 0 && count > 0 && iov != NULL &&
	    iov[0].iov_len > 0 && len > 0 && iov[0].iov_base != NULL &&
	    *(const uint8_t *)iov[0].iov_base != TYPE_HANDSHAKE)
		return give_up(tls, true);
	result = walk(tls, true, iov, count, len);
	/* Until the first record is whole it is not known to be TLS: the
	 * bytes are a request like any other (and become the handshake once
	 * the ClientHello is recognised). */
	if (agile__tls_stage(tls) == AGILE_TLS_UNKNOWN)
		return AGILE_TLS_SEND_PLAIN;
	return (enum agile_tls_send)result;
}

unsigned agile__tls_received(struct agile_tls *tls, const struct iovec *iov,
                             int count, size_t len)
{
	uint8_t stage = agile__tls_stage(tls);

	if (stage == AGILE_TLS_OFF)
		return AGILE_TLS_RECV_PLAIN;
	if (stage == AGILE_TLS_UNKNOWN)
		return give_up(tls, false); /* the server spoke first */
	return walk(tls, false, iov, count, len);
}
