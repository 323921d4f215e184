/*
 * track_internal.h - what the files of preload/track/ share: the small
 * helpers every path uses, and each file's entry points for the others.
 *
 *   track.c     the entry points of a socket's bytes, the grant's wait,
 *               fdopen and SO_ERROR
 *   send.c      the send path: a request's grant and its start
 *   recv.c      the receive path: the answer that ends a request
 *   request.c   a request's end and its sample, the TLS ticket rule
 *   close.c     shutdown, close and dup bookkeeping
 *   connect.c   the connect lifecycle: admission, the grant, failures
 *   wait.c      the wait for a grant, its watch list and signal policy
 *   tunnel.c    tunnels through a proxy (CONNECT, SOCKS) and STARTTLS
 */
#ifndef AGILE_PRELOAD_TRACK_INTERNAL_H
#define AGILE_PRELOAD_TRACK_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "atomics.h"
#include "destinations.h"
#include "fdtable.h"

static inline bool is_unreachable(int error)
{
	return error == ECONNREFUSED || error == ENETUNREACH ||
	       error == EHOSTUNREACH;
}

static inline struct agile_state_slot *slot_of(const struct agile_fd *t)
{
	return agile__destinations_slot(t->dest);
}

/*
 * Plan the socket's grant: `planned` came from a take on its slot's bucket
 * now.  The spacing it was planned at goes with it, so that the wait, however
 * much later it begins, moves it closer by every rise since
 * (agile__track_wait_grant).  ab -c 32 takes its 32 grants at its connects:
 * at the floor of 1 a second they reach 32 s ahead, and a wait that began
 * after the rise read the new spacing as the one they were planned at, so
 * ab kept sending one request a second with 164 on offer (issue 15, the
 * closed loop's slo-bump).
 */
static inline void agile__track_plan_grant(struct agile_fd *t, int64_t planned)
{
	__atomic_store_n(&t->grant_interval_ns,
	                 agile__load_i64(&slot_of(t)->limiter.bucket.interval_ns),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&t->grant_ns, planned, __ATOMIC_RELEASE);
}

static inline uint8_t load8(const uint8_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void store8(uint8_t *p, uint8_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

static inline size_t iov_total(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++)
		n += iov[i].iov_len;
	return n;
}

/* The request state of a socket with no request and no grant: the next
 * send takes a grant under pace=request, none under pace=connect. */
static inline uint8_t answered_state(const struct agile_fd *t)
{
	return agile__destinations_pace(t->dest) == AGILE_PACE_REQUEST
	       ? AGILE_REQ_NEEDS_GRANT : AGILE_REQ_FREE;
}

void agile__inflight_release(struct agile_fd *t);

/* End the request in flight, if any: returns its start, or 0; its place
 * under inflight= is given back (inflight.c). */
static inline int64_t claim_request(struct agile_fd *t)
{
	int64_t start;

	if (load8(&t->request) != AGILE_REQ_IN_FLIGHT)
		return 0;
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start != 0)
		store8(&t->request, answered_state(t));
	if (__atomic_load_n(&t->inflight_place, __ATOMIC_RELAXED) != 0)
		agile__inflight_release(t);
	return start;
}

/* request.c */
struct agile_h2_fields;
/* The first response bytes of a request: one round-trip sample, unless
 * proto=http says otherwise (http.c). */
void agile__track_answered(struct agile_fd *t, struct agile_state_slot *s,
                           int64_t rtt, int64_t now, const void *data,
                           size_t len);
/* A stream's round trip ended (h2conn.h's callback). */
void agile__track_h2_ended(struct agile_fd *t, int64_t rtt_ns, int64_t now,
                           bool answered,
                           const struct agile_h2_fields *fields,
                           bool excluded);
/* Whether an HTTP/2 request's :path is one of exclude= (h2conn.h's
 * callback). */
bool agile__track_h2_excluded(const struct agile_fd *t, const char *path,
                              size_t len);
/* The request in flight, if any, ends without an answer: truncated. */
void agile__track_truncate_request(struct agile_fd *t);
/* End the round trip TLS 1.3's ticket rule holds (see there). */
void agile__track_tls_answer_now(struct agile_fd *t, int64_t now);

/* Called wherever a held round trip may end (every send, end of file,
 * close): a connection without one pays a load or two, inline. */
static inline void tls_answer_held(struct agile_fd *t, int64_t now)
{
	if (__atomic_load_n(&t->tls_start_ns, __ATOMIC_RELAXED) != 0) {
		agile__track_tls_answer_now(t, now);
		return;
	}
	if ((agile__tls_flags(&t->tls) & AGILE_TLS_TICKET_RULE) &&
	    load8(&t->request) != AGILE_REQ_IN_FLIGHT)
		__atomic_fetch_and(&t->tls.flags,
		                   (uint16_t)~AGILE_TLS_TICKET_RULE,
		                   __ATOMIC_RELAXED);
}

/* send.c: the send path around the real call (track.h's
 * agile__track_before_send and agile__track_after_send, whichever source
 * the bytes come from). */
int64_t agile__track_send_before(struct agile_fd *t, const struct iovec *iov,
                                 int count, size_t *limit);
void agile__track_send_after(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count);

/* recv.c: whether the first `n` bytes of an answer on `t` are an interim
 * one (whole 1xx responses, or HTTP/2's SETTINGS and the like on a
 * connection that spoke HTTP/2), which leaves its request in flight. */
bool agile__track_bytes_interim(const struct agile_fd *t, const void *data,
                                size_t n);
/* recv.c: the receive path after the real call (track.h's
 * agile__track_after_recv). */
void agile__track_recv_after(struct agile_fd *t, ssize_t result, int error,
                             size_t asked, const struct iovec *iov, int count,
                             bool peek);

/* track.c */
/* Is `t` still the entry of the socket its descriptor refers to (a socket
 * handed to stdio may be closed unseen)?  When not, it is forgotten. */
bool agile__track_still_tracked(struct agile_fd *t);
/* Wait for the socket's unwaited grant, then the send spacing and the
 * fleet slot; returns the time after (see there). */
int64_t agile__track_settle_grant(struct agile_fd *t, int64_t now,
                                  bool interruptible, bool *interrupted);

/* connect.c */
/* The connection failed with `error`, seen by its connect() or later
 * (see there). */
void agile__track_connect_failed(struct agile_fd *t, struct agile_state_slot *s,
                                 int error, bool by_connect);

/* wait.c */
/* Add fd to this thread's list of sockets with a request in flight. */
void agile__track_watch(int fd);
/* Sleep until `planned`, stamping responses that arrive meanwhile; true
 * when cut short for a send on `interruptible_fd` to fail with EINTR. */
bool agile__track_wait_on(int64_t planned, int interruptible_fd);
/* Wait for a socket's grant planned at *planned, following the rate's
 * rises (wait.c); true when a signal's handler cut it short. */
bool agile__track_wait_grant(struct agile_fd *t, int64_t *planned,
                             int64_t now, int fd);
/* The same, never cut short (the fleet's callback too). */
void agile__track_wait(int64_t planned);

/* Wait until enter(arg) is true or `deadline`, stamping the responses of
 * this thread's watched sockets meanwhile (ppolled at most recheck_ns at a
 * time); with none to watch, sleep(arg, now, until) sleeps (returns 0, or
 * EINTR when a signal came, or -1 when it entered itself).  Returns 1
 * entered, 0 at the deadline, -1 when a signal's handler expects a send on
 * interruptible_fd to fail with EINTR (inflight.c). */
int agile__track_wait_room(int64_t deadline, int interruptible_fd,
                           bool (*enter)(void *),
                           int (*sleep)(void *, int64_t, int64_t),
                           void *arg, int64_t recheck_ns);

/* inflight.c */
/* Before a send that starts a request on `t`: wait for a place under the
 * destination's inflight= cap and take it (none when there is no cap or
 * the request holds one already); true when it waited, so the clock moved.
 * *interrupted when a signal's handler cut the wait short for the send to
 * fail with EINTR: no place is then held. */
bool agile__inflight_enter(struct agile_fd *t, int64_t now, bool *interrupted);
/* The cap in force for a request on `t`; 0 none. */
uint64_t agile__inflight_cap(const struct agile_fd *t);
/* Destination `dest`'s places held, and the requests that went after a
 * tick without one, in this process. */
uint32_t agile__inflight_held(int dest);
uint64_t agile__inflight_overruns(int dest);

/* tunnel.c */
/* Does a request open a tunnel (see there)? */
bool agile__track_opens_tunnel(const uint8_t *p, size_t n, bool first);
/* The request state a send on a connection setting up a tunnel goes on
 * with. */
uint8_t agile__track_tunnel_send(struct agile_fd *t, const struct iovec *iov,
                                 int count, uint8_t request);
/* TLS starts on a plain connection: restart the walker. */
void agile__track_start_tls(struct agile_fd *t);

#endif /* AGILE_PRELOAD_TRACK_INTERNAL_H */
