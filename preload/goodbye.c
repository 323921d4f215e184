/*
 * goodbye.c - proto=redis and proto=postgres: the message a client sends
 * to end its session, which is not a request.
 *
 * A redis client's QUIT is answered +OK and the connection closed; a
 * PostgreSQL client's Terminate is not answered at all.  Taken for
 * requests they would wait for a grant (a goodbye costs the downstream
 * nothing worth pacing), and a Terminate would be recorded as truncated at
 * the close, a failure for breaker=sre; QUIT's +OK would be a sample.  So
 * a send on a destination declared to speak one of these protocols that
 * holds exactly that protocol's goodbye, and nothing else, neither waits
 * nor starts a request (track.c).  Nothing is guessed on an undeclared
 * destination: five bytes that happen to spell a Terminate may be a
 * request of another protocol, which would then go out unpaced.
 *
 * What is recognised, in one send (its iovecs gathered):
 *   redis      QUIT as RESP, "*1\r\n$4\r\nQUIT\r\n", or inline, "QUIT\r\n"
 *              or "QUIT\n"; the name in any case, as redis reads it.
 *   postgres   Terminate: 'X' and the length 4, big-endian.
 * A goodbye written together with a command (pipelined), split over
 * several sends, or sent inside TLS is not seen, and is paced and counted
 * as before.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "goodbye.h"

/* The longest goodbye, with room to spare: anything longer is no goodbye
 * and is not gathered. */
#define GOODBYE_MAX 16

/* The bytes of iov[0, count) into buf when they are at most GOODBYE_MAX;
 * returns their number, or 0 when there are more (or none). */
static size_t gather(const struct iovec *iov, int count,
                     char buf[GOODBYE_MAX])
{
	size_t n = 0;

	for (int i = 0; iov != NULL && i < count; i++) {
		if (iov[i].iov_len > GOODBYE_MAX - n)
			return 0;
		if (iov[i].iov_len > 0)
			memcpy(buf + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	return n;
}

static bool redis_quit(const char *p, size_t n)
{
	static const char resp[] = "*1\r\n$4\r\n";

	if (n == sizeof(resp) - 1 + 6 &&
	    memcmp(p, resp, sizeof(resp) - 1) == 0) {
		p += sizeof(resp) - 1;
		return strncasecmp(p, "QUIT", 4) == 0 && p[4] == '\r' &&
		       p[5] == '\n';
	}
	if (n == 6 && strncasecmp(p, "QUIT", 4) == 0)
		return p[4] == '\r' && p[5] == '\n';
	return n == 5 && strncasecmp(p, "QUIT", 4) == 0 && p[4] == '\n';
}

static bool postgres_terminate(const char *p, size_t n)
{
	return n == 5 && memcmp(p, "X\0\0\0\4", 5) == 0;
}

/* Out of line: callers ask agile__has_goodbye first, inline. */
__attribute__((noinline))
bool agile__goodbye(uint32_t proto, const struct iovec *iov, int count)
{
	char buf[GOODBYE_MAX];
	size_t n;

	if (!agile__has_goodbye(proto))
		return false;
	n = gather(iov, count, buf);
	if (n == 0)
		return false;
	return proto == AGILE_PROTO_REDIS ? redis_quit(buf, n)
	                                  : postgres_terminate(buf, n);
}
