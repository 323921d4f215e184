/*
 * agile.h - the public interface of libagile, the pure control core of
 * agilepreload.
 *
 * libagile is an adaptive, latency-driven limiter: a leaky bucket (or, for the
 * inbound direction, a semaphore) is the actuator, and a feedback controller
 * fed with round-trip samples decides what rate (or concurrency limit) the
 * actuator runs at.  A static ceiling is enforced twice, in the controller's
 * clamp and in the actuator itself, so no control-law bug can exceed it.
 *
 * Three rules shape every declaration here:
 *
 *  - The core is pure.  It reads no clock, sleeps never, draws no random
 *    numbers and does no I/O.  Every entry point that needs the time takes
 *    `now_ns`, a monotonic time in nanoseconds chosen by the caller, so every
 *    behaviour can be tested exactly on a virtual clock.
 *  - State structs hold no pointers.  A limiter is one fixed-size struct that
 *    can live in a shared-memory file mapped at different addresses by many
 *    processes; hooks (a classify function, a clock) are passed per call.
 *  - Hot-path calls (observe, take, try-take, release) are lock-free: they use
 *    GCC/Clang __atomic builtins on naturally aligned 8-byte fields, which are
 *    address-free and therefore valid across processes sharing the mapping.
 *
 * Functions return 0 or a negative errno value unless documented otherwise.
 * Nothing here prints.
 */
#ifndef AGILE_H
#define AGILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agile_laws.h"

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

/* ------------------------------------------------------------------------ */
/* Configuration as written by the user                                      */
/* ------------------------------------------------------------------------ */

/*
 * Every field's zero value means "use the default" (or "let the preset
 * decide"); agile_config_validate() reports values that agile_resolve() would
 * otherwise repair silently.  For a concurrency limiter the *_rate fields hold
 * concurrency bounds (requests in flight).
 */
struct agile_config {
	enum agile_preset preset;
	/* Rates are requests per second and may be fractional (0.5 is one
	 * request every 2 s), down to AGILE_MIN_RATE; concurrency bounds are
	 * whole numbers. */
	double min_rate;     /* legacy fallback for floor_rate and probe_rate */
	double floor_rate;   /* operating floor while the downstream answers */
	double probe_rate;   /* floor while it is unreachable; <= floor_rate */
	double max_rate;     /* hard ceiling; required (> 0) */
	double initial_rate; /* start; default max/8 rounded down, at least
	                        floor */
	int64_t slo_ns;       /* latency objective; 0 = none (guard off) */
	enum agile_anchor anchor;
	double tail_factor;       /* guard fires above slo x tail_factor; 1.0 */
	double tail_tolerance;    /* > 0: ratio guard with this share */
	int backoff_ticks;        /* agreeing ticks before a step down */
	int recover_ticks;        /* agreeing ticks before a step up */
	int64_t slow_half_life_ns;      /* baseline EWMA half-life upward */
	int64_t slow_down_half_life_ns; /* baseline EWMA half-life downward */
	double max_baseline_rise; /* cap on baseline rise, fraction per tick */
	int64_t tick_ns;          /* control period; 1 s */
	double target_inflation;  /* window = (1 + this) x baseline; 1.0 */
	double up_step;           /* additive-increase fraction per tick; 0.05 */
	double down_step;         /* largest decrease fraction per tick; 0.30 */
	double gain;              /* proportional decrease gain; 0.5 */
	double slow_start_gain;   /* cold-start multiplier per tick; 2.0 */
	double deadband;          /* hold band below the window, in [0,1); 0.1 */
	double recover_ramp;      /* > 0: multiplicative probe returns while
	                             fast <= recover_ramp x window; off */
	/*
	 * The four rules the scenario matrix (bench/RESULTS.md) measured the
	 * seed's law to lack; controller_rules.c explains each.  0 lets the preset
	 * decide: preset none with an SLO turns each on at its default, every
	 * other preset (seed among them) leaves it off.  Rules a-c need the
	 * tick's answers per second, so they apply to rate limiters only.
	 */
	double delivered_share;   /* a: a tick whose answers lag its grants (a
	                             queue growing) cuts at once to at most
	                             this x the delivered rate minus the excess;
	                             the knee ramp and the probe stop at this x
	                             the knee; 0.92 */
	double knee_ramp;         /* b: below delivered_share x knee a healthy
	                             tick multiplies by this, capped there,
	                             without waiting for agreement; 1 = off; 2 */
	double probe_acceleration;/* c: from delivered_share x knee up, step
	                             only while p50 <= (1 + AGILE_PROBE_QUIET)
	                             x baseline, each step in a
	                             row this times the last, up to
	                             AGILE_PROBE_MAX_STEP; 1 = off; 2 */
	double goodput_cut;       /* d: a second guard cut in a row keeps at most
	                             this x the share of the tick's answers
	                             inside the tail target, and a tick within
	                             the tolerance does not cut on the
	                             smoothing's memory; 1 */
	uint32_t rules_off;       /* AGILE_RULE_* bits: each rule named is off
	                             whatever the preset and its knob say */
	enum agile_law_kind law;  /* what moves a concurrency limiter's limit:
	                             AGILE_LAW_AGILE (0, this controller) or
	                             one of adaptx's windowed laws
	                             (agile_laws.h).  A rate limiter runs the
	                             agile law only: adaptx's laws bound
	                             requests in flight, not a rate */
};

/* The rules of struct agile_config's rules_off, one bit each.  Rules b and
 * c work from the knee rule a measures (and only on the answers it has
 * learned to trust), so turning a off turns them off too; b, c and d can
 * be turned off alone. */
#define AGILE_RULE_DELIVERED 0x1u /* a: delivered_share resolves to 0 */
#define AGILE_RULE_KNEE_RAMP 0x2u /* b: knee_ramp resolves to 1 */
#define AGILE_RULE_PROBE 0x4u     /* c: probe_acceleration resolves to 1 */
#define AGILE_RULE_GOODPUT 0x8u   /* d: goodput_cut resolves to 0 */
#define AGILE_RULES_ALL 0xfu

/* Defaults, each documented where the knob is explained (README). */
#define AGILE_DEFAULT_MIN_RATE 1 /* or max_rate, when that is lower */
/* The slowest rate a limiter takes: one request per hour.  A rate bound
 * below it (other than 0, unset) is refused by agile_config_validate() and
 * raised to it by agile_resolve(): a slower pace is a scheduled job's,
 * not a rate a latency controller can learn anything at. */
#define AGILE_MIN_RATE (1.0 / 3600.0)
#define AGILE_DEFAULT_TAIL_FACTOR 1.0
#define AGILE_DEFAULT_TAIL_TOLERANCE_SLO 0.05 /* PresetNone with an SLO */
#define AGILE_DEFAULT_SLOW_HALF_LIFE_NS (60 * AGILE_NS_PER_S)
#define AGILE_DEFAULT_SLOW_DOWN_HALF_LIFE_NS (5 * AGILE_NS_PER_S)
#define AGILE_DEFAULT_MAX_BASELINE_RISE 0.002 /* ~12% per minute at 1 s */
#define AGILE_DEFAULT_TICK_NS AGILE_NS_PER_S
/* The shortest and longest control period.  Every gain of the law is per
 * tick (up, down, slow_start, max_baseline_rise), so the tick sets how fast
 * the rate may move: below 10 ms it could double a hundred times a second
 * on answers to grants of several ticks before, and the parts of the law
 * that count in whole milliseconds (a cut's backlog, the fleet's tick)
 * read it as 0.  Above a minute, the default slow_half_life, the slow
 * baseline moves half-way in one tick, and a downstream's slowdown goes
 * unanswered for that long.  A tick outside (other than 0, unset) is
 * refused by agile_config_validate() and brought to the nearer bound by
 * agile_resolve(). */
#define AGILE_TICK_MIN_NS (10 * AGILE_NS_PER_MS)
#define AGILE_TICK_MAX_NS (60 * AGILE_NS_PER_S)
#define AGILE_DEFAULT_TARGET_INFLATION 1.0
#define AGILE_THROUGHPUT_FIRST_INFLATION 2.5  /* 3.5x baseline */
#define AGILE_DEFAULT_UP_STEP 0.05
#define AGILE_DEFAULT_DOWN_STEP 0.30
#define AGILE_DEFAULT_GAIN 0.5
#define AGILE_DEFAULT_SLOW_START_GAIN 2.0
#define AGILE_DEFAULT_DEADBAND 0.1
#define AGILE_SLO_WINDOW_FRACTION 0.8  /* the SLO window is 0.8 x SLO */
#define AGILE_TAIL_SIGMA 3.0  /* standard errors added to the tolerance */
#define AGILE_OUTAGE_RATIO 2  /* unreachable >= 2 x observed is an outage */
/* The matrix rules' defaults under preset none with an SLO; bench/RESULTS.md
 * has the measurements behind each. */
#define AGILE_DEFAULT_DELIVERED_SHARE 0.92
#define AGILE_DEFAULT_KNEE_RAMP 2.0
#define AGILE_DEFAULT_PROBE_ACCELERATION 2.0
#define AGILE_DEFAULT_GOODPUT_CUT 1.0
#define AGILE_GOODPUT_KEEP_DELIVERED 0.5 /* rule d's cut keeps at least
                                     this share of the answers the tick
                                     delivered */
#define AGILE_GOODPUT_QUEUE_RISE 1.25 /* ... while the tick's p50 is past
                                     this times the last tick's; and rule
                                     d does not cut while it is under the
                                     last tick's divided by this */
#define AGILE_DEFICIT_SHARE 0.04  /* answers lagging (or leading) the grants
                                     by more than this share of them, plus
                                     two answers: a queue growing (draining) */
#define AGILE_ANSWER_RATIO_LOW 0.9   /* answers per grant within which */
#define AGILE_ANSWER_RATIO_HIGH 1.1  /* the delivered rules trust them */
#define AGILE_ANSWER_RATIO_KEEP_LOW 0.8   /* once trusted, until the ratio */
#define AGILE_ANSWER_RATIO_KEEP_HIGH 1.25 /* leaves this wider band */
#define AGILE_ANSWER_RATIO_WEIGHT 0.25 /* EWMA weight of a healthy span */
#define AGILE_BACKLOG_FACTOR 2.0  /* a cut's backlog holds further cuts
                                     for this times the time it needs to
                                     drain: an event loop reads the last
                                     of its answers up to a cycle of its
                                     sockets late */
#define AGILE_BACKLOG_MAX_TICKS 3 /* the longest a cut's backlog holds
                                     further cuts: a knee measured too
                                     high must not hold them for long */
#define AGILE_PROBE_QUIET 0.05   /* rule c probes while the p50 sits
                                     within this share above the
                                     baseline */
#define AGILE_PROBE_MAX_STEP 0.6  /* the largest accelerated step: 5, 10,
                                     20, 40, then 60% a tick find a
                                     capacity that came back threefold in
                                     six ticks (at 20%, eight: issue 15's
                                     5 s); a step past the capacity is cut
                                     by rule a to what was delivered */

/* One repair or rejection found by agile_config_validate(). */
struct agile_problem {
	char field[32];    /* the config field, e.g. "deadband" */
	char message[224]; /* full sentence naming the field and the rule */
};

/*
 * agile_config_validate - report what agile_resolve() would repair silently
 * and what it cannot make sense of, on the configuration as written.
 *
 * Writes at most `cap` problems to `out` (which may be NULL when cap is 0)
 * and returns the total number found, so a caller can size its array.
 */
size_t agile_config_validate(const struct agile_config *config,
                             struct agile_problem *out, size_t cap);

/* ------------------------------------------------------------------------ */
/* Resolved configuration: what a limiter actually runs with                 */
/* ------------------------------------------------------------------------ */

/* Pointer-free and fixed-size: it is stored inside shared limiter state. */
struct agile_resolved {
	uint32_t kind;            /* enum agile_kind */
	uint32_t preset;          /* enum agile_preset as written */
	uint32_t anchor;          /* enum agile_anchor in force (never UNSET) */
	uint32_t anchor_degraded; /* 1: SLO anchor asked for without an SLO */
	double max_rate;
	double min_rate;
	double floor_rate;
	double probe_rate;
	double initial_rate;
	int64_t slo_ns;
	int64_t tick_ns;
	int64_t slow_half_life_ns;
	int64_t slow_down_half_life_ns;
	double tail_factor;
	double tail_tolerance;    /* 0: quantile guard */
	double max_baseline_rise;
	double target_inflation;
	double up_step;
	double down_step;
	double gain;
	double slow_start_gain;
	double deadband;
	double recover_ramp;
	int32_t backoff_ticks;
	int32_t recover_ticks;
	double delivered_share;    /* rule a; 0: off (so are b and c) */
	double knee_ramp;          /* rule b; 0 or 1: off */
	double probe_acceleration; /* rule c; 0 or 1: off */
	double goodput_cut;        /* rule d; 0: off */
};

/*
 * agile_resolve - apply the preset, fill defaults and make the repairs that
 * agile_config_validate() reports.  Returns -EINVAL only when the config
 * cannot be made sense of at all (max_rate <= 0); `out` is then untouched.
 */
int agile_resolve(const struct agile_config *config, enum agile_kind kind,
                  struct agile_resolved *out);

/* Names for printing: "none", "balanced", "latency-first", ... */
const char *agile_preset_name(enum agile_preset preset);
/* "baseline", "slo", or "baseline (slo anchor requested without an slo)". */
const char *agile_resolved_anchor_name(const struct agile_resolved *r);
/* Parse a preset or anchor name; 0 or -EINVAL. */
int agile_preset_parse(const char *name, enum agile_preset *out);
int agile_anchor_parse(const char *name, enum agile_anchor *out);

/*
 * The window as a formula, e.g. "min((1+1.00) x baseline, 0.8 x 200ms)" or
 * "0.8 x 200ms"; and the tail rule, e.g. "200ms (1.0x SLO)" or
 * "off (SLO unset)".  Both snprintf-style: return the length needed.
 */
size_t agile_resolved_window(const struct agile_resolved *r, char *buf,
                             size_t len);
size_t agile_resolved_tail(const struct agile_resolved *r, char *buf,
                           size_t len);
/* The whole configuration as "key: value" lines, or as one JSON object. */
size_t agile_resolved_format(const struct agile_resolved *r, char *buf,
                             size_t len);
size_t agile_resolved_json(const struct agile_resolved *r, char *buf,
                           size_t len);
/* Format a duration with the largest exact-ish unit: "250us", "1.5s". */
size_t agile_duration_format(int64_t ns, char *buf, size_t len);

/*
 * agile_rate_format - a rate in requests per second as plain digits: whole
 * rates as integers ("500"), others with up to 15 significant digits and no
 * exponent ("0.5", "0.1", "0.000277777777777778"), so a slow rate never
 * prints as 0.  Returns what snprintf would.
 */
size_t agile_rate_format(double rate, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Leaky bucket: the rate actuator                                           */
/* ------------------------------------------------------------------------ */

/*
 * Grants are spaced exactly interval_ns apart and never closer, so over any
 * span T at most T / min_interval_ns + 1 grants are planned: the ceiling
 * holds even after an idle spell (no burst credit is kept).
 */
struct agile_bucket {
	int64_t last_ns;         /* planned time of the latest grant */
	int64_t interval_ns;     /* current spacing, 1e9 / rate */
	int64_t min_interval_ns; /* spacing at the ceiling; never undercut */
	uint64_t grants;         /* grants planned since init */
};

/* Start at `rate` (clamped to the ceiling `max_rate`); -EINVAL if either
 * is not positive. */
int agile_bucket_init(struct agile_bucket *b, double rate, double max_rate);
/* Change the rate for the next grant onward; clamped to the ceiling. */
void agile_bucket_set_rate(struct agile_bucket *b, double rate);
/*
 * agile_bucket_set_rate at now_ns, and when the rate rises, the grants
 * planned beyond now_ns + keep_ns (the next tick: those were planned
 * knowing what the last one said) move closer to that point by the same
 * factor: they were spaced at the old rate, and a program whose threads
 * all reserved their grants at a low rate (32 threads at 1 req/s hold
 * grants up to 32 s ahead) would otherwise send at the old rate long after
 * the controller raised it, and new grants queue behind them.  A fall
 * leaves them where they are (they were promised).  Each waiter moves its
 * own grant with agile_bucket_replan.
 */
void agile_bucket_retime(struct agile_bucket *b, double rate, int64_t now_ns,
                         int64_t keep_ns);
/*
 * A waiter's planned grant after the rate rose: planned_ns was spaced at
 * the interval *ref_ns, so its distance beyond now_ns + keep_ns shrinks by
 * the current interval over that one; *ref_ns becomes the current
 * interval.  A waiter that asks later than the retime moved the bucket
 * keeps a grant a little later than the bucket's, never earlier, so the
 * spacing never falls below the new interval.
 */
int64_t agile_bucket_replan(const struct agile_bucket *b, int64_t planned_ns,
                            int64_t *ref_ns, int64_t now_ns, int64_t keep_ns);
/* The current spacing, clamped as a take reads it. */
int64_t agile_bucket_interval_ns(const struct agile_bucket *b);
double agile_bucket_rate(const struct agile_bucket *b);
/* Reserve the next slot; returns its planned send time (>= now_ns). */
int64_t agile_bucket_take(struct agile_bucket *b, int64_t now_ns);
/* Reserve only if the slot is due within max_wait_ns; true and *planned_ns
 * set on success, false and nothing reserved otherwise. */
bool agile_bucket_try_take(struct agile_bucket *b, int64_t now_ns,
                           int64_t max_wait_ns, int64_t *planned_ns);

/* ------------------------------------------------------------------------ */
/* Latency histogram                                                         */
/* ------------------------------------------------------------------------ */

/*
 * Log-linear buckets: values below 2^AGILE_HIST_SUB_BITS ns are exact; above,
 * each power of two is split into 2^AGILE_HIST_SUB_BITS sub-buckets, so a
 * bucket is at most 1/64 = 1.6% of its value wide and the reported midpoint
 * is within 0.8% of any value in it.  Values from 0 to 2^36 ns (68.7 s) are
 * resolved; larger ones land in the last bucket.  16 KiB, no allocation.
 */
#define AGILE_HIST_SUB_BITS 6
#define AGILE_HIST_MAX_EXPONENT 35
#define AGILE_HIST_BUCKETS \
	((AGILE_HIST_MAX_EXPONENT - AGILE_HIST_SUB_BITS + 2) << AGILE_HIST_SUB_BITS)

/* No running total: it would cost every record a second contended atomic
 * add, and the drain sums the counts it takes anyway. */
struct agile_histogram {
	uint64_t counts[AGILE_HIST_BUCKETS];
	uint64_t sum_ns; /* sum of recorded values, for a mean */
};

/* A private copy taken by agile_hist_drain(); never shared. */
struct agile_hist_snapshot {
	uint64_t counts[AGILE_HIST_BUCKETS];
	uint64_t total;  /* sum of counts */
	uint64_t sum_ns;
};

void agile_hist_reset(struct agile_histogram *h);
/* Lock-free, allocation-free; safe from many threads and processes.
 * Negative values record as 0. */
void agile_hist_record(struct agile_histogram *h, int64_t value_ns);
/*
 * Move the current counts into `out` and subtract exactly what was read, so
 * a sample recorded concurrently is counted in this drain or the next one,
 * never lost and never counted twice.
 */
void agile_hist_drain(struct agile_histogram *h, struct agile_hist_snapshot *out);
int agile_hist_index(int64_t value_ns);
int64_t agile_hist_bucket_low(int index);  /* smallest value in the bucket */
int64_t agile_hist_bucket_mid(int index);  /* representative value */
/* The q-quantile (0 < q <= 1): the representative value of the bucket
 * holding the ceil(q x total)-th smallest sample; 0 when empty. */
int64_t agile_hist_quantile(const struct agile_hist_snapshot *s, double q);
/* How many samples lie above threshold_ns (bucket representatives). */
uint64_t agile_hist_count_above(const struct agile_hist_snapshot *s,
                                int64_t threshold_ns);

/* ------------------------------------------------------------------------ */
/* Controller                                                                */
/* ------------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------------ */
/* Limiters                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Hooks passed per call, never stored in (shared) limiter state.
 * classify maps a non-zero error returned by a call to an outcome; NULL
 * means every error is AGILE_REACHED, as in the seed.  now_ns and
 * sleep_until_ns are the clock for the *_do wrappers.
 */
struct agile_hooks {
	enum agile_outcome (*classify)(int error, void *arg);
	int64_t (*now_ns)(void *arg);
	void (*sleep_until_ns)(int64_t when_ns, void *arg);
	void *arg;
};

/* Counters since the limiter was created. */
struct agile_totals {
	uint64_t samples;     /* observations recorded, truncated included */
	uint64_t unreachable;
	uint64_t truncated;   /* truncated observations recorded */
	uint64_t dropped_truncated; /* truncated ones dropped (no evidence) */
	uint64_t aborted;
	uint64_t grants;      /* takes (rate) or admissions (concurrency) */
	uint64_t refused;     /* concurrency: try-takes refused */
};

/* Point-in-time snapshot, the seed's Stats plus totals. */
struct agile_stats {
	double rate;            /* current target (limit for concurrency) */
	int64_t baseline_ns;
	int64_t fast_ns;
	uint64_t samples;       /* last tick */
	int64_t p50_ns;
	int64_t p99_ns;
	double tail_ratio;
	double tail_threshold;
	bool cold_start;
	bool probe_mode;
	double used;
	uint64_t unreachable;   /* last tick */
	uint64_t ticks;
	uint64_t blind_ticks;
	enum agile_action last_action;
	struct agile_totals totals;
	double delivered;       /* answers/s the last tick saw (rate, knobs on) */
	double knee_rate;       /* the learned knee; 0 until a deficit cut */
};

/* The part both limiters share: config, controller, histogram, tick clock. */
struct agile_loop {
	struct agile_resolved config;
	struct agile_controller ctl;
	struct agile_histogram hist;
	int64_t next_tick_ns;       /* tick-if-due: the CAS winner runs a step */
	int64_t last_tick_ns;       /* when the last step ran */
	uint64_t unreachable_tick;  /* drained by subtraction at each step */
	struct agile_totals totals;
	uint64_t answered_tick;     /* answered (not truncated) samples, drained
	                               like unreachable_tick */
};

/* Rate limiter: leaky bucket + controller. */
struct agile_rate_limiter {
	struct agile_loop loop;
	struct agile_bucket bucket;
	uint64_t grants_at_tick; /* bucket.grants when the last step ran */
};

/* -EINVAL when agile_resolve() rejects `config` or config->law is not
 * AGILE_LAW_AGILE. */
int agile_rate_init(struct agile_rate_limiter *l,
                    const struct agile_config *config, int64_t now_ns);
/* Reserve the next send slot; returns the planned send time.  The caller
 * waits until then, and measures the round trip from the actual send. */
int64_t agile_rate_take(struct agile_rate_limiter *l, int64_t now_ns);
bool agile_rate_try_take(struct agile_rate_limiter *l, int64_t now_ns,
                         int64_t max_wait_ns, int64_t *planned_ns);
/* Record one downstream round trip (never including the throttle wait).
 * A sample also ends probe mode. */
void agile_rate_observe(struct agile_rate_limiter *l, int64_t rtt_ns);
/* A call cut short after d_ns: recorded only when d_ns is past the SLO, and
 * never ends probe mode. */
void agile_rate_observe_truncated(struct agile_rate_limiter *l, int64_t d_ns);
/* A call that never reached the downstream. */
void agile_rate_unavailable(struct agile_rate_limiter *l);
/* A call that was aborted by the caller: counted, not a signal. */
void agile_rate_aborted(struct agile_rate_limiter *l);
/* Apply hooks->classify to a non-zero error, then record accordingly. */
void agile_rate_observe_outcome(struct agile_rate_limiter *l, int64_t d_ns,
                                int error, const struct agile_hooks *hooks);
/*
 * Run fn(arg) as one paced downstream call: take a slot, sleep until it
 * (hooks->sleep_until_ns), time fn with hooks->now_ns, and observe the
 * outcome of its return value.  Returns fn's return value.
 */
int agile_rate_do(struct agile_rate_limiter *l,
                  const struct agile_hooks *hooks, int (*fn)(void *),
                  void *fn_arg);
/* Run a control step now.  Exactly one caller should; see tick_if_due. */
void agile_rate_tick(struct agile_rate_limiter *l, int64_t now_ns);
/* Run a step if one is due; exactly one of many concurrent callers wins and
 * gets true.  After an idle spell it runs one step, never a catch-up burst. */
bool agile_rate_tick_if_due(struct agile_rate_limiter *l, int64_t now_ns);
double agile_rate_rate(const struct agile_rate_limiter *l);
void agile_rate_stats(const struct agile_rate_limiter *l,
                      struct agile_stats *out);

/*
 * Concurrency limiter: a semaphore whose limit a law moves, the same
 * controller as the rate limiter's by default (config.law AGILE_LAW_AGILE),
 * or one of adaptx's windowed laws (AIMD, Vegas, Gradient; agile_laws.h).
 *
 * A windowed law runs with the limiter's own bounds and clock: floor_rate,
 * max_rate and initial_rate (in requests in flight) are its min, max and
 * initial limits, tick_ns its sample window, slo_ns (when set) Vegas's
 * target latency; every other option keeps adaptx's documented default.
 * Outcomes reach it as adaptx's release would report them: an observed
 * call is a success with its latency (a latency <= 0 is a skipped sample);
 * a truncated call, an unreachable one and, through observe_outcome, a
 * reached call that returned an error are failures; an aborted call is no
 * signal.  A failure without a duration (unreachable) counts as a failure
 * of the window but gives no latency.  The law reads the calls in flight
 * at the outcome, the call itself included, so observe before release (as
 * agile_conc_do does).  A step (tick) closes the law's window when it is
 * due and runs the law at most once per window; the histogram and the
 * controller stay idle, except that the controller's rate, ticks, samples,
 * used and last action mirror the law's last window for agile_conc_stats.
 */
struct agile_conc_limiter {
	struct agile_loop loop;
	uint64_t in_flight;      /* admitted and not yet released */
	uint64_t limit;          /* floor of the controller's target, or the
	                            windowed law's limit; >= 1 */
	uint64_t peak_in_flight; /* most in flight since the last step */
	struct agile_law law;    /* law.config.kind selects the law; the
	                            windowed law's state, inert for
	                            AGILE_LAW_AGILE */
};

/* -EINVAL when agile_resolve() rejects `config` or config->law is not a
 * known law. */
int agile_conc_init(struct agile_conc_limiter *l,
                    const struct agile_config *config, int64_t now_ns);
/* As agile_conc_init, with a windowed law's tuning: `tuning`'s smoothing,
 * increase_rate, decrease_ratio, utilization, tolerance, warmup_samples,
 * min_latency_decay and jitter (an out-of-range one takes adaptx's default,
 * as agile_law_options_resolve says); its kind, bounds, target and window
 * are config's law, bounds, slo_ns and tick_ns whatever it holds.  NULL is
 * adaptx's defaults, which agile_conc_init uses. */
int agile_conc_init_law(struct agile_conc_limiter *l,
                        const struct agile_config *config,
                        const struct agile_law_options *tuning,
                        int64_t now_ns);
/* Admit if in_flight < limit; never blocks.  Each true needs one release. */
bool agile_conc_try_take(struct agile_conc_limiter *l);
void agile_conc_release(struct agile_conc_limiter *l);
uint64_t agile_conc_limit(const struct agile_conc_limiter *l);
uint64_t agile_conc_in_flight(const struct agile_conc_limiter *l);
void agile_conc_observe(struct agile_conc_limiter *l, int64_t d_ns);
void agile_conc_observe_truncated(struct agile_conc_limiter *l, int64_t d_ns);
void agile_conc_unavailable(struct agile_conc_limiter *l);
void agile_conc_observe_outcome(struct agile_conc_limiter *l, int64_t d_ns,
                                int error, const struct agile_hooks *hooks);
/* Admit, run fn(arg), time it and observe its outcome, release.  Returns
 * AGILE_EOVERLOADED without running fn when the limit is reached. */
int agile_conc_do(struct agile_conc_limiter *l,
                  const struct agile_hooks *hooks, int (*fn)(void *),
                  void *fn_arg);
/* Run a step now (a windowed law: close its window if due). */
void agile_conc_tick(struct agile_conc_limiter *l, int64_t now_ns);
/* Run a step if one is due; exactly one of many concurrent callers wins and
 * gets true.  A windowed law withholds nothing of an increase (no jitter
 * draws): see agile_conc_tick_if_due_jitter. */
bool agile_conc_tick_if_due(struct agile_conc_limiter *l, int64_t now_ns);
/* As agile_conc_tick_if_due, with the two uniform draws a windowed law's
 * jitter takes for this window (NULL: nothing withheld).  The core draws no
 * random numbers; the agile law ignores them. */
bool agile_conc_tick_if_due_jitter(struct agile_conc_limiter *l,
                                   int64_t now_ns,
                                   const struct agile_law_draw *draw);
/* The law in force: an enum agile_law_kind. */
enum agile_law_kind agile_conc_law(const struct agile_conc_limiter *l);
void agile_conc_stats(const struct agile_conc_limiter *l,
                      struct agile_stats *out);

/* ------------------------------------------------------------------------ */
/* Checking a limiter's body                                                 */
/* ------------------------------------------------------------------------ */

/*
 * A limiter's state can live in a file that other processes write (a bug, a
 * hostile program of the same user).  Every function above is total on any
 * bit pattern that state can hold: no overflow, no undefined conversion, no
 * division by zero, and the bucket never spaces grants closer than its
 * min_interval_ns says.  But garbage runs as garbage, so a caller that did
 * not write a body itself checks it with these pure functions before
 * trusting it, and re-initialises one that fails.
 *
 * Each says whether the body is one the core could have written for the
 * resolved configuration `r` (the one the caller expects, normally its own
 * agile_resolve() of the config it would init the limiter with), at `now_ns`
 * on the clock the body was written with.  Returns 0, or -EINVAL with the
 * first problem found in *why (when not NULL): the field, e.g.
 * "bucket.min_interval_ns", and a sentence with the value found and what
 * was expected.  Exact where the core's arithmetic decides (the ceiling's
 * spacing, the configuration byte for byte, flags, enumerations, finite
 * numbers in their ranges); generous where other processes' clocks and
 * queues come in, so that no state the core can reach fails.  Counters
 * (totals, samples, ticks) and histogram counts are any value.
 */

/* The furthest ahead of now a valid bucket plans its latest grant: a queue
 * of waiting callers, and a pause a caller imposes by moving last_ns
 * forward (the preload's Retry-After, at most 999,999,999 s), fit inside
 * it.  About 36.5 years. */
#define AGILE_BUCKET_MAX_AHEAD_NS (INT64_C(1) << 60)
/* How far after the checker's now another process may have stamped a tick:
 * its clock read may be later than the checker's. */
#define AGILE_CLOCK_SLACK_NS (60 * AGILE_NS_PER_S)

/* The bucket of a rate limiter configured as `r`: min_interval_ns exactly
 * the spacing of max_rate, interval_ns between the spacings of max_rate and
 * probe_rate, last_ns not before a fresh bucket's and at most
 * AGILE_BUCKET_MAX_AHEAD_NS after now. */
int agile_bucket_validate(const struct agile_bucket *b,
                          const struct agile_resolved *r, int64_t now_ns,
                          struct agile_problem *why);
/* The same check in two halves, for a caller that checks a bucket before
 * every grant: the spacings configuration `r` allows, worked out once (two
 * divisions and a rounding), then the bucket against them (loads and
 * comparisons).  agile_bucket_validate is the two in a row. */
struct agile_bucket_bounds {
	double max_rate;
	int64_t min_interval_ns; /* max_rate's spacing: the bucket's exactly */
	int64_t max_interval_ns; /* probe_rate's: the longest it may hold */
};
void agile_bucket_bounds(const struct agile_resolved *r,
                         struct agile_bucket_bounds *out);
int agile_bucket_check(const struct agile_bucket *b,
                       const struct agile_bucket_bounds *bounds,
                       int64_t now_ns, struct agile_problem *why);
/* Every double finite and in its range (rate at least 1, latencies in
 * [0, 2^63] ns, tail_ratio in [0, 1], the rest not negative), flags 0 or 1,
 * counts of ticks not negative, last_action an action, padding 0, and the
 * state of a rule the configuration turns off still 0. */
int agile_controller_validate(const struct agile_controller *c,
                              const struct agile_resolved *r,
                              struct agile_problem *why);
/* The whole rate limiter: its stored configuration byte for byte `r`, the
 * next tick at most one tick plus AGILE_CLOCK_SLACK_NS after now and the
 * last at most the slack after it, the controller, the bucket, and
 * grants_at_tick not above the grants made. */
int agile_rate_validate(const struct agile_rate_limiter *l,
                        const struct agile_resolved *r, int64_t now_ns,
                        struct agile_problem *why);

/* Resolved configuration of either limiter. */
static inline const struct agile_resolved *
agile_rate_config(const struct agile_rate_limiter *l)
{
	return &l->loop.config;
}
static inline const struct agile_resolved *
agile_conc_config(const struct agile_conc_limiter *l)
{
	return &l->loop.config;
}

#ifdef __cplusplus
}
#endif

#endif /* AGILE_H */
