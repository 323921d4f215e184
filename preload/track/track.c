/*
 * track.c - the entry points of a matched socket's bytes (the state machine
 * is described in track.h): the socket's own sends and receives, or the TLS
 * library's plaintext once it hands it over, passed to the send path
 * (send.c) and the receive path (recv.c); whether an entry is still its
 * socket's; the wait for a socket's grant; fdopen() and SO_ERROR.  The
 * request lifecycle is in request.c, the end of a socket (shutdown, close,
 * dup) in close.c, the connect lifecycle in connect.c, the wait in wait.c,
 * tunnels and STARTTLS in tunnel.c (track_internal.h).
 *
 * Concurrency: the fields that pass a value from one call to another (the
 * grant's planned time, the request's start) are claimed with an atomic
 * exchange, so with a reader and a writer thread on one socket each grant
 * is waited for once and each request yields at most one sample.  No lock is
 * taken in preload/track/ at all, so none is held while a caller waits.
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "clock.h"
#include "destinations.h"
#include "fleet.h"
#include "internal.h"
#include "log.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "tls_plain.h"
#include "track.h"
#include "track_internal.h"

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

		if (agile__track_wait_grant(t, &planned, now, fd)) {
			int64_t none = 0;

			/* Not over a grant another thread planned on the
			 * socket meanwhile.  The wait moved it by the rises
			 * so far: the spacing now is the one it is at. */
			__atomic_store_n(&t->grant_interval_ns,
			                 agile_bucket_interval_ns(
			                         &slot_of(t)->limiter.bucket),
			                 __ATOMIC_RELAXED);
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
	return agile__track_send_before(t, iov, count, limit);
}

void agile__track_after_send(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count)
{
	if (load8(&t->tls_plain)) {
		errno = error;
		return;
	}
	agile__track_send_after(t, result, error, start_ns, iov, count);
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
	agile__track_recv_after(t, result, error, asked, iov, count, peek);
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
	agile__tls_stop(&t->tls);
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
	return agile__track_send_before(t, iov, count, limit);
}

void agile__track_plain_after_send(struct agile_fd *t, ssize_t result,
                                   int error, int64_t start_ns,
                                   const struct iovec *iov, int count)
{
	agile__track_send_after(t, result, error, start_ns, iov, count);
}

void agile__track_plain_after_recv(struct agile_fd *t, ssize_t result,
                                   int error, size_t asked,
                                   const struct iovec *iov, int count,
                                   bool peek)
{
	if (!load8(&t->tls_plain))
		plaintext_starts(t);
	agile__track_recv_after(t, result, error, asked, iov, count, peek);
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
