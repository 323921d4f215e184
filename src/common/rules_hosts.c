/*
 * rules_hosts.c - the rules that name a host: learning the addresses the
 * program's own lookups return, so that later connects to them match, and
 * resolving at start-up the names the program has not looked up yet.
 *
 * agile__rules_resolve_hosts() is the one function of the rules that does
 * I/O (DNS); the preload calls it lazily, never from a constructor.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

static void learn_into(struct agile_rules *rules, struct agile_rule *rule,
                       const uint8_t addr[16])
{
	int count = rule->host_addr_count;
	int slot;

	for (int i = 0; i < count; i++)
		if (memcmp(rule->host_addrs[i].addr, addr, 16) == 0)
			return;
	rule->host_unresolved = false;
	if (count < AGILE_RULE_HOST_ADDRS) {
		memcpy(rule->host_addrs[count].addr, addr, 16);
		rule->host_addrs[count].prefix_len = 128;
		/* Publish the slot only after it is written. */
		__atomic_store_n(&rule->host_addr_count, count + 1,
		                 __ATOMIC_RELEASE);
	} else {
		/* Full: replace the oldest, so a name whose addresses rotate
		 * (DNS round robin behind a load balancer) keeps matching. */
		slot = rule->host_addr_next % AGILE_RULE_HOST_ADDRS;
		memcpy(rule->host_addrs[slot].addr, addr, 16);
		rule->host_addr_next = (slot + 1) % AGILE_RULE_HOST_ADDRS;
	}
	/* What this address matches has changed (and what the one it
	 * replaced matches): remembered matches go stale.  Bumped after the
	 * address is published, so a matcher that reads the new generation
	 * (acquire) before matching also sees the address. */
	__atomic_add_fetch(&rules->generation, 1, __ATOMIC_RELEASE);
}

void agile__rules_learn(struct agile_rules *rules, const char *host,
                       const struct sockaddr *addr, socklen_t len)
{
	char want[AGILE_RULE_DEST_MAX];
	uint8_t key[16];
	int port;

	if (rules == NULL || host == NULL ||
	    !agile__rules_inet_key(addr, len, key, &port))
		return;
	agile__rules_normalise_host(want, sizeof(want), host);
	for (int i = 0; i < rules->count; i++) {
		struct agile_rule *rule = &rules->rule[i];
		if (rule->kind == AGILE_DEST_HOST &&
		    strcmp(rule->host, want) == 0)
			learn_into(rules, rule, key);
	}
}

int agile__rules_resolve_hosts(struct agile_rules *rules,
                              agile_getaddrinfo_fn resolve,
                              agile_rules_error_fn on_error, void *arg)
{
	int failed = 0;

	if (rules == NULL)
		return 0;
	if (resolve == NULL)
		resolve = getaddrinfo;
	for (int i = 0; i < rules->count; i++) {
		struct agile_rule *rule = &rules->rule[i];
		struct addrinfo hints, *res = NULL;
		char var[DEST_PREFIX_LEN + AGILE_RULE_NAME_MAX];
		int rc;

		if (!rule->enabled || rule->kind != AGILE_DEST_HOST ||
		    rule->host_addr_count > 0)
			continue;
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		rc = resolve(rule->host, NULL, &hints, &res);
		if (rc == 0)
			for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
				agile__rules_learn(rules, rule->host, ai->ai_addr,
				                  ai->ai_addrlen);
		if (res != NULL)
			freeaddrinfo(res);
		if (rule->host_addr_count > 0)
			continue;
		rule->host_unresolved = true;
		failed++;
		if (on_error != NULL) {
			struct reporter r;
			agile__rule_var(rule->name, var, sizeof(var));
			r = (struct reporter){ var, on_error, arg, 0, .defer = false };
			report(&r, "cannot resolve host \"%s\" (%s); its "
			       "connections count as unreachable until the "
			       "program resolves it", rule->host,
			       rc != 0 ? gai_strerror(rc) : "no address");
		}
	}
	return failed;
}
