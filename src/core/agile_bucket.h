/*
 * agile_bucket.h - the leaky bucket, a rate limiter's actuator
 * (bucket.c).
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_BUCKET_H
#define AGILE_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
	int64_t rise_ns;         /* when a rise last moved the planned grants
	                            (agile_bucket_retime); AGILE__NEVER_NS
	                            never */
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
 * the interval *ref_ns, so its distance beyond the next tick of the last
 * rise (rise_ns + keep_ns, but not before now_ns nor after now_ns +
 * keep_ns) shrinks by the current interval over that one; *ref_ns becomes
 * the current interval.  A waiter that asks later than the retime moved
 * the bucket keeps a grant a little later than the bucket's, never
 * earlier, so the spacing never falls below the new interval.  The tick
 * kept is the rise's, not the one after the ask: an event loop waits for
 * its sockets' grants one after another, and each, planned a second after
 * the last at 1 req/s, was inside the tick after its own ask, so none
 * moved and the loop went on at 1 req/s through 32 grants planned before
 * the rise (ab -c 32 after an SLO break, issue 15).
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

#ifdef __cplusplus
}
#endif

#endif /* AGILE_BUCKET_H */
