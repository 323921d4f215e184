/*
 * check_rules_dest.c - the Check tests of src/common/rules_dest.c: every
 * destination and listening-address form a rule can name, and the message
 * for each way one can be wrong: a destination that cannot be read disables
 * the rule.
 */
#include "config.h"

#include "check_rules.h"

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

/* A listener is matched by the address its listening socket is bound to
 * (agile__rules_match_listen only looks at address rules), so a host name
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

TCase *rules_dest_tcase(void)
{
	TCase *tc = tcase_create("destinations");

	tcase_add_test(tc, dest_ipv4);
	tcase_add_test(tc, dest_ipv6);
	tcase_add_test(tc, dest_cidr_ipv4);
	tcase_add_test(tc, dest_cidr_ipv6);
	tcase_add_test(tc, dest_hostname);
	tcase_add_test(tc, dest_any_port);
	tcase_add_test(tc, dest_any_address);
	tcase_add_test(tc, dest_unix);
	tcase_add_test(tc, dest_unix_path_too_long);
	tcase_add_test(tc, dest_error_message);
	tcase_add_test(tc, dest_unreadable_forms);
	tcase_add_test(tc, dest_port_out_of_range);
	tcase_add_test(tc, dest_prefix_out_of_range);
	tcase_add_test(tc, dest_missing);
	tcase_add_test(tc, dest_specific_messages);
	tcase_add_test(tc, dest_numeric_forms_refused);
	tcase_add_test(tc, dest_host_bits_warned);
	tcase_add_test(tc, listen_address_forms);
	return tc;
}
