/*
 * fleet_internal.h - what the files of preload/fleet/ share: the fleet's
 * tunables, one destination's per-process state, the small helpers every
 * path uses (the pid lock, the Redis turn), and each file's entry points
 * for the others.
 *
 *   fleet.c           the configuration (AGILE_REDIS), the fleet file and
 *                     each destination's setup
 *   fleet_lease.c     leases of fleet slots, their round trips, admission
 *   fleet_fallback.c  the local budget while Redis is away
 *   fleet_adaptive.c  fleet=adaptive: the fleet-wide control step
 *   redis_client.c    the connection to Redis (redis_client.h)
 */
#ifndef AGILE_PRELOAD_FLEET_INTERNAL_H
#define AGILE_PRELOAD_FLEET_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "clock.h"
#include "fleet.h"
#include "fleet_state.h"
#include "redis_client.h"

/* A lease is sized to last this long at the host's current rate. */
#define LEASE_SPAN_NS (100 * AGILE_NS_PER_MS)
/* How far ahead the fleet bucket may be reserved (LEASE's horizon): the
 * longest a call waits in a queue for its fleet slot before its host is
 * told to come back later. */
#define HORIZON_NS AGILE_NS_PER_S
/* Fleet slots not used this long after the last of them are void. */
#define LEASE_GRACE_NS (2 * LEASE_SPAN_NS)
/* Below this many slots per lease, leases are fetched when the last slot
 * is gone rather than ahead of time: a prefetched lease of one or two
 * slots would mostly expire before a slow caller used it. */
#define PREFETCH_MIN_SLOTS 4
/* In fallback, Redis is tried again this often. */
#define PROBE_INTERVAL_NS (500 * AGILE_NS_PER_MS)
/* A host silent this long is no longer counted live. */
#define HEARTBEAT_NS (3 * AGILE_NS_PER_S)
/* Poll interval of a caller waiting for another process's round trip. */
#define TURN_POLL_NS (100 * AGILE_NS_PER_US)
/* An asynchronous lease keeps the turn this many round trips (and at least
 * ASYNC_HOLD_MIN_NS, at most redis_timeout): long enough for a reply to
 * arrive and a busy process to call again, short enough that a process
 * that stops calling strands the others for no longer than that. */
#define ASYNC_HOLD_RTTS 4
#define ASYNC_HOLD_MIN_NS (10 * AGILE_NS_PER_MS)
/* A process fetches asynchronously only when it makes at least this many
 * calls per LEASE_SPAN itself (100 a second), so its next call is near. */
#define ASYNC_MIN_CALLS 10
/* Smoothing of the demand estimate that sizes leases. */
#define DEMAND_TAU_S 0.5
/* The published fleet controller outlives this many ticks of silence. */
#define FLEET_TTL_TICKS 300
/* A shared window's member is used at most this long after the time it
 * was scored with (its fleet slot's, or the grant's): a lease's span and
 * its grace. */
#define WINDOW_VALIDITY_NS (LEASE_SPAN_NS + LEASE_GRACE_NS)

/* The key names of one destination: "{agile:NAME}:tat" and so on. */
enum { KEY_TAT, KEY_WINDOW, KEY_HOSTS, KEY_FLEET, KEY_HIST, KEY_STEP,
       KEY_COUNT };

/* One destination, in this process. */
struct fleet_dest {
	int ready;                        /* 0 not set up, 1 fleet, -1 none */
	const struct agile_rule *rule;
	struct agile_state_slot *slot;
	struct agile_fleet_record *rec;
	struct agile_resolved fleet_config; /* adaptive: the fleet's bounds */
	uint64_t ctl_tag;
	struct agile_redis conn;
	int32_t io_owner;                 /* pid lock: one thread on conn */
	int64_t rtt_ns;                   /* the last round trip's time */
	/* This process's asynchronous LEASE, if any (fetch_async). */
	int32_t pending_pid;              /* the process that sent it; 0 none */
	uint64_t pending_turn;            /* the turn it holds meanwhile */
	int64_t pending_send_ns;
	int64_t pending_deadline;
	uint64_t pending_number;          /* the lease number it will be */
	/* This process's own calls per 100 ms, to tell whether it calls often
	 * enough to collect an asynchronous lease in time. */
	int64_t proc_window_ns;
	uint64_t proc_count, proc_last;
	char key[KEY_COUNT][AGILE_RULE_NAME_MAX + 16];
};

/* Where Redis is ("HOST:PORT", for messages and agilestat) and this host's
 * id in the fleet (the fleet file's, or one of this process's own): set
 * before any destination is set up, read only after (fleet.c). */
extern char agile__fleet_redis_text[64];
extern char agile__fleet_host_id[AGILE_FLEET_HOST_ID_MAX];

/* Destination `dest`'s fleet state, set up on first use; NULL when it has
 * no fleet settings (fleet.c). */
struct fleet_dest *agile__fleet_dest(int dest);
/* The fleet destination whose slot is `s`, if it is adaptive (fleet.c). */
struct fleet_dest *agile__fleet_adaptive_of(struct agile_state_slot *s);

/* The local budget while Redis is away (fleet_fallback.c). */
int64_t agile__fleet_fallback_take(struct fleet_dest *f, int64_t now);
/* A round trip failed: go to the fallback budget at once (one log line
 * per host per outage), or stay there until the next probe. */
void agile__fleet_redis_failed(struct fleet_dest *f, int64_t now);
/* A round trip succeeded: back on the fleet budget if in fallback. */
void agile__fleet_redis_answered(struct fleet_dest *f);

/* Run a script within the deadline and count the round trips; collect the
 * lease this process fetched asynchronously, waiting for it or not
 * (fleet_lease.c). */
int agile__fleet_eval(struct fleet_dest *f, int script, int nkeys,
                      const char **keys, int nargs, const char **args,
                      const size_t *lens, const struct agile_resp **reply,
                      int64_t deadline);
void agile__fleet_collect_lease(struct fleet_dest *f, bool wait);

/*
 * A process-local lock that a fork child never inherits held: the word is
 * the owner's pid, and a child finding its parent's pid there (the owner
 * thread does not exist in the child) takes it over.  setup_owner is held
 * for microseconds; scratch_owner and a destination's io_owner for one
 * round trip at most, which redis_timeout bounds.
 */
static inline bool pid_lock_try(int32_t *word)
{
	int32_t self = (int32_t)getpid();
	int32_t cur = 0;

	if (__atomic_compare_exchange_n(word, &cur, self, false,
	                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return true;
	return cur != self &&
	       __atomic_compare_exchange_n(word, &cur, self, false,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void pid_lock(int32_t *word)
{
	struct timespec ts = { 0, 20000 };

	while (!pid_lock_try(word))
		nanosleep(&ts, NULL);
}

static inline void pid_unlock(int32_t *word)
{
	__atomic_store_n(word, 0, __ATOMIC_RELEASE);
}

static inline void nap(int64_t ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* "12.500000" whatever LC_NUMERIC the host program chose: snprintf's %f
 * would write "12,500000" under a German locale, which Lua cannot read. */
static inline void format_decimal(char *buf, size_t len, double v)
{
	long long micro = llround((v < 0 ? -v : v) * 1e6);

	snprintf(buf, len, "%s%lld.%06lld", v < 0 ? "-" : "", micro / 1000000,
	         micro % 1000000);
}

static inline int64_t timeout_of(const struct fleet_dest *f)
{
	return agile_fleet_timeout_ns(&f->rule->fleet);
}

/*
 * The Redis turn (fleet.c's opening comment): only the process holding a
 * destination's turn talks to Redis for it.
 */
static inline uint64_t turn_word(int64_t until_ns)
{
	return ((uint64_t)(until_ns / AGILE_NS_PER_MS + 1)
	        << AGILE_FLEET_TURN_PID_BITS) |
	       ((uint64_t)getpid() & ((1u << AGILE_FLEET_TURN_PID_BITS) - 1));
}

/* Claim the turn for one round trip from now; the word claimed, or 0. */
static inline uint64_t turn_claim(struct fleet_dest *f, int64_t now)
{
	uint64_t cur = agile__load_u64(&f->rec->turn);
	uint64_t mine;

	if (cur != 0 &&
	    (int64_t)(cur >> AGILE_FLEET_TURN_PID_BITS) * AGILE_NS_PER_MS > now)
		return 0;
	/* Two timeouts: a publish may follow a flush in one turn. */
	mine = turn_word(now + 2 * timeout_of(f) + 10 * AGILE_NS_PER_MS);
	return agile__cas_u64(&f->rec->turn, &cur, mine) ? mine : 0;
}

static inline bool turn_held(struct fleet_dest *f, uint64_t mine)
{
	return agile__load_u64(&f->rec->turn) == mine;
}

static inline void turn_release(struct fleet_dest *f, uint64_t mine)
{
	agile__cas_u64(&f->rec->turn, &mine, 0);
}

#endif /* AGILE_PRELOAD_FLEET_INTERNAL_H */
