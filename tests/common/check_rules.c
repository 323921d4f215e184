/*
 * check_rules.c - the destination rules of the preload (src/common/rules.c):
 * every destination form, every key, every error message, the strictness
 * policy (a bad setting keeps its default and the rule stays in force; a bad
 * destination or max disables the rule), matching precedence, and learning
 * hostnames.  The parser is pure, so everything here runs without a socket,
 * a process or the network.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#define MESSAGES_MAX 48

/* Every message the parser reported, in order. */
struct messages {
	char line[MESSAGES_MAX][512];
	int count;
};

static void collect(const char *message, void *arg)
{
	struct messages *m = arg;

	ck_assert_msg(strchr(message, '\n') == NULL,
	              "a message must be one line: \"%s\"", message);
	if (m->count < MESSAGES_MAX)
		snprintf(m->line[m->count], sizeof(m->line[0]), "%s", message);
	m->count++;
}

/* Parse one value as AGILE_DEST_API; the rule and messages are static so
 * a test can look at both. */
static struct agile_rule rule;
static struct messages msgs;

static int parse(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile_rule_parse("AGILE_DEST_API", "API", value, &rule, collect,
	                        &msgs);
}

/* Parse a value that must be clean. */
static void parse_ok(const char *value)
{
	int errors = parse(value);

	ck_assert_msg(errors == 0, "\"%s\": %d errors, first: %s", value, errors,
	              msgs.count > 0 ? msgs.line[0] : "(none)");
	ck_assert(rule.enabled);
}

/* Whether some message contains `needle`. */
static bool said(const char *needle)
{
	for (int i = 0; i < msgs.count && i < MESSAGES_MAX; i++)
		if (strstr(msgs.line[i], needle) != NULL)
			return true;
	return false;
}

#define ck_assert_said(needle)                                                \
	ck_assert_msg(said(needle), "no message contains \"%s\"; first: \"%s\"", \
	              needle, msgs.count > 0 ? msgs.line[0] : "(none)")

/* The single message a value produces, compared exactly. */
#define ck_assert_only_message(value, expected)                               \
	do {                                                                  \
		int errors_ = parse(value);                                   \
		ck_assert_int_eq(errors_, 1);                                 \
		ck_assert_int_eq(msgs.count, 1);                              \
		ck_assert_str_eq(msgs.line[0], expected);                     \
	} while (0)

static void prefix_of(const char *text, uint8_t out[16])
{
	struct in6_addr a6;
	struct in_addr a4;

	memset(out, 0, 16);
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		memcpy(out, &a6, 16);
		return;
	}
	ck_assert_int_eq(inet_pton(AF_INET, text, &a4), 1);
	out[10] = 0xff;
	out[11] = 0xff;
	memcpy(out + 12, &a4, 4);
}

static void ck_assert_prefix(const char *addr, int len)
{
	uint8_t want[16];

	prefix_of(addr, want);
	ck_assert_int_eq(rule.kind, AGILE_DEST_INET);
	ck_assert_mem_eq(rule.prefix.addr, want, 16);
	ck_assert_int_eq(rule.prefix.prefix_len, len);
}

/* Socket addresses for matching. */
static struct sockaddr_storage ss;

static socklen_t inet4(const char *addr, int port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET, addr, &in->sin_addr), 1);
	return sizeof(*in);
}

static socklen_t inet6(const char *addr, int port)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
	return sizeof(*in6);
}

static socklen_t unix_path(const char *path, bool with_nul)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	size_t len = strlen(path);

	memset(&ss, 0, sizeof(ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, path, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
	                   (with_nul ? 1 : 0));
}

static socklen_t unix_abstract(const char *name)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	size_t len = strlen(name);

	memset(&ss, 0, sizeof(ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + 1, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

/* Parse an environment into `rules`. */
static struct agile_rules rules;

static int parse_env(char *const *envp)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile_rules_parse(envp, &rules, collect, &msgs);
}

static int match4(const char *addr, int port)
{
	socklen_t len = inet4(addr, port);
	return agile_rules_match(&rules, (struct sockaddr *)&ss, len);
}

static int match6(const char *addr, int port)
{
	socklen_t len = inet6(addr, port);
	return agile_rules_match(&rules, (struct sockaddr *)&ss, len);
}

/* The index of the rule named `name`, which must exist. */
static int rule_named(const char *name)
{
	for (int i = 0; i < rules.count; i++)
		if (strcmp(rules.rule[i].name, name) == 0)
			return i;
	ck_abort_msg("no rule named %s", name);
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Destinations                                                              */
/* ------------------------------------------------------------------------ */

START_TEST(dest_ipv4)
{
	parse_ok("127.0.0.1:8080 max=500");
	ck_assert_prefix("127.0.0.1", 128);
	ck_assert_int_eq(rule.port, 8080);
	ck_assert_str_eq(rule.dest_text, "127.0.0.1:8080");
	ck_assert_str_eq(rule.name, "api");
	ck_assert_int_eq(rule.config.max_rate, 500);
}
END_TEST

START_TEST(dest_ipv6)
{
	parse_ok("[::1]:5432 max=200");
	ck_assert_prefix("::1", 128);
	ck_assert_int_eq(rule.port, 5432);
	parse_ok("[2001:db8::10]:443 max=1");
	ck_assert_prefix("2001:db8::10", 128);
}
END_TEST

START_TEST(dest_cidr_ipv4)
{
	parse_ok("10.0.0.0/8:443 max=100");
	ck_assert_prefix("10.0.0.0", 96 + 8);
	ck_assert_int_eq(rule.port, 443);
	/* Host bits past the prefix are dropped, with a warning
	 * (dest_host_bits_warned): /8 is /8. */
	ck_assert_int_eq(parse("10.1.2.3/8:443 max=100"), 1);
	ck_assert(rule.enabled);
	ck_assert_prefix("10.0.0.0", 104);
	ck_assert_int_eq(parse("192.168.1.77/25:80 max=100"), 1);
	ck_assert_prefix("192.168.1.0", 96 + 25);
	parse_ok("0.0.0.0/0:80 max=100");
	ck_assert_prefix("0.0.0.0", 96);
}
END_TEST

START_TEST(dest_cidr_ipv6)
{
	parse_ok("[fd00::/8]:443 max=100");
	ck_assert_prefix("fd00::", 8);
	ck_assert_int_eq(parse("[2001:db8:ffff::1/33]:443 max=100"), 1);
	ck_assert(rule.enabled);
	ck_assert_prefix("2001:db8:8000::", 33);
}
END_TEST

START_TEST(dest_hostname)
{
	parse_ok("API.Example.com.:443 max=10");
	ck_assert_int_eq(rule.kind, AGILE_DEST_HOST);
	ck_assert_str_eq(rule.host, "api.example.com");
	ck_assert_str_eq(rule.dest_text, "API.Example.com.:443");
	ck_assert_int_eq(rule.port, 443);
	ck_assert_int_eq(rule.host_addr_count, 0);
	ck_assert(!rule.host_unresolved);
	parse_ok("localhost:6379 max=10");
	ck_assert_str_eq(rule.host, "localhost");
	parse_ok("db-1.internal_zone:5432 max=10");
	ck_assert_str_eq(rule.host, "db-1.internal_zone");
}
END_TEST

START_TEST(dest_any_port)
{
	parse_ok("127.0.0.1:* max=10");
	ck_assert_prefix("127.0.0.1", 128);
	ck_assert_int_eq(rule.port, 0);
	parse_ok("api.example.com:* max=10");
	ck_assert_int_eq(rule.port, 0);
	parse_ok("[::1]:* max=10");
	ck_assert_int_eq(rule.port, 0);
}
END_TEST

START_TEST(dest_any_address)
{
	parse_ok("*:443 max=10");
	ck_assert_int_eq(rule.kind, AGILE_DEST_INET);
	ck_assert_int_eq(rule.prefix.prefix_len, 0);
	ck_assert_int_eq(rule.port, 443);
	parse_ok("*:* max=10");
	ck_assert_int_eq(rule.port, 0);
}
END_TEST

START_TEST(dest_unix)
{
	parse_ok("unix:/run/app.sock max=10");
	ck_assert_int_eq(rule.kind, AGILE_DEST_UNIX);
	ck_assert_str_eq(rule.unix_path, "/run/app.sock");
	parse_ok("unix:@abstract-name max=10");
	ck_assert_str_eq(rule.unix_path, "@abstract-name");
}
END_TEST

START_TEST(dest_unix_path_too_long)
{
	char value[300];
	char path[200];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	snprintf(value, sizeof(value), "unix:%s max=10", path);
	ck_assert_int_eq(parse(value), 1);
	ck_assert(!rule.enabled);
	ck_assert_said("the path is too long; expected at most 107 bytes");
}
END_TEST

/* The message the issue quotes, exactly. */
START_TEST(dest_error_message)
{
	ck_assert_only_message(
		"127.0.0.1: max=500",
		"AGILE_DEST_API: cannot read destination \"127.0.0.1:\"; expected "
		"IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path");
	ck_assert(!rule.enabled);
	/* The settings are still read, so every other mistake shows too. */
	ck_assert_int_eq(rule.config.max_rate, 500);
}
END_TEST

START_TEST(dest_unreadable_forms)
{
	static const char *const bad[] = {
		"127.0.0.1",       /* no port */
		"::1:80",          /* IPv6 without brackets */
		"[::1]80",         /* no colon after the bracket */
		"[::1:80",         /* no closing bracket */
		"[127.0.0.1]:80",  /* IPv4 in brackets */
		"[fd00::/]:80",    /* empty prefix length */
		"300.1.1.1:80",    /* not an IPv4 address, not a host */
		"1.2.3:80",        /* too few octets */
		"ho st:80",        /* (split at the space: "ho") */
		"a..b:80",         /* empty label */
		"host!:80",        /* not a hostname character */
		":80",             /* no host */
		"unix:relative",   /* not an absolute path */
		"unix:",           /* no path */
		"unix:/",          /* no name */
		"api:http",        /* a service name is not a port */
		"1.2.3.4:-1",      /* negative port */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char value[128];
		snprintf(value, sizeof(value), "%s max=10", bad[i]);
		ck_assert_msg(parse(value) >= 1, "%s was accepted", bad[i]);
		ck_assert_msg(!rule.enabled, "%s left the rule enabled", bad[i]);
		ck_assert_msg(strncmp(msgs.line[0], "AGILE_DEST_API: ", 16) == 0,
		              "%s", msgs.line[0]);
		ck_assert_msg(strstr(msgs.line[0], "destination") != NULL,
		              "%s: %s", bad[i], msgs.line[0]);
	}
}
END_TEST

/* The likely slips get a message that says what to change, not only the
 * list of forms: an IPv6 address without brackets, a prefix length outside
 * them, an address without a port. */
START_TEST(dest_specific_messages)
{
	ck_assert_only_message(
		"::1:5432 max=10",
		"AGILE_DEST_API: destination \"::1:5432\": an IPv6 address needs "
		"brackets; expected [IPv6]:PORT such as [::1]:5432");
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"[fd00::]/8:443 max=10",
		"AGILE_DEST_API: destination \"[fd00::]/8:443\": the prefix length "
		"goes inside the brackets; expected [IPv6/LEN]:PORT such as "
		"[fd00::/8]:443");
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"127.0.0.1 max=10",
		"AGILE_DEST_API: destination \"127.0.0.1\" has no port; expected "
		"ADDRESS:PORT, with PORT from 1 to 65535 or *");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse("[::1] max=10"), 1);
	ck_assert_said("destination \"[::1]\" has no port");
	ck_assert_int_eq(parse("api.example.com max=10"), 1);
	ck_assert_said("destination \"api.example.com\" has no port");
}
END_TEST

START_TEST(dest_port_out_of_range)
{
	ck_assert_only_message(
		"1.2.3.4:70000 max=10",
		"AGILE_DEST_API: destination \"1.2.3.4:70000\": the port is out of "
		"range; expected 1 to 65535, or * for any port");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse("1.2.3.4:0 max=10"), 1);
	ck_assert_said("the port is out of range");
	ck_assert_int_eq(parse("[::1]:65536 max=10"), 1);
	ck_assert_said("the port is out of range");
	parse_ok("1.2.3.4:65535 max=10");
	parse_ok("1.2.3.4:1 max=10");
}
END_TEST

START_TEST(dest_prefix_out_of_range)
{
	ck_assert_only_message(
		"10.0.0.0/33:80 max=10",
		"AGILE_DEST_API: destination \"10.0.0.0/33:80\": the prefix length "
		"is out of range; expected /0 to /32 for IPv4 and /0 to /128 for "
		"IPv6");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse("[fd00::/129]:80 max=10"), 1);
	ck_assert_said("the prefix length is out of range");
	ck_assert_int_eq(parse("10.0.0.0/x:80 max=10"), 1);
	ck_assert(!rule.enabled);
}
END_TEST

START_TEST(dest_missing)
{
	ck_assert_only_message(
		"",
		"AGILE_DEST_API: no destination; expected IPv4:PORT, [IPv6]:PORT, "
		"CIDR:PORT, HOST:PORT or unix:/path");
	ck_assert(!rule.enabled);
	ck_assert_only_message(
		"  max=500 floor=5",
		"AGILE_DEST_API: no destination before \"max=500\"; expected "
		"IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(rule.config.max_rate, 500);
	ck_assert_int_eq(rule.config.floor_rate, 5);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */
/* ------------------------------------------------------------------------ */

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
	ck_assert_str_eq(agile_pace_name(AGILE_PACE_REQUEST), "request");
	ck_assert_str_eq(agile_pace_name(AGILE_PACE_CONNECT), "connect");
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

/* ------------------------------------------------------------------------ */
/* Durations                                                                 */
/* ------------------------------------------------------------------------ */

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
		ck_assert_msg(agile_parse_duration(good[i].text, &ns) == 0,
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
		ck_assert_msg(agile_parse_duration(bad[i], &ns) == -EINVAL,
		              "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(ns, 42);
	}
	ck_assert_int_eq(agile_parse_duration(NULL, NULL), -EINVAL);
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

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------ */

/* The tails of the rate keys' messages. */
#define RATE_FORMS \
	"requests per second such as 5 or 0.5, or a count per period such as " \
	"1/10s or 30/1m"
#define MAX_EXPECTED "a rate greater than 0: " RATE_FORMS
#define RATE_EXPECTED "a rate, 0 or more: " RATE_FORMS

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

START_TEST(max_missing)
{
	ck_assert_only_message(
		"127.0.0.1:80 floor=5",
		"AGILE_DEST_API: key \"max\" is missing; expected max=N, "
		MAX_EXPECTED);
	ck_assert(!rule.enabled);
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

/* ------------------------------------------------------------------------ */
/* Unknown keys and malformed settings                                       */
/* ------------------------------------------------------------------------ */

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
	ck_assert_said("max_baseline_rise, pace");
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
	ck_assert_int_eq(agile_rule_parse("AGILE_DEST_N", name,
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
	ck_assert_int_eq(agile_rule_parse("AGILE_DEST_my-api", "my-api",
	                                  "127.0.0.1:80 max=5", &rule, collect,
	                                  &msgs),
	                 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_DEST_my-api: the name may hold only letters, "
	                 "digits and '_'; agilestat shows it as \"my-api\"");
	ck_assert(rule.enabled);
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_rule_parse("AGILE_DEST_Api_2", "Api_2",
	                                  "127.0.0.1:80 max=5", &rule, collect,
	                                  &msgs),
	                 0);
}
END_TEST

START_TEST(variable_name_of_a_rule)
{
	char var[32];

	ck_assert_int_eq(agile_rule_var("api_v2", var, sizeof(var)), 17);
	ck_assert_str_eq(var, "AGILE_DEST_API_V2");
	/* Cut to fit, and still terminated, like snprintf. */
	ck_assert_int_eq(agile_rule_var("api_v2", var, 14), 17);
	ck_assert_str_eq(var, "AGILE_DEST_AP");
	ck_assert_int_eq(agile_rule_var("x", var, 0), 12);
}
END_TEST

START_TEST(no_callback_is_fine)
{
	ck_assert_int_eq(agile_rule_parse("AGILE_DEST_X", "x", "nowhere max=x",
	                                  &rule, NULL, NULL),
	                 2);
	ck_assert(!rule.enabled);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The environment                                                           */
/* ------------------------------------------------------------------------ */

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
	ck_assert_int_eq(agile_rules_match(&rules, NULL, 0), -1);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(match_exact_ipv4)
{
	char *env[] = { "AGILE_DEST_API=127.0.0.1:8080 max=5", NULL };

	ck_assert_int_eq(parse_env(env), 0);
	ck_assert_int_eq(match4("127.0.0.1", 8080), 0);
	ck_assert_int_eq(match4("127.0.0.1", 8081), -1);
	ck_assert_int_eq(match4("127.0.0.2", 8080), -1);
	/* A truncated address is no address. */
	inet4("127.0.0.1", 8080);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss,
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
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("app"));
	len = unix_path("/run/app.sock", false);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("app"));
	len = unix_path("/run/app.sock2", true);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	len = unix_path("/run/app", true);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	len = unix_abstract("agile");
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("abs"));
	len = unix_abstract("agile2");
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	/* "@agile" as a path is not the abstract name. */
	len = unix_path("@agile", true);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
	/* Unix rules never match an inet address, and `*:*` no Unix one. */
	ck_assert_int_eq(match4("127.0.0.1", 80), rule_named("all"));
	len = unix_path("/elsewhere", true);
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 -1);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Hostnames                                                                 */
/* ------------------------------------------------------------------------ */

START_TEST(learn_then_match)
{
	char *env[] = { "AGILE_DEST_API=Api.Example.com:443 max=5",
	                "AGILE_DEST_NET=10.0.0.0/8:443 max=6", NULL };
	socklen_t len;

	ck_assert_int_eq(parse_env(env), 0);
	/* Before the program resolves the name, its addresses are unknown. */
	ck_assert_int_eq(match4("10.0.0.7", 443), rule_named("net"));

	len = inet4("10.0.0.7", 0);
	agile_rules_learn(&rules, "api.EXAMPLE.com.", (struct sockaddr *)&ss,
	                  len);
	len = inet6("2001:db8::7", 12345);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
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

/* The cache against the address in `ss`: remember what it matches now,
 * and whether the entry holds it. */
static void remember(struct agile_match_cache *cache, uint64_t generation,
                     socklen_t len)
{
	agile_match_cache_put(cache, generation, (struct sockaddr *)&ss, len,
	                      agile_rules_match(&rules, (struct sockaddr *)&ss,
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
	agile_match_cache_put(&cache, generation, (struct sockaddr *)&ss, len, 0);
	ck_assert(!held(&cache, generation, len, &dest));

	/* The miss of 10.0.0.7:443, then the program resolves the API's
	 * name to it: the entry is stale, and matching again finds the API. */
	len = inet4("10.0.0.7", 443);
	agile_match_cache_put(&cache, generation, (struct sockaddr *)&ss, len,
	                      -1);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_gt(agile_rules_generation(&rules), generation);
	ck_assert(!agile_match_cache_get(&cache, agile_rules_generation(&rules),
	                                 (struct sockaddr *)&ss, len, &dest));
	ck_assert_int_eq(agile_rules_match(&rules, (struct sockaddr *)&ss, len),
	                 rule_named("api"));
	/* Learning what is known already changes no match: the generation
	 * stays. */
	generation = agile_rules_generation(&rules);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_eq(agile_rules_generation(&rules), generation);
	/* A new address for a full list replaces the oldest, which then
	 * matches nothing: the generation moves on. */
	for (int i = 0; i < AGILE_RULE_HOST_ADDRS; i++) {
		char text[32];

		snprintf(text, sizeof(text), "192.0.2.%d", i + 1);
		len = inet4(text, 443);
		agile_rules_learn(&rules, "api.example.com",
		                  (struct sockaddr *)&ss, len);
	}
	generation = agile_rules_generation(&rules);
	len = inet4("10.0.0.7", 443);
	remember(&cache, generation, len);
	ck_assert(held(&cache, generation, len, &dest));
	ck_assert_int_eq(dest, -1); /* 10.0.0.7 was the oldest: replaced */
	len = inet4("198.51.100.1", 443);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_uint_gt(agile_rules_generation(&rules), generation);
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
	agile_rules_learn(&rules, "other.example.com", (struct sockaddr *)&ss,
	                  len);
	agile_rules_learn(&rules, "api.example.com.evil", (struct sockaddr *)&ss,
	                  len);
	agile_rules_learn(&rules, NULL, (struct sockaddr *)&ss, len);
	ck_assert_int_eq(api->host_addr_count, 0);
	ck_assert(api->host_unresolved);

	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
	ck_assert_int_eq(api->host_addr_count, 1);
	/* The program resolved it after all. */
	ck_assert(!api->host_unresolved);
	/* An address family the rules do not know is ignored. */
	len = unix_path("/x", true);
	agile_rules_learn(&rules, "api.example.com", (struct sockaddr *)&ss, len);
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
		agile_rules_learn(&rules, "lb.example.com", (struct sockaddr *)&ss,
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
	ck_assert_int_eq(agile_rules_resolve_hosts(&rules, fake_resolve, collect,
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
	ck_assert_int_eq(agile_rules_resolve_hosts(&rules, NULL, NULL, NULL), 0);
	ck_assert_int_gt(rules.rule[0].host_addr_count, 0);
	ck_assert(!rules.rule[0].host_unresolved);
	ck_assert_int_eq(match4("127.0.0.1", 80), 0);
	/* A rule that already has addresses is not looked up again. */
	fake_calls = 0;
	ck_assert_int_eq(agile_rules_resolve_hosts(&rules, fake_resolve, NULL,
	                                           NULL),
	                 0);
	ck_assert_int_eq(fake_calls, 0);
}
END_TEST

/* ------------------------------------------------------------------------ */


/* ------------------------------------------------------------------------ */
/* Resilience settings (resilience.h)                                        */
/* ------------------------------------------------------------------------ */

START_TEST(resilience_values)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 concurrency=4 acquire_timeout=2s "
	         "breaker=sre breaker_k=2 breaker_protection=3 "
	         "breaker_window=5s quota=1000/1d,align window=20/1m over=wait "
	         "proto=http exclude=/health,/metrics connect_timeout=250ms "
	         "retry=3");
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_FIXED);
	ck_assert_int_eq(c->conc_limit, 4);
	ck_assert_int_eq(c->acquire_timeout_ns, 2 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->breaker, 1);
	ck_assert(c->breaker_k == 2.0 && c->breaker_protection == 3.0);
	ck_assert_int_eq(c->breaker_window_ns, 5 * AGILE_NS_PER_S);
	ck_assert_int_eq(c->quota, 1000);
	ck_assert_int_eq(c->quota_period_ns, 86400 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->quota_align, 1);
	ck_assert_int_eq(c->window, 20);
	ck_assert_int_eq(c->window_span_ns, 60 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->over, AGILE_OVER_WAIT);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_HTTP);
	ck_assert_uint_eq(c->exclude_count, 2);
	ck_assert_str_eq(c->exclude[1], "/metrics");
	ck_assert_int_eq(c->connect_timeout_ns, 250 * AGILE_NS_PER_MS);
	ck_assert_int_eq(c->retry, 3);

	parse_ok("127.0.0.1:6379 max=5 proto=redis");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_REDIS);
	parse_ok("127.0.0.1:5432 max=5 proto=postgres");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_POSTGRES);
	parse_ok("127.0.0.1:5432 max=5 proto=none");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_NONE);
	parse_ok("127.0.0.1:3306 max=5 proto=mysql");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_MYSQL);
	parse_ok("127.0.0.1:11211 max=5 proto=memcached");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_MEMCACHED);

	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive,law=vegas "
	         "quota=20/s window=5/h");
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_ADAPTIVE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_VEGAS);
	ck_assert_int_eq(c->quota_period_ns, AGILE_NS_PER_S);
	ck_assert_uint_eq(c->quota_align, 0);
	ck_assert_int_eq(c->window_span_ns, 3600 * AGILE_NS_PER_S);
	ck_assert(c->breaker_protection < 0); /* unset: the preset's */

	parse_ok("10.0.0.0/8:443 max=5 key_rate=2.5 keys=100");
	ck_assert(c->key_rate == 2.5);
	ck_assert_int_eq(c->keys, 100);
}
END_TEST

START_TEST(resilience_errors)
{
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=0",
	                       "AGILE_DEST_API: key \"concurrency\": \"0\" is not "
	                       "valid; expected a whole number of connections "
	                       "from 1 to 1024, or adaptive[,law=agile|aimd|"
	                       "vegas|gradient]");
	ck_assert_uint_eq(rule.resilience.conc_mode, AGILE_CONC_OFF);
	ck_assert(rule.enabled);
	/* A misspelt law is named, with the laws there are. */
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive,law=x",
	                       "AGILE_DEST_API: key \"concurrency\": law \"x\" "
	                       "is not known; expected agile, aimd, vegas or "
	                       "gradient");
	ck_assert_uint_eq(rule.resilience.conc_mode, AGILE_CONC_OFF);
	ck_assert_only_message("127.0.0.1:80 max=5 law=aimd",
	                       "AGILE_DEST_API: key \"law\" applies to "
	                       "AGILE_LISTEN_ variables only; it is ignored here");
	ck_assert_only_message("127.0.0.1:80 max=5 quota=1000",
	                       "AGILE_DEST_API: key \"quota\": \"1000\" is not "
	                       "valid; expected N/PERIOD[,align] such as 1000/1d "
	                       "or 20/s,align");
	ck_assert_int_eq(rule.resilience.quota, 0);
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 quota=10/1d,aligned"), 1);
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 window=5000/1m"), 1);
	ck_assert_said("with N from 1 to 2048");
	ck_assert_only_message("127.0.0.1:80 max=5 breaker=on",
	                       "AGILE_DEST_API: key \"breaker\": \"on\" is not "
	                       "valid; expected sre");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 breaker_k=0.5"), 1);
	ck_assert_only_message("127.0.0.1:80 max=5 connect_timeout=5",
	                       "AGILE_DEST_API: key \"connect_timeout\": \"5\" has "
	                       "no unit; expected a duration such as 250us, 200ms "
	                       "or 1.5s");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 retry=500"), 1);
	ck_assert_said("key \"retry\": \"500\" is too large");
	ck_assert_only_message("127.0.0.1:80 max=5 exclude=health",
	                       "AGILE_DEST_API: key \"exclude\": \"health\" is not "
	                       "valid; expected a comma-separated list of at most "
	                       "8 paths such as /health,/metrics, each at most 47 "
	                       "characters");
	/* A path of 48 characters does not fit its slot. */
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 proto=http exclude=/"
	                       "12345678901234567890123456789012345678901234567"),
	                 1);
	ck_assert_said("each at most 47 characters");
	parse_ok("127.0.0.1:80 max=5 proto=http exclude=/"
	         "1234567890123456789012345678901234567890123456");
	/* A trailing comma is an empty path, not a list of one. */
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http exclude=/a,",
	                       "AGILE_DEST_API: key \"exclude\": \"/a,\" is not "
	                       "valid; expected a comma-separated list of at most "
	                       "8 paths such as /health,/metrics, each at most 47 "
	                       "characters");
	ck_assert_uint_eq(rule.resilience.exclude_count, 0);
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http exclude=/h "
	                       "over=later",
	                       "AGILE_DEST_API: key \"over\": \"later\" is not "
	                       "valid; expected refuse or wait");
	ck_assert_only_message("127.0.0.1:80 max=5 key_rate=1",
	                       "AGILE_DEST_API: key \"key_rate\" applies to a CIDR "
	                       "or * rule; expected a destination such as "
	                       "10.0.0.0/8:443 or *:443");
	ck_assert_only_message("127.0.0.1:80 max=5 exclude=/h",
	                       "AGILE_DEST_API: key \"exclude\" has no effect "
	                       "without proto=http; expected proto=http as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=redis exclude=/h",
	                       "AGILE_DEST_API: key \"exclude\" has no effect "
	                       "without proto=http; expected proto=http as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=smtp",
	                       "AGILE_DEST_API: key \"proto\": \"smtp\" is not "
	                       "valid; expected http, redis, postgres, mysql, "
	                       "memcached or none");
	ck_assert_only_message("127.0.0.1:80 max=5 shed=cpu",
	                       "AGILE_DEST_API: key \"shed\" applies to "
	                       "AGILE_LISTEN_ variables only; it is ignored here");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 concurency=4"), 1);
	ck_assert_said("did you mean \"concurrency\"?");
}
END_TEST

START_TEST(listen_rules)
{
	char *envp[] = {
		"AGILE_LISTEN_WEB=:8080 max=500 slo=200ms shed=cpu "
		"shed_response=503 retry_after=2s proto=http exclude=/health",
		"AGILE_DEST_API=127.0.0.1:8080 max=5",
		"AGILE_LISTEN_BAD=:8081 max=50 concurrency=4",
		NULL,
	};
	const struct agile_rule *web;

	ck_assert_int_eq(parse_env(envp), 1);
	ck_assert_said("AGILE_LISTEN_BAD: key \"concurrency\" applies to "
	               "AGILE_DEST_ variables only; it is ignored here");
	web = &rules.rule[rule_named("web")];
	ck_assert(web->inbound && web->enabled);
	ck_assert_int_eq(web->port, 8080);
	ck_assert_int_eq(web->prefix.prefix_len, 0);
	ck_assert_uint_eq(web->resilience.shed_cpu, 1);
	ck_assert_uint_eq(web->resilience.shed_response, AGILE_SHED_HTTP);
	ck_assert_int_eq(web->resilience.shed_status, 503);
	ck_assert_int_eq(web->resilience.retry_after_ns, 2 * AGILE_NS_PER_S);
	/* A connect to port 8080 matches the destination, never the
	 * listener; a listening socket's address matches the listener. */
	ck_assert_int_eq(match4("127.0.0.1", 8080), rule_named("api"));
	ck_assert_int_eq(match4("10.1.2.3", 8080), -1);
	inet4("127.0.0.1", 8080);
	ck_assert_int_eq(agile_rules_match_listen(&rules,
	                                          (struct sockaddr *)&ss,
	                                          sizeof(struct sockaddr_in)),
	                 rule_named("web"));
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=5000", &rule, collect,
	                                    &msgs), 1);
	ck_assert_said("expected at most 1024 connections at once");
	/* A goodbye is a client's: proto=redis and proto=postgres mean
	 * nothing to a listener, which is told so and reads no protocol. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":5432 max=50 proto=postgres",
	                                    &rule, collect, &msgs), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_LISTEN_X: key \"proto\": postgres "
	                 "applies to AGILE_DEST_ variables only; expected http "
	                 "or none on a listener");
	ck_assert_uint_eq(rule.resilience.proto, AGILE_PROTO_NONE);
	/* A listener with proto=http sheds requests and answers each: 503
	 * unless shed_response= says otherwise, close included, and
	 * retry_after= then needs no shed_response. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "retry_after=1s", &rule, collect,
	                                    &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_HTTP);
	ck_assert_int_eq(rule.resilience.shed_status, 503);
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "shed_response=429", &rule, collect,
	                                    &msgs), 0);
	ck_assert_int_eq(rule.resilience.shed_status, 429);
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "shed_response=close", &rule,
	                                    collect, &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_CLOSE);
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4", &rule, collect,
	                                    &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_CLOSE);
}
END_TEST

/* One AGILE_LISTEN_WEB value into the static rule and messages. */
static int parse_listen(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile_listen_parse("AGILE_LISTEN_WEB", "web", value, &rule,
	                          collect, &msgs);
}

/* concurrency_min=, _initial=, _max= and key_rate=R,burst=B: the seed's
 * settings with their defaults, bounds, order and one-line errors. */
START_TEST(seed_knob_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive concurrency_min=2 "
	         "concurrency_initial=4 concurrency_max=50");
	ck_assert_int_eq(c->conc_min, 2);
	ck_assert_int_eq(c->conc_initial, 4);
	ck_assert_int_eq(c->conc_max, 50);
	/* A max under the default initial of 10 brings the start down. */
	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive concurrency_max=3");
	ck_assert_int_eq(c->conc_initial, 3);
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_max=1025",
	                       "AGILE_DEST_API: key \"concurrency_max\": "
	                       "\"1025\" is not valid; expected a whole number "
	                       "of connections at once from 1 to 1024 (1000 by "
	                       "default)");
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_min=0",
	                       "AGILE_DEST_API: key \"concurrency_min\": \"0\" "
	                       "is not valid; expected a whole number of "
	                       "connections at once from 1 to 1024 (1 by "
	                       "default)");
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_min=20 concurrency_initial=5",
	                       "AGILE_DEST_API: concurrency_min=20, "
	                       "concurrency_initial=5 and concurrency_max=1000 "
	                       "are out of order; expected min <= initial <= max "
	                       "(the defaults stand)");
	ck_assert_int_eq(c->conc_min, 0);
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=4 "
	                       "concurrency_max=8",
	                       "AGILE_DEST_API: key \"concurrency_max\" has no "
	                       "effect without concurrency=adaptive; expected "
	                       "concurrency=adaptive as well");

	parse_ok("10.0.0.0/8:80 max=5 key_rate=2,burst=8");
	ck_assert(c->key_rate == 2);
	ck_assert(c->key_burst == 8);
	parse_ok("10.0.0.0/8:80 max=5 key_rate=2");
	ck_assert(c->key_burst == 0);
	ck_assert_only_message("10.0.0.0/8:80 max=5 key_rate=2,burst=0",
	                       "AGILE_DEST_API: key \"key_rate\": "
	                       "\"2,burst=0\" is not valid; expected R[,burst=B]: "
	                       "a decimal number of connects per second per "
	                       "address greater than 0, B 1 or more (the rate by "
	                       "default)");
}
END_TEST

/* overload=, unreachable=, ignore=, cache_hit=: read, each status in one
 * list, a status named elsewhere leaving overload's default, and each
 * mistake one line. */
START_TEST(http_verdict_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 proto=http unreachable=502,504 "
	         "ignore=404,202 cache_hit=X-Cache-Status,Age");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 502));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 504));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 503));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_IGNORE, 202));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert_uint_eq(c->cache_hit_count, 2);
	ck_assert_str_eq(c->cache_hit[0], "X-Cache-Status");
	/* Named in unreachable=, 503 leaves overload's default. */
	parse_ok("127.0.0.1:80 max=5 proto=http unreachable=502,503");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 503));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	parse_ok("127.0.0.1:80 max=5 proto=http overload=none");
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	parse_ok("127.0.0.1:80 max=5 proto=http");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_IGNORE, 404));

	ck_assert_only_message("127.0.0.1:80 max=5 proto=http ignore=4040",
	                       "AGILE_DEST_API: key \"ignore\": \"4040\" is not "
	                       "valid; expected none or a comma-separated list "
	                       "of HTTP statuses from 100 to 599 such as "
	                       "502,504");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http overload=429,",
	                       "AGILE_DEST_API: key \"overload\": \"429,\" is "
	                       "not valid; expected none or a comma-separated "
	                       "list of HTTP statuses from 100 to 599 such as "
	                       "502,504 (429,503 by default)");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http "
	                       "overload=429,502 unreachable=502",
	                       "AGILE_DEST_API: key \"unreachable\": 502 is "
	                       "also in overload; expected each status in one "
	                       "list");
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 502));
	ck_assert_only_message("127.0.0.1:80 max=5 unreachable=502",
	                       "AGILE_DEST_API: key \"unreachable\" has no "
	                       "effect without proto=http; expected proto=http "
	                       "as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http "
	                       "cache_hit=X-Cache,,Age",
	                       "AGILE_DEST_API: key \"cache_hit\": "
	                       "\"X-Cache,,Age\" is not valid; expected a "
	                       "comma-separated list of at most 4 header names "
	                       "such as X-Cache,CF-Cache-Status, each at most 31 "
	                       "characters");
	ck_assert_only_message("127.0.0.1:80 max=5 cache_hit=X-Cache",
	                       "AGILE_DEST_API: key \"cache_hit\" has no effect "
	                       "without proto=http; expected proto=http as "
	                       "well");
	/* A listener takes them too. */
	ck_assert_int_eq(parse_listen(":80 max=8 proto=http ignore=404 "
	                              "cache_hit=X-Hit"), 0);
	ck_assert(agile__http_in_list(c, AGILE_STATUS_IGNORE, 404));
}
END_TEST

/* client_rate=, client_prefix=, client_key=, clients=: read, bounded,
 * and each mistake one line naming the variable, the key and what was
 * expected. */
#define LISTEN_ONLY_MESSAGE(value, expected)                                  \
	do {                                                                  \
		ck_assert_int_eq(parse_listen(value), 1);                     \
		ck_assert_int_eq(msgs.count, 1);                              \
		ck_assert_str_eq(msgs.line[0], expected);                     \
	} while (0)

START_TEST(listen_client_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	ck_assert_int_eq(parse_listen(":80 max=8 proto=http client_rate=5 "
	                              "client_prefix=56 "
	                              "client_key=header:X-Api-Key "
	                              "clients=1000"), 0);
	ck_assert(c->client_rate == 5);
	ck_assert(c->client_burst == 0);
	ck_assert_int_eq(c->client_prefix, 56);
	ck_assert_str_eq(c->client_header, "X-Api-Key");
	ck_assert_uint_eq(c->clients, 1000);
	ck_assert_int_eq(parse_listen(":80 max=8 client_rate=0.5,burst=3"), 0);
	ck_assert(c->client_rate == 0.5);
	ck_assert(c->client_burst == 3);
	ck_assert_int_eq(c->client_prefix, 0);
	ck_assert_uint_eq(c->clients, 0);

	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=0",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": \"0\" is "
	                    "not valid; expected R[,burst=B]: requests per "
	                    "second per client greater than 0, such as 5 or "
	                    "5,burst=10, with B 1 or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5,burst=0.5",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": "
	                    "\"5,burst=0.5\" is not valid; expected "
	                    "R[,burst=B]: requests per second per client "
	                    "greater than 0, such as 5 or 5,burst=10, with B 1 "
	                    "or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5,bust=2",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": "
	                    "\"5,bust=2\" is not valid; expected R[,burst=B]: "
	                    "requests per second per client greater than 0, "
	                    "such as 5 or 5,burst=10, with B 1 or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 client_prefix=129",
	                    "AGILE_LISTEN_WEB: key \"client_prefix\": \"129\" "
	                    "is not valid; expected the address bits that name "
	                    "one client, from 1 to 128, such as 64 (IPv4 "
	                    "addresses use at most 32)");
	LISTEN_ONLY_MESSAGE(":80 max=8 proto=http client_rate=5 "
	                    "client_key=cookie:id",
	                    "AGILE_LISTEN_WEB: key \"client_key\": \"cookie:id\" "
	                    "is not valid; expected header:NAME, such as "
	                    "header:X-Api-Key, NAME at most 47 characters");
	LISTEN_ONLY_MESSAGE(":80 max=8 proto=http client_rate=5 "
	                    "client_key=header:X(Key)",
	                    "AGILE_LISTEN_WEB: key \"client_key\": "
	                    "\"header:X(Key)\" is not valid; expected "
	                    "header:NAME, such as header:X-Api-Key, NAME at "
	                    "most 47 characters");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 clients=1025",
	                    "AGILE_LISTEN_WEB: key \"clients\": \"1025\" is not "
	                    "valid; expected a whole number of clients from 1 "
	                    "to 1024");
	LISTEN_ONLY_MESSAGE(":80 max=8 clients=10",
	                    "AGILE_LISTEN_WEB: key \"clients\" has no effect "
	                    "without client_rate; expected client_rate=R as "
	                    "well");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 client_key=header:X-Id",
	                    "AGILE_LISTEN_WEB: key \"client_key\" reads a "
	                    "request header; expected proto=http as well");
	ck_assert_str_eq(c->client_header, "");
	/* A destination has no clients. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_rule_parse("AGILE_DEST_API", "api",
	                                  "127.0.0.1:80 max=5 client_rate=5",
	                                  &rule, collect, &msgs), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: key \"client_rate\" "
	                 "applies to AGILE_LISTEN_ variables only; it is "
	                 "ignored here");
}
END_TEST

/* A listener is matched by the address its listening socket is bound to
 * (agile_rules_match_listen only looks at address rules), so a host name
 * or a unix: path was accepted and then never matched: the server ran
 * unprotected without a word.  Both are refused, and every message about
 * a listener's address lists the forms a listener takes. */
START_TEST(listen_address_forms)
{
	ck_assert_int_eq(parse_listen("localhost:8080 max=50"), 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_LISTEN_WEB: listening address \"localhost:8080\": "
	                 "a listener is matched by the address its socket is "
	                 "bound to, never by a host name or a path; expected "
	                 ":PORT, IPv4:PORT, [IPv6]:PORT or CIDR:PORT, such as "
	                 ":8080");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse_listen("unix:/run/app.sock max=50"), 1);
	ck_assert_said("listening address \"unix:/run/app.sock\": a listener "
	               "is matched by the address");
	ck_assert(!rule.enabled);
	ck_assert_int_eq(parse_listen("8080 max=50"), 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_LISTEN_WEB: listening address \"8080\" has no "
	                 "port; expected :PORT, IPv4:PORT, [IPv6]:PORT or "
	                 "CIDR:PORT, such as :8080");
	ck_assert_int_eq(parse_listen("max=50"), 1);
	ck_assert_said("no listening address before \"max=50\"; expected :PORT");
	ck_assert_int_eq(parse_listen(":80x max=50"), 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_LISTEN_WEB: cannot read listening address "
	                 "\":80x\"; expected :PORT, IPv4:PORT, [IPv6]:PORT or "
	                 "CIDR:PORT, such as :8080");
	ck_assert_int_eq(parse_listen("[::]:8080 max=50"), 0);
	ck_assert(rule.enabled);
	ck_assert_int_eq(parse_listen("0.0.0.0:8080 max=50"), 0);
	ck_assert(rule.enabled);
	ck_assert_int_eq(parse_listen("10.0.0.0/8:8080 max=50"), 0);
	ck_assert(rule.enabled);
}
END_TEST

/* Every keyword value follows the core's rule for preset, anchor and law
 * names: ASCII case is ignored and '_' stands for '-' (breaker=SRE used to
 * be refused while law=AIMD was taken). */
START_TEST(keyword_values_ignore_case)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 pace=CONNECT breaker=SRE over=Wait "
	         "proto=HTTP quota=10/s,ALIGN concurrency=Adaptive,LAW=Vegas "
	         "preset=Latency_First anchor=SLO slo=100ms");
	ck_assert_int_eq(rule.pace, AGILE_PACE_CONNECT);
	ck_assert_uint_eq(c->breaker, 1);
	ck_assert_uint_eq(c->over, AGILE_OVER_WAIT);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_HTTP);
	ck_assert_uint_eq(c->quota_align, 1);
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_ADAPTIVE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_VEGAS);
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_LATENCY_FIRST);
	ck_assert_int_eq(rule.config.anchor, AGILE_ANCHOR_SLO);
	parse_ok("127.0.0.1:6379 max=5 pace=Request over=REFUSE proto=Redis");
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
	ck_assert_uint_eq(c->over, AGILE_OVER_REFUSE);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_REDIS);
	parse_ok("127.0.0.1:5432 max=5 proto=POSTGRES");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_POSTGRES);
	parse_ok("127.0.0.1:5432 max=5 proto=None");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_NONE);

	ck_assert_int_eq(parse_listen(":8080 max=50 shed=CPU:800 "
	                              "shed_response=Close law=GRADIENT"), 0);
	ck_assert_uint_eq(c->shed_cpu, 1);
	ck_assert_int_eq(c->shed_cpu_permille, 800);
	ck_assert_uint_eq(c->shed_response, AGILE_SHED_CLOSE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_GRADIENT);

	/* A different word is still refused, whatever its case. */
	ck_assert_only_message("127.0.0.1:80 max=5 breaker=SREX",
	                       "AGILE_DEST_API: key \"breaker\": \"SREX\" is "
	                       "not valid; expected sre");
}
END_TEST

/* shed=cpu:PERMILLE takes 1 to 999; the message says so. */
START_TEST(listen_shed_values)
{
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:800"), 0);
	ck_assert_int_eq(rule.resilience.shed_cpu_permille, 800);
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:1000"), 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_LISTEN_WEB: key \"shed\": \"cpu:1000\" is not "
	                 "valid; expected cpu or cpu:PERMILLE with PERMILLE from "
	                 "1 to 999, such as cpu:800");
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:0"), 1);
	ck_assert(rule.enabled);
}
END_TEST

/* The law a clean AGILE_LISTEN_WEB value gives its listener's cap. */
static uint32_t web_law(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_WEB", "web", value,
	                                    &rule, collect, &msgs), 0);
	ck_assert(rule.inbound && rule.enabled);
	return rule.resilience.conc_law;
}

/* A listener's cap is always adaptive; law= picks the law that moves it
 * (the core controller by default). */
START_TEST(listen_law)
{
	ck_assert_uint_eq(web_law(":8080 max=50"), AGILE_LAW_AGILE);
	ck_assert_uint_eq(web_law(":8080 max=50 law=vegas"), AGILE_LAW_VEGAS);
	ck_assert_uint_eq(web_law(":8080 max=50 law=AIMD"), AGILE_LAW_AIMD);
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile_listen_parse("AGILE_LISTEN_WEB", "web",
	                                    ":8080 max=50 law=fast", &rule,
	                                    collect, &msgs), 1);
	ck_assert_said("AGILE_LISTEN_WEB: key \"law\": \"fast\" is not valid; "
	               "expected agile, aimd, vegas or gradient");
	ck_assert_uint_eq(rule.resilience.conc_law, AGILE_LAW_AGILE);
	ck_assert(rule.enabled);
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

/* An IPv4 address in a form getaddrinfo reads as one (hexadecimal, octal,
 * fewer parts) is not taken for a host name. */
START_TEST(dest_numeric_forms_refused)
{
	static const char *const forms[] = {
		"0x7f.0.0.1:80", "0x7f000001:80", "0x7f.1:80", "0X7F.0.0.1:80"
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char value[64];

		snprintf(value, sizeof(value), "%s max=5", forms[i]);
		ck_assert_int_eq(parse(value), 1);
		ck_assert(!rule.enabled);
		ck_assert_msg(strstr(msgs.line[0], "must be written in dotted "
		                     "decimal") != NULL, "%s: %s", forms[i],
		              msgs.line[0]);
	}
	parse_ok("x0x7f.example:80 max=5");
	ck_assert_int_eq(rule.kind, AGILE_DEST_HOST);
}
END_TEST

/* Bits set past the prefix length are a warning; the rule is kept, as
 * the network's first address. */
START_TEST(dest_host_bits_warned)
{
	ck_assert_int_eq(parse("1.2.3.4/8:80 max=5"), 1);
	ck_assert(rule.enabled);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: destination "
	                 "\"1.2.3.4/8:80\": the address has bits set past its "
	                 "prefix length, which are ignored; expected the "
	                 "network's first address, such as 10.0.0.0/8");
	ck_assert_int_eq(rule.prefix.addr[12], 1);
	ck_assert_int_eq(rule.prefix.addr[13], 0);
	parse_ok("1.0.0.0/8:80 max=5");
	ck_assert_int_eq(parse("[fd00::1/8]:80 max=5"), 1);
	ck_assert(rule.enabled);
	parse_ok("[fd00::/8]:80 max=5");
}
END_TEST

static Suite *rules_suite(void)
{
	Suite *s = suite_create("rules");
	TCase *dest = tcase_create("destinations");
	TCase *keys = tcase_create("keys");
	TCase *errors = tcase_create("errors");
	TCase *env = tcase_create("environment");
	TCase *match = tcase_create("matching");
	TCase *hosts = tcase_create("hostnames");
	TCase *resilience = tcase_create("resilience");

	tcase_add_test(dest, dest_ipv4);
	tcase_add_test(dest, dest_ipv6);
	tcase_add_test(dest, dest_cidr_ipv4);
	tcase_add_test(dest, dest_cidr_ipv6);
	tcase_add_test(dest, dest_hostname);
	tcase_add_test(dest, dest_any_port);
	tcase_add_test(dest, dest_any_address);
	tcase_add_test(dest, dest_unix);
	tcase_add_test(dest, dest_unix_path_too_long);
	tcase_add_test(dest, dest_error_message);
	tcase_add_test(dest, dest_unreadable_forms);
	tcase_add_test(dest, dest_port_out_of_range);
	tcase_add_test(dest, dest_prefix_out_of_range);
	tcase_add_test(dest, dest_missing);
	tcase_add_test(dest, dest_specific_messages);
	suite_add_tcase(s, dest);

	tcase_add_test(keys, keys_every_one);
	tcase_add_test(keys, keys_defaults_are_zero);
	tcase_add_test(keys, keys_whitespace);
	tcase_add_test(keys, keys_anchor_values);
	tcase_add_test(keys, keys_preset_values);
	tcase_add_test(keys, keys_pace_values);
	tcase_add_test(keys, duration_units);
	tcase_add_test(keys, duration_rejects);
	suite_add_tcase(s, keys);

	tcase_add_test(errors, duration_no_unit_message);
	tcase_add_test(errors, duration_other_messages);
	tcase_add_test(errors, tick_out_of_range);
	tcase_add_test(errors, max_not_a_number);
	tcase_add_test(errors, sub_second_rates);
	tcase_add_test(errors, max_missing);
	tcase_add_test(errors, max_zero_negative_huge);
	tcase_add_test(errors, floor_above_max);
	tcase_add_test(errors, rates_above_each_other);
	tcase_add_test(errors, rate_messages);
	tcase_add_test(errors, decimal_messages);
	tcase_add_test(errors, core_validation_in_key_names);
	tcase_add_test(errors, unknown_key_suggestion);
	tcase_add_test(errors, unknown_key_nearest);
	tcase_add_test(errors, unknown_key_no_suggestion);
	tcase_add_test(errors, malformed_settings);
	tcase_add_test(errors, duplicate_key_keeps_first);
	tcase_add_test(errors, bad_settings_keep_defaults);
	tcase_add_test(errors, long_name_is_cut_and_reported);
	tcase_add_test(errors, name_characters_reported);
	tcase_add_test(errors, no_callback_is_fine);
	tcase_add_test(errors, variable_name_of_a_rule);
	tcase_add_test(errors, repeats_are_one_line);
	tcase_add_test(errors, duration_hours);
	tcase_add_test(errors, dest_numeric_forms_refused);
	tcase_add_test(errors, dest_host_bits_warned);
	suite_add_tcase(s, errors);

	tcase_add_test(env, env_sorted_and_lower_cased);
	tcase_add_test(env, env_order_is_stable);
	tcase_add_test(env, env_messages_name_the_variable);
	tcase_add_test(env, env_empty_name);
	tcase_add_test(env, env_too_many);
	tcase_add_test(env, env_same_name_twice);
	tcase_add_test(env, env_null_and_empty);
	suite_add_tcase(s, env);

	tcase_add_test(match, match_exact_ipv4);
	tcase_add_test(match, match_exact_beats_cidr);
	tcase_add_test(match, match_port_beats_any);
	tcase_add_test(match, match_prefix_beats_port);
	tcase_add_test(match, match_tie_goes_to_first);
	tcase_add_test(match, match_ipv4_ipv6_and_mapped);
	tcase_add_test(match, match_any_address);
	tcase_add_test(match, match_skips_disabled);
	tcase_add_test(match, match_unix);
	suite_add_tcase(s, match);

	tcase_add_test(hosts, learn_then_match);
	tcase_add_test(hosts, learn_ignores_others_and_duplicates);
	tcase_add_test(hosts, match_cache_keys_and_goes_stale);
	tcase_add_test(hosts, learn_replaces_oldest_when_full);
	tcase_add_test(hosts, resolve_hosts_learns_and_flags_failures);
	tcase_add_test(hosts, resolve_hosts_with_getaddrinfo);
	suite_add_tcase(s, hosts);

	tcase_add_test(resilience, resilience_values);
	tcase_add_test(resilience, keyword_values_ignore_case);
	tcase_add_test(resilience, resilience_errors);
	tcase_add_test(resilience, listen_rules);
	tcase_add_test(resilience, listen_law);
	tcase_add_test(resilience, listen_address_forms);
	tcase_add_test(resilience, listen_client_keys);
	tcase_add_test(resilience, http_verdict_keys);
	tcase_add_test(resilience, seed_knob_keys);
	tcase_add_test(resilience, listen_shed_values);
	suite_add_tcase(s, resilience);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(rules_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
