/*
 * resp.h - the Redis serialization protocol (RESP2), both directions, on
 * caller-owned buffers: no allocation, no I/O, so the Check suite drives it
 * with byte strings and the preload with its connection's buffers.
 *
 * Only what the preload sends and receives: commands are arrays of bulk
 * strings; replies are status, error, integer, bulk (or nil) and arrays
 * nested at most AGILE_RESP_DEPTH deep.
 */
#ifndef AGILE_PRELOAD_RESP_H
#define AGILE_PRELOAD_RESP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGILE_RESP_DEPTH 4
/* The longest bulk string or array a reply may declare (64 MiB): past it a
 * reply is malformed, not a reason to wait for more bytes. */
#define AGILE_RESP_LENGTH_MAX (INT64_C(64) << 20)

enum agile_resp_type {
	AGILE_RESP_STATUS = 1, /* +OK */
	AGILE_RESP_ERROR,      /* -ERR ...: text in str/len */
	AGILE_RESP_INTEGER,    /* :42 */
	AGILE_RESP_BULK,       /* $3 abc */
	AGILE_RESP_NIL,        /* $-1 or *-1 */
	AGILE_RESP_ARRAY       /* *N: count elements at element[0..N) */
};

/* One parsed value.  Strings point into the buffer that was parsed, so a
 * reply is valid until that buffer changes. */
struct agile_resp {
	int type;                   /* enum agile_resp_type */
	long long integer;          /* AGILE_RESP_INTEGER */
	const char *str;            /* STATUS, ERROR, BULK: not terminated */
	size_t len;
	size_t count;               /* ARRAY: number of elements */
	struct agile_resp *element; /* ARRAY: its elements, consecutive */
};

/*
 * Append one command (an array of `argc` bulk strings; lens[i] may be
 * (size_t)-1 for a NUL-terminated argv[i]) at buf + *used.  Returns 0, or
 * -ENOSPC (nothing appended) when it does not fit in `cap`.
 */
int agile__resp_command(char *buf, size_t cap, size_t *used, int argc,
                       const char *const *argv, const size_t *lens);

/*
 * Parse one reply from buf[0..len) into nodes[0..cap): nodes[0] is the
 * reply, arrays' elements follow, *nodes_used says how many were taken.
 * Returns the bytes the reply took (> 0), 0 when more bytes are needed,
 * -EPROTO when the bytes are not RESP, or -ENOSPC when the reply has more
 * values than `cap`.
 */
ssize_t agile__resp_parse(const char *buf, size_t len, struct agile_resp *nodes,
                         size_t cap, size_t *nodes_used);

/* Whether a reply is the error `prefix` ("NOSCRIPT", "MOVED", ...). */
int agile__resp_is_error(const struct agile_resp *r, const char *prefix);

/* A BULK, STATUS or INTEGER reply as a number: 0 and *out, or -EINVAL. */
int agile__resp_double(const struct agile_resp *r, double *out);
int agile__resp_int64(const struct agile_resp *r, int64_t *out);

#endif /* AGILE_PRELOAD_RESP_H */
