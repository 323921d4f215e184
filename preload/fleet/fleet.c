/*
 * fleet.c - the fleet budget: leases of fleet slots from Redis shared by
 * the processes of one host, the fallback when Redis is away, and the
 * fleet-wide control step of fleet=adaptive (see fleet.h).
 *
 * Shared state is the destination's record in the fleet file
 * (fleet_state.h); everything in this file's statics is per process: the
 * parsed AGILE_REDIS, each destination's Redis connection and key names.
 *
 * The Redis turn.  Only the process holding a destination's turn talks to
 * Redis for it, so a host makes one round trip at a time whatever its
 * number of processes.  The turn is a word claimed by compare-and-swap
 * holding the holder's pid and an expiry two redis_timeouts away (a flush
 * and a publish may share one turn); a holder that dies or stalls blocks
 * the others until then at most, and before installing a lease it checks
 * it still holds the turn, so a stalled holder that wakes up late does not
 * write over its successor.  Within a process, the threads take turns on
 * the connection with io_owner, since a lease fetched asynchronously is
 * collected by whichever thread calls next.
 *
 * Time.  Redis answers with offsets from its own clock ("your slots start
 * 40 ms from now, 16.7 ms apart"); they are applied to this machine's
 * monotonic clock at the moment the reply arrived, so no two hosts ever
 * compare clocks.  The error is the reply's one-way delay, well under a
 * millisecond on one network, and it only ever makes a slot later.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "fleet.h"
#include "fleet_scripts.h"
#include "fleet_state.h"
#include "log.h"
#include "process.h"
#include "redis_client.h"
#include "symbols.h"

/* A lease is sized to last this long at the host's current rate. */
#define LEASE_SPAN_NS (100 * AGILE_NS_PER_MS)
/* How far ahead the fleet bucket may be reserved (LEASE's horizon): the
 * longest a call waits in a queue for its fleet slot before its host is
 * told to come back later. */
#define HORIZON_NS AGILE_NS_PER_S
/* Fleet slots not used this long after the last of them are void. */
#define LEASE_GRACE_NS (2 * LEASE_SPAN_NS)
/* Below this many slots per lease, leases are fetched when the last slot
 * is gone rather than ahead of time: a prefetched lease of one or two
 * slots would mostly expire before a slow caller used it. */
#define PREFETCH_MIN_SLOTS 4
/* In fallback, Redis is tried again this often. */
#define PROBE_INTERVAL_NS (500 * AGILE_NS_PER_MS)
/* A host silent this long is no longer counted live. */
#define HEARTBEAT_NS (3 * AGILE_NS_PER_S)
/* Poll interval of a caller waiting for another process's round trip. */
#define TURN_POLL_NS (100 * AGILE_NS_PER_US)
/* An asynchronous lease keeps the turn this many round trips (and at least
 * ASYNC_HOLD_MIN_NS, at most redis_timeout): long enough for a reply to
 * arrive and a busy process to call again, short enough that a process
 * that stops calling strands the others for no longer than that. */
#define ASYNC_HOLD_RTTS 4
#define ASYNC_HOLD_MIN_NS (10 * AGILE_NS_PER_MS)
/* A process fetches asynchronously only when it makes at least this many
 * calls per LEASE_SPAN itself (100 a second), so its next call is near. */
#define ASYNC_MIN_CALLS 10
/* Smoothing of the demand estimate that sizes leases. */
#define DEMAND_TAU_S 0.5
/* The published fleet controller outlives this many ticks of silence. */
#define FLEET_TTL_TICKS 300
/* A shared window's member is used at most this long after the time it
 * was scored with (its fleet slot's, or the grant's): a lease's span and
 * its grace. */
#define WINDOW_VALIDITY_NS (LEASE_SPAN_NS + LEASE_GRACE_NS)

static const char *const scripts[AGILE_SCRIPT_COUNT] = {
	AGILE_LUA_LEASE, AGILE_LUA_FLUSH, AGILE_LUA_PUBLISH
};

/* The key names of one destination: "{agile:NAME}:tat" and so on. */
enum { KEY_TAT, KEY_WINDOW, KEY_HOSTS, KEY_FLEET, KEY_HIST, KEY_STEP,
       KEY_COUNT };
static const char *const key_suffix[KEY_COUNT] = {
	"tat", "win", "hosts", "fleet", "hist", "step"
};

/* A controller state published to Redis: this header, then the struct. */
struct ctl_blob {
	char magic[4];      /* "AGC1" */
	uint32_t size;      /* sizeof(struct agile_controller) */
	uint64_t tag;       /* which build and configuration wrote it */
	struct agile_controller ctl;
};

/* One destination, in this process. */
struct fleet_dest {
	int ready;                        /* 0 not set up, 1 fleet, -1 none */
	const struct agile_rule *rule;
	struct agile_state_slot *slot;
	struct agile_fleet_record *rec;
	struct agile_resolved fleet_config; /* adaptive: the fleet's bounds */
	uint64_t ctl_tag;
	struct agile_redis conn;
	int32_t io_owner;                 /* pid lock: one thread on conn */
	int64_t rtt_ns;                   /* the last round trip's time */
	/* This process's asynchronous LEASE, if any (fetch_async). */
	int32_t pending_pid;              /* the process that sent it; 0 none */
	uint64_t pending_turn;            /* the turn it holds meanwhile */
	int64_t pending_send_ns;
	int64_t pending_deadline;
	uint64_t pending_number;          /* the lease number it will be */
	/* This process's own calls per 100 ms, to tell whether it calls often
	 * enough to collect an asynchronous lease in time. */
	int64_t proc_window_ns;
	uint64_t proc_count, proc_last;
	char key[KEY_COUNT][AGILE_RULE_NAME_MAX + 16];
};

static const struct agile_rules *rules;
int agile__fleet_active;            /* any enabled rule has fleet settings */
static int redis_configured;        /* AGILE_REDIS parsed */
static struct agile_redis_addr redis_addr;
static char redis_text[64];         /* where, for messages and agilestat */
static struct fleet_dest dests[AGILE_RULES_MAX];
static struct agile_fleet_map fleet_map;
static int fleet_map_tried;
static char host_id[AGILE_FLEET_HOST_ID_MAX] = "";

/* Scratch for the adaptive tick (two histograms, too big for a hook's
 * stack), mapped once. */
struct scratch {
	struct agile_hist_snapshot local;
	struct agile_hist_snapshot merged;
	char text[AGILE_HIST_BUCKETS * 24];
};
static struct scratch *scratch;

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

/*
 * A process-local lock that a fork child never inherits held: the word is
 * the owner's pid, and a child finding its parent's pid there (the owner
 * thread does not exist in the child) takes it over.  setup_owner is held
 * for microseconds; scratch_owner and a destination's io_owner for one
 * round trip at most, which redis_timeout bounds.
 */
static int32_t setup_owner, scratch_owner;

static bool pid_lock_try(int32_t *word)
{
	int32_t self = (int32_t)getpid();
	int32_t cur = 0;

	if (__atomic_compare_exchange_n(word, &cur, self, false,
	                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return true;
	return cur != self &&
	       __atomic_compare_exchange_n(word, &cur, self, false,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void pid_lock(int32_t *word)
{
	struct timespec ts = { 0, 20000 };

	while (!pid_lock_try(word))
		nanosleep(&ts, NULL);
}

static void pid_unlock(int32_t *word)
{
	__atomic_store_n(word, 0, __ATOMIC_RELEASE);
}

static void nap(int64_t ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* "12.500000" whatever LC_NUMERIC the host program chose: snprintf's %f
 * would write "12,500000" under a German locale, which Lua cannot read. */
static void format_decimal(char *buf, size_t len, double v)
{
	long long micro = llround((v < 0 ? -v : v) * 1e6);

	snprintf(buf, len, "%s%lld.%06lld", v < 0 ? "-" : "", micro / 1000000,
	         micro % 1000000);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * UINT64_C(1099511628211);
	return h;
}

static int64_t timeout_of(const struct fleet_dest *f)
{
	return agile_fleet_timeout_ns(&f->rule->fleet);
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

void agile__fleet_load(const struct agile_rules *parsed,
                       void (*report)(const char *message, void *arg),
                       void *arg)
{
	const char *url = agile__env("AGILE_REDIS");
	char why[256], line[400];
	int any = 0;

	rules = parsed;
	for (int i = 0; i < parsed->count; i++)
		if (parsed->rule[i].enabled &&
		    agile_fleet_rule_any(&parsed->rule[i].fleet))
			any++;
	if (any == 0)
		return;
	if (url == NULL || *url == '\0') {
		snprintf(line, sizeof(line), "AGILE_REDIS is not set: %d "
		         "destination%s with fleet settings enforce%s fleet_max "
		         "(and any shared window) on this host alone; expected "
		         "AGILE_REDIS=redis://HOST:PORT/DB", any,
		         any == 1 ? "" : "s", any == 1 ? "s" : "");
		report(line, arg);
	} else if (agile_redis_url_parse(url, &redis_addr, why,
	                                 sizeof(why)) < 0) {
		snprintf(line, sizeof(line), "AGILE_REDIS: %.256s; destinations "
		         "with fleet settings enforce them on this host alone",
		         why);
		report(line, arg);
	} else {
		redis_configured = 1;
		agile_redis_addr_format(&redis_addr, redis_text,
		                        sizeof(redis_text));
	}
	__atomic_store_n(&agile__fleet_active, 1, __ATOMIC_RELEASE);
}

/* The fleet file, mapped once per process; NULL when it cannot be. */
static void fleet_map_once(void)
{
	char path[4200], why[256];
	int rc = -ENOENT;

	if (fleet_map_tried)
		return;
	fleet_map_tried = 1;
	/* Beside the state file, which the destination's attach has found
	 * (and said where, and why) before its fleet is set up. */
	agile_fleet_path(agile__destinations_state_path(), path, sizeof(path));
	if (agile__destinations_state_path()[0] != '\0')
		rc = agile_fleet_open_rw(path, &fleet_map, why, sizeof(why));
	if (rc < 0) {
		agile__log(AGILE_LOG_WARN, "cannot use fleet file %s: %s; this "
		           "process keeps its fleet lease to itself", path,
		           strerror(-rc));
		fleet_map.header = NULL;
		snprintf(host_id, sizeof(host_id), "pid%d-%lld", (int)getpid(),
		         (long long)agile__unix_ns());
		return;
	}
	if (why[0] != '\0')
		agile__log(AGILE_LOG_WARN, "fleet file %s was unusable (%s); "
		           "replaced it", path, why);
	snprintf(host_id, sizeof(host_id), "%s", fleet_map.header->host_id);
}

/* A record for this process alone, when the fleet file cannot be had. */
static struct agile_fleet_record *private_record(const char *name)
{
	struct agile_fleet_record *r = mmap(NULL, sizeof(*r),
	                                    PROT_READ | PROT_WRITE,
	                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->state = AGILE_FLEET_IN_USE;
	return r;
}

static void setup(struct fleet_dest *f, int dest)
{
	const struct agile_rule *rule = &rules->rule[dest];
	const struct agile_fleet_rule *fr = &rule->fleet;
	struct agile_fleet_record *rec = NULL;
	struct agile_config config;
	uint64_t hash;

	if (!rule->enabled || !agile_fleet_rule_any(fr)) {
		f->ready = -1;
		return;
	}
	f->rule = rule;
	f->slot = agile__destinations_slot(dest);
	fleet_map_once();
	hash = fnv(UINT64_C(14695981039346656037), fr, sizeof(*fr));
	hash = fnv(hash, redis_text, strlen(redis_text));
	if (fleet_map.header == NULL ||
	    agile_fleet_record_acquire(&fleet_map, rule->name, hash, &rec) < 0)
		rec = private_record(rule->name);
	if (rec == NULL) {
		f->ready = -1;
		return;
	}
	f->rec = rec;
	/* The settings, for agilestat (the same in every process). */
	agile__store_i64(&rec->fleet_max, fr->max_rate);
	agile__store_u32(&rec->mode, fr->mode);
	__atomic_store_n(&rec->window, fr->window, __ATOMIC_RELEASE);
	agile__store_i64(&rec->window_span_ns, fr->window_span_ns);
	agile__store_i64(&rec->timeout_ns, agile_fleet_timeout_ns(fr));
	if (rec->redis[0] == '\0')
		snprintf(rec->redis, sizeof(rec->redis), "%s",
		         redis_configured ? redis_text : "(AGILE_REDIS unset)");
	if (!redis_configured &&
	    agile__load_u32(&rec->source) == AGILE_FLEET_FROM_REDIS) {
		uint32_t from = AGILE_FLEET_FROM_REDIS;

		if (rec->hosts == 0)
			agile__store_u32(&rec->hosts, 1);
		__atomic_compare_exchange_n(&rec->source, &from,
		                            AGILE_FLEET_NO_REDIS, false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	/* fleet=adaptive: the fleet controller runs with the rule's
	 * settings, fleet_max as its ceiling. */
	config = rule->config;
	if (fr->max_rate > 0)
		config.max_rate = fr->max_rate;
	if (agile_resolve(&config, AGILE_KIND_RATE, &f->fleet_config) < 0) {
		struct agile_config ceiling = { .max_rate = fr->max_rate > 0 ?
		                                            fr->max_rate : 1 };

		agile_resolve(&ceiling, AGILE_KIND_RATE, &f->fleet_config);
	}
	/* The settings and the name of what is published; the blob's size
	 * is checked on its own. */
	f->ctl_tag = fnv(fnv(UINT64_C(14695981039346656037), &f->fleet_config,
	                     sizeof(f->fleet_config)),
	                 "agile_controller", sizeof("agile_controller") - 1);
	agile_redis_init(&f->conn, &redis_addr, scripts, AGILE_SCRIPT_COUNT);
	for (int k = 0; k < KEY_COUNT; k++)
		snprintf(f->key[k], sizeof(f->key[k]), "{agile:%s}:%s",
		         rule->name, key_suffix[k]);
	__atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
}

static struct fleet_dest *fleet_dest(int dest)
{
	struct fleet_dest *f;
	int ready;

	if (dest < 0 || dest >= AGILE_RULES_MAX || rules == NULL)
		return NULL;
	f = &dests[dest];
	ready = __atomic_load_n(&f->ready, __ATOMIC_ACQUIRE);
	if (ready == 0) {
		pid_lock(&setup_owner);
		if (f->ready == 0)
			setup(f, dest);
		pid_unlock(&setup_owner);
		ready = f->ready;
	}
	return ready > 0 ? f : NULL;
}

/* ------------------------------------------------------------------------ */
/* The Redis turn                                                            */
/* ------------------------------------------------------------------------ */

static uint64_t turn_word(int64_t until_ns)
{
	return ((uint64_t)(until_ns / AGILE_NS_PER_MS + 1)
	        << AGILE_FLEET_TURN_PID_BITS) |
	       ((uint64_t)getpid() & ((1u << AGILE_FLEET_TURN_PID_BITS) - 1));
}

/* Claim the turn for one round trip from now; the word claimed, or 0. */
static uint64_t turn_claim(struct fleet_dest *f, int64_t now)
{
	uint64_t cur = agile__load_u64(&f->rec->turn);
	uint64_t mine;

	if (cur != 0 &&
	    (int64_t)(cur >> AGILE_FLEET_TURN_PID_BITS) * AGILE_NS_PER_MS > now)
		return 0;
	/* Two timeouts: a publish may follow a flush in one turn. */
	mine = turn_word(now + 2 * timeout_of(f) + 10 * AGILE_NS_PER_MS);
	return agile__cas_u64(&f->rec->turn, &cur, mine) ? mine : 0;
}

static bool turn_held(struct fleet_dest *f, uint64_t mine)
{
	return agile__load_u64(&f->rec->turn) == mine;
}

static void turn_release(struct fleet_dest *f, uint64_t mine)
{
	agile__cas_u64(&f->rec->turn, &mine, 0);
}

/* ------------------------------------------------------------------------ */
/* Leases                                                                    */
/* ------------------------------------------------------------------------ */

#define CURSOR(number, used) (((uint64_t)(number) << 32) | (uint64_t)(used))

/* Note unused window members of a lease left behind, for the next round
 * trip to hand back (one pending hand-back at a time; a second one is
 * simply left to expire in Redis). */
static void note_handback(struct agile_fleet_record *rec, uint64_t number,
                          uint64_t used, uint64_t count)
{
	uint64_t zero = 0;
	uint64_t word;

	if (used >= count || count > 0xffff || number >= 0xffffffffu)
		return;
	word = ((number + 1) << 32) | (used << 16) | count;
	agile__cas_u64(&rec->handback, &zero, word);
}

/*
 * Take the next slot of the lease under the cursor: its time (>= now), or
 * -1 when no installed lease has one left.  Exhausted and expired leases
 * are stepped over.
 */
static int64_t lease_take(struct agile_fleet_record *rec, int64_t now)
{
	for (;;) {
		uint64_t cur = agile__load_u64(&rec->cursor);
		uint64_t number = cur >> 32, used = cur & 0xffffffffu;
		struct agile_fleet_lease *l =
			&rec->lease[number % AGILE_FLEET_LEASES];
		uint64_t seen = agile__load_u64(&l->number);
		int64_t start = agile__load_i64(&l->start_ns);
		int64_t interval = agile__load_i64(&l->interval_ns);
		uint64_t count = agile__load_u64(&l->count);
		int64_t expires = agile__load_i64(&l->expires_ns);
		uint64_t window_id = agile__load_u64(&l->window_id);
		int64_t slot;

		if (seen != number + 1 || agile__load_u64(&l->number) != seen) {
			/* Not installed yet, or rewritten under a stale
			 * cursor: look again only if the cursor moved. */
			if (agile__load_u64(&rec->cursor) != cur)
				continue;
			return -1;
		}
		if (used >= count || now >= expires) {
			struct agile_fleet_lease *next =
				&rec->lease[(number + 1) % AGILE_FLEET_LEASES];

			if (agile__load_u64(&next->number) != number + 2)
				return -1;
			if (agile__cas_u64(&rec->cursor, &cur,
			                   CURSOR(number + 1, 0)) &&
			    window_id != 0)
				note_handback(rec, number, used, count);
			continue;
		}
		if (!agile__cas_u64(&rec->cursor, &cur, cur + 1))
			continue;
		slot = start + (int64_t)used * interval;
		return slot > now ? slot : now;
	}
}

/* Slots left in the installed leases from the cursor on, and how many
 * leases are installed ahead of the cursor's. */
static uint64_t lease_remaining(struct agile_fleet_record *rec, int64_t now,
                                uint64_t *ahead)
{
	uint64_t cur = agile__load_u64(&rec->cursor);
	uint64_t number = cur >> 32, used = cur & 0xffffffffu;
	uint64_t installed = agile__load_u64(&rec->leases);
	uint64_t left = 0;

	*ahead = installed > number + 1 ? installed - number - 1 : 0;
	for (uint64_t n = number; n < installed; n++) {
		struct agile_fleet_lease *l = &rec->lease[n % AGILE_FLEET_LEASES];
		uint64_t count = agile__load_u64(&l->count);

		if (agile__load_u64(&l->number) != n + 1 ||
		    now >= agile__load_i64(&l->expires_ns))
			continue;
		left += n == number ? (count > used ? count - used : 0) : count;
	}
	return left;
}

static void lease_install(struct agile_fleet_record *rec, int64_t start,
                          int64_t interval, uint64_t count, int64_t expires,
                          uint64_t window_id)
{
	uint64_t number = agile__load_u64(&rec->leases);
	uint64_t at = agile__load_u64(&rec->cursor) >> 32;
	struct agile_fleet_lease *l = &rec->lease[number % AGILE_FLEET_LEASES];

	if (number >= at + AGILE_FLEET_LEASES) {
		/* The ring is full of leases nobody took from, which only a
		 * cursor stuck on a live lease can cause: move it on. */
		agile__store_u64(&rec->cursor, CURSOR(number -
		                                      AGILE_FLEET_LEASES + 1, 0));
	}
	agile__store_u64(&l->number, 0);
	agile__store_i64(&l->start_ns, start);
	agile__store_i64(&l->interval_ns, interval);
	agile__store_u64(&l->count, count);
	agile__store_i64(&l->expires_ns, expires);
	agile__store_u64(&l->window_id, window_id);
	agile__store_u64(&l->number, number + 1);
	agile__store_u64(&rec->leases, number + 1);
}

/* ------------------------------------------------------------------------ */
/* Fallback                                                                  */
/* ------------------------------------------------------------------------ */

/* This host's local budget while Redis is away: fleet_max (fleet=adaptive:
 * the last fleet rate, which may be below it) and the window's average
 * rate, divided among the live hosts last seen. */
static double fallback_rate(const struct fleet_dest *f)
{
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	uint32_t hosts = agile__load_u32(&f->rec->hosts);
	double rate = 0;

	if (fr->max_rate > 0) {
		double fleet = agile__load_double(&f->rec->fleet_rate);

		rate = (double)fr->max_rate;
		if (fr->mode == AGILE_FLEET_ADAPTIVE && fleet > 0 && fleet < rate)
			rate = fleet;
	}
	if (fr->window > 0) {
		double w = (double)fr->window * AGILE_NS_PER_S /
		           (double)fr->window_span_ns;

		rate = rate > 0 && rate < w ? rate : w;
	}
	return rate / (hosts > 0 ? hosts : 1);
}

static void fallback_arm(struct fleet_dest *f)
{
	double rate = fallback_rate(f);

	agile__store_double(&f->rec->fallback_rate, rate);
	agile_bucket_init(&f->rec->fallback_bucket, rate, rate);
}

static int64_t fallback_take(struct fleet_dest *f, int64_t now)
{
	struct agile_fleet_record *rec = f->rec;

	if (agile__load_double(&rec->fallback_rate) <= 0)
		fallback_arm(f);
	agile__add_u64(&rec->fallback_admits, 1);
	return agile_bucket_take(&rec->fallback_bucket, now);
}

/* A round trip failed: go to the fallback budget at once (one log line
 * per host per outage), or stay there until the next probe. */
static void redis_failed(struct fleet_dest *f, int64_t now)
{
	struct agile_fleet_record *rec = f->rec;
	uint32_t from = AGILE_FLEET_FROM_REDIS;
	char where[300];
	uint32_t hosts;

	agile__add_u64(&rec->redis_errors, 1);
	snprintf(rec->last_error, sizeof(rec->last_error), "%.120s",
	         f->conn.error);
	agile__store_i64(&rec->next_probe_ns, now + PROBE_INTERVAL_NS);
	if (agile__load_u32(&rec->source) != AGILE_FLEET_FROM_REDIS)
		return;
	fallback_arm(f);
	if (!__atomic_compare_exchange_n(&rec->source, &from,
	                                 AGILE_FLEET_FALLBACK, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	agile__add_u64(&rec->fallbacks, 1);
	agile__store_i64(&rec->since_unix_ns, agile__unix_ns());
	hosts = agile__load_u32(&rec->hosts);
	agile_redis_addr_format(&f->conn.addr, where, sizeof(where));
	agile__log(AGILE_LOG_WARN, "destination %s: Redis %s: %s; this host "
	           "falls back to %.1f/s (its share of %u host%s) until Redis "
	           "answers", f->rule->name, where, f->conn.error,
	           agile__load_double(&rec->fallback_rate),
	           hosts > 0 ? hosts : 1, hosts > 1 ? "s" : "");
}

static void redis_answered(struct fleet_dest *f)
{
	uint32_t from = AGILE_FLEET_FALLBACK;

	if (!__atomic_compare_exchange_n(&f->rec->source, &from,
	                                 AGILE_FLEET_FROM_REDIS, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	agile__store_i64(&f->rec->since_unix_ns, agile__unix_ns());
	agile__store_double(&f->rec->fallback_rate, 0);
	agile__log(AGILE_LOG_WARN, "destination %s: Redis %s answers again; "
	           "back on the fleet budget", f->rule->name, redis_text);
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                               */
/* ------------------------------------------------------------------------ */

/* Run a script within the deadline and count the round trips. */
static int eval(struct fleet_dest *f, int script, int nkeys, const char **keys,
                int nargs, const char **args, const size_t *lens,
                const struct agile_resp **reply, int64_t deadline)
{
	uint64_t before = f->conn.round_trips, connects = f->conn.connects;
	int64_t start = agile__now_ns();
	int rc;

	pid_lock(&f->io_owner);
	if (__atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE) != 0) {
		/* An asynchronous LEASE never collected: its turn expired, or
		 * this holder would not be here.  Its reply would be read as
		 * this call's, so the connection goes with it. */
		agile_redis_drop(&f->conn);
		__atomic_store_n(&f->pending_pid, 0, __ATOMIC_RELEASE);
	}
	agile__enter();
	rc = agile_redis_eval(&f->conn, script, nkeys, keys, nargs, args, lens,
	                      reply, deadline);
	agile__leave();
	pid_unlock(&f->io_owner);
	agile__add_u64(&f->rec->round_trips, f->conn.round_trips - before);
	agile__max_u64((uint64_t *)&f->rec->max_wait_ns,
	               (uint64_t)(agile__now_ns() - start));
	if (rc == 0 && f->conn.connects == connects)
		f->rtt_ns = agile__now_ns() - start;
	if (f->conn.connects != connects && agile__log_enabled(AGILE_LOG_INFO)) {
		char where[300];

		agile_redis_addr_format(&f->conn.addr, where, sizeof(where));
		agile__log(AGILE_LOG_INFO, "destination %s: connected to Redis "
		           "%s (descriptor %d)", f->rule->name, where,
		           f->conn.fd);
	}
	return rc;
}

/* How many slots to ask for: about LEASE_SPAN of this host's demand (its
 * admissions per second, smoothed over DEMAND_TAU_S), or as many as calls
 * found none since the last lease if more, within LEASE_SPAN of the whole
 * fleet's rate. */
static uint64_t lease_want(struct fleet_dest *f, int64_t now)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	uint64_t admits = agile__load_u64(&rec->admits);
	int64_t last = agile__load_i64(&rec->fetch_ns);
	double demand = agile__load_double(&rec->demand_per_s);
	double want, starved, cap = 1e9;

	if (last > 0 && now > last) {
		double elapsed = (double)(now - last) / AGILE_NS_PER_S;
		double sample = (double)(admits - agile__load_u64(
		                         &rec->admits_at_fetch)) / elapsed;

		/* exp(-t/tau) as exp2: the preload binds only the libm
		 * functions the core uses (lazymath.c). */
		demand += (1 - exp2(-elapsed / (DEMAND_TAU_S * M_LN2))) *
		          (sample - demand);
	}
	/* The first lease is sized by the calls waiting for it alone: a
	 * guess from the local rate would hoard the fleet's slots for a host
	 * that may want a few. */
	agile__store_double(&rec->demand_per_s, demand);
	want = ceil(demand * LEASE_SPAN_NS / AGILE_NS_PER_S);
	starved = (double)__atomic_exchange_n(&rec->starved, 0,
	                                      __ATOMIC_ACQ_REL);
	if (want < starved)
		want = starved;
	if (fr->max_rate > 0) {
		double fleet = agile__load_double(&rec->fleet_rate);

		if (fleet <= 0)
			fleet = (double)fr->max_rate;
		cap = ceil(fleet * LEASE_SPAN_NS / AGILE_NS_PER_S);
	}
	if (fr->window > 0 && cap > fr->window)
		cap = fr->window;
	if (fr->window > 0 && cap > 0xffff)
		cap = 0xffff;
	if (want > cap)
		want = cap;
	return want < 1 ? 1 : (uint64_t)want;
}

/* One LEASE call's arguments, and what applying its reply needs. */
struct lease_call {
	char want[24], max[24], rate[32], horizon[24], quota[16], span[24];
	char validity[24], hb[24], back[64], from[16], to[16], id[64];
	const char *keys[4];
	const char *args[14];
	int64_t send_ns;    /* local time the request went out */
	uint64_t number;    /* the lease number it will be installed as */
};

static void lease_prepare(struct fleet_dest *f, struct lease_call *lc,
                          int64_t now)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	uint64_t handback = __atomic_exchange_n(&rec->handback, 0,
	                                        __ATOMIC_ACQ_REL);
	double fleet_rate = agile__load_double(&rec->fleet_rate);

	lc->send_ns = now;
	lc->number = agile__load_u64(&rec->leases);
	snprintf(lc->want, sizeof(lc->want), "%llu",
	         (unsigned long long)lease_want(f, now));
	snprintf(lc->max, sizeof(lc->max), "%lld", (long long)fr->max_rate);
	format_decimal(lc->rate, sizeof(lc->rate), fleet_rate > 0 ? fleet_rate
	               : f->fleet_config.initial_rate);
	snprintf(lc->horizon, sizeof(lc->horizon), "%lld",
	         (long long)(HORIZON_NS / AGILE_NS_PER_US));
	snprintf(lc->quota, sizeof(lc->quota), "%d", (int)fr->window);
	snprintf(lc->span, sizeof(lc->span), "%lld",
	         (long long)(fr->window_span_ns / AGILE_NS_PER_US));
	snprintf(lc->validity, sizeof(lc->validity), "%lld",
	         (long long)(WINDOW_VALIDITY_NS / AGILE_NS_PER_US));
	snprintf(lc->hb, sizeof(lc->hb), "%lld",
	         (long long)(HEARTBEAT_NS / AGILE_NS_PER_US));
	lc->back[0] = '\0';
	if (handback != 0)
		snprintf(lc->back, sizeof(lc->back), "%s:%llu", host_id,
		         (unsigned long long)((handback >> 32) - 1));
	snprintf(lc->from, sizeof(lc->from), "%u",
	         (unsigned)((handback >> 16) & 0xffff));
	snprintf(lc->to, sizeof(lc->to), "%u", (unsigned)(handback & 0xffff));
	snprintf(lc->id, sizeof(lc->id), "%s:%llu", host_id,
	         (unsigned long long)lc->number);
	lc->keys[0] = f->key[KEY_TAT];
	lc->keys[1] = f->key[KEY_WINDOW];
	lc->keys[2] = f->key[KEY_HOSTS];
	lc->keys[3] = f->key[KEY_FLEET];
	lc->args[0] = host_id;
	lc->args[1] = lc->want;
	lc->args[2] = lc->max;
	lc->args[3] = lc->rate;
	lc->args[4] = fr->mode == AGILE_FLEET_ADAPTIVE ? "1" : "0";
	lc->args[5] = lc->horizon;
	lc->args[6] = lc->quota;
	lc->args[7] = lc->span;
	lc->args[8] = lc->validity;
	lc->args[9] = lc->hb;
	lc->args[10] = lc->back;
	lc->args[11] = lc->from;
	lc->args[12] = lc->to;
	lc->args[13] = lc->id;
}

/*
 * Apply LEASE's reply `r`, received at recv_ns, of a call sent at send_ns
 * as lease `number` (the caller holds the turn `mine`): install the slots,
 * or note when the fleet has room again.  0, or -EPROTO for a reply that is
 * not LEASE's (the caller then falls back).
 */
static int lease_apply(struct fleet_dest *f, uint64_t mine, int64_t send_ns,
                       uint64_t number, const struct agile_resp *r,
                       int64_t recv_ns)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	double start = 0, interval = 0, rate = 0;
	int64_t n = 0, hosts = 0, retry_us = 0;

	if (r->type != AGILE_RESP_ARRAY || r->count != 6 ||
	    agile_resp_int64(&r->element[0], &n) < 0 ||
	    agile_resp_double(&r->element[1], &start) < 0 ||
	    agile_resp_double(&r->element[2], &interval) < 0 ||
	    agile_resp_int64(&r->element[3], &retry_us) < 0 ||
	    agile_resp_int64(&r->element[4], &hosts) < 0 ||
	    agile_resp_double(&r->element[5], &rate) < 0) {
		snprintf(f->conn.error, sizeof(f->conn.error),
		         "LEASE answered something else than its six values");
		return -EPROTO;
	}
	if (hosts > 0)
		agile__store_u32(&rec->hosts, (uint32_t)hosts);
	if (rate > 0)
		agile__store_double(&rec->fleet_rate, rate);
	agile__store_u64(&rec->admits_at_fetch, agile__load_u64(&rec->admits));
	agile__store_i64(&rec->fetch_ns, recv_ns);
	if (n > 0 && turn_held(f, mine)) {
		int64_t first = recv_ns + (int64_t)llround(start * AGILE_NS_PER_US);
		int64_t spacing = (int64_t)llround(interval * AGILE_NS_PER_US);
		int64_t expires = first + n * spacing + LEASE_GRACE_NS;

		if (fr->window > 0 && send_ns + WINDOW_VALIDITY_NS < expires)
			expires = send_ns + WINDOW_VALIDITY_NS;
		lease_install(rec, first, spacing, (uint64_t)n, expires,
		              fr->window > 0 ? number + 1 : 0);
		agile__add_u64(&rec->slots_leased, (uint64_t)n);
	} else if (n == 0) {
		agile__add_u64(&rec->leases_short, 1);
		agile__store_i64(&rec->retry_at_ns, recv_ns +
		                 (retry_us > 0 ? retry_us : 1000) *
		                 AGILE_NS_PER_US);
	}
	redis_answered(f);
	return 0;
}

/*
 * Fetch one lease (the caller holds the turn `mine`), by `deadline`.
 * Returns 0 when Redis answered (with slots or with "full until"), or a
 * negative errno after switching to the fallback.
 */
static int fetch(struct fleet_dest *f, uint64_t mine, int64_t deadline)
{
	struct lease_call lc;
	const struct agile_resp *r;
	int rc;

	lease_prepare(f, &lc, agile__now_ns());
	rc = eval(f, AGILE_SCRIPT_LEASE, 4, lc.keys, 14, lc.args, NULL, &r,
	          deadline);
	if (rc == 0)
		rc = lease_apply(f, mine, lc.send_ns, lc.number, r,
		                 agile__now_ns());
	if (rc < 0)
		redis_failed(f, agile__now_ns());
	return rc;
}

/*
 * The same without holding up the call that starts it: send the LEASE now
 * and collect its reply in a later call of this process (collect_lease),
 * keeping the turn meanwhile.  Only a process that makes calls often does
 * this (maybe_prefetch), so its next call comes long before the slots
 * left run out; if it does not, the turn expires and another process
 * fetches as usual.
 */
static void fetch_async(struct fleet_dest *f, uint64_t mine, int64_t deadline)
{
	struct lease_call lc;
	uint64_t before;
	int rc;

	if (!pid_lock_try(&f->io_owner)) {
		turn_release(f, mine);
		return;
	}
	lease_prepare(f, &lc, agile__now_ns());
	before = f->conn.round_trips;
	agile__enter();
	rc = agile_redis_eval_send(&f->conn, AGILE_SCRIPT_LEASE, 4, lc.keys, 14,
	                           lc.args, NULL, deadline);
	agile__leave();
	agile__add_u64(&f->rec->round_trips, f->conn.round_trips - before);
	if (rc < 0) {
		pid_unlock(&f->io_owner);
		redis_failed(f, agile__now_ns());
		turn_release(f, mine);
		return;
	}
	/* Hold the turn only as long as the reply should take. */
	{
		int64_t hold = ASYNC_HOLD_RTTS * f->rtt_ns;
		uint64_t shorter;

		if (hold < ASYNC_HOLD_MIN_NS)
			hold = ASYNC_HOLD_MIN_NS;
		if (hold > timeout_of(f))
			hold = timeout_of(f);
		shorter = turn_word(agile__now_ns() + hold);
		if (agile__cas_u64(&f->rec->turn, &mine, shorter))
			mine = shorter;
	}
	f->pending_turn = mine;
	f->pending_send_ns = lc.send_ns;
	f->pending_deadline = deadline;
	f->pending_number = lc.number;
	__atomic_store_n(&f->pending_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
	pid_unlock(&f->io_owner);
}

/* Collect this process's asynchronous LEASE, if it has one: waiting for
 * it until its deadline when `wait`, else only if it has arrived. */
static void collect_lease(struct fleet_dest *f, bool wait)
{
	int32_t pid = __atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE);
	const struct agile_resp *r;
	int64_t start;
	int rc;

	if (pid == 0)
		return;
	if (pid != (int32_t)getpid()) {
		/* A fork child: the request and the turn are the parent's. */
		f->pending_pid = 0;
		return;
	}
	if (!pid_lock_try(&f->io_owner))
		return;
	if (f->pending_pid == 0) {
		pid_unlock(&f->io_owner);
		return;
	}
	start = agile__now_ns();
	agile__enter();
	rc = agile_redis_eval_collect(&f->conn, &r, f->pending_deadline, wait);
	agile__leave();
	if (rc == -EAGAIN) {
		pid_unlock(&f->io_owner);
		return;
	}
	if (wait)
		agile__max_u64((uint64_t *)&f->rec->max_wait_ns,
		               (uint64_t)(agile__now_ns() - start));
	if (rc == 0)
		rc = lease_apply(f, f->pending_turn, f->pending_send_ns,
		                 f->pending_number, r, agile__now_ns());
	/* NOSCRIPT or MOVED (-ESTALE) cost this lease only: the next fetch,
	 * synchronous, reloads or follows. */
	if (rc < 0 && rc != -ESTALE)
		redis_failed(f, agile__now_ns());
	turn_release(f, f->pending_turn);
	__atomic_store_n(&f->pending_pid, 0, __ATOMIC_RELEASE);
	pid_unlock(&f->io_owner);
}

/* ------------------------------------------------------------------------ */
/* Admission                                                                 */
/* ------------------------------------------------------------------------ */

/* Update the per-second rates agilestat shows, once a second. */
static void meter(struct agile_fleet_record *rec, int64_t now)
{
	int64_t mark = agile__load_i64(&rec->meter_ns);
	uint64_t admits, trips;
	double elapsed;

	if (mark != 0 && now - mark < AGILE_NS_PER_S)
		return;
	if (!agile__cas_i64(&rec->meter_ns, &mark, now))
		return;
	admits = agile__load_u64(&rec->admits);
	trips = agile__load_u64(&rec->round_trips);
	if (mark != 0) {
		elapsed = (double)(now - mark) / AGILE_NS_PER_S;
		agile__store_double(&rec->admits_per_s, (double)(admits -
		                    agile__load_u64(&rec->meter_admits)) / elapsed);
		agile__store_double(&rec->round_trips_per_s, (double)(trips -
		                    agile__load_u64(&rec->meter_round_trips)) /
		                    elapsed);
	}
	agile__store_u64(&rec->meter_admits, admits);
	agile__store_u64(&rec->meter_round_trips, trips);
}

/* Count one call of this process, for proc_rate. */
static void proc_count(struct fleet_dest *f, int64_t now)
{
	int64_t start = __atomic_load_n(&f->proc_window_ns, __ATOMIC_RELAXED);

	if (now - start >= LEASE_SPAN_NS &&
	    __atomic_compare_exchange_n(&f->proc_window_ns, &start, now, false,
	                                __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_store_n(&f->proc_last,
		                 __atomic_exchange_n(&f->proc_count, 0,
		                                     __ATOMIC_RELAXED),
		                 __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&f->proc_count, 1, __ATOMIC_RELAXED);
}

/*
 * After taking a slot: fetch the next lease now if this one is running
 * out, so the calls after this one find slots without a round trip.  A
 * process that makes at least half of the host's calls, and 100 a second,
 * fetches it asynchronously (its next calls collect it, and no call waits
 * for the round trip); another fetches it in this call, which then waits
 * one round trip, so a short-lived process never leaves a request behind.
 */
static void maybe_prefetch(struct fleet_dest *f, int64_t now,
                           int64_t redis_deadline)
{
	struct agile_fleet_record *rec = f->rec;
	double demand = agile__load_double(&rec->demand_per_s);
	double per_lease = demand * LEASE_SPAN_NS / AGILE_NS_PER_S;
	uint64_t ahead, mine;

	if (per_lease < PREFETCH_MIN_SLOTS || now >= redis_deadline ||
	    now < agile__load_i64(&rec->retry_at_ns))
		return;
	if (lease_remaining(rec, now, &ahead) > (uint64_t)(per_lease / 2) ||
	    ahead > 0)
		return;
	mine = turn_claim(f, now);
	if (mine == 0)
		return;
	if ((double)__atomic_load_n(&f->proc_last, __ATOMIC_RELAXED) >=
	    per_lease / 2 &&
	    __atomic_load_n(&f->proc_last, __ATOMIC_RELAXED) >= ASYNC_MIN_CALLS)
		fetch_async(f, mine, now + timeout_of(f));
	else {
		fetch(f, mine, redis_deadline);
		turn_release(f, mine);
	}
}

int64_t agile__fleet_admit_slow(int dest, int64_t now,
                                void (*wait)(int64_t until_ns))
{
	struct fleet_dest *f;
	struct agile_fleet_record *rec;
	int64_t redis_deadline, planned;
	bool counted_starved = false;

	if ((f = fleet_dest(dest)) == NULL)
		return now;
	rec = f->rec;
	/* All the waiting on Redis one call may do, whatever happens. */
	redis_deadline = now + timeout_of(f);
	meter(rec, now);
	proc_count(f, now);
	collect_lease(f, false);
	for (;;) {
		uint32_t source = agile__load_u32(&rec->source);
		uint64_t mine;

		if (source == AGILE_FLEET_FALLBACK &&
		    now >= agile__load_i64(&rec->next_probe_ns) &&
		    now < redis_deadline && (mine = turn_claim(f, now)) != 0) {
			/* Try Redis again; whichever way it goes the
			 * loop takes the matching branch. */
			agile__store_i64(&rec->next_probe_ns,
			                 now + PROBE_INTERVAL_NS);
			fetch(f, mine, redis_deadline);
			turn_release(f, mine);
			now = agile__now_ns();
			continue;
		}
		if (source != AGILE_FLEET_FROM_REDIS)
			break;
		planned = lease_take(rec, now);
		if (planned >= 0) {
			agile__add_u64(&rec->admits, 1);
			maybe_prefetch(f, agile__now_ns(), redis_deadline);
			return planned;
		}
		if (!counted_starved) {
			agile__add_u64(&rec->starved, 1);
			counted_starved = true;
		}
		if (now < agile__load_i64(&rec->retry_at_ns)) {
			/* The fleet is full: wait for it like for any other
			 * pacing, then ask again. */
			wait(agile__load_i64(&rec->retry_at_ns));
			now = agile__now_ns();
			redis_deadline = now + timeout_of(f);
			continue;
		}
		if (now >= redis_deadline)
			break; /* this call's Redis budget is spent */
		if (__atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE) ==
		    (int32_t)getpid()) {
			/* This process's own lease is on its way (another
			 * thread may be collecting it: then wait a little). */
			collect_lease(f, true);
			if (__atomic_load_n(&f->pending_pid,
			                    __ATOMIC_ACQUIRE) != 0)
				nap(TURN_POLL_NS);
		} else if ((mine = turn_claim(f, now)) != 0) {
			fetch(f, mine, redis_deadline);
			turn_release(f, mine);
		} else {
			/* Another process is fetching: its lease is ours
			 * too. */
			nap(TURN_POLL_NS);
		}
		now = agile__now_ns();
	}
	agile__add_u64(&rec->admits, 1);
	return fallback_take(f, now);
}

/* ------------------------------------------------------------------------ */
/* fleet=adaptive                                                            */
/* ------------------------------------------------------------------------ */

/* The fleet destination whose slot is `s`, if it is adaptive. */
static struct fleet_dest *adaptive_of(struct agile_state_slot *s)
{
	for (int i = 0; i < rules->count && i < AGILE_RULES_MAX; i++) {
		const struct agile_rule *r = &rules->rule[i];
		struct fleet_dest *f;

		if (!r->enabled || r->fleet.mode != AGILE_FLEET_ADAPTIVE)
			continue;
		f = &dests[i];
		if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) > 0) {
			if (f->slot == s)
				return f;
			continue;
		}
		/* Not set up in this process yet: match by name rather than
		 * attach a slot the process may never use. */
		if (strncmp(s->name, r->name, sizeof(s->name)) == 0)
			return fleet_dest(i);
	}
	return NULL;
}

/* "i:c,i:c,..." of a snapshot's non-empty buckets. */
static size_t hist_text(const struct agile_hist_snapshot *h, char *buf,
                        size_t cap)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++) {
		int n;

		if (h->counts[i] == 0)
			continue;
		n = snprintf(buf + at, cap - at, "%s%d:%llu", at ? "," : "", i,
		             (unsigned long long)h->counts[i]);
		if (n < 0 || (size_t)n >= cap - at)
			break;
		at += (size_t)n;
	}
	return at;
}

/* Parse "i:c,..." (a bulk string) into a snapshot. */
static void hist_parse(const struct agile_resp *r, struct agile_hist_snapshot *h)
{
	const char *p = r->str, *end = r->str + r->len;

	memset(h, 0, sizeof(*h));
	while (p < end) {
		char *stop;
		unsigned long long i = strtoull(p, &stop, 10);
		unsigned long long c;

		if (stop >= end || *stop != ':')
			break;
		c = strtoull(stop + 1, &stop, 10);
		if (i < AGILE_HIST_BUCKETS)
			h->counts[i] += c;
		p = stop + 1;
	}
}

static uint64_t reply_u64(const struct agile_resp *r)
{
	int64_t v = 0;

	return agile_resp_int64(r, &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

/* The published controller, if it was written by a build and settings
 * like ours. */
static bool blob_read(const struct fleet_dest *f, const struct agile_resp *r,
                      struct agile_controller *out)
{
	struct ctl_blob blob;

	if (r->type != AGILE_RESP_BULK || r->len != sizeof(blob))
		return false;
	memcpy(&blob, r->str, sizeof(blob));
	if (memcmp(blob.magic, "AGC1", 4) != 0 ||
	    blob.size != sizeof(struct agile_controller) || blob.tag != f->ctl_tag)
		return false;
	/* Redis is written by every host, and by whatever else reaches it: a
	 * controller that fails the core's check is no fleet's, and the
	 * winner starts a fresh one instead (fleet_step). */
	if (agile_controller_validate(&blob.ctl, &f->fleet_config, NULL) < 0)
		return false;
	*out = blob.ctl;
	return true;
}

/* The winner's step: merged histogram in, new fleet rate out (published). */
static void fleet_step(struct fleet_dest *f, const struct agile_resp *r,
                       struct agile_controller *ctl, int64_t deadline)
{
	const int64_t tick_ns = f->fleet_config.tick_ns;
	struct agile_tick_input in;
	struct ctl_blob blob;
	char epoch_s[24], rate_s[32], ttl_s[24];
	const char *keys[1] = { f->key[KEY_FLEET] };
	const char *args[4];
	size_t lens[4] = { (size_t)-1, (size_t)-1, sizeof(blob), (size_t)-1 };
	const struct agile_resp *ok;
	double rate;
	int64_t epoch = 0;

	if (!blob_read(f, &r->element[4], ctl))
		agile_controller_init(ctl, &f->fleet_config);
	hist_parse(&r->element[5], &scratch->merged);
	scratch->merged.total = reply_u64(&r->element[6]);
	scratch->merged.sum_ns = reply_u64(&r->element[7]);
	memset(&in, 0, sizeof(in));
	in.hist = &scratch->merged;
	in.unreachable = reply_u64(&r->element[8]);
	in.used = (double)reply_u64(&r->element[9]) * AGILE_NS_PER_S /
	          (double)tick_ns;
	rate = agile_controller_step(ctl, &f->fleet_config, &in);
	agile__add_u64(&f->rec->steps_won, 1);
	memset(&blob, 0, sizeof(blob));
	memcpy(blob.magic, "AGC1", 4);
	blob.size = sizeof(struct agile_controller);
	blob.tag = f->ctl_tag;
	blob.ctl = *ctl;
	agile_resp_int64(&r->element[1], &epoch);
	snprintf(epoch_s, sizeof(epoch_s), "%lld", (long long)epoch);
	format_decimal(rate_s, sizeof(rate_s), rate);
	snprintf(ttl_s, sizeof(ttl_s), "%lld",
	         (long long)(FLEET_TTL_TICKS * tick_ns / AGILE_NS_PER_MS));
	args[0] = epoch_s;
	args[1] = rate_s;
	args[2] = (const char *)&blob;
	args[3] = ttl_s;
	if (eval(f, AGILE_SCRIPT_PUBLISH, 1, keys, 4, args, lens, &ok,
	         deadline) < 0)
		redis_failed(f, agile__now_ns());
	else
		agile__store_double(&f->rec->fleet_rate, rate);
}

/* Send this tick to Redis; run and publish the step if this host won. */
static void flush(struct fleet_dest *f, uint64_t admitted,
                  uint64_t unreachable, int64_t deadline)
{
	struct agile_state_slot *s = f->slot;
	const struct agile_resp *r = NULL;
	const char *keys[4] = { f->key[KEY_HOSTS], f->key[KEY_HIST],
	                        f->key[KEY_STEP], f->key[KEY_FLEET] };
	char tick_s[24], hb_s[24], total_s[24], sum_s[24], unr_s[24];
	char adm_s[24];
	const char *args[8];
	struct agile_controller ctl;
	double rate = 0;
	int64_t won = 0, hosts = 0;

	hist_text(&scratch->local, scratch->text, sizeof(scratch->text));
	snprintf(tick_s, sizeof(tick_s), "%lld",
	         (long long)(f->fleet_config.tick_ns / AGILE_NS_PER_MS));
	snprintf(hb_s, sizeof(hb_s), "%lld",
	         (long long)(HEARTBEAT_NS / AGILE_NS_PER_US));
	snprintf(total_s, sizeof(total_s), "%llu",
	         (unsigned long long)scratch->local.total);
	snprintf(sum_s, sizeof(sum_s), "%llu",
	         (unsigned long long)scratch->local.sum_ns);
	snprintf(unr_s, sizeof(unr_s), "%llu", (unsigned long long)unreachable);
	snprintf(adm_s, sizeof(adm_s), "%llu", (unsigned long long)admitted);
	args[0] = host_id;
	args[1] = tick_s;
	args[2] = hb_s;
	args[3] = scratch->text;
	args[4] = total_s;
	args[5] = sum_s;
	args[6] = unr_s;
	args[7] = adm_s;
	if (eval(f, AGILE_SCRIPT_FLUSH, 4, keys, 8, args, NULL, &r,
	         deadline) < 0) {
		redis_failed(f, agile__now_ns());
		return;
	}
	if (r->type != AGILE_RESP_ARRAY || (r->count != 5 && r->count != 11) ||
	    agile_resp_int64(&r->element[0], &won) < 0) {
		snprintf(f->conn.error, sizeof(f->conn.error),
		         "FLUSH answered something unexpected");
		redis_failed(f, agile__now_ns());
		return;
	}
	redis_answered(f);
	if (agile_resp_int64(&r->element[2], &hosts) == 0 && hosts > 0)
		agile__store_u32(&f->rec->hosts, (uint32_t)hosts);
	agile_resp_int64(&r->element[1], &f->rec->last_epoch);
	if (won == 1 && r->count == 11) {
		fleet_step(f, r, &ctl, deadline + timeout_of(f));
	} else {
		if (agile_resp_double(&r->element[3], &rate) == 0 && rate > 0)
			agile__store_double(&f->rec->fleet_rate, rate);
		if (!blob_read(f, &r->element[4], &ctl))
			return;
	}
	/* agilestat shows the slot's controller: make it the fleet's, so
	 * every host shows the one rate the fleet runs at. */
	memcpy(&s->limiter.loop.ctl, &ctl, sizeof(ctl));
}

bool agile__fleet_tick_slow(struct agile_state_slot *s, int64_t now)
{
	struct agile_rate_limiter *l = &s->limiter;
	struct fleet_dest *f;
	uint64_t unreachable, admits, mine;
	int64_t next;

	if (rules == NULL || (f = adaptive_of(s)) == NULL)
		return false;
	next = agile__load_i64(&l->loop.next_tick_ns);
	if (now < next)
		return true;
	if (scratch == NULL) {
		void *p = mmap(NULL, sizeof(*scratch), PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return false;
		if (!__atomic_compare_exchange_n(&scratch, &(struct scratch *){
		                                 NULL }, p, false,
		                                 __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE))
			munmap(p, sizeof(*scratch));
	}
	if (!pid_lock_try(&scratch_owner))
		return true; /* another destination's tick: this one next time */
	/* The local tick's claim, as limiter.c's: one winner per tick. */
	if (!agile__cas_i64(&l->loop.next_tick_ns, &next,
	                    now + l->loop.config.tick_ns)) {
		pid_unlock(&scratch_owner);
		return true;
	}
	agile_hist_drain(&l->loop.hist, &scratch->local);
	unreachable = agile__load_u64(&l->loop.unreachable_tick);
	agile__sub_u64(&l->loop.unreachable_tick, unreachable);
	agile__store_i64(&l->loop.last_tick_ns, now);
	admits = agile__load_u64(&f->rec->admits);
	/* The local bucket only keeps max= here: the fleet bucket paces. */
	agile_bucket_set_rate(&l->bucket, l->loop.config.max_rate);
	if (agile__load_u32(&f->rec->source) == AGILE_FLEET_FROM_REDIS ||
	    (agile__load_u32(&f->rec->source) == AGILE_FLEET_FALLBACK &&
	     now >= agile__load_i64(&f->rec->next_probe_ns))) {
		int64_t deadline = now + timeout_of(f);

		/* Wait for the turn as a caller would, within the timeout;
		 * a lease this process is fetching holds it, so take that
		 * first. */
		collect_lease(f, true);
		while ((mine = turn_claim(f, agile__now_ns())) == 0 &&
		       agile__now_ns() < deadline)
			nap(TURN_POLL_NS);
		if (mine != 0) {
			flush(f, admits -
			      agile__load_u64(&f->rec->admits_at_tick),
			      unreachable, deadline);
			turn_release(f, mine);
		}
	}
	agile__store_u64(&f->rec->admits_at_tick, admits);
	pid_unlock(&scratch_owner);
	agile_state_slot_append_tick(s, agile__unix_ns());
	return true;
}
