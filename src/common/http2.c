/*
 * http2.c - HTTP/2 over cleartext: the frames that are neither a request
 * nor a response (see http2.h).
 *
 * An HTTP/2 connection carries, besides its requests (HEADERS, DATA) and
 * responses, frames that keep the connection itself, and the byte-level
 * rules took them for requests and answers.  nghttp2's clients (h2load,
 * nghttp, curl) send a GOAWAY on its own before they close the connection,
 * which nothing answers: it waited for a grant and was a truncated request
 * at the close, one per connection, a failure each for breaker=sre
 * (h2load -n 60 -c 2 -m 1 against nghttpd at 20/s: 62 grants and 2
 * truncated; nghttp, three connections of one request each: 6 grants and
 * 3 truncated).  The server's SETTINGS, which nghttpd sends as soon as it
 * accepts, ended the first request's round trip when it was read on its
 * own, and the client's SETTINGS acknowledgement after it was then a
 * request with a grant of its own, answered by the real response (nghttp:
 * 4 samples and 4 grants in one run of 3 requests, 3 in the next).
 *
 * So on a connection whose client sent the client connection preface
 * (track.c notes it: HTTP/2 over cleartext with prior knowledge sends it
 * first, possibly after reading the server's SETTINGS, and no other
 * protocol sends it at all), a send made only of
 * whole SETTINGS, PING, PRIORITY, WINDOW_UPDATE, RST_STREAM and GOAWAY
 * frames neither waits for a grant nor starts a request, and a read made
 * only of whole SETTINGS, PING, PRIORITY and WINDOW_UPDATE frames ends no
 * request.  A server's RST_STREAM or GOAWAY does answer: it ends the
 * request, as its error does.  A frame split over sends or reads, or sent
 * with a HEADERS or DATA frame, is counted as before.  HTTP/2 inside TLS
 * (h2 over https) is not readable, and an h2c connection upgraded from
 * HTTP/1.1 has no preface: both are counted as before.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "http2.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define FRAME_HEADER 9

/* Frame types (RFC 9113, section 6). */
enum {
	DATA = 0, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING,
	GOAWAY, WINDOW_UPDATE, CONTINUATION
};

/* The most bytes of a send looked at: control frames are short (a GOAWAY
 * with debug data the longest), and a send longer than this carries a
 * request or is counted as one. */
#define SEND_MAX 256

bool agile__h2_preface(const void *p, size_t n)
{
	return p != NULL && n >= sizeof(PREFACE) - 1 &&
	       memcmp(p, PREFACE, sizeof(PREFACE) - 1) == 0;
}

/* Are the n bytes at p whole frames, each of a type `allowed` holds? */
static bool whole_frames_of(const uint8_t *p, size_t n, unsigned allowed)
{
	if (n == 0)
		return false;
	while (n > 0) {
		size_t length;

		if (n < FRAME_HEADER)
			return false;
		length = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
		if (p[3] > CONTINUATION || !(allowed & 1u << p[3]) ||
		    length > n - FRAME_HEADER)
			return false;
		p += FRAME_HEADER + length;
		n -= FRAME_HEADER + length;
	}
	return true;
}

bool agile__h2_no_request(const struct iovec *iov, int count)
{
	uint8_t buf[SEND_MAX];
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++) {
		if (iov[i].iov_len > sizeof(buf) - n ||
		    (iov[i].iov_len > 0 && iov[i].iov_base == NULL))
			return false;
		if (iov[i].iov_len > 0)
			memcpy(buf + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	return whole_frames_of(buf, n, 1u << SETTINGS | 1u << PING |
	                               1u << PRIORITY | 1u << WINDOW_UPDATE |
	                               1u << RST_STREAM | 1u << GOAWAY);
}

bool agile__h2_no_response(const void *p, size_t n)
{
	return p != NULL &&
	       whole_frames_of(p, n, 1u << SETTINGS | 1u << PING |
	                             1u << PRIORITY | 1u << WINDOW_UPDATE);
}
