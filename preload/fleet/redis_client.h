/*
 * redis_client.h - the preload's own connection to Redis: RESP over a
 * private socket, every step bounded by one deadline.
 *
 * Why not hiredis.  The preload is loaded into every process a user
 * starts, so it links nothing it can avoid; dlopen()ing libhiredis would
 * keep it out of the link, but hiredis would still make its connect(),
 * read() and close() calls through the very symbols the preload
 * interposes, allocate with the host's malloc, and keep a descriptor we
 * do not control the number of.  Its timeouts are per socket operation,
 * not per round trip.  What the fleet needs is small — send a few
 * EVALSHA/SCRIPT LOAD/AUTH/SELECT commands, read a few short replies,
 * follow a MOVED — so it is written here in a few hundred lines (resp.c
 * and this file) with no dependency at all; the cost is TLS, which is
 * refused with a message (fleet_config.h).
 *
 * The connection never surprises the host program:
 *  - every libc call goes through the real symbols the preload bound
 *    (symbols.h), with the re-entrancy guard set, so it is never tracked,
 *    paced or counted as the program's;
 *  - the socket is moved to a high descriptor number (F_DUPFD_CLOEXEC, 200
 *    or above) so it does not take the low numbers a program expects to
 *    get back, and it is close-on-exec;
 *  - before each use its identity (st_dev, st_ino of the socket) is
 *    checked with fstat: if the program closed that number (close-all
 *    loops, closefrom) or dup2()ed something onto it, the connection is
 *    forgotten, never closed, and a new one is made;
 *  - after fork() the child forgets the parent's connection (closing its
 *    own copy of the descriptor) and makes its own when it needs one;
 *  - writes use MSG_NOSIGNAL: a Redis that went away is an error, never a
 *    SIGPIPE in the host.
 *
 * A struct agile_redis is used by one thread at a time: the fleet code
 * calls it only while it holds its destination's Redis turn (fleet.c).
 */
#ifndef AGILE_PRELOAD_REDIS_CLIENT_H
#define AGILE_PRELOAD_REDIS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fleet_config.h"
#include "resp.h"

#define AGILE_REDIS_SCRIPTS_MAX 4   /* Lua scripts loaded per connection */
#define AGILE_REDIS_BUFFER (64 * 1024) /* each of the out and in buffers */
#define AGILE_REDIS_NODES 64        /* values in one round trip's replies */
#define AGILE_REDIS_REPLIES 8       /* replies in one round trip */
#define AGILE_REDIS_REDIRECTS 3     /* MOVED followed per call */
#define AGILE_REDIS_ADDRESSES 4     /* addresses of a name tried in turn */

struct agile_redis {
	int fd;                  /* -1 when not connected */
	int32_t pid;             /* the process that made it */
	uint64_t dev, ino;       /* the socket's identity (fstat) */
	struct agile_redis_addr addr; /* where it goes: AGILE_REDIS, or the
	                                 node a MOVED named */
	struct sockaddr_storage sa[AGILE_REDIS_ADDRESSES]; /* addr resolved */
	socklen_t sa_len[AGILE_REDIS_ADDRESSES];
	int sa_count;                 /* 0: not resolved yet */
	const char *const *scripts;   /* Lua sources, loaded on connect */
	int script_count;
	char sha[AGILE_REDIS_SCRIPTS_MAX][41]; /* their SHA1s, from Redis */
	char *out;               /* commands queued (mapped lazily) */
	size_t out_len;
	char *in;                /* bytes received, replies not consumed */
	size_t in_len;
	struct agile_resp nodes[AGILE_REDIS_NODES];
	struct agile_resp *reply[AGILE_REDIS_REPLIES];
	uint64_t round_trips;    /* round trips made (connects included) */
	uint64_t connects;       /* connections made */
	char error[160];         /* why the last call failed */
};

/* Set up `c` (no I/O): it connects to `addr` on first use and loads the
 * `count` Lua `scripts` on every new connection. */
void agile__redis_init(struct agile_redis *c, const struct agile_redis_addr *addr,
                      const char *const *scripts, int count);

/* Forget the connection, closing the descriptor only if it is still this
 * process's socket. */
void agile__redis_drop(struct agile_redis *c);

/*
 * Run Lua script `script` (its index in the init array) with EVALSHA:
 * `nkeys` keys then `nargs` arguments (lens[i] == (size_t)-1 for a
 * NUL-terminated one), connecting first if needed, reloading the scripts
 * on NOSCRIPT and following MOVED to another cluster node.  Everything,
 * the connection included, ends by `deadline_ns` (CLOCK_MONOTONIC).
 * Returns 0 and *out (valid until the next call), or a negative errno with
 * a sentence in c->error: -ETIMEDOUT, -ECONNREFUSED and the like, -EPROTO
 * for bytes that are not RESP, -EREMOTE for an error reply.
 */
int agile__redis_eval(struct agile_redis *c, int script, int nkeys,
                     const char *const *keys, int nargs,
                     const char *const *args, const size_t *lens,
                     const struct agile_resp **out, int64_t deadline_ns);

/*
 * The same in two halves, for a round trip that should not hold up the
 * call that starts it: send the EVALSHA (connecting first if needed, which
 * does wait, within the deadline), and later collect its reply.  Collect
 * returns 0 and *out; -EAGAIN when `wait` is false and the reply has not
 * all arrived yet (before the deadline); -ESTALE when Redis answered
 * NOSCRIPT or MOVED, which the next call cures by itself (reload, follow);
 * any other negative errno as agile__redis_eval, the connection dropped.
 */
int agile__redis_eval_send(struct agile_redis *c, int script, int nkeys,
                          const char *const *keys, int nargs,
                          const char *const *args, const size_t *lens,
                          int64_t deadline_ns);
int agile__redis_eval_collect(struct agile_redis *c,
                             const struct agile_resp **out,
                             int64_t deadline_ns, bool wait);

#endif /* AGILE_PRELOAD_REDIS_CLIENT_H */
