/*
 * clients.c - per-client token buckets in shared memory (agile_clients.h):
 * a hash of entries linked by index, in the order of their last allow.
 *
 * Every index read from the table is checked before it is followed
 * (entry()), and every walk is bounded by the capacity: a table that fails
 * either, garbled by another process or a torn write, is cleared and
 * counted (resets), and the call goes on against the empty table.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <string.h>

#include "agile_clients.h"
#include "agile_keyed.h"

int agile_clients_init(struct agile_client_table *t, double rate_per_s,
                       double burst, uint32_t capacity,
                       const uint64_t hash_key[2])
{
	double interval;

	if (!(rate_per_s > 0) || !isfinite(rate_per_s) || !(burst >= 0) ||
	    !isfinite(burst) || capacity < 1 || capacity > AGILE_CLIENTS_MAX)
		return -EINVAL;
	if (burst == 0)
		burst = rate_per_s;
	if (burst < 1)
		burst = 1;
	interval = 1e9 / rate_per_s;
	if (interval < 1 || interval > 1e17 || burst > 1e9)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->rate_per_s = rate_per_s;
	t->burst = burst;
	t->interval_ns = (int64_t)interval;
	t->tolerance_ns = (int64_t)((burst - 1) * interval);
	t->idle_ns = (int64_t)(2 * burst * interval);
	t->hash_key[0] = hash_key[0];
	t->hash_key[1] = hash_key[1];
	t->capacity = capacity;
	return 0;
}

uint64_t agile_clients_key(const struct agile_client_table *t,
                           const void *data, size_t len)
{
	return agile_siphash24(t->hash_key, data, len);
}

/* Entry `i` (index + 1), or NULL when i is 0 or out of range. */
static struct agile_client_entry *entry(struct agile_client_table *t,
                                        uint32_t i)
{
	return i >= 1 && i <= t->capacity ? &t->entries[i - 1] : NULL;
}

static uint32_t bucket_of(uint64_t key)
{
	return (uint32_t)(key % AGILE_CLIENTS_MAX);
}

/* Forget every key, keeping the settings and the counters. */
static void reset(struct agile_client_table *t)
{
	t->count = 0;
	t->newest = t->oldest = 0;
	t->unused = 0;
	t->free_list = 0;
	memset(t->heads, 0, sizeof(t->heads));
	memset(t->entries, 0, sizeof(t->entries));
	t->resets++;
}

/* Take entry i (in use) out of the order; false when its links are
 * garbled. */
static bool unlink_order(struct agile_client_table *t, uint32_t i)
{
	struct agile_client_entry *e = entry(t, i);
	struct agile_client_entry *older = entry(t, e->older);
	struct agile_client_entry *newer = entry(t, e->newer);

	if ((e->older != 0 && older == NULL) || (e->newer != 0 && newer == NULL))
		return false;
	if (older != NULL)
		older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (newer != NULL)
		newer->older = e->older;
	else
		t->newest = e->older;
	e->older = e->newer = 0;
	return true;
}

/* Make entry i the newest. */
static void push_newest(struct agile_client_table *t, uint32_t i)
{
	struct agile_client_entry *e = entry(t, i);
	struct agile_client_entry *newest = entry(t, t->newest);

	e->older = t->newest;
	e->newer = 0;
	if (newest != NULL)
		newest->newer = i;
	else
		t->oldest = i;
	t->newest = i;
}

/* Remove entry i, in use, from its hash chain and the order, and free
 * it; false when the table is garbled. */
static bool drop(struct agile_client_table *t, uint32_t i)
{
	struct agile_client_entry *e = entry(t, i);
	uint32_t *link = &t->heads[bucket_of(e->key)];

	for (uint32_t steps = 0; *link != i; steps++) {
		struct agile_client_entry *c = entry(t, *link);

		if (c == NULL || steps > t->capacity)
			return false;
		link = &c->chain;
	}
	*link = e->chain;
	if (!unlink_order(t, i))
		return false;
	memset(e, 0, sizeof(*e));
	e->older = t->free_list;
	t->free_list = i;
	t->count--;
	return true;
}

/* The entry holding `key`, 0 when none; UINT32_MAX when the chain is
 * garbled. */
static uint32_t find(struct agile_client_table *t, uint64_t key)
{
	uint32_t i = t->heads[bucket_of(key)];

	for (uint32_t steps = 0; i != 0; steps++) {
		struct agile_client_entry *e = entry(t, i);

		if (e == NULL || !e->used || steps > t->capacity)
			return UINT32_MAX;
		if (e->key == key)
			return i;
		i = e->chain;
	}
	return 0;
}

/* A free entry for a new key, evicting the least recently seen one when
 * the bound is reached; 0 when the table is garbled. */
static uint32_t take_free(struct agile_client_table *t)
{
	uint32_t i;

	if (t->count >= t->capacity) {
		if (entry(t, t->oldest) == NULL || !drop(t, t->oldest))
			return 0;
		t->capacity_evictions++;
	}
	i = t->free_list;
	if (i != 0) {
		struct agile_client_entry *e = entry(t, i);

		if (e == NULL || e->used)
			return 0;
		t->free_list = e->older;
		e->older = 0;
		return i;
	}
	if (t->unused >= t->capacity)
		return 0;
	return ++t->unused;
}

/* Drop up to two keys idle for two refill windows, oldest first. */
static bool sweep(struct agile_client_table *t, int64_t now)
{
	for (int n = 0; n < 2; n++) {
		struct agile_client_entry *e = entry(t, t->oldest);

		if (e == NULL)
			return t->oldest == 0;
		if (now - e->seen_ns < t->idle_ns)
			return true;
		if (!drop(t, t->oldest))
			return false;
		t->idle_evictions++;
	}
	return true;
}

/* The call on entry i (holding its key) at now: spend or refuse. */
static bool spend(struct agile_client_table *t, uint32_t i, int64_t now,
                  int64_t *retry_ns)
{
	struct agile_client_entry *e = entry(t, i);
	int64_t tat = e->tat_ns > now ? e->tat_ns : now;

	if (tat - now > t->tolerance_ns) {
		*retry_ns = tat - t->tolerance_ns - now;
		t->refused++;
		return false;
	}
	e->tat_ns = tat + t->interval_ns;
	e->seen_ns = now;
	if (t->newest != i) {
		unlink_order(t, i);
		push_newest(t, i);
	}
	t->allowed++;
	return true;
}

bool agile_clients_allow(struct agile_client_table *t, uint64_t key,
                         int64_t now_ns, int64_t *retry_ns)
{
	uint32_t i;

	*retry_ns = 0;
	if (t->capacity < 1 || t->capacity > AGILE_CLIENTS_MAX ||
	    t->interval_ns <= 0)
		return true;
	if (t->count > t->capacity || t->unused > t->capacity ||
	    !sweep(t, now_ns))
		reset(t);
	i = find(t, key);
	if (i == UINT32_MAX) {
		reset(t);
		i = 0;
	}
	if (i != 0 && now_ns - t->entries[i - 1].seen_ns >= t->idle_ns) {
		/* Idle for two windows but not yet swept: afresh. */
		t->entries[i - 1].tat_ns = now_ns;
	}
	if (i == 0) {
		struct agile_client_entry *e;

		i = take_free(t);
		if (i == 0) {
			reset(t);
			i = take_free(t);
		}
		e = entry(t, i);
		e->key = key;
		e->tat_ns = now_ns;
		e->seen_ns = now_ns;
		e->used = 1;
		e->chain = t->heads[bucket_of(key)];
		t->heads[bucket_of(key)] = i;
		push_newest(t, i);
		t->count++;
	}
	return spend(t, i, now_ns, retry_ns);
}

/* The first `bits` bits of src[0, n) into dst, the rest zero. */
static void masked(uint8_t *dst, const uint8_t *src, size_t n, int bits)
{
	for (size_t i = 0; i < n; i++) {
		int keep = bits - (int)i * 8;

		dst[i] = keep >= 8 ? src[i] : keep <= 0 ? 0
		         : (uint8_t)(src[i] & (0xff << (8 - keep)));
	}
}

size_t agile_clients_address(int prefix_bits, const struct sockaddr *addr,
                             socklen_t len,
                             uint8_t out[AGILE_CLIENTS_ADDRESS_MAX])
{
	int bits = prefix_bits > 0 ? prefix_bits : AGILE_CLIENTS_PREFIX_DEFAULT;

	if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)addr;

		out[0] = 4;
		masked(out + 1, (const uint8_t *)&in->sin_addr, 4,
		       bits < 32 ? bits : 32);
		return 5;
	}
	if (addr->sa_family == AF_INET6 &&
	    len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)addr;

		/* An IPv4 client of a dual-stack listener is that IPv4
		 * address. */
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			out[0] = 4;
			masked(out + 1, in6->sin6_addr.s6_addr + 12, 4,
			       bits < 32 ? bits : 32);
			return 5;
		}
		out[0] = 6;
		masked(out + 1, in6->sin6_addr.s6_addr, 16, bits);
		return 17;
	}
	return 0;
}
