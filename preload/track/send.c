/*
 * send.c - the send path of a matched socket (track.h): whether a send may
 * start a request, the wait for its grant before the real call, HTTP/2's
 * streams each taking a grant (and a send cut at the stream that must
 * wait), and after the call, the request started and timed from just
 * before it.
 */
#include "config.h"

#include <errno.h>

#include "clock.h"
#include "destinations.h"
#include "goodbye.h"
#include "h2conn.h"
#include "http2.h"
#include "inbound.h"
#include "log.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"
#include "track_internal.h"
#include "usermem.h"

/* Is this send the goodbye of the destination's declared protocol (redis's
 * QUIT, PostgreSQL's Terminate, ...), which ends the session, or, on an
 * HTTP/2 connection, frames that keep the connection (http2.c)?  Neither
 * is a request. */
static inline bool is_goodbye(const struct agile_fd *t,
                              const struct iovec *iov, int count)
{
	uint32_t proto = agile__destinations_rule(t->dest)->resilience.proto;

	if (load8(&t->http2))
		return agile__h2_no_request(iov, count);
	return agile__has_goodbye(proto) && agile__goodbye(proto, iov, count);
}

/* Would sending these bytes start a request (or the handshake), and so
 * possibly wait for a grant?  TLS handshake records, alerts and TLS 1.3's
 * close_notify do not (tls.h), nor a declared protocol's goodbye; every
 * other send on a plain socket may. */
static bool may_start_request(const struct agile_fd *t,
                              const struct iovec *iov, int count)
{
	uint8_t stage = agile__tls_stage(&t->tls);

	if (stage == AGILE_TLS_OFF || stage == AGILE_TLS_UNKNOWN)
		return !is_goodbye(t, iov, count);
	return agile__tls_classify(&t->tls, iov, count,
	                           iov_total(iov, count)) >=
	       AGILE_TLS_SEND_HELLO;
}

/*
 * HTTP/2: each new stream is a request (docs/http2.md).  A send opening
 * none (SETTINGS, PING, WINDOW_UPDATE, DATA, trailers, RST_STREAM, GOAWAY)
 * takes no grant and waits for nothing.  A send opening one waits for a
 * grant; the connection's own grant, taken at connect and not yet waited
 * for, covers its first stream.  A send opening several is cut at the
 * second one's frame (*limit) once the ceiling binds: h2load -m 10 writes
 * the HEADERS of ten streams in one call, and a wait for ten grants before
 * it would let the ten out together every half second at 20/s.  While the
 * grants are due at once (the rate far above the load), the send goes
 * whole, each stream taking its grant: cutting it then would only multiply
 * the program's system calls (h2load -m 10: 17,000 requests a second
 * instead of 76,000).  Due means within a millisecond (H2_DUE_NS): at a
 * rate of a million a second the grants of one send are microseconds
 * apart, and the send would be cut for them.  The first grant that is not due is kept as the
 * socket's for its next send (*pending) and the send is cut.  Under
 * pace=connect only the connection's grant is waited for.  Returns the
 * request state the send goes on with.
 */
#define H2_DUE_NS AGILE_NS_PER_MS

static uint8_t h2_send(struct agile_fd *t, struct agile_state_slot *s,
                       int64_t now, const struct agile_h2_plan *plan,
                       int count, size_t *limit, int64_t *pending,
                       uint8_t request)
{
	int64_t first;

	if (plan->opens == 0 ||
	    agile__destinations_pace(t->dest) != AGILE_PACE_REQUEST)
		return plan->opens > 0 && request == AGILE_REQ_GRANTED
		       ? AGILE_REQ_GRANTED : AGILE_REQ_IN_FLIGHT;
	/* AGILE_REQ_FREE under pace=request: a TLS handshake answered,
	 * whose connection's grant its first request rides on (track.h). */
	if (request != AGILE_REQ_GRANTED && request != AGILE_REQ_FREE)
		agile__track_plan_grant(t, agile__destinations_take(t->dest,
		                                                    s, now));
	if (plan->opens == 1)
		return AGILE_REQ_GRANTED;
	if (count > AGILE_SEND_CUT_IOV_MAX) {
		/* No cut: one grant a stream, the send waits for the last. */
		int64_t last = 0;

		for (uint32_t i = 1; i < plan->opens; i++)
			last = agile__destinations_take(t->dest, s, now);
		agile__track_plan_grant(t, last);
		return AGILE_REQ_GRANTED;
	}
	first = __atomic_load_n(&t->grant_ns, __ATOMIC_ACQUIRE);
	if (first <= now + H2_DUE_NS) {
		for (uint32_t i = 1; i < plan->opens; i++) {
			int64_t next = agile__destinations_take(t->dest, s, now);

			if (next > now + H2_DUE_NS) {
				*pending = next;
				break;
			}
		}
		if (*pending == 0)
			return AGILE_REQ_GRANTED; /* all due: the whole send */
	}
	*limit = plan->cut;
	return AGILE_REQ_GRANTED;
}

/* Does this send begin with HTTP/2's client preface, on a connection
 * that has no walker yet?  Then it gets one (h2conn.h), before the send,
 * so that the preface's own send, which nghttp2's clients fill with their
 * first streams' HEADERS too, is planned like every later one. */
static void h2_preface(struct agile_fd *t, const struct iovec *iov, int count)
{
	if (iov == NULL || count < 1 || iov[0].iov_len == 0 ||
	    *(const char *)iov[0].iov_base != 'P' || load8(&t->http2) ||
	    __atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0 ||
	    !agile__h2_preface(iov[0].iov_base, iov[0].iov_len))
		return;
	if (!agile__h2conn_open(t, agile__destinations_rule(t->dest)
	                               ->resilience.proto == AGILE_PROTO_HTTP))
		agile__log(AGILE_LOG_WARN, "fd %d: no room for another "
		           "HTTP/2 connection: it is paced per connection",
		           fd_of(t));
}

int64_t agile__track_send_before(struct agile_fd *t, const struct iovec *iov,
                                 int count, size_t *limit)
{
	struct agile_h2_plan plan;
	int64_t pending = 0;
	int saved = errno;
	uint8_t request = load8(&t->request);
	uint64_t conn = __atomic_load_n(&t->conn_id, __ATOMIC_RELAXED);
	struct agile_state_slot *s;
	bool interrupted = false;
	int64_t now;

	/* A connection a listener accepted is never paced (inbound.c). */
	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_before_send(t, iov, count, limit);
		errno = saved;
		return agile__now_ns();
	}

	/* This send may wait for a grant or start a request. */
	if (request != AGILE_REQ_IN_FLIGHT && !agile__track_still_tracked(t))
		return AGILE_SEND_PASS;
	/* Everything below may read the bytes before the kernel has: bytes
	 * it would refuse are its to refuse, unseen (usermem.h). */
	if (!agile__iov_readable(iov, count))
		return AGILE_SEND_PASS;
	agile__enter();
	s = slot_of(t);
	now = agile__now_ns();
	/* The client speaks again: a round trip the ticket rule held open
	 * ends where it was first answered. */
	tls_answer_held(t, now);
	if ((load8(&t->flags) & AGILE_FD_TUNNEL) &&
	    request != AGILE_REQ_IN_FLIGHT)
		request = agile__track_tunnel_send(t, iov, count, request);
	else if (agile__tls_stage(&t->tls) == AGILE_TLS_OFF &&
	         agile__tls_starts_hello(iov, count))
		agile__track_start_tls(t);
	h2_preface(t, iov, count);
	plan.stream = 0;
	if (agile__h2conn_plan(t, iov, count, iov_total(iov, count), &plan)) {
		request = h2_send(t, s, now, &plan, count, limit, &pending,
		                  request);
	} else if (!may_start_request(t, iov, count)) {
		request = AGILE_REQ_IN_FLIGHT; /* nothing to wait for */
	} else if ((request == AGILE_REQ_NEEDS_GRANT ||
	            request == AGILE_REQ_GRANTED) &&
	           !(load8(&t->flags) & AGILE_FD_TUNNEL)) {
		/* A place under inflight= first (inflight.c), then the grant,
		 * planned from when the request can go. */
		if (agile__inflight_enter(t, now, &interrupted))
			now = agile__now_ns();
		if (interrupted) {
			agile__leave();
			errno = saved;
			return AGILE_SEND_INTERRUPTED;
		}
	}
	switch (request) {
	case AGILE_REQ_NEEDS_GRANT: {
		/* pace=request: a new request on a kept-alive connection.
		 * Only the thread that moves the state takes the grant. */
		uint8_t expected = AGILE_REQ_NEEDS_GRANT;

		if (__atomic_compare_exchange_n(&t->request, &expected,
		                                AGILE_REQ_GRANTED, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			agile__track_plan_grant(
				t, agile__destinations_take(t->dest, s, now));
		now = agile__track_settle_grant(t, now, true, &interrupted);
		break;
	}
	case AGILE_REQ_GRANTED:
		now = agile__track_settle_grant(t, now, true, &interrupted);
		break;
	default:
		break;
	}
	/* The grant h2_send took for the next stream, not due yet. */
	if (pending != 0)
		agile__track_plan_grant(t, pending);
	agile__destinations_tick(t->dest, s, now);
	agile__leave();
	errno = saved;
	if (interrupted)
		return AGILE_SEND_INTERRUPTED;
	/* Another thread may have closed the socket while this one waited
	 * (a watchdog giving up on the connection), and the number may hold
	 * a file, a pipe or another connection by now: the send, which
	 * without the wait would have gone out before the close, must not
	 * go to that.  It fails as a send after the close would. */
	if (request != AGILE_REQ_IN_FLIGHT &&
	    (!load8(&t->tracked) ||
	     __atomic_load_n(&t->conn_id, __ATOMIC_RELAXED) != conn)) {
		agile__inflight_release(t);
		errno = saved;
		return AGILE_SEND_CLOSED;
	}
	/* The stream's answer may be read by another thread before this
	 * one has walked the send: in the table first. */
	if (plan.stream != 0)
		agile__h2conn_opening(t, plan.stream, now);
	return now;
}

static void send_after(struct agile_fd *t, ssize_t result, int error,
                       int64_t start_ns, const struct iovec *iov, int count);

void agile__track_send_after(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count)
{
	send_after(t, result, error, start_ns, iov, count);
	/* A place taken for a request that did not start (the send failed,
	 * sent nothing, or was no request after all) is given back. */
	if (__atomic_load_n(&t->inflight_place, __ATOMIC_RELAXED) != 0 &&
	    load8(&t->request) != AGILE_REQ_IN_FLIGHT) {
		int saved = errno;

		agile__inflight_release(t);
		errno = saved;
	}
}

static void send_after(struct agile_fd *t, ssize_t result, int error,
                       int64_t start_ns, const struct iovec *iov, int count)
{
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t data_len = iov != NULL && count > 0 ? iov[0].iov_len : 0;
	bool plain = true, first;
	uint8_t request;

	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_after_send(t, result, iov, count);
		errno = error;
		return;
	}
	/* Nothing went: the stream the send was to open did not open. */
	if (result <= 0 && __atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0)
		agile__h2conn_sent(t, iov, count, result, 0, 0,
		                   agile__track_h2_ended,
		                   agile__track_h2_excluded);
	if (result < 0) {
		if (is_unreachable(error) &&
		    load8(&t->phase) == AGILE_FD_CONNECTING) {
			agile__enter();
			agile__track_connect_failed(t, slot_of(t), error,
			                            false);
			agile__leave();
		}
		errno = error;
		return;
	}
	if (result == 0)
		return;
	store8(&t->phase, AGILE_FD_CONNECTED);
	/* The walker has not seen a byte of the connection yet. */
	first = agile__tls_stage(&t->tls) == AGILE_TLS_UNKNOWN;
	if (agile__tls_stage(&t->tls) != AGILE_TLS_OFF) {
		enum agile_tls_send sent = agile__tls_sent(&t->tls, iov, count,
		                                           (size_t)result);

		/* Handshake records, an alert, close_notify: no request. */
		if (sent < AGILE_TLS_SEND_HELLO)
			return;
		plain = sent == AGILE_TLS_SEND_PLAIN;
	}
	/* HTTP/2 over cleartext says so in its first send (http2.c),
	 * which may come after the server's SETTINGS was read: the
	 * preface is looked for in any send that starts with its 'P'. */
	if (plain && data != NULL && data_len > 0 &&
	    *(const char *)data == 'P' && !load8(&t->http2) &&
	    agile__h2_preface(data, data_len < (size_t)result
	                            ? data_len : (size_t)result))
		store8(&t->http2, 1);
	/* On a walked HTTP/2 connection the streams are the requests, their
	 * round trips in the side pool's table (h2conn.h): the next stream
	 * after one opened takes a grant (h2_send). */
	if (__atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0) {
		int opened;

		agile__enter();
		opened = agile__h2conn_sent(t, iov, count, result, start_ns,
		                            agile__now_ns(),
		                            agile__track_h2_ended,
		                            agile__track_h2_excluded);
		agile__leave();
		if (opened > 0) {
			/* A grant already taken for the next stream is its. */
			store8(&t->request,
			       __atomic_load_n(&t->grant_ns, __ATOMIC_ACQUIRE)
			       ? AGILE_REQ_GRANTED : answered_state(t));
			agile__track_watch(fd_of(t));
		}
		if (opened >= 0) {
			errno = error;
			return;
		}
	}
	request = load8(&t->request);
	if (request != AGILE_REQ_IN_FLIGHT) {
		const struct agile_resilience_config *c =
			&agile__destinations_rule(t->dest)->resilience;

		/* A goodbye starts no request, so its close or its +OK
		 * records nothing. */
		if (plain && is_goodbye(t, iov, count))
			return;
		/* A proxy's handshake starts (agile__track_opens_tunnel). */
		if (plain &&
		    agile__track_opens_tunnel(data, data_len < (size_t)result
		                                    ? data_len : (size_t)result,
		                              first))
			__atomic_fetch_or(&t->flags, AGILE_FD_TUNNEL,
			                  __ATOMIC_ACQ_REL);
		/* proto=http: is the request to an excluded path?  (Not over
		 * TLS, whose requests are not readable.) */
		if (c->proto == AGILE_PROTO_HTTP && plain)
			agile__http_request(t, c, data,
			                    data_len < (size_t)result
			                    ? data_len : (size_t)result);
		__atomic_store_n(&t->response_ns, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&t->request_start_ns, start_ns,
		                 __ATOMIC_RELEASE);
		store8(&t->request, AGILE_REQ_IN_FLIGHT);
		agile__track_watch(fd_of(t));
	}
}
