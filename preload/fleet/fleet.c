/*
 * fleet.c - the fleet budget (see fleet.h): its configuration, the fleet
 * file, and each destination's setup.  Leases of fleet slots from Redis,
 * shared by the processes of one host, are fleet_lease.c's; the fallback
 * when Redis is away fleet_fallback.c's; the fleet-wide control step of
 * fleet=adaptive fleet_adaptive.c's (fleet_internal.h lists them).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "destinations.h"
#include "fleet_internal.h"
#include "fleet_scripts.h"
#include "log.h"
#include "process.h"

static const char *const scripts[AGILE_SCRIPT_COUNT] = {
	AGILE_LUA_LEASE, AGILE_LUA_FLUSH, AGILE_LUA_PUBLISH
};
static const char *const key_suffix[KEY_COUNT] = {
	"tat", "win", "hosts", "fleet", "hist", "step"
};

static const struct agile_rules *rules;
int agile__fleet_active;            /* any enabled rule has fleet settings */
static int redis_configured;        /* AGILE_REDIS parsed */
static struct agile_redis_addr redis_addr;
char agile__fleet_redis_text[64];   /* where, for messages and agilestat */
static struct fleet_dest dests[AGILE_RULES_MAX];
static struct agile_fleet_map fleet_map;
static int fleet_map_tried;
char agile__fleet_host_id[AGILE_FLEET_HOST_ID_MAX] = "";

/* Held while a destination is set up (a pid lock, fleet_internal.h). */
static int32_t setup_owner;

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * UINT64_C(1099511628211);
	return h;
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
	} else if (agile__redis_url_parse(url, &redis_addr, why,
	                                 sizeof(why)) < 0) {
		snprintf(line, sizeof(line), "AGILE_REDIS: %.256s; destinations "
		         "with fleet settings enforce them on this host alone",
		         why);
		report(line, arg);
	} else {
		redis_configured = 1;
		agile__redis_addr_format(&redis_addr, agile__fleet_redis_text,
		                        sizeof(agile__fleet_redis_text));
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
	agile__fleet_path(agile__destinations_state_path(), path, sizeof(path));
	if (agile__destinations_state_path()[0] != '\0')
		rc = agile__fleet_open_rw(path, &fleet_map, why, sizeof(why));
	if (rc < 0) {
		agile__log(AGILE_LOG_WARN, "cannot use fleet file %s: %s; this "
		           "process keeps its fleet lease to itself", path,
		           strerror(-rc));
		fleet_map.header = NULL;
		snprintf(agile__fleet_host_id, sizeof(agile__fleet_host_id),
		         "pid%d-%lld", (int)getpid(),
		         (long long)agile__unix_ns());
		return;
	}
	if (why[0] != '\0')
		agile__log(AGILE_LOG_WARN, "fleet file %s was unusable (%s); "
		           "replaced it", path, why);
	snprintf(agile__fleet_host_id, sizeof(agile__fleet_host_id), "%s",
	         fleet_map.header->host_id);
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
	hash = fnv(hash, agile__fleet_redis_text, strlen(agile__fleet_redis_text));
	if (fleet_map.header == NULL ||
	    agile__fleet_record_acquire(&fleet_map, rule->name, hash, &rec) < 0)
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
		         redis_configured ? agile__fleet_redis_text : "(AGILE_REDIS unset)");
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
	agile__redis_init(&f->conn, &redis_addr, scripts, AGILE_SCRIPT_COUNT);
	for (int k = 0; k < KEY_COUNT; k++)
		snprintf(f->key[k], sizeof(f->key[k]), "{agile:%s}:%s",
		         rule->name, key_suffix[k]);
	__atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
}

/* See fleet_internal.h. */
struct fleet_dest *agile__fleet_dest(int dest)
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

/* See fleet_internal.h. */
struct fleet_dest *agile__fleet_adaptive_of(struct agile_state_slot *s)
{
	if (rules == NULL)
		return NULL;
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
			return agile__fleet_dest(i);
	}
	return NULL;
}
