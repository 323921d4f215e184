/*
 * hooks_socket.c - the hooks that create, inspect, duplicate and end a
 * socket's life: socket, connect, getsockopt, shutdown, close, close_range,
 * closefrom, dup, dup2, dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC); fdopen, which
 * hands a socket to stdio, and fclose, which closes it there; and syscall()
 * for the numbers that close or replace a descriptor.  Together they see
 * every close a dynamically linked program makes through libc (fdtable.h
 * lists the paths), so no request has to ask whether its socket is still
 * the one that was tracked.
 *
 * Each exported function is a one-line forwarder to a static one holding
 * the logic; the exported set is fixed by preload.map.
 *
 * In a vfork child (see agile__in_vfork_child) the descriptors are the
 * child's but the table is its parent's: closing or duplicating there must
 * leave the table alone, or the parent's sockets would stop being paced.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "destinations.h"
#include "hooks.h"
#include "process.h"
#include "resilience_hook.h"
#include "track.h"
#include "usermem.h"

/* Whether the new socket is a stream one, so its first connect need not
 * ask (fdtable.h). */
static int hook_socket(int domain, int type, int protocol)
{
	int fd;

	agile__bind();
	fd = agile__libc.socket(domain, type, protocol);
	if (fd >= 0)
		agile__fd_note_socket(fd, (type & ~(SOCK_NONBLOCK |
		                                    SOCK_CLOEXEC)) ==
		                          SOCK_STREAM &&
		                          !agile__in_vfork_child());
	return fd;
}

static int hook_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_storage copy;
	int dest;

	agile__bind();
	if (agile__busy || agile__disabled || agile__destinations_none())
		return agile__libc.connect(fd, addr, len);
	/* The address is matched from a copy, and one the kernel would
	 * refuse is its to refuse (usermem.h); the copy is what the real
	 * connect gets, the same bytes. */
	if (len > sizeof(copy) || (addr == NULL && len > 0) ||
	    agile__copy_in(&copy, addr, len) < 0)
		return agile__libc.connect(fd, addr, len);
	if (addr != NULL) {
		memset((char *)&copy + len, 0, sizeof(copy) - len);
		addr = (const struct sockaddr *)&copy;
	}
	/* The address this thread matched last: its answer is known without
	 * a call.  Matching no rule, on an untracked socket, the connect()
	 * passes straight through, as agile__track_connect would after
	 * matching (a program connects to one place over and over, and a
	 * non-blocking connect() is made twice: 327 -> 274 instructions added
	 * per request of ab -c 16 when nothing matched, by callgrind). */
	dest = agile__destinations_cached(addr, len, AGILE_DEST_UNKNOWN);
	if (dest == -1 && agile__fd_lookup(fd) == NULL)
		return agile__libc.connect(fd, addr, len);
	return agile__track_connect(fd, addr, len, dest);
}

static int hook_getsockopt(int fd, int level, int name, void *value,
                           socklen_t *len)
{
	struct agile_fd *t = agile__hook_tracked(fd);
	int rc = agile__libc.getsockopt(fd, level, name, value, len);

	/* A non-blocking connect's result, read the way poll-driven clients
	 * (curl, libuv) read it. */
	if (t != NULL && rc == 0 && level == SOL_SOCKET && name == SO_ERROR &&
	    value != NULL && len != NULL && *len >= sizeof(int))
		agile__track_so_error(t, *(int *)value);
	return rc;
}

/* A stream's reads and writes (and fclose's close) happen inside libc,
 * unseen: the connection's grant is waited for here instead of at a first
 * send that the hooks would never see. */
static FILE *hook_fdopen(int fd, const char *mode)
{
	struct agile_fd *t = agile__hook_tracked(fd);
	FILE *f = agile__libc.fdopen(fd, mode);

	if (t != NULL && f != NULL)
		agile__track_fdopen(t);
	return f;
}

static int hook_shutdown(int fd, int how)
{
	struct agile_fd *t = agile__hook_tracked(fd);

	if (t != NULL)
		agile__track_shutdown(t, how);
	return agile__libc.shutdown(fd, how);
}

/* fd, tracked as t, is about to be closed, by whichever call. */
static void closing(int fd, struct agile_fd *t)
{
	if (t != NULL && !agile__in_vfork_child())
		agile__track_close(fd, t);
}

static int hook_close(int fd)
{
	agile__fd_forget_type(fd);
	closing(fd, agile__hook_tracked(fd));
	return agile__libc.close(fd);
}

/* fclose() closes the stream's descriptor inside libc, where the close hook
 * does not see it: the entry is closed here first, as close() would. */
static int hook_fclose(FILE *stream)
{
	agile__bind();
	if (stream != NULL && !agile__busy &&
	    __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE) != NULL) {
		int saved = errno;
		int fd = fileno(stream); /* -1 for a stream without one */

		errno = saved;
		agile__fd_forget_type(fd);
		closing(fd, agile__fd_lookup(fd));
	}
	return agile__libc.fclose(stream);
}

/* After close_range(first, last, flags) succeeded: the tracked entries in
 * the range, whose types the caller has forgotten. */
static void untrack_closed_range(unsigned int first, unsigned int last,
                                 int flags)
{
	int saved = errno;

	if (!(flags & CLOSE_RANGE_CLOEXEC) && !agile__in_vfork_child()) {
		agile__resilience_forget_range(first, last); /* permits */
		agile__fd_untrack_range(first, last);
	}
	errno = saved;
}

/* After close_range(first, last, flags) succeeded. */
static void closed_range(unsigned int first, unsigned int last, int flags)
{
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		agile__fd_forget_type_range(first, last);
	untrack_closed_range(first, last, flags);
}

static int hook_close_range(unsigned int first, unsigned int last, int flags)
{
	int rc;

	agile__bind();
	if (agile__libc.close_range == NULL)
		rc = (int)agile__next_syscall()(SYS_close_range, first, last,
		                                flags);
	else
		rc = agile__libc.close_range(first, last, flags);
	if (rc == 0)
		closed_range(first, last, flags);
	return rc;
}

static void hook_closefrom(int lowfd)
{
	agile__bind();
	if (lowfd < 0)
		lowfd = 0;
	agile__fd_forget_type_range((unsigned int)lowfd, ~0U);
	/* Forget first: closefrom cannot fail in a way that keeps fds. */
	if (!agile__in_vfork_child()) {
		/* Permits first: the table entries still say which. */
		agile__resilience_forget_range((unsigned int)lowfd, ~0U);
		agile__fd_untrack_range((unsigned int)lowfd, ~0U);
	}
	if (agile__libc.closefrom != NULL)
		agile__libc.closefrom(lowfd);
	else
		(void)agile__next_syscall()(SYS_close_range, lowfd, ~0U, 0);
}

/* After a successful duplication onto newfd, which may have been a tracked
 * socket that the call closed implicitly: the tracking, newfd's type being
 * forgotten by the caller. */
static void track_duplicate(int oldfd, int newfd, struct agile_fd *replaced)
{
	if (newfd == oldfd)
		replaced = NULL;
	if (replaced == NULL && agile__hook_tracked(oldfd) == NULL)
		return;
	if (agile__in_vfork_child())
		return;
	if (replaced != NULL)
		agile__track_close(newfd, replaced);
	if (agile__hook_tracked(oldfd) != NULL)
		agile__track_dup(oldfd, newfd);
}

/* After a successful duplication onto newfd. */
static void duplicated(int oldfd, int newfd, struct agile_fd *replaced)
{
	if (newfd != oldfd)
		agile__fd_forget_type(newfd);
	track_duplicate(oldfd, newfd, replaced);
}

/*
 * After dup() or fcntl(F_DUPFD, F_DUPFD_CLOEXEC) made newfd, the lowest
 * free number: whatever the preload still keeps for that number belonged
 * to a socket closed where no hook saw it (a raw system call), so it is
 * forgotten as dup2() forgets the number it replaces, whether or not oldfd
 * is tracked.  Otherwise a pipe duplicated there was paced as the dead
 * socket, and a datagram socket taken for a stream one at its connect()
 * (tests/preload/dup_stale.sh).  It costs an untracked dup a bit and an
 * entry loaded.
 */
static void duplicated_lowest(int oldfd, int newfd)
{
	duplicated(oldfd, newfd, agile__hook_entry(newfd));
}

static int hook_dup(int fd)
{
	int rc;

	agile__bind();
	rc = agile__libc.dup(fd);
	if (rc >= 0)
		duplicated_lowest(fd, rc);
	return rc;
}

static int hook_dup2(int oldfd, int newfd)
{
	struct agile_fd *replaced = agile__hook_tracked(newfd);
	int rc = agile__libc.dup2(oldfd, newfd);

	if (rc >= 0)
		duplicated(oldfd, newfd, replaced);
	return rc;
}

static int hook_dup3(int oldfd, int newfd, int flags)
{
	struct agile_fd *replaced = agile__hook_tracked(newfd);
	int rc = agile__libc.dup3(oldfd, newfd, flags);

	if (rc >= 0)
		duplicated(oldfd, newfd, replaced);
	return rc;
}

/* fcntl's third argument is an int, a long or a pointer depending on the
 * command; passing it on as an unsigned long is what every libc wrapper of
 * fcntl does on the ABIs we build for. */
static __attribute__((noinline)) int fcntl_dup(int (*real)(int, int, ...),
                                               int fd, int cmd,
                                               unsigned long arg)
{
	int rc = real(fd, cmd, arg);

	if (rc >= 0)
		duplicated_lowest(fd, rc);
	return rc;
}

/* Every other command passes straight through, without a stack frame. */
static inline __attribute__((always_inline))
int hook_fcntl(int (*real)(int, int, ...), int fd, int cmd, unsigned long arg)
{
	if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)
		return real(fd, cmd, arg);
	return fcntl_dup(real, fd, cmd, arg);
}

/*
 * syscall(number, ...): close, close_range, dup2 and dup3 made through libc's
 * syscall() get what their hooks do, and vfork, clone and clone3 note that
 * a child may share this memory (process.h); every other number passes
 * straight through.  The first switch forgets the types of the descriptors
 * the call closes or replaces, once, whether or not a socket is tracked;
 * the second does the tracking, without forgetting them again.  Nothing is
 * bound or looked up until a socket has been tracked (no table, nothing to
 * forget), so the allocators and start-up code that call syscall() pay a
 * switch, and a load and a branch.  The arguments are the six longs
 * syscall() passes to the kernel, whether or not the caller passed them
 * all, as every syscall() wrapper does (see the exported syscall below for
 * how they are received); a descriptor argument is an int, its low 32
 * bits, as the kernel reads it.
 */
static long hook_syscall(long number, const long a[6])
{
	long (*next)(long, ...) = agile__next_syscall();
	struct agile_fd *replaced;
	long rc;

	switch (number) {
#ifdef SYS_vfork
	case SYS_vfork:
#endif
#ifdef SYS_clone3
	case SYS_clone3:
#endif
	case SYS_clone:
		/* Any of them may make a child sharing this memory (threads
		 * are made by pthread_create, not through syscall()). */
		agile__note_shared_child();
		break;
	case SYS_close:
		agile__fd_forget_type((int)a[0]);
		break;
	case SYS_close_range:
		if (!((int)a[2] & CLOSE_RANGE_CLOEXEC))
			agile__fd_forget_type_range((unsigned int)a[0],
			                            (unsigned int)a[1]);
		break;
#ifdef SYS_dup2
	case SYS_dup2:
#endif
	case SYS_dup3:
		agile__fd_forget_type((int)a[1]);
		break;
	default:
		break;
	}
	if (agile__busy ||
	    __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE) == NULL)
		return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (number) {
	case SYS_close:
		closing((int)a[0], agile__fd_lookup((int)a[0]));
		break;
	case SYS_close_range:
		rc = next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (rc == 0)
			untrack_closed_range((unsigned int)a[0],
			                     (unsigned int)a[1], (int)a[2]);
		return rc;
#ifdef SYS_dup2
	case SYS_dup2:
#endif
	case SYS_dup3:
		replaced = agile__fd_lookup((int)a[1]);
		rc = next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (rc >= 0)
			track_duplicate((int)a[0], (int)a[1], replaced);
		return rc;
	default:
		break;
	}
	return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

AGILE_EXPORT int socket(int domain, int type, int protocol)
{
	return hook_socket(domain, type, protocol);
}

AGILE_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return hook_connect(fd, addr, len);
}

AGILE_EXPORT int getsockopt(int fd, int level, int name, void *value,
                            socklen_t *len)
{
	return hook_getsockopt(fd, level, name, value, len);
}

AGILE_EXPORT FILE *fdopen(int fd, const char *mode)
{
	return hook_fdopen(fd, mode);
}

AGILE_EXPORT int fclose(FILE *stream)
{
	return hook_fclose(stream);
}

AGILE_EXPORT int shutdown(int fd, int how)
{
	return hook_shutdown(fd, how);
}

AGILE_EXPORT int close(int fd)
{
	return hook_close(fd);
}

AGILE_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	return hook_close_range(first, last, flags);
}

AGILE_EXPORT void closefrom(int lowfd)
{
	hook_closefrom(lowfd);
}

AGILE_EXPORT int dup(int fd)
{
	return hook_dup(fd);
}

AGILE_EXPORT int dup2(int oldfd, int newfd)
{
	return hook_dup2(oldfd, newfd);
}

AGILE_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	return hook_dup3(oldfd, newfd, flags);
}

static int fcntl_hook(int fd, int cmd, unsigned long arg)
{
	agile__bind();
	return hook_fcntl(agile__libc.fcntl, fd, cmd, arg);
}

static int fcntl64_hook(int fd, int cmd, unsigned long arg)
{
	agile__bind();
	return hook_fcntl(agile__libc.fcntl64, fd, cmd, arg);
}

#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__linux__)
/*
 * fcntl and fcntl64 are variadic, and a variadic C function spills every
 * argument register on entry for va_arg: 36 instructions for a call that
 * only passes through (ab makes two per connection, 72 of the 420 the
 * preload added per request when nothing matched).  On these ABIs a
 * variadic call passes its third argument where a call of three named
 * integer arguments does (x86-64: %rdx, the vector count in %al unread;
 * AArch64 on Linux: x2), so the exported names are aliases of the
 * three-argument functions above.  Elsewhere, va_arg.
 */
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wattribute-alias"
#endif
AGILE_EXPORT int fcntl(int fd, int cmd, ...)
	__attribute__((alias("fcntl_hook")));
AGILE_EXPORT int fcntl64(int fd, int cmd, ...)
	__attribute__((alias("fcntl64_hook")));
#pragma GCC diagnostic pop
#else
AGILE_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	return fcntl_hook(fd, cmd, arg);
}

AGILE_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	return fcntl64_hook(fd, cmd, arg);
}
#endif

static long syscall_hook(long number, long a0, long a1, long a2, long a3,
                         long a4, long a5)
{
	const long a[6] = { a0, a1, a2, a3, a4, a5 };

	return hook_syscall(number, a);
}

#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__linux__)
/*
 * syscall() is variadic, and its caller passes only the arguments its
 * number takes: syscall(SYS_close, fd) passes one.  The hook passes six on
 * (it cannot know how many the number takes), as glibc's own syscall()
 * hands six registers to the kernel.  Read with va_arg, the sixth is a load
 * from the caller's stack, just above the return address (x86-64 passes
 * the seventh integer argument there), which AddressSanitizer instruments:
 * where the caller's frame keeps a local at its bottom, that word is the
 * local's redzone, and ASan stopped the program with "stack-buffer-
 * underflow" (tests/preload/syscall.sh).  On these ABIs a variadic call
 * passes its arguments where a call of seven named longs does (x86-64:
 * six registers and that stack slot, the vector count in %al unread;
 * AArch64 on Linux: x0 to x6), so the exported name is an alias of the
 * seven-argument function above, which receives them by the calling
 * convention, as glibc's assembly reads them: the same word, read as an
 * incoming argument, which ASan does not check and which is always mapped
 * (it lies in the caller's frame).  Elsewhere, va_arg, with that report
 * possible under ASan.
 */
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wattribute-alias"
#endif
AGILE_EXPORT long syscall(long number, ...)
	__attribute__((alias("syscall_hook")));
#pragma GCC diagnostic pop
#else
AGILE_EXPORT long syscall(long number, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return syscall_hook(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
#endif
