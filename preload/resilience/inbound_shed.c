/*
 * inbound_shed.c - turning a connection or a request away for a listener
 * rule (inbound.c): the minimal HTTP/1.1 answer of shed_response=, and the
 * ring of answered connections that linger before their close.
 *
 * A shed connection is answered the moment it is accepted, usually before
 * its request has arrived.  Closing it then would make the request, when it
 * comes, draw a reset that can destroy the answer unread (ab sees nothing
 * at all); so an answered connection lingers: its write side is shut, and
 * it is closed 500 ms later, or when 256 others linger, by whichever
 * accept comes next, its request read and dropped first.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>

#include "atomics.h"
#include "http2.h"
#include "inbound.h"
#include "inbound_internal.h"
#include "process.h"
#include "symbols.h"

#define LINGER_NS (500 * AGILE_NS_PER_MS)
#define LINGER_MAX 256

/* Answered shed connections waiting to be closed, oldest first in a ring;
 * the lock is held for a few recv and close calls at most, never while
 * waiting, and across fork() (forklist.c lists every lock in its order). */
static struct {
	int fd;
	int64_t since_ns;
} lingering[LINGER_MAX];
static unsigned int linger_first, linger_count;
static pthread_mutex_t linger_lock = PTHREAD_MUTEX_INITIALIZER;

void agile__inbound_atfork_prepare(void)
{
	pthread_mutex_lock(&linger_lock);
}

void agile__inbound_atfork_release(void)
{
	pthread_mutex_unlock(&linger_lock);
}

static void drain_and_close(int fd)
{
	char buf[4096];

	while (agile__libc.recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	agile__libc.close(fd);
}

/* Close the lingering connections that have waited long enough (all of
 * them when `all`); then, when `fd` >= 0, add it. */
static void linger(int fd, int64_t now)
{
	pthread_mutex_lock(&linger_lock);
	while (linger_count > 0 &&
	       (now - lingering[linger_first].since_ns >= LINGER_NS ||
	        (fd >= 0 && linger_count == LINGER_MAX))) {
		drain_and_close(lingering[linger_first].fd);
		linger_first = (linger_first + 1) % LINGER_MAX;
		linger_count--;
	}
	if (fd >= 0) {
		unsigned int i = (linger_first + linger_count) % LINGER_MAX;

		lingering[i].fd = fd;
		lingering[i].since_ns = now;
		linger_count++;
	}
	pthread_mutex_unlock(&linger_lock);
}

/* Close the lingering connections that have waited long enough.  The
 * count is read without the lock: a connection added meanwhile waits for
 * the next accept. */
void agile__inbound_linger_expire(int64_t now)
{
	if (linger_count > 0)
		linger(-1, now);
}

static const char *reason(int status)
{
	switch (status) {
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* The minimal answer of `status` into head[0, size): its length.  A
 * Retry-After of retry_ns, in whole seconds (agile__retry_after_s), unless
 * that says none. */
static int answer(char *head, size_t size, int status, int64_t retry_ns,
                  bool close)
{
	long long retry_s = agile__retry_after_s(retry_ns);
	int n = snprintf(head, size, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n%s",
	                 status, reason(status),
	                 close ? "Connection: close\r\n" : "");

	if (retry_s >= 0)
		n += snprintf(head + n, size - (size_t)n, "Retry-After: %lld\r\n",
		              retry_s);
	n += snprintf(head + n, size - (size_t)n, "\r\n");
	return n;
}

/* Turn a connection away: answer it with `status` (0: not at all), a
 * Retry-After of retry_ns (agile__retry_after_s), then close it. */
void agile__inbound_shed(int fd, int status, int64_t retry_ns, int64_t now)
{
	if (status > 0) {
		char head[256];
		int n = answer(head, sizeof(head), status, retry_ns, true);

		(void)agile__libc.send(fd, head, (size_t)n,
		                       MSG_DONTWAIT | MSG_NOSIGNAL);
		/* Say "that was all", and close later (see above). */
		agile__libc.shutdown(fd, SHUT_WR);
		linger(fd, now);
		return;
	}
	agile__libc.close(fd);
}

/* Answer a request read on `t` that gets no permit, in place of the
 * program.  p[0, n) is what the read returned (n of `result` bytes in its
 * first buffer).  The connection is kept when the whole request, and
 * nothing more, was in that read and neither side asked for a close: the
 * program then never sees it.  Otherwise the answer says "Connection:
 * close", the write side is shut and the program reads an end of file
 * (what is left of the request is drained at its close, so that no reset
 * destroys the answer unread). */
void agile__inbound_shed_request(struct agile_fd *t, const char *p, size_t n,
                                 ssize_t result, int status,
                                 int64_t retry_ns)
{
	struct agile_http_frame f;
	int fd = fd_of(t);
	bool keep;
	char head[256];
	int len;
	ssize_t sent = -1;

	agile__http_frame(p, n, false, &f);
	keep = status > 0 && f.head_len > 0 && !f.close && f.body >= 0 &&
	       (size_t)result == n && f.head_len + (size_t)f.body == n;
	if (status > 0) {
		len = answer(head, sizeof(head), status, retry_ns, !keep);
		sent = agile__libc.send(fd, head, (size_t)len,
		                        MSG_DONTWAIT | MSG_NOSIGNAL);
		/* An answer the socket could not take whole ends the
		 * connection: a client must never read half of one. */
		keep = keep && sent == len;
	}
	if (!keep) {
		agile__libc.shutdown(fd, SHUT_WR);
		__atomic_store_n(&t->inbound_drain, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&t->inbound_shed,
	                 keep ? AGILE_INBOUND_AGAIN : AGILE_INBOUND_END,
	                 __ATOMIC_RELEASE);
}
