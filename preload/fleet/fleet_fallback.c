/*
 * fleet_fallback.c - the fleet budget while Redis is away: each host paces
 * itself at its share of fleet_max (and of any shared window), the hosts
 * last seen live dividing it, until a round trip succeeds again; one log
 * line per host per outage, one when Redis answers again.
 */
#include "config.h"

#include <stdio.h>

#include "fleet_internal.h"
#include "log.h"

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

int64_t agile__fleet_fallback_take(struct fleet_dest *f, int64_t now)
{
	struct agile_fleet_record *rec = f->rec;

	if (agile__load_double(&rec->fallback_rate) <= 0)
		fallback_arm(f);
	agile__add_u64(&rec->fallback_admits, 1);
	return agile_bucket_take(&rec->fallback_bucket, now);
}

/* See fleet_internal.h. */
void agile__fleet_redis_failed(struct fleet_dest *f, int64_t now)
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
	agile__redis_addr_format(&f->conn.addr, where, sizeof(where));
	agile__log(AGILE_LOG_WARN, "destination %s: Redis %s: %s; this host "
	           "falls back to %.1f/s (its share of %u host%s) until Redis "
	           "answers", f->rule->name, where, f->conn.error,
	           agile__load_double(&rec->fallback_rate),
	           hosts > 0 ? hosts : 1, hosts > 1 ? "s" : "");
}

void agile__fleet_redis_answered(struct fleet_dest *f)
{
	uint32_t from = AGILE_FLEET_FALLBACK;

	if (!__atomic_compare_exchange_n(&f->rec->source, &from,
	                                 AGILE_FLEET_FROM_REDIS, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	agile__store_i64(&f->rec->since_unix_ns, agile__unix_ns());
	agile__store_double(&f->rec->fallback_rate, 0);
	agile__log(AGILE_LOG_WARN, "destination %s: Redis %s answers again; "
	           "back on the fleet budget", f->rule->name, agile__fleet_redis_text);
}
