/*
 * concurrency_hook.c - concurrency=N and concurrency=adaptive[,law=...]: a
 * cap on the connections to a destination open at once, across every
 * process sharing the state file, and the same permit table behind a
 * listener's adaptive cap (inbound.c).
 *
 * The permit table.  Each slot's region holds AGILE_STATE_PERMITS words; a
 * connection holds one, claimed by a compare-and-swap of 0 to its process's
 * pid and freed by the reverse.  Nothing else is shared, so there is no lock
 * and no counter a crash could leave wrong: a process killed at any instant,
 * even by SIGKILL, leaves only words holding its pid, and a waiter that finds
 * the table full checks those pids with kill(pid, 0) and frees the words of
 * the dead (reclaimed, counted for agilestat).  Admission takes a free word
 * below the live limit, and only while fewer than the limit are held in the
 * whole table: with a fixed cap that is exact; after an adaptive limit
 * shrinks, words above it are still held, and admissions resume once enough
 * of them are released (adaptx's shrink debt).  Two processes racing just
 * after a shrink can each see room and admit one more than the new limit;
 * never more than the old one.
 *
 * A permit belongs to the process that connected.  Descriptors of that
 * process that share the socket (dup, dup2, F_DUPFD) count references to it
 * (permit_refs), and the last close frees it.  A fork child's copies are not
 * the owner's: closing them frees nothing, and the parent's close (or death)
 * does.  A process that execs keeps its pid and its sockets but loses the fd
 * table: its permits are freed when it exits.
 *
 * Waiting, as adaptx's acquire: a blocking connect waits for a permit up to
 * acquire_timeout (default 30 s) and then fails with ETIMEDOUT.  Waiters
 * sleep on a futex in the state file (permit_gen, bumped at every release),
 * woken at once by a release in any process, and at least every 10 ms to
 * look for dead holders.  A non-blocking connect from a thread that already
 * holds a permit does not wait: an event loop, which must read its open
 * connections to close them, would be waiting for itself; it fails with
 * EAGAIN instead.  (Threads are counted, not processes: Python gives every
 * socket with a timeout O_NONBLOCK, and its threads must wait for each
 * other like blocking ones.)
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agile_laws.h"
#include "atomics.h"
#include "clock.h"
#include "resilience_hook.h"
#include "shlock.h"

/* How long a waiter sleeps at most before looking for dead holders. */
#define RECLAIM_PERIOD_NS (10 * AGILE_NS_PER_MS)

/*
 * Permits held per thread of this process, for the event-loop test above:
 * an open-addressed table of thread ids, each with its count, updated with
 * atomics.  A permit records the thread that acquired it (agile_fd's
 * permit_tid), so a release on another thread decrements the right count.
 * When the table is full a thread counts as holding nothing, which only
 * lets it wait.
 */
#define THREADS_MAX 256
static int32_t thread_ids[THREADS_MAX];
static int32_t thread_held[THREADS_MAX];

static int32_t *held_by(int32_t tid, bool create)
{
	uint32_t h = (uint32_t)tid * 2654435761U;

	if (tid <= 0)
		return NULL; /* a listener's permits belong to no thread */
	for (uint32_t k = 0; k < THREADS_MAX; k++) {
		uint32_t i = (h + k) % THREADS_MAX;
		int32_t seen = __atomic_load_n(&thread_ids[i], __ATOMIC_ACQUIRE);

		if (seen == tid)
			return &thread_held[i];
		if (seen != 0)
			continue;
		if (!create)
			return NULL;
		if (__atomic_compare_exchange_n(&thread_ids[i], &seen, tid,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE) || seen == tid)
			return &thread_held[i];
	}
	return NULL;
}

int32_t agile__thread_id(void)
{
	return (int32_t)syscall(SYS_gettid);
}

static bool thread_holds(int32_t tid)
{
	int32_t *held = held_by(tid, false);

	return held != NULL && __atomic_load_n(held, __ATOMIC_ACQUIRE) > 0;
}

static int32_t load_owner(const struct agile_state_resilience *z, uint32_t i)
{
	return __atomic_load_n(&z->permit_owner[i], __ATOMIC_ACQUIRE);
}

int64_t agile__permit_limit(struct agile_state_resilience *z)
{
	int64_t limit;

	switch (z->conc_mode) {
	case AGILE_CONC_FIXED:
		limit = __atomic_load_n(&z->conc_limit, __ATOMIC_ACQUIRE);
		break;
	case AGILE_CONC_ADAPTIVE:
		limit = (int64_t)agile_conc_limit(&z->core);
		break;
	default:
		return 0;
	}
	if (limit < 1)
		limit = 1;
	return limit > AGILE_STATE_PERMITS ? AGILE_STATE_PERMITS : limit;
}

/* Free the words held by processes that no longer exist.  Returns how
 * many were freed. */
static int reclaim_dead(struct agile_state_resilience *z)
{
	uint32_t high = __atomic_load_n(&z->permit_high, __ATOMIC_ACQUIRE);
	int32_t self = (int32_t)getpid();
	int32_t alive = 0, dead = 0; /* the last answers, to spare syscalls */
	int freed = 0;

	for (uint32_t i = 0; i < high && i < AGILE_STATE_PERMITS; i++) {
		int32_t pid = load_owner(z, i);

		if (pid == 0 || pid == self || pid == alive)
			continue;
		if (pid != dead) {
			if (kill(pid, 0) == 0 || errno != ESRCH) {
				alive = pid;
				continue;
			}
			dead = pid;
		}
		if (__atomic_compare_exchange_n(&z->permit_owner[i], &pid, 0,
		                                false, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&z->permit_refs[i], 0,
			                 __ATOMIC_RELEASE);
			agile__add_u64(&z->conc_reclaimed, 1);
			freed++;
		}
	}
	if (freed > 0) {
		__atomic_add_fetch(&z->permit_gen, 1, __ATOMIC_ACQ_REL);
		syscall(SYS_futex, &z->permit_gen, FUTEX_WAKE, INT_MAX, NULL,
		        NULL, 0);
	}
	return freed;
}

/* The core limiter's counters mirror the table, so its law sees the
 * connections in flight as it would have counted them itself. */
static void mirror_core(struct agile_state_resilience *z, int64_t held)
{
	if (z->conc_mode != AGILE_CONC_ADAPTIVE)
		return;
	agile__store_u64(&z->core.in_flight, (uint64_t)held);
	agile__max_u64(&z->core.peak_in_flight, (uint64_t)held);
}

int32_t agile__permit_try(struct agile_state_resilience *z)
{
	int64_t limit = agile__permit_limit(z);
	int32_t self = (int32_t)getpid();
	int64_t held = agile__resilience_permits_held(z);

	if (held >= limit)
		return 0;
	for (uint32_t i = 0; i < (uint32_t)limit; i++) {
		int32_t free_word = 0;
		uint32_t high;

		if (load_owner(z, i) != 0 ||
		    !__atomic_compare_exchange_n(&z->permit_owner[i], &free_word,
		                                 self, false, __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(&z->permit_refs[i], 1, __ATOMIC_RELEASE);
		high = __atomic_load_n(&z->permit_high, __ATOMIC_ACQUIRE);
		while (high < i + 1 &&
		       !__atomic_compare_exchange_n(&z->permit_high, &high, i + 1,
		                                    false, __ATOMIC_ACQ_REL,
		                                    __ATOMIC_ACQUIRE))
			;
		agile__add_u64(&z->conc_admitted, 1);
		mirror_core(z, held + 1);
		return (int32_t)i + 1;
	}
	return 0;
}

static void advance(struct agile_state_resilience *z, int64_t now);

/* A baseline probe ends at its answers or after its ticks, and ticks run
 * at outcomes: with its one request (or connection) slow, a caller that
 * finds no permit while one runs drives the tick, so that it ends on
 * time. */
static bool probe_running(const struct agile_state_resilience *z)
{
	return z->conc_mode == AGILE_CONC_ADAPTIVE &&
	       __atomic_load_n(&z->core.probe.active, __ATOMIC_ACQUIRE);
}

/* When this process last looked for dead holders without waiting. */
static int64_t last_reclaim_ns;

int32_t agile__permit_try_reclaiming(struct agile_state_resilience *z,
                                     int64_t now)
{
	int32_t permit = agile__permit_try(z);
	int64_t last = __atomic_load_n(&last_reclaim_ns, __ATOMIC_ACQUIRE);

	if (permit == 0 && probe_running(z))
		advance(z, now);

	if (permit > 0 || now - last < RECLAIM_PERIOD_NS ||
	    !__atomic_compare_exchange_n(&last_reclaim_ns, &last, now, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return permit;
	return reclaim_dead(z) > 0 ? agile__permit_try(z) : 0;
}

int32_t agile__permit_acquire(struct agile_state_resilience *z,
                              int64_t timeout_ns, bool nonblocking,
                              int32_t tid)
{
	int64_t deadline = agile__now_ns() + (timeout_ns > 0 ? timeout_ns
	                   : AGILE_ACQUIRE_TIMEOUT_DEFAULT_NS);
	bool counted = false;

	for (;;) {
		uint32_t gen = __atomic_load_n(&z->permit_gen, __ATOMIC_ACQUIRE);
		int32_t permit = agile__permit_try(z);
		int64_t now, wait;
		struct timespec ts;
		int busy;

		if (permit > 0) {
			int32_t *held = held_by(tid, true);

			if (held != NULL)
				__atomic_add_fetch(held, 1, __ATOMIC_ACQ_REL);
			return permit;
		}
		if (reclaim_dead(z) > 0)
			continue;
		if (nonblocking && thread_holds(tid))
			return -EAGAIN;
		if (!counted) {
			agile__add_u64(&z->conc_waited, 1);
			counted = true;
		}
		now = agile__now_ns();
		if (now >= deadline) {
			agile__add_u64(&z->conc_timeouts, 1);
			return -ETIMEDOUT;
		}
		/* A probe's end raises the limit and wakes the waiters; this
		 * one goes round. */
		if (probe_running(z)) {
			advance(z, now);
			if (!probe_running(z))
				continue;
		}
		wait = deadline - now;
		if (wait > RECLAIM_PERIOD_NS)
			wait = RECLAIM_PERIOD_NS;
		ts.tv_sec = wait / AGILE_NS_PER_S;
		ts.tv_nsec = wait % AGILE_NS_PER_S;
		/* A release since gen was read makes this return at once;
		 * EINTR and ETIMEDOUT just go round again. */
		busy = agile__busy_suspend(); /* a handler may jump out */
		syscall(SYS_futex, &z->permit_gen, FUTEX_WAIT, gen, &ts, NULL,
		        0);
		agile__busy_resume(busy);
	}
}

void agile__permit_ref(struct agile_state_resilience *z, int32_t permit)
{
	uint32_t i = (uint32_t)permit - 1;

	if (permit <= 0 || i >= AGILE_STATE_PERMITS ||
	    load_owner(z, i) != (int32_t)getpid())
		return;
	__atomic_add_fetch(&z->permit_refs[i], 1, __ATOMIC_ACQ_REL);
}

void agile__permit_release(struct agile_state_resilience *z, int32_t permit,
                           int32_t tid)
{
	uint32_t i = (uint32_t)permit - 1;
	int32_t self = (int32_t)getpid();
	int32_t *held;
	uint16_t refs;

	if (permit <= 0 || i >= AGILE_STATE_PERMITS || load_owner(z, i) != self)
		return; /* not ours: a fork child's copy, or reclaimed */
	refs = __atomic_sub_fetch(&z->permit_refs[i], 1, __ATOMIC_ACQ_REL);
	if (refs != 0 && refs != UINT16_MAX)
		return; /* another descriptor of ours still has the socket */
	__atomic_store_n(&z->permit_refs[i], 0, __ATOMIC_RELEASE);
	if (!__atomic_compare_exchange_n(&z->permit_owner[i], &self, 0, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	held = held_by(tid, false);
	if (held != NULL && __atomic_sub_fetch(held, 1, __ATOMIC_ACQ_REL) < 0)
		__atomic_store_n(held, 0, __ATOMIC_RELEASE);
	mirror_core(z, agile__resilience_permits_held(z));
	__atomic_add_fetch(&z->permit_gen, 1, __ATOMIC_ACQ_REL);
	syscall(SYS_futex, &z->permit_gen, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Run the core limiter's step when it is due, and publish the limit for
 * agilestat. */
static void advance(struct agile_state_resilience *z, int64_t now)
{
	int64_t before = __atomic_load_n(&z->conc_limit, __ATOMIC_ACQUIRE);
	int64_t after;

	/* A windowed law's closing window takes two jitter draws; they cost
	 * a getrandom each, so only then. */
	if (agile_law_due(&z->core.law, now)) {
		struct agile_law_draw draw = { agile__draw(), agile__draw() };

		agile_conc_tick_if_due_jitter(&z->core, now, &draw);
	} else {
		agile_conc_tick_if_due(&z->core, now);
	}
	after = agile__permit_limit(z);
	if (after == before)
		return;
	__atomic_store_n(&z->conc_limit, after, __ATOMIC_RELEASE);
	if (after > before) {
		/* A raised limit is room: wake the waiters. */
		__atomic_add_fetch(&z->permit_gen, 1, __ATOMIC_ACQ_REL);
		syscall(SYS_futex, &z->permit_gen, FUTEX_WAKE, INT_MAX, NULL,
		        NULL, 0);
	}
}

void agile__conc_outcome(struct agile_state_resilience *z,
                         enum agile_call_end outcome, int64_t latency_ns,
                         int64_t now)
{
	if (z->conc_mode != AGILE_CONC_ADAPTIVE)
		return;
	/* An answer that is no sample (proto=http: a cache hit, an excluded
	 * path) says nothing about the limit. */
	if (outcome == AGILE_OUTCOME_ANSWERED && latency_ns <= 0)
		return;
	/* The law reads the calls in flight with this one still among them,
	 * as adaptx's release does: its permit goes back after this. */
	mirror_core(z, agile__resilience_permits_held(z));
	switch (outcome) {
	case AGILE_OUTCOME_ANSWERED:
		agile_conc_observe(&z->core, latency_ns);
		break;
	case AGILE_OUTCOME_TRUNCATED:
		agile_conc_observe_truncated(&z->core, latency_ns);
		break;
	case AGILE_OUTCOME_UNREACHABLE:
		agile_conc_unavailable(&z->core);
		break;
	}
	advance(z, now);
}
