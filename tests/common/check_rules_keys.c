/*
 * check_rules_keys.c - the Check tests of src/common/rules.c, rules_keys.c,
 * rules_checks.c: every key of the table and its default, the words of a
 * rule (unknown keys and "did you mean", malformed settings, keys set twice,
 * the name), repeats folded into one line, and the rates checked against one
 * another and against the core's own validation.
 */
#include "config.h"

#include "check_rules.h"

START_TEST(keys_every_one)
{
	parse_ok("127.0.0.1:80 max=500 min=2 floor=20 probe=3 initial=40 "
	         "slo=200ms anchor=slo preset=latency-first tail_factor=1.5 "
	         "tail_tolerance=0.05 tick=500ms up=0.1 down=0.25 gain=0.75 "
	         "inflation=1.5 deadband=0.2 backoff_ticks=3 recover_ticks=4 "
	         "slow_start=1.5 recover_ramp=0.5 slow_half_life=30s "
	         "slow_down_half_life=2.5s max_baseline_rise=0.01 pace=connect");
	const struct agile_config *c = &rule.config;
	ck_assert_int_eq(c->max_rate, 500);
	ck_assert_int_eq(c->min_rate, 2);
	ck_assert_int_eq(c->floor_rate, 20);
	ck_assert_int_eq(c->probe_rate, 3);
	ck_assert_int_eq(c->initial_rate, 40);
	ck_assert_int_eq(c->slo_ns, 200 * AGILE_NS_PER_MS);
	ck_assert_int_eq(c->anchor, AGILE_ANCHOR_SLO);
	ck_assert_int_eq(c->preset, AGILE_PRESET_LATENCY_FIRST);
	ck_assert_double_eq_tol(c->tail_factor, 1.5, 1e-12);
	ck_assert_double_eq_tol(c->tail_tolerance, 0.05, 1e-12);
	ck_assert_int_eq(c->tick_ns, 500 * AGILE_NS_PER_MS);
	ck_assert_double_eq_tol(c->up_step, 0.1, 1e-12);
	ck_assert_double_eq_tol(c->down_step, 0.25, 1e-12);
	ck_assert_double_eq_tol(c->gain, 0.75, 1e-12);
	ck_assert_double_eq_tol(c->target_inflation, 1.5, 1e-12);
	ck_assert_double_eq_tol(c->deadband, 0.2, 1e-12);
	ck_assert_int_eq(c->backoff_ticks, 3);
	ck_assert_int_eq(c->recover_ticks, 4);
	ck_assert_double_eq_tol(c->slow_start_gain, 1.5, 1e-12);
	ck_assert_double_eq_tol(c->recover_ramp, 0.5, 1e-12);
	ck_assert_int_eq(c->slow_half_life_ns, 30 * AGILE_NS_PER_S);
	ck_assert_int_eq(c->slow_down_half_life_ns, 2500 * AGILE_NS_PER_MS);
	ck_assert_double_eq_tol(c->max_baseline_rise, 0.01, 1e-12);
	ck_assert_int_eq(rule.pace, AGILE_PACE_CONNECT);
}
END_TEST

START_TEST(keys_defaults_are_zero)
{
	static const struct agile_config zero_except_max = { .max_rate = 7 };

	parse_ok("127.0.0.1:80 max=7");
	ck_assert_mem_eq(&rule.config, &zero_except_max, sizeof(rule.config));
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
	ck_assert_str_eq(agile__pace_name(AGILE_PACE_REQUEST), "request");
	ck_assert_str_eq(agile__pace_name(AGILE_PACE_CONNECT), "connect");
}
END_TEST

START_TEST(keys_whitespace)
{
	parse_ok("\t 127.0.0.1:80 \t max=7   floor=2\n");
	ck_assert_int_eq(rule.config.max_rate, 7);
	ck_assert_int_eq(rule.config.floor_rate, 2);
}
END_TEST

START_TEST(keys_anchor_values)
{
	parse_ok("127.0.0.1:80 max=7 anchor=baseline");
	ck_assert_int_eq(rule.config.anchor, AGILE_ANCHOR_BASELINE);
	parse_ok("127.0.0.1:80 max=7 anchor=unset");
	ck_assert_int_eq(rule.config.anchor, AGILE_ANCHOR_UNSET);
	ck_assert_only_message(
		"127.0.0.1:80 max=7 anchor=p99",
		"AGILE_DEST_API: key \"anchor\": \"p99\" is not an anchor; expected "
		"unset, baseline or slo");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.anchor, AGILE_ANCHOR_UNSET);
}
END_TEST

START_TEST(keys_preset_values)
{
	parse_ok("127.0.0.1:80 max=7 preset=none");
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_NONE);
	parse_ok("127.0.0.1:80 max=7 preset=balanced");
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_BALANCED);
	parse_ok("127.0.0.1:80 max=7 preset=throughput-first");
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_THROUGHPUT_FIRST);
	ck_assert_only_message(
		"127.0.0.1:80 max=7 preset=fastest",
		"AGILE_DEST_API: key \"preset\": \"fastest\" is not a preset; "
		"expected none, balanced, latency-first, throughput-first or "
		"seed");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_NONE);
}
END_TEST

START_TEST(keys_pace_values)
{
	parse_ok("127.0.0.1:80 max=7 pace=request");
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
	ck_assert_only_message(
		"127.0.0.1:80 max=7 pace=stream",
		"AGILE_DEST_API: key \"pace\": \"stream\" is not a pace; expected "
		"request or connect");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
}
END_TEST

START_TEST(max_missing)
{
	ck_assert_only_message(
		"127.0.0.1:80 floor=5",
		"AGILE_DEST_API: key \"max\" is missing; expected max=N, "
		MAX_EXPECTED);
	ck_assert(!rule.enabled);
}
END_TEST

/* The message the issue quotes, exactly.  The floor falls back to its
 * default and the ceiling stays: a typo must never lift the limit. */
START_TEST(floor_above_max)
{
	ck_assert_only_message(
		"127.0.0.1:80 max=500 floor=600",
		"AGILE_DEST_API: floor (600) is above max (500); expected "
		"floor <= max");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.max_rate, 500);
	ck_assert_int_eq(rule.config.floor_rate, 0);
}
END_TEST

START_TEST(rates_above_each_other)
{
	ck_assert_only_message("127.0.0.1:80 max=50 min=60",
	                       "AGILE_DEST_API: min (60) is above max (50); "
	                       "expected min <= max");
	ck_assert_int_eq(rule.config.min_rate, 0);
	ck_assert_only_message("127.0.0.1:80 max=50 initial=60",
	                       "AGILE_DEST_API: initial (60) is above max (50); "
	                       "expected initial <= max");
	ck_assert_int_eq(rule.config.initial_rate, 0);
	ck_assert_only_message("127.0.0.1:80 max=50 floor=10 probe=20",
	                       "AGILE_DEST_API: probe (20) is above floor (10); "
	                       "expected probe <= floor");
	ck_assert_int_eq(rule.config.probe_rate, 0);
	ck_assert_int_eq(rule.config.floor_rate, 10);
	ck_assert(rule.enabled);
	/* floor = max is the fixed-rate configuration, and fine. */
	parse_ok("127.0.0.1:80 max=20 floor=20");
}
END_TEST

/* What the core's validation finds is reported too, in the user's key
 * names rather than the struct's field names. */
START_TEST(core_validation_in_key_names)
{
	ck_assert_int_eq(parse("127.0.0.1:80 max=50 up=1.5"), 1);
	ck_assert_msg(strncmp(msgs.line[0], "AGILE_DEST_API: up (1.5)", 24) == 0,
	              "%s", msgs.line[0]);
	ck_assert_msg(strstr(msgs.line[0], "up_step") == NULL, "%s",
	              msgs.line[0]);
	ck_assert(rule.enabled);

	ck_assert_int_eq(parse("127.0.0.1:80 max=50 deadband=1.5"), 1);
	ck_assert_said("AGILE_DEST_API: deadband (1.5)");

	ck_assert_int_eq(parse("127.0.0.1:80 max=50 anchor=slo"), 1);
	ck_assert_said("AGILE_DEST_API: anchor slo needs slo");
	ck_assert(!said("slo_ns"));

	ck_assert_int_eq(parse("127.0.0.1:80 max=50 floor=20 initial=5"), 1);
	ck_assert_said("AGILE_DEST_API: initial (5) is below floor (20)");
	ck_assert(rule.enabled);
}
END_TEST

/* The message the issue quotes, exactly. */
START_TEST(unknown_key_suggestion)
{
	ck_assert_only_message("127.0.0.1:80 max=500 flor=20",
	                       "AGILE_DEST_API: unknown key \"flor\"; did you mean "
	                       "\"floor\"?");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.floor_rate, 0);
}
END_TEST

START_TEST(unknown_key_nearest)
{
	static const struct {
		const char *typed;
		const char *meant;
	} cases[] = {
		{ "MAX", "max" },            /* case */
		{ "mxa", "max" },            /* swapped letters */
		{ "flooor", "floor" },
		{ "slos", "slo" },
		{ "tail_factr", "tail_factor" },
		{ "backof_ticks", "backoff_ticks" },
		{ "slow_halflife", "slow_half_life" },
		{ "slow-start", "slow_start" },
		{ "infltion", "inflation" },
		{ "deadbnd", "deadband" },
		{ "max_baselin_rise", "max_baseline_rise" },
		{ "presets", "preset" },
		{ "paec", "pace" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char value[128], want[128];
		snprintf(value, sizeof(value), "127.0.0.1:80 max=5 %s=1",
		         cases[i].typed);
		snprintf(want, sizeof(want), "did you mean \"%s\"?",
		         cases[i].meant);
		ck_assert_int_eq(parse(value), 1);
		ck_assert_msg(said(want), "%s: %s", cases[i].typed, msgs.line[0]);
	}
}
END_TEST

START_TEST(unknown_key_no_suggestion)
{
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 colour=blue"), 1);
	ck_assert_said("AGILE_DEST_API: unknown key \"colour\"; expected one of "
	               "max, min, floor, probe, initial, slo, anchor, preset, ");
	ck_assert_said("max_baseline_rise, delivered_share, knee_ramp, "
	               "probe_acceleration, goodput_cut, pace, inflight");
	ck_assert(!said("did you mean"));
	ck_assert(rule.enabled);
	/* One letter is never "close" to a key of three. */
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 x=1"), 1);
	ck_assert(!said("did you mean"));
}
END_TEST

START_TEST(malformed_settings)
{
	ck_assert_only_message("127.0.0.1:80 max=5 floor",
	                       "AGILE_DEST_API: key \"floor\" has no value; "
	                       "expected floor=VALUE");
	ck_assert_only_message("127.0.0.1:80 max=5 500",
	                       "AGILE_DEST_API: \"500\" is not a setting; "
	                       "expected key=value");
	ck_assert_only_message("127.0.0.1:80 max=5 =5",
	                       "AGILE_DEST_API: \"=5\" has no key; expected "
	                       "key=value, with no space around \"=\"");
	/* "floor = 5": each word is reported, none as an unknown key. */
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 floor = 5"), 3);
	ck_assert_said("\"=\" has no key; expected key=value, with no space "
	               "around \"=\"");
	ck_assert(!said("unknown key"));
	ck_assert_only_message("127.0.0.1:80 max=5 floor=",
	                       "AGILE_DEST_API: key \"floor\" has no value; "
	                       "expected " RATE_EXPECTED);
	ck_assert(rule.enabled);
}
END_TEST

/* A repeated key keeps its first value: the second cannot lift a max that
 * was already promised. */
START_TEST(duplicate_key_keeps_first)
{
	ck_assert_only_message("127.0.0.1:80 max=5 max=500",
	                       "AGILE_DEST_API: key \"max\" is set twice; expected "
	                       "each key once (the first value is kept)");
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.max_rate, 5);
}
END_TEST

/* Strictness, all at once: every bad setting is reported, each keeps its
 * default, and the rule stays in force with its ceiling. */
START_TEST(bad_settings_keep_defaults)
{
	int errors = parse("127.0.0.1:80 max=500 floor=abc slo=200 flor=3 "
	                   "deadband=x preset=fast pace=x tick=1h");

	ck_assert_int_eq(errors, 7);
	ck_assert_int_eq(msgs.count, 7);
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule.config.max_rate, 500);
	ck_assert_int_eq(rule.config.floor_rate, 0);
	ck_assert_int_eq(rule.config.slo_ns, 0);
	ck_assert_int_eq(rule.config.tick_ns, 0);
	ck_assert(rule.config.deadband == 0);
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_NONE);
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
	for (int i = 0; i < msgs.count; i++)
		ck_assert_msg(strncmp(msgs.line[i], "AGILE_DEST_API: ", 16) == 0,
		              "%s", msgs.line[i]);
}
END_TEST

START_TEST(long_name_is_cut_and_reported)
{
	char name[100];

	memset(name, 'N', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_N", name,
	                                  "127.0.0.1:80 max=5", &rule, collect,
	                                  &msgs),
	                 1);
	ck_assert_said("the name is longer than 47 characters");
	ck_assert_int_eq(strlen(rule.name), AGILE_RULE_NAME_MAX - 1);
	ck_assert(rule.name[0] == 'n');
	ck_assert(rule.enabled);
}
END_TEST

/* A NAME that agilerun would refuse ("my-api", set with env(1) or a
 * service unit) is reported too; the rule still applies. */
START_TEST(name_characters_reported)
{
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_my-api", "my-api",
	                                  "127.0.0.1:80 max=5", &rule, collect,
	                                  &msgs),
	                 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_DEST_my-api: the name may hold only letters, "
	                 "digits and '_'; agilestat shows it as \"my-api\"");
	ck_assert(rule.enabled);
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_Api_2", "Api_2",
	                                  "127.0.0.1:80 max=5", &rule, collect,
	                                  &msgs),
	                 0);
}
END_TEST

START_TEST(variable_name_of_a_rule)
{
	char var[32];

	ck_assert_int_eq(agile__rule_var("api_v2", var, sizeof(var)), 17);
	ck_assert_str_eq(var, "AGILE_DEST_API_V2");
	/* Cut to fit, and still terminated, like snprintf. */
	ck_assert_int_eq(agile__rule_var("api_v2", var, 14), 17);
	ck_assert_str_eq(var, "AGILE_DEST_AP");
	ck_assert_int_eq(agile__rule_var("x", var, 0), 12);
}
END_TEST

START_TEST(no_callback_is_fine)
{
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_X", "x", "nowhere max=x",
	                                  &rule, NULL, NULL),
	                 2);
	ck_assert(!rule.enabled);
}
END_TEST

/* A problem repeated in one variable is one line with its count, the
 * first occurrence's text (issue 16, item 13: a key given 9,999 times
 * printed 9,999 lines). */
START_TEST(repeats_are_one_line)
{
	char value[8192] = "127.0.0.1:80 max=5";
	size_t n = strlen(value);

	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(value + n, sizeof(value) - n, " max=%d",
		                      i + 6);
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(value + n, sizeof(value) - n, " word%d", i);
	ck_assert_int_eq(parse(value), 500);
	ck_assert_int_eq(msgs.count, 2);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: key \"max\" is set "
	                 "twice; expected each key once (the first value is "
	                 "kept) (and 299 more like it)");
	ck_assert_str_eq(msgs.line[1], "AGILE_DEST_API: \"word0\" is not a "
	                 "setting; expected key=value (and 199 more like it)");
	ck_assert(rule.enabled);
	ck_assert(rule.config.max_rate == 5.0);
}
END_TEST

TCase *rules_keys_tcase(void)
{
	TCase *tc = tcase_create("keys");

	tcase_add_test(tc, keys_every_one);
	tcase_add_test(tc, keys_defaults_are_zero);
	tcase_add_test(tc, keys_whitespace);
	tcase_add_test(tc, keys_anchor_values);
	tcase_add_test(tc, keys_preset_values);
	tcase_add_test(tc, keys_pace_values);
	tcase_add_test(tc, max_missing);
	tcase_add_test(tc, floor_above_max);
	tcase_add_test(tc, rates_above_each_other);
	tcase_add_test(tc, core_validation_in_key_names);
	tcase_add_test(tc, unknown_key_suggestion);
	tcase_add_test(tc, unknown_key_nearest);
	tcase_add_test(tc, unknown_key_no_suggestion);
	tcase_add_test(tc, malformed_settings);
	tcase_add_test(tc, duplicate_key_keeps_first);
	tcase_add_test(tc, bad_settings_keep_defaults);
	tcase_add_test(tc, long_name_is_cut_and_reported);
	tcase_add_test(tc, name_characters_reported);
	tcase_add_test(tc, no_callback_is_fine);
	tcase_add_test(tc, variable_name_of_a_rule);
	tcase_add_test(tc, repeats_are_one_line);
	return tc;
}
