/*
 * http.c - proto=http: what the preload learns from the plaintext HTTP/1.x
 * it already sees, without any change to the program (the seed's HTTP
 * adapters and verdicts).
 *
 * Only the first bytes of a request and of a response are read: the ones
 * the send or receive that starts or ends the request carries, which for
 * ordinary clients and servers hold the request line, or the status line and
 * the headers.  A header that arrives in a later read, or that the read
 * cuts short (its line is not ended by CRLF), is not seen; a response
 * whose first read is not a status line (TLS, HTTP/2, a pipelined body) is
 * an ordinary sample.  Nothing is buffered or copied.
 *
 * Outbound verdicts (agile__http_response):
 *   429 or 503   the downstream turned the work away: recorded as
 *                unreachable, never as a fast sample; with a Retry-After
 *                of N seconds the destination's bucket is paused N seconds
 *                (its next grant is planned no earlier), across every
 *                process sharing it.  An HTTP-date Retry-After is ignored.
 *   other 5xx    a sample, and a failure for breaker=sre.
 *   cache hit    X-Cache: HIT (or any value containing HIT), or an Age
 *                header above 0: the response did not come from the
 *                downstream's work, so it is not a sample.
 *   excluded     a request whose path is in exclude= (itself, or below it,
 *                or with a query) is not a sample.
 * Inbound (inbound.c) uses agile__http_status and agile__http_request.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "atomics.h"
#include "internal.h"
#include "resilience_hook.h"

/* The end of the headers (or of the data, if they are cut short). */
static size_t header_end(const char *p, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++)
		if (memcmp(p + i, "\r\n\r\n", 4) == 0)
			return i + 2;
	return len;
}

/* The value of header `name` in p[0, len), or NULL; *vlen its length. */
static const char *header_value(const char *p, size_t len, const char *name,
                                size_t *vlen)
{
	size_t nlen = strlen(name);
	size_t i = 0;

	/* Skip the start line. */
	while (i + 1 < len && !(p[i] == '\r' && p[i + 1] == '\n'))
		i++;
	while (i + 2 + nlen < len) {
		const char *line = p + i + 2;
		size_t rest = len - i - 2;
		size_t eol = 0;

		while (eol + 1 < rest && !(line[eol] == '\r' &&
		                           line[eol + 1] == '\n'))
			eol++;
		/* A line the read cut short is not read: its value may be
		 * cut too (the "Retry-After: 1" of a 17). */
		if (eol + 1 >= rest)
			return NULL;
		if (eol > nlen && line[nlen] == ':' &&
		    strncasecmp(line, name, nlen) == 0) {
			const char *v = line + nlen + 1;
			size_t n = eol - nlen - 1;

			while (n > 0 && (*v == ' ' || *v == '\t')) {
				v++;
				n--;
			}
			while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			*vlen = n;
			return v;
		}
		i += 2 + eol;
	}
	return NULL;
}

/* A whole number of seconds, or -1. */
static int64_t seconds_value(const char *v, size_t n)
{
	int64_t s = 0;

	if (v == NULL || n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -1;
		s = s * 10 + (v[i] - '0');
	}
	return s;
}

int agile__http_status(const void *data, size_t len)
{
	const char *p = data;
	int status = 0;

	if (p == NULL || len < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    p[8] != ' ')
		return 0;
	for (int i = 9; i < 12; i++) {
		if (!isdigit((unsigned char)p[i]))
			return 0;
		status = status * 10 + (p[i] - '0');
	}
	return status >= 100 && status <= 599 ? status : 0;
}

/* Whether the request line's path is one of the excluded ones. */
static bool excluded(const struct agile_resilience_config *c, const char *p,
                     size_t len)
{
	const char *sp = memchr(p, ' ', len < 16 ? len : 16);
	const char *path, *end;

	if (sp == NULL || sp == p)
		return false;
	path = sp + 1;
	end = memchr(path, ' ', len - (size_t)(path - p));
	if (end == NULL)
		end = p + len;
	for (uint32_t i = 0; i < c->exclude_count; i++) {
		size_t n = strlen(c->exclude[i]);

		if ((size_t)(end - path) >= n &&
		    memcmp(path, c->exclude[i], n) == 0 &&
		    (path + n == end || path[n] == '?' || path[n] == '/' ||
		     c->exclude[i][n - 1] == '/'))
			return true;
	}
	return false;
}

void agile__http_request(struct agile_fd *t,
                         const struct agile_resilience_config *c,
                         const void *data, size_t len)
{
	if (c->exclude_count == 0 || data == NULL || len == 0)
		return;
	if (excluded(c, data, len))
		__atomic_fetch_or(&t->flags, AGILE_FD_EXCLUDED,
		                  __ATOMIC_ACQ_REL);
	else
		__atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_EXCLUDED,
		                   __ATOMIC_ACQ_REL);
}

/* Plan the bucket's next grant no earlier than until_ns.  The bucket spaces
 * grants from its last planned one (agile.h), so moving that forward to one
 * interval before until_ns pauses it, for every process, and the grants
 * after the pause keep their spacing instead of arriving in a burst. */
static void pause_bucket(struct agile_state_slot *s, int64_t until_ns)
{
	struct agile_bucket *b = &s->limiter.bucket;
	/* Saturating: another process may have left garbage in the spacing,
	 * which the next grant's check repairs (destinations.c). */
	int64_t want = agile__sub_sat(until_ns,
	                              agile__load_i64(&b->interval_ns));
	int64_t last = agile__load_i64(&b->last_ns);
	int64_t until = agile__load_i64(&s->resilience.paused_until_ns);

	while (last < want && !agile__cas_i64(&b->last_ns, &last, want))
		;
	while (until < until_ns &&
	       !agile__cas_i64(&s->resilience.paused_until_ns, &until,
	                       until_ns))
		;
}

enum agile_http_verdict agile__http_response(struct agile_fd *t,
                                             struct agile_state_slot *s,
                                             const void *data, size_t len,
                                             int64_t now_ns)
{
	struct agile_state_resilience *z = &s->resilience;
	uint8_t flags = __atomic_fetch_and(&t->flags,
	                                   (uint8_t)~AGILE_FD_EXCLUDED,
	                                   __ATOMIC_ACQ_REL);
	int status = agile__http_status(data, len);
	size_t head, vlen = 0;
	const char *v;

	if (flags & AGILE_FD_EXCLUDED) {
		agile__add_u64(&z->http_excluded, 1);
		return AGILE_HTTP_SKIP;
	}
	if (status == 0)
		return AGILE_HTTP_SAMPLE;
	head = header_end(data, len);
	if (status == 429 || status == 503) {
		int64_t seconds;

		v = header_value(data, head, "Retry-After", &vlen);
		seconds = seconds_value(v, vlen);
		if (seconds > 0) {
			pause_bucket(s, now_ns + seconds * AGILE_NS_PER_S);
			agile__add_u64(&z->http_pauses, 1);
		}
		return AGILE_HTTP_REFUSED;
	}
	v = header_value(data, head, "X-Cache", &vlen);
	if (v != NULL && vlen >= 3) {
		for (size_t i = 0; i + 3 <= vlen; i++)
			if (strncasecmp(v + i, "HIT", 3) == 0) {
				agile__add_u64(&z->http_cache_hits, 1);
				return AGILE_HTTP_SKIP;
			}
	}
	v = header_value(data, head, "Age", &vlen);
	if (seconds_value(v, vlen) > 0) {
		agile__add_u64(&z->http_cache_hits, 1);
		return AGILE_HTTP_SKIP;
	}
	return status >= 500 ? AGILE_HTTP_FAILED : AGILE_HTTP_SAMPLE;
}
