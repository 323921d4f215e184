/*
 * fleet.h - one budget per destination for a whole fleet of machines, kept
 * in Redis, on top of the per-machine budget of the state file.
 *
 * A destination with fleet_max=N (and/or window=N/SPAN,shared) admits each
 * call twice: the local limiter grants it at connect() or at the next
 * request (track.c), and just before the call's first byte goes out — when
 * the local grant has been waited for — it takes one slot of the fleet
 * budget here.  Slots come in leases of about 100 ms of this host's rate,
 * fetched from Redis by one process of the host at a time and shared by all
 * of them through the fleet file (fleet_state.h), so Redis sees a few round
 * trips per second per host, not one per call.
 *
 * When Redis is unreachable, slow (past redis_timeout) or answers with an
 * error, the host falls back at once to a local bucket of fleet_max / hosts
 * (hosts: the live hosts Redis last counted), says so in one log line, and
 * tries Redis again twice a second; no call waits on Redis for longer than
 * redis_timeout in all.  With fleet=adaptive the fleet's control step runs
 * once per tick, on one host, on every host's merged histogram
 * (agile__fleet_tick), and the whole fleet runs at the rate it publishes.
 */
#ifndef AGILE_PRELOAD_FLEET_H
#define AGILE_PRELOAD_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include "rules.h"
#include "state.h"

/*
 * Read AGILE_REDIS when a rule has fleet settings (called once, from the
 * configuration load, with the parsed rules, which must stay alive).
 * Problems go to `report` as complete lines, one per call.
 */
void agile__fleet_load(const struct agile_rules *rules,
                       void (*report)(const char *message, void *arg),
                       void *arg);

/* 1 once any enabled rule has fleet settings (set at load). */
extern int agile__fleet_active;

/* What agile__fleet_admit and agile__fleet_tick do out of line, once a
 * rule has fleet settings. */
int64_t agile__fleet_admit_slow(int dest, int64_t now_ns,
                                void (*wait)(int64_t until_ns));
bool agile__fleet_tick_slow(struct agile_state_slot *s, int64_t now_ns);

/*
 * Admit one call to destination `dest` at `now_ns`, its local grant
 * already waited for: returns the time its first byte may go (>= now_ns);
 * the caller waits until then.  It may itself wait, through `wait` (which
 * sleeps until a monotonic time), when the fleet is full, and for at most
 * the destination's redis_timeout on Redis.  Without fleet settings in any
 * rule, a call is one load and a branch, inline.
 */
static inline int64_t agile__fleet_admit(int dest, int64_t now_ns,
                                         void (*wait)(int64_t until_ns))
{
	if (!__atomic_load_n(&agile__fleet_active, __ATOMIC_ACQUIRE))
		return now_ns;
	return agile__fleet_admit_slow(dest, now_ns, wait);
}

/*
 * The tick of a fleet=adaptive destination (call where the local tick
 * would run): claims the local tick, sends its samples to Redis, runs the
 * fleet's control step when this host wins the epoch, and mirrors the
 * fleet controller into the slot for agilestat.  Returns false, having
 * done nothing, for every other destination.
 */
static inline bool agile__fleet_tick(struct agile_state_slot *s,
                                     int64_t now_ns)
{
	if (!__atomic_load_n(&agile__fleet_active, __ATOMIC_ACQUIRE))
		return false;
	return agile__fleet_tick_slow(s, now_ns);
}

#endif /* AGILE_PRELOAD_FLEET_H */
