/*
 * inbound_internal.h - what the files of a listener rule (inbound.c) share:
 * the shed answers (inbound_shed.c), the CPU reading (inbound_cpu.c) and
 * the settling of a connection's shed=cpu call (inbound.c).
 */
#ifndef AGILE_PRELOAD_INBOUND_INTERNAL_H
#define AGILE_PRELOAD_INBOUND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fdtable.h"
#include "resilience_hook.h"

/* The status a shed is answered with, 0 for none (shed_response=). */
static inline int shed_status(const struct agile_resilience_config *c)
{
	return c->shed_response == AGILE_SHED_HTTP ? (int)c->shed_status : 0;
}

/* The descriptor of the entry t. */
static inline int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

/* Turn a connection away: answer it with `status` (0: not at all), a
 * Retry-After of retry_ns (agile__retry_after_s), then close it
 * (inbound_shed.c). */
void agile__inbound_shed(int fd, int status, int64_t retry_ns, int64_t now);
/* Close the lingering answered connections that have waited long enough. */
void agile__inbound_linger_expire(int64_t now);
/* Answer a request read on `t` that gets no permit, in place of the
 * program (inbound_shed.c says when the connection is kept). */
void agile__inbound_shed_request(struct agile_fd *t, const char *p, size_t n,
                                 ssize_t result, int status,
                                 int64_t retry_ns);

/* This process's CPU use in thousandths of what it may use, read at most
 * once per 100 ms (inbound_cpu.c). */
int32_t agile__inbound_read_cpu(int64_t now);

/* Settle the connection's shedder call: a pass with the handling time, or
 * a failure (inbound.c). */
void agile__inbound_settle_shedder(struct agile_fd *t,
                                   struct agile_state_resilience *z,
                                   bool pass, int64_t start, int64_t now);

#endif /* AGILE_PRELOAD_INBOUND_INTERNAL_H */
