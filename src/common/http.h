/*
 * http.h - the HTTP/1 reader's classification of a read on a client
 * connection (http.c): interim responses answer no request.  The rest of
 * http.c, which reads a response's status and headers for proto=http, is
 * declared with the preload's resilience adapters (resilience_hook.h), as
 * it fills their fd entry.
 */
#ifndef AGILE_COMMON_HTTP_H
#define AGILE_COMMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "read_verdict.h"

/* Whether data[0, len) is one or more whole HTTP/1.x interim responses
 * (a 1xx status other than 101, headers through the blank line) and
 * nothing else: "HTTP/1.1 100 Continue\r\n\r\n" as a client reads it
 * before it sends a body.  A read that also holds the final response, or
 * cuts an interim one short, is not.  Pure. */
bool agile__http_interim(const void *data, size_t len);

/* The verdict on data[0, len), one read on a plain connection:
 * AGILE_READ_INTERIM when it is interim responses alone, otherwise
 * AGILE_READ_RESPONSE (it may answer a request).  Pure. */
static inline enum agile__read_verdict agile__http_read_verdict(const void *data,
                                                                size_t len)
{
	return agile__http_interim(data, len) ? AGILE_READ_INTERIM
	                                      : AGILE_READ_RESPONSE;
}

#endif /* AGILE_COMMON_HTTP_H */
