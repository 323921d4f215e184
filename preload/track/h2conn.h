/*
 * h2conn.h - the side pool of HTTP/2 connections: for each connection
 * whose client sent HTTP/2's preface, the frame walker (h2walk.h) that
 * says which sends open streams, so that each new stream takes a grant
 * and a send carrying several is cut before the second (docs/http2.md).
 *
 * Each entry also holds the streams in flight, each with the time its
 * HEADERS went out: one round-trip sample per stream, ended by the first
 * response HEADERS on that stream (not the connection's next read), and
 * truncated by RST_STREAM either way, a GOAWAY that leaves it out, or the
 * connection's end.  With proto=http each direction's header blocks go
 * through an HPACK decoder (h2hpack.h): a 1xx response then leaves its
 * stream in flight, the request's :path may exclude it, and the answer's
 * fields reach the caller for its verdict; without a decoder (another
 * proto, or no libnghttp2) a 103 Early Hints ends its stream's round trip.
 *
 * An entry lives in the process's memory, never in the state file; a
 * tracked descriptor names it by one index (struct agile_fd's h2conn,
 * 0 none), copied by dup and counted: the last descriptor of the
 * connection to close frees it.  fork copies the pool with the heap,
 * which is right: the child's descriptor is the same connection.
 * Connections that never send the preface have no entry and pay nothing.
 *
 * Concurrency: the walker's sent flow is moved only by sends, which a
 * program makes one at a time on one HTTP/2 connection (bytes of two
 * concurrent sends would interleave its frames), the received flow only
 * by reads, likewise; the stream table is touched by both, and the pool's
 * slots by every thread: their slots are claimed and freed with atomic
 * operations, so no lock is taken and none joins the fork list.
 */
#ifndef AGILE_PRELOAD_H2CONN_H
#define AGILE_PRELOAD_H2CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdtable.h"
#include "h2hpack.h"
#include "h2walk.h"

/* Give `t` an entry, its walker reset at the connection's first byte as
 * a client; with `verdicts` (proto=http) also an HPACK decoder for each
 * direction, libnghttp2 loaded then (one warning when it cannot be: the
 * streams are still paced and sampled, without verdicts).  Returns false
 * when the pool is full (or memory short): the connection then keeps the
 * byte-level rules of today. */
bool agile__h2conn_open(struct agile_fd *t, bool verdicts);

/* Plan the send of the first len bytes of iov[0, count) on t's
 * connection (agile__h2_plan).  False when t has no entry or its walker
 * has given up: the byte-level rules apply. */
bool agile__h2conn_plan(const struct agile_fd *t, const struct iovec *iov,
                        int count, size_t len, struct agile_h2_plan *plan);

/* How a stream's round trip ended, for the caller to record: answered
 * (its first response HEADERS) or truncated, after `rtt_ns`, at `now`.
 * `fields`: what the answer's block said, NULL when it was not decoded;
 * `excluded`: the request's :path is one of exclude=. */
typedef void agile_h2conn_ended_fn(struct agile_fd *t, int64_t rtt_ns,
                                   int64_t now, bool answered,
                                   const struct agile_h2_fields *fields,
                                   bool excluded);

/* Whether a request's :path path[0, len) leaves its stream unsampled. */
typedef bool agile_h2conn_excluded_fn(const struct agile_fd *t,
                                      const char *path, size_t len);

/* The send about to go opens `stream` (agile_h2_plan's), timed from
 * start_ns, just before the real call: entered in the table now, since
 * another thread may read its answer before this one has walked the send.
 * A stream is entered once: asked again for an id at or below the highest
 * entered (the walk after the send finds the stream it opened, whose
 * answer may have ended it by then), nothing happens.  A full table (128
 * streams in flight) leaves it unsampled. */
void agile__h2conn_opening(const struct agile_fd *t, uint32_t stream,
                           int64_t start_ns);

/* The send of iov[0, count) returned `result`: walk the bytes that went
 * (the streams they open enter the table, timed from start_ns, when they
 * are not in it yet; a reset of the program's own ends its stream, through
 * `ended`), or,
 * when none did, take out of the table the stream the call was to open.
 * Returns how many streams the bytes opened, or -1 when t has no walked
 * connection (no entry, or its walker gave up: the byte-level rules
 * apply).  iov NULL (sendfile, splice): the bytes cannot be walked, the
 * walker gives up. */
int agile__h2conn_sent(struct agile_fd *t, const struct iovec *iov,
                       int count, ssize_t result, int64_t start_ns,
                       int64_t now, agile_h2conn_ended_fn *ended,
                       agile_h2conn_excluded_fn *excluded);

/* The first `received` bytes of iov[0, count) were read: walk them and
 * end the streams they answer or reset, through `ended`.  Returns false
 * when t has no walked connection (the byte-level rules apply). */
bool agile__h2conn_received(struct agile_fd *t, const struct iovec *iov,
                            int count, size_t received, int64_t now,
                            agile_h2conn_ended_fn *ended);

/*
 * An event loop that sleeps in one send, waiting for the next stream's
 * grant, reads no answer meanwhile; the round trips of its streams in
 * flight would be measured to the read after the wait (h2load -m 10 at
 * 20/s: 300 ms for a server's 100).  As for HTTP/1 (track.h), the wait
 * polls the connection while agile__h2conn_waiting says it has streams in
 * flight, and agile__h2conn_peek, when it is readable, peeks at up to
 * 8 KiB with a copy of the received flow and stamps the streams whose
 * response HEADERS are there: their round trips end at that stamp.  The
 * bytes stay readable until the program reads them: a peek that sees no
 * more than the last one returns false, and the wait then sleeps 2 ms
 * before it polls again (the stamps' resolution).
 */
bool agile__h2conn_waiting(const struct agile_fd *t);
bool agile__h2conn_peek(const struct agile_fd *t, int fd, int64_t now);

/* The connection ended (end of file, reset): every stream in flight is
 * truncated through `ended`. */
void agile__h2conn_end(struct agile_fd *t, int64_t now,
                       agile_h2conn_ended_fn *ended);

/* `to` is now a duplicate of `from`'s descriptor: it names the same
 * entry, counted once more. */
void agile__h2conn_dup(const struct agile_fd *from, struct agile_fd *to);

/* `t` stops naming its entry (close, or a new connection on a number
 * whose close no hook saw); the last to do so frees it, ending the
 * streams still in flight through `ended` (NULL: unrecorded). */
void agile__h2conn_release(struct agile_fd *t, int64_t now,
                           agile_h2conn_ended_fn *ended);

#endif /* AGILE_PRELOAD_H2CONN_H */
