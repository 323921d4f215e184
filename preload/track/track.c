/*
 * track.c - pacing, samples and classification on matched sockets (the
 * state machine is described in track.h): the send and receive paths, the
 * request lifecycle and its round-trip samples, TLS 1.3's ticket rule, and
 * the end of a socket (shutdown, close, dup).  The connect lifecycle is in
 * connect.c, the wait for a grant in wait.c, tunnels and STARTTLS in
 * tunnel.c (track_internal.h).
 *
 * Concurrency: the fields that pass a value from one call to another (the
 * grant's planned time, the request's start) are claimed with an atomic
 * exchange, so with a reader and a writer thread on one socket each grant
 * is waited for once and each request yields at most one sample.  No lock is
 * taken here at all, so none is held while a caller waits.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agile.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "inbound.h"
#include "fleet.h"
#include "goodbye.h"
#include "h2conn.h"
#include "http2.h"
#include "internal.h"
#include "log.h"
#include "process.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"
#include "tls_plain.h"
#include "track_internal.h"
#include "usermem.h"
/* The inode of the socket `fd` refers to, or 0 when it is not a socket. */
static uint64_t socket_inode(int fd)
{
	struct stat st;
	int saved = errno;
	uint64_t inode = 0;

	if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
		inode = (uint64_t)st.st_ino;
	errno = saved;
	return inode;
}

/*
 * Is `t` still the entry of the socket its descriptor refers to?  Every
 * close of a tracked socket is seen by a hook (fdtable.h) except those stdio
 * makes inside libc on a socket handed to it by fdopen(); only such an entry
 * (AGILE_FD_STDIO) is checked, with one fstat(), and forgotten when the
 * number now holds something else.  The caller then treats the descriptor
 * as untracked.  Asked only where a request is paced, started or ended, so
 * a stream of reads inside one response pays nothing; an unmarked entry
 * pays one load.
 */
bool agile__track_still_tracked(struct agile_fd *t)
{
	int fd;

	if (!(load8(&t->flags) & AGILE_FD_STDIO))
		return true;
	fd = fd_of(t);
	if (socket_inode(fd) == t->stdio_inode)
		return true;
	agile__enter();
	agile__resilience_close(t); /* its permit, its breaker call */
	agile__leave();
	agile__fd_untrack(fd);
	return false;
}

/*
 * Wait for the socket's unwaited grant, if any.  Returns the time after.
 * `interruptible`: the wait is a send's, which a signal's handler may end
 * with EINTR (interrupt_reported); *interrupted then says so, and the grant
 * stays the socket's, so the send the program retries waits only for the
 * rest of it.  Only the grant's wait is cut short: the send's spacing and
 * the fleet's slot after it are at most about a second, and were reserved
 * for this send already.
 */
int64_t agile__track_settle_grant(struct agile_fd *t, int64_t now,
                                  bool interruptible, bool *interrupted)
{
	int64_t planned = __atomic_exchange_n(&t->grant_ns, 0,
	                                      __ATOMIC_ACQ_REL);

	if (planned > now) {
		int fd = interruptible ? fd_of(t) : -1;

		if (agile__track_wait_on(planned, fd)) {
			int64_t none = 0;

			/* Not over a grant another thread planned on the
			 * socket meanwhile. */
			__atomic_compare_exchange_n(&t->grant_ns, &none,
			                            planned, false,
			                            __ATOMIC_ACQ_REL,
			                            __ATOMIC_ACQUIRE);
			*interrupted = true;
			return agile__now_ns();
		}
		now = agile__now_ns();
	}
	if (planned != 0) {
		/* The sends are spaced too (bucket.c says why). */
		struct agile_state_slot *s = slot_of(t);
		int64_t slot = agile__bucket_send_slot(&s->limiter.bucket,
		                                       &s->send_tat_ns, now);

		if (slot > now) {
			agile__track_wait(slot);
			now = agile__now_ns();
		}
	}
	/* A destination with a fleet budget (fleet.h) also waits for its
	 * fleet slot, once the local grant is due. */
	if (planned != 0) {
		int64_t fleet = agile__fleet_admit(t->dest, now,
		                                   agile__track_wait);

		if (fleet > now) {
			agile__track_wait(fleet);
			now = agile__now_ns();
		}
	}
	return now;
}

static inline void tls_answer_held(struct agile_fd *t, int64_t now);

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

static uint8_t answered_state(const struct agile_fd *t);

/* Record a round trip of rtt as a verdict says (http.c). */
static void record_verdict(struct agile_fd *t, struct agile_state_slot *s,
                           enum agile_http_verdict verdict, int64_t rtt,
                           int64_t now)
{
	switch (verdict) {
	case AGILE_HTTP_SAMPLE:
		agile_rate_observe(&s->limiter, rtt);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_ANSWERED, rtt,
		                          now);
		break;
	case AGILE_HTTP_SKIP:
		agile__resilience_outcome(t, s, AGILE_OUTCOME_ANSWERED, 0, now);
		break;
	case AGILE_HTTP_REFUSED:
		agile_rate_unavailable(&s->limiter);
		agile__add_u64(&s->unreachable, 1);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	case AGILE_HTTP_FAILED:
		agile_rate_observe(&s->limiter, rtt);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	case AGILE_HTTP_TRUNCATED:
		agile_rate_observe_truncated(&s->limiter, rtt);
		agile__add_u64(&s->truncated, 1);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	}
}

/* A stream's round trip ended (h2conn.h): a sample, or a truncation;
 * with proto=http and its answer decoded, what its status says, as for
 * HTTP/1 (http.c). */
static void h2_ended(struct agile_fd *t, int64_t rtt_ns, int64_t now,
                     bool answered, const struct agile_h2_fields *fields,
                     bool excluded)
{
	struct agile_state_slot *s = slot_of(t);
	enum agile_http_verdict verdict = answered ? AGILE_HTTP_SAMPLE :
	                                             AGILE_HTTP_TRUNCATED;

	if (answered && excluded) {
		agile__add_u64(&s->resilience.http_excluded, 1);
		verdict = AGILE_HTTP_SKIP;
	} else if (answered && fields != NULL) {
		verdict = agile__http_h2_verdict(s,
		                                 &agile__destinations_rule(t->dest)->resilience,
		                                 fields, now, agile__unix_ns());
	}
	record_verdict(t, s, verdict, rtt_ns, now);
	agile__destinations_tick(t->dest, s, now);
}

/* Whether an HTTP/2 request's :path is one of exclude= (h2conn.h). */
static bool h2_excluded(const struct agile_fd *t, const char *path,
                        size_t len)
{
	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;

	return c->proto == AGILE_PROTO_HTTP && c->exclude_count > 0 &&
	       agile__http_path_excluded(c, path, len);
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
		__atomic_store_n(&t->grant_ns,
		                 agile__destinations_take(t->dest, s, now),
		                 __ATOMIC_RELEASE);
	if (plan->opens == 1)
		return AGILE_REQ_GRANTED;
	if (count > AGILE_SEND_CUT_IOV_MAX) {
		/* No cut: one grant a stream, the send waits for the last. */
		int64_t last = 0;

		for (uint32_t i = 1; i < plan->opens; i++)
			last = agile__destinations_take(t->dest, s, now);
		__atomic_store_n(&t->grant_ns, last, __ATOMIC_RELEASE);
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

static int64_t before_send(struct agile_fd *t, const struct iovec *iov,
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
	if (load8(&t->flags) & AGILE_FD_INBOUND)
		return agile__now_ns();

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
	if (agile__h2conn_plan(t, iov, count, iov_total(iov, count), &plan))
		request = h2_send(t, s, now, &plan, count, limit, &pending,
		                  request);
	else if (!may_start_request(t, iov, count))
		request = AGILE_REQ_IN_FLIGHT; /* nothing to wait for */
	switch (request) {
	case AGILE_REQ_NEEDS_GRANT: {
		/* pace=request: a new request on a kept-alive connection.
		 * Only the thread that moves the state takes the grant. */
		uint8_t expected = AGILE_REQ_NEEDS_GRANT;

		if (__atomic_compare_exchange_n(&t->request, &expected,
		                                AGILE_REQ_GRANTED, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			__atomic_store_n(&t->grant_ns,
			                 agile__destinations_take(t->dest, s,
			                                          now),
			                 __ATOMIC_RELEASE);
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
		__atomic_store_n(&t->grant_ns, pending, __ATOMIC_RELEASE);
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
	     __atomic_load_n(&t->conn_id, __ATOMIC_RELAXED) != conn))
		return AGILE_SEND_CLOSED;
	/* The stream's answer may be read by another thread before this
	 * one has walked the send: in the table first. */
	if (plan.stream != 0)
		agile__h2conn_opening(t, plan.stream, now);
	return now;
}

static void after_send(struct agile_fd *t, ssize_t result, int error,
                       int64_t start_ns, const struct iovec *iov, int count)
{
	const void *data = iov != NULL && count > 0 ? iov[0].iov_base : NULL;
	size_t data_len = iov != NULL && count > 0 ? iov[0].iov_len : 0;
	bool plain = true, first;
	uint8_t request;

	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_after_send(t, result, data, data_len);
		errno = error;
		return;
	}
	/* Nothing went: the stream the send was to open did not open. */
	if (result <= 0 && __atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0)
		agile__h2conn_sent(t, iov, count, result, 0, 0, h2_ended,
		                   h2_excluded);
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
		                            agile__now_ns(), h2_ended,
		                            h2_excluded);
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

/* The request state of a socket with no request and no grant: the next
 * send takes a grant under pace=request, none under pace=connect. */
static uint8_t answered_state(const struct agile_fd *t)
{
	return agile__destinations_pace(t->dest) == AGILE_PACE_REQUEST
	       ? AGILE_REQ_NEEDS_GRANT : AGILE_REQ_FREE;
}

/* End the request in flight, if any: returns its start, or 0. */
static int64_t claim_request(struct agile_fd *t)
{
	int64_t start;

	if (load8(&t->request) != AGILE_REQ_IN_FLIGHT)
		return 0;
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start != 0)
		store8(&t->request, answered_state(t));
	return start;
}

/* The first response bytes of a request: one round-trip sample, unless
 * proto=http says otherwise (http.c). */
static void answered(struct agile_fd *t, struct agile_state_slot *s,
                     int64_t rtt, int64_t now, const void *data, size_t len)
{
	enum agile_http_verdict verdict = AGILE_HTTP_SAMPLE;

	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;

	if (c->proto == AGILE_PROTO_HTTP)
		verdict = agile__http_response(t, c, s, data, len, now,
		                               agile__unix_ns());
	record_verdict(t, s, verdict, rtt, now);
}

/*
 * The first request of a TLS 1.3 connection usually goes out before the
 * server's NewSessionTickets, its answer to the client's Finished, have
 * arrived; taken as the response they would end the round trip early, at
 * the handshake's echo, however long the request itself takes.  So that
 * request (AGILE_TLS_TICKET_RULE) is answered at the server's first record
 * as far as pacing goes (the next request takes a grant), but its round
 * trip is held open until a record arrives that is not as long as that
 * first one: a server's tickets all have one length (tls.c leaves records
 * of that length out of AGILE_TLS_RECV_RESPONSE), its response's records
 * another.  When none comes before the client's next send, close or end
 * of file, the round trip ends at the first record: there were no tickets
 * and the response was one record, or tickets and response came together.
 * No timing is involved: Python's server, with Nagle's algorithm against
 * the client's delayed ACK, sends its second ticket 40 ms after the first,
 * and a response's header and body records may come as far apart.  What
 * this gets wrong: a server that sends no tickets is measured to the second
 * record of its response, late by the time between the two when they come
 * apart (a streamed body), and a response as long as the tickets is
 * skipped.
 */

/* End the round trip the ticket rule holds, if any, at tls_end_ns.  With
 * none held and no request in flight, the rule did not take hold (the
 * first request was answered some other way): it is dropped.  `now` is 0
 * when the caller has not read the clock: it is read only if a round trip
 * is held (a plain connection's end of file and close read none). */
static __attribute__((noinline)) void tls_answer_now(struct agile_fd *t,
                                                     int64_t now)
{
	int64_t start = __atomic_exchange_n(&t->tls_start_ns, 0,
	                                    __ATOMIC_ACQ_REL);

	if (start == 0)
		return;
	__atomic_fetch_and(&t->tls.flags, (uint16_t)~AGILE_TLS_TICKET_RULE,
	                   __ATOMIC_RELAXED);
	answered(t, slot_of(t),
	         __atomic_load_n(&t->tls_end_ns, __ATOMIC_RELAXED) - start,
	         now != 0 ? now : agile__now_ns(), NULL, 0);
}

/* Called wherever a held round trip may end (every send, end of file,
 * close): a connection without one pays a load or two, inline. */
static inline void tls_answer_held(struct agile_fd *t, int64_t now)
{
	if (__atomic_load_n(&t->tls_start_ns, __ATOMIC_RELAXED) != 0) {
		tls_answer_now(t, now);
		return;
	}
	if ((agile__tls_flags(&t->tls) & AGILE_TLS_TICKET_RULE) &&
	    load8(&t->request) != AGILE_REQ_IN_FLIGHT)
		__atomic_fetch_and(&t->tls.flags,
		                   (uint16_t)~AGILE_TLS_TICKET_RULE,
		                   __ATOMIC_RELAXED);
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
			answered(r, s, end - start, now, NULL, 0);
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
		                                now, h2_ended);
		if (walked)
			store8(&t->phase, AGILE_FD_CONNECTED);
	} else {
		agile__h2conn_end(t, now, h2_ended);
	}
	agile__leave();
	return walked;
}

static void after_recv(struct agile_fd *t, ssize_t result, int error,
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
		agile__inbound_after_recv(t, result, data, data_len, peek);
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
				answered(r, s, now - start, now, data,
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

/*
 * The two sources of a connection's bytes (track.h).  The socket's own
 * sends and receives are followed until the program's TLS library hands
 * the preload the plaintext; from then on they are that library's
 * ciphertext (records, a KeyUpdate, close_notify, the tickets it reads
 * inside SSL_read) and pass through, so a request is neither paced nor
 * counted twice.
 */
int64_t agile__track_before_send(struct agile_fd *t, const struct iovec *iov,
                                 int count, size_t *limit)
{
	if (agile__tls_current != NULL &&
	    !(load8(&t->flags) & AGILE_FD_INBOUND))
		agile__tls_learn(fd_of(t)); /* inside a TLS call (tls_plain.h) */
	if (load8(&t->tls_plain))
		return AGILE_SEND_PASS;
	return before_send(t, iov, count, limit);
}

void agile__track_after_send(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count)
{
	if (load8(&t->tls_plain)) {
		errno = error;
		return;
	}
	after_send(t, result, error, start_ns, iov, count);
}

void agile__track_after_recv(struct agile_fd *t, ssize_t result, int error,
                             size_t asked, const struct iovec *iov, int count,
                             bool peek)
{
	if (agile__tls_current != NULL &&
	    !(load8(&t->flags) & AGILE_FD_INBOUND))
		agile__tls_learn(fd_of(t));
	if (load8(&t->tls_plain)) {
		errno = error;
		return;
	}
	after_recv(t, result, error, asked, iov, count, peek);
}

/* The first plaintext of the connection: the record walker stops where it
 * is.  A round trip its ticket rule held open ends at its first record (the
 * program is writing again, as at any send); the handshake it followed has
 * already spent the connection's grant at the ClientHello, and the first
 * request rides on it as before. */
static void plaintext_starts(struct agile_fd *t)
{
	int saved = errno;

	agile__enter();
	tls_answer_held(t, 0);
	__atomic_fetch_and(&t->tls.flags, (uint16_t)~AGILE_TLS_TICKET_RULE,
	                   __ATOMIC_RELAXED);
	__atomic_store_n(&t->tls.stage, AGILE_TLS_OFF, __ATOMIC_RELAXED);
	store8(&t->tls_plain, 1);
	if (agile__log_enabled(AGILE_LOG_DEBUG))
		agile__log(AGILE_LOG_DEBUG, "fd %d: the TLS library hands "
		           "over the plaintext", fd_of(t));
	agile__leave();
	errno = saved;
}

int64_t agile__track_plain_before_send(struct agile_fd *t,
                                       const struct iovec *iov, int count,
                                       size_t *limit)
{
	if (!load8(&t->tls_plain))
		plaintext_starts(t);
	return before_send(t, iov, count, limit);
}

void agile__track_plain_after_send(struct agile_fd *t, ssize_t result,
                                   int error, int64_t start_ns,
                                   const struct iovec *iov, int count)
{
	after_send(t, result, error, start_ns, iov, count);
}

void agile__track_plain_after_recv(struct agile_fd *t, ssize_t result,
                                   int error, size_t asked,
                                   const struct iovec *iov, int count,
                                   bool peek)
{
	if (!load8(&t->tls_plain))
		plaintext_starts(t);
	after_recv(t, result, error, asked, iov, count, peek);
}

void agile__track_fdopen(struct agile_fd *t)
{
	int saved = errno;
	struct agile_state_slot *s;
	int64_t now;

	if (!agile__track_still_tracked(t))
		return;
	agile__enter();
	/* From now on stdio may close the socket where no hook sees it (by
	 * freopen; fclose is hooked): the inode is recorded before the mark
	 * that makes agile__track_still_tracked compare it. */
	__atomic_store_n(&t->stdio_inode, socket_inode(fd_of(t)),
	                 __ATOMIC_RELAXED);
	__atomic_fetch_or(&t->flags, AGILE_FD_STDIO, __ATOMIC_RELEASE);
	s = slot_of(t);
	now = agile__track_settle_grant(t, agile__now_ns(), false, NULL);
	agile__destinations_tick(t->dest, s, now);
	agile__leave();
	errno = saved;
}

void agile__track_so_error(struct agile_fd *t, int so_error)
{
	if (so_error == 0 || load8(&t->phase) != AGILE_FD_CONNECTING)
		return;
	agile__enter();
	agile__track_connect_failed(t, slot_of(t), so_error, false);
	agile__leave();
}

static void truncate_request(struct agile_fd *t)
{
	int64_t start = claim_request(t);
	struct agile_state_slot *s;
	int64_t now;

	if (start == 0)
		return;
	s = slot_of(t);
	now = agile__now_ns();
	agile_rate_observe_truncated(&s->limiter, now - start);
	agile__add_u64(&s->truncated, 1);
	agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, now - start,
	                          now);
	agile__destinations_tick(t->dest, s, now);
}

void agile__track_shutdown(struct agile_fd *t, int how)
{
	int saved = errno;

	/* SHUT_WR after a request is how HTTP/1.0 clients and netcat say
	 * "that was all": the response is still coming. */
	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		errno = saved;
		return;
	}
	agile__enter();
	tls_answer_held(t, 0);
	if (how == SHUT_RD || how == SHUT_RDWR)
		truncate_request(t);
	agile__leave();
	errno = saved;
}

void agile__track_close(int fd, struct agile_fd *t)
{
	int saved = errno;

	agile__enter();
	/* An unwaited grant is simply spent: the connection was made (the
	 * downstream saw it), and sleeping in close() would only stall the
	 * program, e.g. when it drops the loser of a happy-eyeballs race. */
	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_close(t); /* a listener's connection */
	} else {
		tls_answer_held(t, 0);
		truncate_request(t);
	}
	agile__resilience_close(t); /* its permit, its breaker call */
	agile__h2conn_release(t, agile__now_ns(), h2_ended);
	agile__fd_untrack(fd);
	agile__leave();
	errno = saved;
}

/*
 * A socket duplicated onto 0, 1 or 2 is written and read through stdin,
 * stdout and stderr, stdio's streams, inside libc where no hook sees it,
 * or by a program exec()ed next that does not know it: its pending grant is
 * waited for here, as at fdopen().  bash runs `echo … >/dev/tcp/HOST/PORT`
 * as connect(), dup2() onto 1, a write by stdio, close(): the grant taken
 * at the connect was never waited for, and at floor=max=5 twenty such
 * connections took 0.1 s (tests/preload/bash_tcp.sh).  A launcher that
 * connects, dup2()s the socket onto 0 and 1 and execs its client is paced
 * per connection the same way.  Only a grant already taken is waited for,
 * so a second dup of the same connection waits for nothing.
 */
static void settle_for_stdio(struct agile_fd *t)
{
	int64_t now;

	if ((load8(&t->flags) & AGILE_FD_INBOUND) ||
	    __atomic_load_n(&t->grant_ns, __ATOMIC_ACQUIRE) == 0)
		return;
	now = agile__track_settle_grant(t, agile__now_ns(), false, NULL);
	agile__destinations_tick(t->dest, slot_of(t), now);
}

void agile__track_dup(int oldfd, int newfd)
{
	struct agile_fd *from = agile__fd_lookup(oldfd);
	struct agile_fd *to;
	int saved = errno;

	if (from == NULL || oldfd == newfd)
		return;
	agile__enter();
	to = agile__fd_entry(newfd);
	if (to != NULL) {
		/* The new descriptor takes the socket's pending grant and its
		 * request in flight; the old one stays tracked (it is the same
		 * socket) with neither, so the common hand-off "dup2(s, 1);
		 * close(s)" neither loses the request nor truncates it, and a
		 * request sent through the old one takes a grant of its own
		 * (one unpaced request per dup otherwise).  Each
		 * names the other as its peer, so a response read through one
		 * ends a request sent through the other (see request_owner). */
		store8(&to->tracked, 0);
		to->dest = from->dest;
		to->phase = load8(&from->phase);
		/* The breaker call moves with the request; the permit is
		 * shared (resilience_hook.c counts its references).  stdio
		 * holds the old number, not the new one, so the new one is
		 * closed only where a hook sees it. */
		to->flags = __atomic_fetch_and(&from->flags,
		                               (uint8_t)~AGILE_FD_BREAKER_OPEN,
		                               __ATOMIC_ACQ_REL) &
		            (uint8_t)~AGILE_FD_STDIO;
		agile__resilience_dup(from, to);
		to->request = load8(&from->request);
		to->grant_ns = __atomic_exchange_n(&from->grant_ns, 0,
		                                   __ATOMIC_ACQ_REL);
		to->request_start_ns = __atomic_exchange_n(
			&from->request_start_ns, 0, __ATOMIC_ACQ_REL);
		to->response_ns = __atomic_exchange_n(&from->response_ns, 0,
		                                      __ATOMIC_ACQ_REL);
		to->conn_id = from->conn_id;
		to->stdio_inode = 0;
		/* The new number follows the connection's TLS records; the
		 * old one, if the program goes on using it, falls back to the
		 * byte-level rules rather than walk half the records. */
		memcpy(&to->tls, &from->tls, sizeof(to->tls));
		__atomic_store_n(&from->tls.stage, AGILE_TLS_OFF,
		                 __ATOMIC_RELAXED);
		to->tls_end_ns = from->tls_end_ns;
		to->tls_start_ns = __atomic_exchange_n(&from->tls_start_ns, 0,
		                                       __ATOMIC_ACQ_REL);
		to->http2 = load8(&from->http2);
		to->tls_plain = load8(&from->tls_plain);
		agile__h2conn_dup(from, to);
		to->peer = oldfd + 1;
		__atomic_store_n(&from->peer, newfd + 1, __ATOMIC_RELAXED);
		if (to->request == AGILE_REQ_IN_FLIGHT &&
		    to->request_start_ns == 0)
			to->request = answered_state(to);
		store8(&from->request, answered_state(from));
		store8(&to->tracked, 1);
		if (newfd <= STDERR_FILENO)
			settle_for_stdio(to);
	}
	agile__leave();
	errno = saved;
}
