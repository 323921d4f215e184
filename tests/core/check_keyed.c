/*
 * check_keyed.c - the per-key limiter table on a virtual clock: one bucket
 * per key, idle keys reclaimed after twice the refill window by a sweep
 * spread over calls, the key bound evicting the least recently seen, the two
 * eviction counters, the retry hint, the no-op limiter and the choice
 * between them by configuration.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agile_keyed.h"
#include "agile_resilience.h"
#include "check_suites.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* A table of `kind` at 10 tokens a second with a burst of 5 (a refill
 * window of 500 ms, so keys idle for 1 s are reclaimed), bounded at
 * max_keys. */
static struct agile_keyed *table(int64_t max_keys, uint32_t sweep)
{
	struct agile_keyed_config c;
	struct agile_keyed *k = NULL;

	agile_keyed_config_init(&c);
	c.rate_per_s = 10;
	c.burst = 5;
	c.max_keys = max_keys;
	c.sweep_per_call = sweep;
	c.hash_key[0] = UINT64_C(0x0123456789abcdef);
	c.hash_key[1] = UINT64_C(0xfedcba9876543210);
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	ck_assert_ptr_nonnull(k);
	return k;
}

static bool allow(struct agile_keyed *k, const char *key, int64_t now)
{
	bool allowed = false;

	ck_assert_int_eq(agile_keyed_allow(k, key, strlen(key), now, &allowed),
	                 0);
	return allowed;
}

static bool hint(const struct agile_keyed *k, const char *key, int64_t now,
                 int64_t *wait)
{
	return agile_keyed_retry_after(k, key, strlen(key), now, wait);
}

static struct agile_keyed_stats stats(const struct agile_keyed *k)
{
	struct agile_keyed_stats s;

	agile_keyed_stats(k, &s);
	return s;
}

static void key_name(char *buf, size_t len, int i)
{
	snprintf(buf, len, "client-%d", i);
}

/* --- hashing and configuration ---------------------------------------------- */

START_TEST(keyed_siphash_reference_vectors)
{
	/* The reference vectors of the SipHash paper: key 00..0f, messages
	 * 00..(n-1). */
	const uint64_t key[2] = { UINT64_C(0x0706050403020100),
		                  UINT64_C(0x0f0e0d0c0b0a0908) };
	unsigned char msg[16];

	for (int i = 0; i < 16; i++)
		msg[i] = (unsigned char)i;
	ck_assert_uint_eq(agile_siphash24(key, msg, 0),
	                  UINT64_C(0x726fdb47dd0e0e31));
	ck_assert_uint_eq(agile_siphash24(key, msg, 1),
	                  UINT64_C(0x74f839c593dc67fd));
	ck_assert_uint_eq(agile_siphash24(key, msg, 8),
	                  UINT64_C(0x93f5f5799a932462));
	ck_assert_uint_eq(agile_siphash24(key, msg, 15),
	                  UINT64_C(0xa129ca6149be45e5));
}
END_TEST

START_TEST(keyed_config_defaults)
{
	struct agile_keyed_config c;

	agile_keyed_config_init(&c);
	ck_assert_int_eq(c.kind, AGILE_KEYED_MEMORY);
	ck_assert_int_eq(c.max_keys, 100000);
	ck_assert_int_eq(c.max_keys, AGILE_KEYED_DEFAULT_MAX_KEYS);
	ck_assert_uint_eq(c.sweep_per_call, AGILE_KEYED_DEFAULT_SWEEP);
	ck_assert_double_eq(c.rate_per_s, 0);
}
END_TEST

START_TEST(keyed_kind_by_configuration)
{
	enum agile_keyed_kind kind = AGILE_KEYED_MEMORY;

	ck_assert_int_eq(agile_keyed_kind_parse("noop", &kind), 0);
	ck_assert_int_eq(kind, AGILE_KEYED_NOOP);
	ck_assert_int_eq(agile_keyed_kind_parse("memory", &kind), 0);
	ck_assert_int_eq(kind, AGILE_KEYED_MEMORY);
	ck_assert_int_eq(agile_keyed_kind_parse("", &kind), 0);
	ck_assert_int_eq(kind, AGILE_KEYED_NOOP);
	ck_assert_int_eq(agile_keyed_kind_parse("redis", &kind), -ENOTSUP);
	ck_assert_int_eq(agile_keyed_kind_parse("Memory", &kind), -EINVAL);
	ck_assert_int_eq(agile_keyed_kind_parse("leaky", &kind), -EINVAL);
	ck_assert_str_eq(agile_keyed_kind_name(AGILE_KEYED_NOOP), "noop");
	ck_assert_str_eq(agile_keyed_kind_name(AGILE_KEYED_MEMORY), "memory");

	/* The parsed kind selects the implementation. */
	struct agile_keyed_config c;
	struct agile_keyed *k;
	agile_keyed_config_init(&c);
	c.rate_per_s = 1;
	c.burst = 1;
	ck_assert_int_eq(agile_keyed_kind_parse("noop", &c.kind), 0);
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	for (int i = 0; i < 10; i++)
		ck_assert(allow(k, "a", 0));
	agile_keyed_destroy(k);
	ck_assert_int_eq(agile_keyed_kind_parse("memory", &c.kind), 0);
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	ck_assert(allow(k, "a", 0));
	ck_assert(!allow(k, "a", 0));
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_create_rejects_invalid)
{
	struct agile_keyed_config c;
	struct agile_keyed *k = NULL;

	agile_keyed_config_init(&c);
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL); /* rate 0 */
	c.rate_per_s = -1;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	c.rate_per_s = NAN;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	c.rate_per_s = INFINITY;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	c.rate_per_s = 10;
	c.burst = -1;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	c.burst = NAN;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	c.burst = 0;
	c.kind = (enum agile_keyed_kind)7;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), -EINVAL);
	ck_assert_ptr_null(k);
	/* The no-op limiter needs no rate. */
	agile_keyed_config_init(&c);
	c.kind = AGILE_KEYED_NOOP;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	ck_assert_int_eq(agile_keyed_idle_ns(k), 0);
	agile_keyed_destroy(k);
	agile_keyed_destroy(NULL);
}
END_TEST

/* --- limiting --------------------------------------------------------------- */

START_TEST(keyed_one_bucket_per_key)
{
	struct agile_keyed *k = table(0, 8);

	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "alice", 0));
	/* A refusal is an answer: allow returned 0 above, and does here. */
	ck_assert(!allow(k, "alice", 0));
	/* Bob has his own burst. */
	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "bob", 0));
	ck_assert(!allow(k, "bob", 0));
	/* Ten a second: one more token each 100 ms. */
	ck_assert(!allow(k, "alice", 100 * MS - 1));
	ck_assert(allow(k, "alice", 100 * MS));
	ck_assert(!allow(k, "alice", 100 * MS));

	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.allowed, 11);
	ck_assert_uint_eq(s.rejected, 4);
	ck_assert_uint_eq(s.keys, 2);
	ck_assert_uint_eq(s.idle_evictions, 0);
	ck_assert_uint_eq(s.capacity_evictions, 0);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_keys_are_byte_strings)
{
	struct agile_keyed *k = table(0, 8);
	bool allowed;
	const char a[] = { 'x', '\0', 'y' };
	const char b[] = { 'x', '\0', 'z' };

	/* Embedded NULs and lengths matter; the empty key is a key. */
	ck_assert_int_eq(agile_keyed_allow(k, a, 3, 0, &allowed), 0);
	ck_assert_int_eq(agile_keyed_allow(k, b, 3, 0, &allowed), 0);
	ck_assert_int_eq(agile_keyed_allow(k, a, 1, 0, &allowed), 0);
	ck_assert_int_eq(agile_keyed_allow(k, "", 0, 0, &allowed), 0);
	ck_assert(allowed);
	ck_assert_uint_eq(stats(k).keys, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(agile_keyed_allow(k, a, 3, 0, &allowed), 0);
		ck_assert(allowed);
	}
	ck_assert_int_eq(agile_keyed_allow(k, a, 3, 0, &allowed), 0);
	ck_assert(!allowed);
	ck_assert_int_eq(agile_keyed_allow(k, b, 3, 0, &allowed), 0);
	ck_assert(allowed);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_burst_defaults_to_rate)
{
	struct agile_keyed_config c;
	struct agile_keyed *k;

	agile_keyed_config_init(&c);
	c.rate_per_s = 3;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	for (int i = 0; i < 3; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(!allow(k, "a", 0));
	/* Refill window 1 s, idle after 2 s. */
	ck_assert_int_eq(agile_keyed_idle_ns(k), 2 * SEC);
	agile_keyed_destroy(k);
}
END_TEST

/* --- idle reclaim ------------------------------------------------------------ */

START_TEST(keyed_idle_after_twice_refill_window)
{
	struct agile_keyed *k = table(0, 8);

	/* A burst of 5 at 10 a second refills in 500 ms. */
	ck_assert_int_eq(agile_keyed_idle_ns(k), SEC);
	ck_assert(allow(k, "a", 0));
	/* Just under two windows: still held. */
	ck_assert_uint_eq(agile_keyed_sweep(k, SEC - 1, 100), 0);
	ck_assert_uint_eq(stats(k).keys, 1);
	ck_assert_uint_eq(agile_keyed_sweep(k, SEC, 100), 1);
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.keys, 0);
	ck_assert_uint_eq(s.idle_evictions, 1);
	ck_assert_uint_eq(s.capacity_evictions, 0);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_sweep_spread_over_calls)
{
	struct agile_keyed *k = table(0, 8);
	char name[32];

	for (int i = 0; i < 100; i++) {
		key_name(name, sizeof(name), i);
		ck_assert(allow(k, name, 0));
	}
	ck_assert_uint_eq(stats(k).keys, 100);

	/* Two seconds later every one of them is idle, but each call looks
	 * at no more than eight entries: the first call reclaims at most
	 * eight, and thirteen calls are enough for a hundred. */
	ck_assert(allow(k, "fresh", 2 * SEC));
	uint64_t first = stats(k).idle_evictions;
	ck_assert_uint_le(first, 8);
	ck_assert_uint_ge(first, 7);
	/* One call a millisecond: fresh's burst of five runs out on the way,
	 * and its refusals sweep just the same. */
	for (int i = 1; i <= 12; i++)
		(void)allow(k, "fresh", 2 * SEC + i * MS);
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.idle_evictions, 100);
	ck_assert_uint_eq(s.keys, 1); /* the key in use is never swept */
	ck_assert_uint_eq(s.allowed, 100 + 5);
	ck_assert_uint_eq(s.rejected, 8);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_idle_key_returns_with_full_burst)
{
	/* A key that emptied its bucket and then made no call for two
	 * refill windows is dropped; it returns to a full bucket, the same
	 * state its old bucket would have reached by refilling. */
	struct agile_keyed *k = table(0, 1);

	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(!allow(k, "a", 0));
	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 3 * SEC));
	ck_assert(!allow(k, "a", 3 * SEC));
	ck_assert_uint_eq(stats(k).idle_evictions, 1);
	ck_assert_uint_eq(stats(k).keys, 1);
	agile_keyed_destroy(k);
}
END_TEST

/* --- the key bound ----------------------------------------------------------- */

START_TEST(keyed_bound_evicts_least_recently_seen)
{
	struct agile_keyed *k = table(3, 8);
	int64_t wait;

	/* Exhaust a, so its being held shows as a refusal. */
	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(allow(k, "b", 1));
	ck_assert(allow(k, "c", 2));
	ck_assert(!allow(k, "a", 3)); /* a is now the most recently seen */
	ck_assert(allow(k, "d", 4));  /* b goes */

	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.keys, 3);
	ck_assert_uint_eq(s.capacity_evictions, 1);
	ck_assert_uint_eq(s.idle_evictions, 0);
	ck_assert(!hint(k, "b", 4, &wait)); /* unknown now */
	ck_assert(!allow(k, "a", 5));       /* still held, still owing */
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_capacity_eviction_forgives_debt)
{
	struct agile_keyed *k = table(1, 8);

	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(!allow(k, "a", 0));
	ck_assert(allow(k, "b", 0)); /* evicts a */
	/* a returns well inside its refill window and still gets five: the
	 * bound let it skip the wait, the reason such evictions are counted
	 * on their own. */
	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert_uint_eq(stats(k).capacity_evictions, 2);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_bound_counts_idle_victim_as_idle)
{
	/* With a sweep of one entry a call, an idle key may still be held
	 * when the bound needs room; evicting it is an idle eviction. */
	struct agile_keyed *k = table(2, 1);

	ck_assert(allow(k, "a", 0));
	ck_assert(allow(k, "b", 0));
	/* At 1.5 s both are idle; the call for c evicts the oldest, a, as
	 * idle, and c takes over a's entry, which is the one the call's
	 * single sweep step then looks at. */
	ck_assert(allow(k, "c", 1500 * MS));
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.capacity_evictions, 0);
	ck_assert_uint_ge(s.idle_evictions, 1);
	ck_assert_uint_le(s.keys, 2);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_unbounded)
{
	const int64_t bounds[] = { 0, -1 };
	char name[32];

	for (int b = 0; b < 2; b++) {
		struct agile_keyed *k = table(bounds[b], 8);
		for (int i = 0; i < 5000; i++) {
			key_name(name, sizeof(name), i);
			ck_assert(allow(k, name, 0));
		}
		struct agile_keyed_stats s = stats(k);
		ck_assert_uint_eq(s.keys, 5000);
		ck_assert_uint_eq(s.capacity_evictions, 0);
		agile_keyed_destroy(k);
	}
}
END_TEST

START_TEST(keyed_churn_keeps_table_consistent)
{
	/* Ten thousand distinct keys through a bound of a hundred, with a
	 * burst of one so a held key always has a retry hint: afterwards the
	 * last hundred are all found and every earlier one is gone.  Every
	 * insert past the hundredth deletes from the middle of probe runs,
	 * which is what the backward-shift delete must get right. */
	struct agile_keyed_config c;
	struct agile_keyed *k;
	char name[32];
	int64_t wait;

	agile_keyed_config_init(&c);
	c.rate_per_s = 1;
	c.burst = 1;
	c.max_keys = 100;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	for (int i = 0; i < 10000; i++) {
		key_name(name, sizeof(name), i);
		ck_assert(allow(k, name, i));
		ck_assert(!allow(k, name, i));
	}
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.keys, 100);
	ck_assert_uint_eq(s.capacity_evictions, 9900);
	ck_assert_uint_eq(s.allowed, 10000);
	ck_assert_uint_eq(s.rejected, 10000);
	for (int i = 0; i < 10000; i++) {
		key_name(name, sizeof(name), i);
		ck_assert_int_eq(hint(k, name, 10000, &wait), i >= 9900);
	}
	agile_keyed_destroy(k);
}
END_TEST

/* --- retry hints --------------------------------------------------------------- */

START_TEST(keyed_retry_after_estimates)
{
	struct agile_keyed *k = table(0, 8);
	int64_t wait = -1;

	/* A key not in the table would get a fresh bucket: no hint at all,
	 * rather than a hint of zero. */
	ck_assert(!hint(k, "a", 0, &wait));
	ck_assert_int_eq(wait, -1);
	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(!allow(k, "a", 0));
	ck_assert(hint(k, "a", 0, &wait));
	ck_assert_int_eq(wait, 100 * MS);
	ck_assert(hint(k, "a", 30 * MS, &wait));
	ck_assert_int_eq(wait, 70 * MS);
	/* Exactly one token: come back now. */
	ck_assert(hint(k, "a", 100 * MS, &wait));
	ck_assert_int_eq(wait, 0);
	/* More than a token: the estimate would be negative, so no hint. */
	ck_assert(!hint(k, "a", 150 * MS, &wait));
	/* The hint is honest: an allow after it succeeds. */
	ck_assert(allow(k, "a", 100 * MS));
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_retry_after_does_not_touch_key)
{
	struct agile_keyed *k = table(2, 8);
	int64_t wait;

	for (int i = 0; i < 5; i++)
		ck_assert(allow(k, "a", 0));
	ck_assert(allow(k, "b", 10 * MS));
	/* Asking about a does not make it recently seen ... */
	ck_assert(hint(k, "a", 20 * MS, &wait));
	ck_assert(allow(k, "c", 30 * MS));
	ck_assert(!hint(k, "a", 30 * MS, &wait)); /* a was the oldest */
	ck_assert_uint_eq(stats(k).capacity_evictions, 1);

	/* ... nor keeps it resident: asked all along, it still goes idle a
	 * second after it was last allowed (and so does c, untouched since
	 * 30 ms). */
	for (int i = 0; i < 4; i++)
		ck_assert(allow(k, "b", 100 * MS));
	for (int64_t t = 100 * MS; t < 1100 * MS; t += 100 * MS)
		(void)hint(k, "b", t, &wait);
	ck_assert(!hint(k, "b", 1100 * MS, &wait));
	ck_assert_uint_eq(agile_keyed_sweep(k, 1100 * MS, 16), 2);
	ck_assert_uint_eq(stats(k).keys, 0);
	/* Nor does asking spend or refill anything: counters unchanged. */
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.allowed, 11);
	ck_assert_uint_eq(s.rejected, 0);
	agile_keyed_destroy(k);
}
END_TEST

/* --- the no-op limiter -------------------------------------------------------- */

START_TEST(keyed_noop_allows_everything_keeps_nothing)
{
	struct agile_keyed_config c;
	struct agile_keyed *k;
	int64_t wait = -1;

	memset(&c, 0, sizeof(c)); /* the zero configuration is the no-op */
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	for (int i = 0; i < 1000; i++)
		ck_assert(allow(k, "anyone", 0));
	ck_assert(!hint(k, "anyone", 0, &wait));
	ck_assert_int_eq(wait, -1);
	struct agile_keyed_stats s = stats(k);
	ck_assert_uint_eq(s.allowed, 1000);
	ck_assert_uint_eq(s.rejected, 0);
	ck_assert_uint_eq(s.keys, 0);
	ck_assert_uint_eq(agile_keyed_sweep(k, 100 * SEC, 10), 0);
	agile_keyed_destroy(k);
}
END_TEST

START_TEST(keyed_hash_key_changes_nothing_visible)
{
	char name[32];

	/* Two tables with different hash keys answer identically. */
	struct agile_keyed *a = table(50, 4);
	struct agile_keyed_config c;
	struct agile_keyed *b;
	agile_keyed_config_init(&c);
	c.rate_per_s = 10;
	c.burst = 5;
	c.max_keys = 50;
	c.sweep_per_call = 4;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &b), 0);
	for (int i = 0; i < 3000; i++) {
		key_name(name, sizeof(name), (i * 7) % 97);
		int64_t now = i * MS;
		ck_assert_int_eq(allow(a, name, now), allow(b, name, now));
	}
	struct agile_keyed_stats sa = stats(a), sb = stats(b);
	ck_assert_uint_eq(sa.allowed, sb.allowed);
	ck_assert_uint_eq(sa.rejected, sb.rejected);
	ck_assert_uint_eq(sa.capacity_evictions, sb.capacity_evictions);
	ck_assert_uint_eq(sa.keys, sb.keys);
	agile_keyed_destroy(a);
	agile_keyed_destroy(b);
}
END_TEST

/* --- against a reference model ------------------------------------------------ */

/*
 * Twenty thousand random allows and hints over 300 keys through a bound of
 * 64, checked call by call against a model that keeps the same buckets in
 * a plain array and finds the least recently seen key by scanning.  The
 * rate is low enough (idle after 10,000 s) that nothing goes idle within
 * the run, so the model needs no sweep; what it checks is the hash table
 * and the recency list under constant eviction and reuse.
 */
#define MODEL_KEYS 300

struct model {
	bool present[MODEL_KEYS];
	uint64_t seen[MODEL_KEYS];
	struct agile_token_bucket bucket[MODEL_KEYS];
	int count;
	uint64_t clock;
};

static bool model_allow(struct model *m, int key, int64_t now, int max_keys)
{
	if (!m->present[key]) {
		if (m->count >= max_keys) {
			int oldest = -1;
			for (int i = 0; i < MODEL_KEYS; i++)
				if (m->present[i] &&
				    (oldest < 0 || m->seen[i] < m->seen[oldest]))
					oldest = i;
			m->present[oldest] = false;
			m->count--;
		}
		m->present[key] = true;
		m->count++;
		ck_assert_int_eq(agile_token_bucket_init(&m->bucket[key], 0.001,
		                                         5, now), 0);
	}
	m->seen[key] = ++m->clock;
	return agile_token_bucket_take(&m->bucket[key], now, 1);
}

static bool model_hint(const struct model *m, int key, int64_t now,
                       int64_t *wait)
{
	if (!m->present[key] ||
	    agile_token_bucket_tokens(&m->bucket[key], now) > 1.0)
		return false;
	*wait = agile_token_bucket_next(&m->bucket[key], now, 1);
	return true;
}

START_TEST(keyed_matches_reference_model)
{
	static struct model m;
	struct agile_keyed_config c;
	struct agile_keyed *k;
	uint64_t rng = 7;
	int64_t now = 0;
	char name[32];

	memset(&m, 0, sizeof(m));
	agile_keyed_config_init(&c);
	c.rate_per_s = 0.001;
	c.burst = 5;
	c.max_keys = 64;
	c.sweep_per_call = 3;
	ck_assert_int_eq(agile_keyed_create(&c, 0, &k), 0);
	ck_assert_int_eq(agile_keyed_idle_ns(k), 10000 * SEC);
	for (int op = 0; op < 20000; op++) {
		rng = rng * 6364136223846793005u + 1442695040888963407u;
		/* Skewed keys: a hot few and a long tail. */
		int key = (int)((rng >> 33) % MODEL_KEYS);
		if ((rng >> 20) % 4 != 0)
			key %= 40;
		now += (int64_t)((rng >> 40) % 50) * MS;
		key_name(name, sizeof(name), key);
		if ((rng >> 10) % 5 == 0) {
			int64_t got = -1, want = -1;
			bool has = hint(k, name, now, &got);
			ck_assert_int_eq(has, model_hint(&m, key, now, &want));
			ck_assert_int_eq(got, want);
		} else {
			ck_assert_int_eq(allow(k, name, now),
			                 model_allow(&m, key, now, 64));
		}
		ck_assert_uint_eq(stats(k).keys, (uint64_t)m.count);
	}
	ck_assert_uint_eq(stats(k).idle_evictions, 0);
	ck_assert_uint_gt(stats(k).capacity_evictions, 1000);
	agile_keyed_destroy(k);
}
END_TEST

Suite *keyed_suite(void)
{
	Suite *s = suite_create("keyed");

	TCase *config = tcase_create("config");
	tcase_add_test(config, keyed_siphash_reference_vectors);
	tcase_add_test(config, keyed_config_defaults);
	tcase_add_test(config, keyed_kind_by_configuration);
	tcase_add_test(config, keyed_create_rejects_invalid);
	suite_add_tcase(s, config);

	TCase *limit = tcase_create("limit");
	tcase_add_test(limit, keyed_one_bucket_per_key);
	tcase_add_test(limit, keyed_keys_are_byte_strings);
	tcase_add_test(limit, keyed_burst_defaults_to_rate);
	tcase_add_test(limit, keyed_noop_allows_everything_keeps_nothing);
	tcase_add_test(limit, keyed_hash_key_changes_nothing_visible);
	suite_add_tcase(s, limit);

	TCase *reclaim = tcase_create("reclaim");
	tcase_add_test(reclaim, keyed_idle_after_twice_refill_window);
	tcase_add_test(reclaim, keyed_sweep_spread_over_calls);
	tcase_add_test(reclaim, keyed_idle_key_returns_with_full_burst);
	tcase_add_test(reclaim, keyed_bound_evicts_least_recently_seen);
	tcase_add_test(reclaim, keyed_capacity_eviction_forgives_debt);
	tcase_add_test(reclaim, keyed_bound_counts_idle_victim_as_idle);
	tcase_add_test(reclaim, keyed_unbounded);
	tcase_add_test(reclaim, keyed_churn_keeps_table_consistent);
	tcase_add_test(reclaim, keyed_matches_reference_model);
	suite_add_tcase(s, reclaim);

	TCase *hints = tcase_create("retry_after");
	tcase_add_test(hints, keyed_retry_after_estimates);
	tcase_add_test(hints, keyed_retry_after_does_not_touch_key);
	suite_add_tcase(s, hints);

	return s;
}
