/*
 * openssl.c - OpenSSL's plaintext calls (libssl 3 and 1.1): SSL_write,
 * SSL_write_ex, SSL_read, SSL_read_ex, SSL_peek, SSL_peek_ex, and the
 * handshake's SSL_connect and SSL_do_handshake to learn a socket that
 * SSL_get_fd does not tell (tls_plain.h).  Why they are
 * hand-written, and the rules they share with GnuTLS's, are in tls_plain.h.
 *
 * The preload's definitions are unversioned (preload.map), and the dynamic
 * linker binds a versioned reference such as libcurl's
 * SSL_write@OPENSSL_3.0.0 to an unversioned definition ahead of libssl's
 * (tests/preload/tls_plain_curl.sh checks that curl lands here).  dlsym
 * finds the default version of the real function, the one a program built
 * against that libssl calls.
 *
 * An SSL object's descriptor is SSL_get_fd's, looked up on every call
 * rather than kept (SSL_get_fd is a few loads), or the one learnt from its
 * handshake.  A session on memory BIOs has none: passed through.  A
 * mapping outlives SSL_free, since the table's slot is taken again once
 * its socket is closed, and SSL_free needs no hook.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols.h"
#include "tls_plain.h"

struct ssl_st;
typedef struct ssl_st SSL;

/* SSL_get_error's answers that end or fail a connection (ssl.h). */
#define SSL_ERROR_SSL 1
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6

#define LIBSSL "/libssl.so"

/* The interposed functions as ssl.h declares them (the preload builds
 * without OpenSSL's headers). */
int SSL_write(SSL *ssl, const void *buf, int num);
int SSL_write_ex(SSL *ssl, const void *buf, size_t num, size_t *written);
int SSL_read(SSL *ssl, void *buf, int num);
int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes);
int SSL_peek(SSL *ssl, void *buf, int num);
int SSL_peek_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes);
int SSL_connect(SSL *ssl);
int SSL_do_handshake(SSL *ssl);

static struct {
	int (*write)(SSL *, const void *, int);
	int (*write_ex)(SSL *, const void *, size_t, size_t *);
	int (*read)(SSL *, void *, int);
	int (*read_ex)(SSL *, void *, size_t, size_t *);
	int (*peek)(SSL *, void *, int);
	int (*peek_ex)(SSL *, void *, size_t, size_t *);
	int (*connect)(SSL *);
	int (*do_handshake)(SSL *);
	int (*get_fd)(const SSL *);
	int (*get_error)(const SSL *, int);
} real;

/* Load real.field, looking it up the first time (threads racing store
 * the same address). */
#define REAL(field, name) \
	(__atomic_load_n(&real.field, __ATOMIC_ACQUIRE) != NULL \
	 ? real.field \
	 : (__typeof__(real.field))resolve((void **)&real.field, name))

static void *resolve(void **slot, const char *name)
{
	void *found = agile__tls_real(name, LIBSSL);

	if (found != NULL)
		__atomic_store_n(slot, found, __ATOMIC_RELEASE);
	return found;
}

/* The tracked entry of the session's socket, or NULL: SSL_get_fd's, or,
 * behind a BIO of the program's own, the one learnt (tls_plain.h). */
static struct agile_fd *entry_of(const SSL *ssl)
{
	int (*get_fd)(const SSL *) = REAL(get_fd, "SSL_get_fd");
	int fd;

	if (ssl == NULL || get_fd == NULL || agile__busy)
		return NULL;
	fd = get_fd(ssl);
	if (fd < 0)
		fd = agile__tls_session_fd(ssl);
	return agile__tls_entry(fd);
}

/* What a read's result says happened (tls_plain.h): `ret` is the real
 * call's return, as SSL_read's (> 0 bytes, else SSL_get_error's case). */
static ssize_t read_outcome(const SSL *ssl, int ret, int error)
{
	int (*get_error)(const SSL *, int) = REAL(get_error, "SSL_get_error");

	if (ret > 0)
		return ret;
	switch (get_error != NULL ? get_error(ssl, ret) : -1) {
	case SSL_ERROR_ZERO_RETURN: /* close_notify */
		return 0;
	case SSL_ERROR_SYSCALL:     /* the socket failed, or the peer left */
		return error != 0 ? -1 : 0;
	case SSL_ERROR_SSL:         /* unexpected EOF (OpenSSL 3), a fatal
	                               alert: the connection is over */
		return 0;
	default:                    /* want read or write, and the like */
		return AGILE_PLAIN_NOTHING;
	}
}

/* A write of `len` bytes through `call`, an expression of `n_` (the
 * bytes to write: fewer when the tracking cuts the write, track.h)
 * evaluating to the bytes written (> 0) or ≤ 0, whose hook returns `ret`
 * (an expression of w_, that result).  `failed` is the call's failing
 * return. */
#define PLAIN_WRITE(ssl, buf, len, call, ret, failed) do { \
	struct agile_plain_send s_; \
	struct agile_fd *t_ = entry_of(ssl); \
	size_t n_ = (len); \
	ssize_t w_; \
	int begun_; \
	if (t_ == NULL) { \
		w_ = AGILE_TLS_LEARNING(ssl, call); \
		return (ret); \
	} \
	begun_ = agile__plain_send_begin( \
		&s_, t_, (buf), n_, (uintptr_t)__builtin_frame_address(0)); \
	if (begun_ == 1) { \
		w_ = (call); \
		return (ret); \
	} \
	if (begun_ < 0) { \
		errno = -begun_; \
		return (failed); \
	} \
	if (s_.limit < n_) \
		n_ = s_.limit; \
	w_ = (call); \
	agile__plain_send_end(&s_, w_, errno); \
	return (ret); \
} while (0)

static int ssl_write(SSL *ssl, const void *buf, int num)
{
	int (*next)(SSL *, const void *, int) = REAL(write, "SSL_write");

	if (next == NULL) {
		agile__tls_missing("SSL_write");
		return -1;
	}
	if (num <= 0)
		return next(ssl, buf, num);
	PLAIN_WRITE(ssl, buf, (size_t)num, next(ssl, buf, (int)n_), (int)w_,
	            -1);
}

/* SSL_write_ex as a count: the bytes written, or 0 when it failed. */
static ssize_t write_ex_count(int (*next)(SSL *, const void *, size_t,
                                          size_t *),
                              SSL *ssl, const void *buf, size_t num,
                              size_t *written)
{
	size_t done = 0;
	int ok = next(ssl, buf, num, &done);

	if (written != NULL)
		*written = ok == 1 ? done : 0;
	return ok == 1 ? (ssize_t)done : 0;
}

static int ssl_write_ex(SSL *ssl, const void *buf, size_t num,
                        size_t *written)
{
	int (*next)(SSL *, const void *, size_t, size_t *) =
		REAL(write_ex, "SSL_write_ex");

	if (next == NULL) {
		agile__tls_missing("SSL_write_ex");
		return 0;
	}
	if (num == 0)
		return next(ssl, buf, num, written);
	PLAIN_WRITE(ssl, buf, num,
	            write_ex_count(next, ssl, buf, n_, written), w_ > 0, 0);
}

/* A read through `call`, evaluating to SSL_read's kind of result, whose
 * hook returns `ret` (an expression of r_, the result). */
#define PLAIN_READ(ssl, buf, num, peek, call, ret) do { \
	struct agile_fd *t_ = entry_of(ssl); \
	int r_; \
	int error_; \
	if (t_ == NULL) { \
		r_ = AGILE_TLS_LEARNING(ssl, call); \
		return (ret); \
	} \
	if (!agile__plain_recv_begin(t_, \
	                             (uintptr_t)__builtin_frame_address(0))) { \
		r_ = (call); \
		return (ret); \
	} \
	r_ = (call); \
	error_ = errno; \
	agile__plain_recv_end(t_, (buf), (num), \
	                      read_outcome(ssl, r_, error_), error_, (peek)); \
	return (ret); \
} while (0)

static int ssl_read(SSL *ssl, void *buf, int num)
{
	int (*next)(SSL *, void *, int) = REAL(read, "SSL_read");

	if (next == NULL) {
		agile__tls_missing("SSL_read");
		return -1;
	}
	if (num <= 0)
		return next(ssl, buf, num);
	PLAIN_READ(ssl, buf, (size_t)num, false, next(ssl, buf, num), r_);
}

static int ssl_peek(SSL *ssl, void *buf, int num)
{
	int (*next)(SSL *, void *, int) = REAL(peek, "SSL_peek");

	if (next == NULL) {
		agile__tls_missing("SSL_peek");
		return -1;
	}
	if (num <= 0)
		return next(ssl, buf, num);
	PLAIN_READ(ssl, buf, (size_t)num, true, next(ssl, buf, num), r_);
}

/* SSL_read_ex and SSL_peek_ex as SSL_read's kind of result: the bytes
 * read, or what SSL_get_error is to be asked about (0). */
static int read_ex_count(int (*next)(SSL *, void *, size_t, size_t *),
                         SSL *ssl, void *buf, size_t num, size_t *readbytes,
                         int *ok)
{
	size_t done = 0;

	*ok = next(ssl, buf, num, &done);
	if (readbytes != NULL)
		*readbytes = *ok == 1 ? done : 0;
	/* A read is at most one record, 16 KiB of plaintext, well within
	 * an int. */
	return *ok == 1 && done > 0 ? (int)(done < INT32_MAX ? done
	                                                     : INT32_MAX)
	                            : 0;
}

static int ssl_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes)
{
	int (*next)(SSL *, void *, size_t, size_t *) =
		REAL(read_ex, "SSL_read_ex");
	int ok = 0;

	if (next == NULL) {
		agile__tls_missing("SSL_read_ex");
		return 0;
	}
	if (num == 0)
		return next(ssl, buf, num, readbytes);
	PLAIN_READ(ssl, buf, num, false,
	           read_ex_count(next, ssl, buf, num, readbytes, &ok), ok);
}

static int ssl_peek_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes)
{
	int (*next)(SSL *, void *, size_t, size_t *) =
		REAL(peek_ex, "SSL_peek_ex");
	int ok = 0;

	if (next == NULL) {
		agile__tls_missing("SSL_peek_ex");
		return 0;
	}
	if (num == 0)
		return next(ssl, buf, num, readbytes);
	PLAIN_READ(ssl, buf, num, true,
	           read_ex_count(next, ssl, buf, num, readbytes, &ok), ok);
}

/*
 * The handshake: passed through, with the session named so that its first
 * tracked send (the ClientHello) maps it to its socket when SSL_get_fd
 * cannot (tls_plain.h).  A mapping left from the session's last
 * connection is dropped first: SSL_clear and a new BIO may have moved it.
 */
static int handshake(SSL *ssl, int (*next)(SSL *), const char *name)
{
	int (*get_fd)(const SSL *) = REAL(get_fd, "SSL_get_fd");

	if (next == NULL) {
		agile__tls_missing(name);
		return -1;
	}
	if (ssl == NULL || get_fd == NULL || get_fd(ssl) >= 0)
		return next(ssl);
	agile__tls_session_forget(ssl);
	return AGILE_TLS_LEARNING(ssl, next(ssl));
}

AGILE_EXPORT int SSL_connect(SSL *ssl)
{
	return handshake(ssl, REAL(connect, "SSL_connect"), "SSL_connect");
}

AGILE_EXPORT int SSL_do_handshake(SSL *ssl)
{
	return handshake(ssl, REAL(do_handshake, "SSL_do_handshake"),
	                 "SSL_do_handshake");
}

AGILE_EXPORT int SSL_write(SSL *ssl, const void *buf, int num)
{
	return ssl_write(ssl, buf, num);
}

AGILE_EXPORT int SSL_write_ex(SSL *ssl, const void *buf, size_t num,
                              size_t *written)
{
	return ssl_write_ex(ssl, buf, num, written);
}

AGILE_EXPORT int SSL_read(SSL *ssl, void *buf, int num)
{
	return ssl_read(ssl, buf, num);
}

AGILE_EXPORT int SSL_read_ex(SSL *ssl, void *buf, size_t num,
                             size_t *readbytes)
{
	return ssl_read_ex(ssl, buf, num, readbytes);
}

AGILE_EXPORT int SSL_peek(SSL *ssl, void *buf, int num)
{
	return ssl_peek(ssl, buf, num);
}

AGILE_EXPORT int SSL_peek_ex(SSL *ssl, void *buf, size_t num,
                             size_t *readbytes)
{
	return ssl_peek_ex(ssl, buf, num, readbytes);
}
