/*
 * check_rules_match.c - the Check tests of src/common/rules_match.c:
 * matching precedence (the longest prefix, then an exact port, then the
 * first rule), both address families and Unix sockets, and the per-thread
 * match cache.
 */
#include "config.h"

#include "check_rules.h"

START_TEST(match_exact_ipv4)
{
	char *env[] = { "AGILE_DEST_API=127.0.0.1:8080 max=5", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("127.0.0.1", 8080), 0);
	ck_assert_int_eq(match4("127.0.0.1", 8081), -1);
	ck_assert_int_eq(match4("127.0.0.2", 8080), -1);
	/* A truncated address is no address. */
	inet4("127.0.0.1", 8080);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss,
	                                   sizeof(struct sockaddr_in) - 1),
	                 -1);
}
END_TEST

/* The most specific rule wins whatever the order of the names. */
START_TEST(match_exact_beats_cidr)
{
	char *env[] = { "AGILE_DEST_A_NET=10.0.0.0/8:443 max=5",
	                "AGILE_DEST_B_HOST=10.1.2.3:443 max=6",
	                "AGILE_DEST_C_SUB=10.1.0.0/16:443 max=7", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("10.1.2.3", 443), rule_named("b_host"));
	ck_assert_int_eq(match4("10.1.9.9", 443), rule_named("c_sub"));
	ck_assert_int_eq(match4("10.2.0.1", 443), rule_named("a_net"));
	ck_assert_int_eq(match4("11.0.0.1", 443), -1);
}
END_TEST

START_TEST(match_port_beats_any)
{
	char *env[] = { "AGILE_DEST_ANY=127.0.0.1:* max=5",
	                "AGILE_DEST_WEB=127.0.0.1:80 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("web"));
	ck_assert_int_eq(match4("127.0.0.1", 81), rule_named("any"));
}
END_TEST

/* A longer prefix outranks an exact port: the address says more about
 * which downstream it is than the port does. */
START_TEST(match_prefix_beats_port)
{
	char *env[] = { "AGILE_DEST_HOST=10.0.0.5:* max=5",
	                "AGILE_DEST_NET=10.0.0.0/8:80 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("10.0.0.5", 80), rule_named("host"));
	ck_assert_int_eq(match4("10.0.0.6", 80), rule_named("net"));
	ck_assert_int_eq(match4("10.0.0.6", 81), -1);
}
END_TEST

START_TEST(match_tie_goes_to_first)
{
	char *env[] = { "AGILE_DEST_ZULU=127.0.0.1:80 max=5",
	                "AGILE_DEST_ALPHA=127.0.0.1:80 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("alpha"));
	ck_assert_int_eq(rule_named("alpha"), 0);
}
END_TEST

START_TEST(match_ipv4_ipv6_and_mapped)
{
	char *env[] = { "AGILE_DEST_V4=127.0.0.1:80 max=5",
	                "AGILE_DEST_V6=[::1]:80 max=6",
	                "AGILE_DEST_NET6=[fd00::/8]:80 max=7", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("v4"));
	/* A dual-stack socket connecting to an IPv4 address. */
	ck_assert_int_eq(match6("::ffff:127.0.0.1", 80), rule_named("v4"));
	ck_assert_int_eq(match6("::1", 80), rule_named("v6"));
	ck_assert_int_eq(match6("fd12:3456::1", 80), rule_named("net6"));
	ck_assert_int_eq(match6("fe80::1", 80), -1);
	/* ::1 is not 127.0.0.1, and an IPv4 /0 is not all of IPv6. */
	ck_assert_int_eq(match6("::127.0.0.1", 80), -1);
}
END_TEST

START_TEST(match_any_address)
{
	char *env[] = { "AGILE_DEST_ALL=*:443 max=5",
	                "AGILE_DEST_ALL4=0.0.0.0/0:443 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	/* The IPv4 /0 is a /96 in the shared space, so it is more specific. */
	ck_assert_int_eq(match4("192.0.2.1", 443), rule_named("all4"));
	ck_assert_int_eq(match6("2001:db8::1", 443), rule_named("all"));
	ck_assert_int_eq(match6("2001:db8::1", 80), -1);
}
END_TEST

START_TEST(match_skips_disabled)
{
	char *env[] = { "AGILE_DEST_BAD=127.0.0.1:80 max=oops",
	                "AGILE_DEST_NET=127.0.0.0/8:80 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 1);
	ck_assert(!rules.rule[rule_named("bad")].enabled);
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("net"));
}
END_TEST

START_TEST(match_unix)
{
	char *env[] = { "AGILE_DEST_APP=unix:/run/app.sock max=5",
	                "AGILE_DEST_ABS=unix:@agile max=6",
	                "AGILE_DEST_ALL=*:* max=7", NULL };
	socklen_t len;

	ck_assert_int_eq(parse_env(env), 0);
	len = unix_path("/run/app.sock", true);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("app"));
	len = unix_path("/run/app.sock", false);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("app"));
	len = unix_path("/run/app.sock2", true);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	len = unix_path("/run/app", true);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	len = unix_abstract("agile");
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("abs"));
	len = unix_abstract("agile2");
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	/* "@agile" as a path is not the abstract name. */
	len = unix_path("@agile", true);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	/* Unix rules never match an inet address, and `*:*` no Unix one. */
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("all"));
	len = unix_path("/elsewhere", true);
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
}
END_TEST

/* The cache against the address in `ss`: remember what it matches now,
 * and whether the entry holds it. */
static void remember(struct agile_match_cache *cache, uint64_t generation,
                     socklen_t len)
{
	agile__match_cache_put(cache, generation, (struct sockaddr *)&ss, len,
	                      agile__rules_match(&rules, (struct sockaddr *)&ss,
	                                        len));
}

static bool held(const struct agile_match_cache *cache, uint64_t generation,
                 socklen_t len, int *dest)
{
	return agile_match_cache_get(cache, generation, (struct sockaddr *)&ss,
	                             len, dest);
}

/* A remembered match (agile_match_cache): kept for the same family, port
 * and address whatever else the sockaddr holds, never confused between
 * addresses, ports or families, and stale once a hostname rule learns an
 * address: the cached miss of 10.0.0.7 must not outlive the lookup that
 * makes it the API's. */
START_TEST(match_cache_keys_and_goes_stale)
{
	char *env[] = { "AGILE_DEST_API=api.example.com:443 max=5",
	                "AGILE_DEST_ANY=*:80 max=6", NULL };
	struct agile_match_cache cache;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	uint64_t generation;
	socklen_t len;
	int dest = 99;

	ck_assert_int_eq(parse_env(env), 0);
	memset(&cache, 0, sizeof(cache));
	generation = agile_rules_generation(&rules);
	ck_assert_uint_ne(generation, 0);
	/* Empty: nothing held, not even the all-zero address. */
	len = inet4("0.0.0.0", 0);
	ck_assert(!held(&cache, generation, len, &dest));

	len = inet4("10.0.0.7", 443);
	remember(&cache, generation, len);
	ck_assert(held(&cache, generation, len, &dest));
	ck_assert_int_eq(dest, -1);
	/* sin_zero is not part of the key; a short length never matches. */
	memset(in->sin_zero, 0xa5, sizeof(in->sin_zero));
	ck_assert(held(&cache, generation, len, &dest));
	ck_assert(!agile_match_cache_get(&cache, generation,
	                                 (struct sockaddr *)&ss, len - 9,
	                                 &dest));
	/* Another address, another port, the same bits as IPv6. */
	len = inet4("10.0.0.8", 443);
	ck_assert(!held(&cache, generation, len, &dest));
	len = inet4("10.0.0.7", 80);
	ck_assert(!held(&cache, generation, len, &dest));
	len = inet6("::ffff:10.0.0.7", 443);
	ck_assert(!held(&cache, generation, len, &dest));
	len = inet6("::a00:7", 443);
	ck_assert(!held(&cache, generation, len, &dest));

	/* IPv6: the flow label and scope are not part of the key. */
	len = inet6("2001:db8::7", 80);
	remember(&cache, generation, len);
	in6->sin6_flowinfo = htonl(0x12345);
	in6->sin6_scope_id = 3;
	ck_assert(held(&cache, generation, len, &dest));
	ck_assert_int_eq(dest, rule_named("any"));
	len = inet6("2001:db8::8", 80);
	ck_assert(!held(&cache, generation, len, &dest));
	/* An AF_UNIX address is never held. */
	len = unix_path("/x", true);
	agile__match_cache_put(&cache, generation, (struct sockaddr *)&ss, len, 0);
	ck_assert(!held(&cache, generation, len, &dest));

	/* The miss of 10.0.0.7:443, then the program resolves the API's
	 * name to it: the entry is stale, and matching again finds the API. */
	len = inet4("10.0.0.7", 443);
	agile__match_cache_put(&cache, generation, (struct sockaddr *)&ss, len,
	                      -1);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_gt(agile_rules_generation(&rules), generation);
	ck_assert(!agile_match_cache_get(&cache, agile_rules_generation(&rules),
	                                 (struct sockaddr *)&ss, len, &dest));
	ck_assert_int_eq(agile__rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("api"));
	/* Learning what is known already changes no match: the generation
	 * stays. */
	generation = agile_rules_generation(&rules);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_eq(agile_rules_generation(&rules), generation);
	/* A new address for a full list replaces the oldest, which then
	 * matches nothing: the generation moves on. */
	for (int i = 0; i < AGILE_RULE_HOST_ADDRS; i++) {
		char text[32];

		snprintf(text, sizeof(text), "192.0.2.%d", i + 1);
		len = inet4(text, 443);
		agile__rules_learn(&rules, "api.example.com",
		                  (struct sockaddr *)&ss, len);
	}
	generation = agile_rules_generation(&rules);
	len = inet4("10.0.0.7", 443);
	remember(&cache, generation, len);
	ck_assert(held(&cache, generation, len, &dest));
	ck_assert_int_eq(dest, -1); /* 10.0.0.7 was the oldest: replaced */
	len = inet4("198.51.100.1", 443);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_gt(agile_rules_generation(&rules), generation);
}
END_TEST

TCase *rules_match_tcase(void)
{
	TCase *tc = tcase_create("matching");

	tcase_add_test(tc, match_exact_ipv4);
	tcase_add_test(tc, match_exact_beats_cidr);
	tcase_add_test(tc, match_port_beats_any);
	tcase_add_test(tc, match_prefix_beats_port);
	tcase_add_test(tc, match_tie_goes_to_first);
	tcase_add_test(tc, match_ipv4_ipv6_and_mapped);
	tcase_add_test(tc, match_any_address);
	tcase_add_test(tc, match_skips_disabled);
	tcase_add_test(tc, match_unix);
	tcase_add_test(tc, match_cache_keys_and_goes_stale);
	return tc;
}
