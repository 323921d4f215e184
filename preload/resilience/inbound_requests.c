/*
 * inbound_requests.c - the requests on a connection a listener rule
 * admitted (inbound.c): with proto=http the permit each one takes and
 * gives back, and for every rule the handling time each one is a sample
 * of.
 *
 * With proto=http the permits are taken by requests instead (HTTP/1.x):
 * a connection is accepted without one, each request takes one when its
 * first bytes are read and gives it back when its response is complete by
 * its framing (response_written), so an idle keep-alive connection holds
 * nothing.  A request that gets none is answered in the program's place
 * (shed_request) and its bytes are not the program's: the receive hook
 * reads again (inbound.h), and the program, blocking or not, sees the next
 * request or EAGAIN as if the shed one had never come.  The connection is
 * kept when the answer can be sure where the request ended (all of it,
 * and nothing more, in that one read); otherwise the answer closes it, and
 * the program reads an end of file.
 *
 * An admitted connection is tracked with AGILE_FD_INBOUND and is never
 * paced.  Its requests are timed the other way round from a client's: the
 * first read returning data starts a request, the first write after it ends
 * it, and that handling time is the sample the limiter runs on.  With
 * proto=http, a request to an exclude= path, an OPTIONS (a CORS
 * preflight), a response with a status in ignore= or marked a cache hit
 * (cache_hit=, X-Cache and Age by default) are no samples; a status in
 * overload= (429 and 503 by default) or unreachable= is recorded as
 * unreachable, and so is any other 5xx written faster than the SLO (any
 * 5xx without an SLO): a server failing fast is not a fast server.  A connection closed with a
 * request unanswered is a truncated observation.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "http2.h"
#include "inbound.h"
#include "inbound_h2.h"
#include "inbound_internal.h"
#include "process.h"
#include "resilience_hook.h"

/* Whether p[0, n) starts an HTTP/1 request line: a method of capitals and
 * a space, and not HTTP/2's preface.  TLS records and HTTP/2 frames are
 * not requests the preload can count or answer. */
static bool http1_request(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && i < 24 && ((p[i] >= 'A' && p[i] <= 'Z') || p[i] == '-'))
		i++;
	if (i == 0 || i >= n || p[i] != ' ')
		return false;
	return !(n >= 14 && memcmp(p, "PRI * HTTP/2.0", 14) == 0);
}

/* proto=http: the request whose first bytes p[0, n) were just read asks
 * its client's bucket (client_rate=), then takes a permit, unless the
 * connection still holds one for a response not yet complete (a
 * pipelined request rides on it).  False: refused, and answered.
 *
 * Bytes that are no HTTP/1 request (a TLS handshake, HTTP/2) take no
 * permit and are served.  A request read through the program's TLS
 * library (tls_plain.h) takes one, but one beyond the limits is served
 * too: the preload cannot answer inside the TLS session. */
static bool admit_request(struct agile_fd *t,
                          const struct agile_resilience_config *c,
                          const char *p, size_t n, ssize_t result)
{
	struct agile_state_slot *s;
	struct agile_http_frame f;
	int32_t permit;
	int64_t now;
	bool plain;

	if (p == NULL || !http1_request(p, n))
		return true;
	plain = __atomic_load_n(&t->tls_plain, __ATOMIC_ACQUIRE) != 0;
	agile__http_frame(p, n, false, &f);
	__atomic_store_n(&t->inbound_head, f.head_method, __ATOMIC_RELEASE);
	agile__enter();
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	if (c->client_rate > 0) {
		const void *key = t->client;
		size_t key_len = t->client_len;
		int64_t retry;

		if (c->client_header[0] != '\0') {
			size_t vlen;
			const char *v = agile__http_header(p, n, c->client_header,
			                                   &vlen);

			if (v != NULL && vlen > 0) {
				key = v;
				key_len = vlen;
			}
		}
		if (key_len > 0 &&
		    !agile__clients_admit(&s->resilience, c, key, key_len, now,
		                          &retry) && !plain) {
			agile__inbound_shed_request(t, p, n, result, 429, retry);
			agile__leave();
			return false;
		}
	}
	if (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) != 0) {
		agile__leave();
		return true;
	}
	permit = agile__permit_try_reclaiming(&s->resilience, now);
	if (permit > 0) {
		t->permit_tid = agile__thread_id();
		__atomic_store_n(&t->permit, permit, __ATOMIC_RELEASE);
		__atomic_store_n(&t->inbound_left, 0, __ATOMIC_RELEASE);
		agile__leave();
		return true;
	}
	if (plain) {
		agile__leave();
		return true;
	}
	agile__add_u64(&s->resilience.shed, 1);
	agile__inbound_shed_request(t, p, n, result, shed_status(c), c->retry_after_ns);
	agile__leave();
	return false;
}

__thread size_t agile__inbound_grown
	__attribute__((tls_model("initial-exec")));

/* proto=http: is the connection HTTP/2 (its first read began with the
 * client's preface)?  Then its streams are what the limit counts
 * (inbound_h2.c), and the read is walked there. */
static bool h2_read(struct agile_fd *t, ssize_t result,
                    const struct iovec *iov, int count, size_t asked,
                    bool peek, const void *data, size_t n)
{
	size_t grown;

	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) == 0) {
		if (peek || data == NULL ||
		    __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
		    AGILE_REQ_FREE || !agile__h2_preface(data, n) ||
		    !agile__inbound_h2_open(t))
			return false;
		/* shed=cpu admitted the connection; its streams are what is
		 * in flight from here on, so its own call lands now, without
		 * a handling time (it would fly until the close). */
		agile__enter();
		agile__inbound_settle_shedder(
			t, &agile__destinations_slot(t->dest)->resilience, false, 0,
			agile__now_ns());
		agile__leave();
	} else if (peek) {
		return true; /* its bytes are walked when read */
	}
	grown = agile__inbound_h2_received(t, iov, count, (size_t)result,
	                                   asked);
	if (grown > 0) {
		agile__inbound_grown = grown;
		__atomic_store_n(&t->inbound_shed, AGILE_INBOUND_GROWN,
		                 __ATOMIC_RELEASE);
	}
	return true;
}

void agile__inbound_after_recv(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count,
                               size_t asked, bool peek)
{
	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;
	uint8_t expected = AGILE_REQ_FREE;
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t len = iov != NULL && count > 0 ? iov[0].iov_len : 0;
	size_t n = len < (size_t)result ? len : (size_t)result;

	if (result <= 0)
		return; /* an end of file is settled at close */
	if (c->proto == AGILE_PROTO_HTTP &&
	    h2_read(t, result, iov, count, asked, peek, data, n))
		return;
	/* A peek's bytes are read again: that read is the request's. */
	if (peek && c->proto == AGILE_PROTO_HTTP)
		return;
	if (!__atomic_compare_exchange_n(&t->request, &expected,
	                                 AGILE_REQ_IN_FLIGHT, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return; /* more of a request already started */
	if (c->proto == AGILE_PROTO_HTTP &&
	    !admit_request(t, c, data, n, result)) {
		__atomic_store_n(&t->request, AGILE_REQ_FREE, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&t->request_start_ns, agile__now_ns(),
	                 __ATOMIC_RELEASE);
	if (c->proto == AGILE_PROTO_HTTP) {
		agile__http_request(t, c, data, n);
		/* A CORS preflight is answered from the headers alone: its
		 * handling time says nothing of the server's work. */
		if (n >= 8 && memcmp(data, "OPTIONS ", 8) == 0)
			__atomic_fetch_or(&t->flags, AGILE_FD_EXCLUDED,
			                  __ATOMIC_ACQ_REL);
	}
}

/* proto=http: give the request's permit back, its response complete. */
static void release_request(struct agile_fd *t, struct agile_state_slot *s)
{
	int32_t permit = __atomic_exchange_n(&t->permit, 0, __ATOMIC_ACQ_REL);

	__atomic_store_n(&t->inbound_left, 0, __ATOMIC_RELEASE);
	agile__permit_release(&s->resilience, permit, t->permit_tid);
}

/* proto=http: `result` bytes of a response were written, p[0, n) of them
 * in the first buffer, `first` when they are its first.  The permit goes
 * back once the response is complete by its framing: its Content-Length
 * of body written after the head, a chunked body's last chunk ending a
 * write, at once for a head alone (a HEAD's response, 204, 304); a
 * response framed by the close, or whose head the first write did not
 * hold whole, keeps it until the close. */
static void response_written(struct agile_fd *t, struct agile_state_slot *s,
                             const char *p, size_t n, ssize_t result,
                             bool first)
{
	int64_t left = __atomic_load_n(&t->inbound_left, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) == 0)
		return;
	if (first) {
		struct agile_http_frame f;

		agile__http_frame(p, n, true, &f);
		if (f.head_len == 0 || f.body == AGILE_HTTP_TO_CLOSE)
			left = AGILE_HTTP_TO_CLOSE;
		else if (f.body == AGILE_HTTP_CHUNKED &&
		         !__atomic_load_n(&t->inbound_head, __ATOMIC_ACQUIRE))
			left = AGILE_HTTP_CHUNKED;
		else
			left = (int64_t)f.head_len - result +
			       (__atomic_load_n(&t->inbound_head,
			                        __ATOMIC_ACQUIRE) ||
			        f.body < 0 ? 0 : f.body);
		if (left <= 0 && left != AGILE_HTTP_CHUNKED &&
		    left != AGILE_HTTP_TO_CLOSE) {
			release_request(t, s);
			return;
		}
		__atomic_store_n(&t->inbound_left, left, __ATOMIC_RELEASE);
		if (left != AGILE_HTTP_CHUNKED)
			return;
	}
	if (left == AGILE_HTTP_CHUNKED) {
		/* The last chunk (and an empty trailer) ends the body. */
		if (n == (size_t)result && n >= 5 &&
		    memcmp(p + n - 5, "0\r\n\r\n", 5) == 0)
			release_request(t, s);
	} else if (left > 0) {
		left -= result;
		if (left <= 0)
			release_request(t, s);
		else
			__atomic_store_n(&t->inbound_left, left,
			                 __ATOMIC_RELEASE);
	}
}

void agile__inbound_after_send(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count)
{
	const struct agile_resilience_config *c;
	struct agile_state_slot *s;
	int64_t start, now, took;
	uint8_t flags;
	int status;
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t len = iov != NULL && count > 0 ? iov[0].iov_len : 0;

	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0) {
		agile__inbound_h2_sent(t, iov, count, result);
		return;
	}
	if (result <= 0)
		return;
	if (__atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
	    AGILE_REQ_IN_FLIGHT) {
		/* More of a response whose first bytes ended its request. */
		if (__atomic_load_n(&t->inbound_left, __ATOMIC_ACQUIRE) != 0) {
			agile__enter();
			response_written(t, agile__destinations_slot(t->dest),
			                 data, len < (size_t)result
			                       ? len : (size_t)result,
			                 result, false);
			agile__leave();
		}
		return;
	}
	/* "100 Continue" before the client sends its body (Python's
	 * http.server writes it for any request that expects it) is no
	 * response: the handling runs on to the final one, as track.c's
	 * outbound requests do. */
	if (len >= (size_t)result && agile__http_interim(data, (size_t)result))
		return;
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start == 0)
		return;
	__atomic_store_n(&t->request, AGILE_REQ_FREE, __ATOMIC_RELEASE);
	agile__enter();
	c = &agile__destinations_rule(t->dest)->resilience;
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	took = now - start;
	flags = __atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_EXCLUDED,
	                           __ATOMIC_ACQ_REL);
	status = c->proto == AGILE_PROTO_HTTP ? agile__http_status(data, len < (size_t)result
	                                            ? len : (size_t)result)
	                 : 0;
	agile__inbound_settle_shedder(t, &s->resilience, true, start, now);
	if (c->proto == AGILE_PROTO_HTTP)
		response_written(t, s, data, len < (size_t)result
		                             ? len : (size_t)result,
		                 result, true);
	if (flags & AGILE_FD_EXCLUDED) {
		agile__add_u64(&s->resilience.http_excluded, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           agile__http_in_list(c, AGILE_STATUS_IGNORE, status)) {
		agile__add_u64(&s->resilience.http_ignored, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           !agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status) &&
	           !agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status) &&
	           agile__http_cache_hit(c, data, len < (size_t)result
	                                          ? len : (size_t)result)) {
		/* Answered from a cache: not the work being protected. */
		agile__add_u64(&s->resilience.http_cache_hits, 1);
	} else if (c->proto == AGILE_PROTO_HTTP &&
	           (agile__http_in_list(c, AGILE_STATUS_OVERLOAD, status) ||
	            agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, status))) {
		/* The server turned the request away, or could not reach what
		 * it needed: whatever it took, no handling time of the work. */
		agile__add_u64(&s->unreachable, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_UNREACHABLE, 0,
		                    now);
	} else if (status >= 500 &&
	           (agile_conc_config(&s->resilience.core)->slo_ns <= 0 ||
	            took < agile_conc_config(&s->resilience.core)->slo_ns)) {
		/* A fast 5xx: the server failing fast, not a fast server. */
		agile__add_u64(&s->resilience.http_5xx, 1);
		agile__add_u64(&s->unreachable, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_UNREACHABLE, 0,
		                    now);
	} else {
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_ANSWERED, took,
		                    now);
	}
	agile__leave();
}
