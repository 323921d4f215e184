/*
 * track.c - pacing, samples and classification on matched sockets (the
 * state machine is described in track.h).
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
#include <poll.h>
#include <signal.h>
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
#include "http2.h"
#include "internal.h"
#include "log.h"
#include "process.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"
#include "usermem.h"

static bool is_unreachable(int error)
{
	return error == ECONNREFUSED || error == ENETUNREACH ||
	       error == EHOSTUNREACH;
}

static struct agile_state_slot *slot_of(const struct agile_fd *t)
{
	return agile__destinations_slot(t->dest);
}

static uint8_t load8(const uint8_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store8(uint8_t *p, uint8_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * The sockets on which this thread has a request in flight.  While the
 * thread sleeps for a grant (in an event loop: in one socket's send), the
 * responses on these sockets cannot be read, so the wait watches them with
 * ppoll and stamps response_ns when one becomes readable: the round trip
 * ends there, not when the program finally reads it.  A thread-per-
 * connection program has no other socket in flight and just sleeps.  Only
 * the sending thread's sockets are watched; 64 covers any event loop's
 * concurrency that pacing leaves room for, and a socket beyond it is
 * measured at its read as before.
 *
 * Every request's first send adds its socket, and the list is pruned only
 * when the thread waits, so with a ceiling far above the load it holds
 * every connection of an event loop: finding whether a number is already
 * in it by walking the list cost redis-benchmark (50 connections) 180 of
 * the preload's 800 instructions per request.  watch_bits mirrors the list
 * for the numbers below WATCH_BITS_FDS, so the common case is one bit test;
 * a higher number is looked for in the list as before.
 */
#define WATCH_MAX 64
#define WATCH_BITS_FDS 1024
static __thread int watch_fds[WATCH_MAX]
	__attribute__((tls_model("initial-exec")));
static __thread int watch_count __attribute__((tls_model("initial-exec")));
static __thread uint64_t watch_bits[WATCH_BITS_FDS / 64]
	__attribute__((tls_model("initial-exec")));

static int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

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
static bool still_tracked(struct agile_fd *t)
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

/* Is fd in this thread's list?  Set or clear its bit (fd below
 * WATCH_BITS_FDS only). */
static bool watched(int fd)
{
	if (fd < WATCH_BITS_FDS)
		return watch_bits[fd / 64] & (UINT64_C(1) << (fd % 64));
	for (int i = 0; i < watch_count; i++)
		if (watch_fds[i] == fd)
			return true;
	return false;
}

static void watch_mark(int fd, bool on)
{
	if (fd >= WATCH_BITS_FDS)
		return;
	if (on)
		watch_bits[fd / 64] |= UINT64_C(1) << (fd % 64);
	else
		watch_bits[fd / 64] &= ~(UINT64_C(1) << (fd % 64));
}

static void watch_add(int fd)
{
	if (watch_count < WATCH_MAX && !watched(fd)) {
		watch_fds[watch_count++] = fd;
		watch_mark(fd, true);
	}
}

/* Keep the watched sockets whose response has not been seen; fill pfd. */
static int watch_prepare(struct pollfd *pfd)
{
	int keep = 0;

	for (int i = 0; i < watch_count; i++) {
		int fd = watch_fds[i];
		struct agile_fd *t = agile__fd_lookup(fd);

		if (t == NULL ||
		    __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) !=
		    AGILE_REQ_IN_FLIGHT ||
		    __atomic_load_n(&t->response_ns, __ATOMIC_ACQUIRE) != 0) {
			watch_mark(fd, false);
			continue;
		}
		watch_fds[keep] = fd;
		pfd[keep].fd = fd;
		pfd[keep].events = POLLIN | POLLRDHUP;
		pfd[keep].revents = 0;
		keep++;
	}
	watch_count = keep;
	return keep;
}

/*
 * Does the signal handler that just interrupted a wait in a send on `fd`
 * expect that send to fail with EINTR?  The kernel's rule for a blocking
 * send it holds (for room in the socket buffer): a handler installed
 * without SA_RESTART makes it fail with EINTR, one with SA_RESTART restarts
 * it; a non-blocking socket never waits, so never fails that way.  The
 * preload's wait for a grant is such a hold, and a program that installs a
 * handler without SA_RESTART is asking for it: alarm() as the timeout of a
 * request, a flag set by SIGTERM that the main loop checks when a call
 * fails.  Resumed instead, the wait swallowed that timeout: the request
 * went out after it, and a server that never answered held the program's
 * receive for ever (tests/preload/alarm_timeout.sh).
 *
 * The kernel does not say which signal interrupted the sleep, so every
 * signal that could have is asked: one not blocked in this thread (the
 * handler's own mask is undone when it returns) with a handler installed
 * without SA_RESTART.  When there is none, every handler that can have run
 * wants restarting, and the wait resumes; when there is one, the send
 * fails, also in the rare program that has both kinds and got a restarting
 * one.  The signals of a faulting instruction (SIGSEGV and the like) are
 * not asked: they are not sent to a sleeping thread, and the handlers that
 * sanitizers and virtual machines install for them have no SA_RESTART (with
 * ASan's, every wait failed).  About 64 sigaction() calls, made only when
 * a handler ran during a wait.  Nothing is asked unless the socket is
 * blocking.
 */
static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
	       sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
}

static bool interrupt_reported(int fd)
{
	sigset_t blocked;
	int saved = errno;
	int flags = agile__libc.fcntl(fd, F_GETFL);
	bool report = false;

	if (flags >= 0 && !(flags & O_NONBLOCK) &&
	    pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0) {
		for (int sig = 1; sig < NSIG && !report; sig++) {
			struct sigaction action;

			if (sig == SIGKILL || sig == SIGSTOP ||
			    is_fault_signal(sig) ||
			    sigismember(&blocked, sig) == 1 ||
			    sigaction(sig, NULL, &action) != 0)
				continue;
			report = action.sa_handler != SIG_DFL &&
			         action.sa_handler != SIG_IGN &&
			         !(action.sa_flags & SA_RESTART);
		}
	}
	errno = saved;
	return report;
}

/*
 * Sleep until `planned`, stamping responses that arrive meanwhile.  A
 * signal's handler runs, and the wait then resumes (as in
 * agile__sleep_until), unless `interruptible_fd` is a socket whose send
 * the handler expects to fail with EINTR (interrupt_reported): then it
 * returns true, early.  -1: never early.
 */
static bool wait_watching_on(int64_t planned, int interruptible_fd)
{
	struct pollfd pfd[WATCH_MAX];

	for (;;) {
		int64_t now = agile__now_ns();
		struct timespec timeout;
		int n, rc, busy, error;

		if (now >= planned)
			return false;
		n = watch_prepare(pfd);
		busy = agile__busy_suspend(); /* a handler may jump out */
		if (n == 0) {
			timeout.tv_sec = planned / AGILE_NS_PER_S;
			timeout.tv_nsec = planned % AGILE_NS_PER_S;
			error = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
			                        &timeout, NULL);
			rc = error == 0 ? 0 : -1;
		} else {
			timeout.tv_sec = (planned - now) / AGILE_NS_PER_S;
			timeout.tv_nsec = (planned - now) % AGILE_NS_PER_S;
			rc = ppoll(pfd, (nfds_t)n, &timeout, NULL);
			error = rc < 0 ? errno : 0;
		}
		agile__busy_resume(busy);
		if (rc < 0 && error == EINTR) {
			if (interruptible_fd >= 0 &&
			    interrupt_reported(interruptible_fd))
				return true;
			continue;
		}
		if (rc < 0) {
			agile__sleep_until(planned);
			return false;
		}
		if (rc == 0 || n == 0)
			continue;
		now = agile__now_ns();
		for (int i = 0; i < n; i++) {
			struct agile_fd *t;
			int64_t zero = 0;

			if (!(pfd[i].revents & (POLLIN | POLLRDHUP | POLLHUP |
			                        POLLERR)) ||
			    (t = agile__fd_lookup(pfd[i].fd)) == NULL)
				continue;
			__atomic_compare_exchange_n(&t->response_ns, &zero,
			                            now, false,
			                            __ATOMIC_ACQ_REL,
			                            __ATOMIC_ACQUIRE);
		}
	}
}

/* wait_watching_on that is never cut short (the fleet's callback too). */
static void wait_watching(int64_t planned)
{
	(void)wait_watching_on(planned, -1);
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
static int64_t settle_grant(struct agile_fd *t, int64_t now,
                            bool interruptible, bool *interrupted)
{
	int64_t planned = __atomic_exchange_n(&t->grant_ns, 0,
	                                      __ATOMIC_ACQ_REL);

	if (planned > now) {
		if (wait_watching_on(planned, interruptible ? fd_of(t) : -1)) {
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
			wait_watching(slot);
			now = agile__now_ns();
		}
	}
	/* A destination with a fleet budget (fleet.h) also waits for its
	 * fleet slot, once the local grant is due. */
	if (planned != 0) {
		int64_t fleet = agile__fleet_admit(t->dest, now, wait_watching);

		if (fleet > now) {
			wait_watching(fleet);
			now = agile__now_ns();
		}
	}
	return now;
}

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
static void connect_failed(struct agile_fd *t, struct agile_state_slot *s,
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
	now = settle_grant(t, agile__now_ns(), false, NULL);
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
		connect_failed(t, slot_of(t), error, true);
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
	agile__tls_reset(&t->tls);
	__atomic_store_n(&t->tls_start_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->tls_end_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->grant_ns, agile__destinations_take(dest, s, now),
	                 __ATOMIC_RELEASE);
	store8(&t->tracked, 1);
	agile__add_u64(&s->connects, 1);
	agile__destinations_tick(dest, s, now);
	if (agile__log_enabled(AGILE_LOG_DEBUG))
		agile__log(AGILE_LOG_DEBUG, "fd %d: connect to %s, grant in "
		           "%.3f ms", fd, s->name,
		           (double)(t->grant_ns - now) / AGILE_NS_PER_MS);
	return t;
}

int agile__track_connect(int fd, const struct sockaddr *addr, socklen_t len,
                         int dest)
{
	struct agile_state_slot *s;
	struct agile_fd *t;
	int saved = errno;
	int rc, error, refused = 0;

	agile__enter();
	if (dest == AGILE_DEST_UNKNOWN)
		dest = agile__destinations_match(addr, len);
	t = agile__fd_lookup(fd);
	if ((dest >= 0 || t != NULL) && agile__in_vfork_child()) {
		/* The table is the parent's (see process.h). */
		agile__leave();
		errno = saved;
		return agile__libc.connect(fd, addr, len);
	}
	if (t != NULL && !still_tracked(t))
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
		connect_failed(t, s, error, true);
	agile__leave();
	errno = error;
	return rc;
}

int agile__track_fastopen(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved = errno;
	int dest, refused = 0;
	struct agile_fd *t = NULL;

	agile__enter();
	dest = agile__destinations_match(addr, len);
	/* A vfork child's table is its parent's (process.h). */
	if (dest >= 0 && !agile__in_vfork_child())
		t = begin_connection(fd, dest, addr, len, &refused);
	agile__leave();
	errno = saved;
	return refused < 0 ? refused : t != NULL;
}

static inline void tls_answer_held(struct agile_fd *t, int64_t now);

static size_t iov_total(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++)
		n += iov[i].iov_len;
	return n;
}

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
 * Tunnels through a proxy.  A program whose traffic goes through a proxy
 * connects to the proxy, asks it for a tunnel to the destination and then
 * speaks to the destination through it, usually TLS.  Taken as ordinary
 * requests, the proxy's handshake and then each flight of the tunnelled TLS
 * handshake took a grant of its own and gave a sample of the proxy's or
 * the handshake's round trip, and TLS's close_notify, unrecognised, was a
 * truncated request: curl through an HTTP proxy, a connection per request,
 * reached the server at 2.5/s at floor=max=10, with three sub-millisecond
 * samples and one truncation a request (through a SOCKS 5 proxy, 2.0/s and
 * four samples).  The proxy's handshake is setting up, like the TCP
 * handshake: its first message takes the connection's grant, the rest
 * ride on it, and none of its answers is a sample (AGILE_FD_TUNNEL; see
 * agile__track_after_recv).  A ClientHello sent after it starts the tunnel:
 * the TLS walker starts over, so that the handshake is followed and the
 * first request rides on the connection's grant, as on a direct
 * connection.  The tunnel is told by that ClientHello rather than by the
 * proxy's answer, which curl reads a byte at a time: a client sends one
 * only into an open tunnel.  Whatever else the client sends first after
 * the handshake (a plain protocol through the tunnel, a CONNECT again after
 * a 407) rides on the connection's grant too, and the requests after it
 * are ordinary ones.  PostgreSQL's SSLRequest, which asks the server
 * whether it speaks TLS before anything else, is such a handshake of one
 * exchange: three psql sessions over TLS gave 15 samples, and give the 6
 * of three plain ones now.
 */

/* Does a request open a tunnel: an HTTP CONNECT, or, as the connection's
 * first bytes, a SOCKS 5 greeting (version, count, that many methods), a
 * SOCKS 4 request (version, command, port, address, user id, NUL) or
 * PostgreSQL's SSLRequest (length 8, code 80877103), which libpq sends
 * first whenever it may use TLS and which the server answers with one
 * byte?  The binary forms are short, so they count only first, where a
 * protocol that happened to match would lose one sample. */
static bool opens_tunnel(const uint8_t *p, size_t n, bool first)
{
	if (n >= 8 && memcmp(p, "CONNECT ", 8) == 0)
		return true;
	if (!first || n < 3)
		return false;
	if (n == 8 && memcmp(p, "\0\0\0\x08\x04\xd2\x16\x2f", 8) == 0)
		return true;
	if (p[0] == 5)
		return p[1] >= 1 && n == 2 + (size_t)p[1];
	return p[0] == 4 && (p[1] == 1 || p[1] == 2) && n >= 9 &&
	       p[n - 1] == 0;
}

/* Is iov[0] the rest of a SOCKS 5 handshake: a username and password
 * (RFC 1929: version 1, length and name, length and password) or the
 * request (version 5, command, 0, address type and address, port)? */
static bool socks_setup(const struct iovec *iov, int count)
{
	const uint8_t *p = count > 0 && iov != NULL ? iov[0].iov_base : NULL;
	size_t n = p != NULL ? iov[0].iov_len : 0;

	if (n >= 3 && p[0] == 1 && (size_t)p[1] + 3 <= n)
		return n == (size_t)p[1] + 3 + p[2 + p[1]];
	if (n < 7 || p[0] != 5 || p[1] < 1 || p[1] > 3 || p[2] != 0)
		return false;
	return (p[3] == 1 && n == 10) || (p[3] == 4 && n == 22) ||
	       (p[3] == 3 && n == 7 + (size_t)p[4]);
}

/* The client sends again on a connection setting up a tunnel, the last
 * answer read: the request state this send goes on with.  The rest of the
 * proxy's handshake and the first message through the tunnel ride on the
 * connection's grant; a ClientHello also restarts the TLS walker. */
static uint8_t tunnel_send(struct agile_fd *t, const struct iovec *iov,
                           int count, uint8_t request)
{
	struct agile_tls fresh;
	uint8_t expected = request;
	bool hello = false;

	if (!socks_setup(iov, count)) {
		__atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_TUNNEL,
		                   __ATOMIC_ACQ_REL);
		agile__tls_reset(&fresh);
		hello = agile__tls_classify(&fresh, iov, count,
		                            iov_total(iov, count)) ==
		        AGILE_TLS_SEND_HELLO;
	}
	if (!__atomic_compare_exchange_n(&t->request, &expected,
	                                 AGILE_REQ_GRANTED, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return expected;
	if (hello)
		agile__tls_reset(&t->tls);
	/* grant_ns is 0: the handshake's first message waited for it. */
	return AGILE_REQ_GRANTED;
}

/*
 * TLS started on a plain connection: the client sends a ClientHello after
 * exchanges of the protocol's own (SMTP's, IMAP's or POP3's STARTTLS,
 * MySQL's SSL request, LDAP's StartTLS, or TLS through a tunnel the
 * preload did not recognise).  The walker decided at the connection's
 * first bytes that it was not TLS, and counted the TLS that followed byte
 * by byte: the ClientHello a request whose answer, the server's handshake
 * flight, was a sample, and the client's Finished another request with a
 * grant of its own (smtplib, STARTTLS and 10 NOOPs: 15 samples and 15
 * grants a session with TLS 1.3, 16 and 16 with TLS 1.2, for 14 commands).
 * The walker starts afresh at the ClientHello, before it is sent, so the
 * server's answer cannot be read by another thread first: from there the
 * connection is followed as one that began with it.  The ClientHello takes
 * a grant as the next request would (none under pace=connect), or joins
 * the request in flight (MySQL's SSL request is not answered); the
 * handshake's answer ends that request without a sample; the first
 * request inside TLS rides on its grant (tests/preload/starttls.sh: 14
 * and 14).  The plain exchanges before it stay ordinary requests: that
 * STARTTLS was setting up is known only once the ClientHello comes, after
 * its answer was sampled.  Bytes of another protocol that only look like
 * a ClientHello (0x16, 3, a version up to 4, a length, 1, and a 3-byte
 * length 4 short of the first) are still counted as the request they are:
 * the walker gives up at the server's answer, which is no TLS record, and
 * that answer is the request's sample, as on any plain connection.
 */
static void start_tls(struct agile_fd *t)
{
	agile__tls_reset(&t->tls);
}

int64_t agile__track_before_send(struct agile_fd *t, const struct iovec *iov,
                                 int count)
{
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
	if (request != AGILE_REQ_IN_FLIGHT && !still_tracked(t))
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
		request = tunnel_send(t, iov, count, request);
	else if (agile__tls_stage(&t->tls) == AGILE_TLS_OFF &&
	         agile__tls_starts_hello(iov, count))
		start_tls(t);
	if (!may_start_request(t, iov, count))
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
		now = settle_grant(t, now, true, &interrupted);
		break;
	}
	case AGILE_REQ_GRANTED:
		now = settle_grant(t, now, true, &interrupted);
		break;
	default:
		break;
	}
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
	return now;
}

void agile__track_after_send(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count)
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
	if (result < 0) {
		if (is_unreachable(error) &&
		    load8(&t->phase) == AGILE_FD_CONNECTING) {
			agile__enter();
			connect_failed(t, slot_of(t), error, false);
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
	request = load8(&t->request);
	if (request != AGILE_REQ_IN_FLIGHT) {
		const struct agile_resilience_config *c =
			&agile__destinations_rule(t->dest)->resilience;

		/* A goodbye starts no request, so its close or its +OK
		 * records nothing. */
		if (plain && is_goodbye(t, iov, count))
			return;
		/* A proxy's handshake starts (opens_tunnel). */
		if (plain && opens_tunnel(data, data_len < (size_t)result
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
		watch_add(fd_of(t));
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

	if (agile__destinations_rule(t->dest)->resilience.proto ==
	    AGILE_PROTO_HTTP)
		verdict = agile__http_response(t, s, data, len, now,
		                               agile__unix_ns());
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
	}
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
	     load8(&t->phase) == AGILE_FD_CONNECTING) && !still_tracked(t))
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

void agile__track_after_recv(struct agile_fd *t, ssize_t result, int error,
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
		agile__inbound_after_recv(t, result, data, data_len);
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
	/* This read may end a request (its own or its duplicate's) or
	 * classify a connect. */
	r = request_owner(t);
	if ((load8(&r->request) == AGILE_REQ_IN_FLIGHT ||
	     load8(&t->phase) == AGILE_FD_CONNECTING) && !still_tracked(t)) {
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
		connect_failed(t, s, error, false);
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
		watch_add(fd_of(r));
	} else if (result > 0 && load8(&t->http2) &&
	           load8(&r->request) == AGILE_REQ_IN_FLIGHT &&
	           data_len >= (size_t)result &&
	           agile__h2_no_response(data, (size_t)result)) {
		/* The server's SETTINGS (nghttpd sends it at once), a PING
		 * or a WINDOW_UPDATE answers no request: the request stays
		 * in flight, as after an interim response (http2.c). */
		__atomic_store_n(&r->response_ns, 0, __ATOMIC_RELEASE);
		store8(&t->phase, AGILE_FD_CONNECTED);
		watch_add(fd_of(r));
	} else if ((start = claim_request(r)) != 0) {
		now = agile__now_ns();
		seen = __atomic_exchange_n(&r->response_ns, 0, __ATOMIC_ACQ_REL);
		if (seen != 0 && seen >= start && seen < now)
			now = seen;
		if (result > 0) {
			store8(&t->phase, AGILE_FD_CONNECTED);
			/* A proxy's answer in its handshake is setting
			 * up, as the TCP handshake is: no sample
			 * (opens_tunnel). */
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

void agile__track_fdopen(struct agile_fd *t)
{
	int saved = errno;
	struct agile_state_slot *s;
	int64_t now;

	if (!still_tracked(t))
		return;
	agile__enter();
	/* From now on stdio may close the socket where no hook sees it (by
	 * freopen; fclose is hooked): the inode is recorded before the mark
	 * that makes still_tracked compare it. */
	__atomic_store_n(&t->stdio_inode, socket_inode(fd_of(t)),
	                 __ATOMIC_RELAXED);
	__atomic_fetch_or(&t->flags, AGILE_FD_STDIO, __ATOMIC_RELEASE);
	s = slot_of(t);
	now = settle_grant(t, agile__now_ns(), false, NULL);
	agile__destinations_tick(t->dest, s, now);
	agile__leave();
	errno = saved;
}

void agile__track_so_error(struct agile_fd *t, int so_error)
{
	if (so_error == 0 || load8(&t->phase) != AGILE_FD_CONNECTING)
		return;
	agile__enter();
	connect_failed(t, slot_of(t), so_error, false);
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
	now = settle_grant(t, agile__now_ns(), false, NULL);
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
