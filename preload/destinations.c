/*
 * destinations.c - configured destinations at run time (see destinations.h).
 *
 * Nothing here runs before the first hook that needs it: a process that
 * never connects to a configured destination (each `sh`, `sed` and `grep` of
 * a script inherits LD_PRELOAD) parses the environment at most once and never
 * opens the state file.
 *
 * Locks, each held for microseconds and never while a caller waits for a
 * grant (see agile__destinations_atfork_prepare for their order):
 *   learn_lock  - serialises agile__rules_learn; agile__rules_match runs
 *                 without it (rules.h), and no lookup runs under it
 *                 (hosts_fallback.c).
 *   attach_lock - serialises attaching destinations to slots and the
 *                 one-time opening of the state file.
 */
#include "config.h"

#include <errno.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "lazymath.h"
#include "fleet.h"
#include "hosts_fallback.h"
#include "log.h"
#include "process.h"
#include "symbols.h"

/* The rules, parsed once (load_once) and read without a lock after, but
 * for the addresses learned into them under learn_lock; and what they
 * enable, counted as they are parsed. */
static struct agile_rules rules;
static int rules_enabled;   /* enabled rules; 0 means "match nothing" */
static int host_rules;      /* enabled hostname rules */
static int listen_rules;    /* enabled AGILE_LISTEN_ rules */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Serialises agile__rules_learn (see the top of this file). */
static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;

/* Serialises attaching destinations to their slots, and guards the state
 * file's mapping, opened once per process (inherited by fork children),
 * and each destination's fields but the atomics (destinations.h). */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agile_state_map state_map;
static int state_tried;     /* opening was attempted */
static char state_path[4096]; /* its path, for messages */
struct agile_destination agile__destination[AGILE_RULES_MAX];

/*
 * The last address each thread matched, and the answer (rules.h).  A
 * program calls connect() on one destination over and over, and a
 * non-blocking connect is usually made twice (the second call collects the
 * result): matching against every rule, twice per connection, was 370 of
 * the 2,200 instructions the preload ran per request of `ab -c 16`
 * (callgrind).  Learning an address makes the entry stale (rules.c).
 */
__thread struct agile_match_cache agile__match_cache
	__attribute__((tls_model("initial-exec")));

static void on_config_error(const char *message, void *arg)
{
	int *errors = arg;

	(*errors)++;
	agile__log(agile__strict() ? AGILE_LOG_ERROR : AGILE_LOG_WARN, "%s",
	           message);
}

/* AGILE_STRICT takes the usual spellings of yes and no; any other value
 * ("2", "y") is said, since running lax without a word would hide that a
 * wish for strictness was not granted. */
static void check_strict_value(int *errors)
{
	const char *v = agile__env("AGILE_STRICT");
	char message[200];

	if (agile__strict_value(v) >= 0)
		return;
	snprintf(message, sizeof(message), "AGILE_STRICT: \"%.40s\" is not "
	         "a yes or a no; expected 1, true, yes or on (stop on a "
	         "configuration error), or 0, false, no or off (using 0)", v);
	on_config_error(message, errors);
}

static void load(void)
{
	int errors = 0;

	agile__enter();
	agile__log_init();
	if (agile__env_snapshot_failed())
		agile__log(AGILE_LOG_ERROR, "cannot copy the AGILE_ variables "
		           "(no memory); destinations are not throttled");
	check_strict_value(&errors);
	/* The core computes from here on; without libm it cannot, and the
	 * preload stays out of the way (lazymath.c). */
	if (agile__lazymath_bind() < 0) {
		agile__log(AGILE_LOG_ERROR, "cannot load %s; destinations are "
		           "not throttled", LIBM_SO);
		if (agile__strict())
			agile__strict_exit();
		__atomic_store_n(&agile__disabled, 1, __ATOMIC_RELEASE);
		agile__leave();
		return;
	}
	agile__rules_parse(agile__env_block(), &rules, on_config_error, &errors);
	/* AGILE_REDIS, read only when a rule has fleet settings (fleet.h). */
	agile__fleet_load(&rules, on_config_error, &errors);
	for (int i = 0; i < rules.count; i++) {
		if (!rules.rule[i].enabled)
			continue;
		rules_enabled++;
		if (rules.rule[i].kind == AGILE_DEST_HOST)
			host_rules++;
		if (rules.rule[i].inbound)
			listen_rules++;
	}
	if (rules_enabled == 0)
		__atomic_store_n(&agile__dest_none, 1, __ATOMIC_RELEASE);
	if (errors > 0 && agile__strict()) {
		agile__log(AGILE_LOG_ERROR, "AGILE_STRICT=1: %d configuration "
		           "error%s; not starting", errors, errors == 1 ? "" : "s");
		agile__strict_exit();
	}
	if (agile__log_enabled(AGILE_LOG_DEBUG))
		for (int i = 0; i < rules.count; i++)
			agile__log(AGILE_LOG_DEBUG, "destination %s: %s%s",
			           rules.rule[i].name, rules.rule[i].dest_text,
			           rules.rule[i].enabled ? "" : " (disabled)");
	agile__leave();
}

int agile__dest_none;

/* Set once load() has run (in whichever thread): every hook on a socket
 * asks, and a load and a branch are cheaper than a call to pthread_once. */
int agile__dest_loaded;

void agile__destinations_load(void)
{
	if (__atomic_load_n(&agile__dest_loaded, __ATOMIC_ACQUIRE))
		return;
	pthread_once(&load_once, load);
	__atomic_store_n(&agile__dest_loaded, 1, __ATOMIC_RELEASE);
}

const struct agile_rule *const agile__dest_rule = rules.rule;
const struct agile_rules *const agile__dest_rules = &rules;

int agile__destinations_match_listen(const struct sockaddr *addr,
                                     socklen_t len)
{
	agile__destinations_load();
	if (rules_enabled == 0 || addr == NULL)
		return -1;
	return agile__rules_match_listen(&rules, addr, len);
}

bool agile__destinations_any_listen(void)
{
	agile__destinations_load();
	return listen_rules > 0;
}

/* A cache miss: match against every rule, and remember the answer. */
static __attribute__((noinline)) int match_slow(const struct sockaddr *addr,
                                                socklen_t len,
                                                uint64_t generation)
{
	int rule = agile__rules_match(&rules, addr, len);

	/* The names the program has not looked up itself, looked up once,
	 * in the background (hosts_fallback.c). */
	if (rule < 0 && host_rules > 0 && !agile__hosts_fallback_done() &&
	    (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) &&
	    agile__hosts_fallback_wait())
		rule = agile__rules_match(&rules, addr, len);
	/* Under the generation read before matching: the lookup just made,
	 * or another thread's, leaves the entry stale if it learnt an
	 * address. */
	agile__match_cache_put(&agile__match_cache, generation, addr, len, rule);
	return rule;
}

int agile__destinations_match(const struct sockaddr *addr, socklen_t len)
{
	uint64_t generation;
	int rule;

	agile__destinations_load();
	if (rules_enabled == 0 || addr == NULL)
		return -1;
	generation = agile_rules_generation(&rules);
	if (agile_match_cache_get(&agile__match_cache, generation, addr, len, &rule))
		return rule;
	return match_slow(addr, len, generation);
}

/* Which configured hostname rules `host` names. */
static int host_rule_mask(const char *host, int *rule_out, int cap)
{
	int n = 0;

	for (int i = 0; i < rules.count && n < cap; i++) {
		const struct agile_rule *r = &rules.rule[i];
		size_t len = strlen(r->host);

		if (!r->enabled || r->kind != AGILE_DEST_HOST)
			continue;
		if (strncasecmp(host, r->host, len) == 0 &&
		    (host[len] == '\0' || (host[len] == '.' &&
		                           host[len + 1] == '\0')))
			rule_out[n++] = i;
	}
	return n;
}

void agile__destinations_learn_addrinfo(const char *host,
                                        const struct addrinfo *res, int rc)
{
	int matched[AGILE_RULES_MAX];
	int n;

	agile__destinations_load();
	if (host_rules == 0 || host == NULL)
		return;
	n = host_rule_mask(host, matched, AGILE_RULES_MAX);
	if (n == 0)
		return;
	if (rc != 0) {
		/* A lookup that failed for a configured name: the program will
		 * not reach its destination this time. */
		if (rc == EAI_NONAME || rc == EAI_AGAIN || rc == EAI_FAIL
#ifdef EAI_NODATA
		    || rc == EAI_NODATA
#endif
		   ) {
			for (int i = 0; i < n; i++) {
				struct agile_state_slot *s =
					agile__destinations_slot(matched[i]);

				agile_rate_unavailable(&s->limiter);
				agile__add_u64(&s->unreachable, 1);
			}
		}
		return;
	}
	pthread_mutex_lock(&learn_lock);
	for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
		if (ai->ai_addr != NULL && (ai->ai_family == AF_INET ||
		                            ai->ai_family == AF_INET6))
			agile__rules_learn(&rules, host, ai->ai_addr,
			                  ai->ai_addrlen);
	pthread_mutex_unlock(&learn_lock);
}

void agile__destinations_learn_address(const char *host,
                                       const struct sockaddr *addr,
                                       socklen_t len)
{
	agile__destinations_load();
	if (host_rules == 0 || host == NULL)
		return;
	pthread_mutex_lock(&learn_lock);
	agile__rules_learn(&rules, host, addr, len);
	pthread_mutex_unlock(&learn_lock);
}

void agile__destinations_learn_hostent(const char *host,
                                       const struct hostent *he)
{
	agile__destinations_load();
	if (host_rules == 0 || host == NULL || he == NULL)
		return;
	pthread_mutex_lock(&learn_lock);
	for (char **a = he->h_addr_list; a != NULL && *a != NULL; a++) {
		if (he->h_addrtype == AF_INET) {
			struct sockaddr_in in = { .sin_family = AF_INET };

			memcpy(&in.sin_addr, *a, sizeof(in.sin_addr));
			agile__rules_learn(&rules, host, (void *)&in,
			                  sizeof(in));
		} else if (he->h_addrtype == AF_INET6) {
			struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };

			memcpy(&in6.sin6_addr, *a, sizeof(in6.sin6_addr));
			agile__rules_learn(&rules, host, (void *)&in6,
			                  sizeof(in6));
		}
	}
	pthread_mutex_unlock(&learn_lock);
}

/* The real user's home directory from the password database, for the
 * state file's last default place (agile__state_path asks only when another
 * user has taken the /dev/shm directory).  Not $HOME: the preload reads no
 * variable but its own, and every process of the user must agree.  Under
 * attach_lock, which guards the buffer; the re-entrancy guard is set, so
 * what NSS does goes straight to libc. */
static const char *home_of_user(void)
{
	static char buf[4096];
	struct passwd pw, *found = NULL;

	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) != 0 ||
	    found == NULL)
		return NULL;
	return pw.pw_dir;
}

const char *agile__destinations_state_path(void)
{
	return state_path;
}

/* Open the state file once; on failure say so once.  Under attach_lock. */
static void state_open_once(void)
{
	struct rlimit limit;
	char why[256], note[512];
	bool existed;
	int rc;

	if (state_tried)
		return;
	state_tried = 1;
	why[0] = '\0';
	rc = agile__state_path(agile__env("AGILE_STATE"), home_of_user, true,
	                      state_path, sizeof(state_path), note,
	                      sizeof(note));
	existed = access(state_path, F_OK) == 0;
	if (rc == 0)
		rc = agile__state_open_rw(state_path, &state_map, why,
		                         sizeof(why));
	if (rc == -EMFILE && agile__nofile_raise(&limit)) {
		/* The program has used every descriptor it allows itself;
		 * the file is closed again once mapped. */
		rc = agile__state_open_rw(state_path, &state_map, why,
		                         sizeof(why));
		agile__nofile_restore(&limit);
	}
	if (rc < 0) {
		/* The reason, when there is more to say than errno's text:
		 * whose the file or the directory is. */
		char reason[800];

		snprintf(reason, sizeof(reason), "%s%s%s%s", strerror(-rc),
		         note[0] != '\0' || why[0] != '\0' ? " (" : "",
		         note[0] != '\0' ? note : why,
		         note[0] != '\0' || why[0] != '\0' ? ")" : "");
		/* Under AGILE_STRICT=1 the line says what happens next: the
		 * program stops, it does not run on with a limiter of its
		 * own. */
		if (agile__strict()) {
			agile__log(AGILE_LOG_ERROR, "cannot use state file %s: "
			           "%s; AGILE_STRICT=1: stopping with exit "
			           "status 2", state_path, reason);
			agile__strict_exit();
		}
		agile__log(AGILE_LOG_WARN, "cannot use state file %s: %s; each "
		           "destination gets a per-process limiter (the budget "
		           "is not shared between processes)", state_path,
		           reason);
		state_map.header = NULL;
		return;
	}
	agile__log_attach(state_map.header);
	/* A default place passed over: loudly from the process that made
	 * the file in the next place (another user may be taking this
	 * user's directory), quietly from every one after it, which share
	 * the same file and budget. */
	if (note[0] != '\0')
		agile__log(existed ? AGILE_LOG_INFO : AGILE_LOG_WARN,
		           "default state file: %s", note);
	if (why[0] != '\0')
		agile__log(AGILE_LOG_WARN, "state file %s was unusable (%s); "
		           "replaced it with a fresh one", state_path, why);
	else
		agile__log(AGILE_LOG_INFO, "state file %s mapped", state_path);
}

/* A per-process slot, for when the shared one cannot be had. */
static struct agile_state_slot *private_slot(const struct agile_rule *r,
                                             int64_t now)
{
	struct agile_state_slot *s = mmap(NULL, sizeof(*s),
	                                  PROT_READ | PROT_WRITE,
	                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED) {
		/* Last resort: static storage, one per rule, never freed. */
		static struct agile_state_slot fallback[AGILE_RULES_MAX];

		s = &fallback[r - rules.rule];
	}
	if (agile__state_slot_init(s, r->name, r->dest_text, r->pace,
	                          &r->config, &r->resilience, now,
	                          agile__unix_ns()) < 0) {
		/* max is validated by the parser (the rule would be
		 * disabled); a floor-only limiter keeps the promise anyway. */
		struct agile_config c = { .max_rate = 1 };

		agile__state_slot_init(s, r->name, r->dest_text, r->pace, &c,
		                      &r->resilience, now, agile__unix_ns());
	}
	s->state = AGILE_SLOT_READY;
	return s;
}

/* Re-initialise destination `dest`'s shared limiter from its configuration
 * if another process left it damaged (state.h), and say so. */
static void repair(int dest, struct agile_state_slot *s)
{
	const struct agile_rule *r = &rules.rule[dest];
	struct agile_destination *d = &agile__destination[dest];
	char why[sizeof(((struct agile_problem *)0)->message)];
	/* By this build's sizes, not the header's, which a process can
	 * overwrite under the mapping (a slot_size of 0 would divide by 0). */
	size_t offset = (size_t)((char *)s - (char *)state_map.header) -
	                sizeof(struct agile_state_header);
	unsigned int index = (unsigned int)(offset /
	                                    sizeof(struct agile_state_slot));

	if (agile__state_slot_repair(s, &r->config, agile__now_ns(), why,
	                            sizeof(why)) <= 0)
		return;
	agile__log(__atomic_exchange_n(&d->damage_reported, 1,
	                               __ATOMIC_ACQ_REL) ? AGILE_LOG_INFO
	                                                 : AGILE_LOG_WARN,
	           "state file %s, slot %u (destination %s): its limiter was "
	           "damaged: %s It was re-initialised from the configuration.",
	           state_path, index, r->name, why);
}

/* How often a process looks for a stricter configuration of its
 * destinations' names (agile__state_stricter): a scan of the 64 slots and a
 * kill(0) per attached process, once a second, from the first grant. */
#define STRICTER_CHECK_NS AGILE_NS_PER_S
/* A grant the stricter slot plans further ahead than this is taken for
 * damage (that slot's own processes repair it at their next grant) and
 * not waited for. */
#define STRICTER_MAX_WAIT_NS (60 * AGILE_NS_PER_S)

/* Destination `dest`'s stricter sibling slot, if any, found again at most
 * once per STRICTER_CHECK_NS by whichever thread wins the stamp. */
static struct agile_state_slot *stricter_of(int dest,
                                            struct agile_state_slot *s,
                                            int64_t now_ns)
{
	struct agile_destination *d = &agile__destination[dest];
	int64_t checked = __atomic_load_n(&d->stricter_checked_ns,
	                                  __ATOMIC_ACQUIRE);

	if ((checked == 0 || now_ns - checked >= STRICTER_CHECK_NS) &&
	    __atomic_compare_exchange_n(&d->stricter_checked_ns, &checked,
	                                now_ns, false, __ATOMIC_ACQ_REL,
	                                __ATOMIC_ACQUIRE))
		__atomic_store_n(&d->stricter,
		                 agile__state_stricter(&state_map, s,
		                                      d->config.max_rate),
		                 __ATOMIC_RELEASE);
	return __atomic_load_n(&d->stricter, __ATOMIC_ACQUIRE);
}

int64_t agile__destinations_take(int dest, struct agile_state_slot *s,
                                 int64_t now_ns)
{
	const struct agile_destination *d = &agile__destination[dest];
	struct agile_state_slot *stricter;
	int64_t grant, other;

	/* A grant reads the bucket and nothing else of the limiter, so the
	 * bucket is all it checks: that keeps a damaged bucket from granting
	 * past the ceiling or planning a grant decades ahead, for about a
	 * third of the whole check's cost (scripts/bench-hotpath, its validate
	 * rows).  The controller, the stored configuration and the tick clock
	 * are checked where a step reads them (agile__destinations_tick). */
	if (d->shared &&
	    agile_bucket_check(&s->limiter.bucket, &d->bounds, now_ns,
	                       NULL) < 0) {
		repair(dest, s);
		now_ns = agile__now_ns();
	}
	grant = agile_rate_take(&s->limiter, now_ns);
	/* Where a live process of a stricter configuration of this name
	 * uses a slot of its own (max lowered during an incident), this
	 * process's grant waits for that slot's too: the stricter ceiling
	 * holds for both configurations together (state.h). */
	stricter = d->shared ? stricter_of(dest, s, now_ns) : NULL;
	if (stricter != NULL) {
		other = agile_rate_take(&stricter->limiter, now_ns);
		if (other > grant && other - now_ns <= STRICTER_MAX_WAIT_NS)
			grant = other;
	}
	return grant;
}

static struct agile_state_slot *attach(int dest)
{
	const struct agile_rule *r = &rules.rule[dest];
	struct agile_destination *d = &agile__destination[dest];
	struct agile_state_slot *s = NULL;
	int64_t now = agile__now_ns();
	int32_t other = 0;
	int rc = -ENOENT;

	state_open_once();
	if (state_map.header != NULL) {
		rc = agile__state_slot_acquire(&state_map, r->name, r->dest_text,
		                              r->pace, &r->config,
		                              &r->resilience, now,
		                              agile__unix_ns(), &s, &other);
		if (rc >= 0) {
			agile__state_slot_attach_pid(s, (int32_t)getpid());
			d->shared = 1;
			agile_resolve(&r->config, AGILE_KIND_RATE, &d->config);
			agile_bucket_bounds(&d->config, &d->bounds);
			/* A slot this process did not initialise is checked
			 * before it is trusted. */
			if (rc == AGILE_SLOT_ATTACHED)
				repair(dest, s);
			if (rc == AGILE_SLOT_RECONFIGURED)
				agile__log(AGILE_LOG_INFO, "destination %s: "
				           "configuration changed; its shared "
				           "limiter was reset", r->name);
			if (rc == AGILE_SLOT_BESIDE)
				agile__log(AGILE_LOG_WARN, "destination %s: "
				           "process %d uses it with a different "
				           "configuration (destination, pace or a "
				           "setting of its %s variable); the "
				           "processes of this one share a budget "
				           "of their own beside it, and where the "
				           "two meet the lower max holds for both",
				           r->name, (int)other, r->inbound
				           ? "AGILE_LISTEN_" : "AGILE_DEST_");
			if (rc == AGILE_SLOT_RECLAIMED)
				agile__log(AGILE_LOG_INFO, "destination %s: "
				           "every slot of the state file was "
				           "taken; it reclaimed the one no live "
				           "process had used for longest",
				           r->name);
			return s;
		}
		agile__log(AGILE_LOG_WARN, "destination %s: no slot in the "
		           "state file (%s%s); this process gets its own "
		           "limiter", r->name, strerror(-rc),
		           rc == -ENOSPC ? ": a live process uses each of its "
		           "64" : "");
		if (agile__strict())
			agile__strict_exit();
	}
	return private_slot(r, now);
}

struct agile_state_slot *agile__destinations_attach(int dest)
{
	struct agile_state_slot *s;

	agile__enter();
	pthread_mutex_lock(&attach_lock);
	s = agile__destination[dest].slot;
	if (s == NULL) {
		s = attach(dest);
		__atomic_store_n(&agile__destination[dest].slot, s, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&attach_lock);
	agile__leave();
	return s;
}

void agile__destinations_tick_slow(int dest, struct agile_state_slot *s,
                                   int64_t now_ns)
{
	const struct agile_destination *d = &agile__destination[dest];
	int64_t next_ns;

	/* fleet=adaptive: the fleet's control step replaces the local one. */
	if (agile__fleet_tick(s, now_ns))
		return;
	/* The whole limiter is checked when a step is due, before it runs on
	 * the controller, and when the next step is planned further ahead than
	 * the clock slack allows (a damaged next_tick_ns would otherwise hold
	 * every step off for ever; agile_rate_validate then tells whether it
	 * is more than a tick beyond that); between steps a call pays one load
	 * and two comparisons. */
	next_ns = agile__load_i64(&s->limiter.loop.next_tick_ns);
	if (d->shared &&
	    (now_ns >= next_ns || next_ns - now_ns > AGILE_CLOCK_SLACK_NS) &&
	    agile_rate_validate(&s->limiter, &d->config, now_ns, NULL) < 0) {
		repair(dest, s);
		now_ns = agile__now_ns();
	}
	if (agile_rate_tick_if_due(&s->limiter, now_ns))
		agile__state_slot_append_tick(s, agile__unix_ns());
}

/* Lock order: learn_lock, then attach_lock.  Taking both before fork means
 * the child never inherits one held by a thread that does not exist there. */
void agile__destinations_atfork_prepare(void)
{
	pthread_mutex_lock(&learn_lock);
	pthread_mutex_lock(&attach_lock);
}

void agile__destinations_atfork_parent(void)
{
	pthread_mutex_unlock(&attach_lock);
	pthread_mutex_unlock(&learn_lock);
}

void agile__destinations_atfork_child(void)
{
	int32_t pid = (int32_t)getpid();

	pthread_mutex_unlock(&attach_lock);
	pthread_mutex_unlock(&learn_lock);
	agile__hosts_fallback_atfork_child();
	/* The mapping is inherited; the child is a new live process of every
	 * shared destination its parent had attached. */
	for (int i = 0; i < AGILE_RULES_MAX; i++) {
		const struct agile_destination *d = &agile__destination[i];

		if (d->slot != NULL && d->shared)
			agile__state_slot_attach_pid(d->slot, pid);
	}
}
