/*
 * inbound_h2.h - a listener's limit on an HTTP/2 connection the program
 * accepted (proto=http or proto=grpc, HTTP/2 over cleartext with prior
 * knowledge): streams in flight take the permits, not the connection
 * (inbound_h2.c).
 */
#ifndef AGILE_PRELOAD_INBOUND_H2_H
#define AGILE_PRELOAD_INBOUND_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdtable.h"

/* The first read on `t` began with the client's preface: give it an entry,
 * its walker at the connection's first byte as a server.  False when the
 * pool is full (one warning): the connection is then served as today. */
bool agile__inbound_h2_open(struct agile_fd *t);

/* A read on t's HTTP/2 connection returned the first `result` bytes of
 * iov[0, count), of `asked` the program made room for: walk them; a new
 * client stream takes a permit, and one that gets none is shed: its
 * HEADERS are left to the program (its HPACK decoder needs them), a
 * RST_STREAM(CANCEL) of the stream is put after them in the program's
 * buffer, and the client's answer is queued.  Returns how many bytes were
 * put in (the read is to return that many more). */
size_t agile__inbound_h2_received(struct agile_fd *t, const struct iovec *iov,
                                  int count, size_t result, size_t asked);

/* The program is about to send iov[0, count) on t's HTTP/2 connection:
 * this thread owns the connection's outgoing bytes until
 * agile__inbound_h2_sent.  Answers queued are written first when the
 * program's frames are at a boundary; otherwise *limit cuts the send at
 * the end of the frame it is in, so that they go after it. */
void agile__inbound_h2_before_send(struct agile_fd *t, const struct iovec *iov,
                                   int count, size_t *limit);

/* That send returned `result`: walk the program's frames that went (a
 * stream its response ends gives its permit back), and write the answers
 * queued once at a frame boundary. */
void agile__inbound_h2_sent(struct agile_fd *t, const struct iovec *iov,
                            int count, ssize_t result);

/* `t` stops naming its entry: its close, or a new connection accepted on
 * its number when the old one's close was not seen.  The last descriptor
 * of the connection to let go frees the entry, and the streams still in
 * flight give their permits back, truncated. */
void agile__inbound_h2_close(struct agile_fd *t);

/* `to` is now a duplicate of `from`: it names the same entry. */
void agile__inbound_h2_dup(const struct agile_fd *from, struct agile_fd *to);

#endif /* AGILE_PRELOAD_INBOUND_H2_H */
