/*
 * check_rules_lex.c - the Check tests of src/common/rules_lex.c: the numbers
 * of the rule syntax as the keys read them: durations and their units, the
 * tick's bounds, rates as decimals and as counts per period, decimals, and
 * the message for each reason a number cannot be read.
 */
#include "config.h"

#include "check_rules.h"

START_TEST(duration_units)
{
	static const struct {
		const char *text;
		int64_t ns;
	} good[] = {
		{ "100ns", 100 },
		{ "250us", 250 * AGILE_NS_PER_US },
		{ "200ms", 200 * AGILE_NS_PER_MS },
		{ "1.5s", 1500 * AGILE_NS_PER_MS },
		{ "0.1s", 100 * AGILE_NS_PER_MS }, /* exact, not 99999999 */
		{ ".5s", 500 * AGILE_NS_PER_MS },
		{ "2.s", 2 * AGILE_NS_PER_S },
		{ "2m", 120 * AGILE_NS_PER_S },
		{ "1.25m", 75 * AGILE_NS_PER_S },
		{ "0s", 0 },
		{ "-0s", 0 },
		{ "0.0000000015s", 1 },  /* fractions of a ns are dropped */
		{ "9223372036ms", INT64_C(9223372036) * AGILE_NS_PER_MS },
		{ "9223372036854775807ns", INT64_MAX },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t ns = -1;
		ck_assert_msg(agile__parse_duration(good[i].text, &ns) == 0,
		              "%s rejected", good[i].text);
		ck_assert_msg(ns == good[i].ns, "%s: %lld, expected %lld",
		              good[i].text, (long long)ns, (long long)good[i].ns);
	}
}
END_TEST

START_TEST(duration_rejects)
{
	static const char *const bad[] = {
		"200", "1.5", "-1s", "-0.5ms", "5d", "1sec", "s", "", ".s", "1e3s",
		"1,5s", "+1s", "1 s", "10000000000s", "9223372036854775808ns",
		"NaNs", "1.5.2s", "1MS",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ns = 42;
		ck_assert_msg(agile__parse_duration(bad[i], &ns) == -EINVAL,
		              "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(ns, 42);
	}
	ck_assert_int_eq(agile__parse_duration(NULL, NULL), -EINVAL);
}
END_TEST

/* The message the issue quotes, exactly; the setting keeps its default. */
START_TEST(duration_no_unit_message)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=500 slo=200",
		"AGILE_DEST_API: key \"slo\": \"200\" has no unit; expected a "
		"duration such as 250us, 200ms or 1.5s");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.slo_ns, 0);
}
END_TEST

/* The tick has a range, AGILE_TICK_MIN_NS to AGILE_TICK_MAX_NS (agile.h
 * says why); a tick outside it is refused with the range, and 0s is still
 * the default. */
START_TEST(tick_out_of_range)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=500 tick=1ns",
		"AGILE_DEST_API: key \"tick\": \"1ns\" is too short; expected a "
		"duration from 10ms to 60s such as 500ms, or 0s for the default "
		"of 1s");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.tick_ns, 0);
	ck_assert_only_message(
		"127.0.0.1:80 max=500 tick=9.999ms",
		"AGILE_DEST_API: key \"tick\": \"9.999ms\" is too short; expected "
		"a duration from 10ms to 60s such as 500ms, or 0s for the default "
		"of 1s");
	ck_assert_only_message(
		"127.0.0.1:80 max=500 tick=60.001s",
		"AGILE_DEST_API: key \"tick\": \"60.001s\" is too long; expected "
		"a duration from 10ms to 60s such as 500ms, or 0s for the default "
		"of 1s");
	ck_assert_int_eq(rule.config.tick_ns, 0);
	parse_ok("127.0.0.1:80 max=500 tick=10ms");
	ck_assert_int_eq(rule.config.tick_ns, AGILE_TICK_MIN_NS);
	parse_ok("127.0.0.1:80 max=500 tick=1m");
	ck_assert_int_eq(rule.config.tick_ns, AGILE_TICK_MAX_NS);
	parse_ok("127.0.0.1:80 max=500 tick=0s");
	ck_assert_int_eq(rule.config.tick_ns, 0);
}
END_TEST

START_TEST(duration_other_messages)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=500 tick=5d",
		"AGILE_DEST_API: key \"tick\": \"5d\" has an unknown unit; expected "
		"a duration from 10ms to 60s such as 500ms, or 0s for the default "
		"of 1s");
	ck_assert_only_message(
		"127.0.0.1:80 max=500 slow_half_life=-1s",
		"AGILE_DEST_API: key \"slow_half_life\": \"-1s\" is negative; "
		"expected a duration such as 250us, 200ms or 1.5s");
	ck_assert_only_message(
		"127.0.0.1:80 max=500 slow_down_half_life=soon",
		"AGILE_DEST_API: key \"slow_down_half_life\": \"soon\" is not a "
		"duration; expected a duration such as 250us, 200ms or 1.5s");
	ck_assert_only_message(
		"127.0.0.1:80 max=500 slo=10000000000s",
		"AGILE_DEST_API: key \"slo\": \"10000000000s\" is too large; "
		"expected a duration such as 250us, 200ms or 1.5s");
	ck_assert_only_message(
		"127.0.0.1:80 max=500 slo=",
		"AGILE_DEST_API: key \"slo\" has no value; expected a duration "
		"such as 250us, 200ms or 1.5s");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.slo_ns, 0);
}
END_TEST

/* Rates below one request per second: plain decimals or a whole count per
 * period, as quota= writes periods, down to one request per hour. */
START_TEST(sub_second_rates)
{
	parse_ok("127.0.0.1:80 max=0.5");
	ck_assert(rule.config.max_rate == 0.5);
	parse_ok("127.0.0.1:80 max=1/2s floor=1/2s");
	ck_assert(rule.config.max_rate == 0.5);
	ck_assert(rule.config.floor_rate == 0.5);
	parse_ok("127.0.0.1:80 max=30/1m floor=0.1 probe=1/m initial=0.25");
	ck_assert(rule.config.max_rate == 0.5);
	ck_assert(rule.config.floor_rate == 0.1);
	ck_assert(rule.config.probe_rate == 1.0 / 60.0);
	ck_assert(rule.config.initial_rate == 0.25);
	parse_ok("127.0.0.1:80 max=1/h");
	ck_assert(rule.config.max_rate == AGILE_MIN_RATE);
	parse_ok("127.0.0.1:80 max=2.5 floor=1.5");
	ck_assert(rule.config.max_rate == 2.5);
	parse_ok("127.0.0.1:80 max=500/s");
	ck_assert(rule.config.max_rate == 500);
	ck_assert_only_message(
		"127.0.0.1:80 max=0.0001",
		"AGILE_DEST_API: key \"max\": \"0.0001\" is below one request per "
		"hour, the slowest rate; expected " MAX_EXPECTED);
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"127.0.0.1:80 max=5e-1",
		"AGILE_DEST_API: key \"max\": \"5e-1\" has an exponent; write it "
		"in plain digits; expected " MAX_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=0.5/s",
		"AGILE_DEST_API: key \"max\": \"0.5/s\" is not a whole number; "
		"expected " MAX_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=1/",
		"AGILE_DEST_API: key \"max\": \"1/\" is not a number; expected "
		MAX_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=1/10x",
		"AGILE_DEST_API: key \"max\": \"1/10x\" has an unknown unit; "
		"expected " MAX_EXPECTED);
	/* Order checks and the core's repairs print the fractions. */
	ck_assert_only_message(
		"127.0.0.1:80 max=0.5 floor=0.75",
		"AGILE_DEST_API: floor (0.75) is above max (0.5); expected "
		"floor <= max");
	ck_assert(rule.enabled);
	/* concurrency=adaptive reads the bounds as requests in flight. */
	ck_assert_only_message(
		"127.0.0.1:80 max=2.5 concurrency=adaptive",
		"AGILE_DEST_API: key \"max\": 2.5 is not a whole number; expected "
		"a whole number of requests in flight under concurrency=adaptive");
	ck_assert(rule.config.max_rate == 3);
}
END_TEST

/* The message the issue quotes, exactly; without max the rule is off. */
START_TEST(max_not_a_number)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=fast",
		"AGILE_DEST_API: key \"max\": \"fast\" is not a number; expected "
		MAX_EXPECTED);
	ck_assert(!rule.enabled);
	/* "1e3" is a number to its writer: say what is wrong with it. */
	ck_assert_only_message(
		"127.0.0.1:80 max=1e3",
		"AGILE_DEST_API: key \"max\": \"1e3\" has an exponent; write it "
		"in plain digits; expected " MAX_EXPECTED);
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 up=5E-2"), 1);
	ck_assert_said("key \"up\": \"5E-2\" has an exponent; write it in "
	               "plain digits");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 up=5e"), 1);
	ck_assert_said("key \"up\": \"5e\" is not a number");
}
END_TEST

START_TEST(max_zero_negative_huge)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=0",
		"AGILE_DEST_API: key \"max\": \"0\" is not greater than 0; expected "
		MAX_EXPECTED);
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"127.0.0.1:80 max=-5",
		"AGILE_DEST_API: key \"max\": \"-5\" is negative; expected "
		MAX_EXPECTED);
	ck_assert(!rule.enabled);
	/* Rates below 1/s (see sub_second_rates); a period of 0 is none. */
	ck_assert_only_message(
		"127.0.0.1:80 max=1/0s",
		"AGILE_DEST_API: key \"max\": \"1/0s\" has a period of 0; "
		"expected " MAX_EXPECTED);
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"127.0.0.1:80 max=99999999999999999999999",
		"AGILE_DEST_API: key \"max\": \"99999999999999999999999\" is too "
		"large; expected at most 1000000000 requests per second");
	ck_assert(!rule.enabled);
	parse_ok("127.0.0.1:80 max=1000000000");
	ck_assert_int_eq(parse("127.0.0.1:80 max=1000000001"), 1);
	ck_assert(!rule.enabled);
}
END_TEST

START_TEST(rate_messages)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=50 floor=lots",
		"AGILE_DEST_API: key \"floor\": \"lots\" is not a number; expected "
		RATE_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=50 probe=-1",
		"AGILE_DEST_API: key \"probe\": \"-1\" is negative; expected "
		RATE_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=50 floor=1/2h",
		"AGILE_DEST_API: key \"floor\": \"1/2h\" is below one request per "
		"hour, the slowest rate; expected " RATE_EXPECTED);
	ck_assert_only_message(
		"127.0.0.1:80 max=50 backoff_ticks=two",
		"AGILE_DEST_API: key \"backoff_ticks\": \"two\" is not a number; "
		"expected a whole number of ticks, 0 or more");
	ck_assert_only_message(
		"127.0.0.1:80 max=50 recover_ticks=99999999999",
		"AGILE_DEST_API: key \"recover_ticks\": \"99999999999\" is too "
		"large; expected a whole number of ticks, 0 or more");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.recover_ticks, 0);
}
END_TEST

START_TEST(decimal_messages)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=50 deadband=wide",
		"AGILE_DEST_API: key \"deadband\": \"wide\" is not a number; "
		"expected a decimal number, 0 or more, such as 0.1");
	ck_assert_only_message(
		"127.0.0.1:80 max=50 gain=-0.5",
		"AGILE_DEST_API: key \"gain\": \"-0.5\" is negative; expected a "
		"decimal number, 0 or more, such as 0.5");
	ck_assert_only_message(
		"127.0.0.1:80 max=50 tail_factor=1e3",
		"AGILE_DEST_API: key \"tail_factor\": \"1e3\" has an exponent; "
		"write it in plain digits; expected a decimal number, 0 or more, "
		"such as 1.5");
	ck_assert_int_eq(parse("127.0.0.1:80 max=50 up=5000000"), 1);
	ck_assert_said("key \"up\": \"5000000\" is too large");
	ck_assert_int_eq(parse("127.0.0.1:80 max=50 inflation=nan"), 1);
	ck_assert_said("is not a number");
	ck_assert_int_eq(parse("127.0.0.1:80 max=50 recover_ramp=inf"), 1);
	ck_assert_said("is not a number");
	ck_assert(rule.enabled);
	ck_assert(rule.config.recover_ramp == 0);
	parse_ok("127.0.0.1:80 max=50 gain=2 down=.5 up=0");
	ck_assert_double_eq_tol(rule.config.gain, 2.0, 1e-12);
	ck_assert_double_eq_tol(rule.config.down_step, 0.5, 1e-12);
}
END_TEST

/* h is a unit of durations: a tick of 9999h is out of range, not an
 * unknown unit; a fraction of an hour is exact. */
START_TEST(duration_hours)
{
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 tick=9999h"), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: key \"tick\": "
	                 "\"9999h\" is too long; expected a duration from "
	                 "10ms to 60s such as 500ms, or 0s for the default of "
	                 "1s");
	parse_ok("127.0.0.1:80 max=5 slo=0.0000000000001h");
	ck_assert_int_eq(rule.config.slo_ns, 0);
	parse_ok("127.0.0.1:80 max=5 slo=0.5h");
	ck_assert_int_eq(rule.config.slo_ns, 1800 * AGILE_NS_PER_S);
	/* 13 fraction digits of an hour: past 64 bits before the division. */
	parse_ok("127.0.0.1:80 max=5 slo=0.9999999999999h");
	ck_assert_int_eq(rule.config.slo_ns, 3599999999999LL);
}
END_TEST

TCase *rules_lex_tcase(void)
{
	TCase *tc = tcase_create("numbers");

	tcase_add_test(tc, duration_units);
	tcase_add_test(tc, duration_rejects);
	tcase_add_test(tc, duration_no_unit_message);
	tcase_add_test(tc, duration_other_messages);
	tcase_add_test(tc, tick_out_of_range);
	tcase_add_test(tc, max_not_a_number);
	tcase_add_test(tc, sub_second_rates);
	tcase_add_test(tc, max_zero_negative_huge);
	tcase_add_test(tc, rate_messages);
	tcase_add_test(tc, decimal_messages);
	tcase_add_test(tc, duration_hours);
	return tc;
}
