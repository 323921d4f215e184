/*
 * usermem.h - reading the host program's memory before the kernel has
 * accepted it, without ever faulting.
 *
 * A hook looks at what the program passes (the address of a connect, the
 * bytes of a send, a msghdr, accept's length) before the real call, to
 * match a rule or to know whether the send starts a request.  The kernel
 * answers a bad pointer or a bad length with -1 and EFAULT or EINVAL; a
 * plain read by the preload would kill the program with SIGSEGV instead
 * (issue 16, item 1; tests/preload/badptr.sh).  So every such read goes
 * through here first, and when the memory is not readable the hook passes
 * the call straight to libc, for the kernel to answer as it would without
 * the preload.  Reads made after a call succeeded need none of this: the
 * kernel has read or written those bytes itself.
 *
 * errno is preserved by every function here.
 */
#ifndef AGILE_PRELOAD_USERMEM_H
#define AGILE_PRELOAD_USERMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

/* Copy n bytes at src (the program's) to dst (the preload's): 0, or
 * -EFAULT when any of them cannot be read (dst is then undefined). */
int agile__copy_in(void *dst, const void *src, size_t n);

/* Can iov[0..count), the array itself, be read, and is count one the
 * kernel accepts (0 to IOV_MAX)? */
bool agile__iov_array_readable(const struct iovec *iov, long count);

/* Can every byte iov[0..count) describes be read?  The array itself must
 * be readable already (agile__iov_array_readable, or the preload's own). */
bool agile__iov_readable(const struct iovec *iov, int count);

#endif /* AGILE_PRELOAD_USERMEM_H */
