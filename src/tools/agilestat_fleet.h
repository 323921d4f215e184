/*
 * agilestat_fleet.h - agilestat's view of the fleet budget
 * (preload/fleet/fleet.h) of each destination that has one: the fleet rate,
 * this host's share of it, Redis round trips per second, the live hosts Redis
 * counts, and whether the host is on its fallback budget.  Read from the fleet
 * file next to the state file; destinations without fleet settings show
 * nothing.
 */
#ifndef AGILESTAT_FLEET_H
#define AGILESTAT_FLEET_H

#include "state.h"

/* Map the fleet file of the state file at `state_path`, if there is one
 * (again on every call, for --watch). */
void agilestat_fleet_open(const char *state_path);
void agilestat_fleet_close(void);

/* Lines of the table, each starting with two spaces. */
void agilestat_fleet_table(const struct agile_state_slot *s);
/* A ,"fleet":{...} member of the destination's JSON object, or nothing. */
void agilestat_fleet_json(const struct agile_state_slot *s);
/* The Prometheus families for `n` slots; `labels` prints slot i's labels. */
void agilestat_fleet_prometheus(const struct agile_state_slot *const *s, int n,
                                void (*labels)(int i, void *arg), void *arg);

#endif /* AGILESTAT_FLEET_H */
