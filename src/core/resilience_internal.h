/*
 * resilience_internal.h - helpers shared between the resilience primitives
 * and the per-key limiter table, kept out of the installed headers.
 */
#ifndef AGILE_RESILIENCE_INTERNAL_H
#define AGILE_RESILIENCE_INTERNAL_H

#include <stdint.h>

#include "agile_resilience.h"

/* The token units a bucket holds at now_ns, without storing the refill. */
int64_t agile__token_bucket_units(const struct agile_token_bucket *b,
                                  int64_t now_ns);

#endif /* AGILE_RESILIENCE_INTERNAL_H */
