/*
 * gnutls.c - GnuTLS's plaintext calls: gnutls_record_send and
 * gnutls_record_recv, the descriptor from gnutls_transport_get_int or
 * learnt in gnutls_handshake.  Why
 * they are hand-written, and the rules they share with OpenSSL's, are in
 * tls_plain.h.
 *
 * gnutls_transport_get_int gives the descriptor a program handed over with
 * gnutls_transport_set_int, or with gnutls_transport_set_ptr as an integer
 * cast to a pointer (wget does).  A session on a transport of the
 * program's own (push and pull functions and a pointer to its own object,
 * as libcurl-gnutls has, which git uses) gives a number that names no
 * matched socket, almost always: its socket is learnt from its handshake
 * instead (gnutls_handshake, tls_plain.h).  A pointer whose low bits
 * happen to name a matched socket would be counted on it, which is the
 * limit of what the library lets a caller ask.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols.h"
#include "tls_plain.h"

struct gnutls_session_int;
typedef struct gnutls_session_int *gnutls_session_t;

/* gnutls.h's error codes that the hooks return or read. */
#define GNUTLS_E_PULL_ERROR (-54)
#define GNUTLS_E_PUSH_ERROR (-53)
#define GNUTLS_E_INTERNAL_ERROR (-59)
#define GNUTLS_E_PREMATURE_TERMINATION (-110)

#define LIBGNUTLS "/libgnutls.so"

/* The interposed functions as gnutls.h declares them (the preload builds
 * without GnuTLS's headers). */
ssize_t gnutls_record_send(gnutls_session_t session, const void *data,
                           size_t size);
ssize_t gnutls_record_recv(gnutls_session_t session, void *data, size_t size);
int gnutls_handshake(gnutls_session_t session);

static struct {
	ssize_t (*send)(gnutls_session_t, const void *, size_t);
	ssize_t (*recv)(gnutls_session_t, void *, size_t);
	int (*handshake)(gnutls_session_t);
	int (*get_int)(gnutls_session_t);
	int (*is_fatal)(int);
} real;

#define REAL(field, name) \
	(__atomic_load_n(&real.field, __ATOMIC_ACQUIRE) != NULL \
	 ? real.field \
	 : (__typeof__(real.field))resolve((void **)&real.field, name))

static void *resolve(void **slot, const char *name)
{
	void *found = agile__tls_real(name, LIBGNUTLS);

	if (found != NULL)
		__atomic_store_n(slot, found, __ATOMIC_RELEASE);
	return found;
}

static struct agile_fd *entry_of(gnutls_session_t session)
{
	int (*get_int)(gnutls_session_t) =
		REAL(get_int, "gnutls_transport_get_int");
	struct agile_fd *t;

	if (session == NULL || get_int == NULL || agile__busy)
		return NULL;
	t = agile__tls_entry(get_int(session));
	return t != NULL ? t : agile__tls_entry(agile__tls_session_fd(session));
}

/* What a receive's result says happened (tls_plain.h). */
static ssize_t recv_outcome(ssize_t ret)
{
	int (*is_fatal)(int) = REAL(is_fatal, "gnutls_error_is_fatal");

	if (ret >= 0)
		return ret; /* data, or 0: the peer's close_notify */
	if (ret == GNUTLS_E_PULL_ERROR)
		return -1; /* the socket failed: errno says how */
	if (ret == GNUTLS_E_PREMATURE_TERMINATION ||
	    (is_fatal != NULL && is_fatal((int)ret)))
		return 0;
	return AGILE_PLAIN_NOTHING; /* again, interrupted, a warning */
}

static ssize_t record_send(gnutls_session_t session, const void *data,
                           size_t size)
{
	ssize_t (*next)(gnutls_session_t, const void *, size_t) =
		REAL(send, "gnutls_record_send");
	struct agile_plain_send s;
	struct agile_fd *t;
	ssize_t written;
	int begun;

	if (next == NULL) {
		agile__tls_missing("gnutls_record_send");
		return GNUTLS_E_INTERNAL_ERROR;
	}
	/* A NULL, 0 send flushes what a call cut short left behind: it is
	 * the rest of a write already paced. */
	if (size == 0 || data == NULL)
		return next(session, data, size);
	if ((t = entry_of(session)) == NULL)
		return AGILE_TLS_LEARNING(session, next(session, data, size));
	begun = agile__plain_send_begin(&s, t, data, size,
	                                (uintptr_t)__builtin_frame_address(0));
	if (begun == 1)
		return next(session, data, size);
	if (begun < 0) {
		errno = -begun;
		return GNUTLS_E_PUSH_ERROR;
	}
	written = next(session, data, s.limit < size ? s.limit : size);
	agile__plain_send_end(&s, written, errno);
	return written;
}

static ssize_t record_recv(gnutls_session_t session, void *data, size_t size)
{
	ssize_t (*next)(gnutls_session_t, void *, size_t) =
		REAL(recv, "gnutls_record_recv");
	struct agile_fd *t;
	ssize_t r;
	int error;

	if (next == NULL) {
		agile__tls_missing("gnutls_record_recv");
		return GNUTLS_E_INTERNAL_ERROR;
	}
	if (size == 0)
		return next(session, data, size);
	if ((t = entry_of(session)) == NULL)
		return AGILE_TLS_LEARNING(session, next(session, data, size));
	if (!agile__plain_recv_begin(t, (uintptr_t)__builtin_frame_address(0)))
		return next(session, data, size);
	r = next(session, data, size);
	error = errno;
	agile__plain_recv_end(t, data, size, recv_outcome(r), error, false);
	return r;
}

/* The handshake: passed through, with the session named so that its
 * first tracked send maps it to its socket when gnutls_transport_get_int
 * does not name one; a mapping left from an earlier connection of the
 * session is dropped first. */
static int handshake(gnutls_session_t session)
{
	int (*next)(gnutls_session_t) = REAL(handshake, "gnutls_handshake");
	int (*get_int)(gnutls_session_t) =
		REAL(get_int, "gnutls_transport_get_int");

	if (next == NULL) {
		agile__tls_missing("gnutls_handshake");
		return GNUTLS_E_INTERNAL_ERROR;
	}
	if (session == NULL || get_int == NULL || agile__busy ||
	    agile__tls_entry(get_int(session)) != NULL)
		return next(session);
	agile__tls_session_forget(session);
	return AGILE_TLS_LEARNING(session, next(session));
}

AGILE_EXPORT int gnutls_handshake(gnutls_session_t session)
{
	return handshake(session);
}

AGILE_EXPORT ssize_t gnutls_record_send(gnutls_session_t session,
                                        const void *data, size_t size)
{
	return record_send(session, data, size);
}

AGILE_EXPORT ssize_t gnutls_record_recv(gnutls_session_t session, void *data,
                                        size_t size)
{
	return record_recv(session, data, size);
}
