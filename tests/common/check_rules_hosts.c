/*
 * check_rules_hosts.c - the Check tests of src/common/rules_hosts.c: host
 * names: learning the addresses the program's lookups return, keeping the
 * last ones, and resolving at start-up through a resolver the test supplies.
 */
#include "config.h"

#include "check_rules.h"

START_TEST(learn_then_match)
{
	char *env[] = { "AGILE_DEST_API=Api.Example.com:443 max=5",
	                "AGILE_DEST_NET=10.0.0.0/8:443 max=6", NULL };
	socklen_t len;

	ck_assert_int_eq(parse_env(env), 0);
	/* Before the program resolves the name, its addresses are unknown. */
	ck_assert_int_eq(match4("10.0.0.7", 443), rule_named("net"));

	len = inet4("10.0.0.7", 0);
	agile__rules_learn(&rules, "api.EXAMPLE.com.", (struct sockaddr *)&ss,
	                  len);
	len = inet6("2001:db8::7", 12345);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_int_eq(rules.rule[rule_named("api")].host_addr_count, 2);

	/* A hostname is exact addresses: it beats the /8. */
	ck_assert_int_eq(match4("10.0.0.7", 443), rule_named("api"));
	ck_assert_int_eq(match6("::ffff:10.0.0.7", 443), rule_named("api"));
	ck_assert_int_eq(match6("2001:db8::7", 443), rule_named("api"));
	/* The rule's port applies, not the one in the learned address. */
	ck_assert_int_eq(match6("2001:db8::7", 12345), -1);
	ck_assert_int_eq(match4("10.0.0.8", 443), rule_named("net"));
}
END_TEST

START_TEST(learn_ignores_others_and_duplicates)
{
	char *env[] = { "AGILE_DEST_API=api.example.com:443 max=5", NULL };
	struct agile_rule *api;
	socklen_t len;

	ck_assert_int_eq(parse_env(env), 0);
	api = &rules.rule[0];
	api->host_unresolved = true;
	len = inet4("192.0.2.1", 0);
	agile__rules_learn(&rules, "other.example.com", (struct sockaddr *)&ss,
	                  len);
	agile__rules_learn(&rules, "api.example.com.evil", (struct sockaddr *)&ss,
	                  len);
	agile__rules_learn(&rules, NULL, (struct sockaddr *)&ss, len);
	ck_assert_int_eq(api->host_addr_count, 0);
	ck_assert(api->host_unresolved);

	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_int_eq(api->host_addr_count, 1);
	/* The program resolved it after all. */
	ck_assert(!api->host_unresolved);
	/* An address family the rules do not know is ignored. */
	len = unix_path("/x", true);
	agile__rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_int_eq(api->host_addr_count, 1);
}
END_TEST

/* DNS round robin: past the list's size the oldest address is replaced, so
 * the newest ones always match. */
START_TEST(learn_replaces_oldest_when_full)
{
	char *env[] = { "AGILE_DEST_LB=lb.example.com:80 max=5", NULL };
	char addr[32];
	socklen_t len;

	ck_assert_int_eq(parse_env(env), 0);
	for (int i = 1; i <= AGILE_RULE_HOST_ADDRS + 3; i++) {
		snprintf(addr, sizeof(addr), "192.0.2.%d", i);
		len = inet4(addr, 0);
		agile__rules_learn(&rules, "lb.example.com", (struct sockaddr *)&ss,
		                  len);
	}
	ck_assert_int_eq(rules.rule[0].host_addr_count, AGILE_RULE_HOST_ADDRS);
	ck_assert_int_eq(match4("192.0.2.1", 80), -1);
	ck_assert_int_eq(match4("192.0.2.3", 80), -1);
	ck_assert_int_eq(match4("192.0.2.4", 80), 0);
	snprintf(addr, sizeof(addr), "192.0.2.%d", AGILE_RULE_HOST_ADDRS + 3);
	ck_assert_int_eq(match4(addr, 80), 0);
}
END_TEST

/* A resolver stand-in: "good.test" is 198.51.100.1 (a numeric lookup, so no
 * network), everything else does not exist. */
static int fake_calls;

static int fake_resolve(const char *node, const char *service,
                        const struct addrinfo *hints, struct addrinfo **res)
{
	struct addrinfo numeric = *hints;

	fake_calls++;
	if (strcmp(node, "good.test") != 0)
		return EAI_NONAME;
	numeric.ai_flags |= AI_NUMERICHOST;
	return getaddrinfo("198.51.100.1", service, &numeric, res);
}

START_TEST(resolve_hosts_learns_and_flags_failures)
{
	char *env[] = { "AGILE_DEST_GOOD=good.test:80 max=5",
	                "AGILE_DEST_LOST=lost.test:80 max=5",
	                "AGILE_DEST_IP=127.0.0.1:80 max=5", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	fake_calls = 0;
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__rules_resolve_hosts(&rules, fake_resolve, collect,
	                                           &msgs),
	                 1);
	/* Only hostname rules are looked up. */
	ck_assert_int_eq(fake_calls, 2);
	ck_assert_int_eq(rules.rule[rule_named("good")].host_addr_count, 1);
	ck_assert(!rules.rule[rule_named("good")].host_unresolved);
	ck_assert_int_eq(match4("198.51.100.1", 80), rule_named("good"));
	ck_assert(rules.rule[rule_named("lost")].host_unresolved);
	ck_assert_int_eq(msgs.count, 1);
	ck_assert_said("AGILE_DEST_LOST: cannot resolve host \"lost.test\" (");
	ck_assert_said("); its connections count as unreachable until the "
	               "program resolves it");
}
END_TEST

/* The resolver really returning a list: localhost always resolves. */
START_TEST(resolve_hosts_with_getaddrinfo)
{
	char *env[] = { "AGILE_DEST_LOCAL=localhost:80 max=5", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(agile__rules_resolve_hosts(&rules, NULL, NULL, NULL), 0);
	ck_assert_int_gt(rules.rule[0].host_addr_count, 0);
	ck_assert(!rules.rule[0].host_unresolved);
	ck_assert_int_eq(match4("127.0.0.1", 80), 0);
	/* A rule that already has addresses is not looked up again. */
	fake_calls = 0;
	ck_assert_int_eq(agile__rules_resolve_hosts(&rules, fake_resolve, NULL,
	                                           NULL),
	                 0);
	ck_assert_int_eq(fake_calls, 0);
}
END_TEST

TCase *rules_hosts_tcase(void)
{
	TCase *tc = tcase_create("hostnames");

	tcase_add_test(tc, learn_then_match);
	tcase_add_test(tc, learn_ignores_others_and_duplicates);
	tcase_add_test(tc, learn_replaces_oldest_when_full);
	tcase_add_test(tc, resolve_hosts_learns_and_flags_failures);
	tcase_add_test(tc, resolve_hosts_with_getaddrinfo);
	return tc;
}
