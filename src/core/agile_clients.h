/*
 * agile_clients.h - per-client token buckets in shared memory: the
 * ratelimiting seed's per-key limiter in a form that every worker process
 * of a server can share, for limits such as "five requests a second per
 * client address" (a listener's client_rate=).
 *
 * agile_keyed.h holds the same rules for one process: it allocates and
 * holds pointers.  This table is one fixed-size, pointer-free struct that
 * lives in a slot of the state file: entries are linked by index (index +
 * 1, 0 none, so a zeroed table is a valid empty one), and every index read
 * from it is checked against the capacity before it is followed, so a
 * table another process left garbled is reset, never run off.
 *
 * Each key's bucket is a GCRA: its theoretical arrival time `tat`, one
 * interval (1 / rate) further at each allow.  A call at `now` is allowed
 * while tat - now stays within the burst's tolerance ((burst - 1)
 * intervals); a refused one learns the true time of its key's next token,
 * tat - tolerance, which is the Retry-After a server can stand behind.
 *
 * Keys are reclaimed by the seed's two rules, counted apart:
 *  - idle: a key with no allow for twice its refill window (2 * burst /
 *    rate) is dropped, its bucket being full again by then, which a new
 *    entry also is.  The entries are kept in order of their last allow, so
 *    the idle ones are the oldest: each allow drops up to two of them, and
 *    a key found idle on lookup starts afresh.
 *  - the bound: at most `capacity` keys are held, and a new key displaces
 *    the least recently seen one, which may still have been in debt and
 *    comes back with a full burst: a growing count of these says the
 *    bound is too low for the traffic.
 *
 * Keys are 64-bit hashes the caller computes (agile_siphash24 with the
 * table's hash_key, drawn by whoever initialises it): two clients whose
 * hashes collide share a bucket, one chance in 2^64 per pair.
 *
 * Not synchronised: a caller sharing the table between threads or
 * processes serialises the calls on it.  No clock, no randomness: times and
 * the hash key are passed in.
 */
#ifndef AGILE_CLIENTS_H
#define AGILE_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most keys a table holds: its fixed size (about 45 KB) is in every
 * slot of the state file. */
#define AGILE_CLIENTS_MAX 1024

struct agile_client_entry {
	uint64_t key;     /* the client's hash */
	int64_t tat_ns;   /* the GCRA's theoretical arrival time */
	int64_t seen_ns;  /* its last allow */
	uint32_t older;   /* the next older entry (index + 1), 0 none; a
	                     free entry: the next free one */
	uint32_t newer;   /* the next newer entry, 0 none */
	uint32_t chain;   /* the next entry of its hash bucket, 0 none */
	uint32_t used;    /* 1: holds a key */
};

struct agile_client_table {
	double rate_per_s;          /* tokens per second per key */
	double burst;               /* tokens a key may save up */
	int64_t interval_ns;        /* one token's time, 1 / rate */
	int64_t tolerance_ns;       /* (burst - 1) intervals */
	int64_t idle_ns;            /* 2 * burst / rate: idle reclaim */
	uint64_t hash_key[2];       /* the SipHash key of the keys */
	uint32_t capacity;          /* keys held at most; 0: not set up */
	uint32_t count;             /* keys held now */
	uint32_t newest, oldest;    /* the order of last allows, 0 empty */
	uint32_t unused;            /* entries [unused, capacity) never used */
	uint32_t free_list;         /* freed entries, 0 none */
	uint64_t allowed;
	uint64_t refused;
	uint64_t idle_evictions;     /* keys dropped after two idle windows */
	uint64_t capacity_evictions; /* keys displaced by the bound */
	uint64_t resets;             /* the table found garbled and cleared */
	uint64_t pad[3];
	uint32_t heads[AGILE_CLIENTS_MAX]; /* hash buckets: first entry */
	struct agile_client_entry entries[AGILE_CLIENTS_MAX];
};

/*
 * Set the table up empty: `rate_per_s` tokens a second per key (> 0 and
 * finite), `burst` tokens at most (0: the rate, and never under one;
 * negative or NaN is invalid), `capacity` keys (1 to AGILE_CLIENTS_MAX).
 * Returns 0 or -EINVAL.
 */
int agile_clients_init(struct agile_client_table *t, double rate_per_s,
                       double burst, uint32_t capacity,
                       const uint64_t hash_key[2]);

/*
 * Whether `key` may make one call at now_ns, spending its token if so.
 * Refused: *retry_ns is how long until its next token (> 0).  A table not
 * set up allows everything.
 */
bool agile_clients_allow(struct agile_client_table *t, uint64_t key,
                         int64_t now_ns, int64_t *retry_ns);

/* The hash of a key's bytes under the table's hash key. */
uint64_t agile_clients_key(const struct agile_client_table *t,
                           const void *data, size_t len);

/*
 * The bytes that name a client by its address, for agile_clients_key: the
 * family (4 or 6), then the address's first `prefix_bits` bits with the
 * rest zeroed, so every address of one prefix is one client.  prefix_bits
 * of 0 or less is AGILE_CLIENTS_PREFIX_DEFAULT; IPv4 keeps at most 32.  An
 * IPv4-mapped IPv6 address (a dual-stack listener's IPv4 client) is that
 * IPv4 address.  Returns the count written (5 or 17), or 0, writing
 * nothing, for another family or a `len` too short for its own.
 */
#define AGILE_CLIENTS_ADDRESS_MAX 17
#define AGILE_CLIENTS_PREFIX_DEFAULT 64 /* an IPv6 /64; IPv4 whole */
size_t agile_clients_address(int prefix_bits, const struct sockaddr *addr,
                             socklen_t len,
                             uint8_t out[AGILE_CLIENTS_ADDRESS_MAX]);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_CLIENTS_H */
