/*
 * http2.h - what of an HTTP/2 connection over cleartext is neither a
 * request nor a response (http2.c): the frames that keep the connection
 * itself, which the byte-level rules of track.h took for requests and
 * answers.  A connection the walker of h2walk.h follows is read stream by
 * stream there instead; these are for one it does not.
 */
#ifndef AGILE_PRELOAD_HTTP2_H
#define AGILE_PRELOAD_HTTP2_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "read_verdict.h"

/* Do the n bytes at p, a send, begin with the client connection preface,
 * "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", which an HTTP/2 connection over
 * cleartext begins with and no other protocol sends?  Pure. */
bool agile__h2_preface(const void *p, size_t n);

/* Are iov[0, count), the bytes of one send on a connection that began with
 * the preface, whole frames that start no request: SETTINGS, PING,
 * PRIORITY, WINDOW_UPDATE, RST_STREAM and GOAWAY, and nothing else?
 * Pure. */
bool agile__h2_no_request(const struct iovec *iov, int count);

/* Are the n bytes at p, one read on such a connection, whole frames that
 * answer no request: SETTINGS, PING, PRIORITY and WINDOW_UPDATE, and
 * nothing else?  Pure. */
bool agile__h2_no_response(const void *p, size_t n);

/* The verdict on the n bytes at p, one read on such a connection:
 * AGILE_READ_INTERIM when they are such frames alone (the request stays in
 * flight, as after an interim response), otherwise AGILE_READ_RESPONSE
 * (they may answer a request).  Pure. */
static inline enum agile__read_verdict agile__h2_read_verdict(const void *p,
                                                              size_t n)
{
	return agile__h2_no_response(p, n) ? AGILE_READ_INTERIM
	                                   : AGILE_READ_RESPONSE;
}

#endif /* AGILE_PRELOAD_HTTP2_H */
