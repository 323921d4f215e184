/*
 * check_rules.c - the Check runner of the rule parser and matcher
 * (src/common/rules*.c), and the helpers its files share (check_rules.h).
 * The files mirror the parser's: check_rules_dest.c every destination form,
 * check_rules_lex.c every number, duration and rate, check_rules_keys.c
 * every key, the unknown ones and the rule's words, check_rules_env.c the
 * environment's order, check_rules_match.c matching precedence and the
 * match cache, check_rules_hosts.c learning and resolving host names,
 * check_rules_resilience.c the resilience and listener keys.  Each checks
 * the error messages word for word and the strictness policy: a bad setting
 * keeps its default and the rule stays in force; a bad destination or max
 * disables the rule.  The parser is pure, so everything here runs without a
 * socket, a process or the network.
 */
#include "config.h"

#include "check_rules.h"

void collect(const char *message, void *arg)
{
	struct messages *m = arg;

	ck_assert_msg(strchr(message, '\n') == NULL,
	              "a message must be one line: \"%s\"", message);
	if (m->count < MESSAGES_MAX)
		snprintf(m->line[m->count], sizeof(m->line[0]), "%s", message);
	m->count++;
}

struct agile_rule rule;
struct messages msgs;

int parse(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile__rule_parse("AGILE_DEST_API", "API", value, &rule, collect,
	                        &msgs);
}

int parse_listen(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile__listen_parse("AGILE_LISTEN_WEB", "web", value, &rule,
	                          collect, &msgs);
}

void parse_ok(const char *value)
{
	int errors = parse(value);

	ck_assert_msg(errors == 0, "\"%s\": %d errors, first: %s", value, errors,
	              msgs.count > 0 ? msgs.line[0] : "(none)");
	ck_assert(rule.enabled);
}

bool said(const char *needle)
{
	for (int i = 0; i < msgs.count && i < MESSAGES_MAX; i++)
		if (strstr(msgs.line[i], needle) != NULL)
			return true;
	return false;
}

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

void ck_assert_prefix(const char *addr, int len)
{
	uint8_t want[16];

	prefix_of(addr, want);
	ck_assert_int_eq(rule.kind, AGILE_DEST_INET);
	ck_assert_mem_eq(rule.prefix.addr, want, 16);
	ck_assert_int_eq(rule.prefix.prefix_len, len);
}

struct sockaddr_storage ss;

socklen_t inet4(const char *addr, int port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET, addr, &in->sin_addr), 1);
	return sizeof(*in);
}

socklen_t inet6(const char *addr, int port)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
	return sizeof(*in6);
}

socklen_t unix_path(const char *path, bool with_nul)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	size_t len = strlen(path);

	memset(&ss, 0, sizeof(ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, path, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
	                   (with_nul ? 1 : 0));
}

socklen_t unix_abstract(const char *name)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	size_t len = strlen(name);

	memset(&ss, 0, sizeof(ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + 1, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

struct agile_rules rules;

int parse_env(char *const *envp)
{
	memset(&msgs, 0, sizeof(msgs));
	return agile__rules_parse(envp, &rules, collect, &msgs);
}

int match4(const char *addr, int port)
{
	socklen_t len = inet4(addr, port);
	return agile__rules_match(&rules, (struct sockaddr *)&ss, len);
}

int match6(const char *addr, int port)
{
	socklen_t len = inet6(addr, port);
	return agile__rules_match(&rules, (struct sockaddr *)&ss, len);
}

int rule_named(const char *name)
{
	for (int i = 0; i < rules.count; i++)
		if (strcmp(rules.rule[i].name, name) == 0)
			return i;
	ck_abort_msg("no rule named %s", name);
	return -1;
}

int main(void)
{
	Suite *s = suite_create("rules");
	SRunner *runner;
	int failed;

	suite_add_tcase(s, rules_dest_tcase());
	suite_add_tcase(s, rules_lex_tcase());
	suite_add_tcase(s, rules_keys_tcase());
	suite_add_tcase(s, rules_env_tcase());
	suite_add_tcase(s, rules_match_tcase());
	suite_add_tcase(s, rules_hosts_tcase());
	suite_add_tcase(s, rules_resilience_tcase());
	runner = srunner_create(s);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
