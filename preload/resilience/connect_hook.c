/*
 * connect_hook.c - connect_timeout=DURATION and retry=N for blocking
 * connects.
 *
 * connect_timeout bounds how long a blocking connect may take: the socket is
 * made non-blocking for the attempt, its completion awaited with poll(2) for
 * at most the timeout (signals resume the wait, as the pacing wait does),
 * and its flags restored; past the timeout the connect fails with ETIMEDOUT.
 * The system's own timeout (minutes, for a host that drops SYNs) still
 * applies when it is shorter.
 *
 * retry=N retries a connect refused (ECONNREFUSED, as a server restarting
 * refuses) up to N more times on the same socket, waiting between attempts
 * as libagile's backoff preset says, unless retry_base=, retry_cap=,
 * retry_factor= or retry_jitter= say otherwise: ceilings of 100 ms, 200 ms,
 * 400 ms ... up to 1 s, each drawn within 20% of its ceiling (the jitter
 * keeps clients refused together from retrying together).  Each attempt gets the whole
 * connect_timeout.  The program sees the last attempt's result, and the
 * destination counts one connection, unreachable once if every attempt was
 * refused.
 *
 * A non-blocking connect is the program's to time and retry: it is passed
 * through unchanged.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#include "agile_resilience.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "resilience_hook.h"
#include "shlock.h"
#include "symbols.h"

/*
 * One attempt bounded by timeout_ns; errno set on failure.
 *
 * The result is collected by a second connect(), as a blocking connect
 * collects it, not read with getsockopt(SO_ERROR): Linux keeps a socket
 * whose failure SO_ERROR reported "connecting", and answers the next
 * connect() on it with ECONNABORTED instead of trying again.  retry= got
 * that ECONNABORTED for its second attempt and handed it to the program,
 * which a refused blocking connect never sees, as did a program
 * connecting the socket again itself.
 */
static int connect_bounded(int fd, const struct sockaddr *addr, socklen_t len,
                           int flags, int64_t timeout_ns)
{
	int64_t deadline = agile__now_ns() + timeout_ns;
	int rc, error = 0;

	if (agile__libc.fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
		return agile__libc.connect(fd, addr, len);
	rc = agile__libc.connect(fd, addr, len);
	if (rc == 0 || errno != EINPROGRESS) {
		error = rc == 0 ? 0 : errno;
		agile__libc.fcntl(fd, F_SETFL, flags);
		errno = error;
		return rc;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - agile__now_ns();
		int n;

		if (left <= 0) {
			agile__libc.fcntl(fd, F_SETFL, flags);
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(&p, 1, (int)((left + AGILE_NS_PER_MS - 1) /
		                      AGILE_NS_PER_MS));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue; /* timed out: the loop says so */
		/* Still non-blocking: EALREADY if the attempt is somehow
		 * still under way, and the wait goes on. */
		rc = agile__libc.connect(fd, addr, len);
		error = rc == 0 ? 0 : errno;
		if (error == EALREADY)
			continue;
		break;
	}
	agile__libc.fcntl(fd, F_SETFL, flags);
	if (error == EISCONN)
		return 0;
	errno = error;
	return error == 0 ? 0 : -1;
}

int agile__resilience_connect(int fd, const struct sockaddr *addr,
                              socklen_t len, int dest)
{
	const struct agile_resilience_config *c =
		&agile__destinations_rule(dest)->resilience;
	struct agile_backoff backoff;
	struct agile_state_slot *s;
	int64_t previous = 0;
	int flags, rc;

	if (c->connect_timeout_ns <= 0 && c->retry <= 0)
		return agile__libc.connect(fd, addr, len);
	flags = agile__libc.fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_NONBLOCK))
		return agile__libc.connect(fd, addr, len);
	s = agile__destinations_slot(dest);
	agile__resilience_backoff(c, &backoff);
	for (int32_t made = 1;; made++) {
		int error;
		int64_t wait;

		rc = c->connect_timeout_ns > 0
		     ? connect_bounded(fd, addr, len, flags,
		                       c->connect_timeout_ns)
		     : agile__libc.connect(fd, addr, len);
		error = errno;
		if (rc == 0)
			return 0;
		if (error == ETIMEDOUT)
			agile__add_u64(&s->resilience.connect_timeouts, 1);
		if (error != ECONNREFUSED || !agile_backoff_more(&backoff, made)) {
			errno = error;
			return rc;
		}
		wait = agile_backoff_delay(&backoff, made, agile__draw(),
		                           previous);
		previous = wait;
		agile__add_u64(&s->resilience.connect_retries, 1);
		agile__sleep_until(agile__now_ns() + wait);
	}
}
