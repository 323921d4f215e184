/*
 * agile_config.h - a limiter's configuration: as the user wrote it
 * (struct agile_config, its defaults and its validation), as a limiter
 * runs it (struct agile_resolved, from agile_resolve), and its names and
 * text (config.c, config_presets.c, config_names.c, format.c).
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_CONFIG_H
#define AGILE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "agile_laws.h"
#include "agile_types.h"

#ifdef __cplusplus
extern "C" {
#endif

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
	                             x baseline (or, after
	                             AGILE_PROBE_PATIENCE, flat), each step in
	                             a row this times the last, up to
	                             AGILE_PROBE_MAX_STEP; 1 = off; 2 */
	double goodput_cut;       /* d: a second guard cut in a row keeps at most
	                             this x the share of the tick's answers
	                             inside the tail target, and a tick within
	                             the tolerance does not cut on the
	                             smoothing's memory; 1 */
	uint32_t rules_off;       /* AGILE_RULE_* bits: each rule named is off
	                             whatever the preset and its knob say */
	int64_t baseline_probe_ns; /* a concurrency limiter on the agile law
	                              under the baseline anchor: at its start
	                              and every this long after, the limit is
	                              held at the floor until
	                              AGILE_BASELINE_PROBE_SAMPLES answers (or
	                              for AGILE_BASELINE_PROBE_TICKS ticks),
	                              and their p50 becomes the baseline;
	                              0 lets the preset decide (every preset
	                              but seed: AGILE_DEFAULT_BASELINE_PROBE_NS),
	                              AGILE_BASELINE_PROBE_OFF (any value
	                              below 0) turns it off */
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

/* The baseline probe (struct agile_config's baseline_probe_ns). */
#define AGILE_BASELINE_PROBE_OFF (-1)
#define AGILE_DEFAULT_BASELINE_PROBE_NS (60 * AGILE_NS_PER_S)
#define AGILE_BASELINE_PROBE_SAMPLES 16 /* answers a probe measures */
#define AGILE_BASELINE_PROBE_TICKS 3    /* the longest a probe runs */

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
#define AGILE_BACKLOG_FALL 0.10  /* a backlog that drains lowers the p50
                                     by this share a tick at least; one
                                     that does not, after a cut from the
                                     rate, is no backlog (rule a) */
#define AGILE_PROBE_QUIET 0.05   /* rule c probes while the p50 sits
                                     within this share above the
                                     baseline */
#define AGILE_PROBE_PATIENCE 8  /* rule c tries one step past the
                                     baseline's quiet band from the eighth
                                     healthy tick in a row on, when its
                                     p50 is within AGILE_PROBE_QUIET of
                                     the tick before's: a capacity that
                                     fell may answer slower unloaded */
#define AGILE_PROBE_FAST_FALL 0.25 /* rule c's fast series: a p50 this
                                     share under the baseline and under
                                     the tick before's (which sat at the
                                     baseline) is a downstream faster than
                                     ever learned, and each step doubles
                                     the rate (knee_ramp) while the p50
                                     stays there */
#define AGILE_PROBE_BACK_RISE 0.10 /* rule c takes back a step whose
                                     tick's p50, past the quiet band, rose
                                     by more than this share over the tick
                                     before's (5% is within the matrix's
                                     noise at a knee, and learned knees too
                                     low) */
#define AGILE_TAKE_BACK_TAIL 0.5 /* rule c's step back stands in for
                                     the tail guard's cut while at most
                                     this share of the tick's answers is
                                     past the tail target (the p50 inside
                                     it: the step's own queue, which the
                                     step back drains; at 0.25 wrk's try
                                     77 -> 85 into 80, its p50 at 49 ms,
                                     was cut 30% to 59.5) */
#define AGILE_PEAK_HALF_LIFE_S 60 /* rule b climbs back toward the
                                     highest knee while the p50 is quiet;
                                     the gap to the knee halves in this
                                     many seconds (at 30 the matrix's
                                     recovery from a low start took 11
                                     ticks, at 120 the diurnal ramp lost
                                     90% in the SLO) */
#define AGILE_PEAK_SHARE 1.5      /* ... and only while the peak knee is
                                     this many times the knee: a capacity
                                     that fell, not the knee's own noise */
#define AGILE_BREAK_TICKS 2       /* an SLO break (rule d) this many
                                     ticks long returns to the peak knee
                                     (rule b after a break) */
#define AGILE_TAIL_OWN_LOAD 0.5   /* a listener's tail guard series that
                                     cut its load to this share ... */
#define AGILE_TAIL_OWN_SHARE 0.75 /* ... and kept this share of its tail
                                     past the target finds the tail not
                                     its load's */
#define AGILE_BREAK_TICKS_MOST 1000 /* where its count stops */
#define AGILE_PROBE_FLAT_STEPS 2 /* rule c's largest step past the quiet
                                     band, in up_steps */
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

#ifdef __cplusplus
}
#endif

#endif /* AGILE_CONFIG_H */
