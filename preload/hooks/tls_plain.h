/*
 * tls_plain.h - what the TLS libraries' plaintext hooks share (openssl.c,
 * gnutls.c): finding the library's real function, and the send and
 * receive halves around it.
 *
 * Why these hooks are hand-written: the preload must sit between the
 * program and its TLS library, in the same process, before encryption;
 * no library offers that position (a TLS library's own callbacks, such as
 * OpenSSL's message callback, belong to the program, which may set its own).
 *
 * A TLS library's real functions are looked up on first use, never at start:
 * a process that loads no TLS library never calls these hooks and pays
 * nothing.  The library may be one the program opened with dlopen() after
 * start without RTLD_GLOBAL, as Python's _ssl module loads libssl: such a
 * library is not in the scope dlsym(RTLD_NEXT) searches, so it is found
 * among the loaded objects by name (agile__tls_real).
 *
 * Rules, the same for every library:
 *   - The descriptor is the library's (SSL_get_fd, gnutls_transport_get_int).
 *     A session with no descriptor (memory BIOs, custom transports), or
 *     one on a socket no destination matches, passes straight through and
 *     keeps the record-level following of tls.h.
 *   - The first plaintext on a connection switches it over for good
 *     (track.h, agile__track_plain_before_send): from then on its
 *     ciphertext sends and receives pass through, so nothing is paced or
 *     counted twice, whatever the library writes on its own (a KeyUpdate,
 *     close_notify in SSL_shutdown or gnutls_bye, tickets read in
 *     SSL_read).  So SSL_shutdown, SSL_free, gnutls_bye and gnutls_deinit
 *     need no hook of their own, and none is defined: the fewer names of a
 *     TLS library the preload defines, the less a program that probes for
 *     the library with dlsym() can be misled.
 *   - The wait for a grant happens in the write, before encryption, with
 *     the plain send's rules but one: a signal handler that runs during it
 *     resumes the wait, as SA_RESTART would.  A write that failed with
 *     EINTR could not be reported the way the library reports its own
 *     (OpenSSL's SSL_get_error reads the session's state, which only the
 *     library sets), and a caller told of an error it cannot read drops
 *     the connection.  A non-blocking caller waits too, as on a plain
 *     non-blocking socket: a write returned with nothing done is only
 *     possible as an error of the library's, and "would block"
 *     (SSL_ERROR_WANT_WRITE, GNUTLS_E_AGAIN) cannot be signalled from
 *     outside either (docs/tls.md).
 *   - A real function that cannot be found: the call fails as the
 *     library's own call fails (each hook says how), with one warning.
 */
#ifndef AGILE_PRELOAD_TLS_PLAIN_H
#define AGILE_PRELOAD_TLS_PLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdtable.h"

/* The definition of `name` the program would have reached without the
 * preload, in the loaded library whose file name contains `library` (e.g.
 * "libssl.so"), or NULL.  The caller caches it. */
void *agile__tls_real(const char *name, const char *library);

/* Warn once per name that `name` could not be found. */
void agile__tls_missing(const char *name);

/* The tracked entry of the session's descriptor, or NULL to pass through
 * (no descriptor, not a matched socket, a listener's connection, the
 * preload's own code). */
struct agile_fd *agile__tls_entry(int fd);

/*
 * Sessions whose library hides the descriptor: curl (7.87 and later)
 * gives OpenSSL a BIO of its own, so SSL_get_fd answers -1, and the
 * ciphertext goes out through curl's send() on the socket.  The socket is
 * learnt from those calls instead: while a hook runs the library's call
 * for a session (the handshake's SSL_connect or SSL_do_handshake, or a
 * read or write not yet mapped), agile__tls_current names it, and the
 * first tracked send or receive of the thread (track.c) maps the session
 * to its descriptor, in a lock-free table of AGILE_TLS_SESSIONS
 * (src/common/tls_sessions.h: a slot whose descriptor is no longer
 * tracked is taken again; a session starting a new handshake is
 * forgotten first).  A session not found passes through, record-level.
 */
extern __thread const void *agile__tls_current
	__attribute__((tls_model("initial-exec")));
/* Evaluate `call`, a call of the library's for `session` that passes
 * through, with the session named for learning its descriptor. */
#define AGILE_TLS_LEARNING(session, call) __extension__ ({ \
	const void *outer_ = agile__tls_current; \
	__typeof__(call) result_; \
	agile__tls_current = (session); \
	result_ = (call); \
	agile__tls_current = outer_; \
	result_; \
})
/* Map the session in agile__tls_current to `fd` (called by track.c). */
void agile__tls_learn(int fd);
/* The descriptor mapped to `session`, or -1. */
int agile__tls_session_fd(const void *session);
/* Forget `session`'s mapping (a new handshake starts on it). */
void agile__tls_session_forget(const void *session);

/* A plaintext write under way. */
struct agile_plain_send {
	struct agile_fd *t;
	struct iovec iov;
	size_t limit;  /* write at most this many bytes (SIZE_MAX: all) */
	int64_t start; /* the request's start, or AGILE_SEND_PASS */
};

/* Before the library's write of buf[0, len) on the entry `t`: waits for a
 * grant when one is due.  Returns 0 to go on with the write (of at most
 * s->limit bytes), 1 to pass it through untracked (a signal handler's
 * write), or -EBADF when another thread closed the socket during the wait
 * (the hook fails the call as the library fails a write on a closed
 * descriptor).  `here` is the hook's frame. */
int agile__plain_send_begin(struct agile_plain_send *s, struct agile_fd *t,
                            const void *buf, size_t len, uintptr_t here);
/* After it: `written` bytes (> 0) went, or none (≤ 0) with `error`. */
void agile__plain_send_end(struct agile_plain_send *s, ssize_t written,
                           int error);

/* Before the library's read on `t`: false when a signal handler's, to
 * pass through untracked. */
bool agile__plain_recv_begin(struct agile_fd *t, uintptr_t here);
/* After it: `result` > 0 bytes of plaintext in buf, 0 the end of the
 * connection (close_notify, or the peer gone), -1 failed with `error`
 * (ECONNRESET and the like), or AGILE_PLAIN_NOTHING: nothing to record
 * (would block, interrupted, a renegotiation).  `peek`: the bytes are left
 * for the next read. */
#define AGILE_PLAIN_NOTHING (-2)
void agile__plain_recv_end(struct agile_fd *t, const void *buf, size_t asked,
                           ssize_t result, int error, bool peek);

#endif /* AGILE_PRELOAD_TLS_PLAIN_H */
