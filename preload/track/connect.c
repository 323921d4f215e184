/*
 * connect.c - the connect lifecycle of a matched socket: the resilience
 * admission, the grant taken at connect() (waited for at the first send),
 * a connect made again or after a reported failure, and failures counted
 * as unreachable.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "clock.h"
#include "h2conn.h"
#include "hosts_fallback.h"
#include "log.h"
#include "process.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"
#include "track_internal.h"

/* Record the connection as unreachable, once. */
static void mark_unreachable(struct agile_fd *t, struct agile_state_slot *s)
{
	uint8_t flags = __atomic_fetch_or(&t->flags,
	                                  AGILE_FD_UNREACHABLE_COUNTED,
	                                  __ATOMIC_ACQ_REL);

	store8(&t->phase, AGILE_FD_FAILED);
	if (flags & AGILE_FD_UNREACHABLE_COUNTED)
		return;
	agile_rate_unavailable(&s->limiter);
	agile__add_u64(&s->unreachable, 1);
}

/* The connection failed: count it if it says "unreachable", then wait for
 * its grant so a retry loop is paced too.  by_connect: the failure was a
 * connect() call's answer, which leaves the socket ready for a new
 * attempt; reported any other way, it leaves the socket to answer the next
 * connect() with the failure once more (AGILE_FD_ABORT_PENDING). */
void agile__track_connect_failed(struct agile_fd *t, struct agile_state_slot *s,
                                 int error, bool by_connect)
{
	int64_t now;

	if (!by_connect)
		__atomic_fetch_or(&t->flags, AGILE_FD_ABORT_PENDING,
		                  __ATOMIC_ACQ_REL);
	if (is_unreachable(error))
		mark_unreachable(t, s);
	else
		store8(&t->phase, AGILE_FD_FAILED);
	/* Resilience: a failure for the breaker and the adaptive cap, and
	 * the permit goes back (resilience_hook.c). */
	agile__resilience_outcome(t, s, AGILE_OUTCOME_UNREACHABLE, 0,
	                          agile__now_ns());
	now = agile__track_settle_grant(t, agile__now_ns(), false, NULL);
	agile__destinations_tick(t->dest, s, now);
}

static bool is_stream_socket(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	if (agile__fd_known_stream(fd))
		return true;
	return agile__libc.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type,
	                              &len) == 0 && type == SOCK_STREAM;
}

/* A further connect() on a socket whose connect is already under way or
 * done: classify its result like the first call's, pace nothing. */
static int connect_again(int fd, struct agile_fd *t, const struct sockaddr *addr,
                         socklen_t len)
{
	int rc = agile__libc.connect(fd, addr, len);
	int error = errno;

	agile__enter();
	if (rc == 0 || error == EISCONN) {
		store8(&t->phase, AGILE_FD_CONNECTED);
	} else if (error != EINPROGRESS && error != EALREADY &&
	           error != EINTR && error != EAGAIN) {
		agile__track_connect_failed(t, slot_of(t), error, true);
	}
	agile__leave();
	errno = error;
	return rc;
}

/*
 * A connect() on a socket whose failed connect was reported by SO_ERROR, a
 * send or a receive.  Linux keeps such a socket "connecting" until a
 * connect() collects the failure: that call answers ECONNABORTED (or the
 * error itself when nothing has read it yet) whatever address it names,
 * and only the call after it makes a new attempt.  So this one reports the
 * old attempt and is not a new one: it waits for no grant and counts
 * nothing, neither a connection nor a failure, since the attempt was
 * counted when it failed.  After it the socket is an ordinary failed one,
 * whose next connect() is a new attempt and is paced.  A connect() with
 * AF_UNSPEC, which dissolves the association instead, also leaves it so.
 */
static int connect_reported(int fd, struct agile_fd *t,
                            const struct sockaddr *addr, socklen_t len)
{
	int rc = agile__libc.connect(fd, addr, len);
	int error = errno;

	__atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_ABORT_PENDING,
	                   __ATOMIC_ACQ_REL);
	errno = error;
	return rc;
}

/*
 * A new connection on fd to rule `dest`: the resilience admission, then the
 * entry and the connection's grant, planned now and waited for at the first
 * send.  Returns the entry; NULL when fd is no stream socket or beyond the
 * table (*refused 0: pass the call through), or when the admission refused
 * the connection (*refused its -errno: the call fails with it).  Inside
 * agile__enter().
 */
static struct agile_fd *begin_connection(int fd, int dest,
                                         const struct sockaddr *addr,
                                         socklen_t len, int *refused)
{
	struct agile_admission admission;
	struct agile_state_slot *s;
	struct agile_fd *t;
	int64_t now;

	*refused = 0;
	if (!is_stream_socket(fd) || (t = agile__fd_entry(fd)) == NULL)
		return NULL;
	s = agile__destinations_slot(dest);
	/* Resilience: the breaker, quota, window, per-address keys and the
	 * concurrency cap may refuse this connect or hold it (before its
	 * grant is taken, so a refused connect costs the budget nothing). */
	*refused = agile__resilience_admit(fd, dest, s, addr, len, &admission);
	if (*refused < 0)
		return NULL;
	now = agile__now_ns();
	/* A place a socket closed unseen left on the number. */
	agile__inflight_release(t);
	store8(&t->tracked, 0);
	/* Stores other threads may load atomically at the same moment: a
	 * thread waiting for a grant still watches this number for the
	 * response of the socket it named before (watch_prepare). */
	t->dest = dest;
	store8(&t->phase, AGILE_FD_CONNECTING);
	store8(&t->request, AGILE_REQ_GRANTED);
	store8(&t->flags, admission.breaker_open ? AGILE_FD_BREAKER_OPEN : 0);
	__atomic_store_n(&t->permit, admission.permit, __ATOMIC_RELAXED);
	t->permit_tid = admission.permit_tid;
	__atomic_store_n(&t->request_start_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->response_ns, 0, __ATOMIC_RELAXED);
	t->conn_id = agile__fd_new_conn_id();
	t->stdio_inode = 0;
	__atomic_store_n(&t->peer, 0, __ATOMIC_RELAXED);
	store8(&t->http2, 0);
	store8(&t->tls_plain, 0);
	agile__h2conn_release(t, 0, NULL);
	agile__tls_reset(&t->tls);
	__atomic_store_n(&t->tls_start_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->tls_end_ns, 0, __ATOMIC_RELAXED);
	agile__track_plan_grant(t, agile__destinations_take(dest, s, now));
	store8(&t->tracked, 1);
	agile__add_u64(&s->connects, 1);
	agile__destinations_tick(dest, s, now);
	if (agile__log_enabled(AGILE_LOG_DEBUG))
		agile__log(AGILE_LOG_DEBUG, "fd %d: connect to %s, grant in "
		           "%.3f ms", fd, s->name,
		           (double)(t->grant_ns - now) / AGILE_NS_PER_MS);
	return t;
}

static int track_connect(int fd, const struct sockaddr *addr, socklen_t len,
                         int dest);

/* A signal handler's connect while its thread is in a tracked call is not
 * tracked (track.h, agile__track_in_handler). */
int agile__track_connect(int fd, const struct sockaddr *addr, socklen_t len,
                         int dest)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	int rc;

	if (agile__track_in_handler(here))
		return agile__libc.connect(fd, addr, len);
	agile__track_hook_enter(here);
	rc = track_connect(fd, addr, len, dest);
	agile__track_hook_leave();
	return rc;
}

static int track_connect(int fd, const struct sockaddr *addr, socklen_t len,
                         int dest)
{
	struct agile_state_slot *s;
	struct agile_fd *t;
	int saved = errno;
	int rc, error, refused = 0;

	agile__enter();
	if (dest == AGILE_DEST_UNKNOWN) {
		agile__hosts_fallback_connecting(fd);
		dest = agile__destinations_match(addr, len);
		agile__hosts_fallback_connecting(-1);
	}
	t = agile__fd_lookup(fd);
	if ((dest >= 0 || t != NULL) && agile__in_vfork_child()) {
		/* The table is the parent's (see process.h). */
		agile__leave();
		errno = saved;
		return agile__libc.connect(fd, addr, len);
	}
	if (t != NULL && !agile__track_still_tracked(t))
		t = NULL; /* a new socket on a number closed behind our back */
	if (t != NULL && load8(&t->phase) == AGILE_FD_FAILED &&
	    (load8(&t->flags) & AGILE_FD_ABORT_PENDING)) {
		agile__leave();
		errno = saved;
		return connect_reported(fd, t, addr, len);
	}
	if (t != NULL && dest >= 0 && t->dest == dest &&
	    load8(&t->phase) != AGILE_FD_FAILED) {
		agile__leave();
		errno = saved;
		return connect_again(fd, t, addr, len);
	}
	if (t != NULL) {
		agile__resilience_close(t); /* its permit, its breaker call */
		agile__fd_untrack(fd);      /* reconnected elsewhere */
	}
	t = dest < 0 ? NULL : begin_connection(fd, dest, addr, len, &refused);
	agile__leave();
	if (t == NULL && dest >= 0 && refused < 0) {
		errno = -refused;
		return -1;
	}
	errno = saved;
	if (t == NULL)
		return agile__libc.connect(fd, addr, len);
	s = agile__destinations_slot(dest);

	/* connect_timeout= and retry= wrap the call (connect_hook.c). */
	rc = agile__resilience_connect(fd, addr, len, dest);
	error = errno;

	agile__enter();
	if (rc == 0)
		store8(&t->phase, AGILE_FD_CONNECTED);
	else if (error != EINPROGRESS && error != EINTR && error != EALREADY &&
	         error != EAGAIN)
		agile__track_connect_failed(t, s, error, true);
	agile__leave();
	errno = error;
	return rc;
}

int agile__track_fastopen(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved = errno;
	int dest, refused = 0;
	struct agile_fd *t = NULL;

	if (agile__track_in_handler((uintptr_t)__builtin_frame_address(0)))
		return 0;
	agile__enter();
	dest = agile__destinations_match(addr, len);
	/* A vfork child's table is its parent's (process.h). */
	if (dest >= 0 && !agile__in_vfork_child())
		t = begin_connection(fd, dest, addr, len, &refused);
	agile__leave();
	errno = saved;
	return refused < 0 ? refused : t != NULL;
}
