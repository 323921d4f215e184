/*
 * recv.c - the receive path of a matched socket (track.h): the read that
 * answers a request ends it with one round-trip sample, or a truncation at
 * an end of file or reset; TLS records, HTTP/2 frames, interim responses
 * and a proxy's handshake answer no request.  A read through a duplicate
 * of the socket answers the request sent through the other number.
 *
 * Each read is classified once, as one verdict (read_verdict.h): by the TLS
 * record walker while it follows the connection, by the HTTP/2 walker
 * (which records each stream itself), and otherwise by the byte-level
 * rules, which ask the HTTP/1 and HTTP/2 readers about interim answers.
 * Then one handler, looked up in a table by the verdict and by whether it
 * came from TLS records or from readable bytes, records what the verdict
 * means for the request in flight.  The two rows differ where encryption
 * does: a TLS response's round trip may wait for the ticket rule and its
 * bytes are not readable, and every TLS read ticks the destination.
 * Inbound sockets keep their own path (inbound.c).
 */
#include "config.h"

#include <errno.h>

#include "agile.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "h2conn.h"
#include "http.h"
#include "http2.h"
#include "inbound.h"
#include "read_verdict.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track_internal.h"

/*
 * The entry whose request a read on `t` answers: `t` itself, or, when `t`
 * has none in flight, the descriptor it was last duplicated from or to, if
 * that one (the same socket) has.  A program may write its requests through
 * one number and read the responses through a dup of it, as reader and
 * writer stdio streams or threads do; without this, the request would stay
 * in flight for ever and the next one would take no grant.
 */
static struct agile_fd *request_owner(struct agile_fd *t)
{
	int32_t peer = __atomic_load_n(&t->peer, __ATOMIC_RELAXED);
	struct agile_fd *p;

	if (load8(&t->request) == AGILE_REQ_IN_FLIGHT || peer == 0)
		return t;
	p = agile__fd_lookup(peer - 1);
	if (p == NULL || p->conn_id != t->conn_id ||
	    load8(&p->request) != AGILE_REQ_IN_FLIGHT)
		return t;
	return p;
}

/* What one read received, as its handler sees it. */
struct received {
	struct agile_fd *t;          /* the descriptor read */
	struct agile_fd *r;          /* whose request it answers (request_owner) */
	struct agile_state_slot *s;  /* t's destination's slot */
	ssize_t result;              /* the call's result */
	int error;                   /* its errno */
	const void *data;            /* the bytes of the first iovec, or NULL */
	size_t data_len;             /* how many of them the read filled */
	unsigned tls_bits;           /* TLS records: their AGILE_TLS_RECV_* facts */
};

typedef void read_handler(struct received *rd);

/* ---- TLS records: their facts, from agile__tls_received ---------------- */

/* What every read of TLS records records first: the connection is up, and
 * the corrections the records carry beside their verdict (tls.h).  Returns
 * the time of the read. */
static int64_t records_arrived(struct received *rd)
{
	int64_t now;

	store8(&rd->t->phase, AGILE_FD_CONNECTED);
	now = agile__now_ns();
	if (rd->tls_bits & AGILE_TLS_RECV_LATE_FINISH) {
		/* The first request may have gone out inside what was taken
		 * for the client's flight: the next one takes a grant. */
		uint8_t expected = AGILE_REQ_FREE;

		__atomic_compare_exchange_n(&rd->r->request, &expected,
		                            answered_state(rd->r), false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	if (rd->tls_bits & AGILE_TLS_RECV_GOODBYE_ANSWERED)
		/* What was taken for close_notify was a request that waited
		 * for no grant: it spends one now. */
		(void)agile__destinations_take(rd->t->dest, rd->s, now);
	return now;
}

/* Application data: the answer to the request in flight, if there is one;
 * the ticket rule may hold its round trip open (tls.h). */
static void records_answer(struct received *rd, int64_t now)
{
	struct agile_fd *t = rd->t, *r = rd->r;
	int64_t start, end, seen;

	if ((start = claim_request(r)) != 0) {
		end = now;
		seen = __atomic_exchange_n(&r->response_ns, 0, __ATOMIC_ACQ_REL);
		if (seen != 0 && seen >= start && seen < now)
			end = seen;
		if (agile__tls_flags(&t->tls) & AGILE_TLS_TICKET_RULE) {
			__atomic_store_n(&t->tls_end_ns, end, __ATOMIC_RELAXED);
			__atomic_store_n(&t->tls_start_ns, start,
			                 __ATOMIC_RELEASE);
		} else {
			agile__track_answered(r, rd->s, end - start, now, NULL,
			                      0);
		}
	} else if (__atomic_load_n(&t->tls_start_ns, __ATOMIC_RELAXED) != 0) {
		/* The ticket rule: a record not as long as the tickets. */
		__atomic_store_n(&t->tls_end_ns, now, __ATOMIC_RELAXED);
		tls_answer_held(t, now);
	}
}

/* AGILE_READ_DATA from records: handshake records, tickets, alerts, the
 * rest of a record; the request in flight, if any, stays so. */
static void records_data(struct received *rd)
{
	int64_t now = records_arrived(rd);

	agile__destinations_tick(rd->t->dest, rd->s, now);
}

/* AGILE_READ_SETUP from records: the server's first record answers the
 * ClientHello.  No sample: the handshake's round trip is not the
 * downstream's answer to a request.  The connection's grant also covers
 * its first application request. */
static void records_setup(struct received *rd)
{
	int64_t now = records_arrived(rd);

	if (claim_request(rd->r) != 0) {
		__atomic_store_n(&rd->r->response_ns, 0, __ATOMIC_RELEASE);
		store8(&rd->r->request, AGILE_REQ_FREE);
	}
	/* Application data behind it in the same read finds no request in
	 * flight now, but may end one the ticket rule holds. */
	if (rd->tls_bits & AGILE_TLS_RECV_RESPONSE)
		records_answer(rd, now);
	agile__destinations_tick(rd->t->dest, rd->s, now);
}

/* AGILE_READ_RESPONSE from records: application data answers the request
 * in flight. */
static void records_response(struct received *rd)
{
	int64_t now = records_arrived(rd);

	records_answer(rd, now);
	agile__destinations_tick(rd->t->dest, rd->s, now);
}

/* ---- readable bytes: the byte-level rules ------------------------------ */

/* AGILE_READ_DATA from bytes: more of a response, or bytes no request
 * waited for; the connection is up. */
static void bytes_data(struct received *rd)
{
	store8(&rd->t->phase, AGILE_FD_CONNECTED);
}

/* The request in flight is over: returns its start and the time it ended
 * (a readiness stamped while the thread waited, if it is the earlier), or
 * 0 when none was in flight.  Inline in each handler: called out of line
 * it cost the receive path about 15 instructions a read (callgrind's
 * inclusive count of agile__track_recv_after under the redis-benchmark of
 * tests/fault/instructions.sh). */
static inline __attribute__((always_inline)) int64_t
request_over(struct agile_fd *r, int64_t *end)
{
	int64_t start = claim_request(r), seen;

	if (start == 0)
		return 0;
	*end = agile__now_ns();
	seen = __atomic_exchange_n(&r->response_ns, 0, __ATOMIC_ACQ_REL);
	if (seen != 0 && seen >= start && seen < *end)
		*end = seen;
	return start;
}

/* AGILE_READ_SETUP from bytes: a proxy's answer in its handshake ends the
 * request that set the tunnel up, as the TCP handshake does, with no
 * sample (agile__track_opens_tunnel). */
static void bytes_setup(struct received *rd)
{
	int64_t now = 0;
	bool over = request_over(rd->r, &now) != 0;

	store8(&rd->t->phase, AGILE_FD_CONNECTED);
	if (over)
		agile__destinations_tick(rd->t->dest, rd->s, now);
}

/*
 * AGILE_READ_INTERIM: "100 Continue" (or 102, 103) answers no request: the
 * client goes on with the same one, sending the body that curl, for one,
 * holds back behind "Expect: 100-continue" for any upload above 1 MiB.
 * Taken as the answer, the body took a grant of its own, halving the rate
 * of uploads, and each upload gave two samples, the first the interim's
 * sub-millisecond echo.  So the request stays in flight until the final
 * response; a readiness stamped while the thread waited was the interim's.
 * Plain text only: over TLS the status is not readable.  The server's
 * HTTP/2 SETTINGS (nghttpd sends it at once), a PING or a WINDOW_UPDATE is
 * the same (http2.h).
 */
static void bytes_interim(struct received *rd)
{
	__atomic_store_n(&rd->r->response_ns, 0, __ATOMIC_RELEASE);
	store8(&rd->t->phase, AGILE_FD_CONNECTED);
	agile__track_watch(fd_of(rd->r));
}

/* AGILE_READ_RESPONSE from bytes: the first bytes of the answer end the
 * request in flight with one round-trip sample (request.c reads them for
 * proto=http). */
static void bytes_response(struct received *rd)
{
	int64_t now = 0, start = request_over(rd->r, &now);

	store8(&rd->t->phase, AGILE_FD_CONNECTED);
	if (start == 0)
		return;
	agile__track_answered(rd->r, rd->s, now - start, now, rd->data,
	                      rd->data_len);
	agile__destinations_tick(rd->t->dest, rd->s, now);
}

/* An end of file or a reset ended the request in flight before any
 * response byte: its round trip is a lower bound. */
static __attribute__((noinline)) void request_truncated(struct received *rd)
{
	struct agile_state_slot *s = rd->s;
	int64_t start, now = 0;

	if ((start = request_over(rd->r, &now)) == 0)
		return;
	agile_rate_observe_truncated(&s->limiter, now - start);
	agile__add_u64(&s->truncated, 1);
	agile__resilience_outcome(rd->r, s, AGILE_OUTCOME_TRUNCATED,
	                          now - start, now);
	agile__destinations_tick(rd->t->dest, s, now);
}

/* AGILE_READ_TRUNCATED: an end of file or a reset.  A round trip the
 * ticket rule held open was answered; a request in flight got no answer.
 * Most ends of file come after the response, with none in flight: that
 * test comes first, and request_truncated is kept out of line so that
 * they do not pay for saving the registers it needs (about 15
 * instructions a read, counted as above under its ab run). */
static void bytes_truncated(struct received *rd)
{
	tls_answer_held(rd->t, 0);
	if (load8(&rd->r->request) == AGILE_REQ_IN_FLIGHT)
		request_truncated(rd);
}

/* AGILE_READ_UNREACHABLE: the connect failed, as its first read tells
 * (connect.c classifies it). */
static void bytes_unreachable(struct received *rd)
{
	tls_answer_held(rd->t, 0);
	agile__track_connect_failed(rd->t, rd->s, rd->error, false);
}

/*
 * The handlers, by where the verdict came from (TLS records, or readable
 * bytes) and by the verdict.  The record walker gives only DATA, SETUP and
 * RESPONSE (tls.h), and only for bytes read, so its row has no handler for
 * the others; AGILE_READ_NONE has none in either: there is nothing to
 * record.
 */
enum { FROM_BYTES, FROM_RECORDS };
static read_handler *const handlers[2][AGILE_READ_VERDICTS] = {
	[FROM_BYTES] = {
		[AGILE_READ_DATA] = bytes_data,
		[AGILE_READ_SETUP] = bytes_setup,
		[AGILE_READ_INTERIM] = bytes_interim,
		[AGILE_READ_RESPONSE] = bytes_response,
		[AGILE_READ_TRUNCATED] = bytes_truncated,
		[AGILE_READ_UNREACHABLE] = bytes_unreachable,
	},
	[FROM_RECORDS] = {
		[AGILE_READ_DATA] = records_data,
		[AGILE_READ_SETUP] = records_setup,
		[AGILE_READ_RESPONSE] = records_response,
	},
};

/* ---- classification ---------------------------------------------------- */

/* A read on a connection with an HTTP/2 walker: true when it is all
 * recorded (each response HEADERS ends its own stream's round trip,
 * h2conn.h; a peek's bytes come again); false to go on by the byte-level
 * rules (an end of file or a reset, after the streams in flight are
 * truncated, or bytes that turned out not to be HTTP/2). */
static bool h2_walked(struct agile_fd *t, ssize_t result,
                      const struct iovec *iov, int count, bool peek)
{
	int64_t now;
	bool walked = false;

	if (peek && result > 0)
		return true;
	agile__enter();
	now = agile__now_ns();
	if (result > 0) {
		walked = agile__h2conn_received(t, iov, count, (size_t)result,
		                                now, agile__track_h2_ended);
		if (walked)
			store8(&t->phase, AGILE_FD_CONNECTED);
	} else {
		agile__h2conn_end(t, now, agile__track_h2_ended);
	}
	agile__leave();
	return walked;
}

bool agile__track_bytes_interim(const struct agile_fd *t, const void *data,
                                size_t n)
{
	return agile__http_read_verdict(data, n) == AGILE_READ_INTERIM ||
	       (load8(&t->http2) &&
	        agile__h2_read_verdict(data, n) == AGILE_READ_INTERIM);
}

/* The byte-level rules' verdict on a read of bytes (result > 0) or an end
 * of file or failure (result <= 0) on a connection no walker follows. */
static enum agile__read_verdict bytes_verdict(const struct received *rd)
{
	size_t n = (size_t)rd->result;

	if (rd->result <= 0)
		return rd->result < 0 && is_unreachable(rd->error) &&
		       load8(&rd->t->phase) == AGILE_FD_CONNECTING
		       ? AGILE_READ_UNREACHABLE : AGILE_READ_TRUNCATED;
	if (load8(&rd->r->request) != AGILE_REQ_IN_FLIGHT)
		return AGILE_READ_DATA;
	if (rd->data_len >= n && agile__track_bytes_interim(rd->t, rd->data, n))
		return AGILE_READ_INTERIM;
	if (load8(&rd->r->flags) & AGILE_FD_TUNNEL)
		return AGILE_READ_SETUP;
	return AGILE_READ_RESPONSE;
}

/*
 * Classify a read once: fills in rd (with from, the handlers' row) and
 * returns its verdict.  The TLS record walker judges while it follows the
 * connection; then an HTTP/2 walker, which records what it walks itself;
 * then the byte-level rules.
 */
static enum agile__read_verdict classify(struct received *rd, size_t asked,
                                         const struct iovec *iov, int count,
                                         bool peek, int *from)
{
	struct agile_fd *t = rd->t;
	ssize_t result = rd->result;
	uint8_t stage;

	/* EAGAIN, EINTR and the like, or a read of nothing. */
	if ((result < 0 && !is_unreachable(rd->error) &&
	     rd->error != ECONNRESET) || (result == 0 && asked == 0))
		return AGILE_READ_NONE;
	stage = agile__tls_stage(&t->tls);
	if (result > 0 && stage != AGILE_TLS_OFF &&
	    !(peek && stage == AGILE_TLS_UNKNOWN)) {
		/* A peek leaves the bytes for the read that follows it. */
		rd->tls_bits = peek ? 0 : agile__tls_received(&t->tls, iov,
		                                              count,
		                                              (size_t)result);
		if (!(rd->tls_bits & AGILE_TLS_RECV_PLAIN)) {
			*from = FROM_RECORDS;
			rd->r = request_owner(t);
			return agile__tls_read_verdict(rd->tls_bits);
		}
	}
	if (__atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0 &&
	    h2_walked(t, result, iov, count, peek))
		return AGILE_READ_NONE;
	*from = FROM_BYTES;
	rd->r = request_owner(t);
	rd->data = NULL;
	rd->data_len = 0;
	if (result > 0 && iov != NULL && count > 0) {
		rd->data = iov[0].iov_base;
		rd->data_len = iov[0].iov_len < (size_t)result
		               ? iov[0].iov_len : (size_t)result;
	}
	return bytes_verdict(rd);
}

void agile__track_recv_after(struct agile_fd *t, ssize_t result, int error,
                             size_t asked, const struct iovec *iov, int count,
                             bool peek)
{
	/* Each field is set where it is known (classify, then slot_of):
	 * a read pays for no zeroing of what its handler never reads. */
	struct received rd;
	enum agile__read_verdict verdict;
	int from = FROM_BYTES;

	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_after_recv(t, result, iov, count, asked, peek);
		errno = error;
		return;
	}
	rd.t = t;
	rd.result = result;
	rd.error = error;
	verdict = classify(&rd, asked, iov, count, peek, &from);
	/* A read that may end a request (its own or its duplicate's) or
	 * classify a connect is recorded only for a socket still the one
	 * matched. */
	if (verdict != AGILE_READ_NONE &&
	    ((load8(&rd.r->request) != AGILE_REQ_IN_FLIGHT &&
	      load8(&t->phase) != AGILE_FD_CONNECTING) ||
	     agile__track_still_tracked(t))) {
		agile__enter();
		rd.s = slot_of(t);
		handlers[from][verdict](&rd);
		agile__leave();
	}
	errno = error;
}
