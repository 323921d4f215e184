/*
 * inflight.c - inflight=: a cap on the requests in flight to a destination,
 * held in the send that would start one more.
 *
 * Why.  The rate is set once a tick (1 s by default) from what the tick's
 * answers took; between two ticks nothing bounds how many requests wait at
 * the downstream.  When its capacity drops, the requests that 32
 * kept-alive connections send at the old rate queue there for the ticks
 * the law needs to see the queue and cut (400 ms behind wrk -c32 at 80 a
 * second, bench/RESULTS.md, "Closed loop").  A cap on the requests in
 * flight acts at every answer instead of every tick: with it, a send that
 * would make one too many waits until an answer comes, so the program
 * sends no faster than the downstream answers (TCP's window, BBR's cap of
 * its bandwidth-delay product).  Its size is the law's own, by Little's
 * law: gain x the rate x the tolerated window (agile_rate_inflight_cap),
 * so answers that take the window at the rate the law set fit under it,
 * and a queue beyond that does not build.
 *
 * What is counted.  A request takes a place when its first send is about
 * to go (after the wait for a place, before the wait for its grant, so the
 * grant is planned from when the request can go) and gives it back when
 * its answer begins: when the program reads the first byte of it, or when
 * a wait in this process (for a grant, for a place) sees its socket become
 * readable, which an event loop stalled in one socket's send cannot read
 * meanwhile (wait.c; without that, ab and wrk, single threads that hold
 * every connection, would wait for themselves).  A request that ends
 * without one (truncated, its socket closed) gives it back there.  A send
 * that fails or sends nothing gives it back at once.  HTTP/2 streams are
 * not counted (the connection's readiness cannot say which stream was
 * answered); nor pace=connect's requests, which take no grant either.
 *
 * Each process counts its own requests: a place is taken and given back on
 * every request, and a count in the state file that a killed process left
 * high would hold every other process at its cap for good.  Processes that
 * share a state file share the rate, and each caps its own requests at the
 * shared rate's size, so together they keep at most that many times the
 * cap in flight.
 *
 * Never a hang.  The wait for a place is bounded by one tick of the
 * destination: a downstream that takes longer than a tick to answer more
 * than the cap's requests is one the law is already cutting, and the
 * request then goes (counted in `overruns`).  A signal's handler ends the
 * wait as it ends a wait for a grant (wait.c, interrupt_reported).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agile.h"
#include "clock.h"
#include "destinations.h"
#include "track_internal.h"

/*
 * One destination's places, in this process: a ticket queue, so that the
 * places go in the order the requests asked for them.  (A first version
 * let every waiter race for a freed place: with 16 threads behind a cap of
 * 4, one lost for longer than a tick and went over the cap.)  Each request
 * takes a ticket; ticket T may go once T < released + cap, and every ticket
 * is released exactly once, by its request's end or, when it never goes
 * (its wait interrupted), at once.  A ticket that never went takes a
 * number no request in flight holds, so the requests in flight, tickets
 * gone and not yet released, are never more than the cap, whatever order
 * the waiters wake in and however the cap moves.
 *
 * A place that is never given back (its socket closed where no hook saw
 * it) would hold a place for good, and at the cap every later request
 * would wait its tick.  So a wait that reaches the tick starts a new epoch:
 * the places taken before it no longer count (their releases are ignored),
 * the requests waiting go, and the count starts again from what is taken
 * after.  A downstream slower than a tick gets the same (the law cuts its
 * rate meanwhile); one lost place costs one tick of one request, once.
 */
struct room {
	uint64_t tickets;  /* tickets handed out */
	uint64_t released; /* tickets given back */
	uint32_t epoch;    /* bumped when a wait reaches its tick */
	uint32_t seq;      /* bumped at every release: the futex word */
	uint32_t waiters;  /* threads asleep on seq */
	uint32_t pad;
	uint64_t overruns; /* waits that reached their tick */
};
static struct room rooms[AGILE_RULES_MAX];

/* How long a waiter with sockets to watch sleeps before looking at the
 * count again (another thread's release wakes only futex sleepers). */
#define WATCH_RECHECK_NS AGILE_NS_PER_MS

/* A place, as an fd holds it: its epoch and its destination + 1. */
static uint64_t place_of(int dest, uint32_t epoch)
{
	return (uint64_t)epoch << 32 | (uint32_t)(dest + 1);
}

static void wake(struct room *room)
{
	__atomic_add_fetch(&room->seq, 1, __ATOMIC_ACQ_REL);
	if (__atomic_load_n(&room->waiters, __ATOMIC_ACQUIRE) != 0)
		(void)syscall(SYS_futex, &room->seq, FUTEX_WAKE_PRIVATE,
		              INT_MAX, NULL, NULL, 0);
}

/* Give back a ticket of `epoch` (nothing once a new one began). */
static void give_back(struct room *room, uint32_t epoch)
{
	if (__atomic_load_n(&room->epoch, __ATOMIC_ACQUIRE) != epoch)
		return;
	__atomic_add_fetch(&room->released, 1, __ATOMIC_ACQ_REL);
	wake(room);
}

void agile__inflight_release(struct agile_fd *t)
{
	uint64_t place = __atomic_exchange_n(&t->inflight_place, 0,
	                                     __ATOMIC_ACQ_REL);
	uint32_t dest1 = (uint32_t)place;

	if (dest1 == 0 || dest1 > AGILE_RULES_MAX)
		return;
	give_back(&rooms[dest1 - 1], (uint32_t)(place >> 32));
}

/* A wait reached its tick: the places taken so far no longer count. */
static void new_epoch(struct room *room, uint32_t seen)
{
	if (!__atomic_compare_exchange_n(&room->epoch, &seen, seen + 1, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return; /* another waiter began it */
	__atomic_store_n(&room->released,
	                 __atomic_load_n(&room->tickets, __ATOMIC_ACQUIRE),
	                 __ATOMIC_RELEASE);
	__atomic_add_fetch(&room->overruns, 1, __ATOMIC_RELAXED);
	wake(room);
}

uint64_t agile__inflight_cap(const struct agile_fd *t)
{
	double gain;

	if (load8(&t->http2) ||
	    __atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE) != 0 ||
	    agile__destinations_pace(t->dest) != AGILE_PACE_REQUEST)
		return 0;
	gain = agile__rule_inflight_gain(agile__destinations_rule(t->dest));
	if (gain <= 0)
		return 0;
	return agile_rate_inflight_cap(&slot_of(t)->limiter, gain);
}

uint32_t agile__inflight_held(int dest)
{
	uint64_t out = __atomic_load_n(&rooms[dest].tickets, __ATOMIC_ACQUIRE) -
	               __atomic_load_n(&rooms[dest].released, __ATOMIC_ACQUIRE);

	return out > UINT32_MAX ? UINT32_MAX : (uint32_t)out;
}

uint64_t agile__inflight_overruns(int dest)
{
	return __atomic_load_n(&rooms[dest].overruns, __ATOMIC_RELAXED);
}

struct enter_arg {
	struct room *room;
	uint64_t ticket;
	uint64_t cap;
	uint32_t epoch;
};

/* May the ticket go: its turn came, or a new epoch let every waiter go. */
static bool may_go(const struct enter_arg *a)
{
	return __atomic_load_n(&a->room->epoch, __ATOMIC_ACQUIRE) != a->epoch ||
	       a->ticket < __atomic_load_n(&a->room->released,
	                                   __ATOMIC_ACQUIRE) + a->cap;
}

static bool enter_cb(void *arg)
{
	return may_go(arg);
}

/* Sleep on seq until a release, `until` at most. */
static int sleep_cb(void *arg, int64_t now, int64_t until)
{
	struct enter_arg *a = arg;
	struct room *room = a->room;
	uint32_t seen = __atomic_load_n(&room->seq, __ATOMIC_ACQUIRE);
	struct timespec timeout = {
		.tv_sec = (until - now) / AGILE_NS_PER_S,
		.tv_nsec = (until - now) % AGILE_NS_PER_S,
	};
	long rc;
	int error;

	/* A release between the caller's look and the load of seq: the
	 * ticket may go now. */
	if (may_go(a))
		return -1;
	__atomic_add_fetch(&room->waiters, 1, __ATOMIC_ACQ_REL);
	rc = syscall(SYS_futex, &room->seq, FUTEX_WAIT_PRIVATE, seen, &timeout,
	             NULL, 0);
	error = rc < 0 ? errno : 0;
	__atomic_sub_fetch(&room->waiters, 1, __ATOMIC_ACQ_REL);
	return error == EINTR ? EINTR : 0;
}

bool agile__inflight_enter(struct agile_fd *t, int64_t now, bool *interrupted)
{
	struct enter_arg arg;
	bool waited = false;
	uint32_t epoch;
	int rc;

	*interrupted = false;
	if (__atomic_load_n(&t->inflight_place, __ATOMIC_ACQUIRE) != 0)
		return false; /* this request holds its place already */
	arg.cap = agile__inflight_cap(t);
	if (arg.cap == 0)
		return false;
	arg.room = &rooms[t->dest];
	arg.epoch = __atomic_load_n(&arg.room->epoch, __ATOMIC_ACQUIRE);
	arg.ticket = __atomic_fetch_add(&arg.room->tickets, 1,
	                                __ATOMIC_ACQ_REL);
	if (!may_go(&arg)) {
		waited = true;
		rc = agile__track_wait_room(
			now + agile__destination[t->dest].config.tick_ns,
			fd_of(t), enter_cb, sleep_cb, &arg, WATCH_RECHECK_NS);
		if (rc < 0) {
			/* Never went: its ticket is given back at once. */
			give_back(arg.room, arg.epoch);
			*interrupted = true;
			return true;
		}
		if (rc == 0)
			new_epoch(arg.room, arg.epoch);
	}
	/* A request let go by a new epoch holds a place of that one: its
	 * ticket was counted as given back when the epoch began. */
	epoch = __atomic_load_n(&arg.room->epoch, __ATOMIC_ACQUIRE);
	if (epoch == arg.epoch)
		__atomic_store_n(&t->inflight_place, place_of(t->dest, epoch),
		                 __ATOMIC_RELEASE);
	return waited;
}
