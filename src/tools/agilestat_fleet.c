/*
 * agilestat_fleet.c - the fleet budget in agilestat's formats (see
 * agilestat_fleet.h).  The fleet file is mapped read-only and every value
 * is read with an atomic load.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agilestat_fleet.h"
#include "agilestat_json.h"
#include "fleet_config.h"
#include "fleet_state.h"

static struct agile_fleet_map map;

/* One record as shown. */
struct reading {
	const char *mode;
	int64_t fleet_max;
	int32_t window;
	double window_span_s;
	double fleet_rate;      /* req/s the fleet bucket runs at */
	double host_rate;       /* req/s this host admitted, last second */
	double share;           /* host_rate / fleet_rate; 0 when unknown */
	double round_trips_per_s;
	uint64_t round_trips, redis_errors, slots_leased, leases_short;
	uint64_t admitted, fallback_admitted, fallbacks, steps_won;
	uint32_t hosts;
	uint32_t source;        /* enum agile_fleet_source */
	double fallback_rate;
	double max_wait_ms;
	double timeout_ms;
	int64_t since_unix_ns;
	const char *redis;
	const char *last_error;
};

void agilestat_fleet_open(const char *state_path)
{
	char path[4200], why[160];

	agilestat_fleet_close();
	agile__fleet_path(state_path, path, sizeof(path));
	if (agile__fleet_open_ro(path, &map, why, sizeof(why)) < 0)
		map.header = NULL;
}

void agilestat_fleet_close(void)
{
	agile__fleet_close(&map);
}

static const char *mode_name(uint32_t mode, int64_t fleet_max)
{
	if (fleet_max <= 0)
		return "window";
	return mode == AGILE_FLEET_ADAPTIVE ? "adaptive" : "static";
}

static double load_double(const double *p)
{
	double v;

	__atomic_load(p, &v, __ATOMIC_ACQUIRE);
	return v;
}

#define LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)

static bool read_record(const struct agile_state_slot *s, struct reading *r)
{
	const struct agile_fleet_record *rec;
	struct timespec ts;
	int64_t mono;

	if (map.header == NULL ||
	    (rec = agile__fleet_record_find(&map, s->name)) == NULL)
		return false;
	memset(r, 0, sizeof(*r));
	r->mode = mode_name(LOAD(&rec->mode), LOAD(&rec->fleet_max));
	r->fleet_max = LOAD(&rec->fleet_max);
	r->window = LOAD(&rec->window);
	r->window_span_s = (double)LOAD(&rec->window_span_ns) / 1e9;
	r->fleet_rate = load_double(&rec->fleet_rate);
	r->round_trips = LOAD(&rec->round_trips);
	r->redis_errors = LOAD(&rec->redis_errors);
	r->slots_leased = LOAD(&rec->slots_leased);
	r->leases_short = LOAD(&rec->leases_short);
	r->admitted = LOAD(&rec->admits);
	r->fallback_admitted = LOAD(&rec->fallback_admits);
	r->fallbacks = LOAD(&rec->fallbacks);
	r->steps_won = LOAD(&rec->steps_won);
	r->hosts = LOAD(&rec->hosts);
	r->source = LOAD(&rec->source);
	r->fallback_rate = load_double(&rec->fallback_rate);
	r->max_wait_ms = (double)LOAD(&rec->max_wait_ns) / 1e6;
	r->timeout_ms = (double)LOAD(&rec->timeout_ns) / 1e6;
	r->since_unix_ns = LOAD(&rec->since_unix_ns);
	r->redis = rec->redis;
	r->last_error = rec->last_error;
	/* The per-second rates are written when calls are admitted: a host
	 * that stopped calling more than two seconds ago admits nothing. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (mono - LOAD(&rec->meter_ns) < 2 * INT64_C(1000000000)) {
		r->host_rate = load_double(&rec->admits_per_s);
		r->round_trips_per_s = load_double(&rec->round_trips_per_s);
	}
	if (r->fleet_rate > 0)
		r->share = r->host_rate / r->fleet_rate;
	return true;
}

static const char *source_name(uint32_t source)
{
	switch (source) {
	case AGILE_FLEET_FROM_REDIS: return "redis";
	case AGILE_FLEET_FALLBACK: return "fallback";
	default: return "no-redis";
	}
}

static void since(int64_t unix_ns, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ns / 1000000000);
	struct tm tm;

	if (unix_ns <= 0 || localtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "start");
	else
		strftime(buf, len, "%H:%M:%S", &tm);
}

#define ULL(x) ((unsigned long long)(x))

void agilestat_fleet_table(const struct agile_state_slot *s)
{
	struct reading r;
	char when[32];
	char redis[AGILESTAT_TEXT_SIZE(sizeof(((struct agile_fleet_record *)0)->redis))];
	char error[AGILESTAT_TEXT_SIZE(sizeof(((struct agile_fleet_record *)0)->last_error))];

	if (!read_record(s, &r))
		return;
	/* The fleet file's text, like the state file's, is untrusted. */
	agilestat_text(r.redis, redis, sizeof(redis));
	agilestat_text(r.last_error, error, sizeof(error));
	if (r.fleet_max > 0)
		printf("  fleet %s: rate %.1f/s (fleet_max %lld)  this host "
		       "%.1f/s (%.0f%%)", r.mode, r.fleet_rate,
		       (long long)r.fleet_max, r.host_rate, 100 * r.share);
	else
		printf("  fleet: this host %.1f/s", r.host_rate);
	if (r.window > 0)
		printf("  window %d per %gs shared", (int)r.window,
		       r.window_span_s);
	printf("\n  fleet redis %s: %s  round trips %.1f/s (%llu)  hosts %u  "
	       "longest wait %.1fms of %.0fms\n", redis,
	       r.source == AGILE_FLEET_FROM_REDIS ? "ok" : "AWAY",
	       r.round_trips_per_s, ULL(r.round_trips), r.hosts, r.max_wait_ms,
	       r.timeout_ms);
	since(r.since_unix_ns, when, sizeof(when));
	if (r.source == AGILE_FLEET_FALLBACK)
		printf("  FALLBACK since %s: local budget %.1f/s (%s)\n", when,
		       r.fallback_rate, error);
	else if (r.source == AGILE_FLEET_NO_REDIS)
		printf("  NO REDIS (AGILE_REDIS unset or unreadable): local "
		       "budget %.1f/s\n", r.fallback_rate);
}

void agilestat_fleet_json(const struct agile_state_slot *s)
{
	struct reading r;

	if (!read_record(s, &r))
		return;
	printf(",\"fleet\":{\"mode\":\"%s\",\"fleet_max\":%lld,\"window\":%d"
	       ",\"window_span_s\":%g,\"fleet_rate\":%.3f,\"host_rate\":%.3f"
	       ",\"share\":%.4f,\"round_trips_per_s\":%.3f,\"round_trips\":%llu"
	       ",\"hosts\":%u,\"source\":\"%s\",\"fallback\":%s"
	       ",\"since_unix\":%.3f,\"fallback_rate\":%.3f,\"fallbacks\":%llu,\"admitted\":%llu"
	       ",\"fallback_admitted\":%llu,\"slots_leased\":%llu"
	       ",\"leases_short\":%llu,\"redis_errors\":%llu,\"steps_won\":%llu"
	       ",\"max_redis_wait_ms\":%.3f,\"redis_timeout_ms\":%.3f,\"redis\":",
	       r.mode, (long long)r.fleet_max, (int)r.window, r.window_span_s,
	       r.fleet_rate, r.host_rate, r.share, r.round_trips_per_s,
	       ULL(r.round_trips), r.hosts, source_name(r.source),
	       r.source != AGILE_FLEET_FROM_REDIS ? "true" : "false",
	       (double)r.since_unix_ns / 1e9, r.fallback_rate, ULL(r.fallbacks), ULL(r.admitted),
	       ULL(r.fallback_admitted), ULL(r.slots_leased),
	       ULL(r.leases_short), ULL(r.redis_errors), ULL(r.steps_won),
	       r.max_wait_ms, r.timeout_ms);
	agilestat_json_string(r.redis);
	printf(",\"last_error\":");
	agilestat_json_string(r.last_error);
	printf("}");
}

void agilestat_fleet_prometheus(const struct agile_state_slot *const *s, int n,
                                void (*labels)(int i, void *arg), void *arg)
{
	static const struct {
		const char *name, *type, *help;
	} metric[] = {
		{ "agile_fleet_rate", "gauge", "Rate of the fleet bucket in Redis, requests per second." },
		{ "agile_fleet_host_rate", "gauge", "Calls this host admitted per second under the fleet budget." },
		{ "agile_fleet_share", "gauge", "This host's share of the fleet rate." },
		{ "agile_fleet_round_trips_per_second", "gauge", "Redis round trips this host makes per second." },
		{ "agile_fleet_round_trips_total", "counter", "Redis round trips this host made." },
		{ "agile_fleet_hosts", "gauge", "Live hosts Redis last counted for the destination." },
		{ "agile_fleet_fallback", "gauge", "1 while this host is on its fallback budget (Redis away)." },
	};
	bool any = false;

	for (int i = 0; i < n && !any; i++) {
		struct reading r;

		any = read_record(s[i], &r);
	}
	if (!any)
		return;
	for (size_t m = 0; m < sizeof(metric) / sizeof(metric[0]); m++) {
		printf("# HELP %s %s\n# TYPE %s %s\n", metric[m].name,
		       metric[m].help, metric[m].name, metric[m].type);
		for (int i = 0; i < n; i++) {
			struct reading r;
			double value = 0;
			uint64_t count = 0;

			if (!read_record(s[i], &r))
				continue;
			switch (m) {
			case 0: value = r.fleet_rate; break;
			case 1: value = r.host_rate; break;
			case 2: value = r.share; break;
			case 3: value = r.round_trips_per_s; break;
			case 4: count = r.round_trips; break;
			case 5: value = r.hosts; break;
			case 6: value = r.source != AGILE_FLEET_FROM_REDIS; break;
			}
			printf("%s", metric[m].name);
			labels(i, arg);
			if (strcmp(metric[m].type, "counter") == 0)
				agilestat_prometheus_counter(count);
			else
				agilestat_prometheus_gauge(value);
		}
	}
}
