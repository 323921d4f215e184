/*
 * check_clients.c - the shared-memory per-client table (agile_clients.h)
 * on a virtual clock: a key's GCRA bucket with its burst and the exact
 * time of its next token, idle keys dropped after twice the refill
 * window, the bound displacing the least recently seen key, the two
 * eviction counts apart, a garbled table cleared rather than followed,
 * the settings refused, and clients named by address prefix (IPv6, IPv4
 * and IPv4-mapped).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
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

/* The table's key for `text` (IPv4 or IPv6) under `bits` of prefix. */
static uint64_t address_key(const struct agile_client_table *t,
                            const char *text, int bits)
{
	struct sockaddr_storage ss;
	uint8_t bytes[AGILE_CLIENTS_ADDRESS_MAX];
	size_t n;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':') != NULL) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		ck_assert_int_eq(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		n = agile_clients_address(bits, (struct sockaddr *)in6,
		                          sizeof(*in6), bytes);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		ck_assert_int_eq(inet_pton(AF_INET, text, &in->sin_addr), 1);
		n = agile_clients_address(bits, (struct sockaddr *)in,
		                          sizeof(*in), bytes);
	}
	ck_assert_uint_ne(n, 0);
	return agile_clients_key(t, bytes, n);
}

/*
 * client_prefix=: every address of one prefix is one client.  Under the
 * default (0: 64 bits) two addresses of 2001:db8:1:2::/64 spend one
 * bucket (5/s, a burst of 2) while 2001:db8:1:3::/64 has its own; an IPv4
 * address is whole, and a dual-stack listener's ::ffff:192.0.2.7 is
 * 192.0.2.7.  At 48 bits the two /64s are one client, at 24 two IPv4
 * addresses of a /24 are.  A family other than IPv4 and IPv6, or a
 * length too short for the family, names no client.
 */
START_TEST(clients_address_prefix)
{
	struct agile_client_table *t = table(16);
	uint64_t a = address_key(t, "2001:db8:1:2::1", 0);
	int64_t retry;

	ck_assert_uint_eq(address_key(t, "2001:db8:1:2:ffff:ffff:ffff:9", 0), a);
	ck_assert_uint_eq(address_key(t, "2001:db8:1:2::1", 64), a);
	ck_assert_uint_ne(address_key(t, "2001:db8:1:3::1", 0), a);
	ck_assert(allow(t, address_key(t, "2001:db8:1:2::1", 0), 0, NULL));
	ck_assert(allow(t, address_key(t, "2001:db8:1:2::77", 0), 0, NULL));
	ck_assert(!allow(t, address_key(t, "2001:db8:1:2::ab", 0), 0, &retry));
	ck_assert_int_eq(retry, 200 * MS);
	ck_assert(allow(t, address_key(t, "2001:db8:1:3::1", 0), 0, NULL));
	/* 48 bits: 2001:db8:1:2:: and 2001:db8:1:3:: are one client. */
	ck_assert_uint_eq(address_key(t, "2001:db8:1:3::1", 48),
	                  address_key(t, "2001:db8:1:2::1", 48));
	ck_assert_uint_ne(address_key(t, "2001:db8:2:3::1", 48),
	                  address_key(t, "2001:db8:1:3::1", 48));
	/* 128 bits: each address alone. */
	ck_assert_uint_ne(address_key(t, "2001:db8:1:2::2", 128),
	                  address_key(t, "2001:db8:1:2::1", 128));

	/* IPv4 under 64 bits is the whole address; mapped is the same. */
	uint64_t v4 = address_key(t, "192.0.2.7", 0);
	ck_assert_uint_eq(address_key(t, "::ffff:192.0.2.7", 0), v4);
	ck_assert_uint_ne(address_key(t, "192.0.2.8", 0), v4);
	ck_assert(allow(t, v4, SEC, NULL));
	ck_assert(allow(t, address_key(t, "::ffff:192.0.2.7", 0), SEC, NULL));
	ck_assert(!allow(t, v4, SEC, &retry));
	ck_assert_int_eq(retry, 200 * MS);
	/* Nor is it an IPv6 address that ends the same. */
	ck_assert_uint_ne(address_key(t, "::c000:207", 0), v4);
	/* 24 bits: a /24 is one client, mapped or not. */
	ck_assert_uint_eq(address_key(t, "192.0.2.200", 24),
	                  address_key(t, "::ffff:192.0.2.7", 24));
	ck_assert_uint_ne(address_key(t, "192.0.3.7", 24),
	                  address_key(t, "192.0.2.7", 24));

	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr_un_like { sa_family_t family; char path[8]; } un = {
		.family = AF_UNIX };
	uint8_t bytes[AGILE_CLIENTS_ADDRESS_MAX];
	ck_assert_uint_eq(agile_clients_address(0, (struct sockaddr *)&in6,
	                                        sizeof(in6) - 1, bytes), 0);
	ck_assert_uint_eq(agile_clients_address(0, (struct sockaddr *)&un,
	                                        sizeof(un), bytes), 0);
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
	tcase_add_test(tc, clients_address_prefix);
	tcase_add_test(tc, clients_idle_keys_dropped);
	tcase_add_test(tc, clients_bound_evicts_least_recently_seen);
	tcase_add_test(tc, clients_garbled_table_cleared);
	tcase_add_test(tc, clients_settings_refused);
	suite_add_tcase(s, tc);
	return s;
}
