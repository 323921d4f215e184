/*
 * inbound.h - AGILE_LISTEN_ rules at run time (inbound.c): admission of an
 * accepted connection, and the handling-time samples of its requests.
 */
#ifndef AGILE_PRELOAD_INBOUND_H
#define AGILE_PRELOAD_INBOUND_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdtable.h"

/* `fd` was just accepted on `listen_fd`.  0: the program gets it (tracked
 * when a listener rule matched); -1: it was shed and is closed already. */
int agile__inbound_accepted(int listen_fd, int fd);

/* A read on an accepted connection returned `result` bytes into
 * iov[0, count), of `asked` it had room for (`peek`: MSG_PEEK left them
 * to be read again). */
void agile__inbound_after_recv(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count,
                               size_t asked, bool peek);

/* What the read just made on `t` is to return (the receive hooks ask after
 * every read): the bytes, as usually; nothing, since a request the preload
 * shed and answered was all it read, so the read is made again; an end
 * of file, since the connection was closed with the answer; or the bytes
 * and agile__inbound_grown more, the resets of HTTP/2 streams shed that
 * the preload put in the buffer (inbound_h2.h). */
enum agile_inbound_recv {
	AGILE_INBOUND_KEEP = 0,
	AGILE_INBOUND_AGAIN,
	AGILE_INBOUND_END,
	AGILE_INBOUND_GROWN
};
extern __thread size_t agile__inbound_grown
	__attribute__((tls_model("initial-exec")));
static inline int agile__inbound_answered(struct agile_fd *t)
{
	if (__atomic_load_n(&t->inbound_shed, __ATOMIC_ACQUIRE) == 0)
		return AGILE_INBOUND_KEEP;
	return __atomic_exchange_n(&t->inbound_shed, 0, __ATOMIC_ACQ_REL);
}
/* A write of iov[0, count) is about to be made on it: *limit (SIZE_MAX)
 * may cut it short (inbound_h2.h). */
void agile__inbound_before_send(struct agile_fd *t, const struct iovec *iov,
                                int count, size_t *limit);
/* That write sent `result` bytes of iov[0, count). */
void agile__inbound_after_send(struct agile_fd *t, ssize_t result,
                               const struct iovec *iov, int count);
/* `to` is now a duplicate of `from`. */
void agile__inbound_dup(const struct agile_fd *from, struct agile_fd *to);
/* It is being closed. */
void agile__inbound_close(struct agile_fd *t);

#endif /* AGILE_PRELOAD_INBOUND_H */
