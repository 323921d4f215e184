/*
 * shlock.h - the preload's two small helpers for shared resilience state: a
 * spin lock in the state file that survives its holder's death, and random
 * draws for the pure primitives that take them.
 *
 * The lock word holds the holder's pid (struct agile_state_lock).  Critical
 * sections are a few hundred nanoseconds of arithmetic on a breaker, quota
 * or window, and never wait or call out, so spinning (with sched_yield after
 * a few rounds) costs less than any sleeping lock.  A process killed inside a
 * section would leave the word set forever; so a waiter that has spun for a
 * millisecond checks the holder with kill(pid, 0) and, when it is gone,
 * takes the lock over with a compare-and-swap.  A holder that is alive but
 * has kept the word for half a second is taken over too: no section lasts
 * that long, so it is stopped (SIGSTOP, a debugger), or it is not the
 * holder at all but a new process given a dead holder's recycled pid, and
 * waiting for either would stall every connect to the destination.  The
 * data the new holder then finds may be half updated — one count in a
 * breaker bucket, a quota counter — which costs one miscounted call, never
 * a stall.  Threads of one process share the pid, which is fine: the word
 * is a mutex, not an owner check.
 *
 * Draws come from getrandom(2), one syscall per draw: the breaker draws once
 * per connect, and a process-local generator would need reseeding at every
 * fork to keep parent and child from rolling the same dice.
 */
#ifndef AGILE_PRELOAD_SHLOCK_H
#define AGILE_PRELOAD_SHLOCK_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "resilience.h"

/* How long one holder may keep a lock before a waiter takes it over even
 * though the holder's pid is alive (see above): far beyond any section and
 * any scheduling delay (a CPU quota's throttling lasts up to its 100 ms
 * period), and within the 1 s tick. */
#define AGILE_SHLOCK_STALE_NS (500 * AGILE_NS_PER_MS)

static inline void agile__shlock(struct agile_state_lock *l)
{
	int32_t self = (int32_t)getpid();
	int32_t holder = 0;
	int64_t since = 0;

	for (unsigned int spins = 0;; spins++) {
		int32_t seen = 0;
		int64_t held;

		if (__atomic_compare_exchange_n(&l->pid, &seen, self, false,
		                                __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return;
		if (spins < 64)
			continue;
		sched_yield();
		if (seen != holder || since == 0) {
			/* A new holder: time it from now. */
			holder = seen;
			since = agile__now_ns();
			continue;
		}
		held = agile__now_ns() - since;
		if ((held > AGILE_NS_PER_MS && seen != self &&
		     kill(seen, 0) != 0 && errno == ESRCH) ||
		    held > AGILE_SHLOCK_STALE_NS) {
			/* The holder died inside its section, or is stopped,
			 * or its pid is now another process's. */
			if (__atomic_compare_exchange_n(&l->pid, &seen, self,
			                                false, __ATOMIC_ACQUIRE,
			                                __ATOMIC_RELAXED))
				return;
			since = 0;
		}
	}
}

static inline void agile__shunlock(struct agile_state_lock *l)
{
	__atomic_store_n(&l->pid, 0, __ATOMIC_RELEASE);
}

/* A uniform draw in [0, 1); errno untouched. */
static inline double agile__draw(void)
{
	int saved = errno;
	uint64_t bits = 0;

	if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits))
		bits = (uint64_t)agile__now_ns() * UINT64_C(0x9E3779B97F4A7C15);
	errno = saved;
	return (double)(bits >> 11) * 0x1.0p-53;
}

#endif /* AGILE_PRELOAD_SHLOCK_H */
