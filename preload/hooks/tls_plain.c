/*
 * tls_plain.c - the TLS libraries' plaintext hooks' shared half: the real
 * functions' lookup and the send and receive paths (tls_plain.h says why
 * they are hand-written and what they promise).
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "hooks.h"
#include "log.h"
#include "tls_plain.h"
#include "tls_sessions.h"
#include "track.h"

struct find {
	const char *library;
	char path[4096];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	size_t n;

	(void)size;
	if (info->dlpi_name == NULL || strstr(info->dlpi_name, f->library) ==
	                               NULL)
		return 0;
	n = strlen(info->dlpi_name);
	if (n >= sizeof(f->path))
		return 0;
	memcpy(f->path, info->dlpi_name, n + 1);
	return 1;
}

void *agile__tls_real(const char *name, const char *library)
{
	struct find f = { library, "" };
	void *real, *handle;
	int saved = errno;

	agile__enter();
	real = dlsym(RTLD_NEXT, name);
	/* Not in the global scope: a library opened later with RTLD_LOCAL.
	 * RTLD_NOLOAD takes a reference only on what is loaded already,
	 * and the one taken is given back at once: the function stays as
	 * long as the library the program calls it through. */
	if (real == NULL && dl_iterate_phdr(find_loaded, &f) == 1 &&
	    (handle = dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD)) != NULL) {
		real = dlsym(handle, name);
		dlclose(handle);
	}
	agile__leave();
	errno = saved;
	return real;
}

/* The names warned about already (their hooks pass string constants). */
#define MISSING_MAX 16
static const char *missing[MISSING_MAX];

void agile__tls_missing(const char *name)
{
	int saved = errno;

	for (int i = 0; i < MISSING_MAX; i++) {
		const char *none = NULL;

		if (__atomic_load_n(&missing[i], __ATOMIC_ACQUIRE) == name)
			return;
		if (__atomic_compare_exchange_n(&missing[i], &none, name,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			break;
		if (none == name)
			return;
	}
	agile__enter();
	agile__log(AGILE_LOG_WARN, "%s: the TLS library's own function "
	           "cannot be found; the call fails", name);
	agile__leave();
	errno = saved;
}

__thread const void *agile__tls_current
	__attribute__((tls_model("initial-exec")));

/* The sessions whose descriptor was learnt (tls_sessions.h). */
static uint64_t sessions[AGILE_TLS_SESSIONS];

int agile__tls_session_fd(const void *session)
{
	return agile__tls_sessions_fd(sessions, AGILE_TLS_SESSIONS_BITS,
	                              session);
}

void agile__tls_session_forget(const void *session)
{
	agile__tls_sessions_forget(sessions, AGILE_TLS_SESSIONS_BITS,
	                           session);
}

/* Is `fd` still a tracked socket?  A slot whose descriptor is not may be
 * taken by another session. */
static bool still_tracked(int fd)
{
	return agile__fd_lookup(fd) != NULL;
}

void agile__tls_learn(int fd)
{
	const void *session = agile__tls_current;

	agile__tls_current = NULL; /* the first descriptor is the session's */
	(void)agile__tls_sessions_learn(sessions, AGILE_TLS_SESSIONS_BITS,
	                                session, fd, still_tracked);
}

/*
 * Set while a hook's real call runs: libssl's own SSL_write calls
 * SSL_write_ex, and SSL_read SSL_read_ex, through their exported names,
 * which the dynamic linker binds to the preload's hooks as it binds the
 * program's calls.  The inner call is the same write or read, already
 * tracked: it passes straight through.
 */
static __thread int inside_real __attribute__((tls_model("initial-exec")));

/* A listener's connection (AGILE_LISTEN_, inbound.c) keeps its byte-level
 * handling: its shed answers are written on the socket, which inside TLS
 * only the library may do. */
struct agile_fd *agile__tls_entry(int fd)
{
	struct agile_fd *t;

	if (fd < 0 || inside_real || (t = agile__hook_tracked(fd)) == NULL ||
	    (__atomic_load_n(&t->flags, __ATOMIC_ACQUIRE) & AGILE_FD_INBOUND))
		return NULL;
	return t;
}

int agile__plain_send_begin(struct agile_plain_send *s, struct agile_fd *t,
                            const void *buf, size_t len, uintptr_t here)
{
	s->t = t;
	s->iov.iov_base = (void *)buf;
	s->iov.iov_len = len;
	s->limit = SIZE_MAX;
	if (agile__track_in_handler(here))
		return 1;
	agile__track_hook_enter(here);
	/* A handler that ran during the wait resumes it (tls_plain.h); the
	 * grant stays the socket's meanwhile. */
	do
		s->start = agile__track_plain_before_send(t, &s->iov, 1,
		                                          &s->limit);
	while (s->start == AGILE_SEND_INTERRUPTED);
	if (s->start == AGILE_SEND_CLOSED) {
		agile__track_hook_leave();
		return -EBADF;
	}
	/* The retry of a write that would have blocked: both libraries
	 * require it to be made with the same bytes (OpenSSL fails a shorter
	 * one with "bad length"), so it is not cut, and the streams beyond
	 * the cut go with it on the grant taken. */
	if (__atomic_load_n(&t->tls_plain, __ATOMIC_ACQUIRE) &
	    AGILE_TLS_PLAIN_RETRY)
		s->limit = SIZE_MAX;
	inside_real = 1;
	return 0;
}

void agile__plain_send_end(struct agile_plain_send *s, ssize_t written,
                           int error)
{
	inside_real = 0;
	agile__track_hook_leave();
	if (written > 0)
		__atomic_fetch_and(&s->t->tls_plain,
		                   (uint8_t)~AGILE_TLS_PLAIN_RETRY,
		                   __ATOMIC_ACQ_REL);
	else
		__atomic_fetch_or(&s->t->tls_plain, AGILE_TLS_PLAIN_RETRY,
		                  __ATOMIC_ACQ_REL);
	if (s->start != AGILE_SEND_PASS)
		agile__track_plain_after_send(s->t, written > 0 ? written : -1,
		                              error, s->start, &s->iov, 1);
	errno = error;
}

bool agile__plain_recv_begin(struct agile_fd *t, uintptr_t here)
{
	(void)t;
	if (agile__track_in_handler(here))
		return false;
	agile__track_hook_enter(here);
	inside_real = 1;
	return true;
}

void agile__plain_recv_end(struct agile_fd *t, const void *buf, size_t asked,
                           ssize_t result, int error, bool peek)
{
	struct iovec iov = { (void *)buf, result > 0 ? (size_t)result : 0 };

	inside_real = 0;
	agile__track_hook_leave();
	if (result == AGILE_PLAIN_NOTHING) {
		errno = error;
		return;
	}
	if (result > 0)
		agile__track_plain_after_recv(t, result, error, asked, &iov, 1,
		                              peek);
	else
		agile__track_plain_after_recv(t, result, error,
		                              asked > 0 ? asked : 1, NULL, 0,
		                              peek);
	errno = error;
}
