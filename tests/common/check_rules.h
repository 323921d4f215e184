/*
 * check_rules.h - what the Check files of the rule parser and matcher
 * (tests/common/check_rules*.c, one per file of src/common/rules*.c) share:
 * the static rule and messages a test parses into, the helpers that parse
 * and match, and each file's test case.
 */
#ifndef CHECK_RULES_H
#define CHECK_RULES_H

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define MESSAGES_MAX 48

/* Every message the parser reported, in order. */
struct messages {
	char line[MESSAGES_MAX][512];
	int count;
};

/* The callback that collects messages into a struct messages. */
void collect(const char *message, void *arg);

/* The last rule parsed and its messages, so a test can look at both. */
extern struct agile_rule rule;
extern struct messages msgs;

/* Parse one value as AGILE_DEST_API, or as AGILE_LISTEN_WEB. */
int parse(const char *value);
int parse_listen(const char *value);
/* Parse a value that must be clean. */
void parse_ok(const char *value);
/* Whether some message contains `needle`. */
bool said(const char *needle);

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

/* The tails of the rate keys' messages. */
#define RATE_FORMS \
	"requests per second such as 5 or 0.5, or a count per period such as " \
	"1/10s or 30/1m"
#define MAX_EXPECTED "a rate greater than 0: " RATE_FORMS
#define RATE_EXPECTED "a rate, 0 or more: " RATE_FORMS

/* The parsed rule's address is `addr` (IPv4 mapped) with prefix `len`. */
void ck_assert_prefix(const char *addr, int len);

/* Socket addresses for matching, built in `ss`; each returns its length. */
extern struct sockaddr_storage ss;
socklen_t inet4(const char *addr, int port);
socklen_t inet6(const char *addr, int port);
socklen_t unix_path(const char *path, bool with_nul);
socklen_t unix_abstract(const char *name);

/* Parse an environment into `rules`. */
extern struct agile_rules rules;
int parse_env(char *const *envp);
/* agile__rules_match of an address in `rules`. */
int match4(const char *addr, int port);
int match6(const char *addr, int port);
/* The index of the rule named `name`, which must exist. */
int rule_named(const char *name);

/* Each file's test case, in the order check_rules.c runs them. */
TCase *rules_dest_tcase(void);
TCase *rules_lex_tcase(void);
TCase *rules_keys_tcase(void);
TCase *rules_env_tcase(void);
TCase *rules_match_tcase(void);
TCase *rules_hosts_tcase(void);
TCase *rules_resilience_tcase(void);

#endif
