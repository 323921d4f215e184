/*
 * agile_resilience.h - clock-free resilience primitives of libagile: a
 * rolling window, a probabilistic (SRE-style) circuit breaker, a CPU-aware
 * load shedder, three quota counters (token bucket, exact sliding window,
 * period quota), a concurrency gate, a retry backoff and a deadline.
 *
 * Each makes one narrow decision about a call (admit it, refuse it, or say
 * how long to hold it back), and all of them keep the rules of agile.h:
 *
 *  - Nothing reads a clock.  Every call that depends on time takes `now_ns`,
 *    the caller's monotonic (or, where documented, wall) clock in
 *    nanoseconds; a test simulates hours of load by stepping an integer.
 *  - Nothing draws a random number.  Where a decision is a roll, the caller
 *    passes a draw from [0, 1); the same draw gives the same answer.
 *  - State structs hold no pointers and allocate nothing, so any of them can
 *    sit in a shared-memory file.  Variable-size storage is either a fixed
 *    array inside the struct (the rolling window's buckets, bounded by
 *    AGILE_ROLLING_MAX_BUCKETS) or a flexible array member the caller sizes
 *    (the exact sliding window's stamps, AGILE_SLIDING_WINDOW_BYTES).
 *
 * Apart from the gate, which is lock-free, these structs are not
 * synchronised: a caller sharing one between threads or processes serialises
 * the calls on it (a mutex, or a process-shared lock next to it).
 *
 * Functions return 0 or a negative errno value unless documented otherwise.
 * Nothing here prints.
 */
#ifndef AGILE_RESILIENCE_H
#define AGILE_RESILIENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Rolling window                                                            */
/* ------------------------------------------------------------------------ */

/*
 * A rolling window is `size` buckets that together cover the last
 * `window_ns` of time; each bucket covers width_ns = window_ns / size.  The
 * bucket type belongs to the caller (the breaker keeps a tally of outcomes,
 * the shedder a latency total): this struct only keeps the time bookkeeping,
 * and every call that touches buckets takes the caller's array and the size
 * of one element.  The array must hold at least `size` elements; the breaker
 * and the shedder embed arrays of AGILE_ROLLING_MAX_BUCKETS.
 *
 * Time only moves when a call says so.  Writing (agile_rolling_slot) at a
 * later now zeroes every bucket the elapsed gap passed over and moves the
 * head there, its start rounded down to a bucket boundary: bucket edges stay
 * on one fixed grid whatever the timing of individual writes.  Reading
 * (agile_rolling_live, agile_rolling_each) at a later now leaves those stale
 * buckets out but does not zero them.  Reads therefore never modify the
 * window, repeated reads at one instant return the same buckets, and old
 * data expires even when nothing is being recorded.
 *
 * A now earlier than the head bucket's start is treated as falling in the
 * head bucket: a clock that steps back neither clears nor skips anything.
 */
#define AGILE_ROLLING_MAX_BUCKETS 128

struct agile_rolling {
	int64_t width_ns; /* time one bucket covers; at least 1 ns */
	int64_t start_ns; /* start of the head bucket, on a bucket boundary */
	int32_t size;     /* buckets, 1 .. AGILE_ROLLING_MAX_BUCKETS */
	int32_t head;     /* index of the bucket written last */
};

/*
 * Open an empty window of `size` buckets spanning `window_ns`, its first
 * bucket starting at now_ns, and zero the first `size` elements of
 * `buckets`.  A size under one is raised to one and a bucket narrower than a
 * nanosecond is widened to one; a size above AGILE_ROLLING_MAX_BUCKETS is
 * -EINVAL.
 */
int agile_rolling_init(struct agile_rolling *w, int32_t size,
                       int64_t window_ns, int64_t now_ns, void *buckets,
                       size_t bucket_size);

/*
 * The index of the bucket now_ns falls in, for the caller to add to.  The
 * buckets swept past since the last write are zeroed first (all of them
 * when the gap is a whole window or more).  O(buckets swept).
 */
int32_t agile_rolling_slot(struct agile_rolling *w, int64_t now_ns,
                           void *buckets, size_t bucket_size);

/*
 * The buckets still inside the window at now_ns, oldest first: returns how
 * many there are and sets *oldest to the index of the first, the rest
 * following at (oldest + i) % size.  With `current` false the bucket now_ns
 * falls in is excluded: its interval is still running, so a maximum or a
 * minimum taken over buckets would otherwise weigh an incomplete bucket
 * against complete ones.  Writes nothing.
 */
int32_t agile_rolling_live(const struct agile_rolling *w, int64_t now_ns,
                           bool current, int32_t *oldest);

/* Call visit(bucket, arg) once per bucket agile_rolling_live reports, oldest
 * first. */
void agile_rolling_each(const struct agile_rolling *w, int64_t now_ns,
                        bool current, const void *buckets, size_t bucket_size,
                        void (*visit)(const void *bucket, void *arg),
                        void *arg);

/* ------------------------------------------------------------------------ */
/* SRE breaker: client-side throttling                                       */
/* ------------------------------------------------------------------------ */

/*
 * This breaker is not a three-state machine.  It counts outcomes in a
 * rolling window and turns away each call with a probability that rises as
 * failures accumulate.  A degraded backend thus goes on receiving the share
 * of traffic it can still handle, rather than being switched off entirely
 * and then hit by the whole load at once when it comes back.
 *
 * Over the buckets live at now (the current one included), with `accepts`
 * successes out of `total` calls (refusals included), `failing` the run of
 * buckets at the newest end that saw failures and no success, and `working`
 * the run there that saw successes and no failure (buckets with neither
 * leave both runs as they are):
 *
 *     w     = max(k - (k - floor) * failing / size, floor)
 *     drop  = (total - protection - w * accepts) / (total + 1)
 *     drop *= (size - working) / size
 *
 * A drop at or below zero (before the scaling) lets everything through: the
 * whole healthy case.  Otherwise, once `probe_ns` has passed with nothing let
 * through, one call is let through whatever the roll; failing that, the call
 * is refused when the caller's roll falls under the scaled drop.
 */
struct agile_sre {
	double k;          /* weight of one success in calls; at 1.5 nothing is
	                      refused while under a third of calls fail */
	double floor;      /* lowest value k decays to in an outage; 1.1 */
	double protection; /* calls admitted before any refusal; 5 */
	int64_t probe_ns;  /* quiet spell before one call goes through; 1 s */
	int64_t window_ns; /* history kept; 10 s */
	int32_t size;      /* buckets in that history; 40 (250 ms each) */
	int32_t pad;
};

/* The preset, as an initializer; to vary it, start from it and assign:
 *     struct agile_sre sre = AGILE_SRE_PRESET;  sre.k = 2.0; */
#define AGILE_SRE_PRESET                                                   \
	{ .k = 1.5, .floor = 1.1, .protection = 5.0,                        \
	  .probe_ns = AGILE_NS_PER_S, .window_ns = 10 * AGILE_NS_PER_S,     \
	  .size = 40, .pad = 0 }

/* Outcomes counted in one bucket.  Refused calls are part of total: a
 * bucket in which the breaker turned traffic away has seen traffic, and must
 * not look like a quiet one. */
struct agile_tally {
	int64_t total;
	int64_t success;
	int64_t failure;
	int64_t drop; /* refused before it ran: traffic, not an outcome */
};

struct agile_breaker {
	struct agile_sre sre;
	struct agile_rolling window;
	int64_t last_pass_ns; /* when a call was last let through */
	uint32_t has_passed;  /* 1 once any call was let through */
	uint32_t pad;
	struct agile_tally tallies[AGILE_ROLLING_MAX_BUCKETS];
};

/* A call the breaker admitted.  It is settled by one call to either
 * agile_breaker_pass or agile_breaker_fail, never both; nothing about it
 * reaches the window before that. */
struct agile_breaker_call {
	int64_t allowed_ns;
	uint32_t open; /* 1 between a successful allow and its settlement */
	uint32_t pad;
};

/* What the breaker reads from its window at one instant. */
struct agile_breaker_reading {
	int64_t total;   /* calls in the window, refusals included */
	int64_t accepts; /* successes */
	int32_t failing; /* run of failing buckets at the newest end */
	int32_t working; /* run of working buckets at the newest end */
	double weight;   /* w: k decayed by the failing run */
	double drop;     /* refusal fraction after scaling; 0 when healthy */
};

/*
 * A breaker with an empty window opening at now_ns.  `sre` NULL means the
 * preset.  -EINVAL when k, floor or protection is negative or not finite,
 * probe_ns is negative, or size exceeds AGILE_ROLLING_MAX_BUCKETS (a size
 * under one is raised to one).
 */
int agile_breaker_init(struct agile_breaker *b, const struct agile_sre *sre,
                       int64_t now_ns);

/*
 * Ask to make one call at now_ns with `roll`, a draw from [0, 1).  True
 * admits the call: *call is opened, to be settled when the call is over.
 * False refuses it; the refusal is counted in the window as a drop (so the
 * traffic it turned away keeps the throttle in force rather than letting
 * the window look empty), and *call stays closed.
 */
bool agile_breaker_allow(struct agile_breaker *b, int64_t now_ns,
                         double roll, struct agile_breaker_call *call);

/* Settle an open call as a success or a failure finishing at now_ns.
 * -EALREADY, recording nothing, when the call is not open (settled before,
 * or refused). */
int agile_breaker_pass(struct agile_breaker *b,
                       struct agile_breaker_call *call, int64_t now_ns);
int agile_breaker_fail(struct agile_breaker *b,
                       struct agile_breaker_call *call, int64_t now_ns);

/* The share of calls the breaker would turn away at now_ns; zero when the
 * window is healthy.  It ignores the probe, so it reports the steady
 * throttle level, the figure to graph or alert on. */
double agile_breaker_ratio(const struct agile_breaker *b, int64_t now_ns);

/* Everything the formula reads at now_ns, for dashboards and tests. */
void agile_breaker_read(const struct agile_breaker *b, int64_t now_ns,
                        struct agile_breaker_reading *out);

/* ------------------------------------------------------------------------ */
/* CPU-aware load shedder                                                    */
/* ------------------------------------------------------------------------ */

/*
 * The shedder refuses a call only when the server is both hot and full:
 *
 *  - hot: the CPU (thousandths, read by the caller) reads `cpu` or more, or
 *    it did less than `cool_ns` ago and a refusal has happened since;
 *  - full: both the moving average and the current count of calls in flight
 *    exceed the capacity
 *
 *        max(1, busiest * fastest_ns / width_ns) * factor
 *        factor = clamp((1000 - cpu_now) / (1000 - cpu), floor, 1)
 *
 *    where `busiest` is the most passes any whole bucket saw (at least one)
 *    and `fastest_ns` the lowest mean response time of any whole bucket
 *    (`latency_ns` while no bucket has one).  busiest / width_ns is passes
 *    per nanosecond, so the product is how many calls the server has shown
 *    it can finish within one response time.
 *
 * The moving average is updated when a call finishes, with the count left
 * in flight: average = beta * average + (1 - beta) * flying.  Both
 * conditions are required: high CPU use alone, with little in flight, is
 * not overload, and many calls in flight on a CPU with headroom are not
 * either.
 */
struct agile_shed {
	int64_t window_ns;  /* history kept; 5 s */
	int64_t latency_ns; /* response time assumed while none is known; 1 s */
	int64_t cool_ns;    /* how long the server stays hot; 1 s */
	double beta;        /* weight of the old in-flight average; 0.9 */
	double floor;       /* least share of capacity admitted; 0.1 */
	int32_t size;       /* buckets in the history; 50 (100 ms each) */
	int32_t cpu;        /* hot at or over this, in thousandths; 900 */
};

#define AGILE_SHED_PRESET                                                  \
	{ .window_ns = 5 * AGILE_NS_PER_S, .latency_ns = AGILE_NS_PER_S,    \
	  .cool_ns = AGILE_NS_PER_S, .beta = 0.9, .floor = 0.1, .size = 50, \
	  .cpu = 900 }

/* A sum and how many values went into it: a mean once count is positive. */
struct agile_total {
	int64_t sum;
	int64_t count;
};

struct agile_shedder {
	struct agile_shed shed;
	/* One window serves both readings, busiest passes and fastest mean,
	 * because only a pass writes to it and every pass writes both: a
	 * bucket's count is its passes and its sum their response times. */
	struct agile_rolling window;
	int64_t flying;   /* calls let through and not yet settled */
	double average;   /* moving average of `flying` */
	int64_t hot_ns;   /* the last allow that found the CPU hot */
	uint32_t was_hot; /* 1 once hot_ns is set */
	uint32_t dropped; /* 1 when the shedder refused since it was hot */
	struct agile_total latencies[AGILE_ROLLING_MAX_BUCKETS];
};

/* A call the shedder admitted; settled by one pass or one fail. */
struct agile_shedder_ticket {
	int64_t start_ns;
	uint32_t open;
	uint32_t pad;
};

/* What the shedder reads at one instant, for dashboards and tests. */
struct agile_shedder_reading {
	int64_t busiest;    /* passes of the busiest whole bucket, >= 1 */
	double fastest_ns;  /* lowest whole-bucket mean, or latency_ns */
	double capacity;    /* max(1, busiest * fastest / width), unscaled */
	double factor;      /* CPU scaling in [floor, 1] */
	double average;
	int64_t flying;
	bool hot;
};

/* -EINVAL when cpu is outside [0, 999] (the factor divides by 1000 - cpu),
 * beta or floor is outside [0, 1], a duration is negative, or size exceeds
 * AGILE_ROLLING_MAX_BUCKETS.  `shed` NULL means the preset. */
int agile_shedder_init(struct agile_shedder *s, const struct agile_shed *shed,
                       int64_t now_ns);
/* Ask to start one call at now_ns with the CPU at cpu_permille.  True opens
 * *ticket; the caller settles it when the call has finished. */
bool agile_shedder_allow(struct agile_shedder *s, int64_t now_ns,
                         int32_t cpu_permille,
                         struct agile_shedder_ticket *ticket);
/* The call succeeded, finishing at now_ns: it stops counting as in
 * flight, and its response time and the pass feed the capacity estimate. */
int agile_shedder_pass(struct agile_shedder *s,
                       struct agile_shedder_ticket *ticket, int64_t now_ns);
/* The call failed: it stops counting as in flight; a failure is no
 * evidence of capacity, so nothing else is recorded.  Both return
 * -EALREADY, changing nothing, for a ticket that is not open. */
int agile_shedder_fail(struct agile_shedder *s,
                       struct agile_shedder_ticket *ticket);
int64_t agile_shedder_flying(const struct agile_shedder *s);
/* `hot` in the reading is the hot test as allow would make it at now_ns
 * with cpu_permille, without recording anything. */
void agile_shedder_read(const struct agile_shedder *s, int64_t now_ns,
                        int32_t cpu_permille,
                        struct agile_shedder_reading *out);

/* ------------------------------------------------------------------------ */
/* Token bucket                                                              */
/* ------------------------------------------------------------------------ */

/*
 * rate_per_s tokens accrue per second up to `burst`; a call costs n tokens.
 * Credit saved while a client is quiet can be spent at once, so occasional
 * bursts from an otherwise light user are not refused.  The pacing leaky
 * bucket of agile.h (struct agile_bucket) deliberately saves no credit.
 *
 * Tokens are kept as integer units of 1e-9 token, so with an integer rate on
 * an integer-nanosecond clock every refill is exact and a test can count
 * tokens without a tolerance.
 */
#define AGILE_TOKEN_UNITS INT64_C(1000000000) /* units per token */

struct agile_token_bucket {
	double rate_per_s;    /* tokens accrued per second, >= 0 */
	int64_t burst_units;  /* the most the bucket holds */
	int64_t tokens_units; /* held at at_ns */
	int64_t at_ns;        /* when tokens_units was last brought up to date */
};

/*
 * A bucket that starts full at now_ns.  A burst of zero or less (or NaN)
 * means the rate, and any burst under one is raised to one: a bucket that
 * can never hold a whole token would refuse everything.  -EINVAL for a
 * negative, NaN or infinite rate, or a burst above INT64_MAX units.
 */
int agile_token_bucket_init(struct agile_token_bucket *b, double rate_per_s,
                            double burst, int64_t now_ns);
/* Whether n tokens are available at now_ns, taking them if so.  n of zero is
 * always available; a negative or NaN n is refused. */
bool agile_token_bucket_take(struct agile_token_bucket *b, int64_t now_ns,
                             double n);
/* How long until n tokens are available, without taking them: 0 when they
 * are there now, INT64_MAX when they never will be (n above the burst, or a
 * zero rate).  A take at now_ns plus this wait succeeds, barring other
 * takes, which is what a sleep or a Retry-After is computed from. */
int64_t agile_token_bucket_next(const struct agile_token_bucket *b,
                                int64_t now_ns, double n);
/* The tokens held at now_ns. */
double agile_token_bucket_tokens(const struct agile_token_bucket *b,
                                 int64_t now_ns);

/* ------------------------------------------------------------------------ */
/* Exact sliding window                                                      */
/* ------------------------------------------------------------------------ */

/*
 * At most `quota` events in any window_ns-long stretch: an event at s still
 * counts at now while now - s < window_ns.  This is the shape of a limit
 * like "1000 per day": a token bucket refilled at 1000/86400 per second with
 * a burst of 1000 would admit all of them in a few seconds and then keep
 * admitting more through the day.
 *
 * Every admitted event's time is stored until it leaves the window, so the
 * count is exact; no interpolation between fixed windows is involved.  They live in a
 * flexible array member with room for `quota` stamps: allocate
 * AGILE_SLIDING_WINDOW_BYTES(quota) bytes (suitably aligned, e.g. malloc or
 * a slot of a shared-memory file) and pass the same quota to init.
 */
struct agile_sliding_window {
	int64_t window_ns; /* at least 1 ns */
	int32_t quota;     /* events allowed, and the stamps' capacity */
	int32_t oldest;    /* index of the oldest stamp kept */
	int32_t count;     /* stamps kept, oldest first in a ring */
	int32_t pad;
	int64_t stamps[];
};

#define AGILE_SLIDING_WINDOW_BYTES(quota) \
	(sizeof(struct agile_sliding_window) + (size_t)(quota) * sizeof(int64_t))

/* An empty window.  A window under a nanosecond is raised to one.  -EINVAL
 * for a negative quota. */
int agile_sliding_window_init(struct agile_sliding_window *w, int32_t quota,
                              int64_t window_ns);
/* Whether an event at now_ns is within the quota, counting it if so. */
bool agile_sliding_window_take(struct agile_sliding_window *w, int64_t now_ns);
/* How many events remain in the window ending at now_ns. */
int32_t agile_sliding_window_left(const struct agile_sliding_window *w,
                                  int64_t now_ns);
/* How long until the window has room: 0 when it has room now, otherwise
 * the time left before its oldest stamp expires; INT64_MAX for a quota of
 * zero. */
int64_t agile_sliding_window_next(const struct agile_sliding_window *w,
                                  int64_t now_ns);

/* ------------------------------------------------------------------------ */
/* Period quota                                                              */
/* ------------------------------------------------------------------------ */

/*
 * A fixed-window counter: at most `quota` events per period, the count
 * starting again when a period ends.  It costs a few integers where the
 * sliding window stores every stamp, at a price: up to twice the quota can
 * pass within one period's length when it spans a period boundary.
 *
 * Without `align`, a new period begins with the first event that arrives
 * after the previous one has ended.  With it, periods are the fixed
 * intervals [m * period_ns, (m + 1) * period_ns) of the caller's clock; fed
 * Unix time, a one-day period then rolls over at 00:00 UTC.
 */
enum agile_quota_state {
	AGILE_QUOTA_UNDER = 0, /* admitted, and more may follow */
	AGILE_QUOTA_HIT,       /* admitted, and it was the last one */
	AGILE_QUOTA_OVER       /* refused */
};

struct agile_period_quota {
	int64_t period_ns; /* at least 1 ns */
	int64_t start_ns;  /* start of the open period */
	int32_t quota;
	int32_t count;     /* events admitted in the open period */
	uint32_t align;    /* 1: periods start on multiples of period_ns */
	uint32_t open;     /* 1 once a period has been opened */
};

/* A counter no event has touched.  A period under a nanosecond is raised to
 * one.  -EINVAL for a negative quota. */
int agile_period_quota_init(struct agile_period_quota *q, int32_t quota,
                            int64_t period_ns, bool align);
/* Count one event at now_ns and say where the quota stands.  UNDER and HIT
 * both admit the event; HIT marks the one that used the last unit, which
 * lets a caller warn before refusals start.  OVER refuses and counts
 * nothing. */
enum agile_quota_state agile_period_quota_take(struct agile_period_quota *q,
                                               int64_t now_ns);
/* Events remaining in the period open at now_ns (the whole quota when none
 * is open). */
int32_t agile_period_quota_left(const struct agile_period_quota *q,
                                int64_t now_ns);
/* How long until the open period ends; 0 when no period is open at now_ns
 * (an event now would start a fresh one). */
int64_t agile_period_quota_next(const struct agile_period_quota *q,
                                int64_t now_ns);

/* ------------------------------------------------------------------------ */
/* Gate                                                                      */
/* ------------------------------------------------------------------------ */

/*
 * A count with a ceiling: how many things may happen at once.  No clock is
 * involved.  A limit of zero or less means no ceiling.  Enter
 * and leave are lock-free (compare-and-swap on naturally aligned 8-byte
 * fields), so one gate may be shared by threads and processes.
 */
struct agile_gate {
	int64_t limit;
	int64_t held;
};

void agile_gate_init(struct agile_gate *g, int64_t limit);
/* Whether there is room, taking it if there is. */
bool agile_gate_enter(struct agile_gate *g);
/* Give the room back; -EINVAL, changing nothing, when nobody is inside. */
int agile_gate_leave(struct agile_gate *g);
int64_t agile_gate_held(const struct agile_gate *g);

/* ------------------------------------------------------------------------ */
/* Backoff                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * When to retry, and how long to wait first.  The ceiling before the r-th
 * retry (the first retry being 1) is min(base * factor^(r - 1), cap); the
 * jitter decides how much of it is randomised, from the caller's draw u in
 * [0, 1) (a draw outside it is clamped in; NaN reads as 0):
 *
 *   RIGID         the ceiling c, unchanged
 *   FULL          u * c, uniform over [0, c]
 *   EQUAL         c / 2 + u * c / 2
 *   DECORRELATED  uniform over [base, 3 * previous], then limited to the cap;
 *                 it depends on the previous wait, not on the retry number
 *                 (previous <= 0, as on the first retry, counts as base)
 *   SPREAD        uniform over [c * (1 - f), c * (1 + f)], f = `spread`
 *                 clamped to [0, 1]; the upper end can exceed the cap
 *
 * Results are rounded to the nearest nanosecond.
 */
enum agile_jitter {
	AGILE_JITTER_RIGID = 0,
	AGILE_JITTER_FULL,
	AGILE_JITTER_EQUAL,
	AGILE_JITTER_DECORRELATED,
	AGILE_JITTER_SPREAD
};

struct agile_backoff {
	int64_t base_ns;  /* wait before the first retry; 100 ms */
	int64_t cap_ns;   /* ceiling the multiplication is held to; 1 s */
	double factor;    /* growth per retry; 2.0 */
	double spread;    /* SPREAD's fraction either way; 0.2 */
	int32_t attempts; /* calls allowed, the first one included; 3 */
	uint32_t jitter;  /* enum agile_jitter; SPREAD */
};

/* The preset: at most 3 attempts; ceilings of 100 ms, 200 ms, 400 ms ...
 * up to 1 s; each wait drawn within 20% of its ceiling (the second retry
 * between 160 and 240 ms). */
#define AGILE_BACKOFF_PRESET                                               \
	{ .base_ns = 100 * AGILE_NS_PER_MS, .cap_ns = AGILE_NS_PER_S,       \
	  .factor = 2.0, .spread = 0.2, .attempts = 3,                      \
	  .jitter = AGILE_JITTER_SPREAD }

/* The undelayed ceiling before the retry-th retry; 0 for retry <= 0, which
 * is no retry at all. */
int64_t agile_backoff_ceiling(const struct agile_backoff *b, int32_t retry);
/* The wait before the retry-th retry given draw u and, for DECORRELATED,
 * the previous wait; 0 for retry <= 0. */
int64_t agile_backoff_delay(const struct agile_backoff *b, int32_t retry,
                            double u, int64_t previous_ns);
/* Whether a call that has made `made` attempts (counting the original one)
 * may make another; with attempts = 3 that is true for made = 1 and 2. */
bool agile_backoff_more(const struct agile_backoff *b, int32_t made);
/*
 * Every wait a full run of retries would make (attempts - 1 of them), wait i
 * using draws[i]; retries beyond n_draws use a draw of 0, which gives the
 * shortest wait the jitter allows.  Writes at most `cap`
 * waits to out_ns (NULL when cap is 0) and returns how many there are, so a
 * caller can size its array.
 */
size_t agile_backoff_schedule(const struct agile_backoff *b,
                              const double *draws, size_t n_draws,
                              int64_t *out_ns, size_t cap);

/* ------------------------------------------------------------------------ */
/* Deadline                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * A budget of time that starts running at a given instant.  A budget of
 * zero or less means "no limit" and never expires, so a timeout left at its
 * zero value disables the deadline instead of failing every call
 * immediately.
 */
struct agile_deadline {
	int64_t start_ns;
	int64_t budget_ns;
};

struct agile_deadline agile_deadline_start(int64_t budget_ns, int64_t now_ns);
/* Whether the budget is spent at now_ns (at exactly the budget, it is). */
bool agile_deadline_expired(const struct agile_deadline *d, int64_t now_ns);
/* False when there is no budget, which has no finite remainder; else true
 * and *remaining_ns, which is never negative. */
bool agile_deadline_remaining(const struct agile_deadline *d, int64_t now_ns,
                              int64_t *remaining_ns);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_RESILIENCE_H */
