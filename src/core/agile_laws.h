/*
 * agile_laws.h - the windowed concurrency laws of adaptx (AIMD, Vegas and
 * Gradient), as laws a concurrency limiter can run instead of libagile's own
 * controller.
 *
 * A law owns a concurrency limit and moves it at most once per sample window
 * (1 s by default), never per request.  Completed calls are recorded into the
 * open window; when the caller later reports a time at least one window past
 * the window's start, the window closes and, once warm-up is over and the
 * window holds at least one recorded sample, the law runs exactly once on the
 * window's summary:
 *
 *   AIMD      any failure in the window: limit x decrease_ratio, once.
 *             Otherwise, if the window's peak in-flight reached
 *             ceil(limit x utilization), increase_rate is added to a credit
 *             and the whole part of the credit is added to the limit (0.5
 *             grows the limit by 1 every two such windows).  Otherwise hold.
 *   Vegas     queue = limit x (1 - rtt_min / rtt), rtt the window's mean and
 *             rtt_min the decaying minimum.  alpha = limit x tolerance, times
 *             (1 - rtt_min / target_latency) when the target lies above
 *             rtt_min.  queue < alpha: +1; queue > 2 alpha: x decrease_ratio;
 *             otherwise hold.  Failures do not enter this law.
 *   Gradient  the first window only sets the average (a high opening RTT
 *             cannot grow concurrency before an average exists) and holds.
 *             Later windows fold their mean into the average,
 *             avg = smoothing x rtt + (1 - smoothing) x avg, then: any
 *             failure: x decrease_ratio, once; else g = (rtt - avg) / avg;
 *             g < -tolerance: +2; g <= tolerance: +1; otherwise
 *             x max(1 - g x decrease_ratio, decrease_ratio).
 *
 * Every product is truncated toward zero as adaptx's int() conversion does.
 * An increase is then jittered: a share of it up to `jitter` may be withheld,
 * decided by two uniform draws the caller passes in (the core draws no random
 * numbers).  Finally the limit is clamped to [min_limit, max_limit].
 *
 * Vegas keeps rtt_min honest with a decay: at each window it runs on, the
 * minimum first drifts toward the running average by min_latency_decay, then
 * takes the window's own minimum if that is lower.  The average is the same
 * EMA Gradient uses, seeded with the first window's mean.
 *
 * Warm-up: until warmup_samples samples have been recorded, windows still
 * close and roll, but the law does not run on them and they feed nothing,
 * not even the averages.  The window during which the count is reached is
 * the first one the law runs on, with all of its samples.
 *
 * A zero (or negative) latency marks a skipped sample: it is not recorded at
 * all, so it neither counts toward warm-up, nor toward the window's samples,
 * failures or peak in-flight.  Callers keep their own success/failure totals.
 * A failure that has no latency at all (a call that never reached the
 * downstream, as libagile's concurrency limiter reports one) is recorded by
 * agile_law_record_failure(): it counts as a sample and a failure, but the
 * window's mean and minimum are those of its timed samples only, so it
 * cannot drag Vegas's minimum to nothing.  A window whose samples are all
 * such failures has no latency: AIMD cuts as for any failure, Gradient cuts
 * once it has an average (and holds before), Vegas holds.
 *
 * Like the rest of libagile the laws read no clock, draw no random numbers,
 * allocate nothing and hold no pointers, so a struct agile_law may sit in
 * shared memory.  Recording is lock-free (atomic adds on the open window);
 * closing a window is claimed by one compare-and-swap on its start time, and
 * only that caller runs the law and writes the limit.  Functions return 0 or
 * a negative errno value unless documented otherwise.
 */
#ifndef AGILE_LAWS_H
#define AGILE_LAWS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which law moves a concurrency limit.  AGILE is libagile's own controller
 * (agile.h), which a concurrency limiter runs itself: a struct agile_law of
 * that kind holds no windowed state and its record/advance calls do nothing.
 * Any value outside the enumeration behaves as AIMD, as in adaptx. */
enum agile_law_kind {
	AGILE_LAW_AGILE = 0, /* the core controller: latency-driven, per tick */
	AGILE_LAW_AIMD,      /* adaptx AIMD: failures shrink, busy windows grow */
	AGILE_LAW_VEGAS,     /* adaptx Vegas: queue estimate from RTT vs RTT_min */
	AGILE_LAW_GRADIENT,  /* adaptx Gradient: window mean vs its own EMA */
	AGILE_LAW_COUNT
};

/* adaptx's documented defaults (the seed's Configuration table). */
#define AGILE_LAW_DEFAULT_KIND AGILE_LAW_AIMD       /* WithAlgorithm */
#define AGILE_LAW_DEFAULT_INITIAL_LIMIT 10           /* WithInitialLimit */
#define AGILE_LAW_DEFAULT_MIN_LIMIT 1                /* WithMinLimit */
#define AGILE_LAW_DEFAULT_MAX_LIMIT 1000             /* WithMaxLimit */
#define AGILE_LAW_DEFAULT_SMOOTHING 0.2              /* WithSmoothing */
#define AGILE_LAW_DEFAULT_INCREASE_RATE 1.0          /* WithIncreaseRate */
#define AGILE_LAW_DEFAULT_DECREASE_RATIO 0.5         /* WithDecreaseRatio */
#define AGILE_LAW_DEFAULT_UTILIZATION 0.9            /* WithUtilization */
#define AGILE_LAW_DEFAULT_TARGET_LATENCY_NS INT64_C(100000000) /* 100 ms */
#define AGILE_LAW_DEFAULT_TOLERANCE 0.1              /* WithTolerance */
#define AGILE_LAW_DEFAULT_SAMPLE_WINDOW_NS INT64_C(1000000000) /* 1 s */
#define AGILE_LAW_DEFAULT_WARMUP_SAMPLES 10          /* WithWarmupSamples */
#define AGILE_LAW_DEFAULT_MIN_LATENCY_DECAY 0.001    /* WithMinLatencyDecay */
#define AGILE_LAW_DEFAULT_JITTER 0.1                 /* WithJitter */

/* Fixed constants of the laws, not options in adaptx either. */
#define AGILE_LAW_JITTER_COIN 0.5     /* chance a jittered share is withheld */
#define AGILE_LAW_VEGAS_BACKOFF_BAND 2.0 /* Vegas backs off above 2 x alpha */
#define AGILE_LAW_GRADIENT_FAST_STEP 2   /* Gradient's step well below avg */

/*
 * The options of a law, adaptx's Option list as plain fields.  Start from
 * agile_law_options_init() (the defaults) and change fields with the setters
 * below, which ignore an out-of-range value exactly as adaptx's With* options
 * do.  agile_law_options_resolve() then enforces the cross-field rules; the
 * init functions call it, so fields written directly are made safe too (an
 * out-of-range field falls back to its default there).
 */
struct agile_law_options {
	uint32_t kind;              /* enum agile_law_kind; unknown: AIMD */
	uint32_t pad;
	int64_t initial_limit;      /* start; clamped into [min, max] */
	int64_t min_limit;          /* floor; floored to 1 */
	int64_t max_limit;          /* ceiling and hard cap; raised to min */
	int64_t target_latency_ns;  /* Vegas operating point; > 0 */
	int64_t sample_window_ns;   /* one adjustment per window; > 0 */
	int64_t warmup_samples;     /* recorded samples before any adjustment */
	double smoothing;           /* EMA weight of a window mean, (0, 1] */
	double increase_rate;       /* AIMD credit per eligible window, > 0 */
	double decrease_ratio;      /* multiplicative backoff, (0, 1) */
	double utilization;         /* AIMD gate: peak >= ceil(limit x this),
	                               (0, 1] */
	double tolerance;           /* Vegas/Gradient band, (0, 1] */
	double min_latency_decay;   /* RTT_min drift toward avg, [0, 1] */
	double jitter;              /* share of an increase that may be withheld,
	                               [0, 1] */
};

/* Fill `o` with adaptx's defaults (kind AIMD). */
void agile_law_options_init(struct agile_law_options *o);

/*
 * Setters: each applies the value and returns 0, or leaves the field as it
 * was and returns -EINVAL when the value is outside the range adaptx accepts
 * (NaN and infinities are outside every range).  The kind setter is the
 * exception: an unknown kind selects AIMD and returns -EINVAL.
 */
int agile_law_set_kind(struct agile_law_options *o, int kind);
int agile_law_set_initial_limit(struct agile_law_options *o, int64_t n); /* > 0 */
int agile_law_set_min_limit(struct agile_law_options *o, int64_t n);     /* > 0 */
int agile_law_set_max_limit(struct agile_law_options *o, int64_t n);     /* > 0 */
int agile_law_set_smoothing(struct agile_law_options *o, double f);  /* (0,1] */
int agile_law_set_increase_rate(struct agile_law_options *o, double r); /* > 0 */
int agile_law_set_decrease_ratio(struct agile_law_options *o, double r); /* (0,1) */
int agile_law_set_utilization(struct agile_law_options *o, double f); /* (0,1] */
int agile_law_set_target_latency_ns(struct agile_law_options *o, int64_t ns);
int agile_law_set_tolerance(struct agile_law_options *o, double f);  /* (0,1] */
int agile_law_set_sample_window_ns(struct agile_law_options *o, int64_t ns);
int agile_law_set_warmup_samples(struct agile_law_options *o, int64_t n); /* >= 0 */
int agile_law_set_min_latency_decay(struct agile_law_options *o, double f); /* [0,1] */
int agile_law_set_jitter(struct agile_law_options *o, double f);     /* [0,1] */

/*
 * Enforce what adaptx's New enforces, in its order: any field outside its
 * range takes its default, an unknown kind becomes AIMD, min_limit is floored
 * to 1, max_limit is raised to min_limit, and initial_limit is clamped into
 * [min_limit, max_limit].  Idempotent.
 */
void agile_law_options_resolve(struct agile_law_options *o);

/* "agile", "aimd", "vegas" or "gradient"; an unknown kind names the law it
 * behaves as, "aimd". */
const char *agile_law_name(int kind);
/* Parse one of the names above (ASCII case ignored); 0 or -EINVAL, and *out
 * untouched on error. */
int agile_law_parse(const char *name, enum agile_law_kind *out);

/* ------------------------------------------------------------------------ */
/* One law, one window at a time                                             */
/* ------------------------------------------------------------------------ */

/* What a law sees of one closed window. */
struct agile_law_summary {
	uint64_t samples;        /* recorded samples (skipped ones excluded) */
	uint64_t failures;       /* of those, how many failed */
	uint64_t peak_in_flight; /* most in flight at any recorded release */
	double mean_ns;          /* mean latency of the timed samples; 0 when
	                            there are none */
	int64_t min_ns;          /* smallest of them; 0 when there are none */
	uint64_t timed;          /* samples with a latency: all but those of
	                            agile_law_record_failure() */
};

/* The jitter draws for one adjustment, each uniform in [0, 1): `amount`
 * scales the share withheld, `coin` below AGILE_LAW_JITTER_COIN withholds it.
 * Values outside [0, 1] are clamped; a NULL draw withholds nothing. */
struct agile_law_draw {
	double amount;
	double coin;
};

/* The per-law state: each is pure data, zeroed to start. */
struct agile_aimd {
	double credit;  /* fractional increase not yet applied, in [0, 1) */
};

struct agile_vegas {
	double avg_ns;  /* EMA of window means; 0 until the first window */
	double min_ns;  /* decaying RTT minimum; 0 until the first window */
};

struct agile_gradient {
	double avg_ns;  /* EMA of window means; 0 until the first window */
};

/*
 * The pure step of each law: given the limit in force and the closed
 * window's summary (with samples > 0), update the law's estimators and
 * return the limit it proposes, before jitter and clamp.  Exposed so each
 * rule can be checked on its own; agile_law_advance() is what limiters call.
 */
int64_t agile_aimd_step(struct agile_aimd *s, const struct agile_law_options *o,
                        int64_t limit, const struct agile_law_summary *w);
int64_t agile_vegas_step(struct agile_vegas *s,
                         const struct agile_law_options *o, int64_t limit,
                         const struct agile_law_summary *w);
int64_t agile_gradient_step(struct agile_gradient *s,
                            const struct agile_law_options *o, int64_t limit,
                            const struct agile_law_summary *w);
/* Withhold part of an increase from `old` to `next` as the draws say;
 * returns `next` unchanged for a hold or a decrease. */
int64_t agile_law_jitter(const struct agile_law_options *o, int64_t old,
                         int64_t next, const struct agile_law_draw *draw);

/* The open window: atomically accumulated by agile_law_record(). */
struct agile_law_window {
	int64_t start_ns;        /* when it opened; CAS-claimed to close it */
	uint64_t samples;
	uint64_t failures;
	uint64_t peak_in_flight;
	int64_t sum_ns;          /* sum of recorded latencies */
	int64_t min_ns;          /* INT64_MAX while empty */
	uint64_t timed;          /* samples that brought a latency */
};

/* What closing a window did. */
enum agile_law_result {
	AGILE_LAW_NOT_DUE = 0, /* the window is still open (or lost the claim) */
	AGILE_LAW_WARMING,     /* closed before warm-up ended: rolled, no law */
	AGILE_LAW_EMPTY,       /* closed without a recorded sample: rolled */
	AGILE_LAW_HELD,        /* the law ran and kept the limit */
	AGILE_LAW_INCREASED,   /* the law ran and raised the limit */
	AGILE_LAW_DECREASED    /* the law ran and lowered the limit */
};

/* A law and its limit: the tagged union, `config.kind` being the tag. */
struct agile_law {
	struct agile_law_options config; /* resolved */
	int64_t limit;           /* live limit, in [min_limit, max_limit] */
	uint64_t seen;           /* recorded samples since init or reset */
	uint64_t windows;        /* windows closed */
	uint64_t adjustments;    /* windows the law ran on */
	uint64_t increases;      /* adjustments that raised the limit */
	uint64_t decreases;      /* adjustments that lowered it */
	struct agile_law_window window;
	union {
		struct agile_aimd aimd;
		struct agile_vegas vegas;
		struct agile_gradient gradient;
	} state;
};

/* What agile_law_advance() reports besides its result. */
struct agile_law_change {
	int64_t old_limit;
	int64_t new_limit;
	struct agile_law_summary summary; /* the closed window */
};

/* Resolve a copy of `o` (NULL: defaults) and start at its initial limit with
 * a window opening at now_ns. */
int agile_law_init(struct agile_law *law, const struct agile_law_options *o,
                   int64_t now_ns);
/*
 * Back to the initial limit, raised to `in_flight` when more calls than
 * that are still in flight; clears the estimators, the credit, the warm-up
 * count, the counters and the open window (which reopens at now_ns).
 */
void agile_law_reset(struct agile_law *law, int64_t now_ns, int64_t in_flight);

/*
 * Record one completed call into the open window.  `in_flight` is the count
 * in flight as the call completes, itself included; the window keeps the
 * largest.  A latency <= 0 is a skipped sample: nothing is recorded and false
 * is returned.  Lock-free.
 */
bool agile_law_record(struct agile_law *law, bool success, int64_t latency_ns,
                      uint64_t in_flight);

/*
 * Record one failed call that has no latency (it never reached the
 * downstream): a sample and a failure of the open window, and a step of
 * warm-up, that leaves the window's latencies alone.  `in_flight` as for
 * agile_law_record().  False, and nothing recorded, for AGILE_LAW_AGILE.
 * Lock-free.
 */
bool agile_law_record_failure(struct agile_law *law, uint64_t in_flight);

/* True when now_ns is at least one sample window past the window's start. */
bool agile_law_due(const struct agile_law *law, int64_t now_ns);

/*
 * Close the open window if it is due, and run the law on it once (after
 * warm-up, with at least one recorded sample).  The new window opens at
 * now_ns: after an idle spell one window closes, never a burst.  Of many
 * concurrent callers exactly one closes a due window.  `draw` feeds the
 * jitter (NULL: nothing withheld); `change` (may be NULL) receives the old and
 * new limits and the window's summary.
 */
enum agile_law_result agile_law_advance(struct agile_law *law, int64_t now_ns,
                                        const struct agile_law_draw *draw,
                                        struct agile_law_change *change);

/* The live limit (an atomic read). */
int64_t agile_law_limit(const struct agile_law *law);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_LAWS_H */
