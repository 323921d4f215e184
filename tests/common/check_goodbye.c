/*
 * check_goodbye.c - proto=redis's QUIT, proto=postgres's Terminate,
 * proto=mysql's COM_QUIT and proto=memcached's quit (src/common/goodbye.c):
 * recognised exactly, in the forms real clients send
 * them and across iovecs, and nothing else: not a command written with
 * them, not a longer or shorter message, and never on a destination that
 * declared another protocol or none, where the same bytes may be a
 * request.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "goodbye.h"

/* The goodbye test of one send of the n bytes at p, for proto. */
static bool goodbye(uint32_t proto, const char *p, size_t n)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };

	return agile__goodbye(proto, &iov, 1);
}

#define GOODBYE(proto, literal) goodbye(proto, literal, sizeof(literal) - 1)

START_TEST(redis_quit_forms)
{
	/* hiredis, redis-cli and every RESP client. */
	ck_assert(GOODBYE(AGILE_PROTO_REDIS, "*1\r\n$4\r\nQUIT\r\n"));
	ck_assert(GOODBYE(AGILE_PROTO_REDIS, "*1\r\n$4\r\nquit\r\n"));
	/* Inline commands, as telnet and nc send them. */
	ck_assert(GOODBYE(AGILE_PROTO_REDIS, "QUIT\r\n"));
	ck_assert(GOODBYE(AGILE_PROTO_REDIS, "Quit\n"));
}
END_TEST

START_TEST(redis_not_quit)
{
	static const char *const not_quit[] = {
		"*1\r\n$4\r\nPING\r\n",
		"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n", /* pipelined */
		"*2\r\n$3\r\nGET\r\n$4\r\nQUIT\r\n",        /* a key */
		"*1\r\n$4\r\nQUIT\r\n\r\n",
		"*1\r\n$4\r\nQUIT\r",
		"*1\r\n$5\r\nQUITS\r\n",
		"QUIT",
		"QUIT \r\n",
		"QUIT now\r\n",
		"QUITX\n",
		"\r\n",
		"",
	};

	for (size_t i = 0; i < sizeof(not_quit) / sizeof(*not_quit); i++)
		ck_assert_msg(!goodbye(AGILE_PROTO_REDIS, not_quit[i],
		                       strlen(not_quit[i])),
		              "\"%s\" taken for QUIT", not_quit[i]);
}
END_TEST

START_TEST(postgres_terminate)
{
	/* libpq's Terminate, sent alone at PQfinish. */
	ck_assert(GOODBYE(AGILE_PROTO_POSTGRES, "X\0\0\0\4"));
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "X\0\0\0\5"));
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "X\0\0\0"));
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "x\0\0\0\4"));
	/* A Query written with it. */
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES,
	                   "Q\0\0\0\rselect 1\0X\0\0\0\4"));
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "X\0\0\0\4X\0\0\0\4"));
	/* A protocol's goodbye is not the other's. */
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "*1\r\n$4\r\nQUIT\r\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_REDIS, "X\0\0\0\4"));
}
END_TEST

START_TEST(mysql_com_quit)
{
	/* The mariadb client's, mysqlslap's and libmariadb's COM_QUIT. */
	ck_assert(GOODBYE(AGILE_PROTO_MYSQL, "\1\0\0\0\1"));
	/* A COM_QUERY ("select 1"), a COM_PING (0x0e), a COM_QUIT with
	 * another sequence number or length, or followed by more. */
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\t\0\0\0\3select 1"));
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\1\0\0\0\16"));
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\1\0\0\1\1"));
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\2\0\0\0\1\0"));
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\1\0\0\0\1\1\0\0\0\1"));
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "\1\0\0\0"));
	/* Another protocol's goodbye is not this one's, nor the reverse. */
	ck_assert(!GOODBYE(AGILE_PROTO_MYSQL, "X\0\0\0\4"));
	ck_assert(!GOODBYE(AGILE_PROTO_POSTGRES, "\1\0\0\0\1"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "\1\0\0\0\1"));
}
END_TEST

START_TEST(memcached_quit)
{
	/* The binary protocol's QUIT and QUITQ: magic 0x80, the opcode, no
	 * key, extras or body; the vbucket, opaque and CAS are the
	 * client's. */
	static const char quit[24] = "\x80\x07";
	static const char quitq[24] = "\x80\x17\0\0\0\0\0\0\0\0\0\0"
	                              "\x12\x34\x56\x78";
	static const char get[24] = "\x80\x00";
	static const char with_key[24] = "\x80\x07\0\1";
	static const char with_body[24] = "\x80\x07\0\0\0\0\0\0\0\0\0\1";
	static const char response[24] = "\x81\x07";

	ck_assert(goodbye(AGILE_PROTO_MEMCACHED, quit, sizeof(quit)));
	ck_assert(goodbye(AGILE_PROTO_MEMCACHED, quitq, sizeof(quitq)));
	ck_assert(!goodbye(AGILE_PROTO_MEMCACHED, quit, sizeof(quit) - 1));
	ck_assert(!goodbye(AGILE_PROTO_MEMCACHED, get, sizeof(get)));
	ck_assert(!goodbye(AGILE_PROTO_MEMCACHED, with_key, sizeof(with_key)));
	ck_assert(!goodbye(AGILE_PROTO_MEMCACHED, with_body,
	                   sizeof(with_body)));
	ck_assert(!goodbye(AGILE_PROTO_MEMCACHED, response, sizeof(response)));
	/* The text protocol's, which memcached reads in lower case only. */
	ck_assert(GOODBYE(AGILE_PROTO_MEMCACHED, "quit\r\n"));
	ck_assert(GOODBYE(AGILE_PROTO_MEMCACHED, "quit\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "QUIT\r\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "quit"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "quit \r\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "get quit\r\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_MEMCACHED, "quit\r\nquit\r\n"));
	ck_assert(!GOODBYE(AGILE_PROTO_REDIS, "quit\r\n\r"));
}
END_TEST

/* Without a declaration the same bytes may be a request of any protocol:
 * nothing is ever a goodbye. */
START_TEST(undeclared_protocols_have_no_goodbye)
{
	static const uint32_t others[] = {
		AGILE_PROTO_NONE, AGILE_PROTO_HTTP, 99,
	};

	for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++) {
		ck_assert(!GOODBYE(others[i], "*1\r\n$4\r\nQUIT\r\n"));
		ck_assert(!GOODBYE(others[i], "QUIT\r\n"));
		ck_assert(!GOODBYE(others[i], "X\0\0\0\4"));
		ck_assert(!GOODBYE(others[i], "\1\0\0\0\1"));
		ck_assert(!GOODBYE(others[i], "quit\r\n"));
	}
}
END_TEST

START_TEST(gathered_across_iovecs)
{
	struct iovec resp[] = {
		{ .iov_base = "*1\r\n", .iov_len = 4 },
		{ .iov_base = NULL, .iov_len = 0 },
		{ .iov_base = "$4\r\nQU", .iov_len = 6 },
		{ .iov_base = "IT\r\n", .iov_len = 4 },
	};
	struct iovec terminate[] = {
		{ .iov_base = "X", .iov_len = 1 },
		{ .iov_base = "\0\0\0\4", .iov_len = 4 },
	};
	/* More than a goodbye in all, however it is cut. */
	struct iovec longer[] = {
		{ .iov_base = "X\0\0\0\4", .iov_len = 5 },
		{ .iov_base = "Q\0\0\0\rselect 1\0", .iov_len = 14 },
	};

	ck_assert(agile__goodbye(AGILE_PROTO_REDIS, resp, 4));
	ck_assert(!agile__goodbye(AGILE_PROTO_REDIS, resp, 3));
	ck_assert(agile__goodbye(AGILE_PROTO_POSTGRES, terminate, 2));
	ck_assert(!agile__goodbye(AGILE_PROTO_POSTGRES, longer, 2));
	ck_assert(!agile__goodbye(AGILE_PROTO_POSTGRES, NULL, 0));
	ck_assert(!agile__goodbye(AGILE_PROTO_POSTGRES, terminate, 0));
}
END_TEST

static Suite *goodbye_suite(void)
{
	Suite *s = suite_create("goodbye");
	TCase *tc = tcase_create("messages");

	tcase_add_test(tc, redis_quit_forms);
	tcase_add_test(tc, redis_not_quit);
	tcase_add_test(tc, postgres_terminate);
	tcase_add_test(tc, mysql_com_quit);
	tcase_add_test(tc, memcached_quit);
	tcase_add_test(tc, undeclared_protocols_have_no_goodbye);
	tcase_add_test(tc, gathered_across_iovecs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(goodbye_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
