/*
 * recv.c - the receive path of a matched socket (track.h): the read that
 * answers a request ends it with one round-trip sample, or a truncation at
 * an end of file or reset; TLS records, HTTP/2 frames, interim responses
 * and a proxy's handshake answer no request.  A read through a duplicate
 * of the socket answers the request sent through the other number.
 */
#include "config.h"

#include <errno.h>

#include "agile.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "h2conn.h"
#include "http2.h"
#include "inbound.h"
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

/* Server records arrived on a TLS connection (tls.h): the handshake's
 * answer, the end of TLS 1.3's client flight, a response. */
static void tls_received(struct agile_fd *t, unsigned bits)
{
	struct agile_fd *r = request_owner(t);
	struct agile_state_slot *s;
	int64_t now, start, end, seen;

	if ((load8(&r->request) == AGILE_REQ_IN_FLIGHT ||
	     load8(&t->phase) == AGILE_FD_CONNECTING) &&
	    !agile__track_still_tracked(t))
		return;
	agile__enter();
	s = slot_of(t);
	store8(&t->phase, AGILE_FD_CONNECTED);
	now = agile__now_ns();
	if ((bits & AGILE_TLS_RECV_HELLO_ANSWER) && claim_request(r) != 0) {
		/* No sample: the handshake's round trip is not the
		 * downstream's answer to a request.  The connection's grant
		 * also covers its first application request. */
		__atomic_store_n(&r->response_ns, 0, __ATOMIC_RELEASE);
		store8(&r->request, AGILE_REQ_FREE);
	}
	if (bits & AGILE_TLS_RECV_LATE_FINISH) {
		/* The first request may have gone out inside what was taken
		 * for the client's flight: the next one takes a grant. */
		uint8_t expected = AGILE_REQ_FREE;

		__atomic_compare_exchange_n(&r->request, &expected,
		                            answered_state(r), false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	if (bits & AGILE_TLS_RECV_GOODBYE_ANSWERED)
		/* What was taken for close_notify was a request that waited
		 * for no grant: it spends one now. */
		(void)agile__destinations_take(t->dest, s, now);
	if ((bits & AGILE_TLS_RECV_RESPONSE) &&
	    (start = claim_request(r)) != 0) {
		end = now;
		seen = __atomic_exchange_n(&r->response_ns, 0, __ATOMIC_ACQ_REL);
		if (seen != 0 && seen >= start && seen < now)
			end = seen;
		if (agile__tls_flags(&t->tls) & AGILE_TLS_TICKET_RULE) {
			__atomic_store_n(&t->tls_end_ns, end, __ATOMIC_RELAXED);
			__atomic_store_n(&t->tls_start_ns, start,
			                 __ATOMIC_RELEASE);
		} else {
			agile__track_answered(r, s, end - start, now, NULL, 0);
		}
	} else if ((bits & AGILE_TLS_RECV_RESPONSE) &&
	           __atomic_load_n(&t->tls_start_ns, __ATOMIC_RELAXED) != 0) {
		/* The ticket rule: a record not as long as the tickets. */
		__atomic_store_n(&t->tls_end_ns, now, __ATOMIC_RELAXED);
		tls_answer_held(t, now);
	}
	agile__destinations_tick(t->dest, s, now);
	agile__leave();
}

/* A read on a connection with an HTTP/2 walker: true when it is all
 * recorded; false to go on by the byte-level rules (an end of file or a
 * reset, after the streams in flight are truncated, or bytes that turned
 * out not to be HTTP/2). */
static bool h2_received(struct agile_fd *t, ssize_t result,
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

void agile__track_recv_after(struct agile_fd *t, ssize_t result, int error,
                             size_t asked, const struct iovec *iov, int count,
                             bool peek)
{
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t data_len = iov != NULL && count > 0 ? iov[0].iov_len : 0;
	struct agile_state_slot *s;
	struct agile_fd *r;
	int64_t start, now, seen;
	uint8_t stage;

	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_after_recv(t, result, iov, count, asked, peek);
		errno = error;
		return;
	}
	if (result < 0 && !is_unreachable(error) && error != ECONNRESET) {
		errno = error;
		return; /* EAGAIN, EINTR and the like: nothing to record */
	}
	if (result == 0 && asked == 0)
		return;
	stage = agile__tls_stage(&t->tls);
	if (result > 0 && stage != AGILE_TLS_OFF &&
	    !(peek && stage == AGILE_TLS_UNKNOWN)) {
		/* A peek leaves the bytes for the read that follows it. */
		unsigned bits = peek ? 0 : agile__tls_received(&t->tls, iov,
		                                               count,
		                                               (size_t)result);

		if (!(bits & AGILE_TLS_RECV_PLAIN)) {
			tls_received(t, bits);
			errno = error;
			return;
		}
	}
	/* A walked HTTP/2 connection: each response HEADERS ends its own
	 * stream's round trip (h2conn.h); a peek's bytes come again. */
	if (__atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0 &&
	    h2_received(t, result, iov, count, peek)) {
		errno = error;
		return;
	}
	/* This read may end a request (its own or its duplicate's) or
	 * classify a connect. */
	r = request_owner(t);
	if ((load8(&r->request) == AGILE_REQ_IN_FLIGHT ||
	     load8(&t->phase) == AGILE_FD_CONNECTING) &&
	    !agile__track_still_tracked(t)) {
		errno = error;
		return;
	}
	agile__enter();
	s = slot_of(t);
	if (result <= 0)
		/* End of file or reset: a round trip the ticket rule held
		 * open was answered. */
		tls_answer_held(t, 0);
	if (result < 0 && is_unreachable(error) &&
	    load8(&t->phase) == AGILE_FD_CONNECTING) {
		agile__track_connect_failed(t, s, error, false);
	} else if (result > 0 && load8(&r->request) == AGILE_REQ_IN_FLIGHT &&
	           data_len >= (size_t)result &&
	           agile__http_interim(data, (size_t)result)) {
		/* "100 Continue" (or 102, 103) answers no request: the
		 * client goes on with the same one, sending the body that
		 * curl, for one, holds back behind "Expect: 100-continue"
		 * for any upload above 1 MiB.  Taken as the answer, the
		 * body took a grant of its own, halving the rate of
		 * uploads, and each upload gave two samples, the first the
		 * interim's sub-millisecond echo.  So the request stays in
		 * flight until the final response; a readiness stamped
		 * while the thread waited was the interim's.  Plain text
		 * only: over TLS the status is not readable. */
		__atomic_store_n(&r->response_ns, 0, __ATOMIC_RELEASE);
		store8(&t->phase, AGILE_FD_CONNECTED);
		agile__track_watch(fd_of(r));
	} else if (result > 0 && load8(&t->http2) &&
	           load8(&r->request) == AGILE_REQ_IN_FLIGHT &&
	           data_len >= (size_t)result &&
	           agile__h2_no_response(data, (size_t)result)) {
		/* The server's SETTINGS (nghttpd sends it at once), a PING
		 * or a WINDOW_UPDATE answers no request: the request stays
		 * in flight, as after an interim response (http2.c). */
		__atomic_store_n(&r->response_ns, 0, __ATOMIC_RELEASE);
		store8(&t->phase, AGILE_FD_CONNECTED);
		agile__track_watch(fd_of(r));
	} else if ((start = claim_request(r)) != 0) {
		now = agile__now_ns();
		seen = __atomic_exchange_n(&r->response_ns, 0, __ATOMIC_ACQ_REL);
		if (seen != 0 && seen >= start && seen < now)
			now = seen;
		if (result > 0) {
			store8(&t->phase, AGILE_FD_CONNECTED);
			/* A proxy's answer in its handshake is setting
			 * up, as the TCP handshake is: no sample
			 * (agile__track_opens_tunnel). */
			if (!(load8(&r->flags) & AGILE_FD_TUNNEL))
				agile__track_answered(r, s, now - start, now,
				                      data,
				                      data_len < (size_t)result
				                      ? data_len : (size_t)result);
		} else {
			/* End of file or reset before any response byte. */
			agile_rate_observe_truncated(&s->limiter, now - start);
			agile__add_u64(&s->truncated, 1);
			agile__resilience_outcome(r, s, AGILE_OUTCOME_TRUNCATED,
			                          now - start, now);
		}
		agile__destinations_tick(t->dest, s, now);
	} else if (result > 0) {
		store8(&t->phase, AGILE_FD_CONNECTED);
	}
	agile__leave();
	errno = error;
}
