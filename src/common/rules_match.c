/*
 * rules_match.c - which rule a socket address belongs to: the most
 * specific of the enabled rules whose destination contains it (rules.h
 * says the order), for a connect() or, among the listeners, for a socket
 * that accepts; and the per-thread cache of the last answer, which the
 * connect() hook asks first.
 *
 * Matching only reads the rules, so any number of threads may match at
 * once; learning a host name's address (rules_hosts.c) bumps the rules'
 * generation, which leaves every cached answer stale.
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "rules_internal.h"

/* The address and port of an AF_INET or AF_INET6 sockaddr, IPv4 mapped. */
bool agile__rules_inet_key(const struct sockaddr *addr, socklen_t len,
                           uint8_t out[16], int *port)
{
	if (addr == NULL)
		return false;
	if (addr->sa_family == AF_INET &&
	    len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)addr;
		struct agile_inet_prefix p;
		agile__rules_map_ipv4(&p, &in->sin_addr);
		memcpy(out, p.addr, 16);
		*port = ntohs(in->sin_port);
		return true;
	}
	if (addr->sa_family == AF_INET6 &&
	    len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)addr;
		memcpy(out, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return true;
	}
	return false;
}

static bool prefix_contains(const struct agile_inet_prefix *p,
                            const uint8_t addr[16])
{
	/* Whole bytes with memcmp, then the partial one: every matched
	 * connect() asks this of every rule, and an exact address is a /128,
	 * which byte by byte cost about 300 instructions a rule. */
	int whole = p->prefix_len / 8;
	int rest = p->prefix_len % 8;

	if (memcmp(addr, p->addr, (size_t)whole) != 0)
		return false;
	return rest == 0 ||
	       (addr[whole] & (uint8_t)(0xff << (8 - rest))) == p->addr[whole];
}

/* Whether an AF_UNIX address names the rule's path.  A pathname address may
 * or may not carry its terminating NUL inside `len`; an abstract one is the
 * exact bytes after its leading NUL. */
static bool unix_matches(const struct agile_rule *rule,
                         const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_un *un = (const void *)addr;
	size_t offset = offsetof(struct sockaddr_un, sun_path);
	size_t path_len;
	size_t want;

	if (addr == NULL || addr->sa_family != AF_UNIX || len <= offset)
		return false;
	path_len = (size_t)len - offset;
	if (path_len > sizeof(un->sun_path))
		path_len = sizeof(un->sun_path);
	if (rule->unix_path[0] == '@') {
		want = strlen(rule->unix_path + 1);
		return un->sun_path[0] == '\0' && path_len == want + 1 &&
		       memcmp(un->sun_path + 1, rule->unix_path + 1, want) == 0;
	}
	want = strlen(rule->unix_path);
	return strnlen(un->sun_path, path_len) == want &&
	       memcmp(un->sun_path, rule->unix_path, want) == 0;
}

/* How specific a matching rule is: prefix bits times two, plus one for an
 * exact port, so a longer prefix always beats a port and a port breaks ties
 * between equal prefixes.  -1 when the rule does not match. */
static int specificity(const struct agile_rule *rule, const uint8_t addr[16],
                       int port)
{
	int bits = -1;

	if (rule->port != 0 && rule->port != port)
		return -1;
	if (rule->kind == AGILE_DEST_INET) {
		if (prefix_contains(&rule->prefix, addr))
			bits = rule->prefix.prefix_len;
	} else if (rule->kind == AGILE_DEST_HOST) {
		int count = __atomic_load_n(&rule->host_addr_count,
		                            __ATOMIC_ACQUIRE);
		for (int i = 0; i < count && i < AGILE_RULE_HOST_ADDRS; i++)
			if (memcmp(rule->host_addrs[i].addr, addr, 16) == 0)
				bits = 128;
	}
	if (bits < 0)
		return -1;
	return bits * 2 + (rule->port != 0);
}

int agile__rules_match(const struct agile_rules *rules,
                      const struct sockaddr *addr, socklen_t len)
{
	uint8_t key[16];
	int port;
	int best = -1;
	int best_score = -1;

	if (rules == NULL || addr == NULL)
		return -1;
	if (addr->sa_family == AF_UNIX) {
		for (int i = 0; i < rules->count; i++)
			if (rules->rule[i].enabled && !rules->rule[i].inbound &&
			    rules->rule[i].kind == AGILE_DEST_UNIX &&
			    unix_matches(&rules->rule[i], addr, len))
				return i;
		return -1;
	}
	if (!agile__rules_inet_key(addr, len, key, &port))
		return -1;
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *rule = &rules->rule[i];
		int score;
		if (!rule->enabled || rule->kind == AGILE_DEST_UNIX ||
		    rule->inbound)
			continue;
		score = specificity(rule, key, port);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

void agile__match_cache_put(struct agile_match_cache *cache,
                           uint64_t generation, const struct sockaddr *addr,
                           socklen_t len, int dest)
{
	uint64_t head, addr6[2];

	if (!agile__match_cache_key(addr, len, &head, addr6))
		return;
	/* Empty while it is rewritten, valid again only once whole: a vfork
	 * child (which writes its parent's thread storage) killed half-way
	 * must not leave a key beside another key's answer.  The fences keep
	 * the compiler from moving the stores across the generation's; a
	 * child of clone(CLONE_VM) without its own thread storage that runs
	 * beside its parent shares errno and everything else per thread with
	 * it, and is not made safe here either. */
	cache->generation = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cache->head = head;
	cache->addr6[0] = addr6[0];
	cache->addr6[1] = addr6[1];
	cache->dest = dest;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cache->generation = generation;
}

int agile__rules_match_listen(const struct agile_rules *rules,
                             const struct sockaddr *addr, socklen_t len)
{
	uint8_t key[16];
	int port;
	int best = -1;
	int best_score = -1;

	if (rules == NULL || !agile__rules_inet_key(addr, len, key, &port))
		return -1;
	for (int i = 0; i < rules->count; i++) {
		const struct agile_rule *rule = &rules->rule[i];
		int score;

		if (!rule->enabled || !rule->inbound ||
		    rule->kind != AGILE_DEST_INET)
			continue;
		score = specificity(rule, key, port);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}
