/*
 * agile_controller.h - the control law: its state, one step per tick
 * (controller.c, controller_rules.c), and what a step sees.
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_CONTROLLER_H
#define AGILE_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "agile_config.h"
#include "agile_histogram.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The controller's state.  Only the tick winner writes it (agile_*_tick),
 * except probe_mode, which an observed sample clears from the hot path.
 * Readers (stats) load each field atomically.
 */
struct agile_controller {
	double rate;           /* current target: req/s, or concurrency */
	double baseline_ns;    /* slow EWMA of p50; 0 until the first sample */
	double fast_ns;        /* the last tick's p50 (or synthetic sample) */
	double p50_ns;         /* last tick's p50; 0 without samples */
	double p99_ns;         /* last tick's p99; 0 without samples */
	double tail_ratio;     /* smoothed share above the tail target */
	double tail_threshold; /* what tail_ratio is compared to; 0 quantile */
	double used;           /* req/s granted, or peak in flight, last tick */
	uint64_t samples;      /* samples the last tick saw */
	uint64_t unreachable;  /* unreachable calls the last tick saw */
	uint64_t ticks;        /* control steps run */
	uint64_t blind_ticks;  /* consecutive steps without a sample */
	uint32_t cold_start;   /* 1 until the first backoff or saturation */
	uint32_t probe_mode;   /* 1: floor is probe_rate until a sample */
	int32_t up_agree;      /* consecutive ticks voting up */
	int32_t down_agree;    /* consecutive ticks voting down */
	uint32_t last_action;  /* enum agile_action of the last step */
	uint32_t backlog_ms;   /* ms the queue a cut under the knee left
	                          still needs to drain (rule a); 0 none */
	double delivered;      /* answers per second the last tick saw; 0 when
	                          unknown or the delivered rules are off */
	double knee_rate;      /* delivered rate at the last deficit cut; 0
	                          until one */
	double peak_knee;      /* the highest knee, forgotten toward the knee
	                          with a half-life of AGILE_PEAK_HALF_LIFE_S;
	                          0 until a knee */
	double answer_ratio;   /* answers per grant on healthy spans:
	                          paired_answers / paired_grants; the delivered
	                          rules need it near 1; 0 unknown */
	int32_t increase_streak; /* rule c's steps in a row from the knee on */
	uint32_t cutting;      /* 1 from a cut until the rate next rises */
	double span_grants;    /* grants of the ticks not yet measured: those
	                          without answers since the last tick with
	                          some, while grants were outstanding, and a
	                          split span; rule a measures the next tick
	                          with answers over them all */
	double span_answers;   /* answers of a split span carried over */
	double span_s;         /* seconds those ticks covered */
	double paired_grants;  /* EWMA of a healthy span's grants ... */
	double paired_answers; /* ... and of its answers; 0 until the first */
	uint32_t paired;       /* 1 while the delivered rules trust answers
	                          to pair with grants (see AGILE_ANSWER_*) */
	uint32_t span_split;   /* 1 while the span carries a split one */
	uint32_t cut_from_used; /* 1 when the last cut started from what was
	                           used: the program was held to its answers */
	uint32_t cut_ended_cold; /* 1 when the last cut ended cold start: slow
	                            start's overshoot filled the queue it cut */
	uint32_t slo_broke;    /* ticks of rule d's cut to the share inside
	                          (a downstream slow at any rate), counted
	                          until the rate next rises, at most
	                          AGILE_BREAK_TICKS_MOST: the knee is not
	                          learned, and the first healthy tick returns
	                          to it (to the peak knee after
	                          AGILE_BREAK_TICKS); 0 none */
	/* A listener's tail that is not its load's (concurrency limiters
	 * with the ratio guard only): the tail guard's series of cuts
	 * remembers the smoothed share past the tail target and the load at
	 * its first cut; a cut at half that load or less that left the share
	 * where it was finds a server slow at any load, and tail_own keeps
	 * that share: the guard then fires only on a share past it. */
	double tail_series_share; /* share at the series' first cut; 0 none */
	double tail_series_load;  /* the load that cut started from; 0 none */
	double tail_own;          /* the share answered past the target at
	                             any load; 0 none */
	double last_step;      /* rule c's step up from the knee the last
	                          tick took, a share of the rate; 0 none */
	uint32_t fast_series;  /* 1 while that step was rule c's fast
	                          series' (a downstream faster than ever) */
	uint32_t pad;
	double fastest_ns;     /* the lowest baseline learned, forgotten
	                          toward the baseline (rule c's fast series:
	                          "faster than ever"); 0 none */
};

/* What the last control step did, for observability and tests. */
enum agile_action {
	AGILE_ACTION_NONE = 0,   /* no step yet */
	AGILE_ACTION_BLIND,      /* no sample and no outage: nothing to act on */
	AGILE_ACTION_HOLD,       /* inside the deadband, or waiting for agreement */
	AGILE_ACTION_GATED,      /* healthy but used < rate/2: held */
	AGILE_ACTION_INCREASE,   /* additive step up */
	AGILE_ACTION_MULTIPLY,   /* slow start or recover ramp */
	AGILE_ACTION_DECREASE,   /* proportional step down */
	AGILE_ACTION_TAIL,       /* the tail guard forced a full step down */
	AGILE_ACTION_OUTAGE,     /* unreachable >= 2x observed: toward probe */
	AGILE_ACTION_BASELINE,   /* a concurrency limiter's baseline probe:
	                            the limit held at the floor */
	AGILE_ACTION_COUNT
};
const char *agile_action_name(enum agile_action a);

/* What one control step sees.  Zero answered and elapsed_s mean "not
 * measured": the delivered-rate rules then stay out of the step. */
struct agile_tick_input {
	const struct agile_hist_snapshot *hist; /* the tick's samples */
	uint64_t unreachable; /* calls classified unreachable this tick */
	double used;          /* req/s granted, or peak in flight, this tick */
	uint64_t answered;    /* calls answered this tick: samples other than
	                         truncated ones */
	double elapsed_s;     /* seconds the tick covered; 0: unknown */
	bool pending;         /* the actuator has granted slots still ahead of
	                         now: requests wait to be sent, so a tick
	                         without answers is not an idle one */
};

void agile_controller_init(struct agile_controller *c,
                           const struct agile_resolved *r);
/* Run one control step; returns the new target, clamped to the bounds. */
double agile_controller_step(struct agile_controller *c,
                             const struct agile_resolved *r,
                             const struct agile_tick_input *in);
/* The tolerated window (upper edge) and the tail target, in ns; 0 when
 * not yet known (baseline anchor before the first sample). */
double agile_controller_window_ns(const struct agile_controller *c,
                                  const struct agile_resolved *r);
double agile_controller_tail_ns(const struct agile_resolved *r);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_CONTROLLER_H */
