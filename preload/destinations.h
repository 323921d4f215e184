/*
 * destinations.h - the configured destinations at run time: the rules read
 * from AGILE_DEST_* at first use, which one a socket address matches, and
 * each destination's limiter, attached lazily to its slot in the state file
 * (or to a per-process fallback when the file cannot be used).
 */
#ifndef AGILE_PRELOAD_DESTINATIONS_H
#define AGILE_PRELOAD_DESTINATIONS_H

#include <netdb.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fleet.h"
#include "rules.h"
#include "state.h"

/* Parse AGILE_DEST_* from the environment once (idempotent, thread-safe).
 * Configuration errors are logged; under AGILE_STRICT=1 they exit 2. */
void agile__destinations_load(void);

/* The rule index `addr` matches, or -1.  Loads the rules on first use, and
 * resolves configured hostnames the program has not looked up itself when
 * nothing else matched. */
int agile__destinations_match(const struct sockaddr *addr, socklen_t len);

/* This thread's last match (rules.h), and the rules it was made against. */
extern __thread struct agile_match_cache agile__match_cache
	__attribute__((tls_model("initial-exec")));
extern const struct agile_rules *const agile__dest_rules;

/* 1 once the rules are loaded (release): before, another thread may be
 * writing them. */
extern int agile__dest_loaded;

/* Set once the configuration is loaded and enables no rule: a connect
 * then has nothing to match and nothing to track. */
extern int agile__dest_none;

static inline bool agile__destinations_none(void)
{
	return __atomic_load_n(&agile__dest_none, __ATOMIC_ACQUIRE) != 0;
}

/* The rule `addr` matches (-1: none) when this thread's last match says,
 * from the cache, without loading or matching anything; otherwise
 * `unknown`.  Before the rules are loaded nothing is read. */
static inline int agile__destinations_cached(const struct sockaddr *addr,
                                             socklen_t len, int unknown)
{
	int dest;

	if (__atomic_load_n(&agile__dest_loaded, __ATOMIC_ACQUIRE) &&
	    agile_match_cache_get(&agile__match_cache,
	                          agile_rules_generation(agile__dest_rules),
	                          addr, len, &dest))
		return dest;
	return unknown;
}

/* The parsed rules, indexed by destination (a destination is a rule). */
extern const struct agile_rule *const agile__dest_rule;

/* Rule `dest` as parsed (its resilience settings, its kind). */
static inline const struct agile_rule *agile__destinations_rule(int dest)
{
	return &agile__dest_rule[dest];
}

/* The listener rule (AGILE_LISTEN_) a listening socket's local address
 * matches, or -1; and whether any is configured at all. */
int agile__destinations_match_listen(const struct sockaddr *addr,
                                     socklen_t len);
bool agile__destinations_any_listen(void);

/* enum agile_pace of rule `dest`. */
static inline int agile__destinations_pace(int dest)
{
	return (int)agile__dest_rule[dest].pace;
}

/*
 * One destination in this process (a destination is a rule, by index):
 * its slot once attached, and what checking its limiter needs.  All but
 * the atomics are written under destinations.c's attach_lock before the
 * slot is published with a release store, and only read after.
 */
struct agile_destination {
	/* The slot holding its limiter; NULL until attached. */
	struct agile_state_slot *slot;
	/* The slot is in the state file (not this process's own). */
	int shared;
	/* The configuration its limiter is checked against, and the bucket's
	 * bounds worked out from it for the check before each grant. */
	struct agile_resolved config;
	struct agile_bucket_bounds bounds;
	/* A stricter configuration's slot of the same name
	 * (agile__state_stricter), and when it was last looked for: atomics,
	 * written by whichever thread takes a grant when a look is due. */
	struct agile_state_slot *stricter;
	int64_t stricter_checked_ns;
	/* This process has said that the slot was damaged (an atomic): once
	 * is enough on stderr, later repairs only at AGILE_LOG=info. */
	int damage_reported;
};
extern struct agile_destination agile__destination[AGILE_RULES_MAX];

/* Attach destination `dest` to its slot (under attach_lock, once). */
struct agile_state_slot *agile__destinations_attach(int dest);

/* The slot holding destination `dest`'s limiter, attaching on first use.
 * Never NULL: when the state file cannot be used, a per-process slot.
 * Every hook on a tracked socket asks, several times a request: after the
 * first, one load. */
static inline struct agile_state_slot *agile__destinations_slot(int dest)
{
	struct agile_state_slot *s =
		__atomic_load_n(&agile__destination[dest].slot, __ATOMIC_ACQUIRE);

	return s != NULL ? s : agile__destinations_attach(dest);
}

/* Take the next grant of destination `dest`, whose slot is `s`: its
 * planned time (agile_rate_take).  A shared slot's limiter is checked first,
 * and re-initialised from the configuration when another process left it
 * damaged, with one line on stderr the first time. */
int64_t agile__destinations_take(int dest, struct agile_state_slot *s,
                                 int64_t now_ns);

/* Feed the addresses a program's own name lookup returned to the hostname
 * rules; a failed lookup of a configured hostname counts as unreachable. */
void agile__destinations_learn_addrinfo(const char *host,
                                        const struct addrinfo *res, int rc);
/* One address of a configured name, from /etc/hosts (hosts_fallback.c). */
void agile__destinations_learn_address(const char *host,
                                       const struct sockaddr *addr,
                                       socklen_t len);
void agile__destinations_learn_hostent(const char *host,
                                       const struct hostent *he);

/* The state file's path, as the first attach found it (agile__state_path);
 * "" before.  The fleet file sits beside it. */
const char *agile__destinations_state_path(void);

/* What agile__destinations_tick does out of line: the fleet's tick, the
 * check of the limiter and the control step. */
void agile__destinations_tick_slow(int dest, struct agile_state_slot *s,
                                   int64_t now_ns);

/* Run the control step of destination `dest`, whose slot is `s`, if it is
 * due, and append the tick to its history when this process won it.  Call
 * after every event.  Between steps (the step is not due, and not planned
 * further ahead than the clock slack, which the slow path checks the
 * limiter for), without a fleet, a call is one load and two comparisons,
 * inline, since every request makes about three. */
static inline void agile__destinations_tick(int dest,
                                            struct agile_state_slot *s,
                                            int64_t now_ns)
{
	int64_t next_ns = __atomic_load_n(&s->limiter.loop.next_tick_ns,
	                                  __ATOMIC_ACQUIRE);

	if (now_ns < next_ns && next_ns - now_ns <= AGILE_CLOCK_SLACK_NS &&
	    !__atomic_load_n(&agile__fleet_active, __ATOMIC_ACQUIRE))
		return;
	agile__destinations_tick_slow(dest, s, now_ns);
}

/* fork handlers (see forklist.c). */
void agile__destinations_atfork_prepare(void);
void agile__destinations_atfork_parent(void);
void agile__destinations_atfork_child(void);

#endif /* AGILE_PRELOAD_DESTINATIONS_H */
