/*
 * goodbye.c - proto=redis, postgres, mysql and memcached: the message a
 * client sends to end its session, which is not a request.
 *
 * A redis client's QUIT is answered +OK and the connection closed, and so
 * is a binary memcached QUIT; a PostgreSQL client's Terminate, a MySQL or
 * MariaDB client's COM_QUIT and memcached's text quit are not answered at
 * all.  Taken for requests they would wait for a grant (a goodbye costs
 * the downstream nothing worth pacing), and an unanswered one would be
 * recorded as truncated at the close, a failure for breaker=sre; an
 * answered one would be a sample.  So a send on a destination declared to
 * speak one of these protocols that holds exactly that protocol's goodbye,
 * and nothing else, neither waits nor starts a request (track.c).  Nothing
 * is guessed on an undeclared destination: five bytes that happen to spell
 * a Terminate may be a request of another protocol, which would then go
 * out unpaced.
 *
 * What is recognised, in one send (its iovecs gathered):
 *   redis      QUIT as RESP, "*1\r\n$4\r\nQUIT\r\n", or inline, "QUIT\r\n"
 *              or "QUIT\n"; the name in any case, as redis reads it.
 *   postgres   Terminate: 'X' and the length 4, big-endian.
 *   mysql      COM_QUIT: a packet of length 1 (three bytes, little-endian),
 *              sequence number 0, command 0x01, as the mariadb and mysql
 *              clients, mysqlslap and libmariadb send it at close.
 *   memcached  the text protocol's "quit\r\n" or "quit\n" (lower case, as
 *              memcached reads it), and the binary protocol's QUIT and
 *              QUITQ: a 24-byte request header (magic 0x80) with no key,
 *              extras or body.
 * A goodbye written together with a command (pipelined), split over
 * several sends, or sent inside TLS (or compressed, for MySQL) is not
 * seen, and is paced and counted as before.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "goodbye.h"

/* The longest goodbye (memcached's binary QUIT): anything longer is no
 * goodbye and is not gathered. */
#define GOODBYE_MAX 24

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

static bool mysql_quit(const char *p, size_t n)
{
	return n == 5 && memcmp(p, "\1\0\0\0\1", 5) == 0;
}

/* Binary protocol header: magic, opcode, key length (2), extras length,
 * data type, vbucket (2), body length (4), opaque (4), CAS (8). */
#define MEMCACHED_MAGIC_REQUEST 0x80
#define MEMCACHED_QUIT 0x07
#define MEMCACHED_QUITQ 0x17

static bool memcached_quit(const char *p, size_t n)
{
	static const char zeros[4];
	const unsigned char *b = (const unsigned char *)p;

	if (n == 24)
		return b[0] == MEMCACHED_MAGIC_REQUEST &&
		       (b[1] == MEMCACHED_QUIT || b[1] == MEMCACHED_QUITQ) &&
		       memcmp(p + 2, zeros, 3) == 0 && /* key, extras */
		       memcmp(p + 8, zeros, 4) == 0;   /* body */
	return (n == 6 && memcmp(p, "quit\r\n", 6) == 0) ||
	       (n == 5 && memcmp(p, "quit\n", 5) == 0);
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
	switch (proto) {
	case AGILE_PROTO_REDIS: return redis_quit(buf, n);
	case AGILE_PROTO_POSTGRES: return postgres_terminate(buf, n);
	case AGILE_PROTO_MYSQL: return mysql_quit(buf, n);
	default: return memcached_quit(buf, n);
	}
}
