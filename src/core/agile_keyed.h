/*
 * agile_keyed.h - per-key rate limiting: one token bucket per key, for
 * limits such as "ten requests a second per client address".
 *
 * Keys are arbitrary byte strings chosen by the caller, typically derived
 * from requests (a peer address, an account), so how many distinct keys
 * arrive is up to the traffic, not the caller.  Entries are therefore
 * reclaimed in two ways:
 *
 *  - Idle keys.  A key with no allow for twice its refill window (the
 *    time its bucket takes to refill a whole burst at the steady rate) is
 *    dropped.  By then its bucket is full again, and a new entry starts
 *    full, so no caller can observe the difference.  There is no thread: each allow examines at
 *    most `sweep_per_call` further entries, round-robin, and a key found
 *    expired on lookup is reset on the spot.  agile_keyed_sweep lets a
 *    caller with a timer reclaim while no traffic arrives.
 *  - The key bound.  Idle reclaim cannot help when many new keys arrive
 *    faster than any of them can go idle, so at most `max_keys` are held
 *    and a new key displaces the one whose last allow is oldest.  Such a
 *    key may still have been in debt, and comes back with a full burst; so
 *    these evictions are counted apart from idle ones, and a non-zero count
 *    is the sign that the bound is too low for the traffic.
 *
 * Being refused is a normal outcome, not an error: allow returns 0 and sets
 * *allowed to false.  The only error is running out of memory for a new
 * key.
 *
 * This table is process-local and allocates; it is not shared-memory state
 * and it is not synchronised: callers serialise the calls on one table.  It
 * reads no clock and draws nothing: times are passed in, and the hash key
 * that defends the table against chosen-collision floods is drawn by the
 * caller.
 */
#ifndef AGILE_KEYED_H
#define AGILE_KEYED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bound exists to cap memory, not to shape traffic.  An entry costs
 * roughly 100 bytes plus its key, so the default holds the table near
 * 10 MB, while an honest workload rarely sees that many distinct keys
 * within one refill window. */
#define AGILE_KEYED_DEFAULT_MAX_KEYS 100000
/* Entries the sweep examines per allow: enough to keep pace with a table
 * that turns over once per window, small enough to keep allow O(1). */
#define AGILE_KEYED_DEFAULT_SWEEP 8

/* Which implementation a configuration selects.  The no-op one allows
 * everything, keeps nothing and never gives a retry hint. */
enum agile_keyed_kind {
	AGILE_KEYED_NOOP = 0,
	AGILE_KEYED_MEMORY
};

struct agile_keyed_config {
	enum agile_keyed_kind kind;
	double rate_per_s;  /* tokens per second per key; > 0 for MEMORY */
	double burst;       /* tokens a key may save up; 0 means the rate, and
	                       never under one (as agile_token_bucket);
	                       negative is invalid */
	int64_t max_keys;   /* key bound; <= 0 removes it, leaving the idle
	                       reclaim as the only limit on memory */
	uint32_t sweep_per_call; /* entries examined per allow; 0: default */
	uint32_t pad;
	uint64_t hash_key[2];    /* SipHash key, drawn by the caller */
};

/* Fill the defaults: MEMORY, rate 0 (the caller must set it), burst 0,
 * max_keys AGILE_KEYED_DEFAULT_MAX_KEYS, the default sweep, zero hash key. */
void agile_keyed_config_init(struct agile_keyed_config *c);

/* "memory" and "noop" select an implementation; so does the empty string,
 * which selects noop (an unconfigured limiter limits nothing).  "redis" is
 * -ENOTSUP (a shared limiter is not part of this library); anything else is
 * -EINVAL. */
int agile_keyed_kind_parse(const char *name, enum agile_keyed_kind *out);
const char *agile_keyed_kind_name(enum agile_keyed_kind kind);

struct agile_keyed_stats {
	uint64_t allowed;
	uint64_t rejected;
	uint64_t idle_evictions;     /* keys reclaimed after two idle windows */
	uint64_t capacity_evictions; /* keys evicted by the key bound */
	uint64_t keys;               /* keys held now */
};

struct agile_keyed;

/*
 * Create a table at now_ns.  -EINVAL for an unknown kind or, for MEMORY, a
 * rate that is not positive and finite or a negative or NaN burst;
 * -ENOMEM.
 */
int agile_keyed_create(const struct agile_keyed_config *c, int64_t now_ns,
                       struct agile_keyed **out);
/* Drop every key and free the table; NULL is accepted.  Nothing runs in the
 * background, so nothing else needs stopping. */
void agile_keyed_destroy(struct agile_keyed *k);

/*
 * Whether `key` may make one call at now_ns, spending a token if so.  Marks
 * the key as seen.  Returns 0 with *allowed set, or -ENOMEM (the call is
 * then neither allowed nor counted) when a new key cannot be stored.
 */
int agile_keyed_allow(struct agile_keyed *k, const void *key, size_t key_len,
                      int64_t now_ns, bool *allowed);

/*
 * How long `key` must wait before an allow could say yes again: true and
 * *wait_ns when there is an estimate, false when there is none -- for the
 * no-op limiter, for a key the table does not hold (its next allow will
 * create a full bucket), and for a key holding more than one token (the
 * wait would come out negative, which is no useful advice).  A key holding
 * exactly one token gets a hint of zero.
 *
 * The token is not reserved, so a competing allow may take it first: treat
 * the hint as a lower bound.  The lookup is read-only: it neither refreshes
 * the key's last-seen time nor moves it in the recency order, so polling
 * for a hint cannot keep an entry alive.
 */
bool agile_keyed_retry_after(const struct agile_keyed *k, const void *key,
                             size_t key_len, int64_t now_ns,
                             int64_t *wait_ns);

/* Examine up to `budget` entries for idle keys now, as the per-call sweep
 * does; returns how many were reclaimed. */
size_t agile_keyed_sweep(struct agile_keyed *k, int64_t now_ns, size_t budget);

void agile_keyed_stats(const struct agile_keyed *k,
                       struct agile_keyed_stats *out);

/* The idle period after which a key is reclaimed: twice the refill window,
 * 2 * burst / rate seconds.  0 for the no-op limiter. */
int64_t agile_keyed_idle_ns(const struct agile_keyed *k);

/* SipHash-2-4 of `len` bytes under a 128-bit key (k0 the first eight key
 * bytes read little-endian, k1 the next eight); exposed for tests. */
uint64_t agile_siphash24(const uint64_t key[2], const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_KEYED_H */
