/*
 * check_fleet.c - the fleet budget's pure parts, without Redis or a
 * process: RESP encoding and parsing (src/common/resp.c), the fleet settings
 * and AGILE_REDIS (src/common/fleet_config.c) as the rules parser reads them,
 * and the fleet file (src/common/fleet_state.c): its checked layout, its
 * creation and replacement, and finding a destination's record.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet_config.h"
#include "fleet_state.h"
#include "resp.h"
#include "rules.h"

/* ------------------------------------------------------------------------ */
/* RESP                                                                      */
/* ------------------------------------------------------------------------ */

static struct agile_resp nodes[16];

static ssize_t parse(const char *text, size_t *used)
{
	return agile__resp_parse(text, strlen(text), nodes, 16, used);
}

START_TEST(resp_command)
{
	char buf[128];
	size_t used = 0;
	const char *argv[] = { "EVALSHA", "ab", "" };
	const size_t lens[] = { (size_t)-1, (size_t)-1, (size_t)-1 };

	ck_assert_int_eq(agile__resp_command(buf, sizeof(buf), &used, 3, argv,
	                                    lens), 0);
	ck_assert_uint_eq(used, strlen("*3\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$0\r\n\r\n"));
	ck_assert(memcmp(buf, "*3\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$0\r\n\r\n",
	                 used) == 0);
	/* Binary arguments keep their length; a full buffer appends nothing. */
	{
		const char *bin[] = { "a\0b" };
		const size_t three[] = { 3 };
		size_t at = used;

		ck_assert_int_eq(agile__resp_command(buf, sizeof(buf), &at, 1,
		                                    bin, three), 0);
		ck_assert(memcmp(buf + used, "*1\r\n$3\r\na\0b\r\n", at - used) == 0);
		ck_assert_int_eq(agile__resp_command(buf, at + 4, &at, 1, bin,
		                                    three), -ENOSPC);
	}
}
END_TEST

START_TEST(resp_scalars)
{
	size_t used;

	ck_assert_int_eq(parse("+OK\r\n", &used), 5);
	ck_assert_int_eq(nodes[0].type, AGILE_RESP_STATUS);
	ck_assert_uint_eq(nodes[0].len, 2);
	ck_assert_int_eq(parse(":-42\r\n", &used), 6);
	ck_assert_int_eq(nodes[0].type, AGILE_RESP_INTEGER);
	ck_assert_int_eq(nodes[0].integer, -42);
	ck_assert_int_eq(parse("$5\r\nhe\r\no\r\n", &used), 11);
	ck_assert_int_eq(nodes[0].type, AGILE_RESP_BULK);
	ck_assert(nodes[0].len == 5 && memcmp(nodes[0].str, "he\r\no", 5) == 0);
	ck_assert_int_eq(parse("$-1\r\n", &used), 5);
	ck_assert_int_eq(nodes[0].type, AGILE_RESP_NIL);
	ck_assert_int_eq(parse("-NOSCRIPT No matching script\r\n", &used), 30);
	ck_assert(agile__resp_is_error(&nodes[0], "NOSCRIPT"));
	ck_assert(!agile__resp_is_error(&nodes[0], "NOSCRIPTS"));
	ck_assert(!agile__resp_is_error(&nodes[0], "NO"));
	ck_assert_int_eq(parse("-MOVED 3999 127.0.0.1:6381\r\n", &used), 28);
	ck_assert(agile__resp_is_error(&nodes[0], "MOVED"));
}
END_TEST

START_TEST(resp_array)
{
	const char *text = "*6\r\n:10\r\n$5\r\n0.000\r\n$11\r\n1000.000000\r\n"
	                   ":0\r\n:3\r\n$*2\r\n";
	const char *lease = "*6\r\n:10\r\n$5\r\n0.000\r\n$11\r\n1000.000000\r\n"
	                    ":0\r\n:3\r\n$8\r\n60.00000\r\n";
	size_t used = 0;
	double d;
	int64_t i;

	ck_assert_int_eq(parse(text, &used), -EPROTO);
	ck_assert_int_eq(parse(lease, &used), (ssize_t)strlen(lease));
	ck_assert_uint_eq(used, 7);
	ck_assert_int_eq(nodes[0].type, AGILE_RESP_ARRAY);
	ck_assert_uint_eq(nodes[0].count, 6);
	ck_assert_int_eq(agile__resp_int64(&nodes[0].element[0], &i), 0);
	ck_assert_int_eq(i, 10);
	ck_assert_int_eq(agile__resp_double(&nodes[0].element[2], &d), 0);
	ck_assert_double_eq_tol(d, 1000.0, 1e-9);
	ck_assert_int_eq(agile__resp_double(&nodes[0].element[5], &d), 0);
	ck_assert_double_eq_tol(d, 60.0, 1e-9);
	ck_assert_int_eq(agile__resp_int64(&nodes[0].element[1], &i), -EINVAL);
	/* Nested arrays, and an empty one. */
	ck_assert_int_eq(parse("*2\r\n*1\r\n:1\r\n*0\r\n", &used), 16);
	ck_assert_uint_eq(used, 4);
	ck_assert_uint_eq(nodes[0].element[0].element[0].integer, 1);
	ck_assert_uint_eq(nodes[0].element[1].count, 0);
}
END_TEST

/* Every proper prefix of a reply is "more bytes needed", never an error or
 * a wrong reply: the client reads a reply in as many pieces as TCP gives. */
START_TEST(resp_every_prefix)
{
	const char *reply = "*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n+OK\r\n$-1\r\n";
	size_t len = strlen(reply), used;

	for (size_t n = 0; n < len; n++)
		ck_assert_msg(agile__resp_parse(reply, n, nodes, 16, &used) == 0,
		              "prefix of %zu bytes", n);
	ck_assert_int_eq(agile__resp_parse(reply, len, nodes, 16, &used),
	                 (ssize_t)len);
}
END_TEST

START_TEST(resp_malformed)
{
	size_t used;

	ck_assert_int_eq(parse("?\r\n", &used), -EPROTO);
	ck_assert_int_eq(parse(":12a\r\n", &used), -EPROTO);
	ck_assert_int_eq(parse("$3\r\nabcd\r\n", &used), -EPROTO);
	ck_assert_int_eq(parse("$-2\r\n", &used), -EPROTO);
	ck_assert_int_eq(parse("$99999999999\r\n", &used), -EPROTO);
	ck_assert_int_eq(parse("*20\r\n", &used), -ENOSPC);
	ck_assert_int_eq(parse("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", &used),
	                 -EPROTO); /* deeper than AGILE_RESP_DEPTH */
}
END_TEST

/* ------------------------------------------------------------------------ */
/* AGILE_REDIS                                                               */
/* ------------------------------------------------------------------------ */

static struct agile_redis_addr addr;
static char why[256];

static int url(const char *text)
{
	why[0] = '\0';
	return agile__redis_url_parse(text, &addr, why, sizeof(why));
}

START_TEST(redis_url_tcp)
{
	char text[300];

	ck_assert_int_eq(url("redis://127.0.0.1:6379/0"), 0);
	ck_assert_str_eq(addr.host, "127.0.0.1");
	ck_assert_uint_eq(addr.port, 6379);
	ck_assert_int_eq(addr.db, 0);
	ck_assert_int_eq(url("redis://redis.internal"), 0);
	ck_assert_str_eq(addr.host, "redis.internal");
	ck_assert_uint_eq(addr.port, 6379);
	ck_assert_int_eq(url("redis://:s3cr@t@10.0.0.5:7000/3"), 0);
	ck_assert_str_eq(addr.password, "s3cr@t");
	ck_assert_str_eq(addr.username, "");
	ck_assert_str_eq(addr.host, "10.0.0.5");
	ck_assert_uint_eq(addr.port, 7000);
	ck_assert_int_eq(addr.db, 3);
	ck_assert_int_eq(url("redis://agile:pw@[::1]:6380/"), 0);
	ck_assert_str_eq(addr.username, "agile");
	ck_assert_str_eq(addr.password, "pw");
	ck_assert_str_eq(addr.host, "::1");
	agile__redis_addr_format(&addr, text, sizeof(text));
	ck_assert_str_eq(text, "[::1]:6380");
}
END_TEST

START_TEST(redis_url_unix)
{
	char text[300];

	ck_assert_int_eq(url("unix:/run/redis/redis.sock"), 0);
	ck_assert_str_eq(addr.path, "/run/redis/redis.sock");
	ck_assert_int_eq(url("unix:///tmp/r.sock?db=2"), 0);
	ck_assert_str_eq(addr.path, "/tmp/r.sock");
	ck_assert_int_eq(addr.db, 2);
	ck_assert_int_eq(url("redis+unix:///tmp/r.sock"), 0);
	agile__redis_addr_format(&addr, text, sizeof(text));
	ck_assert_str_eq(text, "unix:/tmp/r.sock");
}
END_TEST

START_TEST(redis_url_errors)
{
	ck_assert_int_eq(url("rediss://cache:6380"), -EINVAL);
	ck_assert_msg(strstr(why, "TLS") != NULL, "%s", why);
	ck_assert_int_eq(url("http://x"), -EINVAL);
	ck_assert_msg(strstr(why, "not a Redis URL") != NULL, "%s", why);
	ck_assert_int_eq(url("redis://:6379"), -EINVAL);
	ck_assert_msg(strstr(why, "no host") != NULL, "%s", why);
	ck_assert_int_eq(url("redis://h:70000"), -EINVAL);
	ck_assert_msg(strstr(why, "not a port") != NULL, "%s", why);
	ck_assert_int_eq(url("redis://h:1/x"), -EINVAL);
	ck_assert_msg(strstr(why, "database") != NULL, "%s", why);
	ck_assert_int_eq(url("redis://[::1"), -EINVAL);
	ck_assert_int_eq(url("unix:relative.sock"), -EINVAL);
	ck_assert_int_eq(url("unix:/a?user=x"), -EINVAL);
	ck_assert_int_eq(url(""), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Fleet settings, through the rules parser                                  */
/* ------------------------------------------------------------------------ */

static struct agile_rule rule;
static char said[8][512];
static int said_count;

static void collect(const char *message, void *arg)
{
	(void)arg;
	if (said_count < 8)
		snprintf(said[said_count++], sizeof(said[0]), "%s", message);
}

static int rule_of(const char *value)
{
	said_count = 0;
	return agile__rule_parse("AGILE_DEST_API", "api", value, &rule, collect,
	                        NULL);
}

START_TEST(settings_read)
{
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet_max=60"), 0);
	ck_assert_int_eq(rule.fleet.max_rate, 60);
	ck_assert_int_eq(rule.fleet.mode, AGILE_FLEET_STATIC);
	ck_assert_int_eq(agile_fleet_timeout_ns(&rule.fleet),
	                 AGILE_FLEET_TIMEOUT_DEFAULT_NS);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet=adaptive "
	                         "fleet_max=300 redis_timeout=20ms"), 0);
	ck_assert_int_eq(rule.fleet.mode, AGILE_FLEET_ADAPTIVE);
	ck_assert_int_eq(rule.fleet.timeout_ns, 20 * 1000000);
	/* Keyword values ignore case, as every other key's do. */
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet=Static "
	                         "window=50/10s,SHARED"), 0);
	ck_assert_int_eq(rule.fleet.mode, AGILE_FLEET_STATIC);
	ck_assert_int_eq(rule.fleet.window, 50);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 window=50/10s,shared"),
	                 0);
	ck_assert_int_eq(rule.fleet.window, 50);
	ck_assert_int_eq(rule.fleet.window_span_ns, 10 * INT64_C(1000000000));
	/* Not shared: the per-host window of the resilience keys. */
	ck_assert_int_eq(rule.resilience.window, 0);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 window=1000/h,shared"),
	                 0);
	ck_assert_int_eq(rule.fleet.window_span_ns, 3600 * INT64_C(1000000000));
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 window=100/1m"), 0);
	ck_assert_int_eq(rule.fleet.window, 0);
	ck_assert_int_eq(rule.resilience.window, 100);
}
END_TEST

START_TEST(settings_errors)
{
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet_max=fast"), 1);
	ck_assert_msg(strstr(said[0], "AGILE_DEST_API: key \"fleet_max\": "
	                     "\"fast\" is not a whole number") == said[0],
	              "%s", said[0]);
	ck_assert(rule.enabled);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet=adaptive"), 1);
	ck_assert_msg(strstr(said[0], "adaptive needs the fleet's ceiling") !=
	              NULL, "%s", said[0]);
	ck_assert_int_eq(rule.fleet.mode, AGILE_FLEET_NONE);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet_max=9 "
	                         "redis_timeout=50"), 1);
	ck_assert_msg(strstr(said[0], "not a duration") != NULL, "%s", said[0]);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet_max=9 "
	                         "redis_timeout=10s"), 1);
	ck_assert_msg(strstr(said[0], "out of range") != NULL, "%s", said[0]);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 redis_timeout=50ms"), 1);
	ck_assert_msg(strstr(said[0], "no effect") != NULL, "%s", said[0]);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 window=0/10s,shared"),
	                 1);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 window=5/10q,shared"),
	                 1);
	ck_assert_msg(strstr(said[0], "is not a span") != NULL, "%s", said[0]);
	ck_assert_int_eq(rule_of("127.0.0.1:80 max=100 fleet_mx=9"), 1);
	ck_assert_msg(strstr(said[0], "did you mean \"fleet_max\"") != NULL,
	              "%s", said[0]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The fleet file                                                            */
/* ------------------------------------------------------------------------ */

#define OFFSET(member) offsetof(struct agile_fleet_record, member)

START_TEST(file_layout)
{
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, version), 8);
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, record_size), 16);
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, file_size), 24);
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, boot_id), 40);
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, host_id), 80);
	ck_assert_uint_eq(offsetof(struct agile_fleet_header, ready), 120);
	ck_assert_uint_eq(sizeof(struct agile_fleet_header), 256);
	ck_assert_uint_eq(OFFSET(fleet_max), 64);
	ck_assert_uint_eq(OFFSET(redis), 96);
	ck_assert_uint_eq(OFFSET(turn), 160);
	ck_assert_uint_eq(OFFSET(cursor), 168);
	ck_assert_uint_eq(OFFSET(source), 192);
	ck_assert_uint_eq(OFFSET(fleet_rate), 216);
	ck_assert_uint_eq(OFFSET(lease), 320);
	ck_assert_uint_eq(OFFSET(fallback_bucket), 576);
	ck_assert_uint_eq(OFFSET(admits), 640);
	ck_assert_uint_eq(OFFSET(round_trips_per_s), 736);
	ck_assert_uint_eq(OFFSET(last_error), 768);
	ck_assert_uint_eq(sizeof(struct agile_fleet_record), 1024);
	ck_assert_uint_eq(AGILE_FLEET_SIZE, 256 + 64 * 1024);
}
END_TEST

static char dir[] = "/tmp/check_fleet.XXXXXX";
static char path[128];

static void file_setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.fleet", dir);
}

static void file_teardown(void)
{
	unlink(path);
	rmdir(dir);
}

START_TEST(file_create_and_records)
{
	struct agile_fleet_map m = { 0 }, again = { 0 };
	struct agile_fleet_record *a, *b, *c;
	char host[AGILE_FLEET_HOST_ID_MAX];

	ck_assert_int_eq(agile__fleet_open_rw(path, &m, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	ck_assert(m.header->host_id[0] != '\0');
	snprintf(host, sizeof(host), "%s", m.header->host_id);
	ck_assert_int_eq(agile__fleet_record_acquire(&m, "api", 7, &a), 0);
	ck_assert_str_eq(a->name, "api");
	a->admits = 5;
	/* Same name and settings: the same record, counters kept. */
	ck_assert_int_eq(agile__fleet_record_acquire(&m, "api", 7, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(b->admits, 5);
	/* Other settings: the record is made again. */
	ck_assert_int_eq(agile__fleet_record_acquire(&m, "api", 8, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(b->admits, 0);
	ck_assert_int_eq(agile__fleet_record_acquire(&m, "db", 7, &c), 0);
	ck_assert_ptr_ne(a, c);
	/* A second mapping (another process) sees the same host id and
	 * records. */
	ck_assert_int_eq(agile__fleet_open_rw(path, &again, why, sizeof(why)), 0);
	ck_assert_str_eq(again.header->host_id, host);
	ck_assert_ptr_nonnull(agile__fleet_record_find(&again, "db"));
	ck_assert_ptr_null(agile__fleet_record_find(&again, "nope"));
	agile__fleet_close(&again);
	/* Full: every record taken. */
	for (int i = 0; i < AGILE_FLEET_RECORDS - 2; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%d", i);
		ck_assert_int_eq(agile__fleet_record_acquire(&m, name, 1, &c), 0);
	}
	ck_assert_int_eq(agile__fleet_record_acquire(&m, "one-more", 1, &c),
	                 -ENOSPC);
	agile__fleet_close(&m);
}
END_TEST

START_TEST(file_corrupt_replaced)
{
	struct agile_fleet_map m = { 0 };
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "garbage", 7), 7);
	close(fd);
	ck_assert_int_eq(agile__fleet_open_ro(path, &m, why, sizeof(why)),
	                 -EINVAL);
	ck_assert_int_eq(agile__fleet_open_rw(path, &m, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "size 7 bytes") != NULL, "%s", why);
	agile__fleet_close(&m);
	ck_assert_int_eq(agile__fleet_open_ro(path, &m, why, sizeof(why)), 0);
	agile__fleet_close(&m);
}
END_TEST

static Suite *fleet_suite(void)
{
	Suite *s = suite_create("fleet");
	TCase *resp = tcase_create("resp");
	TCase *redis = tcase_create("agile_redis");
	TCase *settings = tcase_create("settings");
	TCase *file = tcase_create("file");

	tcase_add_test(resp, resp_command);
	tcase_add_test(resp, resp_scalars);
	tcase_add_test(resp, resp_array);
	tcase_add_test(resp, resp_every_prefix);
	tcase_add_test(resp, resp_malformed);
	suite_add_tcase(s, resp);
	tcase_add_test(redis, redis_url_tcp);
	tcase_add_test(redis, redis_url_unix);
	tcase_add_test(redis, redis_url_errors);
	suite_add_tcase(s, redis);
	tcase_add_test(settings, settings_read);
	tcase_add_test(settings, settings_errors);
	suite_add_tcase(s, settings);
	tcase_add_checked_fixture(file, file_setup, file_teardown);
	tcase_add_test(file, file_layout);
	tcase_add_test(file, file_create_and_records);
	tcase_add_test(file, file_corrupt_replaced);
	suite_add_tcase(s, file);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(fleet_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
