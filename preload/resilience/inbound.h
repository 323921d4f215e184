/*
 * inbound.h - AGILE_LISTEN_ rules at run time (inbound.c): admission of an
 * accepted connection, and the handling-time samples of its requests.
 */
#ifndef AGILE_PRELOAD_INBOUND_H
#define AGILE_PRELOAD_INBOUND_H

#include <sys/types.h>

#include "fdtable.h"

/* `fd` was just accepted on `listen_fd`.  0: the program gets it (tracked
 * when a listener rule matched); -1: it was shed and is closed already. */
int agile__inbound_accepted(int listen_fd, int fd);

/* A read on an accepted connection returned `result` bytes of `data`. */
void agile__inbound_after_recv(struct agile_fd *t, ssize_t result,
                               const void *data, size_t len);
/* A write on it sent `result` bytes of `data`. */
void agile__inbound_after_send(struct agile_fd *t, ssize_t result,
                               const void *data, size_t len);
/* It is being closed. */
void agile__inbound_close(struct agile_fd *t);

#endif /* AGILE_PRELOAD_INBOUND_H */
