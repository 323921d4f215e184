/*
 * agile_limiter.h - the two limiters, a rate limiter (a leaky bucket and
 * the controller) and a concurrency limiter (a semaphore and the
 * controller or a windowed law), and the check of a limiter's body that
 * a process runs on state another process may have written (limiter.c,
 * validate.c).
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_LIMITER_H
#define AGILE_LIMITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agile_bucket.h"
#include "agile_config.h"
#include "agile_controller.h"
#include "agile_histogram.h"
#include "agile_laws.h"
#include "agile_types.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/*
 * The requests a rate limiter's caller should keep in flight at most, by
 * Little's law: `gain` x the rate x the tolerated window (the controller's
 * upper edge, agile_controller_window_ns), rounded up, at least 1 and at
 * most AGILE_INFLIGHT_CAP_MAX.  At the rate the law has set, answers that
 * take the window leave that many outstanding; more than that is a queue
 * at the downstream, which the rate alone lets grow for the ticks the law
 * needs to see it (a capacity drop under 32 kept-alive connections queued
 * 400 ms behind a 1 s tick, bench/RESULTS.md).  So the cap holds a queue
 * to about gain x window between two ticks, and follows the rate as the
 * law moves it.  0 (no cap) while the window is unknown (the baseline
 * anchor before its first sample), for a gain that is not above 0, and for
 * a rate that is not a number above 0 (garbage in shared state).  Pure:
 * the caller counts its own requests in flight (the preload: each process
 * its own, preload/track/inflight.c).
 */
#define AGILE_INFLIGHT_CAP_MAX 1000000u
uint64_t agile_rate_inflight_cap(const struct agile_rate_limiter *l,
                                 double gain);
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
/*
 * A concurrency limiter's baseline probe (agile law, baseline anchor).  Its
 * requests in flight queue behind each other once there are more than the
 * server has workers, so a baseline learned while the limit is above that
 * is a queued latency, and the window, twice it, lets the queue stay: the
 * listener's default started at max/8 served a p50 of 73 ms from workers
 * of 20 ms (bench/RESULTS.md).  So, as Envoy's adaptive concurrency filter
 * measures its minimum RTT, the limit is held at the floor at the start and
 * every interval_ns after, until AGILE_BASELINE_PROBE_SAMPLES answers of
 * requests admitted under it have come back (or AGILE_BASELINE_PROBE_TICKS
 * ticks), and their p50 is the baseline; then the limit set aside returns.
 */
struct agile_baseline_probe {
	int64_t interval_ns; /* 0: off */
	int64_t next_ns;     /* when the next probe starts */
	double saved;        /* the target the running probe set aside */
	uint64_t samples;    /* answers the running probe has measured */
	uint64_t probes;     /* probes completed */
	uint32_t active;     /* 1 while the limit is held at the floor */
	uint32_t ticks;      /* ticks the running probe has lasted */
};

struct agile_conc_limiter {
	struct agile_loop loop;
	uint64_t in_flight;      /* admitted and not yet released */
	uint64_t limit;          /* floor of the controller's target, or the
	                            windowed law's limit; >= 1 */
	uint64_t peak_in_flight; /* most in flight since the last step */
	struct agile_law law;    /* law.config.kind selects the law; the
	                            windowed law's state, inert for
	                            AGILE_LAW_AGILE */
	struct agile_baseline_probe probe; /* AGILE_LAW_AGILE only */
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

#endif /* AGILE_LIMITER_H */
