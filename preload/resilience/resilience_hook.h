/*
 * resilience_hook.h - the resilience features at run time: what track/ calls
 * around a matched socket's connect, responses and close, and what the
 * feature files (concurrency_hook.c, breaker_hook.c, quota_hook.c,
 * keys_hook.c, connect_hook.c, http.c, inbound.c) offer each other.
 *
 * Each call keeps errno as it found it.  A destination without resilience
 * settings costs one test per call (agile__resilience_any on its rule).
 */
#ifndef AGILE_PRELOAD_RESILIENCE_HOOK_H
#define AGILE_PRELOAD_RESILIENCE_HOOK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fdtable.h"
#include "http.h" /* agile__http_interim */
#include "resilience.h"
#include "rules.h"
#include "state.h"

/* How one call on a matched socket ended, for the breaker and the adaptive
 * concurrency laws. */
enum agile_call_end {
	AGILE_OUTCOME_ANSWERED = 0, /* a response arrived */
	AGILE_OUTCOME_TRUNCATED,    /* cut short before any response */
	AGILE_OUTCOME_UNREACHABLE   /* refused, unreachable, timed out */
};

/* What proto=http made of a response (http.c). */
enum agile_http_verdict {
	AGILE_HTTP_SAMPLE = 0, /* an ordinary response: a round-trip sample */
	AGILE_HTTP_SKIP,       /* answered, but not a sample: a cache hit or
	                          an excluded path */
	AGILE_HTTP_REFUSED,    /* 429 or 503: the downstream turned the work
	                          away; unreachable, never a fast sample */
	AGILE_HTTP_FAILED,     /* another 5xx: a sample, and a failure for the
	                          breaker */
	AGILE_HTTP_TRUNCATED   /* gRPC DEADLINE_EXCEEDED: the call gave up,
	                          its round trip is a lower bound */
};

/* ---- called from preload/track/ ---------------------------------------- */

/* What an admitted connect holds until its socket closes. */
struct agile_admission {
	int32_t permit;    /* concurrency permit (index + 1), 0 none */
	int32_t permit_tid; /* the thread that acquired it */
	bool breaker_open; /* a breaker call to settle */
};

/*
 * Ask every configured gate whether this connect may go ahead: the breaker
 * (refuses at once), the quota and sliding window, the per-address keys
 * (refuse, or wait with over=wait), and the
 * concurrency cap (waits up to acquire_timeout).  Returns 0 with *adm
 * filled, or the negative errno the connect must fail with: ECONNREFUSED,
 * ETIMEDOUT or EAGAIN.  Nothing is held after a refusal.
 */
int agile__resilience_admit(int fd, int dest, struct agile_state_slot *s,
                            const struct sockaddr *addr, socklen_t len,
                            struct agile_admission *adm);

/* The real connect, with connect_timeout and retry= applied to a blocking
 * socket (connect_hook.c); a plain libc connect otherwise. */
int agile__resilience_connect(int fd, const struct sockaddr *addr,
                              socklen_t len, int dest);

/* The socket's call ended: settle its breaker call, feed the adaptive
 * concurrency law, and on a failed connect give its permit back. */
void agile__resilience_outcome(struct agile_fd *t, struct agile_state_slot *s,
                               enum agile_call_end outcome, int64_t latency_ns,
                               int64_t now_ns);

/* The socket is closed (or reconnected elsewhere): settle an open breaker
 * call (a success when the connection was made) and release its permit. */
void agile__resilience_close(struct agile_fd *t);

/* newfd now shares oldfd's socket: count the permit's new reference. */
void agile__resilience_dup(struct agile_fd *from, struct agile_fd *to);

/* close_range/closefrom is about to forget [first, last]. */
void agile__resilience_forget_range(unsigned int first, unsigned int last);

/* ---- concurrency_hook.c ------------------------------------------------- */

int64_t agile__permit_limit(struct agile_state_resilience *z);
/* A permit (index + 1) if one is free below the limit now, else 0. */
int32_t agile__permit_try(struct agile_state_resilience *z);
/* The same, but when none is free, free the permits of dead holders first
 * (at most once per 10 ms per process) and try again: for callers that
 * never wait, such as a listener's accept. */
int32_t agile__permit_try_reclaiming(struct agile_state_resilience *z,
                                     int64_t now_ns);
/* Wait for a permit for thread `tid`: index + 1, or -ETIMEDOUT, or -EAGAIN
 * (see the file). */
int32_t agile__permit_acquire(struct agile_state_resilience *z,
                              int64_t timeout_ns, bool nonblocking,
                              int32_t tid);
void agile__permit_ref(struct agile_state_resilience *z, int32_t permit);
/* Release a reference; `tid` is the thread that acquired the permit. */
void agile__permit_release(struct agile_state_resilience *z, int32_t permit,
                           int32_t tid);
/* The calling thread's id (gettid). */
int32_t agile__thread_id(void);
void agile__conc_outcome(struct agile_state_resilience *z,
                         enum agile_call_end outcome, int64_t latency_ns,
                         int64_t now_ns);

/* ---- breaker_hook.c ----------------------------------------------------- */

/* True admits the call (to be settled once); false refuses it. */
bool agile__breaker_allow(struct agile_state_resilience *z, int64_t now_ns);
void agile__breaker_settle(struct agile_state_resilience *z, bool success,
                           int64_t now_ns);

/* ---- quota_hook.c ------------------------------------------------------- */

/* quota= and window=: 0, or -ECONNREFUSED over the limit (with over=wait,
 * 0 after waiting for room). */
int agile__quota_admit(struct agile_state_resilience *z,
                       const struct agile_resilience_config *c);

/* ---- keys_hook.c -------------------------------------------------------- */

/* key_rate= on a CIDR or * rule: 0, or -ECONNREFUSED. */
int agile__keys_admit(int dest, struct agile_state_resilience *z,
                      const struct agile_resilience_config *c,
                      const struct sockaddr *addr, socklen_t len);

/* ---- http.c ------------------------------------------------------------- */

/* The first bytes of a request were sent (outbound) or read (inbound):
 * mark it excluded when its path is in exclude=, and not otherwise (also
 * when data[0, len) is empty). */
void agile__http_request(struct agile_fd *t,
                         const struct agile_resilience_config *c,
                         const void *data, size_t len);
/* The first bytes of a response were read (outbound): its verdict; a 429 or
 * 503 with Retry-After also pauses the destination's bucket.  now_ns is the
 * preload's clock (clock.h), unix_ns the wall clock, which an HTTP-date
 * Retry-After is measured against. */
/* The verdict on a response's status (HTTP/1 or HTTP/2) by the rule's
 * lists: overload= (429 and 503 by default) refused, pausing the bucket
 * for retry_after[0, retry_len) when it is a Retry-After; unreachable=
 * refused; ignore= skipped; another 5xx failed, the rest a sample. */
enum agile_http_verdict agile__http_status_verdict(struct agile_state_slot *s,
                                                   const struct agile_resilience_config *c,
                                                   int status,
                                                   const char *retry_after,
                                                   size_t retry_len,
                                                   int64_t now_ns,
                                                   int64_t unix_ns);

/* The verdict on an HTTP/2 stream's first response header block, decoded
 * (h2hpack.h): grpc-status UNAVAILABLE and RESOURCE_EXHAUSTED refused,
 * DEADLINE_EXCEEDED truncated; then :status as above, a cache hit skipped. */
struct agile_h2_fields;
enum agile_http_verdict agile__http_h2_verdict(struct agile_state_slot *s,
                                               const struct agile_resilience_config *c,
                                               const struct agile_h2_fields *f,
                                               int64_t now_ns,
                                               int64_t unix_ns);

/* Whether path[0, len) (an HTTP/2 request's :path) is excluded=. */
bool agile__http_path_excluded(const struct agile_resilience_config *c,
                               const char *path, size_t len);

enum agile_http_verdict agile__http_response(struct agile_fd *t,
                                             const struct agile_resilience_config *c,
                                             struct agile_state_slot *s,
                                             const void *data, size_t len,
                                             int64_t now_ns, int64_t unix_ns);
/* The seconds since the epoch of the HTTP-date v[0, n) (RFC 9110 5.6.7:
 * IMF-fixdate, or the obsolete RFC 850 and asctime forms, exactly as the
 * grammar spells them, day name included and right), or -1.  unix_s, the
 * wall clock in seconds, places an RFC 850 date's two-digit year. */
int64_t agile__http_date_s(const char *v, size_t n, int64_t unix_s);
/* The pause, in nanoseconds, that the Retry-After value v[0, n) asks for
 * at wall-clock time unix_ns: its delta-seconds, or the time left until
 * its HTTP-date; 0 for none, for a date already past, for anything else,
 * and for a pause longer than 999,999,999 seconds.  Pure. */
int64_t agile__http_retry_after_ns(const char *v, size_t n, int64_t unix_ns);
/* The status code of a response's first bytes, or 0 when they are not an
 * HTTP/1.x status line. */
int agile__http_status(const void *data, size_t len);

/* Whether the response head that starts p[0, len) says it is a cache hit
 * by the rule's cache_hit= headers (X-Cache and Age by default). */
bool agile__http_cache_hit(const struct agile_resilience_config *c,
                           const void *data, size_t len);

/* The framing of an HTTP/1 message whose head starts p[0, len)
 * (agile__http_frame): what a listener with proto=http needs to know when
 * a request ends, to answer it itself, and when its response is complete. */
#define AGILE_HTTP_CHUNKED (-1)  /* body: chunked */
#define AGILE_HTTP_TO_CLOSE (-2) /* body: until the connection closes, or
                                    a framing no reader can find */
struct agile_http_frame {
	size_t head_len;     /* start line and headers with the empty line;
	                        0: the head is not all in p[0, len) */
	int64_t body;        /* the body's length, or one of the above */
	int status;          /* a response's status; 0 for a request */
	bool close;          /* the connection ends with this message
	                        (Connection: close, or HTTP/1.0 without
	                        keep-alive) */
	bool head_method;    /* a request: HEAD, whose response has no body */
	bool options_method; /* a request: OPTIONS */
};
void agile__http_frame(const void *data, size_t len, bool response,
                       struct agile_http_frame *f);
/* The value of header `name` (case aside) in the head that starts p[0,
 * len), its length in *vlen; NULL when the head does not hold it whole. */
const char *agile__http_header(const void *data, size_t len, const char *name,
                               size_t *vlen);

/* ---- clients_hook.c ------------------------------------------------------ */

/* A shed answer's retry_ns that says "Retry-After: 0" (0 says none). */
#define AGILE__RETRY_NOW INT64_C(-1)

/* The whole seconds a Retry-After says for retry_ns: rounded up when it is
 * > 0, 0 for AGILE__RETRY_NOW, -1 (no header) for 0. */
static inline long long agile__retry_after_s(int64_t retry_ns)
{
	if (retry_ns == AGILE__RETRY_NOW)
		return 0;
	return retry_ns > 0 ? (long long)((retry_ns + AGILE_NS_PER_S - 1) /
	                                  AGILE_NS_PER_S)
	                    : -1;
}

/* A listener's client_rate=: whether the client named by key[0, len) (its
 * masked address, or a header's value) may make a request at now_ns, from
 * the slot's shared table; refused, *retry_ns is the Retry-After to answer
 * with (agile__retry_after_s: clients_hook.c says which).  Sets the table
 * up at its first use. */
bool agile__clients_admit(struct agile_state_resilience *z,
                          const struct agile_resilience_config *c,
                          const void *key, size_t len, int64_t now_ns,
                          int64_t *retry_ns);
/* The bytes that name the peer at `addr` under client_prefix=
 * (agile_clients_address); their count, 0 for another family. */
size_t agile__clients_address(const struct agile_resilience_config *c,
                              const struct sockaddr *addr, socklen_t len,
                              uint8_t out[AGILE_CLIENTS_ADDRESS_MAX]);

#endif /* AGILE_PRELOAD_RESILIENCE_HOOK_H */
