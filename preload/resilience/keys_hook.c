/*
 * keys_hook.c - key_rate=R[,burst=B] (and keys=N) on a CIDR or * rule: one
 * bucket per destination address, from libagile's per-key table
 * (agile_keyed.h), so that every host of 10.0.0.0/8:443 gets R connects a
 * second of its own while the rule's limiter paces them all together.
 *
 * The table is process-local (it allocates, and it is not shared memory):
 * each process keeps its own buckets, which is the ratelimiting seed's
 * in-memory limiter.  It holds at most keys= addresses (default 100,000);
 * idle ones are reclaimed after twice their refill window and the least
 * recently seen is evicted beyond the bound.  The evictions of every process
 * are added to the slot's counters, which agilestat shows: a growing
 * capacity count says the bound is too low for the traffic.
 *
 * Over its rate an address is refused with ECONNREFUSED, or, with over=wait,
 * waits as the table's retry-after hint says.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include "agile_keyed.h"
#include "atomics.h"
#include "clock.h"
#include "process.h"
#include "resilience_hook.h"

/* One rule's keys: its table, created at its first connect, and the
 * counts last published to its slot. */
struct keyed_dest {
	struct agile_keyed *table;
	struct agile_keyed_stats published;
};

/* keys_lock serialises the calls on every table (a table is not
 * synchronised) and guards keyed_dests; held for microseconds, never while
 * a caller waits. */
static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static struct keyed_dest keyed_dests[AGILE_RULES_MAX];

/* Held across fork() (forklist.c lists every lock in its order). */
void agile__keys_atfork_prepare(void)
{
	pthread_mutex_lock(&keys_lock);
}

void agile__keys_atfork_release(void)
{
	pthread_mutex_unlock(&keys_lock);
}

static struct agile_keyed *table_for(int dest,
                                     const struct agile_resilience_config *c,
                                     int64_t now)
{
	struct agile_keyed_config kc;

	if (keyed_dests[dest].table != NULL)
		return keyed_dests[dest].table;
	agile_keyed_config_init(&kc);
	kc.rate_per_s = c->key_rate;
	kc.burst = c->key_burst;
	if (c->keys > 0)
		kc.max_keys = c->keys;
	if (getrandom(kc.hash_key, sizeof(kc.hash_key), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(kc.hash_key))
		kc.hash_key[0] = (uint64_t)now;
	if (agile_keyed_create(&kc, now, &keyed_dests[dest].table) < 0)
		keyed_dests[dest].table = NULL;
	return keyed_dests[dest].table;
}

/* Add what this process's table did since the last call to the slot. */
static void publish(int dest, struct agile_state_resilience *z)
{
	struct agile_keyed_stats st;
	struct agile_keyed_stats *old = &keyed_dests[dest].published;

	agile_keyed_stats(keyed_dests[dest].table, &st);
	agile__add_u64(&z->key_idle_evictions,
	               st.idle_evictions - old->idle_evictions);
	agile__add_u64(&z->key_capacity_evictions,
	               st.capacity_evictions - old->capacity_evictions);
	agile__add_u64(&z->key_refused, st.rejected - old->rejected);
	agile__store_u64(&z->keys_held, st.keys);
	*old = st;
}

/* The address part of a socket address, IPv4 as IPv4-mapped IPv6. */
static bool address_key(const struct sockaddr *addr, socklen_t len,
                        uint8_t key[16])
{
	if (addr->sa_family == AF_INET &&
	    len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memset(key, 0, 10);
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)
		                   addr)->sin_addr, 4);
		return true;
	}
	if (addr->sa_family == AF_INET6 &&
	    len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)
		              addr)->sin6_addr, 16);
		return true;
	}
	return false;
}

int agile__keys_admit(int dest, struct agile_state_resilience *z,
                      const struct agile_resilience_config *c,
                      const struct sockaddr *addr, socklen_t len)
{
	uint8_t key[16];

	if (!address_key(addr, len, key))
		return 0;
	for (;;) {
		int64_t now = agile__now_ns();
		int64_t wait = 0;
		struct agile_keyed *k;
		bool allowed = true;

		pthread_mutex_lock(&keys_lock);
		k = table_for(dest, c, now);
		if (k != NULL &&
		    agile_keyed_allow(k, key, sizeof(key), now, &allowed) == 0 &&
		    !allowed && (!agile_keyed_retry_after(k, key, sizeof(key),
		                                          now, &wait) ||
		                 wait <= 0))
			wait = AGILE_NS_PER_MS;
		if (k != NULL)
			publish(dest, z);
		pthread_mutex_unlock(&keys_lock);
		/* No table (no memory): the rule's limiter still applies. */
		if (allowed)
			return 0;
		if (c->over != AGILE_OVER_WAIT)
			return -ECONNREFUSED;
		agile__sleep_until(now + wait);
	}
}
