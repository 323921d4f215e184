/*
 * track.h - what happens on a matched socket: pacing, round-trip samples
 * and classification.  The hooks call these around the real libc call;
 * each keeps errno as the hook found it (or as the real call left it).
 *
 * Per socket (struct agile_fd):
 *   connect()      takes a grant (pace=request and pace=connect alike) and
 *                  does not wait: the wait happens at the first send, so an
 *                  event loop driving many sockets spaces its requests
 *                  instead of stalling in connect() and sending in bunches.
 *                  A second connect() on a socket whose connect is under
 *                  way (APR asks for a non-blocking connect's result that
 *                  way) is not paced again; its result is classified.
 *   first send     waits until the grant's planned time, then sends; the
 *                  request starts when the send returns success, timed
 *                  from just before the real call (never from the wait).
 *   first read     returning data after that ends the request: one sample.
 *                  A read of nothing but whole HTTP/1.x interim responses
 *                  ("100 Continue" before an upload's body) ends none.
 *                  An event loop that sleeps in one socket's send (waiting
 *                  for its grant) cannot read another socket's response
 *                  meanwhile; so that this stall is never measured as round
 *                  trip, the wait polls the thread's sockets with a request
 *                  in flight and stamps a response when it becomes readable.
 *   next send      (pace=request) takes a new grant and waits for it.
 *   failure        ECONNREFUSED, ENETUNREACH, EHOSTUNREACH from connect,
 *                  getsockopt(SO_ERROR) or the first send/recv: unreachable,
 *                  once per connection.  The grant is waited for before the
 *                  failure is returned, so a retry loop against a refused
 *                  port is paced like any other caller.
 *   reuse          a socket closed where no hook saw it would leave its
 *                  entry behind for a file, pipe or socket that reuses the
 *                  number.  Every close is hooked (close, close_range,
 *                  closefrom, dup2/dup3, fclose, and those numbers through
 *                  syscall()) except stdio's own inside libc: a socket
 *                  handed to fdopen() has its inode recorded and compared
 *                  with the fd's before a request is paced, started or
 *                  ended, and a stale entry is forgotten (fdtable.h).
 *   TLS            a connection that starts with a ClientHello is followed
 *                  by its record headers (tls.h): the ClientHello is the
 *                  first send above, the handshake's answer ends it without
 *                  a sample, and the first application request rides on
 *                  the connect's grant (AGILE_REQ_FREE); handshake records,
 *                  alerts and close_notify neither wait nor start a request;
 *                  a request's answer is an application-data record (for a
 *                  TLS 1.3 connection's first request, by the ticket rule
 *                  in request.c).  Where tls.h gives up, the rules above.
 *   close/shutdown with a request outstanding: truncated(elapsed).  EOF or
 *                  ECONNRESET on a read with a request outstanding is the
 *                  same.  EINTR and EAGAIN record nothing.
 */
#ifndef AGILE_PRELOAD_TRACK_H
#define AGILE_PRELOAD_TRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdtable.h"

/* The whole connect() hook: match, pace, call libc, classify.  `dest` is
 * the rule `addr` matches (-1: none) when the caller knows it, from this
 * thread's match cache, or AGILE_DEST_UNKNOWN. */
#define AGILE_DEST_UNKNOWN (-2)
int agile__track_connect(int fd, const struct sockaddr *addr, socklen_t len,
                         int dest);
/* sendto() or sendmsg() with MSG_FASTOPEN and an address on an untracked
 * socket is TCP Fast Open's connect and first send in one call: when the
 * address matches, the socket is tracked as connect() would track it, with
 * the connection's grant, and the call goes on as its first send (waiting
 * for that grant).  connect_timeout= and retry= do not wrap it.  Returns 1
 * when tracked, 0 to pass the call through, or -errno when the resilience
 * settings refuse the connection (the call then fails with it). */
int agile__track_fastopen(int fd, const struct sockaddr *addr, socklen_t len);

/*
 * A signal handler that runs while its thread is inside a tracked call (a
 * send's wait for its grant, a receive, a connect) and itself connects or
 * sends on a paced socket is not paced (issue 16, item 5;
 * tests/preload/handler_send.sh; agilepreload(7)).  Paced, it waited for
 * a grant of its own inside the handler, where the next signal found it
 * and ran the handler again: with a SIGALRM every 150 ms at floor=max=4
 * the handlers nested without end, each taking a grant further ahead,
 * and the 12 requests of the thread they interrupted never finished.
 * Whatever a handler does, the thread it interrupted waits for, so the
 * handler's connection is not tracked (no grant, no count, no sample).
 *
 * agile__hook_frame is the frame of the tracked call the thread is in (0:
 * none).  Hooks never call hooks (the preload calls libc directly), so a
 * hook that runs deeper on the same stack is a signal handler's: at least
 * a signal frame deeper, which is larger than AGILE_HANDLER_GAP on every
 * ABI.  A handler on a sigaltstack above the thread's stack is not seen,
 * and is paced.  A handler that jumps out of a tracked call (siglongjmp)
 * leaves the frame set; the next tracked call from no deeper a frame
 * (the program's loop calling again from where it called before) takes
 * its place.
 */
#define AGILE_HANDLER_GAP 512
extern __thread uintptr_t agile__hook_frame
	__attribute__((tls_model("initial-exec")));

/* Is a tracked call whose frame is `here` a signal handler's (above)? */
static inline bool agile__track_in_handler(uintptr_t here)
{
	uintptr_t outer = agile__hook_frame;

	return outer != 0 && here + AGILE_HANDLER_GAP < outer;
}

/* A tracked call at `here` begins; it is not a handler's. */
static inline void agile__track_hook_enter(uintptr_t here)
{
	agile__hook_frame = here;
}

/* It ended. */
static inline void agile__track_hook_leave(void)
{
	agile__hook_frame = 0;
}

/* Before a send/write on a tracked fd of the bytes in iov[0..count) (NULL
 * when they are not in memory): wait for a grant when one is due.  Returns
 * the time the real call starts; AGILE_SEND_PASS when the fd turned out
 * not to be the tracked socket any more (closed where no hook saw it, its
 * number reused): the entry is forgotten and the hook passes the call
 * through; AGILE_SEND_CLOSED when another thread closed the socket while
 * this one waited for its grant: the hook fails with EBADF rather than send
 * to whatever holds the number now; AGILE_SEND_INTERRUPTED when a signal
 * handler installed without SA_RESTART ran during the wait on a blocking
 * socket: the hook fails with EINTR, nothing sent, and the grant is kept
 * for the send the program retries (wait.c, interrupt_reported). */
#define AGILE_SEND_PASS (-1)
#define AGILE_SEND_CLOSED (-2)
#define AGILE_SEND_INTERRUPTED (-3)
/* *limit, SIZE_MAX on entry, may come back smaller: make the call with
 * that many bytes only and return its short count, as a stream socket may.
 * On an HTTP/2 connection (h2conn.h) a send carrying the HEADERS of several
 * new streams goes up to the second one's frame, after the first one's
 * grant, and the program's next send waits for the next grant, so that
 * the requests are spaced rather than let out in a bunch.  A send of more
 * than AGILE_SEND_CUT_IOV_MAX iovecs is never cut: it waits for one grant
 * a stream instead. */
#define AGILE_SEND_CUT_IOV_MAX 64
int64_t agile__track_before_send(struct agile_fd *t, const struct iovec *iov,
                                 int count, size_t *limit);
/* After it: `result` is its return value (> 0 means that many of the bytes
 * went out) and `error` its errno when it failed.  The TLS walker reads
 * the bytes sent, proto=http the request line in the first buffer. */
void agile__track_after_send(struct agile_fd *t, ssize_t result, int error,
                             int64_t start_ns, const struct iovec *iov,
                             int count);
/* After a recv/read into iov[0..count): `result` > 0 is data, 0 is end of
 * file (only when `asked` > 0), < 0 failed with `error`.  `peek`: MSG_PEEK
 * left the bytes to be read again.  proto=http reads the status line from
 * the first buffer. */
void agile__track_after_recv(struct agile_fd *t, ssize_t result, int error,
                             size_t asked, const struct iovec *iov, int count,
                             bool peek);
/*
 * The same three for the plaintext a TLS library hands over
 * (preload/hooks/tls_plain.h): `iov` holds what the program writes before
 * encryption or reads after decryption, with the same results and errors
 * as a send or receive on the socket.  The first of them on a connection
 * stops its record walker (tls.h) for good, and from then on the socket's
 * own sends and receives, the library's ciphertext, pass the calls above
 * untracked: one source of truth per connection.
 */
int64_t agile__track_plain_before_send(struct agile_fd *t,
                                       const struct iovec *iov, int count,
                                       size_t *limit);
void agile__track_plain_after_send(struct agile_fd *t, ssize_t result,
                                   int error, int64_t start_ns,
                                   const struct iovec *iov, int count);
void agile__track_plain_after_recv(struct agile_fd *t, ssize_t result,
                                   int error, size_t asked,
                                   const struct iovec *iov, int count,
                                   bool peek);
/* fdopen() wrapped the socket in a stdio stream, whose reads and writes run
 * inside libc where no hook sees them: its grant is waited for now, so the
 * connection is paced even though its requests cannot be.  The entry is
 * marked AGILE_FD_STDIO, since stdio may also close it unseen. */
void agile__track_fdopen(struct agile_fd *t);
/* After getsockopt(SO_ERROR) succeeded and reported `so_error`. */
void agile__track_so_error(struct agile_fd *t, int so_error);
/* shutdown(how) is about to run on a tracked fd. */
void agile__track_shutdown(struct agile_fd *t, int how);
/* The request on `t` gives back its place under inflight=, if it holds
 * one (preload/track/inflight.c): every path that forgets an entry. */
void agile__inflight_release(struct agile_fd *t);
/* close(fd) is about to run (or fd is being replaced by dup2/dup3). */
void agile__track_close(int fd, struct agile_fd *t);
/* newfd now refers to oldfd's socket (dup, dup2, dup3, F_DUPFD*). */
void agile__track_dup(int oldfd, int newfd);

#endif /* AGILE_PRELOAD_TRACK_H */
