/*
 * fuzz_rules.c - libFuzzer harness for the destination and configuration
 * parser (src/common/rules.c), which reads whatever a user put in the
 * environment of every program the preload enters.
 *
 * The input is split at newlines.  Every line is one environment entry for
 * agile__rules_parse (so a seed reads like a shell's `env`), and is also
 * given on its own, as a value, to agile__rule_parse, agile__listen_parse and
 * agile__parse_duration.  What was parsed is then used as the preload uses
 * it: hostnames resolved through a fake resolver, addresses learned, and
 * addresses (a few fixed ones and one taken from the input's last bytes)
 * matched.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - an error message is empty, longer than 511 characters, has a newline
 *     in it, or does not start with the variable's name and ": ";
 *   - an enabled rule has no ceiling, or one agile_rate_init refuses (the
 *     preload would then run it on a made-up configuration);
 *   - a match returns an index that is not an enabled rule.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LINES_MAX 48
#define INPUT_MAX 8192

static const char *current_var;

static void check_message(const char *message, void *arg)
{
	size_t len = strlen(message);
	const char *var = arg != NULL ? arg : current_var;

	if (len == 0 || len > 511 || strchr(message, '\n') != NULL)
		abort();
	if (var != NULL && (strncmp(message, var, strlen(var)) != 0 ||
	                    strncmp(message + strlen(var), ": ", 2) != 0))
		abort();
}

static void check_rule(const struct agile_rule *r)
{
	struct agile_rate_limiter limiter;

	if (memchr(r->name, '\0', sizeof(r->name)) == NULL ||
	    memchr(r->dest_text, '\0', sizeof(r->dest_text)) == NULL)
		abort();
	if (!r->enabled || r->inbound)
		return;
	if (!(r->config.max_rate > 0) || r->port < 0 || r->port > 65535 ||
	    r->prefix.prefix_len > 128)
		abort();
	if (agile_rate_init(&limiter, &r->config, 0) != 0)
		abort();
}

/* A resolver that answers from the name alone: "fail..." does not
 * resolve; anything else gets one IPv4 and one IPv6 address derived from
 * it.  Each node holds its address in the same allocation, the way glibc's
 * freeaddrinfo() expects. */
struct node {
	struct addrinfo ai;
	struct sockaddr_in6 addr;
};

static int fake_getaddrinfo(const char *host, const char *service,
                            const struct addrinfo *hints,
                            struct addrinfo **res)
{
	struct node *v4, *v6;
	uint32_t h = 2166136261u;

	(void)service;
	(void)hints;
	if (strncmp(host, "fail", 4) == 0)
		return EAI_NONAME;
	for (const char *c = host; *c != '\0'; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	v4 = calloc(1, sizeof(*v4));
	v6 = calloc(1, sizeof(*v6));
	if (v4 == NULL || v6 == NULL) {
		free(v4);
		free(v6);
		return EAI_MEMORY;
	}
	v4->ai.ai_family = AF_INET;
	v4->ai.ai_addrlen = sizeof(struct sockaddr_in);
	v4->ai.ai_addr = (struct sockaddr *)&v4->addr;
	((struct sockaddr_in *)&v4->addr)->sin_family = AF_INET;
	((struct sockaddr_in *)&v4->addr)->sin_addr.s_addr = h;
	v4->ai.ai_next = &v6->ai;
	v6->ai.ai_family = AF_INET6;
	v6->ai.ai_addrlen = sizeof(struct sockaddr_in6);
	v6->ai.ai_addr = (struct sockaddr *)&v6->addr;
	v6->addr.sin6_family = AF_INET6;
	memcpy(&v6->addr.sin6_addr, &h, sizeof(h));
	*res = &v4->ai;
	return 0;
}

static void check_match(const struct agile_rules *rules,
                        const struct sockaddr *addr, socklen_t len)
{
	int i = agile__rules_match(rules, addr, len);

	if (i >= rules->count || (i >= 0 && !rules->rule[i].enabled))
		abort();
	i = agile__rules_match_listen(rules, addr, len);
	if (i >= rules->count || (i >= 0 && !rules->rule[i].enabled))
		abort();
}

static void match_everything(struct agile_rules *rules, const uint8_t *data,
                             size_t size)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(80) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
	                            .sin6_port = htons(443) };
	struct sockaddr_un un = { .sun_family = AF_UNIX };

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	check_match(rules, (struct sockaddr *)&in, sizeof(in));
	in6.sin6_addr = in6addr_loopback;
	check_match(rules, (struct sockaddr *)&in6, sizeof(in6));
	snprintf(un.sun_path, sizeof(un.sun_path), "/run/app.sock");
	check_match(rules, (struct sockaddr *)&un, sizeof(un));
	/* The input's last bytes as an address of every family, and at every
	 * length a caller might pass. */
	if (size >= sizeof(in6.sin6_addr) + 2) {
		const uint8_t *tail = data + size - sizeof(in6.sin6_addr) - 2;

		memcpy(&in6.sin6_port, tail, 2);
		memcpy(&in6.sin6_addr, tail + 2, sizeof(in6.sin6_addr));
		memcpy(&in.sin_port, tail, 2);
		memcpy(&in.sin_addr, tail + 2, sizeof(in.sin_addr));
		for (socklen_t len = 0; len <= sizeof(in6); len += 4) {
			check_match(rules, (struct sockaddr *)&in6, len);
			check_match(rules, (struct sockaddr *)&in,
			            len < sizeof(in) ? len : sizeof(in));
		}
		memcpy(un.sun_path, tail, sizeof(in6.sin6_addr) + 2);
		for (socklen_t len = 0; len <= sizeof(un); len += 7)
			check_match(rules, (struct sockaddr *)&un, len);
		for (int i = 0; i < rules->count; i++)
			if (rules->rule[i].kind == AGILE_DEST_HOST)
				agile__rules_learn(rules, rules->rule[i].host,
				                  (struct sockaddr *)&in6,
				                  sizeof(in6));
		check_match(rules, (struct sockaddr *)&in6, sizeof(in6));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[INPUT_MAX + 1];
	static struct agile_rules rules;
	static struct agile_rule rule;
	char *envp[LINES_MAX + 1];
	char var[AGILE_RULE_NAME_MAX + 16];
	int lines = 0;
	int64_t ns;

	if (size > INPUT_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text; line != NULL && lines < LINES_MAX;) {
		char *end = strchr(line, '\n');

		if (end != NULL)
			*end = '\0';
		envp[lines++] = line;
		line = end != NULL ? end + 1 : NULL;
	}
	envp[lines] = NULL;

	/* Each line alone, as the value of one rule. */
	current_var = "AGILE_DEST_FUZZ";
	for (int i = 0; i < lines; i++) {
		agile__rule_parse("AGILE_DEST_FUZZ", "fuzz", envp[i], &rule,
		                 check_message, NULL);
		check_rule(&rule);
		agile__listen_parse("AGILE_DEST_FUZZ", "fuzz", envp[i], &rule,
		                   check_message, NULL);
		agile__parse_duration(envp[i], &ns);
	}

	/* The whole input as an environment.  Messages name variables the
	 * input chose, so only their shape is checked. */
	current_var = NULL;
	agile__rules_parse(envp, &rules, check_message, NULL);
	if (rules.count < 0 || rules.count > AGILE_RULES_MAX)
		abort();
	for (int i = 0; i < rules.count; i++) {
		check_rule(&rules.rule[i]);
		agile__rule_var(rules.rule[i].name, var, sizeof(var));
	}
	agile__rules_resolve_hosts(&rules, fake_getaddrinfo, check_message,
	                          NULL);
	match_everything(&rules, data, size);
	return 0;
}
