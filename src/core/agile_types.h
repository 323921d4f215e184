/*
 * agile_types.h - the units and the enumerations every part of
 * libagile's interface uses: nanoseconds, presets, anchors, the outcome
 * of a call, the kind of a limiter.
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_TYPES_H
#define AGILE_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGILE_NS_PER_US INT64_C(1000)
#define AGILE_NS_PER_MS INT64_C(1000000)
#define AGILE_NS_PER_S INT64_C(1000000000)

/* ------------------------------------------------------------------------ */
/* Enumerations                                                              */
/* ------------------------------------------------------------------------ */

/* Preset: fills the policy fields a caller left at zero (see agile_resolve).
 * Explicit settings always win over a preset. */
enum agile_preset {
	AGILE_PRESET_NONE = 0,        /* recommended: SLO anchor + 5% ratio guard
	                                 when an SLO is set, else the relative law */
	AGILE_PRESET_BALANCED,        /* relative law: baseline anchor at 2x,
	                                 single-tick decisions, quantile guard */
	AGILE_PRESET_LATENCY_FIRST,   /* SLO anchor, two agreeing ticks per step;
	                                 needs an SLO */
	AGILE_PRESET_THROUGHPUT_FIRST,/* baseline anchor at 3.5x, two ticks */
	AGILE_PRESET_SEED,            /* the seed's law exactly, as preset none
	                                 ran it before the matrix's knobs */
	AGILE_PRESET_COUNT
};

/* Anchor: what the congestion threshold is measured against. */
enum agile_anchor {
	AGILE_ANCHOR_UNSET = 0, /* let the preset decide */
	AGILE_ANCHOR_BASELINE,  /* (1 + inflation) x slow EWMA baseline, capped
	                           from above by 0.8 x SLO when an SLO is set */
	AGILE_ANCHOR_SLO        /* 0.8 x SLO and nothing else; needs an SLO */
};

/* Outcome: what the controller is told about one call. */
enum agile_outcome {
	AGILE_REACHED = 0,  /* the downstream answered: a real round trip */
	AGILE_UNREACHABLE,  /* never reached it: refused, DNS failure, open breaker */
	AGILE_ABORTED       /* the caller gave up or never started: no signal */
};

/* Kind of limiter a resolved configuration belongs to. */
enum agile_kind {
	AGILE_KIND_RATE = 0,     /* bounds are requests per second */
	AGILE_KIND_CONCURRENCY   /* bounds are requests in flight */
};

/* Returned (negated errno style) by agile_conc_do when the limit is reached.
 * Map it to HTTP 429 or gRPC RESOURCE_EXHAUSTED. */
#define AGILE_EOVERLOADED (-16) /* -EBUSY */

#ifdef __cplusplus
}
#endif

#endif /* AGILE_TYPES_H */
