/*
 * clock.h - the preload's clock: CLOCK_MONOTONIC in nanoseconds, the time
 * base of every limiter in the state file.  CLOCK_MONOTONIC is one clock for
 * the whole machine, so processes sharing a bucket agree on "now"; the state
 * file records the boot it belongs to because the clock restarts at boot.
 */
#ifndef AGILE_PRELOAD_CLOCK_H
#define AGILE_PRELOAD_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "agile.h"
#include "symbols.h"

static inline int64_t agile__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

/* Wall-clock time, only for the history's timestamps. */
static inline int64_t agile__unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

/*
 * Sleep until the monotonic time `when_ns`; errno is untouched.
 *
 * A signal that interrupts the wait has its handler run by the kernel, and
 * the wait then resumes, like a restartable call.  This is the wait the
 * resilience settings add inside connect() (retry's back-off, the waits of
 * key_rate and of over=wait): a blocking connect() that fails with EINTR
 * goes on in the kernel, and the program then polls for its end, which
 * the preload could only give by starting the connection it is holding
 * back.  A send's wait for its grant may instead fail with EINTR, as a
 * blocking send the kernel held would, when the handler asks for it
 * (wait.c, interrupt_reported).  A handler may also leave the wait for good with
 * siglongjmp, which is why the re-entrancy guard is down meanwhile
 * (agile__busy_suspend).
 */
static inline void agile__sleep_until(int64_t when_ns)
{
	struct timespec ts = {
		.tv_sec = when_ns / AGILE_NS_PER_S,
		.tv_nsec = when_ns % AGILE_NS_PER_S,
	};
	int busy = agile__busy_suspend(); /* a handler may jump out */

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
	agile__busy_resume(busy);
}

#endif /* AGILE_PRELOAD_CLOCK_H */
