/*
 * agilestat_resilience.h - agilestat's view of a slot's resilience region
 * (src/common/resilience.h): the concurrency cap, breaker, quota and window,
 * HTTP verdicts, connect retries, per-address keys and inbound shedding,
 * in each of agilestat's formats.  Only the features a destination
 * configured are shown.
 */
#ifndef AGILESTAT_RESILIENCE_H
#define AGILESTAT_RESILIENCE_H

#include "state.h"

/* Lines of the table, each starting with two spaces. */
void agilestat_resilience_table(const struct agile_state_slot *s);
/* Members of the destination's JSON object, each starting with a comma. */
void agilestat_resilience_json(const struct agile_state_slot *s);
/* --config's lines of the settings the region records (an adaptive cap's
 * bounds, a listener's client_rate=), each starting with two spaces. */
void agilestat_resilience_config(const struct agile_state_slot *s);
/* The Prometheus families, for `n` slots; `labels` prints slot i's label
 * set. */
void agilestat_resilience_prometheus(const struct agile_state_slot *const *s,
                                     int n,
                                     void (*labels)(int i, void *arg),
                                     void *arg);

#endif /* AGILESTAT_RESILIENCE_H */
