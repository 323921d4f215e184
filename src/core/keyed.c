/*
 * keyed.c - the per-key limiter table: a token bucket per key, found through
 * an open-addressing hash table and ordered by a least-recently-seen list.
 *
 * Layout.  Entries live in one growable array and are named by their index,
 * which never changes while the entry is in use; freed entries go on a free
 * list threaded through `older`.  The hash table is an array of entry
 * indices probed linearly, kept at most half full, and deletes shift the
 * following run back (Knuth's algorithm R) instead of leaving tombstones, so
 * probe lengths do not grow as keys churn.  Because the table holds indices,
 * shifting it never disturbs the recency list, whose links are indices too.
 *
 * Costs.  allow is O(1) expected: one probe sequence, a list splice, and at
 * most sweep_per_call entries examined by the sweep.  The arrays grow by
 * doubling and keep their high-water size; a reclaimed key's bytes are
 * freed at once.
 *
 * Hashing.  Keys are chosen by clients, so the hash is SipHash-2-4 under a
 * key the caller draws: without it, colliding keys could be precomputed and
 * every probe made to walk the whole table.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agile_keyed.h"
#include "agile_resilience.h"
#include "resilience_internal.h"

#define NONE UINT32_MAX
#define MIN_SLOTS 16u
/* Indices are uint32_t, with NONE reserved; the slot array is a power of
 * two at least twice the key count. */
#define MAX_KEYS_HELD (UINT32_C(1) << 30)

struct entry {
	uint64_t hash;
	int64_t seen_ns;       /* the last allow for this key */
	struct agile_token_bucket bucket;
	unsigned char *key;
	size_t key_len;
	uint32_t newer;        /* towards the most recently seen; NONE at it */
	uint32_t older;        /* towards the least recently seen; free list */
	uint32_t used;
};

struct agile_keyed {
	enum agile_keyed_kind kind;
	double rate_per_s;
	double burst;          /* as configured; the bucket applies defaults */
	int64_t max_keys;      /* <= 0: unbounded */
	int64_t idle_ns;       /* twice the refill window */
	uint32_t sweep_per_call;
	uint64_t hash_key[2];

	struct entry *entries;
	uint32_t entries_len;  /* entries ever handed out */
	uint32_t entries_cap;
	uint32_t free_list;

	uint32_t *slots;       /* entry index or NONE */
	uint32_t slots_mask;   /* slot count - 1 */
	uint32_t count;        /* keys held */
	uint32_t newest;
	uint32_t oldest;
	uint32_t cursor;       /* where the sweep resumes */

	struct agile_keyed_stats stats;
};

/* --- SipHash-2-4 ---------------------------------------------------------- */

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void sip_rounds(uint64_t v[4], int rounds)
{
	for (int i = 0; i < rounds; i++) {
		v[0] += v[1];
		v[1] = rotl(v[1], 13);
		v[1] ^= v[0];
		v[0] = rotl(v[0], 32);
		v[2] += v[3];
		v[3] = rotl(v[3], 16);
		v[3] ^= v[2];
		v[0] += v[3];
		v[3] = rotl(v[3], 21);
		v[3] ^= v[0];
		v[2] += v[1];
		v[1] = rotl(v[1], 17);
		v[1] ^= v[2];
		v[2] = rotl(v[2], 32);
	}
}

uint64_t agile_siphash24(const uint64_t key[2], const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t v[4] = {
		key[0] ^ UINT64_C(0x736f6d6570736575),
		key[1] ^ UINT64_C(0x646f72616e646f6d),
		key[0] ^ UINT64_C(0x6c7967656e657261),
		key[1] ^ UINT64_C(0x7465646279746573),
	};
	size_t whole = len - len % 8;

	for (size_t i = 0; i < whole; i += 8) {
		uint64_t m = load_le64(p + i);
		v[3] ^= m;
		sip_rounds(v, 2);
		v[0] ^= m;
	}
	/* The last block: the leftover bytes, with the length's low byte on
	 * top. */
	uint64_t last = (uint64_t)len << 56;
	for (size_t i = 0; i < len % 8; i++)
		last |= (uint64_t)p[whole + i] << (8 * i);
	v[3] ^= last;
	sip_rounds(v, 2);
	v[0] ^= last;
	v[2] ^= 0xff;
	sip_rounds(v, 4);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* --- configuration --------------------------------------------------------- */

void agile_keyed_config_init(struct agile_keyed_config *c)
{
	memset(c, 0, sizeof(*c));
	c->kind = AGILE_KEYED_MEMORY;
	c->max_keys = AGILE_KEYED_DEFAULT_MAX_KEYS;
	c->sweep_per_call = AGILE_KEYED_DEFAULT_SWEEP;
}

int agile_keyed_kind_parse(const char *name, enum agile_keyed_kind *out)
{
	if (strcmp(name, "memory") == 0) {
		*out = AGILE_KEYED_MEMORY;
		return 0;
	}
	if (strcmp(name, "noop") == 0 || name[0] == '\0') {
		*out = AGILE_KEYED_NOOP;
		return 0;
	}
	if (strcmp(name, "redis") == 0)
		return -ENOTSUP;
	return -EINVAL;
}

const char *agile_keyed_kind_name(enum agile_keyed_kind kind)
{
	switch (kind) {
	case AGILE_KEYED_NOOP:
		return "noop";
	case AGILE_KEYED_MEMORY:
		return "memory";
	}
	return "unknown";
}

/* --- the recency list ------------------------------------------------------ */

static void unlink_entry(struct agile_keyed *k, uint32_t i)
{
	struct entry *e = &k->entries[i];

	if (e->newer != NONE)
		k->entries[e->newer].older = e->older;
	else
		k->newest = e->older;
	if (e->older != NONE)
		k->entries[e->older].newer = e->newer;
	else
		k->oldest = e->newer;
}

static void push_newest(struct agile_keyed *k, uint32_t i)
{
	struct entry *e = &k->entries[i];

	e->newer = NONE;
	e->older = k->newest;
	if (k->newest != NONE)
		k->entries[k->newest].newer = i;
	k->newest = i;
	if (k->oldest == NONE)
		k->oldest = i;
}

/* --- the hash table -------------------------------------------------------- */

static uint32_t home(const struct agile_keyed *k, uint64_t hash)
{
	return (uint32_t)hash & k->slots_mask;
}

/* The slot holding `key`, or NONE. */
static uint32_t find_slot(const struct agile_keyed *k, uint64_t hash,
                          const void *key, size_t key_len)
{
	for (uint32_t s = home(k, hash);; s = (s + 1) & k->slots_mask) {
		uint32_t i = k->slots[s];
		if (i == NONE)
			return NONE;
		const struct entry *e = &k->entries[i];
		if (e->hash == hash && e->key_len == key_len &&
		    memcmp(e->key, key, key_len) == 0)
			return s;
	}
}

static void place(struct agile_keyed *k, uint32_t i)
{
	uint32_t s = home(k, k->entries[i].hash);

	while (k->slots[s] != NONE)
		s = (s + 1) & k->slots_mask;
	k->slots[s] = i;
}

static int grow_slots(struct agile_keyed *k)
{
	uint32_t n = (k->slots_mask + 1) * 2;
	uint32_t *slots = malloc((size_t)n * sizeof(*slots));

	if (slots == NULL)
		return -ENOMEM;
	free(k->slots);
	k->slots = slots;
	k->slots_mask = n - 1;
	memset(slots, 0xff, (size_t)n * sizeof(*slots));
	for (uint32_t i = 0; i < k->entries_len; i++)
		if (k->entries[i].used)
			place(k, i);
	return 0;
}

/* Empty slot s and shift back every entry after it whose probe sequence
 * passed through s, so no lookup stops early at the new hole. */
static void delete_slot(struct agile_keyed *k, uint32_t s)
{
	uint32_t hole = s;

	for (uint32_t j = (s + 1) & k->slots_mask; k->slots[j] != NONE;
	     j = (j + 1) & k->slots_mask) {
		uint32_t h = home(k, k->entries[k->slots[j]].hash);
		/* The entry at j may stay only if its home lies cyclically in
		 * (hole, j]; otherwise the hole would cut it off. */
		bool stays = hole <= j ? (hole < h && h <= j)
		                       : (hole < h || h <= j);
		if (!stays) {
			k->slots[hole] = k->slots[j];
			hole = j;
		}
	}
	k->slots[hole] = NONE;
}

/* --- entries --------------------------------------------------------------- */

static bool idle_at(const struct agile_keyed *k, const struct entry *e,
                    int64_t now_ns)
{
	if (now_ns <= e->seen_ns)
		return false;
	return (uint64_t)now_ns - (uint64_t)e->seen_ns >= (uint64_t)k->idle_ns;
}

static void remove_entry(struct agile_keyed *k, uint32_t i)
{
	struct entry *e = &k->entries[i];
	uint32_t s = home(k, e->hash);

	while (k->slots[s] != i)
		s = (s + 1) & k->slots_mask;
	delete_slot(k, s);
	unlink_entry(k, i);
	free(e->key);
	e->key = NULL;
	e->used = 0;
	e->older = k->free_list;
	k->free_list = i;
	k->count--;
	k->stats.keys = k->count;
}

static int new_entry(struct agile_keyed *k, uint32_t *out)
{
	if (k->free_list != NONE) {
		*out = k->free_list;
		k->free_list = k->entries[*out].older;
		return 0;
	}
	if (k->entries_len == k->entries_cap) {
		uint32_t cap = k->entries_cap ? k->entries_cap * 2 : MIN_SLOTS;
		struct entry *grown =
			realloc(k->entries, (size_t)cap * sizeof(*grown));
		if (grown == NULL)
			return -ENOMEM;
		k->entries = grown;
		k->entries_cap = cap;
	}
	*out = k->entries_len++;
	return 0;
}

/* Make room for one more key under the bound: the least recently seen key
 * goes, counted as idle if it had been idle long enough anyway. */
static void enforce_bound(struct agile_keyed *k, int64_t now_ns)
{
	if (k->max_keys <= 0 || (int64_t)k->count < k->max_keys ||
	    k->oldest == NONE)
		return;
	uint32_t victim = k->oldest;
	if (idle_at(k, &k->entries[victim], now_ns))
		k->stats.idle_evictions++;
	else
		k->stats.capacity_evictions++;
	remove_entry(k, victim);
}

static int insert(struct agile_keyed *k, uint64_t hash, const void *key,
                  size_t key_len, int64_t now_ns, uint32_t *out)
{
	uint32_t i;

	if (k->count >= MAX_KEYS_HELD)
		return -ENOMEM;
	if ((k->count + 1) * 2 > k->slots_mask + 1 && grow_slots(k) < 0)
		return -ENOMEM;
	unsigned char *copy = malloc(key_len ? key_len : 1);
	if (copy == NULL)
		return -ENOMEM;
	if (new_entry(k, &i) < 0) {
		free(copy);
		return -ENOMEM;
	}
	struct entry *e = &k->entries[i];
	memcpy(copy, key, key_len);
	e->hash = hash;
	e->seen_ns = now_ns;
	e->key = copy;
	e->key_len = key_len;
	e->used = 1;
	/* Validated at create, so this cannot fail. */
	(void)agile_token_bucket_init(&e->bucket, k->rate_per_s, k->burst,
	                              now_ns);
	place(k, i);
	push_newest(k, i);
	k->count++;
	k->stats.keys = k->count;
	*out = i;
	return 0;
}

/* --- the public calls ------------------------------------------------------ */

int agile_keyed_create(const struct agile_keyed_config *c, int64_t now_ns,
                       struct agile_keyed **out)
{
	struct agile_token_bucket probe;
	struct agile_keyed *k;

	if (c->kind != AGILE_KEYED_NOOP && c->kind != AGILE_KEYED_MEMORY)
		return -EINVAL;
	if (c->kind == AGILE_KEYED_MEMORY &&
	    (!(c->rate_per_s > 0) || isinf(c->rate_per_s) || c->burst < 0 ||
	     isnan(c->burst) ||
	     agile_token_bucket_init(&probe, c->rate_per_s, c->burst,
	                             now_ns) < 0))
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -ENOMEM;
	k->kind = c->kind;
	k->rate_per_s = c->rate_per_s;
	k->burst = c->burst;
	k->max_keys = c->max_keys;
	k->sweep_per_call = c->sweep_per_call ? c->sweep_per_call
	                                      : AGILE_KEYED_DEFAULT_SWEEP;
	k->hash_key[0] = c->hash_key[0];
	k->hash_key[1] = c->hash_key[1];
	k->free_list = NONE;
	k->newest = NONE;
	k->oldest = NONE;
	if (k->kind == AGILE_KEYED_MEMORY) {
		/* The refill window is the time a whole burst takes to come
		 * back at the steady rate; a key idle for two of them has
		 * nothing left to remember. */
		double burst = (double)probe.burst_units / AGILE_TOKEN_UNITS;
		double idle_ns = 2 * burst / c->rate_per_s * AGILE_NS_PER_S;
		k->idle_ns = idle_ns >= 9.2e18 ? INT64_MAX : (int64_t)ceil(idle_ns);
		k->slots = malloc(MIN_SLOTS * sizeof(*k->slots));
		if (k->slots == NULL) {
			free(k);
			return -ENOMEM;
		}
		memset(k->slots, 0xff, MIN_SLOTS * sizeof(*k->slots));
		k->slots_mask = MIN_SLOTS - 1;
	}
	*out = k;
	return 0;
}

void agile_keyed_destroy(struct agile_keyed *k)
{
	if (k == NULL)
		return;
	for (uint32_t i = 0; i < k->entries_len; i++)
		if (k->entries[i].used)
			free(k->entries[i].key);
	free(k->entries);
	free(k->slots);
	free(k);
}

size_t agile_keyed_sweep(struct agile_keyed *k, int64_t now_ns, size_t budget)
{
	size_t reclaimed = 0;

	if (k->entries_len == 0)
		return 0;
	for (size_t n = 0; n < budget; n++) {
		if (k->cursor >= k->entries_len)
			k->cursor = 0;
		uint32_t i = k->cursor++;
		if (k->entries[i].used && idle_at(k, &k->entries[i], now_ns)) {
			remove_entry(k, i);
			k->stats.idle_evictions++;
			reclaimed++;
		}
	}
	return reclaimed;
}

int agile_keyed_allow(struct agile_keyed *k, const void *key, size_t key_len,
                      int64_t now_ns, bool *allowed)
{
	uint32_t i;

	if (k->kind == AGILE_KEYED_NOOP) {
		k->stats.allowed++;
		*allowed = true;
		return 0;
	}
	uint64_t hash = agile_siphash24(k->hash_key, key, key_len);
	uint32_t s = find_slot(k, hash, key, key_len);
	if (s != NONE) {
		i = k->slots[s];
		struct entry *e = &k->entries[i];
		if (idle_at(k, e, now_ns)) {
			/* Expired before the sweep reached it: forget it now,
			 * which hands it the full burst it would get anyway. */
			k->stats.idle_evictions++;
			(void)agile_token_bucket_init(&e->bucket,
			                              k->rate_per_s, k->burst,
			                              now_ns);
		}
		unlink_entry(k, i);
		push_newest(k, i);
		if (now_ns > e->seen_ns)
			e->seen_ns = now_ns;
	} else {
		enforce_bound(k, now_ns);
		int rc = insert(k, hash, key, key_len, now_ns, &i);
		if (rc < 0)
			return rc;
	}
	*allowed = agile_token_bucket_take(&k->entries[i].bucket, now_ns, 1);
	if (*allowed)
		k->stats.allowed++;
	else
		k->stats.rejected++;
	agile_keyed_sweep(k, now_ns, k->sweep_per_call);
	return 0;
}

bool agile_keyed_retry_after(const struct agile_keyed *k, const void *key,
                             size_t key_len, int64_t now_ns, int64_t *wait_ns)
{
	if (k->kind == AGILE_KEYED_NOOP)
		return false;
	uint64_t hash = agile_siphash24(k->hash_key, key, key_len);
	uint32_t s = find_slot(k, hash, key, key_len);
	if (s == NONE)
		return false;
	const struct entry *e = &k->entries[k->slots[s]];
	if (idle_at(k, e, now_ns))
		return false;
	if (agile__token_bucket_units(&e->bucket, now_ns) > AGILE_TOKEN_UNITS)
		return false;
	*wait_ns = agile_token_bucket_next(&e->bucket, now_ns, 1);
	return true;
}

void agile_keyed_stats(const struct agile_keyed *k,
                       struct agile_keyed_stats *out)
{
	*out = k->stats;
	out->keys = k->count;
}

int64_t agile_keyed_idle_ns(const struct agile_keyed *k)
{
	return k->idle_ns;
}
