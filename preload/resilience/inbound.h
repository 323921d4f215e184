/*
 * inbound.h - AGILE_LISTEN_ rules at run time (inbound.c): admission of an
 * accepted connection, and the handling-time samples of its requests.
 */
#ifndef AGILE_PRELOAD_INBOUND_H
#define AGILE_PRELOAD_INBOUND_H

#include <stdbool.h>
#include <sys/types.h>

#include "fdtable.h"

/* `fd` was just accepted on `listen_fd`.  0: the program gets it (tracked
 * when a listener rule matched); -1: it was shed and is closed already. */
int agile__inbound_accepted(int listen_fd, int fd);

/* A read on an accepted connection returned `result` bytes of `data`
 * (`peek`: MSG_PEEK left them to be read again). */
void agile__inbound_after_recv(struct agile_fd *t, ssize_t result,
                               const void *data, size_t len, bool peek);

/* What the read just made on `t` is to return (the receive hooks ask after
 * every read): the bytes, as usually; nothing, since a request the preload
 * shed and answered was all it read, so the read is made again; or an end
 * of file, since the connection was closed with the answer. */
enum agile_inbound_recv {
	AGILE_INBOUND_KEEP = 0,
	AGILE_INBOUND_AGAIN,
	AGILE_INBOUND_END
};
static inline int agile__inbound_answered(struct agile_fd *t)
{
	if (__atomic_load_n(&t->inbound_shed, __ATOMIC_ACQUIRE) == 0)
		return AGILE_INBOUND_KEEP;
	return __atomic_exchange_n(&t->inbound_shed, 0, __ATOMIC_ACQ_REL);
}
/* A write on it sent `result` bytes of `data`. */
void agile__inbound_after_send(struct agile_fd *t, ssize_t result,
                               const void *data, size_t len);
/* It is being closed. */
void agile__inbound_close(struct agile_fd *t);

#endif /* AGILE_PRELOAD_INBOUND_H */
