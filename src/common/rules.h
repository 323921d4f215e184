/*
 * rules.h - destination rules: what the user configured with AGILE_DEST_<NAME>
 * variables (or agilerun -d), parsed once, and how a socket address is matched
 * against them.  Parsing is pure (it takes the environment as an array and
 * reports errors through a callback), so tests drive it without a process.
 *
 * Grammar of one variable's value:
 *     DEST [key=value]...
 *     DEST := IPv4:PORT | [IPv6]:PORT | CIDR:PORT | HOST:PORT | unix:/path
 *     PORT := 1..65535 | *
 *     CIDR := IPv4/len | [IPv6/len]
 *
 * Matching: among the rules whose destination contains the address, the most
 * specific wins (longest prefix first, then an exact port over `*`, and a
 * hostname counts as exact host addresses); ties go to the rule defined first
 * (variables are sorted by NAME so "first" is stable across processes).
 *
 * Two extensions of the grammar above: `*:PORT` (or `*:*`) is any IPv4 or
 * IPv6 address, a prefix of length 0; and `unix:@name` is a Linux abstract
 * Unix socket.  Settings are the keys of struct agile_config under short
 * names (see agilepreload(7)), plus pace=request|connect, plus the
 * resilience keys of struct agile_resilience_config (resilience.h).
 *
 * AGILE_LISTEN_<NAME>=[ADDRESS]:PORT [key=value]... is a listener: the same
 * grammar (":8080" meaning any local address), matched against the local
 * address of a listening socket when the program accepts a connection.
 * Both kinds share one array, sorted by NAME together.
 */
#ifndef AGILE_PRELOAD_RULES_H
#define AGILE_PRELOAD_RULES_H

#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "agile.h"
#include "fleet_config.h"
#include "resilience.h"

#define AGILE_RULES_MAX 32          /* destinations per process */
#define AGILE_RULE_NAME_MAX 48      /* NAME, lower-cased, as agilestat shows */
#define AGILE_RULE_DEST_MAX 128     /* destination text as written */
#define AGILE_RULE_HOST_ADDRS 16    /* addresses remembered per hostname */

enum agile_dest_kind {
	AGILE_DEST_INET = 0, /* IPv4/IPv6 address or CIDR, with port or `*` */
	AGILE_DEST_HOST,     /* hostname: matched against resolved addresses */
	AGILE_DEST_UNIX      /* unix:/path, stream sockets */
};

enum agile_pace {
	AGILE_PACE_REQUEST = 0, /* every request takes a grant (default) */
	AGILE_PACE_CONNECT      /* only new connections take a grant */
};

/* An IPv4 address is stored as an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * with the prefix length raised by 96, so one comparison serves both. */
struct agile_inet_prefix {
	uint8_t addr[16];
	uint8_t prefix_len; /* 0..128 */
};

struct agile_rule {
	char name[AGILE_RULE_NAME_MAX];      /* from AGILE_DEST_<NAME>, lower case */
	char dest_text[AGILE_RULE_DEST_MAX]; /* the destination as written */
	enum agile_dest_kind kind;
	struct agile_inet_prefix prefix;     /* AGILE_DEST_INET */
	char host[AGILE_RULE_DEST_MAX];      /* AGILE_DEST_HOST */
	struct agile_inet_prefix host_addrs[AGILE_RULE_HOST_ADDRS];
	int host_addr_count;                 /* learned or resolved addresses */
	bool host_unresolved;                /* start-up lookup failed */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int port;                            /* 0 = any (`*`) */
	enum agile_pace pace;
	double inflight;                     /* inflight=: AGILE_INFLIGHT_AUTO
	                                        (0, unset), AGILE_INFLIGHT_OFF
	                                        or a gain; see
	                                        agile__rule_inflight_gain */
	struct agile_config config;          /* every controller knob */
	bool enabled;                        /* false: destination or max unreadable */
	int host_addr_next;                  /* slot the next learned address
	                                        replaces once host_addrs is full */
	struct agile_resilience_config resilience; /* breaker=, quota=, ... */
	bool inbound;                        /* an AGILE_LISTEN_ rule: matched
	                                        against a listening socket's
	                                        local address, never a connect */
	struct agile_fleet_rule fleet;       /* fleet_max=, fleet=, shared
	                                        window=, redis_timeout= */
};

struct agile_rules {
	struct agile_rule rule[AGILE_RULES_MAX];
	int count;
	/* Bumped (release) each time learning adds an address or replaces
	 * one; 1 after parsing. */
	uint64_t generation;
};

/*
 * One remembered match: the last address a caller (a thread) matched and
 * the answer, valid while the rules' generation is the one it was matched
 * under.  The key is what matching reads: the family, the port and the
 * address; not an IPv6 address's flow label or scope, nor sockaddr_in's
 * padding.  Pointer-free; zeroed means empty.
 */
struct agile_match_cache {
	uint64_t generation; /* 0: empty */
	uint64_t head;       /* family, port and an IPv4 address */
	uint64_t addr6[2];   /* an IPv6 address */
	int dest;
};

/*
 * Called once per configuration error with a complete one-line message that
 * names the variable, the key and what was expected, e.g.
 *   AGILE_DEST_API: key "slo": "200" has no unit; expected a duration such
 *   as 250us, 200ms or 1.5s
 */
typedef void (*agile_rules_error_fn)(const char *message, void *arg);

/*
 * Parse every AGILE_DEST_* entry of `envp` (NULL-terminated "K=V" strings)
 * into `out`.  Returns the number of errors reported.  A bad setting keeps
 * its default and the rule stays enabled; a rule whose destination or max
 * cannot be read is kept with enabled = false.
 */
int agile__rules_parse(char *const *envp, struct agile_rules *out,
                      agile_rules_error_fn on_error, void *arg);

/* Parse one rule's value (after "NAME="); `var` names it in messages. */
int agile__rule_parse(const char *var, const char *name, const char *value,
                     struct agile_rule *out, agile_rules_error_fn on_error,
                     void *arg);

/* Parse one AGILE_LISTEN_ rule's value: [ADDRESS]:PORT (":8080" is any
 * local address) and settings; max= is connections at once. */
int agile__listen_parse(const char *var, const char *name, const char *value,
                       struct agile_rule *out, agile_rules_error_fn on_error,
                       void *arg);

/* Parse a duration with a mandatory unit (ns, us, ms, s, m): 0 or -EINVAL. */
int agile__parse_duration(const char *text, int64_t *out_ns);

/* The index of the rule that matches `addr`, or -1.  Only enabled rules.
 * An AF_UNIX address matches a unix: rule by path; the caller checks that
 * the socket is a stream socket.  IPv4 and IPv4-mapped IPv6 addresses are the
 * same address.  Reads only; safe to call concurrently with other matches. */
int agile__rules_match(const struct agile_rules *rules,
                      const struct sockaddr *addr, socklen_t len);

/* The rules' generation, for agile_match_cache_get/put: read it before
 * matching, so that learning meanwhile leaves the entry stale. */
static inline uint64_t agile_rules_generation(const struct agile_rules *rules)
{
	return __atomic_load_n(&rules->generation, __ATOMIC_ACQUIRE);
}

/* The cache key of an AF_INET or AF_INET6 address long enough to match
 * (agile__rules_match reads no shorter one); false for any other. */
static inline bool agile__match_cache_key(const struct sockaddr *addr,
                                          socklen_t len, uint64_t *head,
                                          uint64_t addr6[2])
{
	if (addr == NULL)
		return false;
	if (addr->sa_family == AF_INET &&
	    len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)addr;

		*head = (uint64_t)in->sin_port << 32 | in->sin_addr.s_addr;
		addr6[0] = addr6[1] = 0;
		return true;
	}
	if (addr->sa_family == AF_INET6 &&
	    len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)addr;

		*head = (uint64_t)1 << 48 | (uint64_t)in6->sin6_port << 32;
		__builtin_memcpy(addr6, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

/* Whether `cache` holds the answer for `addr` under `generation`: then
 * *dest is agile__rules_match's answer (of that generation).  Only AF_INET
 * and AF_INET6 addresses long enough to match are ever held.  Inline: the
 * connect() hook asks on every call. */
static inline bool agile_match_cache_get(const struct agile_match_cache *cache,
                                         uint64_t generation,
                                         const struct sockaddr *addr,
                                         socklen_t len, int *dest)
{
	uint64_t head, addr6[2];

	if (cache->generation == 0 || cache->generation != generation ||
	    !agile__match_cache_key(addr, len, &head, addr6) ||
	    cache->head != head || cache->addr6[0] != addr6[0] ||
	    cache->addr6[1] != addr6[1])
		return false;
	*dest = cache->dest;
	return true;
}

/* Remember that `addr` matched `dest` under `generation` (nothing for an
 * address agile_match_cache_get would not hold). */
void agile__match_cache_put(struct agile_match_cache *cache,
                           uint64_t generation, const struct sockaddr *addr,
                           socklen_t len, int dest);

/* The index of the enabled listener rule (AGILE_LISTEN_) whose address
 * contains `addr`, a listening socket's local address, or -1. */
int agile__rules_match_listen(const struct agile_rules *rules,
                             const struct sockaddr *addr, socklen_t len);

/* Remember that `host` resolved to `addr` (from the program's own
 * getaddrinfo/gethostbyname), so later connects to it match the rule.
 * Host names compare without case and without a trailing dot; the port of
 * `addr` is ignored (the rule's port applies).  Each rule keeps the last
 * AGILE_RULE_HOST_ADDRS distinct addresses.  Calls to learn must be
 * serialised by the caller; a concurrent match sees either the old or the
 * new count, and once the list is full it may see one slot half replaced,
 * which can misclassify that one connect and nothing else. */
void agile__rules_learn(struct agile_rules *rules, const char *host,
                       const struct sockaddr *addr, socklen_t len);

/* The signature of getaddrinfo(3), so the preload can pass its bound libc
 * symbol instead of going through its own hook. */
typedef int (*agile_getaddrinfo_fn)(const char *node, const char *service,
                                    const struct addrinfo *hints,
                                    struct addrinfo **res);

/*
 * Resolve every enabled hostname rule that has no address yet, once, with
 * `resolve` (NULL: getaddrinfo(3)), and learn the results.  A failed lookup
 * sets host_unresolved and is reported through on_error (which may be NULL),
 * e.g.
 *   AGILE_DEST_API: cannot resolve host "api.example.com" (Name or service
 *   not known); its connections count as unreachable until the program
 *   resolves it
 * This is the only function here that does I/O (DNS): call it lazily, not
 * from a constructor.  Returns the number of hosts that failed to resolve.
 */
int agile__rules_resolve_hosts(struct agile_rules *rules,
                              agile_getaddrinfo_fn resolve,
                              agile_rules_error_fn on_error, void *arg);

/* The variable that configures rule `name`: "AGILE_DEST_" and the name
 * upper-cased, as agilerun sets it.  snprintf-style: returns the length
 * needed. */
size_t agile__rule_var(const char *name, char *buf, size_t len);

/* "request" or "connect". */
const char *agile__pace_name(enum agile_pace pace);

/*
 * inflight=: a cap on each process's requests in flight to a destination,
 * gain x its rate x its window (agile_rate_inflight_cap), held in the send
 * that would start one more (preload/track/inflight.c).  auto (the
 * default) is AGILE_INFLIGHT_DEFAULT_GAIN where the law moves the rate
 * (floor below max) and the preset is not seed, off otherwise.  Returns
 * the gain in force, 0 for none.
 */
#define AGILE_INFLIGHT_AUTO 0.0
#define AGILE_INFLIGHT_OFF (-1.0)
#define AGILE_INFLIGHT_DEFAULT_GAIN 1.0
#define AGILE_INFLIGHT_GAIN_MAX 100
double agile__rule_inflight_gain(const struct agile_rule *rule);

#endif /* AGILE_PRELOAD_RULES_H */
