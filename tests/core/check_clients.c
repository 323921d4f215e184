/*
 * check_clients.c - the shared-memory per-client table (agile_clients.h)
 * on a virtual clock: a key's GCRA bucket with its burst and the exact
 * time of its next token, idle keys dropped after twice the refill
 * window, the bound displacing the least recently seen key, the two
 * eviction counts apart, a garbled table cleared rather than followed,
 * and the settings refused.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agile.h"
#include "agile_clients.h"
#include "check_suites.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

static const uint64_t hash_key[2] = { 1, 2 };

/* 5 tokens a second (200 ms apart), a burst of 2: the refill window is
 * 400 ms, so a key idle for 800 ms is dropped. */
static struct agile_client_table *table(uint32_t capacity)
{
	struct agile_client_table *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(agile_clients_init(t, 5, 2, capacity, hash_key), 0);
	return t;
}

static bool allow(struct agile_client_table *t, uint64_t key, int64_t now,
                  int64_t *retry)
{
	int64_t ignored;

	return agile_clients_allow(t, key, now, retry != NULL ? retry
	                                                       : &ignored);
}

START_TEST(clients_burst_then_rate)
{
	struct agile_client_table *t = table(16);
	int64_t retry;

	ck_assert(allow(t, 7, 0, NULL));
	ck_assert(allow(t, 7, 0, NULL));
	/* The burst spent: the next token comes 200 ms later, exactly. */
	ck_assert(!allow(t, 7, 0, &retry));
	ck_assert_int_eq(retry, 200 * MS);
	ck_assert(!allow(t, 7, 150 * MS, &retry));
	ck_assert_int_eq(retry, 50 * MS);
	ck_assert(allow(t, 7, 200 * MS, NULL));
	ck_assert(!allow(t, 7, 200 * MS, &retry));
	ck_assert_int_eq(retry, 200 * MS);
	/* Another key has its own bucket. */
	ck_assert(allow(t, 8, 200 * MS, NULL));
	ck_assert_uint_eq(t->allowed, 4);
	ck_assert_uint_eq(t->refused, 3);
	ck_assert_uint_eq(t->count, 2);
	/* A key asking at 50/s for 10 s gets 5/s and its burst. */
	{
		int allowed = 0;

		for (int64_t now = SEC; now < 11 * SEC; now += 20 * MS)
			allowed += allow(t, 9, now, NULL);
		ck_assert_int_eq(allowed, 2 + 49);
	}
	free(t);
}
END_TEST

START_TEST(clients_idle_keys_dropped)
{
	struct agile_client_table *t = table(16);

	ck_assert(allow(t, 1, 0, NULL));
	ck_assert(allow(t, 2, 100 * MS, NULL));
	/* 799 ms after its allow key 1 is still held... */
	ck_assert(allow(t, 3, 799 * MS, NULL));
	ck_assert_uint_eq(t->count, 3);
	ck_assert_uint_eq(t->idle_evictions, 0);
	/* ...at 800 ms it goes, and at 900 ms key 2. */
	ck_assert(allow(t, 3, 900 * MS, NULL));
	ck_assert_uint_eq(t->idle_evictions, 2);
	ck_assert_uint_eq(t->count, 1);
	ck_assert_uint_eq(t->capacity_evictions, 0);
	free(t);
}
END_TEST

START_TEST(clients_bound_evicts_least_recently_seen)
{
	struct agile_client_table *t = table(3);
	int64_t retry;

	ck_assert(allow(t, 1, 0, NULL));
	ck_assert(allow(t, 1, 0, NULL)); /* key 1 in debt */
	ck_assert(allow(t, 2, 1 * MS, NULL));
	ck_assert(allow(t, 3, 2 * MS, NULL));
	ck_assert(allow(t, 2, 3 * MS, NULL)); /* 2 seen again: 1 is oldest */
	ck_assert(allow(t, 4, 4 * MS, NULL));
	ck_assert_uint_eq(t->capacity_evictions, 1);
	ck_assert_uint_eq(t->count, 3);
	/* Key 1 was displaced in debt and comes back with a full burst,
	 * displacing key 3, now the least recently seen. */
	ck_assert(allow(t, 1, 5 * MS, NULL));
	ck_assert_uint_eq(t->capacity_evictions, 2);
	/* Key 2 stayed, its burst spent at 1 and 3 ms: its next token is
	 * at 1 ms + 2 intervals - the tolerance of one = 201 ms. */
	ck_assert(!allow(t, 2, 6 * MS, &retry));
	ck_assert_int_eq(retry, 195 * MS);
	ck_assert_uint_eq(t->idle_evictions, 0);
	/* A flood of distinct keys keeps the table at its bound. */
	for (uint64_t k = 100; k < 20100; k++)
		ck_assert(allow(t, k, 7 * MS + (int64_t)k, NULL));
	ck_assert_uint_eq(t->count, 3);
	ck_assert_uint_eq(t->capacity_evictions, 2 + 20000);
	ck_assert_uint_eq(t->resets, 0);
	free(t);
}
END_TEST

START_TEST(clients_garbled_table_cleared)
{
	struct agile_client_table *t = table(4);

	ck_assert(allow(t, 1, 0, NULL));
	ck_assert(allow(t, 2, 0, NULL));
	/* Another process left an index past the capacity. */
	t->entries[0].chain = 99;
	t->heads[2 % AGILE_CLIENTS_MAX] = 1;
	ck_assert(allow(t, 2, 1 * MS, NULL));
	ck_assert_uint_eq(t->resets, 1);
	t->oldest = 500;
	ck_assert(allow(t, 5, 2 * MS, NULL));
	ck_assert_uint_eq(t->resets, 2);
	t->count = 1000;
	ck_assert(allow(t, 6, 3 * MS, NULL));
	ck_assert_uint_eq(t->resets, 3);
	/* A table never set up allows everything and keeps nothing. */
	memset(t, 0, sizeof(*t));
	ck_assert(allow(t, 6, 3 * MS, NULL));
	ck_assert_uint_eq(t->count, 0);
	free(t);
}
END_TEST

START_TEST(clients_settings_refused)
{
	struct agile_client_table *t = calloc(1, sizeof(*t));

	ck_assert_int_eq(agile_clients_init(t, 0, 1, 1, hash_key), -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, NAN, 1, 1, hash_key), -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, INFINITY, 1, 1, hash_key),
	                 -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, 5, -1, 1, hash_key), -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, 5, NAN, 1, hash_key), -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, 5, 1, 0, hash_key), -EINVAL);
	ck_assert_int_eq(agile_clients_init(t, 5, 1, AGILE_CLIENTS_MAX + 1,
	                                    hash_key), -EINVAL);
	/* Burst 0 is the rate; never under one. */
	ck_assert_int_eq(agile_clients_init(t, 5, 0, 1, hash_key), 0);
	ck_assert(t->burst == 5);
	ck_assert_int_eq(agile_clients_init(t, 0.5, 0, 1, hash_key), 0);
	ck_assert(t->burst == 1);
	ck_assert_int_eq(t->interval_ns, 2 * SEC);
	ck_assert_int_eq(t->idle_ns, 4 * SEC);
	/* The hash depends on the key's bytes and the table's key. */
	ck_assert(agile_clients_key(t, "a", 1) != agile_clients_key(t, "b", 1));
	free(t);
}
END_TEST

Suite *clients_suite(void)
{
	Suite *s = suite_create("clients");
	TCase *tc = tcase_create("clients");

	tcase_add_test(tc, clients_burst_then_rate);
	tcase_add_test(tc, clients_idle_keys_dropped);
	tcase_add_test(tc, clients_bound_evicts_least_recently_seen);
	tcase_add_test(tc, clients_garbled_table_cleared);
	tcase_add_test(tc, clients_settings_refused);
	suite_add_tcase(s, tc);
	return s;
}
