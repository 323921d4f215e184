/*
 * agile_adaptx.h - adaptx's adaptive concurrency limiter as a C API: a bound
 * on calls in flight whose limit one of the laws of agile_laws.h (or
 * libagile's own controller) moves once per sample window.
 *
 * What it offers, as adaptx does:
 *
 *  - execute / try-execute: admit, run a callback, time it and release, the
 *    callback seeing the limit and the in-flight count at its admission and
 *    able to keep its latency out of the feedback (agile_adaptx_call_skip);
 *  - acquire (with a deadline and a cancel hook) and try-acquire, for work
 *    that does not fit one callback, each filling a permit whose release
 *    (success, latency) takes effect once, later calls being no-ops;
 *  - allow: a hint that claims nothing;
 *  - close and close-with-drain, reset of the statistics, and stats.
 *
 * Admission: a call is admitted while fewer calls than the live limit are in
 * flight.  adaptx keeps permits in a channel as deep as max_limit and, when
 * the limit drops below what is in flight, pulls the idle permits and records
 * the rest as debt that the next releases pay by retiring their permits.
 * With permits counted instead of queued, that bookkeeping is exactly
 * "idle = limit - in_flight when positive, debt = in_flight - limit when
 * positive": a shrink removes idle capacity at once, and admissions resume
 * only once enough held permits have been released.  In flight never exceeds
 * max_limit, because every admission saw in_flight < limit <= max_limit.
 *
 * The core cannot block or read a clock, so the blocking calls are loops the
 * caller drives through struct agile_adaptx_hooks: a clock, a sleep, a cancel
 * test, the jitter draws and the limit-change hook, all passed per call and
 * never stored in the limiter, which holds no pointers and may live in
 * shared memory.  Counters are atomic; the window is closed by one claimer
 * (see agile_laws.h).
 *
 * C has no panics to recover from: a callback returns, and execute releases
 * on that one exit path.  A callback must not longjmp (or throw, or cancel its
 * thread) out of execute: the permit would stay held forever.  Work that can
 * be cut short that way should use acquire and release the permit itself.
 *
 * Functions return 0 or a negative errno value:
 *   -ESHUTDOWN          the limiter is closed (adaptx's ErrClosed)
 *   -ETIMEDOUT          the deadline passed before a permit (ErrTimeout);
 *                       from close_drain: in-flight work remained at the end
 *                       of the drain (ErrDrainTimeout); the limiter is closed
 *   -ECANCELED          the cancel hook fired before a permit (ErrCancelled)
 *   -EINVAL             no callback (ErrNilFunc), or a required hook missing
 *   AGILE_EOVERLOADED   no permit free right now (try-acquire, try-execute)
 *   -EALREADY           a release of a permit already released (a no-op)
 */
#ifndef AGILE_ADAPTX_H
#define AGILE_ADAPTX_H

#include <stdbool.h>
#include <stdint.h>

#include "agile.h"
#include "agile_laws.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deadline meaning "wait as long as it takes". */
#define AGILE_ADAPTX_NO_DEADLINE INT64_MAX
/* adaptx's suggested drain bound for close_drain (Close itself never waits). */
#define AGILE_ADAPTX_DEFAULT_CLOSE_TIMEOUT_NS (30 * AGILE_NS_PER_S)
/* How often a waiting acquire retries when hooks->poll_ns is 0. */
#define AGILE_ADAPTX_DEFAULT_POLL_NS AGILE_NS_PER_MS
/* How often a drain re-checks in-flight when hooks->poll_ns is 0 (adaptx's
 * drainPollInterval). */
#define AGILE_ADAPTX_DRAIN_POLL_NS (10 * AGILE_NS_PER_MS)

/* The latency history behind the stats: adaptx keeps 10,000 samples per
 * second of sample window, at least 100 and at most 10,000. */
#define AGILE_ADAPTX_RING_PER_S 10000
#define AGILE_ADAPTX_RING_MIN 100
#define AGILE_ADAPTX_RING_MAX 10000

/*
 * Hooks passed per call, never stored.  Which ones a call needs is stated at
 * the call; any hook may be NULL where it is optional.
 */
struct agile_adaptx_hooks {
	/* Monotonic time in ns: required by acquire, execute, try-execute
	 * and a close_drain with a timeout. */
	int64_t (*now_ns)(void *arg);
	/* Sleep until when_ns (or return early: the loop re-checks).  NULL
	 * retries at once, which spins. */
	void (*sleep_until_ns)(int64_t when_ns, void *arg);
	/* True once the caller has given up (adaptx's cancelled context).
	 * NULL: never. */
	bool (*cancelled)(void *arg);
	/* A uniform draw in [0, 1) for the jitter; two are taken for each
	 * window the law runs on.  NULL: no increase is ever withheld. */
	double (*draw)(void *arg);
	/* Called synchronously by the caller that closed the window, with
	 * the old and new limits, whenever an adjustment changed the limit.
	 * It must not block, and must not call back into this limiter's
	 * acquire or release.  NULL: none. */
	void (*on_limit_change)(int64_t old_limit, int64_t new_limit, void *arg);
	int64_t poll_ns; /* retry period of a waiting acquire or drain; 0:
	                    the defaults above */
	void *arg;       /* passed to every hook */
};

/* A claim on one slot, filled by acquire / try-acquire.  Caller-owned; it
 * may live anywhere, and may be discarded once released.  A failed acquire
 * leaves it unheld, so releasing it anyway is a harmless no-op. */
struct agile_adaptx_permit {
	uint64_t held;      /* 1 from admission until the first release */
	int64_t limit;      /* the live limit at admission */
	int64_t in_flight;  /* calls in flight at admission, this one excluded */
};

/* What an execute callback sees: valid only during the callback. */
struct agile_adaptx_call {
	int64_t limit;      /* the live limit at admission */
	int64_t in_flight;  /* calls in flight at admission, this one excluded */
	enum agile_law_kind law; /* the law in force */
	bool skip;          /* set by agile_adaptx_call_skip */
};

/* Keep this call's latency out of the feedback and the latency stats, and
 * out of the window's peak in-flight; it still counts as a success or a
 * failure.  Calling it again changes nothing. */
void agile_adaptx_call_skip(struct agile_adaptx_call *call);

/* The callback: returns 0 for success, anything else for failure; the value
 * is handed back through execute's fn_rc. */
typedef int (*agile_adaptx_fn)(struct agile_adaptx_call *call, void *arg);

/* One latency sample of the stats history. */
struct agile_adaptx_sample {
	int64_t at_ns;       /* when it was recorded (the release's now_ns) */
	int64_t latency_ns;
};

/* Cumulative counters, zeroed by agile_adaptx_reset_stats. */
struct agile_adaptx_counters {
	uint64_t total;      /* admissions */
	uint64_t success;    /* releases reporting success (skipped included) */
	uint64_t failures;   /* releases reporting failure (skipped included) */
	uint64_t rejected;   /* admissions refused: no permit for try-acquire,
	                        deadline, cancel or close for a waiting acquire */
	uint64_t increases;  /* adjustments that raised the limit */
	uint64_t decreases;  /* adjustments that lowered it */
};

/*
 * The limiter.  Pointer-free and fixed-size (about 176 KiB, most of it the
 * latency history), so it can be placed in shared memory.
 */
struct agile_adaptx {
	struct agile_law law;        /* resolved options (law.config) and the
	                                windowed law; its limit is live for
	                                the aimd, vegas and gradient laws */
	uint64_t in_flight;          /* for those laws; the core limiter keeps
	                                its own for AGILE_LAW_AGILE */
	uint64_t closed;             /* 1 once closed, for good */
	struct agile_adaptx_counters counters;
	uint64_t ring_written;       /* samples written since reset */
	int64_t ring_capacity;       /* slots in use: see AGILE_ADAPTX_RING_* */
	struct agile_adaptx_sample ring[AGILE_ADAPTX_RING_MAX];
	struct agile_config core_config; /* AGILE_LAW_AGILE only: as given */
	struct agile_conc_limiter core;  /* AGILE_LAW_AGILE only */
};

/*
 * Initialise with `options` (NULL: adaptx's defaults, law AIMD), resolved as
 * agile_law_options_resolve() describes.  For AGILE_LAW_AGILE the core
 * concurrency limiter runs with `core` when given, else with a configuration
 * derived from the options: max_rate = max_limit, initial_rate =
 * initial_limit, floor = min_limit, tick = sample window.  -EINVAL when the
 * core rejects its configuration.
 */
int agile_adaptx_init(struct agile_adaptx *l,
                      const struct agile_law_options *options,
                      const struct agile_config *core, int64_t now_ns);

/*
 * Take a permit if one is free, without waiting: 0 and `permit` filled,
 * AGILE_EOVERLOADED (counted as rejected) when none is, -ESHUTDOWN once
 * closed.  Needs no hooks.
 */
int agile_adaptx_try_acquire(struct agile_adaptx *l,
                             struct agile_adaptx_permit *permit);

/*
 * Take a permit, waiting until `deadline_ns` (AGILE_ADAPTX_NO_DEADLINE: no
 * limit) by retrying every poll period through hooks->sleep_until_ns.  In
 * adaptx's order: -ESHUTDOWN if already closed; then cancellation and the
 * deadline are checked before any attempt, so a pre-cancelled or expired
 * call never consumes a permit even when one is free (-ECANCELED,
 * -ETIMEDOUT); a close while waiting returns -ESHUTDOWN.  Those three are
 * counted as rejected.  Needs hooks->now_ns.
 */
int agile_adaptx_acquire(struct agile_adaptx *l, int64_t deadline_ns,
                         const struct agile_adaptx_hooks *hooks,
                         struct agile_adaptx_permit *permit);

/*
 * Release a permit with the call's outcome and latency: counts the success
 * or failure, records the sample (a latency <= 0 is a skipped sample, kept
 * out of the feedback and the stats history), closes the window if it is
 * due at now_ns (hooks: draws and the limit-change hook; may be NULL), and
 * frees the slot, or retires it when the limit has dropped below what is in
 * flight.  The first call does all that and returns 0; later calls on the
 * same permit return -EALREADY and do nothing.
 */
int agile_adaptx_release(struct agile_adaptx *l,
                         struct agile_adaptx_permit *permit, bool success,
                         int64_t latency_ns, int64_t now_ns,
                         const struct agile_adaptx_hooks *hooks);

/*
 * Admit (waiting as agile_adaptx_acquire does), run fn(call, fn_arg) timed
 * with hooks->now_ns, and release with success = (fn's return == 0) and the
 * measured latency (0, a skipped sample, if the callback skipped).  Returns 0
 * when fn ran, its return value in *fn_rc (fn_rc may be NULL); otherwise
 * -EINVAL with no fn (checked first), or acquire's errors.  On a virtual
 * clock that does not move during fn the latency is 0: a skipped sample.
 */
int agile_adaptx_execute(struct agile_adaptx *l, int64_t deadline_ns,
                         const struct agile_adaptx_hooks *hooks,
                         agile_adaptx_fn fn, void *fn_arg, int *fn_rc);

/*
 * Run fn only if a permit is free now.  In adaptx's order: -ESHUTDOWN when
 * closed, -EINVAL with no fn, -ECANCELED / -ETIMEDOUT when already cancelled
 * or past the deadline (no permit taken, not counted as rejected), then
 * AGILE_EOVERLOADED when no permit is free.  0 when fn ran, as execute.
 */
int agile_adaptx_try_execute(struct agile_adaptx *l, int64_t deadline_ns,
                             const struct agile_adaptx_hooks *hooks,
                             agile_adaptx_fn fn, void *fn_arg, int *fn_rc);

/*
 * Close the window if it is due at now_ns, without a release: for callers
 * that want windows to close on a timer as well.  Returns what the law did.
 * With AGILE_LAW_AGILE it runs the core's tick when due and reports
 * AGILE_LAW_HELD, _INCREASED or _DECREASED.
 */
enum agile_law_result agile_adaptx_advance(struct agile_adaptx *l,
                                           int64_t now_ns,
                                           const struct agile_adaptx_hooks *hooks);

/*
 * A hint: true when open and fewer calls than the live limit are in flight.
 * It claims nothing and counts nothing; a concurrent admission may change
 * the answer before the caller acts, and after a shrink it stays false until
 * the debt is paid.
 */
bool agile_adaptx_allow(const struct agile_adaptx *l);

int64_t agile_adaptx_limit(const struct agile_adaptx *l);
int64_t agile_adaptx_in_flight(const struct agile_adaptx *l);
bool agile_adaptx_is_closed(const struct agile_adaptx *l);

/*
 * Close without waiting: later admissions return -ESHUTDOWN and waiting
 * acquires give up at their next retry.  Calls in flight finish and release
 * normally.  Returns 0 on the first and on every later call.
 */
int agile_adaptx_close(struct agile_adaptx *l);

/*
 * Close, then wait up to timeout_ns (polling with hooks->sleep_until_ns) for
 * the calls in flight to finish.  0 when none remain; -ETIMEDOUT when some
 * do (a timeout <= 0 does not wait, so it returns -ETIMEDOUT at once if any
 * call is in flight); the limiter is closed either way.  A second close
 * returns -ESHUTDOWN.  A positive timeout needs hooks->now_ns (-EINVAL, and
 * nothing closed, without it).
 */
int agile_adaptx_close_drain(struct agile_adaptx *l, int64_t timeout_ns,
                             const struct agile_adaptx_hooks *hooks);

/*
 * Zero the counters and the latency history, and put the law back at its
 * initial limit (raised to the in-flight count when more are in flight),
 * clearing its estimators, credit, warm-up count and window.  In-flight
 * calls and the closed state are untouched, and the limit-change hook is
 * not called.  With AGILE_LAW_AGILE the core limiter is re-initialised from
 * its configuration, keeping its in-flight count.  Meant for a quiet moment:
 * unlike adaptx's, it takes no lock, so a release racing it may be counted
 * on either side of the reset.
 */
void agile_adaptx_reset_stats(struct agile_adaptx *l, int64_t now_ns);

/* A snapshot: adaptx's Stats plus the permit bookkeeping. */
struct agile_adaptx_stats {
	enum agile_law_kind law; /* its name: agile_law_name() */
	int64_t limit;
	int64_t min_limit;
	int64_t max_limit;
	int64_t in_flight;
	uint64_t total;
	uint64_t success;
	uint64_t failures;
	uint64_t rejected;
	uint64_t increases;
	uint64_t decreases;
	/* Over the samples recorded within the last sample window before
	 * now_ns; all 0 when there are none.  avg truncates; p50 and p99 are
	 * the samples at rank (n - 1) x q, rounded down, as in adaptx. */
	int64_t avg_latency_ns;
	int64_t min_latency_ns;
	int64_t max_latency_ns;
	int64_t p50_latency_ns;
	int64_t p99_latency_ns;
	int64_t available;  /* idle permits: limit - in flight, 0 when closed */
	int64_t debt;       /* held permits to retire: in flight - limit */
	bool closed;
};

/* Fill `out` as of now_ns.  Cost: a pass over the history per latency field
 * and about 64 passes per percentile (an exact selection without a scratch
 * buffer); meant for a metrics loop, not the hot path. */
void agile_adaptx_stats(const struct agile_adaptx *l, int64_t now_ns,
                        struct agile_adaptx_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_ADAPTX_H */
