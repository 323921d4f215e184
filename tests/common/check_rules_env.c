/*
 * check_rules_env.c - the Check tests of src/common/rules_env.c: the
 * environment scan: rules sorted by NAME the same way in every process, and
 * the messages that name the variable.
 */
#include "config.h"

#include "check_rules.h"

START_TEST(env_sorted_and_lower_cased)
{
	char *env[] = {
		"PATH=/bin",
		"AGILE_DEST_WEB=127.0.0.1:80 max=5",
		"AGILE_STATE=/tmp/x",
		"AGILE_DEST_api=127.0.0.1:81 max=6",
		"AGILE_DESTX=127.0.0.1:82 max=7",
		"AGILE_DEST_Cache=unix:/run/c.sock max=8",
		"AGILE_DEST_NOVALUE",
		NULL,
	};

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(rules.count, 3);
	ck_assert_str_eq(rules.rule[0].name, "api");
	ck_assert_str_eq(rules.rule[1].name, "cache");
	ck_assert_str_eq(rules.rule[2].name, "web");
	ck_assert_int_eq(rules.rule[0].config.max_rate, 6);
	ck_assert_int_eq(rules.rule[2].port, 80);
}
END_TEST

/* Two processes with the same variables in a different order see the same
 * rules in the same order: "first" means the same everywhere. */
START_TEST(env_order_is_stable)
{
	char *a[] = { "AGILE_DEST_B=1.1.1.1:1 max=1", "AGILE_DEST_A=1.1.1.1:2 max=2",
	              "AGILE_DEST_C=1.1.1.1:3 max=3", NULL };
	char *b[] = { "AGILE_DEST_C=1.1.1.1:3 max=3", "AGILE_DEST_A=1.1.1.1:2 max=2",
	              "AGILE_DEST_B=1.1.1.1:1 max=1", NULL };
	struct agile_rules first;

	ck_assert_int_eq(parse_env(a), 0);
	first = rules;
	ck_assert_int_eq(parse_env(b), 0);
	ck_assert_mem_eq(&first, &rules, sizeof(rules));
}
END_TEST

START_TEST(env_messages_name_the_variable)
{
	char *env[] = { "AGILE_DEST_API=127.0.0.1:80 max=500 flor=1",
	                "AGILE_DEST_DB=[::1]:5432 max=fast", NULL };

	ck_assert_int_eq(parse_env(env), 2);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: unknown key \"flor\"; "
	                               "did you mean \"floor\"?");
	ck_assert_str_eq(msgs.line[1], "AGILE_DEST_DB: key \"max\": \"fast\" is "
	                               "not a number; expected " MAX_EXPECTED);
	ck_assert_int_eq(rules.count, 2);
	ck_assert(rules.rule[0].enabled);
	ck_assert(!rules.rule[1].enabled);
}
END_TEST

START_TEST(env_empty_name)
{
	char *env[] = { "AGILE_DEST_=127.0.0.1:80 max=5", NULL };

	ck_assert_int_eq(parse_env(env), 1);
	ck_assert_int_eq(rules.count, 0);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_: no NAME after AGILE_DEST_; "
	                               "expected AGILE_DEST_<NAME>=DEST "
	                               "key=value...");
}
END_TEST

START_TEST(env_too_many)
{
	static char storage[AGILE_RULES_MAX + 2][64];
	char *env[AGILE_RULES_MAX + 3];

	for (int i = 0; i < AGILE_RULES_MAX + 2; i++) {
		snprintf(storage[i], sizeof(storage[i]),
		         "AGILE_DEST_R%02d=10.0.0.%d:80 max=5", i, i + 1);
		env[i] = storage[i];
	}
	env[AGILE_RULES_MAX + 2] = NULL;
	ck_assert_int_eq(parse_env(env), 2);
	ck_assert_int_eq(rules.count, AGILE_RULES_MAX);
	ck_assert_str_eq(rules.rule[AGILE_RULES_MAX - 1].name, "r31");
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_R32: too many destinations; "
	                               "at most 32 are read and this one is "
	                               "ignored");
}
END_TEST

START_TEST(env_same_name_twice)
{
	char *env[] = { "AGILE_DEST_API=127.0.0.1:80 max=5",
	                "AGILE_DEST_api=127.0.0.1:81 max=6", NULL };

	ck_assert_int_eq(parse_env(env), 1);
	ck_assert_int_eq(rules.count, 2);
	ck_assert_said("AGILE_DEST_api: the name \"api\" is already used");
	ck_assert(rules.rule[0].enabled && rules.rule[1].enabled);
}
END_TEST

START_TEST(env_null_and_empty)
{
	char *none[] = { NULL };

	ck_assert_int_eq(parse_env(NULL), 0);
	ck_assert_int_eq(rules.count, 0);
	ck_assert_int_eq(parse_env(none), 0);
	ck_assert_int_eq(rules.count, 0);
	ck_assert_int_eq(agile__rules_match(&rules, NULL, 0), -1);
}
END_TEST

TCase *rules_env_tcase(void)
{
	TCase *tc = tcase_create("environment");

	tcase_add_test(tc, env_sorted_and_lower_cased);
	tcase_add_test(tc, env_order_is_stable);
	tcase_add_test(tc, env_messages_name_the_variable);
	tcase_add_test(tc, env_empty_name);
	tcase_add_test(tc, env_too_many);
	tcase_add_test(tc, env_same_name_twice);
	tcase_add_test(tc, env_null_and_empty);
	return tc;
}
