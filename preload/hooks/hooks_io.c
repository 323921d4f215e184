/*
 * hooks_io.c - the data hooks: send, sendto, sendmsg, sendmmsg, write,
 * writev, sendfile; recv, recvfrom, recvmsg, recvmmsg, read, readv; splice
 * (a send when it writes to the socket, a receive when it reads from it);
 * and the fortified __read_chk, __recv_chk, __recvfrom_chk that
 * _FORTIFY_SOURCE builds call instead of the plain names.
 *
 * Every hook has the same shape: the fast path for untracked fds, else
 * track (before), call libc, track (after) with the call's result and
 * errno.  Each exported function is a one-line forwarder to a static one.
 */
#undef _FORTIFY_SOURCE
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hooks.h"
#include "inbound.h"
#include "track.h"
#include "usermem.h"

/* Run `call` (an expression) as a send on fd; evaluates to its result.
 * `iov` and `count` are the bytes it sends (NULL when they are not in
 * memory, as for sendfile), for the TLS walker (tls.h) and proto=http
 * (http.c). */
#define SEND_LIKE(type, fd, iov, count, call) \
	SEND_LIKE_CUT(type, fd, iov, count, call, call)

/* The same for a send that can be made with fewer bytes: `cut_call` is the
 * call made with the first `limit_` bytes only, when the tracking says to
 * stop there (an HTTP/2 send carrying the HEADERS of several new streams
 * goes up to the second one's, track.h). */
#define SEND_LIKE_CUT(type, fd, iov, count, call, cut_call) do { \
	struct agile_fd *t0_ = agile__hook_tracked(fd); \
	if (t0_ == NULL) \
		return call; \
	SEND_TRACKED(type, t0_, iov, count, call, cut_call); \
} while (0)

/* SEND_LIKE's tracked half, for the entry `t` of the fd.  A signal
 * handler's send while its thread is in a tracked call is not tracked
 * (track.h, agile__track_in_handler). */
#define SEND_TRACKED(type, t, iov, count, call, cut_call) do { \
	uintptr_t here_ = (uintptr_t)__builtin_frame_address(0); \
	struct agile_fd *t_ = (t); \
	const struct iovec *iov_ = (iov); \
	int count_ = (count); \
	size_t limit_ = SIZE_MAX; \
	int64_t start_; \
	type r_; \
	if (agile__track_in_handler(here_)) \
		return call; \
	agile__track_hook_enter(here_); \
	start_ = agile__track_before_send(t_, iov_, count_, &limit_); \
	if (start_ == AGILE_SEND_CLOSED || \
	    start_ == AGILE_SEND_INTERRUPTED) { \
		agile__track_hook_leave(); \
		errno = start_ == AGILE_SEND_CLOSED ? EBADF : EINTR; \
		return -1; \
	} \
	r_ = limit_ == SIZE_MAX ? (call) : (cut_call); \
	agile__track_hook_leave(); \
	if (start_ != AGILE_SEND_PASS) \
		agile__track_after_send(t_, (ssize_t)r_, errno, start_, iov_, \
		                        count_); \
	return r_; \
} while (0)

/* Same for a receive that asked for `asked` bytes into iov[0..count)
 * with `flags` (0 for read, readv and splice), `asked`, `iov` and `count`
 * evaluated only once the call succeeded, when the kernel has accepted
 * the memory they read (usermem.h): MSG_PEEK leaves them for the
 * next one.  MSG_ERRQUEUE reads the socket's error queue, not the peer's
 * bytes: a MSG_ZEROCOPY completion (no bytes, once taken for an end of file
 * that truncated the request) or a transmit timestamp with a copy of the
 * packet sent (once taken for the response, a 0.1 ms round trip).  Such a
 * read is passed through untouched. */
#define RECV_LIKE(type, fd, asked, iov, count, flags, call) do { \
	struct agile_fd *t0_ = agile__hook_tracked(fd); \
	if (t0_ == NULL) \
		return call; \
	RECV_TRACKED(type, t0_, asked, iov, count, flags, call); \
} while (0)

/* RECV_LIKE's tracked half, for the entry `t` of the fd.  A signal
 * handler's receive while its thread is in a tracked call is not tracked
 * (track.h, agile__track_in_handler).  A request that a listener with
 * proto=http shed was answered by the preload and is not the program's
 * (inbound.h): the call is made again for the next one (it blocks, or
 * fails with EAGAIN, as the program asked), or the program reads the end
 * of the file when the connection was closed with the answer.  On an
 * HTTP/2 connection the preload may have put the resets of streams it shed
 * in the buffer, after the bytes read: the call returns them too. */
#define RECV_TRACKED(type, t, asked, iov, count, flags, call) do { \
	uintptr_t here_ = (uintptr_t)__builtin_frame_address(0); \
	struct agile_fd *t_ = (t); \
	type r_; \
	if (((flags) & MSG_ERRQUEUE) || agile__track_in_handler(here_)) \
		return call; \
	for (;;) { \
		agile__track_hook_enter(here_); \
		r_ = call; \
		agile__track_hook_leave(); \
		if (r_ < 0) { /* the kernel may have refused iov: not read */ \
			agile__track_after_recv(t_, -1, errno, 0, NULL, 0, \
			                        ((flags) & MSG_PEEK) != 0); \
			return r_; \
		} \
		agile__track_after_recv(t_, (ssize_t)r_, errno, (asked), \
		                        (iov), (count), \
		                        ((flags) & MSG_PEEK) != 0); \
		switch (agile__inbound_answered(t_)) { \
		case AGILE_INBOUND_KEEP: return r_; \
		case AGILE_INBOUND_END: return 0; \
		case AGILE_INBOUND_GROWN: \
			return r_ + (type)agile__inbound_grown; \
		default: break; \
		} \
	} \
} while (0)

/*
 * read, write, recv and send are what programs call most, on files and
 * pipes as much as on sockets, so their pass-through makes no call but the
 * real one and needs no stack frame: binding the table on first use and
 * the tracked path are functions of their own (FAST_HOOK), each reached
 * by a jump.  About 15 instructions fewer per call than SEND_LIKE and
 * RECV_LIKE, whose first call (the binding) made every call save its
 * arguments (callgrind, ab -c 16 without a matching rule).
 */
#define ARGS_OF(...) __VA_ARGS__
#define FAST_HOOK(type, name, params, args, fd, real, tracked) \
static __attribute__((noinline)) type name##_tracked(struct agile_fd *t, \
                                                     ARGS_OF params) \
{ \
	tracked; \
} \
static __attribute__((noinline)) type name##_unbound(ARGS_OF params) \
{ \
	struct agile_fd *t = agile__hook_tracked(fd); \
	if (t == NULL) \
		return agile__libc.real args; \
	return name##_tracked(t, ARGS_OF args); \
} \
static type hook_##name(ARGS_OF params) \
{ \
	struct agile_fd *t; \
	if (__builtin_expect(!agile__is_bound(), 0)) \
		return name##_unbound(ARGS_OF args); \
	t = agile__hook_entry(fd); \
	if (t == NULL) \
		return agile__libc.real args; \
	return name##_tracked(t, ARGS_OF args); \
}

/* One buffer as an iovec array of one. */
#define ONE(buf, len) (&(struct iovec){ (void *)(buf), (len) })

/* The first `limit` bytes of iov[0, count) as a copy of at most
 * AGILE_SEND_CUT_IOV_MAX iovecs (the tracking cuts no longer array);
 * returns the copy's count. */
static int iov_cut(const struct iovec *iov, int count, size_t limit,
                   struct iovec *out)
{
	int n = 0;

	for (int i = 0; i < count && n < AGILE_SEND_CUT_IOV_MAX && limit > 0;
	     i++) {
		out[n] = iov[i];
		if (out[n].iov_len > limit)
			out[n].iov_len = limit;
		limit -= out[n].iov_len;
		n++;
	}
	return n;
}

static ssize_t writev_cut(int fd, const struct iovec *iov, int count,
                          size_t limit)
{
	struct iovec cut[AGILE_SEND_CUT_IOV_MAX];

	return agile__libc.writev(fd, cut, iov_cut(iov, count, limit, cut));
}

/* `copy` is the program's msghdr, read already: sent with its iovecs cut. */
static ssize_t sendmsg_cut(int fd, struct msghdr *copy, int flags,
                           size_t limit)
{
	struct iovec cut[AGILE_SEND_CUT_IOV_MAX];

	copy->msg_iovlen = (size_t)iov_cut(copy->msg_iov,
	                                   (int)copy->msg_iovlen, limit, cut);
	copy->msg_iov = cut;
	return agile__libc.sendmsg(fd, copy, flags);
}

static size_t iov_total(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++)
		n += iov[i].iov_len;
	return n;
}

FAST_HOOK(ssize_t, send, (int fd, const void *buf, size_t len, int flags),
          (fd, buf, len, flags), fd, send,
          SEND_TRACKED(ssize_t, t, ONE(buf, len), 1,
                       agile__libc.send(fd, buf, len, flags),
                       agile__libc.send(fd, buf, limit_, flags)))

/*
 * TCP Fast Open without connect(): MSG_FASTOPEN with an address connects
 * and sends in one call, so on a socket the preload does not track yet it
 * is that connect first (track.h), then the first send.  Returns 0 to go
 * on, or -errno when the connection is refused.
 */
static int fastopen(int fd, int flags, const struct sockaddr *addr,
                    socklen_t addrlen)
{
	struct sockaddr_storage copy;
	int rc;

	if (!(flags & MSG_FASTOPEN) || addr == NULL ||
	    agile__hook_tracked(fd) != NULL || agile__busy || agile__disabled)
		return 0;
	/* An address the kernel will refuse is the kernel's to refuse. */
	if (addrlen > sizeof(copy) ||
	    agile__copy_in(&copy, addr, addrlen) < 0)
		return 0;
	rc = agile__track_fastopen(fd, (const struct sockaddr *)&copy,
	                           addrlen);
	return rc < 0 ? rc : 0;
}

static ssize_t hook_sendto(int fd, const void *buf, size_t len, int flags,
                           const struct sockaddr *addr, socklen_t addrlen)
{
	int refused = fastopen(fd, flags, addr, addrlen);

	if (refused < 0) {
		errno = -refused;
		return -1;
	}
	SEND_LIKE_CUT(ssize_t, fd, ONE(buf, len), 1,
	              agile__libc.sendto(fd, buf, len, flags, addr, addrlen),
	              agile__libc.sendto(fd, buf, limit_, flags, addr,
	                                 addrlen));
}

/* The msghdr is the program's: read from a copy, and only when the
 * kernel would accept it (usermem.h); the call gets the original. */
static ssize_t hook_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr copy;
	int refused;

	if (!(flags & MSG_FASTOPEN) && agile__hook_tracked(fd) == NULL)
		return agile__libc.sendmsg(fd, msg, flags);
	if (msg == NULL || agile__copy_in(&copy, msg, sizeof(copy)) < 0)
		return agile__libc.sendmsg(fd, msg, flags);
	refused = fastopen(fd, flags, copy.msg_name, copy.msg_namelen);
	if (refused < 0) {
		errno = -refused;
		return -1;
	}
	if (copy.msg_iovlen > IOV_MAX ||
	    !agile__iov_array_readable(copy.msg_iov, (long)copy.msg_iovlen))
		return agile__libc.sendmsg(fd, msg, flags);
	SEND_LIKE_CUT(ssize_t, fd, copy.msg_iov, (int)copy.msg_iovlen,
	              agile__libc.sendmsg(fd, msg, flags),
	              sendmsg_cut(fd, &copy, flags, limit_));
}

/* Several messages: no one run of bytes to read. */
static int hook_sendmmsg(int fd, struct mmsghdr *vec, unsigned int n,
                         int flags)
{
	SEND_LIKE(int, fd, NULL, 0, agile__libc.sendmmsg(fd, vec, n, flags));
}

FAST_HOOK(ssize_t, write, (int fd, const void *buf, size_t len),
          (fd, buf, len), fd, write,
          SEND_TRACKED(ssize_t, t, ONE(buf, len), 1,
                       agile__libc.write(fd, buf, len),
                       agile__libc.write(fd, buf, limit_)))

/* The iovec array is the program's: looked at only when the kernel would
 * accept it (usermem.h). */
static ssize_t hook_writev(int fd, const struct iovec *iov, int count)
{
	struct agile_fd *t = agile__hook_tracked(fd);

	if (t == NULL || !agile__iov_array_readable(iov, count))
		return agile__libc.writev(fd, iov, count);
	SEND_TRACKED(ssize_t, t, iov, count,
	             agile__libc.writev(fd, iov, count),
	             writev_cut(fd, iov, count, limit_));
}

/* The request comes from a file: nothing to read. */
static ssize_t hook_sendfile(int out_fd, int in_fd, off_t *offset,
                             size_t count)
{
	SEND_LIKE(ssize_t, out_fd, NULL, 0,
	          agile__libc.sendfile(out_fd, in_fd, offset, count));
}

/* One end of a splice is a pipe, so at most one is a socket. */
static ssize_t hook_splice(int fd_in, loff_t *off_in, int fd_out,
                           loff_t *off_out, size_t len, unsigned int flags)
{
	if (agile__hook_tracked(fd_out) != NULL)
		SEND_LIKE(ssize_t, fd_out, NULL, 0,
		          agile__libc.splice(fd_in, off_in, fd_out, off_out,
		                             len, flags));
	RECV_LIKE(ssize_t, fd_in, len, NULL, 0, 0,
	          agile__libc.splice(fd_in, off_in, fd_out, off_out, len,
	                             flags));
}

FAST_HOOK(ssize_t, recv, (int fd, void *buf, size_t len, int flags),
          (fd, buf, len, flags), fd, recv,
          RECV_TRACKED(ssize_t, t, len, ONE(buf, len), 1, flags,
                       agile__libc.recv(fd, buf, len, flags)))

static ssize_t hook_recvfrom(int fd, void *buf, size_t len, int flags,
                             struct sockaddr *addr, socklen_t *addrlen)
{
	RECV_LIKE(ssize_t, fd, len, ONE(buf, len), 1, flags,
	          agile__libc.recvfrom(fd, buf, len, flags, addr, addrlen));
}

static ssize_t hook_recvmsg(int fd, struct msghdr *msg, int flags)
{
	RECV_LIKE(ssize_t, fd, msg ? iov_total(msg->msg_iov,
	                                       (int)msg->msg_iovlen) : 0,
	          msg ? msg->msg_iov : NULL, msg ? (int)msg->msg_iovlen : 0,
	          flags, agile__libc.recvmsg(fd, msg, flags));
}

static int hook_recvmmsg(int fd, struct mmsghdr *vec, unsigned int n,
                         int flags, struct timespec *timeout)
{
	RECV_LIKE(int, fd, (size_t)n, NULL, 0, flags,
	          agile__libc.recvmmsg(fd, vec, n, flags, timeout));
}

FAST_HOOK(ssize_t, read, (int fd, void *buf, size_t len), (fd, buf, len),
          fd, read,
          RECV_TRACKED(ssize_t, t, len, ONE(buf, len), 1, 0,
                       agile__libc.read(fd, buf, len)))

static ssize_t hook_readv(int fd, const struct iovec *iov, int count)
{
	RECV_LIKE(ssize_t, fd, iov_total(iov, count), iov, count, 0,
	          agile__libc.readv(fd, iov, count));
}

static ssize_t hook_read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	RECV_LIKE(ssize_t, fd, len, ONE(buf, len), 1, 0,
	          agile__libc.read_chk(fd, buf, len, buflen));
}

static ssize_t hook_recv_chk(int fd, void *buf, size_t len, size_t buflen,
                             int flags)
{
	RECV_LIKE(ssize_t, fd, len, ONE(buf, len), 1, flags,
	          agile__libc.recv_chk(fd, buf, len, buflen, flags));
}

static ssize_t hook_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
                                 int flags, struct sockaddr *addr,
                                 socklen_t *addrlen)
{
	RECV_LIKE(ssize_t, fd, len, ONE(buf, len), 1, flags,
	          agile__libc.recvfrom_chk(fd, buf, len, buflen, flags, addr,
	                                   addrlen));
}

AGILE_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return hook_send(fd, buf, len, flags);
}

AGILE_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                            const struct sockaddr *addr, socklen_t addrlen)
{
	return hook_sendto(fd, buf, len, flags, addr, addrlen);
}

AGILE_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return hook_sendmsg(fd, msg, flags);
}

AGILE_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n,
                          int flags)
{
	return hook_sendmmsg(fd, vec, n, flags);
}

AGILE_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	return hook_write(fd, buf, len);
}

AGILE_EXPORT ssize_t writev(int fd, const struct iovec *iov, int count)
{
	return hook_writev(fd, iov, count);
}

AGILE_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset,
                              size_t count)
{
	return hook_sendfile(out_fd, in_fd, offset, count);
}

/* Large-file programs on 32-bit ABIs call sendfile64; on 64-bit ones it is
 * the same function under a second name, and still exported by libc. */
AGILE_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset,
                                size_t count)
{
	return hook_sendfile(out_fd, in_fd, (off_t *)offset, count);
}

AGILE_EXPORT ssize_t splice(int fd_in, loff_t *off_in, int fd_out,
                            loff_t *off_out, size_t len, unsigned int flags)
{
	return hook_splice(fd_in, off_in, fd_out, off_out, len, flags);
}

AGILE_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return hook_recv(fd, buf, len, flags);
}

AGILE_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
                              struct sockaddr *addr, socklen_t *addrlen)
{
	return hook_recvfrom(fd, buf, len, flags, addr, addrlen);
}

AGILE_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	return hook_recvmsg(fd, msg, flags);
}

AGILE_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n,
                          int flags, struct timespec *timeout)
{
	return hook_recvmmsg(fd, vec, n, flags, timeout);
}

AGILE_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	return hook_read(fd, buf, len);
}

AGILE_EXPORT ssize_t readv(int fd, const struct iovec *iov, int count)
{
	return hook_readv(fd, iov, count);
}

/* The fortified variants have no prototypes outside the fortify headers. */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
                       struct sockaddr *addr, socklen_t *addrlen);

AGILE_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	return hook_read_chk(fd, buf, len, buflen);
}

AGILE_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
                                int flags)
{
	return hook_recv_chk(fd, buf, len, buflen, flags);
}

AGILE_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len,
                                    size_t buflen, int flags,
                                    struct sockaddr *addr, socklen_t *addrlen)
{
	return hook_recvfrom_chk(fd, buf, len, buflen, flags, addr, addrlen);
}
