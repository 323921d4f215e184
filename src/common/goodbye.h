/*
 * goodbye.h - the goodbye messages of proto=redis, postgres, mysql and
 * memcached (goodbye.c), which neither wait for a grant nor start a
 * request.
 */
#ifndef AGILE_PRELOAD_GOODBYE_H
#define AGILE_PRELOAD_GOODBYE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "resilience.h"

/* Whether iov[0, count), the bytes of one send, are exactly the goodbye of
 * proto (enum agile_proto): redis's QUIT, PostgreSQL's Terminate, MySQL's
 * COM_QUIT or memcached's quit.  False for every other protocol, and for
 * anything more or less than the goodbye.  Pure: reads only the bytes
 * given. */
bool agile__goodbye(uint32_t proto, const struct iovec *iov, int count);

/* Whether proto has a goodbye at all: callers on every send ask this
 * first, inline, so the other protocols pay a comparison. */
static inline bool agile__has_goodbye(uint32_t proto)
{
	return proto >= AGILE_PROTO_REDIS && proto <= AGILE_PROTO_MEMCACHED;
}

/* The proto= word of a protocol with a goodbye, for messages. */
static inline const char *agile__goodbye_proto_name(uint32_t proto)
{
	switch (proto) {
	case AGILE_PROTO_REDIS: return "redis";
	case AGILE_PROTO_POSTGRES: return "postgres";
	case AGILE_PROTO_MYSQL: return "mysql";
	case AGILE_PROTO_MEMCACHED: return "memcached";
	default: return "none";
	}
}

#endif /* AGILE_PRELOAD_GOODBYE_H */
