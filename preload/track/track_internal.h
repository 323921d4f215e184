/*
 * track_internal.h - what the files of preload/track/ share: the small
 * helpers every path uses, and each file's entry points for the others.
 *
 *   track.c     the send and receive paths, the request lifecycle, the TLS
 *               ticket rule, close, shutdown and dup bookkeeping
 *   connect.c   the connect lifecycle: admission, the grant, failures
 *   wait.c      the wait for a grant, its watch list and signal policy
 *   tunnel.c    tunnels through a proxy (CONNECT, SOCKS) and STARTTLS
 */
#ifndef AGILE_PRELOAD_TRACK_INTERNAL_H
#define AGILE_PRELOAD_TRACK_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "atomics.h"
#include "destinations.h"
#include "fdtable.h"

static inline bool is_unreachable(int error)
{
	return error == ECONNREFUSED || error == ENETUNREACH ||
	       error == EHOSTUNREACH;
}

static inline struct agile_state_slot *slot_of(const struct agile_fd *t)
{
	return agile__destinations_slot(t->dest);
}

static inline uint8_t load8(const uint8_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void store8(uint8_t *p, uint8_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

static inline size_t iov_total(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++)
		n += iov[i].iov_len;
	return n;
}

/* track.c */
/* Is `t` still the entry of the socket its descriptor refers to (a socket
 * handed to stdio may be closed unseen)?  When not, it is forgotten. */
bool agile__track_still_tracked(struct agile_fd *t);
/* Wait for the socket's unwaited grant, then the send spacing and the
 * fleet slot; returns the time after (see there). */
int64_t agile__track_settle_grant(struct agile_fd *t, int64_t now,
                                  bool interruptible, bool *interrupted);

/* connect.c */
/* The connection failed with `error`, seen by its connect() or later
 * (see there). */
void agile__track_connect_failed(struct agile_fd *t, struct agile_state_slot *s,
                                 int error, bool by_connect);

/* wait.c */
/* Add fd to this thread's list of sockets with a request in flight. */
void agile__track_watch(int fd);
/* Sleep until `planned`, stamping responses that arrive meanwhile; true
 * when cut short for a send on `interruptible_fd` to fail with EINTR. */
bool agile__track_wait_on(int64_t planned, int interruptible_fd);
/* The same, never cut short (the fleet's callback too). */
void agile__track_wait(int64_t planned);

/* tunnel.c */
/* Does a request open a tunnel (see there)? */
bool agile__track_opens_tunnel(const uint8_t *p, size_t n, bool first);
/* The request state a send on a connection setting up a tunnel goes on
 * with. */
uint8_t agile__track_tunnel_send(struct agile_fd *t, const struct iovec *iov,
                                 int count, uint8_t request);
/* TLS starts on a plain connection: restart the walker. */
void agile__track_start_tls(struct agile_fd *t);

#endif /* AGILE_PRELOAD_TRACK_INTERNAL_H */
